"""Wall time of named host stages per launch, without a profiler's own cost per Python call.

cProfile of 200 Triton softmax launches under a session spread consan's 0.46 ms a call
(above the native launch) over many functions of a few microseconds each, its own cost per
call being of the same order. This wraps a chosen few methods or module functions with a
`time.perf_counter` pair each (about a microsecond) and restores them afterwards:

    with StageTimer([("Prepared.report", runtime.Prepared, "report"), ...]) as t:
        ... run N launches ...
    print(t.table(N))
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Sequence
from typing import Any

Stage = tuple[str, Any, str]  # (label, the class or module that holds it, its attribute name)


class StageTimer:
    """Times each stage's calls (nested stages count inside their callers)."""

    def __init__(self, stages: Sequence[Stage]) -> None:
        self.stages = list(stages)
        self.seconds: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self._saved: list[tuple[Any, str, Any]] = []

    def _timed(self, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[label] += time.perf_counter() - t0
                self.calls[label] += 1
        return timed

    def __enter__(self) -> StageTimer:
        for label, owner, attr in self.stages:
            raw = vars(owner)[attr]  # (a class's own entry: a function, classmethod, ...)
            self._saved.append((owner, attr, raw))
            if isinstance(raw, classmethod):
                wrapped: Any = staticmethod(self._timed(label, getattr(owner, attr)))
            elif isinstance(raw, staticmethod):
                wrapped = staticmethod(self._timed(label, raw.__func__))
            else:  # a plain function: a method of a class, or a module's function
                wrapped = self._timed(label, raw)
            setattr(owner, attr, wrapped)
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, attr, raw in reversed(self._saved):
            setattr(owner, attr, raw)
        self._saved.clear()

    def table(self, launches: int) -> str:
        """One line per stage: calls per launch and microseconds per launch."""
        lines = ["stage | calls per launch | us per launch"]
        for label, _, _ in self.stages:
            n = self.calls[label]
            us = self.seconds[label] / launches * 1e6 if launches else 0.0
            lines.append(f"{label} | {n / launches if launches else 0:.2f} | {us:.1f}")
        return "\n".join(lines)
