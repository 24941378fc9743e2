#!/usr/bin/env python
"""The read-back of a clean launch's log, step by step, on the host (the GPU idle).

    PYTHONPATH=. python benchmarks/readback_steps.py [--kernel K] [--launches N]

`consan run` reads the log back after every checked launch (`Prepared.report`); for a
small kernel that is most of what a user waits for. This launches one of bench_async's
kernels N times and, after each has finished, times the read-back and the steps it is made
of (microseconds: median and minimum). Run it in two trees in turn to compare them: the
host's speed varies within one device call by up to 2x, so alternate the trees and compare
the minima as well.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import bench_async  # noqa: E402
from benchmarks.bench_clean import _arch_options  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="tma_ring_4stage", choices=sorted(bench_async.CASES))
    ap.add_argument("--launches", type=int, default=300)
    args = ap.parse_args(argv)
    import cupy as cp
    import cupyx
    import numpy as np

    import consan
    from instrument import abi
    from reports import Report

    _, size, build = bench_async.CASES[args.kernel]
    ln = build(cp, size)
    p = consan.prepare(ln.source, ln.kernel, grid=ln.grid, block=ln.block,
                       shared_mem=ln.shared_mem, options=_arch_options(cp))
    p.launch(ln.args)
    assert p.report().ok
    stream = cp.cuda.get_current_stream()
    pinned = cupyx.empty_pinned(p.header.nbytes, dtype=np.uint8)
    steps: dict[str, list[float]] = {}

    def timed(name: str, fn: Callable[[], object]) -> object:
        t0 = time.perf_counter()
        out = fn()
        steps.setdefault(name, []).append((time.perf_counter() - t0) * 1e6)
        return out

    sites, none = p.build.instrumented.sites, p.records[:0]
    for _ in range(args.launches):
        p.launch(ln.args)
        stream.synchronize()
        timed("stream synchronize (nothing pending)", stream.synchronize)
        timed("header get()", p.header.get)
        raw = timed("header get() into pinned memory", lambda: p.header.get(out=pinned))
        header = raw.view(abi.log_header_dtype())[0]  # type: ignore[union-attr]
        timed("Report.from_log of an empty log",
              lambda h=header: Report.from_log(h, none, None, sites, p.kernel))
        timed("Prepared.shadow_bytes", lambda: p.shadow_bytes)
        timed("Prepared.report() (the whole read-back)", p.report)
    print(f"{args.kernel}, {args.launches} clean launches: step | median us | min us")
    for name, v in steps.items():
        print(f"{name} | {statistics.median(v):.1f} | {min(v):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
