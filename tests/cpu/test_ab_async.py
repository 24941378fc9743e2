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
    rows = [{{"kernel": k, "native_ms": 0.02, "consan_ms": {ms}, **{dev}}}
            for k in (a.only or "ring,gemm").split(",")]
    json.dump({{"rows": rows, "errors": {errors}, "gpu": "fake"}}, open(a.json, "w"))
    print("bench ran")
    raise SystemExit(1 if {errors} else 0)
""")


def _tree(root, name: str, ms: float, errors: list[str] | None = None,
          dev: float | None = None) -> str:
    path = os.path.join(root, name)
    os.makedirs(os.path.join(path, "benchmarks"))
    cols = {} if dev is None else {"dev_native_ms": 0.01, "dev_consan_ms": dev}
    with open(os.path.join(path, "benchmarks", "bench_async.py"), "w") as f:
        f.write(FAKE_BENCH.format(ms=ms, errors=repr(errors or []), dev=repr(cols)))
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


def test_run_compares_the_devices_time_alone_where_bench_async_has_it(tmp_path, capsys,
                                                                     monkeypatch):
    _tree(tmp_path, "old", 0.4, dev=0.2), _tree(tmp_path, "new", 0.3, dev=0.1)
    monkeypatch.chdir(tmp_path)  # (trees named relative to here: each child runs in its own)
    out_json = tmp_path / "ab.json"
    rc = ab_async.run("ring", 1, 60, str(out_json), old="old", new="new")
    out = capsys.readouterr().out
    assert rc == 0
    assert "kernel | old dev consan ms (rounds)" in out
    assert "ring | 0.200 | 0.100 | 0.200 | 0.100 | 0.500" in out
    assert json.loads(out_json.read_text())["dev_rows"][0]["new"] == [0.1]


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


# A breakdown_async.py --profile output as it prints it (rows of two kernels, and lines
# that are not rows).
PROFILE_OUT = textwrap.dedent("""\
    [tma_ring_4stage]
    granules walked by copies: 0 (the rest: stores only)
    probe | calls per CTA | kcycles per CTA | cycles per call
    tensor | 16.0 | 244.4 | {tensor}
    (tensor: map lookup) | 16.0 | 18.8 | 1173
    report: consan: no violations in kernel tma_ring
    [tma_wgmma_gemm]
    probe | calls per CTA | kcycles per CTA | cycles per call
    wgmma | 256.0 | 628.1 | 2454
