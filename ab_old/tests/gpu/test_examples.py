"""The README's `consan check` example on a real GPU: the racy reduction is reported at
its line, the fixed one is clean."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gpu_util import line_of

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "reduce_race.cu"
ARGS = ["--kernel", "block_sum", "--grid", "1024", "--block", "256", "--arg", "f32[262144]",
        "--arg", "f32[1024]=0"]


@pytest.mark.parametrize("fixed", [False, True], ids=["racy", "fixed"])
def test_reduce_race_example(fixed, tmp_path):
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "consan", "check", str(EXAMPLE), *ARGS,
                        *(["-D", "FIXED"] if fixed else []), "--json", str(out)],
                       capture_output=True, text=True, env=env, timeout=300)
    rep = json.loads(out.read_text())
    if fixed:
        assert r.returncode == 0 and rep["ok"], r.stdout + r.stderr
        return
    assert r.returncode == 1, r.stdout + r.stderr
    line = line_of(EXAMPLE.read_text(), "race.raw:")
    found = {(f["kind"], f["sites"]["current"]["line"]) for f in rep["findings"]}
    assert found == {("race.raw", line)}, r.stdout
