"""Granule tables in shared memory (FLAG_VC_SMEM, docs/model.md): each trace runs with
them and with the tables in device memory (the fallback); the findings must be the same.
Also: a coalesced probe of an unrolled loop's accesses judges what the accesses one by one
would, and the clock bytes stay exact across many releases."""

from __future__ import annotations

import random

import pytest

from instrument import abi

pytestmark = pytest.mark.needs_host_compiler

NWARPS = 4
ALL = range(NWARPS)
FULL, EMPTY, SPARE = 896, 904, 912  # mbarriers, in a block of their own
BOX = 256  # two blocks


def _checker(vsh: bool, wgmma: bool = False, async_proxy: bool = True, bar0: bool = False):
    from tests.checker_host import HostChecker

    c = HostChecker(nwarps=NWARPS, smem_bytes=1024, vsh=vsh, wgmma=wgmma, async_proxy=async_proxy,
                    box_summary=False, bar0_rows=bar0)
    assert c.begin() == 0
    return c


def _both(trace, wgmma: bool = False, async_proxy: bool = True):
    """Run the trace both ways, and in shared memory with barrier 0's rows (FLAG_BAR0_ROWS:
    the traces sync every warp on barrier 0 and on nothing else); the findings must agree.
    The shared-memory one is returned."""
    rows = _checker(False, wgmma, async_proxy)  # one at a time: the library holds one state
    trace(rows)
    bar0 = _checker(True, wgmma, async_proxy, bar0=True)
    trace(bar0)
    assert bar0.kinds() == rows.kinds()
    smem = _checker(True, wgmma, async_proxy)
    trace(smem)
    assert smem.kinds() == rows.kinds()
    return smem


def _ring(c, trips: int, wait_empty: bool = True, wait_full: bool = True,
          bars: tuple[int, int] = (FULL, EMPTY), box: int = BOX, before_copy=None):
    full, empty = bars
    c.mbar(0, full, abi.MB_INIT, 1, site=10)
    c.mbar(0, empty, abi.MB_INIT, 2, site=10)
    c.sync(ALL)
    for trip in range(trips):
        if trip and wait_empty:
            c.mbar_wait(0, empty, parity=(trip - 1) & 1, site=3)
        if before_copy:
            before_copy(trip)
        c.mbar(0, full, abi.MB_ARRIVE_EXPECT_TX, box, site=4)
        assert c.bulk_load(0, 0, box, full, site=1) == 0
        for w in (1, 2):
            if wait_full:
                c.mbar_wait(w, full, parity=trip & 1, site=5)
            for o in range(0, box, 16):
                c.read(w, o, 16, site=2)
            c.mbar(w, empty, abi.MB_ARRIVE, 1, site=6)


def test_clean_ring():
    assert _both(lambda c: _ring(c, 6)).kinds() == []


# mbarrier entries are hashed by offset into MBARRIERS (32) entries: these two take the
# last entry and the first, so the entries in use wrap past the end of the table, and the
# clock joins must still visit both copy engines' columns
WRAPPING = (512 + 256, 31 * 8 + 512)  # (full, empty): the copies bind the first entry


@pytest.mark.parametrize("racy", [False, True])
def test_mbarrier_entries_that_wrap_past_the_table_end(racy):
    assert {(WRAPPING[0] >> 3) % abi.MBARRIERS, (WRAPPING[1] >> 3) % abi.MBARRIERS} == {31, 0}
    c = _both(lambda c: _ring(c, 6, wait_full=not racy, bars=WRAPPING))
    assert {k for k, _, _ in c.kinds()} == ({"async.pending-write"} if racy else set())


def test_a_ring_in_another_slot():
    """The site tables of slot 1 start 16-byte aligned (the host build checks vector
    stores): a racy ring there finds what it finds in slot 0."""
    from tests.checker_host import HostChecker

    c = HostChecker(nwarps=NWARPS, smem_bytes=1200, nslots=3, box_summary=False)
    assert c.begin((1, 0, 0)) == 1
    _ring(c, 3, wait_empty=False)
    assert {k for k, _, _ in c.kinds()} == {"race.war"}


