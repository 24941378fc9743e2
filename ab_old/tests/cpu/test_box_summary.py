"""Box summaries (docs/model.md): with the tables in device memory, a copy over a block
whose every access is ordered before it stores its epochs instead of walking the readers.
Each trace runs with the summaries, without them (the walk alone) and with the granule
tables in shared memory (FLAG_VC_SMEM): the findings must be the same, and the tests say
when the stores-only path was taken."""

from __future__ import annotations

import numpy as np
import pytest

from instrument import abi

pytestmark = pytest.mark.needs_host_compiler

NWARPS = 4
BOX = 256  # bytes of the buffer every copy fills: two summary blocks for 4 warps
FULL, EMPTY = 512, 520  # mbarriers: the copy landed / the consumers are done with it
ALL = range(NWARPS)


def _checker(summary: bool, vsh: bool = False, nwarps: int = NWARPS):
    from tests.checker_host import HostChecker

    c = HostChecker(nwarps=nwarps, smem_bytes=1024, box_summary=summary, vsh=vsh)
    assert c.begin() == 0
    c.mbar(0, FULL, abi.MB_INIT, 1, site=10)
    c.mbar(0, EMPTY, abi.MB_INIT, 2, site=10)
    c.sync(range(nwarps))
    return c


def _both(trace, nwarps: int = NWARPS):
    """The trace's findings, which must not depend on the summaries; and the checker that
    kept them, to look at."""
    plain = _checker(False, nwarps=nwarps)  # one at a time: the library holds one state
    trace(plain)
    smem = _checker(False, vsh=True, nwarps=nwarps)
    trace(smem)
    summed = _checker(True, nwarps=nwarps)
    trace(summed)
    assert summed.kinds() == plain.kinds()
    assert smem.kinds() == plain.kinds()
    return summed


def _reads(c, warp, lo, hi, site):
    for o in range(lo, hi, 16):
        c.read(warp, o, 16, site=site)


def _writes(c, warp, lo, hi, site):
    for o in range(lo, hi, 16):
        c.write(warp, o, 16, site=site)


def _produce(c, trip, wait_empty=True):
    if trip and wait_empty:
        c.mbar_wait(0, EMPTY, parity=(trip - 1) & 1, site=3)
    c.mbar(0, FULL, abi.MB_ARRIVE_EXPECT_TX, BOX, site=4)
    assert c.bulk_load(0, 0, BOX, FULL, site=1) == 0


def _consume(c, trip, warp, lo=0, hi=BOX, release=True):
    c.mbar_wait(warp, FULL, parity=trip & 1, site=5)
    _reads(c, warp, lo, hi, 2)
    if release:
        c.mbar(warp, EMPTY, abi.MB_ARRIVE, 1, site=6)


def _walked(c) -> int:
    """Granules the copies walked one by one (the rest took the stores-only path)."""
    return int(c.header["walked"][0])


