"""Whether a benchmark row's ratio can be stood behind.

A slowdown means something only when consan checked the kernel and left it alone: every
instrumented launch of the row reported clean, and the instrumented launch wrote the very
bits the native one did (NaN payloads and -0.0 included). A row that fails either check
gets no ratio, says why, and makes the benchmark exit non-zero; both checks go into the
JSON as `consan_clean` and `same_bits`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

RATIO_KEYS = ("slowdown", "consan_x", "consan_user_x", "dev_x")


def same_bits(native: Sequence[np.ndarray], checked: Sequence[np.ndarray]) -> bool:
    """Every output holds the same dtype, shape and bytes in both runs."""
    if len(native) != len(checked):
        return False
    return all(a.dtype == b.dtype and a.shape == b.shape
               and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
               for a, b in zip(native, checked, strict=True))


def judge(row: dict[str, Any], reports: Iterable[Any], same: bool) -> bool:
    """Record both checks in `row`; a failed row loses its ratios and gains `error`."""
    reports = list(reports)
    bad = [r for r in reports if not r.ok]
    row["consan_clean"] = bool(reports) and not bad
    row["same_bits"] = same
    why = []
    if not same:
        why.append("the output under consan differs from native")
    if not reports:
        why.append("no instrumented launch was read back")
    elif bad:
        kinds = sorted({v.kind for v in bad[0].violations}) or ["a launch that is not ok"]
        why.append(f"consan reported {', '.join(kinds)} in {len(bad)} of {len(reports)} "
                   "launches of a clean kernel")
    if why:
        row["error"] = "; ".join(why)
        for k in RATIO_KEYS:
            row.pop(k, None)
    return not why


def cell(row: dict[str, Any], key: str, fmt: str = "{:.1f}") -> str:
    """A ratio's table cell: the number, or ERROR for a row that has none."""
    return fmt.format(row[key]) if key in row else "ERROR"


def errors(rows: Iterable[dict[str, Any]]) -> list[str]:
    """One line per failed row, to print last."""
    return [f"ERROR: {r['kernel']}: {r['error']} (no ratio reported)" for r in rows
            if "error" in r]
