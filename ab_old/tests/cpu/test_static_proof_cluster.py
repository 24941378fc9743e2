"""The proof before launch of a cluster's CTAs together (docs/model.md, "Kernels proven
before launch", clusters): bench_async's two-CTA ring over distributed shared memory as
NVRTC compiles it, and mutants of it that race, hang or let a CTA exit while its peer may
still reach its shared memory; each mutant must be refused."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from instrument.ptx import parse
from instrument.static_proof import Proof
from tests import corpus_build
from tests.kernels import dsmem_ring
from tests.proof_util import prove_kernel

TILES = {2: (8, 32)}  # the ring's `tiles` parameter: (value, bits the launch passes)


@functools.cache
def _ptx(source: str) -> str:
    return corpus_build.compile_cached(source, "ring.cu", ["-arch=compute_90", "-lineinfo"])


def _prove(source: str, params=None, cluster=None):
    return prove_kernel(_ptx(source), dims=(256, 1, 1),
                        params=TILES if params is None else params, cluster=cluster)


def _edit(old: str, new: str, source: str = dsmem_ring.SOURCE) -> str:
    assert source.count(old) == 1, old
    return source.replace(old, new)


@pytest.mark.parametrize("stages,tiles", [(4, 8), (4, 3), (2, 6), (8, 20)])
def test_the_clustered_ring_is_proven_for_its_launch_values(stages, tiles):
    got = _prove(dsmem_ring.source(stages), {2: (tiles, 32)})
    assert isinstance(got, Proof), got
    assert (got.ctas, got.threads, got.barriers) == (2, 256, 2)
    assert "clusters of 2 CTAs of 256 threads" in got.sentence()


def test_without_the_tile_count_or_with_another_cluster_shape_it_is_not_proven():
    assert not isinstance(_prove(dsmem_ring.SOURCE, {}), Proof)
    assert "not its .reqnctapercluster" in _prove(dsmem_ring.SOURCE, cluster=(4, 1, 1))


WAIT_FULL = ("            while (!ok)  // @wait-full\n"
             "                asm volatile(\"{ .reg .pred p; mbarrier.try_wait.parity.acquire."
             "cluster.\"\n                             \"shared::cta.b64 p, [%1], %2; selp.u32 "
             "%0, 1, 0, p; }\"\n                             : \"=r\"(ok) : \"r\"(f), \"r\"(par) "
             ": \"memory\");\n")
END = ("    // no CTA leaves while the other may still reach its shared memory\n"
       "    asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\t\"\n"
       "                 \"barrier.cluster.wait.acquire.aligned;\" ::: \"memory\");\n}")
FREE = ("            asm volatile(\"mbarrier.arrive.release.cluster.shared::cluster.b64 _, "
        "[%0];\"\n                         :: \"r\"(pe) : \"memory\");\n")

MUTANTS = {
    "the consumer reads before its wait": (WAIT_FULL, ""),
    "the producer refills without waiting for the stage to be freed": (
        "            if (it >= STAGES) {", "            if (false) {"),
    "no cluster barrier before exit": (END, "}"),
    "no cluster barrier after the mbarriers' initialisation": (
        "    asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\t\"\n"
        "                 \"barrier.cluster.wait.acquire.aligned;\" ::: \"memory\");\n"
        "    if (rank == 0) {", "    if (rank == 0) {"),
    "a relaxed cluster arrive": ("barrier.cluster.arrive.release.aligned;\\n\\t\"\n"
                                 "                 \"barrier.cluster.wait.acquire.aligned;\" "
                                 "::: \"memory\");\n    if (rank == 0) {",
                                 "barrier.cluster.arrive.relaxed.aligned;\\n\\t\"\n"
                                 "                 \"barrier.cluster.wait.acquire.aligned;\" "
                                 "::: \"memory\");\n    if (rank == 0) {"),
    "the consumer frees the stage before reading it": (
        "            float4 v = stage[s][t];  // @read-stage\n"
        "            acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;\n", ""),
    "the consumer frees the stage before reading it (its read)": (
        FREE, FREE + "            float4 v = stage[s][t];\n"
        "            acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;\n"),
    "the arrive on the peer's mbarrier is of .cta scope": (
        "mbarrier.arrive.release.cluster.shared::cluster.b64",
        "mbarrier.arrive.shared::cluster.b64"),
    "the wait for the peer's copies is of .cta scope": (
        "            while (!ok)  // @wait-full\n"
        "                asm volatile(\"{ .reg .pred p; mbarrier.try_wait.parity.acquire."
        "cluster.\"",
        "            while (!ok)  // @wait-full\n"
        "                asm volatile(\"{ .reg .pred p; mbarrier.try_wait.parity.\""),
    "the phase expects half the bytes copied": ("\"r\"(pf), \"r\"(TILE * 4)",
                                                "\"r\"(pf), \"r\"(TILE * 2)"),
    "the phase expects twice the bytes copied": ("\"r\"(pf), \"r\"(TILE * 4)",
                                                 "\"r\"(pf), \"r\"(TILE * 8)"),
    "the consumer waits for the wrong parity": (
        "            unsigned par = (it / STAGES) & 1;\n",
        "            unsigned par = ((it / STAGES) + 1) & 1;\n"),
    "the producer waits for the wrong parity": (
        "                unsigned par = ((it / STAGES) - 1) & 1;\n",
        "                unsigned par = (it / STAGES) & 1;\n"),
    "the producer copies into its own CTA": (
        "\"=r\"(pd) : \"r\"(d), \"r\"(other));", "\"=r\"(pd) : \"r\"(d), \"r\"(rank));"),
    "the copies land in the next stage": (
        "__cvta_generic_to_shared(&stage[s][t]), f, pd, pf;",
        "__cvta_generic_to_shared(&stage[(s + 1) % STAGES][t]), f, pd, pf;"),
    "the producer writes the consumer's next stage before it is freed": (
        "            if (it >= STAGES) {", "            if (it >= STAGES + 1) {"),
}


def test_reading_a_neighbours_element_of_a_landed_stage_is_proven():
    """Every byte of the stage landed before the consumer's wait returned."""
    got = _prove(_edit("            float4 v = stage[s][t];  // @read-stage\n",
                       "            float4 v = stage[s][(t + 1) % 256];  // @read-stage\n"))
    assert isinstance(got, Proof), got


