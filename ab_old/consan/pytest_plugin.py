"""pytest plugin: a test fails when a kernel it launches through CuPy or Triton races.

Inert unless asked: the `consan` fixture, the `@pytest.mark.consan` marker,
or `pytest --consan` for every test. The hook is put in place at collection
time when any collected test asks for it, so kernels CuPy compiles during
earlier tests are caught too (CuPy caches compiled kernels for the process).
The failure is raised in the test's call phase, so the test itself fails
(not its teardown) and the message is the rendered report. Without a GPU a
test that asks for consan (the fixture or the marker) is skipped with the
reason; `--consan` alone skips nothing: every other test runs, unchecked, and
the terminal summary says that consan checked nothing. A kernel that faults
fails the test with a message that names it and the fault, even when the test
itself then stops with CUDA's error (which it is shown with).

Registered through the `pytest11` entry point `consan.pytest_plugin`; from a
source checkout, `pytest -p consan.pytest_plugin` loads the same plugin.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

_SESSION_ATTR = "_consan_session"
_REPORTED_ATTR = "_consan_reported"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("consan", "consan race sanitizer")
    group.addoption("--consan", action="store_true", default=False,
                    help="sanitize every kernel each test launches through CuPy or Triton; a "
                         "test whose kernels race fails (needs a CUDA GPU: without one, tests "
                         "run unchecked)")
    group.addoption("--consan-suppressions", metavar="FILE", default=None,
                    help="accepted findings (KIND LOCATION per line) that do not fail a test")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "consan: sanitize every kernel this test launches through CuPy or Triton; "
                   "the test fails if consan finds a race (skipped without a CUDA GPU)")
    path = config.getoption("consan_suppressions", None)
    if path:
        from reports import suppress

        try:
            config._consan_suppressions = suppress.load(path)  # type: ignore[attr-defined]
        except suppress.SuppressionError as exc:
            raise pytest.UsageError(str(exc)) from None


def pytest_unconfigure(config: pytest.Config) -> None:
    if getattr(config, "_consan_installed", False):
        from consan import frontends

        frontends.uninstall()


def _asks(item: pytest.Item) -> bool:
    """The test itself asks for consan: the marker or the fixture (not only `--consan`)."""
    return (item.get_closest_marker("consan") is not None
            or "consan" in getattr(item, "fixturenames", ()))


def _gpu(config: pytest.Config) -> bool:
    """Whether a CUDA GPU is usable, asked once per run."""
    if not hasattr(config, "_consan_gpu"):
        from consan.runtime import gpu_available

        config._consan_gpu = gpu_available()  # type: ignore[attr-defined]
    return config._consan_gpu  # type: ignore[attr-defined]


def _all_tests(config: pytest.Config) -> bool:
    """`--consan` checks every test, where there is a GPU to check them on."""
    return bool(config.getoption("consan", False)) and _gpu(config)


def _wants(item: pytest.Item) -> bool:
    return _asks(item) or _all_tests(item.config)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    if not any(_wants(item) for item in items):
        return
    try:
        import cupy  # noqa: F401

        from consan import frontends
    except Exception:  # noqa: BLE001 - the fixture reports (skips) with the reason
        return
    if not frontends.installed():
        frontends.install()
        config._consan_installed = True  # type: ignore[attr-defined]


def _message(session: Any, test_error: BaseException | None = None) -> str:
    """The failure message: faulted kernels first, then findings with their reports."""
    rep = session.report
    parts = []
    if rep.faulted:
        from reports.session import fault_sentence

        parts.append("consan: " + "; ".join(fault_sentence(f, where=True) for f in rep.faults)
                     + "\nThe kernel did not run to its end, and after a fault the CUDA context "
                       "of this process is unusable: later tests that use the GPU fail too.")
        if test_error is not None:
            parts.append(f"The test then stopped with {_error_text(test_error)}.")
        parts.append("")
    n = len(rep.active_findings)
    if n or rep.unattributed or not rep.faulted:
        parts.append(f"consan found {n} finding(s) in the kernels this test launched:\n")
    parts += session.kept_text
    if not session.kept_text:
        import io

        from reports.render import plain_console

        buf = io.StringIO()
        rep.render_findings(plain_console(buf))
        parts.append(buf.getvalue())
    parts.append(rep.summary_line())
    return "\n".join(parts)


def _error_text(exc: BaseException) -> str:
    """`Type: message (at file:line)`: the test's own exception, at its innermost line
    outside CuPy and consan."""
    import traceback

    from consan.cupy_build import _internal_roots

    roots = _internal_roots()
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.endswith((".pyx", ".pxd", ".pxi"))
              and not f.filename.startswith(roots)]
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text + where


@pytest.fixture
def consan(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Sanitize every kernel launched through CuPy during the test; fail the test on findings.

    Yields the session: `.report` (a reports.session.SessionReport) and
    `.expect(kind, where=...)` (like `consan.expect`).
    """
    from consan import frontends
    from consan.runtime import gpu_available
    from consan.session import Options, Session

    if not gpu_available():
        pytest.skip("consan needs a CUDA GPU to sanitize kernels, and none is usable here")
    options = Options(print_limit=0,
                      suppressions=getattr(request.config, "_consan_suppressions", None))
    root = str(request.config.rootpath) + os.sep
    session = Session(options, print_findings=False, roots=(root,))
    with frontends.sanitizing(session):
        setattr(request.node, _SESSION_ATTR, session)
        yield session
    if not getattr(request.node, _REPORTED_ATTR, False) and not session.report.ok:
        setattr(request.node, _REPORTED_ATTR, True)
        pytest.fail(_message(session), pytrace=False)


@pytest.fixture(autouse=True)
def _consan_when_marked(request: pytest.FixtureRequest) -> None:
    """`@pytest.mark.consan` and `--consan` use the fixture without the test naming it.
    Without a GPU, `--consan` leaves a test that did not ask for consan to run unchecked:
    a CPU test must not be skipped for want of a GPU it never needed."""
    if request.node.get_closest_marker("consan") is not None or _all_tests(request.config):
        request.getfixturevalue("consan")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    if config.getoption("consan", False) and not _gpu(config):
        terminalreporter.write_line(
            "consan: checked nothing: no CUDA GPU is usable here, so the tests ran without "
            "the sanitizer (tests that ask for the consan fixture or marker were skipped)",
            yellow=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    stopped: Exception | None = None
    try:
        result = yield
    except Exception as exc:
        # A kernel that faulted usually makes the test stop at its next CUDA call: the
        # failure names the kernel and the fault, and says how the test stopped (a proven
        # launch's fault is found by waiting for it here).
        session = getattr(item, _SESSION_ATTR, None)
        if session is not None:
            session.settle()
        if session is None or not session.report.faulted or getattr(item, _REPORTED_ATTR,
                                                                    False):
            raise
        stopped = exc
    session = getattr(item, _SESSION_ATTR, None)
    if session is not None:
        session.settle()
    if stopped is not None:  # (outside the handler: the message says how the test stopped)
        setattr(item, _REPORTED_ATTR, True)
        pytest.fail(_message(session, stopped), pytrace=False)
    if session is not None and not session.report.ok and \
            not getattr(item, _REPORTED_ATTR, False):
        setattr(item, _REPORTED_ATTR, True)
        pytest.fail(_message(session), pytrace=False)
    return result
