#!/usr/bin/env python
"""Which convergence barriers each checker function uses, and which it clears on entry.

    PYTHONPATH=. python benchmarks/convergence_barriers.py [--mc] [NAME ...]

Builds the shared-memory-tables checker for sm_90a (--mc: the build for modules that reach
other CTAs of their cluster), assembles it with ptxas and reads the
SASS (cuobjdump). A function that uses B6-B11 saves and clears them on entry
(`BMOV.32.CLEAR`); when some lanes of a warp call it while the others wait for them at one
of those barriers (`if (lane == 0) probe(); ...`), the clear releases the waiting lanes and
the warp runs split after it (measured on the H100 with ncu: the TMA ring's consumer warps
ran each step twice, 31 lanes then 1). NAME filters the functions by substring.
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


def main() -> int:
    from consan import toolchain

    mc = "--mc" in sys.argv[1:]
    names = [a for a in sys.argv[1:] if a != "--mc"]
    ptx = toolchain.checker_ptx(toolchain.Arch.parse("sm_90a"), **({"mc": True} if mc else
                                                                   {"vsh": True}))
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = os.path.join(tmp, "checker.ptx"), os.path.join(tmp, "checker.cubin")
        with open(src, "w") as fh:
            fh.write(ptx)
        subprocess.run([_tool("ptxas"), "-arch=sm_90a", "-c", src, "-o", cubin], check=True)
        sass = subprocess.run([_tool("cuobjdump"), "-sass", cubin], capture_output=True,
                              text=True, check=True).stdout
    uses: dict[str, set[int]] = collections.defaultdict(set)
    clears: dict[str, set[int]] = collections.defaultdict(set)
    func = None
    for line in sass.splitlines():
        if m := re.search(r"Function : (\S+)", line):
            func = m.group(1)
        elif func and (m := re.search(r"BSSY B(\d+)", line)):
            uses[func].add(int(m.group(1)))
        elif func and (m := re.search(r"BMOV\.32\.CLEAR \S+, B(\d+)", line)):
            clears[func].add(int(m.group(1)))
    print("function | barriers used | cleared on entry")
    for f in sorted(set(uses) | set(clears)):
        if not names or any(k in f for k in names):
            print(f"{f} | {sorted(uses[f])} | {sorted(clears[f])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
