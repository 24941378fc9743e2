"""Kernels launched in clusters: shared addresses carry the CTA's rank, accesses are checked."""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, check_against_native, line_of, need_sm90

pytestmark = pytest.mark.gpu

CLUSTER = r"""
extern "C" __global__ void __cluster_dims__(2, 1, 1) in_cluster(const float* in, float* out) {
    __shared__ float s[64];
    int t = threadIdx.x;
    if (t < 32) s[t] = in[blockIdx.x * 64 + t];  // @write
    if (t >= 32) {
        long long t0 = clock64();
        while (clock64() - t0 < 2000000) {}
    }
    SYNC
    if (t >= 32) out[blockIdx.x * 32 + t - 32] = s[t - 32];  // @read
}
"""


def _check(sync: str):
    import cupy as cp

    import consan

    if int(cp.cuda.Device().compute_capability) < 90:
        pytest.skip("clusters need sm_90")
    src = CLUSTER.replace("SYNC", sync)
    x = cp.asarray(np.random.default_rng(5).random(256, dtype=np.float32))
    out = cp.zeros(128, dtype=cp.float32)
    rep = consan.check(src, "in_cluster", grid=(4,), block=(64,), args=(x, out),
                       options=(arch_option(),))
    return src, rep, out.get(), x.get()


def test_race_inside_a_cluster_cta_is_found():
    src, rep, _, _ = _check("")
    assert {v.kind for v in rep.violations} == {"race.raw"}, str(rep)
    assert {v.line for v in rep.violations} == {line_of(src, "@read")}, str(rep)
    assert {v.prev_line for v in rep.violations} == {line_of(src, "@write")}, str(rep)
    assert not rep.notes, str(rep)  # every access was inside the CTA's own window


def test_clean_cluster_kernel_has_no_notes():
    import cupy as cp

    if int(cp.cuda.Device().compute_capability) < 90:
        pytest.skip("clusters need sm_90")
    src = CLUSTER.replace("SYNC", "__syncthreads();")
    x = cp.asarray(np.random.default_rng(5).random(256, dtype=np.float32))

    def make_args():
        out = cp.full(128, cp.nan, dtype=cp.float32)
        return (x, out), [out]

    rep, (out,) = check_against_native(src, "in_cluster", make_args, grid=(4, 1, 1),
                                       block=(64, 1, 1), options=(arch_option(),))
    assert rep.ok and not rep.notes, str(rep)
    np.testing.assert_array_equal(out.reshape(4, 32), x.get().reshape(4, 64)[:, :32])


# barrier.cluster.arrive/.wait: within each CTA, a barrier of every live warp. Clusters of
# 2, 4 and 8 CTAs; a write by warp 0 before the arrive, read by warp 1 after the wait.
CLUSTER_BARRIER = r"""
extern "C" __global__ void __cluster_dims__(CS, 1, 1) cl_barrier(const float* in, float* out) {
    __shared__ float s[64];
    int t = threadIdx.x;
    if (t < 32) s[t] = in[blockIdx.x * 32 + t];  // @write
    ARRIVE
    if (t < 32) s[32 + t] = 1.0f;  // @late-write
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    if (t >= 32) out[blockIdx.x * 32 + t - 32] = s[t - 32] + (READ_LATE ? s[t] : 0.0f);  // @read
}
"""

RELEASE = 'asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");'
RELAXED = 'asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");'


FENCE = 'asm volatile("fence.acq_rel.cluster;" ::: "memory");'
# the fence publishes what the warp wrote before it; a write after it is not published
FENCED = FENCE + "\n    " + RELAXED
FENCED_LATE = (FENCE + "\n    if (t < 32) s[t] = 2.0f * s[t];  // @fenced-write\n    "
               + RELAXED)


def _cluster_barrier_src(size: int, arrive: str, read_late: bool) -> str:
    return (CLUSTER_BARRIER.replace("CS", str(size)).replace("ARRIVE", arrive)
            .replace("READ_LATE", "1" if read_late else "0"))


