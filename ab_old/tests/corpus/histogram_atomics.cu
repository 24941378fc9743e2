// Shared-memory atomics: privatised histograms, CAS loops, spin locks.
#define NBINS 256

// Launch: any 1D block, grid-stride.
extern "C" __global__ void histogram_smem(const unsigned char* data, unsigned* bins, int n) {
    __shared__ unsigned local[NBINS];
    for (int i = threadIdx.x; i < NBINS; i += blockDim.x) local[i] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int i = threadIdx.x; i < NBINS; i += blockDim.x) atomicAdd(&bins[i], local[i]);
}

// Per-warp sub-histograms to reduce contention. Launch: blockDim.x == 256.
extern "C" __global__ void histogram_per_warp(const unsigned* data, unsigned* bins, int n) {
    __shared__ unsigned sub[8][64];
    unsigned warp = threadIdx.x / 32;
    for (int i = threadIdx.x; i < 8 * 64; i += blockDim.x) (&sub[0][0])[i] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicInc(&sub[warp][data[i] & 63], 0xffffffffu);
    __syncthreads();
    if (threadIdx.x < 64) {
        unsigned s = 0;
        for (int w = 0; w < 8; ++w) s += sub[w][threadIdx.x];
        atomicAdd(&bins[threadIdx.x], s);
    }
}

__device__ float atomic_add_float_cas(float* addr, float v) {
    unsigned* a = reinterpret_cast<unsigned*>(addr);
    unsigned old = *a, assumed;
    do {
        assumed = old;
        old = atomicCAS(a, assumed, __float_as_uint(__uint_as_float(assumed) + v));
    } while (assumed != old);
    return __uint_as_float(old);
}

// Weighted float histogram through a CAS loop on shared memory.
extern "C" __global__ void histogram_weighted_cas(const int* keys, const float* w, float* out, int n, int nbins) {
    extern __shared__ float hist[];
    for (int i = threadIdx.x; i < nbins; i += blockDim.x) hist[i] = 0.0f;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomic_add_float_cas(&hist[keys[i] % nbins], w[i]);
    __syncthreads();
    for (int i = threadIdx.x; i < nbins; i += blockDim.x) atomicAdd(&out[i], hist[i]);
}

// A shared-memory spin lock built from atomicCAS / atomicExch guarding a non-atomic update.
// Race-free by lock discipline (acquire via CAS + fence, release via fence + exch); a checker
// that does not model locks will see conflicting plain accesses to acc[].
extern "C" __global__ void smem_spinlock(const int* vals, int* out, int n) {
    __shared__ int lock;
    __shared__ int acc[4];
    if (threadIdx.x == 0) {
        lock = 0;
        for (int k = 0; k < 4; ++k) acc[k] = 0;
    }
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = (i < n) ? vals[i] : 0;
    // Only lane 0 of each warp competes, to avoid intra-warp livelock on pre-Volta style code.
    if ((threadIdx.x & 31) == 0) {
        while (atomicCAS(&lock, 0, 1) != 0) {
        }
        __threadfence_block();
        acc[0] += v;
        acc[1] = max(acc[1], v);
        acc[2] ^= v;
        acc[3] += 1;
        __threadfence_block();
        atomicExch(&lock, 0);
    }
    __syncthreads();
    if (threadIdx.x < 4) atomicAdd(&out[threadIdx.x], acc[threadIdx.x]);
}

// The rest of the shared atomic family, incl. 64-bit and floating point.
extern "C" __global__ void smem_atomic_zoo(const int* in, int* out, unsigned long long* out64, float* outf, double* outd) {
    __shared__ int s_i[8];
    __shared__ unsigned s_u[4];
    __shared__ unsigned long long s_u64[2];
    __shared__ float s_f;
    __shared__ double s_d;
    if (threadIdx.x == 0) {
        s_i[0] = 0; s_i[1] = -2147483647; s_i[2] = 2147483647; s_i[3] = -1;
        s_i[4] = 0; s_i[5] = 0; s_i[6] = 0; s_i[7] = 0;
        s_u[0] = 0; s_u[1] = 0; s_u[2] = 0; s_u[3] = 0;
        s_u64[0] = 0; s_u64[1] = 0;
        s_f = 0.0f; s_d = 0.0;
    }
    __syncthreads();
    int v = in[blockIdx.x * blockDim.x + threadIdx.x];
    atomicAdd(&s_i[0], v);
    atomicMax(&s_i[1], v);
    atomicMin(&s_i[2], v);
    atomicAnd(&s_i[3], v);
    atomicOr(&s_i[4], v);
    atomicXor(&s_i[5], v);
    atomicSub(&s_i[6], 1);
    atomicExch(&s_i[7], v);
    atomicInc(&s_u[0], 15u);
    atomicDec(&s_u[1], 15u);
    atomicCAS(&s_u[2], 0u, (unsigned)threadIdx.x);
    atomicAdd(&s_u64[0], (unsigned long long)v);
    atomicCAS(&s_u64[1], 0ull, (unsigned long long)threadIdx.x + 1);
    atomicAdd(&s_f, (float)v);
    atomicAdd(&s_d, (double)v);
    __syncthreads();
    if (threadIdx.x < 8) out[blockIdx.x * 8 + threadIdx.x] = s_i[threadIdx.x];
    if (threadIdx.x < 2) out64[blockIdx.x * 2 + threadIdx.x] = s_u64[threadIdx.x];
    if (threadIdx.x == 0) {
        outf[blockIdx.x] = s_f;
        outd[blockIdx.x] = s_d;
    }
}
