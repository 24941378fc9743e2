// consan-corpus: debug
// Named barriers via inline PTX: producer/consumer warp groups, bar.red.

__device__ __forceinline__ void named_sync(int id, int nthreads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int nthreads) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}

// Launch: blockDim.x == 128. Warps 0-1 produce into smem, warps 2-3 consume.
// Barrier 1 = "full", barrier 2 = "empty", 128 participants each.
extern "C" __global__ void producer_consumer_named(const float* in, float* out, int iters) {
    __shared__ float buf[64];
    int tid = threadIdx.x;
    bool producer = tid < 64;
    for (int it = 0; it < iters; ++it) {
        if (producer) {
            if (it > 0) asm volatile("bar.sync 2, 128;" ::: "memory");  // wait until consumers drained
            buf[tid] = in[it * 64 + tid] * 2.0f;
            asm volatile("bar.arrive 1, 128;" ::: "memory");
        } else {
            asm volatile("bar.sync 1, 128;" ::: "memory");
            out[it * 64 + tid - 64] = buf[tid - 64] + 1.0f;
            if (it + 1 < iters) asm volatile("bar.arrive 2, 128;" ::: "memory");
        }
    }
}

// Two independent 64-thread groups each syncing on their own barrier id.
// Launch: blockDim.x == 128.
extern "C" __global__ void split_groups_bar(const int* in, int* out) {
    __shared__ int s[128];
    int tid = threadIdx.x;
    int grp = tid / 64;
    s[tid] = in[blockIdx.x * 128 + tid];
    if (grp == 0)
        asm volatile("bar.sync 1, 64;" ::: "memory");
    else
        asm volatile("barrier.sync 2, 64;" ::: "memory");
    int base = grp * 64;
    int local = tid - base;
    int v = s[base + (local + 1) % 64];
    named_sync(3 + grp, 64);  // group-local WAR protection before overwriting
    s[tid] = v * 2;
    __syncthreads();
    out[blockIdx.x * 128 + tid] = s[127 - tid];
}

// Literal 64-thread named barrier: warp 0 arrives on barrier 1, warp 1 waits on it.
// Launch: blockDim.x == 64.
extern "C" __global__ void arrive_sync_64(const int* in, int* out) {
    __shared__ int slot[32];
    if (threadIdx.x < 32) {
        slot[threadIdx.x] = in[blockIdx.x * 32 + threadIdx.x] + 1;
        asm volatile("bar.arrive 1, 64;" ::: "memory");
    } else {
        asm volatile("bar.sync 1, 64;" ::: "memory");
        out[blockIdx.x * 32 + threadIdx.x - 32] = slot[63 - threadIdx.x];
    }
}

// Warp 0 signals (bar.arrive) without waiting; warps 1..3 wait (bar.sync).
// Launch: blockDim.x == 128.
extern "C" __global__ void arrive_then_sync(const float* in, float* out) {
    __shared__ float msg[32];
    int tid = threadIdx.x;
    if (tid < 32) {
        msg[tid] = in[blockIdx.x * 32 + tid];
        named_arrive(6, 128);
    } else {
        named_sync(6, 128);
        out[blockIdx.x * 96 + tid - 32] = msg[tid & 31];
    }
}

// bar.red.popc / bar.red.and / bar.red.or on named barriers.
extern "C" __global__ void bar_red_popc(const int* in, unsigned* counts, int* flags) {
    int v = in[blockIdx.x * blockDim.x + threadIdx.x];
    unsigned cnt;
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "setp.gt.s32 p, %1, 0;\n\t"
        "bar.red.popc.u32 %0, 1, p;\n\t"
        "}"
        : "=r"(cnt)
        : "r"(v)
        : "memory");
    int all_pos, any_neg;
    asm volatile(
        "{\n\t.reg .pred p, q, r;\n\t"
        "setp.gt.s32 p, %2, 0;\n\t"
        "bar.red.and.pred q, 2, p;\n\t"
        "setp.lt.s32 p, %2, 0;\n\t"
        "barrier.red.or.pred r, 3, %3, p;\n\t"
        "selp.s32 %0, 1, 0, q;\n\t"
        "selp.s32 %1, 1, 0, r;\n\t"
        "}"
        : "=r"(all_pos), "=r"(any_neg)
        : "r"(v), "r"(blockDim.x)
        : "memory");
    if (threadIdx.x == 0) {
        counts[blockIdx.x] = cnt;
        flags[2 * blockIdx.x] = all_pos;
        flags[2 * blockIdx.x + 1] = any_neg;
    }
}

// Explicit bar.sync 0 (== __syncthreads) and barrier.sync.aligned spelled in asm.
extern "C" __global__ void asm_syncthreads(float* data) {
    __shared__ float s[256];
    s[threadIdx.x] = data[blockIdx.x * blockDim.x + threadIdx.x];
    asm volatile("bar.sync 0;" ::: "memory");
    float v = s[(threadIdx.x + 1) % blockDim.x];
    asm volatile("barrier.sync.aligned 0;" ::: "memory");
    s[threadIdx.x] = v;
    asm volatile("barrier.sync 0;" ::: "memory");
    data[blockIdx.x * blockDim.x + threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}
