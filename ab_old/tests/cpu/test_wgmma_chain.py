"""A K step's four wgmmas in one call (abi.PROBE_WGMMA4), on the host build of the checker.

The chain call judges the tiles row by row where the four descriptors walk 128-byte
swizzled rows 32 bytes at a time, and falls back to the four calls otherwise or on any
finding. Every trace here runs twice, through the chain call and through four calls,
and must report the same findings (kind, site, earlier site); the host build's count of
chains done by rows says which path ran.
"""

from __future__ import annotations

import pytest

from instrument import abi
from instrument.wgmma_desc import Descriptor, MmaShape, Operand, granules

pytestmark = pytest.mark.needs_host_compiler

WG0 = range(4)
ALL = range(8)
A_OFF, B_OFF = 0x2000, 0x4000  # 64 rows of 128 bytes each: 8 KiB tiles
MB = 0x6000
TILE = 64 * 128
SS = MmaShape(64, 64, 16, "f16", "f16", a_smem=True).info
RS = MmaShape(64, 64, 16, "f16", "f16", a_smem=False).info
MMA, WRITE, REFILL, COMMIT = (10, 11, 12, 13), 1, 7, 8


def k_step(off: int, swizzle: int = 1) -> list[Descriptor]:
    """The four descriptors of a K step of 64 halves over a 64-row tile at off."""
    return [Descriptor(off + 32 * k, 16, 1024, 0, swizzle) for k in range(4)]


def checker(tables: str):
    from tests.checker_host import HostChecker

    c = HostChecker(nwarps=8, smem_bytes=0x8000, wgmma=True, vsh=tables.startswith("shared"),
                    granule_bytes=abi.CHUNK_GRANULE_BYTES if tables.endswith("chunk")
                    else abi.GRANULE_BYTES)
    assert c.begin() == 0
    return c


def issue(c, chain: bool, da: list[Descriptor], db: list[Descriptor], info: int = SS) -> None:
    """The chain's four mma_async, then its commit."""
    if chain:
        c.wgmma4(0, [d.encode() for d in da], [d.encode() for d in db], info, MMA)
    else:
        for d_a, d_b, s in zip(da, db, MMA, strict=True):
            c.wgmma(0, d_a.encode(), d_b.encode(), info, site=s)
    c.wgmma_commit(0, site=COMMIT)


def copy_tiles(c, nbytes: int = TILE, missing: int | None = None) -> None:
    """Warp 4 loads both tiles with bulk copies on MB (leaving the 16 bytes at `missing`
    unwritten), and warpgroup 0 waits for them."""
    c.mbar(4, MB, abi.MB_INIT, 1, site=20)
    c.sync(ALL)
    c.mbar(4, MB, abi.MB_ARRIVE_EXPECT_TX, 2 * nbytes - (16 if missing is not None else 0),
           site=21)
    for off, site in ((A_OFF, 41), (B_OFF, 42)):
        spans = [(off, nbytes)]
        if missing is not None and off <= missing < off + nbytes:
            spans = [(off, missing - off), (missing + 16, off + nbytes - missing - 16)]
        for a, n in spans:
            if n:
                assert c.bulk_load(4, a, n, MB, site=site) == 0
    for w in WG0:
        c.mbar_wait(w, MB, parity=0)


def write_tiles(c, fenced) -> None:
    """Warpgroup 0 writes both tiles with 16-byte stores, the warps `fenced` fence, and every
    warp passes a barrier."""
    for off in (A_OFF, B_OFF):
        for i, a in enumerate(range(off, off + TILE, 16)):
            c.write(i % 4, a, size=16, site=WRITE)
    for w in fenced:
        c.proxy_fence(w)
    c.sync(ALL)


def both(tables: str, trace) -> tuple[list, list, int]:
    """(findings through the chain call, through four calls, chains the rows path did)."""
    out = []
    for chain in (True, False):
        c = checker(tables)
        before = c.wgmma_rows_done()
        trace(c, chain)
        out.append((sorted(set(c.kinds())), c.wgmma_rows_done() - before))
    (got, done), (want, _) = out
    return got, want, done


TABLES = pytest.mark.parametrize("tables", ["shared", "shared-chunk", "device"])


@TABLES
def test_copied_tiles_then_refill_before_wait_group(tables):
    def trace(c, chain):
        copy_tiles(c)
        issue(c, chain, k_step(A_OFF), k_step(B_OFF))
        c.sync(ALL)
        for i, a in enumerate(range(A_OFF, A_OFF + 256, 16)):  # rows 0 and 1 refilled early
            c.write(i % 4, a, size=16, site=REFILL)

    got, want, done = both(tables, trace)
    # each 16-byte chunk names the wgmma that read it: all four have chunks in every row
    assert got == want == [("async.pending-read", REFILL, s) for s in MMA]
    # the rows path ran where the tables are in shared memory (4 warps' calls); never else
    assert done == (4 if tables.startswith("shared") else 0)


