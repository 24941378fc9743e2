"""The event table: every PTX form this issue models is classified as the model says."""

from __future__ import annotations

import pytest

from instrument import abi
from instrument.events import Event, classify, constant_registers
from instrument.ptx import parse


def one(instr: str, shared=frozenset({"smem"}), in_entry=True):
    mod = parse(f".version 9.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{{\n"
                f"\t{instr}\n}}\n")
    (it,) = [i for i in mod.functions[0].body if i.is_instruction]
    return classify(it, set(shared), in_entry=in_entry)


@pytest.mark.parametrize("instr,event,size,space", [
    ("ld.shared.u32 %r1, [%r2];", Event.READ, 4, abi.SPACE_SHARED),
    ("ld.shared::cta.u32 %r1, [%r2+4];", Event.READ, 4, abi.SPACE_SHARED),
    ("ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];", Event.READ, 16, abi.SPACE_SHARED),
    ("ld.shared.v2.u64 {%rd1, %rd2}, [%r1];", Event.READ, 16, abi.SPACE_SHARED),
    ("ld.shared.u8 %rs1, [%r1];", Event.READ, 1, abi.SPACE_SHARED),
    ("ld.shared.s16 %rs1, [%r1];", Event.READ, 2, abi.SPACE_SHARED),
    ("ld.volatile.shared.u32 %r1, [%r2];", Event.READ, 4, abi.SPACE_SHARED),
    ("ld.u32 %r1, [%rd2];", Event.READ, 4, abi.SPACE_GENERIC),
    ("ld.f64 %fd1, [%rd2+8];", Event.READ, 8, abi.SPACE_GENERIC),
    ("st.shared.u32 [%r2], %r1;", Event.WRITE, 4, abi.SPACE_SHARED),
    ("st.shared.v4.b32 [%r2+16], {%r1, %r3, %r4, %r5};", Event.WRITE, 16, abi.SPACE_SHARED),
    ("st.shared.b8 [smem+3], %rs1;", Event.WRITE, 1, abi.SPACE_SHARED),
    ("st.b16 [%rd2], %rs1;", Event.WRITE, 2, abi.SPACE_GENERIC),
    ("st.u32 [smem], %r1;", Event.WRITE, 4, abi.SPACE_SHARED),  # generic use of a .shared name
    ("atom.shared.add.u32 %r1, [%r2], 1;", Event.ATOMIC, 4, abi.SPACE_SHARED),
    ("atom.shared.cas.b64 %rd1, [%r2], %rd3, %rd4;", Event.ATOMIC, 8, abi.SPACE_SHARED),
    ("atom.add.f32 %f1, [%rd2], %f3;", Event.ATOMIC, 4, abi.SPACE_GENERIC),
    ("red.shared.add.u32 [%r2], %r1;", Event.ATOMIC, 4, abi.SPACE_SHARED),
    ("@%p1 st.shared.u32 [%r2], %r1;", Event.WRITE, 4, abi.SPACE_SHARED),
    ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];",
     Event.READ, 16, abi.SPACE_SHARED),
    ("ldmatrix.sync.aligned.m8n8.x2.trans.shared::cta.b16 {%r1, %r2}, [%r5];",
     Event.READ, 16, abi.SPACE_SHARED),
    ("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r5], {%r1};", Event.WRITE, 16,
     abi.SPACE_SHARED),
])
def test_accesses(instr, event, size, space):
    c = one(instr)
    assert c is not None and c.event is event
    assert c.size == size and c.space == space


