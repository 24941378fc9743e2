"""Launch and read back an instrumented kernel (built by pipeline.py).

The cubin is loaded as a CuPy Module. The shadow tables live in device memory and belong
to shadow *slots*, one per CTA that can be resident at once, not one per CTA
of the grid; a CTA claims a free slot at entry and bumps its generation, so
nothing is cleared between CTAs. Violation records go to mapped pinned host
memory, which stays readable when the user's kernel crashes the context.
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import replace
from typing import Any, Literal

import numpy as np

from instrument import abi, occupancy
from instrument.rewrite import Instrumented, demangle
from reports import Report

from . import pipeline, tma, toolchain
from .errors import ConsanError, NoGPUError
from .layout import Layout, Placement, window_bytes
from .pipeline import DEFAULT_SOURCE_NAME, Build, cache_put  # noqa: F401 (re-exported)
from .toolchain import is_ptx  # noqa: F401 (re-exported)
from .version import __version__  # noqa: F401 (re-exported)

LOG_CAPACITY = 1 << 16  # records kept per launch (the rest are counted)
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


_ARCH: dict[int, toolchain.Arch] = {}  # per device id (asked at every Triton launch)


def current_device() -> int:
    import cupy

    return int(cupy.cuda.runtime.getDevice())


def device_arch() -> toolchain.Arch:
    cupy = _require_gpu() if not _ARCH else sys.modules["cupy"]
    dev = cupy.cuda.runtime.getDevice()
    arch = _ARCH.get(dev)
    if arch is None:
        cc = cupy.cuda.Device(dev).compute_capability
        arch = _ARCH[dev] = toolchain.Arch.for_device(int(cc[:-1]), int(cc[-1]))
    return arch


def build(source: str, options: tuple[str, ...] = (), arch: toolchain.Arch | None = None,
          source_name: str = DEFAULT_SOURCE_NAME, value_tags: bool = False) -> Build:
    """Compile (if CUDA), instrument and link (pipeline.build) for the -arch of `options`,
    else `arch`, else this device's. Needs no GPU when an architecture is given."""
    if arch is None and toolchain.split_arch(tuple(options))[1] is None:
        arch = device_arch()
    return pipeline.build(source, options, arch, source_name, value_tags)


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


def first_placement(ins: Instrumented) -> Placement:
    """Where a launch's tables go if they fit (else in device memory), so which checker
    build it links first. Phase mode keeps its tables in the CTA's shared memory; so does
    vector-clock mode its buffer tables (the granule tables), peers' copies into them
    included, except where a peer CTA's loads and stores may reach them (their epochs need
    the device-memory tables: docs/model.md, *Distributed shared memory*)."""
    if ins.phase_mode:
        smem = os.environ.get("CONSAN_PHASE_SMEM", "1") != "0"
        return Placement.PHASE_SMEM if smem else Placement.DEVICE
    smem = not ins.peer_access and os.environ.get("CONSAN_VC_SMEM", "1") != "0"
    return Placement.VC_SMEM if smem else Placement.DEVICE


def chunks_by_choice(ins: Instrumented) -> bool:
    """Whether the runtime may give a module chunk granules where its own are 4 bytes: a
    cluster module of whole chunks whose peers reach it by copies and mbarrier operations
    only (Instrumented.cluster_chunks). It takes them wherever its tables are in device
    memory (on an H200, the clustered ring there, the device's time alone,
    benchmarks/depth_dsmem.py: four stages 2.289 -> 1.856 ms, sixteen 2.935 -> 2.546), and
    in shared memory only where 4-byte ones would cost a wave
    (Prepared._tables_for_a_wave)."""
    return ins.multicast and ins.chunks_exact and not ins.chunk_granules and \
        not ins.peer_access


def first_link(ins: Instrumented, nthreads: int) -> dict[str, Any]:
    """The checker build a launch of `nthreads` threads a CTA links first (Prepared), as
    pipeline.link's keywords."""
    first = first_placement(ins)
    if first is Placement.PHASE_SMEM:
        return {"psh": True, "max_regs": psh_max_regs(nthreads)}
    return {"vsh": first is Placement.VC_SMEM}


