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


def test_a_cupy_kernel_proven_at_its_launch_runs_natively_and_its_racy_twin_is_caught():
    """CUDA C++ has no .reqntid: the proof is made for the block of the launch. The GPU
    suite's tree reduction runs natively, proven, with the bits of its native run; its
    twin without one barrier is instrumented and reported."""
    import cupy as cp

    from consan import frontends, session
    from tests.kernels import gpu_kernels as K

    tw = K.TWIN_BY_KEY["reduce"]
    x = cp.arange(K.IN_WORDS, dtype=cp.int32)

    def launch(src: str, name: str):
        out = cp.zeros(K.OUT_WORDS, dtype=cp.int32)
        cp.RawKernel(src, name)(tw.grid, tw.block, (x, out))
        cp.cuda.Device().synchronize()
        return out.get()

    # (CuPy keeps one module per source text: the native run gets its own, else the
    # session would find the kernel compiled before it started, and not check it)
    native = launch(tw.clean_src + "\n// native\n", tw.clean_name)
    s = session.Session(session.Options(count_other_launches=False), print_findings=False)
    with frontends.sanitizing(s):
        clean = launch(tw.clean_src, tw.clean_name)
        launch(tw.racy_src, tw.racy_name)
    rep = s.report
    stats = rep.kernels[tw.clean_name]
    assert stats.launches_checked == 1 and stats.proven.startswith("proven race-free"), stats
    assert clean.tobytes() == native.tobytes()
    racy = rep.kernels[tw.racy_name]
    assert racy.launches_checked == 1 and not racy.proven and racy.shadow_bytes > 0
    assert racy.findings and set(racy.findings) <= set(tw.kinds), racy.findings
