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

from . import abi

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
            f"ld.shared.v2.u32 {{{even}, {odd}}}, [{record}+{abi.PSH_FAST_BITS_EVEN * w}];",
            f"and.b32 {phase}, {phase}, 1;",
            f"setp.eq.u32 {_Q}, {phase}, 0;",  # an even phase: the next one's bits are odd
            f"selp.u32 {even}, {odd}, {even}, {_Q};",
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
