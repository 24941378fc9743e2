"""The Triton tutorial corpus on a real GPU (tests/kernels/triton_corpus.py): every kernel,
launched through Triton's own JIT path under a consan session, is checked, reports clean,
and computes exactly the bits of its native run with the same inputs."""

from __future__ import annotations

import importlib.util

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                                       reason="needs triton")]

if importlib.util.find_spec("triton") is not None:
    from tests.kernels import triton_corpus as corpus

    RUNNABLE = [c for c in corpus.CASES if c.run is not None]
else:  # pragma: no cover - the module is skipped
    RUNNABLE = []


def _tuple(x):
    return x if isinstance(x, tuple | list) else (x,)


def _differing(a, b) -> int:
    import torch

    ra, rb = a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)
    return int((ra != rb).sum().item()) if ra.shape == rb.shape else -1


# layer_norm_bwd's dW/dB kernel converts the reduced row's layout through shared memory,
# and every warp holding a replicated copy stores the same value to the same bytes: it is
# checked clean through the stores' value tags (docs/model.md, "Replicated stores"; it was
# reported as race.waw on the H100 without them).
# Kernels whose shared memory is proven race-free before launch (instrument/static_proof.py):
# under a session they run natively; with CONSAN_PROOF=0 the same checks hold instrumented.
# The pipelined matmuls (cp.async, wgmma; sm_80's too) and the attention kernel are proven
# for their launch's integer arguments;
# layer_norm_bwd's dx kernel through its spin lock (a uniform loop), its dW/dB kernel with
# its warps' replicated stores; tma_add_into for its launch's tensor maps (TMA copies on an
# mbarrier, a bulk reduction reading the tile).
# (matmul_tma_persistent and attn_fwd_causal: for their launch's values and grid, each
# program's one or two tiles, or its 2 to 16 key blocks, followed as ways of a branch)
PROVEN = ("softmax", "layer_norm_fwd", "layer_norm_bwd", "matmul_bk32_s2_w4", "tma_add_into",
          "matmul_sm80", "attn_fwd", "matmul_tma_persistent", "attn_fwd_causal",
          *(f"matmul_s{s}_w{w}" for s in (2, 3, 4, 5) for w in (4, 8)))


@pytest.mark.parametrize("case", RUNNABLE, ids=[c.name for c in RUNNABLE])
def test_corpus_kernel_is_checked_clean_and_bit_exact(case):
    rep = _checked_clean_and_bit_exact(case)
    proven = {n: k.proven for n, k in rep.kernels.items() if k.proven}
    assert bool(proven) == (case.name in PROVEN), proven


@pytest.mark.parametrize("name", PROVEN)
def test_proven_corpus_kernel_is_clean_and_bit_exact_instrumented_too(name, monkeypatch):
    monkeypatch.setenv("CONSAN_PROOF", "0")
    (case,) = [c for c in RUNNABLE if c.name == name]
    rep = _checked_clean_and_bit_exact(case)
    assert not any(k.proven for k in rep.kernels.values())
    assert all(k.shadow_bytes > 0 for k in rep.kernels.values())


def _checked_clean_and_bit_exact(case):
    import torch

    from consan import frontends, session

    native = [t.clone() for t in _tuple(case.run(11))]
    torch.cuda.synchronize()
    s = session.Session(session.Options(count_other_launches=False), print_findings=False)
    with frontends.sanitizing(s):
        checked = _tuple(case.run(11))
        torch.cuda.synchronize()
    rep = s.report
    assert rep.ok, "\n".join(s.kept_text)
    assert not rep.not_checked, rep.not_checked
    launched = sum(k.launches_checked for k in rep.kernels.values())
    assert launched == case.launches, {n: k.launches_checked for n, k in rep.kernels.items()}
    assert not any(k.errors for k in rep.kernels.values())
    for i, (a, b) in enumerate(zip(native, checked, strict=True)):
        if not case.deterministic and i > 0:
            # layer_norm_bwd's dW/dB: fp32 sums in the order its spin lock grants, which
            # differs between two native runs too; its dx (output 0) is exact
            assert torch.allclose(a.double(), b.double(), atol=case.atol, rtol=case.rtol)
            continue
        n = _differing(a, b)
        assert n == 0, f"output {i}: {n} bytes of {a.numel() * a.element_size()} differ"
    ref = _tuple(case.reference(11))
    for a, r in zip(native, ref, strict=True):
        assert torch.allclose(a.double(), r.double(), atol=case.atol, rtol=case.rtol)
    return rep
