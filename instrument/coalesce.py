"""Merge the probes of neighbouring shared-memory accesses into one.

Unrolled loops read `[%r+0]`, `[%r+4]`, `[%r+8]`, ... one instruction each;
every probe is a call into the checker, and the calls dominate the cost of
an instrumented kernel. Accesses of the same mode through the same base
register (or symbol) in one straight-line stretch -- no label, branch,
barrier, scope or redefinition of the base in between, and no access of the
other mode that could interleave with them -- touch the same logical thread's
shadow state in an order that cannot change a verdict, so one probe placed
before the first of them checks their contiguous byte range at once.

An unrolled loop over rows reads one element per row, `[%r+0]`, `[%r+256]`, ...:
runs of the same size whose starts are evenly spaced, all from one source line,
become one strided probe (`abi.PROBE_ACCESS_N`) that checks every run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import abi
from .events import Classified, Event
from .ptx import Item

MAX_SPAN = 64  # bytes one merged probe may cover (16 granules)
MAX_STRIDE = (1 << (32 - abi.REP_STRIDE_SHIFT)) - 1  # what a strided probe's rep word carries
_ADDR = re.compile(r"^([^\s+\-]+)\s*(?:\+\s*(-?\s*(?:0[xX][0-9a-fA-F]+|\d+)))?$")
_CONTROL = ("bra", "brx", "call", "ret", "exit", "trap", "brkpt")
_NO_DEST = ("st", "red", "bar", "barrier", "prefetch", "fence", "membar", "cp", "mbarrier",
            "wgmma", "stmatrix", "bra", "call", "ret", "exit", "trap")
_REG = re.compile(r"%[\w$.]+")


def split_address(addr: str) -> tuple[str, int] | None:
    """`%r1+8` -> ('%r1', 8); None when the operand is not base[+offset]."""
    m = _ADDR.match(addr.strip())
    if not m:
        return None
    return m.group(1), int((m.group(2) or "0").replace(" ", ""), 0)


@dataclass
class _Group:
    mode: Event
    base: str
    members: list[tuple[int, int, int]] = field(default_factory=list)  # (idx, offset, size)


@dataclass(frozen=True)
class Probe:
    """The probe placed before item `idx`: it covers `size` bytes at base+offset."""

    address: str
    size: int
    members: tuple[int, ...]  # item indices whose accesses it checks (first = idx)
    stride: int = 0  # a strided probe: `count` runs of `size` bytes, `stride` bytes apart
    count: int = 1


def plan(items: list[tuple[int, Item, Classified | None]],
         where: dict[int, object] | None = None) -> dict[int, Probe | None]:
    """For each access item index: its Probe, or None if another probe covers it.

    `items` is a function body in order: (item index, item, classification); `where`
    gives each item's source location (strided probes merge one location's accesses).
    """
    out: dict[int, Probe | None] = {}
    open_groups: dict[tuple[Event, str], _Group] = {}

    def close(pred=lambda g: True) -> None:
        for key in [k for k, g in open_groups.items() if pred(g)]:
            _emit(open_groups.pop(key), out, where or {})

    for idx, it, c in items:
        if it.kind in ("label", "open", "close"):
            close()
            continue
        if not it.is_instruction:
            continue
        op0 = it.op_parts[0]
        mergeable = (c is not None and c.event in (Event.READ, Event.WRITE)
                     and c.space == abi.SPACE_SHARED and c.shape == abi.SHAPE_PLAIN
                     and it.pred is None)
        parts = split_address(c.address or "") if mergeable else None
        if c is not None and c.event in (Event.READ, Event.WRITE, Event.ATOMIC):
            # an access of another mode may touch the same bytes: keep the order
            close(lambda g, ev=c.event: g.mode is not ev or ev is Event.ATOMIC)
        elif c is not None or op0 in _CONTROL:
            close()  # barriers, exits, unmodelled synchronisation, control flow
        if parts is not None:
            base, off = parts
            g = open_groups.setdefault((c.event, base), _Group(c.event, base))
            g.members.append((idx, off, c.size))
        elif c is not None and c.event in (Event.READ, Event.WRITE, Event.ATOMIC):
            out[idx] = Probe(c.address or "", c.size, (idx,))
        if op0 not in _NO_DEST and it.operands:  # the base register redefined?
            dest = set(_REG.findall(it.operands[0]))
            close(lambda g, d=dest: g.base in d)
    close()
    return out


def _emit(g: _Group, out: dict[int, Probe | None], where: dict[int, object]) -> None:
    runs: list[list[tuple[int, int, int]]] = []
    for m in sorted(g.members, key=lambda m: m[1]):
        lo = runs[-1][0][1] if runs else 0
        hi = max(o + s for _, o, s in runs[-1]) if runs else 0
        if runs and m[1] <= hi and max(hi, m[1] + m[2]) - lo <= MAX_SPAN:
            runs[-1].append(m)
        else:
            runs.append([m])
    spans = [(run[0][1], max(o + s for _, o, s in run)) for run in runs]
    if _strided(spans) and len({where.get(i) for run in runs for i, _, _ in run}) == 1:
        lo, hi = spans[0]
        _place(g.base, [m for run in runs for m in run], lo, hi - lo, out,
               spans[1][0] - lo, len(spans))
        return
    for run, (lo, hi) in zip(runs, spans, strict=True):
        _place(g.base, run, lo, hi - lo, out)


def _place(base: str, members, lo: int, size: int, out: dict[int, Probe | None],
           stride: int = 0, count: int = 1) -> None:
    """The probe goes before the first of `members`; the others need none."""
    order = sorted(i for i, _, _ in members)
    addr = base if lo == 0 else f"{base}+{lo}"
    out[order[0]] = Probe(addr, size, tuple(order), stride, count)
    for i in order[1:]:
        out[i] = None


def _strided(spans: list[tuple[int, int]]) -> bool:
    """Several runs of one size, evenly spaced and not overlapping."""
    if not 2 <= len(spans) <= abi.REP_COUNT_MASK:
        return False
    size, stride = spans[0][1] - spans[0][0], spans[1][0] - spans[0][0]
    return (size <= abi.INFO_SIZE_MASK and size <= stride <= MAX_STRIDE
            and all(hi - lo == size and lo - spans[0][0] == k * stride
                    for k, (lo, hi) in enumerate(spans)))
