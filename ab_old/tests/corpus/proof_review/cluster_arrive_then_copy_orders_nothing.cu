// Found by an adversarial review: the proof before launch once accepted it.
// block (64, 1, 1)
// Causal clocks: X's second arrive on M2 is judged after Y's arrive on M2 only because X
// waited for M1, which Y's st.async (issued after Y's M2 arrive) completes. If Y's
// (release) arrive on M2 is performed after its later weak st.async lands, X's two arrivals
// complete M2's phase 0 by themselves; W's wait for phase 0 then returns without acquiring
// Y's release, and W's read of D races with Y's st.shared::cluster of D.
#include "review_macros.h"

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(64) k(unsigned* out) {
    __shared__ __align__(16) unsigned D[32];
    __shared__ __align__(16) unsigned b[4];
    __shared__ __align__(8) unsigned long long M1, M2;
    unsigned t = threadIdx.x, rank; RANK(rank);
    unsigned m1 = SMEM(&M1), m2 = SMEM(&M2);
    if (t == 0) { INIT(m1, 1); INIT(m2, 2); FENCE_INIT; }
    if (t < 32) D[t] = 0;
    CLUSTER_SYNC;
    if (rank == 0) {
        if (t < 32) {   // Y
            unsigned pD, pM1, pM2, pb;
            MAPA(pD, SMEM(&D[t]), 1); MAPA(pM1, m1, 1); MAPA(pM2, m2, 1); MAPA(pb, SMEM(&b[0]), 1);
            asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(pD), "r"(t + 7) : "memory");
            __syncwarp();
            if (t == 0) {
                ARRIVE_REMOTE(pM2);
                ST_ASYNC32(pb, 5u, pM1);
            }
        }
    } else {
        if (t == 32 + 0) {   // X (lane 0 of warp 1 of CTA1)
            ARRIVE_TX_LOCAL(m1, 4);
            ARRIVE_LOCAL(m2);
            WAIT_CL(m1, 0);
            ARRIVE_LOCAL(m2);
        }
        if (t < 32) {   // W (warp 0 of CTA1)
            WAIT_CL(m2, 0);
            out[t] = D[t];
            __syncwarp();
            if (t == 0) ARRIVE_LOCAL(m2);
        }
    }
    CLUSTER_SYNC;
}
