"""bench.py: the one benchmark harness of tilec (bench/harness/README.md).

Every side of every workload is timed by one method, in this one process,
on one device, against one flush buffer:

  device time  warm-up launches, a synchronize, then REPS repetitions of
               [clear the flush buffer (>= 2x L2) | start event | one call |
               end event], all on the current stream, one synchronize after
               the last; the median (and the 20th/80th percentiles) of the
               REPS start-to-end times. No synchronize in the timed region;
               the flush keeps the device busy while the host enqueues the
               call, so a side's host overhead is not counted as device time.
  host time    N calls enqueued back to back on tiny inputs, no flush, no
               events, no synchronize inside, host clock / N; the median of
               ROUNDS rounds.

Sides: tilec through the C runtime (bench/harness/tb.c, the same loop in C,
no Python in it), tilec through its Python package (tilec.Kernel), torch
eager, torch.compile (default mode; and max-autotune-no-cudagraphs for
matmuls with --autotune), and a device copy of the same bytes (the
bandwidth floor). Before any timing each workload's tilec result is checked
against a reference in higher precision on fresh random inputs, with the
output poisoned with NaN first; a wrong result is recorded and not timed.

Writes one JSON object per line to --out as it goes (a killed run keeps what
it measured); bench/harness/report.py turns one or more such files into the
tables. Usage (from the repository root, on the GPU machine):

  python3 bench/harness/bench.py --out results.jsonl [--only SUBSTR]
          [--family F] [--autotune | --no-compile] [--host] [--tag NAME]

  python3 bench/harness/bench.py --family forms --out forms.jsonl --no-compile
          issue 29's equivalent forms of the f16 GEMM (tests/forms) at 4096,
          each against torch.matmul, then one table (form, time, cuBLAS,
          ratio, ratio to the reference form); not part of a plain run;
          TILEC_FORM_SIZES=2048,4096,8192 runs every form at each size,
          each compared with the reference form at its own size (a form
          with a `/// sizes:` line only at those)

  python3 bench/harness/bench.py --family attnforms --out attnforms.jsonl --no-compile
          attention as users wrote it from the docs (tests/attn_forms) at
          S = 4096 and 1024, causal and not, against SDPA; not part of a
          plain run

  python3 bench/harness/bench.py --family convforms --out convforms.jsonl --no-compile
          convolution as users wrote it from the docs (tests/conv_forms) at
          four ResNet-50 layers against cuDNN; not part of a plain run

  python3 bench/harness/bench.py --family llmforms --out llmforms.jsonl
          LLM kernels as users wrote them from the docs (tests/llm_forms:
          RMSNorm, SwiGLU, cross-entropy, RoPE) at the llm family's sizes,
          against torch eager and torch.compile; not part of a plain run

  python3 bench/harness/bench.py --family matmul --family handtuned --out tuned.jsonl --no-compile
          issue 31: the benchmark's f16 and bf16 GEMMs (bench/harness/gemm.tile:
          no tile hints, the compiler's default space, docs/tuning.md) beside
          their former hand-tuned form (tests/gemm_variants.tile: 13 variants)
          at every matmul shape, and matmul+bias+gelu and bmm likewise, then
          one table (gemm_tuned_table); the hand-tuned rows are not part of a
          plain run. `--tables-from A.jsonl B.jsonl` prints that table and the
          row kernels' from recorded runs (no device)

  python3 bench/harness/bench.py --family softmax --family layernorm --family tuned
          --only softmax --only layernorm --out rows_tuned.jsonl
          issue 31: the softmax and layernorm of bench/harness/rows_tuned.tile
          (examples/softmax_rows.tile and layernorm_rows.tile with their
          hints and variants removed: the default space of a row kernel) at
          every softmax and layernorm shape, beside the hand-tuned one-row and
          multi-row kernels and torch.compile, then one table (tuned against
          the better hand-tuned form and torch.compile); not part of a plain run

  TILEC_LOGS=tune python3 bench/harness/bench.py --family issue31 --out tuned31.jsonl
          issue 31's whole figure list in one process: every GEMM of
          bench/harness/gemm.tile (no tile hints) beside its hand-tuned form,
          the hint-less softmax and layernorm at every shape beside the
          hand-tuned one-row and multi-row kernels, and torch.compile on the
          hint-less rows at 65536x128 (--compile-only SUBSTR widens or
          narrows that); then one table (issue31_table), a pass or a miss per
          figure against 0.95x; `--tables-from` prints it again from the file

  python3 bench/harness/bench.py --family llm --out llm.jsonl
          issue 35: the fused kernels of an LLM training step
          (examples/llm.tile, bf16 at LLM sizes: RMSNorm and LayerNorm
          forward and backward, RoPE, SwiGLU, GeGLU, cross-entropy forward +
          backward, embedding gather and scatter-add, and the fused linear
          cross-entropy at 4096 tokens x 4096 x 128256 with each side's peak
          memory beside torch's whole form and Liger's chunked form), then one
          table (llm_table); not part of a plain run
"""
import argparse
import ctypes
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tilec  # noqa: E402

DEV = "cuda"
TF_PEAK_F16 = 989.4  # dense f16/bf16 tensor-core TFLOP/s, H100 SXM datasheet
TF_PEAK_F32 = 66.9   # dense f32 (no tensor cores) TFLOP/s, H100 SXM datasheet
TF_PEAK_TF32 = 494.7  # dense tf32 tensor-core TFLOP/s, H100 SXM datasheet


# ---- the method ---------------------------------------------------------

class Power:
    """--power: the board's energy counter, SM clock and power draw around each
    timed loop, through NVML (libnvidia-ml, the driver's; ctypes, no package).
    The energy is the counter's difference over the loop (its flushes
    included) over its repetitions; the clock and power are sampled every
    10 ms (about 15 ms with NVML's own time) by a thread while the loop runs.
    The counter advances in coarse steps: over a loop of about a second it
    reads within some 6% of the median power times the loop's time; a loop
    of tens of ms (the device copy's) reads 0 or double. Under a power limit
    a sustained load's time is its energy over the limit."""

    SM = 1  # NVML_CLOCK_SM

    def __init__(self):
        nv = ctypes.CDLL("libnvidia-ml.so.1")
        if nv.nvmlInit_v2() != 0:
            raise RuntimeError("nvmlInit_v2 failed")
        self.nv, self.h = nv, ctypes.c_void_p()
        uuid = getattr(torch.cuda.get_device_properties(0), "uuid", None)
        if uuid is None or nv.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}".encode(), ctypes.byref(self.h)) != 0:
            if nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.h)) != 0:
                raise RuntimeError("no NVML handle for device 0")
        self.samples, self.run, self.thread = [], False, None

    def energy_mj(self):
        e = ctypes.c_ulonglong()
        if self.nv.nvmlDeviceGetTotalEnergyConsumption(self.h, ctypes.byref(e)) != 0:
            raise RuntimeError("nvmlDeviceGetTotalEnergyConsumption failed")
        return e.value

    def sample(self):
        mhz, mw = ctypes.c_uint(), ctypes.c_uint()
        while self.run:
            if self.nv.nvmlDeviceGetClockInfo(self.h, self.SM, ctypes.byref(mhz)) == 0 and \
                    self.nv.nvmlDeviceGetPowerUsage(self.h, ctypes.byref(mw)) == 0:
                self.samples.append((mhz.value, mw.value / 1e3))
            time.sleep(0.01)

    def start(self):
        import threading
        self.samples, self.run = [], True
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.t0, self.e0 = time.perf_counter(), self.energy_mj()
        self.thread.start()

    def stop(self, n):
        """After the loop's synchronize: the record's fields for n calls."""
        e1, t1 = self.energy_mj(), time.perf_counter()
        self.run = False
        self.thread.join()
        clk = sorted(c for c, _ in self.samples) or [0]
        pw = sorted(p for _, p in self.samples) or [0.0]
        return {"energy_j_per_rep": (e1 - self.e0) / 1e3 / n, "loop_s": t1 - self.t0, "loop_reps": n,
                "sm_mhz_median": clk[len(clk) // 2], "sm_mhz_min": clk[0], "sm_mhz_max": clk[-1],
                "power_w_median": pw[len(pw) // 2], "power_w_max": pw[-1], "power_samples": len(self.samples)}


class Timer:
    """The one timing method, for Python callables and for the C loop."""

    def __init__(self, bench_lib, tdev):
        props = torch.cuda.get_device_properties(0)
        self.l2 = props.L2_cache_size
        # at least 2x L2, and large enough that clearing it keeps the device
        # busy longer than any side's host work per call (torch.compile's
        # guards take tens of µs): 512 MiB, twice what triton's do_bench clears
        self.flush_bytes = max(8 * self.l2, 512 << 20)
        self.flush = torch.empty(self.flush_bytes // 4, dtype=torch.int32, device=DEV)
        self.lib = bench_lib
        self.tdev = tdev
        self.flush_ms = self.time_flush()
        self.host_us = 0.0  # host time per repetition of the last timed loop
        self.power = None  # --power: a Power, whose fields the last timed loop left in power_rec
        self.power_rec = None


    def time_flush(self, n=20):
        """Device time of one clear of the flush buffer."""
        self.flush.zero_()
        torch.cuda.synchronize()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        for s, e in ev:
            s.record()
            self.flush.zero_()
            e.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in ev)

    def reps_for(self, est_ms):
        """About 300 ms of calls, never fewer than 50 or more than 500."""
        return int(min(500, max(50, 300.0 / max(est_ms, 1e-3))))

    def estimate(self, fn):
        fn()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(5):
            fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) / 5

    def device_py(self, fn, reps, warmup=10):
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        # the host time of each of the first 16 repetitions (before the
        # launch queue fills and blocks the host); their median is what one
        # repetition costs the host
        probe = min(reps, 16)
        stamps = []
        if self.power:
            self.power.start()
        for i, (s, e) in enumerate(ev):
            if i <= probe:
                stamps.append(time.perf_counter())
            self.flush.zero_()
            s.record()
            fn()
            e.record()
        if probe == reps:
            stamps.append(time.perf_counter())
        self.host_us = statistics.median(b - a for a, b in zip(stamps, stamps[1:])) * 1e6
        torch.cuda.synchronize()
        if self.power:
            self.power_rec = self.power.stop(reps)
        return [s.elapsed_time(e) for s, e in ev]

    def device_c(self, kernel, args, reps, warmup=10):
        """tilec through the C runtime: the same loop, in C (tb.c)."""
        packed = pack(kernel, args)
        ms = (ctypes.c_float * reps)()
        host = ctypes.c_double()
        err = ctypes.create_string_buffer(1024)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream or None)
        if self.power:  # tb.c's loop: its warm-up calls are inside the window
            torch.cuda.synchronize()
            self.power.start()
        rc = self.lib.tb_device_times(self.tdev._h, kernel.module._prog, kernel._name_b, packed, len(args), stream,
                                      self.flush.data_ptr(), self.flush.numel(), warmup, reps, ms, ctypes.byref(host),
                                      err, len(err))
        if self.power:
            torch.cuda.synchronize()
            self.power_rec = self.power.stop(reps + warmup)
        if rc != 0:
            raise RuntimeError(err.value.decode())
        self.host_us = host.value
        return list(ms)

    def host_c(self, kernel, args, n):
        packed = pack(kernel, args)
        us = ctypes.c_double()
        err = ctypes.create_string_buffer(1024)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream or None)
        torch.cuda.synchronize()
        rc = self.lib.tb_host_us(self.tdev._h, kernel.module._prog, kernel._name_b, packed, len(args), stream, n,
                                 ctypes.byref(us), err, len(err))
        torch.cuda.synchronize()
        if rc != 0:
            raise RuntimeError(err.value.decode())
        return us.value

    @staticmethod
    def host_py(fn, n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        return (t1 - t0) * 1e6 / n


def summary(ms):
    d = statistics.quantiles(ms, n=10)  # the 10th .. 90th percentiles
    return {"median_ms": statistics.median(ms), "p20_ms": d[1], "p80_ms": d[7], "min_ms": min(ms), "p90_ms": d[8],
            "reps": len(ms)}


_FIELDS = {tilec.PTR: "ptr", tilec.I32: "i32", tilec.I64: "i64", tilec.F32: "f32", tilec.F64: "f64",
           tilec.U32: "u32", tilec.U64: "u64", tilec.LIST: "ptr"}  # a list: its tilec_rt_list's address (a TensorList's)


def pack(kernel, args):
    """tilec.Kernel's checked arguments as a tilec_rt_arg array, for the C loop."""
    vals, _ = kernel.check(tuple(args))
    packed = (tilec._library._Arg * max(len(vals), 1))()
    for i, (kind, v) in enumerate(zip(kernel.kinds, vals)):
        setattr(packed[i], _FIELDS[kind], v)
    return packed


def tilec_args(args):
    """What a user passes to a tilec.Kernel: the tensors themselves (bf16
    ones too: the package reads torch tensors directly)."""
    return list(args)


# ---- workloads ----------------------------------------------------------

def rel_err(out, ref):
    """The relative L2 error of out against ref; for tuples (a workload of
    several outputs), the largest over the pairs."""
    if isinstance(out, (tuple, list)):
        return max(rel_err(o, r) for o, r in zip(out, ref))
    out, ref = out.double(), ref.double()
    if not torch.isfinite(out).all():
        return float("inf")
    return (torch.linalg.norm(out - ref) / torch.linalg.norm(ref)).item()


class Workload:
    """A workload: inputs, tilec kernel and arguments, torch function,
    reference, the byte and flop counts, and the tolerance of its check."""

    def __init__(self, name, family, tile, kernel, make, tilec_call, torch_fn, ref, nbytes, flops=0.0, tol=1e-4,
                 eager_is="torch eager", peak=None, check=None, others=None, compile=True, tilec_fn=None,
                 reset=None, sides=None, memory=False):
        self.name, self.family, self.tile, self.kernel = name, family, tile, kernel
        self.make, self.tilec_call, self.torch_fn, self.ref = make, tilec_call, torch_fn, ref
        self.nbytes, self.flops, self.tol, self.eager_is, self.peak = nbytes, flops, tol, eager_is, peak
        # an in-place workload checks itself: check(t, k) -> (tilec's rel err, the eager side's), and
        # may time no torch.compile (compile False)
        self.check, self.compile = check, compile
        # the llm family: tilec_fn(module, t) runs a tilec side of several
        # launches (kernel None: no C side) and returns its outputs or None
        # (then they are t[out]); reset(t) puts accumulators back before the
        # check; memory: each side's peak memory of one call is recorded
        self.tilec_fn, self.reset, self.memory = tilec_fn, reset, memory
        # more sides of the other library, each timed like the eager one: {label: fn(t)}
        self.sides = {**(others or {}), **(sides or {})}


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=DEV, dtype=torch.float32).to(dtype)


