// Warp-level primitives: shuffles, votes, __syncwarp, match, redux.

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

// Block sum: warp shuffles + one smem slot per warp. Launch: blockDim.x multiple of 32, <= 1024.
extern "C" __global__ void block_sum_shfl(const float* in, float* out, int n) {
    __shared__ float warp_sums[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = (i < n) ? in[i] : 0.0f;
    v = warp_sum(v);
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) warp_sums[wid] = v;
    __syncthreads();
    if (wid == 0) {
        v = (lane < (blockDim.x >> 5)) ? warp_sums[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) atomicAdd(out, v);
    }
}

// Inclusive warp scan with __shfl_up_sync, butterfly all-reduce with __shfl_xor_sync.
extern "C" __global__ void warp_scan_butterfly(const int* in, int* scan, int* allsum) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = in[i];
    int s = v;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        int t = __shfl_up_sync(0xffffffffu, s, off);
        if (lane >= off) s += t;
    }
    scan[i] = s;
    int a = v;
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) a += __shfl_xor_sync(0xffffffffu, a, m);
    allsum[i] = a + __shfl_sync(0xffffffffu, v, 0);
}

// Votes and warp-synchronous smem exchange guarded by __syncwarp.
extern "C" __global__ void warp_vote_syncwarp(const int* in, unsigned* out) {
    __shared__ int buf[8][32];
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    int v = in[blockIdx.x * blockDim.x + threadIdx.x];
    unsigned ballot = __ballot_sync(0xffffffffu, v > 0);
    int any = __any_sync(0xffffffffu, v < 0);
    int all = __all_sync(0xffffffffu, v != 0);
    buf[wid][lane] = v;
    __syncwarp();
    int neighbour = buf[wid][(lane + 1) & 31];
    __syncwarp();
    buf[wid][lane] = neighbour * 2;
    __syncwarp(0xffffffffu);
    unsigned act = __activemask();
    if (lane < 16) {
        // Half-warp partial mask.
        int x = buf[wid][lane + 16];
        __syncwarp(0x0000ffffu);
        out[blockIdx.x * blockDim.x + threadIdx.x] = x + __popc(ballot) + any + all + __popc(act);
    } else {
        out[blockIdx.x * blockDim.x + threadIdx.x] = __ffs(ballot);
    }
}

// sm_80 warp redux and match.
extern "C" __global__ void warp_match_redux(const unsigned* keys, unsigned* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned k = keys[i];
    unsigned peers = __match_any_sync(0xffffffffu, k);
    int pred;
    unsigned same = __match_all_sync(0xffffffffu, k, &pred);
    unsigned s = __reduce_add_sync(0xffffffffu, k);
    unsigned mx = __reduce_max_sync(0xffffffffu, k);
    unsigned o = __reduce_or_sync(0xffffffffu, k);
    out[i] = __popc(peers) + same + pred + s + mx + o;
}
