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

The wrappers stay inert unless a `Session` is active: a module compiled while
the hook is installed keeps working, natively, after the session ends.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from instrument.events import Event
from instrument.rewrite import demangle
from reports import suppress
from reports.report import finding_dict
from reports.session import (
    SessionReport,
    finding_header,
    render_live_fault,
    render_live_findings,
)

from . import cupti, cupy_build, runtime, tma, triton_hook
from .errors import ConsanError

MAX_PREPARED = 16  # launch shapes kept ready (each holds shadow tables and a pinned log)
MAX_KEPT_TEXT = 20  # rendered findings kept for the pytest failure message
_WORK_EVENTS = {Event.READ.value, Event.WRITE.value, Event.ATOMIC.value,
                Event.BAR_SYNC.value, Event.BAR_ARRIVE.value, Event.BAR_RED.value,
                Event.TENSOR_LOAD.value, Event.TENSOR_STORE.value}  # TMA: smem writes / reads
_RDC = ("-rdc=true", "--relocatable-device-code=true", "-dc", "--device-c")
NOT_INTERCEPTED = ("not launched through CuPy or Triton while consan was active: a "
                   "precompiled library kernel (cuBLAS, cuDNN, CUB/Thrust, cuFFT, a PyTorch "
                   "operator, ...), or one CuPy compiled before consan started")

_tls = threading.local()
_lock = threading.RLock()
_originals: dict[str, tuple[Any, str, Any]] = {}  # key -> (owner, attribute, original)
_active: Session | None = None
_by_ptr: weakref.WeakValueDictionary[int, ConsanFunction] = weakref.WeakValueDictionary()


class ConsanAbort(BaseException):
    """--on-violation=abort: stop the program at the first launch with a finding.

    A BaseException, so that the program's own `except Exception` does not swallow it.
    """


class NotCheckable(Exception):
    """This kernel cannot be checked; the message says why (it then runs natively)."""


@contextlib.contextmanager
def _busy() -> Iterator[None]:
    """consan's own CuPy work (table resets, read-back) runs natively, never re-checked."""
    _tls.busy = getattr(_tls, "busy", 0) + 1
    try:
        with cupti.own_launch():
            yield
    finally:
        _tls.busy -= 1


