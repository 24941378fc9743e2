"""Value tags of stores: PTX that hashes what a lane's store writes (its address and values)
for the checker's replicated-store rule (docs/model.md, "Replicated stores").

Triton's layouts give several warps the same elements; each of those warps then stores
the same values at the same addresses with nothing ordering them, which a checker that
sees addresses only must call a race.waw. With the tag (FNV-1a over 32-bit words:
abi.VALUE_TAG_SEED, abi.VALUE_TAG_PRIME) the checker tells those runs apart from stores
of other bytes. A store whose values this module cannot read gets no tag: the checker
then judges it as any store (the safe side)."""

from __future__ import annotations

from . import abi
from .ptx import Item, ptx_int

REG_TAG = "%__cs_h"  # the tag
REG_WORD = "%__cs_x"  # one 32-bit word of a value
REG_WIDE = "%__cs_y"  # a 64-bit value


def declare() -> str:
    return f"\n\t.reg .b32 {REG_TAG}, {REG_WORD};\n\t.reg .b64 {REG_WIDE};"


def _mix(word: str) -> list[str]:
    return [f"xor.b32 {REG_TAG}, {REG_TAG}, {word};",
            f"mul.lo.u32 {REG_TAG}, {REG_TAG}, {abi.VALUE_TAG_PRIME};"]


def _immediate(tok: str) -> int | None:
    t = tok.lower()
    neg = t.startswith("-")
    t = t.lstrip("-")
    if len(t) == 10 and t.startswith("0f"):
        v = int(t[2:], 16)
    elif len(t) == 18 and t.startswith("0d"):
        v = int(t[2:], 16)
    else:
        try:
            v = ptx_int(t)
        except ValueError:
            return None
    return -v if neg else v


def _words(tok: str, elem: int, widths: dict[str, int]) -> list[str] | None:
    """PTX folding one value operand (`elem` bytes stored) into the tag; None: unknown."""
    mask = (1 << (8 * elem)) - 1
    if not tok.startswith("%"):
        v = _immediate(tok)
        if v is None:
            return None
        v &= mask
        return _mix(str(v & 0xFFFFFFFF)) + (_mix(str(v >> 32)) if elem > 4 else [])
    bits = widths.get(tok)
    if bits is None:
        base = tok.rstrip("0123456789")
        bits = widths.get(base)
    if bits == 16:  # any 16-bit type: packed twice into a word (no cvt from .f16 needed)
        code = [f"mov.b32 {REG_WORD}, {{{tok}, {tok}}};"]
    elif bits == 32:
        code = [f"mov.b32 {REG_WORD}, {tok};"]
    elif bits == 64:
        code = [f"mov.b64 {REG_WIDE}, {tok};", f"cvt.u32.u64 {REG_WORD}, {REG_WIDE};"]
        if elem > 4:
            return code + _mix(REG_WORD) + [f"shr.b64 {REG_WIDE}, {REG_WIDE}, 32;",
                                             f"cvt.u32.u64 {REG_WORD}, {REG_WIDE};"] + \
                _mix(REG_WORD)
    else:
        return None
    if elem < 4:
        code.append(f"and.b32 {REG_WORD}, {REG_WORD}, {mask};")
    return code + _mix(REG_WORD)


def tag_code(stores: list[tuple[Item, int]], widths: dict[str, int],
             addr: str = "%__cs_a") -> list[str] | None:
    """PTX leaving in REG_TAG the tag of one lane's run of `stores` (each: the store and its
    bytes; a coalesced span's stores in order) whose first address is in `addr`; None
    when a value cannot be read (a store then goes untagged)."""
    code = [f"cvt.u32.u64 {REG_TAG}, {addr};",
            f"xor.b32 {REG_TAG}, {REG_TAG}, {abi.VALUE_TAG_SEED};",
            f"mul.lo.u32 {REG_TAG}, {REG_TAG}, {abi.VALUE_TAG_PRIME};"]
    for it, size in stores:
        if len(it.operands) != 2:
            return None
        toks = [v.strip() for v in it.operands[1].strip().strip("{}").split(",")]
        stmatrix = it.op_parts[0] == "stmatrix"
        elem = 4 if stmatrix else size // len(toks)
        if not stmatrix and elem * len(toks) != size:
            return None
        for tok in toks:
            got = _words(tok, elem, widths)
            if got is None:
                return None
            code += got
    return code


_V = "%__cs_v"  # b32 scratch of the inline publish (a scoped declaration)


def _mix_code(h: str, t: str) -> list[str]:
    """PTX applying abi.value_tag_mix to register `h` in place (`t`: scratch)."""
    return [f"shr.u32 {t}, {h}, 16;", f"xor.b32 {h}, {h}, {t};",
            f"mul.lo.u32 {h}, {h}, {abi.VALUE_TAG_MIX1};",
            f"shr.u32 {t}, {h}, 13;", f"xor.b32 {h}, {h}, {t};",
            f"mul.lo.u32 {h}, {h}, {abi.VALUE_TAG_MIX2};",
            f"shr.u32 {t}, {h}, 16;", f"xor.b32 {h}, {h}, {t};"]


def publish(site: int, record: str, pred: str | None, call: str, label: str) -> str:
    """PTX publishing the warp's record of this run of a tagged store (REG_TAG holds the
    lane's tag) as abi.PROBE_STORE_VALUE does, without the call where the warp has a
    fast-path record (`record`, abi.PSH_FAST_*: phase mode in shared memory): its active
    lanes' mixed tags summed with redux.sync, the sum mixed with the site's salt, and the
    site and result stored by the lowest active lane at the record's addresses, then a
    warp sync and a fence (the tag is seen before the store's write epoch). Without a
    record (0) it makes `call`, the probe's call. Lanes the store's `pred` leaves out skip
    both. `label`: a fresh label prefix."""
    salt = abi.value_tag_mix((site + abi.VALUE_TAG_SALT) & 0xFFFFFFFF)
    h, m, t, a, b = (f"{_V}{i}" for i in range(5))
    q = "%__cs_vq"
    lines = ["{ // consan value tag, published inline",
             f".reg .b32 {_V}<5>;", f".reg .pred {q};"]
    if pred:  # (@%p: lanes without %p skip; @!%p: lanes with it)
        g = pred[1:]
        lines.append(f"@{g[1:] if g.startswith('!') else '!' + g} bra {label}_done;")
    lines += [f"setp.eq.u32 {q}, {record}, 0;", f"@{q} bra {label}_call;",
              f"mov.b32 {h}, {REG_TAG};", *_mix_code(h, t),
              f"activemask.b32 {m};",
              f"redux.sync.add.u32 {h}, {h}, {m};",
              f"xor.b32 {h}, {h}, {salt};", *_mix_code(h, t),
              f"or.b32 {h}, {h}, 1;",
              f"mov.u32 {t}, %lanemask_lt;",
              f"and.b32 {t}, {t}, {m};",
              f"setp.eq.u32 {q}, {t}, 0;",  # the lowest active lane
              f"ld.shared.v2.u32 {{{a}, {b}}}, [{record}+{abi.PSH_FAST_STORE_SITE * 4}];",
              f"@{q} st.volatile.shared.u32 [{a}], {site};",
              f"@{q} st.volatile.shared.u32 [{b}], {h};",
              f"bar.warp.sync {m};",
              "membar.cta;",
              f"bra {label}_done;",
              "}",
              f"{label}_call:",
              call,
              f"{label}_done:"]
    return "\n\t".join(lines)
