"""benchmarks/ab_async.py: an older tree beside this one, without a GPU (fake bench trees)."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from benchmarks import ab_async

FAKE_BENCH = textwrap.dedent("""
    import argparse, json
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-racecheck", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--only")
    a = ap.parse_args()
    rows = [{{"kernel": k, "native_ms": 0.02, "consan_ms": {ms}}}
            for k in (a.only or "ring,gemm").split(",")]
    json.dump({{"rows": rows, "errors": {errors}, "gpu": "fake"}}, open(a.json, "w"))
    print("bench ran")
    raise SystemExit(1 if {errors} else 0)
""")


def _tree(root, name: str, ms: float, errors: list[str] | None = None) -> str:
    path = os.path.join(root, name)
    os.makedirs(os.path.join(path, "benchmarks"))
    with open(os.path.join(path, "benchmarks", "bench_async.py"), "w") as f:
        f.write(FAKE_BENCH.format(ms=ms, errors=repr(errors or [])))
    return path


def test_prepare_writes_the_commits_tree(tmp_path):
    dest = ab_async.prepare("HEAD", str(tmp_path / "old"))
    assert os.path.isfile(os.path.join(dest, "benchmarks", "bench_async.py"))
    assert not os.path.exists(os.path.join(dest, ".git"))


def test_prepare_names_a_ref_git_does_not_know(tmp_path):
    with pytest.raises(SystemExit, match="git archive no-such-ref"):
        ab_async.prepare("no-such-ref", str(tmp_path / "old"))


def test_run_prints_both_trees_rounds_and_the_ratio(tmp_path, capsys):
    old, new = _tree(tmp_path, "old", 0.4), _tree(tmp_path, "new", 0.3)
    out_json = tmp_path / "ab.json"
    rc = ab_async.run("ring", 2, 60, str(out_json), old=old, new=new)
    out = capsys.readouterr().out
    assert rc == 0
    assert "ring | 0.400 / 0.400 | 0.300 / 0.300 | 0.400 | 0.300 | 0.750" in out
    row = json.loads(out_json.read_text())["rows"][0]
    assert row["old"] == [0.4, 0.4] and row["new"] == [0.3, 0.3]


def test_a_round_without_a_ratio_fails_the_run_and_shows_its_output(tmp_path, capsys):
    old = _tree(tmp_path, "old", 0.4)
    new = _tree(tmp_path, "new", 0.3, errors=["ring: consan output differs from native"])
    rc = ab_async.run(None, 1, 60, None, old=old, new=new)
    out = capsys.readouterr().out
    assert rc == 1
    assert "ERROR: round 1, new tree" in out and "bench ran" in out
    assert "ring | 0.400 | - | - | - | -" in out


def test_run_without_an_older_tree_says_how_to_make_one(tmp_path, capsys):
    rc = ab_async.run(None, 1, 60, None, old=str(tmp_path / "missing"), new=str(tmp_path))
    assert rc == 2
    assert "ab_async.py prepare" in capsys.readouterr().err
