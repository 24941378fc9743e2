// Row-wise softmax and layernorm, typical of ML inference kernels.

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
// Block-wide all-reduce via a 32-slot smem scratch. Every thread returns the result.
template <bool IS_MAX>
__device__ float block_allreduce(float v, float* scratch) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = IS_MAX ? warp_max(v) : warp_sum(v);
    if (lane == 0) scratch[w] = v;
    __syncthreads();
    v = (lane < nw) ? scratch[lane] : (IS_MAX ? -3.4e38f : 0.0f);
    v = IS_MAX ? warp_max(v) : warp_sum(v);
    __syncthreads();  // scratch reused by the next call
    return v;
}

// One block per row. Launch: blockDim.x in {128, 256, 512, 1024}.
extern "C" __global__ void softmax_rows(const float* x, float* y, int cols) {
    __shared__ float scratch[32];
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    float m = -3.4e38f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    m = block_allreduce<true>(m, scratch);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(row[c] - m);
    s = block_allreduce<false>(s, scratch);
    float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = __expf(row[c] - m) * inv;
}

// Row cached in dynamic smem, mean/var in one pass (Welford-free), affine transform.
extern "C" __global__ void layernorm_rows(const float* x, const float* gamma, const float* beta, float* y, int cols,
                                         float eps) {
    extern __shared__ float rowbuf[];
    __shared__ float scratch[32];
    __shared__ float stats[2];
    const float* row = x + (size_t)blockIdx.x * cols;
    float s = 0.0f, ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = row[c];
        rowbuf[c] = v;
        s += v;
        ss += v * v;
    }
    s = block_allreduce<false>(s, scratch);
    ss = block_allreduce<false>(ss, scratch);
    if (threadIdx.x == 0) {
        float mean = s / cols;
        stats[0] = mean;
        stats[1] = rsqrtf(ss / cols - mean * mean + eps);
    }
    __syncthreads();
    float mean = stats[0], rstd = stats[1];
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[(size_t)blockIdx.x * cols + c] = (rowbuf[c] - mean) * rstd * gamma[c] + beta[c];
}
