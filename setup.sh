#!/bin/sh
# Sets terminalfs up on a Debian (or Ubuntu) machine that has Rust and nothing else, then
# mounts the tree at ~/mnt/terminalfs in the foreground (Ctrl-C stops it and unmounts).
#
#   1. FUSE 3 (for fusermount3) and a C linker (rustup brings none) are installed with
#      apt-get when missing: directly as root, else through sudo, else it says what to
#      install and stops.
#   2. `cargo install` builds the binary into ~/.cargo/bin (a few minutes).
#   3. `terminalfs --init-settings` writes the default deny list unless a settings file
#      exists already (terminalfs will not start without one).
#   4. terminalfs runs, with any arguments given to this script (e.g. --daemon).
set -eu
case $0 in */*) cd "${0%/*}" ;; esac

need=
command -v fusermount3 >/dev/null || need=fuse3
command -v cc >/dev/null || need="${need:+$need }gcc libc6-dev"
if [ -n "$need" ]; then
  if [ "$(id -u)" = 0 ]; then
    as_root=
  elif command -v sudo >/dev/null; then
    as_root=sudo
  else
    echo "setup.sh: first, as root: apt-get install $need" >&2
    exit 1
  fi
  $as_root apt-get update
  $as_root apt-get install -y $need
fi

cargo install --locked --path .
[ -e "${XDG_CONFIG_HOME:-$HOME/.config}/terminalfs/settings.json" ] || terminalfs --init-settings
exec terminalfs "$@"
