"""Where a run's one call goes (instrument/runs.py): before a branch whose accesses it probes,
the branch left as written, with the reads before it and the barrier's step. The GPU side:
tests/gpu/test_races.py's `swap` twin (a sort's compare-and-swap step: the race on the
swapped key is named at its lines, the clean twin computes the native bits) and the corpus's
unrolled bitonic sort among the clean kernels."""

from __future__ import annotations

import re

from consan import toolchain
from instrument import abi, fast_path
from tests.cpu.test_fast_path import ADDRESSES, _functions_only, function, kernel, rewritten
from tests.probe_calls import calls

# `if (warp == 0) { s[a] = x; s[b] = y; }`
BRANCH = ("\tshr.u32 %r10, %r1, 5;\n\tsetp.ne.s32 %p2, %r10, 0;\n\t@%p2 bra $L_skip;\n"
          "\tst.shared.u32 [%r6], %r3;\n\tst.shared.u32 [%r7], %r3;\n$L_skip:\n")

# A sort's compare-and-swap step as NVRTC lays it out: the barrier, two reads, and the swap
# under `if`, one of its addresses computed inside it.
STEP = ("\tbar.sync 0;\n\tld.shared.u32 %r4, [%r6];\n\tld.shared.u32 %r5, [%r7];\n"
        "\tsetp.le.u32 %p2, %r4, %r5;\n\t@%p2 bra $L_skip;\n"
        "\tst.shared.u32 [%r6], %r5;\n\tadd.s32 %r12, %r7, 4;\n"
        "\tst.shared.u32 [%r12], %r4;\n$L_skip:\n")


def _runs(k: str):
    return [c for c in calls(k) if c.func.startswith("__consan_inline_run_")]


def _link(ins):
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


def test_a_branchs_run_is_called_before_the_branch_which_is_left_as_written(monkeypatch):
    """The branch's accesses are probed before it by every lane that reaches it (the lanes
    that do not take it making them), and skipped by a warp none of whose lanes runs it,
    as the converted branch was; the branch and its accesses are as the user wrote them."""
    _functions_only(monkeypatch)
    ins = rewritten(BRANCH, looped=False, extra=ADDRESSES)
    k = kernel(ins.ptx)
    assert "@%__cs_on" not in k and "pred %__cs_on," not in k
    assert re.findall(r"(\S+) bra \$L_skip;", k) == ["@%p2"]
    assert "\tst.shared.u32 [%r6], %r3;" in k and "\tst.shared.u32 [%r7], %r3;" in k
    (run,) = _runs(k)
    assert run.func == "__consan_inline_run_w4_w4" and run.pred is None
    assert run.args[-1] == "%__cs_op" and run.pos < k.index("@%p2 bra $L_skip;")
    block = k[k.rindex("// consan sites", 0, run.pos):k.index("@%p2 bra $L_skip;")]
    assert "selp.b32 %__cs_op, 0, 1, %p2;" in block
    skip = re.search(r"vote\.sync\.any\.pred %__cs_any, !%p2, %__cs_am;\s*"
                     r"@!%__cs_any bra (\$__cs_run\d+);", block)
    assert skip and f"\n{skip.group(1)}:" in block[block.index("call "):]
    texts = [ins.sites[int(run.args[2]) + i].ptx_text for i in range(2)]
    assert texts == ["st.shared.u32 [%r6], %r3;", "st.shared.u32 [%r7], %r3;"]
    _link(ins)


