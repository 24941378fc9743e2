"""Multicast copies (`.multicast::cluster`) in clusters of 2, 4 and 8 CTAs on a real GPU.

Every CTA inits its mbarrier and expects the bytes the multicasts bring it; a cluster
barrier; then each rank copies its slice of the buffer into every CTA of the ctaMask
(cp.async.bulk, or a TMA tensor box); each CTA waits on its own mbarrier and reads its
buffer. Clean: no finding, and the very bits of a native launch. Racy twins: a read before
the CTA's own wait (async.pending-write at the read, naming the copy and, for the slices
other ranks sent, their rank); a ctaMask that leaves the last rank out while that rank
expects only what its mask brings (uninit.read at the read, in that rank only: seed 001's
flaky multicast, whose stale shared memory was sometimes right).

A second kernel multicasts into the same buffer twice (Triton's ConSan cases on clusters,
in CUDA): clean when a cluster barrier separates each CTA's reads of the first round from
the second round's copies (test_async_tma_multicast_kernel_reuse); a read after that
barrier is not released to the second round's copies, which overwrite it
(test_cluster_barrier_does_not_publish_later_read: race.war at the copy); a store into the
buffer while the copies are in flight (test_async_tma_multicast_kernel_local_store_race:
async.pending-write at the store, or race.waw at a peer's copy applied after it).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, check_against_native, line_of, need_sm90, poisoned

pytestmark = pytest.mark.gpu

N = 256  # floats of each CTA's buffer; rank r sends floats [r * N / CS, (r + 1) * N / CS)

# Both kernels' start: the CTA's buffer and mbarrier, its thread and rank, their addresses.
SETUP = r"""    __shared__ __align__(128) float buf[N];
    __shared__ __align__(8) unsigned long long bar;
    unsigned t = threadIdx.x, rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar);
    unsigned d = (unsigned)__cvta_generic_to_shared(buf);"""

MULTICAST = r"""
#define CS @CS@
#define N 256
#define SENDERS @SENDERS@  // ranks below it each send a slice
#define SLICE (N / SENDERS)
#define CLUSTER_SYNC asm volatile("barrier.cluster.arrive.release.aligned;\n\t" \
                                  "barrier.cluster.wait.acquire.aligned;" ::: "memory")
