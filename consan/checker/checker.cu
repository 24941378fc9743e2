// consan device checker.
//
// Compiled by NVRTC (-rdc) and linked by nvJitLink with the instrumented
// PTX, whose probes call the extern "C" functions at the bottom. The same
// source builds for the host with -DCONSAN_HOST (one lane per warp), so CI
// can drive the decision logic with event traces and no GPU.
//
// Model (docs/model.md): logical threads are the CTA's warps; each keeps a
// vector clock in the *visibility* table; a barrier generation joins the
// arrivers' clocks into a *barrier* slot and each waiter joins it back. The
// *buffer* table keeps, per 4-byte granule, the last write epoch and, per
// warp, the clock of its last read since that write.
//
// consan_abi.h is generated from instrument/abi.py by the build (never edited).

#ifdef CONSAN_HOST
#include <stdint.h>
#include <stdlib.h>
#else
typedef unsigned char uint8_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef int int32_t;
#endif
#include "consan_abi.h"

#ifdef CONSAN_HOST
typedef uintptr_t cs_sp;  // an address in the CTA's shared memory
#define CS_ALIGN16 alignas(16)
#else
typedef uint32_t cs_sp;  // an address in the CTA's shared memory
#define CS_ALIGN16 __align__(16)
#endif
// Where the granule tables in shared memory (FLAG_VC_SMEM) are: set when the CTA begins.
struct cs_vlay {
    cs_sp W, R, RS, BT;
    uint32_t gp, nr, nb, rss;
    uint32_t *ws, *rsite;
    uint32_t* vis;  // the warps' vector clocks [nwarps][nlogical] (generic address)
    uint64_t* barw;  // the named barriers' words [NAMED_BARRIERS]
    uint32_t* bvc0;  // barrier 0's two clock slots [2][nlogical]
    uint32_t rtid[2];  // the logical thread of readers 0..7, a byte each
    uint32_t* rows;  // FLAG_BAR0_ROWS: each warp's clock at its arrivals [2][nwarps][nlogical]
};
#define CS_TMAP_CACHE 4
// The CTA's checker state in its shared memory (a static in the host build).
struct CS_ALIGN16 cs_shared_t {
    uint32_t slot, gen, mbar_used, pad;  // mbar_used: bit j, mbarrier entry j is in use
    uint64_t mbar_arc;  // the entries' columns to visit, for the mask they were made from
    uint32_t clock[CS_MAX_WARPS];  // each warp's own clock: VC_w[w], kept in smem
    uint32_t cpticks[CS_MAX_WARPS];  // each warp's cp.async unit's clock - 1: commit_group and
                                     // cp.async.mbarrier.arrive advance it (every cp.async
                                     // probe reads it: shared memory, not the CTA table)
    uint32_t commits[2][CS_MAX_WARPS];  // each warp's bulk (CS_UNIT_BULK) and wgmma
                                        // (CS_UNIT_WGMMA) groups committed
    uint32_t lanes[CS_MAX_WARPS];  // each warp's live lanes (every barrier probe reads them)
    uint32_t live_warps;           // warps with a live lane
    uint32_t phase[CS_MAX_WARPS];  // CTA-wide barriers each warp has passed
    uint32_t mlock[CS_MBARRIERS];  // the lock of each mbarrier entry
    uint32_t mkey[CS_MBARRIERS];   // the key of each entry this CTA made (0: none)
    uint32_t mlive[CS_MBARRIERS];  // the entry's liveness (the generation while live)
    uint64_t tmap_at[CS_TMAP_CACHE];  // kernel-parameter maps already looked up (0: free)
    uint32_t tmap_bytes[CS_TMAP_CACHE], tmap_claimed;  // ...their bytes; entries taken
    cs_vlay vlay;
};
#define cs_vlay_sh (cs_shv.vlay)
#define cs_mlock_sh (cs_shv.mlock)
#define cs_mkey_sh (cs_shv.mkey)
#define cs_mlive_sh (cs_shv.mlive)
#define cs_slot_sh (cs_shv.slot)
#define cs_mbar_used_sh (cs_shv.mbar_used)
#define cs_mbar_arc_sh (cs_shv.mbar_arc)
#define cs_gen_sh (cs_shv.gen)
#define cs_clock_sh (cs_shv.clock)
#define cs_cpticks_sh (cs_shv.cpticks)
#define CS_UNIT_BULK 0u
#define CS_UNIT_WGMMA 1u
// Groups warp w's bulk-store (CS_UNIT_BULK) or wgmma (CS_UNIT_WGMMA) unit has committed.
#define cs_commits_sh(k, w) (*(volatile uint32_t*)&cs_shv.commits[k][w])
#define cs_lanes_sh (cs_shv.lanes)
#define cs_livew_sh (cs_shv.live_warps)
#define cs_phase_sh (cs_shv.phase)

