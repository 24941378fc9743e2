"""Seed 002: a bulk (TMA) store of an epilogue tile without `fence.proxy.async`.

The story: nvFuser's Hopper matmul epilogue writes the output tile to shared memory with
ordinary stores, synchronises the block, and hands the tile to the TMA unit, which copies it to
global memory. Ordinary stores go through the *generic* proxy; the TMA unit reads shared
memory through the *async* proxy, and a `__syncthreads()` orders threads, not proxies. Unless
every thread that wrote the tile executes `fence.proxy.async` between its writes and the
barrier, the bulk store may read bytes the generic stores have not yet made visible to it. The
nvFuser pull request that fixed this (adding `fenceAsyncProxy()` where block syncs are
inserted) found the missing fences by reading PTX; natively the result is almost always right,
and compute-sanitizer's racecheck does not see it.

This script is that epilogue in miniature: each CTA computes relu(x * scale + bias) for a tile
of 1024 floats, stages it in shared memory, and one thread issues the bulk store
(`cp.async.bulk.global.shared::cta.bulk_group`, commit, wait). Run it under consan:

    consan run tutorials/02_tma_store_fence.py

consan reports `proxy.missing-fence` (exit status 1): the access is the bulk store (the line
marked `@store` below), the earlier site is the generic store into the tile (`@write`), made by
every warp of the CTA, none of which fenced. The fix, which `--fixed` compiles in (-DFIXED), is
one line after the writes, before the barrier:

    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");

    consan run tutorials/02_tma_store_fence.py --fixed     # no findings, exit status 0

The script checks the output against numpy and exits 1 if it is wrong. It needs sm_90.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

TILE, THREADS = 1024, 256

SOURCE = r"""
// y = relu(x * scale + bias), one 1024-float tile per CTA, staged in shared memory and written
// out by the bulk-copy (TMA) unit.
#define TILE 1024

extern "C" __global__ void epilogue_bulk_store(const float* x, float* y, float scale,
                                               float bias) {
    __shared__ __align__(128) float tile[TILE];
    int t = threadIdx.x;
    const float* src = x + (size_t)blockIdx.x * TILE;
    for (int i = t; i < TILE; i += blockDim.x)
        tile[i] = fmaxf(src[i] * scale + bias, 0.0f);  // @write
#ifdef FIXED
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the fix
#endif
    __syncthreads();  // orders the threads' stores, not the proxies
    if (t == 0) {
        unsigned s = (unsigned)__cvta_generic_to_shared(tile);
        float* dst = y + (size_t)blockIdx.x * TILE;
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                     :: "l"(dst), "r"(s), "n"(TILE * 4) : "memory");  // @store
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
"""

# What consan must report for the buggy version (tests/gpu/test_tutorials.py).
EXPECT = {"kind": "proxy.missing-fence", "current": "@store", "earlier": "@write"}


def epilogue(x, scale: float, bias: float, fixed: bool):
    """relu(x * scale + bias) on the GPU through the bulk-store epilogue (CuPy float32)."""
    import cupy as cp

    if x.size % TILE:
        raise ValueError(f"the size must be a multiple of {TILE}")
    cc = cp.cuda.Device().compute_capability
    if int(cc) < 90:
        raise SystemExit(f"this tutorial needs sm_90 (a Hopper GPU); this one is sm_{cc}")
    opts = (f"-arch=sm_{cc}{'a' if cc == '90' else ''}",) + (("-DFIXED",) if fixed else ())
    kernel = cp.RawKernel(SOURCE, "epilogue_bulk_store", options=opts)
    y = cp.empty_like(x)
    kernel((x.size // TILE,), (THREADS,), (x, y, np.float32(scale), np.float32(bias)))
    return y


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fixed", action="store_true",
                   help="fence.proxy.async after the tile is written, before the barrier")
    p.add_argument("-n", type=int, default=64 * TILE)
    args = p.parse_args(argv)

    import cupy as cp

    x = np.random.default_rng(0).standard_normal(args.n, dtype=np.float32)
    got = epilogue(cp.asarray(x), 1.5, 0.25, args.fixed).get()
    want = np.maximum(x * np.float32(1.5) + np.float32(0.25), 0.0)
    err = float(np.abs(got - want).max())
    ok = err <= 1e-6
    print(f"bulk-store epilogue over {args.n} floats{' (fixed)' if args.fixed else ''}: "
          f"max |y - relu(x*s+b)| = {err:.3g} {'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
