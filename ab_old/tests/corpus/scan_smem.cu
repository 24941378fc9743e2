// Prefix sums in shared memory: Hillis-Steele (double buffered) and Blelloch (work efficient,
// bank-conflict-avoiding padding).

// Launch: blockDim.x == n <= 1024.
extern "C" __global__ void scan_hillis_steele(const float* in, float* out, int n) {
    __shared__ float tmp[2][1024];
    int t = threadIdx.x;
    int pout = 0, pin = 1;
    tmp[pout][t] = (t > 0 && t < n) ? in[blockIdx.x * n + t - 1] : 0.0f;  // exclusive
    __syncthreads();
    for (int off = 1; off < n; off *= 2) {
        pout = 1 - pout;
        pin = 1 - pout;
        if (t >= off)
            tmp[pout][t] = tmp[pin][t] + tmp[pin][t - off];
        else
            tmp[pout][t] = tmp[pin][t];
        __syncthreads();
    }
    if (t < n) out[blockIdx.x * n + t] = tmp[pout][t];
}

#define LOG_BANKS 5
#define CF_OFFSET(n) ((n) >> LOG_BANKS)
// Launch: blockDim.x == n/2, n a power of two <= 2048; dynamic smem (n + n/32) * 4.
extern "C" __global__ void scan_blelloch(const int* in, int* out, int* block_sums, int n) {
    extern __shared__ int temp[];
    int t = threadIdx.x;
    const int* gin = in + blockIdx.x * n;
    int ai = t, bi = t + n / 2;
    temp[ai + CF_OFFSET(ai)] = gin[ai];
    temp[bi + CF_OFFSET(bi)] = gin[bi];
    int offset = 1;
    for (int d = n >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d) {
            int a = offset * (2 * t + 1) - 1, b = offset * (2 * t + 2) - 1;
            a += CF_OFFSET(a);
            b += CF_OFFSET(b);
            temp[b] += temp[a];
        }
        offset *= 2;
    }
    if (t == 0) {
        block_sums[blockIdx.x] = temp[n - 1 + CF_OFFSET(n - 1)];
        temp[n - 1 + CF_OFFSET(n - 1)] = 0;
    }
    for (int d = 1; d < n; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (t < d) {
            int a = offset * (2 * t + 1) - 1, b = offset * (2 * t + 2) - 1;
            a += CF_OFFSET(a);
            b += CF_OFFSET(b);
            int x = temp[a];
            temp[a] = temp[b];
            temp[b] += x;
        }
    }
    __syncthreads();
    out[blockIdx.x * n + ai] = temp[ai + CF_OFFSET(ai)];
    out[blockIdx.x * n + bi] = temp[bi + CF_OFFSET(bi)];
}

// Warp-scan + smem-of-warp-totals block scan. Launch: blockDim.x multiple of 32.
extern "C" __global__ void scan_warp_block(const unsigned* in, unsigned* out) {
    __shared__ unsigned warp_tot[32];
    int t = threadIdx.x, lane = t & 31, w = t >> 5;
    unsigned v = in[blockIdx.x * blockDim.x + t];
    for (int off = 1; off < 32; off <<= 1) {
        unsigned u = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off) v += u;
    }
    if (lane == 31) warp_tot[w] = v;
    __syncthreads();
    if (w == 0) {
        unsigned x = (lane < (blockDim.x >> 5)) ? warp_tot[lane] : 0;
        for (int off = 1; off < 32; off <<= 1) {
            unsigned u = __shfl_up_sync(0xffffffffu, x, off);
            if (lane >= off) x += u;
        }
        warp_tot[lane] = x;
    }
    __syncthreads();
    if (w > 0) v += warp_tot[w - 1];
    out[blockIdx.x * blockDim.x + t] = v;
}
