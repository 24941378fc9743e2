#!/usr/bin/env python
"""Does a kernel's consan time depend on what the process loaded before it?

    PYTHONPATH=. python3 benchmarks/load_order.py --kernel tma_ring_4stage \
        --before mma_gemm_cp_async,tma_wgmma_gemm --rounds 3

Runs bench_async.py (no racecheck) on this tree with `--only KERNEL` and, for each kernel B
of --before, with `--only B,KERNEL` (B's modules built and launched first in the same
process: bench_async runs its kernels in its own order, so B must come before KERNEL
there), one after another in each round, and prints KERNEL's device time alone (dev
consan ms) in each context, round by round. Two A/B runs of one tree
(benchmarks/ab_async.py) measured its TMA ring at 0.124 and at 0.130 ms, each steady over
four processes: a difference as large as the changes being judged.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def dev_ms(only: str, kernel: str) -> float:
    """KERNEL's dev consan ms from one bench_async run of `only` (its output, where the run
    gave no such row: a launch not clean or not bit-exact, or no GPU)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "b.json")
        res = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_async.py"),
                              "--no-racecheck", "--only", only, "--json", path],
                             capture_output=True, text=True, cwd=ROOT)
        try:
            with open(path) as fh:
                rows = json.load(fh)["rows"]
            return next(r["dev_consan_ms"] for r in rows
                        if r["kernel"] == kernel and "dev_consan_ms" in r)
        except (OSError, ValueError, KeyError, StopIteration):
            raise SystemExit(f"load_order: bench_async --only {only} gave no dev time for "
                             f"{kernel} (exit {res.returncode}); its output:\n"
                             f"{res.stdout}{res.stderr}") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="tma_ring_4stage")
    ap.add_argument("--before", default="mma_gemm_cp_async", metavar="K1,K2")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    contexts = {"alone": a.kernel, **{f"after {b}": f"{b},{a.kernel}"
                                      for b in a.before.split(",") if b}}
    got: dict[str, list[float]] = {label: [] for label in contexts}
    for r in range(a.rounds):
        for label, only in contexts.items():
            got[label].append(dev_ms(only, a.kernel))
            print(f"round {r + 1} {label}: {got[label][-1]:.4f}", flush=True)
    for label, v in got.items():
        print(f"{a.kernel} {label}: {' / '.join(f'{x:.4f}' for x in v)}, "
              f"median {statistics.median(v):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
