// Kernels with DELIBERATE shared-memory races (each kernel documents its bug). They exist so
// that a race sanitizer has known-positive inputs; "_fixed" twins are the race-free versions.

// RAW: reduction missing the barrier inside the loop.
extern "C" __global__ void racy_reduce_missing_sync(const float* in, float* out) {
    __shared__ float s[256];
    s[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    for (int st = 128; st > 0; st >>= 1) {
        if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
        // BUG: no __syncthreads() here
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// WAR: tile is overwritten for the next iteration while slow threads may still read it.
extern "C" __global__ void racy_tile_reuse_war(const float* in, float* out, int iters) {
    __shared__ float tile[128];
    float acc = 0.0f;
    for (int it = 0; it < iters; ++it) {
        tile[threadIdx.x] = in[it * 128 + threadIdx.x];
        __syncthreads();
        acc += tile[(threadIdx.x + 1) & 127];
        // BUG: missing __syncthreads() before the next iteration's store
    }
    out[blockIdx.x * 128 + threadIdx.x] = acc;
}

// WAW: every thread writes the same smem word with different values, then reads it.
extern "C" __global__ void racy_waw_same_word(int* out) {
    __shared__ int winner;
    winner = threadIdx.x;  // BUG: unsynchronised concurrent writes
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = winner;
}

// Non-atomic read-modify-write of a shared counter.
extern "C" __global__ void racy_counter(int* out) {
    __shared__ int count;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    count += 1;  // BUG: should be atomicAdd
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = count;
}

// Intra-warp: relies on implicit warp-synchronous execution (needs __syncwarp on Volta+).
extern "C" __global__ void racy_warp_sync_assumption(const int* in, int* out) {
    __shared__ int s[32];
    int lane = threadIdx.x & 31;
    s[lane] = in[lane];
    // BUG: no __syncwarp()
    int v = s[(lane + 1) & 31];
    out[lane] = v;
}

// Mixed atomic / plain access to the same location.
extern "C" __global__ void racy_atomic_vs_plain(int* out) {
    __shared__ int x;
    if (threadIdx.x == 0) x = 0;
    __syncthreads();
    if (threadIdx.x & 1)
        atomicAdd(&x, 1);
    else
        x = 5;  // BUG: plain store races with the atomics
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = x;
}

// Barrier in divergent code: only half the block reaches __syncthreads (undefined behaviour).
extern "C" __global__ void racy_divergent_barrier(float* data) {
    __shared__ float s[128];
    s[threadIdx.x] = data[threadIdx.x];
    if (threadIdx.x < 64) {
        __syncthreads();  // BUG: not reached by threads 64..127
        data[threadIdx.x] = s[127 - threadIdx.x];
    }
}

// cp.async consumer reads before wait_group completes.
extern "C" __global__ void racy_cp_async_no_wait(const float4* g, float* out) {
    __shared__ __align__(16) float4 s[64];
    unsigned sa = (unsigned)__cvta_generic_to_shared(&s[threadIdx.x]);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sa), "l"(g + threadIdx.x) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    __syncthreads();  // BUG: barrier without cp.async.wait_group first
    float4 v = s[63 - threadIdx.x];
    asm volatile("cp.async.wait_all;" ::: "memory");
    out[threadIdx.x] = v.x + v.y + v.z + v.w;
}

// Named barrier with the wrong thread count: the consumers can run ahead.
extern "C" __global__ void racy_named_barrier_count(const int* in, int* out) {
    __shared__ int s[128];
    if (threadIdx.x < 64) {
        s[threadIdx.x + 64] = in[threadIdx.x];
        asm volatile("bar.arrive 1, 128;" ::: "memory");
    } else {
        asm volatile("bar.sync 1, 64;" ::: "memory");  // BUG: count 64 != 128
        out[threadIdx.x] = s[threadIdx.x];
    }
}

// Race-free twins.
extern "C" __global__ void racy_reduce_missing_sync_fixed(const float* in, float* out) {
    __shared__ float s[256];
    s[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    for (int st = 128; st > 0; st >>= 1) {
        if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
extern "C" __global__ void racy_warp_sync_assumption_fixed(const int* in, int* out) {
    __shared__ int s[32];
    int lane = threadIdx.x & 31;
    s[lane] = in[lane];
    __syncwarp();
    out[lane] = s[(lane + 1) & 31];
}
