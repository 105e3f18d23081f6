#!/bin/sh
# install_test.sh BUILD: `make install` into a temporary prefix, then use
# it as a user would: the tree has every file (and nothing of the build
# tree's paths), libtilec.so has its SONAME and exports only the public
# API, and a program and a generated C wrapper build against it with
# `pkg-config --cflags --libs tilec` alone and run. Then a DESTDIR staging
# install, and `make uninstall` leaves nothing; without a CUDA toolkit
# `make` stops at once saying so. Run by `make test`.
set -eu
BUILD=${1:-build}
MAKE=${MAKE:-make}
root=$(pwd)
t=$(mktemp -d "${TMPDIR:-/tmp}/tilec_install_XXXXXX")
trap 'rm -rf "$t"' EXIT
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }

v() { sed -n "s/^#define TILEC_VERSION_$1 \\([0-9]*\\)\$/\\1/p" include/tilec/core.h; }
version="$(v MAJOR).$(v MINOR).$(v PATCH)"
major=$(v MAJOR)
grep -q "^#define TILEC_VERSION_STRING \"$version\"\$" include/tilec/core.h ||
    fail "TILEC_VERSION_STRING is not $version (TILEC_VERSION_MAJOR.MINOR.PATCH)"

p=$t/prefix
$MAKE --no-print-directory -s BUILD="$BUILD" PREFIX="$p" install >"$t/install.log" 2>&1 || { cat "$t/install.log"; fail "make install"; }

