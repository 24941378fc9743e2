// Early-exit kernels: bounds checks that return before (or after) shared-memory use.

extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = a * x[i] + y[i];
}

extern "C" __global__ void saxpy_grid_stride(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = a * x[i] + y[i];
}

// Exits after the barrier: the classic safe pattern.
extern "C" __global__ void shift_left_safe(const int* in, int* out, int n) {
    __shared__ int s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = (i < n) ? in[i] : 0;
    __syncthreads();
    if (i >= n) return;
    out[i] = (threadIdx.x + 1 < blockDim.x) ? s[threadIdx.x + 1] : 0;
}

// Whole warps exit early, remaining warps use smem and a barrier (exited threads are
// not counted by bar.sync on sm_70+).
extern "C" __global__ void warp_exit_then_sync(const float* in, float* out, int active_warps) {
    __shared__ float s[1024];
    int w = threadIdx.x / 32;
    if (w >= active_warps) return;
    s[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    int src = (threadIdx.x + 32) % (active_warps * 32);
    out[blockIdx.x * blockDim.x + threadIdx.x] = s[src];
}

// Multiple return paths and a guarded smem write.
extern "C" __global__ void multi_return(const int* flags, int* out, int n) {
    __shared__ int first_neg;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) first_neg = 0x7fffffff;
    __syncthreads();
    if (i >= n) return;
    int f = flags[i];
    if (f == 0) {
        out[i] = 0;
        return;
    }
    if (f < 0) {
        atomicMin(&first_neg, i);
        return;
    }
    out[i] = f * 2;
}

// Register cap via __maxnreg__ (.maxnreg) on an early-exit kernel.
extern "C" __global__ void __maxnreg__(32) capped_regs_early_exit(const float4* in, float4* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float4 v = in[i];
    out[i] = make_float4(v.w, v.z, v.y, v.x);
}
