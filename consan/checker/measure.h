// consan device checker: measurement-only switches, all of them.
//
// Off in every build consan makes; CONSAN_CHECKER_DEFINES turns them on for the
// benchmarks (benchmarks/breakdown_async.py and the like). With a CONSAN_NULL_* or
// CONSAN_PSH_LANE_BITS switch on, the model is wrong on purpose: they measure what a
// part costs by leaving it out. Each macro below is empty (or the normal expression)
// when its switch is off.

// CONSAN_TRACE_ADDR=<address> (hang hunts, benchmarks/hang_trace.py): mapped host memory,
// two words per thread (CTAs in linear order), that the host reads while the kernel hangs:
// the last point the thread passed and a word of its choosing. CS_TRACE(p) / CS_TRACE2(p,
// aux) mark points (none are left in the code: put them where the hunt needs them); with
// CONSAN_TRACE_PROBES too, every probe marks its entry (0x1000 | kind) and its exit
// (0x9000 | kind). Posted writes only: a read back over the bus changed the timing enough
// to hide the hang it hunted (measured on the H100).
#if defined(CONSAN_TRACE_ADDR) && !defined(CONSAN_HOST)
__device__ __forceinline__ void cs_trace_at(uint32_t p, uint32_t aux = 0) {
    uint32_t cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    volatile uint32_t* t = (volatile uint32_t*)(CONSAN_TRACE_ADDR) +
                           2 * (cta * blockDim.x * blockDim.y * blockDim.z + cs_tid());
    t[0] = p;
    t[1] = aux;
}
#define CS_TRACE(p) cs_trace_at(p)
#define CS_TRACE2(p, a) cs_trace_at(p, a)
#else
#define CS_TRACE(p)
#define CS_TRACE2(p, a)
#endif

