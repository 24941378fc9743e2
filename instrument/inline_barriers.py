"""CTA-wide barriers and exits of a phase-mode entry, inline: no call where the warp has a
fast-path record.

In phase mode with the tables in shared memory (the checker build -DCONSAN_PSH) a barrier's
two probes do little: the arrive clears the warp's read bitmap of the next phase (its
words spread over the warp's active lanes), fences and returns the CTA-wide token; the
wait advances the warp's phase. The exit probe does nothing. The warp's fast-path record
(abi.PSH_FAST_*, fast_path.py) holds what that work needs (the window's granules, the
bitmaps' addresses, the phase itself, which is the checker's copy: checker
`cs_psh_phase`), so an entry of a phase-mode module does it inline and calls the probe
only where the record is 0 (the other builds, or phase tables in device memory). Same
effect, so no verdict changes (docs/model.md, *Phase mode in shared memory*).
"""

from __future__ import annotations

from . import abi, fast_path

_B = "%__cs_b"  # b32 scratch (a scoped declaration)
_Q = "%__cs_bq"  # pred scratch


def _guarded(pred: str | None, record: str, label: str, body: list[str], call: str) -> str:
    """`body` where the record is there, else `call`; lanes outside `pred` skip both."""
    lines = ["{ // consan barrier probe, inline", f".reg .b32 {_B}<6>;", f".reg .pred {_Q};"]
    if pred:
        g = pred[1:]
        lines.append(f"@{g[1:] if g.startswith('!') else '!' + g} bra {label}_done;")
    lines += [f"setp.eq.u32 {_Q}, {record}, 0;", f"@{_Q} bra {label}_call;", *body,
              f"bra {label}_done;", "}", f"{label}_call:", call.strip(), f"{label}_done:"]
    return "\n\t".join(lines)


def arrive(pred: str | None, record: str, token: str, call: str, label: str) -> str:
    """The arrive probe of a CTA-wide barrier: the warp's bitmap of the next phase cleared
    by its active lanes (word rank, rank + n, ...), a fence and a warp sync, `token` set
    CTA-wide; `call` (the probe's) without a record."""
    phase, even, odd, words, active, rank = (f"{_B}{i}" for i in range(6))
    w = 4  # bytes of a record word
    loop = f"{label}_clear"
    body = [f"ld.volatile.shared.u32 {phase}, [{record}+{abi.PSH_FAST_PHASE * w}];",
            *fast_path.parity_bitmap(even, odd, phase, phase, _Q, record, following=True),
            f"ld.shared.u32 {words}, [{record}+{abi.PSH_FAST_GRANULES * w}];",
            f"add.u32 {words}, {words}, 31;",
            f"shr.u32 {words}, {words}, 5;",
            f"activemask.b32 {active};",
            f"mov.u32 {rank}, %lanemask_lt;",
            f"and.b32 {rank}, {rank}, {active};",
            f"popc.b32 {rank}, {rank};",
            f"popc.b32 {odd}, {active};",  # (n: the lanes sharing the words)
            f"mad.lo.u32 {even}, {rank}, 4, {even};",
            f"shl.b32 {phase}, {odd}, 2;",
            f"{loop}:",
            f"setp.ge.u32 {_Q}, {rank}, {words};",
            f"@{_Q} bra {loop}_end;",
            f"st.volatile.shared.u32 [{even}], 0;",
            f"add.u32 {rank}, {rank}, {odd};",
            f"add.u32 {even}, {even}, {phase};",
            f"bra {loop};",
            f"{loop}_end:",
            "membar.cta;",
            f"bar.warp.sync {active};",
            f"mov.u32 {token}, {abi.TOKEN_CTA_WIDE};"]
    return _guarded(pred, record, label, body, call)


def wait(pred: str | None, record: str, call: str, label: str) -> str:
    """The wait probe of a CTA-wide barrier: the warp's phase advanced by its lowest active
    lane, then a warp sync; `call` without a record."""
    active, low, phase = (f"{_B}{i}" for i in range(3))
    at = f"[{record}+{abi.PSH_FAST_PHASE * 4}]"
    body = [f"activemask.b32 {active};",
            f"mov.u32 {low}, %lanemask_lt;",
            f"and.b32 {low}, {low}, {active};",
            f"setp.eq.u32 {_Q}, {low}, 0;",
            f"@{_Q} ld.volatile.shared.u32 {phase}, {at};",
            f"@{_Q} add.u32 {phase}, {phase}, 1;",
            f"@{_Q} st.volatile.shared.u32 {at}, {phase};",
            f"bar.warp.sync {active};"]
    return _guarded(pred, record, label, body, call)


