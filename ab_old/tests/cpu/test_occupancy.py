"""instrument/occupancy.py: a kernel held to a number of resident CTAs per SM."""

from __future__ import annotations

import pytest

from instrument import occupancy
from instrument.rewrite import InstrumentError, instrument

PTX = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry bounded(
    .param .u64 p
)
.maxntid 256, 1, 1
.minnctapersm 1
{
    ret;
}

.visible .entry free(
    .param .u64 p
)
{
    ret;
}
"""


def _entry(ptx: str, kernel: str) -> str:
    """The kernel's text from its .entry to its body's `{`."""
    a = ptx.index(f".entry {kernel}(")
    return ptx[a:ptx.index("{", a)]


def test_a_bounded_kernel_gets_the_ctas_beside_its_bounds_and_the_probes_its_cap():
    ins = instrument(PTX)
    held = occupancy.hold_ctas(ins, "bounded", 2, 256)
    head = _entry(held.ptx, "bounded")
    assert head.count(".minnctapersm") == 1 and ".minnctapersm 2" in head
    assert ".maxntid 256, 1, 1" in head
    assert held.max_regs == 128  # (ptxas: 65536 registers over two CTAs of 256 threads)
    assert _entry(held.ptx, "free") == _entry(ins.ptx, "free")
    assert occupancy.bounds(held.ptx, "bounded") == (256, 2)


def test_a_kernel_without_bounds_gets_the_launchs_block_as_its_bound():
    held = occupancy.hold_ctas(instrument(PTX), "free", 4, 128)
    assert occupancy.bounds(held.ptx, "free") == (128, 4)
    assert held.max_regs == 128
    assert occupancy.register_cap(instrument(PTX), "free", 512, 2) == 64


def test_a_kernel_asking_more_ctas_keeps_its_own():
    ptx = PTX.replace(".minnctapersm 1", ".minnctapersm 3")
    held = occupancy.hold_ctas(instrument(ptx), "bounded", 2, 256)
    assert occupancy.bounds(held.ptx, "bounded") == (256, 3)


def test_an_unknown_kernel_is_refused_by_name():
    with pytest.raises(InstrumentError, match="no kernel 'nope'"):
        occupancy.hold_ctas(instrument(PTX), "nope", 2, 256)


# The runtime's choice, on the fake GPU (tests/fake_gpu.py): the clustered ring of
# tests/kernels/dsmem_ring.py, 256 threads a CTA, its granule tables in shared memory (its
# peers reach it by copies and mbarrier operations only), or in device memory
# (CONSAN_VC_SMEM=0: with chunk granules there, runtime.chunks_by_choice).
@pytest.fixture(scope="module")
def ring_build():
    from consan import pipeline
    from tests.kernels import dsmem_ring as g

    return pipeline.build(g.source(4), ("-arch=sm_90a",))


@pytest.fixture(params=["shared", "device"])
def tables(request, monkeypatch):
    monkeypatch.setenv("CONSAN_VC_SMEM", "1" if request.param == "shared" else "0")
    return request.param


def _prepare(monkeypatch, b, pairs: int, regs: dict[bytes, int], link=None):
    import os

    from consan import runtime
    from consan.layout import Placement
    from tests.fake_gpu import Gpu

    gpu = Gpu(regs=regs)
    gpu.install(monkeypatch)
    monkeypatch.setattr(runtime.toolchain, "link", link or (lambda mods, arch, extra=(): b"native"))
    vsh = os.environ.get("CONSAN_VC_SMEM", "1") != "0"
    b._cubins.clear()
    b._cubins.update({(False, 0, vsh, None, not vsh): b"plain",
                      (False, 0, vsh, ("dsmem_ring", 2, 256), not vsh): b"held"})
    p = runtime.Prepared(b, "dsmem_ring", (2 * pairs, 1, 1), (256, 1, 1))
    assert p.layout.placement is (Placement.VC_SMEM if vsh else Placement.DEVICE)
    assert p.cluster_chunks is not vsh
    return p, gpu


@pytest.mark.parametrize("native_regs,held_regs,want_slots,loaded", [
    (20, 128, 264, b"held"),    # held to the native two CTAs a SM: one wave
    (200, 128, 132, b"plain"),  # the cap would take registers from the kernel's own code
    (20, 254, 132, b"plain"),   # the held build holds no more CTAs: the first one kept
])
def test_a_grid_the_instrumented_registers_split_in_waves_is_held_to_the_native_ctas(
        monkeypatch, ring_build, tables, native_regs, held_regs, want_slots, loaded):
    p, gpu = _prepare(monkeypatch, ring_build, 132,
                      {b"plain": 254, b"held": held_regs, b"native": native_regs})
    assert p.nslots == want_slots and p.module.cubin == loaded


def test_a_grid_that_fits_one_wave_is_not_relinked(monkeypatch, ring_build, tables):
    p, gpu = _prepare(monkeypatch, ring_build, 66, {b"plain": 254, b"held": 128, b"native": 20})
    assert p.nslots == 132 and p.module.cubin == b"plain" and gpu.loaded == b"plain"


def test_a_module_that_does_not_link_alone_is_not_held(monkeypatch, ring_build, tables):
    from consan import toolchain

    def no_link(mods, arch, extra=()):
        raise toolchain.CompileError("nvJitLink: unresolved extern function", "")

    p, _ = _prepare(monkeypatch, ring_build, 132, {b"plain": 254, b"held": 128}, no_link)
    assert p.nslots == 132 and p.module.cubin == b"plain"


# A phase-mode kernel of 1024 threads with no launch bounds, its tables in device memory
# (CONSAN_PHASE_SMEM=0: where they do not fit in shared memory).
@pytest.fixture(scope="module")
def wide_build():
    from consan import pipeline

    src = ('extern "C" __global__ void wide(int* o) { __shared__ int s[1024];'
           ' s[threadIdx.x] = threadIdx.x; __syncthreads();'
           ' o[threadIdx.x] = s[1023 - threadIdx.x]; }')
    return pipeline.build(src, ("-arch=sm_90a",))


@pytest.mark.parametrize("held_regs", [64, 72])
def test_a_block_the_instrumented_registers_cannot_launch_is_held_to_one_cta(
        monkeypatch, wide_build, held_regs):
    """The probes raise the kernel's registers (110 on the H100) past the 64 a block of 1024
    threads may have: relinked held to one CTA of the block, it launches; where even that
    build cannot, the error names the kernel, its block and its registers."""
    from consan import runtime
    from consan.errors import ConsanError
    from tests.fake_gpu import Gpu

    assert wide_build.instrumented.phase_mode
    monkeypatch.setenv("CONSAN_PHASE_SMEM", "0")
    gpu = Gpu(regs={b"plain": 110, b"held": held_regs})
    gpu.install(monkeypatch)
    wide_build._cubins.clear()
    wide_build._cubins.update({(False, 0, False, None, False): b"plain",
                               (False, 0, False, ("wide", 1, 1024), False): b"held"})
    if held_regs > 64:
        with pytest.raises(ConsanError, match=r"wide cannot launch with block \(1024, 1, 1\)"
                                              r".* 72 registers"):
            runtime.Prepared(wide_build, "wide", (2, 1, 1), (1024, 1, 1))
        return
    p = runtime.Prepared(wide_build, "wide", (2, 1, 1), (1024, 1, 1))
    assert p.module.cubin == b"held" and p.nslots == 2
    assert occupancy.register_cap(wide_build.instrumented, "wide", 1024, 1) == 64


# The same ring at four and six stages of 4 KiB, 132 clusters: with its granule tables in
# shared memory (4-byte granules) a CTA of six stages asks for about 117 KiB, room for one
# CTA an SM where the native kernel runs two; with chunk granules (its accesses are whole
# chunks) about 58 KiB; in device memory less.
@pytest.fixture(scope="module", params=[4, 6], ids=["4 stages", "6 stages"])
def deep_ring(request):
    from consan import pipeline
    from tests.kernels import dsmem_ring as g

    return request.param, pipeline.build(g.source(request.param), ("-arch=sm_90a",))


def _deep_prepared(monkeypatch, deep_ring, exact: bool, vc_smem: str,
                   cubins: dict[tuple, bytes], regs: dict[bytes, int]):
    """The deep ring prepared on the fake GPU with these cubins and registers (its
    instrumented module made not whole chunks where `exact` is false, as one with a 4-byte
    write somewhere), CONSAN_VC_SMEM=`vc_smem`, 264 CTAs."""
    from dataclasses import replace

    from consan import runtime
    from tests.fake_gpu import Gpu

    stages, b = deep_ring
    if not exact:
        b = runtime.Build(replace(b.instrumented, whole_chunks=False), b.arch, b.source_name,
                          b.ptx)
    static = 4096 * stages + 64  # the kernel's stages and mbarriers
    gpu = Gpu(regs=regs, static_smem={c: static for c in (*cubins.values(), b"native")})
    gpu.install(monkeypatch)
    monkeypatch.setattr(runtime.toolchain, "link", lambda mods, arch, extra=(): b"native")
    monkeypatch.setenv("CONSAN_VC_SMEM", vc_smem)
    b._cubins.clear()
    b._cubins.update(cubins)
    return runtime.Prepared(b, "dsmem_ring", (264, 1, 1), (256, 1, 1))


@pytest.mark.parametrize("exact", [True, False], ids=["whole chunks", "not whole chunks"])
@pytest.mark.parametrize("native_regs", [20, 254], ids=["native two an SM", "native one"])
def test_tables_that_cost_a_wave_in_shared_memory_take_chunks_or_device_memory(
        monkeypatch, deep_ring, native_regs, exact):
    """Where its 4-byte granule tables in shared memory cost the grid a wave the native
    kernel runs in one, a cluster module of whole chunks takes chunk granules there (its
    own build); one whose accesses are not all whole chunks takes device memory (4-byte
    granules: chunk ones would not be exact)."""
    from consan.layout import Placement
    from instrument import abi

    stages, b = deep_ring
    assert b.instrumented.multicast and b.instrumented.chunks_exact
    assert not b.instrumented.chunk_granules  # (4-byte granules unless the runtime chooses)
    ring = ("dsmem_ring", 2, 256)
    cubins = {(False, 0, True, None, False): b"vsh", (False, 0, True, ring, False): b"vsh held",
              (False, 0, True, None, True): b"vsh chunks",
              (False, 0, True, ring, True): b"vsh chunks held",
              (False, 0, False, None, False): b"dev", (False, 0, False, ring, False): b"dev held",
              (False, 0, False, None, True): b"dev chunks",
              (False, 0, False, ring, True): b"dev chunks held"}
    regs = {**dict.fromkeys(cubins.values(), 128), b"dev": 254, b"dev chunks": 254,
            b"native": native_regs}
    p = _deep_prepared(monkeypatch, deep_ring, exact, "1", cubins, regs)
    moved = stages == 6 and native_regs == 20
    want = (b"vsh chunks" if exact else b"dev held") if moved else b"vsh"
    assert p.module.cubin == want
    assert p.layout.placement is (Placement.DEVICE if want == b"dev held" else Placement.VC_SMEM)
    assert p.layout.granule_bytes == (abi.CHUNK_GRANULE_BYTES if want == b"vsh chunks"
                                      else abi.GRANULE_BYTES)
    assert p.cluster_chunks is (want == b"vsh chunks")
    assert p.nslots == (132 if stages == 6 and not moved else 264)


@pytest.mark.parametrize("exact", [True, False], ids=["whole chunks", "not whole chunks"])
def test_a_cluster_module_of_whole_chunks_takes_chunk_granules_in_device_memory(
        monkeypatch, deep_ring, exact):
    """With its tables in device memory (CONSAN_VC_SMEM=0) the ring links its build with
    chunk granules (runtime.chunks_by_choice); a module not all of whose accesses are whole
    chunks keeps 4-byte granules."""
    from consan import runtime
    from consan.layout import Placement
    from instrument import abi

    cubins = {(False, 0, False, None, False): b"dev", (False, 0, False, None, True): b"dev chunks"}
    p = _deep_prepared(monkeypatch, deep_ring, exact, "0", cubins,
                       {b"dev": 128, b"dev chunks": 128, b"native": 20})
    assert runtime.chunks_by_choice(p.build.instrumented) is exact
    assert p.layout.placement is Placement.DEVICE and p.nslots == 264
    assert p.module.cubin == (b"dev chunks" if exact else b"dev")
    assert p.layout.granule_bytes == (abi.CHUNK_GRANULE_BYTES if exact else abi.GRANULE_BYTES)
    assert p.cluster_chunks is exact
