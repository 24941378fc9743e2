// consan-corpus: sm_90a-only
// Warp-specialised kernel with register reallocation (setmaxnreg) between warpgroups.

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
template <unsigned R>
__device__ __forceinline__ void reg_dealloc() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}
template <unsigned R>
__device__ __forceinline__ void reg_alloc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}

// Launch: 384 threads = 3 warpgroups; warpgroup 0 produces, 1-2 consume through smem.
extern "C" __global__ void __launch_bounds__(384, 1) ws_setmaxnreg(const float* in, float* out, int iters) {
    __shared__ float buf[256];
    int wg = threadIdx.x / 128;
    int t = threadIdx.x % 128;
    if (wg == 0) {
        reg_dealloc<40>();
        for (int it = 0; it < iters; ++it) {
            if (it > 0) asm volatile("bar.sync 2, 384;" ::: "memory");  // consumers finished
            buf[t] = in[it * 256 + t];
            buf[t + 128] = in[it * 256 + t + 128];
            asm volatile("bar.arrive 1, 384;" ::: "memory");
        }
    } else {
        reg_alloc<232>();
        float acc[16];
#pragma unroll
        for (int i = 0; i < 16; ++i) acc[i] = 0.0f;
        for (int it = 0; it < iters; ++it) {
            asm volatile("bar.sync 1, 384;" ::: "memory");
            float x = buf[(wg - 1) * 128 + t];
#pragma unroll
            for (int i = 0; i < 16; ++i) acc[i] = acc[i] * x + (float)i;
            if (it + 1 < iters) asm volatile("bar.arrive 2, 384;" ::: "memory");
        }
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < 16; ++i) s += acc[i];
        out[blockIdx.x * 256 + (wg - 1) * 128 + t] = s;
    }
}

// __maxnreg__ attribute gives .maxnreg.
extern "C" __global__ void __maxnreg__(128) maxnreg_kernel(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = in[i] * in[i];
}
