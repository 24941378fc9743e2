"""pytest plugin: a test fails when a kernel it launches through CuPy races.

Inert unless asked: the `consan` fixture, the `@pytest.mark.consan` marker,
or `pytest --consan` for every test. The hook is put in place at collection
time when any collected test asks for it, so kernels CuPy compiles during
earlier tests are caught too (CuPy caches compiled kernels for the process).
The failure is raised in the test's call phase, so the test itself fails
(not its teardown) and the message is the rendered report. Without a GPU the
fixture skips the test and says why.

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
                    help="sanitize every kernel each test launches through CuPy; a test whose "
                         "kernels race fails (needs a CUDA GPU; tests skip without one)")
    group.addoption("--consan-suppressions", metavar="FILE", default=None,
                    help="accepted findings (KIND LOCATION per line) that do not fail a test")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "consan: sanitize every kernel this test launches through CuPy; the test "
                   "fails if consan finds a race (skipped without a CUDA GPU)")
    path = config.getoption("consan_suppressions", None)
    if path:
        from reports import suppress

        try:
            config._consan_suppressions = suppress.load(path)  # type: ignore[attr-defined]
        except suppress.SuppressionError as exc:
            raise pytest.UsageError(str(exc)) from None


def pytest_unconfigure(config: pytest.Config) -> None:
    if getattr(config, "_consan_installed", False):
        from consan import hook

        hook.uninstall()


def _wants(item: pytest.Item) -> bool:
    return (item.config.getoption("consan", False)
            or item.get_closest_marker("consan") is not None
            or "consan" in getattr(item, "fixturenames", ()))


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    if not any(_wants(item) for item in items):
        return
    try:
        import cupy  # noqa: F401

        from consan import hook
    except Exception:  # noqa: BLE001 - the fixture reports (skips) with the reason
        return
    if not hook.installed():
        hook.install()
        config._consan_installed = True  # type: ignore[attr-defined]


def _message(session: Any) -> str:
    rep = session.report
    parts = [f"consan found {len(rep.active_findings)} finding(s) in the kernels this test "
             "launched:\n"]
    parts += session.kept_text
    if not session.kept_text:
        import io

        from reports.render import plain_console

        buf = io.StringIO()
        rep.render_findings(plain_console(buf))
        parts.append(buf.getvalue())
    parts.append(rep.summary_line())
    return "\n".join(parts)


@pytest.fixture
def consan(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Sanitize every kernel launched through CuPy during the test; fail the test on findings.

    Yields the session: `.report` (a reports.session.SessionReport) and
    `.expect(kind, where=...)` (like `consan.expect`).
    """
    from consan import hook
    from consan.runtime import gpu_available

    if not gpu_available():
        pytest.skip("consan needs a CUDA GPU to sanitize kernels, and none is usable here")
    options = hook.Options(print_limit=0,
                           suppressions=getattr(request.config, "_consan_suppressions", None))
    root = str(request.config.rootpath) + os.sep
    session = hook.Session(options, print_findings=False, roots=(root,))
    with hook.sanitizing(session):
        setattr(request.node, _SESSION_ATTR, session)
        yield session
    if not getattr(request.node, _REPORTED_ATTR, False) and not session.report.ok:
        setattr(request.node, _REPORTED_ATTR, True)
        pytest.fail(_message(session), pytrace=False)


@pytest.fixture(autouse=True)
def _consan_when_marked(request: pytest.FixtureRequest) -> None:
    """`@pytest.mark.consan` and `--consan` use the fixture without the test naming it."""
    if request.config.getoption("consan", False) or \
            request.node.get_closest_marker("consan") is not None:
        request.getfixturevalue("consan")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    result = yield
    session = getattr(item, _SESSION_ATTR, None)
    if session is not None and not session.report.ok and \
            not getattr(item, _REPORTED_ATTR, False):
        setattr(item, _REPORTED_ATTR, True)
        pytest.fail(_message(session), pytrace=False)
    return result
