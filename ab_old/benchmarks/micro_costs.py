#!/usr/bin/env python
"""Cycles of the memory operations the checker's probes are made of, on this GPU.

    PYTHONPATH=. python benchmarks/micro_costs.py

One CTA loops 2,000 times over one operation and reads clock64 around the loop (one
thread, then 32): a CTA-scope fence alone and after a global or shared store, a global
store alone, a volatile global load (a device-memory round trip: how the checker reads
words other warps keep writing), and a global store followed by a load of the same word.
The loop's own test and branch are in every row. Later rows: the checker's stores of sites
(volatile: system-scope strong stores) with the fences after them, a shared-memory
compare-and-swap (an mbarrier entry's lock), a reduction then a load of the same word (a
copy's landing, then a wait's join), and CTA-scope loads after stores to the same line.
"""

from __future__ import annotations

SOURCE = r"""
__device__ void st_cta(unsigned* p, unsigned v) {  // the checker's CTA-scope store
    asm volatile("st.relaxed.cta.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ unsigned ld_cta(const unsigned* p) {  // the checker's CTA-scope load
    unsigned v;
    asm volatile("ld.relaxed.cta.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
extern "C" __global__ void costs(unsigned* g, long long* out, int mode, int iters) {
    __shared__ unsigned s[64];
    unsigned t = threadIdx.x, acc = 0;
    long long t0 = clock64();
    for (int i = 0; i < iters; ++i) {
        unsigned* p = g + t * 32 + (i & 7);
        if (mode == 0) __threadfence_block();
        if (mode == 1) { *p = i; __threadfence_block(); }
        if (mode == 2) { s[t] = i; __threadfence_block(); }
        if (mode == 3) { *p = i; asm volatile("fence.acq_rel.cta;" ::: "memory"); }
        if (mode == 4) *p = i;
        if (mode == 5) acc += *(volatile unsigned*)(p + 1024);
        unsigned* q = g + t * 32 + 2048;
        if (mode == 6) { *q = i; acc += *(volatile unsigned*)q; }
        if (mode == 7) { *q = i; acc += *q; asm volatile("" ::: "memory"); }
        if (mode == 8) { *(volatile unsigned*)p = i; __threadfence_block(); }
        if (mode == 9) {
            *(volatile unsigned*)p = i;
            asm volatile("fence.acq_rel.cta;" ::: "memory");
        }
        if (mode == 10) { st_cta(p, i); __threadfence_block(); }
        if (mode == 11) *(volatile unsigned*)p = i;
        if (mode == 12) {
            unsigned o, a = (unsigned)__cvta_generic_to_shared(&s[t]);
            asm volatile("atom.acquire.cta.shared::cta.cas.b32 %0, [%1], %2, %3;"
                         : "=r"(o) : "r"(a), "r"(i), "r"(i + 1) : "memory");
            acc += o;
        }
        if (mode == 13) {
            asm volatile("red.relaxed.cta.global.max.u32 [%0], %1;" :: "l"(q), "r"(i) : "memory");
            acc += ld_cta(q);
        }
        if (mode == 14) acc += ld_cta(q + acc % 2);
        if (mode == 15) { st_cta(q, i); acc += ld_cta(q); }
        if (mode == 16) { *(volatile unsigned*)(q + 8) = i; acc += ld_cta(q); }
        unsigned* r = g + 65536 + t * 1024 + (i & 7) * 4;  // eight lines a thread
        if (mode >= 17 && mode <= 21) {
            for (int k = 0; k < 8; ++k) {
                if (mode == 17 || mode == 20) *(volatile unsigned*)(r + 32 * k) = i;
                else if (mode == 18 || mode == 21) st_cta(r + 32 * k, i);
                else r[32 * k] = i;
            }
            if (mode <= 19) __threadfence_block();
        }
    }
    long long t1 = clock64();
    if (t == 0) out[0] = (t1 - t0) / iters;
    if (acc == 12345u) g[0] = acc;
}
"""
ROWS = ("fence.sc.cta alone", "st.global + fence.sc.cta", "st.shared + fence.sc.cta",
        "st.global + fence.acq_rel.cta", "st.global alone", "volatile ld.global",
        "st.global, then a volatile ld of it", "st.global, then a plain ld of it",
        "volatile st.global + fence.sc.cta", "volatile st.global + fence.acq_rel.cta",
        "st.relaxed.cta.global + fence.sc.cta", "volatile st.global alone",
        "atom.acquire.cta.shared cas", "red.relaxed.cta.global.max, then ld.relaxed.cta of it",
        "ld.relaxed.cta.global, dependent (an L1 hit)",
        "st.relaxed.cta.global, then ld.relaxed.cta of it",
        "volatile st.global to the line, then ld.relaxed.cta of another word of it",
        "8 volatile st.global (8 lines) + fence.sc.cta",
        "8 st.relaxed.cta.global (8 lines) + fence.sc.cta", "8 st.global (8 lines) + fence.sc.cta",
        "8 volatile st.global (8 lines)", "8 st.relaxed.cta.global (8 lines)")


def main() -> int:
    import cupy as cp

    k = cp.RawKernel(SOURCE, "costs")
    g = cp.zeros(1 << 20, dtype=cp.uint32)  # (rows 17-21: words 65536 on)
    out = cp.zeros(1, dtype=cp.int64)
    print(f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    print("threads | operation | cycles an iteration")
    for threads in (1, 32):
        for mode, label in enumerate(ROWS):
            for _ in range(2):  # (the second launch is the one kept)
                k((1,), (threads,), (g, out, cp.int32(mode), cp.int32(2000)))
            cp.cuda.runtime.deviceSynchronize()
            print(f"{threads} | {label} | {int(out[0].get())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