def w_add_relu(n):
    def make():
        return {"x": randn(n), "y": randn(n), "out": torch.empty(n, device=DEV)}
    return Workload(
        f"add_relu 2^{int(math.log2(n))}", "elementwise", "examples/add_relu.tile", "add_relu", make,
        lambda t: ([t["x"], t["y"], t["out"], n], "out"),
        lambda t: torch.relu(t["x"] + t["y"]),
        lambda t: torch.relu(t["x"].double() + t["y"].double()), 12 * n, tol=1e-6)


# issue 31: the row kernels with their hints removed; TILEC_ROWS_TUNED names another form of them to
# time in their place (bench/harness/rows_fast.tile: the arithmetic of torch.compile's Triton kernels)
ROWS_TUNED = os.environ.get("TILEC_ROWS_TUNED") or "bench/harness/rows_tuned.tile"


def w_softmax(r, c, rows_kernel=False, tuned=False):
    """tuned: softmax_rows.tile's kernel with its hints and variants removed
    (bench/harness/rows_tuned.tile: the compiler's default space of a row
    kernel, docs/tuning.md)."""
    tile, kern = (ROWS_TUNED, "softmax") if tuned else \
        ("examples/softmax_rows.tile", "softmax_multirow") if rows_kernel else ("examples/softmax.tile", "softmax")

    def make():
        return {"x": randn(r, c), "y": torch.empty(r, c, device=DEV)}
    label = "softmax_rows" if rows_kernel else "softmax"
    return Workload(
        f"{label} {r}x{c}{' tuned' if tuned else ''}", "tuned" if tuned else "softmax", tile, kern, make,
        lambda t: ([t["x"], t["y"], r, c], "y"),
        lambda t: torch.softmax(t["x"], -1),
        lambda t: torch.softmax(t["x"].double(), -1), 8 * r * c, tol=1e-5)


def w_cumsum(r, c):
    def make():
        return {"x": randn(r, c), "y": torch.empty(r, c, device=DEV)}
    return Workload(
        f"cumsum {r}x{c}", "scan", "examples/cumsum.tile", "cumsum_rows", make,
        lambda t: ([t["x"], t["y"], r, c], "y"),
        lambda t: torch.cumsum(t["x"], 1),
        lambda t: torch.cumsum(t["x"].double(), 1), 8 * r * c, tol=1e-5)


def w_conv(n, h, wd, c, k, r, stride, pad, fused=False, rows=False, path=None, kernel=None):
    """conv2d f16 NHWC (channels_last) as ResNet-50 runs it, against cuDNN
    through F.conv2d (cudnn.benchmark on: its best algorithm) and
    torch.compile; fused adds bias and relu. tilec's filter is RSCK
    ([R, S, C, K], examples/conv2d.tile), repacked once from torch's OHWI
    outside the timed region, as one prepacks the weights of a model.
    rows: the kernel conv2d_f16_rows (rows of consecutive output pixels,
    A by TMA's im2col mode on sm_90a), the same arguments; with fused,
    conv2d_nhwc_rows. path/kernel: another spelling of the plain convolution
    (the convforms family: tests/conv_forms, the same arguments)."""
    oh, ow = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - r) // stride + 1
    cl = torch.channels_last

    def make():
        torch.backends.cudnn.benchmark = True
        x = randn(n, c, h, wd, dtype=torch.float16).to(memory_format=cl)
        wt = (randn(k, c, r, r) / math.sqrt(c * r * r)).to(torch.float16).to(memory_format=cl)
        return {"x": x, "w": wt, "b": randn(k, dtype=torch.float16), "w_rsck": wt.permute(2, 3, 1, 0).contiguous(),
                "y": torch.empty(n, k, oh, ow, device=DEV, dtype=torch.float16, memory_format=cl)}

    def call(t):
        nhwc = [t["x"].permute(0, 2, 3, 1), t["w_rsck"]] + ([t["b"]] if fused else []) + [t["y"].permute(0, 2, 3, 1)]
        return nhwc + [n, h, wd, c, k, r, r, oh, ow, stride, pad], "y"

    def torch_fn(t):
        y = F.conv2d(t["x"], t["w"], t["b"] if fused else None, stride, pad)
        return F.relu(y) if fused else y

    def ref(t):
        old, torch.backends.cudnn.allow_tf32 = torch.backends.cudnn.allow_tf32, False
        try:  # f32 on the f16 values: far closer than f16's own rounding
            y = F.conv2d(t["x"].float(), t["w"].float(), t["b"].float() if fused else None, stride, pad)
        finally:
            torch.backends.cudnn.allow_tf32 = old
        return F.relu(y) if fused else y
    label = f"{r}x{r}{f' s{stride}' if stride > 1 else ''} {h}x{wd} C{c} K{k}"
    if kernel:
        return Workload(
            f"convform {kernel} f16 {label} N{n}", "convforms", path, kernel, make, call, torch_fn, ref,
            2 * (n * h * wd * c + k * r * r * c + n * oh * ow * k), 2.0 * n * oh * ow * k * c * r * r,
            tol=2e-3, eager_is="cuDNN (F.conv2d, channels_last)", peak=TF_PEAK_F16)
    return Workload(
        f"conv2d{'+bias+relu' if fused else ''}{' rows' if rows else ''} f16 {label} N{n}", "conv", "examples/conv2d.tile",
        ("conv2d_nhwc_rows" if rows else "conv2d_nhwc") if fused else "conv2d_f16_rows" if rows else "conv2d_f16",
        make, call, torch_fn, ref,
        2 * (n * h * wd * c + k * r * r * c + n * oh * ow * k + (k if fused else 0)), 2.0 * n * oh * ow * k * c * r * r,
        tol=2e-3, eager_is="cuDNN + torch eager relu" if fused else "cuDNN (F.conv2d, channels_last)",
        peak=TF_PEAK_F16)


def w_conv_f32(n, h, wd, c, k, r, pad):
    """conv2d f32 NCHW, stride 1 (issue 30: >= 1.0x cuDNN without tf32),
    tilec's examples/conv2d_f32.tile on torch's own layouts (x [N, C, H,
    W], w [K, C, R, S]) against cuDNN through F.conv2d with tf32 off for
    both cuDNN and cuBLAS and cudnn.benchmark on (its best algorithm,
    Winograd or FFT included); the reference is the float64 convolution
    of every image, or of the first and the last where that would cost
    more than about 10 GFLOP (the issue's 16x16x1024^2 -> 128: 618 GFLOP
    and 8.6 GB of f32 output)."""
    oh, ow = h + 2 * pad - r + 1, wd + 2 * pad - r + 1

    def make():
        torch.backends.cudnn.benchmark = True
        return {"x": randn(n, c, h, wd), "w": randn(k, c, r, r) / math.sqrt(c * r * r),
                "y": torch.empty(n, k, oh, ow, device=DEV)}

    def torch_fn(t):
        old = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
        try:
            return F.conv2d(t["x"], t["w"], None, 1, pad)
        finally:
            torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = old

    def call(t):
        return [t["x"], t["w"], t["y"], n, c, h, wd, k, r, r, oh, ow, pad], "y"

    # the images checked: all, or past a float64 cost of about 10 GFLOP the first and the last
    imgs = list(range(n)) if 2.0 * oh * ow * k * c * r * r * n < 1e10 else [0, n - 1]

    def ref(t):
        return torch.cat([F.conv2d(t["x"][i:i + 1].double(), t["w"].double(), None, 1, pad) for i in imgs])

    def check(t, kern):
        t["y"].fill_(float("nan"))
        kern(*tilec_args(call(t)[0]))
        torch.cuda.synchronize()
        want = ref(t)
        return rel_err(t["y"][imgs], want), rel_err(torch_fn(t)[imgs], want)
    return Workload(
        f"conv2d f32 NCHW {r}x{r} {h}x{wd} C{c} K{k} N{n}", "conv_f32", "examples/conv2d_f32.tile", "conv2d_f32",
        make, call, torch_fn, ref, 4 * (n * c * h * wd + k * c * r * r + n * k * oh * ow),
        2.0 * n * oh * ow * k * c * r * r, tol=1e-5, eager_is="cuDNN (F.conv2d, tf32 off)", peak=TF_PEAK_F32,
        check=check, compile=False)


def w_layernorm(r, c, rows_kernel=False, tuned=False):
    """tuned: layernorm_rows.tile's kernel with its hints and variants
    removed (bench/harness/rows_tuned.tile)."""
    tile, kern = (ROWS_TUNED, "layernorm") if tuned else \
        ("examples/layernorm_rows.tile", "layernorm_rows") if rows_kernel else ("examples/layernorm.tile", "layernorm")

    def make():
        return {"x": randn(r, c), "w": randn(c), "b": randn(c), "y": torch.empty(r, c, device=DEV)}
    return Workload(
        f"{kern} {r}x{c}{' tuned' if tuned else ''}", "tuned" if tuned else "layernorm", tile, kern, make,
        lambda t: ([t["x"], t["w"], t["b"], t["y"], r, c, 1e-5], "y"),
        lambda t: F.layer_norm(t["x"], (c,), t["w"], t["b"], 1e-5),
        lambda t: F.layer_norm(t["x"].double(), (c,), t["w"].double(), t["b"].double(), 1e-5),
        8 * r * c + 8 * c, tol=1e-5)


def w_matmul(m, n, k, dtype, bt=False, hand=False):
    """C = A @ B, or with bt x @ W.T with W stored [n, k] (nn.Linear's
    weight; f32 only: examples/linear_f32.tile); hand: the benchmark's
    GEMM as it was hand-tuned before issue 31 (tests/gemm_variants.tile)."""
    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "tf32": torch.float32}[dtype]
    es = 4 if dtype in ("f32", "tf32") else 2
    if bt:
        tile, kern = "examples/linear_f32.tile", "linear_f32"
    elif dtype in ("f32", "tf32"):  # tf32: f32 tensors, the kernel's `tf32` hint; cuBLAS with allow_tf32
        tile, kern = f"examples/matmul_{dtype}.tile", f"matmul_{dtype}"
    else:
        tile, kern = HAND_GEMM if hand else "bench/harness/gemm.tile", f"matmul_{dtype}"

    def make():
        return {"a": randn(m, k, dtype=dt), "b": randn(n, k, dtype=dt) if bt else randn(k, n, dtype=dt),
                "c": torch.empty(m, n, device=DEV, dtype=dt)}
    shape = f"{m}" if m == n == k else f"{m}x{n}x{k}"
    tol = {"f16": 2e-3, "bf16": 1e-2, "f32": 1e-5, "tf32": 2e-3}[dtype]

    def bmat(t):
        return t["b"].T if bt else t["b"]

    def eager(t):
        old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        try:
            return torch.matmul(t["a"], bmat(t))
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old
    peak = {"f32": TF_PEAK_F32, "tf32": TF_PEAK_TF32}.get(dtype, TF_PEAK_F16)
    return Workload(
        f"matmul {dtype} {'x@W.T ' if bt else ''}{shape}{' hand-tuned' if hand else ''}",
        "handtuned" if hand else "matmul",
        tile, kern, make,
        lambda t: ([t["a"], t["b"], t["c"], m, n, k], "c"),
        eager, lambda t: t["a"].double() @ bmat(t).double(), es * (m * k + k * n + m * n), 2.0 * m * n * k, tol=tol,
        eager_is="cuBLAS (torch.matmul, allow_tf32)" if dtype == "tf32" else "cuBLAS (torch.matmul)", peak=peak)


