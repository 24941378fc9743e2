// consan-corpus: debug
// Device printf (vprintf call with a local-memory argument buffer).

extern "C" __global__ void printf_basic(const float* data, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) printf("n=%d first=%f\n", n, data[0]);
    if (i < n && data[i] < 0.0f) printf("negative at %d (block %d, thread %d): %g\n", i, blockIdx.x, threadIdx.x, data[i]);
}

extern "C" __global__ void printf_after_smem(const int* in) {
    __shared__ int s[64];
    s[threadIdx.x] = in[threadIdx.x] * 3;
    __syncthreads();
    if ((threadIdx.x & 15) == 0)
        printf("tid %u sees s[%u]=%d, ptr=%p, ll=%lld, d=%.3f, str=%s, c=%c\n", threadIdx.x, 63 - threadIdx.x,
               s[63 - threadIdx.x], (void*)&s[0], (long long)s[0] << 33, (double)s[1] / 7.0, "ok", 'x');
}
