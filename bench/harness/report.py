"""report.py: the tables and the plot of the benchmark harness.

    python3 bench/harness/report.py OUT.md OUT.png RESULTS.jsonl [MORE.jsonl ...]

Reads the records bench.py wrote (one or more files; each run has its own
tag) and writes a Markdown report: the method and environment, one device-
time table per family, tilec C against tilec Python, the host cost per call,
the workloads where tilec is below the best other side, and, when two runs
measured the same workload, how far their ratios moved. The ratio is always
the best other side's median over tilec's (through the C runtime), from the
same run: above 1, tilec is faster. The plot needs matplotlib; without it
only the Markdown is written.
"""
import json
import os
import sys
from collections import OrderedDict, defaultdict

FAMILIES = ["elementwise", "softmax", "layernorm", "matmul", "attention", "conv_f32"]


def load(paths):
    recs = []
    for p in paths:
        with open(p) as f:
            recs += [json.loads(line) for line in f if line.strip()]
    return recs


def fmt_ms(ms):
    if ms is None:
        return "-"
    return f"{ms * 1e3:.1f} µs" if ms < 0.1 else f"{ms:.3f} ms"


def covered(r):
    """Did the device stay busy while the host enqueued this side's call?
    The host keeps ahead when its time per repetition (median of the first
    16) is below the device's: the flush plus the call itself."""
    return r["host_us_per_rep"] < r["flush_us"] + r["median_ms"] * 1e3


def spread(r):
    m = r["median_ms"]
    return max(r["median_ms"] - r["p20_ms"], r["p80_ms"] - r["median_ms"]) / m * 100 if m else 0.0


class RunView:
    """The records of one tag (one run of bench.py)."""

    def __init__(self, recs):
        self.env = next((r for r in recs if r.get("kind") == "env"), {})
        self.checks = {r["workload"]: r for r in recs if r.get("kind") == "check"}
        self.dev = defaultdict(dict)  # workload -> side -> record
        self.order = OrderedDict()
        for r in recs:
            if r.get("kind") == "device":
                self.dev[r["workload"]][r["side"]] = r
                self.order.setdefault(r["workload"], r.get("family"))
        for w, c in self.checks.items():
            self.order.setdefault(w, None)
        self.host = [r for r in recs if r.get("kind") == "host"]

    def row(self, w):
        sides = self.dev.get(w, {})
        tc = sides.get("tilec C")
        others = {s: r for s, r in sides.items() if r.get("other") and "median_ms" in r}
        best_side = min(others, key=lambda s: others[s]["median_ms"]) if others else None
        ratio = others[best_side]["median_ms"] / tc["median_ms"] if best_side and tc and "median_ms" in tc else None
        return tc, others, best_side, ratio


def by_tag(recs):
    tags = OrderedDict()
    for r in recs:
        tags.setdefault(r.get("tag", "run"), []).append(r)
    return OrderedDict((t, RunView(rs)) for t, rs in tags.items())


def primary(recs):
    """The view the tables show: the first run's records, and for each
    workload that run did not measure (a run narrowed to some families)
    the next run's records of it, named in `filled` with their tag; each
    host case (its host, graph_check and host_env records) from the first
    run that measured it, named in `host_from` with its tag."""
    tags = OrderedDict()
    for r in recs:
        tags.setdefault(r.get("tag", "run"), []).append(r)
    runs = list(tags.items())
    first = runs[0][1]
    have = {r["workload"] for r in first if r.get("kind") in ("device", "check")}
    hostkinds = ("host", "graph_check", "host_env")
    rows = [r for r in first if r.get("kind") not in hostkinds]
    filled = OrderedDict()
    host_from = OrderedDict()
    for tag, rs in runs:
        if tag != runs[0][0]:
            new = {r["workload"] for r in rs if r.get("kind") in ("device", "check")} - have
            for r in rs:
                if r.get("kind") in ("device", "check") and r["workload"] in new:
                    rows.append(r)
                    filled.setdefault(r["workload"], tag)
            have |= new
        cases = {r["case"] for r in rs if r.get("kind") == "host"} - set(host_from)
        for r in rs:
            if r.get("kind") in hostkinds and r.get("case") in cases:
                rows.append(r)
        for c in sorted(cases, key=lambda c: next(i for i, r in enumerate(rs) if r.get("case") == c)):
            host_from[c] = tag
    view = RunView(rows)
    view.filled = filled
    view.host_from = host_from
    return view


