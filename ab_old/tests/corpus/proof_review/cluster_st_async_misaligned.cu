// Found by an adversarial review: the proof before launch once accepted them.
// block (32, 1, 1)
// st.async at an address not aligned to its size: `.b64` at 4 mod 8 (k_b64), `.v4.b32` at
// 8 mod 16 (k_v4). The PTX ISA asks for natural alignment (the GPU raises a
// misaligned-address fault); the proof once checked a load's or store's alignment only.
#include "review_macros.h"

#define PROLOGUE                                                      \
    __shared__ __align__(16) unsigned buf[128];                       \
    __shared__ __align__(8) unsigned long long full;                  \
    unsigned t = threadIdx.x, rank; RANK(rank);                       \
    unsigned fb = SMEM(&full);                                        \
    if (t == 0) { INIT(fb, 1); FENCE_INIT; }                          \
    CLUSTER_SYNC;                                                     \
    unsigned other = rank ^ 1, pb, pf;

extern "C" __global__ void __cluster_dims__(2, 1, 1) k_b64(unsigned* out) {
    PROLOGUE
    MAPA(pb, SMEM(&buf[2*t + 1]), other); MAPA(pf, fb, other);
    if (t == 0) ARRIVE_TX_REMOTE(pf, 256);
    unsigned long long v = t;
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" :: "r"(pb), "l"(v), "r"(pf) : "memory");
    WAIT_CL(fb, 0);
    out[t] = buf[2*t+1] + buf[2*t+2];
    CLUSTER_SYNC;
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) k_v4(unsigned* out) {
    PROLOGUE
    MAPA(pb, SMEM(&buf[4*(t%16) + 2]), other); MAPA(pf, fb, other);
    if (t == 0) ARRIVE_TX_REMOTE(pf, 256);
    if (t < 16) asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1,%1,%1,%1}, [%2];" :: "r"(pb), "r"(t), "r"(pf) : "memory");
    WAIT_CL(fb, 0);
    if (t < 16) out[t] = buf[4*t+2] + buf[4*t+3] + buf[4*t+4] + buf[4*t+5];
    CLUSTER_SYNC;
}
