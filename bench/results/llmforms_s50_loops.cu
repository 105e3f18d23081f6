// Hand-written equivalents of tests/llm_forms/swiglu_persistent's loop (session 50, helper lang50;
// bench/results/llmforms_s50.md): `once` one chunk a program, `plain` the grid-stride loop, `piped`
// the same loop with the next chunk's loads issued before this chunk's stores (the loop variable
// clamped to the last chunk). Registers only, not run:
//   nvcc -arch=sm_90 -cubin -o /tmp/x.cubin llmforms_s50_loops.cu --resource-usage [-DACT_FIRST]
// silu chunk by chunk next to its product: once 38, plain 40, piped 48; with -DACT_FIRST (silu over
// the whole 16-element tile first, as the kernel's lets say): 42, 43, 54.
#include <cuda_bf16.h>
#define BLOCK 4096
#define PROGS 1056
struct chunk { uint4 g[2], u[2]; };
static __device__ __forceinline__ void ld(chunk &c, const __nv_bfloat16 *g, const __nv_bfloat16 *u, int o, int n) {
  #pragma unroll
  for (int q = 0; q < 2; q++) {
    int i = o + ((q * 256 + threadIdx.x) * 8);
    const __nv_bfloat16 *pg = g + i, *pu = u + i;
    __nv_bfloat16 *a = (__nv_bfloat16 *)&c.g[q];
    if (i + 7 < n && (((unsigned long long)pg) & 15) == 0) { c.g[q] = *(const uint4 *)pg; }
    else {
      #pragma unroll
      for (int k = 0; k < 8; k++) { a[k] = i + k < n ? pg[k] : __float2bfloat16_rn(0.f); } }
  }
  #pragma unroll
  for (int q = 0; q < 2; q++) {
    int i = o + ((q * 256 + threadIdx.x) * 8);
    const __nv_bfloat16 *pu = u + i;
    __nv_bfloat16 *b = (__nv_bfloat16 *)&c.u[q];
    if (i + 7 < n && (((unsigned long long)pu) & 15) == 0) { c.u[q] = *(const uint4 *)pu; }
    else {
      #pragma unroll
      for (int k = 0; k < 8; k++) { b[k] = i + k < n ? pu[k] : __float2bfloat16_rn(0.f); } }
  }
}
#ifdef ACT_FIRST
static __device__ __forceinline__ void cs(const chunk &c, __nv_bfloat16 *out, int o, int n) {
  __nv_bfloat16 act[16];
  const __nv_bfloat16 *a = (const __nv_bfloat16 *)&c.g[0];
  #pragma unroll
  for (int k = 0; k < 16; k++) { float x = __bfloat162float(a[k]); act[k] = __float2bfloat16_rn(x / (1.0f + expf(-x))); }
  #pragma unroll
  for (int q = 0; q < 2; q++) {
    int i = o + ((q * 256 + threadIdx.x) * 8);
    uint4 r; const __nv_bfloat16 *b = (const __nv_bfloat16 *)&c.u[q]; __nv_bfloat16 *v = (__nv_bfloat16 *)&r;
    #pragma unroll
    for (int k = 0; k < 8; k++) { v[k] = __float2bfloat16_rn(__bfloat162float(act[q * 8 + k]) * __bfloat162float(b[k])); }
    __nv_bfloat16 *p = out + i;
    if (i + 7 < n && ((unsigned long long)p & 15) == 0) *(uint4 *)p = r;
    else {
      #pragma unroll
      for (int k = 0; k < 8; k++) if (i + k < n) p[k] = v[k]; }
  }
}
#else
static __device__ __forceinline__ void cs(const chunk &c, __nv_bfloat16 *out, int o, int n) {
  #pragma unroll
  for (int q = 0; q < 2; q++) {
    int i = o + ((q * 256 + threadIdx.x) * 8);
    uint4 r; const __nv_bfloat16 *a = (const __nv_bfloat16 *)&c.g[q], *b = (const __nv_bfloat16 *)&c.u[q]; __nv_bfloat16 *v = (__nv_bfloat16 *)&r;
    #pragma unroll
    for (int k = 0; k < 8; k++) { float x = __bfloat162float(a[k]); __nv_bfloat16 s = __float2bfloat16_rn(x / (1.0f + expf(-x))); v[k] = __float2bfloat16_rn(__bfloat162float(s) * __bfloat162float(b[k])); }
    __nv_bfloat16 *p = out + i;
    if (i + 7 < n && ((unsigned long long)p & 15) == 0) *(uint4 *)p = r;
    else {
      #pragma unroll
      for (int k = 0; k < 8; k++) if (i + k < n) p[k] = v[k]; }
  }
}
#endif
extern "C" __global__ void __launch_bounds__(256) plain(const __nv_bfloat16 *g, const __nv_bfloat16 *u, __nv_bfloat16 *out, int n) {
  for (int o = blockIdx.x * BLOCK; o < n; o += PROGS * BLOCK) { chunk c; ld(c, g, u, o, n); cs(c, out, o, n); }
}
extern "C" __global__ void __launch_bounds__(256) piped(const __nv_bfloat16 *g, const __nv_bfloat16 *u, __nv_bfloat16 *out, int n) {
  int o = blockIdx.x * BLOCK;
  if (o >= n) return;
  chunk c; ld(c, g, u, o, n);
  for (;;) {
    int on = n - o > PROGS * BLOCK ? o + PROGS * BLOCK : o;
    chunk nx; ld(nx, g, u, on, n);
    cs(c, out, o, n);
    if (on == o) break;
    o = on; c = nx;
  }
}
extern "C" __global__ void __launch_bounds__(256) once(const __nv_bfloat16 *g, const __nv_bfloat16 *u, __nv_bfloat16 *out, int n) {
  int o = blockIdx.x * BLOCK; if (o < n) { chunk c; ld(c, g, u, o, n); cs(c, out, o, n); }
}
