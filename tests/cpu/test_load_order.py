"""benchmarks/load_order.py: a kernel's time alone and after other kernels, without a GPU."""

from __future__ import annotations

import pytest

from benchmarks import load_order


def test_each_round_runs_the_kernel_alone_then_after_each_other_kernel(monkeypatch, capsys):
    runs: list[str] = []

    def fake(only: str, kernel: str) -> float:
        runs.append(only)
        return 0.125 if only == kernel else 0.130

    monkeypatch.setattr(load_order, "dev_ms", fake)
    assert load_order.main(["--kernel", "ring", "--before", "mma,x", "--rounds", "2"]) == 0
    assert runs == ["ring", "mma,ring", "x,ring"] * 2
    out = capsys.readouterr().out
    assert "ring alone: 0.1250 / 0.1250, median 0.1250" in out
    assert "ring after mma: 0.1300 / 0.1300, median 0.1300" in out


def test_a_run_without_the_kernels_row_says_what_bench_async_printed(monkeypatch, tmp_path):
    class Res:
        returncode = 1
        stdout = "consan output differs from native"
        stderr = ""

    monkeypatch.setattr(load_order.subprocess, "run", lambda *a, **k: Res())
    with pytest.raises(SystemExit, match="(?s)gave no dev time for ring .exit 1.*differs"):
        load_order.dev_ms("ring", "ring")