def device_tables(out, view):
    fams = OrderedDict()
    for w, fam in view.order.items():
        fam = fam or next((r.get("family") for r in view.dev.get(w, {}).values() if r.get("family")), "other")
        fams.setdefault(fam, []).append(w)
    for fam in sorted(fams, key=lambda f: FAMILIES.index(f) if f in FAMILIES else 99):
        out.append(f"\n### {fam}\n")
        compute = fam in ("matmul", "attention", "conv_f32")
        out.append("| workload | tilec (C) | ± | tilec (Python) | torch eager | torch.compile | "
                   + ("max-autotune | " if fam == "matmul" else "")
                   + "best other | ratio | " + ("TFLOP/s | of peak |" if compute else "GB/s | of copy |")
                   + " check | variant |")
        out.append("| --- | ---: | ---: | ---: | ---: | ---: | " + ("---: | " if fam == "matmul" else "")
                   + "--- | ---: | ---: | ---: | ---: | ---: |")
        for w in fams[fam]:
            sides = view.dev.get(w, {})
            tc, others, best, ratio = view.row(w)
            chk = view.checks.get(w, {})
            py = sides.get("tilec Python")
            eager = next((r for s, r in sides.items() if r.get("other") and not s.startswith("torch.compile")), None)
            comp = sides.get("torch.compile")
            auto = sides.get("torch.compile max-autotune-no-cudagraphs")
            copy = sides.get("device copy")

            def med(r):
                if r is None:
                    return "-"
                if "median_ms" not in r:
                    return "error"
                return fmt_ms(r["median_ms"]) + ("" if covered(r) else " †")
            if chk.get("ok") is False:
                check = f"**wrong** ({chk.get('rel_err', float('nan')):.1e})" if "rel_err" in chk else \
                    f"**error**: {chk.get('error', '')[:80]}"
            else:
                check = f"{chk.get('rel_err', float('nan')):.1e}" if chk else "-"
            if tc and "median_ms" in tc:
                if compute:
                    rate = tc["flops"] / tc["median_ms"] / 1e9
                    frac = f"{rate / tc['peak_tflops'] * 100:.0f}%" if tc.get("peak_tflops") else "-"
                    rate_s = f"{rate:.0f}"
                else:
                    rate = tc["bytes"] / tc["median_ms"] / 1e6
                    rate_s = f"{rate:.0f}"
                    frac = f"{copy['median_ms'] / tc['median_ms'] * 100:.0f}%" if copy and "median_ms" in copy else "-"
                sp = f"{spread(tc):.1f}%"
            else:
                rate_s = frac = sp = "-"
            best_s = f"{best} {fmt_ms(others[best]['median_ms'])}" if best else "-"
            ratio_s = "-" if ratio is None else (f"**{ratio:.2f}x**" if ratio < 1 else f"{ratio:.2f}x")
            name = w + (" ‡" if w in getattr(view, "filled", {}) else "")
            cells = [name, med(tc), sp, med(py), med(eager), med(comp)] + ([med(auto)] if fam == "matmul" else []) + \
                [best_s, ratio_s, rate_s, frac, check, str(chk.get("variant", "-"))]
            out.append("| " + " | ".join(cells) + " |")


