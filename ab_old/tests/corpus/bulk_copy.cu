// consan-corpus: sm_90a-only
// Hopper bulk async copies (non-tensor TMA): global->shared with mbarrier complete_tx,
// shared->global with bulk_group, bulk reductions, fence.proxy.async.

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_wait_parity(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n\t.reg .pred P1;\n"
        "LAB_WAIT:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t"
        "@P1 bra DONE;\n\t"
        "bra LAB_WAIT;\n"
        "DONE:\n\t}" ::"r"(bar),
        "r"(parity)
        : "memory");
}

#define NB 4096  // bytes per block
// Launch: blockDim.x == 128, grid = n_bytes / NB.
extern "C" __global__ void bulk_g2s_s2g(const float* src, float* dst) {
    __shared__ __align__(128) float buf[NB / 4];
    __shared__ __align__(8) unsigned long long bar;
    unsigned b = smem_u32(&bar);
    unsigned sb = smem_u32(buf);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(1) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(NB) : "memory");
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(sb),
            "l"(src + blockIdx.x * (NB / 4)), "r"(NB), "r"(b)
            : "memory");
    }
    mbar_wait_parity(b, 0);
    // Generic-proxy writes to smem...
    for (int i = threadIdx.x; i < NB / 4; i += blockDim.x) buf[i] = buf[i] * 2.0f + 1.0f;
    // ...must be made visible to the async proxy before the bulk store reads them.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + blockIdx.x * (NB / 4)),
                     "r"(sb), "r"(NB)
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    __syncthreads();  // smem may be reused only after the bulk store has read it
    buf[threadIdx.x] = 0.0f;
    if (threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// Bulk reduce-add into global, L2 prefetch, and shared::cta destination spelling.
extern "C" __global__ void bulk_reduce_prefetch(const float* src, float* accum, int nbytes) {
    __shared__ __align__(128) float buf[1024];
    __shared__ __align__(8) unsigned long long bar;
    unsigned b = smem_u32(&bar), sb = smem_u32(buf);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(1) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(nbytes) : "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(nbytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(sb),
                     "l"(src), "r"(nbytes), "r"(b)
                     : "memory");
    }
    mbar_wait_parity(b, 0);
    if (threadIdx.x == 0) {
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" ::"l"(accum), "r"(sb),
                     "r"(nbytes)
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
    __syncthreads();
}

// Multi-buffered bulk loads: 2 stages, one mbarrier per stage, parity flips per reuse.
// Launch: blockDim.x == 128.
extern "C" __global__ void bulk_double_buffer(const float* src, float* out, int nchunks) {
    __shared__ __align__(128) float stage[2][512];
    __shared__ __align__(8) unsigned long long full[2];
    if (threadIdx.x == 0) {
        for (int s = 0; s < 2; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&full[s])) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    auto issue = [&](int c) {
        int s = c & 1;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(&full[s])), "r"(2048)
                     : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                         smem_u32(stage[s])),
                     "l"(src + (size_t)c * 512), "r"(2048), "r"(smem_u32(&full[s]))
                     : "memory");
    };
    if (threadIdx.x == 0) {
        issue(0);
        if (nchunks > 1) issue(1);
    }
    float acc = 0.0f;
    for (int c = 0; c < nchunks; ++c) {
        int s = c & 1;
        mbar_wait_parity(smem_u32(&full[s]), (c >> 1) & 1);
        for (int k = threadIdx.x; k < 512; k += 128) acc += stage[s][k];
        __syncthreads();  // everyone done with stage s before it is refilled
        if (threadIdx.x == 0 && c + 2 < nchunks) issue(c + 2);
    }
    out[blockIdx.x * 128 + threadIdx.x] = acc;
}
