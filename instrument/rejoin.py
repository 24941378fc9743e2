"""Every probe call sits in a region ptxas must close with a warp reconvergence.

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
its target), and BSYNC makes the lanes of the barrier's mask one group again. So each
call of a consan function is skipped where a per-lane predicate holds that never does
(`%lanemask_eq` is never 0): the region costs a special-register read, a compare, BSSY
and BSYNC, and no branch is taken. With it the racy write above gave 32 in every lane, in
all four checker builds (H100). Its cost, measured on the H100 beside the tree before it
(one call, bench_async's kernels three rounds each): device time x1.067 on
mma_gemm_cp_async (a call per cp.async), x0.98 to x1.03 on the others; bench_unrolled's
sort 6.73 -> 7.14 ms; bench_clean's median unchanged (2.6x). The record register the
kernel keeps (fast_path.REG_FAST) would save the read, but ptxas then sees one predicate
for a chain of calls, threads their tests together and drops the regions (cp_async.cu's
SASS): each call reads the lane mask again.
"""

from __future__ import annotations

import itertools
import re

# A call statement of one of consan's functions (the checker's entries, the module's own
# inline-test functions), with its guard predicate if any.
_CALL = re.compile(r"((?:@!?%[\w$]+\s+)?call(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?__consan_\w+[^;]*;)")
# The start of a function's definition or declaration: its body opens at the first `{`
# after it, unless a `;` ends a prototype first.
_FUNCTION = re.compile(r"^[ \t]*(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\b", re.M)
PRED, VALUE = "%__cs_rj", "%__cs_rv"  # (declared once in each function that calls)


def rejoin(ptx: str) -> str:
    """`ptx` with every consan call wrapped in a region the warp leaves whole."""
    bodies = []  # (where a function's body opens, where the next function starts)
    starts = [m.start() for m in _FUNCTION.finditer(ptx)] + [len(ptx)]
    for a, b in itertools.pairwise(starts):
        brace, semi = ptx.find("{", a, b), ptx.find(";", a, b)
        if brace >= 0 and (semi < 0 or brace < semi):
            bodies.append((brace + 1, b))
    out, at, n = [], 0, 0
    for body, end in bodies:
        text = ptx[body:end]
        if not _CALL.search(text):
            continue

        def wrap(m: re.Match[str]) -> str:
            nonlocal n
            n += 1
            label = f"$__cs_rejoin{n}"
            return (f"mov.u32 {VALUE}, %lanemask_eq; setp.eq.u32 {PRED}, {VALUE}, 0; "
                    f"@{PRED} bra {label}; {m.group(1)} {label}:")

        out += [ptx[at:body], f"\n\t.reg .pred {PRED};\n\t.reg .b32 {VALUE};",
                _CALL.sub(wrap, text)]
        at = end
    out.append(ptx[at:])
    return "".join(out)
