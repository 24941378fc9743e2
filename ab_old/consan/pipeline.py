"""Build an instrumented module: everything but device state, and no GPU needed.

CUDA C++ (or PTX) -> NVRTC -> PTX -> instrument -> nvJitLink with the checker
-> cubin (when the runtime first asks for it), through the on-disk cache. `consan
instrument` runs these steps without loading numpy or CuPy; runtime.py puts the result
on the device.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

from instrument import abi, occupancy
from instrument.ptx import parse
from instrument.rewrite import Instrumented, instrument

from . import proof_cache, toolchain
from .toolchain import is_ptx
from .version import __version__

DEFAULT_SOURCE_NAME = "kernel.cu"


@dataclass
class Build:
    """An instrumented module: everything but device state. Its cubins are linked when
    first asked for, each with the checker build its placement needs (runtime.Prepared
    picks one): a kernel proven race-free before launch never needs one, and a checked
    one needs one of the three, not the device-memory build first and its own after."""

    instrumented: Instrumented
    arch: toolchain.Arch
    source_name: str
    ptx: str = field(repr=False)  # (the input: a link error names its lines)
    _cubins: dict[tuple, bytes] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def cubin(self) -> bytes:
        """Linked with the checker that keeps its tables in device memory (cached)."""
        return self.linked()

    def linked(self, psh: bool = False, max_regs: int = 0, vsh: bool = False,
               hold: tuple[str, int, int] | None = None, cluster_chunks: bool = False) -> bytes:
        """Linked with one checker build, once: `psh` the phase-mode one with its tables in
        shared memory (under `max_regs`), `vsh` the vector-clock one with its buffer tables
        there, else the one whose tables are in device memory. `hold` (kernel, CTAs,
        threads): that kernel held to that many resident CTAs of that many threads per SM
        (instrument/occupancy.py). `cluster_chunks`: a cluster module of whole chunks with
        chunk granules (Instrumented.cluster_chunks)."""
        key = (psh, max_regs, vsh, hold, cluster_chunks)
        with self._lock:  # (two threads launching the kernel link it once)
            if key not in self._cubins:
                ins = self.instrumented
                if cluster_chunks:
                    assert ins.multicast and ins.chunks_exact, "chunk granules are not exact"
                    ins = replace(ins, cluster_chunks=True)
                if hold is not None:
                    ins = occupancy.hold_ctas(ins, *hold)
                self._cubins[key] = link(ins, self.ptx, self.source_name, self.arch,
                                         psh=psh, max_regs=max_regs, vsh=vsh)
            return self._cubins[key]


def _cache_dir() -> Path:
    """The on-disk cache (CONSAN_CACHE); the checker objects live there too."""
    return toolchain.cache_dir()


def build(source: str, options: tuple[str, ...] = (), arch: toolchain.Arch | None = None,
          source_name: str = DEFAULT_SOURCE_NAME, value_tags: bool = False) -> Build:
    """Compile (if CUDA), instrument and link for the -arch of `options`, else `arch`
    (runtime.build takes the device's when neither names one). `value_tags`: see
    instrument.rewrite.instrument."""
    rest, opt_arch = toolchain.split_arch(tuple(options))
    arch = opt_arch or arch
    if arch is None:
        raise ValueError("no target architecture: give arch or an -arch option")
    ptx, name = compile_ptx(source, rest, arch, source_name)
    ins = instrument(parse(ptx, name), value_tags=value_tags)
    ins.prove_at = proof_cache.cached(ins.prove_at, ptx)
    if not is_ptx(source):
        _name_source(ins, source, source_name)
    return Build(ins, arch, name, ptx)


def compile_ptx(source: str, options: list[str], arch: toolchain.Arch,
                source_name: str = DEFAULT_SOURCE_NAME) -> tuple[str, str]:
    """(PTX, its name) of CUDA C++ (NVRTC, with line info) or of PTX given as it is."""
    if is_ptx(source):
        return source, source_name if source_name.endswith(".ptx") else "kernel.ptx"
    if source_name.endswith(".ptx"):  # (named PTX, not PTX: say what is missing, not NVRTC's)
        missing = [d for d in (".version", ".target") if not re.search(
            rf"^\s*\{d}\s", source, re.M)]
        raise toolchain.CompileError(
            f"{source_name} is named as PTX but has no {' or '.join(missing)} directive: PTX "
            "begins with `.version 8.0` and `.target sm_90a` lines (as nvcc -ptx writes it); "
            "CUDA C++ goes in a .cu file", "")
    rest = list(options)
    if not any(o in ("-G", "--device-debug", "-lineinfo", "--generate-line-info") for o in rest):
        rest.append("-lineinfo")
    return (toolchain.compile_cuda(source, source_name, [f"-arch={arch.compute}", *rest]),
            source_name + ".ptx")


def link(ins: Instrumented, ptx: str, name: str, arch: toolchain.Arch, psh: bool = False,
         max_regs: int = 0, vsh: bool = False) -> bytes:
    """The instrumented PTX linked with a checker build (cached; `psh`, `max_regs`, `vsh`:
    as toolchain.link_with_checker); a link error names the lines of `ptx`, the input the
    instrumented PTX was made from, not those of the rewrite."""
    try:
        return _linked(ins, name, arch, psh, max_regs, vsh)
    except toolchain.CompileError as e:
        from instrument.lineinfo import explain_ptxas_log

        head = str(e).split("\n", 1)[0]
        raise toolchain.CompileError(head, explain_ptxas_log(
            e.log, ins.ptx, ptx, name, skip=toolchain.CHECKER_MODULES)) from None


def _linked(ins: Instrumented, name: str, arch: toolchain.Arch, psh: bool = False,
            max_regs: int = 0, vsh: bool = False) -> bytes:
    """Link with the checker, through the on-disk cache."""
    link_opts = tuple(os.environ.get("CONSAN_LINK_OPTIONS", "").split())
    path = _cache_dir() / f"{link_key(ins, arch, psh, max_regs, vsh, link_opts)}.cubin"
    cubin = path.read_bytes() if path.exists() else None
    if cubin is None:
        cubin = toolchain.link_with_checker(ins, name, arch, link_opts, psh=psh,
                                            max_regs=max_regs, vsh=vsh)
        cache_put(path, cubin)
    return cubin


def link_key(ins: Instrumented, arch: toolchain.Arch, psh: bool, max_regs: int, vsh: bool,
             link_opts: tuple[str, ...]) -> str:
    """The on-disk cache's name for a linked module: everything link_with_checker reads,
    the probes' calling convention included (link_with_checker changes the declarations in
    `ins.ptx`: without it in the key, a run under CONSAN_ABI_PRESERVE took the cubin linked
    without the switch)."""
    mc = toolchain.checker_variant(ins, psh, vsh)[1]
    return hashlib.sha256(
        "\0".join([__version__, arch.sm, toolchain.nvjitlink_version(),
                   repr(toolchain.nvrtc_version()), *link_opts,
                   *toolchain.checker_defines(), ins.ptx,
                   f"psh{max_regs}" if psh else "", "vsh" if vsh else "",
                   "chunk" if ins.chunk_granules else "",
                   f"abi{toolchain.probe_preserve(mc)}",
                   toolchain.checker_text(),
                   abi.c_header()]).encode()
    ).hexdigest()[:32]


def cache_put(path: Path, data: bytes | str) -> None:
    """Write a cache entry atomically (a concurrent reader sees all of it or nothing)."""
    toolchain.cache_write(path, data)


def _name_source(ins: Instrumented, source: str, source_name: str) -> None:
    """NVRTC prefixes its working directory to the program name; report the name given."""
    base = os.path.basename(source_name)
    for i, s in enumerate(ins.sites.sites):
        fix = {}
        if s.loc and os.path.basename(s.loc.file) == base:
            fix["loc"] = replace(s.loc, file=source_name)
        chain = tuple(replace(c, file=source_name) if os.path.basename(c.file) == base else c
                      for c in s.inlined_at)
        if chain != s.inlined_at:
            fix["inlined_at"] = chain
        if fix:
            ins.sites.sites[i] = replace(s, **fix)
    ins.sites.sources[source_name] = source
