"""Where the fused linear cross-entropy graph's time goes (issue 35): the
graph flce_bf16 of examples/llm.tile (its Python wrapper, as bench.py runs
it) at the issue's size (T 4096, D 4096, V 128256, bf16), each chunk size C
of --chunk: (1) the call timed as bench.py times it (a 512 MiB flush before
each call, CUDA events around the call, the median); (2) a torch.profiler
timeline of --calls calls, each after a flush: every device activity of the
call (kernels, memsets, copies) in order, the call's span from the flush's
end to its last activity, the device's idle time inside it (the lead-in
before the first activity and the gaps between activities), each kernel's
time in the graph summed by name, and the host API calls that took over
50 us (allocations, synchronizations); (3) each of the chunk's kernels alone
after a flush, from the graph's own module, with the graph's arguments of a
middle chunk (flce_parts.py's method): what the graph's kernels take out of
the graph. With --variant zeros-to-empty, the same graph with dw made by
empty() instead of zeros() (gemm_dw's first chunk, add = 0, writes every
element of dw without reading it: the fill is needed only when no chunk
runs), timed as (1): what the 1 GiB fill costs. With --variant cuda-graph,
last, the graph loaded with cuda_graph=True (its calls recorded as CUDA
graphs and replayed), timed as (1): what the host's launches cost.

    python3 bench/harness/flce_timeline.py --out tl.jsonl [--chunk 512 ...] [--trace DIR]
    [--variant zeros-to-empty] [--variant cuda-graph]"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

import tilec  # noqa: E402

T, D, V = 4096, 4096, 128256


def wrapper(tile_path, graph):
    """The Python wrapper of `graph` in tile_path (tilec --emit py), loaded."""
    tilec_bin = os.environ.get("TILEC_BIN") or os.path.join(ROOT, "build", "bin", "tilec")
    gen = tempfile.mkdtemp(prefix="flce_tl_")
    subprocess.run([tilec_bin, tile_path, "--emit", "py", "-o", gen], check=True)
    sys.path.insert(0, gen)
    try:
        mod = __import__(graph)
    finally:
        sys.path.remove(gen)
    mod.load()
    return mod


def timed_calls(fn, flush, reps=20, warmup=3):
    """bench.py's device_py: per call a flush, then events around fn()."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for s, e in ev:
        flush.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    ms = sorted(s.elapsed_time(e) for s, e in ev)
    return statistics.median(ms), ms[len(ms) // 5], ms[(4 * len(ms)) // 5]


def short(name):
    """A kernel's name without its template and argument list."""
    name = re.sub(r"\(.*$", "", name)
    return name if len(name) < 60 else name[:57] + "..."


def timeline(fn, flush, calls, trace_path):
    """The profiler's device activities and slow host API calls of `calls`
    calls of fn, each after a flush (the flush kernel splits the calls)."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            flush.zero_()
            fn()
        torch.cuda.synchronize()
    prof.export_chrome_trace(trace_path)
    with open(trace_path) as f:
        evs = json.load(f)["traceEvents"]
    dev = sorted((e for e in evs if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")),
                 key=lambda e: e["ts"])
    host = [e for e in evs if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
            and e.get("dur", 0) > 50]
    out, cur, flush_end = [], None, None
    for e in dev:
        if e["cat"] == "kernel" and "fill" in e["name"].lower() and "tilec" not in e["name"]:  # torch's zero_
            if cur:
                out.append(cur)
            flush_end = e["ts"] + e["dur"]
            cur = {"flush_end": flush_end, "acts": []}
            continue
        if cur is not None:
            cur["acts"].append(e)
    if cur:
        out.append(cur)
    res = []
    for c in out:
        acts = c["acts"]
        if not acts:
            continue
        first, last = acts[0]["ts"], max(a["ts"] + a["dur"] for a in acts)
        busy = sum(a["dur"] for a in acts)
        gaps, prev_end, prev_name = [], first, None
        for a in acts:
            g = a["ts"] - prev_end
            if prev_name is not None and g > 0:
                gaps.append((g, prev_name, short(a["name"])))
            prev_end, prev_name = max(prev_end, a["ts"] + a["dur"]), short(a["name"])
        by = {}
        for a in acts:
            k = short(a["name"]) if a["cat"] == "kernel" else a["cat"] + ":" + short(a["name"])
            t = by.setdefault(k, [0, 0.0])
            t[0] += 1
            t[1] += a["dur"]
        res.append({
            "span_us": last - c["flush_end"], "lead_in_us": first - c["flush_end"], "busy_us": busy,
            "gap_us": sum(g for g, _, _ in gaps), "n_acts": len(acts),
            "top_gaps": sorted(gaps, reverse=True)[:8],
            "by_name": {k: {"n": v[0], "us": round(v[1], 1)} for k, v in sorted(by.items(), key=lambda kv: -kv[1][1])},
            "seq": [(short(a["name"]) if a["cat"] == "kernel" else a["cat"], round(a["dur"], 1),
                     round(a["ts"] - c["flush_end"], 1)) for a in acts],
        })
    hs = {}
    for e in host:
        t = hs.setdefault(e["name"], [0, 0.0, 0.0])
        t[0] += 1
        t[1] += e["dur"]
        t[2] = max(t[2], e["dur"])
    return res, {k: {"n": v[0], "us": round(v[1], 1), "max_us": round(v[2], 1)} for k, v in hs.items()}


def parts_alone(m, C, flush, tgt, h, w, dw, reps=10):
    """Each kernel of a middle chunk (i = 1, add = 1) alone after a flush."""
    mod = m._graphs[0].module
    S = -(-1024 // C)
    hc, tc = h[C:2 * C], tgt[C:2 * C]
    lc = torch.empty(C, device="cuda")
    dhc = torch.empty(C, D, device="cuda", dtype=torch.bfloat16)
    logits = torch.empty(C, V, device="cuda", dtype=torch.bfloat16)
    part = torch.empty(S, C, D, device="cuda")
    mod.gemm_nt(hc, w, logits, C, V, D)
    mod.ce_fwd_bwd(logits, tc, lc, logits, C, V, 1.0 / T)
    g = logits.clone()
    steps = [("gemm_nt", lambda: mod.gemm_nt(hc, w, logits, C, V, D)),
             ("ce_fwd_bwd", lambda: mod.ce_fwd_bwd(logits, tc, lc, logits, C, V, 1.0 / T)),
             ("gemm_nn_sk", lambda: mod.gemm_nn_sk(g, w, part, C, D, V, S)),
             ("sum_slices", lambda: mod.sum_slices(part, dhc, C * D, S)),
             ("gemm_dw add1", lambda: mod.gemm_dw(g, hc, dw, V, D, C, 1)),
             ("gemm_dw add0", lambda: mod.gemm_dw(g, hc, dw, V, D, C, 0)),
             ("dw fill (cudaMemset 1 GiB)", lambda: dw.zero_())]
    out = {}
    for name, fn in steps:
        med, _, _ = timed_calls(fn, flush, reps=reps, warmup=2)
        out[name] = round(med, 4)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chunk", type=int, action="append")
    ap.add_argument("--calls", type=int, default=2)
    ap.add_argument("--trace", default=None, help="a folder for the profiler's chrome traces")
    ap.add_argument("--variant", action="append", default=[], choices=["zeros-to-empty", "cuda-graph"])
    ap.add_argument("--tag", default="")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("SKIP: flce_timeline: no CUDA device")
        return 0
    llm = os.path.join(ROOT, "examples", "llm.tile")
    m = wrapper(llm, "flce_bf16")
    variants = {}
    if "zeros-to-empty" in args.variant:
        src = open(llm).read()
        start = src.index("graph flce_bf16(")
        body = src[start:]
        new = body.replace("graph flce_bf16(", "graph flce_bf16_noz(", 1).replace(
            "let dw = zeros(bf16, [V, D]);", "let dw = empty(bf16, [V, D]);", 1)
        assert new != body.replace("graph flce_bf16(", "graph flce_bf16_noz(", 1)
        d = tempfile.mkdtemp(prefix="flce_tl_var_")
        path = os.path.join(d, "llm_noz.tile")
        with open(path, "w") as f:
            f.write(src + "\n" + new[:new.index("\n}\n") + 3])
        variants["zeros-to-empty"] = wrapper(path, "flce_bf16_noz")
    flush = torch.empty(512 << 18, dtype=torch.int32, device="cuda")
    g = torch.Generator(device="cuda").manual_seed(0)
    h = (torch.randn(T, D, device="cuda", generator=g) * 0.5).to(torch.bfloat16)
    w = (torch.randn(V, D, device="cuda", generator=g) * 0.02).to(torch.bfloat16)
    tgt = torch.randint(0, V, (T,), device="cuda", dtype=torch.int32, generator=g)
    out = open(args.out, "a")
    trace_dir = args.trace or tempfile.mkdtemp(prefix="flce_tl_trace_")
    os.makedirs(trace_dir, exist_ok=True)
    for C in args.chunk or [512]:
        rec = {"kind": "flce_timeline", "tag": args.tag, "C": C, "device": torch.cuda.get_device_name()}
        fn = lambda: m.call(h, w, tgt, C, 1.0 / T)  # noqa: E731
        ref = fn()
        rec["graph_ms"], rec["graph_p20"], rec["graph_p80"] = timed_calls(fn, flush)
        print(f"== C = {C}: graph {rec['graph_ms']:.3f} ms [{rec['graph_p20']:.3f} .. {rec['graph_p80']:.3f}]",
              flush=True)
        for name, vm in variants.items():
            vfn = lambda: vm.call(h, w, tgt, C, 1.0 / T)  # noqa: E731
            got = vfn()
            same = all(torch.equal(a, b) for a, b in zip(ref, got))
            med, p20, p80 = timed_calls(vfn, flush)
            rec[f"variant_{name}"] = {"ms": med, "p20": p20, "p80": p80, "bitwise_same": same}
            med2, _, _ = timed_calls(fn, flush)  # the graph again after the variant: the drift
            rec["graph_again_ms"] = med2
            print(f"   variant {name}: {med:.3f} ms [{p20:.3f} .. {p80:.3f}], outputs bitwise the graph's: {same}; "
                  f"the graph again {med2:.3f}", flush=True)
        del ref
        tl, host = timeline(fn, flush, args.calls, os.path.join(trace_dir, f"flce_C{C}.json"))
        rec["timeline"], rec["host_api_over_50us"] = tl, host
        for i, c in enumerate(tl):
            print(f"   call {i}: span {c['span_us']:.0f} us = lead-in {c['lead_in_us']:.0f} + busy "
                  f"{c['busy_us']:.0f} + gaps {c['gap_us']:.0f} ({c['n_acts']} activities)", flush=True)
            for k, v in c["by_name"].items():
                print(f"      {k:60s} {v['n']:3d} x  {v['us']:9.1f} us  ({v['us'] / v['n']:.1f} each)")
            print("      top gaps (us, after, before): " + "; ".join(f"{g:.1f} {a} -> {b}" for g, a, b in c["top_gaps"]))
        print("   host API calls over 50 us: " + json.dumps(host), flush=True)
        last = tl[-1]["seq"] if tl else []
        print("   the last call's activities (name, us, start us after the flush):")
        for s in last:
            print(f"      {s[0]:60s} {s[1]:9.1f} {s[2]:10.1f}")
        dw = torch.empty(V, D, device="cuda", dtype=torch.bfloat16)
        rec["alone_ms"] = parts_alone(m, C, flush, tgt, h, w, dw)
        print("   alone after a flush (ms): " + json.dumps(rec["alone_ms"]), flush=True)
        del dw
        out.write(json.dumps(rec) + "\n")
        out.flush()
    if "cuda-graph" in args.variant:  # last: load(cuda_graph=True) keeps the graph in that mode
        m.load(cuda_graph=True)
        for C in args.chunk or [512]:
            fn = lambda: m.call(h, w, tgt, C, 1.0 / T)  # noqa: E731
            med, p20, p80 = timed_calls(fn, flush)
            rec = {"kind": "flce_timeline_cuda_graph", "tag": args.tag, "C": C, "ms": med, "p20": p20, "p80": p80}
            print(f"== C = {C}, load(cuda_graph=True): {med:.3f} ms [{p20:.3f} .. {p80:.3f}]", flush=True)
            out.write(json.dumps(rec) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
