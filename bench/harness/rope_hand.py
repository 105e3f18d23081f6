"""RoPE's last percent, tried by hand before (or beside) the lowering: forms
of examples/llm.tile's rope (bf16, variant 2: 8 warps, a token a program)
made from the CUDA tilec emits for it by text edits, compiled by nvcc into
one cubin on the CPU and timed on the device through the driver API
(ctypes), in the same process as tilec's own variants (the runtime's
launch), the device copy of q and torch.compile's HF form.

  python3 bench/harness/rope_hand.py gen --base TILEC --new TILEC [--cubin F]   (CPU, nvcc: writes F.cu and F)
  python3 bench/harness/rope_hand.py time --cubin F --tag T [--reps 200] [--rounds 3]

The text edits match v2's CUDA as 6387b16 emits it (session 47's base; since ad813b4 the
token and head group are pid(0) / (32 / H) and pid(0) % (32 / H), which r_h16 and r_h8's
edits do not find): give --base a tilec of that tree.

The forms (kernel names in the cubin), from the --base tilec's v2 (main's):
  r_base       the emitted v2 as it is (the launch path's control)
  r_unial      each access's alignment test on its base pointer (kernel-uniform;
               every chunk's offset is a multiple of 8 elements: heads * 128, h * 128, d)
  r_noal       no alignment test: 16-byte alignment assumed (what a launch-time
               specialization on aligned pointers, Triton's, would emit)
  r_h16, r_h8  16 or 8 heads a program (4 or 2 warps, the same 8 elements a thread)
               over a token-major 1-D grid (tokens * 2 or * 4 programs)
  r_h16_noal   r_h16 without the alignment test
and from the --new tilec's v2 (the branch's):
  r_new        its v2 as it is (session 47: cos and sin by lanes 0-7, __shfl_sync)
  r_new_noal   r_new without the alignment test
Each output is checked against float64 first. One JSON line a kernel."""
import argparse
import ctypes
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")


def _ren(src, name):
    return src.replace("rope__bf16_v2", name)


def _uniform_align(src):
    out, cur = [], None
    for line in src.split("\n"):
        m = re.search(r"tl_p = \(*\(*(v_\w+)", line)
        if m:
            cur = m.group(1)
        out.append(line.replace("((unsigned long long)tl_p & 15) == 0", f"((unsigned long long){cur} & 15) == 0"))
    return "\n".join(out)


def _no_align(src):
    return src.replace(" && ((unsigned long long)tl_p & 15) == 0", "").replace("((unsigned long long)tl_p & 15) == 0", "true")


def _group(src, h, threads):
    g = 32 // h
    s = src.replace("__launch_bounds__(256)", f"__launch_bounds__({threads})")
    s = s.replace("constexpr int v_warps = 8;", f"constexpr int v_warps = {threads // 32};\n"
                  f"    const int tl_tok = blockIdx.x / {g}, tl_h0 = (blockIdx.x % {g}) * {h};")
    s = s.replace("* 256 + tl_tid", f"* {threads} + tl_tid")
    s = s.replace("const int tl_i0 = (tl_l >> 6) & 31,", f"const int tl_i0 = tl_h0 + ((tl_l >> 6) & {h - 1}),")
    return s.replace("((int)blockIdx.x)", "tl_tok")


# name -> (programs a token, threads)
FORMS = {"r_base": (1, 256), "r_unial": (1, 256), "r_noal": (1, 256), "r_h16": (2, 128), "r_h8": (4, 64),
         "r_h16_noal": (2, 128), "r_new": (1, 256), "r_new_noal": (1, 256)}


