"""A peer CTA's multicast copy, as the receiving CTA applies it from its mailbox: its bytes
complete on this CTA's mbarrier, a read before the wait is async.pending-write naming the
copy and the CTA that issued it, bytes no copy reached stay uninit.read, and a phase that
never gets its bytes is a deadlock. Driven through the host build of the checker (the
posting side needs DSMEM: tests/gpu/test_multicast.py)."""

from __future__ import annotations

import itertools
import random

import pytest

from instrument import abi
from reports import describe
from tests.checker_host import HostChecker

pytestmark = pytest.mark.needs_host_compiler

MB = 512
INIT, ARRIVE, COPY, EARLY, LATE, FAR, WAIT = range(7)


@pytest.fixture(params=[False, True], ids=["device-tables", "smem-tables"])
def ck(request):
    c = HostChecker(nwarps=2, smem_bytes=1024, multicast=True, vsh=request.param)
    assert c.layout.flags & abi.FLAG_MULTICAST and c.vsh is request.param
    c.begin()
    assert c.mbar(0, MB, abi.MB_INIT, 1, site=INIT) == 0
    return c


def _records(ck: HostChecker) -> list[tuple[str, int, int, int]]:
    """(kind, site, prev_site, prev_rank) of every stored record."""
    n = int(min(ck.header["stored"][0], len(ck.records)))
    out = []
    for r in ck.records[:n]:
        prev = int(r["prev_site"])
        out.append((abi.KIND_BY_CODE[int(r["kind"])].id, int(r["site"]),
                    -1 if prev == abi.NO_SITE else prev, int(r["prev_rank"])))
    return out


def test_a_read_before_the_wait_names_the_copy_and_its_cta(ck):
    assert ck.mbar(0, MB, abi.MB_ARRIVE_EXPECT_TX, 64, site=ARRIVE) == 0
    ck.peer_copy(0, 64, MB, site=COPY, rank=1)
    ck.read(1, 0, site=EARLY)
    assert _records(ck) == [("async.pending-write", EARLY, COPY, 2)]
    (f,) = ck.report().findings
    assert f.records[0].prev_rank == 1
    what, fix = describe.what_happened(f), describe.fix(f)
    assert "CTA rank 1 of the cluster issued the copy at PTX line 3" in what, what
    assert "accessed those bytes at PTX line 4" in what and "CTA rank 0" in what, what
    assert "never waited on its own mbarrier" in fix, fix


def test_the_wait_on_the_phase_the_bytes_complete_orders_them(ck):
    assert ck.mbar(0, MB, abi.MB_ARRIVE_EXPECT_TX, 64, site=ARRIVE) == 0
    ck.peer_copy(0, 32, MB, site=COPY, rank=1)
    ck.peer_copy(32, 32, MB, site=COPY, rank=3)  # two peers' halves complete the phase
    assert ck.mbar_wait(1, MB, parity=0, site=WAIT) == 0
    for off in range(0, 64, 4):
        ck.read(1, off, site=LATE)
    assert _records(ck) == []
    ck.read(1, 128, site=FAR)  # bytes no copy reached
    assert _records(ck) == [("uninit.read", FAR, -1, 0)]


def test_a_phase_the_peers_leave_short_is_a_deadlock(ck):
    assert ck.mbar(0, MB, abi.MB_ARRIVE_EXPECT_TX, 128, site=ARRIVE) == 0
    ck.peer_copy(0, 64, MB, site=COPY, rank=1)  # half the bytes the phase expects
    verdicts = [ck.mbar_wait(1, MB, parity=0, ok=False, site=WAIT) for _ in range(40)]
    assert verdicts[-1] == 2 and ("deadlock", WAIT, -1, 0) in _records(ck)


def test_a_copy_onto_an_mbarrier_this_cta_has_not_initialised(ck):
    ck.peer_copy(0, 64, MB + 64, site=COPY, rank=2)
    ck.read(0, 0, site=EARLY)  # (the probe that applies it)
    assert _records(ck)[0] == ("mbarrier.uninit", COPY, -1, 3)


