// __syncthreads_count / _and / _or, plus __syncthreads inside uniform control flow.

// Stream compaction: count survivors per block and scatter through smem.
extern "C" __global__ void compact_block(const float* in, float* out, int* block_counts, float thresh, int n) {
    __shared__ float stage[1024];
    __shared__ int cursor;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = (i < n) ? in[i] : 0.0f;
    int keep = (i < n) && v > thresh;
    if (threadIdx.x == 0) cursor = 0;
    int total = __syncthreads_count(keep);
    if (keep) stage[atomicAdd(&cursor, 1)] = v;
    __syncthreads();
    if (threadIdx.x < total) out[blockIdx.x * blockDim.x + threadIdx.x] = stage[threadIdx.x];
    if (threadIdx.x == 0) block_counts[blockIdx.x] = total;
}

// Iterate until every thread in the block has converged (uniform exit via __syncthreads_and).
extern "C" __global__ void converge_and_or(float* x, int* iters_out, int* any_big, int max_iter) {
    __shared__ float s[256];
    int t = threadIdx.x;
    float v = x[blockIdx.x * blockDim.x + t];
    int it = 0;
    while (true) {
        s[t] = v;
        __syncthreads();
        float nb = s[(t + 1) % blockDim.x];
        float nv = 0.5f * (v + nb);
        int done = fabsf(nv - v) < 1e-4f || it >= max_iter;
        v = nv;
        ++it;
        if (__syncthreads_and(done)) break;
    }
    int big = __syncthreads_or(v > 100.0f);
    x[blockIdx.x * blockDim.x + t] = v;
    if (t == 0) {
        iters_out[blockIdx.x] = it;
        any_big[blockIdx.x] = big;
    }
}
