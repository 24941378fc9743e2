"""Seed 003: an epilogue tile that aliases the operand tiles, guarded by a barrier alone.

The story: to raise occupancy, nvFuser taught its matmul scheduler to let the epilogue's
shared-memory tile reuse the memory of the A and B operand tiles once the main loop is done
(the C tile is placed at offset 0, on top of A). Reuse is only safe once every earlier use of
that memory has finished, and the reuse pass checked this the way one checks ordinary loads
and stores: it made sure a `__syncthreads()` separates the last read of A and B from the first
write of C. But in a cp.async pipeline the main loop is not the last writer of the operand
tiles: a multistage loop like the one below keeps issuing copies for tiles beyond the end of K
(predicated off, they still write zeros into their stage), and nobody waits for them. A
barrier cannot order an access against a copy the threads never waited for, so the
epilogue's C tile can be overwritten after it was written, once in a long while.

This script is a plain tiled SGEMM with that layout: a 32x64 tile per CTA, a 3-stage pipeline
(`cp.async.wait_group 1` at the top of each iteration, zero-fill copies past the end of K) in
one `extern __shared__` buffer, and the C tile at offset 0, aliasing A's stages 0 and 1. Run it
under consan:

    consan run tutorials/03_smem_reuse_epilogue.py

consan reports `async.pending-write` (exit status 1): the access is the epilogue's store into
the C tile (the line marked `@epilogue` below), the earlier site is the `cp.async` in `cp16z`,
inlined from the prefetch line (`@prefetch`): one of the two copies the last iterations issued
past the end of K. The fix, which `--fixed` compiles in (-DFIXED), drains the pipeline before
the `__syncthreads()` that guards the reuse:

    asm volatile("cp.async.wait_all;" ::: "memory");

    consan run tutorials/03_smem_reuse_epilogue.py --fixed     # no findings, exit status 0

The script checks C against numpy and exits 1 if the result is wrong; natively the buggy
kernel is almost always right.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

BM, BN, BK, STAGES, THREADS = 32, 64, 32, 3, 256
SMEM_BYTES = STAGES * (BM * BK + BK * BN) * 4  # 36 KiB of dynamic shared memory

SOURCE = r"""
// C[M,N] = A[M,K] @ B[K,N], row-major fp32. A 32x64 tile per CTA, 256 threads each computing
// 2x4 outputs, BK = 32, a 3-stage cp.async pipeline. One dynamic shared buffer holds
//   [ A stage 0 | A stage 1 | A stage 2 | B stage 0 | B stage 1 | B stage 2 ]
// and the epilogue's C tile (32x64 floats) at offset 0, reusing A stages 0 and 1.
#define BM 32
#define BN 64
#define BK 32
#define STAGES 3
#define A_TILE (BM * BK)  // floats
#define B_TILE (BK * BN)

// A 16-byte cp.async; with valid == false it reads nothing and writes 16 zero bytes.
__device__ __forceinline__ void cp16z(float* dst, const float* src, bool valid) {
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    int n = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :: "r"(d), "l"(src), "r"(n) : "memory");
}
#define COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#define WAIT(n) asm volatile("cp.async.wait_group %0;" :: "n"(n) : "memory")
#define WAIT_ALL() asm volatile("cp.async.wait_all;" ::: "memory")

// Stage s <- tile kt: one copy of A and two of B per thread. Tiles past the end of K are
// predicated off (zero-filled, source kept in bounds), so that every iteration commits a group.
// (A macro, so that a report names the line that uses it.)
#define LOAD_TILE(s, kt)                                                                 \
    do {                                                                                 \
        bool ok = (kt) < ntiles;                                                         \
        int k0 = ok ? (kt) * BK : 0;                                                     \
        cp16z(smem + (s) * A_TILE + t * 4, A + (m0 + t / 8) * K + k0 + t % 8 * 4, ok);   \
        for (int h = 0; h < 2; ++h) {                                                    \
            int e = t + h * 256;                                                         \
            cp16z(smem + STAGES * A_TILE + (s) * B_TILE + e * 4,                         \
                  B + (k0 + e / 16) * N + n0 + e % 16 * 4, ok);                          \
        }                                                                                \
    } while (0)

