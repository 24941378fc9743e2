// consan-corpus: debug
// Classic shared-memory tree reductions (the "reduction #1..#6" family).
// Launch: blockDim.x == template block size, dynamic smem 0.

template <int BLOCK>
__device__ void block_reduce_sum(const float* __restrict__ in, float* __restrict__ out, int n) {
    __shared__ float sdata[BLOCK];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * (BLOCK * 2) + tid;
    float v = 0.0f;
    if (i < n) v = in[i];
    if (i + BLOCK < n) v += in[i + BLOCK];
    sdata[tid] = v;
    __syncthreads();
#pragma unroll
    for (unsigned s = BLOCK / 2; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    // Legacy warp-synchronous tail (volatile, no __syncwarp). Real code still has this; under
    // independent thread scheduling (sm_70+) it is formally a data race between lanes.
    if (tid < 32) {
        volatile float* vs = sdata;
        if (BLOCK >= 64) vs[tid] += vs[tid + 32];
        vs[tid] += vs[tid + 16];
        vs[tid] += vs[tid + 8];
        vs[tid] += vs[tid + 4];
        vs[tid] += vs[tid + 2];
        vs[tid] += vs[tid + 1];
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

extern "C" __global__ void reduce_sum_128(const float* in, float* out, int n) {
    block_reduce_sum<128>(in, out, n);
}

extern "C" __global__ void reduce_sum_256(const float* in, float* out, int n) {
    block_reduce_sum<256>(in, out, n);
}

// Interleaved addressing with divergent branch (reduction #1).
extern "C" __global__ void reduce_interleaved(const int* in, int* out, int n) {
    __shared__ int sdata[256];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    sdata[tid] = (i < n) ? in[i] : 0;
    __syncthreads();
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// Sequential addressing, runtime block size, max reduction in double.
extern "C" __global__ void reduce_max_f64(const double* in, double* out, int n) {
    __shared__ double sdata[512];
    unsigned tid = threadIdx.x;
    double m = -1.0e300;
    for (unsigned i = blockIdx.x * blockDim.x + tid; i < n; i += blockDim.x * gridDim.x)
        m = fmax(m, in[i]);
    sdata[tid] = m;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = fmax(sdata[tid], sdata[tid + s]);
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}
