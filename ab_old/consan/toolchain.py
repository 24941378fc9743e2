"""NVRTC and nvJitLink, through cuda-bindings: CUDA C++ -> PTX -> cubin.

Both run without a GPU, so `consan instrument` and CI use them too. NVRTC
and nvJitLink come from the same toolkit release (13.0): nvJitLink cannot
read PTX newer than itself, and the driver (580) cannot JIT PTX newer than
CUDA 13.0, so we always hand the driver a cubin.

NVRTC searches no directory unless told, so `compile_cuda` adds the include
directories of one CUDA toolkit (`cuda_include_dirs`) after the user's own
`-I` options. The device checker is built once per configuration into a
relocatable cubin kept in the on-disk cache (`checker_object`): a link then
assembles only the user's PTX.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import hashlib
import os
import platform
import re
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from instrument import abi, probe_abi

CHECKER_DIR = Path(__file__).parent / "checker"
# The entry file: it includes the checker's headers (CHECKER_DIR/*.h), one translation unit.
CHECKER_SOURCE = CHECKER_DIR / "checker.cu"
# The names link_with_checker gives the checker's module: its errors are consan's.
CHECKER_MODULES = ("consan_checker.ptx", "consan_checker.cubin")


class CompileError(RuntimeError):
    """A compiler or linker rejected its input; `log` is what it said."""

    def __init__(self, what: str, log: str):
        super().__init__(f"{what}\n{log.strip()}")
        self.log = log


MIN_ARCH = (8, 0)  # the checker's warp reductions


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
        """sm_XY or compute_XY with an optional a/f suffix; the last digit is the minor
        (sm_100a: 10.0, sm_120: 12.0)."""
        m = re.fullmatch(r"(?:sm|compute)_(\d+)(\d)([af]?)", text.strip())
        if not m:
            raise ValueError(f"not a GPU architecture: {text!r} (expected e.g. sm_90a)")
        return cls(int(m.group(1)), int(m.group(2)), m.group(3))

    def require_supported(self, what: str) -> Arch:
        """This architecture, or a ValueError naming `what` (the user's option or GPU):
        the checker uses sm_80's warp reductions (__reduce_*_sync, redux.sync)."""
        if (self.major, self.minor) < MIN_ARCH:
            raise ValueError(f"{what}: consan checks kernels on sm_{MIN_ARCH[0]}{MIN_ARCH[1]} "
                             f"(Ampere) and newer GPUs; {self.sm} is older")
        return self

    @classmethod
    def for_device(cls, major: int, minor: int) -> Arch:
        return cls(major, minor, "a" if (major, minor) in ((9, 0), (10, 0), (10, 3)) else "")


def is_ptx(text: str) -> bool:
    """PTX text (a `.version` and a `.target` directive), as opposed to CUDA C++."""
    return bool(re.search(r"^\s*\.version\s+\d", text, re.M) and
                re.search(r"^\s*\.target\s", text, re.M))


def _check(result, what: str, log: str = "") -> None:
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise CompileError(f"{what} failed ({err!r})", log)


def nvrtc_version() -> tuple[int, int]:
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    return major, minor


@functools.cache
def nvjitlink_version() -> str:
    """nvJitLink's version, e.g. "13.0" (it decides the bytes of every linked cubin)."""
    from cuda.bindings import nvjitlink

    try:
        return ".".join(map(str, nvjitlink.version()))
    except Exception:  # noqa: BLE001 - older bindings: the cache key then omits it
        return "?"


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


@dataclass(frozen=True)
class IncludeDir:
    """A directory consan adds to NVRTC's search list, and why it chose it."""

    path: str
    origin: str  # e.g. "$CUDA_PATH", "/usr/local/cuda", "pip wheel nvidia/cu13"

    def __str__(self) -> str:
        return f"{self.path} (from {self.origin})"


# A directory holds the CUDA runtime/device headers when it has one of these.
_RUNTIME_MARKS = ("cuda_runtime.h", "cuda_fp16.h")
# libcu++ (cuda/barrier, cuda/pipeline, cuda/std/...): include/cccl since CUDA 13.
_CCCL_MARK = os.path.join("cuda", "std", "version")
# Include folders of NVIDIA's pip wheels, relative to a site-packages directory: CUDA 13
# puts the toolkit in one tree (nvidia/cu13), CUDA 12 splits it into one wheel per part.
_WHEEL_LAYOUTS = (("nvidia/cu{major}", ("include", "include/cccl")),
                  ("nvidia (CUDA 12 wheels)", ("nvidia/cuda_runtime/include",
                                               "nvidia/cuda_nvrtc/include",
                                               "nvidia/cuda_cccl/include")))


def _has_any(d: str, marks: tuple[str, ...]) -> bool:
    return any(os.path.isfile(os.path.join(d, m)) for m in marks)


def _target_names() -> tuple[str, ...]:
    """The toolkit's `targets/` folder names for this machine: an Arm server's toolkit
    (GH200) installs to sbsa-linux, a Jetson's to aarch64-linux."""
    m = platform.machine()
    return ("sbsa-linux", "aarch64-linux") if m == "aarch64" else (f"{m}-linux",)


def _root_dirs(root: str) -> list[str]:
    """The include folders of a toolkit installed at `root` (CUDA 13 keeps libcu++ apart)."""
    dirs = [os.path.join(root, "include"), os.path.join(root, "include", "cccl")]
    if not os.path.isfile(os.path.join(dirs[0], "cuda_runtime.h")):
        for t in _target_names():
            target = os.path.join(root, "targets", t, "include")
            dirs += [target, os.path.join(target, "cccl")]
    return dirs


def _loaded_nvrtc_root() -> str | None:
    """The toolkit the NVRTC library in this process came from (Linux: /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                path = line.rsplit(" ", 1)[-1].strip()
                if "/libnvrtc.so" in path:
                    return os.path.dirname(os.path.dirname(os.path.realpath(path)))
    except OSError:
        pass
    return None


def _version_key(path: str, want: tuple[int, int] | None) -> tuple:
    m = re.search(r"cuda-(\d+)\.(\d+)$", path)
    v = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    return (v != want, (-v[0], -v[1]))


def _toolkit_candidates(env: dict[str, str], paths: tuple[str, ...],
                        nvrtc: tuple[int, int] | None) -> list[tuple[str, list[str]]]:
    """Where a CUDA toolkit's headers may be, best first: (origin, include folders)."""
    out: list[tuple[str, list[str]]] = []
    for var in ("CUDA_PATH", "CUDA_HOME"):
        if env.get(var):
            out.append((f"${var}", _root_dirs(env[var])))
    root = _loaded_nvrtc_root()
    if root:
        out.append(("the toolkit NVRTC was loaded from", _root_dirs(root)))
    major = nvrtc[0] if nvrtc else 13
    for site in paths:
        if not os.path.isdir(os.path.join(site, "nvidia")):
            continue
        for origin, rel in _WHEEL_LAYOUTS:
            tree = os.path.join(site, origin.format(major=major)) if "{" in origin else site
            dirs = [os.path.join(tree, r) for r in rel]
            if any(os.path.isdir(d) for d in dirs):
                out.append((f"pip wheel {origin.format(major=major)} in {site}", dirs))
    if env.get("CONDA_PREFIX"):
        out.append(("$CONDA_PREFIX", _root_dirs(env["CONDA_PREFIX"])))
    for d in env.get("PATH", "").split(os.pathsep):
        nvcc = os.path.join(d, "nvcc")
        if d and os.path.isfile(nvcc):
            out.append((f"nvcc on PATH ({nvcc})",
                        _root_dirs(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))))
            break
    out.append(("/usr/local/cuda", _root_dirs("/usr/local/cuda")))
    for root in sorted(glob.glob("/usr/local/cuda-*"), key=lambda p: _version_key(p, nvrtc)):
        out.append((root, _root_dirs(root)))
    return out