def exit_(pred: str | None, record: str, call: str, label: str) -> str:
    """The exit probe: nothing to do where the record is there."""
    return _guarded(pred, record, label, [], call)


# A CTA-wide barrier of a module that syncs only on barrier 0, in the build whose vector
# clocks live in the CTA's shared memory (FLAG_BAR0_ROWS; the record abi.VF_*): the arrive
# copies the warp's clock into its row of the generation's parity and advances the warp's
# own column; the wait joins every warp's row of that parity into the warp's clock, then
# advances its barrier count (checker: cs_bar0_arrive, cs_bar0_wait). A lane takes the
# clock's 16-byte chunks in use at its lane id and 32 above (the mask only grows, and a
# column of a chunk outside the checker's column ranges is 0 in every clock, as its joins
# take them: clocks.h). Where any lane lacks the record or the rows, the warp is not whole
# at the barrier, or the CTA winds down after a deadlock, the warp calls the probe instead.
_Y = "%__cs_y"  # b32 scratch (a scoped declaration)
_YP = "%__cs_yp"  # pred scratch


def _vc_regs(n: int) -> list[str]:
    return [f"{_Y}{i}" for i in range(n)]


def _vc_look(fast: str, ending: bool, lanes: bool) -> tuple[list[str], dict[str, str]]:
    """The record's words and the checks that send the warp to the call (to
    `{label}_call`, appended by the caller); `fail` holds the warp's verdict."""
    r = dict(zip(("act", "rec", "w", "rows", "shv", "x", "t"), _vc_regs(7), strict=True))
    fail = f"{_YP}0"
    lines = [f"activemask.b32 {r['act']};",
             f"setp.lt.u32 {fail}, {fast}, {abi.VF_TAG};",
             f"setp.ne.or.u32 {fail}, {r['act']}, -1, {fail};",
             f"and.b32 {r['rec']}, {fast}, {(1 << abi.VF_WARP_SHIFT) - 1};",
             f"bfe.u32 {r['w']}, {fast}, {abi.VF_WARP_SHIFT}, 5;",
             f"@!{fail} ld.shared.u32 {r['rows']}, [{r['rec']}+{4 * abi.VF_BAR_ROWS}];",
             f"setp.eq.or.u32 {fail}, {r['rows']}, 0, {fail};",
             f"@!{fail} ld.shared.u32 {r['shv']}, [{r['rec']}+{4 * abi.VF_SHV}];"]
    if lanes:  # (an aligned barrier is the warp's live lanes: all of them here)
        lines += [f"mad.lo.u32 {r['t']}, {r['w']}, 4, {r['shv']};",
                  f"@!{fail} ld.volatile.shared.u32 {r['x']}, [{r['t']}+{abi.SHV_LANES}];",
                  f"setp.ne.or.u32 {fail}, {r['x']}, -1, {fail};"]
    if ending:
        lines += [f"@!{fail} ld.volatile.shared.u32 {r['x']}, [{r['shv']}+{abi.SHV_ENDING}];",
                  f"setp.ne.or.u32 {fail}, {r['x']}, 0, {fail};"]
    lines.append(f"vote.sync.any.pred {fail}, {fail}, {r['act']};")
    return lines, r


def _vc_clock(r: dict[str, str]) -> list[str]:
    """The warp's clock (`mine`), the generation's rows, the chunk masks, the lane's offset."""
    more = dict(zip(("lane", "lo", "hi", "nw", "nl4", "vis", "mine", "off"), _vc_regs(15)[7:],
                    strict=True))
    r.update(more)
    return [f"mov.u32 {r['lane']}, %laneid;",
            f"ld.volatile.shared.v2.u32 {{{r['lo']}, {r['hi']}}}, [{r['shv']}+{abi.SHV_CHUNKS}];",
            f"ld.shared.u32 {r['nw']}, [{r['rec']}+{4 * abi.VF_BAR_NW}];",
            f"ld.shared.u32 {r['nl4']}, [{r['rec']}+{4 * abi.VF_NL4}];",
            f"ld.shared.u32 {r['vis']}, [{r['rec']}+{4 * abi.VF_VIS}];",
            f"mad.lo.u32 {r['mine']}, {r['w']}, {r['nl4']}, {r['vis']};",
            f"shl.b32 {r['off']}, {r['lane']}, 4;"]


