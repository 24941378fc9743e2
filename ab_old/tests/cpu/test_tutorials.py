"""The tutorials without a GPU: they import, say how to run them, and instrument cleanly.

Each `tutorials/NN_*.py` exposes its kernel as `SOURCE`; its docstring gives the exact
`consan run` command and the finding kind; `consan instrument` on that source (buggy and
`-DFIXED`) must list its cp.async sites and nothing it does not model; and the source
string must be found verbatim in the script, so that consan's reports name its lines.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from consan import cli, cupy_build

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py"))
IDS = [p.stem for p in TUTORIALS]
# The cp.async stories (000, 003): their pipeline's sites are checked one by one below.
CP_ASYNC = [p for p in TUTORIALS if p.stem in ("00_splitk_epilogue", "03_smem_reuse_epilogue")]
CP_IDS = [p.stem for p in CP_ASYNC]


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"tutorial_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # `if __name__ == "__main__"` keeps main() from running
    return mod


def test_the_seed_tutorials_exist():
    assert {p.name for p in TUTORIALS} >= {"00_splitk_epilogue.py", "01_multicast_flaky.py",
                                           "02_tma_store_fence.py",
                                           "03_smem_reuse_epilogue.py", "04_wgmma_flush.py"}


@pytest.mark.parametrize("path", TUTORIALS, ids=IDS)
def test_tutorial_imports_and_documents_itself(path):
    mod = _load(path)
    assert isinstance(mod.SOURCE, str) and "-DFIXED" in (mod.__doc__ or "")
    doc = mod.__doc__ or ""
    assert f"consan run tutorials/{path.name}" in doc
    assert mod.EXPECT["kind"] in doc and "--fixed" in doc
    assert callable(mod.main)


@pytest.mark.parametrize("path", TUTORIALS, ids=IDS)
def test_markers_map_to_the_python_file(path):
    """consan names the .py line where the source string is written: markers must map there."""
    mod = _load(path)
    hit = cupy_build.find_source(mod.SOURCE, (str(path),))
    assert hit is not None and hit[0] == str(path)
    offset = hit[1]
    file_lines = path.read_text().splitlines()
    for marker in (mod.EXPECT["current"], mod.EXPECT["earlier"]):
        src_hits = [i for i, t in enumerate(mod.SOURCE.splitlines(), 1)
                    if re.search(r"//\s*" + re.escape(marker) + r"\b", t)]
        assert len(src_hits) == 1, (marker, src_hits)
        assert marker in file_lines[src_hits[0] + offset - 1]


def _rebuilt_sites(path: Path, fixed: bool):
    """What `consan run` rebuilds from the tutorial's RawKernel: (module, its located sites),
    all in the .py file, nothing unmodelled."""
    mod = _load(path)
    spec = cupy_build.CompileSpec(source=mod.SOURCE, options=("-DFIXED",) if fixed else (),
                                  arch="90", candidates=(str(path),))
    b, _ = cupy_build.build(spec)
    sites = [s for s in b.instrumented.sites.sites if s.loc is not None]
    assert {s.loc.file for s in sites} == {str(path)}
    assert not b.instrumented.unmodeled
    return mod, sites


@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
@pytest.mark.parametrize("path", TUTORIALS, ids=IDS)
def test_rebuilt_sites_name_both_marked_lines(path, fixed, fresh_cache):
    """Every tutorial: the two lines its report names are probed sites of the .py file."""
    mod, sites = _rebuilt_sites(path, fixed)
    seen = {s.loc.line for s in sites} | {c.line for s in sites for c in s.inlined_at}
    for marker in (mod.EXPECT["current"], mod.EXPECT["earlier"]):
        assert _line(path, marker) in seen, marker


@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
@pytest.mark.parametrize("path", CP_ASYNC, ids=CP_IDS)
def test_rebuilt_sites_name_the_epilogue_and_prefetch_lines(path, fixed, fresh_cache):
    """What `consan run` rebuilds from the RawKernel: the lines the GPU test expects."""
    _, sites = _rebuilt_sites(path, fixed)
    epilogue, prefetch = _line(path, "@epilogue"), _line(path, "@prefetch")
    # every shared-memory store of the kernel is the epilogue's
    assert {s.loc.line for s in sites if s.event == "access.write"} == {epilogue}
    # the prefetch copies are inlined from the prefetch line (the helper holds the asm)
    copies = [s for s in sites if s.event == "async.cp"]
    assert any(prefetch in {c.line for c in s.inlined_at} for s in copies)


def _line(path: Path, marker: str) -> int:
    hits = [i for i, t in enumerate(path.read_text().splitlines(), 1)
            if re.search(r"//\s*" + re.escape(marker) + r"\b", t)]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
@pytest.mark.parametrize("path", CP_ASYNC, ids=CP_IDS)
def test_consan_instrument_lists_the_async_copies(path, fixed, tmp_path, capsys):
    cu = tmp_path / f"{path.stem}.cu"
    cu.write_text(_load(path).SOURCE)
    assert cli.main(["instrument", str(cu), *(["-D", "FIXED"] if fixed else [])]) == 0
    out = capsys.readouterr().out
    sites = _site_counts(out)
    for event in ("async.cp", "async.commit", "async.wait", "access.write", "barrier.sync"):
        assert sites.get(event, 0) > 0, out
    assert "not modelled" not in out, out
    # the fix adds one wait (wait_group 0 or wait_all) to the main loop's one
    assert sites["async.wait"] + sites.get("async.wait_all", 0) == (2 if fixed else 1), out


def _site_counts(table: str) -> dict[str, int]:
    """event -> sites from the `consan instrument` table (one kernel per tutorial)."""
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"\b((?:access|async|barrier)\.\w+)\W+(\d+)", table)}


@pytest.mark.no_gpu
def test_consan_run_without_a_gpu_exits_2(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert cli.main(["run", "tutorials/00_splitk_epilogue.py"]) == 2
    err = capsys.readouterr().err
    assert "the program needs a CUDA GPU and none is usable here" in err
    assert "Traceback" not in err
