"""A pytest plugin: a failed test's report is written the moment it fails, not in the
session's summary, so a session that is killed later (pytest_guarded.py kills one whose
kernel hangs) keeps the reason of every failure before it."""

from __future__ import annotations

from typing import Any

_config: Any = None


def pytest_configure(config: Any) -> None:
    global _config
    _config = config


def pytest_runtest_logreport(report: Any) -> None:
    if not report.failed or _config is None:
        return
    tr = _config.pluginmanager.get_plugin("terminalreporter")
    if tr is None:
        return
    tr.write_line(f"--- {report.nodeid} failed ({report.when}):")
    for line in report.longreprtext.splitlines():
        tr.write_line(f"    {line}")
    tr.write_line("--- end")
