// Loops (unrolled / not unrolled), predication, selects, divergent control flow.

// #pragma unroll 1 -> `.pragma "nounroll";`
extern "C" __global__ void loop_nounroll(const float* in, float* out, int n, int reps) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    float acc = 0.0f;
#pragma unroll 1
    for (int r = 0; r < reps; ++r) {
        acc += s[(threadIdx.x + r) % blockDim.x];
    }
    if (i < n) out[i] = acc;
}

extern "C" __global__ void loop_unroll4_predicated(const int* in, int* out, int n) {
    __shared__ int s[512];
    int t = threadIdx.x;
    for (int k = t; k < 512; k += blockDim.x) s[k] = in[blockIdx.x * 512 + k];
    __syncthreads();
    int acc = 0;
#pragma unroll 4
    for (int k = 0; k < n; ++k) {
        int v = s[(t * 7 + k) & 511];
        acc += (v & 1) ? v : -v;  // selp / predicated add
        if (v > 1000) acc ^= v;   // predicated xor
    }
    out[blockIdx.x * blockDim.x + t] = acc;
}

// while / do-while / break / continue with smem-dependent trip counts.
extern "C" __global__ void loop_data_dependent(const int* next, int* depth, int n) {
    __shared__ int s_next[256];
    int t = threadIdx.x;
    s_next[t] = next[blockIdx.x * 256 + t] & 255;
    __syncthreads();
    int cur = t, d = 0;
    while (cur != 0 && d < n) {
        cur = s_next[cur];
        ++d;
        if (cur == t) break;
        if (cur & 1) continue;
        d += 2;
    }
    int k = 0;
    do {
        k += s_next[(t + k) & 255] & 3;
    } while (k < 8);
    depth[blockIdx.x * 256 + t] = d + k;
}

// Divergent if/else chains each touching different smem regions; switch on threadIdx.
extern "C" __global__ void divergent_branches(const float* in, float* out) {
    __shared__ float a[64], b[64], c[64], d[64];
    int t = threadIdx.x;  // blockDim.x == 64
    float v = in[blockIdx.x * 64 + t];
    if (t < 16)
        a[t] = v;
    else if (t < 40)
        b[t] = v * 2.0f;
    else
        c[t] = v * 3.0f;
    __syncthreads();
    switch (t % 4) {
        case 0: d[t] = a[t & 15]; break;
        case 1: d[t] = -b[16 + t % 24]; break;
        case 2: d[t] = c[40 + t % 24] + 1.0f; break;
        default: d[t] = v; break;
    }
    __syncthreads();
    out[blockIdx.x * 64 + t] = d[63 - t];
}

// Predicated loads/stores with explicit PTX predicates.
extern "C" __global__ void asm_predicated_smem(const unsigned* in, unsigned* out) {
    __shared__ unsigned s[128];
    unsigned v = in[blockIdx.x * 128 + threadIdx.x];
    unsigned addr = (unsigned)__cvta_generic_to_shared(&s[threadIdx.x]);
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "setp.ne.u32 p, %1, 0;\n\t"
        "@p st.shared.u32 [%0], %1;\n\t"
        "@!p st.shared.u32 [%0], 0xdeadbeef;\n\t"
        "}" ::"r"(addr),
        "r"(v)
        : "memory");
    __syncthreads();
    unsigned r = 0;
    unsigned raddr = (unsigned)__cvta_generic_to_shared(&s[127 - threadIdx.x]);
    asm volatile(
        "{\n\t.reg .pred q;\n\t"
        "setp.lt.u32 q, %2, 64;\n\t"
        "@q ld.shared.u32 %0, [%1];\n\t"
        "}"
        : "+r"(r)
        : "r"(raddr), "r"((unsigned)threadIdx.x)
        : "memory");
    out[blockIdx.x * 128 + threadIdx.x] = r;
}
