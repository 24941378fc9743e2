"""mbarriers on a real GPU: racy kernels and clean twins that differ by one line.

Every clean kernel checked here also runs natively on the same inputs and must write the
very same bits (`_check(..., clean=True)`); the racy, deadlocking and misusing kernels'
outputs are not compared: they depend on timing, or on the operation consan skipped.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, check_against_native, line_of, lines, poisoned

pytestmark = pytest.mark.gpu

MB = r"""
__device__ __forceinline__ unsigned sa(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mb_init(unsigned long long* b, unsigned n) {
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(sa(b)), "r"(n) : "memory");
}
__device__ __forceinline__ void mb_inval(unsigned long long* b) {
    asm volatile("mbarrier.inval.shared.b64 [%0];" :: "r"(sa(b)) : "memory");
}
__device__ __forceinline__ void mb_arrive(unsigned long long* b, unsigned n) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" :: "r"(sa(b)), "r"(n) : "memory");
}
__device__ __forceinline__ void mb_wait(unsigned long long* b, unsigned parity) {
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 " @!p bra W;\n}" :: "r"(sa(b)), "r"(parity) : "memory");
}
"""

# Warp 0 produces into smem and arrives; warp 1 waits on the phase and consumes.
PRODUCER_CONSUMER = MB + r"""
extern "C" __global__ void mb_pc(const float* in, float* out) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ float buf[32];
    int t = threadIdx.x, lane = t % 32;
    if (t == 0) mb_init(&bar, 1);
    __syncthreads();
    if (t < 32) {
        buf[lane] = in[lane] * 2.0f;  // @produce
        __syncwarp();
        if (lane == 0) mb_arrive(&bar, 1);
    } else {
        // let the producer go first, so a missing wait shows as a read of its write
        long long t0 = clock64();
        while (clock64() - t0 < 2000000) {}
        WAIT_HERE
        out[lane] = buf[31 - lane];  // @consume
        mb_wait(&bar, 0);
    }
}
"""

# A bulk copy (the copy engine completes the mbarrier's transaction bytes) read by
# another warp, before or after waiting on the phase.
BULK = MB + r"""
#define BULK_1K "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes " \
                "[%0], [%1], 1024, [%2];"
extern "C" __global__ void mb_bulk(const float* in, float* out) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ __align__(128) float buf[256];
    int t = threadIdx.x;
    if (t == 0) mb_init(&bar, 1);
    __syncthreads();
    if (t == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 1024;"
                     :: "r"(sa(&bar)) : "memory");
        asm volatile(BULK_1K :: "r"(sa(buf)), "l"(in), "r"(sa(&bar)) : "memory");  // @bulk
    }
    if (t >= 32) {
        long long t0 = clock64();
        while (clock64() - t0 < 2000000) {}
        WAIT_HERE
        out[t - 32] = buf[t - 32];  // @use
    }
    if (t == 0) mb_wait(&bar, 0);
}
"""

# Waits that can never complete: consan reports a deadlock and the kernel ends.
DEADLOCK = MB + r"""
extern "C" __global__ void mb_stuck(const float* in, float* out) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ __align__(128) float buf[256];
    int t = threadIdx.x;
    if (t == 0) mb_init(&bar, 2);
    __syncthreads();
    if (t == 0) {
        BUG
    }
    if (t >= 32) {
        mb_wait(&bar, 0);  // @wait
        out[t - 32] = buf[t - 32];
    }
}
"""

DEADLOCKS = {
    # the phase needs 2 arrivals; one comes
    "missing-arrive": "mb_arrive(&bar, 1);",
    # the producer expects more bytes than its bulk copy brings
    "expect-tx-too-large": (
        'asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 2048;" :: '
        '"r"(sa(&bar)) : "memory"); mb_arrive(&bar, 1); '
        'asm volatile(BULK_1K :: "r"(sa(buf)), "l"(in), "r"(sa(&bar)) : "memory");'),
}

MISUSE = MB + r"""
extern "C" __global__ void mb_misuse(const float* in, float* out) {
    __shared__ __align__(8) unsigned long long bar[2];
    int t = threadIdx.x;
    if (t == 0) {
        PREP
        mb_init(&bar[0], 2);
        BUG
        out[0] = in[0];
    }
}
"""

MISUSE_CASES = {
    # kind: (prep, bug, clean bug-line)
    "mbarrier.uninit": ("mb_arrive(&bar[1], 1);  // @bug", "", ""),
    "mbarrier.reinit": ("", "mb_init(&bar[0], 2);  // @bug",
                        "mb_inval(&bar[0]); mb_init(&bar[0], 2);"),
    "mbarrier.underflow": ("", "mb_arrive(&bar[0], 3);  // @bug", "mb_arrive(&bar[0], 2);"),
    "mbarrier.data-access": ("", "out[1] = (float)*(volatile unsigned*)&bar[0];  // @bug",
                             "out[1] = 0.0f;"),
}


def _check(src: str, kernel: str, block: int, clean: bool = False):
    """(report, output under consan, input). A clean kernel also runs natively and must
    write the same bits; a racy one's output is timing-dependent, so it is not compared."""
    import cupy as cp

    import consan

    def make_args():
        x = cp.asarray(np.random.default_rng(3).random(64, dtype=np.float32))
        out = poisoned(64, cp.float32)  # most kernels write a part of it
        return (x, out), [out]

    if clean:
        rep, (out,) = check_against_native(src, kernel, make_args, grid=(2,), block=(block,),
                                           options=(arch_option(),))
    else:
        (x, out), _ = make_args()
        rep = consan.check(src, kernel, grid=(2,), block=(block,), args=(x, out),
                           options=(arch_option(),))
        out = out.get()
    return rep, out, np.random.default_rng(3).random(64, dtype=np.float32)