def _vc_wrap(look: list[str], body: list[str], call: str, label: str, regs: int,
             what: str = "barrier") -> str:
    """`look` (its verdict in the first pred scratch), then `body`, or `call` where it
    failed."""
    lines = [f"{{ // consan vector-clock {what} probe, inline",
             f".reg .b32 {_Y}<{regs}>;", f".reg .pred {_YP}<3>;", *look,
             f"@{_YP}0 bra {label}_call;", *body, f"bra {label}_done;", "}",
             f"{label}_call:", call.strip(), f"{label}_done:"]
    return "\n\t".join(lines)


def vc_arrive(fast: str, token: str, call: str, leave: str, label: str) -> str:
    """The arrive probe of barrier 0, inline; `call` (the probe's) where it cannot be, and
    `leave` (the wait probe's call: it leaves the kernel) where the CTA winds down after
    the arrival, as the probe's entry does."""
    look, r = _vc_look(fast, ending=True, lanes=True)
    body = _vc_clock(r)
    gen, row, p, a, b = _vc_regs(20)[15:]
    c = _vc_regs(24)[20:]
    on = f"{_YP}1"
    body += [f"mad.lo.u32 {r['t']}, {r['w']}, 4, {r['shv']};",
             f"ld.volatile.shared.u32 {gen}, [{r['t']}+{abi.SHV_PHASE}];",
             f"and.b32 {p}, {gen}, 1;",
             f"mad.lo.u32 {p}, {p}, {r['nw']}, {r['w']};",
             f"mad.lo.u32 {row}, {p}, {r['nl4']}, {r['rows']};",
             f"add.u32 {a}, {r['mine']}, {r['off']};",
             f"add.u32 {b}, {row}, {r['off']};"]
    for half, mask in enumerate((r["lo"], r["hi"])):  # the lane's chunks: lane, 32 + lane
        body += [f"shr.b32 {p}, {mask}, {r['lane']};",
                 f"and.b32 {p}, {p}, 1;",
                 f"setp.ne.u32 {on}, {p}, 0;",
                 f"@{on} ld.shared.v4.u32 {{{', '.join(c)}}}, [{a}+{512 * half}];",
                 f"@{on} st.shared.v4.u32 [{b}+{512 * half}], {{{', '.join(c)}}};"]
    body += ["membar.cta;",
             "bar.warp.sync -1;",
             f"setp.eq.u32 {on}, {r['lane']}, 0;",  # the warp's own column, by lane 0
             f"shl.b32 {p}, {r['w']}, 2;",
             f"add.u32 {a}, {r['mine']}, {p};",
             f"@{on} ld.shared.u32 {c[0]}, [{a}];",
             f"@{on} add.u32 {c[0]}, {c[0]}, 1;",
             f"@{on} st.shared.u32 [{a}], {c[0]};",
             f"ld.shared.u32 {b}, [{r['rec']}+{4 * abi.VF_CLOCKS}];",
             f"add.u32 {b}, {b}, {p};",
             f"@{on} st.volatile.shared.u32 [{b}], {c[0]};",
             "bar.warp.sync -1;",
             f"or.b32 {token}, {gen}, {abi.TOKEN_CTA_WIDE};",
             f"ld.volatile.shared.u32 {r['x']}, [{r['shv']}+{abi.SHV_ENDING}];",
             f"setp.ne.u32 {on}, {r['x']}, 0;",
             f"vote.sync.any.pred {on}, {on}, -1;",
             f"@!{on} bra {label}_done;",
             leave.strip()]
    return _vc_wrap(look, body, call, label, 24)


