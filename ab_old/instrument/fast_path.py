"""An inline test before an access probe in a loop: skip the call when it would change nothing.

In phase mode with the tables in the CTA's shared memory (the checker build -DCONSAN_PSH)
an access probe returns without a store, a fence or a finding when the access repeats
what its warp already did in this phase: a read of granules whose bits its read bitmap of
this phase holds, a write of a granule whose write epoch is already the warp's of this
phase, an atomic on a granule whose epoch is already this phase's atomic one (the warp's or
"several warps"). Such repeats come from loops (a histogram's shared atomics, a spin on a
flag, `s[t] += x` in a loop), so an access in a loop of an entry of a phase-mode module
first makes that test inline, from the warp's fast-path record (abi.PSH_FAST_*, whose
shared address __consan_cta_begin returns: 0 in the other builds, and then every access
calls), and calls the probe only where it fails. The test is the probe's own first test,
so no verdict changes (docs/model.md, *Phase mode in shared memory*).

Covered: `.shared` reads of up to 16 bytes within one bitmap word (of up to SPAN_MAX
bytes, a merged read's, by `span_read`), `.shared` writes of 1,
2, 4, 8 or 16 bytes (aligned as PTX requires: one granule or part of one, or two or four
whole granules) and atomics of one granule; not ldmatrix, generic addresses, nor
coalesced probes. A store that passes a value tag (Triton's) publishes it first, inline
(value_tags.publish), as its probe's call did: a later write by another warp in this
phase is judged against it.

A plain write and a read also go on inline where the test fails, in a loop or not: the
first write of a granule in a phase changes the tables but cannot race with a write (no
epoch of this phase), so its epoch and site are stored here and the checker is called
only to look for this phase's readers where there are some (`_write_update`); a read sets
its warp's bits and calls only where a granule was never written or was written in this
phase by another warp (`_read_update`; a read of several granules by the warp's lanes
together: `span_read`). Measured on the H100 (bench_clean,
two rounds each, the register cap of 80 then in use): stencil_1d 32.07 -> 21.58 ms,
transpose_tiled 11.42 -> 4.80 ms (its tile written and read), the others unchanged. The
span read, on an H200 (bench_clean beside the tree before it, in one call): stencil_1d
18.687 -> 10.792 ms (its seven neighbours, one 28-byte read; 10.715 and 10.713 ms in two
later calls), the others unchanged.
"""

from __future__ import annotations

import os

from . import abi, echo
from .events import Classified, Event
from .ptx import Item

REG_FAST = "%__cs_fast"  # b32: the warp's fast-path record (0: none), from cta_begin
REG_GRANULES = "%__cs_fg"  # b32: the window's granules (0: no record), loaded once
REG_EPOCHS = "%__cs_fe"  # b32: the shared address of the write epochs, loaded once
_F = "%__cs_fr"  # b32 scratch registers of one test (a scoped declaration)
_Q = "%__cs_fq"  # pred scratch

_WORD = 4  # bytes of a record word
_E = "%__cs_fw"  # b32 scratch: the epochs of a write of several granules


def _at(reg: str, offset: int) -> str:
    return f"[{reg}+{offset}]" if offset else f"[{reg}]"


def parity_bitmap(out: str, other: str, phase: str, scratch: str, q: str,
                  record: str = REG_FAST, following: bool = False) -> list[str]:
    """PTX putting in `out` the shared address of the warp's read bitmap of `phase`'s parity
    (with `following`, of the phase after it), from the warp's record (abi.PSH_FAST_*);
    `other`, `scratch` (which may be `phase`) and the predicate `q` are clobbered."""
    return [f"ld.shared.v2.u32 {{{out}, {other}}}, [{record}+{abi.PSH_FAST_BITS_EVEN * _WORD}];",
            f"and.b32 {scratch}, {phase}, 1;",
            f"setp.{'eq' if following else 'ne'}.u32 {q}, {scratch}, 0;",
            f"selp.u32 {out}, {other}, {out}, {q};"]


