// Found by an adversarial review: the proof before launch once accepted it.
// block (32, 1, 1)
// Two CTAs each store the shared::cta address of their own src[t] into rank 0's dst[t]
// (st.shared::cluster) in the same interval. A shared::cta address is also a valid
// shared::cluster address naming the executing CTA's bytes, so the two CTAs' values must
// differ on the GPU; the proof keys both as (symbol, offset) and calls them replicas.
#include "review_macros.h"

extern "C" __global__ void __cluster_dims__(2, 1, 1) k(unsigned* out) {
    __shared__ unsigned src[32];
    __shared__ unsigned dst[32];
    unsigned t = threadIdx.x, rank; RANK(rank);
    dst[t] = 0;
    CLUSTER_SYNC;
    unsigned pd; MAPA(pd, SMEM(&dst[t]), 0);
    asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(pd), "r"(SMEM(&src[t])) : "memory");
    CLUSTER_SYNC;
    if (rank == 0) out[blockIdx.x * 32 + t] = dst[t];
}
