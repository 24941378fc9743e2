"""Seed 000: a split-K matmul whose shared-memory epilogue races with an unused cp.async.

The story: a code generator's split-K matmul (nvFuser's benchmark, 3 stages, smem epilogue on)
returned a handful of wrong elements per million on A100 and H100, but never under
compute-sanitizer or when slowed down. The main loop is a cp.async circular buffer whose last
iteration still prefetches one stage nobody reads, and it waits with `cp.async.wait_group 1`,
which leaves that newest group in flight. The epilogue then reuses the stage buffers to stage
the output tile, guarded by the `__syncthreads()` that shared-memory reuse inserts. A barrier
orders the threads, not the copy engine: when the stray copy lands late it overwrites part of
the staged output, and the result is wrong only when the timing is unlucky. The fix was one
line, `cp.async.wait_group 0` before the epilogue.

This script is that kernel made small: fp32, a 64x64 tile per CTA, two stages, one K slice per
`blockIdx.z`, partial tiles added into C with `atomicAdd`. Run it under consan:

    consan run tutorials/00_splitk_epilogue.py

consan reports `async.pending-write` (exit status 1) on every run, whatever the timing. The
access is the epilogue's store into the staged tile (the line marked `@epilogue` below); the
earlier site is the `cp.async` in `cp16`, inlined from the prefetch line (`@prefetch`) of the
main loop, whose last iteration issued the copy that nobody waited for. The fix, which
`--fixed` compiles in (-DFIXED), goes before the epilogue's barrier:

    asm volatile("cp.async.wait_group 0;" ::: "memory");

    consan run tutorials/00_splitk_epilogue.py --fixed     # no findings, exit status 0

The script checks C against numpy and exits 1 if the result is wrong; natively the buggy
kernel is usually right, which is exactly why this bug was hard to find.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

BM, BN, BK, THREADS = 64, 64, 16, 256

SOURCE = r"""
// Split-K SGEMM: C[M,N] += A[M,K] @ B[K,N] over the K slice of blockIdx.z (row-major fp32).
// A 64x64 output tile per CTA, 256 threads each computing 4x4 outputs, BK = 16, two stages.
#define BM 64
#define BN 64
#define BK 16
#define STAGE (BM * BK + BK * BN)  // floats per stage: the A tile, then the B tile

__device__ __forceinline__ void cp16(float* dst, const float* src) {
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), "l"(src) : "memory");
}
#define COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#define WAIT(n) asm volatile("cp.async.wait_group %0;" :: "n"(n) : "memory")

// Fill stage `st` with the tiles at k0: each thread copies 16 bytes of A and 16 bytes of B.
// (A macro, so that a report names the line that uses it.)
#define LOAD_STAGE(st, k0)                                                       \
    do {                                                                         \
        cp16((st) + t * 4, A + (m0 + t / 4) * K + (k0) + t % 4 * 4);            \
        cp16((st) + BM * BK + t * 4, B + ((k0) + t / 16) * N + n0 + t % 16 * 4); \
    } while (0)

extern "C" __global__ void splitk_sgemm(const float* A, const float* B, float* C,
                                        int N, int K, int k_per_split) {
    __shared__ __align__(16) float smem[2 * STAGE];  // 16 KiB; the epilogue reuses all of it
    int t = threadIdx.x, ty = t / 16, tx = t % 16;
    int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, kbeg = blockIdx.z * k_per_split;
    int ntiles = k_per_split / BK;
    float acc[4][4] = {};

    LOAD_STAGE(smem, kbeg);
    COMMIT();
    for (int kt = 0; kt < ntiles; ++kt) {
        // Prefetch tile kt+1 into the other stage. The last iteration keeps the pipeline's
        // shape and fetches once more (the last tile again, to stay in bounds): nobody reads it.
        int next = kt + 1 < ntiles ? kt + 1 : kt;
        LOAD_STAGE(smem + (kt + 1) % 2 * STAGE, kbeg + next * BK);  // @prefetch
        COMMIT();
        WAIT(1);  // tile kt has landed; the group just committed may still be in flight
        __syncthreads();
        const float* As = smem + kt % 2 * STAGE;
        const float* Bs = As + BM * BK;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = As[(ty * 4 + i) * BK + k];
#pragma unroll
            for (int j = 0; j < 4; ++j) b[j] = Bs[k * BN + tx * 4 + j];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();  // every warp is done with stage kt%2 before it is refilled
    }

    // Epilogue: stage the 64x64 partial tile in shared memory, reusing both stages, so that
    // the atomics to C below are coalesced.
#ifdef FIXED
    WAIT(0);  // the fix: drain the pipeline, the unused prefetch included
#endif
    __syncthreads();  // the barrier smem reuse inserts: no thread reads a stage any more
    float* Cs = smem;  // [BM][BN], aliases both stages
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
            Cs[(ty * 4 + i) * BN + tx * 4 + j] = acc[i][j];  // @epilogue
    __syncthreads();
    for (int e = t; e < BM * BN; e += blockDim.x)
        atomicAdd(&C[(m0 + e / BN) * N + n0 + e % BN], Cs[e]);
}
"""

# What consan must report for the buggy version (tests/gpu/test_tutorials.py).
EXPECT = {"kind": "async.pending-write", "current": "@epilogue", "earlier": "@prefetch"}


def splitk_matmul(a, b, splits: int, fixed: bool):
    """C = a @ b on the GPU (CuPy float32 arrays), with `splits` K slices per output tile."""
    import cupy as cp

    (m, k), n = a.shape, b.shape[1]
    if m % BM or n % BN or k % (splits * BK):
        raise ValueError(f"shapes must be multiples of the tiles: M%{BM}, N%{BN}, "
                         f"K%({splits}*{BK})")
    kernel = cp.RawKernel(SOURCE, "splitk_sgemm", options=("-DFIXED",) if fixed else ())
    c = cp.zeros((m, n), dtype=cp.float32)
    kernel((n // BN, m // BM, splits), (THREADS,),
           (a, b, c, np.int32(n), np.int32(k), np.int32(k // splits)))
    return c


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fixed", action="store_true",
                   help="drain the cp.async pipeline (wait_group 0) before the epilogue")
    p.add_argument("-M", type=int, default=128)
    p.add_argument("-N", type=int, default=128)
    p.add_argument("-K", type=int, default=512)
    p.add_argument("--splits", type=int, default=4)
    args = p.parse_args(argv)

    import cupy as cp

    rng = np.random.default_rng(0)
    a = rng.standard_normal((args.M, args.K), dtype=np.float32)
    b = rng.standard_normal((args.K, args.N), dtype=np.float32)
    got = splitk_matmul(cp.asarray(a), cp.asarray(b), args.splits, args.fixed).get()
    want = a.astype(np.float64) @ b.astype(np.float64)
    err = float(np.abs(got - want).max())
    tol = 1e-4 * max(1.0, float(np.abs(want).max()))
    ok = err <= tol
    print(f"split-K sgemm {args.M}x{args.N}x{args.K}, {args.splits} splits"
          f"{' (fixed)' if args.fixed else ''}: max |C - A@B| = {err:.3g} "
          f"(tolerance {tol:.3g}) {'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
