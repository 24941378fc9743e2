// Found by an adversarial review: the proof before launch once accepted it.
// block (64, 1, 1)
// FINDING 4 (single CTA): `mbarrier.arrive.noComplete` whose arrival completes the phase.
// PTX ISA: if an arrive with .noComplete causes the mbarrier to complete its current phase,
// the behaviour is undefined. events.py maps it to a plain MB_ARRIVE (the qualifier is
// ignored) and the proof counts it as completing phase 0, so warp 0's wait is 'satisfied'.
#include "review_macros.h"

extern "C" __global__ void k(unsigned* out) {
    __shared__ __align__(8) unsigned long long full;
    unsigned t = threadIdx.x, fb = SMEM(&full);
    if (t == 0) INIT(fb, 1);
    __syncthreads();
    if (t == 32) { unsigned long long st; asm volatile("mbarrier.arrive.noComplete.release.cta.shared::cta.b64 %0, [%1], 1;" : "=l"(st) : "r"(fb) : "memory"); }
    if (t < 32) { WAIT_CTA(fb, 0); out[t] = 5; }
    __syncthreads();
}
