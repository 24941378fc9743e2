"""Insert probe calls into a parsed PTX module and build its site table.

Every instruction the event table classifies as probed gets a call into the
device checker placed right before it (and, for synchronising barriers,
right after it too), predicated like the instruction itself. Each entry
claims its CTA's shadow slot first and releases it at every `ret`/`exit`.
Unmodelled instructions that touch shared memory or synchronise are listed
in `Instrumented.unmodeled`, with their line and the reason.
"""

from __future__ import annotations

import functools
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from . import (
    abi,
    carry,
    coalesce,
    converge,
    cp_runs,
    echo,
    fast_path,
    first_trip,
    init_runs,
    inline_barriers,
    loops,
    probe_abi,
    rejoin,
    remote,
    runs,
    static_proof,
    vc_reads,
    vc_writes,
    wgmma_window,
)
from . import value_tags as tagging
from .events import (
    Classified,
    Event,
    chunk_granules_on,
    classify,
    constant_registers,
    multicast_model_on,
    whole_chunks,
)
from .ptx import (
    INT_LITERAL,
    REGISTER,
    Item,
    Module,
    PTXSyntaxError,
    parse,
    ptx_int,
    register_width,
    register_widths,
)
from .sites import SiteTable, SourceLoc

REG_ADDR = "%__cs_a"
REG_ADDR2 = "%__cs_b"  # a second address (the mbarrier of a bulk copy)
REG_ADDR3 = "%__cs_c"  # a third address (the tensor map of a TMA tensor copy)
REG_ADDR4 = "%__cs_d"  # the second copy's shared address and map of a pair (PROBE_TENSOR2)
REG_ADDR5 = "%__cs_e"
REG_TOKEN = "%__cs_tok"
REG_OK = "%__cs_ok"  # predicate: the guarded mbarrier operation may run
REG_SPIN = "%__cs_spin"  # failed mbarrier waits in a row (sampled: abi.MB_WAIT_SAMPLE)
REG_SPIN_LOW = "%__cs_spl"
REG_SKIP = "%__cs_skip"  # predicate: this failed wait is not sampled
REG_GUARD = "%__cs_gp"  # predicate: an instruction's guard, kept where it writes its own guard
REG_OP = "%__cs_op"  # a probe's op word, PROBE_OFF for the lanes a converted branch skips
REG_CTAMASK = "%__cs_ctamask"  # the ctaMask of a multicast copy, widened to 32 bits
# An access probe every lane that reaches it calls (echo.py): scratch, and predicates: the
# lane makes the access; no lane does
REG_ECHO = ("%__cs_el", "%__cs_eh")
REG_ECHO_ON, REG_ECHO_NONE = "%__cs_eon", "%__cs_eno"


REMOTE_MBARRIER = ("mbarrier addressed through mapa (another CTA's of the cluster): an "
                   "operation on another CTA's mbarrier is not checked (CONSAN_MULTICAST=0; "
                   "the launch notes it as tool.remote-smem); on the CTA's own, through its "
                   "cluster address, it is")


@dataclass(frozen=True)
class Unmodeled:
    """An instruction that touches shared memory or synchronises and is not checked. Said
    in the user's terms: the source line of its `.loc` and the C++ name of its kernel; a
    PTX line only when the PTX has no line info."""

    line: int  # 1-based line in the input PTX
    col: int
    kernel: str  # the .entry (or .func) it is in, as the PTX names it
    text: str  # the instruction as written
    reason: str  # what is not checked, in the user's words
    loc: SourceLoc | None = None  # innermost source location, when the PTX has line info
    inlined_at: tuple[SourceLoc, ...] = ()  # outward chain of call sites of an inlined `loc`
    entry: bool = True  # `kernel` is an .entry (else a .func)

    @property
    def where(self) -> str:
        """`file:line` (and the call in the kernel that inlined it), or `PTX line N` when the
        PTX carries no line info there."""
        if self.loc is None:
            return f"PTX line {self.line}"
        call = self.inlined_at[-1] if self.inlined_at else None
        return f"{self.loc.file}:{self.loc.line}" + (
            f" (inlined at {call.file}:{call.line})" if call else "")

    @property
    def function(self) -> str:
        """`kernel NAME` or `function NAME`, with the C++ name of a mangled one."""
        return f"{'kernel' if self.entry else 'function'} {demangle(self.kernel)}"

    def __str__(self) -> str:
        return f"{self.where} in {self.function}: {self.reason} [{self.text}]"


@dataclass
class Instrumented:
    ptx: str
    sites: SiteTable
    kernels: list[str]
    unmodeled: list[Unmodeled] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)  # Event value -> number of sites
    max_regs: int | None = None  # the tightest register limit of its functions (.maxnreg,
    # launch bounds): the probes must fit it
    phase_mode: bool = True  # only CTA-wide barriers: the checker may use CTA phases
    async_proxy: bool = False  # issues bulk or tensor stores: clocks cover logical_threads(True)
    wgmma: bool = False  # issues wgmma.mma_async: clocks cover abi.logical_threads(wgmma=True)
    cp_async: bool = False  # issues cp.async (copies, groups or mbarrier arrives)
    bar0_only: bool = True  # every barrier is a bar.sync / bar.red of barrier 0, all threads
    # issues .multicast::cluster copies or reaches another CTA's shared memory (.shared::cluster
    # accesses, addresses from mapa): every CTA keeps a mailbox (abi.FLAG_MULTICAST)
    multicast: bool = False
    # every access is whole aligned 16-byte chunks, and no event rules chunk granules out
    # (events.whole_chunks)
    whole_chunks: bool = False
    # loops whose access probes run on their first trip only (first_trip.py): the PTX
    # lines of each one's label and of its branch back
    first_trip_loops: list[tuple[int, int]] = field(default_factory=list)
    fast_paths: int = 0  # accesses in loops that first test inline whether they repeat
    inline_writes: int = 0  # plain writes that store their epoch inline (fast_path.py)
    inline_reads: int = 0  # one-granule reads that set their bit inline (fast_path.py)
    # barriers, exits and wgmma groups whose probes run inline (inline_barriers.py)
    inline_barriers: int = 0
    inline_chunk_reads: int = 0  # 16-byte reads settled inline where they can (vc_reads.py)
    inline_chunk_writes: int = 0  # cp.async calls settled inline where they can (vc_writes.py)
    # kernel -> its proof (static_proof.py), filled only where every function of the module
    # is a kernel proven so: the front ends then run it natively
    proven: dict[str, static_proof.Proof] = field(default_factory=dict)
    # (kernel, block[, integer parameters by position]) -> its proof for that launch, or why
    # there is none: for kernels whose block size (no .reqntid) or loop lengths only a
    # launch gives
    prove_at: Callable[..., static_proof.Proof | str] | None = field(
        default=None, repr=False, compare=False)
    # an ld/st/atom/red that may reach a peer CTA's bytes (.shared::cluster, or generic in a
    # module with addresses from mapa): its owner judges it with peer epochs, which only
    # the device-memory tables keep (runtime.first_placement)
    peer_access: bool = False
    # a cluster module of whole chunks linked with chunk granules: the runtime's choice
    # where its 4-byte granule tables in shared memory would cost its grid a wave
    # (runtime.Prepared; such modules keep 4-byte granules otherwise, measured faster)
    cluster_chunks: bool = False

    @property
    def inline_tests(self) -> bool:
        """Some access, barrier or exit reads the warp's fast-path record inline
        (abi.FLAG_PSH_FAST)."""
        return self.fast_paths + self.inline_writes + self.inline_reads + \
            self.inline_barriers > 0

    @property
    def chunks_exact(self) -> bool:
        """16-byte chunk granules (abi.CHUNK_GRANULE_BYTES) are exact for it: a quarter of
        the tables (vector clocks only: phase mode keeps 4-byte granules)."""
        return self.whole_chunks and not self.phase_mode

    @property
    def chunk_granules(self) -> bool:
        """Its granules are 16-byte chunks. A cluster module's (the mailboxes' build) only
        where the runtime chose them (cluster_chunks): on an H200, the clustered ring of
        four stages 1.408 -> 1.431 ms with them (the device's time alone, A/B)."""
        return self.chunks_exact and (not self.multicast or self.cluster_chunks)

    @property
    def warp_reads(self) -> bool:
        """Reads shared memory through the generic proxy (loads, ldmatrix, generic ld)."""
        return self.counts.get(Event.READ.value, 0) > 0

    @property
    def tensor_maps(self) -> bool:
        """Names TMA tensor maps (tensor loads or stores): its launches need the maps' table."""
        return any(self.counts.get(e.value, 0) for e in (Event.TENSOR_LOAD, Event.TENSOR_STORE))

    @property
    def copy_engine(self) -> bool:
        """Copy engines write smem (bulk / tensor loads, st.async): box summaries pay off."""
        return any(self.counts.get(e.value, 0) for e in (Event.BULK_LOAD, Event.TENSOR_LOAD))


class InstrumentError(ValueError):
    """The PTX cannot be instrumented (the message says where and why)."""


# ---------------------------------------------------------------- debug info

_FILE = re.compile(r'(\d+)\s+"((?:[^"\\]|\\.)*)"')
_DEMANGLED = re.compile(r"_Z(?:N\d*)?(\d+)")


def _files(mod: Module) -> dict[int, str]:
    out = {}
    for it in mod.items:
        if it.kind == "stmt" and it.opcode == ".file" and it.operands:
            m = _FILE.match(it.operands[0].strip())
            if m:
                out[int(m.group(1))] = m.group(2)
    return out


def _debug_strings(mod: Module) -> dict[str, str]:
    """Labels of .debug_str to their strings (inlined function names)."""
    out: dict[str, str] = {}
    for i, it in enumerate(mod.items):
        if it.kind != "section" or i == 0:
            continue
        hdr = next((p for p in reversed(mod.items[:i]) if p.kind == "stmt"), None)
        if hdr is None or ".debug_str" not in hdr.text:
            continue
        for m in re.finditer(r"([\w$]+):\s*((?:\.b8\s+[\d,\s]+)+)", it.text):
            nums = [int(x) for x in re.findall(r"\d+", re.sub(r"\.b8", "", m.group(2)))]
            if all(x < 256 for x in nums):  # (else no string: the name is best effort)
                out[m.group(1)] = bytes(nums).split(b"\0")[0].decode("utf-8", "replace")
    return out


def demangle(name: str) -> str:
    """Best-effort short name of an Itanium-mangled function (no dependency)."""
    m = _DEMANGLED.match(name)
    if not m:
        return name
    n, start = int(m.group(1)), m.end()
    return name[start : start + n] or name


# Triton's own language library: a line there inlined into the user's kernel is named by
# the user's line (the call of tl.max, tl.sum, ...).
_LIBRARY = re.compile(r"[\\/]triton[\\/](?:experimental[\\/]gluon[\\/])?language[\\/]")
_AT = re.compile(r"@\[\s*([^\s@\[\]]+):(\d+):(\d+)")


def _comment_chain(comment: str, files: dict[int, str]) -> tuple[SourceLoc, ...]:
    """The inline chain Triton writes only in the comment after a `.loc`
    (`// standard.py:170:27 @[ standard.py:191:40 @[ k.py:56:25 ] ]`), outward; its file
    names are base names, given back their full path where the .file table has one."""
    by_base: dict[str, str | None] = {}
    for path in files.values():
        base = path.replace("\\", "/").rsplit("/", 1)[-1]
        by_base[base] = path if base not in by_base else None  # (ambiguous: keep the base)
    return tuple(SourceLoc(by_base.get(f) or f, int(line), int(col))
                 for f, line, col in _AT.findall(comment))