@pytest.mark.parametrize("instr,idem", [
    ("st.shared.b32 [smem+560], 0;", True),  # Triton's partition state word
    ("st.shared.b32 [smem+560], 16843009;", True),
    ("st.shared.u8 [smem], 0x1;", True),
    ("st.shared.f32 [smem+4], 0f3F800000;", True),
    ("st.u32 [smem], 7;", True),  # generic use of a .shared name
    ("st.shared.v2.b32 [smem+8], {0, 0};", True),
    ("st.shared.v2.b32 [smem+8], {0, 1};", True),  # (the same bytes at each address, too)
    ("st.shared.b32 [%r2], 0;", False),  # lanes and warps write different places
    ("st.shared.b32 [smem+4], %r1;", False),  # a register's value
    ("st.shared.v2.b32 [smem+8], {0, %r1};", False),
    ("st.shared.v4.b32 [smem], {0, 0, 0, 0};", False),  # (16 bytes: the 16-byte probe)
    ("atom.shared.exch.b32 %r1, [smem], 0;", False),
    ("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%r1], 0, [%r2];", False),
])
def test_idempotent_stores(instr, idem):
    """A store whose every run writes the same bytes in the same place carries INFO_IDEM
    (docs/model.md, "Idempotent stores")."""
    c = one(instr)
    assert c is not None and c.idem is idem
    if c.event is Event.WRITE:
        assert bool(c.info & abi.INFO_IDEM) is idem


@pytest.mark.parametrize("instr,shape", [
    ("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r1}, [%r5];", 1),
    ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];", 4),
])
def test_ldmatrix_rows_per_lane(instr, shape):
    assert one(instr).shape == shape


@pytest.mark.parametrize("instr", [
    "ld.global.u32 %r1, [%rd2];", "ld.param.u64 %rd1, [k_param_0];", "ld.local.u32 %r1, [%rd1];",
    "ld.const.u32 %r1, [c];", "st.global.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};",
    "atom.global.add.u32 %r1, [%rd1], 1;", "ld.global.nc.f32 %f1, [%rd1];",
    "mov.u64 %rd1, smem;", "cvta.shared.u64 %rd1, %rd2;", "cvta.to.shared.u32 %r1, %rd2;",
    "isspacep.shared %p1, %rd1;", "add.s32 %r1, %r2, %r3;", "ld.u32 %r1, [gvar];",
    "redux.sync.add.u32 %r1, %r2, -1;", "shfl.sync.bfly.b32 %r1, %r2, 1, 31, -1;",
])
def test_irrelevant(instr):
    assert one(instr) is None


@pytest.mark.parametrize("instr,event", [
    ("bar.sync 0;", Event.BAR_SYNC), ("bar.sync 1, 64;", Event.BAR_SYNC),
    ("barrier.sync 0;", Event.BAR_SYNC), ("barrier.sync.aligned 2, %r3;", Event.BAR_SYNC),
    ("bar.cta.sync 0;", Event.BAR_SYNC), ("barrier.cta.sync.aligned 0;", Event.BAR_SYNC),
    ("bar.arrive 1, 64;", Event.BAR_ARRIVE), ("barrier.arrive 1, 64;", Event.BAR_ARRIVE),
    ("barrier.cta.arrive.aligned 3, 96;", Event.BAR_ARRIVE),
    ("bar.red.popc.u32 %r1, 0, %p1;", Event.BAR_RED),
    ("bar.red.and.pred %p2, 1, 64, %p1;", Event.BAR_RED),
    ("barrier.red.or.pred %p2, 0, !%p1;", Event.BAR_RED),
    ("bar.warp.sync -1;", Event.WARP_SYNC), ("membar.cta;", Event.FENCE),
    ("fence.acq_rel.gpu;", Event.CLUSTER_FENCE), ("fence.sc.cta;", Event.FENCE),
    ("fence.acq_rel.cluster;", Event.CLUSTER_FENCE), ("fence.sc.cluster;", Event.CLUSTER_FENCE),
    ("membar.gl;", Event.CLUSTER_FENCE), ("membar.cta;", Event.FENCE),
    ("ret;", Event.EXIT), ("exit;", Event.EXIT), ("@%p1 ret;", Event.EXIT),
])
def test_sync(instr, event):
    assert one(instr).event is event


def test_ret_in_a_func_is_not_an_exit():
    assert one("ret;", in_entry=False) is None
    assert one("exit;", in_entry=False).event is Event.EXIT


