"""consan on Triton programs (GPU): every kernel Triton launches is checked, and an
instrumented kernel computes the same bits as the native one.

`consan run` on a plain Triton script must print what the native run prints (the script
prints a digest of each output's bytes) and list its kernels as checked; in process, each
textbook matmul configuration (cp.async + wgmma on an H100) runs natively and under a
session, and the two outputs must be bitwise equal with a clean report.
"""

from __future__ import annotations

import json

import pytest

from tests.gpu_util import run_python

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(
    __import__("importlib").util.find_spec("triton") is None, reason="needs triton")]



def _run(*args: str, timeout: int = 600):
    return run_python(*args, timeout=timeout)


def test_consan_run_checks_every_triton_kernel_and_keeps_its_bits(tmp_path):
    native = _run("script_triton.py")
    assert native.returncode == 0, native.stderr
    out = tmp_path / "report.json"
    checked = _run("-m", "consan", "run", "--json", str(out), "script_triton.py")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout == native.stdout, checked.stderr  # the digests of every output
    rep = json.loads(out.read_text())
    assert rep["ok"] and not rep["findings"], checked.stderr
    kernels = {k["name"]: k for k in rep["kernels"]}
    for name in ("add", "softmax", "matmul"):
        assert kernels.get(name, {}).get("launches_checked") == 1, (name, kernels,
                                                                   checked.stderr)
    # (the softmax's reductions are proven race-free before launch, the matmul's pipeline
    # for its launch's M, N and K: they run natively)
    assert kernels["softmax"]["proven"].startswith("proven race-free before launch"), kernels
    assert "for the values of 3 integer parameters at launch" in kernels["matmul"]["proven"]
    assert "softmax: proven race-free before launch" in checked.stderr, checked.stderr
    assert not any(r["kernel"] in kernels for r in rep["not_checked"]), rep["not_checked"]


def test_consan_run_checks_the_kernels_torch_compile_generates(tmp_path):
    """Inductor's static CUDA launcher launched its kernels past Triton's: they ran
    unchecked. Under consan run they go through Triton's launcher and are checked."""
    import os

    env_cache = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
                 "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    saved = {k: os.environ.get(k) for k in env_cache}
    os.environ.update(env_cache)
    try:
        native = _run("script_inductor.py")
        assert native.returncode == 0, native.stderr
        out = tmp_path / "report.json"
        checked = _run("-m", "consan", "run", "--json", str(out), "script_inductor.py")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout == native.stdout, checked.stderr
    rep = json.loads(out.read_text())
    assert rep["ok"] and not rep["findings"], checked.stderr
    inductor = {k["name"]: k["launches_checked"] for k in rep["kernels"]
                if k["name"].startswith("triton_")}
    assert inductor and all(n >= 1 for n in inductor.values()), (rep["kernels"], checked.stderr)
    assert not any(r["kernel"].startswith("triton_") for r in rep["not_checked"]), \
        rep["not_checked"]


MATMUL = [(128, 128, 64, 8, 3), (128, 128, 64, 8, 2), (128, 128, 64, 4, 4),
          (128, 128, 64, 8, 5), (128, 128, 32, 4, 2)]


@pytest.mark.parametrize("proofs", [True, False], ids=["proven", "instrumented"])
@pytest.mark.parametrize("bm,bn,bk,warps,stages", MATMUL,
                         ids=[f"bk{c[2]}-w{c[3]}-s{c[4]}" for c in MATMUL])
def test_matmul_under_consan_is_clean_and_bit_exact(bm, bn, bk, warps, stages, proofs,
                                                    monkeypatch):
    """Proven before launch for its M, N and K it runs natively; with CONSAN_PROOF=0 it runs
    instrumented: both clean, both with the native bits."""
    import torch

    from consan import frontends, session
    from tests.gpu_scripts.script_triton import matmul

    n = 512
    g = torch.Generator(device="cuda").manual_seed(bk * 100 + warps * 10 + stages)
    a = torch.randn(n, n, device="cuda", dtype=torch.float16, generator=g)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16, generator=g)

    def run() -> torch.Tensor:
        c = torch.full((n, n), float("nan"), device="cuda", dtype=torch.float16)
        matmul[(n // bm, n // bn)](a, b, c, n, n, n, BM=bm, BN=bn, BK=bk, num_warps=warps,
                                   num_stages=stages)
        torch.cuda.synchronize()
        return c

    native = run()
    monkeypatch.setenv("CONSAN_PROOF", "1" if proofs else "0")
    s = session.Session(session.Options(count_other_launches=False), print_findings=False)
    with frontends.sanitizing(s):
        checked = run()
    stats = s.report.kernels.get("matmul")
    assert stats is not None and stats.launches_checked == 1, (s.report.kernels,
                                                               s.report.not_checked)
    assert bool(stats.proven) == proofs and (stats.shadow_bytes > 0) != proofs, stats
    assert s.report.ok, s.kept_text
    assert stats.errors == []
    diff = (native.view(torch.int16) != checked.view(torch.int16)).sum().item()
    assert diff == 0, f"{diff} of {n * n} elements differ from the native run"
    ref = a.float() @ b.float()
    assert (native.float() - ref).abs().max().item() < 0.5
