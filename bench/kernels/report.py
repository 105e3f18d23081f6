"""report.py: merge the tilec and torch.compile timings of one run into
bench/results/kernels.md and kernels.png."""
import json
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main(tilec_path, torch_path, md_path, png_path, device, date):
    tl, tc = load(tilec_path), load(torch_path)
    copy = next(r for r in tc if r["workload"].startswith("copy"))
    copy_bw = copy["bytes"] / copy["ms"] / 1e6  # GB/s
    torch_by = {r["workload"]: r for r in tc}
    best = {}
    for r in tl:
        if r["workload"] not in best or r["ms"] < best[r["workload"]]["ms"]:
            best[r["workload"]] = r
    rows = []
    for name, r in best.items():
        t = torch_by.get(name)
        ratio = t["ms"] / r["ms"] if t else float("nan")
        if r["flops"]:
            rate = f"{r['flops'] / r['ms'] / 1e9:.1f} TFLOP/s"
            floor = same = "-"
        else:
            gbs = r["bytes"] / r["ms"] / 1e6
            rate = f"{gbs:.0f} GB/s"
            floor = f"{100 * gbs / copy_bw:.0f}%"
            same = f"{100 * t['copy_ms'] / r['ms']:.0f}%" if t and "copy_ms" in t else "-"
        rows.append((name, r["kernel"], r["ms"], t["ms"] if t else float("nan"), ratio, rate, floor, same))
    lines = [f"# Kernel benchmarks: tilec against torch.compile",
             "",
             f"Run on {device}, {date}, by `bench/kernels/run.sh` (one process each, same machine, same run).",
             "Times are medians of device-event timings after warm-up, rotating input sets larger than L2.",
             f"Copy floor: a 1 GiB device-to-device copy, {copy_bw:.0f} GB/s (bytes read + written).",
             "Speed = torch.compile time / tilec time (above 1: tilec is faster).",
             "",
             "Of copy floor: achieved GB/s over the 1 GiB copy's; of same-size copy: the time of a copy moving",
             "the same bytes over tilec's time (small workloads pay launch and tail costs a 1 GiB copy hides).",
             "",
             "| workload | tilec kernel | tilec ms | torch.compile ms | speed vs torch | rate | of copy floor | of same-size copy |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, k, ms, tms, ratio, rate, floor, same in rows:
        lines.append(f"| {name} | {k} | {ms:.4f} | {tms:.4f} | {ratio:.2f}x | {rate} | {floor} | {same} |")
    lines.append("")
    lines.append("Every variant of a kernel with variants, as timed:")
    lines.append("")
    lines.append("| workload | kernel | ms |")
    lines.append("| --- | --- | ---: |")
    for r in tl:
        lines.append(f"| {r['workload']} | {r['kernel']} | {r['ms']:.4f} |")
    notes = [r for r in tc if r.get("note")]
    if notes:
        lines.append("")
        lines.append("torch.compile notes: " + "; ".join(f"{r['workload']}: {r['note']}" for r in notes))
    with open(md_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        names = [r[0] for r in rows]
        rows = [r[:7] for r in rows]
        fig, ax = plt.subplots(figsize=(10, 4.5))
        x = range(len(names))
        ax.bar([i - 0.2 for i in x], [r[3] / r[2] if r[2] else 0 for r in rows], 0.4, label="tilec (speed vs torch.compile)")
        ax.bar([i + 0.2 for i in x], [1.0 for _ in rows], 0.4, label="torch.compile = 1")
        ax.set_xticks(list(x))
        ax.set_xticklabels(names, rotation=25, ha="right", fontsize=8)
        ax.set_ylabel("speed relative to torch.compile")
        ax.set_title(f"tilec vs torch.compile, {device}, {date}")
        ax.legend()
        fig.tight_layout()
        fig.savefig(png_path, dpi=110)
    except ImportError:
        print("matplotlib missing: no plot")


if __name__ == "__main__":
    main(*sys.argv[1:7])
