"""Racy kernels two adversarial reviews of the proof's mbarrier, election and nested-block
rules found proven (tests/corpus/proof_review/, one file each, named by what it does):
each must be refused, as a proof hides whatever race it misses."""

from __future__ import annotations

from pathlib import Path

import pytest

from instrument.static_proof import Proof
from tests.cpu.test_static_proof_mbarrier import _prove

CASES = sorted((Path(__file__).parents[1] / "corpus" / "proof_review").glob("*.ptx"))
# (file stem prefix -> what the GPU may do that the host run did not)
WHY = {
    "A": "a wait may see an earlier phase of its parity than the host run credits it with",
    "K": "the issuing warp never waited for its copy",
    "R": "a .relaxed arrive or wait orders nothing",
    "E": "what the election decides depends on the lane the GPU elects",
    "S": "the elected lane may be on the other path of a split warp",
    "N": "a nested block's registers are not the outer ones, nor a sibling block's",
    "B": "a branch on an election, or on a predicate once an election's",
    "D": "lanes that skip a predicated wait leave its loop without waiting",
    "F": "a parked warp resumed inside an uncertain branch loses its registers",
}


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_each_racy_kernel_of_the_review_is_refused(path):
    got = _prove(path.read_text(), maps=())
    assert not isinstance(got, Proof), f"{path.stem}: {WHY[path.stem[0]]}"
