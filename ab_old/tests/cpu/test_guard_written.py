"""An instruction whose guard is also its destination (`@p bar.red.or.pred p, ...`, `@!p
mbarrier.try_wait p, ...`): its probe after it runs for the lanes that ran it, whatever
the instruction wrote into p (rewrite._guard_after). Read after the instruction, p would
be the result: a lane that arrived but whose result is false would never wait."""

from __future__ import annotations

import re

import pytest

from consan import toolchain
from instrument import abi
from instrument.rewrite import REG_GUARD, instrument
from tests.cpu.test_first_trip import HEAD
from tests.probe_calls import calls

MBAR = "\t.shared .align 8 .b64 mb;\n\tmbarrier.init.shared.b64 [mb], 1;\n"
RED = "@%p1 bar.red.or.pred %p1, 0, %p2;"
WAIT = "@!%p1 mbarrier.try_wait.parity.shared.b64 %p1, [mb], 0;"


def _kernel(body: str) -> str:
    ins = instrument(HEAD + body + "\tret;\n}\n", "k.ptx")
    return ins, ins.ptx[ins.ptx.index(".visible .entry"):]


@pytest.mark.parametrize("extra", ["", MBAR], ids=["phase", "vector-clocks"])
def test_a_barrier_reduction_into_its_own_guard_waits_for_the_lanes_that_arrived(extra):
    ins, k = _kernel(extra + f"\t{RED}\n")
    at = k.index(RED)
    assert k[:at].rstrip().endswith(f"mov.pred {REG_GUARD}, %p1;")
    (arrive,) = calls(k, abi.PROBE_BAR_ARRIVE)
    (wait,) = calls(k, abi.PROBE_BAR_WAIT)
    assert arrive.pos < at < wait.pos
    assert arrive.pred == "@%p1" and wait.pred == f"@{REG_GUARD}"
    if not extra:  # phase mode: the inline wait skips by the kept guard too
        assert f"@!{REG_GUARD} bra $__cs_bar" in k[at:wait.pos]
        assert "@!%p1 bra" not in k[at:]
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=not extra)


def test_a_wait_into_its_own_guard_reports_for_the_lanes_that_waited():
    ins, k = _kernel(MBAR + f"\t{WAIT}\n")
    at = k.index(WAIT)
    assert k[:at].rstrip().endswith(f"mov.pred {REG_GUARD}, %p1;")
    after = k[at:]
    (probe,) = calls(after, abi.PROBE_MBAR)
    assert probe.pred == f"@!{REG_GUARD}"
    # the outcome it passes is the instruction's result, read from p after it
    assert re.search(r"selp\.u32 %__cs_tok, 2, 0, %p1;", after[:probe.pos])
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"))


def test_a_guard_the_instruction_does_not_write_is_read_as_it_is():
    _, k = _kernel("\t@%p1 bar.red.or.pred %p3, 0, %p2;\n")
    assert f"mov.pred {REG_GUARD}" not in k
    (wait,) = calls(k, abi.PROBE_BAR_WAIT)
    assert wait.pred == "@%p1"