@functools.cache
def _find_include_dirs(env: tuple[tuple[str, str], ...], paths: tuple[str, ...],
                       nvrtc: tuple[int, int] | None) -> tuple[IncludeDir, ...]:
    candidates = _toolkit_candidates(dict(env), paths, nvrtc)

    def existing(dirs: list[str]) -> list[str]:
        seen, keep = set(), []
        for d in dirs:
            if os.path.isdir(d) and os.path.realpath(d) not in seen:
                seen.add(os.path.realpath(d))
                keep.append(d)
        return keep

    # One toolkit's headers, not a mix: the first candidate that has the runtime headers.
    chosen: list[IncludeDir] = []
    for origin, dirs in candidates:
        dirs = existing(dirs)
        if any(_has_any(d, _RUNTIME_MARKS) for d in dirs):
            chosen = [IncludeDir(d, origin) for d in dirs]
            break
    if not any(_has_any(d.path, (_CCCL_MARK,)) for d in chosen):
        # libcu++ from the first place that has it (a wheel install without the cccl part).
        for origin, dirs in candidates:
            cccl = [d for d in existing(dirs) if _has_any(d, (_CCCL_MARK,))]
            if cccl:
                chosen.append(IncludeDir(cccl[0], origin))
                break
    return tuple(chosen)


