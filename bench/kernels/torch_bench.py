"""torch_bench.py: the same workloads as bench_kernels.c through
torch.compile, and a device-to-device copy as the bandwidth floor, timed the
same way (device events, warm-up, median of N, rotating input sets larger
than L2). Writes one JSON object per line."""
import json
import statistics
import sys

import torch

ITERS = 200


def rotating_sets(make, nbytes):
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    n = max(2, min(8, (3 * l2) // max(nbytes, 1) + 1))
    return [make() for _ in range(n)]


def time_fn(fn, sets):
    for i in range(10):
        fn(*sets[i % len(sets)])
    torch.cuda.synchronize()
    times = []
    for i in range(ITERS):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        args = sets[i % len(sets)]
        s.record()
        fn(*args)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def main(path):
    dev = "cuda"
    torch.manual_seed(0)
    out = open(path, "w")

    def same_size_copy(nbytes):
        """a device copy moving the same bytes (half read, half written)"""
        n = max(1, nbytes // 8)
        sets = rotating_sets(lambda: (torch.randn(n, device=dev), torch.empty(n, device=dev)), 8 * n)
        return time_fn(lambda a, b: b.copy_(a), sets)

    def emit(name, ms, nbytes, flops=0.0, note=""):
        rec = {"workload": name, "ms": ms, "bytes": nbytes, "flops": flops, "note": note}
        if not flops and not name.startswith("copy"):
            rec["copy_ms"] = same_size_copy(nbytes)
        out.write(json.dumps(rec) + "\n")
        out.flush()
        print(f"{name:24s} torch.compile {ms:9.4f} ms  {nbytes / ms / 1e6:8.1f} GB/s  {flops / ms / 1e9:8.1f} TFLOP/s")

    # the bandwidth floor: a large device-to-device copy (bytes read + written)
    n = 1 << 28
    src, dst = torch.randn(n, device=dev), torch.empty(n, device=dev)
    ms = time_fn(lambda a, b: b.copy_(a), [(src, dst)])
    emit("copy 1 GiB", ms, 2 * 4 * n, note="device-to-device copy")
    del src, dst

    def add_relu(x, y):
        return torch.relu(x + y)

    def softmax(x):
        return torch.softmax(x, dim=-1)

    def layernorm(x, w, b):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5)

    def matmul_f16(a, b):
        return (a @ b).float()

    def matmul_f32(a, b):
        return a @ b

    n = 1 << 26
    f = torch.compile(add_relu)
    sets = rotating_sets(lambda: (torch.randn(n, device=dev), torch.randn(n, device=dev)), 12 * n)
    emit("add_relu 2^26", time_fn(f, sets), 12 * n)

    for r, c in [(8192, 1024), (8192, 4096), (2048, 16384)]:
        torch._dynamo.reset()
        f = torch.compile(softmax)
        sets = rotating_sets(lambda: (torch.randn(r, c, device=dev),), 8 * r * c)
        emit(f"softmax {r}x{c}", time_fn(f, sets), 8 * r * c)

    r, c = 8192, 4096
    torch._dynamo.reset()
    f = torch.compile(layernorm)
    sets = rotating_sets(lambda: (torch.randn(r, c, device=dev), torch.randn(c, device=dev), torch.randn(c, device=dev)),
                         8 * r * c)
    emit(f"layernorm {r}x{c}", time_fn(f, sets), 8 * r * c + 8 * c)

    for s in (1024, 4096):
        torch._dynamo.reset()
        f = torch.compile(matmul_f16)
        nb = 2 * 2 * s * s + 4 * s * s
        sets = rotating_sets(lambda: (torch.randn(s, s, device=dev).half(), torch.randn(s, s, device=dev).half()), nb)
        emit(f"matmul f16 {s}", time_fn(f, sets), nb, 2.0 * s ** 3, note="(a @ b).float(): f16 GEMM then a cast")

    s = 4096
    torch._dynamo.reset()
    f = torch.compile(matmul_f32)
    sets = rotating_sets(lambda: (torch.randn(s, s, device=dev), torch.randn(s, s, device=dev)), 12 * s * s)
    emit(f"matmul f32 {s}", time_fn(f, sets), 12 * s * s, 2.0 * s ** 3,
         note=f"allow_tf32={torch.backends.cuda.matmul.allow_tf32}")
    out.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "kernels_torch.jsonl")
