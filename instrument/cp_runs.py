"""One call for a warp's run of cp.async copies of 16 bytes in one straight-line stretch.

A cp.async GEMM's K step copies a row of A and a row of B, one after another, every lane
its 16 bytes of each (`cp16(&As[s][r][c], ...); cp16(&Bs[s][r][c], ...)`): two probe
calls, each with its own address register. Copies of one commit group are writes by the
warp's copy unit at the group's clock, so their order among themselves changes no verdict
(docs/model.md, *Coalesced probes*); coalesce.py merges those of one base register and one
source line into one span, and this merges what is left, of any base and line, each copy
keeping its own site. Measured on the H100 (bench_async's cp.async GEMM, device time alone,
three rounds each way): 0.336 -> 0.331 ms with a K step's four calls a warp made two; the
checker's work per copy is unchanged, and it, not the call, is most of a copy's cost.

A run is up to abi.CP16_RUN_MAX copies that take abi.PROBE_CP16 alone (16 bytes, no
predicate, not in a converted branch, not part of a coalesced span), of one info word,
with nothing between them but trivia, `.loc` and unpredicated register arithmetic that
carries no probe (so no label, branch, barrier, commit or other access). Its one call
(abi.PROBE_CP16_RUN) goes before the first copy, so that every copy is still probed
before it is issued (a copy outside the window faults; its note must be in the log
first). A later copy's address computed between the copies is computed at the call too,
from the same arithmetic, into registers of the call's own; a copy whose address needs
anything else (a special register such as `%clock`, an instruction of two results) ends
the run before it.
"""

from __future__ import annotations

from typing import NamedTuple

from . import abi
from .events import Classified, Event
from .ptx import Item, register_width
from .runs import ARITHMETIC, REG, VOLATILE, reads, renamed, writes

TEMP = "%__cs_y"  # the registers a run's prelude computes later copies' addresses into


class CpRun(NamedTuple):
    members: tuple[int, ...]  # item indices, in program order
    addresses: tuple[str, ...]  # each member's address operand, as read at the call
    prelude: tuple[str, ...]  # declarations and PTX computing them, before the call
    temps: dict[str, int]  # the prelude's registers, by bits


def eligible(it: Item, c: Classified | None, merged: dict, converted: set[int],
             idx: int) -> bool:
    """A copy that would call abi.PROBE_CP16 alone."""
    if c is None or c.event is not Event.ASYNC_WRITE or it.pred is not None or \
            idx in converted or c.space != abi.SPACE_SHARED or \
            abi.access_probe(c.info, None)[0] != abi.PROBE_CP16:
        return False
    p = merged.get(idx, False)
    return p is False or (p is not None and p.count == 1 and len(p.members) == 1)


def _plain(it: Item, c: Classified | None) -> bool:
    return it.kind == "trivia" or it.opcode == ".loc" or (
        c is None and it.is_instruction and it.pred is None and
        it.op_parts[0] in ARITHMETIC)


def _slice(items: dict[int, Item], first: int, ms: list[tuple[int, str]],
           widths: dict[str, int]
           ) -> tuple[tuple[str, ...], list[str], dict[str, int]] | None:
    """(PTX, the members' addresses read from it): the arithmetic between the first member
    and the last that the members' addresses need, copied into registers of the call's
    own; None where it is not that (two results, a special register)."""
    want: set[str] = set()
    need: list[int] = []
    at = dict(ms)
    for k in range(ms[-1][0], first, -1):
        it = items.get(k)
        if it is None or not it.is_instruction:
            continue
        hit = writes(it) & want
        if hit:
            if k in at or len(writes(it)) != 1 or VOLATILE.search(" ".join(it.operands[1:])):
                return None
            need.append(k)
            want = (want - hit) | reads(it)
        if k in at:
            want |= set(REG.findall(at[k]))
    names: dict[str, str] = {}
    temps: dict[str, int] = {}
    decls: list[str] = []
    code: list[str] = []
    out = []
    for k in range(first, ms[-1][0] + 1):
        if k in need:
            it = items[k]
            (dest,) = writes(it)
            bits = register_width(dest, widths)
            if bits is None:
                return None
            temp = f"{TEMP}{len(decls)}"
            decls.append(f".reg .{'pred' if bits == 1 else f'b{bits}'} {temp};")
            ops = [temp, *(renamed(o, names) for o in it.operands[1:])]
            code.append(f"{it.opcode} {', '.join(o.strip() for o in ops)};")
            names[dest] = temp
            temps[temp] = bits
        if k in at:
            out.append(renamed(at[k], names))
    return tuple(decls + code), out, temps


def find(body: list[tuple[int, Item, Classified | None]], merged: dict, converted: set[int],
         widths: dict[str, int]) -> list[CpRun]:
    """The runs of a function body (item index, item, classification), in program order;
    `merged`: coalesce.plan's answer; `converted`: the items of converted branches."""
    items = {i: it for i, it, _ in body}
    out: list[CpRun] = []
    run: list[tuple[int, str]] = []  # (index, address operand)
    info = None

    def close() -> None:
        nonlocal run
        while len(run) > 1:
            got = _slice(items, run[0][0], run, widths)
            if got is not None:
                out.append(CpRun(tuple(i for i, _ in run), tuple(got[1]), got[0], got[2]))
                break
            run = run[:-1]  # (the last member's address cannot be had at the call)
        run = []

    for idx, it, c in body:
        if eligible(it, c, merged, converted, idx):
            assert c is not None
            if run and (len(run) == abi.CP16_RUN_MAX or c.info != info):
                close()
            if not run:
                info = c.info
            run.append((idx, c.address or ""))
        elif not _plain(it, c) or (idx in converted):
            close()
    close()
    return out
