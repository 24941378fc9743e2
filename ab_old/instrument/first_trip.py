"""Loops whose shared-memory accesses are checked on their first trip only (phase mode).

A tiled kernel's K loop (`for k0: { As[..] = A[..]; Bs[..] = B[..]; __syncthreads();
acc += As[..] * Bs[..]; __syncthreads(); }`) touches the same shared bytes from the same
lanes on every trip: the addresses live in registers computed before the loop. In phase
mode (only CTA-wide barriers: the checker compares accesses of one barrier interval)
every later trip repeats the first trip's verdicts, so the loop's access probes run on
its first trip only (measured on the H100, bench_clean's sgemm_tiled at 4096³, 256 trips:
91.6 ms -> 21.3 ms under consan, native 6.6 ms), and so do its barrier probes: every warp
skips the same ones, so the warps' phases stay equal to one another, and the code after
the loop begins a phase of its own. docs/model.md states the rule and why it cannot
change a verdict; in short, a loop qualifies when:

- it is one basic block: a label H, then straight-line code (no label, branch, call,
  return or exit) up to a `bra H` that is the only branch to H, entered by falling into H;
- its probed events are shared-memory reads, writes and atomics and unpredicated CTA-wide
  barriers, nothing else (no async copy, mbarrier, fence-ordered event);
- no register that an access's address or guard predicate reads is written in the loop
  (the same lanes touch the same bytes on every trip: a later trip's footprint is the
  first's, or part of it when lanes leave the loop);
- with a barrier in the loop: no access after its last barrier (a later trip's accesses
  never share a barrier interval with code after the loop), and every thread of the CTA
  takes the same path up to and through the loop: every conditional branch and barrier
  guard of the kernel is CTA-uniform (kernel parameters, %ctaid, %ntid, constants and
  what is computed from them alone, not what a stretch only some threads run writes, nor
  a device function's result), except branches to an exit block (`exit`, a kernel's
  `ret`);
- no access in the loop is a store that passes a value tag (stores replicated across
  warps are judged by the values they write, which change from trip to trip).

The probes of such a loop are skipped where the thread's first-trip flag is off: the flag
is set where the loop is entered and cleared before its branch back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .events import Classified, Event
from .ptx import Item, branch_refs

REG_FIRST = "%__cs_first"  # pred: this thread runs the first trip of the loop it is in

_ACCESSES = {Event.READ, Event.WRITE, Event.ATOMIC}
_BARRIERS = {Event.BAR_SYNC, Event.BAR_RED}
_NOT_PROBED_OK = {Event.FENCE, Event.WARP_SYNC, Event.ADDRESS}
_CONTROL = {"bra", "brx", "call", "ret", "exit", "trap"}

# Instructions whose results depend only on their operands (uniformity follows operands).
_PURE = {
    "add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg", "min",
    "max", "and", "or", "xor", "not", "cnot", "shl", "shr", "selp", "slct", "setp", "set",
    "mov", "cvt", "cvta", "bfe", "bfi", "brev", "popc", "clz", "prmt", "shf", "lop3", "fma",
    "copysign", "testp", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "bmsk",
    "szext", "dp4a", "dp2a", "addc", "subc", "madc",
}
# Special registers with one value across the CTA.
_UNIFORM_SPECIAL = {
    "%ctaid", "%nctaid", "%ntid", "%gridid", "%clusterid", "%nclusterid", "%cluster_ctaid",
    "%cluster_nctaid", "%cluster_ctarank", "%cluster_nctarank", "%is_explicit_cluster",
    "%total_smem_size", "%dynamic_smem_size", "%aggr_smem_size",
}
_REG = re.compile(r"%[A-Za-z_$][\w$]*")
_BRACKETS = re.compile(r"\[[^\]]*\]")


@dataclass(frozen=True)
class FirstTripLoop:
    head: int  # module index of the loop's label
    branch: int  # module index of its branch back to the label
    accesses: tuple[int, ...]  # module indices of its probed accesses
    barriers: tuple[int, ...] = ()  # module indices of its barriers (their probes too)


def _written(it: Item) -> set[str]:
    """Registers an instruction may write: those of its first operand outside brackets
    (an over-approximation: a source there, as in `bar.warp.sync %r`, counts too)."""
    if not it.operands:
        return set()
    return set(_REG.findall(_BRACKETS.sub(" ", it.operands[0])))


def _guard(it: Item) -> str | None:
    return it.pred.lstrip("@!") if it.pred else None


def _base(address: str | None) -> str | None:
    m = _REG.match((address or "").strip())
    return m.group(0) if m else None


class _Uniformity:
    """Registers whose value may differ between threads of the CTA (a fixpoint over the
    function: a register is uniform when every instruction writing it is pure, with
    uniform operands and guard, or an ld.param of one of the kernel's own parameters, and
    it is not in a seed). A callee's return value (an ld.param of a .param declared in
    the body) may differ. The instructions are read once and the fixpoint is a worklist
    over their uses (`closure` is asked again with each larger seed by `varying`), where
    passes over every definition until none changed took `varying` 8.5 ms on an unrolled
    bitonic sort's module, 6.9 ms so (2-core CPU machine, medians of 9)."""

    def __init__(self, items: list[Item], entry: bool):
        defs = [(it, _written(it)) for it in items if it.is_instruction]
        defined = set().union(*(d for _, d in defs)) if defs else set()
        local_params = {it.operands[-1].split()[-1].split("[")[0] for it in items
                        if it.kind == "stmt" and it.opcode == ".param" and it.operands}
        self.dests: list[set[str]] = []
        self.odd: list[int] = []  # definitions that make their registers vary, whatever else
        self.users: dict[str, list[int]] = {}  # register -> the definitions that read it
        for it, dests in defs:
            if not dests:
                continue
            k = len(self.dests)
            self.dests.append(dests)
            op = it.op_parts[0]
            kernel_param = entry and it.opcode.startswith("ld.param") and not (
                set(re.findall(r"[A-Za-z_$][\w$]*", " ".join(it.operands[1:]))) & local_params)
            srcs = set(_REG.findall(" ".join(it.operands[1:])))
            if _guard(it):
                srcs.add(_guard(it))
            if not (op in _PURE or kernel_param) or any(
                    s not in defined and s not in _UNIFORM_SPECIAL for s in srcs):
                self.odd.append(k)
            for r in srcs:
                self.users.setdefault(r, []).append(k)

    def closure(self, seed: set[str] = frozenset()) -> set[str]:
        bad = set(seed)
        work = list(self.odd)
        for r in seed:
            work.extend(self.users.get(r, ()))
        while work:
            new = self.dests[work.pop()] - bad
            if new:
                bad |= new
                for r in new:
                    work.extend(self.users.get(r, ()))
        return bad


