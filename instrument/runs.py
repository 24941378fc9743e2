"""Where one call makes the probes of a run of a warp's shared accesses, and what else it takes.

ptxas's time grows with a kernel's call sites, and with code it must predicate: an unrolled
bitonic sort's step is `bar.sync; a = s[i]; b = s[j]; if (a > b) { s[i] = b; s[j] = a; }`
(keys and values), which took three calls (the barrier's step, the reads' run, the
branch's run) and a converted branch (converge.py: every instruction of the `if`
predicated). Measured on the 2-core CPU machine (ptxas 12.8, the sort's kernel alone,
`-maxrregcount=40`, medians of 7): 0.153 s so, 0.082 s with one call a step and the branch
left as it was written; the module's own kernel 0.04-0.05 s.

A run (fast_path.run_function) is accesses that call their kind's module function alone,
sites one after another, at most fast_path.RUN_MAX, with nothing between them but trivia,
`.loc` and register arithmetic (ARITHMETIC) that carries no probe of its own. Its call
goes at one point, where each member's address is what it is at the member:

- before its first access, where no register a later member's address reads is written
  from there to that member (its own load included);
- or, for a run whose last members are every probed instruction of a converted branch's
  region (`@p bra L; <straight-line code>; L:`), at that branch, which is then left as
  written (no predicate, no instruction of the region changed): the call is made by every
  lane that reaches the branch and says which run the region (the branch's lanes), so no
  call is made inside the branch and the warp stays whole (what converge.py converts for).
  Where the region computes an address (NVRTC sinks address arithmetic into the `if`),
  the call computes it first, into registers of its own, from the region's arithmetic
  (`_Finder._slice`); a member whose address needs a value the region loads, or a special
  register that may read otherwise at the call (`%clock`, `%warpid`, ...), stays
  converted. Where a read before the branch cannot be probed at it (its address register
  written after it), the region's members are hoisted alone.
  Members before the branch (`lead` of them) are then made by every lane that calls, and
  are probed after they ran: a warp's accesses between two barriers are judged by phase,
  not by when they happen (docs/model.md, *Phase mode*), and nothing between them and the
  call is probed. A run of only the region's members is skipped by a warp none of whose
  lanes runs the region, as the converted branch was.

An unguarded CTA barrier whose one probe (abi.PROBE_BAR_STEP) is followed by nothing but
trivia, arithmetic and the run's own members up to the run's call makes its step first in
that call (`step`): the warp's phase advances before any of the run's accesses is judged,
as it did when the step was a call of its own. Not in a run that a warp may skip (the
region's members alone): every warp makes the step.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from . import converge, fast_path
from .events import Classified
from .ptx import Item, register_width


class Member(NamedTuple):
    """An access that calls its kind's module function alone (fast_path.function)."""
    index: int
    cls: Classified
    address: list[str]  # PTX putting its address in the address register
    site: int
    on: bool  # in a converted branch: its lanes are REG_ON's (converge.py)
    widths: dict[str, int]  # its function's register widths


class Run(NamedTuple):
    members: list[Member]
    at: int  # the item its call goes before
    lead: int = 0  # members before a hoisted branch, made by every lane that calls
    branch: Item | None = None  # the hoisted branch (`@p bra L`), left as written
    prelude: tuple[str, ...] = ()  # PTX computing the region's addresses, before the call
    step: tuple[int, int] | None = None  # the barrier (item, site) whose step it makes first


# Instructions that only compute registers: one between two accesses of a run leaves the
# run whole where it writes no register a later access's address reads.
ARITHMETIC = frozenset(
    "add sub mul mad mul24 mad24 sad div rem abs neg min max and or xor not cnot shl shr "
    "bfe bfi brev popc clz prmt lop3 shf cvt cvta mov setp selp set slct fma rcp sqrt "
    "copysign testp".split())
REG = re.compile(r"%[\w$.]+")
_TEMP = "%__cs_x"  # the registers a hoisted run's prelude computes addresses into
# Special registers that may read otherwise at the call than in the region: an address
# computed from one is not recomputed there.
VOLATILE = re.compile(r"%(clock|clock64|clock_hi|globaltimer|globaltimer_lo|globaltimer_hi|"
                       r"warpid|smid|nwarpid|nsmid)\b")


