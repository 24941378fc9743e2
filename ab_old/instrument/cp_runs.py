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
the run before it: it and the copies after it keep a call each.
"""

from __future__ import annotations

from typing import NamedTuple

from . import abi
from .events import Classified, Event
from .ptx import Item
from .runs import ARITHMETIC, slice_addresses

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


def find(body: list[tuple[int, Item, Classified | None]], merged: dict, converted: set[int],
         widths: dict[str, int], items: list[Item]) -> list[CpRun]:
    """The runs of a function body (item index, item, classification; `.loc` lines left
    out), in program order; `merged`: coalesce.plan's answer; `converted`: the items of
    converted branches; `items`: the module's, by index."""
    out: list[CpRun] = []
    run: list[tuple[int, str]] = []  # (index, address operand)
    info = None

    def close() -> None:
        nonlocal run
        while len(run) > 1:
            # (the first copy's address is read at the call as it is: the slice starts after)
            got = slice_addresses(items, run[0][0], [(i, [a]) for i, a in run[1:]], widths,
                                  temp=TEMP)
            if got is not None:
                later = tuple(t for (t,) in got[1])
                out.append(CpRun(tuple(i for i, _ in run), (run[0][1], *later), got[0], got[2]))
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
        elif not _plain(it, c) or idx in converted:
            close()
    close()
    return out
