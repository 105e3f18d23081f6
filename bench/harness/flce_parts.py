"""The fused linear cross-entropy's chunk, kernel by kernel (issue 35): each
launch of one chunk of examples/llm.tile's graph flce_bf16 (gemm_nt, then
ce_fwd_bwd, gemm_nn_sk + sum_slices, gemm_dw) timed alone, beside the same step
in torch (cuBLAS for the three products), at the issue's size (T 4096,
D 4096, V 128256, bf16) and chunks of C tokens. The method is bench.py's
(a 512 MiB flush before each call, CUDA events, the median); the chunk's
time times T / C is what the graph spends on that step. With --sweep K,
gemm_dw alone at K = C = each K: its pair (TILEC_TMA_PAIR=1) and its
one-tile twin (TILEC_TMA_PAIR=0), each with dW read (add 1, the graph's
product) and without (add 0: a plain product's store), and torch.addmm:
what each twin's dW read costs (add 1 less add 0) and which twin a short
loop favours (the launch's choice between them: runtime/tma.c); and
gemm_dw with add 1 as the launch chooses (no TILEC_TMA_PAIR), whose
twin TILEC_LOGS=tma names on stderr.

    python3 bench/harness/flce_parts.py --out parts.jsonl [--chunk 1024 ...] [--sweep 512 ...]"""
import argparse
import json
import os
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

import tilec  # noqa: E402


# An experiment beside the graph's gemm_dw: the same product with dW's
# read-modify-write as a bf16 atomic_add of the rounded product (each
# element added once a chunk: deterministic; rounded twice, so not the
# graph's numerics). The lowering puts it on the persistent paired twin,
# which gemm_dw's epilogue load (a [BM, BN] tile converted through shared
# memory) keeps it off; timed to see what the persistent grid is worth.
GEMM_DW_RED = """
kernel gemm_dw_red(a: *bf16, b: *bf16, dw: *bf16, M: i32, N: i32, K: i32)
    grid (cdiv(M, BM), cdiv(N, BN))
    hints { BM = 128, BN = 128, BK = 64, warps = 8 }
{
    let rm = pid(0) * BM + range(BM);
    let rn = pid(1) * BN + range(BN);
    let acc = zeros(f32, BM, BN);
    for k in 0 .. K step BK {
        let rk = k + range(BK);
        let ta = load(a + rk[:, None] * M + rm[None, :], rk[:, None] < K && rm[None, :] < M, 0.0);
        let tb = load(b + rk[:, None] * N + rn[None, :], rk[:, None] < K && rn[None, :] < N, 0.0);
        acc = acc + dot(trans(ta), tb);
    }
    atomic_add(dw + rm[:, None] * N + rn[None, :], cast(acc, bf16), rm[:, None] < M && rn[None, :] < N);
}
"""


def kernel_text(path, name):
    """The text of kernel `name` of the .tile file at path (its doc lines
    aside): from `kernel name(` to the first line that is `}`."""
    src = open(path).read()
    start = src.index(f"kernel {name}(")
    return src[start:src.index("\n}\n", start) + 3]


