"""Seed 004: a wgmma pipeline whose operand tiles are refilled before the wgmmas finish.

The story: nvFuser's Hopper matmul issues `wgmma.mma_async` on operand tiles in shared memory.
The instruction only starts the work: the warpgroup's wgmma unit reads the tiles later, until a
`wgmma.wait_group` retires the group it belongs to. nvFuser's pull request "use a single wgmma
wait_group to flush async wgmma pipeline" changed where that wait goes, and its reviewers
showed how easily such a rule misses a case: whenever the next use of the tiles (here, the
next K step refilling them) is not preceded by a wait, a `__syncthreads()` orders the warps
but not the wgmma unit, and the refill can overwrite operands the previous wgmmas are still
reading. The result is almost always right; once in a while a product uses the next tile.

This script is that loop in miniature: one warpgroup computes D = A * B^T (64 x 64, f32) from
f16 operands in two K steps; each step stores the A and B tiles to shared memory, fences them
for the async proxy, issues four m64n64k16 wgmmas and commits them. The buggy version waits
for the wgmmas only after the loop. Run it under consan:

    consan run tutorials/04_wgmma_flush.py

consan reports `async.pending-read` (exit status 1): the access is the refill of the tiles (the
line marked `@refill` below, through the `put` helper), the earlier site is the wgmma (`@mma`)
whose group no `wgmma.wait_group` had retired. The fix, which `--fixed` compiles in
(-DFIXED), flushes the pipeline before the barrier that ends each step:

    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");

    consan run tutorials/04_wgmma_flush.py --fixed     # no findings, exit status 0

The script checks D against numpy (small integers: the result is exact) and exits 1 if it is
wrong. It needs sm_90a (a Hopper GPU).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

KT, KSTEPS, CTAS = 64, 2, 2

SOURCE = r"""
// D (64 x 64, f32) += A (64 x 128, f16) * B^T (B: 64 x 128, f16) by one warpgroup, in two
// K steps of 64 halves. Each step stages the A and B tiles in shared memory (8x8 core
// matrices, no swizzle), fences them for the async proxy, and issues four m64n64k16 wgmmas
// that read the tiles asynchronously; commit_group closes the step's group.
#define KT 64
#define KSTEPS 2
typedef unsigned long long u64;

__device__ __forceinline__ u64 smem_desc(const void* p, unsigned lbo, unsigned sbo) {
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    return (u64)((a & 0x3FFFF) >> 4) | (u64)((lbo & 0x3FFFF) >> 4) << 16 |
           (u64)((sbo & 0x3FFFF) >> 4) << 32;  // no swizzle
}
// Byte offset of element (r, k) of a 64 x KT K-major tile: core (r/8, k/8) at
// ((r/8) * KT/8 + k/8) * 128.
__device__ __forceinline__ int tile_off(int r, int k) {
    return ((r / 8) * (KT / 8) + k / 8) * 128 + (r % 8) * 16 + (k % 8) * 2;
}
__device__ __forceinline__ u64 step_desc(const void* tile, int s) {  // halves 16s..16s+15
    return smem_desc((const char*)tile + 256 * s, 128, (KT / 8) * 128);
}
__device__ __forceinline__ void mma_m64n64k16(float* d, u64 da, u64 db, int accumulate) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %34, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, "
                 "%8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, "
                 "%24, %25, %26, %27, %28, %29, %30, %31}, "
                 "%32, %33, p, 1, 1, 0, 0;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),
                   "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
                   "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
                   "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db), "r"(accumulate));  // @mma
}
__device__ __forceinline__ void put(unsigned short* tile, int r, int k, unsigned short v) {
    *(unsigned short*)((char*)tile + tile_off(r, k)) = v;
}

extern "C" __global__ void __launch_bounds__(128) wgmma_pipeline(const unsigned short* A,
                                                                 const unsigned short* B,
                                                                 float* D) {
    __shared__ __align__(1024) unsigned short As[64 * KT];
    __shared__ __align__(1024) unsigned short Bs[64 * KT];
    int t = threadIdx.x;
    const unsigned short* Ab = A + blockIdx.x * 64 * (KT * KSTEPS);
    float d[32];
    for (int i = 0; i < 32; ++i) d[i] = 0.0f;
    for (int ks = 0; ks < KSTEPS; ++ks) {
        for (int e = t; e < 64 * KT; e += 128) {
            int r = e / KT, k = e % KT, g = r * (KT * KSTEPS) + ks * KT + k;
            unsigned short a = Ab[g], b = B[g];
            put(As, r, k, a), put(Bs, r, k, b);  // @refill
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        for (int s = 0; s < KT / 16; ++s)
            mma_m64n64k16(d, step_desc(As, s), step_desc(Bs, s), ks > 0 || s > 0);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#ifdef FIXED
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");  // the fix: flush
#endif
        __syncthreads();  // orders the warps, not the wgmma unit's reads
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    // accumulators of m64nNk16: warp w holds rows 16w..16w+15; lane l row l/4 (+8),
    // columns 8i + 2(l%4) (+1) in d[4i .. 4i+3]
    int warp = t / 32, lane = t % 32;
    int row = blockIdx.x * 64 + warp * 16 + lane / 4, col = (lane % 4) * 2;
    for (int i = 0; i < 8; ++i) {
        D[row * 64 + 8 * i + col] = d[4 * i];
        D[row * 64 + 8 * i + col + 1] = d[4 * i + 1];
        D[(row + 8) * 64 + 8 * i + col] = d[4 * i + 2];
        D[(row + 8) * 64 + 8 * i + col + 1] = d[4 * i + 3];
    }
}
"""

# What consan must report for the buggy version (tests/gpu/test_tutorials.py).
EXPECT = {"kind": "async.pending-read", "current": "@refill", "earlier": "@mma"}


def gemm(a, b, fixed: bool):
    """D = a @ b.T on the GPU for a (64*CTAS x 128) and b (64 x 128) f16 CuPy arrays."""
    import cupy as cp

    cc = cp.cuda.Device().compute_capability
    if cc != "90":
        raise SystemExit(f"this tutorial needs sm_90a (a Hopper GPU); this one is sm_{cc}")
    opts = ("-arch=sm_90a",) + (("-DFIXED",) if fixed else ())
    kernel = cp.RawKernel(SOURCE, "wgmma_pipeline", options=opts)
    d = cp.zeros((a.shape[0], 64), dtype=cp.float32)
    kernel((a.shape[0] // 64,), (128,), (a, b, d))
    return d


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fixed", action="store_true",
                   help="wgmma.wait_group 0 before the barrier that ends each K step")
    args = p.parse_args(argv)

    import cupy as cp

    rng = np.random.default_rng(4)
    a = rng.integers(-2, 3, size=(CTAS * 64, KT * KSTEPS)).astype(np.float16)
    b = rng.integers(-2, 3, size=(64, KT * KSTEPS)).astype(np.float16)
    got = gemm(cp.asarray(a), cp.asarray(b), args.fixed).get()
    want = a.astype(np.float32) @ b.astype(np.float32).T
    err = float(np.abs(got - want).max())
    ok = err == 0.0
    print(f"wgmma pipeline {a.shape[0]}x64x{a.shape[1]}{' (fixed)' if args.fixed else ''}: "
          f"max |D - A@B^T| = {err:.3g} {'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
