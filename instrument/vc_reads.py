"""The inline read of 16-byte chunks: a warp's ldmatrix or v4 load settled without a call.

In the build whose vector clocks' tables live in the CTA's shared memory with 16-byte
granules (cp.async + ldmatrix GEMMs), the 16-byte access probe's read is a few table words:
publish it (the warp's clock byte in the chunk's reader byte, the read's site, the block's
reader summary), fence, then look at the chunk's write epoch (checker/access16.h,
cs_access16_read). Where every lane finds the common case -- the block's summary live, no
whole-block copy on it, a last write that happens before the warp -- that is all the probe
would have done, and its call is skipped; anywhere else the whole warp calls the probe,
which publishes again (a byte already at this clock keeps its site) and judges, so no
verdict changes. The tables' addresses come from the record __consan_cta_begin returns
(abi.VF_*); any other build, or a CTA without a slot, returns no record and every read
calls. Measured bound (benchmarks/breakdown_async.py, H100): the cp.async GEMM 17.7x with
its read probes, 11.6x with none.

A warp's row of 2-, 4- or 8-byte reads (lane i at the row's start + i * size: a coalesced
run of scalar loads down a column block, as a TMA ring's consumers read their stage) is
settled inline the same way, a row a lane, as the probe's whole-rows case does
(cs_vc_smem_read_granules): the row's block summary raised (its stale bytes emptied by the
lane that raises it from 0), the row's reader bytes and sites stored where none is at this
clock yet, fence, then the row's one write epoch -- the block's word where a copy wrote it
whole, else its granules' epochs where they are one -- happening before the warp. Anything
else (a warp not whole, lanes not in a row, a row not aligned or outside the tables, bytes
read at this clock in part, epochs that differ or are not ordered) calls the probe, which
publishes again (idempotent) and judges. Measured on an H200 (the TMA ring, whose
consumers' 32-row reads set its pace then; A/B beside the tree before it, three rounds):
0.130 -> 0.111 ms by the device's time alone, 0.123 -> 0.110 in a process of its own.
"""

from __future__ import annotations

from . import abi
from .events import Classified, Event
from .fast_path import REG_FAST

MAX_COUNT = 8  # a coalesced run of up to this many reads is settled inline, chunk by chunk
# (a Triton matmul's ldmatrix runs are 8)
MAX_SITES = 32  # a module with more such reads calls their probes (its code would grow too much)

_V = "%__cs_v"  # b32 scratch of one inline read (a scoped declaration)
_P = "%__cs_vp"  # pred scratch
_D = "%__cs_vd"  # b64 scratch


# the record's first eight words (abi.VF_GRANULES .. VF_GP): where the tables are
TABLE_WORDS = ("g", "base", "tw", "tr", "trs", "rss4", "bt", "gp")


def table_words(go: str, rec: str, regs: list[str]) -> list[str]:
    """Lines loading TABLE_WORDS from the record at `rec` into `regs` where `go` holds
    (always where it is empty)."""
    assert (abi.VF_GRANULES, abi.VF_GP) == (0, 7) and len(regs) == len(TABLE_WORDS)
    g = f"@{go} " if go else ""
    return [f"{g}ld.shared.v4.u32 {{{', '.join(regs[:4])}}}, [{rec}];",
            f"{g}ld.shared.v4.u32 {{{', '.join(regs[4:])}}}, [{rec}+16];"]


