#!/usr/bin/env python
"""Where bench_async's instrumented time goes: a CTA's fixed cost or its loop.

    PYTHONPATH=. python benchmarks/scaling_async.py [--only K,...] [--json PATH]

Each pipelined kernel of bench_async is launched at its benchmark grid with its loop's
trip count (ring tiles, GEMM K steps, clustered-ring tiles) at several values, natively and
under consan (`consan.prepare`, one build a kernel: the trip count is an argument), CUDA
events, medians. A least-squares line through (trips, ms) gives the fixed part (the
intercept: launch, a CTA's prologue and epilogue) and the part a trip costs (the slope).
A kernel's slowdown at its benchmark size is the two parts together; the table says which
one a change must cut. Every consan launch must be clean and give the native bits
(benchmarks/verdict.py), else the row is an error and the exit status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import verdict  # noqa: E402
from benchmarks.bench_async import CASES as BENCH  # noqa: E402
from benchmarks.bench_async import (  # noqa: E402
    DSMEM_TILES,
    GEMM_K,
    RING_TILES,
    Launch,
    _dsmem_ring,
    _tma_ring,
    _tma_wgmma,
)
from benchmarks.bench_clean import _arch_options, _time  # noqa: E402
from tests import gpu_util  # noqa: E402
from tests.kernels.tma_wgmma_gemm import KT  # noqa: E402  (halves of K a GEMM step)

# name -> (what a trip is, the benchmark's trips, trips timed, builder at a size and trips);
# each kernel is launched at bench_async's size (its grid)
CASES: dict[str, tuple[str, int, tuple[int, ...], Callable[[Any, int, int], Launch]]] = {
    "tma_ring_4stage": ("box", RING_TILES, (4, 8, 16, 32), _tma_ring),
    "tma_wgmma_gemm": ("K step of 64", GEMM_K // KT, (4, 8, 16, 32),
                       lambda cp, m, n: _tma_wgmma(cp, m, n * KT)),
    "dsmem_ring_2cta": ("tile", DSMEM_TILES, (8, 16, 32, 64), _dsmem_ring),
}


def _fit(xs: list[int], ys: list[float]) -> tuple[float, float]:
    """(intercept, slope) of the least-squares line."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = (sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
             / sum((x - mx) ** 2 for x in xs))
    return my - slope * mx, slope


def measure(name: str, repeats: int) -> dict:
    import cupy as cp

    import consan

    what, bench_trips, trips, build = CASES[name]
    size = BENCH[name][1]  # bench_async's size: the same grid
    opts = _arch_options(cp)
    first = build(cp, size, trips[0])
    kern = cp.RawKernel(first.source, first.kernel, options=opts)
    p = consan.prepare(first.source, first.kernel, grid=first.grid, block=first.block,
                       shared_mem=first.shared_mem, options=opts)
    rows, ok = [], True
    for n in trips:
        ln = build(cp, size, n)
        gpu_util.native_launch(ln.source, ln.kernel, ln.grid, ln.block, ln.args,
                               shared_mem=ln.shared_mem, options=opts)
        want = [o.get() for o in ln.outputs]
        nat = statistics.median(_time(
            cp, lambda ln=ln: kern(ln.grid, ln.block, ln.args, shared_mem=ln.shared_mem),
            lambda: None, 3, repeats))
        for o in ln.outputs:
            o.fill(0)
        reports = []
        p.launch(ln.args)
        reports.append(p.report())
        same = verdict.same_bits(want, [o.get() for o in ln.outputs])
        con = statistics.median(_time(cp, lambda ln=ln: p.launch(ln.args),
                                      lambda r=reports: r.append(p.report()), 1, repeats))
        row = {"trips": n, "native_ms": nat, "consan_ms": con}
        verdict.judge(row, reports, same)
        ok = ok and "error" not in row
        rows.append(row)
        del ln
    out = {"kernel": name, "trip": what, "bench_trips": bench_trips, "rows": rows}
    if ok:
        xs = [r["trips"] for r in rows]
        for key in ("native_ms", "consan_ms"):
            a, b = _fit(xs, [r[key] for r in rows])
            out[key.replace("_ms", "")] = {"fixed_ms": a, "per_trip_us": b * 1e3}
    else:
        out["error"] = next(r["error"] for r in rows if "error" in r)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(CASES))
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    results = [measure(n, args.repeats) for n in args.only.split(",")]
    for r in results:
        print(f"\n{r['kernel']} ({r['trip']}s; the benchmark runs {r['bench_trips']})")
        print("| trips | native ms | consan ms | x |")
        print("|---|---|---|---|")
        for row in r["rows"]:
            x = row["consan_ms"] / row["native_ms"]
            print(f"| {row['trips']} | {row['native_ms']:.4f} | {row['consan_ms']:.4f} | "
                  f"{x:.1f} |" if "error" not in row else f"| {row['trips']} | ERROR "
                  f"{row['error']} | | |")
    print("\n| kernel | native fixed ms | native us/trip | consan fixed ms | consan us/trip | "
          "fixed x | per-trip x | consan fixed share at the benchmark's trips |")
    print("|---|---|---|---|---|---|---|---|")
    bad = False
    for r in results:
        if "error" in r:
            bad = True
            print(f"| {r['kernel']} | ERROR: {r['error']} | | | | | | |")
            continue
        n, c = r["native"], r["consan"]
        at = c["fixed_ms"] + c["per_trip_us"] * 1e-3 * r["bench_trips"]
        print(f"| {r['kernel']} | {n['fixed_ms']:.4f} | {n['per_trip_us']:.3f} | "
              f"{c['fixed_ms']:.4f} | {c['per_trip_us']:.3f} | "
              f"{c['fixed_ms'] / n['fixed_ms']:.1f} | "
              f"{c['per_trip_us'] / n['per_trip_us']:.1f} | {c['fixed_ms'] / at:.0%} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
