"""Merge the probes of neighbouring shared-memory accesses into one.

Unrolled loops read `[%r+0]`, `[%r+4]`, `[%r+8]`, ... one instruction each;
every probe is a call into the checker, and the calls dominate the cost of
an instrumented kernel. Accesses of the same mode and source line through the
same base register (or symbol) in one straight-line stretch -- no label, branch,
barrier, scope or redefinition of the base in between, and no access of the
other mode that could interleave with them -- touch the same logical thread's
shadow state in an order that cannot change a verdict, so one probe placed
before the first of them checks their contiguous byte range at once.

An unrolled loop over rows reads one element per row, `[%r+0]`, `[%r+256]`, ...:
runs of the same size whose starts are evenly spaced, all from one source line,
become one strided probe (`abi.PROBE_ACCESS_N`) that checks every run.

Compilers often give each unrolled access its own address register, computed
from a common one by adds of constants (`add.s64 %rd7, %rd6, 32; cvt.u32.u64
%r9, %rd7;`): such registers are followed back to that root, so their accesses
group as `[%rd6+0]`, `[%rd6+32]`. ldmatrix/stmatrix accesses of one shape group
the same way (a lane's row addresses, every matrix's alike).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import abi
from .events import Classified, Event
from .ptx import INT_LITERAL, REGISTER, SPECIAL_REGISTER, Item, ptx_int

MAX_SPAN = 64  # bytes one merged probe may cover (16 granules)
MAX_STRIDE = (1 << (32 - abi.REP_STRIDE_SHIFT)) - 1  # what a strided probe's rep word carries
_ADDR = re.compile(rf"^([^\s+\-]+)\s*(?:\+\s*(-?\s*{INT_LITERAL}))?$")
_CONTROL = ("bra", "brx", "call", "ret", "exit", "trap", "brkpt")
_NO_DEST = ("st", "red", "bar", "barrier", "prefetch", "fence", "membar", "cp", "mbarrier",
            "wgmma", "stmatrix", "bra", "call", "ret", "exit", "trap")


def split_address(addr: str) -> tuple[str, int] | None:
    """`%r1+8` -> ('%r1', 8); None when the operand is not base[+offset] (or the offset is
    no PTX number, such as `08`)."""
    m = _ADDR.match(addr.strip())
    if not m:
        return None
    try:
        return m.group(1), ptx_int((m.group(2) or "0").replace(" ", ""))
    except ValueError:
        return None


@dataclass
class _Group:
    mode: Event
    base: str
    members: list[tuple[int, int, int]] = field(default_factory=list)  # (idx, offset, size)
    written: set[str] = field(default_factory=set)  # registers defined since it opened


# cp.async copies of one commit group merge like a warp's writes: each is a write by the
# warp's copy unit at the same clock (the group's), so the order inside the group cannot
# change a verdict; the commit (a probed event) closes the group. (Measured on the H100: a
# Triton fp16 matmul's 8 cp.async probes a warp per K step took 42% of its checking.)
_MERGEABLE = (Event.READ, Event.WRITE, Event.ASYNC_WRITE)
_ACCESSES = (*_MERGEABLE, Event.ATOMIC)
_INT_TYPES = ("u32", "u64", "s32", "s64", "b32", "b64")
_IMM = re.compile(rf"^-?{INT_LITERAL}$")


def _imm(text: str) -> int | None:
    """An immediate operand's value, read as ptxas reads it; None if it is none."""
    try:
        return ptx_int(text) if _IMM.match(text) else None
    except ValueError:  # (`08`)
        return None


def _register(text: str) -> bool:
    """An ordinary register: a probe can read it (a special one, %tid.x, %laneid, is no
    root: it is declared nowhere, and the probe's address code reads declared ones)."""
    return bool(REGISTER.fullmatch(text)) and not SPECIAL_REGISTER.fullmatch(text)


def _affine(it: Item, roots: dict[str, tuple[str, int]]) -> tuple[str, int] | None:
    """The register `it` defines as (root register, constant offset), when it is one: a
    mov or integer cvt of a register, or an add/sub of a constant to one."""
    if it.pred is not None or len(it.operands) < 2:
        return None
    op, types = it.op_parts[0], it.op_parts[1:]
    if not types or not all(t in _INT_TYPES for t in types):
        return None
    src = [o.strip() for o in it.operands[1:]]
    if op in ("mov", "cvt") and len(src) == 1 and _register(src[0]):
        return roots.get(src[0], (src[0], 0))
    if op in ("add", "sub") and len(src) == 2:
        reg, imm = src
        if op == "add" and _IMM.match(reg):
            reg, imm = imm, reg
        k = _imm(imm)
        if _register(reg) and k is not None:
            root, off = roots.get(reg, (reg, 0))
            return root, off + (k if op == "add" else -k)
    return None


def _define(it: Item, roots: dict[str, tuple[str, int]], by_root: dict[str, set[str]]
            ) -> None:
    """Follow `it`'s definition: its register's root, and no root for the registers
    whose root it overwrites. `by_root` indexes `roots` by root (a scan of all of them
    at each definition was a fifth of plan's time on an unrolled bitonic sort)."""
    if it.op_parts[0] in _NO_DEST or not it.operands:
        return
    dests = set(REGISTER.findall(it.operands[0]))
    new = _affine(it, roots) if len(dests) == 1 else None
    for d in dests:  # (d itself, and the registers whose root it is)
        for r in [d, *by_root.pop(d, ())]:
            entry = roots.pop(r, None)
            if entry is not None and entry[0] in by_root:
                by_root[entry[0]].discard(r)
    if new is not None and new[0] not in dests:
        reg = dests.pop()
        roots[reg] = new
        by_root.setdefault(new[0], set()).add(reg)