@pytest.mark.parametrize("async_proxy", [False, True])  # 4 readers (one summary load) or 8
@pytest.mark.parametrize("racy", [None, "write", "read"])
def test_a_box_of_many_blocks(racy, async_proxy):
    """An 8 KiB box (64 blocks: the copy takes them sixteen and eight at a time): clean
    trips stay clean; a warp's write or read of one granule deep in the box, unordered
    with the next copy, is found."""
    from tests.checker_host import HostChecker

    box, bars = 8192, (16384 - 64, 16384 - 56)

    def warp3(c):
        def before_copy(trip):
            if trip != 2 or racy is None:
                return
            c.mbar_wait(3, bars[0], parity=1)  # after the second copy; the third is not after it
            if racy == "write":
                c.write(3, 37 * 128 + 8, 4, site=7)
            else:
                c.read(3, 45 * 128 + 4, 4, site=7)
        return before_copy

    for vsh in (False, True):
        c = HostChecker(nwarps=NWARPS, smem_bytes=16384, vsh=vsh, box_summary=False,
                        async_proxy=async_proxy)
        assert c.begin() == 0
        _ring(c, 4, bars=bars, box=box, before_copy=warp3(c))
        want = {None: [], "write": [("race.war", 7, 2), ("race.waw", 1, 7)],  # (and the reads)
                "read": [("race.war", 1, 7)]}[racy]
        assert c.kinds() == want, (vsh, c.kinds())


def test_refill_without_the_empty_wait_is_war():
    c = _both(lambda c: _ring(c, 2, wait_empty=False))
    assert {k for k, _, _ in c.kinds()} == {"race.war"}


def test_read_before_the_full_wait_is_pending_write():
    c = _both(lambda c: _ring(c, 1, wait_full=False))
    assert {k for k, _, _ in c.kinds()} == {"async.pending-write"}


def test_a_read_elsewhere_in_the_block_is_no_war():
    """The block's summary says warp 1 read it unordered; the bytes say not this granule."""
    def trace(c):
        c.write(0, 0, 16, site=1)
        c.sync(ALL)
        c.read(1, 0, 4, site=2)
        c.write(0, 8, 4, site=3)  # same block, another granule: no conflict
        c.write(0, 0, 4, site=4)  # the granule warp 1 read: race.war
    assert _both(trace).kinds() == [("race.war", 4, 2)]


@pytest.mark.parametrize("async_proxy", [False, True])  # 4 readers (one summary load) or 8
@pytest.mark.parametrize("racy", [False, True])
def test_bytes_a_copy_left_stale_are_no_reads(racy, async_proxy):
    """A copy of a whole block empties only the readers' summaries; a reader's next read in
    the block empties its old bytes first, so a write to the granule it read before the
    copy is no WAR -- and a write to the one it read after is. The writer learns of the
    copy through the full barrier, whose release the producer made before it waited for
    the reader's release: only the copy orders that first read before the write."""
    def trace(c):
        c.mbar(0, FULL, abi.MB_INIT, 1, site=10)
        c.mbar(0, EMPTY, abi.MB_INIT, 1, site=10)
        c.write(0, 0, 128, site=1)
        c.sync(ALL)
        c.read(1, 0, 4, site=2)  # before the copy
        c.mbar(1, EMPTY, abi.MB_ARRIVE, 1, site=3)
        c.mbar(0, FULL, abi.MB_ARRIVE_EXPECT_TX, 128, site=4)
        c.mbar_wait(0, EMPTY, parity=0, site=3)
        assert c.bulk_load(0, 0, 128, FULL, site=5) == 0
        for w in (1, 2):
            c.mbar_wait(w, FULL, parity=0, site=6)
        c.read(1, 64, 4, site=7)  # after it: the block's summary is raised again
        c.write(2, 64 if racy else 0, 4, site=8)
    c = _both(trace, async_proxy=async_proxy)
    assert c.kinds() == ([("race.war", 8, 7)] if racy else [])


