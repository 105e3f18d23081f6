# tilec: build, test and demo. `make` builds the library and the command;
# `make demo` and `make test` first install missing Debian packages (as
# root) or say what to install. Generated sources go to $(BUILD)/gen.

BUILD    ?= build
CC       ?= cc
LEMON    ?= lemon
RE2C     ?= re2c
LEMPAR   ?= $(firstword $(wildcard /usr/share/lemon/lempar.c /usr/local/share/lemon/lempar.c) /usr/share/lemon/lempar.c)

WARN     = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wformat=2 -Wundef -Wvla -Wcast-align -Wnull-dereference \
           -Wimplicit-fallthrough -Wdouble-promotion
OPT      ?= -O2 -g
SANITIZE ?=
ifeq ($(SANITIZE),1)
SANFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
endif
CPPFLAGS = -I. -Iinclude -I$(BUILD)/gen -D_POSIX_C_SOURCE=200809L
CFLAGS   = -std=c11 -fPIC $(OPT) $(WARN) $(SANFLAGS)
LDFLAGS  += $(SANFLAGS)
# Lemon's template is not ours to fix; it still builds with -Werror.
GENFLAGS = -Wno-implicit-fallthrough -Wno-unused-parameter -Wno-unused-variable -Wno-missing-prototypes -Wno-null-dereference -DNDEBUG

# The CUDA toolkit (NVRTC and its headers): CUDA_HOME, else /usr/local/cuda.
CUDA     ?= $(or $(CUDA_HOME),/usr/local/cuda)
# The toolkit's headers are a build prerequisite: say so at once, and how to
# point at them, rather than fail on a missing header halfway through
# (docs/install.md). NVRTC itself is loaded at run time (runtime/nvrtc.c),
# not linked. Goals that build nothing (clean, deps, format, lint's setup)
# need no CUDA.
CUDA_MISSING = $(if $(wildcard $(CUDA)/include/nvrtc.h),,include/nvrtc.h)$(if $(wildcard $(CUDA)/include/cudaTypedefs.h),, include/cudaTypedefs.h)
ifneq ($(CUDA_MISSING),)
ifneq ($(filter-out clean deps format format-check lint uninstall,$(or $(MAKECMDGOALS),all)),)
$(error no CUDA toolkit at $(CUDA) (missing $(strip $(CUDA_MISSING))): tilec compiles kernels with NVRTC. \
Install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads) or point at one: \
make CUDA_HOME=/path/to/cuda (the directory holding include/nvrtc.h and include/cudaTypedefs.h))
endif
endif