def record(f: dict[str, str], go: str) -> list[str]:
    """Lines taking the record's address and the warp from REG_FAST into f["rec"] and
    f["w"], then loading, where `go` holds (always where it is empty), the record's words
    into f's registers, the read sites' table into the b64 scratch 0, and the warp's clock
    and its byte (the checker's cs_vc_smem_byte)."""
    g = f"@{go} " if go else ""
    rec = f["rec"]
    return [f"and.b32 {rec}, {REG_FAST}, {(1 << abi.VF_WARP_SHIFT) - 1};",
            f"bfe.u32 {f['w']}, {REG_FAST}, {abi.VF_WARP_SHIFT}, 5;",
            *table_words(go, rec, [f[k] for k in TABLE_WORDS]),
            f"{g}ld.shared.v4.u32 {{{f['clocks']}, {f['vis']}, {f['nl4']}, {f['x']}}}, "
            f"[{rec}+32];",
            f"{g}ld.shared.v2.u32 {{{f['rlo']}, {f['rhi']}}}, [{rec}+{4 * abi.VF_RSITE}];",
            f"mov.b64 {_D}0, {{{f['rlo']}, {f['rhi']}}};",
            f"mad.lo.u32 {f['t']}, {f['w']}, 4, {f['clocks']};",
            f"{g}ld.volatile.shared.u32 {f['clk']}, [{f['t']}];",
            f"rem.u32 {f['c8']}, {f['clk']}, 255;",
            f"add.u32 {f['c8']}, {f['c8']}, 1;"]


def judge(f: dict[str, str], on: str, z: str, fail: str) -> list[str]:
    """Lines judging the write epoch f["e"] for the warp f["w"] in the lanes `on` (pred
    scratch z): `fail` set where it was never written, is an mbarrier's, or its write does
    not happen before the warp (its clock above the warp's column of its writer)."""
    return [f"setp.eq.and.u32 {z}, {f['e']}, 0, {on};",  # (never written)
            f"or.pred {fail}, {fail}, {z};",
            f"setp.ge.and.u32 {z}, {f['e']}, {abi.VW_MBAR}, {on};",  # (an mbarrier)
            f"or.pred {fail}, {fail}, {z};",
            f"bfe.u32 {f['tid']}, {f['e']}, {abi.VW_TID_SHIFT}, 7;",
            f"and.b32 {f['cc']}, {f['e']}, {abi.VW_CLOCK_MASK};",
            f"setp.ne.and.u32 {z}, {f['tid']}, {f['w']}, {on};",
            f"mad.lo.u32 {f['t']}, {f['w']}, {f['nl4']}, {f['vis']};",
            f"mad.lo.u32 {f['t']}, {f['tid']}, 4, {f['t']};",
            f"@{z} ld.volatile.shared.u32 {f['m']}, [{f['t']}];",
            f"setp.lt.and.u32 {z}, {f['m']}, {f['cc']}, {z};",  # (not ordered before the warp)
            f"or.pred {fail}, {fail}, {z};"]


def zeroed(regs) -> list[str]:
    """Lines setting b32 `regs` to 0: the first definition of each, ahead of any predicated
    load. A register that only a predicated load defines keeps its old value where the
    predicate is false, so it is live around the kernel's loop: at a kernel's register
    limit ptxas keeps it in local memory (the cp.async GEMM's K loop: 76 local loads)."""
    return [f"mov.u32 {r}, 0;" for r in regs]


def _run(rep: int | None) -> tuple[int, int]:
    """(count, stride) of a probe's rep word (None: one access)."""
    return (1, 0) if rep is None else (rep & abi.REP_COUNT_MASK, rep >> abi.REP_STRIDE_SHIFT)


ROW_SIZES = (2, 4, 8)  # a lane's bytes in a warp's row: 64, 128 or 256 bytes a row
ROW_LANES = 32  # (a row is the whole warp's; its rows are at most one a lane)


def _rows(c: Classified, rep: int | None) -> bool:
    """A warp's rows of `c.size`-byte reads, lane i at i * size, rows `stride` apart."""
    count, stride = _run(rep)
    shape = (c.info >> abi.INFO_SHAPE_SHIFT) & 15
    return c.size in ROW_SIZES and not shape and 1 <= count <= ROW_LANES and \
        stride % (ROW_LANES * c.size) == 0


def eligible(c: Classified, rep: int | None) -> bool:
    """Whether a read's probe may be preceded by the inline read (rep: its coalesced run)."""
    if c.event is not Event.READ or c.space != abi.SPACE_SHARED:
        return False
    if c.size != 16:
        return _rows(c, rep)
    count, stride = _run(rep)
    return 1 <= count <= MAX_COUNT and stride % 16 == 0