def vc_wait(fast: str, token: str, call: str, label: str) -> str:
    """The wait probe of barrier 0 (its arrive's token in `token`), inline; `call` where it
    cannot be (the CTA winding down among those: the probe leaves)."""
    look, r = _vc_look(fast, ending=True, lanes=False)
    body = _vc_clock(r)
    base, a, q, c0 = _vc_regs(19)[15:]
    v = _vc_regs(23)[19:]
    x = _vc_regs(27)[23:]
    m = _vc_regs(31)[27:]
    on, more = f"{_YP}1", f"{_YP}2"
    body += [f"and.b32 {base}, {token}, 1;",  # warp 0's row of the generation's parity
             f"mul.lo.u32 {base}, {base}, {r['nw']};",
             f"mad.lo.u32 {base}, {base}, {r['nl4']}, {r['rows']};"]
    for half, mask in enumerate((r["lo"], r["hi"])):
        skip, loop = f"{label}_h{half}", f"{label}_r{half}"
        body += [f"shr.b32 {a}, {mask}, {r['lane']};",
                 f"and.b32 {a}, {a}, 1;",
                 f"setp.eq.u32 {on}, {a}, 0;",
                 f"@{on} bra {skip};",
                 f"add.u32 {a}, {base}, {r['off']};",
                 f"add.u32 {a}, {a}, {512 * half};",
                 *(f"mov.u32 {vi}, 0;" for vi in v),
                 f"mov.u32 {q}, 0;",
                 f"{loop}:",  # the maximum of every warp's row
                 f"ld.shared.v4.u32 {{{', '.join(x)}}}, [{a}];",
                 *(f"max.u32 {vi}, {vi}, {xi};" for vi, xi in zip(v, x, strict=True)),
                 f"add.u32 {a}, {a}, {r['nl4']};",
                 f"add.u32 {q}, {q}, 1;",
                 f"setp.lt.u32 {more}, {q}, {r['nw']};",
                 f"@{more} bra {loop};",
                 f"add.u32 {a}, {r['mine']}, {r['off']};",
                 f"add.u32 {a}, {a}, {512 * half};",
                 f"ld.shared.v4.u32 {{{', '.join(m)}}}, [{a}];",
                 *(f"max.u32 {xi}, {mi}, {vi};" for xi, mi, vi in zip(x, m, v, strict=True)),
                 # (the warp's own column stays its own: column 4 * chunk + i == w)
                 f"shl.b32 {c0}, {r['lane']}, 2;",
                 f"add.u32 {c0}, {c0}, {128 * half};",
                 f"sub.u32 {c0}, {r['w']}, {c0};",
                 *(f"setp.eq.u32 {more}, {c0}, {i};\n\t@{more} mov.u32 {x[i]}, {m[i]};"
                   for i in range(4)),
                 f"st.shared.v4.u32 [{a}], {{{', '.join(x)}}};",
                 f"{skip}:"]
    body += ["membar.cta;",
             f"setp.eq.u32 {on}, {r['lane']}, 0;",  # the warp's barriers passed, by lane 0
             f"mad.lo.u32 {a}, {r['w']}, 4, {r['shv']};",
             f"@{on} ld.volatile.shared.u32 {q}, [{a}+{abi.SHV_PHASE}];",
             f"@{on} add.u32 {q}, {q}, 1;",
             f"@{on} st.volatile.shared.u32 [{a}+{abi.SHV_PHASE}], {q};",
             "bar.warp.sync -1;"]
    return _vc_wrap(look, body, call, label, 31)


def _record_u64(rec: str, index: int, lo: str, hi: str, dst: str) -> list[str]:
    """Lines reading the record's u64 at word `index` into `dst` (`lo`, `hi`: scratch)."""
    return [f"ld.shared.v2.u32 {{{lo}, {hi}}}, [{rec}+{4 * index}];",
            f"mov.b64 {dst}, {{{lo}, {hi}}};"]


def _raise_column(rec: str, w: str, a: str, m: str, more: str, column: list[str], off: int,
                  value: str, pred: str) -> list[str]:
    """Lines raising a column of warp `w`'s clock (its row in the record's VF_VIS) to `value`
    where `pred` holds and `value` is larger: `column` adds the column's byte offset into
    `a` (the row's address), `off` more bytes on top; `a`, `m` and `more` are scratch."""
    at = f"[{a}+{off}]" if off else f"[{a}]"
    return [f"ld.shared.u32 {a}, [{rec}+{4 * abi.VF_NL4}];",
            f"ld.shared.u32 {m}, [{rec}+{4 * abi.VF_VIS}];",
            f"mad.lo.u32 {a}, {w}, {a}, {m};",
            *column,
            f"@{pred} ld.shared.u32 {m}, {at};",
            f"setp.gt.and.u32 {more}, {value}, {m}, {pred};",
            f"@{more} st.shared.u32 {at}, {value};"]