# The CTA's second warp whole, of 8 threads, of 1: a CTA's begin has its second warp's
# threads reset its mbarrier table (32 entries, a thread taking every n-th) while thread 0
# claims a slot; a table entry left as the shared memory held it would look like an
# mbarrier this CTA made.
CONSUMER_THREADS = pytest.mark.parametrize("block", [64, 40, 33],
                                           ids=["32 consumers", "8 consumers", "1 consumer"])


@CONSUMER_THREADS
def test_consumer_before_the_wait_races(block):
    src = PRODUCER_CONSUMER.replace("WAIT_HERE", "")
    rep, _, _ = _check(src, "mb_pc", block)
    assert {v.kind for v in rep.violations} == {"race.raw"}, str(rep)
    assert {v.line for v in rep.violations} == {line_of(src, "@consume")}, str(rep)
    assert {v.prev_line for v in rep.violations} == {line_of(src, "@produce")}, str(rep)


@CONSUMER_THREADS
def test_consumer_after_the_wait_is_clean(block):
    src = PRODUCER_CONSUMER.replace("WAIT_HERE", "mb_wait(&bar, 0);")
    rep, out, x = _check(src, "mb_pc", block, clean=True)
    assert rep.ok, str(rep)
    n = block - 32  # out[lane] = buf[31 - lane] = 2 x[31 - lane], for the consumers' lanes
    np.testing.assert_allclose(out[:n], (x[:32] * 2.0)[::-1][:n])


def _hopper() -> bool:
    import cupy as cp

    return int(cp.cuda.Device().compute_capability) >= 90


@pytest.mark.parametrize("wait", ["", "mb_wait(&bar, 0);"], ids=["racy", "clean"])
def test_bulk_copy_visible_after_the_phase_wait(wait):
    if not _hopper():
        pytest.skip("cp.async.bulk needs sm_90")
    src = BULK.replace("WAIT_HERE", wait)
    rep, out, x = _check(src, "mb_bulk", 64, clean=bool(wait))
    if wait:
        assert rep.ok, str(rep)
        np.testing.assert_array_equal(out[:32], x[:32])
    else:
        assert {v.kind for v in rep.violations} == {"async.pending-write"}, str(rep)
        assert {v.line for v in rep.violations} == {line_of(src, "@use")}, str(rep)
        assert {v.prev_line for v in rep.violations} == {line_of(src, "@bulk")}, str(rep)


@pytest.mark.parametrize("case", sorted(DEADLOCKS))
def test_deadlock_is_reported_and_the_process_goes_on(case):
    if case.startswith("expect") and not _hopper():
        pytest.skip("cp.async.bulk needs sm_90")
    src = DEADLOCK.replace("BUG", DEADLOCKS[case])
    if "BULK_1K" in src:
        src = BULK.split("extern")[0] + src.split(MB, 1)[1]
    rep, _, _ = _check(src, "mb_stuck", 64)
    assert {v.kind for v in rep.violations} == {"deadlock"}, str(rep)
    assert all(line_of(src, "@wait") in lines(v.site) for v in rep.violations), str(rep)
    assert {v.phase for v in rep.violations} == {0}, str(rep)
    # the context is still usable: a clean kernel checks fine afterwards
    clean = PRODUCER_CONSUMER.replace("WAIT_HERE", "mb_wait(&bar, 0);")
    rep2, out, x = _check(clean, "mb_pc", 64, clean=True)
    assert rep2.ok, str(rep2)
    np.testing.assert_allclose(out[:32], (x[:32] * 2.0)[::-1])


