/* c_internal.h: what the files of the "c" emitter share: the state of one
 * graph's emission (cstate), the spelling of names, sizes and types
 * (c_spell.c), the text of the generated helpers (c_prelude.c), the
 * parameters and input checks (c_inputs.c), the IR line handlers
 * (c_lines.c), the module functions (c_module.c), the --aot kernels
 * (c_aot.c) and the benchmark main (c_bench.c). The entry point is
 * emit_c.c. */
#ifndef TILEC_EMIT_C_INTERNAL_H
#define TILEC_EMIT_C_INTERNAL_H

#include "emit_c/c_sizes.h"
#include "tilec/emitter.h"
#include "util/mangle.h"
#include "util/strbuf.h"

typedef struct cstate {
    tilec_emit *e;
    const tilec_wir *w;
    const tilec_graph *g;
    strbuf body;   /* the statements of NAME_run */
    strbuf decls;  /* its buffer declarations */
    strbuf checked; /* size arguments already range-checked: "i32 N" */
    strbuf names[8]; /* the last names cn() spelled */
    int next;
    strbuf graph;    /* the graph's name in C (mg_c_graph) */
    csz sz;        /* the size block, spliced in after the input checks */
    size_t inputs_end; /* where in body the input checks end */
    /* graph mode (c_graph.c): the plan's slot types and names, its steps */
    strbuf gtypes, gnames, gsteps, gxt; /* gxt: the extern steps' tensors */
    uint32_t nslots, nsteps, nxt;
    strbuf coll;     /* NAME_set_comm's registrations, one per COLLECTIVE line */
    const char *no_graph; /* why the graph has no graph mode, or NULL */
    int loops;       /* the graph keeps a for loop: graph mode queues its steps (c_graph_seq.c) */
    strbuf granges;  /* with loops: each step's first slot and slot count */
    int aot_choices; /* --aot of one architecture with choices: NAME_load calls tl_load_program */
    int failed;
} cstate;

/* ---- c_spell.c ---- */

/* The C spelling of name in namespace kind (util/mangle.h); valid until
 * eight more names were spelled. */
const char *cn(cstate *s, mg_c_kind kind, const char *name);

#define B(name) cn(s, MG_C_BUFFER, name)

/* C spelling of a dimension of a graph input: an integer or a size symbol. */
void c_dim(strbuf *b, const tilec_graph *g, const tilec_ix *e);
/* "TILEC_DT_F32": the enumerator of dtype d. */
const char *dt_enum(tilec_dtype d);
/* "float": the C type of a scalar of dtype d. */
const char *c_scalar_type(tilec_dtype d);
/* "i32": the tilec_rt_arg member a kernel parameter of dtype d is passed in. */
const char *c_arg_field(tilec_dtype d);
/* A comment line. */
void c_comment(strbuf *b, const char *indent, const char *text);

/* ---- c_prelude.c: the helpers every generated .c file starts with ---- */

/* includes, tl_mem, tl_fail, tl_shape, tl_contiguous */
extern const char c_prologue[];
/* the debug printer (TILEC_DEBUG_PRINT) */
extern const char c_debug_prelude[];

/* ---- c_inputs.c ---- */

/* ", const tilec_tensor *t_x, float p_eps" */
void c_params(strbuf *b, const tilec_graph *g);
/* ASSERT_SHAPE: an input descriptor checked against its parameter. */
int c_line_assert_shape(void *u, const tilec_wir_line *l);
/* ASSERT_LIST: a tensor list parameter (const tilec_rt_list *l_NAME) checked. */
int c_line_assert_list(void *u, const tilec_wir_line *l);
int c_line_make_list(void *u, const tilec_wir_line *l);
int c_line_list_of(void *u, const tilec_wir_line *l);
/* A kernel call's ITEM argument xs[i]: its bounds check and address (tl_item<argno>). */
int c_item_check(cstate *s, const tilec_wir_arg *a, uint32_t argno, unsigned line);
/* The canonical text of an ITEM argument's index ("i + 1" of "xs[i + 1]"), into b. */
void c_item_index(const tilec_wir_arg *a, strbuf *b);


/* ---- c_lines.c: the statements of NAME_run, one handler per IR line kind ---- */


int c_line_comment(void *u, const tilec_wir_line *l);
int c_line_kernel_def(void *u, const tilec_wir_line *l);
int c_line_allocate(void *u, const tilec_wir_line *l);
int c_line_reuse(void *u, const tilec_wir_line *l);
int c_line_free(void *u, const tilec_wir_line *l);
int c_line_reinterpret(void *u, const tilec_wir_line *l);
/* c_loop.c: LOOP and END_LOOP */
int c_line_loop(void *u, const tilec_wir_line *l);
int c_line_end_loop(void *u, const tilec_wir_line *l);
int c_line_kernel_call(void *u, const tilec_wir_line *l);
int c_line_extern_call(void *u, const tilec_wir_line *l);
int c_line_extern_alloc(void *u, const tilec_wir_line *l);
int c_line_multi_output(void *u, const tilec_wir_line *l);
/* A collective: its result allocated, an extern call of its symbol. */
int c_line_collective(void *u, const tilec_wir_line *l);

/* ---- c_module.c ---- */

/* NAME.h: the declarations of the module functions and NAME_run
 * (params: c_params' text). */
void c_header(cstate *s, strbuf *h, const char *file, const char *aot, const char *params);
/* NAME.c's module struct and functions: the spare buffers (tl_trim,
 * tl_alloc, tl_release), NAME_load (fileq: the .tile file name as a C
 * string literal), NAME_unload, NAME_externs, NAME_release. */
