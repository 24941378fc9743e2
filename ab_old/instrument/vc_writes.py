"""The inline cp.async write of 16-byte chunks: a warp's copies settled without a call.

In the build whose vector clocks' tables live in the CTA's shared memory with 16-byte
granules (cp.async + ldmatrix GEMMs), a cp.async of 16 bytes is a write by the warp's copy
unit at its next group's clock (checker/checker.cu, cs_cp16: cs_access16_write of one
chunk). Its common case is a few table words a lane: the chunk's last write happens before
the warp (its own earlier copy, waited for), no copy holds the block whole, and the readers
the block's summary names are ordered before the warp by a barrier. There the lane puts
its epoch in the chunk's word by compare-and-swap against the word it judged, stores the
site, fences, looks at the summary, and empties the readers' bytes of the chunk: all that
the probe would have done. Anywhere else the whole warp makes the copies' own call, which
does everything again: a chunk a lane already wrote holds the call's own epoch, which the
probe leaves unjudged (the same copy at the same clock), so no verdict changes. A lane
changes no word before the compare-and-swap, and one that finds the word moved since it
looked writes nothing and sends the warp to the call, so two unordered writers still see
each other's epochs. Readers are looked up from the record (abi.VF_RTID): a CTA with more
than four readers calls. Measured on an H200 (bench_async's cp.async GEMM, A/B, three
rounds, the device's time alone): 0.263 ms with these calls, 0.170 without; its 512 write
calls a CTA had taken 2,029 cycles each.
"""

from __future__ import annotations

import os
import re

from . import abi
from .events import Classified, Event
from .fast_path import REG_FAST
from .vc_reads import TABLE_WORDS, table_words, zeroed

MAX_SITES = 32  # a module with more such copy calls keeps their calls (code growth)

_V = "%__cs_q"  # b32 scratch (a scoped declaration)
_P = "%__cs_qp"  # pred scratch
_D = "%__cs_qd"  # b64 scratch
_READERS = 4  # the readers a write looks at inline (abi.VF_RTID)


