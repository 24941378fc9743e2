"""Idempotent stores on the GPU (docs/model.md, "Idempotent stores"): every warp storing
one constant at one shared address is not a race; every warp storing its own value there,
or two instructions storing different constants, is."""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, check_against_native, line_of

pytestmark = pytest.mark.gpu

TEMPLATE = r"""
extern "C" __global__ void NAME(const int* in, int* out) {
    volatile __shared__ int flag;
    __shared__ int data[128];
    unsigned t = threadIdx.x, warp = t / 32;
    STORE
    data[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = flag + data[(t + 32) % blockDim.x];
}
"""

CLEAN = "flag = 1;  // @set-one"
OWN_VALUE = "flag = (int)warp;  // @set-own"
TWO_CONSTANTS = ("if (warp == 0) flag = 1;  // @set-a\n"
                 "    else flag = 2;  // @set-b")
GRID, BLOCK = (4, 1, 1), (128, 1, 1)


def _src(name: str, store: str) -> str:
    return TEMPLATE.replace("NAME", name).replace("STORE", store)


def _args():
    import cupy as cp

    n = GRID[0] * BLOCK[0]
    in_ = cp.asarray(np.random.default_rng(3).integers(-1000, 1000, n, dtype=np.int32))
    out = cp.full(n, -7, dtype=cp.int32)
    return (in_, out), [out]


def test_every_warp_storing_one_constant_is_clean_and_keeps_the_native_bits():
    rep, (out,) = check_against_native(_src("flag_one", CLEAN), "flag_one", _args, grid=GRID,
                                       block=BLOCK, options=(arch_option(),))
    assert rep.ok and not rep.violations, str(rep)
    assert (out - 1).min() >= -1000  # flag read back as 1


@pytest.mark.parametrize("name,store,lines", [
    ("flag_own", OWN_VALUE, ("@set-own",)),
    ("flag_two", TWO_CONSTANTS, ("@set-a", "@set-b")),
])
def test_warps_storing_different_values_race(name, store, lines):
    import consan

    src = _src(name, store)
    args, _ = _args()
    rep = consan.check(src, name, grid=GRID, block=BLOCK, args=args,
                       options=(arch_option(),))
    want = {line_of(src, m) for m in lines}
    assert rep.violations and {v.kind for v in rep.violations} == {"race.waw"}, str(rep)
    assert all(v.line in want and v.prev_line in want for v in rep.violations), str(rep)
