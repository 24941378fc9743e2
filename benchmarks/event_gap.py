#!/usr/bin/env python
"""What a launch's CUDA events hold beyond the device's time alone, on bench_async's kernels.

    PYTHONPATH=. python benchmarks/event_gap.py [--only K1,K2] [--repeats N]

bench_async's events of a consan launch exceed its device time alone (the same launch
behind a spin kernel) by more than the native's do, on some kernels much more than the
host's launch call (benchmarks/launch_host.py) takes. Each row here times the same
launch several ways in one process, so the gap can be taken apart:

- ev / dev: as bench_async (events; events behind a spin kernel);
- fn ev: the resets done before the start event, only the function's launch between the
  events (the part of Prepared.launch that is ours, taken out);
- warm ev: after each read-back, a tiny kernel run to completion before the start event
  (the GPU's last work a kernel, as in the native's loop, not the read-back's copy);
- nat+copy ev: the native with a read-back-sized copy to pinned memory after each launch;
- call us: the host's wall time from the start event's record to the launch call's return.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import bench_async  # noqa: E402
from benchmarks.bench_clean import _arch_options, _time, _time_device  # noqa: E402

TINY = r"""extern "C" __global__ void consan_gap_tiny(int* p) { if (p) *p = 0; }"""


def _events(cp, before, launch, after, repeats: int, calls: list[float] | None = None):
    """Milliseconds between events around `launch()`; `before()` runs ahead of the start
    event, `after()` after the end event's synchronisation, both untimed."""
    start, end = cp.cuda.Event(), cp.cuda.Event()
    out = []
    for _ in range(repeats + 2):
        before()
        t0 = time.perf_counter()
        start.record()
        launch()
        t1 = time.perf_counter()
        end.record()
        end.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, end))
        if calls is not None:
            calls.append((t1 - t0) * 1e6)
        after()
    if calls is not None:
        del calls[:2]
    return out[2:]


def one(name: str, repeats: int) -> dict:
    import cupy as cp
    import numpy as np

    import consan
    _, size, build = bench_async.CASES[name]
    opts = _arch_options(cp)
    ln = build(cp, size)
    kern = cp.RawKernel(ln.source, ln.kernel, options=opts)
    tiny = cp.RawKernel(TINY, "consan_gap_tiny")
    p = consan.prepare(ln.source, ln.kernel, grid=ln.grid, block=ln.block,
                       shared_mem=ln.shared_mem, options=opts)
    p.launch(ln.args)
    assert p.report().ok

    def nat():
        kern(ln.grid, ln.block, ln.args, shared_mem=ln.shared_mem)

    def con():
        p.launch(ln.args)

    def report():
        rep = p.report()
        assert rep.ok, rep

    def resets():
        p.launch_resets(ln.args)

    def fn():  # Prepared.launch with its resets already made (by `resets`, untimed)
        p.launch_resets = lambda args=(): None  # (an instance attribute over the method)
        try:
            p.launch(ln.args)
        finally:
            del p.launch_resets

    pinned = cp.cuda.alloc_pinned_memory(p.header.nbytes)
    host = np.frombuffer(pinned, dtype=np.uint8, count=p.header.nbytes)
    scratch = cp.zeros(p.header.nbytes, dtype=np.uint8)

    def copy_back():
        scratch.get(out=host)

    def warm():
        tiny((1,), (1,), (np.uint64(0),))
        cp.cuda.get_current_stream().synchronize()

    med = statistics.median
    calls: list[float] = []
    row = {"kernel": name}
    row["nat ev"] = med(_time(cp, nat, lambda: None, 2, repeats))
    row["nat dev"] = med(_time_device(cp, nat, lambda: None, repeats))
    row["nat+copy ev"] = med(_events(cp, lambda: None, nat, copy_back, repeats))
    row["con ev"] = med(_events(cp, lambda: None, con, report, repeats, calls))
    row["call us"] = med(calls)
    row["con dev"] = med(_time_device(cp, con, report, repeats))
    row["fn ev"] = med(_events(cp, resets, fn, report, repeats))
    row["warm ev"] = med(_events(cp, lambda: None, con, lambda: (report(), warm()), repeats))
    row["warm fn ev"] = med(_events(cp, lambda: (resets(), warm()), fn, report, repeats))
    return row


def table(rows: list[dict], repeats: int) -> str:
    """The rows as a markdown table, every cell in us (the event columns come in ms)."""
    cols = list(rows[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [r["kernel"]] + [f"{r[c]:.1f}" if c == "call us" else f"{r[c] * 1e3:.1f}"
                                 for c in cols[1:]]
        out.append("| " + " | ".join(cells) + " |")
    out.append(f"(us; medians of {repeats} launches)")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(bench_async.CASES))
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args(argv)
    print(table([one(n, args.repeats) for n in args.only.split(",")], args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
