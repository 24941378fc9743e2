"""The one table that maps PTX instructions to model events.

Supporting a new instruction is one row in `TABLE`. Anything that touches
shared memory or synchronises and matches no modelled row is returned as
`Event.UNMODELED` with a reason, so the rewriter can list it: nothing is
skipped silently.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from . import abi, wgmma_desc
from .ptx import INT_LITERAL, REGISTER, Item, ptx_int


class Event(str, Enum):
    READ = "access.read"
    WRITE = "access.write"
    ATOMIC = "access.atomic"
    ASYNC_WRITE = "async.cp"  # cp.async: a write by the warp's copy unit, pending until waited
    ASYNC_COMMIT = "async.commit"
    ASYNC_WAIT = "async.wait"
    ASYNC_WAIT_ALL = "async.wait_all"
    MBARRIER = "mbarrier"  # init / inval / arrive / expect_tx / complete_tx / test_wait / try_wait
    BULK_LOAD = "async.bulk"  # cp.async.bulk global -> shared, completing on an mbarrier
    BULK_STORE = "async.bulk_store"  # cp{.reduce}.async.bulk shared -> global: an async read
    BULK_COMMIT = "async.bulk_commit"  # cp.async.bulk.commit_group
    BULK_WAIT = "async.bulk_wait"  # cp.async.bulk.wait_group{.read} N: retires the reads
    WGMMA = wgmma_desc.EVENT  # wgmma.mma_async: the warpgroup's unit reads A and B (async)
    WGMMA_COMMIT = "async.wgmma_commit"  # wgmma.commit_group
    WGMMA_WAIT = "async.wgmma_wait"  # wgmma.wait_group N
    PROXY_FENCE = "fence.proxy_async"  # the warp's generic writes so far reach the async proxy
    TENSOR_LOAD = "async.tensor_load"  # cp.async.bulk.tensor global -> shared, on an mbarrier
    TENSOR_STORE = "async.tensor_store"  # cp.async.bulk.tensor shared -> global, bulk group
    BAR_SYNC = "barrier.sync"
    BAR_ARRIVE = "barrier.arrive"
    BAR_RED = "barrier.red"
    CLUSTER_BAR = "barrier.cluster"  # barrier.cluster.arrive / .wait: within the CTA, a barrier
    CLUSTER_FENCE = "fence.cluster"  # of cluster scope or wider: a later relaxed arrival releases
    WARP_SYNC = "warp.sync"  # intra-warp: program order already covers it
    FENCE = "fence"  # generic-proxy fences order nothing extra between warps
    EXIT = "exit"
    ADDRESS = "address"  # computes or tests smem addresses without touching memory
    UNMODELED = "unmodeled"  # touches smem / synchronises, not modelled yet

    @property
    def probed(self) -> bool:
        return self in _PROBED


_PROBED = {Event.READ, Event.WRITE, Event.ATOMIC, Event.BAR_SYNC, Event.BAR_ARRIVE,
           Event.BAR_RED, Event.CLUSTER_BAR, Event.CLUSTER_FENCE, Event.EXIT, Event.ASYNC_WRITE,
           Event.ASYNC_COMMIT, Event.ASYNC_WAIT,
           Event.ASYNC_WAIT_ALL, Event.MBARRIER, Event.BULK_LOAD, Event.BULK_STORE,
           Event.BULK_COMMIT, Event.BULK_WAIT, Event.WGMMA, Event.WGMMA_COMMIT,
           Event.WGMMA_WAIT, Event.PROXY_FENCE, Event.TENSOR_LOAD, Event.TENSOR_STORE}

_ACCESS_MODE = {Event.READ: abi.MODE_READ, Event.WRITE: abi.MODE_WRITE,
                Event.ATOMIC: abi.MODE_ATOMIC, Event.ASYNC_WRITE: abi.MODE_ASYNC_WRITE}


@dataclass(frozen=True)
class Row:
    """Opcode `prefix` (dot-separated parts); first matching row wins."""

    prefix: str
    event: Event
    access: bool = False  # classify by state space; the address is the '[..]' operand
    note: str = ""  # for UNMODELED rows: what will model it

    def matches(self, opcode: str) -> bool:
        return opcode.startswith(self.prefix) and opcode[len(self.prefix):][:1] in ("", ".", ":")


TABLE: tuple[Row, ...] = (
    # shared-memory accesses (state space decides: .shared / generic / other)
    Row("ld", Event.READ, access=True),
    Row("ldu", Event.READ, access=True),
    Row("st.async", Event.BULK_LOAD),  # a write completing tx bytes: see _async_store
    Row("st", Event.WRITE, access=True),
    Row("atom", Event.ATOMIC, access=True),
    Row("red.async", Event.BULK_LOAD),
    Row("red", Event.ATOMIC, access=True),
    Row("ldmatrix", Event.READ, access=True),
    Row("stmatrix", Event.WRITE, access=True),
    # CTA barriers
    Row("bar.warp.sync", Event.WARP_SYNC),
    Row("bar.sync", Event.BAR_SYNC),
    Row("bar.cta.sync", Event.BAR_SYNC),
    Row("barrier.sync", Event.BAR_SYNC),
    Row("barrier.cta.sync", Event.BAR_SYNC),
    Row("bar.arrive", Event.BAR_ARRIVE),
    Row("bar.cta.arrive", Event.BAR_ARRIVE),
    Row("barrier.arrive", Event.BAR_ARRIVE),
    Row("barrier.cta.arrive", Event.BAR_ARRIVE),
    Row("bar.red", Event.BAR_RED),
    Row("bar.cta.red", Event.BAR_RED),
    Row("barrier.red", Event.BAR_RED),
    Row("barrier.cta.red", Event.BAR_RED),
    Row("barrier.cluster", Event.CLUSTER_BAR),
    # fences of cluster scope or wider: what the warp did before one is released by its next
    # relaxed cluster arrival (in modules with no relaxed arrival, the rewriter makes them
    # plain FENCEs)
    *(Row(f"membar.{scope}", Event.CLUSTER_FENCE) for scope in ("gl", "sys")),
    *(Row(f"fence.{sem}.{scope}", Event.CLUSTER_FENCE) for sem in ("acq_rel", "sc")
      for scope in ("cluster", "gpu", "sys")),
    # fences that create no happens-before between warps in the model
    Row("membar", Event.FENCE),
    Row("fence.proxy.async", Event.PROXY_FENCE),  # the form decides: see _proxy_fence
    Row("fence.proxy.tensormap", Event.FENCE),
    Row("fence.mbarrier_init", Event.FENCE),  # makes inits visible to the cluster
    Row("fence", Event.FENCE),
    Row("ret", Event.EXIT),
    Row("cvta", Event.ADDRESS),
    Row("isspacep", Event.ADDRESS),
    Row("mapa", Event.ADDRESS),
    Row("getctarank", Event.ADDRESS),
    Row("mov", Event.ADDRESS),
    Row("prefetch", Event.ADDRESS),
    Row("prefetchu", Event.ADDRESS),
    Row("exit", Event.EXIT),
    # asynchronous machinery: modelled by the async issue
    Row("cp.async.bulk.prefetch", Event.FENCE),  # global -> L2 only, no smem
    Row("cp.async.commit_group", Event.ASYNC_COMMIT),
    Row("cp.async.wait_group", Event.ASYNC_WAIT),
    Row("cp.async.wait_all", Event.ASYNC_WAIT_ALL),
    Row("cp.async.ca", Event.ASYNC_WRITE, access=True),
    Row("cp.async.cg", Event.ASYNC_WRITE, access=True),
    Row("cp.async.mbarrier.arrive", Event.MBARRIER),  # the cp.async unit arrives
    Row("cp.async.bulk.shared::cluster.global.mbarrier", Event.BULK_LOAD),
    Row("cp.async.bulk.shared::cta.global.mbarrier", Event.BULK_LOAD),
    # shared -> another CTA's shared memory, completing on its mbarrier (see _bulk_load)
    Row("cp.async.bulk.shared::cluster.shared::cta.mbarrier", Event.BULK_LOAD),
    Row("cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier", Event.BULK_LOAD),
    Row("cp.async.bulk.global.shared::cta.bulk_group", Event.BULK_STORE),
    Row("cp.reduce.async.bulk.global.shared::cta.bulk_group", Event.BULK_STORE),
    Row("cp.async.bulk.commit_group", Event.BULK_COMMIT),
    Row("cp.async.bulk.wait_group", Event.BULK_WAIT),  # and .read: both retire the reads
    # TMA tensor copies (tile mode; the footprint comes from the tensor map, see _tensor)
    *(Row(f"cp.async.bulk.tensor.{n}d.{dst}", Event.TENSOR_LOAD)
      for n in range(1, 6) for dst in ("shared::cluster", "shared::cta")),
    *(Row(f"cp.async.bulk.tensor.{n}d.global", Event.TENSOR_STORE) for n in range(1, 6)),
    # a TMA reduction into global memory reads its box from shared memory as a store does
    *(Row(f"cp.reduce.async.bulk.tensor.{n}d.global", Event.TENSOR_STORE) for n in range(1, 6)),
    Row("cp.async", Event.UNMODELED, note="this cp.async form (e.g. a bulk copy into another "
        "CTA's shared memory): not checked yet; the shared memory it reads and writes is not "
        "tracked"),
    Row("cp.reduce.async", Event.UNMODELED, note="bulk reduction into another CTA's shared memory "
        "(.shared::cluster): not checked yet; the shared memory it reads and writes is not "
        "tracked"),
    # the 128-byte tensor map a kernel builds in shared memory (Triton's device-side tensor
    # descriptors): a field rewritten, and the map copied to global memory (_tensormap)
    Row("tensormap.replace", Event.WRITE),
    Row("tensormap.cp_fenceproxy", Event.READ),
    Row("mbarrier.pending_count", Event.ADDRESS),  # decodes a state token, no smem
    Row("mbarrier", Event.MBARRIER),
    Row("wgmma.fence", Event.FENCE),  # orders register accesses only, no shared memory
    Row("wgmma.mma_async", Event.WGMMA),
    Row("wgmma.commit_group", Event.WGMMA_COMMIT),
    Row("wgmma.wait_group", Event.WGMMA_WAIT),
    Row("wgmma", Event.UNMODELED, note="this wgmma instruction is not in consan's event "
        "table: not checked; the shared memory it reads is not tracked"),
    Row("tcgen05", Event.UNMODELED, note="tcgen05 (tensor memory) instruction: not checked "
        "yet; the shared memory it reads and the ordering it creates are not tracked"),
    Row("clusterlaunchcontrol", Event.UNMODELED, note="cluster launch control: not "
        "checked yet; the response it writes to shared memory is not tracked"),
)

_STATE_SPACES = {"global", "local", "param", "const", "tex"}
_TYPE_BYTES = re.compile(r"^[busf](8|16|32|64|128)$|^(b|f)16x2$|^bf16(x2)?$|^e[45]m[23]x[24]$")


@dataclass(frozen=True)
class Classified:
    event: Event
    row: Row | None = None
    size: int = 0  # bytes per lane (accesses)
    space: int = abi.SPACE_SHARED
    shape: int = abi.SHAPE_PLAIN
    address: str | None = None  # the '[..]' operand, without brackets
    reason: str = ""  # for UNMODELED; for a modelled event, what the model leaves out
    op: int = 0  # MBARRIER: abi.MB_*; WGMMA: the probe's info word; tensor copies: the rank
    arg: str = "0"  # MBARRIER: count / bytes operand; waits: the parity or state operand;
    # tensor copies: the tensor-map address operand
    result: str | None = None  # MBARRIER waits: the predicate the instruction sets
    idem: bool = False  # WRITE: an immediate to a constant address (abi.INFO_IDEM)
    mask: str | None = None  # BULK_LOAD / TENSOR_LOAD .multicast::cluster: the ctaMask operand

    @property
    def mode(self) -> int:
        return _ACCESS_MODE[self.event]

    @property
    def info(self) -> int:
        return abi.access_info(self.size, self.mode, self.space, self.shape, self.idem)


def _elem_bytes(parts: list[str]) -> int:
    for p in reversed(parts):
        m = _TYPE_BYTES.match(p)
        if m:
            if m.group(1):
                return int(m.group(1)) // 8
            if p.endswith("x2") or p.startswith("e"):
                return 4
            return 2
        if p == "pred":
            return 1
    return 4


def _space(parts: list[str]) -> int | None:
    """abi SPACE_* for accesses, or None if the access is not to smem."""
    for p in parts:
        if p == "shared" or p == "shared::cta":
            return abi.SPACE_SHARED
        if p == "shared::cluster":
            return abi.SPACE_CLUSTER
        if p in _STATE_SPACES:
            return None
    return abi.SPACE_GENERIC


def _access(it: Item, row: Row, shared_symbols: set[str],
            constants: Mapping[str, str]) -> Classified | None:
    parts = it.op_parts
    space = _space(parts[1:])
    addr = next((o for o in it.operands if o.startswith("[")), None)
    if addr is None:
        return None
    addr = addr[1:-1].strip()
    if space == abi.SPACE_GENERIC:
        base = re.split(r"[+\-\s]", addr, maxsplit=1)[0]
        if not base.startswith("%") and not base[:1].isdigit():
            # a named variable: shared only if it is declared .shared
            if base in shared_symbols:
                space = abi.SPACE_SHARED
            else:
                return None
    if space is None:
        return None
    if space == abi.SPACE_CLUSTER and not multicast_model_on():
        return Classified(Event.UNMODELED, row, reason="access to another CTA's shared memory "
                          "(.shared::cluster, distributed shared memory): not checked "
                          "(CONSAN_MULTICAST=0)")
    shape = abi.SHAPE_PLAIN
    if row.event is Event.ASYNC_WRITE:  # cp.async [dst], [src], cp-size{, src-size}
        try:
            size = ptx_int(it.operands[2])
        except (IndexError, ValueError):
            return Classified(Event.UNMODELED, row, reason="cp.async whose copy size is a "
                              "register, not a constant: not checked; the bytes it writes are "
                              "not tracked")
        if size not in (4, 8, 16):  # (PTX knows no other; the probe's info word holds 1..255)
            return Classified(Event.UNMODELED, row, reason=f"cp.async of {size} bytes (the "
                              "copy size is 4, 8 or 16): not checked; the bytes it writes are "
                              "not tracked")
        return Classified(row.event, row, size=size, space=space, address=addr)
    if row.prefix in ("ldmatrix", "stmatrix"):
        num = next((p for p in parts if p in ("x1", "x2", "x4")), "x1")
        shape = int(num[1])
        size = 16
    else:
        vec = next((int(p[1:]) for p in parts if p in ("v2", "v4", "v8")), 1)
        size = _elem_bytes(parts) * vec
    idem = row.prefix == "st" and size < 16 and _idempotent(addr, it.operands[1:], constants)
    return Classified(row.event, row, size=size, space=space, shape=shape, address=addr,
                      idem=idem, reason=_ordering(parts, space))


_ORDERING_NOT_MODELLED = ("acquire/release ordering through shared memory (a barrier, latch or "
                          "flag built from atomics): the access is checked, the order it gives "
                          "other warps is not modelled yet, so accesses it orders may be "
                          "reported as races")


def _ordering(parts: list[str], space: int) -> str:
    """Why an access is modelled only in part: an acquire load or a release (or acq_rel)
    store or atomic on shared memory synchronises warps, and the model takes it as a plain
    access (cuda::barrier with a completion function, cuda::latch, cg::tiled_partition<64>
    compile to these). A generic address counts where its scope is the CTA's or the
    cluster's: an object of the block, or a flag in a peer CTA's shared memory."""
    if not any(p in ("acquire", "release", "acq_rel") for p in parts):
        return ""
    near = "cta" in parts or "cluster" in parts
    return _ORDERING_NOT_MODELLED if space != abi.SPACE_GENERIC or near else ""


_IMMEDIATE = re.compile(rf"^-?(?:{INT_LITERAL}|0[fF][0-9a-fA-F]{{8}}|0[dD][0-9a-fA-F]{{16}})$")


def _idempotent(addr: str, values: list[str], constants: Mapping[str, str]) -> bool:
    """A store whose every run writes the same bytes in the same place: its address names
    no register (a shared symbol or a number, plus a constant) and its value is an
    immediate, or a register that only ever holds one (a vector's: all of them). Sizes of
    16 bytes take the 16-byte probe, which does not look for it."""
    if len(values) != 1 or "%" in addr:
        return False
    items = [v.strip() for v in values[0].strip().strip("{}").split(",")]
    return all(_IMMEDIATE.match(constants.get(v, v)) for v in items)


def constant_registers(body: list[Item]) -> dict[str, str]:
    """Registers of a function defined once, by an unpredicated `mov` of an immediate
    (NVRTC puts `flag = 1` as `mov.u32 %r1, 1; st.shared.u32 [flag], %r1`): each holds
    that immediate wherever it is read. Any other write of the name (any instruction whose
    first operand names it, in any scope) disqualifies it."""
    defs: dict[str, int] = {}
    value: dict[str, str] = {}
    for it in body:
        if not it.is_instruction or not it.operands or it.operands[0].startswith("["):
            continue
        for r in REGISTER.findall(it.operands[0]):
            defs[r] = defs.get(r, 0) + 1
            src = it.operands[1].strip() if len(it.operands) == 2 else ""
            if it.op_parts[0] == "mov" and it.pred is None and _IMMEDIATE.match(src):
                value[r] = src
    return {r: v for r, v in value.items() if defs[r] == 1}


_MB_OPS = (("init", abi.MB_INIT), ("inval", abi.MB_INVAL),
           ("arrive_drop", abi.MB_ARRIVE_DROP), ("arrive", abi.MB_ARRIVE),
           ("expect_tx", abi.MB_EXPECT_TX), ("complete_tx", abi.MB_COMPLETE_TX),
           ("test_wait", abi.MB_WAIT_TOKEN), ("try_wait", abi.MB_WAIT_TOKEN))


def _mbarrier(it: Item, row: Row) -> Classified:
    parts = it.op_parts
    if parts[0] == "cp":  # cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [mbar]
        if "shared::cluster" in parts or _space(parts[3:]) != abi.SPACE_SHARED:
            return Classified(Event.UNMODELED, row, reason="cp.async.mbarrier.arrive on a "
                              "generic or .shared::cluster address: not checked yet; accesses "
                              "ordered only by it may be reported")
        if not it.operands or not it.operands[0].startswith("["):
            return Classified(Event.UNMODELED, row, reason="cp.async.mbarrier.arrive without "
                              "an address operand: not checked")
        return Classified(Event.MBARRIER, row, address=it.operands[0][1:-1].strip(),
                          op=abi.MB_CP_ARRIVE, arg="1" if "noinc" in parts else "0")
    op = next((code for name, code in _MB_OPS if parts[1] == name), None)
    if op is None:
        return Classified(Event.UNMODELED, row, reason=f"mbarrier.{parts[1]}: not checked yet")
    if _space(parts[2:]) == abi.SPACE_GENERIC:
        return Classified(Event.UNMODELED, row, reason="mbarrier operation through a generic "
                          "address: not checked yet (the .shared forms are)")
    ops = it.operands
    i = next((k for k, o in enumerate(ops) if o.startswith("[")), None)
    if i is None:
        return Classified(Event.UNMODELED, row, reason="mbarrier operation without an address "
                          "operand: not checked")
    addr = ops[i][1:-1].strip()
    after = ops[i + 1] if i + 1 < len(ops) else None
    if op in (abi.MB_ARRIVE, abi.MB_ARRIVE_DROP) and "expect_tx" in parts:
        op = abi.MB_ARRIVE_EXPECT_TX if op == abi.MB_ARRIVE else abi.MB_ARRIVE_DROP_EXPECT_TX
    space = abi.SPACE_CLUSTER if "shared::cluster" in parts else abi.SPACE_SHARED
    if op == abi.MB_WAIT_TOKEN:
        if "parity" in parts:
            op = abi.MB_WAIT_PARITY
        return Classified(Event.MBARRIER, row, address=addr, op=op, arg=after or "0",
                          result=ops[0], space=space)
    default = "0" if op in (abi.MB_INVAL,) else "1"
    return Classified(Event.MBARRIER, row, address=addr, op=op, arg=after or default,
                      space=space)


_MULTICAST_NOT_CHECKED = ("multicast copy (.multicast::cluster) into every CTA of its mask: "
                          "not checked yet; the bytes it writes are not tracked")


def multicast_model_on() -> bool:
    """Multicast copies and accesses to a peer CTA's shared memory are modelled (checker/
    multicast.h, dsmem.h: the mailboxes) unless CONSAN_MULTICAST=0, which lists them as not
    checked instead (a way out should the model misjudge a kernel)."""
    return os.environ.get("CONSAN_MULTICAST", "1") != "0"


# Writes whose footprint in shared memory is whole aligned 16-byte chunks when their size
# is a multiple of 16 (PTX requires a vector store and a cp.async to be aligned to their
# size), and events that rule chunk granules out (atomics: words of 4 or 8 bytes, less
# than a chunk).
CHUNK_SIZED = frozenset({Event.WRITE, Event.ASYNC_WRITE})
NOT_CHUNKED = frozenset({Event.ATOMIC})


def whole_chunks(c: Classified) -> bool:
    """Whether the event leaves chunk granules exact (abi.CHUNK_GRANULE_BYTES). Bulk and
    tensor copies are (PTX has their shared-memory bytes 16-byte aligned, in multiples
    of 16), st.async only of a 16-byte vector. A read of any size is: aligned to its size,
    it lies in one chunk, two reads never conflict, and every write that reaches its chunk
    (whole chunks all) reaches its bytes. An 8-byte mbarrier's chunk is marked whole; a read
    of less than 16 bytes there is judged by whether it reaches a live mbarrier's bytes
    (docs/model.md, *Chunk granules*)."""
    if c.event in NOT_CHUNKED:
        return False
    if c.event is Event.READ:
        return True
    if c.event is Event.BULK_LOAD and c.size:  # (st.async / red.async: the element's bytes)
        return c.size % abi.CHUNK_GRANULE_BYTES == 0
    return c.event not in CHUNK_SIZED or c.size % abi.CHUNK_GRANULE_BYTES == 0


def chunk_granules_on() -> bool:
    """Modules of whole 16-byte chunks take chunk granules unless CONSAN_CHUNK_GRANULES=0
    (the 4-byte granules of every other module: for a side-by-side measurement)."""
    return os.environ.get("CONSAN_CHUNK_GRANULES", "1") != "0"


def _bulk_load(it: Item, row: Row) -> Classified:
    """cp.async.bulk [dst], [src], size, [mbar]: the copy engine writes dst, then complete_tx."""
    if row.prefix in ("st.async", "red.async"):
        return _async_store(it, row)
    ops = it.operands
    multicast = "multicast::cluster" in it.op_parts
    if multicast and not multicast_model_on():
        return Classified(Event.UNMODELED, row, reason=_MULTICAST_NOT_CHECKED)
    if len(ops) < (5 if multicast else 4):
        return Classified(Event.UNMODELED, row, reason="bulk copy whose operands consan does not "
                          "recognise: not checked; the bytes it writes are not tracked")
    # a copy out of this CTA's shared memory (into a peer's): its source bytes are read by
    # the copy until the peer's mbarrier completes, which this CTA never learns
    into_peer = {"shared::cta", "shared::cluster"} <= set(it.op_parts) and \
        "global" not in it.op_parts
    if into_peer and not multicast_model_on():
        return Classified(Event.UNMODELED, row, reason="bulk copy into another CTA's shared "
                          "memory: not checked (CONSAN_MULTICAST=0); the bytes it reads and "
                          "writes are not tracked")
    src = ("the bytes it reads from this CTA's shared memory are not tracked yet (what it "
           "writes in the other CTA is)") if into_peer else ""
    return Classified(Event.BULK_LOAD, row, address=ops[0][1:-1].strip(), arg=ops[2],
                      result=ops[3][1:-1].strip(), mask=ops[4].strip() if multicast else None,
                      reason=src)


def _async_store(it: Item, row: Row) -> Classified:
    """st.async / red.async ...mbarrier::complete_tx::bytes{.vec}.type [a], b, [mbar]: a write
    of the element (or vector) at `a` that completes its bytes on `mbar` -- the model of a
    bulk copy of that many bytes (its mbarrier's copy engine writes; visible to the phase
    wait). `a` and `mbar` are .shared::cluster addresses: the checker notes another CTA's."""
    parts, ops = it.op_parts, it.operands
    if "mbarrier::complete_tx::bytes" not in parts or len(ops) < 3 or not ops[2].startswith("["):
        return Classified(Event.UNMODELED, row, reason=f"{row.prefix} without an mbarrier "
                          "completion: not checked; the bytes it writes are not tracked")
    if _space(parts[1:]) == abi.SPACE_GENERIC:
        return Classified(Event.UNMODELED, row, reason=f"{row.prefix} through a generic address: "
                          "not checked yet (the .shared::cluster form is)")
    vec = next((int(p[1:]) for p in parts if p in ("v2", "v4", "v8")), 1)
    size = _elem_bytes(parts) * vec
    return Classified(Event.BULK_LOAD, row, address=ops[0][1:-1].strip(), arg=str(size),
                      result=ops[2][1:-1].strip(), size=size)


