"""`consan.expect(kind, where=...)`: assert that a known race is still caught.

A regression test for a race (or for consan itself) must fail when the race
stops being reported, not only when a new one appears. Inside the block,
matching findings are expected (they do not fail the test); at the end of
the block at least one must have been found. Outside any session (no
`consan` fixture, no `consan run`) the block sanitizes its own launches.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from .errors import NoGPUError
from .session import Expectation, Session, current_session


@contextlib.contextmanager
def expect(kind: str, where: str | None = None) -> Iterator[Expectation]:
    """Expect a finding of `kind` (an id or glob) at `where` (FILE[:LINE[-LINE]]) in the block."""
    __tracebackhide__ = True  # pytest: the failure is the user's block, not this frame
    exp = Expectation.of(kind, where)
    session = current_session()
    own = None  # the block's own session (outside any other): its report is judged here
    with contextlib.ExitStack() as stack:
        if session is None:
            from .frontends import installed, sanitizing, uninstall
            from .runtime import gpu_available

            if not gpu_available():
                raise NoGPUError("consan.expect needs a CUDA GPU to run the kernels it checks, "
                                 "and none is usable here")
            if not installed():  # (what the block installed goes with it)
                stack.callback(uninstall)
            own = session = stack.enter_context(sanitizing(Session(print_findings=False)))
        with session.expecting(exp):
            yield exp
    if own is not None and not own.report.ok:
        raise AssertionError(_unexpected(own.report, exp))


def _unexpected(rep, exp: Expectation) -> str:
    """What the block's kernels did besides what it expected (findings, a fault)."""
    import io

    from reports.render import plain_console

    buf = io.StringIO()
    rep.render_findings(plain_console(buf))
    return (f"consan.expect({exp}): the block's kernels also had what it did not expect\n"
            f"{buf.getvalue()}{rep.summary_line()}")
