"""`consan run` on real programs (GPU): every CuPy kernel kind, clean and racy.

Each script in `gpu_scripts/` runs twice in a subprocess, natively and under
`python -m consan run`: a clean script must print exactly the same and report
no finding, with its kernels listed as checked, and leave the very same bits in
every array it keeps (both runs go through tests/gpu_util.py's dump wrapper,
which saves the script's global arrays: the outputs of its RawKernel, RawModule,
cluster and jit launches; the results of script_kinds' Elementwise, Reduction,
ufunc and fuse kernels are temporaries, compared through the sums it prints).
The racy RawKernel must be reported at the marked lines of the Python file that
holds its source; its output is not compared (the race makes it timing-dependent).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.gpu_util import SCRIPTS, assert_same_dumps, dump_command, run_python

pytestmark = pytest.mark.gpu


# Kernels each clean script must have checked (a name or the start of a generated name),
# and those among them that use shared memory (so they had shadow tables).
CHECKED = {
    "script_rawkernel": ({"block_sum"}, {"block_sum"}),
    "script_kinds": ({"rotate<float>", "rotate<int>", "reverse", "consan_axpy", "consan_sumsq",
                      "cupy_add", "fused", "jit_reverse"},
                     {"rotate<float>", "rotate<int>", "reverse", "consan_sumsq", "jit_reverse"}),
    "script_cluster": ({"fixed_cluster", "any_cluster"}, {"fixed_cluster", "any_cluster"}),
    "script_library": (set(), set()),
}


def _run(*args: str, timeout: int = 600):
    return run_python(*args, timeout=timeout)


def _line(marker: str) -> int:
    text = (SCRIPTS / "script_racy.py").read_text().splitlines()
    hits = [i for i, t in enumerate(text, 1) if re.search(re.escape(marker) + r"\b", t)]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def _checked(rep: dict) -> dict[str, dict]:
    return {k["name"]: k for k in rep["kernels"] if k["launches_checked"]}


def _has(names: dict[str, dict], want: str) -> dict | None:
    return next((k for n, k in names.items() if n == want or n.startswith(want)), None)


@pytest.mark.parametrize("script", sorted(CHECKED))
def test_clean_script_runs_unchanged_and_clean(script, tmp_path):
    native_dump, checked_dump = tmp_path / "native.npz", tmp_path / "checked.npz"
    native = _run(*dump_command(native_dump, f"{script}.py"))
    assert native.returncode == 0, native.stderr
    out = tmp_path / "report.json"
    sanitized = _run("-m", "consan", "run", "--json", str(out),
                     *dump_command(checked_dump, f"{script}.py"))
    assert sanitized.returncode == 0, sanitized.stdout + sanitized.stderr
    assert sanitized.stdout == native.stdout
    assert_same_dumps(native_dump, checked_dump, script)
    rep = json.loads(out.read_text())
    assert rep["ok"] and not rep["findings"], sanitized.stderr
    checked = _checked(rep)
    want, with_smem = CHECKED[script]
    for name in want:
        k = _has(checked, name)
        assert k is not None, f"{name} not checked; checked: {sorted(checked)}\n{sanitized.stderr}"
        if name in with_smem:  # (instrumented, or proven race-free for its launch)
            assert k["shadow_bytes"] > 0 or k.get("proven"), k
    if script == "script_library":
        # cuBLAS cannot be instrumented: it must be listed as not checked, never silently.
        assert rep["not_checked"] or rep["other_launches"], rep
        if rep["other_launches"] is None:
            assert any("gemm" in r["kernel"].lower() for r in rep["not_checked"]), rep
            assert "not checked" in sanitized.stderr


def test_racy_rawkernel_is_reported_at_its_python_lines(tmp_path):
    out, sarif = tmp_path / "r.json", tmp_path / "r.sarif"
    r = _run("-m", "consan", "run", "--json", str(out), "--sarif", str(sarif), "script_racy.py")
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout == "done\n"
    rep = json.loads(out.read_text())
    assert {f["kind"] for f in rep["findings"]} == {"race.raw"}, r.stderr
    f = rep["findings"][0]
    cur, prev = f["sites"]["current"], f["sites"]["earlier"]
    assert Path(cur["file"]).name == "script_racy.py" and cur["line"] == _line("@read"), f
    assert Path(prev["file"]).name == "script_racy.py" and prev["line"] == _line("@write"), f
    assert f["kernel"] == "shift_left" and f["launched_from"]["line"] > _line("@read")
    assert "race.raw" in r.stderr and f"script_racy.py:{_line('@read')}" in r.stderr
    log = json.loads(sarif.read_text())
    res = log["runs"][0]["results"]
    assert [x["ruleId"] for x in res] == ["race.raw"]
    phys = res[0]["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"]["uri"] == "script_racy.py"
    assert phys["region"]["startLine"] == _line("@read")


def test_abort_stops_the_program_at_the_first_finding(tmp_path):
    out = tmp_path / "r.json"
    r = _run("-m", "consan", "run", "--on-violation", "abort", "--json", str(out),
             "script_racy.py")
    assert r.returncode == 1, r.stderr
    assert "done" not in r.stdout
    assert json.loads(out.read_text())["aborted"] is True


def test_suppressed_and_excluded_race_do_not_fail(tmp_path):
    supp = tmp_path / "accepted.txt"
    supp.write_text(f"race.raw  script_racy.py:{_line('@read')}   # known\n")
    out = tmp_path / "r.json"
    r = _run("-m", "consan", "run", "--suppressions", str(supp), "--json", str(out),
             "script_racy.py")
    assert r.returncode == 0, r.stderr
    rep = json.loads(out.read_text())
    assert [(f["kind"], f["sites"]["current"]["line"], f["sites"]["earlier"]["line"])
            for f in rep["findings"]] == [("race.raw", _line("@read"), _line("@write"))], rep
    assert rep["findings"][0]["suppressed_by"] and rep["ok"]
    assert "suppressed" in r.stderr
    r = _run("-m", "consan", "run", "--kernel-name-exclude", "shift", "script_racy.py")
    assert r.returncode == 0 and "skipped by --kernel-name-exclude" in r.stderr, r.stderr
    r = _run("-m", "consan", "run", "--kernel-name", "^shift_left$", "--launch-skip", "1",
             "script_racy.py")
    assert r.returncode == 0 and "skipped by --launch-skip" in r.stderr, r.stderr