@pytest.mark.parametrize("instr,event,size", [
    ("cp.async.ca.shared.global [%r1], [%rd1], 16;", Event.ASYNC_WRITE, 16),
    ("cp.async.cg.shared.global.L2::128B [%r1+16], [%rd1], 16, %r3;", Event.ASYNC_WRITE, 16),
    ("cp.async.ca.shared::cta.global [%r1], [%rd1], 4;", Event.ASYNC_WRITE, 4),
    ("@%p1 cp.async.ca.shared.global [%rd1], [%rd2], 8, 0;", Event.ASYNC_WRITE, 8),
    ("cp.async.commit_group;", Event.ASYNC_COMMIT, 0),
    ("cp.async.wait_group 1;", Event.ASYNC_WAIT, 0),
    ("cp.async.wait_all;", Event.ASYNC_WAIT_ALL, 0),
])
def test_cp_async(instr, event, size):
    c = one(instr)
    assert c.event is event and c.size == size
    if event is Event.ASYNC_WRITE:
        assert c.mode == abi.MODE_ASYNC_WRITE and c.space == abi.SPACE_SHARED


@pytest.mark.parametrize("instr,op,arg,result", [
    ("mbarrier.init.shared.b64 [%r1], 1;", abi.MB_INIT, "1", None),
    ("mbarrier.inval.shared::cta.b64 [%r1];", abi.MB_INVAL, "0", None),
    ("mbarrier.arrive.shared.b64 %rd1, [%r1];", abi.MB_ARRIVE, "1", None),
    ("mbarrier.arrive.release.cta.shared::cta.b64 _, [%r1], %r3;", abi.MB_ARRIVE, "%r3", None),
    ("mbarrier.arrive_drop.shared.b64 %rd1, [%r1], 2;", abi.MB_ARRIVE_DROP, "2", None),
    ("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], 4096;", abi.MB_ARRIVE_EXPECT_TX,
     "4096", None),
    ("mbarrier.arrive_drop.expect_tx.shared::cta.b64 _, [%r1], 64;",
     abi.MB_ARRIVE_DROP_EXPECT_TX, "64", None),
    ("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r1], 128;", abi.MB_EXPECT_TX, "128", None),
    ("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%r1], 128;", abi.MB_COMPLETE_TX, "128",
     None),
    ("mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], %r2;", abi.MB_WAIT_PARITY, "%r2",
     "%p1"),
    ("mbarrier.test_wait.shared.b64 %p2, [%r1], %rd2;", abi.MB_WAIT_TOKEN, "%rd2", "%p2"),
    ("cp.async.mbarrier.arrive.noinc.shared.b64 [%r1];", abi.MB_CP_ARRIVE, "1", None),
    ("cp.async.mbarrier.arrive.shared::cta.b64 [%r1];", abi.MB_CP_ARRIVE, "0", None),
])
def test_mbarrier(instr, op, arg, result):
    c = one(instr)
    assert (c.event, c.op, c.arg, c.result) == (Event.MBARRIER, op, arg, result)
    assert c.address == "%r1"


