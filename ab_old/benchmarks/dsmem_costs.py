#!/usr/bin/env python
"""Cycles of the memory operations a checker that writes a peer CTA's tables would make.

    PYTHONPATH=. python benchmarks/dsmem_costs.py

Today a CTA applies its peers' copies and mbarrier operations itself, from a mailbox, one
warp at a time (consan/checker/multicast.h); the clustered ring's consumer spends most of
its time waiting for those applies. The alternative is the issuing warp writing the
owner's shared-memory tables itself, through distributed shared memory, and the owner's
device-memory words through loads that do not stop in its own SM's L1. What each of those
costs decides whether that is worth building, so this times them.

Clusters of two CTAs; one warp of rank 0 loops `iters` times over one operation and reads
clock64 around the loop (lane 0 alone, then all 32 lanes on their own words); rank 1 waits
at the cluster barrier, so its shared memory stays. Dependent rows chase a pointer (each
load's address is the last one's value): their cycles are a round trip each. The loop's
own test and branch are in every row.
"""

from __future__ import annotations

import argparse

SOURCE = r"""
#define LOOP(BODY) for (int i = 0; i < iters; ++i) { BODY; acc += v; }
#define ASM1(OP, V, ADDR) asm volatile(OP " %0, [%1];" : "=r"(V) : "r"(ADDR) : "memory")
#define ASMG(OP, V, ADDR) asm volatile(OP " %0, [%1];" : "=r"(V) : "l"(ADDR) : "memory")
#define CLD "ld.relaxed.cluster.shared::cluster.u32"
extern "C" __global__ void __cluster_dims__(2, 1, 1)
costs(unsigned* g, long long* out, int mode, int iters, int lanes) {
    extern __shared__ __align__(16) unsigned s[];  // (over half an SM's: one CTA an SM)
    unsigned t = threadIdx.x, rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    for (unsigned i = t; i < 1024; i += blockDim.x) s[i] = (i + 32) % 1024;  // a chase, 32 apart
    for (unsigned i = t; i < 4096; i += blockDim.x) g[blockIdx.x * 4096 + i] = (i + 32) % 4096;
    if (t == 0) {  // (each CTA says which SM it is on)
        unsigned smid;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        s[4096] = smid;
    }
    __syncthreads();
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (rank == 0 && t < (unsigned)lanes) {
        unsigned base = (unsigned)__cvta_generic_to_shared(s), peer, smid, psmid;
        asm volatile("mapa.shared::cluster.u32 %0, %1, 1;" : "=r"(peer) : "r"(base));
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        const unsigned* mine = g + blockIdx.x * 4096;
        unsigned v = t, acc = 0;
        long long t0 = clock64();
        switch (mode) {  // (a loop each: nothing but the operation and the chase in it)
        case 0: LOOP(ASM1("ld.volatile.shared.u32", v, base + 4u * v))
            break;
        case 1: LOOP(ASM1(CLD, v, base + 4u * v))
            break;
        case 2: LOOP(ASM1(CLD, v, peer + 4u * v))
            break;
        case 3: LOOP(asm volatile("atom.shared.cas.b32 %0, [%1], 0, 0;"
                                  : "=r"(v) : "r"(base + 4u * v) : "memory"))
            break;
        case 4: LOOP(asm volatile("atom.shared::cluster.cas.b32 %0, [%1], 0, 0;"
                                  : "=r"(v) : "r"(peer + 4u * v) : "memory"))
            break;
        case 5: LOOP(asm volatile("st.relaxed.cluster.shared::cluster.u32 [%0], %1;\n\t"
                                  "fence.acq_rel.cluster;"
                                  :: "r"(peer + 4u * (v % 1024u)), "r"(v) : "memory"); v += 1)
            break;
        case 6: LOOP(ASMG("ld.relaxed.gpu.global.u32", v, mine + v))
            break;
        case 7: LOOP(ASMG("ld.relaxed.cta.global.u32", v, mine + v))
            break;
        case 8: LOOP(ASMG("ld.relaxed.cluster.global.u32", v, mine + v))
            break;
        case 9: LOOP(asm volatile("fence.acq_rel.cluster;" ::: "memory"))
            break;
        case 10: LOOP(asm volatile("fence.acq_rel.cta;" ::: "memory"))
            break;
        case 11: LOOP(unsigned u0; unsigned u1; unsigned u2; unsigned u3;  // four, then their sum
                      asm volatile("ld.relaxed.cluster.shared::cluster.u32 %0, [%4];\n\t"
                                   "ld.relaxed.cluster.shared::cluster.u32 %1, [%5];\n\t"
                                   "ld.relaxed.cluster.shared::cluster.u32 %2, [%6];\n\t"
                                   "ld.relaxed.cluster.shared::cluster.u32 %3, [%7];"
                                   : "=r"(u0), "=r"(u1), "=r"(u2), "=r"(u3)
                                   : "r"(peer + 4u * v), "r"(peer + 4u * ((v + 32u) % 1024u)),
                                     "r"(peer + 4u * ((v + 64u) % 1024u)),
                                     "r"(peer + 4u * ((v + 96u) % 1024u)) : "memory");
                      v = (u0 + u1 + u2 + u3) % 1024u)
            break;
        case 12: LOOP(ASM1("ld.acquire.cluster.shared::cta.u32", v, base + 4u * v))
            break;
        case 13: LOOP(asm volatile("st.release.cluster.shared::cluster.u32 [%0], %1;"
                                   :: "r"(peer + 4u * (v % 1024u)), "r"(v) : "memory"); v += 1)
            break;
        default: LOOP(v = (v + 32u) % 1024u)  // the loop and the chase alone
        }
        long long t1 = clock64();
        ASM1("ld.shared::cluster.u32", psmid, peer + 4096u * 4u);
        if (t == 0) out[0] = t1 - t0, out[2] = smid, out[3] = psmid;
        if (acc == 0xFFFFFFFFu) out[1] = acc;  // (keeps the loop)
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
"""