struct __align__(64) TensorMap128 { unsigned long long opaque[16]; };
__device__ __forceinline__ void mb_wait(unsigned b) {
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n"
                 " @!p bra W;\n}" :: "r"(b) : "memory");
}
extern "C" __global__ void __cluster_dims__(CS, 1, 1) multicast(
        const float* in, const __grid_constant__ TensorMap128 map, float* out) {
@SETUP@
    unsigned short mask = @MASK@;
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        unsigned expect = (mask >> rank) & 1 ? N * 4 : 0;  // every rank's slice, if in the mask
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(b), "r"(expect) : "memory");
    }
    CLUSTER_SYNC;  // every mbarrier is initialised before any copy completes on it
    if (t == 0 && rank < SENDERS) {
        unsigned dst = d + rank * SLICE * 4;
        if (@TENSOR@) {  // the map's box: SLICE floats of row (cluster), from column rank * SLICE
            int x = rank * SLICE, y = blockIdx.x / CS;
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile"
                         ".mbarrier::complete_tx::bytes.multicast::cluster"
                         " [%0], [%1, {%2, %3}], [%4], %5;"
                         :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(&map)), "r"(x),
                            "r"(y), "r"(b), "h"(mask) : "memory");  // @tensor-copy
        } else {
            const float* src = in + (blockIdx.x / CS) * N + rank * SLICE;
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                         ".multicast::cluster [%0], [%1], %2, [%3], %4;"
                         :: "r"(dst), "l"(src), "r"(SLICE * 4), "r"(b), "h"(mask)  // @copy
                         : "memory");
        }
    }
    @EARLY@
    float v = buf[t];  // @read
    @LATE@
    out[blockIdx.x * N + t] = v;
    CLUSTER_SYNC;  // no CTA leaves while a peer's copy may still reach it
}
"""

WAIT = "mb_wait(b);"
# The racy read comes late (the copies were issued first) and waits only after it.
SPIN = "{ long long t0 = clock64(); while (clock64() - t0 < 2000000) {} }"


def _src(cluster: int, *, tensor: bool, mask: int | None = None, early_read: bool = False,
         senders: int | None = None):
    """`senders`: the ranks that send a slice each (default: every rank; a tensor map's
    box is a slice of N / cluster floats, so only bulk copies take fewer)."""
    full = (1 << cluster) - 1
    assert senders is None or not tensor, "a tensor box is N / cluster floats"
    return (MULTICAST.replace("@SETUP@", SETUP).replace("@CS@", str(cluster))
            .replace("@SENDERS@", str(senders or cluster))
            .replace("@MASK@", str(full if mask is None else mask))
            .replace("@TENSOR@", "1" if tensor else "0")
            .replace("@EARLY@", SPIN if early_read else WAIT)
            .replace("@LATE@", WAIT if early_read else ""))


CLUSTERS = 2  # clusters in the grid


def _inputs(cluster: int):
    """The matrix every cluster reads a row of, and its tensor map (boxes of one row of
    N / cluster floats)."""
    import cupy as cp

    import consan

    x = cp.asarray(np.random.default_rng(cluster).random((CLUSTERS, N), dtype=np.float32))
    return x, consan.tensor_map(x, box_shape=(1, N // cluster))


def _native_and_checked(src: str, cluster: int):
    """(report, output under consan, the input matrix) of a clean kernel, which also runs
    natively on the same inputs and must write the same bits."""
    import cupy as cp

    x, tmap = _inputs(cluster)

    def make_args():
        out = poisoned((CLUSTERS * cluster * N,), cp.float32)
        return (x, tmap, out), [out], x

    rep, (out,) = check_against_native(src, "multicast", make_args, grid=(CLUSTERS * cluster, 1, 1),
                                       block=(N, 1, 1), options=(arch_option(),))
    return rep, out, x


def _check(src: str, cluster: int):
    import cupy as cp

    import consan

    x, tmap = _inputs(cluster)
    out = cp.zeros(CLUSTERS * cluster * N, dtype=cp.float32)
    rep = consan.check(src, "multicast", grid=(CLUSTERS * cluster,), block=(N,),
                       args=(x, tmap, out), options=(arch_option(),))
    return rep


@pytest.mark.parametrize("tensor", [False, True], ids=["bulk", "tensor"])
@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_clean_multicast_is_clean_and_bit_exact(cluster, tensor):
    need_sm90("multicast copies")
    rep, out, x = _native_and_checked(_src(cluster, tensor=tensor), cluster)
    assert rep.ok and not rep.notes and not rep.unmodeled, str(rep)
    want = np.repeat(x.get(), cluster, axis=0).reshape(-1)  # every CTA holds its cluster's row
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("tensor", [False, True], ids=["bulk", "tensor"])
@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_read_before_the_own_wait_is_pending_write_naming_the_issuer(cluster, tensor):
    need_sm90("multicast copies")
    src = _src(cluster, tensor=tensor, early_read=True)
    rep = _check(src, cluster)
    copy = line_of(src, "@tensor-copy" if tensor else "@copy")
    assert {(v.kind, v.line, v.prev_line) for v in rep.violations} == {
        ("async.pending-write", line_of(src, "@read"), copy)}, str(rep)
    # the slices other ranks sent name them
    peers = {(v.cluster_rank, v.prev_rank) for v in rep.violations if v.prev_rank is not None}
    assert peers and all(r != p for r, p in peers), peers
    assert "CTA rank" in str(rep) and "multicast" in str(rep), str(rep)


@pytest.mark.parametrize("tensor", [False, True], ids=["bulk", "tensor"])
@pytest.mark.parametrize("cluster", [2, 4])
def test_a_mask_that_leaves_a_cta_out_is_uninit_read_there(cluster, tensor):
    need_sm90("multicast copies")
    left_out = cluster - 1
    src = _src(cluster, tensor=tensor, mask=(1 << left_out) - 1)
    rep = _check(src, cluster)
    assert {(v.kind, v.line) for v in rep.violations} == {
        ("uninit.read", line_of(src, "@read"))}, str(rep)
    assert {v.cluster_rank for v in rep.violations} == {left_out}, str(rep)


def test_one_issuer_clean_and_early_read():
    """The kernels a new user tried: CTA rank 0 alone multicasts the whole buffer (ctaMask
    0b11), every CTA arms and waits on its own mbarrier. Clean: no finding and the native
    bits (consan said uninit.read before the model). Each CTA reading before its own wait:
    async.pending-write at the read, and in rank 1 it names rank 0 as the issuer (consan
    said uninit.read, which pointed at the wrong thing)."""
    need_sm90("multicast copies")
    rep, out, x = _native_and_checked(_src(2, tensor=False, senders=1), 2)
    assert rep.ok and not rep.notes and not rep.unmodeled, str(rep)
    np.testing.assert_array_equal(out, np.repeat(x.get(), 2, axis=0).reshape(-1))

    early = _src(2, tensor=False, senders=1, early_read=True)
    rep = _check(early, 2)
    assert {(v.kind, v.line, v.prev_line) for v in rep.violations} == {
        ("async.pending-write", line_of(early, "@read"), line_of(early, "@copy"))}, str(rep)
    assert {(v.cluster_rank, v.prev_rank) for v in rep.violations
            if v.cluster_rank == 1} == {(1, 0)}, str(rep)


@pytest.mark.parametrize("tensor", [False, True], ids=["bulk", "tensor"])
def test_warp_stays_together_after_a_one_lane_multicast(tensor):
    """Thread 0 multicasts (its probe called by every lane of warp 0, the others marked
    off), then every lane asks which lanes run with it: natively all 32 of its warp."""
    need_sm90("multicast copies")
    lanes = "float lanes = (float)__popc(__activemask());\n    "
    src = (_src(2, tensor=tensor).replace(WAIT, lanes + WAIT)
           .replace("out[blockIdx.x * N + t] = v;", "out[blockIdx.x * N + t] = v + lanes;"))
    assert "v + lanes" in src and lanes in src
    rep, out, x = _native_and_checked(src, 2)
    assert rep.ok and not rep.notes and not rep.unmodeled, str(rep)
    want = np.repeat(x.get(), 2, axis=0).reshape(-1) + np.float32(32.0)  # natively too
    np.testing.assert_array_equal(out, want)


REUSE = r"""
#define CS @CS@
#define N 256
#define SLICE (N / CS)
#define CLUSTER_SYNC asm volatile("barrier.cluster.arrive.release.aligned;\n\t" \
                                  "barrier.cluster.wait.acquire.aligned;" ::: "memory")
