"""Hopper pipelines on mbarriers and bulk copies (sm_90): each racy kernel has a clean
twin that differs by the one wait it is missing.

- a warp-specialised ring: a producer lane fills STAGES slots with bulk copies that
  complete `full[s]`; two consumer warps read a slot after waiting `full[s]` and
  release it by arriving on `empty[s]`. Racy: the producer skips the empty wait
  (its copy overwrites a slot the consumers read: race.war), or the consumers read
  before the full wait (async.pending-write);
- a stale parity on the second trip through one mbarrier, and a wait on the wrong
  mbarrier: both acquire nothing, so the read of the copy is async.pending-write.

The clean kernels also run natively on the same inputs and must write the very same bits;
the racy ones' outputs are not compared (a missing wait makes them timing-dependent).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu.test_mbarrier import MB
from tests.gpu_util import arch_option, check_against_native, line_of, lines, poisoned

pytestmark = pytest.mark.gpu

COPY = MB + r"""
__device__ __forceinline__ void expect_copy(float* dst, const float* src, unsigned long long* b) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 1024;"
                 :: "r"(sa(b)) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1], 1024, [%2];" :: "r"(sa(dst)), "l"(src), "r"(sa(b)) : "memory");
}
__device__ __forceinline__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}
"""

RING = COPY + r"""
#define STAGES 2
#define TILE 256
extern "C" __global__ void ring(const float* in, float* out, int ntiles) {
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    __shared__ __align__(128) float buf[STAGES][TILE];
    int t = threadIdx.x, warp = t / 32, lane = t % 32;
    if (t == 0)
        for (int s = 0; s < STAGES; ++s) mb_init(&full[s], 1), mb_init(&empty[s], 2);
    __syncthreads();
    const float* src = in + (size_t)blockIdx.x * ntiles * TILE;
    if (warp == 0) {
        if (lane == 0) {
            for (int i = 0; i < ntiles; ++i) {
                int s = i % STAGES;
                unsigned ph = (i / STAGES) & 1;
                if (i >= STAGES) {
                    PRODUCER_WAIT
                }
                expect_copy(buf[s], src + i * TILE, &full[s]);  // @produce
            }
            // the last copies must land before the CTA exits
            for (int i = ntiles > STAGES ? ntiles - STAGES : 0; i < ntiles; ++i)
                mb_wait(&full[i % STAGES], (i / STAGES) & 1);
        }
    } else {
        CONSUMER_DELAY
        float acc = 0.0f;
        int c = t - 32;
        for (int i = 0; i < ntiles; ++i) {
            int s = i % STAGES;
            unsigned ph = (i / STAGES) & 1;
            WAIT_BEFORE
            for (int j = c; j < TILE; j += 64) acc += buf[s][j];  // @consume
            WAIT_AFTER
            __syncwarp();
            if (lane == 0) mb_arrive(&empty[s], 1);
        }
        out[blockIdx.x * 64 + c] = acc;
    }
}
"""

CLEAN_RING = {"PRODUCER_WAIT": "mb_wait(&empty[s], ph ^ 1);", "CONSUMER_DELAY": "",
              "WAIT_BEFORE": "mb_wait(&full[s], ph);", "WAIT_AFTER": ""}
RING_CASES = {
    # the producer overwrites a slot without waiting for its release; it runs late, so
    # the consumers' reads of the slot come first and the copy is the unordered write
    "producer-skips-empty-wait": ({"PRODUCER_WAIT": "spin(2000000);"}, 8, "race.war",
                                  "@produce", "@consume"),
    # the consumers read a slot before waiting for its copy (they start late, so the
    # copies were issued first)
    "consumer-reads-before-full-wait": ({"CONSUMER_DELAY": "spin(2000000);", "WAIT_BEFORE": "",
                                         "WAIT_AFTER": "mb_wait(&full[s], ph);"}, 2,
                                        "async.pending-write", "@consume", "@produce"),
}

# Each phase needs the producer's arrival (with the copy's bytes) and one consumer's.
# The consumer's arrival for phase 1 comes after the read in the racy kernel, so the
# stale wait on parity 0 returns at once (phase 0 is complete, phase 1 is not): on the
# hardware too the read may see the bytes before they land.
TRIPS = COPY + r"""
extern "C" __global__ void two_trips(const float* in, float* out) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ __align__(128) float buf[2][256];
    int t = threadIdx.x;
    if (t == 0) mb_init(&bar, 2);
    __syncthreads();
    if (t == 0) {
        expect_copy(buf[0], in, &bar);
        mb_wait(&bar, 0);  // phase 0 complete before phase 1's arrival
        expect_copy(buf[1], in + 256, &bar);  // @copy-1
        mb_wait(&bar, 1);
    }
    if (t >= 32) {
        if (t == 32) mb_arrive(&bar, 1);
        mb_wait(&bar, 0);
        float a = buf[0][t - 32];
        spin(2000000);  // the second copy has been issued by now
        ARRIVE_BEFORE
        mb_wait(&bar, SECOND_PARITY);
        out[t - 32] = a + buf[1][t - 32];  // @use-1
        ARRIVE_AFTER
    }
}
"""

WRONG_BARRIER = COPY + r"""
extern "C" __global__ void wrong_barrier(const float* in, float* out) {
    __shared__ __align__(8) unsigned long long bar_a, bar_b;
    __shared__ __align__(128) float buf[256];
    int t = threadIdx.x;
    if (t == 0) mb_init(&bar_a, 1), mb_init(&bar_b, 1);
    __syncthreads();
    if (t == 0) {
        expect_copy(buf, in, &bar_a);  // @copy
        mb_arrive(&bar_b, 1);
        mb_wait(&bar_a, 0);
    }
    if (t >= 32) {
        spin(2000000);
        mb_wait(&WAITED, 0);
        out[t - 32] = buf[t - 32];  // @use
    }
}
"""


def _hopper_or_skip():
    import cupy as cp

    if int(cp.cuda.Device().compute_capability) < 90:
        pytest.skip("cp.async.bulk needs sm_90")


def _fill(src: str, subs: dict[str, str]) -> str:
    for k, v in subs.items():
        src = src.replace(k, v)
    return src


def _ring(subs: dict[str, str], ntiles: int):
    """(source, report, output under consan, reference). The clean ring (no `subs`) also
    runs natively and must write the same bits; a racy one's output is not compared."""
    import cupy as cp

    import consan

    src = _fill(RING, {**CLEAN_RING, **subs})

    def x_host() -> np.ndarray:
        return np.random.default_rng(5).integers(0, 8, 2 * ntiles * 256).astype(np.float32)

    def make_args():
        out = poisoned(128, cp.float32)
        return (cp.asarray(x_host()), out, np.int32(ntiles)), [out]

    grid, block, opts = (2,), (96,), (arch_option(),)
    if subs:
        (args, (out,)) = make_args()
        rep = consan.check(src, "ring", grid=grid, block=block, args=args, options=opts)
        got = out.get()
    else:
        rep, (got,) = check_against_native(src, "ring", make_args, grid=grid, block=block,
                                           options=opts)
    want = x_host().reshape(2, ntiles, 4, 64).sum(axis=(1, 2))  # thread c sums column c
    return src, rep, got, want.reshape(-1)


