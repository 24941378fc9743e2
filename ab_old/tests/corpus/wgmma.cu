// consan-corpus: sm_90a-only
// Hopper warpgroup MMA (wgmma) with shared-memory matrix descriptors.

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
// Non-swizzled K-major descriptor: start>>4 | LBO>>4 << 16 | SBO>>4 << 32, swizzle mode 0.
__device__ __forceinline__ unsigned long long make_desc(const void* p, unsigned lbo, unsigned sbo) {
    unsigned long long d = 0;
    d |= (unsigned long long)((smem_u32(p) & 0x3FFFF) >> 4);
    d |= (unsigned long long)((lbo & 0x3FFFF) >> 4) << 16;
    d |= (unsigned long long)((sbo & 0x3FFFF) >> 4) << 32;
    return d;
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// D(64x8,f32) = A(64x16,f16) * B(16x8,f16), both operands from smem (SS form).
// Core-matrix (8x8 f16 = 128 B) layout: core(mb, kb) at (mb * 2 + kb) * 128 bytes.
// Launch: 128 threads (one warpgroup).
extern "C" __global__ void __launch_bounds__(128) wgmma_m64n8k16_ss(const unsigned short* A, const unsigned short* B,
                                                                    float* D, int ksteps) {
    __shared__ __align__(128) unsigned short As[64 * 16];
    __shared__ __align__(128) unsigned short Bs[8 * 16];
    int t = threadIdx.x;
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
    for (int ks = 0; ks < ksteps; ++ks) {
        for (int e = t; e < 64 * 16; e += 128) {
            int m = e / 16, k = e % 16;
            As[((m / 8) * 2 + k / 8) * 64 + (m % 8) * 8 + k % 8] = A[ks * 1024 + e];
        }
        for (int e = t; e < 8 * 16; e += 128) {
            int n = e / 16, k = e % 16;
            Bs[(k / 8) * 64 + n * 8 + k % 8] = B[ks * 128 + e];
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        unsigned long long da = make_desc(As, 128, 256);
        unsigned long long db = make_desc(Bs, 128, 256);
        wgmma_fence();
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "setp.ne.b32 p, %6, 0;\n\t"
            "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n\t"
            "}"
            : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
            : "l"(da), "l"(db), "r"(ks > 0 ? 1 : 0));
        wgmma_commit();
        wgmma_wait<0>();
        __syncthreads();  // As/Bs are overwritten next step
    }
    int warp = t / 32, lane = t % 32;
    int row = warp * 16 + lane / 4, col = (lane % 4) * 2;
    D[row * 8 + col] = d0;
    D[row * 8 + col + 1] = d1;
    D[(row + 8) * 8 + col] = d2;
    D[(row + 8) * 8 + col + 1] = d3;
}

// RS form (A from registers), bf16 SS form, and overlapping two in-flight groups.
extern "C" __global__ void __launch_bounds__(128) wgmma_rs_and_groups(const unsigned* Afrag, const unsigned short* B,
                                                                      float* D) {
    __shared__ __align__(128) unsigned short Bs[2][16 * 16];
    int t = threadIdx.x;
    for (int e = t; e < 2 * 256; e += 128) (&Bs[0][0])[e] = B[e];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    unsigned a0 = Afrag[t * 4], a1 = Afrag[t * 4 + 1], a2 = Afrag[t * 4 + 2], a3 = Afrag[t * 4 + 3];
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    float acc2[4] = {0.f, 0.f, 0.f, 0.f};
    unsigned long long db0 = make_desc(Bs[0], 128, 256);
    unsigned long long db1 = make_desc(Bs[1], 128, 256);
    wgmma_fence();
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, "
        "%12, 0, 1, 1, 0;"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3]), "+f"(acc[4]), "+f"(acc[5]), "+f"(acc[6]),
          "+f"(acc[7])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db0));
    wgmma_commit();
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, 0, 1, 1, 1;"
        : "+f"(acc2[0]), "+f"(acc2[1]), "+f"(acc2[2]), "+f"(acc2[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db1));
    wgmma_commit();
    wgmma_wait<1>();
    float partial = acc[0] + acc[7];
    wgmma_wait<0>();
    for (int i = 0; i < 8; ++i) D[t * 12 + i] = acc[i];
    for (int i = 0; i < 4; ++i) D[t * 12 + 8 + i] = acc2[i] + partial;
}
