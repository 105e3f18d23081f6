/* numerics_ref.h: the values of tests/gpu/numerics.tile's kernels computed
 * on the CPU, for tests/test_numerics.c (the generated CUDA run on the host)
 * and tests/test_gpu_kernels.c (on the GPU). Include after gpu_helpers.h. */
#ifndef TILEC_TESTS_NUMERICS_REF_H
#define TILEC_TESTS_NUMERICS_REF_H

static inline float ref_bf16(float x) { return bf16_to_f32(f32_to_bf16(x)); }
static inline float ref_f16(float x) { return f16_to_f32(f32_to_f16(x)); }

/* scalar_round(s): out[0 .. 4] (each f16/bf16 let, re-assignment and
 * loop-carried scalar rounded as it is bound); out[8 .. 23] are want[0]. */
#define SCALAR_ROUND_N 5
static const char *const scalar_round_what[SCALAR_ROUND_N] = {
    "let b = cast(s, bf16) * 3.0", "let h = cast(s, f16) * 3.0", "acc = acc + b (bf16)", "hacc = hacc * 1.1 (f16)",
    "let r = b / 7.0 + b (bf16)"};
static inline void scalar_round_want(float s, float want[SCALAR_ROUND_N])
{
    float b = ref_bf16(ref_bf16(s) * 3.0f), h = ref_f16(ref_f16(s) * 3.0f), acc = 0.0f, hacc = ref_f16(s);
    for (int j = 0; j < 8; j++) {
        acc = ref_bf16(acc + b);
        hacc = ref_f16(hacc * ref_f16(1.1f));
    }
    want[0] = b;
    want[1] = h;
    want[2] = acc;
    want[3] = hacc;
    want[4] = ref_bf16(b / 7.0f + b);
}

#endif
