"""cp.async on a real GPU: each racy kernel has a clean twin differing only by the wait.

Seeds 000/003: a multi-stage cp.async main loop that ends with `wait_group 1`
and a `__syncthreads`, then an epilogue that reuses the stage memory while the
last (unused) prefetch is still in flight.

The clean twins and the cp.async + ldmatrix + mma.sync GEMM also run natively on the same
inputs and must write the very same bits; the racy twins' outputs are not compared (a
missing wait makes them timing-dependent).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, check_against_native, line_of, lines, poisoned

pytestmark = pytest.mark.gpu

CP = r"""
__device__ __forceinline__ void cp4(float* dst, const float* src) {
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(d), "l"(src) : "memory");
}
#define COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#define WAIT(n) asm volatile("cp.async.wait_group %0;" :: "n"(n) : "memory")
"""

READ_BEFORE_WAIT = CP + r"""
extern "C" __global__ void cp_read(const float* in, float* out) {
    __shared__ __align__(16) float s[256];
    int t = threadIdx.x;
    cp4(&s[t], in + blockIdx.x * 256 + t);  // @cp
    COMMIT();
    WAIT_HERE
    __syncthreads();
    out[blockIdx.x * 256 + t] = s[(t + 32) % 256];  // @use
}
"""

LAST_GROUP = CP + r"""
extern "C" __global__ void cp_two_groups(const float* in, float* out) {
    __shared__ __align__(16) float a[256];
    __shared__ __align__(16) float b[256];
    int t = threadIdx.x;
    cp4(&a[t], in + t);
    COMMIT();
    cp4(&b[t], in + 256 + t);  // @cp-b
    COMMIT();
    WAIT_HERE
    __syncthreads();
    float x = a[(t + 32) % 256];
    float y = b[(t + 32) % 256];  // @use-b
    out[blockIdx.x * 256 + t] = x + y;
}
"""

EPILOGUE = CP + r"""
extern "C" __global__ void pipeline_epilogue(const float* in, float* out, int ntiles) {
    __shared__ __align__(16) float stage[2][256];
    int t = threadIdx.x;
    float acc = 0.0f;
    cp4(&stage[0][t], in + t);
    COMMIT();
    for (int k = 0; k < ntiles; ++k) {
        // prefetch the next tile; the last iteration fetches one that is never used
        cp4(&stage[(k + 1) % 2][t], in + ((k + 1) % ntiles) * 256 + t);  // @prefetch
        COMMIT();
        WAIT(1);  // tile k has landed, tile k+1 may still be in flight
        __syncthreads();
        acc += stage[k % 2][(t + 32) % 256];
        __syncthreads();
    }
    WAIT_HERE
    __syncthreads();
    stage[ntiles % 2][t] = acc;  // @epilogue
    __syncthreads();
    out[blockIdx.x * 256 + t] = stage[ntiles % 2][(t + 1) % 256];
}
"""

NO_BARRIER = CP + r"""
extern "C" __global__ void cp_no_barrier(const float* in, float* out) {
    __shared__ __align__(16) float s[256];
    int t = threadIdx.x;
    cp4(&s[t], in + blockIdx.x * 256 + t);  // @cp
    COMMIT();
    WAIT_HERE
    out[blockIdx.x * 256 + t] = s[(t + 32) % 256];  // @use (another warp's copy)
}
"""

# sm_80+: the cp.async unit arrives on an mbarrier once the thread's copies landed
# (cp.async.mbarrier.arrive.noinc); waiting on the phase makes every thread's copies visible.
CP_MBAR = CP + r"""
extern "C" __global__ void cp_mbar(const float* in, float* out) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ __align__(16) float s[256];
    int t = threadIdx.x;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar);
    if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], 256;" :: "r"(b) : "memory");
    __syncthreads();
    cp4(&s[t], in + blockIdx.x * 256 + t);  // @cp
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" :: "r"(b) : "memory");
    WAIT_HERE
    out[blockIdx.x * 256 + t] = s[(t + 32) % 256];  // @use
}
"""
MB_WAIT0 = ('asm volatile("{\\n .reg .pred p;\\n W: mbarrier.test_wait.parity.shared.b64 p, '
            '[%0], 0;\\n @!p bra W;\\n}" :: "r"(b) : "memory");')


CASES = [
    # (source, kernel, racy wait, clean wait, marker of the access, marker of the copy)
    (READ_BEFORE_WAIT, "cp_read", "", "WAIT(0);", "@use", "@cp"),
    (LAST_GROUP, "cp_two_groups", "WAIT(1);", "WAIT(0);", "@use-b", "@cp-b"),
    (EPILOGUE, "pipeline_epilogue", "", "WAIT(0);", "@epilogue", "@prefetch"),
    # each warp waits for its own copies; another warp's need the barrier after the wait
    (NO_BARRIER, "cp_no_barrier", "WAIT(0);", "WAIT(0);\n    __syncthreads();", "@use", "@cp"),
    (CP_MBAR, "cp_mbar", "", MB_WAIT0, "@use", "@cp"),
]


def _args(kernel: str):
    import cupy as cp

    x = cp.asarray(np.random.default_rng(7).random(256 * 8, dtype=np.float32))
    out = poisoned(256 * 4, cp.float32)
    return (x, out) + ((np.int32(5),) if kernel == "pipeline_epilogue" else ()), [out]


def _check_racy(src: str, kernel: str):
    """The report of a racy twin (its output, timing-dependent, is not compared)."""
    import consan

    args, _ = _args(kernel)
    return consan.check(src, kernel, grid=(4,), block=(256,), args=args,
                        options=(arch_option(),))


@pytest.mark.parametrize("case", CASES, ids=[c[1] for c in CASES])
def test_missing_wait_is_a_pending_async_write(case):
    src, kernel, racy, _clean, use, copy = case
    src = src.replace("WAIT_HERE", racy)
    rep = _check_racy(src, kernel)
    assert {v.kind for v in rep.violations} == {"async.pending-write"}, str(rep)
    assert {v.line for v in rep.violations} == {line_of(src, use)}, str(rep)
    # the copy is issued inside an inlined helper: its call line is in the inline chain
    assert all(line_of(src, copy) in lines(v.prev_site) for v in rep.violations), str(rep)
    assert "async.pending-write" in str(rep)


@pytest.mark.parametrize("case", CASES, ids=[c[1] for c in CASES])
def test_clean_twin_is_clean_and_computes_the_native_bits(case):
    src, kernel, _racy, clean, _use, _copy = case
    src = src.replace("WAIT_HERE", clean)
    rep, _ = check_against_native(src, kernel, lambda: _args(kernel), grid=(4,), block=(256,),
                                  options=(arch_option(),))
    assert rep.ok, str(rep)


def test_multistage_cp_async_ldmatrix_mma_gemm_is_clean_and_exact():
    """Feature-dense clean kernel: 3-stage cp.async ring, ldmatrix, mma.sync (sm_80+)."""
    import cupy as cp

    from tests.kernels import mma_gemm as g

    m = n = 128
    k = 256

    def make_args():
        a, bt, c, _ = g.inputs(cp, m, n, k)
        c = poisoned(c.shape, c.dtype)
        return g.args(a, bt, c, m, n, k), [c]

    rep, (c,) = check_against_native(g.SOURCE, g.KERNEL, make_args, grid=g.grid(m, n),
                                     block=g.BLOCK, options=(arch_option(),))
    assert rep.ok, str(rep)
    np.testing.assert_array_equal(c, g.inputs(np, m, n, k)[3])  # small integers: exact
