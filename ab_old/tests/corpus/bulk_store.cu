// consan-corpus: sm_90a-only
// Bulk stores shared->global in the forms NVRTC 13 emits for inline asm and for the
// cuda::ptx wrappers: cache hints, reductions of several types, wait_group.read with
// groups left in flight, and every fence.proxy.async form.

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// Launch: blockDim.x == 256; out holds 4 * 256 floats per block.
extern "C" __global__ void bulk_store_stages(const float* in, float* out, unsigned long long policy) {
    __shared__ __align__(128) float stage[2][256];
    int t = threadIdx.x;
    float* dst = out + blockIdx.x * 1024;
    for (int k = 0; k < 4; ++k) {
        float* s = stage[k & 1];
        s[t] = in[blockIdx.x * 1024 + k * 256 + t] * 0.5f;
        asm volatile("fence.proxy.async.shared::cta; // 6." ::: "memory");
        __syncthreads();
        if (t == 0) {
            if (k & 1)
                asm volatile("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%0], [%1], %2, %3;"
                             ::"l"(dst + k * 256), "r"(smem_u32(s)), "r"(1024), "l"(policy) : "memory");
            else
                asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                             ::"l"(dst + k * 256), "r"(smem_u32(s)), "r"(1024) : "memory");
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            // the stage written next was stored two groups ago: keep one group in flight
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        }
        __syncthreads();
    }
    if (t == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// Bulk reductions (the cuda::ptx spelling has two spaces and a comment) and the other
// proxy-fence forms.
extern "C" __global__ void bulk_reduce_forms(int* iacc, unsigned long long* uacc, float* facc) {
    __shared__ __align__(128) int ibuf[64];
    __shared__ __align__(128) unsigned long long ubuf[32];
    __shared__ __align__(128) float fbuf[64];
    int t = threadIdx.x;
    if (t < 64) ibuf[t] = t, fbuf[t] = 1.0f;
    if (t < 32) ubuf[t] = t;
    asm volatile("fence.proxy.async; // 5." ::: "memory");
    asm volatile("fence.proxy.async.shared::cluster; // 6." ::: "memory");
    asm volatile("fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.global; // 6." ::: "memory");
    __syncthreads();
    if (t == 0) {
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.s32  [%0], [%1], %2; // 4."
                     ::"l"(iacc), "r"(smem_u32(ibuf)), "r"(256) : "memory");
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.min.s32  [%0], [%1], %2; // 4."
                     ::"l"(iacc + 64), "r"(smem_u32(ibuf)), "r"(256) : "memory");
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.and.b64  [%0], [%1], %2; // 3."
                     ::"l"(uacc), "r"(smem_u32(ubuf)), "r"(256) : "memory");
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32  [%0], [%1], %2; // 4."
                     ::"l"(facc), "r"(smem_u32(fbuf)), "r"(256) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    __syncthreads();
    asm volatile("fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster;" ::: "memory");
    if (t < 64) ibuf[t] = 0;
    if (t == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
