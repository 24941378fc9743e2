"""Kernels that really fault on the GPU: the verdict is "faulted", never clean.

A sticky fault poisons the CUDA context of its process, so every case runs in a subprocess
of its own: `consan.check` (the report's JSON), `consan check FILE.cu` (exit 2, one sentence
that names the kernel and the fault), `consan run` of a CuPy program (exit 2, the kernel
named, the program's own traceback kept) and a pytest run of a test using the `consan`
fixture or marker (the test fails, naming the kernel). The kernels are in
`gpu_scripts/script_fault.py`; one of them records a race before it faults, and the race
must be reported with its lines.

What CUDA says differs by fault and, for some, by GPU: on an H100 (driver 580) `brkpt;`
without a debugger and `trap;` end as an unspecified launch failure, and the instrumented
out-of-range `ld.shared` as an illegal instruction; each case accepts the names below.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from tests.gpu_util import ROOT, SCRIPTS, line_of, run_python

# One xdist worker runs these in turn. On the H100 (2026-11-27), in two runs of the whole
# GPU suite in six workers, a misaligned store went unreported (once in a native run, so not
# consan's doing); this file alone passed every time, in one process or in six.
pytestmark = [pytest.mark.gpu, pytest.mark.xdist_group("gpu-faults")]
pytest_plugins = ["pytester"]

SCRIPT = SCRIPTS / "script_fault.py"
_spec = importlib.util.spec_from_file_location("script_fault", SCRIPT)
_kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_kernels)  # (its kernels and launch shape; it launches nothing)
ARG, BLOCK, SOURCES = _kernels.ARG, _kernels.BLOCK, _kernels.SOURCES

# What CUDA may say of each fault (the runtime API's names; the report keeps its words).
FAULTS = {
    "misaligned": ("cudaErrorMisalignedAddress",),
    "smem_range": ("cudaErrorIllegalAddress", "cudaErrorIllegalInstruction"),
    "brkpt": ("cudaErrorIllegalInstruction", "cudaErrorLaunchFailure"),
    "trap": ("cudaErrorLaunchFailure", "cudaErrorIllegalInstruction"),
    "race_then_fault": ("cudaErrorMisalignedAddress",),
}
KINDS = list(FAULTS)
assert set(KINDS) == set(SOURCES)


def _run(*args: str, cwd: Path = SCRIPTS, timeout: int = 300):
    return run_python(*args, cwd=cwd, timeout=timeout)


def _names_fault(text: str, kind: str) -> str:
    """The fault name of `kind` that `text` names (asserts there is one)."""
    found = [name for name in FAULTS[kind] if name in text]
    assert found, f"none of {FAULTS[kind]} in:\n{text}"
    return found[0]


CHECK_CHILD = r"""
import sys
import cupy as cp
import numpy as np
import consan
sys.path.insert(0, sys.argv[2])
from script_fault import ARG, BLOCK, SOURCES

kind = sys.argv[1]
x = cp.arange(BLOCK, dtype=cp.int32)
out = cp.zeros(BLOCK + 1, dtype=cp.int32)
rep = consan.check(SOURCES[kind], kind, grid=(1, 1, 1), block=(BLOCK, 1, 1),
                   args=(x, out, np.int32(ARG[kind])))
