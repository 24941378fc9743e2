// Found by an adversarial review: the proof before launch once accepted it.
// block (32, 1, 1)
// Two CTAs each load their OWN src[t] (different values: rank*100+t) and store it into
// rank 0's dst[t] via st.shared::cluster in the same interval: a WAW race with different
// values. The value key of ld.shared ignores which CTA's bytes are loaded.
#define CLUSTER_SYNC asm volatile("barrier.cluster.arrive.release.aligned;\n\t" \
                                  "barrier.cluster.wait.acquire.aligned;" ::: "memory")
extern "C" __global__ void __cluster_dims__(2, 1, 1) rep(unsigned* out) {
    __shared__ unsigned src[32];
    __shared__ unsigned dst[32];
    unsigned t = threadIdx.x, rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    src[t] = rank * 100 + t;
    dst[t] = 0;
    CLUSTER_SYNC;
    unsigned v;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"((unsigned)__cvta_generic_to_shared(&src[t])) : "memory");
    unsigned d = (unsigned)__cvta_generic_to_shared(&dst[t]), pd;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(pd) : "r"(d), "r"(0));
    asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(pd), "r"(v) : "memory");
    CLUSTER_SYNC;
    if (rank == 0) out[blockIdx.x * 32 + t] = dst[t];
}
