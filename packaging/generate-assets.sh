#!/bin/sh
# Writes the files that packages ship but the repository does not keep, all generated
# from the command-line definition in src/cli.rs by the binary itself:
#
#   <out>/terminalfs.1.gz                  the man page
#   <out>/terminalfs-check.1.gz            the man page of `terminalfs check`
#   <out>/terminalfs-selftest.1.gz         the man page of `terminalfs selftest`
#   <out>/completions/terminalfs.bash      bash completion
#   <out>/completions/_terminalfs          zsh completion
#   <out>/completions/terminalfs.fish      fish completion
#
# Environment:
#   TERMINALFS_BIN     an already-built terminalfs to run; without it, a release build
#                      is made first (cargo build --release --locked)
#   TERMINALFS_ASSETS  where to write [default: target/assets in the repository], the
#                      paths that [package.metadata.deb] in Cargo.toml refers to
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
out=${TERMINALFS_ASSETS:-$root/target/assets}

if [ -n "${TERMINALFS_BIN:-}" ]; then
    bin=$TERMINALFS_BIN
else
    (cd "$root" && cargo build --release --locked)
    target=${CARGO_TARGET_DIR:-target}
    case $target in
        /*) bin=$target/release/terminalfs ;;
        *) bin=$root/$target/release/terminalfs ;;
    esac
fi
if [ ! -x "$bin" ]; then
    echo "generate-assets.sh: $bin is not an executable terminalfs" >&2
    exit 1
fi

mkdir -p "$out/completions"

# Each file is written next to its final name and renamed into place, so a failure
# never leaves a truncated file behind.
"$bin" --man | gzip -9 -n >"$out/terminalfs.1.gz.tmp"
mv "$out/terminalfs.1.gz.tmp" "$out/terminalfs.1.gz"
# The main page lists these as terminalfs-<name>(1).
for name in check selftest; do
    "$bin" --man "$name" | gzip -9 -n >"$out/terminalfs-$name.1.gz.tmp"
    mv "$out/terminalfs-$name.1.gz.tmp" "$out/terminalfs-$name.1.gz"
done

for pair in bash:terminalfs.bash zsh:_terminalfs fish:terminalfs.fish; do
    shell=${pair%%:*}
    file=$out/completions/${pair#*:}
    "$bin" --completions "$shell" >"$file.tmp"
    mv "$file.tmp" "$file"
done

echo "generate-assets.sh: wrote the man pages and completions to $out"
