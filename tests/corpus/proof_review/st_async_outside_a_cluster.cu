// Found by an adversarial review: the proof before launch once accepted it.
// block (32, 1, 1)
// st.async (mapa to rank 0) in a kernel launched without clusters: PTX says st.async needs
// %cluster_nctarank > 1, otherwise undefined behaviour. Is it proven?
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
