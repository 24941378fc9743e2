"""One call for a run of mbarrier.init in one straight-line stretch.

A pipeline's set-up initialises its stages' mbarriers one after another, by one thread,
before the CTA's first barrier (`if (threadIdx.x == 0) for (s...) init(&full[s], 1),
init(&empty[s], n);`, unrolled): the TMA ring makes nine, each a probe call of its own
(5.5k cycles each, 49.5k of a CTA, in the H200's profile build). One call takes them all
(abi.PROBE_MBAR_INIT_RUN): the checker makes them in program order, where it can by
several lanes at once, each init's own site kept.

A run is MIN to abi.MBAR_INIT_RUN_MAX inits of this CTA's shared memory (`.shared` or
`.shared::cta`), unpredicated, all in one converted branch or none (converge.py: their
lanes are that branch's), with nothing between them but trivia, `.loc` and unpredicated
register arithmetic that carries no probe. Its call goes before the first init; an init
never faults, so the inits run as written, unguarded. A later init's address and count
computed between the inits are computed at the call too, from the same arithmetic, into
registers of the call's own (runs.slice_addresses); an init whose operands need anything
else ends the run before it.
"""

from __future__ import annotations

from typing import NamedTuple

from . import abi
from .events import Classified, Event
from .ptx import REGISTER, Item, register_width
from .runs import ARITHMETIC, slice_addresses

TEMP = "%__cs_z"  # the registers a run's prelude computes later inits' operands into
# Fewer inits keep a call each. The TMA + wgmma GEMM's two: 23.7k cycles a CTA in two calls,
# 23.5k in one (the H200's profile build), and 0.196 -> 0.198 ms by the device's time alone
# (ab_async.py, three rounds): the run's own work (its lanes given their inits, the
# entries' slots emptied one after another) costs what the second call saved. The TMA
# ring's nine: 76k -> 23k cycles, 0.134 -> 0.127 ms.
MIN = 3


class InitRun(NamedTuple):
    members: tuple[int, ...]  # item indices, in program order
    operands: tuple[tuple[str, str], ...]  # each member's (address, count), as read at the call
    prelude: tuple[str, ...]  # declarations and PTX computing them, before the call
    temps: dict[str, int]  # the prelude's registers, by bits
    converted: bool  # in a converted branch: the call's op word says which lanes run it


def eligible(it: Item, c: Classified | None) -> bool:
    """An init that would call abi.PROBE_MBAR alone, on this CTA's shared memory."""
    return c is not None and c.event is Event.MBARRIER and c.op == abi.MB_INIT and \
        not c.reason and it.pred is None and c.space == abi.SPACE_SHARED


def _plain(it: Item, c: Classified | None) -> bool:
    return it.kind == "trivia" or it.opcode == ".loc" or (
        c is None and it.is_instruction and it.pred is None and
        it.op_parts[0] in ARITHMETIC)


def find(body: list[tuple[int, Item, Classified | None]], region_of: dict[int, int],
         widths: dict[str, int], items: list[Item]) -> list[InitRun]:
    """The runs of a function body (item index, item, classification; `.loc` lines left
    out), in program order; `region_of`: a converted branch's members -> its branch;
    `items`: the module's, by index."""
    out: list[InitRun] = []
    run: list[tuple[int, tuple[str, str]]] = []  # (index, (address, count))
    region: int | None = None

    def close() -> None:
        nonlocal run
        while len(run) >= MIN:
            # (the first init's operands are read at the call as they are)
            got = slice_addresses(items, run[0][0], [(i, list(ops)) for i, ops in run[1:]],
                                  widths, temp=TEMP)
            if got is not None:
                later = tuple((a, n) for a, n in got[1])
                out.append(InitRun(tuple(i for i, _ in run), (run[0][1], *later), got[0],
                                   got[2], region is not None))
                break
            run = run[:-1]  # (the last init's operands cannot be had at the call)
        run = []

    for idx, it, c in body:
        here = region_of.get(idx)
        if eligible(it, c) and (not REGISTER.fullmatch(c.arg) or  # (the call's .b32 count)
                                register_width(c.arg, widths) == 32):
            assert c is not None
            if run and (len(run) == abi.MBAR_INIT_RUN_MAX or here != region):
                close()
            if not run:
                region = here
            run.append((idx, (c.address or "", c.arg)))
        elif not _plain(it, c) or (it.is_instruction and here != region):
            close()
    close()
    return out
