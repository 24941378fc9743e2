"""Sanitize every kernel a program compiles and launches through CuPy.

CuPy's `Function.__call__` cannot be patched (immutable extension type), but
every run-time compile goes through `cupy.cuda.compiler.
_compile_module_with_cache` (RawKernel, RawModule, ElementwiseKernel,
ReductionKernel, ufuncs, `cupyx.jit.rawkernel`, `cupy.fuse`), looked up as a
module attribute at call time, and CuPy honours Python subclasses of its
`Module`/`Function` (cpdef overrides included). So: wrap that function, return
a `ConsanModule` whose `get_function` hands out `ConsanFunction`s, and route
their `__call__`/`linear_launch` through the instrumented cubin. `RawModule`
from a `.ptx` path is caught at `cupy._core.raw._get_raw_module`, and a
cluster launch through cuda-bindings' `cuLaunchKernelEx` on a CuPy function's
handle at that function. Everything else that launches (cuBLAS, CUB, cuFFT,
...) is counted through CUPTI and listed as not checked.

The wrappers stay inert unless a session (session.py) is active: a module compiled while
the hook is installed keeps working, natively, after the session ends.
"""

from __future__ import annotations

import functools
import threading
import weakref
from typing import Any

from instrument.rewrite import demangle

from . import cupy_build, runtime, session, tma
from .errors import ConsanError
from .session import ExStream, NotCheckable, dim3, is_busy, proofs_on, run_native, work_in

_RDC = ("-rdc=true", "--relocatable-device-code=true", "-dc", "--device-c")

_lock = threading.RLock()
_originals: dict[str, tuple[Any, str, Any]] = {}  # key -> (owner, attribute, original)
_by_ptr: weakref.WeakValueDictionary[int, ConsanFunction] = weakref.WeakValueDictionary()


# ====================================================================== Module / Function

def _cupy_function_types() -> tuple[type, type]:
    from cupy.cuda import function

    return function.Module, function.Function


