"""wgmma on event traces, with checker.cu compiled for the host (tests/checker_host.py).

A warpgroup's MMA unit reads the operands asynchronously in the issuing warps'
open wgmma group: overwriting them before `wgmma.wait_group` retires that
group is async.pending-read (seed 004); a wgmma reading bytes a warp wrote
through the generic proxy without `fence.proxy.async` since is
proxy.missing-fence. Operands written by cp.async or a bulk copy and waited
for need no fence.
"""

from __future__ import annotations

import pytest

from instrument import abi
from instrument.wgmma_desc import Descriptor, MmaShape, Operand, granules

pytestmark = pytest.mark.needs_host_compiler

WG0 = range(4)  # warps of warpgroup 0
ALL = range(8)  # two warpgroups
A_OFF, B_OFF, C_OFF = 0x400, 0x1000, 0x2000  # two 2 KiB operand tiles, a second stage
# m64n64k16 f16, both operands K-major without swizzle: core matrices of 128 bytes,
# K neighbours 128 bytes apart (LBO), 8-row groups 256 bytes apart (SBO): 2 KiB each.
SS = MmaShape(64, 64, 16, "f16", "f16", a_smem=True).info
RS = MmaShape(64, 64, 16, "f16", "f16", a_smem=False).info
DA = Descriptor(A_OFF, 128, 256).encode()
DB = Descriptor(B_OFF, 128, 256).encode()
DC = Descriptor(C_OFF, 128, 256).encode()
TILE = 2048
MMA, WRITE, REFILL, COMMIT, WAIT = 5, 1, 7, 8, 9  # sites


@pytest.fixture(params=["shared", "device"])
def ck(request):
    """The checker with its buffer tables in shared memory, and in device memory; for the
    traces of whole 16-byte chunks (CHUNKS), with chunk granules too (the granule size of a
    module all of whose accesses are such: abi.CHUNK_GRANULE_BYTES)."""
    from tests.checker_host import HostChecker

    chunk = request.param.endswith("-chunk")
    c = HostChecker(nwarps=8, smem_bytes=16384, wgmma=True, vsh=request.param.startswith("shared"),
                    granule_bytes=abi.CHUNK_GRANULE_BYTES if chunk else abi.GRANULE_BYTES)
    assert c.begin() == 0
    return c


CHUNKS = pytest.mark.parametrize("ck", ["shared", "device", "shared-chunk", "device-chunk"],
                                 indirect=True)


def fill(c, off, warps=WG0, site=WRITE, fence=True, nbytes=TILE):
    """Each warp writes its share of [off, off+nbytes) with 16-byte stores, then fences."""
    warps = list(warps)
    for i, a in enumerate(range(off, off + nbytes, 16)):
        c.write(warps[i % len(warps)], a, size=16, site=site)
    if fence:
        for w in warps:
            c.proxy_fence(w)


def fill_granules(c, gs):
    """The warps of warpgroup 0 write granules gs (4 bytes each) in turn, fence, and every
    warp passes a barrier: the exact footprint of a descriptor, written and published."""
    for i, g in enumerate(sorted(gs)):
        c.write(i % 4, 4 * g, site=WRITE)
    for w in WG0:
        c.proxy_fence(w)
    c.sync(ALL)


def kinds(c):
    return sorted(set(c.kinds()))


@CHUNKS
def test_fenced_generic_writes_then_barrier_then_wgmma_is_clean(ck):
    fill(ck, A_OFF)
    fill(ck, B_OFF)
    ck.sync(ALL)
    ck.wgmma(0, DA, DB, SS, site=MMA)
    ck.wgmma_commit(0, site=COMMIT)
    ck.wgmma_wait(0, 0, site=WAIT)
    assert kinds(ck) == []


