"""Keep a warp together through a loop one lane runs: `if (lane == 0) for (...) {...}`.

The TMA producer of a warp-specialised pipeline is one lane running the whole loop: its
probes then run on that lane alone, and the copy's write (a box's shadow) was the
critical path of the pipeline under the checker (measured on the H100: the TMA ring's
producer took ~26k cycles a box, the copy's write by its one lane 9.0k; by 32 lanes 5.3k).
converge.py keeps the warp together over straight-line code; a region holding labels
and branches is done here, by a copy of it that every lane of the warp runs:

    @p bra L; <region>; L:   becomes   %on = !p; %m = the lanes here;
                                       if (exactly one lane of %m has %on) {
                                           <region, every lane>; bra L
                                       } else { @p bra L; <region>; }  L:

(the region may also end with an unconditional `bra L`, other code between it and L).

In the copy, each instruction runs only where %on holds (and its own predicate); each
branch is taken by every lane where it is taken by the lane with %on (a vote over %m),
so the lanes stay together and the one lane follows its own path; every lane calls the
probes, the others marked off (abi.PROBE_OFF): the tensor probe's lanes help write the
box. With more than one lane on, the lanes could disagree on a branch: the region then
runs as it was. Only regions the copy cannot change the meaning of qualify: a single
entry and exit (no branch into it from outside, none out of it but to L), no call, exit,
barrier or warp-collective instruction, and only probes that take lanes marked off
(mbarrier operations, waits included, and tensor copies), none of them predicated.
"""

from __future__ import annotations

from dataclasses import dataclass

from .converge import BARRED, REG_ON, and_on, on_where_not_taken
from .events import Classified, Event
from .ptx import Item

REG_MASK = "%__cs_m"  # b32: the lanes that entered the region together
REG_VOTE = "%__cs_v"  # pred: a branch's decision, the lane with REG_ON's
REG_COUNT = "%__cs_n"  # b32: lanes with REG_ON

# converge.py's, but the region's own branches (checked below) and with nanosleep
_BARRED = (BARRED - {"bra"}) | {"nanosleep", "brx"}  # (a jump table names the original
# region's labels: the lane that takes it would leave the copy while the others vote)


@dataclass(frozen=True)
class Loop:
    branch: int  # module index of the `@p bra L`
    members: tuple[int, ...]  # module indices strictly between it and L (every item)
    target: str  # L
    key: int  # a number for the copy's labels
    labels: frozenset[str]  # the region's labels outside { } scopes: the copy renames them

    def renamed(self, label: str) -> str:
        """A label of the copy: the region's own renamed, any other (L, a scope's) kept."""
        return f"{label}__cs{self.key}" if label in self.labels else label

    @property
    def original(self) -> str:
        """The label the original region runs from."""
        return f"$__cs_loop{self.key}"


def probe_ok(c: Classified, it: Item) -> bool:
    """A probed instruction the copy can call with lanes marked off."""
    if it.pred:
        return False
    return c.event in (Event.MBARRIER, Event.TENSOR_LOAD, Event.TENSOR_STORE)


def find(body: list[tuple[int, Item, Classified | None]]) -> list[Loop]:
    """Loop regions of one function body (every item: module index, item, classification;
    `.loc` statements have no classification)."""
    depth_of: dict[int, int] = {}
    depth = 0
    for idx, it, _ in body:
        if it.kind == "close":
            depth -= 1
        depth_of[idx] = depth
        if it.kind == "open":
            depth += 1
    labels = {it.label: pos for pos, (idx, it, _) in enumerate(body)
              if it.kind == "label" and depth_of[idx] == 0}
    named: dict[str, int] = {}  # how many labels of each name, scopes included
    for _, it, _ in body:
        if it.kind == "label":
            named[it.label] = named.get(it.label, 0) + 1
    branches = [(pos, it.operands[0].strip()) for pos, (idx, it, _) in enumerate(body)
                if it.is_instruction and it.op_parts[0] == "bra" and it.operands]
    out: list[Loop] = []
    end_of_last = -1
    for pos, (idx, it, _) in enumerate(body):
        if pos <= end_of_last or not (it.is_instruction and it.op_parts[0] == "bra" and
                                      it.pred and len(it.operands) == 1 and
                                      depth_of[idx] == 0):
            continue
        target = it.operands[0].strip()
        end = labels.get(target)
        if end is None or end <= pos + 1:
            continue
        # The region ends at L, or at an unconditional branch to L (code for other lanes,
        # such as another warp's role, may sit between it and L).
        for q in range(pos + 1, end):
            iq, rq, _ = body[q]
            if rq.is_instruction and rq.op_parts[0] == "bra" and not rq.pred and \
                    rq.operands and rq.operands[0].strip() == target and depth_of[iq] == 0:
                end = q + 1
                break
        region = body[pos + 1:end]
        inside = {r.label for _, r, _ in region if r.kind == "label"}
        depth0 = frozenset(r.label for idx2, r, _ in region if r.kind == "label" and
                           depth_of[idx2] == 0)
        if any(named[lb] > 1 for lb in depth0) or any(lb in labels for lb in inside - depth0):
            continue  # (a scope's label named like one outside scopes: the copy's renaming
            # would mix them; scopes' own labels, such as each inline asm wait loop's `W`,
            # are kept as they are and may repeat)
        if not any(r.kind == "label" for _, r, _ in region):
            continue  # straight-line code: converge.py's
        ok, probed = True, False
        for idx2, r, c in region:
            # (a declaration outside a { } scope would be made twice: the copy's and the
            # original's)
            if r.kind == "section" or (r.is_directive and depth_of[idx2] == 0 and
                                       r.opcode not in (".loc", ".pragma")):
                ok = False
            if not r.is_instruction:
                continue
            parts = r.op_parts
            if parts[0] in _BARRED or ("sync" in parts and parts[0] != "mbarrier") or \
                    "aligned" in parts:
                ok = False
            elif parts[0] == "bra" and (not r.operands or
                                        r.operands[0].strip() not in inside | {target}):
                ok = False  # out of the region
            elif c is not None and c.event.probed:
                probed = True
                ok = ok and probe_ok(c, r)
            if not ok:
                break
        # a single entry: no branch from outside to a label inside
        if ok and any(t in depth0 and not pos < p < end for p, t in branches):
            ok = False
        if not ok or not probed:
            continue
        out.append(Loop(idx, tuple(i for i, _, _ in region), target, len(out), depth0))
        end_of_last = end
    return out


def entry(loop: Loop, branch: Item) -> str:
    """What replaces the branch: REG_ON, the lanes, and the choice of the copy."""
    return "\n\t".join([
        on_where_not_taken(branch.pred), f"activemask.b32 {REG_MASK};",
        f"vote.sync.ballot.b32 {REG_COUNT}, {REG_ON}, {REG_MASK};",
        f"popc.b32 {REG_COUNT}, {REG_COUNT};",
        f"setp.ne.u32 {REG_VOTE}, {REG_COUNT}, 1;",
        f"@{REG_VOTE} bra {loop.original};"])


def branch(it: Item, target: str) -> str:
    """A branch of the copy: every lane goes where the lane with REG_ON goes."""
    body = f"bra {target};"
    if not it.pred:
        return body
    return (f"{and_on(it.pred, REG_VOTE)}\n\tvote.sync.any.pred {REG_VOTE}, {REG_VOTE}, "
            f"{REG_MASK};\n\t@{REG_VOTE} {body}")
