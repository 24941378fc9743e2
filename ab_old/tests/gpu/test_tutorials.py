"""The tutorials on a real GPU: `consan run` catches each seed story, and its `--fixed` is clean.

Each tutorial runs in a subprocess as a user would run it, from the repository root:
under `python -m consan run --json`, the buggy version must exit 1 with only the
findings its EXPECT names (kind, the line of the reported access, the line of the
earlier one, possibly through an inline chain), and `--fixed` must exit 0 with no
findings; natively the fixed version must compute the right result, and under `consan run`
the very bits of the native run: both runs go through tests/gpu_util.py's dump wrapper,
which saves what the tutorial's kernel wrote. The buggy version's output is not compared:
its race makes it timing-dependent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.gpu_util import ROOT, assert_same_dumps, dump_command, run_python

pytestmark = pytest.mark.gpu

TUTORIALS = ["tutorials/00_splitk_epilogue.py", "tutorials/01_multicast_flaky.py",
             "tutorials/02_tma_store_fence.py",
             "tutorials/03_smem_reuse_epilogue.py", "tutorials/04_wgmma_flush.py"]

# The fixed run of each tutorial: the function that returns what its kernel wrote, and the
# arguments. Split-K (00) adds its partial tiles into C with float atomicAdd in the order
# the CTAs get there, so with several splits two native runs may already differ in the last
# bits; the bitwise comparison runs it with one split (one atomicAdd onto 0.0 per element:
# exact), the same kernel code otherwise.
FIXED = {
    "tutorials/00_splitk_epilogue.py": ("splitk_matmul", ("--fixed", "--splits", "1")),
    "tutorials/01_multicast_flaky.py": ("scale_rows", ("--fixed", "--runs", "2")),
    "tutorials/02_tma_store_fence.py": ("epilogue", ("--fixed",)),
    "tutorials/03_smem_reuse_epilogue.py": ("matmul", ("--fixed",)),
    "tutorials/04_wgmma_flush.py": ("gemm", ("--fixed",)),
}


def _expect(script: str) -> dict:
    """The tutorial's EXPECT: kind, marker of the reported access, marker of the earlier one."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(Path(script).stem, ROOT / script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.EXPECT


def _run(*args: str, timeout: int = 600):
    return run_python(*args, cwd=ROOT, timeout=timeout)


def _line(script: str, marker: str) -> int:
    """The Python-file line of `// @marker` (consan maps CuPy source lines to the .py file)."""
    text = (ROOT / script).read_text().splitlines()
    hits = [i for i, t in enumerate(text, 1) if re.search(r"//\s*" + re.escape(marker) + r"\b", t)]
    assert len(hits) == 1, (script, marker, hits)
    return hits[0]


def _lines(site: dict | None) -> set[int]:
    """The line of a site and the lines of its inline chain (a helper's call sites)."""
    if not site or site.get("line") is None:
        return set()
    return {site["line"], *(c["line"] for c in site.get("inlined_at") or ())}


@pytest.mark.parametrize("script", TUTORIALS, ids=[Path(t).stem for t in TUTORIALS])
def test_consan_run_reports_the_story(script, tmp_path):
    exp = _expect(script)
    out = tmp_path / "report.json"
    r = _run("-m", "consan", "run", "--json", str(out), script)
    assert r.returncode == 1, r.stdout + r.stderr
    rep = json.loads(out.read_text())
    findings = rep["findings"]
    assert findings and {f["kind"] for f in findings} == {exp["kind"]}, r.stderr
    current, earlier = _line(script, exp["current"]), _line(script, exp["earlier"])
    name = Path(script).name
    for f in findings:
        cur, prev = f["sites"]["current"], f["sites"]["earlier"]
        assert Path(cur["file"]).name == name and current in _lines(cur), f
        assert prev is not None and Path(prev["file"]).name == name, f
        assert earlier in _lines(prev), f  # e.g. the copy issued by the prefetch line
    assert exp["kind"] in r.stderr and f"{name}:{current}" in r.stderr, r.stderr


@pytest.mark.parametrize("script", TUTORIALS, ids=[Path(t).stem for t in TUTORIALS])
def test_consan_run_fixed_is_clean_and_computes_the_native_bits(script, tmp_path):
    call, args = FIXED[script]
    native_dump, checked_dump = tmp_path / "native.npz", tmp_path / "checked.npz"
    fixed = _run(*dump_command(native_dump, script, *args, call=call))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "max |" in fixed.stdout and " ok" in fixed.stdout, fixed.stdout
    out = tmp_path / "report.json"
    r = _run("-m", "consan", "run", "--json", str(out),
             *dump_command(checked_dump, script, *args, call=call))
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads(out.read_text())
    assert rep["ok"] and not rep["findings"], r.stderr
    assert rep["launches_checked"] >= 1, rep
    assert all(not k["unmodeled"] for k in rep["kernels"]), rep["kernels"]
    assert " ok" in r.stdout, r.stdout  # the instrumented kernel computes the right product
    assert_same_dumps(native_dump, checked_dump, f"{script} {' '.join(args)}")


@pytest.mark.parametrize("script", TUTORIALS, ids=[Path(t).stem for t in TUTORIALS])
def test_buggy_version_runs_natively(script):
    # The buggy kernel is usually right natively, but the unused copy may land on the staged
    # output tile after the epilogue wrote it: a wrong result (exit 1) is the bug, not a failure.
    # (The fixed version runs natively in the test above.)
    buggy = _run(script)
    assert buggy.returncode in (0, 1), buggy.stdout + buggy.stderr
    assert "max |" in buggy.stdout, buggy.stdout + buggy.stderr