@CHUNKS
def test_no_fence_is_proxy_missing_fence(ck):
    fill(ck, B_OFF)
    fill(ck, A_OFF, fence=False)  # after the warps' last fence
    ck.sync(ALL)
    ck.wgmma(0, DA, DB, SS, site=MMA)
    assert kinds(ck) == [("proxy.missing-fence", MMA, WRITE)]
    recs = [r for r in ck.records[: int(ck.header["stored"][0])]]
    assert {int(r["barrier"]) for r in recs} == {0}  # operand A
    assert {int(r["count"]) | int(r["clock"]) << 32 for r in recs} == {DA}
    assert {int(r["prev_warp"]) for r in recs} <= set(WG0)
    assert all(A_OFF <= int(r["offset_lo"]) < int(r["offset_hi"]) <= A_OFF + TILE for r in recs)


@CHUNKS
def test_fence_before_the_write_does_not_cover_it(ck):
    for w in WG0:
        ck.proxy_fence(w)
    fill(ck, A_OFF, fence=False)
    fill(ck, B_OFF, fence=False)
    ck.sync(ALL)
    ck.wgmma(0, DA, DB, SS, site=MMA)
    assert kinds(ck) == [("proxy.missing-fence", MMA, WRITE)]


@CHUNKS
def test_fence_by_another_warp_does_not_cover_the_writer(ck):
    fill(ck, A_OFF, warps=[0, 1, 2, 3])
    fill(ck, B_OFF, warps=[5], fence=False)
    ck.proxy_fence(4)  # warp 4 fences, warp 5 wrote
    ck.sync(ALL)
    ck.wgmma(0, DA, DB, SS, site=MMA)
    assert kinds(ck) == [("proxy.missing-fence", MMA, WRITE)]
    recs = ck.records[: int(ck.header["stored"][0])]
    assert {int(r["prev_warp"]) for r in recs} == {5}
    assert {int(r["barrier"]) for r in recs} == {1}  # operand B
    assert {int(r["count"]) | int(r["clock"]) << 32 for r in recs} == {DB}
    assert all(B_OFF <= int(r["offset_lo"]) < int(r["offset_hi"]) <= B_OFF + TILE for r in recs)


@CHUNKS
def test_write_not_ordered_before_the_wgmma_is_a_race(ck):
    fill(ck, A_OFF)
    fill(ck, B_OFF, warps=[4])  # warp 4 (other warpgroup) wrote B, no barrier since
    ck.sync(WG0, barrier=1, count=128)
    ck.wgmma(0, DA, DB, SS, site=MMA)
    assert kinds(ck) == [("race.raw", MMA, WRITE)]


@CHUNKS
def test_unwritten_operand_is_uninit(ck):
    fill(ck, A_OFF)
    ck.sync(ALL)
    ck.wgmma(0, DA, DB, SS, site=MMA)
    assert kinds(ck) == [("uninit.read", MMA, -1)]


@CHUNKS
def test_a_from_registers_reads_only_b(ck):
    fill(ck, B_OFF)
    ck.sync(ALL)
    ck.wgmma(0, 0, DB, RS, site=MMA)
    assert kinds(ck) == []


# ---------------------------------------------------------------- wgmma groups (seed 004)

def _mma_stage(c, da=DA, db=DB):
    fill(c, A_OFF if da == DA else C_OFF)
    fill(c, B_OFF)
    c.sync(ALL)
    c.wgmma(0, da, db, SS, site=MMA)
    c.wgmma_commit(0, site=COMMIT)


@CHUNKS
def test_overwrite_before_wait_group_is_pending_read(ck):
    _mma_stage(ck)
    ck.sync(ALL)
    fill(ck, A_OFF, site=REFILL)  # the next k-step refills the stage: no wgmma.wait_group 0
    assert kinds(ck) == [("async.pending-read", REFILL, MMA)]
    assert {int(r["prev_warp"]) for r in ck.records[: int(ck.header["stored"][0])]} == {
        abi.AGENT_WGMMA}