def code(c: Classified, rep: int | None, site: int, pred: str | None, address: list[str],
         addr_reg: str, probe: str, done: str) -> str:
    """PTX settling the read inline where every lane can, then `probe` (the read's own
    probe call, with its guard) where some lane cannot; `address` puts the first chunk's
    address in the b64 `addr_reg`; `done` is a label of the caller's, unique."""
    if c.size != 16:
        return _rows_code(c, rep, site, pred, address, addr_reg, probe, done)
    count, stride = _run(rep)
    shape = (c.info >> abi.INFO_SHAPE_SHIFT) & 15
    f = {n: f"{_V}{i}" for i, n in enumerate(
        ("a", "rec", "w", "g", "base", "tw", "tr", "trs", "rss4", "bt", "gp", "clocks", "vis",
         "nl4", "x", "rlo", "rhi", "clk", "c8", "rrow", "rsw", "srow", "t", "v", "old", "e",
         "m", "tid", "cc"))}
    q = [f"{_V}q{k}" for k in range(count)]  # each chunk's granule
    b = [f"{_V}b{k}" for k in range(count)]  # ...its block
    on, go, fail, gk, z = (f"{_P}{i}" for i in range(5))
    pk = [f"{_P}k{k}" for k in range(count)]  # the lanes that published chunk k
    lines = ["{ // consan inline read",
             f".reg .b32 {', '.join(f.values())}, {', '.join(q + b)};",
             f".reg .b64 {_D}0, {_D}1;",
             f".reg .pred {on}, {go}, {fail}, {gk}, {z}, {', '.join(pk)};",
             *zeroed((*f.values(), *q, *b)),
             *address,
             f"cvt.u32.u64 {f['a']}, {addr_reg};"]
    if pred is None:
        lines.append(f"setp.eq.u32 {on}, 0, 0;")
    elif pred.startswith("!"):
        lines.append(f"not.pred {on}, {pred[1:]};")
    else:
        lines.append(f"mov.pred {on}, {pred};")
    if shape:  # (ldmatrix: lanes 8 * shape and up give no row address)
        lines += [f"mov.u32 {f['t']}, %laneid;",
                  f"setp.lt.and.u32 {on}, {f['t']}, {8 * shape}, {on};"]
    lines += [
        f"setp.ge.u32 {go}, {REG_FAST}, {abi.VF_TAG};",
        f"not.pred {fail}, {go};",
        f"and.pred {fail}, {fail}, {on};",  # (a lane that reads, with no record: the probe)
        f"and.pred {go}, {go}, {on};",
        *record(f, go),
        f"mad.lo.u32 {f['rrow']}, {f['w']}, {f['gp']}, {f['tr']};",
        f"mad.lo.u32 {f['rsw']}, {f['w']}, 4, {f['trs']};",
        f"mul.lo.u32 {f['srow']}, {f['w']}, {f['gp']};"]
    for k in range(count):  # publish: reader byte, site, block summary (cs_access16_read)
        lines += [
            f"add.u32 {q[k]}, {f['a']}, {k * stride};",
            f"sub.u32 {q[k]}, {q[k]}, {f['base']};",
            f"and.b32 {f['t']}, {q[k]}, 15;",
            f"setp.eq.and.u32 {gk}, {f['t']}, 0, {go};",
            f"shr.u32 {q[k]}, {q[k]}, 4;",
            f"setp.lt.and.u32 {gk}, {q[k]}, {f['g']}, {gk};",
            f"not.pred {z}, {gk};",  # (misaligned or outside the tables: the probe)
            f"and.pred {z}, {z}, {go};",
            f"or.pred {fail}, {fail}, {z};",
            f"shr.u32 {b[k]}, {q[k]}, {abi.VSH_BLOCK_GRANULES.bit_length() - 1};",
            f"mad.lo.u32 {f['t']}, {b[k]}, {f['rss4']}, {f['rsw']};",
            f"@{gk} ld.volatile.shared.u32 {f['v']}, [{f['t']}];",
            f"setp.ne.and.u32 {pk[k]}, {f['v']}, 0, {gk};",  # (stale bytes: emptied first)
            f"setp.ne.and.u32 {pk[k]}, {f['v']}, {abi.RS_ZEROING}, {pk[k]};",
            f"not.pred {z}, {pk[k]};",
            f"and.pred {z}, {z}, {gk};",
            f"or.pred {fail}, {fail}, {z};",
            f"setp.lt.and.u32 {z}, {f['v']}, {f['clk']}, {pk[k]};",
            f"@{z} red.shared.max.u32 [{f['t']}], {f['clk']};",
            f"add.u32 {f['t']}, {f['rrow']}, {q[k]};",
            f"@{pk[k]} ld.volatile.shared.u8 {f['old']}, [{f['t']}];",
            f"setp.ne.and.u32 {z}, {f['old']}, {f['c8']}, {pk[k]};",
            f"@{z} st.volatile.shared.u8 [{f['t']}], {f['c8']};",
            f"add.u32 {f['t']}, {f['srow']}, {q[k]};",
            f"mul.wide.u32 {_D}1, {f['t']}, 4;",
            f"add.s64 {_D}1, {_D}1, {_D}0;",
            f"@{z} st.volatile.global.u32 [{_D}1], {site};"]
    lines.append("membar.cta;")  # publish the reads, then look at the writes (Dekker)
    for k in range(count):  # the look (cs_access16_look's common case)
        lines += [
            f"shl.b32 {f['t']}, {b[k]}, 2;",
            f"add.u32 {f['t']}, {f['t']}, {f['bt']};",
            f"@{pk[k]} ld.volatile.shared.u32 {f['x']}, [{f['t']}];",
            f"setp.ne.and.u32 {z}, {f['x']}, 0, {pk[k]};",  # (a copy's whole-block epoch)
            f"or.pred {fail}, {fail}, {z};",
            f"shl.b32 {f['t']}, {q[k]}, 2;",
            f"add.u32 {f['t']}, {f['t']}, {f['tw']};",
            f"@{pk[k]} ld.volatile.shared.u32 {f['e']}, [{f['t']}];",
            *judge(f, pk[k], z, fail)]
    lines += [f"activemask.b32 {f['t']};",
              f"vote.sync.any.pred {fail}, {fail}, {f['t']};",
              f"@!{fail} bra {done};",
              "}"]
    return "\n\t".join(lines) + "\n\t" + probe.rstrip() + f"\n{done}:\n\t"


