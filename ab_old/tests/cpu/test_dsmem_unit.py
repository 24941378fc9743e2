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
APPLY = 1016  # (bytes no test reads or writes else)


@pytest.fixture
def ck():
    """A peer's loads and stores need the device-memory tables (they hold its epochs)."""
    c = HostChecker(nwarps=2, smem_bytes=1024, multicast=True, vsh=False)
    c.begin()
    return c


@pytest.fixture(params=[False, True], ids=["device-tables", "smem-tables"])
def ck_mb(request):
    """For a peer's mbarrier operations alone, either placement (a module whose peers reach
    it only by those and copies keeps its granule tables in shared memory)."""
    c = HostChecker(nwarps=2, smem_bytes=1024, multicast=True, vsh=request.param)
    assert c.vsh is request.param
    c.begin()
    return c


def _cluster_sync(ck: HostChecker) -> None:
    for w in (0, 1):
        ck.cluster_arrive(w)
    for w in (0, 1):
        ck.cluster_wait(w)


def _apply(ck: HostChecker, warp: int) -> None:
    """A probe that applies every post pending: a write of bytes nothing else touches (a
    read applies only those that may write its bytes: checker/multicast.h)."""
    ck.write(warp, APPLY, site=MINE)


def _records(ck: HostChecker) -> list[tuple[str, int, int, int, int, int]]:
    """(kind, site, prev_site, warp, prev_rank, cur_rank) of every stored record but those of
    the probe that only applies the posts (MINE)."""
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
    _apply(ck, 1)
    assert _records(ck) == [("race.waw", PEER, INIT, 1, 0, 3)]
    (f,) = [f for f in ck.report().findings if f.kind == "race.waw"]
    assert f.records[0].cur_rank == 2
    what = describe.what_happened(f)
    assert "warp 1 of CTA rank 2 wrote them again" in what, what


@pytest.mark.parametrize("read_at,applied", [(512, False), (4, True)],
                         ids=["other-bytes", "its-bytes"])
def test_a_read_applies_a_pending_peer_store_only_where_it_may_reach_the_reads_bytes(
        ck, read_at, applied):
    """The peer's store over bytes 0-7 (unordered with warp 0's write there: race.waw when
    applied) is pending when warp 1 reads: a read of other bytes leaves it to a later probe
    (its verdict cannot depend on it), a read of its bytes applies it first."""
    ck.write(0, 0, site=INIT)
    ck.write(0, 512, site=INIT)
    ck.sync((0, 1))
    ck.peer_access(0, 8, abi.DSMEM_WRITE, site=PEER, rank=2, warp=1, waits=0)
    ck.read(1, read_at, site=LATE)
    waw = ("race.waw", PEER, INIT, 1, 0, 3)
    assert (waw in _records(ck)) is applied
    _apply(ck, 1)  # (any write applies it)
    assert waw in _records(ck)
    if not applied:
        assert _records(ck) == [waw]


def test_a_read_leaves_posts_that_write_none_of_its_bytes_pending_and_applies_the_rest_in_order(ck):
    """A peer's copy into bytes 0-63, then a peer's read of bytes 128-131: a read of bytes
    256-259 and a read of bytes 128-131 (another read: no conflict) leave both posts where
    they are; a read of the copy's bytes applies both, the copy first (the phase it lands in
    is not waited for: async.pending-write)."""
    bar = 768
    ck.mbar(0, bar, abi.MB_INIT, 1, site=INIT)
    ck.mbar(0, bar, abi.MB_ARRIVE_EXPECT_TX, 64, site=INIT)
    head, tail = (int(w) for w in ck.mailbox_words()[:2])
    assert head == tail
    ck.peer_copy(0, 64, bar, site=PEER, rank=1, warp=2)
    ck.peer_access(128, 4, abi.DSMEM_READ, site=PEER + 1, rank=1, waits=0)
    ck.read(1, 256, site=LATE)
    ck.read(1, 128, site=LATE)
    assert [int(w) for w in ck.mailbox_words()[:2]] == [head + 2, tail]
    ck.read(1, 0, site=EARLY)
    assert [int(w) for w in ck.mailbox_words()[:2]] == [head + 2, head + 2]
    assert ("async.pending-write", EARLY, PEER, 1, 2, 0) in _records(ck)