def test_posts_are_applied_in_order_across_the_ring(ck):
    """More posts than the mailbox holds at once, each applied before the next comes (the
    reader frees the bytes with an arrive on the issuer's mbarrier, which the issuer
    acquired before its next copy)."""
    freed = 0
    for k in range(abi.MAILBOX_ENTRIES + 5):
        assert ck.mbar(0, MB, abi.MB_ARRIVE_EXPECT_TX, 16, site=ARRIVE) == 0
        ck.peer_copy(0, 16, MB, site=COPY, rank=1, acquired=freed)
        assert ck.mbar_wait(1, MB, parity=k & 1, site=WAIT) == 0
        ck.read(1, 0, site=LATE)
        freed = ck.remote_release(1)
    assert _records(ck) == []


def test_an_arrive_on_a_peers_mbarrier_leaves_this_ctas_posts_to_its_next_probe(ck):
    """The arrive posts to the peer and numbers the warp's release: nothing it does reads
    what this CTA's pending posts change, so it does not wait for them (the clustered
    ring's consumer frees each stage this way). The next probe that reads applies them, in
    order. (The host build has one CTA: the arrive's own post lands in this mailbox.)"""
    assert ck.mbar(0, MB, abi.MB_ARRIVE_EXPECT_TX, 64, site=ARRIVE) == 0
    ck.peer_copy(0, 64, MB, site=COPY, rank=1)
    head, tail = (int(w) for w in ck.mailbox_words()[:2])
    assert head == tail + 1
    peer = 1 << 24  # (a .shared::cluster address of rank 1)
    assert ck.mbar(1, peer | MB, abi.MB_ARRIVE | abi.MB_CLUSTER, site=FAR) == 0
    assert [int(w) for w in ck.mailbox_words()[:2]] == [head + 1, tail]  # the copy still waits
    ck.read(1, 0, site=EARLY)  # applies both, the copy first
    assert [int(w) for w in ck.mailbox_words()[:2]] == [head + 1, head + 1]
    assert _records(ck) == [("async.pending-write", EARLY, COPY, 2)]


def test_a_first_failed_wait_leaves_this_ctas_posts_to_a_later_probe(ck):
    """A failed wait acquires nothing: the first of a warp's failures in a row judges the
    barrier and leaves the posts where they are (a consumer's spin on each stage of the
    clustered ring); its sampled failures and its success apply them, in order."""
    assert ck.mbar(0, MB, abi.MB_ARRIVE_EXPECT_TX, 64, site=ARRIVE) == 0
    ck.peer_copy(0, 64, MB, site=COPY, rank=1)
    head, tail = (int(w) for w in ck.mailbox_words()[:2])
    assert head == tail + 1
    assert ck.mbar(1, MB, abi.MB_WAIT_PARITY, abi.MB_WAIT_FIRST, site=WAIT) == 0
    assert [int(w) for w in ck.mailbox_words()[:2]] == [head, tail]  # the copy still waits
    assert ck.mbar(1, MB, abi.MB_WAIT_PARITY, 0, site=WAIT) == 0  # a sampled failure
    assert [int(w) for w in ck.mailbox_words()[:2]] == [head, head]
    ck.read(1, 0, site=EARLY)  # no wait succeeded: the copy is still pending for warp 1
    assert _records(ck) == [("async.pending-write", EARLY, COPY, 2)]


def test_a_first_failed_wait_on_a_barrier_nobody_initialised_is_judged(ck):
    """The first failure is still judged: a single poll of an mbarrier no init made is
    mbarrier.uninit, and the wait is skipped."""
    assert ck.mbar(1, MB + 8, abi.MB_WAIT_PARITY, abi.MB_WAIT_FIRST, site=WAIT) == 1
    assert [k for k, *_ in _records(ck)] == ["mbarrier.uninit"]


def _refill(ck, *, acquired: int = 0, waits: int = 0) -> list:
    """Warp 1 reads a copy's bytes; then the peer copies over them (after acquiring this
    CTA's release `acquired`, or `waits` cluster barriers): the records."""
    assert ck.mbar(0, MB, abi.MB_ARRIVE_EXPECT_TX, 64, site=ARRIVE) == 0
    ck.peer_copy(0, 64, MB, site=COPY, rank=1)
    assert ck.mbar_wait(1, MB, parity=0, site=WAIT) == 0
    ck.read(1, 16, site=LATE)
    if acquired < 0:
        acquired = ck.remote_release(1)
    assert ck.mbar(0, MB, abi.MB_ARRIVE_EXPECT_TX, 64, site=ARRIVE) == 0
    ck.peer_copy(0, 64, MB, site=FAR, rank=1, warp=3, acquired=acquired, waits=waits)
    ck.write(0, 768, site=EARLY)  # (applies it)
    return _records(ck)