@pytest.mark.parametrize("instr", [
    "cp.async.mbarrier.arrive.b64 [%rd1];",  # a generic address: maybe another CTA's
    "mbarrier.arrive.b64 _, [%rd1];",  # generic: maybe another CTA's
    "fence.proxy.async::generic.release.sync_restrict::shared::cluster::read.cluster;",
    "wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, "
    "%r1, 0, 1, 1, 1, 0, 0;",
    "fence.proxy.async::generic.release.sync_restrict::shared::cluster.cluster;",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
    ".multicast::cluster [%r1], [%rd1, {%r2, %r3}], [%r4];",  # (its ctaMask missing)
    "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes "
    "[%r1], [%rd1, {%r2, %r3, %r5}], [%r4], {%rs1};",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile::gather4.mbarrier::complete_tx::bytes "
    "[%r1], [%rd1, {%r2, %r3, %r5, %r6, %r7}], [%r4];",
    "cp.async.bulk.tensor.2d.global.shared::cta.tile::scatter4.bulk_group [%rd1, {%r2, %r3}], "
    "[%r1];",
    "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.im2col_no_offs.bulk_group "
    "[%rd1, {%r2, %r3}], [%r1];",
    "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned "
    "[%rd4], [%rd1], 64;",  # (the map is 128 bytes)
    # wmma tiles through a generic address (NVRTC's bf16 and tf32 loads from shared memory)
    "wmma.load.a.sync.aligned.row.m16n16k16.bf16 {%r1, %r2, %r3, %r4}, [%rd43], %r35;",
    "wmma.store.d.sync.aligned.row.m16n16k16.f32 [%rd5], {%f1, %f2, %f3, %f4, %f5, %f6, %f7, "
    "%f8}, %r9;",
    "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 {%r1, %r2}, [%rd50], %r26;",
    "st.async.shared::cluster.u32 [%r1], %r2;",  # no mbarrier completion
    "st.async.mbarrier::complete_tx::bytes.u32 [%rd1], %r2, [%rd3];",  # generic addresses
    "red.async.relaxed.cluster.mbarrier::complete_tx::bytes.add.u32 [%rd1], %r2, [%rd3];",
])
def test_unmodeled_is_never_silent(instr):
    c = one(instr)
    assert c is not None and c.event is Event.UNMODELED and c.reason


@pytest.mark.parametrize("instr", [
    "wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r1, %r2}, [%rd50], %r26;",
    "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f1}, {%r1}, {%r2}, {%f2};",
])
def test_wmma_in_global_memory_or_registers_touches_no_shared_memory(instr):
    assert one(instr) is None


@pytest.mark.parametrize("instr,event,said", [
    ("ld.acquire.cta.shared.b32 %r1, [%r2];", Event.READ, True),
    ("st.release.cta.shared.b32 [%r2], %r1;", Event.WRITE, True),
    ("atom.add.acq_rel.cta.u64 %rd1, [%rd2], 1;", Event.ATOMIC, True),  # cuda::barrier's
    ("red.and.release.cta.b32 [%rd2], %r1;", Event.ATOMIC, True),
    ("atom.add.acq_rel.gpu.u64 %rd1, [%rd2], 1;", Event.ATOMIC, False),  # (a grid counter)
    ("atom.acquire.sys.shared.cas.b32 %r1, [%r2], %r3, %r4;", Event.ATOMIC, True),
    ("ld.relaxed.cta.shared.b32 %r1, [%r2];", Event.READ, False),
    ("ld.volatile.shared.u32 %r1, [%r2];", Event.READ, False),
    ("st.release.cluster.b32 [%rd2], %r1;", Event.WRITE, True),  # a flag in a peer CTA
])
def test_acquire_release_through_shared_memory_is_said_to_be_modelled_in_part(instr, event,
                                                                             said):
    """Checked as the access it is, and listed: the order it gives other warps is not
    modelled, so a barrier built from atomics may show races that are not there."""
    c = one(instr)
    assert c.event is event
    assert bool(c.reason) is said


# Accesses to a peer CTA's shared memory: probed as accesses in the .shared::cluster space
# (the checker posts them to the peer, checker/dsmem.h); CONSAN_MULTICAST=0 lists them.
@pytest.mark.parametrize("instr,event,size", [
    ("ld.shared::cluster.u32 %r1, [%r2];", Event.READ, 4),
    ("st.shared::cluster.v2.f32 [%r2+8], {%f1, %f2};", Event.WRITE, 8),
    ("atom.shared::cluster.add.u32 %r1, [%r2], 1;", Event.ATOMIC, 4),
    ("red.relaxed.cluster.shared::cluster.add.u32 [%r2], 1;", Event.ATOMIC, 4),
])
def test_peer_accesses_are_probed_in_the_cluster_space(instr, event, size, monkeypatch):
    c = one(instr)
    assert c is not None and c.event is event and not c.reason, c
    assert c.space == abi.SPACE_CLUSTER and c.size == size
    monkeypatch.setenv("CONSAN_MULTICAST", "0")
    c = one(instr)
    assert c is not None and c.event is Event.UNMODELED and "CONSAN_MULTICAST=0" in c.reason