@pytest.mark.parametrize("kind", sorted(MISUSE_CASES))
def test_mbarrier_misuse(kind):
    prep, bug, clean = MISUSE_CASES[kind]
    src = MISUSE.replace("PREP", prep).replace("BUG", bug)
    rep, _, _ = _check(src, "mb_misuse", 32)
    assert {v.kind for v in rep.violations} == {kind}, str(rep)
    # the operation sits in an inlined helper: its call line is in the inline chain
    assert all(line_of(src, "@bug") in lines(v.site) for v in rep.violations), str(rep)
    fixed = MISUSE.replace("PREP", "" if kind == "mbarrier.uninit" else prep).replace(
        "BUG", clean)
    rep, out, x = _check(fixed, "mb_misuse", 32, clean=True)
    assert rep.ok, str(rep)  # and the context survived the faulting op consan skipped
    assert out[0] == x[0], out[:2]


# `if (lane == 0) arrive`, then every lane asks which lanes run with it. Natively the warp
# is together again after the branch; the probe must not leave it split (31 lanes, then
# 1: instrument/converge.py).
TOGETHER = MB + r"""
extern "C" __global__ void mb_together(const float* in, float* out) {
    __shared__ __align__(8) unsigned long long bar;
    int t = threadIdx.x, lane = t % 32;
    if (t == 0) mb_init(&bar, 2);
    __syncthreads();
    float acc = in[t] * 0.0f;
    for (int i = 0; i < 4; ++i) {
        __syncwarp();
        if (lane == 0) mb_arrive(&bar, 1);
        acc += (float)__popc(__activemask());  // @together
        mb_wait(&bar, i & 1);
    }
    out[t] = acc;
}
"""


def test_warp_stays_together_after_a_one_lane_arrive():
    rep, out, _ = _check(TOGETHER, "mb_together", 64, clean=True)
    assert rep.ok, str(rep)
    assert out.tolist() == [4 * 32.0] * 64  # natively too: 32 lanes after each branch


# `if (lane < LANES) for (...) { arrive; wait }`: with one lane, the whole loop is run by
# every lane of the warp, the others marked off (instrument/loops.py), so the warp is
# still together after it, as natively; with two, the loop runs as it was.
LOOP = MB + r"""
extern "C" __global__ void mb_loop(const float* in, float* out) {
    __shared__ __align__(8) unsigned long long bar;
    int t = threadIdx.x, lane = t % 32;
    if (t == 0) mb_init(&bar, 2 * LANES);
    __syncthreads();
    float acc = in[t] * 0.0f;
    if (lane < LANES) {
        for (int i = 0; i < 4; ++i) {
            mb_arrive(&bar, 1);
            mb_wait(&bar, i & 1);
        }
    }
    acc += (float)__popc(__activemask());  // @after
    out[t] = acc;
}
"""


def test_warp_stays_together_after_a_one_lane_loop():
    rep, out, _ = _check(LOOP.replace("LANES", "1"), "mb_loop", 64, clean=True)
    assert rep.ok, str(rep)
    assert out.tolist() == [32.0] * 64  # natively too


def test_a_loop_two_lanes_run_is_checked_as_it_was():
    # Its output is __popc(__activemask()) after the loop: how converged the warp happens
    # to be, which CUDA does not define (__activemask promises no convergence). consan
    # copies loops one lane runs so that the warp stays together (the one-lane test
    # above); a two-lane loop runs as it was, and on the H100 the warp then came out split
    # (2 and 30 lanes) where natively it was whole. Exempt from the native comparison, as
    # racy outputs are: the value is the scheduler's, not the program's.
    rep, _, _ = _check(LOOP.replace("LANES", "2"), "mb_loop", 64, clean=False)
    assert rep.ok, str(rep)


# `mbarrier.complete_tx` ahead of the `expect_tx` of its phase: the tx-count goes below
# zero until the arrive brings the bytes (legal; the hardware's tx-count is signed). Past
# the phase's last arrival, bytes beyond what it still expects are an underflow.
TX_ORDER = MB + r"""
extern "C" __global__ void mb_tx(const float* in, float* out) {
    __shared__ __align__(8) unsigned long long bar;
    if (threadIdx.x == 0) {
        mb_init(&bar, 1);
        FIRST
        SECOND
        WAIT
        out[0] = in[0];
    }
}
"""
COMPLETE_16 = ('asm volatile("mbarrier.complete_tx.shared::cta.b64 [%0], BYTES;" :: "r"(sa(&bar)) '
               ': "memory");  // @complete')
ARRIVE_TX_16 = ('asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 16;" :: '
                '"r"(sa(&bar)) : "memory");  // @arrive')