_ENV_VARS = ("CUDA_PATH", "CUDA_HOME", "CONDA_PREFIX", "PATH")


def cuda_include_dirs() -> tuple[IncludeDir, ...]:
    """The CUDA include directories consan gives NVRTC, and where each came from.

    Searched like CuPy and cuda-pathfinder do, best first: $CUDA_PATH, $CUDA_HOME, the
    toolkit NVRTC itself was loaded from, NVIDIA's pip wheels (nvidia/cu13/include and
    its cccl folder; CUDA 12's nvidia/cuda_runtime/include, cuda_nvrtc, cuda_cccl),
    $CONDA_PREFIX, the toolkit of the nvcc on PATH, /usr/local/cuda, then /usr/local/cuda-*
    (NVRTC's own version first). The first of these that has cuda_runtime.h or
    cuda_fp16.h is used with its libcu++ folder (include/cccl in CUDA 13); headers of two
    toolkits are not mixed. Empty when no CUDA headers are installed.
    """
    try:
        nv: tuple[int, int] | None = nvrtc_version()
    except Exception:  # noqa: BLE001 - without NVRTC nothing compiles anyway
        nv = None
    env = tuple((k, os.environ.get(k, "")) for k in _ENV_VARS)
    paths = tuple(p for p in sys.path if p and os.path.isdir(p))
    return _find_include_dirs(env, paths, nv)


def _user_include_dirs(options) -> list[str]:
    dirs, it = [], iter(options)
    for o in it:
        m = re.fullmatch(r"(?:-I|--include-path=?)(.*)", o)
        if m:
            dirs.append(m.group(1) or next(it, ""))
    return dirs


def _missing_headers(log: str) -> list[str]:
    return list(dict.fromkeys(re.findall(r'(?:could not|cannot) open source file "([^"]+)"', log)))


def _compile_failure(name: str, options, found: tuple[IncludeDir, ...], log: str) -> str:
    """What to say when NVRTC fails: the headers it missed, and where consan looked."""
    user = _user_include_dirs(options)
    searched = [f"  {d} (your -I)" for d in user] + [f"  {d}" for d in found]
    where = ("\n".join(searched) if searched else
             "  (none: consan found no CUDA toolkit headers)")
    missing = _missing_headers(log)
    if missing:
        what = (f"NVRTC could not find the header{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)} included by {name}. Directories searched:\n{where}\n"
                "Point CUDA_PATH at a CUDA toolkit that has it (the folder holding include/), "
                "or pass its folder with -I.")
    else:
        what = (f"NVRTC could not compile {name} (options: {' '.join(options)})\n"
                f"CUDA headers from:\n{where}")
    return what


def compile_cuda(source: str, name: str, options: tuple[str, ...] | list[str],
                 headers: dict[str, str] | None = None,
                 name_expressions: tuple[str, ...] | list[str] = (),
                 cuda_includes: bool = True) -> str:
    """CUDA C++ -> PTX with NVRTC. Raises CompileError carrying the compiler log.

    `name_expressions` (C++ names such as `kern<float>`) are instantiated, as
    CuPy's RawModule asks. `cuda_includes` appends the CUDA toolkit's include
    directories (`cuda_include_dirs`) after the caller's options, so a user's
    `-I` is searched first.
    """
    return _nvrtc(source, name, options, headers, name_expressions, cuda_includes, "ptx")


