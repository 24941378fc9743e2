"""The benchmarks' verdict (benchmarks/verdict.py): a ratio is reported only for a row whose
checked launches were all clean and whose output is the native one bit for bit."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from benchmarks import verdict


def _rep(*kinds: str) -> SimpleNamespace:
    return SimpleNamespace(ok=not kinds, violations=[SimpleNamespace(kind=k) for k in kinds])


def test_same_bits_sees_one_bit_a_nan_payload_and_the_sign_of_zero():
    a = np.array([1.0, np.nan, 0.0], dtype=np.float32)
    assert verdict.same_bits([a], [a.copy()])
    flipped = a.copy()
    flipped.view(np.uint32)[0] ^= 1
    other_nan = a.copy()
    other_nan.view(np.uint32)[1] ^= 1  # still a NaN, another payload
    neg = a.copy()
    neg[2] = -0.0
    for b in (flipped, other_nan, neg):
        assert not verdict.same_bits([a], [b])
    assert not verdict.same_bits([a], [a.astype(np.float64)])
    assert not verdict.same_bits([a], [a, a])


def test_a_clean_bit_exact_row_keeps_its_ratios():
    row = {"kernel": "k", "slowdown": 3.0, "consan_user_x": 4.0}
    assert verdict.judge(row, [_rep(), _rep()], same=True)
    assert row["consan_clean"] and row["same_bits"] and "error" not in row
    assert verdict.cell(row, "slowdown") == "3.0" and verdict.errors([row]) == []


def test_a_row_with_findings_or_other_bits_loses_its_ratios_and_says_why():
    racy = {"kernel": "k", "slowdown": 3.0, "consan_x": 3.0, "dev_x": 5.0}
    assert not verdict.judge(racy, [_rep(), _rep("race.raw", "uninit.read")], same=True)
    assert "slowdown" not in racy and "consan_x" not in racy and "dev_x" not in racy
    assert racy["consan_clean"] is False and racy["same_bits"] is True
    assert "race.raw, uninit.read in 1 of 2 launches" in racy["error"]
    assert verdict.cell(racy, "slowdown") == "ERROR"

    differs = {"kernel": "g", "consan_x": 2.0}
    assert not verdict.judge(differs, [_rep()], same=False)
    assert differs["same_bits"] is False and "differs from native" in differs["error"]
    assert verdict.errors([racy, differs]) == [
        f"ERROR: k: {racy['error']} (no ratio reported)",
        f"ERROR: g: {differs['error']} (no ratio reported)"]


def test_a_row_nothing_was_read_back_for_is_no_clean_row():
    row = {"kernel": "k", "slowdown": 1.0}
    assert not verdict.judge(row, [], same=True)
    assert row["consan_clean"] is False and "no instrumented launch" in row["error"]


def test_the_consan_run_column_names_its_path_and_a_row_it_cannot_time_is_an_error(
        clean_hook):
    from benchmarks import session_path

    assert session_path.cell({"run_x": 1.04, "run_path": "proven"}) == "1.0 (proven)"
    got = session_path.time_session(None, "", "k", (1, 1, 1), (32, 1, 1), lambda cp: ((), []),
                                    [], 1.0, ())
    assert "run_x" not in got and got["run_error"]
    assert session_path.cell(got) == "ERROR"
    (line,) = session_path.errors([{"kernel": "k", **got}])
    assert line.startswith("ERROR: k: consan run: ") and line.endswith("(no ratio reported)")


def test_the_scaling_fit_splits_a_fixed_cost_from_a_cost_a_trip():
    from benchmarks.scaling_async import _fit

    fixed, per = _fit([4, 8, 16, 32], [0.05 + 0.01 * n for n in (4, 8, 16, 32)])
    assert abs(fixed - 0.05) < 1e-12 and abs(per - 0.01) < 1e-12