def writes(it: Item) -> set[str]:
    """The registers `it` writes: its first operand's, unless that is a store's or a memory
    operand (`[%r1]`: cp.async's, red's, mbarrier.init's destination, whose address
    register it only reads)."""
    if not it.operands or it.opcode[:2] == "st" or it.operands[0].lstrip().startswith("["):
        return set()
    return set(REG.findall(it.operands[0]))


def reads(it: Item) -> set[str]:
    return set(REG.findall(" ".join(it.operands[1:])))


def _registers(m: Member) -> set[str]:
    return set(REG.findall(" ".join(m.address)))


def renamed(text: str, names: dict[str, str]) -> str:
    return REG.sub(lambda r: names.get(r.group(0), r.group(0)), text)


def slice_addresses(items: Sequence[Item], start: int, members: list[tuple[int, list[str]]],
                    widths: dict[str, int], allowed: Callable[[int], bool] = lambda k: True,
                    temp: str = _TEMP
                    ) -> tuple[tuple[str, ...], list[list[str]], dict[str, int]] | None:
    """(PTX, each member's texts renamed to read from it, its registers by bits): the
    arithmetic after item `start` up to the last member (index, the PTX texts that read its
    address) that the members' addresses need, copied into registers of a call's own
    (`temp` and a number), so that they can be computed before `start`'s successor runs;
    None where one needs anything but plain arithmetic of one result that `allowed` takes
    (a load, a member, a special register such as `%clock`)."""
    want: set[str] = set()  # registers whose value at the call is not the one read
    need: list[int] = []
    at = dict(members)
    for k in range(members[-1][0], start, -1):
        it = items[k]
        if it.kind != "stmt" or not it.is_instruction:
            continue
        hit = writes(it) & want
        if hit:
            if k in at or it.op_parts[0] not in ARITHMETIC or len(writes(it)) != 1 or \
                    not allowed(k) or VOLATILE.search(" ".join(it.operands[1:])):
                return None
            need.append(k)
            want = (want - hit) | reads(it)
        if k in at:
            want |= set(REG.findall(" ".join(at[k])))
    names: dict[str, str] = {}
    temps: dict[str, int] = {}
    decls, code, out = [], [], []
    for k in range(start + 1, members[-1][0] + 1):
        if k in need:
            it = items[k]
            (dest,) = writes(it)
            bits = register_width(dest, widths)
            if bits is None:
                return None
            name = f"{temp}{len(decls)}"
            decls.append(f".reg .{'pred' if bits == 1 else f'b{bits}'} {name};")
            ops = [name, *(renamed(o, names) for o in it.operands[1:])]
            code.append(f"{it.opcode} {', '.join(o.strip() for o in ops)};")
            names[dest] = name
            temps[name] = bits
        if k in at:
            out.append([renamed(a, names) for a in at[k]])
    return tuple(decls + code), out, temps