def _bsum_flags(c, off: int = 0) -> int:
    """Flags of the summary block holding smem byte `off`."""
    block = (off // abi.GRANULE_BYTES) >> abi.bsum_shift(NWARPS)
    return int(c.tables["bsum"].view(np.uint32)[block * abi.bsum_words(NWARPS) + abi.BS_FLAGS])


def test_block_size_keeps_the_summary_at_most_twice_its_block():
    for nw in (1, 3, 4, 8, 12, 32):
        sh = abi.bsum_shift(nw)
        assert 4 * abi.bsum_words(nw) <= 2 * (abi.GRANULE_BYTES << sh)
        assert sh == abi.BSUM_MIN_SHIFT or 4 * abi.bsum_words(nw) > abi.GRANULE_BYTES << sh
        assert abi.bsum_words(nw) % 4 == 0  # 16-byte aligned blocks: vector loads
    assert abi.bsum_shift(3) == abi.bsum_shift(4) == 5  # TMA kernels' few warps: 128-byte blocks
    assert abi.table_bytes(1, 256, 4)["bsum"] == 0  # only where copy engines write
    assert abi.table_bytes(1, 256, 4, box_summary=True, phase_mode=True)["bsum"] == 0


def test_clean_ring_takes_the_stores_only_path():
    def ring(c):
        for trip in range(3):
            _produce(c, trip)
            _consume(c, trip, 1, 0, BOX // 2)
            _consume(c, trip, 2, BOX // 2, BOX)

    c = _both(ring)
    assert c.kinds() == []
    assert _walked(c) == 0  # not one granule of the three copies


def test_refill_without_the_empty_wait_is_war_either_way():
    def ring(c):
        _produce(c, 0)
        _consume(c, 0, 1)
        _produce(c, 1, wait_empty=False)

    c = _both(ring)
    assert c.kinds() == [("race.war", 1, 2)]
    assert _walked(c) == BOX // abi.GRANULE_BYTES  # the refill's block: walked, to name the read


def test_reads_before_the_refill_are_superseded_by_it():
    # Warp 2's reads of the first half end before the refill; warp 1 rewrites that half
    # after the next full wait without any order with warp 2's old reads: no race.
    def ring(c):
        _produce(c, 0)
        _consume(c, 0, 1)
        _consume(c, 0, 2)
        _produce(c, 1)
        _consume(c, 1, 2, BOX // 2, BOX)
        c.mbar_wait(1, FULL, parity=1, site=5)
        _writes(c, 1, 0, BOX // 2, 7)

    assert _both(ring).kinds() == []


def test_issuer_reads_after_its_copy_are_not_superseded():
    # The producer reads the box before its refill (superseded) and after it (not): a
    # consumer rewriting the box after the full wait races only with the latter.
    def ring(c):
        _produce(c, 0)
        c.mbar_wait(0, FULL, parity=0, site=5)
        _reads(c, 0, 0, 64, 8)
        _produce(c, 1, wait_empty=False)  # its own reads: program order
        c.mbar_wait(1, FULL, parity=1, site=5)
        _writes(c, 1, 0, 16, 7)
        c.mbar_wait(0, FULL, parity=1, site=5)
        _reads(c, 0, 64, 128, 9)
        _writes(c, 1, 64, 80, 11)

    c = _both(ring)
    assert c.kinds() == [("race.war", 11, 9)]


def test_bulk_store_source_refilled_before_its_wait_is_pending_read_either_way():
    def trace(c, wait):
        _writes(c, 3, 0, BOX, 12)
        c.proxy_fence(3, site=13)
        c.bulk_store(3, 0, BOX, site=14)
        c.bulk_commit(3)
        if wait:
            c.bulk_wait(3, 0, site=15)
        c.sync(ALL)
        _produce(c, 0)

    assert _both(lambda c: trace(c, False)).kinds() == [("async.pending-read", 1, 14)]
    c = _both(lambda c: trace(c, True))
    assert c.kinds() == [] and _walked(c) == 0


@pytest.mark.parametrize("writer", [7, 8])
def test_the_last_reader_indices_of_a_nine_warp_cta_are_judged(writer):
    # Nine warps: 21 reader indices, more than the copy keeps in registers before (16); the
    # bulk-store units of warps 7 and 8 are readers 16 and 17.
    def trace(c, wait):
        _writes(c, writer, 0, BOX, 12)
        c.proxy_fence(writer, site=13)
        c.bulk_store(writer, 0, BOX, site=14)
        c.bulk_commit(writer)
        if wait:
            c.bulk_wait(writer, 0, site=15)
        c.sync(range(9))
        _produce(c, 0)

    assert _both(lambda c: trace(c, False), nwarps=9).kinds() == [("async.pending-read", 1, 14)]
    c = _both(lambda c: trace(c, True), nwarps=9)
    assert c.kinds() == [] and _walked(c) == 0


def test_more_writers_than_entries_falls_back_to_the_walk():
    def trace(c):
        for w in ALL:  # four writers of the first block...
            _writes(c, w, 16 * w, 16 * w + 16, 20 + w)
        c.cp_async(1, 64, 16, site=24)  # ...and a fifth: warp 1's copy unit
        c.commit(1)
        c.wait_all(1)
        c.sync(ALL)
        _produce(c, 0)
        _consume(c, 0, 1)

    c = _both(trace)
    assert c.kinds() == []
    block = abi.GRANULE_BYTES << abi.bsum_shift(NWARPS)
    assert _bsum_flags(c) & abi.BS_FLAG_OVERFLOW and not _bsum_flags(c, block)
    assert _walked(c) == block // abi.GRANULE_BYTES  # that block only


def test_copy_over_a_live_mbarrier_walks_and_reports_it():
    def trace(c):
        c.mbar(0, FULL, abi.MB_ARRIVE_EXPECT_TX, 64, site=4)
        c.bulk_load(0, EMPTY - 32, 64, FULL, site=1)  # its last 32 bytes hold EMPTY and more

    c = _both(trace)
    assert [k[:2] for k in c.kinds()] == [("mbarrier.data-access", 1)]
    assert _bsum_flags(c, EMPTY) & abi.BS_FLAG_MBAR and not _bsum_flags(c, 0)
