"""torch_e2e.py: the end-to-end graph (layernorm -> softmax -> relu(+y) ->
column sum on [R, C] f32) through torch.compile. One invocation is one fresh
process: it prints the first call's time (compile or cache load, plus one
run) and the per-call median, as JSON. The caller points
TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR at an empty directory for a
cold start and reuses it for a warm one."""
import json
import statistics
import sys
import time

import torch

R, C = int(sys.argv[1]), int(sys.argv[2])


def f(x, y, w, b):
    t = torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5)
    u = torch.softmax(t, -1)
    v = torch.relu(u) + y
    return v.sum(0)


x, y = torch.randn(R, C, device="cuda"), torch.randn(R, C, device="cuda")
w, b = torch.randn(C, device="cuda"), torch.randn(C, device="cuda")
torch.cuda.synchronize()
g = torch.compile(f)
t0 = time.perf_counter()
out = g(x, y, w, b)
torch.cuda.synchronize()
first_ms = (time.perf_counter() - t0) * 1e3
ref = f(x, y, w, b)
err = (torch.linalg.norm(out - ref) / torch.linalg.norm(ref)).item()
times = []
for i in range(110):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    g(x, y, w, b)
    e.record()
    e.synchronize()
    if i >= 10:
        times.append(s.elapsed_time(e))
# a device copy moving what tilec's four unfused kernels move: 8 passes
# over an [R, C] f32 buffer (read 5, write 3) ~ copying 4 of them
src = torch.empty(4 * R * C, device="cuda")
dst = torch.empty_like(src)
copies = []
for i in range(110):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    dst.copy_(src)
    e.record()
    e.synchronize()
    if i >= 10:
        copies.append(s.elapsed_time(e))
print(json.dumps({"first_ms": first_ms, "call_ms": statistics.median(times), "rel_err": err,
                  "copy4_ms": statistics.median(copies)}))
