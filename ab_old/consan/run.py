"""`consan run SCRIPT [ARGS...]` / `consan run -m MODULE [ARGS...]`.

The program runs in this process, with its own `sys.argv` and `__main__`, so
that every kernel it compiles through CuPy can be swapped for its
instrumented twin. consan's own output goes to stderr: the program's stdout is
the same as without consan. Exit status: 0 no findings, 1 findings, 2 consan
could not run (usage, no GPU, tool error) or a checked kernel faulted; with no
findings the program's own non-zero status is passed through.

A kernel that faults poisons the process's CUDA context: consan records the
fault and what its log held before it, then lets the program meet CUDA's error
at its next call, so that the traceback printed is the program's own.
"""

from __future__ import annotations

import argparse
import os
import re
import runpy
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console

from reports.session import fault_sentence

from .cli import output_problem
from .exitcodes import EXIT_CLEAN, EXIT_ERROR, EXIT_VIOLATIONS

_VALUE_OPTIONS = {"--kernel-name", "--kernel-name-exclude", "--launch-skip", "--launch-count",
                  "--print-limit", "--on-violation", "--json", "--sarif", "--suppressions"}


class RunUsageError(Exception):
    """Bad `consan run` command line: exit status 2 with this message."""


@dataclass
class Program:
    """What to run: a script path or a module name, and its arguments."""

    script: str | None = None
    module: str | None = None
    args: list[str] = field(default_factory=list)

    @property
    def argv(self) -> list[str]:
        return ([self.script] if self.script else ["-m", self.module or ""]) + self.args


def option_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="consan run", add_help=True,
        usage="consan run [OPTIONS] SCRIPT [ARGS...]  |  consan run [OPTIONS] -m MODULE "
              "[ARGS...]",
        description="Run a Python program and sanitize every kernel it launches through CuPy.")
    p.add_argument("--kernel-name", metavar="REGEX",
                   help="check only kernels whose name matches (re.search)")
    p.add_argument("--kernel-name-exclude", metavar="REGEX",
                   help="do not check kernels whose name matches")
    p.add_argument("--launch-skip", type=_count, default=0, metavar="N",
                   help="skip the first N launches of the selected kernels")
    p.add_argument("--launch-count", type=_count, default=None, metavar="N",
                   help="check at most N launches, then run the rest natively")
    p.add_argument("--print-limit", type=_count, default=100, metavar="N",
                   help="print at most N findings as they are found (default 100)")
    p.add_argument("--on-violation", choices=("continue", "abort"), default="continue",
                   help="abort: stop the program at the first launch with a finding")
    p.add_argument("--json", metavar="FILE", help="write the session report as JSON")
    p.add_argument("--sarif", metavar="FILE", help="write findings as SARIF 2.1.0")
    p.add_argument("--suppressions", metavar="FILE",
                   help="accepted findings (KIND LOCATION per line); counted, not failed")
    p.add_argument("--quiet", action="store_true",
                   help="print only the one-line verdict (and errors)")
    return p


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") \
            from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {n}")
    return n


def split_argv(argv: list[str]) -> tuple[list[str], Program]:
    """consan's options, then the program: everything after SCRIPT or `-m MODULE` is its own."""
    opts: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "-m":
            if i + 1 >= len(argv):
                raise RunUsageError("-m needs a module name")
            return opts, Program(module=argv[i + 1], args=argv[i + 2:])
        if tok.startswith("-m") and len(tok) > 2 and not tok.startswith("--"):
            return opts, Program(module=tok[2:], args=argv[i + 1:])
        if tok == "--":
            if i + 1 >= len(argv):
                raise RunUsageError("no program given after --")
            return opts, Program(script=argv[i + 1], args=argv[i + 2:])
        if tok.startswith("-") and tok != "-":
            opts.append(tok)
            if tok in _VALUE_OPTIONS:
                if i + 1 >= len(argv):
                    raise RunUsageError(f"{tok} needs a value")
                opts.append(argv[i + 1])
                i += 1
            i += 1
            continue
        return opts, Program(script=tok, args=argv[i + 1:])
    if any(o in ("-h", "--help") for o in opts):
        return opts, Program()
    raise RunUsageError("no program given: consan run [OPTIONS] SCRIPT [ARGS...] or "
                        "consan run [OPTIONS] -m MODULE [ARGS...]")