@pytest.mark.parametrize("racy", [False, True], ids=["complete-first", "complete-past-arrive"])
def test_complete_tx_may_lead_expect_tx_until_the_last_arrival(racy):
    if not _hopper():
        pytest.skip("mbarrier.complete_tx needs sm_90")
    if racy:  # every arrival in, 16 bytes expected, 32 completed
        src = TX_ORDER.replace("FIRST", ARRIVE_TX_16).replace(
            "SECOND", COMPLETE_16.replace("BYTES", "32")).replace("WAIT", "")
    else:
        src = TX_ORDER.replace("FIRST", COMPLETE_16.replace("BYTES", "16")).replace(
            "SECOND", ARRIVE_TX_16).replace("WAIT", "mb_wait(&bar, 0);")
    rep, out, x = _check(src, "mb_tx", 32, clean=not racy)
    if racy:
        assert {v.kind for v in rep.violations} == {"mbarrier.underflow"}, str(rep)
        assert all(line_of(src, "@complete") in lines(v.site) for v in rep.violations), str(rep)
    else:
        assert rep.ok, str(rep)  # (it was an underflow, and the skipped bytes a deadlock)
        assert out[0] == x[0]


# Warp 1 declares 16 bytes and drops out in phase 0 (arrive_drop.expect_tx), warp 0
# completes them and arrives; phase 1 then completes with warp 0's arrival alone, after it
# wrote what warp 1 reads. Warp 1 waits after its spin, when both phases are over: on parity
# 1 alone (phase 2, parity 0, never completes, so a wait on parity 0 then would hang).
DROP_TX = MB + r"""
extern "C" __global__ void mb_drop_tx(const float* in, float* out) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ float buf[32];
    int t = threadIdx.x, lane = t % 32;
    if (t == 0) mb_init(&bar, 2);
    __syncthreads();
    if (t < 32) {
        if (lane == 0) {
            asm volatile("mbarrier.complete_tx.shared::cta.b64 [%0], 16;" :: "r"(sa(&bar))
                         : "memory");
            mb_arrive(&bar, 1);
        }
        mb_wait(&bar, 0);
        buf[lane] = in[lane] * 2.0f;  // @produce
        __syncwarp();
        if (lane == 0) mb_arrive(&bar, 1);
    } else {
        if (lane == 0)
            asm volatile("mbarrier.arrive_drop.expect_tx.shared::cta.b64 _, [%0], 16;"
                         :: "r"(sa(&bar)) : "memory");
        __syncwarp();
        long long t0 = clock64();
        while (clock64() - t0 < 2000000) {}
        WAIT_HERE
        out[lane] = buf[31 - lane];  // @consume
    }
}
"""


@pytest.mark.parametrize("wait", ["", "mb_wait(&bar, 1);"], ids=["racy", "clean"])
def test_a_warp_that_drops_out_leaves_the_later_phases_to_the_others(wait):
    """(arrive_drop.expect_tx was modelled as arrive.expect_tx: phase 1 never completed in
    the model, and the clean twin's read was reported as a race)"""
    if not _hopper():
        pytest.skip("mbarrier.complete_tx needs sm_90")
    src = DROP_TX.replace("WAIT_HERE", wait)
    rep, out, x = _check(src, "mb_drop_tx", 64, clean=bool(wait))
    if wait:
        assert rep.ok, str(rep)
        np.testing.assert_allclose(out[:32], (x[:32] * 2.0)[::-1])
    else:
        assert {v.kind for v in rep.violations} == {"race.raw"}, str(rep)
        assert {v.line for v in rep.violations} == {line_of(src, "@consume")}, str(rep)
        assert {v.prev_line for v in rep.violations} == {line_of(src, "@produce")}, str(rep)


# More mbarriers than the checker tracks per CTA (abi.MBARRIERS, 32): those past them run
# unmodelled, with one tool note, and the kernel computes what it does natively (their
# inits were skipped, and the waits on them never completed).
MANY = MB + r"""
#define NB 40
extern "C" __global__ void mb_many(const float* in, float* out) {
    __shared__ __align__(8) unsigned long long bar[NB];
    int t = threadIdx.x;
    if (t == 0)
        for (int i = 0; i < NB; ++i) mb_init(&bar[i], 1);  // @init
    __syncthreads();
    if (t < NB) {
        mb_arrive(&bar[t], 1);
        mb_wait(&bar[t], 0);
        out[t] = in[t] + 1.0f;
    }
}
"""


def test_more_mbarriers_than_the_checker_tracks_run_as_natively():
    from instrument import abi

    rep, out, x = _check(MANY, "mb_many", 64, clean=True)
    assert rep.ok, str(rep)
    assert [n.kind for n in rep.notes] == ["tool.mbarrier-table-full"], str(rep)
    assert abi.MBARRIERS < 40
    np.testing.assert_array_equal(out[:40], x[:40] + np.float32(1.0))
