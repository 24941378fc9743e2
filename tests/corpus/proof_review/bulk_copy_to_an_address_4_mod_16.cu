// Found by an adversarial review: the proof before launch once accepted it.
// block (64, 1, 1)
// A cp.async.bulk into buf + 4 (the PTX ISA asks for 16-byte alignment).
// FINDING 3 (single CTA, no cluster): cp.async.bulk with a size not a multiple of 16, or a
// shared destination not 16-byte aligned. PTX ISA (cp.async.bulk): size is a multiple of 16
// and both addresses 16-byte aligned; otherwise undefined. `_bulk` checks neither.
#include "review_macros.h"

#define BULK(d, s, n, b) asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" :: "r"(d), "l"(s), "r"(n), "r"(b) : "memory")
extern "C" __global__ void k(const unsigned* g, unsigned* out) {
    __shared__ __align__(128) unsigned buf[256];
    __shared__ __align__(8) unsigned long long full;
    unsigned t = threadIdx.x, fb = SMEM(&full);
    if (t == 0) { INIT(fb, 1); }
    __syncthreads();
    if (t == 0) { ARRIVE_TX_LOCAL(fb, 128); BULK(SMEM(&buf[1]), g, 128, fb); }
    WAIT_CL(fb, 0);
    out[t] = buf[1 + t % (128 / 4)];
    __syncthreads();
}
