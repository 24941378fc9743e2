#!/usr/bin/env python
"""Which kernels the proof before launch takes (instrument/static_proof.py), and why not
the others: no GPU needed.

    PYTHONPATH=. python benchmarks/proof_coverage.py [--triton-cache DIR]

Kernels: bench_clean's five (CUDA C++ through NVRTC, at the block and grid bench_clean
launches with n = 64),
bench_async's four (at their benchmark launch, with their tensor maps' copy sizes),
the GPU suite's racy/clean twins (tests/kernels/gpu_kernels.py, at their blocks), and,
where Triton is installed, the Triton corpus (tests/kernels/triton_corpus.py, compiled for
its capability, at its `.reqntid`). Under the front ends a proven kernel runs natively;
`consan.prepare` (bench_clean's and bench_async's path) instruments every kernel.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from instrument.static_proof import Proof

CUDA_OPTIONS = ["-arch=compute_90a", "-std=c++17", "-lineinfo"]


def verdict(ptx: str, kernel: str, block: tuple[int, int, int] | None,
            params: dict[int, int] | None = None, maps: tuple = (),
            grid: tuple[int, int, int] | None = None) -> tuple[str, float]:
    """('proven' or why not, seconds the proof took) for `kernel` of `ptx`; where a value
    not known before launch stood in the way, again with the launch's integer `params`,
    maps and `grid` (as the front ends do)."""
    from tests.proof_util import prove_kernel

    t0 = time.perf_counter()
    got = prove_kernel(ptx, kernel, dims=block)
    if not isinstance(got, Proof) and got.unknown and (params or maps or grid):
        got = prove_kernel(ptx, kernel, dims=block, params=params, maps=maps, grid=grid)
    took = time.perf_counter() - t0
    if isinstance(got, Proof):
        given = [w for w, on in (("integer arguments", got.params), ("grid", got.grid)) if on]
        return ("proven" + (f" for its launch's {' and '.join(given)}" if given else "")), took
    return got, took


def cuda_rows() -> list[tuple[str, str, tuple, str, float]]:
    from consan.cupy_hook import scalar_params
    from tests import corpus_build
    from tests.kernels import gpu_kernels as K

    rows = []
    for name, src in K.CLEAN.items():
        setup = K.clean_setup(name, 64 if name != "transpose_tiled" and name != "sgemm_tiled"
                              else ((64, 64) if name == "transpose_tiled" else (64, 64, 16)),
                              np)
        ptx = corpus_build.compile_cached(src, f"{name}.cu", CUDA_OPTIONS)
        params = scalar_params(setup.make_args(np)[0])
        rows.append(("bench_clean", name, setup.block, *verdict(ptx, name, setup.block,
                                                                params, grid=setup.grid)))
    for tw in K.TWINS:
        for kind, src, name in (("racy", tw.racy_src, tw.racy_name),
                                ("clean", tw.clean_src, tw.clean_name)):
            ptx = corpus_build.compile_cached(src, f"{name}.cu", CUDA_OPTIONS)
            rows.append((f"twin {kind}", name, tw.block, *verdict(ptx, name, tw.block,
                                                                  grid=tw.grid)))
    return rows


def async_rows() -> list[tuple[str, str, tuple, str, float]]:
    """bench_async's kernels at their benchmark launch: integer arguments and tensor maps'
    copy sizes as the CuPy hook gives them."""
    from tests import corpus_build
    from tests.kernels import dsmem_ring, mma_gemm, tma_wgmma_gemm
    from tests.kernels import gpu_kernels as gk

    sys.path.insert(0, str(Path(__file__).parent))
    import bench_async as ba

    box = gk.TMA_RING_ROWS * gk.TMA_RING_COLS * 4
    wgmma_box = 64 * tma_wgmma_gemm.KT * 2
    kernels = [
        ("mma_gemm_cp_async", mma_gemm.SOURCE, mma_gemm.KERNEL, mma_gemm.BLOCK,
         {3: (1024, 32), 4: (1024, 32), 5: (1024, 32)}, ()),
        ("tma_ring_4stage", gk.fill(gk.TMA_RING, gk.TMA_RING_CLEAN), "tma_ring", (96, 1, 1),
         {2: (ba.RING_TILES, 32)}, (box,)),
        ("tma_wgmma_gemm", tma_wgmma_gemm.SOURCE, tma_wgmma_gemm.KERNEL, tma_wgmma_gemm.BLOCK,
         {3: (ba.GEMM_K // tma_wgmma_gemm.KT, 32)}, (wgmma_box, wgmma_box)),
        ("dsmem_ring_2cta", dsmem_ring.SOURCE, dsmem_ring.KERNEL, dsmem_ring.BLOCK,
         {2: (ba.DSMEM_TILES, 32)}, ()),
    ]
    rows = []
    for label, src, name, block, params, maps in kernels:
        ptx = corpus_build.compile_cached(src, f"{name}.cu", CUDA_OPTIONS)
        rows.append(("bench_async", label, block, *verdict(ptx, name, block, params, maps)))
    return rows


def triton_rows(cache: str) -> list[tuple[str, str, tuple, str, float]]:
    try:
        from tests.kernels import triton_corpus as tc
    except ImportError:
        return []
    if not tc.HAVE_TRITON:
        return []
    rows = []
    for case in tc.CASES:
        ptx, meta = tc.cached_ptx(case, cache)
        block = (32 * int(meta["num_warps"]), 1, 1)
        scalars, maps = tc.launch_values(case, ptx, meta)
        rows.append(("triton", case.name, block,
                     *verdict(ptx, meta["name"], None, scalars, maps, case.grid)))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--triton-cache", default=str(Path(tempfile.gettempdir()) / "consan-tc"),
                   help="where the Triton corpus' PTX is kept between runs")
    a = p.parse_args(argv)
    rows = cuda_rows() + async_rows() + triton_rows(a.triton_cache)
    print("set | kernel | block | proof | ms")
    print("---|---|---|---|---")
    for group, name, block, why, took in rows:
        print(f"{group} | {name} | {'x'.join(map(str, block))} | {why} | {took * 1000:.0f}")
    for group in dict.fromkeys(r[0] for r in rows):
        mine = [r for r in rows if r[0] == group]
        print(f"{group}: {sum(r[3].startswith('proven') for r in mine)} of {len(mine)} "
              "proven")
    return 0


if __name__ == "__main__":
    sys.exit(main())