def _exit_labels(items: list[Item], entry: bool) -> set[str]:
    """Labels whose first instruction is an unguarded `exit`, or `ret` in a kernel (in a
    device function `ret` goes back to the caller, which may pass more barriers)."""
    out, pending = set(), []
    leave = ("ret", "exit") if entry else ("exit",)
    for it in items:
        if it.kind == "label":
            pending.append(it.label)
        elif it.is_instruction:
            if it.pred is None and it.op_parts[0] in leave:
                out.update(pending)
            pending = []
    return out


def _is_barrier(c: Classified | None) -> bool:
    return c is not None and c.event in (*_BARRIERS, Event.BAR_ARRIVE)


def _closed(body: list[tuple[int, Item, Classified | None]], lo: int, hi: int,
            refs: dict[str, int]) -> bool:
    """Whether every thread that enters positions lo..hi leaves it at hi (or leaves the
    kernel) without passing a barrier: no barrier, no unconditional branch, conditional
    branches only to labels in the range, and labels in it reached only from in it."""
    inside: dict[str, int] = {}
    for _, it, c in body[lo:hi + 1]:
        if _is_barrier(c):
            return False
        if it.is_instruction and it.op_parts[0] in ("bra", "brx", "call"):
            if it.pred is None and it.op_parts[0] == "bra":
                return False
            t = it.operands[0].strip() if it.operands else ""
            inside[t] = inside.get(t, 0) + 1
    labels = [it.label for _, it, _ in body[lo:hi + 1] if it.kind == "label"]
    return all(t in labels for t in inside) and all(
        inside.get(lb, 0) == refs.get(lb, 0) for lb in labels)


def _contained(body: list[tuple[int, Item, Classified | None]], lo: int, hi: int,
               pos_of_label: dict[str, int]) -> bool:
    """Whether every branch in positions lo..hi goes to a label in them: a thread that
    took a branch into the stretch leaves it only at its end (or leaves the function)."""
    return all(lo <= pos_of_label.get(it.operands[0].strip(), -1) <= hi
               for _, it, _ in body[lo:hi + 1]
               if it.is_instruction and it.op_parts[0] == "bra" and it.operands)


def varying(body: list[tuple[int, Item, Classified | None]], entry: bool,
            barriers: bool = False) -> set[str] | None:
    """Registers whose value may differ between threads of the CTA somewhere in the
    function: `_Uniformity`'s, with those that a stretch only some threads run (or run more
    often) writes, until nothing changes. None where that is not followed: a jump table,
    or a branch on such a register over a stretch a thread may leave elsewhere than at its
    end (with `barriers`: or that passes a barrier, or is entered from outside: `_closed`)."""
    if any(it.is_instruction and it.op_parts[0] == "brx" for _, it, _ in body):
        return None
    items = [it for _, it, _ in body]
    exits = _exit_labels(items, entry)
    pos_of_label = {it.label: p for p, (_, it, _) in enumerate(body) if it.kind == "label"}
    refs = branch_refs(items)

    def stretch(lo: int, hi: int) -> bool:
        return _closed(body, lo, hi, refs) if barriers else \
            _contained(body, lo, hi, pos_of_label)

    seed: set[str] = set()
    uniformity = _Uniformity(items, entry)
    branches = [(p, it, _guard(it)) for p, (_, it, _) in enumerate(body)
                if it.is_instruction and it.pred and it.op_parts[0] == "bra"]
    while True:
        bad = uniformity.closure(seed)
        grown = set(seed)
        for p, it, g in branches:
            if g not in bad:
                continue
            t = it.operands[0].strip()
            q = pos_of_label.get(t)
            if t in exits:
                continue
            if q is None or not stretch(min(p, q), max(p, q)):
                return None
            for _, w, _ in body[min(p, q):max(p, q) + 1]:
                if w.is_instruction:
                    grown |= _written(w)
        if grown == seed:
            return bad
        seed = grown