class _Finder:
    def __init__(self, items: list[Item], before: dict[int, str], after: dict[int, str],
                 replaced: dict[int, str], regions: dict[int, converge.Region],
                 steps: dict[int, tuple[str, int]]):
        self.items, self.before, self.after, self.replaced = items, before, after, replaced
        self.regions, self.steps = regions, steps
        self.region_of = {m: b for b, r in regions.items() for m in r.members}

    def _predicated(self, k: int) -> bool:
        """A converted region's instruction, as conversion left it (`@%on` and its text)."""
        return self.replaced.get(k) == f"@{converge.REG_ON} {self.items[k].text}"

    def _plain(self, k: int, converted: bool) -> bool:
        """Item k may lie between two members of a run: trivia, `.loc` or arithmetic with no
        probe (in a converted region: as conversion left it)."""
        it = self.items[k]
        if self.before.get(k) or k in self.after or (
                k in self.replaced and not (converted and self._predicated(k))):
            return False
        return it.kind == "trivia" or it.opcode == ".loc" or (
            it.is_instruction and it.op_parts[0] in ARITHMETIC)

    def between(self, a: int, b: int, converted: bool) -> bool:
        return all(self._plain(k, converted) for k in range(a + 1, b))

    def written(self, a: int, b: int) -> set[str]:
        return set().union(*(writes(self.items[k]) for k in range(a, b)))

    def crossing(self, a: int, m: Member) -> bool:
        """Member a (outside any region) and m (in one) could be made by one call at m's
        region's branch: only arithmetic lies between them, and the branch."""
        b = self.region_of.get(m.index)
        return b is not None and a < b < m.index and self.between(a, b, False) and \
            self.between(b, m.index, True)

    def _slice(self, branch: int, ms: list[Member]) -> tuple[tuple[str, ...], list[Member]] | None:
        """(PTX, `ms` with their addresses read from it): the region's arithmetic that
        computes the members' addresses (slice_addresses), as conversion left it; None
        where one needs what the region loads."""
        got = slice_addresses(self.items, branch, [(m.index, m.address) for m in ms],
                              ms[0].widths, self._predicated)
        if got is None:
            return None
        prelude, texts, _ = got
        return prelude, [m._replace(address=t) for m, t in zip(ms, texts, strict=True)]

    def hoisted(self, run: list[Member], lead: int) -> Run | None:
        """The run made at its region's branch, the region left as written (the module
        docstring), where it can be: the region's others are arithmetic as conversion left
        it, the members before the branch keep their addresses to it, and the region's
        addresses can be computed there."""
        b = self.region_of[run[lead].index]
        region = self.regions[b]
        if region.dropped or self.before.get(b) or b in self.after or \
                not self.between(b, run[lead].index, True):
            return None
        own = {m.index for m in run}
        for k in region.members:
            if not self._predicated(k) or (k not in own and (self.before.get(k) or
                                                              k in self.after)):
                return None
        if any(self.written(m.index, b) & _registers(m) for m in run[:lead]):
            return None
        got = self._slice(b, run[lead:])
        if got is None:
            return None
        prelude, inside = got
        return Run([*run[:lead], *inside], b, lead, self.items[b], prelude)

    def step(self, at: int, ms: list[Member]) -> tuple[int, int] | None:
        """The barrier (item, site) before `at` whose step the run's call can make first."""
        own = {m.index for m in ms}
        for k in range(at - 1, -1, -1):
            if k in self.steps:
                text, site = self.steps[k]
                ok = self.after.get(k) == text and not self.items[k].pred
                return (k, site) if ok else None
            if k not in own and not self._plain(k, False):
                return None
        return None

    def _in_place(self, ms: list[Member]) -> list[Run]:
        """Runs before their first access: cut where a later member's address is written."""
        out, run, written = [], [ms[0]], set()
        for m in ms[1:]:
            written |= self.written(run[-1].index, m.index)
            if _registers(m) & written:
                out.append(run)
                run, written = [m], set()
            else:
                run.append(m)
        out.append(run)
        return [Run(r, r[0].index) for r in out if len(r) > 1]

    def settle(self, run: list[Member]) -> list[Run]:
        lead = sum(not m.on for m in run)  # (those before the region: runs.find)
        hoisted = self.hoisted(run, lead) if lead < len(run) and len(run) > 1 else None
        if hoisted is not None:
            out = [hoisted]
        else:  # (the region's members without the reads before it, where those stop it)
            inside = self.hoisted(run[lead:], 0) if lead and len(run) - lead > 1 else None
            out = (self._in_place(run[:lead]) if lead else []) + (
                [inside] if inside is not None else
                self._in_place(run[lead:]) if lead < len(run) else [])
        # (not into a run a warp skips: the step is every warp's)
        return [r if r.branch is not None and not r.lead else
                r._replace(step=self.step(r.at, r.members)) for r in out]


def find(alone: list[Member], items: list[Item], before: dict[int, str],
         after: dict[int, str], replaced: dict[int, str], regions: dict[int, converge.Region],
         steps: dict[int, tuple[str, int]]) -> list[Run]:
    """The runs of `alone` (in program order), placed as the module docstring says.
    `regions`: the converted branches, by the branch's item; `steps`: the barriers whose
    probe is a step, by item: (the text after the barrier, its site)."""
    f = _Finder(items, before, after, replaced, regions, steps)
    out: list[Run] = []
    run: list[Member] = []
    written: set[str] = set()  # registers written since the run's first member
    for m in alone:
        if run and len(run) < fast_path.RUN_MAX and m.site == run[-1].site + 1:
            if m.on == run[-1].on and f.between(run[-1].index, m.index, m.on):
                # (a region's addresses are settled where its run's call goes: settle)
                written |= f.written(run[-1].index, m.index)
                if m.on or not _registers(m) & written:
                    run.append(m)
                    continue
            elif not run[-1].on and m.on and f.crossing(run[-1].index, m):
                run.append(m)
                continue
        if run:
            out += f.settle(run)
        run, written = [m], set()
    if run:
        out += f.settle(run)
    return out
