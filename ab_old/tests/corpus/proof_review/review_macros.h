// The macros of the adversarial reviews' kernels (cluster PTX through inline assembly).
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
#define BULK_ST(g, s, n, l) asm volatile("{ .reg .pred p; setp.eq.u32 p, %3, 0; @p cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2; }" :: "l"(g), "r"(s), "r"(n), "r"(l) : "memory")
#define BULK_COMMIT asm volatile("cp.async.bulk.commit_group;" ::: "memory")
#define BULK_WAIT asm volatile("cp.async.bulk.wait_group 0;" ::: "memory")
#define FENCE_PROXY asm volatile("fence.proxy.async.shared::cta;" ::: "memory")
#define STC(a, v) asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(a), "r"(v) : "memory")
