#!/usr/bin/env python3
"""ladder.py: one matmul workload timed for several .tile files in one
process, each against cuBLAS in the same run, the harness's way (bench.py's
Run.workload: the check on NaN-poisoned output first, then tilec C, tilec
Python, cuBLAS and the device copy, L2 flushed between calls).

    python3 bench/harness/ladder.py --out F.jsonl --dtype f32 --size 4096 [--bt] \\
        --case TAG=PATH[,VAR=VALUE...] ...

Each case's records carry its TAG; VAR=VALUE pairs are set in the
environment while that case compiles and runs (and restored after). Give
each case a .tile whose text differs (a comment is enough): the compiler's
records and cache key a build on the module's text.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench  # noqa: E402
import torch  # noqa: E402


def run_args(out):
    """bench.Run's options for a ladder: bench.py's own defaults (every
    option Run reads), no torch.compile, tag "ladder" until a case sets its own."""
    return bench.arg_parser().parse_args(["--out", out, "--no-compile", "--tag", "ladder"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--bt", action="store_true", help="x @ W.T with W stored [N, K] (bench.py's `matmul f32 x@W.T`: "
                    "each case's .tile defines linear_f32)")
    ap.add_argument("--case", action="append", required=True, help="TAG=PATH[,VAR=VALUE...]")
    ap.add_argument("--once", action="store_true", help="one launch of each case, no timing (for a profiler)")
    ap.add_argument("--torch", action="store_true", help="with --once: also one call of the torch side")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("SKIP: ladder: no CUDA device")
        return 0
    run = bench.Run(run_args(args.out))
    run.env()
    n = args.size
    for case in args.case:
        tag, rest = case.split("=", 1)
        path, *envs = rest.split(",")
        saved = {}
        for e in envs:
            k, v = e.split("=", 1)
            saved[k] = os.environ.get(k)
            os.environ[k] = v
        run.args.tag = tag
        w = bench.w_matmul(n, n, n, args.dtype, bt=args.bt)
        w.tile = os.path.abspath(path)
        print(f"== case {tag}: {path} {' '.join(envs)}", flush=True)
        try:
            if args.once:
                t = w.make()
                kargs, _ = w.tilec_call(t)
                run.module(w.tile).kernel(w.kernel)(*kargs)
                if args.torch:
                    w.torch_fn(t)
                torch.cuda.synchronize()
            else:
                run.workload(w)
        except Exception as ex:  # keep going: the record says what failed
            run.emit({"kind": "check", "workload": w.name, "ok": False, "error": str(ex)[:500]})
            print(f"  ERROR {ex}", flush=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
