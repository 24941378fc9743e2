"""CPU tests of reports/: decoding, grouping, verdict, human text and JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from instrument import abi
from instrument.sites import SiteTable, SourceLoc
from reports import Finding, Report, Violation, decode_records, group
from reports.describe import compact_ints, cta_text
from reports.finding import encode_key, merge_ranges

SRC = """\
extern "C" __global__ void k(float *out) {
    __shared__ float smem[256];
    int t = threadIdx.x;
    smem[t] = t;
    float v = smem[(t + 32) % 256];
    out[t] = v;
    smem[t] = 2.0f * v;
}
"""
KIND = {k.id: k.code for k in abi.KINDS}
LAUNCH = {"grid": (4, 1, 1), "block": (256, 1, 1), "shared_mem": 0}


def make_sites() -> SiteTable:
    st = SiteTable(ptx_name="k.ptx", sources={"k.cu": SRC})
    st.add(kernel="k", event="access", ptx_line=30, ptx_text="st.shared.f32 [%r4], %f1;",
           size=4, loc=SourceLoc("k.cu", 4, 13))                       # 0: write, line 4
    st.add(kernel="k", event="access", ptx_line=35, ptx_text="ld.shared.f32 %f2, [%r7];",
           size=4, loc=SourceLoc("k.cu", 5, 15),
           inlined_at=(SourceLoc("main.cu", 40, 3, "outer"),))          # 1: read, line 5
    st.add(kernel="k", event="access", ptx_line=41, ptx_text="st.shared.f32 [%r9], %f3;",
           size=4)                                                      # 2: write, no loc
    st.add(kernel="k", event="access", ptx_line=44, ptx_text="st.shared.f32 [%r4], %f4;",
           size=4, loc=SourceLoc("k.cu", 7, 13))                       # 3: write, line 7
    return st


def rec(kind: str, site: int, prev: int = abi.NO_SITE, warp: int = 0,
        prev_warp: int = abi.NO_WARP, lo: int = 0, hi: int = 4, cta=(0, 0, 0),
        lanes: int = 0xFFFFFFFF, **extra) -> dict:
    return dict(kind=KIND[kind] if isinstance(kind, str) else kind, site=site, prev_site=prev,
                warp=warp, prev_warp=prev_warp, lanes=lanes, cta_x=cta[0], cta_y=cta[1],
                cta_z=cta[2], offset_lo=lo, offset_hi=hi, **extra)


def records(*rows: dict) -> np.ndarray:
    arr = np.zeros(len(rows), abi.record_dtype())
    for i, row in enumerate(rows):
        for name, value in row.items():
            arr[i][name] = value
    return arr


def keys(*entries: tuple[int, int]) -> np.ndarray:
    arr = np.zeros(abi.KEY_TABLE_ENTRIES, abi.key_dtype())
    for i, (key, count) in enumerate(entries):
        arr[i]["key"] = key
        arr[i]["count"] = count
    return arr


def header(**fields) -> np.void:
    h = np.zeros((), abi.log_header_dtype())[()]
    h["capacity"] = 64
    for name, value in fields.items():
        h[name] = value
    return h


def flat(text: str) -> str:
    """The report with line wrapping undone, so sentences can be matched whole."""
    return " ".join(text.split())


def raw_report(**kw) -> Report:
    """One read-after-write race: warp 1 wrote line 4, warps 2 and 3 read line 5 in 2 CTAs."""
    recs = records(
        rec("race.raw", 1, 0, warp=2, prev_warp=1, lo=0x100, hi=0x140),
        rec("race.raw", 1, 0, warp=3, prev_warp=1, lo=0x140, hi=0x180, cta=(1, 0, 0)),
    )
    st = make_sites()
    return Report.from_log(header(stored=2, occurrences=kw.pop("occurrences", 2)), recs,
                           kw.pop("keys", None), st, "k", LAUNCH)


# ---------------------------------------------------------------- decoding


def test_decode_maps_every_field_and_sentinels():
    st = make_sites()
    arr = records(
        rec("race.waw", 3, 0, warp=4, prev_warp=7, lo=8, hi=16, cta=(1, 2, 3), lanes=0xF0,
            cluster_rank=1, barrier=2, phase=5, count=9, clock=77),
        rec("uninit.read", 1, warp=0),
    )
    v, u = decode_records(arr, st)
    assert v == Violation(kind="race.waw", site=st[3], prev_site=st[0], warp=4, prev_warp=7,
                          lanes=0xF0, cta=(1, 2, 3), cluster_rank=1, offset_lo=8, offset_hi=16,
                          barrier=2, phase=5, count=9, clock=77)
    assert (v.line, v.prev_line) == (7, 4)
    assert u.prev_site is None and u.prev_warp is None and u.prev_line is None
    assert u.kind == "uninit.read" and u.line == 5


def test_decode_skips_unwritten_slots_and_keeps_unknown_site_visible():
    st = make_sites()
    arr = records(rec("race.raw", 99, 0, warp=1, prev_warp=0), rec(0, 0))
    (v,) = decode_records(arr, st)
    assert v.site is not None and v.site.id == 99 and "99" in v.site.ptx_text
    assert v.line is None


# ---------------------------------------------------------------- grouping


def test_group_merges_same_identity_and_separates_others():
    st = make_sites()
    vs = decode_records(records(
        rec("race.raw", 1, 0, warp=2, prev_warp=1, lo=0, hi=4),
        rec("race.raw", 1, 0, warp=3, prev_warp=0, lo=4, hi=8, cta=(2, 0, 0)),
        rec("race.raw", 1, 3, warp=3, prev_warp=0, lo=4, hi=8),      # other earlier site
        rec("race.war", 1, 0, warp=3, prev_warp=0, lo=4, hi=8),      # other kind
    ), st)
    findings = group(vs)
    assert [(f.kind, f.site.id, f.prev_site.id) for f in findings] == [
        ("race.raw", 1, 0), ("race.raw", 1, 3), ("race.war", 1, 0)]
    merged = findings[0]
    assert isinstance(merged, Finding)
    assert merged.occurrences == 2 and len(merged.records) == 2 and merged.not_stored == 0
    assert merged.ctas == [(0, 0, 0), (2, 0, 0)]
    assert merged.warps == {2, 3} and merged.prev_warps == {0, 1}
    assert merged.byte_ranges == [(0, 8)]


def test_occurrences_come_from_the_key_table():
    st = make_sites()
    vs = decode_records(records(rec("race.raw", 1, 0, warp=2, prev_warp=1)), st)
    table = keys((encode_key("race.raw", 1, 0), 120),
                 (encode_key("uninit.read", 3, None), 7))   # counted, never stored
    raw, uninit = group(vs, table, st)
    assert raw.occurrences == 120 and raw.not_stored == 119
    assert uninit.kind == "uninit.read" and uninit.site is st[3] and uninit.prev_site is None
    assert uninit.occurrences == 7 and uninit.records == [] and uninit.not_stored == 7


def test_key_layout_matches_abi():
    assert encode_key("race.war", 5, None) == (2 << 56) | (5 << 28) | 0x0FFFFFFF
    assert encode_key("race.raw", 0x1234, 7) == (1 << 56) | (0x1234 << 28) | 7


def test_byte_ranges_merge():
    assert merge_ranges([(4, 8), (0, 4)]) == [(0, 8)]
    assert merge_ranges([(0, 4), (8, 12), (2, 6)]) == [(0, 6), (8, 12)]
    assert merge_ranges([(0, 0)]) == []


def test_findings_sorted_by_severity_then_line():
    st = make_sites()
    vs = decode_records(records(
        rec("uninit.read", 1), rec("race.waw", 3, 0, warp=1, prev_warp=0),
        rec("race.raw", 1, 0, warp=1, prev_warp=0), rec("race.waw", 0, 3, warp=1, prev_warp=0),
    ), st)
    assert [(f.kind, f.line) for f in group(vs)] == [
        ("race.raw", 5), ("race.waw", 4), ("race.waw", 7), ("uninit.read", 5)]


# ---------------------------------------------------------------- text


def test_compact_numbers():
    assert compact_ints([7, 0, 1, 2, 3]) == "0-3, 7"
    assert cta_text([(i, 0, 0) for i in range(6)]) == (
        "(0,0,0), (1,0,0), (2,0,0), (3,0,0) and 2 more")


def test_human_report_names_sites_warps_and_fix():
    text = str(raw_report())
    assert "\x1b" not in text
    assert "race.raw" in text and "read-after-write race" in text
    assert "(2 occurrences in 2 CTAs)" in text
    assert "k.cu:5:15" in text and "k.cu:4:13" in text
    assert "> 5 |     float v = smem[(t + 32) % 256];" in text       # current line, marked
    assert "> 4 |     smem[t] = t;" in text                          # earlier line, marked
    assert "  3 |     int t = threadIdx.x;" in text                  # context
    assert "inlined from main.cu:40 (in outer)" in text
    body = flat(text)
    assert ("Warp 1 wrote smem[0x100..0x180) at k.cu:4; "
            "warps 2-3 (lanes 0-31) read it at k.cu:5.") in body
    assert ("No barrier orders the write at k.cu:4 before the read at k.cu:5: a __syncthreads() "
            "(bar.sync) between them, reached by both warps, would order them.") in body
    assert "CTAs (0,0,0), (1,0,0)" in body
    assert ("consan: 1 finding (1 race.raw) in kernel k; 2 occurrences; all records stored"
            in body)


def test_plain_text_even_when_the_environment_forces_colour(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "40")
    text = str(raw_report())
    assert "\x1b" not in text
    assert max(len(line) for line in text.splitlines()) <= 100
    assert any(len(line) > 40 for line in text.splitlines())


def test_site_without_loc_falls_back_to_ptx():
    st = make_sites()
    recs = records(rec("race.war", 2, 1, warp=0, prev_warp=5, lo=0x10, hi=0x14))
    rep = Report.from_log(header(stored=1, occurrences=1), recs, None, st, "k", LAUNCH)
    text = str(rep)
    assert "write  k.ptx:41" in text
    assert "> k.ptx:41 | st.shared.f32 [%r9], %f3;" in text
    body = flat(text)
    assert ("Warp 5 read smem[0x10..0x14) at k.cu:5; "
            "warp 0 (lanes 0-31) overwrote it at PTX line 41.") in body
    assert "a barrier after the read at k.cu:5 and before the write at PTX line 41" in body


def test_loc_without_source_text_shows_the_ptx_instruction():
    st = SiteTable(ptx_name="k.ptx")
    st.add(kernel="k", event="access", ptx_line=12, ptx_text="ld.shared.u32 %r1, [%r2];",
           loc=SourceLoc("/nonexistent/gone.cu", 3, 7))
    text = str(Report.from_log(header(stored=1, occurrences=1), records(rec("uninit.read", 0)),
                               None, st, "k"))
    assert "read  /nonexistent/gone.cu:3:7" in text
    assert "> k.ptx:12 | ld.shared.u32 %r1, [%r2];" in text


def test_source_missing_from_table_is_read_from_disk(tmp_path: Path):
    src = tmp_path / "disk.cu"
    src.write_text("// one\n// two\n  x = smem[3];\n// four\n")
    st = SiteTable(sites=[], sources={})
    st.add(kernel="k", event="access", ptx_line=9, ptx_text="ld.shared.u32 %r1, [%r2];",
           loc=SourceLoc(str(src), 3, 7))
    rep = Report.from_log(header(stored=1, occurrences=1), records(rec("uninit.read", 0)),
                          None, st, "k")
    text = str(rep)
    assert "> 3 |   x = smem[3];" in text and "1 | // one" in text
    assert "nothing in the CTA wrote these bytes since launch" in flat(text)
    assert "Initialise these bytes (or guard the read) before reading them" in flat(text)


def test_deadlock_and_mbarrier_sentences_use_barrier_fields():
    st = make_sites()
    recs = records(
        rec("deadlock", 1, warp=2, barrier=0x30, phase=1, count=32),
        rec("mbarrier.underflow", 0, warp=0, barrier=0x40, phase=2, count=1),
    )
    body = flat(str(Report.from_log(header(stored=2, occurrences=2), recs, None, st, "k")))
    assert "on the mbarrier at smem[0x40] at k.cu:4 in phase 2" in body
    # (a deadlock is an mbarrier's: its field is the mbarrier's offset, not a barrier id)
    assert "waits at k.cu:5 on the mbarrier at smem[0x30] in phase 1 with 32 arrivals" in body
    assert "barrier 48" not in body and "Phase 1 of the mbarrier at smem[0x30]" in body


def test_records_whose_key_found_no_room_are_stored_not_lost():
    """The key table full, a record is still stored: key_overflow counts what the table
    could not count, not records lost (it was added to `dropped`: "504 records not
    stored" with every record there)."""
    recs = records(rec("race.raw", 1, 0, warp=2, prev_warp=1))
    h = header(stored=1, occurrences=1)
    h["key_overflow"] = 504
    rep = Report.from_log(h, recs, None, make_sites(), "k")
    assert rep.dropped == 0 and "all records stored" in flat(str(rep))


# ---------------------------------------------------------------- verdict


def test_clean_report():
    rep = Report.from_log(header(), np.zeros(64, abi.record_dtype()), keys(), make_sites(),
                          "k", LAUNCH)
    assert rep.ok and rep.violations == [] and rep.findings == []
    assert "consan: no violations in kernel k (grid=(4,1,1), block=(256,1,1))" in str(rep)


def test_counted_but_unstored_violations_are_not_ok():
    rep = Report.from_log(header(stored=0, occurrences=5, dropped=5), np.zeros(
        64, abi.record_dtype()), None, make_sites(), "k", LAUNCH)
    assert not rep.ok and rep.findings == [] and rep.dropped == 5 and rep.occurrences == 5
    body = flat(str(rep))
    assert "not stored" in body and "no violations" not in body
    assert rep.to_dict()["ok"] is False


def test_only_records_the_header_says_were_stored_are_read():
    recs = records(rec("race.raw", 1, 0, warp=1, prev_warp=0),
                   rec("race.waw", 0, 3, warp=1, prev_warp=0))
    rep = Report.from_log(header(stored=1, occurrences=1), recs, None, make_sites(), "k")
    assert [v.kind for v in rep.violations] == ["race.raw"]
    rep = Report.from_log(header(capacity=1, stored=9, occurrences=9, dropped=8), recs, None,
                          make_sites(), "k")
    assert len(rep.violations) == 1 and rep.dropped == 8 and rep.occurrences == 9


def test_key_table_counts_reach_the_report():
    table = keys((encode_key("race.raw", 1, 0), 40))
    rep = raw_report(keys=table, occurrences=40)
    assert rep.findings[0].occurrences == 40 and rep.occurrences == 40
    body = flat(str(rep))
    assert "(40 occurrences in at least 2 CTAs)" in body
    assert "38 of 40 occurrences not stored" in body


def test_tool_notes_are_not_violations():
    st = make_sites()
    recs = records(rec("tool.out-of-window", 1, warp=3, lo=0x20000, hi=0x20004))
    rep = Report.from_log(header(stored=1, occurrences=1), recs, None, st, "k", LAUNCH)
    assert rep.ok and rep.violations == [] and rep.findings == []
    assert [v.kind for v in rep.tool_notes] == ["tool.out-of-window"]
    text = str(rep)
    assert "consan notes" in text and "tool.out-of-window" in text
    assert "consan: no violations in kernel k" in text
    assert rep.to_dict()["notes"][0]["kind"] == "tool.out-of-window"


def test_unknown_kind_code_is_a_note_not_a_violation():
    rep = Report.from_log(header(stored=1), records(rec(200, 1)), None, make_sites(), "k")
    assert rep.violations == [] and rep.tool_notes[0].kind == "tool.unknown-kind-200"


# ---------------------------------------------------------------- JSON


def test_json_round_trip():
    rep = raw_report(keys=keys((encode_key("race.raw", 1, 0), 3)), occurrences=3)
    d = json.loads(rep.to_json())
    assert d["kernel"] == "k" and d["ok"] is False and d["occurrences"] == 3
    assert d["launch"] == {"grid": [4, 1, 1], "block": [256, 1, 1], "shared_mem": 0}
    (f,) = d["findings"]
    assert f["kind"] == "race.raw" and f["title"] == "read-after-write race"
    assert f["occurrences"] == 3 and f["stored"] == 2 and f["not_stored"] == 1
    cur, prev = f["sites"]["current"], f["sites"]["earlier"]
    assert (cur["file"], cur["line"], cur["col"], cur["ptx_line"]) == ("k.cu", 5, 15, 35)
    assert cur["ptx_text"] == "ld.shared.f32 %f2, [%r7];"
    assert cur["inlined_at"] == [{"file": "main.cu", "line": 40, "col": 3, "function": "outer"}]
    assert (prev["file"], prev["line"], prev["role"]) == ("k.cu", 4, "earlier write")
    assert f["ctas"] == [[0, 0, 0], [1, 0, 0]] and f["cta_count"] == 2
    assert f["warps"] == [2, 3] and f["prev_warps"] == [1]
    assert f["byte_ranges"] == [[0x100, 0x180]]
    assert f["fix"].startswith("No barrier orders the write at k.cu:4 before the read at k.cu:5")


def test_json_accepts_numpy_launch_values():
    rep = Report.from_log(header(), None, None, make_sites(), "k",
                          {"grid": (np.int64(2), 1, 1), "block": 128, "shared_mem": np.int32(64)})
    d = json.loads(rep.to_json())
    assert d["ok"] is True and d["launch"] == {"grid": [2, 1, 1], "block": 128, "shared_mem": 64}
    assert "(grid=(2,1,1), block=128, shared_mem=64)" in str(rep)


def test_json_caps_cta_list():
    st = make_sites()
    recs = records(*[rec("race.raw", 1, 0, warp=1, prev_warp=0, cta=(i, 0, 0))
                     for i in range(70)])
    d = Report.from_log(header(stored=70, occurrences=70, capacity=70), recs, None, st,
                        "k").to_dict()
    assert len(d["findings"][0]["ctas"]) == 64 and d["findings"][0]["cta_count"] == 70
    assert "and 66 more" in str(Report.from_log(header(stored=70, capacity=70), recs, None,
                                                st, "k"))


# ---------------------------------------------------------------- layering


def test_reports_imports_no_runtime():
    code = ("import sys, reports; bad = [m for m in sys.modules "
            "if m.split('.')[0] in ('cupy', 'consan')]; assert not bad, bad")
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True)