def _bulk_store(it: Item, row: Row) -> Classified:
    """cp{.reduce}.async.bulk.global.shared::cta.bulk_group [dst], [src], size{, ...}."""
    ops = it.operands
    if len(ops) < 3 or not ops[1].startswith("["):
        return Classified(Event.UNMODELED, row, reason="bulk store whose operands consan does not "
                          "recognise: not checked; the shared memory it reads is not tracked")
    return Classified(Event.BULK_STORE, row, address=ops[1][1:-1].strip(), arg=ops[2])
def _wgmma(it: Item, row: Row) -> Classified:
    """mma_async d, a-desc | {a}, b-desc, ...: the descriptors go to the probe (`address`:
    A's, or None when A is in registers; `arg`: B's), with the shape as its info word."""
    try:
        shape = wgmma_desc.parse_mma(it.opcode, it.operands)
    except wgmma_desc.NotModeled as exc:
        return Classified(Event.UNMODELED, row, reason=str(exc))
    ops = it.operands
    return Classified(Event.WGMMA, row, address=ops[1] if shape.a_smem else None, arg=ops[2],
                      op=shape.info)


def _proxy_fence(it: Item, row: Row) -> Classified:
    """fence.proxy.async{.shared::cta,.shared::cluster} and the release form restricted to
    shared::cta order the warp's generic smem writes before its later async-proxy reads;
    `.global` covers no shared memory and the acquire form orders async accesses before
    generic ones, which the model never needs (async writes are seen through their wait)."""
    parts = it.op_parts
    if parts[2] == "async":
        space = ".".join(parts[3:])
        if space in ("", "shared::cta", "shared::cluster"):
            return Classified(Event.PROXY_FENCE, row)
        if space == "global":
            return Classified(Event.FENCE, row)
    elif parts[2] == "async::generic" and len(parts) == 6:
        if parts[3:5] == ["release", "sync_restrict::shared::cta"]:
            return Classified(Event.PROXY_FENCE, row)
        if parts[3:5] == ["acquire", "sync_restrict::shared::cluster"]:
            return Classified(Event.FENCE, row)
    return Classified(Event.UNMODELED, row, reason=f"{it.opcode}: this proxy fence is not checked "
                      "yet; accesses ordered only by it may be reported")


