"""Where the benchmark scripts find the CUDA toolkit's binaries (ptxas, cuobjdump): on PATH,
in /usr/local/cuda/bin, or bundled with Triton's wheel (which ships both), so that the
static SASS tools run on a machine with no CUDA toolkit."""

from __future__ import annotations

import os
import shutil
import sys


def cuda_tool(name: str, who: str) -> str:
    """The path of CUDA tool `name`; exits naming `who` (the calling script) if none."""
    found = shutil.which(name)
    candidates = [found] if found else []
    candidates.append(os.path.join("/usr/local/cuda/bin", name))
    try:
        import triton

        candidates.append(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia",
                                       "bin", name))
    except ImportError:
        pass
    for path in candidates:
        if os.path.exists(path):
            return path
    sys.exit(f"{who}: {name} not found (install the CUDA toolkit, or triton, which bundles it)")
