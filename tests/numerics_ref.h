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

/* prods(x, y): out[53] and oi[32] as tests/gpu/numerics.tile's prods
 * computes them (floats in double: the kernel multiplies in another order). */
static inline void prods_want(const float *x, const int32_t *y, double out[53], int32_t oi[32])
{
    for (int i = 0; i < 16; i++) {
        out[i] = 1;
        uint32_t p = 1;
        uint8_t q = 1;
        for (int j = 0; j < 32; j++) {
            out[i] *= x[i * 32 + j];
            p *= (uint32_t)y[i * 32 + j];
            q = (uint8_t)(q * (uint8_t)y[i * 32 + j]);
        }
        oi[i] = (int32_t)p;
        oi[16 + i] = q;
    }
    for (int j = 0; j < 32; j++) {
        out[16 + j] = 1;
        for (int i = 0; i < 16; i++)
            out[16 + j] *= x[i * 32 + j];
    }
    out[48] = 1;
    for (int i = 0; i < 128; i++)
        out[48] *= x[i];
    for (int i = 0; i < 4; i++) {
        out[49 + i] = 1;
        for (int j = 0; j < 4; j++)
            out[49 + i] *= x[i * 4 + j];
    }
}

/* Inputs for prods: x near 1 (and a few -1, 2 and 0.5, exact), so that a
 * product of 128 stays in range; y small integers that overflow i32 and u8. */
static inline void prods_inputs(float *x, int32_t *y, unsigned long long seed)
{
    for (int i = 0; i < 512; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        x[i] = i % 37 == 5 ? -1.0f : i % 41 == 7 ? 2.0f : i % 43 == 9 ? 0.5f : 0.9f + (float)(seed >> 40) / 16777216.0f * 0.2f;
        y[i] = (int32_t)(seed % 7) - 3 + (i % 5 == 0 ? 1000 : 0);
    }
}

/* picks(x, i, j): out[20] as tests/gpu/numerics.tile's picks computes it
 * (run-time indices clamped to the axes of the [16, 32] tile x). */
static inline void picks_want(const float *x, int i, int j, float out[20])
{
    int ci = i < 0 ? 0 : i > 15 ? 15 : i, cj = j < 0 ? 0 : j > 31 ? 31 : j;
    float m = x[15 * 32];
    for (int k = 1; k < 32; k++)
        m = x[15 * 32 + k] > m ? x[15 * 32 + k] : m;
    out[0] = x[3 * 32 + 5];
    out[1] = x[ci * 32 + cj];
    out[2] = (float)(2 * ci);
    out[3] = m;
    for (int k = 0; k < 16; k++)
        out[4 + k] = x[2 * 32 + 2] + (float)(2 * k);
}

/* slices(x, i): out[336] as tests/gpu/numerics.tile's slices computes it
 * (x a [16, 32] tile; the run-time row i clamped to 0 .. 7). */
static inline void slices_want(const float *x, int i, float out[336])
{
    int ci = i < 0 ? 0 : i > 7 ? 7 : i;
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 16; c++)
            out[r * 16 + c] = x[(4 + r) * 32 + c];
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 8; c++) {
            out[128 + r * 8 + c] = x[2 * r * 32 + 1 + 4 * c];
            out[264 + r * 8 + c] = x[r * 32 + 8 + c];
        }
    for (int c = 0; c < 16; c++) {
        out[192 + c] = x[5 * 32 + 16 + c];
        out[208 + c] = (float)(3 * (16 + c));
    }
    for (int r = 0; r < 8; r++) {
        float m = x[2 * r * 32];
        for (int k = 1; k < 32; k++)
            m = x[2 * r * 32 + k] > m ? x[2 * r * 32 + k] : m;
        out[224 + r] = m;
        out[328 + r] = x[ci * 32 + r] * 2.0f;
    }
    for (int c = 0; c < 32; c++)
        out[232 + c] = x[2 * 32 + c];
}

/* rope's inputs: x[48 * 64], cs[32], sn[32] in [-2, 2). */
static inline void rope_inputs(float *x, float *cs, float *sn, unsigned long long seed)
{
    for (int i = 0; i < 48 * 64 + 64; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        float v = (float)(seed >> 40) / 4194304.0f - 2.0f;
        if (i < 48 * 64)
            x[i] = v;
        else if (i < 48 * 64 + 32)
            cs[i - 48 * 64] = v;
        else
            sn[i - 48 * 64 - 32] = v;
    }
}

