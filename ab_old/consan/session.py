"""One sanitizing session, whatever front end hands it the launches.

A front end (the CuPy interception in cupy_hook.py, the Triton one in
triton_hook.py) turns a launch into a call of `Session.launch` with the
function's instrumented build and a `runtime.Launcher` that runs the
instrumented function its own way. The session decides whether the launch is
checked (kernel name and launch-count options, cooperative launches, graph
capture), keeps the prepared launch shapes, folds each launch's findings into
one entry per unique finding, applies suppressions and expectations, prints
new findings as they come, and keeps the aggregate report (reports.session).

consan's own CUDA work (table resets, read-back) runs while `busy()`: the
front ends then launch natively, never re-checked.
"""

from __future__ import annotations

import collections
import contextlib
import fnmatch
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from rich.console import Console

from instrument import abi
from instrument.events import Event
from reports import suppress
from reports.facts import FindingFacts
from reports.session import (
    SessionFinding,
    SessionReport,
    finding_header,
    render_live_fault,
    render_live_findings,
)

from . import cupti, cupy_build, runtime, toolchain
from .errors import ConsanError

MAX_PREPARED = 16  # launch shapes kept ready (each holds shadow tables and a pinned log)
MAX_KEPT_TEXT = 20  # rendered findings kept for the pytest failure message
# sets of integer arguments one kernel is proven for (Triton's 2048-cube matmul's proof took
# 0.85 s of host time on the 2-core CPU machine)
PROOFS_PER_KERNEL = 8
# proven launches kept in flight before the oldest is waited for (each keeps an event)
MAX_IN_FLIGHT = 64
# Events that alone can give no finding: group bookkeeping and exits. A module with
# anything else (an access, a barrier, an mbarrier operation, a copy, a wgmma) is checked:
# an mbarrier arrive alone can be mbarrier.uninit.
_BOOKKEEPING = {e.value for e in (Event.EXIT, Event.ASYNC_COMMIT, Event.ASYNC_WAIT,
                                  Event.ASYNC_WAIT_ALL, Event.BULK_COMMIT, Event.BULK_WAIT,
                                  Event.WGMMA_COMMIT, Event.WGMMA_WAIT, Event.PROXY_FENCE,
                                  Event.CLUSTER_FENCE)}
NOT_INTERCEPTED = ("not launched through CuPy or Triton while consan was active: a "
                   "precompiled library kernel (cuBLAS, cuDNN, CUB/Thrust, cuFFT, a PyTorch "
                   "operator, ...), or one CuPy compiled before consan started")


_tls = threading.local()
_lock = threading.RLock()
_active: Session | None = None


Scalars = dict[int, tuple[int, int]]  # a launch's integer arguments: position -> (value, bits)
Maps = tuple[int | None, ...]  # bytes one copy through each tensor-map argument moves
LaunchValues = Callable[[], tuple[Scalars, Maps]]  # called only where a proof needs them


class ConsanAbort(BaseException):
    """--on-violation=abort: stop the program at the first launch with a finding.

    A BaseException, so that the program's own `except Exception` does not swallow it.
    """


class NotCheckable(Exception):
    """This kernel cannot be checked; the message says why (it then runs natively)."""


@contextlib.contextmanager
def busy() -> Iterator[None]:
    """consan's own CuPy work (table resets, read-back) runs natively, never re-checked."""
    _tls.busy = getattr(_tls, "busy", 0) + 1
    try:
        with cupti.own_launch():
            yield
    finally:
        _tls.busy -= 1


def is_busy() -> bool:
    return bool(getattr(_tls, "busy", 0))


def proofs_on() -> bool:
    """Kernels proven race-free before launch run natively (instrument/static_proof.py);
    CONSAN_PROOF=0 checks them instrumented like any other."""
    return os.environ.get("CONSAN_PROOF", "1") != "0"


