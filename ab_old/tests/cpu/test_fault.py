"""CPU tests of a launch that faulted: its verdict, what is printed, JSON, SARIF, exit status.

A kernel that faults (misaligned address, illegal instruction, trap, ...) did not run to its
end, so its report must never read as clean, whatever the checker recorded before the fault.
No GPU is needed: reports are built with an error set, and the session's own recording path
(`Session._record`) is driven with such a report inside `consan run` and the pytest plugin.
"""

from __future__ import annotations

import json
import os
import textwrap
import traceback
from pathlib import Path

import numpy as np
import pytest

from consan import cli
from consan.exitcodes import EXIT_CLEAN, EXIT_ERROR, EXIT_VIOLATIONS
from consan.run import _cut_internal, exit_status
from instrument import abi
from instrument.sites import SiteTable, SourceLoc
from reports import Report
from reports.render import fault_cause
from reports.sarif import to_sarif
from reports.session import SessionFinding, SessionReport

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
SRC = """\
extern "C" __global__ void bad_store(float *out, int n) {
    __shared__ float smem[64];
    int t = threadIdx.x;
    smem[t] = t;
    float v = smem[(t + 32) % 64];
    *(float *)((char *)out + 2) = v;
}
"""
ERROR = "CUDARuntimeError: cudaErrorMisalignedAddress: misaligned address"
CAUSE = "cudaErrorMisalignedAddress: misaligned address"
LAUNCH = {"grid": (1, 1, 1), "block": (64, 1, 1), "shared_mem": 0}


def _sites() -> SiteTable:
    st = SiteTable(ptx_name="bad.ptx", sources={"bad.cu": SRC})
    st.add(kernel="bad_store", event="access", ptx_line=30, ptx_text="st.shared.f32 [%r4], %f1;",
           size=4, loc=SourceLoc("bad.cu", 4, 13))
    st.add(kernel="bad_store", event="access", ptx_line=35,
           ptx_text="ld.shared.f32 %f2, [%r7];", size=4, loc=SourceLoc("bad.cu", 5, 15))
    return st


def _header(**fields: int) -> np.void:
    h = np.zeros((), abi.log_header_dtype())[()]
    h["capacity"] = 64
    for name, value in fields.items():
        h[name] = value
    return h


def faulted_report(with_race: bool = False, error: str | None = ERROR) -> Report:
    """The report of a launch of bad_store: a race.raw recorded (or not), then a fault."""
    recs = np.zeros(1 if with_race else 0, abi.record_dtype())
    if with_race:
        code = next(k.code for k in abi.KINDS if k.id == "race.raw")
        recs[0]["kind"], recs[0]["site"], recs[0]["prev_site"] = code, 1, 0
        recs[0]["warp"], recs[0]["prev_warp"], recs[0]["lanes"] = 0, 1, 0xFFFFFFFF
        recs[0]["offset_lo"], recs[0]["offset_hi"] = 0, 128
    n = len(recs)
    rep = Report.from_log(_header(stored=n, occurrences=n), recs, None, _sites(), "bad_store",
                          LAUNCH)
    rep.error = error
    return rep


def flat(text: str) -> str:
    return " ".join(text.split())


def _line_of(text: str, marker: str) -> int:
    (line,) = [i for i, s in enumerate(text.splitlines(), 1) if marker in s]
    return line


# ---------------------------------------------------------------- one launch: Report


def test_fault_cause_drops_the_python_class_only():
    assert fault_cause(ERROR) == CAUSE
    assert fault_cause("CUDADriverError: CUDA_ERROR_ILLEGAL_INSTRUCTION: an illegal "
                       "instruction was encountered") == (
        "CUDA_ERROR_ILLEGAL_INSTRUCTION: an illegal instruction was encountered")
    assert fault_cause("ValueError: something else") == "ValueError: something else"


