"""A peer CTA's loads and stores into this CTA's shared memory, as this CTA judges them when
it applies them from its mailbox (checker/dsmem.h): across CTAs only cluster barriers order
accesses. Driven through the host build of the checker (the posting side needs DSMEM:
tests/gpu/test_dsmem.py)."""

from __future__ import annotations

import pytest

from instrument import abi
from reports import describe
from tests.checker_host import HostChecker

pytestmark = pytest.mark.needs_host_compiler

INIT, PEER, EARLY, LATE, MINE = range(5)


@pytest.fixture
def ck():
    c = HostChecker(nwarps=2, smem_bytes=1024, multicast=True)
    c.begin()
    return c


def _cluster_sync(ck: HostChecker) -> None:
    for w in (0, 1):
        ck.cluster_arrive(w)
    for w in (0, 1):
        ck.cluster_wait(w)


def _records(ck: HostChecker) -> list[tuple[str, int, int, int, int, int]]:
    """(kind, site, prev_site, warp, prev_rank, cur_rank) of every stored record but those of
    the probe that only applies the posts (MINE: a read of bytes nothing wrote)."""
    n = int(min(ck.header["stored"][0], len(ck.records)))
    out = []
    for r in ck.records[:n]:
        if int(r["site"]) == MINE:
            continue
        prev = int(r["prev_site"])
        out.append((abi.KIND_BY_CODE[int(r["kind"])].id, int(r["site"]),
                    -1 if prev == abi.NO_SITE else prev, int(r["warp"]), int(r["prev_rank"]),
                    int(r["cur_rank"])))
    return out


def test_a_peer_store_after_a_cluster_barrier_is_read_after_the_next_one(ck):
    ck.write(0, 0, site=INIT)
    _cluster_sync(ck)
    ck.peer_access(0, 4, abi.DSMEM_WRITE, site=PEER, rank=1, warp=3, waits=1)
    ck.read(1, 0, site=EARLY)  # before the barrier that releases the peer's store
    assert _records(ck) == [("race.raw", EARLY, PEER, 1, 2, 0)]
    (f,) = ck.report().findings
    assert f.records[0].prev_warp == 3 and f.records[0].prev_rank == 1
    what = describe.what_happened(f)
    assert "Warp 3 of CTA rank 1 wrote" in what and "distributed shared memory" in what, what
    _cluster_sync(ck)
    ck.read(0, 0, site=LATE)
    assert len(_records(ck)) == 1


def test_a_peer_store_before_any_cluster_barrier_races_with_the_owners_write(ck):
    ck.write(0, 0, site=INIT)
    ck.peer_access(0, 8, abi.DSMEM_WRITE, site=PEER, rank=2, warp=1, waits=0)
    ck.read(1, 512, site=MINE)  # (any probe applies the post)
    assert _records(ck) == [("race.waw", PEER, INIT, 1, 0, 3)]
    (f,) = [f for f in ck.report().findings if f.kind == "race.waw"]
    assert f.records[0].cur_rank == 2
    what = describe.what_happened(f)
    assert "warp 1 of CTA rank 2 wrote them again" in what, what


def test_a_peer_read_sees_what_the_owner_released_before_its_barrier(ck):
    ck.write(0, 0, site=INIT)
    _cluster_sync(ck)
    ck.write(1, 4, site=LATE)  # after the barrier: not released to the peer
    ck.peer_access(0, 8, abi.DSMEM_READ, site=PEER, rank=1, waits=1)
    ck.read(0, 512, site=MINE)
    assert _records(ck) == [("race.raw", PEER, LATE, 0, 0, 2)]


def test_a_peer_read_of_bytes_nothing_wrote_is_uninit(ck):
    ck.peer_access(64, 4, abi.DSMEM_READ, site=PEER, rank=1, waits=1)
    ck.read(0, 512, site=MINE)
    assert _records(ck)[0][:3] == ("uninit.read", PEER, -1)
    (f,) = [f for f in ck.report().findings if f.kind == "uninit.read" and
            f.records[0].cur_rank is not None]
    assert "nothing in the cluster wrote" in describe.what_happened(f)


def test_a_peers_writes_are_ordered_with_its_own_later_reads(ck):
    ck.peer_access(0, 4, abi.DSMEM_WRITE, site=PEER, rank=1, waits=0)
    ck.peer_access(0, 4, abi.DSMEM_READ, site=PEER + 10, rank=1, waits=0)
    ck.peer_access(0, 4, abi.DSMEM_ATOMIC, site=PEER + 11, rank=1, waits=0)
    ck.read(0, 512, site=MINE)
    assert _records(ck) == []
