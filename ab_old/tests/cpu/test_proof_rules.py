"""Rule 1 of the proof (instrument/proof_rules.py) across the runs of one proof: an interval
another run found clean is not judged again, and nothing else is taken from that run."""

from __future__ import annotations

import numpy as np
import pytest

from instrument.proof_rules import Access, Refused, _conflicts


def _acc(interval: int, warp: int, byte: int, write: bool, line: int, seq: int) -> Access:
    one = np.ones(1, dtype=bool)
    return Access(interval, np.array([32 * warp]), np.array([warp]), np.array([byte]), 4,
                  write, one, one.copy(), line, seq)


def _run(second_read_at: int) -> list[Access]:
    """Two intervals: in each, warp 0 writes byte 0 and warp 1 reads `second_read_at` in
    the second (byte 4 in the first)."""
    return [_acc(0, 0, 0, True, 10, 1), _acc(0, 1, 4, False, 11, 2),
            _acc(1, 0, 0, True, 20, 3), _acc(1, 1, second_read_at, False, 21, 4)]


def _verdict(accesses: list[Access], clean: set[bytes] | None) -> str | None:
    try:
        _conflicts(accesses, 4, None, clean)
    except Refused as why:
        return str(why)
    return None


def test_an_interval_judged_clean_in_another_run_is_skipped_and_a_new_race_is_not():
    clean: set[bytes] = set()
    assert _verdict(_run(8), clean) is None
    assert len(clean) == 2  # (one digest an interval)
    assert _verdict(_run(8), clean) is None and len(clean) == 2  # (the same run: all skipped)
    # the first interval as before, the second racy: judged, refused as without the digests
    racy = _verdict(_run(0), clean)
    assert racy == _verdict(_run(0), None) and "lines 20, 21" in racy, racy
    assert len(clean) == 2  # (a refused run adds nothing)


@pytest.mark.parametrize("change", ["seq", "warp", "write"])
def test_an_interval_differing_in_any_judged_column_is_judged_again(change):
    """Every column rule 1 looks at is in an interval's digest: the same bytes by other
    steps, another warp, or a write in place of a read make another digest."""
    clean: set[bytes] = set()
    base = _run(8)
    assert _verdict(base, clean) is None
    other = _run(8)
    a = other[3]
    if change == "seq":
        other[3] = _acc(1, 1, 8, False, 21, 5)
    elif change == "warp":
        other[3] = _acc(1, 2, 8, False, 21, a.seq)
    else:
        other[3] = _acc(1, 1, 8, True, 21, a.seq)
    assert _verdict(other, clean) is None
    assert len(clean) == 3


def test_steps_too_large_to_pack_sort_the_same():
    """Rows whose steps would overflow the packed sort column are sorted on their columns
    one by one: the same verdicts."""
    far = 1 << 40
    def shifted(run: list[Access]) -> list[Access]:
        return [_acc(a.interval, int(a.warp[0]), int(a.start[0]), a.write, a.line, a.seq + far)
                for a in run]
    assert _verdict(shifted(_run(8)), None) is None
    assert _verdict(shifted(_run(0)), None) == _verdict(_run(0), None)
