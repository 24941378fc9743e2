"""Keep a warp together across a probe called from a branch (if-conversion).

A probe function that uses the callee-saved convergence barriers (B6-B11) saves and
clears them on entry. Called from `if (lane == 0) mbarrier.arrive(...)`, that clear
releases the warp's other lanes, which wait for lane 0 at the branch's reconvergence
point: the warp then runs split (31 lanes, then 1) until the kernel ends, every later
probe twice (measured on the H100 with ncu: the TMA ring's consumers called the read
probe ~63 times per CTA for 32 reads). Nothing reconverges the two halves: a
`bar.warp.sync` synchronises them but leaves them apart, and the region around each
probe's body (rejoin.py) joins only the lanes that entered it together.

So a forward branch over straight-line code holding such probes is removed: the
region's instructions are predicated on the lanes that would have run them, and the
probes are called by every lane, the others marked off (abi.PROBE_OFF); the probes keep
the lanes together. Only regions the conversion cannot change the meaning of qualify.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from . import first_trip
from .events import Classified, Event
from .ptx import Item, branch_refs

REG_ON = "%__cs_on"  # predicate: the lane runs the converted region
REG_ON_OWN = "%__cs_oo"  # predicate: REG_ON and the instruction's own predicate

# Instructions a region may not hold: control flow, and anything whose meaning depends
# on which lanes execute it together.
BARRED = frozenset({"bra", "call", "ret", "exit", "trap", "brkpt", "bar", "barrier",
                    "activemask", "elect", "vote", "shfl", "match", "redux", "setmaxnreg",
                    "wgmma", "griddepcontrol"})


def takes_off(c: Classified | None, accesses: bool = False) -> bool:
    """A probed instruction whose probe every lane calls, those that skip it marked off
    (abi.PROBE_OFF; a bulk copy's and a bulk store's: abi.BULK_OFF; with `accesses`, a
    shared read, write or atomic's: their address the first running lane's and
    abi.INFO_ECHO, echo.py)."""
    # Bulk copies, stores and their groups too: a probe called by part of a warp left it
    # split (measured on the H100: `if (t == 0) { expect_tx; cp.async.bulk }` left warp 0
    # split, 1 lane and 31, where natively it was whole; so did a bulk store's region
    # converted with its group's commit and wait called under `@%on`, though their probe
    # clears no convergence barrier), and a multicast copy's applying of peers' copies (the
    # checker's multicast.h) needs its warp together.
    # cp.async's groups too: `if (lane == 0) { cp.async; commit; wait_all }` left the warp
    # split (measured on the H100: tests/gpu/test_one_lane_probes.py), its copy echoed.
    return c is not None and ((c.event is Event.MBARRIER and c.result is None) or c.event in (
        Event.TENSOR_LOAD, Event.TENSOR_STORE, Event.BULK_LOAD, Event.BULK_STORE,
        Event.BULK_COMMIT, Event.BULK_WAIT, Event.PROXY_FENCE, Event.ASYNC_COMMIT,
        Event.ASYNC_WAIT, Event.ASYNC_WAIT_ALL) or (
        accesses and c.event in ACCESSES and not c.idem))


# Accesses a region may hold where the module's accesses echo (not where stores pass value
# tags: a lane's tag is its own store's); an idempotent store's rule is not echoed either.
ACCESSES = frozenset({Event.READ, Event.WRITE, Event.ATOMIC, Event.ASYNC_WRITE})


def convertible(c: Classified | None, it: Item, accesses: bool = False) -> bool:
    """An instruction a converted region may hold."""
    if c is None or not c.event.probed:
        return True
    return not it.pred and takes_off(c, accesses)


@dataclass(frozen=True)
class Region:
    branch: int  # module index of the `@p bra L` removed
    members: tuple[int, ...]  # module indices of the instructions between
    on: str  # PTX setting REG_ON in place of the branch
    dropped: tuple[int, ...] = ()  # the `bra L2` of the inverted form, removed too


def find(items: list[tuple[int, Item, Classified | None]], probed: set[int],
         accesses: bool = False, entry: bool = False) -> list[Region]:
    """Regions `@p bra L; <straight-line code>; L:` in one function body (module index,
    item, classification, in order) that hold a probe (module indices in `probed`) and
    that the conversion keeps the meaning of (`accesses`: shared accesses too, takes_off).
    The inverted layout `@p bra L1; bra L2; L1:
    <code> L2:` qualifies only where it holds a bulk copy or store, or a multicast copy
    (measured on the H100 with those alone)."""
    out = []
    refs = branch_refs(it for _, it, _ in items)
    varying: set[str] | None = None  # (first_trip.varying's, once a region qualifies)
    looked = False
    for pos, (idx, it, _) in enumerate(items):
        if not (it.is_instruction and it.opcode == "bra" and it.pred and len(it.operands) == 1):
            continue
        target, members, ok, closed = it.operands[0].strip(), [], True, False
        bulk = False
        on, dropped, body = on_where_not_taken(it.pred), (), pos + 1
        inverted = _inverted(items, pos, target)
        if inverted:  # `@p bra L1; bra L2; L1: <code> L2:` -- the code runs where p holds
            if refs.get(target, 0) > 1:
                continue  # (another way into L1 would pass no REG_ON of ours)
            target, dropped, body = inverted[0], (inverted[1],), inverted[2]
            on = on_where_taken(it.pred)
        depth = 0
        kinds: set[Event] = set()
        for idx2, it2, c2 in items[body:]:  # (up to L, the next label of the branch's scope)
            if it2.kind in ("open", "close"):
                depth += 1 if it2.kind == "open" else -1
                if depth < 0:  # (the branch's scope ends first)
                    break
                continue
            if it2.kind == "label":
                # a label in a nested scope is another label of that name: control flow
                # inside the region, which the conversion would not keep
                closed = depth == 0 and it2.label == target
                break
            if not it2.is_instruction:
                continue
            parts = it2.op_parts
            if parts[0] in BARRED or "sync" in parts or "aligned" in parts or \
                    not convertible(c2, it2, accesses):
                ok = False
                break
            members.append(idx2)
            if c2 is not None and c2.event.probed:
                kinds.add(c2.event)
            bulk |= c2 is not None and (c2.mask is not None or
                                        c2.event in (Event.BULK_LOAD, Event.BULK_STORE))
        if not ok or not closed or not probed.intersection(members) or (dropped and not bulk):
            continue
        if not looked:  # (a fixpoint over the body: only for a function with a region)
            varying, looked = first_trip.varying(items, entry), True
        if varying is not None and it.pred.lstrip("@!") not in varying:
            continue  # (a CTA-uniform branch: no warp takes it in part)
        skip = "\n\t" + _none_on_skips(target) if kinds <= _IDLE_WHEN_OFF else ""
        out.append(Region(idx, tuple(members), on + skip, dropped))
    return out


# Probes that do nothing for a warp whose lanes are all off: a region holding only these
# is skipped by such a warp. Not the others: an mbarrier's probe (a cluster build's drains
# its CTA's mailbox of peers' copies, for every warp that calls) and tensor and bulk copies
# (their lanes off help the leader): skipped, dsmem_ring_2cta's mbarrier regions cost it
# x1.18 device time (H100, bench_async).
_IDLE_WHEN_OFF = ACCESSES | {Event.ASYNC_COMMIT, Event.ASYNC_WAIT, Event.ASYNC_WAIT_ALL}


def _none_on_skips(end: str) -> str:
    """PTX after REG_ON is set: where no lane of the warp runs the region, the warp jumps
    to its end (a vote: the branch is the warp's), as the branch it replaces did; its
    instructions would run on no lane and its probes, every lane off, do nothing. Without
    it, mma_gemm's K loop (bench_async) called the probes of the cp.async regions its
    loads' remainder takes in turn (`@p bra`, p differing in each) with every lane off,
    6% of its device time on the H100."""
    return (f"{{ .reg .pred %__cs_any; .reg .b32 %__cs_am; activemask.b32 %__cs_am; "
            f"vote.sync.any.pred %__cs_any, {REG_ON}, %__cs_am; @!%__cs_any bra {end}; }}")


def _inverted(items: list[tuple[int, Item, Classified | None]], pos: int,
              target: str) -> tuple[str, int, int] | None:
    """For `@p bra L1` at pos followed by `bra L2; L1:` (how NVRTC lays out an `if` whose
    body it places after the join): (L2, the module index of `bra L2`, the position of
    the first item after L1); else None."""
    nxt = list(itertools.islice(((k, it) for k in range(pos + 1, len(items))
                                 for it in (items[k][1],)
                                 if it.is_instruction or it.kind == "label"), 2))
    if len(nxt) < 2:
        return None
    (k1, jump), (k2, label) = nxt
    if not (jump.is_instruction and jump.op_parts[0] == "bra" and not jump.pred and
            len(jump.operands) == 1 and label.kind == "label" and label.label == target):
        return None
    return jump.operands[0].strip(), items[k1][0], k2 + 1


def on_where_not_taken(pred: str) -> str:
    """PTX setting REG_ON where `@pred bra` is not taken (the lanes that run the region)."""
    p = pred.lstrip("@")
    return f"mov.pred {REG_ON}, {p[1:]};" if p.startswith("!") else f"not.pred {REG_ON}, {p};"


def on_where_taken(pred: str) -> str:
    """PTX setting REG_ON where `@pred bra` is taken."""
    p = pred.lstrip("@")
    return f"not.pred {REG_ON}, {p[1:]};" if p.startswith("!") else f"mov.pred {REG_ON}, {p};"


def and_on(pred: str, dst: str) -> str:
    """PTX setting predicate `dst` to `pred` (as an instruction guard: `@p`, `@!p`) and REG_ON."""
    p = pred.lstrip("@")
    if p.startswith("!"):
        return f"not.pred {dst}, {p[1:]};\n\tand.pred {dst}, {dst}, {REG_ON};"
    return f"and.pred {dst}, {p}, {REG_ON};"


def predicated(it: Item) -> tuple[str, str]:
    """(text before, the instruction) for a member: it runs only where REG_ON holds."""
    if not it.pred:
        return "", f"@{REG_ON} {it.text}"
    return and_on(it.pred, REG_ON_OWN) + "\n\t", f"@{REG_ON_OWN} {it.unpredicated}"
