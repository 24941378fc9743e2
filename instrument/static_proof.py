"""Prove before a launch that a kernel's shared-memory accesses cannot race.

Triton's reductions (softmax, layer norm) and many CUDA tiles use shared memory the same
way: every thread runs one straight line of code, CTA-wide `bar.sync 0` cut it into
intervals, and each address is a function of the thread index and constants alone. Then
every access of the launch is known before it runs: the addresses and predicates are
evaluated for every thread of the `.reqntid` block, and the model's rules
(docs/model.md, "Kernels proven before launch") are checked on them directly:

- within an interval, no byte one warp writes is read or written by another warp (warps
  are the model's logical threads; the barriers order all else);
- every byte read was written before it: by some warp in an earlier interval, or by the
  same warp earlier in the same one, by a write certain to run (its predicate known).

A kernel that passes cannot give a finding, so the front ends run it natively and count
it as checked (the dynamic checker's instrumented build is still made, for
`consan.prepare`). Whatever the evaluation cannot decide (a branch around an access or a
barrier, an address from memory or a parameter, a call, any async or mbarrier operation)
refuses the proof, and the kernel is instrumented as before: a refusal loses nothing.

Branches are allowed around code that touches no shared memory and no barrier (a loop over
a row's columns): every thread still reaches the code after it once, and the registers that
code writes are unknown from there on.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .coalesce import split_address
from .events import Classified, Event
from .ptx import SPECIAL_REGISTER, Function, Item, ptx_int

_NO_DEST = ("st", "red", "bar", "barrier", "prefetch", "fence", "membar", "bra", "ret",
            "exit", "trap", "brkpt", "nanosleep", "pmevent")
_REQNTID = re.compile(r"\.reqntid\s+(\d+)\s*(?:,\s*(\d+))?\s*(?:,\s*(\d+))?")
_TYPE = re.compile(r"^([bus])(8|16|32|64)$")
_ALLOWED = (Event.FENCE, Event.WARP_SYNC)  # order nothing the proof relies on
_M64 = (1 << 64) - 1


@dataclass(frozen=True)
class Proof:
    """A kernel whose every launch is race-free and reads only bytes it wrote."""

    kernel: str
    threads: int
    accesses: int  # shared-memory instructions
    barriers: int  # CTA-wide barriers

    def sentence(self) -> str:
        return (f"proven race-free before launch ({self.accesses} shared-memory "
                f"access{'' if self.accesses == 1 else 'es'} between {self.barriers} CTA "
                f"barrier{'' if self.barriers == 1 else 's'}, {self.threads} threads, every "
                "byte read written first); it runs natively")


class _Refused(Exception):
    pass


@dataclass
class _Val:
    """A register's value in every thread: `sym` + a (a shared symbol's address plus an
    offset) or a plain integer when sym is None; uint64 arrays, one entry per thread."""

    sym: str | None
    a: np.ndarray


@dataclass
class Access:
    """One shared-memory instruction as every thread that may run it runs it."""

    interval: int  # how many CTA barriers precede it
    warp: np.ndarray  # the warp of each thread that may run it
    start: np.ndarray  # its first byte, for those threads
    size: int
    write: bool
    certain: np.ndarray  # of those threads, the ones certain to run it
    line: int


def reqntid(fn: Function, header_items: list[Item]) -> tuple[int, int, int] | None:
    for it in header_items:
        m = _REQNTID.search(it.text)
        if m:
            return tuple(int(g) if g else 1 for g in m.groups())  # type: ignore[return-value]
    return None


def prove(fn: Function, header_items: list[Item],
          classify: Callable[[Item], Classified | None], shared: set[str]) -> Proof | str:
    """The function's proof, or why there is none (a sentence for tests and --verbose)."""
    if not fn.is_entry:
        return "a device function (only kernels are proven)"
    dims = reqntid(fn, header_items)
    if dims is None:
        return "no .reqntid: the block size is not known before launch"
    try:
        return _Prover(fn, dims, classify, shared).run()
    except _Refused as why:
        return str(why)
    except Exception as exc:  # noqa: BLE001 - an instruction the evaluator misread: no proof
        return f"the proof could not evaluate this kernel ({type(exc).__name__}: {exc})"


