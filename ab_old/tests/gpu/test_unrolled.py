"""Unrolled kernels under consan on a real GPU: the corpus's bitonic sort, whose NVCC-unrolled
body has hundreds of shared-memory accesses, most of them in runs whose probes one call
makes (instrument/fast_path.py). The clean kernels compute the native bits under consan
and report nothing; without the barrier before its stride-32 steps the sort's compare-and-swap
races, and every finding names two of its lines."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.corpus_build import CORPUS_DIR
from tests.gpu_util import check_against_native

pytestmark = pytest.mark.gpu

SOURCE = (CORPUS_DIR / "bitonic_sort.cu").read_text()
STRIDE_BARRIER = "            __syncthreads();\n            int pos"
# (the barrier dropped before each stride-32 step: where it follows a stride-64 step, warp
# 0 compares the words warp 1 has just swapped, so every race is between two of the
# swap's lines; the loops then need `#pragma unroll` to be unrolled as the clean kernel's
# are, into runs of accesses)
RACY_BARRIER = "            if (stride != 32) __syncthreads();\n            int pos"
CTAS = 8


@pytest.fixture(scope="module")
def arch_options():
    import cupy

    cc = cupy.cuda.Device().compute_capability
    return (f"-arch=sm_{cc}a" if cc == "90" else f"-arch=sm_{cc}", "-lineinfo")


def _keys():
    return np.random.default_rng(7).integers(0, 1 << 30, CTAS * 1024).astype(np.uint32)


def _bitonic_args():
    import cupy as cp

    keys = cp.asarray(_keys())
    vals = cp.arange(CTAS * 1024, dtype=cp.uint32)
    return (keys, vals, np.int32(1)), [keys, vals]


def test_the_unrolled_bitonic_sort_is_clean_and_computes_the_native_bits(arch_options):
    rep, (keys, vals) = check_against_native(SOURCE, "bitonic_sort_1024", _bitonic_args,
                                             grid=(CTAS, 1, 1), block=(512, 1, 1),
                                             options=arch_options)
    assert rep.ok and not rep.violations and not rep.unmodeled, str(rep)
    want = np.sort(_keys().reshape(CTAS, 1024), axis=1).ravel()
    np.testing.assert_array_equal(keys, want)
    np.testing.assert_array_equal(_keys()[vals], keys)  # (each key with its value)


def test_the_odd_even_sort_is_clean_and_computes_the_native_bits(arch_options):
    def make_args():
        import cupy as cp

        data = cp.asarray(np.random.default_rng(8).standard_normal(CTAS * 256)
                          .astype(np.float32))
        return (data,), [data]

    rep, (data,) = check_against_native(SOURCE, "odd_even_sort", make_args,
                                        grid=(CTAS, 1, 1), block=(256, 1, 1),
                                        options=arch_options)
    assert rep.ok and not rep.violations, str(rep)
    assert np.all(np.diff(data.reshape(CTAS, 256), axis=1) >= 0)


def test_the_bitonic_sort_without_a_stride_barrier_races_in_its_compare_and_swap(
        arch_options):
    import consan

    assert SOURCE.count(STRIDE_BARRIER) == 1
    racy = SOURCE.replace(STRIDE_BARRIER, RACY_BARRIER).replace(
        "    for (int size", "    #pragma unroll\n    for (int size").replace(
        "        for (int stride", "        #pragma unroll\n        for (int stride")
    args, _ = _bitonic_args()
    rep = consan.check(racy, "bitonic_sort_1024", grid=(CTAS, 1, 1), block=(512, 1, 1),
                       args=args, options=arch_options)
    lines = racy.splitlines()
    swap = {i + 1 for i, ln in enumerate(lines) if re.search(r"\b(sk|sv)\[pos", ln)}
    assert len(swap) == 6 and not rep.ok and rep.violations, str(rep)
    for v in rep.violations:
        assert v.kind in ("race.raw", "race.war", "race.waw"), str(rep)
        assert v.line in swap and v.prev_line in swap, (v, sorted(swap))
