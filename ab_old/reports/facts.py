"""What a report states about a finding, as typed data that reads back from its JSON.

A Finding holds the decoded records; these hold what the reports say of it
(sites with their roles, counts, the sentences), so that a session's findings
keep one shape whether they were found in this process or read from a saved
JSON file. Only `to_dict` turns them into JSON types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from instrument.sites import Site, SourceLoc

from . import describe
from .finding import Finding

MAX_CTAS_JSON = 64


@dataclass(frozen=True)
class SiteFacts:
    """One site of a finding (the current access, or the earlier conflicting one)."""

    role: str | None
    id: int | None
    where: str | None
    file: str | None
    line: int | None
    col: int | None
    function: str | None
    kernel: str | None
    event: str | None
    ptx_line: int | None
    ptx_text: str
    inlined_at: tuple[SourceLoc, ...] = ()

    @classmethod
    def of(cls, site: Site | None, role: str | None) -> SiteFacts | None:
        if site is None:
            return None
        loc = site.loc
        return cls(role=role, id=site.id, where=site.where(),
                   file=loc.file if loc else None, line=loc.line if loc else None,
                   col=loc.col if loc else None, function=loc.function if loc else None,
                   kernel=site.kernel, event=site.event, ptx_line=site.ptx_line,
                   ptx_text=site.ptx_text, inlined_at=tuple(site.inlined_at))

    @property
    def file_line(self) -> tuple[str | None, int | None]:
        """(file, line); a site without source info is `<ptx>` at its PTX line."""
        if self.file:
            return self.file, self.line
        return "<ptx>", self.ptx_line

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "id": self.id, "where": self.where, "file": self.file,
                "line": self.line, "col": self.col, "function": self.function,
                "kernel": self.kernel, "event": self.event, "ptx_line": self.ptx_line,
                "ptx_text": self.ptx_text,
                "inlined_at": [{"file": c.file, "line": c.line, "col": c.col,
                                "function": c.function} for c in self.inlined_at]}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> SiteFacts | None:
        if not d:
            return None
        return cls(role=d.get("role"), id=d.get("id"), where=d.get("where"),
                   file=d.get("file"), line=d.get("line"), col=d.get("col"),
                   function=d.get("function"), kernel=d.get("kernel"), event=d.get("event"),
                   ptx_line=d.get("ptx_line"), ptx_text=d.get("ptx_text") or "",
                   inlined_at=tuple(SourceLoc(c["file"], c["line"], c["col"], c.get("function"))
                                    for c in d.get("inlined_at") or ()))


def _site_dict(site: SiteFacts | None) -> dict[str, Any] | None:
    return site.to_dict() if site is not None else None


@dataclass(frozen=True)
class FindingFacts:
    """One finding as the reports state it: kind, sites, counts, what happened, the fix."""

    kind: str
    title: str
    is_violation: bool
    current: SiteFacts | None
    earlier: SiteFacts | None
    occurrences: int
    stored: int = 0
    not_stored: int = 0
    ctas: tuple[tuple[int, ...], ...] = ()  # the first MAX_CTAS_JSON of them
    cta_count: int = 0
    cluster_ranks: tuple[int, ...] = ()
    warps: tuple[int, ...] = ()
    prev_warps: tuple[int, ...] = ()
    lanes: int = 0
    byte_ranges: tuple[tuple[int, int], ...] = ()
    barriers: tuple[int, ...] = ()
    phases: tuple[int, ...] = ()
    counts: tuple[int, ...] = ()
    what: str = ""
    fix: str = ""

    @classmethod
    def of(cls, f: Finding) -> FindingFacts:
        cur_role, prev_role = describe.roles(f.kind, describe.variant(f))

        def values(name: str) -> tuple[int, ...]:
            return tuple(sorted({getattr(r, name) for r in f.records}))

        return cls(
            kind=f.kind, title=f.title, is_violation=f.is_violation,
            current=SiteFacts.of(f.site, cur_role),
            earlier=SiteFacts.of(f.prev_site, prev_role or "earlier site"),
            occurrences=f.occurrences, stored=len(f.records), not_stored=f.not_stored,
            ctas=tuple(tuple(c) for c in f.ctas[:MAX_CTAS_JSON]), cta_count=len(f.ctas),
            cluster_ranks=values("cluster_rank"), warps=tuple(sorted(f.warps)),
            prev_warps=tuple(sorted(f.prev_warps)), lanes=f.lanes,
            byte_ranges=tuple((lo, hi) for lo, hi in f.byte_ranges),
            barriers=values("barrier"), phases=values("phase"), counts=values("count"),
            what=describe.what_happened(f), fix=describe.fix(f))

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "title": self.title,
            "is_violation": self.is_violation,
            "sites": {"current": _site_dict(self.current), "earlier": _site_dict(self.earlier)},
            "occurrences": self.occurrences,
            "stored": self.stored,
            "not_stored": self.not_stored,
            "ctas": [list(c) for c in self.ctas],
            "cta_count": self.cta_count,
            "cluster_ranks": list(self.cluster_ranks),
            "warps": list(self.warps),
            "prev_warps": list(self.prev_warps),
            "lanes": self.lanes,
            "byte_ranges": [[lo, hi] for lo, hi in self.byte_ranges],
            "barriers": list(self.barriers),
            "phases": list(self.phases),
            "counts": list(self.counts),
            "what": self.what,
            "fix": self.fix,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FindingFacts:
        sites = d.get("sites") or {}
        return cls(
            kind=d["kind"], title=d.get("title") or "",
            is_violation=bool(d.get("is_violation", True)),
            current=SiteFacts.from_dict(sites.get("current")),
            earlier=SiteFacts.from_dict(sites.get("earlier")),
            occurrences=int(d.get("occurrences") or 0), stored=int(d.get("stored") or 0),
            not_stored=int(d.get("not_stored") or 0),
            ctas=tuple(tuple(c) for c in d.get("ctas") or ()),
            cta_count=int(d.get("cta_count") or 0),
            cluster_ranks=tuple(d.get("cluster_ranks") or ()),
            warps=tuple(d.get("warps") or ()), prev_warps=tuple(d.get("prev_warps") or ()),
            lanes=int(d.get("lanes") or 0),
            byte_ranges=tuple((lo, hi) for lo, hi in d.get("byte_ranges") or ()),
            barriers=tuple(d.get("barriers") or ()), phases=tuple(d.get("phases") or ()),
            counts=tuple(d.get("counts") or ()), what=d.get("what") or "",
            fix=d.get("fix") or "")
