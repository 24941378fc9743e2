"""Plain-text pieces of a finding: compact numbers, locations and the two sentences.

Shared by the terminal renderer and the JSON export so both say the same
thing in the same words.
"""

from __future__ import annotations

from collections.abc import Iterable

from instrument import abi, wgmma_desc
from instrument.sites import Site

from . import templates
from .finding import Finding

MAX_CTAS_SHOWN = 4
MAX_RANGES_SHOWN = 4


def compact_ints(values: Iterable[int]) -> str:
    """Sorted runs as ranges: {0,1,2,3,7} -> "0-3, 7"."""
    runs: list[list[int]] = []
    for v in sorted(set(values)):
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def lanes_text(mask: int) -> str:
    return "lanes " + compact_ints(i for i in range(32) if mask >> i & 1)


def who(threads: Iterable[int], lanes: int = 0) -> str:
    """Logical threads in words: warps are < MAX_WARPS, the async agents above them."""
    threads = set(threads)
    warps = {t for t in threads if t < abi.MAX_WARPS}
    agents = threads - warps
    parts = []
    if warps:
        parts.append(("warp " if len(warps) == 1 else "warps ") + compact_ints(warps))
    copiers = {t - abi.AGENT_CPASYNC for t in agents
               if abi.AGENT_CPASYNC <= t < abi.AGENT_CPASYNC + abi.MAX_WARPS}
    if copiers:
        parts.append(("the cp.async unit of warp " if len(copiers) == 1 else
                      "the cp.async units of warps ") + compact_ints(copiers))
        agents -= {abi.AGENT_CPASYNC + w for w in copiers}
    units = {t - abi.AGENT_WGMMA for t in agents
             if abi.AGENT_WGMMA <= t < abi.AGENT_WGMMA + abi.WARPGROUPS}
    if units:
        parts.append(", ".join(f"the wgmma unit of warpgroup {g} (warps {4 * g}-{4 * g + 3})"
                               for g in sorted(units)))
        agents -= {abi.AGENT_WGMMA + g for g in units}
    engines = {t - abi.AGENT_MBAR for t in agents
               if abi.AGENT_MBAR <= t < abi.AGENT_MBAR + abi.MBARRIERS}
    if engines:
        parts.append(("the copy engine of mbarrier " if len(engines) == 1 else
                      "the copy engines of mbarriers ") + compact_ints(engines))
        agents -= {abi.AGENT_MBAR + j for j in engines}
    stores = {t - abi.AGENT_BULK for t in agents if abi.AGENT_BULK <= t < abi.AGENT_PROXY}
    if stores:
        parts.append(("the bulk-store unit of warp " if len(stores) == 1 else
                      "the bulk-store units of warps ") + compact_ints(stores))
        agents -= {abi.AGENT_BULK + w for w in stores}
    if agents:
        parts.append(("async agent " if len(agents) == 1 else "async agents ")
                     + compact_ints(agents))
    if not parts:
        return "an unknown warp"
    text = " and ".join(parts)
    return f"{text} ({lanes_text(lanes)})" if lanes else text


def issuers(threads: Iterable[int]) -> str:
    """The warps that issued work to the given agents (a warp stands for itself)."""
    per_warp = (abi.AGENT_CPASYNC, abi.AGENT_BULK, abi.AGENT_PROXY)
    return who({t - base for t in threads for base in (0, *per_warp)
                if base <= t < base + abi.MAX_WARPS})


def bytes_text(ranges: list[tuple[int, int]]) -> str:
    """Merged smem ranges as hex offsets, the first few then a count."""
    if not ranges:
        return "unknown shared bytes"
    shown = ", ".join(f"smem[{lo:#x}..{hi:#x})" for lo, hi in ranges[:MAX_RANGES_SHOWN])
    more = len(ranges) - MAX_RANGES_SHOWN
    return shown + (f" and {more} more ranges" if more > 0 else "")


def cta_text(ctas: list[tuple[int, int, int]]) -> str:
    shown = ", ".join("({},{},{})".format(*c) for c in ctas[:MAX_CTAS_SHOWN])
    more = len(ctas) - MAX_CTAS_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def where(site: Site | None) -> str:
    """Short location for sentences: file:line, else the PTX line."""
    if site is None:
        return "an unknown site"
    if site.loc is not None:
        return f"{site.loc.file}:{site.loc.line}"
    return f"PTX line {site.ptx_line}"


