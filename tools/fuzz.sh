#!/bin/sh
# tools/fuzz.sh BUILD SECONDS [JOBS [TARGET]]: run the libFuzzer targets
# built by `make fuzz` (or only TARGET: frontend, bundle or gen) for SECONDS
# each (JOBS processes each, default 1), seeded with the examples, the
# golden inputs, 64 generated modules and valid bundles (gen, the generator
# of well-typed kernels, starts from nothing: any bytes are a kernel). The
# corpus grows in BUILD/corpus/; crashes, leaks and timeouts go to
# BUILD/findings/RUN/ and fail the script. The last line of each run gives its execution count.
set -eu
build=${1:-build-fuzz}
seconds=${2:-60}
jobs=${3:-1}
only=${4:-}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Each run's findings in a directory of its own, so that old ones are kept
# but do not fail a new run.
findings="$build/findings/$(date +%Y%m%d-%H%M%S)-$$"
mkdir -p "$build/corpus/frontend" "$build/corpus/bundle" "$build/corpus/gen" "$findings" "$build/logs"
for f in examples/*.tile bench/wrapper/*.tile tests/golden/ok/*.tile tests/golden/bad/*.tile tests/golden/ir/*.tile; do
    [ -f "$f" ] || continue
    cp "$f" "$build/corpus/frontend/seed-$(basename "$(dirname "$f")")-$(basename "$f")"
done
"$build/fuzz/bundle_seeds" "$build/corpus/bundle"
cp fuzz/gen_seeds/* "$build/corpus/gen/" # inputs of past findings of fuzz_gen
# and 64 generated well-typed modules (fuzz/gen_kernel.c): scans, pointer
# re-assignment, graphs with views and extern calls, for the front end to mutate
"$build/fuzz/gen_tiles" 64 "$build/corpus/frontend" 1 >/dev/null

# A hang is an input that takes more than FUZZ_TIMEOUT s of wall time
# (default 1; on a machine shared with other work, where an input's wall
# time is several times its CPU time, give more); 2 GB of RSS is a failure.
opts="-timeout=${FUZZ_TIMEOUT:-1} -rss_limit_mb=2048 -max_total_time=$seconds -print_final_stats=1"
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$root/tests/lsan.supp

status=0
run() { # name maxlen extra...
    name=$1; maxlen=$2; shift 2
    log="$build/logs/$name.log"
    echo "== fuzz_$name: $seconds s x $jobs job(s), log $log"
    if [ "$jobs" -gt 1 ]; then
        "$build/fuzz/fuzz_$name" $opts -max_len="$maxlen" -artifact_prefix="$findings/$name-" \
            -jobs="$jobs" -workers="$jobs" "$@" "$build/corpus/$name" >"$log" 2>&1 || status=1
        rm -f fuzz-*.log # the jobs' logs, already copied into $log
    else
        "$build/fuzz/fuzz_$name" $opts -max_len="$maxlen" -artifact_prefix="$findings/$name-" \
            "$@" "$build/corpus/$name" >"$log" 2>&1 || status=1
    fi
    grep -E '^stat::number_of_executed_units' "$log" | awk -v n="$name" '{s += $2} END {print "fuzz_" n ": " s " executions"}'
    grep -E 'ERROR|WARNING: |runtime error|Timeout|out-of-memory' "$log" | head -5 || true
}
[ -z "$only" ] || [ "$only" = frontend ] && run frontend 16384 -dict=fuzz/tile.dict
[ -z "$only" ] || [ "$only" = bundle ] && run bundle 8192
[ -z "$only" ] || [ "$only" = gen ] && run gen 1024
if [ -n "$(ls -A "$findings")" ]; then
    echo "findings in $findings:"; ls "$findings"
    status=1
fi
exit $status
