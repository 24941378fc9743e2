"""The benchmarks' --size option (bench_clean.py's, which bench_async.py takes too), without a
GPU."""

from __future__ import annotations

import pytest

from benchmarks.bench_async import CASES
from benchmarks.bench_clean import size_overrides


def test_size_names_each_kernel_and_refuses_anything_else():
    assert size_overrides([], CASES) == {}
    assert size_overrides(["tma_ring_4stage=132", "mma_gemm_cp_async=704"], CASES) == {
        "tma_ring_4stage": 132, "mma_gemm_cp_async": 704}
    assert size_overrides(["sgemm=64,64,32"], {"sgemm": 0}) == {"sgemm": (64, 64, 32)}
    for bad in ("tma_ring_4stage", "tma_ring_4stage=x", "nope=3", "tma_ring_4stage="):
        with pytest.raises(ValueError, match="KERNEL=N"):
            size_overrides([bad], CASES)
