"""Proofs before launch of kernels whose shared memory is written by TMA copies completing
on an mbarrier and read by bulk stores (instrument/static_proof.py, proof_mbarrier.py):
Triton's `desc.load` / `desc.atomic_add` tile proven for its launch's tensor maps, each
wait and barrier it needs shown by a mutant the proof refuses, and the rules on small
hand-written kernels."""

from __future__ import annotations

from pathlib import Path

import pytest

from instrument.events import classify, constant_registers
from instrument.ptx import parse
from instrument.rewrite import _shared_symbols
from instrument.static_proof import Proof, prove
from tests.cpu import test_static_proof_async

# tests/kernels/triton_corpus.py's tma_add_into, compiled by Triton 3.6 for sm_90a: two
# warps each load half the 64x64 f32 tile (a 32x64 box, 8192 bytes) on one mbarrier, every
# thread waits for it, and the same two warps reduce the tile into global memory
ADD_INTO = Path(__file__).parents[1] / "corpus" / "triton" / "triton_tma_add_into.ptx"
BOX = 32 * 64 * 4


def _prove(ptx: str, maps=(BOX, BOX), dims=None):
    return test_static_proof_async._prove(ptx, dims=dims, maps=maps)


def _edit(text: str, line: int, old: str, new: str) -> str:
    lines = text.splitlines(keepends=True)
    assert old in lines[line - 1], lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new)
    return "".join(lines)


def test_tritons_tma_tile_is_proven_for_its_launch_maps():
    got = _prove(ADD_INTO.read_text())
    assert isinstance(got, Proof), got
    assert (got.threads, got.accesses, got.barriers) == (128, 2, 5)
    why = _prove(ADD_INTO.read_text(), maps=())  # (the box is the map's, known at launch)
    assert not isinstance(why, Proof) and why.unknown, why
    assert "the box of tensor map `tma_add_into_kernel_param_0` is not known" in why
    # (a box of the whole tile: each copy delivers it all, the phase completes at the first)
    assert not isinstance(_prove(ADD_INTO.read_text(), maps=(2 * BOX, 2 * BOX)), Proof)


NEVER_DONE = "line 83: threads wait for an mbarrier phase that nothing completes"
MORE = "line 74: copies deliver"
MUTANTS = [
    # no wait for the copies: the reduction reads bytes the copies may still be writing
    (83, "mbarrier.try_wait.parity.shared.b64 complete, [%r1], %r5;",
     "setp.eq.b32 complete, 1, 1;", "the bulk copy at line 74 and the bulk store at line 99"),
    # the wait's loop gone: one try may fail before the copies landed
    (84, "@!complete bra.uni waitLoop;", "", "a wait whose result"),
    # the other parity: that phase is the one after, which nothing completes
    (77, "mov.b32 	%r5, 0;", "mov.b32 	%r5, 1;", NEVER_DONE),
    # fewer bytes expected than the two warps' copies deliver: the phase may complete
    # before the second lands
    (60, "16384", "8192", MORE),
    # more: the phase never completes
    (60, "16384", "32768", NEVER_DONE),
    # the arrival gone: the phase never completes
    (60, "@%p1 mbarrier.arrive.expect_tx", "@%p1 mbarrier.expect_tx", NEVER_DONE),
    # every lane issues a copy, not the elected one: 64 copies on a phase of two
    (67, "and.pred 	%p2, %p5, %p4;", "mov.pred 	%p2, %p5;", MORE),
    # the reduction issued before the wait: it reads what the copies may still write
    (77, "mov.b32 	%r5, 0;", "mov.b32 	%r5, 0;\n\t@%p2 cp.reduce.async.bulk.tensor.2d.global."
     "shared::cta.add.bulk_group [%rd2, {%r3, %r4}], [%r2];",
     "the bulk copy at line 74 and the bulk store at line 78"),
]


@pytest.mark.parametrize(("line", "old", "new", "why"), MUTANTS)
def test_each_wait_and_barrier_of_the_tile_is_needed(line, old, new, why):
    got = _prove(_edit(ADD_INTO.read_text(), line, old, new))
    assert isinstance(got, str) and why in got, got


def test_copies_before_the_arrival_that_expects_their_bytes_complete_the_phase_after_it():
    """Without the barrier between thread 0's `arrive.expect_tx` and the two warps' copies,
    a copy may complete its bytes first: the transaction count goes below zero while the
    phase still waits for its one arrival, which expects the bytes as it arrives."""
    got = _prove(_edit(ADD_INTO.read_text(), 62, "bar.sync 	0;", ""), maps=(BOX, BOX))
    assert isinstance(got, Proof), got


