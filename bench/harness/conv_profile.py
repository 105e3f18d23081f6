"""Variants of examples/conv2d.tile's kernels on ResNet-50 layers, called a
few times each and nothing else: the process to run under Nsight Compute
(each call is one launch of the variant's kernel; on a 9.0 device its
sm_90a gather twin, for the rows kernels on the persistent grid where the
tiles are more than 2 an SM), e.g.

  ncu -k regex:conv2d --launch-skip 2 --launch-count 1 --section WarpStateStats \
      python3 bench/harness/conv_profile.py --layer 3,14,256,256,1 --variant 0
  ncu -k regex:rows --clock-control none --section SpeedOfLight ... \
      python3 bench/harness/conv_profile.py --kernel conv2d_f16_rows --calls 1 \
      --run 3,56,64,64,1:2 --run 1,56,64,256,1:2 --run conv2d_nhwc_rows@1,56,64,256,1:5

--layer R,H,C,K,STRIDE (N = 32, square, padding R // 2) with --variant,
or --run [KERNEL@]R,H,C,K,STRIDE:VARIANT[:N] (repeatable: the runs in
order, each --calls launches; KERNEL and N default to --kernel and --n).
Kernels: conv2d_f16 (the default --kernel), conv2d_nhwc, conv2d_f16_rows
or conv2d_nhwc_rows (the fused ones add a bias and relu).
Prints each run's relative L2 error against an f32 reference on the same
f16 operands. TILEC_LIB: the library.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import tilec  # noqa: E402


def run(mod, name, layer, variant, calls, n):
    r, h, c, k, st = (int(x) for x in layer.split(","))
    pad = r // 2
    oh = (h + 2 * pad - r) // st + 1
    fused = name in ("conv2d_nhwc", "conv2d_nhwc_rows")
    kern = mod.kernel(name, variant)
    xs = torch.randn(n, h, h, c, device="cuda").half()
    ws = (torch.randn(r, r, c, k, device="cuda") / (c * r * r) ** 0.5).half()
    bs = torch.randn(k, device="cuda").half()
    y = torch.empty(n, oh, oh, k, device="cuda", dtype=torch.float16)
    for _ in range(calls):
        if fused:
            kern(xs, ws, bs, y, n, h, h, c, k, r, r, oh, oh, st, pad)
        else:
            kern(xs, ws, y, n, h, h, c, k, r, r, oh, oh, st, pad)
    torch.cuda.synchronize()
    ref = torch.nn.functional.conv2d(xs.permute(0, 3, 1, 2).float(), ws.permute(3, 2, 0, 1).float(),
                                     bs.float() if fused else None, st, pad)
    if fused:
        ref = torch.relu(ref)
    got = y.permute(0, 3, 1, 2).float()
    err = ((got - ref).norm() / ref.norm()).item()
    print(f"{name} v{variant} {r}x{r} {h}x{h} C{c} K{k} s{st} N{n}: relative L2 error {err:.3g}", flush=True)
    return err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", default="conv2d_f16")
    ap.add_argument("--layer", help="R,H,C,K,STRIDE")
    ap.add_argument("--variant", type=int, default=0)
    ap.add_argument("--run", action="append", default=[], help="[KERNEL@]R,H,C,K,STRIDE:VARIANT[:N] (repeatable)")
    ap.add_argument("--calls", type=int, default=4)
    ap.add_argument("--n", type=int, default=32)
    a = ap.parse_args()
    runs = [(a.kernel, a.layer, a.variant, a.n)] if a.layer else []
    for x in a.run:
        name, spec = x.split("@") if "@" in x else (a.kernel, x)
        f = spec.split(":")
        runs.append((name, f[0], int(f[1]), int(f[2]) if len(f) > 2 else a.n))
    if not runs:
        ap.error("--layer or --run")
    mod = tilec.load("examples/conv2d.tile")
    bad = [r for r in runs if run(mod, r[0], r[1], r[2], a.calls, r[3]) > 2e-3]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
