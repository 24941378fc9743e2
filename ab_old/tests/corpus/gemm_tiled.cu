// Shared-memory tiled SGEMM, C = A * B, row-major, M x K times K x N.

#define T 16
// Launch: block (16, 16), grid (ceil(N/16), ceil(M/16)).
extern "C" __global__ void sgemm_tiled16(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int row = blockIdx.y * T + threadIdx.y;
    int col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

// 64x64 block tile, 8-wide K slab, 4x4 register micro-tile per thread, float4 smem reads.
// Launch: 256 threads (1D), grid (N/64, M/64); M, N multiples of 64, K multiple of 8.
#define BM 64
#define BN 64
#define BK 8
extern "C" __global__ void __launch_bounds__(256) sgemm_reg4x4(const float* A, const float* B, float* C,
                                                               int M, int N, int K, float alpha, float beta) {
    __shared__ __align__(16) float As[BK][BM];  // stored transposed
    __shared__ __align__(16) float Bs[BK][BN];
    int tid = threadIdx.x;
    int tr = tid / 16, tc = tid % 16;
    const float* Ab = A + blockIdx.y * BM * K;
    const float* Bb = B + blockIdx.x * BN;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        // 512 elements of A and B each, 2 per thread.
        for (int e = tid; e < BM * BK; e += 256) {
            int r = e / BK, c = e % BK;
            As[c][r] = Ab[r * K + k0 + c];
            int br = e / BN, bc = e % BN;
            Bs[br][bc] = Bb[(k0 + br) * N + bc];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float4 a = *reinterpret_cast<const float4*>(&As[k][tr * 4]);
            float4 b = *reinterpret_cast<const float4*>(&Bs[k][tc * 4]);
            float av[4] = {a.x, a.y, a.z, a.w};
            float bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
        }
        __syncthreads();
    }
    float* Cb = C + (blockIdx.y * BM + tr * 4) * N + blockIdx.x * BN + tc * 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        float4 c = *reinterpret_cast<float4*>(&Cb[i * N]);
        c.x = alpha * acc[i][0] + beta * c.x;
        c.y = alpha * acc[i][1] + beta * c.y;
        c.z = alpha * acc[i][2] + beta * c.z;
        c.w = alpha * acc[i][3] + beta * c.w;
        *reinterpret_cast<float4*>(&Cb[i * N]) = c;
    }
}

// Double-buffered smem tiles: load tile k+1 while computing tile k, one barrier per step.
// Launch: block (16, 16).
extern "C" __global__ void dgemm_double_buffer(const double* A, const double* B, double* C, int M, int N, int K) {
    __shared__ double As[2][T][T];
    __shared__ double Bs[2][T][T];
    int row = blockIdx.y * T + threadIdx.y;
    int col = blockIdx.x * T + threadIdx.x;
    int ntiles = (K + T - 1) / T;
    double acc = 0.0;
    int buf = 0;
    As[0][threadIdx.y][threadIdx.x] = (row < M && threadIdx.x < K) ? A[row * K + threadIdx.x] : 0.0;
    Bs[0][threadIdx.y][threadIdx.x] = (col < N && threadIdx.y < K) ? B[threadIdx.y * N + col] : 0.0;
    __syncthreads();
    for (int t = 0; t < ntiles; ++t) {
        if (t + 1 < ntiles) {
            int k0 = (t + 1) * T;
            As[buf ^ 1][threadIdx.y][threadIdx.x] =
                (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.0;
            Bs[buf ^ 1][threadIdx.y][threadIdx.x] =
                (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0.0;
        }
        for (int k = 0; k < T; ++k) acc = fma(As[buf][threadIdx.y][k], Bs[buf][k][threadIdx.x], acc);
        __syncthreads();
        buf ^= 1;
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
