/* prelude.c: the fixed CUDA text of every translation unit: the
 * half-precision headers (only when used) and the device helpers the
 * lowered code calls (NaN-propagating max/min, exp2, ldmatrix, cp.async,
 * mma.sync). */
#include <stdlib.h>
#include <string.h>

#include "lower/lower_internal.h"
#include "lower/marker.h"

/* Half-precision headers cost NVRTC a noticeable part of a compile: only
 * a translation unit that uses f16 or bf16 includes them. */
const char lower_half_headers[] = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n";

int lower_needs_half(const char *src) { return strstr(src, "__half") || strstr(src, "bfloat16"); }

/* What in a lowered body needs a GPU newer than the oldest NVRTC target
 * (sm_75): the prelude's helpers and the instructions the lowering writes
 * inline. A prelude helper becomes PTX only where the body calls it, so
 * the body alone decides. ldmatrix, bf16 and f16 arithmetic and atomics
 * compile for sm_75 (cuda_bf16.h emulates what sm_75 lacks). A new
 * instruction or helper of sm_80 or later belongs in this table. */
static const struct sm_need {
    const char *text; /* as the body spells a use */
    uint32_t sm;
    const char *why;
} sm_needs[] = {
    {"tl_cp16(", 80, "copies global to shared memory with cp.async"},
    {"cp.async.", 80, "copies global to shared memory with cp.async"},
    {"tl_mma_f16(", 80, "multiplies f16 on tensor cores with mma.sync m16n8k16"},
    {"tl_mma_bf16(", 80, "multiplies bf16 on tensor cores with mma.sync m16n8k16"},
    {".tf32", 80, "multiplies on tensor cores in tf32 (mma.sync m16n8k8 .tf32)"},
};

void lower_min_sm(const char *body, const char *file, tilec_kernel_code *out)
{
    strbuf mark;
    sb_init(&mark);
    lower_loc_marker(&mark, file);
    const char *m = mark.failed ? NULL : sb_str(&mark);
    size_t mlen = m ? strlen(m) : 0;
    uint32_t line = 0;
    for (const char *p = body; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        const char *q = p;
        while (*q == ' ')
            q++;
        if (m && !strncmp(q, m, mlen)) {
            line = (uint32_t)strtoul(q + mlen, NULL, 10);
        } else {
            for (size_t i = 0; i < sizeof sm_needs / sizeof sm_needs[0]; i++) {
                const char *hit = strstr(q, sm_needs[i].text);
                if (hit && hit < p + n && sm_needs[i].sm > out->min_sm) {
                    out->min_sm = sm_needs[i].sm;
                    out->min_sm_why = sm_needs[i].why;
                    out->min_sm_line = line;
                }
            }
        }
        p = eol ? eol + 1 : NULL;
    }
    sb_free(&mark);
}

