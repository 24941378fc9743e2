"""Distributed shared memory: one CTA's loads and stores into another CTA of its cluster,
ordered by cluster barriers, in clusters of 2, 4 and 8 CTAs on a real GPU.

Each CTA writes its buffer, then (after a cluster barrier) CTA rank r stores into the buffer
of rank r + 1 (mod the cluster) through `mapa` + `st.shared::cluster`, or loads from it with
`ld.shared::cluster` (or a generic pointer from `mapa.u64`); a second cluster barrier, then
each CTA reads its own buffer. Clean: no finding and the native bits. Racy twins, each
with a pause that lets the other CTA get there first, so the kind is fixed:
- the read of the own buffer without the second barrier: race.raw at the read, the earlier
  write the peer's store, made by CTA rank r - 1;
- the store into the peer without the first barrier: race.waw at the store (a peer's access,
  judged by the CTA that owns the bytes), the earlier write that CTA's own initialisation;
- the load from the peer without the first barrier: race.raw at the load, the earlier write
  the peer's initialisation.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, clean_and_native, line_of, need_sm90

pytestmark = pytest.mark.gpu

N = 256  # floats per CTA's buffer (one per thread)
CLUSTERS = 2

DSMEM = r"""
#define CS @CS@
#define N 256
#define CLUSTER_SYNC asm volatile("barrier.cluster.arrive.release.aligned;\n\t" \
                                  "barrier.cluster.wait.acquire.aligned;" ::: "memory")
