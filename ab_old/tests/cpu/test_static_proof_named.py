"""The proof before launch of kernels whose warps meet at named barriers (docs/model.md,
"Kernels proven before launch", named barriers; instrument/proof_named.py): the CUDA
Programming Guide's producer-consumer ring over `bar.sync` / `bar.arrive` as NVRTC
compiles it, proven for its tile count, and its mutants refused; the GPU suite's named
twins."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from instrument.static_proof import Proof
from tests import corpus_build
from tests.kernels import gpu_kernels as K
from tests.kernels import named_ring as R
from tests.proof_util import prove_kernel


@functools.cache
def _ptx(source: str) -> str:
    return corpus_build.compile_cached(source, "named.cu", ["-arch=compute_90", "-lineinfo"])


def _prove(source: str, tiles: int | None = 8, block=R.BLOCK, kernel=R.KERNEL):
    params = {} if tiles is None else {2: (tiles, 32)}
    return prove_kernel(_ptx(source), kernel, dims=block, params=params, grid=(4, 1, 1))


@pytest.mark.parametrize("tiles", [1, 2, 3, 8])
def test_the_named_barrier_ring_is_proven_for_its_tile_count(tiles):
    got = _prove(R.source(), tiles)
    assert isinstance(got, Proof), got
    # (no CTA barrier: the two sides are ordered by the named barriers' generations only)
    assert (got.threads, got.barriers, got.params) == (128, 0, 1)


def test_without_its_tile_count_it_is_not_proven():
    got = _prove(R.source(), None)
    assert not isinstance(got, Proof) and got.unknown, got


@pytest.mark.parametrize(("mutant", "why"), [
    # the producers run ahead of the consumers: their arrival for tile k + 2 may count in
    # the generation of tile k, and their fill overwrite what is being read
    ("no_empty_wait", "may arrive at barrier 1 before the arrival of thread 0 completes the "
                      "generation before"),
    ("early_free", "two warps touch the granule at byte 0 between the same barriers"),
    ("one_full_barrier", "may arrive at barrier 1 before the arrival of thread 0 completes "
                         "the generation before"),
])
def test_each_mutant_of_the_ring_is_refused(mutant, why):
    got = _prove(R.source(mutant))
    assert isinstance(got, str) and why in got, got


def test_a_wait_at_a_barrier_too_few_threads_arrive_at_is_refused():
    """Warp 1 waits at `bar.sync 1, 64` and warp 0 never arrives: a hang on the GPU."""
    src = K._render(K._NAMED, NAME="named_hang", ARRIVE="", SYNC=K._SYNC_64)
    got = _prove(src, None, (64, 1, 1), "named_hang")
    assert isinstance(got, str) and "threads wait for a barrier generation that nothing " \
        "completes" in got, got


@pytest.mark.parametrize("key", ["named-missing", "named-count"])
def test_the_gpu_suites_named_twins(key):
    """The clean twin (warp 0 writes, `bar.arrive 1, 64`; warp 1 `bar.sync 1, 64`, reads) is
    proven; the racy ones (no barrier; a count of 32 at the sync) are not."""
    tw = K.TWIN_BY_KEY[key]
    assert isinstance(_prove(tw.clean_src, None, tw.block, tw.clean_name), Proof)
    got = _prove(tw.racy_src, None, tw.block, tw.racy_name)
    why = "two warps touch" if key == "named-missing" else "with a thread count of 64, " \
        "and of 32"
    assert isinstance(got, str) and why in got, got


def test_the_reference_sums_each_consumers_words():
    x = np.arange(4 * 8 * R.TILE, dtype=np.int32)
    got = R.reference(x, 8, 4)
    tiles = x.reshape(4, 8, R.TILE) * 3
    assert got[64 + 5] == tiles[1, :, 5::64].sum()


LATE_WAKE = R.BARRIERS + r"""
extern "C" __global__ void late_wake(int* out) {
    __shared__ int s[64];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (warp == 1) {  // X, held at barrier 3 until V arrives there
        s[lane] = lane + 1;
        bar_sync(3, 64);
        bar_sync(1, 64);  // completes generation 0 of barrier 1, W's
        bar_arrive(2, 64);  // lets Y go on
        bar_arrive(1, 64);  // generation 1, with Y
    }
    if (warp == 2) {  // Y
        bar_sync(2, 64);
        s[32 + lane] = lane + 2;
        bar_arrive(1, 64);  // completes generation 1
    }
    if (warp == 0) {  // W, in generation 0 before X
        bar_sync(1, 64);
        out[lane] = s[$READ];
    }
    if (warp == 3)  // V (the host runs it after W's arrival)
        bar_arrive(3, 64);
}
"""


@pytest.mark.parametrize(("read", "proven"), [("lane", True), ("32 + lane", False)])
def test_a_sync_acquires_the_generation_it_arrived_in(read, proven):
    """W arrives at barrier 1 first and is woken by generation 0, which X completes; the
    host run lets X and Y complete generation 1 before W runs on. W acquires generation 0
    (X's write before it), not generation 1: Y's write after it races with W's read."""
    got = prove_kernel(_ptx(LATE_WAKE.replace("$READ", read)), "late_wake",
                       dims=(128, 1, 1), params={})
    assert isinstance(got, Proof) == proven, got
    if not proven:
        assert "two warps touch the granule at byte 128" in got, got


HALF_WARP = R.BARRIERS + r"""
extern "C" __global__ void half_warp(int* out) {
    __shared__ int s[16];
    const int t = threadIdx.x, w = t / 32, lane = t % 32;
    if (t < 16) s[t] = -1;
    __syncthreads();
    if (w == 0) {
        $SPLIT
        bar_arrive($ID, 64);
        if (lane < 16) s[lane] = lane;
        bar_arrive($ID, 64);
    } else {
        bar_sync(1, 64);
        out[lane] = s[lane & 15];
    }
}
"""


@pytest.mark.parametrize(("split", "ident", "why"), [
    # half of warp 0 returns: the hardware still counts its arrival as 32 threads, so its
    # first arrival and warp 1's complete the generation before the store
    ('if (lane >= 16) asm volatile("ret;");', "1", "not run by every lane of its warps"),
    # lanes 0-15 arrive at barrier 1, lanes 16-31 at barrier 2: one warp's arrival
    ("", "1 + (lane >> 4)", "differs between the lanes of a warp"),
])
def test_a_warp_arrives_whole_at_one_barrier(split, ident, why):
    """Found by an adversarial review (the first proven, and racy on the H100: warp 1 read
    the -1s): the host counted a warp's live lanes, the GPU counts 32 threads a warp."""
    src = HALF_WARP.replace("$SPLIT", split).replace("$ID", ident)
    got = prove_kernel(_ptx(src), "half_warp", dims=(64, 1, 1), params={})
    assert isinstance(got, str) and why in got, got