def granules(c: Classified) -> int:
    """The granules a write that takes the test covers (1, or 2 or 4 for 8 or 16 bytes)."""
    return max(1, c.size // abi.GRANULE_BYTES) if c.event is Event.WRITE else 1


def spans_ok(target: list[str]) -> bool:
    """Whether a module of this `.target` can take `span_read` (redux.sync: sm_80 on)."""
    arch = next((t for t in target if t.startswith("sm_")), "")
    digits = "".join(ch for ch in arch[3:] if ch.isdigit())
    return bool(digits) and int(digits) >= 80


def spanned(c: Classified) -> bool:
    """A `.shared` read of several granules, which `span_read` serves."""
    return c.event is Event.READ and abi.GRANULE_BYTES < c.size <= SPAN_MAX


def eligible(it: Item, c: Classified, value_tags: bool, coalesced: bool,
             spans: bool = True) -> bool:
    """Whether an access takes the inline test (the module and loop are the caller's);
    `spans`: the module can take `span_read` (spans_ok)."""
    if coalesced or c.space != abi.SPACE_SHARED or c.shape != abi.SHAPE_PLAIN or c.idem:
        return False
    if c.event is Event.READ:
        return 0 < c.size <= 16 or spans and spanned(c)
    if c.event is Event.WRITE:  # (a value tag is published before the test: rewrite.py;
        # a store of 1 or 2 bytes writes its granule as the probe takes it; one of 8 or 16,
        # aligned as PTX requires, two or four whole granules)
        return c.size in (1, 2, 4, 8, 16)
    return c.event is Event.ATOMIC and c.size == abi.GRANULE_BYTES


def load_code() -> str:
    """PTX after the begin probe: the window's granules and the epochs' address, in registers
    for the kernel's life (0 granules without a record: every test then fails at once)."""
    return (f"mov.u32 {REG_GRANULES}, 0;\n\t"
            f"{{ .reg .pred %__cs_fp; setp.ne.u32 %__cs_fp, {REG_FAST}, 0; "
            f"@%__cs_fp ld.shared.v2.u32 {{{REG_GRANULES}, {REG_EPOCHS}}}, [{REG_FAST}]; }}\n\t")


def updates(it: Item, c: Classified, value_tags: bool, spans: bool = True) -> bool:
    """Whether an access also takes the inline update where the test fails: a plain write
    (`_write_update`), a read of one granule (`_read_update`) or, with `spans`, of several
    (`span_read`)."""
    if not eligible(it, c, value_tags, False, spans):
        return False
    return c.event is Event.WRITE or c.event is Event.READ and (
        c.size <= abi.GRANULE_BYTES or spans and spanned(c))


# A module with at most this many accesses that take an update has the update written out
# at each; one with more calls one copy per kind (`function`). Measured on the H100
# (bench_clean): stencil_1d 17.13 ms with its three writes' updates written out, 20.35 ms
# calling the function; transpose_tiled 3.39 / 4.92 ms (eight accesses). Written out, each
# costs the link about 6 ms: Inductor's softmax and layer norm (one kernel, 20 accesses)
# linked in 0.206 s so, 0.087 s calling the functions (2-core CPU machine, nvJitLink 13.0,
# the phase-mode checker, medians of 7; the H100 machine's host assembles a function 2.3
# times slower); at each of an unrolled bitonic sort's 442 accesses, 3.2 s instead of 0.4 s.
INLINE_MAX = 16
# A module with at most this many CTA barriers and exits has them written out
# (instrument/inline_barriers.py); one with more calls their probes (the step form).
BARRIERS_INLINE_MAX = 32


def inline_max(limit: int = INLINE_MAX) -> int:
    """`limit`, or CONSAN_INLINE_MAX (0: every module calls the functions; the GPU tests
    run both forms)."""
    return int(os.environ.get("CONSAN_INLINE_MAX", limit))


def function_name(c: Classified) -> str:
    """The module's own function that makes an access's test and update (`function`)."""
    assert c.info == abi.access_info(c.size, _MODES[c.event], abi.SPACE_SHARED), c
    return f"__consan_inline_{'write' if c.event is Event.WRITE else 'read'}{c.size}"


_MODES = {Event.WRITE: abi.MODE_WRITE, Event.READ: abi.MODE_READ}


def _served(c: Classified, done: str, probe: str, on: str | None = None) -> str:
    """One access's test, update and checker calls inside a module function, its address
    in %__cs_a and its site in %__cs_site, made where the predicate `on` holds (None:
    everywhere); ends at the label `done`."""
    return (test(on, c, [], "%__cs_a", done, probe, (abi.PROBE_ACCESS, "%__cs_site", []),
                 call_probe(c)) + f"\n{done}:\n\t")


_HEAD = ("\t.reg .b64 %__cs_a;",
         f"\t.reg .b32 %__cs_site, {REG_FAST}, {REG_GRANULES}, {REG_EPOCHS};")


def function(c: Classified) -> str:
    """PTX of the function, defined in the rewritten module, that an access with an update
    calls in place of its probe, with the probe's address and site, the warp's record and
    whether the lane makes the access (every lane that reaches the access calls it: a call
    from part of a warp splits it, echo.py): the test, the update, and the checker's entry
    (its probe, or `call_probe`) where they do not settle the access. One copy per module:
    written out at every access (hundreds in an unrolled bitonic sort) the code made
    nvJitLink's work seven times longer."""
    params = ", ".join(f".param {t} __cs_q{i}" for i, t in enumerate(FUNCTION_PARAMS))
    return "\n".join([
        f".func {function_name(c)} ({params})", "{", *_HEAD,
        "\t.reg .b32 %__cs_on;", "\t.reg .pred %__cs_onp;",
        "\tld.param.b64 %__cs_a, [__cs_q0];",
        "\tld.param.b32 %__cs_site, [__cs_q1];",
        f"\tld.param.b32 {REG_FAST}, [__cs_q2];",
        "\tld.param.b32 %__cs_on, [__cs_q3];",
        "\tsetp.ne.u32 %__cs_onp, %__cs_on, 0;",
        "\t" + load_code() + _served(c, "$__cs_done", "$__cs_probe", "@%__cs_onp") + "ret;",
        "}", ""])


# A run of accesses one after another (nothing between them but register arithmetic that
# leaves their addresses alone) calls one function for the whole run: ptxas's time grows
# with a kernel's call sites. Measured on the 2-core CPU machine (ptxas user time, medians
# of 7, -maxrregcount=40): an unrolled bitonic sort (474 such accesses in 138 runs) 0.30 s
# with a call per access, 0.20 s with a call per run; 0.11 s without the calls.
RUN_MAX = 8


def run_name(cs: list[Classified], lead: int = 0, step: bool = False) -> str:
    """The module's function for a run of accesses of these kinds and sizes, in order: its
    first `lead` made by every lane that calls (`if` before the others), after a barrier's
    step (`b`) with `step` (instrument/runs.py)."""
    parts = [f"{'w' if c.event is Event.WRITE else 'r'}{c.size}" for c in cs]
    if lead:
        parts.insert(lead, "if")
    return "__consan_inline_run_" + "_".join(["b", *parts] if step else parts)


def run_function(cs: list[Classified], lead: int = 0, step: bool = False) -> str:
    """PTX of the function a run of accesses calls in place of their probes: each access's
    test, update and checker calls (`function`'s), one after another in program order.
    Its parameters: each access's shared-memory address (32 bits: a `.shared` address is a
    window offset), the first access's site (the others' follow it), the warp's record,
    and 1 where the lane makes the accesses (a converted or hoisted branch's: every lane
    calls it, echo.py), else 0, for all but the first `lead`, which every lane makes; with
    `step`, last, the site of the CTA barrier whose step (abi.PROBE_BAR_STEP) it makes
    first. A warp's accesses between two barriers are judged by phase, not by time
    (docs/model.md, *Phase mode*), so the verdicts are those of the probes one at a time
    (where the call goes: instrument/runs.py)."""
    n = len(cs)
    params = ", ".join([*(f".param .b32 __cs_q{i}" for i in range(n)),
                        ".param .b32 __cs_qs", ".param .b32 __cs_qf", ".param .b32 __cs_qo",
                        *([".param .b32 __cs_qb"] if step else [])])
    lines = [f".func {run_name(cs, lead, step)} ({params})", "{", *_HEAD,
             "\t.reg .b32 %__cs_s0, %__cs_u;", "\t.reg .pred %__cs_onp;"]
    if step:  # (the barrier's step before this phase's first test reads the phase)
        lines += ["\tld.param.b32 %__cs_u, [__cs_qb];", f"\tcall {abi.PROBE_BAR_STEP}, (%__cs_u);"]
    lines += ["\tld.param.b32 %__cs_s0, [__cs_qs];", f"\tld.param.b32 {REG_FAST}, [__cs_qf];",
              "\tld.param.b32 %__cs_u, [__cs_qo];", "\tsetp.ne.u32 %__cs_onp, %__cs_u, 0;",
              "\t" + load_code().rstrip()]
    for i, c in enumerate(cs):
        on = "@%__cs_onp" if i >= lead else None
        lines += [f"\tld.param.b32 %__cs_u, [__cs_q{i}];", "\tcvt.u64.u32 %__cs_a, %__cs_u;",
                  f"\tadd.u32 %__cs_site, %__cs_s0, {i};",
                  "\t" + _served(c, f"$__cs_done{i}", f"$__cs_probe{i}", on).rstrip()]
    return "\n".join([*lines, "\tret;", "}", ""])


# (the probe's address and site, the warp's fast-path record, and 1 where the lane makes the
# access, else 0; the info word is the function's own: an access it serves is a plain
# `.shared` one of its kind and size)
FUNCTION_PARAMS = (".b64", ".b32", ".b32", ".b32")


def call_probe(c: Classified) -> str:
    """The checker entry an access with an inline update calls where the update needs the
    rest of the probe (abi.PROBE_ACCESS's arguments; a span's two more: `span_read`)."""
    if c.event is Event.WRITE:
        return abi.PROBE_WRITE_READERS
    return abi.PROBE_READ_SPAN_JUDGE if spanned(c) else abi.PROBE_READ_JUDGE


def test(pred: str | None, c: Classified, address_code: list[str], addr_reg: str, skip: str,
         slow: str, probe: tuple[str, str, list[str]], update: str | None = None,
         function: bool = False) -> str:
    """PTX that goes on at `skip` (past the probe) where the access (guarded by `pred`)
    repeats its warp's in this phase, and calls the probe elsewhere; `address_code` puts
    the access's address in the b64 register `addr_reg`. `probe`: (its entry, the site,
    the arguments after the info word). `update` (the entry `call_probe`): where the test
    fails, the probe's work is done here where it can be (`_write_update`,
    `_read_update`), and that entry called where it is needed. `function`: the probe is
    the module's function (`function`), which every lane calls, those whose test passed
    or that skip the access with 0 in its last parameter.

    Each lane's test and update end at one point, where the warp's lanes that reach the
    access make each call together, those that need none echoing (echo.py): a call from
    the lanes whose test failed alone left the warp split (measured on the H100: a loop's
    shared atomics, half of a warp repeating, the others not)."""
    if update is not None and spanned(c):
        return span_read(pred, c, address_code, addr_reg, skip, slow, probe, update)
    f = [f"{_F}{i}" for i in range(9)]
    ph, warp = f[0], f[1]
    a, b = f[4], f[5]
    q, q2 = f"{_Q}0", f"{_Q}1"
    rec = REG_FAST
    n = granules(c)  # (a write of 8 or 16 bytes: its granules' epochs, two words each)
    e = [f"{_E}{i}" for i in range(2 * n)] if n > 1 else [f[6], f[7]]
    lines = ["{ // consan fast path",
             f".reg .b32 {_F}<9>;",
             *([f".reg .b32 {_E}<{2 * n}>;"] if n > 1 else []),
             f".reg .pred {_Q}<2>;",
             *_DECLS,
             f"activemask.b32 {_M};",  # (before any lane's branch)
             f"mov.b32 {_K}, 0;",
             *address_code,
             f"cvt.u32.u64 {a}, {addr_reg};",
             f"add.u32 {b}, {a}, {c.size - 1};",
             f"shr.u32 {a}, {a}, 2;",  # first granule
             f"shr.u32 {b}, {b}, 2;",  # last granule
             f"setp.lt.u32 {q}, {b}, {REG_GRANULES};"]  # (none without a record)
    join = f"{slow}_join"
    if pred:  # lanes that skip the access need no call: they go to the join before any
        # load, since their address may be anything (an 8-byte store's lane held 4 mod 8:
        # a misaligned v4 load), and take part in the calls as echoes (a lane whose guard
        # was off once called the probe with its own address: false races on the H100)
        guard = pred[1:]
        lines.append(f"@{guard[1:]} bra {join};" if guard.startswith("!") else
                     f"@!{guard} bra {join};")
    if c.event is Event.READ:
        k0, k1, word = f[6], f[7], f[8]
        lines += [f"shr.u32 {k0}, {a}, 5;",
                  f"shr.u32 {k1}, {b}, 5;",
                  f"setp.eq.and.u32 {q}, {k0}, {k1}, {q};",
                  f"@!{q} bra {slow};",
                  f"ld.volatile.shared.v2.u32 {{{ph}, {warp}}}, "
                  f"[{rec}+{abi.PSH_FAST_PHASE * _WORD}];",
                  *parity_bitmap(word, f[3], ph, k1, q2),
                  f"shl.b32 {k0}, {k0}, 2;",
                  f"add.u32 {word}, {word}, {k0};",  # the bitmap word's address
                  f"ld.volatile.shared.u32 {f[2]}, [{word}];",
                  # the bits lo..hi of the word: ((2 << hi) - 1) & ~((1 << lo) - 1)
                  f"and.b32 {a}, {a}, 31;",
                  f"and.b32 {b}, {b}, 31;",
                  f"mov.b32 {k0}, 2;",
                  f"shl.b32 {b}, {k0}, {b};",
                  f"sub.u32 {b}, {b}, 1;",
                  f"mov.b32 {k0}, 1;",
                  f"shl.b32 {a}, {k0}, {a};",
                  f"sub.u32 {a}, {a}, 1;",
                  f"not.b32 {a}, {a};",
                  f"and.b32 {a}, {a}, {b};",  # (a: the access's bits)
                  f"and.b32 {f[2]}, {f[2]}, {a};",
                  f"setp.eq.u32 {q}, {f[2]}, {a};"]
    else:
        lo, hi, want = f[6], f[7], f[8]
        if n == 1:
            lines.append(f"setp.eq.and.u32 {q}, {a}, {b}, {q};")
        lines += [f"@!{q} bra {slow};",
                  f"ld.volatile.shared.v2.u32 {{{ph}, {warp}}}, "
                  f"[{rec}+{abi.PSH_FAST_PHASE * _WORD}];",
                  f"mad.lo.u32 {a}, {a}, 8, {REG_EPOCHS};"]
        if n == 1:
            lines.append(f"ld.volatile.shared.v2.u32 {{{lo}, {hi}}}, [{a}];")
        for k in range(0, 2 * n if n > 1 else 0, 4):  # (2 or 4 aligned granules' epochs)
            lines.append(f"ld.volatile.shared.v4.u32 {{{', '.join(e[k:k + 4])}}}, [{a}+{4 * k}];")
        lines.append(f"setp.eq.u32 {q}, {e[0]}, {ph};")  # written in this phase
        if c.event is Event.WRITE:  # by this warp, plainly (every granule)
            lines.append(f"setp.eq.and.u32 {q}, {e[1]}, {warp}, {q};")
            for i in range(1, n):
                lines += [f"setp.eq.and.u32 {q}, {e[2 * i]}, {ph}, {q};",
                          f"setp.eq.and.u32 {q}, {e[2 * i + 1]}, {warp}, {q};"]
        else:  # atomically, by this warp or by several
            atom = abi.WW_FLAG_ATOMIC << (abi.WW_FLAGS_SHIFT - abi.WW_TID_SHIFT)
            multi = atom | abi.PSH_MULTI_WARP
            lines += [f"or.b32 {want}, {warp}, {atom};",
                      f"setp.eq.u32 {q2}, {hi}, {want};",
                      f"setp.eq.or.u32 {q2}, {hi}, {multi}, {q2};",
                      f"and.pred {q}, {q}, {q2};"]
    lines.append(f"@{q} bra {join};")
    entry, site, extra = probe
    if update is not None:
        if c.event is Event.WRITE:
            lines += _write_update(f, e, q, site, join, slow)
        else:
            lines += _read_update(f, q, site, addr_reg, join, slow)
        lines += [f"{slow}_call:", f"mov.b32 {_K}, 1;", f"bra {join};"]
    lines += [f"{slow}:", f"mov.b32 {_K}, 2;", f"{join}:",
              f"setp.ne.u32 {q}, {_K}, 0;",
              f"vote.sync.any.pred {q}, {q}, {_M};",  # (no call: the warp goes on)
              f"@!{q} bra {skip};"]
    if update is not None:
        lines += _together(1, c, addr_reg, update, site, [], f"{slow}_n1")
    if function:
        lines += [f"setp.eq.u32 {_ON}, {_K}, 2;",
                  f"selp.b32 {_I}, 1, 0, {_ON};",
                  f"call {entry}, ({addr_reg}, {site}, {', '.join(extra)}, {_I});"]
    else:
        lines += _together(2, c, addr_reg, entry, site, extra, f"{slow}_n2")
    lines.append("}")
    return "\n\t".join(lines) + "\n\t"


# A read of more granules than one (an int2 or int4, a stencil's neighbours merged into one
# read: coalesce.py) takes `span_read` where its lanes' reads fall within 64 granules.
SPAN_MAX = 64 * abi.GRANULE_BYTES
_S = "%__cs_sr"  # b32 scratch of a span read (a scoped declaration)
_SD = "%__cs_sd"  # b64 scratch


def span_read(pred: str | None, c: Classified, address_code: list[str], addr_reg: str,
              skip: str, slow: str, probe: tuple[str, str, list[str]], update: str) -> str:
    """A read of several granules made by the warp's lanes together, as the probe's read
    path takes one whose lanes read within three bitmap words (cs_phase_smem_access): the
    warp's granules are the union of its lanes' (bit r: granule G0 + r, within 64); the
    bits the warp's bitmap of this phase lacks are set (by its lowest lane, an atomic a
    word, as the probe's: part of the warp in another branch may set bits of the same
    words) and, shared out among the lanes, their read sites and phases stored; then a
    fence and a warp sync (the reader's half of the store-then-look order with writers:
    the lowest lane's bits too before any lane looks) and a look at those granules' write
    epochs. Nothing new: no store, no fence, no call, as the probe
    returns. Only a granule never written or written in this phase by another warp calls
    the checker (`update`, abi.PROBE_READ_SPAN_JUDGE, with G0 and the new bits): the
    probe's verdict on the lane's own new granules. Lanes reading past the window or more
    than 64 granules apart call the probe (`probe`). Every lane that reaches the read runs
    this code, those that skip it (`pred`) adding no granule (echo.py for the calls)."""
    r = [f"{_S}{i}" for i in range(26)]
    (a, b, g0, g1, span, ph, warp, sh, bm, t, rank, n, rs, rp, i, x, lo, hi, bad) = r[:19]
    w, o, lead = r[19:22], r[22:25], r[25]
    fr, u, tmp = (f"{_SD}{k}" for k in range(3))
    q, q2, on = (f"{_Q}{k}" for k in range(3))
    join = f"{slow}_join"

    def each_new(label: str, body: list[str]) -> list[str]:
        """`body` for each new granule G0 + i (bit i of fr) the lane takes, i = rank, rank +
        n, ...: the granule in t."""
        return [f"mov.u32 {i}, {rank};",
                f"{label}:",
                f"setp.gt.u32 {q}, {i}, {span};",
                f"@{q} bra {label}_end;",
                f"shr.b64 {tmp}, {fr}, {i};",
                f"cvt.u32.u64 {t}, {tmp};",
                f"and.b32 {t}, {t}, 1;",
                f"setp.eq.u32 {q}, {t}, 0;",
                f"@{q} bra {label}_next;",
                f"add.u32 {t}, {g0}, {i};",
                *body,
                f"{label}_next:",
                f"add.u32 {i}, {i}, {n};",
                f"bra {label};",
                f"{label}_end:"]

    if pred is None:
        lanes = [f"setp.ne.u32 {on}, {_M}, 0;"]  # (every lane)
    else:
        guard = pred[1:]
        lanes = [f"not.pred {on}, {guard[1:]};" if guard.startswith("!") else
                 f"mov.pred {on}, {guard};"]
    lines = ["{ // consan fast path: a span read",
             f".reg .b32 {_S}<26>;",
             f".reg .b64 {_SD}<3>;",
             f".reg .pred {_Q}<3>;",
             *_DECLS,
             f"activemask.b32 {_M};",
             f"mov.b32 {_K}, 0;",
             *address_code,
             *lanes,
             f"cvt.u32.u64 {a}, {addr_reg};",
             f"add.u32 {b}, {a}, {c.size - 1};",
             f"shr.u32 {a}, {a}, 2;",  # the lane's first granule
             f"shr.u32 {b}, {b}, 2;",  # and last
             f"selp.b32 {a}, {a}, {0xFFFFFFFF}, {on};",
             f"selp.b32 {b}, {b}, 0, {on};",
             f"redux.sync.min.u32 {g0}, {a}, {_M};",
             f"redux.sync.max.u32 {g1}, {b}, {_M};",
             f"setp.gt.u32 {q}, {g0}, {g1};",  # (no lane reads)
             f"@{q} bra {skip};",
             f"sub.u32 {span}, {g1}, {g0};",
             f"setp.ge.u32 {q}, {g1}, {REG_GRANULES};",  # (none without a record)
             f"setp.ge.or.u32 {q}, {span}, 64, {q};",
             f"@{q} bra {slow};",
             # the lane's granules as bits from G0, or'ed over the warp: U
             f"sub.u32 {t}, {b}, {a};",
             f"add.u32 {t}, {t}, 1;",
             f"mov.b64 {tmp}, 1;",
             f"shl.b64 {tmp}, {tmp}, {t};",  # (64: 0, and 0 - 1 is all ones)
             f"sub.s64 {tmp}, {tmp}, 1;",
             f"sub.u32 {t}, {a}, {g0};",
             f"shl.b64 {tmp}, {tmp}, {t};",
             f"selp.b64 {tmp}, {tmp}, 0, {on};",
             f"mov.b64 {{{w[0]}, {w[1]}}}, {tmp};",
             f"redux.sync.or.b32 {w[0]}, {w[0]}, {_M};",
             f"redux.sync.or.b32 {w[1]}, {w[1]}, {_M};",
             f"mov.b64 {u}, {{{w[0]}, {w[1]}}};",
             # the warp's bitmap of this phase's parity, from the word of G0
             f"ld.volatile.shared.v2.u32 {{{ph}, {warp}}}, "
             f"[{REG_FAST}+{abi.PSH_FAST_PHASE * _WORD}];",
             *parity_bitmap(bm, t, ph, x, q),
             f"shr.u32 {t}, {g0}, 5;",
             f"mad.lo.u32 {bm}, {t}, 4, {bm};",
             # U in that word's bits: three words w
             f"and.b32 {sh}, {g0}, 31;",
             f"shl.b64 {tmp}, {u}, {sh};",
             f"mov.b64 {{{w[0]}, {w[1]}}}, {tmp};",
             f"sub.u32 {t}, 64, {sh};",
             f"shr.b64 {tmp}, {u}, {t};",  # (64: 0)
             f"cvt.u32.u64 {w[2]}, {tmp};"]
    for j in range(3):  # (the same words in every lane: a test, as the probe's)
        lines += [f"mov.b32 {o[j]}, 0;",
                  f"setp.ne.u32 {q}, {w[j]}, 0;",
                  f"@{q} ld.volatile.shared.u32 {o[j]}, {_at(bm, 4 * j)};"]
    lines += [f"mov.u32 {t}, %lanemask_lt;",
              f"and.b32 {t}, {t}, {_M};",
              f"setp.eq.u32 {q2}, {t}, 0;",  # the lowest lane
              f"popc.b32 {rank}, {t};",
              f"popc.b32 {n}, {_M};",
              f"mov.b32 {x}, 0;"]
    for j in range(3):
        lines += [f"not.b32 {t}, {o[j]};",
                  f"and.b32 {t}, {w[j]}, {t};",
                  f"or.b32 {x}, {x}, {t};"]
    lines += [f"setp.eq.u32 {q}, {x}, 0;",  # nothing new: the probe returns
              f"@{q} bra {skip};",
              f"brev.b32 {lead}, {_M};",
              f"bfind.shiftamt.u32 {lead}, {lead};",
              f"mov.b32 {x}, 0;"]
    for j in range(3):  # the new bits (w): the lowest lane's atomics' (as the probe's: part
        # of the warp elsewhere in a branch may set bits of the same words meanwhile)
        lines += [f"not.b32 {t}, {o[j]};",
                  f"and.b32 {t}, {w[j]}, {t};",
                  f"setp.ne.and.u32 {q}, {t}, 0, {q2};",
                  f"@{q} atom.shared.or.b32 {o[j]}, {_at(bm, 4 * j)}, {w[j]};",
                  f"not.b32 {t}, {o[j]};",
                  f"and.b32 {w[j]}, {w[j]}, {t};",
                  f"shfl.sync.idx.b32 {w[j]}, {w[j]}, {lead}, 31, {_M};",
                  f"or.b32 {x}, {x}, {w[j]};"]
    lines += [f"setp.eq.u32 {q}, {x}, 0;",
              f"@{q} bra {skip};",
              # the new bits from G0 (fr)
              f"mov.b64 {fr}, {{{w[0]}, {w[1]}}};",
              f"shr.b64 {fr}, {fr}, {sh};",
              f"cvt.u64.u32 {tmp}, {w[2]};",
              f"sub.u32 {t}, 64, {sh};",
              f"shl.b64 {tmp}, {tmp}, {t};",
              f"or.b64 {fr}, {fr}, {tmp};",
              f"mad.lo.u32 {rs}, {REG_GRANULES}, {_RSITE}, {REG_EPOCHS};",
              f"mad.lo.u32 {rp}, {REG_GRANULES}, {_RPHASE}, {REG_EPOCHS};",
              *each_new(f"{slow}_pub", [  # their read sites and phases
                  f"shl.b32 {t}, {t}, 2;",
                  f"add.u32 {x}, {rs}, {t};",
                  f"st.volatile.shared.u32 [{x}], {probe[1]};",
                  f"add.u32 {x}, {rp}, {t};",
                  f"st.volatile.shared.u32 [{x}], {ph};"]),
              "membar.cta;",
              f"bar.warp.sync {_M};",
              f"mov.b32 {bad}, 0;",
              *each_new(f"{slow}_look", [  # their write epochs
                  f"mad.lo.u32 {t}, {t}, 8, {REG_EPOCHS};",
                  f"ld.volatile.shared.v2.u32 {{{lo}, {hi}}}, [{t}];",
                  f"or.b32 {x}, {lo}, {hi};",
                  f"setp.eq.u32 {q}, {x}, 0;",  # never written: uninit.read
                  f"and.b32 {hi}, {hi}, 255;",
                  f"setp.ne.u32 {q2}, {hi}, {warp};",
                  f"setp.eq.and.u32 {q2}, {lo}, {ph}, {q2};",  # this phase, another warp
                  f"or.pred {q}, {q}, {q2};",
                  f"selp.b32 {bad}, 1, {bad}, {q};"]),
              f"setp.ne.u32 {q}, {bad}, 0;",
              f"vote.sync.any.pred {q}, {q}, {_M};",
              f"@!{q} bra {skip};",
              f"selp.b32 {_K}, 1, 0, {on};",
              f"bra {join};",
              f"{slow}:",
              f"selp.b32 {_K}, 2, 0, {on};",
              f"{join}:",
              f"setp.ne.u32 {q}, {_K}, 0;",
              f"vote.sync.any.pred {q}, {q}, {_M};",
              f"@!{q} bra {skip};",
              *_together(1, c, addr_reg, update, probe[1], [g0, fr], f"{slow}_n1"),
              *_together(2, c, addr_reg, probe[0], probe[1], probe[2], f"{slow}_n2"),
              "}"]
    return "\n\t".join(lines) + "\n\t"


# A test's registers for its calls (declared in its scope): what each lane needs called (0
# nothing, 1 the update's entry, 2 the probe), the lanes that reach the access, an echoed
# info word, the address a call passes, scratch, and two predicates.
_K, _M, _I, _X, _L, _H = ("%__cs_fk", "%__cs_fm", "%__cs_fi", "%__cs_fx", "%__cs_fl",
                          "%__cs_fh")
_ON, _NONE = "%__cs_fon", "%__cs_fno"
_DECLS = (f".reg .b32 {_K}, {_M}, {_I}, {_L}, {_H};", f".reg .b64 {_X};",
          f".reg .pred {_ON}, {_NONE};")


def _together(kind: int, c: Classified, addr_reg: str, entry: str, site: str,
              extra: list[str], none: str) -> list[str]:
    """The call of `entry` (address, site, info, `extra`) that the lanes needing `kind` need,
    made by every lane of the test together (echo.py); none where no lane needs it."""
    return [f"setp.eq.u32 {_ON}, {_K}, {kind};",
            *echo.code(_ON, _M, addr_reg, _X, c.info, _I, _NONE, _L, _H),
            f"@{_NONE} bra {none};",
            f"call {entry}, ({', '.join([_X, site, _I, *extra])});",
            f"{none}:"]


# The u32 tables follow the epochs (8 bytes a granule of the window), 4 bytes a granule
# each (abi.psh_bytes): the sites of writes, the sites of reads, the phases of reads.
_WSITE, _RSITE, _RPHASE = 8, 12, 16


def _table(out: str, table: int, g: str) -> list[str]:
    """PTX putting the shared address of granule g's word of `table` in `out`."""
    return [f"mul.lo.u32 {out}, {REG_GRANULES}, {table};",
            f"add.u32 {out}, {out}, {REG_EPOCHS};",
            f"mad.lo.u32 {out}, {g}, 4, {out};"]


def _write_update(f: list[str], e: list[str], q: str, site: str, skip: str,
                  slow: str) -> list[str]:
    """After a write's failed test (f: phase, warp, -, -, its first epoch's address, its last
    granule; e: the epochs' two words each, of its one, two or four granules): the probe's
    own work where no granule was written in this phase: each epoch swapped for this
    warp's (a compare-and-swap: a write by another warp in between leaves the verdict to
    the probe, which finds the granules swapped before as this warp's, their sites stored)
    and its site stored, a fence (the writer's half of the probe's store-then-look order
    with readers), and a look at the phases in which they were last read: only a read in
    this phase needs the checker (PROBE_WRITE_READERS). Verdicts are the probe's: with no
    epoch of this phase there is no race.waw, and a plain write reads nothing."""
    ph, warp, ea, last, t, g = f[0], f[1], f[4], f[5], f[8], f[2]
    n = len(e) // 2
    out = []
    for i in range(n):  # written in this phase: the probe judges
        out += [f"setp.eq.u32 {q}, {e[2 * i]}, {ph};", f"@{q} bra {slow};"]
    out.append(f"sub.u32 {g}, {last}, {n - 1};")  # (the first granule)
    for i in range(n):
        out += ["{ .reg .b64 %__cs_fo, %__cs_fn;",
                f"mov.b64 %__cs_fo, {{{e[2 * i]}, {e[2 * i + 1]}}};",
                f"mov.b64 %__cs_fn, {{{ph}, {warp}}};",
                f"atom.shared.cas.b64 %__cs_fn, {_at(ea, 8 * i)}, %__cs_fo, %__cs_fn;",
                f"setp.ne.b64 {q}, %__cs_fn, %__cs_fo; }}",
                f"@{q} bra {slow};",
                *_table(t, _WSITE, g),
                f"st.volatile.shared.u32 {_at(t, 4 * i)}, {site};"]
    out.append("membar.cta;")
    out += _table(t, _RPHASE, g)
    for i in range(n):  # (read in this phase: the checker looks for other warps' reads)
        out += [f"ld.volatile.shared.u32 {f[6]}, {_at(t, 4 * i)};",
                f"setp.eq.u32 {q}, {f[6]}, {ph};"]
        if i < n - 1:
            out.append(f"@{q} bra {slow}_call;")
    out.append(f"@!{q} bra {skip};")
    return out + (_other_readers(f, q, skip, slow) if n == 1 else [])


def _other_readers(f: list[str], q: str, skip: str, slow: str) -> list[str]:
    """After a one-granule write found its granule read in this phase (f: phase, warp, its
    granule, ...): the checker's look for this phase's reads by other warps
    (cs_phase_smem_war), inline: each other warp's bitmap word of this phase's parity, the
    checker called only where one holds the granule's bit. A warp that reads its own words
    and then writes them (`s[t] += ...`, a sort's compare-and-swap) found only its own bit
    and called the checker for nothing: 6,356 cycles a call in an unrolled bitonic sort on
    the H100, 2,368 calls a CTA. The bitmaps are one after another, 2 * ceil(granules / 32)
    words a warp, and end before the records (at most 12 bytes of padding between, which
    the CTA's begin clears: a word read there is 0). Four warps' words a trip, each load
    guarded by its own bound, or'ed together: one test and branch for four (the sort,
    H100: 8.06 ms with a warp a trip, 6.00 ms with four)."""
    ph, warp, g = f[0], f[1], f[2]
    own, a, end, stride, bit, v = f[3], f[4], f[5], f[6], f[7], f[8]
    acc, at, four = ph, warp, g  # (free once the walk's bounds are set)
    rec = REG_FAST
    out = [f"add.u32 {stride}, {REG_GRANULES}, 31;",
           f"shr.u32 {stride}, {stride}, 5;",
           f"shl.b32 {stride}, {stride}, 3;",  # (bytes: two parities' words a warp)
           *parity_bitmap(own, v, ph, bit, q),
           f"shr.u32 {v}, {g}, 5;",
           f"mad.lo.u32 {own}, {v}, 4, {own};",  # this warp's word of the granule
           f"mul.lo.u32 {v}, {warp}, {stride};",
           f"sub.u32 {a}, {own}, {v};",  # warp 0's
           f"mul.lo.u32 {v}, {warp}, {abi.PSH_FAST_BYTES};",
           f"sub.u32 {end}, {rec}, {v};",  # (the first record)
           f"and.b32 {v}, {g}, 31;",
           f"mov.b32 {bit}, 1;",
           f"shl.b32 {bit}, {bit}, {v};",
           f"shl.b32 {four}, {stride}, 2;",
           f"{slow}_war:",
           f"mov.b32 {acc}, 0;",
           f"mov.b32 {at}, {a};"]
    for k in range(4):
        out += [f"setp.lt.u32 {q}, {at}, {end};",
                f"setp.ne.and.u32 {q}, {at}, {own}, {q};",
                f"@{q} ld.volatile.shared.u32 {v}, [{at}];",
                f"@{q} or.b32 {acc}, {acc}, {v};"]
        if k < 3:
            out.append(f"add.u32 {at}, {at}, {stride};")
    return out + [f"and.b32 {acc}, {acc}, {bit};",
                  f"setp.ne.u32 {q}, {acc}, 0;",
                  f"@{q} bra {slow}_call;",
                  f"add.u32 {a}, {a}, {four};",
                  f"setp.lt.u32 {q}, {a}, {end};",
                  f"@{q} bra {slow}_war;",
                  f"bra {skip};"]


def _read_update(f: list[str], q: str, site: str, addr_reg: str, skip: str,
                 slow: str) -> list[str]:
    """After a one-granule read's failed test (f: phase, warp, -, -, its bit, -, -, -, the
    address of its bitmap word): the probe's own work for a read: the warp's bit set (a
    shared atomic; a bit another lane of the warp set first is no news, as in the probe),
    the granule's read site and phase stored, a fence (the reader's half of the
    store-then-look order with writers), and a look at its write epoch: only one never
    written, or written in this phase by another warp, needs the checker's verdict
    (PROBE_READ_JUDGE, whose call is at `slow`_call), the probe's for that granule."""
    ph, warp, bit, word, g, t, lo, hi = f[0], f[1], f[4], f[8], f[5], f[6], f[2], f[3]
    return [f"atom.shared.or.b32 {t}, [{word}], {bit};",
            f"and.b32 {t}, {t}, {bit};",
            f"setp.ne.u32 {q}, {t}, 0;",  # (set since the test, by another lane)
            f"@{q} bra {skip};",
            f"cvt.u32.u64 {g}, {addr_reg};",
            f"shr.u32 {g}, {g}, 2;",
            *_table(t, _RSITE, g),
            f"st.volatile.shared.u32 [{t}], {site};",
            *_table(t, _RPHASE, g),
            f"st.volatile.shared.u32 [{t}], {ph};",
            "membar.cta;",
            f"mad.lo.u32 {t}, {g}, 8, {REG_EPOCHS};",
            f"ld.volatile.shared.v2.u32 {{{lo}, {hi}}}, [{t}];",
            f"or.b32 {word}, {lo}, {hi};",
            f"setp.eq.u32 {q}, {word}, 0;",  # never written: uninit.read
            f"@{q} bra {slow}_call;",
            f"setp.ne.u32 {q}, {lo}, {ph};",  # written in an earlier phase
            f"@{q} bra {skip};",
            f"and.b32 {hi}, {hi}, 255;",
            f"setp.eq.u32 {q}, {hi}, {warp};",  # by this warp
            f"@{q} bra {skip};"]