def test_ring_clean_is_clean_and_computes_the_sums():
    _hopper_or_skip()
    _, rep, got, want = _ring({}, 8)
    assert rep.ok, str(rep)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", sorted(RING_CASES))
def test_ring_missing_wait(case):
    _hopper_or_skip()
    subs, ntiles, kind, at, prev = RING_CASES[case]
    src, rep, _, _ = _ring(subs, ntiles)
    assert {v.kind for v in rep.violations} == {kind}, str(rep)
    # the copy is issued in an inlined helper: its call line is in the inline chain
    assert all(line_of(src, at) in lines(v.site) for v in rep.violations), str(rep)
    assert all(line_of(src, prev) in lines(v.prev_site) for v in rep.violations), str(rep)


def _run(src: str, kernel: str, clean: bool):
    """(report, output under consan, input). A clean kernel also runs natively and must
    write the same bits; a racy one's output is timing-dependent, so it is not compared."""
    import cupy as cp

    import consan

    def x_host() -> np.ndarray:
        return np.random.default_rng(9).integers(0, 8, 512).astype(np.float32)

    def make_args():
        out = poisoned(64, cp.float32)
        return (cp.asarray(x_host()), out), [out]

    if clean:
        rep, (out,) = check_against_native(src, kernel, make_args, grid=(2,), block=(96,),
                                           options=(arch_option(),))
    else:
        (args, (out,)) = make_args()
        rep = consan.check(src, kernel, grid=(2,), block=(96,), args=args,
                           options=(arch_option(),))
        out = out.get()
    return rep, out, x_host()


@pytest.mark.parametrize("parity", ["0", "1"], ids=["stale", "right"])
def test_second_trip_needs_the_second_parity(parity):
    _hopper_or_skip()
    arrive = "if (t == 32) mb_arrive(&bar, 1);"
    src = _fill(TRIPS, {"SECOND_PARITY": parity, "ARRIVE_BEFORE": arrive if parity == "1" else "",
                        "ARRIVE_AFTER": "" if parity == "1" else arrive})
    rep, out, x = _run(src, "two_trips", clean=parity == "1")
    if parity == "1":
        assert rep.ok, str(rep)
        np.testing.assert_array_equal(out, x[:64] + x[256:320])
    else:
        assert {v.kind for v in rep.violations} == {"async.pending-write"}, str(rep)
        assert {v.line for v in rep.violations} == {line_of(src, "@use-1")}, str(rep)
        assert all(line_of(src, "@copy-1") in lines(v.prev_site) for v in rep.violations), \
            str(rep)


@pytest.mark.parametrize("waited", ["bar_b", "bar_a"], ids=["wrong", "right"])
def test_waiting_the_wrong_mbarrier_acquires_nothing(waited):
    _hopper_or_skip()
    src = WRONG_BARRIER.replace("WAITED", waited)
    rep, out, x = _run(src, "wrong_barrier", clean=waited == "bar_a")
    if waited == "bar_a":
        assert rep.ok, str(rep)
        np.testing.assert_array_equal(out, x[:64])
    else:
        assert {v.kind for v in rep.violations} == {"async.pending-write"}, str(rep)
        assert {v.line for v in rep.violations} == {line_of(src, "@use")}, str(rep)
        assert all(line_of(src, "@copy") in lines(v.prev_site) for v in rep.violations), \
            str(rep)
