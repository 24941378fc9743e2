"""A read that did not wait for an async copy is `async.pending-write` at the read, naming
the copy, whichever of the two probes ran first (reports/cause.py); `uninit.read` stays for
bytes nothing writes. Driven through the host build of the checker, every representation
of its tables."""

from __future__ import annotations

import pytest

from instrument import abi
from instrument.sites import SiteTable
from tests.checker_host import HostChecker

pytestmark = pytest.mark.needs_host_compiler

MB = 512
INIT, COPY, EARLY, LATE, ELSEWHERE, ARRIVE = range(6)


def _sites(copy_event: str) -> SiteTable:
    t = SiteTable(ptx_name="k.ptx")
    for i, ev in enumerate(["mbarrier", copy_event, "access.read", "access.read",
                            "access.read", "mbarrier"]):
        t.add(kernel="k", event=ev, ptx_line=10 * (i + 1), ptx_text=f"site {i}")
    return t


@pytest.fixture(params=[(True, True), (False, True), (False, False)],
                ids=["smem-tables", "device-tables", "no-box-summary"])
def ck(request):
    vsh, box = request.param
    c = HostChecker(nwarps=4, smem_bytes=1024, vsh=vsh, box_summary=box)
    c.begin()
    return c


def _issue(ck: HostChecker, how: str) -> None:
    """Warp 0 issues a copy of bytes [0, 64) in the way `how` names."""
    if how == "cp.async":
        for off in range(0, 64, 16):
            ck.cp_async(0, off, 16, site=COPY)
        ck.commit(0)
        return
    ck.mbar(0, MB, abi.MB_ARRIVE_EXPECT_TX, 64, site=ARRIVE)
    if how == "bulk":
        assert ck.bulk_load(0, 0, 64, MB, site=COPY) == 0
    elif how == "st.async":
        for off in range(0, 64, 4):
            assert ck.bulk_load(0, off, 4, MB, site=COPY) == 0
    else:  # a TMA tensor load through a known map of a 64-byte box
        m = ck.tensor_map(bytes(range(128)), footprint=64)
        assert ck.tensor_load(0, 0, m, MB, site=COPY) == 0


EVENT = {"cp.async": "async.cp", "bulk": "async.bulk", "st.async": "async.bulk",
         "tensor": "async.tensor_load"}


def _found(ck: HostChecker, how: str) -> list[tuple[str, int, int | None]]:
    rep = ck.report(_sites(EVENT[how]))
    assert rep.unattributed == 0
    return sorted((f.kind, f.site.id, f.prev_site.id if f.prev_site else None)
                  for f in rep.findings)


@pytest.mark.parametrize("how", sorted(EVENT))
def test_a_read_probed_before_the_copy_it_did_not_wait_for_names_the_copy(ck, how):
    ck.mbar(0, MB, abi.MB_INIT, 1, site=INIT)
    ck.sync([0, 1, 2, 3])
    ck.read(1, 16, site=EARLY)  # warp 1 reads before warp 0's probe of the copy has run
    _issue(ck, how)
    ck.read(2, 32, site=LATE)  # and warp 2 after it: the other interleaving
    assert _found(ck, how) == [("async.pending-write", EARLY, COPY),
                               ("async.pending-write", LATE, COPY)]


@pytest.mark.parametrize("how", ["bulk", "cp.async"])
def test_bytes_the_copy_does_not_write_stay_uninitialised(ck, how):
    ck.mbar(0, MB, abi.MB_INIT, 1, site=INIT)
    ck.sync([0, 1, 2, 3])
    ck.read(1, 16, site=EARLY)
    ck.read(1, 128, site=ELSEWHERE)  # nothing ever writes [128, 132)
    _issue(ck, how)
    assert _found(ck, how) == [("async.pending-write", EARLY, COPY),
                               ("uninit.read", ELSEWHERE, None)]