def work_in(b: runtime.Build) -> tuple[bool, bool]:
    """Whether a launch of the module can give a finding at all, (where proofs count, where
    they do not): it has a probed event besides group bookkeeping and exits, and no proof
    covers its kernels (else it runs natively, counted as checked). The front ends keep
    both and pick one by proofs_on() at each launch."""
    ins = b.instrumented
    any_work = bool(ins.unmodeled) or any(s.event not in _BOOKKEEPING for s in ins.sites.sites)
    return any_work and not ins.proven, any_work


def dim3(t: tuple) -> tuple[int, int, int]:
    if type(t) is tuple and len(t) == 3:  # (every launch asks: the common form at once)
        x, y, z = t
        if type(x) is int and type(y) is int and type(z) is int and x > 0 and y > 0 and z > 0:
            return t
    t = (tuple(t) + (1, 1))[:3]
    return tuple(max(1, int(x)) for x in t)  # type: ignore[return-value]


def run_native(native: Callable[[], Any]) -> Any:
    return cupti.call_own(native)


def current_session() -> Session | None:
    return _active


@contextlib.contextmanager
def active(session: Session) -> Iterator[Session]:
    """Make `session` the active one for the block (frontends.sanitizing installs the
    front ends first)."""
    global _active
    with _lock:
        previous, _active = _active, session
    session.start()
    try:
        yield session
    finally:
        session.stop()
        with _lock:
            _active = previous


def deactivate() -> None:
    """No session is active any more (the front ends are being taken out)."""
    global _active
    with _lock:
        _active = None


# ====================================================================== expectations