void c_module_funcs(cstate *s, strbuf *c, const char *aot, const char *fileq);
/* NAME_set_comm, for a graph with collectives (nothing otherwise). */
void c_comm_funcs(cstate *s, strbuf *c);

/* ---- c_graph.c: CUDA-graph mode (NAME_set_cuda_graph) ---- */

/* Note why the graph has no graph mode (the first reason is kept). */
void cg_unsupported(cstate *s, const char *why);
/* A launch's graph-mode branch in NAME_run, and its step in the plan. */
void cg_kernel(cstate *s, const tilec_kernel *k, uint32_t nargs, int best);
/* The statements of graph mode for an extern call of l (inputs its
 * arguments, outputs outs), before its eager call: each tensor's address
 * and sizes to slots, an extern step; nothing when the graph has no graph
 * mode. */
void cg_extern(cstate *s, const tilec_wir_line *l, const char *const *outs, uint32_t nouts);
void cg_fill(cstate *s, const char *name, const char *buf, tilec_dtype dt, uint32_t rank, uint64_t bits);
/* The module struct's fields, NAME.h's declaration, the plan's tables with
 * NAME_set_cuda_graph, and NAME_run's declarations and closing plan run. */
void cg_fields(cstate *s, strbuf *c);
void cg_header(cstate *s, strbuf *h);
void cg_funcs(cstate *s, strbuf *c);
void cg_decls(cstate *s, strbuf *c);
void cg_run(cstate *s, strbuf *c);

/* ---- c_graph_seq.c: graph mode of a graph that keeps a for loop ---- */

/* The loop body of tl_plan_build (a step per table entry) or tl_plan_seq
 * (a step per queued run, its slots `dk` after the table's): adds step i
 * of the tables with v[] its arguments' slots, ok cleared on failure. */
void cg_add_step(strbuf *c, const cstate *s, int seq);

/* Does graph mode queue the steps (a graph that keeps a loop and has steps)? */
int cg_seq_mode(const cstate *s);
/* In a graph-mode branch: the step `step` just filled slots first ..
 * first + n - 1, queued with their values (a graph with loops only). */
void cg_seq_push(cstate *s, const char *indent, uint32_t step, uint32_t first, uint32_t n);
/* After cg_seq_push: the queued slot `back` slots from the end, a tensor
 * list, pointed at a copy of its list (tl_q_list). */
void cg_seq_list(cstate *s, const char *indent, uint32_t back);
/* tl_q, tl_q_push, tl_plan_seq (a plan for the steps a call ran, in
 * order) and tl_seq_run (the call's queue run through the plan cached for
 * its order, made and recorded the first time), and NAME_set_cuda_graph. */
void cg_seq_funcs(cstate *s, strbuf *c);
/* NAME_run's end in graph mode, and what its exit frees. */
void cg_seq_run(cstate *s, strbuf *c);
void cg_seq_out(cstate *s, strbuf *c);

/* The architectures of an --aot list (c_spell.c) into out: their number, or -1 when
 * one is not a GPU architecture's name, one repeats, or there are more
 * than C_AOT_MAX_ARCHS. */
#define C_AOT_MAX_ARCHS 8
int c_aot_archs(const char *archs, char out[C_AOT_MAX_ARCHS][16]);

/* ---- c_aot.c ---- */

/* Every variant of every kernel of the module compiled for each
 * architecture of archs ("sm_90a", or a list "sm_80,sm_90a"), as C: the
 * CUBINs, grid functions, sm_90a twins' metadata, and the table
 * tilec_program_load takes (tl_kernels, TL_NKERNELS); for a list, one
 * table per architecture (tl_kernels_sm_80, ...) and tl_archs, TL_NARCHS
 * for tilec_program_load_for_device. With the option "choices" (a file
 * of `tilec tune --choices`), each table's choices (c_choices.c) and, for
 * one architecture with some, tl_load_program, which NAME_load calls
 * (*choices set to 1). 0, or -1 with a diagnostic in the emit's ctx. */
int c_aot_kernels(tilec_emit *e, strbuf *c, const char *archs, int *choices);



/* ---- c_choices.c ---- */

/* One line of a --choices file (tilec tune --choices), checked against
 * the module: key is the kernel's integer arguments in order. */
typedef struct c_choice {
    char kernel[128], target[16], device[256], sizes[1024];
    int64_t key[64];
    uint32_t nkey;
    int variant, line;
} c_choice;
typedef struct c_choices {
    c_choice *v;
    size_t n;
} c_choices;

/* Read path's choices, each checked against m (the kernel, its variant
 * count, the variant's hints, the shape's names): 0, or -1 with a
 * diagnostic naming path:line (nothing kept). */
int c_choices_read(tilec_ctx *ctx, const tilec_module *m, const char *path, c_choices *out);
void c_choices_free(c_choices *cs);
/* The choices tuned for arch as C (tl_keySFX_I, tl_choicesSFX,
 * TL_NCHOICESSFX): their number (0: nothing written). */
uint32_t c_choices_table(strbuf *c, const c_choices *cs, const char *arch, const char *sfx);

/* ---- c_bench.c ---- */

/* -DTILEC_BENCH_MAIN: `./NAME R=4096 C=1024 [iters=N]` times the graph on
 * random inputs (device events, median). */
void c_bench_main(strbuf *c, cstate *s);

#endif