def vc_wgmma_group(fast: str, op: int, n: str, call: str, label: str) -> str:
    """A warp's wgmma.commit_group (`op` abi.WGMMA_COMMIT) or wgmma.wait_group `n`, inline
    (checker: cs_unit_groups): lane 0 counts the warp's groups committed, or raises its
    clock's column of the warpgroup's unit to the groups the wait retired; `call` where a
    lane has no record or the warp is not whole (both instructions are .sync.aligned)."""
    act, rec, w, shv, a, c, d, m = (f"{_Y}{i}" for i in range(8))
    fail, lead, more = (f"{_YP}{i}" for i in range(3))
    look = [f"activemask.b32 {act};",
            f"setp.lt.u32 {fail}, {fast}, {abi.VF_TAG};",
            f"setp.ne.or.u32 {fail}, {act}, -1, {fail};",
            f"vote.sync.any.pred {fail}, {fail}, {act};"]
    body = [f"and.b32 {rec}, {fast}, {(1 << abi.VF_WARP_SHIFT) - 1};",
            f"bfe.u32 {w}, {fast}, {abi.VF_WARP_SHIFT}, 5;",
            f"mov.u32 {a}, %laneid;",
            f"setp.eq.u32 {lead}, {a}, 0;",
            f"ld.shared.u32 {shv}, [{rec}+{4 * abi.VF_SHV}];",
            f"mad.lo.u32 {a}, {w}, 4, {shv};",
            f"@{lead} ld.volatile.shared.u32 {c}, [{a}+{abi.SHV_WGMMA_COMMITS}];"]
    if op == abi.WGMMA_COMMIT:
        body += [f"@{lead} add.u32 {c}, {c}, 1;",
                 f"@{lead} st.volatile.shared.u32 [{a}+{abi.SHV_WGMMA_COMMITS}], {c};"]
    else:  # the groups retired: all but the newest n; the unit's column AGENT_WGMMA + w / 4
        body += [f"setp.gt.u32 {more}, {c}, {n};",
                 f"sub.u32 {d}, {c}, {n};",
                 f"selp.u32 {d}, {d}, 0, {more};",
                 *_raise_column(rec, w, a, m, more, [f"shr.u32 {m}, {w}, 2;",
                                                     f"add.u32 {m}, {m}, {abi.AGENT_WGMMA};",
                                                     f"mad.lo.u32 {a}, {m}, 4, {a};"],
                                0, d, lead)]
    body += ["membar.cta;", "bar.warp.sync -1;"]
    return _vc_wrap(look, body, call, label, 8, "wgmma group")


