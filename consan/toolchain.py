"""NVRTC and nvJitLink, through cuda-bindings: CUDA C++ -> PTX -> cubin.

Both run without a GPU, so `consan instrument` and CI use them too. NVRTC
and nvJitLink come from the same toolkit release (13.0): nvJitLink cannot
read PTX newer than itself, and the driver (580) cannot JIT PTX newer than
CUDA 13.0, so we always hand the driver a cubin.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from instrument import abi

CHECKER_SOURCE = Path(__file__).parent / "checker" / "checker.cu"


class CompileError(RuntimeError):
    """A compiler or linker rejected its input; `log` is what it said."""

    def __init__(self, what: str, log: str):
        super().__init__(f"{what}\n{log.strip()}")
        self.log = log


@dataclass(frozen=True)
class Arch:
    major: int
    minor: int
    suffix: str = ""  # "a" for arch-specific features (wgmma, setmaxnreg)

    @property
    def sm(self) -> str:
        return f"sm_{self.major}{self.minor}{self.suffix}"

    @property
    def compute(self) -> str:
        return f"compute_{self.major}{self.minor}{self.suffix}"

    @classmethod
    def parse(cls, text: str) -> Arch:
        m = re.fullmatch(r"(?:sm|compute)_(\d)(\d+)([af]?)", text.strip())
        if not m:
            raise ValueError(f"not a GPU architecture: {text!r} (expected e.g. sm_90a)")
        return cls(int(m.group(1)), int(m.group(2)), m.group(3))

    @classmethod
    def for_device(cls, major: int, minor: int) -> Arch:
        return cls(major, minor, "a" if (major, minor) in ((9, 0), (10, 0), (10, 3)) else "")


def _check(result, what: str, log: str = "") -> None:
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise CompileError(f"{what} failed ({err!r})", log)


def nvrtc_version() -> tuple[int, int]:
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    return major, minor


def split_arch(options) -> tuple[list[str], Arch | None]:
    """Options without any -arch flag, and the architecture that flag named."""
    rest, arch = [], None
    it = iter(options)
    for o in it:
        m = re.fullmatch(r"(?:-arch|--gpu-architecture)(?:=(.*))?", o)
        if m:
            arch = Arch.parse(m.group(1) if m.group(1) else next(it))
        else:
            rest.append(o)
    return rest, arch


def compile_cuda(source: str, name: str, options: tuple[str, ...] | list[str],
                 headers: dict[str, str] | None = None,
                 name_expressions: tuple[str, ...] | list[str] = ()) -> str:
    """CUDA C++ -> PTX with NVRTC. Raises CompileError carrying the compiler log.

    `name_expressions` (C++ names such as `kern<float>`) are instantiated, as
    CuPy's RawModule asks.
    """
    from cuda.bindings import nvrtc

    headers = headers or {}
    err, prog = nvrtc.nvrtcCreateProgram(
        source.encode(), name.encode(), len(headers),
        [v.encode() for v in headers.values()], [k.encode() for k in headers])
    _check(err, "nvrtcCreateProgram")
    try:
        for expr in name_expressions:
            nvrtc.nvrtcAddNameExpression(prog, expr.encode())
        opts = [o.encode() for o in options]
        res = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, n = nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(n)  # never b" " * n: a 1-byte bytes object is a shared singleton
        nvrtc.nvrtcGetProgramLog(prog, log)
        log_text = log.decode(errors="replace").rstrip("\x00")
        if int(res[0]) != 0:
            raise CompileError(f"NVRTC could not compile {name} (options: {' '.join(options)})",
                               log_text)
        _, n = nvrtc.nvrtcGetPTXSize(prog)
        buf = bytearray(n)  # never b" " * n: a 1-byte bytes object is a shared singleton
        nvrtc.nvrtcGetPTX(prog, buf)
        return buf.decode().rstrip("\x00")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def link(ptx_modules: list[tuple[str, str]], arch: Arch, extra: tuple[str, ...] = ()) -> bytes:
    """PTX modules -> one cubin with nvJitLink (device code linked across them)."""
    from cuda.bindings import nvjitlink

    opts = [f"-arch={arch.sm}", *extra]
    handle = nvjitlink.create(len(opts), opts)
    try:
        try:
            for name, text in ptx_modules:
                data = text.encode()
                nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), name)
            nvjitlink.complete(handle)
        except Exception as exc:  # nvJitLinkError: the log says why
            log = _jitlink_log(handle)
            raise CompileError(f"nvJitLink could not assemble for {arch.sm}: {exc}", log) from None
        size = nvjitlink.get_linked_cubin_size(handle)
        cubin = bytearray(size)
        nvjitlink.get_linked_cubin(handle, cubin)
        return bytes(cubin)
    finally:
        nvjitlink.destroy([handle]) if _destroy_takes_list() else nvjitlink.destroy(handle)


@functools.cache
def _destroy_takes_list() -> bool:
    from cuda.bindings import nvjitlink

    doc = nvjitlink.destroy.__doc__ or ""
    return "list" in doc.split("\n", 3)[0].lower()


def _jitlink_log(handle) -> str:
    from cuda.bindings import nvjitlink

    try:
        n = nvjitlink.get_error_log_size(handle)
        buf = bytearray(n)
        nvjitlink.get_error_log(handle, buf)
        return buf.decode(errors="replace").rstrip("\x00")
    except Exception:  # noqa: BLE001 - the log is best effort
        return ""


def link_with_checker(ins, name: str, arch: Arch, extra: tuple[str, ...] = (),
                      psh: bool = False, max_regs: int = 0, vsh: bool = False) -> bytes:
    """An instrumented module + the checker -> cubin. `ins` is an instrument.Instrumented.

    A kernel with `.maxnreg N` may only call functions that fit in N registers,
    so the probes are assembled under the module's tightest cap. `psh` links
    the phase-mode checker that keeps its tables in shared memory: it has no
    vector-clock code, so the probes need far fewer registers. `vsh` links the
    vector-clock checker that keeps its buffer tables in shared memory (no
    device-memory table code on its paths). `max_regs` caps the registers of
    every function (the tighter of it and `.maxnreg` wins).
    """
    caps = [c for c in (ins.max_regs, max_regs) if c]
    if caps:
        extra = (*extra, f"-maxrregcount={min(caps)}")
    return link([(name, ins.ptx), ("consan_checker.ptx", checker_ptx(arch, psh, vsh))], arch,
                extra)


def checker_defines() -> tuple[str, ...]:
    """Extra -D options for the checker (CONSAN_CHECKER_DEFINES; for measurements only)."""
    return tuple(f"-D{d}" for d in os.environ.get("CONSAN_CHECKER_DEFINES", "").split())


@functools.cache
def _checker_ptx(arch: Arch, defines: tuple[str, ...]) -> str:
    opts = ("-rdc=true", f"-arch={arch.compute}", "-std=c++17", *defines)
    return compile_cuda(CHECKER_SOURCE.read_text(), "consan_checker.cu", opts,
                        headers={"consan_abi.h": abi.c_header()})


def checker_ptx(arch: Arch, psh: bool = False, vsh: bool = False) -> str:
    """The device checker compiled for `arch` (relocatable, so probes link to it)."""
    return _checker_ptx(arch, checker_defines() + (("-DCONSAN_PSH",) if psh else ())
                        + (("-DCONSAN_VSH",) if vsh else ()))