# ---------------------------------------------------------------- wgmma wording

WG_SRC = """\
__global__ void g(const half* a) {
    As[t] = a[t];
    fence();
    __syncthreads();
    mma(da, db);
    commit();
    As[t] = a[t + 4096];
}
"""


def wgmma_sites() -> SiteTable:
    st = SiteTable(ptx_name="g.ptx", sources={"g.cu": WG_SRC})
    st.add(kernel="g", event="access.write", ptx_line=20, ptx_text="st.shared.u16 [%r4], %rs1;",
           size=2, loc=SourceLoc("g.cu", 2, 5))  # 0
    st.add(kernel="g", event="async.wgmma", ptx_line=30,
           ptx_text="wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%f1, %f2}, %rd1, %rd2, "
                    "p, 1, 1, 0, 0;", loc=SourceLoc("g.cu", 5, 5))  # 1
    st.add(kernel="g", event="access.write", ptx_line=40, ptx_text="st.shared.u16 [%r4], %rs2;",
           size=2, loc=SourceLoc("g.cu", 7, 5))  # 2
    return st


def test_wgmma_pending_read_names_the_wait_and_the_unit():
    from instrument.wgmma_desc import Descriptor

    desc = Descriptor(0x400, 16, 1024, 0, 1).encode()
    recs = records(
        rec("async.pending-read", 2, 1, warp=1, prev_warp=abi.AGENT_WGMMA, lo=0x400, hi=0x410),
        rec("proxy.missing-fence", 1, 0, warp=0, prev_warp=2, lo=0x800, hi=0x810, barrier=1,
            phase=3, count=desc & 0xFFFFFFFF, clock=desc >> 32),
    )
    rep = Report.from_log(header(stored=2, occurrences=2), recs, None, wgmma_sites(), "g")
    body = flat(str(rep))
    assert ("The wgmma unit of warpgroup 0 (warps 0-3) reads smem[0x400..0x410) as an operand "
            "of the wgmma issued at g.cu:5") in body
    assert "add wgmma.wait_group 0" in body and "before the write at g.cu:7" in body
    assert "wgmma (reads its operands until its group retires)" in body
    assert ("Warp 2 wrote smem[0x800..0x810) at g.cu:2 through the generic proxy and executed "
            "no fence.proxy.async after it") in body
    assert ("(operand B (16x64 .f16, K-major; start smem[0x400], LBO 16, SBO 1024, 128-byte "
            "swizzle) reads smem[0x400..") in body
    assert "in wgmma group 3)" in body
    assert "Add fence.proxy.async.shared::cta in the threads that write at g.cu:2" in body
    d = rep.to_dict()
    roles = {f["kind"]: f["sites"]["current"]["role"] for f in d["findings"]}
    assert roles["proxy.missing-fence"] == "wgmma (reads through the async proxy)"