def _is_busy() -> bool:
    return bool(getattr(_tls, "busy", 0))


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
            self._built: tuple[runtime.Build, list[str], bool] | None = None
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

        def build(self, roots: tuple[str, ...]) -> tuple[runtime.Build, list[str], bool]:
            """The instrumented module, built once; NotCheckable says why it cannot be."""
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
                self._built = (b, names, work_in(b))
            return self._built

        def native_global(self, name: str) -> tuple[int, int] | None:
            if name not in self._globals:
                self._globals[name] = _module_global(self.ptr, name)
            return self._globals[name]

    class _ConsanFunction(Function):
        """A CuPy function: checked when a session is active, native otherwise."""

        def __init__(self, module, native, name: str) -> None:
            self.module = module
            self.ptr = native.ptr
            self._native = native
            self.kernel = name
            _by_ptr[int(native.ptr)] = self

        @property
        def display_name(self) -> str:
            return self.module.display_name(self.kernel)

        def __call__(self, grid, block, args, shared_mem=0, stream=None,
                     enable_cooperative_groups=False):
            native = functools.partial(self._native, grid, block, args, shared_mem, stream,
                                       enable_cooperative_groups)
            s = _active
            if s is None or _is_busy() or not isinstance(grid, tuple) or \
                    not isinstance(block, tuple):
                return _run_native(native)
            s.launch(self, _dim3(grid), _dim3(block), args, int(shared_mem), stream,
                     bool(enable_cooperative_groups), native)

        def linear_launch(self, size, args, shared_mem=0, block_max_size=128, stream=None,
                          enable_cooperative_groups=False):
            native = functools.partial(self._native.linear_launch, size, args, shared_mem,
                                       block_max_size, stream, enable_cooperative_groups)
            s = _active
            if s is None or _is_busy() or size <= 0:
                return _run_native(native)
            gridx = min(0x7FFFFFFF, (size + block_max_size - 1) // block_max_size)
            blockx = min(block_max_size, size)
            s.launch(self, (gridx, 1, 1), (blockx, 1, 1), args, int(shared_mem), stream,
                     bool(enable_cooperative_groups), native)

    ConsanModule, ConsanFunction = _ConsanModule, _ConsanFunction
    return ConsanModule, ConsanFunction


ConsanModule: Any = None
ConsanFunction: Any = None


def work_in(b: runtime.Build) -> bool:
    """Whether a launch of the module can race at all: it accesses shared memory or
    synchronises (else it runs natively, counted as checked)."""
    ins = b.instrumented
    return bool(ins.unmodeled) or any(s.event in _WORK_EVENTS for s in ins.sites.sites)


def _dim3(t: tuple) -> tuple[int, int, int]:
    t = (tuple(t) + (1, 1))[:3]
    return tuple(max(1, int(x)) for x in t)  # type: ignore[return-value]


def _run_native(native: Callable[[], Any]) -> Any:
    with cupti.own_launch():
        return native()


def _module_global(module_ptr: int, name: str) -> tuple[int, int] | None:
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
    s = _active
    try:
        fn = _by_ptr.get(int(f)) if s is not None and not _is_busy() else None
    except Exception:  # noqa: BLE001 - not a handle we know
        fn = None
    if fn is None:
        return original(config, f, kernelParams, extra)
    return s.launch_ex(fn, config, f, kernelParams, extra)


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
        triton_hook.install()  # (patches Triton when the program imports it)
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
    global _active
    with _lock:
        for owner, attr, original in _originals.values():
            setattr(owner, attr, original)
        _originals.clear()
        triton_hook.uninstall()
        _active = None


def installed() -> bool:
    return bool(_originals)


def current_session() -> Session | None:
    return _active


@contextlib.contextmanager
def sanitizing(session: Session) -> Iterator[Session]:
    """Install the hook if needed and make `session` the active one for the block."""
    global _active
    install()
    with _lock:
        previous, _active = _active, session
    session.start()
    try:
        yield session
    finally:
        session.stop()
        with _lock:
            _active = previous


# ====================================================================== expectations

@dataclass
class Expectation:
    """`consan.expect(kind, where=...)`: a finding that must (still) be found."""

    kind: str
    where: suppress.Location | None = None
    hits: int = 0

    def __str__(self) -> str:
        return repr(self.kind) + (f", where={str(self.where)!r}" if self.where else "")

    def matches(self, finding: dict[str, Any]) -> bool:
        import fnmatch

        if not fnmatch.fnmatchcase(finding.get("kind", ""), self.kind):
            return False
        if self.where is None:
            return True
        current = (finding.get("sites") or {}).get("current")
        if self.where.matches(*suppress.site_file_line(current)):
            return True
        launched = finding.get("launched_from") or {}
        return self.where.matches(launched.get("file"), launched.get("line"))


# ====================================================================== the session

@dataclass
class Options:
    """compute-sanitizer-like selection and reporting options."""

    kernel_name: str | None = None  # regex: check only matching kernels
    kernel_name_exclude: str | None = None
    launch_skip: int = 0
    launch_count: int | None = None
    print_limit: int = 100  # findings printed live (0: none)
    on_violation: str = "continue"  # or "abort"
    suppressions: suppress.Suppressions | None = None
    count_other_launches: bool = True  # CUPTI


class Session:
    """Checks launches, keeps one entry per unique finding, and the verdict."""

    def __init__(self, options: Options | None = None, console: Console | None = None,
                 roots: tuple[str, ...] = (), progress: Callable[[Session], None] | None = None,
                 print_findings: bool = True) -> None:
        self.options = options or Options()
        self.console = console if console is not None else Console(stderr=True,
                                                                     highlight=False)
        self.roots = tuple(roots)
        self.progress = progress
        self.print_findings = print_findings
        self.report = SessionReport()
        self.report.version = runtime.__version__
        if self.options.suppressions is not None:
            self.report.suppressions = {"file": self.options.suppressions.source,
                                        "unused": []}
        self.expectations: list[Expectation] = []
        self.kept_text: list[str] = []  # plain renderings of active findings (pytest)
        self._entries: dict[tuple, dict[str, Any]] = {}
        self._prepared: OrderedDict[tuple, Any] = OrderedDict()
        self._matched = 0
        self._checked = 0
        self._printed = 0
        self._counter: cupti.LaunchCounter | None = None
        self._include = re.compile(self.options.kernel_name) if self.options.kernel_name \
            else None
        self._exclude = re.compile(self.options.kernel_name_exclude) \
            if self.options.kernel_name_exclude else None
        self.lock = threading.RLock()

    def expect(self, kind: str, where: str | None = None):
        """`consan.expect` within this session (the pytest fixture yields the session)."""
        from .expectations import expect

        if current_session() is not self:
            raise ConsanError("this consan session is not active")
        return expect(kind, where)

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self.options.count_other_launches and self._counter is None and \
                runtime.gpu_available():
            counter = cupti.LaunchCounter(self._other_launch)
            why = counter.start()
            if why is None:
                self._counter = counter
            else:
                self.report.other_launches = why

    def stop(self) -> None:
        if self._counter is not None:
            self._counter.stop()
            self._counter = None
        if self.options.suppressions is not None:
            self.report.suppressions["unused"] = [
                f"{r.origin}: {r}" for r in self.options.suppressions.unused()]
        self._prepared.clear()

    def _other_launch(self, name: str) -> None:
        self.report.add_not_checked(cupti.pretty(name), NOT_INTERCEPTED)

    # ------------------------------------------------------------ selection
    def _selected(self, fn) -> str | None:
        """None if this launch is to be checked, else the option that skips it."""
        names = (fn.display_name, fn.kernel)
        if self._include is not None and not any(self._include.search(n) for n in names):
            return "--kernel-name"
        if self._exclude is not None and any(self._exclude.search(n) for n in names):
            return "--kernel-name-exclude"
        self._matched += 1
        if self._matched <= self.options.launch_skip:
            return "--launch-skip"
        if self.options.launch_count is not None and self._checked >= self.options.launch_count:
            return "--launch-count"
        return None

    # ------------------------------------------------------------ launching
    def launch(self, fn, grid: tuple[int, int, int], block: tuple[int, int, int], args,
               shared_mem: int, stream, cooperative: bool, native: Callable[[], Any],
               launcher: Callable[[Any], None] | None = None,
               extra_launch: dict[str, Any] | None = None) -> Any:
        """Check one launch of a ConsanFunction, or run it natively and say why not."""
        with self.lock:
            skipped = self._selected(fn)
            if skipped:
                self.report.skipped[skipped] = self.report.skipped.get(skipped, 0) + 1
                return _run_native(native)
            name = fn.display_name
            try:
                if cooperative:
                    raise NotCheckable("cooperative launch (grid-wide sync) is not supported "
                                       "by consan yet")
                if _capturing(stream):
                    raise NotCheckable("launched while a CUDA graph was being captured")
                b, globals_, work = fn.module.build(self.roots)
                if not work:
                    # No shared-memory access or barrier in the module: nothing can race.
                    self._checked += 1
                    self.report.kernel(name).launches_checked += 1
                    return _run_native(native)
                p = self._prepare(fn, b, grid, block, shared_mem)
            except NotCheckable as exc:
                self.report.add_not_checked(name, str(exc))
                return _run_native(native)
            except ConsanError as exc:
                self.report.add_not_checked(name, f"consan could not prepare it: {exc}")
                return _run_native(native)
            except Exception as exc:  # noqa: BLE001 - a consan bug must not break the program
                self.report.add_not_checked(name, f"consan failed to prepare it "
                                                  f"({type(exc).__name__}: {exc})")
                return _run_native(native)
            frames = cupy_build.user_frames()
            launched_from = {"file": frames[0][0], "line": frames[0][1]} if frames else None
            with _busy(), _stream_context(stream):
                mirrored = self._mirror_in(fn, p, globals_)
                if launcher is None:
                    p.launch(tuple(args))
                else:
                    launcher(p)
                self._mirror_out(mirrored)
                rep = p.report()
            self._checked += 1
            self._record(fn, p, rep, launched_from, extra_launch)
            return None

    def launch_ex(self, fn, config, f, params, extra) -> Any:
        """A cuda-bindings `cuLaunchKernelEx` (e.g. with cluster dimensions) on a CuPy function."""
        from cuda.bindings import driver

        original = _originals["launch_ex"][2]
        result: list[Any] = []

        def native() -> None:
            result.append(original(config, f, params, extra))

        grid = _dim3((config.gridDimX, config.gridDimY, config.gridDimZ))
        block = _dim3((config.blockDimX, config.blockDimY, config.blockDimZ))
        stream = _ExStream(int(config.hStream)) if config.hStream is not None else None
        cluster = None
        cluster_id = int(driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        for attr in list(config.attrs or [])[: int(config.numAttrs or 0)]:
            if int(attr.id) == cluster_id:
                c = attr.value.clusterDim
                cluster = [int(c.x), int(c.y), int(c.z)]

        def launch_instrumented(handle: int, shared_mem: int) -> None:
            user_smem = config.sharedMemBytes
            config.sharedMemBytes = shared_mem  # with consan's tables
            try:
                (err,) = original(config, driver.CUfunction(handle), params, extra)
            finally:
                config.sharedMemBytes = user_smem
            if int(err) != 0:
                raise ConsanError(f"cuLaunchKernelEx of the instrumented kernel failed ({err!r})")

        def launcher(p) -> None:
            _copy_function_attributes(int(f), int(p.function.ptr))
            p.launch((), launcher=launch_instrumented)

        self.launch(fn, grid, block, (), int(config.sharedMemBytes), stream, False, native,
                    launcher=launcher, extra_launch={"cluster": cluster} if cluster else None)
        return result[0] if result else (driver.CUresult.CUDA_SUCCESS,)

    def _prepare(self, fn, b: runtime.Build, grid, block, shared_mem: int):
        key = (id(b), fn.kernel, grid, block, shared_mem)  # p.build keeps b (and its id) alive
        p = self._prepared.get(key)
        if p is None:
            with _busy():
                p = runtime.Prepared(b, fn.kernel, grid, block, shared_mem)
            self._prepared[key] = p
            while len(self._prepared) > MAX_PREPARED:
                self._prepared.popitem(last=False)
        else:
            self._prepared.move_to_end(key)
        return p

    def _mirror_in(self, fn, p, names: list[str]) -> list[tuple[int, int, int]]:
        """Copy the user's __device__/__constant__ variables into the instrumented module."""
        if not names:
            return []
        import cupy

        pairs = []
        stream = cupy.cuda.get_current_stream().ptr
        for name in names:
            src = fn.module.native_global(name)
            dst = _module_global(int(p.module.ptr), name)
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

    # ------------------------------------------------------------ results
    def _record(self, fn, p, rep, launched_from, extra_launch) -> None:
        name = fn.display_name
        stats = self.report.kernel(name)
        stats.launches_checked += 1
        stats.shadow_bytes = max(stats.shadow_bytes, int(getattr(p, "shadow_bytes", 0)))
        launch = {"grid": list(p.grid), "block": list(p.block), "shared_mem": p.shared_mem,
                  **(extra_launch or {})}
        new_active = []
        for f in rep.findings:
            site, prev = f.site, f.prev_site
            key = (fn.kernel, f.kind, site.where() if site else None,
                   site.ptx_line if site else None, prev.where() if prev else None,
                   prev.ptx_line if prev else None)
            entry = self._entries.get(key)
            if entry is not None:
                entry["occurrences"] += f.occurrences
                entry["launches"] += 1
                stats.occurrences += f.occurrences
                continue
            d = finding_dict(f)
            d.update(kernel=name, kernel_mangled=fn.kernel, launches=1,
                     first_launch=stats.launches_checked, launch=launch,
                     launched_from=launched_from)
            rule = self.options.suppressions.match(d) if self.options.suppressions else None
            exp = next((e for e in self.expectations if e.matches(d)), None)
            if rule is not None:
                d["suppressed_by"] = f"{rule.origin} ({rule})"
                stats.suppressed += 1
            elif exp is not None:
                d["expected"] = str(exp)
                exp.hits += 1
            else:
                stats.findings[f.kind] = stats.findings.get(f.kind, 0) + 1
                new_active.append(f)
            stats.occurrences += f.occurrences
            self._entries[key] = d
            self.report.findings.append(d)
        self.report.unattributed += rep.unattributed
        for note in rep.notes:
            stats.notes[note.kind] = stats.notes.get(note.kind, 0) + note.occurrences
        for u in rep.unmodeled:
            if str(u) not in stats.unmodeled:
                stats.unmodeled.append(str(u))
        fault = None
        if rep.faulted:
            # The kernel faulted: the session is not ok, and what the log held before the
            # fault (mapped host memory) is kept. The program is left to meet CUDA's error
            # at its own next call, with its own traceback.
            fault = self.report.add_fault(
                name, rep.error, kernel_mangled=fn.kernel, launch_no=stats.launches_checked,
                launch=launch, launched_from=launched_from, findings_before=len(rep.findings))
            if rep.error not in stats.errors:
                stats.errors.append(rep.error)
        if fault is not None or new_active or rep.unattributed:
            self._show(new_active, rep, name, launch, stats.launches_checked, launched_from,
                       fault)
        if self.progress is not None:
            self.progress(self)
        if self.options.on_violation == "abort" and (new_active or rep.unattributed):
            self.report.aborted = True
            raise ConsanAbort(f"consan: kernel {name} has a finding (--on-violation=abort)")

    def _show(self, findings, rep, name, launch, launch_no, launched_from,
              fault: dict[str, Any] | None = None) -> None:
        header = finding_header(name, launch, launch_no, launched_from)
        sources = rep.sites.sources if rep.sites is not None else {}
        ptx_name = rep.sites.ptx_name if rep.sites is not None else "<ptx>"

        def render(console: Console, shown: list) -> None:
            if fault is not None:
                render_live_fault(console, shown, len(rep.findings), sources, ptx_name, header,
                                  fault["fault"])
            elif shown:
                render_live_findings(console, shown, sources, ptx_name, header)
            else:
                rep.render(console)

        if len(self.kept_text) < MAX_KEPT_TEXT or fault is not None:
            import io

            from reports.render import plain_console

            buf = io.StringIO()
            render(plain_console(buf), findings)
            self.kept_text.append(buf.getvalue())
        if not self.print_findings:
            return
        left = self.options.print_limit - self._printed
        if left <= 0 and fault is None:  # a fault is always told
            return
        shown = findings[:max(0, left)]
        self._printed += max(1, len(shown))
        render(self.console, shown)
        if self._printed >= self.options.print_limit and fault is None:
            self.console.print(f"consan: --print-limit {self.options.print_limit} reached; "
                               "further findings are counted in the summary only",
                               highlight=False, markup=False)


class _ExStream:
    """A raw stream handle from cuda-bindings, usable where CuPy wants a stream."""

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


def _stream_context(stream):
    """Make the launch's stream current, so that consan's resets and reads are ordered with it."""
    if stream is None:
        return contextlib.nullcontext()
    import cupy

    if isinstance(stream, _ExStream):
        return cupy.cuda.ExternalStream(stream.ptr) if stream.ptr else cupy.cuda.Stream.null
    if hasattr(stream, "__enter__"):
        return stream
    return cupy.cuda.ExternalStream(int(stream.ptr))


def _capturing(stream) -> bool:
    try:
        import cupy

        s = cupy.cuda.get_current_stream() if stream is None or isinstance(stream, _ExStream) \
            else stream
        return bool(s.is_capturing())
    except Exception:  # noqa: BLE001 - older CuPy or a raw handle: assume not
        return False


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
