// Ampere-level mbarrier usage via inline PTX (init/arrive/test_wait/arrive_drop/pending_count/inval).

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ unsigned long long mbar_arrive(unsigned bar) {
    unsigned long long st;
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(st) : "r"(bar) : "memory");
    return st;
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned long long st) {
    asm volatile(
        "{\n\t.reg .pred done;\n"
        "WAIT_%=:\n\t"
        "mbarrier.test_wait.shared.b64 done, [%0], %1;\n\t"
        "@!done bra WAIT_%=;\n\t"
        "}" ::"r"(bar),
        "l"(st)
        : "memory");
}

// mbarrier used as a split arrive/wait block barrier, 2 phases. Launch: blockDim.x == 256.
extern "C" __global__ void mbarrier_split_phase(const float* in, float* out) {
    __shared__ float s[256];
    __shared__ __align__(8) unsigned long long bar;
    unsigned b = smem_u32(&bar);
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(b), "r"(256) : "memory");
    __syncthreads();
    s[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
    unsigned long long st = mbar_arrive(b);
    float independent = in[blockIdx.x * 256 + 255 - threadIdx.x] * 3.0f;  // overlap
    mbar_wait(b, st);
    float v = s[(threadIdx.x + 17) & 255];
    st = mbar_arrive(b);
    mbar_wait(b, st);  // phase 1: everyone finished reading s
    s[threadIdx.x] = v + independent;
    st = mbar_arrive(b);
    mbar_wait(b, st);
    out[blockIdx.x * 256 + threadIdx.x] = s[255 - threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) asm volatile("mbarrier.inval.shared.b64 [%0];" ::"r"(b) : "memory");
}

// Warp 0 drops out of the barrier after the first phase (arrive_drop). Launch: blockDim.x == 128.
extern "C" __global__ void mbarrier_arrive_drop(int* data, unsigned* pending) {
    __shared__ int s[128];
    __shared__ int s2[128];
    __shared__ __align__(8) unsigned long long bar;
    unsigned b = smem_u32(&bar);
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(b), "r"(128) : "memory");
    __syncthreads();
    s[threadIdx.x] = data[threadIdx.x];
    unsigned long long st;
    if (threadIdx.x < 32) {
        asm volatile("mbarrier.arrive_drop.shared.b64 %0, [%1];" : "=l"(st) : "r"(b) : "memory");
        mbar_wait(b, st);
        data[threadIdx.x] = s[127 - threadIdx.x];
        return;
    }
    st = mbar_arrive(b);
    unsigned cnt;
    asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(cnt) : "l"(st));
    mbar_wait(b, st);
    int v = s[(threadIdx.x + 32) & 127];
    s2[threadIdx.x] = v;
    st = mbar_arrive(b);  // phase 1: only 96 arrivals expected now
    mbar_wait(b, st);
    data[threadIdx.x] = s2[32 + (threadIdx.x - 31) % 96];
    if (threadIdx.x == 32) *pending = cnt;
}

// Parity-based waiting with a C++ loop around test_wait.parity. Launch: blockDim.x == 64.
extern "C" __global__ void mbarrier_parity_loop(const int* in, int* out, int rounds) {
    __shared__ int ring[2][64];
    __shared__ __align__(8) unsigned long long bar;
    unsigned b = smem_u32(&bar);
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(b), "r"(64) : "memory");
    __syncthreads();
    int acc = 0;
    for (int r = 0; r < rounds; ++r) {
        ring[r & 1][threadIdx.x] = in[r * 64 + threadIdx.x];
        asm volatile("mbarrier.arrive.shared.b64 _, [%0];" ::"r"(b) : "memory");
        unsigned ok = 0;
        while (!ok) {
            asm volatile(
                "{\n\t.reg .pred p;\n\t"
                "mbarrier.test_wait.parity.shared.b64 p, [%1], %2;\n\t"
                "selp.u32 %0, 1, 0, p;\n\t"
                "}"
                : "=r"(ok)
                : "r"(b), "r"((unsigned)(r & 1))
                : "memory");
        }
        acc += ring[r & 1][63 - threadIdx.x];
    }
    out[threadIdx.x] = acc;
}