@CHUNKS
def test_overwrite_after_wait_group_0_is_clean(ck):
    _mma_stage(ck)
    ck.wgmma_wait(0, 0, site=WAIT)
    ck.sync(ALL)
    fill(ck, A_OFF, site=REFILL)
    fill(ck, B_OFF, warps=ALL, site=REFILL)  # other warpgroup: ordered by the barrier
    ck.sync(ALL)
    ck.wgmma(0, DA, DB, SS, site=MMA)
    assert kinds(ck) == []


@CHUNKS
def test_wait_group_1_leaves_the_newest_group_in_flight(ck):
    _mma_stage(ck)  # group 0 reads A
    fill(ck, C_OFF)
    ck.sync(ALL)
    ck.wgmma(0, DC, DB, SS, site=MMA + 1)  # group 1 reads C (and B)
    ck.wgmma_commit(0)
    ck.wgmma_wait(0, 1)
    fill(ck, A_OFF, site=REFILL)  # group 0 retired: fine
    assert kinds(ck) == []
    fill(ck, C_OFF, site=REFILL + 1)  # group 1 may still read C
    assert kinds(ck) == [("async.pending-read", REFILL + 1, MMA + 1)]


@CHUNKS
def test_uncommitted_mma_is_not_retired_by_wait(ck):
    fill(ck, A_OFF)
    fill(ck, B_OFF)
    ck.sync(ALL)
    ck.wgmma(0, DA, DB, SS, site=MMA)
    ck.wgmma_wait(0, 0)  # no commit_group before it
    fill(ck, A_OFF, site=REFILL)
    assert kinds(ck) == [("async.pending-read", REFILL, MMA)]


@CHUNKS
def test_other_warpgroup_sees_the_retirement_only_through_a_barrier(ck):
    _mma_stage(ck)
    ck.wgmma_wait(0, 0)
    fill(ck, A_OFF, warps=[4], site=REFILL)  # producer warp, no barrier after the wait
    assert kinds(ck) == [("async.pending-read", REFILL, MMA)]


def test_producer_ordered_by_an_mbarrier_after_the_wait(ck):
    mb = 0x3000
    ck.mbar(0, mb, abi.MB_INIT, 1, site=20)
    _mma_stage(ck)
    ck.wgmma_wait(0, 0)
    ck.mbar(0, mb, abi.MB_ARRIVE, 1, site=21)  # consumer_release by warp 0 only
    ck.mbar_wait(4, mb, parity=0)
    fill(ck, A_OFF, warps=[4], site=REFILL)
    assert kinds(ck) == []


def test_producer_released_before_the_wait_is_pending_read(ck):
    mb = 0x3000
    ck.mbar(0, mb, abi.MB_INIT, 1, site=20)
    _mma_stage(ck)
    ck.mbar(0, mb, abi.MB_ARRIVE, 1, site=21)  # released right after commit_group
    ck.wgmma_wait(0, 0)
    ck.mbar_wait(4, mb, parity=0)
    fill(ck, A_OFF, warps=[4], site=REFILL)
    assert kinds(ck) == [("async.pending-read", REFILL, MMA)]


@CHUNKS
def test_two_warpgroups_reading_one_operand_both_must_retire(ck):
    fill(ck, A_OFF)
    fill(ck, B_OFF)
    fill(ck, C_OFF, warps=range(4, 8))
    ck.sync(ALL)
    ck.wgmma(0, DA, DB, SS, site=MMA)
    ck.wgmma(1, DC, DB, SS, site=MMA + 1)  # warpgroup 1 reads the same B
    ck.wgmma_commit(0)
    ck.wgmma_commit(1)
    ck.wgmma_wait(1, 0)
    ck.sync(ALL)  # only warpgroup 1 waited
    fill(ck, B_OFF, warps=[4], site=REFILL)
    assert kinds(ck) == [("async.pending-read", REFILL, MMA)]


def test_generic_reads_of_operands_are_fine(ck):
    _mma_stage(ck)
    ck.read(2, A_OFF + 64, site=30)  # a warp reading what the wgmma reads: no conflict
    ck.read(6, B_OFF, site=31)
    assert kinds(ck) == []


