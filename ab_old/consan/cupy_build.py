"""Rebuild, instrumented, a module CuPy compiled: same source, options and template names.

CuPy hands its compiler the CUDA source, its options and the C++ name
expressions; we compile the same to PTX with NVRTC (adding the template
instantiations the name expressions ask for and `-lineinfo`), cache that PTX
on disk, and let `runtime.build` instrument and link it (which caches the
cubin). Line info then names the Python file and line where the kernel's
source string is written, when that string can be found verbatim, so reports
and SARIF point at the user's code rather than at a temporary file.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from instrument.rewrite import demangle

from . import runtime, toolchain

_CUPY_ADDED = ("-ftz=true", "--device-as-default-execution-space")
_LINEINFO = ("-G", "--device-debug", "-lineinfo", "--generate-line-info")


@dataclass
class CompileSpec:
    """What CuPy compiled, as `_compile_module_with_cache` (or a `.ptx` path) received it."""

    source: str | None = None  # CUDA C++; None for a PTX file
    options: tuple[str, ...] = ()
    name_expressions: tuple[str, ...] | None = None
    arch: str | None = None  # CuPy's arch argument, e.g. "90"
    ptx_path: str | None = None
    candidates: tuple[str, ...] = ()  # Python files that may hold the source string


def _cache_dir() -> Path:
    return Path(os.environ.get("CONSAN_CACHE", Path.home() / ".cache" / "consan"))


def target_arch(spec: CompileSpec) -> toolchain.Arch:
    _, arch = toolchain.split_arch(spec.options)
    if arch is not None:
        return arch
    if spec.arch:
        cc = str(spec.arch)
        return toolchain.Arch.for_device(int(cc[:-1]), int(cc[-1]))
    return runtime.device_arch()


def program_name(source: str) -> str:
    return f"consan_{hashlib.sha256(source.encode()).hexdigest()[:12]}.cu"


def cuda_to_ptx(spec: CompileSpec, arch: toolchain.Arch) -> str:
    """The PTX of a CuPy compile, from the on-disk cache when we have made it before."""
    assert spec.source is not None
    rest, _ = toolchain.split_arch(spec.options)
    opts = [f"-arch={arch.compute}", *rest]
    opts += [o for o in _CUPY_ADDED if o not in opts]
    if not any(o in _LINEINFO for o in opts):
        opts.append("-lineinfo")
    name = program_name(spec.source)
    nvrtc_version = ".".join(map(str, toolchain.nvrtc_version()))
    key = hashlib.sha256("\0".join([
        runtime.__version__, nvrtc_version, spec.source, *opts, "names",
        *(spec.name_expressions or ())]).encode()).hexdigest()[:32]
    path = _cache_dir() / "ptx" / f"{key}.ptx"
    try:
        return path.read_text()
    except OSError:
        pass
    ptx = toolchain.compile_cuda(spec.source, name, opts,
                               name_expressions=spec.name_expressions or ())
    runtime.cache_put(path, ptx)
    return ptx


def build(spec: CompileSpec) -> tuple[runtime.Build, list[str]]:
    """The instrumented module and the names of its user globals (mirrored around launches)."""
    arch = target_arch(spec)
    if spec.ptx_path is not None:
        ptx = Path(spec.ptx_path).read_text()
        b = runtime.build(ptx, arch=arch, source_name=os.path.basename(spec.ptx_path))
        return b, ptx_globals(ptx)
    ptx = cuda_to_ptx(spec, arch)
    name = program_name(spec.source or "")
    b = runtime.build(ptx, arch=arch, source_name=name + ".ptx")
    place_source(b, name, spec.source or "", spec.candidates)
    return b, ptx_globals(ptx)


# ------------------------------------------------------------------ globals

_DECL = re.compile(r"^\s*(?:\.(?:visible|weak|common)\s+)*\.(?:global|const)\s")


def ptx_globals(ptx: str) -> list[str]:
    """Module-scope `.global`/`.const` variables the user's code defines.

    The instrumented module is a second copy of the user's module: its
    `__constant__` and `__device__` variables must be copied in before a
    launch and back after, or the kernel reads what the user never wrote.
    """
    names = []
    for line in ptx.splitlines():
        if not _DECL.match(line) or ".extern" in line.split("=", 1)[0]:
            continue
        decl = line.split("=", 1)[0].split(";", 1)[0]
        decl = re.sub(r"\[[^\]]*\]", " ", decl).split()
        if decl:
            name = decl[-1]
            if not name.startswith(("$", "__consan", ".")):
                names.append(name)
    return names


# ------------------------------------------------------------------ sources

_FILE_TEXT: dict[str, tuple[float, str]] = {}


def _read(path: str) -> str | None:
    try:
        mtime = os.path.getmtime(path)
        hit = _FILE_TEXT.get(path)
        if hit is not None and hit[0] == mtime:
            return hit[1]
        text = Path(path).read_text(errors="replace")
    except (OSError, ValueError):
        return None
    _FILE_TEXT[path] = (mtime, text)
    return text


def find_source(source: str, candidates: tuple[str, ...]) -> tuple[str, int, int] | None:
    """(file, line offset, column offset of line 1) of `source` written in a candidate file."""
    if len(source.strip()) < 16:
        return None
    for path in dict.fromkeys(candidates):
        text = _read(path)
        if not text:
            continue
        idx = text.find(source)
        if idx >= 0:
            start = text.rfind("\n", 0, idx) + 1
            return path, text.count("\n", 0, idx), idx - start
        hit = _find_by_lines(source, text)
        if hit is not None:
            return path, hit[0], hit[1]
    return None


def _find_by_lines(source: str, text: str) -> tuple[int, int] | None:
    """A source string written with escapes (not a raw string): match line by line."""
    src = source.split("\n")
    lines = text.split("\n")
    body = [s.strip() for s in src[1:-1]]
    if len([b for b in body if b]) < 2:
        return None
    first = src[0].strip()
    for i in range(len(lines) - len(src) + 1):
        if [ln.strip() for ln in lines[i + 1:i + len(src) - 1]] != body:
            continue
        head = lines[i]
        if first and not head.rstrip().endswith(first):
            continue
        col = len(head.rstrip()) - len(first) if first else len(head)
        return i, col
    return None


def map_pieces(source: str, candidates: tuple[str, ...]) -> dict[int, tuple[str, int]]:
    """Source line (1-based) -> (file, line) for a source the program built from pieces
    (`HEAD + r\"\"\"...\"\"\"`): runs of at least three lines, or 40 characters, found
    verbatim in a candidate file, longest first from each line on."""
    texts = [(p, t) for p in dict.fromkeys(candidates) if (t := _read(p))]
    lines, out, i = source.split("\n"), {}, 0
    while i < len(lines):
        best: tuple[int, str, int] | None = None  # (end, path, offset)
        for path, text in texts:
            j, at = i, -1
            while j < len(lines):
                found = text.find("\n".join(lines[i:j + 1]))
                if found < 0:
                    break
                j, at = j + 1, found
            block = "\n".join(lines[i:j])
            if at >= 0 and (j - i >= 3 or len(block.strip()) >= 40) and \
                    (best is None or j > best[0]):
                best = (j, path, at)
        if best is None:
            i += 1
            continue
        end, path, at = best
        first = next(t for p, t in texts if p == path).count("\n", 0, at) + 1
        for k in range(i, end):
            out[k + 1] = (path, first + k - i)
        i = end
    return out


def place_source(b: runtime.Build, program: str, source: str,
                 candidates: tuple[str, ...]) -> None:
    """Name the user's file and line in the site table (or a readable stand-in name)."""
    sites = b.instrumented.sites
    hit = find_source(source, candidates)
    pieces: dict[int, tuple[str, int]] = {}
    if hit is not None:
        target, line_off, col_off = hit
        sites.sources[target] = _read(target) or ""
    else:
        kernels = b.instrumented.kernels
        label = demangle(kernels[0]) if kernels else "kernel"
        target, line_off, col_off = f"<CuPy source of {label}>", 0, 0
        sites.sources[target] = source
        pieces = map_pieces(source, candidates)
        for path in {p for p, _ in pieces.values()}:
            sites.sources[path] = _read(path) or ""

    def move(loc):
        if loc is None or os.path.basename(loc.file) != program:
            return loc
        if loc.line in pieces:  # a piece of a source the program put together
            path, line = pieces[loc.line]
            return replace(loc, file=path, line=line)
        col = loc.col + (col_off if loc.line == 1 and loc.col else 0)
        return replace(loc, file=target, line=loc.line + line_off, col=col)

    for i, s in enumerate(sites.sites):
        loc = move(s.loc)
        chain = tuple(move(c) for c in s.inlined_at)
        if loc is not s.loc or chain != s.inlined_at:
            sites.sites[i] = replace(s, loc=loc, inlined_at=chain)
    # The not-modelled list names the same lines as the findings.
    b.instrumented.unmodeled = [replace(u, loc=move(u.loc),
                                        inlined_at=tuple(move(c) for c in u.inlined_at))
                                for u in b.instrumented.unmodeled]


