// Vectorised and sub-word shared memory accesses.

// float4 copy through smem. Launch: blockDim.x == 128.
extern "C" __global__ void smem_float4(const float4* in, float4* out) {
    __shared__ float4 s[128];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * 128 + t];
    __syncthreads();
    float4 v = s[127 - t];
    v.x += 1.0f;
    v.w *= 2.0f;
    out[blockIdx.x * 128 + t] = v;
}

// int2 / double2 / uint4 accesses and a float4 view of a float array. Launch: blockDim.x == 64.
extern "C" __global__ void smem_mixed_vectors(const int2* a, const double2* b, uint4* c, float* d) {
    __shared__ int2 si[64];
    __shared__ double2 sd[64];
    __shared__ __align__(16) float sf[256];
    int t = threadIdx.x & 63;
    si[t] = a[t];
    sd[t] = b[t];
    for (int k = threadIdx.x; k < 256; k += blockDim.x) sf[k] = (float)k;
    __syncthreads();
    int2 x = si[63 - t];
    double2 y = sd[(t + 3) & 63];
    float4 z = reinterpret_cast<float4*>(sf)[t];
    c[threadIdx.x] = make_uint4(x.x, x.y, (unsigned)y.x, (unsigned)y.y);
    d[threadIdx.x] = z.x + z.y + z.z + z.w;
}

// Byte / short sub-word stores that share 32-bit words across threads.
extern "C" __global__ void smem_subword(const unsigned char* in8, const short* in16, int* out) {
    __shared__ unsigned char b[256];
    __shared__ short h[256];
    __shared__ char4 c4[64];
    __shared__ short2 s2[128];
    int t = threadIdx.x;  // Launch: blockDim.x == 256
    b[t] = in8[t];
    h[t] = in16[t];
    if (t < 64) c4[t] = make_char4(t, t + 1, t + 2, t + 3);
    if (t < 128) s2[t] = make_short2(t, -t);
    __syncthreads();
    unsigned char b0 = b[t ^ 1];
    short h0 = h[t ^ 3];
    char4 q = c4[t & 63];
    short2 r = s2[t & 127];
    __syncthreads();
    b[t] = b0 + 1;  // neighbouring bytes written by different threads
    reinterpret_cast<unsigned char*>(h)[t * 2 + 1] = (unsigned char)q.y;
    __syncthreads();
    out[t] = b[t] + h0 + q.x + q.z + q.w + r.x + r.y + h[t];
}

// Explicit vector ld/st.shared via inline asm, including v2.u64 and v4.b32. Launch: blockDim.x == 128.
extern "C" __global__ void smem_vector_asm(const unsigned* in, unsigned* out) {
    __shared__ __align__(16) unsigned s[512];
    unsigned addr = (unsigned)__cvta_generic_to_shared(&s[threadIdx.x * 4]);
    unsigned a = in[threadIdx.x * 4], b = in[threadIdx.x * 4 + 1], c = in[threadIdx.x * 4 + 2],
             d = in[threadIdx.x * 4 + 3];
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
    __syncthreads();
    unsigned x, y, z, w;
    unsigned raddr = (unsigned)__cvta_generic_to_shared(&s[((threadIdx.x + 1) % blockDim.x) * 4]);
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "r"(raddr) : "memory");
    unsigned long long p, q;
    asm volatile("ld.shared.v2.u64 {%0, %1}, [%2];" : "=l"(p), "=l"(q) : "r"(raddr) : "memory");
    unsigned short hs;
    asm volatile("ld.shared.u16 %0, [%1+2];" : "=h"(hs) : "r"(raddr) : "memory");
    out[threadIdx.x] = x + y + z + w + (unsigned)(p >> 32) + (unsigned)q + hs;
}
