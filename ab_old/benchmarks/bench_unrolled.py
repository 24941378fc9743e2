#!/usr/bin/env python
"""consan on an unrolled kernel: the corpus's bitonic sort, natively and instrumented.

    PYTHONPATH=. python benchmarks/bench_unrolled.py [--ctas N] [--json PATH] [--profile]

NVCC unrolls `bitonic_sort_1024` (tests/corpus/bitonic_sort.cu) into hundreds of
shared-memory accesses and dozens of barriers, past fast_path.INLINE_MAX: its accesses
call the module's functions, most of them one call per run of accesses
(instrument/fast_path.py). Times as
in bench_clean.py (CUDA events, medians; consan = `consan.prepare`, which instruments every
kernel), with the link's seconds; a launch that is not clean or not bit-exact gets no
ratio and the script exits 1. --profile also prints the checker's cycles per probe kind
(breakdown_async.py's CONSAN_PROFILE build: the calls, not the inline code).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks.bench_clean import _arch_options, _time  # noqa: E402

SOURCE = Path(ROOT, "tests", "corpus", "bitonic_sort.cu").read_text()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ctas", type=int, default=4096, help="CTAs of 1024 keys each")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args(argv)
    import cupy as cp
    import numpy as np

    import consan

    n = a.ctas * 1024
    keys = np.random.default_rng(3).integers(0, 1 << 30, n).astype(np.uint32)
    opts = (*_arch_options(cp), "-lineinfo")
    grid, block = (a.ctas, 1, 1), (512, 1, 1)

    def fresh():
        return cp.asarray(keys), cp.arange(n, dtype=cp.uint32)

    kern = cp.RawKernel(SOURCE, "bitonic_sort_1024", options=opts)
    k0, v0 = fresh()
    kern(grid, block, (k0, v0, np.int32(1)))
    t0 = time.perf_counter()
    p = consan.prepare(SOURCE, "bitonic_sort_1024", grid=grid, block=block, options=opts)
    k1, v1 = fresh()
    p.launch((k1, v1, np.int32(1)))
    rep = p.report()
    first_s = time.perf_counter() - t0
    same = bool((k0 == k1).all() and (v0 == v1).all())
    ok = rep.ok and not rep.violations and same
    kk, vv = fresh()
    native = _time(cp, lambda: kern(grid, block, (kk, vv, np.int32(1))), lambda: None, 3, 20)
    checked = _time(cp, lambda: p.launch((kk, vv, np.int32(1))),
                    lambda: p.report(sync=False), 1, 5)
    nat, con = statistics.median(native), statistics.median(checked)
    print("kernel | CTAs | native ms | consan ms | consan x | first launch s (build + run)")
    ratio = f"{con / nat:.1f}" if ok else "ERROR: " + ("not clean" if not rep.ok else "bits differ")
    print(f"bitonic_sort_1024 | {a.ctas} | {nat:.3f} | {con:.3f} | {ratio} | {first_s:.2f}")
    if a.json:
        Path(a.json).write_text(json.dumps({"native_ms": nat, "consan_ms": con, "clean": rep.ok,
                                            "same_bits": same, "first_launch_s": first_s,
                                            "ctas": a.ctas}, indent=2))
    if a.profile:
        from benchmarks import breakdown_async as bd

        bd.profile_build()
        p = consan.prepare(SOURCE, "bitonic_sort_1024", grid=grid, block=block, options=opts)
        bd.profiled_launch(p, (kk, vv, np.int32(1)), a.ctas)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
