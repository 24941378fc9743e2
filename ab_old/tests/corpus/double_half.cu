// double precision and half / bf16 data (no cuda_fp16.h under NVRTC: raw bits + inline PTX).

typedef unsigned short half_bits;

__device__ __forceinline__ half_bits f2h(float f) {
    half_bits h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
__device__ __forceinline__ float h2f(half_bits h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ unsigned hadd2(unsigned a, unsigned b) {
    unsigned c;
    asm("add.rn.f16x2 %0, %1, %2;" : "=r"(c) : "r"(a), "r"(b));
    return c;
}
__device__ __forceinline__ unsigned hfma2(unsigned a, unsigned b, unsigned c) {
    unsigned d;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
__device__ __forceinline__ half_bits f2bf(float f) {
    half_bits h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

// Half-precision axpy staged through smem as 16-bit values. Launch: blockDim.x == 256.
extern "C" __global__ void haxpy_smem(const half_bits* x, half_bits* y, float a, int n) {
    __shared__ half_bits sx[256];
    __shared__ half_bits sy[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    sx[threadIdx.x] = (i < n) ? x[i] : (half_bits)0;
    sy[threadIdx.x] = (i < n) ? y[i] : (half_bits)0;
    __syncthreads();
    if (i >= n) return;
    float r = a * h2f(sx[threadIdx.x]) + h2f(sy[(threadIdx.x + 1) & 255]);
    y[i] = f2h(r);
}

// Packed half2 math on 32-bit smem words, f16 scalar ops with .f16 registers.
extern "C" __global__ void half2_packed(const unsigned* a, const unsigned* b, unsigned* c, half_bits* hs, int n) {
    __shared__ unsigned sa[128], sb[128];
    int t = threadIdx.x;
    sa[t] = a[blockIdx.x * 128 + t];
    sb[t] = b[blockIdx.x * 128 + t];
    __syncthreads();
    unsigned r = hfma2(sa[t], sb[127 - t], hadd2(sa[t], sb[t]));
    c[blockIdx.x * 128 + t] = r;
    half_bits h = (half_bits)(r & 0xffff), m;
    asm("{\n\t.reg .f16 t0;\n\tmov.b16 t0, %1;\n\tmul.rn.f16 t0, t0, t0;\n\tmov.b16 %0, t0;\n\t}" : "=h"(m) : "h"(h));
    hs[blockIdx.x * 128 + t] = (half_bits)(m ^ f2bf(h2f(h)));
}

// Double-precision dot product with smem reduction and a double atomicAdd.
extern "C" __global__ void ddot(const double* x, const double* y, double* result, int n) {
    __shared__ double s[256];
    double acc = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) acc = fma(x[i], y[i], acc);
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int st = blockDim.x / 2; st > 0; st >>= 1) {
        if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(result, s[0]);
}

// Mixed precision: load f16, accumulate f64, store bf16; double shuffles.
extern "C" __global__ void mixed_precision(const half_bits* in, half_bits* out, double* partial, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double v = (i < n) ? (double)h2f(in[i]) : 0.0;
    double sq = v * v;
    for (int off = 16; off > 0; off >>= 1) sq += __shfl_down_sync(0xffffffffu, sq, off);
    if ((threadIdx.x & 31) == 0) partial[i / 32] = sq;
    if (i < n) out[i] = f2bf((float)sqrt(fabs(v)));
}
