"""The silent-store test: before a plain `st.shared`, load the bytes it will store over and
compare them with what it stores; when every lane of the warp stores what is already there,
the probe's info word carries abi.INFO_SILENT (docs/model.md, "Silent stores").

Generated code stores one value from every warp more often than people think: Triton's
warp-specialised kernels have each warp of the default partition write the partitions'
state word, and its reductions leave every warp holding the same result, which every warp
stores. Two such writes race only in name: no order of them changes a byte.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from . import abi
from .coalesce import defined
from .ptx import REGISTER, Item, ptx_int

REG_INFO = "%__cs_in"  # the probe's info operand when the store is tested
_Q = "%__cs_q"  # predicate: every element this lane stores is already there
_OLD = "%__cs_sv"  # the bytes before the store, one register per element
_MASKED = "%__cs_sm"  # an element's value cut to the store's width
_MASK = "%__cs_am"
_TYPE = re.compile(r"^[bsuf](8|16|32|64)$")
_SPACES = {"shared", "shared::cta"}
_PLAIN = {"st", "weak", "v2", "v4"} | _SPACES  # no cache, scope or ordering qualifier


def _immediate(text: str) -> int | None:
    """A PTX constant's bits (integers; 0f/0d hexadecimal floats), or None."""
    t = text.strip()
    if re.fullmatch(r"0[fFdD][0-9a-fA-F]+", t):
        return int(t[2:], 16)
    try:
        return ptx_int(t)
    except ValueError:
        return None


def values(it: Item) -> list[str]:
    """The elements a store writes: its value operand, a vector's split."""
    if len(it.operands) != 2:
        return []
    return [v.strip() for v in it.operands[1].strip().lstrip("{").rstrip("}").split(",")]


def _compare(it: Item, address: str, width_of: Callable[[str], int | None]) -> list[str] | None:
    """One store's load and compare into _Q (in a scope of its own), or None if it cannot
    be compared: a qualified or generic store, an operand of a width or form not handled."""
    parts = it.op_parts
    m = _TYPE.match(parts[-1])
    if m is None or not set(parts[:-1]) <= _PLAIN or not _SPACES & set(parts):
        return None
    bits, elems = int(m.group(1)), values(it)
    if len(elems) not in (1, 2, 4):
        return None
    regs = {width_of(v) for v in elems if v.startswith("%")}
    if None in regs or len(regs) > 1:
        return None
    wide = regs.pop() if regs else max(bits, 16)
    if wide not in (16, 32, 64) or wide < bits:
        return None
    mask = (1 << bits) - 1
    pred = f"{it.pred} " if it.pred else ""
    space = next(p for p in parts if p in _SPACES)
    vec = [f"v{len(elems)}"] if len(elems) > 1 else []
    olds = [f"{_OLD}{k}" for k in range(len(elems))]
    dst = olds[0] if len(olds) == 1 else "{" + ", ".join(olds) + "}"
    ld_type = f"b{bits}" if bits == wide else f"u{bits}"  # (zero-extends into the register)
    code = ["{", f".reg .b{wide} {_OLD}<{len(elems)}>, {_MASKED};",
            f"{pred}ld.{'.'.join([space, *vec, ld_type])} {dst}, [{address}];"]
    for old, v in zip(olds, elems, strict=True):
        if not v.startswith("%"):
            imm = _immediate(v)
            if imm is None:
                return None
            imm &= mask
            v = str(imm) if imm < 1 << 31 else f"{imm:#x}U"
        elif bits < wide:  # the store keeps the low bits of a wider register
            code.append(f"{pred}and.b{wide} {_MASKED}, {v}, {mask};")
            v = _MASKED
        code.append(f"{pred}setp.eq.and.b{wide} {_Q}, {old}, {v}, {_Q};")
    return code + ["}"]


def test(stores: Sequence[tuple[Item, str]], info: int,
         width_of: Callable[[str], int | None]) -> list[str] | None:
    """PTX that leaves in REG_INFO `info`, or'ed with abi.INFO_SILENT when every lane finds
    the bytes of every store of `stores` already there; None where one of them cannot be
    tested (the probe then keeps the constant info). `stores`: the stores one probe checks,
    each with its address as the code at the probe can name it; `width_of(reg)`: a
    register's declared bits."""
    code = [f".reg .pred {_Q};", f".reg .b32 {_MASK}, {REG_INFO};", f"setp.eq.u32 {_Q}, 0, 0;"]
    for it, address in stores:
        part = _compare(it, address, width_of)
        if part is None:
            return None
        code += part
    return code + [f"activemask.b32 {_MASK};", f"vote.sync.all.pred {_Q}, {_Q}, {_MASK};",
                   f"selp.b32 {REG_INFO}, {info | abi.INFO_SILENT}, {info}, {_Q};"]


def ready(later: Item, between: Sequence[Item]) -> bool:
    """Whether a store the probe of an earlier one also checks has its values at that probe:
    no instruction in `between` (the code from the probe to it) writes one of them."""
    used = {r for v in values(later) for r in REGISTER.findall(v)}
    return not any(used & defined(it) for it in between)