def _uniform_control(body: list[tuple[int, Item, Classified | None]], entry: bool) -> bool:
    """Every thread of the CTA that does not leave the kernel early passes the same
    barriers in the same order: each conditional branch and barrier guard is CTA-uniform,
    or the branch goes to an exit block, or it skips (or repeats) a stretch that every
    thread leaves at its end without passing a barrier (an if without else, a loop with no
    barrier)."""
    bad = varying(body, entry, barriers=True)
    return bad is not None and not any(
        _is_barrier(c) and _guard(it) in bad for _, it, c in body if it.is_instruction)


def find(body: list[tuple[int, Item, Classified | None]], value_tags: bool,
         entry: bool) -> list[FirstTripLoop]:
    """The loops of a function body (every item, with its module index and class) whose
    access probes may run on the first trip only (module docstring)."""
    if any(it.is_instruction and it.op_parts[0] == "brx" for _, it, _ in body):
        return []  # (a jump table may enter a loop anywhere)
    pos_of_label = {it.label: p for p, (_, it, _) in enumerate(body) if it.kind == "label"}
    refs = branch_refs(it for _, it, _ in body)
    uniform: bool | None = None
    out = []
    for b, (bidx, it, _) in enumerate(body):
        if not (it.is_instruction and it.op_parts[0] == "bra" and it.operands):
            continue
        target = it.operands[0].strip()
        h = pos_of_label.get(target)
        if h is None or h > b or refs.get(target) != 1 or not _entered_by_falling(body, h):
            continue
        inner = body[h + 1:b]
        got = _qualifies(inner, value_tags, refs)
        if got is None:
            continue
        accesses, barriers = got
        if barriers:
            if uniform is None:
                uniform = _uniform_control(body, entry)
            if not uniform:
                continue
        out.append(FirstTripLoop(body[h][0], bidx, accesses, barriers))
    return out


def _entered_by_falling(body: list[tuple[int, Item, Classified | None]], h: int) -> bool:
    for _, it, _ in reversed(body[:h]):
        if it.kind == "label":
            continue
        if it.is_instruction:
            return not (it.pred is None and it.op_parts[0] in ("bra", "ret", "exit", "trap"))
    return True


def _qualifies(inner: list[tuple[int, Item, Classified | None]], value_tags: bool,
               refs: dict[str, int]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(the probed accesses, the barriers) of a loop's body, or None. The body
    may hold ifs without else (a guarded branch forward to a label of the body, that label
    reached from the body only) around code with no access or barrier: a bounds-checked
    global load."""
    written: set[str] = set()
    accesses: list[tuple[int, Item, Classified]] = []
    barriers: list[int] = []
    label_at = {it.label: p for p, (_, it, _) in enumerate(inner) if it.kind == "label"}
    from_inside: dict[str, int] = {}
    skipped: set[int] = set()  # positions an if may skip
    for p, (_, it, c) in enumerate(inner):
        if not it.is_instruction:
            continue
        op = it.op_parts[0]
        if op == "bra" and it.pred is not None and it.operands:
            t = label_at.get(it.operands[0].strip())
            if t is None or t < p:
                return None
            from_inside[inner[t][1].label] = from_inside.get(inner[t][1].label, 0) + 1
            skipped.update(range(p + 1, t))
            continue
        if op in _CONTROL:
            return None
        written |= _written(it)
        if c is None:
            continue
        if c.event in _ACCESSES:
            if value_tags and c.event is Event.WRITE and not c.idem:
                return None
            accesses.append((p, it, c))
        elif c.event in _BARRIERS:
            if it.pred is not None:
                return None
            barriers.append(p)
        elif c.event not in _NOT_PROBED_OK:
            return None
    if not accesses or any(from_inside.get(lb, 0) != refs.get(lb, 0) for lb in label_at):
        return None
    if skipped.intersection(barriers):
        return None
    last_barrier = max(barriers, default=-1)
    for p, it, c in accesses:
        if p in skipped or (_base(c.address) or "") in written or \
                (_guard(it) or "") in written:
            return None
        if last_barrier >= 0 and p > last_barrier:
            return None
    return tuple(inner[p][0] for p, _, _ in accesses), tuple(inner[p][0] for p in barriers)
