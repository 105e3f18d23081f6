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
GENFLAGS = -Wno-unused-parameter -Wno-unused-variable -Wno-missing-prototypes -Wno-null-dereference -DNDEBUG

CUDA     ?= /usr/local/cuda
RT_SRC   = runtime/driver.c runtime/module.c runtime/nvrtc.c runtime/rt.c runtime/pool.c runtime/log.c \
           runtime/hash.c runtime/bundle.c runtime/cache.c runtime/program.c runtime/workers.c runtime/multikernel.c
LIBS     = -L$(CUDA)/lib64 -Wl,-rpath,$(CUDA)/lib64 -lnvrtc -ldl -lpthread -lm
LIB_SRC  = $(RT_SRC) util/arena.c util/fdio.c util/strbuf.c util/poly.c dsl/diag.c \
           parser/parse.c parser/build.c parser/check.c parser/dump.c lower/lower.c lower/compile.c api/module.c \
           wrapper_ir/lower_graph.c wrapper_ir/plan.c wrapper_ir/print.c
GEN_SRC  = $(BUILD)/gen/lexer.c $(BUILD)/gen/grammar.c
LIB_OBJ  = $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(GEN_SRC:$(BUILD)/gen/%.c=$(BUILD)/obj/gen/%.o)
TESTS    = $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/test_*.c))

LIBA     = $(BUILD)/lib/libtilec.a
LIBSO    = $(BUILD)/lib/libtilec.so
TILEC    = $(BUILD)/bin/tilec
EXAMPLES = $(wildcard examples/*.tile)

.PHONY: all deps demo test test-run asan clean check-examples golden
all: $(LIBA) $(LIBSO) $(TILEC)

deps:
	@tools/deps.sh install

$(BUILD)/gen/grammar.c $(BUILD)/gen/grammar.h &: parser/grammar.y
	@mkdir -p $(BUILD)/gen
	@tools/deps.sh check
	cp parser/grammar.y $(BUILD)/gen/grammar.y
	$(LEMON) -q -s -T$(LEMPAR) $(BUILD)/gen/grammar.y >/dev/null

$(BUILD)/gen/lexer.c: dsl/lexer.re $(BUILD)/gen/grammar.h
	@mkdir -p $(BUILD)/gen
	$(RE2C) -W --no-generation-date --no-version -o $@ $<

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c $(BUILD)/gen/grammar.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/obj/gen/grammar.o: CFLAGS += $(GENFLAGS)

$(BUILD)/obj/%.o: %.c $(BUILD)/gen/grammar.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(LIBA): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(LIBSO): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -o $@ $^ $(LIBS)

$(TILEC): $(BUILD)/obj/cli/tilec.o $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion $(LIBS)

$(BUILD)/obj/tests/%.o: CFLAGS += -Wno-missing-prototypes -Wno-double-promotion
$(BUILD)/obj/bench/%.o: CFLAGS += -Wno-missing-prototypes -Wno-double-promotion

# The fake CUDA driver that tests/test_runtime.c loads from beside itself.
FAKECUDA = $(BUILD)/tests/libfakecuda.so
$(FAKECUDA): tests/fake_cuda.c tests/fake_cuda.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -I$(CUDA)/include $(CFLAGS) -Wno-missing-prototypes -shared $(LDFLAGS) -o $@ $<
$(BUILD)/tests/test_runtime: | $(FAKECUDA)

BENCH    = $(BUILD)/bench/bench_kernels $(BUILD)/bench/bench_runtime $(BUILD)/bench/bench_multikernel
$(BUILD)/bench/%: $(BUILD)/obj/bench/kernels/%.o $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)
$(BUILD)/bench/bench_multikernel: $(BUILD)/obj/bench/multikernel/bench_multikernel.o $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)
$(BUILD)/bench/bench_runtime: $(BUILD)/obj/bench/runtime/bench_runtime.o $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

# The GPU machine has no -dev packages: build here, bundle, run there.
.PHONY: gpu-bundle
GPUDIR  ?= .gpu
gpu-bundle: all $(TESTS) $(BENCH) $(FAKECUDA)
	../shared/tools/gpu-bundle $(GPUDIR) $(TILEC) $(TESTS) $(BENCH) $(FAKECUDA)
	cp $(LIBSO) $(GPUDIR)/lib/
$(BUILD)/obj/runtime/%.o: CPPFLAGS += -I$(CUDA)/include

# ---- the two commands of the README ----

demo: deps
	@$(MAKE) --no-print-directory check-examples

check-examples: all
	@for f in $(EXAMPLES); do \
	    printf 'tilec %s --check ... ' "$$f"; \
	    $(TILEC) $$f --check && echo ok || exit 1; \
	done
	@echo; echo "== tilec examples/matmul.tile --emit ast"; $(TILEC) examples/matmul.tile --emit ast

test: deps
	@$(MAKE) --no-print-directory test-run

test-run: all $(TESTS)
	@set -e; for t in $(TESTS); do echo "== $$t"; $$t --jobs 2; done
	@echo "== tests/python"; python3 tests/python/test_cpu.py -q; python3 -m py_compile python/tilec/__init__.py
	@echo "all test suites passed"

asan: deps
	@LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp $(MAKE) --no-print-directory BUILD=build-asan SANITIZE=1 OPT="-O1 -g" test-run

# Rewrite the expected outputs of the golden tests from the current build
# (review the diff before committing it).
golden: all
	@for f in tests/golden/ok/*.tile; do $(TILEC) $$f --emit ast > $${f%.tile}.ast; done
	@for f in tests/golden/bad/*.tile; do $(TILEC) $$f --check 2> $${f%.tile}.err; true; done
	@mkdir -p tests/golden/cuda
	@for f in examples/*.tile; do b=$${f##*/}; $(TILEC) $$f --emit cuda > tests/golden/cuda/$${b%.tile}.cu; done
	@for f in tests/golden/ir/*.tile; do $(TILEC) $$f --emit ir > $${f%.tile}.ir; done

clean:
	rm -rf build build-asan

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