def _parse_loc(it: Item, files: dict[int, str], strings: dict[str, str],
               chains: dict[tuple[str, int, int], tuple[SourceLoc, ...]] | None = None,
               comment: str = "") -> tuple[SourceLoc, tuple[SourceLoc, ...]] | None:
    """A `.loc` and its inline chain, outward. `chains` remembers the chain of every
    location seen so far: an `inlined_at` names only the innermost call site, whose
    own `.loc` (emitted earlier) carries the rest. Without an `inlined_at`, the chain
    comes from the `comment` on the same line where it has one (Triton's)."""
    def num(text: str) -> int:
        return _int_in(it, text)

    ops = it.operands
    nums = ops[0].split() if ops else []
    if len(nums) < 2:
        return None
    fno, line = num(nums[0]), num(nums[1])
    col = num(nums[2]) if len(nums) > 2 else 0
    if line == 0:
        return None
    fn, chain = None, ()
    for extra in ops[1:]:
        words = extra.split()
        if words[:1] == ["function_name"] and len(words) > 1:
            fn = demangle(strings.get(words[1], words[1]))
        elif words[:1] == ["inlined_at"] and len(words) >= 3:
            f2 = files.get(num(words[1]), f"file{words[1]}")
            at = SourceLoc(f2, num(words[2]), num(words[3]) if len(words) > 3 else 0)
            chain = (at, *(chains or {}).get((at.file, at.line, at.col), ()))
    if not chain and "@[" in comment:
        chain = _comment_chain(comment, files)
    here = SourceLoc(files.get(fno, f"file{fno}"), line, col, fn)
    while chain and _LIBRARY.search(here.file):  # tl.max inlined into the user's kernel
        here, chain = chain[0], chain[1:]
    if chains is not None:
        chains[(here.file, here.line, here.col)] = chain  # (the latest: an inlined copy's)
    return here, chain


# ---------------------------------------------------------------- registers

_ADDR = re.compile(rf"^([^\s+\-]+)\s*(?:\+\s*(-?\s*{INT_LITERAL}))?$")


def _one_line(it: Item) -> str:
    """An instruction as a refusal quotes it: on one line (a statement may span several)."""
    return " ".join(it.text.split())


def _int_in(it: Item, text: str) -> int:
    """A number of directive `it` (`.loc`, `.maxnreg`), read as ptxas reads it; a refusal
    naming the line when it is none."""
    try:
        return ptx_int(text)
    except ValueError:
        raise InstrumentError(f"line {it.line}:{it.col}: {text!r} is not a number in "
                              f"`{_one_line(it)}`") from None


REGISTERS_PER_SM = 65536  # sm_80 to sm_90: 4 sub-partitions of 16K registers
THREADS_PER_SM = 2048
_BOUND = re.compile(r"\.(maxnreg|maxntid|reqntid|minnctapersm)\b([\w\s,]*)")