const char lower_prelude[] =
    "\n"
    "/* NaN-propagating max/min, as torch.maximum/minimum */\n"
    "#if __CUDA_ARCH__ >= 800 /* one FMNMX.NAN each */\n"
    "static __device__ __forceinline__ float tl_max(float a, float b) { float r; asm(\"max.NaN.f32 %0, %1, %2;\" : \"=f\"(r) : \"f\"(a), \"f\"(b)); return r; }\n"
    "static __device__ __forceinline__ float tl_min(float a, float b) { float r; asm(\"min.NaN.f32 %0, %1, %2;\" : \"=f\"(r) : \"f\"(a), \"f\"(b)); return r; }\n"
    "#else\n"
    "static __device__ __forceinline__ float tl_max(float a, float b) { return (a > b || a != a) ? a : b; }\n"
    "static __device__ __forceinline__ float tl_min(float a, float b) { return (a < b || a != a) ? a : b; }\n"
    "#endif\n"
    "/* exp2 of f32: the special-function unit's ex2 alone (results under 2^-126 flush to zero) */\n"
    "#ifdef __CUDA_ARCH__\n"
    "static __device__ __forceinline__ float tl_exp2(float x) { float r; asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(r) : \"f\"(x)); return r; }\n"
    "#else /* this CUDA C built by a host compiler (tests/host_cuda.h) */\n"
    "static __device__ __forceinline__ float tl_exp2(float x) { return exp2f(x); }\n"
    "#endif\n"
    "/* sigmoid(x) = 1 / (1 + e^-|x|), times e^-|x| for x < 0: e^-|x| never overflows, so it is\n"
    " * exact in form down to sigmoid's subnormals; 1 + e in [1, 2] takes the special-function\n"
    " * unit's reciprocal (MUFU.RCP) instead of an IEEE division's slow path (docs/language.md: the\n"
    " * bound). sigmoid(-inf) = 0, sigmoid(+inf) = 1, NaN stays NaN. */\n"
    "static __device__ __forceinline__ float tl_sigmoid(float x)\n"
    "{\n"
    "    float e = expf(-fabsf(x)), d = 1.0f + e, r;\n"
    "#ifdef __CUDA_ARCH__\n"
    "    asm(\"rcp.approx.ftz.f32 %0, %1;\" : \"=f\"(r) : \"f\"(d));\n"
    "#else /* tests/test_numerics.c runs the CUDA C on the host */\n"
    "    r = 1.0f / d;\n"
    "#endif\n"
    "    return x >= 0.0f ? r : e * r;\n"
    "}\n"
    "static __device__ __forceinline__ double tl_sigmoid(double x)\n"
    "{\n"
    "    double e = exp(-fabs(x)), r = 1.0 / (1.0 + e);\n"
    "    return x >= 0.0 ? r : e * r;\n"
    "}\n"
    "static __device__ __forceinline__ double tl_max(double a, double b) { return (a > b || a != a) ? a : b; }\n"
    "static __device__ __forceinline__ double tl_min(double a, double b) { return (a < b || a != a) ? a : b; }\n"
    "template <class T> static __device__ __forceinline__ T tl_max(T a, T b) { return a > b ? a : b; }\n"
    "template <class T> static __device__ __forceinline__ T tl_min(T a, T b) { return a < b ? a : b; }\n"
    "\n"
    "/* f32 atomic adds of 2 and 4 neighbours at an address aligned to them: one\n"
    " * vector atomic in global memory on sm_90 (RED.E.ADD.F32x4), one each before */\n"
    "static __device__ __forceinline__ void tl_atomic_add2(float *p, float a, float b)\n"
    "{\n"
    "#if __CUDA_ARCH__ >= 900\n"
    "    atomicAdd((float2 *)p, make_float2(a, b));\n"
    "#else\n"
    "    atomicAdd(p, a);\n"
    "    atomicAdd(p + 1, b);\n"
    "#endif\n"
    "}\n"
    "static __device__ __forceinline__ void tl_atomic_add4(float *p, float a, float b, float c, float d)\n"
    "{\n"
    "#if __CUDA_ARCH__ >= 900\n"
    "    atomicAdd((float4 *)p, make_float4(a, b, c, d));\n"
    "#else\n"
    "    atomicAdd(p, a);\n"
    "    atomicAdd(p + 1, b);\n"
    "    atomicAdd(p + 2, c);\n"
    "    atomicAdd(p + 3, d);\n"
    "#endif\n"
    "}\n"
    "\n"
    "/* tensor-core pieces: ldmatrix from shared memory, mma.sync m16n8k16 */\n"
    "static __device__ __forceinline__ void tl_ldsm_x4(unsigned r[4], const void *p)\n"
    "{\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n"
    "                 : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));\n"
    "}\n"
    "static __device__ __forceinline__ void tl_ldsm_x4_t(unsigned b0[2], unsigned b1[2], const void *p)\n"
    "{\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n"
    "                 : \"=r\"(b0[0]), \"=r\"(b0[1]), \"=r\"(b1[0]), \"=r\"(b1[1]) : \"r\"(a));\n"
    "}\n"
    "static __device__ __forceinline__ void tl_ldsm_x4_nt(unsigned b0[2], unsigned b1[2], const void *p)\n"
    "{\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n"
    "                 : \"=r\"(b0[0]), \"=r\"(b0[1]), \"=r\"(b1[0]), \"=r\"(b1[1]) : \"r\"(a));\n"
    "}\n"
    "/* cp.async: 16 bytes global to shared, src_bytes 0 fills zeros */\n"
    "static __device__ __forceinline__ void tl_cp16(void *dst, const void *src, int src_bytes)\n"
    "{\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(dst);\n"
    "    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" :: \"r\"(a), \"l\"(src), \"r\"(src_bytes));\n"
    "}\n"
    "static __device__ __forceinline__ void tl_cp_commit() { asm volatile(\"cp.async.commit_group;\\n\" ::); }\n"
    "template <int N> static __device__ __forceinline__ void tl_cp_wait() { asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(N)); }\n"
    "static __device__ __forceinline__ void tl_mma_f16(float *c, const unsigned a[4], const unsigned b[2])\n"
    "{\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n"
    "                 : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "}\n"
    "static __device__ __forceinline__ void tl_mma_bf16(float *c, const unsigned a[4], const unsigned b[2])\n"
    "{\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n"
    "                 : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "}\n";