HEAD = """
.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 128 .b8 smem[];
.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)
.reqntid 64, 1, 1
{
    .reg .b32 %r<40>;
    .reg .b64 %rd<10>;
    .reg .pred %p<5>;
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, smem;
    add.u32 %r4, %r3, %r2;
    add.u32 %r5, %r3, 1024;
    setp.eq.u32 %p1, %r1, 0;
    ld.param.u64 %rd1, [k_param_0];
    @%p1 mbarrier.init.shared.b64 [%r5], 1;
    bar.sync 0;
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r5], 256;
    @%p1 cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r3], [%rd1], 256, [%r5];
"""
# CUDA's form of the wait (NVRTC's loop around inline assembly's try_wait)
WAIT = """$L_w:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r5], 0;
    @%p2 bra $L_d;
    bra.uni $L_w;
$L_d:
"""


def _kernel(body: str, head: str = HEAD) -> str:
    return head + body + "\n    ret;\n}\n"


@pytest.mark.parametrize(("body", "why"), [
    # every warp waits, then reads the copy's bytes: its wait orders them, no barrier needed
    (WAIT + "    ld.shared.u32 %r7, [%r4];", None),
    # the second warp reads without waiting: only a barrier after a wait would order it
    ("    setp.lt.u32 %p3, %r1, 32;\n    @!%p3 bra $L_r;\n" + WAIT + "$L_r:\n"
     "    ld.shared.u32 %r7, [%r4];", "the bulk copy at line 22 and the access at line 31"),
    # the copy's bytes read before the wait
    ("    ld.shared.u32 %r7, [%r4];\n" + WAIT,
     "the bulk copy at line 22 and the access at line 23"),
    # a store over the copy's bytes after the wait, by another warp than the reader's: the
    # barrier between them orders it
    (WAIT + "    ld.shared.u32 %r7, [%r4];\n    bar.sync 0;\n    st.shared.u32 [%r4], %r1;", None),
    # the init and another warp's use with no barrier between
    (WAIT.replace("$L_w:", "bar.sync 0;\n$L_w:"), None),
    # a store into the mbarrier object
    (WAIT + "    st.shared.u32 [%r5], %r1;", "an access to the bytes of the mbarrier"),
])
def test_copies_on_an_mbarrier(body, why):
    got = _prove(_kernel(body))
    if why is None:
        assert isinstance(got, Proof), got
    else:
        assert isinstance(got, str) and why in got, got


def test_an_mbarrier_is_used_by_other_warps_only_after_a_barrier_behind_its_init():
    head = HEAD.replace("    bar.sync 0;\n", "")
    got = _prove(_kernel(WAIT, head))
    assert isinstance(got, str) and "warp 1 uses the mbarrier that warp 0 initialises" in got
    assert isinstance(_prove(_kernel(WAIT)), Proof)


STORE = """    st.shared.u32 [%r4], %r1;
    @FENCE
    bar.sync 0;
    @%p1 cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r3], 256;
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group.read 0;
"""


@pytest.mark.parametrize(("fence", "why"), [
    ("fence.proxy.async.shared::cta;", None),
    ("", "with no fence.proxy.async of that warp"),
])
def test_a_bulk_store_of_generic_writes_needs_their_proxy_fence(fence, why):
    text = HEAD.split("    @%p1 mbarrier.init")[0] + STORE.replace("@FENCE", fence) + \
        "    ret;\n}\n"
    got = _prove(text, maps=())
    if why is None:
        assert isinstance(got, Proof), got
    else:
        assert isinstance(got, str) and why in got, got


def _cuda(source: str, name: str, block, params, maps):
    from tests import corpus_build

    ptx = corpus_build.compile_cached(source, f"{name}.cu",
                                      ["-arch=compute_90a", "-std=c++17", "-lineinfo"])
    mod = parse(ptx, name)
    fn = next(f for f in mod.functions if f.name == name)
    shared, consts = _shared_symbols(mod), constant_registers(fn.body)
    index = {id(it): i for i, it in enumerate(mod.items)}
    return prove(fn, mod.items[index[id(fn.header)]:fn.open_index],
                 lambda it: classify(it, shared, in_entry=True, constants=consts), shared,
                 dims=block, params=params, maps=maps)


