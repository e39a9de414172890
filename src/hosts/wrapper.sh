t=$1 m=$2 s=$3 d=$4 c=$5
f="${TMPDIR:-/tmp}/terminalfs-$t"
if [ -n "$d" ]; then cd "$d" || exit 126; fi
if [ "$m" = t ]; then echo "$$" >"$f"; exec "$s" -c "$c"; fi
if [ "$m" = i ]; then
(while kill -0 "$PPID"; do sleep 1; done; until g=$(cat "$f" 2>/dev/null) && [ -n "$g" ]; do sleep 1; done; kill -s TERM -- "-$g"; sleep 5; kill -s KILL -- "-$g") >/dev/null 2>&1 </dev/null &
else
exec 3<&0 0</dev/null
(cat >/dev/null; until g=$(cat "$f" 2>/dev/null) && [ -n "$g" ]; do sleep 1; done; kill -s TERM -- "-$g"; sleep 5; kill -s KILL -- "-$g") <&3 >/dev/null 2>&1 &
exec 3<&-
fi
w=$!
n=; if command -v setsid >/dev/null 2>&1; then n=setsid; elif command -v perl >/dev/null 2>&1; then n="perl -e setpgrp(0,0);exec(@ARGV)or(die)"; fi
a=$(date +%s)
$n sh -c 'echo "$$" >"$0"; exec "$@"' "$f" "$s" -c "$c"
r=$?
kill "$w" 2>/dev/null
echo "$a $(date +%s)" >"$f.t"
rm -f "$f"
exit "$r"