def vc_async_group(fast: str, op: int, n: int, call: str, label: str) -> str:
    """A warp's cp.async.commit_group (`op` abi.ASYNC_COMMIT), cp.async.wait_group `n`
    (abi.ASYNC_WAIT) or cp.async.wait_all (abi.ASYNC_WAIT_ALL: a commit, then a wait for
    none), inline (checker: __consan_async): lane 0 ticks the warp's cp.async unit and keeps
    the group's end clock in the CTA's table, or raises its clock's column of the unit to
    the end of the newest group the wait retired; `call` where a lane has no record or the
    warp is not whole. A wait that keeps `n` groups or more than the ends kept
    (abi.CPASYNC_GROUP_ENDS) acquires nothing, as the probe's."""
    act, rec, w, a, c, t, lo, hi, d, m = (f"{_Y}{i}" for i in range(10))
    tbl, pw, pe, pk = (f"{_Y}d{i}" for i in range(4))
    fail, lead, more = (f"{_YP}{i}" for i in range(3))
    look = [f".reg .b64 {_Y}d<4>;",
            f"activemask.b32 {act};",
            f"setp.lt.u32 {fail}, {fast}, {abi.VF_TAG};",
            f"setp.ne.or.u32 {fail}, {act}, -1, {fail};",
            f"vote.sync.any.pred {fail}, {fail}, {act};"]
    commits, ends = 4 * abi.CTA_CPASYNC_COMMITS, 4 * abi.CTA_CPASYNC_ENDS
    mask = abi.CPASYNC_GROUP_ENDS - 1
    body = [f"and.b32 {rec}, {fast}, {(1 << abi.VF_WARP_SHIFT) - 1};",
            f"bfe.u32 {w}, {fast}, {abi.VF_WARP_SHIFT}, 5;",
            f"mov.u32 {a}, %laneid;",
            f"setp.eq.u32 {lead}, {a}, 0;",
            *_record_u64(rec, abi.VF_CTA, lo, hi, tbl),
            f"mul.wide.u32 {pw}, {w}, 4;",  # pw + commits: the warp's groups committed
            f"add.u64 {pw}, {tbl}, {pw};",
            f"mul.wide.u32 {pe}, {w}, {4 * abi.CPASYNC_GROUP_ENDS};",  # pe + ends: its ends
            f"add.u64 {pe}, {tbl}, {pe};",
            f"@{lead} ld.global.u32 {c}, [{pw}+{commits}];"]
    if op != abi.ASYNC_WAIT:  # commit_group; wait_all commits first
        body += [f"ld.shared.u32 {m}, [{rec}+{4 * abi.VF_SHV}];",
                 f"mad.lo.u32 {m}, {w}, 4, {m};",
                 f"@{lead} ld.volatile.shared.u32 {t}, [{m}+{abi.SHV_CPTICKS}];",
                 f"@{lead} add.u32 {t}, {t}, 1;",
                 f"@{lead} st.volatile.shared.u32 [{m}+{abi.SHV_CPTICKS}], {t};",
                 f"and.b32 {d}, {c}, {mask};",
                 f"mul.wide.u32 {pk}, {d}, 4;",
                 f"add.u64 {pk}, {pe}, {pk};",
                 f"@{lead} st.global.u32 [{pk}+{ends}], {t};",
                 f"@{lead} add.u32 {c}, {c}, 1;",
                 f"@{lead} st.global.u32 [{pw}+{commits}], {c};"]
    keep = n if op == abi.ASYNC_WAIT else 0
    if op != abi.ASYNC_COMMIT and keep < abi.CPASYNC_GROUP_ENDS:
        body += [f"setp.gt.and.u32 {more}, {c}, {keep}, {lead};",  # a group retired
                 f"sub.u32 {d}, {c}, {keep + 1};",  # the newest: group c - keep - 1
                 f"and.b32 {d}, {d}, {mask};",
                 f"mul.wide.u32 {pk}, {d}, 4;",
                 f"add.u64 {pk}, {pe}, {pk};",
                 f"@{more} ld.global.u32 {t}, [{pk}+{ends}];",
                 # the unit's column of the warp's clock: AGENT_CPASYNC + w
                 *_raise_column(rec, w, a, m, more, [f"mad.lo.u32 {a}, {w}, 4, {a};"],
                                4 * abi.AGENT_CPASYNC, t, more)]
    body += ["membar.cta;", "bar.warp.sync -1;"]
    return _vc_wrap(look, body, call, label, 10, "cp.async group")


