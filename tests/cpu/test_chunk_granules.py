"""Chunk granules (abi.CHUNK_GRANULE_BYTES): a module whose every shared-memory write is
whole aligned 16-byte chunks (its reads any size) is checked with 16-byte granules, a
quarter of the tables.
That is exact only if it judges every such trace as the 4-byte granules do: each trace runs
with both, with the tables in shared memory and in device memory, and the findings (kind,
site, the other access's site, and the bytes named) must be the same. The rewriter takes
chunk granules only for modules that qualify."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from instrument import abi
from tests.probe_calls import calls, echoed_on

NWARPS = 4
ALL = range(NWARPS)
WINDOW = 1024


def _checker(granule_bytes: int, vsh: bool, nwarps: int = NWARPS, copies: bool = False):
    """`copies`: for traces with mbarriers and tensor copies (box summaries, the async
    proxy); else a cp.async GEMM's layout."""
    from tests.checker_host import HostChecker

    c = HostChecker(nwarps=nwarps, smem_bytes=WINDOW, vsh=vsh, async_proxy=copies,
                    box_summary=copies, granule_bytes=granule_bytes)
    assert c.begin() == 0
    return c


def _agree(trace, vsh: bool, copies: bool = False, partial: bool = False) -> list[tuple]:
    """Run `trace` with 4-byte and with chunk granules (one at a time: each library holds
    one state); the findings must be the same. Returns them. `partial` (reads of part of a
    chunk): where a write races with several reads of its chunk, its finding may name
    another of them (4-byte granules name the read at the lowest granule, a chunk its
    readers in their order, each by its first read at a clock): the same kinds at the same
    sites over the same bytes."""
    fine = _checker(abi.GRANULE_BYTES, vsh, copies=copies)
    trace(fine)
    chunk = _checker(abi.CHUNK_GRANULE_BYTES, vsh, copies=copies)
    assert chunk.layout.granules * 4 == fine.layout.granules
    trace(chunk)
    if partial:
        def unsited(found):
            return [f[:2] + f[4:] if f[0] == "race.war" else f for f in found]
        assert unsited(chunk.findings()) == unsited(fine.findings())
    else:
        assert chunk.findings() == fine.findings()
    return chunk.findings()