# ---------------------------------------------------------------- not-modelled instructions


def _unmodeled(kernel: str, line: int, entry: bool = True, loc: bool = True):
    from instrument.rewrite import Unmodeled

    return Unmodeled(100 + line, 1, kernel, "barrier.cluster.arrive.release.aligned;",
                     "cluster barrier (barrier.cluster.arrive/wait): not checked yet",
                     loc=SourceLoc("k.cu", line, 5) if loc else None, entry=entry)


def test_a_report_lists_only_its_own_kernels_unmodeled_instructions():
    rep = Report.from_log(header(), records(), None, make_sites(), "_Z1kPf")
    rep.unmodeled = [_unmodeled("_Z1kPf", 6), _unmodeled("_Z5otherv", 9),
                     _unmodeled("_Z4helpv", 12, entry=False), _unmodeled("_Z1kPf", 6),
                     _unmodeled("_Z1kPf", 8, loc=False)]
    assert [u.kernel for u in rep.unmodeled] == ["_Z1kPf", "_Z4helpv", "_Z1kPf", "_Z1kPf"]
    lines = str(rep).splitlines()
    assert "consan did not check 4 instruction(s) that touch shared memory or synchronise:" \
        in lines
    assert ("  k.cu:6 in kernel k: cluster barrier (barrier.cluster.arrive/wait): not checked "
            "yet [barrier.cluster.arrive.release.aligned;] (2 instructions)") in lines
    assert any(ln.startswith("  k.cu:12 in function help: ") for ln in lines)
    assert any(ln.startswith("  PTX line 108 in kernel k: ") for ln in lines)
    assert not any("other" in ln for ln in lines)
    assert rep.to_dict()["unmodeled"][0].startswith("k.cu:6 in kernel k: cluster barrier")