@TABLES
def test_each_chunk_keeps_the_site_of_the_wgmma_that_reads_it(tables):
    # row 9 of B rewritten before wait_group: its physical chunk 0 holds logical chunk
    # 0 ^ (9 & 7) = 1 (the first wgmma's), chunk 2 logical 3 (the second's), chunk 4 logical
    # 5 (the third's), chunk 6 logical 7 (the fourth's)
    row = B_OFF + (9 & 7) * 128 + (9 >> 3) * 1024
    for c_phys, k in ((0, 0), (2, 1), (4, 2), (6, 3)):
        def trace(c, chain, c_phys=c_phys):
            copy_tiles(c)
            issue(c, chain, k_step(A_OFF), k_step(B_OFF))
            c.sync(ALL)
            c.write(0, row + 16 * c_phys, size=16, site=REFILL)

        got, want, _ = both(tables, trace)
        assert got == want == [("async.pending-read", REFILL, MMA[k])]


@TABLES
def test_an_unwritten_chunk_is_found_at_its_wgmma(tables):
    # B's row 3, physical chunk 5 never written: logical chunk 5 ^ 3 = 6, the fourth wgmma
    missing = B_OFF + 3 * 128 + 5 * 16

    def trace(c, chain):
        copy_tiles(c, missing=missing)
        issue(c, chain, k_step(A_OFF), k_step(B_OFF))

    got, want, done = both(tables, trace)
    assert got == want == [("uninit.read", MMA[3], -1)]
    # the warp whose half-row it is makes the four calls; the other three finish by rows
    assert done == (3 if tables.startswith("shared") else 0)


@TABLES
def test_a_wait_missing_in_one_warp_is_found(tables):
    def trace(c, chain):
        c.mbar(4, MB, abi.MB_INIT, 1, site=20)
        c.sync(ALL)
        c.mbar(4, MB, abi.MB_ARRIVE_EXPECT_TX, 2 * TILE, site=21)
        assert c.bulk_load(4, A_OFF, TILE, MB, site=41) == 0
        assert c.bulk_load(4, B_OFF, TILE, MB, site=42) == 0
        for w in (0, 1, 3):  # warp 2 does not wait
            c.mbar_wait(w, MB, parity=0)
        issue(c, chain, k_step(A_OFF), k_step(B_OFF))

    got, want, done = both(tables, trace)
    assert got == want and {k for k, _, _ in got} == {"async.pending-write"}
    # warp 2 makes the four calls; the three that waited finish by rows
    assert done == (3 if tables.startswith("shared") else 0)


@TABLES
def test_generic_writes_without_a_proxy_fence(tables):
    def trace(c, chain):
        write_tiles(c, fenced=(0, 1))  # warps 2 and 3 never fence
        issue(c, chain, k_step(A_OFF), k_step(B_OFF))

    got, want, _ = both(tables, trace)
    assert got == want and {k for k, _, _ in got} == {"proxy.missing-fence"}


@TABLES
def test_generic_writes_fenced_and_ordered_are_clean(tables):
    def trace(c, chain):
        write_tiles(c, fenced=WG0)
        issue(c, chain, k_step(A_OFF), k_step(B_OFF))
        c.wgmma_wait(0, 0)
        c.sync(ALL)
        c.write(5, A_OFF, size=16, site=REFILL)  # after the wait and a barrier: fine

    got, want, done = both(tables, trace)
    assert got == want == []
    assert done == (4 if tables.startswith("shared") else 0)


@TABLES
def test_a_from_registers_reads_only_b(tables):
    def trace(c, chain):
        copy_tiles(c)
        issue(c, chain, k_step(A_OFF), k_step(B_OFF), info=RS)
        c.sync(ALL)
        c.write(0, A_OFF, size=16, site=REFILL)  # A is not read: no conflict
        c.write(1, B_OFF + 16, size=16, site=REFILL + 1)

    got, want, done = both(tables, trace)
    assert got == want == [("async.pending-read", REFILL + 1, MMA[0])]
    assert done == (4 if tables.startswith("shared") else 0)


@pytest.mark.parametrize("tables", ["shared", "shared-chunk"])
def test_other_shapes_take_the_four_calls(tables):
    # the 64-byte swizzle, and a K step whose descriptors do not walk the rows 32 bytes at a
    # time: the same findings, none by rows
    shapes = [(k_step(A_OFF, 2), k_step(B_OFF, 2)),
              ([Descriptor(A_OFF + 32 * (k % 2), 16, 1024, 0, 1) for k in range(4)], k_step(B_OFF))]
    for da, db in shapes:
        def trace(c, chain, da=da, db=db):
            copy_tiles(c)
            issue(c, chain, da, db)
            c.sync(ALL)
            c.write(0, A_OFF, size=16, site=REFILL)

        got, want, done = both(tables, trace)
        assert got == want and got and done == 0


def test_the_rows_are_the_four_footprints():
    # what the rows path takes for the chain's reads is exactly the union of its four
    # wgmmas' footprints (instrument/wgmma_desc.py's rule): every byte of the 64 rows
    union = set().union(*(granules(d, Operand(64)) for d in k_step(A_OFF)))
    assert union == set(range(A_OFF // 4, (A_OFF + TILE) // 4))