@pytest.mark.parametrize("nbytes,applied", [(64, False), (0, True)],
                         ids=["bytes-known", "bytes-not-known"])
def test_a_read_applies_a_pending_peer_copy_of_bytes_not_known(ck, nbytes, applied):
    """A peer's copy over warp 0's unordered write (race.waw when applied), pending when
    warp 1 reads other bytes: left pending where its bytes are known, applied first where
    they are not (0: a tensor map the runtime does not know)."""
    bar = 768
    ck.mbar(0, bar, abi.MB_INIT, 1, site=INIT)
    ck.write(0, 0, 64, site=INIT)
    ck.mbar(0, bar, abi.MB_ARRIVE_EXPECT_TX, 64, site=INIT)
    ck.sync((0, 1))
    ck.peer_copy(0, nbytes, bar, site=PEER, rank=1, warp=2)
    ck.read(1, 512, site=LATE)
    assert any(r[:3] == ("race.waw", PEER, INIT) for r in _records(ck)) is applied


def test_a_peer_read_sees_what_the_owner_released_before_its_barrier(ck):
    ck.write(0, 0, site=INIT)
    _cluster_sync(ck)
    ck.write(1, 4, site=LATE)  # after the barrier: not released to the peer
    ck.peer_access(0, 8, abi.DSMEM_READ, site=PEER, rank=1, waits=1)
    _apply(ck, 0)
    assert _records(ck) == [("race.raw", PEER, LATE, 0, 0, 2)]


@pytest.mark.parametrize("fence", [True, False])
def test_a_relaxed_arrival_releases_to_a_peer_only_after_a_cluster_fence(ck, fence):
    # fence.acq_rel.cluster; barrier.cluster.arrive.relaxed; barrier.cluster.wait: the
    # owner's write before the fence is released to the peer; without the fence nothing is.
    ck.write(0, 0, site=INIT)
    if fence:
        ck.cluster_fence(0, site=MINE + 1)
    for w in (0, 1):
        ck.cluster_arrive(w, relaxed=True)
    for w in (0, 1):
        ck.cluster_wait(w)
    ck.peer_access(0, 4, abi.DSMEM_READ, site=PEER, rank=1, waits=1)
    _apply(ck, 0)
    assert _records(ck) == ([] if fence else [("race.raw", PEER, INIT, 0, 0, 2)])


def test_a_peer_read_of_bytes_nothing_wrote_is_uninit(ck):
    ck.peer_access(64, 4, abi.DSMEM_READ, site=PEER, rank=1, waits=1)
    _apply(ck, 0)
    assert _records(ck)[0][:3] == ("uninit.read", PEER, -1)
    (f,) = [f for f in ck.report().findings if f.kind == "uninit.read" and
            f.records[0].cur_rank is not None]
    assert "nothing in the cluster wrote" in describe.what_happened(f)


def test_a_peers_writes_are_ordered_with_its_own_later_reads(ck):
    ck.peer_access(0, 4, abi.DSMEM_WRITE, site=PEER, rank=1, waits=0)
    ck.peer_access(0, 4, abi.DSMEM_READ, site=PEER + 10, rank=1, waits=0)
    ck.peer_access(0, 4, abi.DSMEM_ATOMIC, site=PEER + 11, rank=1, waits=0)
    _apply(ck, 0)
    assert _records(ck) == []


