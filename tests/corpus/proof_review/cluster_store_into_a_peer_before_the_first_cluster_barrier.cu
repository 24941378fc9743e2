// Found by an adversarial review: the proof before launch once accepted it.
// block (32, 1, 1)
// FINDING 1: st.shared::cluster into the peer CTA before any cluster barrier.
// CUDA Programming Guide (Distributed Shared Memory): "Accessing data in distributed shared
// memory requires all the thread blocks to exist. A user can guarantee that all thread blocks
// have started executing using cluster.sync()". Here each CTA stores into rank^1's buf[t] as
// its first instruction; the peer may not have started (its shared memory not yet its own),
// so the store may be lost or land in memory a still-running earlier CTA owns. The prover's
// cluster rules check only the END of a CTA's life (`_exits`), not its start.
#define CLUSTER_SYNC asm volatile("barrier.cluster.arrive.release.aligned;\n\t" \
                                  "barrier.cluster.wait.acquire.aligned;" ::: "memory")
#define MAPA(d, a, r) asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(r))
#define SMEM(p) ((unsigned)__cvta_generic_to_shared(p))
#define ARRIVE_REMOTE(b) asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(b) : "memory")
#define ARRIVE_TX_REMOTE(b, n) asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;" :: "r"(b), "r"(n) : "memory")
#define ARRIVE_LOCAL(b) asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" :: "r"(b) : "memory")
#define ARRIVE_TX_LOCAL(b, n) asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(n) : "memory")
#define ST_ASYNC32(d, v, b) asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" :: "r"(d), "r"(v), "r"(b) : "memory")
#define INIT(b, n) asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(b), "r"(n) : "memory")
#define FENCE_INIT asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory")
#define WAIT_CL(b, par) { unsigned ok = 0; while (!ok) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], " #par "; selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(b) : "memory"); }
#define WAIT_CTA(b, par) { unsigned ok = 0; while (!ok) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], " #par "; selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(b) : "memory"); }
#define RANK(r) asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r))

extern "C" __global__ void __cluster_dims__(2, 1, 1) k(unsigned* out) {
    __shared__ __align__(16) unsigned buf[32];
    unsigned t = threadIdx.x, rank; RANK(rank);
    unsigned pb; MAPA(pb, SMEM(&buf[t]), rank ^ 1);
    asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(pb), "r"(t + rank) : "memory");
    CLUSTER_SYNC;
    out[t] = buf[t];
    CLUSTER_SYNC;
}
