"""The proof before launch of shared atomics at addresses known only within bounds, in a
loop whose trip count differs between threads (docs/model.md, "Kernels proven before
launch", bounded addresses): bench_clean's grid-stride histogram, `atomicAdd(&bins[data[i]],
1u)` with `data` bytes, proven for its launch; its mutants that race or read bins nothing
wrote are refused."""

from __future__ import annotations

import functools

import pytest

from instrument.static_proof import Proof
from tests import corpus_build
from tests.kernels import gpu_kernels as K
from tests.proof_util import prove_kernel

HISTOGRAM = K.CLEAN["histogram256"]
INIT = "    bins[t] = 0u;\n    __syncthreads();\n"
LOOP = "        atomicAdd(&bins[data[i]], 1u);\n"
END = "    __syncthreads();\n    atomicAdd(&hist[t], bins[t]);\n"


@functools.cache
def _ptx(source: str) -> str:
    return corpus_build.compile_cached(source, "histogram.cu", ["-arch=compute_90", "-lineinfo"])


def _prove(source: str, n: int = 1 << 30, grid: int = K.MAX_GRID_STRIDE_BLOCKS,
           block: int = 256):
    return prove_kernel(_ptx(source), "histogram256", dims=(block, 1, 1),
                        params={2: (n, 64)}, grid=(grid, 1, 1))


def _edit(old: str, new: str, source: str = HISTOGRAM) -> str:
    assert source.count(old) == 1, old
    return source.replace(old, new)


@pytest.mark.parametrize(("n", "grid"), [(1 << 30, K.MAX_GRID_STRIDE_BLOCKS), (1000, 3),
                                         (64, 1), (1 << 18, 1024)])
def test_the_histogram_is_proven_for_its_launch(n, grid):
    got = _prove(HISTOGRAM, n, grid)
    assert isinstance(got, Proof), got
    assert got.params == 1 and got.grid and got.barriers == 2


def test_without_its_launch_it_is_not_proven():
    got = prove_kernel(_ptx(HISTOGRAM), "histogram256", dims=(256, 1, 1))
    assert not isinstance(got, Proof) and got.unknown, got


@pytest.mark.parametrize(("old", "new", "why"), [
    # the bins zeroed and counted into between the same barriers
    (INIT, "    bins[t] = 0u;\n", "two warps touch the granule"),
    # the bins read out while other warps may still count into them
    (END, "    atomicAdd(&hist[t], bins[t]);\n", "two warps touch the granule"),
    # half the bins never zeroed: an atomic may read one nothing wrote
    (INIT, "    if (t < 128) bins[t] = 0u;\n    __syncthreads();\n",
     "before any write certain to run"),
    # a plain read-modify-write at the loaded address (a race between lanes and warps)
    (LOOP, "        bins[data[i]] += 1u;\n", "is not known before launch"),
    # one bin past the last: its bytes are the bins' neighbour's, never written
    (LOOP, "        atomicAdd(&bins[data[i] + 1], 1u);\n", "before any write certain to run"),
    # 16-bit samples: every address up to 256 KiB, past the bins' 1 KiB (and past what
    # the host judges: 65,536 granules for each of 256 threads)
    ("const unsigned char* data", "const unsigned short* data",
     "rows of accesses to judge on the host"),
])
def test_each_mutant_of_the_histogram_is_refused(old, new, why):
    got = _prove(_edit(old, new))
    assert isinstance(got, str) and why in got, got


def test_an_address_bounded_by_a_mask_is_followed_too():
    """`bins[(v >> 3) & 31]` of a 32-bit sample: the bounds come from the `and`."""
    src = _edit("const unsigned char* data", "const unsigned int* data")
    src = _edit(LOOP, "        atomicAdd(&bins[(data[i] >> 3) & 31], 1u);\n", src)
    assert isinstance(_prove(src), Proof)
    src = _edit("(data[i] >> 3) & 31", "(data[i] >> 3)", src)  # (unbounded: refused)
    assert "is not known before launch" in _prove(src)


def test_an_atomic_loop_that_holds_a_barrier_or_a_plain_access_is_refused():
    src = _edit(LOOP, "        { atomicAdd(&bins[data[i]], 1u); __syncthreads(); }\n")
    assert isinstance(_prove(src), str)
    src = _edit(LOOP, "        { atomicAdd(&bins[data[i]], 1u); bins[t] = 1u; }\n")
    assert isinstance(_prove(src), str)


def test_each_later_trip_of_an_atomic_loop_is_covered():
    """The bin is the trip's (`(i / step) & 255`, in 32 bits): with n one step and 100
    past it, threads 0-99 of CTA 0 make a second trip, into bin 1, which thread 255 stores
    to between the same barriers: a race no first trip shows. The loop's trips are
    followed past the first from its registers made unknown, so bin 1 is among those its
    atomics touch."""
    src = _edit(LOOP, "        atomicAdd(&bins[((unsigned)i / (unsigned)step) & 255u], 1u);\n")
    n = K.MAX_GRID_STRIDE_BLOCKS * 256 + 100
    assert isinstance(_prove(src, n), Proof)
    racy = _edit("    const long long step", "    if (t == 255) bins[1] = 7u;  // (a race)\n"
                 "    const long long step", src)
    got = _prove(racy, n)
    assert isinstance(got, str) and "two warps touch the granule at byte 4" in got, got