def _nvrtc(source: str, name: str, options, headers: dict[str, str] | None,
           name_expressions, cuda_includes: bool, output: str):
    """Compile with NVRTC and return its PTX (str) or, for output="cubin", its cubin."""
    from cuda.bindings import nvrtc

    found = cuda_include_dirs() if cuda_includes else ()
    headers = headers or {}
    err, prog = nvrtc.nvrtcCreateProgram(
        source.encode(), name.encode(), len(headers),
        [v.encode() for v in headers.values()], [k.encode() for k in headers])
    _check(err, "nvrtcCreateProgram")
    try:
        for expr in name_expressions:
            nvrtc.nvrtcAddNameExpression(prog, expr.encode())
        opts = [o.encode() for o in (*options, *(f"-I{d.path}" for d in found))]
        res = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, n = nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(n)  # never b" " * n: a 1-byte bytes object is a shared singleton
        nvrtc.nvrtcGetProgramLog(prog, log)
        log_text = log.decode(errors="replace").rstrip("\x00")
        if int(res[0]) != 0:
            raise CompileError(_compile_failure(name, options, found, log_text), log_text)
        if output == "cubin":
            _, n = nvrtc.nvrtcGetCUBINSize(prog)
            buf = bytearray(n)
            nvrtc.nvrtcGetCUBIN(prog, buf)
            return bytes(buf)
        _, n = nvrtc.nvrtcGetPTXSize(prog)
        buf = bytearray(n)  # never b" " * n: a 1-byte bytes object is a shared singleton
        nvrtc.nvrtcGetPTX(prog, buf)
        return buf.decode().rstrip("\x00")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


# a function the module defines (a kernel, or a `.func` with a body; not `.extern`)
_DEFINED = re.compile(r"^(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\b[^;{]*\{", re.M)


def link(modules: list[tuple[str, str | bytes]], arch: Arch, extra: tuple[str, ...] = ()) -> bytes:
    """Modules -> one cubin with nvJitLink (device code linked across them).

    A module given as text is PTX (assembled here, under `extra`); one given as bytes is a
    relocatable cubin for `arch`, linked as it is.
    """
    from cuda.bindings import nvjitlink

    opts = [f"-arch={arch.sm}", *extra]
    handle = nvjitlink.create(len(opts), opts)
    try:
        try:
            for name, module in modules:
                kind = nvjitlink.InputType.CUBIN if isinstance(module, bytes) else \
                    nvjitlink.InputType.PTX
                data = module if isinstance(module, bytes) else module.encode()
                nvjitlink.add_data(handle, kind, data, len(data), name)
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
    device-memory table code on its paths). Otherwise the tables are in device memory,
    and the checker is the build for the module's mode (`ins.phase_mode`: phases, else
    vector clocks), with no code for the other. `max_regs` caps the registers of
    every function (the tighter of it and `.maxnreg` wins).

    The checker comes as a cached relocatable cubin built under the same cap
    (`checker_object`), which links to the same bytes as assembling its PTX here;
    other linker options (`extra`) may change how ptxas builds it, so with those
    the checker's PTX is assembled with the module, as before.
    """
    caps = [c for c in (ins.max_regs, max_regs) if c]
    cap = min(caps) if caps else 0
    cap_opt = (f"-maxrregcount={cap}",) if cap else ()
    phase, mc, chunk = checker_variant(ins, psh, vsh)
    preserve = probe_preserve(mc)
    ptx = probe_abi.declare(ins.ptx, preserve) if preserve else ins.ptx
    if extra:
        return link([(name, ptx),
                     ("consan_checker.ptx", checker_ptx(arch, psh, vsh, phase, mc, chunk))],
                    arch, (*extra, *cap_opt))
    return link([(name, ptx),
                 ("consan_checker.cubin", checker_object(arch, psh, vsh, cap, phase, mc, chunk))],
                arch, (*cap_opt, *split_options(ptx)))


def checker_variant(ins, psh: bool, vsh: bool) -> tuple[bool, bool, bool]:
    """(phase, mc, chunk) of the checker build an instrumented module links beside `psh`
    and `vsh` (`_variant_defines` takes all five)."""
    phase = ins.phase_mode and not psh and not vsh  # (device-memory tables: which build)
    mc = ins.multicast and not (psh or phase)  # (vector clocks: runtime.py places them so)
    chunk = ins.chunk_granules and not psh  # (its granules are the module's, in every build)
    return phase, mc, chunk


def split_options(ptx: str) -> tuple[str, ...]:
    """ptxas options that assemble a module's functions on every core at once, where it
    defines more than one (they assemble to the same code: only the ELF's order of sections
    differs). Measured on the H100 machine's 16-core host, medians of 7 links: an unrolled
    bitonic sort (two kernels, two functions) 0.345 -> 0.308 s, a cluster module 0.060 ->
    0.035 s; a one-kernel Triton module 0.174 -> 0.182 s, so not there."""
    return ("-Xptxas=--split-compile=0",) if len(_DEFINED.findall(ptx)) > 1 else ()


def checker_headers() -> dict[str, str]:
    """The headers checker.cu includes, by name: NVRTC gets them with the source."""
    return {p.name: p.read_text() for p in sorted(CHECKER_DIR.glob("*.h"))}


def checker_text() -> str:
    """Every byte of the checker's source (entry file and headers), for cache keys."""
    return "\0".join([CHECKER_SOURCE.read_text(),
                      *(f"{k}\0{v}" for k, v in checker_headers().items())])


