// Tensor-core fragments loaded with ldmatrix and consumed by mma.sync (sm_80).

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// One warp computes D(16x8,f32) = A(16x16,f16,row) * B(16x8,f16) + C.
// A, B are raw fp16 bit patterns. Launch: 32 threads.
extern "C" __global__ void hmma_16816_ldmatrix(const unsigned short* A, const unsigned short* B, const float* C, float* D) {
    __shared__ __align__(16) unsigned short As[16 * 16];
    __shared__ __align__(16) unsigned short Bs[16 * 8];
    int lane = threadIdx.x;
    for (int i = lane; i < 256; i += 32) As[i] = A[i];
    for (int i = lane; i < 128; i += 32) Bs[i] = B[i];
    __syncwarp();
    unsigned a0, a1, a2, a3, b0, b1;
    unsigned aaddr = smem_u32(&As[(lane % 16) * 16 + (lane / 16) * 8]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3)
                 : "r"(aaddr));
    unsigned baddr = smem_u32(&Bs[(lane % 16) * 8]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(b0), "=r"(b1) : "r"(baddr));
    int r = lane / 4, c = (lane % 4) * 2;
    float d0 = C[r * 8 + c], d1 = C[r * 8 + c + 1], d2 = C[(r + 8) * 8 + c], d3 = C[(r + 8) * 8 + c + 1];
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    D[r * 8 + c] = d0;
    D[r * 8 + c + 1] = d1;
    D[(r + 8) * 8 + c] = d2;
    D[(r + 8) * 8 + c + 1] = d3;
}

// ldmatrix x1 / x2 / x4, with and without .trans, plus movmatrix. Launch: 32 threads.
extern "C" __global__ void ldmatrix_variants(const unsigned* in, unsigned* out) {
    __shared__ __align__(16) unsigned short tile[32 * 8];
    int lane = threadIdx.x;
    for (int i = lane; i < 128; i += 32) reinterpret_cast<unsigned*>(tile)[i] = in[i];
    __syncwarp();
    unsigned addr = smem_u32(&tile[lane * 8]);
    unsigned x1, y0, y1, z0, z1, z2, z3, t0, m0;
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(x1) : "r"(addr));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared::cta.b16 {%0, %1}, [%2];" : "=r"(y0), "=r"(y1) : "r"(addr));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(z0), "=r"(z1), "=r"(z2), "=r"(z3)
                 : "r"(addr));
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(t0) : "r"(addr));
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(m0) : "r"(x1));
    out[lane] = x1 ^ y0 ^ y1 ^ z0 ^ z1 ^ z2 ^ z3 ^ t0 ^ m0;
}

// bf16 / tf32 / int8 mma.sync shapes fed straight from registers.
extern "C" __global__ void mma_shapes(const unsigned* a, const unsigned* b, float* outf, int* outi) {
    int lane = threadIdx.x & 31;
    unsigned a0 = a[lane * 4], a1 = a[lane * 4 + 1], a2 = a[lane * 4 + 2], a3 = a[lane * 4 + 3];
    unsigned b0 = b[lane * 2], b1 = b[lane * 2 + 1];
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    unsigned h0 = 0, h1 = 0;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3}, {%4}, {%0,%1};"
                 : "+r"(h0), "+r"(h1)
                 : "r"(a0), "r"(a1), "r"(b0));
    int di[4] = {0, 0, 0, 0};
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+r"(di[0]), "+r"(di[1]), "+r"(di[2]), "+r"(di[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    double dd0 = 0.0, dd1 = 0.0;
    double da = __int_as_float(a0), db = __int_as_float(b0);
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                 : "+d"(dd0), "+d"(dd1)
                 : "d"(da), "d"(db));
    for (int i = 0; i < 4; ++i) {
        outf[lane * 4 + i] = d[i] + (float)(h0 ^ h1) + (float)(dd0 + dd1);
        outi[lane * 4 + i] = di[i];
    }
}

// A warp-tiled HMMA GEMM: 4 warps, 64x64 tile, smem staged with a padded stride,
// fragments loaded with ldmatrix. M, N multiples of 64, K multiple of 32. Launch: 128 threads.
#define HG_BM 64
#define HG_BN 64
#define HG_BK 32
#define HG_PAD 8
extern "C" __global__ void __launch_bounds__(128) hgemm_warp_tiled(const unsigned short* A, const unsigned short* B,
                                                                   float* C, int M, int N, int K) {
    __shared__ __align__(16) unsigned short As[HG_BM][HG_BK + HG_PAD];
    __shared__ __align__(16) unsigned short Bs[HG_BK][HG_BN + HG_PAD];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int wm = (warp / 2) * 32, wn = (warp % 2) * 32;
    float acc[2][4][4] = {};
    for (int k0 = 0; k0 < K; k0 += HG_BK) {
        for (int e = threadIdx.x; e < HG_BM * HG_BK / 8; e += 128) {
            int r = e / (HG_BK / 8), c = (e % (HG_BK / 8)) * 8;
            *reinterpret_cast<uint4*>(&As[r][c]) =
                *reinterpret_cast<const uint4*>(&A[(blockIdx.y * HG_BM + r) * K + k0 + c]);
        }
        for (int e = threadIdx.x; e < HG_BK * HG_BN / 8; e += 128) {
            int r = e / (HG_BN / 8), c = (e % (HG_BN / 8)) * 8;
            *reinterpret_cast<uint4*>(&Bs[r][c]) =
                *reinterpret_cast<const uint4*>(&B[(k0 + r) * N + blockIdx.x * HG_BN + c]);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < HG_BK; kk += 16) {
            unsigned af[2][4], bf[4][2];
#pragma unroll
            for (int mi = 0; mi < 2; ++mi) {
                unsigned addr = smem_u32(&As[wm + mi * 16 + (lane % 16)][kk + (lane / 16) * 8]);
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(af[mi][0]), "=r"(af[mi][1]), "=r"(af[mi][2]), "=r"(af[mi][3])
                             : "r"(addr));
            }
#pragma unroll
            for (int ni = 0; ni < 4; ++ni) {
                unsigned addr = smem_u32(&Bs[kk + (lane % 16)][wn + ni * 8]);
                asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
                             : "=r"(bf[ni][0]), "=r"(bf[ni][1])
                             : "r"(addr));
            }
#pragma unroll
            for (int mi = 0; mi < 2; ++mi)
#pragma unroll
                for (int ni = 0; ni < 4; ++ni)
                    asm volatile(
                        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                        "{%8,%9}, {%0,%1,%2,%3};"
                        : "+f"(acc[mi][ni][0]), "+f"(acc[mi][ni][1]), "+f"(acc[mi][ni][2]), "+f"(acc[mi][ni][3])
                        : "r"(af[mi][0]), "r"(af[mi][1]), "r"(af[mi][2]), "r"(af[mi][3]), "r"(bf[ni][0]),
                          "r"(bf[ni][1]));
        }
        __syncthreads();
    }
    int r = lane / 4, c = (lane % 4) * 2;
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
            int row = blockIdx.y * HG_BM + wm + mi * 16 + r;
            int col = blockIdx.x * HG_BN + wn + ni * 8 + c;
            C[row * N + col] = acc[mi][ni][0];
            C[row * N + col + 1] = acc[mi][ni][1];
            C[(row + 8) * N + col] = acc[mi][ni][2];
            C[(row + 8) * N + col + 1] = acc[mi][ni][3];
        }
}