# ---------------------------------------------------------------- async-proxy writers

@CHUNKS
def test_cp_async_operands_waited_for_need_no_fence(ck):
    for i, a in enumerate(range(A_OFF, A_OFF + TILE, 16)):
        ck.cp_async(i % 4, a, site=40)
    for i, a in enumerate(range(B_OFF, B_OFF + TILE, 16)):
        ck.cp_async(i % 4, a, site=40)
    for w in WG0:
        ck.commit(w)
        ck.wait_group(w, 0)
    ck.sync(ALL)
    ck.wgmma(0, DA, DB, SS, site=MMA)
    assert kinds(ck) == []


@CHUNKS
def test_cp_async_operands_not_waited_for(ck):
    for i, a in enumerate(range(A_OFF, A_OFF + TILE, 16)):
        ck.cp_async(i % 4, a, site=40)
    fill(ck, B_OFF)
    for w in WG0:
        ck.commit(w)
    ck.sync(ALL)
    ck.wgmma(0, DA, DB, SS, site=MMA)
    assert kinds(ck) == [("async.pending-write", MMA, 40)]


def test_bulk_copy_operands_after_the_phase_wait_are_clean(ck):
    mb = 0x3000
    ck.mbar(0, mb, abi.MB_INIT, 1, site=20)
    ck.sync(ALL)
    ck.mbar(4, mb, abi.MB_ARRIVE_EXPECT_TX, 2 * TILE, site=21)
    assert ck.bulk_load(4, A_OFF, TILE, mb, site=41) == 0
    assert ck.bulk_load(4, B_OFF, TILE, mb, site=42) == 0
    for w in WG0:
        ck.mbar_wait(w, mb, parity=0)
    ck.wgmma(0, DA, DB, SS, site=MMA)
    ck.wgmma_commit(0)
    assert kinds(ck) == []
    # the next refill by the copy engine without the consumer's wait: pending read
    ck.mbar(4, mb, abi.MB_ARRIVE_EXPECT_TX, TILE, site=21)
    assert ck.bulk_load(4, A_OFF, TILE, mb, site=43) == 0
    assert kinds(ck) == [("async.pending-read", 43, MMA)]


# ---------------------------------------------------------------- footprints on the checker

def test_swizzled_footprint_is_exactly_what_is_checked(ck):
    # 128B swizzle, K step 1 of a 64 x 64-half tile: write exactly the bytes it reads
    d = Descriptor(0x2000 + 32, 16, 1024, 0, 1)
    fill_granules(ck, granules(d, Operand(64)) | granules(Descriptor(B_OFF, 128, 256), Operand(64)))
    ck.wgmma(0, d.encode(), DB, SS, site=MMA)
    assert kinds(ck) == []
    # one granule of the footprint never written: found, at that granule
    fresh = Descriptor(0x2000 + 64, 16, 1024, 0, 1)
    missing = min(granules(fresh, Operand(64)))
    fill_granules(ck, granules(fresh, Operand(64)) - {missing})
    ck.wgmma(0, fresh.encode(), DB, SS, site=MMA + 1)
    assert kinds(ck) == [("uninit.read", MMA + 1, -1)]
    (r,) = [r for r in ck.records[: int(ck.header["stored"][0])] if int(r["site"]) == MMA + 1]
    assert int(r["offset_lo"]) <= 4 * missing < int(r["offset_hi"])


