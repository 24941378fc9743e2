"""Proofs before launch kept on disk (consan/proof_cache.py): a second process with the
same module and launch values reads the proof back instead of making it again; anything
the proof reads changes the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from consan import pipeline, proof_cache, toolchain
from instrument import rewrite
from instrument.static_proof import Proof

MATMUL = (Path(__file__).parents[1] / "corpus" / "triton" / "triton_matmul_s3.ptx").read_text()
SIZES = {3: (512, 32), 4: (512, 32), 5: (512, 32)}
ARCH = toolchain.Arch.parse("sm_90a")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CONSAN_CACHE", str(tmp_path))
    monkeypatch.delenv("CONSAN_PROOF_CACHE", raising=False)
    return tmp_path


def _prove_at():
    """A build's prove_at, as the front ends ask it (a fresh build each time: another
    process)."""
    return pipeline.build(MATMUL, arch=ARCH, source_name="matmul.ptx").instrumented.prove_at


def _refuse_to_prove(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("proved again")
    monkeypatch.setattr(rewrite.static_proof, "prove", fail)


def test_a_proof_is_read_back_by_the_next_build(cache, monkeypatch):
    got = _prove_at()("matmul_kernel", (256, 1, 1), SIZES)
    assert isinstance(got, Proof) and got.params == 3
    assert len(list((cache / "proofs").glob("*.json"))) == 1
    prove_at = _prove_at()  # (its build proves without launch values: before the patch)
    _refuse_to_prove(monkeypatch)
    assert prove_at("matmul_kernel", (256, 1, 1), SIZES) == got


def test_a_refusal_is_read_back_with_its_cause(cache, monkeypatch):
    why = _prove_at()("matmul_kernel", (256, 1, 1))  # (K not given: its loop's length)
    assert isinstance(why, str) and why.unknown
    prove_at = _prove_at()
    _refuse_to_prove(monkeypatch)
    again = prove_at("matmul_kernel", (256, 1, 1))
    assert again == why and again.unknown


@pytest.mark.parametrize("change", ["values", "grid", "rules", "module", "off"])
def test_what_the_proof_reads_is_in_the_key(cache, monkeypatch, change):
    _prove_at()("matmul_kernel", (256, 1, 1), SIZES)
    values, grid, text = SIZES, None, MATMUL
    if change == "values":
        values = {**SIZES, 5: (1024, 32)}
    elif change == "grid":
        grid = (4, 4, 1)
    elif change == "rules":
        monkeypatch.setattr(proof_cache, "rules_digest", lambda: "other rules")
    elif change == "module":
        text = MATMUL + "\n// another module\n"
    else:
        monkeypatch.setenv("CONSAN_PROOF_CACHE", "0")
    prove_at = pipeline.build(text, arch=ARCH, source_name="matmul.ptx").instrumented.prove_at
    calls = []
    real = rewrite.static_proof.prove
    monkeypatch.setattr(rewrite.static_proof, "prove",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    assert isinstance(prove_at("matmul_kernel", (256, 1, 1), values, grid=grid), Proof)
    assert calls == [1]


def test_an_unreadable_entry_is_made_again(cache):
    first = _prove_at()("matmul_kernel", (256, 1, 1), SIZES)
    (entry,) = (cache / "proofs").glob("*.json")
    entry.write_text("{not json")
    assert _prove_at()("matmul_kernel", (256, 1, 1), SIZES) == first
