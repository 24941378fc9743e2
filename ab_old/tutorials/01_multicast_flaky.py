"""Seed 001: a multicast kernel that is wrong only sometimes.

The story: Triton's ConSan gained a "read before any write" check because of a multicast
kernel that had been flaky for some time. A multicast copy (`cp.async.bulk ...
.multicast::cluster`) is issued once and lands in the shared memory of every CTA of its
ctaMask, completing bytes on each CTA's own mbarrier. A CTA that reads its copy of the data
without waiting on its own mbarrier reads whatever its shared memory held before: usually
the copy has landed by then, or the stale bytes a previous CTA left are the same values,
so the result is right most of the time.

This script is such a kernel in miniature: y = (x - rowmax(x)) * scale, with clusters of four
CTAs. The scale vector is loaded once per cluster: CTA rank 0 multicasts it into every CTA's
shared memory. The load was written as one block under `if (rank == 0)` (issue, then wait),
so only rank 0 waits for the bytes; ranks 1-3 reduce their row maxima first, and by then the
copy has usually landed. Measured natively on an H100 (`python
tutorials/01_multicast_flaky.py --runs 300`, three runs of the script): 56, 51 and 53 of 300
launches computed a wrong result, about one in six; `--fixed`: 0 of 300.

Run it under consan:

    consan run tutorials/01_multicast_flaky.py

consan reports `async.pending-write` on every run (three of three on the H100, 20 launches
each; exit status 1): a CTA of rank 1-3 reads the scale vector at the line marked `@read`
below before its own mbarrier said the bytes had landed, and the earlier site is the multicast
at `@copy`, issued by CTA rank 0. The fix, which `--fixed` compiles in (-DFIXED), moves the
wait out of the leader's block so every CTA waits on its own mbarrier:

    consan run tutorials/01_multicast_flaky.py --fixed     # no findings, exit status 0

The script checks every launch against numpy and exits 1 if any was wrong. It needs sm_90.
"""

from __future__ import annotations

import argparse
import functools
import sys

import numpy as np

CS, N, THREADS = 4, 8192, 256  # CTAs per cluster, floats per row (and of the scale vector)
ROWS = 4  # rows per CTA
CLUSTERS = 66  # clusters in the grid (264 CTAs)

SOURCE = r"""
// y[row, :] = (x[row, :] - max(x[row, :])) * scale[:], ROWS rows per CTA. The scale vector is
// loaded once per cluster: CTA rank 0 multicasts it into the shared memory of every CTA.
#define CS 4
#define N 8192
#define ROWS 4
#define CLUSTER_SYNC asm volatile("barrier.cluster.arrive.release.aligned;\n\t" \
                                  "barrier.cluster.wait.acquire.aligned;" ::: "memory")

__device__ __forceinline__ void wait_phase0(unsigned bar) {
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n"
                 " @!p bra W;\n}" :: "r"(bar) : "memory");
}

extern "C" __global__ void __cluster_dims__(CS, 1, 1) scale_rows(const float* x,
                                                                 const float* scale, float* y) {
    __shared__ __align__(128) float s[N];
    __shared__ float red[8];
    __shared__ __align__(8) unsigned long long full;
    unsigned t = threadIdx.x, rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    unsigned bar = (unsigned)__cvta_generic_to_shared(&full);
    if (t == 0) {  // every CTA arms its own mbarrier for the bytes the multicast brings it
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(bar), "n"(N * 4) : "memory");
    }
    CLUSTER_SYNC;  // the peers' mbarriers are initialised before the copy completes on them
    if (rank == 0) {  // the leader loads the scale vector for the whole cluster
        if (t == 0) {
            unsigned short every_cta = (1 << CS) - 1;
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                         ".multicast::cluster [%0], [%1], %2, [%3], %4;"
                         :: "r"((unsigned)__cvta_generic_to_shared(s)), "l"(scale), "n"(N * 4),
                            "r"(bar), "h"(every_cta) : "memory");  // @copy
        }
#ifndef FIXED
        wait_phase0(bar);  // the bug: only the CTA that issued the copy waits for it
#endif
    }
#ifdef FIXED
    wait_phase0(bar);  // the fix: every CTA waits for the bytes to land in its own memory
#endif
    for (int r = 0; r < ROWS; ++r) {
        const float* xr = x + ((size_t)blockIdx.x * ROWS + r) * N;
        float* yr = y + ((size_t)blockIdx.x * ROWS + r) * N;
        float v[N / 256], m = -3.402823466e38f;
        for (int k = 0; k < N / 256; ++k) {
            v[k] = xr[t + k * 256];
            m = fmaxf(m, v[k]);
        }
        for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (t % 32 == 0) red[t / 32] = m;
        __syncthreads();
        for (int w = 0; w < 8; ++w) m = fmaxf(m, red[w]);
        for (int k = 0; k < N / 256; ++k)
            yr[t + k * 256] = (v[k] - m) * s[t + k * 256];  // @read
        __syncthreads();  // red is rewritten for the next row
    }
    CLUSTER_SYNC;  // no CTA leaves while the copy may still write into a peer
}
"""

# What consan must report for the buggy version (tests/gpu/test_tutorials.py).
EXPECT = {"kind": "async.pending-write", "current": "@read", "earlier": "@copy"}


@functools.cache
def kernel(fixed: bool):
    """The scale_rows RawKernel (sm_90 or later)."""
    import cupy as cp

    cc = cp.cuda.Device().compute_capability
    if int(cc) < 90:
        raise SystemExit(f"this tutorial needs sm_90 (a Hopper GPU); this one is sm_{cc}")
    opts = (f"-arch=sm_{cc}{'a' if cc == '90' else ''}",) + (("-DFIXED",) if fixed else ())
    return cp.RawKernel(SOURCE, "scale_rows", options=opts)


def scale_rows(x, scale, fixed: bool):
    """(x - rowmax(x)) * scale on the GPU (CuPy float32, x of CLUSTERS * CS * ROWS rows of N)."""
    import cupy as cp

    if x.shape != (CLUSTERS * CS * ROWS, N) or scale.shape != (N,):
        raise ValueError(f"x must be {(CLUSTERS * CS * ROWS, N)} and scale ({N},)")
    y = cp.empty_like(x)
    kernel(fixed)((CLUSTERS * CS,), (THREADS,), (x, scale, y))
    return y


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fixed", action="store_true",
                   help="every CTA waits on its own mbarrier before reading the scale vector")
    p.add_argument("--runs", type=int, default=20, help="launches (each is checked)")
    args = p.parse_args(argv)

    import cupy as cp

    rng = np.random.default_rng(0)
    x = rng.standard_normal((CLUSTERS * CS * ROWS, N), dtype=np.float32)
    scale = rng.standard_normal(N, dtype=np.float32)
    want = (x - x.max(axis=1, keepdims=True)) * scale
    xd, sd = cp.asarray(x), cp.asarray(scale)
    errs = [float(np.abs(scale_rows(xd, sd, args.fixed).get() - want).max())
            for _ in range(args.runs)]
    wrong = sum(e > 0 for e in errs)
    print(f"scale_rows{' (fixed)' if args.fixed else ''}: {wrong} of {args.runs} launches "
          f"wrong; max |y - (x - rowmax) * scale| = {max(errs):.3g} "
          f"{'ok' if not wrong else 'WRONG'}")
    return 0 if not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