# Every .c file of the library's folders is a library source (one job a
# file; a new file needs no line here).
LIB_DIRS = util dsl parser lower wrapper_ir emit_c emit_py runtime api
LIB_SRC  = $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
# No -lnvrtc: NVRTC (like the driver) is loaded with dlopen when a kernel
# is compiled, so the library and the command run without the toolkit.
LIBS     = -ldl -lpthread -lm
GEN_SRC  = $(BUILD)/gen/lexer.c $(BUILD)/gen/grammar.c $(BUILD)/gen/identity.c
LIB_OBJ  = $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(GEN_SRC:$(BUILD)/gen/%.c=$(BUILD)/obj/gen/%.o)
# The command: every .c file of cli/ (a subcommand is a file of its own).
CLI_OBJ  = $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard cli/*.c))
TESTS    = $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/test_*.c))

# The version's one place is include/tilec/core.h (docs/install.md).
version_part = $(shell sed -n 's/^.define TILEC_VERSION_$(1) \([0-9][0-9]*\)$$/\1/p' include/tilec/core.h)
MAJOR   := $(call version_part,MAJOR)
VERSION := $(MAJOR).$(call version_part,MINOR).$(call version_part,PATCH)

LIBA     = $(BUILD)/lib/libtilec.a
LIBSO    = $(BUILD)/lib/libtilec.so
LIBSO_V  = $(BUILD)/lib/libtilec.so.$(VERSION)
# Only the public API leaves the shared library: a version script that
# names every tilec_ identifier of include/tilec/*.h (tools/exports.sh).
EXPORTS  = $(BUILD)/gen/libtilec.map
TILEC    = $(BUILD)/bin/tilec
EXAMPLES = $(wildcard examples/*.tile)

.PHONY: all deps demo test test-run test-stamped layers symbols clang-check asan clean check-examples golden bench valgrind fuzz fuzz-build gen-nvrtc
all: $(LIBA) $(LIBSO) $(TILEC)

deps:
	@tools/deps.sh install

# The compilation database for editors and clang-tidy: every C file of the
# tree with the flags it builds with (tools/compile_commands.py).
COMPDB   = $(BUILD)/compile_commands.json
COMPDB_TESTS = $(wildcard tests/*.c bench/*/*.c fuzz/*.c examples/emitters/*.c examples/c/*.c)
all: $(COMPDB)
$(COMPDB): Makefile tools/compile_commands.py $(LIB_SRC) $(wildcard cli/*.c) $(COMPDB_TESTS)
	@mkdir -p $(dir $@)
	@python3 tools/compile_commands.py $@ $(CURDIR) $(BUILD) \
	    --flags "$(CC) $(CPPFLAGS) -I$(CUDA)/include $(CFLAGS)" $(LIB_SRC) $(wildcard cli/*.c) \
	    --flags "$(CC) $(CPPFLAGS) -I$(CUDA)/include $(CFLAGS) -Wno-missing-prototypes -Wno-double-promotion" \
	    $(COMPDB_TESTS)

# `make lint`: cppcheck over the compilation database (every C file of the
# tree), clean: a finding fails it. tools/cppcheck.supp lists the false
# positives, each with its reason; real findings are fixed.
.PHONY: lint format format-check
lint: $(COMPDB)
	@tools/deps.sh install-lint
	cppcheck --project=$(COMPDB) --enable=warning,portability,performance --inline-suppr -j2 --quiet \
	    --suppress=missingIncludeSystem --suppressions-list=tools/cppcheck.supp --error-exitcode=1 \
	    --template='{file}:{line}: {severity} ({id}): {message}'

# `make format` rewrites, and `make format-check` checks, the C files that
# already follow .clang-format (tools/formatted.txt lists them); the rest of
# the tree is formatted file by file as it is edited (docs/install.md).
FORMATTED = $(shell grep -v '^[[:punct:]]' tools/formatted.txt)
format:
	@tools/deps.sh install-lint
	clang-format -i $(FORMATTED)
format-check:
	@tools/deps.sh install-lint
	clang-format --dry-run --Werror $(FORMATTED)

# What the Python package bundles (python/_build_backend.py).
.PHONY: native
native: $(LIBSO) $(TILEC)

# The Redis tier's client (docs/runtime.md, "The Redis tier"): a shim built
# against hiredis's own headers (shim/redis.c, runtime/redis_shim.h),
# linked with -lhiredis (and -lhiredis_ssl, for rediss://, where hiredis
# has it: >= 1.0 with SSL), which libtilec loads with dlopen from beside
# itself. Without libhiredis-dev it is not built, libtilec is built with
# TILEC_NO_REDIS and the tier reports "built without Redis support".
HIREDIS_INC ?= /usr/include
REDIS_SHIM  = $(BUILD)/lib/libtilec_redis.so
ifneq ($(wildcard $(HIREDIS_INC)/hiredis/hiredis.h),)
REDIS_TLS  := $(if $(wildcard $(HIREDIS_INC)/hiredis/hiredis_ssl.h),-DTILEC_REDIS_TLS)
all native: $(REDIS_SHIM)
$(REDIS_SHIM): shim/redis.c runtime/redis_shim.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -I$(HIREDIS_INC) $(REDIS_TLS) $(CFLAGS) -shared $(LDFLAGS) -o $@ $< -lhiredis $(if $(REDIS_TLS),-lhiredis_ssl)
$(BUILD)/tests/test_cache_remote $(BUILD)/tests/test_cli: | $(REDIS_SHIM)
else
REDIS_SHIM =
$(info make: no $(HIREDIS_INC)/hiredis/hiredis.h (libhiredis-dev): building without the Redis tier's client)
$(BUILD)/obj/runtime/cache_remote.o: CPPFLAGS += -DTILEC_NO_REDIS
endif

# The grammar's terminals come from the lexer's one list (dsl/token.h): its
# names, in order, replace the grammar's "%token ILLEGAL." line.
$(BUILD)/gen/grammar.c $(BUILD)/gen/grammar.h &: parser/grammar.y dsl/token.h
	@mkdir -p $(BUILD)/gen
	@tools/deps.sh check
	sed "s/^%token ILLEGAL\.$$/%token $$(sed -n 's/^ *X(\([A-Z_]*\),.*/\1/p' dsl/token.h | tr '\n' ' ')./" \
	    parser/grammar.y >$(BUILD)/gen/grammar.y
	$(LEMON) -q -s -T$(LEMPAR) $(BUILD)/gen/grammar.y >/dev/null