def _v2(tilec_bin):
    """The prelude and rope__bf16_v2 of examples/llm.tile as tilec_bin emits them."""
    cuda = subprocess.run([tilec_bin, "--emit", "cuda", "examples/llm.tile"], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout
    first = cuda.index('extern "C" __global__')
    k = cuda.index('extern "C" __global__ void __launch_bounds__(256) rope__bf16_v2(')
    return cuda[:cuda.rindex("\n/*", 0, first)], cuda[k:cuda.index("\n}\n", k) + 3]


def gen(a):
    prelude, k = _v2(a.base)
    _, kn = _v2(a.new)
    forms = {"r_base": k, "r_unial": _uniform_align(k), "r_noal": _no_align(k), "r_h16": _group(k, 16, 128),
             "r_h8": _group(k, 8, 64), "r_h16_noal": _group(_no_align(k), 16, 128), "r_new": kn, "r_new_noal": _no_align(kn)}
    with open(a.cubin + ".cu", "w") as f:
        f.write(prelude + "\n")
        for n, s in forms.items():
            f.write("\n" + _ren(s, n))
    subprocess.run(["nvcc", "-w", "-cubin", "-arch=sm_90a", "-O3", "-o", a.cubin, a.cubin + ".cu"], check=True)
    print(f"wrote {a.cubin} ({', '.join(forms)})")


def time_all(a):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "python"))
    sys.path.insert(0, HERE)
    import tilec
    from conv_variants import timed
    from rope_variants import rope_inputs
    t, h = a.tokens, a.heads
    flush = torch.empty(512 << 18, dtype=torch.int32, device="cuda")
    q, cos, sin, want = rope_inputs(t, h)
    out = torch.empty_like(q)

    cu = ctypes.CDLL("libcuda.so.1")

    def ck(r, what):
        if r != 0:
            raise RuntimeError(f"{what}: CUresult {r}")
    mod = ctypes.c_void_p()
    data = open(a.cubin, "rb").read()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(data)), "cuModuleLoadData")
    vals = [ctypes.c_uint64(q.data_ptr()), ctypes.c_uint64(cos.data_ptr()), ctypes.c_uint64(sin.data_ptr()),
            ctypes.c_uint64(out.data_ptr()), ctypes.c_int(t), ctypes.c_int(h)]
    argv = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in vals])

    def launcher(name):
        fn = ctypes.c_void_p()
        ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), name)
        per, threads = FORMS[name]

        def go():
            ck(cu.cuLaunchKernel(fn, t * per, 1, 1, threads, 1, 1, 0,
                                 ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), argv, None), name)
        return go

    cos2, sin2 = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)

    def rot(q, c, s):
        return q * c[:, None, :] + torch.cat([-q[..., 64:], q[..., :64]], -1) * s[:, None, :]
    cands = {}
    cp = torch.empty_like(q)
    cands["copy_"] = lambda: cp.copy_(q)
    mod_t = tilec.load(os.path.join(ROOT, "examples", "llm.tile"))
    for v in range(3):
        k = mod_t.kernel("rope__bf16", v)
        cands[f"tilec v{v}"] = (lambda k: lambda: k(q, cos, sin, out, t, h))(k)
    for n in FORMS:
        try:
            cands[n] = launcher(n)
        except RuntimeError as e:
            print(json.dumps({"tag": a.tag, "kernel": n, "error": str(e)}), flush=True)
    if not a.no_compile:
        comp = torch.compile(rot)
        cands["torch.compile"] = lambda: comp(q, cos2, sin2)
    errs = {}
    for n, f in list(cands.items()):
        if n == "copy_":
            continue
        try:
            out.fill_(float("nan"))
            r = f()
            torch.cuda.synchronize()
            got = r if n == "torch.compile" else out
            errs[n] = round((got.double() - want).abs().max().item(), 5)
        except RuntimeError as e:
            print(json.dumps({"tag": a.tag, "kernel": n, "error": str(e)}), flush=True)
            del cands[n]
    res = {n: [] for n in cands}
    for _ in range(a.rounds):  # rounds, each kernel in turn: drift spread over all
        for n, f in cands.items():
            res[n].append(timed(f, flush, a.reps))
    for n in cands:
        med = sorted(r[0] for r in res[n])[len(res[n]) // 2]
        print(json.dumps({"tag": a.tag, "shape": f"{t}x{h}x128", "kernel": n, "median_ms": round(med, 5),
                          "rounds_ms": [round(r[0], 5) for r in res[n]],
                          "p20_ms": round(min(r[1] for r in res[n]), 5), "p80_ms": round(max(r[2] for r in res[n]), 5),
                          "max_err": errs.get(n)}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("gen", "time"))
    ap.add_argument("--cubin", default="/tmp/rope_hand.cubin")
    ap.add_argument("--base", default=os.path.join(ROOT, "build", "bin", "tilec"), help="gen: the tilec of the base forms")
    ap.add_argument("--new", default=os.path.join(ROOT, "build", "bin", "tilec"), help="gen: the tilec of r_new")
    ap.add_argument("--tag", default="run")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--no-compile", action="store_true")
    a = ap.parse_args()
    return gen(a) if a.what == "gen" else time_all(a)


if __name__ == "__main__":
    sys.exit(main())
