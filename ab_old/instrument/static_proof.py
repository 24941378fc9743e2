"""Prove before a launch that a kernel's shared-memory accesses cannot race.

Triton's reductions (softmax, layer norm) and many CUDA tiles and tree reductions use
shared memory the same way: CTA-wide `bar.sync 0` cut the kernel into intervals, and each
address and each branch around an access is a function of the thread index and constants
alone. Then every access of a launch is known before it runs: the kernel is executed on
the host for every thread of the block at once (numpy arrays, one entry per thread; a
divergent branch splits the threads, which meet again where the lowest-addressed path
reaches them, as on the GPU), and the model's rules (docs/model.md, "Kernels proven
before launch") are checked on what it did:

- within an interval, no byte one warp writes is read or written by another warp (warps
  are the model's logical threads; the barriers order all else);
- every byte read was written before it: by some warp in an earlier interval, or earlier
  in the same interval by the same thread, or by its warp while that warp ran converged;
  each by a write certain to run.

A kernel that passes cannot give a finding, so the front ends run it natively and count
it as checked (the instrumented build is still made, for `consan.prepare`). Whatever the
evaluation cannot decide refuses the proof (a branch around an access or barrier whose
direction depends on memory or a parameter, an address from memory, a call, any async or
mbarrier operation, a barrier some thread does not reach), and the kernel is instrumented
as before: a refusal loses nothing.

A branch whose direction is not known may still jump around code that touches no shared
memory and no barrier (a loop over a row's columns whose length is a parameter): every
thread reaches the code after it, and what that code writes is unknown from there on. A
loop that every thread leaves together, on a value they all loaded from one shared word
(Triton's spin lock), is followed for any trip count (one run of one trip, one of three).
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from . import abi, wgmma_desc
from .abi import CPASYNC_GROUP_ENDS
from .abi import GRANULE_BYTES as GRANULE
from .coalesce import split_address
from .events import Classified, Event
from .proof_mbarrier import BYTES as MBAR_BYTES
from .proof_mbarrier import MBarrier
from .proof_mbarrier import Op as MbOp
from .proof_named import IDS as NAMED_IDS
from .proof_named import NamedBarrier
from .proof_rules import (
    AGENT_COPY,
    AGENT_WGMMA,
    MAX_ROWS,
    NEVER,
    TOO_MANY,
    Access,
    Refused,
    deepcopy_fields,
    judge,
    rows_of,
)
from .ptx import SPECIAL_REGISTER, Function, Item, ptx_int, register_width, register_widths

_NO_DEST = ("st", "red", "bar", "barrier", "prefetch", "fence", "membar", "bra", "ret",
            "exit", "trap", "brkpt", "nanosleep", "pmevent")
_PARAM = re.compile(r"\.param((?:\s*\.[\w:]+(?:\s+\d+)?)*)\s+([\w$]+)")
_CLUSTER = re.compile(r"\.(?:reqnctapercluster|explicitcluster|maxclusterrank)\b")
_REQNCTA = re.compile(r"\.reqnctapercluster\s+(\w+)\s*(?:,\s*(\w+))?\s*(?:,\s*(\w+))?")
# a `.shared::cluster` address from `mapa`: the symbol's name with this suffix, its value
# the offset plus the CTA rank it names shifted left by CLUSTER_SHIFT (the GPU's own encoding
# is not the ISA's to state: a difference of two ranks' addresses is not followed)
CLUSTER_TAG = "@cluster"
CLUSTER_SHIFT = 32
_PARAM_TYPE = re.compile(r"\.([bsuf])(8|16|32|64)\b")
_REQNTID = re.compile(r"\.reqntid\s+(\w+)\s*(?:,\s*(\w+))?\s*(?:,\s*(\w+))?")
_TYPE = re.compile(r"^([bus])(8|16|32|64)$")
_ALLOWED = (Event.FENCE, Event.WARP_SYNC)  # order nothing the proof relies on
_ASYNC_BOOKKEEPING = (Event.ASYNC_COMMIT, Event.ASYNC_WAIT, Event.ASYNC_WAIT_ALL,
                      Event.WGMMA_COMMIT, Event.WGMMA_WAIT, Event.BULK_COMMIT, Event.BULK_WAIT)
_COPIES_IN = (Event.TENSOR_LOAD, Event.BULK_LOAD)  # the copy engine writes, on an mbarrier
_COPIES_OUT = (Event.TENSOR_STORE, Event.BULK_STORE)  # it reads, until a bulk-group wait
_M64 = (1 << 64) - 1
# operations whose result is the same in every thread whose operands are
_UNIFORM_OPS = frozenset(("mov", "add", "sub", "mul", "mad", "and", "or", "xor", "not",
                          "neg", "shl", "shr", "min", "max", "div", "rem", "bfe", "selp",
                          "setp", "cvt"))
# one-operand operations a value key follows (Triton converts a reduced row before its
# replicated stores; arithmetic would cost every step of a loop a key)
_KEYED_OPS = frozenset(("mov", "cvt", "neg", "not", "abs"))
_UNIFORM_SPECIAL = frozenset(f"%{r}.{d}" for r in ("ctaid", "nctaid", "ntid") for d in "xyz")
MAX_SHARED = 256 * 1024  # past any CTA's shared memory
_PARAM_SYM = "param "  # a parameter's address: the symbol of a value (no shared name has a space)
# The largest address a kernel's one shared variable is taken to have: ptxas compiles
# `mov.u32 %r, smem` for sm_90a to 0x400 (past the 1 KiB the system reserves) plus the
# CTA's cluster rank shifted to bit 24 (in a cluster, where the proof follows no descriptor:
# _rel)
S_MAX = 1 << 16
MAX_LOOPS = 3  # uniform loops of unknown trip count followed (2^n runs)
# instructions executed (for all threads at once) before giving up: a step cost 0.2-0.4
# ms on the 2-core development machine (sgemm_tiled at 1024^3: 28,729 steps, 6.1 s; the
# Triton corpus' longest proof, its matmuls: 5,382), so a refusal here costs some seconds
# of host time at most, once per launch values
MAX_STEPS = 20_000
# a loop of a known trip count whose body the uniform-loop rule takes is followed as one of
# unknown trip count from its WIDEN_AT-th trip on (the registers its trips step made
# unknown): Triton-free CUDA GEMMs' K loops (bench_clean's sgemm_tiled at 4096^3: 256
# trips, over MAX_STEPS) then cost WIDEN_AT + 3 trips on the host, not one per trip
WIDEN_AT = 4
# a branch on a condition every thread holds alike but not known before launch (a
# persistent kernel's tile loop: one more tile or none, by %ctaid) is followed both ways,
# each in a run of its own (a CTA's threads all go one way), in a proof for one launch's
# grid: at most MAX_PATHS runs, together within FORK_STEPS of host work
MAX_PATHS = 16
FORK_STEPS = MAX_STEPS
_TOO_LONG = "instructions to run on the host"
_UNBOUNDED = 1 << 62  # a bound at or past it is none (int64 sums of two stay exact)
_RANGED_OPS = frozenset(("mov", "cvt", "add", "sub", "mul", "mad", "shl", "shr", "and", "min",
                         "max", "rem", "div"))


@dataclass(frozen=True)
class Proof:
    """A kernel whose every launch with `threads` threads is race-free and reads only bytes
    it wrote."""

    kernel: str
    threads: int
    accesses: int  # shared-memory instructions
    barriers: int  # CTA-wide barriers the threads pass
    params: int = 0  # integer parameters whose launch values it was made for
    ctas: int = 1  # the CTAs of a cluster, proven together (`threads` each)
    grid: bool = False  # made for its launch's grid (a comparison %ctaid's range decided)

    def sentence(self) -> str:
        given = (f", for the values of {self.params} integer parameter"
                 f"{'' if self.params == 1 else 's'} at launch" if self.params else "")
        if self.grid:
            given += (" and" if given else ", for") + " the launch's grid"
        who = f"{self.threads} threads" if self.ctas == 1 else \
            f"clusters of {self.ctas} CTAs of {self.threads} threads"
        kind = "CTA" if self.ctas == 1 else "cluster"
        return (f"proven race-free before launch ({self.accesses} shared-memory "
                f"access{'' if self.accesses == 1 else 'es'}, {self.barriers} {kind} "
                f"barrier{'' if self.barriers == 1 else 's'} passed, {who}, "
                f"every byte read written first{given}); it runs natively")


_Refused = Refused


@dataclass
class _Val:
    """A register in every thread: `sym` + a (a shared symbol's address plus an offset) or
    a plain integer when sym is None; `known`: the threads in which the value is known.
    `rel` = (symbol, k): an integer whose value on the GPU is a + (the symbol's address >> k),
    made from a shared address by operations exact under _rel's conditions (a wgmma
    descriptor's start field: the address shifted right by 4 and masked), usable only as
    a descriptor. `uni`: where not known, the same in every thread that has not returned
    (a load of one shared address by all of them, or arithmetic on such values)."""

    sym: str | None
    a: np.ndarray  # uint64
    known: np.ndarray  # bool
    rel: tuple[str, int] | None = None
    uni: bool = False
    # where not known: a per-thread key (-1: none), equal keys holding equal values (loads
    # of one shared address between the same writes, and pure operations of such values)
    key: np.ndarray | None = None
    # where not known: bounds lo <= value <= hi per thread (int64; hi >= _UNBOUNDED: none),
    # from %ctaid's range in a proof for one launch's grid, through _range's operations
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None

    __deepcopy__ = deepcopy_fields


@dataclass
class _Pred:
    v: np.ndarray  # bool
    known: np.ndarray  # bool
    uni: bool = False  # as _Val's
    # an `elect.sync` result, or its `and` with others: the value were every lane elected
    # (the run elects each warp's first lane; _elected checks that the choice is moot)
    base: np.ndarray | None = None

    __deepcopy__ = deepcopy_fields


def reqntid(header_items: list[Item]) -> tuple[int, int, int] | None:
    """The `.reqntid` block of a kernel's performance directives (comments ignored; its
    numbers read as PTX reads them: `0100` is 64)."""
    for it in header_items:
        if it.kind != "stmt":
            continue
        m = _REQNTID.search(it.code)
        if m:
            try:
                return tuple(ptx_int(g) if g else 1  # type: ignore[return-value]
                             for g in m.groups())
            except ValueError:
                return None
    return None


Params = dict[int, tuple[int, int]]  # parameter position -> (value, bits the launch passes)
# the shared-memory bytes one copy through each of the kernel's tensor-map parameters moves
# (`.param .align 64 .b8 name[128]`, in order; None where the map is not known)
Maps = tuple[int | None, ...]
_MAP_PARAM = re.compile(r"\.param\s+\.align\s+(?:64|128)\s+\.b8\s+([\w$]+)\s*\[\s*128\s*\]")


class Refusal(str):
    """Why a kernel is not proven; `unknown`: a value not known before launch was the
    cause, so the launch's own parameters may still prove it."""

    unknown: bool = False


def prove(fn: Function, header_items: list[Item],
          classify: Callable[[Item], Classified | None], shared: set[str],
          dims: tuple[int, int, int] | None = None,
          params: Params | None = None, maps: Maps = (),
          cluster: tuple[int, int, int] | None = None,
          grid: tuple[int, int, int] | None = None) -> Proof | Refusal:
    """The kernel's proof for a block of `dims` (else its `.reqntid`), or why there is
    none (a sentence for tests and --verbose). `params`: the integer values of some of its
    parameters (by position), `maps`: its tensor maps' copy sizes, `grid`: its grid (in
    CTAs), for a proof of one launch; `cluster`: the launch's cluster shape (else its
    `.reqnctapercluster`): the proof is then made for every CTA of one cluster at once."""
    if not fn.is_entry:
        return Refusal("a device function (only kernels are proven)")
    dims = dims or reqntid(header_items)
    if dims is None:
        return Refusal("no .reqntid: the block size is not known before launch")
    if not getattr(shared, "complete", False):
        return Refusal("a `.shared` declaration of the module not understood: where its "
                       "variables sit is not known")
    ctas = cluster_dims(header_items, cluster)
    if isinstance(ctas, Refusal):
        return ctas
    values = _param_values(header_items, params)
    sizes = _map_sizes(header_items, maps)
    runs: list[_Prover] = []
    widen, widened = True, ""
    judged: set[bytes] = set()  # (the intervals rule 1 found clean in any run: see judge)

    def make(loops: dict[int, int], ways: tuple[bool, ...]) -> _Prover:
        runs.append(_Prover(fn, dims, classify, shared, values, loops, sizes,
                            param_names(header_items), ctas, widen, grid, ways))
        runs[-1].judged = judged
        return runs[-1]
    while True:
        try:
            return _every_path(make, runs)[1]
        except Exception as exc:  # noqa: BLE001 - a refusal, or an instruction misread
            if widen and any(p.widened for p in runs):  # (again, every trip run: the
                widen, widened = False, str(exc)  # registers made unknown may be what
                runs.clear()  # refused it)
                continue
            if not isinstance(exc, _Refused):
                return Refusal(f"the proof could not evaluate this kernel "
                               f"({type(exc).__name__}: {exc})")
            out = Refusal(f"{exc}; and with its long loops followed as uniform ones from "
                          f"their trip {WIDEN_AT}: {widened}" if widened and
                          (_TOO_LONG in str(exc) or TOO_MANY in str(exc)) else str(exc))
            out.unknown = any(p.guessed for p in runs) or "not known before launch" in out
            return out


def cluster_dims(header_items: list[Item], launch: tuple[int, int, int] | None = None
                 ) -> tuple[int, int, int] | Refusal:
    """The shape of the kernel's clusters: its `.reqnctapercluster`, else the launch's
    (1, 1, 1: no cluster); a kernel that names clusters without either, or a launch that
    asks for another shape than the one compiled in, is refused."""
    code = " ".join(it.code for it in header_items)
    m = _REQNCTA.search(code)
    try:
        fixed = tuple(ptx_int(g) if g else 1 for g in m.groups()) if m else None
    except ValueError:
        return Refusal(f"`{m.group(0) if m else ''}` not understood")
    given = tuple((tuple(int(x) for x in launch) + (1, 1))[:3]) if launch else None
    if fixed and given and fixed != given:
        return Refusal(f"launched with clusters of {given}, not its .reqnctapercluster {fixed}")
    dims = fixed or given
    if dims is None:
        named = _CLUSTER.search(code)
        if named:
            return Refusal(f"`{named.group(0)}` with no cluster shape known before launch")
        return (1, 1, 1)
    if min(dims) < 1 or dims[0] * dims[1] * dims[2] > 16:
        return Refusal(f"a cluster of {dims} CTAs")
    return dims  # type: ignore[return-value]


MAP_BITS = 1024  # a tensor-map parameter's bits in param_layout


def param_layout(ptx: str, kernel: str) -> list[int] | None:
    """The bits of each parameter kernel `kernel` of module `ptx` declares, in order:
    MAP_BITS for a tensor map (`.param .align 64 .b8 name[128]`), 0 for a type not known;
    None where the module has no such kernel."""
    m = re.search(rf"\.entry\s+{re.escape(kernel)}\s*\(([^)]*)\)", ptx)
    if m is None:
        return None
    header = m.group(1)
    maps = set(_MAP_PARAM.findall(header))
    out = []
    for types, name in _PARAM.findall(header):
        t = _PARAM_TYPE.search(types)
        out.append(MAP_BITS if name in maps else int(t.group(2)) if t else 0)
    return out


def param_names(header_items: list[Item]) -> list[str]:
    """The kernel's parameters' names, in order."""
    return [name for name, _ in _param_decls(header_items)]


def _param_decls(header_items: list[Item]) -> list[tuple[str, int]]:
    """(name, bits of its type; 0 for none known) of each parameter, in order."""
    out = []
    for types, name in _PARAM.findall(" ".join(it.code for it in header_items)):
        t = _PARAM_TYPE.search(types)
        out.append((name, int(t.group(2)) if t else 0))
    return out


def _map_sizes(header_items: list[Item], maps: Maps) -> dict[str, int]:
    """A tensor-map parameter's name -> the bytes one copy through it moves, where known."""
    names = _MAP_PARAM.findall(" ".join(it.code for it in header_items))
    return {n: b for n, b in zip(names, maps, strict=False) if b}


def _param_values(header_items: list[Item], params: Params | None
                  ) -> dict[str, tuple[int, int]]:
    """A parameter's name -> (the value the kernel finds in its declared bits, those bits),
    for each one the launch passes at least that many bits of."""
    if not params:
        return {}
    decls = _param_decls(header_items)
    out = {}
    for i, (v, bits) in params.items():
        if 0 <= i < len(decls) and 0 < decls[i][1] <= bits:
            out[decls[i][0]] = (v & ((1 << decls[i][1]) - 1), decls[i][1])
    return out


def trace(fn: Function, header_items: list[Item],
          classify: Callable[[Item], Classified | None], shared: set[str],
          dims: tuple[int, int, int] | None = None,
          params: Params | None = None, maps: Maps = (),
          cluster: tuple[int, int, int] | None = None,
          grid: tuple[int, int, int] | None = None) -> list[Access]:
    """The accesses as executed, before the rules judge them (for tests that replay them
    into the checker); a refusal of the execution itself raises ValueError."""
    dims = dims or reqntid(header_items)
    if dims is None:
        raise ValueError("no .reqntid")
    ctas = cluster_dims(header_items, cluster)
    if isinstance(ctas, Refusal):
        raise ValueError(str(ctas))
    values = _param_values(header_items, params)
    sizes = _map_sizes(header_items, maps)

    def make(loops: dict[int, int], ways: tuple[bool, ...]) -> _Prover:
        p = _Prover(fn, dims, classify, shared, values, loops, sizes,
                    param_names(header_items), ctas, grid=grid, ways=ways)
        p.judge = False
        return p
    try:
        return _every_path(make)[0].accesses
    except _Refused as why:
        raise ValueError(str(why)) from None


_DECL = re.compile(r"\.(reg|shared|local)\b[^;]*?\s([%\w$][^;]*);")
_NAME = re.compile(r"([%\w$.]+?)(?:<(\d+)>)?$")


def _scopes(body: list[Item]) -> tuple[dict[int, int], set[str], dict[int, list[str]]]:
    """Each branch's target (a label resolves in the innermost block around the branch
    that declares it, as in PTX), the registers nested blocks declare without a `%`, and
    by the index of each nested block's `{` the registers it declares (new, so unknown, at
    each entry: a sibling block's register of one name is another register).
    Inline assembly's blocks (`{ .reg .pred p; W: ... @!p bra W; }`, repeated wherever it
    is inlined) are followed where a nested declaration shadows no outer name: a register
    name then stands for one register."""
    stack = [-1]
    labels: dict[tuple[int, str], int] = {}
    scope: list[tuple[int, ...]] = []
    declared: dict[int, list[tuple[str, int | None]]] = {}
    for i, it in enumerate(body):
        if it.kind == "open":
            stack.append(i)
        elif it.kind == "close" and len(stack) > 1:
            stack.pop()
        scope.append(tuple(stack))
        if it.kind == "label":
            if (stack[-1], it.label) in labels:
                raise _Refused(f"line {it.line}: label `{it.label}` declared twice in one block")
            labels[(stack[-1], it.label)] = i
        m = _DECL.match(it.code.strip()) if it.kind == "stmt" else None
        if m:
            if m.group(1) != "reg" and len(stack) > 1:
                raise _Refused(f"line {it.line}: a `.{m.group(1)}` declaration inside a nested "
                               "block")
            for name in m.group(2).split(","):
                n = _NAME.match(name.strip())
                if n:
                    declared.setdefault(stack[-1], []).append(
                        (n.group(1), int(n.group(2)) if n.group(2) else None))
    local: set[str] = set()
    fresh: dict[int, list[str]] = {}
    for i, it in enumerate(body):  # (the first item of a block is its `{`)
        if it.kind != "open" or i not in declared:
            continue
        outer = [d for b in scope[i][:-1] for d in declared.get(b, [])]
        names = [f"{n}{k}" for n, c in declared[i] for k in range(c or 0)] + \
            [n for n, c in declared[i] if c is None]
        for name in names:
            if any(_names_meet(name, o) for o in outer):
                raise _Refused(f"line {it.line}: a nested block declares `{name}` again (it "
                               "shadows a register of the code around it)")
            if not name.startswith("%"):
                local.add(name)
        fresh[i] = names
    targets = {}
    for i, it in enumerate(body):
        if it.is_instruction and it.op_parts[0] == "bra" and it.operands:
            name = it.operands[0].strip()
            t = next((labels[(b, name)] for b in reversed(scope[i]) if (b, name) in labels),
                     None)
            if t is not None:
                targets[i] = t
    return targets, local, fresh


def _names_meet(name: str, decl: tuple[str, int | None]) -> bool:
    """Whether register `name` is one that `decl` (a name, or a family `%r<N>`) declares."""
    base, count = decl
    if count is None:
        return name == base
    rest = name[len(base):]
    return name.startswith(base) and rest.isdigit() and int(rest) < count


def _every_path(make: Callable[[dict[int, int], tuple[bool, ...]], _Prover],
                runs: list[_Prover] | None = None) -> tuple[_Prover, Proof]:
    """Run the kernel once with every uniform loop taking one trip, then once for each
    other choice of one or three trips per loop (docs/model.md: together they hold every
    interval any trip count gives); and all that again for each way of each branch it
    forks at (every way a CTA can go: a fork's other way runs on from a twin of the run
    at it), each twin added to `runs`; the first run, and the proof of every way."""
    first = make({}, ())
    proof = first.run()
    steps = first.steps + _loop_choices(make, first)
    queue, paths = list(first.twins), 1
    lines = {a.line for a in first.accesses}
    barriers, grid = proof.barriers, proof.grid or bool(first.forked_at)
    while True:
        if first.forked_at and steps > FORK_STEPS:  # (after each way, the last one too)
            raise _Refused(f"more than {FORK_STEPS} {_TOO_LONG} over the ways through "
                           "branches whose direction is not known before launch")
        if not queue:
            break
        paths += 1
        if paths > MAX_PATHS:
            raise _Refused(f"more than {MAX_PATHS} ways through branches whose direction is "
                           "not known before launch")
        twin, entries = queue.pop(0)
        if runs is not None:
            runs.append(twin)
        got = twin.resume(entries)
        steps += twin.steps - twin.resumed_at + _loop_choices(make, twin)
        queue += twin.twins
        lines |= {a.line for a in twin.accesses}
        barriers = max(barriers, got.barriers)
    # (a proof of every way: the accesses of all, the most barriers one passes; made for
    # the launch's grid where the ways were: forks are made only for one)
    return first, replace(proof, accesses=len(lines), barriers=barriers, grid=grid)


def _loop_choices(make: Callable[[dict[int, int], tuple[bool, ...]], _Prover],
                  run: _Prover) -> int:
    """The runs of `run`'s way for the other choices of one or three trips of its uniform
    loops (from the top: a loop's trips change what comes before any fork after it); the
    host steps they took."""
    loops = run.loops_seen
    if len(loops) > MAX_LOOPS:
        raise _Refused(f"more than {MAX_LOOPS} loops whose trip counts are not known before "
                       "launch")
    ways, steps = tuple(run.ways_taken), 0
    for choice in itertools.product((0, 2), repeat=len(loops)):
        if any(choice):
            again = make(dict(zip(loops, choice, strict=True)), ways)
            again.run()
            steps += again.steps
            if not set(again.loops_seen) <= set(loops):
                raise _Refused("a loop whose trip count is not known before launch, reached "
                               "only after another one's second trip")
            if again.forked_at != run.forked_at[:len(again.forked_at)]:
                raise _Refused("a branch whose direction is not known before launch, "
                               "reached only after a loop's second trip")
    return steps


# what a fork's twin shares with its run (the kernel and its tables, never written to; and
# the digests of the intervals judged clean, which every run of the proof adds to)
_SHARED_STATE = frozenset(("fn", "classify", "shared", "widths", "targets", "branch_list",
                           "fresh", "local_names", "param_syms", "params", "maps", "judged"))
_NO_KEY = np.int64(-1)


def _named_form(it: Item, c: Classified, cluster: bool) -> bool:
    """A barrier the prover follows as a named one (proof_named.py): `bar.sync` or
    `bar.arrive` whose barrier is not the literal 0 (barrier 0 is the CTA's __syncthreads,
    cut into intervals; its other forms are refused), and in a kernel of a `cluster` any
    (its intervals are the cluster barriers': a CTA's __syncthreads orders its own warps)."""
    return c.event in (Event.BAR_SYNC, Event.BAR_ARRIVE) and bool(it.operands) and \
        (cluster or it.operands[0].strip() != "0")


def _own_atomic(it: Item, c: Classified) -> bool:
    """An atomic on the CTA's own shared memory (`.shared` / `.shared::cta`): one the proof
    follows (an atomic on a peer's bytes is refused)."""
    return c.event is Event.ATOMIC and it.op_parts[0] in ("atom", "red") and \
        bool({"shared", "shared::cta"} & set(it.op_parts))


def _same_state(a: tuple, b: tuple) -> bool:
    """Whether two loop arrivals' (registers, split warps, in-flight registers) make the
    executor do the same from there."""
    (ra, pa), split_a, fly_a = a
    (rb, pb), split_b, fly_b = b
    return np.array_equal(split_a, split_b) and fly_a == fly_b and \
        _same_values(ra, rb, lambda v: ((v.sym, v.rel, v.uni), v.a)) and \
        _same_values(pa, pb, lambda p: (p.uni, p.v))


def _same_values(a: dict, b: dict, form: Callable) -> bool:
    """Registers (or predicates) known in the same threads with the same values, and of
    the same form (`form(x)`: (what besides the values must agree, the values))."""
    return all(_same_value(a.get(r), b.get(r), form) for r in set(a) | set(b))


def _same_value(x: _Val | _Pred | None, y: _Val | _Pred | None, form: Callable) -> bool:
    """One register (or predicate) of two states alike, as _same_values says; absent in
    one, it must hold nothing in the other."""
    if x is None or y is None:
        z = x or y
        return z is None or not (z.known.any() or z.uni or getattr(z, "hi", None) is not None)
    (fx, vx), (fy, vy) = form(x), form(y)
    if fx != fy or not np.array_equal(x.known, y.known) or \
            not np.array_equal(vx[x.known], vy[y.known]):
        return False
    return not isinstance(x, _Val) or _same_bounds(x, y)


def _same_bounds(x: _Val, y: _Val) -> bool:
    """Whether two values bound their unknown threads alike (none and none alike)."""
    if x.hi is None and y.hi is None:
        return True
    if x.hi is None or y.hi is None or x.lo is None or y.lo is None:
        return False
    off = ~x.known
    return np.array_equal(x.lo[off], y.lo[off]) and np.array_equal(x.hi[off], y.hi[off])


def _limit(bits: int) -> int:
    """The bound below which a value of `bits` reads the same signed and unsigned."""
    return min(1 << (bits - 1), _UNBOUNDED)


def _width(parts: list[str]) -> tuple[int, bool] | None:
    """(bits, signed) of an instruction's last integer type suffix; None for other types."""
    for p in reversed(parts):
        m = _TYPE.match(p)
        if m:
            return int(m.group(2)), m.group(1) == "s"
        if p == "pred" or (p.startswith("f") and p[1:].isdigit()):
            return None
    return None


def _mask(bits: int) -> np.uint64:
    return np.uint64((1 << bits) - 1)


def _signed(a: np.ndarray, bits: int) -> np.ndarray:
    if bits == 64:
        return a.view(np.int64)
    a = a & _mask(bits)
    return a.astype(np.int64) - ((a >> np.uint64(bits - 1)) & np.uint64(1)).astype(np.int64) \
        * (1 << bits)


class _Prover:
    def __init__(self, fn: Function, dims: tuple[int, int, int],
                 classify: Callable[[Item], Classified | None], shared: set[str],
                 params: dict[str, int] | None = None,
                 loops: dict[int, int] | None = None, maps: dict[str, int] | None = None,
                 param_names: list[str] | None = None,
                 cluster: tuple[int, int, int] = (1, 1, 1), widen: bool = False,
                 grid: tuple[int, int, int] | None = None, ways: tuple[bool, ...] = ()
                 ) -> None:
        self.fn, self.classify, self.shared = fn, classify, shared
        self.maps = maps or {}  # tensor-map parameter -> bytes one copy through it moves
        self.param_syms = {n: _PARAM_SYM + n for n in param_names or ()}
        self.params: dict[str, tuple[int, int]] = params or {}  # name -> (value, its bits)
        self.widths = register_widths(fn)
        self.ntid = dims[0] * dims[1] * dims[2]
        if not 0 < self.ntid <= 1024:
            raise _Refused(f"a block of {self.ntid} threads")
        # (a cluster's CTAs are run together, CTA rank r's threads r * ntid on: its warps
        # must not straddle two CTAs)
        self.ncta = cluster[0] * cluster[1] * cluster[2]
        if self.ncta > 1 and self.ntid % 32:
            raise _Refused(f"a cluster of CTAs of {self.ntid} threads, not whole warps")
        self.n = self.ntid * self.ncta
        g = np.arange(self.n, dtype=np.uint64)
        t, rank = g % np.uint64(self.ntid), g // np.uint64(self.ntid)
        self.rank = rank.astype(np.int64)
        nx, ny = np.uint64(dims[0]), np.uint64(dims[1])
        cx, cy = np.uint64(cluster[0]), np.uint64(cluster[1])
        self.yes = np.ones(self.n, dtype=bool)
        self.special = {
            "%tid.x": t % nx, "%tid.y": (t // nx) % ny, "%tid.z": t // (nx * ny),
            "%ntid.x": self._const(dims[0]), "%ntid.y": self._const(dims[1]),
            "%ntid.z": self._const(dims[2]), "%laneid": t % np.uint64(32)}
        if cluster != (1, 1, 1):
            self.special.update({
                "%cluster_ctarank": rank, "%cluster_nctarank": self._const(self.ncta),
                "%cluster_ctaid.x": rank % cx, "%cluster_ctaid.y": (rank // cx) % cy,
                "%cluster_ctaid.z": rank // (cx * cy), "%is_explicit_cluster": self._const(1),
                **{f"%cluster_nctaid.{d}": self._const(v) for d, v in zip("xyz", cluster,
                                                                          strict=True)}})
        # the launch's grid: %nctaid known, %ctaid bounded by it (in every CTA)
        self.ranged: dict[str, int] = {}
        self.grid_used = False  # a comparison those bounds decided
        if grid is not None:
            for d, v in zip("xyz", grid, strict=True):
                self.special[f"%nctaid.{d}"] = self._const(v)
                self.ranged[f"%ctaid.{d}"] = v - 1
        # (%ctaid differs between a cluster's CTAs)
        self.uniform_special = _UNIFORM_SPECIAL if self.ncta == 1 else frozenset(
            r for r in _UNIFORM_SPECIAL if not r.startswith("%ctaid"))
        self.stride = 0  # the bytes of one CTA's variables, in a cluster (below)
        self.remote: list[tuple[int, int, int, Access | None]] = []  # (line, interval,
        # owner rank, the copy) of each operation on another CTA's shared memory
        self.cluster_arrived = False  # a `barrier.cluster.arrive` waits for its wait
        self.owner = self.rank  # (set by _smem)
        self.spread = np.zeros(self.n, dtype=np.int64)  # (set by _smem)
        self.electing = False  # the instruction being run is under an `elect.sync` predicate
        self.warp = (g // np.uint64(32)).astype(np.int64)
        self.nwarps = int(self.warp.max()) + 1
        self.regs: dict[str, _Val] = {}
        self.preds: dict[str, _Pred] = {}
        self.accesses: list[Access] = []
        self.rows = 0  # (proof_rules.rows_of each access, summed)
        self.alive = self.yes.copy()  # threads that have not returned
        self.split = np.zeros(self.nwarps, dtype=bool)  # warps that diverged since a barrier
        self.doubt = np.zeros(self.n, dtype=bool)  # threads that may not be on this path
        self.barriers = 0
        self.sym: str | None = None  # the first shared symbol its accesses go through
        self.extent: dict[str, tuple[int, int]] = {}  # symbol -> (end of its accesses, line)
        self.bases: dict[str, int] = {}  # where the proof puts each shared variable
        self.writes = 0  # shared-memory writes run so far (a load's value key counts them)
        self.key_ids: dict[object, int] = {}  # what each value key and replica tag stands for
        self.judge = True
        self.judged: set[bytes] | None = None  # (shared by the runs of one proof: judge's)
        self.commits = np.zeros(self.n, dtype=np.int64)  # each thread's cp.async groups
        self.wg_commits = np.zeros((self.nwarps + 3) // 4, dtype=np.int64)  # per warpgroup
        self.pending: list[Access] = []  # copies and wgmmas not yet retired everywhere
        self.fences: list[tuple[int, int, int]] = []  # (warp, interval, step)
        self.chunk_memo: dict[tuple, np.ndarray] = {}
        self.bulk_commits = np.zeros(self.n, dtype=np.int64)  # each thread's bulk groups
        self.mbars: dict[int, MBarrier] = {}  # by where the proof puts each
        self.spin_result: tuple[str, np.ndarray] | None = None  # a wait's predicate to set
        self.local_names: set[str] = set()  # registers nested blocks declare without a %
        # threads waiting for an mbarrier phase: (pc, threads), and the count of completed
        # phases when they parked (they try again once it grows)
        self.parked: list[tuple[int, np.ndarray]] = []
        self.parked_at = 0
        # named barriers (proof_named.py) by CTA rank * IDS + id, and the generation (and
        # that key) each thread that arrived at a `bar.sync` waits for (-1: none)
        self.named: dict[int, NamedBarrier] = {}
        self.nb_gen = np.full(self.n, -1, dtype=np.int64)
        self.nb_id = np.zeros(self.n, dtype=np.int64)
        # happens-before through mbarriers: clock vectors over the threads (the last step of
        # each thread ordered before a point: a wait acquires what its phase's arrivals
        # released), each thread's current one by id; an access keeps its threads' ids
        self.vcs: list[np.ndarray] = [np.full(self.n, -1, dtype=np.int64)]
        # and beside each, what happened before in time, which a phase's completion also
        # follows through its copies' issues (a copy releases nothing of its issuer's memory,
        # but it is issued before its phase completes): the mbarrier rules' order
        self.cvcs: list[np.ndarray] = [self.vcs[0]]
        self.cid = np.zeros(self.n, dtype=np.int64)
        # each thread's step at its last mbarrier wait: a copy it issues later, whose issue
        # waited for that wait to return, completes after it (an arrive before the issue
        # gives no such order: its release orders only what came before it)
        self.waited = np.full(self.n, -1, dtype=np.int64)
        self.join = np.zeros(self.nwarps, dtype=np.int64)  # a warp's last step converged
        self.guessed = False  # a branch went a way not known before launch
        self.whole_warps = False  # the shfl being run is run by whole, converged warps
        # an in-flight wgmma's accumulators: what else writes them is not known (the ISA
        # leaves it undefined)
        self.in_flight_regs: set[str] = set()
        self.bar_steps: list[int] = []  # the step of each CTA barrier
        # uniform loops (pc of their branch): how many times this run takes each back, the
        # ones met, arrivals, the state at the first, the ones left
        self.loops: dict[int, int] = loops or {}
        self.loops_seen: list[int] = []
        self.loop_trips: dict[int, int] = {}
        self.loop_state: dict[int, tuple] = {}
        self.loops_done: set[int] = set()
        # loops of a known trip count followed as uniform ones after WIDEN_AT trips (pc of
        # their branch): trips taken back in a row, the registers at the one before, done
        self.widen = widen
        self.known_trips: dict[int, int] = {}
        self.widen_from: dict[int, tuple[dict, dict]] = {}
        self.widen_tried: set[int] = set()
        self.widened: set[int] = set()
        # branches forked at (a proof for a launch's grid only): the ways this run takes at
        # the first ones (True: taken), the ways it took
        self.forking = grid is not None
        self.ways = ways
        self.ways_taken: list[bool] = []
        self.forked_at: list[int] = []  # (the pc of each)
        self.twins: list[tuple[_Prover, list]] = []  # (run, entries): the ways not taken
        self.top: dict[int, np.ndarray] = {}
        self.resumed_at = 0  # (the steps it had when it was resumed: a twin's are its own)
        if self.ncta > 1:
            self.stride = self._stride()

    def _const(self, v: int) -> np.ndarray:
        return np.full(self.n, v & _M64, dtype=np.uint64)

    def _unknown(self) -> _Val:
        return _Val(None, self._const(0), np.zeros(self.n, dtype=bool))

    # ------------------------------------------------------------ control flow
    def _branches(self, body: list[Item]) -> list[tuple[int, int]]:
        """(index, target index) of every branch of `body`."""
        out = []
        for i, it in enumerate(body):
            if not it.is_instruction:
                continue
            op = it.op_parts[0]
            if op in ("brx", "call", "exit", "trap", "brkpt"):
                raise _Refused(f"line {it.line}: `{op}` (the proof follows branches only)")
            if op == "bra":
                t = self.targets.get(i)
                if t is None:
                    raise _Refused(f"line {it.line}: a branch to no label of the kernel")
                out.append((i, t))
        return out

    def _region(self, pc: int, target: int) -> tuple[int, int]:
        """The smallest span around a branch that control enters only at its top and
        leaves only at its bottom: no branch into it or out of it from its middle."""
        lo, hi = min(pc, target), max(pc, target)
        while True:
            was = lo, hi
            for b, t in self.branch_list:
                if lo <= b <= hi:  # (from inside: to anywhere in it, or just past its end)
                    if not lo <= t <= hi + 1:
                        lo, hi = min(lo, t), max(hi, t)
                elif lo < t <= hi:  # (from outside: only to its top)
                    lo, hi = min(lo, b), max(hi, b)
            if (lo, hi) == was:
                return lo, hi

    def run(self) -> Proof:
        body = self.fn.body
        self.targets, self.local_names, self.fresh = _scopes(body)
        self.branch_list = self._branches(body)
        self.steps = 0
        return self.resume([(0, self.yes.copy())])

    def resume(self, entries: list[tuple[int, np.ndarray]]) -> Proof:
        """Run on from `entries` (pc, threads) to the end, and judge the run: from the top,
        or from another run's fork (`_fork`'s twin)."""
        self.resumed_at = self.steps
        left = self._exec(entries, len(self.fn.body), nested=False)
        self.alive &= ~left  # (falling off the end returns)
        for a in self.pending:  # (never waited for: in flight to the end)
            assert a.until is not None
            a.until[a.until_seq == NEVER] = self.barriers
        self._inside()
        self._mbarrier_bytes()
        self._exits()
        if self.cluster_arrived:
            raise _Refused("a `barrier.cluster.arrive` with no wait after it")
        if self.judge:
            try:
                # (intervals are shared only between a run and its fork's twins)
                judge(self.accesses, self.nwarps, self.fences, self.bar_steps,
                      np.array(self.vcs), self.judged if self.twins or self.resumed_at
                      else None)
            except _Refused as why:
                raise _Refused(re.sub(r"byte (\d+)", lambda m: self._byte(int(m.group(1))),
                                      str(why))) from None
        return Proof(self.fn.name, self.ntid, len({a.line for a in self.accesses}),
                     self.barriers, len(self.params), self.ncta, self.grid_used)

    def _exits(self) -> None:
        """A CTA of a cluster may start after its peers and exits once its threads are done;
        no other CTA may reach its shared memory outside that: an access, mbarrier operation
        or copy there needs a cluster barrier before it, an access or mbarrier operation one
        after it too (which the owner passes before it exits: no thread returns before a
        barrier), and a copy into it, the owner's wait that saw it land."""
        for line, k, r, landing in self.remote:
            if k == 0:  # (only a cluster barrier tells that every CTA of it has started)
                raise _Refused(f"line {line}: an operation on the shared memory of CTA rank "
                               f"{r} before the first cluster barrier: that CTA may not have "
                               "started")
            if landing is not None:
                assert landing.until_seq is not None
                if (landing.until_seq == NEVER).any():
                    raise _Refused(f"line {line}: a copy into CTA rank {r} that no wait of "
                                   "that CTA sees land: it may land after the CTA exits")
            elif k >= self.barriers:
                raise _Refused(f"line {line}: an operation on the shared memory of CTA rank "
                               f"{r} with no cluster barrier after it: that CTA may have "
                               "exited")

    def _exec(self, entries: list[tuple[int, np.ndarray]], stop: int,
              nested: bool) -> np.ndarray:
        """Run the threads of `entries` (pc, threads) until every one reaches `stop`, the
        lowest pc first (threads at one pc run together, as a warp's paths meet again);
        the threads that reached it."""
        body = self.fn.body
        pending: dict[int, np.ndarray] = {}
        for at, m in entries:
            pending[at] = pending[at] | m if at in pending else m
        if not nested:
            self.top = pending  # (what a fork's twin runs on from)
        while True:
            # (a phase completed: its waiters try again, at the top level only, where the
            # registers are the threads' own)
            if self.parked and not nested and self._completed() != self.parked_at:
                for at, m in self.parked:
                    pending[at] = pending[at] | m if at in pending else m
                self.parked = []
            if not pending or min(pending) >= stop:
                break
            pc = min(pending)
            mask = pending.pop(pc)
            it = body[pc]
            nxt = [(pc + 1, mask)]
            if pc in self.fresh:  # (a block's own registers hold nothing known at its entry)
                self._skip([], mask, self.fresh[pc])
            if it.is_instruction:
                self.steps += 1
                if self.steps > MAX_STEPS:
                    raise _Refused(f"more than {MAX_STEPS} {_TOO_LONG}")
                nxt = self._step(it, pc, mask, bool(pending) or nested)
            for at, m in nxt:
                if m.any():
                    pending[at] = pending[at] | m if at in pending else m
        if self.parked and not nested:
            at, m = self.parked[0]
            what = "a barrier generation" if body[at].op_parts[0] in ("bar", "barrier") else \
                "an mbarrier phase"
            raise _Refused(f"line {body[at].line}: threads wait for {what} that "
                           "nothing completes (threads " +
                           ", ".join(map(str, np.nonzero(m)[0][:4].tolist())) + ")")
        if any(at != stop for at in pending):
            raise _Refused("a branch past the end of the code it was followed in")
        return pending.get(stop, np.zeros(self.n, dtype=bool))

    def _step(self, it: Item, pc: int, mask: np.ndarray,
              others: bool) -> list[tuple[int, np.ndarray]]:
        """Run one instruction for the threads of `mask`: where they go next."""
        op = it.op_parts[0]
        run, maybe = self._guard(it, mask)
        gp = self.preds.get(it.pred.lstrip("@").lstrip("!")) if it.pred else None
        elected = gp is not None and gp.base is not None  # (under an election's predicate)
        self.electing = elected
        if elected and op in ("bra", "brx", "call", "ret", "exit"):
            raise _Refused(f"line {it.line}: `{op}` under an `elect.sync` predicate (where "
                           "control goes would depend on the lane the GPU elects)")
        if elected and op not in ("ld", "st", "cp", "mbarrier", "fence", "ldmatrix",
                                  "stmatrix", "atom", "red"):
            # (what one lane does, which lane not known: a register it writes is unknown in
            # all of them; a return, a barrier or any other event is not followed)
            self._elected(it, mask)
            self._skip([it], mask)
            return [(pc + 1, mask)]
        if op == "shfl":  # (its lanes meet other lanes' shfl.sync: only whole warps followed)
            self.whole_warps = self._whole_warps(run, maybe, others)
        if op in ("ret", "exit"):
            if (maybe & ~(run & ~self.doubt)).any():
                raise _Refused(f"line {it.line}: `{op}` that threads may or may not run")
            self.alive &= ~run
            return [(pc + 1, mask & ~run)]
        if op == "bra":
            return self._branch(it, pc, mask)
        if op == "elect":
            self._elect(it, run, maybe, others)
            return [(pc + 1, mask)]
        if op == "bar" and "warp" in it.op_parts:
            self._warp_sync(it, run, maybe)
            return [(pc + 1, mask)]
        c = self.classify(it)
        self.pc, self.at = pc, mask  # (the threads at it: the lanes an election may pick)
        if c is not None and _named_form(it, c, self.ncta > 1):
            left = self._named(it, c, pc, mask, run, maybe)
            return [(pc + 1, left)] if left.any() else []
        if c is not None and c.event is Event.MBARRIER and c.op == abi.MB_WAIT_PARITY:
            blocked = self._blocked(it, c, run & ~self.doubt) & mask
            if blocked.any():  # (they wait there while the other threads run on)
                if self.doubt.any():
                    raise _Refused(f"line {it.line}: a wait that blocks under a branch whose "
                                   "direction is not known before launch")
                self.parked.append((pc, blocked.copy()))
                self.parked_at = self._completed()
                self._diverge(mask, blocked)
                mask, run, maybe = mask & ~blocked, run & ~blocked, maybe & ~blocked
                if not mask.any():
                    return []
        if c is not None and c.event not in _ALLOWED:
            self._event(it, c, mask, run & ~self.doubt, maybe, others)
        self._assign(it, run, maybe)
        if elected:  # (a register the elected lane loaded: unknown in every lane)
            self._skip([], mask, self._dests(it))
        if self.spin_result is not None:  # (a wait's loop spins until it returns true)
            name, where = self.spin_result
            self.spin_result = None
            old = self.preds.get(name, _Pred(np.zeros(self.n, dtype=bool),
                                             np.zeros(self.n, dtype=bool)))
            self.preds[name] = _Pred(old.v | where, old.known | where)
        return [(pc + 1, mask)]

    def _branch(self, it: Item, pc: int, mask: np.ndarray) -> list[tuple[int, np.ndarray]]:
        target = self.targets[pc]
        if it.pred:
            text = it.pred.lstrip("@")
            p = self._pred(text)
            taken, unknown = mask & p.known & p.v, mask & ~p.known
        else:
            taken, unknown = mask, np.zeros(self.n, dtype=bool)
        stay = mask & ~taken & ~unknown
        if unknown.any() and self._forks(it, pc, target, mask, unknown):
            return self._fork(it, pc, target, mask)
        if unknown.any() and target <= pc and it.pred and self._uniform_loop(it, pc, target,
                                                                             mask, unknown):
            return self._loop_trip(it, pc, target, mask)
        if unknown.any():
            self.guessed = True
            lo, hi = self._region(pc, target)
            self.split |= np.bincount(self.warp[unknown], minlength=self.nwarps) > 0
            self._diverge(mask, taken)  # (known lanes of one warp may part ways too)
            if lo == pc and target > pc and "uni" not in it.op_parts:
                # (a forward branch whose direction is not known: its threads go each way in
                # turn, from the same registers, uncertain, up to where the ways meet again;
                # there a register the two ways leave different is unknown to them)
                was, before = self.doubt, self._registers()
                self.doubt = was | unknown
                reached = self._exec([(target, taken | unknown)], hi + 1, nested=True)
                # (the taken way's registers, no longer the run's: the other way runs on
                # from the copy taken before)
                went, (self.regs, self.preds) = (self.regs, self.preds), before
                reached |= self._exec([(pc + 1, stay | unknown)], hi + 1, nested=True)
                self._meet(went, taken, unknown)
                self.doubt = was
                return [(hi + 1, reached & self.alive)]  # (a thread that returned stays out)
            # (a loop: the region must hold nothing, or only shared atomics, run for every
            # trip count at once; its lanes may leave it at different trips, so every warp
            # with a thread in it splits)
            self.split |= np.bincount(self.warp[mask], minlength=self.nwarps) > 0
            body = self.fn.body[lo:hi + 1]
            atomics = (lo, hi) == (target, pc) and self._atomics_only(lo, pc)
            if atomics:
                self._any_trips(target, pc, mask, body)
            self._skip(body, mask, atomics=atomics)
            return [(hi + 1, mask)]
        if self._diverge(mask, taken) and "uni" in it.op_parts:
            raise _Refused(f"line {it.line}: a `bra.uni` whose lanes part ways (undefined "
                           "in PTX)")
        if self.widen and target <= pc and it.pred:
            self._long_loop(pc, target, mask, taken)
        return [(target, taken), (pc + 1, stay)]

    def _forks(self, it: Item, pc: int, target: int, mask: np.ndarray,
               unknown: np.ndarray) -> bool:
        """Whether to follow a branch each way in a run of its own: every thread that has
        not returned is at it, certainly, on a condition the same in all of them but not
        known, so each CTA's threads all go one way; a loop's closing branch only where
        the uniform-loop rule cannot take the loop."""
        p = self.preds.get(it.pred.lstrip("@").lstrip("!")) if it.pred else None
        if not self.forking or p is None or not p.uni or p.base is not None or \
                not np.array_equal(mask, self.alive) or not np.array_equal(unknown, mask) or \
                self.doubt.any():  # (threads parked at a wait are alive, not at the branch)
            return False
        return target > pc or self._region(pc, target) != (target, pc) or \
            self._unrepeatable(pc, target) is not None

    def _fork(self, it: Item, pc: int, target: int,
              mask: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """The way this run takes at a branch it forks at (taken, unless its plan says);
        its predicate is then known to be what sends the threads that way. Past its plan, a
        twin of the run so far is kept to go the other way (`twins`)."""
        k = len(self.ways_taken)
        if k + 1 >= MAX_PATHS:  # (each fork of a way is one more way: refused at once)
            raise _Refused(f"line {it.line}: more than {MAX_PATHS} ways through branches "
                           "whose direction is not known before launch")
        way = self.ways[k] if k < len(self.ways) else True
        self.guessed = True
        self.forked_at.append(pc)
        if k >= len(self.ways) and not self.loops:  # (a loop-choice run forks no further)
            self.twins.append(self._twin(it, pc, target, mask, not way))
        return self._go(it, pc, target, mask, way)

    def _go(self, it: Item, pc: int, target: int, mask: np.ndarray,
            way: bool) -> list[tuple[int, np.ndarray]]:
        """Send the threads at a forked branch `way` (True: taken); its predicate is known
        from there."""
        self.ways_taken.append(way)
        name = it.pred.lstrip("@")
        self.preds[name.lstrip("!")] = _Pred(np.full(self.n, way != name.startswith("!")),
                                            self.yes.copy(), True)
        return [(target, mask)] if way else [(pc + 1, mask)]

    def _twin(self, it: Item, pc: int, target: int, mask: np.ndarray,
              way: bool) -> tuple[_Prover, list[tuple[int, np.ndarray]]]:
        """A copy of this run at a fork (what it holds and will change: registers, accesses,
        mbarriers, clocks...; the kernel and its tables shared), sent `way`, and the entries
        (pc, threads) it runs on from."""
        keep = {id(v): v for k, v in vars(self).items() if k in _SHARED_STATE}
        state = {k: v for k, v in vars(self).items() if k not in ("top", "twins")}
        twin = object.__new__(_Prover)
        twin.__dict__.update(copy.deepcopy(state, keep))
        twin.ways, twin.twins = (), []
        entries = [(at, m.copy()) for at, m in self.top.items()]
        return twin, entries + twin._go(it, pc, target, mask.copy(), way)

    def _uniform_loop(self, it: Item, pc: int, target: int, mask: np.ndarray,
                      unknown: np.ndarray) -> bool:
        """Whether a backward branch closes a loop every thread runs together: its
        condition the same in all of them, control entering it only at its top and leaving
        only at its bottom, and nothing in it that a repeat would have to count (an async
        operation, a return). Then its trips are followed as docs/model.md says."""
        p = self.preds.get(it.pred.lstrip("@").lstrip("!"))
        if p is None or not p.uni or not np.array_equal(mask, self.alive) or \
                not np.array_equal(unknown, mask) or self.doubt.any():
            return False
        if self._region(pc, target) != (target, pc):
            raise _Refused(f"line {it.line}: a loop entered or left in its middle")
        x = self._unrepeatable(pc, target)
        if x is not None:
            raise _Refused(f"line {x.line}: `{x.opcode}` in a loop whose trip count is "
                           "not known before launch")
        return True

    def _unrepeatable(self, pc: int, target: int) -> Item | None:
        """The first instruction of a loop's body that a repeat would have to count (an
        async operation, an mbarrier, a return), if any."""
        for x in self.fn.body[target:pc]:
            if not x.is_instruction:
                continue
            c = self.classify(x)
            if x.op_parts[0] in ("ret", "exit") or (c is not None and c.event not in (
                    *_ALLOWED, Event.READ, Event.WRITE, Event.BAR_SYNC, Event.PROXY_FENCE)
                    and not _own_atomic(x, c)) or (c is not None and
                                               _named_form(x, c, self.ncta > 1)):
                return x
        return None

    def _long_loop(self, pc: int, target: int, mask: np.ndarray, taken: np.ndarray) -> None:
        """Count a loop's trips taken back by every thread, certainly; at the WIDEN_AT-th
        one in a row, make the registers that the last trip changed unknown (uniform where
        every thread held one value), so that its closing branch meets the uniform-loop
        rule from the next trip on (docs/model.md, "a loop of a known trip count"). Only an
        outermost loop whose body that rule takes, entered at its top only."""
        whole = np.array_equal(taken, mask) and np.array_equal(mask, self.alive) and \
            not self.doubt.any()
        if pc in self.widen_tried or pc in self.loop_trips or not whole:
            self.known_trips.pop(pc, None)
            return
        n = self.known_trips[pc] = self.known_trips.get(pc, 0) + 1
        if n == WIDEN_AT - 1:
            self.widen_from[pc] = self._registers()
        if n < WIDEN_AT:
            return
        self.widen_tried.add(pc)  # (once, whatever comes of it)
        inside = any(t < b and (t, b) != (target, pc) and t <= target and b >= pc
                     for b, t in self.branch_list)
        if inside or self._region(pc, target) != (target, pc) or \
                self._unrepeatable(pc, target) is not None:
            return
        regs, preds = self.widen_from.pop(pc)
        self.widened.add(pc)
        alive = self.alive

        def one(v: _Val | _Pred, values: np.ndarray) -> bool:  # (known alike everywhere)
            return bool(v.known[alive].all()) and len(set(values[alive].tolist())) == 1
        for r in set(regs) | set(self.regs):
            a, b = regs.get(r), self.regs.get(r)
            if a is not None and b is not None and \
                    _same_value(a, b, lambda v: ((v.sym, v.rel), v.a)):
                continue
            uni = b is not None and b.sym is None and b.rel is None and one(b, b.a)
            self.regs[r] = self._unknown()
            self.regs[r].uni = uni
        none = np.zeros(self.n, dtype=bool)
        for r in set(preds) | set(self.preds):
            x, y = preds.get(r), self.preds.get(r)
            if x is not None and y is not None and x.base is None and y.base is None and \
                    _same_value(x, y, lambda p: ((), p.v)):
                continue
            uni = y is not None and y.base is None and one(y, y.v)
            self.preds[r] = _Pred(none.copy(), none.copy(), uni)

    def _loop_trip(self, it: Item, pc: int, target: int,
                   mask: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """One arrival at a uniform loop's branch. A run takes it back self.loops[pc] times
        (0 or 2): one trip, or three, whose second must leave the registers as the first
        did, so that every later trip repeats it (prove() judges both runs)."""
        self.guessed = True
        if pc in self.loops_done:
            raise _Refused(f"line {it.line}: a loop whose trip count is not known before "
                           "launch, entered more than once")
        if pc not in self.loop_trips:
            self.loops_seen.append(pc)
        k = self.loop_trips[pc] = self.loop_trips.get(pc, 0) + 1
        for v in self.regs.values():  # (value keys name writes counted from the start)
            v.key = None
        state = (self._registers(), self.split.copy(), set(self.in_flight_regs))
        if k == 1:
            self.loop_state[pc] = state
        elif k == 2 and not _same_state(self.loop_state[pc], state):
            raise _Refused(f"line {it.line}: a loop whose trip count is not known before "
                           "launch, whose second trip leaves other values than its first")
        if k <= self.loops.get(pc, 0):
            return [(target, mask)]
        self.loops_done.add(pc)
        return [(pc + 1, mask)]

    def _registers(self, of: tuple | None = None) -> tuple[dict, dict]:
        regs, preds = of if of is not None else (self.regs, self.preds)
        return ({r: _Val(v.sym, v.a.copy(), v.known.copy(), v.rel, v.uni,
                         None if v.key is None else v.key.copy(), v.lo, v.hi)
                 for r, v in regs.items()},
                {r: _Pred(v.v.copy(), v.known.copy(), v.uni,
                          None if v.base is None else v.base.copy())
                 for r, v in preds.items()})

    def _meet(self, went: tuple[dict, dict], taken: np.ndarray, unknown: np.ndarray) -> None:
        """Where the two ways of a branch meet: the taken way's registers for the threads
        that took it, and for the threads that may have gone either way, what both ways
        agree on."""
        none = np.zeros(self.n, dtype=bool)
        # (a register both ways leave alike, most of them, is taken as it is: what the
        # arrays below make of it. Triton's causal attention proof spent 0.3 of its 1.4 s
        # here, on the 2-core CPU machine)
        for r in set(went[0]) | set(self.regs):
            a = went[0].get(r, self._unknown())
            b = self.regs.get(r, self._unknown())
            if a.sym == b.sym and a.rel == b.rel and np.array_equal(a.known, b.known) and \
                    np.array_equal(a.a, b.a):
                self.regs[r] = _Val(b.sym, b.a.copy(), b.known.copy(), b.rel)
                continue
            same = a.known & b.known & (a.a == b.a) & (a.sym == b.sym) & (a.rel == b.rel)
            sym, rel = (b.sym, b.rel) if b.known.any() or not a.known.any() else (a.sym, a.rel)
            pick = np.where(taken, a.a, b.a)
            known = np.where(taken, a.known & (a.sym == sym) & (a.rel == rel),
                             b.known & (b.sym == sym) & (b.rel == rel))
            self.regs[r] = _Val(sym, pick, np.where(unknown, same, known), rel)
        for r in set(went[1]) | set(self.preds):
            x = went[1].get(r, _Pred(none.copy(), none.copy()))
            y = self.preds.get(r, _Pred(none.copy(), none.copy()))
            if x.base is None and y.base is None and np.array_equal(x.v, y.v) and \
                    np.array_equal(x.known, y.known):
                self.preds[r] = _Pred(y.v.copy(), y.known.copy())
                continue
            same = x.known & y.known & (x.v == y.v)
            known = np.where(unknown, same, np.where(taken, x.known, y.known))
            if x.base is not None or y.base is not None:
                known = none  # (an election's predicate is not merged)
            self.preds[r] = _Pred(np.where(taken, x.v, y.v), known)

    def _diverge(self, mask: np.ndarray, taken: np.ndarray) -> bool:
        """Mark the warps whose lanes of `mask` part ways at a branch; whether any did."""
        went, stayed = np.zeros(self.nwarps, dtype=bool), np.zeros(self.nwarps, dtype=bool)
        np.logical_or.at(went, self.warp, taken)
        np.logical_or.at(stayed, self.warp, mask & ~taken)
        self.split |= went & stayed
        return bool((went & stayed).any())

    def _atomics_only(self, top: int, end: int) -> bool:
        """Whether the body of the loop from `top` to its closing branch at `end` holds
        shared atomics and nothing else `_skip` refuses, and no other branch back
        (`_any_trips`)."""
        atomics = False
        for i in range(top, end):
            it = self.fn.body[i]
            if not it.is_instruction:
                continue
            c = self.classify(it)
            if it.op_parts[0] == "bra" and self.targets.get(i, i + 1) <= i:
                return False
            if c is not None and _own_atomic(it, c):
                atomics = True
            elif it.op_parts[0] in ("ret", "exit") or (c is not None and
                                                       c.event not in _ALLOWED):
                return False
        return atomics

    def _any_trips(self, target: int, pc: int, mask: np.ndarray, body: list[Item]) -> None:
        """A loop whose trip count is not known, and may differ between threads, holding
        shared atomics (and no barrier or other shared access): its body is run once more,
        by the threads of `mask`, uncertain, from registers it writes made unknown, so that
        each atomic's address covers every trip's (an address must then be known within
        bounds of the loop's own: a loaded byte's); all its trips are in one interval,
        where an atomic's repeats conflict with nothing its first run does not."""
        self._skip(body, mask, atomics=True)
        was = self.doubt
        self.doubt = was | mask
        self._exec([(target, mask.copy())], pc, nested=True)
        self.doubt = was

    def _skip(self, items: list[Item], mask: np.ndarray, dests: list[str] | None = None,
              atomics: bool = False) -> None:
        """Code some threads may run any number of times (or one lane that is not known):
        it must not touch shared memory (but for `atomics`, run by `_any_trips`),
        synchronise or return, and what it writes (and `dests`) is unknown in `mask` after
        it."""
        dests = list(dests or [])
        for it in items:
            if not it.is_instruction:
                continue
            c = self.classify(it)
            if atomics and c is not None and c.event is Event.ATOMIC:
                dests += self._dests(it)
                continue
            if it.op_parts[0] in ("ret", "exit") or (c is not None and c.event not in _ALLOWED):
                raise _Refused(f"line {it.line}: `{it.opcode}` under a branch whose direction "
                               "is not known before launch, or by a lane `elect.sync` picks")
            dests += self._dests(it)
        for r in dests:
            if r in self.preds:
                self.preds[r].known &= ~mask
                self.preds[r].uni = False
            elif r in self.regs:
                self.regs[r].known &= ~mask
                self.regs[r].uni = False
                self.regs[r].key = None
                self.regs[r].lo = self.regs[r].hi = None  # (what it ran may be any value)

    # ------------------------------------------------------------ shared memory, barriers
    def _event(self, it: Item, c: Classified, mask: np.ndarray, run: np.ndarray,
               maybe: np.ndarray, others: bool) -> None:
        if c.event is Event.ADDRESS and it.op_parts[0] in ("mapa", "getctarank"):
            return  # (a `.shared::cluster` address or its rank: _assign follows it)
        if c.event is Event.CLUSTER_BAR:
            self._cluster_barrier(it, run, maybe, others)
            return
        if c.event is Event.BAR_SYNC:
            ops = it.operands
            if not ops or ops[0].strip() != "0" or (len(ops) > 1 and (
                    ops[1].strip() not in ("0", str(self.n)) or self.n % 32)) or \
                    "red" in it.op_parts or "arrive" in it.op_parts:
                raise _Refused(f"line {it.line}: `{it.opcode} {', '.join(ops)}` is not a "
                               "barrier every thread of the CTA waits at")
            if others or not np.array_equal(run, self.yes) or not np.array_equal(maybe, run):
                raise _Refused(f"line {it.line}: a barrier not every thread of the CTA is "
                               "certain to reach together")
            self._barrier()
            return
        if c.event in _ASYNC_BOOKKEEPING:
            self._bookkeeping(it, c, run, maybe, others)
            return
        if c.event is Event.WGMMA:
            self._wgmma(it, run, maybe, others)
            return
        if c.event is Event.PROXY_FENCE:
            for w in np.unique(self.warp[run & ~self.doubt]):
                self.fences.append((int(w), self.barriers, self.steps))
            return
        if c.event is Event.MBARRIER:
            self._mbarrier(it, c, run, maybe)
            return
        if c.event in _COPIES_IN or c.event in _COPIES_OUT:
            self._bulk(it, c, run, maybe)
            return
        atomic = _own_atomic(it, c)  # (a peer's bytes: not followed)
        if (c.event not in (Event.READ, Event.WRITE, Event.ASYNC_WRITE) and not atomic) or \
                c.reason or \
                it.op_parts[0] not in ("ld", "st", "ldmatrix", "stmatrix", "cp", "atom", "red") \
                or not {"shared", "shared::cta", "shared::cluster"} & set(it.op_parts) or \
                (c.event is Event.ASYNC_WRITE and "shared::cluster" in it.op_parts):
            raise _Refused(f"line {it.line}: `{it.opcode}` ({c.event.value}) is not a plain "
                           "load or store of the CTA's shared memory")
        self._elected(it, mask)
        if it.op_parts[0] in ("ldmatrix", "stmatrix") and "m8n8" not in it.op_parts:
            raise _Refused(f"line {it.line}: `{it.opcode}`: only 8x8 matrices are followed")
        if it.op_parts[0] in ("ldmatrix", "stmatrix"):  # (lanes 0..8 x matrices-1 give rows)
            # (.sync.aligned: every lane of the warp runs it, converged, certainly)
            self._whole(it, run, maybe, others, 32)
            lanes = 8 * max(1, c.shape)
            maybe = maybe & (self.special["%laneid"] < np.uint64(lanes))
            run = run & maybe
        # (a load or an atomic at an address known only within bounds: every byte it may
        # touch, uncertain: a histogram's `atomicAdd(&bins[data[i]], 1)`)
        start = self._smem(it, c.address or "", maybe, c.size,
                           ranged=it.op_parts[0] in ("ld", "atom", "red"))
        spread = self.spread[maybe]
        if (start[maybe] % c.size).any():  # (the checker's 16-byte chunks: whole ones only)
            raise _Refused(f"line {it.line}: an address not aligned to the access's "
                           f"{c.size} bytes")
        # (a warp that split at a branch since the last barrier may run its paths in any
        # order: lanes of it cover only their own reads)
        converged = ~self.split[self.warp]
        threads = np.nonzero(maybe)[0]
        copy = c.event is Event.ASYNC_WRITE
        write = c.event is not Event.READ
        a = Access(self.barriers, threads, self.warp[maybe], start[maybe],
                   c.size + int(spread.max(initial=0)), write, run[maybe] & (spread == 0),
                   converged[maybe], it.line, self.steps, idem=c.idem,
                   elected=self.electing, atomic=atomic)
        self._remote(it, maybe)
        if write:
            self.writes += 1
            if it.op_parts[0] == "st":
                a.rep = self._replicas(it, threads, start[maybe], run[maybe])
        if copy:  # (the warp's copy unit writes it, until the thread's wait retires it)
            a.agent, a.group, a.queue = AGENT_COPY, self.commits[threads].copy(), "cp"
            a.until = np.zeros(len(threads), dtype=np.int64)
            a.until_seq = np.full(len(threads), NEVER, dtype=np.int64)
            self.pending.append(a)
        self._record(a)

    def _barrier(self) -> None:
        """Every thread (of the CTA, or of the cluster) passes a barrier here."""
        self.barriers += 1
        self.bar_steps.append(self.steps)
        self.split[:] = False
        self.join[:] = self.steps

    def _cluster_barrier(self, it: Item, run: np.ndarray, maybe: np.ndarray,
                         others: bool) -> None:
        """`barrier.cluster.arrive` (release) right before `barrier.cluster.wait`
        (acquire), run by every thread of the cluster together, certainly: a barrier of the
        whole cluster (of a CTA outside one). A split pair, with work between, or a relaxed
        arrive is not followed."""
        if "wait" in it.op_parts:
            if not self.cluster_arrived or it.pred or "relaxed" in it.op_parts:
                raise _Refused(f"line {it.line}: `{it.opcode}` not right after a "
                               "`barrier.cluster.arrive` of every thread")
            self.cluster_arrived = False
            return
        body = self.fn.body
        nxt = next((body[i] for i in range(self.pc + 1, len(body))
                    if body[i].is_instruction), None)
        if "relaxed" in it.op_parts or it.pred or nxt is None or nxt.pred or \
                nxt.op_parts[:3] != ["barrier", "cluster", "wait"]:
            raise _Refused(f"line {it.line}: `{it.opcode}` that is not a release followed at "
                           "once by `barrier.cluster.wait` (the proof follows whole cluster "
                           "barriers only)")
        if others or not np.array_equal(run, self.yes) or not np.array_equal(maybe, run):
            raise _Refused(f"line {it.line}: a cluster barrier not every thread of the "
                           f"{'cluster' if self.ncta > 1 else 'CTA'} is certain to reach "
                           "together")
        self.cluster_arrived = True
        self._barrier()

    def _remote(self, it: Item, threads: np.ndarray, copy: Access | None = None) -> None:
        """Note the threads' operation on another CTA's shared memory (self.owner, from
        _smem): it must be over before that CTA can exit (checked at the end)."""
        away = threads & (self.owner != self.rank)
        for r in np.unique(self.owner[away]).tolist():
            self.remote.append((it.line, self.barriers, int(r), copy))

    def _replicas(self, it: Item, threads: np.ndarray, start: np.ndarray,
                  certain: np.ndarray) -> np.ndarray:
        """Per thread of a store, its warp's replica tag: the id of the line and of every
        lane's address and stored value (known, or keyed), -1 where a lane's value is
        neither, a lane may not run it, or two lanes store different values at one
        address (which one lands is not known). Two warps with one tag store the same bytes
        at the same addresses (docs/model.md, "Replicated stores")."""
        vals = re.findall(r"%[\w$.]+|-?\b\d\w*", " ".join(it.operands[1:]))
        if set(re.findall(r"[\w$.]+", " ".join(it.operands[1:]))) & self.local_names:
            return np.full(len(threads), -1, dtype=np.int64)  # (a value not followed here)
        terms = [self._operand_terms(o) for o in vals]
        out = np.full(len(threads), -1, dtype=np.int64)
        if any((kind[threads] < 0).all() for kind, _, _ in terms):
            return out  # (a value known or keyed in no lane: no replica anywhere)
        key = self._combine(self._id("store"), terms)
        key, warps = key[threads], self.warp[threads]
        for w in np.unique(warps):
            lanes = warps == w
            if (key[lanes] < 0).any() or not certain[lanes].all():
                continue
            pairs = set(zip(start[lanes].tolist(), key[lanes].tolist(), strict=True))
            if len({a for a, _ in pairs}) != len(pairs):
                continue  # (lanes storing different values at one address)
            # (a CTA's loads of its own bytes, and its own shared addresses, hold other
            # values in another CTA of a cluster: replicas only within one CTA)
            out[lanes] = self._id(("rep", it.line, int(self.rank[threads[lanes][0]]),
                                   tuple(sorted(pairs))))
        return out

    def _byte(self, at: int) -> str:
        """A byte where the proof put it, as the kernel names it."""
        cta = ""
        if self.ncta > 1:
            cta = f" in CTA rank {at // self.stride}"
            at %= self.stride
        if len(self.shared) == 1:
            return f"byte {at}{cta}"
        sym = max((b, s) for s, b in self.bases.items() if b <= at)[1]
        return f"byte {at - self.bases[sym]} of `{sym}`{cta}"

    def _base(self, it: Item, sym: str) -> int:
        """Where the proof puts `sym`: a module's one variable at 0; of several, each past
        the last's declared bytes (MAX_SHARED for one of none): they never overlap on the
        GPU, and _inside checks that the accesses stay in their variables where more than
        one is accessed."""
        if not self.bases:
            at, sizes = 0, getattr(self.shared, "size", {})
            for s in sorted(self.shared):
                self.bases[s] = at
                at += -(-(sizes.get(s) or MAX_SHARED) // 16) * 16 + 16
        return 0 if len(self.shared) == 1 else self.bases[sym]

    def _stride(self) -> int:
        """Where the proof puts CTA rank 1's variables (rank r's at r times it): past every
        variable of rank 0, each of a declared size (_inside keeps the accesses in them)."""
        sizes = getattr(self.shared, "size", {})
        unsized = sorted(s for s in self.shared if sizes.get(s) is None)
        if unsized:
            raise _Refused(f"`{unsized[0]}` has no declared size in a kernel of a cluster "
                           "(where one CTA's shared memory ends is not known)")
        if self.shared:
            self._base(None, next(iter(self.shared)))  # type: ignore[arg-type]
        end = max((self.bases[s] + sizes[s] for s in self.shared), default=0)
        return -(-end // 16) * 16 + 16

    def _inside(self) -> None:
        """Accesses through several variables, or in a cluster: each must stay inside its
        variable's declared bytes, or two variables' (or CTAs') bytes could be one."""
        if len(self.extent) < 2 and self.ncta == 1:
            return
        sizes = getattr(self.shared, "size", {})
        for sym, (end, line) in sorted(self.extent.items()):
            if sizes.get(sym) is None:
                raise _Refused(f"line {line}: `{sym}` has no declared size beside other "
                               "shared variables the kernel accesses (where it ends is not "
                               "known)")
            if end > sizes[sym]:
                raise _Refused(f"line {line}: an access past the end of `{sym}` (it would "
                               "meet another variable)")

    def _whole_warps(self, run: np.ndarray, maybe: np.ndarray, others: bool) -> bool:
        """Whether `run` is whole warps, all certain, converged, no thread elsewhere."""
        if others or not np.array_equal(run, maybe) or (self.doubt & maybe).any() or \
                self.n % 32 or self.split[self.warp[run]].any():
            return False
        full = np.bincount(self.warp[run], minlength=self.nwarps)
        return bool(((full == 0) | (full == 32)).all())

    def _whole(self, it: Item, run: np.ndarray, maybe: np.ndarray, others: bool,
               size: int) -> np.ndarray:
        """The units of `size` threads (warps, warpgroups) that run an instruction every
        thread of the unit must run together, converged; refused otherwise."""
        units = (np.arange(self.n) // size)
        # (a `.aligned` instruction is run by every lane of its warps together: a warp that
        # split since the last barrier reconverges there, all its lanes' earlier accesses
        # before it)
        rejoin = "aligned" in it.op_parts and np.array_equal(
            run, self.alive & np.isin(self.warp, self.warp[run]))
        if others or not np.array_equal(run, maybe) or (self.doubt & maybe).any() or \
                (self.split[self.warp[run]].any() and not rejoin):
            raise _Refused(f"line {it.line}: `{it.opcode}` that some threads of a "
                           f"{'warp' if size == 32 else 'warpgroup'} may run apart from the "
                           "others")
        went = np.zeros(units.max() + 1, dtype=bool)
        went[units[run]] = True
        if not np.array_equal(went[units], run):
            raise _Refused(f"line {it.line}: `{it.opcode}` run by part of a "
                           f"{'warp' if size == 32 else 'warpgroup'}")
        if rejoin:
            self.split[np.unique(self.warp[run])] = False
            self.join[np.unique(self.warp[run])] = self.steps
        return np.nonzero(went)[0]

    def _bookkeeping(self, it: Item, c: Classified, run: np.ndarray, maybe: np.ndarray,
                     others: bool) -> None:
        """cp.async and wgmma commits and waits: a wait retires the groups it covers (a
        thread's cp.async groups, a warpgroup's wgmma groups) at this step."""
        wgmma = c.event in (Event.WGMMA_COMMIT, Event.WGMMA_WAIT)
        bulk = c.event in (Event.BULK_COMMIT, Event.BULK_WAIT)
        queue = "wgmma" if wgmma else "bulk" if bulk else "cp"
        got = self._whole(it, run, maybe, others, 128 if wgmma else 32)
        if c.event in (Event.ASYNC_COMMIT, Event.ASYNC_WAIT_ALL):
            self.commits[run] += 1
        if c.event is Event.WGMMA_COMMIT:
            self.wg_commits[got] += 1
        if c.event is Event.BULK_COMMIT:
            self.bulk_commits[run] += 1
        if c.event in (Event.ASYNC_COMMIT, Event.WGMMA_COMMIT, Event.BULK_COMMIT):
            return
        try:
            n = 0 if c.event is Event.ASYNC_WAIT_ALL else ptx_int(it.operands[0])
        except (IndexError, ValueError):
            raise _Refused(f"line {it.line}: `{it.opcode}` of a group count not known") \
                from None
        if n >= CPASYNC_GROUP_ENDS:  # (the checker keeps the last 8 groups' ends: such a
            # wait retires nothing)
            return
        for a in self.pending:
            if a.queue != queue:
                continue
            assert a.until is not None and a.until_seq is not None and a.group is not None
            limit = self.wg_commits[a.warp // 4] if wgmma else \
                self.bulk_commits[a.thread] if bulk else self.commits[a.thread]
            hit = (a.until_seq == NEVER) & run[a.thread] & (a.group < limit - n)
            a.until[hit] = self.barriers
            a.until_seq[hit] = self.steps
        self.pending = [a for a in self.pending if (a.until_seq == NEVER).any()]
        if not any(a.agent == AGENT_WGMMA for a in self.pending):
            self.in_flight_regs.clear()

    def _chunks(self, it: Item, desc: int, op: wgmma_desc.Operand) -> np.ndarray:
        """The first bytes of the 16-byte chunks an operand reads (memoised: a kernel's
        loop takes a few descriptors over and over)."""
        key = (desc, op)
        got = self.chunk_memo.get(key)
        if got is None:
            d = wgmma_desc.Descriptor.decode(desc)
            if d.base_offset and d.swizzle:
                raise _Refused(f"line {it.line}: a wgmma descriptor with a base offset")
            got = self.chunk_memo[key] = np.array(
                [a for a, _ in wgmma_desc.chunks(d, op)], dtype=np.int64)
        return got

    def _wgmma(self, it: Item, run: np.ndarray, maybe: np.ndarray, others: bool) -> None:
        """An mma_async: its warpgroup's unit reads the operands its descriptors name, until
        the warpgroup's wait retires the group (docs/model.md, "wgmma operands")."""
        got = self._whole(it, run, maybe, others, 128)
        ops = wgmma_desc.split_operands(it.text)[1]
        try:
            shape = wgmma_desc.parse_mma(it.opcode, ops)
        except wgmma_desc.NotModeled as exc:
            raise _Refused(f"line {it.line}: {exc}") from None
        which = [("A", 1)] if shape.a_smem else []
        for g in got:
            threads = np.arange(128 * g, min(128 * g + 128, self.n))
            starts = []
            for name, i in which + [("B", 2)]:
                v = self._src(ops[i], 64)
                vals = set(v.a[threads].tolist())
                sym = v.rel[0] if v.rel is not None and v.rel[1] == 4 else None
                if sym not in self.shared or not v.known[threads].all() or len(vals) != 1:
                    raise _Refused(f"line {it.line}: the wgmma's {name} descriptor "
                                   f"`{ops[i]}` is not known before launch as "
                                   "one offset from a shared variable in its warpgroup")
                # (its offsets are exact for a variable at a multiple of 1024: the module's
                # only one, which ptxas puts at 0x400 on sm_90a, or one declared so aligned)
                align = getattr(self.shared, "align", {}).get(sym, 0)
                if len(self.shared) != 1 and align < 1024:
                    raise _Refused(f"line {it.line}: the wgmma's {name} operand is in `{sym}`, "
                                   f"aligned to {align} bytes beside other shared variables "
                                   "(its descriptors' offsets need an address that is a "
                                   "multiple of 1024)")
                chunks = self._chunks(it, vals.pop(), shape.operand(name))
                if len(chunks):
                    end = int(chunks.max()) + wgmma_desc.CHUNK
                    self.extent[sym] = max(self.extent.get(sym, (0, 0)), (end, it.line))
                self.sym = self.sym or sym
                starts.append(chunks + self._base(it, sym))
            start = np.unique(np.concatenate(starts))
            if (start < 0).any() or (start >= MAX_SHARED + MAX_SHARED).any():
                raise _Refused(f"line {it.line}: a wgmma operand outside the shared memory "
                               "the kernel's accesses name")
            self.in_flight_regs |= set(self._dests(it))
            k = len(start)
            a = Access(self.barriers, np.full(k, threads[0]), np.full(k, 4 * g), start,
                       wgmma_desc.CHUNK, False, np.ones(k, dtype=bool),
                       np.ones(k, dtype=bool), it.line, self.steps, AGENT_WGMMA,
                       np.zeros(k, dtype=np.int64), np.full(k, NEVER, dtype=np.int64),
                       np.full(k, self.wg_commits[g]), queue="wgmma")
            self.pending.append(a)
            self._record(a)

    # ------------------------------------------------------------ mbarriers and bulk copies
    def _elect(self, it: Item, run: np.ndarray, maybe: np.ndarray, others: bool) -> None:
        """`elect.sync d|p, -1` by whole converged warps: p true in one lane of each. The run
        elects the first lane; which one the GPU elects is moot where _elected allows its
        use (the register d, that lane's id, is not known)."""
        self._whole(it, run, maybe, others, 32)
        ops = it.operands
        if len(ops) != 2 or ops[1].strip().lower() not in ("-1", "0xffffffff"):
            raise _Refused(f"line {it.line}: `elect.sync` of a part of the warp")
        d = [x.strip() for x in ops[0].split("|")]
        if d[0] not in ("_", ""):
            self.regs[d[0]] = self._unknown()
        if len(d) == 2:
            old = self.preds.get(d[1], _Pred(np.zeros(self.n, dtype=bool),
                                             np.zeros(self.n, dtype=bool)))
            first = self.special["%laneid"] == np.uint64(0)
            base = old.v if old.base is None else old.base
            self.preds[d[1]] = _Pred(np.where(run, first, old.v), old.known | run,
                                     base=np.where(run, True, base))

    def _elected(self, it: Item, mask: np.ndarray, operands: list[str] | None = None) -> None:
        """An instruction under an `elect.sync` predicate, `mask` the threads at it: whether
        each warp runs it, and with which of its `operands` (all where None: those that
        decide what it does in shared memory), must not depend on the lane elected."""
        p = self.preds.get(it.pred.lstrip("@").lstrip("!")) if it.pred else None
        if p is None or p.base is None:
            return
        would = mask & p.base
        for w in np.unique(self.warp[mask]).tolist():  # (the election was among all lanes)
            if not np.array_equal(mask[self.warp == w], self.alive[self.warp == w]):
                raise _Refused(f"line {it.line}: under an `elect.sync` predicate, part of "
                               f"warp {w} runs it (the lane elected may be on another path)")
        names = re.findall(r"%[\w$.]+|\b[A-Za-z_$][\w$]*\b",
                           " ".join(it.operands if operands is None else operands))
        vals = [self._src(x, 64) for x in names
                if x in self.special or x in self.regs or x in self.local_names]
        for w in np.unique(self.warp[mask]):
            lanes = mask & (self.warp == w)
            if would[lanes].any() != would[lanes].all():
                raise _Refused(f"line {it.line}: whether warp {w} runs it depends on the lane "
                               "`elect.sync` picks")
            for v in vals:
                if not v.known[lanes].all() or len(set(v.a[lanes].tolist())) > 1:
                    raise _Refused(f"line {it.line}: its operands differ between the lanes "
                                   "`elect.sync` may pick")

    def _smem(self, it: Item, text: str, threads: np.ndarray, size: int,
              ranged: bool = False) -> np.ndarray:
        """Per thread, where the proof puts the shared-memory address `text` of an access of
        `size` bytes (a load or store, an mbarrier, a copy's first byte), for the threads of
        `threads`; its end is recorded for _inside. In a cluster, CTA rank r's bytes are put
        at r * stride on, and `self.owner` is left holding, per thread, the rank of the CTA
        whose bytes the address names (a `.shared::cluster` address from `mapa`: the rank it
        was made for; any other: the thread's own). `ranged`: an address known only within
        bounds of its offset (`_offset_range`) is taken at its lowest, and `self.spread`
        left holding, per thread, how far past it the highest lies (0 where known)."""
        parts = split_address(text or "")
        if parts is None:
            raise _Refused(f"line {it.line}: address `{text}` not understood")
        base, off = parts
        v = _Val(base, self._const(0), self.yes) if base in self.shared else \
            self.regs.get(base, self._unknown())
        self.owner = self.rank.copy()
        if v.sym and v.sym.endswith(CLUSTER_TAG) and v.known[threads].all():
            if not any(p.startswith("shared::cluster") for p in it.op_parts):
                raise _Refused(f"line {it.line}: a `.shared::cluster` address (from `mapa`) "
                               f"used by `{it.opcode}`, which takes a `.shared::cta` one")
            self.owner = (v.a >> np.uint64(CLUSTER_SHIFT)).astype(np.int64)
            v = _Val(v.sym[:-len(CLUSTER_TAG)], v.a & np.uint64((1 << CLUSTER_SHIFT) - 1),
                     v.known)
        self.spread = np.zeros(self.n, dtype=np.int64)
        if v.sym in self.shared and not v.known[threads].all() and ranged and \
                v.lo is not None and v.hi is not None and \
                (v.hi[threads & ~v.known] < MAX_SHARED).all():
            self.spread = np.where(v.known, 0, v.hi - v.lo)
            v = _Val(v.sym, np.where(v.known, v.a, v.lo.view(np.uint64)), self.yes)
        if v.sym not in self.shared or not v.known[threads].all():
            raise _Refused(f"line {it.line}: the address `{text}` is not known before launch")
        self.sym = self.sym or v.sym
        # (its offsets' 4-byte granules must be the checker's: a variable aligned to 4, or
        # the module's only one, which ptxas puts at the window's start, 0x400 on sm_90a)
        align = getattr(self.shared, "align", {}).get(v.sym, 0)
        if align < GRANULE and len(self.shared) != 1:
            raise _Refused(f"line {it.line}: `{v.sym}` is aligned to {align} bytes, less than "
                           f"the checker's {GRANULE}-byte granules, beside other shared "
                           "variables")
        start = (v.a + np.uint64(off & _M64)).view(np.int64)
        reach = start + size + self.spread
        if (start[threads] < 0).any() or (reach[threads] > MAX_SHARED).any():
            raise _Refused(f"line {it.line}: an address outside the shared memory a CTA can "
                           "have")
        if threads.any():
            end = int(reach[threads].max())
            self.extent[v.sym] = max(self.extent.get(v.sym, (0, 0)), (end, it.line))
        return start + self._base(it, v.sym) + self.owner * self.stride

    def _int_of(self, it: Item, text: str, threads: np.ndarray, what: str) -> np.ndarray:
        v = self._src(text, 64)
        if v.sym or v.rel or not v.known[threads].all():
            raise _Refused(f"line {it.line}: the {what} `{text}` is not known before launch")
        return v.a.view(np.int64)

    def _certain(self, it: Item, c: Classified, run: np.ndarray, maybe: np.ndarray) -> None:
        if not np.array_equal(run, maybe) or (self.doubt & maybe).any():
            raise _Refused(f"line {it.line}: `{it.opcode}` that threads may or may not run")
        self._elected(it, self.at, [x for x in (c.address, c.arg, c.result) if x])

    def _spins(self, pc: int, result: str | None) -> bool:
        """Whether the wait at `pc` is a loop that runs it again until `result` is true:
        `L: wait p; @!p bra L;` or `L: wait p; @p bra M; bra L; M:`."""
        body = self.fn.body
        nxt = [i for i in range(pc + 1, min(pc + 32, len(body))) if body[i].is_instruction][:2]

        def back(j: int) -> bool:  # (a branch to labels just before the wait)
            t = self.targets.get(j)
            return t is not None and t <= pc and not any(x.is_instruction for x in body[t:pc])
        if result and len(nxt) == 2 and self._selp_of(body[nxt[0]], result):
            # (CUDA's inline form: `selp.u32 r, 1, 0, p;` out of the block, then `setp.eq
            # q, r, 0; @q bra L;` or `setp.ne q, r, 0; @!q bra L;`)
            r = body[nxt[0]].operands[0].strip()
            more = [i for i in range(nxt[1], min(nxt[1] + 32, len(body)))
                    if body[i].is_instruction][:2]
            st = body[more[0]]
            if len(more) == 2 and st.op_parts[0] == "setp" and not st.pred and \
                    st.op_parts[1] in ("eq", "ne") and len(st.operands) == 3 and \
                    {st.operands[1].strip(), st.operands[2].strip()} == {r, "0"}:
                q = st.operands[0].strip()
                br = body[more[1]]
                want = f"@{q}" if st.op_parts[1] == "eq" else f"@!{q}"
                return br.op_parts[0] == "bra" and br.pred == want and back(more[1])
            return False
        if not result or not nxt or body[nxt[0]].op_parts[0] != "bra":
            return False
        first = body[nxt[0]]
        if first.pred == f"@!{result}" and back(nxt[0]):
            return True
        if first.pred != f"@{result}" or len(nxt) != 2:
            return False
        second, out = body[nxt[1]], self.targets.get(nxt[0], -1)
        return not second.pred and second.op_parts[0] == "bra" and back(nxt[1]) and \
            out > nxt[1] and not any(x.is_instruction for x in body[nxt[1] + 1:out])

    @staticmethod
    def _selp_of(it: Item, p: str) -> bool:
        """`selp.{b,u,s}32 r, 1, 0, p`: r is 1 where p is true, 0 elsewhere."""
        return it.op_parts[0] == "selp" and not it.pred and len(it.operands) == 4 and \
            it.op_parts[-1] in ("b32", "u32", "s32") and \
            [o.strip() for o in it.operands[1:]] == ["1", "0", p]

    def _warp_sync(self, it: Item, run: np.ndarray, maybe: np.ndarray) -> None:
        """`bar.warp.sync -1` by every lane of a warp that has not returned, certainly:
        the warp runs converged from there (its lanes' earlier accesses are before it)."""
        if not it.operands or it.operands[0].strip().lower() not in ("-1", "0xffffffff") or \
                not np.array_equal(run, maybe) or (self.doubt & maybe).any():
            return
        for w in np.unique(self.warp[run]).tolist():
            if np.array_equal(run[self.warp == w], self.alive[self.warp == w]):
                self.split[w] = False
                self.join[w] = self.steps

    def _op(self, line: int, threads: np.ndarray) -> MbOp:
        """An mbarrier operation of `threads` at this step, with their clocks."""
        ts = np.nonzero(threads)[0]
        causal = np.array([self.cvcs[i] for i in self.cid[ts].tolist()])
        causal[np.arange(len(ts)), ts] = self.steps
        return MbOp(line, threads.copy(), {int(w) for w in np.unique(self.warp[ts])},
                    self.barriers, self.steps, causal)

    def _completed(self) -> int:
        return sum(len(mb.done) for mb in self.mbars.values()) + \
            sum(len(nb.done) for nb in self.named.values())

    def _named(self, it: Item, c: Classified, pc: int, mask: np.ndarray, run: np.ndarray,
               maybe: np.ndarray) -> np.ndarray:
        """`bar.sync` / `bar.arrive` on a barrier other than 0, or any in a cluster's CTAs
        (each CTA's barriers its own: proof_named.py), run by whole warps together,
        certainly: the arrival of the threads that had not arrived here yet; a `bar.sync`'s
        threads whose generation completed acquire it, the others wait here (parked, as at
        an mbarrier wait). The threads that go on."""
        if it.pred or "red" in it.op_parts or self.ntid % 32:
            raise _Refused(f"line {it.line}: `{it.opcode} {', '.join(it.operands)}` is not a "
                           "barrier the proof follows (predicated, a reduction, or a block "
                           "of part of a warp)")
        # (the hardware counts a warp's arrival as 32 threads whatever lanes it has left:
        # every lane of each warp must run it, none returned, with one id and count)
        lanes = np.isin(self.warp, self.warp[mask])
        if not (np.array_equal(run, mask) and np.array_equal(maybe, mask) and
                np.array_equal(mask, lanes)) or (self.doubt & mask).any() or \
                not self.alive[lanes].all():
            raise _Refused(f"line {it.line}: `{it.opcode}` not run by every lane of its "
                           "warps together, certainly (a warp arrives as 32 threads)")
        ops = it.operands
        ident = self._int_of(it, ops[0], mask, "barrier")
        count = self._int_of(it, ops[1], mask, "thread count") if len(ops) > 1 else \
            np.full(self.n, self.ntid, dtype=np.int64)
        first = (self.warp * 32)[mask]  # (each lane's warp's lane 0)
        if (ident[mask] != ident[first]).any() or (count[mask] != count[first]).any():
            raise _Refused(f"line {it.line}: `{it.opcode} {', '.join(ops)}` with a barrier or "
                           "thread count that differs between the lanes of a warp")
        sync = c.event is Event.BAR_SYNC
        fresh = mask & (self.nb_gen < 0)  # (the others arrived here and were parked)
        low = 0 if self.ncta > 1 else 1
        bad = fresh & ((ident < low) | (ident >= NAMED_IDS))
        if bad.any():
            raise _Refused(f"line {it.line}: `{it.opcode} {', '.join(ops)}` on barrier "
                           f"{int(ident[bad][0])} (the proof follows barriers 1-{NAMED_IDS - 1} "
                           "by their thread counts, and barrier 0 only for every thread of "
                           "the CTA)")
        key = self.rank * NAMED_IDS + ident  # (a cluster's CTAs: each its own barriers)
        for k in np.unique(key[fresh]).tolist():
            threads = fresh & (key == k)
            b = k % NAMED_IDS
            counts = set(count[threads].tolist())
            n = counts.pop()
            if counts or n <= 0 or n % 32 or n > self.ntid or \
                    (len(ops) == 1 and not self.alive.all()):
                raise _Refused(f"line {it.line}: `{it.opcode} {', '.join(ops)}`: warps arrive "
                               "at a barrier with thread counts other than one multiple of 32 "
                               f"up to the block's {self.ntid} (or with none after threads "
                               "returned)")
            nb = self.named.setdefault(k, NamedBarrier(b, n, it.line))
            g = nb.arrive(self._op(it.line, threads), n, self._release(threads),
                          self._release(threads, self.cvcs))
            if sync:
                self.nb_gen[threads], self.nb_id[threads] = g, k
        waiting = mask & (self.nb_gen >= 0)
        for k, g in {(int(k), int(g)) for k, g in zip(self.nb_id[waiting],
                                                       self.nb_gen[waiting], strict=True)}:
            nb = self.named[k]
            if g < len(nb.done):
                threads = waiting & (self.nb_id == k) & (self.nb_gen == g)
                d = nb.done[g]
                assert d.release is not None and d.causal is not None
                self._acquire(threads, d.release, d.causal)
                self.waited[threads] = self.steps
                self.nb_gen[threads] = -1
        blocked = mask & (self.nb_gen >= 0)
        if blocked.any():
            self.parked.append((pc, blocked.copy()))
            self.parked_at = self._completed()
        return mask & ~blocked

    def _record(self, a: Access) -> None:
        a.cid = self.cid[a.thread].copy()
        self.accesses.append(a)
        self.rows += rows_of(a)
        if self.rows > MAX_ROWS:  # (refused as it grows: before the host runs out of memory)
            raise _Refused(f"more than {MAX_ROWS:,} {TOO_MANY} (an access's threads times "
                           "the granules it may touch)")

    def _blocked(self, it: Item, c: Classified, run: np.ndarray) -> np.ndarray:
        """The threads of `run` whose wait's phase has not completed (yet)."""
        out = np.zeros(self.n, dtype=bool)
        if not run.any():
            return out
        at = self._smem(it, c.address or "", run, MBAR_BYTES)
        parity = self._int_of(it, c.arg, run, "operand")
        for t in np.nonzero(run)[0].tolist():
            mb = self.mbars.get(int(at[t]))
            out[t] = mb is not None and not mb.ready(int(parity[t]))
        return out

    def _release(self, threads: np.ndarray, clocks: list[np.ndarray] | None = None
                 ) -> np.ndarray:
        """What arrivals of `threads` at this step release: what they acquired, their own
        steps, and their warps' other lanes' up to where the warp last ran converged (all
        of it where it runs so now: lanes of a warp are one logical thread). `clocks`: the
        causal ones instead."""
        vcs = self.vcs if clocks is None else clocks
        out = np.max([vcs[i] for i in np.unique(self.cid[threads]).tolist()], axis=0)
        for w in np.unique(self.warp[threads]).tolist():
            lanes = self.warp == w
            out[lanes] = np.maximum(out[lanes], self.join[w] if self.split[w] else self.steps)
        out[threads] = self.steps
        return out

    def _acquire(self, threads: np.ndarray, release: np.ndarray, causal: np.ndarray) -> None:
        for i in np.unique(self.cid[threads]).tolist():
            self.vcs.append(np.maximum(self.vcs[i], release))
            self.cvcs.append(np.maximum(self.cvcs[i], causal))
            self.cid[threads & (self.cid == i)] = len(self.vcs) - 1

    def _mbarrier(self, it: Item, c: Classified, run: np.ndarray, maybe: np.ndarray) -> None:
        """init, arrive(.expect_tx), expect_tx, a spinning try_wait.parity, inval of the
        CTA's own mbarriers (proof_mbarrier.py); any other form refuses the proof."""
        op = c.op
        if "relaxed" in it.op_parts:  # (orders nothing: no release, no acquire)
            raise _Refused(f"line {it.line}: `{it.opcode}` (a relaxed mbarrier operation) is "
                           "not followed by the proof")
        if "noComplete" in it.op_parts:  # (undefined where it completes the phase)
            raise _Refused(f"line {it.line}: `{it.opcode}` is not followed by the proof")
        if op not in (abi.MB_INIT, abi.MB_INVAL, abi.MB_ARRIVE, abi.MB_ARRIVE_EXPECT_TX,
                      abi.MB_EXPECT_TX, abi.MB_WAIT_PARITY) or (
                c.space == abi.SPACE_CLUSTER and op in (abi.MB_INIT, abi.MB_INVAL,
                                                        abi.MB_WAIT_PARITY)):
            raise _Refused(f"line {it.line}: `{it.opcode}` is not followed by the proof")
        if op == abi.MB_WAIT_PARITY and it.pred:  # (lanes that skip it leave its loop too)
            raise _Refused(f"line {it.line}: a predicated wait (the lanes that skip it would "
                           "go on without waiting)")
        if op == abi.MB_WAIT_PARITY and not self._spins(self.pc, c.result):
            raise _Refused(f"line {it.line}: a wait whose result the kernel uses other than by "
                           "trying again until it succeeds")
        self._certain(it, c, run, maybe)
        if not run.any():
            return
        at = self._smem(it, c.address or "", run, MBAR_BYTES)
        # (another CTA's mbarrier: its arrivals release at cluster scope, or they publish
        # nothing to the waiting CTA; such a phase is acquired by cluster-scope waits only)
        away = run & (self.owner != self.rank)
        if away.any() and "cluster" not in it.op_parts:
            raise _Refused(f"line {it.line}: `{it.opcode}` on another CTA's mbarrier, not of "
                           "`.cluster` scope (it releases nothing to that CTA)")
        self._remote(it, run)
        arg = self._int_of(it, c.arg, run, "operand") if op != abi.MB_INVAL else None
        k, line = self.barriers, it.line
        for addr in np.unique(at[run]).tolist():
            threads = run & (at == addr)
            warps = {int(w) for w in np.unique(self.warp[threads])}
            n = int(threads.sum())
            if op == abi.MB_INIT:
                if n != 1 or (addr in self.mbars and self.mbars[addr].valid):
                    raise _Refused(f"line {line}: an mbarrier initialised by {n} threads or "
                                   "while still in use")
                self.mbars[addr] = MBarrier(addr, int(arg[threads][0]), warps.pop(), k, line)
                continue
            mb = self.mbars.get(addr)
            if mb is None:
                raise _Refused(f"line {line}: an mbarrier not initialised before")
            for w in warps:
                mb.use(line, w, k)
            if (away & threads).any():
                mb.cur.remote = True
            if op == abi.MB_INVAL:
                mb.inval(line)
            elif op == abi.MB_ARRIVE:
                mb.arrive(self._op(line, threads), int(arg[threads].sum()), 0,
                          self._release(threads), self._release(threads, self.cvcs))
            elif op == abi.MB_ARRIVE_EXPECT_TX:
                mb.arrive(self._op(line, threads), n, int(arg[threads].sum()),
                          self._release(threads), self._release(threads, self.cvcs))
            elif op == abi.MB_EXPECT_TX:
                mb.expect(self._op(line, threads), int(arg[threads].sum()))
            else:
                parities = set(arg[threads].tolist())
                if len(parities) != 1:
                    raise _Refused(f"line {line}: threads wait for phases of other parities "
                                   "of one mbarrier")
                parity = parities.pop()
                got, release, causal = mb.wait(self._op(line, threads), parity)
                if release is not None and mb.done[-1].remote and \
                        "cluster" not in it.op_parts:
                    raise _Refused(f"line {line}: a wait of `.cta` scope for an mbarrier "
                                   "phase that another CTA took part in (it acquires nothing "
                                   "that CTA released)")
                if release is not None:  # (what the phase's arrivals released)
                    assert causal is not None
                    self._acquire(threads, release, causal)
                self.waited[threads] = self.steps
                whole = {w for w in warps if not self.split[w] or
                         threads[(self.warp == w) & self.alive].all()}
                for a in got:
                    assert a.seen is not None and a.until is not None and \
                        a.until_seq is not None and a.seen_by is not None
                    for w in whole:  # (a warp's own view of the bytes: rule 2)
                        a.seen.setdefault(w, self.steps)
                    a.seen_by[threads & (a.seen_by == NEVER)] = self.steps
                    if (a.until_seq == NEVER).all():
                        a.until[:], a.until_seq[:] = k, self.steps
        if op == abi.MB_WAIT_PARITY:
            self.spin_result = (c.result or "", maybe)

    def _bulk(self, it: Item, c: Classified, run: np.ndarray, maybe: np.ndarray) -> None:
        """A copy engine's write of shared memory completing on an mbarrier (a bulk or tensor
        load), or its read of it until the thread's bulk-group wait (a bulk or tensor store,
        a reduction into global memory)."""
        into = c.event in _COPIES_IN
        st_async = it.op_parts[:2] == ["st", "async"]  # (each lane's store: a copy of its own)
        multicast = bool(c.mask) and into and "multicast::cluster" in it.op_parts and \
            self.ncta > 1
        if (c.mask and not multicast) or it.op_parts[0] == "red" or (
                it.op_parts[0] == "st" and not st_async) or (
                into and not st_async and "global" not in it.op_parts):
            raise _Refused(f"line {it.line}: `{it.opcode}` (a copy from another CTA's shared "
                           "memory, a multicast or a reduction) is not followed by the proof")
        if st_async and self.ncta == 1:  # (PTX ISA: st.async is undefined outside a cluster)
            raise _Refused(f"line {it.line}: `{it.opcode}` in a launch of no cluster (its "
                           "behaviour is undefined there)")
        self._certain(it, c, run, maybe)
        if not run.any():
            return
        if c.event in (Event.TENSOR_LOAD, Event.TENSOR_STORE):
            v = self._src(c.arg, 64)
            name = (v.sym or "")[len(_PARAM_SYM):] if (v.sym or "").startswith(
                _PARAM_SYM) and v.known[run].all() and not v.a[run].any() else None
            if name is None:
                raise _Refused(f"line {it.line}: the tensor map `{c.arg}` is not a kernel "
                               "parameter the proof follows")
            size = self.maps.get(name)
            if size is None:
                raise _Refused(f"line {it.line}: the box of tensor map `{name}` is not known "
                               "before launch")
            sizes = np.full(self.n, size, dtype=np.int64)
        else:
            sizes = self._int_of(it, c.arg, run, "size")
        start = self._smem(it, c.address or "", run, int(sizes[run].max()))
        owner = self.owner
        # (PTX ISA: st.async at an address aligned to its size; a bulk copy 16-byte aligned,
        # of a multiple of 16 bytes)
        align = c.size if st_async else 16
        if (start[run] % align).any() or (not st_async and (sizes[run] % 16).any()) or \
                (sizes[run] <= 0).any():
            raise _Refused(f"line {it.line}: `{it.opcode}` of an address or size its "
                           "alignment rules forbid")
        bars = self._smem(it, c.result or "", run, MBAR_BYTES) if into else None
        if bars is not None and (self.owner != owner)[run].any():
            raise _Refused(f"line {it.line}: a copy completing on an mbarrier of another CTA "
                           "than the one it writes")
        if not multicast:
            self._copies(it, run, start, sizes, bars, owner, into, st_async)
            return
        # (a multicast: the same bytes, at the same offsets from each CTA's shared memory,
        # into every CTA of its ctaMask, each completing on its own mbarrier there)
        mask = self._int_of(it, c.mask or "", run, "ctaMask")
        if (owner[run] != self.rank[run]).any() or (mask[run] >> self.ncta).any() or \
                not (mask[run] & 0xFFFF).all():
            raise _Refused(f"line {it.line}: a multicast of an address not the issuing "
                           "CTA's own, or with a ctaMask naming no CTA or one the cluster "
                           "does not have")
        assert bars is not None
        for q in range(self.ncta):
            to = run & ((mask >> q) & 1).astype(bool)
            if to.any():
                shift = (q - owner) * self.stride
                self._copies(it, to, start + shift, sizes, bars + shift,
                             np.full(self.n, q, dtype=np.int64), into, st_async)

    def _copies(self, it: Item, run: np.ndarray, start: np.ndarray, sizes: np.ndarray,
                bars: np.ndarray | None, owner: np.ndarray, into: bool,
                st_async: bool) -> None:
        """The copies of the threads of `run` into (or out of) the CTA `owner` names per
        thread: one access per mbarrier the threads' copies complete on; a store's copies
        per thread."""
        groups = [run & (bars == b) & (sizes == z) for b, z in sorted(set(zip(
            bars[run].tolist(), sizes[run].tolist(), strict=True)))] if bars is not None \
            else [run & (np.arange(self.n) == t) for t in np.nonzero(run)[0].tolist()]
        for one in groups:
            ts = np.nonzero(one)[0]
            n = len(ts)
            a = Access(self.barriers, ts, self.warp[ts], start[ts], int(sizes[ts].max()),
                       into, np.ones(n, dtype=bool), ~self.split[self.warp[ts]], it.line,
                       self.steps, AGENT_COPY, np.zeros(n, dtype=np.int64),
                       np.full(n, NEVER, dtype=np.int64), self.bulk_commits[ts].copy(),
                       queue="bulk")
            if bars is not None:
                a.queue, a.seen = "mbar", {}
                a.seen_by = np.full(self.n, NEVER, dtype=np.int64)
                mb = self.mbars.get(int(bars[ts[0]]))
                if mb is None:
                    raise _Refused(f"line {it.line}: a copy on an mbarrier not initialised "
                                   "before")
                for w in np.unique(self.warp[ts]).tolist():
                    mb.use(it.line, w, self.barriers)
                if (owner[ts] != self.rank[ts]).any():
                    multicast = "multicast::cluster" in it.op_parts
                    if not ("cluster" in it.op_parts or multicast or st_async):
                        raise _Refused(f"line {it.line}: `{it.opcode}` into another CTA")
                    # (a phase a peer's thread completes is acquired by cluster-scope waits
                    # only; a multicast's bytes come from global memory through the copy
                    # engine, which completes each destination CTA's own mbarrier, and it
                    # releases nothing of its issuer's: a wait of the CTA's scope sees them,
                    # as CUTLASS's multicast pipelines wait)
                    mb.cur.remote = mb.cur.remote or not multicast
                # (its phase completes after the issue, so after what the issuers had
                # acquired and after their last waits)
                issued = np.max([self.cvcs[i] for i in np.unique(self.cid[ts]).tolist()],
                                axis=0)
                issued[ts] = np.maximum(issued[ts], self.waited[ts])
                mb.copy(self._op(it.line, one), a, int(sizes[ts].sum()), issued)
                self.writes += 1
            self.owner = owner
            self._remote(it, one, a)
            self.pending.append(a)
            self._record(a)

    def _mbarrier_bytes(self) -> None:
        """No access and no copy touches an mbarrier object's bytes."""
        for addr, mb in self.mbars.items():
            for a in self.accesses:
                if ((a.start < addr + MBAR_BYTES) & (addr < a.start + a.size)).any():
                    raise _Refused(f"lines {mb.line}, {a.line}: an access to the bytes of the "
                                   f"mbarrier initialised at line {mb.line}")

    def _guard(self, it: Item, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(threads of `mask` that run it if they are on this path, threads that may run
        it): a thread in self.doubt may not be on it."""
        if not it.pred:
            return mask, mask
        text = it.pred.lstrip("@")
        p = self.preds.get(text.lstrip("!"))
        if p is None or (p.base is not None and text.startswith("!")):
            return np.zeros(self.n, dtype=bool), mask
        v = ~p.v if text.startswith("!") else p.v
        return mask & p.known & v, mask & (~p.known | v)

    # ------------------------------------------------------------ register values
    def _dests(self, it: Item) -> list[str]:
        if not it.operands or it.op_parts[0] in _NO_DEST or it.operands[0].lstrip()[:1] == "[":
            return []
        return [r for r in re.findall(r"%?[\w$.]+", it.operands[0])
                if (r.startswith("%") and not SPECIAL_REGISTER.fullmatch(r)) or
                r in self.local_names]

    def _src(self, text: str, bits: int) -> _Val:
        text = text.strip()
        if text in self.special:
            return _Val(None, self.special[text] & _mask(bits), self.yes)
        if text in self.shared:
            return _Val(text, self._const(0), self.yes)
        if text in self.param_syms:  # (a parameter's address, as a tensor map's operand)
            return _Val(self.param_syms[text], self._const(0), self.yes)
        if text in self.ranged:
            return _Val(None, self._const(0), np.zeros(self.n, dtype=bool),
                        lo=np.zeros(self.n, dtype=np.int64),
                        hi=np.full(self.n, self.ranged[text], dtype=np.int64))
        if text.startswith("%") or text in self.local_names:
            return self.regs.get(text, self._unknown())
        try:
            return _Val(None, self._const(ptx_int(text)) & _mask(bits), self.yes)
        except ValueError:
            return self._unknown()

    def _pred(self, text: str, elected: bool = False) -> _Pred:
        """A predicate operand's value; one made by `elect.sync` is known only to an `and` or
        `mov` of predicates (`elected`), which keep its base: anything else it decides (a
        branch, a select, its negation) would depend on the lane the GPU elects."""
        text = text.strip()
        neg = text.startswith("!")
        text = text.lstrip("!")
        if text in ("1", "-1", "0"):
            p = _Pred(np.full(self.n, text != "0"), self.yes)
        else:
            p = self.preds.get(text, _Pred(np.zeros(self.n, dtype=bool),
                                           np.zeros(self.n, dtype=bool)))
        if p.base is not None and (neg or not elected):
            return _Pred(~p.v if neg else p.v, np.zeros(self.n, dtype=bool))
        return _Pred(~p.v, p.known) if neg else p

    def _assign(self, it: Item, run: np.ndarray, maybe: np.ndarray) -> None:
        dests = self._dests(it)
        if not dests:
            return
        try:
            with np.errstate(all="ignore"):
                new = self._evaluate(it.op_parts, it.operands, dests)
        except (ValueError, IndexError, KeyError, OverflowError, ZeroDivisionError):
            new = None
        doubt = maybe & ~run  # threads that may or may not write
        uni = self._uniform_def(it, run, maybe)
        keys = self._value_keys(it, run, dests)
        for r in dests:
            value = None if new is None or r in self.in_flight_regs else new.get(r)
            if isinstance(value, _Pred) or (value is None and r in self.preds):
                old = self.preds.get(r, _Pred(np.zeros(self.n, dtype=bool),
                                              np.zeros(self.n, dtype=bool)))
                if value is None:
                    value = _Pred(old.v, np.zeros(self.n, dtype=bool))
                base = None
                if value.base is not None:
                    base = np.where(run, value.base, old.v if old.base is None else old.base)
                elif old.base is not None and not np.array_equal(run, self.alive):
                    # (an election's predicate overwritten in some lanes only: not followed)
                    value = _Pred(value.v, np.zeros(self.n, dtype=bool))
                    old = _Pred(old.v, np.zeros(self.n, dtype=bool))
                self.preds[r] = _Pred(np.where(run, value.v, old.v),
                                      np.where(run, value.known, old.known) & ~doubt, uni,
                                      base)
                continue
            old = self.regs.get(r)
            key = None
            if keys is not None or (old is not None and old.key is not None):
                new_key = keys[r] if keys is not None else _NO_KEY
                old_key = old.key if old is not None and old.key is not None else _NO_KEY
                key = np.where(doubt, -1, np.where(run, new_key, old_key))
            lo = hi = None
            if self.ranged and len(dests) == 1 and (value is None or not value.known[run].all()):
                lo, hi = self._bounded(it, run, doubt, old, value.sym if value is not None
                                       and value.sym in self.shared and value.rel is None
                                       else None)
            if value is None and old is not None and not old.known.any():
                old.uni = uni  # (still unknown everywhere: a wgmma's accumulators at each step)
                old.key = key  # (bounds of an integer: an address's would be its offset's)
                old.lo, old.hi = (lo, hi) if old.sym is None and old.rel is None else \
                    (None, None)
                continue
            old = old or self._unknown()
            if value is None:
                value = self._unknown()
            sym, rel = (value.sym, value.rel) if run.any() else (old.sym, old.rel)
            keep = old.known & (old.sym == sym) & (old.rel == rel)
            self.regs[r] = _Val(sym, np.where(run, value.a, old.a),
                                np.where(run, value.known, keep) & ~doubt, rel, uni, key,
                                lo, hi)

    def _bounds_of(self, text: str, bits: int) -> tuple[np.ndarray, np.ndarray]:
        """An integer operand's bounds (lo, hi) in every thread, as a value of `bits` that
        reads the same signed and unsigned; hi >= _UNBOUNDED where there are none."""
        v = self._src(text, bits)
        lim = _limit(bits)
        lo = np.zeros(self.n, dtype=np.int64)
        hi = np.full(self.n, _UNBOUNDED, dtype=np.int64)
        if v.sym is None and v.rel is None:
            x = v.a & _mask(bits)
            exact = v.known & (x < np.uint64(lim))
            lo[exact] = hi[exact] = x[exact].astype(np.int64)
            if v.hi is not None and v.lo is not None:
                part = ~v.known & (v.hi < lim)
                lo[part], hi[part] = v.lo[part], v.hi[part]
        return lo, hi

    def _bounded(self, it: Item, run: np.ndarray, doubt: np.ndarray,
                 old: _Val | None, sym: str | None = None
                 ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The bounds of an instruction's one destination where its value is not known:
        the operation's, on its operands' bounds, in the threads that may run it; joined
        with the old value's where a thread may or may not (docs/model.md, "For one
        launch's values"). `sym`: the shared symbol of an address, whose bounds are those
        of its offset from it (`_offset_range`)."""
        if old is not None and old.sym != sym:
            old = None  # (an integer's bounds are no offset's, nor one symbol's another's)
        got = self._offset_range(it.op_parts, it.operands) if sym else \
            self._range(it.op_parts, it.operands)
        if got is None and (old is None or old.hi is None):
            return None, None
        lo = np.zeros(self.n, dtype=np.int64)
        hi = np.full(self.n, _UNBOUNDED, dtype=np.int64)
        if got is not None:  # (the threads that may run it: the new value's)
            maybe = run | doubt
            lo, hi = np.where(maybe, got[0], lo), np.where(maybe, got[1], hi)
        if old is not None and old.hi is not None and old.lo is not None:
            ol = np.where(old.known, 0, old.lo)
            oh = np.where(old.known, _UNBOUNDED, old.hi)  # (a known old value: not bounded
            stay = ~run & ~doubt  # here; it stays known where the thread does not write)
            lo, hi = np.where(stay, ol, lo), np.where(stay, oh, hi)
            lo = np.where(doubt, np.minimum(lo, ol), lo)
            hi = np.where(doubt, np.maximum(hi, oh), hi)
        elif doubt.any():
            hi = np.where(doubt, _UNBOUNDED, hi)
        return (lo, hi) if (hi < _UNBOUNDED).any() else (None, None)

    def _offset_range(self, parts: list[str], ops: list[str]
                      ) -> tuple[np.ndarray, np.ndarray] | None:
        """Bounds of a shared address's offset from its symbol where the offset is not
        known: a move of such an address, or the sum of a known one (`mov.u64 %rd, bins`)
        and a bounded integer (a loaded byte times 4): a histogram's `&bins[data[i]]`."""
        op, w = parts[0], _width(parts)
        if w is None or "cc" in parts or op not in ("mov", "add") or len(ops) < 2:
            return None
        bits = w[0]
        terms = []
        for o in ops[1:3 if op == "add" else 2]:
            v = self._src(o, bits)
            if v.rel is not None:
                return None
            if v.sym is None:
                terms.append(self._bounds_of(o, bits))
            elif v.sym in self.shared:  # (the address's own offset, known or bounded)
                off = v.a.view(np.int64)
                lo = np.where(v.known, off, v.lo if v.lo is not None else 0)
                hi = np.where(v.known, off, v.hi if v.hi is not None else _UNBOUNDED)
                terms.append((lo, hi))
            else:
                return None
        if sum(self._src(o, bits).sym is not None for o in ops[1:3]) != 1:
            return None
        lo = np.sum([t[0] for t in terms], axis=0)
        hi = np.sum([np.minimum(t[1], _UNBOUNDED) for t in terms], axis=0)
        ok = (lo >= 0) & (hi < MAX_SHARED)
        return np.where(ok, lo, 0), np.where(ok, hi, _UNBOUNDED)

    def _range(self, parts: list[str], ops: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """Bounds of an integer operation's result from its operands' (each a value that
        reads the same signed and unsigned): moves, conversions that keep the value, add,
        sub, mul (.lo, .wide), mad, shl and shr by a known amount, and, min, max, and rem
        and div by a known positive divisor; None for any other."""
        op = parts[0]
        if op == "ld":  # (a narrow unsigned or untyped load: zero-extended into its register)
            w = _width(parts)
            dest = register_width(ops[0].strip(), self.widths) if ops else None
            if w is None or w[1] or w[0] > 16 or dest is None or \
                    (1 << w[0]) - 1 >= _limit(dest) or {"v2", "v4", "v8"} & set(parts):
                return None
            return (np.zeros(self.n, dtype=np.int64),
                    np.full(self.n, (1 << w[0]) - 1, dtype=np.int64))
        if op not in _RANGED_OPS or "hi" in parts or "sat" in parts or "cc" in parts or \
                len(ops) < 2:
            return None
        big = np.int64(_UNBOUNDED)
        if op == "cvt":
            types = [p for p in parts[1:] if _TYPE.match(p)]
            if len(types) != 2 or any(p.startswith("f") for p in parts[1:]):
                return None
            (db, _), (sb, _) = (_width([t]) for t in types)  # type: ignore[misc]
            lo, hi = self._bounds_of(ops[1], sb)
            ok = hi < _limit(db)
            return np.where(ok, lo, 0), np.where(ok, hi, big)
        w = _width(parts)
        if w is None:
            return None
        bits = w[0]
        wide = "wide" in parts
        out_bits = 2 * bits if wide else bits
        srcs = [self._bounds_of(o, out_bits if wide and i == 2 else
                                32 if i == 1 and op in ("shl", "shr") else bits)
                for i, o in enumerate(ops[1:4 if op == "mad" else 3])]
        l1, h1 = srcs[0]
        if op == "mov":
            lo, hi, need = l1, h1, [h1]
        elif len(srcs) < 2 or (op == "mad" and len(srcs) < 3):
            return None
        else:
            l2, h2 = srcs[1]
            need = [h1, h2]
            if op == "add":
                lo, hi = l1 + l2, h1 + h2
            elif op == "sub":
                lo, hi = l1 - h2, h1 - l2
                hi = np.where(lo < 0, big, hi)  # (below zero: it wraps)
            elif op in ("mul", "mad"):
                small = (h1 < (1 << 31)) & (h2 < (1 << 31))
                lo, hi = np.where(small, l1 * l2, 0), np.where(small, h1 * h2, big)
                if op == "mad":
                    lo, hi = lo + srcs[2][0], hi + srcs[2][1]
                    need.append(srcs[2][1])
            elif op in ("shl", "shr"):
                k = np.where(l2 == h2, l2, 64)  # (a known amount only)
                kk = np.minimum(k, 61)
                if op == "shl":
                    fits = (k < 62) & (h1 < np.left_shift(np.int64(1), np.clip(62 - k, 0, 62)))
                    lo, hi = np.left_shift(l1, kk), np.where(fits, np.left_shift(h1, kk), big)
                else:  # (an amount past the value's bits leaves 0 of a bounded value)
                    k63 = np.minimum(k, 63)
                    lo = np.right_shift(l1, k63)
                    hi = np.where(k < 64, np.right_shift(h1, k63), big)
            elif op == "and":  # (either operand's bound bounds it)
                lo, hi, need = np.zeros_like(l1), np.minimum(h1, h2), [np.minimum(h1, h2)]
            elif op == "min":
                lo, hi = np.minimum(l1, l2), np.minimum(h1, h2)
            elif op == "max":
                lo, hi = np.maximum(l1, l2), np.maximum(h1, h2)
            else:  # rem, div by a known positive divisor
                ok = (l2 == h2) & (l2 > 0)
                d = np.where(ok, l2, 1)
                if op == "rem":
                    lo = np.where(h1 < d, l1, 0)
                    hi = np.where(h1 < d, h1, d - 1)
                else:
                    lo, hi = l1 // d, h1 // d
                hi = np.where(ok, hi, big)
        bounded = hi < _limit(out_bits)
        for h in need:
            bounded &= h < big
        return np.where(bounded, lo, 0), np.where(bounded, hi, big)

    def _value_keys(self, it: Item, run: np.ndarray, dests: list[str]
                    ) -> dict[str, np.ndarray] | None:
        """Each destination's key in the threads of `run` (-1 where none), or None: a load
        of shared memory by converged warps keys each thread's value by its address and
        the writes the kernel ran so far (the rules refuse any other warp's write of those
        bytes between the barriers around it, so equal keys load equal bytes); a pure
        operation of a keyed operand keys its result by its opcode and its operands'
        values or keys. Keys are exact: ids of the tuples they stand for."""
        op = it.op_parts[0]
        if op == "ld" and any(p in ("shared", "shared::cta") for p in it.op_parts) and \
                not self.split[self.warp[run]].any():
            parts = split_address(it.operands[-1].strip().strip("[]"))
            if parts is None:
                return None
            base, off = parts
            v = _Val(base, self._const(0), self.yes) if base in self.shared else \
                self.regs.get(base)
            if v is None or v.sym is None or not v.known[run].all():
                return None
            start = (v.a + np.uint64(off & _M64)).view(np.int64)
            head = (v.sym, it.opcode, self.barriers, self.writes)
            return {d: self._relabel(start, ("ld", head, i)) for i, d in enumerate(dests)}
        if op not in _KEYED_OPS or len(dests) != 1 or len(it.operands) != 2:
            return None
        v = self.regs.get(it.operands[1].strip())
        if v is None or v.key is None:
            return None  # (a known operand gives a known result; others no key)
        keyed = ~v.known & (v.key >= 0)
        return {dests[0]: np.where(keyed, self._relabel(v.key, it.opcode), -1)}

    def _relabel(self, x: np.ndarray, tag: object) -> np.ndarray:
        """Per thread, the id of (tag, its x): equal x, equal ids."""
        u, inv = np.unique(x, return_inverse=True)
        ids = np.array([self._id((tag, k)) for k in u.tolist()], dtype=np.int64)
        return ids[inv.reshape(-1)]

    def _combine(self, tag: int, terms: list[tuple[np.ndarray, ...]]) -> np.ndarray:
        """A key per thread for `tag` over the operands' terms; -1 where one has none."""
        cols = [self._const_col(tag)]
        none = np.zeros(self.n, dtype=bool)
        for kind, val, ctx in terms:
            cols += [kind, val, ctx]
            none |= kind < 0
        return np.where(none, -1, self._intern(cols))

    def _operand_terms(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """An operand in each thread as (kind, value, context): kind 0 a known value (its
        bits, and the id of its symbol and descriptor form), 1 a key, -1 neither."""
        text = text.strip()
        if text.lstrip("!") in self.preds:
            p = self._pred(text)
            return (np.where(p.known, 0, -1), p.v.astype(np.int64), self._const_col(0))
        if text.startswith("%") and text not in self.special:
            v = self.regs.get(text)
            if v is None:
                return (np.full(self.n, -1), self._const_col(0), self._const_col(0))
        else:
            v = self._src(text, 64)
        kind = np.where(v.known, 0, -1)
        val = v.a.view(np.int64).copy()
        if v.key is not None:
            keyed = ~v.known & (v.key >= 0)
            kind = np.where(keyed, 1, kind)
            val = np.where(keyed, v.key, val)
        return kind, val, self._const_col(self._id((v.sym, v.rel)))

    def _const_col(self, x: int) -> np.ndarray:
        return np.full(self.n, x, dtype=np.int64)

    def _id(self, what: object) -> int:
        """A small integer standing for `what` exactly, for this run."""
        return self.key_ids.setdefault(what, len(self.key_ids))

    def _intern(self, cols: list[np.ndarray]) -> np.ndarray:
        """Per thread, the id of its row of `cols` (equal rows, equal ids)."""
        rows = np.stack([np.asarray(c, dtype=np.int64) for c in cols], axis=1)
        uniq, inv = np.unique(rows, axis=0, return_inverse=True)
        ids = np.array([self._id(("row", *r)) for r in map(tuple, uniq.tolist())],
                       dtype=np.int64)
        return ids[inv.reshape(-1)]

    def _uniform_def(self, it: Item, run: np.ndarray, maybe: np.ndarray) -> bool:
        """Whether `it` gives every thread that has not returned the same values: all of
        them run it, certainly, and it loads one shared address (the rules refuse any write
        of those bytes by another warp between the barriers around it, so all read the same
        bytes) or computes from operands that are the same in all of them."""
        if not np.array_equal(run, self.alive) or not np.array_equal(maybe, run) or \
                self.doubt.any() or not run.any():
            return False
        op = it.op_parts[0]
        if op == "ld":  # (in a cluster each CTA loads its own bytes)
            if self.ncta > 1 or "param" in it.op_parts or not any(
                    p in ("shared", "shared::cta") for p in it.op_parts):
                return False
            parts = split_address(it.operands[-1].strip().strip("[]"))
            if parts is None:
                return False
            base, _ = parts  # (a split warp's lanes may load apart, around their own stores)
            return not self.split[self.warp[run]].any() and (
                base in self.shared or self._same_everywhere(base, run))
        if op not in _UNIFORM_OPS:
            return False
        return all(self._same_everywhere(o, run) for o in it.operands[1:])

    def _same_everywhere(self, text: str, run: np.ndarray) -> bool:
        """An operand whose value is one and the same in every thread of `run`."""
        text = text.strip().lstrip("!")
        if text in self.shared or text in self.uniform_special:
            return True
        if text in self.special:
            return len(set(self.special[text][run].tolist())) == 1
        if text in self.preds:
            p = self.preds[text]
            return p.uni or (bool(p.known[run].all()) and len(set(p.v[run].tolist())) == 1)
        if text.startswith("%"):
            v = self.regs.get(text)
            return v is not None and (v.uni or (bool(v.known[run].all()) and
                                                len(set(v.a[run].tolist())) == 1))
        try:
            ptx_int(text)
            return True
        except ValueError:
            return text in ("0", "1", "-1")

    def _evaluate(self, parts: list[str], ops: list[str], dests: list[str]) -> dict | None:
        op = parts[0]
        if parts[-1] == "pred" and op in ("and", "or", "xor", "not", "mov"):
            s = [self._pred(o, elected=True) for o in ops[1:]]
            known = np.logical_and.reduce([p.known for p in s])
            if op == "mov":
                return {dests[0]: s[0]}
            if op == "not":
                return {dests[0]: self._pred("!" + ops[1].strip())}
            f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op]
            base = None
            if any(p.base is not None for p in s):
                if op != "and":
                    return None
                base = np.logical_and.reduce([p.v if p.base is None else p.base for p in s])
            return {dests[0]: _Pred(f(s[0].v, s[1].v), known, base=base)}
        if op in ("mapa", "getctarank"):
            return self._cluster_address(op, parts, ops, dests)
        if op == "setp":
            return self._setp(parts, ops, dests)
        if op == "cvt":
            return self._cvt(parts, ops, dests)
        if op == "ld" and "param" in parts:
            return self._param(parts, ops, dests)
        if op == "shfl":
            return self._shfl(parts, ops, dests)
        if op == "cvta" and "param" in parts and len(dests) == 1 and "to" not in parts:
            v = self._src(ops[1], 64)  # (a kernel parameter's generic address)
            return {dests[0]: v} if (v.sym or "").startswith(_PARAM_SYM) else None
        w = _width(parts)
        if w is None or len(dests) != 1:
            return None
        bits, signed = w
        m = _mask(bits)
        if "sat" in parts or "relu" in parts or "cc" in parts:
            return None
        if op not in ("mov", "add", "sub", "mul", "mad", "and", "or", "xor", "not", "neg",
                      "shl", "shr", "min", "max", "div", "rem", "bfe", "selp"):
            return None
        wide = "wide" in parts
        # (a shift's amount is a .u32 whatever the operation's type: 65539 is no 3)
        srcs = [self._src(o, 2 * bits if wide and i == 2 else
                          32 if i == 1 and op in ("shl", "shr") else bits)
                for i, o in enumerate(ops[1:3 if op == "selp" else None])]
        known = np.logical_and.reduce([s.known for s in srcs])
        mo = _mask(2 * bits if wide else bits)
        a = srcs[0]
        if any((v.sym or "").startswith(_PARAM_SYM) for v in srcs) and \
                (op != "mov" or bits != 64):
            return None  # (a parameter's address is followed only as a whole)
        if op == "mov":
            return {dests[0]: _Val(a.sym, a.a if a.sym else a.a & m, a.known, a.rel)}
        if op == "mad" and "lo" in parts and len(srcs) == 3 and srcs[2].sym and \
                not any(s.sym or s.rel for s in srcs[:2]):
            # (an address plus an index times a stride: the product, then an add)
            x, y = srcs[0], srcs[1]
            srcs = [_Val(None, (x.a * y.a) & m, x.known & y.known), srcs[2]]
            op, a = "add", srcs[0]
        if any(s.rel for s in srcs) or (any(s.sym for s in srcs) and op not in (
                "add", "sub", "selp")):
            # (bits of a shared address, as a descriptor takes them)
            got = self._rel(op, parts, ops, srcs, known, bits, signed, wide)
            return None if got is None else {dests[0]: got}
        if op in ("add", "sub") and len(srcs) == 2:
            b = srcs[1]
            if op == "sub" and a.sym and a.sym == b.sym:  # (of one CTA's addresses only)
                if a.sym.endswith(CLUSTER_TAG):
                    known = known & ((a.a >> np.uint64(CLUSTER_SHIFT)) ==
                                     (b.a >> np.uint64(CLUSTER_SHIFT)))
                return {dests[0]: _Val(None, (a.a - b.a) & mo, known)}
            if b.sym and (op == "sub" or a.sym):
                return None
            sym = a.sym or b.sym
            if sym is not None and bits < 64:  # (an offset from a symbol: signed, as on the GPU)
                a, b = (_Val(v.sym, v.a if v.sym else _signed(v.a, bits).view(np.uint64),
                             v.known) for v in (a, b))
            r = a.a + b.a if op == "add" else a.a - b.a
            return {dests[0]: _Val(sym, r & mo if sym is None else r, known)}
        if op == "selp" and any(s.sym for s in srcs):  # (one of two addresses)
            p = self._pred(ops[3])
            if srcs[0].sym != srcs[1].sym:
                return None
            return {dests[0]: _Val(a.sym, np.where(p.v, srcs[0].a, srcs[1].a), known & p.known)}
        return self._evaluate_ints(op, parts, ops, dests, srcs, known, bits, signed, wide)

    def _rel(self, op: str, parts: list[str], ops: list[str], srcs: list[_Val],
             known: np.ndarray, bits: int, signed: bool, wide: bool) -> _Val | None:
        """An operation on a value made from the shared symbol's address S, kept only where
        it is exact for every S that is a multiple of 1024 up to S_MAX: r + (S >> k), with
        0 <= r and r + (S_MAX >> k) below 2^bits, stays of that form through adding or
        subtracting a plain integer, one right shift by at most 10 of an address, a mask of
        low bits that S >> k and r both fit in, an or of bits above them, a widening, a
        move or a select; the difference of two such values of one S and k is a plain
        integer. Anything else: not known (docs/model.md, "Kernels proven before launch")."""
        if self.ncta > 1:  # (a cluster's shared addresses carry their CTA's rank)
            return None
        vals = []
        for v in srcs:
            if v.sym:  # (an address: S + off, its offset within the window)
                off = v.a.view(np.int64)
                if ((off < 0) | (off >= MAX_SHARED))[known & v.known].any():
                    return None
                v = _Val(None, v.a, v.known, (v.sym, 0))
            vals.append(v)
        rels = {v.rel for v in vals if v.rel}
        if len(rels) != 1 or wide:
            return None
        (sym, k), = rels
        if len(self.shared) != 1 and getattr(self.shared, "align", {}).get(sym, 0) < 1024:
            return None  # (a second variable moves S off 1024, unless declared so aligned)
        r = [v for v in vals if v.rel]
        x = vals[0]

        def fits(a: np.ndarray, width: int, k2: int = k) -> bool:  # r + (S >> k2) < 2^width
            return bool((a.astype(np.uint64)[known] <
                         np.uint64((1 << min(width, 64)) - (S_MAX >> k2))).all())

        def uniform(v: _Val) -> int | None:
            got = set((v.a[known & v.known] & _mask(bits)).tolist())
            return got.pop() if len(got) == 1 else None

        def rel(a: np.ndarray, k2: int = k) -> _Val | None:
            return _Val(None, a.astype(np.uint64), known, (sym, k2)) if fits(
                a, bits, k2) else None

        x = _Val(x.sym, x.a.astype(np.uint64), x.known, x.rel)

        if op in ("add", "sub") and len(vals) == 2:
            if len(r) == 2:
                return _Val(None, (vals[0].a - vals[1].a) & _mask(bits), known) \
                    if op == "sub" else None
            if op == "sub" and not x.rel:
                return None
            # (modulo 2^bits: r' + (S >> k) is the register's value while it stays below)
            a, c = (x, vals[1]) if x.rel else (vals[1], x)
            out = a.a + c.a if op == "add" else a.a - c.a
            return rel(out & _mask(bits))
        if op == "selp":
            if len(r) != 2:
                return None
            pr = self._pred(ops[3])
            known = known & pr.known
            return rel(np.where(pr.v, vals[0].a, vals[1].a))
        if op in ("shr", "bfe") and x.rel and k == 0 and not signed and \
                all(not v.rel for v in vals[1:]):
            j = uniform(vals[1])
            if j is None or j > 10:
                return None
            out = rel(x.a >> np.uint64(j), j)
            if op == "bfe" and out is not None:
                ln = uniform(vals[2])
                if ln is None or ln >= 64 or not fits(out.a, ln, j):
                    return None  # (the field is not all of T >> j)
            return out
        if op in ("and", "or") and len(r) == 1:
            c = uniform(vals[1] if x.rel else x)
            if c is None:
                return None
            low = (c & -c).bit_length() - 1 if c else 64  # (c's lowest bit)
            if op == "and" and c and ((c >> low) + 1) & (c >> low) == 0 and \
                    low <= 10 - k and not (r[0].a % np.uint64(1 << low))[known].any() and \
                    fits(r[0].a, c.bit_length()):
                return rel(r[0].a)  # (T & (2^b - 2^j) is T: S >> k has no bit below j)
            if op == "or" and fits(r[0].a, low):
                return rel(r[0].a | np.uint64(c))  # (T | c is T + c)
        return None

    def _rel_widen(self, v: _Val, sb: int, db: int, ss: bool) -> _Val | None:
        """A conversion of r + (S >> k): exact where it fits the narrower width less its top
        bit (sign- and zero-extension then agree)."""
        k = v.rel[1] if v.rel else 0
        if (v.a[v.known] >= np.uint64((1 << (min(sb, db) - 1)) - (S_MAX >> k))).any():
            return None
        return _Val(None, v.a.copy(), v.known.copy(), v.rel)

    def _evaluate_ints(self, op: str, parts: list[str], ops: list[str], dests: list[str],
                       srcs: list[_Val], known: np.ndarray, bits: int, signed: bool,
                       wide: bool) -> dict | None:
        m = _mask(bits)
        mo = _mask(2 * bits if wide else bits)
        x = [s.a for s in srcs]
        if wide:  # (the factors are extended; mad.wide's addend already has the wide type)
            x = [(_signed(v, bits).view(np.uint64) if signed else v & m) if i < 2 else v
                 for i, v in enumerate(x)]
        if op == "mul" and ("lo" in parts or wide):
            r = x[0] * x[1]
        elif op == "mad" and ("lo" in parts or wide):
            r = x[0] * x[1] + x[2]
        elif op in ("and", "or", "xor"):
            f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
            r = f(x[0], x[1])
        elif op == "not":
            r = ~x[0]
        elif op == "neg":
            r = np.uint64(0) - x[0]
        elif op in ("shl", "shr"):
            k = x[1] & np.uint64(0xFFFFFFFF)
            big = k >= np.uint64(bits)
            k = np.minimum(k, np.uint64(bits - 1))
            if op == "shl":
                r = np.where(big, np.uint64(0), x[0] << k)
            elif signed:
                s = _signed(x[0], bits)
                r = (s >> np.where(big, np.uint64(bits - 1), k).astype(np.int64)).view(np.uint64)
            else:
                r = np.where(big, np.uint64(0), (x[0] & m) >> k)
        elif op in ("min", "max"):
            f = np.minimum if op == "min" else np.maximum
            r = f(_signed(x[0], bits), _signed(x[1], bits)).view(np.uint64) if signed \
                else f(x[0] & m, x[1] & m)
        elif op in ("div", "rem") and not signed:
            d = x[1] & m
            known = known & (d != 0)
            d = np.where(d == 0, np.uint64(1), d)
            r = (x[0] & m) // d if op == "div" else (x[0] & m) % d
        elif op == "bfe":
            pos, ln = x[1] & np.uint64(0xFF), x[2] & np.uint64(0xFF)
            known = known & (pos < np.uint64(bits)) & (ln <= np.uint64(bits)) & \
                (ln < np.uint64(64))
            ln = np.minimum(ln, np.uint64(63))
            r = ((x[0] & m) >> np.minimum(pos, np.uint64(63))) & \
                ((np.uint64(1) << ln) - np.uint64(1))
            if signed:  # (PTX ISA: the field's bits past the word copy its last one, bit
                # min(pos + len - 1, msb) of a; no bit of it where len is 0)
                width = np.minimum(ln, np.uint64(bits) - np.minimum(pos, np.uint64(bits)))
                top = np.minimum(pos + ln, np.uint64(bits)) - np.uint64(1)
                sign = ((x[0] >> np.minimum(top, np.uint64(63))) & np.uint64(1)).astype(bool) \
                    & (ln > np.uint64(0))
                r = np.where(sign, r | (m & ~((np.uint64(1) << width) - np.uint64(1))), r)
        elif op == "selp":
            p = self._pred(ops[3])
            r = np.where(p.v, x[0], x[1])
            known = known & p.known
        else:
            return None
        return {dests[0]: _Val(None, r & mo, known)}

    def _cluster_address(self, op: str, parts: list[str], ops: list[str], dests: list[str]
                         ) -> dict | None:
        """`mapa.shared::cluster` of a CTA's own shared address and a known rank of the
        cluster: the same bytes in that CTA (CLUSTER_TAG); `getctarank.shared::cluster`: the
        rank an address names."""
        if len(dests) != 1 or "shared::cluster" not in parts or len(ops) < 2:
            return None
        a = self._src(ops[1], 64)
        if op == "getctarank":
            if a.sym in self.shared:
                return {dests[0]: _Val(None, self.rank.astype(np.uint64), a.known.copy())}
            if a.sym and a.sym.endswith(CLUSTER_TAG):
                return {dests[0]: _Val(None, a.a >> np.uint64(CLUSTER_SHIFT), a.known.copy())}
            return None
        if a.sym not in self.shared or len(ops) < 3:
            return None
        r = self._src(ops[2], 32)
        off = a.a.view(np.int64)
        if r.sym or r.rel:
            return None
        known = a.known & r.known & (r.a < np.uint64(self.ncta)) & (off >= 0) & \
            (off < MAX_SHARED)
        return {dests[0]: _Val(a.sym + CLUSTER_TAG,
                               np.where(known, a.a + (r.a << np.uint64(CLUSTER_SHIFT)), 0)
                               .astype(np.uint64), known)}

    def _setp(self, parts: list[str], ops: list[str], dests: list[str]) -> dict | None:
        w = _width(parts)
        if w is None:
            return None
        bits, signed = w
        a, b = self._src(ops[1], bits), self._src(ops[2], bits)
        if a.sym != b.sym or a.rel or b.rel:
            return None
        x, y = (a.a.view(np.int64), b.a.view(np.int64)) if a.sym else \
            ((_signed(a.a, bits), _signed(b.a, bits)) if signed else (a.a & _mask(bits),
                                                                        b.a & _mask(bits)))
        cmp = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
               "gt": np.greater, "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal,
               "hi": np.greater, "hs": np.greater_equal}.get(parts[1])
        if cmp is None:
            return None
        r, known = cmp(x, y), a.known & b.known
        if a.sym:  # (two addresses S + x, S + y: compared as numbers only inside the window,
            # where neither wraps nor reaches the sign bit)
            known = known & (x >= 0) & (x < MAX_SHARED) & (y >= 0) & (y < MAX_SHARED)
        elif self.ranged and not known.all() and not a.rel and not b.rel:
            r, known = self._decided(parts[1], ops, bits, r, known)
        if len(parts) > 2 and parts[2] in ("and", "or", "xor"):
            if len(ops) < 4:
                return None
            c = self._pred(ops[3])
            f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[parts[2]]
            out = {dests[0]: _Pred(f(r, c.v), known & c.known)}
            if len(dests) > 1:
                out[dests[1]] = _Pred(f(~r, c.v), known & c.known)
            return out
        out = {dests[0]: _Pred(r, known)}
        if len(dests) > 1:
            out[dests[1]] = _Pred(~r, known)
        return out

    def _decided(self, cmp: str, ops: list[str], bits: int, r: np.ndarray,
                 known: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A comparison's result also where its operands are not known but their bounds
        decide it (values that read the same signed and unsigned)."""
        (l1, h1), (l2, h2) = self._bounds_of(ops[1], bits), self._bounds_of(ops[2], bits)
        ok = ~known & (h1 < _UNBOUNDED) & (h2 < _UNBOUNDED)
        same = (l1 == h1) & (l2 == h2) & (l1 == l2)
        apart = (h1 < l2) | (l1 > h2)
        true = {"lt": h1 < l2, "lo": h1 < l2, "le": h1 <= l2, "ls": h1 <= l2,
                "gt": l1 > h2, "hi": l1 > h2, "ge": l1 >= h2, "hs": l1 >= h2,
                "eq": same, "ne": apart}[cmp]
        false = {"lt": l1 >= h2, "lo": l1 >= h2, "le": l1 > h2, "ls": l1 > h2,
                 "gt": h1 <= l2, "hi": h1 <= l2, "ge": h1 < l2, "hs": h1 < l2,
                 "eq": apart, "ne": same}[cmp]
        now = ok & (true | false)
        if now.any():
            self.grid_used = True
        return np.where(now, true, r), known | now

    def _cvt(self, parts: list[str], ops: list[str], dests: list[str]) -> dict | None:
        types = [p for p in parts[1:] if _TYPE.match(p)]
        if len(types) != 2 or len(dests) != 1 or any(
                p.startswith("f") or p in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi",
                                           "sat") for p in parts[1:]):
            return None
        (db, ds), (sb, ss) = (_width([t]) for t in types)  # type: ignore[misc]
        v = self._src(ops[1], 64)
        if v.sym:  # (the same address, where it is inside the window: no wrap, no sign bit)
            off = (v.a & np.uint64((1 << CLUSTER_SHIFT) - 1) if v.sym.endswith(CLUSTER_TAG)
                   else v.a).view(np.int64)
            inside = (off >= 0) & (off < MAX_SHARED)
            return {dests[0]: _Val(v.sym, v.a.copy(), v.known & inside)} \
                if sb >= 32 and db >= 32 and \
                register_width(dests[0], self.widths) in (32, 64) else None
        if v.rel:
            got = self._rel_widen(v, sb, db, ss)
            return None if got is None else {dests[0]: got}
        x = _signed(v.a, sb).view(np.uint64) if ss else v.a & _mask(sb)
        out = self._extend(dests[0], x, db, ds)
        if out is not None:
            out[dests[0]].known = v.known.copy()
        return out

    def _param(self, parts: list[str], ops: list[str], dests: list[str]) -> dict | None:
        """`ld.param` of a parameter whose value the launch gave."""
        w = _width(parts)
        name = ops[1].strip().strip("[]").strip() if len(ops) > 1 else ""
        if w is None or len(dests) != 1 or name not in self.params:
            return None
        value, bits = self.params[name]
        if w[0] != bits:  # (a load of other bits than the parameter's reads its neighbours)
            return None
        return self._extend(dests[0], value, bits, w[1])

    def _extend(self, dest: str, value: int | np.ndarray, bits: int, signed: bool
                ) -> dict | None:
        """`value` of `bits` bits into register `dest`, sign- or zero-extended to its width
        (as ld and cvt do); None where the register's width is not declared."""
        rw = register_width(dest, self.widths)
        if rw is None or rw < bits:
            return None
        x = np.asarray(value, dtype=np.uint64) & _mask(bits) if not isinstance(
            value, np.ndarray) else value & _mask(bits)
        if signed and bits < rw:
            x = _signed(x, bits).view(np.uint64)
        x = np.broadcast_to(x & _mask(rw), (self.n,)).copy()
        return {dest: _Val(None, x, self.yes.copy())}

    def _shfl(self, parts: list[str], ops: list[str], dests: list[str]) -> dict | None:
        """`shfl.sync.{idx,up,down,bfly}.b32 d, a, b, c, mask` (PTX ISA's rule), where every
        lane of the warp takes part: d is known where the source lane's a is."""
        mode = next((p for p in parts if p in ("idx", "up", "down", "bfly")), None)
        d = ops[0].split("|")[0].strip()
        if mode is None or len(ops) != 5 or d not in dests or not self.whole_warps:
            return None
        a = self._src(ops[1], 32)
        b, c, mm = (self._src(o, 32) for o in ops[2:5])
        if a.sym or any(v.sym or v.rel for v in (b, c, mm)) or \
                not (b.known & c.known & mm.known).all() or \
                (mm.a & np.uint64(0xFFFFFFFF) != np.uint64(0xFFFFFFFF)).any():
            return None
        lane = self.special["%laneid"].astype(np.int64)
        bv, cv = (b.a & np.uint64(31)).astype(np.int64), (c.a & np.uint64(31)).astype(np.int64)
        seg = ((c.a >> np.uint64(8)) & np.uint64(31)).astype(np.int64)
        top, low = (lane & seg) | (cv & ~seg), lane & seg
        j = {"idx": low | (bv & ~seg), "up": lane - bv, "down": lane + bv,
             "bfly": lane ^ bv}[mode]
        ok = j >= top if mode == "up" else j <= top
        j = np.where(ok, j, lane)
        src = self.warp * 32 + j
        src = np.clip(src, 0, self.n - 1)
        return {d: _Val(None, a.a[src] & _mask(32), a.known[src] & (src // 32 == self.warp),
                        a.rel)}
