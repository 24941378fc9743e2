"""A kernel that includes a CUDA toolkit header is checked on the GPU, and is clean."""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, check_against_native

pytestmark = pytest.mark.gpu

FP16_KERNEL = r"""
#include <cuda_fp16.h>
extern "C" __global__ void scale_neighbours(const __half* in, __half* out) {
    __shared__ __half tile[256];
    unsigned t = threadIdx.x;
    tile[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    __half right = tile[(t + 1) % blockDim.x];
    out[blockIdx.x * blockDim.x + t] = __hadd(tile[t], __hmul(right, __float2half(0.5f)));
}
"""


def test_kernel_including_cuda_fp16_is_clean():
    import cupy as cp

    n = 4 * 256
    x = cp.arange(n, dtype=cp.float16) / cp.float16(64)

    def make_args():
        y = cp.full(n, cp.nan, dtype=cp.float16)
        return (x, y), [y]

    rep, (y,) = check_against_native(FP16_KERNEL, "scale_neighbours", make_args,
                                     grid=(4, 1, 1), block=(256, 1, 1), options=(arch_option(),))
    assert rep.ok, str(rep)
    xs = x.get().astype(np.float32).reshape(4, 256)
    want = xs + 0.5 * np.roll(xs, -1, axis=1)
    np.testing.assert_allclose(y.astype(np.float32).reshape(4, 256), want, rtol=1e-2)