// CONSAN_PROFILE (measurements only, benchmarks/breakdown_async.py): the cycles each probe
// kind takes, summed over calls (one lane per call), in cs_prof[2 * kind] (cycles) and
// cs_prof[2 * kind + 1] (calls), the CTAs of odd cluster rank in the second half (a
// producer and a consumer CTA apart); CS_PROF_FULL() counts a post that found a mailbox
// full.
#if defined(CONSAN_PROFILE) && !defined(CONSAN_HOST)
#define CS_PROF_WORDS 512
extern "C" __device__ unsigned long long cs_prof[CS_PROF_WORDS];
__device__ unsigned long long cs_prof[CS_PROF_WORDS];
__device__ __forceinline__ long long cs_clock64() {
    long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
    return t;
}
// cs_prof_part[kind]: the calls made by part of a warp whose lanes all run the kernel (a
// call from a branch some lanes skip, or from a warp left split by one: docs/model.md,
// *Probes called from a branch*).
extern "C" __device__ unsigned long long cs_prof_part[CS_PROF_WORDS / 4];
__device__ unsigned long long cs_prof_part[CS_PROF_WORDS / 4];
struct cs_prof_scope {
    uint32_t k;
    long long t0;
    bool me;
    __device__ cs_prof_scope(uint32_t kind)
        : k(kind + (cs_ctarank() & 1u) * (CS_PROF_WORDS / 4)), t0(cs_clock64()) {
        uint32_t active = __activemask();
        me = cs_lane() == (uint32_t)(__ffs(active) - 1);
        uint32_t nthreads = blockDim.x * blockDim.y * blockDim.z;
        uint32_t first = cs_tid() & ~31u;  // (the warp's lanes that exist)
        uint32_t n = nthreads - first < 32u ? nthreads - first : 32u;
        uint32_t whole = n == 32u ? 0xffffffffu : (1u << n) - 1u;
        if (me && active != whole) atomicAdd(&cs_prof_part[kind], 1ull);
    }
    __device__ ~cs_prof_scope() {
        if (me) {
            atomicAdd(&cs_prof[2 * k], (unsigned long long)(cs_clock64() - t0));
            atomicAdd(&cs_prof[2 * k + 1], 1ull);
        }
    }
};
#define CS_PROF(kind) cs_prof_scope cs_prof_here(kind)
#define CS_PROF_AS(name, kind) cs_prof_scope name(kind)  // (a second scope in one block)
#define CS_PROF_FULL() atomicAdd(&cs_prof[CS_PROF_WORDS - 1], 1ull)
#elif defined(CONSAN_EVTRACE) && !defined(CONSAN_HOST)
// CONSAN_EVTRACE (measurements only, benchmarks/evtrace_async.py): the entry and the exit
// of every CS_PROF scope, with the SM's clock, by the first lane of each of the first
// CS_EV_WARPS warps of the grid's first two CTAs (a cluster's pair): cs_ev[cta][warp][i] =
// clock << 16 | exit << 15 | kind, cs_evn[cta][warp] the events kept (at most CS_EV_N).
// Each event costs a load and two stores to device memory.
#define CS_EV_N 8192
#define CS_EV_WARPS 8
extern "C" __device__ unsigned long long cs_ev[2 * CS_EV_WARPS * CS_EV_N];
__device__ unsigned long long cs_ev[2 * CS_EV_WARPS * CS_EV_N];
extern "C" __device__ unsigned int cs_evn[2 * CS_EV_WARPS];
__device__ unsigned int cs_evn[2 * CS_EV_WARPS];
__device__ __forceinline__ void cs_ev_log(uint32_t kind, uint32_t out) {
    uint32_t cta = cs_cta_linear(), w = cs_warp();
    if (cta >= 2 || w >= CS_EV_WARPS) return;
    if (cs_lane() != (uint32_t)(__ffs(__activemask()) - 1)) return;
    uint32_t i = cta * CS_EV_WARPS + w, n = *(volatile uint32_t*)&cs_evn[i];
    if (n >= CS_EV_N) return;
    long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
    cs_ev[(size_t)i * CS_EV_N + n] =
        ((unsigned long long)t << 16) | ((unsigned long long)out << 15) | (kind & 0x7FFFu);
    *(volatile uint32_t*)&cs_evn[i] = n + 1;
}
struct cs_prof_scope {
    uint32_t k;
    __device__ cs_prof_scope(uint32_t kind) : k(kind) { cs_ev_log(kind, 0); }
    __device__ ~cs_prof_scope() { cs_ev_log(k, 1); }
};
#define CS_PROF(kind) cs_prof_scope cs_prof_here(kind)
#define CS_PROF_AS(name, kind) cs_prof_scope name(kind)
#elif defined(CONSAN_TRACE_ADDR) && defined(CONSAN_TRACE_PROBES) && !defined(CONSAN_HOST)
struct cs_prof_scope {
    uint32_t k;
    __device__ cs_prof_scope(uint32_t kind) : k(kind) { cs_trace_at(0x1000 | kind); }
    __device__ ~cs_prof_scope() { cs_trace_at(0x9000 | k); }
};
#define CS_PROF(kind) cs_prof_scope cs_prof_here(kind)
#define CS_PROF_AS(name, kind) cs_prof_scope name(kind)
#else
#define CS_PROF(kind)
#define CS_PROF_AS(name, kind)
#endif
#ifndef CS_PROF_FULL
#define CS_PROF_FULL() ((void)0)
#endif