def test_verdicts():
    assert faulted_report(error=None).verdict == "clean" and faulted_report(error=None).ok
    racy = faulted_report(with_race=True, error=None)
    assert racy.verdict == "violations" and not racy.ok and not racy.faulted
    rep = faulted_report()
    assert (rep.verdict, rep.ok, rep.faulted, rep.fault) == ("faulted", False, True, CAUSE)
    assert rep.error == ERROR  # kept as raised
    both = faulted_report(with_race=True)
    assert (both.verdict, both.ok, both.faulted, both.violated) == ("faulted", False, True, True)


def test_a_fault_with_nothing_recorded_is_not_clean():
    rep = faulted_report()
    assert rep.summary == ("consan: the kernel bad_store (grid=(1,1,1), block=(64,1,1)) faulted: "
                           f"{CAUSE}; no violation was recorded before the fault")
    text = str(rep)
    lines = text.splitlines()
    assert lines[0] == f"consan: the kernel bad_store faulted: {CAUSE}"
    assert "consan recorded no violation before the fault" in flat(text)
    assert "no violations" not in text
    assert flat(text).endswith(rep.summary)


def test_a_fault_after_a_race_says_both_fault_first():
    rep = faulted_report(with_race=True)
    text = str(rep)
    assert text.splitlines()[0] == f"consan: the kernel bad_store faulted: {CAUSE}"
    body = flat(text)
    assert "The findings below were recorded before the fault" in body
    assert body.index("faulted") < body.index("race.raw")
    assert "bad.cu:5:15" in body and "bad.cu:4:13" in body  # the race, with its lines
    assert rep.summary == (
        "consan: the kernel bad_store (grid=(1,1,1), block=(64,1,1)) faulted: "
        f"{CAUSE}; recorded before the fault: 1 finding (1 race.raw); 1 occurrence; all "
        "records stored")


def test_report_json_says_faulted_and_keeps_the_error():
    d = json.loads(faulted_report(with_race=True).to_json())
    assert (d["ok"], d["faulted"], d["verdict"], d["error"]) == (False, True, "faulted", ERROR)
    assert [f["kind"] for f in d["findings"]] == ["race.raw"]
    assert d["summary"].startswith("consan: the kernel bad_store")
    clean = json.loads(faulted_report(error=None).to_json())
    assert (clean["ok"], clean["faulted"], clean["verdict"], clean["error"]) == (
        True, False, "clean", None)


# ---------------------------------------------------------------- a session: SessionReport


def _session_with_fault(with_race: bool = False) -> SessionReport:
    rep = SessionReport()
    rep.kernel("bad_store").launches_checked = 3
    rep.kernel("bad_store").errors.append(ERROR)
    if with_race:
        rep.findings.append(SessionFinding.from_dict(
            {"kind": "race.raw", "title": "read-after-write race", "kernel": "bad_store",
             "occurrences": 1, "launches": 1, "what": "w", "fix": "f",
             "sites": {"current": {"file": "bad.cu", "line": 5, "col": 15,
                                   "where": "bad.cu:5:15"}, "earlier": None}}))
        rep.kernel("bad_store").findings["race.raw"] = 1
    rep.add_fault("bad_store", ERROR, launch_no=3, launch={"grid": [1, 1, 1],
                                                           "block": [64, 1, 1]},
                  launched_from={"file": "prog.py", "line": 12}, findings_before=int(with_race))
    return rep


def _summary_text(rep: SessionReport) -> str:
    import io

    from reports.render import plain_console

    buf = io.StringIO()
    rep.render_summary(plain_console(buf))
    return buf.getvalue()


def test_session_with_a_fault_is_not_ok_and_says_so_first():
    rep = _session_with_fault()
    assert (rep.ok, rep.faulted, rep.verdict) == (False, True, "faulted")
    assert rep.summary_line() == (f"consan: kernel bad_store faulted: {CAUSE}; no findings; "
                                  "3 launches of 1 kernel checked")
    text = _summary_text(rep)
    assert (f"kernel bad_store faulted on launch #3 (grid=(1,1,1), block=(64,1,1)), launched "
            f"from prog.py:12: {CAUSE}") in text
    assert "faulted" in text.split("kernel bad_store faulted on")[0]  # the table's row
    assert "a launch failed" not in text  # the fault is told once, as a fault


