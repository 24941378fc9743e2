// consan-corpus: sm_90a-only
// consan-corpus: debug
// Hopper mbarrier: expect_tx, try_wait.parity loops, complete_tx, fence.mbarrier_init, inval.

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void fence_barrier_init() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// CUTLASS-style spin: label inside a scoped { } block so it can be inlined many times.
__device__ __forceinline__ void mbar_wait_parity(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n\t"
        ".reg .pred P1;\n"
        "LAB_WAIT:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t"
        "@P1 bra DONE;\n\t"
        "bra LAB_WAIT;\n"
        "DONE:\n\t"
        "}" ::"r"(bar),
        "r"(parity)
        : "memory");
}
// C++-loop variant returning the predicate.
__device__ __forceinline__ bool mbar_try_wait_parity(unsigned bar, unsigned parity) {
    unsigned ok;
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2, %3;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t"
        "}"
        : "=r"(ok)
        : "r"(bar), "r"(parity), "r"(1000000)
        : "memory");
    return ok != 0;
}

// Thread 0 announces tx bytes; other threads "deliver" them with complete_tx after st.shared.
// Launch: blockDim.x == 128.
extern "C" __global__ void mbar_expect_complete_tx(const float* in, float* out, int rounds) {
    __shared__ float s[128];
    __shared__ __align__(8) unsigned long long full;
    __shared__ __align__(8) unsigned long long empty;
    unsigned fb = smem_u32(&full), eb = smem_u32(&empty);
    if (threadIdx.x == 0) {
        mbar_init(fb, 1);
        mbar_init(eb, 128);
        fence_barrier_init();
    }
    __syncthreads();
    float acc = 0.0f;
    for (int r = 0; r < rounds; ++r) {
        if (r > 0) mbar_wait_parity(eb, (r - 1) & 1);
        if (threadIdx.x == 0) mbar_arrive_expect_tx(fb, 128 * 4);
        s[threadIdx.x] = in[r * 128 + threadIdx.x];
        // complete_tx is relaxed: a fence turns it into a release of the st.shared above.
        asm volatile("fence.acq_rel.cta;" ::: "memory");
        asm volatile("mbarrier.complete_tx.shared::cta.b64 [%0], %1;" ::"r"(fb), "r"(4) : "memory");
        while (!mbar_try_wait_parity(fb, r & 1)) {
        }
        acc += s[127 - threadIdx.x];
        asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(eb) : "memory");
    }
    out[threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(fb) : "memory");
        asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(eb) : "memory");
    }
}

// try_wait (state form), expect_tx without arrive, arrive with count.
extern "C" __global__ void mbar_state_forms(int* data) {
    __shared__ int s[64];
    __shared__ __align__(8) unsigned long long bar;
    unsigned b = smem_u32(&bar);
    if (threadIdx.x == 0) {
        mbar_init(b, 2);
        fence_barrier_init();
    }
    __syncthreads();
    // Launch: blockDim.x == 64; warps 0 and 1 each arrive with a count of 1 from lane 0.
    s[threadIdx.x] = data[threadIdx.x];
    __syncwarp();
    unsigned long long st = 0;
    if ((threadIdx.x & 31) == 0) {
        if (threadIdx.x == 0) asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(0) : "memory");
        asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1], %2;" : "=l"(st) : "r"(b), "r"(1) : "memory");
    }
    st = __shfl_sync(0xffffffffu, st, 0);
    unsigned ok = 0;
    while (!ok) {
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "mbarrier.try_wait.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t"
            "}"
            : "=r"(ok)
            : "r"(b), "l"(st)
            : "memory");
    }
    data[threadIdx.x] = s[63 - threadIdx.x];
}