def _classes() -> tuple[type, type]:
    """ConsanModule and ConsanFunction, created on first use so importing consan needs no CuPy."""
    global ConsanModule, ConsanFunction
    if isinstance(ConsanModule, type):
        return ConsanModule, ConsanFunction
    Module, Function = _cupy_function_types()

    class _ConsanModule(Module):
        """A CuPy module whose functions run instrumented while a session is active.

        It shares the native module's handle (so `.ptr`, globals and the mapping of
        name expressions behave as before) and keeps the native module alive.
        """

        def __init__(self, native, spec: cupy_build.CompileSpec | None,
                     reason: str | None) -> None:
            self.ptr = native.ptr
            self._native = native
            if native.mapping is not None:
                self._set_mapping(dict(native.mapping))
            self._spec, self._reason = spec, reason
            self._built: tuple[runtime.Build, tuple[bool, bool]] | None = None
            self.global_names: list[str] = []  # its __device__/__constant__ variables
            self._globals: dict[str, tuple[int, int]] = {}
            self._functions: dict[str, Any] = {}

        def __del__(self) -> None:
            # The native module unloads the handle; CuPy's __dealloc__ must not do it twice.
            self.ptr = 0

        def get_function(self, name):
            if isinstance(name, bytes):
                name = name.decode()
            fn = self._functions.get(name)
            if fn is None:
                fn = _ConsanFunction(self, self._native.get_function(name), name)
                self._functions[name] = fn
            return fn

        def get_global_var(self, name):
            return self._native.get_global_var(name)

        def display_name(self, mangled: str) -> str:
            for expr, low in (self.mapping or {}).items():
                if low == mangled:
                    return expr
            return demangle(mangled)

        def build(self, roots: tuple[str, ...]) -> tuple[runtime.Build, bool]:
            """The instrumented module and whether it can race, built once; NotCheckable
            says why it cannot be."""
            if self._built is None:
                if self._reason:
                    raise NotCheckable(self._reason)
                spec = self._spec
                spec.candidates = tuple(spec.candidates) + tuple(cupy_build.module_files(roots))
                try:
                    b, names = cupy_build.build(spec)
                except Exception as exc:  # noqa: BLE001 - never break the user's program
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                    self._reason = (f"consan could not instrument it ({type(exc).__name__}: "
                                    f"{first})")
                    raise NotCheckable(self._reason) from None
                self._built, self.global_names = (b, work_in(b)), names
            b, work = self._built
            return b, work[0] if proofs_on() else work[1]

        def native_global(self, name: str) -> tuple[int, int] | None:
            if name not in self._globals:
                self._globals[name] = module_global(self.ptr, name)
            return self._globals[name]

    class _ConsanFunction(Function):
        """A CuPy function: checked when a session is active, native otherwise."""

        def __init__(self, module, native, name: str) -> None:
            self.module = module
            self.ptr = native.ptr
            self._native = native
            self.kernel = name
            _by_ptr[int(native.ptr)] = self

        @functools.cached_property
        def display_name(self) -> str:  # (asked at every launch: demangled once)
            return self.module.display_name(self.kernel)

        def __call__(self, grid, block, args, shared_mem=0, stream=None,
                     enable_cooperative_groups=False):
            native = functools.partial(self._native, grid, block, args, shared_mem, stream,
                                       enable_cooperative_groups)
            s = session.current_session()
            if s is None or is_busy() or not isinstance(grid, tuple) or \
                    not isinstance(block, tuple):
                return run_native(native)
            s.launch(self, dim3(grid), dim3(block), _Launcher(self.module, args),
                     int(shared_mem), stream, bool(enable_cooperative_groups), native,
                     values=lambda: (scalar_params(args), tma.copy_sizes(args)
                                     if isinstance(args, tuple | list) else ()))

        def linear_launch(self, size, args, shared_mem=0, block_max_size=128, stream=None,
                          enable_cooperative_groups=False):
            native = functools.partial(self._native.linear_launch, size, args, shared_mem,
                                       block_max_size, stream, enable_cooperative_groups)
            s = session.current_session()
            if s is None or is_busy() or size <= 0:
                return run_native(native)
            gridx = min(0x7FFFFFFF, (size + block_max_size - 1) // block_max_size)
            blockx = min(block_max_size, size)
            s.launch(self, (gridx, 1, 1), (blockx, 1, 1), _Launcher(self.module, args),
                     int(shared_mem), stream, bool(enable_cooperative_groups), native)

    ConsanModule, ConsanFunction = _ConsanModule, _ConsanFunction
    return ConsanModule, ConsanFunction


ConsanModule: Any = None
ConsanFunction: Any = None


def module_global(module_ptr: int, name: str) -> tuple[int, int] | None:
    """(device address, size) of a module's __device__/__constant__ variable, or None."""
    from cuda.bindings import driver

    err, ptr, size = driver.cuModuleGetGlobal(driver.CUmodule(module_ptr), name.encode())
    if int(err) != 0:
        return None
    return int(ptr), int(size)


# ====================================================================== the wrappers

def _compile_wrapper(source, options=(), **kw):
    mod = _originals["compile"][2](source, options, **kw)
    Module, _ = _cupy_function_types()
    if not isinstance(mod, Module):
        return mod  # LTO IR for a later link: nothing to launch here
    cmod_cls, _ = _classes()
    options = tuple(options)
    backend = kw.get("backend", "nvrtc")
    reason = None
    if backend != "nvrtc":
        reason = f"compiled with CuPy's {backend} backend (consan rebuilds with NVRTC only)"
    elif kw.get("jitify") or "-DCUPY_USE_JITIFY" in options:
        reason = "compiled with jitify, whose preprocessed headers consan cannot see"
    elif any(o in _RDC for o in options):
        reason = "relocatable device code (-rdc) is not supported by consan yet"
    names = kw.get("name_expressions")
    spec = cupy_build.CompileSpec(
        source=source, options=options, name_expressions=tuple(names) if names else None,
        arch=kw.get("arch"), candidates=tuple(f for f, _ in cupy_build.user_frames()))
    return cmod_cls(mod, spec, reason)


_path_modules: dict[int, Any] = {}


def _raw_module_wrapper(code, path, *args, **kw):
    mod = _originals["raw"][2](code, path, *args, **kw)
    if path is None:
        return mod  # compiled from source: already a ConsanModule
    cmod_cls, _ = _classes()
    if isinstance(mod, cmod_cls):
        return mod
    key = id(mod)
    if key not in _path_modules:
        reason = None
        if not str(path).endswith(".ptx"):
            reason = (f"loaded from {path}, a precompiled binary: consan needs PTX (or the "
                      "CUDA source) to instrument it")
        spec = cupy_build.CompileSpec(ptx_path=str(path))
        _path_modules[key] = cmod_cls(mod, spec, reason)
    return _path_modules[key]


def _launch_ex_wrapper(config, f, kernelParams, extra):
    original = _originals["launch_ex"][2]
    s = session.current_session()
    try:
        fn = _by_ptr.get(int(f)) if s is not None and not is_busy() else None
    except Exception:  # noqa: BLE001 - not a handle we know
        fn = None
    if fn is None:
        return original(config, f, kernelParams, extra)
    return _launch_ex(s, fn, config, f, kernelParams, extra)


def install() -> None:
    """Put the wrappers in place (idempotent). Needs CuPy importable, not a GPU."""
    with _lock:
        if _originals:
            return
        import cupy._core.raw as raw
        import cupy.cuda.compiler as compiler

        _classes()
        _originals["compile"] = (compiler, "_compile_module_with_cache",
                                 compiler._compile_module_with_cache)
        compiler._compile_module_with_cache = _compile_wrapper
        _originals["raw"] = (raw, "_get_raw_module", raw._get_raw_module)
        raw._get_raw_module = _raw_module_wrapper
        try:
            from cuda.bindings import driver
        except ImportError:
            return
        _originals["launch_ex"] = (driver, "cuLaunchKernelEx", driver.cuLaunchKernelEx)
        driver.cuLaunchKernelEx = _launch_ex_wrapper
        # Maps built by the program through the driver become known (their box geometry).
        _originals["tmap_encode"] = (driver, "cuTensorMapEncodeTiled",
                                     driver.cuTensorMapEncodeTiled)
        driver.cuTensorMapEncodeTiled = tma.observing(driver.cuTensorMapEncodeTiled)


def uninstall() -> None:
    """Restore CuPy exactly as it was; modules compiled meanwhile keep running natively."""
    with _lock:
        for owner, attr, original in _originals.values():
            setattr(owner, attr, original)
        _originals.clear()


def installed() -> bool:
    return bool(_originals)


class _Launcher(runtime.Launcher):
    """CuPy's launch of the instrumented function with the kernel's arguments; the
    module's __device__/__constant__ variables are copied into the instrumented module
    before it and back after it."""

    def __init__(self, module: Any, args: tuple = ()) -> None:
        super().__init__(args)
        self.module = module

    def __call__(self, p: runtime.Prepared) -> None:
        pairs = self._mirror_in(p)
        self.run(p)
        self._mirror_out(pairs)

    def run(self, p: runtime.Prepared) -> None:
        super().__call__(p)

    def _mirror_in(self, p: runtime.Prepared) -> list[tuple[int, int, int]]:
        names = self.module.global_names
        if not names:
            return []
        import cupy

        pairs = []
        stream = cupy.cuda.get_current_stream().ptr
        for name in names:
            src = self.module.native_global(name)
            dst = module_global(int(p.module.ptr), name)
            if src is None or dst is None:
                continue
            size = min(src[1], dst[1])
            cupy.cuda.runtime.memcpyAsync(dst[0], src[0], size, 3, stream)
            pairs.append((src[0], dst[0], size))
        return pairs

    @staticmethod
    def _mirror_out(pairs: list[tuple[int, int, int]]) -> None:
        if not pairs:
            return
        import cupy

        stream = cupy.cuda.get_current_stream().ptr
        for native_ptr, instr_ptr, size in pairs:
            cupy.cuda.runtime.memcpyAsync(native_ptr, instr_ptr, size, 3, stream)


class _LaunchExLauncher(_Launcher):
    """The program's own `cuLaunchKernelEx` config (cluster dimensions, attributes) with the
    instrumented function and the dynamic shared memory of consan's tables."""

    def __init__(self, module: Any, original: Any, config: Any, f: Any, params: Any,
                 extra: Any) -> None:
        super().__init__(module)
        self.original, self.config, self.f = original, config, f
        self.params, self.extra = params, extra

    def run(self, p: runtime.Prepared) -> None:
        from cuda.bindings import driver

        handle = int(p.function.ptr)
        _copy_function_attributes(int(self.f), handle)
        config = self.config
        user_smem = config.sharedMemBytes
        config.sharedMemBytes = p.launch_shared_mem  # with consan's tables
        try:
            (err,) = self.original(config, driver.CUfunction(handle), self.params, self.extra)
        finally:
            config.sharedMemBytes = user_smem
        if int(err) != 0:
            raise ConsanError(f"cuLaunchKernelEx of the instrumented kernel failed ({err!r})")


def scalar_params(args: Any) -> dict[int, tuple[int, int]]:
    """A launch's NumPy integer arguments (value, bits CuPy passes) by kernel parameter
    position: CuPy passes each argument of a function call as one parameter (a proof
    before launch may need them: the length of a loop over a parameter). A Python int is
    left out: the width CuPy gives it is not the kernel's to know."""
    import numpy as np

    if not isinstance(args, tuple | list):
        return {}
    return {i: (int(a), 8 * a.itemsize) for i, a in enumerate(args)
            if isinstance(a, np.integer)}


def _launch_ex(s: session.Session, fn, config, f, params, extra) -> Any:
    """A cuda-bindings `cuLaunchKernelEx` (e.g. with cluster dimensions) on a CuPy function."""
    from cuda.bindings import driver

    original = _originals["launch_ex"][2]
    result: list[Any] = []

    def native() -> None:
        result.append(original(config, f, params, extra))

    grid = dim3((config.gridDimX, config.gridDimY, config.gridDimZ))
    block = dim3((config.blockDimX, config.blockDimY, config.blockDimZ))
    stream = ExStream(int(config.hStream)) if config.hStream is not None else None
    cluster = None
    cluster_id = int(driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
    for attr in list(config.attrs or [])[: int(config.numAttrs or 0)]:
        if int(attr.id) == cluster_id:
            c = attr.value.clusterDim
            cluster = [int(c.x), int(c.y), int(c.z)]
    launcher = _LaunchExLauncher(fn.module, original, config, f, params, extra)
    s.launch(fn, grid, block, launcher, int(config.sharedMemBytes), stream, False, native,
             extra_launch={"cluster": cluster} if cluster else None)
    return result[0] if result else (driver.CUresult.CUDA_SUCCESS,)


def _copy_function_attributes(src: int, dst: int) -> None:
    """Attributes a cluster launch depends on, from the user's function to the instrumented one."""
    from cuda.bindings import driver

    attrs = driver.CUfunction_attribute
    for name in ("CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED",
                 "CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE",
                 "CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT"):
        attr = getattr(attrs, name, None)
        if attr is None:
            continue
        err, value = driver.cuFuncGetAttribute(attr, driver.CUfunction(src))
        if int(err) == 0:
            driver.cuFuncSetAttribute(driver.CUfunction(dst), attr, value)
