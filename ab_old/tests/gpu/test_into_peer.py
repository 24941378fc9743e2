"""Writes into another CTA of the cluster on a real GPU (sm_90, clusters of 2): the
asynchronous ones that complete on the receiver's mbarrier (st.async, red.async, a bulk copy
and a bulk reduction from this CTA's shared memory), and the DSMEM atomics (atom / red
.shared::cluster), with getctarank on the way.

- CTA 0's warp writes 128 words of CTA 1's buffer, every lane its part (lane order makes
  one run per instruction); CTA 1 armed its mbarrier for the 512 bytes. Clean: CTA 1 waits
  on it, then reads: no finding and the native bits. Racy: CTA 1 reads after a pause but
  before the wait: async.pending-write at the read, the earlier site CTA 0's write.
- Each CTA adds into the counter of the next with atom / red .shared::cluster, and reads
  its own after the second cluster barrier (clean) or before it (race.raw at the read, the
  earlier write the atomic of CTA rank r - 1).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, check_against_native, line_of, need_sm90, poisoned
from tests.kernels import gpu_kernels as gk

pytestmark = pytest.mark.gpu

WORDS = 128

ASYNC = gk.TMA_PRELUDE + r"""
__device__ __forceinline__ unsigned mapa(const void* p, unsigned r) {  // p in CTA r
    unsigned a;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(sa(p)), "r"(r));
    return a;
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) into_peer(const unsigned* in, unsigned* out) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ __align__(128) unsigned buf[128];
    __shared__ __align__(128) unsigned src[128];
    unsigned t = threadIdx.x, r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    for (int k = 0; k < 4; ++k) {
        buf[k * 32 + t] = 0;
        src[k * 32 + t] = in[k * 32 + t];
    }
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sa(&bar)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // src, read by the bulk copies
    __syncwarp();
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (r == 1 && t == 0)
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 512;"
                     :: "r"(sa(&bar)) : "memory");
    if (r == 0) {
        unsigned mb = mapa(&bar, 1);
        @OP@
    } else {
        @BEFORE@
        for (int k = 0; k < 4; ++k)
            out[k * 32 + t] = buf[k * 32 + t];  // @read
        @AFTER@
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
"""

_WORD_LOOP = ("for (int k = 0; k < 4; ++k) asm volatile(\"{INSN} [%0], %1, [%2];\" :: "
              "\"r\"(mapa(&buf[k * 32 + t], 1)), \"r\"(in[k * 32 + t]), \"r\"(mb) : \"memory\");"
              "  // @op")
_CHUNK = ("asm volatile(\"{INSN} [%0], [%1], 16, [%2];\" :: \"r\"(mapa(&buf[4 * t], 1)), "
          "\"r\"(sa(&src[4 * t])), \"r\"(mb) : \"memory\");  // @op")
OPS = {
    "st.async": _WORD_LOOP.replace(
        "{INSN}", "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32"),
    "red.async": _WORD_LOOP.replace(
        "{INSN}", "red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32"),
    "bulk-copy": _CHUNK.replace(
        "{INSN}", "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes"),
    "bulk-reduce": _CHUNK.replace(
        "{INSN}",
        "cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.add.u32"),
}
WAIT = "mb_wait(&bar, 0);"
PAUSE = "{ long long t0 = clock64(); while (clock64() - t0 < 2000000) {} }"


def _async_src(op: str, racy: bool) -> str:
    return (ASYNC.replace("@OP@", OPS[op]).replace("@BEFORE@", PAUSE if racy else WAIT)
            .replace("@AFTER@", WAIT if racy else ""))


def _inputs():
    import cupy as cp

    return cp.arange(WORDS, dtype=cp.uint32) * 7 + 3


@pytest.mark.parametrize("op", list(OPS))
def test_write_into_the_peer_then_its_wait_is_clean_and_bit_exact(op):
    import cupy as cp

    need_sm90()
    src = _async_src(op, racy=False)

    def make_args():
        out = poisoned((WORDS,), cp.uint32)
        return (_inputs(), out), [out]

    rep, (out,) = check_against_native(src, "into_peer", make_args, grid=(2,), block=(32,),
                                       options=(arch_option(),))
    assert rep.ok and not rep.notes, str(rep)
    if op in ("st.async", "red.async"):
        assert not rep.unmodeled, str(rep)
    np.testing.assert_array_equal(out, np.arange(WORDS, dtype=np.uint32) * 7 + 3)


@pytest.mark.parametrize("op", list(OPS))
def test_read_before_the_wait_on_a_peers_write_is_pending_write(op):
    import cupy as cp

    import consan

    need_sm90()
    src = _async_src(op, racy=True)
    out = cp.zeros(WORDS, dtype=cp.uint32)
    rep = consan.check(src, "into_peer", grid=(2,), block=(32,), args=(_inputs(), out),
                       options=(arch_option(),))
    assert {(v.kind, v.line, v.prev_line) for v in rep.violations} == {
        ("async.pending-write", line_of(src, "@read"), line_of(src, "@op"))}, str(rep)
    assert {(v.cluster_rank, v.prev_rank) for v in rep.violations} == {(1, 0)}, str(rep)


ATOMIC = r"""
#define CLUSTER_SYNC asm volatile("barrier.cluster.arrive.release.aligned;\n\t" \
                                  "barrier.cluster.wait.acquire.aligned;" ::: "memory")
