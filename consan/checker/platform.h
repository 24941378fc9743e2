// consan device checker: platform shims.
//
// The types, and the device operations the checker uses (lanes, votes, fences, atomics,
// loads and stores of each scope), once for the GPU and once for the host build
// (-DCONSAN_HOST: one lane per warp, the tests' event traces drive it).

#ifdef CONSAN_HOST
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
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

#ifdef CONSAN_HOST
#define CS_DEV static inline
#define CS_ENTRY extern "C"
#define CS_SHARED static
struct cs_host_ctx_t { uint32_t cta[3]; uint32_t warp; uint32_t nthreads_block; };
static cs_host_ctx_t cs_host_ctx;
extern "C" {
cs_state_t __consan_state;
}
CS_DEV uint32_t cs_lane() { return 0; }
CS_DEV bool cs_entered() { return true; }
CS_DEV uint32_t cs_warp() { return cs_host_ctx.warp; }
CS_DEV uint32_t cs_tid() { return cs_host_ctx.warp * 32u; }
CS_DEV uint32_t cs_activemask() { return 1u; }
CS_DEV uint32_t cs_group(uint64_t, uint64_t) { return 1u; }
CS_DEV uint32_t cs_match(uint32_t, uint64_t) { return 1u; }
CS_DEV uint32_t cs_sum(uint32_t, uint32_t v) { return v; }
CS_DEV bool cs_any(uint32_t, bool p) { return p; }
static uint32_t cs_host_ms;  // the host driver's clock: every look advances it 100 ms
CS_DEV uint32_t cs_now_ms() { return cs_host_ms += 100; }
CS_DEV void cs_exit_thread() {}
static uint32_t cs_host_hw_arrivals[16];  // the host build's barrier.arrive, counted per call
CS_DEV void cs_hw_bar_arrive(uint32_t b, uint32_t) { cs_host_hw_arrivals[b & 15u] += 1; }
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
CS_DEV void cs_pause() {}
CS_DEV void cs_syncwarp(uint32_t) {}
// The device build's cs_ld32 ... cs_st128 and cs_g_st are global-space accesses: on shared
// memory they fault (cudaErrorInvalidAddressSpace; on the H100, a visibility row read so
// where the granule tables are in shared memory). The host build holds the launch's dynamic
// shared memory in one buffer (cs_host_set_dyn) and stops at any such access into it.
static const uint8_t* cs_host_smem_lo;
static const uint8_t* cs_host_smem_hi;
template <class T> CS_DEV T* cs_host_global(T* p) {
    const uint8_t* b = (const uint8_t*)p;
    if (b >= cs_host_smem_lo && b < cs_host_smem_hi) {
        fprintf(stderr, "consan host build: a global-space access to shared memory (%p)\n",
                (const void*)p);
        abort();
    }
    return p;
}
CS_DEV uint32_t cs_ld32(const uint32_t* p) { return __atomic_load_n(cs_host_global(p), __ATOMIC_RELAXED); }
CS_DEV uint32_t cs_ld32_acq(const uint32_t* p) { return __atomic_load_n(cs_host_global(p), __ATOMIC_ACQUIRE); }
CS_DEV uint64_t cs_ld64(const uint64_t* p) { return __atomic_load_n(cs_host_global(p), __ATOMIC_RELAXED); }
CS_DEV void cs_st32(uint32_t* p, uint32_t v) { __atomic_store_n(cs_host_global(p), v, __ATOMIC_RELAXED); }
CS_DEV void cs_st64(uint64_t* p, uint64_t v) { __atomic_store_n(cs_host_global(p), v, __ATOMIC_RELAXED); }
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
CS_DEV uint64_t cs_gld64(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
CS_DEV void cs_sst32(uint32_t* p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
CS_DEV int cs_popc(uint32_t v) { return __builtin_popcount(v); }
CS_DEV int cs_ffs(uint32_t v) { return __builtin_ffs(v); }
CS_DEV int cs_ffsll(uint64_t v) { return __builtin_ffsll(v); }
CS_DEV int cs_clz(uint32_t v) { return v ? __builtin_clz(v) : 32; }
CS_DEV bool cs_is_shared(uint64_t) { return true; }
CS_DEV uint32_t cs_to_shared(uint64_t a) { return (uint32_t)a; }
CS_DEV bool cs_is_cluster_shared(uint64_t) { return false; }
CS_DEV uint32_t cs_to_cluster_shared(uint64_t a) { return (uint32_t)a; }
CS_DEV void cs_cta_id(uint32_t* c) { c[0] = cs_host_ctx.cta[0]; c[1] = cs_host_ctx.cta[1]; c[2] = cs_host_ctx.cta[2]; }
CS_DEV uint32_t cs_block_threads() { return cs_host_ctx.nthreads_block; }
CS_DEV uint32_t cs_cta_linear() { return cs_host_ctx.cta[0]; }
CS_DEV uint32_t cs_ctarank() { return 0; }
CS_DEV uint32_t cs_cluster_ranks() { return CS_REMOTE_RANKS; }  // (host tests post as any rank)
// Another CTA's shared word (the host build has one CTA: its own).
CS_DEV uint32_t cs_peer_ld(uint32_t* p, uint32_t) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
CS_DEV void cs_peer_st(uint32_t* p, uint32_t, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
CS_DEV uint32_t cs_peer_cas(uint32_t* p, uint32_t, uint32_t c, uint32_t v) { return cs_cas32(p, c, v); }
CS_DEV void cs_fence_cluster() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
CS_DEV uint32_t cs_ld_acq_cluster(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
CS_DEV void cs_cluster_sync() {}
// (vector operations need 16-byte alignment on the device: the host build checks it)
CS_DEV cs_sp cs_al16(cs_sp a) { if (a & 15) abort(); return a; }
#else
#define CS_DEV static __device__ __forceinline__
// CONSAN_ABI_PRESERVE=N: every entry preserves N of its caller's registers (.abi_preserve N),
// as the module's declarations of the probes say (consan/toolchain.py, probe_preserve).
#ifdef CONSAN_ABI_PRESERVE
#define CS_PRAGMA_(x) _Pragma(#x)
#define CS_PRAGMA(x) CS_PRAGMA_(x)
#define CS_ENTRY CS_PRAGMA(nv_abi preserve_n_data(CONSAN_ABI_PRESERVE)) extern "C" __device__
#else
#define CS_ENTRY extern "C" __device__
#endif
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
CS_DEV uint32_t cs_lane() { uint32_t l; asm volatile("mov.u32 %0, %%laneid;" : "=r"(l)); return l; }
// Always true, per lane, and no compiler can prove it (a lane's bit of %lanemask_eq): see
// CS_REJOINED.
CS_DEV bool cs_entered() {
    uint32_t m;
    asm volatile("mov.u32 %0, %%lanemask_eq;" : "=r"(m));
    return m != 0;
}
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
// The hardware's arrival of this thread at named barrier b of n threads (not aligned: the
// lanes of a warp leaving the kernel need not be all of it).
CS_DEV void cs_hw_bar_arrive(uint32_t b, uint32_t n) {
    asm volatile("barrier.arrive %0, %1;" ::"r"(b), "r"(n) : "memory");
}
CS_DEV bool cs_all(uint32_t m, bool p) { return __all_sync(m, p); }
CS_DEV uint32_t cs_ballot(uint32_t m, bool p) { return __ballot_sync(m, p); }
CS_DEV uint32_t cs_nth_set(uint32_t m, uint32_t k) { return __fns(m, 0, (int)k + 1); }
CS_DEV uint32_t cs_min(uint32_t m, uint32_t v) { return __reduce_min_sync(m, v); }
CS_DEV uint32_t cs_max(uint32_t m, uint32_t v) { return __reduce_max_sync(m, v); }
CS_DEV uint32_t cs_or(uint32_t m, uint32_t v) { return __reduce_or_sync(m, v); }
CS_DEV uint32_t cs_sum(uint32_t m, uint32_t v) { return __reduce_add_sync(m, v); }
CS_DEV uint32_t cs_bcast(uint32_t m, uint32_t v, int lane) { return __shfl_sync(m, v, lane); }
CS_DEV void cs_fence() { __threadfence_block(); }
// Enough for a lock (what was written under it is seen by the next holder); not for the
// probes' store-then-load (Dekker) orders, which take cs_fence.
CS_DEV void cs_fence_lock() { asm volatile("fence.acq_rel.cta;" ::: "memory"); }
CS_DEV void cs_fence_sys() { __threadfence_system(); }
// A spinning lane's pause between looks at a word another warp holds: its loads and
// atomics in the same shared memory slowed the holder down (cs_mbar_lock says by how much).
CS_DEV void cs_pause() { __nanosleep(64); }
CS_DEV void cs_syncwarp(uint32_t m) { __syncwarp(m); }
// Shadow tables belong to one CTA (one SM): relaxed CTA-scope accesses may hit in L1.
CS_DEV uint32_t cs_ld32(const uint32_t* p) {
    uint32_t v; asm volatile("ld.relaxed.cta.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
// A load that later loads cannot pass, without the MEMBAR of a relaxed load and
// fence.acq_rel.cta after it (which also orders the thread's earlier accesses).
CS_DEV uint32_t cs_ld32_acq(const uint32_t* p) {
    uint32_t v; asm volatile("ld.acquire.cta.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
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
// A generic address in the shared window of another CTA of the cluster (mapa.u64).
CS_DEV bool cs_is_cluster_shared(uint64_t a) {
#if __CUDA_ARCH__ >= 900
    uint32_t r;
    asm("{\n .reg .pred p;\n isspacep.shared::cluster p, %1;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(r) : "l"(a));
    return r != 0;
#else
    return false;
#endif
}
CS_DEV uint32_t cs_to_cluster_shared(uint64_t a) {
#if __CUDA_ARCH__ >= 900
    uint64_t r;
    asm("cvta.to.shared::cluster.u64 %0, %1;" : "=l"(r) : "l"(a));
    return (uint32_t)r;
#else
    return (uint32_t)a;
#endif
}
CS_DEV void cs_cta_id(uint32_t* c) { c[0] = blockIdx.x; c[1] = blockIdx.y; c[2] = blockIdx.z; }
CS_DEV uint32_t cs_block_threads() { return blockDim.x * blockDim.y * blockDim.z; }
CS_DEV uint32_t cs_cta_linear() {
    return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}
// A function returning a cluster special register, or `none` before sm_90 (no clusters).
#if __CUDA_ARCH__ >= 900
#define CS_CLUSTER_SREG(reg, none)              \
    uint32_t v;                                 \
    asm("mov.u32 %0, %%" reg ";" : "=r"(v));    \
    return v
#else
#define CS_CLUSTER_SREG(reg, none) return none
#endif
CS_DEV uint32_t cs_ctarank() { CS_CLUSTER_SREG("cluster_ctarank", 0u); }
// The CTAs of this CTA's cluster (1 without one).
CS_DEV uint32_t cs_cluster_ranks() { CS_CLUSTER_SREG("cluster_nctarank", 1u); }
// The word at p in the shared memory of the cluster's CTA `rank` (mapa, then a
// .shared::cluster access: distributed shared memory). Only modules with multicast copies
// call these, and those need sm_90.
#if __CUDA_ARCH__ >= 900
CS_DEV uint32_t cs_peer_addr(const uint32_t* p, uint32_t rank) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p), r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    return r;
}
CS_DEV uint32_t cs_peer_ld(uint32_t* p, uint32_t rank) {
    uint32_t v;
    asm volatile("ld.relaxed.cluster.shared::cluster.u32 %0, [%1];"
                 : "=r"(v) : "r"(cs_peer_addr(p, rank)) : "memory");
    return v;
}
CS_DEV void cs_peer_st(uint32_t* p, uint32_t rank, uint32_t v) {
    asm volatile("st.relaxed.cluster.shared::cluster.u32 [%0], %1;"
                 :: "r"(cs_peer_addr(p, rank)), "r"(v) : "memory");
}
CS_DEV uint32_t cs_peer_cas(uint32_t* p, uint32_t rank, uint32_t c, uint32_t v) {
    uint32_t o;
    asm volatile("atom.relaxed.cluster.shared::cluster.cas.b32 %0, [%1], %2, %3;"
                 : "=r"(o) : "r"(cs_peer_addr(p, rank)), "r"(c), "r"(v) : "memory");
    return o;
}
CS_DEV void cs_fence_cluster() { asm volatile("fence.acq_rel.cluster;" ::: "memory"); }
// A word of this CTA's shared memory another CTA of the cluster published with a release
// (a post's last word): the loads after it see what was stored before that release, with
// no fence (which also waits for this thread's own earlier accesses).
CS_DEV uint32_t cs_ld_acq_cluster(const uint32_t* p) {
    uint32_t v;
    asm volatile("ld.acquire.cluster.shared::cta.u32 %0, [%1];"
                 : "=r"(v) : "r"((uint32_t)__cvta_generic_to_shared(p)) : "memory");
    return v;
}
// Every thread of the cluster (aligned: every thread of the CTA runs it together).
CS_DEV void cs_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
#else
CS_DEV uint32_t cs_peer_ld(uint32_t* p, uint32_t) { return *(volatile uint32_t*)p; }
CS_DEV void cs_peer_st(uint32_t* p, uint32_t, uint32_t v) { *(volatile uint32_t*)p = v; }
CS_DEV uint32_t cs_peer_cas(uint32_t* p, uint32_t, uint32_t c, uint32_t v) { return atomicCAS(p, c, v); }
CS_DEV void cs_fence_cluster() { __threadfence_block(); }
CS_DEV uint32_t cs_ld_acq_cluster(const uint32_t* p) {
    uint32_t v = *(const volatile uint32_t*)p;
    __threadfence_block();
    return v;
}
CS_DEV void cs_cluster_sync() {}
#endif
#endif

#ifdef CONSAN_HOST
#define CS_NOINLINE static
#else
#define CS_NOINLINE static __device__ __noinline__
#endif

// (CS_RANK_SHIFT, abi.RANK_SHIFT: in a cluster launch a shared address carries its CTA's rank
// from that bit)

// A .shared::cluster address of any CTA of the cluster: its rank is the high bits (rank 0's
// have none, which a CTA of another rank must not take for its own); `off`, its offset in
// that CTA's window.
CS_DEV bool cs_local_cluster(uint32_t a, uint32_t& off) {
    off = a & ((1u << CS_RANK_SHIFT) - 1u);
    return (a >> CS_RANK_SHIFT) == cs_ctarank();
}
// The same for the shared-address operands of mbarrier, copy and .shared::cta accesses,
// where an address with no rank bits is taken for this CTA's.
CS_DEV bool cs_local(uint32_t a, uint32_t& off) {
    return cs_local_cluster(a, off) || (a >> CS_RANK_SHIFT) == 0;
}

// Where an access's address (of abi space `space`) lies: CS_AT_HERE, in this CTA's window
// (`off`: its offset there); CS_AT_REMOTE, another CTA's shared memory; CS_AT_ELSEWHERE, a
// generic address outside shared memory.
#define CS_AT_HERE 0u
#define CS_AT_REMOTE 1u
#define CS_AT_ELSEWHERE 2u
// The .shared::cluster address of an access's address (of abi space `space`).
CS_DEV uint32_t cs_cluster_addr(uint64_t addr, uint32_t space) {
    return space == CS_SPACE_GENERIC ? cs_to_cluster_shared(addr) : (uint32_t)addr;
}
CS_DEV uint32_t cs_where(uint64_t addr, uint32_t space, uint32_t& off) {
    if (space == CS_SPACE_GENERIC) {
        if (cs_is_shared(addr)) return cs_local(cs_to_shared(addr), off) ? CS_AT_HERE : CS_AT_REMOTE;
        if (!cs_is_cluster_shared(addr)) return CS_AT_ELSEWHERE;  // (a peer's window: mapa.u64)
        return cs_local_cluster(cs_to_cluster_shared(addr), off) ? CS_AT_HERE : CS_AT_REMOTE;
    }
    if (space == CS_SPACE_CLUSTER)
        return cs_local_cluster((uint32_t)addr, off) ? CS_AT_HERE : CS_AT_REMOTE;
    return cs_local((uint32_t)addr, off) ? CS_AT_HERE : CS_AT_REMOTE;
}
#define S (__consan_state)

// An entry of the checker whose lanes leave it together. A probe's lanes part on their
// verdicts, and a callee's own convergence barriers do not join them before its return:
// on the H100 a warp came back from such a probe split (`__activemask()` 1 and 31 where
// natively 32, every checker build), and stayed split in the kernel. The body runs under a
// per-lane test that always holds (cs_entered): ptxas puts a convergence barrier around a
// branch it cannot prove uniform, and its closing BSYNC, before the return, makes the
// lanes that entered one group again. Written as
//   CS_REJOINED(uint32_t, __consan_x, (uint32_t a, uint32_t b), (a, b)) { ...body... }
// (CS_REJOINED_VOID for an entry that returns nothing).
#define CS_REJOINED(type, name, params, args)                     \
    CS_DEV type name##_body params;                               \
    CS_ENTRY type name params {                                   \
        type r = 0;                                               \
        if (cs_entered()) r = name##_body args;                   \
        return r;                                                 \
    }                                                             \
    CS_DEV type name##_body params
#define CS_REJOINED_VOID(name, params, args)                      \
    CS_DEV void name##_body params;                               \
    CS_ENTRY void name params {                                   \
        if (cs_entered()) name##_body args;                       \
    }                                                             \
    CS_DEV void name##_body params

// The same for an entry that may find a deadlock (a guarded operation's verdict 2, or a
// barrier after another warp left): its body sets `cs_leaving` and returns, and the entry
// makes the deadlock's wind-down (cs_leave_out: the thread leaves the kernel) after it,
// still inside the entry's region (test_rejoin.py holds each such entry to one region
// before its return). Inlined into each such probe, the wind-down was about 3.7k SASS
// instructions of code only a deadlock runs; out of line, on the H100 (ab_async.py, device
// time alone): the TMA ring 0.177 -> 0.172 ms, the TMA + wgmma GEMM 0.279 -> 0.272, the
// clustered ring 1.998 -> 1.890. A call from the body's branches would have released the
// lanes waiting at its convergence barriers (docs/model.md, *Probes called from a
// branch*); here every lane of the call makes it at once (they share the verdict), and the
// callee clears no convergence barrier (it keeps to B0-B5). `site` must name one of the
// entry's parameters.
#define CS_STRIP(...) __VA_ARGS__
#define CS_REJOINED_LEAVING(type, name, params, args)                            \
    CS_DEV type name##_body(bool& cs_leaving, CS_STRIP params);                  \
    CS_ENTRY type name params {                                                  \
        type r = 0;                                                              \
        bool cs_leaving = false;                                                 \
        if (cs_entered()) {                                                      \
            r = name##_body(cs_leaving, CS_STRIP args);                          \
            if (cs_leaving) cs_leave_out(site);                                  \
        }                                                                        \
        return r;                                                                \
    }                                                                            \
    CS_DEV type name##_body(bool& cs_leaving, CS_STRIP params)
#define CS_REJOINED_VOID_LEAVING(name, params, args)                             \
    CS_DEV void name##_body(bool& cs_leaving, CS_STRIP params);                  \
    CS_ENTRY void name params {                                                  \
        bool cs_leaving = false;                                                 \
        if (cs_entered()) {                                                      \
            name##_body(cs_leaving, CS_STRIP args);                              \
            if (cs_leaving) cs_leave_out(site);                                  \
        }                                                                        \
    }                                                                            \
    CS_DEV void name##_body(bool& cs_leaving, CS_STRIP params)