def parse(argv: list[str]) -> tuple[argparse.Namespace, Program]:
    """Parse `consan run` arguments; RunUsageError (or SystemExit from -h) on bad input."""
    opts, program = split_argv(argv)
    parser = option_parser()
    try:
        a = parser.parse_args(opts)
    except SystemExit as e:
        if e.code:
            raise RunUsageError("bad options (see above)") from None
        raise
    for name in ("kernel_name", "kernel_name_exclude"):
        pattern = getattr(a, name)
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise RunUsageError(f"--{name.replace('_', '-')} {pattern!r} is not a valid "
                                    f"regular expression: {exc}") from None
    if program.script is not None:
        path = Path(program.script)
        if path.is_dir():
            raise RunUsageError(f"{program.script} is a folder: give a Python file (or -m "
                                "MODULE)")
        if not path.exists():
            raise RunUsageError(f"{program.script}: no such file")
        if path.suffix in (".cu", ".cuh", ".ptx", ".cpp", ".cc", ".c", ".h", ".hpp"):
            raise RunUsageError(f"{program.script}: consan run runs a Python program; for a "
                                f"kernel in a {path.suffix} file use `consan check "
                                f"{program.script} --kernel NAME` (or `consan instrument`)")
        try:
            with open(path, "rb") as f:
                magic = f.read(4)
        except OSError as exc:
            raise RunUsageError(f"{program.script}: cannot read it ({exc.strerror or exc})") \
                from None
        if magic == b"\x7fELF":
            raise RunUsageError(f"{program.script} is a compiled executable: consan run runs a "
                                "Python program that launches its kernels through CuPy or "
                                "Triton")
    if program.module is not None:
        problem = module_problem(program.module)
        if problem:
            raise RunUsageError(problem)
    for option, path, others in (
            ("--json", a.json, {"the program": program.script}),
            ("--sarif", a.sarif, {"the program": program.script, "--json's file": a.json})):
        problem = output_problem(path, option, others) if path else None
        if problem:
            raise RunUsageError(problem)
    return a, program


def module_problem(name: str) -> str | None:
    """Why `python -m name` would not find a module to run, or None. Searched as runpy will
    (the working folder first) but without importing anything: a package's __init__ must
    not run before consan is in place."""
    import importlib.util
    from importlib.machinery import PathFinder

    parts = name.split(".")
    if not all(p.isidentifier() for p in parts):
        return f"-m {name}: not a module name"
    saved = sys.path[:]
    sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(parts[0])  # a top-level name: nothing is imported
        found = 1
        while spec is not None and found < len(parts):
            if spec.submodule_search_locations is None:
                return f"-m {name}: {'.'.join(parts[:found])} is a module, not a package"
            spec = PathFinder.find_spec(parts[found], list(spec.submodule_search_locations))
            found += 1
        if spec is None:
            where = ("in the current folder or on sys.path" if found == 1
                     else f"in package {'.'.join(parts[:found - 1])}")
            return f"-m {name}: no module named {'.'.join(parts[:found])!r} {where}"
        if spec.submodule_search_locations is not None and PathFinder.find_spec(
                "__main__", list(spec.submodule_search_locations)) is None:
            return f"-m {name}: {name} is a package without a __main__ module, so it cannot run"
    except (ImportError, ValueError):
        return None  # let runpy say it, as Python would
    finally:
        sys.path[:] = saved
    return None


# ---------------------------------------------------------------------- running

@dataclass
class Outcome:
    status: int | None = 0  # the program's exit status (None: stopped by consan)
    no_gpu: str | None = None  # the program needed a GPU and none is usable: why
    tool_error: str | None = None


def _trim(tb):
    """Drop consan's and runpy's frames from the program's traceback."""
    internal = (os.path.dirname(__file__) + os.sep, runpy.__file__, "<frozen runpy>")
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(internal):
        tb = tb.tb_next
    return tb


def _cuda_failure(exc: BaseException) -> bool:
    from .errors import NoGPUError

    if isinstance(exc, NoGPUError):
        return True
    mod = type(exc).__module__ or ""
    return mod.startswith(("cupy_backends", "cupy.cuda", "cuda.")) or "CUDA" in type(exc).__name__


