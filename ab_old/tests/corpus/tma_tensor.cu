// consan-corpus: sm_90a-only
// TMA tensor copies (cp.async.bulk.tensor 2D) with a __grid_constant__ CUtensorMap parameter.
// cuda.h is not available to NVRTC, so declare an opaque 128-byte, 64-byte aligned struct.

struct __align__(64) TensorMap128 {
    unsigned long long opaque[16];
};

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

#define TILE_M 64
#define TILE_N 64

// Load a 64x64 f32 tile via TMA, scale it, write it back via TMA store. Launch: 128 threads.
extern "C" __global__ void tma_load_store_2d(const __grid_constant__ TensorMap128 in_map,
                                             const __grid_constant__ TensorMap128 out_map, float scale) {
    __shared__ __align__(128) float tile[TILE_M * TILE_N];
    __shared__ __align__(8) unsigned long long bar;
    unsigned b = smem_u32(&bar);
    int c0 = blockIdx.x * TILE_N, c1 = blockIdx.y * TILE_M;
    unsigned long long in_desc = reinterpret_cast<unsigned long long>(&in_map);
    unsigned long long out_desc = reinterpret_cast<unsigned long long>(&out_map);
    if (threadIdx.x == 0) {
        asm volatile("prefetch.tensormap [%0];" ::"l"(in_desc) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(1) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(TILE_M * TILE_N * 4)
                     : "memory");
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
            "[%4];" ::"r"(smem_u32(tile)),
            "l"(in_desc), "r"(c0), "r"(c1), "r"(b)
            : "memory");
    }
    asm volatile(
        "{\n\t.reg .pred P1;\n"
        "LAB_WAIT:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t"
        "@P1 bra DONE;\n\t"
        "bra LAB_WAIT;\n"
        "DONE:\n\t}" ::"r"(b),
        "r"(0)
        : "memory");
    for (int i = threadIdx.x; i < TILE_M * TILE_N; i += blockDim.x) tile[i] *= scale;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(out_desc),
                     "r"(c0), "r"(c1), "r"(smem_u32(tile))
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    __syncthreads();
}

// Pipelined TMA loads of a column of tiles, reduction into a register, TMA 1D and 3D variants.
extern "C" __global__ void tma_pipeline_rows(const __grid_constant__ TensorMap128 map,
                                             const __grid_constant__ TensorMap128 map3d, float* out, int ntiles) {
    __shared__ __align__(128) float tiles[2][32 * 32];
    __shared__ __align__(8) unsigned long long full[2];
    unsigned long long desc = reinterpret_cast<unsigned long long>(&map);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&full[0])) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&full[1])) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    float acc = 0.0f;
    for (int t = 0; t < ntiles; ++t) {
        int s = t & 1;
        unsigned fb = smem_u32(&full[s]);
        if (threadIdx.x == 0) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(fb), "r"(4096) : "memory");
            asm volatile(
                "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
                "[%4];" ::"r"(smem_u32(tiles[s])),
                "l"(desc), "r"(0), "r"(t * 32), "r"(fb)
                : "memory");
        }
        unsigned ok = 0;
        while (!ok)
            asm volatile(
                "{\n\t.reg .pred p;\n\t"
                "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                "selp.u32 %0, 1, 0, p;\n\t}"
                : "=r"(ok)
                : "r"(fb), "r"((t >> 1) & 1)
                : "memory");
        for (int i = threadIdx.x; i < 1024; i += blockDim.x) acc += tiles[s][i];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        unsigned fb = smem_u32(&full[0]);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(fb), "r"(4096) : "memory");
        asm volatile(
            "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
            "[%5];" ::"r"(smem_u32(tiles[0])),
            "l"(reinterpret_cast<unsigned long long>(&map3d)), "r"(0), "r"(0), "r"(blockIdx.x), "r"(fb)
            : "memory");
    }
    unsigned parity = (ntiles + 1) / 2 & 1;  // uses of barrier 0 so far
    unsigned ok = 0;
    while (!ok)
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t}"
            : "=r"(ok)
            : "r"(smem_u32(&full[0])), "r"(parity)
            : "memory");
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc + tiles[0][threadIdx.x];
}

// Multicast TMA load: CTA rank 0 loads a tile and multicasts it into both CTAs of the cluster.
// Launch: cluster 2, 128 threads.
extern "C" __global__ void __cluster_dims__(2, 1, 1) tma_multicast(const __grid_constant__ TensorMap128 map, float* out) {
    __shared__ __align__(128) float tile[32 * 32];
    __shared__ __align__(8) unsigned long long bar;
    unsigned b = smem_u32(&bar);
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(4096) : "memory");
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (rank == 0 && threadIdx.x == 0) {
        unsigned short mask = 0x3;
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
            " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_u32(tile)),
            "l"(reinterpret_cast<unsigned long long>(&map)), "r"(0), "r"((int)blockIdx.y * 32), "r"(b), "h"(mask)
            : "memory");
    }
    unsigned ok = 0;
    while (!ok)
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t}"
            : "=r"(ok)
            : "r"(b), "r"(0)
            : "memory");
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) out[blockIdx.x * 1024 + i] = tile[i];
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// The other tile-mode spellings: 1-D into .shared::cta (PTX 8.6), 5-D with an L2 cache
// hint, stores with and without one, and a map that lives in global memory (passed by
// pointer, e.g. after tensormap.replace). Launch: 32 threads.
extern "C" __global__ void tma_forms(const __grid_constant__ TensorMap128 map1d,
                                     const __grid_constant__ TensorMap128 map5d,
                                     const TensorMap128* __restrict__ gmap, float* out) {
    __shared__ __align__(128) float tile[1024];
    __shared__ __align__(8) unsigned long long bar;
    unsigned b = smem_u32(&bar), t = smem_u32(tile);
    unsigned long long d1 = reinterpret_cast<unsigned long long>(&map1d);
    unsigned long long d5 = reinterpret_cast<unsigned long long>(&map5d);
    unsigned long long dg = reinterpret_cast<unsigned long long>(gmap);
    unsigned long long policy = 0;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(4096) : "memory");
        asm volatile(
            "cp.async.bulk.tensor.1d.shared::cta.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2}], [%3];" ::"r"(t),
            "l"(d1), "r"(0), "r"(b)
            : "memory");
        asm volatile(
            "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
            " [%0], [%1, {%2, %2, %2, %2, %2}], [%3], %4;" ::"r"(t + 2048),
            "l"(d5), "r"(0), "r"(b), "l"(policy)
            : "memory");
    }
    unsigned ok = 0;
    while (!ok)
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t}"
            : "=r"(ok)
            : "r"(b), "r"(0)
            : "memory");
    out[threadIdx.x] = tile[threadIdx.x] + tile[512 + threadIdx.x];
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group.L2::cache_hint [%0, {%1, %1, %1}], [%2], %3;" ::"l"(dg),
                     "r"(0), "r"(t), "l"(policy)
                     : "memory");
        asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%1}], [%2];" ::"l"(d1), "r"(0), "r"(t)
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
}