def test_a_copy_over_bytes_this_cta_still_reads_is_war_naming_the_issuer(ck):
    assert _refill(ck) == [("race.war", FAR, LATE, 0)]
    (f,) = ck.report().findings
    assert (f.records[0].cur_rank, f.records[0].warp, f.records[0].prev_warp) == (1, 3, 1)


def test_a_copy_after_the_readers_release_is_clean(ck):
    assert _refill(ck, acquired=-1) == []


def test_a_release_made_after_the_one_acquired_covers_nothing(ck):
    first = ck.remote_release(1)  # before the read: does not cover it
    assert _refill(ck, acquired=first) == [("race.war", FAR, LATE, 0)]


def _after_releases(ck, *, made: int, read_after: int, acquired: int) -> list:
    """Warp 1 reads a copy's bytes after its `read_after`-th of `made` releases to the
    peer (0: before the first); then the peer, having acquired release `acquired` (1:
    the first), copies over them: the records. A warp keeps its last 8 releases."""
    assert ck.mbar(0, MB, abi.MB_ARRIVE_EXPECT_TX, 64, site=ARRIVE) == 0
    ck.peer_copy(0, 64, MB, site=COPY, rank=1)
    assert ck.mbar_wait(1, MB, parity=0, site=WAIT) == 0
    numbers = []
    for k in range(made + 1):
        if k == read_after:
            ck.read(1, 16, site=LATE)
        if k < made:
            numbers.append(ck.remote_release(1))
    assert ck.mbar(0, MB, abi.MB_ARRIVE_EXPECT_TX, 64, site=ARRIVE) == 0
    ck.peer_copy(0, 64, MB, site=FAR, rank=1, warp=3, acquired=numbers[acquired - 1])
    ck.write(0, 768, site=EARLY)  # (applies it)
    return _records(ck)


@pytest.mark.parametrize("made,read_after,acquired,race", [
    (5, 2, 2, True), (5, 2, 3, False), (5, 4, 5, False), (5, 5, 5, True),
    (12, 9, 9, True), (12, 9, 10, False), (12, 11, 12, False), (12, 12, 12, True),
    # a release older than the ring keeps covers what its oldest kept one (the 5th) does
    (12, 4, 1, False), (12, 5, 2, True)])
def test_the_release_a_peer_acquired_covers_what_preceded_it(ck, made, read_after, acquired,
                                                             race):
    want = [("race.war", FAR, LATE, 0)] if race else []
    assert _after_releases(ck, made=made, read_after=read_after, acquired=acquired) == want