""")


def _profiled_tree(root, name: str, ms: float, tensor: int | None) -> str:
    path = _tree(root, name, ms)
    text = PROFILE_OUT.format(tensor=tensor) if tensor is not None else "no GPU here\n"
    with open(os.path.join(path, "benchmarks", "breakdown_async.py"), "w") as f:
        f.write(f"import sys\nassert '--profile' in sys.argv\nprint({text!r}, end='')\n")
    return path


def test_parse_profile_takes_each_kernels_rows():
    prof = ab_async.parse_profile(PROFILE_OUT.format(tensor=15277))
    assert prof == {"tma_ring_4stage": {"tensor": (16.0, 15277.0),
                                        "(tensor: map lookup)": (16.0, 1173.0)},
                    "tma_wgmma_gemm": {"wgmma": (256.0, 2454.0)}}


def test_parse_profile_takes_a_cluster_kernels_rows_by_rank():
    out = ("[dsmem_ring_2cta]\n"
           "probe | calls per CTA | kcycles per CTA | cycles per call | even ranks: kcycles "
           "per CTA | odd ranks: kcycles per CTA\n"
           "bulk | 256.0 | 3976.3 | 15532 | 7952.6 | 0.0\n"
           "(drain: a peer's copy) | 51.7 | 1178.3 | 22790 | 0.0 | 2356.5\n")
    assert ab_async.parse_profile(out) == {
        "dsmem_ring_2cta": {"bulk": (256.0, 15532.0), "(drain: a peer's copy)": (51.7, 22790.0)}}


def test_run_with_profile_prints_both_trees_cycles_side_by_side(tmp_path, capsys):
    old = _profiled_tree(tmp_path, "old", 0.4, tensor=15000)
    new = _profiled_tree(tmp_path, "new", 0.3, tensor=12000)
    out_json = tmp_path / "ab.json"
    rc = ab_async.run("ring", 1, 60, str(out_json), old=old, new=new, profile=True)
    out = capsys.readouterr().out
    assert rc == 0
    assert "tma_ring_4stage | tensor | 16.0 / 16.0 | 15000 / 12000 | 0.800" in out
    assert "tma_wgmma_gemm | wgmma | 256.0 / 256.0 | 2454 / 2454 | 1.000" in out
    prof = json.loads(out_json.read_text())["profiles"]
    assert prof["new"]["tma_ring_4stage"]["tensor"] == [16.0, 12000.0]


def test_a_profile_with_no_rows_fails_the_run_and_shows_its_output(tmp_path, capsys):
    old = _profiled_tree(tmp_path, "old", 0.4, tensor=15000)
    new = _profiled_tree(tmp_path, "new", 0.3, tensor=None)
    rc = ab_async.run("ring", 1, 60, None, old=old, new=new, profile=True)
    out = capsys.readouterr().out
    assert rc == 1
    assert "ERROR: new tree: breakdown_async.py --profile printed no probe row" in out
    assert "no GPU here" in out
    assert "tma_ring_4stage | tensor | 16.0 / 0.0 | 15000 / 0 | -" in out


def test_a_tree_whose_runs_timed_out_twice_in_a_row_is_not_run_again(tmp_path, capsys):
    """A kernel that hangs hangs in every round: after two stops in a row (one may be a
    first run's checker build) the tree's later rounds are errors without a run, not
    another wait of the whole timeout each."""
    old = _tree(tmp_path, "old", 0.4)
    new = os.path.join(tmp_path, "new")
    os.makedirs(os.path.join(new, "benchmarks"))
    runs = tmp_path / "runs"
    with open(os.path.join(new, "benchmarks", "bench_async.py"), "w") as f:
        f.write(f"import time\nopen({str(runs)!r}, 'a').write('x')\ntime.sleep(60)\n")
    rc = ab_async.run(None, 4, 3, None, old=old, new=new)
    out = capsys.readouterr().out
    assert rc == 1
    assert runs.read_text() == "xx"
    assert "round 1 old: ring 0.400" in out and "round 4 old: ring 0.400" in out
    for k in (1, 2):
        assert f"ERROR: round {k}, new tree: bench_async gave no ratio" in out
    assert "timed out after 3 s" in out
    for k in (3, 4):
        assert f"ERROR: round {k}, new tree: not run, its runs timed out in two rounds" in out


def test_a_tree_stopped_once_runs_again(tmp_path, capsys):
    """One stop (a first run's checker build on a fresh machine, say) does not end a tree's
    rounds: its next run counts."""
    old = _tree(tmp_path, "old", 0.4)
    new = _tree(tmp_path, "new", 0.3)
    slow = tmp_path / "slow-once"
    path = os.path.join(new, "benchmarks", "bench_async.py")
    body = open(path).read()
    with open(path, "w") as f:
        f.write(f"import os, time\nif not os.path.exists({str(slow)!r}):\n"
                f"    open({str(slow)!r}, 'w').close()\n    time.sleep(60)\n" + body)
    rc = ab_async.run(None, 3, 3, None, old=old, new=new)
    out = capsys.readouterr().out
    assert rc == 1  # (round 1's stop is still an error)
    assert "ERROR: round 1, new tree: bench_async gave no ratio" in out
    assert "round 2 new: ring 0.300" in out and "round 3 new: ring 0.300" in out


def test_run_alone_makes_a_process_a_kernel(tmp_path, capsys):
    """--alone: each kernel of --only run by itself, the rows joined into one round."""
    old, new = _tree(tmp_path, "old", 0.4), _tree(tmp_path, "new", 0.2)
    out_json = tmp_path / "ab.json"
    rc = ab_async.run("ring,gemm", 2, 60, str(out_json), old=old, new=new, alone=True)
    out = capsys.readouterr().out
    assert rc == 0
    assert "ring | 0.400 / 0.400 | 0.200 / 0.200 | 0.400 | 0.200 | 0.500" in out
    assert "gemm | 0.400 / 0.400 | 0.200 / 0.200 | 0.400 | 0.200 | 0.500" in out
    assert len(json.loads(out_json.read_text())["rows"]) == 2


def test_run_alone_gives_each_process_one_kernel(tmp_path, monkeypatch):
    calls: list[tuple[str, str | None]] = []

    def fake_round(tree, only, timeout, extra=None):
        calls.append((os.path.basename(tree), only))
        return {"rows": [{"kernel": k, "consan_ms": 0.1, "native_ms": 0.01}
                         for k in only.split(",")], "errors": [], "gpu": "fake"}, ""

    monkeypatch.setattr(ab_async, "_round", fake_round)
    old, new = _tree(tmp_path, "old", 0.4), _tree(tmp_path, "new", 0.2)
    assert ab_async.run("ring,gemm", 1, 60, None, old=old, new=new, alone=True) == 0
    assert calls == [("old", "ring"), ("old", "gemm"), ("new", "ring"), ("new", "gemm")]
    calls.clear()
    assert ab_async.run("ring,gemm", 1, 60, None, old=old, new=new) == 0
    assert calls == [("old", "ring,gemm"), ("new", "ring,gemm")]


def test_run_alone_needs_the_kernels(tmp_path, capsys):
    old, new = _tree(tmp_path, "old", 0.4), _tree(tmp_path, "new", 0.2)
    assert ab_async.run(None, 1, 60, None, old=old, new=new, alone=True) == 2
    assert "--alone needs --only" in capsys.readouterr().err
