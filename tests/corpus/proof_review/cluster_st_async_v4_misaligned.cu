// Found by an adversarial review: the proof before launch once accepted it.
// block (32, 1, 1)
// FINDING 2: st.async at an address not aligned to its size (UB: PTX requires natural
// alignment; the GPU raises a misaligned-address fault). `_event` refuses a misaligned
// ld/st, but `_bulk` never checks st.async's (or a bulk copy's) alignment.
#include "review_macros.h"

extern "C" __global__ void __cluster_dims__(2, 1, 1) k(unsigned* out) {
    __shared__ __align__(16) unsigned buf[128];
    __shared__ __align__(8) unsigned long long full;
    unsigned t = threadIdx.x, rank; RANK(rank);
    unsigned fb = SMEM(&full);
    if (t == 0) { INIT(fb, 1); FENCE_INIT; }
    CLUSTER_SYNC;

    unsigned other = rank ^ 1, pb, pf; MAPA(pb, SMEM(&buf[4*(t%16) + 2]), other); MAPA(pf, fb, other);
    if (t == 0) ARRIVE_TX_REMOTE(pf, 256);
    if (t < 16) asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1,%1,%1,%1}, [%2];" :: "r"(pb), "r"(t), "r"(pf) : "memory");
    WAIT_CL(fb, 0);
    if (t < 16) out[t] = buf[4*t+2] + buf[4*t+3] + buf[4*t+4] + buf[4*t+5];

    CLUSTER_SYNC;
}