def _random_ring(seed: int, nwarps: int, chunks: bool = False):
    """A peer fills two 256-byte stages of this CTA, each round arming the mbarrier and
    copying two halves (a block of granules each) after acquiring this CTA's latest release (or
    an older one, or none, and after a cluster barrier or not); this CTA's warps wait (or
    not), read and write the stages and release them to the peer at random: clean rounds
    and races of every kind a peer's copy makes. `chunks`: the warps' writes are whole
    16-byte chunks (a module that may take chunk granules), their reads 4 bytes."""
    rng = random.Random(seed)
    wstep, wsize = (16, 16) if chunks else (4, 4)
    ops = []
    for _ in range(50):
        r = rng.random()
        if r < 0.25:
            ops.append(("round", rng.randrange(2), rng.choice(("latest", "older", "none")),
                        rng.choice((0, 0, 1)), rng.randrange(4)))
        elif r < 0.45:
            ops.append(("wait", rng.randrange(nwarps)))
        elif r < 0.7:
            ops.append(("read", rng.randrange(nwarps), rng.randrange(128) * 4, len(ops)))
        elif r < 0.8:
            ops.append(("write", rng.randrange(nwarps), rng.randrange(512 // wstep) * wstep,
                        len(ops)))
        else:
            ops.append(("release", rng.randrange(nwarps)))

    def trace(c) -> None:
        releases: list[int] = []
        rounds = 0
        for op in ops:
            if op[0] == "round":
                _, stage, which, waits, warp = op
                acquired = {"latest": releases[-1] if releases else 0, "none": 0,
                            "older": releases[-2] if len(releases) > 1 else 0}[which]
                assert c.mbar(0, MB, abi.MB_ARRIVE_EXPECT_TX, 256, site=ARRIVE) == 0
                for half in (0, 128):
                    c.peer_copy(stage * 256 + half, 128, MB, site=COPY, rank=1, warp=warp,
                                waits=waits, acquired=acquired)
                rounds += 1
            elif op[0] == "wait":
                if rounds:
                    c.mbar_wait(op[1], MB, parity=(rounds - 1) & 1, site=WAIT)
            elif op[0] == "release":
                releases.append(c.remote_release(op[1]))
            elif op[0] == "write":
                c.write(op[1], op[2], wsize, site=LATE + op[3] % 40)
            else:
                c.read(op[1], op[2], site=LATE + op[3] % 40)
        c.write(0, 768, wsize, site=FAR)  # (applies what is left)
    return trace


# (eight warps reading, no bulk stores: eight readers, two 16-byte summaries a block)
@pytest.mark.parametrize("nwarps,bulk", [(2, True), (8, False)])
@pytest.mark.parametrize("seed", range(40))
def test_random_rings_judge_alike_in_either_table_placement(seed, nwarps, bulk):
    """The same trace with the granule tables in device memory and in shared memory: the
    same findings, in the same order."""
    found = []
    for vsh in (False, True):  # (one at a time: the library holds one state)
        c = HostChecker(nwarps=nwarps, smem_bytes=1024, multicast=True, vsh=vsh,
                        async_proxy=bulk)
        c.begin()
        assert c.mbar(0, MB, abi.MB_INIT, 1, site=INIT) == 0
        _random_ring(seed, nwarps)(c)
        found.append(c.kinds())
    assert found[0] == found[1]


@pytest.mark.parametrize("seed", range(24))
def test_random_rings_of_whole_chunks_judge_alike_in_either_granule(seed):
    """A ring whose warps write whole 16-byte chunks, judged with 4-byte granules and with
    chunk granules (abi.CHUNK_GRANULE_BYTES), the tables in shared memory and in device
    memory: the same findings, in the same order (a cluster module of whole chunks may take
    chunk granules: docs/model.md, *Chunk granules*)."""
    found = []
    for granule, vsh in itertools.product((abi.GRANULE_BYTES, abi.CHUNK_GRANULE_BYTES),
                                          (False, True)):
        c = HostChecker(nwarps=4, smem_bytes=1024, multicast=True, vsh=vsh,
                        granule_bytes=granule)
        c.begin()
        assert c.mbar(0, MB, abi.MB_INIT, 1, site=INIT) == 0
        _random_ring(seed, 4, chunks=True)(c)
        found.append(c.kinds())
    assert found[1:] == found[:1] * 3


@pytest.mark.parametrize("vsh", [False, True], ids=["device-tables", "smem-tables"])
def test_a_copy_into_a_peer_is_posted_with_the_release_its_warp_acquired(vsh):
    """A warp's copy whose destination and mbarrier are another CTA's (st.async into rank 1)
    is posted to that CTA's mailbox with its bytes, mbarrier, site, issuing warp, cluster
    barrier waits and the highest release of that CTA the warp has acquired (its clock's
    column for the rank). The host build has one CTA, so the post lands in its own mailbox,
    which this reads; with the granule tables in shared memory the warp's clock is there
    too, and the host build stops at a global-space access to it."""
    c = HostChecker(nwarps=2, smem_bytes=1024, multicast=True, vsh=vsh)
    c.begin()
    assert c.mbar(0, MB, abi.MB_INIT, 1, site=INIT) == 0
    c.peer_mbar(MB, abi.MB_ARRIVE, site=ARRIVE, rank=1, release=5)  # rank 1's release 5
    assert c.mbar_wait(1, MB, parity=0, site=WAIT) == 0  # ...acquired by warp 1
    head_at = c.mailbox_words()[0]
    peer = 1 << 24  # (a .shared::cluster address of rank 1)
    c.bulk_load(1, peer | 64, 16, peer | MB, site=COPY)
    words = c.mailbox_words()
    assert words[0] == head_at + 1
    slot = abi.MAILBOX_HEAD_WORDS + (head_at % abi.MAILBOX_ENTRIES) * abi.MAILBOX_POST_WORDS
    seq, dst, nbytes, mbar, site, frm, rel, acq = words[slot:slot + abi.MAILBOX_POST_WORDS]
    assert (seq, dst, nbytes, mbar, site) == (head_at + 1, 64, 16, MB, COPY)
    assert (frm & 0xFF, (frm >> 8) & 0xFF, rel, acq) == (0, 1, 0, 5)


