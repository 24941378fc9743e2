"""The `consan` command line: `instrument`, `check` and `run` (in consan/run.py).

Exit status: 0 clean, 1 violations found, 2 usage or tool error (no GPU,
bad input, compiler error) -- like compute-sanitizer's --error-exitcode.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

EXIT_CLEAN, EXIT_VIOLATIONS, EXIT_ERROR = 0, 1, 2

_TYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "u8": "uint8",
          "i16": "int16", "u16": "uint16", "i32": "int32", "u32": "uint32", "i64": "int64",
          "u64": "uint64"}
_ARG = re.compile(r"^(?P<ty>\w+)(?:\[(?P<n>\d+)\])?(?:=(?P<val>[-+.\w]+))?$")


class UsageError(Exception):
    pass


def parse_arg(spec: str):
    """`f32[N]` random buffer, `f32[N]=0` filled buffer, `i32=5` scalar (CuPy conventions)."""
    import numpy as np

    m = _ARG.match(spec.strip())
    if not m or m.group("ty") not in _TYPES:
        raise UsageError(f"bad --arg {spec!r}: use TYPE[N] (random buffer), TYPE[N]=V "
                         f"(filled buffer) or TYPE=V (scalar); TYPE is one of "
                         f"{', '.join(_TYPES)}")
    dtype = np.dtype(_TYPES[m.group("ty")])
    if m.group("n") is None:
        if m.group("val") is None:
            raise UsageError(f"bad --arg {spec!r}: a scalar needs a value, e.g. {spec}=1")
        return dtype.type(float(m.group("val")) if dtype.kind == "f" else int(m.group("val"), 0))
    import cupy

    n = int(m.group("n"))
    if m.group("val") is not None:
        return cupy.full(n, float(m.group("val")), dtype=dtype)
    if dtype.kind == "f":
        return cupy.random.random(n).astype(dtype)
    return cupy.random.randint(0, 256, n).astype(dtype)


def _dims(text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(x) for x in text.replace("x", ",").split(","))
    except ValueError:
        raise UsageError(f"bad dimension {text!r}: use N or X,Y,Z") from None
    if not 1 <= len(dims) <= 3 or min(dims) < 1:
        raise UsageError(f"bad dimension {text!r}: 1 to 3 positive integers")
    return dims


def _source(path: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{path}: no such file")
    return p.read_text()


def _compile_options(a) -> list[str]:
    opts = [f"-D{d}" for d in a.define] + [f"-I{i}" for i in a.include] + list(a.option)
    return opts


def cmd_instrument(a, out: Console) -> int:
    from consan import toolchain
    from consan.runtime import is_ptx
    from instrument.ptx import parse
    from instrument.rewrite import instrument

    text = _source(a.file)
    arch = toolchain.Arch.parse(a.arch)
    name = Path(a.file).name
    if is_ptx(text):
        ptx = text
    else:
        opts = [f"-arch={arch.compute}", "-lineinfo", *_compile_options(a)]
        ptx = toolchain.compile_cuda(text, a.file, opts)
        name += ".ptx"
    ins = instrument(parse(ptx, name))
    if a.kernel and a.kernel not in ins.kernels:
        from consan.runtime import resolve_kernel

        resolve_kernel(ins, a.kernel)  # raises with the list of kernels
    toolchain.link_with_checker(ins, name, arch)
    if a.output:
        Path(a.output).write_text(ins.ptx)
    table = Table(title=f"consan instrument {a.file} ({arch.sm})", show_lines=False)
    table.add_column("function")
    table.add_column("event")
    table.add_column("sites", justify="right")
    per = Counter((s.kernel, s.event) for s in ins.sites.sites
                  if a.kernel is None or s.kernel == a.kernel or s.kernel not in ins.kernels)
    for (fn, ev), n in sorted(per.items()):
        kind = "" if fn in ins.kernels else " (.func)"
        table.add_row(fn + kind, ev, str(n))
    out.print(table)
    out.print(f"{len(ins.sites)} probed sites; assembled with nvJitLink for {arch.sm}"
              + (f"; instrumented PTX written to {a.output}" if a.output else ""))
    if ins.unmodeled:
        out.print(f"[yellow]{len(ins.unmodeled)} instruction(s) touch shared memory or "
                  "synchronise but are not modelled yet (not checked):[/]")
        for u in ins.unmodeled:
            out.print(f"  [yellow]{u}[/]", markup=True, highlight=False)
    return EXIT_CLEAN


def cmd_check(a, out: Console) -> int:
    import consan

    text = _source(a.file)
    if not consan.gpu_available():
        raise consan.NoGPUError("consan check needs a CUDA GPU to run the kernel and none is "
                                "usable here (`consan instrument` works without one).")
    args = tuple(parse_arg(s) for s in a.arg)
    opts = _compile_options(a) + ([f"-arch={a.arch}"] if a.arch else [])
    rep = consan.check(text, a.kernel, grid=_dims(a.grid), block=_dims(a.block), args=args,
                       shared_mem=a.shared_mem, options=tuple(opts),
                       source_name=a.file)
    rep.render(out)
    if a.json:
        Path(a.json).write_text(rep.to_json())
    return EXIT_CLEAN if rep.ok else EXIT_VIOLATIONS


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="consan", description="Shadow-memory race sanitizer for "
                                "GPU kernels.")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="cmd")

    def compile_opts(sp):
        sp.add_argument("-D", dest="define", action="append", default=[], metavar="NAME[=V]",
                        help="preprocessor definition passed to NVRTC")
        sp.add_argument("-I", dest="include", action="append", default=[], metavar="DIR")
        sp.add_argument("--option", action="append", default=[], metavar="OPT",
                        help="any other NVRTC option (repeatable)")

    ins = sub.add_parser("instrument", help="show what would be checked (no GPU needed)")
    ins.add_argument("file", help="a .cu or .ptx file")
    ins.add_argument("--kernel", help="only this kernel (must exist)")
    ins.add_argument("-o", "--output", help="write the instrumented PTX here")
    ins.add_argument("--arch", default="sm_90a", help="target (default sm_90a)")
    compile_opts(ins)

    chk = sub.add_parser("check", help="run one launch of a kernel under the checker")
    chk.add_argument("file", help="a .cu or .ptx file")
    chk.add_argument("--kernel", required=True)
    chk.add_argument("--grid", default="1")
    chk.add_argument("--block", default="256")
    chk.add_argument("--shared-mem", type=int, default=0, help="dynamic shared memory bytes")
    chk.add_argument("--arg", action="append", default=[], metavar="SPEC",
                     help="kernel argument: TYPE[N] random buffer, TYPE[N]=V filled buffer, "
                          "TYPE=V scalar (repeat in order)")
    chk.add_argument("--arch", help="target (default: the GPU's)")
    chk.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    compile_opts(chk)

    sub.add_parser("run", add_help=False,
                   help="run a Python program and sanitize every kernel it launches through "
                        "CuPy (consan run -h for options)")
    return p


def main(argv: list[str] | None = None) -> int:
    from consan.errors import ConsanError
    from consan.toolchain import CompileError
    from instrument.ptx import PTXSyntaxError
    from instrument.rewrite import InstrumentError

    out = Console(highlight=False)
    err = Console(stderr=True, highlight=False)
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
        from consan.runtime import __version__

        out.print(f"consan {__version__}")
        return EXIT_CLEAN
    if a.cmd is None:
        p.print_help()
        return EXIT_ERROR
    try:
        return {"instrument": cmd_instrument, "check": cmd_check}[a.cmd](a, out)
    except CompileError as e:
        err.print(f"consan: {e}", markup=False)
    except (PTXSyntaxError, InstrumentError) as e:
        err.print(f"consan: malformed PTX: {e}", markup=False)
    except (ConsanError, UsageError, ValueError) as e:
        err.print(f"consan: {e}", markup=False)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