// CONSAN_NULL_ACCESS, _WGMMA, _TENSOR, _MBAR, _BULK: the cost of the probe call alone (the
// probe returns at once; _MBAR: for every mbarrier operation but init and inval; _BULK: a
// bulk copy's, st.async's included, so no post reaches a peer whose probes are off).
// CONSAN_NULL_ENGINE_WRITE: the cost of a copy's box walk.
// CONSAN_NULL_BOX_STORES: the cost of the stores of the box-summary path.
// CONSAN_NULL_BOX_RECHECK: the cost of its look after those stores.
#ifdef CONSAN_NULL_ACCESS
#define CS_NULL_ACCESS(...) __VA_ARGS__
#else
#define CS_NULL_ACCESS(...)
#endif
// CONSAN_NULL_READ16: the 16-byte access probe's reads return at once (its writes stay).
#ifdef CONSAN_NULL_READ16
#define CS_NULL_READ16(...) __VA_ARGS__
#else
#define CS_NULL_READ16(...)
#endif
#ifdef CONSAN_NULL_WGMMA
#define CS_NULL_WGMMA(...) __VA_ARGS__
#else
#define CS_NULL_WGMMA(...)
#endif
#ifdef CONSAN_NULL_TENSOR
#define CS_NULL_TENSOR(...) __VA_ARGS__
#else
#define CS_NULL_TENSOR(...)
#endif
#ifdef CONSAN_NULL_MBAR
#define CS_NULL_MBAR(...) __VA_ARGS__
#else
#define CS_NULL_MBAR(...)
#endif
#ifdef CONSAN_NULL_BULK
#define CS_NULL_BULK(...) __VA_ARGS__
#else
#define CS_NULL_BULK(...)
#endif
#ifdef CONSAN_NULL_ENGINE_WRITE
#define CS_NULL_ENGINE_WRITE(...) __VA_ARGS__
#else
#define CS_NULL_ENGINE_WRITE(...)
#endif
// CONSAN_PEER_BY_ISSUER=n: what a peer's copy would cost were its issuing warp to write
// this CTA's tables itself (through distributed shared memory) and post only its landing:
// the owner's apply skips the issuer's view and the write (its mbarrier's landing stays),
// and the issuing warp spends n cycles a post instead (the remote write it would make).
// The model is wrong in such a build: the copy's bytes keep their older epochs.
#ifdef CONSAN_PEER_BY_ISSUER
#define CS_PEER_BY_ISSUER 1
#define CS_PEER_WRITE_CYCLES (CONSAN_PEER_BY_ISSUER)
#else
#define CS_PEER_BY_ISSUER 0
#define CS_PEER_WRITE_CYCLES 0
#endif
#ifdef CONSAN_NULL_BOX_STORES
#define CS_NULL_BOX_STORES(...) __VA_ARGS__
#else
#define CS_NULL_BOX_STORES(...)
#endif
#ifdef CONSAN_NULL_BOX_RECHECK
#define CS_NULL_BOX_RECHECK(...) __VA_ARGS__
#else
#define CS_NULL_BOX_RECHECK(...)
#endif
// CONSAN_NULL_READ_SITES: the reads of warps and wgmma units in the shared-memory tables
// store their bytes and summaries but not their sites (device memory), in every granule size:
// what those stores cost (reports then name stale sites). CONSAN_NULL_READ_FENCE: those reads' fence between
// publishing and looking at the writes is left out: what it costs (the model is wrong
// then: a write beside the read may miss it, and the read the write).
#ifdef CONSAN_NULL_READ_SITES
#define CS_READ_SITES 0
#else
#define CS_READ_SITES 1
#endif
#ifdef CONSAN_NULL_READ_FENCE
#define CS_READ_FENCE() ((void)0)
#else
#define CS_READ_FENCE() cs_fence()
#endif

// CONSAN_NULL_ARRIVE_RELEASE: an arrive releases no clock into its phase's slot (a wait then
// acquires only what copies' landings and other arrivals left: the model is wrong), and
// CONSAN_NULL_COPY_READERS: a copy engine's box write (lanes build) skips its readers'
// summaries after the fence (a read before the copy goes unjudged): what each part costs a
// kernel's path in the build that runs (a profile build's scopes inside a part cost more
// than the part).
#ifdef CONSAN_NULL_ARRIVE_RELEASE
#define CS_ARRIVE_RELEASE 0
#else
#define CS_ARRIVE_RELEASE 1
#endif
#ifdef CONSAN_NULL_COPY_READERS
#define CS_COPY_READERS 0
#else
#define CS_COPY_READERS 1
#endif