#define SPIN { long long t0 = clock64(); while (clock64() - t0 < 2000000) {} }
extern "C" __global__ void __cluster_dims__(CS, 1, 1) exchange(float* out) {
    __shared__ __align__(16) float buf[N];
    unsigned t = threadIdx.x, rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    unsigned next = (rank + 1) % CS;
    unsigned mine = (unsigned)__cvta_generic_to_shared(&buf[t]), pa;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(pa) : "r"(mine), "r"(next));
    buf[t] = rank * 1000.0f + t;  // @init
    @SYNC1@
    float got = 0.0f;
    if (@STORE@) {
        float v = rank * 10.0f + t * 0.5f;
        asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(pa), "f"(v) : "memory");  // @store
    } else if (@GENERIC@) {
        float* p;
        asm volatile("mapa.u64 %0, %1, %2;" : "=l"(p) : "l"(&buf[t]), "r"(next));
        got = *(volatile float*)p;  // @generic-load
    } else {
        asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(got) : "r"(pa) : "memory");  // @load
    }
    @OVER1@
    @SYNC2@
    @OVER2@
    out[blockIdx.x * N + t] = buf[t] + got;  // @read
    @CLOSE@  // no CTA leaves while a peer may still reach its shared memory
}  // @end
"""

SYNC = "CLUSTER_SYNC;"


OVERWRITE = "buf[t] = -1.0f - t;  // @overwrite"


# The first cluster barrier as `fence.acq_rel.cluster` + a relaxed arrival (a fence then
# publishes what came before it), with a write of the CTA's own buffer between them or not,
# and the relaxed arrival alone (it publishes nothing).
FENCED = 'asm volatile("fence.acq_rel.cluster;" ::: "memory");'
RELAXED_SYNC = ('asm volatile("barrier.cluster.arrive.relaxed.aligned;\\n\\t"'
                ' "barrier.cluster.wait.aligned;" ::: "memory");')
SYNC1_FORMS = {
    "fenced": FENCED + "\n    " + RELAXED_SYNC,
    "write-after-fence": FENCED + "\n    SPIN buf[t] += 0.5f;  // @late-init\n    "
                         + RELAXED_SYNC,
    "relaxed": RELAXED_SYNC,
}


def _src(cluster: int, *, op: str, early_read: bool = False, early_access: bool = False,
         early_exit: bool = False, overwrite: str = "", sync1: str = ""):
    """op: "store", "load" or "generic" (a load through mapa.u64's generic pointer);
    early_exit: neither the second nor the closing cluster barrier (each CTA pauses, then
    exits while its peer's access is ordered before nothing); overwrite: "before" or
    "after" the second cluster barrier, each CTA writes its own buffer again (after a
    pause, so the peer's load is in first); sync1: a key of SYNC1_FORMS for the first
    cluster barrier."""
    return (DSMEM.replace("@OVER1@", f"SPIN {OVERWRITE}" if overwrite == "before" else "")
            .replace("@OVER2@", OVERWRITE if overwrite == "after" else "")
            .replace("@CS@", str(cluster))
            .replace("@STORE@", "1" if op == "store" else "0")
            .replace("@GENERIC@", "1" if op == "generic" else "0")
            .replace("@SYNC1@", SYNC1_FORMS[sync1] if sync1 else "SPIN" if early_access
                     else SYNC)
            .replace("@SYNC2@", "SPIN" if early_read or early_exit else SYNC)
            .replace("@CLOSE@", "SPIN" if early_exit else SYNC))


def _want(cluster: int, op: str) -> np.ndarray:
    t = np.arange(N, dtype=np.float32)
    rows = []
    for _ in range(CLUSTERS):
        for r in range(cluster):
            prev, nxt = (r - 1) % cluster, (r + 1) % cluster
            if op == "store":  # rank r's buffer holds what rank r - 1 stored
                rows.append(np.float32(prev * 10.0) + t * np.float32(0.5) + np.float32(0.0))
            else:  # its own, plus what it loaded from rank r + 1
                rows.append((np.float32(r * 1000.0) + t) + (np.float32(nxt * 1000.0) + t))
    return np.concatenate(rows)


def _check(src: str, cluster: int):
    import cupy as cp

    import consan

    out = cp.zeros(CLUSTERS * cluster * N, dtype=cp.float32)
    return consan.check(src, "exchange", grid=(CLUSTERS * cluster,), block=(N,), args=(out,),
                        options=(arch_option(),))


@pytest.mark.parametrize("op,sync1", [("store", ""), ("load", ""), ("generic", ""),
                                      ("load", "fenced"), ("generic", "fenced")])
@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_clean_exchange_is_clean_and_bit_exact(cluster, op, sync1):
    """sync1 "fenced": a cluster fence then a relaxed arrival publish the buffer."""
    import cupy as cp

    need_sm90()
    src = _src(cluster, op=op, sync1=sync1)

    out = clean_and_native(src, "exchange", CLUSTERS * cluster * N, cp.float32,
                           grid=(CLUSTERS * cluster, 1, 1), block=(N, 1, 1),
                           options=(arch_option(),))
    np.testing.assert_array_equal(out, _want(cluster, op))


def _racy(cluster: int, src: str, kind: str, current: str, earlier: str, other: str):
    """The launch reports only `kind` at the `current` marker with the earlier site at
    `earlier`, and in each CTA (cluster_rank r) the other CTA (its record field `other`:
    prev_rank or cur_rank) is rank r - 1. The report text, its words one space apart."""
    need_sm90()
    rep = _check(src, cluster)
    assert {(v.kind, v.line, v.prev_line) for v in rep.violations} == {
        (kind, line_of(src, current), line_of(src, earlier))}, str(rep)
    pairs = {(v.cluster_rank, getattr(v, other)) for v in rep.violations}
    assert pairs and all(p == (r - 1) % cluster for r, p in pairs), pairs
    # (words, not lines: the report wraps its sentences where their numbers put the edge,
    # and which records a launch stores -- so which warps and ranks they name -- varies)
    return " ".join(str(rep).split())


@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_read_before_the_second_cluster_barrier_is_raw_naming_the_peer(cluster):
    text = _racy(cluster, _src(cluster, op="store", early_read=True), "race.raw", "@read",
                 "@store", "prev_rank")
    assert "CTA rank" in text and "cluster" in text, text


@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_store_before_the_first_cluster_barrier_is_waw_at_the_store(cluster):
    # judged by the CTA whose bytes they are: the store is its peer's, rank r - 1
    text = _racy(cluster, _src(cluster, op="store", early_access=True), "race.waw", "@store",
                 "@init", "cur_rank")
    assert "distributed shared memory" in text, text


@pytest.mark.parametrize("op", ["load", "generic"])
@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_load_before_the_first_cluster_barrier_is_raw_at_the_load(cluster, op):
    _racy(cluster, _src(cluster, op=op, early_access=True), "race.raw",
          "@load" if op == "load" else "@generic-load", "@init", "cur_rank")


@pytest.mark.parametrize("op", ["load", "generic"])
@pytest.mark.parametrize("cluster", [2, 4])
def test_exit_before_a_cluster_barrier_orders_the_peers_load_is_early_exit(cluster, op):
    marker = "@load" if op == "load" else "@generic-load"
    text = _racy(cluster, _src(cluster, op=op, early_exit=True), "cluster.early-exit", "@end",
                 marker, "prev_rank")
    assert "cluster.sync()" in text, text


@pytest.mark.parametrize("op", ["load", "generic"])
@pytest.mark.parametrize("cluster", [2, 4])
def test_overwrite_after_the_barrier_that_releases_the_peers_load_is_clean(cluster, op):
    import cupy as cp

    need_sm90()
    src = _src(cluster, op=op, overwrite="after")

    out = clean_and_native(src, "exchange", CLUSTERS * cluster * N, cp.float32,
                           grid=(CLUSTERS * cluster, 1, 1), block=(N, 1, 1),
                           options=(arch_option(),))
    t = np.arange(N, dtype=np.float32)
    want = [(np.float32(-1.0) - t) + (np.float32(((r + 1) % cluster) * 1000.0) + t)
            for _ in range(CLUSTERS) for r in range(cluster)]
    np.testing.assert_array_equal(out, np.concatenate(want))


@pytest.mark.parametrize("op", ["load", "generic"])
@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_overwrite_before_the_barrier_that_releases_the_peers_load_is_war(cluster, op):
    marker = "@load" if op == "load" else "@generic-load"
    text = _racy(cluster, _src(cluster, op=op, overwrite="before"), "race.war", "@overwrite",
                 marker, "prev_rank")
    assert "read" in text and "CTA rank" in text, text


@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_a_write_between_the_cluster_fence_and_the_relaxed_arrival_is_raw_at_the_load(cluster):
    _racy(cluster, _src(cluster, op="load", sync1="write-after-fence"), "race.raw", "@load",
          "@late-init", "cur_rank")


@pytest.mark.parametrize("cluster", [2, 4])
def test_a_relaxed_arrival_without_a_fence_publishes_nothing_to_the_peer(cluster):
    _racy(cluster, _src(cluster, op="load", sync1="relaxed"), "race.raw", "@load", "@init",
          "cur_rank")