HAND_GEMM = "tests/gemm_variants.tile"  # issue 31: the benchmark's GEMMs as they were hand-tuned


def w_matmul_gelu(m, n, k, hand=False):
    """hand: the hand-tuned form (tests/gemm_variants.tile: 3 variants of
    its tiles), beside bench/harness/gemm.tile's, which has no tile hints."""
    def make():
        return {"a": randn(m, k, dtype=torch.float16), "b": randn(k, n, dtype=torch.float16),
                "bias": randn(n, dtype=torch.float16), "c": torch.empty(m, n, device=DEV, dtype=torch.float16)}
    return Workload(
        f"matmul+bias+gelu f16 {m}{' hand-tuned' if hand else ''}", "handtuned" if hand else "matmul",
        HAND_GEMM if hand else "bench/harness/gemm.tile", "matmul_bias_gelu", make,
        lambda t: ([t["a"], t["b"], t["bias"], t["c"], m, n, k], "c"),
        lambda t: F.gelu(torch.matmul(t["a"], t["b"]) + t["bias"]),
        lambda t: F.gelu(t["a"].double() @ t["b"].double() + t["bias"].double()),
        2 * (m * k + k * n + m * n + n), 2.0 * m * n * k, tol=2e-3, eager_is="cuBLAS + torch eager epilogue",
        peak=TF_PEAK_F16)


def w_bmm(bt, m, n, k, hand=False):
    """hand: as w_matmul_gelu's."""
    def make():
        return {"a": randn(bt, m, k, dtype=torch.float16), "b": randn(bt, k, n, dtype=torch.float16),
                "c": torch.empty(bt, m, n, device=DEV, dtype=torch.float16)}
    return Workload(
        f"bmm f16 {bt}x{m}x{n}x{k}{' hand-tuned' if hand else ''}", "handtuned" if hand else "matmul",
        HAND_GEMM if hand else "bench/harness/gemm.tile", "bmm_f16", make,
        lambda t: ([t["a"], t["b"], t["c"], m, n, k, bt], "c"),
        lambda t: torch.bmm(t["a"], t["b"]),
        lambda t: torch.bmm(t["a"].double(), t["b"].double()), 2 * bt * (m * k + k * n + m * n),
        2.0 * bt * m * n * k, tol=2e-3, eager_is="cuBLAS (torch.bmm)", peak=TF_PEAK_F16)


def w_attention(b, h, s, d, causal, path="examples/attention.tile", kernel=None, family="attention"):
    """Attention forward against SDPA; path/kernel: another spelling of it (the
    attnforms family: tests/attn_forms, the same arguments q, k, v, o, S, bh,
    causal, scale)."""
    scale = 1.0 / math.sqrt(d)

    def make():
        return {"q": randn(b, h, s, d, dtype=torch.float16), "k": randn(b, h, s, d, dtype=torch.float16),
                "v": randn(b, h, s, d, dtype=torch.float16),
                "o": torch.empty(b, h, s, d, device=DEV, dtype=torch.float16)}
    flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    return Workload(
        (f"attnform {os.path.splitext(os.path.basename(path))[0]} " if kernel else "") +
        f"attention d{d} {b}x{h}x{s}{' causal' if causal else ''}", family, path,
        kernel or f"attention_d{d}", make,
        lambda t: ([t["q"], t["k"], t["v"], t["o"], s, b * h, int(causal), scale], "o"),
        lambda t: F.scaled_dot_product_attention(t["q"], t["k"], t["v"], is_causal=causal),
        lambda t: F.scaled_dot_product_attention(t["q"].float(), t["k"].float(), t["v"].float(), is_causal=causal),
        2 * 4 * b * h * s * d, flops, tol=5e-3, eager_is="SDPA (torch eager)", peak=TF_PEAK_F16)


# ---- the llm family: issue 35's fused kernels of an LLM training step -----

LLM_TILE = "examples/llm.tile"
BF16 = getattr(torch, "bfloat16", None)  # None under the CPU tests' stand-in torch


def llm_form_names(form, name, kernel):
    """A workload's (name, family, tile, kernel): the llm family's own, or,
    with form = (path, kernel) of tests/llm_forms, that file's kernel
    (the llmforms family, the same arguments)."""
    if form is None:
        return f"llm {name}", "llm", LLM_TILE, kernel
    return f"llmform {form[1]} {name}", "llmforms", form[0], form[1]


def w_llm_rmsnorm(r, c, eps=1e-6, form=None):
    """RMSNorm forward as HF Llama computes it (w * bf16(x * rstd))."""
    def make():
        return {"x": randn(r, c, dtype=BF16), "w": (1 + 0.1 * randn(c)).to(BF16),
                "y": torch.empty(r, c, device=DEV, dtype=BF16), "rstd": torch.empty(r, device=DEV)}

    def torch_fn(t):
        xf = t["x"].float()
        h = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        return t["w"] * h.to(BF16)

    def ref(t):
        xd = t["x"].double()
        return t["w"].double() * xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps)
    return Workload(
        *llm_form_names(form, f"rmsnorm fwd bf16 {r}x{c}", "rmsnorm_fwd"), make,
        lambda t: ([t["x"], t["w"], t["y"], t["rstd"], r, c, eps], "y"), torch_fn, ref, 2 * (2 * r * c + c) + 4 * r,
        tol=1e-2)


def _rms_parts(t, eps=1e-6):
    xf = t["x"].float()
    return xf, torch.rsqrt(xf.pow(2).mean(-1) + eps)


