"""What `consan run` pays for a CuPy kernel: its launches through a consan session, as the
CuPy hook takes them (proven before launch and run natively, or instrumented, with the
log read back after each launch), timed beside the native launch.

`consan.prepare` (the benchmarks' first consan column) instruments every kernel; a user
running `consan run` gets the proof where it holds, so this column is the one a CI job
pays. A row is only timed when the session's report is clean and the session's output has
the native bits (benchmarks/verdict.py).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from benchmarks import verdict

RATIO_KEYS = ("run_x",)


def time_session(*a, **kw) -> dict[str, Any]:
    """_time_session, or the row's error where the session's path raised."""
    try:
        return _time_session(*a, **kw)
    except Exception as exc:  # noqa: BLE001 - a row that cannot be timed says why
        return {"run_error": f"{type(exc).__name__}: {exc}"}


def _time_session(cp, source: str, name: str, grid: tuple, block: tuple,
                 make_args: Callable[[Any], tuple[tuple, list]], native_out: Sequence[np.ndarray],
                 native_ms: float, options: Sequence[str], shared_mem: int = 0,
                 warmup: int = 1, repeats: int = 5) -> dict[str, Any]:
    """{run_ms, run_x, run_path, run_clean, run_same_bits[, run_error]} for `name`: the
    launches' CUDA-event times (the hook's host path and read-back inside the events)."""
    from benchmarks.bench_clean import _time
    from consan import frontends, session

    s = session.Session(session.Options(count_other_launches=False), print_findings=False)
    with frontends.sanitizing(s):
        # (a source text of its own: CuPy keeps one module per text, and one compiled
        # before the session would not be checked)
        kern = cp.RawKernel(source + "\n// consan run\n", name, options=tuple(options))
        args, outs = make_args(cp)
        kern(grid, block, args, shared_mem=shared_mem)
        cp.cuda.get_current_stream().synchronize()
        same = verdict.same_bits(native_out, [o.get() for o in outs])
        times = _time(cp, lambda: kern(grid, block, args, shared_mem=shared_mem),
                      lambda: None, warmup, repeats)
        s.settle()
    stats = s.report.kernels.get(name)
    ms = statistics.median(times)
    row: dict[str, Any] = {
        "run_ms": ms, "run_x": ms / native_ms if native_ms > 0 else float("inf"),
        "run_path": "proven" if stats is not None and stats.proven else "instrumented",
        "run_clean": s.report.ok and stats is not None and
        stats.launches_checked == 1 + warmup + repeats,
        "run_same_bits": same}
    why = []
    if not row["run_clean"]:
        why.append("the session did not check every launch clean")
    if not same:
        why.append("the output under the session differs from native")
    if why:
        row["run_error"] = "; ".join(why)
        row.pop("run_x")
    return row


def cell(row: dict[str, Any]) -> str:
    """`1.0 (proven)` / `17.4 (instrumented)`, or ERROR."""
    return f"{row['run_x']:.1f} ({row['run_path']})" if "run_x" in row else "ERROR"


def errors(rows: Sequence[dict[str, Any]]) -> list[str]:
    return [f"ERROR: {r['kernel']}: consan run: {r['run_error']} (no ratio reported)"
            for r in rows if "run_error" in r]
