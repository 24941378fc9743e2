"""Build helpers for the CUDA kernel corpus in ``tests/corpus``.

Every ``*.cu`` file in the corpus is compiled with NVRTC (no include paths: the files are
self-contained and use inline PTX for everything beyond the NVRTC built-ins) into PTX for
several variants, and PTX can be assembled into a cubin with nvJitLink.  Neither step needs a
GPU.

Per-file directives, in ``// consan-corpus: <directive>`` comment lines at the top of a file:

``sm_90a-only``
    the file uses Hopper-only features; it is compiled for ``compute_90a`` only.
``debug``
    the file is additionally compiled with ``-G`` (device debug info, no optimisation).

Compiled PTX is cached under consan's cache directory (``CONSAN_CACHE``, else
``~/.cache/consan``), in ``test-corpus/``, keyed by a hash of the source, the options and the
NVRTC version, as the checker's builds are kept there: repeated test runs are cheap, a fresh
clone's too (in the tree, a clone compiled all of it again: 35 s of CI's 208 s).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import tempfile
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from consan import toolchain

if TYPE_CHECKING:
    from instrument.rewrite import Instrumented

TESTS_DIR = Path(__file__).resolve().parent
CORPUS_DIR = TESTS_DIR / "corpus"
CACHE_DIR = toolchain.cache_dir() / "test-corpus"  # (also the Triton corpora's PTX)

ARCH_AMPERE = "compute_80"
ARCH_HOPPER = "compute_90a"

_DIRECTIVE_RE = re.compile(r"^\s*//\s*consan-corpus:\s*(.+?)\s*$")
_KNOWN_DIRECTIVES = {"sm_90a-only", "debug"}


# The project's own toolchain (consan.toolchain) compiles and assembles the corpus.
NvrtcError = NvJitLinkError = toolchain.CompileError
compile_cuda = toolchain.compile_cuda
nvrtc_version = toolchain.nvrtc_version


def assemble(ptx: str, arch: str, name: str = "module.ptx") -> bytes:
    """Assemble ``ptx`` into a cubin for ``arch`` (e.g. ``"sm_80"``, ``"sm_90a"``), kept on
    disk by its inputs' bytes (`links_kept`)."""
    with links_kept():
        return toolchain.link([(name, ptx)], toolchain.Arch.parse(arch))


# --------------------------------------------------------------------------- corpus


@dataclass(frozen=True)
class CorpusFile:
    path: Path
    directives: frozenset[str]

    @property
    def stem(self) -> str:
        return self.path.stem

    @property
    def sm90a_only(self) -> bool:
        return "sm_90a-only" in self.directives

    @property
    def debug(self) -> bool:
        return "debug" in self.directives

    @property
    def arches(self) -> list[str]:
        return [ARCH_HOPPER] if self.sm90a_only else [ARCH_AMPERE, ARCH_HOPPER]

    def source(self) -> str:
        return self.path.read_text()


@dataclass(frozen=True)
class Variant:
    """One compilation of one corpus file."""

    file: CorpusFile
    arch: str  # "compute_80" / "compute_90a"
    flavour: str  # "O3" (default), "lineinfo" or "G"

    @property
    def label(self) -> str:
        return f"{self.file.stem}/{self.arch}/{self.flavour}"

    @property
    def options(self) -> list[str]:
        opts = [f"-arch={self.arch}", "-std=c++17"]
        if self.flavour == "lineinfo":
            opts.append("-lineinfo")
        elif self.flavour == "G":
            opts.append("-G")
        return opts

    @property
    def sass_arches(self) -> list[str]:
        """Real architectures this variant's PTX must assemble for."""
        if self.arch == ARCH_AMPERE:
            return ["sm_80", "sm_90a"]
        return ["sm_90a"]


def _parse_directives(text: str) -> frozenset[str]:
    found = set()
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _DIRECTIVE_RE.match(line)
        if m is None:
            if line.lstrip().startswith("//"):
                continue  # ordinary header comment
            break  # directives only in the leading comment block
        for d in m.group(1).split(","):
            d = d.strip()
            if d not in _KNOWN_DIRECTIVES:
                raise ValueError(f"unknown consan-corpus directive {d!r}")
            found.add(d)
    return frozenset(found)


def corpus_files() -> list[CorpusFile]:
    files = sorted(CORPUS_DIR.glob("*.cu"))
    return [CorpusFile(p, _parse_directives(p.read_text())) for p in files]


def corpus_variants() -> list[Variant]:
    out = []
    for cf in corpus_files():
        for arch in cf.arches:
            flavours = ["O3", "lineinfo"] + (["G"] if cf.debug else [])
            out.extend(Variant(cf, arch, fl) for fl in flavours)
    return out