ROWS = [  # (the kernel's mode, what it times)
    (0, "ld.shared (this CTA), dependent"),
    (1, "ld.shared::cluster, this CTA's address, dependent"),
    (2, "ld.shared::cluster, the peer's address, dependent"),
    (3, "atom.shared.cas (this CTA), dependent"),
    (4, "atom.shared::cluster.cas, the peer's, dependent"),
    (5, "st.shared::cluster to the peer + fence.acq_rel.cluster"),
    (6, "ld.relaxed.gpu.global, dependent (L2)"),
    (7, "ld.relaxed.cta.global, dependent (L1)"),
    (8, "ld.relaxed.cluster.global, dependent"),
    (9, "fence.acq_rel.cluster alone"),
    (10, "fence.acq_rel.cta alone"),
    (11, "four peer loads at once, then their sum"),
    # what a post's last word costs its writer and each reader (checker/multicast.h: the
    # drain's and a read's look at pending posts load it with an acquire)
    (12, "ld.acquire.cluster.shared::cta (this CTA), dependent"),
    (13, "st.release.cluster.shared::cluster to the peer"),
    (99, "the loop and its chase alone"),
]
SMEM = 160 * 1024


def main() -> None:
    import cupy as cp

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=2000)
    args = ap.parse_args()
    k = cp.RawKernel(SOURCE, "costs", options=("-arch=sm_90a", "-std=c++17"))
    k.max_dynamic_shared_size_bytes = SMEM
    g = cp.zeros(2 * 4096, dtype=cp.uint32)
    out = cp.zeros(4, dtype=cp.int64)
    print(f"gpu: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    print("operation | cycles an iteration, lane 0 alone | the same, 32 lanes")
    print("---|---|---")
    for mode, label in ROWS:
        cells = []
        for lanes in (1, 32):
            best = None
            for _ in range(3):  # (the least of three: the loop alone on its SM)
                k((2,), (32,), (g, out, cp.int32(mode), cp.int32(args.iters), cp.int32(lanes)),
                  shared_mem=SMEM)
                cp.cuda.runtime.deviceSynchronize()
                c = int(out[0].get()) / args.iters
                best = c if best is None else min(best, c)
            cells.append(f"{best:.0f}")
        print(f"{label} | {cells[0]} | {cells[1]}")
    sm = out.get()
    print(f"(rank 0 on SM {sm[2]}, rank 1 on SM {sm[3]})")


if __name__ == "__main__":
    main()