# ------------------------------------------------------------- a peer's mbarrier
# mbarrier.arrive / expect_tx / complete_tx on this CTA's mbarrier by a peer CTA, posted and
# applied here (checker/dsmem.h, docs/model.md "A peer's mbarrier").
BAR, ARRIVE, WAIT, READ = 768, 20, 21, 22


def _init(ck: HostChecker, count: int = 1) -> None:
    ck.mbar(0, BAR, abi.MB_INIT, count, site=INIT)


@pytest.mark.parametrize("store_rank,store_after,wait_warp,sync,want", [
    # a store released by its CTA's arrive on this CTA's mbarrier is seen after the wait
    (1, False, 1, False, []),
    # ...not without the wait
    (1, False, None, False, [("race.raw", READ, PEER, 1, 2, 0)]),
    # a store after the arrive is not covered by it
    (1, True, 1, False, [("race.raw", READ, PEER, 1, 2, 0)]),
    # a release of another rank does not cover it
    (2, False, 1, False, [("race.raw", READ, PEER, 1, 3, 0)]),
    # the release reaches another warp through a CTA barrier after the wait
    (1, False, 0, True, []),
], ids=["waited", "no-wait", "store-after-arrive", "other-rank", "through-cta-barrier"])
def test_a_peers_arrive_on_this_ctas_mbarrier_releases_its_stores(ck, store_rank, store_after,
                                                                 wait_warp, sync, want):
    """Rank 1's warp 2 arrives (its CTA's first release) on this CTA's mbarrier; a store of
    rank `store_rank` into this CTA before or after it; warp 1 reads the bytes."""
    _init(ck)
    store = dict(site=PEER, rank=store_rank, warp=2, releases=1 if store_after else 0)
    if not store_after:
        ck.peer_access(0, 8, abi.DSMEM_WRITE, **store)
    ck.peer_mbar(BAR, abi.MB_ARRIVE, site=ARRIVE, rank=1, warp=2, release=1)
    if store_after:
        ck.peer_access(0, 8, abi.DSMEM_WRITE, **store)
    if wait_warp is not None:
        assert ck.mbar_wait(wait_warp, BAR, 0, site=WAIT) == 0
    if sync:
        ck.sync((0, 1))
    ck.read(1, 0, site=READ)
    assert _records(ck) == want


def test_a_peers_release_first_in_a_phase_is_kept_by_a_later_local_arrive(ck):
    """The peer's arrive is the phase's first release (into its REMOTE column); this CTA's
    warp 0 arrives after it: that arrive is joined into the slot, not stored over it, so
    the waiter still sees the peer's store."""
    _init(ck, count=2)
    ck.peer_access(0, 8, abi.DSMEM_WRITE, site=PEER, rank=1, warp=2)
    ck.peer_mbar(BAR, abi.MB_ARRIVE, site=ARRIVE, rank=1, warp=2, release=1)
    _apply(ck, 0)
    ck.mbar(0, BAR, abi.MB_ARRIVE, 1, site=ARRIVE + 1)
    assert ck.mbar_wait(1, BAR, 0, site=WAIT) == 0
    ck.read(1, 0, site=READ)
    assert [r for r in _records(ck) if r[0] != "uninit.read"] == []


def test_a_peers_expect_tx_and_arrive_count_on_this_ctas_phase(ck_mb):
    """arrive.expect_tx by a peer: the phase waits for the bytes too; more arrivals than
    the phase expects are an underflow at the peer's site, naming its rank."""
    _init(ck_mb)
    ck_mb.peer_mbar(BAR, abi.MB_ARRIVE_EXPECT_TX, arg=64, site=ARRIVE, rank=1, release=1)
    _apply(ck_mb, 1)
    assert ck_mb.mbar_wait(1, BAR, 0, ok=False, site=WAIT) == 0
    ck_mb.peer_mbar(BAR, abi.MB_COMPLETE_TX, arg=64, site=ARRIVE + 1, rank=1)
    _apply(ck_mb, 1)
    ck_mb.peer_mbar(BAR, abi.MB_ARRIVE, site=ARRIVE + 2, rank=3, lanes=2, release=1)
    _apply(ck_mb, 1)
    assert [r[:2] + r[5:] for r in _records(ck_mb) if r[0] != "uninit.read"] == [
        ("mbarrier.underflow", ARRIVE + 2, 4)]


