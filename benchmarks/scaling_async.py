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
from benchmarks.bench_async import DSMEM_TILES, GEMM_K, RING_TILES, Launch  # noqa: E402
from benchmarks.bench_clean import _arch_options, _time  # noqa: E402
from tests import gpu_util  # noqa: E402


def _ring(cp, trips: int) -> Launch:
    import numpy as np

    import consan
    from tests.kernels import gpu_kernels as gk

    ctas = 264
    rows = ctas * trips * gk.TMA_RING_ROWS
    x = cp.asarray(np.random.default_rng(6).integers(0, 8, (rows, gk.TMA_RING_COLS))
                   .astype(np.float32))
    m = consan.tensor_map(x, box_shape=(gk.TMA_RING_ROWS, gk.TMA_RING_COLS))
    out = cp.zeros(ctas * gk.TMA_RING_COLS, dtype=cp.float32)
    return Launch(gk.fill(gk.TMA_RING, gk.TMA_RING_CLEAN), "tma_ring", (ctas, 1, 1),
                  (96, 1, 1), (m, out, np.int32(trips)), [out], keep=(x,))


def _gemm(cp, trips: int) -> Launch:
    from tests.kernels import tma_wgmma_gemm as g

    k = trips * g.KT
    a, b, d, _ = g.inputs(cp, 16896, k)
    return Launch(g.SOURCE, g.KERNEL, g.grid(16896), g.BLOCK, g.args(a, b, d, k), [d],
                  keep=(a, b))


def _dsmem(cp, trips: int) -> Launch:
    from tests.kernels import dsmem_ring as g

    x, out, _ = g.inputs(cp, 132, trips)
    return Launch(g.SOURCE, g.KERNEL, g.grid(132), g.BLOCK, g.args(x, out, trips), [out])


# name -> (what a trip is, the benchmark's trips, trips timed, builder)
CASES: dict[str, tuple[str, int, tuple[int, ...], Callable[[Any, int], Launch]]] = {
    "tma_ring_4stage": ("box", RING_TILES, (4, 8, 16, 32), _ring),
    "tma_wgmma_gemm": ("K step of 64", GEMM_K // 64, (4, 8, 16, 32), _gemm),
    "dsmem_ring_2cta": ("tile", DSMEM_TILES, (8, 16, 32, 64), _dsmem),
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
    opts = _arch_options(cp)
    first = build(cp, trips[0])
    kern = cp.RawKernel(first.source, first.kernel, options=opts)
    p = consan.prepare(first.source, first.kernel, grid=first.grid, block=first.block,
                       shared_mem=first.shared_mem, options=opts)
    rows, ok = [], True
    for n in trips:
        ln = build(cp, n)
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
