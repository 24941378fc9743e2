"""st.async with complete_tx and .shared::cluster mbarriers on a real GPU (sm_90, clusters
of 2 CTAs).

- each CTA's warp 0 st.async's 32 words into its own buffer (a .shared::cluster address of
  its own rank) on its own mbarrier; warp 1 reads them: before the mbarrier wait
  (racy: async.pending-write at the read, the st.async the earlier site) or after it
  (clean: no finding, the words arrive);
- the mbarrier expects 4 bytes more than the st.async's complete (Triton's
  test_async_shared_store_expect_bytes[mismatch]): the wait never completes, deadlock at it;
- CTA 0 st.async's into CTA 1's buffer on CTA 1's mbarrier (distributed shared memory):
  posted to CTA 1, which applies it like a copy of its own (checker/multicast.h), so the
  read after CTA 1's wait is clean, nothing is left as a note, and the words arrive.

The clean kernels also run natively on the same inputs and must write the very same bits;
the racy one's output is not compared (a read before the wait is timing-dependent).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, check_against_native, line_of, lines, poisoned
from tests.kernels import gpu_kernels as gk

pytestmark = pytest.mark.gpu

PRELUDE = gk.TMA_PRELUDE + r"""
__device__ __forceinline__ unsigned rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ unsigned mapa(const void* p, unsigned r) {  // p in CTA r
    unsigned a;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(sa(p)), "r"(r));
    return a;
}
__device__ __forceinline__ void st_async(unsigned a, unsigned v, unsigned bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];"
                 :: "r"(a), "r"(v), "r"(bar) : "memory");  // @st
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
"""

# Each CTA stores into its own buffer. Launch: 64 threads, clusters of 2.
LOCAL = PRELUDE + r"""
extern "C" __global__ void __cluster_dims__(2, 1, 1) local_st(const unsigned* in, unsigned* out) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ __align__(16) unsigned buf[32];
    int t = threadIdx.x;
    if (t == 0)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sa(&bar)) : "memory");
    __syncthreads();
    if (t < 32) {
        unsigned r = rank();
        if (t == 0)
            asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], "
                         "128;" :: "r"(mapa(&bar, r)) : "memory");
        __syncwarp();
        st_async(mapa(&buf[t], r), in[blockIdx.x * 32 + t], mapa(&bar, r));
    } else {
        long long t0 = clock64();
        while (clock64() - t0 < 2000000) {}  // the stores are issued by now
        BEFORE
        unsigned v = buf[t - 32];  // @read
        AFTER
        out[blockIdx.x * 32 + t - 32] = v;
    }
}
"""
WAIT = "mb_wait(&bar, 0);"

# CTA 0 stores into CTA 1's buffer on CTA 1's mbarrier. Launch: one cluster of 2, 32 threads.
REMOTE = PRELUDE + r"""
extern "C" __global__ void __cluster_dims__(2, 1, 1) remote_st(const unsigned* in, unsigned* out) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ __align__(16) unsigned buf[32];
    int t = threadIdx.x;
    unsigned r = rank();
    buf[t] = 0;  // CTA 1's own words, overwritten from CTA 0
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sa(&bar)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    cluster_sync();  // CTA 1's mbarrier is live before CTA 0 stores
    if (r == 1 && t == 0)
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 128;"
                     :: "r"(sa(&bar)) : "memory");
    if (r == 0) st_async(mapa(&buf[t], 1), in[t], mapa(&bar, 1));
    if (r == 1) {
        mb_wait(&bar, 0);
        out[t] = buf[t];
    }
    cluster_sync();  // no CTA leaves while the other may still touch its memory
}
"""

# CTA 0's 32 lanes st.async one word each into CTA 1's buffer, word WORD of lane t: a warp's
# spans in runs (multicast.h, cs_runs: one post a run). CTA 1 writes none of its words
# itself. Launch: one cluster of 2, 32 threads.
REMOTE_RUNS = PRELUDE + r"""
#define WORD(t) (MAPPING)
extern "C" __global__ void __cluster_dims__(2, 1, 1)
remote_runs(const unsigned* in, unsigned* out) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ __align__(16) unsigned buf[64];
    int t = threadIdx.x;
    unsigned r = rank();
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sa(&bar)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    cluster_sync();  // CTA 1's mbarrier is live before CTA 0 stores
    if (r == 1 && t == 0)
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 128;"
                     :: "r"(sa(&bar)) : "memory");
    if (r == 0) st_async(mapa(&buf[WORD(t)], 1), in[t], mapa(&bar, 1));
    if (r == 1) {
        mb_wait(&bar, 0);
        out[t] = buf[WORD(t)];
        GAP
    }
    cluster_sync();  // no CTA leaves while the other may still touch its memory
}
"""
# lane -> word: two runs with words 16..23 between them; one run a lane
RUNS = {"gap": "(t) < 16 ? (t) : (t) + 8", "reversed": "31 - (t)"}


def _remote_runs(mapping: str, gap: str = ""):
    import cupy as cp

    src = REMOTE_RUNS.replace("MAPPING", RUNS[mapping]).replace("GAP", gap)

    def make_args():
        x = cp.arange(32, dtype=cp.uint32) * 5 + 3
        out = poisoned(33, cp.uint32)
        return (x, out), [out]

    return src, make_args


@pytest.mark.parametrize("mapping", sorted(RUNS))
def test_st_async_runs_into_another_cta_are_clean_and_arrive(mapping):
    src, make_args = _remote_runs(mapping)
    rep, (out,) = check_against_native(src, "remote_runs", make_args, grid=(2,), block=(32,),
                                       options=(arch_option(),))
    assert rep.ok and not rep.notes and not rep.unmodeled, str(rep)
    np.testing.assert_array_equal(out[:32], np.arange(32, dtype=np.uint32) * 5 + 3)


def test_st_async_runs_leave_the_words_between_them_unwritten():
    # a run that took in lanes 15 and 16 together would cover words 16..23 as well
    import consan

    src, make_args = _remote_runs("gap", "if (t == 0) out[32] = buf[20];  // @gap")
    args, _ = make_args()
    rep = consan.check(src, "remote_runs", grid=(2,), block=(32,), args=args,
                       options=(arch_option(),))
    assert {v.kind for v in rep.violations} == {"uninit.read"}, str(rep)
    assert {v.line for v in rep.violations} == {line_of(src, "@gap")}, str(rep)


@pytest.fixture(autouse=True)
def _sm90():
    import cupy as cp

    if int(cp.cuda.Device().compute_capability) < 90:
        pytest.skip("st.async and clusters need sm_90")


def _local(racy: bool):
    """(source, report, output under consan, input). The clean kernel also runs natively
    and must write the same bits; the racy one's output is not compared."""
    import cupy as cp

    import consan

    src = LOCAL.replace("BEFORE", "" if racy else WAIT).replace("AFTER", WAIT if racy else "")

    def make_args():
        x = cp.arange(128, dtype=cp.uint32) * 3 + 1
        out = poisoned(128, cp.uint32)
        return (x, out), [out]

    if not racy:
        rep, (out,) = check_against_native(src, "local_st", make_args, grid=(4,), block=(64,),
                                           options=(arch_option(),))
    else:
        args, (out,) = make_args()
        rep = consan.check(src, "local_st", grid=(4,), block=(64,), args=args,
                           options=(arch_option(),))
        out = out.get()
    return src, rep, out, np.arange(128, dtype=np.uint32) * 3 + 1