def test_a_peers_complete_tx_may_lead_its_arrive_expect_tx(ck_mb):
    _init(ck_mb)
    ck_mb.peer_mbar(BAR, abi.MB_COMPLETE_TX, arg=64, site=ARRIVE + 1, rank=1)
    _apply(ck_mb, 1)
    ck_mb.peer_mbar(BAR, abi.MB_ARRIVE_EXPECT_TX, arg=64, site=ARRIVE, rank=1, release=1)
    _apply(ck_mb, 1)
    assert [r for r in _records(ck_mb) if r[0] != "uninit.read"] == []


def test_a_peers_arrive_on_an_mbarrier_never_initialised_is_reported(ck_mb):
    ck_mb.peer_mbar(BAR, abi.MB_ARRIVE, site=ARRIVE, rank=1, release=1)
    _apply(ck_mb, 1)
    assert [r[:2] + r[5:] for r in _records(ck_mb)] == [("mbarrier.uninit", ARRIVE, 2)]


@pytest.mark.parametrize("summary", [True, False])
def test_a_copy_over_a_peers_unordered_store_is_waw_with_or_without_box_summaries(summary):
    # A peer's epoch is not in the block's summary: the copy must walk the block (the
    # stores-only path would overwrite the peer's write without a word).
    ck = HostChecker(nwarps=2, smem_bytes=1024, multicast=True, box_summary=summary,
                     vsh=False)
    ck.begin()
    full = 512
    ck.mbar(0, full, abi.MB_INIT, 1, site=INIT)
    ck.peer_access(64, 16, abi.DSMEM_WRITE, site=PEER, rank=1, warp=2, waits=0)
    _apply(ck, 1)
    ck.mbar(0, full, abi.MB_ARRIVE_EXPECT_TX, 128, site=EARLY)
    ck.bulk_load(0, 0, 128, full, site=LATE)
    assert [k[:3] for k in _records(ck)] == [("race.waw", LATE, PEER)]


@pytest.mark.parametrize("acquire,want", [(True, []), (False, [("race.war", PEER, EARLY)])])
def test_a_peer_store_after_acquiring_the_readers_release_is_ordered(ck, acquire, want):
    # Warp 1 reads, then arrives on the peer's mbarrier (a release to the peer); the peer's
    # warp waits on it and stores into the bytes: ordered when it acquired that release.
    ck.write(0, 0, 8, site=INIT)
    _cluster_sync(ck)
    ck.read(1, 0, site=EARLY)
    n = ck.remote_release(1)
    ck.read(1, 4, site=LATE)  # after the release: not covered by it
    ck.peer_access(0, 4, abi.DSMEM_WRITE, site=PEER, rank=1, warp=2, waits=1,
                   acquired=n if acquire else 0)
    ck.write(0, 512, site=MINE)  # (applies the post)
    ck.peer_access(4, 4, abi.DSMEM_WRITE, site=MINE + 1, rank=1, warp=2, waits=1, acquired=n)
    ck.write(0, 516, site=MINE)
    assert [k[:3] for k in _records(ck)] == want + [("race.war", MINE + 1, LATE)]


