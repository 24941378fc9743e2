"""The report of one sanitized launch: decoded log, findings, verdict, text and JSON.

`ok` is decided from counts, not only from stored records: the log can fill
up or the key table overflow, and a launch whose violations were counted but
not stored must never read as clean.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
from rich.console import Console

from instrument import abi
from instrument.sites import Site, SiteTable

from . import describe
from .finding import Finding, group
from .render import plain_console, render_report, summary
from .violation import Violation, decode_records

MAX_CTAS_JSON = 64
HEADER_NAMES = tuple(name for name, _ in abi.LOG_HEADER_FIELDS)


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
        self.dropped = header.get("dropped", 0) + header.get("key_overflow", 0)
        self.unmodeled: list = []  # instructions the checker did not model (never silent)
        self.error: str | None = None  # the launch failed: what the driver said

    @classmethod
    def from_log(cls, header: Mapping[str, Any] | np.void | None, records: np.ndarray | None,
                 keys: np.ndarray | None, sites: SiteTable, kernel: str,
                 launch: dict | None = None) -> Report:
        """Decode a launch's log header, records and key table against its site table."""
        h = header_dict(header)
        decoded = decode_records(valid_records(records, h), sites)
        grouped = group(decoded, keys, sites)
        return cls(
            kernel=kernel, launch=launch,
            violations=[v for v in decoded if v.is_violation],
            tool_notes=[v for v in decoded if not v.is_violation],
            findings=[f for f in grouped if f.is_violation],
            notes=[f for f in grouped if not f.is_violation],
            header=h, sites=sites,
        )

    @property
    def ok(self) -> bool:
        """No violation found, stored or merely counted."""
        return not self.findings and not self.violations and self.unattributed == 0

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
            "summary": self.summary,
            "occurrences": self.occurrences,
            "unattributed": self.unattributed,
            "dropped": self.dropped,
            "log": self.header,
            "findings": [finding_dict(f) for f in self.findings],
            "notes": [finding_dict(f) for f in self.notes],
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


def site_dict(site: Site | None, role: str | None) -> dict[str, Any] | None:
    if site is None:
        return None
    loc = site.loc
    return {
        "role": role,
        "id": site.id,
        "where": site.where(),
        "file": loc.file if loc else None,
        "line": loc.line if loc else None,
        "col": loc.col if loc else None,
        "function": loc.function if loc else None,
        "kernel": site.kernel,
        "event": site.event,
        "ptx_line": site.ptx_line,
        "ptx_text": site.ptx_text,
        "inlined_at": [{"file": c.file, "line": c.line, "col": c.col, "function": c.function}
                       for c in site.inlined_at],
    }


def finding_dict(f: Finding) -> dict[str, Any]:
    """One finding for JSON: the same facts and sentences the terminal report shows."""
    cur_role, prev_role = describe.roles(f.kind, describe.variant(f))

    def values(name: str) -> list[int]:
        return sorted({getattr(r, name) for r in f.records})

    return {
        "kind": f.kind,
        "title": f.title,
        "is_violation": f.is_violation,
        "sites": {"current": site_dict(f.site, cur_role),
                  "earlier": site_dict(f.prev_site, prev_role or "earlier site")},
        "occurrences": f.occurrences,
        "stored": len(f.records),
        "not_stored": f.not_stored,
        "ctas": [list(c) for c in f.ctas[:MAX_CTAS_JSON]],
        "cta_count": len(f.ctas),
        "cluster_ranks": values("cluster_rank"),
        "warps": sorted(f.warps),
        "prev_warps": sorted(f.prev_warps),
        "lanes": f.lanes,
        "byte_ranges": [[lo, hi] for lo, hi in f.byte_ranges],
        "barriers": values("barrier"),
        "phases": values("phase"),
        "counts": values("count"),
        "what": describe.what_happened(f),
        "fix": describe.fix(f),
    }