def w_llm_rmsnorm_bwd(r, c, rpp=16):
    """RMSNorm backward: dx and dw (dw's per-program partials, then col_sum)."""
    g = -(-r // rpp)

    def make():
        t = {"x": randn(r, c, dtype=BF16), "w": (1 + 0.1 * randn(c)).to(BF16), "dy": randn(r, c, dtype=BF16),
             "dx": torch.empty(r, c, device=DEV, dtype=BF16), "dw": torch.empty(c, device=DEV, dtype=BF16),
             "dwp": torch.empty(g, c, device=DEV)}
        t["rstd"] = _rms_parts(t)[1]
        return t

    def run(mod, t):
        mod.rmsnorm_bwd(t["dy"], t["x"], t["w"], t["rstd"], t["dx"], t["dwp"], r, c, rpp)
        mod.col_sum(t["dwp"], t["dw"], g, c)

    def formula(t, dt):
        x, w, dy, rs = (t[k].to(dt) for k in ("x", "w", "dy", "rstd"))
        xh = x * rs[:, None]
        gw = dy * w
        dx = rs[:, None] * (gw - xh * (gw * xh).mean(-1, keepdim=True))
        return dx, (dy * xh.to(BF16).to(dt)).sum(0)

    def torch_fn(t):
        dx, dw = formula(t, torch.float32)
        return dx.to(BF16), dw.to(BF16)
    return Workload(
        f"llm rmsnorm bwd bf16 {r}x{c}", "llm", LLM_TILE, None, make, lambda t: (None, ("dx", "dw")), torch_fn,
        lambda t: formula(t, torch.float64), 2 * (3 * r * c + 2 * c) + 4 * r, tol=1e-2, tilec_fn=run)


def w_llm_layernorm(r, c, eps=1e-5):
    def make():
        return {"x": randn(r, c, dtype=BF16), "w": randn(c, dtype=BF16), "b": randn(c, dtype=BF16),
                "y": torch.empty(r, c, device=DEV, dtype=BF16), "mean": torch.empty(r, device=DEV),
                "rstd": torch.empty(r, device=DEV)}
    return Workload(
        f"llm layernorm fwd bf16 {r}x{c}", "llm", LLM_TILE, "layernorm_fwd", make,
        lambda t: ([t["x"], t["w"], t["b"], t["y"], t["mean"], t["rstd"], r, c, eps], "y"),
        lambda t: F.layer_norm(t["x"], (c,), t["w"], t["b"], eps),
        lambda t: F.layer_norm(t["x"].double(), (c,), t["w"].double(), t["b"].double(), eps),
        2 * (2 * r * c + 2 * c) + 8 * r, tol=1e-2)


def w_llm_layernorm_bwd(r, c, rpp=16, eps=1e-5):
    """LayerNorm backward: dx, dw, db; torch's is its fused
    native_layer_norm_backward (eager) and what inductor makes of it."""
    g = -(-r // rpp)

    def make():
        t = {"x": randn(r, c, dtype=BF16), "w": randn(c, dtype=BF16), "b": randn(c, dtype=BF16),
             "dy": randn(r, c, dtype=BF16), "dx": torch.empty(r, c, device=DEV, dtype=BF16),
             "dw": torch.empty(c, device=DEV, dtype=BF16), "db": torch.empty(c, device=DEV, dtype=BF16),
             "dwp": torch.empty(g, c, device=DEV), "dbp": torch.empty(g, c, device=DEV)}
        _, t["mean"], t["rstd"] = torch.ops.aten.native_layer_norm(t["x"], [c], t["w"], t["b"], eps)
        return t

    def run(mod, t):
        mod.layernorm_bwd(t["dy"], t["x"], t["w"], t["mean"].view(r), t["rstd"].view(r), t["dx"], t["dwp"],
                          t["dbp"], r, c, rpp)
        mod.col_sum(t["dwp"], t["dw"], g, c)
        mod.col_sum(t["dbp"], t["db"], g, c)

    def torch_fn(t):
        return torch.ops.aten.native_layer_norm_backward(t["dy"], t["x"], [c], t["mean"], t["rstd"], t["w"], t["b"],
                                                         [True, True, True])

    def ref(t):
        x, w, dy = t["x"].double(), t["w"].double(), t["dy"].double()
        mu, rs = t["mean"].double(), t["rstd"].double()
        xh = (x - mu) * rs
        gw = dy * w
        dx = rs * (gw - gw.mean(-1, keepdim=True) - xh * (gw * xh).mean(-1, keepdim=True))
        return dx, (dy * xh).sum(0), dy.sum(0)
    return Workload(
        f"llm layernorm bwd bf16 {r}x{c}", "llm", LLM_TILE, None, make, lambda t: (None, ("dx", "dw", "db")),
        torch_fn, ref, 2 * (3 * r * c + 3 * c) + 8 * r, tol=1e-2, tilec_fn=run)


def w_llm_rope(tokens, heads, d=128, form=None):
    """RoPE on q [tokens, heads, 128] (HF's rotate_half); tilec reads cos and
    sin [tokens, 64], torch HF's [tokens, 128] (both halves the same)."""
    def make():
        pos = torch.arange(tokens, device=DEV, dtype=torch.float32)[:, None]
        inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2, device=DEV, dtype=torch.float32) / d))
        ang = pos * inv[None, :]
        t = {"q": randn(tokens, heads, d, dtype=BF16), "cos": ang.cos().to(BF16), "sin": ang.sin().to(BF16),
             "out": torch.empty(tokens, heads, d, device=DEV, dtype=BF16)}
        t["cos2"], t["sin2"] = torch.cat([t["cos"], t["cos"]], -1), torch.cat([t["sin"], t["sin"]], -1)
        return t

    def rot(q, cos, sin):
        q1, q2 = q[..., : d // 2], q[..., d // 2:]
        return q * cos[:, None, :] + torch.cat([-q2, q1], -1) * sin[:, None, :]
    return Workload(
        *llm_form_names(form, f"rope bf16 {tokens}x{heads}x{d}", "rope"), make,
        lambda t: ([t["q"], t["cos"], t["sin"], t["out"], tokens, heads], "out"),
        lambda t: rot(t["q"], t["cos2"], t["sin2"]),
        lambda t: rot(t["q"].double(), t["cos2"].double(), t["sin2"].double()), 2 * (2 * tokens * heads * d + tokens * d),
        tol=1e-2)


def w_llm_glu(kind, r, c, form=None):
    def act(x):
        return F.silu(x) if kind == "swiglu" else F.gelu(x)

    def make():
        return {"g": randn(r, c, dtype=BF16), "u": randn(r, c, dtype=BF16),
                "out": torch.empty(r, c, device=DEV, dtype=BF16)}
    return Workload(
        *llm_form_names(form, f"{kind} bf16 {r}x{c}", kind), make,
        lambda t: ([t["g"], t["u"], t["out"], r * c], "out"), lambda t: act(t["g"]) * t["u"],
        lambda t: act(t["g"].double()) * t["u"].double(), 2 * 3 * r * c, tol=1e-2)


def _ce_formula(x, tgt, scale):
    lse = torch.logsumexp(x, -1)
    loss = lse - x.gather(1, tgt[:, None].long()).squeeze(1)
    g = torch.exp(x - lse[:, None])
    g.scatter_add_(1, tgt[:, None].long(), torch.full((x.shape[0], 1), -1.0, device=DEV, dtype=x.dtype))
    return loss, g * scale


def w_llm_ce(r, v, form=None):
    """Cross-entropy forward + backward in one pass: each row's loss and the
    logits' gradient of the mean loss, bf16 logits."""
    def make():
        return {"x": (2 * randn(r, v)).to(BF16), "tgt": torch.randint(0, v, (r,), device=DEV, dtype=torch.int32),
                "loss": torch.empty(r, device=DEV), "dx": torch.empty(r, v, device=DEV, dtype=BF16)}

    def torch_fn(t):
        loss, g = _ce_formula(t["x"].float(), t["tgt"], 1.0 / r)
        return loss, g.to(BF16)
    return Workload(
        *llm_form_names(form, f"cross-entropy fwd+bwd bf16 {r}x{v}", "ce_fwd_bwd"), make,
        lambda t: ([t["x"], t["tgt"], t["loss"], t["dx"], r, v, 1.0 / r], ("loss", "dx")), torch_fn,
        lambda t: _ce_formula(t["x"].double(), t["tgt"], 1.0 / r), 2 * 2 * r * v + 8 * r, tol=1e-2)


def w_llm_embed(n, v, d):
    def make():
        return {"table": randn(v, d, dtype=BF16), "ids": torch.randint(0, v, (n,), device=DEV, dtype=torch.int32),
                "out": torch.empty(n, d, device=DEV, dtype=BF16)}
    return Workload(
        f"llm embedding gather bf16 {n} of {v}x{d}", "llm", LLM_TILE, "embed_gather", make,
        lambda t: ([t["table"], t["ids"], t["out"], n, d], "out"), lambda t: F.embedding(t["ids"], t["table"]),
        lambda t: F.embedding(t["ids"], t["table"].double()), 2 * 2 * n * d + 4 * n, tol=0.0)


def w_llm_embed_bwd(n, v, d):
    """Embedding backward: dout [n, d] bf16 scatter-added into an f32
    gradient accumulator [v, d] (ids repeat: atomics), as gradient
    accumulation keeps it; torch: index_add_ of dout in f32."""
    def make():
        ids = torch.randint(0, v // 16, (n,), device=DEV, dtype=torch.int32) * 16  # repeats: atomics matter
        return {"dout": randn(n, d, dtype=BF16), "ids": ids, "dt": torch.zeros(v, d, device=DEV),
                "dtt": torch.zeros(v, d, device=DEV)}

    def reset(t):
        t["dt"].zero_()
        t["dtt"].zero_()
    return Workload(
        f"llm embedding scatter-add bf16 {n} into {v}x{d} f32", "llm", LLM_TILE, "embed_scatter_add", make,
        lambda t: ([t["dout"], t["ids"], t["dt"], n, d], "dt"),
        lambda t: t["dtt"].index_add_(0, t["ids"], t["dout"].float()),
        lambda t: torch.zeros(v, d, device=DEV, dtype=torch.float64).index_add_(0, t["ids"], t["dout"].double()),
        2 * n * d + 8 * n * d + 4 * n, tol=1e-6, reset=reset)


_FLCE_PY = {}


def flce_graph():
    """examples/llm.tile's graph flce_bf16 through its Python wrapper
    (tilec --emit py), built once."""
    if "m" not in _FLCE_PY:
        import tempfile
        tilec_bin = os.environ.get("TILEC_BIN") or os.environ.get("TILEC_COMPILE_WORKER") or \
            os.path.join(ROOT, "build", "bin", "tilec")
        gen = tempfile.mkdtemp(prefix="tilec_bench_llm_")
        subprocess.run([tilec_bin, os.path.join(ROOT, LLM_TILE), "--emit", "py", "-o", gen], check=True)
        sys.path.insert(0, gen)
        import flce_bf16
        import flce_bf16_n
        flce_bf16.load()
        flce_bf16_n.load()
        _FLCE_PY["m"], _FLCE_PY["n"] = flce_bf16, flce_bf16_n
    return _FLCE_PY["m"]


def flce_graph_n():
    """examples/llm.tile's graph flce_bf16_n (N chunks of whole 128-token
    groups) through its Python wrapper."""
    flce_graph()
    return _FLCE_PY["n"]


def _flce_torch(h, w, tgt):
    """Fused linear cross-entropy forward + backward as torch writes it whole:
    all T x V logits (bf16, then f32 for the softmax)."""
    logits = (h @ w.T).float()
    loss, g = _ce_formula(logits, tgt, 1.0 / h.shape[0])
    g = g.to(h.dtype)
    return loss, g @ w, g.T @ h


def _flce_chunked(h, w, tgt, c):
    """Liger's chunked form in torch (LigerFusedLinearCrossEntropy's
    algorithm: chunks of c tokens, dW accumulated in bf16 by addmm); its
    softmax temporaries are f32 here (Liger's triton kernel works in place)."""
    T = h.shape[0]
    loss = torch.empty(T, device=DEV)
    dh = torch.empty_like(h)
    dw = torch.zeros_like(w)
    for i in range(0, T, c):
        hc = h[i:i + c]
        lc, g = _ce_formula((hc @ w.T).float(), tgt[i:i + c], 1.0 / T)
        loss[i:i + c] = lc
        g = g.to(h.dtype)
        dh[i:i + c] = g @ w
        torch.addmm(dw, g.T, hc, out=dw)
    return loss, dh, dw


def w_llm_flce(T, D, V, C, chunks=None):
    """Issue 35: fused linear cross-entropy forward + backward, bf16: each
    token's loss, dH and dW of the mean loss, against torch whole (eager and
    torch.compile) and Liger's chunked form in torch; peak memory of each.
    C tokens a chunk (graph flce_bf16), or with chunks = N the graph
    flce_bf16_n's N chunks of whole 128-token groups (C unused: row N<n>)."""
    liger_c = 1 << max(0, (-(-T // -(-V // D)) - 1).bit_length())  # Liger: next_pow2(cdiv(T, cdiv(V, D)))

    def make():
        return {"h": (randn(T, D) * 0.5).to(BF16), "w": (randn(V, D) * 0.02).to(BF16),
                "tgt": torch.randint(0, V, (T,), device=DEV, dtype=torch.int32)}

    def run(mod, t):
        if chunks:
            return flce_graph_n().call(t["h"], t["w"], t["tgt"], chunks, 1.0 / T)
        return flce_graph().call(t["h"], t["w"], t["tgt"], C, 1.0 / T)

    def ref(t):
        old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            h, w = t["h"].float(), t["w"].float()
            loss, g = _ce_formula(h @ w.T, t["tgt"], 1.0 / T)
            return loss, g @ w, g.T @ h
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old
    return Workload(
        f"llm fused linear cross-entropy fwd+bwd bf16 T{T} D{D} V{V} " + (f"N{chunks}" if chunks else f"C{C}"), "llm", LLM_TILE, None, make,
        lambda t: (None, ("loss", "dh", "dw")), lambda t: _flce_torch(t["h"], t["w"], t["tgt"]), ref,
        2 * (T * D + 2 * V * D + T * D) + 8 * T, 3 * 2.0 * T * D * V, tol=2e-2, peak=TF_PEAK_F16, tilec_fn=run,
        memory=True, sides={f"torch chunked (Liger's form, C={liger_c})":
                            lambda t: _flce_chunked(t["h"], t["w"], t["tgt"], liger_c)})


def llm_workloads():
    """issue 35's set at LLM sizes (run with --family llm): the fused linear
    cross-entropy first (the issue's headline, at its size, at Liger's chunk,
    at the largest chunk whose peak memory stays under Liger's chunked form
    (512: 125 MiB of logits), at 1024, and in 6 chunks of 640 and 768 tokens
    (flce_bf16_n: the fewest chunks under Liger's peak; no faster than 512,
    bench/results/flce_s51.md), then the memory-bound kernels."""
    T, D, V = 4096, 4096, 128256
    return [w_llm_flce(T, D, V, 128), w_llm_flce(T, D, V, 512), w_llm_flce(T, D, V, 1024),
            w_llm_flce(T, D, V, 0, chunks=6),
            w_llm_rmsnorm(8192, 4096), w_llm_rmsnorm_bwd(8192, 4096), w_llm_layernorm(8192, 4096),
            w_llm_layernorm_bwd(8192, 4096), w_llm_rope(8192, 32), w_llm_glu("swiglu", 8192, 14336),
            w_llm_glu("geglu", 8192, 14336), w_llm_ce(4096, V), w_llm_embed(8192, V, D), w_llm_embed_bwd(8192, V, D)]


LLM_FORMS_DIR = "tests/llm_forms"  # LLM kernels as users wrote them from the docs (tests/llm_forms/README.md)


def llm_form_workloads():
    """Every kernel of tests/llm_forms at the llm family's size of its op,
    named by its `/// op:` line (run with --family llmforms)."""
    make = {"rmsnorm": lambda f: w_llm_rmsnorm(8192, 4096, form=f),
            "swiglu": lambda f: w_llm_glu("swiglu", 8192, 14336, form=f),
            "ce": lambda f: w_llm_ce(4096, 128256, form=f),
            "rope": lambda f: w_llm_rope(8192, 32, form=f)}
    w = []
    for path, text, kernel in corpus(LLM_FORMS_DIR):
        op = re.search(r"^/// op: *(\w+)", text, re.M)
        if not op or op.group(1) not in make:
            raise ValueError(f"{path}: needs a `/// op: NAME` line, NAME one of {', '.join(sorted(make))}")
        w.append(make[op.group(1)]((path, kernel)))
    return w


def llm_table(records):
    """The llm family as one markdown table: per workload, tilec's time
    (Python side: what a user calls), torch eager's, torch.compile's and the
    ratios, and (the fused linear cross-entropy) each side's peak memory."""
    dev, mem, checks = {}, {}, {}
    for r in records:
        if r.get("family") not in ("llm", "llmforms") and not str(r.get("workload", "")).startswith(("llm ", "llmform ")):
            continue
        if r.get("kind") == "device" and "median_ms" in r:
            dev.setdefault(r["workload"], {})[r["side"]] = r["median_ms"]
        elif r.get("kind") == "memory" and "peak_bytes" in r:
            mem.setdefault(r["workload"], {})[r["side"]] = r["peak_bytes"]
        elif r.get("kind") == "check":
            checks[r["workload"]] = r
    lines = ["| workload | tilec (ms) | torch eager (ms) | torch.compile (ms) | vs eager | vs compile | peak memory (MiB) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for w in [w for w in checks] + [w for w in dev if w not in checks]:
        d = dev.get(w, {})
        t = d.get("tilec Python")
        e = next((v for k, v in d.items() if k not in ("tilec C", "tilec Python", "device copy")
                  and not k.startswith("torch.compile") and not k.startswith("torch chunked")), None)
        c = d.get("torch.compile")
        ms = lambda v: "" if v is None else f"{v:.3f}"  # noqa: E731
        ratio = lambda o: f"{o / t:.2f}x" if o and t else ""  # noqa: E731
        extra = "; ".join(f"{k}: {v:.3f} ms" for k, v in d.items() if k.startswith("torch chunked"))
        m = "; ".join(f"{k} {v / 2 ** 20:.0f}" for k, v in mem.get(w, {}).items())
        status = "" if checks.get(w, {}).get("ok", True) else " (WRONG)"
        lines.append(f"| {w[4:] if w.startswith('llm ') else w}{status}{' (' + extra + ')' if extra else ''} | {ms(t)} | {ms(e)} | {ms(c)} | "
                     f"{ratio(e)} | {ratio(c)} | {m} |")
    return "\n".join(lines)


ATTN_FORMS_DIR = "tests/attn_forms"  # attention as users wrote it from the docs (tests/attn_forms/README.md)


def corpus(folder):
    """(path, text, kernel name) of every .tile of a corpus folder, sorted;
    each file must hold one kernel."""
    d = os.path.join(ROOT, folder)
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if f.endswith(".tile"):
            path = f"{folder}/{f}"
            with open(os.path.join(ROOT, path)) as fh:
                text = fh.read()
            kn = re.search(r"^kernel +(\w+)", text, re.M)
            if not kn:
                raise ValueError(f"{path}: needs one kernel")
            yield path, text, kn.group(1)


def attn_form_workloads():
    """Every kernel of tests/attn_forms at S = 4096 and 1024, causal and not
    (run with --family attnforms): its `/// d:` line gives the head size."""
    w = []
    for path, text, kernel in corpus(ATTN_FORMS_DIR):
        hd = re.search(r"^/// d: *(\d+)", text, re.M)
        if not hd:
            raise ValueError(f"{path}: needs a `/// d: N` line")
        dd = int(hd.group(1))
        for b, s in ((4, 4096), (16, 1024)):
            for causal in (False, True):
                w.append(w_attention(b, 16 if dd == 64 else 8, s, dd, causal, path, kernel, "attnforms"))
    return w


CONV_FORMS_DIR = "tests/conv_forms"  # convolution as users wrote it from the docs (tests/conv_forms/README.md)
CONV_FORM_LAYERS = [(56, 64, 64, 3, 1), (14, 256, 256, 3, 1), (56, 64, 256, 1, 1), (56, 256, 512, 1, 2)]


def conv_form_workloads():
    """Every kernel of tests/conv_forms at four of the conv family's ResNet-50
    layers (run with --family convforms)."""
    return [w_conv(32, h, h, c, k, r, st, r // 2, path=path, kernel=kernel)
            for path, _, kernel in corpus(CONV_FORMS_DIR) for h, c, k, r, st in CONV_FORM_LAYERS]


FORMS_DIR = "tests/forms"  # issue 29's corpus of equivalent forms (tests/forms/README.md)
FORM_BATCH = 2  # the matrices a call of a batched form multiplies


def form_info(path):
    """The `/// form:`, `/// args:`, `/// dtype:` and `/// sizes:` lines of a form's file (sizes: the
    only sizes a form whose strides are literal sizes is right at, "" for any)."""
    info = {"form": "", "args": "plain", "dtype": "f16", "sizes": ""}
    with open(os.path.join(ROOT, path)) as f:
        for line in f:
            for key in info:
                if line.startswith(f"/// {key}:"):
                    info[key] = line.split(":", 1)[1].strip()
    return info


def w_form(path, s):
    """One form of the f16 (or `/// dtype:`) GEMM at s x s x s, called as
    its `/// args:` line says (at: A stored [K, M], the product A^T @ B as
    dW = G^T @ X), against torch.matmul (cuBLAS) of the same views."""
    info = form_info(path)
    conv = info["args"]
    if conv not in ("plain", "ld", "bt", "at", "batched", "batched_bt"):
        raise ValueError(f"{path}: unknown args convention {conv!r}")
    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[info["dtype"]]
    # batched, batched_bt: gemm(a, b, c, M, N, K, batch), FORM_BATCH matrices a call (pid(2) the batch)
    nb = FORM_BATCH if conv.startswith("batched") else 1
    bt = conv in ("bt", "batched_bt")

    def shape():
        return (nb, s, s) if nb > 1 else (s, s)

    def make():
        b = randn(*shape(), dtype=dt)
        return {"a": randn(*shape(), dtype=dt), "b": b.transpose(-1, -2).contiguous() if bt else b,
                "c": torch.empty(*shape(), device=DEV, dtype=dt)}

    def call(t):
        args = [t["a"], t["b"], t["c"], s, s, s]
        return (args + [s, s, s] if conv == "ld" else args + [nb] if nb > 1 else args), "c"

    def amat(t):
        return t["a"].t() if conv == "at" else t["a"]

    def bmat(t):
        return t["b"].transpose(-1, -2) if bt else t["b"]
    stem = os.path.splitext(os.path.basename(path))[0]
    return Workload(
        f"form {stem} {s}", "forms", path, "gemm", make, call, lambda t: torch.matmul(amat(t), bmat(t)),
        lambda t: amat(t).double() @ bmat(t).double(), 2 * 3 * nb * s * s, 2.0 * nb * s * s * s,
        tol=2e-3 if dt == torch.float16 else 1e-2, eager_is="cuBLAS (torch.matmul)",
        peak=TF_PEAK_F16)


def form_sizes():
    """The sizes the forms run at: 4096, or TILEC_FORM_SIZES (e.g. "2048,4096,8192": every form at
    each, each compared with the reference form at its own size)."""
    v = os.environ.get("TILEC_FORM_SIZES", "").strip()
    if not v:
        return [4096]
    sizes = [int(x) for x in v.split(",") if x.strip()]
    if not sizes or any(x <= 0 for x in sizes):
        raise SystemExit(f"bench.py: TILEC_FORM_SIZES must be a list of positive sizes, got {v!r}")
    return sizes


def form_workloads(size=None):
    """Every form of tests/forms at `size`, or at form_sizes()."""
    d = os.path.join(ROOT, FORMS_DIR)
    names = sorted(f for f in os.listdir(d) if f.endswith(".tile")) if os.path.isdir(d) else []
    # the reference first: the table compares every form with it
    names.sort(key=lambda f: f != "ref.tile")
    sizes = [size] if size else form_sizes()

    def fits(f, s):  # `/// sizes: 4096`: a batch stride of literal sizes (batch_const.tile) is right there alone
        only = form_info(f"{FORMS_DIR}/{f}")["sizes"]
        return not only or s in [int(x) for x in only.split(",") if x.strip()]
    w = [w_form(f"{FORMS_DIR}/{f}", s) for s in sizes for f in names if fits(f, s)]
    # A given MN-major (issue 29 item 2: dW = G^T @ X) at 8192 too: `--only "form at"` runs every A^T form
    return w + ([w_form(f"{FORMS_DIR}/{f}", 8192) for f in names if f.startswith("at")] if 8192 not in sizes else [])


def forms_table(records):
    """The forms' device times as one markdown table: each form's tilec C
    median, cuBLAS's, their ratio, and the form against the reference."""
    by = {}
    for r in records:
        if r.get("kind") == "device" and r.get("family") == "forms" and "median_ms" in r:
            by.setdefault(r["workload"], {})[r["side"]] = r["median_ms"]
    checks = {r["workload"]: r for r in records if r.get("kind") == "check"}
    # the reference form at each size; the first size the reference ran at names forms without a size
    refs = {w.split()[2]: by[w].get("tilec C") for w in by if w.startswith("form ref ")}
    ref = min((w for w in by if w.startswith("form ref ")), key=lambda w: int(w.split()[2]), default=None)
    ref_size = ref.split()[2] if ref else None
    lines = ["| form | what | tilec C (ms) | cuBLAS (ms) | vs cuBLAS | vs ref |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for w in sorted(set(by) | {k for k in checks if k.startswith("form ")},
                    key=lambda w: (int(w.split()[2]), not w.startswith("form ref "), w)):
        t, cb = by.get(w, {}).get("tilec C"), by.get(w, {}).get("cuBLAS (torch.matmul)")
        stem, size = w.split()[1], w.split()[2]
        what = form_info(f"{FORMS_DIR}/{stem}.tile")["form"]
        if size != ref_size:  # another size: named with it, compared with the reference at that size
            stem = f"{stem} {size}"
        if t is None:
            c = checks.get(w, {})
            lines.append(f"| {stem} | {what} | {'WRONG' if c.get('ok') is False else 'ERROR'} | "
                         f"{cb if cb is None else f'{cb:.3f}'} | | |")
            continue
        vs_cb = f"{cb / t:.2f}x" if cb else ""
        ref_ms = refs.get(size)
        vs_ref = f"{ref_ms / t:.2f}x" if ref_ms else ""
        lines.append(f"| {stem} | {what} | {t:.3f} | {cb:.3f} | {vs_cb} | {vs_ref} |" if cb else
                     f"| {stem} | {what} | {t:.3f} | | | {vs_ref} |")
    return "\n".join(lines)


SOFTMAX_SHAPES = [(8192, 1024), (8192, 4096), (2048, 16384), (32768, 512), (65536, 128), (4096, 1000), (8192, 3000)]
LAYERNORM_SHAPES = [(8192, 4096), (4096, 768), (8192, 1024), (32768, 512), (65536, 128)]


def llama_shapes(layers=8, d=2048, ff=5632, kv=256, vocab=32000):
    """A Llama model's parameter shapes (TinyLlama's widths: hidden 2048, MLP 5632, grouped K/V of 256,
    vocabulary 32000), `layers` layers: embedding, per layer two norms, q, k, v, o, gate, up, down, then the
    final norm and the head; 8 layers: 75 tensors, 483M parameters."""
    s = [(vocab, d)]
    for _ in range(layers):
        s += [(d,), (d, d), (kv, d), (kv, d), (d, d), (d,), (ff, d), (ff, d), (d, ff)]
    return s + [(d,), (vocab, d)]


def mixed_shapes(n=200, seed=35):
    """n shapes of mixed sizes, as tests/python/test_gpu_lists.py has them: vectors, tiny ones, matrices."""
    import random
    r = random.Random(seed)
    out = [(1,), (3,), (7,), (1023,), (1024,), (1025,), (4097,), (65537,), (1000, 1000), (2048, 1024), (3, 5, 7)]
    while len(out) < n:
        k = r.random()
        out.append((r.randint(1, 64),) if k < 0.3 else (r.randint(1, 4096),) if k < 0.6 else
                   (r.randint(1, 512), r.randint(1, 512)))
    return out


ADAMW = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)


def w_adamw(label, shapes):
    """Issue 35: one AdamW step over a model's parameter list, f32, in one launch per 62 tensors
    (examples/adamw_multi.tile over tilec.TensorList), against torch.optim.AdamW(fused=True) (the eager side)
    and foreach=True, each over its own copy of the same parameters and gradients."""
    numel = sum(math.prod(s) for s in shapes)
    lr, (b1, b2), eps, wd = ADAMW["lr"], ADAMW["betas"], ADAMW["eps"], ADAMW["weight_decay"]

    def make():
        g = torch.Generator(device=DEV).manual_seed(35)
        t = {"p": [torch.randn(s, device=DEV, generator=g) * 0.02 for s in shapes],
             "g": [torch.randn(s, device=DEV, generator=g) * 1e-3 for s in shapes]}
        t["p0"] = [p.clone() for p in t["p"]]
        t["m"] = [torch.zeros_like(p) for p in t["p"]]
        t["v"] = [torch.zeros_like(p) for p in t["p"]]
        t["lists"] = [tilec.TensorList(t[k]) for k in "pgmv"]
        for kind in ("fused", "foreach"):
            ps = [torch.nn.Parameter(p.clone()) for p in t["p"]]
            for p, gr in zip(ps, t["g"]):
                p.grad = gr
            t[kind] = torch.optim.AdamW(ps, **ADAMW, **{kind: True})
        return t

    def check(t, k):
        """One step from the same start by tilec and by torch's fused step, each against f64."""
        k(*t["lists"], lr, b1, b2, eps, wd, 1.0)
        t["fused"].step()
        torch.cuda.synchronize()
        fused = t["fused"].param_groups[0]["params"]
        num = [0.0, 0.0]
        den = 0.0
        for p0, gr, mine, theirs in zip(t["p0"], t["g"], t["p"], fused):
            p0, gr = p0.double(), gr.double()
            m, v = (1 - b1) * gr, (1 - b2) * gr * gr
            ref = p0 * (1 - lr * wd) - (lr / (1 - b1)) * m / (v.sqrt() / math.sqrt(1 - b2) + eps)
            num[0] += float((mine.double() - ref).norm() ** 2)
            num[1] += float((theirs.detach().double() - ref).norm() ** 2)
            den += float(ref.norm() ** 2)
        return math.sqrt(num[0] / den), math.sqrt(num[1] / den)

    return Workload(
        f"adamw {label} ({len(shapes)} tensors, {numel / 1e6:.0f}M f32)", "adamw", "examples/adamw_multi.tile",
        "adamw__f32", make, lambda t: (list(t["lists"]) + [lr, b1, b2, eps, wd, 2.0], None),
        lambda t: t["fused"].step(), None, 28 * numel, tol=1e-6, eager_is="torch AdamW(fused=True)",
        check=check, others={"torch AdamW(foreach=True)": lambda t: t["foreach"].step()}, compile=False)


def workloads():
    w = [w_add_relu(1 << 26)]
    w.append(w_adamw("llama-8L", llama_shapes()))  # issue 35: >= 1.0x torch.optim.AdamW(fused=True)
    w.append(w_adamw("mixed-200", mixed_shapes()))
    for r, c in SOFTMAX_SHAPES:
        w.append(w_softmax(r, c))
    for r, c in [(32768, 512), (65536, 128), (8192, 1024)]:
        w.append(w_softmax(r, c, rows_kernel=True))
    for r, c in LAYERNORM_SHAPES:
        w.append(w_layernorm(r, c))
    for r, c in [(4096, 32768), (32768, 4096)]:  # issue 21: >= 1.0x the best of eager and compile
        w.append(w_cumsum(r, c))
    # issue 21: ResNet-50's convolutions at batch 32 (3x3 and 1x1, stride 1 and 2), >= 0.8x cuDNN;
    # the fused epilogue against torch.compile
    for h, c, k, r, st in [(56, 64, 64, 3, 1), (28, 128, 128, 3, 1), (14, 256, 256, 3, 1), (56, 128, 128, 3, 2),
                           (56, 64, 256, 1, 1), (14, 1024, 256, 1, 1), (56, 256, 512, 1, 2)]:
        w.append(w_conv(32, h, h, c, k, r, st, r // 2))
    for h, c, k, r, st in [(56, 64, 64, 3, 1), (28, 128, 128, 3, 1), (14, 256, 256, 3, 1), (56, 128, 128, 3, 2),
                           (56, 64, 256, 1, 1), (14, 1024, 256, 1, 1), (56, 256, 512, 1, 2)]:
        w.append(w_conv(32, h, h, c, k, r, st, r // 2, rows=True))  # session 45: A by TMA's im2col mode
    for h, c, k, r in [(56, 64, 64, 3), (14, 256, 256, 3), (56, 64, 256, 1)]:
        w.append(w_conv(32, h, h, c, k, r, 1, r // 2, fused=True))
    for h, c, k, r in [(56, 64, 64, 3), (14, 256, 256, 3), (56, 64, 256, 1)]:  # session 46: the rows, fused
        w.append(w_conv(32, h, h, c, k, r, 1, r // 2, fused=True, rows=True))
    # issue 30: f32 NCHW 3x3 >= 1.0x cuDNN without tf32: the issue's 16x16x1024^2 -> 128 and two ResNet layers
    for n, h, c, k in [(16, 1024, 16, 128), (32, 56, 64, 64), (32, 28, 128, 128)]:
        w.append(w_conv_f32(n, h, h, c, k, 3, 1))
    for r, c in [(32768, 512), (65536, 128), (8192, 1024), (4096, 768)]:
        w.append(w_layernorm(r, c, rows_kernel=True))
    for dt in ("f16", "bf16"):
        for s in (1024, 2048, 4096, 8192):
            w.append(w_matmul(s, s, s, dt))
        w.append(w_matmul(16, 8192, 8192, dt))
        w.append(w_matmul(64, 8192, 8192, dt))  # decode-like too: split-K's M <= 64 class (docs/lowering.md)
    w.append(w_matmul(4096, 4096, 4096, "f32"))
    w.append(w_matmul(4096, 4096, 4096, "f32", bt=True))  # issue 29: x @ W.T at x @ W's speed, >= 0.9x cuBLAS
    w.append(w_matmul(4096, 4096, 4096, "tf32"))
    w.append(w_matmul_gelu(4096, 4096, 4096))
    w.append(w_bmm(16, 1024, 1024, 1024))
    # issue 30's lengths, the same tokens a head group: S = 4096 (4 sequences), 1024 (16), 16384 (one)
    for b, s in ((4, 4096), (16, 1024), (1, 16384)):
        for d, h in ((64, 16), (128, 8)):
            for causal in (False, True):
                w.append(w_attention(b, h, s, d, causal))
    w.extend(form_workloads())  # run only when asked: --family forms (or --only form)
    w.extend(attn_form_workloads())  # run only when asked: --family attnforms
    w.extend(conv_form_workloads())  # run only when asked: --family convforms
    w.extend(llm_form_workloads())  # run only when asked: --family llmforms
    for dt in ("f16", "bf16"):  # issue 31's hand-tuned reference: run only when asked (--family handtuned)
        for s in (1024, 2048, 4096, 8192):
            w.append(w_matmul(s, s, s, dt, hand=True))
        w.append(w_matmul(16, 8192, 8192, dt, hand=True))
        w.append(w_matmul(64, 8192, 8192, dt, hand=True))
    w.append(w_matmul_gelu(4096, 4096, 4096, hand=True))
    w.append(w_bmm(16, 1024, 1024, 1024, hand=True))
    for r, c in SOFTMAX_SHAPES:  # issue 31: the row kernels with no tile hints, every shape of the hand-tuned rows
        w.append(w_softmax(r, c, tuned=True))
    for r, c in LAYERNORM_SHAPES:
        w.append(w_layernorm(r, c, tuned=True))
    w.extend(llm_workloads())  # issue 35's LLM kernels: run only when asked (--family llm)
    return w


def _medians(records):
    """Per workload its sides' medians (ms), and the variant its tilec C side launched."""
    by, variant = {}, {}
    for r in records:
        if r.get("kind") == "device" and "median_ms" in r:
            by.setdefault(r["workload"], {})[r["side"]] = r["median_ms"]
            if r["side"] == "tilec C":
                variant[r["workload"]] = r.get("variant")
    return by, variant


def _ms(x):
    return f"{x:.4f}" if x else ""


def _ratio(a, b):
    return f"{a / b:.2f}x" if a and b else ""


def rows_tuned_table(records):
    """issue 31: each hint-less row kernel (bench/harness/rows_tuned.tile)
    against the best hand-tuned form of the same shape (the one-row and the
    multi-row kernels of examples/, each a multi-kernel of its own) and
    torch.compile: one markdown table of tilec C medians."""
    by, variant = _medians(records)
    lines = ["| shape | hand-tuned (ms) | which | tuned (ms) | its variant | torch.compile (ms) | tuned vs hand-tuned "
             "| tuned vs torch.compile |", "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for w in [w for w in by if w.endswith(" tuned")]:
        op, shape = w.split()[0], w.split()[1]
        t = by[w].get("tilec C")
        hands = [(by.get(f"{name} {shape}", {}).get("tilec C"), name) for name in (op, f"{op}_rows")]
        hands = [h for h in hands if h[0]]
        hand = min(hands) if hands else (None, "")
        tc = by[w].get("torch.compile")
        lines.append(f"| {op} {shape} | {_ms(hand[0])} | {hand[1]} | {_ms(t)} | {variant.get(w, '')} | {_ms(tc)} | "
                     f"{_ratio(hand[0], t)} | {_ratio(tc, t)} |")
    return "\n".join(lines)


def gemm_tuned_table(records):
    """issue 31: each GEMM of the benchmark with no tile hints
    (bench/harness/gemm.tile) against its hand-tuned form
    (tests/gemm_variants.tile, the workload NAME + " hand-tuned") and cuBLAS:
    one markdown table of tilec C medians, the variant each launched."""
    by, variant = _medians(records)
    lines = ["| shape | hint-less (ms) | its variant | hand-tuned (ms) | its variant | hint-less vs hand-tuned "
             "| cuBLAS (ms) | hint-less vs cuBLAS |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for w in [w for w in by if f"{w} hand-tuned" in by]:
        t, h = by[w].get("tilec C"), by[f"{w} hand-tuned"].get("tilec C")
        cb = next((v for k, v in by[w].items() if k.startswith("cuBLAS")), None)
        lines.append(f"| {w} | {_ms(t)} | {variant.get(w, '')} | {_ms(h)} | {variant.get(w + ' hand-tuned', '')} | "
                     f"{_ratio(h, t)} | {_ms(cb)} | {_ratio(cb, t)} |")
    return "\n".join(lines)


ISSUE31_BAR = 0.95  # issue 31: >= 0.95x of the hand-tuned form, and of torch.compile at 65536x128
ISSUE31_COMPILE = ["65536x128 tuned"]  # --family issue31's torch.compile side: the issue's two rows against it


def issue31_selects(w):
    """--family issue31: every workload of issue 31's figure list, in one
    process: the GEMMs of bench/harness/gemm.tile (f16 and bf16 at 1024 to
    8192, M = 16 and 64, matmul+bias+gelu, bmm) and their hand-tuned forms,
    the hint-less softmax and layernorm at every shape and the hand-tuned
    one-row and multi-row kernels beside them."""
    if w.family in ("handtuned", "tuned", "softmax", "layernorm"):
        return True
    return w.family == "matmul" and w.tile == "bench/harness/gemm.tile"


def issue31_table(records):
    """issue 31's figures from one run: every hint-less kernel against its
    hand-tuned form on every shape (GEMMs: tests/gemm_variants.tile; rows:
    the better of the one-row and multi-row kernels of examples/), and the
    hint-less softmax and layernorm at 65536x128 against torch.compile; each
    row pass or miss against ISSUE31_BAR (tilec C medians)."""
    by, variant = _medians(records)
    rows = []
    for w in [w for w in by if f"{w} hand-tuned" in by]:
        rows.append((w, by[w].get("tilec C"), variant.get(w, ""), "hand-tuned (tests/gemm_variants.tile)",
                     by[f"{w} hand-tuned"].get("tilec C"), variant.get(f"{w} hand-tuned", "")))
    for w in [w for w in by if w.endswith(" tuned")]:
        op, shape = w.split()[0], w.split()[1]
        hands = [(by.get(f"{name} {shape}", {}).get("tilec C"), name) for name in (op, f"{op}_rows")]
        hands = [h for h in hands if h[0]]
        hand = min(hands) if hands else (None, "")
        rows.append((f"{op} {shape}", by[w].get("tilec C"), variant.get(w, ""),
                     f"hand-tuned ({hand[1]})" if hand[1] else "hand-tuned", hand[0], ""))
        if by[w].get("torch.compile"):
            rows.append((f"{op} {shape}", by[w].get("tilec C"), variant.get(w, ""), "torch.compile",
                         by[w]["torch.compile"], ""))
    lines = ["| shape | hint-less (ms) | its variant | against | its time (ms) | its variant | ratio | bar | |",
             "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- |"]
    npass = 0
    for name, t, v, ref, r, rv in rows:
        ok = bool(t and r) and r / t >= ISSUE31_BAR
        npass += ok
        verdict = "pass" if ok else "**miss**" if t and r else "**no figure**"
        ratio = f"{r / t:.3f}x" if t and r else ""  # three places: a 0.949x reads as the miss it is
        lines.append(f"| {name} | {_ms(t)} | {v} | {ref} | {_ms(r)} | {rv} | {ratio} | {ISSUE31_BAR:.2f}x | {verdict} |")
    lines.append(f"\n{npass} of {len(rows)} figures pass (ratio: the reference's time over the hint-less "
                 f"kernel's, >= {ISSUE31_BAR:.2f}x asked).")
    return "\n".join(lines)


def env_header(records):
    """One line naming the run: device, driver, torch, date, commit."""
    e = next((r for r in records if r.get("kind") == "env"), None)
    if not e:
        return ""
    driver = (e.get("nvidia_smi") or "").split(", ")[1:2]
    return (f"{e.get('device')}, driver {driver[0] if driver else '?'}, torch {e.get('torch')}, "
            f"CUDA {e.get('cuda')}, {e.get('date')}, tilec {e.get('commit') or '?'}")


def tables_from(paths):
    """The issue 31 tables from recorded runs (--tables-from: no device):
    the records of several processes, e.g. the GEMMs without torch.compile
    and the row kernels with it."""
    records = []
    for p in paths:
        with open(p) as f:
            records.extend(json.loads(line) for line in f if line.strip())
    if any("issue31" in (r.get("families") or []) for r in records if r.get("kind") == "env"):
        print(env_header(records) + "\n\n" + issue31_table(records))
    else:
        print(gemm_tuned_table(records) + "\n\n" + rows_tuned_table(records))
    return 0


# ---- running ------------------------------------------------------------

def commit():
    """The tree's commit: TILEC_COMMIT (a tree without .git, as the device's
    copy), else git's short hash of ROOT, else None."""
    if os.environ.get("TILEC_COMMIT"):
        return os.environ["TILEC_COMMIT"]
    try:
        out = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        return out.stdout.strip() or None
    except OSError:
        return None


class Run:
    def __init__(self, args):
        self.args = args
        self.records = []
        self.out = open(args.out, "a")
        self.tdev = tilec.device()
        libpath = os.environ.get("TILEC_LIB") or os.path.join(ROOT, "build", "lib", "libtilec.so")
        ctypes.CDLL(libpath, mode=ctypes.RTLD_GLOBAL)  # tb.c resolves tilec_* against this copy
        benchlib = os.environ.get("TILEC_BENCH_LIB") or os.path.join(ROOT, "build", "bench", "libtilec_bench.so")
        lib = ctypes.CDLL(benchlib)
        P = ctypes.c_void_p
        lib.tb_device_times.argtypes = [P, P, ctypes.c_char_p, P, ctypes.c_uint32, P, ctypes.c_uint64, ctypes.c_size_t,
                                        ctypes.c_int, ctypes.c_int, P, P, P, ctypes.c_size_t]
        lib.tb_host_us.argtypes = [P, P, ctypes.c_char_p, P, ctypes.c_uint32, P, ctypes.c_int, P, P, ctypes.c_size_t]
        self.timer = Timer(lib, self.tdev)
        if getattr(args, "power", False):
            self.timer.power = Power()
        self.modules = {}

    def emit(self, rec):
        rec.setdefault("tag", self.args.tag)
        self.records.append(rec)
        self.out.write(json.dumps(rec) + "\n")
        self.out.flush()

    def module(self, path):
        if path not in self.modules:
            self.modules[path] = tilec.load(os.path.join(ROOT, path))
        return self.modules[path]

    def env(self):
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,power.limit",
                              "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
        p = torch.cuda.get_device_properties(0)
        import triton
        self.emit({"kind": "env", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": p.name,
                   "sms": p.multi_processor_count, "l2_mb": p.L2_cache_size / 2 ** 20, "nvidia_smi": smi,
                   "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
                   "python": platform.python_version(), "tilec": tilec.version(),
                   "flush_mb": self.timer.flush_bytes / 2 ** 20, "flush_us": self.timer.flush_ms * 1e3,
                   "allow_tf32": torch.backends.cuda.matmul.allow_tf32, "families": self.args.family or [],
                   "commit": commit()})

    def compiles(self, w):
        """Whether torch.compile is timed on w: not with --no-compile; with
        --compile-only (or --family issue31's default, ISSUE31_COMPILE) only
        on the workloads whose name contains one of its strings."""
        if self.args.no_compile or not w.compile:
            return False
        only = self.args.compile_only or (ISSUE31_COMPILE if "issue31" in (self.args.family or []) else None)
        return not only or any(s in w.name for s in only)

    def time_side(self, w, side, fn=None, kernel=None, args=None, reps=None, extra=None):
        self.timer.power_rec = None
        try:
            if kernel is not None:
                ms = self.timer.device_c(kernel, args, reps)
            else:
                ms = self.timer.device_py(fn, reps)
            rec = {"kind": "device", "workload": w.name, "family": w.family, "side": side, "bytes": w.nbytes,
                   "flops": w.flops, "peak_tflops": w.peak, **summary(ms),
                   # whether the device waited for the host: report.py's covered()
                   "host_us_per_rep": self.timer.host_us, "flush_us": self.timer.flush_ms * 1e3,
                   **(self.timer.power_rec or {})}
        except Exception as e:  # a side that fails is recorded, never fatal
            rec = {"kind": "device", "workload": w.name, "family": w.family, "side": side, "error": str(e)[:500]}
        if extra:
            rec.update(extra)
        self.emit(rec)
        if "median_ms" in rec:
            pw = (f"  {rec['energy_j_per_rep']:.3f} J/rep, SM {rec['sm_mhz_median']} MHz"
                  f" [{rec['sm_mhz_min']} .. {rec['sm_mhz_max']}], {rec['power_w_median']:.0f} W"
                  if "energy_j_per_rep" in rec else "")
            print(f"  {side:36s} {rec['median_ms']:9.4f} ms  [{rec['p20_ms']:.4f} .. {rec['p80_ms']:.4f}]{pw}",
                  flush=True)
        else:
            print(f"  {side:36s} ERROR {rec['error'][:200]}", flush=True)
        return rec

    def peak_memory(self, w, side, fn):
        """The memory one call of a side allocates beyond what is allocated
        before it, at its peak (torch.cuda.max_memory_allocated around the
        call: torch's allocator, which tilec's Python wrappers use too)."""
        try:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            fn()
            torch.cuda.synchronize()
            rec = {"kind": "memory", "workload": w.name, "family": w.family, "side": side,
                   "peak_bytes": torch.cuda.max_memory_allocated() - before}
            print(f"  {side:36s} peak {rec['peak_bytes'] / 2 ** 20:9.1f} MiB beyond the inputs", flush=True)
        except Exception as e:  # recorded, never fatal
            rec = {"kind": "memory", "workload": w.name, "family": w.family, "side": side, "error": str(e)[:300]}
        self.emit(rec)

    def compiled(self, fn, mode):
        torch._dynamo.reset()
        return torch.compile(fn, mode=mode) if mode else torch.compile(fn)

    def workload(self, w):
        print(f"== {w.name}", flush=True)
        torch.manual_seed(hash(w.name) % 2 ** 31)
        t = w.make()
        mod = self.module(w.tile)
        args, out = w.tilec_call(t)
        outs = [] if out is None else [out] if isinstance(out, str) else list(out)  # None: checked in place
        if w.kernel:
            k = mod.kernel(w.kernel)  # the multi-kernel: the runtime picks the variant per shape
            if isinstance(k, tilec.GenericKernel):  # the instance the arguments' dtypes choose (C side too)
                k = k.select(tuple(args))
            targs = tilec_args(args)
            tilec_side = lambda: k(*targs)  # noqa: E731
        else:
            k = None
            tilec_side = lambda: w.tilec_fn(mod, t)  # noqa: E731
        if w.check is not None:  # in place: the workload checks one step against its reference itself
            err, ref_torch = w.check(t, k)
        else:
            # check first: poisoned output, fresh random inputs, higher-precision reference
            for o in outs:  # (a graph's outputs are its own: not in t)
                if o in t and t[o].is_floating_point():
                    t[o].fill_(float("nan"))
            if w.reset:
                w.reset(t)
            got = tilec_side()
            torch.cuda.synchronize()
            if got is None:
                got = tuple(t[o] for o in outs) if len(outs) > 1 else t[outs[0]]
            want = w.ref(t)
            err = rel_err(got, want)
            del got
            ref_torch = rel_err(w.torch_fn(t), want)
            del want
        ok = err <= w.tol
        variant = k.last_variant if k else None
        self.emit({"kind": "check", "workload": w.name, "rel_err": err, "tol": w.tol, "ok": ok,
                   "torch_rel_err": ref_torch, "variant": variant})
        print(f"  check: rel err {err:.2e} (tol {w.tol:.0e}, torch eager {ref_torch:.2e}) variant {variant}"
              f" {'ok' if ok else 'WRONG'}", flush=True)
        est = self.timer.estimate(lambda: w.torch_fn(t))
        reps = self.timer.reps_for(est)
        if ok:
            if k:
                self.time_side(w, "tilec C", kernel=k, args=args, reps=reps, extra={"variant": k.last_variant})
            self.time_side(w, "tilec Python", fn=tilec_side, reps=reps)
            if w.memory:
                self.peak_memory(w, "tilec Python", tilec_side)
        if not getattr(self.args, "tilec_only", False):  # --tilec-only: the tilec sides alone
            self.time_side(w, w.eager_is, fn=lambda: w.torch_fn(t),
                           reps=reps, extra={"other": True})
            if w.memory:
                self.peak_memory(w, w.eager_is, lambda: w.torch_fn(t))
            for label, fn in w.sides.items():
                self.time_side(w, label, fn=lambda fn=fn: fn(t), reps=reps, extra={"other": True})
                if w.memory:
                    self.peak_memory(w, label, lambda fn=fn: fn(t))
            if self.compiles(w):
                modes = [None]
                if self.args.autotune and w.family == "matmul":
                    modes.append("max-autotune-no-cudagraphs")
                for mode in modes:
                    label = "torch.compile" + (f" {mode}" if mode else "")
                    try:
                        f = self.compiled(w.torch_fn, mode)
                        if w.reset:
                            w.reset(t)
                        t0 = time.perf_counter()
                        got = f(t)
                        torch.cuda.synchronize()
                        cerr = rel_err(got, w.ref(t))
                        compile_s = time.perf_counter() - t0
                    except Exception as e:
                        self.emit({"kind": "device", "workload": w.name, "side": label, "error": str(e)[:500]})
                        print(f"  {label}: ERROR {str(e)[:200]}", flush=True)
                        continue
                    self.time_side(w, label, fn=lambda: f(t), reps=reps,
                                   extra={"other": True, "compile_s": compile_s, "rel_err": cerr})
                    if w.memory:
                        self.peak_memory(w, label, lambda: f(t))
            # the bandwidth floor: a device copy moving the same bytes (half read, half written)
            n = max(1, w.nbytes // 8)
            src, dst = torch.randn(n, device=DEV), torch.empty(n, device=DEV)
            self.time_side(w, "device copy", fn=lambda: dst.copy_(src), reps=reps, extra={"floor": True})
            del src, dst
        del t

    def host(self):
        """Host cost per call on tiny inputs: enqueue N calls, no synchronize."""
        n, rounds = 256, 21  # few enough that the launch queue never fills and blocks the host
        cases = [
            ("add_relu n=4096", "examples/add_relu.tile", "add_relu",
             lambda: {"x": randn(4096), "y": randn(4096), "o": torch.empty(4096, device=DEV)},
             lambda t: [t["x"], t["y"], t["o"], 4096], lambda t: torch.relu(t["x"] + t["y"])),
            ("softmax 16x128", "examples/softmax.tile", "softmax",
             lambda: {"x": randn(16, 128), "y": torch.empty(16, 128, device=DEV)},
             lambda t: [t["x"], t["y"], 16, 128], lambda t: torch.softmax(t["x"], -1)),
            ("layernorm 16x128", "examples/layernorm.tile", "layernorm",
             lambda: {"x": randn(16, 128), "w": randn(128), "b": randn(128), "y": torch.empty(16, 128, device=DEV)},
             lambda t: [t["x"], t["w"], t["b"], t["y"], 16, 128, 1e-5],
             lambda t: F.layer_norm(t["x"], (128,), t["w"], t["b"], 1e-5)),
            ("matmul f16 64", "bench/harness/gemm.tile", "matmul_f16",
             lambda: {"a": randn(64, 64, dtype=torch.float16), "b": randn(64, 64, dtype=torch.float16),
                      "c": torch.empty(64, 64, device=DEV, dtype=torch.float16)},
             lambda t: [t["a"], t["b"], t["c"], 64, 64, 64], lambda t: torch.matmul(t["a"], t["b"])),
        ]
        for name, tile, kern, make, targs, tfn in cases:
            print(f"== host: {name}", flush=True)
            t = make()
            k = self.module(tile).kernel(kern)
            args = targs(t)
            k(*args)
            torch.cuda.synchronize()
            sides = {
                "tilec C": lambda: self.timer.host_c(k, args, n),
                "tilec Python": lambda: Timer.host_py(lambda: k(*args), n),
                "torch eager": lambda: Timer.host_py(lambda: tfn(t), n),
            }
            if not self.args.no_compile:
                f = self.compiled(tfn, None)
                f(t)
                sides["torch.compile"] = lambda: Timer.host_py(lambda: f(t), n)
            host_sides(self, name, sides, rounds, n)  # the eager sides, before any capture
            # CUDA-graph replay of each: one call captured, the replay enqueued
            stream_of = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731
            graphs = {"tilec (CUDA graph replay)": lambda: k(*args, stream=stream_of()),
                      "torch eager (CUDA graph replay)": lambda: tfn(t)}
            if not self.args.no_compile:
                graphs["torch.compile (CUDA graph replay)"] = lambda: f(t)
            sides = {}
            for gname, call in graphs.items():
                add_graph_replay(self, name, sides, gname, call, n)
            host_sides(self, name, sides, rounds, n)


# ---- a graph: chain8, every way of calling it ----------------------------

def chain8_torch(x):
    """bench/wrapper/chain8.tile's graph in torch: eight elementwise ops."""
    t = torch.relu(x * 2.0 + 1.0)
    return torch.clamp_max((-t) * (-t) * 0.5 - 3.0, 4.0)


def chain8_torch_capture(x):
    """chain8_torch under another code object: what the torch.compile CUDA-graph side compiles."""
    return chain8_torch(x)


def graph_host(run):
    """Host µs per call of bench/wrapper/chain8.tile (eight small kernels in a
    row) on N = 4096, by the host-time method: the generated C wrapper, the
    generated Python wrapper (one native call per graph call), CUDA-graph
    replay from Python (chain8.load(cuda_graph=True); and with static
    outputs, capture(static_outputs=True), the contract of torch's CUDA-graph
    replays: the next call overwrites the last one's outputs) and from C
    (tilec_plan_run of the same plan with graphs on, and without), torch
    eager and torch.compile (and their CUDA-graph replay); then one of its
    kernels called directly from Python (tilec.Kernel) against the C
    runtime's launch and a bare launch (tilec_rt_launch: cuLaunchKernel
    with the arguments packed, nothing else)."""
    import tempfile
    n, rounds, N = 256, 21, 4096
    case = f"chain8 N={N}"
    print(f"== host: {case}", flush=True)
    tilec_bin = os.environ.get("TILEC_BIN") or os.environ.get("TILEC_COMPILE_WORKER") or \
        os.path.join(ROOT, "build", "bin", "tilec")
    gen = tempfile.mkdtemp(prefix="tilec_bench_chain8_")
    subprocess.run([tilec_bin, os.path.join(ROOT, "bench", "wrapper", "chain8.tile"), "--emit", "py", "-o", gen],
                   check=True)
    sys.path.insert(0, gen)
    import chain8
    x = randn(N)
    graph = chain8.load()
    err = rel_err(chain8.call(x), chain8_torch(x))
    run.emit({"kind": "graph_check", "case": case, "ok": err < 1e-5, "rel_err": err})
    if not err < 1e-5:
        print(f"  chain8: WRONG (rel err {err})", flush=True)
        return
    stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream or None)  # noqa: E731
    cerr = ctypes.create_string_buffer(1024)
    P = ctypes.c_void_p

    def c_call(fn, *args):
        us = ctypes.c_double()
        torch.cuda.synchronize()
        if fn(*args, ctypes.byref(us), cerr, len(cerr)) != 0:
            raise RuntimeError(cerr.value.decode())
        torch.cuda.synchronize()
        return us.value

    # the generated C wrapper (libtilec_chain8.so: chain8.c + tg.c)
    glib = ctypes.CDLL(os.environ.get("TILEC_CHAIN8_LIB") or os.path.join(ROOT, "build", "bench", "libtilec_chain8.so"))
    glib.tg_load.argtypes = [P, P, P, ctypes.c_size_t]
    glib.tg_host_us.argtypes = [P, ctypes.c_uint64, ctypes.c_int64, ctypes.c_int, P, P, ctypes.c_size_t]
    cmod = ctypes.c_void_p()
    if glib.tg_load(run.tdev._h, ctypes.byref(cmod), cerr, len(cerr)) != 0:
        raise RuntimeError(cerr.value.decode())
    # the plan from C: one buffer per tensor slot, then N
    slot_bufs = [torch.empty(N, device=DEV) for _ in chain8._TENSORS]
    slots = (tilec._library._Arg * (len(slot_bufs) + 1))()
    for i, b in enumerate(slot_bufs):
        slots[i].ptr = b.data_ptr()
    slots[len(slot_bufs)].i64 = N
    lib = run.timer.lib
    lib.tb_plan_host_us.argtypes = [P, P, ctypes.c_uint32, P, ctypes.c_int, P, P, ctypes.c_size_t]
    lib.tb_bare_us.argtypes = [P, P, P, P, ctypes.c_int, P, P, ctypes.c_size_t]

    def py_wrapper(graphs, static=False):
        graph.capture(static_outputs=static) if graphs else graph.eager()
        for _ in range(3):  # with graphs: the first call records, the others replay
            chain8.call(x)
        return Timer.host_py(lambda: chain8.call(x), n)

    def c_plan(graphs):
        graph.capture() if graphs else graph.eager()
        c_call(lib.tb_plan_host_us, graph._h, slots, len(slots), stream(), 3)
        return c_call(lib.tb_plan_host_us, graph._h, slots, len(slots), stream(), n)

    glib.tg_set_graphs.argtypes = [P, ctypes.c_uint, P, ctypes.c_size_t]

    def c_wrapper(graphs):
        if glib.tg_set_graphs(cmod, 8 if graphs else 0, cerr, len(cerr)) != 0:
            raise RuntimeError(cerr.value.decode())
        c_call(glib.tg_host_us, cmod, x.data_ptr(), N, 3)  # with graphs: the first call records
        return c_call(glib.tg_host_us, cmod, x.data_ptr(), N, n)

    # two tables: the eager calls first, then the CUDA-graph replays, so no
    # capture (tilec's or torch's) has happened in the process while an
    # eager side is timed
    sides = {
        "tilec C wrapper": lambda: c_wrapper(False),
        "tilec Python wrapper": lambda: py_wrapper(False),
        "tilec C plan (tilec_plan_run)": lambda: c_plan(False),
        "torch eager": lambda: Timer.host_py(lambda: chain8_torch(x), n),
    }
    if not run.args.no_compile:
        compiled = run.compiled(chain8_torch, None)
        compiled(x)
        sides["torch.compile"] = lambda: Timer.host_py(lambda: compiled(x), n)
    host_sides(run, case, sides, rounds, n)
    sides = {
        "tilec C wrapper (CUDA graph replay)": lambda: c_wrapper(True),
        "tilec Python wrapper (CUDA graph replay)": lambda: py_wrapper(True),
        "tilec Python wrapper (CUDA graph replay, static outputs)": lambda: py_wrapper(True, True),
        "tilec C plan (CUDA graph replay)": lambda: c_plan(True),
    }
    captured = None
    if not run.args.no_compile:
        # the replay side captures a compiled function of its own (another
        # code object: dynamo keeps its cache apart from the eager side's)
        captured = torch.compile(chain8_torch_capture)
        captured(x)
    for gname, fn in (("torch eager (CUDA graph replay)", chain8_torch),
                      ("torch.compile (CUDA graph replay)", captured)):
        if fn is not None:
            add_graph_replay(run, case, sides, gname, lambda fn=fn: fn(x), n)
    host_sides(run, case, sides, rounds, n)
    graph.eager()
    glib.tg_set_graphs(cmod, 0, cerr, len(cerr))
    glib.tg_unload(cmod)

    # one kernel of it: Python's checked call against C's launch and a bare launch
    kcase = f"chain8 kernel scale2 N={N}"
    print(f"== host: {kcase}", flush=True)
    k = graph.module.kernel("scale2", 0)
    t = torch.empty(N, device=DEV)
    args = [x, t, N]
    packed = pack(k, args)
    handle = tilec._library.lib().tilec_program_kernel(graph.module._prog, b"scale2", 0)
    grid = (ctypes.c_uint32 * 3)(-(-N // 1024), 1, 1)  # chain8.tile: BLOCK = 1024
    ksides = {
        "tilec Python (Kernel call)": lambda: Timer.host_py(lambda: k(x, t, N), n),
        "tilec C (tilec_program_launch_best)": lambda: run.timer.host_c(k, args, n),
        "bare launch (C, tilec_rt_launch)": lambda: c_call(lib.tb_bare_us, handle, grid, packed, stream(), n),
    }
    host_sides(run, kcase, ksides, rounds, n)


def add_graph_replay(run, case, sides, gname, call, n):
    """sides[gname]: the CUDA-graph replay of one captured call() (three
    warm-up calls on a side stream first); a failure is recorded instead."""
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                call()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            call()
        g.replay()
        torch.cuda.synchronize()
        sides[gname] = (lambda g=g: Timer.host_py(g.replay, n))
    except Exception as e:
        run.emit({"kind": "host", "case": case, "side": gname, "error": str(e)[:300]})


def machine_busy(secs=0.5):
    """CPUs the whole machine keeps busy over secs (/proc/stat; idle and
    iowait do not count), the CPUs the hypervisor took (steal), and this
    process's share of one CPU while it sleeps."""
    def system():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        return sum(v) - v[3] - v[4] - v[7], v[7], sum(v)  # busy, steal, total
    def own():
        with open("/proc/self/stat") as f:
            v = f.read().rsplit(")", 1)[1].split()
        return int(v[11]) + int(v[12])
    (b0, s0, t0), o0 = system(), own()
    time.sleep(secs)
    (b1, s1, t1), o1 = system(), own()
    ncpu, total = os.cpu_count() or 1, max(t1 - t0, 1)
    return (b1 - b0) / total * ncpu, (s1 - s0) / total * ncpu, (o1 - o0) / os.sysconf("SC_CLK_TCK") / secs


def host_env(limit_s=120):
    """Wait for a quiet machine before a host table (torch.compile leaves
    compile workers that import torch for seconds after it returns: they
    are shut down, and the table waits until the machine keeps under half a
    CPU busy, at most limit_s), then what else runs: this process's
    threads, the machine's busy CPUs, the CPUs the hypervisor took, this
    process's share of one while it sleeps, and the seconds waited."""
    try:
        from torch._inductor import async_compile
        getattr(async_compile, "shutdown_compile_workers", lambda: None)()
    except Exception:  # noqa: BLE001 (an older or newer torch: then only the wait)
        pass
    t0 = time.time()
    busy, steal, own = machine_busy()
    while busy > 0.5 and time.time() - t0 < limit_s:
        busy, steal, own = machine_busy()
    return {"threads": len(os.listdir("/proc/self/task")), "machine_busy_cpus": round(busy, 2),
            "steal_cpus": round(steal, 2), "busy": round(own, 2), "waited_s": round(time.time() - t0, 1)}


def host_sides(run, case, sides, rounds, n):
    """Each side's host µs per call: the median of `rounds` rounds, recorded.
    The rounds go round the sides (side 1, side 2, ..., then again), so a
    host that speeds up or slows down during the table (a shared GPU
    machine's CPU does) moves every side alike; a side that fails is
    recorded with its error and left out of the later rounds."""
    vals = {side: [] for side in sides}
    errors = {}
    env = host_env()
    run.emit(dict({"kind": "host_env", "case": case}, **env))
    print(f"  ({env['threads']} threads in this process; the machine keeps {env['machine_busy_cpus']} CPUs busy, "
          f"steal {env['steal_cpus']}, this process {env['busy']:.0%} of one while it sleeps; waited "
          f"{env['waited_s']} s for that)", flush=True)
    for _ in range(rounds):
        for side, fn in sides.items():
            if side in errors:
                continue
            try:
                vals[side].append(fn())
            except Exception as e:
                errors[side] = e
    for side in sides:
        if side in errors:
            rec = {"kind": "host", "case": case, "side": side, "error": str(errors[side])[:300]}
            print(f"  {side:42s} ERROR {errors[side]}", flush=True)
        else:
            v = vals[side]
            rec = {"kind": "host", "case": case, "side": side, "us": statistics.median(v), "us_min": min(v),
                   "us_max": max(v), "n": n, "rounds": rounds}
            print(f"  {side:42s} {rec['us']:7.2f} us/call", flush=True)
        run.emit(rec)


def arg_parser():
    """The harness's options; ladder.py parses its Run's from these too, so
    every option Run reads has its default there."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", action="append", help="run the workloads whose name contains this (repeatable)")
    ap.add_argument("--family", action="append", help="run only these families (matmul, softmax, ...)")
    ap.add_argument("--autotune", action="store_true",
                    help="also torch.compile max-autotune-no-cudagraphs on the matmul workloads")
    ap.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    ap.add_argument("--compile-only", action="append", metavar="SUBSTR",
                    help="time torch.compile only on the workloads whose name contains this (repeatable)")
    ap.add_argument("--host", action="store_true", help="also the host-cost table (with the chain8 graph rows)")
    ap.add_argument("--graphs", action="store_true", help="the chain8 graph rows of the host-cost table alone")
    ap.add_argument("--no-device", action="store_true", help="skip the device-time workloads")
    ap.add_argument("--tilec-only", action="store_true",
                    help="time the tilec sides alone (no torch eager, other sides, torch.compile, device copy)")
    ap.add_argument("--power", action="store_true",
                    help="record each timed loop's energy a call, SM clock and power draw (NVML)")
    ap.add_argument("--tag", default="run")
    ap.add_argument("--tables-from", nargs="+", metavar="JSONL",
                    help="print issue 31's tables (GEMMs, row kernels) from these records and exit (no device)")
    return ap


def main():
    args = arg_parser().parse_args()
    if args.tables_from:
        return tables_from(args.tables_from)
    if not torch.cuda.is_available():
        print("SKIP: bench/harness: no CUDA device")
        return 0
    r = Run(args)
    r.env()
    if not args.no_device:
        ws = workloads()
        if args.family and "issue31" in args.family:  # the row figures first: quick, and kept if a limit cuts the run
            ws.sort(key=lambda w: w.family not in ("softmax", "layernorm", "tuned"))
        for w in ws:
            if args.only and not any(s in w.name for s in args.only):
                continue
            if args.family and w.family not in args.family and not ("issue31" in args.family and issue31_selects(w)):
                continue
            if w.family in ("forms", "attnforms", "convforms", "llmforms", "tuned", "handtuned", "llm") and not args.family and not args.only:
                continue  # issue 29's forms, issue 31's tuned rows and hand-tuned GEMMs, issue 35's LLM set: runs of their own (--family)
            try:
                r.workload(w)
            except Exception as e:  # keep going: the record says what failed
                r.emit({"kind": "check", "workload": w.name, "ok": False, "error": str(e)[:500]})
                print(f"  ERROR {e}", flush=True)
            torch.cuda.empty_cache()
        if args.family and "forms" in args.family:
            print("\n" + forms_table(r.records), flush=True)
        if args.family and "issue31" in args.family:
            print("\n" + env_header(r.records) + "\n\n" + issue31_table(r.records), flush=True)
        elif any(rec.get("workload", "").endswith(" tuned") and rec.get("workload", "").split()[0] in
                 ("softmax", "layernorm") for rec in r.records):
            print("\n" + rows_tuned_table(r.records), flush=True)
        if args.family and ("llm" in args.family or "llmforms" in args.family):
            print("\n" + llm_table(r.records), flush=True)
        if args.family and "handtuned" in args.family and "issue31" not in args.family:
            print("\n" + gemm_tuned_table(r.records), flush=True)
    if args.host:
        r.host()
    if args.host or args.graphs:
        graph_host(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
