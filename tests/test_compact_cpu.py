"""Compact blocks (docs/model.md): each trace runs with the block table and with the
granule tables alone; the findings must be the same. The tests also say when a block had
to be split out to the granule tables, and that a copy of a whole block compacts it again.
"""

from __future__ import annotations

import random
import shutil

import pytest

from instrument import abi

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="needs a host C++ compiler")

NWARPS = 4
ALL = range(NWARPS)
FULL, EMPTY = 896, 904  # mbarriers, in a block of their own
BOX = 256  # two blocks


def _checker(compact: bool, wgmma: bool = False, async_proxy: bool = True):
    from tests.checker_host import HostChecker

    c = HostChecker(nwarps=NWARPS, smem_bytes=1024, compact=compact, wgmma=wgmma,
                    async_proxy=async_proxy)
    assert c.begin() == 0
    return c


def _both(trace, wgmma: bool = False, async_proxy: bool = True):
    """Run the trace both ways; the findings must agree. The compact checker is returned."""
    plain = _checker(False, wgmma, async_proxy)  # one at a time: the library holds one state
    trace(plain)
    compact = _checker(True, wgmma, async_proxy)
    trace(compact)
    assert compact.kinds() == plain.kinds()
    return compact


def _split(c) -> int:
    return int(c.header["split"][0])


def _ring(c, trips: int, wait_empty: bool = True, wait_full: bool = True):
    c.mbar(0, FULL, abi.MB_INIT, 1, site=10)
    c.mbar(0, EMPTY, abi.MB_INIT, 2, site=10)
    c.sync(ALL)
    for trip in range(trips):
        if trip and wait_empty:
            c.mbar_wait(0, EMPTY, parity=(trip - 1) & 1, site=3)
        c.mbar(0, FULL, abi.MB_ARRIVE_EXPECT_TX, BOX, site=4)
        assert c.bulk_load(0, 0, BOX, FULL, site=1) == 0
        for w in (1, 2):
            if wait_full:
                c.mbar_wait(w, FULL, parity=trip & 1, site=5)
            for o in range(0, BOX, 16):
                c.read(w, o, 16, site=2)
            c.mbar(w, EMPTY, abi.MB_ARRIVE, 1, site=6)


def test_clean_ring_stays_compact():
    c = _both(lambda c: _ring(c, 4))
    assert c.kinds() == []
    assert _split(c) == 1  # the mbarriers' block only


def test_refill_without_the_empty_wait_is_war():
    c = _both(lambda c: _ring(c, 2, wait_empty=False))
    assert {k for k, _, _ in c.kinds()} == {"race.war"}
    assert _split(c) == 1


def test_read_before_the_full_wait_is_pending_write():
    c = _both(lambda c: _ring(c, 1, wait_full=False))
    assert {k for k, _, _ in c.kinds()} == {"async.pending-write"}


def test_more_readers_than_entries_split_the_block():
    def trace(c):
        for o in range(0, 48, 16):
            c.write(0, o, 16, site=1)
        c.sync(ALL)
        for s in range(abi.CB_READERS + 1):  # one entry per (warp, site)
            c.read(1 + s % 3, 4 * s, 4, site=20 + s)
        c.write(0, 0, 16, site=30)  # unordered after the reads: race.war, the first one
    c = _both(trace)
    assert c.kinds() == [("race.war", 30, 20)]
    assert _split(c) == 1


def test_more_writers_than_entries_split_the_block():
    def trace(c):
        for w in range(NWARPS):  # four writers, four entries
            c.write(w, 16 * w, 16, site=1 + w)
        c.sync(ALL)
        c.cp_async(0, 64, 16, site=7)  # a fifth: split
        c.read(1, 64, 4, site=8)  # before the copy is waited for
    c = _both(trace)
    assert [k for k, _, _ in c.kinds()] == ["async.pending-write"]
    assert _split(c) == 1