// CONSAN_NULL_INIT_SLOTS: an mbarrier init leaves its clock slots as the slot's earlier
// CTAs left them (the model is wrong then: a wait may acquire a stale clock): what emptying
// them costs.
#ifdef CONSAN_NULL_INIT_SLOTS
#define CS_INIT_SLOTS 0
#else
#define CS_INIT_SLOTS 1
#endif

// CONSAN_PSH_NO_FENCE, _NULL_READ, _NULL_WRITE (phase tables in shared memory): the cost
// of the access probe's fences, of its reads, of its writes (measurements only).
#ifdef CONSAN_PSH_NO_FENCE
#define CS_PSH_FENCE() ((void)0)
#else
#define CS_PSH_FENCE() cs_fence()
#endif
#ifdef CONSAN_PSH_NULL_READ
#define CS_PSH_NULL_READ(...) __VA_ARGS__
#else
#define CS_PSH_NULL_READ(...)
#endif
#ifdef CONSAN_PSH_NULL_WRITE
#define CS_PSH_NULL_WRITE(...) __VA_ARGS__
#else
#define CS_PSH_NULL_WRITE(...)
#endif

// CONSAN_PSH_LANE_BITS: in the phase tables in shared memory, every lane sets its own
// read bits (the lanes never combine theirs).
#ifdef CONSAN_PSH_LANE_BITS
#define CS_LANE_BITS_TOGETHER(together) false
#else
#define CS_LANE_BITS_TOGETHER(together) (together)
#endif

// CONSAN_SPIN_<KIND>=n (measurement builds, benchmarks/breakdown_async.py --spin): every
// call of one probe kind made n cycles longer, so the kernel's time says how many of its
// calls lie on its critical path. TENSOR: a tensor load's look (its leader); WGMMA: a wgmma
// probe; MBAR: an mbarrier operation that is not a wait (its leader; inits included); INIT:
// an mbarrier init alone (its leader); WAIT: a successful wait (its leader); ACCESS: a
// shared-memory access probe (its lanes); BAR: a CTA barrier's arrival (its lanes). Device
// builds only; a kind left at 0 compiles to nothing.
#ifndef CONSAN_SPIN_TENSOR
#define CONSAN_SPIN_TENSOR 0
#endif
#ifndef CONSAN_SPIN_WGMMA
#define CONSAN_SPIN_WGMMA 0
#endif
#ifndef CONSAN_SPIN_MBAR
#define CONSAN_SPIN_MBAR 0
#endif
#ifndef CONSAN_SPIN_WAIT
#define CONSAN_SPIN_WAIT 0
#endif
#ifndef CONSAN_SPIN_INIT
#define CONSAN_SPIN_INIT 0
#endif
#ifndef CONSAN_SPIN_ACCESS
#define CONSAN_SPIN_ACCESS 0
#endif
#ifndef CONSAN_SPIN_BAR
#define CONSAN_SPIN_BAR 0
#endif
// CONSAN_SPIN_RANK=r: only the CTAs of cluster rank r spin (which CTA of a cluster's pair
// the critical path runs through).
#ifndef CONSAN_SPIN_RANK
#define CONSAN_SPIN_RANK -1
#endif
#ifdef CONSAN_HOST
#define CS_SPIN(n, cond)
#else
#define CS_SPIN(n, cond) \
    if ((n) > 0 && (cond) && (CONSAN_SPIN_RANK < 0 || (int)cs_ctarank() == CONSAN_SPIN_RANK)) \
        for (long long t0 = clock64(); clock64() - t0 < (n);) {}
#endif

