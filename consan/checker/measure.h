// consan device checker: measurement-only switches.
//
// Off in every build consan makes; CONSAN_CHECKER_DEFINES turns them on for the
// benchmarks (benchmarks/breakdown_async.py and the like).

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
