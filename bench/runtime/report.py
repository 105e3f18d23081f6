"""report.py: bench/results/runtime.md from bench_runtime's JSON lines."""
import json
import sys


def main(src, dst, device, date, cores):
    recs = [json.loads(line) for line in open(src) if line.strip()]
    launch = next(r for r in recs if r["bench"] == "launch")
    cold = [r for r in recs if r["bench"] == "cold"]
    warm = [r for r in recs if r["bench"] == "warm"]
    pool = [r for r in recs if r["bench"] == "pool"]
    ratio = launch["tilec_us"] / launch["bare_us"]
    lines = [
        "# Runtime benchmarks",
        "",
        f"Run on {device} ({cores} CPU cores), {date}, by `bench/runtime/run.sh`.",
        "",
        "## Launch host cost",
        "",
        f"Host time per launch of an empty kernel, median of {launch['batches']} batches of {launch['batch']}"
        " back-to-back launches:",
        "",
        "| path | µs per launch |",
        "| --- | ---: |",
        f"| `tilec_rt_launch` | {launch['tilec_us']:.3f} |",
        f"| bare `cuLaunchKernel` (driver called directly, same CUBIN) | {launch['bare_us']:.3f} |",
        f"| ratio | {ratio:.2f}x |",
        "",
        "## Cold compile and warm start of the examples module",
        "",
        "Every example concatenated into one module; each start in a fresh process (driver open excluded).",
        "",
        "| start | ms | kernels | NVRTC compiles | cache hit | lower ms | compile or cache ms | load ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in cold + warm:
        lines.append(f"| {r['bench']} | {r['build_ms']:.2f} | {r['kernels']} | {r['nvrtc_compiles']} | "
                     f"{'yes' if r['cache_hit'] else 'no'} | {r['lower_ms']:.2f} | {r['compile_ms']:.2f} | {r['load_ms']:.2f} |")
    lines += ["", "## Async compile: 32 distinct kernels, no cache", "",
              "Two builds per thread count on one set of worker processes (`tilec_build_options.workers`):",
              "the first starts the workers (each pays NVRTC's start-up), the second is the steady state.",
              "One thread compiles in the benchmark's process, which has compiled before.", "",
              "| threads | steady ms | speedup over 1 | first build ms (workers starting) |",
              "| ---: | ---: | ---: | ---: |"]
    for r in pool:
        lines.append(f"| {r['threads']} | {r['ms']:.1f} | {r['speedup']:.2f}x | {r.get('first_ms', float('nan')):.1f} |")
    with open(dst, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:6])
