"""Sanitize every kernel a program launches through Triton (`@triton.jit`, Gluon).

Triton compiles a kernel through its stages (ttir, ttgir, llir, ptx, cubin) and
launches the cubin with a launcher it generates per signature, which packs the
Python arguments (tensors, scalars, tensor descriptors, its scratch buffers) into
kernel parameters. consan keeps all of that and changes one thing: the function
handle. A launch while a session is active is routed to the session with the
compiled kernel's PTX stage (`CompiledKernel.asm["ptx"]`); consan instruments it,
links it with the checker, and calls Triton's own launcher with the instrumented
function, its launch shape and the shared memory its tables need; then it reads
the log back, as for a CuPy kernel. Triton's own cubin is never replaced, so a
kernel compiled (or taken from Triton's on-disk cache) before or during the session
runs natively, unchanged, whenever no session is active, and no uninstrumented
cubin can pass for a checked one: every checked launch runs code consan built from
the PTX.

The interception point is the `run` property of `triton.compiler.compiler.
CompiledKernel`, through which `JITFunction.run`, `kernel[grid](...)` and the
autotuner launch. It is patched when Triton is first imported (or at install time
when it already is), so a program that never uses Triton never imports it.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.abc
import numbers
import os
import re
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from instrument.static_proof import MAP_BITS, param_layout

from . import runtime, session, tma
from .session import ExStream, NotCheckable, proofs_on, work_in

_MODULE = "triton.compiler.compiler"
_lock = threading.RLock()
_patched: dict[str, Any] = {}  # name -> original
# (hash, arch) -> (build, whether it can race), or why it cannot be checked: a kernel that
# cannot be instrumented is tried once, not at every launch of a loop or an autotuner.
_builds: dict[tuple[str, str], tuple[runtime.Build, tuple[bool, bool]] | NotCheckable] = {}


class _Kernel:
    """A Triton CompiledKernel as the session sees a checked function."""

    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled
        self.kernel = compiled.metadata.name  # the PTX entry
        self.module = self
        self.display_name = _display_name(compiled)
        # (the arch, whether proofs counted, the build) where the module was found to have
        # nothing to check
        self._nothing: tuple[str, bool, runtime.Build] | None = None
        self._layout: list[int] | None = None

    def param_layout(self) -> list[int]:
        """Its parameters' bits as its PTX declares them (static_proof.param_layout); none
        where the PTX stage is not kept."""
        if self._layout is None:
            ptx = self.compiled.asm.get("ptx") if hasattr(self.compiled.asm, "get") else None
            self._layout = param_layout(ptx or "", self.kernel) or []
        return self._layout

    def native_build(self) -> runtime.Build | None:
        """This kernel's build on this device where it has nothing to check (no shared
        memory, or proven race-free for its `.reqntid`), known after its first launch here;
        else None. (Such a launch's whole cost is the host's path: it skips build().)"""
        got = self._nothing
        if got is None or got[:2] != (runtime.device_arch().sm, proofs_on()):
            return None
        return got[2]

    def build(self, roots: tuple[str, ...] = ()) -> tuple[runtime.Build, bool]:
        """The instrumented kernel and whether it can race, built once per compiled kernel
        and device arch."""
        c = self.compiled
        arch = runtime.device_arch()
        key = (c.hash, arch.sm)
        with _lock:
            got = _builds.get(key)
            if got is None:
                try:
                    b = self._instrumented(arch)
                    got = (b, work_in(b))
                except NotCheckable as why:
                    got = why
                _builds[key] = got
        if isinstance(got, NotCheckable):
            raise NotCheckable(str(got))
        proofs = proofs_on()
        work = got[1][0] if proofs else got[1][1]
        if not work:
            self._nothing = (arch.sm, proofs, got[0])
        return got[0], work

    def _instrumented(self, arch: Any) -> runtime.Build:
        ptx = self.compiled.asm.get("ptx") if hasattr(self.compiled.asm, "get") else None
        if not ptx:
            raise NotCheckable("Triton kept only the cubin of this kernel (its PTX stage is "
                               "not in the compiled kernel, e.g. TRITON_STORE_BINARY_ONLY=1 "
                               "with a cached kernel): clear Triton's cache or unset it")
        try:
            # (Triton's layouts replicate data across warps: stores carry value tags)
            return runtime.build(ptx, (f"-arch={arch.sm}",), source_name=f"{self.kernel}.ptx",
                                 value_tags=True)
        except Exception as exc:  # noqa: BLE001 - never break the user's program
            first = (str(exc).strip().splitlines() or [""])[0]
            raise NotCheckable(f"consan could not instrument it ({type(exc).__name__}: "
                               f"{first})") from None


_INTS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}
_ONE_PARAM = {"fp16", "bf16", "fp32", "fp64", "i1", "u1"}  # (not given: floats, flags)
_DESC = re.compile(r"tensordesc<[^\[>]*\[([^\]]*)\]")


def _descriptor_params(ty: str, meta: Any) -> list[str] | None:
    """The kernel parameters Triton's launcher (triton/backends/nvidia/driver.py, 3.6)
    makes of one host tensor descriptor: a tensor map, then its shape (i32) and strides
    (i64), where the kernel reads it through TMA (`meta`); else a pointer, shape and
    strides (i64), a padding flag, then shape and strides again. None: not understood."""
    m = _DESC.match(ty)
    if m is None:
        return None
    rank = m.group(1).count(",") + 1
    head = ["map"] if meta is not None else ["*", *["i64"] * (2 * rank), "i1"]
    return [*head, *["i32"] * rank, *["i64"] * rank]


def _fits(kinds: list[str], layout: Sequence[int]) -> bool:
    """Whether parameters of these kinds are the kernel's declared ones from its first on:
    a tensor map exactly where it declares one (static_proof.MAP_BITS), and integers and
    pointers at their widths."""
    if len(layout) < len(kinds):
        return False
    for kind, bits in zip(kinds, layout, strict=False):
        want = MAP_BITS if kind == "map" else 64 if kind.startswith("*") else _INTS.get(kind)
        if (bits == MAP_BITS) != (kind == "map") or (want is not None and bits != want):
            return False
    return True


def scalar_params(signature: Mapping[str, Any] | None, args: Sequence[Any],
                  tensordesc_meta: Sequence[Any] | None = None,
                  layout: Sequence[int] | None = None) -> dict[int, tuple[int, int]]:
    """A launch's integer arguments (value, bits the launcher passes) by the position of
    the kernel parameter each becomes, as Triton's launcher passes them: a constexpr (an
    integer equal to 1 included) is no parameter, a pointer or float is one. A tensor
    descriptor becomes several (`_descriptor_params`, by its `tensordesc_meta`), counted
    only where the kernel's declared parameters (`layout`: their bits, in order, from
    static_proof.param_layout) are exactly the ones that makes; else, and from any other
    kind of argument (a tuple is flattened) on, nothing is numbered."""
    if not isinstance(signature, Mapping) or len(signature) != len(args):
        return {}
    out: dict[int, tuple[int, int]] = {}
    kinds: list[str] = []
    metas = iter(tensordesc_meta or ())
    for ty, v in zip(signature.values(), args, strict=True):
        if ty == "constexpr":
            continue
        if not isinstance(ty, str):
            break
        if ty.startswith("tensordesc"):
            parts = _descriptor_params(ty, next(metas, None)) if layout is not None else None
            if parts is None:
                break
            kinds += parts
            continue
        if ty in _INTS and isinstance(v, numbers.Integral) and not isinstance(v, bool):
            out[len(kinds)] = (int(v), _INTS[ty])
        elif not (ty.startswith("*") or ty in _ONE_PARAM or ty in _INTS):
            break
        kinds.append(ty)
    if "map" in kinds or "*" in kinds:  # (positions past a descriptor: checked, or none)
        if layout is None or not _fits(kinds, layout):
            return scalar_params(signature, args)
    return out


def _display_name(compiled: Any) -> str:
    fn = getattr(getattr(compiled, "src", None), "fn", None)
    return getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", None) \
        or compiled.metadata.name


def _checked_run(compiled: Any, native: Any, s: Any, grid_x: int, grid_y: int,
                 grid_z: int, stream: int, function: Any, packed: tuple, launch_metadata: Any,
                 enter_hook: Any, exit_hook: Any, *args: Any) -> None:
    """Triton's launcher call, checked: the same arguments, our function and shared memory.
    A launcher kept past its session (PyTorch Inductor stores `compiled.run`) checks under
    the session active when it is called, or runs natively outside any."""
    if s is not session.current_session():
        s = session.current_session()
        if s is None or session.is_busy():
            return native(grid_x, grid_y, grid_z, stream, function, packed, launch_metadata,
                          enter_hook, exit_hook, *args)
    k = compiled.__dict__.get("_consan_kernel")
    if k is None:  # (once per compiled kernel: a launch of a small one pays little)
        k = compiled.__dict__["_consan_kernel"] = _Kernel(compiled)
    # (a cluster launch is proven for its own shape, if at all: see Session.launch)
    b = k.native_build()
    if b is not None and int(packed[1]) <= 1:  # (Triton's vector add: counted, natively)
        return s.launch_native(k, native, (grid_x, grid_y, grid_z, stream, function, packed,
                                           launch_metadata, enter_hook, exit_hook, *args),
                               ExStream(int(stream)), b)
    md = compiled.metadata
    num_warps, num_ctas, shared = packed[0], packed[1], packed[2]
    grid = (max(1, int(grid_x)) * int(num_ctas), max(1, int(grid_y)), max(1, int(grid_z)))
    block = (32 * int(num_warps), 1, 1)

    def run_native() -> None:
        native(grid_x, grid_y, grid_z, stream, function, packed, launch_metadata, enter_hook,
               exit_hook, *args)

    if int(grid_x) * int(grid_y) * int(grid_z) == 0:
        return run_native()  # Triton launches nothing either

    def launch(handle: int, shared_mem: int) -> None:
        native(grid_x, grid_y, grid_z, stream, handle, (num_warps, num_ctas, shared_mem),
               launch_metadata, enter_hook, exit_hook, *args)

    cooperative = bool(getattr(md, "launch_cooperative_grid", False))
    extra = {"cluster": [int(num_ctas), 1, 1]} if int(num_ctas) > 1 else None
    # (the session runs the native launch itself, and says why, where it checks nothing)
    maps = _tensor_maps(md, args)
    s.launch(k, grid, block, _Launcher(maps, launch), int(shared),
             ExStream(int(stream)), cooperative, run_native, extra_launch=extra,
             values=lambda: (scalar_params(getattr(getattr(compiled, "src", None),
                                                   "signature", None), args,
                                           getattr(md, "tensordesc_meta", None),
                                           k.param_layout()),
                             tma.copy_sizes(maps)))


class _Launcher(runtime.Launcher):
    """Triton's own launcher, `launch(function handle, dynamic shared memory)`, with the
    instrumented function and the shared memory of consan's tables; `args` are the tensor
    maps that launcher builds."""

    def __init__(self, maps: tuple, launch: Callable[[int, int], None]) -> None:
        super().__init__(maps)
        self.launch = launch

    def __call__(self, p: runtime.Prepared) -> None:
        self.launch(int(p.function.ptr), p.launch_shared_mem)


def _tensor_maps(md: Any, args: tuple) -> tuple:
    """The 128-byte maps Triton's launcher will build from host tensor descriptors, built
    here first through Triton's own code so consan knows their boxes before the launch
    (tma.py); the launcher builds the same bytes again."""
    metas = getattr(md, "tensordesc_meta", None)
    if not metas:
        return ()
    try:
        from triton.backends.nvidia.driver import make_tensordesc_arg
    except ImportError:
        return ()
    # triton.tools.tensor_descriptor's and Gluon's TensorDescriptor, in signature order
    descs = [a for a in args if all(hasattr(a, n) for n in ("base", "shape", "strides",
                                                             "block_shape"))]
    out = []
    for desc, meta in zip(descs, metas, strict=False):
        if meta is None:
            continue
        try:
            made = make_tensordesc_arg(desc, meta)
        except Exception:  # noqa: BLE001 - Triton's launcher will say what is wrong
            continue
        data = _map_bytes(made[0])
        if data is not None:
            out.append(tma.as_arg(data, tma.tensor_map_info(data)))
    return tuple(out)


def _map_bytes(obj: Any) -> bytes | None:
    """The CUtensorMap inside Triton's PyCUtensorMap object (a PyObject header, then the
    map aligned to 128 bytes, so at offset 128; the type is exactly 256 bytes)."""
    if type(obj).__name__ != "PyCUtensorMap" or type(obj).__basicsize__ != 256:
        return None
    return ctypes.string_at(id(obj) + 128, tma.MAP_BYTES)


def _observing_fill(fill: Any) -> Any:
    """Triton's `fill_tma_descriptor`, telling consan each map's geometry (tma.register)."""

    @functools.wraps(fill)
    def fill_tma_descriptor(address, swizzle, elem_size, elem_type, block, shape, strides,
                            padding, *rest):
        m = fill(address, swizzle, elem_size, elem_type, block, shape, strides, padding, *rest)
        data = _map_bytes(m)
        if data is not None:
            rank = len(block)
            try:
                info = tma.TensorMapInfo(
                    int(elem_type), global_dim=tuple(int(s) for s in reversed(shape)),
                    box_dim=tuple(int(b) for b in reversed(block)), element_strides=(1,) * rank,
                    global_strides=tuple(int(s) * int(elem_size)
                                         for s in reversed(tuple(strides)[:-1])),
                    global_address=int(address), swizzle=int(swizzle), oob_fill=int(padding))
                tma.register(data, info)
            except Exception:  # noqa: BLE001 - never a failure of the user's program: the
                pass  # launch then reports the map as tool.tensor-map-unknown (tma.py)
        return m

    fill_tma_descriptor.__consan_wrapped__ = fill  # type: ignore[attr-defined]
    return fill_tma_descriptor


def _patch(compiler_module: Any) -> None:
    """Route CompiledKernel.run through the active session (inert without one)."""
    with _lock:
        if "run" in _patched:
            return
        cls = compiler_module.CompiledKernel
        original = cls.__dict__["run"]

        def run(self):
            native = original.fget(self)
            s = session.current_session()
            if s is None or session.is_busy():
                return native
            return functools.partial(_checked_run, self, native, s)

        _patched["run"] = original
        cls.run = property(run, doc=original.__doc__)
        _patch_fill()


def _patch_fill() -> None:
    try:
        from triton.runtime import driver

        utils = driver.active.utils
    except Exception:  # noqa: BLE001 - no CUDA driver here: nothing launches either
        return
    fill = getattr(utils, "fill_tma_descriptor", None)
    if fill is not None and not hasattr(fill, "__consan_wrapped__"):
        _patched["fill"] = (utils, fill)
        utils.fill_tma_descriptor = _observing_fill(fill)


class _Finder(importlib.abc.MetaPathFinder):
    """Patches Triton's compiler module right after its first import."""

    def find_spec(self, name, path, target=None):
        if name != _MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            spec = getattr(finder, "find_spec", lambda *a: None)(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _Loader(spec.loader)
                return spec
        return None


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader) -> None:
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module) -> None:
        self.inner.exec_module(module)
        _patch(module)

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, ... (tracebacks)
        return getattr(self.inner, name)


