// Found by an adversarial review: the proof before launch once accepted it.
// block (32, 1, 1)
// Rank 1 stores into rank 0's buf (st.shared::cluster) and arrives on rank 0's mbarrier;
// rank 0 waits, then bulk-stores buf to global memory with no fence.proxy.async.
#include "review_macros.h"
extern "C" __global__ void __cluster_dims__(2, 1, 1) k(unsigned* out) {
    __shared__ __align__(128) unsigned buf[32];
    __shared__ __align__(8) unsigned long long mb;
    unsigned t = threadIdx.x, rank; RANK(rank);
    unsigned b = SMEM(&mb);
    if (t == 0) { INIT(b, 32); FENCE_INIT; }
    CLUSTER_SYNC;
    if (rank == 1) {
        unsigned pb, pm; MAPA(pb, SMEM(&buf[t]), 0); MAPA(pm, b, 0);
        STC(pb, t * 3);
        
        ARRIVE_REMOTE(pm);
    } else {
        WAIT_CL(b, 0);
    }
    BULK_ST(out, SMEM(&buf[0]), 128, t + rank);
    BULK_COMMIT; BULK_WAIT;
    CLUSTER_SYNC;
}