/* rope(x, cs, sn, n): out[n * 64] as tests/gpu/numerics.tile's rope
 * computes it (rotate-half: each row's halves x1, x2 become x1 c - x2 s and
 * x2 c + x1 s, products rounded before the sum as without FMA contraction). */
static inline void rope_want(const float *x, const float *cs, const float *sn, int n, float *out)
{
    for (int r = 0; r < n; r++)
        for (int k = 0; k < 32; k++) {
            float x1 = x[r * 64 + k], x2 = x[r * 64 + 32 + k];
            float a = x1 * cs[k], b = x2 * sn[k], c = x2 * cs[k], d = x1 * sn[k];
            out[r * 64 + k] = a - b;
            out[r * 64 + 32 + k] = c + d;
        }
}

/* reshapes(x): out[3200] as tests/gpu/numerics.tile's reshapes computes it
 * (x a [16, 32] tile read in row-major order, as torch.reshape does). */
static inline void reshapes_want(const float *x, float out[3200])
{
    for (int k = 0; k < 512; k++) {
        out[k] = x[k];
        out[512 + k] = x[k] * 2.0f;
        out[1024 + k] = x[k];
        out[1536 + k] = x[k];
        out[2176 + k] = x[k];
    }
    for (int r = 0; r < 32; r++) {
        float m = x[r * 16];
        for (int c = 1; c < 16; c++)
            m = x[r * 16 + c] > m ? x[r * 16 + c] : m;
        out[2048 + r] = m;
        out[2080 + r] = x[3 * 32 + r];
    }
    for (int k = 0; k < 64; k++)
        out[2112 + k] = (float)(3 * k);
    for (int f = 0; f < 512; f++)
        out[2688 + f] = x[(255 - f / 2) * 2 + f % 2];
}

/* sigmoid's sweep for tests/gpu/numerics.tile's sigmoids: the special
 * values (+-inf, NaN, +-0, +-1e-30, +-88 and the edges of sigmoid's
 * subnormals, -87.3 .. -103.3) and |x| from 1e-30 to 120 in steps of
 * 2^(1/8), both signs. SIGMOID_ULPS is docs/language.md's bound. */
#define SIGMOID_N 1024
#define SIGMOID_ULPS 4.0
static inline int sigmoid_sweep(float x[SIGMOID_N])
{
    static const float sp[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 1e-30f, -1e-30f, 88.0f, -88.0f, 87.3f, -87.3f,
                               88.7f, -88.7f, 89.0f, -89.0f, 100.0f, -100.0f, 103.0f, -103.0f, 104.0f, -104.0f,
                               0.5f, -0.5f, 1.0f, -1.0f, 16.0f, -16.0f, 17.0f, -17.0f, 1e-8f, -1e-8f, 3e38f, -3e38f};
    int n = 0;
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
        x[n++] = sp[i];
    for (double a = 1e-30; a < 120.0 && n + 2 <= SIGMOID_N; a *= 1.0905077326652577) { /* 2^(1/8) */
        x[n++] = (float)a;
        x[n++] = (float)-a;
    }
    return n;
}

/* The distance of got from sigmoid(x) in units in the last place of the
 * f32 nearest the double reference (2^-149 among the subnormals); 0 for
 * equal specials (NaN and NaN), HUGE_VAL for a NaN on one side only. */
static inline double sigmoid_ulps(float x, float got)
{
    double want = 1.0 / (1.0 + exp(-(double)x));
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got) ? 0.0 : HUGE_VAL;
    int ex;
    ex = want == 0.0 ? -1000 : (frexp((double)(float)want, &ex), ex);
    double ulp = ldexp(1.0, (ex - 24 < -149 ? -149 : ex - 24));
    return fabs((double)got - want) / ulp;
}

/* The same of f64 against a long double reference (2^-1074 among the subnormals). */
static inline double sigmoid_ulps_f64(double x, double got)
{
    long double want = 1.0L / (1.0L + expl(-(long double)x));
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got) ? 0.0 : HUGE_VAL;
    int ex;
    ex = want == 0.0L ? -2000 : (frexp((double)want, &ex), ex);
    long double ulp = ldexpl(1.0L, (ex - 53 < -1074 ? -1074 : ex - 53));
    return (double)(fabsl((long double)got - want) / ulp);
}

#endif
