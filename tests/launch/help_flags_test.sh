#!/bin/sh
# `-h` answers exactly like `--help` (exit 0, same usage text) for `troupe` itself, for every
# command `troupe --help` lists (so a new command is covered without editing this file) and for
# the subcommands that parse their own flags.
set -u
troupe="$1"
fail=0
check() {
  long=$("$troupe" "$@" --help 2>&1) || { echo "FAIL: troupe $* --help exits $?"; fail=1; return; }
  short=$("$troupe" "$@" -h 2>&1) || { echo "FAIL: troupe $* -h exits $?"; fail=1; return; }
  [ "$long" = "$short" ] || { echo "FAIL: troupe $* -h differs from --help"; fail=1; }
  case "$short" in *Usage*) echo "ok: troupe $* -h" ;; *) echo "FAIL: troupe $* -h: no usage"; fail=1 ;; esac
}
commands=$("$troupe" --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
[ -n "$commands" ] || { echo "FAIL: troupe --help lists no commands"; exit 1; }
check
for c in $commands; do check "$c"; done
check data convert
check config keys
check ckpt ls
exit $fail