print("REPORT " + rep.to_json(indent=None), flush=True)
print("TEXT " + str(rep).replace("\n", "\\n"), flush=True)
"""


def _tagged(stdout: str, tag: str) -> str:
    (line,) = [s for s in stdout.splitlines() if s.startswith(tag + " ")]
    return line[len(tag) + 1:]


@pytest.mark.parametrize("kind", KINDS)
def test_check_api_reports_the_fault(kind):
    r = _run("-c", CHECK_CHILD, kind, str(SCRIPTS))
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads(_tagged(r.stdout, "REPORT"))
    assert (rep["ok"], rep["faulted"], rep["verdict"]) == (False, True, "faulted"), rep
    name = _names_fault(rep["error"], kind)
    assert rep["summary"].startswith(f"consan: the kernel {kind} ")
    assert f"faulted: {name}" in rep["summary"]
    text = _tagged(r.stdout, "TEXT").replace("\\n", "\n")
    assert text.splitlines()[0].startswith(f"consan: the kernel {kind} faulted: {name}")
    if kind == "race_then_fault":
        races = [f for f in rep["findings"] if f["kind"] == "race.raw"]
        assert races, rep  # recorded before the fault, read back after it
        sites = races[0]["sites"]
        assert sites["current"]["line"] == line_of(SOURCES[kind], "@read")
        assert sites["earlier"]["line"] == line_of(SOURCES[kind], "@write")
        assert "recorded before the fault: 1 finding (1 race.raw)" in rep["summary"]
        assert text.index("faulted") < text.index("race.raw")
    else:
        assert not rep["findings"], rep
        assert "no violation was recorded before the fault" in rep["summary"]


@pytest.mark.parametrize("kind", KINDS)
def test_check_cli_exits_2_naming_the_kernel_and_the_fault(kind, tmp_path):
    src = tmp_path / f"{kind}.cu"
    src.write_text(SOURCES[kind])
    out = tmp_path / "report.json"
    r = _run("-m", "consan", "check", str(src), "--kernel", kind, "--grid", "1", "--block",
             str(BLOCK), "--arg", f"i32[{BLOCK}]", "--arg", f"i32[{BLOCK + 1}]=0", "--arg",
             f"i32={ARG[kind]}", "--json", str(out), cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    name = _names_fault(r.stderr, kind)
    sentence = [s for s in r.stderr.splitlines() if s.startswith("consan: kernel ")]
    assert len(sentence) == 1, r.stderr
    assert sentence[0].startswith(f"consan: kernel {kind} in {src} faulted on the GPU ({name}")
    assert "was not checked to its end" in sentence[0]
    assert r.stdout.startswith(f"consan: the kernel {kind} faulted: {name}")
    rep = json.loads(out.read_text())
    assert rep["faulted"] is True and rep["ok"] is False
    if kind == "race_then_fault":
        assert "race.raw" in r.stdout
        assert f"{src}:{line_of(SOURCES[kind], '@read')}" in r.stdout


@pytest.mark.parametrize("kind", KINDS)
def test_run_exits_2_naming_the_kernel_and_keeps_the_program_traceback(kind, tmp_path):
    native = _run(str(SCRIPT), kind)
    assert native.returncode != 0 and "not reached" not in native.stdout
    out = tmp_path / "report.json"
    sarif = tmp_path / "report.sarif"
    r = _run("-m", "consan", "run", "--json", str(out), "--sarif", str(sarif), str(SCRIPT), kind)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "not reached" not in r.stdout
    err = r.stderr
    name = _names_fault(err, kind)
    rep = json.loads(out.read_text())
    (stats,) = [k for k in rep["kernels"] if k["name"] == kind]
    proven = bool(stats.get("proven"))
    # (misaligned's shared memory is proven race-free for its block: it runs natively)
    assert proven == (kind == "misaligned"), rep["kernels"]
    live = err.index(f"the kernel faulted: {name}")
    tb = err.index("Traceback (most recent call last)")
    # told as it happened, before the program met the error at its next CUDA call; a proven
    # launch is not waited for: told when consan next looks, here at the program's end
    assert (live < tb) != proven, err
    program_tb = err[tb:]
    assert f'script_fault.py", line {line_of(SCRIPT.read_text(), "@sync")}, in main' \
        in program_tb, err
    assert f"CUDARuntimeError: {name}" in program_tb
    assert not any(f"consan/{m}.py" in err for m in ("session", "cupy_hook", "run")), err
    assert "needs a CUDA GPU" not in err
    verdict = [s for s in err.splitlines() if s.startswith("consan run: ")]
    assert len(verdict) == 1 and verdict[0].startswith(
        f"consan run: kernel {kind} faulted on launch #1 ("), err
    assert name in verdict[0] and "exit status 2" in verdict[0]
    assert (rep["ok"], rep["faulted"], rep["verdict"]) == (False, True, "faulted")
    assert [f["kernel"] for f in rep["faults"]] == [kind]
    assert name in rep["faults"][0]["fault"]
    assert rep["faults"][0]["launched_from"]["file"].endswith("script_fault.py")
    inv = json.loads(sarif.read_text())["runs"][0]["invocations"][0]
    assert inv["executionSuccessful"] is False
    if kind == "race_then_fault":
        assert [f["kind"] for f in rep["findings"]] == ["race.raw"]
        read = line_of(SCRIPT.read_text(), "@read")
        assert rep["findings"][0]["sites"]["current"]["line"] == read
        assert err.index("race.raw") < tb  # shown with the fault, before the traceback
        assert f"script_fault.py:{read}" in err[live:tb]


PYTEST_DEMO = """
import sys

import cupy as cp
import pytest

sys.path.insert(0, {scripts!r})
from script_fault import launch


{decorator}
def test_faulting_kernel({fixture}):
    launch({kind!r})
    cp.cuda.Device().synchronize()  # the test's next CUDA call
"""


@pytest.mark.parametrize("kind, how", [(k, "fixture") for k in KINDS] +
                         [("misaligned", "marker")])
def test_pytest_plugin_fails_the_test_naming_the_faulted_kernel(kind, how, pytester,
                                                                monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("COLUMNS", raising=False)
    pytester.makepyfile(test_demo=PYTEST_DEMO.format(
        scripts=str(SCRIPTS), kind=kind,
        decorator="@pytest.mark.consan" if how == "marker" else "",
        fixture="consan" if how == "fixture" else ""))
    result = pytester.runpytest_subprocess("-p", "consan.pytest_plugin", "-p",
                                           "no:cacheprovider", timeout=300)
    text = result.stdout.str()
    result.assert_outcomes(failed=1)
    name = _names_fault(text, kind)
    flat = " ".join(text.split())
    assert f"consan: kernel {kind} faulted on launch #1 (" in flat, text
    assert f"{name}" in flat
    assert "The test then stopped with" in flat and "test_demo.py:" in flat
    if kind == "race_then_fault":
        assert "race.raw" in flat
        assert f"script_fault.py:{line_of(SCRIPT.read_text(), '@read')}" in flat, text