def trace(fn: Function, header_items: list[Item],
          classify: Callable[[Item], Classified | None], shared: set[str]) -> list[Access]:
    """The accesses as evaluated, before the rules judge them (for tests that replay them
    into the checker); a refusal of the evaluation itself raises ValueError."""
    dims = reqntid(fn, header_items)
    if dims is None:
        raise ValueError("no .reqntid")
    p = _Prover(fn, dims, classify, shared)
    p.judge = False
    try:
        p.run()
    except _Refused as why:
        raise ValueError(str(why)) from None
    return p.accesses


def _width(parts: list[str]) -> tuple[int, bool] | None:
    """(bits, signed) of an instruction's last integer type suffix; None for other types."""
    for p in reversed(parts):
        m = _TYPE.match(p)
        if m:
            return int(m.group(2)), m.group(1) == "s"
        if p in ("pred",) or p.startswith("f") and p[1:].isdigit():
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
                 classify: Callable[[Item], Classified | None], shared: set[str]) -> None:
        self.fn, self.classify, self.shared = fn, classify, shared
        self.n = dims[0] * dims[1] * dims[2]
        t = np.arange(self.n, dtype=np.uint64)
        nx, ny = np.uint64(dims[0]), np.uint64(dims[1])
        self.special = {
            "%tid.x": t % nx, "%tid.y": (t // nx) % ny, "%tid.z": t // (nx * ny),
            "%ntid.x": self._const(dims[0]), "%ntid.y": self._const(dims[1]),
            "%ntid.z": self._const(dims[2]), "%laneid": t % np.uint64(32)}
        self.warp = t // np.uint64(32)
        self.regs: dict[str, _Val | None] = {}
        self.preds: dict[str, np.ndarray | None] = {}
        self.accesses: list[Access] = []
        self.barriers = 0
        self.sym: str | None = None  # the one shared symbol its accesses go through
        self.judge = True

    def _const(self, v: int) -> np.ndarray:
        return np.full(self.n, v & _M64, dtype=np.uint64)

    # ------------------------------------------------------------ control flow
    def _regions(self, body: list[Item]) -> list[tuple[int, int]]:
        """Index spans of `body` that branches jump within (merged where they overlap)."""
        labels = {it.label: i for i, it in enumerate(body) if it.kind == "label"}
        spans = []
        for i, it in enumerate(body):
            if not it.is_instruction:
                continue
            op = it.op_parts[0]
            if op in ("brx", "call", "exit", "trap", "brkpt"):
                raise _Refused(f"line {it.line}: `{op}` (only branches around code without "
                               "shared memory or barriers are followed)")
            if op == "bra":
                t = labels.get(it.operands[0].strip() if it.operands else "")
                if t is None:
                    raise _Refused(f"line {it.line}: a branch to no label of the kernel")
                spans.append((min(i, t), max(i, t)))
        spans.sort()
        merged: list[tuple[int, int]] = []
        for lo, hi in spans:
            if merged and lo <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))
        return merged

    def run(self) -> Proof:
        body = self.fn.body
        regions = self._regions(body)
        starts = {lo: hi for lo, hi in regions}
        last = max((i for i, it in enumerate(body) if it.is_instruction), default=-1)
        i = 0
        while i < len(body):
            if i in starts:
                self._skip(body[i:starts[i] + 1])
                i = starts[i] + 1
                continue
            it = body[i]
            if it.is_instruction:
                self._step(it, i == last)
            i += 1
        if self.judge:
            self._judge()
        return Proof(self.fn.name, self.n, len({a.line for a in self.accesses}), self.barriers)

    def _skip(self, items: list[Item]) -> None:
        """A region some threads may run any number of times: it must not touch shared memory
        or synchronise, and what it writes is unknown after it."""
        for it in items:
            if not it.is_instruction:
                continue
            c = self.classify(it)
            if it.op_parts[0] in ("ret", "exit") or (c is not None and c.event not in _ALLOWED):
                raise _Refused(f"line {it.line}: `{it.opcode}` under a branch (the proof "
                               "needs every thread to run each shared access and barrier once)")
            for r in self._dests(it):
                self.regs.pop(r, None)
                self.preds.pop(r, None)

    # ------------------------------------------------------------ one instruction
    def _step(self, it: Item, last: bool) -> None:
        c = self.classify(it)
        op = it.op_parts[0]
        if op in ("ret", "exit"):
            if not last or it.pred:
                raise _Refused(f"line {it.line}: `{op}` before the kernel's end")
            return
        if c is not None and c.event not in _ALLOWED:
            self._event(it, c)
        self._assign(it)

    def _event(self, it: Item, c: Classified) -> None:
        if c.event is Event.BAR_SYNC:
            ops = it.operands
            if it.pred or not ops or ops[0].strip() != "0" or \
                    (len(ops) > 1 and ops[1].strip() not in ("0", str(self.n))) or \
                    "red" in it.op_parts or "arrive" in it.op_parts:
                raise _Refused(f"line {it.line}: `{it.opcode} {', '.join(ops)}` is not a "
                               "barrier every thread of the CTA waits at")
            self.barriers += 1
            return
        if c.event not in (Event.READ, Event.WRITE) or c.reason or \
                it.op_parts[0] not in ("ld", "st") or "shared" not in it.op_parts:
            raise _Refused(f"line {it.line}: `{it.opcode}` ({c.event.value}) is not a plain "
                           "load or store of the CTA's shared memory")
        parts = split_address(c.address or "")
        if parts is None:
            raise _Refused(f"line {it.line}: address `{c.address}` not understood")
        base, off = parts
        if base in self.shared:
            v: _Val | None = _Val(base, self._const(0))
        else:
            v = self.regs.get(base)
        if v is None or v.sym is None:
            raise _Refused(f"line {it.line}: the address `{c.address}` is not known before "
                           "launch")
        may, certain = self._guard(it)
        start = (v.a + np.uint64(off & _M64)).astype(np.int64)
        if (start[may] < 0).any():
            raise _Refused(f"line {it.line}: an address below its symbol")
        self.accesses.append(Access(self.barriers, self.warp[may], start[may], c.size,
                                     c.event is Event.WRITE, certain[may], it.line))
        self.sym = self.sym or v.sym
        if self.sym != v.sym:
            raise _Refused(f"line {it.line}: accesses through two shared symbols")

    def _guard(self, it: Item) -> tuple[np.ndarray, np.ndarray]:
        """(threads that may run it, threads certain to)."""
        everyone = np.ones(self.n, dtype=bool)
        if not it.pred:
            return everyone, everyone
        name = it.pred.lstrip("@").lstrip("!")
        p = self.preds.get(name)
        if p is None:
            return everyone, np.zeros(self.n, dtype=bool)
        p = ~p if it.pred.lstrip("@").startswith("!") else p
        return p, p

    # ------------------------------------------------------------ register values
    def _dests(self, it: Item) -> list[str]:
        if not it.operands or it.op_parts[0] in _NO_DEST or it.operands[0].lstrip()[:1] == "[":
            return []
        return [r for r in re.findall(r"%[\w$.]+", it.operands[0])
                if not SPECIAL_REGISTER.fullmatch(r)]

    def _src(self, text: str, bits: int) -> _Val | None:
        text = text.strip()
        if text in self.special:
            return _Val(None, self.special[text] & _mask(bits))
        if text in self.shared:
            return _Val(text, self._const(0))
        if text.startswith("%"):
            return self.regs.get(text)
        try:
            return _Val(None, self._const(ptx_int(text)) & _mask(bits))
        except ValueError:
            return None

    def _pred(self, text: str) -> np.ndarray | None:
        text = text.strip()
        neg = text.startswith("!")
        text = text.lstrip("!")
        if text in ("1", "-1"):
            p: np.ndarray | None = np.ones(self.n, dtype=bool)
        elif text == "0":
            p = np.zeros(self.n, dtype=bool)
        else:
            p = self.preds.get(text)
        return None if p is None else (~p if neg else p)

    def _assign(self, it: Item) -> None:
        dests = self._dests(it)
        if not dests:
            return
        parts, ops = it.op_parts, it.operands
        try:
            new = self._evaluate(parts, ops, dests)
        except (ValueError, IndexError, KeyError, OverflowError, ZeroDivisionError):
            new = None
        guard = None if not it.pred else self._guard(it)
        for r in dests:
            value = None if new is None else new.get(r)
            old = self.preds.pop(r, None) if r in self.preds else self.regs.pop(r, None)
            if guard is not None and not guard[1].all():
                if value is None or old is None or not np.array_equal(guard[0], guard[1]):
                    value = None
                elif isinstance(value, np.ndarray):
                    value = np.where(guard[0], value, old)
                elif isinstance(old, _Val) and old.sym == value.sym:
                    value = _Val(value.sym, np.where(guard[0], value.a, old.a))
                else:
                    value = None
            if isinstance(value, np.ndarray):
                self.preds[r] = value
            elif isinstance(value, _Val):
                self.regs[r] = value

    def _evaluate(self, parts: list[str], ops: list[str], dests: list[str]) -> dict | None:
        op = parts[0]
        if parts[-1] == "pred" and op in ("and", "or", "xor", "not", "mov"):
            srcs = [self._pred(o) for o in ops[1:]]
            if any(s is None for s in srcs):
                return None
            if op == "mov":
                return {dests[0]: srcs[0]}
            if op == "not":
                return {dests[0]: ~srcs[0]}
            f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op]
            return {dests[0]: f(srcs[0], srcs[1])}
        if op == "setp":
            return self._setp(parts, ops, dests)
        w = _width(parts)
        if w is None:
            return None
        bits, signed = w
        m = _mask(bits)
        if op == "cvt":
            return self._cvt(parts, ops, dests)
        if op in ("ld", "atom", "shfl", "vote", "redux", "match", "activemask", "cvta", "mapa",
                  "tex", "suld", "prmt", "bfi", "mul24", "mad24", "popc", "clz", "brev",
                  "bfind", "fns", "abs", "sad", "szext", "dp4a", "dp2a", "copysign", "testp"):
            return None
        wide = "wide" in parts
        src_bits = bits
        srcs = [self._src(o, src_bits) for o in ops[1:3 if op == "selp" else None]]
        if any(s is None for s in srcs):
            return None
        out_bits = 2 * bits if wide else bits
        mo = _mask(out_bits)
        a = srcs[0]
        if op == "mov":
            return {dests[0]: _Val(a.sym, a.a if a.sym else a.a & m)}
        syms = [s.sym for s in srcs]
        if op in ("add", "sub") and len(srcs) == 2:
            b = srcs[1]
            if op == "sub" and a.sym and a.sym == b.sym:
                return {dests[0]: _Val(None, (a.a - b.a) & mo)}
            if b.sym and (op == "sub" or a.sym):
                return None
            sym = a.sym or b.sym
            r = a.a + b.a if op == "add" else a.a - b.a
            return {dests[0]: _Val(sym, r & mo if sym is None else r)}
        if any(syms):
            return None
        x = [s.a for s in srcs]
        if wide:
            x = [(_signed(v, bits).view(np.uint64) if signed else v & m) for v in x]
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
            if (x[1] & m == 0).any():
                return None
            r = (x[0] & m) // (x[1] & m) if op == "div" else (x[0] & m) % (x[1] & m)
        elif op == "bfe" and not signed:
            pos, ln = x[1] & np.uint64(0xFF), x[2] & np.uint64(0xFF)
            if (pos >= np.uint64(bits)).any() or (ln > np.uint64(bits)).any():
                return None
            r = ((x[0] & m) >> pos) & ((np.uint64(1) << ln) - np.uint64(1))
        elif op == "selp":
            p = self._pred(ops[3])
            if p is None:
                return None
            r = np.where(p, x[0], x[1])
        else:
            return None
        return {dests[0]: _Val(None, r & mo)}

    def _setp(self, parts: list[str], ops: list[str], dests: list[str]) -> dict | None:
        w = _width(parts)
        if w is None:
            return None
        bits, signed = w
        a, b = self._src(ops[1], bits), self._src(ops[2], bits)
        if a is None or b is None or a.sym != b.sym:
            return None
        x, y = (a.a.view(np.int64), b.a.view(np.int64)) if a.sym else \
            ((_signed(a.a, bits), _signed(b.a, bits)) if signed else (a.a & _mask(bits),
                                                                        b.a & _mask(bits)))
        cmp = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
               "gt": np.greater, "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal,
               "hi": np.greater, "hs": np.greater_equal}.get(parts[1])
        if cmp is None:
            return None
        r = cmp(x, y)
        if len(ops) > 3 and len(parts) > 2 and parts[2] in ("and", "or", "xor"):
            c = self._pred(ops[3])
            if c is None:
                return None
            r = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[parts[2]](r, c)
        out = {dests[0]: r}
        if len(dests) > 1:
            out[dests[1]] = ~r
        return out

    def _cvt(self, parts: list[str], ops: list[str], dests: list[str]) -> dict | None:
        types = [p for p in parts[1:] if _TYPE.match(p)]
        if len(types) != 2 or any(p.startswith("f") or p in ("rn", "rz", "rm", "rp", "sat")
                                  for p in parts[1:]):
            return None
        (db, ds), (sb, ss) = (_width([t]) for t in types)  # type: ignore[misc]
        v = self._src(ops[1], 64)
        if v is None:
            return None
        if v.sym:
            return {dests[0]: v}
        x = _signed(v.a, sb).view(np.uint64) if ss else v.a & _mask(sb)
        return {dests[0]: _Val(None, x & _mask(db))}

    # ------------------------------------------------------------ the rules
    def _bytes(self, group: list[Access], write: bool) -> tuple[np.ndarray, np.ndarray]:
        """(byte, warp) of every thread that may run the group's writes (or reads)."""
        b, w = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
        for a in group:
            if a.write == write:
                b.append((a.start[:, None] + np.arange(a.size)).ravel())
                w.append(np.repeat(a.warp.astype(np.int64), a.size))
        return np.concatenate(b), np.concatenate(w)

    def _judge(self) -> None:
        if not self.accesses:
            return
        extent = max(int(a.start.max(initial=0)) + a.size for a in self.accesses)
        warps = int(self.warp.max()) + 1
        written = np.zeros(extent, dtype=bool)  # certainly written in earlier intervals
        by_interval: dict[int, list[Access]] = {}
        for a in self.accesses:
            by_interval.setdefault(a.interval, []).append(a)
        for k in sorted(by_interval):
            group = by_interval[k]
            wb, ww = self._bytes(group, True)
            pairs = np.unique(np.stack([wb, ww]), axis=1)
            byte, count = np.unique(pairs[0], return_counts=True)
            if (count > 1).any():
                raise self._race(group, int(byte[np.argmax(count > 1)]))
            writer = np.full(extent, -1, dtype=np.int64)
            writer[pairs[0]] = pairs[1]
            rb, rw = self._bytes(group, False)
            other = (writer[rb] >= 0) & (writer[rb] != rw)
            if other.any():
                raise self._race(group, int(rb[np.argmax(other)]))
            own = np.zeros((warps, extent), dtype=bool)  # certainly written by the warp so far
            for a in group:  # in program order
                span = a.start[:, None] + np.arange(a.size)
                if a.write:
                    own[a.warp[a.certain][:, None], span[a.certain]] = True
                    continue
                have = written[span] | own[a.warp[:, None], span]
                if not have.all():
                    raise _Refused(f"line {a.line}: it may read byte {int(span[~have][0])} "
                                   "before any write certain to run has written it")
            for a in group:
                if a.write:
                    written[(a.start[a.certain][:, None] + np.arange(a.size)).ravel()] = True

    def _race(self, group: list[Access], byte: int) -> _Refused:
        lines = sorted({a.line for a in group
                        if ((a.start <= byte) & (byte < a.start + a.size)).any()})
        return _Refused(f"lines {', '.join(map(str, lines))}: two warps touch byte {byte} "
                        "between the same barriers, one of them writing")
