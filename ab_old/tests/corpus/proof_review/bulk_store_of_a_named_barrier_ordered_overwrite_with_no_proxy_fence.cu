// Found by an adversarial review: the proof before launch once accepted it.
// block (64, 1, 1)
// As the cluster kernel of the same name, with a named barrier (bar.sync 1, 64) ordering
// warp 1's unfenced overwrite before the bulk store.
#include "review_macros.h"
extern "C" __global__ void k(unsigned* out) {
    __shared__ __align__(128) unsigned buf[32];
    unsigned t = threadIdx.x, lane = t & 31;
    if (t < 32) { buf[lane] = 1; FENCE_PROXY; }
    __syncthreads();
    if (t >= 32) { buf[lane] = 2; }
    asm volatile("bar.sync 1, 64;" ::: "memory");
    BULK_ST(out + blockIdx.x * 32, SMEM(&buf[0]), 128, t); BULK_COMMIT; BULK_WAIT;
}