def c_vs_python(out, view):
    out.append("\n| workload | tilec C | tilec Python | Python / C | C spread | agree |")
    out.append("| --- | ---: | ---: | ---: | ---: | --- |")
    for w in view.order:
        s = view.dev.get(w, {})
        c, p = s.get("tilec C"), s.get("tilec Python")
        if not (c and p and "median_ms" in c and "median_ms" in p):
            continue
        r = p["median_ms"] / c["median_ms"]
        noise = max(spread(c), spread(p), 2.0) / 100
        agree = "yes" if abs(r - 1) <= noise else f"**no** (beyond ±{noise * 100:.1f}%)"
        out.append(f"| {w} | {fmt_ms(c['median_ms'])} | {fmt_ms(p['median_ms'])} | {r:.3f} | {spread(c):.1f}% | "
                   f"{agree} |")


def host_table(out, view):
    if not view.host:
        return
    cases = OrderedDict()
    sides = []
    for r in view.host:
        cases.setdefault(r["case"], {})[r["side"]] = r
        if r["side"] not in sides:
            sides.append(r["side"])
    out.append("\n| case | " + " | ".join(sides) + " |")
    out.append("| --- |" + " ---: |" * len(sides))
    for case, rs in cases.items():
        cells = []
        for s in sides:
            r = rs.get(s)
            cells.append("-" if r is None else ("error" if "us" not in r else f"{r['us']:.1f}"))
        out.append(f"| {case} | " + " | ".join(cells) + " |")


def losses(out, view):
    rows = []
    for w in view.order:
        tc, others, best, ratio = view.row(w)
        if ratio is not None and ratio < 1:
            rows.append((ratio, w, best))
        chk = view.checks.get(w)
        if chk and chk.get("ok") is False:
            rows.append((0.0, w, "tilec's result is wrong: not timed"))
    for ratio, w, best in sorted(rows):
        out.append(f"- {w}: {ratio:.2f}x of {best}" if ratio else f"- {w}: {best}")
    if not rows:
        out.append("- none")


def repro(out, views):
    tags = list(views)
    if len(tags) < 2:
        return False
    a, b = views[tags[0]], views[tags[1]]
    out.append(f"\n| workload | ratio ({tags[0]}) | ratio ({tags[1]}) | change | within ±5% |")
    out.append("| --- | ---: | ---: | ---: | --- |")
    worst = 0.0
    for w in a.order:
        ra, rb = a.row(w)[3], b.row(w)[3]
        if ra is None or rb is None:
            continue
        ch = (rb / ra - 1) * 100
        worst = max(worst, abs(ch))
        out.append(f"| {w} | {ra:.2f}x | {rb:.2f}x | {ch:+.1f}% | {'yes' if abs(ch) <= 5 else '**no**'} |")
    out.append(f"\nLargest change of a ratio between the two runs: {worst:.1f}%.")
    return True