# .multicast::cluster copies: probed as their copy, with the ctaMask operand for the probe.
@pytest.mark.parametrize("instr,event,address,mbar,mask", [
    ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
     "[%r1], [%rd1], 4096, [%r3], %rs1;", Event.BULK_LOAD, "%r1", "%r3", "%rs1"),
    ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
     ".L2::cache_hint [%r1], [%rd1], 4096, [%r3], %rs1, %rd4;", Event.BULK_LOAD, "%r1", "%r3",
     "%rs1"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
     ".multicast::cluster [%r1], [%rd1, {%r2, %r3}], [%r4], %rs1;", Event.TENSOR_LOAD, "%r1",
     "%r4", "%rs1"),
    ("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
     ".multicast::cluster.L2::cache_hint [%r1+128], [%rd1, {%r2, %r3, %r5}], [%r4], 3, %rd6;",
     Event.TENSOR_LOAD, "%r1+128", "%r4", "3"),
])
def test_multicast_copies_are_probed_with_their_mask(instr, event, address, mbar, mask,
                                                     monkeypatch):
    c = one(instr)
    assert c is not None and c.event is event and not c.reason
    assert (c.address, c.result, c.mask) == (address, mbar, mask)
    monkeypatch.setenv("CONSAN_MULTICAST", "0")  # (the way out: listed as not modelled)
    assert one(instr).event is Event.UNMODELED


# st.async / red.async: a write of the element (vector) that completes its bytes on the
# mbarrier: probed as a bulk copy of that size (the checker notes another CTA's address).
@pytest.mark.parametrize("instr,size", [
    ("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%r1], %r2, [%r3];", 4),
    ("st.async.weak.shared::cluster.mbarrier::complete_tx::bytes.v2.b64 [%r1], {%rd1, %rd2}, "
     "[%r3];", 16),
    ("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%r1+16], "
     "{%f1, %f2, %f3, %f4}, [%r3];", 16),
    ("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%r1], "
     "%r2, [%r3];", 4),
    ("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u64 [%r1], "
     "%rd2, [%r3];", 8),
])
def test_st_async_and_red_async_are_copies_completing_tx(instr, size):
    c = one(instr)
    assert c.event is Event.BULK_LOAD and not c.reason
    assert (c.address.split("+")[0], c.arg, c.result) == ("%r1", str(size), "%r3")


@pytest.mark.parametrize("instr,op", [
    ("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r1];", abi.MB_ARRIVE),
    ("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r1], 2;", abi.MB_ARRIVE),
    ("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%r1], 64;",
     abi.MB_ARRIVE_EXPECT_TX),
    ("mbarrier.complete_tx.relaxed.cluster.shared::cluster.b64 [%r1], 64;", abi.MB_COMPLETE_TX),
])
def test_cluster_mbarrier_forms_are_modelled(instr, op):
    c = one(instr)
    assert (c.event, c.op, c.address) == (Event.MBARRIER, op, "%r1") and not c.reason


# Bulk stores, their groups and proxy fences: the forms NVRTC 13 emits for inline asm and for
# the cuda::ptx / cuda::device::experimental wrappers (which add a trailing comment).
@pytest.mark.parametrize("instr,address,size", [
    ("cp.async.bulk.global.shared::cta.bulk_group [%rd3], [%r4], %r10;", "%r4", "%r10"),
    ("cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1+128], 4096;", "%r1+128", "4096"),
    ("@%p1 cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%rd1], [%rd2], 256, "
     "%rd3;", "%rd2", "256"),
    ("cp.async.bulk.global.shared::cta.bulk_group.cp_mask [%rd1], [%r1], 256, %rs1;", "%r1",
     "256"),
    ("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32  [%rd5], [%r4], %r10; // 4.",
     "%r4", "%r10"),
    ("cp.reduce.async.bulk.global.shared::cta.bulk_group.min.u64  [%rd5], [%r4], 512; // 4.",
     "%r4", "512"),
    ("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.bf16 [%rd5], [%r4], 64;",
     "%r4", "64"),
    ("cp.reduce.async.bulk.global.shared::cta.bulk_group.L2::cache_hint.and.b32 [%rd5], [%r4], "
     "64, %rd6;", "%r4", "64"),
])
def test_bulk_store(instr, address, size):
    c = one(instr)
    assert (c.event, c.address, c.arg) == (Event.BULK_STORE, address, size)
    assert c.event.probed


