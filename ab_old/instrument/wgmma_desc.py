"""What a wgmma.mma_async reads from shared memory: descriptor, shape, footprint.

An operand in shared memory is named by a 64-bit *matrix descriptor* (PTX ISA,
"Matrix Descriptor Format"); together with the instruction's shape, element
type and major-ness (imm-trans-a / imm-trans-b) it fixes the exact set of
bytes the warpgroup's MMA unit reads ("Shared Memory Matrix Layout",
"Canonical Layouts"). This module is that rule in Python; the device checker
(`cs_wg_chunk` in consan/checker/wgmma.h) is the same rule in C, and the
tests compare the two on many descriptors. docs/model.md ("wgmma operands")
states the rule and the one case where it is conservative.

The rule, per operand of R rows (R = 64 for A, N for B). Every dense shape
reads 32 bytes of K per row (k16 x 2 bytes, k8 x 4, k32 x 1, k256 x 1 bit), so
an operand is 2R chunks of 16 bytes. With start, LBO, SBO the descriptor's
byte fields and W the swizzle width (128, 64 or 32 bytes; 0 for none):

    K-major,  no swizzle:  row r, chunk c (0, 1):  start + (r%8)*16 + (r/8)*SBO + c*LBO
    K-major,  swizzled:    row r, chunk c:         start + (r%8)*W  + (r/8)*SBO + c*16
    MN-major, no swizzle:  16-byte MN chunk j, K row k:  start + j*SBO + (k%8)*16 + (k/8)*LBO
    MN-major, swizzled:    j, k:  start + (16j % W) + (16j / W)*LBO + (k%8)*W + (k/8)*SBO

(MN-major has 32/element-bytes K rows.) A swizzled chunk address `a` then
moves within its aligned W-byte row: a ^ (((a >> 7) & (W/16 - 1)) << 4), the
Swizzle<log2(W/16), 4, 3> of the ISA's canonical layouts applied to the shared
address. That is exact when the descriptor's base offset is 0 (the swizzle
pattern starts on a 1024/512/256-byte boundary, as CUTLASS, DeepGEMM and
TMA-written tiles have it). With a non-zero base offset the ISA does not say
how the row phase is formed, so the chunk is widened to its whole aligned
W-byte row: a superset of what is read (conservative).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import abi

EVENT = "async.wgmma"  # the site-table event of an mma_async (instrument.events.Event.WGMMA)
CHUNK = 16
K_BYTES = 32  # bytes of K one dense mma_async reads per row, for every element type
SWIZZLE_NONE, SWIZZLE_128B, SWIZZLE_64B, SWIZZLE_32B = 0, 1, 2, 3
SWIZZLE_BYTES = {SWIZZLE_NONE: 0, SWIZZLE_128B: 128, SWIZZLE_64B: 64, SWIZZLE_32B: 32}
SWIZZLE_NAMES = {SWIZZLE_NONE: "no swizzle", SWIZZLE_128B: "128-byte swizzle",
                 SWIZZLE_64B: "64-byte swizzle", SWIZZLE_32B: "32-byte swizzle"}
_FIELD = 0x3FFF  # 14-bit fields, in 16-byte units


def encode_field(x: int) -> int:
    """matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4."""
    return (x & 0x3FFFF) >> 4


@dataclass(frozen=True)
class Descriptor:
    """The fields of a wgmma matrix descriptor, in bytes."""

    start: int  # shared address of the matrix (16-byte aligned, < 256 KiB)
    lbo: int = 0  # leading dimension byte offset
    sbo: int = 0  # stride dimension byte offset
    base_offset: int = 0  # bits 49-51
    swizzle: int = SWIZZLE_NONE  # bits 62-63

    @classmethod
    def decode(cls, value: int) -> Descriptor:
        return cls(start=(value & _FIELD) << 4, lbo=((value >> 16) & _FIELD) << 4,
                   sbo=((value >> 32) & _FIELD) << 4, base_offset=(value >> 49) & 7,
                   swizzle=(value >> 62) & 3)

    def encode(self) -> int:
        return (encode_field(self.start) | encode_field(self.lbo) << 16
                | encode_field(self.sbo) << 32 | (self.base_offset & 7) << 49
                | (self.swizzle & 3) << 62)

    @property
    def swizzle_bytes(self) -> int:
        return SWIZZLE_BYTES[self.swizzle]

    def __str__(self) -> str:
        text = (f"start smem[{self.start:#x}], LBO {self.lbo}, SBO {self.sbo}, "
                f"{SWIZZLE_NAMES[self.swizzle]}")
        return text + (f", base offset {self.base_offset}" if self.base_offset else "")


@dataclass(frozen=True)
class Operand:
    """One shared-memory operand of an mma_async: A (64 rows) or B (N rows)."""

    rows: int
    k_major: bool = True
    elem_bytes: int = 2  # 1 for 8-bit types and .b1 (whose K rows are always 32 bytes)

    @property
    def chunks(self) -> int:
        return 2 * self.rows  # rows x 32 bytes of K, in 16-byte chunks


def chunk(d: Descriptor, op: Operand, i: int) -> tuple[int, int]:
    """(address, bytes) of chunk i (0 <= i < op.chunks): 16 bytes, or the whole aligned
    swizzle row when the base offset leaves the chunk's place in it unknown."""
    w = d.swizzle_bytes
    if op.k_major:
        r, c = divmod(i, 2)
        if w:
            a = d.start + (r % 8) * w + (r // 8) * d.sbo + c * CHUNK
        else:
            a = d.start + (r % 8) * CHUNK + (r // 8) * d.sbo + c * d.lbo
    else:
        j, k = divmod(i, K_BYTES // op.elem_bytes)
        if w:
            a = (d.start + (j * CHUNK) % w + (j * CHUNK // w) * d.lbo + (k % 8) * w
                 + (k // 8) * d.sbo)
        else:
            a = d.start + j * d.sbo + (k % 8) * CHUNK + (k // 8) * d.lbo
    if not w:
        return a, CHUNK
    if d.base_offset:
        return a & ~(w - 1), w
    return a ^ (((a >> 7) & (w // CHUNK - 1)) << 4), CHUNK


def chunks(d: Descriptor, op: Operand) -> list[tuple[int, int]]:
    return [chunk(d, op, i) for i in range(op.chunks)]


def footprint(d: Descriptor, op: Operand) -> list[tuple[int, int]]:
    """The bytes the operand reads, as merged [lo, hi) ranges."""
    merged: list[list[int]] = []
    for lo, n in sorted(chunks(d, op)):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], lo + n)
        else:
            merged.append([lo, lo + n])
    return [(lo, hi) for lo, hi in merged]


def granules(d: Descriptor, op: Operand, granule: int = abi.GRANULE_BYTES) -> set[int]:
    out: set[int] = set()
    for a, n in chunks(d, op):
        out.update(range(a // granule, (a + n - 1) // granule + 1))
    return out


# ---------------------------------------------------------------- instruction shape

_ELEM_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8,
              "b1": 1}
_SHAPE = re.compile(r"^m(\d+)n(\d+)k(\d+)$")


class NotModeled(ValueError):
    """An mma_async form whose footprint consan does not model (the message says why)."""


@dataclass(frozen=True)
class MmaShape:
    m: int
    n: int
    k: int
    atype: str
    btype: str
    a_smem: bool  # A through a descriptor (else from registers)
    trans_a: bool = False  # A is M-major
    trans_b: bool = False  # B is N-major

    @property
    def elem_bytes(self) -> int:
        return max(1, _ELEM_BITS[self.atype] // 8)

    def operand(self, which: str) -> Operand:
        if which == "A":
            return Operand(self.m, not self.trans_a, self.elem_bytes)
        return Operand(self.n, not self.trans_b, self.elem_bytes)

    @property
    def info(self) -> int:
        """The probe's info word (abi.WG_INFO_*)."""
        elog = {1: 0, 2: 1, 4: 2}[self.elem_bytes]
        return (self.n | (abi.WG_INFO_A_SMEM if self.a_smem else 0)
                | (abi.WG_INFO_TRANS_A if self.trans_a else 0)
                | (abi.WG_INFO_TRANS_B if self.trans_b else 0)
                | elog << abi.WG_INFO_ELOG_SHIFT)

    @classmethod
    def from_info(cls, info: int, atype: str = "f16") -> MmaShape:
        return cls(64, info & abi.WG_INFO_N_MASK, 0, atype, atype,
                   bool(info & abi.WG_INFO_A_SMEM), bool(info & abi.WG_INFO_TRANS_A),
                   bool(info & abi.WG_INFO_TRANS_B))


def parse_mma(opcode: str, operands: list[str]) -> MmaShape:
    """The shape of `wgmma.mma_async.sync.aligned.mMnNkK[.satfinite].dtype.atype.btype[...]`
    with operands d, a-desc | {a regs}, b-desc, scale-d, ... (PTX ISA 9.7.15.5.2).

    Raises NotModeled for the sparse form and for anything outside the ISA's dense forms."""
    parts = opcode.split(".")
    if parts[:2] != ["wgmma", "mma_async"]:
        raise NotModeled(f"{opcode} is not a wgmma.mma_async")
    if "sp" in parts[2:3]:
        raise NotModeled("sparse wgmma (mma_async.sp: A is a packed M x K/2 matrix) is not "
                         "modelled yet")
    shape = next((_SHAPE.match(p) for p in parts if _SHAPE.match(p)), None)
    if shape is None:
        raise NotModeled(f"no .mMnNkK shape in {opcode}")
    m, n, k = (int(x) for x in shape.groups())
    types = [p for p in parts[parts.index(shape.group(0)) + 1:] if p != "satfinite"]
    if len(types) < 3 or types[1] not in _ELEM_BITS or types[2] not in _ELEM_BITS:
        raise NotModeled(f"unknown element types in {opcode}")
    atype, btype = types[1], types[2]
    if m != 64 or not 8 <= n <= 256 or n % 8 or k * _ELEM_BITS[atype] != 8 * K_BYTES:
        raise NotModeled(f"shape m{m}n{n}k{k} with .{atype} is not a dense wgmma shape")
    if len(operands) < 4:
        raise NotModeled("mma_async with too few operands")
    a_smem = not operands[1].lstrip().startswith("{")
    trans_a = trans_b = False
    if atype in ("f16", "bf16"):
        # ..., scale-d, imm-scale-a, imm-scale-b{, imm-trans-a}, imm-trans-b
        want = 8 if a_smem else 7
        if len(operands) != want:
            raise NotModeled(f"{opcode} with {len(operands)} operands (expected {want})")
        try:
            trans_b = int(operands[-1], 0) != 0
            trans_a = a_smem and int(operands[-2], 0) != 0
        except ValueError:
            raise NotModeled("imm-trans-a / imm-trans-b are not immediates") from None
    return MmaShape(m, n, k, atype, btype, a_smem, trans_a, trans_b)


def split_operands(text: str) -> tuple[str, list[str]]:
    """(opcode, top-level operands) of one instruction's text (an optional @pred first)."""
    body = text.strip().rstrip(";").strip()
    if body.startswith("@"):
        body = body.split(None, 1)[1]
    opcode, _, rest = body.partition(" ")
    ops, depth, cur = [], 0, ""
    for ch in rest:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            ops.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        ops.append(cur.strip())
    return opcode, ops


def describe(ptx_text: str, operand: int, desc: int) -> str | None:
    """'operand B (64 x 32 bytes, K-major; start smem[0x400], ...): smem[..)' for a record
    at an mma_async site, or None when the text is not a modelled mma_async."""
    try:
        shape = parse_mma(*split_operands(ptx_text))
    except (NotModeled, ValueError, IndexError):
        return None
    which = "B" if operand else "A"
    op = shape.operand(which)
    d = Descriptor.decode(desc)
    major = "K-major" if op.k_major else ("M-major" if which == "A" else "N-major")
    ranges = footprint(d, op)
    span = ", ".join(f"smem[{lo:#x}..{hi:#x})" for lo, hi in ranges[:3])
    more = f" and {len(ranges) - 3} more ranges" if len(ranges) > 3 else ""
    dims = f"{shape.m}x{shape.k}" if which == "A" else f"{shape.k}x{shape.n}"
    return f"operand {which} ({dims} .{shape.atype}, {major}; {d}) reads {span}{more}"