# ------------------------------------------------------------------ frames

_INTERNAL = tuple(os.path.dirname(p) + os.sep for p in (
    __file__, runtime.__file__))


# (triton and torch: a Triton kernel's launch goes through their frames, and Inductor's)
_FRAMEWORKS = ("cupy", "cupyx", "cupy_backends", "runpy", "_pytest", "pluggy", "importlib",
               "triton", "torch")
_roots_for: tuple[tuple[bool, ...], tuple[str, ...]] | None = None


def _internal_roots() -> tuple[str, ...]:
    """The directories (and files) whose frames are not the user's: kept until one of the
    frameworks is first imported (every launch asks: recomputed, it was half of the 27 us
    a proven launch's own Python took)."""
    global _roots_for
    present = tuple(name in sys.modules for name in _FRAMEWORKS)
    if _roots_for is not None and _roots_for[0] == present:
        return _roots_for[1]
    roots = list(_INTERNAL)
    for name in _FRAMEWORKS:
        mod = sys.modules.get(name)
        f = getattr(mod, "__file__", None)
        if f:
            roots.append(os.path.dirname(f) + os.sep if name not in ("runpy",) else f)
    _roots_for = (present, tuple(roots))
    return _roots_for[1]


_user_code: dict[Any, bool] = {}  # code object -> whether its frames are the user's
_user_code_roots: tuple[str, ...] = ()


def user_frames(limit: int = 64) -> list[tuple[str, int]]:
    """(file, line) of the calling frames that are not CuPy, consan or the import machinery
    (each code object judged once: a Triton launch walks some 20 frames at every launch)."""
    global _user_code, _user_code_roots
    roots = _internal_roots()
    if roots is not _user_code_roots or len(_user_code) > 10_000:  # (code made by exec)
        _user_code, _user_code_roots = {}, roots
    out = []
    f = sys._getframe(1)
    while f is not None and len(out) < limit:
        code = f.f_code
        mine = _user_code.get(code)
        if mine is None:
            name = code.co_filename
            mine = _user_code[code] = not name.startswith("<") and not name.startswith(roots)
        if mine:
            out.append((code.co_filename, f.f_lineno))
        f = f.f_back
    return out


def module_files(roots: tuple[str, ...]) -> list[str]:
    """Files of loaded modules under the program's own directories (not installed packages)."""
    if not roots:
        return []
    skip = tuple(p for p in {sys.prefix, sys.base_prefix, sys.exec_prefix} if p)
    out = []
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if f and f.endswith(".py") and f.startswith(roots) and not f.startswith(skip):
            out.append(f)
    return out
