// Found by an adversarial review: the proof before launch once accepted it.
// block (64, 1, 1)
// FINDING 4 (single CTA): `mbarrier.arrive.noComplete` whose arrival completes the phase.
// PTX ISA: if an arrive with .noComplete causes the mbarrier to complete its current phase,
// the behaviour is undefined. events.py maps it to a plain MB_ARRIVE (the qualifier is
// ignored) and the proof counts it as completing phase 0, so warp 0's wait is 'satisfied'.
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
    __shared__ __align__(8) unsigned long long full;
    unsigned t = threadIdx.x, fb = SMEM(&full);
    if (t == 0) INIT(fb, 1);
    __syncthreads();
    if (t == 32) { unsigned long long st; asm volatile("mbarrier.arrive.noComplete.release.cta.shared::cta.b64 %0, [%1], 1;" : "=l"(st) : "r"(fb) : "memory"); }
    if (t < 32) { WAIT_CTA(fb, 0); out[t] = 5; }
    __syncthreads();
}
