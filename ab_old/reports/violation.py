"""Decoded violation records: one object per record the device checker stored.

The checker writes fixed-layout records (`instrument.abi.RECORD_FIELDS`) that
name sites by id and use sentinel values for "none". Decoding resolves ids
against the site table and the sentinels to None once, so grouping, rendering
and JSON never see raw ABI values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from instrument import abi
from instrument.sites import Site, SiteTable

if TYPE_CHECKING:  # (numpy only where records are decoded: not for rendering)
    import numpy as np

UNKNOWN_KIND_PREFIX = "tool.unknown-kind-"


def kind_id(code: int) -> str:
    """Stable id of a kind code; a code the ABI lacks becomes a tool note, not a violation."""
    k = abi.KIND_BY_CODE.get(code)
    return k.id if k is not None else f"{UNKNOWN_KIND_PREFIX}{code}"


def kind_of(kind: str) -> abi.Kind:
    """The ABI kind for an id, with a stand-in for codes the ABI does not know."""
    k = abi.KIND_BY_ID.get(kind)
    if k is not None:
        return k
    code = int(kind[len(UNKNOWN_KIND_PREFIX):]) if kind.startswith(UNKNOWN_KIND_PREFIX) else 0
    return abi.Kind(code, kind, f"record with kind code {code}, unknown to this decoder", False)


def resolve_site(sites: SiteTable | None, site_id: int) -> Site | None:
    """Site for an id; an id outside the table keeps a visible placeholder instead of vanishing."""
    if site_id == abi.NO_SITE:
        return None
    site = sites.get(site_id) if sites is not None else None
    if site is None:
        site = Site(id=site_id, kernel="?", event="?", ptx_line=0,
                    ptx_text=f"<site {site_id} is not in the site table>")
    return site


@dataclass
class Violation:
    """One stored record: who touched which shared bytes where, against what earlier access."""

    kind: str
    site: Site | None
    prev_site: Site | None
    warp: int
    prev_warp: int | None
    lanes: int
    cta: tuple[int, int, int]
    cluster_rank: int
    offset_lo: int
    offset_hi: int
    barrier: int
    phase: int
    count: int
    clock: int
    prev_rank: int | None = None  # the cluster rank of the CTA whose copy prev_site is
    # the cluster rank of the CTA that made the current access, when it is not the CTA
    # whose bytes they are (cluster_rank): a peer's access through distributed shared memory
    cur_rank: int | None = None

    @property
    def line(self) -> int | None:
        return _line(self.site)

    @property
    def prev_line(self) -> int | None:
        return _line(self.prev_site)

    @property
    def title(self) -> str:
        return kind_of(self.kind).title

    @property
    def is_violation(self) -> bool:
        return kind_of(self.kind).is_violation


def _line(site: Site | None) -> int | None:
    return site.loc.line if site is not None and site.loc is not None else None


def decode_records(records: np.ndarray | None, sites: SiteTable | None) -> list[Violation]:
    """Turn stored records into Violations; slots with kind 0 were never written and are skipped."""
    if records is None or len(records) == 0:
        return []
    cols = {name: records[name].tolist() for name in records.dtype.names}
    out = []
    for i in range(len(records)):
        code = cols["kind"][i]
        if code == 0:
            continue
        prev_warp = cols["prev_warp"][i]
        out.append(Violation(
            kind=kind_id(code),
            site=resolve_site(sites, cols["site"][i]),
            prev_site=resolve_site(sites, cols["prev_site"][i]),
            warp=cols["warp"][i],
            prev_warp=None if prev_warp >= abi.NO_WARP else prev_warp,
            lanes=cols["lanes"][i],
            cta=(cols["cta_x"][i], cols["cta_y"][i], cols["cta_z"][i]),
            cluster_rank=cols["cluster_rank"][i],
            offset_lo=cols["offset_lo"][i],
            offset_hi=cols["offset_hi"][i],
            barrier=cols["barrier"][i],
            phase=cols["phase"][i],
            count=cols["count"][i],
            clock=cols["clock"][i],
            prev_rank=cols["prev_rank"][i] - 1 if cols["prev_rank"][i] else None,
            cur_rank=cols["cur_rank"][i] - 1 if cols["cur_rank"][i] else None,
        ))
    return out

