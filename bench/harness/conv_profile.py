"""One variant of examples/conv2d.tile's conv2d_f16 on one ResNet-50 layer,
called a few times and nothing else: the process to run under Nsight Compute
(each call is one launch of the variant's kernel; on a 9.0 device its sm_90a
gather twin), e.g.

  ncu -k regex:conv2d --launch-skip 2 --launch-count 1 --section WarpStateStats \
      python3 bench/harness/conv_profile.py --layer 3,14,256,256,1 --variant 0

--layer R,H,C,K,STRIDE (N = 32, square, padding R // 2). TILEC_LIB: the library.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import tilec  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layer", required=True, help="R,H,C,K,STRIDE")
    ap.add_argument("--variant", type=int, default=0)
    ap.add_argument("--calls", type=int, default=4)
    ap.add_argument("--n", type=int, default=32)
    a = ap.parse_args()
    r, h, c, k, st = (int(x) for x in a.layer.split(","))
    n, pad = a.n, r // 2
    oh = (h + 2 * pad - r) // st + 1
    kern = tilec.load("examples/conv2d.tile").kernel("conv2d_f16", a.variant)
    xs = torch.randn(n, h, h, c, device="cuda").half()
    ws = (torch.randn(r, r, c, k, device="cuda") / (c * r * r) ** 0.5).half()
    y = torch.empty(n, oh, oh, k, device="cuda", dtype=torch.float16)
    for _ in range(a.calls):
        kern(xs, ws, y, n, h, h, c, k, r, r, oh, oh, st, pad)
    torch.cuda.synchronize()
    ref = torch.nn.functional.conv2d(xs.permute(0, 3, 1, 2).float(), ws.permute(3, 2, 0, 1).float(), None, st, pad)
    err = (y.permute(0, 3, 1, 2).float() - ref).abs().max().item()
    print(f"conv2d_f16 v{a.variant} {r}x{r} {h}x{h} C{c} K{k} s{st}: max error {err:.3g}", flush=True)


if __name__ == "__main__":
    main()