def _tensor(it: Item, row: Row) -> Classified:
    """cp.async.bulk.tensor.Nd, tile mode.

    load:  [dst], [tensorMap, {coords}], [mbar] {, ctaMask} {, cachePolicy}
    store: [tensorMap, {coords}], [src] {, cachePolicy}
    """
    parts, ops = it.op_parts, it.operands
    load = row.event is Event.TENSOR_LOAD
    k = parts.index("tensor")  # (cp.async.bulk.tensor or cp.reduce.async.bulk.tensor)
    rank = int(parts[k + 1][0])
    mode = next((p for p in parts[k + 4:] if p.startswith(("tile", "im2col"))), "tile")
    if mode != "tile":
        return Classified(Event.UNMODELED, row, reason=f".{mode} tensor copy: not checked yet; its "
                          "shared-memory footprint is not the box, so the bytes it writes are "
                          "not tracked")
    if any(p.startswith("cta_group") for p in parts):
        return Classified(Event.UNMODELED, row, reason="tensor copy for a CTA pair (.cta_group): "
                          "not checked yet; the bytes it writes are not tracked")
    need = "mbarrier::complete_tx::bytes" if load else "bulk_group"
    brackets = [o for o in ops if o.startswith("[")]
    if need not in parts or len(brackets) < (3 if load else 2):
        return Classified(Event.UNMODELED, row, reason="tensor copy in a form consan does not "
                          "recognise: not checked; the shared memory it touches is not tracked")
    mask = None
    if load and "multicast::cluster" in parts and not multicast_model_on():
        return Classified(Event.UNMODELED, row, reason=_MULTICAST_NOT_CHECKED)
    if load and "multicast::cluster" in parts:  # [dst], [map, {..}], [mbar], ctaMask, ...
        after = ops[ops.index(brackets[2]) + 1:]
        if not after:
            return Classified(Event.UNMODELED, row, reason="multicast tensor copy without its "
                              "ctaMask operand: not checked; the bytes it writes are not "
                              "tracked")
        mask = after[0].strip()
    tmap = brackets[1 if load else 0][1:-1].split(",")[0].strip()
    if load:
        return Classified(Event.TENSOR_LOAD, row, address=brackets[0][1:-1].strip(), arg=tmap,
                          result=brackets[2][1:-1].strip(), op=rank, mask=mask)
    return Classified(Event.TENSOR_STORE, row, address=brackets[1][1:-1].strip(), arg=tmap,
                      op=rank)


