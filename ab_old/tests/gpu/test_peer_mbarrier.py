"""A peer CTA's mbarrier: one CTA's arrives, expect_tx and st.async on the mbarrier of another
CTA of its cluster, in clusters of 2, 4 and 8 CTAs on a real GPU.

Every CTA initialises its own mbarrier `full`; after a cluster barrier, CTA rank r hands a
buffer to rank r + 1 (mod the cluster): through `st.shared::cluster` then
`mbarrier.arrive.release.cluster.shared::cluster` on rank r + 1's mbarrier (every thread
arrives), or through `st.async` completing its bytes on that mbarrier, which rank r's thread
0 arms with `mbarrier.arrive.expect_tx` on it. Each CTA waits on its own mbarrier, then
reads its buffer. Clean: no finding and the native bits. Racy twins, with pauses that fix
who gets where first:
- the read without the wait: race.raw (stores) or async.pending-write (st.async) at the
  read, the earlier write the peer's, made by CTA rank r - 1;
- the stores after the arrive: the wait does not cover them, race.raw at the read;
- one arrival fewer than the mbarrier expects: a deadlock at the wait, and the kernel ends.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, check_against_native, clean_and_native, line_of, need_sm90

pytestmark = pytest.mark.gpu

N = 256  # floats per CTA's buffer (one per thread)
CLUSTERS = 2

HANDOFF = r"""
#define CS @CS@
#define N 256
#define CLUSTER_SYNC asm volatile("barrier.cluster.arrive.release.aligned;\n\t" \
                                  "barrier.cluster.wait.acquire.aligned;" ::: "memory")
#define SPIN { long long t0 = clock64(); while (clock64() - t0 < 2000000) {} }
#define ARRIVE(b) asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" \
                               :: "r"(b) : "memory")
extern "C" __global__ void __cluster_dims__(CS, 1, 1) handoff(float* out) {
    __shared__ __align__(16) float buf[N];
    __shared__ __align__(8) unsigned long long full;
    unsigned t = threadIdx.x, rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    unsigned next = (rank + 1) % CS;
    unsigned fb = (unsigned)__cvta_generic_to_shared(&full), pa, pb;
    unsigned mine = (unsigned)__cvta_generic_to_shared(&buf[t]);
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(pa) : "r"(mine), "r"(next));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(pb) : "r"(fb), "r"(next));
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(fb), "r"(@COUNT@) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    CLUSTER_SYNC;  // every CTA's mbarrier is initialised
    float v = rank * 10.0f + t * 0.5f;
#if @ASYNC@
    if (t == 0)
        asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;"
                     :: "r"(pb), "r"(N * 4) : "memory");  // @expect
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];"
                 :: "r"(pa), "r"(__float_as_uint(v)), "r"(pb) : "memory");  // @st-async
#elif @LATE_STORE@
    ARRIVE(pb);  // @early-arrive
    SPIN
    asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(pa), "f"(v) : "memory");  // @late-store
#else
    asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(pa), "f"(v) : "memory");  // @store
    ARRIVE(pb);  // @arrive
