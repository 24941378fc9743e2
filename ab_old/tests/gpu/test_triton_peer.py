"""Triton's own ConSan test cases, ported to Gluon (tests/kernels/triton_peer.py), under
consan on a real GPU: each racy twin gives the consan kind at its marked line (or one of
the equally valid findings the case lists), nothing else; each clean twin gives nothing
and computes the native bits. Cases triton 3.6.0's Gluon cannot write (multicast, DSMEM,
cluster barriers: 2- and 4-CTA clusters) are listed in docs/peer-consan.md, not run here; a
case whose verdict consan's model cannot give yet (`gap`) is a strict xfail, so the day it
passes the suite says so."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HAVE = importlib.util.find_spec("triton") is not None
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE, reason="needs triton")]

# Cases whose kernel never returns under consan (skipped, with the reason). Seen on the
# H100 until the checker wound a CTA down after a deadlock: ws_two_loads_two_bars_loop[
# missing=3] (its partitions' warps parked at `bar.sync 3, 128` for a warp that had left).
HANGS: set[str] = set()


def _marks(c) -> list:
    if c.name in HANGS:
        return [pytest.mark.skip(reason="the kernel hangs under consan on the H100: not run "
                                        "until the hang is fixed")]
    reason = c.gap
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


if HAVE:
    from tests.kernels import triton_peer as peer

    CASES = [pytest.param(c, id=c.name, marks=_marks(c)) for c in peer.PEER_CASES
             if c.num_ctas == 1 and not c.missing]
else:  # pragma: no cover - the module is skipped
    CASES = []


def _tuple(x):
    return tuple(x) if isinstance(x, tuple | list) else (x,)


def _checked(case):
    import torch

    from consan import frontends, session

    s = session.Session(session.Options(count_other_launches=False), print_findings=False)
    with frontends.sanitizing(s):
        out = case.run()
        torch.cuda.synchronize()
    return s, out


def _found(s) -> set[tuple[str, int | None]]:
    here = Path(peer.__file__).name
    out = set()
    for f in s.report.findings:
        cur = f.current
        line = cur.line if cur is not None and Path(str(cur.file)).name == here else None
        out.add((f.kind, line))
    return out


@pytest.mark.parametrize("case", CASES)
def test_peer_case(case):
    import torch
    if case.kind is None:  # a clean twin: nothing found, and the native bits
        native = [t.clone() for t in _tuple(case.run())]
        torch.cuda.synchronize()
        s, out = _checked(case)
        assert s.report.ok and not s.report.not_checked, "\n".join(s.kept_text)
        assert s.report.launches_checked >= 1
        for a, b in zip(native, _tuple(out), strict=True):
            assert torch.equal(a.view(torch.uint8), b.view(torch.uint8)), case.name
        return
    s, _ = _checked(case)  # racy: its output is the race, not compared
    assert s.report.launches_checked >= 1 and not s.report.not_checked, s.report.not_checked
    allowed = {(k, peer.marker_line(m)) for k, m in case.findings}
    first = {(case.kind, peer.marker_line(case.marker))} | {
        (k, peer.marker_line(m)) for k, m in case.alt}
    got = _found(s)
    assert got & first, f"expected one of {sorted(first)}, got {sorted(got)}\n" + \
        "\n".join(s.kept_text)
    assert got <= allowed, f"unexpected {sorted(got - allowed)}\n" + "\n".join(s.kept_text)