#ifdef CONSAN_HOST
#define CS_DEV static inline
#define CS_ENTRY extern "C"
#define CS_SHARED static
struct cs_host_ctx_t { uint32_t cta[3]; uint32_t warp; uint32_t nthreads_block; };
static cs_host_ctx_t cs_host_ctx;
extern "C" {
cs_state_t __consan_state;
}
static cs_shared_t cs_shv;
CS_DEV uint32_t cs_lane() { return 0; }
CS_DEV uint32_t cs_warp() { return cs_host_ctx.warp; }
CS_DEV uint32_t cs_tid() { return cs_host_ctx.warp * 32u; }
CS_DEV uint32_t cs_activemask() { return 1u; }
CS_DEV uint32_t cs_group(uint64_t, uint64_t) { return 1u; }
CS_DEV uint32_t cs_match(uint32_t, uint64_t) { return 1u; }
CS_DEV bool cs_any(uint32_t, bool p) { return p; }
static uint32_t cs_host_ms;  // the host driver's clock: every look advances it 100 ms
CS_DEV uint32_t cs_now_ms() { return cs_host_ms += 100; }
CS_DEV void cs_exit_thread() {}
CS_DEV bool cs_all(uint32_t, bool p) { return p; }
CS_DEV uint32_t cs_ballot(uint32_t, bool p) { return p ? 1u : 0u; }
CS_DEV uint32_t cs_nth_set(uint32_t m, uint32_t k) {
    for (uint32_t i = 0; i < 32; ++i) if ((m >> i) & 1u) { if (k == 0) return i; --k; }
    return 0;
}
CS_DEV uint32_t cs_min(uint32_t, uint32_t v) { return v; }
CS_DEV uint32_t cs_max(uint32_t, uint32_t v) { return v; }
CS_DEV uint32_t cs_or(uint32_t, uint32_t v) { return v; }
CS_DEV uint32_t cs_bcast(uint32_t, uint32_t v, int) { return v; }
CS_DEV void cs_fence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
CS_DEV void cs_fence_lock() { __atomic_thread_fence(__ATOMIC_ACQ_REL); }
CS_DEV void cs_fence_sys() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
CS_DEV void cs_syncwarp(uint32_t) {}
CS_DEV uint32_t cs_ld32(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
CS_DEV uint64_t cs_ld64(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
CS_DEV void cs_st32(uint32_t* p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
CS_DEV void cs_st64(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
CS_DEV void cs_st128(uint64_t* p, uint64_t a, uint64_t b) { cs_st64(p, a); cs_st64(p + 1, b); }
struct cs_u4 { uint32_t x, y, z, w; };
CS_DEV cs_u4 cs_ld128(const uint32_t* p) { return {cs_ld32(p), cs_ld32(p + 1), cs_ld32(p + 2), cs_ld32(p + 3)}; }
CS_DEV uint32_t cs_add32(uint32_t* p, uint32_t v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
CS_DEV uint64_t cs_add64(uint64_t* p, uint64_t v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
CS_DEV uint32_t cs_max32(uint32_t* p, uint32_t v) {
    uint32_t o = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (o < v && !__atomic_compare_exchange_n(p, &o, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return o;
}
CS_DEV uint64_t cs_max64(uint64_t* p, uint64_t v) {
    uint64_t o = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (o < v && !__atomic_compare_exchange_n(p, &o, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return o;
}
CS_DEV uint64_t cs_or64(uint64_t* p, uint64_t v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
CS_DEV uint64_t cs_and64(uint64_t* p, uint64_t v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }
CS_DEV uint32_t cs_and32(uint32_t* p, uint32_t v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }
CS_DEV uint32_t cs_or32(uint32_t* p, uint32_t v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
CS_DEV uint64_t cs_xchg64(uint64_t* p, uint64_t v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }
CS_DEV uint32_t cs_xchg32(uint32_t* p, uint32_t v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }
CS_DEV uint64_t cs_cas64(uint64_t* p, uint64_t cmp, uint64_t v) {
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return cmp;
}
CS_DEV uint32_t cs_cas32(uint32_t* p, uint32_t cmp, uint32_t v) {
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return cmp;
}
CS_DEV uint32_t cs_gadd32(uint32_t* p, uint32_t v) { return cs_add32(p, v); }
CS_DEV uint32_t cs_gcas32(uint32_t* p, uint32_t c, uint32_t v) { return cs_cas32(p, c, v); }
CS_DEV uint64_t cs_gcas64(uint64_t* p, uint64_t c, uint64_t v) { return cs_cas64(p, c, v); }
CS_DEV uint32_t cs_gxchg32(uint32_t* p, uint32_t v) { return cs_xchg32(p, v); }
CS_DEV uint64_t cs_gld64(const uint64_t* p) { return cs_ld64(p); }
CS_DEV void cs_sst32(uint32_t* p, uint32_t v) { cs_st32(p, v); }
CS_DEV int cs_popc(uint32_t v) { return __builtin_popcount(v); }
CS_DEV int cs_ffs(uint32_t v) { return __builtin_ffs(v); }
CS_DEV int cs_ffsll(uint64_t v) { return __builtin_ffsll(v); }
CS_DEV int cs_clz(uint32_t v) { return v ? __builtin_clz(v) : 32; }
CS_DEV bool cs_is_shared(uint64_t) { return true; }
CS_DEV uint32_t cs_to_shared(uint64_t a) { return (uint32_t)a; }
CS_DEV void cs_cta_id(uint32_t* c) { c[0] = cs_host_ctx.cta[0]; c[1] = cs_host_ctx.cta[1]; c[2] = cs_host_ctx.cta[2]; }
CS_DEV uint32_t cs_block_threads() { return cs_host_ctx.nthreads_block; }
CS_DEV uint32_t cs_cta_linear() { return cs_host_ctx.cta[0]; }
CS_DEV uint32_t cs_ctarank() { return 0; }
#else
#define CS_DEV static __device__ __forceinline__
#define CS_ENTRY extern "C" __device__
extern "C" {
__constant__ cs_state_t __consan_state;  // filled by the runtime before each launch
}
// The checker's own shared variables live in the dynamic window, right after the
// kernel's own bytes, never in a static variable: a static block of ours moves the
// kernel's dynamic shared memory, whose base generated code assumes aligned as it is
// natively (a Triton matmul's 128-byte-swizzled tiles, written by cp.async and read by
// wgmma, need it 1024-byte aligned: with 0x530 static bytes of ours its output was
// garbage). The window is only as aligned as the kernel's extern arrays ask: start at
// the next 16 bytes (the runtime adds 16 for this; asm: the compiler would assume the
// declared alignment and fold the pad to 0).
extern __shared__ __align__(16) uint8_t cs_dyn[];
CS_DEV uint8_t* cs_dyn_at(uint32_t offset) {
    uint32_t a;
    asm("mov.u32 %0, cs_dyn;" : "=r"(a));
    return cs_dyn + ((0u - a) & 15u) + offset;
}
#define cs_shv (*(cs_shared_t*)cs_dyn_at(__consan_state.shv_offset))
static_assert(sizeof(cs_shared_t) <= CS_SHV_BYTES, "abi.SHV_BYTES is too small");
CS_DEV uint32_t cs_lane() { uint32_t l; asm volatile("mov.u32 %0, %%laneid;" : "=r"(l)); return l; }
CS_DEV uint32_t cs_tid() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
CS_DEV uint32_t cs_warp() { return cs_tid() >> 5; }
CS_DEV uint32_t cs_activemask() { return __activemask(); }
// The lanes that make this probe call together: those with the same site and arguments.
// __activemask() alone may also hold lanes of the warp that reached the same checker code
// from another call site or loop trip: independent thread scheduling can reconverge them
// inside the callee (seen on the H100: a one-lane mbarrier.arrive ran its probe with 32
// active lanes, counted 32 arrivals and hung the ring it skipped).
CS_DEV uint32_t cs_group(uint64_t k1, uint64_t k2) {
    uint32_t a = __activemask();
    return __match_any_sync(a, k1) & __match_any_sync(a, k2);
}
CS_DEV uint32_t cs_match(uint32_t m, uint64_t k) { return __match_any_sync(m, k); }
CS_DEV bool cs_any(uint32_t m, bool p) { return __any_sync(m, p); }
CS_DEV uint32_t cs_now_ms() {
    uint64_t ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return (uint32_t)(ns / 1000000ull);
}
CS_DEV void cs_exit_thread() { asm volatile("exit;"); }
CS_DEV bool cs_all(uint32_t m, bool p) { return __all_sync(m, p); }
CS_DEV uint32_t cs_ballot(uint32_t m, bool p) { return __ballot_sync(m, p); }
CS_DEV uint32_t cs_nth_set(uint32_t m, uint32_t k) { return __fns(m, 0, (int)k + 1); }
CS_DEV uint32_t cs_min(uint32_t m, uint32_t v) { return __reduce_min_sync(m, v); }
CS_DEV uint32_t cs_max(uint32_t m, uint32_t v) { return __reduce_max_sync(m, v); }
CS_DEV uint32_t cs_or(uint32_t m, uint32_t v) { return __reduce_or_sync(m, v); }
CS_DEV uint32_t cs_bcast(uint32_t m, uint32_t v, int lane) { return __shfl_sync(m, v, lane); }
CS_DEV void cs_fence() { __threadfence_block(); }
// Enough for a lock (what was written under it is seen by the next holder); not for the
// probes' store-then-load (Dekker) orders, which take cs_fence.
CS_DEV void cs_fence_lock() { asm volatile("fence.acq_rel.cta;" ::: "memory"); }
CS_DEV void cs_fence_sys() { __threadfence_system(); }
CS_DEV void cs_syncwarp(uint32_t m) { __syncwarp(m); }
// Shadow tables belong to one CTA (one SM): relaxed CTA-scope accesses may hit in L1.
CS_DEV uint32_t cs_ld32(const uint32_t* p) {
    uint32_t v; asm volatile("ld.relaxed.cta.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
CS_DEV uint64_t cs_ld64(const uint64_t* p) {
    uint64_t v; asm volatile("ld.relaxed.cta.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory"); return v;
}
CS_DEV void cs_st32(uint32_t* p, uint32_t v) {
    asm volatile("st.relaxed.cta.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
CS_DEV void cs_st64(uint64_t* p, uint64_t v) {
    asm volatile("st.relaxed.cta.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}
CS_DEV void cs_st128(uint64_t* p, uint64_t a, uint64_t b) {  // p 16-byte aligned
    asm volatile("st.relaxed.cta.global.v2.u64 [%0], {%1, %2};" :: "l"(p), "l"(a), "l"(b) : "memory");
}
struct cs_u4 { uint32_t x, y, z, w; };
CS_DEV cs_u4 cs_ld128(const uint32_t* p) {  // p 16-byte aligned
    cs_u4 v;
    asm volatile("ld.relaxed.cta.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
    return v;
}
CS_DEV uint32_t cs_add32(uint32_t* p, uint32_t v) { return atomicAdd_block(p, v); }
CS_DEV uint64_t cs_add64(uint64_t* p, uint64_t v) { return atomicAdd_block(p, v); }
CS_DEV uint32_t cs_max32(uint32_t* p, uint32_t v) { return atomicMax_block(p, v); }
CS_DEV uint64_t cs_max64(uint64_t* p, uint64_t v) { return atomicMax_block(p, v); }
CS_DEV uint64_t cs_or64(uint64_t* p, uint64_t v) { return atomicOr_block(p, v); }
CS_DEV uint64_t cs_and64(uint64_t* p, uint64_t v) { return atomicAnd_block(p, v); }
CS_DEV uint32_t cs_and32(uint32_t* p, uint32_t v) { return atomicAnd_block(p, v); }
CS_DEV uint32_t cs_or32(uint32_t* p, uint32_t v) { return atomicOr_block(p, v); }
CS_DEV uint64_t cs_xchg64(uint64_t* p, uint64_t v) { return atomicExch_block(p, v); }
CS_DEV uint32_t cs_xchg32(uint32_t* p, uint32_t v) { return atomicExch_block(p, v); }
CS_DEV uint64_t cs_cas64(uint64_t* p, uint64_t c, uint64_t v) { return atomicCAS_block(p, c, v); }
CS_DEV uint32_t cs_cas32(uint32_t* p, uint32_t c, uint32_t v) { return atomicCAS_block(p, c, v); }
// Tables shared by every CTA of the launch (slots, log, key table): GPU scope;
// records live in host memory: system scope.
CS_DEV uint32_t cs_gadd32(uint32_t* p, uint32_t v) { return atomicAdd(p, v); }
CS_DEV uint32_t cs_gcas32(uint32_t* p, uint32_t c, uint32_t v) { return atomicCAS(p, c, v); }
CS_DEV uint64_t cs_gcas64(uint64_t* p, uint64_t c, uint64_t v) { return atomicCAS(p, c, v); }
CS_DEV uint32_t cs_gxchg32(uint32_t* p, uint32_t v) { return atomicExch(p, v); }
CS_DEV uint64_t cs_gld64(const uint64_t* p) { return *(const volatile uint64_t*)p; }
CS_DEV void cs_sst32(uint32_t* p, uint32_t v) { *(volatile uint32_t*)p = v; }
CS_DEV int cs_popc(uint32_t v) { return __popc(v); }
CS_DEV int cs_ffs(uint32_t v) { return __ffs(v); }
CS_DEV int cs_ffsll(uint64_t v) { return __ffsll((long long)v); }
CS_DEV int cs_clz(uint32_t v) { return __clz(v); }
CS_DEV bool cs_is_shared(uint64_t a) { return __isShared((const void*)a); }
CS_DEV uint32_t cs_to_shared(uint64_t a) { return (uint32_t)__cvta_generic_to_shared((const void*)a); }
CS_DEV void cs_cta_id(uint32_t* c) { c[0] = blockIdx.x; c[1] = blockIdx.y; c[2] = blockIdx.z; }
CS_DEV uint32_t cs_block_threads() { return blockDim.x * blockDim.y * blockDim.z; }
CS_DEV uint32_t cs_cta_linear() {
    return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}
CS_DEV uint32_t cs_ctarank() {
#if __CUDA_ARCH__ >= 900
    uint32_t r;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
#else
    return 0;  // no clusters before sm_90
#endif
}
#endif

#ifdef CONSAN_HOST
#define CS_NOINLINE static
#else
#define CS_NOINLINE static __device__ __noinline__
#endif

#define CS_NO_SLOT 0xFFFFFFFFu
#define CS_TOKEN_CTA_WIDE 0x80000000u  // in a barrier token: the generation was CTA-wide
#define CS_RANK_SHIFT 24u  // in a cluster launch a shared address carries the CTA's rank here

// The offset of a shared address in this CTA's window; false when it names another
// CTA of the cluster (distributed shared memory, not modelled yet).
CS_DEV bool cs_local(uint32_t a, uint32_t& off) {
    off = a & ((1u << CS_RANK_SHIFT) - 1u);
    return (a >> CS_RANK_SHIFT) == 0 || (a >> CS_RANK_SHIFT) == cs_ctarank();
}
#define S (__consan_state)

// CONSAN_PROFILE (measurements only, benchmarks/breakdown_async.py): the cycles each probe
// kind takes, summed over calls (one lane per call), in cs_prof[2 * kind] (cycles) and
// cs_prof[2 * kind + 1] (calls).
#if defined(CONSAN_PROFILE) && !defined(CONSAN_HOST)
extern "C" __device__ unsigned long long cs_prof[64];
__device__ unsigned long long cs_prof[64];
__device__ __forceinline__ long long cs_clock64() {
    long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
    return t;
}
struct cs_prof_scope {
    uint32_t k;
    long long t0;
    bool me;
    __device__ cs_prof_scope(uint32_t kind) : k(kind), t0(cs_clock64()) {
        me = cs_lane() == (uint32_t)(__ffs(__activemask()) - 1);
    }
    __device__ ~cs_prof_scope() {
        if (me) {
            atomicAdd(&cs_prof[2 * k], (unsigned long long)(cs_clock64() - t0));
            atomicAdd(&cs_prof[2 * k + 1], 1ull);
        }
    }
};
#define CS_PROF(kind) cs_prof_scope cs_prof_here(kind)
#else
#define CS_PROF(kind)
#endif

// ------------------------------------------------------------- table access

// Visibility: only warps acquire, so only warps have a vector clock (agents have none).
// With the granule tables in shared memory the CTA's clocks are there too (after them):
// every probe reads its warp's clock, and joins walk them column by column.
CS_DEV bool cs_vsh_on();
CS_DEV uint32_t* cs_vis(uint32_t slot, uint32_t t) {
    if (cs_vsh_on()) return cs_vlay_sh.vis + t * S.nlogical;
    return (uint32_t*)S.vis + ((uint64_t)slot * CS_MAX_WARPS + t) * S.nlogical;
}
CS_DEV uint32_t* cs_cta(uint32_t slot) { return (uint32_t*)S.cta + (uint64_t)slot * CS_CTA_WORDS; }
// (With the granule tables in shared memory, the barriers' words and barrier 0's clock
// slots are there too: __syncthreads is the barrier most kernels run most.)
CS_DEV uint64_t* cs_barword(uint32_t slot, uint32_t b) {
    if (cs_vsh_on()) return cs_vlay_sh.barw + b;
    return (uint64_t*)S.barword + (uint64_t)slot * CS_NAMED_BARRIERS + b;
}
CS_DEV uint32_t* cs_barvc(uint32_t slot, uint32_t b, uint32_t parity) {
    if (cs_vsh_on() && b == 0) return cs_vlay_sh.bvc0 + parity * S.nlogical;
    return (uint32_t*)S.barvc + (((uint64_t)slot * CS_NAMED_BARRIERS + b) * 2 + parity) * S.nlogical;
}
// Loads and stores of barrier words and slots, which may be in shared memory.
CS_DEV uint64_t cs_bw_ld(uint64_t* p) { return cs_vsh_on() ? *(volatile uint64_t*)p : cs_ld64(p); }
CS_DEV void cs_bw_st(uint64_t* p, uint64_t v) {
    if (cs_vsh_on()) *(volatile uint64_t*)p = v;
    else cs_st64(p, v);
}
CS_DEV uint32_t cs_bvc_ld(const uint32_t* p) {
    return cs_vsh_on() ? *(const volatile uint32_t*)p : cs_ld32(p);
}
CS_DEV void cs_bvc_st(uint32_t* p, uint32_t v) {
    if (cs_vsh_on()) *(volatile uint32_t*)p = v;
    else cs_st32(p, v);
}
CS_DEV uint64_t cs_gidx(uint32_t slot, uint32_t g) { return (uint64_t)slot * S.granules + g; }
// Buffer-table entry: [0] write epoch, [1] reader mask (loaded together on the fast path).
CS_DEV uint64_t* cs_gent(uint32_t slot, uint32_t g) { return (uint64_t*)S.granule + 2 * cs_gidx(slot, g); }
CS_DEV uint64_t* cs_rslot(uint32_t slot, uint32_t w, uint32_t g) {
    return (uint64_t*)S.rslot + ((uint64_t)slot * S.nwarps + w) * S.granules + g;
}

// ------------------------------------------------------------- violation log

CS_NOINLINE void cs_record(const cs_record_t& r) {
    cs_log_header_t* h = (cs_log_header_t*)S.log;
    cs_key_t* keys = (cs_key_t*)S.keys;
    cs_gadd32(&h->occurrences, 1);
    uint64_t key = ((uint64_t)r.kind << CS_KEY_KIND_SHIFT) |
                   ((uint64_t)(r.site & CS_KEY_SITE_MASK) << CS_KEY_SITE_BITS) |
                   (uint64_t)(r.prev_site & CS_KEY_SITE_MASK);
    uint32_t hsh = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) % CS_KEY_TABLE_ENTRIES;
    cs_key_t* k = 0;
    for (uint32_t i = 0; i < 64; ++i) {
        cs_key_t* e = &keys[(hsh + i) % CS_KEY_TABLE_ENTRIES];
        uint64_t cur = cs_gld64(&e->key);
        if (cur == 0) cur = cs_gcas64(&e->key, 0, key);
        if (cur == 0 || cur == key) { k = e; break; }
    }
    if (k == 0) {
        cs_gadd32(&h->key_overflow, 1);
    } else if (cs_gadd32(&k->count, 1) >= CS_RECORDS_PER_KEY) {
        cs_gadd32(&h->dropped, 1);
        return;
    }
    uint32_t idx = cs_gadd32(&h->stored, 1);
    if (idx >= S.log_capacity) {
        cs_gadd32(&h->dropped, 1);
        return;
    }
    if (k) cs_gadd32(&k->stored, 1);
    // Fields first, kind last: a record is valid once its kind is non-zero,
    // so a log read after a crash never shows a half-written record.
    cs_record_t* out = (cs_record_t*)S.records + idx;
    cs_record_t tmp = r;
    uint32_t kind = tmp.kind;
    tmp.kind = 0;
    const uint32_t* src = (const uint32_t*)&tmp;
    uint32_t* dst = (uint32_t*)out;
    for (uint32_t i = 1; i < sizeof(cs_record_t) / 4; ++i) cs_sst32(dst + i, src[i]);
    cs_fence_sys();
    cs_sst32(dst, kind);
    cs_fence_sys();
}

CS_DEV cs_record_t cs_blank(uint32_t kind, uint32_t site) {
    cs_record_t r = {};
    r.kind = kind;
    r.site = site;
    r.prev_site = CS_NO_SITE;
    r.warp = cs_warp();
    r.prev_warp = CS_NO_WARP;
    r.lanes = cs_activemask();
    uint32_t c[3];
    cs_cta_id(c);
    r.cta_x = c[0]; r.cta_y = c[1]; r.cta_z = c[2];
    return r;
}

// ------------------------------------------------------------- CTA life

CS_DEV bool cs_vsh_on();
CS_DEV void cs_vsh_layout(uint32_t slot);
// A block word of the granule tables in shared memory (FLAG_VC_SMEM), see there.
#define CS_BT_WHOLE 0x80000000u  // (the mbarrier bit of an epoch: a copy never has it)
#define CS_BT_LOCKED 0xFFFFFFFFu  // (the atomic bit set: never a copy's epoch)

CS_DEV uint32_t cs_claim_slot() {
    uint32_t n = S.nslots;
    uint32_t start = cs_cta_linear() % n;
    uint32_t* busy = (uint32_t*)S.slot_busy;
    for (uint32_t pass = 0; pass < 1000000u; ++pass) {
        for (uint32_t i = 0; i < n; ++i) {
            uint32_t s = (start + i) % n;
            if (cs_gcas32(&busy[s], 0, 1) == 0) return s;
        }
    }
    return CS_NO_SLOT;
}

// Run by one thread: claim a slot, start a new generation, reset the small tables.
CS_DEV void cs_begin_leader(uint32_t nthreads) {
    uint32_t slot = cs_claim_slot();
    cs_gadd32(&((cs_log_header_t*)S.log)->ctas_begun, 1);
    if (slot == CS_NO_SLOT) {
        cs_record(cs_blank(CS_TOOL_NO_SLOT, CS_NO_SITE));
        cs_slot_sh = CS_NO_SLOT;
        return;
    }
    // The previous owner may have run on another SM: go through L2, not this SM's L1.
    uint32_t gen = (cs_gadd32(&((uint32_t*)S.slot_gen)[slot], 1u) + 1u) & 0xFFFFu;
    if (gen == 0) gen = (cs_gadd32(&((uint32_t*)S.slot_gen)[slot], 1u) + 1u) & 0xFFFFu;
    uint32_t* cta = cs_cta(slot);
    uint32_t nw = (nthreads + 31) / 32;
    cs_livew_sh = nw;
#ifdef CONSAN_HOST
    cta[CS_CTA_LIVE_THREADS] = nw;  // the host drives one lane per warp
#else
    cta[CS_CTA_LIVE_THREADS] = nthreads;
#endif
    cs_mbar_used_sh = 0;
    cs_mbar_arc_sh = 0;
    for (uint32_t j = 0; j < CS_MBARRIERS; ++j) cs_mlock_sh[j] = cs_mkey_sh[j] = cs_mlive_sh[j] = 0;
    for (uint32_t i = 0; i < CS_TMAP_CACHE; ++i) cs_shv.tmap_at[i] = 0;
    cs_shv.tmap_claimed = 0;
    if (cs_vsh_on()) cs_vsh_layout(slot);  // (its barrier words are cleared with the tables)
    else for (uint32_t b = 0; b < CS_NAMED_BARRIERS; ++b) *cs_barword(slot, b) = 0;
    cs_slot_sh = slot;
    cs_gen_sh = gen;
}

CS_DEV uint32_t* cs_readbits(uint32_t slot, uint32_t w, uint32_t parity);
CS_DEV bool cs_phase_mode();
CS_DEV void cs_phase_clear_next(uint32_t slot, uint32_t w, uint32_t active, uint32_t lane);
CS_DEV bool cs_bsum_on();
CS_DEV uint32_t cs_bsum_blocks();
CS_DEV uint32_t* cs_bsum(uint32_t slot, uint32_t b);
CS_DEV uint8_t* cs_psh();

// Words [a, b) of p set to v by threads i of n: 16-byte stores between the aligned ends
// (a CTA's start clears its tables in shared memory: every thread of it waits for this).
CS_DEV void cs_fill_words(uint32_t* p, uint32_t a, uint32_t b, uint32_t v, uint32_t i,
                          uint32_t n) {
#ifdef CONSAN_HOST
    for (uint32_t k = a + i; k < b; k += n) p[k] = v;
#else
    uint32_t a4 = a + ((0u - (uint32_t)((unsigned long long)(p + a) >> 2)) & 3u);
    a4 = a4 < b ? a4 : b;
    uint32_t b4 = a4 + ((b - a4) & ~3u);
    for (uint32_t k = a + i; k < a4; k += n) p[k] = v;
    for (uint32_t k = b4 + i; k < b; k += n) p[k] = v;
    uint4* q = (uint4*)(p + a4);
    const uint4 vv = make_uint4(v, v, v, v);
    for (uint32_t k = i; k < (b4 - a4) / 4; k += n) q[k] = vv;
#endif
}

// Run by every thread (i = thread index, n = threads of the block, nthreads of them live:
// the host drives one lane per warp): the CTA's per-warp words, clocks, barrier slots,
// bitmaps.
CS_DEV void cs_begin_clear(uint32_t slot, uint32_t i, uint32_t n, uint32_t nthreads) {
    uint32_t L = S.nlogical;
    uint32_t* cta = cs_cta(slot);
    for (uint32_t w = i; w < CS_MAX_WARPS; w += n) {
        cta[CS_CTA_CPASYNC_COMMITS + w] = 0;
        cs_cpticks_sh[w] = 0;
        cta[CS_CTA_SPIN_PHASE + w] = 0;
        cs_commits_sh(CS_UNIT_BULK, w) = 0;
        cs_commits_sh(CS_UNIT_WGMMA, w) = 0;
        cta[CS_CTA_PROXY_FENCE + w] = 0;
#ifdef CONSAN_HOST
        cs_lanes_sh[w] = w < (nthreads + 31) / 32 ? 1u : 0u;
#else
        uint32_t lanes = nthreads > w * 32 ? nthreads - w * 32 : 0;
        cs_lanes_sh[w] = lanes >= 32 ? 0xFFFFFFFFu : (1u << lanes) - 1u;
#endif
        cs_clock_sh[w] = 1, cs_phase_sh[w] = 1;
    }
    if (!cs_vsh_on()) {
        uint32_t* vis = cs_vis(slot, 0);
        for (uint32_t k = i; k < CS_MAX_WARPS * L; k += n) vis[k] = (k / L == k % L) ? 1u : 0u;
    }
    uint32_t* bvc = (uint32_t*)S.barvc + (uint64_t)slot * CS_NAMED_BARRIERS * 2 * L;
    for (uint32_t k = i; k < CS_NAMED_BARRIERS * 2 * L; k += n) bvc[k] = 0;
    if (cs_vsh_on()) {  // the CTA's own shared memory: cleared, no generation tags
        // Every block starts held whole with the epoch 0 (never written): the first copy
        // into a block then takes one word, not a look at 32 epochs (cs_vsh_copy_run).
        // The warps' clocks start with each warp's own column at 1.
        uint32_t* p = (uint32_t*)cs_psh();
        uint32_t bt0 = (uint32_t)(cs_vlay_sh.BT - cs_vlay_sh.W) / 4, bt1 = bt0 + cs_vlay_sh.nb;
        uint32_t v0 = (uint32_t)(cs_vlay_sh.vis - p), v1 = v0 + S.nwarps * L;
        cs_fill_words(p, 0, bt0, 0u, i, n);
        cs_fill_words(p, bt0, bt1, CS_BT_WHOLE, i, n);
        cs_fill_words(p, bt1, v0, 0u, i, n);
        for (uint32_t k = v0 + i; k < v1; k += n) p[k] = (k - v0) % (L + 1) == 0 ? 1u : 0u;
        cs_fill_words(p, v1, S.psh_bytes / 4, 0u, i, n);
    }
    if (cs_bsum_on()) {
        uint32_t* bs = cs_bsum(slot, 0);
        for (uint32_t k = i; k < cs_bsum_blocks() * S.bsum_words; k += n) bs[k] = 0;
    }
    if (cs_phase_mode()) {
        uint32_t* bm = cs_readbits(slot, 0, 0);
        uint32_t words = 2 * S.nwarps * ((S.granules + 31) / 32);
        for (uint32_t k = i; k < words; k += n) bm[k] = 0;
    }
}

CS_DEV uint32_t cs_nwg();
// The columns of a vector clock that can be non-zero in this CTA, as ranges [a, b): its
// warps, their cp.async units, the mbarriers' copy engines, then (where the module has
// them) the bulk-store units, the proxy views and the wgmma units (an empty range where the
// module has none). Loops over them visit only these columns, not all nlogical (up to
// 168); they unroll over the ranges so the bounds stay in registers.
#define CS_VC_RANGES 7
struct cs_cols { uint32_t a[CS_VC_RANGES], b[CS_VC_RANGES]; };

// The shortest circular run of entry indices that covers the set bits of `used` (entries
// are hashed by offset, so a CTA's few mbarriers usually take a short run, which may wrap
// past the last index): its start | length << 8. Computed again only when the mask changes.
CS_DEV uint32_t cs_mbar_arc(uint32_t used) {
    if (used == 0 || used == 0xFFFFFFFFu) return used ? 32u << 8 : 0u;
    uint32_t gap = 0, start = 0;  // the longest run of clear bits, and the set bit after it
    for (uint32_t i = 0; i < 32; ++i) {
        if (!((used >> i) & 1u)) continue;
        uint32_t r = 1;
        while (!((used >> ((i + 32 - r) % 32)) & 1u)) ++r;
        if (r - 1 > gap) gap = r - 1, start = i;
    }
    return start | (32 - gap) << 8;
}
CS_DEV uint32_t cs_mbar_arc_now(uint32_t used) {
    uint64_t c = *(volatile uint64_t*)&cs_mbar_arc_sh;
    if ((uint32_t)c == used) return (uint32_t)(c >> 32);
    uint32_t arc = cs_mbar_arc(used);
    *(volatile uint64_t*)&cs_mbar_arc_sh = (uint64_t)arc << 32 | used;
    return arc;
}

CS_DEV cs_cols cs_vc_cols(bool all) {
    uint32_t nw = S.nwarps, L = S.nlogical;
    // the copy engines of the mbarrier entries in use (an arc of the table, maybe wrapping:
    // two ranges); the other engines' columns are 0 in every clock (cleared at CTA begin
    // and at init: `all`) until their entry is made
    uint32_t arc = all ? 32u << 8 : cs_mbar_arc_now(*(volatile uint32_t*)&cs_mbar_used_sh);
    uint32_t e0 = arc & 0xFFu, e1 = e0 + (arc >> 8), e2 = e1 > 32 ? e1 - 32 : 0;
    e1 = e1 > 32 ? 32 : e1;
    // and only the agents the module has (cp.async units, bulk-store units and proxy views)
    uint32_t ncp = (S.flags & CS_FLAG_CP_ASYNC) ? nw : 0u, nbulk = (S.flags & CS_FLAG_BULK_STORES) ? nw : 0u;
    const uint32_t base[CS_VC_RANGES] = {0, CS_AGENT_CPASYNC, CS_AGENT_MBAR + e0, CS_AGENT_MBAR,
                                         CS_AGENT_BULK, CS_AGENT_PROXY, CS_AGENT_WGMMA};
    const uint32_t width[CS_VC_RANGES] = {nw, ncp, e1 - e0, e2, nbulk, nbulk, cs_nwg()};
    cs_cols c;
#pragma unroll
    for (uint32_t k = 0; k < CS_VC_RANGES; ++k) {
        c.a[k] = base[k] < L ? base[k] : L;
        c.b[k] = base[k] + width[k] < L ? base[k] + width[k] : L;
    }
    return c;
}

// ------------------------------------------------------------- barriers

// Word of a named barrier: gen:32 | count_warps:16 (0 = all) | arrived:16.
#define CS_BW_ARRIVED(w) ((uint32_t)((w) & 0xFFFFu))
#define CS_BW_COUNT(w) ((uint32_t)(((w) >> 16) & 0xFFFFu))
#define CS_BW_GEN(w) ((uint32_t)((w) >> 32))
#define CS_BW_COMPLETING 0xFFFFu

// Close generation `gen` of barrier b (caller won the right to): clear the
// clock slot the next generation will use, then open it.
CS_DEV void cs_bar_complete(uint32_t slot, uint32_t b, uint32_t gen) {
    uint32_t* next = cs_barvc(slot, b, (gen + 1) & 1);
    cs_cols c = cs_vc_cols(false);
#pragma unroll
    for (uint32_t k = 0; k < CS_VC_RANGES; ++k)
        for (uint32_t u = c.a[k]; u < c.b[k]; ++u) cs_bvc_st(&next[u], 0);
    cs_fence();
    cs_bw_st(cs_barword(slot, b), (uint64_t)(gen + 1) << 32);
    cs_fence();
}

// Try to close the current generation if `expected` warps have arrived.
CS_DEV void cs_bar_try_complete(uint32_t slot, uint32_t b, uint64_t seen, uint32_t expected) {
    if (CS_BW_ARRIVED(seen) == 0 || CS_BW_ARRIVED(seen) == CS_BW_COMPLETING) return;
    if (CS_BW_ARRIVED(seen) < expected) return;
    uint64_t claim = (seen & ~0xFFFFull) | CS_BW_COMPLETING;
    if (cs_cas64(cs_barword(slot, b), seen, claim) == seen)
        cs_bar_complete(slot, b, CS_BW_GEN(seen));
}

// Barrier 0 with FLAG_BAR0_ROWS (the module syncs every thread on it, and on nothing
// else): no count to keep, no slot to join into and clear -- each warp copies its clock
// to its row of the generation's parity; after the barrier each reads every row. The
// generation is the warp's count of CTA-wide barriers passed (every warp passes each).
// A row is written again two generations later, after every warp has read it (it passed
// the barrier in between); a warp that has exited leaves an older clock, which adds
// nothing.
CS_DEV bool cs_bar0_rows(uint32_t b) { return (S.flags & CS_FLAG_BAR0_ROWS) && (b & 15u) == 0; }
CS_DEV uint32_t* cs_bar0_row(uint32_t gen, uint32_t w) {
    return cs_vlay_sh.rows + ((gen & 1u) * S.nwarps + w) * S.nlogical;
}
CS_DEV uint32_t cs_bar0_arrive(uint32_t active, uint32_t w, uint32_t lane, uint32_t leader) {
    uint32_t gen = *(volatile uint32_t*)&cs_phase_sh[w];
    uint32_t* mine = cs_vis(cs_slot_sh, w);
    uint32_t* row = cs_bar0_row(gen, w);
    uint32_t rank = cs_popc(active & ((1u << lane) - 1u)), n = cs_popc(active);
    cs_cols c = cs_vc_cols(false);
#pragma unroll
    for (uint32_t k = 0; k < CS_VC_RANGES; ++k)
        for (uint32_t u = c.a[k] + rank; u < c.b[k]; u += n) row[u] = mine[u];
    cs_fence();
    cs_syncwarp(active);
    if (lane == leader) {
        mine[w] = mine[w] + 1;  // accesses after the release are not covered by it
        cs_clock_sh[w] = mine[w];
    }
    cs_syncwarp(active);
    return gen | CS_TOKEN_CTA_WIDE;
}
CS_DEV void cs_bar0_wait(uint32_t gen, uint32_t active, uint32_t w, uint32_t lane) {
    uint32_t* mine = cs_vis(cs_slot_sh, w);
    const uint32_t* rows = cs_bar0_row(gen, 0);
    const uint32_t nw = S.nwarps, L = S.nlogical;
    uint32_t rank = cs_popc(active & ((1u << lane) - 1u)), n = cs_popc(active);
    cs_cols c = cs_vc_cols(false);
#pragma unroll
    for (uint32_t k = 0; k < CS_VC_RANGES; ++k) {
        for (uint32_t u = c.a[k] + rank; u < c.b[k]; u += n) {
            uint32_t v = 0;
#pragma unroll 4
            for (uint32_t q = 0; q < nw; ++q) {  // (four rows' loads in flight)
                uint32_t x = rows[q * L + u];
                v = x > v ? x : v;
            }
            if (v > mine[u] && u != w) mine[u] = v;
        }
    }
    cs_fence();
    if (lane == (uint32_t)(cs_ffs(active) - 1)) cs_phase_sh[w] += 1;
    cs_syncwarp(active);
}

// Release: count this warp's arrival and join its clock into the generation's slot.
CS_DEV uint32_t cs_bar_arrive(uint32_t b, uint32_t count, uint32_t site, uint32_t mode) {
    uint32_t slot = cs_slot_sh;
    uint32_t active = cs_group(((uint64_t)site << 32) | count, b);
    if (mode & CS_BAR_ALIGNED) {
        // An aligned barrier is one arrival of the whole warp: lanes still finishing a
        // divergent branch must reach it before the warp's clock is published.
        active = *(volatile uint32_t*)&cs_lanes_sh[cs_warp()];
        cs_syncwarp(active);
    }
    uint32_t lane = cs_lane();
    uint32_t leader = cs_ffs(active) - 1;
    uint32_t w = cs_warp();
    if (cs_bar0_rows(b) && !cs_phase_mode()) return cs_bar0_arrive(active, w, lane, leader);
    b &= 15u;
    uint32_t cw = count / 32;  // thread count -> warps (0 = every live warp)
    uint64_t old = 0;
    if (lane == leader) {
        old = cs_add64(cs_barword(slot, b), 1ull);
        if (CS_BW_ARRIVED(old) == 0 && cw) cs_or64(cs_barword(slot, b), (uint64_t)cw << 16);
    }
    uint32_t gen = cs_bcast(active, CS_BW_GEN(old), leader);
    uint32_t* vc = cs_barvc(slot, b, gen & 1);
    uint32_t* mine = cs_vis(slot, w);
    uint32_t rank = cs_popc(active & ((1u << lane) - 1u));
    uint32_t n = cs_popc(active);
    if (cs_phase_mode()) {
        cs_phase_clear_next(slot, w, active, lane);
    } else {
        cs_cols c = cs_vc_cols(false);
#pragma unroll
        for (uint32_t k = 0; k < CS_VC_RANGES; ++k) {
            for (uint32_t u = c.a[k] + rank; u < c.b[k]; u += n) {
                uint32_t v = mine[u];
                if (v) cs_max32(&vc[u], v);
            }
        }
    }
    cs_fence();
    cs_syncwarp(active);
    if (lane == leader) {
        mine[w] = mine[w] + 1;  // accesses after the release are not covered by it
        cs_clock_sh[w] = mine[w];
        uint32_t arrived = CS_BW_ARRIVED(old) + 1;
        uint32_t expected = cw ? cw : *(volatile uint32_t*)&cs_livew_sh;
        if (arrived >= expected)
            cs_bar_try_complete(slot, b, cs_bw_ld(cs_barword(slot, b)), expected);
    }
    cs_syncwarp(active);
    (void)site;
    return gen | (cw == 0 ? CS_TOKEN_CTA_WIDE : 0u);  // bit 31: every live warp takes part
}

// Acquire: join the generation's slot into this warp's clock.
CS_DEV void cs_bar_wait(uint32_t gen, uint32_t b, uint32_t site) {
    uint32_t slot = cs_slot_sh;
    uint32_t active = cs_group(((uint64_t)site << 32) | gen, b);
    uint32_t lane = cs_lane();
    uint32_t w = cs_warp();
    if (cs_bar0_rows(b) && !cs_phase_mode()) return cs_bar0_wait(gen, active, w, lane);
    b &= 15u;
    const uint32_t* vc = cs_barvc(slot, b, gen & 1);
    uint32_t* mine = cs_vis(slot, w);
    uint32_t rank = cs_popc(active & ((1u << lane) - 1u));
    uint32_t n = cs_popc(active);
    cs_cols c = cs_vc_cols(false);
    uint32_t nr = cs_phase_mode() ? 0 : CS_VC_RANGES;
#pragma unroll
    for (uint32_t k = 0; k < CS_VC_RANGES; ++k) {
        for (uint32_t u = c.a[k] + rank; k < nr && u < c.b[k]; u += n) {
            uint32_t v = cs_bvc_ld(&vc[u]);
            if (v > mine[u] && u != w) mine[u] = v;
        }
    }
    cs_fence();
    if ((gen & CS_TOKEN_CTA_WIDE) && lane == (uint32_t)(cs_ffs(active) - 1)) cs_phase_sh[w] += 1;
    cs_syncwarp(active);
    (void)site;
}

// ------------------------------------------------------------- accesses

struct cs_finding { uint32_t kind, prev_site, prev_warp; };

// One record per distinct finding among the lanes of `active` (every one of them calls
// this): lanes that agree merge their byte ranges [lo, hi). True in the lane that records,
// with `r` filled but for the fields its event adds; the caller then calls cs_record.
CS_DEV bool cs_merged_record(uint32_t active, const cs_finding& f, uint32_t site, uint32_t lo,
                             uint32_t hi, cs_record_t& r) {
    uint64_t key = ((uint64_t)f.kind << 48) | ((uint64_t)f.prev_warp << 32) | f.prev_site;
    uint32_t same = cs_match(active, key);
    lo = cs_min(same, lo);
    hi = cs_max(same, hi);
    if (!f.kind || cs_lane() != (uint32_t)(cs_ffs(same) - 1)) return false;
    r = cs_blank(f.kind, site);
    r.prev_site = f.prev_site;
    r.prev_warp = f.prev_warp;
    r.lanes = same;
    r.offset_lo = lo;
    r.offset_hi = hi;
    r.clock = cs_clock_sh[cs_warp()];
    return true;
}

CS_DEV bool cs_ordered(const uint32_t* mine, uint32_t w, uint32_t t, uint32_t clock) {
    return t == w || mine[t] >= clock;
}
// A write over writer `by`'s own earlier write needs no judgment, but for a warp's
// cp.async unit: its copies are not ordered among themselves until the issuing warp waits
// for them, so a cp.async over the bytes of an earlier cp.async of the same warp still in
// flight is judged like any other write (async.pending-write). (A copy engine's box over
// its own earlier box is not judged: its boxes complete in phase order on one mbarrier.)
CS_DEV bool cs_own_write(uint32_t t, uint32_t by) {
    return t == by && (by < CS_AGENT_CPASYNC || by >= CS_AGENT_CPASYNC + CS_MAX_WARPS);
}

// Reader word of a granule: gen:16 | phase:16 | mask:32. `phase` is the latest
// CTA phase (count of CTA-wide barriers passed) at which a recorded read
// happened: a writer that has passed a later CTA-wide barrier is ordered
// after every recorded read without looking at them one by one.
#define CS_RM_PHASE(m) ((uint32_t)((m) >> 32) & 0xFFFFu)

CS_DEV bool cs_phase_after(uint32_t mine, uint32_t theirs) {  // 16-bit serial numbers
    uint32_t d = (mine - theirs) & 0xFFFFu;
    return d != 0 && d < 0x8000u;
}

// What one warp's probe needs of its CTA's tables, with the pointer arithmetic done once.
struct cs_view {
    uint64_t* ent;        // buffer-table entries of the slot: [g][2]
    uint64_t* rslots;     // read slots of the slot: [warp][g]
    uint64_t* mine_rs;    // this warp's read slots: [g]
    uint32_t* wsite;      // [g]
    const uint32_t* mine; // this warp's vector clock
    uint32_t granules, gen, w, clock, phase;
};

CS_DEV cs_view cs_make_view(uint32_t slot, uint32_t w) {
    cs_view v;
    uint64_t base = (uint64_t)slot * S.granules;
    v.granules = S.granules;
    v.ent = (uint64_t*)S.granule + 2 * base;
    v.rslots = (uint64_t*)S.rslot + base * S.nwarps;
    v.mine_rs = v.rslots + (uint64_t)w * v.granules;
    v.wsite = (uint32_t*)S.wsite + base;
    v.mine = cs_vis(slot, w);
    v.gen = cs_gen_sh;
    v.w = w;
    v.clock = cs_clock_sh[w];
    v.phase = cs_phase_sh[w];
    return v;
}

// ------------------------------------------------------------- box summaries
//
// FLAG_BOX_SUMMARY (modules whose copy engines write smem; docs/model.md "Box
// summaries"): per block of 2^bsum_shift granules, the latest clock of each writer
// and of each reader -- warps' reads, bulk-store and wgmma units' async reads -- with
// the reader's site. A copy over a block whose summary shows every access ordered
// before the issuing warp would find nothing in a walk: it stores its epochs and empty
// reader sets (what the walk leaves behind), so one lane pays a few vector loads and a
// store per granule, not round trips per granule.

CS_DEV uint32_t cs_nwg();
CS_DEV bool cs_bsum_on() { return (S.flags & CS_FLAG_BOX_SUMMARY) && !cs_phase_mode(); }
CS_DEV uint32_t cs_bsum_blocks() { return (S.granules + (1u << S.bsum_shift) - 1) >> S.bsum_shift; }
CS_DEV uint32_t* cs_bsum(uint32_t slot, uint32_t b) {
    return (uint32_t*)S.bsum + ((uint64_t)slot * cs_bsum_blocks() + b) * S.bsum_words;
}
CS_DEV uint32_t cs_bsum_nreaders() { return 2 * S.nwarps + cs_nwg(); }
// Reader index r: warp r, the bulk-store unit of warp r - nwarps, the wgmma unit r - 2 nwarps.
CS_DEV uint32_t cs_bsum_reader_tid(uint32_t r) {
    uint32_t nw = S.nwarps;
    return r < nw ? r : r < 2 * nw ? CS_AGENT_BULK + r - nw : CS_AGENT_WGMMA + r - 2 * nw;
}
CS_DEV uint32_t* cs_bsum_rclock(uint32_t* s, uint32_t r) { return s + CS_BS_READERS + r; }
CS_DEV uint32_t* cs_bsum_rsite(uint32_t* s, uint32_t r) {  // after the clocks: half the rest
    return s + CS_BS_READERS + (S.bsum_words - CS_BS_READERS) / 2 + r;
}

// Reads of granules [g0, g1] by reader index r at clock c (published before the reader's
// fence, like its reader-mask bit).
CS_DEV void cs_bsum_read(uint32_t slot, uint32_t g0, uint32_t g1, uint32_t r, uint32_t c,
                         uint32_t site) {
    for (uint32_t b = g0 >> S.bsum_shift; b <= g1 >> S.bsum_shift; ++b) {
        uint32_t* s = cs_bsum(slot, b);
        if (cs_ld32(cs_bsum_rclock(s, r)) < c) {
            cs_max32(cs_bsum_rclock(s, r), c);
            cs_st32(cs_bsum_rsite(s, r), site);
        }
    }
}

// Writes of granules [g0, g1] by logical thread t at clock c (noted before the epochs).
CS_DEV void cs_bsum_write(uint32_t slot, uint32_t g0, uint32_t g1, uint32_t t, uint32_t c) {
    uint64_t key = (1ull << 40) | ((uint64_t)t << 32);
    for (uint32_t b = g0 >> S.bsum_shift; b <= g1 >> S.bsum_shift; ++b) {
        uint32_t* s = cs_bsum(slot, b);
        uint64_t* wr = (uint64_t*)(s + CS_BS_WRITERS);
        uint32_t i = 0;
        for (; i < CS_BSUM_WRITERS; ++i) {  // entries are claimed in order: no holes
            uint64_t e = cs_ld64(&wr[i]);
            if (e == 0 && (e = cs_cas64(&wr[i], 0, key | c)) == 0) break;
            if ((e >> 32) == (key >> 32)) {
                if ((uint32_t)e < c) cs_max64(&wr[i], key | c);
                break;
            }
        }
        if (i == CS_BSUM_WRITERS) cs_or32(&s[CS_BS_FLAGS], CS_BS_FLAG_OVERFLOW);
    }
}

CS_DEV void cs_bsum_flag(uint32_t slot, uint32_t g0, uint32_t g1, uint32_t flag) {
    for (uint32_t b = g0 >> S.bsum_shift; b <= g1 >> S.bsum_shift; ++b)
        cs_or32(&cs_bsum(slot, b)[CS_BS_FLAGS], flag);
}

// The issuing warp's clock of each reader index (all ones for its own reads: program
// order, and for units the module's clocks do not cover: they never read), taken once
// per copy. Up to CS_BSUM_FASTR readers in registers.
#define CS_BSUM_FASTR 16
struct cs_bsum_vc {
    uint32_t c[CS_BSUM_FASTR];
    uint32_t n;
};
CS_DEV void cs_bsum_vc_init(const cs_view& v, cs_bsum_vc& q) {
    q.n = cs_bsum_nreaders();
#pragma unroll
    for (uint32_t r = 0; r < CS_BSUM_FASTR; ++r) {
        uint32_t t = cs_bsum_reader_tid(r);
        q.c[r] = r < q.n && t != v.w && t < S.nlogical ? v.mine[t] : 0xFFFFFFFFu;
    }
}

// One block's summary as a copy looks at it: loaded in a few vector loads, judged after.
struct cs_bsum_blk {
    cs_u4 rc[CS_BSUM_FASTR / 4], h, w01, w23;
};
CS_DEV void cs_bsum_load(uint32_t* s, const cs_bsum_vc& q, bool writers, cs_bsum_blk& x) {
#pragma unroll
    for (uint32_t k = 0; k < CS_BSUM_FASTR / 4; ++k)
        x.rc[k] = 4 * k < q.n && q.n <= CS_BSUM_FASTR ? cs_ld128(cs_bsum_rclock(s, 4 * k))
                                                      : cs_u4{0, 0, 0, 0};
    if (writers) {
        x.h = cs_ld128(s);
        x.w01 = cs_ld128(s + CS_BS_WRITERS);
        x.w23 = cs_ld128(s + CS_BS_WRITERS + 4);
    }
}

// Is every read summary s saw ordered before a copy issued by warp v.w?
CS_DEV bool cs_bsum_readers_ordered(const cs_view& v, uint32_t* s, const cs_bsum_vc& q,
                                    const cs_bsum_blk& x) {
    bool clear = true;
    if (q.n > CS_BSUM_FASTR) {  // many warps: one reader at a time
        for (uint32_t r = 0; r < q.n; ++r) {
            uint32_t t = cs_bsum_reader_tid(r), c = cs_ld32(cs_bsum_rclock(s, r));
            if (c && !cs_ordered(v.mine, v.w, t, c)) clear = false;
        }
        return clear;
    }
#pragma unroll
    for (uint32_t k = 0; k < CS_BSUM_FASTR / 4; ++k)
        clear = clear && x.rc[k].x <= q.c[4 * k] && x.rc[k].y <= q.c[4 * k + 1] &&
                x.rc[k].z <= q.c[4 * k + 2] && x.rc[k].w <= q.c[4 * k + 3];
    return clear;
}

// ...and every write, but those of `by` itself, with no flag set? by_i, by_c: the writer
// entry of `by` (CS_BSUM_WRITERS: none) and its clock.
CS_DEV bool cs_bsum_writers_ordered(const cs_view& v, uint32_t by, const cs_bsum_blk& x,
                                    uint32_t& by_i, uint32_t& by_c) {
    uint64_t wr[CS_BSUM_WRITERS] = {((uint64_t)x.w01.y << 32) | x.w01.x,
                                    ((uint64_t)x.w01.w << 32) | x.w01.z,
                                    ((uint64_t)x.w23.y << 32) | x.w23.x,
                                    ((uint64_t)x.w23.w << 32) | x.w23.z};
    bool clear = x.h.x == 0;
    by_i = CS_BSUM_WRITERS;
    by_c = 0;
#pragma unroll
    for (uint32_t i = 0; i < CS_BSUM_WRITERS; ++i) {
        uint32_t t = (uint32_t)(wr[i] >> 32) & 0xFFu;
        if (wr[i] && t == by) by_i = i, by_c = (uint32_t)wr[i];
        else if (wr[i] && !cs_ordered(v.mine, v.w, t, (uint32_t)wr[i])) clear = false;
    }
    return clear;
}

// After the stores: the first reader of summary s not ordered before the copy.
CS_DEV cs_finding cs_bsum_late_reader(const cs_view& v, uint32_t* s) {
    for (uint32_t r = 0; r < cs_bsum_nreaders(); ++r) {
        uint32_t t = cs_bsum_reader_tid(r), c = cs_ld32(cs_bsum_rclock(s, r));
        if (c && !cs_ordered(v.mine, v.w, t, c))
            return {t < CS_MAX_WARPS ? CS_RACE_WAR : CS_ASYNC_PENDING_READ,
                    cs_ld32(cs_bsum_rsite(s, r)), t};
    }
    return {0, CS_NO_SITE, CS_NO_WARP};
}

// Publish this warp's read of granule g (the writer side looks for it after its store).
CS_DEV void cs_record_read(const cs_view& v, uint32_t g, uint32_t site) {
    uint64_t* rm = v.ent + 2 * g + 1;
    uint64_t* rs = v.mine_rs + g;
    uint64_t m = cs_ld64(rm);
    uint64_t bit = 1ull << v.w;
    uint64_t head = ((uint64_t)v.gen << CS_RM_GEN_SHIFT) | ((uint64_t)v.phase << 32);
    if ((m & ~0xFFFFFFFFull) == head && (m & bit) && (uint32_t)cs_ld64(rs) == v.clock) return;
    cs_st64(rs, ((uint64_t)site << 32) | v.clock);
    for (int tries = 0; tries < 64; ++tries) {
        // Readers of an earlier CTA phase are ordered before every warp that can write
        // now (all live warps passed a CTA-wide barrier since): start a new reader set.
        if ((m & ~0xFFFFFFFFull) == head || ((m >> CS_RM_GEN_SHIFT) == v.gen &&
                                             !cs_phase_after(v.phase, CS_RM_PHASE(m)))) {
            if (!(m & bit)) cs_or64(rm, bit);
            return;
        }
        uint64_t seen = cs_cas64(rm, m, head | bit);
        if (seen == m) return;
        m = seen;
    }
}

// After the reads are published: is the last write of granule g ordered before them?
CS_DEV void cs_check_raw(const cs_view& v, uint32_t g, cs_finding& f) {
    uint64_t ww = cs_ld64(v.ent + 2 * g);
    if ((ww >> CS_WW_GEN_SHIFT) != v.gen) {
        if (!f.kind) f = {CS_UNINIT_READ, CS_NO_SITE, CS_NO_WARP};
        return;
    }
    uint32_t t = (uint32_t)(ww >> CS_WW_TID_SHIFT) & 0xFFu;
    if (((ww >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_MBAR) && !f.kind) {
        f = {CS_MBARRIER_DATA_ACCESS, cs_ld32(v.wsite + g), t};
        return;
    }
    if (!cs_ordered(v.mine, v.w, t, (uint32_t)ww) && !f.kind)
        f = {t >= CS_AGENT_CPASYNC ? CS_ASYNC_PENDING_WRITE : CS_RACE_RAW, cs_ld32(v.wsite + g), t};
}

CS_DEV void cs_check_prev_write(uint64_t old, uint32_t old_site, uint32_t gen, uint32_t w,
                                bool atomic, const uint32_t* mine, cs_finding& f) {
    if ((old >> CS_WW_GEN_SHIFT) != gen) {
        if (atomic && !f.kind) f = {CS_UNINIT_READ, CS_NO_SITE, CS_NO_WARP};
        return;
    }
    uint32_t t = (uint32_t)(old >> CS_WW_TID_SHIFT) & 0xFFu;
    bool both_atomic = atomic && ((old >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_ATOMIC);
    if (!both_atomic && !cs_ordered(mine, w, t, (uint32_t)old) && !f.kind)
        f = {t >= CS_AGENT_CPASYNC ? CS_ASYNC_PENDING_WRITE : CS_RACE_WAW, old_site, t};
}

// Readers this writer must check one by one: those recorded in its own CTA phase.
CS_DEV uint64_t cs_same_phase_readers(uint64_t m, uint32_t gen, uint32_t phase) {
    if ((m >> CS_RM_GEN_SHIFT) != gen || cs_phase_after(phase, CS_RM_PHASE(m))) return 0;
    return m & 0xFFFFFFFFull;
}

CS_DEV bool cs_async_proxy();  // bulk stores and proxy fences: their section, below
CS_DEV void cs_check_async_read(const cs_view& v, uint32_t g, cs_finding& f);
CS_DEV bool cs_wgmma_module();  // wgmma section below
CS_DEV void cs_wg_check_reads(const cs_view& v, uint32_t g, cs_finding& f);

// A write of granule g by this warp -- or, for cp.async, by its copy unit `by` at the
// unit's clock `clk` (the group it belongs to); ordering is judged from the warp's clock.
CS_DEV void cs_check_write(const cs_view& v, uint32_t g, uint32_t site, bool atomic,
                           cs_finding& f, uint32_t by, uint32_t clk) {
    uint64_t* e = v.ent + 2 * g;
    uint32_t* ws = v.wsite + g;
    uint64_t flags = atomic ? CS_WW_FLAG_ATOMIC : 0;
    uint64_t now = ((uint64_t)v.gen << CS_WW_GEN_SHIFT) | (flags << CS_WW_FLAGS_SHIFT) |
                   ((uint64_t)by << CS_WW_TID_SHIFT) | clk;
    uint64_t old = cs_ld64(e);
    uint32_t t = (uint32_t)(old >> CS_WW_TID_SHIFT) & 0xFFu;
    if ((old >> CS_WW_GEN_SHIFT) == v.gen && ((old >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_MBAR)) {
        if (!f.kind) f = {CS_MBARRIER_DATA_ACCESS, cs_ld32(ws), t};
        return;  // the object stays an mbarrier: keep its mark
    }
    bool wg = cs_wgmma_module();
    bool same = (old >> CS_WW_GEN_SHIFT) == v.gen &&
                (cs_own_write(t, by) || (t == by && (uint32_t)old == clk) ||
                 (atomic && ((old >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_ATOMIC)));
    if (same && (!wg || cs_cas64(e, old, now) == old)) {
        // This warp wrote last, or atomics follow atomics: no write-write conflict is
        // possible, so a plain store does (a simultaneous writer from another warp takes
        // the exchange below and sees this epoch). With wgmma a compare-and-swap: a wgmma
        // read flagging the epoch meanwhile must not be lost.
        if (!wg) cs_st64(e, now);
        if (t != by || (uint32_t)old != clk) cs_st32(ws, site);
    } else {
        old = cs_xchg64(e, now);
        uint32_t old_site = cs_xchg32(ws, site);
        cs_check_prev_write(old, old_site, v.gen, v.w, atomic, v.mine, f);
    }
    if (wg && ((old >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_WGREAD)) cs_wg_check_reads(v, g, f);
    cs_fence();
    uint64_t readers = cs_same_phase_readers(cs_ld64(e + 1), v.gen, v.phase);
    if (readers) cs_and64(e + 1, ~readers);
    readers &= ~(1ull << v.w);
    while (readers) {
        uint32_t u = cs_ffsll(readers) - 1;
        readers &= readers - 1;
        uint64_t r = cs_ld64(v.rslots + (uint64_t)u * v.granules + g);
        if (!cs_ordered(v.mine, v.w, u, (uint32_t)r) && !f.kind)
            f = {CS_RACE_WAR, (uint32_t)(r >> 32), u};
    }
    if (cs_async_proxy()) cs_check_async_read(v, g, f);
}


// Granules [g0, g1] written by the async agent `by` at clock `clk`, issued by warp v.w: a
// bulk or tensor copy's box, which one lane models. The rules of cs_check_write for such a
// write, with the atomics of CS_RUN granules in flight together and one fence per run:
// one lane walking an 8 KiB box pays for latency, not work.
#define CS_RUN 8
CS_DEV uint64_t* cs_wg_rec(uint32_t slot, uint32_t u, uint32_t g);
CS_DEV uint32_t* cs_wg_site(uint32_t slot, uint32_t u, uint32_t g);
CS_DEV uint32_t cs_nwg();
CS_NOINLINE void cs_engine_walk(const cs_view& v, uint32_t g0, uint32_t g1, uint32_t site,
                           uint32_t by, uint32_t clk, cs_finding& f) {
    cs_gadd32(&((cs_log_header_t*)S.log)->walked, g1 - g0 + 1);
    uint64_t now = ((uint64_t)v.gen << CS_WW_GEN_SHIFT) | ((uint64_t)by << CS_WW_TID_SHIFT) | clk;
    bool wg = cs_wgmma_module(), ap = cs_async_proxy();
    uint32_t slot = cs_slot_sh;
    for (uint32_t base = g0; base <= g1; base += CS_RUN) {
        uint32_t n = g1 - base + 1 < CS_RUN ? g1 - base + 1 : CS_RUN;
        uint64_t old[CS_RUN], x[CS_RUN];
        uint32_t osite[CS_RUN], mbar = 0, wgread = 0;
        // each granule's first finding; the copy's is that of the first granule with one
        cs_finding fi[CS_RUN];
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN; ++i) fi[i] = {0, CS_NO_SITE, CS_NO_WARP};
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN; ++i)
            if (i < n) old[i] = cs_xchg64(v.ent + 2 * (base + i), now);
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN; ++i)
            if (i < n) osite[i] = cs_xchg32(v.wsite + base + i, site);
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN; ++i) {
            if (i >= n) break;
            uint64_t o = old[i];
            bool live = (o >> CS_WW_GEN_SHIFT) == v.gen;
            uint32_t t = (uint32_t)(o >> CS_WW_TID_SHIFT) & 0xFFu;
            if (live && ((o >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_MBAR)) {
                // the object stays an mbarrier: put its mark back
                cs_st64(v.ent + 2 * (base + i), o);
                cs_st32(v.wsite + base + i, osite[i]);
                fi[i] = {CS_MBARRIER_DATA_ACCESS, osite[i], t};
                mbar |= 1u << i;
                continue;
            }
            if (!(live && cs_own_write(t, by)))
                cs_check_prev_write(o, osite[i], v.gen, v.w, false, v.mine, fi[i]);
            if (wg && ((o >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_WGREAD)) wgread |= 1u << i;
        }
        // wgmma reads of these granules (cs_wg_check_reads, the loads of a run together)
        for (uint32_t u = 0; wgread && u < cs_nwg(); ++u) {
#pragma unroll
            for (uint32_t i = 0; i < CS_RUN; ++i)
                if (wgread & (1u << i)) x[i] = cs_ld64(cs_wg_rec(slot, u, base + i));
#pragma unroll
            for (uint32_t i = 0; i < CS_RUN; ++i) {
                if (!(wgread & (1u << i)) || (x[i] >> CS_WG_GEN_SHIFT) != v.gen) continue;
                if (!cs_ordered(v.mine, v.w, CS_AGENT_WGMMA + u, (uint32_t)x[i]) && !fi[i].kind)
                    fi[i] = {CS_ASYNC_PENDING_READ, cs_ld32(cs_wg_site(slot, u, base + i)),
                             CS_AGENT_WGMMA + u};
                cs_st64(cs_wg_rec(slot, u, base + i), 0);
            }
        }
        cs_fence();
        // readers recorded in this CTA phase (the first of each granule loaded together)
        uint64_t rd[CS_RUN];
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN; ++i)
            if (i < n) x[i] = cs_ld64(v.ent + 2 * (base + i) + 1);
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN; ++i) {
            rd[i] = 0;
            if (i >= n || (mbar & (1u << i))) continue;
            uint64_t readers = cs_same_phase_readers(x[i], v.gen, v.phase);
            if (readers) cs_and64(v.ent + 2 * (base + i) + 1, ~readers);
            rd[i] = readers & ~(1ull << v.w);
            if (rd[i]) x[i] = cs_ld64(v.rslots + (uint64_t)(cs_ffsll(rd[i]) - 1) * v.granules + base + i);
        }
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN; ++i) {
            if (i >= n) break;
            uint32_t g = base + i;
            for (uint64_t readers = rd[i]; readers; readers &= readers - 1) {
                uint32_t u = cs_ffsll(readers) - 1;
                uint64_t r = readers == rd[i] ? x[i] : cs_ld64(v.rslots + (uint64_t)u * v.granules + g);
                if (!cs_ordered(v.mine, v.w, u, (uint32_t)r) && !fi[i].kind)
                    fi[i] = {CS_RACE_WAR, (uint32_t)(r >> 32), u};
            }
            if (ap && !(mbar & (1u << i))) cs_check_async_read(v, g, fi[i]);
            if (!f.kind && fi[i].kind) f = fi[i];
        }
    }
}

// A copy engine's write of granules [g0, g1] (see cs_engine_walk). Blocks whose summary
// says every earlier access is ordered before the issuing warp take stores only: the
// epoch, an empty reader set, the site. Then one fence, and a second look at their
// readers: one that came meanwhile raced with this copy (in a whole block it is reported
// from the summary -- its reader bit may be gone; in part of one, the part is walked).
#define CS_BSUM_BATCH 32
CS_DEV bool cs_vsh_on();
CS_NOINLINE void cs_vsh_engine(uint32_t slot, uint32_t w, uint32_t g0, uint32_t g1,
                               uint32_t site, uint32_t by, uint32_t clk, cs_finding& f);
CS_NOINLINE void cs_engine_write(const cs_view& v, uint32_t g0, uint32_t g1, uint32_t site,
                                 uint32_t by, uint32_t clk, cs_finding& f) {
#ifdef CONSAN_NULL_ENGINE_WRITE  // measurements only: the cost of the box walk
    return;
#endif
    if (cs_vsh_on()) {
        uint32_t b = S.vsh_base / CS_GRANULE_BYTES;
        if (g0 < b) f = {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};
        else cs_vsh_engine(cs_slot_sh, v.w, g0 - b, g1 - b, site, by, clk, f);
        return;
    }
    if (!cs_bsum_on()) return cs_engine_walk(v, g0, g1, site, by, clk, f);
    uint32_t slot = cs_slot_sh, sh = S.bsum_shift;
    uint64_t now = ((uint64_t)v.gen << CS_WW_GEN_SHIFT) | ((uint64_t)by << CS_WW_TID_SHIFT) | clk;
    uint64_t head = ((uint64_t)v.gen << CS_RM_GEN_SHIFT) | ((uint64_t)v.phase << 32);
    uint64_t mine_entry = (1ull << 40) | ((uint64_t)by << 32) | clk;
    cs_bsum_vc q;
    cs_bsum_vc_init(v, q);
    for (uint32_t b0 = g0 >> sh; b0 <= g1 >> sh; b0 += CS_BSUM_BATCH) {
        uint32_t fast = 0, nb = (g1 >> sh) - b0 + 1;
        nb = nb < CS_BSUM_BATCH ? nb : CS_BSUM_BATCH;
        for (uint32_t i = 0; i < nb; ++i) {
            uint32_t b = b0 + i, a = b << sh, z = ((b + 1) << sh) - 1;
            a = a < g0 ? g0 : a;
            z = z > g1 ? g1 : z;
            uint32_t* s = cs_bsum(slot, b);
            cs_bsum_blk x;
            cs_bsum_load(s, q, true, x);
            uint32_t by_i, by_c;
            bool clear = cs_bsum_writers_ordered(v, by, x, by_i, by_c);
            clear = cs_bsum_readers_ordered(v, s, q, x) && clear;
            if (by_i == CS_BSUM_WRITERS) cs_bsum_write(slot, a, z, by, clk);  // its first copy here
            else if (by_c < clk) cs_max64((uint64_t*)(s + CS_BS_WRITERS) + by_i, mine_entry);
            if (!clear) {
                cs_engine_walk(v, a, z, site, by, clk, f);
                continue;
            }
            fast |= 1u << i;
#ifdef CONSAN_NULL_BOX_STORES  // measurements only: the cost of the stores-only path's stores
            continue;
#endif
            for (uint32_t g = a; g <= z; ++g) {
                cs_st128(v.ent + 2 * g, now, head);
                cs_st32(v.wsite + g, site);
            }
        }
        if (!fast) continue;
        cs_fence();
#ifdef CONSAN_NULL_BOX_RECHECK  // measurements only: the cost of the look after the stores
        fast = 0;
#endif
        for (; fast; fast &= fast - 1) {
            uint32_t b = b0 + cs_ffs(fast) - 1, a = b << sh, z = ((b + 1) << sh) - 1;
            uint32_t* s = cs_bsum(slot, b);
            cs_bsum_blk x;
            cs_bsum_load(s, q, false, x);
            if (cs_bsum_readers_ordered(v, s, q, x)) continue;
            if (!(a >= g0 && z <= g1))
                cs_engine_walk(v, a < g0 ? g0 : a, z > g1 ? g1 : z, site, by, clk, f);
            else if (!f.kind)
                f = cs_bsum_late_reader(v, s);
        }
    }
}

// ------------------------------------------------------------- phase mode
//
// When the kernel synchronises only with CTA-wide barriers, two accesses by
// different warps are ordered exactly when a CTA-wide barrier lies between
// them, i.e. when their CTA phases differ. Each warp keeps a bitmap of the
// granules it read in the current phase (two bitmaps, by phase parity); a
// write epoch records the writer's phase. No vector clocks are needed.

CS_DEV uint32_t* cs_readbits(uint32_t slot, uint32_t w, uint32_t parity) {
    uint32_t words = (S.granules + 31) / 32;
    return (uint32_t*)S.readbits + (((uint64_t)slot * S.nwarps + w) * 2 + parity) * words;
}

CS_DEV bool cs_phase_mode() { return S.flags & CS_FLAG_PHASE_MODE; }

CS_DEV void cs_phase_read(uint32_t slot, uint32_t w, uint32_t phase, uint32_t g, uint32_t site,
                          cs_finding& f) {
    uint32_t* word = cs_readbits(slot, w, phase & 1) + (g >> 5);
    uint32_t bit = 1u << (g & 31);
    if (cs_ld32(word) & bit) return;  // read already this phase: a later writer sees the bit
    cs_or32(word, bit);
    cs_st64((uint64_t*)S.rsite + cs_gidx(slot, g), ((uint64_t)phase << 32) | site);
    cs_fence();  // publish the read, then look at the write (Dekker with cs_phase_write)
    uint64_t ww = cs_ld64(cs_gent(slot, g));
    if ((ww >> CS_WW_GEN_SHIFT) != cs_gen_sh) {
        if (!f.kind) f = {CS_UNINIT_READ, CS_NO_SITE, CS_NO_WARP};
        return;
    }
    uint32_t t = (uint32_t)(ww >> CS_WW_TID_SHIFT) & 0xFFu;
    if (t != w && (uint32_t)ww == phase && !f.kind)
        f = {CS_RACE_RAW, cs_ld32((uint32_t*)S.wsite + cs_gidx(slot, g)), t};
}

CS_DEV void cs_phase_write(uint32_t slot, uint32_t w, uint32_t phase, uint32_t g, uint32_t site,
                           bool atomic, cs_finding& f) {
    uint64_t* e = cs_gent(slot, g);
    uint32_t* ws = (uint32_t*)S.wsite + cs_gidx(slot, g);
    uint64_t gen = cs_gen_sh;
    uint64_t flags = atomic ? CS_WW_FLAG_ATOMIC : 0;
    uint64_t now = (gen << CS_WW_GEN_SHIFT) | (flags << CS_WW_FLAGS_SHIFT) |
                   ((uint64_t)w << CS_WW_TID_SHIFT) | phase;
    uint64_t old = cs_ld64(e);
    if (old == now) return;  // rewritten by this warp this phase: nothing new to check
    uint32_t t = (uint32_t)(old >> CS_WW_TID_SHIFT) & 0xFFu;
    if ((old >> CS_WW_GEN_SHIFT) == gen && t == w) {
        cs_st64(e, now);
        cs_st32(ws, site);
    } else {
        old = cs_xchg64(e, now);
        uint32_t old_site = cs_xchg32(ws, site);
        t = (uint32_t)(old >> CS_WW_TID_SHIFT) & 0xFFu;
        if ((old >> CS_WW_GEN_SHIFT) != gen) {
            if (atomic && !f.kind) f = {CS_UNINIT_READ, CS_NO_SITE, CS_NO_WARP};
        } else if (t != w && (uint32_t)old == phase && !f.kind &&
                   !(atomic && ((old >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_ATOMIC))) {
            f = {CS_RACE_WAW, old_site, t};
        }
    }
    cs_fence();
    // Granules no one read this phase (most writes) skip the look at every warp's bitmap.
    uint64_t rs = cs_ld64((uint64_t*)S.rsite + cs_gidx(slot, g));
    if ((uint32_t)(rs >> 32) != phase) return;
    uint32_t bit = 1u << (g & 31);
    for (uint32_t u = 0; u < S.nwarps; ++u) {
        if (u == w || !(cs_ld32(cs_readbits(slot, u, phase & 1) + (g >> 5)) & bit)) continue;
        if (!f.kind) f = {CS_RACE_WAR, (uint32_t)rs, u};
        break;
    }
}

// Before a warp arrives at the CTA-wide barrier that ends phase p: empty its bitmap
// for phase p+1 (it holds p-1, which no one can look at any more).
CS_DEV void cs_phase_clear_next(uint32_t slot, uint32_t w, uint32_t active, uint32_t lane) {
    uint32_t* bm = cs_readbits(slot, w, (cs_phase_sh[w] + 1) & 1);
    uint32_t words = (S.granules + 31) / 32;
    uint32_t rank = cs_popc(active & ((1u << lane) - 1u)), n = cs_popc(active);
    for (uint32_t i = rank; i < words; i += n) cs_st32(&bm[i], 0);
    cs_fence();
}


// Everything the fast path does not settle: recording reads, writes, findings.
CS_NOINLINE void cs_access_slow(uint64_t addr, uint32_t site, uint32_t info) {
    CS_PROF(14);
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return;
    uint32_t active = cs_group(((uint64_t)site << 32) | info, 0);
    uint32_t lane = cs_lane();
    uint32_t space = (info >> CS_INFO_SPACE_SHIFT) & 3u;
    uint32_t mode = (info >> CS_INFO_MODE_SHIFT) & 3u;
    uint32_t shape = (info >> CS_INFO_SHAPE_SHIFT) & 15u;
    uint32_t size = info & CS_INFO_SIZE_MASK;
    bool skip = false, remote = false;
    uint32_t off = 0;
    if (space == CS_SPACE_GENERIC) {
        if (!cs_is_shared(addr)) skip = true;
        else if (!cs_local(cs_to_shared(addr), off)) remote = true;
    } else if (!cs_local((uint32_t)addr, off)) {
        remote = true;
    }
    if (shape && lane >= 8u * shape) skip = true;  // ldmatrix/stmatrix: lanes giving row addresses
    cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
    if (remote && !skip) {  // another CTA's shared memory: said, not checked
        f = {CS_TOOL_REMOTE_SMEM, CS_NO_SITE, CS_NO_WARP};
        skip = true;
    }
    uint32_t g0 = off / CS_GRANULE_BYTES, g1 = (off + size - 1) / CS_GRANULE_BYTES;
    bool inside = !skip && g1 < S.granules;
    uint32_t mn = cs_min(active, inside ? g0 : 0xFFFFFFFFu);
    uint32_t mx = cs_max(active, inside ? g1 : 0u);
    if (cs_phase_mode() && mode == CS_MODE_READ && cs_all(active, inside || skip) &&
        mn <= mx && mx - mn < 64) {
        // The warp's reads cover at most 64 neighbouring granules (tiles, stencils,
        // broadcasts): take their union and spread it a granule per lane, so granules
        // read by several lanes are recorded once.
        uint64_t own = 0;
        if (inside) own = ((g1 - g0 == 63) ? ~0ull : ((1ull << (g1 - g0 + 1)) - 1)) << (g0 - mn);
        uint32_t lo = cs_or(active, (uint32_t)own), hi = cs_or(active, (uint32_t)(own >> 32));
        uint32_t total = cs_popc(lo) + cs_popc(hi), nlo = cs_popc(lo);
        uint32_t lanes = cs_popc(active), rank = cs_popc(active & ((1u << lane) - 1u));
        uint32_t w = cs_warp(), phase = cs_phase_sh[w];
        for (uint32_t item = rank; item < total; item += lanes) {
            uint32_t bit = item < nlo ? cs_nth_set(lo, item) : 32 + cs_nth_set(hi, item - nlo);
            uint32_t g = mn + bit;
            cs_finding before = f;
            cs_phase_read(slot, w, phase, g, site, f);
            if (f.kind && !before.kind) off = g * CS_GRANULE_BYTES, size = CS_GRANULE_BYTES;
        }
        skip = skip || !f.kind;
    } else if (!skip) {
        if (g1 >= S.granules) {
            f = {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};
        } else {
            CS_PROF(15);
            uint32_t w = cs_warp();
            cs_view v = cs_make_view(slot, w);
            if (cs_phase_mode()) {
                for (uint32_t g = g0; g <= g1; ++g) {
                    if (mode == CS_MODE_READ) cs_phase_read(slot, w, v.phase, g, site, f);
                    else cs_phase_write(slot, w, v.phase, g, site, mode == CS_MODE_ATOMIC, f);
                }
            } else if (mode == CS_MODE_READ) {
                // Publish every read, one fence, then look at the writes (Dekker with
                // cs_check_write, which stores its epoch, fences, then looks for readers).
                for (uint32_t g = g0; g <= g1; ++g) cs_record_read(v, g, site);
                if (cs_bsum_on()) cs_bsum_read(slot, g0, g1, w, v.clock, site);
                cs_fence();
                for (uint32_t g = g0; g <= g1; ++g) cs_check_raw(v, g, f);
            } else {
                uint32_t by = w, clk = v.clock;
                if (mode == CS_MODE_ASYNC_WRITE) {  // the copy unit's clock (__consan_async)
                    by = CS_AGENT_CPASYNC + w;
                    clk = *(volatile uint32_t*)&cs_cpticks_sh[w] + 1;
                }
                if (cs_bsum_on()) cs_bsum_write(slot, g0, g1, by, clk);
                for (uint32_t g = g0; g <= g1; ++g)
                    cs_check_write(v, g, site, mode == CS_MODE_ATOMIC, f, by, clk);
            }
        }
    }
    if (!cs_any(active, f.kind != 0)) return;
    cs_record_t r;
    if (cs_merged_record(active, f, site, skip ? 0xFFFFFFFFu : off, skip ? 0u : off + size, r))
        cs_record(r);
}


// The common case, in few registers: a plain access (at most 16 granules) whose
// every granule needs no update -- a read already recorded at this clock of a
// write that happens before it, or a rewrite by the same warp at the same
// clock with no other reader. Nothing is stored; anything else goes slow.
CS_DEV bool cs_access_fast(uint64_t addr, uint32_t info) {
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return true;
    uint32_t space = (info >> CS_INFO_SPACE_SHIFT) & 3u;
    uint32_t mode = (info >> CS_INFO_MODE_SHIFT) & 3u;
    if (space != CS_SPACE_SHARED || mode >= CS_MODE_ATOMIC || ((info >> CS_INFO_SHAPE_SHIFT) & 15u))
        return false;
    uint32_t off;
    if (!cs_local((uint32_t)addr, off)) return false;
    uint32_t size = info & CS_INFO_SIZE_MASK;
    uint32_t g0 = off / CS_GRANULE_BYTES, g1 = (off + size - 1) / CS_GRANULE_BYTES;
    if (g1 - g0 > 15 || g1 >= S.granules) return false;
    uint32_t w = cs_warp();
    uint64_t gen = cs_gen_sh;
    if (cs_phase_mode()) {
        uint32_t phase = cs_phase_sh[w];
        const uint32_t* bm = cs_readbits(slot, w, phase & 1);
        uint64_t mine_now = (gen << CS_WW_GEN_SHIFT) | ((uint64_t)w << CS_WW_TID_SHIFT) | phase;
        for (uint32_t g = g0; g <= g1; ++g) {
            if (mode == CS_MODE_READ) {
                if (!(cs_ld32(bm + (g >> 5)) & (1u << (g & 31)))) return false;
            } else if (cs_ld64(cs_gent(slot, g)) != mine_now) {
                return false;
            }
        }
        return true;
    }
    uint32_t clock = cs_clock_sh[w];
    uint64_t bit = 1ull << w;
    const uint32_t* mine = cs_vis(slot, w);
    for (uint32_t g = g0; g <= g1; ++g) {
        const uint64_t* e = cs_gent(slot, g);
        uint64_t ww = cs_ld64(e), rm = cs_ld64(e + 1);
        if ((ww >> CS_WW_GEN_SHIFT) != gen) return false;
        uint32_t t = (uint32_t)(ww >> CS_WW_TID_SHIFT) & 0xFFu;
        if (mode == CS_MODE_READ) {
            if ((rm >> CS_RM_GEN_SHIFT) != gen || !(rm & bit) || CS_RM_PHASE(rm) != cs_phase_sh[w])
                return false;
            if ((uint32_t)cs_ld64(cs_rslot(slot, w, g)) != clock) return false;
            if ((ww >> CS_WW_FLAGS_SHIFT) & 0xFFu) return false;
            if (t != w && mine[t] < (uint32_t)ww) return false;
        } else {
            if (t != w || (uint32_t)ww != clock || ((ww >> CS_WW_FLAGS_SHIFT) & 0xFFu)) return false;
            if (cs_same_phase_readers(rm, (uint32_t)gen, cs_phase_sh[w]) & ~bit) return false;
        }
    }
    return true;
}

CS_DEV void cs_access(uint64_t addr, uint32_t site, uint32_t info) {
    if (!cs_access_fast(addr, info)) cs_access_slow(addr, site, info);
}

// ------------------------------------------------------------- exits

CS_DEV void cs_thread_exit(uint32_t site) {
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return;
    uint32_t active = cs_group(site, 0);
    uint32_t lane = cs_lane();
    if (lane != (uint32_t)(cs_ffs(active) - 1)) return;
    uint32_t n = cs_popc(active);
    uint32_t* cta = cs_cta(slot);
    uint32_t w = cs_warp();
    if ((cs_and32(&cs_lanes_sh[w], ~active) & ~active) == 0) {
        // The whole warp is gone: barriers waiting for "every live warp" may now be complete.
        uint32_t live = cs_add32(&cs_livew_sh, (uint32_t)-1) - 1;
        cs_fence();
        for (uint32_t b = 0; b < CS_NAMED_BARRIERS; ++b) {
            uint64_t seen = cs_bw_ld(cs_barword(slot, b));
            if (CS_BW_COUNT(seen) == 0) cs_bar_try_complete(slot, b, seen, live);
        }
    }
    if (cs_add32(&cta[CS_CTA_LIVE_THREADS], 0u - n) == n) {
        cs_gadd32(&((cs_log_header_t*)S.log)->ctas_ended, 1);
        cs_fence_sys();
        cs_gxchg32(&((uint32_t*)S.slot_busy)[slot], 0);
    }
    (void)site;
}

// ------------------------------------------------------------- phase mode, tables in smem
//
// Phase mode with its tables in the CTA's own shared memory (FLAG_PHASE_SMEM;
// the device build compiled with -DCONSAN_PSH has only this path). The runtime
// appends psh_bytes of dynamic shared memory at psh_offset; the CTA clears them
// when it begins, so no slot, generation tag or global-memory atomic is needed.
// Per granule: the write epoch (phase:32 | tid:8 | flags:8, 0 = never written),
// the sites of the last write and read, the latest phase anyone read it in;
// per warp and phase parity a bitmap of the granules it read (abi.psh_layout).

#ifdef CONSAN_HOST
static uint8_t* cs_dyn_host;
#define CS_DYN cs_dyn_host
#else
#define CS_DYN cs_dyn
#endif
#define CS_PSH_MULTI 0xFFu  // writer tid: several warps updated the granule atomically

CS_DEV uint32_t cs_vld32(const uint32_t* p) { return *(const volatile uint32_t*)p; }
CS_DEV uint64_t cs_vld64(const uint64_t* p) { return *(const volatile uint64_t*)p; }
CS_DEV void cs_vst32(uint32_t* p, uint32_t v) { *(volatile uint32_t*)p = v; }

// The tables start psh_offset bytes into the dynamic window, after the kernel's own
// bytes and the checker's shared variables (cs_dyn_at).
CS_DEV uint8_t* cs_psh() {
#ifdef CONSAN_HOST
    uint32_t a = (uint32_t)(uint64_t)CS_DYN;
    return CS_DYN + ((0u - a) & 15u) + S.psh_offset;
#else
    return cs_dyn_at(S.psh_offset);
#endif
}
CS_DEV uint64_t* cs_psh_ww() { return (uint64_t*)cs_psh(); }
CS_DEV uint32_t* cs_psh_u32(uint32_t table) {  // table k of the u32 tables after the epochs
    return (uint32_t*)(cs_psh() + (uint64_t)(8u + 4u * table) * S.granules);
}
#define CS_PSH_WSITE 0u
#define CS_PSH_RSITE 1u
#define CS_PSH_RPHASE 2u
CS_DEV uint32_t* cs_psh_bits(uint32_t w, uint32_t parity) {
    uint32_t words = (S.granules + 31) / 32;
    return cs_psh_u32(3) + (w * 2 + parity) * words;
}

// One record per distinct finding among the lanes that call together.
CS_NOINLINE void cs_psh_note(uint32_t kind, uint32_t site, uint32_t prev_site,
                             uint32_t prev_warp, uint32_t lo, uint32_t hi) {
    uint32_t active = cs_match(cs_activemask(), site);
    cs_finding f = {kind, prev_site, prev_warp == CS_PSH_MULTI ? CS_NO_WARP : prev_warp};
    cs_record_t r;
    if (!cs_merged_record(active, f, site, lo, hi, r)) return;
    r.clock = cs_phase_sh[cs_warp()];
    cs_record(r);
}

CS_DEV void cs_psh_access(uint64_t addr, uint32_t site, uint32_t info) {
    uint32_t space = (info >> CS_INFO_SPACE_SHIFT) & 3u;
    uint32_t mode = (info >> CS_INFO_MODE_SHIFT) & 3u;
    uint32_t shape = (info >> CS_INFO_SHAPE_SHIFT) & 15u;
    uint32_t size = info & CS_INFO_SIZE_MASK;
    if (space == CS_SPACE_GENERIC) {
        if (!cs_is_shared(addr)) return;
        addr = cs_to_shared(addr);
    }
    if (shape && cs_lane() >= 8u * shape) return;  // ldmatrix/stmatrix: lanes giving row addresses
    uint32_t off;
    if (!cs_local((uint32_t)addr, off)) {
        cs_psh_note(CS_TOOL_REMOTE_SMEM, site, CS_NO_SITE, CS_NO_WARP, 0xFFFFFFFFu, 0u);
        return;
    }
    uint32_t g0 = off / CS_GRANULE_BYTES, g1 = (off + size - 1) / CS_GRANULE_BYTES;
    if (g1 >= S.granules) {
        cs_psh_note(CS_TOOL_OUT_OF_WINDOW, site, CS_NO_SITE, CS_NO_WARP, off, off + size);
        return;
    }
    uint32_t w = cs_warp(), phase = cs_phase_sh[w];
    uint64_t* ww = cs_psh_ww();
    uint32_t kind = 0, prev_site = CS_NO_SITE, prev_warp = CS_NO_WARP;
    if (mode == CS_MODE_READ) {
        // Set this warp's bits; only granules it had not read this phase need a look.
        uint32_t* bm = cs_psh_bits(w, phase & 1);
        uint32_t* rsite = cs_psh_u32(CS_PSH_RSITE);
        uint32_t* rphase = cs_psh_u32(CS_PSH_RPHASE);
        // When the warp's reads fall in at most three bitmap words (tiles, broadcasts,
        // stencils), the lanes combine their bits: one shared atomic per word instead
        // of up to 32 serialised ones. Scattered reads (columns) set their own bits.
        uint32_t active = cs_activemask(), lane = cs_lane();
        uint32_t fresh[3] = {0, 0, 0}, k0 = g0 >> 5, k1 = g1 >> 5, any = 0;
        uint32_t kmin = cs_min(active, k0), kmax = cs_max(active, k1);
#ifdef CONSAN_PSH_LANE_BITS  // measurements only: every lane sets its own bits
        bool together = false;
        (void)kmin; (void)kmax;
#else
        bool together = kmax - kmin <= 2;
#endif
        uint32_t first = together ? kmin : k0, last = together ? kmax : k1;
        for (uint32_t k = first; k <= last; ++k) {
            uint32_t m = 0;
            if (k >= k0 && k <= k1) {
                uint32_t lo = k == k0 ? (g0 & 31) : 0, hi = k == k1 ? (g1 & 31) : 31;
                m = (hi == 31 ? 0xFFFFFFFFu : ((1u << (hi + 1)) - 1)) & ~((1u << lo) - 1);
            }
            uint32_t all = together ? cs_or(active, m) : m, f = 0;
            uint32_t leader = together ? (uint32_t)(cs_ffs(active) - 1) : lane;
            if (all && lane == leader && (cs_vld32(&bm[k]) & all) != all)
                f = all & ~cs_or32(&bm[k], all);
            if (together) f = cs_bcast(active, f, (int)leader);
            f &= m;
            if (!f) continue;
            fresh[k - k0] = f;
            any |= f;
            for (uint32_t b = f; b; b &= b - 1) {
                uint32_t g = k * 32 + (uint32_t)(cs_ffs(b) - 1);
                cs_vst32(&rphase[g], phase);
                cs_vst32(&rsite[g], site);
            }
        }
        if (!any) return;
        cs_fence();  // publish the reads, then look at the writes (Dekker with the writer)
        for (uint32_t k = k0; k <= k1 && !kind; ++k) {
            for (uint32_t b = fresh[k - k0]; b; b &= b - 1) {
                uint32_t g = k * 32 + (uint32_t)(cs_ffs(b) - 1);
                uint64_t e = cs_vld64(&ww[g]);
                uint32_t t = (uint32_t)(e >> CS_WW_TID_SHIFT) & 0xFFu;
                if (e == 0) {
                    kind = CS_UNINIT_READ;
                } else if ((uint32_t)e == phase && t != w) {
                    kind = CS_RACE_RAW;
                    prev_site = cs_vld32(&cs_psh_u32(CS_PSH_WSITE)[g]);
                    prev_warp = t;
                }
                if (kind) break;
            }
        }
    } else {
        uint64_t atom = mode == CS_MODE_ATOMIC ? (uint64_t)CS_WW_FLAG_ATOMIC << CS_WW_FLAGS_SHIFT : 0;
        uint64_t now = phase | ((uint64_t)w << CS_WW_TID_SHIFT) | atom;
        uint64_t multi = phase | ((uint64_t)CS_PSH_MULTI << CS_WW_TID_SHIFT) | atom;
        uint32_t* wsite = cs_psh_u32(CS_PSH_WSITE);
        bool stored = false;
        for (uint32_t g = g0; g <= g1; ++g) {
            uint64_t e = cs_vld64(&ww[g]);
            // Rewritten by this warp, or updated atomically by several, this phase:
            // whoever reads or writes it next this phase sees this epoch.
            if (e == now || (atom && e == multi)) continue;
            bool other_atomic = atom && (uint32_t)e == phase && (e & atom);
            uint64_t old = cs_xchg64(&ww[g], other_atomic ? multi : now);
            uint32_t old_site = cs_xchg32(&wsite[g], site);
            stored = true;
            uint32_t t = (uint32_t)(old >> CS_WW_TID_SHIFT) & 0xFFu;
            if (kind) continue;
            if (old == 0) {
                if (atom) kind = CS_UNINIT_READ;  // an atomic reads the granule
            } else if ((uint32_t)old == phase && t != w && !(atom && (old & atom))) {
                kind = CS_RACE_WAW;
                prev_site = old_site;
                prev_warp = t;
            }
        }
        if (stored) {
            cs_fence();  // publish the write, then look for readers of this phase
            const uint32_t* rphase = cs_psh_u32(CS_PSH_RPHASE);
            for (uint32_t g = g0; g <= g1 && !kind; ++g) {
                if (cs_vld32(&rphase[g]) != phase) continue;  // most writes: nobody read it
                uint32_t bit = 1u << (g & 31);
                for (uint32_t u = 0; u < S.nwarps; ++u) {
                    if (u == w || !(cs_vld32(&cs_psh_bits(u, phase & 1)[g >> 5]) & bit)) continue;
                    kind = CS_RACE_WAR;
                    prev_site = cs_vld32(&cs_psh_u32(CS_PSH_RSITE)[g]);
                    prev_warp = u;
                    break;
                }
            }
        }
    }
    if (kind) cs_psh_note(kind, site, prev_site, prev_warp, off, off + size);
}

// Before the CTA-wide barrier that ends phase p: empty this warp's bitmap for
// p+1 (it holds p-1, which no one can look at any more).
CS_DEV uint32_t cs_psh_bar_arrive() {
    uint32_t active = cs_activemask();
    uint32_t lane = cs_lane(), w = cs_warp();
    uint32_t* bm = cs_psh_bits(w, (cs_phase_sh[w] + 1) & 1);
    uint32_t words = (S.granules + 31) / 32;
    uint32_t rank = cs_popc(active & ((1u << lane) - 1u)), n = cs_popc(active);
    for (uint32_t i = rank; i < words; i += n) cs_vst32(&bm[i], 0);
    cs_fence();
    cs_syncwarp(active);
    return CS_TOKEN_CTA_WIDE;
}

CS_DEV void cs_psh_bar_wait(uint32_t gen) {
    uint32_t active = cs_activemask();
    if ((gen & CS_TOKEN_CTA_WIDE) && cs_lane() == (uint32_t)(cs_ffs(active) - 1))
        cs_phase_sh[cs_warp()] += 1;
    cs_syncwarp(active);
}

// Run by every thread (i of n) when the CTA begins.
CS_DEV void cs_psh_begin(uint32_t i, uint32_t n) {
    if (i == 0) {
        cs_gadd32(&((cs_log_header_t*)S.log)->ctas_begun, 1);
        cs_slot_sh = 0;
    }
    for (uint32_t w = i; w < CS_MAX_WARPS; w += n) cs_phase_sh[w] = 1;
    uint32_t* p = (uint32_t*)cs_psh();
    for (uint32_t k = i; k < S.psh_bytes / 4; k += n) p[k] = 0;
}

// Which shared-memory tables a build keeps (FLAG_PHASE_SMEM or FLAG_VC_SMEM): the host
// build follows the launch's flags, a device build is compiled for one kind (or none).
CS_DEV bool cs_table_mode(uint32_t flag) {
#if defined(CONSAN_HOST)
    return S.flags & flag;
#elif defined(CONSAN_PSH)
    return flag == CS_FLAG_PHASE_SMEM;
#elif defined(CONSAN_VSH)
    return flag == CS_FLAG_VC_SMEM;
#else
    return (void)flag, false;
#endif
}
CS_DEV bool cs_psh_mode() { return cs_table_mode(CS_FLAG_PHASE_SMEM); }

// ------------------------------------------------------------- granule tables in smem
//
// FLAG_VC_SMEM (docs/model.md "Granule tables in shared memory"; the device build is
// -DCONSAN_VSH): vector-clock mode with the buffer tables in the CTA's own shared memory,
// where each lane updates the entries of its own granules -- no leader, no lock -- so a
// warp's access costs each lane a few shared-memory operations. Per granule:
//   W   u32 write epoch: mbarrier:1 | atomic:1 | tid:7 | clock:23 (0: never written);
//   R   per reader index a byte: the clock of its latest read since that write, as
//       c % 255 + 1 (0: none); one row of bytes per reader.
// Per 128-byte block:
//   RS  each reader's latest read clock among the block's bytes. It bounds the bytes from
//       above, so a write whose readers RS shows ordered needs no look at them. 0: no
//       read, and the reader's bytes in the block may be stale -- a write of the whole
//       block (a copy of a box) empties only RS; the reader's next read there empties its
//       bytes first (cs_vsh_raise, cs_vsh_fresh);
//   BT  0, or WHOLE | the epoch of a copy that wrote the whole block: the block's W
//       entries are stale and this one epoch stands for them (a copy of a box stores a word
//       per block). A lane writing single granules of such a block first gives them the
//       epoch back (BT locked meanwhile; readers wait the few stores out).
// The sites of the accesses go to device memory (wsite; vrsite: the read sites per reader,
// then the sites of the whole-block copies) with plain stores: only reports read them. The
// tables start at window byte S.vsh_base (the hardware reserves the bytes below it); the
// probes work in granules relative to it.

CS_DEV bool cs_vsh_on() { return cs_table_mode(CS_FLAG_VC_SMEM); }

// An address in the CTA's shared memory, and the table operations on it (LDS/STS/ATOMS,
// not the generic path).
#ifdef CONSAN_HOST
CS_DEV uint32_t* cs_sp32(cs_sp a) { return (uint32_t*)a; }
CS_DEV uint32_t cs_s_ld(cs_sp a) { return __atomic_load_n(cs_sp32(a), __ATOMIC_RELAXED); }
CS_DEV void cs_s_st(cs_sp a, uint32_t v) { __atomic_store_n(cs_sp32(a), v, __ATOMIC_RELAXED); }
// (vector operations need 16-byte alignment on the device: the host build checks it)
CS_DEV cs_sp cs_al16(cs_sp a) { if (a & 15) abort(); return a; }
CS_DEV cs_u4 cs_s_ld4(cs_sp a) { cs_al16(a); return {cs_s_ld(a), cs_s_ld(a + 4), cs_s_ld(a + 8), cs_s_ld(a + 12)}; }
CS_DEV void cs_s_st4(cs_sp a, cs_u4 v) { cs_al16(a); cs_s_st(a, v.x); cs_s_st(a + 4, v.y); cs_s_st(a + 8, v.z); cs_s_st(a + 12, v.w); }
CS_DEV uint32_t cs_s_ld8(cs_sp a) { return __atomic_load_n((uint8_t*)a, __ATOMIC_RELAXED); }
CS_DEV void cs_s_st8(cs_sp a, uint32_t v) { __atomic_store_n((uint8_t*)a, (uint8_t)v, __ATOMIC_RELAXED); }
CS_DEV uint32_t cs_s_xchg(cs_sp a, uint32_t v) { return __atomic_exchange_n(cs_sp32(a), v, __ATOMIC_RELAXED); }
CS_DEV uint32_t cs_s_cas(cs_sp a, uint32_t c, uint32_t v) { return cs_cas32(cs_sp32(a), c, v); }
CS_DEV void cs_s_max(cs_sp a, uint32_t v) { cs_max32(cs_sp32(a), v); }
CS_DEV cs_sp cs_vsh_base() { return (cs_sp)cs_psh(); }
CS_DEV void cs_g_st(uint32_t* p, uint32_t v) { *p = v; }
CS_DEV void cs_g_st4(uint32_t* p, uint32_t v) { cs_al16((cs_sp)p); p[0] = p[1] = p[2] = p[3] = v; }
#else
CS_DEV uint32_t cs_s_ld(cs_sp a) {
    uint32_t v; asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory"); return v;
}
CS_DEV void cs_s_st(cs_sp a, uint32_t v) {
    asm volatile("st.volatile.shared.u32 [%0], %1;" :: "r"(a), "r"(v) : "memory");
}
CS_DEV cs_u4 cs_s_ld4(cs_sp a) {  // a 16-byte aligned
    cs_u4 v;
    asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a) : "memory");
    return v;
}
CS_DEV void cs_s_st4(cs_sp a, cs_u4 v) {  // a 16-byte aligned
    asm volatile("st.volatile.shared.v4.u32 [%0], {%1, %2, %3, %4};"
                 :: "r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
CS_DEV uint32_t cs_s_ld8(cs_sp a) {
    uint32_t v; asm volatile("ld.volatile.shared.u8 %0, [%1];" : "=r"(v) : "r"(a) : "memory"); return v;
}
CS_DEV void cs_s_st8(cs_sp a, uint32_t v) {
    asm volatile("st.volatile.shared.u8 [%0], %1;" :: "r"(a), "r"(v) : "memory");
}
CS_DEV uint32_t cs_s_xchg(cs_sp a, uint32_t v) {
    uint32_t o; asm volatile("atom.shared.exch.b32 %0, [%1], %2;" : "=r"(o) : "r"(a), "r"(v) : "memory"); return o;
}
CS_DEV uint32_t cs_s_cas(cs_sp a, uint32_t c, uint32_t v) {
    uint32_t o;
    asm volatile("atom.shared.cas.b32 %0, [%1], %2, %3;" : "=r"(o) : "r"(a), "r"(c), "r"(v) : "memory");
    return o;
}
CS_DEV void cs_s_max(cs_sp a, uint32_t v) {
    asm volatile("red.shared.max.u32 [%0], %1;" :: "r"(a), "r"(v) : "memory");
}
CS_DEV cs_sp cs_vsh_base() { return (cs_sp)__cvta_generic_to_shared(cs_psh()); }
CS_DEV void cs_g_st(uint32_t* p, uint32_t v) { *(volatile uint32_t*)p = v; }
CS_DEV void cs_g_st4(uint32_t* p, uint32_t v) {  // p 16-byte aligned
    asm volatile("st.global.v4.u32 [%0], {%1, %1, %1, %1};" :: "l"(p), "r"(v) : "memory");
}
#endif

#define CS_VSH_B CS_VSH_BLOCK_GRANULES
#define CS_VSH_FASTR 8  // readers whose clocks a probe keeps in registers
CS_DEV uint32_t cs_vsh_reader_tid(uint32_t ri);

// What a probe needs of the tables, computed once.
// The layout (cs_vlay): write epochs W [gp], reader bytes R [nr][gp], summaries RS
// [nb][rss] (rss: 4 words up to 4 readers, for one vector load), block words BT [nb]; the
// slot's write sites ws [gp] and read sites rsite [nr][gp], then whole-block copy sites [nb].
CS_DEV void cs_vsh_layout(uint32_t slot) {
    cs_vlay& l = cs_vlay_sh;
    l.gp = (S.granules - S.vsh_base / CS_GRANULE_BYTES + CS_VSH_B - 1) & ~(CS_VSH_B - 1);
    l.nr = S.vsh_readers;
    l.nb = l.gp / CS_VSH_B;
    l.rss = l.nr <= 4 ? 4u : l.nr;  // abi.vsh_bytes
    l.W = cs_vsh_base();
    l.R = l.W + 4u * l.gp;
    l.RS = l.R + l.nr * l.gp;
    l.BT = l.RS + 4u * l.rss * l.nb;
    // then (abi.vsh_bytes) the barriers' words, barrier 0's slots, the warps' clocks
    uint32_t after = ((uint32_t)(l.BT - l.W) + 4u * l.nb + 15u) & ~15u;  // (vector joins)
    l.barw = (uint64_t*)(cs_psh() + after);
    l.bvc0 = (uint32_t*)(l.barw + CS_NAMED_BARRIERS);
    l.vis = l.bvc0 + 2u * S.nlogical;
    l.rows = l.vis + S.nwarps * S.nlogical;
    l.rtid[0] = l.rtid[1] = 0;
    for (uint32_t ri = 0; ri < CS_VSH_FASTR && ri < l.nr; ++ri) {
        uint32_t b = cs_vsh_reader_tid(ri) << (8 * (ri % 4));
        if (ri < 4) l.rtid[0] |= b;
        else l.rtid[1] |= b;
    }
    l.ws = (uint32_t*)S.wsite + (uint64_t)slot * l.gp;
    l.rsite = (uint32_t*)S.vrsite + (uint64_t)slot * (l.nr * l.gp + ((l.nb + 3) & ~3u));  // abi.vsh_site_words
}

// What a probe needs of the tables.
struct cs_vctx : cs_vlay {
    uint32_t slot, w;
    const uint32_t* mine; // the probing warp's vector clock
};
CS_DEV cs_vctx cs_vsh_ctx(uint32_t slot, uint32_t w) {
    cs_vctx x;
    static_cast<cs_vlay&>(x) = cs_vlay_sh;
    x.slot = slot;
    x.w = w;
    x.mine = cs_vis(slot, w);
    return x;
}
CS_DEV uint32_t* cs_vsh_bsite(const cs_vctx& x, uint32_t b) { return x.rsite + x.nr * x.gp + b; }

// Reader indices: warps, then the bulk-store units (modules with bulk stores), then the
// wgmma units (abi.vsh_readers).
// Each kind only where the module has it: a module with no generic smem read (TMA + wgmma
// kernels) keeps no byte for its warps.
CS_DEV uint32_t cs_vsh_nwr() { return (S.flags & CS_FLAG_WARP_READS) ? S.nwarps : 0u; }
CS_DEV uint32_t cs_vsh_nbulk() { return (S.flags & CS_FLAG_BULK_STORES) ? S.nwarps : 0u; }
CS_DEV uint32_t cs_vsh_reader_tid(uint32_t ri) {
    uint32_t nw = cs_vsh_nwr(), nb = cs_vsh_nbulk();
    return ri < nw ? ri : ri < nw + nb ? CS_AGENT_BULK + ri - nw : CS_AGENT_WGMMA + ri - nw - nb;
}
CS_DEV uint32_t cs_vsh_ri_bulk(uint32_t w) { return cs_vsh_nwr() + w; }
CS_DEV uint32_t cs_vsh_ri_wgmma(uint32_t u) { return cs_vsh_nwr() + cs_vsh_nbulk() + u; }

// The clock a reader reads with now: the newest its bytes can stand for.
CS_DEV uint32_t cs_vsh_reader_now(uint32_t ri) {
    uint32_t t = cs_vsh_reader_tid(ri);
    if (t < CS_MAX_WARPS) return *(volatile uint32_t*)&cs_clock_sh[t];
    if (t < CS_AGENT_WGMMA) return cs_commits_sh(CS_UNIT_BULK, t - CS_AGENT_BULK) + 1;
    uint32_t u = t - CS_AGENT_WGMMA, m = 0;
    for (uint32_t q = 4 * u; q < 4 * u + 4 && q < S.nwarps; ++q) {
        uint32_t c = cs_commits_sh(CS_UNIT_WGMMA, q);
        m = c > m ? c : m;
    }
    return m + 1;
}

CS_DEV uint32_t cs_vsh_byte(uint32_t c) { return c % 255u + 1u; }
// The clock byte b stands for: the latest c <= hi with c % 255 + 1 == b (exact while the
// read is fewer than 255 of its reader's clock ticks old).
CS_DEV uint32_t cs_vsh_unbyte(uint32_t b, uint32_t hi) {
    uint32_t d = (hi % 255u + 255u - (b - 1u)) % 255u;
    return hi >= d ? hi - d : 0u;
}
CS_DEV uint32_t cs_vw(uint32_t t, uint32_t clk, uint32_t flags) {
    return flags | (t << CS_VW_TID_SHIFT) | (clk & CS_VW_CLOCK_MASK);
}
CS_DEV uint32_t cs_vw_t(uint32_t e) { return (e >> CS_VW_TID_SHIFT) & 0x7Fu; }
CS_DEV uint32_t cs_vw_c(uint32_t e) { return e & CS_VW_CLOCK_MASK; }

// A clock past 23 bits cannot be kept in a write epoch: say so.
CS_DEV bool cs_vsh_clock_fits(uint32_t clk, uint32_t site) {
    if (clk <= CS_VW_CLOCK_MASK) return true;
    cs_record(cs_blank(CS_TOOL_CLOCK_OVERFLOW, site));
    return false;
}

// Block b's word, once no lane is giving its granules their epochs back.
CS_DEV uint32_t cs_vsh_bt(const cs_vctx& x, uint32_t b) {
    uint32_t bt;
    while ((bt = cs_s_ld(x.BT + 4u * b)) == CS_BT_LOCKED) {}
    return bt;
}

// Before single granules of block b are written: if a copy holds the block whole, its
// epoch and site go back to the block's granules (one lane; the others wait).
CS_DEV void cs_vsh_claim(const cs_vctx& x, uint32_t b) {
    cs_sp p = x.BT + 4u * b;
    for (;;) {
        uint32_t bt = cs_vsh_bt(x, b);
        if (bt == 0) return;
        if (cs_s_cas(p, bt, CS_BT_LOCKED) != bt) continue;
        uint32_t e = bt & ~CS_BT_WHOLE, s = cs_ld32(cs_vsh_bsite(x, b));
        for (uint32_t i = 0; i < CS_VSH_B; i += 4) {
            cs_s_st4(x.W + 4u * (b * CS_VSH_B + i), cs_u4{e, e, e, e});
            cs_g_st4(x.ws + b * CS_VSH_B + i, s);
        }
        cs_fence();
        cs_s_st(p, 0);
        return;
    }
}

// Reader ri's summary word of block b, and its 32 bytes there (emptied in two stores).
CS_DEV cs_sp cs_vsh_rsp(const cs_vctx& x, uint32_t b, uint32_t ri) {
    return x.RS + 4u * (b * x.rss + ri);
}
CS_DEV cs_sp cs_vsh_row(const cs_vctx& x, uint32_t b, uint32_t ri) {
    return x.R + ri * x.gp + b * CS_VSH_B;
}
CS_DEV void cs_vsh_empty(cs_sp r) {
    static_assert(CS_VSH_B == 32, "a reader's bytes of a block: two 16-byte stores");
    cs_s_st4(r, cs_u4{0, 0, 0, 0});
    cs_s_st4(r + 16, cs_u4{0, 0, 0, 0});
}

// Before reader ri's bytes go into block b: a summary of 0 (no read since the block was
// written whole) leaves stale bytes, which the first read to raise it empties.
// A row one warp owns (its reads; its bulk-store unit's): the lane whose compare-and-swap
// raises the summary from 0 empties the bytes, as part of raising it (the warp's lanes
// reconverge before they put their bytes).
CS_DEV void cs_vsh_raise(const cs_vctx& x, uint32_t b, uint32_t ri, uint32_t clk) {
    // (a load first: lanes of a warp reading one block would serialize on an atomic)
    cs_sp p = cs_vsh_rsp(x, b, ri);
    uint32_t v = cs_s_ld(p);
    if (v == 0) v = cs_s_cas(p, 0, clk);
    if (v == 0) {
        cs_vsh_empty(cs_vsh_row(x, b, ri));
    } else if (v < clk) {
        cs_s_max(p, clk);
    }
}
// A wgmma unit's row, which four warps publish into at once: one lane at a time empties
// the bytes (ZEROING meanwhile; the others wait), then sets the summary to 1 (bytes valid,
// no read yet); one lane per summary word among the warp's lanes here (a lane spinning on
// its own warp's lane stalls the warp). cs_vsh_fresh returns the summary, to be raised
// after the bytes.
// A writer that finds a summary ZEROING takes it for an unordered read: it can see one only
// while a wgmma unit publishes its first read of the block since it was written whole,
// which no synchronisation orders against this write (a race: the reader sees the write
// too, after its fence).
#define CS_RS_ZEROING 0xFFFFFFFFu
CS_NOINLINE void cs_vsh_freshen(cs_sp p, cs_sp r) {
    uint32_t same = cs_match(cs_activemask(), p);
    if (cs_lane() == (uint32_t)cs_ffs(same) - 1) {
        uint32_t v = cs_s_ld(p);
        while (v == 0 || v == CS_RS_ZEROING) {
            if (v == 0 && cs_s_cas(p, 0, CS_RS_ZEROING) == 0) {
                cs_vsh_empty(r);
                cs_fence_lock();  // the bytes empty before the summary says so
                cs_s_st(p, 1);
                break;
            }
            v = cs_s_ld(p);
        }
    }
    cs_syncwarp(same);
    cs_fence_lock();
}
CS_DEV uint32_t cs_vsh_fresh(const cs_vctx& x, uint32_t b, uint32_t ri) {
    cs_sp p = cs_vsh_rsp(x, b, ri);
    uint32_t v = cs_s_ld(p);
    if (v != 0 && v != CS_RS_ZEROING) return v;
    cs_vsh_freshen(p, cs_vsh_row(x, b, ri));
    return 1;  // (or more: the caller raises it with a max)
}
// Raise reader ri's summary of block b to clk.
CS_DEV void cs_vsh_note(const cs_vctx& x, uint32_t b, uint32_t ri, uint32_t clk) {
    // (each lane: a warp-wide vote to pick one lane cost more than the few lanes of a
    // block that find the summary behind and raise it)
    cs_sp p = cs_vsh_rsp(x, b, ri);
    if (cs_s_ld(p) < clk) cs_s_max(p, clk);
}

// Publish reader ri's reads of granules [g0, g1] at clock clk: its bytes, its sites, the
// blocks' summaries (the caller fences, then looks at the writes: Dekker with the writer).
// A granule read again at the same clock keeps the site of the first read, as the
// device-memory tables do.
// One reader byte (R + g) and its site, or four aligned ones at once; a byte that already
// holds this clock keeps its site.
CS_DEV void cs_vsh_put1(cs_sp R, uint32_t* rs, uint32_t g, uint32_t c8, uint32_t site) {
    if (cs_s_ld8(R + g) == c8) return;
    cs_s_st8(R + g, c8);
    cs_g_st(rs + g, site);
}
// (The sites of the bytes of `old` not at this clock: rare, so out of line.)
CS_NOINLINE void cs_vsh_put_sites(uint32_t* rs, uint32_t g, uint32_t c8, uint32_t site,
                                  uint32_t old) {
    for (uint32_t i = 0; i < 4; ++i)
        if (((old >> (8 * i)) & 0xFFu) != c8) cs_g_st(rs + g + i, site);
}
CS_DEV void cs_vsh_put4(cs_sp R, uint32_t* rs, uint32_t g, uint32_t c8, uint32_t site,
                        uint32_t old) {  // old: the word at R + g
    uint32_t c32 = c8 * 0x01010101u;
    if (old == c32) return;
    cs_s_st(R + g, c32);
    if (old == 0) cs_g_st4(rs + g, site);
    else cs_vsh_put_sites(rs, g, c8, site, old);
}

CS_DEV void cs_vsh_publish(const cs_vctx& x, uint32_t ri, uint32_t clk, uint32_t g0, uint32_t g1,
                           uint32_t site, bool unit) {  // unit: ri is a wgmma unit's row
    cs_sp R = x.R + ri * x.gp;
    uint32_t* rs = x.rsite + ri * x.gp;
    uint32_t c8 = cs_vsh_byte(clk);
    if ((g0 & 3u) == 0 && g1 == g0 + 3) {  // an aligned 16-byte chunk (ldmatrix, v4, wgmma)
        uint32_t b = g0 / CS_VSH_B;
        cs_sp p = cs_vsh_rsp(x, b, ri);
        uint32_t v = cs_s_ld(p), old = cs_s_ld(R + g0);  // (both loads in flight at once)
        if (v == 0 || v == CS_RS_ZEROING) {  // stale bytes: emptied first
            if (unit) cs_vsh_fresh(x, b, ri);
            else cs_vsh_raise(x, b, ri, clk);
            old = cs_s_ld(R + g0);
            v = unit ? 1u : clk;
        }
        cs_vsh_put4(R, rs, g0, c8, site, old);
        if (v < clk) cs_s_max(p, clk);
        return;
    }
    for (uint32_t b = g0 / CS_VSH_B; b <= g1 / CS_VSH_B; ++b) {
        if (unit) cs_vsh_fresh(x, b, ri);
        else cs_vsh_raise(x, b, ri, clk);
    }
    for (uint32_t g = g0; g <= g1;) {
        if ((g & 3u) == 0 && g + 3 <= g1) {
            cs_vsh_put4(R, rs, g, c8, site, cs_s_ld(R + g));
            g += 4;
        } else {
            cs_vsh_put1(R, rs, g, c8, site);
            g += 1;
        }
    }
    for (uint32_t b = g0 / CS_VSH_B; unit && b <= g1 / CS_VSH_B; ++b) cs_vsh_note(x, b, ri, clk);
}

#define CS_PROXY_NONE 0u   // a warp's read through the generic proxy
#define CS_PROXY_BULK 1u   // a bulk-store unit's read: the writer's fence column
#define CS_PROXY_WGMMA 2u  // a wgmma unit's read: the writer's fence word

// Write epoch e (its site at *ws) as a reader issued by warp x.w sees it.
CS_DEV cs_finding cs_vsh_judge_read(const cs_vctx& x, uint32_t e, const uint32_t* ws,
                                    uint32_t proxy) {
    if (e == 0) return {CS_UNINIT_READ, CS_NO_SITE, CS_NO_WARP};
    uint32_t t = cs_vw_t(e), c = cs_vw_c(e);
    if (e & CS_VW_MBAR) return {CS_MBARRIER_DATA_ACCESS, cs_ld32(ws), t};
    if (!cs_ordered(x.mine, x.w, t, c))
        return {t >= CS_AGENT_CPASYNC ? CS_ASYNC_PENDING_WRITE : CS_RACE_RAW, cs_ld32(ws), t};
    if (proxy != CS_PROXY_NONE && t < CS_MAX_WARPS) {
        uint32_t fenced = proxy == CS_PROXY_BULK ? x.mine[CS_AGENT_PROXY + t]
                                                 : cs_ld32(&cs_cta(x.slot)[CS_CTA_PROXY_FENCE + t]);
        if (fenced < c) return {CS_PROXY_MISSING_FENCE, cs_ld32(ws), t};
    }
    return {0, CS_NO_SITE, CS_NO_WARP};
}

// Look at the write epochs of granules [g0, g1] for a reader (after publishing its reads):
// the first finding, and the granule it is at. `ok` carries an epoch already judged clean.
CS_DEV cs_finding cs_vsh_look(const cs_vctx& x, uint32_t g0, uint32_t g1, uint32_t proxy,
                              uint32_t& ok, uint32_t& at) {
    if ((g0 & 3u) == 0 && g1 == g0 + 3) {  // an aligned 16-byte chunk: one block
        // (the block's word and the four epochs loaded together: the accesses of a warp
        // wait on shared memory more than on anything else)
        uint32_t b = g0 / CS_VSH_B, bt = cs_s_ld(x.BT + 4u * b);
        cs_u4 v = cs_s_ld4(x.W + 4u * g0);
        if (bt == CS_BT_LOCKED) {  // a lane is giving the block's granules their epochs
            bt = cs_vsh_bt(x, b);
            v = cs_s_ld4(x.W + 4u * g0);
        }
        uint32_t e = bt & ~CS_BT_WHOLE;
        const uint32_t* ws = cs_vsh_bsite(x, b);
        bool one = bt != 0;
        if (!bt) {  // one epoch for the four granules (one write wrote them): judged once
            one = v.x == v.y && v.y == v.z && v.z == v.w;
            e = v.x;
            ws = x.ws + g0;
        }
        if (one) {
            if (e == ok) return {0, CS_NO_SITE, CS_NO_WARP};
            cs_finding f = cs_vsh_judge_read(x, e, ws, proxy);
            if (f.kind) at = g0;
            else ok = e;
            return f;
        }
    }
    for (uint32_t b = g0 / CS_VSH_B; b <= g1 / CS_VSH_B; ++b) {
        uint32_t a = b * CS_VSH_B > g0 ? b * CS_VSH_B : g0;
        uint32_t z = b * CS_VSH_B + CS_VSH_B - 1 < g1 ? b * CS_VSH_B + CS_VSH_B - 1 : g1;
        uint32_t bt = cs_vsh_bt(x, b);
        if (bt) {  // a copy wrote the block whole: its epoch stands for every granule
            uint32_t e = bt & ~CS_BT_WHOLE;
            if (e == ok) continue;
            cs_finding f = cs_vsh_judge_read(x, e, cs_vsh_bsite(x, b), proxy);
            if (f.kind) {
                at = a;
                return f;
            }
            ok = e;
            continue;
        }
        for (uint32_t g = a; g <= z;) {
            if ((g & 3u) == 0 && g + 3 <= z) {
                cs_u4 e = cs_s_ld4(x.W + 4u * g);
                if (e.x == ok && e.y == ok && e.z == ok && e.w == ok) {
                    g += 4;
                    continue;
                }
            }
            uint32_t e = cs_s_ld(x.W + 4u * g);
            if (e != ok) {
                cs_finding f = cs_vsh_judge_read(x, e, x.ws + g, proxy);
                if (f.kind) {
                    at = g;
                    return f;
                }
                ok = e;
            }
            g += 1;
        }
    }
    return {0, CS_NO_SITE, CS_NO_WARP};
}

// Accesses of one lane: n spans of `size` bytes at off, off + stride, ... (table offsets).
struct cs_vsh_span { uint32_t off, size, stride, n; };
CS_DEV uint32_t cs_span_g0(const cs_vsh_span& s, uint32_t k) { return (s.off + k * s.stride) / CS_GRANULE_BYTES; }
CS_DEV uint32_t cs_span_g1(const cs_vsh_span& s, uint32_t k) {
    return (s.off + k * s.stride + s.size - 1) / CS_GRANULE_BYTES;
}

// Spans of one granule each (an unrolled loop of scalar loads: a strided probe), four at a
// time so their loads are in flight together. When every lane's k-th span lies in the
// first lane's k-th block (the warp reads along a row of blocks), the blocks' summaries
// are raised one per lane, not once per span by a warp-wide vote.
#define CS_VSH_BATCH 4
CS_DEV void cs_vsh_read_granules(const cs_vctx& x, const cs_vsh_span& s, uint32_t site,
                                 uint32_t clk, cs_finding& f, uint32_t& fk) {
    cs_sp R = x.R + x.w * x.gp;
    uint32_t* rs = x.rsite + x.w * x.gp;
    const uint32_t c8 = cs_vsh_byte(clk), bb = 4u * CS_VSH_B;  // bb: bytes per block
    uint32_t m = cs_activemask(), lead = cs_ffs(m) - 1;
    bool row = s.stride % bb == 0 && cs_all(m, cs_bcast(m, s.off / bb, (int)lead) == s.off / bb);
    uint32_t rank = cs_popc(m & ((1u << cs_lane()) - 1u)), lanes = cs_popc(m);
    // Whole rows: all 32 lanes, lane i at granule i of one block per k (a coalesced read
    // of 128 bytes a row): lane r publishes and judges rows r, r + 32, ... whole, where
    // every lane went through every row.
    uint32_t off0 = cs_bcast(m, s.off, (int)lead);
    bool whole = row && m == 0xFFFFFFFFu && off0 % bb == 0 &&
                 cs_all(m, s.off == off0 + 4u * cs_lane());
    if (row) {  // the blocks' summaries raised, one lane per block, before any lane's byte
        for (uint32_t k = rank; k < s.n; k += lanes) cs_vsh_raise(x, s.off / bb + k * (s.stride / bb), x.w, clk);
        cs_syncwarp(m);
    }
    if (whole) {
        const uint32_t c4 = c8 * 0x01010101u;
        for (uint32_t k = rank; k < s.n; k += lanes) {
            uint32_t g0 = (off0 + k * s.stride) / CS_GRANULE_BYTES;
            // The row's first read at this clock (no granule read at it yet), the common
            // case: every byte and site stored, no branch per word (ring: the branches of
            // the word-by-word form were a third of the consumers' read probe).
            static_assert(CS_VSH_B == 32, "a row is two 16-byte words of reader bytes");
            cs_u4 v0 = cs_s_ld4(R + g0), v1 = cs_s_ld4(R + g0 + 16);
            const uint32_t row[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
            uint32_t seen = 0;
#pragma unroll
            for (uint32_t i = 0; i < 8; ++i) {
                uint32_t d = row[i] ^ c4;
                seen |= (d - 0x01010101u) & ~d & 0x80808080u;  // a byte at this clock
            }
            if (seen == 0) {
                const cs_u4 all = {c4, c4, c4, c4};
                cs_s_st4(R + g0, all);
                cs_s_st4(R + g0 + 16, all);
#pragma unroll
                for (uint32_t i = 0; i < 8; ++i) cs_g_st4(rs + g0 + 4 * i, site);
                continue;
            }
#pragma unroll
            for (uint32_t i = 0; i < 8; ++i) {  // else word by word (four granules each)
                uint32_t g = g0 + 4 * i, d = row[i] ^ c4;
                if (d == 0) continue;  // read at this clock already: its site stays
                if (!((d - 0x01010101u) & ~d & 0x80808080u)) {  // no byte at this clock
                    cs_s_st(R + g, c4);
                    cs_g_st4(rs + g, site);
                    continue;
                }
                for (uint32_t j = 0; j < 4; ++j) {
                    if (((row[i] >> (8 * j)) & 0xFFu) == c8) continue;
                    cs_s_st8(R + g + j, c8);
                    cs_g_st(rs + g + j, site);
                }
            }
        }
    }
    for (uint32_t k0 = 0; k0 < s.n && !whole; k0 += CS_VSH_BATCH) {
        uint32_t g[CS_VSH_BATCH], b8[CS_VSH_BATCH];
#pragma unroll
        for (uint32_t i = 0; i < CS_VSH_BATCH; ++i) {
            g[i] = (s.off + (k0 + i < s.n ? k0 + i : k0) * s.stride) / CS_GRANULE_BYTES;
            if (!row) cs_vsh_raise(x, g[i] / CS_VSH_B, x.w, clk);
            b8[i] = cs_s_ld8(R + g[i]);
        }
#pragma unroll
        for (uint32_t i = 0; i < CS_VSH_BATCH; ++i) {
            if (k0 + i >= s.n || b8[i] == c8) continue;
            cs_s_st8(R + g[i], c8);
            cs_g_st(rs + g[i], site);
        }
    }
    cs_fence();  // publish the reads, then look at the writes (Dekker with the writer)
    uint32_t ok = 0xFFFFFFFFu;
    if (whole) {  // rows held whole by one epoch (a copy's) judged once each, by one lane
        bool held = true;
        uint32_t bad = 0xFFFFFFFFu;
        cs_finding y = {0, CS_NO_SITE, CS_NO_WARP};
        for (uint32_t k = rank; k < s.n; k += lanes) {
            uint32_t b = (off0 + k * s.stride) / bb, bt = cs_s_ld(x.BT + 4u * b);
            if (bt == 0 || bt == CS_BT_LOCKED) {  // epochs by granule, or being given them
                held = false;
                break;
            }
            uint32_t ep = bt & ~CS_BT_WHOLE;
            if (ep == ok) continue;
            y = cs_vsh_judge_read(x, ep, cs_vsh_bsite(x, b), CS_PROXY_NONE);
            if (y.kind) {
                bad = k;
                break;
            }
            ok = ep;
        }
        if (cs_all(m, held)) {  // every row before the first bad one was looked at: clean
            uint32_t first = cs_min(m, bad);
            if (first != 0xFFFFFFFFu) {
                int src = cs_ffs(cs_ballot(m, bad == first)) - 1;
                f = {cs_bcast(m, y.kind, src), cs_bcast(m, y.prev_site, src),
                     cs_bcast(m, y.prev_warp, src)};
                fk = first;
            }
            return;
        }
        ok = 0xFFFFFFFFu;
    }
    for (uint32_t k0 = 0; k0 < s.n; k0 += CS_VSH_BATCH) {
        uint32_t g[CS_VSH_BATCH], bt[CS_VSH_BATCH], e[CS_VSH_BATCH];
#pragma unroll
        for (uint32_t i = 0; i < CS_VSH_BATCH; ++i) {
            g[i] = (s.off + (k0 + i < s.n ? k0 + i : k0) * s.stride) / CS_GRANULE_BYTES;
            bt[i] = cs_s_ld(x.BT + 4u * (g[i] / CS_VSH_B));
            e[i] = cs_s_ld(x.W + 4u * g[i]);
        }
#pragma unroll
        for (uint32_t i = 0; i < CS_VSH_BATCH; ++i) {
            if (k0 + i >= s.n) break;
            if (bt[i] == CS_BT_LOCKED) {  // a lane is giving the block's granules their epochs
                bt[i] = cs_vsh_bt(x, g[i] / CS_VSH_B);
                e[i] = cs_s_ld(x.W + 4u * g[i]);
            }
            uint32_t ep = bt[i] ? bt[i] & ~CS_BT_WHOLE : e[i];
            if (ep == ok) continue;
            f = cs_vsh_judge_read(x, ep, bt[i] ? cs_vsh_bsite(x, g[i] / CS_VSH_B) : x.ws + g[i],
                                  CS_PROXY_NONE);
            if (f.kind) {
                fk = k0 + i;
                return;
            }
            ok = ep;
        }
    }
}

// A warp's reads (each lane its spans): publish them all, one fence, then the writes.
// Spans of one granule each (an unrolled loop of scalar loads) take a short path.
CS_DEV void cs_vsh_read(const cs_vctx& x, const cs_vsh_span& s, uint32_t site, cs_finding& f,
                        uint32_t& fk) {
    uint32_t clk = cs_clock_sh[x.w], ok = 0xFFFFFFFFu, at;
    if ((s.off & 3u) + s.size <= 4u && (s.stride & 3u) == 0) {
        cs_vsh_read_granules(x, s, site, clk, f, fk);
        return;
    }
    for (uint32_t k = 0; k < s.n; ++k) cs_vsh_publish(x, x.w, clk, cs_span_g0(s, k), cs_span_g1(s, k), site, false);
    cs_fence();
    for (uint32_t k = 0; k < s.n && !f.kind; ++k) {
        f = cs_vsh_look(x, cs_span_g0(s, k), cs_span_g1(s, k), CS_PROXY_NONE, ok, at);
        fk = k;
    }
}

// The clocks, in warp x.w's view, of the readers a probe keeps in registers (its own
// reads are ordered: all ones).
struct cs_vsh_vcr { uint32_t c[CS_VSH_FASTR]; };
CS_DEV uint32_t cs_vsh_vc1(const cs_vctx& x, uint32_t ri) {
    uint32_t word = ri < 4 ? x.rtid[0] : x.rtid[1];  // (constant indices: x stays in registers)
    uint32_t t = ri < CS_VSH_FASTR ? (word >> (8 * (ri % 4))) & 0xFFu : cs_vsh_reader_tid(ri);
    return ri >= x.nr || t == x.w ? 0xFFFFFFFFu : x.mine[t];
}
CS_DEV cs_vsh_vcr cs_vsh_reader_clocks(const cs_vctx& x) {
    cs_vsh_vcr q;
#pragma unroll
    for (uint32_t ri = 0; ri < CS_VSH_FASTR; ++ri) q.c[ri] = cs_vsh_vc1(x, ri);
    return q;
}
// Reader ri's clock: from q where the caller has them (copies), else looked up (an access
// probe needs it only where a block's summary names the reader).
CS_DEV uint32_t cs_vsh_vc(const cs_vctx& x, const cs_vsh_vcr* q, uint32_t ri) {
    return q && ri < CS_VSH_FASTR ? q->c[ri] : cs_vsh_vc1(x, ri);
}

// The bytes of granule g, one reader at a time (in the device-memory tables' order:
// wgmma units, warps, bulk-store units): the first read not ordered before warp x.w.
// Only readers `seen` (bit ri: its summary of the block is not 0, so its bytes are not
// stale; readers past 32 by their summary).
CS_DEV void cs_vsh_check_readers(const cs_vctx& x, uint32_t g, uint32_t seen, cs_finding& f) {
    uint32_t nw = cs_vsh_nwr(), nb = cs_vsh_nbulk(), nwg = x.nr - nw - nb;
    for (uint32_t j = 0; j < x.nr && !f.kind; ++j) {
        uint32_t ri = j < nwg ? nw + nb + j : j - nwg;
        if (ri < 32 ? !((seen >> ri) & 1u)
                    : !cs_s_ld(cs_vsh_rsp(x, g / CS_VSH_B, ri)))
            continue;
        uint32_t b8 = cs_s_ld8(x.R + ri * x.gp + g), t = cs_vsh_reader_tid(ri);
        if (!b8 || t == x.w) continue;
        uint32_t c = cs_vsh_unbyte(b8, cs_vsh_reader_now(ri));
        if (!cs_ordered(x.mine, x.w, t, c))
            f = {t < CS_MAX_WARPS ? CS_RACE_WAR : CS_ASYNC_PENDING_READ,
                 cs_ld32(x.rsite + ri * x.gp + g), t};
    }
}

// Granules [a, z]'s readers judged one by one (a summary said some read may be unordered):
// out of line, so the common path keeps no registers for it.
struct cs_found { cs_finding f; uint32_t at; };
CS_NOINLINE cs_found cs_vsh_late_readers(uint32_t slot, uint32_t w, const uint32_t* mine, cs_sp R,
                                         cs_sp RS, uint32_t* rsite, uint32_t gp, uint32_t nr,
                                         uint32_t rss, uint32_t seen, uint32_t a, uint32_t z) {
    cs_vctx x;
    x.slot = slot, x.w = w, x.mine = mine, x.R = R, x.RS = RS, x.rsite = rsite, x.gp = gp;
    x.nr = nr, x.rss = rss;
    cs_found r = {{0, CS_NO_SITE, CS_NO_WARP}, 0};
    for (uint32_t g = a; g <= z && !r.f.kind; ++g) {
        cs_vsh_check_readers(x, g, seen, r.f);
        r.at = g;
    }
    return r;
}

CS_DEV void cs_vsh_zero(cs_sp R, uint32_t a, uint32_t z) {  // bytes a..z of a reader's row
    if ((a & 3u) == 0 && z == a + 3) return cs_s_st(R + a, 0);  // an aligned 16-byte write
    for (uint32_t g = a; g <= z;) {
        if ((g & 15u) == 0 && g + 15 <= z) {
            cs_s_st4(R + g, cs_u4{0, 0, 0, 0});
            g += 16;
        } else if ((g & 3u) == 0 && g + 3 <= z) {
            cs_s_st(R + g, 0);
            g += 4;
        } else {
            cs_s_st8(R + g, 0);
            g += 1;
        }
    }
}

// An aligned 16-byte write at granule a: the bytes of readers `seen` (up to four) there are
// emptied, a word each (the write supersedes the reads).
CS_DEV void cs_vsh_empty16(const cs_vctx& x, uint32_t a, uint32_t seen) {
    if (seen & 1u) cs_s_st(x.R + a, 0);
    if (seen & 2u) cs_s_st(x.R + x.gp + a, 0);
    if (seen & 4u) cs_s_st(x.R + 2 * x.gp + a, 0);
    if (seen & 8u) cs_s_st(x.R + 3 * x.gp + a, 0);
}

// Granules [a, z] of block b were written (epochs published and fenced): judge their
// readers -- by the block's summary, or byte by byte where it says some read may be
// unordered -- then empty their bytes (the write supersedes the reads); a block written
// whole empties its summary too.
CS_DEV void cs_vsh_block_readers(const cs_vctx& x, const cs_vsh_vcr* q, uint32_t b, uint32_t a,
                                 uint32_t z, cs_finding& f, uint32_t& at) {
    bool whole = z - a == CS_VSH_B - 1;
    cs_sp rs = x.RS + 4u * b * x.rss;
    uint32_t seen = 0;  // readers with bytes in the block (the first 32 reader indices)
    bool late = false;
    if (x.nr <= 4) {  // the summary in one load
        cs_u4 v = cs_s_ld4(rs);
        seen = (v.x ? 1u : 0u) | (v.y ? 2u : 0u) | (v.z ? 4u : 0u) | (v.w ? 8u : 0u);
        if (!seen) return;
        late = (v.x && v.x > cs_vsh_vc(x, q, 0)) || (v.y && v.y > cs_vsh_vc(x, q, 1)) ||
               (v.z && v.z > cs_vsh_vc(x, q, 2)) || (v.w && v.w > cs_vsh_vc(x, q, 3));
    } else {
        for (uint32_t ri = 0; ri < x.nr; ++ri) {
            uint32_t c = cs_s_ld(rs + 4u * ri);
            if (!c) continue;
            seen |= ri < 32 ? 1u << ri : 0u;
            late = late || c > cs_vsh_vc(x, q, ri) || ri >= 32;
        }
    }
    if (!seen && !late) return;
    if (late && !f.kind) {
        cs_found r = cs_vsh_late_readers(x.slot, x.w, x.mine, x.R, x.RS, x.rsite, x.gp, x.nr,
                                         x.rss, seen, a, z);
        if (r.f.kind) f = r.f, at = r.at;
    }
    if (x.nr <= 4 && (a & 3u) == 0 && z == a + 3) return cs_vsh_empty16(x, a, seen);
    for (uint32_t ri = 0; ri < x.nr; ++ri) {
        if (ri < 32 && !(seen & (1u << ri))) continue;
        if (!whole) {
            cs_vsh_zero(x.R + ri * x.gp, a, z);
        } else if (ri >= cs_vsh_nwr() + cs_vsh_nbulk()) {
            // a wgmma unit's row, which its four warps would otherwise empty at their next
            // read, one of them spinning on the other (cs_vsh_freshen): emptied here, and
            // the summary says so (1: bytes valid, no read yet)
            cs_vsh_empty(cs_vsh_row(x, b, ri));
            cs_fence_lock();
            cs_s_st(rs + 4u * ri, 1);
        } else {
            cs_s_st(rs + 4u * ri, 0);  // (the bytes go stale: cs_vsh_fresh)
        }
    }
}

CS_DEV void cs_vsh_readers(const cs_vctx& x, const cs_vsh_vcr* q, uint32_t g0, uint32_t g1,
                           cs_finding& f, uint32_t& at) {
    for (uint32_t b = g0 / CS_VSH_B; b <= g1 / CS_VSH_B; ++b) {
        uint32_t a = b * CS_VSH_B > g0 ? b * CS_VSH_B : g0;
        uint32_t z = b * CS_VSH_B + CS_VSH_B - 1 < g1 ? b * CS_VSH_B + CS_VSH_B - 1 : g1;
        cs_vsh_block_readers(x, q, b, a, z, f, at);
    }
}

// Of a write's finding on an epoch (fw, at span kw, granule aw) and on a reader (fr, kr,
// ar): the one at the earlier granule, the epoch's at the same one -- the order in which
// the device-memory tables judge a write granule by granule.
CS_DEV cs_finding cs_vsh_first(const cs_finding& fw, uint32_t kw, uint32_t aw,
                               const cs_finding& fr, uint32_t kr, uint32_t ar, uint32_t& k) {
    bool epoch = fw.kind && (!fr.kind || kw < kr || (kw == kr && aw <= ar));
    k = epoch ? kw : kr;
    return epoch ? fw : fr;
}

// The epoch a write by `by` (warp x.w or one of its agents) replaces: a finding?
CS_DEV cs_finding cs_vsh_judge_write(const cs_vctx& x, uint32_t old, const uint32_t* ws,
                                     bool atomic, uint32_t by) {
    uint32_t t = cs_vw_t(old);
    if (old & CS_VW_MBAR) return {CS_MBARRIER_DATA_ACCESS, cs_ld32(ws), t};
    if (old == 0)  // an atomic reads the old value
        return {atomic ? CS_UNINIT_READ : 0u, CS_NO_SITE, CS_NO_WARP};
    if (cs_own_write(t, by) || (atomic && (old & CS_VW_ATOMIC)) ||
        cs_ordered(x.mine, x.w, t, cs_vw_c(old)))
        return {0, CS_NO_SITE, CS_NO_WARP};
    return {t >= CS_AGENT_CPASYNC ? CS_ASYNC_PENDING_WRITE : CS_RACE_WAW, cs_ld32(ws), t};
}

// Granule g's old epoch `old`, exchanged for `now` by a write: judged, and its site replaced
// (an mbarrier's epoch is put back: the object stays an mbarrier). A granule rewritten by
// `by` at the same clock keeps its site.
CS_DEV void cs_vsh_write_one(const cs_vctx& x, uint32_t g, uint32_t old, uint32_t now,
                             uint32_t site, bool atomic, uint32_t by, cs_finding& f,
                             uint32_t& at) {
    if ((old & ~CS_VW_ATOMIC) == (now & ~CS_VW_ATOMIC)) return;
    cs_finding y = cs_vsh_judge_write(x, old, x.ws + g, atomic, by);
    if (y.kind && !f.kind) f = y, at = g;
    if (old & CS_VW_MBAR) cs_s_st(x.W + 4u * g, old);
    else cs_g_st(x.ws + g, site);
}

// One lane's write of granules [g0, g1] by `by` at clk: exchange the epochs (two unordered
// writers see each other). A granule rewritten by `by` at the same clock keeps its site.
CS_DEV void cs_vsh_write_span(const cs_vctx& x, uint32_t g0, uint32_t g1, uint32_t site,
                              bool atomic, uint32_t by, uint32_t clk, cs_finding& f,
                              uint32_t& at) {
    uint32_t now = cs_vw(by, clk, atomic ? CS_VW_ATOMIC : 0u);
    for (uint32_t b = g0 / CS_VSH_B; b <= g1 / CS_VSH_B; ++b) cs_vsh_claim(x, b);
    if ((g0 & 3u) == 0 && g1 == g0 + 3) {  // an aligned 16-byte chunk (cp.async 16, st.v4)
        uint32_t o[4];
        for (uint32_t i = 0; i < 4; ++i) o[i] = cs_s_xchg(x.W + 4u * (g0 + i), now);
        if (o[0] == o[1] && o[1] == o[2] && o[2] == o[3] && !(o[0] & CS_VW_MBAR)) {
            if ((o[0] & ~CS_VW_ATOMIC) == (now & ~CS_VW_ATOMIC)) return;  // the first sites stay
            cs_finding y = cs_vsh_judge_write(x, o[0], x.ws + g0, atomic, by);
            if (y.kind && !f.kind) f = y, at = g0;
            cs_g_st4(x.ws + g0, site);
            return;
        }
        for (uint32_t i = 0; i < 4; ++i) cs_vsh_write_one(x, g0 + i, o[i], now, site, atomic, by, f, at);
        return;
    }
    for (uint32_t g = g0; g <= g1; ++g)
        cs_vsh_write_one(x, g, cs_s_xchg(x.W + 4u * g, now), now, site, atomic, by, f, at);
}

CS_DEV void cs_vsh_write(const cs_vctx& x, const cs_vsh_span& s, uint32_t site, bool atomic,
                         uint32_t by, uint32_t clk, cs_finding& f, uint32_t& fk) {
    if (!cs_vsh_clock_fits(clk, site)) return;
    cs_finding fw = {0, CS_NO_SITE, CS_NO_WARP}, fr = fw;
    uint32_t aw = 0, ar = 0, kw = 0, kr = 0;
    for (uint32_t k = 0; k < s.n; ++k) {
        bool had = fw.kind != 0;
        cs_vsh_write_span(x, cs_span_g0(s, k), cs_span_g1(s, k), site, atomic, by, clk, fw, aw);
        if (fw.kind && !had) kw = k;
    }
    cs_fence();  // publish the writes, then look at the readers (Dekker with the reader)
    for (uint32_t k = 0; k < s.n; ++k) {
        bool had = fr.kind != 0;
        cs_vsh_readers(x, nullptr, cs_span_g0(s, k), cs_span_g1(s, k), fr, ar);
        if (fr.kind && !had) kr = k;
    }
    if (!f.kind) f = cs_vsh_first(fw, kw, aw, fr, kr, ar, fk);
}

// What a copy's write has found so far: the first finding on an epoch and on a reader,
// with the granule each is at, and an epoch already judged clean.
struct cs_vsh_copy {
    cs_finding fw, fr;
    uint32_t aw, ar, ok;
};

// The epochs of one block [a, z] of a copy's write, in general: whole blocks are taken
// whole (one word) once their old epochs are judged -- one when a copy held the block, else
// 32 of them, four at a time while they equal one judged clean -- others, and blocks with
// an mbarrier in them, granule by granule.
CS_DEV void cs_vsh_copy_block_body(const cs_vctx& x, uint32_t b, uint32_t a, uint32_t z,
                                   uint32_t site, uint32_t by, uint32_t now, cs_vsh_copy& c) {
    bool whole = z - a == CS_VSH_B - 1, held = false;
    while (whole && !held) {
        uint32_t bt = cs_vsh_bt(x, b), mbar = 0;
        if (bt) {  // held whole by a copy: one epoch to judge
            uint32_t e = bt & ~CS_BT_WHOLE;
            if (e != c.ok) {
                cs_finding y = cs_vsh_judge_write(x, e, cs_vsh_bsite(x, b), false, by);
                if (y.kind && !c.fw.kind) c.fw = y, c.aw = a;
                if (!y.kind) c.ok = e;
            }
        } else {
            for (uint32_t g = a; g <= z; g += 4) {
                cs_u4 e = cs_s_ld4(x.W + 4u * g);
                if (e.x == c.ok && e.y == c.ok && e.z == c.ok && e.w == c.ok) continue;
                uint32_t v[4] = {e.x, e.y, e.z, e.w};
                for (uint32_t i = 0; i < 4; ++i) {
                    if (v[i] == c.ok) continue;
                    mbar |= v[i] & CS_VW_MBAR;
                    cs_finding y = cs_vsh_judge_write(x, v[i], x.ws + g + i, false, by);
                    if (y.kind && !c.fw.kind) c.fw = y, c.aw = g + i;
                    if (!y.kind) c.ok = v[i];
                }
            }
        }
        if (mbar) break;  // an mbarrier in the block keeps its own epoch: granules below
        held = cs_s_cas(x.BT + 4u * b, bt, CS_BT_WHOLE | now) == bt;
        if (held) cs_g_st(cs_vsh_bsite(x, b), site);
        else if (c.fw.kind && c.aw >= a) c.fw = {0, CS_NO_SITE, CS_NO_WARP};  // judged again
    }
    if (held) return;
    cs_vsh_claim(x, b);
    for (uint32_t g = a; g <= z; ++g) {
        uint32_t e = cs_s_ld(x.W + 4u * g);
        if (e & CS_VW_MBAR) {  // the object stays an mbarrier
            if (!c.fw.kind) c.fw = {CS_MBARRIER_DATA_ACCESS, cs_ld32(x.ws + g), cs_vw_t(e)}, c.aw = g;
            continue;
        }
        if (e != c.ok && !whole) {
            cs_finding y = cs_vsh_judge_write(x, e, x.ws + g, false, by);
            if (y.kind && !c.fw.kind) c.fw = y, c.aw = g;
        }
        cs_s_st(x.W + 4u * g, now);
        cs_g_st(x.ws + g, site);
    }
}

CS_NOINLINE void cs_vsh_copy_block(const cs_vctx& x, uint32_t b, uint32_t a, uint32_t z,
                                   uint32_t site, uint32_t by, uint32_t now, cs_vsh_copy& c) {
    cs_vsh_copy_block_body(x, b, a, z, site, by, now, c);
}

CS_NOINLINE void cs_vsh_copy_readers(const cs_vctx& x, const cs_vsh_vcr& q, uint32_t b,
                                     uint32_t a, uint32_t z, cs_vsh_copy& c) {
    cs_vsh_block_readers(x, &q, b, a, z, c.fr, c.ar);
}

// The common case of a copy, in loops that keep few values live (no spills): whole blocks
// [b, e) that a copy held whole with the epoch `ok` take the new word (wnow) and site;
// returns the first block that needs more. Plain stores after the look, sixteen blocks at
// a time (their words' loads in flight together: one lane's dependent round trips were
// most of a copy): a lane giving a block's granules their epochs back in between (a
// warp's write racing with this copy) may leave the copy's word unseen (the window of
// cs_vsh_engine).
#define CS_RUN_STEP 16
CS_DEV uint32_t cs_vsh_diff4(cs_u4 v, uint32_t held) {  // 0: all four words are `held`
    return ((v.x ^ held) | (v.y ^ held)) | ((v.z ^ held) | (v.w ^ held));
}
CS_DEV bool cs_vsh_held4(cs_u4 v, uint32_t held) { return cs_vsh_diff4(v, held) == 0; }
CS_NOINLINE uint32_t cs_vsh_copy_run(cs_sp BT, uint32_t* bsite, uint32_t b, uint32_t e,
                                     uint32_t ok, uint32_t wnow, uint32_t site) {
    const uint32_t held = ok ^ CS_BT_WHOLE;  // (never matches a word of 0 or LOCKED)
    const cs_u4 now = {wnow, wnow, wnow, wnow};
    for (; b < e && (b & 3u); ++b) {  // (BT and the sites are 16-byte aligned at b % 4 == 0)
        if (cs_s_ld(BT + 4u * b) != held) return b;
        cs_s_st(BT + 4u * b, wnow);
        cs_g_st(bsite + b, site);
    }
    for (; b + CS_RUN_STEP <= e; b += CS_RUN_STEP) {
        static_assert(CS_RUN_STEP == 16, "a tree of four words' differences");
        cs_u4 v[CS_RUN_STEP / 4];
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN_STEP / 4; ++i) v[i] = cs_s_ld4(BT + 4u * (b + 4 * i));
        // (a tree, not a chain of compares: one lane's dependent instructions were the cost)
        uint32_t d = (cs_vsh_diff4(v[0], held) | cs_vsh_diff4(v[1], held)) |
                     (cs_vsh_diff4(v[2], held) | cs_vsh_diff4(v[3], held));
        if (d) break;
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN_STEP / 4; ++i) {
            cs_s_st4(BT + 4u * (b + 4 * i), now);
            cs_g_st4(bsite + b + 4 * i, site);
        }
    }
    for (; b + 4 <= e; b += 4) {
        if (!cs_vsh_held4(cs_s_ld4(BT + 4u * b), held)) break;
        cs_s_st4(BT + 4u * b, now);
        cs_g_st4(bsite + b, site);
    }
    for (; b < e; ++b) {
        if (cs_s_ld(BT + 4u * b) != held) break;
        cs_s_st(BT + 4u * b, wnow);
        cs_g_st(bsite + b, site);
    }
    return b;
}

// ...and their readers: whole blocks [b, e) whose summary (up to 4 readers, one load) is
// empty or ordered before the copy (clocks q0..q3) get their bytes and summary emptied;
// returns the first block that needs more. Eight summaries in flight at a time.
#define CS_CLEAR_STEP 8
CS_DEV cs_u4 cs_u4_max(cs_u4 a, cs_u4 b) {
    return {a.x > b.x ? a.x : b.x, a.y > b.y ? a.y : b.y, a.z > b.z ? a.z : b.z,
            a.w > b.w ? a.w : b.w};
}
CS_DEV bool cs_vsh_clear_ok(cs_u4 v, uint32_t q0, uint32_t q1, uint32_t q2, uint32_t q3) {
    return !(v.x > q0 || v.y > q1 || v.z > q2 || v.w > q3);
}
CS_NOINLINE uint32_t cs_vsh_copy_clear(cs_sp RS, uint32_t b, uint32_t e, uint32_t q0,
                                       uint32_t q1, uint32_t q2, uint32_t q3) {
    const cs_u4 zero = {0, 0, 0, 0};  // (the readers' bytes go stale: cs_vsh_fresh)
    for (; b + CS_CLEAR_STEP <= e; b += CS_CLEAR_STEP) {
        static_assert(CS_CLEAR_STEP == 8, "a tree of eight summaries' maxima");
        cs_u4 v[CS_CLEAR_STEP];
#pragma unroll
        for (uint32_t i = 0; i < CS_CLEAR_STEP; ++i) v[i] = cs_s_ld4(RS + 16u * (b + i));
        // each reader's latest read over the eight blocks, by a tree of maxima
        cs_u4 m[4];
#pragma unroll
        for (uint32_t i = 0; i < 4; ++i) m[i] = cs_u4_max(v[2 * i], v[2 * i + 1]);
        m[0] = cs_u4_max(cs_u4_max(m[0], m[1]), cs_u4_max(m[2], m[3]));
        if (!cs_vsh_clear_ok(m[0], q0, q1, q2, q3)) break;
#pragma unroll
        for (uint32_t i = 0; i < CS_CLEAR_STEP; ++i) cs_s_st4(RS + 16u * (b + i), zero);
    }
    for (; b < e; ++b) {
        cs_u4 v = cs_s_ld4(RS + 16u * b);
        if (!cs_vsh_clear_ok(v, q0, q1, q2, q3)) break;
        cs_s_st4(RS + 16u * b, zero);
    }
    return b;
}

// A copy engine's write of granules [g0, g1] by `by` at clk, issued by warp w (one lane):
// epochs of every block first (the runs above, anything else block by block), one fence,
// then the readers likewise. Plain stores: a warp's write racing with the copy in the same
// few cycles may go unseen by both.
CS_NOINLINE void cs_vsh_engine(uint32_t slot, uint32_t w, uint32_t g0, uint32_t g1,
                               uint32_t site, uint32_t by, uint32_t clk, cs_finding& f) {
    if (!cs_vsh_clock_fits(clk, site)) return;
    const cs_vctx x = cs_vsh_ctx(slot, w);
    const uint32_t now = cs_vw(by, clk, 0);
    cs_vsh_copy c = {{0, CS_NO_SITE, CS_NO_WARP}, {0, CS_NO_SITE, CS_NO_WARP}, 0, 0, 0xFFFFFFFFu};
    const uint32_t b0 = g0 / CS_VSH_B, b1 = g1 / CS_VSH_B;
    const uint32_t w0 = (g0 + CS_VSH_B - 1) / CS_VSH_B, w1 = (g1 + 1) / CS_VSH_B;  // whole: [w0, w1)
    uint32_t* bsite = cs_vsh_bsite(x, 0);
    {
    CS_PROF(22);
    if (w0 < w1) {  // the word a copy left on the first whole block: judged once, up front
        uint32_t bt = cs_s_ld(x.BT + 4u * w0);
        if (bt != CS_BT_LOCKED && (bt & CS_BT_WHOLE) &&
            !cs_vsh_judge_write(x, bt & ~CS_BT_WHOLE, bsite + w0, false, by).kind)
            c.ok = bt & ~CS_BT_WHOLE;
    }
    for (uint32_t b = b0; b <= b1;) {
        if (b >= w0 && b < w1) {
            uint32_t e = cs_vsh_copy_run(x.BT, bsite, b, w1, c.ok, CS_BT_WHOLE | now, site);
            if (e > b) {
                b = e;
                continue;
            }
        }
        uint32_t a = b * CS_VSH_B > g0 ? b * CS_VSH_B : g0;
        uint32_t z = b * CS_VSH_B + CS_VSH_B - 1 < g1 ? b * CS_VSH_B + CS_VSH_B - 1 : g1;
        cs_vsh_copy_block(x, b, a, z, site, by, now, c);
        ++b;
    }
    }
    cs_vsh_vcr q;
    {
    CS_PROF(23);
    cs_fence();
    q = cs_vsh_reader_clocks(x);
    }
    CS_PROF(24);
    for (uint32_t b = b0; b <= b1;) {
        if (b >= w0 && b < w1 && x.nr <= 4) {
            uint32_t e = cs_vsh_copy_clear(x.RS, b, w1, q.c[0], q.c[1], q.c[2], q.c[3]);
            if (e > b) {
                b = e;
                continue;
            }
        }
        uint32_t a = b * CS_VSH_B > g0 ? b * CS_VSH_B : g0;
        uint32_t z = b * CS_VSH_B + CS_VSH_B - 1 < g1 ? b * CS_VSH_B + CS_VSH_B - 1 : g1;
        cs_vsh_copy_readers(x, q, b, a, z, c);
        ++b;
    }
    uint32_t k;
    if (!f.kind) f = cs_vsh_first(c.fw, 0, c.aw, c.fr, 0, c.ar, k);
}

// The same write by the lanes `lanes` of warp w together (every one calls it, with the
// same arguments): lane r of n takes blocks b0 + r, b0 + r + n, ... -- its epochs, a
// fence, then their readers -- with no call out of line on the way (a call from a branch
// would release the lanes waiting for it: instrument/converge.py). The finding at the
// lowest granule is every lane's.
CS_NOINLINE cs_found cs_vsh_engine_lanes(uint32_t slot, uint32_t w, uint32_t g0, uint32_t g1,
                                         uint32_t site, uint32_t by, uint32_t clk,
                                         uint32_t lanes) {
    cs_found out = {{0, CS_NO_SITE, CS_NO_WARP}, 0};
#ifdef CONSAN_NULL_ENGINE_WRITE  // measurements only: the cost of the box walk
    return out;
#endif
    if (!cs_vsh_clock_fits(clk, site)) return out;
    const cs_vctx x = cs_vsh_ctx(slot, w);
    const uint32_t now = cs_vw(by, clk, 0);
    const uint32_t r = cs_popc(lanes & ((1u << cs_lane()) - 1u)), n = cs_popc(lanes);
    cs_vsh_copy c = {{0, CS_NO_SITE, CS_NO_WARP}, {0, CS_NO_SITE, CS_NO_WARP}, 0, 0, 0xFFFFFFFFu};
    const uint32_t b0 = g0 / CS_VSH_B, b1 = g1 / CS_VSH_B;
    for (uint32_t b = b0 + r; b <= b1; b += n) {
        uint32_t a = b * CS_VSH_B > g0 ? b * CS_VSH_B : g0;
        uint32_t z = b * CS_VSH_B + CS_VSH_B - 1 < g1 ? b * CS_VSH_B + CS_VSH_B - 1 : g1;
        cs_vsh_copy_block_body(x, b, a, z, site, by, now, c);
    }
    cs_fence();  // (each lane looks at the readers of its own blocks)
    cs_vsh_vcr q = cs_vsh_reader_clocks(x);
    for (uint32_t b = b0 + r; b <= b1; b += n) {
        uint32_t a = b * CS_VSH_B > g0 ? b * CS_VSH_B : g0;
        uint32_t z = b * CS_VSH_B + CS_VSH_B - 1 < g1 ? b * CS_VSH_B + CS_VSH_B - 1 : g1;
        cs_vsh_block_readers(x, &q, b, a, z, c.fr, c.ar);
    }
    bool epoch = c.fw.kind && (!c.fr.kind || c.aw <= c.ar);  // (as cs_vsh_first)
    cs_finding f = epoch ? c.fw : c.fr;
    uint32_t at = f.kind ? (epoch ? c.aw : c.ar) : 0xFFFFFFFFu;
    uint32_t low = cs_min(lanes, at);
    if (low == 0xFFFFFFFFu) return out;
    int src = cs_ffs(cs_ballot(lanes, at == low)) - 1;
    out.f = {cs_bcast(lanes, f.kind, src), cs_bcast(lanes, f.prev_site, src),
             cs_bcast(lanes, f.prev_warp, src)};
    out.at = low;
    return out;
}

// An async reader's (bulk-store unit, wgmma unit) reads of granules [g0, g1] at clk for
// warp w: published, fenced, judged like a warp's read plus the proxy rule. The findings
// go to `sink` (distinct ones, with their byte ranges).
#define CS_SINK 16  // distinct (kind, earlier site, earlier warp) kept per operation
struct cs_sink {
    cs_finding f[CS_SINK];
    uint32_t lo[CS_SINK], hi[CS_SINK], n;
};
CS_DEV void cs_sink_add(cs_sink& s, const cs_finding& f, uint32_t lo, uint32_t hi) {
    uint32_t i = 0;
    while (i < s.n && !(s.f[i].kind == f.kind && s.f[i].prev_site == f.prev_site &&
                        s.f[i].prev_warp == f.prev_warp)) ++i;
    if (i == s.n) {
        if (s.n == CS_SINK) return;  // the first ones already tell the story
        s.f[s.n++] = f;
        s.lo[i] = lo;
    }
    s.hi[i] = hi;
}

CS_DEV void cs_vsh_async_read(uint32_t slot, uint32_t w, uint32_t ri, uint32_t clk,
                              uint32_t g0, uint32_t g1, uint32_t site, uint32_t proxy,
                              cs_sink& sink) {
    cs_vctx x = cs_vsh_ctx(slot, w);
    cs_vsh_publish(x, ri, clk, g0, g1, site, false);  // (a bulk-store unit: one warp's)
    cs_fence();
    uint32_t ok = 0xFFFFFFFFu, base = S.vsh_base;
    for (uint32_t g = g0; g <= g1;) {
        uint32_t at = g;
        cs_finding f = cs_vsh_look(x, g, g1, proxy, ok, at);
        if (!f.kind) break;
        cs_sink_add(sink, f, base + at * CS_GRANULE_BYTES, base + (at + 1) * CS_GRANULE_BYTES);
        g = at + 1;
    }
}

// mbarrier init / inval (off: a window offset): the object's granules carry (or lose) the
// mark ordinary accesses are caught by.
CS_DEV void cs_vsh_mark(uint32_t slot, uint32_t off, uint32_t w, uint32_t clk, bool live) {
    if (off < S.vsh_base) return;
    cs_vctx x = cs_vsh_ctx(slot, w);
    off -= S.vsh_base;
    for (uint32_t g = off / CS_GRANULE_BYTES; g < (off + 8) / CS_GRANULE_BYTES && g < x.gp; ++g) {
        cs_vsh_claim(x, g / CS_VSH_B);
        cs_s_st(x.W + 4u * g, cs_vw(w, clk, live ? CS_VW_MBAR : 0u));
    }
}
CS_DEV bool cs_vsh_is_mbar(uint32_t slot, uint32_t g) {  // g: a window granule
    cs_vctx x = cs_vsh_ctx(slot, cs_warp());
    uint32_t b = S.vsh_base / CS_GRANULE_BYTES;
    if (g < b || g - b >= x.gp || cs_vsh_bt(x, (g - b) / CS_VSH_B)) return false;
    return cs_s_ld(x.W + 4u * (g - b)) & CS_VW_MBAR;
}

// The access probe: each lane its own granules; collectives only to name a finding.
CS_DEV void cs_vsh_access(uint64_t addr, uint32_t site, uint32_t info, uint32_t rep) {
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return;
    uint32_t space = (info >> CS_INFO_SPACE_SHIFT) & 3u;
    uint32_t mode = (info >> CS_INFO_MODE_SHIFT) & 3u;
    uint32_t shape = (info >> CS_INFO_SHAPE_SHIFT) & 15u;
    cs_vsh_span s = {0, info & CS_INFO_SIZE_MASK, rep >> CS_REP_STRIDE_SHIFT, rep & CS_REP_COUNT_MASK};
    bool skip = false, remote = false;
    uint32_t off = 0;
    if (space == CS_SPACE_GENERIC) {
        if (!cs_is_shared(addr)) skip = true;
        else if (!cs_local(cs_to_shared(addr), off)) remote = true;
    } else if (!cs_local((uint32_t)addr, off)) {
        remote = true;
    }
    if (shape && cs_lane() >= 8u * shape) skip = true;  // ldmatrix/stmatrix: row-address lanes
    cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
    uint32_t fk = 0, end = off + (s.n - 1) * s.stride + s.size;
    if (remote && !skip) {  // another CTA's shared memory: said, not checked
        f = {CS_TOOL_REMOTE_SMEM, CS_NO_SITE, CS_NO_WARP};
        skip = true;
    } else if (!skip && (s.n == 0 || off < S.vsh_base || end > S.granules * CS_GRANULE_BYTES ||
                         end < off)) {
        f = {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};
        s.n = 1;
    } else if (!skip) {
        uint32_t w = cs_warp();
        cs_vctx x = cs_vsh_ctx(slot, w);
        s.off = off - S.vsh_base;
        if (mode == CS_MODE_READ) {
            cs_vsh_read(x, s, site, f, fk);
        } else {
            uint32_t by = w, clk = cs_clock_sh[w];
            if (mode == CS_MODE_ASYNC_WRITE) {  // the copy unit's clock (__consan_async)
                by = CS_AGENT_CPASYNC + w;
                clk = *(volatile uint32_t*)&cs_cpticks_sh[w] + 1;
            }
            cs_vsh_write(x, s, site, mode == CS_MODE_ATOMIC, by, clk, f, fk);
        }
    }
    uint32_t m = cs_activemask();
    if (!cs_any(m, f.kind != 0)) return;
    uint32_t active = cs_match(m, ((uint64_t)site << 32) | info);
    uint32_t lo = skip ? 0xFFFFFFFFu : off + fk * s.stride;
    cs_record_t r;
    if (cs_merged_record(active, f, site, lo, skip ? 0u : lo + s.size, r)) cs_record(r);
}

// ------------------------------------------------------------- the 16-byte access
//
// A warp whose every lane accesses aligned 16-byte chunks of this CTA's window (ldmatrix
// rows, cp.async 16, v4 loads and stores: all of a cp.async + ldmatrix GEMM's accesses)
// takes a lean copy of cs_vsh_access's rules: the same tables, stores and findings, with
// what is rare (a claim, a first read since a copy, uneven epochs, a late reader, a
// finding) out of line. The general probe's decoding, span loops and vote were half the
// instructions of such an access, and an access is bound by its instruction count.

// Out of line, so the lean body keeps no registers or convergence barriers for them.
CS_NOINLINE void cs_vsh_access_any(uint64_t addr, uint32_t site, uint32_t info, uint32_t rep) {
    cs_vsh_access(addr, site, info, rep);
}
CS_NOINLINE void cs_q_raise(uint32_t slot, uint32_t w, uint32_t b, uint32_t clk) {
    cs_vsh_raise(cs_vsh_ctx(slot, w), b, w, clk);
}
CS_NOINLINE void cs_q_claim(uint32_t slot, uint32_t w, uint32_t b) {
    cs_vsh_claim(cs_vsh_ctx(slot, w), b);
}
CS_NOINLINE cs_finding cs_q_look(uint32_t slot, uint32_t w, uint32_t g, uint32_t proxy) {
    uint32_t ok = 0xFFFFFFFFu, at;
    return cs_vsh_look(cs_vsh_ctx(slot, w), g, g + 3, proxy, ok, at);
}
CS_NOINLINE cs_finding cs_q_judge_read(uint32_t slot, uint32_t w, uint32_t e, const uint32_t* ws,
                                       uint32_t proxy) {
    return cs_vsh_judge_read(cs_vsh_ctx(slot, w), e, ws, proxy);
}
// An exchange of four epochs that were not one: granule by granule, as cs_vsh_write_span.
CS_NOINLINE cs_found cs_q_write4(uint32_t slot, uint32_t w, uint32_t g, uint32_t site,
                                 uint32_t by, uint32_t now, uint32_t o0, uint32_t o1,
                                 uint32_t o2, uint32_t o3) {
    cs_vctx x = cs_vsh_ctx(slot, w);
    const uint32_t o[4] = {o0, o1, o2, o3};
    cs_found r = {{0, CS_NO_SITE, CS_NO_WARP}, 0};
    for (uint32_t i = 0; i < 4; ++i) cs_vsh_write_one(x, g + i, o[i], now, site, false, by, r.f, r.at);
    return r;
}
CS_NOINLINE cs_finding cs_q_judge_write(uint32_t slot, uint32_t w, uint32_t old,
                                        const uint32_t* ws, uint32_t by) {
    return cs_vsh_judge_write(cs_vsh_ctx(slot, w), old, ws, false, by);
}
CS_NOINLINE cs_found cs_q_late(uint32_t slot, uint32_t w, uint32_t seen, uint32_t g) {
    cs_vctx x = cs_vsh_ctx(slot, w);
    return cs_vsh_late_readers(slot, w, x.mine, x.R, x.RS, x.rsite, x.gp, x.nr, x.rss, seen, g,
                               g + 3);
}
CS_NOINLINE void cs_q_report(uint32_t m, cs_finding f, uint32_t site, uint32_t info,
                             uint32_t lo) {
    uint32_t active = cs_match(m, ((uint64_t)site << 32) | info);
    cs_record_t r;
    if (cs_merged_record(active, f, site, lo, f.kind ? lo + 16u : 0u, r)) cs_record(r);
}

// The look at an aligned 16-byte chunk at window granule q, for a read by warp x.w through
// `proxy` (cs_vsh_look's rules for it): its finding, or none; `ok` carries an epoch
// already judged clean. A warp's write read through the async proxy is always judged (its
// proxy fence). Uneven epochs, or a block being given back, are looked at out of line.
CS_DEV cs_finding cs_q_look16(const cs_vctx& x, uint32_t q, uint32_t proxy, uint32_t& ok) {
    const uint32_t b = q / CS_VSH_B, bt = cs_s_ld(x.BT + 4u * b);
    const cs_u4 e4 = cs_s_ld4(x.W + 4u * q);
    if (bt == CS_BT_LOCKED || (!bt && !(e4.x == e4.y && e4.y == e4.z && e4.z == e4.w)))
        return cs_q_look(x.slot, x.w, q, proxy);
    const uint32_t e = bt ? bt & ~CS_BT_WHOLE : e4.x, t = cs_vw_t(e);
    if (e == ok) return {0, CS_NO_SITE, CS_NO_WARP};
    if (e == 0 || (e & CS_VW_MBAR) || (proxy != CS_PROXY_NONE && t < CS_MAX_WARPS) ||
        (t != x.w && x.mine[t] < cs_vw_c(e))) {
        cs_finding f = cs_q_judge_read(x.slot, x.w, e, bt ? cs_vsh_bsite(x, b) : x.ws + q, proxy);
        if (f.kind) return f;
    }
    ok = e;
    return {0, CS_NO_SITE, CS_NO_WARP};
}

// The reads of a lane's n chunks at window granules g, g + step, ...: published, one fence,
// then judged against the write epochs (cs_vsh_read on 16-byte spans).
CS_DEV void cs_q_read(const cs_vctx& x, uint32_t g, uint32_t step, uint32_t n, uint32_t site,
                      cs_finding& f, uint32_t& fk) {
    const uint32_t w = x.w, clk = cs_clock_sh[w], c8 = cs_vsh_byte(clk);
    const uint32_t c32 = c8 * 0x01010101u;
    const cs_sp R = x.R + w * x.gp;
    uint32_t* rs = x.rsite + w * x.gp;
    for (uint32_t k = 0, q = g; k < n; ++k, q += step) {
        uint32_t b = q / CS_VSH_B;
        cs_sp p = x.RS + 4u * (b * x.rss + w);
        uint32_t v = cs_s_ld(p), old = cs_s_ld(R + q);
        if (v == 0 || v == CS_RS_ZEROING) {  // the block's bytes are stale: emptied first
            cs_q_raise(x.slot, w, b, clk);
            old = cs_s_ld(R + q);
            v = clk;
        }
        cs_vsh_put4(R, rs, q, c8, site, old);  // (a byte already at this clock keeps its site)
        if (v < clk) cs_s_max(p, clk);
    }
    cs_fence();  // publish the reads, then look at the writes (Dekker with the writer)
    uint32_t ok = 0xFFFFFFFFu;
    for (uint32_t k = 0, q = g; k < n && !f.kind; ++k, q += step) {
        f = cs_q_look16(x, q, CS_PROXY_NONE, ok);
        fk = k;
    }
}

// The writes of a lane's n chunks by `by` at clk (cs_vsh_write on 16-byte spans, readers
// in at most four rows): the epochs exchanged, one fence, then the readers.
CS_DEV void cs_q_write(const cs_vctx& x, uint32_t g, uint32_t step, uint32_t n, uint32_t site,
                       uint32_t by, uint32_t clk, cs_finding& f, uint32_t& fk) {
    const uint32_t w = x.w, now = cs_vw(by, clk, 0u);
    cs_finding fw = {0, CS_NO_SITE, CS_NO_WARP}, fr = fw;
    uint32_t aw = 0, ar = 0, kw = 0, kr = 0;
    for (uint32_t k = 0, q = g; k < n; ++k, q += step) {
        uint32_t b = q / CS_VSH_B;
        if (cs_s_ld(x.BT + 4u * b)) cs_q_claim(x.slot, w, b);  // a copy held the block whole
        cs_sp a = x.W + 4u * q;
        uint32_t o0 = cs_s_xchg(a, now), o1 = cs_s_xchg(a + 4, now), o2 = cs_s_xchg(a + 8, now),
                 o3 = cs_s_xchg(a + 12, now);
        if (o0 == o1 && o1 == o2 && o2 == o3 && !(o0 & CS_VW_MBAR)) {
            if ((o0 & ~CS_VW_ATOMIC) == now) continue;  // rewritten at the same clock: sites stay
            uint32_t t = cs_vw_t(o0);
            if (o0 != 0 && !cs_own_write(t, by) && !cs_ordered(x.mine, w, t, cs_vw_c(o0)) &&
                !fw.kind) {
                fw = cs_q_judge_write(x.slot, w, o0, x.ws + q, by);
                if (fw.kind) aw = q, kw = k;
            }
            cs_g_st4(x.ws + q, site);
            continue;
        }
        cs_found r = cs_q_write4(x.slot, w, q, site, by, now, o0, o1, o2, o3);
        if (r.f.kind && !fw.kind) fw = r.f, aw = r.at, kw = k;
    }
    cs_fence();  // publish the writes, then look at the readers (Dekker with the reader)
    const uint32_t c0 = cs_vsh_vc1(x, 0), c1 = cs_vsh_vc1(x, 1), c2 = cs_vsh_vc1(x, 2),
                   c3 = cs_vsh_vc1(x, 3);
    for (uint32_t k = 0, q = g; k < n; ++k, q += step) {
        cs_u4 v = cs_s_ld4(x.RS + 16u * (q / CS_VSH_B));
        uint32_t seen = (v.x ? 1u : 0u) | (v.y ? 2u : 0u) | (v.z ? 4u : 0u) | (v.w ? 8u : 0u);
        if (!seen) continue;
        bool late = (v.x && v.x > c0) || (v.y && v.y > c1) || (v.z && v.z > c2) ||
                    (v.w && v.w > c3);
        if (late && !fr.kind) {
            cs_found r = cs_q_late(x.slot, w, seen, q);
            if (r.f.kind) fr = r.f, ar = r.at, kr = k;
        }
        cs_vsh_empty16(x, q, seen);
    }
    f = cs_vsh_first(fw, kw, aw, fr, kr, ar, fk);
}

// True when the warp's access was the 16-byte kind and is done.
CS_DEV bool cs_vsh_access16(uint64_t addr, uint32_t site, uint32_t info, uint32_t rep) {
    const uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return true;
    const uint32_t space = (info >> CS_INFO_SPACE_SHIFT) & 3u;
    const uint32_t mode = (info >> CS_INFO_MODE_SHIFT) & 3u;
    const uint32_t shape = (info >> CS_INFO_SHAPE_SHIFT) & 15u;
    const uint32_t n = rep & CS_REP_COUNT_MASK, stride = rep >> CS_REP_STRIDE_SHIFT;
    const uint32_t w = cs_warp(), m = cs_activemask();
    bool idle = shape && cs_lane() >= 8u * shape;  // ldmatrix/stmatrix: row-address lanes
    uint32_t a = (uint32_t)addr, off = 0, by = w, clk = 0;
    if (space == CS_SPACE_GENERIC) {
        if (!cs_is_shared(addr)) idle = true;
        else a = cs_to_shared(addr);
    }
    if (mode == CS_MODE_ASYNC_WRITE) {  // the copy unit's clock (__consan_async)
        by = CS_AGENT_CPASYNC + w;
        clk = *(volatile uint32_t*)&cs_cpticks_sh[w] + 1;
    } else if (mode == CS_MODE_WRITE) {
        clk = cs_clock_sh[w];
    }
    uint32_t end = (a & 0xFFFFFFu) + (n - 1) * stride + 16u;
    bool mine = cs_local(a, off) && ((off | stride) & 15u) == 0 && n != 0 &&
                off >= S.vsh_base && end <= S.granules * CS_GRANULE_BYTES && end > off;
    bool fits = (info & CS_INFO_SIZE_MASK) == 16u && mode != CS_MODE_ATOMIC &&
                clk <= CS_VW_CLOCK_MASK && (mode == CS_MODE_READ || cs_vlay_sh.nr <= 4u);
    if (!cs_all(m, fits && (idle || mine))) return false;
    cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
    uint32_t fk = 0;
    if (!idle) {
        const cs_vctx x = cs_vsh_ctx(slot, w);
        uint32_t g = (off - S.vsh_base) / CS_GRANULE_BYTES, step = stride / CS_GRANULE_BYTES;
        if (mode == CS_MODE_READ) cs_q_read(x, g, step, n, site, f, fk);
        else cs_q_write(x, g, step, n, site, by, clk, f, fk);
    }
    if (cs_any(m, f.kind != 0)) cs_q_report(m, f, site, info, off + fk * stride);
    return true;
}

// ------------------------------------------------------------- probe entry points


CS_ENTRY void __consan_access(uint64_t addr, uint32_t site, uint32_t info) {
    CS_PROF(0);
#ifdef CONSAN_NULL_ACCESS  // benchmarks only: the cost of the probe call alone
    return;
#endif
    if (cs_vsh_on()) return cs_vsh_access(addr, site, info, 1u);
    if (cs_psh_mode()) return cs_psh_access(addr, site, info);
#if !defined(CONSAN_PSH) && !defined(CONSAN_VSH)
    cs_access(addr, site, info);
#endif
}

// `count` accesses of one size at addr, addr + stride, ... (coalesced by the rewriter).
CS_ENTRY void __consan_access_n(uint64_t addr, uint32_t site, uint32_t info, uint32_t rep) {
    CS_PROF(0);
#ifdef CONSAN_NULL_ACCESS
    return;
#endif
    if (cs_vsh_on()) return cs_vsh_access(addr, site, info, rep);
    uint32_t n = rep & CS_REP_COUNT_MASK, stride = rep >> CS_REP_STRIDE_SHIFT;
    for (uint32_t k = 0; k < n; ++k) {
        uint64_t a = addr + (uint64_t)k * stride;
        if (cs_psh_mode()) cs_psh_access(a, site, info);
#if !defined(CONSAN_PSH) && !defined(CONSAN_VSH)
        else cs_access(a, site, info);
#endif
    }
}

// Accesses of 16 bytes that are not atomic (abi.access_probe), `rep` as above: the
// granule tables in shared memory take cs_vsh_access16 when every lane's chunks are
// aligned ones in the window, the general probe otherwise.
CS_ENTRY void __consan_access16(uint64_t addr, uint32_t site, uint32_t info, uint32_t rep) {
    if (!cs_vsh_on()) return __consan_access_n(addr, site, info, rep);
    CS_PROF(0);
#ifdef CONSAN_NULL_ACCESS
    return;
#endif
    if (!cs_vsh_access16(addr, site, info, rep)) cs_vsh_access_any(addr, site, info, rep);
}

CS_ENTRY uint32_t __consan_bar_arrive(uint32_t b, uint32_t count, uint32_t site, uint32_t mode) {
    CS_PROF(1);
    if (cs_psh_mode()) return cs_psh_bar_arrive();
#ifndef CONSAN_PSH
    if (cs_slot_sh == CS_NO_SLOT) return 0;
    return cs_bar_arrive(b, count, site, mode);
#endif
}

CS_ENTRY void __consan_bar_wait(uint32_t gen, uint32_t b, uint32_t site) {
    CS_PROF(2);
    if (cs_psh_mode()) return cs_psh_bar_wait(gen);
#ifndef CONSAN_PSH
    if (cs_slot_sh == CS_NO_SLOT) return;
    cs_bar_wait(gen, b, site);
#endif
}

CS_ENTRY void __consan_thread_exit(uint32_t site) {
    CS_PROF(3);
    if (cs_psh_mode()) return;  // phase mode keeps no count of live warps
#ifndef CONSAN_PSH
    cs_thread_exit(site);
#endif
}

// Group bookkeeping of a warp's bulk-store or wgmma unit (`counter`: CS_UNIT_*), by the
// leader lane: `commit` closes the open group (cs_commits_sh counts them); `wait` retires
// all but the newest n, joining the unit's clock (column `unit`) up to them. The unit's
// clock counts groups, so a wait never walks shadow memory.
CS_DEV void cs_unit_groups(uint32_t counter, uint32_t unit, bool commit, bool wait, uint32_t n,
                           uint32_t site) {
    uint32_t slot = cs_slot_sh;
    uint32_t active = cs_group(((uint64_t)site << 32) | n, (uint64_t)commit << 1 | wait);
    uint32_t w = cs_warp();
    if (cs_lane() == (uint32_t)(cs_ffs(active) - 1)) {
        if (commit) cs_commits_sh(counter, w) += 1;
        if (wait) {
            uint32_t c = cs_commits_sh(counter, w), done = c > n ? c - n : 0;
            uint32_t* mine = cs_vis(slot, w);
            if (done > mine[unit]) mine[unit] = done;
        }
        cs_fence();
    }
    cs_syncwarp(active);
}

// cp.async groups: the copy unit of warp w is logical thread AGENT_CPASYNC + w. A copy
// gets the unit's clock ticks + 1; commit_group ends the open
// group at that clock (kept for the last CPASYNC_GROUP_ENDS groups) and advances it;
// wait_group n joins the clock at the end of the newest group it completes (all but the
// last n). cp.async.mbarrier.arrive advances the clock too but ends no group, so the
// group arithmetic of wait_group is not shifted by it.
CS_ENTRY void __consan_async(uint32_t op, uint32_t n, uint32_t site) {
    CS_PROF(4);
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return;
    uint32_t active = cs_group(((uint64_t)site << 32) | n, op);
    uint32_t w = cs_warp();
    if (cs_lane() == (uint32_t)(cs_ffs(active) - 1)) {
        uint32_t* cta = cs_cta(slot);
        uint32_t* ends = &cta[CS_CTA_CPASYNC_ENDS + w * CS_CPASYNC_GROUP_ENDS];
        uint32_t commits = cta[CS_CTA_CPASYNC_COMMITS + w];
        if (op != CS_ASYNC_WAIT) {  // commit_group; wait_all commits first
            uint32_t t = cs_cpticks_sh[w] + 1;
            *(volatile uint32_t*)&cs_cpticks_sh[w] = t;
            ends[commits % CS_CPASYNC_GROUP_ENDS] = t;
            cta[CS_CTA_CPASYNC_COMMITS + w] = ++commits;
        }
        if (op != CS_ASYNC_COMMIT) {
            uint32_t keep = op == CS_ASYNC_WAIT ? n : 0;
            uint32_t done = commits > keep ? commits - keep : 0;
            // a wait that retires a group older than those kept acquires nothing (safe side)
            if (done && keep < CS_CPASYNC_GROUP_ENDS) {
                uint32_t clk = ends[(done - 1) % CS_CPASYNC_GROUP_ENDS];
                uint32_t* mine = cs_vis(slot, w);
                if (clk > mine[CS_AGENT_CPASYNC + w]) mine[CS_AGENT_CPASYNC + w] = clk;
            }
        }
        cs_fence();
    }
    cs_syncwarp(active);
}


// ------------------------------------------------------------- mbarriers
//
// Each mbarrier the CTA initialises gets an entry (key = smem offset + 1). An
// arrive releases the warp's clock into the slot of the current phase; the
// phase completes when the pending arrivals and the transaction bytes reach
// zero; a successful wait acquires the slot of the phase it waited for. The
// entry is updated under its own lock: mbarrier operations are rare next to
// shared-memory accesses.

// The entry of the mbarrier at `off` (j: its index), made when `create` (init). Entries
// are made in device memory, where a slot's earlier CTAs left theirs; each CTA keeps the
// keys of those it made, and their liveness, in its shared memory, where every other
// probe looks them up (device-memory words other warps keep writing miss in L1).
CS_DEV uint32_t* cs_mbar_entry(uint32_t slot, uint32_t off, bool create, uint32_t& j) {
    uint32_t words = CS_MB_VC + CS_MB_SLOTS * S.nlogical;
    uint32_t* table = (uint32_t*)S.mbar + (uint64_t)slot * CS_MBARRIERS * words;
    uint32_t h = (off >> 3) % CS_MBARRIERS;
    for (uint32_t i = 0; i < CS_MBARRIERS; ++i) {
        j = (h + i) % CS_MBARRIERS;
        uint32_t* e = table + j * words;
        if (!create) {  // (an earlier CTA's entry may sit before it: no early stop)
            if (*(volatile uint32_t*)&cs_mkey_sh[j] == off + 1) return e;
            continue;
        }
        uint32_t k = cs_ld32(&e[CS_MB_KEY]);
        if (k == 0) k = cs_cas32(&e[CS_MB_KEY], 0, off + 1), k = k ? k : off + 1;
        if (k == off + 1) {
            *(volatile uint32_t*)&cs_mkey_sh[j] = off + 1;
            return e;
        }
    }
    return 0;
}
CS_DEV bool cs_mbar_live(uint32_t j) { return *(volatile uint32_t*)&cs_mlive_sh[j] == cs_gen_sh; }

CS_DEV void cs_lock(uint32_t* l) { while (cs_cas32(l, 0, 1) != 0) {} cs_fence_lock(); }
CS_DEV void cs_unlock(uint32_t* l) { cs_fence_lock(); cs_xchg32(l, 0); }
// An mbarrier entry's lock lives in the CTA's shared memory (only its warps take it): a
// shared-memory compare-and-swap, not a device-memory round trip, per try.
CS_DEV void cs_mbar_lock(uint32_t j) { cs_lock(&cs_mlock_sh[j]); }  // j: the entry's index
CS_DEV void cs_mbar_unlock(uint32_t j) { cs_unlock(&cs_mlock_sh[j]); }

CS_NOINLINE void cs_mbar_record(uint32_t kind, uint32_t site, uint32_t off, const uint32_t* e) {
    cs_record_t r = cs_blank(kind, site);
    r.offset_lo = off;
    r.offset_hi = off + 8;
    r.barrier = off;
    if (e) {
        r.phase = e[CS_MB_PHASE];
        r.count = e[CS_MB_PENDING];
        r.clock = e[CS_MB_TX];
    }
    cs_record(r);
}

// Mark (or unmark) the two granules of the object so ordinary accesses to it are caught.
CS_DEV void cs_mbar_mark(uint32_t slot, uint32_t off, bool live) {
    uint32_t w = cs_warp();
    if (cs_vsh_on()) return cs_vsh_mark(slot, off, w, cs_clock_sh[w], live);
    uint64_t flags = live ? CS_WW_FLAG_MBAR : 0;
    uint64_t ww = ((uint64_t)cs_gen_sh << CS_WW_GEN_SHIFT) | (flags << CS_WW_FLAGS_SHIFT) |
                  ((uint64_t)w << CS_WW_TID_SHIFT) | cs_clock_sh[w];
    for (uint32_t g = off / CS_GRANULE_BYTES; g < (off + 8) / CS_GRANULE_BYTES; ++g)
        if (g < S.granules) cs_st64(cs_gent(slot, g), ww);
    uint32_t g1 = (off + 7) / CS_GRANULE_BYTES;
    if (live && cs_bsum_on() && g1 < S.granules)
        cs_bsum_flag(slot, off / CS_GRANULE_BYTES, g1, CS_BS_FLAG_MBAR);
}

// dst[u] = max(dst[u], src[u]) over those columns. (Plain loads: the caller holds the lock
// every writer of dst holds, or dst is its own warp's clock.) d and s are 16-byte aligned:
// clock slots and warps' clocks are (abi.vsh_bytes aligns them in shared memory too).
CS_DEV cs_u4 cs_vc_ld4(const uint32_t* p) {
#ifdef CONSAN_HOST
    cs_al16((cs_sp)p);
    return {p[0], p[1], p[2], p[3]};
#else
    uint4 v = *(const uint4*)p;
    return {v.x, v.y, v.z, v.w};
#endif
}
CS_DEV void cs_vc_st4(uint32_t* p, const uint32_t* v) {
#ifdef CONSAN_HOST
    cs_al16((cs_sp)p);
    p[0] = v[0], p[1] = v[1], p[2] = v[2], p[3] = v[3];
#else
    *(uint4*)p = make_uint4(v[0], v[1], v[2], v[3]);
#endif
}
// Columns [a, b) in whole 16-byte chunks: a column outside the ranges is 0 in every clock,
// so its maximum is 0 again, and no clock holds a warp's own column ahead of the warp's own
// clock -- four maxima and a store where one grew, no check per column (one lane's
// dependent instructions were most of a join).
CS_DEV void cs_vc_join_run(uint32_t* __restrict__ d, const uint32_t* __restrict__ s, uint32_t a,
                           uint32_t b) {
    for (uint32_t u = a & ~3u; u < b; u += 4) {
        cs_u4 x = cs_vc_ld4(s + u), y = cs_vc_ld4(d + u);
        if ((x.x > y.x) | (x.y > y.y) | (x.z > y.z) | (x.w > y.w)) {
            cs_u4 m = cs_u4_max(x, y);
            const uint32_t v[4] = {m.x, m.y, m.z, m.w};
            cs_vc_st4(d + u, v);
        }
    }
}

// Empty a clock slot (`all`: every engine's column, at init), in whole 16-byte chunks.
// Inline: a call from the mbarrier probe's branches would cost it a convergence barrier
// kept across the call.
CS_DEV void cs_vc_clear(uint32_t* dst, bool all) {
    cs_cols c = cs_vc_cols(all);
    const uint32_t zero[4] = {0, 0, 0, 0};
#pragma unroll
    for (uint32_t k = 0; k < CS_VC_RANGES; ++k)
        for (uint32_t u = c.a[k] & ~3u; u < c.b[k]; u += 4) cs_vc_st4(dst + u, zero);
}

CS_DEV void cs_vc_join(uint32_t* dst, const uint32_t* src) {
    cs_cols c = cs_vc_cols(false);
#pragma unroll
    for (uint32_t k = 0; k < CS_VC_RANGES; ++k)
        if (c.b[k] > c.a[k]) cs_vc_join_run(dst, src, c.a[k], c.b[k]);
}

// The clock slot of phase ph (abi.MB_SLOTS of them, by phase).
CS_DEV uint32_t* cs_mbar_slot(uint32_t* e, uint32_t ph) {
    return e + CS_MB_VC + (ph % CS_MB_SLOTS) * S.nlogical;
}

// Complete the current phase (lock held): open the next one with a clean clock slot. The
// fence: a wait reads the phase, then the completed phase's slot, without the lock.
CS_DEV void cs_mbar_try_complete(uint32_t* e) {
    if ((int32_t)e[CS_MB_PENDING] > 0 || (int32_t)e[CS_MB_TX] > 0) return;
    uint32_t ph = e[CS_MB_PHASE] + 1;
    cs_vc_clear(cs_mbar_slot(e, ph), false);
    cs_fence_lock();
    *(volatile uint32_t*)&e[CS_MB_PHASE] = ph;
    e[CS_MB_PENDING] = e[CS_MB_EXPECTED];
    e[CS_MB_TX] = 0;
}

// A copy of `bytes` on mbarrier j lands in phase ph (lock held): the copy engine's clock
// (its column, ph + 1) goes into the phase's slot, and the bytes may complete the phase.
CS_DEV void cs_mbar_copy_landed(uint32_t* e, uint32_t j, uint32_t ph, uint32_t bytes) {
    uint32_t* vc = cs_mbar_slot(e, ph) + CS_AGENT_MBAR + j;
    if (*vc < ph + 1) *vc = ph + 1;
    e[CS_MB_TX] -= bytes;
    if (e[CS_MB_PHASE] == ph) cs_mbar_try_complete(e);
}

CS_DEV void cs_mbar_acquire(uint32_t slot, uint32_t w, const uint32_t* vc) {
    cs_vc_join(cs_vis(slot, w), vc);
}

// A warp spinning on failed waits: true once `key` (the phase it waits for to complete,
// or the mbarrier that is not live) has stayed the same for DEADLOCK_MS.
CS_DEV bool cs_spin_stuck(uint32_t slot, uint32_t w, uint32_t key) {
    uint32_t* cta = cs_cta(slot);
    uint32_t now = cs_now_ms();
    if (cta[CS_CTA_SPIN_PHASE + w] != key) {
        cta[CS_CTA_SPIN_PHASE + w] = key;
        cta[CS_CTA_SPIN_SINCE + w] = now;
        return false;
    }
    return now - cta[CS_CTA_SPIN_SINCE + w] > CS_DEADLOCK_MS;
}

// The leader's verdict on a guarded operation, for every lane: 0 run it, 1 skip it
// (it would fault), 2 deadlock -- the warp's lanes leave the kernel here.
// `all`: every lane in the probe (each asks its own group's leader). One mask for all
// lanes: a warp-synchronous instruction run at once with different masks (a mask per
// group) splits the warp, and nothing joins it again.
CS_DEV uint32_t cs_guard_verdict(uint32_t all, uint32_t skip, uint32_t leader, uint32_t site) {
    cs_syncwarp(all);
    skip = cs_bcast(all, skip, leader);
    if (skip == 2) {
        cs_thread_exit(site);
        cs_exit_thread();
    }
    return skip;
}

// Arrivals and transaction bytes (lock held): arrive{.drop}{.expect_tx}, expect_tx and
// complete_tx by `lanes` lanes of warp w (arg each). An arrive releases the warp's clock
// into the open phase's slot. Returns 1 for a count that would go below zero (recorded).
CS_DEV uint32_t cs_mbar_count(uint32_t* e, uint32_t op, uint32_t arg, uint32_t lanes,
                              uint32_t site, uint32_t off, uint32_t w, uint32_t* mine) {
    uint32_t n = arg * lanes;  // every thread's arrive / tx counts
    if (op == CS_MB_EXPECT_TX || op == CS_MB_ARRIVE_EXPECT_TX) e[CS_MB_TX] += n;
    bool tx_under = op == CS_MB_COMPLETE_TX && (int32_t)e[CS_MB_TX] < (int32_t)n;
    if (tx_under) cs_mbar_record(CS_MBARRIER_UNDERFLOW, site, off, e);
    if (op == CS_MB_COMPLETE_TX) e[CS_MB_TX] -= n;
    bool arrives = op == CS_MB_ARRIVE || op == CS_MB_ARRIVE_DROP || op == CS_MB_ARRIVE_EXPECT_TX;
    uint32_t count = op == CS_MB_ARRIVE_EXPECT_TX ? lanes : n;
    if (arrives) cs_vc_join(cs_mbar_slot(e, e[CS_MB_PHASE]), mine);
    bool under = arrives && (int32_t)e[CS_MB_PENDING] < (int32_t)count;
    if (under) cs_mbar_record(CS_MBARRIER_UNDERFLOW, site, off, e);
    if (arrives) {
        e[CS_MB_LASTPH + w] = e[CS_MB_PHASE];
        e[CS_MB_PENDING] = (under ? count : e[CS_MB_PENDING]) - count;
        if (op == CS_MB_ARRIVE_DROP) e[CS_MB_EXPECTED] -= count;
        mine[w] += 1;  // accesses after the release are not covered by it
        cs_clock_sh[w] = mine[w];
    }
    cs_mbar_try_complete(e);
    return tx_under || under ? 1u : 0u;
}

// The leader's part of an mbarrier probe, written flat: sibling branches and a switch
// instead of nested else-ifs, and no call out of line (cs_vc_clear is inline), which took
// the probe from ten convergence barriers to eight and 6.7-7.2k cycles to 5.1-6.1k (ring).
// (Eight is still two more than a callee may use without saving, which releases lanes
// waiting for the probe: instrument/converge.py has every lane call it instead.)
#define CS_MB_DEAD 0xFFu  // (a switch label: an mbarrier invalidated since the look)
CS_DEV uint32_t cs_mbar_lead(uint64_t addr, uint32_t op, uint32_t arg, uint32_t site,
                             uint32_t slot, uint32_t w, uint32_t lanes) {
    bool failed_wait = (op == CS_MB_WAIT_PARITY || op == CS_MB_WAIT_TOKEN) && !(arg & 2);
    uint32_t off, j = 0, skip = 0;
    bool local = cs_local((uint32_t)addr, off);  // .shared::cluster: maybe another CTA's
    uint32_t* e = local ? cs_mbar_entry(slot, off, op == CS_MB_INIT, j) : 0;
    bool dead = local && (e == 0 || (op != CS_MB_INIT && !cs_mbar_live(j)));
    if (!local)  // another CTA's mbarrier: said, not modelled (DSMEM)
        cs_mbar_record(CS_TOOL_REMOTE_SMEM, site, off, 0);
    if (dead) {  // not live: a wait on it may spin for ever in the hardware
        cs_mbar_record(CS_MBARRIER_UNINIT, site, off, e);
        skip = 1;
    }
    // A warp spinning on failed waits: after DEADLOCK_MS with the phase (or the dead
    // mbarrier) unchanged, nothing will complete it -- report, and let the warp leave so
    // the kernel ends instead of hanging. No lock: the phase is only looked at, and
    // spinning warps must not hold up the arrivals they wait for.
    if (local && failed_wait &&
        cs_spin_stuck(slot, w, dead ? 0x80000000u | off : cs_ld32(&e[CS_MB_PHASE]) + 1)) {
        cs_mbar_record(CS_DEADLOCK, site, off, dead ? 0 : e);
        skip = 2;
    }
    if (!local || dead || failed_wait) return skip;
    if (op == CS_MB_WAIT_PARITY || op == CS_MB_WAIT_TOKEN) {
        // Succeeded: acquire the phase waited for, if its releases are still held (the
        // latest completed phase); a stale parity acquires nothing. No lock: the phase,
        // then its slot, which is written again only abi.MB_SLOTS - 1 completions later
        // (cs_mbar_try_complete fences the slot's joins before the phase).
        cs_cta(slot)[CS_CTA_SPIN_PHASE + w] = 0;
        uint32_t done = *(volatile uint32_t*)&e[CS_MB_PHASE];  // phases completed so far
        cs_fence_lock();
        uint32_t last = e[CS_MB_LASTPH + w];  // (its own warp's)
        uint32_t want = op == CS_MB_WAIT_PARITY ? (arg & 1) : (last & 1);
        bool ok = (arg & 2) && done > 0 && ((done - 1) & 1) == want &&
                  (op == CS_MB_WAIT_PARITY || last == done - 1);
        if (ok) cs_mbar_acquire(slot, w, cs_mbar_slot(e, done - 1));
        return skip;
    }
    {
        CS_PROF(19);
        cs_mbar_lock(j);
    }
    CS_PROF(21);
    bool live = cs_mbar_live(j);  // live in this CTA's generation
    uint32_t* mine = cs_vis(slot, w);
    switch (live || op == CS_MB_INIT ? op : CS_MB_DEAD) {
    case CS_MB_INIT:
        if (live) cs_mbar_record(CS_MBARRIER_REINIT, site, off, e);
        cs_or32(&cs_mbar_used_sh, 1u << j);  // (its engine's column)
        e[CS_MB_LIVE] = cs_gen_sh;
        *(volatile uint32_t*)&cs_mlive_sh[j] = cs_gen_sh;
        e[CS_MB_EXPECTED] = e[CS_MB_PENDING] = arg;
        e[CS_MB_TX] = 0;
        e[CS_MB_PHASE] = 0;
        for (uint32_t k = 0; k < CS_MB_SLOTS; ++k) cs_vc_clear(cs_mbar_slot(e, k), true);
        cs_mbar_mark(slot, off, true);
        break;
    case CS_MB_DEAD:  // invalidated since the look above
        cs_mbar_record(CS_MBARRIER_UNINIT, site, off, e);
        skip = 1;
        break;
    case CS_MB_INVAL:
        e[CS_MB_LIVE] = 0;
        *(volatile uint32_t*)&cs_mlive_sh[j] = 0;
        cs_mbar_mark(slot, off, false);
        break;
    case CS_MB_CP_ARRIVE: {
        // The cp.async unit of warp w arrives once the warp's copies so far have landed:
        // its clock up to the open group is released into this phase, and the open group
        // is closed so later copies are not covered. .noinc (arg 1): each thread's arrival
        // counts; without it the count is raised first (net 0).
        uint32_t* cur = cs_mbar_slot(e, e[CS_MB_PHASE]);  // the open phase's slot
        uint32_t clk = cs_cpticks_sh[w] + 1;
        if (cur[CS_AGENT_CPASYNC + w] < clk) cur[CS_AGENT_CPASYNC + w] = clk;
        *(volatile uint32_t*)&cs_cpticks_sh[w] = clk;
        uint32_t count = arg * lanes;
        bool under = (int32_t)e[CS_MB_PENDING] < (int32_t)count;
        if (under) cs_mbar_record(CS_MBARRIER_UNDERFLOW, site, off, e);
        skip = under ? 1u : skip;
        e[CS_MB_PENDING] = (under ? count : e[CS_MB_PENDING]) - count;
        cs_mbar_try_complete(e);
        break;
    }
    default:
        skip = cs_mbar_count(e, op, arg, lanes, site, off, w, mine);
        break;
    }
    cs_mbar_unlock(j);
    return skip;
}

// Returns 1 when the operation would fault on the hardware (an mbarrier that is not
// live, an arrival below zero): the rewritten kernel then skips it, so the report is
// read back and the CUDA context stays usable.
// Lanes with CS_PROBE_OFF in `op` skip the operation (a branch or a one-lane loop the
// rewriter converted, instrument/converge.py, loops.py): they only wait here for the
// lanes that run it.
CS_ENTRY uint32_t __consan_mbar(uint64_t addr, uint32_t op, uint32_t arg, uint32_t site) {
    bool off = op & CS_PROBE_OFF;
    op &= ~CS_PROBE_OFF;
    bool waits = op == CS_MB_WAIT_PARITY || op == CS_MB_WAIT_TOKEN;
    CS_PROF(off ? 16u : waits ? ((arg & 2) ? 20u : 12u) : 5u);
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return 0;
    uint32_t all = cs_activemask();
    uint32_t active = off ? cs_group(~0ull, ~0ull) : cs_group(((uint64_t)site << 32) | arg, addr);
    uint32_t w = cs_warp();
    uint32_t lanes = cs_popc(active);
    uint32_t leader = cs_ffs(active) - 1;
    uint32_t skip = cs_lane() == leader && !off ? cs_mbar_lead(addr, op, arg, site, slot, w, lanes) : 0;
    // Lanes marked off (one group) take the verdict of the first lane on: a deadlock's
    // lanes all leave (a loop every lane runs, instrument/loops.py, must not go on
    // without it). From the masks, not a ballot: a warp-synchronous instruction after the
    // leader's call hung warps the probes had split (measured on the H100: with a ballot,
    // a loop of two lanes arriving and waiting deadlocked under consan).
    uint32_t on = all & ~active;
    return cs_guard_verdict(all, skip, off && on ? cs_ffs(on) - 1 : leader, site);
}


// cp.async.bulk global -> shared with mbarrier::complete_tx: the copy engine bound to
// mbarrier j (logical thread AGENT_MBAR + j) writes the destination; its clock is the
// phase the copy completes + 1, published in that phase's slot, so only a wait on the
// phase makes the bytes visible.
CS_ENTRY uint32_t __consan_bulk(uint64_t dst, uint32_t bytes, uint64_t mbar, uint32_t site) {
    CS_PROF(6);
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return 0;
    uint32_t all = cs_activemask();
    uint32_t active = cs_group(((uint64_t)site << 32) | bytes, dst ^ (mbar << 32));
    uint32_t leader = cs_ffs(active) - 1;
    uint32_t skip = 0;
    if (cs_lane() == leader) {
        uint32_t moff, doff;
        bool local = cs_local((uint32_t)mbar, moff);
        local = cs_local((uint32_t)dst, doff) && local;
        uint32_t j = 0;
        uint32_t* e = local ? cs_mbar_entry(slot, moff, false, j) : 0;
        if (!local) {  // st.async / red.async into another CTA: said, not modelled (DSMEM)
            cs_record_t r = cs_blank(CS_TOOL_REMOTE_SMEM, site);
            r.offset_lo = doff;
            r.offset_hi = doff + bytes;
            cs_record(r);
        } else if (e == 0 || !cs_mbar_live(j)) {
            cs_mbar_record(CS_MBARRIER_UNINIT, site, moff, e);
            skip = 1;
        } else {
            uint32_t agent = CS_AGENT_MBAR + j;
            cs_mbar_lock(j);
            uint32_t ph = e[CS_MB_PHASE];
            cs_mbar_unlock(j);
            cs_view v = cs_make_view(slot, cs_warp());
            uint32_t off;
            cs_local((uint32_t)dst, off);
            uint32_t g0 = off / CS_GRANULE_BYTES, g1 = (off + bytes - 1) / CS_GRANULE_BYTES;
            cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
            if (bytes == 0 || g1 >= S.granules) {
                f = {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};
            } else {
                cs_engine_write(v, g0, g1, site, agent, ph + 1, f);
            }
            if (f.kind) {
                cs_record_t r = cs_blank(f.kind, site);
                r.prev_site = f.prev_site;
                r.prev_warp = f.prev_warp;
                r.offset_lo = off;
                r.offset_hi = off + bytes;
                r.barrier = moff;
                r.phase = ph;
                cs_record(r);
            }
            cs_mbar_lock(j);
            cs_mbar_copy_landed(e, j, ph, bytes);
            cs_mbar_unlock(j);
        }
    }
    return cs_guard_verdict(all, skip, leader, site);
}

// ------------------------------------------------------------- bulk stores and proxy fences
//
// cp{.reduce}.async.bulk.global.shared::cta.bulk_group: the bulk-store unit of warp w
// (logical thread AGENT_BULK + w) reads the source some time before the bulk group the store
// belongs to is retired. Its clock counts bulk groups: a store issued while w has committed
// k groups reads with clock k + 1, and cp.async.bulk.wait_group{.read} n raises
// VC_w[AGENT_BULK + w] to k' - n (k' = the groups committed by then). The read is kept in
// the granule's async-read entry (the latest one) and judged when the granule is next
// written (cs_check_async_read), so a wait never walks shadow memory.
//
// fence.proxy.async by warp x: VC_x[AGENT_PROXY + x] = VC_x[x] -- every generic write x
// made so far may be read by the async proxy -- then VC_x[x] += 1, so later writes are not
// covered. Releases carry that column like any other: a bulk store by w may read the
// generic write (x, c) when VC_w[x] >= c (ordered) and VC_w[AGENT_PROXY + x] >= c (x fenced
// it before a release that reaches w). Only modules that issue bulk stores have these
// columns and the async-read table (S.nlogical == logical_threads(True)); they never run
// in phase mode.

CS_DEV bool cs_async_proxy() { return S.nlogical > CS_AGENT_BULK && !cs_phase_mode(); }

// Async-read table: u64 entries gen:16 | tid:8 | clock:32 for every slot, then u32 sites.
CS_DEV uint64_t* cs_aread(uint32_t slot, uint32_t g) { return (uint64_t*)S.aread + cs_gidx(slot, g); }
CS_DEV uint32_t* cs_arsite(uint32_t slot, uint32_t g) {
    return (uint32_t*)((uint64_t*)S.aread + (uint64_t)S.nslots * S.granules) + cs_gidx(slot, g);
}

// A write of granule g (its epoch published and fenced): a bulk store whose group the
// writer has not seen retired may still be reading the old bytes.
CS_DEV void cs_check_async_read(const cs_view& v, uint32_t g, cs_finding& f) {
    if (f.kind) return;
    uint32_t slot = cs_slot_sh;
    uint64_t a = cs_ld64(cs_aread(slot, g));
    if ((uint32_t)(a >> CS_AR_GEN_SHIFT) != v.gen) return;
    uint32_t t = (uint32_t)(a >> CS_AR_TID_SHIFT) & 0xFFu;
    if (!cs_ordered(v.mine, v.w, t, (uint32_t)a))
        f = {CS_ASYNC_PENDING_READ, cs_ld32(cs_arsite(slot, g)), t};
}

// One bulk store of [off, off + bytes) issued by lane `lane` of warp w (run by one lane).
CS_DEV void cs_bulk_store_one(uint32_t slot, uint32_t w, uint32_t lane, uint32_t off,
                              uint32_t bytes, uint32_t site) {
    uint32_t agent = CS_AGENT_BULK + w;
    uint32_t clk = cs_commits_sh(CS_UNIT_BULK, w) + 1;
    cs_record_t r = cs_blank(CS_TOOL_OUT_OF_WINDOW, site);
    r.lanes = 1u << lane;
    r.count = bytes;
    r.clock = clk;
    uint32_t below = cs_vsh_on() ? S.vsh_base : 0u;
    if (bytes == 0 || off + bytes < off || off < below ||
        (off + bytes - 1) / CS_GRANULE_BYTES >= S.granules) {
        r.offset_lo = off;
        r.offset_hi = off + bytes;
        cs_record(r);
        return;
    }
    cs_view v = cs_make_view(slot, w);
    uint32_t g0 = off / CS_GRANULE_BYTES, g1 = (off + bytes - 1) / CS_GRANULE_BYTES;
    cs_sink sink;
    sink.n = 0;
    if (cs_vsh_on()) {
        uint32_t b = below / CS_GRANULE_BYTES;
        cs_vsh_async_read(slot, w, cs_vsh_ri_bulk(w), clk, g0 - b, g1 - b, site, CS_PROXY_BULK, sink);
    } else {
        // Publish the read, then look at the writes (Dekker with cs_check_write).
        uint64_t mark = ((uint64_t)v.gen << CS_AR_GEN_SHIFT) | ((uint64_t)agent << CS_AR_TID_SHIFT) | clk;
        for (uint32_t g = g0; g <= g1; ++g) {
            cs_st64(cs_aread(slot, g), mark);
            cs_st32(cs_arsite(slot, g), site);
        }
        if (cs_bsum_on()) cs_bsum_read(slot, g0, g1, S.nwarps + w, clk, site);
        cs_fence();
        for (uint32_t g = g0; g <= g1; ++g) {
            uint64_t ww = cs_ld64(v.ent + 2 * g);
            cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
            uint32_t t = (uint32_t)(ww >> CS_WW_TID_SHIFT) & 0xFFu, c = (uint32_t)ww;
            if ((ww >> CS_WW_GEN_SHIFT) != v.gen) {
                f = {CS_UNINIT_READ, CS_NO_SITE, CS_NO_WARP};
            } else if ((ww >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_MBAR) {
                f = {CS_MBARRIER_DATA_ACCESS, cs_ld32(v.wsite + g), t};
            } else if (!cs_ordered(v.mine, w, t, c)) {
                f = {t >= CS_AGENT_CPASYNC ? CS_ASYNC_PENDING_WRITE : CS_RACE_RAW, cs_ld32(v.wsite + g), t};
            } else if (t < CS_MAX_WARPS && v.mine[CS_AGENT_PROXY + t] < c) {
                // Ordered in the generic proxy, but no fence.proxy.async by the writer after it.
                f = {CS_PROXY_MISSING_FENCE, cs_ld32(v.wsite + g), t};
            }
            if (f.kind) cs_sink_add(sink, f, g * CS_GRANULE_BYTES, (g + 1) * CS_GRANULE_BYTES);
        }
    }
    for (uint32_t i = 0; i < sink.n; ++i) {
        r.kind = sink.f[i].kind;
        r.prev_site = sink.f[i].prev_site;
        r.prev_warp = sink.f[i].prev_warp;
        r.offset_lo = sink.lo[i];
        r.offset_hi = sink.hi[i];
        cs_record(r);
    }
    // The issuing warp's later writes must not take the fast path past the async-read
    // entries (it would if it rewrote a granule it wrote at this clock): a new clock.
    uint32_t* mine = cs_vis(slot, w);
    mine[w] += 1;
    cs_clock_sh[w] = mine[w];
    cs_fence();
}

CS_ENTRY void __consan_bulk_store(uint64_t src, uint32_t bytes, uint32_t site) {
    CS_PROF(7);
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT || !cs_async_proxy()) return;
    uint32_t active = cs_group(site, 0);
    uint32_t leader = cs_ffs(active) - 1, lane = cs_lane(), w = cs_warp();
    uint32_t n = cs_popc(active);
    for (uint32_t i = 0; i < n; ++i) {  // every lane's store, in lane order
        uint32_t l = cs_nth_set(active, i);
        uint32_t a = cs_bcast(active, (uint32_t)src, (int)l);
        uint32_t b = cs_bcast(active, bytes, (int)l);
        if (lane == leader) {
            uint32_t off;
            cs_local(a, off);  // .shared::cta: always this CTA
            cs_bulk_store_one(slot, w, l, off, b, site);
        }
    }
    cs_syncwarp(active);
}

// cp.async.bulk.commit_group closes warp w's open bulk group; cp.async.bulk.wait_group{.read}
// n retires the reads of all but the newest n; fence.proxy.async (see above).
CS_ENTRY void __consan_bulk_group(uint32_t op, uint32_t n, uint32_t site) {
    CS_PROF(8);
    uint32_t slot = cs_slot_sh;
    bool bulk = cs_async_proxy(), wg = cs_wgmma_module() && !cs_phase_mode();
    if (slot == CS_NO_SLOT || !(bulk || wg)) return;
    if (op != CS_PROXY_FENCE)
        return cs_unit_groups(CS_UNIT_BULK, CS_AGENT_BULK + cs_warp(),
                              op == CS_BULK_COMMIT, op == CS_BULK_WAIT, n, site);
    // One fence serves bulk stores (the P_w column) and wgmma operands (proxy_fence word).
    uint32_t active = cs_group(site, 0);
    uint32_t w = cs_warp();
    if (cs_lane() == (uint32_t)(cs_ffs(active) - 1)) {
        uint32_t* mine = cs_vis(slot, w);
        if (bulk) mine[CS_AGENT_PROXY + w] = mine[w];
        if (wg) cs_st32(&cs_cta(slot)[CS_CTA_PROXY_FENCE + w], mine[w]);
        mine[w] += 1;
        cs_clock_sh[w] = mine[w];
        cs_fence();
    }
    cs_syncwarp(active);
}

// ------------------------------------------------------------- wgmma
//
// wgmma.mma_async reads its shared-memory operands asynchronously, through the
// async proxy, for its whole warpgroup: the wgmma unit of warpgroup u (warps
// 4u..4u+3) is logical thread AGENT_WGMMA + u. Its clock counts wgmma groups:
// an mma_async issued after warp w committed k groups reads in group k, clock
// k + 1; wgmma.wait_group n by warp w acquires the unit's clock up to w's
// commits - n (no walk over the reads: completion is lazy, as for cp.async).
// A wgmma group completes as a whole, so one unit per warpgroup is exact.
//
// Each granule keeps, per warpgroup, the clock and site of the unit's last read
// (the wgread table) and a flag in its write epoch saying such a read happened
// since that write: a write looks at the table only when the flag is set, and a
// write not ordered after the read's group is async.pending-read. The read itself
// is judged like a warp's: the last write must happen before the issuing warp
// (race.raw / async.pending-write / uninit.read), and when a warp wrote the bytes
// through the generic proxy, that warp must have executed fence.proxy.async since
// the write -- its clock at its last fence (CTA_PROXY_FENCE) reaches the write's
// clock -- else proxy.missing-fence. Reads of A from registers touch no smem.

CS_DEV bool cs_wgmma_module() { return S.flags & CS_FLAG_WGMMA; }
CS_DEV uint32_t cs_nwg() { return (S.nwarps + 3) / 4; }
CS_DEV uint64_t cs_wg_idx(uint32_t slot, uint32_t u, uint32_t g) {
    return ((uint64_t)slot * cs_nwg() + u) * S.granules + g;
}
// wgread table: u64 entries gen:16 | clock:32, then the u32 sites, [slot][warpgroup][granule].
CS_DEV uint64_t* cs_wg_rec(uint32_t slot, uint32_t u, uint32_t g) {
    return (uint64_t*)S.wgread + cs_wg_idx(slot, u, g);
}
CS_DEV uint32_t* cs_wg_site(uint32_t slot, uint32_t u, uint32_t g) {
    uint64_t* sites = (uint64_t*)S.wgread + (uint64_t)S.nslots * cs_nwg() * S.granules;
    return (uint32_t*)sites + cs_wg_idx(slot, u, g);
}

// A descriptor decoded once per probe (cs_wg_chunk's fields), for the chunks of a lane.
struct cs_wgd { uint32_t start, lbo, sbo, sw, kmajor, krows_log, base; };
CS_DEV cs_wgd cs_wg_decode(uint64_t desc, uint32_t kmajor, uint32_t elog) {
    uint32_t mode = (uint32_t)(desc >> 62) & 3u;
    return {(uint32_t)(desc & 0x3FFFu) << 4, (uint32_t)((desc >> 16) & 0x3FFFu) << 4,
            (uint32_t)((desc >> 32) & 0x3FFFu) << 4,
            mode == 1 ? 128u : mode == 2 ? 64u : mode == 3 ? 32u : 0u, kmajor, 5u - elog,
            (uint32_t)(desc >> 49) & 7u};
}
// Operand footprint (docs/model.md "wgmma operands"; instrument/wgmma_desc.py is the
// same rule): the shared address of chunk i (0 <= i < 2 * rows) of an operand of `rows`
// rows (64 for A, N for B), 32 bytes of K per row. *width is 16, or the whole aligned
// swizzle row when a non-zero base offset leaves the chunk's place in it unknown.
CS_DEV uint32_t cs_wg_addr(const cs_wgd& d, uint32_t i, uint32_t* width) {
    uint32_t a;
    if (d.kmajor) {  // row r, 16-byte K chunk c
        uint32_t r = i >> 1, c = i & 1u;
        a = d.sw ? d.start + (r & 7u) * d.sw + (r >> 3) * d.sbo + c * 16u
                 : d.start + (r & 7u) * 16u + (r >> 3) * d.sbo + c * d.lbo;
    } else {  // 16-byte MN chunk j, K row k (32 bytes of K: 32 >> elog rows)
        uint32_t j = i >> d.krows_log, k = i & ((1u << d.krows_log) - 1u);
        a = d.sw ? d.start + (j * 16u) % d.sw + (j * 16u / d.sw) * d.lbo + (k & 7u) * d.sw +
                       (k >> 3) * d.sbo
                 : d.start + j * d.sbo + (k & 7u) * 16u + (k >> 3) * d.lbo;
    }
    *width = 16u;
    if (!d.sw) return a;
    if (d.base) {
        *width = d.sw;
        return a & ~(d.sw - 1u);
    }
    return a ^ (((a >> 7) & (d.sw / 16u - 1u)) << 4);  // Swizzle<log2(sw/16), 4, 3>
}

// (rows: the operand's, for the host build's callers)
CS_DEV uint32_t cs_wg_chunk(uint64_t desc, uint32_t rows, uint32_t kmajor, uint32_t elog,
                            uint32_t i, uint32_t* width) {
    (void)rows;
    return cs_wg_addr(cs_wg_decode(desc, kmajor, elog), i, width);
}

// A write of granule g that replaced an epoch flagged as read by a wgmma unit: is every
// such read's group retired for this writer? The write supersedes the reads.
CS_DEV void cs_wg_check_reads(const cs_view& v, uint32_t g, cs_finding& f) {
    uint32_t slot = cs_slot_sh;
    for (uint32_t u = 0; u < cs_nwg(); ++u) {
        uint64_t* rec = cs_wg_rec(slot, u, g);
        uint64_t r = cs_ld64(rec);
        if ((r >> CS_WG_GEN_SHIFT) != v.gen) continue;
        if (!cs_ordered(v.mine, v.w, CS_AGENT_WGMMA + u, (uint32_t)r) && !f.kind)
            f = {CS_ASYNC_PENDING_READ, cs_ld32(cs_wg_site(slot, u, g)), CS_AGENT_WGMMA + u};
        cs_st64(rec, 0);
    }
}

// The write epoch `ww` a wgmma read of granule g found: ordered, fenced, initialised?
CS_DEV void cs_wg_check_source(const cs_view& v, uint32_t slot, uint32_t g, uint64_t ww,
                               cs_finding& f) {
    if (f.kind) return;
    if ((ww >> CS_WW_GEN_SHIFT) != v.gen) {
        f = {CS_UNINIT_READ, CS_NO_SITE, CS_NO_WARP};
        return;
    }
    uint32_t t = (uint32_t)(ww >> CS_WW_TID_SHIFT) & 0xFFu, clock = (uint32_t)ww;
    if ((ww >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_MBAR)
        f = {CS_MBARRIER_DATA_ACCESS, cs_ld32(v.wsite + g), t};
    else if (!cs_ordered(v.mine, v.w, t, clock))
        f = {t >= CS_AGENT_CPASYNC ? CS_ASYNC_PENDING_WRITE : CS_RACE_RAW, cs_ld32(v.wsite + g), t};
    else if (t < CS_MAX_WARPS && cs_ld32(&cs_cta(slot)[CS_CTA_PROXY_FENCE + t]) < clock)
        f = {CS_PROXY_MISSING_FENCE, cs_ld32(v.wsite + g), t};
}

// What a wgmma probe's look found: the finding, the chunk's bytes and its operand (1: B).
struct cs_wgf { cs_finding f; uint32_t lo, hi, operand; };

// The unit's reads of a lane's chunks first, first + step, ... of the warpgroup's list (A's
// chunks, then B's), in general: any chunk width (a base offset), cs_vsh_publish and
// cs_vsh_look on each.
CS_NOINLINE cs_wgf cs_wg_reads_any(uint32_t slot, uint32_t w, uint64_t da, uint64_t db,
                                   uint32_t info, uint32_t site, uint32_t clk, uint32_t first,
                                   uint32_t step) {
    const uint32_t n = info & CS_WG_INFO_N_MASK, elog = (info >> CS_WG_INFO_ELOG_SHIFT) & 3u;
    const uint32_t na = (info & CS_WG_INFO_A_SMEM) ? 2u * 64u : 0u, total = na + 2u * n;
    cs_wgf r = {{0, CS_NO_SITE, CS_NO_WARP}, 0xFFFFFFFFu, 0, 0};
    const cs_vctx x = cs_vsh_ctx(slot, w);
    const cs_wgd dA = cs_wg_decode(da, !(info & CS_WG_INFO_TRANS_A), elog);
    const cs_wgd dB = cs_wg_decode(db, !(info & CS_WG_INFO_TRANS_B), elog);
    const uint32_t base = S.vsh_base / CS_GRANULE_BYTES, ri = cs_vsh_ri_wgmma(w >> 2);
    for (uint32_t i = first; i < total; i += step) {
        uint32_t width, a = i >= na ? cs_wg_addr(dB, i - na, &width) : cs_wg_addr(dA, i, &width);
        uint32_t g0 = a / CS_GRANULE_BYTES, g1 = (a + width - 1) / CS_GRANULE_BYTES;
        if (g0 >= base && g1 < S.granules)  // (out of the window: said in the look)
            cs_vsh_publish(x, ri, clk, g0 - base, g1 - base, site, true);
    }
    cs_fence();  // publish the reads, then look at the writes (Dekker)
    uint32_t ok = 0xFFFFFFFFu, at;
    for (uint32_t i = first; i < total; i += step) {
        uint32_t width, a = i >= na ? cs_wg_addr(dB, i - na, &width) : cs_wg_addr(dA, i, &width);
        uint32_t g0 = a / CS_GRANULE_BYTES, g1 = (a + width - 1) / CS_GRANULE_BYTES;
        r.f = g0 < base || g1 >= S.granules
                  ? cs_finding{CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP}
                  : cs_vsh_look(x, g0 - base, g1 - base, CS_PROXY_WGMMA, ok, at);
        if (r.f.kind) {
            r.lo = a, r.hi = a + width, r.operand = i >= na;
            break;
        }
    }
    return r;
}

// Out of line for cs_wg_reads16: what is rare there.
CS_NOINLINE void cs_wgq_fresh(uint32_t slot, uint32_t w, uint32_t b, uint32_t ri) {
    cs_vsh_fresh(cs_vsh_ctx(slot, w), b, ri);
}

// The common form: no base offset in either descriptor, so every chunk is an aligned
// 16-byte one (four granules, one word of the unit's bytes). cs_vsh_publish and
// cs_vsh_look's rules for such a chunk, in a lean body (the general form ran ~630
// instructions a probe, and the wgmma probes were 30% of a TMA + wgmma GEMM's time).
// K128: both operands K-major with the 128-byte swizzle (what TMA writes for a K step of
// 64 halves), the address in a few instructions.
template <bool K128>
CS_DEV uint32_t cs_wg_addr16(const cs_wgd& d, uint32_t i) {
    if (K128) {
        uint32_t r = i >> 1, a = d.start + ((r & 7u) << 7) + (r >> 3) * d.sbo + ((i & 1u) << 4);
        return a ^ (((a >> 7) & 7u) << 4);  // Swizzle<3, 4, 3>
    }
    uint32_t width;
    return cs_wg_addr(d, i, &width);
}
template <bool K128>
CS_DEV void cs_wg_reads16(uint32_t slot, uint32_t w, const cs_wgd& dA, const cs_wgd& dB,
                          uint32_t na, uint32_t total, uint32_t site, uint32_t clk,
                          uint32_t first, uint32_t step, cs_wgf& r) {
    const cs_vctx x = cs_vsh_ctx(slot, w);
    const uint32_t base = S.vsh_base / CS_GRANULE_BYTES, gend = S.granules;
    const uint32_t ri = cs_vsh_ri_wgmma(w >> 2);
    const cs_sp R = x.R + ri * x.gp;
    uint32_t* rs = x.rsite + ri * x.gp;
    const uint32_t c8 = cs_vsh_byte(clk);
    for (uint32_t i = first; i < total; i += step) {
        uint32_t a = i >= na ? cs_wg_addr16<K128>(dB, i - na) : cs_wg_addr16<K128>(dA, i);
        uint32_t g = a / CS_GRANULE_BYTES;
        if (g < base || g + 3 >= gend) continue;  // (said in the look)
        g -= base;
        uint32_t b = g / CS_VSH_B;
        cs_sp p = x.RS + 4u * (b * x.rss + ri);
        uint32_t v = cs_s_ld(p), old = cs_s_ld(R + g);
        if (v == 0 || v == CS_RS_ZEROING) {  // the block's bytes are stale: emptied first
            cs_wgq_fresh(slot, w, b, ri);
            old = cs_s_ld(R + g);
            v = 1;
        }
        cs_vsh_put4(R, rs, g, c8, site, old);  // (a byte already at this clock keeps its site)
        if (v < clk) cs_s_max(p, clk);
    }
    cs_fence();  // publish the reads, then look at the writes (Dekker)
    uint32_t ok = 0xFFFFFFFFu;
    r = {{0, CS_NO_SITE, CS_NO_WARP}, 0xFFFFFFFFu, 0, 0};
    for (uint32_t i = first; i < total && !r.f.kind; i += step) {
        uint32_t a = i >= na ? cs_wg_addr16<K128>(dB, i - na) : cs_wg_addr16<K128>(dA, i);
        uint32_t g = a / CS_GRANULE_BYTES;
        r.lo = a, r.hi = a + 16u, r.operand = i >= na;
        r.f = g < base || g + 3 >= gend ? cs_finding{CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP}
                                        : cs_q_look16(x, g - base, CS_PROXY_WGMMA, ok);
    }
}

// wgmma.mma_async (before it issues): the unit of the warpgroup reads A (if through a
// descriptor) and B in the issuing warp's open group. The four warps of the warpgroup
// share the work: warp w takes chunks w % 4, w % 4 + 4, ... spread over its lanes.
// A record at an mma_async names the operand (barrier: 0 A, 1 B), the group (phase) and
// the operand's descriptor (count: bits 0-31, clock: bits 32-63).
CS_ENTRY void __consan_wgmma(uint64_t da, uint64_t db, uint32_t info, uint32_t site) {
    CS_PROF(9);
#ifdef CONSAN_NULL_WGMMA  // benchmarks only: the cost of the probe call alone
    return;
#endif
#if defined(CONSAN_SPIN_WGMMA) && !defined(CONSAN_HOST)  // measurements only: a longer probe
    for (long long t0 = clock64(); clock64() - t0 < CONSAN_SPIN_WGMMA;) {}
#endif
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return;
    uint32_t active = cs_group(((uint64_t)site << 32) | info, da), lane = cs_lane(), w = cs_warp();
    uint32_t rank = cs_popc(active & ((1u << lane) - 1u)), lanes = cs_popc(active);
    uint32_t u = w >> 2;
    uint32_t clk = cs_commits_sh(CS_UNIT_WGMMA, w) + 1;
    uint32_t n = info & CS_WG_INFO_N_MASK, elog = (info >> CS_WG_INFO_ELOG_SHIFT) & 3u;
    uint32_t na = (info & CS_WG_INFO_A_SMEM) ? 2u * 64u : 0u, total = na + 2u * n;
    cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
    uint32_t lo = 0xFFFFFFFFu, hi = 0, operand = 0;
    uint64_t desc = 0;
    const uint32_t first = (w & 3u) + 4u * rank, step = 4u * lanes;
    if (cs_vsh_on()) {  // granule tables in shared memory: publish every chunk, one fence, look
        const cs_wgd dA = cs_wg_decode(da, !(info & CS_WG_INFO_TRANS_A), elog);
        const cs_wgd dB = cs_wg_decode(db, !(info & CS_WG_INFO_TRANS_B), elog);
        cs_wgf r;
        if ((na && dA.sw && dA.base) || (dB.sw && dB.base))  // chunks of whole swizzle rows
            r = cs_wg_reads_any(slot, w, da, db, info, site, clk, first, step);
        else if ((!na || (dA.kmajor && dA.sw == 128u)) && dB.kmajor && dB.sw == 128u)
            cs_wg_reads16<true>(slot, w, dA, dB, na, total, site, clk, first, step, r);
        else
            cs_wg_reads16<false>(slot, w, dA, dB, na, total, site, clk, first, step, r);
        f = r.f, lo = r.lo, hi = r.hi, operand = r.operand;
        desc = operand ? db : da;
    }
    cs_view v = cs_make_view(slot, w);
    uint64_t head = ((uint64_t)v.gen << CS_WG_GEN_SHIFT) | clk;
    for (uint32_t i = first; !cs_vsh_on() && i < total; i += step) {
        bool isb = i >= na;
        uint32_t width;
        uint32_t a = isb ? cs_wg_chunk(db, n, !(info & CS_WG_INFO_TRANS_B), elog, i - na, &width)
                         : cs_wg_chunk(da, 64, !(info & CS_WG_INFO_TRANS_A), elog, i, &width);
        uint32_t g0 = a / CS_GRANULE_BYTES, g1 = (a + width - 1) / CS_GRANULE_BYTES;
        bool had = f.kind != 0;
        if (g1 >= v.granules) {
            if (!f.kind) f = {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};
        } else {
            for (uint32_t g = g0; g <= g1; ++g) {
                cs_st64(cs_wg_rec(slot, u, g), head);
                cs_st32(cs_wg_site(slot, u, g), site);
            }
            if (cs_bsum_on()) cs_bsum_read(slot, g0, g1, 2 * S.nwarps + u, clk, site);
            cs_fence();  // publish the reads, then look at the writes (Dekker with cs_check_write)
            for (uint32_t g = g0; g <= g1; ++g) {
                uint64_t ww = cs_or64(v.ent + 2 * g, (uint64_t)CS_WW_FLAG_WGREAD << CS_WW_FLAGS_SHIFT);
                cs_wg_check_source(v, slot, g, ww, f);
            }
        }
        if (f.kind && !had) {
            lo = a;
            hi = a + width;
            operand = isb;
            desc = isb ? db : da;
        }
    }
    if (!cs_any(active, f.kind != 0)) return;
    cs_record_t r;
    if (cs_merged_record(active, f, site, lo, hi, r)) {
        r.barrier = operand;
        r.phase = clk - 1;
        r.count = (uint32_t)desc;
        r.clock = (uint32_t)(desc >> 32);
        cs_record(r);
    }
}

// wgmma.commit_group (before it), wgmma.wait_group n (after it), and fence.proxy.async
// (after it): warp w's clock up to the fence covers its generic writes for the async
// proxy; w's clock moves on, so later writes are not covered. (Phase mode has no async
// proxy readers: the fence is nothing there.)
CS_ENTRY void __consan_wgmma_group(uint32_t op, uint32_t n, uint32_t site) {
    CS_PROF(10);
    if (cs_slot_sh == CS_NO_SLOT) return;
    // the unit belongs to the warpgroup: a wait by any of its warps covers all its reads
    cs_unit_groups(CS_UNIT_WGMMA, CS_AGENT_WGMMA + (cs_warp() >> 2),
                   op == CS_WGMMA_COMMIT, op == CS_WGMMA_WAIT, n, site);
}

#ifdef CONSAN_HOST
CS_ENTRY uint32_t cs_host_wg_chunk(uint64_t desc, uint32_t rows, uint32_t kmajor, uint32_t elog,
                                   uint32_t i, uint32_t* width) {
    return cs_wg_chunk(desc, rows, kmajor, elog, i, width);
}
#endif
// ------------------------------------------------------------- TMA tensor copies
//
// cp.async.bulk.tensor, tile mode. The instruction names a 128-byte tensor map the
// checker cannot decode; the runtime's table (S.tmaps) lists the maps whose geometry it
// knows, by a fingerprint of their 128 bytes, with the bytes one copy moves (its box,
// contiguous in shared memory: swizzling permutes bytes inside it). A load is then a
// bulk copy of that many bytes: a write by the copy engine of its mbarrier, visible to a
// wait on the phase it completes. A store is a bulk store of its box (its source is read
// until cp.async.bulk.wait_group.read retires its group). A map not in the table is a
// tool.tensor-map-unknown note, and a load's footprint is guessed (docs/model.md).

CS_DEV uint64_t cs_bcast64(uint32_t m, uint64_t v, int lane) {
    return ((uint64_t)cs_bcast(m, (uint32_t)(v >> 32), lane) << 32) | cs_bcast(m, (uint32_t)v, lane);
}

// A map lives in global, constant or kernel-parameter memory; the generic address the
// instruction names is read unless it is 0 (a name the rewriter could not convert) or
// points into shared or local memory. (The copy itself reads the same address.)
CS_DEV bool cs_tmap_readable(uint64_t a) {
#ifdef CONSAN_HOST
    return a != 0;
#else
    uint32_t other;
    asm volatile("{\n\t.reg .pred s, l;\n\t"
                 "isspacep.shared s, %1;\n\tisspacep.local l, %1;\n\t"
                 "or.pred s, s, l;\n\tselp.u32 %0, 1, 0, s;\n\t}"
                 : "=r"(other) : "l"(a));
    return a != 0 && other == 0;
#endif
}

CS_DEV uint64_t cs_tmap_fingerprint(const uint64_t* m) {  // = abi.tensor_map_fingerprint
    uint64_t h = CS_TMAP_FP_SEED;
    for (uint32_t i = 0; i < 16; ++i) {
        h ^= m[i];
        h *= CS_TMAP_FP_MUL;
        h ^= h >> 29;
    }
    return h ? h : 1;
}

// A map in kernel-parameter space (a __grid_constant__ argument) cannot change while the
// CTA runs: its bytes, once looked up, are kept (each entry written once: bytes, then the
// address).
CS_DEV bool cs_tmap_param(uint64_t a) {
#ifdef CONSAN_HOST
    return (void)a, false;
#else
    uint32_t p;
    asm volatile("{\n\t.reg .pred q;\n\tisspacep.param q, %1;\n\tselp.u32 %0, 1, 0, q;\n\t}"
                 : "=r"(p) : "l"(a));
    return p != 0;
#endif
}

// Bytes one copy through the map at (generic) address `map` moves; 0: a map not known.
// A kernel-parameter map this CTA looked up already is in its cache (the common case: a
// few loads); anything else is looked up out of line.
CS_NOINLINE uint32_t cs_tmap_lookup(uint64_t map);
CS_DEV uint32_t cs_tmap_bytes(uint64_t map) {
    for (uint32_t i = 0; map && i < CS_TMAP_CACHE; ++i) {
        if (*(volatile uint64_t*)&cs_shv.tmap_at[i] != map) continue;
        cs_fence_lock();
        return *(volatile uint32_t*)&cs_shv.tmap_bytes[i];
    }
    return cs_tmap_lookup(map);
}
CS_NOINLINE uint32_t cs_tmap_lookup(uint64_t map) {
    const cs_tmap_t* t = (const cs_tmap_t*)S.tmaps;
    if (t == 0 || (map & 63u) != 0 || !cs_tmap_readable(map)) return 0;
    bool param = cs_tmap_param(map);
    uint64_t fp = cs_tmap_fingerprint((const uint64_t*)map);
    uint32_t bytes = 0;
    for (uint32_t i = 0; i < CS_TMAP_ENTRIES && t[i].fingerprint; ++i)
        if (t[i].fingerprint == fp) {
            bytes = t[i].bytes;
            break;
        }
    if (param && bytes) {
        uint32_t i = cs_add32(&cs_shv.tmap_claimed, 1);
        if (i < CS_TMAP_CACHE) {
            *(volatile uint32_t*)&cs_shv.tmap_bytes[i] = bytes;
            cs_fence_lock();
            *(volatile uint64_t*)&cs_shv.tmap_at[i] = map;
        }
    }
    return bytes;
}

CS_NOINLINE void cs_tensor_record(uint32_t kind, uint32_t site, const cs_finding& f, uint32_t lo,
                             uint32_t hi, uint32_t moff, uint32_t ph, uint32_t bytes) {
    cs_record_t r = cs_blank(kind, site);
    r.prev_site = f.prev_site;
    r.prev_warp = f.prev_warp;
    r.offset_lo = lo;
    r.offset_hi = hi;
    r.barrier = moff;
    r.phase = ph;
    r.count = bytes;
    cs_record(r);
}

// One tensor load, in two steps: the leader's look at the mbarrier and the map, which
// counts the copy's bytes and phase (and the arrive it carries), then the copy's write
// (by every lane of the call where the tables are in shared memory).
struct cs_tload {
    uint32_t skip;  // 1: the copy would fault
    bool write;  // the copy's write to model (span bytes at off)
    uint32_t off, span, moff, j, ph, bytes;
    cs_finding f;  // a tool note on the copy (out of the window)
};
// A copy through a map not known: the bytes the phase still expects, else up to the end of
// the window; never past a live mbarrier (said in a record).
CS_NOINLINE uint32_t cs_tensor_guess_span(uint32_t slot, const cs_tload& t, uint32_t site) {
    uint32_t end = S.granules * CS_GRANULE_BYTES, off = t.off;
    uint32_t span = t.bytes ? t.bytes : (off < end ? end - off : 0);
    if (off >= end) span = 0;
    else if (span > end - off) span = end - off;
    uint32_t g1 = span ? (off + span - 1) / CS_GRANULE_BYTES : 0;
    for (uint32_t g = off / CS_GRANULE_BYTES; span && g <= g1; ++g) {
        uint64_t ww = cs_vsh_on() ? 0 : cs_ld64(cs_gent(slot, g));
        if (cs_vsh_on() ? cs_vsh_is_mbar(slot, g) : (ww >> CS_WW_GEN_SHIFT) == cs_gen_sh &&
                                              ((ww >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_MBAR)) {
            span = g * CS_GRANULE_BYTES > off ? g * CS_GRANULE_BYTES - off : 0;
            break;
        }
    }
    cs_finding none = {0, CS_NO_SITE, CS_NO_WARP};
    cs_tensor_record(CS_TOOL_TENSOR_MAP_UNKNOWN, site, none, off, off + span, t.moff, t.ph, span);
    return span;
}

// `arrive`: the mbarrier.arrive.expect_tx of `tx` bytes (site asite) the rewriter carries
// on this copy (instrument/carry.py) is modelled first, as its own probe would have.
CS_DEV cs_tload cs_tensor_load_begin(uint32_t slot, uint64_t dst, uint64_t map, uint64_t mbar,
                                     uint32_t site, bool arrive, uint32_t tx_arg, uint32_t asite) {
    cs_finding none = {0, CS_NO_SITE, CS_NO_WARP};
    cs_tload t = {0, false, 0, 0, 0, 0, 0, 0, none};
    bool mlocal = cs_local((uint32_t)mbar, t.moff);
    bool dlocal = cs_local((uint32_t)dst, t.off);
    if (!dlocal)  // another CTA's smem (and mbarrier): not checked
        cs_tensor_record(CS_TOOL_REMOTE_SMEM, site, none, t.off, t.off, t.moff, 0, 0);
    if (arrive && !mlocal)
        cs_mbar_record(CS_TOOL_REMOTE_SMEM, asite, t.moff, 0);
    if (!dlocal && !(arrive && mlocal)) return t;
    uint32_t* e;
    {
        CS_PROF(28);
        e = cs_mbar_entry(slot, t.moff, false, t.j);
    }
    if (e == 0 || !cs_mbar_live(t.j)) {
        cs_mbar_record(CS_MBARRIER_UNINIT, arrive && mlocal ? asite : site, t.moff, e);
        t.skip = 1;
        return t;
    }
    uint32_t end = S.granules * CS_GRANULE_BYTES, off = t.off;
    {
        CS_PROF(17);
        t.bytes = cs_tmap_bytes(map);  // transaction bytes the copy completes
    }
    bool guessed = t.bytes == 0;
    // One lock for the arrive it carries and for the copy's bytes and phase, before the
    // box is written: the copy instruction runs after this probe, so no wait completes on
    // its bytes before the box has its epochs (the phase may complete here, in the model).
    {
        CS_PROF(29);
        cs_mbar_lock(t.j);
    }
    if (arrive) {  // (an arrival below zero would fault: the copy is skipped with it)
        CS_PROF(30);
        uint32_t w = cs_warp();
        bool live = cs_mbar_live(t.j);  // (not invalidated since the look)
        if (!live) cs_mbar_record(CS_MBARRIER_UNINIT, asite, t.moff, e);
        t.skip = live ? cs_mbar_count(e, CS_MB_ARRIVE_EXPECT_TX, tx_arg, 1, asite, t.moff, w,
                                      cs_vis(slot, w))
                      : 1u;
        if (t.skip || !dlocal) {
            cs_mbar_unlock(t.j);
            return t;
        }
    }
    t.ph = e[CS_MB_PHASE];
    int32_t tx = (int32_t)e[CS_MB_TX];
    // Unknown map: the bytes the phase still expects (exact when one copy fills the phase).
    if (guessed) t.bytes = tx > 0 ? (uint32_t)tx : 0;
    {
        CS_PROF(31);
        cs_mbar_copy_landed(e, t.j, t.ph, t.bytes);
        cs_mbar_unlock(t.j);
    }
    t.span = guessed ? cs_tensor_guess_span(slot, t, site) : t.bytes;  // bytes it writes
    if (!guessed && (off >= end || t.bytes > end - off))
        t.f = {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};
    else
        t.write = t.span != 0;
    return t;
}

// The copy engine of mbarrier j writes granules [g0, g1] at clock clk: every lane of
// `lanes` calls this; the tables in shared memory take the lanes' help, else `lead`
// writes alone.
CS_DEV void cs_tensor_write(uint32_t lanes, uint32_t lead, uint32_t slot, uint32_t g0,
                            uint32_t g1, uint32_t site, uint32_t by, uint32_t clk,
                            cs_finding& f) {
    CS_PROF(18);
    uint32_t base = S.vsh_base / CS_GRANULE_BYTES;
    if (cs_vsh_on() && cs_popc(lanes) > 1 && g0 >= base) {
        cs_found r = cs_vsh_engine_lanes(slot, cs_warp(), g0 - base, g1 - base, site, by, clk,
                                         lanes);
        if (!f.kind) f = r.f;
        return;
    }
    if (cs_lane() != lead) return;
    cs_view v = cs_make_view(slot, cs_warp());
    cs_engine_write(v, g0, g1, site, by, clk, f);
}

// One tensor store by lane `lane` (run by the leader lane): a bulk store of the map's
// box, so its source is read asynchronously until the warp's bulk group is retired by
// cp.async.bulk.wait_group.read, and generic writes reach it only through a proxy fence
// (cs_bulk_store_one). An unknown map is not checked: guessing the source would invent reads.
CS_NOINLINE void cs_tensor_store(uint32_t slot, uint64_t src, uint64_t map, uint32_t lane,
                                 uint32_t site) {
    cs_finding none = {0, CS_NO_SITE, CS_NO_WARP};
    uint32_t off;
    cs_local((uint32_t)src, off);  // .shared::cta: this CTA
    uint32_t bytes = cs_tmap_bytes(map);
    if (bytes == 0) {
        cs_tensor_record(CS_TOOL_TENSOR_MAP_UNKNOWN, site, none, off, off, 0, 0, 0);
        return;
    }
    if (cs_async_proxy()) cs_bulk_store_one(slot, cs_warp(), lane, off, bytes, site);
}

// Every active lane issues its own copy: the leader (the lowest of them) models them in
// lane order. The lanes of the call marked CS_PROBE_OFF (instrument/converge.py) issue
// none but help write the boxes. A load on an mbarrier that is not live is skipped (1),
// as for bulk copies. With CS_TENSOR_ARRIVE_TX, each issuing lane's load carries the
// mbarrier.arrive.expect_tx of `tx` bytes (site asite) its PTX made just before it, on the
// same mbarrier (instrument/carry.py): one probe for both; 1 skips both.
CS_ENTRY uint32_t __consan_tensor(uint64_t smem, uint64_t map, uint64_t mbar, uint32_t site,
                                  uint32_t op, uint32_t tx, uint32_t asite) {
    CS_PROF(11);
#ifdef CONSAN_NULL_TENSOR  // benchmarks only (the model is wrong): the probe call alone
    return 0;
#endif
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return 0;
    uint32_t all = cs_activemask();
    uint32_t active = cs_group(site, 0);  // this call's lanes, those marked off too
    uint32_t issuers = cs_ballot(active, !(op & CS_PROBE_OFF));
    if (!issuers) return 0;
    bool arrive = op & CS_TENSOR_ARRIVE_TX;
    op &= ~(CS_PROBE_OFF | CS_TENSOR_ARRIVE_TX);
    uint32_t leader = cs_ffs(issuers) - 1, skip = 0;
    bool lead = cs_lane() == leader;
    for (uint32_t rest = issuers; rest; rest &= rest - 1) {
        int k = cs_ffs(rest) - 1;
        uint64_t d = cs_bcast64(active, smem, k), m = cs_bcast64(active, map, k);
        uint64_t b = cs_bcast64(active, mbar, k);
        if (op != CS_TENSOR_LOAD) {
            if (lead) cs_tensor_store(slot, d, m, (uint32_t)k, site);
            continue;
        }
        uint32_t ntx = cs_bcast(active, tx, k);
        cs_tload t = {};
        if (lead) {
            CS_PROF(25);
#if defined(CONSAN_SPIN_TENSOR) && !defined(CONSAN_HOST)  // measurements only: a longer look
            for (long long t0 = clock64(); clock64() - t0 < CONSAN_SPIN_TENSOR;) {}
#endif
            t = cs_tensor_load_begin(slot, d, m, b, site, arrive, ntx, asite);
        }
        uint32_t span = cs_bcast(active, t.write ? t.span : 0u, leader);
        if (span) {
            uint32_t off = cs_bcast(active, t.off, leader);
            uint32_t g0 = off / CS_GRANULE_BYTES, g1 = (off + span - 1) / CS_GRANULE_BYTES;
            uint32_t agent = CS_AGENT_MBAR + cs_bcast(active, t.j, leader);
            uint32_t clk = cs_bcast(active, t.ph, leader) + 1;
            cs_tensor_write(active, leader, slot, g0, g1, site, agent, clk, t.f);
        }
        if (lead) {
            CS_PROF(26);
            skip |= t.skip;
            if (t.f.kind)
                cs_tensor_record(t.f.kind, site, t.f, t.off, t.off + t.span, t.moff, t.ph, t.bytes);
        }
    }
    {
        CS_PROF(27);
        skip = cs_guard_verdict(all, skip, leader, site);
    }
    return skip;
}

#ifdef CONSAN_HOST
// Host driver: set which CTA/warp the next probe runs as; begin a CTA.
CS_ENTRY void cs_host_set(uint32_t cx, uint32_t cy, uint32_t cz, uint32_t warp, uint32_t nthreads) {
    cs_host_ctx.cta[0] = cx; cs_host_ctx.cta[1] = cy; cs_host_ctx.cta[2] = cz;
    cs_host_ctx.warp = warp;
    cs_host_ctx.nthreads_block = nthreads;
}
CS_ENTRY void cs_host_set_state(const cs_state_t* s) { __consan_state = *s; }
CS_ENTRY void cs_host_set_dyn(uint8_t* p) { cs_dyn_host = p; }
CS_ENTRY void __consan_cta_begin() {
    if (cs_psh_mode()) return cs_psh_begin(0, 1);
    cs_begin_leader(cs_block_threads());
    if (cs_slot_sh != CS_NO_SLOT) cs_begin_clear(cs_slot_sh, 0, 1, cs_block_threads());
}
CS_ENTRY uint32_t cs_host_slot() { return cs_slot_sh; }
#else
CS_ENTRY void __consan_cta_begin() {
    CS_PROF(13);
    uint32_t tid = cs_tid();
    uint32_t n = cs_block_threads();
#ifdef CONSAN_PSH
    cs_psh_begin(tid, n);
    __syncthreads();
    return;
#endif
    if (tid == 0) cs_begin_leader(n);
    __syncthreads();
    uint32_t slot = cs_slot_sh;
    if (slot != CS_NO_SLOT) cs_begin_clear(slot, tid, n, n);
    __syncthreads();
}
#endif
