// Found by an adversarial review: the proof before launch once accepted them.
// block (64, 1, 1)
// One CTA, no cluster: a cp.async.bulk of 20 bytes (k20), and one into buf + 4 (k_at4).
// The PTX ISA asks for a size that is a multiple of 16 and 16-byte aligned addresses;
// otherwise the copy is undefined. The proof once checked neither.
#include "review_macros.h"

#define BULK(d, s, n, b) asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" :: "r"(d), "l"(s), "r"(n), "r"(b) : "memory")
#define BODY(SIZE, AT)                                                            \
    __shared__ __align__(128) unsigned buf[256];                                  \
    __shared__ __align__(8) unsigned long long full;                              \
    unsigned t = threadIdx.x, fb = SMEM(&full);                                   \
    if (t == 0) { INIT(fb, 1); }                                                  \
    __syncthreads();                                                              \
    if (t == 0) { ARRIVE_TX_LOCAL(fb, SIZE); BULK(SMEM(&buf[AT]), g, SIZE, fb); } \
    WAIT_CL(fb, 0);                                                               \
    out[t] = buf[AT + t % (SIZE / 4)];                                            \
    __syncthreads();
extern "C" __global__ void k20(const unsigned* g, unsigned* out) { BODY(20, 0) }
extern "C" __global__ void k_at4(const unsigned* g, unsigned* out) { BODY(128, 1) }