def _tensormap(it: Item, row: Row) -> Classified | None:
    """tensormap.replace.mode.field{.ss}.b1024.type [map], ...: one field of the 128-byte map
    rewritten in place, taken as a write of all of it (the fields' places in it are not
    documented). tensormap.cp_fenceproxy.global.shared::cta...sync.aligned [dst], [src],
    size: the map read from shared memory. A map in global memory touches no shared memory."""
    parts, ops = it.op_parts, it.operands
    if "global" in parts and row.event is Event.WRITE:
        return None
    if "shared::cta" not in parts and "shared" not in parts:
        return Classified(Event.UNMODELED, row, reason=f"{it.opcode} through a generic address: "
                          "not checked; a tensor map in shared memory is not tracked")
    brackets = [o for o in ops if o.startswith("[")]
    replace = row.event is Event.WRITE
    try:
        size = abi.TMAP_BYTES if replace else ptx_int(ops[2])
    except (IndexError, ValueError):
        size = 0
    if len(brackets) < (1 if replace else 2) or size != abi.TMAP_BYTES:
        return Classified(Event.UNMODELED, row, reason=f"{it.opcode} in a form consan does not "
                          "recognise: not checked; the tensor map's bytes in shared memory are "
                          "not tracked")
    address = brackets[0 if replace else 1][1:-1].strip()
    return Classified(row.event, row, size=size, space=abi.SPACE_SHARED, address=address)


