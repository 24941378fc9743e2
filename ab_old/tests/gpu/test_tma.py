"""TMA tensor copies on a real GPU (sm_90): maps built by consan.tensor_map, racy kernels
and clean twins that differ by one line, the clean ones compared with a native launch
and with NumPy.

- one 2-D tile per CTA: reading it before the mbarrier wait is async.pending-write at
  the read; a map consan does not know is a tool.tensor-map-unknown note and a guess;
  a map built directly with cuda-bindings while the hook is installed is known;
- a 4-stage warp-specialised ring (kernels in tests/kernels/gpu_kernels.py, for benchmarks too):
  clean, the producer skipping the empty wait (race.war at its copy), the consumers
  reading before the full wait (async.pending-write). The clean ring once hung the GPU:
  a consumer's one-lane arrive ran its probe together with the lanes of another call
  site and counted 32 arrivals (checker/platform.h, cs_group); 12 tiles reproduced it;
- a tensor-store epilogue (a bulk store of the box): clean with its proxy fence and its
  wait_group.read before the buffer is reused; without the fence proxy.missing-fence at
  the store; reusing the buffer before the wait async.pending-read at the reuse.

Every clean kernel also runs natively on the same inputs and must write the very same bits
(tests/gpu_util.py); the racy kernels' outputs are not compared (a missing wait or fence
makes them timing-dependent).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, check_against_native, line_of, lines, poisoned
from tests.kernels import gpu_kernels as gk

pytestmark = pytest.mark.gpu

ROWS, COLS = 64, 96  # the tile kernel's matrix: 2 x 3 tiles of 32 x 32


def _hopper_or_skip():
    import cupy as cp

    if int(cp.cuda.Device().compute_capability) < 90:
        pytest.skip("TMA tensor copies need sm_90")


def _matrix(shape, seed):
    import cupy as cp

    return cp.asarray(np.random.default_rng(seed).integers(0, 8, shape).astype(np.float32))


def _tile(src: str, tmap, clean: bool):
    """(report, output under consan). A clean kernel also runs natively and must write the
    same bits (the map's matrix is only read: both runs read the same one); a racy one's
    output is timing-dependent, so it is not compared."""
    import cupy as cp

    import consan

    def make_args():
        out = poisoned((ROWS, COLS), cp.float32)
        return (tmap, out, np.int32(COLS)), [out]

    grid = (COLS // gk.TMA_TILE_COLS, ROWS // gk.TMA_TILE_ROWS)
    if clean:
        rep, (out,) = check_against_native(src, "tma_tile", make_args, grid=grid, block=(128,),
                                           options=(arch_option(),))
        return rep, out
    args, (out,) = make_args()
    rep = consan.check(src, "tma_tile", grid=grid, block=(128,), args=args,
                       options=(arch_option(),))
    return rep, out.get()


def test_tensor_map_of_a_cupy_array():
    _hopper_or_skip()
    import consan

    x = _matrix((ROWS, COLS), 1)
    m = consan.tensor_map(x, box_shape=(32, 32))
    assert type(m) is np.void and m.dtype.itemsize == 128 and any(m.tobytes())
    info = consan.tensor_map_info(m)
    assert info.global_address == x.data.ptr and info.global_dim == (COLS, ROWS)
    assert info.footprint_bytes == 32 * 32 * 4
    assert consan.tensor_map_info(np.void(m.tobytes())) == info  # known by its bytes


def test_tile_read_before_the_wait_is_pending_write():
    _hopper_or_skip()
    import consan

    src = gk.fill(gk.TMA_TILE, gk.TMA_TILE_RACY)
    x = _matrix((ROWS, COLS), 2)
    rep, _ = _tile(src, consan.tensor_map(x, box_shape=(32, 32)), clean=False)
    assert {v.kind for v in rep.violations} == {"async.pending-write"}, str(rep)
    assert {v.line for v in rep.violations} == {line_of(src, "@use")}, str(rep)
    # the copy is issued in an inlined helper: its call line is in the inline chain
    assert all(line_of(src, "@tma") in lines(v.prev_site) for v in rep.violations), str(rep)
    assert not rep.notes, str(rep)  # the map is known: nothing guessed


def test_tile_after_the_wait_is_clean_and_computes_what_native_does():
    _hopper_or_skip()
    import consan

    src = gk.fill(gk.TMA_TILE, gk.TMA_TILE_CLEAN)
    x = _matrix((ROWS, COLS), 3)
    m = consan.tensor_map(x, box_shape=(32, 32))
    rep, got = _tile(src, m, clean=True)
    assert rep.ok and not rep.notes, str(rep)
    assert not [u for u in rep.unmodeled if "tensor" in u.text], rep.unmodeled
    np.testing.assert_array_equal(got, 2.0 * x.get())


# `if (t == 0) tma_load_2d(...)`, then every lane of warp 0 asks which lanes run with it:
# natively all 32; the probe's lanes write the box together and leave together
# (instrument/converge.py), so warp 0 is not split after the copy.
TOGETHER = gk.TMA_PRELUDE + r"""
extern "C" __global__ void tma_together(const __grid_constant__ TensorMap128 map, float* out,
                                        int width) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ __align__(128) float tile[32 * 32];
    int t = threadIdx.x, x0 = blockIdx.x * 32, y0 = blockIdx.y * 32;
    if (t == 0) mb_init(&bar, 1);
    __syncthreads();
    if (t == 0) tma_load_2d(tile, &map, x0, y0, &bar, 32 * 32 * 4);
    float lanes = (float)__popc(__activemask());
    mb_wait(&bar, 0);
    for (int i = t; i < 32 * 32; i += blockDim.x)
        out[(y0 + i / 32) * width + x0 + i % 32] = tile[i] + lanes;
}
"""


def test_warp_stays_together_after_a_one_lane_tensor_load():
    _hopper_or_skip()
    import cupy as cp

    import consan

    def make_args():
        x = _matrix((ROWS, COLS), 9)
        out = poisoned((ROWS, COLS), cp.float32)
        return (consan.tensor_map(x, box_shape=(32, 32)), out, np.int32(COLS)), [out], x

    rep, (out,) = check_against_native(TOGETHER, "tma_together", make_args,
                                       grid=(COLS // 32, ROWS // 32), block=(64,),
                                       options=(arch_option(),))
    assert rep.ok, str(rep)
    np.testing.assert_array_equal(out, _matrix((ROWS, COLS), 9).get() + 32.0)  # natively too


@pytest.mark.parametrize("subs", [gk.TMA_TILE_CLEAN, gk.TMA_TILE_RACY], ids=["clean", "racy"])
def test_unknown_map_is_noted_and_its_box_guessed_from_the_expected_bytes(subs):
    _hopper_or_skip()
    import consan
    from consan import tma

    src = gk.fill(gk.TMA_TILE, subs)
    x = _matrix((ROWS, COLS), 4)
    data = consan.tensor_map(x, box_shape=(32, 32)).tobytes()
    tma.forget_all()
    stranger = np.void(data)  # the same map, its geometry forgotten
    assert consan.tensor_map_info(stranger) is None
    clean = subs is gk.TMA_TILE_CLEAN
    rep, got = _tile(src, stranger, clean=clean)
    assert [f.kind for f in rep.notes] == ["tool.tensor-map-unknown"], str(rep)
    assert all(line_of(src, "@tma") in lines(v.site) for v in rep.tool_notes), str(rep)
    # the phase expected exactly the box: the guess is the box
    assert {(v.offset_hi - v.offset_lo) for v in rep.tool_notes} == {32 * 32 * 4}, str(rep)
    if clean:
        assert rep.ok, str(rep)
        np.testing.assert_array_equal(got, 2.0 * x.get())
    else:
        assert {v.kind for v in rep.violations} == {"async.pending-write"}, str(rep)
        # with the box guessed, the race is still at the read of the tile, against the copy
        assert {v.line for v in rep.violations} == {line_of(src, "@use")}, str(rep)
        assert all(line_of(src, "@tma") in lines(v.prev_site) for v in rep.violations), \
            str(rep)


def test_map_encoded_through_cuda_bindings_under_the_hook_is_known():
    _hopper_or_skip()
    import struct

    from cuda.bindings import driver

    from consan import frontends, tma

    x = _matrix((ROWS, COLS), 5)
    tma.forget_all()
    was = frontends.installed()
    frontends.install()
    try:
        u32, u64 = driver.cuuint32_t, driver.cuuint64_t
        err, cu = driver.cuTensorMapEncodeTiled(
            driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, x.data.ptr,
            [u64(COLS), u64(ROWS)], [u64(COLS * 4)], [u32(32), u32(32)], [u32(1), u32(1)],
            driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
            driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
            driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    finally:
        if not was:
            frontends.uninstall()
    assert int(err) == 0
    m = np.void(struct.pack("<16Q", *(int(w) for w in cu.opaque)))
    assert tma.tensor_map_info(m).footprint_bytes == 32 * 32 * 4
    src = gk.fill(gk.TMA_TILE, gk.TMA_TILE_CLEAN)
    rep, got = _tile(src, m, clean=True)
    assert rep.ok and not rep.notes, str(rep)
    np.testing.assert_array_equal(got, 2.0 * x.get())


# ---------------------------------------------------------------- the 4-stage ring

RING_CTAS = 2


def _ring(subs: dict[str, str], ntiles: int):
    """(source, report, output under consan, reference). The clean ring (no `subs`) also
    runs natively and must write the same bits; a racy one's output is not compared."""
    import cupy as cp

    import consan

    src = gk.fill(gk.TMA_RING, {**gk.TMA_RING_CLEAN, **subs})
    shape = (RING_CTAS * ntiles * gk.TMA_RING_ROWS, gk.TMA_RING_COLS)

    def make_args():
        x = _matrix(shape, 6)  # (kept alive with the launch: the map holds no reference)
        m = consan.tensor_map(x, box_shape=(gk.TMA_RING_ROWS, gk.TMA_RING_COLS))
        out = poisoned(RING_CTAS * gk.TMA_RING_COLS, cp.float32)
        return (m, out, np.int32(ntiles)), [out], x

    grid, block, opts = (RING_CTAS,), (96,), (arch_option(),)
    if subs:
        args, (out,), _x = make_args()
        rep = consan.check(src, "tma_ring", grid=grid, block=block, args=args, options=opts)
        got = out.get()
    else:
        rep, (got,) = check_against_native(src, "tma_ring", make_args, grid=grid, block=block,
                                           options=opts)
    want = gk.tma_ring_reference(_matrix(shape, 6).get(), RING_CTAS, ntiles)
    return src, rep, got, want