def psh_max_regs(nthreads: int) -> int:
    """Register cap for a kernel linked with the phase-mode checker.

    A kernel's register count is the largest of its call graph's, and ptxas places the
    kernel's live registers above those its callees use, so probes push a kernel far
    above its native count (92 registers uncapped for an 18-register stencil; 122 for a
    72-register sgemm). Most accesses of phase mode now run inline and call the checker
    only where something is wrong or their warp's state needs a look (fast_path.py), so
    the cap keeps 48 warps resident per SM as far as registers go (40 registers up to
    512 threads a block) and any block launchable: the spills it costs inside the probes
    are cheaper than the lost warps. Measured on the H100 (bench_clean, cap 40 against
    80, two rounds): block_reduce_sum 2.06 -> 1.60 ms, transpose_tiled 4.80 -> 3.43,
    stencil_1d 21.58 -> 17.24, sgemm_tiled 19.36 -> 16.54, histogram256 5.65 -> 3.02.
    CONSAN_PSH_MAXREG overrides it.

    ptxas takes a kernel's launch bounds over -maxrregcount, so a kernel with `.reqntid`
    (every Triton kernel) keeps the limit they give: Triton's layer-norm backward linked
    at 96 registers (40 natively). Holding it to the cap with `.maxnreg` was measured on
    the H100 (device time, bench_triton.py --hide-host) and not kept: softmax 0.072 ->
    0.066 ms, layer_norm_fwd 0.046 -> 0.041, but layer_norm_bwd 0.573 -> 0.688 (spills
    in the critical section of its lock; 0.631 at a cap of 80).
    """
    env = int(os.environ.get("CONSAN_PSH_MAXREG", "0") or 0)
    threads = max(nthreads, 32)
    ctas = -(-1536 // threads)
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


def check_shared_room(kernel: str, static: int, dynamic: int, launch_dynamic: int,
                      room: int) -> None:
    """Refuse, in the user's terms, a launch whose shared memory leaves no room for the
    checker's own words (`launch_dynamic` - `dynamic` bytes after the kernel's): the
    driver would only say that an attribute or the occupancy query failed."""
    if static + launch_dynamic <= room:
        return
    ours = launch_dynamic - dynamic
    most = room - static - ours
    fix = (f"launch it with at most {most} bytes of dynamic shared memory to check it"
           if most >= 0 else "its static shared memory alone leaves no room")
    raise ConsanError(
        f"kernel {kernel} uses {static + dynamic} bytes of shared memory ({static} static, "
        f"{dynamic} dynamic) and the checker needs {ours} more in the same CTA, but this GPU "
        f"allows at most {room} bytes per block: {fix}")


class Launcher:
    """How one launch runs a prepared kernel's instrumented function.

    This one launches it through CuPy with the kernel's arguments; a front end passes
    its own where it launches differently (cuLaunchKernelEx with cluster dimensions,
    Triton's generated launcher with its argument packing). `args` are where the
    launch's TMA tensor maps are found (tma.device_table_bytes).
    """

    def __init__(self, args: tuple = ()) -> None:
        self.args = tuple(args)

    def __call__(self, p: Prepared) -> None:
        self.plain(p, self.args)

    @staticmethod
    def plain(p: Prepared, args: tuple) -> None:
        """Launch `p.function` on `args` with `p`'s shape and `p.launch_shared_mem` (the
        user's dynamic shared memory, then the checker's), on the current stream."""
        p.function(p.grid, p.block, args, shared_mem=p.launch_shared_mem)


class Prepared:
    """An instrumented kernel bound to a launch shape, with its shadow tables."""

    def __init__(self, b: Build, kernel: str, grid, block, shared_mem: int = 0):
        self.build, self.grid, self.block = b, _dim3(grid), _dim3(block)
        self.shared_mem = int(shared_mem)
        self.kernel = resolve_kernel(b.instrumented, kernel)
        self._tensor_maps = b.instrumented.tensor_maps
        nthreads = self.block[0] * self.block[1] * self.block[2]
        if nthreads > 1024:
            raise ConsanError(f"block {self.block} has {nthreads} threads; at most 1024")
        # (linked before any GPU work: a link error names the user's lines, GPU or not)
        first, cubin = first_placement(b.instrumented), b.linked(**first_link(b.instrumented,
                                                                               nthreads))
        cupy = _require_gpu()
        from cupy.cuda import driver, runtime

        self.nwarps = (nthreads + 31) // 32
        dev = cupy.cuda.Device()
        sms = dev.attributes["MultiProcessorCount"]
        ins = b.instrumented
        room_all = dev.attributes.get("MaxSharedMemoryPerBlockOptin", 48 * 1024)
        self.layout = Layout.for_module(ins, nwarps=self.nwarps, nthreads=nthreads,
                                        window_bytes=0, log_capacity=LOG_CAPACITY,
                                        window_base=smem_window_base(),
                                        shared_mem=self.shared_mem)
        if first is not Placement.DEVICE:
            self._load(cupy, driver, cubin)
        if first is Placement.PHASE_SMEM:
            self._place(replace(self.layout, placement=Placement.PHASE_SMEM), room_all)
        elif first is Placement.VC_SMEM:
            if self._place(replace(self.layout, placement=Placement.VC_SMEM), room_all):
                per_sm = self._occupancy(driver, nthreads)
                instead = None if per_sm < 1 else self._tables_for_a_wave(
                    cupy, driver, nthreads, per_sm, sms, room_all)
                if instead == "chunks":
                    self._load(cupy, driver, b.linked(vsh=True, cluster_chunks=True))
                    self.layout = replace(self.layout, granule_bytes=abi.CHUNK_GRANULE_BYTES)
                    # (where its build's static bytes grew past the room, _load's
                    # device-memory placement stays: loaded below)
                    self._place(replace(self.layout, placement=Placement.VC_SMEM), room_all)
                elif per_sm < 1 or instead == "device":
                    self.layout = replace(self.layout, placement=Placement.DEVICE)
                elif ins.bar0_only:
                    self._bar0_rows(driver, nthreads, per_sm, room_all)
        if self.layout.placement is Placement.DEVICE:
            chunks = chunks_by_choice(ins)
            self._load(cupy, driver, b.linked(cluster_chunks=True) if chunks else b.cubin)
            self.layout = replace(self.layout, granule_bytes=abi.CHUNK_GRANULE_BYTES
                                  if chunks or ins.chunk_granules else abi.GRANULE_BYTES)
        fptr = self.function.ptr
        static = self.static_smem
        check_shared_room(self.kernel, static, self.shared_mem, self.launch_shared_mem, room_all)
        per_sm = self._occupancy(driver, nthreads)
        if per_sm < 1 and self.layout.placement is Placement.DEVICE:
            per_sm = self._fit_one(cupy, driver, nthreads)
        if per_sm < 1:
            raise ConsanError(
                f"the instrumented kernel {self.kernel} cannot launch with block {self.block} "
                f"and {self.shared_mem} bytes of dynamic shared memory (it uses "
                f"{driver.funcGetAttribute(_CU_FUNC_ATTRIBUTE_NUM_REGS, fptr)} registers and "
                f"{static} bytes of static shared memory); use a smaller block")
        ctas = self.grid[0] * self.grid[1] * self.grid[2]
        # (a cluster module's CTAs wait for their peers: one that is not resident stalls
        # the rest of its cluster, whichever placement its tables have)
        held = self.layout.placement is Placement.DEVICE or ins.multicast
        if held and per_sm * sms < ctas:
            per_sm = self._hold(cupy, driver, nthreads, ctas, sms, per_sm)
        self.layout = replace(self.layout, nslots=max(1, min(ctas, per_sm * sms)))
        self._alloc(cupy, runtime)

    def _tables_for_a_wave(self, cupy, driver, nthreads: int, per_sm: int, sms: int,
                           room_all: int) -> Literal["chunks", "device"] | None:
        """Where the granule tables in shared memory leave an SM room for fewer CTAs than
        the grid needs in one wave and than the native kernel holds: "chunks" where the same
        tables with chunk granules leave room for that many (a cluster module of whole
        chunks: Instrumented.cluster_chunks), else "device" where device-memory tables leave
        room for more (its registers are held after, as for any placement: _hold); None:
        they stay. The clustered ring of 4 KiB stages has 4-byte granules and about 14 bytes
        of tables a granule: at six stages 117 KiB a CTA, room for one CTA an SM where two
        run natively, so its 264 CTAs ran in two waves. On an H200, the device's time alone
        (benchmarks/depth_dsmem.py): six stages 2.704 ms with those tables, 2.391 in device
        memory (4-byte granules), 1.591 with chunk granules (58 KiB a CTA); eight 2.921,
        2.475 and 1.774; at four, where every CTA fits, the 4-byte tables 1.408 ms against
        2.261 in device memory (1.856 with chunk granules there: chunks_by_choice), and 1.431
        with chunk granules in shared memory (A/B)."""
        ctas = self.grid[0] * self.grid[1] * self.grid[2]
        attrs = cupy.cuda.Device().attributes
        sm_smem = attrs.get("MaxSharedMemoryPerMultiprocessor", 0)
        if per_sm * sms >= ctas or not sm_smem:
            return None
        per_cta = self.static_smem + attrs.get("ReservedSharedMemoryPerBlock", 0)

        def room(layout: Layout) -> int:  # CTAs an SM's shared memory holds
            return sm_smem // (per_cta + layout.launch_shared_mem)
        here = room(self.layout)
        ins = self.build.instrumented
        chunked = replace(self.layout, granule_bytes=abi.CHUNK_GRANULE_BYTES)
        chunks = chunks_by_choice(ins) and \
            chunked.launch_shared_mem <= room_all - self.static_smem
        there = room(replace(self.layout, placement=Placement.DEVICE, bar0_rows=False))
        want = -(-ctas // sms)
        if here >= min(want, max(there, room(chunked) if chunks else 0)):
            return None  # (not the tables: the registers or the threads hold it)
        try:
            native_ctas, _ = self._native_fit(cupy, driver, nthreads)
        except toolchain.CompileError:  # (the module does not link alone)
            return None
        if here >= native_ctas:
            return None
        if chunks and room(chunked) >= min(want, native_ctas):
            return "chunks"
        return "device" if there > here else None

    def _fit_one(self, cupy, driver, nthreads: int) -> int:
        """CTAs per SM of a launch whose device-memory build's registers leave room for no CTA
        of its block, relinked held to one (instrument/occupancy.py: the probes assembled
        under the block's limit too); 0 where that does not fit either. The probes raise a
        kernel's count to its call graph's: measured on the H100, a phase-mode kernel of
        1024 threads, no launch bounds, 110 registers with its tables in device memory,
        where 64 fit."""
        if occupancy.register_cap(self.build.instrumented, self.kernel, nthreads, 1) is None:
            return 0
        self._load(cupy, driver, self.build.linked(hold=(self.kernel, 1, nthreads),
                                                   cluster_chunks=self.cluster_chunks))
        return self._occupancy(driver, nthreads)

    def _hold(self, cupy, driver, nthreads: int, ctas: int, sms: int, per_sm: int) -> int:
        """CTAs per SM of the instrumented launch, relinked where its registers hold fewer
        than its grid needs in one wave and the native kernel holds: the kernel held to
        that many (instrument/occupancy.py), unless that would give the kernel's own code
        fewer registers than it has natively. Measured on the H100, the clustered ring
        (264 CTAs of 256 threads): 254 registers, one CTA per SM, 4.21 ms; held to two,
        128 registers, 2.93 ms."""
        try:
            native_ctas, native_regs = self._native_fit(cupy, driver, nthreads)
        except toolchain.CompileError:  # (the module does not link alone: not held)
            return per_sm
        want = min(-(-ctas // sms), native_ctas)
        cap = occupancy.register_cap(self.build.instrumented, self.kernel, nthreads, want)
        if want <= per_sm or cap is None or cap < native_regs:
            return per_sm
        before = (self.module, self.function, self.layout)
        placed = self.layout  # (_load takes the device-memory tables: kept as placed)
        vsh = placed.placement is Placement.VC_SMEM
        self._load(cupy, driver, self.build.linked(vsh=vsh, hold=(self.kernel, want, nthreads),
                                                   cluster_chunks=self.cluster_chunks))
        self.layout = replace(self.layout, placement=placed.placement, bar0_rows=placed.bar0_rows)
        held = self._occupancy(driver, nthreads)
        if held > per_sm:
            return held
        self.module, self.function, self.layout = before
        return per_sm

    def _native_fit(self, cupy, driver, nthreads: int) -> tuple[int, int]:
        """The kernel without consan at this launch: CTAs per SM, and its registers."""
        b = self.build
        mod = cupy.cuda.function.Module()
        mod.load(toolchain.link([(b.source_name, b.ptx)], b.arch))
        fn = mod.get_function(self.kernel)
        if self.shared_mem + driver.funcGetAttribute(_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                                     fn.ptr) > 48 * 1024:
            driver.funcSetAttribute(fn.ptr, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    self.shared_mem)
        return (driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.ptr, nthreads, self.shared_mem),
                driver.funcGetAttribute(_CU_FUNC_ATTRIBUTE_NUM_REGS, fn.ptr))

    def _place(self, layout: Layout, room_all: int) -> bool:
        """Take `layout` if its dynamic shared memory fits beside the static."""
        fits = layout.launch_shared_mem <= room_all - self.static_smem
        if fits:
            self.layout = layout
        return fits

    def _bar0_rows(self, driver, nthreads: int, per_sm: int, room_all: int) -> None:
        """Barrier 0's rows (FLAG_BAR0_ROWS) where they fit without fewer CTAs per SM."""
        without = self.layout
        if self._place(replace(without, bar0_rows=True), room_all):
            if self._occupancy(driver, nthreads) < per_sm:
                self.layout = without

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
        self.layout = replace(self.layout, placement=Placement.DEVICE, bar0_rows=False,
                              window_bytes=window_bytes(self.static_smem, self.shared_mem))

    @property
    def nslots(self) -> int:
        return self.layout.nslots

    @property
    def cluster_chunks(self) -> bool:
        """Linked with chunk granules by choice (_tables_for_a_wave)."""
        return self.layout.granule_bytes == abi.CHUNK_GRANULE_BYTES and \
            not self.build.instrumented.chunk_granules

    @property
    def launch_shared_mem(self) -> int:
        return self.layout.launch_shared_mem

    # ---------------------------------------------------------------- tables
    @property
    def shadow_bytes(self) -> int:
        return self.layout.shadow_bytes

    @property
    def shadow_bytes_per_cta(self) -> int:
        return self.shadow_bytes // self.nslots

    def _alloc(self, cupy, runtime) -> None:
        sizes = self.layout.table_bytes()
        need = sum(sizes.values()) + 64 * 1024 + 16 * abi.KEY_TABLE_ENTRIES
        free, _total = runtime.memGetInfo()
        if need > free:
            raise ConsanError(
                f"the shadow tables for {self.kernel} need {need / 2**20:.1f} MiB of device "
                f"memory ({self.nslots} resident CTAs x {self.shadow_bytes_per_cta / 2**10:.1f} "
                f"KiB for {self.layout.window_bytes} bytes of shared memory and {self.nwarps} "
                f"warps) but only {free / 2**20:.1f} MiB are free; free device memory or launch "
                f"fewer warps per CTA")
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
        # Tensor maps of known geometry: filled at each launch from the registry.
        self.tmaps = cupy.zeros(abi.tmap_dtype().itemsize * abi.TMAP_ENTRIES, dtype=np.uint8)
        self._tmaps_set = b"\0" * self.tmaps.nbytes
        pointers = {k: t.data.ptr for k, t in self.tables.items()}
        pointers.update(log=self.header.data.ptr, keys=self.keys.data.ptr,
                        tmaps=self.tmaps.data.ptr,
                        records=self._host_ptr)  # UVA: mapped host memory is valid on the device
        self._state = state = self.layout.state(pointers)
        gptr = self.module.get_global_var(abi.STATE_SYMBOL)  # a device address
        runtime.memcpy(gptr, state.ctypes.data, state.nbytes, runtime.memcpyHostToDevice)
        self._stored_prev = 0
        # A clean launch leaves nothing to reset but these counters, which run on from
        # launch to launch (a report gives their differences): the next launch then needs
        # no memset before its kernel (a GPU operation, and host time the GPU waits for).
        self._dirty = False  # the log, key table or slot table may hold a launch's marks
        self._header_host = None  # the header's pinned host copy, made at the first report
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
        if self._dirty:
            import cupy

            stream = cupy.cuda.get_current_stream()
            cupy.cuda.runtime.memsetAsync(self._reset.data.ptr, 0, self._reset.nbytes,
                                          stream.ptr)
            self._base = dict.fromkeys(_RUNNING, 0)
        else:
            self._base = self._next_base
        if self._stored_prev:
            self.records[: min(self._stored_prev, LOG_CAPACITY)] = 0
        if not self._tensor_maps:  # (no probe reads the table)
            return
        table = tma.device_table_bytes(args)
        if table != self._tmaps_set:  # (the same bytes object when nothing changed)
            self.tmaps.set(np.frombuffer(table, dtype=np.uint8))
            self._tmaps_set = table

    def launch(self, args: tuple | Launcher = ()) -> None:
        """Launch once on the current stream (asynchronous); reset the log first.

        `args`: the kernel's arguments (CuPy's conventions), or a Launcher that launches
        the instrumented function a front end's own way."""
        if isinstance(args, Launcher):
            self.launch_resets(args.args)
            args(self)
        else:  # (no Launcher made: 0.3 us of a launch call's host time)
            args = tuple(args)
            self.launch_resets(args)
            Launcher.plain(self, args)
        self._stored_prev = LOG_CAPACITY  # until read back, assume the worst
        self._dirty = True

    def report(self, sync: bool = True) -> Report:
        """Read back what the last launch recorded and decode it."""
        import cupy

        launch = {"grid": self.grid, "block": self.block, "shared_mem": self.shared_mem,
                  "arch": self.build.arch.sm, "slots": self.nslots,
                  "shadow_bytes": self.shadow_bytes,
                  "tables": "device" if self.layout.placement is Placement.DEVICE else "shared",
                  "granule_bytes": self.layout.granule_bytes}
        error = None
        try:  # (only CUDA's errors mean the kernel faulted; a bug of ours propagates)
            if sync:
                cupy.cuda.get_current_stream().synchronize()
            if self._header_host is None:  # (pinned: a copy without a staging buffer)
                import cupyx

                self._header_host = cupyx.empty_pinned(self.header.nbytes, dtype=np.uint8)
            header_bytes = self.header.get(out=self._header_host)
            # (the key table only counts findings: a launch that recorded none skips its
            # copy and decoding, 4096 entries, about 0.15 ms of a clean launch's read-back)
            marks = header_bytes.view(abi.log_header_dtype())[0]
            key_bytes = self.keys.get() if any(int(marks[k]) for k in _MARKS) else None
        except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        if error is None:
            header = header_bytes.view(abi.log_header_dtype())[0]
            header["capacity"] = LOG_CAPACITY  # the device takes it from the state block
            keys = key_bytes.view(abi.key_dtype()) if key_bytes is not None else None
            self._since_base(header)
        else:
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
                 and (self.layout.placement is Placement.PHASE_SMEM
                      or header["ctas_begun"] == header["ctas_ended"]))
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