@pytest.mark.parametrize("name", sorted(n for n in MUTANTS if not n.endswith("(its read)")))
def test_a_mutant_of_the_ring_is_refused(name):
    old, new = MUTANTS[name]
    source = _edit(old, new)
    if f"{name} (its read)" in MUTANTS:
        source = _edit(*MUTANTS[f"{name} (its read)"], source)
    got = _prove(source)
    assert not isinstance(got, Proof), name


def _handoff(**kw) -> str:
    from tests.gpu.test_peer_mbarrier import _src

    return _src(**kw)


@pytest.mark.parametrize("st_async", [False, True], ids=["store-arrive", "st-async"])
@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_the_gpu_suites_handoff_to_the_next_rank_is_proven(cluster, st_async):
    """tests/gpu/test_peer_mbarrier.py's clean twins: each CTA hands a buffer to rank r + 1
    of its cluster, by stores then every thread's arrive on that CTA's mbarrier (the
    stores happen before the reader's wait through the clocks: rule 2 counts them), or by
    st.async; and the way back, where the reader frees its buffer with an arrive on the
    writer's mbarrier before the writer overwrites it."""
    from tests.gpu.test_peer_mbarrier import _refill_src

    for src in (_handoff(cluster=cluster, st_async=st_async),
                _refill_src(cluster, st_async=st_async, wait=True)):
        got = _prove(src, params={})
        assert isinstance(got, Proof) and got.ctas == cluster, got


@pytest.mark.parametrize("st_async", [False, True], ids=["store", "st-async"])
def test_the_gpu_suites_overwrite_without_the_wait_is_refused(st_async):
    from tests.gpu.test_peer_mbarrier import _refill_src

    got = _prove(_refill_src(2, st_async=st_async, wait=False), params={})
    assert not isinstance(got, Proof), got
    assert "touch byte 0" in got or "touch the granule at byte 0" in got, got


@pytest.mark.parametrize("racy", [dict(wait=False), dict(late_store=True), dict(missing=1),
                                  dict(st_async=True, wait=False),
                                  dict(st_async=True, missing=1)],
                         ids=["no-wait", "late-store", "one-arrival-short",
                              "st-async-no-wait", "st-async-one-arrival-short"])
