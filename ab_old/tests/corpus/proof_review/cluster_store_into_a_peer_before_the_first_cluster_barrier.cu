// Found by an adversarial review: the proof before launch once accepted it.
// block (32, 1, 1)
// FINDING 1: st.shared::cluster into the peer CTA before any cluster barrier.
// CUDA Programming Guide (Distributed Shared Memory): "Accessing data in distributed shared
// memory requires all the thread blocks to exist. A user can guarantee that all thread blocks
// have started executing using cluster.sync()". Here each CTA stores into rank^1's buf[t] as
// its first instruction; the peer may not have started (its shared memory not yet its own),
// so the store may be lost or land in memory a still-running earlier CTA owns. The prover's
// cluster rules check only the END of a CTA's life (`_exits`), not its start.
#include "review_macros.h"

extern "C" __global__ void __cluster_dims__(2, 1, 1) k(unsigned* out) {
    __shared__ __align__(16) unsigned buf[32];
    unsigned t = threadIdx.x, rank; RANK(rank);
    unsigned pb; MAPA(pb, SMEM(&buf[t]), rank ^ 1);
    asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(pb), "r"(t + rank) : "memory");
    CLUSTER_SYNC;
    out[t] = buf[t];
    CLUSTER_SYNC;
}
