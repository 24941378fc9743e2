"""A TMA + wgmma GEMM tile (sm_90a), clean by design; a racy twin for seed 004.

D[M, 64] (f32) = A[M, K] (f16) @ B[64, K]^T (f16). One warpgroup per CTA computes 64
rows of D. A two-stage ring: thread 0 loads the A and B boxes of a 64-half K step
(64 x 64 halves each, 128-byte swizzle) with TMA tensor copies on the stage's
mbarrier; the warpgroup waits on it, runs four m64n64k16 wgmmas with K-major
descriptors, commits, waits for the group, and after a CTA barrier thread 0 refills
the stage. The 128-byte swizzle TMA writes is the layout the descriptors name, so no
generic store touches the operands and no proxy fence is needed. Shared by
tests/gpu/test_wgmma.py and benchmarks/bench_async.py.

Racy twin (seed 004 with TMA): the refill is issued before `wgmma.wait_group`, so the
copy engine may overwrite operands the wgmmas still read: async.pending-read at the
refill.
"""

from __future__ import annotations

import numpy as np

from tests.kernels.gpu_kernels import TMA_PRELUDE

KT = 64  # halves of K per stage: one 128-byte swizzled row per M / N row
STAGES = 2
BOX_BYTES = 64 * KT * 2

# The m64n64k16 wgmma (A and B K-major through descriptors, f32 accumulators in d[32])
# and the store of a warpgroup's 64 x 64 accumulator tile: shared with tests/gpu/test_wgmma.py.
WGMMA_TILE = r"""
typedef unsigned long long u64;
#define WGMMA_M64N64K16 "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %34, 0;\n\t" \
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {@REGS@}, %32, %33, p, 1, 1, 0, 0;\n\t}"
__device__ __forceinline__ void mma_m64n64k16(float* d, u64 da, u64 db, int accumulate) {
    asm volatile(WGMMA_M64N64K16 : @OUTS@ : "l"(da), "l"(db), "r"(accumulate));  // @mma
}
// Rows m0 .. m0+63 of D (64 columns). Accumulator layout of m64nNk16: warp w holds rows
// 16w..16w+15; lane l row l/4 (+8), columns 8i + 2(l%4) (+1) in d[4i .. 4i+3].
__device__ __forceinline__ void store_d(float* D, const float* d, int m0) {
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int row = m0 + warp * 16 + lane / 4, col = (lane % 4) * 2;
    for (int i = 0; i < 8; ++i) {
        D[row * 64 + 8 * i + col] = d[4 * i];
        D[row * 64 + 8 * i + col + 1] = d[4 * i + 1];
        D[(row + 8) * 64 + 8 * i + col] = d[4 * i + 2];
        D[(row + 8) * 64 + 8 * i + col + 1] = d[4 * i + 3];
    }
}
""".replace("@REGS@", ", ".join(f"%{i}" for i in range(32))).replace(
    "@OUTS@", ", ".join(f'"+f"(d[{i}])' for i in range(32)))

