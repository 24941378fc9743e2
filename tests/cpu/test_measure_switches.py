"""The measurement tools: a checker's measurement-only switches (checker/measure.h) that
benchmarks/breakdown_async.py builds compile and change what they say they do; the
scripts' own arithmetic is what they print."""

from __future__ import annotations

from benchmarks import breakdown_async as ba
from consan import toolchain

SM90A = toolchain.Arch.parse("sm_90a")


def test_peer_copies_by_their_issuer_spin_the_issuer_and_drop_the_owners_write(monkeypatch):
    """CONSAN_PEER_BY_ISSUER=n: the issuing warp spends n cycles a post (a clock64 loop
    where the cluster build has none) and the owner's apply loses the issuer's view and
    the write (a shorter build). (The builds go to consan's cache, as the other checker
    builds of this suite do.)"""
    monkeypatch.setenv("CONSAN_CHECKER_DEFINES", "")
    plain = toolchain.checker_ptx(SM90A, vsh=True, mc=True)
    label = "peer copies by their issuer (2000 cycles)"
    assert ba.CONFIGS[label] == "CONSAN_PEER_BY_ISSUER=2000"
    monkeypatch.setenv("CONSAN_CHECKER_DEFINES", ba.CONFIGS[label])
    issuer = toolchain.checker_ptx(SM90A, vsh=True, mc=True)
    assert "%clock64" not in plain and "%clock64" in issuer
    assert len(issuer) < len(plain)


def test_the_event_trace_logs_each_scope_with_the_clock(monkeypatch):
    """CONSAN_EVTRACE: the build keeps the event buffers benchmarks/evtrace_async.py reads
    and reads the SM's clock (the plain build does neither)."""
    monkeypatch.setenv("CONSAN_CHECKER_DEFINES", "")
    plain = toolchain.checker_ptx(SM90A, vsh=True, mc=True)
    monkeypatch.setenv("CONSAN_CHECKER_DEFINES", "CONSAN_EVTRACE")
    traced = toolchain.checker_ptx(SM90A, vsh=True, mc=True)
    for word in ("cs_ev[", "cs_evn[", "%clock64"):
        assert word not in plain and word in traced, word


def test_the_event_trace_pairs_each_exit_with_its_entry():
    """A warp's events, clock << 16 | exit << 15 | kind, become nested scopes in order of
    entry; an entry whose exit was not kept (the buffer full) is dropped."""
    from benchmarks.evtrace_async import intervals

    def ev(t, leave, kind):
        return t << 16 | leave << 15 | kind

    words = [ev(100, 0, 20), ev(110, 0, 32), ev(150, 1, 32), ev(200, 1, 20),
             ev(300, 0, 5), ev(310, 0, 33), ev(400, 1, 5)]
    assert intervals(words) == [(20, 100, 200, 0), (32, 110, 150, 1), (5, 300, 400, 0)]


def test_the_step_view_gives_each_warp_its_calls_of_each_step(capsys):
    """evtrace_async.py --steps: a step opens with a warp's call of the given kind and holds
    that warp's top-level calls until its next one (nested scopes left out); a warp with
    fewer steps prints none past its last."""
    from benchmarks.breakdown_async import PROBES
    from benchmarks.evtrace_async import by_steps

    chain, tensor = PROBES.index("wgmma chain (a K step's rows)"), PROBES.index("tensor")
    iv = {(0, 0): [(chain, 1000, 2000, 0), (tensor, 2500, 5000, 0), (chain, 2600, 2700, 1),
                   (chain, 6000, 7000, 0), (tensor, 7500, 9000, 0)],
          (0, 1): [(chain, 1000, 2100, 0), (tensor, 2500, 2600, 0)]}
    by_steps(iv, 2, "wgmma chain (a K step's rows)", (0, 2))
    lines = capsys.readouterr().out.strip().splitlines()[1:]
    assert lines == [
        "step 0 warp 0: wgmma chain (a K step's rows) 1.0->2.0, tensor 2.5->5.0",
        "step 0 warp 1: wgmma chain (a K step's rows) 1.0->2.1, tensor 2.5->2.6",
        "step 1 warp 0: wgmma chain (a K step's rows) 6.0->7.0, tensor 7.5->9.0"]


