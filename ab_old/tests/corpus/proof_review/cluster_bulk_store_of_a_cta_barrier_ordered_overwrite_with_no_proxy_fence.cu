// Found by an adversarial review: the proof before launch once accepted it.
// block (64, 1, 1)
// Warp 0 stores buf and fences; after a cluster barrier warp 1 overwrites buf with no
// fence.proxy.async, ordered before the bulk store by the CTA's own __syncthreads() only:
// the async proxy may read warp 0's stale values.
#include "review_macros.h"
extern "C" __global__ void __cluster_dims__(2, 1, 1) k(unsigned* out) {
    __shared__ __align__(128) unsigned buf[32];
    unsigned t = threadIdx.x, lane = t & 31, rank; RANK(rank);
    if (t < 32) { buf[lane] = 1; FENCE_PROXY; }
    CLUSTER_SYNC;
    if (t >= 32) { buf[lane] = 2; }
    __syncthreads();
    BULK_ST(out + rank * 32, SMEM(&buf[0]), 128, t); BULK_COMMIT; BULK_WAIT;
    CLUSTER_SYNC;
}
