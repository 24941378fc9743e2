// Memory fences, volatile smem, acquire/release PTX, threadfence-based last-block reduction.

__device__ unsigned retire_count = 0;

// "threadFenceReduction" sample: last block to finish sums the partials.
extern "C" __global__ void last_block_reduce(const float* in, float* partials, float* result, int n) {
    __shared__ float s[256];
    __shared__ bool am_last;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (int st = blockDim.x / 2; st > 0; st >>= 1) {
        if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = s[0];
        __threadfence();
        unsigned ticket = atomicInc(&retire_count, gridDim.x);
        am_last = (ticket == gridDim.x - 1);
    }
    __syncthreads();
    if (am_last) {
        float v = 0.0f;
        for (int k = threadIdx.x; k < gridDim.x; k += blockDim.x) v += partials[k];
        s[threadIdx.x] = v;
        __syncthreads();
        for (int st = blockDim.x / 2; st > 0; st >>= 1) {
            if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            *result = s[0];
            retire_count = 0;
        }
    }
}

// Flag-based handoff between warps through smem with release/acquire PTX (no bar.sync).
// Launch: blockDim.x == 64. Warp 0 produces, warp 1 consumes.
extern "C" __global__ void smem_flag_handoff(const int* in, int* out) {
    __shared__ int payload[32];
    __shared__ int flag;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    unsigned faddr = (unsigned)__cvta_generic_to_shared(&flag);
    if (threadIdx.x < 32) {
        payload[threadIdx.x] = in[blockIdx.x * 32 + threadIdx.x];
        __syncwarp();
        if (threadIdx.x == 0) asm volatile("st.release.cta.shared.u32 [%0], %1;" ::"r"(faddr), "r"(1) : "memory");
    } else {
        int f = 0;
        do {
            asm volatile("ld.acquire.cta.shared.u32 %0, [%1];" : "=r"(f) : "r"(faddr) : "memory");
        } while (f == 0);
        out[blockIdx.x * 32 + threadIdx.x - 32] = payload[threadIdx.x - 32];
    }
}

// volatile spin on smem + __threadfence_block, and fence.acq_rel / fence.sc variants.
extern "C" __global__ void volatile_spin(int* out) {
    __shared__ volatile int ready;
    __shared__ int data[32];
    if (threadIdx.x == 0) ready = 0;
    __syncthreads();
    if (threadIdx.x == 32) {
        for (int k = 0; k < 32; ++k) data[k] = k * k;
        __threadfence_block();
        ready = 1;
    }
    if (threadIdx.x == 0) {
        while (ready == 0) {
            __nanosleep(32);
        }
        __threadfence_block();
        int s = 0;
        for (int k = 0; k < 32; ++k) s += data[k];
        asm volatile("fence.acq_rel.cta;" ::: "memory");
        asm volatile("fence.sc.gpu;" ::: "memory");
        asm volatile("membar.cta;" ::: "memory");
        out[blockIdx.x] = s;
    }
}

// relaxed / volatile / scoped atomic PTX on shared and global.
extern "C" __global__ void scoped_atomics_asm(unsigned* g, unsigned* out) {
    __shared__ unsigned counter;
    if (threadIdx.x == 0) counter = 0;
    __syncthreads();
    unsigned caddr = (unsigned)__cvta_generic_to_shared(&counter);
    unsigned old;
    asm volatile("atom.relaxed.cta.shared.add.u32 %0, [%1], 1;" : "=r"(old) : "r"(caddr) : "memory");
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(g) : "memory");
    asm volatile("red.relaxed.cta.shared.add.u32 [%0], 2;" ::"r"(caddr) : "memory");
    unsigned v;
    asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v) : "r"(caddr) : "memory");
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(old) : "l"(g) : "memory");
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = v + old + counter;
}