@dataclass
class Expectation:
    """`consan.expect(kind, where=...)`: a finding that must (still) be found."""

    kind: str
    where: suppress.Location | None = None
    hits: int = 0

    @classmethod
    def of(cls, kind: str, where: str | None = None) -> Expectation:
        """An expectation of `kind` (an id or glob) at `where` (FILE[:LINE[-LINE]]); a kind
        that matches no finding kind is a ValueError."""
        if not any(fnmatch.fnmatchcase(k.id, kind) for k in abi.KINDS if k.is_violation):
            raise ValueError(f"consan.expect: {kind!r} matches no finding kind; kinds are: "
                             + ", ".join(abi.VIOLATION_KINDS))
        return cls(kind, suppress.parse_location(where) if where else None)

    def __str__(self) -> str:
        return repr(self.kind) + (f", where={str(self.where)!r}" if self.where else "")

    def matches(self, finding: SessionFinding) -> bool:
        if not fnmatch.fnmatchcase(finding.kind, self.kind):
            return False
        if self.where is None:
            return True
        if self.where.matches(*finding.file_line):
            return True
        launched = finding.launched_from or {}
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
        self._entries: dict[tuple, int] = {}  # unique finding -> its index in report.findings
        self._prepared: OrderedDict[tuple, Any] = OrderedDict()
        # (build id, kernel, block[, integer arguments]) -> (build, proof or why not)
        self._proofs: dict[tuple, tuple] = {}
        self._param_proofs: dict[tuple, int] = {}  # (build id, kernel, block) -> tries
        # proven launches not yet seen finished: (event after it, fn, launch, user frame)
        self._in_flight: collections.deque = collections.deque()
        self._gpu_fault = False  # a proven launch's fault was told
        self._events: list = []  # events of proven launches seen finished, to record again
        self._streams: dict[int, Any] = {}  # CuPy's wrapper of each raw stream handle seen
        self._matched = 0
        self._checked = 0
        self._printed = 0
        self._counter: cupti.LaunchCounter | None = None
        self._include = re.compile(self.options.kernel_name) if self.options.kernel_name \
            else None
        self._exclude = re.compile(self.options.kernel_name_exclude) \
            if self.options.kernel_name_exclude else None
        self.lock = threading.RLock()

    def expect(self, kind: str, where: str | None = None
               ) -> contextlib.AbstractContextManager[Expectation]:
        """`consan.expect` within this session (the pytest fixture yields the session)."""
        if current_session() is not self:
            raise ConsanError("this consan session is not active")
        return self.expecting(Expectation.of(kind, where))

    @contextlib.contextmanager
    def expecting(self, exp: Expectation) -> Iterator[Expectation]:
        """Findings that `exp` matches are expected in the block, and one must be found."""
        __tracebackhide__ = True  # pytest: the failure is the user's block, not this frame
        before = self._counts()
        self.expectations.append(exp)
        try:
            yield exp
        finally:
            self.expectations.remove(exp)
        if exp.hits == 0:
            raise AssertionError(self._missing(exp, before))

    def _counts(self) -> tuple[int, int, int]:
        rep = self.report
        return (rep.launches_checked, len(rep.findings),
                sum(r["launches"] for r in rep.not_checked))

    def _missing(self, exp: Expectation, before: tuple[int, int, int]) -> str:
        checked, nfind, unchecked = (a - b for a, b in zip(self._counts(), before, strict=True))
        lines = [f"consan.expect({exp}): no such finding in this block "
                 f"({checked} launch{'' if checked == 1 else 'es'} checked)."]
        for f in self.report.findings[len(self.report.findings) - nfind:]:
            lines.append(f"  found instead: {f.kind} in {f.kernel} at "
                         f"{f.current.where if f.current else 'unknown site'}")
        if unchecked:
            lines.append(f"  {unchecked} launch(es) in the block were not checked:")
            for r in self.report.not_checked:
                lines.append(f"    {r['kernel']}: {r['reason']}")
        return "\n".join(lines)

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

    def settle(self) -> None:
        """Wait for the proven launches still in flight, so that a fault of theirs is in
        the report (the pytest plugin, at the end of a test's call)."""
        with self.lock:
            self._settle(wait=True)

    def stop(self) -> None:
        self.settle()
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
        if self._include is not None or self._exclude is not None:
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
    def launch(self, fn, grid: tuple[int, int, int], block: tuple[int, int, int],
               launcher: runtime.Launcher, shared_mem: int, stream, cooperative: bool,
               native: Callable[[], Any], extra_launch: dict[str, Any] | None = None,
               values: LaunchValues | None = None) -> Any:
        """Check one launch of a front end's function, or run it natively and say why not.

        `fn` names the kernel (`kernel`, `display_name`) and builds it (`module.build(roots)`
        -> (runtime.Build, whether it can race at all)); `launcher` runs the instrumented
        function the front end's way; `native()` runs the user's own launch; `values()`
        gives the launch's integer arguments by kernel parameter position, where the front
        end knows them, as (value, bits passed) (a proof may need them: the length of a
        loop over K), and the shared-memory bytes one copy through each tensor-map argument
        moves, in order (None where not known), for a proof of its TMA copies; it is called
        only where a proof needs them."""
        with self.lock:
            skipped = self._selected(fn)
            if skipped:
                self.report.skipped[skipped] = self.report.skipped.get(skipped, 0) + 1
                return run_native(native)
            name = fn.display_name
            # (a proof made at build time is for the kernel's own cluster shape, if any: a
            # launch that asks for clusters is proven for its shape, all its CTAs together)
            cluster = (extra_launch or {}).get("cluster") or [1]
            clustered = any(int(c) > 1 for c in cluster)
            try:
                b, work = fn.module.build(self.roots)
                if clustered and not work and work_in(b)[1]:
                    work = True  # (proven, not run natively here: checked instrumented)
                if not work:
                    # No shared-memory access or barrier in the module, or a proof that
                    # they cannot race: nothing to find (first: a small kernel's launch
                    # pays no more than this look).
                    proof = self._count_native(fn, b)
                    if proof is None:
                        return run_native(native)
                    return self._run_proven(fn, lambda: run_native(native), stream,
                                            {"grid": grid, "block": block})
                proof = self._launch_proof(
                    fn, b, block, values,
                    tuple(int(c) for c in cluster) if clustered else None, grid) \
                    if proofs_on() else None
                if proof is not None:  # (proven for this launch's block)
                    self._count_native(fn, b, proof)
                    return self._run_proven(fn, lambda: run_native(native), stream,
                                            {"grid": grid, "block": block})
                if cooperative:
                    raise NotCheckable("cooperative launch (grid-wide sync) is not supported "
                                       "by consan yet")
                if capturing(stream):
                    raise NotCheckable("launched while a CUDA graph was being captured")
                self._settle(wait=True)  # (a fault of a proven launch is not this one's)
                p = self._prepare(fn, b, grid, block, shared_mem)
            except NotCheckable as exc:
                self.report.add_not_checked(name, str(exc))
                return run_native(native)
            except ConsanError as exc:
                self.report.add_not_checked(name, f"consan could not prepare it: {exc}")
                return run_native(native)
            except toolchain.CompileError as exc:  # (linked when first launched instrumented)
                self.report.add_not_checked(name, "consan could not link its instrumented "
                                                  f"code ({str(exc).splitlines()[0]})")
                return run_native(native)
            except Exception as exc:  # noqa: BLE001 - a consan bug must not break the program
                self.report.add_not_checked(name, f"consan failed to prepare it "
                                                  f"({type(exc).__name__}: {exc})")
                return run_native(native)
            with busy(), stream_context(stream):
                p.launch(launcher)
                # (the user's frame is looked up while the kernel runs: on the H100 it was
                # 70 us of host time under cProfile, ahead of a Triton softmax of 72 us)
                frames = cupy_build.user_frames(limit=1)
                rep = p.report()
            launched_from = {"file": frames[0][0], "line": frames[0][1]} if frames else None
            self._checked += 1
            self._record(fn, p, rep, launched_from, extra_launch)
            return None

    def launch_native(self, fn, native: Callable[..., Any], args: tuple, stream=None,
                      build: runtime.Build | None = None) -> Any:
        """A launch of a kernel whose build (`build`, else the module's) has nothing to
        check (`launch` found so before): selected and counted as `launch` does, then
        `native(*args)` (on `stream`)."""
        with self.lock:
            skipped = self._selected(fn)
            proof = None
            if skipped:
                self.report.skipped[skipped] = self.report.skipped.get(skipped, 0) + 1
            else:
                proof = self._count_native(
                    fn, build if build is not None else fn.module.build(self.roots)[0])
            if proof is not None:
                return self._run_proven(fn, lambda: cupti.call_own(native, *args), stream, {})
        return cupti.call_own(native, *args)

    def _run_proven(self, fn, run: Callable[[], Any], stream, launch: dict[str, Any]) -> Any:
        """A launch proven race-free, run natively and not waited for: an event recorded
        after it is looked at by the session's next launch (waited for before a checked
        one, and at the end), so that a fault is still told, naming the kernel
        (docs/model.md, "Kernels proven before launch"). Waiting at each launch cost the
        Triton softmax 0.009 -> 0.033 ms a call on the H100 (bench_triton, device alone)."""
        import cupy

        # (busy(), inline, and the event recorded on the launch's stream rather than under
        # stream_context: a proven launch's whole cost is this host path)
        _tls.busy = getattr(_tls, "busy", 0) + 1
        try:
            self._settle(wait=False)
            out = run()  # (the callers' closures run it as the program's own launch)
            if capturing(stream) or self._gpu_fault:  # (a CUDA graph being captured: nothing
                return out  # ran yet; after a fault the context is lost: told once)
            try:
                ev = self._events.pop() if self._events else \
                    cupy.cuda.Event(block=False, disable_timing=True)
                ev.record(self._stream_of(stream))
            except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as exc:
                self._native_fault(fn, f"{type(exc).__name__}: {exc}", launch)
                return out
            frames = cupy_build.user_frames(limit=1)
            self._in_flight.append((ev, fn, dict(launch, launch_no=self.report.kernel(
                fn.display_name).launches_checked), frames[0] if frames else None))
            if len(self._in_flight) > MAX_IN_FLIGHT:
                self._settle(wait=True, keep=MAX_IN_FLIGHT // 2)
        finally:
            _tls.busy -= 1
        return out

    def _stream_of(self, stream):
        """The CuPy stream a launch on `stream` runs on (None: CuPy's current one), one
        wrapper per raw handle."""
        if stream is None or (not isinstance(stream, ExStream) and hasattr(stream, "record")):
            return stream
        ptr = int(stream.ptr)
        got = self._streams.get(ptr)
        if got is None:
            import cupy

            got = self._streams[ptr] = cupy.cuda.ExternalStream(ptr) if ptr else \
                cupy.cuda.Stream.null
        return got

    def _settle(self, wait: bool, keep: int = 0) -> None:
        """Drop the proven launches in flight that finished (with `wait`, wait for all but
        `keep` of them first); a fault the GPU reports meanwhile is told naming the oldest
        one not seen finished: it, or a kernel launched after it, faulted."""
        import cupy

        while len(self._in_flight) > (keep if wait else 0):
            ev, fn, launch, frame = self._in_flight[0]
            try:
                if wait:
                    ev.synchronize()
                elif not ev.done:
                    return
            except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as exc:
                later = len(self._in_flight) - 1
                self._in_flight.clear()
                self._gpu_fault = True
                after = (f" (found after the launch; {later} later launch"
                         f"{'' if later == 1 else 'es'} of proven kernels, or a kernel "
                         "launched after it, may be the one)" if later else
                         " (found after the launch: it, or a kernel launched after it, "
                         "faulted)")
                self._native_fault(fn, f"{type(exc).__name__}: {exc}{after}", launch, frame)
                return
            self._events.append(self._in_flight.popleft()[0])  # (recorded again later)

    def _native_fault(self, fn, error: str, launch: dict[str, Any],
                      frame: tuple[str, int] | None | bool = True) -> None:
        """A fault of a launch run natively; `frame`: the user's (file, line) of the launch,
        True where it is the current one (found at the launch itself)."""
        name = fn.display_name
        stats = self.report.kernel(name)
        if frame is True:
            frames = cupy_build.user_frames(limit=1)
            frame = frames[0] if frames else None
        launched_from = {"file": frame[0], "line": frame[1]} if frame else None
        launch = dict(launch)
        launch_no = launch.pop("launch_no", stats.launches_checked)
        fault = self.report.add_fault(name, error, kernel_mangled=fn.kernel,
                                      launch_no=launch_no, launch=launch,
                                      launched_from=launched_from)
        if error not in stats.errors:
            stats.errors.append(error)
        header = finding_header(name, launch, launch_no, launched_from)
        import io

        from reports.render import plain_console

        buf = io.StringIO()
        render_live_fault(plain_console(buf), [], 0, {}, "<ptx>", header, fault["fault"])
        self.kept_text.append(buf.getvalue())
        if self.print_findings:
            render_live_fault(self.console, [], 0, {}, "<ptx>", header, fault["fault"])

    def _launch_proof(self, fn, b: runtime.Build, block: tuple[int, int, int],
                      values: LaunchValues | None = None,
                      cluster: tuple[int, ...] | None = None,
                      grid: tuple[int, ...] | None = None):
        """The kernel's proof for this block (instrument/static_proof.py), made once per
        build, kernel and block, or, where a value not known before launch stood in its
        way, once per such set of integer arguments and grid too (up to PROOFS_PER_KERNEL
        of them: a program that sweeps shapes pays the proof's host time a bounded number
        of times); None where there is none."""
        prove_at = b.instrumented.prove_at
        if prove_at is None:
            return None
        key = (id(b), fn.kernel, tuple(block), cluster)
        got = self._proofs.get(key)
        if got is None or got[0] is not b:
            got = self._proofs[key] = (b, prove_at(fn.kernel, tuple(block), cluster=cluster))
        proof = got[1]
        if isinstance(proof, str) and getattr(proof, "unknown", False) and \
                (values is not None or grid is not None):
            scalars, maps = values() if values is not None else ({}, ())
            g = grid if type(grid) is tuple and len(grid) == 3 else \
                tuple((tuple(int(x) for x in grid) + (1, 1))[:3]) if grid else None
            if scalars or maps or g:
                tried = self._param_proofs.setdefault(key, 0)
                pkey = (*key, tuple(sorted((scalars or {}).items())), tuple(maps), g)
                hit = self._proofs.get(pkey)
                if (hit is None or hit[0] is not b) and tried < PROOFS_PER_KERNEL:
                    self._param_proofs[key] = tried + 1
                    hit = self._proofs[pkey] = (b, prove_at(fn.kernel, tuple(block), scalars,
                                                            tuple(maps), cluster, g))
                proof = hit[1] if hit is not None and hit[0] is b else proof
        useful = not isinstance(proof, str) and proof is not None and \
            bool(proof.accesses or proof.barriers)
        return proof if useful else None

    def _count_native(self, fn, b: runtime.Build, proof=None) -> None:
        """A launch run natively because it has nothing to find, counted as checked, with
        the proof that says so where there is one."""
        self._checked += 1
        stats = self.report.kernel(fn.display_name)
        stats.launches_checked += 1
        proof = proof or (b.instrumented.proven.get(fn.kernel) if proofs_on() else None)
        if proof is not None and not stats.proven:
            stats.proven = proof.sentence()
        return proof

    def _prepare(self, fn, b: runtime.Build, grid, block, shared_mem: int):
        # (p.build keeps b, and its id, alive; Prepared loads its module and tables on the
        # current device: a Triton build, keyed by its PTX, serves every device)
        key = (id(b), runtime.current_device(), fn.kernel, grid, block, shared_mem)
        p = self._prepared.get(key)
        if p is None:
            with busy():
                p = runtime.Prepared(b, fn.kernel, grid, block, shared_mem)
            self._prepared[key] = p
            while len(self._prepared) > MAX_PREPARED:
                self._prepared.popitem(last=False)
        else:
            self._prepared.move_to_end(key)
        return p

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
            entry = SessionFinding(FindingFacts.of(f), kernel=name, kernel_mangled=fn.kernel,
                                   first_launch=stats.launches_checked, launch=launch,
                                   launched_from=launched_from)
            rule = self.options.suppressions.match(entry) if self.options.suppressions else None
            exp = next((e for e in self.expectations if e.matches(entry)), None)
            if rule is None and exp is not None:
                exp.hits += 1  # (every launch that finds it: each block expecting it sees it)
            # A finding is one entry per disposition: found again outside the block that
            # expected it, it counts against the program (it was merged into the expected
            # entry, and the race passed unseen).
            key = (fn.kernel, f.kind, site.where() if site else None,
                   site.ptx_line if site else None, prev.where() if prev else None,
                   prev.ptx_line if prev else None,
                   "suppressed" if rule else "expected" if exp else "active")
            at = self._entries.get(key)
            stats.occurrences += f.occurrences
            if at is not None:
                self.report.findings[at] = self.report.findings[at].again(f.occurrences)
                continue
            if rule is not None:
                entry = replace(entry, suppressed_by=f"{rule.origin} ({rule})")
                stats.suppressed += 1
            elif exp is not None:
                entry = replace(entry, expected=str(exp))
            else:
                stats.findings[f.kind] = stats.findings.get(f.kind, 0) + 1
                new_active.append(f)
            self._entries[key] = len(self.report.findings)
            self.report.findings.append(entry)
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


class ExStream:
    """A raw stream handle from cuda-bindings, usable where CuPy wants a stream."""

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


def stream_context(stream):
    """Make the launch's stream current, so that consan's resets and reads are ordered with it."""
    if stream is None:
        return contextlib.nullcontext()
    import cupy

    if isinstance(stream, ExStream):
        return cupy.cuda.ExternalStream(stream.ptr) if stream.ptr else cupy.cuda.Stream.null
    if hasattr(stream, "__enter__"):
        return stream
    return cupy.cuda.ExternalStream(int(stream.ptr))


def capturing(stream) -> bool:
    """Whether the launch's own stream is being captured into a CUDA graph (a raw handle,
    Triton's and PyTorch's stream, is asked through the runtime: CuPy's current stream is
    another one)."""
    try:
        import cupy

        if isinstance(stream, ExStream):
            return int(cupy.cuda.runtime.streamIsCapturing(int(stream.ptr))) != 0
        s = cupy.cuda.get_current_stream() if stream is None else stream
        return bool(s.is_capturing())
    except Exception:  # noqa: BLE001 - older CuPy: assume not
        return False