# The buffer tables in the CTA's shared memory (the default where they fit), or in device
# memory with box summaries (CONSAN_VC_SMEM=0, the fallback for large shared memory).
TABLES = ("shared", "device")


def _tables(monkeypatch, tables: str) -> None:
    monkeypatch.setenv("CONSAN_VC_SMEM", "1" if tables == "shared" else "0")


@pytest.mark.parametrize("tables", TABLES)
def test_ring_clean_is_clean_and_computes_the_sums(tables, monkeypatch):
    _hopper_or_skip()
    _tables(monkeypatch, tables)
    _, rep, got, want = _ring({}, 12)
    assert rep.ok and not rep.notes, str(rep)
    assert rep.launch["tables"] == tables
    assert rep.header["walked"] == 0  # device tables: every box's summaries clear, stores only
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("tables", TABLES)
@pytest.mark.parametrize("case", sorted(gk.TMA_RING_RACY))
def test_ring_missing_wait(case, tables, monkeypatch):
    _hopper_or_skip()
    _tables(monkeypatch, tables)
    subs, ntiles, kind, at, prev = gk.TMA_RING_RACY[case]
    src, rep, _, _ = _ring(subs, ntiles)
    assert rep.launch["tables"] == tables
    assert {v.kind for v in rep.violations} == {kind}, str(rep)
    assert all(line_of(src, at) in lines(v.site) for v in rep.violations), str(rep)
    assert all(line_of(src, prev) in lines(v.prev_site) for v in rep.violations), str(rep)
    if kind == "race.war" and tables == "device":  # the refill's summary shows the reads
        assert rep.header["walked"] > 0