def test_a_read_ordered_before_the_copy_is_an_uninitialised_read_only(ck):
    ck.mbar(0, MB, abi.MB_INIT, 1, site=INIT)
    ck.sync([0, 1, 2, 3])
    ck.read(1, 16, site=EARLY)  # reads garbage: nothing wrote it yet
    ck.sync([0, 1, 2, 3])  # ...but the copy is ordered after the read: no race with it
    _issue(ck, "bulk")
    assert _found(ck, "bulk") == [("uninit.read", EARLY, None)]


def test_a_ring_refilled_before_its_reader_released_the_slot_stays_race_war(ck):
    """The read waited for the copy that filled the slot; the next copy came too early."""
    ck.mbar(0, MB, abi.MB_INIT, 1, site=INIT)
    ck.sync([0, 1, 2, 3])
    _issue(ck, "bulk")
    assert ck.mbar_wait(1, MB, parity=0) == 0
    ck.read(1, 16, site=LATE)  # the slot's data, waited for
    _issue(ck, "bulk")  # the refill, with no wait for the reader to release the slot
    assert _found(ck, "bulk") == [("race.war", COPY, LATE)]


def test_overtaken_reads_beyond_the_stored_records_take_their_uninit_reads_along():
    """More overtaken reads than records a finding keeps: the uninit.read records of that
    read are all the same cause, stored or not."""
    ck = HostChecker(nwarps=4, smem_bytes=2048, capacity=4096)
    ck.begin()
    ck.mbar(0, MB, abi.MB_INIT, 1, site=INIT)
    ck.sync([0, 1, 2, 3])
    for w in (1, 2, 3):
        for g in range(40):  # 120 reads of bytes nothing wrote yet
            ck.read(w, 1024 + 4 * (40 * (w - 1) + g), site=EARLY)
    ck.mbar(0, MB, abi.MB_ARRIVE_EXPECT_TX, 480, site=ARRIVE)
    for g in range(120):  # st.async, a copy per element: a race.war each, 64 stored
        assert ck.bulk_load(0, 1024 + 4 * g, 4, MB, site=COPY) == 0
    rep = ck.report(_sites("async.bulk"))
    assert rep.unattributed == 0
    assert [(f.kind, f.site.id, f.prev_site.id) for f in rep.findings] == [
        ("async.pending-write", EARLY, COPY)]
    assert rep.findings[0].occurrences == 120 and rep.findings[0].not_stored > 0


def test_a_multicast_overtaking_a_read_names_the_issuer_as_the_earlier_access():
    """A peer's multicast (issued by rank 1) over a read of rank 0 that did not wait: the
    record's current access is the copy, from rank 1. Once the roles swap, the read is rank
    0's own and rank 1 the copy's (it was left as the read's rank: "a peer CTA's access")."""
    from reports import cause
    from reports.describe import variant
    from reports.finding import Finding, encode_key
    from reports.violation import Violation

    t = _sites("async.bulk")

    def rec(kind, site, prev, warp, prev_warp, cur_rank):
        return Violation(kind=kind, site=t.sites[site], prev_site=t.sites[prev] if prev
                         is not None else None, warp=warp, prev_warp=prev_warp, lanes=0,
                         cta=(0, 0, 0), cluster_rank=0, offset_lo=0, offset_hi=64,
                         barrier=MB, phase=0, count=64, clock=0, cur_rank=cur_rank)

    war = rec("race.war", COPY, EARLY, 0, 1, cur_rank=1)
    uninit = rec("uninit.read", EARLY, None, 1, None, cur_rank=None)
    counts = {encode_key("race.war", COPY, EARLY): 1, encode_key("uninit.read", EARLY, None): 1}
    out, _, _ = cause.reattribute([war, uninit], counts, t)
    (v,) = out
    assert (v.kind, v.site.id, v.prev_site.id, v.warp, v.prev_warp) == (
        "async.pending-write", EARLY, COPY, 1, 0)
    assert (v.cur_rank, v.prev_rank) == (None, 1)
    f = Finding(kind=v.kind, site=v.site, prev_site=v.prev_site, occurrences=1, records=[v])
    assert variant(f) == "peer"
