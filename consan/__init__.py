"""consan: a shadow-memory race sanitizer for GPU kernels.

    rep = consan.check(source, "kernel", grid=..., block=..., args=..., shared_mem=0)
    rep.ok, rep.violations, print(rep)

    with consan.expect("race.raw", where="kernel.cu:42"):   # a known race is still caught
        run_the_racy_kernel()

    m = consan.tensor_map(x, box_shape=(32, 32))  # a TMA tensor map consan knows the box of
"""

from __future__ import annotations

from reports import Finding, Report, Violation

from .errors import ConsanError, NoGPUError
from .expectations import expect
from .runtime import __version__, build, check, gpu_available, prepare
from .tma import TensorMapInfo, register_tensor_map, tensor_map, tensor_map_info
from .toolchain import CompileError

__all__ = ["check", "prepare", "build", "gpu_available", "expect", "Report", "Violation",
           "Finding", "ConsanError", "NoGPUError", "CompileError", "__version__", "tensor_map",
           "tensor_map_info", "register_tensor_map", "TensorMapInfo"]