def timed(fn, flush, reps=20):
    """Median device ms of fn() after a flush, over reps calls."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ms.append(s.elapsed_time(e))
    return statistics.median(ms)


def forced(path, mode):
    """The module at path loaded and gemm_dw's twin resolved with
    TILEC_TMA_PAIR=mode (read when the kernel is resolved: its first
    call, made here on a 128-row product); mode None: without it."""
    if mode is not None:
        os.environ["TILEC_TMA_PAIR"] = mode
    try:
        mod = tilec.load(path)
        a = torch.zeros(64, 128, device="cuda", dtype=torch.bfloat16)
        b = torch.zeros(64, 256, device="cuda", dtype=torch.bfloat16)
        c = torch.zeros(128, 256, device="cuda", dtype=torch.bfloat16)
        mod.gemm_dw(a, b, c, 128, 256, 64, 1)
        torch.cuda.synchronize()
    finally:
        os.environ.pop("TILEC_TMA_PAIR", None)
    return mod


def sweep(out, ks, w, dw, flush, T, D, V, dir_):
    """gemm_dw at K = C = each of ks: pair and one-tile twin forced, add 1
    and 0, beside torch.addmm (same operands: G [K, V], h [K, D])."""
    text = kernel_text(os.path.join(ROOT, "examples", "llm.tile"), "gemm_dw")
    mods = {}
    for mode, name in (("1", "pair"), ("0", "one"), (None, "auto")):
        path = os.path.join(dir_, f"gemm_dw_{name}.tile")
        with open(path, "w") as f:
            f.write(text)
        mods[name] = forced(path, mode)
    print("== gemm_dw alone by K (ms): pair add1, one-tile add1, pair add0, one-tile add0, addmm, "
          "the launch's choice add1", flush=True)
    for K in ks:
        g = (torch.randn(K, V, device="cuda") * 1e-3).to(torch.bfloat16)
        hk = (torch.randn(K, D, device="cuda") * 0.5).to(torch.bfloat16)
        rec = {"kind": "flce_dw_sweep", "K": K, "trips": -(-K // 64)}
        for name in ("pair", "one"):
            for add in (1, 0):
                rec[f"{name}_add{add}_ms"] = timed(lambda: mods[name].gemm_dw(g, hk, dw, V, D, K, add), flush)
        rec["addmm_ms"] = timed(lambda: torch.addmm(dw, g.t(), hk, out=dw), flush)
        rec["auto_add1_ms"] = timed(lambda: mods["auto"].gemm_dw(g, hk, dw, V, D, K, 1), flush)
        out.write(json.dumps(rec) + "\n")
        out.flush()
        print(f"  K {K:5d} ({rec['trips']:2d} trips): " + "  ".join(
            f"{rec[k]:.3f}" for k in ("pair_add1_ms", "one_add1_ms", "pair_add0_ms", "one_add0_ms", "addmm_ms",
                                      "auto_add1_ms")),
            flush=True)
        del g, hk


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chunk", type=int, action="append")
    ap.add_argument("--sweep", type=int, action="append", metavar="K",
                    help="gemm_dw's twins alone at K = C = K (repeatable; a multiple of 8)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("SKIP: flce_parts: no CUDA device")
        return 0
    T, D, V = 4096, 4096, 128256
    m = tilec.load(os.path.join(ROOT, "examples", "llm.tile"))
    red_path = os.path.join(tempfile.mkdtemp(prefix="flce_parts_"), "gemm_dw_red.tile")
    with open(red_path, "w") as f:
        f.write(GEMM_DW_RED)
    red = tilec.load(red_path)
    # gemm_dw again, its one-tile persistent twin forced (TILEC_TMA_PAIR=0,
    # read when the kernel is resolved: its first call below): the twin
    # session 42 ran, one 128 x 128 tile a unit; the graph's runs the pairs
    # (two N tiles a block, both tiles' dW loaded before the loop,
    # lower/wgmma.c early_pair): the row says what pairing gains
    dwp_path = os.path.join(os.path.dirname(red_path), "gemm_dw_persist.tile")
    with open(dwp_path, "w") as f:
        f.write(kernel_text(os.path.join(ROOT, "examples", "llm.tile"), "gemm_dw"))
    dwp = None
    flush = torch.empty(512 << 18, dtype=torch.int32, device="cuda")
    h = (torch.randn(T, D, device="cuda") * 0.5).to(torch.bfloat16)
    w = (torch.randn(V, D, device="cuda") * 0.02).to(torch.bfloat16)
    tgt = torch.randint(0, V, (T,), device="cuda", dtype=torch.int32)
    dw = torch.zeros(V, D, device="cuda", dtype=torch.bfloat16)
    loss = torch.empty(T, device="cuda")
    dh = torch.empty(T, D, device="cuda", dtype=torch.bfloat16)
    out = open(args.out, "a")
    if args.sweep:
        sweep(out, args.sweep, w, dw, flush, T, D, V, os.path.dirname(red_path))
    for C in (args.chunk or [1024, 512]) if not args.sweep or args.chunk else []:
        hc, tc, lc, dhc = h[:C], tgt[:C], loss[:C], dh[:C]
        logits = torch.empty(C, V, device="cuda", dtype=torch.bfloat16)
        S = -(-1024 // C)  # the graph's split-K slices of dH's product
        part = torch.empty(S, C, D, device="cuda")
        m.gemm_nt(hc, w, logits, C, V, D)
        g = logits.clone()
        m.ce_fwd_bwd(g, tc, lc, g, C, V, 1.0 / T)
        if dwp is None:
            os.environ["TILEC_TMA_PAIR"] = "0"
            dwp = tilec.load(dwp_path)
            dwp.gemm_dw(g, hc, dw, V, D, C, 1)
            torch.cuda.synchronize()
            del os.environ["TILEC_TMA_PAIR"]
        steps = [
            ("gemm_nt logits = h_c @ W^T", lambda: m.gemm_nt(hc, w, logits, C, V, D),
             lambda: torch.matmul(hc, w.t(), out=logits), 2.0 * C * V * D),
            ("ce_fwd_bwd (in place)", lambda: m.ce_fwd_bwd(logits, tc, lc, logits, C, V, 1.0 / T), None, 0.0),
            ("gemm_nn dH_c = G @ W (one pass; not in the graph)", lambda: m.gemm_nn(g, w, dhc, C, D, V), None, 2.0 * C * V * D),
            ("gemm_nn_sk dH_c = G @ W", lambda: m.gemm_nn_sk(g, w, part, C, D, V, S),
             lambda: torch.matmul(g, w, out=dhc), 2.0 * C * V * D),
            ("sum_slices dH_c", lambda: m.sum_slices(part, dhc, C * D, S), None, 0.0),
            ("gemm_dw dW += G^T h_c", lambda: m.gemm_dw(g, hc, dw, V, D, C, 1),
             lambda: torch.addmm(dw, g.t(), hc, out=dw), 2.0 * C * V * D),
            ("gemm_dw one tile a unit (TILEC_TMA_PAIR=0; not in the graph)",
             lambda: dwp.gemm_dw(g, hc, dw, V, D, C, 1), None, 2.0 * C * V * D),
            ("gemm_dw_red (bf16 atomic epilogue; not in the graph)", lambda: red.gemm_dw_red(g, hc, dw, V, D, C), None,
             2.0 * C * V * D),
        ]
        total = {"tilec": 0.0, "torch": 0.0}
        print(f"== chunk C = {C} ({T // C} chunks)", flush=True)
        for name, tf, rf, flops in steps:
            rec = {"kind": "flce_part", "C": C, "step": name, "tilec_ms": timed(tf, flush)}
            if rf:
                rec["torch_ms"] = timed(rf, flush)
            if flops:
                rec["tilec_tflops"] = flops / rec["tilec_ms"] / 1e9
            if flops and rf:
                rec["torch_tflops"] = flops / rec["torch_ms"] / 1e9
            out.write(json.dumps(rec) + "\n")
            tt = f"  torch {rec['torch_ms']:8.3f} ms" if rf else ""
            tfl = f"  ({rec['tilec_tflops']:.0f}" + (f" vs {rec['torch_tflops']:.0f}" if rf else "") + " TFLOP/s)" if flops else ""
            print(f"  {name:30s} tilec {rec['tilec_ms']:8.3f} ms{tt}{tfl}", flush=True)
            if "not in the graph" in name:
                continue
            total["tilec"] += rec["tilec_ms"]
            total["torch"] += rec.get("torch_ms", rec["tilec_ms"])
        print(f"  a chunk: tilec {total['tilec']:.3f} ms, with torch's products {total['torch']:.3f} ms; "
              f"x {T // C} chunks: {total['tilec'] * T / C:.2f} / {total['torch'] * T / C:.2f} ms", flush=True)
        out.write(json.dumps({"kind": "flce_chunk", "C": C, "tilec_ms": total["tilec"], "torch_products_ms": total["torch"],
                              "chunks": T // C}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
