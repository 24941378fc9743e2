// consan-corpus: sm_90a-only
// consan-corpus: debug
// Thread-block clusters: distributed shared memory, cluster barriers, mapa, remote atomics.

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ unsigned cluster_ctarank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ unsigned cluster_nctarank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned map_to_rank(unsigned saddr, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(saddr), "r"(rank));
    return r;
}

// Each CTA reads its neighbour's smem through DSMEM. Launch: cluster of 2, 128 threads.
extern "C" __global__ void __cluster_dims__(2, 1, 1) dsmem_neighbour(const int* in, int* out) {
    __shared__ int s[128];
    unsigned rank = cluster_ctarank();
    unsigned n = cluster_nctarank();
    s[threadIdx.x] = in[blockIdx.x * 128 + threadIdx.x];
    cluster_sync();
    unsigned peer = (rank + 1) % n;
    unsigned raddr = map_to_rank(smem_u32(&s[threadIdx.x]), peer);
    int v;
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(raddr) : "memory");
    cluster_sync();  // keep peer smem alive until everyone has read it
    out[blockIdx.x * 128 + threadIdx.x] = v + (int)rank;
}

// Distributed histogram: bins spread over the cluster's CTAs, remote atomics. Launch: cluster 4.
extern "C" __global__ void __cluster_dims__(4, 1, 1) dsmem_histogram(const int* data, int* bins, int n, int nbins) {
    extern __shared__ int part[];
    unsigned rank = cluster_ctarank();
    unsigned csize = cluster_nctarank();
    int per = (nbins + csize - 1) / csize;
    for (int i = threadIdx.x; i < per; i += blockDim.x) part[i] = 0;
    cluster_sync();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        int b = data[i] % nbins;
        unsigned owner = b / per;
        unsigned raddr = map_to_rank(smem_u32(&part[b % per]), owner);
        asm volatile("atom.shared::cluster.add.u32 _, [%0], 1;" ::"r"(raddr) : "memory");
        asm volatile("red.relaxed.cluster.shared::cluster.add.u32 [%0], 0;" ::"r"(raddr) : "memory");
    }
    cluster_sync();
    for (int i = threadIdx.x; i < per; i += blockDim.x) {
        int g = rank * per + i;
        if (g < nbins) atomicAdd(&bins[g], part[i]);
    }
}

// st.shared::cluster pushes, split arrive/wait with relaxed arrive, generic-address mapa.
// Launch: 64 threads with a runtime cluster size of 2 (cudaLaunchAttributeClusterDimension);
// __launch_bounds__ gives the max cluster rank (.maxclusterrank) instead of __cluster_dims__.
extern "C" __global__ void __launch_bounds__(64, 1, 2) dsmem_push(const float* in, float* out) {
    __shared__ float inbox[64];
    unsigned rank = cluster_ctarank();
    unsigned peer = rank ^ 1;
    cluster_sync();  // peer's inbox exists before we write into it
    unsigned raddr = map_to_rank(smem_u32(&inbox[threadIdx.x]), peer);
    float v = in[blockIdx.x * 64 + threadIdx.x];
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(raddr), "f"(v) : "memory");
    asm volatile("fence.acq_rel.cluster;" ::: "memory");
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    float local = v * 2.0f;  // independent work between arrive and wait
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    // Generic pointer into the peer's smem via mapa on a generic address.
    float* gpeer;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(gpeer) : "l"(&inbox[0]), "r"(peer));
    float mine = inbox[threadIdx.x];
    float theirs = gpeer[(threadIdx.x + 1) & 63];
    unsigned cid, cx, isc;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(cid));
    asm volatile("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(cx));
    asm volatile("{\n\t.reg .pred p;\n\tmov.pred p, %%is_explicit_cluster;\n\tselp.u32 %0, 1, 0, p;\n\t}" : "=r"(isc));
    cluster_sync();
    out[blockIdx.x * 64 + threadIdx.x] = mine + theirs + local + (float)(cid + cx + isc);
}

// Remote mbarrier arrive: CTA 1 signals CTA 0's mbarrier after writing into CTA 0's smem.
extern "C" __global__ void __cluster_dims__(2, 1, 1) dsmem_remote_mbarrier(int* out) {
    __shared__ int mailbox[32];
    __shared__ __align__(8) unsigned long long bar;
    unsigned rank = cluster_ctarank();
    unsigned b = smem_u32(&bar);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(32) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync();
    if (rank == 1 && threadIdx.x < 32) {
        unsigned rmail = map_to_rank(smem_u32(&mailbox[threadIdx.x]), 0);
        unsigned rbar = map_to_rank(b, 0);
        asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(rmail), "r"(threadIdx.x * 7) : "memory");
        asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(rbar) : "memory");
    }
    if (rank == 0) {
        unsigned ok = 0;
        while (!ok)
            asm volatile(
                "{\n\t.reg .pred p;\n\t"
                "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\t"
                "selp.u32 %0, 1, 0, p;\n\t}"
                : "=r"(ok)
                : "r"(b), "r"(0)
                : "memory");
        if (threadIdx.x < 32) out[threadIdx.x] = mailbox[threadIdx.x];
    }
    cluster_sync();
}

// __block_size__ gives .reqntid (and implies 1-CTA clusters, .blocksareclusters).
extern "C" __global__ void __block_size__((128, 1, 1)) reqntid_kernel(const float* in, float* out) {
    __shared__ float s[128];
    s[threadIdx.x] = in[blockIdx.x * 128 + threadIdx.x];
    __syncthreads();
    out[blockIdx.x * 128 + threadIdx.x] = s[127 - threadIdx.x];
}

// st.async: push values into the peer CTA's smem, completion counted on the peer's mbarrier.
// Launch: cluster 2, 32 threads.
extern "C" __global__ void __cluster_dims__(2, 1, 1) dsmem_st_async(const unsigned* in, unsigned* out) {
    __shared__ __align__(8) unsigned inbox[32];
    __shared__ __align__(8) unsigned long long bar;
    unsigned rank = cluster_ctarank();
    unsigned b = smem_u32(&bar);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b) : "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(32 * 4) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync();
    unsigned peer = rank ^ 1;
    unsigned rdst = map_to_rank(smem_u32(&inbox[threadIdx.x]), peer);
    unsigned rbar = map_to_rank(b, peer);
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];" ::"r"(rdst),
                 "r"(in[blockIdx.x * 32 + threadIdx.x]), "r"(rbar)
                 : "memory");
    unsigned ok = 0;
    while (!ok)
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t}"
            : "=r"(ok)
            : "r"(b), "r"(0)
            : "memory");
    out[blockIdx.x * 32 + threadIdx.x] = inbox[31 - threadIdx.x];
    cluster_sync();
}

// Programmatic dependent launch + elect.sync.
extern "C" __global__ void pdl_elect(const int* in, int* out) {
    __shared__ int s[64];
    asm volatile("griddepcontrol.wait;" ::: "memory");
    s[threadIdx.x] = in[blockIdx.x * 64 + threadIdx.x];
    unsigned leader;
    asm volatile(
        "{\n\t.reg .pred p;\n\t.reg .b32 lane;\n\t"
        "elect.sync lane|p, 0xffffffff;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(leader));
    __syncthreads();
    if (leader) out[blockIdx.x * 2 + threadIdx.x / 32] = s[(threadIdx.x + 32) & 63];
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