extern "C" __global__ void gemm_smem_epilogue(const float* A, const float* B, float* C,
                                              int N, int K) {
    extern __shared__ __align__(16) float smem[];
    int t = threadIdx.x, ty = t / 16, tx = t % 16;  // rows ty*2 + {0,1}, cols tx*4 + {0..3}
    int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, ntiles = K / BK;
    float acc[2][4] = {};

    LOAD_TILE(0, 0);
    COMMIT();
    LOAD_TILE(1, 1);
    COMMIT();
    for (int kt = 0; kt < ntiles; ++kt) {
        WAIT(STAGES - 2);  // tile kt has landed; the newest group may still be in flight
        __syncthreads();   // ... for every warp, and nobody reads stage (kt+2)%3 any more
        LOAD_TILE((kt + 2) % STAGES, kt + 2);  // @prefetch
        COMMIT();
        const float* As = smem + kt % STAGES * A_TILE;
        const float* Bs = smem + STAGES * A_TILE + kt % STAGES * B_TILE;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a0 = As[(ty * 2) * BK + k], a1 = As[(ty * 2 + 1) * BK + k];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                float b = Bs[k * BN + tx * 4 + j];
                acc[0][j] += a0 * b;
                acc[1][j] += a1 * b;
            }
        }
    }

    // Epilogue: the C tile reuses A's memory. The barrier orders every warp's last read of A
    // before the first write of C, but the two copies issued past the end of K may still land.
#ifdef FIXED
    WAIT_ALL();  // the fix: drain the pipeline before smem is reused
#endif
    __syncthreads();
    float* Cs = smem;  // [BM][BN] at offset 0: A stages 0 and 1
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
            Cs[(ty * 2 + i) * BN + tx * 4 + j] = acc[i][j];  // @epilogue
    __syncthreads();
    for (int e = t; e < BM * BN; e += blockDim.x)
        C[(m0 + e / BN) * N + n0 + e % BN] = Cs[e];
}
"""

# What consan must report for the buggy version (tests/gpu/test_tutorials.py).
EXPECT = {"kind": "async.pending-write", "current": "@epilogue", "earlier": "@prefetch"}


def matmul(a, b, fixed: bool):
    """C = a @ b on the GPU (CuPy float32 arrays)."""
    import cupy as cp

    (m, k), n = a.shape, b.shape[1]
    if m % BM or n % BN or k % BK:
        raise ValueError(f"shapes must be multiples of the tiles: M%{BM}, N%{BN}, K%{BK}")
    kernel = cp.RawKernel(SOURCE, "gemm_smem_epilogue", options=("-DFIXED",) if fixed else ())
    c = cp.empty((m, n), dtype=cp.float32)
    kernel((n // BN, m // BM), (THREADS,), (a, b, c, np.int32(n), np.int32(k)),
           shared_mem=SMEM_BYTES)
    return c


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fixed", action="store_true",
                   help="drain the cp.async pipeline (wait_all) before the epilogue")
    p.add_argument("-M", type=int, default=128)
    p.add_argument("-N", type=int, default=128)
    p.add_argument("-K", type=int, default=256)
    args = p.parse_args(argv)

    import cupy as cp

    rng = np.random.default_rng(0)
    a = rng.standard_normal((args.M, args.K), dtype=np.float32)
    b = rng.standard_normal((args.K, args.N), dtype=np.float32)
    got = matmul(cp.asarray(a), cp.asarray(b), args.fixed).get()
    want = a.astype(np.float64) @ b.astype(np.float64)
    err = float(np.abs(got - want).max())
    tol = 1e-4 * max(1.0, float(np.abs(want).max()))
    ok = err <= tol
    print(f"sgemm {args.M}x{args.N}x{args.K} with an aliased smem epilogue"
          f"{' (fixed)' if args.fixed else ''}: max |C - A@B| = {err:.3g} "
          f"(tolerance {tol:.3g}) {'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
