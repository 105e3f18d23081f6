"""Which cuDNN algorithm F.conv2d runs for bench.py's f32 NCHW convolutions
(family conv_f32, tf32 off), with cudnn.benchmark off (cuDNN's heuristic
choice) and on (its timed choice): the kernels of one call by
torch.profiler, and the median of 20 calls (L2 not flushed; bench.py
times the benchmark-on side its own way). Prints one block per shape and
setting; with no CUDA device it prints one SKIP line.

    python3 bench/harness/conv_f32_algo.py
"""
import sys

import torch
import torch.nn.functional as F

SHAPES = [(16, 1024, 16, 128), (32, 56, 64, 64), (32, 28, 128, 128)]  # N, H = W, C, K; 3x3, pad 1


def main():
    if not torch.cuda.is_available():
        print("SKIP: conv_f32_algo: no CUDA device")
        return 0
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    for n, h, c, k in SHAPES:
        x = torch.randn(n, c, h, h, device="cuda")
        w = torch.randn(k, c, 3, 3, device="cuda")
        flop = 2.0 * n * h * h * k * c * 9
        for bench in (False, True):
            torch.backends.cudnn.benchmark = bench
            for _ in range(3):
                F.conv2d(x, w, None, 1, 1)
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                F.conv2d(x, w, None, 1, 1)
                torch.cuda.synchronize()
            kernels = sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
            ts = []
            for _ in range(20):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                F.conv2d(x, w, None, 1, 1)
                e.record()
                e.synchronize()
                ts.append(s.elapsed_time(e))
            ms = sorted(ts)[len(ts) // 2]
            print(f"N{n} {h}x{h} C{c} K{k} benchmark={'on' if bench else 'off'}: {ms:.3f} ms "
                  f"({flop / ms / 1e9:.1f} TFLOP/s of direct-convolution work)", flush=True)
            for name in kernels:
                print(f"    {name[:160]}", flush=True)
        del x, w
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