def code(addresses: list[str], sites: list[int], done: str) -> list[str]:
    """PTX lines settling the cp.async writes of 16 bytes at the b64 shared addresses
    `addresses` (each copy's site in `sites`) where every lane can, then branching to
    `done`; the caller's call (the copies' probe) follows them, for a warp where some lane
    cannot. Goes inside the scope that defines `addresses`. Each copy is settled whole
    before the next, as the probe's cs_cp16 does (few registers live at once: the kernels
    that take this are at their register limit)."""
    names = ("a", "rec", "w", "g", "base", "tw", "tr", "trs", "rss4", "bt", "gp", "vis", "nl4",
             "shv", "rtid", "clk", "now", "vrow", "q", "b", "t", "x", "o", "tid", "cc", "m",
             "r", "lo", "hi", "own")
    v = {k: f"{_V}{i}" for i, k in enumerate(names)}
    s = [f"{_V}s{i}" for i in range(_READERS)]  # a block's reader summaries
    go, fail, gk, z, same, bad, late, pk = (f"{_P}{i}" for i in range(8))
    lines = [f".reg .b32 {', '.join(v.values())}, {', '.join(s)};",
             f".reg .b64 {_D}0, {_D}1;",
             f".reg .pred {go}, {fail}, {gk}, {z}, {same}, {bad}, {late}, {pk};",
             *zeroed((*v.values(), *s)),
             f"and.b32 {v['rec']}, {REG_FAST}, {(1 << abi.VF_WARP_SHIFT) - 1};",
             f"bfe.u32 {v['w']}, {REG_FAST}, {abi.VF_WARP_SHIFT}, 5;",
             f"setp.ge.u32 {go}, {REG_FAST}, {abi.VF_TAG};",
             *table_words(go, v["rec"], [v[k] for k in TABLE_WORDS]),
             f"@{go} ld.shared.v4.u32 {{{v['x']}, {v['vis']}, {v['nl4']}, {v['t']}}}, "
             f"[{v['rec']}+{4 * abi.VF_CLOCKS}];",
             f"@{go} ld.shared.u32 {v['shv']}, [{v['rec']}+{4 * abi.VF_SHV}];",
             f"@{go} ld.shared.v4.u32 {{{v['lo']}, {v['hi']}, {v['rtid']}, {v['x']}}}, "
             f"[{v['rec']}+{4 * abi.VF_WSITE}];",
             f"mov.b64 {_D}0, {{{v['lo']}, {v['hi']}}};",
             f"setp.ne.and.u32 {go}, {v['rtid']}, {abi.VF_NO_RTID}, {go};",
             # the copy unit's clock: its next group's (checker: __consan_async)
             f"mad.lo.u32 {v['t']}, {v['w']}, 4, {v['shv']};",
             f"@{go} ld.volatile.shared.u32 {v['clk']}, [{v['t']}+{abi.SHV_CPTICKS}];",
             f"add.u32 {v['clk']}, {v['clk']}, 1;",
             f"setp.le.and.u32 {go}, {v['clk']}, {abi.VW_CLOCK_MASK}, {go};",
             f"add.u32 {v['t']}, {v['w']}, {abi.AGENT_CPASYNC};",
             f"shl.b32 {v['now']}, {v['t']}, {abi.VW_TID_SHIFT};",
             f"or.b32 {v['now']}, {v['now']}, {v['clk']};",
             f"mad.lo.u32 {v['vrow']}, {v['w']}, {v['nl4']}, {v['vis']};",
             # the warp's clock of its own copy unit (a copy's usual last writer)
             f"mad.lo.u32 {v['x']}, {v['w']}, 4, {v['vrow']};",
             f"@{go} ld.volatile.shared.u32 {v['own']}, [{v['x']}+{4 * abi.AGENT_CPASYNC}];",
             f"not.pred {fail}, {go};"]
    for address, site in zip(addresses, sites, strict=True):
        q, b = v["q"], v["b"]
        lines += [  # the writer's side: judge the chunk's word, then take it
            f"cvt.u32.u64 {v['a']}, {address};",
            f"sub.u32 {q}, {v['a']}, {v['base']};",
            f"and.b32 {v['t']}, {q}, 15;",
            f"setp.eq.and.u32 {gk}, {v['t']}, 0, {go};",
            f"shr.u32 {q}, {q}, 4;",
            f"setp.lt.and.u32 {gk}, {q}, {v['g']}, {gk};",
            f"not.pred {z}, {gk};",  # (misaligned or outside the tables: the call)
            f"or.pred {fail}, {fail}, {z};",
            f"shr.u32 {b}, {q}, {abi.VSH_BLOCK_GRANULES.bit_length() - 1};",
            f"shl.b32 {v['t']}, {b}, 2;",
            f"add.u32 {v['t']}, {v['t']}, {v['bt']};",
            f"@{gk} ld.volatile.shared.u32 {v['x']}, [{v['t']}];",
            f"shl.b32 {v['t']}, {q}, 2;",
            f"add.u32 {v['t']}, {v['t']}, {v['tw']};",
            f"@{gk} ld.volatile.shared.u32 {v['o']}, [{v['t']}];",
            f"setp.ne.and.u32 {z}, {v['x']}, 0, {gk};",  # (a copy holds the block whole)
            f"or.pred {fail}, {fail}, {z};",
            f"setp.eq.and.u32 {gk}, {v['x']}, 0, {gk};",
            f"and.b32 {v['x']}, {v['o']}, {0xFFFFFFFF & ~abi.VW_ATOMIC};",
            f"setp.eq.and.u32 {same}, {v['x']}, {v['now']}, {gk};",  # (this copy's epoch)
            f"setp.ge.and.u32 {bad}, {v['o']}, {abi.VW_MBAR}, {gk};",  # (an mbarrier's)
            # a last write by another that the warp has not seen: the call judges it
            f"bfe.u32 {v['tid']}, {v['o']}, {abi.VW_TID_SHIFT}, 7;",
            f"and.b32 {v['cc']}, {v['o']}, {abi.VW_CLOCK_MASK};",
            f"setp.ne.and.u32 {z}, {v['o']}, 0, {gk};",
            f"setp.ne.and.u32 {z}, {v['tid']}, {v['w']}, {z};",
            f"setp.lt.and.u32 {z}, {v['o']}, {abi.VW_MBAR}, {z};",
            f"add.u32 {v['x']}, {v['w']}, {abi.AGENT_CPASYNC};",
            f"setp.eq.and.u32 {late}, {v['tid']}, {v['x']}, {z};",  # (own unit: known)
            f"setp.lt.and.u32 {late}, {v['own']}, {v['cc']}, {late};",
            f"setp.ne.and.u32 {z}, {v['tid']}, {v['x']}, {z};",
            f"mad.lo.u32 {v['m']}, {v['tid']}, 4, {v['vrow']};",
            f"@{z} ld.volatile.shared.u32 {v['m']}, [{v['m']}];",
            f"setp.lt.and.u32 {z}, {v['m']}, {v['cc']}, {z};",
            f"or.pred {bad}, {bad}, {z};",
            f"or.pred {bad}, {bad}, {late};",
            f"or.pred {fail}, {fail}, {bad};",
            f"not.pred {z}, {bad};",
            f"and.pred {gk}, {gk}, {z};",
            f"not.pred {z}, {same};",
            f"and.pred {z}, {z}, {gk};",  # (the lanes that take the word)
            f"@{z} atom.shared.cas.b32 {v['r']}, [{v['t']}], {v['o']}, {v['now']};",
            f"setp.ne.and.u32 {bad}, {v['r']}, {v['o']}, {z};",  # (moved since: the call)
            f"or.pred {fail}, {fail}, {bad};",
            f"not.pred {bad}, {bad};",
            f"and.pred {pk}, {gk}, {bad};",
            f"and.pred {z}, {z}, {bad};",  # (the lanes whose word was taken)
            f"mul.wide.u32 {_D}1, {q}, 4;",
            f"add.s64 {_D}1, {_D}1, {_D}0;",
            f"@{z} st.relaxed.cta.global.L1::no_allocate.u32 [{_D}1], {site};",
            "membar.cta;",  # publish the write, then look at the readers (Dekker)
            # the readers' side: every summary ordered before the warp
            f"mad.lo.u32 {v['t']}, {b}, {v['rss4']}, {v['trs']};",
            f"@{pk} ld.volatile.shared.v4.u32 {{{', '.join(s)}}}, [{v['t']}];",
            f"setp.ne.and.u32 {late}, 0, 0, {pk};"]
        for i in range(_READERS):
            lines += [f"bfe.u32 {v['tid']}, {v['rtid']}, {8 * i}, 8;",
                      f"setp.ne.and.u32 {z}, {s[i]}, 0, {pk};",
                      f"setp.ne.and.u32 {z}, {v['tid']}, {v['w']}, {z};",
                      f"setp.ne.and.u32 {z}, {v['tid']}, 255, {z};",
                      f"mad.lo.u32 {v['m']}, {v['tid']}, 4, {v['vrow']};",
                      f"@{z} ld.volatile.shared.u32 {v['m']}, [{v['m']}];",
                      f"setp.gt.and.u32 {z}, {s[i]}, {v['m']}, {z};",
                      f"or.pred {late}, {late}, {z};"]
        lines += [f"or.pred {fail}, {fail}, {late};",
                  f"not.pred {late}, {late};",
                  f"and.pred {late}, {late}, {pk};"]  # (late: now the lanes that empty)
        for i in range(_READERS):
            lines += [f"setp.ne.and.u32 {z}, {s[i]}, 0, {late};",
                      f"mad.lo.u32 {v['t']}, {v['gp']}, {i}, {v['tr']};",
                      f"add.u32 {v['t']}, {v['t']}, {q};",
                      f"@{z} st.volatile.shared.u8 [{v['t']}], 0;"]
    lines += [f"activemask.b32 {v['t']};",
              f"vote.sync.any.pred {fail}, {fail}, {v['t']};",
              f"@!{fail} bra {done};"]
    return lines


