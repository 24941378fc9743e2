"""Where an instrumented kernel's time goes: one launch of a bench_clean kernel
(at its --quick size) under consan or natively, for ncu to profile, e.g.

  ncu --kernel-name sgemm_tiled --section SpeedOfLight \
      python benchmarks/profile_probe.py sgemm_tiled [--native]
"""

from __future__ import annotations

import sys

import cupy as cp

import consan
from benchmarks.bench_clean import QUICK_SIZES
from tests.kernels import gpu_kernels as gk


def main(name: str, native: bool) -> None:
    s = gk.clean_setup(name, QUICK_SIZES[name], cp)
    args, _ = s.make_args(cp)
    if native:
        cp.RawKernel(s.source, s.name)(s.grid, s.block, args, shared_mem=s.shared_mem)
    else:
        p = consan.prepare(s.source, s.name, grid=s.grid, block=s.block, shared_mem=s.shared_mem)
        p.launch(args)
        print(p.report().summary)
    cp.cuda.Device().synchronize()


if __name__ == "__main__":
    main(sys.argv[1], "--native" in sys.argv)