def launch_bound_cap(threads: int, ctas: int = 0) -> int | None:
    """The register limit ptxas derives from a function's launch bounds (`threads` a CTA,
    `ctas` from `.minnctapersm`, ignored when they cannot fit one SM): the warps of the
    CTAs spread over the SM's four sub-partitions, a sub-partition's 16K registers over
    its share of warps, down to a multiple of 8; None at 255 or more (no limit). Measured
    with nvJitLink's -verbose on sm_80 and sm_90: 257 threads 168, 416 128, 640 96, 96 x 3
    CTAs 168, 160 x 5 72, 512 x 8 (cannot fit) 128."""
    if ctas < 1 or threads * ctas > THREADS_PER_SM:
        ctas = 1
    warps = ctas * -(-threads // 32)
    cap = REGISTERS_PER_SM // 4 // (-(-warps // 4) * 32) // 8 * 8
    return cap if cap < 255 else None


def bound_threads(name: str, dims: list[int], threads: int) -> int:
    """The threads a CTA bound by `.maxntid` or `.reqntid` `dims`, given the bound so far
    (0: none): `.reqntid` is exact, `.maxntid` the smaller."""
    n = 1
    for d in dims:
        n *= max(d, 1)
    return n if name == "reqntid" or not threads else min(threads, n)


def _register_caps(mod: Module) -> list[int]:
    """The register limit ptxas gives each function with performance directives, which the
    probes it calls must fit too: `.maxnreg N`, and launch_bound_cap of `.maxntid` /
    `.reqntid` with `.minnctapersm`, on their own lines, one line or the header's. (A
    Triton kernel from Inductor has `.reqntid 512`, so 128 registers; the checker's strided
    probe had 132 and nvJitLink refused the link.)"""
    caps: list[int] = []
    index = {id(it): i for i, it in enumerate(mod.items)}
    for fn in mod.functions:
        threads = ctas = 0
        for it in mod.items[index[id(fn.header)]:fn.open_index]:
            if it.kind != "stmt":
                continue
            for name, args in _BOUND.findall(it.text):
                nums = [_int_in(it, a.strip()) for a in args.split(",")]
                if name == "maxnreg":
                    caps.append(nums[0])
                elif name == "minnctapersm":
                    ctas = nums[0]
                else:
                    threads = bound_threads(name, nums, threads)
        cap = launch_bound_cap(threads, ctas) if threads else None
        if cap is not None:
            caps.append(cap)
    return caps


def _number(text: str) -> int | None:
    try:
        return ptx_int(text)
    except ValueError:
        return None


def _address_parts(addr: str, where: Item) -> tuple[str, int]:
    """(base, constant offset) of an address operand `base[+offset]`, the offset read as
    ptxas reads it (`010` is 8, `08` no number); a refusal naming the instruction when the
    operand is not of that form."""
    m = _ADDR.match(addr.strip())
    offset = _number((m.group(2) or "0").replace(" ", "")) if m else None
    if m is None or offset is None:
        raise InstrumentError(f"line {where.line}:{where.col}: cannot parse address "
                              f"operand [{' '.join(addr.split())}] of `{_one_line(where)}`")
    return m.group(1), offset


def _address_code(addr: str, widths: dict[str, int], where: Item, reg: str = REG_ADDR
                  ) -> list[str]:
    """PTX computing the 64-bit address operand into `reg`."""
    base, offset = _address_parts(addr, where)
    if base.startswith("%"):
        w = register_width(base, widths)
        if w is None:
            raise InstrumentError(f"line {where.line}:{where.col}: register {base} in "
                                  f"`{_one_line(where)}` is not declared")
        # (ptxas takes a 16-bit register as an address too: widen it as a 32-bit one)
        first = f"cvt.u64.u{w} {reg}, {base};" if w in (8, 16, 32) else \
            f"mov.b64 {reg}, {base};"
    elif _number(base) is not None:
        return [f"mov.b64 {reg}, {_number(base) + offset};"]
    else:
        first = f"mov.u64 {reg}, {base};"
    code = [first]
    if offset:
        code.append(f"add.s64 {reg}, {reg}, {offset};")
    return code


# ---------------------------------------------------------------- probe text

# consan's own registers that probes take, by bits: a call passes them as they are.
_OWN_BITS = {REG_ADDR: 64, REG_ADDR2: 64, REG_ADDR3: 64, REG_ADDR4: 64, REG_ADDR5: 64,
             REG_TOKEN: 32, REG_OP: 32,
             REG_CTAMASK: 32, fast_path.REG_FAST: 32}
_DECIMAL = re.compile(r"[0-9]+")


def _direct(ty: str, val: str) -> bool:
    """Whether `val` may be a call's argument itself for a parameter of type `ty`: one of
    consan's registers of that width, or a decimal that fits it. (ptxas wants a register
    argument of the parameter's own width, where st.param takes a wider one too.)"""
    bits = int(ty[2:])
    if _DECIMAL.fullmatch(val):
        return int(val) < 1 << bits
    return _OWN_BITS.get(val) == bits


def _measure_skip(ev: Event) -> bool:
    """CONSAN_MEASURE_SKIP_ACCESS=read (or =all: reads, writes and cp.async too): those
    accesses get no probe at all, a measurement build's bound on an inline path that never
    calls (benchmarks/breakdown_async.py). The model is wrong on purpose: never set it
    otherwise."""
    what = os.environ.get("CONSAN_MEASURE_SKIP_ACCESS", "")
    return what == "all" and ev is not Event.ATOMIC or what == "read" and ev is Event.READ


def _call(pred: str | None, func: str, args: list[tuple[str, str]], ret: bool = False,
          pre: list[str] = (), comment: str = "") -> str:
    """A scoped call: its args passed as they are where each may be (`_direct`), else
    declared as params and stored; optionally the result read into REG_TOKEN. The direct
    form is the same call to ptxas (the same SASS) in a third of the text: an unrolled
    bitonic sort's 690 calls were 110 KB of its 257 KB of instrumented PTX."""
    head = f"{{ // consan {comment}".rstrip()
    p = f"{pred} " if pred else ""
    if all(_direct(ty, val) for ty, val in args):
        arglist = f", ({', '.join(val for _, val in args)})" if args else ""
        retpart = f"({REG_TOKEN}), " if ret else ""
        return "\n\t".join([head, *pre, f"{p}call {retpart}{func}{arglist};", "}"])
    lines = [head]
    names = []
    for i, (ty, _val) in enumerate(args):
        lines.append(f".param {ty} __cs_p{i};")
        names.append(f"__cs_p{i}")
    if ret:
        lines.append(".param .b32 __cs_r;")
    lines += list(pre)
    for i, (ty, val) in enumerate(args):
        lines.append(f"st.param{ty} [__cs_p{i}], {val};")
    arglist = f", ({', '.join(names)})" if names else ""
    retpart = "(__cs_r), " if ret else ""
    lines.append(f"{p}call {retpart}{func}{arglist};")
    if ret:
        lines.append(f"ld.param.b32 {REG_TOKEN}, [__cs_r];")
    lines.append("}")
    return "\n\t".join(lines)


def _bar_operands(it: Item, event: Event) -> tuple[str, str]:
    ops = it.operands
    if event is Event.BAR_RED:  # d, a{, b}, {!}c
        if len(ops) not in (3, 4):
            raise InstrumentError(f"line {it.line}:{it.col}: `{_one_line(it)}` has {len(ops)} "
                                  "operands; bar.red takes a destination, a barrier, an "
                                  "optional thread count and a predicate")
        a = ops[1]
        b = ops[2] if len(ops) == 4 else "0"
    else:
        a = ops[0] if ops else "0"
        b = ops[1] if len(ops) > 1 else "0"
    return a, b


# ---------------------------------------------------------------- rewriting

class SharedSymbols(set):
    """The module's `.shared` variables' names; `align`: each one's alignment in bytes
    (its `.align`, else its type's size), which places its address; `size`: its bytes,
    None where not declared (`.extern` arrays of `[]`)."""

    align: dict[str, int]
    size: dict[str, int | None]
    complete: bool  # every declaration understood


_TYPE_BYTES = re.compile(r"\.(?:[bsuf])(8|16|32|64)\b")
_ALIGN = re.compile(r"\.align\s+(\d+)")


_DECLARATOR = re.compile(r"^([A-Za-z_$%][\w$]*)\s*((?:\[[^\]]*\]\s*)*)(?:=.*)?$", re.S)


def _shared_symbols(mod: Module) -> SharedSymbols:
    """Every name a `.shared` statement declares (`.b8 a, b[4][4];` declares two); a
    statement not understood leaves `complete` False."""
    syms = SharedSymbols()
    syms.align = {}
    syms.size = {}
    syms.complete = True
    for it in mod.items:
        if it.kind == "stmt" and it.opcode == ".shared":
            code = it.code.strip().rstrip(";").strip()
            a, t = _ALIGN.search(code), _TYPE_BYTES.search(code)
            align = int(a.group(1)) if a else (int(t.group(1)) // 8 if t else 1)
            # (the declarators follow the last state-space, alignment or type word)
            head = re.match(r"^(?:\s*(?:\.[\w:]+)(?:\s+\d+)?)+\s+", code)
            names = [d.strip() for d in code[head.end():].split(",")] if head else []
            got = [_DECLARATOR.match(d) for d in names]
            if not names or not all(got):
                syms.complete = False
                continue
            for m in got:
                syms.add(m.group(1))
                syms.align[m.group(1)] = align
                vec = re.search(r"\.v(2|4|8)\b", code)
                size = _declared_bytes(t, m.group(2))
                syms.size[m.group(1)] = size * int(vec.group(1)) if vec and size else size
    return syms


def _declared_bytes(elem: re.Match | None, dims: str) -> int | None:
    """A declarator's bytes: its element type's size times each `[n]`; None for `[]`."""
    if elem is None:
        return None
    n = int(elem.group(1)) // 8
    for d in re.findall(r"\[([^\]]*)\]", dims):
        try:
            n *= ptx_int(d.strip())
        except ValueError:
            return None
    return n


_DECL = re.compile(r"^\s*(?:\.(?:visible|extern|weak|common)\s+)*\.(global|const)\b.*?"
                   r"([A-Za-z_$][\w$]*)\s*(?:\[[^\]]*\])*\s*(?:=.*)?;?\s*$", re.S)


def _symbol_spaces(mod: Module, cache: dict[str, str]) -> dict[str, str]:
    """State space of the module-level .global / .const names (a tensor-map operand may
    name a .global variable; ptxas refuses a kernel parameter's name there)."""
    if "" not in cache:
        cache[""] = ""
        for it in mod.items:
            m = _DECL.match(it.code) if it.kind == "stmt" and it.opcode in (
                ".global", ".const", ".visible", ".extern", ".weak", ".common") else None
            if m:
                cache[m.group(2)] = m.group(1)
    return cache


def _generic_address_code(addr: str, widths: dict[str, int], where: Item, reg: str,
                          spaces: dict[str, str]) -> list[str]:
    """PTX putting the generic address of a tensor-map operand into `reg`: a register is
    one already; a .global or .const name is converted (cvta); any other name gives 0,
    which the checker treats as a map it does not know."""
    m = _ADDR.match(addr.strip())
    base = m.group(1) if m else ""
    if base.startswith("%") or not m:
        return _address_code(addr, widths, where, reg)
    space = spaces.get(base)
    if space is None or _number(base) is not None:
        return [f"mov.b64 {reg}, 0;"]
    code = [f"mov.u64 {reg}, {base};", f"cvta.{space}.u64 {reg}, {reg};"]
    off = _address_parts(addr, where)[1]
    if off:
        code.append(f"add.s64 {reg}, {reg}, {off};")
    return code


def instrument(ptx: str | Module, name: str = "<ptx>", *,
               value_tags: bool = False) -> Instrumented:
    """The module with its probes. A refusal (InstrumentError) names the module's file: the
    helpers that find the problem know only the instruction and its line. `value_tags`:
    stores also pass a hash of what they write (instrument/value_tags.py), for code whose
    layouts may replicate data across warps (the Triton front end asks for it)."""
    mod = ptx if isinstance(ptx, Module) else parse(ptx, name)
    if any(it.kind == "stmt" and it.text.lstrip().startswith(".extern")
           and re.search(rf"\b{abi.PROBE_CTA_BEGIN}\b", it.text) for it in mod.items):
        raise InstrumentError(f"{mod.name}: this PTX was already instrumented by consan (it "
                              f"declares {abi.PROBE_CTA_BEGIN}); give the original PTX")
    try:
        return _instrument(mod, value_tags)
    except InstrumentError as e:
        if str(e).startswith(f"{mod.name}:"):
            raise
        raise InstrumentError(f"{mod.name}: {e}") from None


def _instrument(mod: Module, value_tags: bool = False) -> Instrumented:
    if not mod.functions:
        raise InstrumentError(f"{mod.name}: no .entry or .func bodies in this PTX")
    files = _files(mod)
    strings = _debug_strings(mod)
    shared = _shared_symbols(mod)
    spaces: dict[str, str] = {}
    table = SiteTable(ptx_name=mod.name)
    before: dict[int, str] = {}
    after: dict[int, str] = {}
    replaced: dict[int, str] = {}  # instructions rewritten (guarded mbarrier operations)
    unmodeled: list[Unmodeled] = []
    counts: Counter = Counter()
    cta_wide_only = True
    bar0_only = True
    async_proxy = False
    wgmma = False
    cp_async = False
    multicast = False
    any_peers = cluster_access = generic_access = False  # (peer_access)
    chunks = chunk_granules_on()
    index_of = {id(it): i for i, it in enumerate(mod.items)}
    # A cluster-scope fence matters only to a relaxed cluster arrival after it.
    relaxed_arrivals = any(it.is_instruction and it.opcode.startswith("barrier.cluster.arrive")
                           and "relaxed" in it.op_parts for it in mod.items)
    first_trips: list[tuple[int, first_trip.FirstTripLoop]] = []  # (function's '{', loop)
    loose = _loose_mbarriers(mod, shared)
    fast: list[_FastAccess] = []  # accesses that fast_path.py serves
    spans = fast_path.spans_ok(mod.target)  # (reads of several granules inline: redux.sync)
    chunk_reads: list[_ChunkRead] = []  # reads vc_reads.py may settle inline
    chunk_writes: dict[int, str] = {}  # cp.async calls vc_writes.py may settle inline: texts
    tags: dict[int, _Tag] = {}  # stores' value tags, by module index
    inline_bars: dict[int, _InlineBarrier] = {}  # entries' barrier and exit probes
    bar_probes: dict[int, _StepBarrier] = {}  # every CTA barrier's probes, any function
    converted_regions: dict[int, converge.Region] = {}  # every function's, by branch
    begins: dict[int, int] = {}  # an entry's '{' -> the item its begin probe precedes

    for fn in mod.functions:
        widths = register_widths(fn)
        chains: dict[tuple[str, int, int], tuple[SourceLoc, ...]] = {}
        loc: tuple[SourceLoc, tuple[SourceLoc, ...]] | None = None
        probes = 0
        first_code: int | None = None
        depth = 0
        walk: list[tuple[int, Item, Classified | None, tuple | None]] = []
        peers = remote.registers(fn.body)
        multicast |= bool(peers)  # (generic addresses from mapa reach a peer's bytes too)
        any_peers |= bool(peers)
        constants = constant_registers(fn.body)
        for pos, it in enumerate(fn.body):
            idx = index_of[id(it)]
            # (the begin probe goes before the entry's first code, a block's '{' included:
            # inline code inside that block reads the record the probe returns)
            if first_code is None and depth == 0 and (
                    it.kind in ("label", "open") or it.is_instruction):
                first_code = idx
            if it.kind == "open":
                depth += 1
            elif it.kind == "close":
                depth -= 1
            if it.kind == "stmt" and it.opcode == ".loc":
                after_it = fn.body[pos + 1] if pos + 1 < len(fn.body) else None
                comment = after_it.text if after_it is not None and \
                    after_it.kind == "trivia" and after_it.line == it.line else ""
                loc = _parse_loc(it, files, strings, chains, comment)
                continue
            c = classify(it, shared, in_entry=fn.is_entry, constants=constants)
            if c is not None and c.event is Event.CLUSTER_FENCE and not relaxed_arrivals:
                c = replace(c, event=Event.FENCE)
            if c is not None and c.event is Event.MBARRIER and not c.reason and \
                    not multicast_model_on() and remote.address_register(c.address) in peers:
                c = replace(c, reason=REMOTE_MBARRIER)
            walk.append((idx, it, c, loc))
            if c is None:
                continue
            if c.event.value.startswith("async.") or c.event is Event.MBARRIER:  # agents: clocks
                cta_wide_only = False  # async agents need the vector clocks
            if c.event in (Event.BAR_SYNC, Event.BAR_ARRIVE, Event.BAR_RED):
                ops, arrive = _bar_operands(it, c.event), c.event is Event.BAR_ARRIVE
                cta_wide_only &= not arrive and ops[1] == "0"
                bar0_only &= not arrive and ops == ("0", "0")
            if c.event is Event.CLUSTER_BAR:  # split arrive and wait: the vector clocks
                cta_wide_only = bar0_only = False
            counts[c.event.value] += 1
            chunks &= whole_chunks(c)
            async_proxy |= c.event in (Event.BULK_STORE, Event.TENSOR_STORE)
            wgmma |= c.event is Event.WGMMA
            # the mailboxes: multicast copies, and accesses that may reach a peer's bytes
            multicast |= c.mask is not None or (c.space == abi.SPACE_CLUSTER and
                                                c.event is not Event.MBARRIER)
            if c.event in (Event.READ, Event.WRITE, Event.ATOMIC):
                cluster_access |= c.space == abi.SPACE_CLUSTER
                generic_access |= c.space == abi.SPACE_GENERIC
            cp_async |= c.event in (Event.ASYNC_WRITE, Event.ASYNC_COMMIT, Event.ASYNC_WAIT,
                                    Event.ASYNC_WAIT_ALL) or (
                c.event is Event.MBARRIER and c.op == abi.MB_CP_ARRIVE)
            if c.event is Event.UNMODELED or c.reason:  # or modelled in part: said, too
                unmodeled.append(Unmodeled(it.line, it.col, fn.name, it.text.strip(), c.reason,
                                           *(loc or (None, ())), entry=fn.is_entry))
        merged = coalesce.plan([(i, it, c) for i, it, c, _ in walk],
                               {i: (lc[0].file, lc[0].line,
                                    tuple((c.file, c.line) for c in lc[1])) if lc else None
                                for i, _, _, lc in walk}, tagged=value_tags)
        lines = {i: it.line for i, it, _, _ in walk}
        classified = {i: c for i, _, c, _ in walk}
        regions = converge.find([(i, it, c) for i, it, c, _ in walk],
                                {i for i, _, c, _ in walk if c is not None and c.event.probed},
                                accesses=not value_tags, entry=fn.is_entry)
        converted = {m for r in regions for m in r.members}
        items_by = {i: it for i, it, _, _ in walk}
        carried = {} if loose else carry.find([(i, it, c) for i, it, c, _ in walk], converted)
        arrives = {k.arrive: k for k in carried.values()}
        paired = {} if loose else carry.pairs([(i, it, c) for i, it, c, _ in walk], converted,
                                              carried)

        fprobes = _FnProbes(table, fn.name, widths, mod, spaces, carried, arrives, items_by,
                            tags, inline_bars if fn.is_entry else None, keep_ops=loose,
                            all_bars=bar_probes, pairs=paired, classes=classified)
        emit = functools.partial(_emit, fprobes)
        tagged = 0

        probed = {i for i, _, c, _ in walk if c is not None and c.event.probed}
        chains = wgmma_window.find([(i, it, c) for i, it, c, _ in walk], probed)
        base = 0  # deferred probes of the chains before this one
        deferred = {}
        for ch in chains:
            for m in ch.mmas:
                deferred[m] = (base, ch)
                base += 1
        calls: dict[int, list[str]] = {ch.commit: [] for ch in chains}
        # a K step's four mma_async of one info word: one call (wgmma_window.fused)
        fused = {ch.commit: [] for ch in chains if wgmma_window.fused(ch, classified)}

        # a warp's cp.async copies of 16 bytes in a row: one call before the first
        copy_runs = {} if _measure_skip(Event.ASYNC_WRITE) else {
            r.members[0]: r for r in cp_runs.find([(i, it, c) for i, it, c, _ in walk],
                                                  merged, converted, widths, mod.items)}
        in_runs = {m for r in copy_runs.values() for m in r.members[1:]}
        # a thread's mbarrier.init one after another (a pipeline's set-up): one call
        region_of = {m: r.branch for r in regions for m in r.members}
        inits = {r.members[0]: r for r in init_runs.find([(i, it, c) for i, it, c, _ in walk],
                                                          region_of, widths, mod.items)}
        in_runs |= {m for r in inits.values() for m in r.members[1:]}
        locs = {i: lc for i, _, _, lc in walk}

        arrive_site: dict[int, int] = {}  # load -> the site of the arrive it carries
        for idx, it, c, loc in walk:
            if c is None or not c.event.probed or idx in in_runs:
                continue
            if idx in inits:  # (its inits run as written: an init never faults)
                before[idx] = _init_run_call(fprobes, inits[idx], classified, locs)
                probes += 1
                continue
            if idx in copy_runs:
                before[idx] = _copy_run_call(fprobes, copy_runs[idx], classified, locs)
                if fn.is_entry:
                    chunk_writes[idx] = before[idx]
                probes += 1
                continue
            if idx in deferred:  # a wgmma probe: its operands now, its call after the commit
                k, ch = deferred[idx]
                code, a, b = wgmma_window.capture(k, c.address, c.arg)
                if ch.commit in fused:
                    fused[ch.commit].append((it, c, loc, a, b))
                    if len(fused[ch.commit]) == len(ch.mmas):
                        calls[ch.commit].append(_wgmma4_call(fprobes, fused[ch.commit]))
                else:
                    pre, _, _ = emit(idx, it, replace(c, address=a, arg=b), loc, False,
                                     arrive_site)
                    calls[ch.commit].append(pre)
                before[idx] = code + (wgmma_window.FENCE + "\n\t" if idx == ch.mmas[0] else "")
                probes += 1
                continue
            if idx in calls:  # the commit closing a chain: drain, the chain's probes, its own
                pre, _, _ = emit(idx, it, c, loc, False, arrive_site)
                after[idx] = "\n\t" + "\n\t".join(
                    [wgmma_window.drain(), *calls[idx], pre.rstrip()])
                probes += 1
                continue
            covers: tuple[int, ...] = ()
            rep = None
            if idx in merged:
                p = merged[idx]
                if p is None:
                    continue  # checked by the probe of an earlier access
                # (stores merged into one span stay idempotent when each of them is, as
                # Triton's 12-byte state word of v2.b32 + b32 immediates is)
                idem = p.count == 1 and p.size < 16 and all(
                    classified[m].idem for m in p.members)
                c = replace(c, address=p.address, size=p.size, idem=idem)
                covers = tuple(lines[i] for i in p.members[1:])
                if p.count > 1:
                    rep = (p.stride << abi.REP_STRIDE_SHIFT) | p.count
            stores = None
            if value_tags and c.event is Event.WRITE and not c.idem and idx not in converted:
                members = merged[idx].members if idx in merged else (idx,)
                stores = [(items_by[m], classified[m].size) for m in members]
                tagged += 1
            got = emit(idx, it, c, loc, idx in converted, arrive_site, covers, rep, stores)
            if got is None:
                replaced[idx] = ""
                continue
            probes += 1
            before[idx], text, after_text = got
            if fn.is_entry and idx not in converted and vc_reads.eligible(c, rep) and \
                    before[idx]:  # (none: a measurement build's skipped read, _measure_skip)
                chunk_reads.append(_ChunkRead(idx, it, c, rep, widths, before[idx]))
            if fn.is_entry and idx not in converted and it.pred is None and \
                    vc_writes.eligible(c, rep) and before[idx]:
                chunk_writes[idx] = before[idx]
            if after_text:
                after[idx] = after_text
            if text is not None:
                replaced[idx] = text
        # Loops one lane runs: a copy every lane runs (loops.py), before the original.
        cls = {i: (c, lc) for i, _, c, lc in walk}
        full = [(index_of[id(it)], it, cls.get(index_of[id(it)], (None, None))[0])
                for it in fn.body]
        for lp in loops.find(full):
            before[lp.branch] = before.get(lp.branch, "") + _loop_copy(
                lp, mod.items, cls, emit) + "\n\t"
            probes += 1
        once = first_trip.find(full, value_tags, fn.is_entry)
        first_trips += [(fn.open_index, lp) for lp in once]
        if fn.is_entry:  # (the fast-path record lives in an entry's register)
            in_once = {i for lp in once for i in lp.accesses}
            looped = _in_loops(full)
            for i, it, c in full:
                if c is None or i in in_once or \
                        c.event not in (Event.READ, Event.WRITE, Event.ATOMIC):
                    continue
                p = merged.get(i, False)
                coalesced = p is None or (p is not False and (p.count > 1 or len(p.members) > 1))
                if spans and p and p.count == 1 and c.event is Event.READ:
                    whole = replace(c, address=p.address, size=p.size)  # (its probe's read)
                    if fast_path.spanned(whole):  # (a stencil's neighbours: span_read)
                        c, coalesced = whole, False
                if i not in looped and (coalesced or
                                        not fast_path.updates(it, c, value_tags, spans)):
                    continue  # (out of loops only the inline updates pay)
                if fast_path.eligible(it, c, value_tags, coalesced, spans):
                    pred = f"@{converge.REG_ON}" if i in converted else it.pred
                    fast.append(_FastAccess(i, it, c, widths, i in looped, fn.open_index,
                                            pred))
        for r in regions:  # (a guarded member already runs on REG_OK, which holds REG_ON)
            converted_regions[r.branch] = r
            replaced[r.branch] = r.on
            for d in r.dropped:
                replaced[d] = "// (a branch converted: consan)"
            for m in r.members:
                if m not in replaced:
                    pre, replaced[m] = converge.predicated(items_by[m])
                    before[m] = before.get(m, "") + pre
        if fn.is_entry:
            if first_code is None:
                first_code = fn.close_index
            before[first_code] = (f"{{ .param .b32 __cs_rb; call (__cs_rb), {abi.PROBE_CTA_BEGIN}; "
                                  f"ld.param.b32 {fast_path.REG_FAST}, [__cs_rb]; }}\n\t"
                                  + before.get(first_code, ""))
            begins[fn.open_index] = first_code
        if probes or fn.is_entry:
            after[fn.open_index] = (f"\n\t.reg .b64 {REG_ADDR}, {REG_ADDR2}, {REG_ADDR3}, "
                                    f"{REG_ADDR4}, {REG_ADDR5};"
                                    f"\n\t.reg .b32 {REG_TOKEN}, {REG_SPIN}, {REG_SPIN_LOW}, "
                                    f"{REG_CTAMASK}, {REG_ECHO[0]}, {REG_ECHO[1]};"
                                    f"\n\t.reg .b32 {REG_OP}, {loops.REG_MASK}, "
                                    f"{loops.REG_COUNT}, {fast_path.REG_FAST}, "
                                    f"{fast_path.REG_GRANULES}, {fast_path.REG_EPOCHS};"
                                    f"\n\t.reg .pred {REG_OK}, {REG_SKIP}, "
                                    + (f"{REG_GUARD}, " if fprobes.kept_guard else "")
                                    + f"{converge.REG_ON}, "
                                    f"{converge.REG_ON_OWN}, {loops.REG_VOTE}, "
                                    f"{REG_ECHO_ON}, {REG_ECHO_NONE};"
                                    + wgmma_window.declare(base)
                                    + (tagging.declare() if tagged else "")
                                    + after.get(fn.open_index, ""))
            start = fn.close_index if first_code is None else first_code
            before[start] = f"mov.u32 {REG_SPIN}, 0;\n\t" + before.get(start, "")

    # Declare the probes right after the module header.
    hdr = mod.directive(".address_size") or mod.directive(".target")
    if hdr is None:
        raise InstrumentError(f"{mod.name}: no .target directive; is this PTX?")
    hidx = index_of[id(hdr)]
    after[hidx] = after.get(hidx, "") + "\n" + probe_abi.externs()

    cta_wide_only &= not multicast  # (a peer's posts are applied to the vector clocks' tables)
    fast_tests = inline_writes = inline_reads = inline_bars_done = 0
    if cta_wide_only:  # (inline_barriers.py, first_trip.py, fast_path.py: phase mode only)
        inline_bars_done = _inline_barriers(inline_bars, before, after)
        steps: dict[int, tuple[str, int]] = {}  # (a run's call may make a step: runs.py)
        if not inline_bars_done:
            _step_barriers(bar_probes, before, after)
            steps = {i: (b.step, b.site) for i, b in bar_probes.items()}
        _first_trip_only(first_trips, before, after)
        fast_tests, inline_writes, inline_reads = _fast_paths(fast, begins, before, after,
                                                              hidx, value_tags, tags,
                                                              mod.items, replaced,
                                                              converted_regions, steps, spans)
    elif chunks and not multicast:  # (the 16-byte granules' build: its record)
        inline_bars_done = _inline_vc_probes(inline_bars, before, after, bar0_only)
    chunk_inline = 0
    if chunks and not cta_wide_only and not multicast and \
            len(chunk_reads) <= vc_reads.MAX_SITES:  # (the 16-byte granules' build)
        chunk_inline = _chunk_reads(chunk_reads, before)
    writes_inline = 0
    if chunks and not cta_wide_only and not multicast and vc_writes.on() and \
            len(chunk_writes) <= vc_writes.MAX_SITES:
        writes_inline = _chunk_writes(chunk_writes, before)
    out = []
    for i, it in enumerate(mod.items):
        if i in before:
            out.append(before[i])
        out.append(replaced.get(i, it.text))
        if i in after:
            out.append(after[i])
    caps = _register_caps(mod)
    proofs = _proofs(mod, shared)
    return Instrumented(rejoin.rejoin("".join(out)), table, mod.kernels, unmodeled, counts,
                        min(caps) if caps else None, cta_wide_only, async_proxy, wgmma,
                        cp_async, bar0_only, multicast, chunks,
                        first_trip_loops=[(mod.items[lp.head].line, mod.items[lp.branch].line)
                                          for _, lp in first_trips] if cta_wide_only else [],
                        fast_paths=fast_tests, inline_writes=inline_writes,
                        inline_reads=inline_reads, inline_barriers=inline_bars_done,
                        inline_chunk_reads=chunk_inline, inline_chunk_writes=writes_inline,
                        proven=proofs, prove_at=functools.partial(_prove_at, mod, shared),
                        peer_access=cluster_access or (generic_access and any_peers))


def _prove_at(mod: Module, shared: set[str], kernel: str, block: tuple[int, int, int],
              params: dict[int, int] | None = None,
              maps: static_proof.Maps = (),
              cluster: tuple[int, int, int] | None = None,
              grid: tuple[int, int, int] | None = None) -> static_proof.Proof | str:
    """The kernel's proof for a launch of `block` threads (static_proof.py), with the
    launch's integer parameters by position, its tensor maps' copy sizes, its cluster
    shape and its grid where given."""
    fn = next((f for f in mod.functions if f.name == kernel), None)
    if fn is None:
        return f"no kernel {kernel}"
    index = {id(it): i for i, it in enumerate(mod.items)}
    header = mod.items[index[id(fn.header)]:fn.open_index]
    fixed = static_proof.reqntid(header)
    if fixed is not None and tuple(fixed) != tuple(block):
        return f"launched with block {block}, not its .reqntid {fixed}"
    constants = constant_registers(fn.body)
    return static_proof.prove(
        fn, header, lambda it: classify(it, shared, in_entry=fn.is_entry, constants=constants),
        shared, dims=tuple(block), params=params, maps=maps,  # type: ignore[arg-type]
        cluster=cluster, grid=grid)


def _proofs(mod: Module, shared: set[str]) -> dict[str, static_proof.Proof]:
    """Every kernel's proof where all the module's functions have one (static_proof.py);
    else none. A kernel without shared memory or barriers needs none and gets none."""
    index = {id(it): i for i, it in enumerate(mod.items)}
    out = {}
    for fn in mod.functions:
        constants = constant_registers(fn.body)
        got = static_proof.prove(
            fn, mod.items[index[id(fn.header)]:fn.open_index],
            lambda it, fn=fn, constants=constants: classify(
                it, shared, in_entry=fn.is_entry, constants=constants), shared)
        if isinstance(got, str):
            return {}
        if got.accesses or got.barriers:
            out[fn.name] = got
    return out


class _FastAccess(NamedTuple):
    """An access that fast_path.py serves."""
    index: int  # in the module's items
    item: Item
    cls: Classified
    widths: dict[str, int]  # its function's register widths
    looped: bool  # in a loop: it takes the inline test
    entry: int  # its entry's '{' (whose begin probe returns the record)
    pred: str | None  # its lanes: its guard, or REG_ON in a converted region (converge.py)


class _ChunkRead(NamedTuple):
    index: int
    item: Item
    cls: Classified
    rep: int | None
    widths: dict[str, int]
    probe: str  # its probe's text as emitted


def _chunk_reads(reads: list[_ChunkRead], before: dict[int, str]) -> int:
    """vc_reads.py's inline read ahead of each read's probe whose text nothing was added to
    since (an entry's begin probe, a converted branch's predicate); returns how many."""
    n = 0
    for r in reads:
        if before.get(r.index) != r.probe:
            continue
        before[r.index] = vc_reads.code(
            r.cls, r.rep, _probe_site(r.probe), r.item.pred[1:] if r.item.pred else None,
            _address_code(r.cls.address or "", r.widths, r.item), REG_ADDR, r.probe,
            f"$__cs_vr{r.index}")
        n += 1
    return n


def _chunk_writes(writes: dict[int, str], before: dict[int, str]) -> int:
    """vc_writes.py's inline write ahead of each cp.async call whose text nothing was added
    to since; returns how many."""
    n = 0
    for idx, probe in writes.items():
        got = vc_writes.around(probe, f"$__cs_vw{idx}") if before.get(idx) == probe else None
        if got is not None:
            before[idx] = got
            n += 1
    return n


def _fast_paths(fast: list[_FastAccess], begins: dict[int, int], before: dict[int, str],
                after: dict[int, str], hidx: int, value_tags: bool,
                tags: dict[int, _Tag], items: list[Item],
                replaced: dict[int, str], regions: dict[int, converge.Region],
                steps: dict[int, tuple[str, int]], spans: bool) -> tuple[int, int, int]:
    """fast_path.py's code at its accesses: the inline test in loops; the update where the
    test fails, written out at each access when the module has few (fast_path.inline_max),
    else in one function per kind that the accesses call in place of their probes. The
    record's two words are loaded after the begin probe of each entry with code that
    reads them inline. Returns (tests in loops, writes updated, reads updated)."""
    # (with value tags, a warp's untagged write -- an atomic, a store whose value is not
    # read -- calls its probe, which ends the warp's record of its last tagged store:
    # cs_store_record_end; no such write in the Triton corpus)
    fast = [f for f in fast if before.get(f.index) and not (
        value_tags and f.cls.event in (Event.WRITE, Event.ATOMIC) and f.index not in tags)]
    updated = [f for f in fast if fast_path.updates(f.item, f.cls, value_tags, spans)]
    inline = len(updated) <= fast_path.inline_max()
    up = {f.index for f in updated}
    leads: dict[int, str] = {}  # an entry's first code: what precedes its own probes there
    loads = {f.entry for f in fast if f.looped or (inline and f.index in up)}
    for open_index in sorted({f.entry for f in fast}):
        at = begins[open_index]
        call_end = before[at].index("}\n\t") + 3
        load = fast_path.load_code() if open_index in loads else ""
        before[at] = before[at][:call_end] + load + before[at][call_end:]
        leads[at] = before[at][:call_end + len(load)]
    functions: dict[str, str] = {}
    tests = 0
    alone: list[runs.Member] = []  # accesses that call the function of their kind alone
    for idx, it, c, widths, in_loop, _, pred in fast:
        # (at an entry's first code the begin probe and the record's load come first)
        first = leads.get(idx, "")
        probe = before[idx].rstrip()[len(first):]
        tag = tags.get(idx)
        if tag is not None:  # (its value tag, published before the test)
            assert probe.startswith(tag.text), probe
            probe = probe[len(tag.text):]
            first += _tag_inline(tag, idx) + "\n\t"
        site = str(_probe_site(probe))
        address = _address_code(c.address or "", widths, it)
        entry, rep = abi.access_probe(c.info, None)
        call: tuple[str, str, list[str]] = (entry, site, [] if rep is None else [str(rep)])
        assert f"call {entry}," in probe, probe
        update = fast_path.call_probe(c) if idx in up and inline else None
        function = idx in up and not inline
        if function:  # the module's function, in place of the probe
            name = fast_path.function_name(c)
            if name not in functions:  # (its text once, not at each of its accesses)
                functions[name] = fast_path.function(c)
            call = (name, site, [fast_path.REG_FAST])
            if not in_loop:  # (every lane that reaches it calls it: echo.py)
                code, word = _lanes_word(pred)
                args = [(".b64", REG_ADDR), (".b32", site), (".b32", fast_path.REG_FAST),
                        (".b32", word)]
                assert tuple(t for t, _ in args) == fast_path.FUNCTION_PARAMS
                probe = _call(None, name, args, pre=[*address, *code], comment=f"site {site}")
                before[idx] = first + probe + "\n\t"
                on = pred == f"@{converge.REG_ON}"  # (a converted branch's: REG_ON)
                if not (first or (pred and not on) or idx in after or
                        (idx in replaced and not on)):
                    alone.append(runs.Member(idx, c, address, int(site), on, widths))
                continue
        elif not in_loop and update is None:
            before[idx] = first + probe + "\n\t"
            continue
        tests += in_loop
        test = fast_path.test(pred, c, address, REG_ADDR, f"$__cs_fast{idx}",
                              f"$__cs_slow{idx}", call, update, function)
        before[idx] = first + test + f"\n$__cs_fast{idx}:\n\t"
    found = runs.find(alone, items, before, after, replaced, regions, steps)
    for run in found:
        cs, step = [m.cls for m in run.members], run.step is not None
        name = fast_path.run_name(cs, run.lead, step)
        if name not in functions:
            functions[name] = fast_path.run_function(cs, run.lead, step)
        for m in run.members:
            del before[m.index]
        if run.branch is not None:  # (the branch and its region as the user wrote them)
            for k in (run.at, *regions[run.at].members):
                del replaced[k]
        if run.step is not None:  # (made by the run's call)
            del after[run.step[0]]
        assert not before.get(run.at), run
        before[run.at] = _run_call(name, run)
    called = "".join(before.get(f.index, "") for f in fast) + "".join(
        before[r.at] for r in found)  # (a run's members call none)
    after[hidx] += "".join(functions[k] for k in sorted(functions) if f"call {k}," in called)
    writes = sum(1 for f in updated if f.cls.event is Event.WRITE)
    return tests, writes, len(updated) - writes


def _run_call(name: str, run: runs.Run) -> str:
    """The call of a run's function (instrument/runs.py: before its first access, or at the
    branch it is hoisted over): each access's address computed into REG_ADDR and kept as a
    32-bit window offset; 1 where the lane makes the accesses (REG_ON's in a converted
    branch, the lanes that run a hoisted one's), else 0: every lane calls it (echo.py).
    A run of a hoisted branch's accesses alone is skipped by a warp none of whose lanes
    runs the branch."""
    ms = run.members
    regs = [f"%__cs_g{i}" for i in range(len(ms))]
    lines = [f"{{ // consan sites {ms[0].site}-{ms[-1].site}", f".reg .b32 %__cs_g<{len(ms)}>;",
             *run.prelude]
    for reg, m in zip(regs, ms, strict=True):
        lines += [*m.address, f"cvt.u32.u64 {reg}, {REG_ADDR};"]
    skip = ""
    if run.branch is not None:  # (its lanes: where `@p bra` is not taken)
        p = run.branch.pred
        runs_it = f"@{p[2:]}" if p.startswith("@!") else f"@!{p[1:]}"
        code, word = _lanes_word(runs_it)
        if not run.lead:
            skip = f"$__cs_run{ms[0].index}"
            code = [".reg .pred %__cs_any;", ".reg .b32 %__cs_am;", "activemask.b32 %__cs_am;",
                    f"vote.sync.any.pred %__cs_any, {runs_it[1:]}, %__cs_am;",
                    f"@!%__cs_any bra {skip};", *code]
    else:
        code, word = _lanes_word(f"@{converge.REG_ON}" if ms[0].on else None)
    args = [*regs, str(ms[0].site), fast_path.REG_FAST, word]
    if run.step is not None:
        args.append(str(run.step[1]))
    lines += [*code, f"call {name}, ({', '.join(args)});", "}"]
    return "\n\t".join(lines) + (f"\n{skip}:" if skip else "") + "\n\t"


def _lanes_word(pred: str | None) -> tuple[list[str], str]:
    """(code, operand) of the word a module function of fast_path.py takes: 1 where the lane
    makes the access (`pred`, an instruction's guard or REG_ON; None: every lane), else 0."""
    if pred is None:
        return [], "1"
    if pred.startswith("@!"):
        return [f"selp.b32 {REG_OP}, 0, 1, {pred[2:]};"], REG_OP
    return [f"selp.b32 {REG_OP}, 1, 0, {pred[1:]};"], REG_OP


def _inline_barriers(bars: dict[int, _InlineBarrier], before: dict[int, str],
                     after: dict[int, str]) -> int:
    """A phase-mode entry's CTA-wide barriers and exits do their probes' work inline where
    the warp has a fast-path record, and call them elsewhere (inline_barriers.py), unless
    the module has more than fast_path.BARRIERS_INLINE_MAX: then each calls its probes as
    before. Measured (bench_build, 2-core machine): written out at an unrolled bitonic
    sort's 73 barriers, its link took 0.68-0.71 s against 0.38-0.45 s with the calls.
    Returns how many run inline."""
    bars = {i: b for i, b in bars.items() if b.event in (Event.BAR_SYNC, Event.BAR_RED,
                                                           Event.EXIT)}
    if len(bars) > fast_path.inline_max(fast_path.BARRIERS_INLINE_MAX):
        return 0
    rec = fast_path.REG_FAST
    for idx, b in bars.items():
        label = f"$__cs_bar{idx}"
        if b.event is Event.EXIT:
            _swap(before, idx, b.pre, inline_barriers.exit_(b.pred, rec, b.pre, label) + "\n\t")
            continue
        _swap(before, idx, b.pre, inline_barriers.arrive(b.pred, rec, REG_TOKEN, b.pre, label)
              + "\n\t")
        _swap(after, idx, b.post, "\n\t" + inline_barriers.wait(b.post_pred, rec, b.post,
                                                                f"{label}w"))
    return len(bars)


def _swap(where: dict[int, str], idx: int, text: str, new: str) -> None:
    """A probe's text at item idx (there once) replaced by its inline form."""
    assert where.get(idx, "").count(text) == 1, (idx, text)
    where[idx] = where[idx].replace(text, new)


def _inline_vc_probes(bars: dict[int, _InlineBarrier], before: dict[int, str],
                      after: dict[int, str], bar0: bool) -> int:
    """A vector-clock module of 16-byte chunks (the build whose record abi.VF_* its entries
    hold): their unpredicated `bar.sync 0` (`bar0`: the module syncs only on it) and
    wgmma.commit_group / wait_group, cp.async.commit_group / wait_group / wait_all and the
    successes of mbarrier.try_wait.parity do their probes' work inline where the warp's
    record allows, and call them elsewhere (inline_barriers.vc_arrive, vc_wgmma_group,
    vc_async_group, vc_mbar_wait); as many as _inline_barriers writes out. Returns how
    many."""
    groups = (Event.WGMMA_COMMIT, Event.WGMMA_WAIT)
    give_way = (*_CP_GROUPS, Event.MBARRIER)
    bars = {i: b for i, b in bars.items() if b.pred is None and b.post_pred is None and
            (b.event in groups or b.event in give_way or (bar0 and b.event is Event.BAR_SYNC))
            and (b.event is not Event.ASYNC_WAIT or b.n.isdigit())}
    limit = fast_path.inline_max(fast_path.BARRIERS_INLINE_MAX)
    if len(bars) > limit:  # (the cp.async groups and mbarrier waits give way: they call
        bars = {i: b for i, b in bars.items() if b.event not in give_way}  # where the rest fit)
    if not bars or len(bars) > limit:
        return 0
    fast = fast_path.REG_FAST
    for idx, b in bars.items():
        label = f"$__cs_vbar{idx}" if idx >= 0 else f"$__cs_vbarl{~idx}"
        if b.event is Event.WGMMA_COMMIT:  # (before it; after it where it closes a chain
            # of wgmma probes: their calls come after the commit, then its own)
            where = before if b.pre in before.get(idx, "") else after
            _swap(where, idx, b.pre.rstrip(), inline_barriers.vc_wgmma_group(
                fast, abi.WGMMA_COMMIT, b.n, b.pre, label))
        elif b.event is Event.WGMMA_WAIT:  # (after it)
            _swap(after, idx, b.post, "\n\t" + inline_barriers.vc_wgmma_group(
                fast, abi.WGMMA_WAIT, b.n, b.post, label))
        elif b.event is Event.ASYNC_COMMIT:  # (before it)
            where = before if b.pre in before.get(idx, "") else after
            _swap(where, idx, b.pre.rstrip(), inline_barriers.vc_async_group(
                fast, abi.ASYNC_COMMIT, 0, b.pre, label))
        elif b.event in _CP_GROUPS:  # a wait (after it)
            _swap(after, idx, b.post, "\n\t" + inline_barriers.vc_async_group(
                fast, _CP_GROUPS[b.event], int(b.n), b.post, label))
        elif b.event is Event.MBARRIER:  # a parity wait: its call's place in the post (after
            # the spin sampling, before the label a sampled-out failure skips to)
            at, end = b.post.index("{ // consan site"), b.post.rindex("\n$__cs_spin_")
            where, key = (after, idx) if b.home is None else (before, b.home)
            _swap(where, key, b.post, b.post[:at] + inline_barriers.vc_mbar_wait(
                fast, list(b.addr), REG_ADDR, b.result, b.parity, b.post[at:end], label,
                None if b.home is None else converge.REG_ON) + b.post[end:])
        else:
            _swap(before, idx, b.pre, inline_barriers.vc_arrive(fast, REG_TOKEN, b.pre, b.post,
                                                               label) + "\n\t")
            _swap(after, idx, b.post, "\n\t" + inline_barriers.vc_wait(fast, REG_TOKEN, b.post,
                                                                       f"{label}w"))
    return len(bars)


class _StepBarrier(NamedTuple):
    """A CTA barrier's probe texts: its arrive (before it) and wait (after it), and its one
    probe after it in the step form (_step_barriers)."""
    pre: str
    post: str
    step: str
    site: int


def _step_barriers(bars: dict[int, _StepBarrier], before: dict[int, str],
                   after: dict[int, str]) -> None:
    """A phase-mode module's CTA barriers that call their probes call one, after the
    barrier (abi.PROBE_BAR_STEP: the phase advances and the ended phase's bitmap is
    emptied), in place of an arrive before it and a wait after it. Every barrier of the
    module or none: the two forms empty different bitmaps. Fewer calls, so a shorter link:
    measured on the 2-core machine (ptxas 12.8, an unrolled bitonic sort's kernel, medians of
    9), 0.195 s with its 56 barriers' waits and arrives, 0.177 s without the waits."""
    for idx, b in bars.items():
        assert before.get(idx, "").count(b.pre) == 1, (idx, b.pre)
        assert after.get(idx, "").count(b.post) == 1, (idx, b.post)
        before[idx] = before[idx].replace(b.pre, "")
        after[idx] = after[idx].replace(b.post, b.step)


def _tag_inline(tag: _Tag, idx: int) -> str:
    """A tagged store's tag computed, then published inline where the warp has a fast-path
    record (value_tags.publish), else by the probe's call."""
    call = _call(None, abi.PROBE_STORE_VALUE, [(".b32", tagging.REG_TAG), (".b32", str(tag.site))],
                 comment=f"value of site {tag.site}")
    return "\n\t".join([f"// consan value of site {tag.site}", *tag.code,
                         tagging.publish(tag.site, fast_path.REG_FAST, tag.pred, call,
                                         f"$__cs_tag{idx}")])


def _probe_site(probe: str) -> int:
    """The site of an access probe's text (_probe: `{ // consan site N`)."""
    m = re.search(r"// consan site (\d+)\n", probe)
    assert m, probe
    return int(m.group(1))


def _in_loops(body: list[tuple[int, Item, Classified | None]]) -> set[int]:
    """Module indices of the items between a label and a branch back to it."""
    at = {it.label: p for p, (_, it, _) in enumerate(body) if it.kind == "label"}
    out: set[int] = set()
    for p, (_, it, _) in enumerate(body):
        if it.is_instruction and it.op_parts[0] == "bra" and it.operands:
            h = at.get(it.operands[0].strip())
            if h is not None and h < p:
                out.update(i for i, _, _ in body[h + 1:p])
    return out


def _first_trip_only(loops_: list[tuple[int, first_trip.FirstTripLoop]],
                     before: dict[int, str], after: dict[int, str]) -> None:
    """Each loop's access and barrier probes run where the thread's first-trip flag is on:
    set where the loop is entered, cleared before its branch back (first_trip.py)."""
    declared = set()
    for open_index, lp in loops_:
        if open_index not in declared:
            declared.add(open_index)
            after[open_index] = f"\n\t.reg .pred {first_trip.REG_FIRST};" + \
                after.get(open_index, "")
        before[lp.head] = before.get(lp.head, "") + f"mov.pred {first_trip.REG_FIRST}, 1;\n"
        before[lp.branch] = before.get(lp.branch, "") + \
            f"mov.pred {first_trip.REG_FIRST}, 0;\n\t"
        for idx in (*lp.accesses, *lp.barriers):
            if before.get(idx):  # (a merged access has none: an earlier one's probe checks it)
                skip = f"$__cs_first{idx}"
                before[idx] = (f"@!{first_trip.REG_FIRST} bra {skip};\n\t"
                               + before[idx].rstrip() + f"\n{skip}:\n\t")
        for idx in lp.barriers:  # the wait's probe, after the barrier
            if after.get(idx):
                skip = f"$__cs_firstw{idx}"
                after[idx] = (f"\n\t@!{first_trip.REG_FIRST} bra {skip};" + after[idx]
                              + f"\n{skip}:")


@dataclass
class _FnProbes:
    """What emitting a function's probes needs besides the instruction."""
    table: SiteTable
    fn: str
    widths: dict[str, int]
    mod: Module
    spaces: dict[str, str]
    carried: dict[int, carry.Carry]
    arrives: dict[int, carry.Carry]
    items: dict[int, Item]
    tags: dict[int, _Tag]  # (filled: each tagged store's)
    bars: dict[int, _InlineBarrier] | None  # (filled in an entry: its barriers' and exits')
    kept_guard: bool = False  # (set: some probe after its instruction reads REG_GUARD)
    keep_ops: bool = False  # mbarrier operations and copies run as they are (_loose_mbarriers)
    all_bars: dict[int, _StepBarrier] | None = None  # (filled: every CTA barrier's probes)
    pairs: dict[int, carry.Pair] = field(default_factory=dict)  # by the second load
    classes: dict[int, Classified] = field(default_factory=dict)

    @functools.cached_property
    def firsts(self) -> dict[int, carry.Pair]:
        """The pairs by their first load."""
        return {p.first: p for p in self.pairs.values()}


class _InlineBarrier(NamedTuple):
    """A barrier's or exit's probe texts (before and after the instruction) and predicates,
    which a phase-mode entry does inline (inline_barriers.py); in a vector-clock entry,
    barrier 0's and the wgmma groups' (`n`: a wait's groups kept)."""
    event: Event
    pre: str
    post: str
    pred: str | None
    post_pred: str | None  # the guard after the instruction (_guard_after)
    n: str = "0"
    # an mbarrier parity wait's: the operand's address code, its parity, its outcome
    addr: tuple[str, ...] = ()
    parity: str = ""
    result: str = ""
    # a wait in a loop's copy every lane runs (loops.py): the item whose text before it
    # holds the copy, where the lanes with converge.REG_ON run the wait
    home: int | None = None


_INLINE_EVENTS = (Event.BAR_SYNC, Event.BAR_RED, Event.EXIT, Event.WGMMA_COMMIT,
                  Event.WGMMA_WAIT, Event.ASYNC_COMMIT, Event.ASYNC_WAIT, Event.ASYNC_WAIT_ALL)
_CP_GROUPS = {Event.ASYNC_COMMIT: abi.ASYNC_COMMIT, Event.ASYNC_WAIT: abi.ASYNC_WAIT,
              Event.ASYNC_WAIT_ALL: abi.ASYNC_WAIT_ALL}


def _guard_after(it: Item, post: str) -> tuple[str, str | None, str]:
    """(post, its guard, code before the instruction) for an instruction whose guard is
    also its destination (`@p bar.red.or.pred p, ...`, `@!p mbarrier.try_wait p, ...`):
    the probe after it must run for the lanes that ran it, so the guard is kept in
    REG_GUARD before the instruction and the post's `@p` reads that (its other uses of p
    read the result)."""
    g = it.pred.lstrip("@!") if it.pred else None
    if not post or g is None or not it.operands or it.operands[0].strip() != g:
        return post, it.pred, ""
    post = re.sub(rf"@(!?){re.escape(g)}(?=\s)", rf"@\g<1>{REG_GUARD}", post)
    return post, it.pred.replace(g, REG_GUARD), f"mov.pred {REG_GUARD}, {g};\n\t"


class _Tag(NamedTuple):
    """A store's value tag: the text of its call (the start of the store's probe text),
    the PTX that computes it, the store's site and predicate."""
    text: str
    code: list[str]
    site: int
    pred: str | None


def _loose_mbarriers(mod: Module, shared: set[str]) -> bool:
    """Whether the module has an mbarrier operation (or a copy that completes bytes on one)
    that the checker does not model: its model of the module's mbarriers is then not the
    hardware's, and an operation it takes for a fault (an arrive on an mbarrier it never
    saw initialised, an arrival below zero) may be right on the GPU. Such a module's
    mbarrier operations and copies run as they are instead of being skipped on the
    checker's word (which made a clean kernel hang)."""
    for fn in mod.functions:
        constants = None
        for it in fn.body:
            if it.is_instruction and "mbarrier" in it.opcode:
                if constants is None:
                    constants = constant_registers(fn.body)
                c = classify(it, shared, in_entry=fn.is_entry, constants=constants)
                if c is not None and c.event is Event.UNMODELED:
                    return True
    return False


def _copy_run_call(f: _FnProbes, run: cp_runs.CpRun, classified: dict, locs: dict) -> str:
    """One call for a run of cp.async copies (instrument/cp_runs.py, abi.PROBE_CP16_RUN):
    each copy keeps its own site; the later copies' addresses computed by the run's
    prelude."""
    items = [f.items[i] for i in run.members]
    sites = [_site(f, it, classified[i], locs.get(i)).id
             for i, it in zip(run.members, items, strict=True)]
    regs = [f"%__cs_c{k}" for k in range(len(run.members))]
    lines = [f"{{ // consan sites {', '.join(str(s) for s in sites)}",
             f".reg .b64 %__cs_c<{len(regs)}>;", *run.prelude]
    widths = {**f.widths, **run.temps}
    for reg, addr, it in zip(regs, run.addresses, items, strict=True):
        lines += _address_code(addr, widths, it, reg)
    pad = abi.CP16_RUN_MAX - len(regs)
    args = [*regs, *["0"] * pad, *(str(s) for s in sites), *["0"] * pad, str(len(regs)),
            str(classified[run.members[0]].info)]
    lines += [f"call {abi.PROBE_CP16_RUN}, ({', '.join(args)});", "}"]
    return "\n\t".join(lines) + "\n\t"


def _init_run_call(f: _FnProbes, run: init_runs.InitRun, classified: dict, locs: dict) -> str:
    """One call for a run of mbarrier.init (instrument/init_runs.py,
    abi.PROBE_MBAR_INIT_RUN): each init keeps its own site; the later inits' operands
    computed by the run's prelude."""
    items = [f.items[i] for i in run.members]
    sites = [_site(f, it, classified[i], locs.get(i)).id
             for i, it in zip(run.members, items, strict=True)]
    n = len(run.members)
    regs = [f"%__cs_i{k}" for k in range(n)]
    lines = [f"{{ // consan sites {', '.join(str(s) for s in sites)}",
             f".reg .b64 %__cs_i<{n}>;", *run.prelude]
    widths = {**f.widths, **run.temps}
    for reg, (addr, _), it in zip(regs, run.operands, items, strict=True):
        lines += _address_code(addr, widths, it, reg)
    opcode, op = _op_word(abi.MB_INIT, run.converted)
    pad = ["0"] * (abi.MBAR_INIT_RUN_MAX - n)
    args = [*regs, *pad, *(count for _, count in run.operands), *pad,
            *(str(s) for s in sites), *pad, str(n), op]
    lines += [*opcode, f"call {abi.PROBE_MBAR_INIT_RUN}, ({', '.join(args)});", "}"]
    return "\n\t".join(lines) + "\n\t"


def _site(f: _FnProbes, it: Item, c: Classified, loc, covers: tuple[int, ...] = ()):
    """The site-table entry of a probed instruction."""
    return f.table.add(kernel=f.fn, event=c.event.value, ptx_line=it.line,
                       ptx_text=it.text.strip(), size=c.size,
                       loc=loc[0] if loc else None, inlined_at=loc[1] if loc else (),
                       merged_lines=covers)


def _wgmma4_call(f: _FnProbes, mmas: list[tuple[Item, Classified, object, str, str]]) -> str:
    """One call for a chain of four mma_async of one info word (abi.PROBE_WGMMA4): each
    (item, classification, loc, A operand, B operand), operands already captured."""
    sites = [_site(f, it, c, loc).id for it, c, loc, _, _ in mmas]
    args = [(".b64", x) for _, _, _, a, b in mmas for x in (a, b)]
    args += [(".b32", str(mmas[0][1].op))] + [(".b32", str(s)) for s in sites]
    return _call(None, abi.PROBE_WGMMA4, args,
                 comment=f"sites {', '.join(str(s) for s in sites)}") + "\n\t"


def _emit(f: _FnProbes, idx: int, it: Item, c: Classified, loc, on: bool, arrive_site: dict,
          covers: tuple[int, ...] = (), rep: int | None = None,
          stores: list[tuple[Item, int]] | None = None, home: int | None = None
          ) -> tuple[str, str | None, str] | None:
    """(text before, the instruction's text or None for as is, text after) of a probed
    instruction; None for a carried arrive (its load's probe models it). `stores`: a
    store's value tag covers these (each with its bytes). `home`: the item whose text
    before it holds this copy of the instruction (a loop's copy, _loop_copy)."""
    site = _site(f, it, c, loc, covers)
    if idx in f.arrives:  # modelled by the probe of the load that carries it
        arrive_site[f.arrives[idx].load] = site.id
        return None
    if idx in f.firsts:  # modelled, and run, after the second load's probe
        arrive_site[-1 - f.firsts[idx].second] = site.id
        return "", "", ""
    if idx in f.pairs:
        return _emit_pair(f, f.pairs[idx], site.id, on, arrive_site)
    tensor = c.event in (Event.TENSOR_LOAD, Event.TENSOR_STORE)
    k = f.carried.get(idx)
    pre, post = _probe(it, c, site.id, f.widths,
                       _symbol_spaces(f.mod, f.spaces) if tensor else None, rep, on=on,
                       carry=(k.count, arrive_site[idx]) if k else None, echoes=not stores)
    post, post_pred, keep = _guard_after(it, post)
    f.kept_guard |= bool(keep)
    if f.bars is not None and not on and c.event in _INLINE_EVENTS:
        n = it.operands[0] if c.event in (Event.WGMMA_WAIT, Event.ASYNC_WAIT) else "0"
        f.bars[idx] = _InlineBarrier(c.event, pre, post, it.pred, post_pred, n)
    elif f.bars is not None and (not on or home is not None) and c.event is Event.MBARRIER \
            and c.result and c.op == abi.MB_WAIT_PARITY and c.space != abi.SPACE_CLUSTER:
        f.bars[~idx if on else idx] = _InlineBarrier(  # (a loop copy's: keys below 0)
            c.event, pre, post, it.pred, post_pred,
            addr=tuple(_address_code(c.address or "", f.widths, it)), parity=c.arg,
            result=c.result, home=home if on else None)
    if f.all_bars is not None and c.event in (Event.BAR_SYNC, Event.BAR_RED):
        _, step = _probe(it, c, site.id, f.widths, step=True)
        f.all_bars[idx] = _StepBarrier(pre, post, _guard_after(it, step)[0], site.id)
    pre += keep
    if stores:
        code = tagging.tag_code(stores, f.widths)
        if code is not None:
            code = _address_code(c.address or "", f.widths, it) + code
            tag = _call(it.pred, abi.PROBE_STORE_VALUE,
                        [(".b32", tagging.REG_TAG), (".b32", str(site.id))],
                        pre=code, comment=f"value of site {site.id}")
            f.tags[idx] = _Tag(tag + "\n\t", code, site.id, it.pred)
            pre = tag + "\n\t" + pre
    text = None
    if not f.keep_ops and ((c.event is Event.MBARRIER and c.result is None) or
                           c.event in (Event.BULK_LOAD, Event.TENSOR_LOAD)):
        text = _where_ok(f, k, [it])
    return pre, text, post


def _where_ok(f: _FnProbes, k: carry.Carry | None, ops: list[Item]) -> str:
    """The instructions `ops`, each run only where the probe before them said it may; with
    `k`, the arrive the first carries before them (after the probe that modelled it)."""
    ops = ([f.items[k.arrive]] if k else []) + ops
    return "\n\t".join(f"@{REG_OK} {x.unpredicated}" for x in ops)


def _box_code(c: Classified, widths: dict[str, int], it: Item, spaces: dict[str, str],
              smem: str = REG_ADDR, tmap: str = REG_ADDR3) -> list[str]:
    """PTX putting a tensor copy's shared address in `smem` and its map's in `tmap`."""
    return (_address_code(c.address or "", widths, it, smem)
            + _generic_address_code(c.arg, widths, it, tmap, spaces))


def _emit_pair(f: _FnProbes, p: carry.Pair, site2: int, on: bool, arrive_site: dict
               ) -> tuple[str, str, str]:
    """(text before, text, text after) of the second load of a pair (carry.pairs): one
    probe for both loads (and the arrive the first carries), then the arrive and the two
    loads, each run where the probe says so."""
    it1, it2 = f.items[p.first], f.items[p.second]
    c1, c2 = f.classes[p.first], f.classes[p.second]
    k = f.carried.get(p.first)
    pred = it2.pred
    spaces = _symbol_spaces(f.mod, f.spaces)
    code = (_box_code(c1, f.widths, it1, spaces)
            + _address_code(c1.result or "", f.widths, it1, REG_ADDR2)
            + _box_code(c2, f.widths, it2, spaces, REG_ADDR4, REG_ADDR5))
    opcode, op = _op_word(abi.TENSOR_LOAD | (abi.TENSOR_ARRIVE_TX if k else 0), on, pred)
    tx, asite = (k.count, arrive_site[p.first]) if k else ("0", abi.NO_SITE)
    site1 = arrive_site[-1 - p.second]
    args = [(".b64", REG_ADDR), (".b64", REG_ADDR3), (".b64", REG_ADDR2), (".b32", str(site1)),
            (".b32", op), (".b32", tx), (".b32", str(asite)), (".b64", REG_ADDR4),
            (".b64", REG_ADDR5), (".b32", str(site2))]
    call = _call(None, abi.PROBE_TENSOR2, args, ret=True, pre=code + opcode,
                 comment=f"sites {site1}, {site2}")
    return _guard(call, f"@{converge.REG_ON}" if on else pred), _where_ok(f, k, [it1, it2]), ""


def _loop_copy(lp: loops.Loop, items: list[Item], cls: dict, emit) -> str:
    """The entry of a loop region one lane runs and the copy of it every lane runs
    (loops.py); the original region follows it, from its own label."""
    arrive_site: dict[int, int] = {}
    out, depth = [], 0
    for idx in lp.members:
        it = items[idx]
        c, loc = cls.get(idx, (None, None))
        depth += (it.kind == "open") - (it.kind == "close")
        if it.kind == "label":
            out.append(f"{lp.renamed(it.label)}:" if depth == 0 else it.text)
        elif not it.is_instruction:
            out.append(it.text)
        elif it.op_parts[0] == "bra":
            out.append(loops.branch(it, lp.renamed(it.operands[0].strip())))
        elif c is not None and c.event.probed:
            got = emit(idx, it, c, loc, True, arrive_site, home=lp.branch)
            if got is None:
                continue
            pre, text, post = got
            out += [pre, text if text is not None else f"@{converge.REG_ON} {it.text}", post]
        else:
            pre, text = converge.predicated(it)
            out.append(pre + text)
    return (loops.entry(lp, items[lp.branch]) + "\n\t" + "".join(out) +
            f"\n\tbra {lp.target};\n{lp.original}:")


def _mask_code(mask: str, widths: dict[str, int]) -> list[str]:
    """REG_CTAMASK = a multicast copy's ctaMask operand (a .b16 register or an immediate)."""
    if REGISTER.fullmatch(mask) and register_width(mask, widths) == 16:
        return [f"cvt.u32.u16 {REG_CTAMASK}, {mask};"]
    return [f"mov.b32 {REG_CTAMASK}, {mask};"]


def _guard(call: str, pred: str | None) -> str:
    """After a probe that answers 1 for "would fault": REG_OK says whether to run the op."""
    guard = [f"setp.eq.u32 {REG_OK}, {REG_TOKEN}, 0;"]
    if pred:  # keep the instruction's own predicate: ok &= pred
        off = f"@{'' if pred.startswith('@!') else '!'}{pred.lstrip('@!')}"
        guard.append(f"{off} setp.eq.u32 {REG_OK}, 1, 0;")
    return call + "\n\t" + "\n\t".join(guard) + "\n\t"


def _echo_code(lanes: str, info: int) -> list[str]:
    """An access probe's arguments where the lanes that make the access are those where
    `lanes` holds (REG_ON, or the instruction's guard): REG_ADDR2 the address, REG_OP the
    info word, REG_ECHO_NONE where no lane makes it (echo.py)."""
    on = lanes[1:] if lanes.startswith("@") else lanes
    code = [f"activemask.b32 {REG_CTAMASK};"]
    if on.startswith("!"):
        code.append(f"not.pred {REG_ECHO_ON}, {on[1:]};")
        on = REG_ECHO_ON
    return code + echo.code(on, REG_CTAMASK, REG_ADDR, REG_ADDR2, info, REG_OP, REG_ECHO_NONE,
                            *REG_ECHO)


def _op_word(op: int, on: bool, pred: str | None = None) -> tuple[list[str], str]:
    """(code, operand) of a probe's op word: in a converted region (converge.py), the lanes
    the branch skipped pass it with PROBE_OFF; with `pred` (an instruction's own predicate,
    `@p` or `@!p`, its probe called unpredicated), the lanes whose predicate is false."""
    guard = f"@{converge.REG_ON}" if on else pred
    if not guard:
        return [], str(op)
    run, off = op, op | abi.PROBE_OFF
    if guard.startswith("@!"):
        run, off = off, run
    return [f"selp.b32 {REG_OP}, {run}, {off}, {guard.lstrip('@!')};"], REG_OP


def _probe(it: Item, c: Classified, site: int, widths: dict[str, int],
           spaces: dict[str, str] | None = None, rep: int | None = None,
           on: bool = False, carry: tuple[str, int] | None = None,
           echoes: bool = True, step: bool = False) -> tuple[str, str]:
    """(text before, text after) the instruction. `rep`: a strided probe's stride and
    count (abi.PROBE_ACCESS_N). `on`: the instruction is in a converted region (every
    lane calls the probe; its op word says which lanes run the instruction). `carry`: a
    tensor load's probe models the arrive.expect_tx before it too (its byte operand and
    site: instrument/carry.py). `echoes`: a guarded access's probe is called by every lane
    that reaches it (echo.py; not a store whose value tag its lanes publish). `step`: a CTA
    barrier's one probe after it (abi.PROBE_BAR_STEP, _step_barriers)."""
    pred = it.pred
    guard_pred = f"@{converge.REG_ON}" if on else pred
    ev = c.event
    if ev in (Event.TENSOR_LOAD, Event.TENSOR_STORE):
        # (smem, tensor map, mbarrier, site, op): the checker looks the map's geometry up;
        # a load whose mbarrier is not live is skipped, like a bulk copy.
        code = _box_code(c, widths, it, spaces or {})
        if ev is Event.TENSOR_LOAD:
            code += _address_code(c.result or "", widths, it, REG_ADDR2)
        else:
            code.append(f"mov.b64 {REG_ADDR2}, 0;")
        word = abi.TENSOR_LOAD if ev is Event.TENSOR_LOAD else abi.TENSOR_STORE
        word |= (abi.TENSOR_ARRIVE_TX if carry else 0) | (abi.TENSOR_MULTICAST if c.mask else 0)
        # A predicated copy (Triton's `@p cp.async.bulk.tensor`, p from elect.sync) is probed
        # by every lane that reaches it, those whose predicate is false marked off, so that
        # the lanes write the copy's box together: one lane writing a 16 KiB box of 4-byte
        # granules into device-memory tables took 302k cycles (H100), its warp's other lanes
        # waiting at their next barrier.
        opcode, op = _op_word(word, on, pred)
        pred = None  # (in a converted region there is none: converge.convertible)
        if c.mask:  # the ctaMask rides in the op word's high half
            opcode += _mask_code(c.mask, widths) + [
                f"shl.b32 {REG_CTAMASK}, {REG_CTAMASK}, {abi.MULTICAST_MASK_SHIFT};",
                f"or.b32 {REG_CTAMASK}, {REG_CTAMASK}, {op};"]
            op = REG_CTAMASK
        tx, asite = carry if carry else ("0", abi.NO_SITE)
        args = [(".b64", REG_ADDR), (".b64", REG_ADDR3), (".b64", REG_ADDR2),
                (".b32", str(site)), (".b32", op), (".b32", tx), (".b32", str(asite))]
        call = _call(pred, abi.PROBE_TENSOR, args, ret=True, pre=code + opcode,
                     comment=f"site {site}")
        return (_guard(call, guard_pred) if ev is Event.TENSOR_LOAD else call + "\n\t"), ""
    if ev in (Event.ASYNC_COMMIT, Event.ASYNC_WAIT, Event.ASYNC_WAIT_ALL):
        op = {Event.ASYNC_COMMIT: abi.ASYNC_COMMIT, Event.ASYNC_WAIT: abi.ASYNC_WAIT,
              Event.ASYNC_WAIT_ALL: abi.ASYNC_WAIT_ALL}[ev]
        n = it.operands[0] if ev is Event.ASYNC_WAIT and it.operands else "0"
        opcode, opw = _op_word(op, on)  # (in a converted region: PROBE_OFF where skipped)
        call = _call(pred, abi.PROBE_ASYNC, [(".b32", opw), (".b32", n), (".b32", str(site))],
                     pre=opcode, comment=f"site {site}")
        # The wait takes effect once the instruction has returned: probe after it.
        return ("", "\n\t" + call) if ev is not Event.ASYNC_COMMIT else (call + "\n\t", "")
    if ev is Event.BULK_STORE:
        code, size = _address_code(c.address or "", widths, it), c.arg
        if on:  # (its byte count, below 2^31, carries BULK_OFF for the lanes that skip it)
            code += [f"selp.b32 {REG_OP}, 0, {abi.BULK_OFF}, {converge.REG_ON};",
                     f"or.b32 {REG_OP}, {REG_OP}, {c.arg};"]
            size = REG_OP
        call = _call(pred, abi.PROBE_BULK_STORE,
                     [(".b64", REG_ADDR), (".b32", size), (".b32", str(site))],
                     pre=code, comment=f"site {site}")
        return call + "\n\t", ""
    if ev is Event.WGMMA:  # the operands are read from issue on: probe before it
        args = [(".b64", c.address or "0"), (".b64", c.arg), (".b32", str(c.op)),
                (".b32", str(site))]
        return _call(pred, abi.PROBE_WGMMA, args, comment=f"site {site}") + "\n\t", ""
    # Group bookkeeping of the bulk-store and wgmma units; one fence.proxy.async serves both
    # (the bulk-group probe records it for bulk stores and for wgmma operands).
    groups = {Event.BULK_COMMIT: (abi.PROBE_BULK_GROUP, abi.BULK_COMMIT),
              Event.BULK_WAIT: (abi.PROBE_BULK_GROUP, abi.BULK_WAIT),
              Event.PROXY_FENCE: (abi.PROBE_BULK_GROUP, abi.PROXY_FENCE),
              Event.WGMMA_COMMIT: (abi.PROBE_WGMMA_GROUP, abi.WGMMA_COMMIT),
              Event.WGMMA_WAIT: (abi.PROBE_WGMMA_GROUP, abi.WGMMA_WAIT)}
    if ev in groups:
        probe, op = groups[ev]
        n = it.operands[0] if ev in (Event.BULK_WAIT, Event.WGMMA_WAIT) else "0"
        opcode, opw = _op_word(op, on)  # (in a converted region: PROBE_OFF where skipped)
        call = _call(pred, probe, [(".b32", opw), (".b32", n), (".b32", str(site))],
                     pre=opcode, comment=f"site {site}")
        # A wait or a fence takes effect once the instruction has returned: probe after it.
        committed = ev in (Event.BULK_COMMIT, Event.WGMMA_COMMIT)
        return (call + "\n\t", "") if committed else ("", "\n\t" + call)
    if ev is Event.BULK_LOAD:
        code = (_address_code(c.address or "", widths, it)
                + _address_code(c.result or "", widths, it, REG_ADDR2)
                + (_mask_code(c.mask, widths) if c.mask else []))
        if on and c.mask:
            code += [f"selp.b32 {REG_OP}, 0, {abi.BULK_OFF}, {converge.REG_ON};",
                     f"or.b32 {REG_CTAMASK}, {REG_CTAMASK}, {REG_OP};"]
        elif on:
            code += [f"selp.b32 {REG_CTAMASK}, 0, {abi.BULK_OFF}, {converge.REG_ON};"]
        args = [(".b64", REG_ADDR), (".b32", c.arg), (".b64", REG_ADDR2), (".b32", str(site)),
                (".b32", REG_CTAMASK if c.mask or on else "0")]
        call = _call(pred, abi.PROBE_BULK, args, ret=True, pre=code, comment=f"site {site}")
        return _guard(call, guard_pred), ""
    if ev is Event.MBARRIER:
        code = _address_code(c.address or "", widths, it)
        opcode, op = _op_word(c.op | (abi.MB_CLUSTER if c.space == abi.SPACE_CLUSTER else 0), on)
        args = [(".b64", REG_ADDR), (".b32", op), (".b32", c.arg), (".b32", str(site))]
        if c.result is None:
            # The checker answers 1 for an operation that would fault (uninitialised
            # mbarrier, arrival below zero): the instruction is then skipped (see below).
            call = _call(pred, abi.PROBE_MBAR, args, ret=True, pre=code + opcode,
                         comment=f"site {site}")
            return _guard(call, guard_pred), ""
        # A wait acquires only if it succeeded: pass the outcome (and, for the parity form,
        # the parity) once the instruction has run. A failed one is passed on the first
        # time and then every MB_WAIT_SAMPLE-th time in a row (the checker then looks for a
        # deadlock): a single poll of a barrier nobody initialised is still seen.
        arg = "%__cs_tok"
        post = [f"selp.u32 {REG_TOKEN}, 2, 0, {c.result};"]
        if c.op == abi.MB_WAIT_PARITY:
            post.append(f"add.u32 {REG_TOKEN}, {REG_TOKEN}, {c.arg};")
        skip = f"$__cs_spin_{site}"
        sample = [f"selp.u32 {REG_SPIN_LOW}, 0, 1, {c.result};",
                  f"mul.lo.u32 {REG_SPIN}, {REG_SPIN}, {REG_SPIN_LOW};",  # reset on success
                  f"add.u32 {REG_SPIN}, {REG_SPIN}, {REG_SPIN_LOW};",
                  f"and.b32 {REG_SPIN_LOW}, {REG_SPIN}, {abi.MB_WAIT_SAMPLE - 1};",
                  f"setp.ne.and.u32 {REG_SKIP}, {REG_SPIN_LOW}, 1, !{c.result};"]
        # (the first failure in a row says so: abi.MB_WAIT_FIRST)
        post += [f"set.eq.u32.u32 {REG_SPIN_LOW}, {REG_SPIN}, 1;",
                 f"and.b32 {REG_SPIN_LOW}, {REG_SPIN_LOW}, {abi.MB_WAIT_FIRST};",
                 f"or.b32 {REG_TOKEN}, {REG_TOKEN}, {REG_SPIN_LOW};"]
        if on:  # (a loop every lane runs, loops.py: the lane with REG_ON decides for all)
            sample += [f"and.pred {REG_SKIP}, {REG_SKIP}, {converge.REG_ON};",
                       f"vote.sync.any.pred {REG_SKIP}, {REG_SKIP}, {loops.REG_MASK};"]
            post += opcode
        sample.append(f"@{REG_SKIP} bra {skip};")
        args[2] = (".b32", arg)
        call = _call(pred, abi.PROBE_MBAR, args, ret=True, pre=code + post,
                     comment=f"site {site}")
        return "", "\n\t" + "\n\t".join(sample) + "\n\t" + call + f"\n{skip}:"
    if ev in (Event.READ, Event.WRITE, Event.ATOMIC, Event.ASYNC_WRITE):
        if _measure_skip(ev):
            return "", ""
        code = _address_code(c.address or "", widths, it)
        probe, rep = abi.access_probe(c.info, rep)
        args = [(".b64", REG_ADDR), (".b32", str(site)), (".b32", str(c.info))]
        if on or (pred and echoes):  # every lane that reaches it calls it (echo.py)
            code += _echo_code(converge.REG_ON if on else pred, c.info)
            args[0], args[2] = (".b64", REG_ADDR2), (".b32", REG_OP)
            pred = f"@!{REG_ECHO_NONE}"
        if rep is not None:
            args.append((".b32", str(rep)))
        call = _call(pred, probe, args, pre=code, comment=f"site {site}")
        return call + "\n\t", ""
    if ev in (Event.BAR_SYNC, Event.BAR_ARRIVE, Event.BAR_RED):
        a, b = _bar_operands(it, ev)
        mode = {Event.BAR_SYNC: abi.BAR_SYNC, Event.BAR_ARRIVE: abi.BAR_ARRIVE,
                Event.BAR_RED: abi.BAR_RED}[ev]
        parts = it.op_parts
        if parts[0] == "bar" or "aligned" in parts:  # bar.* is barrier.*.aligned
            mode |= abi.BAR_ALIGNED
        if step and ev is not Event.BAR_ARRIVE:  # (phase mode: every barrier is CTA-wide)
            return "", "\n\t" + _call(pred, abi.PROBE_BAR_STEP, [(".b32", str(site))],
                                       comment=f"site {site}")
        arrive = _call(pred, abi.PROBE_BAR_ARRIVE,
                       [(".b32", a), (".b32", b), (".b32", str(site)), (".b32", str(mode))],
                       ret=True, comment=f"site {site}")
        if ev is Event.BAR_ARRIVE:
            return arrive + "\n\t", ""
        wait = _call(pred, abi.PROBE_BAR_WAIT,
                     [(".b32", REG_TOKEN), (".b32", a), (".b32", str(site))],
                     comment=f"site {site}")
        return arrive + "\n\t", "\n\t" + wait
    if ev is Event.CLUSTER_BAR:  # barrier.cluster.arrive{.release,.relaxed} / .wait{.acquire}
        parts = it.op_parts
        op = abi.CLUSTER_WAIT if "wait" in parts else abi.CLUSTER_ARRIVE
        op |= (abi.BAR_ALIGNED if "aligned" in parts else 0) | (
            abi.BAR_RELAXED if "relaxed" in parts else 0)
        call = _call(pred, abi.PROBE_CLUSTER_BAR, [(".b32", str(op)), (".b32", str(site))],
                     comment=f"site {site}")
        return ("", "\n\t" + call) if op & 3 == abi.CLUSTER_WAIT else (call + "\n\t", "")
    if ev is Event.CLUSTER_FENCE:  # fence.acq_rel / .sc of cluster scope or wider: after it
        call = _call(pred, abi.PROBE_CLUSTER_BAR, [(".b32", str(abi.CLUSTER_FENCE)),
                                                   (".b32", str(site))], comment=f"site {site}")
        return "", "\n\t" + call
    if ev is Event.EXIT:
        return _call(pred, abi.PROBE_THREAD_EXIT, [(".b32", str(site))],
                     comment=f"site {site}") + "\n\t", ""
    raise AssertionError(ev)


__all__ = ["instrument", "Instrumented", "Unmodeled", "InstrumentError", "PTXSyntaxError"]