def _cache_key(source: str, name: str, options: Sequence[str],
               headers: dict[str, str] | None = None) -> str:
    h = hashlib.sha256()
    h.update(repr(nvrtc_version()).encode())
    h.update(b"\0")
    h.update(name.encode())
    h.update(b"\0")
    h.update("\0".join(options).encode())
    h.update(b"\0")
    h.update(source.encode())
    for k, v in sorted((headers or {}).items()):  # (none: the key it always was)
        h.update(f"\0{k}\0{v}".encode())
    return h.hexdigest()


def compile_cached(source: str, name: str, options: Sequence[str],
                   headers: dict[str, str] | None = None) -> str:
    """:func:`compile_cuda` with an on-disk cache under :data:`CACHE_DIR` (`headers`, the
    sources NVRTC gets beside it by name, are in the key)."""
    ptx = _compile_cached(source, name, options, wait=True, headers=headers)
    assert ptx is not None
    return ptx


@contextlib.contextmanager
def _locked(path: Path, wait: bool) -> Iterator[bool]:
    """Holds ``path`` (a lock file) while this process compiles its entry; yields False at
    once, without it, where another process holds it and ``wait`` is False. Where no lock
    can be taken (no fcntl), every process compiles for itself."""
    try:
        import fcntl

        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        f = open(path, "a")  # noqa: SIM115 - closed below
    except (ImportError, OSError):
        yield True
        return
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        f.close()  # (closing it releases the lock)


