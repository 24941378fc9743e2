"""The calling convention of the probes a module's kernels call, where it is not PTX's
default: `.abi_preserve N` (PTX ISA 9.0) on each probe, so that a probe call saves and
restores N of the caller's registers, not the default's.

The checker build and the module's declarations must say the same N, or the kernel and
the probe disagree on which registers survive a call: the checker gets it from the
define `CONSAN_ABI_PRESERVE` (checker/platform.h puts `#pragma nv_abi` on every entry),
and a module's declarations from `declare` below, both chosen in one place
(consan/toolchain.py, by the checker build the module links).
"""

from __future__ import annotations

import re

from instrument import abi

# A probe declaration as the rewriter writes it (rewrite._externs): one line each.
_DECL = re.compile(r"^(\.extern \.func [^\n]*?\b(__consan_\w+) \([^\n]*\));$", re.M)
_VERSION = re.compile(r"^(\s*)\.version\s+(\d+)\.(\d+)", re.M)
FIRST_VERSION = (9, 0)  # the PTX ISA version that has .abi_preserve


def declare(ptx: str, preserve: int) -> str:
    """`ptx` (an instrumented module) with each probe declaration given `.abi_preserve
    preserve`, and its `.version` raised to 9.0 where it is older, for ptxas to take the
    directive (Triton 3.6 writes 8.7; the GPU tests compare such modules' output with the
    native kernel's, bit for bit)."""
    seen: set[str] = set()

    def one(m: re.Match) -> str:
        if m.group(2) not in abi.PROBE_PROTOTYPES:
            return m.group(0)
        seen.add(m.group(2))
        return f"{m.group(1)} .abi_preserve {preserve};"

    out = _DECL.sub(one, ptx)
    if not seen:
        raise ValueError("no consan probe declaration in the module: is it instrumented?")
    v = _VERSION.search(out)
    if v is not None and (int(v.group(2)), int(v.group(3))) < FIRST_VERSION:
        out = out[:v.start()] + f"{v.group(1)}.version {FIRST_VERSION[0]}.{FIRST_VERSION[1]}" + \
            out[v.end():]
    return out