def test_a_row_read_before_the_wait_names_each_warps_first_row(monkeypatch):
    """The consumers read a box 128 bytes a row (lane i the row's i-th float): the checker
    publishes and judges such whole rows one lane per row (cs_vc_smem_read_granules). Each
    record still names all 32 lanes and the first row the warp read, as when every lane
    went through every row."""
    _hopper_or_skip()
    _tables(monkeypatch, "shared")
    subs, ntiles, kind, at, prev = gk.TMA_RING_RACY["consumer-reads-before-full-wait"]
    src, rep, _, _ = _ring(subs, ntiles)
    assert rep.violations and {v.kind for v in rep.violations} == {kind}, str(rep)
    assert all(line_of(src, at) in lines(v.site) for v in rep.violations), str(rep)
    assert all(line_of(src, prev) in lines(v.prev_site) for v in rep.violations), str(rep)
    box = gk.TMA_RING_ROWS * gk.TMA_RING_COLS * 4  # (a stage's bytes: rows of 256)
    assert all(v.offset_hi - v.offset_lo == 128 and v.offset_lo % 128 == 0 and
               v.lanes == 0xFFFFFFFF for v in rep.violations), str(rep)
    at = {w: {v.offset_lo % box for v in rep.violations if v.warp == w} for w in (1, 2)}
    assert len(at[1]) == 1 and at[2] == {(next(iter(at[1])) + 128) % box}, str(rep)