def _cut_internal(tb):
    """The program's part of a traceback that went on into consan (a launch after a fault
    fails inside consan's launch code): it ends at the program's own call."""
    internal = os.path.dirname(__file__) + os.sep
    head, prev = tb, None
    while tb is not None:
        if prev is not None and tb.tb_frame.f_code.co_filename.startswith(internal):
            prev.tb_next = None
            break
        prev, tb = tb, tb.tb_next
    return head


def _where(tb) -> str:
    """The program's own line that needed the GPU (the innermost frame outside CuPy/consan)."""
    from .cupy_build import _internal_roots

    roots = _internal_roots()
    cython = (".pyx", ".pxd", ".pxi")
    frames = [f for f in traceback.extract_tb(tb)
              if not f.filename.startswith(roots) and not f.filename.endswith(cython)] or \
        traceback.extract_tb(tb)
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"


def execute(program: Program, err: Console, faulted=lambda: False) -> Outcome:
    """Run the program as `python SCRIPT` / `python -m MODULE` would, in this process.
    `faulted()` says whether a checked kernel has faulted: the program's CUDA error is then
    that fault's consequence, not a missing GPU."""
    from .session import ConsanAbort

    saved_argv, saved_path = sys.argv[:], sys.path[:]
    if program.module is not None:
        sys.argv = [program.module, *program.args]
        path0 = os.getcwd()
    else:
        sys.argv = [program.script or "", *program.args]
        path0 = os.path.dirname(os.path.abspath(program.script or "."))
    sys.path.insert(0, path0)  # as Python does; consan's own entries stay behind it
    try:
        if program.module is not None:
            runpy.run_module(program.module, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(program.script or "", run_name="__main__")
        return Outcome(0)
    except SystemExit as e:
        code = e.code
        if code is None:
            return Outcome(0)
        if isinstance(code, int):
            return Outcome(code)
        print(code, file=sys.stderr)
        return Outcome(1)
    except ConsanAbort:
        return Outcome(None)
    except KeyboardInterrupt:
        return Outcome(130)
    except BaseException as e:  # noqa: BLE001 - the program's own error, reported like Python
        from .runtime import gpu_available

        fault = faulted()
        if not fault and _cuda_failure(e) and not gpu_available():
            where = _where(_trim(e.__traceback__))
            return Outcome(1, no_gpu=f"{type(e).__name__}: {e} (at {where})")
        sys.stderr.flush()
        tb = _trim(e.__traceback__)
        if fault and _cuda_failure(e):
            tb = _cut_internal(tb)
        traceback.print_exception(type(e), e, tb)
        return Outcome(1)
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        sys.stdout.flush()


class Progress:
    """A transient status line on a terminal: launches checked and findings so far."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._status: Any = None
        self._last = 0.0

    def __call__(self, session) -> None:
        now = time.monotonic()
        if now - self._last < 0.1:
            return
        self._last = now
        rep = session.report
        n = len(rep.active_findings)
        text = (f"consan: {rep.launches_checked} launches checked, "
                f"{n} finding{'' if n == 1 else 's'} so far")
        if self._status is None:
            self._status = self.console.status(text)
            self._status.start()
        else:
            self._status.update(text)

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


def run(argv: list[str], err: Console | None = None) -> int:
    """`consan run ...`: the exit status."""
    if err is None:
        from reports.render import stream_console

        err = stream_console(stderr=True)
    try:
        a, program = parse(argv)
    except RunUsageError as e:
        err.print(f"consan run: {e}", markup=False, soft_wrap=True)
        return EXIT_ERROR
    except SystemExit as e:  # -h
        return EXIT_CLEAN if not e.code else EXIT_ERROR
    from reports import suppress

    suppressions = None
    if a.suppressions:
        try:
            suppressions = suppress.load(a.suppressions)
        except suppress.SuppressionError as e:
            err.print(f"consan run: {e}", markup=False, soft_wrap=True)
            return EXIT_ERROR
    try:
        import cupy  # noqa: F401 - the hook wraps CuPy's compiler
    except Exception as e:  # noqa: BLE001
        err.print(f"consan run: CuPy cannot be imported ({type(e).__name__}: {e}); consan "
                  "sanitizes kernels launched through CuPy", markup=False, soft_wrap=True)
        return EXIT_ERROR
    from . import frontends
    from .session import Options, Session

    options = Options(
        kernel_name=a.kernel_name, kernel_name_exclude=a.kernel_name_exclude,
        launch_skip=a.launch_skip, launch_count=a.launch_count,
        print_limit=0 if a.quiet else a.print_limit, on_violation=a.on_violation,
        suppressions=suppressions)
    progress = Progress(err) if err.is_terminal and not a.quiet else None
    roots = tuple(dict.fromkeys(
        [os.getcwd() + os.sep] +
        ([os.path.dirname(os.path.abspath(program.script)) + os.sep] if program.script else [])))
    session = Session(options, console=err, roots=roots, progress=progress,
                      print_findings=not a.quiet)
    session.report.program = {"argv": program.argv, "cwd": os.getcwd()}

    def teardown() -> None:
        if progress is not None:
            progress.stop()
        frontends.uninstall()

    def finish(outcome: Outcome) -> int:
        teardown()
        return _conclude(a, session.report, outcome, err)

    real_exit, pid = os._exit, os.getpid()

    def exit_now(code: int) -> NoReturn:
        """The program's os._exit: no atexit, no finally, so the report is finished here
        first and the process ends with consan's verdict (a forked child's exits as it
        asked)."""
        if os.getpid() != pid:
            real_exit(code)
        os._exit = real_exit
        status = EXIT_ERROR  # (if finishing the report fails, the process still ends)
        try:
            session.stop()
            sys.stdout.flush()
            status = finish(Outcome(code))
        finally:
            real_exit(status)

    os._exit = exit_now
    try:
        with frontends.sanitizing(session):
            outcome = execute(program, err, faulted=lambda: session.report.faulted)
    except BaseException:
        teardown()
        raise
    finally:
        os._exit = real_exit
    return finish(outcome)


def _conclude(a: argparse.Namespace, report, outcome: Outcome, err: Console) -> int:
    """The report's files and summary once the program is over: the exit status."""
    report.program["exit_status"] = outcome.status
    if outcome.no_gpu:
        report.not_run = "no usable CUDA GPU"
        report.program["error"] = f"no usable CUDA GPU: {outcome.no_gpu}"
    elif report.faulted:
        report.program["error"] = "; ".join(fault_sentence(f) for f in report.faults)
    status = _write_outputs(a, report, err)
    if outcome.no_gpu:
        err.print(f"consan run: the program needs a CUDA GPU and none is usable here "
                  f"({outcome.no_gpu}). consan checks kernels by running them: run it on a "
                  "machine with a CUDA GPU (`consan instrument` works without one).",
                  markup=False, soft_wrap=True)
        return EXIT_ERROR
    if a.quiet:
        err.print(report.summary_line(), markup=False, soft_wrap=True)
    else:
        report.render_summary(err)
    if report.faulted:
        err.print(fault_message(report), markup=False, soft_wrap=True)
    return status or exit_status(report, outcome.status)


def exit_status(report, program_status: int | None) -> int:
    """The verdict as an exit status: 2 when a checked kernel faulted (whatever was found:
    the program did not run to its end under the checker), 1 findings, else the program's."""
    if report.faulted:
        return EXIT_ERROR
    if not report.ok:
        return EXIT_VIOLATIONS
    return program_status if program_status else EXIT_CLEAN


def fault_message(report) -> str:
    """One sentence that names each checked kernel that faulted, the launch and the fault."""
    faults = "; ".join(fault_sentence(f, where=True) for f in report.faults)
    return (f"consan run: {faults} (exit status 2: after a fault the CUDA context of the "
            "process is unusable, so the program was not checked to its end)")


def _write_outputs(a: argparse.Namespace, report, err: Console) -> int:
    from reports.sarif import to_sarif_json

    try:
        if a.json:
            Path(a.json).write_text(report.to_json())
        if a.sarif:
            Path(a.sarif).write_text(to_sarif_json(report))
    except OSError as e:
        err.print(f"consan run: cannot write {e.filename}: {e.strerror}", markup=False,
                  soft_wrap=True)
        return EXIT_ERROR
    return EXIT_CLEAN