def on() -> bool:
    """Inline writes unless CONSAN_INLINE_WRITES=0 (a side-by-side measurement)."""
    return os.environ.get("CONSAN_INLINE_WRITES", "1") != "0"


def eligible(c: Classified, rep: int | None) -> bool:
    """Whether a copy's probe is the one-chunk cp.async probe (abi.PROBE_CP16) of a
    `.shared` address, which the inline write may precede."""
    return c.event is Event.ASYNC_WRITE and c.size == 16 and c.space == abi.SPACE_SHARED and \
        abi.access_probe(c.info, rep)[0] == abi.PROBE_CP16


def around(probe: str, done: str) -> str | None:
    """`probe` (the text of a copy's call, abi.PROBE_CP16, or a run's, abi.PROBE_CP16_RUN,
    in its braces) with the inline write ahead of its call; None where the text is not
    such a call."""
    m = _CALL.search(probe)
    if m is None or not probe.rstrip().endswith("}"):
        return None
    args = [a.strip() for a in m.group(2).split(",")]
    if m.group(1) == abi.PROBE_CP16:
        addresses, sites = args[:1], args[1:2]
    else:
        n = int(args[2 * abi.CP16_RUN_MAX])
        addresses, sites = args[:n], args[abi.CP16_RUN_MAX:abi.CP16_RUN_MAX + n]
    inline = "\n\t".join(code(addresses, [int(x) for x in sites], done))
    head, tail = probe[:m.start()], probe[m.start():]
    return f"{head}{inline}\n\t{tail.rstrip()}\n{done}:\n\t"


_CALL = re.compile(rf"call ({abi.PROBE_CP16_RUN}|{abi.PROBE_CP16}), \(([^)]*)\);")
