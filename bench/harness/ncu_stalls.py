"""Sum an Nsight Compute source page (`ncu -i REP --page source --csv
--print-source sass`) per kernel: warp-stall samples per kind, the
instructions with the most samples, the L2 sectors of global loads and
stores (theoretical, and those beyond the ideal: partly used sectors), and
the execution count of each mbarrier wait (a wait's first try and its
retry loop are two instructions: their counts give the polls a wait).

  python3 bench/harness/ncu_stalls.py ncu_source.csv [--top 8]
"""
import argparse
import csv
import sys


def kernels(path):
    """(name, header, rows) for each kernel of the CSV."""
    name, head, rows = None, None, []
    with open(path, newline="") as f:
        for r in csv.reader(f):
            if r and r[0] == "Kernel Name":
                if name:
                    yield name, head, rows
                name, head, rows = r[1], None, []
            elif r and r[0] == "Address":
                head = r
            elif head and r:
                rows.append(dict(zip(head, r)))
    if name:
        yield name, head, rows


def num(s):
    try:
        return float(s.replace(",", ""))
    except (ValueError, AttributeError):
        return 0.0


def opcode(src):
    """The instruction's opcode (after its predicate)."""
    t = src.split()
    return t[1] if t and t[0].startswith("@") and len(t) > 1 else t[0] if t else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=8)
    a = ap.parse_args()
    for i, (name, head, rows) in enumerate(kernels(a.csv)):
        kinds = [h for h in head if h.startswith("stall_") and "(Not Issued)" not in h]
        total = sum(num(r["Warp Stall Sampling (All Samples)"]) for r in rows)
        print(f"######## {i}: {name}: {len(rows)} instructions, {total:.0f} warp-stall samples")
        sums = sorted(((sum(num(r[k]) for r in rows), k) for k in kinds), reverse=True)
        for v, k in sums:
            if v:
                print(f"  {k:28s} {v:8.0f} {100 * v / total:5.1f}%")
        for op in ("LDGSTS", "LDG", "STG"):
            sel = [r for r in rows if opcode(r["Source"]).split(".")[0] == op]
            th = sum(num(r["L2 Theoretical Sectors Global"]) for r in sel)
            ex = sum(num(r["L2 Theoretical Sectors Global Excessive"]) for r in sel)
            ideal = sum(num(r["L2 Theoretical Sectors Global Ideal"]) for r in sel)
            ex_n = sum(num(r["Instructions Executed"]) for r in sel)
            print(f"  {op}: {ex_n:.0f} warp instructions executed, L2 sectors {th:.0f} (ideal {ideal:.0f}, excessive {ex:.0f})")
        # an mbarrier wait: its first try, then its retry loop (the same instruction further on)
        for r in rows:
            if opcode(r["Source"]).startswith("SYNCS.PHASECHK"):
                print(f"  executed {num(r['Instructions Executed']):9.0f} | {r['Source'].strip()}")
        top = sorted(rows, key=lambda r: -num(r["Warp Stall Sampling (All Samples)"]))[: a.top]
        for r in top:
            s = num(r["Warp Stall Sampling (All Samples)"])
            why = sorted(((num(r[k]), k[6:]) for k in kinds), reverse=True)[:2]
            print(f"  {100 * s / total:5.1f}% ex={num(r['Instructions Executed']):9.0f} "
                  f"{' '.join(f'{k}={v:.0f}' for v, k in why if v)} | {r['Source'].strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