def test_session_with_a_fault_and_findings_says_both():
    rep = _session_with_fault(with_race=True)
    assert rep.verdict == "faulted" and not rep.ok
    assert rep.summary_line().startswith(f"consan: kernel bad_store faulted: {CAUSE}; "
                                         "1 finding (1 race.raw); ")


def test_session_json_round_trip_keeps_the_faults():
    rep = _session_with_fault(with_race=True)
    d = json.loads(rep.to_json())
    assert (d["ok"], d["faulted"], d["verdict"]) == (False, True, "faulted")
    (fault,) = d["faults"]
    assert fault["kernel"] == "bad_store" and fault["error"] == ERROR
    assert fault["fault"] == CAUSE and fault["launch_no"] == 3 and fault["findings_before"] == 1
    back = SessionReport.from_dict(d)
    assert back.faulted and back.summary_line() == rep.summary_line()
    assert back.to_dict() == rep.to_dict()


def test_old_session_json_without_faults_still_reads():
    d = _session_with_fault().to_dict()
    for key in ("faults", "faulted", "verdict"):
        d.pop(key)
    assert SessionReport.from_dict(d).ok


def test_sarif_notes_the_fault():
    rep = _session_with_fault()
    rep.program["error"] = "kernel bad_store faulted: " + CAUSE
    inv = to_sarif(rep)["runs"][0]["invocations"][0]
    assert inv["executionSuccessful"] is False
    assert any("bad_store" in n["message"]["text"] and CAUSE in n["message"]["text"]
               for n in inv["toolExecutionNotifications"])


# ---------------------------------------------------------------- consan run


def test_exit_status_decision():
    faulted = _session_with_fault(with_race=True)
    assert exit_status(faulted, 0) == exit_status(faulted, 3) == EXIT_ERROR
    racy = _session_with_fault(with_race=True)
    racy.faults.clear()
    assert exit_status(racy, 0) == EXIT_VIOLATIONS
    clean = SessionReport()
    assert exit_status(clean, 0) == EXIT_CLEAN and exit_status(clean, 4) == 4


# A program that, under `consan run`, has one checked launch fault: the session records it
# through its own recording path, then the program's next CUDA call fails as CUDA would have it.
FAULTING = """
import os, sys
from types import SimpleNamespace as NS
from consan import session
from tests.cpu.test_fault import faulted_report

rep = faulted_report(with_race={race})
fn = NS(display_name="bad_store", kernel="bad_store")
p = NS(grid=(1, 1, 1), block=(64, 1, 1), shared_mem=0, shadow_bytes=0)
session.current_session()._record(fn, p, rep, {{"file": __file__, "line": 10}}, None)
print("after the launch")
{after}
"""
NEXT_CUDA_CALL = """
from cupy_backends.cuda.api.runtime import CUDARuntimeError

def sync():
    raise CUDARuntimeError(716)

sync()  # the program's next CUDA call
print("never")
"""


def _program(tmp_path: Path, race: bool = False, after: str = NEXT_CUDA_CALL) -> str:
    p = tmp_path / "prog.py"
    p.write_text(FAULTING.format(race=race, after=textwrap.dedent(after)))
    return str(p)


@pytest.fixture
def repo_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))