def _compile_cached(source: str, name: str, options: Sequence[str], wait: bool,
                    headers: dict[str, str] | None = None) -> str | None:
    """The cached PTX, else compiled here; None where ``wait`` is False and another process
    is compiling it now (pytest-xdist workers start on the same corpus at once: each
    compiled all of it, 15 s of NVRTC on both of CI's two cores)."""
    key = _cache_key(source, name, options, headers)
    path = CACHE_DIR / f"{key}.ptx"
    with contextlib.suppress(FileNotFoundError):
        return path.read_text()
    with _locked(CACHE_DIR / f"{key}.lock", wait) as held:
        if not held:
            return None
        with contextlib.suppress(FileNotFoundError):
            return path.read_text()  # (the other process made it while we waited)
        ptx = compile_cuda(source, name, options, headers=headers)
        fd, tmp = tempfile.mkstemp(dir=CACHE_DIR, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(ptx)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return ptx


def tool_identity(path: str) -> str:
    """What names the build of a tool binary in a cache key: its size and a digest of its
    bytes. Not its path or mtime: each fresh virtualenv installs the same build (ptxas,
    nvJitLink, nvdisasm from the wheels) at another path, so a fresh clone's first run
    linked and assembled the whole corpus again (CI on a fresh clone: 264 s, the same
    command again in that clone 160 s)."""
    st = os.stat(path)
    return f"{st.st_size}\0{_digest(os.path.realpath(path), st.st_size, st.st_mtime_ns)}"


@functools.cache
def _digest(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of the file at `path` (once a process for each size and mtime it has)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def kept(kind: str, parts: Sequence[str | bytes], make: Callable[[], str]) -> str:
    """`make()`, a deterministic tool's text output for the inputs `parts` name (the tool's
    `tool_identity`, its options and every byte it reads), kept on disk under
    CACHE_DIR/kind/ as the corpus's PTX is: a run whose inputs are byte for byte a previous
    run's reads the answer back instead of running the tool again. What `make` raises is
    not kept."""
    return kept_bytes(kind, parts, lambda: make().encode("utf-8", "surrogateescape")).decode(
        "utf-8", "surrogateescape")


def kept_bytes(kind: str, parts: Sequence[str | bytes], make: Callable[[], bytes]) -> bytes:
    """`kept` for a tool whose output is bytes (a cubin)."""
    path = _kept_path(kind, parts)
    with contextlib.suppress(FileNotFoundError, zlib.error):
        return zlib.decompress(path.read_bytes())
    data = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(zlib.compress(data, 1))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return data


def kept_answer(kind: str, parts: Sequence[str | bytes]) -> str | None:
    """What `kept(kind, parts, ...)` would read back from disk, else None (the tool is not
    run)."""
    with contextlib.suppress(FileNotFoundError, zlib.error):
        return zlib.decompress(_kept_path(kind, parts).read_bytes()).decode(
            "utf-8", "surrogateescape")
    return None


def _kept_path(kind: str, parts: Sequence[str | bytes]) -> Path:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    return CACHE_DIR / kind / f"{h.hexdigest()}.z"


@functools.cache
def nvjitlink_identity() -> str:
    """What names the nvJitLink build toolchain.link runs in a cache key: its version and
    the library's `tool_identity` (the one this process loaded, where /proc says)."""
    version = toolchain.nvjitlink_version()  # (loads the library)
    libs = set()
    with contextlib.suppress(OSError):
        with open("/proc/self/maps") as f:
            libs = {ln.split()[-1] for ln in f if "libnvJitLink" in ln}
    return "\0".join([version, *(tool_identity(p) for p in sorted(libs))])


_product_link = toolchain.link
_keep_links = threading.local()


def _link(modules: list[tuple[str, str | bytes]], arch: toolchain.Arch,
          extra: tuple[str, ...] = ()) -> bytes:
    """toolchain.link; inside `links_kept()` (this thread's), its cubin kept on disk by
    `kept_bytes`, keyed by nvJitLink's identity, the target, the options and every module's
    name, kind and bytes (a link that fails raises, as ever, and is not kept)."""
    if not getattr(_keep_links, "on", False):
        return _product_link(modules, arch, extra)
    parts: list[str | bytes] = [nvjitlink_identity(), arch.sm, *extra]
    for name, module in modules:
        parts += [name, "cubin" if isinstance(module, bytes) else "ptx", module]
    return kept_bytes("link", parts, lambda: _product_link(modules, arch, extra))


@contextlib.contextmanager
def links_kept() -> Iterator[None]:
    """Within it, this thread's nvJitLink links (toolchain.link, and so
    toolchain.link_with_checker and `assemble`) are kept on disk by their inputs' bytes:
    the corpus tests assemble the same modules with the same checker objects run after run
    (test_rewrite's links alone were 30 s of a warm run's 140)."""
    if toolchain.link is _product_link:
        toolchain.link = _link  # (transparent outside links_kept())
    before = getattr(_keep_links, "on", False)
    _keep_links.on = True
    try:
        yield
    finally:
        _keep_links.on = before


def default_workers() -> int:
    return max(2, min(8, os.cpu_count() or 2))


def compile_variants(variants: Sequence[Variant]) -> list[tuple[Variant, str]]:
    """Compile ``variants`` in parallel (NVRTC releases the GIL). Order is preserved."""
    ptxs = compile_all(variants)
    for ptx in ptxs:
        if isinstance(ptx, Exception):
            raise ptx
    return list(zip(variants, ptxs, strict=True))  # type: ignore[arg-type]


def compile_all(variants: Sequence[Variant]) -> list[str | NvrtcError]:
    """Each variant's PTX, or the NvrtcError compiling it raised, in order. The variants
    another process is compiling now are left to it and read back once it is done."""

    def one(v: Variant, wait: bool) -> str | NvrtcError | None:
        try:
            return _compile_cached(v.file.source(), v.file.path.name, v.options, wait)
        except NvrtcError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=default_workers()) as pool:
        got = list(pool.map(lambda v: one(v, False), variants))
        later = [i for i, r in enumerate(got) if r is None]
        for i, r in zip(later, pool.map(lambda i: one(variants[i], True), later), strict=True):
            got[i] = r
    return got  # type: ignore[return-value]


def corpus_modules() -> list[tuple[Variant, str]]:
    """All corpus variants with their PTX."""
    return compile_variants(corpus_variants())


def corpus_ptx() -> list[tuple[str, str]]:
    """``(label, ptx_text)`` for every corpus file and applicable variant.

    Labels look like ``"reduce_smem/compute_80/lineinfo"``.
    """
    return [(v.label, ptx) for v, ptx in corpus_modules()]


@functools.cache
def instrumented(label: str, ptx: str) -> tuple[Instrumented, toolchain.Arch]:
    """``ptx`` parsed as ``label`` and instrumented, and its target: once per process for
    each module (`first_linked`'s rewrite)."""
    from instrument.ptx import parse
    from instrument.rewrite import instrument

    mod = parse(ptx, label)
    arch = toolchain.Arch.parse(mod.target[0])  # (read before the rewriter has the module)
    return instrument(mod), arch


@functools.cache
def first_linked(label: str, ptx: str) -> tuple[Instrumented, toolchain.Arch, bytes]:
    """``ptx`` instrumented (`instrumented`), its target, and the cubin a checked launch of
    256 threads links first (runtime.first_link) with the checker: once per process for
    each module, as test_rewrite.py and test_rejoin.py both assemble the same corpus modules
    so (ptxas took 6.4 s of CI's time twice). Its inputs are all in the key: the text and
    its label. The cubin is kept on disk by its inputs' bytes (`links_kept`)."""
    from consan import runtime

    ins, arch = instrumented(label, ptx)
    with links_kept():  # (the link, not the rewrite: that is what the tests check)
        return ins, arch, toolchain.link_with_checker(ins, label, arch,
                                                      **runtime.first_link(ins, 256))


if __name__ == "__main__":  # pragma: no cover - manual use
    import sys

    outdir = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    for label, ptx in corpus_ptx():
        print(f"{label}: {len(ptx.splitlines())} lines")
        if outdir is not None:
            dst = outdir / (label.replace("/", "__") + ".ptx")
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(ptx)
