// 1D and 2D stencils with shared-memory halos.
#define RADIUS 3
#define BS1D 256

// Launch: blockDim.x == 256.
extern "C" __global__ void stencil_1d(const float* in, float* out, int n) {
    __shared__ float temp[BS1D + 2 * RADIUS];
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int l = threadIdx.x + RADIUS;
    temp[l] = (g < n) ? in[g] : 0.0f;
    if (threadIdx.x < RADIUS) {
        temp[l - RADIUS] = (g - RADIUS >= 0) ? in[g - RADIUS] : 0.0f;
        temp[l + BS1D] = (g + BS1D < n) ? in[g + BS1D] : 0.0f;
    }
    __syncthreads();
    if (g >= n) return;
    float r = 0.0f;
#pragma unroll
    for (int off = -RADIUS; off <= RADIUS; ++off) r += temp[l + off];
    out[g] = r;
}

// 5-point Jacobi step. Launch: block (16, 16).
#define BX 16
#define BY 16
extern "C" __global__ void jacobi_2d(const float* in, float* out, int nx, int ny) {
    __shared__ float s[BY + 2][BX + 2];
    int x = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
    bool inside = x < nx && y < ny;
    s[ty][tx] = inside ? in[y * nx + x] : 0.0f;
    if (threadIdx.x == 0) s[ty][0] = (x > 0 && inside) ? in[y * nx + x - 1] : 0.0f;
    if (threadIdx.x == BX - 1) s[ty][BX + 1] = (x + 1 < nx && y < ny) ? in[y * nx + x + 1] : 0.0f;
    if (threadIdx.y == 0) s[0][tx] = (y > 0 && x < nx) ? in[(y - 1) * nx + x] : 0.0f;
    if (threadIdx.y == BY - 1) s[BY + 1][tx] = (y + 1 < ny && x < nx) ? in[(y + 1) * nx + x] : 0.0f;
    __syncthreads();
    if (!inside) return;
    out[y * nx + x] = 0.25f * (s[ty][tx - 1] + s[ty][tx + 1] + s[ty - 1][tx] + s[ty + 1][tx]);
}

// 3D 7-point stencil marching along z with a register queue and a 2D smem plane.
// Launch: block (32, 8).
extern "C" __global__ void stencil_3d_march(const float* in, float* out, int nx, int ny, int nz) {
    __shared__ float plane[8 + 2][32 + 2];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 8 + threadIdx.y;
    int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
    bool ok = x < nx && y < ny;
    size_t stride = (size_t)nx * ny;
    float below = 0.0f, cur = ok ? in[y * nx + x] : 0.0f, above = (ok && nz > 1) ? in[stride + y * nx + x] : 0.0f;
    for (int z = 1; z < nz - 1; ++z) {
        below = cur;
        cur = above;
        above = ok ? in[(z + 1) * stride + y * nx + x] : 0.0f;
        __syncthreads();  // previous iteration's readers are done with plane
        plane[ty][tx] = cur;
        if (threadIdx.x == 0) plane[ty][0] = (ok && x > 0) ? in[z * stride + y * nx + x - 1] : 0.0f;
        if (threadIdx.x == 31) plane[ty][33] = (ok && x + 1 < nx) ? in[z * stride + y * nx + x + 1] : 0.0f;
        if (threadIdx.y == 0) plane[0][tx] = (ok && y > 0) ? in[z * stride + (y - 1) * nx + x] : 0.0f;
        if (threadIdx.y == 7) plane[9][tx] = (ok && y + 1 < ny) ? in[z * stride + (y + 1) * nx + x] : 0.0f;
        __syncthreads();
        if (ok)
            out[z * stride + y * nx + x] = below + above + plane[ty][tx - 1] + plane[ty][tx + 1] +
                                           plane[ty - 1][tx] + plane[ty + 1][tx] - 6.0f * cur;
    }
}
