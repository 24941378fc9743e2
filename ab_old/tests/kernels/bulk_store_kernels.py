"""Bulk-store kernels (seed 002) shared by the GPU test and its CPU twin.

Each source has a placeholder that the racy and the clean variant fill
differently (`variant()`); markers `// @name` name the lines the reports must
point at. The kernels need sm_90 (cp.async.bulk) and launch 256 threads per
CTA, one tile of 256 floats per CTA and tile.
"""

from __future__ import annotations

BULK = r"""
__device__ __forceinline__ unsigned sa(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
#define BULK_STORE(dst, src, n) asm volatile( \
    "cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" \
    :: "l"(dst), "r"(sa(src)), "r"(n) : "memory")
#define BULK_REDUCE_ADD(dst, src, n) asm volatile( \
    "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" \
    :: "l"(dst), "r"(sa(src)), "r"(n) : "memory")
#define BULK_COMMIT() asm volatile("cp.async.bulk.commit_group;" ::: "memory")
#define BULK_WAIT(n) asm volatile("cp.async.bulk.wait_group %0;" :: "n"(n) : "memory")
#define BULK_WAIT_READ(n) asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(n) : "memory")
#define FENCE_PROXY_ASYNC() asm volatile("fence.proxy.async.shared::cta;" ::: "memory")
"""

# Seed 002: every thread writes the tile with generic stores, a barrier, one thread
# hands the tile to the bulk-store unit. Without fence.proxy.async before the barrier
# the async proxy may read stale bytes.
PROXY_FENCE = BULK + r"""
extern "C" __global__ void epilogue_store(const float* in, float* out) {
    __shared__ __align__(128) float tile[256];
    int t = threadIdx.x;
    tile[t] = in[blockIdx.x * 256 + t] * 2.0f + 1.0f;  // @write
    FENCE_HERE
    __syncthreads();
    if (t == 0) {
        STORE_OP(out + blockIdx.x * 256, tile, 1024);  // @store
        BULK_COMMIT();
        BULK_WAIT(0);
    }
}
"""

# Two tiles through one buffer: the second tile may overwrite the buffer only once the
# bulk store of the first has read it (cp.async.bulk.wait_group.read, then a barrier).
SOURCE_REUSE = BULK + r"""
extern "C" __global__ void tiles_store(const float* in, float* out) {
    __shared__ __align__(128) float tile[256];
    int t = threadIdx.x;
    for (int k = 0; k < 2; ++k) {
        tile[t] = in[(blockIdx.x * 2 + k) * 256 + t] + (float)k;  // @fill
        FENCE_PROXY_ASYNC();
        __syncthreads();
        if (t == 0) {
            BULK_STORE(out + (blockIdx.x * 2 + k) * 256, tile, 1024);  // @store
            BULK_COMMIT();
            WAIT_HERE
        }
        __syncthreads();
    }
    if (t == 0) BULK_WAIT(0);
}
"""

# name: (source, kernel, placeholder, racy text, clean text, kind, marker of the reported
# access, marker of the earlier site, tiles per CTA)
CASES = {
    "missing-fence": (PROXY_FENCE.replace("STORE_OP", "BULK_STORE"), "epilogue_store",
                      "FENCE_HERE", "", "FENCE_PROXY_ASYNC();", "proxy.missing-fence",
                      "@store", "@write", 1),
    "missing-fence-reduce": (PROXY_FENCE.replace("STORE_OP", "BULK_REDUCE_ADD"), "epilogue_store",
                             "FENCE_HERE", "", "FENCE_PROXY_ASYNC();", "proxy.missing-fence",
                             "@store", "@write", 1),
    "source-overwritten": (SOURCE_REUSE, "tiles_store", "WAIT_HERE", "", "BULK_WAIT_READ(0);",
                           "async.pending-read", "@fill", "@store", 2),
}
THREADS = 256
CTAS = 4


def variant(name: str, racy: bool) -> str:
    src, _kernel, hole, bad, good, *_ = CASES[name]
    return src.replace(hole, bad if racy else good)