def _touches_sync_or_smem(it: Item, shared_symbols: set[str]) -> bool:
    parts = it.op_parts
    if any(p.startswith("shared") for p in parts):
        return True
    if parts[0] == "wmma" and parts[1:2] in (["load"], ["store"]) and _space(parts[2:]) is not None:
        return True  # (a generic address: shared memory for wmma tiles staged there)
    if parts[0] in ("bar", "barrier", "mbarrier", "membar", "fence", "wgmma", "tcgen05") or \
            it.opcode.startswith("cp."):
        return True
    return any(o.startswith("[") and re.split(r"[+\-\s]", o[1:-1].strip())[0] in shared_symbols
               for o in it.operands)


@functools.lru_cache(maxsize=4096)
def _first_row(opcode: str) -> Row | None:
    """The first row of TABLE that matches `opcode` (it alone decides): looked up once per
    opcode, not once per instruction, which went through the rows one by one."""
    return next((row for row in TABLE if row.matches(opcode)), None)


def classify(it: Item, shared_symbols: set[str] = frozenset(), in_entry: bool = True,
             constants: Mapping[str, str] | None = None) -> Classified | None:
    """The model event of one instruction, or None if it is irrelevant. `constants`: the
    function's registers that only ever hold one immediate (`constant_registers`)."""
    if not it.is_instruction:
        return None
    row = _first_row(it.opcode)
    if row is not None:
        if row.access:
            return _access(it, row, shared_symbols, constants or {})
        if row.event in (Event.READ, Event.WRITE):  # (not by state space: the tensor map's)
            return _tensormap(it, row)
        if row.event is Event.EXIT and it.opcode.startswith("ret") and not in_entry:
            return None  # returning from a .func is not leaving the kernel
        if row.event is Event.ADDRESS:
            return None
        if row.event is Event.UNMODELED:
            return Classified(Event.UNMODELED, row, reason=row.note)
        if row.event is Event.MBARRIER:
            return _mbarrier(it, row)
        if row.event is Event.BULK_LOAD:
            return _bulk_load(it, row)
        if row.event is Event.BULK_STORE:
            return _bulk_store(it, row)
        if row.event is Event.WGMMA:
            return _wgmma(it, row)
        if row.event is Event.PROXY_FENCE:
            return _proxy_fence(it, row)
        if row.event is Event.BULK_WAIT and not it.operands:
            return Classified(Event.UNMODELED, row, reason="cp.async.bulk.wait_group "
                              "without a group count: not checked; accesses after it may be "
                              "reported")
        if row.event is Event.WGMMA_WAIT and not it.operands:
            return Classified(Event.UNMODELED, row, reason="wgmma.wait_group without a "
                              "group count: not checked; accesses after it may be reported")
        if row.event in (Event.TENSOR_LOAD, Event.TENSOR_STORE):
            return _tensor(it, row)
        return Classified(row.event, row)
    if _touches_sync_or_smem(it, shared_symbols):
        return Classified(Event.UNMODELED, None, reason="touches shared memory or synchronises and "
                          "is not in consan's event table: not checked")
    return None
