// Matrix transpose variants (NVIDIA "transpose" sample).
// Launch: block (TILE, BLOCK_ROWS) = (32, 8), grid (w/32, h/32).
#define TILE 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose_naive(float* odata, const float* idata, int width, int height) {
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (x < width && y + j < height) odata[x * height + (y + j)] = idata[(y + j) * width + x];
}

extern "C" __global__ void transpose_coalesced(float* odata, const float* idata, int width, int height) {
    __shared__ float tile[TILE][TILE];  // bank conflicts on the read-back
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

extern "C" __global__ void transpose_padded(float* odata, const float* idata, int width, int height) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Diagonal block reordering plus padding, for square matrices.
extern "C" __global__ void transpose_diagonal(float* odata, const float* idata, int width) {
    __shared__ float tile[TILE][TILE + 1];
    int bx = (blockIdx.x + blockIdx.y) % gridDim.x;
    int by = blockIdx.x;
    int x = bx * TILE + threadIdx.x;
    int y = by * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = by * TILE + threadIdx.x;
    y = bx * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) odata[(y + j) * width + x] = tile[threadIdx.x][threadIdx.y + j];
}