def checker_defines() -> tuple[str, ...]:
    """Extra -D options for the checker (CONSAN_CHECKER_DEFINES): measurement switches
    (checker/measure.h)."""
    return tuple(f"-D{d}" for d in os.environ.get("CONSAN_CHECKER_DEFINES", "").split())


def _variant_defines(psh: bool, vsh: bool, phase: bool = False,
                     mc: bool = False, chunk: bool = False) -> tuple[str, ...]:
    """The -D options of one of the device builds: phases or vector clocks, with the
    tables in shared memory (psh, vsh) or in device memory (phase, or the default); `mc`:
    a vector-clock one with the mailboxes of multicast copies (-DCONSAN_MC, for modules
    that reach peer CTAs: other modules' probes do not pay for the look); `chunk`: a
    vector-clock one whose granules are 16-byte chunks (-DCONSAN_CHUNK_GRANULES, for
    modules whose every shared-memory access is whole chunks: Instrumented.chunk_granules).
    A build whose probes keep a calling convention of their own says it too
    (-DCONSAN_ABI_PRESERVE: probe_preserve)."""
    assert psh + vsh + phase <= 1, "one build at a time"
    assert not mc or psh + phase == 0, "multicast: a vector-clock build"
    assert not chunk or not (psh or phase), "chunk granules: vector clocks"
    preserve = probe_preserve(mc)
    return checker_defines() + (("-DCONSAN_PSH",) if psh else ()) + \
        (("-DCONSAN_VSH",) if vsh else ()) + (("-DCONSAN_PHASE_DEV",) if phase else ()) + \
        (("-DCONSAN_MC",) if mc else ()) + (("-DCONSAN_CHUNK_GRANULES",) if chunk else ()) + \
        ((f"-DCONSAN_ABI_PRESERVE={preserve}",) if preserve else ())


def probe_preserve(mc: bool) -> int:
    """The registers a probe call preserves for its caller (`.abi_preserve`, both sides of
    the call: instrument/probe_abi.py), 0 where PTX's default convention is kept.

    The mailbox build's probes take 16: each of them may drain its CTA's mailbox through a
    call, so under the default convention each saved and restored 16-21 registers more
    (`__consan_mbar`, `__consan_access16`, `__consan_bulk`, by `sass_static.py`), and its
    kernels keep few values live across a probe. Measured on the
    H100 (ab_async.py, the device's time alone, one tree under two settings): the clustered
    ring 1.909 -> 1.800 ms with 16; 16 beside 24, 1.790 / 1.809; 16 beside 8, 1.789 / 1.813.
    Every other build keeps the default: with 16 the cp.async GEMM 1.417, the TMA ring 1.037,
    the TMA + wgmma GEMM 1.077 times slower; with 48 1.243, 1.139 and 1.095 (their kernels'
    own values spilled around the calls instead). The link checks one direction only: a
    declaration that says 16 against a default build is refused ("Prototype doesn't
    match"), the other way round links silently, so both sides take N from here.

    CONSAN_ABI_PRESERVE=N (a measurement switch) gives every build N, 0 the default
    convention: how the numbers above were taken (`sass_static.py`, `ab_async.py run
    --env-new CONSAN_ABI_PRESERVE=N`)."""
    forced = os.environ.get("CONSAN_ABI_PRESERVE", "")
    if forced:
        if not forced.isdigit():
            raise ValueError(f"CONSAN_ABI_PRESERVE={forced!r}: give a number of registers "
                             "(0: PTX's default convention)")
        return int(forced)
    return abi.MAILBOX_PRESERVE if mc else 0


# ------------------------------------------------------------------ on-disk cache

def cache_dir() -> Path:
    """Where consan keeps what it built (CONSAN_CACHE, else ~/.cache/consan)."""
    return Path(os.environ.get("CONSAN_CACHE", Path.home() / ".cache" / "consan"))


