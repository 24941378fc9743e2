"""consan on a real GPU: racy/clean twin kernels and clean real-world kernels.

The kernels live in tests/kernels/gpu_kernels.py (plain strings, no GPU
needed to import). Every test here needs consan and a CUDA GPU; on a
machine without one the whole module is skipped at collection.

Racy twins: the racy kernel must report exactly the expected kind(s), every
violation at the marked line (and the earlier access at the marked earlier
line), by the expected warps; its clean twin must report nothing, and computes
under consan the very bits of a native launch (and the NumPy reference). The
racy twins' outputs are not compared: a race makes them timing-dependent.
Clean kernels: outputs under consan bitwise equal to native outputs (and the
native ones match the NumPy reference), and the report is clean.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import (
    assert_same_bits,
    check_against_native,
    line_of,
    native_launch,
    poison,
    poisoned,
)
from tests.kernels import gpu_kernels as K

pytestmark = pytest.mark.gpu


# --------------------------------------------------------------------------
# Fixtures and helpers


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


@pytest.fixture(scope="module")
def arch_options(cp):
    cc = cp.cuda.Device().compute_capability  # e.g. "90"
    return (f"-arch=sm_{cc}a" if cc == "90" else f"-arch=sm_{cc}",)


@pytest.fixture(params=["written out", "functions", "functions, tables in device memory"])
def update_form(request, monkeypatch):
    """Phase mode's inline updates (instrument/fast_path.py) and barriers as a small module
    has them, written out at each access and barrier, and as a large one has them: the
    module's functions, and one call after each barrier (CONSAN_INLINE_MAX=0 makes every
    module take those); the last with the phase tables in device memory (the build a
    launch takes where they do not fit in shared memory: CONSAN_PHASE_SMEM=0)."""
    if request.param != "written out":
        monkeypatch.setenv("CONSAN_INLINE_MAX", "0")
    if request.param.endswith("device memory"):
        monkeypatch.setenv("CONSAN_PHASE_SMEM", "0")
    return request.param


def _twin_args(cp):
    # (a twin writes a slice of out: the rest keeps the poison, in both runs alike)
    in_ = cp.arange(K.IN_WORDS, dtype=cp.int32)
    out = poisoned(K.OUT_WORDS, cp.int32)
    return in_, out


def _check(src, name, twin, arch_options, cp):
    """A racy twin under consan. Its output is not compared with a native run: the race
    makes it timing-dependent."""
    import consan

    in_, out = _twin_args(cp)
    return consan.check(src, name, grid=twin.grid, block=twin.block, args=(in_, out),
                        shared_mem=twin.shared_mem, options=arch_options)


def _summary(rep) -> str:
    rows = [f"  {v.kind} line={v.line} prev_line={v.prev_line} warp={v.warp} "
            f"prev_warp={v.prev_warp}" for v in rep.violations[:20]]
    more = f"\n  ... {len(rep.violations) - 20} more" if len(rep.violations) > 20 else ""
    return "violations:\n" + "\n".join(rows) + more + "\n\nreport:\n" + str(rep)


def _clean_twins():
    seen, out = set(), []
    for t in K.TWINS:
        if t.clean_name not in seen:
            seen.add(t.clean_name)
            out.append(t)
    return out


def _rows_expected(in_: np.ndarray) -> np.ndarray:
    k = np.arange(16)[:, None]
    s = np.concatenate([in_[None, :32] + k, in_[None, 32:64] - k], axis=1)  # s[k][c]
    out = np.zeros(32, dtype=np.int64)
    for lane in range(32):
        v = s[:, (lane % 16) * 4:(lane % 16) * 4 + 4]
        out[lane] = (v[:, 0] * (k[:, 0] + 1) + v[:, 1] - v[:, 2] + (v[:, 3] ^ k[:, 0])).sum()
    return out


def _halo_expected(in_: np.ndarray) -> np.ndarray:
    s = np.concatenate([in_[:32] * 3, in_[32:64] * 5])
    return np.array([sum(int(s[lane + 16 + d]) * (d + 1) for d in range(7)) for lane in range(32)])


# What the clean twins compute natively (in = arange), as (out slice, values).
def _clean_twin_expected(key: str, in_: np.ndarray):
    if key == "rows":
        return slice(0, 32), _rows_expected(in_)
    if key == "halo":
        return slice(0, 32), _halo_expected(in_)
    return {
        "raw": (slice(0, 32), in_[:32] * 2 + 1),
        "war": (slice(0, 64), in_[:64]),
        "waw": (slice(0, 32), in_[32:64]),
        "uninit": (slice(0, 64), in_[:64]),
        "named-missing": (slice(0, 32), in_[:32] + 7),
        "named-count": (slice(0, 32), in_[:32] + 7),
        "reduce": (slice(0, 2), in_[:512].reshape(2, 256).sum(axis=1)),
        "dyn64k": (slice(0, 32), in_[K.DYN_WORDS - 32:K.DYN_WORDS] ^ 0x5A5A),
        "trips": (slice(0, 64), np.tile(in_[:32] * 36, 2)),
        "trip-tail": (slice(0, 64), np.tile(in_[:32] * 8 + 28, 2)),
        "atomics": (slice(0, 32), np.full(32, 8 * in_[:32].sum())),
        "rmw": (slice(0, 32), np.arange(32) + in_[:32].sum()),
        "waw16": (slice(0, 32), in_[32:64] + 6),
        "war16": (slice(0, 64), np.concatenate([in_[:32] + np.arange(32) + 5, in_[32:64]])),
        "waw2": (slice(0, 32), in_[32:64]),
        "spin": (slice(0, 64), in_[63::-1] * 3),
        "run": (slice(0, 32), 7 * in_[32:64] + 3 * in_[:32] + 16),
        "war-last": (slice(0, 64), in_[:64]),
        "swap": (slice(0, 64), np.concatenate([-(65 + 2 * np.arange(32)),
                                               1 + 2 * np.arange(32)])),
        "vswap": (slice(0, 64), np.concatenate([64 + 2 * np.arange(32),
                                                -(1 + 2 * np.arange(32))])),
        "holes": (slice(0, 4), np.array([sum(3 * int(in_[lane + 16 + d]) * (d + 1)
                                             for d in range(7)) for lane in (0, 8, 16, 24)])),
        "span-uninit": (slice(0, 32), np.array([sum(int(in_[lane + 32 + d]) * (d + 1)
                                                    for d in range(7)) for lane in range(32)])),
    }[key]


# --------------------------------------------------------------------------
# The twins run natively: nothing hangs, and the clean twins compute the
# right thing (the racy ones may compute anything).


@pytest.mark.parametrize("twin", K.TWINS, ids=lambda t: t.key)
def test_twins_run_natively(twin, arch_options, cp):
    for name, src in ((twin.racy_name, twin.racy_src), (twin.clean_name, twin.clean_src)):
        in_, out = _twin_args(cp)
        native_launch(src, name, twin.grid, twin.block, (in_, out), twin.shared_mem,
                      arch_options)
        if name == twin.clean_name:
            sl, want = _clean_twin_expected(twin.key, in_.get())
            np.testing.assert_array_equal(out.get()[sl], want, err_msg=name)


# --------------------------------------------------------------------------
# Racy twins report exactly the expected kind at the marked lines.


@pytest.mark.parametrize("twin", K.TWINS, ids=lambda t: t.key)
def test_racy_twin_reports_expected_kind(twin, arch_options, cp, update_form):
    src = twin.racy_src
    rep = _check(src, twin.racy_name, twin, arch_options, cp)
    kinds = {v.kind for v in rep.violations}
    line = line_of(src, twin.line)
    prev = line_of(src, twin.prev) if twin.prev else None

    assert not rep.ok, _summary(rep)
    assert rep.violations, _summary(rep)
    if twin.either_order:
        # A genuine timing race: whichever warp reaches the word first decides
        # between race.raw and race.war; both name the same line pair here.
        assert kinds and kinds <= set(twin.kinds), _summary(rep)
    else:
        assert kinds == set(twin.kinds), _summary(rep)

    for v in rep.violations:
        assert v.line == line, _summary(rep)
        assert v.prev_line == prev, _summary(rep)
        if twin.either_order and v.kind == "race.war":
            assert (v.warp, v.prev_warp) == (twin.prev_warp, twin.warp), _summary(rep)
        else:
            assert v.warp == twin.warp, _summary(rep)
            if twin.prev_warp is not None:
                assert v.prev_warp == twin.prev_warp, _summary(rep)

    assert rep.findings, _summary(rep)
    for f in rep.findings:
        assert f.kind in kinds, _summary(rep)
        assert f.site.loc.line == line, _summary(rep)
        if prev is not None:
            assert f.prev_site.loc.line == prev, _summary(rep)


@pytest.mark.parametrize("twin", _clean_twins(), ids=lambda t: t.clean_name)
def test_clean_twin_is_clean_and_computes_the_native_bits(twin, arch_options, cp, update_form):
    def make_args():
        in_, out = _twin_args(cp)
        return (in_, out), [out]

    rep, (out,) = check_against_native(twin.clean_src, twin.clean_name, make_args,
                                       grid=twin.grid, block=twin.block,
                                       shared_mem=twin.shared_mem, options=arch_options)
    assert rep.ok and not rep.violations, _summary(rep)
    sl, want = _clean_twin_expected(twin.key, np.arange(K.IN_WORDS, dtype=np.int32))
    np.testing.assert_array_equal(out[sl], want, err_msg=twin.clean_name)


# --------------------------------------------------------------------------
# Clean kernels: native == under consan == reference, and no violation.

# (rtol, atol) against the float64 NumPy reference; None: exact.
_REF_TOL = {
    "block_reduce_sum": (1e-4, 1e-3),
    "transpose_tiled": None,
    "stencil_1d": (1e-5, 1e-5),
    "sgemm_tiled": (1e-4, 1e-4),
    "histogram256": None,
}
_CLEAN_NAMES = sorted(K.CLEAN)


def _setup(name):
    # Host (NumPy) inputs: every make_args(cp) call uploads a fresh copy.
    return K.clean_setup(name, K.TEST_SIZES[name], np, seed=20240611)


def _run_native(setup, arch_options, cp):
    """Built from the very PTX consan instruments (tests/gpu_util.py)."""
    args, outs = setup.make_args(cp)
    native_launch(setup.source, setup.name, setup.grid, setup.block, args, setup.shared_mem,
                  arch_options)
    return [o.get() for o in outs]


@pytest.mark.parametrize("name", _CLEAN_NAMES)
def test_clean_kernel_native_matches_reference(name, arch_options, cp):
    """The test kernel itself is right (independent of consan)."""
    setup = _setup(name)
    got = _run_native(setup, arch_options, cp)
    for g, want in zip(got, setup.reference(), strict=True):
        tol = _REF_TOL[name]
        if tol is None:
            np.testing.assert_array_equal(g, want)
        else:
            np.testing.assert_allclose(g, want, rtol=tol[0], atol=tol[1])


@pytest.mark.parametrize("name", _CLEAN_NAMES)
def test_clean_kernel_under_consan_computes_the_native_bits(name, arch_options, cp):
    # Bitwise, floats too: the native build is the very PTX consan instruments, so any
    # difference (a contraction ptxas made differently around a probe included) is a bug.
    # (The outputs are NaN-filled, or zeroed where the kernel adds into them.)
    setup = _setup(name)
    rep, _ = check_against_native(setup.source, setup.name, lambda: setup.make_args(cp),
                                  grid=setup.grid, block=setup.block,
                                  shared_mem=setup.shared_mem, options=arch_options)
    assert rep.ok and not rep.violations, _summary(rep)


# --------------------------------------------------------------------------
# One prepared kernel launched again and again: a clean launch leaves nothing to reset
# but the running counters (runtime.Prepared), a racy one is reset after.

MAYBE_RACY = r"""
extern "C" __global__ void maybe_racy(int* out, int sync) {
    __shared__ int s[64];
    s[threadIdx.x] = threadIdx.x;  // @write
    if (sync) __syncthreads();
    out[blockIdx.x * 64 + threadIdx.x] = s[(threadIdx.x + 32) % 64];  // @read
}
"""


def test_relaunches_report_each_launch_alone(arch_options, cp):
    import consan

    grid, block = (4, 1, 1), (64, 1, 1)
    p = consan.prepare(MAYBE_RACY, "maybe_racy", grid=grid, block=block, options=arch_options)
    # The clean launches (sync = 1) must compute the bits of one native launch; the racy
    # ones (sync = 0) are not compared: their result is timing-dependent.
    native = poisoned(256, cp.int32)
    native_launch(MAYBE_RACY, "maybe_racy", grid, block, (native, np.int32(1)),
                  options=arch_options)
    np.testing.assert_array_equal(native.get(), np.tile((np.arange(64) + 32) % 64, 4))
    out = cp.empty(256, dtype=cp.int32)
    lines = {line_of(MAYBE_RACY, "@read"), line_of(MAYBE_RACY, "@write")}
    found = []
    for i, sync in enumerate((1, 1, 0, 1, 1, 0, 0, 1)):
        poison(out)
        p.launch((out, np.int32(sync)))
        rep = p.report()
        # (phase mode with its tables in shared memory counts no CTA's end)
        assert int(rep.header["ctas_begun"]) == 4 and int(rep.header["ctas_ended"]) in (0, 4)
        found.append(not rep.ok)
        # (which warp's access the checker sees second decides raw or war: only the lines)
        assert {v.line for v in rep.violations} <= lines, _summary(rep)
        if sync:
            assert_same_bits(native, out, f"launch {i} (sync=1)")
    assert found == [False, False, True, False, False, True, True, False]
    # two launches, one report: it is the last launch's
    p.launch((out, np.int32(0)))
    poison(out)
    p.launch((out, np.int32(1)))
    rep = p.report()
    assert rep.ok and int(rep.header["ctas_begun"]) == 4, _summary(rep)
    assert_same_bits(native, out, "the last of two launches (sync=1)")
