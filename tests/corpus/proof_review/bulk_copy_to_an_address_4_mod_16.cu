// Found by an adversarial review: the proof before launch once accepted it.
// block (64, 1, 1)
// A cp.async.bulk into buf + 4 (the PTX ISA asks for 16-byte alignment).
// FINDING 3 (single CTA, no cluster): cp.async.bulk with a size not a multiple of 16, or a
// shared destination not 16-byte aligned. PTX ISA (cp.async.bulk): size is a multiple of 16
// and both addresses 16-byte aligned; otherwise undefined. `_bulk` checks neither.
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

#define BULK(d, s, n, b) asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" :: "r"(d), "l"(s), "r"(n), "r"(b) : "memory")
extern "C" __global__ void k(const unsigned* g, unsigned* out) {
    __shared__ __align__(128) unsigned buf[256];
    __shared__ __align__(8) unsigned long long full;
    unsigned t = threadIdx.x, fb = SMEM(&full);
    if (t == 0) { INIT(fb, 1); }
    __syncthreads();
    if (t == 0) { ARRIVE_TX_LOCAL(fb, 128); BULK(SMEM(&buf[1]), g, 128, fb); }
    WAIT_CL(fb, 0);
    out[t] = buf[1 + t % (128 / 4)];
    __syncthreads();
}