def test_run_exits_2_naming_the_faulted_kernel_and_keeps_the_program_traceback(
        tmp_path, capsys, repo_on_path):
    j, sf = tmp_path / "r.json", tmp_path / "r.sarif"
    assert cli.main(["run", "--json", str(j), "--sarif", str(sf), _program(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == "after the launch\n"
    # told at once, before the program's traceback
    live = err.index(f"the kernel faulted: {CAUSE}")
    assert live < err.index("Traceback (most recent call last)")
    assert "consan recorded no violation in this launch before the fault" in err
    # the program's own traceback, its own lines, as Python prints it
    program = Path(tmp_path / "prog.py").read_text()
    assert f'prog.py", line {_line_of(program, "# the program")}, in <module>' in err
    assert "in sync" in err
    assert f"CUDARuntimeError: {CAUSE}" in err
    assert "needs a CUDA GPU" not in err  # the fault, not a missing GPU
    assert "runpy" not in err and "consan/run.py" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("consan run: kernel bad_store faulted on launch #1 (grid=(1,1,1), "
                           "block=(64,1,1)), launched from ") and last.count(CAUSE) == 1
    assert "exit status 2" in last
    rep = json.loads(j.read_text())
    assert (rep["ok"], rep["faulted"], rep["verdict"]) == (False, True, "faulted")
    assert [f["kernel"] for f in rep["faults"]] == ["bad_store"]
    assert rep["kernels"][0]["errors"] == [ERROR]
    assert "bad_store faulted" in rep["program"]["error"]
    inv = json.loads(sf.read_text())["runs"][0]["invocations"][0]
    assert inv["executionSuccessful"] is False
    assert any(CAUSE in n["message"]["text"] for n in inv["toolExecutionNotifications"])


def test_run_with_a_race_before_the_fault_shows_the_race_and_exits_2(tmp_path, capsys,
                                                                     repo_on_path):
    assert cli.main(["run", _program(tmp_path, race=True)]) == 2
    err = capsys.readouterr().err
    live = err[err.index(f"the kernel faulted: {CAUSE}"):]
    assert "recorded before the fault" in live
    assert live.index("race.raw") < live.index("Traceback")
    assert "bad.cu:5" in live


def test_run_exits_2_even_when_the_program_ends_without_another_cuda_call(
        tmp_path, capsys, repo_on_path):
    assert cli.main(["run", "--quiet", _program(tmp_path, after="")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith(f"consan: kernel bad_store faulted: {CAUSE}; no findings; ")
    assert lines[1].startswith("consan run: kernel bad_store faulted on launch #1")


def test_cut_internal_ends_the_traceback_at_the_program_call():
    import consan

    internal = os.path.join(os.path.dirname(consan.__file__), "_fake_launch.py")
    code = compile("def launch():\n    raise RuntimeError('CUDA error')\n", internal, "exec")
    ns: dict = {}
    exec(code, ns)

    def user_call():
        ns["launch"]()

    try:
        user_call()
    except RuntimeError as e:
        tb = _cut_internal(e.__traceback__)
    names = [f.name for f in traceback.extract_tb(tb)]
    assert names[-1] == "user_call" and "launch" not in names


# ---------------------------------------------------------------- consan check


def test_check_exits_2_with_one_sentence_naming_the_kernel_and_the_fault(
        tmp_path, capsys, monkeypatch):
    import consan

    src = tmp_path / "bad.cu"
    src.write_text(SRC)
    monkeypatch.setattr(consan, "gpu_available", lambda: True)
    monkeypatch.setattr(consan, "check", lambda *a, **k: faulted_report(with_race=True))
    j = tmp_path / "r.json"
    status = cli.main(["check", str(src), "--kernel", "bad_store", "--block", "64", "--json",
                       str(j)])
    out, err = capsys.readouterr()
    assert status == 2
    assert out.splitlines()[0] == f"consan: the kernel bad_store faulted: {CAUSE}"
    assert "race.raw" in out
    (sentence,) = err.strip().splitlines()
    assert sentence == (f"consan: kernel bad_store in {src} faulted on the GPU ({CAUSE}), so it "
                        "was not checked to its end; the report above shows what consan "
                        "recorded before the fault")
    assert json.loads(j.read_text())["faulted"] is True


# ---------------------------------------------------------------- the pytest plugin

CONFTEST = """
import consan.runtime
from consan import cupti


class NoCounter:
    def __init__(self, *a, **k):
        pass

    def start(self):
        return "no launch counting in this test"

    def stop(self):
        pass


consan.runtime.gpu_available = lambda: True  # the fixture runs; the faults are injected
cupti.LaunchCounter = NoCounter
"""
PLUGIN_DEMO = """
import pytest
from types import SimpleNamespace as NS
from cupy_backends.cuda.api.runtime import CUDARuntimeError
from tests.cpu.test_fault import faulted_report


def fault(session, race=False):
    fn = NS(display_name="bad_store", kernel="bad_store")
    p = NS(grid=(1, 1, 1), block=(64, 1, 1), shared_mem=0, shadow_bytes=0)
    session._record(fn, p, faulted_report(with_race=race), {"file": __file__, "line": 9}, None)


def test_fault_then_cuda_error(consan):
    fault(consan)
    raise CUDARuntimeError(716)  # the test's next CUDA call


def test_fault_only(consan):
    fault(consan)


def test_race_then_fault(consan):
    fault(consan, race=True)
    raise CUDARuntimeError(716)


@pytest.mark.consan
def test_marker_fault():
    from consan.session import current_session

    fault(current_session())


def test_clean(consan):
    pass
"""


def test_pytest_plugin_fails_a_test_whose_kernel_faulted(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_demo=PLUGIN_DEMO)
    result = pytester.runpytest_subprocess("-p", "consan.pytest_plugin", "-p",
                                           "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=4)
    text = result.stdout.str()
    assert "error" not in result.parseoutcomes()  # failed in the test, not in teardown
    sections = text.split("_ test_")
    by_test = {s.split(" _")[0]: s for s in sections[1:]}
    for name in ("fault_then_cuda_error", "fault_only", "race_then_fault", "marker_fault"):
        body = flat(by_test[name])
        assert "consan: kernel bad_store faulted on launch #1" in body, body
        assert CAUSE in body
        assert "later tests that use the GPU fail too" in body
    assert ("The test then stopped with cupy_backends.cuda.api.runtime.CUDARuntimeError: "
            f"{CAUSE} (at ") in flat(by_test["fault_then_cuda_error"])
    raise_line = _line_of(PLUGIN_DEMO.strip(), "# the test's next CUDA call")
    assert f"test_demo.py:{raise_line})" in flat(by_test["fault_then_cuda_error"])
    assert "The test then stopped" not in by_test["fault_only"]
    race = flat(by_test["race_then_fault"])
    assert "race.raw" in race and "recorded before the fault" in race
    assert "read bad.cu:5:15" in race and "earlier write bad.cu:4:13" in race, race
    assert "consan found 1 finding(s)" in race



@pytest.fixture
def read_back(monkeypatch):
    """`read_back(error)`: the report of a Prepared whose read-back meets `error` when it
    synchronises the stream (no GPU needed)."""
    from types import SimpleNamespace

    import cupy

    from consan import runtime
    from consan.layout import Placement

    def run(error: BaseException):
        p = object.__new__(runtime.Prepared)
        p.__dict__.update(
            grid=(1, 1, 1), block=(64, 1, 1), shared_mem=0, kernel="bad_store", _stored_prev=0,
            layout=SimpleNamespace(placement=Placement.DEVICE, nslots=1, shadow_bytes=0,
                                   granule_bytes=abi.GRANULE_BYTES),
            records=np.zeros(4, dtype=abi.record_dtype()),
            build=SimpleNamespace(arch=SimpleNamespace(sm="sm_90a"), instrumented=SimpleNamespace(
                sites=SiteTable(), unmodeled=[])))

        class Stream:
            def synchronize(self):
                raise error

        monkeypatch.setattr(cupy.cuda, "get_current_stream", Stream)
        return p.report()

    return run


def test_a_cuda_error_at_read_back_is_a_fault(read_back):
    import cupy

    rep = read_back(cupy.cuda.runtime.CUDARuntimeError(716))  # cudaErrorMisalignedAddress
    assert rep.faulted and not rep.ok
    assert rep.error.startswith("CUDARuntimeError: cudaErrorMisalignedAddress")


def test_a_bug_of_consans_at_read_back_is_no_fault_of_the_kernel(read_back):
    """Anything but CUDA's own errors is consan's, and must not be told as the kernel's."""
    with pytest.raises(ValueError, match="a bug of ours"):
        read_back(ValueError("a bug of ours"))