SRC = TMA_PRELUDE + WGMMA_TILE + r"""
#define KT @KT@
#define STAGES @STAGES@
#define BOX_BYTES @BOX_BYTES@

__device__ __forceinline__ void tma_2d(void* dst, const TensorMap128* map, int x, int y,
                                       u64* b) {
    // (NVRTC gives an asm statement the line of its operands: the marker is there)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile"
                 ".mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(sa(dst)), "l"((u64)map), "r"(x), "r"(y), "r"(sa(b))  // @tma
                 : "memory");
}

// Descriptor of K step s (halves 16s .. 16s+15) of a 64 x KT tile, K-major, 128-byte
// swizzle: start address advanced 32 bytes a step, leading byte offset unused, stride
// byte offset 1024 (8 rows of 128 bytes), layout type 1.
__device__ __forceinline__ u64 step_desc(const void* tile, int s) {
    unsigned a = sa(tile) + 32 * s;
    return (u64)((a & 0x3FFFF) >> 4) | (u64)(16 >> 4) << 16 | (u64)(1024 >> 4) << 32 |
           (u64)1 << 62;
}

// Thread 0: both boxes of K step ks, on the mbarrier of its stage.
__device__ __forceinline__ void issue(unsigned short* as, unsigned short* bs, u64* bar,
                                      const TensorMap128* amap, const TensorMap128* bmap,
                                      int ks, int m0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :: "r"(sa(bar)), "r"(2 * BOX_BYTES) : "memory");
    tma_2d(as, amap, ks * KT, m0, bar);
    tma_2d(bs, bmap, ks * KT, 0, bar);
}
#define ISSUE(ks) issue(As[(ks) % STAGES], Bs[(ks) % STAGES], &full[(ks) % STAGES], &amap, \
                        &bmap, (ks), m0)

extern "C" __global__ void __launch_bounds__(128)
tma_wgmma_gemm(const __grid_constant__ TensorMap128 amap,
               const __grid_constant__ TensorMap128 bmap, float* D, int ksteps) {
    __shared__ __align__(1024) unsigned short As[STAGES][64 * KT];
    __shared__ __align__(1024) unsigned short Bs[STAGES][64 * KT];
    __shared__ __align__(8) u64 full[STAGES];
    int t = threadIdx.x;
    int m0 = blockIdx.x * 64;
    if (t == 0)
        for (int s = 0; s < STAGES; ++s) mb_init(&full[s], 1);
    __syncthreads();
    if (t == 0)
        for (int ks = 0; ks < STAGES && ks < ksteps; ++ks) ISSUE(ks);
    float d[32];
    for (int i = 0; i < 32; ++i) d[i] = 0.0f;
    for (int ks = 0; ks < ksteps; ++ks) {
        int s = ks % STAGES;
        mb_wait(&full[s], (ks / STAGES) & 1);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int k = 0; k < KT / 16; ++k)
            mma_m64n64k16(d, step_desc(As[s], k), step_desc(Bs[s], k), ks > 0 || k > 0);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        EARLY_REFILL
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");  // @wait
        __syncthreads();  // every warp's wgmmas are done with stage s
        LATE_REFILL
    }
    store_d(D, d, m0);
}
"""

KERNEL = "tma_wgmma_gemm"
BLOCK = (128, 1, 1)
_REFILL = "if (t == 0 && ks + STAGES < ksteps) ISSUE(ks + STAGES);  // @refill"


def source(racy: bool = False) -> str:
    """The kernel; the racy twin refills a stage before wgmma.wait_group (seed 004)."""
    return (SRC.replace("@KT@", str(KT)).replace("@STAGES@", str(STAGES))
            .replace("@BOX_BYTES@", str(BOX_BYTES))
            .replace("EARLY_REFILL", _REFILL if racy else "")
            .replace("LATE_REFILL", "" if racy else _REFILL))


SOURCE = source()


def grid(m: int) -> tuple[int, int, int]:
    return (m // 64, 1, 1)


def inputs(xp, m: int, k: int, seed: int = 5):
    """A (m, k) and B (64, k) of small integers in fp16 (exact in fp32), D filled with
    NaN, and the reference D."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-2, 3, size=(m, k)).astype(np.float16)
    b = rng.integers(-2, 3, size=(64, k)).astype(np.float16)
    d = xp.full((m, 64), np.nan, dtype=xp.float32)
    return xp.asarray(a), xp.asarray(b), d, a.astype(np.float32) @ b.astype(np.float32).T


def args(a, b, d, k: int) -> tuple:
    """Kernel arguments: the two 128-byte-swizzled tensor maps (boxes of 64 x KT halves)."""
    import consan

    amap = consan.tensor_map(a, box_shape=(64, KT), swizzle="128B")
    bmap = consan.tensor_map(b, box_shape=(64, KT), swizzle="128B")
    return (amap, bmap, d, np.int32(k // KT))
