// Found by an adversarial review: the proof before launch once accepted it (and on an
// H100 warp 1 read the stale -1s).
// block (64, 1, 1)
// Half of warp 0 returns; the hardware counts its bar.arrive as 32 threads, so its first
// arrival and warp 1's bar.sync complete the generation before warp 0's store.
#include "review_macros.h"
__device__ __forceinline__ void bsync(int id, int n) { asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void barr(int id, int n) { asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(n) : "memory"); }
extern "C" __global__ void k(int* out) {
    __shared__ int s[16];
    int t = threadIdx.x, w = t / 32, lane = t % 32;
    if (t < 16) s[t] = -1;
    __syncthreads();
    if (w == 0) {
        if (lane >= 16) asm volatile("ret;");
        barr(1, 64);
        s[lane] = lane;
        barr(1, 64);
    } else {
        bsync(1, 64);
        out[lane] = s[lane & 15];
    }
}
