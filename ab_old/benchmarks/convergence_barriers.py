#!/usr/bin/env python
"""Which convergence barriers each checker function uses, and which it clears on entry.

    PYTHONPATH=. python benchmarks/convergence_barriers.py [--mc | --chunk | --psh | --phase]
        [--calls] [NAME ...]

Builds the shared-memory-tables checker for sm_90a (--mc: the build for modules that reach
other CTAs of their cluster; --chunk: the one for modules of 16-byte chunk granules, the
Triton matmuls'; --psh, --phase: the phase-mode builds) into a cubin with NVRTC and reads
its SASS (nvdisasm). A function that uses B6-B11 saves and clears them on entry
(`BMOV.32.CLEAR`); when some lanes of a warp call it while the others wait for them at one
of those barriers (`if (lane == 0) probe(); ...`), the clear (its own or a callee's: the
last column) releases the waiting lanes and the warp runs split after it (measured on the
H100 with ncu: the TMA ring's consumer warps ran each step twice, 31 lanes then 1; and a
16-byte write's late readers judged by half a warp hung its report, checker/access16.h).
A function that clears none is not safe either: with a bulk group's probe (B0-B2 kept)
called under a predicate by lane 0 alone, its warp still came out split (H100).

--calls lists instead each call made inside a barrier's region (from its `BSSY` to the
label it names, in address order) that the callee, or a function it calls, clears: the
sites where a call made by part of the warp splits it. Whether a site's branch is taken by
part of a warp is the source's to say: a call made by every lane of the call or none (a
warp-wide vote first) is safe there.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def _tool(name: str) -> str:
    from benchmarks.cuda_tools import cuda_tool

    return cuda_tool(name, "convergence_barriers")


class Function:
    """One function's SASS: (address, instruction) in order, and its labels' addresses."""

    def __init__(self) -> None:
        self.code: list[tuple[int, str]] = []
        self.labels: dict[str, int] = {}


def parse(sass: str) -> dict[str, Function]:
    """nvdisasm's listing, by function."""
    funcs: dict[str, Function] = {}
    cur: Function | None = None
    pending: list[str] = []
    for line in sass.splitlines():
        if m := re.match(r"\s*\.text\.(\S+):", line):
            cur = funcs.setdefault(m.group(1), Function())
            pending = []
        elif cur is None:
            continue
        elif m := re.match(r"\s*(\.L_x_\d+):", line):
            pending.append(m.group(1))
        elif m := re.search(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line):
            at = int(m.group(1), 16)
            for label in pending:
                cur.labels[label] = at
            pending = []
            cur.code.append((at, m.group(2)))
    return funcs


def uses(f: Function) -> set[int]:
    return {int(b) for _, ins in f.code for b in re.findall(r"BSSY B(\d+)", ins)}


def clears(f: Function) -> set[int]:
    return {int(b) for _, ins in f.code for b in re.findall(r"BMOV\.32\.CLEAR \S+, B(\d+)", ins)}


def calls(f: Function) -> list[tuple[int, str]]:
    return [(at, m.group(1)) for at, ins in f.code
            if (m := re.search(r"CALL\.\S+\s+`\((\S+?)\)", ins))]


def cleared_through(funcs: dict[str, Function]):
    """name -> the barriers a call of it clears, itself or through a function it calls."""
    memo: dict[str, set[int]] = {}

    def cleared(name: str, seen: frozenset = frozenset()) -> set[int]:
        if name in memo:
            return memo[name]
        if name in seen or name not in funcs:
            return set()
        got = clears(funcs[name])
        for _, callee in calls(funcs[name]):
            got |= cleared(callee, seen | {name})
        memo[name] = got
        return got

    return cleared


def splitting_calls(funcs: dict[str, Function]) -> list[tuple[str, int, str, list[int]]]:
    """(caller, address, callee, barriers): calls inside the region of a barrier the callee
    clears, itself or through a function it calls."""
    cleared = cleared_through(funcs)
    found = []
    for name, f in funcs.items():
        regions = [(int(m.group(1)), at, f.labels[m.group(2)]) for at, ins in f.code
                   if (m := re.match(r"BSSY B(\d+), `\((\.L_x_\d+)\)", ins))
                   and m.group(2) in f.labels]
        for at, callee in calls(f):
            live = {b for b, lo, hi in regions if lo < at < hi} & cleared(callee)
            if live:
                found.append((name, at, callee, sorted(live)))
    return found


def _short(name: str) -> str:
    """A mangled checker name's identifier (the entry points are not mangled)."""
    m = re.search(r"consan_checker_cu_[0-9a-f]{8}(\d+)", name)
    return name[m.end():m.end() + int(m.group(1))] if m else name


def main() -> int:
    from consan import toolchain

    args = sys.argv[1:]
    mc, chunk, list_calls = "--mc" in args, "--chunk" in args, "--calls" in args
    names = [a for a in args if not a.startswith("--")]
    build = {"mc": True} if mc else {"psh": True} if "--psh" in args else \
        {"phase": True} if "--phase" in args else {"vsh": True, "chunk": chunk}
    # (the cubin NVRTC assembles, as a launch links it: a ptxas older than NVRTC refuses
    # its PTX's version)
    obj = toolchain.checker_object(toolchain.Arch.parse("sm_90a"), **build)
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "checker.cubin")
        with open(cubin, "wb") as fh:
            fh.write(obj)
        sass = subprocess.run([_tool("nvdisasm"), "-c", cubin], capture_output=True,
                              text=True, check=True).stdout
    funcs = parse(sass)
    if list_calls:
        found = [c for c in splitting_calls(funcs)
                 if not names or any(k in c[0] or k in c[2] for k in names)]
        print("caller | at | callee | barriers it clears there")
        for caller, at, callee, live in found:
            print(f"{_short(caller)} | {at:#x} | {_short(callee)} | {live}")
        counts = collections.Counter((_short(c), _short(e)) for c, _, e, _ in found)
        print(f"{len(found)} calls at {len(counts)} caller/callee pairs")
        return 0
    print("function | barriers used | cleared on entry | cleared by a call of it (callees too)")
    cleared = cleared_through(funcs)
    for name in sorted(funcs):
        f = funcs[name]
        if (uses(f) or cleared(name)) and (not names or any(k in name for k in names)):
            print(f"{_short(name)} | {sorted(uses(f))} | {sorted(clears(f))} | "
                  f"{sorted(cleared(name))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