#define SPIN { long long t0 = clock64(); while (clock64() - t0 < 2000000) {} }
__device__ __forceinline__ void mb_wait(unsigned b, unsigned parity) {
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 " @!p bra W;\n}" :: "r"(b), "r"(parity) : "memory");
}
extern "C" __global__ void __cluster_dims__(CS, 1, 1) reuse(const float* in, float* out) {
@SETUP@
    unsigned short mask = (1u << CS) - 1;
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    float acc = 0.f;
    for (unsigned round = 0; round < 2; ++round) {
        if (t == 0)
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                         :: "r"(b), "r"(N * 4) : "memory");
        CLUSTER_SYNC;  // every CTA is armed and has read the last round
        if (round == 1) {
            @BEFORE_COPY@
        }
        if (t == 0) {  // rank r multicasts its slice of this round's row
            if (round == 1) { @ISSUE_LATE@ }
            const float* src = in + ((blockIdx.x / CS) * 2 + round) * N + rank * SLICE;
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                         ".multicast::cluster [%0], [%1], %2, [%3], %4;"
                         :: "r"(d + rank * SLICE * 4), "l"(src), "r"(SLICE * 4), "r"(b),
                            "h"(mask) : "memory");  // @copy
        }
        if (round == 1) {
            @AFTER_COPY@
        }
        mb_wait(b, round);
        acc += buf[t];  // @read
    }
    out[blockIdx.x * N + t] = acc;
    CLUSTER_SYNC;  // no CTA leaves while a peer's copy may still reach it
}
"""
# (before the second round's copies, which come late; or after them, while they fly)
LATE_READ = {"@BEFORE_COPY@": "acc += buf[t] * 0.5f;  // @late-read", "@ISSUE_LATE@": "SPIN"}
LATE_STORE = {"@AFTER_COPY@": "SPIN buf[t] = 1.0f;  // @store"}


def _reuse(cluster: int, racy: dict[str, str] | None = None) -> str:
    src = REUSE.replace("@SETUP@", SETUP).replace("@CS@", str(cluster))
    for hole in ("@BEFORE_COPY@", "@ISSUE_LATE@", "@AFTER_COPY@"):
        src = src.replace(hole, (racy or {}).get(hole, ""))
    return src


def _reuse_inputs(cluster: int):
    import cupy as cp

    rng = np.random.default_rng(10 + cluster)
    return cp.asarray(rng.integers(-8, 8, (CLUSTERS, 2, N)).astype(np.float32))


@pytest.mark.parametrize("cluster", [2, 4])
def test_multicast_reused_after_a_cluster_barrier_is_clean_and_bit_exact(cluster):
    import cupy as cp

    need_sm90("multicast copies")
    x = _reuse_inputs(cluster)

    def make_args():
        out = poisoned((CLUSTERS * cluster * N,), cp.float32)
        return (x, out), [out], x

    rep, (out,) = check_against_native(_reuse(cluster), "reuse", make_args,
                                       grid=(CLUSTERS * cluster, 1, 1), block=(N, 1, 1),
                                       options=(arch_option(),))
    assert rep.ok and not rep.notes and not rep.unmodeled, str(rep)
    rows = x.get().sum(axis=1)  # both rounds' rows, in every CTA of the cluster
    np.testing.assert_array_equal(out, np.repeat(rows, cluster, axis=0).reshape(-1))


def _reuse_check(src: str, cluster: int):
    import cupy as cp

    import consan

    out = cp.zeros(CLUSTERS * cluster * N, dtype=cp.float32)
    return consan.check(src, "reuse", grid=(CLUSTERS * cluster,), block=(N,),
                        args=(_reuse_inputs(cluster), out), options=(arch_option(),))


@pytest.mark.parametrize("cluster", [2, 4])
def test_a_read_after_the_barrier_overwritten_by_the_next_multicast_is_war(cluster):
    need_sm90("multicast copies")
    src = _reuse(cluster, LATE_READ)
    rep = _reuse_check(src, cluster)
    assert {(v.kind, v.line, v.prev_line) for v in rep.violations} == {
        ("race.war", line_of(src, "@copy"), line_of(src, "@late-read"))}, str(rep)
    # the peers' copies name their issuing CTA against the reader's
    assert any(v.cur_rank is not None and v.cur_rank != v.cluster_rank
               for v in rep.violations), str(rep)


@pytest.mark.parametrize("cluster", [2, 4])
def test_a_store_into_a_buffer_a_multicast_is_writing_is_pending_write(cluster):
    need_sm90("multicast copies")
    src = _reuse(cluster, LATE_STORE)
    rep = _reuse_check(src, cluster)
    found = {(v.kind, v.line) for v in rep.violations}
    assert found and found <= {("async.pending-write", line_of(src, "@store")),
                               ("race.waw", line_of(src, "@copy"))}, str(rep)
    assert ("async.pending-write", line_of(src, "@store")) in found, str(rep)
