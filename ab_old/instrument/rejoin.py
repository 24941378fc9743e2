"""Every consan function a kernel calls gives its warp back whole.

A probe function can come back to the kernel with its warp split: where part of the warp
found a race and called on to record it, the lanes returned in two groups (measured on the
H100 for every checker build: `if (warp == 0) s[lane] = ...` racing with another warp in
lanes 0-15 gave `__activemask()` 1 in lane 0 and 31 in the others right after it, where
natively it is 32; with the recording call a no-op, 16 and 16). The barriers inside the
checker's functions do not rejoin them, and a converted branch (converge.py) has lost the
kernel's own reconvergence point after the access; the split then lasts until the kernel
ends: every later instruction runs twice, and `__activemask()`, a vote on it or a
`coalesced_threads()` group differs from the native run.

A branch ptxas cannot prove uniform gets a convergence barrier (BSSY before it, BSYNC at
its target), and BSYNC makes the lanes of the barrier's mask one group again. A per-lane
predicate that never holds (`%lanemask_eq` is never 0) makes such a branch around a whole
function body: its BSYNC, just before the return, joins the lanes that entered. The
checker's entries have it (checker `CS_REJOINED`); this module gives it to the functions
the rewriter writes into a module (fast_path.py's `__consan_inline_*`), whose one `ret` is
their last statement, and to each call of the CTA's begin probe (whose `__syncthreads`
makes ptxas drop a region inside it). tests/cpu/test_rejoin.py checks the linked SASS.

Measured on the H100 beside a region around each call instead (a special-register read, a
compare, BSSY and BSYNC in the kernel at every call; bench_async's kernels, device time
alone, three rounds): the same time (x1.006, x0.988, x0.986, x1.001); the unrolled bitonic
sort's link on the H100 machine's host 0.74-0.82 s -> 0.57-0.59 s (two rounds each,
alternating), ptxas no longer threading 296 regions through the kernel.
"""

from __future__ import annotations

import itertools
import re

# A call statement of a consan function that does not rejoin its lanes itself, with its
# guard predicate if any.
_CALL = re.compile(r"((?:@!?%[\w$]+\s+)?call(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?"
                   r"__consan_cta_begin\b[^;]*;)")
# The start of a function's definition or declaration: its body opens at the first `{`
# after it, unless a `;` ends a prototype first.
_FUNCTION = re.compile(r"^[ \t]*(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\b", re.M)
_INLINE = re.compile(r"\.func\s+(?:\([^)]*\)\s*)?__consan_inline_\w+")
_BRACE = re.compile(r"[{}]")
PRED, VALUE = "%__cs_rj", "%__cs_rv"  # (declared once in each function that uses them)
TEST = f"mov.u32 {VALUE}, %lanemask_eq; setp.eq.u32 {PRED}, {VALUE}, 0; @{PRED} bra"


def rejoin(ptx: str) -> str:
    """`ptx` with each module function of consan's in a region the warp leaves whole, and
    each call of the CTA's begin probe in one."""
    bodies = []  # (where a function's header starts, its body opens, the next one starts)
    starts = [m.start() for m in _FUNCTION.finditer(ptx)] + [len(ptx)]
    for a, b in itertools.pairwise(starts):
        brace, semi = ptx.find("{", a, b), ptx.find(";", a, b)
        if brace >= 0 and (semi < 0 or brace < semi):
            bodies.append((a, brace + 1, b))
    out, at, n = [], 0, 0
    for head, body, end in bodies:
        text = ptx[body:end]
        inline = bool(_INLINE.match(ptx, head))
        if not inline and not _CALL.search(text):
            continue

        def wrap(m: re.Match[str]) -> str:
            nonlocal n
            n += 1
            return f"{TEST} $__cs_rejoin{n}; {m.group(1)} $__cs_rejoin{n}:"

        text = _CALL.sub(wrap, text)
        if inline:  # the whole body: from its first statement to its one `ret`
            n += 1
            last = _last_ret(text)
            if last is None:  # (fast_path.py writes each with one `ret`, its last statement)
                raise AssertionError(f"{ptx[head:body].strip()}: no `ret` at its end")
            text = (f"\n\t{TEST} $__cs_rejoin{n};" + text[:last] +
                    f"$__cs_rejoin{n}:\n\t" + text[last:])
        out += [ptx[at:body], f"\n\t.reg .pred {PRED};\n\t.reg .b32 {VALUE};", text]
        at = end
    out.append(ptx[at:])
    return "".join(out)


def _last_ret(body: str) -> int | None:
    """Where the `ret` that is a body's last statement starts (`body` from just after its
    opening brace), None if it ends otherwise."""
    depth = 1
    for m in _BRACE.finditer(body):
        depth += 1 if m.group() == "{" else -1
        if depth == 0:
            at = body.rfind("ret;", 0, m.start())  # (a whole statement: no guard, no `.uni`)
            before = body[:at].rstrip()
            last = at >= 0 and not body[at + 4:m.start()].strip() and \
                (not before or before[-1] in ";:{}")
            return at if last else None
    return None