# The compiler's identity in every cache key (docs/runtime.md, "Keys"): a
# hash of the sources that decide what a cache entry holds; the file is
# rewritten only when the hash changes.
IDENTITY_SRC = $(sort $(wildcard $(foreach d,util dsl parser lower runtime api include/tilec,$(d)/*.[chy] $(d)/*.re)))
$(BUILD)/gen/identity.c: $(IDENTITY_SRC) tools/identity.sh
	@mkdir -p $(BUILD)/gen
	@tools/identity.sh $@ $(IDENTITY_SRC)

$(BUILD)/gen/lexer.c: dsl/lexer.re
	@mkdir -p $(BUILD)/gen
	$(RE2C) -W --no-generation-date --no-version -o $@ $<

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c $(BUILD)/gen/grammar.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/obj/gen/grammar.o: CFLAGS += $(GENFLAGS)

$(BUILD)/obj/%.o: %.c $(BUILD)/gen/grammar.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# The static library hides its insides as the shared one does: one
# relocatable object (ld -r of every object) whose globals other than the
# public API's tilec_ names (tools/exports.sh --list) are made local, so a
# program linking libtilec.a may define its own lower_note or sb_append
# (docs/install.md). The tests and the fuzzers, which call internal
# functions, link the same objects unhidden: libtilec_internal.a, never
# installed.
LIBA_INT = $(BUILD)/lib/libtilec_internal.a
EXPORT_LIST = $(BUILD)/gen/libtilec.syms
$(LIBA): $(LIB_OBJ) $(EXPORT_LIST)
	@mkdir -p $(dir $@)
	rm -f $@ $(BUILD)/lib/libtilec.o
	$(LD) -r -o $(BUILD)/lib/libtilec.o $(LIB_OBJ)
	objcopy --keep-global-symbols=$(EXPORT_LIST) $(BUILD)/lib/libtilec.o
	ar rcs $@ $(BUILD)/lib/libtilec.o
	rm -f $(BUILD)/lib/libtilec.o

$(LIBA_INT): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(EXPORTS): tools/exports.sh $(wildcard include/tilec/*.h)
	@mkdir -p $(dir $@)
	tools/exports.sh include/tilec > $@
$(EXPORT_LIST): tools/exports.sh $(wildcard include/tilec/*.h)
	@mkdir -p $(dir $@)
	tools/exports.sh --list include/tilec > $@

$(LIBSO_V): $(LIB_OBJ) $(EXPORTS)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libtilec.so.$(MAJOR) -Wl,--version-script=$(EXPORTS) -o $@ $(LIB_OBJ) $(LIBS)

$(LIBSO): $(LIBSO_V)
	ln -sf $(notdir $<) $(BUILD)/lib/libtilec.so.$(MAJOR)
	ln -sf $(notdir $<) $@

# -rdynamic: a --plugin's calls into libtilec resolve against the command.
$(TILEC): $(CLI_OBJ) $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -rdynamic -o $@ $^ $(LIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(LIBA_INT)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion $(LIBS)

$(BUILD)/obj/tests/%.o: CFLAGS += -Wno-missing-prototypes -Wno-double-promotion
# Kept: a test's object made through the pattern rule above is not an
# intermediate to delete, so a second `make test` relinks nothing.
.SECONDARY: $(TESTS:$(BUILD)/tests/%=$(BUILD)/obj/tests/%.o)

# The C wrapper of examples/e2e.tile, generated by the "c" emitter, compiled
# into the GPU wrapper test with the flags users are told to use.
$(BUILD)/gen/wrappers/e2e.c $(BUILD)/gen/wrappers/e2e.h $(BUILD)/gen/wrappers/e2e_fused.c \
    $(BUILD)/gen/wrappers/e2e_fused.h &: examples/e2e.tile $(TILEC)
	@mkdir -p $(BUILD)/gen/wrappers
	$(TILEC) examples/e2e.tile --emit c -o $(BUILD)/gen/wrappers
$(BUILD)/obj/gen/wrappers/%.o: $(BUILD)/gen/wrappers/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -Werror $(SANFLAGS) -Iinclude -c -o $@ $<
$(BUILD)/gen/wrappers/block.c $(BUILD)/gen/wrappers/block.h &: examples/block.tile $(TILEC)
	@mkdir -p $(BUILD)/gen/wrappers
	$(TILEC) examples/block.tile --emit c -o $(BUILD)/gen/wrappers
$(BUILD)/gen/wrappers/flce.c $(BUILD)/gen/wrappers/flce.h &: examples/chunked_ce.tile $(TILEC)
	@mkdir -p $(BUILD)/gen/wrappers
	$(TILEC) examples/chunked_ce.tile --emit c -o $(BUILD)/gen/wrappers
$(BUILD)/obj/tests/test_gpu_chunks.o: $(BUILD)/gen/wrappers/flce.h
$(BUILD)/obj/tests/test_gpu_chunks.o: CPPFLAGS += -I$(BUILD)/gen/wrappers
$(BUILD)/tests/test_gpu_chunks: $(BUILD)/obj/tests/test_gpu_chunks.o $(BUILD)/obj/gen/wrappers/flce.o $(LIBA_INT)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion $(LIBS)
$(BUILD)/obj/tests/test_gpu_wrapper.o: $(BUILD)/gen/wrappers/e2e.h $(BUILD)/gen/wrappers/e2e_fused.h \
    $(BUILD)/gen/wrappers/block.h
$(BUILD)/obj/tests/test_gpu_wrapper.o: CPPFLAGS += -I$(BUILD)/gen/wrappers
$(BUILD)/tests/test_gpu_wrapper: $(BUILD)/obj/tests/test_gpu_wrapper.o $(BUILD)/obj/gen/wrappers/e2e.o \
    $(BUILD)/obj/gen/wrappers/e2e_fused.o $(BUILD)/obj/gen/wrappers/block.o $(LIBA_INT)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion $(LIBS)
# The ahead-of-time wrapper of tests/aot_gemm.tile (--aot sm_80,sm_90a: the
# CUBINs of both and the sm_90a twins' metadata embedded, NVRTC at build
# time), run on the GPU by tests/test_gpu_aot.c.
$(BUILD)/gen/wrappers/aot_gemm.c $(BUILD)/gen/wrappers/aot_gemm.h &: tests/aot_gemm.tile $(TILEC)
	@mkdir -p $(BUILD)/gen/wrappers
	$(TILEC) tests/aot_gemm.tile --emit c --aot sm_80,sm_90a -q -o $(BUILD)/gen/wrappers
$(BUILD)/obj/tests/test_gpu_aot.o: $(BUILD)/gen/wrappers/aot_gemm.h
$(BUILD)/obj/tests/test_gpu_aot.o: CPPFLAGS += -I$(BUILD)/gen/wrappers
$(BUILD)/tests/test_gpu_aot: $(BUILD)/obj/tests/test_gpu_aot.o $(BUILD)/obj/gen/wrappers/aot_gemm.o $(LIBA_INT)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion $(LIBS)
$(BUILD)/obj/bench/%.o: CFLAGS += -Wno-missing-prototypes -Wno-double-promotion

# The optional CPython extension of the Python package (python/tilec/_native.c,
# stable ABI: one file serves Python 3.11 and later), beside libtilec.so;
# built when Python's headers are there (the package uses ctypes without it).
PYINC    := $(shell python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])" 2>/dev/null)
PYNATIVE = $(BUILD)/lib/tilec_native.abi3.so
ifneq ($(wildcard $(PYINC)/Python.h),)
all native: $(PYNATIVE)
endif
$(PYNATIVE): python/tilec/_native.c $(wildcard include/tilec/*.h)
	@mkdir -p $(dir $@)
	$(CC) -I$(PYINC) -Iinclude $(CFLAGS) -Wno-missing-prototypes -shared $(LDFLAGS) -o $@ $<

# The extension with rcall's phase counters (TILEC_NATIVE_PROF) beside a copy
# of libtilec.so: TILEC_LIB=build/libprof/libtilec.so python3
# bench/binding/profile_call.py GEN --phases (docs/python.md).
.PHONY: native-prof
native-prof: $(LIBSO) python/tilec/_native.c
	@mkdir -p $(BUILD)/libprof
	cp $(LIBSO) $(BUILD)/libprof/
	$(CC) -DTILEC_NATIVE_PROF -I$(PYINC) -Iinclude $(CFLAGS) -Wno-missing-prototypes -shared $(LDFLAGS) \
		-o $(BUILD)/libprof/tilec_native.abi3.so python/tilec/_native.c

# The fake CUDA driver that tests/test_runtime.c loads from beside itself.
FAKECUDA = $(BUILD)/tests/libfakecuda.so
$(FAKECUDA): tests/fake_cuda.c tests/fake_cuda.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -I$(CUDA)/include $(CFLAGS) -Wno-missing-prototypes -shared $(LDFLAGS) -o $@ $<
# The fake NCCL (tests/fake_nccl.c) that tests/test_comm.c and the
# wrappers' collectives load through TILEC_NCCL or a path.
FAKENCCL = $(BUILD)/tests/libfakenccl.so
$(FAKENCCL): tests/fake_nccl.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -I$(CUDA)/include $(CFLAGS) -Wno-missing-prototypes -shared $(LDFLAGS) -o $@ $<
$(BUILD)/obj/tests/test_comm.o: CPPFLAGS += -DTILEC_BUILD='"$(BUILD)"'
$(BUILD)/tests/test_comm: | $(FAKENCCL)
$(BUILD)/tests/test_runtime $(BUILD)/tests/test_externs $(BUILD)/tests/test_multikernel $(BUILD)/tests/test_plan $(BUILD)/tests/test_fill \
    $(BUILD)/tests/test_tma: | $(FAKECUDA)

# The demo emitter plugin of tests/test_emit.c, and a build of it whose
# tilec_plugin_register fails, and one built for another emitter ABI. Its tilec_* calls resolve against the program
# that loads it (linked with -rdynamic). The suite also runs the command.
PLUGINS  = $(BUILD)/tests/libplugin_demo.so $(BUILD)/tests/libplugin_demo_fail.so $(BUILD)/tests/libplugin_demo_abi.so
$(BUILD)/tests/libplugin_demo.so: tests/plugin_demo.c include/tilec/emitter.h include/tilec/wir.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -shared $(LDFLAGS) -o $@ $<
$(BUILD)/tests/libplugin_demo_fail.so: tests/plugin_demo.c include/tilec/emitter.h include/tilec/wir.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -DPLUGIN_DEMO_FAIL $(CFLAGS) -shared $(LDFLAGS) -o $@ $<
$(BUILD)/tests/libplugin_demo_abi.so: tests/plugin_demo.c include/tilec/emitter.h include/tilec/wir.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -DPLUGIN_DEMO_ABI $(CFLAGS) -shared $(LDFLAGS) -o $@ $<
$(BUILD)/obj/tests/test_emit.o: CPPFLAGS += -DTILEC_BUILD='"$(BUILD)"' -DTILEC_SANFLAGS='"$(SANFLAGS)"'
$(BUILD)/obj/tests/test_wrapper_run.o: CPPFLAGS += -DTILEC_BUILD='"$(BUILD)"' -DTILEC_SANFLAGS='"$(SANFLAGS)"'
$(BUILD)/obj/tests/test_multikernel.o: CPPFLAGS += -DTILEC_BUILD='"$(BUILD)"'
$(BUILD)/tests/test_wrapper_run: $(BUILD)/obj/tests/test_wrapper_run.o $(LIBA_INT) | $(FAKECUDA) $(FAKENCCL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion $(LIBS)
$(BUILD)/tests/test_emit: $(BUILD)/obj/tests/test_emit.o $(LIBA_INT) | $(PLUGINS) $(FAKECUDA) $(TILEC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -rdynamic -o $@ $^ -lcriterion $(LIBS)

# The example emitter plugin examples/emitters/dot.c (Graphviz), built by
# `make`; tests/test_dot.c runs the command with it against tests/golden/dot.
DOTPLUGIN = $(BUILD)/examples/emitters/libtilec_dot.so
all: $(DOTPLUGIN)
$(DOTPLUGIN): examples/emitters/dot.c include/tilec/emitter.h include/tilec/wir.h include/tilec/ast.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -shared $(LDFLAGS) -o $@ $<
$(BUILD)/obj/tests/test_dot.o: CPPFLAGS += -DTILEC_BUILD='"$(BUILD)"'
$(BUILD)/tests/test_dot: | $(DOTPLUGIN) $(TILEC)

BENCH    = $(BUILD)/bench/bench_runtime $(BUILD)/bench/e2e $(BUILD)/bench/e2e_fused $(BUILD)/bench/cache_bench
# the generated wrapper of examples/e2e.tile as a standalone program (make demo runs it)
$(BUILD)/bench/e2e $(BUILD)/bench/e2e_fused: $(BUILD)/bench/%: $(BUILD)/gen/wrappers/%.c $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -DTILEC_BENCH_MAIN -Iinclude -o $@ $< $(LIBA) $(LIBS)
$(BUILD)/bench/bench_runtime: $(BUILD)/obj/bench/runtime/bench_runtime.o $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)
# the kernel cache's benchmark (bench/cache/run.sh)
$(BUILD)/bench/cache_bench: $(BUILD)/obj/bench/cache/cache_bench.o $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)
all: $(BUILD)/bench/cache_bench

# The benchmark harness (bench/harness/README.md): one Python process times
# every side by one method; its C loop (tb.c) is this library, whose tilec_*
# symbols resolve against the libtilec.so the harness loaded.
BENCHLIB = $(BUILD)/bench/libtilec_bench.so
$(BENCHLIB): bench/harness/tb.c bench/bench_util.h include/tilec/program.h include/tilec/aot.h include/tilec/runtime.h \
    include/tilec/plan.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -shared $(LDFLAGS) -o $@ $<
# The generated C wrapper of bench/wrapper/chain8.tile with the harness's loop
# over it (bench/harness/tg.c), for the graph rows of the host-time table.
CHAIN8LIB = $(BUILD)/bench/libtilec_chain8.so
$(BUILD)/gen/bench/chain8.c $(BUILD)/gen/bench/chain8.h &: bench/wrapper/chain8.tile $(TILEC)
	@mkdir -p $(BUILD)/gen/bench
	$(TILEC) bench/wrapper/chain8.tile --emit c -o $(BUILD)/gen/bench
$(CHAIN8LIB): bench/harness/tg.c bench/bench_util.h $(BUILD)/gen/bench/chain8.c $(BUILD)/gen/bench/chain8.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -I$(BUILD)/gen/bench $(CFLAGS) -shared $(LDFLAGS) -o $@ bench/harness/tg.c $(BUILD)/gen/bench/chain8.c

# The GPU machine has no -dev packages: build here, bundle, run there.
# `make bench` on a GPU machine: the harness, results into BENCH_OUT
# (default bench/results), then the report (tables, plot) and
# docs/performance.md. On a machine that cannot build, point TILEC_LIB,
# TILEC_BENCH_LIB and TILEC_COMPILE_WORKER at a bundle (see gpu-bundle) and
# run bench/harness/run.sh yourself.
BENCH_OUT   ?= bench/results
bench: all $(BENCHLIB) $(CHAIN8LIB) $(BUILD)/bench/bench_runtime
	bench/harness/run.sh $(BENCH_OUT)

# The tilec command under valgrind on every example and every golden bad input.
valgrind: all
	tools/valgrind.sh $(BUILD)

.PHONY: gpu-bundle
# the cache benchmark's Redis server and client, where this machine has them
# (the client shim: the bundler finds its libhiredis)
REDIS_CARRY = $(firstword $(wildcard /usr/bin/redis-server)) $(REDIS_SHIM)
GPUDIR  ?= .gpu
gpu-bundle: all $(TESTS) $(BENCH) $(BENCHLIB) $(CHAIN8LIB) $(FAKECUDA) $(FAKENCCL)
	../shared/tools/gpu-bundle $(GPUDIR) $(TILEC) $(TESTS) $(BENCH) $(FAKECUDA) $(FAKENCCL) $(REDIS_CARRY)
	cp $(LIBSO) $(BENCHLIB) $(CHAIN8LIB) $(wildcard $(PYNATIVE)) $(GPUDIR)/lib/
$(BUILD)/obj/runtime/%.o: CPPFLAGS += -I$(CUDA)/include

# ---- install (docs/install.md) ----
# `make install PREFIX=/usr/local DESTDIR=`: the public headers, the shared
# library (real name, SONAME link, link-time link), the static library,
# tilec.pc, the command and its man page. `make uninstall` with the same
# PREFIX and DESTDIR removes exactly those files.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
INSTALL    ?= install
PCFILE      = $(BUILD)/pkgconfig/tilec.pc
HEADERS     = $(notdir $(wildcard include/tilec/*.h))

.PHONY: install uninstall $(PCFILE)
$(PCFILE): tools/tilec.pc.in
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' $< > $@

install: $(LIBA) $(LIBSO) $(TILEC) $(PCFILE) $(REDIS_SHIM)
	$(INSTALL) -d $(DESTDIR)$(INCLUDEDIR)/tilec $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	$(INSTALL) -m 0644 $(addprefix include/tilec/,$(HEADERS)) $(DESTDIR)$(INCLUDEDIR)/tilec/
	$(INSTALL) -m 0755 $(LIBSO_V) $(DESTDIR)$(LIBDIR)/
	ln -sf libtilec.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libtilec.so.$(MAJOR)
	ln -sf libtilec.so.$(MAJOR) $(DESTDIR)$(LIBDIR)/libtilec.so
	$(INSTALL) -m 0644 $(LIBA) $(DESTDIR)$(LIBDIR)/
	$(if $(REDIS_SHIM),$(INSTALL) -m 0755 $(REDIS_SHIM) $(DESTDIR)$(LIBDIR)/)
	$(INSTALL) -m 0644 $(PCFILE) $(DESTDIR)$(LIBDIR)/pkgconfig/
	$(INSTALL) -m 0755 $(TILEC) $(DESTDIR)$(BINDIR)/
	sed 's/@VERSION@/$(VERSION)/' docs/tilec.1 > $(BUILD)/tilec.1
	$(INSTALL) -m 0644 $(BUILD)/tilec.1 $(DESTDIR)$(MANDIR)/man1/

uninstall:
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/tilec/,$(HEADERS))
	-rmdir $(DESTDIR)$(INCLUDEDIR)/tilec 2>/dev/null
	rm -f $(DESTDIR)$(LIBDIR)/libtilec.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libtilec.so.$(MAJOR) \
	    $(DESTDIR)$(LIBDIR)/libtilec.so $(DESTDIR)$(LIBDIR)/libtilec.a $(DESTDIR)$(LIBDIR)/pkgconfig/tilec.pc \
	    $(DESTDIR)$(LIBDIR)/libtilec_redis.so \
	    $(DESTDIR)$(BINDIR)/tilec $(DESTDIR)$(MANDIR)/man1/tilec.1

# ---- the two commands of the README ----

demo: deps
	@$(MAKE) --no-print-directory check-examples

check-examples: all $(BUILD)/bench/e2e $(BUILD)/bench/e2e_fused
	@tools/demo.sh $(BUILD)

# A second `make test` with nothing changed runs nothing: the last green
# run's fingerprint (tools/test_stamp.sh: every tracked file's content, the
# build's flags, the tools) is kept in $(BUILD)/test-passed. RETEST=1 or
# `make test-run` runs every suite regardless.
TEST_CONFIG = $(CC) | $(OPT) | $(SANFLAGS) | $(CUDA)
test: deps
	@$(MAKE) --no-print-directory test-stamped
test-stamped:
	@tools/test_stamp.sh $(BUILD) check "$(TEST_CONFIG)" || { \
	    $(MAKE) --no-print-directory test-run && tools/test_stamp.sh $(BUILD) save "$(TEST_CONFIG)"; }

# The layering check (docs/architecture.md): no include up a layer, none
# sideways, no circle; tools/layers.allow lists the ones being removed.
layers:
	@echo "== tools/layers.py" && python3 tools/layers.py

# The package on the fake driver, with and without its extension; not in
# the ASan build (Python cannot load ASan-instrumented libraries).
PYFAKE = $(if $(SANITIZE),echo "tests/python/test_fake.py and test_docs.py: run by the plain build's make test",BUILD=$(BUILD) python3 tests/python/test_fake.py -q && BUILD=$(BUILD) TILEC_NO_NATIVE=1 python3 tests/python/test_fake.py -q && BUILD=$(BUILD) python3 tests/python/test_docs.py -q)
# The same check on symbols, after the build: no object uses a symbol that
# a folder it may not include defines, and the folders form no circle.
# And libtilec.a defines only tilec_ globals (its insides are hidden).
symbols: all
	@echo "== tools/symbols.py" && python3 tools/symbols.py $(BUILD)/obj && python3 tools/symbols.py --archive $(LIBA)

# The sources under clang's warnings as well as gcc's (`make fuzz` builds
# with clang, whose -Wimplicit-fallthrough wants an attribute where gcc
# takes a comment, and whose -Wall has more): syntax only, two files at a
# time; skipped, with a line saying so, where clang is not installed.
CLANG    ?= clang
CLANG_SRC = $(LIB_SRC) $(wildcard cli/*.c fuzz/*.c)
clang-check: all
	@if command -v $(CLANG) >/dev/null 2>&1; then echo "== $(CLANG) -fsyntax-only $(words $(CLANG_SRC)) sources (make fuzz's compiler)" && \
	    printf '%s\n' $(CLANG_SRC) | xargs -P 2 -n 8 $(CLANG) -fsyntax-only $(CPPFLAGS) -I$(CUDA)/include -std=c11 $(WARN); \
	else echo "== clang-check: no $(CLANG), skipped"; fi

# Every test runs with TMPDIR set to this run's own directory (made empty
# first): what a test leaves there fails the run, named, so each test
# removes what it makes; a failed run's leftovers stay under $(BUILD), not
# in /tmp, until the next run.
TEST_TMP = $(abspath $(BUILD))/test-tmp
test-run: layers all symbols clang-check $(TESTS)
	@rm -rf $(TEST_TMP) && mkdir -p $(TEST_TMP)
	@set -e; export TMPDIR=$(TEST_TMP); for t in $(TESTS); do echo "== $$t"; $$t --jobs 2; done
	@echo "== generated kernels through every stage" && TMPDIR=$(TEST_TMP) tools/gen_nvrtc.sh $(BUILD) 40
	@echo "== examples/*.tile as one module (bench/runtime and bench/cache build them so)" && \
	    cat examples/*.tile > $(BUILD)/all_examples.tile && $(TILEC) $(BUILD)/all_examples.tile --check
	@export TMPDIR=$(TEST_TMP); echo "== tests/python" && python3 tests/python/test_cpu.py -q && $(PYFAKE) && python3 tests/python/test_bench_report.py -q && python3 tests/python/test_bench_forms.py -q && python3 tests/python/test_bench_llm.py -q && python3 tests/python/test_bench_f32.py -q && python3 tests/python/test_bench_rows_tuned.py -q && python3 tests/python/test_layers.py -q && python3 tests/python/test_symbols.py -q && python3 tests/python/test_struct_layout.py -q && python3 tests/python/test_architecture.py -q && python3 tests/python/test_stamp.py -q && python3 -m py_compile python/tilec/*.py
	@export TMPDIR=$(TEST_TMP); if [ "$(SANITIZE)" = 1 ]; then echo "== install tests: not under the sanitizers (make test runs them)"; \
	else echo "== tests/install_test.sh" && tests/install_test.sh $(BUILD) && \
	echo "== tests/python/test_install.py" && python3 tests/python/test_install.py -q; fi
	@left=$$(ls -A $(TEST_TMP)); if [ -n "$$left" ]; then \
	    echo "make test: the tests left these in $(TEST_TMP) (a test removes what it makes):" $$left >&2; exit 1; fi
	@rmdir $(TEST_TMP)
	@echo "all test suites passed"

asan: deps
	@LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp $(MAKE) --no-print-directory BUILD=build-asan SANITIZE=1 OPT="-O1 -g" test-stamped

# libFuzzer targets (fuzz/): the front end, the bundle reader and the
# generator of well-typed kernels (fuzz_gen), built with
# clang, ASan and UBSan in build-fuzz/ and run FUZZ_SECONDS each (default
# 60) from seeds (examples, golden inputs, valid bundles). Findings land in
# build-fuzz/findings/. Long runs: tools/fuzz.sh (docs/reliability.md).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= 1
FUZZ_SAN      = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
fuzz:
	@tools/deps.sh install-fuzz
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=$(FUZZ_CC) OPT="-O1 -g" \
	    SANFLAGS="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" fuzz-build
	tools/fuzz.sh build-fuzz $(FUZZ_SECONDS) $(FUZZ_JOBS)
fuzz-build: $(BUILD)/fuzz/fuzz_frontend $(BUILD)/fuzz/fuzz_bundle $(BUILD)/fuzz/fuzz_gen $(BUILD)/fuzz/bundle_seeds $(BUILD)/fuzz/gen_tiles
$(BUILD)/fuzz/fuzz_%: $(BUILD)/obj/fuzz/fuzz_%.o $(LIBA_INT)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(LIBS)
$(BUILD)/fuzz/fuzz_gen: $(BUILD)/obj/fuzz/fuzz_gen.o $(BUILD)/obj/fuzz/gen_kernel.o $(LIBA_INT)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(LIBS)

# The generator of well-typed kernels, as files: N generated modules through
# the checker, NVRTC (sm_90), cc -Werror and py_compile (GEN_N, default 300).
GEN_N ?= 300
all: $(BUILD)/fuzz/gen_tiles
$(BUILD)/fuzz/gen_tiles: $(BUILD)/obj/fuzz/gen_tiles.o $(BUILD)/obj/fuzz/gen_kernel.o $(LIBA_INT)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)
gen-nvrtc: all
	tools/gen_nvrtc.sh $(BUILD) $(GEN_N)
$(BUILD)/fuzz/bundle_seeds: $(BUILD)/obj/fuzz/bundle_seeds.o $(LIBA_INT)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

# Rewrite the expected outputs of the golden tests from the current build
# (review the diff before committing it).
# The choice tables of an --aot wrapper (tests/golden/choices; test_wrapper_run reads them the same way)
CHOICES_TABLE = /the multi-kernel choices tuned/,/^};/p; /^static const tilec_aot_table/,/^};/p
golden: all
	@for f in tests/golden/ok/*.tile; do $(TILEC) $$f --emit ast > $${f%.tile}.ast; done
	@for f in tests/golden/bad/*.tile; do $(TILEC) $$f --check 2> $${f%.tile}.err; true; done
	@mkdir -p tests/golden/cuda
	@for f in examples/*.tile; do b=$${f##*/}; $(TILEC) $$f --emit cuda > tests/golden/cuda/$${b%.tile}.cu; done
	@for f in tests/golden/index/*.tile; do $(TILEC) $$f --emit cuda | grep -E '^ */\* indexing:|long long' \
		| grep -v '(unsigned long long)' | sed 's/^ *//' > $${f%.tile}.idx; done
	@for f in tests/golden/axes/*.tile; do $(TILEC) $$f --emit cuda | grep -E ' along axis |blockIdx\.|gridDim\.' \
		| sed 's/^ *//' > $${f%.tile}.axes; done
	@for f in tests/golden/hoist/*.tile; do $(TILEC) $$f --emit cuda | grep -E 'tl_h[0-9]' | sed 's/^ *//' > $${f%.tile}.hoist; done
	@for f in tests/golden/split/*.tile; do $(TILEC) $$f --emit cuda | grep -E 'split|tl_slice|tl_steps|tl_per|tl_tile|tl_last|tl_seen|tl_all|tl_mine|blockIdx\.z|gridDim\.z|__threadfence' \
		| sed 's/^ *//' > $${f%.tile}.split; done
	@mkdir -p tests/golden/layouts
	@for f in examples/*.tile; do b=$${f##*/}; $(TILEC) $$f --emit layouts > tests/golden/layouts/$${b%.tile}.layouts; done
	@for f in tests/golden/ir/*.tile; do $(TILEC) $$f --emit ir > $${f%.tile}.ir; done
	@for f in tests/golden/tune/*.tile; do $(TILEC) $$f --emit tune > $${f%.tile}.tune; done
	@mkdir -p tests/golden/docuser
	@for f in tests/docuser/*.tile; do b=$${f##*/}; $(TILEC) $$f --emit layouts > tests/golden/docuser/$${b%.tile}.layouts; done
	@for f in tests/golden/choices/*.tile; do d=$$(mktemp -d); \
	    $(TILEC) $$f --emit c --aot sm_80,sm_90a --choices $${f%.tile}.choices -q -o $$d || exit 1; \
	    sed -n '$(CHOICES_TABLE)' $$d/*.c > $${f%.tile}.table; rm -rf $$d; done
	@for f in tests/golden/ir/*.tile examples/e2e.tile; do b=$${f##*/}; d=tests/golden/c/$${b%.tile}; \
	    mkdir -p $$d; rm -f $$d/*.c $$d/*.h; $(TILEC) $$f --emit c -o $$d || exit 1; done
	@for f in tests/golden/ir/*.tile examples/e2e.tile; do b=$${f##*/}; d=tests/golden/py/$${b%.tile}; \
	    mkdir -p $$d; rm -f $$d/*.py; if [ -f $$d/error.txt ]; then ! $(TILEC) $$f --emit py -o $$d 2> $$d/error.txt || exit 1; \
	    else $(TILEC) $$f --emit py -o $$d || exit 1; fi; done
	@mkdir -p tests/golden/dot
	@for f in examples/e2e.tile tests/golden/ir/block.tile; do $(TILEC) $$f --plugin $(DOTPLUGIN) --emit dot -o tests/golden/dot || exit 1; done

clean:
	rm -rf build build-asan build-fuzz

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
