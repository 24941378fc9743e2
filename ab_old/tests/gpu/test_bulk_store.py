"""Bulk stores on a real GPU (seed 002): racy kernels and clean twins that differ by one line.

The kernels are in tests/kernels/bulk_store_kernels.py (its CPU twin,
tests/cpu/test_bulk_store.py, checks that they compile for sm_90a and that the instrumented
modules assemble).

The clean twins also run natively on the same inputs and must store the very same bits; the
racy ones' outputs are not compared (a store of unfenced or overwritten smem is
timing-dependent).
"""

from __future__ import annotations

import numpy as np
import pytest

from instrument import abi
from tests.gpu_util import arch_option, check_against_native, line_of, poisoned
from tests.kernels import bulk_store_kernels as K

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _hopper():
    import cupy as cp

    if int(cp.cuda.Device().compute_capability) < 90:
        pytest.skip("cp.async.bulk needs sm_90")


def _run(name: str, racy: bool):
    """(report, output under consan, source). A clean twin also runs natively and must
    store the same bits; a racy one's output is timing-dependent, so it is not compared."""
    import cupy as cp

    src = K.variant(name, racy)
    kernel, tiles = K.CASES[name][1], K.CASES[name][-1]
    n = K.CTAS * tiles * K.THREADS

    def make_args():
        x = cp.asarray(np.random.default_rng(11).random(n, dtype=np.float32))
        # zeros where the reduce-add variant adds into it, poison where it is overwritten
        out = cp.zeros(n, dtype=cp.float32) if name.endswith("-reduce") else \
            poisoned(n, cp.float32)
        return (x, out), [out]

    grid, block = (K.CTAS,), (K.THREADS,)
    if not racy:
        rep, (out,) = check_against_native(src, kernel, make_args, grid=grid, block=block,
                                           options=(arch_option(),))
        return rep, out, src
    import consan

    args, (out,) = make_args()
    rep = consan.check(src, kernel, grid=grid, block=block, args=args,
                       options=(arch_option(),))
    return rep, out.get(), src


# The tables in the CTA's shared memory (the default where they fit: there the warp's lanes
# judge the store's source a block each), or in device memory (CONSAN_VC_SMEM=0).
@pytest.mark.parametrize("tables", ["shared", "device"])
@pytest.mark.parametrize("name", sorted(K.CASES))
def test_racy_bulk_store_is_reported(name, tables, monkeypatch):
    monkeypatch.setenv("CONSAN_VC_SMEM", "1" if tables == "shared" else "0")
    kind, cur, prev = K.CASES[name][5:8]
    rep, _, src = _run(name, racy=True)
    assert rep.launch["tables"] == tables
    assert {v.kind for v in rep.violations} == {kind}, str(rep)
    assert {v.line for v in rep.violations} == {line_of(src, cur)}, str(rep)
    assert {v.prev_line for v in rep.violations} == {line_of(src, prev)}, str(rep)
    warps = set(range(K.THREADS // 32))
    if kind == "proxy.missing-fence":
        # the bulk store by warp 0 against the unfenced write of every warp
        assert {v.warp for v in rep.violations} == {0}, str(rep)
        assert {v.prev_warp for v in rep.violations} == warps, str(rep)
        # each warp's finding names exactly the 128 bytes that warp wrote, in tile order
        lo = min(v.offset_lo for v in rep.violations)
        assert {(v.prev_warp, v.offset_lo - lo, v.offset_hi - v.offset_lo)
                for v in rep.violations} == {(w, 128 * w, 128) for w in warps}, str(rep)
        assert "fence.proxy.async" in str(rep)
    else:
        # every warp refills the buffer the bulk-store unit of warp 0 may still read
        assert {v.warp for v in rep.violations} == warps, str(rep)
        assert {v.prev_warp for v in rep.violations} == {abi.AGENT_BULK}, str(rep)
        assert "cp.async.bulk.wait_group.read" in str(rep)


@pytest.mark.parametrize("name", sorted(K.CASES))
def test_clean_twin_is_clean_and_computes_the_native_bits(name):
    rep, _, _ = _run(name, racy=False)
    assert rep.ok, str(rep)
    assert not rep.unmodeled, rep.unmodeled