def test_a_copy_over_a_live_mbarrier_is_data_access():
    def trace(c):
        c.mbar(0, FULL, abi.MB_INIT, 1, site=10)
        c.mbar(0, FULL, abi.MB_ARRIVE_EXPECT_TX, 128, site=4)
        c.bulk_load(0, 896, 128, FULL, site=2)
    assert "mbarrier.data-access" in {k for k, _, _ in _both(trace).kinds()}


@pytest.mark.parametrize("mode", [abi.MODE_READ, abi.MODE_WRITE])
def test_a_coalesced_probe_judges_like_its_accesses(mode):
    """An unrolled column loop (one load per row, 64 bytes apart) in one probe."""
    def setup(c):
        for o in range(0, 512, 16):
            c.write(0, o, 16, site=1)
        c.sync(ALL)
        c.read(2, 4 + 64 * 3, 4, site=2)  # row 3 of the column, unordered to warp 1

    def one_by_one(c):
        setup(c)
        for r in range(8):
            c.access(1, 4 + 64 * r, 4, mode, site=3)

    def coalesced(c):
        setup(c)
        c.access_n(1, 4, 4, mode, count=8, stride=64, site=3)

    a, b = _checker(True), None
    one_by_one(a)
    want = a.kinds()
    b = _checker(True)
    coalesced(b)
    assert b.kinds() == want == ([] if mode == abi.MODE_READ else [("race.war", 3, 2)])
    if want:  # the record names the access of the coalesced probe that raced
        rec = b.records[0]
        assert (int(rec["offset_lo"]), int(rec["offset_hi"])) == (4 + 64 * 3, 8 + 64 * 3)


def test_a_coalesced_read_before_any_write_is_uninit():
    c = _checker(True)
    c.access_n(1, 0, 4, abi.MODE_READ, count=4, stride=128, site=5)
    assert c.kinds() == [("uninit.read", 5, -1)]
    assert (int(c.records[0]["offset_lo"]), int(c.records[0]["offset_hi"])) == (0, 4)


@pytest.mark.parametrize("ordered", [False, True])
def test_clock_bytes_stay_exact_over_many_releases(ordered):
    """A read 300 of its warp's clock ticks old (the byte wraps at 255) is still judged by
    the clock it was made at: unordered -> race.war, acquired -> clean."""
    def trace(c):
        c.mbar(0, SPARE, abi.MB_INIT, 1000, site=10)
        for o in range(0, 128, 16):
            c.write(0, o, 16, site=1)
        c.sync(ALL)
        c.read(1, 0, 4, site=2)
        for _ in range(300):  # each arrive is a release: warp 1's clock moves on
            c.mbar(1, SPARE, abi.MB_ARRIVE, 1, site=6)
        if ordered:
            c.sync(ALL)
        c.read(1, 64, 4, site=7)  # a newer read elsewhere in the block: summary unordered
        c.write(0, 0, 4, site=3)
    kinds = _both(trace).kinds()
    assert kinds == ([] if ordered else [("race.war", 3, 2)])


def _random_trace(seed: int, strided: bool):
    """Reads, writes, atomics, cp.async, bulk copies (and their mbarrier waits), CTA
    barriers and (with `strided`) coalesced column reads and writes and runs of 16-byte
    chunks by four warps."""
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
        if strided and r < 0.15:
            ops.append(("column", w, rng.randrange(0, 16) * 4, rng.choice((0, 1)), len(ops)))
        elif strided and r < 0.25:  # 16-byte chunks (ldmatrix rows, cp.async 16) a probe
            stride = rng.choice((16, 80, 128))
            ops.append(("chunks", w, rng.randrange(0, 4) * 16, rng.choice((0, 1, 3)),
                        rng.randrange(1, 4), stride, len(ops)))
        elif r < 0.35:
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
            elif op[0] == "chunks":
                c.access_n(op[1], op[2], 16, (abi.MODE_READ, abi.MODE_WRITE, 0,
                                              abi.MODE_ASYNC_WRITE)[op[3]],
                           count=op[4], stride=op[5], site=op[6] % 60)
            elif op[0] == "column":  # rows of 64 bytes: the rows checker takes them one by one
                c.access_n(op[1], op[2], 4, (abi.MODE_READ, abi.MODE_WRITE)[op[3]], count=5,
                           stride=64, site=op[4] % 60)
            else:
                getattr(c, op[0])(op[1], op[2], op[3], site=op[4] % 60)
    return trace


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("async_proxy", [True, False])
def test_random_traces_agree(seed, async_proxy):
    _both(_random_trace(seed, strided=False), async_proxy=async_proxy)


