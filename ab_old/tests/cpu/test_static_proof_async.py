"""Proofs before launch of kernels with cp.async and wgmma (instrument/static_proof.py,
instrument/proof_rules.py): Triton's pipelined matmul proven for its launch's integer
arguments, each of its waits and barriers shown needed by a mutant the proof refuses, and
the rules on small hand-written kernels."""

from __future__ import annotations

from pathlib import Path

import pytest

from instrument.static_proof import Proof
from tests.proof_util import prove_kernel

MATMUL = Path(__file__).parents[1] / "corpus" / "triton" / "triton_matmul_s3.ptx"
# M, N, K: its parameters 3 to 5 (0-2 and 6-7 pointers), (value, bits the launch passes)
SIZES = {3: (512, 32), 4: (512, 32), 5: (512, 32)}


def _prove(ptx: str, params: dict[int, int] | None = None, dims=None, maps=()):
    return prove_kernel(ptx, dims=dims, params=params, maps=maps)


def test_tritons_pipelined_matmul_is_proven_for_its_launch_values():
    text = MATMUL.read_text()
    got = _prove(text, SIZES)
    assert isinstance(got, Proof), got
    # 24 cp.async, 4 mma_async, 8 st.shared and 8 ldmatrix
    assert (got.threads, got.accesses, got.params) == (256, 44, 3)
    assert got.barriers == 1 + 2 * (512 // 64) + 2  # (the prologue's, two a trip, the end's)
    assert "for the values of 3 integer parameters at launch" in got.sentence()
    why = _prove(text)  # (the loop's length is K's)
    assert not isinstance(why, Proof) and why.unknown, why


def _mutant(line: int, new: str) -> str:
    lines = MATMUL.read_text().splitlines(keepends=True)
    assert lines[line - 1].split()[0] in ("bar.sync", "cp.async.wait_group",
                                          "wgmma.wait_group.sync.aligned")
    lines[line - 1] = new + ("\n" if new else "")
    return "".join(lines)


# (line, its replacement, why the proof refuses it); the GPU test runs each through the
# checker too
MUTANTS = [
    # the barrier after each trip's cp.async wait: the other warps' copies not yet seen
    (370, "", "the cp.async at line 96 and the wgmma at line 389"),
    # the barrier before a trip's copies refill the stage the last wgmma read
    (433, "", "the wgmma at line 390 and the cp.async at line 436"),
    # the epilogue's barrier after the last waits
    (503, "", "the cp.async at line 437 and the access at line 578"),
    # the barrier between the epilogue's stores and its ldmatrix reads
    (592, "", "two warps touch the granule at byte 128"),
    # one group too many in flight: the stage the wgmma reads may still be landing
    (369, "\tcp.async.wait_group \t3;", "the cp.async at line 138 and the wgmma at line 390"),
    # the wgmma of the stage about to be refilled may still be reading it
    (416, "\twgmma.wait_group.sync.aligned 2;", "the wgmma at line 390 and the cp.async at "
                                                "line 437"),
    (416, "", "the wgmma at line 390 and the cp.async at line 436"),
    # the epilogue's stores over operands the last wgmma may still read
    (500, "", "the wgmma at line 390 and the access at line 585"),
    # the epilogue's stores over the copies of stages past K, still landing
    (502, "", "the cp.async at line 437 and the access at line 577"),
]


@pytest.mark.parametrize(("line", "new", "why"), MUTANTS)
def test_each_wait_and_barrier_of_the_matmul_is_needed(line, new, why):
    got = _prove(_mutant(line, new), SIZES)
    assert isinstance(got, str) and why in got, got


def test_the_prologues_barrier_orders_nothing_the_rules_need():
    # (before it only cp.async were issued, each thread's own, none waited for: it orders no
    # shared-memory access; the GPU test replays this mutant through the checker)
    assert isinstance(_prove(_mutant(166, ""), SIZES), Proof)


HEAD = """
.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 16 .b8 smem[];
.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)
.reqntid 64, 1, 1
{
    .reg .b32 %r<40>;
    .reg .b64 %rd<10>;
    .reg .pred %p<5>;
    .reg .f32 %f<8>;
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, smem;
    add.u32 %r4, %r3, %r2;
    xor.b32 %r5, %r2, 128;
    add.u32 %r6, %r3, %r5;
    ld.param.u64 %rd1, [k_param_0];
"""


def _kernel(body: str, head: str = HEAD) -> str:
    return head + body + "\n    ret;\n}\n"


COPY = "    cp.async.ca.shared.global [%r4], [%rd1], 4;\n    cp.async.commit_group;\n"


@pytest.mark.parametrize(("body", "why"), [
    (COPY + "    cp.async.wait_group 0;\n    ld.shared.u32 %r7, [%r4];", None),
    (COPY + "    ld.shared.u32 %r7, [%r4];\n    cp.async.wait_group 0;",
     "the cp.async at line 20 and the access at line 22"),
    # (another warp's bytes: its wait is its own, a barrier must follow it)
    (COPY + "    cp.async.wait_group 0;\n    ld.shared.u32 %r7, [%r6];",
     "the cp.async at line 20 and the access at line 23"),
    (COPY + "    cp.async.wait_group 0;\n    bar.sync 0;\n    ld.shared.u32 %r7, [%r6];",
     None),
    # (a barrier alone does not land a copy)
    (COPY + "    bar.sync 0;\n    ld.shared.u32 %r7, [%r6];\n    cp.async.wait_group 0;",
     "the cp.async at line 20 and the access at line 23"),
    # (wait_all commits the open group and waits for it)
    ("    cp.async.ca.shared.global [%r4], [%rd1], 4;\n    cp.async.wait_all;\n"
     "    bar.sync 0;\n    ld.shared.u32 %r7, [%r6];", None),
    # (a wait for all but the newest group leaves it in flight)
    (COPY + "    cp.async.wait_group 1;\n    bar.sync 0;\n    ld.shared.u32 %r7, [%r6];",
     "the cp.async at line 20 and the access at line 24"),
    # (the thread's own store over its copy in flight)
    (COPY + "    st.shared.u32 [%r4], %r1;\n    cp.async.wait_group 0;",
     "the cp.async at line 20 and the access at line 22"),
])
def test_a_copy_lands_at_its_threads_wait_and_others_see_it_after_a_barrier(body, why):
    got = _prove(_kernel(body))
    if why is None:
        assert isinstance(got, Proof), got
    else:
        assert isinstance(got, str) and why in got, got


LOOP = """    ld.param.u32 %r8, [k_param_1];
    mov.u32 %r9, 0;
$L_loop:
    cp.async.ca.shared.global [%r4], [%rd1], 4;
    cp.async.commit_group;
    cp.async.wait_group 0;
    bar.sync 0;
    ld.shared.u32 %r7, [%r6];
    bar.sync 0;
    add.u32 %r9, %r9, 1;
    setp.lt.u32 %p1, %r9, %r8;
    @%p1 bra $L_loop;"""


def test_a_loop_over_a_parameter_is_followed_with_the_launchs_value():
    why = _prove(_kernel(LOOP))
    assert isinstance(why, str) and why.unknown, why
    got = _prove(_kernel(LOOP), {1: (3, 32)})
    assert isinstance(got, Proof) and got.barriers == 6 and got.params == 1, got


def test_a_shuffled_value_is_the_source_lanes():
    # (lane 0's tid broadcast to its warp: warp 0 reads byte 0, warp 1 byte 128; each its
    # own word after its own store)
    body = ("    shfl.sync.idx.b32 %r10, %r2, 0, 31, -1;\n    add.u32 %r11, %r3, %r10;\n"
            "    st.shared.u32 [%r4], %r1;\n    bar.sync 0;\n    ld.shared.u32 %r7, [%r11];")
    assert isinstance(_prove(_kernel(body)), Proof)
    # (without the barrier too: each warp reads its own lane 0's word)
    assert isinstance(_prove(_kernel(body.replace("bar.sync 0;\n", ""))), Proof)
    # (the other warp's word, with no barrier: a race the shuffled value leads to)
    other = body.replace("add.u32 %r11, %r3, %r10;", "xor.b32 %r14, %r10, 128;\n"
                         "    add.u32 %r11, %r3, %r14;").replace("bar.sync 0;\n", "")
    got = _prove(_kernel(other))
    assert isinstance(got, str) and "two warps touch the granule at byte 0" in got, got
    # (bfly 32 has no lane: each keeps its own; down 16 reads lane + 16 within the warp)
    down = body.replace("idx.b32 %r10, %r2, 0, 31", "down.b32 %r10, %r2, 16, 31")
    assert isinstance(_prove(_kernel(down)), Proof)


WG_HEAD = HEAD.replace(".reqntid 64, 1, 1", ".reqntid 128, 1, 1")
# B of an m64n8k16 mma: 8 rows of 32 bytes, K-major, no swizzle, LBO 128, SBO 256: bytes
# [0, 256) of smem, stored by threads 0-15 (warp 0), 16 bytes each
WG_STORE = """    setp.lt.u32 %p2, %r1, 16;
    shl.b32 %r12, %r1, 4;
    add.u32 %r13, %r3, %r12;
    @%p2 st.shared.v4.b32 [%r13], {%r1, %r1, %r1, %r1};
"""
WG_MMA = """    shr.u32 %r20, %r3, 4;
    and.b32 %r21, %r20, 16383;
    cvt.u64.u32 %rd4, %r21;
    or.b64 %rd5, %rd4, 68720001024;
    wgmma.fence.sync.aligned;
    wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, {%r30, %r31, %r32, %r33}, %rd5, 1, 1, 1, 0;
    wgmma.commit_group.sync.aligned;
"""  # noqa: E501 - one instruction


@pytest.mark.parametrize(("body", "why"), [
    (WG_STORE + "    fence.proxy.async.shared::cta;\n    bar.sync 0;\n" + WG_MMA
     + "    wgmma.wait_group.sync.aligned 0;", None),
    # (the generic stores not fenced for the async proxy that wgmma reads through)
    (WG_STORE + "    bar.sync 0;\n" + WG_MMA + "    wgmma.wait_group.sync.aligned 0;",
     "last written by warp 0 with no fence.proxy.async"),
    # (a fence after the barrier: the writer's fence must be ordered before the issue)
    (WG_STORE + "    bar.sync 0;\n    fence.proxy.async.shared::cta;\n" + WG_MMA,
     "last written by warp 0 with no fence.proxy.async"),
    # (no barrier: warps 1-3 of the warpgroup, which judge their chunks of the operand,
    # have not seen warp 0's stores)
    (WG_STORE + "    fence.proxy.async.shared::cta;\n" + WG_MMA,
     "the access at line 23 and the wgmma at line 30"),
    # (the same, over bytes written and fenced before the barrier too: the new stores are
    # still not seen by warps 1-3)
    (WG_STORE + "    fence.proxy.async.shared::cta;\n    bar.sync 0;\n" + WG_STORE
     + "    fence.proxy.async.shared::cta;\n" + WG_MMA + "    wgmma.wait_group.sync.aligned 0;",
     "the access at line 29 and the wgmma at line 36"),
    # (a store over the operand while the wgmma may still read it)
    (WG_STORE + "    fence.proxy.async.shared::cta;\n    bar.sync 0;\n" + WG_MMA
     + "    bar.sync 0;\n    @%p2 st.shared.v4.b32 [%r13], {%r1, %r1, %r1, %r1};",
     "the wgmma at line 31 and the access at line 34"),
    (WG_STORE + "    fence.proxy.async.shared::cta;\n    bar.sync 0;\n" + WG_MMA
     + "    wgmma.wait_group.sync.aligned 0;\n    bar.sync 0;\n"
     "    @%p2 st.shared.v4.b32 [%r13], {%r1, %r1, %r1, %r1};", None),
])
def test_a_wgmma_reads_its_descriptors_bytes_until_its_group_is_waited_for(body, why):
    got = _prove(_kernel(body, WG_HEAD))
    if why is None:
        assert isinstance(got, Proof), got
    else:
        assert isinstance(got, str) and why in got, got


def test_a_descriptor_not_made_from_the_shared_symbol_is_refused():
    body = WG_STORE + "    fence.proxy.async.shared::cta;\n    bar.sync 0;\n" + \
        WG_MMA.replace("cvt.u64.u32 %rd4, %r21;", "cvt.u64.u32 %rd4, %r1;")
    got = _prove(_kernel(body, WG_HEAD))
    assert isinstance(got, str) and "B descriptor" in got, got


# A review's cases, each proven before its fix though the checker (or the GPU's own value)
# disagrees; each is refused now.
SPLIT_FENCE = """    setp.ge.u32 %p2, %r1, 16;
    shl.b32 %r12, %r1, 4;
    add.u32 %r13, %r3, %r12;
    @%p2 bra $L_F;
    st.shared.v4.b32 [%r13], {%r1, %r1, %r1, %r1};
    bra $L_J;
$L_F:
    fence.proxy.async.shared::cta;
$L_J:
    bar.sync 0;
""" + WG_MMA + "    wgmma.wait_group.sync.aligned 0;"
UNCERTAIN_REWRITE = WG_STORE + """    bar.sync 0;
    sub.u32 %r24, %r1, 32;
    setp.lt.u32 %p3, %r24, 16;
    setp.lt.u32 %p5, %r24, 32;
    shl.b32 %r25, %r24, 4;
    add.u32 %r26, %r3, %r25;
    mov.u32 %r27, %ctaid.x;
    setp.eq.u32 %p4, %r27, 0;
    @%p4 bra $L_SKIP;
    @%p3 st.shared.v4.b32 [%r26], {%r1, %r1, %r1, %r1};
$L_SKIP:
    @%p5 fence.proxy.async.shared::cta;
    bar.sync 0;
""" + WG_MMA + "    wgmma.wait_group.sync.aligned 0;"
TWO_SHFL_SITES = """    st.shared.u32 [%r4], %r1;
    mov.u32 %r10, 0;
    mov.u32 %r15, %laneid;
    and.b32 %r17, %r2, -128;
    setp.lt.u32 %p1, %r15, 16;
    @%p1 bra $L_A;
    shfl.sync.idx.b32 %r11, %r10, 0, 31, -1;
    bra $L_J;
$L_A:
    mov.u32 %r10, 128;
    shfl.sync.idx.b32 %r16, %r10, 0, 31, -1;
    mov.u32 %r11, 0;
$L_J:
    add.u32 %r18, %r17, %r11;
    add.u32 %r12, %r3, %r18;
    ld.shared.u32 %r7, [%r12];"""
SHFL_LANE_FROM_ADDRESS = """    st.shared.u32 [%r4], %r1;
    mov.u32 %r15, %laneid;
    setp.eq.u32 %p1, %r15, 0;
    selp.b32 %r16, %r2, %r5, %p1;
    shr.u32 %r20, %r3, 4;
    min.u32 %r21, %r20, 1;
    shfl.sync.idx.b32 %r11, %r16, %r21, 31, -1;
    add.u32 %r12, %r3, %r11;
    ld.shared.u32 %r7, [%r12];"""
SIGN_EXTENDED = """    st.shared.u32 [%r4], %r1;
    mov.u32 %r10, 128;
    cvt.s8.s32 %r11, %r10;
    shr.u32 %r12, %r11, 24;
    and.b32 %r13, %r12, 128;
    xor.b32 %r14, %r2, %r13;
    add.u32 %r15, %r3, %r14;
    ld.shared.u32 %r7, [%r15];"""
WG_FENCED = WG_STORE + "    fence.proxy.async.shared::cta;\n    bar.sync 0;\n"


@pytest.mark.parametrize(("body", "head", "params", "why"), [
    # (a split warp's store and fence run in either order: the fence may come first)
    (SPLIT_FENCE, WG_HEAD, None, "no fence.proxy.async"),
    # (if the uncertain rewrite does not run, warp 0's unfenced store is the last write)
    (UNCERTAIN_REWRITE, WG_HEAD, None, "last written by warp 0 with no fence.proxy.async"),
    # (lanes 16-31's shfl meets lanes 0-15's, whose lane 0 holds 128 on the GPU)
    (TWO_SHFL_SITES, HEAD, None, "the address `%r12` is not known"),
    # (the source lane is 1 on the GPU, whose shared address is not 0)
    (SHFL_LANE_FROM_ADDRESS, HEAD, None, "the address `%r12` is not known"),
    # (a mask of bits the address has above 1024: not the same for every such address)
    (WG_FENCED + WG_MMA.replace("shr.u32 %r20, %r3, 4;", "add.u32 %r22, %r3, 1024;\n"
                                "    and.b32 %r23, %r22, -2048;\n    shr.u32 %r20, %r23, 4;"),
     WG_HEAD, None, "B descriptor `%rd5` is not known"),
    # (the symbol cancels: the start field is absolute, not an offset from the symbol)
    (WG_FENCED + WG_MMA.replace("shr.u32 %r20, %r3, 4;", "shr.u32 %r22, %r3, 4;\n"
                                "    sub.u32 %r23, %r22, %r22;\n    add.u32 %r20, %r23, 128;"),
     WG_HEAD, None, "B descriptor `%rd5` is not known"),
    # (cvt to .s8 sign-extends into its 32-bit register: 0xffffff80 on the GPU, whose
    # address is the other warp's word)
    (SIGN_EXTENDED, HEAD, None, "two warps touch the granule at byte 0"),
    # (a load of 16 bits of a 32-bit parameter: not followed)
    (SIGN_EXTENDED.replace("    mov.u32 %r10, 128;\n    cvt.s8.s32 %r11, %r10;",
                           "    ld.param.s16 %r11, [k_param_1];"), HEAD, {1: (-1, 32)},
     "the address `%r15` is not known"),
    # (a parameter named in a comment is no parameter: k_param_1 is the launch's 128)
    ("    st.shared.u32 [%r4], %r1;\n    ld.param.u32 %r10, [k_param_1];\n"
     "    xor.b32 %r11, %r2, %r10;\n    add.u32 %r12, %r3, %r11;\n    ld.shared.u32 %r7, [%r12];",
     HEAD.replace("k(.param .u64 k_param_0, .param .u32 k_param_1)",
                  "k(\n  // .param .u32 n_old (removed)\n  .param .u64 k_param_0,\n"
                  "  .param .u32 k_param_1,\n  .param .u32 k_param_2)"),
     {1: (128, 32), 2: (0, 32)},
     "two warps touch the granule at byte 0"),
])
def test_what_the_checker_or_the_gpu_would_see_otherwise_is_refused(body, head, params, why):
    got = _prove(_kernel(body, head), params)
    assert isinstance(got, str) and why in got, got


def test_an_idempotent_store_again_keeps_its_first_writer():
    """The checker skips an idempotent store where its own instruction wrote last, so the
    first warp's store (never fenced) may stay the last write the wgmma finds: each
    idempotent store is a candidate beside the write before it."""
    body = """    mov.u32 %r30, 0;
$L_T:
    shl.b32 %r31, %r30, 5;
    setp.eq.u32 %p6, %r1, %r31;
    @%p6 st.shared.b32 [smem], 0;
    bar.sync 0;
    add.u32 %r30, %r30, 1;
    setp.lt.u32 %p7, %r30, 2;
    @%p7 bra $L_T;
    sub.u32 %r24, %r1, 32;
    setp.lt.u32 %p5, %r24, 32;
    setp.eq.u32 %p3, %r24, 0;
    setp.lt.u32 %p2, %r24, 16;
    and.pred %p4, %p2, !%p3;
    shl.b32 %r25, %r24, 4;
    add.u32 %r26, %r3, %r25;
    @%p4 st.shared.v4.b32 [%r26], {%r1, %r1, %r1, %r1};
    @%p3 st.shared.b32 [smem+4], %r1;
    @%p3 st.shared.v2.b32 [smem+8], {%r1, %r1};
    @%p5 fence.proxy.async.shared::cta;
    bar.sync 0;
""" + WG_MMA + "    wgmma.wait_group.sync.aligned 0;"
    got = _prove(_kernel(body, WG_HEAD))
    assert isinstance(got, str) and "which stores of two warps may have written last" in got, \
        got


# A second review's cases: values the GPU computes otherwise (the shared symbol's address S
# is 0x400 on the H100, sm_90a), each proven before its fix, each refused or computed
# right now.
WG_STORE2 = """    setp.lt.u32 %p2, %r1, 16;
    shl.b32 %r12, %r1, 4;
    setp.ge.u32 %p3, %r1, 8;
    selp.b32 %r14, 128, 0, %p3;
    add.u32 %r15, %r12, %r14;
    add.u32 %r13, %r3, %r15;
    @%p2 st.shared.v4.b32 [%r13], {%r1, %r1, %r1, %r1};
    fence.proxy.async.shared::cta;
    bar.sync 0;
"""
WG_MMA2 = """    wgmma.fence.sync.aligned;
    wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, {%r30, %r31, %r32, %r33}, %rd5, 1, 1, 1, 0;
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;"""  # noqa: E501 - one instruction
DESC = 0x10_0010_0000  # start 0, LBO 256, SBO 256, no swizzle
M64 = (1 << 64) - 1
USE_BIT7 = """    and.b32 %r11, %r10, 128;
    xor.b32 %r12, %r2, %r11;
    add.u32 %r13, %r3, %r12;
    st.shared.u32 [%r4], %r1;
    ld.shared.u32 %r7, [%r13];"""
USE_P1 = """    selp.b32 %r10, 0, 128, %p1;
    xor.b32 %r11, %r2, %r10;
    add.u32 %r12, %r3, %r11;
    ld.shared.u32 %r7, [%r12];"""


def test_a_wgmma_operand_in_a_variable_aligned_to_1024_beside_another_is_followed():
    # (its address is a multiple of 1024 wherever ptxas puts it: its offsets are exact)
    body = (WG_STORE + "    fence.proxy.async.shared::cta;\n    bar.sync 0;\n"
            "    mov.u32 %r9, pad;\n    st.global.u32 [%rd1], %r9;\n" + WG_MMA)
    head = WG_HEAD.replace(".extern .shared .align 16 .b8 smem[];",
                           ".shared .align 4 .b8 pad[16];\n"
                           ".shared .align 1024 .b8 smem[16384];")
    assert isinstance(_prove(_kernel(body, head)), Proof)


def test_a_descriptor_made_otherwise_from_the_address_is_followed():
    body = (WG_STORE2 + "    cvt.u64.u32 %rd6, %r3;\n    shr.u64 %rd8, %rd6, 4;\n"
            f"    add.u64 %rd5, %rd8, {DESC};\n" + WG_MMA2)
    assert isinstance(_prove(_kernel(body, WG_HEAD)), Proof)


@pytest.mark.parametrize(("body", "head", "params", "why"), [
    # (shr of S - 16: the prover's r wrapped around 2^64, the GPU's S >> 4 - 1 did not)
    (WG_STORE2 + "    cvt.u64.u32 %rd6, %r3;\n    sub.u64 %rd7, %rd6, 16;\n"
     f"    shr.u64 %rd8, %rd7, 4;\n    add.u64 %rd5, %rd8, {(DESC + 1 - (1 << 60)) & M64};\n"
     + WG_MMA2, WG_HEAD, None, "B descriptor `%rd5` is not known"),
    # (an or into a bit that r + (S >> 4) carries into)
    (WG_STORE2 + "    add.u32 %r22, %r3, 262128;\n    shr.u32 %r20, %r22, 4;\n"
     "    or.b32 %r23, %r20, 16384;\n    sub.u32 %r24, %r23, 32767;\n"
     f"    cvt.u64.u32 %rd4, %r24;\n    add.u64 %rd5, %rd4, {DESC};\n" + WG_MMA2, WG_HEAD,
     None, "B descriptor `%rd5` is not known"),
    # (a second shared variable moves the first off 1024 (0x410): swizzles differ)
    (WG_STORE + "    fence.proxy.async.shared::cta;\n    bar.sync 0;\n"
     "    mov.u32 %r9, pad;\n    st.global.u32 [%rd1], %r9;\n" + WG_MMA,
     WG_HEAD.replace(".extern .shared .align 16 .b8 smem[];",
                     ".shared .align 4 .b8 pad[16];\n.extern .shared .align 16 .b8 smem[];"),
     None, "B descriptor `%rd5` is not known"),
    # (cvt.s32.s64 sign-extends into the 64-bit register: bit 7 of the high word is set)
    ("    mov.u64 %rd3, -1;\n    cvt.s32.s64 %rd4, %rd3;\n    shr.u64 %rd5, %rd4, 32;\n"
     "    cvt.u32.u64 %r10, %rd5;\n" + USE_BIT7, HEAD, None,
     "two warps touch the granule at byte 0"),
    # (ld.param.s32 sign-extends the launch's -1 into the 64-bit register)
    ("    ld.param.s32 %rd4, [k_param_1];\n    shr.u64 %rd5, %rd4, 32;\n"
     "    cvt.u32.u64 %r10, %rd5;\n" + USE_BIT7, HEAD, {1: (-1, 32)},
     "two warps touch the granule at byte 0"),
    # (a 64-bit load of a 32-bit parameter reads the next one too)
    ("    ld.param.u64 %rd4, [k_param_1];\n    shr.u64 %rd5, %rd4, 25;\n"
     "    cvt.u32.u64 %r10, %rd5;\n" + USE_BIT7,
     HEAD.replace("k(.param .u64 k_param_0, .param .u32 k_param_1)",
                  "k(.param .u64 k_param_0, .param .u32 k_param_1, .param .u32 k_param_2)"),
     {1: (0, 32), 2: (1, 32)}, "the address `%r13` is not known"),
    # (`.param.u32 name`, no space: still the parameter's place)
    ("    st.shared.u32 [%r4], %r1;\n    ld.param.u32 %r10, [k_param_2];\n"
     "    xor.b32 %r11, %r2, %r10;\n    add.u32 %r12, %r3, %r11;\n    ld.shared.u32 %r7, [%r12];",
     HEAD.replace("k(.param .u64 k_param_0, .param .u32 k_param_1)",
                  "k(.param .u64 k_param_0, .param.u32 k_param_1, .param .u32 k_param_2)"),
     {1: (0, 32), 2: (128, 32)}, "two warps touch the granule at byte 0"),
    # (a shuffle's clamp from the shared address: 0x41f on the GPU, a segment of 4 lanes)
    ("    st.shared.u32 [%r4], %r1;\n    mov.u32 %r15, %laneid;\n    shl.b32 %r16, %r15, 5;\n"
     "    add.u32 %r21, %r3, 31;\n    shfl.sync.idx.b32 %r11, %r16, 0, %r21, -1;\n"
     "    and.b32 %r17, %r11, 128;\n    xor.b32 %r18, %r2, %r17;\n    add.u32 %r12, %r3, %r18;\n"
     "    ld.shared.u32 %r7, [%r12];", HEAD, None, "the address `%r12` is not known"),
    # (a signed comparison of two addresses, one past the sign bit on the GPU)
    ("    st.shared.u32 [%r4], %r1;\n    add.u32 %r20, %r3, 2147483392;\n"
     "    setp.gt.s32 %p1, %r20, %r3;\n" + USE_P1, HEAD, None,
     "the address `%r12` is not known"),
])
def test_a_value_the_gpu_computes_otherwise_is_not_followed(body, head, params, why):
    got = _prove(_kernel(body, head), params)
    assert isinstance(got, str) and why in got, got


# (pad's address is taken, not accessed: one accessed variable beside another)
BYTE_STORES = """    mov.u32 %r9, pad;
    st.global.u32 [%rd1], %r9;
    setp.eq.u32 %p1, %r1, 0;
    setp.eq.u32 %p2, %r1, 32;
    @%p1 st.shared.u8 [smem+3], %r1;
    @%p2 st.shared.u8 [smem+4], %r1;"""
# ((S + 16) >> 5 - S >> 5, shifted into bit 7 of the address: 0 where S is a multiple of
# 1024, 1 at 0x410)
SHIFTED_PAIR = """    mov.u32 %r9, pad;
    st.global.u32 [%rd1], %r9;
    st.shared.u32 [%r4], %r1;
    add.u32 %r30, %r3, 16;
    shr.u32 %r31, %r30, 5;
    shr.u32 %r32, %r3, 5;
    sub.u32 %r33, %r31, %r32;
    shl.b32 %r34, %r33, 7;
    xor.b32 %r24, %r2, %r34;
    add.u32 %r25, %r3, %r24;
    ld.shared.u32 %r7, [%r25];"""


def test_a_variable_that_may_sit_off_a_granule_is_refused():
    """A third review's case: smem after a 1-byte variable sits at 0x401 (ptxas, sm_90a), so
    its offsets 3 and 4 are one granule of the checker's; the proof took them as two."""
    head = HEAD.replace(".extern .shared .align 16 .b8 smem[];",
                        ".shared .align 1 .b8 pad[1];\n.shared .align 1 .b8 smem[256];")
    body = BYTE_STORES
    got = _prove(_kernel(body, head))
    assert isinstance(got, str) and "`smem` is aligned to 1 bytes" in got, got
    # (the module's only variable sits at the window's start: the same stores are apart)
    alone = head.replace(".shared .align 1 .b8 pad[1];\n", "")
    assert isinstance(_prove(_kernel(body.replace("    mov.u32 %r9, pad;\n    st.global.u32 "
                                                  "[%rd1], %r9;\n", ""), alone)), Proof)


# (body, head, why): the fourth and the fifth reviews' cases
FOURTH_REVIEW = [
    # (a kernel whose code fixes its cluster runs as one, launched plainly too: S carries
    # the CTA's rank in bits 24 and up, and T & 0x3fff is not T)
    ("    st.shared.u32 [%r4], %r1;\n    shr.u32 %r20, %r3, 4;\n    and.b32 %r21, %r20, 16383;\n"
     "    sub.u32 %r22, %r20, %r21;\n    shr.u32 %r23, %r22, 13;\n    xor.b32 %r24, %r2, %r23;\n"
     "    add.u32 %r25, %r3, %r24;\n    ld.shared.u32 %r7, [%r25];",
     HEAD.replace(".reqntid 64, 1, 1", ".reqntid 64, 1, 1\n.reqnctapercluster 2, 1, 1"),
     "a kernel of a cluster"),
    # (beside a second variable S is 0x410: (S + 16) >> 5 and S >> 5 differ by one)
    (SHIFTED_PAIR,
     HEAD.replace(".extern .shared .align 16 .b8 smem[];",
                  ".shared .align 4 .b8 pad[16];\n.extern .shared .align 16 .b8 smem[];"),
     "the address `%r25` is not known"),
    # (the same label in two nested blocks: a branch goes to the one in its scope, so the
    # second block's 128 is the offset read, another warp's word)
    ("    st.shared.u32 [%r4], %r1;\n    mov.u32 %r9, 0;\n    {\n    bra $L;\n"
     "    mov.u32 %r9, 64;\n$L:\n    }\n    {\n    mov.u32 %r9, 128;\n$L:\n    }\n"
     "    xor.b32 %r10, %r2, %r9;\n    add.u32 %r11, %r3, %r10;\n    ld.shared.u32 %r7, [%r11];",
     HEAD, "two warps touch the granule"),
]
FIFTH_REVIEW = [
    # (two names in one declaration: smem sits at 0x401, beside pad)
    (BYTE_STORES,
     HEAD.replace(".extern .shared .align 16 .b8 smem[];", ".shared .align 1 .b8 pad, smem[256];"),
     "`smem` is aligned to 1 bytes"),
    # (a two-dimensional array is a variable too: smem sits at 0x410)
    (SHIFTED_PAIR,
     HEAD.replace(".extern .shared .align 16 .b8 smem[];",
                  ".shared .align 4 .b8 pad[16][1];\n.extern .shared .align 16 .b8 smem[];"),
     "the address `%r25` is not known"),
    # (a 16x16 matrix has 16 rows: not followed)
    ("    st.shared.u32 [%r4], %r1;\n    bar.sync 0;\n    and.b32 %r10, %r2, 255;\n"
     "    add.u32 %r11, %r3, %r10;\n"
     "    ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r12, %r13}, [%r11];",
     HEAD, "only 8x8 matrices are followed"),
    # (an ldmatrix row off its 16 bytes)
    ("    st.shared.u32 [%r4], %r1;\n    bar.sync 0;\n    and.b32 %r10, %r2, 127;\n"
     "    add.u32 %r11, %r3, %r10;\n"
     "    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r12, %r13, %r14, %r15}, [%r11];",
     HEAD, "not aligned to the access's 16 bytes"),
]


def _sixth_review() -> list[tuple[str, str, str]]:
    """(a store fenced before a CTA barrier, then overwritten with no fence, ordered before
    the wgmma by a named barrier only: the async proxy may read the first store's bytes)"""
    overwrite = WG_STORE + "    fence.proxy.async.shared::cta;\n    bar.sync 0;\n" + WG_STORE
    tail = "    bar.sync 1, 128;\n" + WG_MMA + "    wgmma.wait_group.sync.aligned 0;"
    return [(overwrite + tail, WG_HEAD, "which a warp's store at line"),
            (overwrite + "    fence.proxy.async.shared::cta;\n" + tail, WG_HEAD,
             "which a warp's store at line")]


@pytest.mark.parametrize(("body", "head", "why"), FOURTH_REVIEW + FIFTH_REVIEW +
                         _sixth_review())
def test_the_later_reviews_cases_are_refused(body, head, why):
    got = _prove(_kernel(body, head))
    assert isinstance(got, str) and why in got, got


@pytest.mark.parametrize("body", [
    # (lanes 0-7 give the rows: here they do not run it, and the row read is unwritten)
    "    st.shared.u32 [%r4], %r1;\n    mov.u32 %r15, %laneid;\n    setp.ge.u32 %p1, %r15, 8;\n"
    "    add.u32 %r11, %r3, 1024;\n"
    "    @%p1 ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r12}, [%r11];",
    # (lanes 0-7 returned first)
    "    st.shared.u32 [%r4], %r1;\n    mov.u32 %r15, %laneid;\n    setp.lt.u32 %p1, %r15, 8;\n"
    "    @%p1 ret;\n    add.u32 %r11, %r3, 1024;\n"
    "    ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r12}, [%r11];",
])
def test_a_matrix_load_run_by_part_of_a_warp_is_refused(body):
    """A sixth review's case: ldmatrix is .sync.aligned, its rows come from lanes 0-7."""
    got = _prove(_kernel(body))
    assert isinstance(got, str) and "ldmatrix" in got and "part of a warp" in got, got


@pytest.mark.parametrize("widen", [
    # (a seventh review's cases: S + 2^31 wraps in 32 bits, then is zero-extended; S plus a
    # near-2^31 offset is sign-extended; S - 2048 wraps)
    "    add.u32 %r20, %r3, 0x80000000;\n    cvt.u64.u32 %rd2, %r20;\n",
    "    add.u32 %r20, %r3, 0x7FFFFFF0;\n    cvt.s64.s32 %rd2, %r20;\n",
    "    add.u32 %r20, %r3, -2048;\n    cvt.u64.u32 %rd2, %r20;\n",
])
def test_an_address_widened_outside_the_window_is_not_followed(widen):
    body = widen + ("    mov.u64 %rd3, smem;\n    sub.s64 %rd4, %rd2, %rd3;\n"
                    "    shr.u64 %rd5, %rd4, 56;\n    cvt.u32.u64 %r10, %rd5;\n" + USE_BIT7)
    got = _prove(_kernel(body))
    assert isinstance(got, str) and "the address `%r13` is not known" in got, got
