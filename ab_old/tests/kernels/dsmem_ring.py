"""A two-CTA producer/consumer ring over distributed shared memory (sm_90), clean by design.

Clusters of two CTAs. Rank 0 (the producer) reads tiles of 1024 floats from global memory
and hands each to rank 1 through a 4-stage ring in rank 1's shared memory: its thread 0
arms rank 1's `full[s]` with `mbarrier.arrive.expect_tx` on that CTA's mbarrier, and every
thread `st.async`'s its 16 bytes there, completing them on `full[s]`. Rank 1 (the consumer)
waits on `full[s]`, adds the tile into its registers, and frees the stage with an arrive on
rank 0's `empty[s]`, which the producer waits on before it writes the stage again. The
column sums go to `out`, one row per cluster. The pattern of cluster split-K reductions and
of producer CTAs that feed a peer without a round trip through global memory. Shared by
tests/gpu/test_peer_mbarrier.py and benchmarks/bench_async.py.
"""

from __future__ import annotations

import numpy as np

SOURCE = r"""
#define STAGES 4
#define TILE 1024  // floats: 256 threads x 4
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(256)
dsmem_ring(const float4* x, float4* out, int tiles) {
    __shared__ __align__(16) float4 stage[STAGES][TILE / 4];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    unsigned t = threadIdx.x, rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    unsigned pair = blockIdx.x / 2, other = rank ^ 1u;
    if (t == 0) {
        for (int s = 0; s < STAGES; ++s) {
            unsigned f = (unsigned)__cvta_generic_to_shared(&full[s]);
            unsigned e = (unsigned)__cvta_generic_to_shared(&empty[s]);
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(f) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 256;" :: "r"(e) : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (rank == 0) {  // producer: global -> the consumer's stage s
        for (int it = 0; it < tiles; ++it) {
            int s = it % STAGES;
            if (it >= STAGES) {
                unsigned e = (unsigned)__cvta_generic_to_shared(&empty[s]), ok = 0;
                unsigned par = ((it / STAGES) - 1) & 1;
                while (!ok)
                    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster."
                                 "shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                                 : "=r"(ok) : "r"(e), "r"(par) : "memory");
            }
            float4 v = x[((size_t)pair * tiles + it) * (TILE / 4) + t];
            unsigned d = (unsigned)__cvta_generic_to_shared(&stage[s][t]), f, pd, pf;
            f = (unsigned)__cvta_generic_to_shared(&full[s]);
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(pd) : "r"(d), "r"(other));
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(pf) : "r"(f), "r"(other));
            if (t == 0)
                asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, "
                             "[%0], %1;" :: "r"(pf), "r"(TILE * 4) : "memory");
            asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], "
                         "{%1, %2, %3, %4}, [%5];"
                         :: "r"(pd), "r"(__float_as_uint(v.x)), "r"(__float_as_uint(v.y)),
                            "r"(__float_as_uint(v.z)), "r"(__float_as_uint(v.w)), "r"(pf)
                         : "memory");
        }
    } else {  // consumer: its stage s -> registers, then free it in the producer
        float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int it = 0; it < tiles; ++it) {
            int s = it % STAGES;
            unsigned f = (unsigned)__cvta_generic_to_shared(&full[s]), ok = 0;
            unsigned par = (it / STAGES) & 1;
            while (!ok)  // @wait-full
                asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster."
                             "shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                             : "=r"(ok) : "r"(f), "r"(par) : "memory");
            float4 v = stage[s][t];  // @read-stage
            acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
            unsigned e = (unsigned)__cvta_generic_to_shared(&empty[s]), pe;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(pe) : "r"(e), "r"(other));
            asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];"
                         :: "r"(pe) : "memory");
        }
        out[(size_t)pair * (TILE / 4) + t] = acc;
    }
    // no CTA leaves while the other may still reach its shared memory
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
"""
KERNEL = "dsmem_ring"


def source(stages: int = 4) -> str:
    """The ring with `stages` stages (4 KiB each): from 8 on, the producer runs further
    ahead than a mailbox holds posts (9 a tile), and the consumer's arrivals come back
    while it waits for room."""
    return SOURCE.replace("#define STAGES 4", f"#define STAGES {stages}")
BLOCK = (256, 1, 1)
TILE = 1024


def grid(pairs: int) -> tuple[int, int, int]:
    return (2 * pairs, 1, 1)


def inputs(xp, pairs: int, tiles: int, seed: int = 11):
    """(x, out, the column sums NumPy computes the same way: tile by tile in order)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-8, 8, (pairs, tiles, TILE)).astype(np.float32) * np.float32(0.25)
    want = np.zeros((pairs, TILE), dtype=np.float32)
    for it in range(tiles):
        want += x[:, it, :]
    return xp.asarray(x.reshape(-1)), xp.zeros(pairs * TILE, dtype=xp.float32), want


def args(x, out, tiles: int) -> tuple:
    return (x, out, np.int32(tiles))
