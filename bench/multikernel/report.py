"""report.py: bench/results/multikernel.md and multikernel.png from the JSON lines."""
import json
import statistics
import sys


def main(src, md, png, device, date):
    recs = [json.loads(line) for line in open(src) if line.strip()]
    lines = ["# Multi-kernel: size variants chosen per shape", "",
             f"Run on {device}, {date}, by `bench/multikernel/run.sh`. A[M, 4096] @ B[4096, 4096], the kernels of",
             "`bench/multikernel/mm.tile` (variants for M = 64, 256, 4096). Times in ms: device events, median of 25.", ""]
    for kern in ("mm_f16", "mm_f32"):
        table = [r for r in recs if r["bench"] == "table" and r["kernel"] == kern]
        sweep = [r for r in recs if r["bench"] == "sweep" and r["kernel"] == kern]
        disp = next((r for r in recs if r["bench"] == "dispatch" and r["kernel"] == kern), None)
        lines += [f"## {kern}", "", "Before: each single variant, forced.", "",
                  "| variant | M = 64 | M = 256 | M = 4096 |", "| --- | ---: | ---: | ---: |"]
        for k, hint in enumerate((64, 256, 4096)):
            lines.append(f"| hint {hint} | " + " | ".join(f"{r['v'][k]:.4f}" for r in table) + " |")
        lines += ["", "After: the multi-kernel.", "", "| M = 64 | M = 256 | M = 4096 |", "| ---: | ---: | ---: |",
                  "| " + " | ".join(f"{r['mk']:.4f} (v{r['chosen']})" for r in table) + " |", ""]
        ratios = [r["mk"] / min(r["v"]) for r in sweep]
        worst = max(ratios)
        speedups = [statistics.mean(r["v"][k] / r["mk"] for r in sweep) for k in range(3)]
        lines += [f"Sweep M = 64 .. 4096 step 64 ({len(sweep)} sizes): the multi-kernel over the best single variant",
                  f"at each M is {statistics.mean(ratios):.3f}x on average, {worst:.3f}x at worst",
                  f"(M = {sweep[ratios.index(worst)]['M']}). Mean speedup of the multi-kernel over each single variant:",
                  ", ".join(f"hint {h}: {s:.2f}x" for h, s in zip((64, 256, 4096), speedups)) + ".", ""]
        if disp:
            lines += [f"Dispatch host cost (stored choice): {disp['mk_us']:.3f} µs per launch through the multi-kernel,"
                      f" {disp['direct_us']:.3f} µs direct: {disp['mk_us'] - disp['direct_us']:+.3f} µs.", ""]
    with open(md, "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        for ax, kern in zip(axes, ("mm_f16", "mm_f32")):
            sweep = [r for r in recs if r["bench"] == "sweep" and r["kernel"] == kern]
            ms = [r["M"] for r in sweep]
            for k, hint in enumerate((64, 256, 4096)):
                ax.plot(ms, [r["v"][k] for r in sweep], label=f"variant hint {hint}", lw=1)
            ax.plot(ms, [r["mk"] for r in sweep], "k--", label="multi-kernel", lw=1.5)
            ax.set_xlabel("M")
            ax.set_ylabel("ms")
            ax.set_title(f"{kern}: A[M, 4096] @ B[4096, 4096]")
            ax.legend(fontsize=8)
        fig.suptitle(f"{device}, {date}")
        fig.tight_layout()
        fig.savefig(png, dpi=100)
    except ImportError:
        print("matplotlib missing: no plot")


if __name__ == "__main__":
    main(*sys.argv[1:6])