def test_a_sort_step_is_one_call_with_its_reads_and_its_barriers_step(monkeypatch):
    """bar.sync; a = s[i]; b = s[j]; if (a > b) { s[i] = b; s[j + 4] = a; }: one call before
    the branch makes the barrier's step, then the reads (every lane's), then the branch's
    writes (its lanes'), with the address the branch computes computed first in the
    call's own register; the sites are the accesses' in program order."""
    _functions_only(monkeypatch)
    ins = rewritten(STEP, looped=False, extra=ADDRESSES)
    k = kernel(ins.ptx)
    made = [c.func for c in calls(k) if c.func.startswith("__consan_")]
    name = "__consan_inline_run_b_r4_r4_if_w4_w4"
    assert made == [abi.PROBE_CTA_BEGIN, name, abi.PROBE_THREAD_EXIT]
    (run,) = _runs(k)
    assert k.index("ld.shared.u32 %r5, [%r7];") < run.pos < k.index("@%p2 bra $L_skip;")
    regs, first, fast, op, bar = run.args[:4], *run.args[4:]
    assert regs == [f"%__cs_g{i}" for i in range(4)] and op == "%__cs_op"
    assert fast == fast_path.REG_FAST
    assert ins.sites[int(bar)].ptx_text == "bar.sync 0;"
    texts = [ins.sites[int(first) + i].ptx_text for i in range(4)]
    assert texts == ["ld.shared.u32 %r4, [%r6];", "ld.shared.u32 %r5, [%r7];",
                     "st.shared.u32 [%r6], %r5;", "st.shared.u32 [%r12], %r4;"]
    block = k[k.rindex("// consan sites", 0, run.pos):run.pos]
    assert re.search(r"\.reg \.b32 %__cs_x0;\s*add\.s32 %__cs_x0, %r7, 4;", block)
    assert re.search(r"cvt\.u64\.u32 %__cs_a, %__cs_x0;\s*cvt\.u32\.u64 %__cs_g3, %__cs_a;",
                     block)
    assert "selp.b32 %__cs_op, 0, 1, %p2;" in block and "vote.sync" not in block
    assert "\tst.shared.u32 [%r12], %r4;" in k and "\tadd.s32 %r12, %r7, 4;" in k
    fn = function(ins.ptx, name)
    assert [c.func for c in calls(fn)][0] == abi.PROBE_BAR_STEP
    assert fn.index(abi.PROBE_BAR_STEP) < fn.index("// consan fast path")
    assert fn.count("@!%__cs_onp bra") == 2  # (the writes: the reads are every lane's)
    _link(ins)


def test_a_step_with_a_probe_after_it_stays_its_own_call(monkeypatch):
    """A guarded store between the barrier and the run has its own probe: the barrier's step
    stays a call of its own, made before it."""
    _functions_only(monkeypatch)
    ins = rewritten("\t@%p3 st.shared.u32 [%r8], %r3;\n".join(STEP.split("\n", 1)),
                    looped=False, extra=ADDRESSES + "\tsetp.eq.s32 %p3, %r1, 0;\n")
    k = kernel(ins.ptx)
    made = [c.func for c in calls(k) if c.func.startswith("__consan_")]
    assert made[1] == abi.PROBE_BAR_STEP and "__consan_inline_run_r4_r4_if_w4_w4" in made
    _link(ins)


def test_a_read_whose_address_changes_before_the_branch_is_probed_before_it(monkeypatch):
    """A read's address register written between it and the branch: its probe cannot be
    made at the branch, so the reads make a run before them (with the barrier's step) and
    the branch's writes a run of their own before the branch, which a warp none of whose
    lanes swaps skips."""
    _functions_only(monkeypatch)
    step = STEP.replace("\tsetp.le", "\tadd.s32 %r6, %r6, 8;\n\tsetp.le")
    ins = rewritten(step, looped=False, extra=ADDRESSES)
    k = kernel(ins.ptx)
    reads, writes = _runs(k)
    assert (reads.func, writes.func) == ("__consan_inline_run_b_r4_r4",
                                         "__consan_inline_run_w4_w4")
    assert reads.pos < k.index("ld.shared.u32 %r4, [%r6];")
    assert k.index("add.s32 %r6, %r6, 8;") < writes.pos < k.index("@%p2 bra $L_skip;")
    assert "@%__cs_on" not in k and "vote.sync.any.pred %__cs_any, !%p2" in k
    _link(ins)


def test_a_run_a_warp_may_skip_leaves_the_barriers_step_its_own_call(monkeypatch):
    """bar.sync; if (warp == 0) { two stores }: the run of the branch's stores alone is
    skipped by a warp none of whose lanes takes it, so the barrier's step, which every warp
    makes, stays a call of its own after the barrier."""
    _functions_only(monkeypatch)
    ins = rewritten("\tbar.sync 0;\n" + BRANCH, looped=False, extra=ADDRESSES)
    k = kernel(ins.ptx)
    made = [c.func for c in calls(k) if c.func.startswith("__consan_")]
    assert made == [abi.PROBE_CTA_BEGIN, abi.PROBE_BAR_STEP, "__consan_inline_run_w4_w4",
                    abi.PROBE_THREAD_EXIT]
    _link(ins)