@pytest.mark.parametrize("instr,event", [
    ("cp.async.bulk.commit_group;", Event.BULK_COMMIT),
    ("cp.async.bulk.wait_group 0;", Event.BULK_WAIT),
    ("cp.async.bulk.wait_group 2;", Event.BULK_WAIT),
    ("cp.async.bulk.wait_group.read 0;", Event.BULK_WAIT),
    ("cp.async.bulk.wait_group.read 1;", Event.BULK_WAIT),
    ("fence.proxy.async;", Event.PROXY_FENCE),
    ("fence.proxy.async; // 5.", Event.PROXY_FENCE),
    ("fence.proxy.async.shared::cta; // 6.", Event.PROXY_FENCE),
    ("fence.proxy.async.shared::cluster;", Event.PROXY_FENCE),
    ("fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster;", Event.PROXY_FENCE),
    # no shared memory / the async -> generic direction: nothing for the model to do
    ("fence.proxy.async.global; // 6.", Event.FENCE),
    ("fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster;", Event.FENCE),
])
def test_bulk_groups_and_proxy_fences(instr, event):
    assert one(instr).event is event


def test_bulk_load_on_an_mbarrier():
    c = one("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], "
            "256, [%r2];")
    assert (c.event, c.address, c.arg, c.result) == (Event.BULK_LOAD, "%r1", "256", "%r2")


def test_unknown_shared_instruction_is_reported():
    c = one("foo.shared.u32 %r1, [%r2];")
    assert c.event is Event.UNMODELED and "not in consan's event table" in c.reason


# wgmma: the forms NVRTC 13 emits for CUTLASS-style inline asm (tests/corpus/wgmma.cu)

@pytest.mark.parametrize("instr,info,a,b", [
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f34, %f33, %f35, %f36}, %rd51, "
     "%rd52, p, 1, 1, 0, 0;", 8 | abi.WG_INFO_A_SMEM | 1 << abi.WG_INFO_ELOG_SHIFT,
     "%rd51", "%rd52"),
    ("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, "
     "%f8}, {%r18, %r19, %r20, %r21}, %rd24, 0, 1, 1, 0;", 16 | 1 << abi.WG_INFO_ELOG_SHIFT,
     None, "%rd24"),
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f17, %f18, %f19, %f20}, {%r18, "
     "%r19, %r20, %r21}, %rd25, 0, 1, 1, 1;",
     8 | abi.WG_INFO_TRANS_B | 1 << abi.WG_INFO_ELOG_SHIFT, None, "%rd25"),
    ("@%p3 wgmma.mma_async.sync.aligned.m64n128k16.f16.f16.f16 {%r1, %r2}, %rd1, %rd2, %p1, 1, "
     "-1, 1, 0;", 128 | abi.WG_INFO_A_SMEM | abi.WG_INFO_TRANS_A | 1 << abi.WG_INFO_ELOG_SHIFT,
     "%rd1", "%rd2"),
    ("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%f1, %f2}, %rd1, %rd2, 1, 1, 1;",
     64 | abi.WG_INFO_A_SMEM | 2 << abi.WG_INFO_ELOG_SHIFT, "%rd1", "%rd2"),
    ("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {%f1}, %rd1, %rd2, p, 1, 1;",
     256 | abi.WG_INFO_A_SMEM, "%rd1", "%rd2"),
    ("wgmma.mma_async.sync.aligned.m64n48k32.satfinite.s32.s8.s8 {%r1}, %rd1, %rd2, 1;",
     48 | abi.WG_INFO_A_SMEM, "%rd1", "%rd2"),
    ("wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc {%r1}, %rd1, %rd2, 0;",
     8 | abi.WG_INFO_A_SMEM, "%rd1", "%rd2"),
])
def test_wgmma_mma_async(instr, info, a, b):
    c = one(instr)
    assert (c.event, c.op, c.address, c.arg) == (Event.WGMMA, info, a, b)


