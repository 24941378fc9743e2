// consan-corpus: debug
// Thread-local arrays (.local) with dynamic indexing, local structs, register sort.

extern "C" __global__ void local_insertion_sort(const int* in, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int a[16];
    for (int k = 0; k < 16; ++k) a[k] = in[i * 16 + k];
    for (int k = 1; k < 16; ++k) {
        int key = a[k], j = k - 1;
        while (j >= 0 && a[j] > key) {
            a[j + 1] = a[j];
            --j;
        }
        a[j + 1] = key;
    }
    for (int k = 0; k < 16; ++k) out[i * 16 + k] = a[k];
}

// Dynamically indexed local histogram, then merged into smem.
extern "C" __global__ void local_histogram_merge(const unsigned char* data, unsigned* bins, int per_thread) {
    __shared__ unsigned sh[32];
    unsigned lh[32];
    for (int k = 0; k < 32; ++k) lh[k] = 0;
    if (threadIdx.x < 32) sh[threadIdx.x] = 0;
    __syncthreads();
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * per_thread;
    for (int k = 0; k < per_thread; ++k) lh[data[base + k] & 31]++;
    for (int k = 0; k < 32; ++k)
        if (lh[k]) atomicAdd(&sh[k], lh[k]);
    __syncthreads();
    if (threadIdx.x < 32) atomicAdd(&bins[threadIdx.x], sh[threadIdx.x]);
}

struct Particle {
    float pos[3];
    float vel[3];
    int id;
};

// Local struct array addressed by a runtime index; copied to/from smem.
extern "C" __global__ void local_struct_array(const Particle* in, Particle* out, int pick) {
    __shared__ Particle sp[64];
    Particle loc[4];
    for (int k = 0; k < 4; ++k) loc[k] = in[(blockIdx.x * 64 + threadIdx.x) * 4 + k];
    Particle p = loc[pick & 3];
    for (int d = 0; d < 3; ++d) p.pos[d] += p.vel[d];
    sp[threadIdx.x] = p;
    __syncthreads();
    out[blockIdx.x * 64 + threadIdx.x] = sp[63 - threadIdx.x];
}

// Local array whose address escapes into a generic pointer (forces real local memory).
__device__ __noinline__ float sum_generic(const float* p, int n) {
    float s = 0.0f;
    for (int k = 0; k < n; ++k) s += p[k];
    return s;
}
extern "C" __global__ void local_escape(const float* in, float* out, int m) {
    float buf[24];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < 24; ++k) buf[k] = in[i * 24 + k] * (float)k;
    out[i] = sum_generic(buf, m < 24 ? m : 24);
}