def test_the_not_checked_list_is_cut_after_ten_distinct_entries():
    rep = Report.from_log(header(), records(), None, make_sites(), "k")
    rep.unmodeled = [_unmodeled("k", n) for n in range(1, 14)]
    text = str(rep)
    assert "k.cu:10 in kernel k" in text and "k.cu:11 in kernel k" not in text
    assert "... and 3 more" in text


def test_a_not_checked_entry_is_one_line_even_on_a_narrow_console():
    import io

    from rich.console import Console

    rep = Report.from_log(header(), records(), None, make_sites(), "k")
    rep.unmodeled = [_unmodeled("k", 6)]
    buf = io.StringIO()
    rep.render(Console(file=buf, width=40, color_system=None, highlight=False))
    (entry,) = [ln for ln in buf.getvalue().splitlines() if "k.cu:6" in ln]
    assert entry.rstrip().endswith("[barrier.cluster.arrive.release.aligned;]")


@pytest.mark.parametrize("prev_warp,says", [(1, True), (0, False)])
def test_the_same_instruction_is_by_another_warp_only_when_it_is(prev_warp, says):
    """A warp's cp.async over its own earlier copy (a group it did not wait for) is the same
    instruction by the same warp: it was told "by another warp"."""
    recs = records(rec("race.waw", 1, 1, warp=0, prev_warp=prev_warp))
    body = flat(str(Report.from_log(header(stored=1, occurrences=1), recs, None, make_sites(),
                                    "k")))
    assert "the same instruction (k.cu:5" in body
    assert ("by another warp" in body) is says