def test_the_gpu_suites_racy_handoffs_are_refused(racy):
    got = _prove(_handoff(cluster=2, **racy), params={})
    assert not isinstance(got, Proof), racy


REVIEW = Path(__file__).parents[1] / "corpus" / "proof_review"


@pytest.mark.parametrize("name", sorted(p.name for p in REVIEW.glob("*.cu")))
def test_the_reviews_cu_kernels_are_refused(name):
    """Kernels adversarial reviews of the cluster proofs and of rule 2 through the clocks
    found accepted: replicas across CTAs, an arrive taken as ordered before a later copy's
    phase, st.async outside a cluster, a store into a peer before the first cluster
    barrier, copies the ISA forbids, `arrive.noComplete`, a bulk store of bytes stored
    with no proxy fence, an elected store (each file says how it goes wrong)."""
    src = (REVIEW / name).read_text()
    block = int(re.search(r"// block \((\d+)", src).group(1))
    for cluster in ((None, (1, 1, 1)) if "outside_a_cluster" in name else (None,)):
        macros = {"review_macros.h": (REVIEW / "review_macros.h").read_text()}
        ptx = corpus_build.compile_cached(src, name, ["-arch=compute_90", "-lineinfo"],
                                          headers=macros)
        for fn in (f for f in parse(ptx, "k").functions if f.is_entry):  # (a file may
            # hold several)
            got = prove_kernel(ptx, fn.name, dims=(block, 1, 1), params={}, cluster=cluster)
            assert not isinstance(got, Proof), (name, fn.name, cluster)


@pytest.mark.parametrize("op", ["store", "load"])
@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_the_gpu_suites_dsmem_exchange_is_proven(cluster, op):
    """tests/gpu/test_dsmem.py's clean twins: a store into (or a load from) the next rank's
    buffer between cluster barriers, and an overwrite of the CTA's own buffer after them."""
    from tests.gpu.test_dsmem import _src

    for overwrite in ("", "after"):
        got = _prove(_src(cluster, op=op, overwrite=overwrite), params={})
        assert isinstance(got, Proof) and got.ctas == cluster, (overwrite, got)


@pytest.mark.parametrize("racy", [
    dict(op="store", early_read=True), dict(op="store", early_access=True),
    dict(op="load", early_access=True), dict(op="store", early_exit=True),
    dict(op="load", early_exit=True), dict(op="store", overwrite="before"),
    dict(op="load", overwrite="before"), dict(op="store", sync1="relaxed")],
    ids=["read-before-sync", "store-before-sync", "load-before-sync", "store-no-close",
         "load-no-close", "store-overwritten", "load-overwritten", "relaxed-arrive"])
def test_the_gpu_suites_racy_dsmem_exchanges_are_refused(racy):
    from tests.gpu.test_dsmem import _src

    assert not isinstance(_prove(_src(2, **racy), params={}), Proof), racy


CROSS = r"""
extern "C" __global__ void __cluster_dims__(2, 1, 1) cross(float* out) {
    __shared__ float s[64];
    unsigned rank;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const int t = threadIdx.x;
    s[t] = 0.0f;
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
    if (rank == 0) {  // a store into CTA 1's s
        unsigned local = (unsigned)__cvta_generic_to_shared(&s[t]), remote;
        asm volatile("mapa.shared::cluster.u32 %0, %1, 1;" : "=r"(remote) : "r"(local));
        asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(remote), "f"(1.0f) : "memory");
    }
    SYNC
    if (rank == 1) out[t] = s[t];
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
"""
CLUSTER_SYNC = ('asm volatile("barrier.cluster.arrive.aligned;\\n\\tbarrier.cluster.wait.'
                'aligned;" ::: "memory");')


@pytest.mark.parametrize(("sync", "proven"), [
    ("__syncthreads();", True), ('asm volatile("bar.sync 1, 64;" ::: "memory");', True),
    ("", False)])
