// Found by an adversarial review: the proof before launch once accepted it.
// block (64, 1, 1)
// Each warp stores buf[w] under an elect.sync predicate, then lane 0 arrives on an
// mbarrier under `if (lane == 0)`; warp 1 waits and reads buf[0]. The host run elects
// lane 0, whose own arrive then covered the store; the GPU may elect another lane, with
// nothing ordering its store before lane 0's release.
#include "review_macros.h"
#define ST_ELECTED(a, v) asm volatile("{ .reg .pred e; elect.sync _|e, -1; @e st.shared.u32 [%0], %1; }" :: "r"(a), "r"(v) : "memory")
#define ST_LANE(a, v, l, k) asm volatile("{ .reg .pred e; setp.eq.u32 e, %2, " #k "; @e st.shared.u32 [%0], %1; }" :: "r"(a), "r"(v), "r"(l) : "memory")
extern "C" __global__ void k(unsigned* out) {
    __shared__ __align__(16) unsigned buf[64];
    __shared__ __align__(8) unsigned long long mb;
    unsigned t = threadIdx.x, lane = t & 31, w = t >> 5;
    unsigned b = SMEM(&mb);
    if (t == 0) { INIT(b, 1); }
    __syncthreads();
    ST_ELECTED(SMEM(&buf[w]), 5u);
    if (t < 32) {
        if (lane == 0) ARRIVE_LOCAL(b);
    } else {
        WAIT_CTA(b, 0);
        out[t] = buf[0];
    }
}
