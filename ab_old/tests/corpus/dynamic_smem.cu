// Dynamic shared memory (extern __shared__) with manual carve-outs.

// Launch: dynamic smem = blockDim.x * (sizeof(float) + sizeof(int)) + 16.
extern "C" __global__ void dyn_two_arrays(const float* a, const int* b, float* out, int n) {
    extern __shared__ unsigned char smem[];
    float* fs = reinterpret_cast<float*>(smem);
    int* is = reinterpret_cast<int*>(smem + blockDim.x * sizeof(float));
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    fs[threadIdx.x] = (i < n) ? a[i] : 0.0f;
    is[threadIdx.x] = (i < n) ? b[i] : 0;
    __syncthreads();
    int j = blockDim.x - 1 - threadIdx.x;
    if (i < n) out[i] = fs[j] * (float)is[j];
}

// Aligned double view of dynamic smem, tile size chosen at launch time.
extern "C" __global__ void dyn_tile_f64(const double* in, double* out, int tile, int n) {
    extern __shared__ __align__(16) double dtile[];
    int base = blockIdx.x * tile;
    for (int k = threadIdx.x; k < tile; k += blockDim.x) dtile[k] = (base + k < n) ? in[base + k] : 0.0;
    __syncthreads();
    for (int k = threadIdx.x; k < tile; k += blockDim.x)
        if (base + k < n) out[base + k] = dtile[tile - 1 - k] + dtile[k];
}

// Static + dynamic smem in the same kernel.
extern "C" __global__ void dyn_plus_static(const int* in, int* out) {
    __shared__ int header[4];
    extern __shared__ int payload[];
    if (threadIdx.x < 4) header[threadIdx.x] = threadIdx.x * 10;
    payload[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = payload[threadIdx.x ^ 1] + header[threadIdx.x & 3];
}

template <typename T>
__device__ void dyn_reverse_impl(T* data, int n) {
    extern __shared__ __align__(sizeof(T)) unsigned char raw[];
    T* s = reinterpret_cast<T*>(raw);
    int t = threadIdx.x;
    if (t < n) s[t] = data[t];
    __syncthreads();
    if (t < n) data[t] = s[n - 1 - t];
}
extern "C" __global__ void dyn_reverse_i32(int* d, int n) { dyn_reverse_impl<int>(d, n); }
extern "C" __global__ void dyn_reverse_i64(long long* d, int n) { dyn_reverse_impl<long long>(d, n); }
