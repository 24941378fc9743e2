// Bitonic sort of one block-sized tile in shared memory, plus odd-even merge sort.

// Launch: blockDim.x == 512, sorts 1024 keys per block (2 per thread).
extern "C" __global__ void bitonic_sort_1024(unsigned* keys, unsigned* vals, int dir) {
    __shared__ unsigned sk[1024];
    __shared__ unsigned sv[1024];
    unsigned* gk = keys + blockIdx.x * 1024;
    unsigned* gv = vals + blockIdx.x * 1024;
    int t = threadIdx.x;
    sk[t] = gk[t];
    sv[t] = gv[t];
    sk[t + 512] = gk[t + 512];
    sv[t + 512] = gv[t + 512];
    for (int size = 2; size <= 1024; size <<= 1) {
        int ddd = dir ^ ((t & (size / 2)) != 0);
        for (int stride = size / 2; stride > 0; stride >>= 1) {
            __syncthreads();
            int pos = 2 * t - (t & (stride - 1));
            unsigned ka = sk[pos], kb = sk[pos + stride];
            if ((ka > kb) == ddd) {
                sk[pos] = kb;
                sk[pos + stride] = ka;
                unsigned va = sv[pos];
                sv[pos] = sv[pos + stride];
                sv[pos + stride] = va;
            }
        }
    }
    __syncthreads();
    gk[t] = sk[t];
    gv[t] = sv[t];
    gk[t + 512] = sk[t + 512];
    gv[t + 512] = sv[t + 512];
}

// Odd-even transposition sort, one element per thread. Launch: blockDim.x == 256.
extern "C" __global__ void odd_even_sort(float* data) {
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = data[blockIdx.x * 256 + t];
    __syncthreads();
    for (int phase = 0; phase < 256; ++phase) {
        int partner = ((t & 1) == (phase & 1)) ? t + 1 : t - 1;
        float mine = s[t];
        float other = (partner >= 0 && partner < 256) ? s[partner] : mine;
        __syncthreads();
        if (partner >= 0 && partner < 256) s[t] = (t < partner) ? fminf(mine, other) : fmaxf(mine, other);
        __syncthreads();
    }
    data[blockIdx.x * 256 + t] = s[t];
}
