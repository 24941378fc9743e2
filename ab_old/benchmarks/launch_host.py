#!/usr/bin/env python
"""The host's part of one launch, instrumented and native, on bench_async's kernels.

    PYTHONPATH=. python benchmarks/launch_host.py [--only K1,K2] [--launches N]

bench_async's first columns time a launch between CUDA events, so they hold the host's
launch path wherever the GPU waited for it: on the H100 at 70aa4f6 the consan events of the
cp.async GEMM, the TMA ring and the TMA + wgmma GEMM ran 17-26 us above the device's time
alone, the native ones about 8 us. This times that path by itself: the wall
time of the launch call (it returns once the kernel is enqueued; the GPU is kept busy by a
spin kernel, so the call never waits for it), per stage (benchmarks/host_stages.py), each
checked launch's log read back untimed after it as `consan run` does (that read-back,
step by step: benchmarks/readback_steps.py).
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
from benchmarks.bench_clean import SPIN, SPIN_CYCLES, _arch_options  # noqa: E402
from benchmarks.host_stages import StageTimer  # noqa: E402


def _walls(cp, call, after, launches: int) -> list[float]:
    """Microseconds of each `call()`, the GPU busy behind a spin kernel meanwhile."""
    import numpy as np

    spin = cp.RawKernel(SPIN, "consan_bench_spin")
    out = []
    for _ in range(launches):
        spin((1,), (1,), (np.int64(SPIN_CYCLES // 20),))
        t0 = time.perf_counter()
        call()
        out.append((time.perf_counter() - t0) * 1e6)
        cp.cuda.get_current_stream().synchronize()
        after()
    return out


def one(name: str, launches: int) -> None:
    import cupy as cp

    import consan
    from consan import runtime, tma

    _, size, build = bench_async.CASES[name]
    opts = _arch_options(cp)
    ln = build(cp, size)
    kern = cp.RawKernel(ln.source, ln.kernel, options=opts)
    p = consan.prepare(ln.source, ln.kernel, grid=ln.grid, block=ln.block,
                       shared_mem=ln.shared_mem, options=opts)
    p.launch(ln.args)
    assert p.report().ok
    nat = _walls(cp, lambda: kern(ln.grid, ln.block, ln.args, shared_mem=ln.shared_mem),
                 lambda: None, launches)
    con = _walls(cp, lambda: p.launch(ln.args), lambda: p.report(), launches)
    fn = p.function
    direct = _walls(cp, lambda: fn(p.grid, p.block, ln.args, shared_mem=p.launch_shared_mem),
                    lambda: p.report(), launches)
    stages = [("Prepared.launch", runtime.Prepared, "launch"),
              ("Prepared.launch_resets", runtime.Prepared, "launch_resets"),
              ("tma.device_table_bytes", tma, "device_table_bytes"),
              ("Launcher.__call__", runtime.Launcher, "__call__")]
    with StageTimer(stages) as t:
        _walls(cp, lambda: p.launch(ln.args), lambda: p.report(), launches)
    med = statistics.median
    print(f"## {name}: launch call, median us of {launches} (min)")
    print(f"native RawKernel | {med(nat):.1f} ({min(nat):.1f})")
    print(f"consan Prepared.launch | {med(con):.1f} ({min(con):.1f})")
    print(f"consan function only | {med(direct):.1f} ({min(direct):.1f})")
    print(t.table(launches))
    print(f"launch_shared_mem {p.launch_shared_mem}, args {len(ln.args)}, "
          f"grid {p.grid}, block {p.block}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(bench_async.CASES))
    ap.add_argument("--launches", type=int, default=200)
    args = ap.parse_args(argv)
    for name in args.only.split(","):
        one(name, args.launches)
    return 0


if __name__ == "__main__":
    sys.exit(main())
