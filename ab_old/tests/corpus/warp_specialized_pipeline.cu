// consan-corpus: sm_90a-only
// Hopper-style warp-specialised producer/consumer pipeline: producer warp issues bulk copies
// into a ring of stages guarded by full/empty mbarriers; consumer warpgroup computes.

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void wait_parity(unsigned bar, unsigned parity) {
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

#define STAGES 4
#define STAGE_FLOATS 1024
#define CONSUMERS 128

// Launch: 160 threads (warp 0..3 = consumers, warp 4 = producer).
extern "C" __global__ void __launch_bounds__(160, 1) ws_bulk_pipeline(const float* src, float* out, int nchunks) {
    __shared__ __align__(128) float ring[STAGES][STAGE_FLOATS];
    __shared__ __align__(8) unsigned long long full[STAGES];
    __shared__ __align__(8) unsigned long long empty[STAGES];
    int warp = threadIdx.x / 32;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&full[s])), "r"(1) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&empty[s])), "r"(CONSUMERS / 32)
                         : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp == 4) {
        if ((threadIdx.x & 31) == 0) {
            for (int c = 0; c < nchunks; ++c) {
                int s = c % STAGES;
                unsigned round = c / STAGES;
                if (c >= STAGES) wait_parity(smem_u32(&empty[s]), (round - 1) & 1);
                unsigned fb = smem_u32(&full[s]);
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(fb), "r"(STAGE_FLOATS * 4)
                             : "memory");
                asm volatile(
                    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                        smem_u32(ring[s])),
                    "l"(src + ((size_t)blockIdx.x * nchunks + c) * STAGE_FLOATS), "r"(STAGE_FLOATS * 4), "r"(fb)
                    : "memory");
            }
        }
        return;
    }
    float acc = 0.0f;
    for (int c = 0; c < nchunks; ++c) {
        int s = c % STAGES;
        wait_parity(smem_u32(&full[s]), (c / STAGES) & 1);
        for (int k = threadIdx.x; k < STAGE_FLOATS; k += CONSUMERS) acc += ring[s][k] * ring[s][STAGE_FLOATS - 1 - k];
        __syncwarp();
        if ((threadIdx.x & 31) == 0)
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(&empty[s])) : "memory");
    }
    asm volatile("bar.sync 1, 128;" ::: "memory");  // consumer-only barrier
    ring[0][threadIdx.x] = acc;  // every chunk has landed and been consumed: stage 0 is free
    asm volatile("bar.sync 1, 128;" ::: "memory");
    out[blockIdx.x * CONSUMERS + threadIdx.x] = ring[0][CONSUMERS - 1 - threadIdx.x];
}
