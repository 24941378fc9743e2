"""Findings: violations grouped by (kind, site, earlier site).

A racy line fires once per warp pair, CTA and loop trip; the user needs one
entry per bug. The checker caps stored records per finding and counts the
rest in its key table, so a finding's occurrence count comes from there when
the table is given, and a key with no stored record still becomes a finding.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from instrument import abi
from instrument.sites import Site, SiteTable

from .violation import Violation, kind_id, kind_of, resolve_site

if TYPE_CHECKING:  # (numpy only where records are decoded: not for rendering)
    import numpy as np

Identity = tuple[str, int | None, int | None]  # kind id, site id, earlier site id


@dataclass
class Finding:
    """One bug: every occurrence of one kind at one site against one earlier site."""

    kind: str
    site: Site | None
    prev_site: Site | None
    occurrences: int
    records: list[Violation] = field(default_factory=list)
    ctas: list[tuple[int, int, int]] = field(default_factory=list)
    warps: set[int] = field(default_factory=set)
    prev_warps: set[int] = field(default_factory=set)
    byte_ranges: list[tuple[int, int]] = field(default_factory=list)
    not_stored: int = 0

    @property
    def title(self) -> str:
        return kind_of(self.kind).title

    @property
    def is_violation(self) -> bool:
        return kind_of(self.kind).is_violation

    @property
    def line(self) -> int | None:
        return self.site.loc.line if self.site is not None and self.site.loc is not None else None

    @property
    def prev_line(self) -> int | None:
        p = self.prev_site
        return p.loc.line if p is not None and p.loc is not None else None

    @property
    def lanes(self) -> int:
        """Union of the lane masks of the current access over the stored records."""
        mask = 0
        for r in self.records:
            mask |= r.lanes
        return mask


def encode_key(kind: str, site_id: int | None, prev_site_id: int | None) -> int:
    """The key-table key the checker computes for a finding (abi.finding_key)."""
    return abi.finding_key(kind_of(kind).code, abi.NO_SITE if site_id is None else site_id,
                           abi.NO_SITE if prev_site_id is None else prev_site_id)


def key_counts(keys: np.ndarray | None) -> dict[int, int]:
    """Occurrence count per used key-table entry (key 0 marks an empty slot)."""
    if keys is None or len(keys) == 0:
        return {}
    used = keys[keys["key"] != 0]
    out: dict[int, int] = {}
    for key, count in zip(used["key"].tolist(), used["count"].tolist(), strict=True):
        out[key] = out.get(key, 0) + count
    return out


def merge_ranges(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Union of half-open [lo, hi) byte ranges; touching ranges join ([0,4)+[4,8) -> [0,8))."""
    merged: list[list[int]] = []
    for lo, hi in sorted(r for r in ranges if r[1] > r[0]):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return [(lo, hi) for lo, hi in merged]


def _identity(v: Violation) -> Identity:
    return (v.kind, _sid(v.site), _sid(v.prev_site))


def _sid(site: Site | None) -> int | None:
    return None if site is None else site.id


def _finding(kind: str, site: Site | None, prev: Site | None,
             records: list[Violation], counted: int | None) -> Finding:
    occurrences = len(records) if counted is None else max(counted, len(records))
    return Finding(
        kind=kind, site=site, prev_site=prev, occurrences=occurrences, records=records,
        ctas=sorted({r.cta for r in records}),
        warps={r.warp for r in records},
        prev_warps={r.prev_warp for r in records if r.prev_warp is not None},
        byte_ranges=merge_ranges((r.offset_lo, r.offset_hi) for r in records),
        not_stored=occurrences - len(records),
    )


_SEVERITY = {k.id: i for i, k in enumerate(abi.KINDS)}


def _site_order(site: Site | None) -> tuple[int, int, int]:
    if site is None:
        return (2, 0, 0)
    if site.loc is None:
        return (1, site.ptx_line, 0)
    return (0, site.loc.line, site.loc.col)


def sort_key(f: Finding) -> tuple:
    """Most severe kind first (ABI order), then by source line."""
    return (_SEVERITY.get(f.kind, len(_SEVERITY)), _site_order(f.site),
            _site_order(f.prev_site), _sid(f.site) or 0)


def group(violations: Iterable[Violation], keys: np.ndarray | None = None,
          sites: SiteTable | None = None, counts: dict[int, int] | None = None
          ) -> list[Finding]:
    """Group violations into findings, counting occurrences from the key table when given
    (or from `counts`, the key table's counts already read).

    Key-table entries with no stored record become findings with no records;
    their sites are resolved through `sites` when it is given.
    """
    buckets: dict[Identity, list[Violation]] = {}
    for v in violations:
        buckets.setdefault(_identity(v), []).append(v)
    counts = dict(counts) if counts is not None else key_counts(keys)
    findings = []
    for (kind, _, _), records in buckets.items():
        key = encode_key(kind, _sid(records[0].site), _sid(records[0].prev_site))
        findings.append(_finding(kind, records[0].site, records[0].prev_site,
                                 records, counts.pop(key, None)))
    for key, count in counts.items():
        code, site_id, prev_id = abi.finding_key_parts(key)
        if count > 0:
            findings.append(_finding(kind_id(code), resolve_site(sites, site_id),
                                     resolve_site(sites, prev_id), [], count))
    return sorted(findings, key=sort_key)

