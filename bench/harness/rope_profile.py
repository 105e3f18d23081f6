"""examples/llm.tile's rope (bf16, one variant) or torch.compile's form of the
same RoPE, called a few times and nothing else: the process to run under
Nsight Compute, one side a process, e.g.

  ncu -k regex:rope --launch-skip 2 --launch-count 1 --section SpeedOfLight \
      python3 bench/harness/rope_profile.py --side tilec --variant 0
  ncu -k regex:triton --launch-skip 2 --launch-count 1 --section SpeedOfLight \
      python3 bench/harness/rope_profile.py --side compile

The shape is the harness's (bench.py w_llm_rope): q [tokens, heads, 128];
tilec reads cos and sin [tokens, 64], torch.compile HF's [tokens, 128].
TILEC_LIB: the library.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import tilec  # noqa: E402


def rot(q, cos, sin):
    q1, q2 = q[..., :64], q[..., 64:]
    return q * cos[:, None, :] + torch.cat([-q2, q1], -1) * sin[:, None, :]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--side", choices=("tilec", "compile"), required=True)
    ap.add_argument("--variant", type=int, default=0)
    ap.add_argument("--calls", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--heads", type=int, default=32)
    a = ap.parse_args()
    t, h = a.tokens, a.heads
    bf = torch.bfloat16
    ang = torch.arange(t, device="cuda", dtype=torch.float32)[:, None] * torch.rand(64, device="cuda")[None, :]
    q = torch.randn(t, h, 128, device="cuda").to(bf)
    cos, sin = ang.cos().to(bf), ang.sin().to(bf)
    cos2, sin2 = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
    if a.side == "tilec":
        kern = tilec.load("examples/llm.tile").kernel("rope__bf16", a.variant)
        out = torch.empty_like(q)
        for _ in range(a.calls):
            kern(q, cos, sin, out, t, h)
    else:
        f = torch.compile(rot)
        for _ in range(a.calls):
            out = f(q, cos2, sin2)
    torch.cuda.synchronize()
    err = (out.double() - rot(q.double(), cos2.double(), sin2.double())).abs().max().item()
    print(f"rope {a.side} v{a.variant} {t}x{h}x128: max error {err:.3g}", flush=True)


if __name__ == "__main__":
    main()
