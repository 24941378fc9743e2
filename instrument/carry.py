"""One probe for a tensor load and the mbarrier.arrive.expect_tx announcing its bytes, and
one for two tensor loads on one mbarrier (`pairs`).

A TMA producer (CUTLASS, Triton, hand-written rings) says how many bytes a phase expects
with `mbarrier.arrive.expect_tx [bar], n` and issues `cp.async.bulk.tensor ... [bar]` a
few register instructions later. The producer is often one lane running the whole loop,
which is the critical path of a pipelined kernel under the checker, and each probe call
costs it a few thousand cycles besides its work (measured on the H100 TMA ring: the
arrive's own probe 6.6k cycles, the tensor probe 14.9k without the arrive, 18.9k with it).
So the load's probe models the arrive too (abi.TENSOR_ARRIVE_TX), first, as the arrive's
own probe would have, and the arrive instruction moves down to just after that probe,
before the load. The instructions in between are register arithmetic that neither read
nor write what the arrive reads or writes, so the kernel computes the same; and the
hardware cannot complete the phase before the model has the arrival, as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import abi
from .events import Classified, Event
from .ptx import REGISTER, Item

# Register arithmetic: no memory, no synchronisation, no control flow, no lanes.
_ALU = frozenset({"mov", "add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem",
                  "abs", "neg", "min", "max", "shl", "shr", "and", "or", "xor", "not", "cnot",
                  "lop3", "shf", "bfe", "bfi", "bfind", "brev", "clz", "popc", "prmt", "cvt",
                  "cvta", "setp", "selp", "set", "slct", "fma", "copysign", "testp"})


@dataclass(frozen=True)
class Carry:
    arrive: int  # module index of the arrive, whose text moves to the load
    load: int  # module index of the tensor load that carries it
    count: str  # the arrive's transaction-byte operand


def _regs(text: str) -> set[str]:
    return set(REGISTER.findall(text))


def _carried(it: Item, c: Classified, load: Item, lc: Classified) -> bool:
    """The arrive announces bytes on the load's mbarrier, under the load's predicate."""
    return (c.event is Event.MBARRIER and c.op == abi.MB_ARRIVE_EXPECT_TX and
            c.result is None and it.pred == load.pred and
            (c.address or "").replace(" ", "") == (lc.result or "").replace(" ", ""))


def find(items: list[tuple[int, Item, Classified | None]], converted: set[int]
         ) -> dict[int, Carry]:
    """Tensor loads (by module index) that carry the arrive.expect_tx before them, in one
    function body (module index, item, classification, in order, `.loc` left out).
    `converted`: members of regions converge.py converts (both or neither may be)."""
    out: dict[int, Carry] = {}
    for pos, (idx, it, c) in enumerate(items):
        if c is None or c.event is not Event.TENSOR_LOAD:
            continue
        written: set[str] = set()  # registers the instructions in between write
        between: list[Item] = []
        for idx2, it2, c2 in reversed(items[:pos]):
            if it2.kind == "trivia":
                continue
            if not it2.is_instruction:
                break  # a label, a scope, a directive: not straight-line code
            if c2 is not None:
                if _carried(it2, c2, it, c) and (idx2 in converted) == (idx in converted):
                    ops = it2.operands
                    at = next(k for k, o in enumerate(ops) if o.startswith("["))
                    reads = _regs(" ".join(ops[at:])) | _regs(it2.pred or "")
                    dest = _regs(" ".join(ops[:at]))  # the state, if not the sink `_`
                    if not reads & written and not any(dest & _regs(b.text) for b in between):
                        out[idx] = Carry(idx2, idx, c2.arg)
                break
            if it2.op_parts[0] not in _ALU or not it2.operands:
                break
            written |= _regs(it2.operands[0])
            between.append(it2)
    return out


@dataclass(frozen=True)
class Pair:
    first: int  # module index of the first tensor load, whose text moves down to the second
    second: int  # module index of the second: one probe before both models the two


def _loads_on_one_mbarrier(it: Item, c: Classified, it2: Item, c2: Classified) -> bool:
    """Two plain tensor loads (not multicast) on the same mbarrier operand, under one
    predicate."""
    return (c.event is Event.TENSOR_LOAD and c2.event is Event.TENSOR_LOAD and
            not c.mask and not c2.mask and it.pred == it2.pred and
            (c.result or "").replace(" ", "") == (c2.result or "").replace(" ", ""))


def pairs(items: list[tuple[int, Item, Classified | None]], converted: set[int],
          carried: dict[int, Carry]) -> dict[int, Pair]:
    """Tensor loads (by module index of the second) made a few register instructions after
    another tensor load on the same mbarrier (a GEMM stage's A and B boxes): one probe
    before the second models both (abi.PROBE_TENSOR2), the first load (and the arrive it
    carries) moved down to just after it. The instructions in between are register
    arithmetic that writes no register the first load or its arrive reads, so the copies
    are the same; neither copy starts before the probe that models both, as before."""
    out: dict[int, Pair] = {}
    taken: set[int] = set()
    by_index = {i: t for i, t, _ in items}
    for pos, (idx, it, c) in enumerate(items):
        if c is None or c.event is not Event.TENSOR_LOAD or idx in carried or c.mask:
            continue
        written: set[str] = set()  # registers the instructions in between write
        for idx2, it2, c2 in reversed(items[:pos]):
            if it2.kind == "trivia":
                continue
            if not it2.is_instruction:
                break
            if c2 is not None:
                if (_loads_on_one_mbarrier(it2, c2, it, c) and idx2 not in taken and
                        idx2 not in out and (idx2 in converted) == (idx in converted)):
                    reads = _regs(" ".join(it2.operands)) | _regs(it2.pred or "")
                    k = carried.get(idx2)
                    if k is not None:
                        arrive = by_index[k.arrive]
                        reads |= _regs(" ".join(arrive.operands)) | _regs(arrive.pred or "")
                    if not reads & written:
                        out[idx] = Pair(idx2, idx)
                        taken.add(idx2)
                break
            if it2.op_parts[0] not in _ALU or not it2.operands:
                break
            written |= _regs(it2.operands[0])
    return out