@pytest.mark.parametrize("arrive", ["release", "fence-relaxed"])
@pytest.mark.parametrize("size", [2, 4, 8])
def test_cluster_barrier_orders_the_ctas_warps(size, arrive):
    """A .release arrival, or a cluster fence before a relaxed one, publishes the write."""
    import cupy as cp

    need_sm90()
    src = _cluster_barrier_src(size, {"release": RELEASE, "fence-relaxed": FENCED}[arrive],
                               False)
    x = cp.asarray(np.random.default_rng(6).random(32 * size, dtype=np.float32))

    def make_args():
        out = cp.full(32 * size, cp.nan, dtype=cp.float32)
        return (x, out), [out]

    rep, (out,) = check_against_native(src, "cl_barrier", make_args, grid=(size, 1, 1),
                                       block=(64, 1, 1), options=(arch_option(),))
    assert rep.ok and not rep.notes and not rep.unmodeled, str(rep)
    np.testing.assert_array_equal(out, x.get())


@pytest.mark.parametrize("arrive,earlier", [("relaxed", "@write"),
                                            ("fence-write-relaxed", "@fenced-write")])
@pytest.mark.parametrize("size", [2, 4, 8])
def test_what_a_relaxed_arrive_does_not_publish_is_raw(size, arrive, earlier):
    """A relaxed arrival alone publishes nothing; after a cluster fence, nothing written
    between the fence and the arrival."""
    import cupy as cp

    import consan

    need_sm90()
    src = _cluster_barrier_src(size, {"relaxed": RELAXED,
                                      "fence-write-relaxed": FENCED_LATE}[arrive], False)
    x = cp.asarray(np.random.default_rng(6).random(32 * size, dtype=np.float32))
    out = cp.zeros(32 * size, dtype=cp.float32)
    rep = consan.check(src, "cl_barrier", grid=(size,), block=(64,), args=(x, out),
                       options=(arch_option(),))
    assert {(v.kind, v.line, v.prev_line) for v in rep.violations} == {
        ("race.raw", line_of(src, "@read"), line_of(src, earlier))}, str(rep)


def test_a_write_between_arrive_and_wait_is_not_released():
    import cupy as cp

    import consan

    need_sm90()
    src = _cluster_barrier_src(2, RELEASE, True)
    x = cp.asarray(np.random.default_rng(6).random(64, dtype=np.float32))
    out = cp.zeros(64, dtype=cp.float32)
    rep = consan.check(src, "cl_barrier", grid=(2,), block=(64,), args=(x, out),
                       options=(arch_option(),))
    assert {(v.kind, v.line, v.prev_line) for v in rep.violations} == {
        ("race.raw", line_of(src, "@read"), line_of(src, "@late-write"))}, str(rep)


# A clean exchange through distributed shared memory: each CTA fills its own buffer, a
# cluster barrier, each writes into its peer's buffer (mapa + st.shared::cluster), a cluster
# barrier, each reads its own buffer. (Before the cluster barrier was modelled consan
# reported race.raw here.) The store into the peer is checked: the peer judges it.
DSMEM_EXCHANGE = r"""
#define CLUSTER_SYNC asm volatile("barrier.cluster.arrive.release.aligned;\n\t" \
                                  "barrier.cluster.wait.acquire.aligned;" ::: "memory")
extern "C" __global__ void __cluster_dims__(2, 1, 1) dsmem_exchange(const int* in, int* out) {
    __shared__ int buf[128];
    unsigned t = threadIdx.x, rank, raddr;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    buf[t] = in[blockIdx.x * 128 + t];
    CLUSTER_SYNC;
    unsigned mine = (unsigned)__cvta_generic_to_shared(&buf[(t + 1) % 128]);
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(raddr) : "r"(mine), "r"(rank ^ 1));
    int v = in[blockIdx.x * 128 + t] + 7;
    asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(raddr), "r"(v) : "memory");
    CLUSTER_SYNC;
    out[blockIdx.x * 128 + t] = buf[t];
}
"""


def test_clean_dsmem_exchange_reports_no_race():
    import cupy as cp

    need_sm90()
    x = cp.asarray(np.arange(512, dtype=np.int32))

    def make_args():
        out = cp.full(512, -1, dtype=cp.int32)
        return (x, out), [out]

    rep, (out,) = check_against_native(DSMEM_EXCHANGE, "dsmem_exchange", make_args,
                                       grid=(4, 1, 1), block=(128, 1, 1),
                                       options=(arch_option(),))
    assert not rep.violations and not rep.notes, str(rep)
    assert not rep.unmodeled, str(rep)  # (the store into the peer: checked, test_dsmem.py)
    want = x.get().reshape(2, 2, 128)[:, ::-1, :]  # each CTA holds its peer's values + 7
    np.testing.assert_array_equal(out.reshape(2, 2, 128), np.roll(want, 1, axis=2) + 7)
