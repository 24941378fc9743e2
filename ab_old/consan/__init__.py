"""consan: a shadow-memory race sanitizer for GPU kernels.

    rep = consan.check(source, "kernel", grid=..., block=..., args=..., shared_mem=0)
    rep.ok, rep.violations, print(rep)

    with consan.expect("race.raw", where="kernel.cu:42"):   # a known race is still caught
        run_the_racy_kernel()

    m = consan.tensor_map(x, box_shape=(32, 32))  # a TMA tensor map consan knows the box of
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Imported on first use, so that `consan instrument` (and `import consan.cli`) loads
# neither numpy nor CuPy: a small kernel instruments in well under a second.
_WHERE = {
    "Finding": "reports", "Report": "reports", "Violation": "reports",
    "ConsanError": ".errors", "NoGPUError": ".errors", "expect": ".expectations",
    "__version__": ".runtime", "build": ".runtime", "check": ".runtime",
    "gpu_available": ".runtime", "prepare": ".runtime", "TensorMapInfo": ".tma",
    "register_tensor_map": ".tma", "tensor_map": ".tma", "tensor_map_info": ".tma",
    "CompileError": ".toolchain",
}

__all__ = ["check", "prepare", "build", "gpu_available", "expect", "Report", "Violation",
           "Finding", "ConsanError", "NoGPUError", "CompileError", "__version__", "tensor_map",
           "tensor_map_info", "register_tensor_map", "TensorMapInfo"]


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'consan' has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from reports import Finding, Report, Violation

    from .errors import ConsanError, NoGPUError
    from .expectations import expect
    from .runtime import __version__, build, check, gpu_available, prepare
    from .tma import TensorMapInfo, register_tensor_map, tensor_map, tensor_map_info
    from .toolchain import CompileError