@pytest.mark.parametrize("instr,event", [
    ("wgmma.fence.sync.aligned;", Event.FENCE),
    ("wgmma.commit_group.sync.aligned;", Event.WGMMA_COMMIT),
    ("wgmma.wait_group.sync.aligned 0;", Event.WGMMA_WAIT),
    ("wgmma.wait_group.sync.aligned 1;", Event.WGMMA_WAIT),
    ("fence.proxy.async;", Event.PROXY_FENCE),
    ("fence.proxy.async.shared::cta;", Event.PROXY_FENCE),
    ("fence.proxy.async.shared::cluster;", Event.PROXY_FENCE),
    ("fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster;",
     Event.PROXY_FENCE),
    ("fence.proxy.async.global;", Event.FENCE),
    ("fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster;", Event.FENCE),
])
def test_wgmma_groups_and_proxy_fences(instr, event):
    c = one(instr)
    assert c.event is event
    assert c.event.probed == (event is not Event.FENCE)


def test_wgmma_events_leave_phase_mode():
    # async agents need vector clocks: the rewriter keys this on the "async." prefix
    assert all(e.value.startswith("async.") for e in (Event.WGMMA, Event.WGMMA_COMMIT,
                                                      Event.WGMMA_WAIT))
@pytest.mark.parametrize("instr,rank,dst,tmap,mbar", [
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], "
     "[%rd1, {%r2, %r3}], [%r4];", 2, "%r1", "%rd1", "%r4"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1+64], "
     "[%rd1, {%r2, %r3}], [%r4];", 2, "%r1+64", "%rd1", "%r4"),  # .tile is the default
    ("cp.async.bulk.tensor.1d.shared::cta.global.tile.mbarrier::complete_tx::bytes [%r1], "
     "[%rd1, {%r2}], [%r4];", 1, "%r1", "%rd1", "%r4"),
    ("@%p1 cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
     ".L2::cache_hint [%r1], [gmap, {%r2, %r3, %r5, %r6, %r7}], [%r4], %rd9;", 5, "%r1", "gmap",
     "%r4"),
])
def test_tensor_load(instr, rank, dst, tmap, mbar):
    c = one(instr)
    assert (c.event, c.op, c.address, c.arg, c.result) == (Event.TENSOR_LOAD, rank, dst, tmap,
                                                          mbar)
    assert not c.reason


@pytest.mark.parametrize("instr,rank,src,tmap", [
    ("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd14, {%r1, %r2}], [%r21];",
     2, "%r21", "%rd14"),
    ("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group.L2::cache_hint "
     "[%rd1, {%r1, %r2, %r3}], [%r21+128], %rd2;", 3, "%r21+128", "%rd1"),
    # a TMA reduction into global memory (Triton's descriptor atomic_add): its source alike
    ("@%p3 cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.bulk_group "
     "[%rd5, {%r8, %r9}], [%r10];", 2, "%r10", "%rd5"),
    ("cp.reduce.async.bulk.tensor.1d.global.shared::cta.max.tile.bulk_group [%rd5, {%r8}], "
     "[%r10];", 1, "%r10", "%rd5"),
])
def test_tensor_store_is_probed_as_a_bulk_store(instr, rank, src, tmap):
    c = one(instr)
    assert (c.event, c.op, c.address, c.arg) == (Event.TENSOR_STORE, rank, src, tmap)
    assert not c.reason  # fully modelled: nothing listed as not modelled