def vc_mbar_wait(fast: str, addr: list[str], addr_reg: str, result: str, parity: str,
                 call: str, label: str, lanes_on: str | None = None) -> str:
    """A warp's successful `mbarrier.try_wait.parity` (every lane waited on the same
    mbarrier of this CTA and succeeded), inline (checker: cs_mbar_lead's wait): the
    mbarrier's entry found among the CTA's keys (a lane a key, in the probe's order), the
    warp's spin watch reset, then, where the parity is the latest completed phase's, the
    phase's clock slot joined into the warp's clock, a lane per 16-byte chunk in use.
    `addr` computes the operand into `addr_reg`. `call` (the probe's, made after a failure
    too) where a lane has no record, the warp is not whole, a lane failed or waited on
    another address or parity, the address is another CTA's, the entry is not found or
    not live, or the CTA winds down.

    `lanes_on`: the predicate of the lanes that run the wait in a loop every lane of the warp
    runs (loops.py: one lane on, the others marked off). Then only those lanes' outcomes,
    addresses and parities count, the first one's taken for the warp: what the probe does
    with its leader, the first lane on (a TMA producer's waits on its `empty` mbarriers,
    which called the probe on every success). Measured on an H200 (A/B, three rounds), the
    TMA ring once its consumers' row reads were inline and its producer set its pace:
    0.109 -> 0.101 ms by the device's time alone, 0.110 -> 0.100 in a process of its own
    (while the consumers set it: 0.128 -> 0.129)."""
    r = dict(zip(("act", "rec", "w", "a", "b", "lane", "shv", "k", "j", "t", "g", "d1", "nl4",
                  "mine", "lo", "hi"), _vc_regs(16), strict=True))
    c = _vc_regs(24)[16:20]
    m = _vc_regs(24)[20:]
    tbl, e, sp = f"{_Y}d0", f"{_Y}d1", f"{_Y}d2"
    fail, lead, on = (f"{_YP}{i}" for i in range(3))
    look = [f".reg .b64 {_Y}d<3>;",
            f"activemask.b32 {r['act']};",
            f"setp.lt.u32 {fail}, {fast}, {abi.VF_TAG};",
            f"setp.ne.or.u32 {fail}, {r['act']}, -1, {fail};",
            *([f"or.pred {fail}, {fail}, !{result};"] if lanes_on is None else
              [f"not.pred {lead}, {result};", f"and.pred {lead}, {lead}, {lanes_on};",
               f"or.pred {fail}, {fail}, {lead};"]),
            f"vote.sync.any.pred {fail}, {fail}, {r['act']};"]
    call_at = f"{label}_call"
    # the lane whose address and parity count: lane 0, or the first lane on
    src = "0" if lanes_on is None else r["g"]
    first = [] if lanes_on is None else [
        f"vote.sync.ballot.b32 {r['t']}, {lanes_on}, -1;",
        f"setp.eq.u32 {fail}, {r['t']}, 0;",
        f"vote.sync.any.pred {fail}, {fail}, -1;",
        f"@{fail} bra {call_at};",
        f"neg.s32 {r['g']}, {r['t']};",
        f"and.b32 {r['g']}, {r['g']}, {r['t']};",
        f"bfind.u32 {r['g']}, {r['g']};"]
    differs = f"setp.ne.u32 {fail}, {r['a']}, {r['b']};"
    if lanes_on is not None:  # (lanes off: whatever their registers hold)
        differs = f"setp.ne.and.u32 {fail}, {r['a']}, {r['b']}, {lanes_on};"
    body = [*addr, *first,
            f"cvt.u32.u64 {r['a']}, {addr_reg};",  # the shared address: one lane's, this CTA's
            f"shfl.sync.idx.b32 {r['b']}, {r['a']}, {src}, 31, -1;",
            differs,
            f"mov.u32 {r['d1']}, {parity};",  # ...and one parity (that lane's, from here on)
            f"shfl.sync.idx.b32 {r['mine']}, {r['d1']}, {src}, 31, -1;"]
    if lanes_on is None:
        body += [f"setp.ne.or.u32 {fail}, {r['d1']}, {r['mine']}, {fail};"]
    else:
        body += [f"setp.ne.u32 {lead}, {r['d1']}, {r['mine']};",
                 f"and.pred {lead}, {lead}, {lanes_on};",
                 f"or.pred {fail}, {fail}, {lead};",
                 f"mov.u32 {r['a']}, {r['b']};"]  # (every lane: the one address)
    body += [f"shr.u32 {r['t']}, {r['a']}, {abi.RANK_SHIFT};",
            f"setp.ne.or.u32 {fail}, {r['t']}, 0, {fail};",
            f"vote.sync.any.pred {fail}, {fail}, -1;",
            f"@{fail} bra {call_at};",
            f"and.b32 {r['rec']}, {fast}, {(1 << abi.VF_WARP_SHIFT) - 1};",
            f"bfe.u32 {r['w']}, {fast}, {abi.VF_WARP_SHIFT}, 5;",
            f"ld.shared.u32 {r['shv']}, [{r['rec']}+{4 * abi.VF_SHV}];",
            f"mov.u32 {r['lane']}, %laneid;",
            f"setp.eq.u32 {lead}, {r['lane']}, 0;",
            # the entry: lane i looks at key (h + i) % MBARRIERS, h = (off / 8) % MBARRIERS
            f"shr.u32 {r['j']}, {r['a']}, 3;",
            f"add.u32 {r['t']}, {r['j']}, {r['lane']};",
            f"and.b32 {r['t']}, {r['t']}, {abi.MBARRIERS - 1};",
            f"mad.lo.u32 {r['t']}, {r['t']}, 4, {r['shv']};",
            f"ld.volatile.shared.u32 {r['k']}, [{r['t']}+{abi.SHV_MKEY}];",
            f"add.u32 {r['b']}, {r['a']}, 1;",
            f"setp.eq.u32 {on}, {r['k']}, {r['b']};",
            f"vote.sync.ballot.b32 {r['k']}, {on}, -1;",
            f"setp.eq.u32 {fail}, {r['k']}, 0;",
            f"@{fail} bra {call_at};",
            f"neg.s32 {r['t']}, {r['k']};",  # the first lane that found it
            f"and.b32 {r['t']}, {r['t']}, {r['k']};",
            f"bfind.u32 {r['t']}, {r['t']};",
            f"add.u32 {r['j']}, {r['j']}, {r['t']};",
            f"and.b32 {r['j']}, {r['j']}, {abi.MBARRIERS - 1};",
            f"mad.lo.u32 {r['t']}, {r['j']}, 4, {r['shv']};",  # live in this generation
            f"ld.volatile.shared.u32 {r['k']}, [{r['t']}+{abi.SHV_MLIVE}];",
            f"ld.volatile.shared.u32 {r['g']}, [{r['shv']}+{abi.SHV_GEN}];",
            f"setp.ne.u32 {fail}, {r['k']}, {r['g']};",
            f"ld.volatile.shared.u32 {r['k']}, [{r['shv']}+{abi.SHV_ENDING}];",
            f"setp.ne.or.u32 {fail}, {r['k']}, 0, {fail};",
            f"vote.sync.any.pred {fail}, {fail}, -1;",
            f"@{fail} bra {call_at};",
            # the warp's spin watch reset (CTA table), by lane 0
            *_record_u64(r["rec"], abi.VF_CTA, r["lo"], r["hi"], tbl),
            f"mul.wide.u32 {sp}, {r['w']}, 4;",
            f"add.u64 {sp}, {tbl}, {sp};",
            f"@{lead} st.global.u32 [{sp}+{4 * abi.CTA_SPIN_PHASE}], 0;",
            # the phases completed (an acquire), and the waited parity's phase
            *_record_u64(r["rec"], abi.VF_MBAR, r["lo"], r["hi"], e),
            f"ld.shared.u32 {r['nl4']}, [{r['rec']}+{4 * abi.VF_NL4}];",
            f"mad.lo.u32 {r['t']}, {r['nl4']}, {abi.MB_SLOTS}, {4 * abi.MB_VC};",  # an entry
            f"mul.wide.u32 {sp}, {r['j']}, {r['t']};",
            f"add.u64 {e}, {e}, {sp};",
            f"ld.acquire.cta.global.u32 {r['k']}, [{e}+{4 * abi.MB_PHASE}];",
            f"add.u32 {r['d1']}, {r['k']}, -1;",
            f"xor.b32 {r['t']}, {r['d1']}, {r['mine']};",
            f"and.b32 {r['t']}, {r['t']}, 1;",
            f"setp.ne.u32 {fail}, {r['t']}, 0;",  # a stale parity acquires nothing
            f"setp.eq.or.u32 {fail}, {r['k']}, 0, {fail};",
            f"vote.sync.any.pred {fail}, {fail}, -1;",
            f"@{fail} bra {label}_done;",
            # its slot, joined into the warp's clock: lane i takes chunks i and 32 + i
            f"and.b32 {r['t']}, {r['d1']}, {abi.MB_SLOTS - 1};",
            f"mul.lo.u32 {r['t']}, {r['t']}, {r['nl4']};",
            f"add.u32 {r['t']}, {r['t']}, {4 * abi.MB_VC};",
            f"shl.b32 {r['g']}, {r['lane']}, 4;",
            f"add.u32 {r['t']}, {r['t']}, {r['g']};",
            f"cvt.u64.u32 {sp}, {r['t']};",
            f"add.u64 {sp}, {e}, {sp};",
            f"ld.shared.u32 {r['mine']}, [{r['rec']}+{4 * abi.VF_VIS}];",
            f"mad.lo.u32 {r['mine']}, {r['w']}, {r['nl4']}, {r['mine']};",
            f"add.u32 {r['mine']}, {r['mine']}, {r['g']};",
            f"ld.volatile.shared.v2.u32 {{{r['lo']}, {r['hi']}}}, [{r['shv']}+{abi.SHV_CHUNKS}];"]
    for half, mask in enumerate((r["lo"], r["hi"])):
        body += [f"shr.b32 {r['t']}, {mask}, {r['lane']};",
                 f"and.b32 {r['t']}, {r['t']}, 1;",
                 f"setp.ne.u32 {on}, {r['t']}, 0;",
                 f"@{on} ld.global.v4.u32 {{{', '.join(c)}}}, [{sp}+{512 * half}];",
                 f"@{on} ld.shared.v4.u32 {{{', '.join(m)}}}, [{r['mine']}+{512 * half}];",
                 *(f"@{on} max.u32 {mi}, {mi}, {ci};" for mi, ci in zip(m, c, strict=True)),
                 f"@{on} st.shared.v4.u32 [{r['mine']}+{512 * half}], {{{', '.join(m)}}};"]
    body += ["bar.warp.sync -1;"]
    return _vc_wrap(look, body, call, label, 24, "mbarrier wait")