# ---------------------------------------------------------------- tensor stores

def _store(subs: dict[str, str]):
    """(source, report, output under consan, input). The clean epilogue (no `subs`) also
    runs natively and must store the same bits; a racy one's output is not compared."""
    import cupy as cp

    import consan

    src = gk.fill(gk.TMA_STORE, {**gk.TMA_STORE_CLEAN, **subs})

    def make_args():
        out = poisoned((ROWS, COLS), cp.float32)
        m = consan.tensor_map(out, box_shape=(32, 32))
        return (m, _matrix((ROWS, COLS), 7), np.int32(COLS)), [out]

    grid, block, opts = (COLS // 32, ROWS // 32), (128,), (arch_option(),)
    if subs:
        args, (out,) = make_args()
        rep = consan.check(src, "tma_store", grid=grid, block=block, args=args, options=opts)
        got = out.get()
    else:
        rep, (got,) = check_against_native(src, "tma_store", make_args, grid=grid, block=block,
                                           options=opts)
    return src, rep, got, _matrix((ROWS, COLS), 7).get()


def test_tensor_store_epilogue_is_clean_and_stores_the_tile():
    _hopper_or_skip()
    _, rep, got, x = _store({})
    assert rep.ok and not rep.notes and not rep.unmodeled, str(rep)
    np.testing.assert_array_equal(got, 3.0 * x)


@pytest.mark.parametrize("case", sorted(gk.TMA_STORE_RACY))
def test_tensor_store_hazards(case):
    _hopper_or_skip()
    subs, kind, at, prev = gk.TMA_STORE_RACY[case]
    src, rep, _, _ = _store(subs)
    assert {v.kind for v in rep.violations} == {kind}, str(rep)
    assert {v.line for v in rep.violations} == {line_of(src, at)}, str(rep)
    assert all(line_of(src, prev) in lines(v.prev_site) for v in rep.violations), str(rep)


@pytest.mark.parametrize("case", [None, *sorted(gk.TMA_RING_RACY)])
def test_ring_under_a_session_is_proven_or_its_race_reported(case):
    """The ring as `consan run` takes it: the clean ring is proven for its map and tile
    count (the producer's and consumers' waits order everything, no CTA barrier) and runs
    natively with its native bits; each racy twin is refused, instrumented and reported."""
    _hopper_or_skip()
    import cupy as cp

    import consan
    from consan import frontends, session

    subs, ntiles, kind = ({}, 12, None) if case is None else gk.TMA_RING_RACY[case][:3]
    src = gk.fill(gk.TMA_RING, {**gk.TMA_RING_CLEAN, **subs})
    shape = (RING_CTAS * ntiles * gk.TMA_RING_ROWS, gk.TMA_RING_COLS)
    x = _matrix(shape, 6)
    m = consan.tensor_map(x, box_shape=(gk.TMA_RING_ROWS, gk.TMA_RING_COLS))

    def launch(text: str):
        out = poisoned(RING_CTAS * gk.TMA_RING_COLS, cp.float32)
        cp.RawKernel(text, "tma_ring", options=(arch_option(),))(
            (RING_CTAS,), (96,), (m, out, np.int32(ntiles)))
        cp.cuda.Device().synchronize()
        return out.get()

    s = session.Session(session.Options(count_other_launches=False), print_findings=False)
    with frontends.sanitizing(s):
        got = launch(src)
    stats = s.report.kernels["tma_ring"]
    assert stats.launches_checked == 1, s.report
    if kind is not None:
        assert not stats.proven, stats
        assert {f.finding.kind for f in s.report.findings} == {kind}, s.report
        return
    assert s.report.ok and stats.proven.startswith("proven race-free"), (s.report, stats)
    assert got.tobytes() == launch(src + "\n// native\n").tobytes()
    np.testing.assert_array_equal(got, gk.tma_ring_reference(x.get(), RING_CTAS, ntiles))
