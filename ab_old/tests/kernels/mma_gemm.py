"""A multi-stage cp.async + ldmatrix + mma.sync GEMM tile (sm_80+), clean by design.

C[M,N] = A[M,K] @ B[K,N] in fp32 from fp16 inputs, with B given transposed
(Bt[N,K]) so both operands are K-contiguous. CTA tile 64x64x32, four warps in
2x2 each owning 32x32, a three-stage cp.async ring: the classic Ampere main
loop that seeds 000/003 come from. Shared by tests/gpu/test_async.py and
benchmarks/bench_async.py.
"""

from __future__ import annotations

import numpy as np

SRC = r"""
#define BM 64
#define BN 64
#define BK 32
#define STAGES 3
#define LDS (BK + 8)  // padded row, in halves (80 bytes: 16-byte aligned)

__device__ __forceinline__ void cp16(void* dst, const void* src) {
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void ldm_x4(unsigned* r, const void* p) {
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

extern "C" __global__ void __launch_bounds__(128)
mma_gemm(const unsigned short* A, const unsigned short* Bt, float* C, int M, int N, int K) {
    __shared__ __align__(16) unsigned short As[STAGES][BM][LDS];
    __shared__ __align__(16) unsigned short Bs[STAGES][BN][LDS];
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    const int wm = warp / 2, wn = warp % 2;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int KT = K / BK;
    float acc[2][4][4] = {};

    auto load = [&](int stage, int kt) {
        for (int i = t; i < BM * BK / 8; i += 128) {  // 16-byte chunks
            int r = i / (BK / 8), c = (i % (BK / 8)) * 8;
            cp16(&As[stage][r][c], A + (size_t)(m0 + r) * K + kt * BK + c);  // @cp-a
            cp16(&Bs[stage][r][c], Bt + (size_t)(n0 + r) * K + kt * BK + c);
        }
    };
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load(s, s);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    for (int kt = 0; kt < KT; ++kt) {
        asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 2) : "memory");
        __syncthreads();
        int next = kt + STAGES - 1;
        if (next < KT) load(next % STAGES, next);
        asm volatile("cp.async.commit_group;" ::: "memory");
        const int st = kt % STAGES;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[2][4], b[2][4];
#pragma unroll
            for (int mi = 0; mi < 2; ++mi)
                ldm_x4(a[mi], &As[st][wm * 32 + mi * 16 + lane % 16][kk + (lane / 16) * 8]);
#pragma unroll
            for (int nj = 0; nj < 2; ++nj)
                ldm_x4(b[nj], &Bs[st][wn * 32 + nj * 16 + lane % 8 + (lane / 16) * 8]
                                 [kk + ((lane / 8) % 2) * 8]);
#pragma unroll
            for (int mi = 0; mi < 2; ++mi)
#pragma unroll
                for (int ni = 0; ni < 4; ++ni) {
                    unsigned b0 = b[ni / 2][(ni % 2) * 2], b1 = b[ni / 2][(ni % 2) * 2 + 1];
                    float* c = acc[mi][ni];
                    asm volatile(
                        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                        : "r"(a[mi][0]), "r"(a[mi][1]), "r"(a[mi][2]), "r"(a[mi][3]),
                          "r"(b0), "r"(b1));
                }
        }
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    const int g = lane / 4, c2 = (lane % 4) * 2;
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
            int row = m0 + wm * 32 + mi * 16 + g, col = n0 + wn * 32 + ni * 8 + c2;
            C[(size_t)row * N + col] = acc[mi][ni][0];
            C[(size_t)row * N + col + 1] = acc[mi][ni][1];
            C[(size_t)(row + 8) * N + col] = acc[mi][ni][2];
            C[(size_t)(row + 8) * N + col + 1] = acc[mi][ni][3];
        }
}
"""

SOURCE = SRC  # fp16 moves as raw 16-bit words: no cuda_fp16.h, so NVRTC needs no include path
KERNEL = "mma_gemm"
BLOCK = (128, 1, 1)


def grid(m: int, n: int) -> tuple[int, int, int]:
    return (n // 64, m // 64, 1)


def inputs(xp, m: int, n: int, k: int, seed: int = 3):
    """Small integers in fp16: products and sums are exact in fp32."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-2, 3, size=(m, k)).astype(np.float16)
    bt = rng.integers(-2, 3, size=(n, k)).astype(np.float16)
    c = xp.zeros((m, n), dtype=xp.float32)
    return xp.asarray(a), xp.asarray(bt), c, (a.astype(np.float32) @ bt.astype(np.float32).T)


def args(a, bt, c, m: int, n: int, k: int) -> tuple:
    return (a, bt, c, np.int32(m), np.int32(n), np.int32(k))
