"""performance.py: one table of every benchmark's workloads from the result
files of bench/run_all.sh, written as performance.md.

    python3 bench/performance.py RESULTS_DIR OUT.md DEVICE DATE

Reads kernels_tilec.jsonl, kernels_torch.jsonl, runtime.jsonl,
multikernel.jsonl, wrapper.jsonl and e2e.log from RESULTS_DIR; a missing
file leaves its rows out and says so. "vs" is how many times faster tilec
is (the other side's time over tilec's; above 1 is better for tilec)."""
import json
import os
import re
import statistics
import sys


def jsonl(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def fmt_ms(ms):
    return f"{ms * 1e3:.1f} µs" if ms < 0.1 else f"{ms:.3f} ms" if ms < 100 else f"{ms:.0f} ms"


WHY = [
    ("Python wrapper", "each launch is a ctypes call (eight `tilec.Kernel` calls alone take about 53 µs, the "
     "driver's share about 25 µs); one call per graph (a launch list in the runtime or CUDA graphs) is the "
     "way down. See bench/results/wrapper.md."),
    ("e2e per call", "`e2e` runs one kernel per step and moves 128 MiB per call; it runs at the rate of a device "
     "copy of those bytes (the copy row above). torch.compile fuses the steps; `e2e_fused`, the same graph "
     "with the row steps in one kernel, meets the bar."),
    ("multi-kernel", "the sweep times the multi-kernel and each single variant in separate passes, so "
     "run-to-run noise of a few percent shows as a miss at some M (bench/results/multikernel.md)."),
    ("dispatch", "see bench/results/multikernel.md."),
    ("C wrapper", "see bench/results/wrapper.md."),
]


def why(bar):
    for key, text in WHY:
        if bar.startswith(key):
            return text
    return "see the benchmark's own report."


def main(d, out, device, date):
    rows, missing, bars = [], [], []

    def row(section, workload, tilec, other, other_name, note=""):
        rows.append((section, workload, tilec, other, other_name, note))

    tk, tt = jsonl(f"{d}/kernels_tilec.jsonl"), jsonl(f"{d}/kernels_torch.jsonl")
    if tk and tt:
        best = {}
        for r in tk:
            if r["workload"] not in best or r["ms"] < best[r["workload"]]["ms"]:
                best[r["workload"]] = r
        torch = {r["workload"]: r for r in tt}
        for w, r in best.items():
            if w in torch:
                row("kernels", w, r["ms"], torch[w]["ms"], "torch.compile", f"best variant {r['kernel']}")
    else:
        missing.append("kernels")

    rt = jsonl(f"{d}/runtime.jsonl")
    if rt:
        for r in rt:
            if r["bench"] == "launch":
                row("runtime", "launch, host µs", r["tilec_us"] / 1e3, r["bare_us"] / 1e3, "bare cuLaunchKernel")
        cold = [r for r in rt if r["bench"] == "cold"]
        warm = [r for r in rt if r["bench"] == "warm"]
        if cold and warm:
            row("runtime", f"examples module ({cold[0]['kernels']} kernels): warm start vs cold",
                statistics.median(r["build_ms"] for r in warm), cold[0]["build_ms"], "tilec cold")
        pool = [r for r in rt if r["bench"] == "pool"]
        if pool:
            one = [r for r in pool if r["threads"] == 1]
            top = max(pool, key=lambda r: r["threads"])
            if one:
                row("runtime", f"32 kernels compiled, {top['threads']} workers vs 1", top["ms"], one[0]["ms"],
                    "1 thread")
    else:
        missing.append("runtime")

    mk = jsonl(f"{d}/multikernel.jsonl")
    if mk:
        for kern in sorted({r["kernel"] for r in mk}):
            sweep = [r for r in mk if r["bench"] == "sweep" and r["kernel"] == kern]
            if sweep:
                worst = max(sweep, key=lambda r: r["mk"] / min(r["v"]))
                ratio = worst["mk"] / min(worst["v"])
                row("multi-kernel", f"{kern} sweep, worst M={worst['M']}", worst["mk"], min(worst["v"]),
                    "best single variant", f"{ratio:.3f}x of best")
                bars.append((f"multi-kernel {kern} within 1.05x of the best variant at every M",
                             f"worst {ratio:.3f}x at M={worst['M']}", ratio <= 1.05))
            for r in mk:
                if r["bench"] == "dispatch" and r["kernel"] == kern:
                    over = r["mk_us"] - r["direct_us"]
                    row("multi-kernel", f"{kern} dispatch, host µs", r["mk_us"] / 1e3, r["direct_us"] / 1e3,
                        "direct launch", f"+{over:.2f} µs")
                    bars.append((f"{kern} dispatch overhead ≤ 0.5 µs", f"+{over:.2f} µs", over <= 0.5))
    else:
        missing.append("multikernel")

    wr = jsonl(f"{d}/wrapper.jsonl")
    if wr:
        for r in wr:
            if r["bench"] == "c_wrapper":
                ratio = r["wrapper_us"] / r["bare_us"]
                row("wrapper", f"chain8 C wrapper, N={r['n']}, host µs per call", r["wrapper_us"] / 1e3,
                    r["bare_us"] / 1e3, "8 bare cuLaunchKernel", f"{ratio:.2f}x of bare")
                bars.append((f"C wrapper ≤ 1.2x 8 bare launches (N={r['n']})", f"{ratio:.2f}x", ratio <= 1.2))
            if r["bench"] == "py_wrapper":
                row("wrapper", f"chain8 Python wrapper, N={r['n']}, host µs per call", r["py_wrapper_us"] / 1e3,
                    r["torch_compile_us"] / 1e3, "torch.compile")
                bars.append((f"Python wrapper ≤ 40 µs per call (N={r['n']})", f"{r['py_wrapper_us']:.1f} µs",
                             r["py_wrapper_us"] <= 40))
    else:
        missing.append("wrapper")

    if os.path.exists(f"{d}/e2e.log"):
        log = open(f"{d}/e2e.log").read()
        tl = {}
        for m in re.finditer(r"^tilec( fused)? (cold|warm): \S+: load ([\d.]+) ms \S+: ([\d.]+) ms per call", log, re.M):
            tl[(bool(m.group(1)), m.group(2))] = (float(m.group(3)), float(m.group(4)))
        th = {}
        for m in re.finditer(r"^torch (cold|warm): (\{.*\})", log, re.M):
            th[m.group(1)] = json.loads(m.group(2))
        if ("cold" in th and "warm" in th):
            for fused in (False, True):
                name = "e2e_fused" if fused else "e2e"
                if (fused, "cold") in tl:
                    c, w = tl[(fused, "cold")], tl[(fused, "warm")]
                    row("end to end", f"{name}: first call, empty caches", c[0], th["cold"]["first_ms"], "torch.compile")
                    row("end to end", f"{name}: first call, warm caches", w[0], th["warm"]["first_ms"], "torch.compile")
                    row("end to end", f"{name}: per call [4096, 1024] f32", w[1], th["warm"]["call_ms"], "torch.compile")
                    bars.append((f"{name} cold ≥ 10x faster", f"{th['cold']['first_ms'] / c[0]:.0f}x",
                                 th["cold"]["first_ms"] / c[0] >= 10))
                    bars.append((f"{name} warm start ≥ 100x faster", f"{th['warm']['first_ms'] / w[0]:.0f}x",
                                 th["warm"]["first_ms"] / w[0] >= 100))
                    bars.append((f"{name} per call ≤ 0.5x torch.compile", f"{w[1] / th['warm']['call_ms']:.2f}x",
                                 w[1] / th["warm"]["call_ms"] <= 0.5))
            if "copy4_ms" in th["warm"]:
                row("end to end", "device copy of 64 MiB (the unfused graph's traffic)", th["warm"]["copy4_ms"],
                    th["warm"]["copy4_ms"], "itself", "floor for e2e")
    else:
        missing.append("e2e")

    with open(out, "w") as f:
        f.write("# Performance\n\n")
        f.write(f"Run on {device}, {date}, by `bench/run_all.sh` (what `make bench` runs); each figure is from the "
                "benchmark named in its section, whose own report (`bench/results/*.md`) says how it was "
                "timed. Device times are medians of device-event timings on inputs larger than L2 unless "
                "the row says host µs. **vs**: the other side's time over tilec's (above 1: tilec is faster).\n\n")
        f.write("| section | workload | tilec | other | other side | vs | note |\n")
        f.write("| --- | --- | ---: | ---: | --- | ---: | --- |\n")
        for s, w, t, o, on, note in rows:
            f.write(f"| {s} | {w} | {fmt_ms(t)} | {fmt_ms(o)} | {on} | {o / t:.2f}x | {note} |\n")
        if bars:
            f.write("\n## The issues' bars\n\n| bar | measured | met |\n| --- | --- | --- |\n")
            for b, m, ok in bars:
                f.write(f"| {b} | {m} | {'yes' if ok else '**no**'} |\n")
            missed = [b for b, _, ok in bars if not ok]
            if missed:
                f.write("\nWhy each missed bar was missed:\n\n")
                for b in missed:
                    f.write(f"- {b}: {why(b)}\n")
        if missing:
            f.write(f"\nNot in this run: {', '.join(missing)}.\n")
        f.write("\n## Plots\n\n![kernels](../bench/results/kernels.png)\n\n"
                "![multi-kernel](../bench/results/multikernel.png)\n")


if __name__ == "__main__":
    main(*sys.argv[1:5])