// CONSAN_STAMPS (measurements only, benchmarks/timeline_async.py): a CTA's timeline, 16
// words a CTA (linear index, the first CS_STAMP_CTAS): 0 %globaltimer at its begin probe,
// 1 clock64 there, 2 clock64 when the begin probe returns, 3 clock64 when thread 0 leaves
// its first CTA-barrier wait probe, 4 clock64 at the first thread-exit probe, 5 clock64 and
// 6 %globaltimer at the end of the last one, 7 thread 0's cycles in mbarrier inits, 8 + w
// clock64 when warp w (< 4) first enters a CTA-barrier arrive probe; from 12 (warp 0) and
// 22 (warp 1), lane 0's cycles in CS_STAMP_SCOPE(k) probes, k: 0 CTA barriers, 1 tensor
// copies, 2 mbarriers, 3 wgmma, 4 shared accesses, 5 bulk copies, and its calls of the
// first four in 18-21 (warp 0) and 28-31 (warp 1). A few stores and atomics a CTA, none
// shared between CTAs: unlike CONSAN_PROFILE's scopes they leave the timing nearly alone.
// Words 32-47: thread 0's cycles in the parts of a probe marked CS_STAMP_PART(k).
#if defined(CONSAN_STAMPS) && !defined(CONSAN_HOST)
#define CS_STAMP_CTAS 4096
extern "C" __device__ unsigned long long cs_stamps[CS_STAMP_CTAS * 48];
__device__ unsigned long long cs_stamps[CS_STAMP_CTAS * 48];
__device__ __forceinline__ unsigned long long cs_stamp_clock() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
    return t;
}
__device__ __forceinline__ unsigned long long cs_stamp_global() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ unsigned long long* cs_stamp_at(uint32_t k) {
    uint32_t cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    return cta < CS_STAMP_CTAS ? &cs_stamps[cta * 48 + k] : 0;
}
// word k set once (the first caller), or raised to the latest (`latest`)
__device__ __forceinline__ void cs_stamp(uint32_t k, unsigned long long v, bool latest = false) {
    unsigned long long* p = cs_stamp_at(k);
    if (!p) return;
    if (latest) atomicMax(p, v);
    else atomicCAS(p, 0ull, v);
}
struct cs_stamp_scope {
    int k, calls;  // the cycles' word and the calls' (-1: none)
    unsigned long long t0;
    __device__ cs_stamp_scope(uint32_t kind) : k(-1), calls(-1), t0(0) {
        uint32_t tid = cs_tid();
        if (tid != 0 && tid != 32) return;
        k = (tid == 0 ? 12 : 22) + (int)kind;
        calls = kind < 4 ? k + 6 : -1;
        t0 = cs_stamp_clock();
    }
    __device__ ~cs_stamp_scope() {
        if (k < 0 || !cs_stamp_at(k)) return;
        atomicAdd(cs_stamp_at(k), cs_stamp_clock() - t0);
        if (calls >= 0) atomicAdd(cs_stamp_at(calls), 1ull);
    }
};
#define CS_STAMP(...) __VA_ARGS__
#define CS_STAMP_SCOPE(kind) cs_stamp_scope cs_stamp_here(kind)
struct cs_stamp_part {
    int k;
    unsigned long long t0;
    __device__ cs_stamp_part(uint32_t kind) : k(cs_tid() == 0 ? 32 + (int)kind : -1), t0(cs_stamp_clock()) {}
    __device__ ~cs_stamp_part() {
        if (k >= 0 && cs_stamp_at(k)) atomicAdd(cs_stamp_at(k), cs_stamp_clock() - t0);
    }
};
#define CS_STAMP_PART(kind) cs_stamp_part cs_stamp_part_here(kind)
#define CS_STAMP_PART_AS(name, kind) cs_stamp_part name(kind)
#else
#define CS_STAMP_PART(kind)
#define CS_STAMP_PART_AS(name, kind)
#define CS_STAMP(...)
#define CS_STAMP_SCOPE(kind)
#endif
