#!/bin/sh
# tools/gen_nvrtc.sh BUILD N [SEED]: N generated well-typed modules
# (fuzz/gen_kernel.c, written by BUILD/fuzz/gen_tiles) through every
# backend: `tilec --check`; `--emit cubin` (NVRTC, sm_90, every variant);
# `--emit c` and the .c compiled with `cc -std=c11 -Wall -Wextra -Werror -c`;
# `--emit py` and `python3 -m py_compile`. Prints the count that passed
# each stage; a failure's file and first error line go to
# BUILD/gen_nvrtc/failures.txt and the file is kept. Exit 1 on any failure.
set -u
build=${1:-build}
n=${2:-300}
seed=${3:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
work="$build/gen_nvrtc"
rm -rf "$work"
mkdir -p "$work/tiles" "$work/out" "$work/kept"
"$build/fuzz/gen_tiles" "$n" "$work/tiles" "$seed" || exit 1
# The forms the checker and NVRTC must agree on appear in the run: scans,
# re-assignments (of a pointer tile too: `v3 = v3 + ...`, one declared
# from a pointer parameter with offsets), and graphs with views and extern
# calls. A run of 40 or more that misses one fails (the generator lost it).
forms=""
count() { # name pattern: the number of modules that match
    k=$(grep -lE -- "$2" "$work"/tiles/*.tile | wc -l)
    forms="$forms $1 $k,"
    [ "$n" -lt 40 ] || [ "$k" -gt 0 ] || { echo "gen_nvrtc: no generated module has a $1"; exit 1; }
}
count scan 'cumsum\(|cumprod\(|cummax\(|cummin\(|scan\('
count re-assignment '^ +v[0-9]+ = '
count "pointer tile let" '^ +let v[0-9]+ = \(+p[0-9]+ \+ \(?(range|pid)'
count "moved pointer" '^ +(v[0-9]+) = \1 [-+] '
count view 'view\('
count "extern call" '^extern '
echo "gen_nvrtc: modules with a${forms%,}"
: >"$work/failures.txt"
check=0 cubin=0 c=0 cc_ok=0 py=0 pyc=0
fail() { # file stage log
    echo "$1: $2: $(grep -m1 -iE 'error' "$3" || head -1 "$3")" >>"$work/failures.txt"
    cp "$1" "$work/kept/"
}
for f in "$work"/tiles/*.tile; do
    o="$work/out"
    rm -rf "$o" && mkdir -p "$o"
    if ! "$build/bin/tilec" "$f" --check >"$o/log" 2>&1; then fail "$f" check "$o/log"; continue; fi
    check=$((check + 1))
    if "$build/bin/tilec" "$f" --emit cubin --no-cache -o "$o" >"$o/log" 2>&1; then cubin=$((cubin + 1)); else fail "$f" nvrtc "$o/log"; fi
    if "$build/bin/tilec" "$f" --emit c -o "$o" >"$o/log" 2>&1; then
        c=$((c + 1))
        if cc -std=c11 -Wall -Wextra -Werror -Iinclude -c -o "$o/g0.o" "$o/g0.c" >"$o/log" 2>&1; then
            cc_ok=$((cc_ok + 1))
        else fail "$f" cc "$o/log"; fi
    else fail "$f" "emit c" "$o/log"; fi
    if "$build/bin/tilec" "$f" --emit py -o "$o" >"$o/log" 2>&1; then
        py=$((py + 1))
        if python3 -m py_compile "$o/g0.py" >"$o/log" 2>&1; then pyc=$((pyc + 1)); else fail "$f" py_compile "$o/log"; fi
    else fail "$f" "emit py" "$o/log"; fi
done
echo "gen_nvrtc: $n generated modules (seed $seed): checked $check, NVRTC sm_90 $cubin," \
     "emit c $c, cc -Werror $cc_ok, emit py $py, py_compile $pyc"
if [ -s "$work/failures.txt" ]; then
    echo "failures ($(wc -l <"$work/failures.txt")), files kept in $work/kept:"
    head -20 "$work/failures.txt"
    exit 1
fi