def _vec(regs: list[str]) -> tuple[str, str]:
    """A shared-space access's type suffix and operand for 1, 2 or 4 words."""
    return ({1: ".u32", 2: ".v2.u32", 4: ".v4.u32"}[len(regs)],
            regs[0] if len(regs) == 1 else "{" + ", ".join(regs) + "}")


def _rows_code(c: Classified, rep: int | None, site: int, pred: str | None,
               address: list[str], addr_reg: str, probe: str, done: str) -> str:
    """The inline read of a warp's rows (_rows), lane k taking row k; then `probe`."""
    count, stride = _run(rep)
    rowb = ROW_LANES * c.size
    rg = rowb // abi.CHUNK_GRANULE_BYTES  # granules a row: 4, 8 or 16
    nw = rg // 4  # words of reader bytes a row (a byte a granule)
    bshift = abi.VSH_BLOCK_GRANULES.bit_length() - 1
    f = {n: f"{_V}{i}" for i, n in enumerate(
        ("a", "a0", "rec", "w", "g", "base", "tw", "tr", "trs", "rss4", "bt", "gp", "clocks",
         "vis", "nl4", "x", "rlo", "rhi", "clk", "c8", "c4", "lane", "off", "g0", "b", "p",
         "v", "t", "u", "e", "tid", "cc", "m", "sn", "seen", "diff"))}
    r = [f"{_V}r{i}" for i in range(nw)]  # the row's reader bytes
    q = [f"{_V}q{i}" for i in range(4)]  # four of its granules' epochs
    on, fail, has, z, won, fresh = (f"{_P}{i}" for i in range(6))
    call = f"{done}_call"
    lines = ["{ // consan inline row read",
             f".reg .b32 {', '.join((*f.values(), *r, *q))};",
             f".reg .b64 {_D}0, {_D}1;",
             f".reg .pred {on}, {fail}, {has}, {z}, {won}, {fresh};",
             *zeroed((*f.values(), *r, *q)),
             *address,
             f"cvt.u32.u64 {f['a']}, {addr_reg};",
             # the whole warp, every lane reading, and the tables' record (else the probe)
             f"activemask.b32 {f['t']};",
             f"setp.ne.u32 {fail}, {f['t']}, -1;",
             f"@{fail} bra {call};"]
    if pred is not None:
        off = pred.startswith("!")
        lines += [f"vote.sync.{'any' if off else 'all'}.pred {on}, {pred.removeprefix('!')}, -1;",
                  f"@{'' if off else '!'}{on} bra {call};"]
    lines += [
        f"setp.lt.u32 {fail}, {REG_FAST}, {abi.VF_TAG};",
        f"@{fail} bra {call};",
        *record(f, ""),
        f"mul.lo.u32 {f['c4']}, {f['c8']}, {0x01010101};",
        f"mov.u32 {f['sn']}, {site};",
        # the rows: lane i at lane 0's address + i * size, a row-aligned table offset, the
        # last row inside the tables
        f"shfl.sync.idx.b32 {f['a0']}, {f['a']}, 0, 31, -1;",
        f"mov.u32 {f['lane']}, %laneid;",
        f"mad.lo.u32 {f['t']}, {f['lane']}, {c.size}, {f['a0']};",
        f"setp.ne.u32 {fail}, {f['a']}, {f['t']};",
        f"sub.u32 {f['off']}, {f['a0']}, {f['base']};",
        f"and.b32 {f['t']}, {f['off']}, {rowb - 1};",
        f"setp.ne.or.u32 {fail}, {f['t']}, 0, {fail};",
        f"shl.b32 {f['t']}, {f['g']}, 4;",
        f"setp.ge.or.u32 {fail}, {f['off']}, {f['t']}, {fail};",
        f"add.u32 {f['t']}, {f['off']}, {(count - 1) * stride + rowb - 1};",
        f"shr.u32 {f['t']}, {f['t']}, 4;",
        f"setp.ge.or.u32 {fail}, {f['t']}, {f['g']}, {fail};",
        f"vote.sync.any.pred {fail}, {fail}, -1;",
        f"@{fail} bra {call};",
        # lane k, row k: its granules and block
        f"setp.lt.u32 {has}, {f['lane']}, {count};",
        f"mad.lo.u32 {f['t']}, {f['lane']}, {stride}, {f['off']};",
        f"shr.u32 {f['g0']}, {f['t']}, 4;",
        f"shr.u32 {f['b']}, {f['g0']}, {bshift};",
        # its block's summary raised to the clock, its stale bytes emptied by the lane that
        # raises it from 0 (cs_vc_smem_raise)
        f"mad.lo.u32 {f['t']}, {f['w']}, 4, {f['trs']};",
        f"mad.lo.u32 {f['p']}, {f['b']}, {f['rss4']}, {f['t']};",
        f"@{has} ld.volatile.shared.u32 {f['v']}, [{f['p']}];",
        f"setp.eq.and.u32 {z}, {f['v']}, 0, {has};",
        f"@{z} atom.shared.cas.b32 {f['v']}, [{f['p']}], 0, {f['clk']};",
        f"setp.eq.and.u32 {won}, {f['v']}, 0, {z};",
        f"mad.lo.u32 {f['u']}, {f['w']}, {f['gp']}, {f['tr']};",  # the warp's reader bytes
        f"shl.b32 {f['t']}, {f['b']}, {bshift};",
        f"add.u32 {f['t']}, {f['t']}, {f['u']};",
        f"@{won} st.volatile.shared.v4.u32 [{f['t']}], {{0, 0, 0, 0}};",
        f"@{won} st.volatile.shared.v4.u32 [{f['t']}+16], {{0, 0, 0, 0}};",
        f"setp.ne.and.u32 {z}, {f['v']}, 0, {has};",
        f"setp.lt.and.u32 {z}, {f['v']}, {f['clk']}, {z};",
        f"@{z} red.shared.max.u32 [{f['p']}], {f['clk']};",
        "bar.warp.sync -1;",  # (a block's bytes emptied before any lane puts its row's)
        # the row's bytes and sites, where no byte is at this clock yet; a row read at this
        # clock already keeps its sites; a row in part: the probe
        f"add.u32 {f['u']}, {f['u']}, {f['g0']};",
        f"@{has} ld.volatile.shared{_vec(r)[0]} {_vec(r)[1]}, [{f['u']}];"]
    for x in r:  # (a byte at this clock: cs_vc_smem_read_granules's `seen`)
        lines += [f"xor.b32 {f['t']}, {x}, {f['c4']};",
                  f"or.b32 {f['diff']}, {f['diff']}, {f['t']};",
                  f"sub.u32 {f['e']}, {f['t']}, {0x01010101};",
                  f"not.b32 {f['t']}, {f['t']};",
                  f"and.b32 {f['e']}, {f['e']}, {f['t']};",
                  f"or.b32 {f['seen']}, {f['seen']}, {f['e']};"]
    lines += [
        f"and.b32 {f['seen']}, {f['seen']}, {0x80808080};",
        f"setp.eq.and.u32 {fresh}, {f['seen']}, 0, {has};",
        f"@{fresh} st.volatile.shared{_vec(r)[0]} [{f['u']}], {_vec([f['c4']] * nw)[1]};",
        f"mad.lo.u32 {f['t']}, {f['w']}, {f['gp']}, {f['g0']};",
        f"mul.wide.u32 {_D}1, {f['t']}, 4;",
        f"add.s64 {_D}1, {_D}1, {_D}0;",
        *(f"@{fresh} st.relaxed.cta.global.L1::no_allocate.v4.u32 [{_D}1+{16 * j}], "
          f"{{{f['sn']}, {f['sn']}, {f['sn']}, {f['sn']}}};" for j in range(rg // 4)),
        f"setp.ne.and.u32 {z}, {f['seen']}, 0, {has};",
        f"setp.ne.and.u32 {z}, {f['diff']}, 0, {z};",
        f"or.pred {fail}, {fail}, {z};",
        "membar.cta;",  # publish the reads, then look at the writes (Dekker)
        # the row's write epoch: its block's, held whole by a copy; else its granules' one
        f"shl.b32 {f['t']}, {f['b']}, 2;",
        f"add.u32 {f['t']}, {f['t']}, {f['bt']};",
        f"@{has} ld.volatile.shared.u32 {f['e']}, [{f['t']}];",
        f"setp.eq.and.u32 {z}, {f['e']}, {abi.BT_LOCKED}, {has};",
        f"or.pred {fail}, {fail}, {z};",
        f"and.b32 {f['e']}, {f['e']}, {abi.BT_WHOLE - 1};",
        f"setp.eq.and.u32 {z}, {f['e']}, 0, {has};",  # (0: epochs by granule, or none)
        f"shl.b32 {f['t']}, {f['g0']}, 2;",
        f"add.u32 {f['t']}, {f['t']}, {f['tw']};"]
    for j in range(rg // 4):
        lines.append(f"@{z} ld.volatile.shared.v4.u32 {{{', '.join(q)}}}, [{f['t']}+{16 * j}];")
        if j == 0:
            lines.append(f"@{z} mov.u32 {f['e']}, {q[0]};")
        lines += [f"@{z} setp.ne.or.u32 {fail}, {x}, {f['e']}, {fail};" for x in q]
    lines += [
        *judge(f, has, z, fail),
        f"vote.sync.any.pred {fail}, {fail}, -1;",
        f"@!{fail} bra {done};",
        "}",
        f"{call}:"]
    return "\n\t".join(lines) + "\n\t" + probe.rstrip() + f"\n{done}:\n\t"
