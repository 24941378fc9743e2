"""A measurement-only switch of the checker (checker/measure.h) that
benchmarks/breakdown_async.py builds: it compiles, and changes what it says it does."""

from __future__ import annotations

from benchmarks import breakdown_async as ba
from consan import toolchain

SM90A = toolchain.Arch.parse("sm_90a")


def test_peer_copies_by_their_issuer_spin_the_issuer_and_drop_the_owners_write(monkeypatch):
    """CONSAN_PEER_BY_ISSUER=n: the issuing warp spends n cycles a post (a clock64 loop
    where the cluster build has none) and the owner's apply loses the issuer's view and
    the write (a shorter build). (The builds go to consan's cache, as the other checker
    builds of this suite do.)"""
    monkeypatch.setenv("CONSAN_CHECKER_DEFINES", "")
    plain = toolchain.checker_ptx(SM90A, vsh=True, mc=True)
    label = "peer copies by their issuer (2000 cycles)"
    assert ba.CONFIGS[label] == "CONSAN_PEER_BY_ISSUER=2000"
    monkeypatch.setenv("CONSAN_CHECKER_DEFINES", ba.CONFIGS[label])
    issuer = toolchain.checker_ptx(SM90A, vsh=True, mc=True)
    assert "%clock64" not in plain and "%clock64" in issuer
    assert len(issuer) < len(plain)

