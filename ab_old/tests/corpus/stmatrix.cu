// consan-corpus: sm_90a-only
// stmatrix (sm_90) round trip with ldmatrix, incl. .trans and x1/x2/x4.

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// Launch: 32 threads. Stores four 8x8 b16 matrices, reads them back transposed.
extern "C" __global__ void stmatrix_roundtrip(const unsigned* frag, unsigned* out) {
    __shared__ __align__(16) unsigned short tile[32 * 8];
    __shared__ __align__(16) unsigned short tile2[32 * 8];
    int lane = threadIdx.x;
    unsigned r0 = frag[lane * 4], r1 = frag[lane * 4 + 1], r2 = frag[lane * 4 + 2], r3 = frag[lane * 4 + 3];
    unsigned addr = smem_u32(&tile[lane * 8]);
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1),
                 "r"(r2), "r"(r3)
                 : "memory");
    unsigned addr2 = smem_u32(&tile2[(lane % 16) * 8]);
    asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" ::"r"(addr2), "r"(r0), "r"(r1)
                 : "memory");
    __syncwarp();
    asm volatile("stmatrix.sync.aligned.m8n8.x1.shared::cta.b16 [%0], {%1};" ::"r"(addr2), "r"(r2) : "memory");
    __syncwarp();
    unsigned x0, x1, x2, x3;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(x0), "=r"(x1), "=r"(x2), "=r"(x3)
                 : "r"(addr));
    out[lane] = x0 + x1 + x2 + x3 + tile2[lane];
}
