// 2D convolution with the filter in __constant__ memory and an smem input tile with halo,
// plus a separable row/column convolution.

#define KR 2  // 5x5
#define TW 16
__constant__ float c_filter[(2 * KR + 1) * (2 * KR + 1)];
__constant__ float c_row[2 * KR + 1];

// Launch: block (TW + 2*KR, TW + 2*KR) = (20, 20); each block outputs a 16x16 tile.
extern "C" __global__ void conv2d_tile_halo(const float* img, float* out, int w, int h) {
    __shared__ float tile[TW + 2 * KR][TW + 2 * KR];
    int ox = blockIdx.x * TW + threadIdx.x - KR;
    int oy = blockIdx.y * TW + threadIdx.y - KR;
    float v = 0.0f;
    if (ox >= 0 && ox < w && oy >= 0 && oy < h) v = img[oy * w + ox];
    tile[threadIdx.y][threadIdx.x] = v;
    __syncthreads();
    if (threadIdx.x < KR || threadIdx.x >= TW + KR || threadIdx.y < KR || threadIdx.y >= TW + KR) return;
    if (ox >= w || oy >= h) return;
    float acc = 0.0f;
#pragma unroll
    for (int dy = -KR; dy <= KR; ++dy)
#pragma unroll
        for (int dx = -KR; dx <= KR; ++dx)
            acc += c_filter[(dy + KR) * (2 * KR + 1) + dx + KR] * tile[threadIdx.y + dy][threadIdx.x + dx];
    out[oy * w + ox] = acc;
}

// Row pass: each 128-thread block loads 128 + 2*KR samples of one row. Launch: 128 threads.
extern "C" __global__ void conv_rows(const float* in, float* out, int w) {
    __shared__ float s[128 + 2 * KR];
    int row = blockIdx.y;
    int x = blockIdx.x * 128 + threadIdx.x;
    const float* r = in + (size_t)row * w;
    s[threadIdx.x + KR] = (x < w) ? r[x] : 0.0f;
    if (threadIdx.x < KR) {
        int xl = x - KR, xr = x + 128;
        s[threadIdx.x] = (xl >= 0) ? r[xl] : 0.0f;
        s[threadIdx.x + 128 + KR] = (xr < w) ? r[xr] : 0.0f;
    }
    __syncthreads();
    if (x >= w) return;
    float acc = 0.0f;
    for (int k = -KR; k <= KR; ++k) acc += c_row[k + KR] * s[threadIdx.x + KR + k];
    out[(size_t)row * w + x] = acc;
}
