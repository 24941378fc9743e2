"""Name the cause when an asynchronous copy's write overtakes a read that did not wait.

The checker judges each event when its probe runs. A warp that reads the destination
of a copy without waiting for it may run its read before the issuing warp's probe of
the copy: the read then finds nothing written (`uninit.read`), and the copy's write
finds a read it is not ordered after (`race.war`, current site the copy). Both say
what the interleaving was, not what the user must fix: the read is not ordered after
a write an async unit makes, which is `async.pending-write` at the read, naming the
copy, exactly what the other interleaving (copy probed first) reports. So here:

- a `race.war` whose current access is a copy engine's or cp.async unit's write
  (cp.async, bulk copy, st.async, TMA tensor load) and whose earlier access is a warp's
  read that found nothing written (that read has `uninit.read`) becomes
  `async.pending-write` with the roles swapped: current = the read, earlier = the copy.
  A read of an earlier write it waited for, overwritten early by the next copy (a ring
  refilled before its consumers released the slot), stays `race.war` at the copy: there
  the copy is what came too early;
- the `uninit.read` records of that same read over those same bytes go: those bytes do
  have a write, the pending one. `uninit.read` stays for bytes nothing writes.

Occurrence counts (the key table) move with their findings; an `uninit.read` of a read
site whose every stored record was explained this way is dropped whole, its unstored
occurrences taken to have the same cause.
"""

from __future__ import annotations

from dataclasses import replace

from instrument import abi
from instrument.sites import SiteTable

from .finding import encode_key, merge_ranges
from .violation import Violation, kind_id, resolve_site

ASYNC_WRITES = frozenset({"async.cp", "async.bulk", "async.tensor_load"})
READS = frozenset({"access.read", "access.atomic"})


def _overtaken(kind: str, site_event: str | None, prev_event: str | None) -> bool:
    return kind == "race.war" and site_event in ASYNC_WRITES and prev_event in READS


def _event(sites: SiteTable | None, site_id: int) -> str | None:
    s = resolve_site(sites, site_id)
    return s.event if s is not None else None


def reattribute(violations: list[Violation], counts: dict[int, int],
                sites: SiteTable | None) -> tuple[list[Violation], dict[int, int], int]:
    """The records and key counts of one launch with overtaken reads named by their cause,
    and how many counted occurrences that explained away (uninit.read of those reads)."""
    uninit = {v.site.id for v in violations if v.kind == "uninit.read" and v.site is not None}
    uninit |= {site for key in counts for code, site, _ in [abi.finding_key_parts(key)]
               if kind_id(code) == "uninit.read"}

    def overtaken(kind: str, site: int | None, prev: int | None) -> bool:
        """A copy's write over a read that found nothing written (else the read was of an
        earlier write it waited for, and the copy overwrote it early: race.war stands)."""
        return prev in uninit and _overtaken(kind, _event(sites, site), _event(sites, prev))

    out: list[Violation] = []
    ranges: dict[int, list[tuple[int, int]]] = {}  # read site -> bytes a copy overtook
    stored: dict[int, int] = {}  # (read site) -> overtaking records stored
    for v in violations:
        if v.site is not None and v.prev_site is not None and \
                overtaken(v.kind, v.site.id, v.prev_site.id):
            # (the ranks swap with the roles: the copy's issuer, a peer for a multicast,
            # is the earlier access's CTA now; the read is this CTA's own)
            v = replace(v, kind="async.pending-write", site=v.prev_site, prev_site=v.site,
                        warp=v.prev_warp if v.prev_warp is not None else abi.NO_WARP,
                        prev_warp=v.warp, cur_rank=v.prev_rank, prev_rank=v.cur_rank,
                        lanes=0)
            ranges.setdefault(v.site.id, []).append((v.offset_lo, v.offset_hi))
            stored[v.site.id] = stored.get(v.site.id, 0) + 1
        out.append(v)
    moved: dict[int, int] = {}
    whole: set[int] = set()  # read sites whose every overtaking occurrence has a record
    counted: dict[int, int] = {}
    for key, n in counts.items():
        code, site, prev = abi.finding_key_parts(key)
        if overtaken(kind_id(code), site, prev):
            key = encode_key("async.pending-write", prev, site)
            counted[prev] = counted.get(prev, 0) + n
        moved[key] = moved.get(key, 0) + n
    whole = {s for s in ranges if counted.get(s, 0) <= stored.get(s, 0)}
    if not ranges and not counted:
        return out, moved, 0
    spans = {s: merge_ranges(r) for s, r in ranges.items()}
    kept, dropped = [], {}
    for v in out:
        s = v.site.id if v.kind == "uninit.read" and v.site is not None else None
        # where some overtaking occurrences have no record, their bytes are unknown: the
        # read's uninit.read records are all taken to have that cause
        if s in counted and (s not in whole or any(lo < v.offset_hi and v.offset_lo < hi
                                                   for lo, hi in spans.get(s, ()))):
            dropped[s] = dropped.get(s, 0) + 1
            continue
        kept.append(v)
    explained = 0
    for s in set(dropped) | {s for s in counted if s not in whole}:
        key = encode_key("uninit.read", s, None)
        left = any(v.kind == "uninit.read" and v.site is not None and v.site.id == s
                   for v in kept)
        n = dropped.get(s, 0)
        had = moved.get(key, n)
        rest = max(0, had - n) if left else 0
        explained += had - rest
        if key in moved:
            if rest:
                moved[key] = rest
            else:
                del moved[key]
    return kept, moved, explained