def test_a_tma_and_wgmma_pipeline_is_proven_for_its_launch():
    """bench_async's TMA + wgmma GEMM: thread 0 refills a stage after the CTA barrier that
    follows the warpgroup's wgmma wait; its operands sit in two shared arrays aligned to
    1024 bytes beside the mbarriers' array."""
    from tests.kernels import tma_wgmma_gemm as g

    box = 64 * g.KT * 2
    ksteps = {3: (16, 32)}  # (the K loop's trips: an `int` the launch passes)
    got = _cuda(g.source(), g.KERNEL, g.BLOCK, ksteps, (box, box))
    assert isinstance(got, Proof), got
    assert got.barriers == 1 + 16
    why = _cuda(g.source(), g.KERNEL, g.BLOCK, ksteps, ())
    assert not isinstance(why, Proof) and why.unknown, why
    # (seed 004: the refill issued before wgmma.wait_group; the warps still waiting for the
    # stage's last phase may miss it, and the copy may overwrite operands being read)
    racy = _cuda(g.source(racy=True), g.KERNEL, g.BLOCK, ksteps, (box, box))
    assert isinstance(racy, str) and "the mbarrier's next phase may complete before warp" \
        in racy, racy


def _ring(subs: dict, ntiles: int):
    from tests.kernels import gpu_kernels as gk

    src = gk.fill(gk.TMA_RING, {**gk.TMA_RING_CLEAN, **subs})
    return _cuda(src, "tma_ring", (96, 1, 1), {2: (ntiles, 32)},
                 (gk.TMA_RING_ROWS * gk.TMA_RING_COLS * 4,))


@pytest.mark.parametrize("ntiles", [1, 4, 5, 16])
def test_a_warp_specialised_tma_ring_is_proven(ntiles):
    """bench_async's ring: lane 0 of warp 0 produces into four stages, waiting on each
    stage's `empty` mbarrier before a refill; warps 1 and 2 wait on `full`, read the stage,
    `__syncwarp()`, and lane 0 of each arrives on `empty`. No CTA barrier after the first:
    every order comes from the mbarriers (their waits run as the threads block and resume)."""
    got = _ring({}, ntiles)
    assert isinstance(got, Proof), got
    assert got.barriers == 1


@pytest.mark.parametrize(("case", "ntiles", "why"), [
    # the producer refills a stage the consumers may still read: its next copy on the
    # stage's `full` mbarrier is issued before anything saw the last one land
    ("producer-skips-empty-wait", 12, "it may act on the mbarrier before the copies of an "
                                      "earlier phase landed"),
    # the consumers read before waiting for the copies
    ("consumer-reads-before-full-wait", 4, "both touch byte 0 of `_ZZ8tma_ringE3buf`, one "
                                           "writing"),
    ("consumer-reads-before-full-wait", 9, "threads wait for an mbarrier phase that nothing "
                                           "completes"),
    # the consumers' __syncwarp gone: lane 0's arrival releases its own reads and wait, not
    # its warp's other lanes' (which may still wait for the phase the refill moves past)
    ("no-syncwarp", 8, "the mbarrier's next phase may complete before warp 1's wait"),
])
def test_each_wait_of_the_ring_is_needed(case, ntiles, why):
    from tests.kernels import gpu_kernels as gk

    subs = gk.TMA_RING_RACY[case][0] if case in gk.TMA_RING_RACY else {}
    if case == "no-syncwarp":
        subs = {"__syncwarp();": ""}
    got = _ring(subs, ntiles)
    assert isinstance(got, str) and why in got, got


@pytest.mark.parametrize(("use", "proven"), [
    # (a store under the election's predicate of the warp's index to the warp's one word:
    # any lane stores the same)
    ("    @%p3 st.shared.u32 [%r6], %r9;", True),
    # (its lane's index: which value lands depends on the lane elected)
    ("    @%p3 st.shared.u32 [%r6], %r1;", False),
    # (the same to the lane's own word: which word is written depends on the lane elected)
    ("    @%p3 st.shared.u32 [%r4], %r1;", False),
    # (a branch on the election: as unknown as the lane it picks)
    ("    @%p3 bra $L_e;\n    bra.uni $L_x;\n$L_e:\n    st.shared.u32 [%r4], %r1;\n$L_x:", False),
    # (a select on it)
    ("    selp.b32 %r8, 1, 0, %p3;\n    setp.ne.b32 %p4, %r8, 0;\n"
     "    @%p4 st.shared.u32 [%r6], %r1;", False),
])
def test_what_an_election_decides_must_not_depend_on_the_lane_elected(use, proven):
    """Each warp's elected lane stores, then every thread reads the word of lane 0 of its
    warp: proven only where the store's address is the same for every lane it may pick."""
    body = ("    shr.u32 %r9, %r1, 5;\n    shl.b32 %r10, %r9, 7;\n    add.u32 %r6, %r3, %r10;\n"
            "    elect.sync %r20|%p3, -1;\n" + use + "\n    bar.sync 0;\n"
            "    ld.shared.u32 %r7, [%r6];")
    got = _prove(_kernel(body, HEAD.split("    @%p1 mbarrier.init")[0]), maps=())
    assert isinstance(got, Proof) == proven, got
