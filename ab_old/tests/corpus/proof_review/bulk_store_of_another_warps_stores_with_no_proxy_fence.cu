// Found by an adversarial review: the proof before launch once accepted it.
// block (64, 1, 1)
// Warp 0 stores buf and arrives on an mbarrier; warp 1 waits, then bulk-stores buf to global
// memory. No fence.proxy.async: the async proxy may read stale bytes (the checker reports
// proxy.missing-fence). Rule 2's credit through the clocks skipped the fence check.
#include "review_macros.h"
extern "C" __global__ void k(unsigned* out) {
    __shared__ __align__(128) unsigned buf[32];
    __shared__ __align__(8) unsigned long long mb;
    unsigned t = threadIdx.x, lane = t & 31;
    unsigned b = SMEM(&mb);
    if (t == 0) { INIT(b, 32); }
    __syncthreads();
    if (t < 32) {
        buf[lane] = t * 3;
        
        ARRIVE_LOCAL(b);
    } else {
        WAIT_CTA(b, 0);
        
        }
    BULK_ST(out, SMEM(&buf[0]), 128, t - 32); BULK_COMMIT; BULK_WAIT;
}
