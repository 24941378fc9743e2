"""The probe calls of instrumented PTX, read the same whichever form rewrite._call wrote
them in: arguments passed as they are, or stored into declared params first."""

from __future__ import annotations

import re
from typing import NamedTuple

from instrument import abi

_CALL = re.compile(r"(@!?%[\w$.]+ )?call (?:\(([^)]*)\), )?([\w$]+)(?:, \(([^)]*)\))?;")
_STORE = re.compile(r"st\.param\.\w+ \[(__cs_p\d+)\], ([^;]+);")


class Call(NamedTuple):
    func: str
    args: list[str]  # the values passed, in order
    ret: str | None  # the register that receives the result
    pred: str | None  # "@%p1" / "@!%p1"
    pos: int  # where the call instruction is in the text


def calls(ptx: str, func: str | None = None) -> list[Call]:
    """Every call (of `func`), in text order."""
    out = []
    for m in _CALL.finditer(ptx):
        if func is not None and m.group(3) != func:
            continue
        block = ptx[max(ptx.rfind("{", 0, m.start()), 0):m.start()]
        stored = dict(_STORE.findall(block))
        args = [stored.get(a.strip(), a.strip()) for a in (m.group(4) or "").split(",")
                if a.strip()]
        ret = m.group(2)
        if ret is not None and not ret.startswith("%"):  # a .param: read after the call
            got = re.match(rf"\s*ld\.param\.\w+ ([^,]+), \[{ret}\];", ptx[m.end():])
            ret = got.group(1) if got else None
        pred = m.group(1).strip() if m.group(1) else None
        out.append(Call(m.group(3), args, ret, pred, m.start()))
    return out


def args_of(ptx: str, func: str | None = None) -> list[list[str]]:
    """The arguments of every call (of `func`), in text order."""
    return [c.args for c in calls(ptx, func)]


def echoed_on(ptx: str, call: Call) -> str | None:
    """The lanes a guarded or converted access's probe call is made for, every lane that
    reaches it calling it (instrument/echo.py; the fast path's calls are read by
    test_fast_path.together): the predicate its ballot takes ("%p1", "!%p1" where it took
    the negation, "%__cs_on" in a converted region); None where the call is not so made."""
    head = ptx.rfind("activemask.b32", 0, call.pos)
    if head < 0 or call.pred != "@!%__cs_eno":
        return None
    block = ptx[head:call.pos]
    m = re.search(r"vote\.sync\.ballot\.b32 %__cs_el, (%[\w$.]+), %__cs_\w+;", block)
    if m is None:
        return None
    neg = re.search(rf"not\.pred {re.escape(m.group(1))}, (%[\w$.]+);", block)
    return f"!{neg.group(1)}" if neg else m.group(1)


_CONSAN_CALL = r"(?:@!?%[\w$]+ )?call(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?__consan_\w+[^;]*;"


def rejoined(ptx: str) -> tuple[int, int]:
    """(the CTA's begin calls and the module's own consan functions, those in a rejoin
    region: instrument/rejoin.py's never-taken branch right before the call and its label
    right after, or at the function's first statement and its label right before its last
    statement, its `ret`). The checker's entries rejoin their lanes themselves (checker
    CS_REJOINED)."""
    begin = rf"(?:@!?%[\w$]+ )?call(?:\.uni)?\s+\([^)]*\)\s*,\s*{abi.PROBE_CTA_BEGIN}\b[^;]*;"
    n = len(re.findall(begin, ptx))
    ok = len(re.findall(rf"@%__cs_rj bra (\$__cs_rejoin\d+); {begin} \1:", ptx))
    heads = [m.start() for m in re.finditer(r"^\.func\s+__consan_inline_", ptx, re.M)]
    for at in heads:
        end = re.compile(r"^(?:\.visible\s+|\.weak\s+)?\.(?:func|entry)\b", re.M).search(
            ptx, at + 1)
        text = ptx[at:end.start() if end else len(ptx)]
        m = re.search(r"\{\s*\.reg \.pred %__cs_rj;\s*\.reg \.b32 %__cs_rv;\s*mov\.u32 "
                      r"%__cs_rv, %lanemask_eq; setp\.eq\.u32 %__cs_rj, %__cs_rv, 0; "
                      r"@%__cs_rj bra (\$__cs_rejoin\d+);", text)
        n += 1
        ok += bool(m and re.search(re.escape(m.group(1)) + r":\s*ret;\s*\}", text))
    return n, ok
