"""Triton's ConSan tests, ported (tests/kernels/triton_peer.py), without a GPU.

Every 1-CTA case compiles for sm_90a through Triton, consan instruments it (nothing left
unmodelled) and assembles it with the checker, and each line the GPU run will expect a
finding on carries a probe: a finding consan cannot place there would be a bug in the
port, not in consan. The compiled PTX is cached under tests/corpus_build.CACHE_DIR, in triton_peer/.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

import pytest

try:
    import triton
    from triton.experimental import gluon  # noqa: F401
except ImportError:
    pytest.skip("needs triton with Gluon (triton.experimental.gluon) to compile the Triton "
                "ConSan peer cases", allow_module_level=True)

from consan import session, toolchain  # noqa: E402
from instrument import abi  # noqa: E402
from instrument.ptx import parse  # noqa: E402
from instrument.rewrite import instrument  # noqa: E402
from tests import corpus_build  # noqa: E402
from tests.kernels import triton_peer as tp  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CACHE = corpus_build.CACHE_DIR / "triton_peer"
DOC = ROOT / "docs" / "peer-consan.md"
BUILT = [c for c in tp.PEER_CASES if c.num_ctas == 1 and not c.missing]
_cubins: dict[str, bytes] = {}  # one link per distinct module


def _ptx(case: tp.PeerCase) -> str:
    """The case's PTX for sm_90a, compiled once per version of the kernels' file."""
    key = hashlib.sha256("\0".join((tp.HERE.read_text(), case.name, triton.__version__,
                                    str(case.capability))).encode()).hexdigest()
    path = CACHE / f"{key}.ptx"
    if path.exists():
        return path.read_text()
    ptx = tp.compile_case(case).asm["ptx"]
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(ptx)
    tmp.replace(path)
    return ptx


def test_the_case_list_is_complete_and_consistent():
    names = [c.name for c in tp.PEER_CASES]
    assert len(names) == len(set(names))
    for c in tp.PEER_CASES:
        assert c.exercises and c.triton_verdict, c.name
        assert (c.kind is None) == (c.marker is None) or c.missing, c.name
        assert c.failure == (c.triton_verdict != tp.CLEAN), c.name
        for kind, marker in c.findings:
            assert kind in abi.VIOLATION_KINDS, (c.name, kind)
            assert tp.marker_line(marker) > 0  # exactly one line carries it
        if c.kind and not c.failure:  # consan reports where Triton's ConSan does not
            assert c.note, f"{c.name}: a verdict unlike Triton's says why"
        if c.num_ctas > 1:
            assert c.missing, f"{c.name}: a cluster case that 3.6.0 can write is ported"
            path, test = c.cuda_form.split("::")  # the GPU test of the same situation
            assert f"def {test}(" in (ROOT / path).read_text(), (c.name, c.cuda_form)
    ported = {c.triton_test for c in tp.PEER_CASES}
    assert not ported & (set(tp.HARNESS_ONLY) | set(tp.BLACKWELL_ONLY))
    assert len(ported) == 44 and len(tp.BLACKWELL_ONLY) == 15 and len(tp.HARNESS_ONLY) == 2


def test_the_doc_has_a_row_for_every_case():
    doc = DOC.read_text()
    missing = [c.name for c in tp.PEER_CASES if f"`{c.name}`" not in doc]
    assert not missing, f"docs/peer-consan.md has no row for {missing}"


@pytest.mark.parametrize("case", BUILT, ids=[c.name for c in BUILT])
def test_case_compiles_instruments_and_assembles_for_sm90a(case):
    name = case.name.replace("[", "_").replace("]", "").replace("=", "-").replace(",", "_")
    ptx = _ptx(case)
    ins = instrument(parse(ptx, name + ".ptx"), value_tags=True)  # as the Triton hook does
    assert ins.unmodeled == [], [str(u) for u in ins.unmodeled]
    digest = hashlib.sha256(ptx.encode()).hexdigest()
    if digest not in _cubins:
        with corpus_build.links_kept():  # (kept on disk by its inputs' bytes)
            _cubins[digest] = toolchain.link_with_checker(ins, name + ".ptx",
                                                          toolchain.Arch.parse("sm_90a"))
    assert _cubins[digest][:4] == b"\x7fELF"
    probed = {s.loc.line for s in ins.sites.sites
              if s.loc is not None and s.loc.file.endswith("triton_peer.py")}
    for kind, marker in case.findings:
        assert tp.marker_line(marker) in probed, (
            f"{case.name}: no probe on line {tp.marker_line(marker)} ({marker}), where "
            f"consan should report {kind}")
    if case.findings:  # a kernel that can give a finding is checked, not run natively
        assert session.work_in(SimpleNamespace(instrumented=ins))[0], case.name
