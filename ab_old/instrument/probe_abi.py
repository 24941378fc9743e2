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

_VERSION = re.compile(r"^(\s*)\.version\s+(\d+)\.(\d+)", re.M)
FIRST_VERSION = (9, 0)  # the PTX ISA version that has .abi_preserve


def externs(preserve: int = 0) -> str:
    """The probes' declarations, as the rewriter puts them after the module's header (with
    `.abi_preserve preserve` on each where it is not 0)."""
    tail = f" .abi_preserve {preserve}" if preserve else ""
    out = []
    for name, (params, ret) in abi.PROBE_PROTOTYPES.items():
        plist = ", ".join(f".param {t} __cs_a{i}" for i, t in enumerate(params))
        r = f"(.param {ret} __cs_ret) " if ret else ""
        out.append(f".extern .func {r}{name} ({plist}){tail};")
    return "\n// consan probes\n" + "\n".join(out) + "\n"


def declare(ptx: str, preserve: int) -> str:
    """`ptx` (an instrumented module) with each probe declaration given `.abi_preserve
    preserve`, and its `.version` raised to 9.0 where it is older, for ptxas to take the
    directive (Triton 3.6 writes 8.7; the GPU tests compare such modules' output with the
    native kernel's, bit for bit)."""
    if externs() not in ptx:
        raise ValueError("no consan probe declaration in the module: is it instrumented?")
    out = ptx.replace(externs(), externs(preserve), 1)
    v = _VERSION.search(out)
    if v is not None and (int(v.group(2)), int(v.group(3))) < FIRST_VERSION:
        out = out[:v.start()] + f"{v.group(1)}.version {FIRST_VERSION[0]}.{FIRST_VERSION[1]}" + \
            out[v.end():]
    return out