@pytest.mark.parametrize("closing_sync", [True, False])
def test_a_cta_that_exits_before_a_cluster_barrier_orders_a_peers_store_is_early_exit(
        ck, closing_sync):
    _cluster_sync(ck)
    ck.peer_access(0, 4, abi.DSMEM_WRITE, site=PEER, rank=1, warp=2, waits=1)
    ck.write(0, 512, site=MINE)  # (applies the post)
    if closing_sync:
        _cluster_sync(ck)
    ck.exit(0, site=LATE)
    ck.exit(1, site=LATE)
    want = [] if closing_sync else [("cluster.early-exit", LATE, PEER, 1, 2, 0)]
    assert _records(ck) == want
    if not closing_sync:
        (f,) = ck.report().findings
        what = describe.what_happened(f)
        assert "CTA rank 1" in what and "exited" in what, what


def _ck(bulk_stores: bool) -> HostChecker:
    """A module with or without bulk stores (without: only a peer's read flags the
    granule's write epoch for the next write to look at)."""
    c = HostChecker(nwarps=2, smem_bytes=1024, multicast=True, async_proxy=bulk_stores,
                    vsh=False)
    c.begin()
    return c


@pytest.mark.parametrize("bulk_stores", [True, False])
@pytest.mark.parametrize("ordered", [True, False])
def test_the_owners_write_over_bytes_a_peer_read_needs_the_peers_release(ordered, bulk_stores):
    # A peer reads after the first cluster barrier; the owner overwrites the bytes after the
    # next one (which releases the read) or before it (race.war naming the peer's read).
    ck = _ck(bulk_stores)
    ck.write(0, 0, site=INIT)
    _cluster_sync(ck)
    ck.peer_access(0, 4, abi.DSMEM_READ, site=PEER, rank=1, warp=2, waits=1)
    ck.write(1, 512, site=MINE)  # (applies the post)
    if ordered:
        _cluster_sync(ck)
    ck.write(1, 0, site=LATE)
    ck.write(1, 0, site=LATE)  # (the same warp again: its own epoch, no second finding)
    assert _records(ck) == ([] if ordered else [("race.war", LATE, PEER, 1, 2, 0)])
    if not ordered:
        (f,) = ck.report().findings
        what = describe.what_happened(f)
        assert "CTA rank 1 read" in what, what


@pytest.mark.parametrize("bulk_stores", [True, False])
def test_a_copy_over_bytes_a_peer_read_is_judged_against_the_read(bulk_stores):
    ck = _ck(bulk_stores)
    full = 768
    ck.mbar(0, full, abi.MB_INIT, 1, site=INIT)
    ck.write(0, 0, 64, site=INIT)
    _cluster_sync(ck)
    ck.peer_access(16, 4, abi.DSMEM_READ, site=PEER, rank=3, warp=1, waits=1)
    ck.write(1, 512, site=MINE)  # (applies the post)
    ck.mbar(0, full, abi.MB_ARRIVE_EXPECT_TX, 64, site=EARLY)
    ck.bulk_load(0, 0, 64, full, site=LATE)
    assert [k[:5] for k in _records(ck)] == [("race.war", LATE, PEER, 0, 4)]


@pytest.mark.parametrize("barriers,read_after,waits,race", [
    (3, 1, 1, True), (3, 1, 2, False), (3, 2, 2, True), (3, 2, 3, False),
    (6, 5, 5, True), (6, 5, 6, False), (6, 4, 5, False)])
def test_a_peer_store_sees_what_the_cluster_barriers_it_waited_on_released(
        ck, barriers, read_after, waits, race):
    """Warp 1 reads after its `read_after`-th of `barriers` cluster barriers; the peer's
    store, made after it waited on `waits` of them, sees the read only when one of those
    came after it (a warp's last four arrivals are kept)."""
    ck.write(1, 0, site=INIT)
    for k in range(barriers + 1):
        if k == read_after:
            ck.read(1, 0, site=EARLY)
        if k < barriers:
            _cluster_sync(ck)
    ck.peer_access(0, 4, abi.DSMEM_WRITE, site=PEER, rank=1, warp=3, waits=waits)
    _apply(ck, 0)
    want = [("race.war", PEER, EARLY, 3, 0, 2)] if race else []
    assert _records(ck) == want
