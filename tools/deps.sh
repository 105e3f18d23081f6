#!/bin/sh
# deps.sh: check the Debian packages tilec builds with; with "install",
# install what is missing (apt-get, when run as root) or say what to run;
# "fuzz" and "install-fuzz" also check clang and libFuzzer (make fuzz),
# "lint" and "install-lint" cppcheck and clang-format (make lint, format).
set -u
mode=${1:-check}
missing=""
need() { # need PACKAGE TEST...
    pkg=$1; shift
    "$@" >/dev/null 2>&1 || missing="$missing $pkg"
}
need make        command -v make
need gcc         command -v cc
need g++         command -v c++ # tests/test_numerics.c: generated CUDA C run on the CPU
need re2c        command -v re2c
need lemon       sh -c 'command -v lemon && { [ -f /usr/share/lemon/lempar.c ] || [ -f /usr/local/share/lemon/lempar.c ]; }'
need uthash-dev  test -f /usr/include/uthash.h
need libcriterion-dev test -f /usr/include/criterion/criterion.h
need pkg-config  command -v pkg-config
need python3-venv python3 -c 'import ensurepip, venv' # tests/python/test_install.py: pip install into a venv
need libxxhash-dev test -f /usr/include/xxhash.h
# Optional: the remote cache tier's tests want a real server and the client
# tilec loads at run time; tilec builds and runs without either, and the
# tests skip with one line. "install" installs them; nothing fails for them.
optional=""
want() { # want PACKAGE TEST...
    pkg=$1; shift
    "$@" >/dev/null 2>&1 || optional="$optional $pkg"
}
want redis-server command -v redis-server
want libhiredis-dev sh -c 'ls /usr/lib/*/libhiredis.so* || ls /usr/lib/libhiredis.so*'
want libssl-dev sh -c 'ls /usr/lib/*/libcrypto.so.3* || ls /usr/lib/libcrypto.so.3*' # signed entries (dlopen'd)
if [ -n "$optional" ] && [ "$mode" = install ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "tilec: installing optional packages:$optional"
        export DEBIAN_FRONTEND=noninteractive
        { apt-get install -y -q --no-install-recommends $optional ||
          { apt-get update -q && apt-get install -y -q --no-install-recommends $optional; }; } >/dev/null ||
            echo "tilec: could not install$optional (the remote cache tier's tests will skip)" >&2
    else
        echo "tilec: optional packages missing:$optional (the remote cache tier's tests skip; sudo apt-get install$optional)" >&2
    fi
fi
# The Python build frontend tests/python/test_install.py runs (`python3 -m
# build`): Debian's python3-build for Debian's own python3, else from PyPI
# with that python3's pip. Only "install" (make test, make demo) sees to it;
# the test says so when it is missing.
if [ "$mode" = install ] && ! python3 -c 'import build' >/dev/null 2>&1; then
    if [ "$(python3 -c 'import sys; print(sys.prefix)' 2>/dev/null)" = /usr ]; then
        need python3-build python3 -c 'import build'
    else
        echo "tilec: installing the Python package 'build' (python3 -m pip install build)"
        PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --disable-pip-version-check build >/dev/null ||
            echo "tilec: could not install the Python package 'build': python3 -m pip install build" >&2
    fi
fi
if [ "$mode" = fuzz ] || [ "$mode" = install-fuzz ]; then # `make fuzz`: clang with libFuzzer
    need clang   command -v clang
    need libclang-rt-14-dev sh -c 'ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a'
    [ "$mode" = install-fuzz ] && mode=install
fi
if [ "$mode" = lint ] || [ "$mode" = install-lint ]; then # `make lint`, `make format`
    need cppcheck command -v cppcheck
    need clang-format command -v clang-format
    [ "$mode" = install-lint ] && mode=install
fi
[ -z "$missing" ] && exit 0
if [ "$mode" = install ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "tilec: installing missing packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q && apt-get install -y -q --no-install-recommends $missing && exit 0
    echo "tilec: apt-get failed; install these packages by hand:$missing" >&2
    exit 1
fi
echo "tilec: missing packages:$missing" >&2
echo "tilec: install them with: sudo apt-get install$missing" >&2
echo "tilec: (make demo / make test install them by themselves when run as root)" >&2
exit 1
