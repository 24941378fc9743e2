// consan-corpus: debug
// Ampere cp.async (LDGSTS): every size / cache mode, zero-fill, groups, mbarrier arrive.

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void cp_async_ca4(void* s, const void* g) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem_u32(s)), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_async_ca8(void* s, const void* g) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(smem_u32(s)), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_async_ca16(void* s, const void* g) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(smem_u32(s)), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_async_cg16(void* s, const void* g) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(s)), "l"(g) : "memory");
}
// src-size form: copies src_bytes, zero-fills the rest of the 16-byte destination.
__device__ __forceinline__ void cp_async_cg16_zfill(void* s, const void* g, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_u32(s)), "l"(g), "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// Each thread copies 4 + 8 + 16 + 16 bytes. Launch: blockDim.x == 128.
extern "C" __global__ void cp_async_sizes(const float* g, float* out) {
    __shared__ __align__(16) float s4[128];
    __shared__ __align__(16) float s8[256];
    __shared__ __align__(16) float s16a[512];
    __shared__ __align__(16) float s16b[512];
    int t = threadIdx.x;
    const float* gb = g + blockIdx.x * 1408;
    cp_async_ca4(&s4[t], gb + t);
    cp_async_ca8(&s8[2 * t], gb + 128 + 2 * t);
    cp_async_commit();
    cp_async_ca16(&s16a[4 * t], gb + 384 + 4 * t);
    cp_async_cg16(&s16b[4 * t], gb + 896 + 4 * t);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    float x = s4[127 - t] + s8[255 - t];
    cp_async_wait_all();
    __syncthreads();
    out[blockIdx.x * 128 + t] = x + s16a[511 - t] + s16b[t * 3];
}

// Tail handling with the zero-fill form. Launch: any 1D block.
extern "C" __global__ void cp_async_zfill_tail(const float* g, float* out, int n) {
    extern __shared__ __align__(16) float buf[];
    int base = blockIdx.x * blockDim.x * 4;
    int e = base + threadIdx.x * 4;
    int remain = n - e;
    int bytes = remain >= 4 ? 16 : (remain > 0 ? remain * 4 : 0);
    const float* src = (bytes > 0) ? g + e : g;  // keep address valid
    cp_async_cg16_zfill(&buf[threadIdx.x * 4], src, bytes);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    float s = 0.0f;
    for (int k = 0; k < 4; ++k) s += buf[((threadIdx.x + 1) % blockDim.x) * 4 + k];
    if (e < n) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// 3-stage multistage pipeline summing a long vector in 512-float chunks. Launch: blockDim.x == 128.
#define STAGES 3
#define CHUNK 512
extern "C" __global__ void cp_async_multistage(const float* g, float* out, int nchunks) {
    __shared__ __align__(16) float stage[STAGES][CHUNK];
    int t = threadIdx.x;
    const float* gb = g + (size_t)blockIdx.x * nchunks * CHUNK;
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < nchunks) cp_async_cg16(&stage[s][t * 4], gb + s * CHUNK + t * 4);
        cp_async_commit();
    }
    float acc = 0.0f;
    for (int c = 0; c < nchunks; ++c) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        int nxt = c + STAGES - 1;
        if (nxt < nchunks) cp_async_cg16(&stage[nxt % STAGES][t * 4], gb + nxt * CHUNK + t * 4);
        cp_async_commit();
        const float* cur = stage[c % STAGES];
        for (int k = t; k < CHUNK; k += 128) acc += cur[k];
    }
    cp_async_wait_all();
    out[blockIdx.x * 128 + t] = acc;
}

// cp.async completion tracked by an mbarrier (cp.async.mbarrier.arrive). Launch: blockDim.x == 128.
extern "C" __global__ void cp_async_mbarrier(const int4* g, int* out) {
    __shared__ __align__(16) int4 s[128];
    __shared__ __align__(8) unsigned long long bar;
    unsigned baddr = smem_u32(&bar);
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(baddr), "r"(blockDim.x) : "memory");
    __syncthreads();
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(smem_u32(&s[threadIdx.x])),
                 "l"(g + blockIdx.x * 128 + threadIdx.x)
                 : "memory");
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(baddr) : "memory");
    unsigned done = 0;
    while (!done) {
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "mbarrier.test_wait.parity.shared.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t"
            "}"
            : "=r"(done)
            : "r"(baddr), "r"(0)
            : "memory");
    }
    int4 v = s[(threadIdx.x + 5) % 128];
    out[blockIdx.x * 128 + threadIdx.x] = v.x + v.y + v.z + v.w;
}

// cp.async with an L2 prefetch hint and the increment-then-arrive form (plus an explicit arrive).
extern "C" __global__ void cp_async_mbarrier_inc(const float4* g, float* out) {
    __shared__ __align__(16) float4 s[256];
    __shared__ __align__(8) unsigned long long bar;
    unsigned baddr = smem_u32(&bar);
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(baddr), "r"(blockDim.x) : "memory");
    __syncthreads();
    asm volatile("cp.async.ca.shared.global.L2::128B [%0], [%1], 16;" ::"r"(smem_u32(&s[threadIdx.x])),
                 "l"(g + blockIdx.x * blockDim.x + threadIdx.x)
                 : "memory");
    asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];" ::"r"(baddr) : "memory");
    unsigned long long state;
    asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(baddr) : "memory");
    unsigned done = 0;
    do {
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "mbarrier.test_wait.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t"
            "}"
            : "=r"(done)
            : "r"(baddr), "l"(state)
            : "memory");
    } while (!done);
    float4 v = s[blockDim.x - 1 - threadIdx.x];
    out[blockIdx.x * blockDim.x + threadIdx.x] = v.x * v.y + v.z * v.w;
}
