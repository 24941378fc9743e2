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

    unsigned other = rank ^ 1, pb, pf; MAPA(pb, SMEM(&buf[2*t + 1]), other); MAPA(pf, fb, other);
    if (t == 0) ARRIVE_TX_REMOTE(pf, 256);
    unsigned long long v = t;
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" :: "r"(pb), "l"(v), "r"(pf) : "memory");
    WAIT_CL(fb, 0);
    out[t] = buf[2*t+1] + buf[2*t+2];

    CLUSTER_SYNC;
}
