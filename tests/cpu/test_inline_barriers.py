"""A phase-mode entry's CTA-wide barriers and exits, inline (instrument/inline_barriers.py):
where they are written out, what each does where the warp has a fast-path record, and the
probe's call kept for a warp without one. The GPU side: every phase-mode GPU test
(tests/gpu/test_races.py and the others) runs its barriers this way."""

from __future__ import annotations

import re

from consan import toolchain
from instrument import abi, fast_path
from instrument.rewrite import instrument
from tests.cpu.test_first_trip import HEAD
from tests.probe_calls import calls

INLINE = "// consan barrier probe, inline"
BODY = ("\tst.shared.u32 [%r2], %r3;\n\tbar.sync 0;\n\tld.shared.u32 %r4, [%r2];\n"
        "\t@%p2 bar.sync 0;\n")


def _blocks(ptx: str) -> list[str]:
    """Each inline probe's text, from its block to its `_done` label."""
    out = []
    for m in re.finditer(re.escape(INLINE), ptx):
        label = re.search(r"(\$__cs_bar\d+w?)_call", ptx[m.start():]).group(1)
        out.append(ptx[m.start():ptx.index(f"{label}_done:", m.start())])
    return out


def test_a_phase_mode_entry_runs_its_barriers_and_exits_inline_with_the_calls_kept():
    ins = instrument(HEAD + BODY + "\tret;\n}\n", "k.ptx")
    assert ins.phase_mode
    blocks = _blocks(ins.ptx)
    assert len(blocks) == 5  # two barriers' arrive and wait, one exit
    made = [c.func for b in blocks for c in calls(b)]  # (one call a block)
    assert sorted(made) == sorted([abi.PROBE_BAR_ARRIVE] * 2 + [abi.PROBE_BAR_WAIT] * 2
                                   + [abi.PROBE_THREAD_EXIT])
    rec = fast_path.REG_FAST
    for b in blocks:  # no record (0): the probe's own call
        assert re.search(rf"setp.eq.u32 %__cs_bq, {rec}, 0;\s*@%__cs_bq bra \$__cs_bar\d+w?_call;",
                         b)
    arrive = next(b for b in blocks if abi.PROBE_BAR_ARRIVE in b)
    # the next phase's bitmap (odd after an even phase), cleared a word per active lane
    assert f"[{fast_path.REG_FAST}+{abi.PSH_FAST_BITS_EVEN * 4}]" in arrive
    assert "st.volatile.shared.u32 [%__cs_b1], 0;" in arrive and "bar.warp.sync" in arrive
    assert f"mov.u32 %__cs_tok, {abi.TOKEN_CTA_WIDE};" in arrive
    wait = next(b for b in blocks if abi.PROBE_BAR_WAIT in b)
    at = f"[{fast_path.REG_FAST}+{abi.PSH_FAST_PHASE * 4}]"
    assert "@%__cs_bq add.u32 %__cs_b2, %__cs_b2, 1;" in wait and at in wait
    # a predicated barrier's probes: lanes without the predicate skip both forms
    assert len(re.findall(r"@!%p2 bra \$__cs_bar\d+w?_done;", ins.ptx)) == 2
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"))  # (record 0)


def test_vector_clocks_and_functions_call_their_barrier_probes():
    """An mbarrier in the module (vector clocks), or a barrier in a .func (no record there)."""
    vc = instrument(HEAD + "\tmbarrier.init.shared.b64 [s+512], 1;\n" + BODY + "\tret;\n}\n",
                    "k.ptx")
    assert INLINE not in vc.ptx
    func = HEAD.replace(".visible .entry k(", ".visible .func f(").replace(
        ".visible .entry", ".visible .func")
    with_func = instrument(func + BODY + "\tret;\n}\n", "k.ptx")
    assert INLINE not in with_func.ptx


def test_past_inline_max_barriers_call_their_probes_and_alone_they_keep_the_record(monkeypatch):
    """An unrolled sort's 73 barriers written out made its link 0.7 s instead of 0.4 s: past
    fast_path.INLINE_MAX a module's barriers and exits call (as with CONSAN_INLINE_MAX=0,
    the GPU tests' second form). A module whose only inline code is its barriers still has
    its record (FLAG_PSH_FAST): without it they would all call."""
    from consan.layout import Layout, Placement

    many = "\tbar.sync 0;\n" * fast_path.INLINE_MAX
    ins = instrument(HEAD + many + "\tret;\n}\n", "k.ptx")
    assert ins.inline_barriers == 0 and INLINE not in ins.ptx
    assert len(calls(ins.ptx, abi.PROBE_BAR_ARRIVE)) == fast_path.INLINE_MAX
    few = instrument(HEAD + "\tbar.sync 0;\n\tret;\n}\n", "k.ptx")
    assert few.inline_barriers == 2 and few.inline_tests and not few.inline_writes
    lay = Layout.for_module(few, nwarps=8, nthreads=256, window_bytes=1024, log_capacity=64,
                            placement=Placement.PHASE_SMEM)
    assert lay.flags & abi.FLAG_PSH_FAST
    monkeypatch.setenv("CONSAN_INLINE_MAX", "0")
    assert INLINE not in instrument(HEAD + "\tbar.sync 0;\n\tret;\n}\n", "k.ptx").ptx


def test_an_entry_that_opens_with_a_block_begins_before_it():
    """The begin probe returns the record that inline code reads: it precedes the entry's
    first code even where that is a block (an inline-asm `{ ... }` of nvcc's), whose
    barrier then reads a record already set rather than an undefined register."""
    decls = HEAD[:HEAD.index("\tld.param")]
    block = "\t{\n\t.reg .b32 %t;\n\tmov.u32 %t, %tid.x;\n\tbar.sync 0;\n\t}\n"
    ins = instrument(decls + block + HEAD[len(decls):] + BODY + "\tret;\n}\n", "k.ptx")
    out = ins.ptx
    begin = out.index(f"call (__cs_rb), {abi.PROBE_CTA_BEGIN};")
    assert ins.inline_barriers == 4  # three barriers and the exit
    assert begin < out.index("\t{\n\t.reg .b32 %t;") < out.index(INLINE)
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)
