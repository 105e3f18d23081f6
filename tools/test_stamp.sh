#!/bin/sh
# test_stamp.sh BUILD check|save CONFIG: the record of the last green
# `make test` (BUILD/test-passed). The fingerprint covers the content of
# every file git tracks or would track (so an edit, a new test or a
# reverted edit counts by what the files hold, not by their times), the
# build's CONFIG (compiler, flags, sanitizers, CUDA home), the tools the
# suites use (compilers, python3, redis-server, clang) and whether a GPU is
# present. `check` exits 0, saying so, when the last green run had the same
# fingerprint; `save` records it after a green run. Outside a git checkout
# `check` always asks for a run. RETEST=1 makes `check` ask for one too.
set -u
build=$1 mode=$2 config=${3:-}
stamp=$build/test-passed
fingerprint() {
    git rev-parse --git-dir >/dev/null 2>&1 || return 1
    {
        printf 'config %s\n' "$config"
        git ls-files -z --cached --others --exclude-standard | xargs -0 -r sha256sum 2>&1
        for t in cc gcc g++ c++ clang python3 redis-server re2c lemon; do
            printf '%s: %s\n' "$t" "$(command -v "$t" >/dev/null 2>&1 && "$t" --version 2>&1 | head -n 1)"
        done
        printf 'gpu: %s\n' "$(ls /dev/nvidia* 2>/dev/null | tr '\n' ' ')"
    } | sha256sum | cut -d' ' -f1
}
case $mode in
check)
    [ "${RETEST:-0}" = 1 ] && exit 1
    [ -f "$stamp" ] || exit 1
    fp=$(fingerprint) || exit 1
    read -r old when <"$stamp" || exit 1
    [ "$fp" = "$old" ] || exit 1
    echo "make test: nothing changed since the last green run ($when): the same files, build flags and tools;"
    echo "           no suite is run again ($stamp; RETEST=1 runs them all)"
    echo "all test suites passed"
    ;;
save)
    fp=$(fingerprint) || { rm -f "$stamp"; exit 0; }
    printf '%s %s\n' "$fp" "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" >"$stamp"
    ;;
*)
    echo "usage: tools/test_stamp.sh BUILD check|save CONFIG" >&2
    exit 2
    ;;
esac
