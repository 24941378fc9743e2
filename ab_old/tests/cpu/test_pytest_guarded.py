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


def test_a_failure_before_a_hang_keeps_its_report(tmp_path):
    """The session that hangs is killed before its summary: the failure's reason must
    have been written when it failed."""
    (tmp_path / "test_k.py").write_text(
        "import time\n"
        "def test_a(): assert 1 + 1 == 3, 'arithmetic is off'\n"
        "def test_b(): time.sleep(120)\n")
    got = subprocess.run([sys.executable, str(GUARD), "--hang", "2", "--", "test_k.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=100)
    out = got.stdout
    assert "--- test_k.py::test_a failed (call):" in out
    assert "arithmetic is off" in out
    assert out.index("arithmetic is off") < out.index("test_k.py::test_b  HUNG")
    assert out.rstrip().splitlines()[-1] == "guarded: 1 failed, 1 hung (test_k.py::test_b)"