#endif
    @WAIT@
    out[blockIdx.x * N + t] = buf[t];  // @read
    CLUSTER_SYNC;  // no CTA leaves while a peer may still reach its shared memory
}
"""

WAIT = ("{ unsigned ok = 0; while (!ok) asm volatile(\"{ .reg .pred p; "
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0; "
        "selp.u32 %0, 1, 0, p; }\" : \"=r\"(ok) : \"r\"(fb) : \"memory\"); }  // @wait")


def _src(cluster: int, *, st_async: bool = False, wait: bool = True, late_store: bool = False,
         missing: int = 0) -> str:
    """`missing`: arrivals the mbarrier expects beyond those the peer makes."""
    count = (1 if st_async else N) + missing
    # a racy read comes after a pause twice the peer's, so the peer's stores are in first
    pause = "SPIN SPIN"
    return (HANDOFF.replace("@CS@", str(cluster)).replace("@COUNT@", str(count))
            .replace("@ASYNC@", "1" if st_async else "0")
            .replace("@LATE_STORE@", "1" if late_store else "0")
            .replace("@WAIT@", (WAIT + (f"\n    {pause}" if late_store else "")) if wait
                     else pause))


def _check(src: str, cluster: int):
    import cupy as cp

    import consan

    out = cp.zeros(CLUSTERS * cluster * N, dtype=cp.float32)
    return consan.check(src, "handoff", grid=(CLUSTERS * cluster,), block=(N,), args=(out,),
                        options=(arch_option(),))


@pytest.mark.parametrize("st_async", [False, True], ids=["store-arrive", "st-async"])
@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_handoff_through_the_peers_mbarrier_is_clean_and_bit_exact(cluster, st_async):
    import cupy as cp

    need_sm90()
    src = _src(cluster, st_async=st_async)

    out = clean_and_native(src, "handoff", CLUSTERS * cluster * N, cp.float32,
                           grid=(CLUSTERS * cluster, 1, 1), block=(N, 1, 1),
                           options=(arch_option(),))
    t = np.arange(N, dtype=np.float32)
    want = [np.float32(((r - 1) % cluster) * 10.0) + t * np.float32(0.5)
            for _ in range(CLUSTERS) for r in range(cluster)]
    np.testing.assert_array_equal(out, np.concatenate(want))


def _racy(cluster: int, src: str, kind: str, current: str, earlier: str) -> str:
    """The launch reports only `kind` at `current` with the earlier site at `earlier`, the
    earlier write made by CTA rank r - 1 in each CTA r. The report text."""
    need_sm90()
    rep = _check(src, cluster)
    assert {(v.kind, v.line, v.prev_line) for v in rep.violations} == {
        (kind, line_of(src, current), line_of(src, earlier))}, str(rep)
    pairs = {(v.cluster_rank, v.prev_rank) for v in rep.violations}
    assert pairs and all(p == (r - 1) % cluster for r, p in pairs), pairs
    return str(rep)


@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_read_without_the_wait_is_raw_naming_the_peer(cluster):
    text = _racy(cluster, _src(cluster, wait=False), "race.raw", "@read", "@store")
    assert "CTA rank" in text, text


@pytest.mark.parametrize("cluster", [2, 4])
def test_stores_after_the_arrive_are_not_covered_by_the_wait(cluster):
    _racy(cluster, _src(cluster, late_store=True), "race.raw", "@read", "@late-store")


@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_read_before_the_wait_on_a_peers_st_async_is_pending_write(cluster):
    _racy(cluster, _src(cluster, st_async=True, wait=False), "async.pending-write", "@read",
          "@st-async")


def test_one_arrival_short_is_a_deadlock_and_the_kernel_ends():
    need_sm90()
    src = _src(2, missing=1)
    rep = _check(src, 2)
    assert {(v.kind, v.line) for v in rep.violations} == {("deadlock", line_of(src, "@wait"))}, \
        str(rep)


@pytest.mark.parametrize("pairs,stages,tables", [
    (1, 4, "shared"), (132, 4, "shared"), (1, 8, "shared"), (132, 8, "shared"),
    (132, 4, "device"), (1, 8, "device")])
def test_dsmem_ring_is_clean_and_bit_exact(pairs, stages, tables, monkeypatch):
    """The two-CTA producer/consumer ring of benchmarks/bench_async.py (tests/kernels/
    dsmem_ring.py): st.async into the consumer on its mbarriers, the consumer's arrives on
    the producer's. With 8 stages each CTA posts to the other faster than it applies its
    own posts: no post may be lost (a note) waiting for room. Its granule tables in shared
    memory (the default: its peers reach it by copies and mbarrier operations only) and in
    device memory (CONSAN_VC_SMEM=0)."""
    import cupy as cp

    from tests.kernels import dsmem_ring as g

    need_sm90()
    monkeypatch.setenv("CONSAN_VC_SMEM", "1" if tables == "shared" else "0")
    tiles = 64

    def make_args():
        x, out, _ = g.inputs(cp, pairs, tiles)
        return g.args(x, out, tiles), [out], None

    rep, (out,) = check_against_native(g.source(stages), g.KERNEL, make_args, grid=g.grid(pairs),
                                       block=g.BLOCK, options=(arch_option(),))
    assert rep.ok and not rep.notes and not rep.unmodeled, str(rep)
    np.testing.assert_array_equal(out.reshape(pairs, g.TILE), g.inputs(np, pairs, tiles)[2])


@pytest.mark.parametrize("stages", [4, 6, 8])
def test_the_instrumented_ring_keeps_the_native_kernels_resident_ctas(stages):
    """264 CTAs of 256 threads: natively two a SM, all resident at once. The probes push
    the kernel past two CTAs a SM (254 registers with the device-memory tables: one a SM,
    two waves); held to the native two (instrument/occupancy.py) every CTA is resident
    again, with its granule tables in shared memory at four stages, and the launch stays
    clean and bit-exact. From six stages the 4-byte granule tables in shared memory (117
    KiB a CTA at six) leave room for one CTA a SM: the module (whole 16-byte chunks) takes
    chunk granules there instead (58 KiB), which keep two."""
    import cupy as cp

    import consan
    from consan import runtime
    from tests.kernels import dsmem_ring as g

    need_sm90()
    pairs, tiles = 132, 64
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    p = consan.prepare(g.source(stages), g.KERNEL, grid=g.grid(pairs), block=g.BLOCK,
                       options=(arch_option(),))
    regs = cp.cuda.driver.funcGetAttribute(runtime._CU_FUNC_ATTRIBUTE_NUM_REGS, p.function.ptr)
    assert regs <= 128 and p.nslots == min(2 * pairs, 2 * sms), (regs, p.nslots)
    assert p.layout.placement is runtime.Placement.VC_SMEM  # (its granule tables' build)
    assert p.cluster_chunks is (stages > 4), p.layout.granule_bytes
    x, out, ref = g.inputs(cp, pairs, tiles)
    p.launch(g.args(x, out, tiles))
    rep = p.report()
    assert rep.ok and not rep.notes and not rep.unmodeled, str(rep)
    np.testing.assert_array_equal(out.get().reshape(pairs, g.TILE), ref)


@pytest.mark.parametrize("stages,tables", [(4, "shared"), (6, "shared"), (6, "device")])
def test_the_ring_reading_before_its_full_wait_is_pending_write_in_either_granule(
        stages, tables, monkeypatch):
    """The ring's consumer reads each stage without waiting on its `full` mbarrier: its
    reads are judged against the producer's st.async, the copy of CTA rank 0, as
    async.pending-write (or uninit.read where no copy reached the bytes yet), at the read;
    a copy that lands after such a read, which the producer's wait on `empty` did not
    order, is race.war at the st.async. A consumer that never waits may also complete two
    phases of an `empty` mbarrier before the producer waits on the first: its parity wait
    then waits for a phase nobody completes, a deadlock at that wait (on an H200 in about
    ten CTAs of 264), which consan ends. And with the consumer freeing stages unwaited, the
    producer's warps drift apart: its thread 0 may arm `full[s]` for a later tile while a
    lagging warp's bytes for the earlier tile have not landed, an arrival on a phase whose
    pending count is already 0, mbarrier.underflow at that arrive (on an H200 in 2 CTAs of
    264, in one run of several). With 4-byte granules (four stages) and with the chunk
    granules six stages take, in shared memory and in device memory (CONSAN_VC_SMEM=0)."""
    import cupy as cp

    import consan
    from consan import runtime
    from tests.kernels import dsmem_ring as g

    need_sm90()
    monkeypatch.setenv("CONSAN_VC_SMEM", "1" if tables == "shared" else "0")
    src = g.source(stages).replace("while (!ok)  // @wait-full", "while (false)  // @wait-full")
    pairs, tiles = 132, 64
    p = consan.prepare(src, g.KERNEL, grid=g.grid(pairs), block=g.BLOCK,
                       options=(arch_option(),))
    assert p.cluster_chunks is (stages > 4)
    assert (p.layout.placement is runtime.Placement.DEVICE) is (tables == "device")
    x, out, _ = g.inputs(cp, pairs, tiles)
    p.launch(g.args(x, out, tiles))
    rep = p.report()
    read = line_of(src, "@read-stage")
    # (the lines the asm statements' operands start on, where lineinfo puts them)
    copy = line_of(src, '"r"(__float_as_uint(v.z)), "r"(__float_as_uint(v.w)), "r"(pf)')
    empty_wait = line_of(src, ': "=r"(ok) : "r"(e), "r"(par)')  # (the producer's)
    arm = line_of(src, '"[%0], %1;" :: "r"(pf), "r"(TILE * 4)')  # (its arrive.expect_tx)
    assert rep.violations and {(v.kind, v.line) for v in rep.violations} <= {
        ("async.pending-write", read), ("uninit.read", read), ("race.war", copy),
        ("deadlock", empty_wait), ("mbarrier.underflow", arm)}, str(rep)
    pending = [v for v in rep.violations if v.kind == "async.pending-write"]
    assert pending and all(v.prev_line == copy and v.prev_rank == 0 for v in pending), str(rep)


# The other way round: CTA rank r reads its own buffer, then frees it with an arrive on the
# mbarrier `freed` of rank r - 1, which writes into it (st.shared::cluster, or st.async
# completing on rank r's `full`) after waiting on its own `freed`. The reader's arrive is
# a release: the overwrite is ordered after the read. The racy twin writes without the
# wait, after a pause, so the overwrite comes after the read: race.war at the write, the
# writer CTA rank r - 1 of the reader's.
REFILL = r"""
#define CS @CS@
#define N 256
#define CLUSTER_SYNC asm volatile("barrier.cluster.arrive.release.aligned;\n\t" \
                                  "barrier.cluster.wait.acquire.aligned;" ::: "memory")
