// consan-corpus: debug
// Non-inlined device functions: .func with params / return values, smem pointers passed in.

__device__ __noinline__ float weighted(float a, float b, float w) { return a * w + b * (1.0f - w); }

// Writes shared memory through a generic pointer argument.
__device__ __noinline__ void scatter_to(float* dst, int idx, float v) { dst[idx] = v; }

// Reads shared memory through a pointer and returns an int.
__device__ __noinline__ int count_positive(const float* s, int n) {
    int c = 0;
    for (int k = 0; k < n; ++k) c += s[k] > 0.0f;
    return c;
}

struct Pair {
    float lo, hi;
};
__device__ __noinline__ Pair minmax3(float a, float b, float c) {
    return {fminf(a, fminf(b, c)), fmaxf(a, fmaxf(b, c))};
}

// Recursion can never be inlined.
__device__ __noinline__ unsigned fib(unsigned n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

// Contains a barrier; callers must be convergent.
__device__ __noinline__ void block_barrier_and_copy(float* s, const float* g) {
    s[threadIdx.x] = g[threadIdx.x];
    __syncthreads();
}

__device__ __noinline__ double dsum(const double* p, int n) {
    double s = 0.0;
    for (int k = 0; k < n; ++k) s += p[k];
    return s;
}

// Launch: blockDim.x == 128.
extern "C" __global__ void noinline_calls(const float* in, float* out, unsigned* fibs, int* counts) {
    __shared__ float s[128];
    __shared__ float t[128];
    block_barrier_and_copy(s, in + blockIdx.x * 128);
    float v = weighted(s[threadIdx.x], s[127 - threadIdx.x], 0.25f);
    scatter_to(t, 127 - threadIdx.x, v);
    __syncthreads();
    Pair p = minmax3(t[threadIdx.x], s[threadIdx.x], v);
    out[blockIdx.x * 128 + threadIdx.x] = p.hi - p.lo;
    if (threadIdx.x == 0) counts[blockIdx.x] = count_positive(t, 128);
    if (threadIdx.x < 16) fibs[threadIdx.x] = fib(threadIdx.x);
}

extern "C" __global__ void noinline_double(const double* in, double* out, int chunk) {
    __shared__ double sd[256];
    for (int k = threadIdx.x; k < 256; k += blockDim.x) sd[k] = in[blockIdx.x * 256 + k];
    __syncthreads();
    int base = (threadIdx.x * chunk) % 256;
    out[blockIdx.x * blockDim.x + threadIdx.x] = dsum(&sd[base], min(chunk, 256 - base));
}

// Indirect calls through a device function-pointer table (.callprototype in PTX).
typedef float (*binop_t)(float, float);
__device__ __noinline__ float op_add(float a, float b) { return a + b; }
__device__ __noinline__ float op_mul(float a, float b) { return a * b; }
__device__ __noinline__ float op_max(float a, float b) { return fmaxf(a, b); }
__device__ binop_t g_ops[3] = {op_add, op_mul, op_max};

extern "C" __global__ void indirect_calls(const float* in, float* out, int which) {
    __shared__ float s[128];
    s[threadIdx.x] = in[blockIdx.x * 128 + threadIdx.x];
    __syncthreads();
    binop_t f = g_ops[(which + threadIdx.x) % 3];  // divergent indirect call
    out[blockIdx.x * 128 + threadIdx.x] = f(s[threadIdx.x], s[127 - threadIdx.x]);
}
