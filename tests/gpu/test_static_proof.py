"""The proof before launch (instrument/static_proof.py) against the dynamic checker on the
GPU: Triton's softmax PTX, and each of its mutants without one barrier. Where the proof
holds, the instrumented kernel must report nothing; where it is refused, the checker must
find the race the missing barrier opens."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

SOFTMAX = (Path(__file__).resolve().parents[1] / "corpus" / "triton" /
           "triton_softmax.ptx").read_text()
BARS = [i for i, ln in enumerate(SOFTMAX.splitlines()) if re.fullmatch(r"\s*bar\.sync\s+0;", ln)]
ROWS, COLS = 64, 1000
SCRATCH = 16  # bytes of dynamic shared memory Triton launches it with (4 warps)


def _mutant(which: int | None) -> str:
    lines = SOFTMAX.splitlines()
    if which is not None:
        del lines[BARS[which]]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("which", [None, *range(len(BARS))],
                         ids=["as-compiled", *(f"no-barrier-{i}" for i in range(len(BARS)))])
def test_the_proof_holds_exactly_where_the_checker_finds_nothing(which):
    import cupy as cp

    import consan
    from instrument.rewrite import instrument

    ptx = _mutant(which)
    proven = bool(instrument(ptx, "softmax.ptx").proven)
    x = cp.asarray(np.random.default_rng(3).standard_normal((ROWS, COLS), dtype=np.float32))
    out = cp.zeros_like(x)
    # (Triton drops nothing here: x, out, the row stride, the columns, two scratch pointers;
    # its reductions take a word per warp of dynamic shared memory)
    rep = consan.check(ptx, "softmax_kernel", grid=(ROWS,), block=(128,),
                       args=(x, out, np.uint32(COLS), np.uint32(COLS), np.uint64(0),
                             np.uint64(0)), shared_mem=SCRATCH, source_name="softmax.ptx")
    kinds = sorted({v.kind for v in rep.violations})
    assert proven == (which is None)
    assert (not kinds) == proven, kinds
    if proven:
        e = np.exp(x.get() - x.get().max(axis=1, keepdims=True))
        np.testing.assert_allclose(out.get(), e / e.sum(axis=1, keepdims=True), rtol=1e-5)