#define SPIN { long long t0 = clock64(); while (clock64() - t0 < 2000000) {} }
#define WAIT(b) { unsigned ok = 0; while (!ok) asm volatile("{ .reg .pred p; " \
    "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0; " \
    "selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(b) : "memory"); }
extern "C" __global__ void __cluster_dims__(CS, 1, 1) refill(float* out) {
    __shared__ __align__(16) float buf[N];
    __shared__ __align__(8) unsigned long long freed, full;
    unsigned t = threadIdx.x, rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    unsigned next = (rank + 1) % CS, prev = (rank + CS - 1) % CS;
    unsigned fr = (unsigned)__cvta_generic_to_shared(&freed);
    unsigned fu = (unsigned)__cvta_generic_to_shared(&full);
    unsigned mine = (unsigned)__cvta_generic_to_shared(&buf[t]), pfree, pa, pfull;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(pfree) : "r"(fr), "r"(prev));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(pa) : "r"(mine), "r"(next));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(pfull) : "r"(fu), "r"(next));
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(fr), "r"(N) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(fu) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    buf[t] = rank + t * 0.25f;
    CLUSTER_SYNC;  // every CTA's buffer and mbarriers are ready
    float v = buf[t];  // @read-own
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];"
                 :: "r"(pfree) : "memory");  // @free
    @WAIT_FREE@
    float w = v * 2.0f + 1.0f;