def test_a_copy_that_over_delivers_bytes_is_not_called_an_arrive():
    """An mbarrier.underflow at a bulk copy: the copy completed more bytes than expect_tx
    announced (it was told as "arrived ... taking its pending count below zero")."""
    st = make_sites()
    copy = st.add(kernel="k", event="async.bulk", ptx_line=50,
                  ptx_text="cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                           "[%r1], [%rd1], 64, [%r2];", size=64, loc=SourceLoc("k.cu", 7, 3))
    recs = records(rec("mbarrier.underflow", copy.id, warp=0, barrier=0x40, phase=0, count=0))
    body = flat(str(Report.from_log(header(stored=1, occurrences=1), recs, None, st, "k")))
    assert "The copy at k.cu:7" in body and "completed more bytes on the mbarrier at " \
        "smem[0x40] in phase 0 than expect_tx had announced" in body
    assert "arrived on the mbarrier" not in body and "pending count below zero" not in body


@pytest.mark.parametrize("h", [header(), header(occurrences=3, dropped=1),
                               header(stored=2, capacity=0)])
def test_a_log_without_records_or_keys_reads_as_the_full_decoding_would(h):
    """A clean launch's read-back skips the decoding (no record, no key table read): the
    report is the one the whole path gives for the same empty log."""
    st, launch = make_sites(), {"grid": (1, 1, 1)}
    none = records()
    fast = Report.from_log(h, none, None, st, "k", launch)
    full = Report.from_log(h, none, keys(), st, "k", launch)
    assert fast.to_dict() == full.to_dict() and str(fast) == str(full)
    assert fast.verdict == ("clean" if not h["occurrences"] else "violations")
