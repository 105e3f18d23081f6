"""Every variant of examples/conv2d.tile's conv2d_f16 timed alone on a few of
the benchmark's ResNet-50 layers (on a 9.0 device: each as its sm_90a gather
twin): which variants a change to lower/wggather.c moves, where bench.py only
shows the multi-kernel's best. The harness's loop (the L2 flushed before each
call, CUDA events, the median); fewer repetitions. One JSON line a variant.

  python3 bench/harness/conv_variants.py --tag T [--reps 100]   (TILEC_LIB: the library)
"""
import argparse
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import tilec  # noqa: E402

LAYERS = ((32, 56, 64, 64, 3, 1), (32, 14, 256, 256, 3, 1), (32, 56, 64, 256, 1, 1), (32, 28, 128, 128, 3, 1))


def timed(call, flush, reps):
    """The harness's loop over call: five warm-up calls, then reps calls each
    after a clear of flush, timed by CUDA events: (median, p20, p80) in ms."""
    for _ in range(5):
        call()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for s, e in ev:
        flush.zero_()
        s.record()
        call()
        e.record()
    torch.cuda.synchronize()
    ms = sorted(s.elapsed_time(e) for s, e in ev)
    return statistics.median(ms), ms[len(ms) // 5], ms[4 * len(ms) // 5]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", default="run")
    ap.add_argument("--reps", type=int, default=100)
    a = ap.parse_args()
    mod = tilec.load("examples/conv2d.tile")
    flush = torch.empty(512 << 18, dtype=torch.int32, device="cuda")
    for n, h, c, k, r, st in LAYERS:
        pad = r // 2
        oh = (h + 2 * pad - r) // st + 1
        xs = torch.randn(n, h, h, c, device="cuda").half()
        ws = (torch.randn(r, r, c, k, device="cuda") / (c * r * r) ** 0.5).half()
        y = torch.empty(n, oh, oh, k, device="cuda", dtype=torch.float16)
        for v in range(8):
            kern = mod.kernel("conv2d_f16", v)

            def call():
                kern(xs, ws, y, n, h, h, c, k, r, r, oh, oh, st, pad)
            ms = timed(call, flush, a.reps)[0]
            print(json.dumps({"tag": a.tag, "layer": f"{r}x{r} {h}x{h} C{c} K{k} N{n} s{st}", "variant": v,
                              "median_us": round(ms * 1e3, 2)}), flush=True)


if __name__ == "__main__":
    main()
