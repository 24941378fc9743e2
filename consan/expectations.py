"""`consan.expect(kind, where=...)`: assert that a known race is still caught.

A regression test for a race (or for consan itself) must fail when the race
stops being reported, not only when a new one appears. Inside the block,
matching findings are expected (they do not fail the test); at the end of
the block at least one must have been found. Outside any session (no
`consan` fixture, no `consan run`) the block sanitizes its own launches.
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import Iterator

from instrument import abi
from reports.suppress import parse_location

from . import hook
from .errors import NoGPUError


@contextlib.contextmanager
def expect(kind: str, where: str | None = None) -> Iterator[hook.Expectation]:
    """Expect a finding of `kind` (an id or glob) at `where` (FILE[:LINE[-LINE]]) in the block."""
    __tracebackhide__ = True  # pytest: the failure is the user's block, not this frame
    if not any(fnmatch.fnmatchcase(k.id, kind) for k in abi.KINDS if k.is_violation):
        raise ValueError(f"consan.expect: {kind!r} matches no finding kind; kinds are: "
                         + ", ".join(abi.VIOLATION_KINDS))
    exp = hook.Expectation(kind, parse_location(where) if where else None)
    session = hook.current_session()
    with contextlib.ExitStack() as stack:
        if session is None:
            from .runtime import gpu_available

            if not gpu_available():
                raise NoGPUError("consan.expect needs a CUDA GPU to run the kernels it checks, "
                                 "and none is usable here")
            session = stack.enter_context(hook.sanitizing(hook.Session(print_findings=False)))
        before = _counts(session)
        session.expectations.append(exp)
        try:
            yield exp
        finally:
            session.expectations.remove(exp)
        if exp.hits == 0:
            raise AssertionError(_missing(exp, session, before))


def _counts(session: hook.Session) -> tuple[int, int, int]:
    rep = session.report
    return (rep.launches_checked, len(rep.findings), sum(r["launches"] for r in rep.not_checked))


def _missing(exp: hook.Expectation, session: hook.Session, before: tuple[int, int, int]) -> str:
    checked, nfind, unchecked = (a - b for a, b in zip(_counts(session), before, strict=True))
    lines = [f"consan.expect({exp}): no such finding in this block "
             f"({checked} launch{'' if checked == 1 else 'es'} checked)."]
    for f in session.report.findings[len(session.report.findings) - nfind:]:
        cur = (f.get("sites") or {}).get("current") or {}
        lines.append(f"  found instead: {f['kind']} in {f.get('kernel')} at "
                     f"{cur.get('where', 'unknown site')}")
    if unchecked:
        lines.append(f"  {unchecked} launch(es) in the block were not checked:")
        for r in session.report.not_checked:
            lines.append(f"    {r['kernel']}: {r['reason']}")
    return "\n".join(lines)
