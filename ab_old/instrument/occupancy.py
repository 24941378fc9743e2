"""Holding an instrumented kernel to a number of resident CTAs per SM.

A kernel's register count is the largest of its call graph's, so the probes it calls push
it far above its native count (the clustered ring of tests/kernels/dsmem_ring.py: 254
registers instrumented, one CTA of 256 threads per SM where natively two fit, so its 264
CTAs ran in two waves). ptxas takes a kernel's launch bounds over -maxrregcount, so the
limit goes into the PTX: `.minnctapersm` beside the kernel's `.maxntid` / `.reqntid`
(a `.maxntid` of the launch's block where it has neither), as `__launch_bounds__(t, n)`
would put it.
"""

from __future__ import annotations

import re
from dataclasses import replace

from .rewrite import Instrumented, InstrumentError, bound_threads, launch_bound_cap

_BOUNDS = re.compile(r"\.(maxntid|reqntid|minnctapersm)\s+([\d\s,]+)")


def _entry_span(ptx: str, kernel: str) -> tuple[int, int]:
    """[start, end) of the kernel's directives: from after its parameter list to its `{`."""
    m = re.search(r"\.entry\s+" + re.escape(kernel) + r"\s*\(", ptx)
    if m is None:
        raise InstrumentError(f"no kernel {kernel!r} in the instrumented module")
    close = ptx.find(")", m.end())
    body = ptx.find("{", close)
    if close < 0 or body < 0:
        raise InstrumentError(f"kernel {kernel!r}: its entry has no body")
    return close + 1, body


def bounds(ptx: str, kernel: str) -> tuple[int, int]:
    """The kernel's threads a CTA by its launch bounds (0: none) and its `.minnctapersm`
    (0: none)."""
    a, b = _entry_span(ptx, kernel)
    threads = ctas = 0
    for name, args in _BOUNDS.findall(ptx[a:b]):
        nums = [int(x) for x in args.replace(",", " ").split()]
        if name == "minnctapersm":
            ctas = nums[0]
        else:
            threads = bound_threads(name, nums, threads)
    return threads, ctas


def register_cap(ins: Instrumented, kernel: str, threads: int, ctas: int) -> int | None:
    """The register limit ptxas would give `kernel` held to `ctas` CTAs of `threads` (the
    launch's) per SM (None: no limit)."""
    bound, _ = bounds(ins.ptx, kernel)
    return launch_bound_cap(bound or threads, ctas)


def hold_ctas(ins: Instrumented, kernel: str, ctas: int, threads: int) -> Instrumented:
    """`ins` with `kernel` held to `ctas` resident CTAs of `threads` threads per SM; its
    other functions as they were. The probes are assembled under the tighter limit too
    (Instrumented.max_regs: a kernel may only call functions that fit it)."""
    a, b = _entry_span(ins.ptx, kernel)
    bound, had = bounds(ins.ptx, kernel)
    head = re.sub(r"\.minnctapersm\s+\d+", "", ins.ptx[a:b])
    add = "" if bound else f"\n.maxntid {threads}, 1, 1"
    head = head.rstrip() + add + f"\n.minnctapersm {max(ctas, had)}\n"
    cap = register_cap(ins, kernel, threads, max(ctas, had))
    caps = [c for c in (ins.max_regs, cap) if c]
    return replace(ins, ptx=ins.ptx[:a] + head + ins.ptx[b:], max_regs=min(caps) if caps else None)