def cache_write(path: Path, data: bytes | str) -> None:
    """Write a cache entry atomically: a concurrent reader sees all of it or nothing."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        tmp.replace(path)
    except OSError:
        pass  # the cache is an optimisation only


def _checker_options(arch: Arch, defines: tuple[str, ...], cap: int, output: str) -> tuple:
    target = arch.sm if output == "cubin" else arch.compute
    # The cap goes to ptxas alone, as nvJitLink's -maxrregcount does when it assembles the
    # checker's PTX: NVRTC's own -maxrregcount would also steer NVVM and change the code.
    capped = ("-Xptxas", f"-maxrregcount={cap}") if cap else ()
    return ("-rdc=true", f"-arch={target}", "-std=c++17", *defines, *capped)


def checker_cache_key(arch: Arch, defines: tuple[str, ...], cap: int = 0,
                      output: str = "cubin") -> str:
    """What a checker build depends on: consan's version, the checker source and the ABI
    header, the target, the defines, the register cap, NVRTC's version and the output."""
    from consan.version import __version__

    try:
        nv = ".".join(map(str, nvrtc_version()))
    except Exception:  # noqa: BLE001 - the compile itself will say what is wrong
        nv = "?"
    parts = [__version__, nv, output, *_checker_options(arch, defines, cap, output),
             checker_text(), abi.c_header()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def checker_cache_path(arch: Arch, defines: tuple[str, ...], cap: int = 0,
                       output: str = "cubin") -> Path:
    """The cache entry of one checker build (CONSAN_CACHE/checker/<sm>-<key>.<output>)."""
    return cache_dir() / "checker" / f"{arch.sm}-{checker_cache_key(arch, defines, cap, output)}" \
        f".{output}"


_BUILD_LOCKS: dict[tuple, threading.Lock] = {}
_BUILD_LOCKS_GUARD = threading.Lock()
_BUILT: dict[tuple, str | bytes] = {}


def _checker_build(arch: Arch, defines: tuple[str, ...], cap: int, output: str) -> str | bytes:
    """The checker as PTX or relocatable cubin: from memory, else the disk cache, else NVRTC
    (once per process and configuration, whatever the number of threads asking)."""
    mem = (arch, defines, cap, output)
    if mem in _BUILT:
        return _BUILT[mem]
    with _BUILD_LOCKS_GUARD:
        lock = _BUILD_LOCKS.setdefault(mem, threading.Lock())
    with lock:
        if mem in _BUILT:
            return _BUILT[mem]
        path = checker_cache_path(arch, defines, cap, output)
        data = _cached(path, output)
        if data is None:
            with _file_lock(path):  # (another process building it: wait, then read it)
                data = _cached(path, output)
                if data is None:
                    data = _nvrtc(CHECKER_SOURCE.read_text(), "consan_checker.cu",
                                  _checker_options(arch, defines, cap, output),
                                  {"consan_abi.h": abi.c_header(), **checker_headers()}, (),
                                  False, output)
                    cache_write(path, data)
        _BUILT[mem] = data
        return data


def _cached(path: Path, output: str) -> str | bytes | None:
    try:
        return path.read_bytes() if output == "cubin" else path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Held while this process builds `path`'s entry: processes that need the same checker
    build at once (pytest-xdist workers, a program's several launchers) build it once, 10-30
    s of NVRTC each. Where no lock file can be made, each builds its own."""
    try:
        import fcntl

        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path.with_name(path.name + ".lock"), "a")  # noqa: SIM115 - closed below
    except (ImportError, OSError):
        yield
        return
    try:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield
    finally:
        f.close()  # (closing it releases the lock)


def checker_ptx(arch: Arch, psh: bool = False, vsh: bool = False, phase: bool = False,
                mc: bool = False, chunk: bool = False) -> str:
    """The device checker compiled for `arch` (relocatable, so probes link to it)."""
    ptx = _checker_build(arch, _variant_defines(psh, vsh, phase, mc, chunk), 0, "ptx")
    assert isinstance(ptx, str)
    return ptx


def checker_object(arch: Arch, psh: bool = False, vsh: bool = False, cap: int = 0,
                   phase: bool = False, mc: bool = False, chunk: bool = False) -> bytes:
    """The device checker as a relocatable cubin for `arch`, its functions assembled under
    the register cap `cap` (0: none), as nvJitLink would assemble its PTX under that cap."""
    obj = _checker_build(arch, _variant_defines(psh, vsh, phase, mc, chunk), cap, "cubin")
    assert isinstance(obj, bytes)
    return obj
