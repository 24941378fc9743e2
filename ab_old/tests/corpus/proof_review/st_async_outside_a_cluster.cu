// Found by an adversarial review: the proof before launch once accepted it.
// block (32, 1, 1)
// st.async (mapa to rank 0) in a kernel launched without clusters: PTX says st.async needs
// %cluster_nctarank > 1, otherwise undefined behaviour. Is it proven?
#include "review_macros.h"

extern "C" __global__ void k(unsigned* out) {
    __shared__ __align__(16) unsigned buf[32];
    __shared__ __align__(8) unsigned long long full;
    unsigned t = threadIdx.x;
    if (t == 0) { INIT(SMEM(&full), 1); FENCE_INIT; }
    CLUSTER_SYNC;
    unsigned pb, pf; MAPA(pb, SMEM(&buf[t]), 0); MAPA(pf, SMEM(&full), 0);
    if (t == 0) ARRIVE_TX_REMOTE(pf, 128);
    ST_ASYNC32(pb, t, pf);
    WAIT_CL(SMEM(&full), 0);
    out[t] = buf[(t + 1) % 32];
    CLUSTER_SYNC;
}