def _random_trace(seed: int, nwarps: int = NWARPS, partial: bool = False):
    """Reads and writes of 16 and 32 bytes, cp.async 16, coalesced runs of chunks (ldmatrix
    rows, unrolled v4 loops), cp.async groups and waits, CTA barriers: what a cp.async +
    ldmatrix GEMM does, in any order. `partial`: reads of 4 and 8 bytes too (scalar and
    v2 loads, single and in strided runs), as a module of chunk granules may make."""
    rng = random.Random(seed)
    ops = []
    for _ in range(80):
        w, r = rng.randrange(nwarps), rng.random()
        size = rng.choice((16, 16, 32))
        off = rng.randrange(0, 384 // size) * size
        if partial and r < 0.2:
            size = rng.choice((4, 8, 16))
            off = rng.randrange(0, 384 // size) * size
            if rng.random() < 0.5:
                ops.append(("chunks", w, off % 128, abi.MODE_READ, rng.randrange(2, 5),
                            rng.choice((16, 48, 128)), size))
            else:
                ops.append(("read", w, off, size))
        elif r < 0.2:
            ops.append(("read", w, off, size))
        elif r < 0.35:
            ops.append(("write", w, off, size))
        elif r < 0.5:
            ops.append(("cp_async", w, off // 16 * 16, 16))
        elif r < 0.62:
            mode = rng.choice((abi.MODE_READ, abi.MODE_WRITE, abi.MODE_ASYNC_WRITE))
            ops.append(("chunks", w, rng.randrange(0, 8) * 16, mode, rng.randrange(2, 5),
                        rng.choice((16, 48, 128))))
        elif r < 0.72:
            ops.append(("commit", w))
        elif r < 0.8:
            ops.append(("wait_all", w))
        elif r < 0.85:
            ops.append(("wait_group", w, 1))
        else:
            ops.append(("sync",))

    def trace(c):
        for i, op in enumerate(ops):
            site = i % 60
            if op[0] == "sync":
                c.sync(range(nwarps))
            elif op[0] in ("commit", "wait_all"):
                getattr(c, op[0])(op[1], site=site)
            elif op[0] == "wait_group":
                c.wait_group(op[1], op[2], site=site)
            elif op[0] == "chunks":
                size = op[6] if len(op) > 6 else 16
                c.access_n(op[1], op[2], size, op[3], count=op[4], stride=op[5], site=site)
            else:
                getattr(c, op[0])(op[1], op[2], op[3], site=site)
    return trace


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("vsh", [True, False], ids=["smem", "device"])
def test_random_chunk_traces_agree(seed, vsh):
    _agree(_random_trace(seed), vsh)


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("vsh", [True, False], ids=["smem", "device"])
def test_random_traces_with_reads_of_part_of_a_chunk_agree(seed, vsh):
    """Reads of 4 and 8 bytes among whole-chunk writes: each lies in one chunk, and every
    write that reaches the chunk reaches its bytes, so chunk granules judge as 4-byte ones."""
    _agree(_random_trace(seed, partial=True), vsh, partial=True)


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("seed", range(40))
def test_eight_warps_judge_alike_in_shared_and_device_memory(seed):
    """Eight readers: the 16-byte write looks at the block's summaries in two vector loads.
    The device-memory tables take a coalesced probe's accesses one by one and name each one's
    finding, the shared-memory ones the first per lane: the same sites have findings, and
    every finding named in shared memory is one of those."""
    trace = _random_trace(seed, nwarps=8)
    found = []
    for vsh in (False, True):
        c = _checker(abi.CHUNK_GRANULE_BYTES, vsh, nwarps=8)
        assert c.layout.vsh_readers == (8 if vsh else 0)
        trace(c)
        found.append(c.findings())
    rows, smem = ({f[:3] for f in x} for x in found)
    assert smem <= rows
    assert {f[1] for f in smem} == {f[1] for f in rows}


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("vsh", [True, False], ids=["smem", "device"])
def test_neighbouring_chunks_of_unordered_warps_are_no_race(vsh):
    """Two warps writing and reading the two halves of 32 bytes, unordered: each its own
    chunk. A 16-byte granule holds one chunk, so nothing is reported -- while a read of the
    other's chunk is race.raw, and a read of a chunk nobody wrote uninit.read."""
    def trace(c):
        c.write(0, 0x100, 16, site=1)
        c.write(1, 0x110, 16, site=2)
        c.read(0, 0x100, 16, site=3)
        c.read(1, 0x110, 16, site=4)
        c.read(1, 0x100, 16, site=5)  # warp 0's chunk: unordered
        c.read(2, 0x120, 16, site=6)  # never written
    assert [f[:3] for f in _agree(trace, vsh)] == [("race.raw", 5, 1), ("uninit.read", 6,
                                                                        abi.NO_SITE)]


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("vsh", [True, False], ids=["smem", "device"])
def test_a_read_before_the_copy_group_is_waited_is_pending_write(vsh):
    def trace(c):
        c.cp_async(0, 0x200, site=1)
        c.commit(0)
        c.sync(ALL)
        c.read(1, 0x200, 16, site=2)  # the copy is not waited: pending
        c.wait_all(0)
        c.sync(ALL)
        c.read(1, 0x200, 16, site=3)  # waited, then the barrier: clean
    assert [f[:3] for f in _agree(trace, vsh)] == [("async.pending-write", 2, 1)]


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("vsh", [True, False], ids=["smem", "device"])
def test_random_tma_rings_agree(vsh):
    """Tensor loads, mbarriers two to a chunk, their waits and arrivals: chunk granules
    judge each ring as 4-byte granules do."""
    from tests.checker_host import tma_ring

    racy = sum(bool(_agree(lambda c, seed=seed: tma_ring(c, seed), vsh, copies=True))
               for seed in range(30))
    assert 3 <= racy <= 27  # (the slips make some rings racy, not all)


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("vsh", [True, False], ids=["smem", "device"])
def test_random_tma_rings_read_by_words_agree(vsh):
    """The same rings, their consumers reading 4 bytes of their box each."""
    from tests.checker_host import tma_ring

    racy = sum(bool(_agree(lambda c, seed=seed: tma_ring(c, seed, read_bytes=4), vsh,
                           copies=True, partial=True))
               for seed in range(30))
    assert 3 <= racy <= 27


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("vsh", [True, False], ids=["smem", "device"])
def test_a_word_beside_an_mbarrier_in_its_chunk_is_the_kernels_data(vsh):
    """A chunk module may read less than a chunk: a load of the 8 bytes beside an mbarrier in
    its chunk reaches no mbarrier and is not mbarrier.data-access, while any load that reaches
    the mbarrier's own bytes is. (Those 8 bytes can be written only by a whole-chunk write,
    which reaches the mbarrier too: where one came before the init, chunk granules keep the
    mark alone, so a read of them is judged against nothing.)"""
    def trace(c):
        c.mbar(0, 512, abi.MB_INIT, 1, site=1)
        c.sync(ALL)
        c.read(1, 520, 4, site=2)  # the word beside it
        c.read(1, 524, 4, site=3)
        c.read(2, 520, 8, site=4)
        c.read(1, 512, 4, site=5)  # the mbarrier's own bytes
        c.read(2, 516, 4, site=6)
        c.read(3, 512, 8, site=7)
    c = _checker(abi.CHUNK_GRANULE_BYTES, vsh, copies=True)
    trace(c)
    assert [f[:2] for f in c.findings()] == [("mbarrier.data-access", s) for s in (5, 6, 7)]


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("vsh", [True, False], ids=["smem", "device"])
@pytest.mark.parametrize("at", [512, 520], ids=["first-half", "second-half"])
def test_a_chunk_holding_an_mbarrier_is_its_bytes(vsh, at):
    """Every access of a chunk module that reaches the chunk reaches the mbarrier in it:
    mbarrier.data-access. (Where its other half was never written, 4-byte granules name
    that half first, as uninit.read.)"""
    def trace(c):
        c.mbar(0, at, abi.MB_INIT, 1, site=1)
        c.sync(ALL)
        c.read(1, 512, 16, site=2)
    found = []
    for g in (abi.GRANULE_BYTES, abi.CHUNK_GRANULE_BYTES):
        c = _checker(g, vsh, copies=True)
        trace(c)
        found.append([f[:2] for f in c.findings()])
    assert found[1] == [("mbarrier.data-access", 2)]
    assert found[0] == [("mbarrier.data-access" if at == 512 else "uninit.read", 2)]


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("vsh", [True, False], ids=["smem", "device"])
def test_an_mbarrier_keeps_its_chunk_marked_while_its_neighbour_is_invalidated(vsh):
    """Two mbarriers in one chunk: a 16-byte access to it reaches a live one's bytes until
    both are invalidated."""
    def trace(c):
        c.mbar(0, 512, abi.MB_INIT, 1, site=1)
        c.mbar(0, 520, abi.MB_INIT, 1, site=2)
        c.sync(ALL)
        c.mbar(0, 512, abi.MB_INVAL, site=3)
        c.sync(ALL)
        c.read(1, 512, 16, site=4)  # the mbarrier at 520 is live
        c.sync(ALL)
        c.mbar(0, 520, abi.MB_INVAL, site=5)
        c.sync(ALL)
        c.write(1, 512, 16, site=6)  # plain memory again
        c.read(2, 512, 16, site=7)  # not ordered after the write
    assert [f[:2] for f in _agree(trace, vsh, copies=True)] == [("mbarrier.data-access", 4),
                                                         ("race.raw", 7)]


PTX = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .f32 %f<8>;
    .shared .align 16 .b8 buf[1024];
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, buf;
    COPY
    bar.sync 0;
    ACCESS
    ret;
}
"""
CP = "cp.async.cg.shared.global [%r1], [%rd1], 16;\n    cp.async.commit_group;\n" \
     "    cp.async.wait_group 0;"


def _module(access: str, copy: str = CP):
    from instrument.rewrite import instrument

    return instrument(PTX.replace("COPY", copy).replace("ACCESS", access), "k.ptx")


@pytest.mark.parametrize("access,chunks", [
    ("ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r1];", True),
    ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r2, %r3, %r4, %r5}, [%r1];", True),
    ("st.shared.v4.b32 [%r1+16], {%r2, %r3, %r4, %r5};", True),
    # a read of part of a chunk: every write that reaches the chunk reaches its bytes
    ("ld.shared.f32 %f1, [%r1];", True),
    ("ld.shared.v2.f32 {%f1, %f2}, [%r1+8];", True),
    ("st.shared.f32 [%r1+4], %f1;", False),  # a write of a quarter of a chunk
    ("st.shared.v2.f32 [%r1+8], {%f1, %f2};", False),
    ("ld.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];", True),  # generic: may be shared, 16 bytes
    ("ld.f32 %f1, [%rd1];", True),
    ("st.f32 [%rd1], %f1;", False),  # generic: may be a quarter of a shared chunk
    ("ld.global.f32 %f1, [%rd1];", True),  # not shared memory: not probed
    ("atom.shared.add.u32 %r2, [%r1], 1;", False),
    ("mbarrier.init.shared.b64 [%r1+64], 1;", True),  # 8 bytes, beside only mbarriers
    ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], "
     "256, [%r1+512];", True),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
     "[%r1], [%rd1, {%r2, %r3}], [%r1+512];", True),
    ("cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1], 256;", True),
    # a multicast copy: the mailboxes' build keeps 4-byte granules (16-byte ones measured
    # 1.029x slower on the clustered ring, the H100)
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
     ".multicast::cluster [%r1], [%rd1, {%r2, %r3}], [%r1+512], 3;", False),
    # st.async: a 16-byte vector is a chunk, a word a quarter of one
    ("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%r1], "
     "{%r2, %r3, %r4, %r5}, [%r1+512];", True),
    ("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%r1], %r2, [%r1+512];", False),
])
def test_which_modules_take_chunk_granules(access, chunks):
    ins = _module(access)
    assert not ins.phase_mode
    assert ins.chunk_granules is chunks


def test_phase_modules_and_the_switch_keep_4_byte_granules(monkeypatch):
    v4 = "ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r1];"
    phase = _module(v4, copy="st.shared.v4.b32 [%r1], {%r2, %r3, %r4, %r5};")
    assert phase.phase_mode and phase.whole_chunks and not phase.chunk_granules
    monkeypatch.setenv("CONSAN_CHUNK_GRANULES", "0")
    assert not _module(v4).chunk_granules


def test_a_96_kib_triton_matmul_fits_its_tables_in_shared_memory():
    """The 2048-cube Triton matmul of the Triton issue (3 stages of 128x64 and 64x128
    halves, 8 warps, wgmma): with 4-byte granules its tables alone need more shared memory
    than an H100 CTA may have; with chunk granules the whole launch fits."""
    from pathlib import Path

    from consan.layout import Layout, Placement, window_bytes
    from instrument.rewrite import instrument

    src = Path(__file__).parents[1] / "corpus" / "triton" / "triton_matmul_s3.ptx"
    ins = instrument(src.read_text(), "triton_matmul_s3.ptx")
    assert ins.chunk_granules and ins.wgmma and ins.warp_reads
    shape = dict(nwarps=8, nthreads=256, window_bytes=window_bytes(0, 98304), log_capacity=1,
                 window_base=1024, shared_mem=98304, placement=Placement.VC_SMEM)
    chunk = Layout.for_module(ins, **shape)
    assert chunk.granule_bytes == abi.CHUNK_GRANULE_BYTES
    fine = Layout(**{**shape, "wgmma": True, "warp_reads": True, "cp_async": True})
    h100 = 227 * 1024  # cudaDevAttrMaxSharedMemoryPerBlockOptin
    assert fine.launch_shared_mem > h100 >= chunk.launch_shared_mem
    assert chunk.granules * 4 == fine.granules
    assert chunk.state({k: 0 for k, t in abi.STATE_FIELDS if t == "uint64_t"})["granules"] \
        == chunk.granules


@pytest.mark.parametrize("access,inline", [
    ("ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r1];", True),
    ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r2, %r3, %r4, %r5}, [%r1];", True),
    ("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r2, %r3}, [%r1+256];", True),
    ("@%p1 ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r1];", True),
    ("st.shared.v4.b32 [%r1+16], {%r2, %r3, %r4, %r5};", False),  # a write: the probe
    ("ld.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];", False),  # generic: the probe decides
])
def test_a_16_byte_read_of_a_chunk_module_is_settled_inline_before_its_probe(access, inline):
    """instrument/vc_reads.py: the inline read goes right before the read's own probe call,
    which the whole warp still makes where a lane cannot settle it; the module assembles
    and links with the checker build a 256-thread launch takes (16-byte granules, tables in
    shared memory)."""
    from consan import runtime, toolchain

    guarded = access.startswith("@")
    ins = _module((".reg .pred %p<2>;\n    setp.ne.u32 %p1, %r2, 0;\n    " if guarded else "")
                  + access)
    assert ins.chunk_granules and ins.inline_chunk_reads == (1 if inline else 0)
    out = ins.ptx
    if inline:
        read = out.index("// consan inline read")
        vote = out.index("vote.sync.any.pred", read)
        call = out.index(f"call {abi.PROBE_ACCESS16}", vote)
        op = access.removeprefix("@%p1 ").split(" ", 1)[0]
        assert read < vote < call < out.index(op, call)
        assert ("mov.pred %__cs_vp0, %p1;" in out) is guarded
        # (a guarded read's probe: every lane calls it, those of the guard reading: echo.py)
        (probe,) = calls(out, abi.PROBE_ACCESS16)
        assert echoed_on(out, probe) == ("%p1" if guarded else None)
    else:
        assert "consan inline read" not in out
    kw = runtime.first_link(ins, 256)
    toolchain.link_with_checker(ins, "k.ptx", toolchain.Arch(9, 0, "a"), **kw)


@pytest.mark.parametrize("access,inline", [
    # a coalesced run down a column block: rows of 32 lanes' 4, 8 and 2 bytes
    ("\n    ".join(f"ld.shared.f32 %f1, [%r1+{256 * k}];" for k in range(4)), True),
    ("\n    ".join(f"ld.shared.v2.f32 {{%f1, %f2}}, [%r1+{256 * k}];" for k in range(4)), True),
    ("ld.shared.u16 %rs1, [%r1];", True),
    ("@%p1 ld.shared.f32 %f1, [%r1];", True),
    ("ld.shared.u8 %rs1, [%r1];", False),  # a row of 32 bytes: part of a word of bytes
    # rows 192 bytes apart: a row of 128 bytes would start inside a row
    ("\n    ".join(f"ld.shared.f32 %f1, [%r1+{192 * k}];" for k in range(4)), False),
])
def test_a_warps_rows_of_reads_are_settled_inline_before_their_probe(access, inline):
    """vc_reads.py's rows: a read of 2, 4 or 8 bytes a lane whose run's rows (32 lanes'
    bytes each) are whole rows apart is settled inline a row a lane, with its probe call
    after it; the module assembles and links with the checker build a 256-thread launch
    takes."""
    from consan import runtime, toolchain

    guarded = access.startswith("@")
    ins = _module((".reg .pred %p<2>;\n    .reg .b16 %rs<2>;\n    setp.ne.u32 %p1, %r2, 0;"
                   "\n    " if guarded else ".reg .b16 %rs<2>;\n    ") + access)
    assert ins.chunk_granules and ins.inline_chunk_reads == (1 if inline else 0)
    out = ins.ptx
    if inline:
        read = out.index("// consan inline row read")
        vote = out.index("vote.sync.any.pred", read)
        (probe,) = [x for x in (abi.PROBE_ACCESS_N, abi.PROBE_ACCESS) if f"call {x}," in out]
        call = out.index(f"call {probe},", vote)
        assert read < vote < call < out.index("ld.shared", call)
        assert ("vote.sync.all.pred %__cs_vp0, %p1, -1;" in out) is guarded
    else:
        assert "consan inline row read" not in out
    kw = runtime.first_link(ins, 256)
    toolchain.link_with_checker(ins, "k.ptx", toolchain.Arch(9, 0, "a"), **kw)


def test_phase_modules_read_through_their_own_fast_path_only():
    v4 = "ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r1];"
    phase = _module(v4, copy="st.shared.v4.b32 [%r1], {%r2, %r3, %r4, %r5};")
    assert phase.phase_mode and phase.inline_chunk_reads == 0
    assert "consan inline read" not in phase.ptx


def test_a_module_of_many_chunk_reads_calls_their_probes():
    """Past vc_reads.MAX_SITES reads a module keeps every read's plain call (its code would
    grow by the inline reads' size at each)."""
    from instrument import vc_reads

    def reads(n):
        return "\n    ".join(f"ld.shared.v4.f32 {{%f1, %f2, %f3, %f4}}, [%r1+{16 * (k % 60)}];"
                               "\n    bar.sync 0;" for k in range(n))  # (reads not merged)
    assert _module(reads(vc_reads.MAX_SITES)).inline_chunk_reads == vc_reads.MAX_SITES
    many = _module(reads(vc_reads.MAX_SITES + 1))
    assert many.chunk_granules and many.inline_chunk_reads == 0
    assert "consan inline read" not in many.ptx


@pytest.mark.parametrize("copies", [False, True])
def test_blocks_start_held_whole_only_beside_copy_engine_writes(copies):
    """abi.FLAG_COPY_WRITES: every block starts held whole by epoch 0 only where a copy may
    take a block in one word; elsewhere its granules hold epoch 0 themselves, so a warp's
    first write into the block claims nothing (the verdicts are the same: the tests above
    run both ways)."""
    from consan.layout import Layout, Placement
    from tests.checker_host import HostChecker

    lay = Layout(nwarps=4, nthreads=128, window_bytes=4096, log_capacity=64, nslots=1,
                 placement=Placement.VC_SMEM, copy_engine=copies, warp_reads=True,
                 cp_async=True, granule_bytes=abi.CHUNK_GRANULE_BYTES)
    assert bool(lay.flags & abi.FLAG_COPY_WRITES) is copies
    c = HostChecker(layout=lay)
    assert c.begin() == 0
    pad = -c.smem.ctypes.data & 15  # (the checker aligns the window itself)
    smem = c.smem.view(np.uint8)[pad + lay.psh_offset:].view(np.uint32)
    gp = abi.vsh_granules(lay.granules, lay.vsh_base, lay.granule_bytes)
    rss = max(4, -(-lay.vsh_readers // 4) * 4)
    nb = gp // abi.VSH_BLOCK_GRANULES
    bt0 = (4 * gp + lay.vsh_readers * gp + 4 * rss * nb) // 4
    assert set(smem[bt0:bt0 + nb].tolist()) == {0x80000000 if copies else 0}


def test_the_measurement_switch_leaves_a_chunk_modules_reads_without_a_probe(monkeypatch):
    """CONSAN_MEASURE_SKIP_ACCESS=read (benchmarks/breakdown_async.py's "no read calls"): a
    16-byte read that would be settled inline has no probe at all, and nothing inline."""
    monkeypatch.setenv("CONSAN_MEASURE_SKIP_ACCESS", "read")
    ins = _module("ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r1];")
    assert ins.chunk_granules and ins.inline_chunk_reads == 0
    assert "consan inline read" not in ins.ptx and not calls(ins.ptx, abi.PROBE_ACCESS16)


@pytest.mark.parametrize("copy,inline", [
    (CP, 1),
    # two copies in a row, of two base registers: one run, one call, one inline write of
    # both (cp_runs.py)
    ("mov.u32 %r2, %tid.x;\n    mad.lo.u32 %r3, %r2, 16, %r1;\n    "
     "cp.async.cg.shared.global [%r1], [%rd1], 16;\n    "
     "cp.async.cg.shared.global [%r3], [%rd1], 16;\n    cp.async.commit_group;", 1),
    # a guarded copy: its call alone (its lanes are the guard's)
    (".reg .pred %p<2>;\n    setp.ne.u32 %p1, %r2, 0;\n    "
     "@%p1 cp.async.cg.shared.global [%r1], [%rd1], 16;", 0),
    # a copy of 4 bytes is not a chunk's: its module keeps 4-byte granules
    ("cp.async.ca.shared.global [%r1], [%rd1], 4;", 0),
])
def test_a_16_byte_copy_of_a_chunk_module_is_settled_inline_before_its_call(copy, inline):
    """instrument/vc_writes.py: the inline write goes right before the copy's call (one
    copy's, or a run's), which the whole warp still makes where a lane cannot settle its
    copy; the module assembles and links with the checker build a 256-thread launch takes."""
    from consan import runtime, toolchain

    # (after a barrier: the entry's begin probe goes before its first probed instruction)
    ins = _module("ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r1];",
                  copy="bar.sync 0;\n    " + copy)
    assert ins.inline_chunk_writes == inline
    out = ins.ptx
    if inline:
        assert ins.chunk_granules
        at = out.index("atom.shared.cas.b32")
        vote = out.index("vote.sync.any.pred", at)
        call = out.index("call __consan_cp16", vote)
        assert at < vote < call < out.index("cp.async.cg.shared.global", call)
        assert len(re.findall(r"atom\.shared\.cas\.b32", out)) == copy.count("cp.async.cg")
        assert f"+{4 * abi.VF_WSITE}];" in out and f"+{abi.SHV_CPTICKS}];" in out
        kw = runtime.first_link(ins, 256)
        toolchain.link_with_checker(ins, "k.ptx", toolchain.Arch(9, 0, "a"), **kw)
    else:
        assert "atom.shared.cas.b32" not in out


def test_the_measurement_switch_leaves_a_chunk_modules_copies_to_their_calls(monkeypatch):
    """CONSAN_INLINE_WRITES=0 (a side-by-side measurement): every copy calls."""
    monkeypatch.setenv("CONSAN_INLINE_WRITES", "0")
    ins = _module("ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r1];", copy="bar.sync 0;\n    " + CP)
    assert ins.chunk_granules and ins.inline_chunk_writes == 0
    assert "atom.shared.cas.b32" not in ins.ptx and calls(ins.ptx, abi.PROBE_CP16)


def test_a_module_of_many_chunk_copies_calls_them():
    """Past vc_writes.MAX_SITES copy calls a module keeps every copy's plain call."""
    from instrument import vc_writes

    def copies(n):
        return "bar.sync 0;\n    " + "\n    ".join(
            f"cp.async.cg.shared.global [%r1+{16 * (k % 60)}], [%rd1], 16;"
            "\n    cp.async.commit_group;" for k in range(n))
    assert _module("", copy=copies(vc_writes.MAX_SITES)).inline_chunk_writes == \
        vc_writes.MAX_SITES
    many = _module("", copy=copies(vc_writes.MAX_SITES + 1))
    assert many.chunk_granules and many.inline_chunk_writes == 0
