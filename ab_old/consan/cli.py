"""The `consan` command line: `instrument`, `check` and `run` (in consan/run.py).

Exit status: 0 clean, 1 violations found, 2 usage or tool error (no GPU,
bad input, compiler error) or a kernel that faulted -- like compute-sanitizer's
--error-exitcode.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .exitcodes import EXIT_CLEAN, EXIT_ERROR, EXIT_VIOLATIONS

_TYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "u8": "uint8",
          "i16": "int16", "u16": "uint16", "i32": "int32", "u32": "uint32", "i64": "int64",
          "u64": "uint64"}
_ARG = re.compile(r"^(?P<ty>\w+)(?:\[(?P<n>\d+)\])?(?:=(?P<val>[-+.\w]+))?$")


class UsageError(Exception):
    """A bad command line or input file: one sentence, exit status 2."""


# ---------------------------------------------------------------- inputs and outputs


def read_source(path: str) -> str:
    """The text of a .cu or .ptx file, or a UsageError that names the file and the problem."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{path} is a folder, not a .cu or .ptx file")
    if not p.exists():
        raise UsageError(f"{path}: no such file")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
    if not data.strip():
        raise UsageError(f"{path} is empty: give it CUDA C++ source or PTX")
    if data.startswith(b"\x7fELF"):
        raise UsageError(f"{path} is a compiled binary (ELF, such as a cubin), not source: give "
                         "the CUDA C++ source or its PTX")
    if b"\0" in data:
        raise UsageError(f"{path} is a binary file (it contains NUL bytes), not CUDA C++ or PTX")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{path} is not a UTF-8 text file (byte {e.start} is {data[e.start]:#04x})"
                         ": give it CUDA C++ source or PTX") from None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:  # (one of them does not exist yet)
        return a.resolve() == b.resolve()


def output_problem(path: str, option: str, taken: dict[str, str | None] | None = None
                   ) -> str | None:
    """Why `path` cannot be written (a sentence naming it), or None: asked before any work,
    so a long run never ends in a file it cannot write. `taken`: files the command reads or
    writes otherwise (what each is -> its path), which the output must not overwrite."""
    p = Path(path)
    for what, other in (taken or {}).items():
        if other and _same_file(p, Path(other)):
            return f"{option} {path} is {what}: writing there would overwrite it; give " \
                   "another file name"
    if p.is_dir():
        return f"{option} {path} is a folder: give a file name"
    parent = p.parent
    if not parent.exists():
        return f"{option} {path}: the folder {parent} does not exist"
    if not parent.is_dir():
        return f"{option} {path}: {parent} is not a folder"
    existed = p.exists()
    try:  # (os.access says yes to root everywhere, /proc included: opening is the test)
        with open(p, "a"):
            pass
    except OSError as e:
        what = "the file" if existed else f"the folder {parent}"
        return f"{option} {path}: {what} is not writable ({e.strerror or e})"
    if not existed:
        p.unlink(missing_ok=True)
    return None


def _writable(path: str | None, option: str, taken: dict[str, str | None] | None = None
              ) -> None:
    problem = output_problem(path, option, taken) if path else None
    if problem:
        raise UsageError(problem)


def _write(path: str, text: str, option: str) -> None:
    try:
        Path(path).write_text(text)
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write it ({e.strerror or e})") from None


@dataclass(frozen=True)
class ArgSpec:
    """One checked `--arg`: a scalar (`n` None) or a buffer of `n` elements."""

    spec: str
    dtype: Any
    n: int | None
    value: int | float | None

    def make(self) -> Any:
        """The kernel argument, CuPy's RawKernel conventions (buffers need CuPy)."""
        if self.n is None:
            return self.dtype.type(self.value)
        import cupy

        if self.value is not None:
            return cupy.full(self.n, self.value, dtype=self.dtype)
        if self.dtype.kind == "f":
            return cupy.random.random(self.n).astype(self.dtype)
        return cupy.random.randint(0, 256, self.n).astype(self.dtype)


def _arg_value(spec: str, dtype: Any, text: str) -> int | float:
    import numpy as np

    ty = next(k for k, v in _TYPES.items() if v == dtype.name)
    if dtype.kind == "f":
        try:
            value = float(text)
        except ValueError:
            raise UsageError(f"bad --arg {spec!r}: {text!r} is not a number") from None
        if np.isfinite(value) and value and abs(value) > float(np.finfo(dtype).max):
            raise UsageError(f"bad --arg {spec!r}: {text} is out of range for {ty} "
                             f"(at most {float(np.finfo(dtype).max):g})")
        return value
    try:
        value = int(text, 0)
    except ValueError:
        raise UsageError(f"bad --arg {spec!r}: {ty} needs an integer, not {text!r}") from None
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise UsageError(f"bad --arg {spec!r}: {value} is out of range for {ty} "
                         f"({info.min} to {info.max})")
    return value


def parse_arg_spec(spec: str) -> ArgSpec:
    """Check an `--arg` without allocating anything: `f32[N]` random buffer, `f32[N]=0` filled
    buffer, `i32=5` scalar (CuPy conventions)."""
    import numpy as np

    m = _ARG.match(spec.strip())
    if not m or m.group("ty") not in _TYPES:
        raise UsageError(f"bad --arg {spec!r}: use TYPE[N] (random buffer), TYPE[N]=V "
                         f"(filled buffer) or TYPE=V (scalar); TYPE is one of "
                         f"{', '.join(_TYPES)}")
    dtype = np.dtype(_TYPES[m.group("ty")])
    n = int(m.group("n")) if m.group("n") is not None else None
    if n is not None and n < 1:
        raise UsageError(f"bad --arg {spec!r}: a buffer needs at least 1 element")
    if n is None and m.group("val") is None:
        raise UsageError(f"bad --arg {spec!r}: a scalar needs a value, e.g. {spec}=1")
    value = _arg_value(spec, dtype, m.group("val")) if m.group("val") is not None else None
    return ArgSpec(spec, dtype, n, value)


def parse_arg(spec: str) -> Any:
    """`f32[N]` random buffer, `f32[N]=0` filled buffer, `i32=5` scalar (CuPy conventions)."""
    return parse_arg_spec(spec).make()


# CUDA's launch limits (all GPUs consan targets): checked before anything is compiled.
_MAX_GRID = (2**31 - 1, 65535, 65535)
_MAX_BLOCK = (1024, 1024, 64)
_MAX_THREADS = 1024


def parse_dims(text: str, option: str) -> tuple[int, ...]:
    """`N` or `X,Y,Z`, each at least 1 and within CUDA's limits for a grid or a block."""
    parts = text.split(",")
    try:
        dims = tuple(int(x) for x in parts)
    except ValueError:
        dims = ()
    if len(dims) not in (1, 3) or min(dims) < 1:
        raise UsageError(f"bad {option} {text!r}: use N or X,Y,Z with positive integers "
                         f"(e.g. {option} 256 or {option} 16,16,1)")
    block = option == "--block"
    limits = _MAX_BLOCK if block else _MAX_GRID
    for axis, (d, limit) in enumerate(zip(dims, limits, strict=False)):
        if d > limit:
            raise UsageError(f"bad {option} {text!r}: {'xyz'[axis]} is {d}, CUDA allows at most "
                             f"{limit}")
    if block and math.prod(dims) > _MAX_THREADS:
        raise UsageError(f"bad --block {text!r}: {math.prod(dims)} threads, a block has at most "
                         f"{_MAX_THREADS}")
    return dims


def _compile_options(a) -> list[str]:
    return [f"-D{d}" for d in a.define] + [f"-I{i}" for i in a.include] + list(a.option)


# ---------------------------------------------------------------- instrumenting


def instrumented(text: str, file: str, arch: Any, options: list[str]) -> tuple[str, Any, str]:
    """(input PTX, Instrumented, PTX name) of a .cu or .ptx file, by the steps of
    `consan.build`; the PTX is named after the file's base name, and the not-modelled list
    names `file` as given (NVRTC prefixes its working directory)."""
    from consan import pipeline
    from consan.toolchain import is_ptx
    from instrument.ptx import parse
    from instrument.rewrite import instrument

    cuda = not is_ptx(text)
    ptx, _ = pipeline.compile_ptx(text, options, arch, file)
    name = Path(file).name + (".ptx" if cuda else "")
    mod = parse(ptx, name)
    if not mod.functions:
        what = ("NVRTC compiled it to PTX without any __global__ function (a template kernel "
                "needs an instantiation)" if cuda else "the PTX has no .entry or .func")
        raise UsageError(f"{file} defines no kernel to instrument: {what}")
    ins = instrument(mod)
    ins.unmodeled = name_source_file(ins.unmodeled, file)
    return ptx, ins, name


def name_source_file(items: list, file: str) -> list:
    """Not-modelled entries whose `.loc` names `file` under NVRTC's working-directory prefix
    name it as the user gave it."""
    base = os.path.basename(file)

    def named(loc: Any) -> Any:
        return replace(loc, file=file) if os.path.basename(loc.file) == base else loc

    return [replace(u, loc=named(u.loc), inlined_at=tuple(named(c) for c in u.inlined_at))
            if u.loc is not None else u for u in items]


def pick_kernel(ins: Any, kernel: str, file: str) -> str:
    """The PTX name of `kernel`, given as in the PTX or as its C++ name (`scale` for
    `_Z5scalePfi`); a UsageError that lists the kernels when none or several match."""
    from instrument.rewrite import demangle

    if kernel in ins.kernels:
        return kernel
    matches = [k for k in ins.kernels if demangle(k) == kernel]
    if len(matches) == 1:
        return matches[0]

    def label(k: str) -> str:
        return k if demangle(k) == k else f"{demangle(k)} ({k})"

    if matches:
        raise UsageError(f"--kernel {kernel!r} matches {len(matches)} overloads in {file} ("
                         f"{', '.join(matches)}): pass the one you mean as written in the PTX")
    have = ", ".join(label(k) for k in ins.kernels) or "none"
    raise UsageError(f"--kernel {kernel!r} matches no kernel in {file}; its kernels are: {have}")


class ToolError(Exception):
    """A compiler or linker rejected the input; the message names the user's lines."""


class KernelFaulted(Exception):
    """The checked kernel faulted on the GPU: its report was printed, exit status 2."""


def cmd_instrument(a, out: Console) -> int:
    from consan import pipeline, toolchain
    from reports.render import print_unmodeled

    text = read_source(a.file)
    _writable(a.output, "-o", {"the input file": a.file})
    arch = toolchain.Arch.parse(a.arch).require_supported(f"--arch {a.arch}")
    ptx, ins, name = instrumented(text, a.file, arch, _compile_options(a))
    kernel = pick_kernel(ins, a.kernel, a.file) if a.kernel else None
    try:
        pipeline.link(ins, ptx, name, arch)
    except toolchain.CompileError as e:  # (its log names the user's lines already)
        raise ToolError(str(e)) from None
    if a.output:
        _write(a.output, ins.ptx, "-o")

    from instrument.ptx import parse, reachable

    # the kernel asked for and the device functions it calls (all of them if it calls one
    # through a register)
    runs = reachable(parse(ptx, name), kernel) if kernel else None

    def selected(fn: str) -> bool:
        if kernel is None:
            return True
        return fn in runs if runs is not None else fn == kernel or fn not in ins.kernels

    from instrument.rewrite import demangle

    sites = [s for s in ins.sites.sites if selected(s.kernel)]
    unmodeled = [u for u in ins.unmodeled if selected(u.kernel)]
    out.print(Text(f"consan instrument {a.file} ({arch.sm})", style="bold"))
    table = Table(show_lines=False)
    table.add_column("function")
    table.add_column("event")
    table.add_column("sites", justify="right")
    for (fn, ev), n in sorted(Counter((s.kernel, s.event) for s in sites).items()):
        kind = "" if fn in ins.kernels else " (.func)"
        table.add_row(demangle(fn) + kind, ev, str(n))
    out.print(table)
    scope = f" in kernel {demangle(kernel)}" if kernel else ""
    out.print(f"{len(sites)} probed sites{scope}; assembled with nvJitLink for {arch.sm}"
              + (f"; instrumented PTX written to {a.output}" if a.output else ""), markup=False)
    for line in _cheaper_checks(ins, sites):
        out.print(line, markup=False)
    if unmodeled:
        out.print(Text(f"{len(unmodeled)} instruction(s) that touch shared memory or synchronise "
                       "are not checked:", style="yellow"))
        print_unmodeled(out, unmodeled, limit=None)
    return EXIT_CLEAN


def _cheaper_checks(ins, sites) -> list[str]:
    """What the rewriter checks with less work, in source lines: the loops checked on their
    first trip (docs/model.md) and the accesses that test inline whether they repeat."""
    out = []
    for head, branch in ins.first_trip_loops:
        locs = sorted({(s.loc.file, s.loc.line) for s in sites
                       if s.loc and head < s.ptx_line < branch})
        if locs:
            where = f"{locs[0][0]}:{locs[0][1]}" + (f"-{locs[-1][1]}" if len(locs) > 1 else "")
            out.append(f"loop at {where}: its trips touch the same shared bytes, so its "
                       "accesses are checked on its first trip")
    if ins.fast_paths:
        out.append(f"{ins.fast_paths} access(es) in loops skip the checker where they repeat "
                   "what their warp did since the last barrier")
    if ins.inline_writes or ins.inline_reads:
        out.append(f"{ins.inline_writes} shared store(s) and {ins.inline_reads} load(s) record "
                   "themselves without a call where no other warp wrote their bytes (or, for "
                   "a store, read them) since the last barrier")
    if ins.inline_barriers:
        out.append(f"{ins.inline_barriers} barrier(s), exit(s) and async group operation(s) "
                   "do their checking without a call")
    if ins.inline_chunk_reads:
        out.append(f"{ins.inline_chunk_reads} 16-byte load(s) record and judge themselves "
                   "without a call where the bytes' last write is ordered before their warp "
                   "(with the tables in shared memory)")
    if ins.inline_chunk_writes:
        out.append(f"{ins.inline_chunk_writes} cp.async call(s) of 16-byte copies record and "
                   "judge their copies without a call where each chunk's last write and "
                   "readers are ordered before their warp (with the tables in shared memory)")
    return out


def cmd_check(a, out: Console) -> int:
    import consan
    from consan import toolchain

    # Everything the command line says is checked before any compile or GPU work.
    text = read_source(a.file)
    grid, block = parse_dims(a.grid, "--grid"), parse_dims(a.block, "--block")
    if a.shared_mem < 0:
        raise UsageError(f"bad --shared-mem {a.shared_mem}: dynamic shared memory is a number "
                         "of bytes, 0 or more")
    specs = [parse_arg_spec(s) for s in a.arg]
    if a.arch:
        toolchain.Arch.parse(a.arch).require_supported(f"--arch {a.arch}")
    _writable(a.json, "--json", {"the input file": a.file})
    if not consan.gpu_available():
        raise consan.NoGPUError("consan check needs a CUDA GPU to run the kernel and none is "
                                "usable here (`consan instrument` works without one).")
    args = tuple(s.make() for s in specs)
    opts = _compile_options(a) + ([f"-arch={a.arch}"] if a.arch else [])
    try:
        rep = consan.check(text, a.kernel, grid=grid, block=block, args=args,
                           shared_mem=a.shared_mem, options=tuple(opts), source_name=a.file)
    except toolchain.CompileError:
        raise  # (the build named the user's lines in the compiler's or linker's log)
    except Exception as e:
        if not type(e).__module__.startswith(("cupy", "cuda")):
            raise
        raise ToolError(f"the launch of {a.kernel} in {a.file} (grid {a.grid}, block {a.block}, "
                        f"shared memory {a.shared_mem}) failed: {e}; check that the launch "
                        "shape and the --arg list suit the kernel") from None
    rep.unmodeled = name_source_file(rep.unmodeled, a.file)
    rep.render(out)
    if a.json:
        _write(a.json, rep.to_json(), "--json")
    if rep.faulted:  # whatever was found before it: the kernel did not run to its end
        raise KernelFaulted(f"kernel {a.kernel} in {a.file} faulted on the GPU ({rep.fault}), "
                            "so it was not checked to its end; the report above shows what "
                            "consan recorded before the fault")
    return EXIT_CLEAN if rep.ok else EXIT_VIOLATIONS


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="consan", description="Shadow-memory race sanitizer for "
                                "GPU kernels.")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="cmd")

    def compile_opts(sp):
        sp.add_argument("-D", dest="define", action="append", default=[], metavar="NAME[=V]",
                        help="preprocessor definition passed to NVRTC (repeatable)")
        sp.add_argument("-I", dest="include", action="append", default=[], metavar="DIR",
                        help="folder NVRTC searches for #include files (repeatable)")
        sp.add_argument("--option", action="append", default=[], metavar="OPT",
                        help="any other NVRTC option (repeatable)")

    kernel_help = "the kernel: its name in the PTX or its C++ name (e.g. scale for _Z5scalePfi)"
    ins = sub.add_parser("instrument", help="show what would be checked (no GPU needed)")
    ins.add_argument("file", help="a .cu or .ptx file")
    ins.add_argument("--kernel", metavar="NAME", help=f"only {kernel_help}")
    ins.add_argument("-o", "--output", metavar="OUT.ptx", help="write the instrumented PTX here")
    ins.add_argument("--arch", default="sm_90a", metavar="SM",
                     help="target GPU architecture (default sm_90a)")
    compile_opts(ins)

    chk = sub.add_parser("check", help="run one launch of a kernel under the checker")
    chk.add_argument("file", help="a .cu or .ptx file")
    chk.add_argument("--kernel", required=True, metavar="NAME", help=f"launch {kernel_help}")
    chk.add_argument("--grid", default="1", metavar="N|X,Y,Z",
                     help="grid size in blocks: N or X,Y,Z (default 1)")
    chk.add_argument("--block", default="256", metavar="N|X,Y,Z",
                     help="block size in threads: N or X,Y,Z (default 256)")
    chk.add_argument("--shared-mem", type=int, default=0, metavar="N",
                     help="dynamic shared memory bytes (default 0)")
    chk.add_argument("--arg", action="append", default=[], metavar="SPEC",
                     help="kernel argument: TYPE[N] random buffer, TYPE[N]=V filled buffer, "
                          "TYPE=V scalar (repeat in order)")
    chk.add_argument("--arch", metavar="SM",
                     help="target GPU architecture, e.g. sm_90a (default: the GPU's)")
    chk.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    compile_opts(chk)

    sub.add_parser("run", add_help=False,
                   help="run a Python program and sanitize every kernel it launches through "
                        "CuPy or Triton (consan run -h for options)")
    return p


def main(argv: list[str] | None = None) -> int:
    from consan.errors import ConsanError
    from consan.toolchain import CompileError
    from instrument.ptx import PTXSyntaxError
    from instrument.rewrite import InstrumentError
    from reports.render import stream_console

    out = stream_console()
    err = stream_console(stderr=True)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        # The program's own arguments follow its name: they are not consan's to parse.
        from consan.run import run

        return run(argv[1:], err)
    p = _parser()
    try:
        a = p.parse_args(argv)
    except SystemExit as e:
        return EXIT_ERROR if e.code else EXIT_CLEAN
    if a.version:
        from consan.version import __version__

        out.print(f"consan {__version__}")
        return EXIT_CLEAN
    if a.cmd is None:
        p.print_help()
        return EXIT_ERROR
    try:
        return {"instrument": cmd_instrument, "check": cmd_check}[a.cmd](a, out)
    except (CompileError, ToolError, KernelFaulted) as e:
        err.print(f"consan: {e}", markup=False)
    except (PTXSyntaxError, InstrumentError) as e:
        err.print(f"consan: malformed PTX: {e}", markup=False)
    except (ConsanError, UsageError, ValueError) as e:
        err.print(f"consan: {e}", markup=False)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
