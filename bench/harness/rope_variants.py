"""Every variant of examples/llm.tile's rope (bf16) and of
bench/harness/rope_forms.tile's rope_g (a program a token and a group of
its heads) timed alone at the benchmark's shape, q [8192, 32, 128], with
the device copy of q (torch's copy_ of the same bytes) as the floor: which
variant a lowering change moves, where bench.py shows the multi-kernel's
pick. The harness's loop (the L2 flushed before each call, CUDA events, the
median); each output checked against torch in f64 first. One JSON line a
kernel variant.

  python3 bench/harness/rope_variants.py --tag T [--reps 200] [--no-forms]   (TILEC_LIB: the library)
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)
import tilec  # noqa: E402
from conv_variants import timed  # noqa: E402  (the harness's loop)


def rope_inputs(t, h):
    """q [t, h, 128] bf16, cos and sin [t, 64] (Llama 3's base 500000) and
    the rotated q in float64: the benchmark's inputs and its check."""
    bf = torch.bfloat16
    pos = torch.arange(t, device="cuda", dtype=torch.float32)[:, None]
    inv = 1.0 / (500000.0 ** (torch.arange(0, 128, 2, device="cuda", dtype=torch.float32) / 128))
    ang = pos * inv[None, :]
    q = torch.randn(t, h, 128, device="cuda").to(bf)
    cos, sin = ang.cos().to(bf), ang.sin().to(bf)
    qd, cd, sd = q.double(), cos.double()[:, None, :], sin.double()[:, None, :]
    want = torch.cat([qd[..., :64] * cd - qd[..., 64:] * sd, qd[..., 64:] * cd + qd[..., :64] * sd], -1)
    return q, cos, sin, want


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", default="run")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--no-forms", action="store_true", help="llm.tile's rope alone")
    a = ap.parse_args()
    t, h = a.tokens, a.heads
    flush = torch.empty(512 << 18, dtype=torch.int32, device="cuda")
    q, cos, sin, want = rope_inputs(t, h)
    out = torch.empty_like(q)

    def line(kernel, v, r, err):
        print(json.dumps({"tag": a.tag, "shape": f"{t}x{h}x128", "kernel": kernel, "variant": v,
                          "median_ms": round(r[0], 5), "p20_ms": round(r[1], 5), "p80_ms": round(r[2], 5),
                          "max_err": err}), flush=True)

    cp = torch.empty_like(q)
    line("copy_", None, timed(lambda: cp.copy_(q), flush, a.reps), None)
    sets = [(os.path.join(HERE, "..", "..", "examples", "llm.tile"), "rope__bf16", 4)]
    if not a.no_forms:
        sets.append((os.path.join(HERE, "rope_forms.tile"), "rope_g__bf16", 5))
    for path, name, nv in sets:
        mod = tilec.load(path)
        for v in range(nv):
            kern = mod.kernel(name, v)
            out.fill_(float("nan"))
            kern(q, cos, sin, out, t, h)
            torch.cuda.synchronize()
            err = (out.double() - want).abs().max().item()
            line(name, v, timed(lambda: kern(q, cos, sin, out, t, h), flush, a.reps), round(err, 5))


if __name__ == "__main__":
    main()
