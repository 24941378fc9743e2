"""The report of one sanitized launch: decoded log, findings, verdict, text and JSON.

`ok` is decided from counts, not only from stored records: the log can fill
up or the key table overflow, and a launch whose violations were counted but
not stored must never read as clean. A launch that faulted is never clean
either, whatever was recorded before the fault: its verdict is "faulted", and
the records it wrote to mapped host memory before the fault are still shown.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
from rich.console import Console

from instrument import abi
from instrument.sites import SiteTable

from . import cause
from .facts import FindingFacts
from .finding import Finding, group, key_counts
from .render import fault_cause, plain_console, render_report, summary
from .violation import Violation, decode_records

HEADER_NAMES = tuple(name for name, _ in abi.LOG_HEADER_FIELDS)
CLEAN, VIOLATIONS, FAULTED = "clean", "violations", "faulted"
VERDICTS = (CLEAN, VIOLATIONS, FAULTED)


def header_dict(header: Mapping[str, Any] | np.void | None) -> dict[str, int]:
    """The log header as plain ints; a field the caller left out reads as absent."""
    if header is None:
        return {}
    names = header.dtype.names if isinstance(header, np.void) else header.keys()
    return {name: int(header[name]) for name in names if name in HEADER_NAMES}


def valid_records(records: np.ndarray | None, header: dict[str, int]) -> np.ndarray | None:
    """The records the device actually wrote: `stored` of them, at most `capacity`."""
    if records is None:
        return None
    n = len(records)
    if "stored" in header:
        n = min(n, header["stored"])
    if header.get("capacity"):
        n = min(n, header["capacity"])
    return records[:n]


class Report:
    """Findings of one kernel launch, with the verdict, the human text and the JSON export."""

    def __init__(self, kernel: str, launch: dict | None, violations: list[Violation],
                 tool_notes: list[Violation], findings: list[Finding], notes: list[Finding],
                 header: dict[str, int], sites: SiteTable | None) -> None:
        self.kernel = kernel
        self.launch = dict(launch) if launch else {}
        self.violations = violations
        self.tool_notes = tool_notes
        self.findings = findings
        self.notes = notes  # tool notes grouped like findings
        self.header = header
        self.sites = sites
        counted = sum(f.occurrences for f in findings + notes)
        # Occurrences the checker counted that no key entry or stored record accounts for.
        self.unattributed = max(0, header.get("occurrences", 0) - counted)
        self.occurrences = sum(f.occurrences for f in findings) + self.unattributed
        # (a record whose key found no room in the key table is still stored: key_overflow
        # says how many occurrences the table could not count, not records lost)
        self.dropped = header.get("dropped", 0)
        self._unmodeled: list = []
        # The launch failed on the GPU (a fault): what CUDA said. Only the records written
        # before the fault (in mapped host memory) are known; the key-table counts are not.
        self.error: str | None = None

    @property
    def unmodeled(self) -> list:
        """Instructions of this kernel (and of device functions) that the checker does not
        model: never silent, and never another kernel's of the same module."""
        return self._unmodeled

    @unmodeled.setter
    def unmodeled(self, items: list) -> None:
        self._unmodeled = [u for u in items if getattr(u, "kernel", self.kernel) == self.kernel
                           or not getattr(u, "entry", True)]

    @classmethod
    def from_log(cls, header: Mapping[str, Any] | np.void | None, records: np.ndarray | None,
                 keys: np.ndarray | None, sites: SiteTable, kernel: str,
                 launch: dict | None = None) -> Report:
        """Decode a launch's log header, records and key table against its site table."""
        h = header_dict(header)
        valid = valid_records(records, h)
        if (valid is None or len(valid) == 0) and keys is None:  # a clean launch's log
            decoded, grouped, explained = [], [], 0
        else:
            decoded, counts, explained = cause.reattribute(
                decode_records(valid, sites), key_counts(keys), sites)
            grouped = group(decoded, sites=sites, counts=counts)
        if explained:  # occurrences now part of another finding's cause
            h = {**h, "occurrences": max(0, h.get("occurrences", 0) - explained)}
        return cls(
            kernel=kernel, launch=launch,
            violations=[v for v in decoded if v.is_violation],
            tool_notes=[v for v in decoded if not v.is_violation],
            findings=[f for f in grouped if f.is_violation],
            notes=[f for f in grouped if not f.is_violation],
            header=h, sites=sites,
        )

    @property
    def faulted(self) -> bool:
        """The kernel faulted (misaligned or illegal address, illegal instruction, trap, ...):
        the launch did not finish, so no verdict on it can be clean."""
        return self.error is not None

    @property
    def violated(self) -> bool:
        """A violation was found (recorded before a fault, if the kernel faulted)."""
        return bool(self.findings or self.violations or self.unattributed)

    @property
    def verdict(self) -> str:
        """"faulted" (whatever was recorded before), "violations" or "clean"."""
        return FAULTED if self.faulted else VIOLATIONS if self.violated else CLEAN

    @property
    def fault(self) -> str | None:
        """What CUDA said of the fault, without CuPy's exception class; None if none."""
        return fault_cause(self.error) if self.error is not None else None

    @property
    def ok(self) -> bool:
        """The launch ran to its end and no violation was found, stored or merely counted."""
        return self.verdict == CLEAN

    @property
    def summary(self) -> str:
        return summary(self)

    def render(self, console: Console | None = None) -> None:
        """Print the report, in colour where the console supports it."""
        render_report(self, console if console is not None else Console(highlight=False))

    def __str__(self) -> str:
        buf = io.StringIO()
        render_report(self, plain_console(buf))
        return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"

    def __repr__(self) -> str:
        return f"<Report {self.summary!r}>"

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": "consan",
            "kernel": self.kernel,
            "launch": {k: _plain(v) for k, v in self.launch.items()},
            "ok": self.ok,
            "verdict": self.verdict,
            "faulted": self.faulted,
            "summary": self.summary,
            "occurrences": self.occurrences,
            "unattributed": self.unattributed,
            "dropped": self.dropped,
            "log": self.header,
            "findings": [FindingFacts.of(f).to_dict() for f in self.findings],
            "notes": [FindingFacts.of(f).to_dict() for f in self.notes],
            "unmodeled": [str(u) for u in self.unmodeled],
            "error": self.error,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)


def _plain(value: Any) -> Any:
    """Launch values as JSON types (callers pass tuples and numpy scalars)."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value.item() if isinstance(value, np.generic) else value
