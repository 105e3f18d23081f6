#!/bin/sh
# valgrind.sh: `make valgrind`: the tilec command under valgrind (memcheck,
# definite and indirect leaks are errors) on every example, with every
# --emit kind that needs no GPU, and on every golden bad input with
# --check. Prints one line per failing run and a count; exits 1 if any.
#   tools/valgrind.sh [BUILD]
set -u
BUILD=${1:-build}
tilec=$BUILD/bin/tilec
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
vg="valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect -q"
{
  for f in examples/*.tile; do
    for k in check "emit ast" "emit cuda" "emit ir" "emit c" "emit py"; do
      echo "$f --$k"
    done
  done
  for f in tests/golden/bad/*.tile; do echo "$f --check"; done
} > "$out/runs"
n=$(wc -l < "$out/runs")
# each run: its own output directory; status 99 is a valgrind finding
xargs -P "$(nproc)" -I{} sh -c '
  d=$(mktemp -d "'"$out"'/r.XXXXXX")
  case "{}" in *--emit*) o="-o $d/o" ;; *) o= ;; esac
  '"$vg"' '"$tilec"' {} $o > "$d/log" 2>&1
  if [ $? -eq 99 ]; then echo "VALGRIND: tilec {}"; cat "$d/log"; fi
' < "$out/runs" > "$out/findings" 2>&1
bad=$(grep -c '^VALGRIND:' "$out/findings" || true)
cat "$out/findings"
echo "valgrind: $n runs of tilec, $bad with findings"
[ "$bad" -eq 0 ]