def variant(f: Finding) -> str | None:
    """A refinement of the kind's wording: "wgmma" when an mma_async is one of the sites;
    "remote" when the access was another CTA's (distributed shared memory); "peer" when the
    earlier access is another CTA's (its copy or its store); "copy" when the access is a
    bulk or tensor copy completing bytes on an mbarrier."""
    if any(s is not None and s.event == wgmma_desc.EVENT for s in (f.site, f.prev_site)):
        return "wgmma"
    if any(r.cur_rank is not None for r in f.records):
        return "remote"  # the access was a peer CTA's, into this CTA's shared memory
    if any(r.prev_rank is not None for r in f.records):
        return "peer"
    if f.site is not None and f.site.event in ("async.bulk", "async.tensor_load"):
        return "copy"  # (an mbarrier.underflow at a copy: its bytes, not an arrival)
    return None


def _row(table: dict, kind: str, var: str | None, default):
    if var is not None and f"{kind}/{var}" in table:
        return table[f"{kind}/{var}"]
    return table.get(kind, default)


def roles(kind: str, var: str | None = None) -> tuple[str, str | None]:
    return _row(templates.ROLES, kind, var, templates.DEFAULT_ROLES)


def _field(f: Finding, name: str, as_offset: bool = False) -> str:
    values = sorted({getattr(r, name) for r in f.records})
    if not values:
        return "?"
    if as_offset:
        return ", ".join(f"smem[{v:#x}]" for v in values[:MAX_RANGES_SHOWN])
    return compact_ints(values)


def fields(f: Finding) -> dict[str, str]:
    """Values for the template placeholders of `reports.templates`."""
    return {
        "kind": f.kind,
        "cur": where(f.site),
        "prev": where(f.prev_site),
        "cur_who": who(f.warps, f.lanes),
        "cur_warp": compact_ints(f.warps) or "?",
        "prev_who": who(f.prev_warps),
        "prev_issuer": issuers(f.prev_warps),
        "bytes": bytes_text(f.byte_ranges),
        "barrier": _field(f, "barrier"),
        "mbar": _field(f, "barrier", as_offset=True),
        "phase": _field(f, "phase"),
        "count": _field(f, "count"),
        "operand": operand_text(f),
        "rank": compact_ints({r.cluster_rank for r in f.records}) or "?",
        "prev_rank": compact_ints({r.prev_rank for r in f.records
                                   if r.prev_rank is not None}) or "?",
        "cur_rank": compact_ints({r.cur_rank for r in f.records
                                  if r.cur_rank is not None}) or "?",
    }


def operand_text(f: Finding) -> str:
    """At an mma_async: which operand, its layout and the bytes it reads (from the record's
    descriptor and the instruction's shape), as ' (operand B (...) reads smem[..))'."""
    site = f.site
    if site is None or site.event != wgmma_desc.EVENT or not f.records:
        return ""
    r = f.records[0]
    text = wgmma_desc.describe(site.ptx_text, r.barrier, r.count | r.clock << 32)
    return f" ({text}, in wgmma group {r.phase})" if text else ""


def what_happened(f: Finding) -> str:
    """Which warp did what where, or why that is unknown."""
    if not f.records:
        return (f"{f.occurrences} occurrences were counted but none was stored, "
                "so the warps and bytes involved are unknown.")
    text = _row(templates.WHAT, f.kind, variant(f), templates.DEFAULT_WHAT).format(**fields(f))
    return text[0].upper() + text[1:]


def fix(f: Finding) -> str:
    """The one sentence naming the missing synchronisation and how to add it."""
    if not f.is_violation:
        return templates.NOTES.get(f.kind, templates.DEFAULT_NOTE).format(**fields(f))
    return _row(templates.FIX, f.kind, variant(f), templates.DEFAULT_FIX).format(**fields(f))


def occurrence_text(f: Finding) -> str:
    n = f.occurrences
    occ = f"{n} occurrence" + ("" if n == 1 else "s")
    if not f.records:
        return f"{occ}, none stored"
    ctas = len(f.ctas)
    cta = f"{ctas} CTA" + ("" if ctas == 1 else "s")
    return f"{occ} in {'at least ' if f.not_stored else ''}{cta}"
