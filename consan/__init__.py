"""consan: a shadow-memory race sanitizer for GPU kernels.

    rep = consan.check(source, "kernel", grid=..., block=..., args=..., shared_mem=0)
    rep.ok, rep.violations, print(rep)
"""

from __future__ import annotations

from reports import Finding, Report, Violation

from .errors import ConsanError, NoGPUError
from .runtime import __version__, build, check, gpu_available, prepare
from .toolchain import CompileError

__all__ = ["check", "prepare", "build", "gpu_available", "Report", "Violation", "Finding",
           "ConsanError", "NoGPUError", "CompileError", "__version__"]
