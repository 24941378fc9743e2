"""The launch layout (consan.layout): the runtime and the host build of the checker fill the
state block from it alike, and every layout the runtime picks for corpus kernels is sound:
its shared-memory regions are aligned and disjoint and fit, the tables its mode indexes in
device memory are there, the others are not, and the checker finds a race with it."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from consan import runtime, tma
from consan.layout import Layout, Placement
from instrument import abi
from instrument.ptx import parse
from instrument.rewrite import Instrumented, instrument
from tests import corpus_build
from tests.fake_gpu import ROOM, Gpu

# phase mode; cp.async; bulk copies and stores; named barriers (no barrier-0 rows); wgmma
# (no generic reads); a warp-specialised pipeline (copy engines, box summaries)
FILES = ("reduce_smem", "cp_async", "bulk_copy", "named_barriers", "wgmma",
         "warp_specialized_pipeline")
ENVS = {"default": {}, "device": {"CONSAN_PHASE_SMEM": "0", "CONSAN_VC_SMEM": "0"}}
# (block threads, dynamic shared memory, static shared memory, registers)
SHAPES = [(128, 0, 0, 32), (256, 4096, 8192, 32), (128, 1000, 48 * 1024, 200),
          (256, 200 * 1024, 0, 64)]
# the runtime's pointer tables the checker keeps in shared memory in FLAG_VC_SMEM mode
POINTERS = tuple(n for n, t in abi.STATE_FIELDS if t == "uint64_t")
VC_SMEM_ONLY_IN_SMEM = ("vis", "granule", "rslot", "readbits", "rsite", "aread", "wgread",
                        "bsum")


@functools.cache
def corpus_module(stem: str) -> Instrumented:
    (f,) = [f for f in corpus_build.corpus_files() if f.stem == stem]
    ptx = corpus_build.compile_cached(f.source(), f.path.name,
                                      [f"-arch={corpus_build.ARCH_HOPPER}", "-std=c++17"])
    return instrument(parse(ptx, f.path.name))


def prepared(monkeypatch, ins: Instrumented, env: dict[str, str], shape, window_base: int):
    """A runtime.Prepared of the module's first kernel on the fake GPU, and that GPU."""
    block, shared, static, regs = shape
    gpu = Gpu(static_smem={b"plain": static, b"psh": static, b"vsh": static}, regs=regs)
    gpu.install(monkeypatch, window_base)
    for k in ("CONSAN_PHASE_SMEM", "CONSAN_VC_SMEM", "CONSAN_PSH_MAXREG"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    b = runtime.Build(ins, None, "k.ptx", ins.ptx)  # type: ignore[arg-type]
    b._cubins.update({(False, 0, False, None, False): b"plain",
                      (False, 0, True, None, False): b"vsh",
                      (True, runtime.psh_max_regs(block), False, None, False): b"psh"})
    return runtime.Prepared(b, ins.kernels[0], (3, 1, 1), (block, 1, 1), shared), gpu


def scalars(state) -> dict[str, int]:
    return {n: int(state[n]) for n, t in abi.STATE_FIELDS if t == "uint32_t"}


CASES = [pytest.param(stem, env, shape, base, id=f"{stem}-{env}-{i}-base{base}")
         for stem in FILES for env in ENVS for i, shape in enumerate(SHAPES)
         for base in (abi.SMEM_RESERVED_BYTES, 0)]


@pytest.mark.parametrize("stem,env,shape,base", CASES)
def test_runtime_layout_is_sound(monkeypatch, stem, env, shape, base):
    ins = corpus_module(stem)
    p, gpu = prepared(monkeypatch, ins, ENVS[env], shape, base)
    lay, st = p.layout, gpu.state_block()
    block, shared, static, _ = shape
    # the state block the device gets is the layout's, and says what the module does
    assert scalars(st) == scalars(lay.state(dict.fromkeys(POINTERS, 0))[0])
    assert (lay.nwarps, lay.nthreads, lay.shared_mem) == (block // 32, block, shared)
    assert lay.window_bytes == static + shared + abi.SMEM_RESERVED_BYTES
    assert lay.granules * abi.GRANULE_BYTES >= lay.window_bytes
    assert 1 <= lay.nslots <= 3
    flags = int(st["flags"])
    assert bool(flags & abi.FLAG_PHASE_MODE) == ins.phase_mode
    assert bool(flags & abi.FLAG_WGMMA) == ins.wgmma
    assert bool(flags & abi.FLAG_CP_ASYNC) == ins.cp_async
    assert bool(flags & abi.FLAG_BULK_STORES) == ins.async_proxy
    assert bool(flags & abi.FLAG_WARP_READS) == ins.warp_reads
    # the mode: where the tables went, and that it was the runtime's to choose
    smem_flags = flags & (abi.FLAG_PHASE_SMEM | abi.FLAG_VC_SMEM)
    assert smem_flags == {Placement.DEVICE: 0, Placement.PHASE_SMEM: abi.FLAG_PHASE_SMEM,
                          Placement.VC_SMEM: abi.FLAG_VC_SMEM}[lay.placement]
    if env == "device" or shared > 100 * 1024:
        assert lay.placement is Placement.DEVICE
    elif shared == 0:  # (room to spare)
        assert lay.placement is (Placement.PHASE_SMEM if ins.phase_mode else Placement.VC_SMEM)
    assert gpu.loaded == {Placement.DEVICE: b"plain", Placement.PHASE_SMEM: b"psh",
                          Placement.VC_SMEM: b"vsh"}[lay.placement]
    assert not flags & abi.FLAG_BAR0_ROWS or (ins.bar0_only and lay.placement is Placement.VC_SMEM)
    # dynamic shared memory: the user's bytes, the checker's variables, its tables, in order,
    # each 16-byte aligned (the checker aligns the window base itself: 16 bytes more)
    assert lay.shv_offset >= shared and lay.shv_offset % 16 == 0
    assert lay.psh_offset >= lay.shv_offset + abi.SHV_BYTES and lay.psh_offset % 16 == 0
    assert lay.psh_bytes % 16 == 0
    assert (lay.psh_bytes > 0) == (lay.placement is not Placement.DEVICE)
    assert p.launch_shared_mem == lay.psh_offset + lay.psh_bytes + 16
    assert p.launch_shared_mem + static <= ROOM or lay.placement is Placement.DEVICE
    # the device tables: each pointer its own buffer, as large as the layout says
    sizes = lay.table_bytes()
    assert set(sizes) | {"log", "records", "keys", "tmaps"} == set(POINTERS)
    for name, nbytes in sizes.items():
        assert p.tables[name].nbytes >= nbytes and p.tables[name].ptr == int(st[name])
    ptrs = [int(st[n]) for n in POINTERS if n != "records"]
    assert len(set(ptrs)) == len(ptrs) and 0 not in ptrs
    if lay.placement is Placement.PHASE_SMEM:
        assert not any(sizes.values())
    if lay.placement is Placement.VC_SMEM:
        assert int(st["vsh_base"]) == base and int(st["vsh_readers"]) > 0
        check_vc_tables(lay)
    else:
        assert int(st["vsh_base"]) == int(st["vsh_readers"]) == 0
    box = bool(flags & abi.FLAG_BOX_SUMMARY)
    assert box == (sizes["bsum"] > 0) == (bool(int(st["bsum_words"])))
    assert box == (ins.copy_engine and lay.placement is Placement.DEVICE and not ins.phase_mode)
    assert p.shadow_bytes == sum(sizes.values()) + lay.psh_bytes * lay.nslots


def check_vc_tables(lay: Layout) -> None:
    """FLAG_VC_SMEM: no device table of what shared memory holds, and room for the sites the
    checker indexes per slot (checker.cu, cs_vsh_layout)."""
    sizes = lay.table_bytes()
    assert not any(sizes[k] for k in VC_SMEM_ONLY_IN_SMEM), sizes
    assert not lay.flags & abi.FLAG_BOX_SUMMARY
    gp = abi.vsh_granules(lay.granules, lay.vsh_base)
    nb, nr = gp // abi.VSH_BLOCK_GRANULES, lay.vsh_readers
    assert sizes["wsite"] >= 4 * lay.nslots * gp
    assert sizes["vrsite"] >= 4 * lay.nslots * (nr * gp + (nb + 3) // 4 * 4)


def test_vc_tables_of_a_module_with_no_reader():
    """A module that only writes shared memory (with copy engines, say) has no reader
    index: its launch keeps the granule tables in shared memory all the same."""
    for base in (0, abi.SMEM_RESERVED_BYTES):
        lay = Layout(nwarps=4, nthreads=128, window_bytes=8192 + base, log_capacity=16,
                     nslots=2, copy_engine=True, placement=Placement.VC_SMEM, window_base=base)
        assert lay.vsh_readers == 0
        check_vc_tables(lay)


needs_cxx = pytest.mark.needs_host_compiler


@needs_cxx
def test_a_module_with_no_reader_keeps_its_copy_sites():
    """With no reader index, a whole-block copy's site still goes to its own word of the
    device table (vrsite), and a write the copy is not ordered before names it."""
    from tests.checker_host import HostChecker

    lay = Layout(nwarps=4, nthreads=128, window_bytes=8192, log_capacity=64, copy_engine=True,
                 placement=Placement.VC_SMEM)
    ck = HostChecker(layout=lay)
    assert ck.begin() == 0
    mbar, block = 8000, 8  # the copy fills block 8 (bytes 1024..1151) whole
    ck.mbar(0, mbar, abi.MB_INIT, 1, site=1)
    ck.mbar(0, mbar, abi.MB_ARRIVE_EXPECT_TX, 128, site=2)
    assert ck.bulk_load(0, block * 128, 128, mbar, site=3) == 0
    assert ck.tables["vrsite"].view(np.uint32)[block] == 3
    ck.write(1, block * 128 + 4, 4, site=4)
    assert ck.kinds() == [("async.pending-write", 4, 3)]


@needs_cxx
@pytest.mark.parametrize("stem,env,shape,base", [c for c in CASES if 0 < c.values[2][1] < 8192])
def test_host_checker_runs_the_runtimes_layout(monkeypatch, stem, env, shape, base):
    """The host checker given a launch's layout fills the same state block as the runtime,
    and its checker finds a race between two warps in the last bytes of the window."""
    from tests.checker_host import HostChecker

    p, gpu = prepared(monkeypatch, corpus_module(stem), ENVS[env], shape, base)
    ck = HostChecker(layout=p.layout)
    assert scalars(ck.state[0]) == scalars(gpu.state_block())
    assert ck.begin() == 0
    off = p.layout.window_bytes - 8
    ck.write(0, off, 4, site=1)
    ck.read(1, off, 4, site=2)
    assert ck.kinds() == [("race.raw", 2, 1)]


def test_state_needs_every_pointer():
    lay = Layout(nwarps=4, nthreads=128, window_bytes=2048, log_capacity=16)
    ptrs = dict.fromkeys(POINTERS, 1)
    assert lay.state(ptrs)["granules"][0] == 512
    del ptrs["tmaps"]
    with pytest.raises(KeyError):
        lay.state(ptrs)


def test_modes_a_layout_cannot_have():
    with pytest.raises(AssertionError):
        Layout(nwarps=4, nthreads=128, window_bytes=2048, log_capacity=16,
               placement=Placement.PHASE_SMEM)  # phase-mode tables for a module with clocks
    with pytest.raises(AssertionError):
        Layout(nwarps=4, nthreads=128, window_bytes=2048, log_capacity=16, bar0_rows=True)


def test_state_block_bytes_are_the_fields_in_order():
    """Packed as cs_state_t: the pointers, then the u32 fields, no padding."""
    lay = Layout(nwarps=8, nthreads=256, window_bytes=4096 + 1024, log_capacity=64, nslots=5,
                 wgmma=True, placement=Placement.VC_SMEM, window_base=1024, shared_mem=100)
    ptrs = {n: 0x1000 * (i + 1) for i, n in enumerate(POINTERS)}
    raw = lay.state(ptrs).tobytes()
    words = np.frombuffer(raw[8 * len(ptrs):], dtype="<u4")
    assert np.frombuffer(raw[:8 * len(ptrs)], dtype="<u8").tolist() == list(ptrs.values())
    names = [n for n, t in abi.STATE_FIELDS if t == "uint32_t"]
    got = dict(zip(names, words.tolist(), strict=True))
    assert got["nslots"] == 5 and got["granules"] == 1280 and got["nlogical"] == abi.TID_REMOTE
    assert got["shv_offset"] == 112 and got["psh_offset"] == 112 + abi.SHV_BYTES
    assert got["vsh_base"] == 1024 and got["vsh_readers"] == 2  # the wgmma units
    assert got["flags"] == abi.FLAG_WGMMA | abi.FLAG_VC_SMEM


@pytest.mark.parametrize("block,cap,warps", [(256, 40, 48), (128, 40, 48), (32, 40, 48),
                                             (512, 40, 48), (1024, 32, 64), (96, 40, 48)])
def test_the_phase_mode_cap_keeps_48_warps_per_sm(monkeypatch, block, cap, warps):
    """As far as registers go (65536 per SM): probes are mostly inline, warps pay more."""
    monkeypatch.delenv("CONSAN_PSH_MAXREG", raising=False)
    assert runtime.psh_max_regs(block) == cap
    ctas = 65536 // (cap * block)
    assert ctas * -(-block // 32) >= warps


@pytest.mark.parametrize("stem", ["tma_tensor", "reduce_smem", "bulk_copy"])
def test_a_launch_sends_the_tensor_maps_table_only_where_the_kernel_names_maps(monkeypatch,
                                                                              stem):
    """The table of known tensor maps is the launch's (its arguments' maps first), copied to
    the device when it changes; a module without tensor copies never builds it (it is host
    time on every launch, which the GPU waits for before a small kernel)."""
    import hashlib

    import consan
    from tests.cpu.test_tma import fake_array

    monkeypatch.setattr(tma, "encode", lambda i: hashlib.sha512(repr(i).encode()).digest() * 2)
    tma.forget_all()
    ins = corpus_module(stem)
    assert ins.tensor_maps == ("cp.async.bulk.tensor" in ins.ptx)
    p, _gpu = prepared(monkeypatch, ins, {}, SHAPES[0], abi.SMEM_RESERVED_BYTES)
    arg = consan.tensor_map(fake_array((64, 64), ptr=0x7F0000300000), box_shape=(8, 16))
    p.launch_resets((arg, np.int32(1)))
    sent = getattr(p.tmaps, "host", None)
    if ins.tensor_maps:
        assert sent == tma.device_table_bytes((arg,))
        assert abi.tensor_map_fingerprint(arg.tobytes()).to_bytes(8, "little") in sent
    else:
        assert sent is None
    tma.forget_all()
