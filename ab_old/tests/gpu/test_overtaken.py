# ruff: noqa: E501  (the CUDA source keeps each statement, and its marker, on one line)
"""Warps that read a copy's destination before it was even issued (GPU).

Warp 0 waits ~200 us, then issues the copy (a bulk copy, a TMA tensor load, cp.async or
st.async) and waits for it; warps 1-3 read the destination at once, without waiting.
The reads run before the copy's probe, so the checker first sees reads of bytes nothing
wrote, then a write not ordered after them. The cause is the read not waiting for the
copy: exactly one finding, `async.pending-write` at the read, naming the copy's line
(never `uninit.read`, never `race.war` at the copy). Racy outputs are not compared with
a native run: they are the race. (A cluster launch of one CTA: st.async needs a cluster.)
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, line_of, lines
from tests.kernels.gpu_kernels import TMA_PRELUDE

pytestmark = pytest.mark.gpu

SOURCE = TMA_PRELUDE + r"""
__device__ __forceinline__ void mb_expect(unsigned long long* b, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(sa(b)), "r"(bytes) : "memory");
}
extern "C" __global__ void __cluster_dims__(1, 1, 1) early(const __grid_constant__ TensorMap128 map, const float* in,
                                 float* out, int how) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ __align__(128) float buf[256];
    int t = threadIdx.x, lane = t & 31;
    if (t == 0) mb_init(&bar, 1);
    __syncthreads();
    if (t < 32) {
        spin(400000);  // the readers go first
        if (how == 0 && lane == 0) {
            mb_expect(&bar, 1024);
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 1024, [%2];" :: "r"(sa(buf)), "l"(in), "r"(sa(&bar)) : "memory");  // @bulk
        }
        if (how == 1 && lane == 0) tma_load_2d(buf, &map, 0, 0, &bar, 1024);  // @tensor
        if (how == 2) {
            for (int i = lane; i < 64; i += 32)
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(sa(buf + 4 * i)), "l"(in + 4 * i) : "memory");  // @cp
            asm volatile("cp.async.wait_all;" ::: "memory");
        }
        if (how == 3) {
            if (lane == 0) mb_expect(&bar, 1024);
            __syncwarp();
            for (int i = lane; i < 256; i += 32)
                asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" :: "r"(sa(buf + i)), "r"(__float_as_uint(in[i])), "r"(sa(&bar)) : "memory");  // @st
        }
        if (how != 2) mb_wait(&bar, 0);
    } else {
        out[t] = buf[t];  // @read
    }
    __syncthreads();
    if (t == 0) asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(sa(&bar)));
}
"""

HOW = {"bulk": 0, "tensor": 1, "cp": 2, "st": 3}


@pytest.mark.parametrize("how", list(HOW))
def test_a_read_ahead_of_the_copy_is_a_pending_write_naming_the_copy(how):
    import cupy as cp

    import consan

    src = cp.arange(256, dtype=cp.float32)
    m = consan.tensor_map(src.reshape(16, 16), box_shape=(16, 16))
    out = cp.zeros(256, dtype=cp.float32)
    rep = consan.check(SOURCE, "early", grid=(1, 1, 1), block=(128, 1, 1),
                       args=(m, src, out, np.int32(HOW[how])), options=(arch_option(),),
                       source_name="early.cu")
    assert rep.error is None, rep.error
    assert [f.kind for f in rep.findings] == ["async.pending-write"], str(rep)
    f = rep.findings[0]
    assert f.site.loc.line == line_of(SOURCE, "@read"), str(rep)
    assert line_of(SOURCE, "@" + how) in lines(f.prev_site), str(rep)  # (the copy, inlined)
