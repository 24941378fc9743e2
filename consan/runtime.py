"""Build, launch and read back an instrumented kernel.

CUDA C++ (or PTX) -> NVRTC -> PTX -> instrument -> nvJitLink with the checker
-> cubin -> CuPy Module. The shadow tables live in device memory and belong
to shadow *slots*, one per CTA that can be resident at once, not one per CTA
of the grid; a CTA claims a free slot at entry and bumps its generation, so
nothing is cleared between CTAs. Violation records go to mapped pinned host
memory, which stays readable when the user's kernel crashes the context.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from instrument import abi
from instrument.ptx import parse
from instrument.rewrite import Instrumented, demangle, instrument
from reports import Report

from . import tma, toolchain
from .errors import ConsanError, NoGPUError
from .toolchain import is_ptx
from .version import __version__  # noqa: E402,F401  (re-exported)

LOG_CAPACITY = 1 << 16  # records kept per launch (the rest are counted)
DEFAULT_SOURCE_NAME = "kernel.cu"
_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_CU_FUNC_ATTRIBUTE_NUM_REGS = 4


def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - any failure means "no usable GPU"
        return False


def _require_gpu():
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except Exception as exc:  # noqa: BLE001
        raise NoGPUError(f"consan needs a CUDA GPU to run kernels, and none is usable here "
                         f"({type(exc).__name__}: {exc}).") from None
    raise NoGPUError("consan needs a CUDA GPU to run kernels, and none is present.")


def device_arch():
    cupy = _require_gpu()
    dev = cupy.cuda.Device()
    major, minor = dev.compute_capability[:-1], dev.compute_capability[-1]
    return toolchain.Arch.for_device(int(major), int(minor))


@dataclass
class Build:
    """An instrumented module, assembled: everything but device state."""

    cubin: bytes
    instrumented: Instrumented
    arch: toolchain.Arch
    source_name: str
    _psh: dict[int, bytes] = field(default_factory=dict, repr=False)
    _vsh: bytes | None = field(default=None, repr=False)

    def psh_cubin(self, max_regs: int) -> bytes:
        """The same module linked with the shared-memory phase-mode checker (cached)."""
        if max_regs not in self._psh:
            self._psh[max_regs] = _linked(self.instrumented, self.source_name, self.arch,
                                          psh=True, max_regs=max_regs)
        return self._psh[max_regs]

    def vsh_cubin(self) -> bytes:
        """The same module linked with the vector-clock checker whose buffer tables are in
        shared memory (cached)."""
        if self._vsh is None:
            self._vsh = _linked(self.instrumented, self.source_name, self.arch, vsh=True)
        return self._vsh


def _cache_dir() -> Path:
    """The on-disk cache (CONSAN_CACHE); the checker objects live there too."""
    return toolchain.cache_dir()


def build(source: str, options: tuple[str, ...] = (), arch: toolchain.Arch | None = None,
          source_name: str = DEFAULT_SOURCE_NAME) -> Build:
    """Compile (if CUDA), instrument and link. Needs no GPU when `arch` is given."""
    rest, opt_arch = toolchain.split_arch(tuple(options))
    arch = opt_arch or arch or device_arch()
    if is_ptx(source):
        ptx = source
        name = source_name if source_name.endswith(".ptx") else "kernel.ptx"
    else:
        if not any(o in ("-G", "--device-debug", "-lineinfo", "--generate-line-info")
                   for o in rest):
            rest.append("-lineinfo")
        ptx = toolchain.compile_cuda(source, source_name, [f"-arch={arch.compute}", *rest])
        name = source_name + ".ptx"
    ins = instrument(parse(ptx, name))
    if not is_ptx(source):
        _name_source(ins, source, source_name)
    try:
        cubin = _linked(ins, name, arch)
    except toolchain.CompileError as e:  # its lines are of our rewrite: name the user's
        from instrument.lineinfo import explain_ptxas_log

        head = str(e).split("\n", 1)[0]
        raise toolchain.CompileError(head, explain_ptxas_log(
            e.log, ins.ptx, ptx, name, skip=toolchain.CHECKER_MODULES)) from None
    return Build(cubin, ins, arch, name)


def _linked(ins: Instrumented, name: str, arch: toolchain.Arch, psh: bool = False,
            max_regs: int = 0, vsh: bool = False) -> bytes:
    """Link with the checker, through the on-disk cache."""
    link_opts = tuple(os.environ.get("CONSAN_LINK_OPTIONS", "").split())
    key = hashlib.sha256(
        "\0".join([__version__, arch.sm, toolchain.nvjitlink_version(), *link_opts,
                   *toolchain.checker_defines(), ins.ptx,
                   f"psh{max_regs}" if psh else "", "vsh" if vsh else "",
                   toolchain.checker_text(),
                   abi.c_header()]).encode()
    ).hexdigest()[:32]
    path = _cache_dir() / f"{key}.cubin"
    cubin = path.read_bytes() if path.exists() else None
    if cubin is None:
        cubin = toolchain.link_with_checker(ins, name, arch, link_opts, psh=psh,
                                            max_regs=max_regs, vsh=vsh)
        cache_put(path, cubin)
    return cubin


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


def resolve_kernel(ins: Instrumented, kernel: str) -> str:
    if kernel in ins.kernels:
        return kernel
    matches = [k for k in ins.kernels if demangle(k) == kernel]
    if len(matches) == 1:
        return matches[0]
    have = ", ".join(ins.kernels) or "(none)"
    hint = " (several overloads match; pass the mangled name)" if matches else ""
    raise ConsanError(f"kernel {kernel!r} is not in this module{hint}; its kernels are: {have}")


def _dim3(v) -> tuple[int, int, int]:
    t = (v,) if isinstance(v, int) else tuple(v)
    t = tuple(int(x) for x in t) + (1,) * (3 - len(t))
    if len(t) != 3 or min(t) < 1:
        raise ConsanError(f"bad launch dimension {v!r}: give 1 to 3 positive integers")
    return t  # type: ignore[return-value]


def psh_max_regs(nthreads: int) -> int:
    """Register cap for a kernel linked with the phase-mode checker.

    ptxas places the kernel's live registers above those its callees use, so
    probes push a kernel far above its native count (sgemm: 70 -> 136, one CTA
    per SM). The cap keeps 24 warps (37.5% occupancy) resident per SM as far as
    registers go, and any block launchable; the spills it costs around probe
    calls are cheaper than the lost warps (benchmarks/RESULTS.md: sgemm 128
    registers 48x, 80 registers 36x). CONSAN_PSH_MAXREG overrides it.
    """
    env = int(os.environ.get("CONSAN_PSH_MAXREG", "0") or 0)
    threads = max(nthreads, 32)
    ctas = -(-768 // threads)
    return env or max(32, min(128, 65536 // (threads * ctas) // 8 * 8))


_WINDOW_BASE: dict[int, int] = {}
_WINDOW_BASE_SRC = r"""
extern "C" __global__ void consan_window_base(unsigned* out) {
    __shared__ unsigned s;
    extern __shared__ unsigned d[];
    s = 1u;
    d[0] = 1u;
    out[0] = (unsigned)__cvta_generic_to_shared(&s);
    out[1] = (unsigned)__cvta_generic_to_shared(d);
}
"""


def smem_window_base() -> int:
    """The lowest shared-memory address a kernel's own data gets on this device: the
    hardware reserves the first bytes of the window (1 KiB on sm_80 and later), and the
    granule tables in shared memory skip them. Measured once per device with a tiny
    kernel (the address of its static and of its dynamic shared memory); 0 if that fails,
    which only costs the tables the reserved bytes."""
    cupy = _require_gpu()
    dev = cupy.cuda.Device().id
    if dev not in _WINDOW_BASE:
        try:
            arch = device_arch()
            ptx = toolchain.compile_cuda(_WINDOW_BASE_SRC, "consan_window_base.cu",
                                         [f"-arch={arch.compute}"])
            mod = cupy.cuda.function.Module()
            mod.load(toolchain.link([("consan_window_base.ptx", ptx)], arch))
            out = cupy.zeros(2, dtype=np.uint32)
            mod.get_function("consan_window_base")((1, 1, 1), (1, 1, 1), (out,), shared_mem=16)
            _WINDOW_BASE[dev] = int(out.get().min()) // abi.GRANULE_BYTES * abi.GRANULE_BYTES
        except Exception:  # noqa: BLE001 - the tables then start at 0: correct, a bit larger
            _WINDOW_BASE[dev] = 0
    return _WINDOW_BASE[dev]


class Prepared:
    """An instrumented kernel bound to a launch shape, with its shadow tables."""

    def __init__(self, b: Build, kernel: str, grid, block, shared_mem: int = 0):
        cupy = _require_gpu()
        from cupy.cuda import driver, runtime

        self.build, self.grid, self.block = b, _dim3(grid), _dim3(block)
        self.shared_mem = int(shared_mem)
        self.kernel = resolve_kernel(b.instrumented, kernel)
        nthreads = self.block[0] * self.block[1] * self.block[2]
        if nthreads > 1024:
            raise ConsanError(f"block {self.block} has {nthreads} threads; at most 1024")
        self.nwarps = (nthreads + 31) // 32
        dev = cupy.cuda.Device()
        sms = dev.attributes["MultiProcessorCount"]
        ins = b.instrumented
        room_all = dev.attributes.get("MaxSharedMemoryPerBlockOptin", 48 * 1024)
        self.nlogical = abi.logical_threads(async_proxy=ins.async_proxy, wgmma=ins.wgmma)
        # Phase mode keeps its tables in the CTA's shared memory when they fit.
        self.psh_bytes = self.vsh_bytes = self.vsh_readers = 0
        self.bar0_rows = False
        self.vsh_base = smem_window_base()
        if ins.phase_mode and os.environ.get("CONSAN_PHASE_SMEM", "1") != "0":
            self._load(cupy, driver, b.psh_cubin(psh_max_regs(nthreads)))
            psh = abi.psh_bytes(self.granules, self.nwarps)
            if self.psh_offset + psh + 16 <= room_all - self.static_smem:
                self.psh_bytes = psh
        # So does vector-clock mode its buffer tables (the granule tables in shared memory).
        elif not ins.phase_mode and os.environ.get("CONSAN_VC_SMEM", "1") != "0":
            self._load(cupy, driver, b.vsh_cubin())
            readers = abi.vsh_readers(self.nwarps, ins.warp_reads, ins.async_proxy, ins.wgmma)
            vsh = abi.vsh_bytes(self.granules, readers, self.nwarps, self.nlogical, self.vsh_base)
            if self.psh_offset + vsh + 16 <= room_all - self.static_smem:
                self.vsh_bytes, self.vsh_readers = vsh, readers
                per_sm = self._occupancy(driver, nthreads)
                if per_sm < 1:  # no room left to launch
                    self.vsh_bytes = self.vsh_readers = 0
                elif ins.bar0_only:
                    self._bar0_rows(driver, nthreads, per_sm, room_all)
        if not (self.psh_bytes or self.vsh_bytes):
            self._load(cupy, driver, b.cubin)
        fptr = self.function.ptr
        static = self.static_smem
        per_sm = self._occupancy(driver, nthreads)
        if per_sm < 1:
            raise ConsanError(
                f"the instrumented kernel {self.kernel} cannot launch with block {self.block} "
                f"and {self.shared_mem} bytes of dynamic shared memory (it uses "
                f"{driver.funcGetAttribute(_CU_FUNC_ATTRIBUTE_NUM_REGS, fptr)} registers and "
                f"{static} bytes of static shared memory); use a smaller block")
        ctas = self.grid[0] * self.grid[1] * self.grid[2]
        self.nslots = max(1, min(ctas, per_sm * sms))
        self._alloc(cupy, runtime)

    def _bar0_rows(self, driver, nthreads: int, per_sm: int, room_all: int) -> None:
        """Barrier 0's rows (FLAG_BAR0_ROWS) where they fit without fewer CTAs per SM."""
        vsh = abi.vsh_bytes(self.granules, self.vsh_readers, self.nwarps, self.nlogical,
                            self.vsh_base, bar0_rows=True)
        if self.psh_offset + vsh + 16 > room_all - self.static_smem:
            return
        base, self.vsh_bytes = self.vsh_bytes, vsh
        if self._occupancy(driver, nthreads) >= per_sm:
            self.bar0_rows = True
        else:
            self.vsh_bytes = base

    def _occupancy(self, driver, nthreads: int) -> int:
        """CTAs of the instrumented launch one SM can hold (sets the dynamic-smem limit)."""
        fptr = self.function.ptr
        # (over 48 KiB in all, static and dynamic, a launch needs the opt-in)
        if self.launch_shared_mem + self.static_smem > 48 * 1024:
            driver.funcSetAttribute(fptr, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    self.launch_shared_mem)
        return driver.occupancyMaxActiveBlocksPerMultiprocessor(fptr, nthreads,
                                                               self.launch_shared_mem)

    def _load(self, cupy, driver, cubin: bytes) -> None:
        self.module = cupy.cuda.function.Module()
        self.module.load(cubin)
        self.function = self.module.get_function(self.kernel)
        self.static_smem = driver.funcGetAttribute(_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                                   self.function.ptr)
        self.window_bytes = self.static_smem + self.shared_mem + abi.SMEM_RESERVED_BYTES
        self.granules = (self.window_bytes + abi.GRANULE_BYTES - 1) // abi.GRANULE_BYTES

    @property
    def shv_offset(self) -> int:
        """Where the checker's own shared variables start in dynamic shared memory: after
        the user's bytes, so that the user's shared memory keeps its native layout."""
        return (self.shared_mem + 15) // 16 * 16

    @property
    def psh_offset(self) -> int:
        """Where the shared-memory tables start in dynamic shared memory."""
        return self.shv_offset + abi.SHV_BYTES

    @property
    def launch_shared_mem(self) -> int:
        """Dynamic shared memory of the instrumented launch: the user's, then ours."""
        # 16 more: the checker aligns its block itself (docs/model.md)
        return self.psh_offset + (self.psh_bytes or self.vsh_bytes) + 16

    # ---------------------------------------------------------------- tables
    def _sizes(self) -> dict[str, int]:
        ins = self.build.instrumented
        sizes = abi.table_bytes(self.nslots, self.granules, self.nwarps, self.nlogical,
                                ins.phase_mode, ins.copy_engine, self.vsh_readers,
                                self.vsh_base)
        if self.psh_bytes:  # every table the probes touch is in shared memory
            sizes = dict.fromkeys(sizes, 0)
        return sizes

    @property
    def shadow_bytes(self) -> int:
        return sum(self._sizes().values()) + (self.psh_bytes + self.vsh_bytes) * self.nslots

    @property
    def shadow_bytes_per_cta(self) -> int:
        return self.shadow_bytes // self.nslots

    def _alloc(self, cupy, runtime) -> None:
        sizes = self._sizes()
        need = sum(sizes.values()) + 64 * 1024 + 16 * abi.KEY_TABLE_ENTRIES
        free, _total = runtime.memGetInfo()
        if need > free:
            raise ConsanError(
                f"the shadow tables for {self.kernel} need {need / 2**20:.1f} MiB of device "
                f"memory ({self.nslots} resident CTAs x {self.shadow_bytes_per_cta / 2**10:.1f} "
                f"KiB for {self.window_bytes} bytes of shared memory and {self.nwarps} warps) "
                f"but only {free / 2**20:.1f} MiB are free; free device memory or launch fewer "
                f"warps per CTA")
        self.tables = {k: cupy.zeros(max(v, 8), dtype=np.uint8) for k, v in sizes.items()
                       if k != "slot_busy"}
        # What each launch zeroes, in one buffer: one memset, not a kernel per table (a
        # launch of a 20 us kernel must not pay 100 us of resets).
        sizes_reset = (abi.log_header_dtype().itemsize,
                       abi.key_dtype().itemsize * abi.KEY_TABLE_ENTRIES, max(sizes["slot_busy"], 8))
        starts = np.cumsum([0] + [-(-n // 256) * 256 for n in sizes_reset])
        self._reset = cupy.zeros(int(starts[-1]), dtype=np.uint8)
        self.header, self.keys, self.tables["slot_busy"] = (
            self._reset[int(at):int(at) + n]
            for at, n in zip(starts[:-1], sizes_reset, strict=True))
        rec = abi.record_dtype()
        nbytes = rec.itemsize * LOG_CAPACITY
        self._host_ptr = runtime.hostAlloc(nbytes, runtime.hostAllocMapped)
        self._host_free = runtime.freeHost
        buf = (ctypes.c_uint8 * nbytes).from_address(self._host_ptr)
        self.records = np.frombuffer(buf, dtype=rec)
        self.records.view(np.uint8)[:] = 0
        state = np.zeros(1, dtype=abi.state_dtype())
        for k in sizes:
            state[k] = self.tables[k].data.ptr
        state["log"] = self.header.data.ptr
        state["records"] = self._host_ptr  # UVA: the mapped host pointer is valid on the device
        state["keys"] = self.keys.data.ptr
        # Tensor maps of known geometry: filled at each launch from the registry.
        self.tmaps = cupy.zeros(abi.tmap_dtype().itemsize * abi.TMAP_ENTRIES, dtype=np.uint8)
        self._tmaps_set = b"\0" * self.tmaps.nbytes
        state["tmaps"] = self.tmaps.data.ptr
        state["nslots"], state["granules"] = self.nslots, self.granules
        state["nwarps"] = self.nwarps
        state["nthreads"] = self.block[0] * self.block[1] * self.block[2]
        state["nlogical"], state["window_bytes"] = self.nlogical, self.window_bytes
        state["log_capacity"] = LOG_CAPACITY
        state["shv_offset"], state["psh_offset"] = self.shv_offset, self.psh_offset
        state["flags"] = ((abi.FLAG_PHASE_MODE if self.build.instrumented.phase_mode else 0)
                          | (abi.FLAG_WGMMA if self.build.instrumented.wgmma else 0))
        if sizes["bsum"]:
            abi.set_box_summary(state, self.nwarps)
        if self.psh_bytes:
            state["flags"] |= abi.FLAG_PHASE_SMEM
            state["psh_bytes"] = self.psh_bytes
        if self.vsh_bytes:
            state["flags"] |= abi.FLAG_VC_SMEM
            state["psh_bytes"] = self.vsh_bytes
            state["vsh_base"], state["vsh_readers"] = self.vsh_base, self.vsh_readers
            if self.bar0_rows:
                state["flags"] |= abi.FLAG_BAR0_ROWS
        if self.build.instrumented.async_proxy:
            state["flags"] |= abi.FLAG_BULK_STORES
        if self.build.instrumented.cp_async:
            state["flags"] |= abi.FLAG_CP_ASYNC
        if self.build.instrumented.warp_reads:
            state["flags"] |= abi.FLAG_WARP_READS
        self._state = state
        gptr = self.module.get_global_var(abi.STATE_SYMBOL)  # a device address
        runtime.memcpy(gptr, state.ctypes.data, state.nbytes, runtime.memcpyHostToDevice)
        self._stored_prev = 0
        # A clean launch leaves nothing to reset but these counters, which run on from
        # launch to launch (a report gives their differences): the next launch then needs
        # no memset before its kernel (a GPU operation, and host time the GPU waits for).
        self._dirty = False  # the log, key table or slot table may hold a launch's marks
        self._base = self._next_base = dict.fromkeys(_RUNNING, 0)

    def __del__(self):
        ptr = getattr(self, "_host_ptr", None)
        if ptr:
            try:
                self._host_free(ptr)
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass
            self._host_ptr = None

    # ---------------------------------------------------------------- launch
    def launch_resets(self, args: tuple = ()) -> None:
        """What `launch` does before the kernel: zero the log and the slot table, unless the
        last launch was read back clean (they are zero then, but for _RUNNING)."""
        import cupy

        if self._dirty:
            stream = cupy.cuda.get_current_stream()
            cupy.cuda.runtime.memsetAsync(self._reset.data.ptr, 0, self._reset.nbytes,
                                          stream.ptr)
            self._base = dict.fromkeys(_RUNNING, 0)
        else:
            self._base = self._next_base
        if self._stored_prev:
            self.records[: min(self._stored_prev, LOG_CAPACITY)] = 0
        table = tma.device_table_bytes(args)
        if table != self._tmaps_set:  # (the same bytes object when nothing changed)
            self.tmaps.set(np.frombuffer(table, dtype=np.uint8))
            self._tmaps_set = table

    def launch(self, args: tuple = (),
               launcher: Callable[[int, int], None] | None = None) -> None:
        """Launch once on the current stream (asynchronous); reset the log first.

        `launcher(function_handle, shared_mem)`, where given, launches the instrumented
        function itself (a cluster launch through cuLaunchKernelEx, Triton's own launcher
        with its argument packing); `args` then only serve to find tensor maps."""
        self.launch_resets(args)
        if launcher is None:
            self.function(self.grid, self.block, tuple(args), shared_mem=self.launch_shared_mem)
        else:
            launcher(int(self.function.ptr), self.launch_shared_mem)
        self._stored_prev = LOG_CAPACITY  # until read back, assume the worst
        self._dirty = True

    def report(self, sync: bool = True) -> Report:
        """Read back what the last launch recorded and decode it."""
        import cupy

        launch = {"grid": self.grid, "block": self.block, "shared_mem": self.shared_mem,
                  "arch": self.build.arch.sm, "slots": self.nslots,
                  "shadow_bytes": self.shadow_bytes,
                  "tables": "shared" if self.psh_bytes or self.vsh_bytes else "device"}
        error = None
        try:
            if sync:
                cupy.cuda.get_current_stream().synchronize()
            header = self.header.get().view(abi.log_header_dtype())[0]
            header["capacity"] = LOG_CAPACITY  # the device takes it from the state block
            keys = self.keys.get().view(abi.key_dtype())
            self._since_base(header)
        except Exception as exc:  # noqa: BLE001 - the user's kernel crashed
            error = f"{type(exc).__name__}: {exc}"
            valid = self.records[self.records["kind"] != 0]
            header = np.zeros(1, dtype=abi.log_header_dtype())[0]
            header["capacity"], header["stored"] = LOG_CAPACITY, len(valid)
            header["occurrences"] = len(valid)
            keys = None
        stored = int(min(header["stored"], LOG_CAPACITY))
        records = self.records[:stored].copy()
        self._stored_prev = stored
        rep = Report.from_log(header, records, keys, self.build.instrumented.sites,
                              self.kernel, launch=launch)
        rep.unmodeled = list(self.build.instrumented.unmodeled)
        rep.error = error
        return rep

    def _since_base(self, header) -> None:
        """The running counters of `header` as this launch's (uint32 differences); a clean
        launch (no record, every CTA that began ended, so every slot is free again) lets
        the next one start without a reset."""
        raw = {k: int(header[k]) for k in _RUNNING}
        for k in _RUNNING:
            header[k] = (raw[k] - self._base[k]) & 0xFFFFFFFF
        # (phase mode with its tables in shared memory claims no slot and counts no end)
        clean = (all(int(header[k]) == 0 for k in _MARKS)
                 and (self.psh_bytes or header["ctas_begun"] == header["ctas_ended"]))
        if clean:
            self._dirty, self._next_base = False, raw


# Log-header counters a clean launch leaves behind (the next one counts on from them), and
# those that say it left marks (the records, the key table) to be zeroed.
_RUNNING = ("ctas_begun", "ctas_ended", "walked")
_MARKS = ("stored", "occurrences", "dropped", "key_overflow")


def prepare(source: str, kernel: str, grid=(1, 1, 1), block=(256, 1, 1), shared_mem: int = 0,
            options: tuple[str, ...] = (), source_name: str = DEFAULT_SOURCE_NAME) -> Prepared:
    _require_gpu()
    return Prepared(build(source, tuple(options), source_name=source_name), kernel, grid, block,
                    shared_mem)


def check(source: str, kernel: str, grid=(1, 1, 1), block=(256, 1, 1), args: tuple = (),
          shared_mem: int = 0, options: tuple[str, ...] = (),
          source_name: str = DEFAULT_SOURCE_NAME) -> Report:
    """Run one launch of `kernel` under the checker and return its report."""
    p = prepare(source, kernel, grid, block, shared_mem, options, source_name)
    p.launch(args)
    return p.report()