def test_the_event_gap_table_is_in_microseconds():
    """benchmarks/event_gap.py: its event columns come in ms and print in us; the launch
    call's wall time is in us already."""
    from benchmarks.event_gap import table

    rows = [{"kernel": "k", "nat ev": 0.0165, "call us": 21.12, "con ev": 0.1466}]
    assert table(rows, 30).splitlines() == [
        "| kernel | nat ev | call us | con ev |", "|---|---|---|---|",
        "| k | 16.5 | 21.1 | 146.6 |", "(us; medians of 30 launches)"]


def test_reads_without_their_sites_or_fence_build_shorter(monkeypatch):
    """CONSAN_NULL_READ_SITES and CONSAN_NULL_READ_FENCE: the shared-memory tables' build
    loses the reads' site stores (global stores) or their fences (each a shorter build, and
    fewer of that instruction)."""
    monkeypatch.setenv("CONSAN_CHECKER_DEFINES", "")
    plain = toolchain.checker_ptx(SM90A, vsh=True)
    built = {}
    for label in ("no read sites", "no read fences"):
        monkeypatch.setenv("CONSAN_CHECKER_DEFINES", ba.CONFIGS[label])
        built[label] = toolchain.checker_ptx(SM90A, vsh=True)
        assert len(built[label]) < len(plain), label
    stores = "st.relaxed.cta.global.L1::no_allocate"
    assert built["no read sites"].count(stores) < plain.count(stores)
    assert built["no read fences"].count("membar.cta") < plain.count("membar.cta")


def test_inits_that_leave_their_slots_build_shorter(monkeypatch):
    """CONSAN_NULL_INIT_SLOTS: an mbarrier init's probe loses its lanes' 16-byte stores
    that empty the entry's clock slots (a shorter build, fewer vector stores)."""
    monkeypatch.setenv("CONSAN_CHECKER_DEFINES", "")
    plain = toolchain.checker_ptx(SM90A, vsh=True)
    assert ba.CONFIGS["no init slots"] == "CONSAN_NULL_INIT_SLOTS"
    monkeypatch.setenv("CONSAN_CHECKER_DEFINES", ba.CONFIGS["no init slots"])
    bare = toolchain.checker_ptx(SM90A, vsh=True)
    assert len(bare) < len(plain)
    assert bare.count("st.v4.u32") < plain.count("st.v4.u32")  # (generic: cs_vc_st4)


def test_arrives_without_releases_and_copies_without_readers_build_shorter(monkeypatch):
    """CONSAN_NULL_ARRIVE_RELEASE and CONSAN_NULL_COPY_READERS: the shared-memory tables'
    build loses an arrive's clock release into its phase's slot, or a box write's readers'
    pass (each a shorter build)."""
    monkeypatch.setenv("CONSAN_CHECKER_DEFINES", "")
    plain = toolchain.checker_ptx(SM90A, vsh=True)
    for label, define in (("no arrive releases", "CONSAN_NULL_ARRIVE_RELEASE"),
                          ("no copy readers", "CONSAN_NULL_COPY_READERS")):
        assert ba.CONFIGS[label] == define
        monkeypatch.setenv("CONSAN_CHECKER_DEFINES", define)
        assert len(toolchain.checker_ptx(SM90A, vsh=True)) < len(plain), label


def test_the_profile_counts_inits_apart():
    """The profile's probe kinds: an mbarrier init is its own row (checker.cu's scope 62),
    within the 63 scopes a rank's quarter of cs_prof holds."""
    assert ba.PROBES[62] == "mbar init"
    assert len(ba.PROBES) <= ba.PROF_WORDS // 4 - 1
