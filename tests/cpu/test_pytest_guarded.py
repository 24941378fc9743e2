"""benchmarks/pytest_guarded.py: a test that never finishes costs that test, not the run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GUARD = Path(__file__).resolve().parents[2] / "benchmarks" / "pytest_guarded.py"


def test_a_hung_test_is_killed_named_and_the_rest_still_run(tmp_path):
    (tmp_path / "test_k.py").write_text(
        "import time\n"
        "def test_a(): pass\n"
        "def test_b(): time.sleep(120)\n"
        "def test_c(): assert False\n"
        "def test_d(): pass\n")
    got = subprocess.run([sys.executable, str(GUARD), "--hang", "2", "--", "test_k.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=100)
    assert got.returncode == 1
    assert "test_k.py::test_b  HUNG" in got.stdout
    assert got.stdout.rstrip().splitlines()[-1] == \
        "guarded: 1 failed, 2 passed, 1 hung (test_k.py::test_b)"