# the tree: exactly these files
(cd "$p" && find . \( -type f -o -type l \) | sort) >"$t/tree"
{
    for h in include/tilec/*.h; do echo "./$h"; done
    echo ./bin/tilec
    echo ./lib/libtilec.a
    echo ./lib/libtilec.so
    echo "./lib/libtilec.so.$major"
    echo "./lib/libtilec.so.$version"
    echo ./lib/pkgconfig/tilec.pc
    [ ! -e "$BUILD/lib/libtilec_redis.so" ] || echo ./lib/libtilec_redis.so
    echo ./share/man/man1/tilec.1
} | LC_ALL=C sort >"$t/want"
LC_ALL=C sort "$t/tree" -o "$t/tree"
diff -u "$t/want" "$t/tree" || fail "the installed tree differs"
[ "$(readlink "$p/lib/libtilec.so")" = "libtilec.so.$major" ] || fail "libtilec.so does not link to libtilec.so.$major"
[ "$(readlink "$p/lib/libtilec.so.$major")" = "libtilec.so.$version" ] || fail "bad libtilec.so.$major link"
readelf -d "$p/lib/libtilec.so.$version" | grep -q "(SONAME).*\\[libtilec.so.$major\\]" || fail "SONAME is not libtilec.so.$major"
grep -qx "Version: $version" "$p/lib/pkgconfig/tilec.pc" || fail "tilec.pc has no Version: $version"
grep -q "tilec $version" "$p/share/man/man1/tilec.1" || fail "the man page has no version"
[ "$("$p/bin/tilec" --version)" = "tilec $version" ] || fail "tilec --version"

# NVRTC is loaded when a kernel is compiled, not linked: no NEEDED entry
# and no run path into the toolkit; without it (TILEC_NVRTC naming a file
# that is not there) the command's version and checks work, and a compile
# says what is missing and what to set
for f in "$p/bin/tilec" "$p/lib/libtilec.so.$version"; do
    if readelf -d "$f" | grep -q "NEEDED.*libnvrtc"; then fail "$f links libnvrtc"; fi
    if readelf -d "$f" | grep -q -E "R(UN)?PATH"; then fail "$f has a run path: $(readelf -d "$f" | grep PATH)"; fi
done
nonv="$t/no-cuda/lib64/libnvrtc.so.13"
[ "$(TILEC_NVRTC=$nonv "$p/bin/tilec" --version)" = "tilec $version" ] || fail "tilec --version without NVRTC"
TILEC_NVRTC=$nonv "$p/bin/tilec" examples/softmax.tile examples/e2e.tile --check || fail "tilec --check without NVRTC"
TILEC_NVRTC=$nonv "$p/bin/tilec" examples/e2e.tile --emit c -o "$t/gen-nonv" || fail "tilec --emit c without NVRTC"
if TILEC_NVRTC=$nonv "$p/bin/tilec" examples/softmax.tile --emit cubin --no-cache -o "$t/cubin-nonv" 2>"$t/nonv.err"; then
    fail "tilec --emit cubin without NVRTC succeeded"
fi
grep -q "NVRTC could not be loaded from TILEC_NVRTC=$nonv (.*No such file" "$t/nonv.err" ||
    fail "tilec --emit cubin without NVRTC does not say so: $(head -3 "$t/nonv.err")"

# the Redis tier's client shim, where it was built, is found beside the
# installed library: a server that is not there is a connect fault, not
# "cannot load the Redis client"
if [ -e "$BUILD/lib/libtilec_redis.so" ]; then
    readelf -d "$p/lib/libtilec_redis.so" | grep -q "NEEDED.*libhiredis" || fail "libtilec_redis.so does not link libhiredis"
    TILEC_CACHE_REDIS=redis://127.0.0.1:1 "$p/bin/tilec" cache stats --dir "$t/cache" >"$t/stats" ||
        fail "tilec cache stats with TILEC_CACHE_REDIS"
    grep -q "^remote *redis redis://127.0.0.1:1: cannot connect: Connection refused" "$t/stats" ||
        fail "the installed command does not find its Redis client: $(grep remote "$t/stats")"
fi

# no run path or text path into the build tree in any installed file
for f in "$p/bin/tilec" "$p/lib/libtilec.so.$version"; do
    if readelf -d "$f" | grep -E "R(UN)?PATH" | grep -q -e "$root" -e "$BUILD"; then fail "$f has a run path into the build tree"; fi
done
# (the prefix itself may lie under the tree: make test's TMPDIR is build/test-tmp)
if grep -r "$root" "$p/lib/pkgconfig" "$p/include" "$p/share" 2>/dev/null | grep -v "$p" >/dev/null; then
    fail "an installed text file names $root"
fi

# only the public API leaves the shared library
nm -D --defined-only "$p/lib/libtilec.so.$version" | awk '{print $3}' >"$t/exports"
[ -s "$t/exports" ] || fail "libtilec.so exports nothing"
if grep -v '^tilec_' "$t/exports" >"$t/internal"; then
    fail "libtilec.so exports internal symbols: $(head -20 "$t/internal" | tr '\n' ' ')"
fi
cat include/tilec/*.h | grep -o '\<tilec_[A-Za-z0-9_]*' | sort -u >"$t/public"
sort -u "$t/exports" | comm -23 - "$t/public" >"$t/undeclared"
[ ! -s "$t/undeclared" ] || fail "exported but in no public header: $(tr '\n' ' ' <"$t/undeclared")"
for s in tilec_ctx_new tilec_parse_file tilec_program_build tilec_rt_open tilec_version; do
    grep -qx "$s" "$t/exports" || fail "$s is not exported"
done

# a program and a generated wrapper, with pkg-config alone
export PKG_CONFIG_PATH="$p/lib/pkgconfig"
cflags=$(pkg-config --cflags tilec)
libs=$(pkg-config --libs tilec)
cc -std=c11 -Wall -Wextra -Werror examples/c/list_kernels.c $cflags $libs -o "$t/list_kernels" || fail "cc list_kernels.c"
LD_LIBRARY_PATH="$p/lib" "$t/list_kernels" examples/matmul.tile >"$t/out" || fail "list_kernels did not run"
grep -qx "examples/matmul.tile: kernel matmul, 3 variant(s)" "$t/out" || fail "list_kernels: $(cat "$t/out")"
grep -qx "libtilec $version (header $version)" "$t/out" || fail "list_kernels: $(cat "$t/out")"
LD_LIBRARY_PATH="$p/lib" ldd "$t/list_kernels" | grep -q "libtilec.so.$major => $p/lib/libtilec.so.$major" ||
    fail "list_kernels does not load the installed libtilec.so.$major"
# the static library, its private dependencies from tilec.pc
cc -std=c11 -Wall -Wextra -Werror examples/c/list_kernels.c $cflags "$p/lib/libtilec.a" \
    $(pkg-config --static --libs tilec | sed 's/-ltilec//') -o "$t/list_static" || fail "cc with libtilec.a"
"$t/list_static" examples/softmax.tile >/dev/null || fail "the static build did not run"
# libtilec.a hides its insides (one object whose globals are only the
# public tilec_ names): a program with its own lower_note and sb_add
# (functions of the lowering and of util/strbuf.c; issue 33 named
# sb_append) links statically against it, and the library still calls its
# own: the module's CUDA comes out whole
nm -g --defined-only "$p/lib/libtilec.a" | awk 'NF == 3 && $3 !~ /^tilec_/ {print $3}' >"$t/a_internal"
[ ! -s "$t/a_internal" ] || fail "libtilec.a defines internal globals: $(head -20 "$t/a_internal" | tr '\n' ' ')"
cat >"$t/clash.c" <<'EOC'
#include <stdio.h>
#include <string.h>
#include <tilec/lower.h>
#include <tilec/tilec.h>
int lower_note(const char *s);
int sb_add(char *dst, const char *src);
int lower_note(const char *s) { return (int)strlen(s); }
int sb_add(char *dst, const char *src) { strcpy(dst, src); return 7; }
int main(int argc, char **argv)
{
    char buf[16];
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    int ok = ctx && argc > 1 && tilec_parse_file(ctx, argv[1], &m) == TILEC_OK &&
             tilec_module_emit_cuda(ctx, m, tilec_sink_file(stdout)) == TILEC_OK;
    printf("\nmine: %d %d\n", lower_note("abc"), sb_add(buf, "x"));
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return ok ? 0 : 1;
}
EOC
cc -std=c11 -Wall -Wextra -Werror "$t/clash.c" $cflags "$p/lib/libtilec.a" \
    $(pkg-config --static --libs tilec | sed 's/-ltilec//') -o "$t/clash" 2>"$t/clash.err" ||
    fail "a program with its own lower_note and sb_add does not link with libtilec.a: $(head -5 "$t/clash.err")"
"$t/clash" examples/softmax.tile >"$t/clash.out" || fail "the program with its own lower_note and sb_add failed"
tail -1 "$t/clash.out" | grep -qx "mine: 3 7" || fail "the program's own lower_note and sb_add: $(tail -1 "$t/clash.out")"
"$p/bin/tilec" examples/softmax.tile --emit cuda >"$t/softmax.cu" || fail "tilec --emit cuda"
head -n -2 "$t/clash.out" | cmp -s - "$t/softmax.cu" || fail "the library with a program's own sb_add and lower_note emits other CUDA"
# the generated C wrapper of a graph, by the installed command
"$p/bin/tilec" examples/e2e.tile --emit c -o "$t/gen" || fail "tilec --emit c"
cc -std=c11 -O2 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -DTILEC_BENCH_MAIN "$t/gen/e2e.c" $cflags $libs \
    -o "$t/e2e" || fail "cc e2e.c (the generated wrapper)"
LD_LIBRARY_PATH="$p/lib" ldd "$t/e2e" | grep -q "libtilec.so.$major => $p/lib/" || fail "e2e does not load libtilec"
# the installed command compiles through its own compile workers (../bin from the library)
"$p/bin/tilec" examples/softmax.tile --emit cubin -j 2 --no-cache -q -o "$t/cubin" || fail "tilec --emit cubin"
[ -f "$t/cubin/softmax_v0.cubin" ] || fail "no CUBIN"

# uninstall leaves nothing but the directories
$MAKE --no-print-directory -s BUILD="$BUILD" PREFIX="$p" uninstall >/dev/null 2>&1 || fail "make uninstall"
left=$(find "$p" \( -type f -o -type l \))
[ -z "$left" ] || fail "make uninstall left: $left"

# a staging install: files under DESTDIR, paths in them without it
$MAKE --no-print-directory -s BUILD="$BUILD" PREFIX=/usr DESTDIR="$t/stage" install >/dev/null 2>&1 || fail "make install DESTDIR"
[ -f "$t/stage/usr/lib/libtilec.so.$version" ] && [ -f "$t/stage/usr/include/tilec/core.h" ] || fail "DESTDIR layout"
grep -qx "prefix=/usr" "$t/stage/usr/lib/pkgconfig/tilec.pc" || fail "tilec.pc under DESTDIR: $(head -1 "$t/stage/usr/lib/pkgconfig/tilec.pc")"
if grep -rq "$t" "$t/stage/usr/lib/pkgconfig"; then fail "tilec.pc names DESTDIR"; fi
$MAKE --no-print-directory -s BUILD="$BUILD" PREFIX=/usr DESTDIR="$t/stage" uninstall >/dev/null 2>&1 || fail "make uninstall DESTDIR"
[ -z "$(find "$t/stage" \( -type f -o -type l \))" ] || fail "make uninstall DESTDIR left files"
# no CUDA toolkit: make says so at once, and how to point at one
if out=$(env -u MAKEFLAGS -u MFLAGS -u CUDA CUDA_HOME="$t/no-cuda" $MAKE -n all 2>&1); then fail "make without CUDA went on"; fi
echo "$out" | grep -q "no CUDA toolkit at $t/no-cuda (missing include/nvrtc.h include/cudaTypedefs.h): tilec compiles kernels with NVRTC" ||
    fail "make without CUDA: $out"
echo "$out" | grep -q "make CUDA_HOME=/path/to/cuda" || fail "make without CUDA does not say how: $out"

echo "install_test: make install, pkg-config build of a program and a wrapper, exports, uninstall: ok ($version)"