@pytest.mark.parametrize("instr,event,addr", [
    ("@%p2 tensormap.replace.tile.global_address.shared::cta.b1024.b64 [ %rd1 + 0 ], %rd2;",
     Event.WRITE, "%rd1 + 0"),
    ("tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%rd1], 0x1, %r4;", Event.WRITE,
     "%rd1"),
    ("@%p1 tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync"
     ".aligned [ %rd4 + 0 ], [ %rd1 + 0 ], 0x80;", Event.READ, "%rd1 + 0"),
])
def test_a_tensor_map_built_in_shared_memory_is_its_128_bytes(instr, event, addr):
    """Triton's device-made descriptors: each field written into the map in shared memory
    is a write of the map, its copy to global memory a read of it."""
    c = one(instr)
    assert (c.event, c.size, c.space, c.address) == (event, 128, abi.SPACE_SHARED, addr)
    assert not c.reason


def test_a_tensor_map_in_global_memory_touches_no_shared_memory():
    assert one("tensormap.replace.tile.global_address.global.b1024.b64 [%rd1], %rd2;") is None


def test_a_tensor_map_through_a_generic_address_is_listed():
    c = one("tensormap.replace.tile.global_address.b1024.b64 [%rd1], %rd2;")
    assert c.event is Event.UNMODELED and c.reason


def test_tensor_prefetch_touches_no_smem():
    c = one("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%rd1, {%r1, %r2}];")
    assert c.event is Event.FENCE


@pytest.mark.parametrize("body,idem", [
    ("mov.u32 %r1, 1;\n\tst.volatile.shared.u32 [smem], %r1;", True),  # NVRTC's `flag = 1`
    ("mov.b32 %r1, 0f3F800000;\n\tst.shared.f32 [smem+4], %r1;", True),
    ("mov.u32 %r1, 1;\n\tadd.u32 %r1, %r1, 1;\n\tst.shared.u32 [smem], %r1;", False),
    ("@%p1 mov.u32 %r1, 1;\n\tst.shared.u32 [smem], %r1;", False),  # maybe never set
    ("ld.param.u32 %r1, [k_param_0];\n\tst.shared.u32 [smem], %r1;", False),
    ("mov.u32 %r1, 1;\n\tst.shared.u32 [%r2], %r1;", False),
])
def test_a_register_holding_one_immediate_counts_as_it(body, idem):
    mod = parse(f".version 9.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{{\n"
                f"\t.reg .b32 %r<3>;\n\t.reg .pred %p<2>;\n\t{body}\n}}\n")
    fn = mod.functions[0]
    consts = constant_registers(fn.body)
    (st,) = [c for c in (classify(i, {"smem"}, constants=consts) for i in fn.body
                         if i.is_instruction) if c is not None and c.event is Event.WRITE]
    assert st.idem is idem


@pytest.mark.parametrize("instr", [
    "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%r1], [%r2], 64, "
    "[%r3];",
    "cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.add.u32 "
    "[%r1], [%r2], 64, [%r3];",
])
def test_a_bulk_copy_into_another_cta_is_its_copy_engines_write_there(instr):
    """Modelled as a copy completing on the destination CTA's mbarrier; its source bytes in
    this CTA are not tracked, which the listing says."""
    c = one(instr)
    assert (c.event, c.address, c.arg, c.result) == (Event.BULK_LOAD, "%r1", "64", "%r3")
    assert "not tracked" in c.reason


@pytest.mark.parametrize("instr,space", [
    ("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r1];", abi.SPACE_CLUSTER),
    ("mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64 [%r1], 64;", abi.SPACE_CLUSTER),
    ("mbarrier.arrive.shared::cta.b64 %rd1, [%r1];", abi.SPACE_SHARED),
])
def test_an_mbarrier_operation_knows_a_cluster_address(instr, space):
    """A .shared::cluster mbarrier address may be another CTA's (its rank bits tell, rank 0's
    having none): the probe's op word carries abi.MB_CLUSTER for it."""
    c = one(instr)
    assert c.event is Event.MBARRIER and c.space == space and not c.reason
