"""Keep probe calls out of wgmma windows where the chain allows it.

From `wgmma.mma_async` until the `wgmma.wait_group` that retires its group, the
warpgroup's wgmma unit writes the accumulator registers asynchronously, and the PTX
ISA leaves any other access to them undefined. A call makes ptxas save, move or
restore the caller's live registers around it. ptxas 13.0 protects them itself: with
calls in a kernel it serialises the mma_async (its note C7509), and a Triton fp16
matmul was bit-exact on an H100 with the probes called inside the window too (three
configurations). The rewriter still keeps its calls out of the window where the
chain's shape lets it do so exactly, so the instrumented PTX relies on no ptxas
behaviour there:

- the probes of a chain `mma_async ... mma_async; commit_group` are not called
  before each `mma_async`: its descriptor operands are copied into registers of ours
  there (register moves only), and the calls are made after the commit;
- right after the kernel's `commit_group`, `wgmma.wait_group 0` (ours, not probed)
  retires every group, so no later call finds one in flight;
- `wgmma.fence` (ours) before the first `mma_async` of each chain orders whatever our
  calls did to the registers before the unit reads them again.

The model is unchanged: the deferred probes run in the same order relative to the
commit probe, so the reads belong to the same group, and the kernel's own
`wait_group N` is what retires them in the checker. Our extra wait only makes the
hardware finish earlier. A chain the deferral cannot keep exact (another probed
instruction, a call or a branch target inside it, a predicated mma_async, no commit or a
predicated one) keeps its probes in place, under ptxas's serialisation.
"""

from __future__ import annotations

from dataclasses import dataclass

from .events import Classified, Event
from .ptx import Item, branch_refs

REG_DESC = "%__cs_wd"  # b64 array: the A and B descriptors of deferred mma_async probes


@dataclass(frozen=True)
class Chain:
    mmas: tuple[int, ...]  # module indices of the chain's mma_async, in order
    commit: int  # module index of the commit_group that closes it


def _targets(items: list[tuple[int, Item, Classified | None]]) -> set[str]:
    """Labels some branch of the function jumps to (a `brx.idx` through its `.branchtargets`
    table too)."""
    return set(branch_refs(it for _, it, _ in items))


def find(items: list[tuple[int, Item, Classified | None]], probed: set[int]) -> list[Chain]:
    """The wgmma chains of one function body (module index, item, classification, in
    order) whose probes can be deferred to their commit; `probed` holds the module
    indices of every instruction the rewriter probes."""
    targets = _targets(items)
    chains: list[Chain] = []
    open_: list[int] = []
    ok = True
    for idx, it, c in items:
        wg = c is not None and c.event is Event.WGMMA
        if not open_:
            if wg:
                open_, ok = [idx], not it.pred
            continue
        if it.kind == "label" and it.label in targets:
            ok = False
        if not it.is_instruction:
            continue
        if wg:
            open_.append(idx)
            ok &= not it.pred
        elif c is not None and c.event is Event.WGMMA_COMMIT:
            # (a predicated commit may not commit: the drain after it would not run either,
            # and the deferred probes would call while the chain is in flight)
            if ok and not it.pred:
                chains.append(Chain(tuple(open_), idx))
            open_ = []
        elif it.op_parts[0] in ("ret", "exit"):
            open_ = []  # no commit: left in place
        elif idx in probed or it.op_parts[0] in ("bra", "brx", "call"):
            ok = False
    return chains


def fused(ch: Chain, classified: dict[int, Classified | None]) -> bool:
    """Whether the chain's probes are one call (abi.PROBE_WGMMA4): four mma_async of one
    info word (a K step of 64 halves over 128-byte rows, when the descriptors say so at run
    time: the checker decides, and makes the four calls otherwise)."""
    cs = [classified[m] for m in ch.mmas]
    return len(cs) == 4 and all(c is not None for c in cs) and len(
        {(c.op, c.address is None) for c in cs if c is not None}) == 1


def capture(k: int, a: str | None, b: str) -> tuple[str, str, str]:
    """(PTX copying the k-th deferred probe's descriptors, its A operand, its B operand)."""
    ra, rb = f"{REG_DESC}{2 * k}", f"{REG_DESC}{2 * k + 1}"
    code = [f"mov.b64 {rb}, {b};"]
    if a is not None:
        code.insert(0, f"mov.b64 {ra}, {a};")
    return "\n\t".join(code) + "\n\t", ra if a is not None else "0", rb


FENCE = "wgmma.fence.sync.aligned;"


def drain() -> str:
    """Our wait after a commit (never a predicated one: `find`): no group stays in flight
    across the calls that follow."""
    return "wgmma.wait_group.sync.aligned 0;"


def declare(n: int) -> str:
    """The registers of a function's n deferred probes."""
    return f"\n\t.reg .b64 {REG_DESC}<{2 * n}>;" if n else ""