@pytest.mark.parametrize("seed", range(40))
def test_random_traces_with_coalesced_probes_agree(seed):
    """The device-memory checker takes a coalesced probe's accesses one by one and names
    each one's finding; the shared-memory one names the first per lane: the same sites
    have findings, and every finding it names is one of those."""
    trace = _random_trace(seed, strided=True)
    rows = _checker(False)
    trace(rows)
    smem = _checker(True)
    trace(smem)
    assert set(smem.kinds()) <= set(rows.kinds())
    assert {s for _, s, _ in smem.kinds()} == {s for _, s, _ in rows.kinds()}


@pytest.mark.parametrize("early", [False, True])
def test_a_module_without_generic_reads_keeps_bytes_for_its_units_only(early):
    """TMA + wgmma kernels read shared memory only through their wgmma units: no byte per
    warp (abi.vsh_readers). A refill before wgmma.wait_group is still async.pending-read."""
    from instrument.wgmma_desc import Descriptor, MmaShape
    from tests.checker_host import HostChecker

    assert abi.vsh_readers(4, False, False, True) == 1
    info = MmaShape(64, 64, 16, "f16", "f16", a_smem=True).info
    da, db = Descriptor(0x400, 128, 256).encode(), Descriptor(0xC00, 128, 256).encode()

    def refill(c, trip):
        c.mbar(0, 0x100, abi.MB_ARRIVE_EXPECT_TX, 4096, site=4)
        assert c.bulk_load(0, 0x400, 4096, 0x100, site=1) == 0

    def trace(c):
        c.mbar(0, 0x100, abi.MB_INIT, 1, site=10)
        c.sync(ALL)
        refill(c, 0)
        for trip in range(3):
            for w in ALL:
                c.mbar_wait(w, 0x100, parity=trip & 1, site=5)
            c.wgmma(0, da, db, info, site=2)
            c.wgmma_commit(0)
            if early:  # the next stage's copy before the wgmmas are waited for (seed 004)
                refill(c, trip + 1)
            c.wgmma_wait(0, 0)
            c.sync(ALL)
            if not early:
                refill(c, trip + 1)

    got = []
    for kw in ({"vsh": False}, {"vsh": True, "warp_reads": False}):
        c = HostChecker(nwarps=NWARPS, smem_bytes=8192, wgmma=True, async_proxy=False,
                        box_summary=False, **kw)
        assert c.begin() == 0
        trace(c)
        got.append(c.kinds())
    assert got[0] == got[1]
    assert {k for k, _, _ in got[1]} == ({"async.pending-read"} if early else set())


@pytest.mark.parametrize("vsh", [False, True])
def test_a_slots_next_cta_finds_its_mbarrier_past_an_earlier_ctas_entry(vsh):
    """CTA 1 leaves an entry (key FULL) in the slot's mbarrier table; CTA 2's mbarrier at
    another offset with the same hash goes to the next entry. CTA 2's later probes must
    find it there (the shared-memory keys hold CTA 2's entries only): a clean ring."""
    from tests.checker_host import HostChecker

    c = HostChecker(nwarps=NWARPS, smem_bytes=1024, vsh=vsh, box_summary=False)
    assert c.begin() == 0
    c.mbar(0, FULL, abi.MB_INIT, 1, site=10)
    for w in ALL:
        c.exit(w)
    assert c.begin((1, 0, 0)) == 0  # the same slot, a new generation
    other = FULL + 8 * abi.MBARRIERS  # same hash as FULL, another mbarrier
    assert (other >> 3) % abi.MBARRIERS == (FULL >> 3) % abi.MBARRIERS
    _ring(c, 3, bars=(other, EMPTY))
    assert c.kinds() == []