extern "C" __global__ void __cluster_dims__(2, 1, 1) atomics(unsigned* out) {
    __shared__ unsigned count[32];
    unsigned t = threadIdx.x, r, pa, owner;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    count[t] = 100 * r;  // @init
    unsigned mine = (unsigned)__cvta_generic_to_shared(&count[t]);
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(pa) : "r"(mine), "r"(r ^ 1u));
    asm volatile("getctarank.shared::cluster.u32 %0, %1;" : "=r"(owner) : "r"(pa));
    CLUSTER_SYNC;
    @ATOMIC@
    @SYNC2@
    out[blockIdx.x * 64 + t] = count[t];  // @read
    out[blockIdx.x * 64 + 32 + t] = owner;
    CLUSTER_SYNC;
}
"""
ATOMICS = {
    "atom": "unsigned old; asm volatile(\"atom.shared::cluster.add.u32 %0, [%1], %2;\" : "
            "\"=r\"(old) : \"r\"(pa), \"r\"(t + 1) : \"memory\");  // @atomic",
    "red": "asm volatile(\"red.shared::cluster.add.u32 [%0], %1;\" :: \"r\"(pa), \"r\"(t + 1) "
           ": \"memory\");  // @atomic",
}
SYNC = "CLUSTER_SYNC;"


def _atomic_src(op: str, racy: bool) -> str:
    return ATOMIC.replace("@ATOMIC@", ATOMICS[op]).replace("@SYNC2@", PAUSE if racy else SYNC)


@pytest.mark.parametrize("op", list(ATOMICS))
def test_atomics_into_the_peer_then_a_cluster_barrier_are_clean_and_bit_exact(op):
    import cupy as cp

    need_sm90()
    src = _atomic_src(op, racy=False)

    def make_args():
        out = poisoned((4 * 64,), cp.uint32)
        return (out,), [out]

    rep, (out,) = check_against_native(src, "atomics", make_args, grid=(4,), block=(32,),
                                       options=(arch_option(),))
    assert rep.ok and not rep.notes and not rep.unmodeled, str(rep)
    t = np.arange(32, dtype=np.uint32)
    want = [np.concatenate([100 * (b % 2) + t + 1, np.full(32, (b % 2) ^ 1, np.uint32)])
            for b in range(4)]
    np.testing.assert_array_equal(out, np.concatenate(want).astype(np.uint32))


@pytest.mark.parametrize("op", list(ATOMICS))
def test_read_before_the_barrier_that_releases_the_peers_atomic_is_raw(op):
    import cupy as cp

    import consan

    need_sm90()
    src = _atomic_src(op, racy=True)
    out = cp.zeros(4 * 64, dtype=cp.uint32)
    rep = consan.check(src, "atomics", grid=(4,), block=(32,), args=(out,),
                       options=(arch_option(),))
    assert {(v.kind, v.line, v.prev_line) for v in rep.violations} == {
        ("race.raw", line_of(src, "@read"), line_of(src, "@atomic"))}, str(rep)
    assert {(v.cluster_rank, v.prev_rank) for v in rep.violations} == {(0, 1), (1, 0)}, str(rep)
