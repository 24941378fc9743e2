"""The host-stage timer of bench_triton.py --host-profile (benchmarks/host_stages.py): each
stage's calls counted and timed, nested ones inside their callers, everything restored."""

from __future__ import annotations

import sys
import time
import types

from benchmarks.host_stages import StageTimer


class _Work:
    def run(self, n: int) -> int:
        return sum(self.step(i) for i in range(n)) + self.made(n) + self.fixed(n)

    def step(self, i: int) -> int:
        time.sleep(0.001)
        return i

    @classmethod
    def made(cls, n: int) -> int:
        return n

    @staticmethod
    def fixed(n: int) -> int:
        return 2 * n


def test_each_stage_is_counted_and_timed_and_restored_after():
    mod = types.ModuleType("stand_in")
    mod.twice = lambda x: 2 * x
    before = dict(vars(_Work)), mod.twice
    stages = [("run", _Work, "run"), ("  step", _Work, "step"), ("  made", _Work, "made"),
              ("  fixed", _Work, "fixed"), ("module function", mod, "twice")]
    with StageTimer(stages) as t:
        w = _Work()
        for _ in range(4):
            assert w.run(3) == 0 + 1 + 2 + 3 + 6
            assert mod.twice(5) == 10
    assert t.calls == {"run": 4, "  step": 12, "  made": 4, "  fixed": 4, "module function": 4}
    assert t.seconds["run"] >= t.seconds["  step"] >= 0.012
    lines = t.table(4).splitlines()
    assert lines[0] == "stage | calls per launch | us per launch"
    assert lines[2].startswith("  step | 3.00 | ")
    assert float(lines[2].split(" | ")[2]) >= 3000  # three 1 ms steps a launch
    assert dict(vars(_Work)) == before[0] and mod.twice is before[1]
    assert _Work().run(1) == 0 + 1 + 2


def test_bench_triton_names_stages_that_exist():
    sys.modules.pop("benchmarks.bench_triton", None)
    from benchmarks import bench_triton

    stages = bench_triton._host_stages()
    with StageTimer(stages):
        pass
    for _, owner, attr in stages:
        assert callable(getattr(owner, attr))
