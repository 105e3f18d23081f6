#!/bin/sh
# run.sh: the kernel cache's benchmark, one command:
#   bench/cache/run.sh [--gpu] [--redis-server PATH] [--bin DIR] [--out FILE] [--rounds N]
#                      [--lookups N] [--module FILE.tile]
# Builds the examples module (every examples/*.tile in one module, as
# bench/runtime does; --module another) cold, warm from the local directory, and warm from a
# Redis server with an empty directory, and times one lookup (key, file,
# memory, Redis); see bench/cache/cache_bench.c. The Redis server is
# started here on a free loopback port in a temporary directory: PATH
# (default: redis-server on PATH) is run, so a GPU machine without Redis
# installed can use a carried binary (make gpu-bundle copies redis-server
# and the Redis client shim, with its libhiredis, into .gpu/lib; with
# LD_LIBRARY_PATH=.gpu/lib libhiredis is
# found). --gpu builds on device 0 and loads every CUBIN. The figures go
# to stdout and, with --out, to FILE with the date and the machine.
# With --gpu and a Redis server it also shows the Redis tier carrying a
# multi-kernel choice to a second machine (issue 31): `tilec tune` on
# machine A (its own directory) times bench/harness/gemm.tile at one
# shape, then on machine B (an empty directory, the same Redis) it must
# find A's choices there and time nothing; the fleet_choice lines say
# whether B timed (fleet_choice_B_timed no), and fleet_choice_line A's
# choices as `tilec tune --choices` writes them. TILEC_BIN, else BIN/tilec,
# else build/bin/tilec, is the command; --fleet-only runs only this part;
# --fleet-tile FILE and --fleet-sizes SPEC time another module (the
# tests' fake driver knows only its own kernels).
set -eu
gpu="" server="" bin=build/bench out="" rounds=5 lookups=200 module="" fleet_only=""
fleet_tile=bench/harness/gemm.tile fleet_sizes=M=2048,N=2048,K=2048,batch=1
while [ $# -gt 0 ]; do
    case $1 in
    --gpu) gpu=--gpu ;;
    --fleet-only) fleet_only=1 ;;
    --fleet-tile) fleet_tile=$2; shift ;;
    --fleet-sizes) fleet_sizes=$2; shift ;;
    --redis-server) server=$2; shift ;;
    --bin) bin=$2; shift ;;
    --out) out=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --lookups) lookups=$2; shift ;;
    --module) module=$2; shift ;;
    *) echo "usage: bench/cache/run.sh [--gpu] [--redis-server PATH] [--bin DIR] [--out FILE] [--rounds N]" \
            "[--lookups N] [--module FILE.tile] [--fleet-only] [--fleet-tile FILE] [--fleet-sizes SPEC]" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$server" ] || server=$(command -v redis-server || true)
work=$(mktemp -d /tmp/tilec_cache_bench_XXXXXX)
pid=""
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT INT TERM
if [ -n "$module" ]; then cp "$module" "$work/examples.tile"; else cat examples/*.tile > "$work/examples.tile"; fi
if [ -n "$server" ] && [ -x "$server" ]; then
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    mkdir "$work/redis"
    "$server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/redis" >"$work/redis.log" 2>&1 &
    pid=$!
    i=0
    until python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 100 ] || { cat "$work/redis.log" >&2; exit 1; }; sleep 0.05
    done
    export TILEC_CACHE_REDIS=127.0.0.1:$port
    export TILEC_CACHE_REDIS_WRITE=1 # a private loopback server: unsigned stores, as measured before signing
    remote="redis-server $("$server" --version | sed 's/.*v=\([^ ]*\).*/\1/') on loopback"
else
    unset TILEC_CACHE_REDIS || true
    remote="none (no redis-server: the remote figures are left out)"
fi
mkdir "$work/w"
result=""
[ -n "$fleet_only" ] ||
    result=$("$bin/cache_bench" "$work/examples.tile" "$work/w" $gpu --rounds "$rounds" --lookups "$lookups")
tilec=${TILEC_BIN:-$bin/tilec}
[ -x "$tilec" ] || tilec=build/bin/tilec
if [ -n "$gpu" ] && [ -n "${TILEC_CACHE_REDIS:-}" ]; then
    a=$(TILEC_LOGS=multi_kernel "$tilec" tune "$fleet_tile" --sizes "$fleet_sizes" --dir "$work/fleet_a" \
        --choices "$work/choices.txt" 2>&1) ||
        { printf '%s\n' "fleet_choice: machine A failed:" "$a" >&2; exit 1; }
    b=$(TILEC_LOGS=multi_kernel "$tilec" tune "$fleet_tile" --sizes "$fleet_sizes" --dir "$work/fleet_b" 2>&1) ||
        { printf '%s\n' "fleet_choice: machine B failed:" "$b" >&2; exit 1; }
    timed=no
    printf '%s\n' "$b" | grep -q '(timed, stored)' && timed=yes
    printf '%s\n' "$b" | grep -q 'choice from cache (redis), not timed' || timed=yes
    fleet=$(printf '%s\n' "$a" | grep ' variant [0-9]* of ' | sed 's/^/fleet_choice: machine A (own directory): /'
        printf '%s\n' "$b" | grep -E ' variant [0-9]* of |choice from cache \(redis\)' |
            sed 's/^/fleet_choice: machine B (empty directory, the same Redis): /'
        echo "fleet_choice_B_timed $timed"
        grep -v '^#' "$work/choices.txt" | sed 's/^/fleet_choice_line (for --aot ... --choices): /')
    result=$(printf '%s\n%s' "$result" "$fleet")
elif [ -n "$fleet_only" ]; then
    echo "bench/cache/run.sh: --fleet-only needs --gpu and a redis-server" >&2
    exit 2
fi
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
dev=$([ -n "$gpu" ] && nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo "no GPU: compile only, sm_90")
report=$(printf '%s\n' "# tilec kernel cache benchmark, $(date -u +%Y-%m-%d)" \
    "machine: $(hostname), $cpu, $(nproc) cores; device: $dev; remote: $remote" \
    "command: bench/cache/run.sh $gpu --rounds $rounds --lookups $lookups${module:+ --module $module}${server:+ --redis-server $server}${fleet_only:+ --fleet-only}" \
    "" "$result")
printf '%s\n' "$report"
[ -z "$out" ] || printf '%s\n' "$report" > "$out"
