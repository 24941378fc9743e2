"""Kernels launched in clusters: shared addresses carry the CTA's rank, accesses are checked."""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, check_against_native, line_of

pytestmark = pytest.mark.gpu

CLUSTER = r"""
extern "C" __global__ void __cluster_dims__(2, 1, 1) in_cluster(const float* in, float* out) {
    __shared__ float s[64];
    int t = threadIdx.x;
    if (t < 32) s[t] = in[blockIdx.x * 64 + t];  // @write
    if (t >= 32) {
        long long t0 = clock64();
        while (clock64() - t0 < 2000000) {}
    }
    SYNC
    if (t >= 32) out[blockIdx.x * 32 + t - 32] = s[t - 32];  // @read
}
"""


def _check(sync: str):
    import cupy as cp

    import consan

    if int(cp.cuda.Device().compute_capability) < 90:
        pytest.skip("clusters need sm_90")
    src = CLUSTER.replace("SYNC", sync)
    x = cp.asarray(np.random.default_rng(5).random(256, dtype=np.float32))
    out = cp.zeros(128, dtype=cp.float32)
    rep = consan.check(src, "in_cluster", grid=(4,), block=(64,), args=(x, out),
                       options=(arch_option(),))
    return src, rep, out.get(), x.get()


def test_race_inside_a_cluster_cta_is_found():
    src, rep, _, _ = _check("")
    assert {v.kind for v in rep.violations} == {"race.raw"}, str(rep)
    assert {v.line for v in rep.violations} == {line_of(src, "@read")}, str(rep)
    assert {v.prev_line for v in rep.violations} == {line_of(src, "@write")}, str(rep)
    assert not rep.notes, str(rep)  # every access was inside the CTA's own window


def test_clean_cluster_kernel_has_no_notes():
    import cupy as cp

    if int(cp.cuda.Device().compute_capability) < 90:
        pytest.skip("clusters need sm_90")
    src = CLUSTER.replace("SYNC", "__syncthreads();")
    x = cp.asarray(np.random.default_rng(5).random(256, dtype=np.float32))

    def make_args():
        out = cp.full(128, cp.nan, dtype=cp.float32)
        return (x, out), [out]

    rep, (out,) = check_against_native(src, "in_cluster", make_args, grid=(4, 1, 1),
                                       block=(64, 1, 1), options=(arch_option(),))
    assert rep.ok and not rep.notes, str(rep)
    np.testing.assert_array_equal(out.reshape(4, 32), x.get().reshape(4, 64)[:, :32])