def test_both_operands_swizzled_the_tma_way(ck):
    # A and B K-major with the 128-byte swizzle (the probe's shortest path): exactly their
    # footprints are checked, and a finding in B names B
    da = Descriptor(0x2000 + 32, 16, 1024, 0, 1)  # K step 1 of a 64 x 64-half tile
    db = Descriptor(0x0000 + 64, 16, 1024, 0, 1)  # K step 2 of another
    ga, gb = granules(da, Operand(64)), granules(db, Operand(64))
    missing = max(gb)
    fill_granules(ck, (ga | gb) - {missing})
    ck.wgmma(0, da.encode(), db.encode(), SS, site=MMA)
    assert kinds(ck) == [("uninit.read", MMA, -1)]
    (r,) = ck.records[: int(ck.header["stored"][0])]
    assert int(r["barrier"]) == 1 and int(r["offset_lo"]) <= 4 * missing < int(r["offset_hi"])
    ck.wgmma_commit(0, site=COMMIT)
    ck.wgmma_wait(0, 0, site=WAIT)
    ck.sync(ALL)
    ck.write(0, 4 * missing, site=WRITE)
    for w in WG0:
        ck.proxy_fence(w)
    ck.sync(ALL)
    ck.wgmma(0, da.encode(), db.encode(), SS, site=MMA + 1)
    assert kinds(ck) == [("uninit.read", MMA, -1)]  # nothing new


@pytest.mark.parametrize("ck", ["shared-chunk", "device-chunk"], indirect=True)
def test_tma_swizzled_operands_in_chunk_granules(ck):
    # the 128-byte swizzle's shortest path with 16-byte granules: the operands written
    # chunk by chunk (v4 stores), one chunk of B missing -- found at that chunk
    da = Descriptor(0x2000 + 32, 16, 1024, 0, 1)
    db = Descriptor(0x0000 + 64, 16, 1024, 0, 1)
    chunks = {g // 4 for g in granules(da, Operand(64)) | granules(db, Operand(64))}
    missing = max(g // 4 for g in granules(db, Operand(64)))
    for i, q in enumerate(sorted(chunks - {missing})):
        ck.write(i % 4, 16 * q, size=16, site=WRITE)
    for w in WG0:
        ck.proxy_fence(w)
    ck.sync(ALL)
    ck.wgmma(0, da.encode(), db.encode(), SS, site=MMA)
    assert kinds(ck) == [("uninit.read", MMA, -1)]
    (r,) = ck.records[: int(ck.header["stored"][0])]
    assert int(r["barrier"]) == 1
    assert (int(r["offset_lo"]), int(r["offset_hi"])) == (16 * missing, 16 * missing + 16)


def test_a_base_offset_checks_whole_swizzle_rows(ck):
    # a non-zero base offset leaves each chunk's place in its 128-byte row unknown: the
    # probe reads the whole row (the general path; without an offset, 16-byte chunks)
    d = Descriptor(0x2000, 16, 1024, 1, 1)
    rows = granules(d, Operand(64))
    assert len(rows) > 64 * 32 // 4  # more than the 2 KiB a K step of 64 rows reads
    fill_granules(ck, rows | granules(Descriptor(B_OFF, 128, 256), Operand(64)))
    ck.wgmma(0, d.encode(), DB, SS, site=MMA)
    ck.wgmma_commit(0, site=COMMIT)
    ck.wgmma_wait(0, 0, site=WAIT)
    assert kinds(ck) == []
    ck.sync(ALL)
    ck.write(5, 4 * max(rows), site=WRITE + 1)  # no fence by warp 5, in a row's last bytes
    ck.sync(ALL)
    ck.wgmma(0, d.encode(), DB, SS, site=MMA + 1)
    assert kinds(ck) == [("proxy.missing-fence", MMA + 1, WRITE + 1)]


# ---------------------------------------------------------------- plain traces in wgmma modules

def test_plain_write_rules_hold_in_wgmma_modules(ck):
    ck.write(0, 0, site=1)
    ck.sync(ALL)
    ck.read(3, 0, site=2)
    ck.write(0, 0, site=3)  # warp 0 wrote last, warp 3 read since without a barrier
    ck.write(1, 8, site=4)
    ck.write(2, 8, site=5)
    ck.cp_async(0, 32, site=6)
    ck.cp_async(0, 32, site=6)  # the unit rewrites its own pending destination
    assert ck.kinds() == [("race.war", 3, 2), ("race.waw", 5, 4)]
