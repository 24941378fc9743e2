"""The device checker built for the host (g++ -DCONSAN_HOST), driven by event traces.

The same checker.cu that NVRTC compiles for the GPU is compiled here with one
lane per warp, so CI exercises every decision the checker makes without a
GPU. A trace is a sequence of calls on `HostChecker` in the order the events
would happen on the device (the caller plays the hardware barrier).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from consan.layout import Layout, Placement
from consan.toolchain import CHECKER_SOURCE, checker_headers, checker_text
from instrument import abi
from instrument.sites import SiteTable
from reports import Report


@functools.cache
def library(chunk: bool = False) -> ctypes.CDLL:
    """The host build; `chunk`: with 16-byte granules (-DCONSAN_CHUNK_GRANULES)."""
    src = CHECKER_SOURCE.read_text()
    hdr = abi.c_header()
    key = hashlib.sha256((checker_text() + hdr + str(chunk)).encode()).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"consan_host_{key}"
    so = out / "checker.so"
    if not so.exists():
        cxx = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
        if cxx is None:
            raise RuntimeError("a C++ compiler (g++) is needed to build the host checker")
        out.mkdir(parents=True, exist_ok=True)
        # Each process writes and compiles in a folder of its own (test workers build at
        # once: one rewriting a header another was compiling failed that build), then
        # moves its library into place.
        own = Path(tempfile.mkdtemp(dir=out))
        (own / "consan_abi.h").write_text(hdr)
        for name, text in checker_headers().items():
            (own / name).write_text(text)
        (own / "checker.cpp").write_text(src)
        tmp = own / "checker.so"
        res = subprocess.run([cxx, "-DCONSAN_HOST", *(["-DCONSAN_CHUNK_GRANULES"] if chunk else []),
                              "-std=c++17", "-O1", "-shared", "-fPIC",
                              "-Wall", "-Wno-unused-function", "-I", str(own), "-o", str(tmp),
                              str(own / "checker.cpp")], capture_output=True, text=True)
        if res.returncode:
            raise RuntimeError(f"the host build of the checker failed:\n{res.stderr}")
        tmp.replace(so)
        shutil.rmtree(own, ignore_errors=True)
    lib = ctypes.CDLL(str(so))
    u32 = ctypes.c_uint32
    ctype = {".b32": u32, ".b64": ctypes.c_uint64}  # the PTX types of abi.PROBE_PROTOTYPES
    for name, (params, ret) in abi.PROBE_PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.argtypes = [ctype[t] for t in params]
        fn.restype = ctype[ret] if ret else None
    lib.cs_host_set.argtypes = [u32, u32, u32, u32, u32]
    lib.cs_host_set_state.argtypes = [ctypes.c_void_p]
    lib.cs_host_slot.restype = u32
    lib.cs_host_hw_arrivals_at.argtypes = [u32]
    lib.cs_host_hw_arrivals_at.restype = u32
    lib.cs_host_set_dyn.argtypes = [ctypes.c_void_p, u32]
    lib.cs_host_mc_post.argtypes = [u32, u32, u32, u32, u32, u32, u32]
    lib.cs_host_remote_release.argtypes = [u32]
    lib.cs_host_remote_release.restype = u32
    return lib


class HostChecker:
    """Shadow tables in numpy, one CTA slot (or more), warps driven one call at a time."""

    def __init__(self, nwarps: int = 4, smem_bytes: int = 1024, nslots: int = 1,
                 capacity: int = 1024, phase_mode: bool = False, phase_smem: bool = False,
                 wgmma: bool = False, box_summary: bool = True, vsh: bool = True,
                 async_proxy: bool = True, warp_reads: bool = True, bar0_rows: bool = False,
                 multicast: bool = False, layout: Layout | None = None,
                 granule_bytes: int = abi.GRANULE_BYTES, bar_step: bool = False):
        """The knobs make a layout (the runtime's default where they fit: the granule tables
        in shared memory, FLAG_VC_SMEM), without the bytes the device reserves below the
        window; `layout`, where given, is taken as it is (a launch's, as the runtime plans
        it) and the knobs are ignored. `bar_step`: `sync` makes each barrier's one probe
        after it (abi.PROBE_BAR_STEP, a phase-mode module's barriers that call their probes)
        in place of the arrive and the wait."""
        if layout is None:
            vsh = vsh and not (phase_mode or phase_smem)
            where = (Placement.PHASE_SMEM if phase_smem else Placement.VC_SMEM if vsh
                      else Placement.DEVICE)
            # (bar0_rows: only for traces whose barrier 0 is only ever sync(all))
            layout = Layout(
                nwarps=nwarps, nthreads=nwarps * 32, window_bytes=smem_bytes,
                log_capacity=capacity, nslots=nslots, phase_mode=phase_mode or phase_smem,
                wgmma=wgmma, async_proxy=async_proxy, cp_async=True, warp_reads=warp_reads,
                copy_engine=box_summary, placement=where,
                bar0_rows=bar0_rows and vsh, multicast=multicast, granule_bytes=granule_bytes)
        self.layout = lay = layout
        self.bar_step = bar_step
        self.lib = library(lay.granule_bytes == abi.CHUNK_GRANULE_BYTES)
        self.nwarps, self.nslots = lay.nwarps, lay.nslots
        self.phase_smem = lay.placement is Placement.PHASE_SMEM
        self.vsh = lay.placement is Placement.VC_SMEM
        self.granules = lay.granules
        self.tables = {k: np.zeros(v // 8 + 1, dtype=np.uint64)
                       for k, v in lay.table_bytes().items()}
        self.header = np.zeros(1, dtype=abi.log_header_dtype())
        self.header["capacity"] = lay.log_capacity
        self.keys = np.zeros(abi.KEY_TABLE_ENTRIES, dtype=abi.key_dtype())
        self.records = np.zeros(lay.log_capacity, dtype=abi.record_dtype())
        self.tmaps = np.zeros(abi.TMAP_ENTRIES, dtype=abi.tmap_dtype())
        # its dynamic smem, as launched (the host build stops at a global-space access to it)
        if lay.placement is not Placement.DEVICE or lay.multicast:
            self.smem = np.zeros(-(-lay.launch_shared_mem // 8), dtype=np.uint64)
            self.lib.cs_host_set_dyn(self.smem.ctypes.data, self.smem.nbytes)
        else:
            self.lib.cs_host_set_dyn(None, 0)
        pointers = {k: arr.ctypes.data for k, arr in self.tables.items()}
        pointers.update(log=self.header.ctypes.data, records=self.records.ctypes.data,
                        keys=self.keys.ctypes.data, tmaps=self.tmaps.ctypes.data)
        self.state = st = lay.state(pointers)
        self._maps: list[np.ndarray] = []  # tensor maps the probes point at (kept alive)
        self.lib.cs_host_set_state(st.ctypes.data)
        self.cta = (0, 0, 0)

    def _probe(self, name: str):
        return getattr(self.lib, name)

    def _as(self, warp: int) -> None:
        self.lib.cs_host_set(*self.cta, warp, self.layout.nthreads)

    # events --------------------------------------------------------------
    def begin(self, cta: tuple[int, int, int] = (0, 0, 0)) -> int:
        self.cta = cta
        self._as(0)
        self._probe(abi.PROBE_CTA_BEGIN)()
        return self.lib.cs_host_slot()

    def access(self, warp: int, off: int, size: int, mode: int, site: int,
               space: int = abi.SPACE_SHARED, shape: int = abi.SHAPE_PLAIN,
               idem: bool = False) -> None:
        self._as(warp)
        info = abi.access_info(size, mode, space, shape, idem)
        probe, rep = abi.access_probe(info, None)  # the probe the rewriter would call
        self._probe(probe)(off, site, info, *(() if rep is None else (rep,)))

    def access_n(self, warp: int, off: int, size: int, mode: int, count: int, stride: int,
                 site: int = 0) -> None:
        """One coalesced probe for `count` accesses at off, off + stride, ..."""
        self._as(warp)
        info = abi.access_info(size, mode, abi.SPACE_SHARED)
        probe, rep = abi.access_probe(info, (stride << abi.REP_STRIDE_SHIFT) | count)
        self._probe(probe)(off, site, info, rep)

    def read(self, warp: int, off: int, size: int = 4, site: int = 0) -> None:
        self.access(warp, off, size, abi.MODE_READ, site)

    def write(self, warp: int, off: int, size: int = 4, site: int = 0,
              idem: bool = False, tag: int | None = None) -> None:
        """A store; `idem`: of an immediate to a constant address (abi.INFO_IDEM); `tag`:
        its value tag, passed first (abi.PROBE_STORE_VALUE)."""
        if tag is not None:
            self._as(warp)
            self._probe(abi.PROBE_STORE_VALUE)(tag, site)
        self.access(warp, off, size, abi.MODE_WRITE, site, idem=idem)

    def atomic(self, warp: int, off: int, size: int = 4, site: int = 0) -> None:
        self.access(warp, off, size, abi.MODE_ATOMIC, site)

    def cp_async(self, warp: int, off: int, size: int = 16, site: int = 0) -> None:
        self.access(warp, off, size, abi.MODE_ASYNC_WRITE, site)

    def commit(self, warp: int, site: int = 0, off: bool = False) -> None:
        """cp.async.commit_group (`off`: the lane of a converted branch that skips it)."""
        self._as(warp)
        self._probe(abi.PROBE_ASYNC)(abi.ASYNC_COMMIT | (abi.PROBE_OFF if off else 0), 0, site)

    def wait_group(self, warp: int, n: int, site: int = 0, off: bool = False) -> None:
        self._as(warp)
        self._probe(abi.PROBE_ASYNC)(abi.ASYNC_WAIT | (abi.PROBE_OFF if off else 0), n, site)

    def wait_all(self, warp: int, site: int = 0, off: bool = False) -> None:
        self._as(warp)
        self._probe(abi.PROBE_ASYNC)(abi.ASYNC_WAIT_ALL | (abi.PROBE_OFF if off else 0), 0,
                                     site)

    def mbar(self, warp: int, off: int, op: int, arg: int = 1, site: int = 0) -> int:
        """The probe's verdict: 0 run the instruction, 1 skip it, 2 the warp leaves."""
        self._as(warp)
        return self._probe(abi.PROBE_MBAR)(off, op, arg, site)

    def bulk_load(self, warp: int, dst: int, nbytes: int, mbar_off: int, site: int = 0,
                  mask: int = 0) -> int:
        """cp.async.bulk.shared::cluster.global.mbarrier (mask: a multicast's ctaMask)."""
        self._as(warp)
        return self._probe(abi.PROBE_BULK)(dst, nbytes, mbar_off, site, mask)

    def mailbox_words(self):
        """The CTA's mailbox, as u32 words (head, tail, ..., then the posts)."""
        base = self.smem.ctypes.data
        at = (-base & 15) + self.layout.mc_offset
        return self.smem.view("u4")[at // 4:at // 4 + abi.MAILBOX_BYTES // 4]

    def peer_copy(self, dst: int, nbytes: int, mbar_off: int, site: int = 0,
                  rank: int = 1, warp: int = 0, waits: int = 0, acquired: int = 0) -> None:
        """Warp `warp` of CTA `rank` of the cluster posts its copy into this CTA (a multicast's
        part, st.async), made after `waits` cluster barrier waits and after acquiring this
        CTA's release number `acquired` (it is applied by this CTA's next probe)."""
        self.lib.cs_host_mc_post(dst, nbytes, mbar_off, site, rank | warp << 8, waits, acquired)

    def remote_release(self, warp: int) -> int:
        """Warp `warp` of this CTA arrives on a peer's mbarrier: the release's number."""
        return int(self.lib.cs_host_remote_release(warp))

    def peer_access(self, dst: int, nbytes: int, what: int, site: int = 0, rank: int = 1,
                    warp: int = 0, waits: int = 0, arrived: bool = False,
                    releases: int = 0, acquired: int = 0) -> None:
        """Warp `warp` of CTA `rank` posts its access (abi.DSMEM_*) to this CTA's bytes, made
        after `waits` cluster barrier waits (`arrived`: and one more arrival), after its
        CTA's first `releases` arrives on this CTA's mbarriers and after acquiring this CTA's
        release number `acquired`; this CTA's next probe applies it (checker/dsmem.h)."""
        frm = rank | warp << 8 | what << abi.POST_WHAT_SHIFT | (abi.POST_ARRIVED if arrived else 0)
        self.lib.cs_host_mc_post(dst, nbytes, waits, site, frm, releases, acquired)

    def peer_mbar(self, off: int, op: int, arg: int = 1, site: int = 0, rank: int = 1,
                  warp: int = 0, lanes: int = 1, release: int = 0) -> None:
        """Warp `warp` of CTA `rank` posts its operation (abi.MB_*, `lanes` lanes, `arg` each)
        on this CTA's mbarrier at `off`; an arrive is that CTA's `release`-th release to its
        peers (checker/dsmem.h)."""
        frm = (rank | warp << 8 | (abi.POST_MBAR + op) << abi.POST_WHAT_SHIFT
               | lanes << abi.POST_LANES_SHIFT)
        self.lib.cs_host_mc_post(off, arg, 0, site, frm, release, 0)

    def bulk_store(self, warp: int, src: int, nbytes: int, site: int = 0,
                   off: bool = False) -> None:
        """cp.async.bulk.global.shared::cta.bulk_group: the warp's bulk-store unit reads src
        (`off`: the lane of a converted branch that skips it, instrument/converge.py)."""
        self._as(warp)
        self._probe(abi.PROBE_BULK_STORE)(src, nbytes | (abi.BULK_OFF if off else 0), site)

    def bulk_commit(self, warp: int, site: int = 0, off: bool = False) -> None:
        self._as(warp)
        self._probe(abi.PROBE_BULK_GROUP)(abi.BULK_COMMIT | (abi.PROBE_OFF if off else 0), 0,
                                          site)

    def bulk_wait(self, warp: int, n: int, site: int = 0, off: bool = False) -> None:
        """cp.async.bulk.wait_group{.read} n."""
        self._as(warp)
        self._probe(abi.PROBE_BULK_GROUP)(abi.BULK_WAIT | (abi.PROBE_OFF if off else 0), n,
                                          site)

    def proxy_fence(self, warp: int, site: int = 0) -> None:
        """fence.proxy.async{.shared::cta}."""
        self._as(warp)
        self._probe(abi.PROBE_BULK_GROUP)(abi.PROXY_FENCE, 0, site)
    def tensor_map(self, data: bytes, footprint: int | None = None) -> int:
        """A 64-byte aligned copy of a tensor map's 128 bytes (its address is what the
        instruction names); with `footprint`, the map is known to the checker."""
        buf = np.zeros(abi.TMAP_BYTES + 64, dtype=np.uint8)
        start = -buf.ctypes.data % 64
        buf[start:start + abi.TMAP_BYTES] = np.frombuffer(data, dtype=np.uint8)
        self._maps.append(buf)
        if footprint is not None:
            k = int(np.count_nonzero(self.tmaps["fingerprint"]))
            self.tmaps[k] = (abi.tensor_map_fingerprint(data), footprint, 0)
        return buf.ctypes.data + start

    def tensor_load(self, warp: int, dst: int, tmap: int, mbar_off: int, site: int = 0,
                    op: int = abi.TENSOR_LOAD, expect_tx: int | None = None,
                    arrive_site: int = abi.NO_SITE) -> int:
        """With `expect_tx`, the load carries an mbarrier.arrive.expect_tx of that many
        bytes on its mbarrier (instrument/carry.py)."""
        self._as(warp)
        if expect_tx is not None:
            op |= abi.TENSOR_ARRIVE_TX
        return self._probe(abi.PROBE_TENSOR)(dst, tmap, mbar_off, site, op, expect_tx or 0,
                                             arrive_site)

    def tensor_load_pair(self, warp: int, dst: int, tmap: int, dst2: int, tmap2: int,
                         mbar_off: int, site: int = 0, site2: int = 0,
                         expect_tx: int | None = None, arrive_site: int = abi.NO_SITE) -> int:
        """Two loads on one mbarrier in one call (abi.PROBE_TENSOR2, carry.pairs); with
        `expect_tx`, the first carries the arrive.expect_tx before it."""
        self._as(warp)
        op = abi.TENSOR_LOAD | (abi.TENSOR_ARRIVE_TX if expect_tx is not None else 0)
        return self._probe(abi.PROBE_TENSOR2)(dst, tmap, mbar_off, site, op, expect_tx or 0,
                                              arrive_site, dst2, tmap2, site2)

    def tensor_store(self, warp: int, src: int, tmap: int, site: int = 0) -> int:
        self._as(warp)
        return self._probe(abi.PROBE_TENSOR)(src, tmap, 0, site, abi.TENSOR_STORE, 0,
                                             abi.NO_SITE)

    def mbar_wait(self, warp: int, off: int, parity: int, ok: bool = True, site: int = 0) -> int:
        return self.mbar(warp, off, abi.MB_WAIT_PARITY, parity | (2 if ok else 0), site)

    def wgmma(self, warpgroup: int, desc_a: int, desc_b: int, info: int, site: int = 0,
              warps=range(4)) -> None:
        """wgmma.mma_async by the warps of a warpgroup (each checks its share of the chunks)."""
        for q in warps:
            self._as(4 * warpgroup + q)
            self._probe(abi.PROBE_WGMMA)(desc_a, desc_b, info, site)

    def wgmma4(self, warpgroup: int, descs_a, descs_b, info: int, sites, warps=range(4)) -> None:
        """A chain of four wgmma.mma_async after one commit, one call a warp (the rewriter's
        call for such a chain: instrument/wgmma_window.py)."""
        pairs = [d for ab in zip(descs_a, descs_b, strict=True) for d in ab]
        for q in warps:
            self._as(4 * warpgroup + q)
            self._probe(abi.PROBE_WGMMA4)(*pairs, info, *sites)

    def wgmma_rows_done(self) -> int:
        """How many chain calls the rows path finished (the checker's host-build count)."""
        return int(self.lib.cs_host_wgmma_rows_done())

    def wgmma_group(self, warp: int, op: int, n: int = 0, site: int = 0) -> None:
        self._as(warp)
        self._probe(abi.PROBE_WGMMA_GROUP)(op, n, site)

    def wgmma_commit(self, warpgroup: int, site: int = 0) -> None:
        for q in range(4):
            self.wgmma_group(4 * warpgroup + q, abi.WGMMA_COMMIT, 0, site)

    def wgmma_wait(self, warpgroup: int, n: int, site: int = 0) -> None:
        for q in range(4):
            self.wgmma_group(4 * warpgroup + q, abi.WGMMA_WAIT, n, site)

    def arrive(self, warp: int, barrier: int = 0, count: int = 0, site: int = 0,
               mode: int = abi.BAR_ARRIVE) -> int:
        self._as(warp)
        return self._probe(abi.PROBE_BAR_ARRIVE)(barrier, count, site, mode)

    def wait(self, warp: int, token: int, barrier: int = 0, site: int = 0) -> None:
        self._as(warp)
        self._probe(abi.PROBE_BAR_WAIT)(token, barrier, site)

    def step(self, warp: int, site: int = 0) -> None:
        self._as(warp)
        self._probe(abi.PROBE_BAR_STEP)(site)

    def sync(self, warps, barrier: int = 0, count: int = 0, site: int = 0) -> None:
        """bar.sync by `warps`: every arrive, then (the hardware releases) every wait; with
        `bar_step`, each warp's step after the barrier."""
        if self.bar_step:
            for w in warps:
                self.step(w, site)
            return
        tokens = {w: self.arrive(w, barrier, count, site, abi.BAR_SYNC) for w in warps}
        for w, t in tokens.items():
            self.wait(w, t, barrier, site)

    def hw_arrivals(self, barrier: int) -> int:
        """How many times the checker itself arrived at named barrier `barrier` in the
        hardware (one per warp leaving the kernel: see cs_leave_cta), since the library
        was loaded."""
        return self.lib.cs_host_hw_arrivals_at(barrier)

    def cluster_arrive(self, warp: int, relaxed: bool = False, site: int = 0) -> None:
        """barrier.cluster.arrive{.relaxed}.aligned (before it)."""
        self._as(warp)
        op = abi.CLUSTER_ARRIVE | abi.BAR_ALIGNED | (abi.BAR_RELAXED if relaxed else 0)
        self._probe(abi.PROBE_CLUSTER_BAR)(op, site)

    def cluster_fence(self, warp: int, site: int = 0) -> None:
        """fence.acq_rel.cluster (after it)."""
        self._as(warp)
        self._probe(abi.PROBE_CLUSTER_BAR)(abi.CLUSTER_FENCE, site)

    def cluster_wait(self, warp: int, site: int = 0) -> None:
        """barrier.cluster.wait.aligned (after it: the hardware let the warp go)."""
        self._as(warp)
        self._probe(abi.PROBE_CLUSTER_BAR)(abi.CLUSTER_WAIT | abi.BAR_ALIGNED, site)

    def exit(self, warp: int, site: int = 0) -> None:
        self._as(warp)
        self._probe(abi.PROBE_THREAD_EXIT)(site)

    # results -------------------------------------------------------------
    def report(self, sites: SiteTable | None = None) -> Report:
        if sites is None:
            sites = SiteTable()
            for i in range(64):
                sites.add(kernel="k", event="access", ptx_line=i + 1, ptx_text=f"site{i}")
        n = int(min(self.header["stored"][0], len(self.records)))
        return Report.from_log(self.header[0], self.records[:n].copy(), self.keys.copy(), sites,
                               "k")

    def findings(self) -> list[tuple[str, int, int, int, int, int]]:
        """(kind, site, prev_site, prev_warp, offset_lo, offset_hi) of every stored record,
        in order: what two runs of one trace are compared by."""
        n = int(min(self.header["stored"][0], len(self.records)))
        return [(abi.KIND_BY_CODE[int(r["kind"])].id, int(r["site"]), int(r["prev_site"]),
                 int(r["prev_warp"]), int(r["offset_lo"]), int(r["offset_hi"]))
                for r in self.records[:n]]

    def kinds(self) -> list[tuple[str, int, int]]:
        """(kind, site, prev_site) of every stored record, in order."""
        n = int(min(self.header["stored"][0], len(self.records)))
        out = []
        for r in self.records[:n]:
            k = abi.KIND_BY_CODE[int(r["kind"])].id
            prev = int(r["prev_site"])
            out.append((k, int(r["site"]), -1 if prev == abi.NO_SITE else prev))
        return out


def findings_both_ways(make, play, ops) -> tuple[list, list]:
    """A trace played by `play(checker, ops, together)` on a fresh `make()` each way: its
    events by separate probe calls, then with runs of them by one call (cp.async copies,
    mbarrier inits): (the findings of the first, of the second)."""
    one = make()
    play(one, ops, False)
    run = make()
    play(run, ops, True)
    return one.findings(), run.findings()


def tma_ring(c: HostChecker, seed: int, carried: bool = True, read_bytes: int = 16) -> None:
    """A two-stage TMA ring on `c` (4 warps): warp 0 waits on `empty`, announces a box of 256
    bytes and loads it (with `carried`, one probe for both; else the arrive's own probe,
    and the load only where the arrive was not skipped, as the carried probe skips both);
    warps 1-3 wait on `full`, read `read_bytes` each (at the start of their own 16 bytes)
    and arrive on `empty`. Its four mbarriers
    (512-536) share two 16-byte chunks. Rare slips make some rings racy: a skipped empty
    wait, the announced bytes off either way, an extra load, a read before its wait, a
    double arrive."""
    import random

    rnd = random.Random(seed)
    box, full, empty = 256, (512, 520), (528, 536)
    tmap = c.tensor_map(bytes(range(9, 137)), footprint=box)
    for s in range(2):
        c.mbar(0, full[s], abi.MB_INIT, 1, site=10)
        c.mbar(0, empty[s], abi.MB_INIT, 3, site=10)
    c.sync(range(4))
    for it in range(8):
        s, par = it % 2, (it // 2) & 1
        if it >= 2 and rnd.random() > 0.05:
            c.mbar_wait(0, empty[s], parity=par ^ 1, site=20)
        tx = box if rnd.random() < 0.93 else rnd.choice([2 * box, box // 2, 0])
        if carried:
            c.tensor_load(0, s * box, tmap, full[s], site=1, expect_tx=tx, arrive_site=11)
        elif c.mbar(0, full[s], abi.MB_ARRIVE_EXPECT_TX, tx, site=11) == 0:
            c.tensor_load(0, s * box, tmap, full[s], site=1)
        if rnd.random() < 0.05:
            c.tensor_load(0, s * box, tmap, full[s], site=21)
        for w in (1, 2, 3):
            if rnd.random() < 0.02:
                c.read(w, s * box + 16 * w, read_bytes, site=22)
            c.mbar_wait(w, full[s], parity=par, site=23)
            c.read(w, s * box + 16 * w, read_bytes, site=24)
            for _ in range(2 if rnd.random() < 0.02 else 1):
                c.mbar(w, empty[s], abi.MB_ARRIVE, 1, site=25)