_finder = _Finder()


# PyTorch Inductor's static CUDA launcher launches Triton's cubins itself, with
# cuLaunchKernel, past CompiledKernel.run: while consan is installed Inductor is told to use
# Triton's launchers (its config reads the variable when imported, the attribute after).
_STATIC_ENV = "TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER"
_INDUCTOR_CONFIG = "torch._inductor.config"


def _static_launcher_off() -> None:
    if "static" in _patched:
        return
    cfg = sys.modules.get(_INDUCTOR_CONFIG)
    was = getattr(cfg, "use_static_cuda_launcher", None) if cfg is not None else None
    _patched["static"] = (os.environ.get(_STATIC_ENV), was)
    os.environ[_STATIC_ENV] = "0"
    if was:
        cfg.use_static_cuda_launcher = False  # type: ignore[union-attr]


def _static_launcher_back() -> None:
    saved = _patched.pop("static", None)
    if saved is None:
        return
    env, was = saved
    if env is None:
        os.environ.pop(_STATIC_ENV, None)
    else:
        os.environ[_STATIC_ENV] = env
    cfg = sys.modules.get(_INDUCTOR_CONFIG)
    if cfg is not None and hasattr(cfg, "use_static_cuda_launcher"):
        # imported after install, the config read our "0": give it what it would have read
        # (the variable's "1", or Inductor's default, on, where it is unset)
        cfg.use_static_cuda_launcher = was if was is not None else env in (None, "1")


def install() -> None:
    """Patch Triton now if it is imported, else as soon as it is (idempotent)."""
    with _lock:
        _static_launcher_off()
        mod = sys.modules.get(_MODULE)
        if mod is not None:
            _patch(mod)
        elif _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    with _lock:
        _static_launcher_back()
        if _finder in sys.meta_path:
            sys.meta_path.remove(_finder)
        original = _patched.pop("run", None)
        mod = sys.modules.get(_MODULE)
        if original is not None and mod is not None:
            mod.CompiledKernel.run = original
        fill = _patched.pop("fill", None)
        if fill is not None:
            fill[0].fill_tma_descriptor = fill[1]


def installed() -> bool:
    return "run" in _patched or _finder in sys.meta_path
