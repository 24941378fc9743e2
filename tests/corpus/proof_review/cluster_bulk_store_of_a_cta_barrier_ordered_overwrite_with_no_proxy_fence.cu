// Found by an adversarial review: the proof before launch once accepted it.
// block (64, 1, 1)
// Warp 0 stores buf and fences; after a cluster barrier warp 1 overwrites buf with no
// fence.proxy.async, ordered before the bulk store by the CTA's own __syncthreads() only:
// the async proxy may read warp 0's stale values.
#include "review_macros.h"
#define BULK_ST(g, s, n, l) asm volatile("{ .reg .pred p; setp.eq.u32 p, %3, 0; @p cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2; }" :: "l"(g), "r"(s), "r"(n), "r"(l) : "memory")
#define BULK_COMMIT asm volatile("cp.async.bulk.commit_group;" ::: "memory")
#define BULK_WAIT asm volatile("cp.async.bulk.wait_group 0;" ::: "memory")
#define FENCE_PROXY asm volatile("fence.proxy.async.shared::cta;" ::: "memory")
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