def test_st_async_read_after_the_wait_is_clean_and_arrives():
    _, rep, out, x = _local(racy=False)
    assert rep.ok and not rep.notes, str(rep)
    np.testing.assert_array_equal(out, x)


def test_st_async_read_before_the_wait_is_pending_write():
    src, rep, _, _ = _local(racy=True)
    assert {v.kind for v in rep.violations} == {"async.pending-write"}, str(rep)
    assert {v.line for v in rep.violations} == {line_of(src, "@read")}, str(rep)
    assert all(line_of(src, "@st") in lines(v.prev_site) for v in rep.violations), str(rep)
    assert not rep.notes, str(rep)


def test_st_async_expecting_4_bytes_more_is_a_deadlock_at_the_wait():
    import cupy as cp

    import consan

    assert LOCAL.count("128;") == 1
    src = (LOCAL.replace("128;", "132;").replace("BEFORE", WAIT + "  // @wait")
           .replace("AFTER", ""))
    x, out = cp.arange(128, dtype=cp.uint32), cp.zeros(128, dtype=cp.uint32)
    rep = consan.check(src, "local_st", grid=(4,), block=(64,), args=(x, out),
                       options=(arch_option(),))
    assert {v.kind for v in rep.violations} == {"deadlock"}, str(rep)
    assert all(line_of(src, "@wait") in lines(v.site) for v in rep.violations), str(rep)


def test_st_async_into_another_cta_is_applied_there_and_clean():
    import cupy as cp

    def make_args():
        x = cp.arange(32, dtype=cp.uint32) + 7
        out = poisoned(32, cp.uint32)
        return (x, out), [out]

    rep, (out,) = check_against_native(REMOTE, "remote_st", make_args, grid=(2,), block=(32,),
                                       options=(arch_option(),))
    assert rep.ok and not rep.notes and not rep.unmodeled, str(rep)
    np.testing.assert_array_equal(out, np.arange(32, dtype=np.uint32) + 7)
