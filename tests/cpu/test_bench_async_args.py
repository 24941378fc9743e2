"""benchmarks/bench_async.py's options, without a GPU."""

from __future__ import annotations

import pytest


def test_bench_async_sizes_names_each_kernel_and_refuses_anything_else():
    from benchmarks.bench_async import _sizes

    assert _sizes(None) == {}
    assert _sizes("tma_ring_4stage=132,mma_gemm_cp_async=704") == {
        "tma_ring_4stage": 132, "mma_gemm_cp_async": 704}
    for bad in ("tma_ring_4stage", "tma_ring_4stage=x", "nope=3", "tma_ring_4stage=132,"):
        with pytest.raises(ValueError):
            _sizes(bad)
