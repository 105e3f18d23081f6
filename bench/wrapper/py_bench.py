"""py_bench.py: per-call host cost of the generated Python wrapper of
bench/wrapper/chain8.tile against torch.compile of the same eight
operations, in one process, on the same input.

    python3 bench/wrapper/py_bench.py GEN_DIR [N] [OUT.jsonl]

GEN_DIR holds chain8.py (`tilec bench/wrapper/chain8.tile --emit py -o
GEN_DIR`). Each figure: BATCH back-to-back calls timed on the host clock,
then one synchronize, divided by BATCH; median of ROUNDS rounds. Results
are checked against eager PyTorch first."""
import json
import os
import statistics
import sys
import time

import torch

import tilec

gen_dir = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 65536
out_path = sys.argv[3] if len(sys.argv) > 3 else None
sys.path.insert(0, gen_dir)
import chain8  # noqa: E402  (the generated wrapper)


def f(x):
    v = x * 2.0
    v = v + 1.0
    v = torch.relu(v)
    v = -v
    v = v * v
    v = v * 0.5
    v = v - 3.0
    return torch.clamp(v, max=4.0)


BATCH, ROUNDS = 200, 31


def per_call_us(fn, x):
    times = []
    for r in range(ROUNDS + 3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(BATCH):
            fn(x)
        torch.cuda.synchronize()
        if r >= 3:
            times.append((time.perf_counter() - t0) / BATCH * 1e6)
    return statistics.median(times)


x = ((torch.arange(n, device="cuda", dtype=torch.int64) * 7919) % 2001 - 1000).float() / 500.0
ref = f(x)

t0 = time.perf_counter()
chain8.load()
load_ms = (time.perf_counter() - t0) * 1e3
y = torch.from_dlpack(chain8.call(x))
torch.cuda.synchronize()
err = (y - ref).abs().max().item()
assert err <= 1e-4, f"generated wrapper: max error {err}"

g = torch.compile(f)
t0 = time.perf_counter()
g(x)
torch.cuda.synchronize()
compile_ms = (time.perf_counter() - t0) * 1e3
assert (g(x) - ref).abs().max().item() <= 1e-4

def wrapper_call(x):
    chain8.release(chain8.call(x))  # as a loop would: the output serves the next call


# the eight kernels alone through the package (Kernel.__call__), on
# preallocated buffers: what the wrapper adds beyond its launches
names = ["scale2", "add1", "relu", "neg", "square", "half", "sub3", "clip"]
kernels = [chain8.load().kernel(k, 0) for k in names]
bufs = [tilec.Buffer((n,), "f32"), tilec.Buffer((n,), "f32")]


def kernels_only(x):
    src = x
    for i, k in enumerate(kernels):
        k(src, bufs[i % 2], n)
        src = bufs[i % 2]


res = {
    "bench": "py_wrapper",
    "n": n,
    "py_wrapper_us": per_call_us(wrapper_call, x),
    "py_kernels_us": per_call_us(kernels_only, x),
    "torch_compile_us": per_call_us(g, x),
    "eager_us": per_call_us(f, x),
    "py_load_ms": load_ms,
    "torch_first_call_ms": compile_ms,
    "max_err": err,
}
print(json.dumps(res))
if out_path:
    with open(out_path, "a") as fh:
        fh.write(json.dumps(res) + "\n")
