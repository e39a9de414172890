t=$1 m=$2 s=$3 d=$4 c=$5
umask 077
p="${XDG_RUNTIME_DIR:-$HOME/.cache}/terminalfs"
mkdir -p "$p" 2>/dev/null
if [ -h "$p" ] || [ ! -d "$p" ] || [ "$(ls -ldn "$p" | awk '{print $3}')" != "$(id -u)" ] || ! chmod 700 "$p"; then
echo "terminalfs: $p is not a directory of this user" >&2; exit 126; fi
f="$p/$t"
if ! (set -C; : >"$f") 2>/dev/null; then echo "terminalfs: $f already exists" >&2; exit 126; fi
if [ -n "$d" ]; then cd "$d" || exit 126; fi
if [ "$m" = t ]; then echo "$$" >"$f"; exec "$s" -c "$c"; fi
k() { until g=$(cat "$f" 2>/dev/null) && [ -n "$g" ]; do sleep 1; done; case $g in *[!0-9]*|0|1) exit 1;; esac; kill -s TERM -- "-$g"; sleep 5; kill -s KILL -- "-$g"; }
if [ "$m" = i ]; then
# Under kubectl exec the parent may sit outside the container (PPID 0) or be init (1),
# where `kill -0` always succeeds: then no parent is watched, and a lost connection
# shows only as the end of the command's own input.
if [ "$PPID" -gt 1 ]; then (while kill -0 "$PPID"; do sleep 1; done; k) >/dev/null 2>&1 </dev/null & fi
else
exec 3<&0 0</dev/null
(cat >/dev/null; k) <&3 >/dev/null 2>&1 &
exec 3<&-
fi
w=$!
n=; if command -v setsid >/dev/null 2>&1; then n=setsid; elif command -v perl >/dev/null 2>&1; then n="perl -e setpgrp(0,0);exec(@ARGV)or(die)"; fi
a=$(date +%s)
$n sh -c 'echo "$$" >"$0"; exec "$@"' "$f" "$s" -c "$c"
r=$?
[ -n "$w" ] && kill "$w" 2>/dev/null
echo "$a $(date +%s)" >"$f.t"
rm -f "$f"
exit "$r"