@dataclass(frozen=True)
class Probe:
    """The probe placed before item `idx`: it covers `size` bytes at base+offset."""

    address: str
    size: int
    members: tuple[int, ...]  # item indices whose accesses it checks (first = idx)
    stride: int = 0  # a strided probe: `count` runs of `size` bytes, `stride` bytes apart
    count: int = 1


def plan(items: list[tuple[int, Item, Classified | None]],
         where: dict[int, object] | None = None, tagged: bool = False
         ) -> dict[int, Probe | None]:
    """For each access item index: its Probe, or None if another probe covers it.

    `items` is a function body in order: (item index, item, classification); `where`
    gives each item's source location (strided probes merge one location's accesses).
    `tagged`: stores pass value tags (value_tags.py), computed before a group's first
    store from every member's registers, so a store whose value register was defined
    after the group opened starts a group of its own (the tag read its old value).
    """
    out: dict[int, Probe | None] = {}
    open_groups: dict[tuple[Event, str, int], _Group] = {}
    roots: dict[str, tuple[str, int]] = {}  # register -> (root register, offset)
    by_root: dict[str, set[str]] = {}  # root register -> the registers it is the root of

    def close(pred=lambda g: True) -> None:
        for key in [k for k, g in open_groups.items() if pred(g)]:
            _emit(open_groups.pop(key), out, where or {})

    for idx, it, c in items:
        if it.kind in ("label", "open", "close"):
            close()
            # (a label may be a loop's head, reached again after its body redefined a root;
            # a scope may declare registers that shadow or end: no root carries past either)
            roots.clear()
            by_root.clear()
            continue
        if not it.is_instruction:
            continue
        op0 = it.op_parts[0]
        mergeable = (c is not None and c.event in _MERGEABLE
                     and c.space == abi.SPACE_SHARED and it.pred is None)
        parts = split_address(c.address or "") if mergeable else None
        if parts is not None and parts[0] in roots:
            root, off = roots[parts[0]]
            parts = root, off + parts[1]
        if c is not None and c.event in _ACCESSES:
            # an access of another mode may touch the same bytes: keep the order
            close(lambda g, ev=c.event: g.mode is not ev or ev is Event.ATOMIC)
        elif c is not None or op0 in _CONTROL:
            close()  # barriers, exits, unmodelled synchronisation, control flow
        if parts is not None:
            base, off = parts
            key = (c.event, base, c.shape)
            if tagged and c.event is Event.WRITE and key in open_groups and \
                    set(REGISTER.findall(" ".join(it.operands[1:]))) & open_groups[key].written:
                close(lambda g, k=open_groups[key]: g is k)
            g = open_groups.setdefault(key, _Group(c.event, base))
            g.members.append((idx, off, c.size))
        elif c is not None and c.event in _ACCESSES:
            out[idx] = Probe(c.address or "", c.size, (idx,))
        if op0 not in _NO_DEST and it.operands:  # the base register redefined?
            dest = set(REGISTER.findall(it.operands[0]))
            close(lambda g, d=dest: g.base in d)
            for g in open_groups.values():
                g.written |= dest
        _define(it, roots, by_root)
    close()
    return out


def _emit(g: _Group, out: dict[int, Probe | None], where: dict[int, object]) -> None:
    """The group's probes, one set per source location: a probe names one location, so
    accesses of two lines share none (a race on the second line's bytes was reported at
    the first line)."""
    by_where: dict[object, list[tuple[int, int, int]]] = {}
    for m in g.members:
        by_where.setdefault(where.get(m[0]), []).append(m)
    for members in by_where.values():
        _emit_one(g.base, members, out, strided=len(by_where) == 1)


def _emit_one(base: str, members: list[tuple[int, int, int]], out: dict[int, Probe | None],
              strided: bool) -> None:
    runs: list[list[tuple[int, int, int]]] = []
    for m in sorted(members, key=lambda m: m[1]):
        lo = runs[-1][0][1] if runs else 0
        hi = max(o + s for _, o, s in runs[-1]) if runs else 0
        if runs and m[1] <= hi and max(hi, m[1] + m[2]) - lo <= MAX_SPAN:
            runs[-1].append(m)
        else:
            runs.append([m])
    spans = [(run[0][1], max(o + s for _, o, s in run)) for run in runs]
    # evenly spaced runs of a group from one source line: one strided probe each
    # progression (an unrolled 2-D loop, `[+0] [+32] [+1280] [+1312]`, is two)
    first = 0
    while strided and first + 1 < len(runs):
        pick = [first + k for k in _progression(spans[first:])]
        if len(pick) < 2:
            first += 1
            continue
        lo, hi = spans[pick[0]]
        _place(base, [m for k in pick for m in runs[k]], lo, hi - lo, out,
               spans[pick[1]][0] - lo, len(pick))
        runs = [r for k, r in enumerate(runs) if k not in pick]
        spans = [sp for k, sp in enumerate(spans) if k not in pick]
    for run, (lo, hi) in zip(runs, spans, strict=True):
        _place(base, run, lo, hi - lo, out)


def _progression(spans: list[tuple[int, int]]) -> list[int]:
    """Indices of the first span and those evenly spaced after it at the distance of the
    nearest one of its size (spans sorted by start): the runs one strided probe takes."""
    size = spans[0][1] - spans[0][0]
    same = [k for k, (lo, hi) in enumerate(spans) if hi - lo == size]
    if len(same) < 2:
        return []
    start, stride = spans[0][0], spans[same[1]][0] - spans[0][0]
    pick = [k for k in same if (spans[k][0] - start) % stride == 0]
    pick = [k for n, k in enumerate(pick) if spans[k][0] == start + n * stride]
    pick = pick[:abi.REP_COUNT_MASK]
    return pick if _strided([spans[k] for k in pick]) else []


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
