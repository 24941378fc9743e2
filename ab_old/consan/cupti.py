"""Count the kernel launches consan cannot check, by name, through CUPTI's callback API.

cuBLAS, CUB/Thrust, cuFFT and other precompiled kernels never pass through
CuPy's compiler, so consan cannot instrument them; they must still be listed
as not checked, never skipped silently. CUPTI reports every launch with the
kernel's name; consan marks its own launches (thread-local) and counts the
rest. Runtime-API launches call the driver internally: driver callbacks
inside a runtime call are not counted twice. If CUPTI is unavailable the
caller is told why, and says so in its summary.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import threading
from collections.abc import Callable, Iterator

_DRIVER, _RUNTIME = 1, 2
_API_ENTER = 0
_DRIVER_LAUNCH = {115, 116, 117, 307, 442, 477, 478, 480, 652, 653}
_DRIVER_GRAPH = {514, 515}
_RUNTIME_LAUNCH = {13, 211, 213, 214, 269, 270, 272, 430, 431, 505, 506}
_RUNTIME_GRAPH = {311, 312}

_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                             ctypes.c_void_p)


class _CallbackData(ctypes.Structure):
    _fields_ = [("callbackSite", ctypes.c_int), ("functionName", ctypes.c_char_p),
                ("functionParams", ctypes.c_void_p), ("functionReturnValue", ctypes.c_void_p),
                ("symbolName", ctypes.c_char_p), ("context", ctypes.c_void_p),
                ("contextUid", ctypes.c_uint32), ("correlationData", ctypes.c_void_p),
                ("correlationId", ctypes.c_uint32)]


_tls = threading.local()

GRAPH_LAUNCH = "<CUDA graph launch>"


@contextlib.contextmanager
def own_launch() -> Iterator[None]:
    """Launches inside this block are consan's (or ones it accounted for): not counted."""
    _tls.own = getattr(_tls, "own", 0) + 1
    try:
        yield
    finally:
        _tls.own -= 1


def call_own(fn: Callable[..., object], *args: object) -> object:
    """`fn(*args)` as own_launch would run it, without a context manager's cost (a small
    kernel's launch is a few microseconds of host time)."""
    _tls.own = getattr(_tls, "own", 0) + 1
    try:
        return fn(*args)
    finally:
        _tls.own -= 1


def pretty(name: str) -> str:
    """A readable kernel name from a mangled symbol: `cub::...::DeviceReduceKernel<...>`."""
    if not name.startswith("_Z"):
        return name
    nested = name.startswith("_ZN")
    i = 3 if nested else 2
    while i < len(name) and name[i] in "KVr":
        i += 1
    parts = []
    while i < len(name) and name[i].isdigit():
        j = i
        while j < len(name) and name[j].isdigit():
            j += 1
        n = int(name[i:j])
        parts.append(name[j:j + n])
        i = j + n
        if not nested or i >= len(name) or name[i] in "IE":
            break
    if not parts:
        return name
    return "::".join(parts) + ("<...>" if i < len(name) and name[i] == "I" else "")


def _load() -> ctypes.CDLL:
    errors = []
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        lib = load_nvidia_dynamic_lib("cupti")
        return ctypes.CDLL(lib.abs_path)
    except Exception as exc:  # noqa: BLE001 - try the usual places next
        errors.append(f"cuda.pathfinder: {exc}")
    names = ["libcupti.so", "libcupti.so.13", "libcupti.so.12"]
    found = ctypes.util.find_library("cupti")
    if found:
        names.insert(0, found)
    for root in filter(None, (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                              "/usr/local/cuda")):
        for sub in ("extras/CUPTI/lib64", "lib64", "lib", "targets/x86_64-linux/lib"):
            names.append(os.path.join(root, sub, "libcupti.so"))
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError as exc:
            errors.append(str(exc))
    raise OSError("libcupti not found (" + "; ".join(errors[:3]) + ")")


class LaunchCounter:
    """Calls `on_launch(kernel_name)` for each kernel launch that consan did not make."""

    def __init__(self, on_launch: Callable[[str], None]) -> None:
        self._on_launch = on_launch
        self._lib: ctypes.CDLL | None = None
        self._handle = ctypes.c_void_p()
        self._cb = _CALLBACK(self._callback)  # kept alive while subscribed
        self.active = False

    def start(self) -> str | None:
        """Subscribe; None on success, else why launches cannot be counted."""
        try:
            lib = _load()
        except OSError as exc:
            return str(exc)
        res = lib.cuptiSubscribe(ctypes.byref(self._handle), self._cb, None)
        if res != 0:
            return f"CUPTI could not subscribe ({self._error(lib, res)}; another profiler or " \
                   "sanitizer may hold CUPTI)"
        self._lib = lib
        for domain, ids in ((_DRIVER, _DRIVER_LAUNCH | _DRIVER_GRAPH),
                            (_RUNTIME, _RUNTIME_LAUNCH | _RUNTIME_GRAPH)):
            for cbid in sorted(ids):
                res = lib.cuptiEnableCallback(1, self._handle, domain, cbid)
                if res != 0 and cbid in (307, 211):
                    self.stop()
                    return f"CUPTI could not enable launch callbacks ({self._error(lib, res)})"
        self.active = True
        return None

    def stop(self) -> None:
        if self._lib is not None:
            self._lib.cuptiUnsubscribe(self._handle)
            self._lib = None
        self.active = False

    @staticmethod
    def _error(lib: ctypes.CDLL, res: int) -> str:
        text = ctypes.c_char_p()
        try:
            lib.cuptiGetResultString(res, ctypes.byref(text))
            return f"CUPTI error {res}: {text.value.decode() if text.value else '?'}"
        except Exception:  # noqa: BLE001
            return f"CUPTI error {res}"

    def _callback(self, _userdata, domain: int, cbid: int, cbdata) -> None:
        try:
            data = ctypes.cast(cbdata, ctypes.POINTER(_CallbackData)).contents
            enter = data.callbackSite == _API_ENTER
            if domain == _RUNTIME:
                depth = getattr(_tls, "runtime", 0)
                _tls.runtime = depth + 1 if enter else max(0, depth - 1)
                if not enter or depth:
                    return
            elif not enter or getattr(_tls, "runtime", 0):
                return  # a driver call made by a runtime call we already counted
            if getattr(_tls, "own", 0):
                return
            graph = _DRIVER_GRAPH if domain == _DRIVER else _RUNTIME_GRAPH
            if cbid in graph:
                name = GRAPH_LAUNCH
            else:
                name = data.symbolName.decode(errors="replace") if data.symbolName else \
                    "<unnamed kernel>"
            self._on_launch(name)
        except Exception:  # noqa: BLE001 - never let the callback raise into the driver
            pass