def test_a_ctas_own_barrier_orders_its_warps_in_a_cluster(sync, proven):
    """tests/gpu/test_cluster.py's kernel: warp 0 of each CTA writes, warp 1 reads after the
    CTA's `__syncthreads()` (or a named barrier of its two warps): each CTA's barriers are
    its own generations, through the clocks (proof_named.py)."""
    from tests.gpu.test_cluster import CLUSTER

    ptx = _ptx(CLUSTER.replace("SYNC", sync))
    got = prove_kernel(ptx, "in_cluster", dims=(64, 1, 1), params={}, grid=(4, 1, 1))
    assert isinstance(got, Proof) == proven, got
    if proven:
        assert (got.ctas, got.barriers) == (2, 0)
    else:
        assert "two warps touch the granule at byte 0 in CTA rank 0" in got, got


@pytest.mark.parametrize(("sync", "proven"), [("__syncthreads();", False),
                                              (CLUSTER_SYNC, True)])
def test_a_ctas_barrier_does_not_order_a_peers_store_into_it(sync, proven):
    """CTA 0 stores into CTA 1's shared memory; CTA 1 reads it after its own
    `__syncthreads()`, which orders nothing of CTA 0's: refused; after a cluster barrier:
    proven."""
    got = prove_kernel(_ptx(CROSS.replace("SYNC", sync)), "cross", dims=(64, 1, 1),
                       params={}, grid=(2, 1, 1))
    assert isinstance(got, Proof) == proven, got
    if not proven:
        assert "two warps touch the granule at byte 0 in CTA rank 1" in got, got


def _multicast(cluster: int, **kw) -> str:
    from tests.gpu.test_multicast import _src

    return _src(cluster, **kw)


@pytest.mark.parametrize("cluster", [2, 4, 8])
@pytest.mark.parametrize(("kw", "why"), [
    ({"tensor": False}, None), ({"tensor": True}, None),
    ({"tensor": False, "senders": 1}, None),
    # a read before the CTA's own wait: the copies may still be landing
    ({"tensor": False, "early_read": True}, "the bulk copy at line"),
    # seed 001's flaky multicast: a ctaMask that leaves the last CTA out, which then reads
    # a buffer nothing wrote
    ({"tensor": False, "mask": "last out"}, "before any write certain to run"),
])
def test_multicast_copies_are_followed_into_every_cta_of_their_mask(cluster, kw, why):
    """tests/gpu/test_multicast.py's kernels: each rank multicasts its slice (a bulk copy
    or a TMA box) into every CTA of the ctaMask, each CTA waits on its own mbarrier."""
    from tests.gpu.test_multicast import N

    if kw.get("senders") and cluster != 2:
        pytest.skip("one issuer: the GPU suite's cluster of 2")
    if kw.get("mask") == "last out":
        kw = {**kw, "mask": (1 << cluster) - 1 - (1 << (cluster - 1))}
    maps = (N // cluster * 4,) if kw.get("tensor") else ()
    got = prove_kernel(corpus_build.compile_cached(_multicast(cluster, **kw), "m.cu",
                                                   ["-arch=compute_90a", "-lineinfo"]),
                       "multicast", dims=(N, 1, 1), params={}, maps=maps,
                       grid=(2 * cluster, 1, 1))
    if why is None:
        assert isinstance(got, Proof) and got.ctas == cluster, got
    else:
        assert isinstance(got, str) and why in got, got


@pytest.mark.parametrize("cluster", [2, 4])
@pytest.mark.parametrize("racy", [None, "late read", "late store"])
def test_a_multicast_buffer_reused_after_a_cluster_barrier(cluster, racy):
    """Two rounds into one buffer: clean where a cluster barrier separates each CTA's reads
    from the next round's copies; a read after that barrier, or a store while the copies
    fly, is refused."""
    from tests.gpu.test_multicast import LATE_READ, LATE_STORE, N, _reuse

    src = _reuse(cluster, {"late read": LATE_READ, "late store": LATE_STORE}.get(racy))
    got = prove_kernel(corpus_build.compile_cached(src, "m.cu",
                                                   ["-arch=compute_90a", "-lineinfo"]),
                       "reuse", dims=(N, 1, 1), params={}, grid=(2 * cluster, 1, 1))
    assert isinstance(got, Proof) == (racy is None), got
    if racy:
        assert "with no wait and barrier between them" in got, got