def test_a_branch_taken_where_its_predicate_is_false_gives_the_other_lanes(monkeypatch):
    """`@!p bra L`: the branch's accesses are made where p holds."""
    _functions_only(monkeypatch)
    ins = rewritten(BRANCH.replace("@%p2 bra", "@!%p2 bra"), looped=False, extra=ADDRESSES)
    k = kernel(ins.ptx)
    (run,) = _runs(k)
    block = k[k.rindex("// consan sites", 0, run.pos):k.index("@!%p2 bra $L_skip;")]
    assert "selp.b32 %__cs_op, 1, 0, %p2;" in block
    assert "vote.sync.any.pred %__cs_any, %p2, %__cs_am;" in block
    _link(ins)


def test_a_branch_with_another_probed_instruction_stays_converted(monkeypatch):
    """An atomic in the branch has a probe of its own (echoed over REG_ON's lanes): the
    branch is converted and its stores make a run inside it, as before."""
    _functions_only(monkeypatch)
    body = BRANCH.replace("$L_skip:\n", "\tatom.shared.add.u32 %r11, [%r8], 1;\n$L_skip:\n")
    ins = rewritten(body, looped=False, extra=ADDRESSES)
    k = kernel(ins.ptx)
    assert "@%__cs_on st.shared.u32 [%r6], %r3;" in k
    assert re.findall(r"(\S+) bra \$L_skip;", k) == ["@!%__cs_any"]
    (run,) = _runs(k)
    assert run.pos > k.index("not.pred %__cs_on, %p2;") and run.args[-1] == "%__cs_op"
    _link(ins)


def test_a_read_that_loads_its_own_address_is_probed_before_it(monkeypatch):
    """`ld.shared.u32 %r6, [%r6]` before the branch: at the branch %r6 is the loaded value,
    so the reads' run stays before them; the branch's stores (at the loaded %r6) are
    probed before the branch."""
    _functions_only(monkeypatch)
    ins = rewritten(STEP.replace("ld.shared.u32 %r4, [%r6]", "ld.shared.u32 %r6, [%r6]")
                    .replace("%r4", "%r6"), looped=False, extra=ADDRESSES)
    k = kernel(ins.ptx)
    reads, writes = _runs(k)
    assert reads.func == "__consan_inline_run_b_r4_r4"
    assert reads.pos < k.index("ld.shared.u32 %r6, [%r6];")
    assert writes.func == "__consan_inline_run_w4_w4"
    assert k.index("ld.shared.u32 %r5, [%r7];") < writes.pos < k.index("@%p2 bra $L_skip;")
    _link(ins)


def test_a_guarded_barriers_step_is_not_made_by_a_run(monkeypatch):
    """`@p bar.sync`: its step is made where p holds, by its own guarded call."""
    _functions_only(monkeypatch)
    ins = rewritten(STEP.replace("\tbar.sync 0;", "\t@%p3 bar.sync 0;"), looped=False,
                    extra=ADDRESSES + "\tsetp.ne.s32 %p3, %r9, 0;\n")
    k = kernel(ins.ptx)
    (step,) = calls(k, abi.PROBE_BAR_STEP)
    assert step.pred == "@%p3"
    assert [c.func for c in _runs(k)] == ["__consan_inline_run_r4_r4_if_w4_w4"]
    _link(ins)


def test_an_address_from_the_clock_is_not_computed_again_at_the_branch(monkeypatch):
    """A special register that may read otherwise later (%clock, %warpid, ...) keeps the
    branch converted: the address computed from it is the one the access makes."""
    _functions_only(monkeypatch)
    body = BRANCH.replace("\tst.shared.u32 [%r7], %r3;\n",
                          "\tmov.u32 %r12, %clock;\n\tand.b32 %r12, %r12, 60;\n"
                          "\tst.shared.u32 [%r12], %r3;\n")
    ins = rewritten(body, looped=False, extra=ADDRESSES)
    k = kernel(ins.ptx)
    assert "@%__cs_on st.shared.u32 [%r12], %r3;" in k and "%__cs_x" not in k
    _link(ins)