#if @ASYNC@
    if (t == 0)
        asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;"
                     :: "r"(pfull), "r"(N * 4) : "memory");
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];"
                 :: "r"(pa), "r"(__float_as_uint(w)), "r"(pfull) : "memory");  // @async-write
    WAIT(fu);
#else
    asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(pa), "f"(w) : "memory");  // @write
#endif
    CLUSTER_SYNC;
    out[blockIdx.x * N + t] = buf[t] + v;
    CLUSTER_SYNC;  // no CTA leaves while a peer may still reach its shared memory
}
"""


def _refill_src(cluster: int, *, st_async: bool, wait: bool) -> str:
    return (REFILL.replace("@CS@", str(cluster)).replace("@ASYNC@", "1" if st_async else "0")
            .replace("@WAIT_FREE@", "WAIT(fr);  // @wait-free" if wait else "SPIN"))


@pytest.mark.parametrize("st_async", [False, True], ids=["store", "st-async"])
@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_overwrite_after_the_readers_arrive_is_clean_and_bit_exact(cluster, st_async):
    import cupy as cp

    need_sm90()
    src = _refill_src(cluster, st_async=st_async, wait=True)

    out = clean_and_native(src, "refill", CLUSTERS * cluster * N, cp.float32,
                           grid=(CLUSTERS * cluster, 1, 1), block=(N, 1, 1),
                           options=(arch_option(),))
    t = np.arange(N, dtype=np.float32) * np.float32(0.25)
    want = [(np.float32((r - 1) % cluster) + t) * np.float32(2) + np.float32(1) +
            np.float32(r) + t for _ in range(CLUSTERS) for r in range(cluster)]
    np.testing.assert_array_equal(out, np.concatenate(want))


# A module whose peers reach it only by st.async and mbarrier operations keeps its granule
# tables in shared memory (the default), or in device memory (CONSAN_VC_SMEM=0); a store
# into a peer keeps them in device memory either way.
@pytest.mark.parametrize("tables", ["shared", "device"])
@pytest.mark.parametrize("st_async", [False, True], ids=["store", "st-async"])
@pytest.mark.parametrize("cluster", [2, 4])
def test_overwrite_without_the_wait_is_war_naming_the_writer(cluster, st_async, tables,
                                                             monkeypatch):
    import cupy as cp

    import consan

    need_sm90()
    monkeypatch.setenv("CONSAN_VC_SMEM", "1" if tables == "shared" else "0")
    src = _refill_src(cluster, st_async=st_async, wait=False)
    out = cp.zeros(CLUSTERS * cluster * N, dtype=cp.float32)
    rep = consan.check(src, "refill", grid=(CLUSTERS * cluster,), block=(N,), args=(out,),
                       options=(arch_option(),))
    assert {(v.kind, v.line, v.prev_line) for v in rep.violations} == {
        ("race.war", line_of(src, "@async-write" if st_async else "@write"),
         line_of(src, "@read-own"))}, str(rep)
    pairs = {(v.cluster_rank, v.cur_rank) for v in rep.violations}
    assert pairs and all(c == (r - 1) % cluster for r, c in pairs), pairs
    assert "mbarrier" in str(rep), str(rep)


def _under_session(src: str, kernel: str, grid, args, out):
    """One launch of `src` as `consan run` takes it (the session's proof before launch,
    else instrumented), then the same launch natively: (its stats, findings, the two
    outputs)."""
    import cupy as cp

    from consan import frontends, session

    def launch(text: str):
        out.fill(0)
        cp.RawKernel(text, kernel, options=(arch_option(),))(grid, (N, 1, 1), args)
        cp.cuda.Device().synchronize()
        return out.get()

    s = session.Session(session.Options(count_other_launches=False), print_findings=False)
    with frontends.sanitizing(s):
        got = launch(src)
    native = launch(src + "\n// native\n")
    return s.report.kernels[kernel], s.report.findings, got, native


@pytest.mark.parametrize("st_async", [False, True], ids=["store-arrive", "st-async"])
@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_handoff_under_a_session_is_proven_and_runs_natively(cluster, st_async):
    """The handoff as `consan run` takes it: all CTAs of a cluster proven together before
    launch (instrument/static_proof.py), run natively, the native bits."""
    import cupy as cp

    need_sm90()
    out = cp.zeros(CLUSTERS * cluster * N, dtype=cp.float32)
    stats, findings, got, native = _under_session(
        _src(cluster, st_async=st_async), "handoff", (CLUSTERS * cluster,), (out,), out)
    assert not findings and stats.launches_checked == 1, findings
    assert stats.proven.startswith("proven race-free") and \
        f"clusters of {cluster} CTAs" in stats.proven, stats
    assert got.tobytes() == native.tobytes()


def test_handoff_read_before_its_wait_under_a_session_is_refused_and_reported():
    """Its racy twin is not proven: checked instrumented, async.pending-write (at the read:
    `_racy` above checks the lines of the same launch through consan.check)."""
    import cupy as cp

    need_sm90()
    src = _src(2, st_async=True, wait=False)
    out = cp.zeros(CLUSTERS * 2 * N, dtype=cp.float32)
    stats, findings, _, _ = _under_session(src, "handoff", (CLUSTERS * 2,), (out,), out)
    assert not stats.proven, stats
    assert {f.finding.kind for f in findings} == {"async.pending-write"}, findings


@pytest.mark.parametrize("pairs", [1, 132])
def test_dsmem_ring_under_a_session_is_proven_and_bit_exact(pairs):
    """bench_async's ring as `consan run` takes it: proven for its tile count, native."""
    import cupy as cp

    from consan import frontends, session
    from tests.kernels import dsmem_ring as g

    need_sm90()
    tiles = 64
    x, out, want = g.inputs(cp, pairs, tiles)

    def launch(text: str):
        out.fill(0)
        cp.RawKernel(text, g.KERNEL, options=(arch_option(),))(
            g.grid(pairs), g.BLOCK, g.args(x, out, tiles))
        cp.cuda.Device().synchronize()
        return out.get()

    s = session.Session(session.Options(count_other_launches=False), print_findings=False)
    with frontends.sanitizing(s):
        got = launch(g.SOURCE)
    stats = s.report.kernels[g.KERNEL]
    assert s.report.ok and stats.proven.startswith("proven race-free"), (s.report, stats)
    assert got.tobytes() == launch(g.SOURCE + "\n// native\n").tobytes()
    np.testing.assert_array_equal(got.reshape(pairs, g.TILE), want)
