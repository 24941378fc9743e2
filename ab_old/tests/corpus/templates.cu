// Templates instantiated via extern "C" wrappers.

template <typename T>
struct Plus {
    __device__ T operator()(T a, T b) const { return a + b; }
};
template <typename T>
struct Max {
    __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};

template <typename T, int BLOCK, typename Op>
__device__ void block_reduce(const T* in, T* out, int n, T identity, Op op) {
    __shared__ T s[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    s[threadIdx.x] = (i < n) ? in[i] : identity;
    __syncthreads();
#pragma unroll
    for (int st = BLOCK / 2; st > 0; st >>= 1) {
        if (threadIdx.x < st) s[threadIdx.x] = op(s[threadIdx.x], s[threadIdx.x + st]);
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

extern "C" __global__ void reduce_plus_f32_128(const float* in, float* out, int n) {
    block_reduce<float, 128>(in, out, n, 0.0f, Plus<float>());
}
extern "C" __global__ void reduce_plus_f64_256(const double* in, double* out, int n) {
    block_reduce<double, 256>(in, out, n, 0.0, Plus<double>());
}
extern "C" __global__ void reduce_max_i32_512(const int* in, int* out, int n) {
    block_reduce<int, 512>(in, out, n, -2147483647 - 1, Max<int>());
}
extern "C" __global__ void reduce_max_u16_64(const unsigned short* in, unsigned short* out, int n) {
    block_reduce<unsigned short, 64>(in, out, n, (unsigned short)0, Max<unsigned short>());
}
extern "C" __global__ void reduce_plus_i8_32(const signed char* in, signed char* out, int n) {
    block_reduce<signed char, 32>(in, out, n, (signed char)0, Plus<signed char>());
}

// Template over a tile size and a vector type for a copy-through-smem kernel.
template <int TILE, typename V>
__device__ void tile_copy(const V* in, V* out) {
    __shared__ V s[TILE];
    for (int k = threadIdx.x; k < TILE; k += blockDim.x) s[k] = in[blockIdx.x * TILE + k];
    __syncthreads();
    for (int k = threadIdx.x; k < TILE; k += blockDim.x) out[blockIdx.x * TILE + k] = s[TILE - 1 - k];
}
extern "C" __global__ void tile_copy_float2_256(const float2* in, float2* out) { tile_copy<256, float2>(in, out); }
extern "C" __global__ void tile_copy_int4_64(const int4* in, int4* out) { tile_copy<64, int4>(in, out); }
extern "C" __global__ void tile_copy_char_1024(const char* in, char* out) { tile_copy<1024, char>(in, out); }

// Variadic-ish: recursive template unrolled at compile time.
template <int N>
struct Horner {
    __device__ static float eval(const float* c, float x) { return c[N] + x * Horner<N - 1>::eval(c, x); }
};
template <>
struct Horner<0> {
    __device__ static float eval(const float* c, float) { return c[0]; }
};
extern "C" __global__ void poly_eval8(const float* coeffs, const float* xs, float* ys, int n) {
    __shared__ float c[9];
    if (threadIdx.x < 9) c[threadIdx.x] = coeffs[threadIdx.x];
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) ys[i] = Horner<8>::eval(c, xs[i]);
}
