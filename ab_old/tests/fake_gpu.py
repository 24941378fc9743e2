"""A stand-in for the parts of CuPy that `consan.runtime.Prepared` calls, so that the
runtime's sizing decisions and its state block can be checked on a machine without a GPU.

Device buffers are fake addresses; the mapped host log is real memory (the runtime views it
through ctypes); the state block copied to `__consan_state` is kept as bytes.
"""

from __future__ import annotations

import ctypes
import itertools
import sys
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace

import numpy as np

from instrument import abi

SMS = 132
ROOM = 227 * 1024  # opt-in shared memory per block (H100)
SM_SMEM = 228 * 1024  # shared memory per SM


@dataclass
class Buf:
    """A device allocation: an address and a size (slicing gives a view's address)."""

    ptr: int
    nbytes: int

    @property
    def data(self) -> SimpleNamespace:
        return SimpleNamespace(ptr=self.ptr)

    def __getitem__(self, s: slice) -> Buf:
        lo, hi, _ = s.indices(self.nbytes)
        return Buf(self.ptr + lo, hi - lo)

    def set(self, host: np.ndarray) -> None:  # a copy from the host: its bytes kept
        assert host.nbytes == self.nbytes
        self.host = host.tobytes()


@dataclass
class Gpu:
    """What one Prepared did: its allocations, the state block it stored, per cubin the
    static shared memory the fake module reports."""

    static_smem: dict[bytes, int] = field(default_factory=dict)
    regs: int | dict[bytes, int] = 64  # (a dict: per cubin loaded)
    allocs: list[Buf] = field(default_factory=list)
    state: bytes = b""
    loaded: bytes = b""
    _next: itertools.count = field(default_factory=lambda: itertools.count(1 << 40, 1 << 32))
    _host: list[np.ndarray] = field(default_factory=list)

    def zeros(self, n: int, dtype=np.uint8) -> Buf:
        b = Buf(next(self._next), int(n) * np.dtype(dtype).itemsize)
        self.allocs.append(b)
        return b

    def registers(self) -> int:
        return self.regs if isinstance(self.regs, int) else self.regs[self.loaded]

    def occupancy(self, fptr: int, nthreads: int, dyn: int) -> int:
        smem = dyn + self.static_smem.get(self.loaded, 0)
        by_smem = SM_SMEM // smem if smem else 32
        return min(by_smem, 2048 // nthreads, 65536 // (nthreads * self.registers()))

    def module(self) -> ModuleType:
        """A fake `cupy` package (install it with `install`)."""
        gpu = self

        class Module:
            def load(self, cubin: bytes) -> None:
                gpu.loaded = self.cubin = cubin

            def get_function(self, name: str) -> SimpleNamespace:
                return SimpleNamespace(ptr=0xF00)

            def get_global_var(self, name: str) -> int:
                assert name == abi.STATE_SYMBOL
                return 0x5000

        def host_alloc(n: int, _flags: int) -> int:
            a = np.zeros(n, dtype=np.uint8)
            gpu._host.append(a)
            return a.ctypes.data

        def memcpy(dst: int, src: int, n: int, _kind: int) -> None:
            assert dst == 0x5000
            gpu.state = ctypes.string_at(src, n)

        def func_attr(attr: int, fptr: int) -> int:
            return {1: gpu.static_smem.get(gpu.loaded, 0), 4: gpu.registers()}[attr]

        runtime = SimpleNamespace(
            getDeviceCount=lambda: 1, memGetInfo=lambda: (1 << 40, 1 << 40),
            hostAlloc=host_alloc, hostAllocMapped=2, freeHost=lambda p: None,
            memcpy=memcpy, memcpyHostToDevice=1)
        driver = SimpleNamespace(funcGetAttribute=func_attr,
                                 funcSetAttribute=lambda *a: None,
                                 occupancyMaxActiveBlocksPerMultiprocessor=gpu.occupancy)
        device = SimpleNamespace(id=0, attributes={"MultiProcessorCount": SMS,
                                                   "MaxSharedMemoryPerBlockOptin": ROOM,
                                                   "MaxSharedMemoryPerMultiprocessor": SM_SMEM,
                                                   "ReservedSharedMemoryPerBlock": 0})
        cuda = ModuleType("cupy.cuda")
        cuda.runtime, cuda.driver = runtime, driver
        cuda.Device = lambda *a: device
        cuda.function = SimpleNamespace(Module=Module)
        cupy = ModuleType("cupy")
        cupy.cuda, cupy.zeros = cuda, gpu.zeros
        return cupy

    def install(self, monkeypatch, window_base: int = abi.SMEM_RESERVED_BYTES) -> None:
        """Make `import cupy` give the fake, and the measured window base `window_base`."""
        from consan import runtime

        cupy = self.module()
        monkeypatch.setitem(sys.modules, "cupy", cupy)
        monkeypatch.setitem(sys.modules, "cupy.cuda", cupy.cuda)
        monkeypatch.setitem(runtime._WINDOW_BASE, 0, window_base)

    def state_block(self) -> np.void:
        return np.frombuffer(self.state, dtype=abi.state_dtype())[0]