def test_an_atomic_splits_the_block():
    def trace(c):
        c.atomic(0, 0, 4, site=1)
        c.atomic(1, 0, 4, site=2)
        c.read(2, 0, 4, site=3)
    c = _both(trace)
    assert [k for k, _, _ in c.kinds()][-1] == "race.raw"
    assert _split(c) == 1


def test_a_whole_block_copy_compacts_a_split_block():
    def trace(c):
        c.mbar(0, FULL, abi.MB_INIT, 1, site=10)
        c.atomic(0, 0, 4, site=1)  # split
        c.sync(ALL)
        c.mbar(0, FULL, abi.MB_ARRIVE_EXPECT_TX, 128, site=4)
        assert c.bulk_load(0, 0, 128, FULL, site=2) == 0  # walks, then compact again
        c.mbar_wait(1, FULL, parity=0, site=5)
        c.read(1, 0, 16, site=3)
        c.mbar_wait(2, FULL, parity=0, site=5)
        c.atomic(2, 0, 4, site=6)  # unordered after the read: splits again, race.war
    c = _both(trace, async_proxy=False)  # (bulk stores' reads keep blocks split)
    assert [k for k, _, _ in c.kinds()] == ["uninit.read", "race.war"]
    assert _split(c) == 3  # the mbarrier's block, the atomic, the atomic after the copy
    assert int(c.header["walked"][0]) == 32


def test_a_copy_over_a_live_mbarrier_is_data_access():
    def trace(c):
        c.mbar(0, FULL, abi.MB_INIT, 1, site=10)
        c.mbar(0, FULL, abi.MB_ARRIVE_EXPECT_TX, 128, site=4)
        c.bulk_load(0, 896, 128, FULL, site=2)
    c = _both(trace)
    assert "mbarrier.data-access" in {k for k, _, _ in c.kinds()}


def _random_trace(seed: int):
    """Reads, writes, atomics, cp.async, bulk copies (and their mbarrier waits) and CTA
    barriers by four warps over two blocks and a half."""
    rng = random.Random(seed)
    ops = []
    for _ in range(60):
        if rng.random() < 0.12:  # a copy engine's write, or a wait for the latest one
            w = rng.randrange(NWARPS)
            ops.append(("copy", w, rng.randrange(0, 16) * 16, rng.choice((16, 64, 128)))
                       if rng.random() < 0.5 else ("copy_wait", w))
            continue
        w, r = rng.randrange(NWARPS), rng.random()
        size = rng.choice((4, 8, 16))
        off = rng.randrange(0, 320 // size) * size
        if r < 0.35:
            ops.append(("read", w, off, size, len(ops)))
        elif r < 0.6:
            ops.append(("write", w, off, size, len(ops)))
        elif r < 0.7:
            ops.append(("cp_async", w, off // 16 * 16, 16, len(ops)))
        elif r < 0.78:
            ops.append(("commit", w))
        elif r < 0.85:
            ops.append(("wait_all", w))
        elif r < 0.92:
            ops.append(("sync",))
        else:
            ops.append(("atomic", w, off // 4 * 4, 4, len(ops)))

    def trace(c):
        c.mbar(0, FULL, abi.MB_INIT, 1, site=10)
        c.sync(ALL)
        copies = 0
        for op in ops:
            if op[0] == "copy":
                c.mbar(op[1], FULL, abi.MB_ARRIVE_EXPECT_TX, op[3], site=11)
                c.bulk_load(op[1], op[2], op[3], FULL, site=12)
                copies += 1
            elif op[0] == "copy_wait":
                if copies:
                    c.mbar_wait(op[1], FULL, parity=(copies - 1) & 1, site=13)
            elif op[0] == "sync":
                c.sync(ALL)
            elif op[0] in ("commit", "wait_all"):
                getattr(c, op[0])(op[1])
            else:
                getattr(c, op[0])(op[1], op[2], op[3], site=op[4] % 60)
    return trace


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("async_proxy", [True, False])
def test_random_traces_agree(seed, async_proxy):
    _both(_random_trace(seed), async_proxy=async_proxy)
