"""Kernels that include CUDA toolkit headers are checked on the GPU: clean, native bits."""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, check_against_native
from tests.kernels.cuda_headers import HEADER_KERNELS, THREADS, HeaderKernel, has_header

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


def _header_args(hk: HeaderKernel):
    """Fresh arrays for `hk`'s parameters, the same on every call (one seed)."""
    import cupy as cp

    rng = np.random.default_rng(7)
    arrays = []
    for dtype in hk.params:
        vals = rng.standard_normal(THREADS).astype(np.float32)
        if dtype == "bfloat16":  # bf16 bits: the high half of a float32
            host_arr = (vals.view(np.uint32) >> 16).astype(np.uint16)
        else:
            host_arr = vals.astype(dtype)
        arrays.append(cp.asarray(host_arr))
    return tuple(arrays), [arrays[i] for i in hk.outputs]


@pytest.mark.parametrize("header", sorted(HEADER_KERNELS))
def test_kernel_per_cuda_header_is_clean_and_computes_the_native_bits(header):
    """Each header's kernel, as the CPU suite builds it, checked on the GPU: no finding, and
    every output bitwise equal to the native run's."""
    if not has_header(header):
        pytest.skip(f"{header} is not in this machine's CUDA include directories")
    hk = HEADER_KERNELS[header]
    rep, _ = check_against_native(hk.source, "k", lambda: _header_args(hk), grid=(1, 1, 1),
                                  block=(THREADS, 1, 1), options=(arch_option(),),
                                  what=f"the {header} kernel")
    assert rep.ok and not rep.violations, str(rep)