def plot(png, view):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    names, ratios, colors = [], [], []
    for w in view.order:
        r = view.row(w)[3]
        if r is None:
            continue
        names.append(w)
        ratios.append(r)
        colors.append("#2a7" if r >= 1 else "#c43")
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(names) + 1.5))
    ax.barh(range(len(names)), ratios, color=colors)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xlabel("best other side's time / tilec's time (log; > 1: tilec faster)")
    env = view.env
    ax.set_title(f"tilec vs the best of torch eager / torch.compile / cuBLAS — {env.get('device', '')}, "
                 f"{env.get('date', '')[:10]}", fontsize=9)
    for i, r in enumerate(ratios):
        ax.text(r, i, f" {r:.2f}", va="center", fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    return True


def main(md, png, *paths):
    recs = load(paths)
    views = by_tag(recs)
    tag, view = next(iter(views.items()))
    env = view.env
    view = primary(recs)
    out = ["# Benchmarks: tilec against torch eager, torch.compile and cuBLAS", ""]
    out.append(
        f"Measured on {env.get('device', '?')} ({env.get('sms', '?')} SMs, {env.get('l2_mb', 0):.0f} MB L2; "
        f"nvidia-smi: {env.get('nvidia_smi', '?')}) on {env.get('date', '?')} with torch {env.get('torch', '?')} "
        f"(CUDA {env.get('cuda', '?')}), Triton {env.get('triton', '?')}, Python {env.get('python', '?')}, tilec "
        f"{env.get('tilec', '?')}, by `bench/harness/bench.py` (`make bench`). **Method**, the same for every side "
        f"in one process: warm-up, then for each of 50–500 repetitions a clear of a {env.get('flush_mb', 0):.0f} MiB "
        f"flush buffer ({env.get('flush_us', 0):.0f} µs on the device, longer than any side's host work per call, "
        "which is checked for every figure) (≥ 2x L2, so no input is in L2), a start event, one call, an end event, all enqueued back to "
        "back on one stream with no synchronize until the last; the median of the start-to-end times is the figure "
        "(± is the larger distance from the median to the 20th or 80th percentile). tilec (C) is the same loop "
        "written in C over the runtime (`bench/harness/tb.c`); tilec (Python) calls `tilec.Kernel`. Every result "
        "is checked against a float64 reference (float32 for attention) on fresh random inputs, output poisoned with "
        "NaN, before it is timed. **ratio** = the best other side's median / tilec (C)'s median, from the same run: "
        "above 1 tilec is faster, **bold** below 1. The copy column is a device copy moving the same bytes over "
        "tilec's time (the bandwidth floor); peak is the H100 SXM dense tensor-core rate (989 TFLOP/s f16/bf16, "
        f"67 TFLOP/s f32 without tensor cores). matmul f32: allow_tf32 = {env.get('allow_tf32')}.")
    out.append("\n## Device time\n")
    if view.filled:
        later = sorted(set(view.filled.values()))
        envs = "; ".join(f"{t}: {views[t].env.get('date', '?')}" for t in later)
        out.append(f"Rows marked ‡ are from {', '.join(later)} ({envs}), which measured workloads {tag} "
                   f"({env.get('date', '?')}) did not; every other row is {tag}'s. Each row's sides come "
                   "from one run.")
    device_tables(out, view)
    out.append("\n† the host took longer to enqueue one repetition of this side (median of the first 16) than the "
               "device took to run it (the flush plus the call), so the figure may include launch gaps (none when no "
               "cell is marked).")
    out.append("\n## Where tilec is below the best other side\n")
    losses(out, view)
    out.append("\n## tilec through the C runtime and through Python\n")
    out.append("Both loops enqueue the same launches by the same method; they agree when the ratio is within the "
               "larger of their spreads (at least 2%).")
    c_vs_python(out, view)
    out.append("\n## Host cost per call\n")
    out.append("Microseconds of host time per call on tiny inputs: 256 calls (too few to fill the launch queue) enqueued back to back with no "
               "synchronize, host clock / 256, the median of 21 rounds, the rounds going round the sides. The "
               "CUDA-graph columns replay one captured call (`torch.cuda.CUDAGraph.replay`); a case times its eager "
               "sides before any capture, once the machine is quiet (torch.compile's compile workers shut down).")
    froms = OrderedDict()
    for c, t in getattr(view, "host_from", {}).items():
        froms.setdefault(t, []).append(c)
    if len(froms) > 1 or (froms and next(iter(froms)) != tag):
        out.append("Cases by run: " + "; ".join(
            f"{', '.join(cs)}: {t} ({views[t].env.get('date', '?') if t in views else '?'})"
            for t, cs in froms.items()) + ".")
    host_table(out, view)
    out.append("\n## Reproducibility\n")
    if not repro(out, views):
        out.append("One run only.")
    notes = os.path.join(os.path.dirname(os.path.abspath(__file__)), "notes.md")
    if os.path.exists(notes):  # what limits each family, and the decisions behind the workloads
        with open(notes) as f:
            out.append("\n" + f.read().rstrip("\n"))
    if png and plot(png, view):
        out.append(f"\n![ratios]({os.path.relpath(png, os.path.dirname(os.path.abspath(md)))})")
    with open(md, "w") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
