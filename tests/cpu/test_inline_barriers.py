"""A phase-mode entry's CTA-wide barriers and exits, inline (instrument/inline_barriers.py):
where they are written out, what each does where the warp has a fast-path record, and the
probe's call kept for a warp without one. The GPU side: every phase-mode GPU test
(tests/gpu/test_races.py and the others) runs its barriers this way."""

from __future__ import annotations

import re

import pytest

from consan import toolchain
from instrument import abi, fast_path
from instrument.events import Event
from instrument.rewrite import REG_GUARD, instrument
from tests.cpu.test_first_trip import BAR, HEAD, READ, WRITE, loop
from tests.probe_calls import calls

INLINE = "// consan barrier probe, inline"
BODY = ("\tst.shared.u32 [%r2], %r3;\n\tbar.sync 0;\n\tld.shared.u32 %r4, [%r2];\n"
        "\t@%p2 bar.sync 0;\n")


def _blocks(ptx: str, marker: str = INLINE, label: str = "bar") -> list[str]:
    """Each inline probe's text (its block opens with `marker`, its labels are
    `$__cs_<label>N`), from its block to its `_done` label."""
    out = []
    for m in re.finditer(re.escape(marker), ptx):
        at = re.search(rf"(\$__cs_{label}\d+w?)_call", ptx[m.start():]).group(1)
        out.append(ptx[m.start():ptx.index(f"{at}_done:", m.start())])
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
    fast_path.BARRIERS_INLINE_MAX a module's barriers and exits call (as with CONSAN_INLINE_MAX=0,
    the GPU tests' second form). A module whose only inline code is its barriers still has
    its record (FLAG_PSH_FAST): without it they would all call."""
    from consan.layout import Layout, Placement

    many = "\tbar.sync 0;\n" * fast_path.BARRIERS_INLINE_MAX
    ins = instrument(HEAD + many + "\tret;\n}\n", "k.ptx")
    assert ins.inline_barriers == 0 and INLINE not in ins.ptx
    assert len(calls(ins.ptx, abi.PROBE_BAR_STEP)) == fast_path.BARRIERS_INLINE_MAX
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


def _own_registers_only(block: str, allowed: set[str] = frozenset()) -> bool:
    """Whether an inline block names no register of the kernel's but `allowed` (its guard):
    it must leave the barrier's operands and result (bar.red's) as they are."""
    theirs = set(re.findall(r"%\w+", block)) - {"%lanemask_lt", "%lanemask_eq"}
    return {r for r in theirs if not r.startswith("%__cs_")} <= set(allowed)


@pytest.mark.parametrize("bar,mode", [
    ("bar.red.popc.u32 %r5, 0, %p1;", abi.BAR_RED | abi.BAR_ALIGNED),
    ("bar.red.and.pred %p3, 0, !%p1;", abi.BAR_RED | abi.BAR_ALIGNED),
    ("barrier.sync 0;", abi.BAR_SYNC),
    ("barrier.sync.aligned 0;", abi.BAR_SYNC | abi.BAR_ALIGNED),
])
def test_bar_red_and_barrier_sync_run_their_probes_inline(bar, mode):
    """bar.red (barrier 0, no thread count) and barrier.sync{.aligned} 0 are CTA-wide
    barriers of phase mode like bar.sync (docs/model.md, *Two representations*): the
    arrive's work inline before the instruction, the wait's after it, each with the
    probe's call (its barrier, count, site and mode; the token the arrive returned) for a
    warp without a record. The hardware barrier stays between them, and the inline code
    touches none of the kernel's registers (bar.red's result and predicate)."""
    body = f"\tsetp.ne.s32 %p1, %r1, 0;\n\t{bar}\n\tst.shared.u32 [%r2], %r5;\n"
    ins = instrument(HEAD + body + "\tret;\n}\n", "k.ptx")
    assert ins.phase_mode and ins.inline_barriers == 2  # the barrier and the exit
    blocks = _blocks(ins.ptx)
    assert len(blocks) == 3
    (arrive,) = [b for b in blocks if abi.PROBE_BAR_ARRIVE in b]
    (wait,) = [b for b in blocks if abi.PROBE_BAR_WAIT in b]
    assert calls(arrive, abi.PROBE_BAR_ARRIVE)[0].args == ["0", "0", "0", str(mode)]
    assert calls(arrive, abi.PROBE_BAR_ARRIVE)[0].ret == "%__cs_tok"
    assert calls(wait, abi.PROBE_BAR_WAIT)[0].args == ["%__cs_tok", "0", "0"]
    assert f"mov.u32 %__cs_tok, {abi.TOKEN_CTA_WIDE};" in arrive
    assert "@%__cs_bq add.u32 %__cs_b2, %__cs_b2, 1;" in wait  # (the phase advanced)
    assert ins.ptx.count(bar) == 1
    assert ins.ptx.index(arrive) < ins.ptx.index(bar) < ins.ptx.index(wait)
    assert _own_registers_only(arrive) and _own_registers_only(wait)
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


def test_a_negated_guard_skips_both_probes_for_the_lanes_that_have_it():
    """`@!%p2 bar.sync 0`: the lanes with %p2 set neither arrive nor wait, so they branch
    past both inline blocks (record or not) before anything is loaded; the others do the
    work inline, or call the probes under the barrier's own guard."""
    ins = instrument(HEAD + "\tsetp.eq.s32 %p2, %r1, 3;\n\t@!%p2 bar.sync 0;\n\tret;\n}\n",
                     "k.ptx")
    assert ins.inline_barriers == 2
    bars = [b for b in _blocks(ins.ptx) if "bar_" in b]
    assert len(bars) == 2
    for b in bars:
        label = re.search(r"(\$__cs_bar\d+w?)_call:", b).group(1)
        skip = b.index(f"@%p2 bra {label}_done;")
        assert skip < b.index("setp.eq.u32 %__cs_bq, %__cs_fast, 0;")
        assert "@!%p2 bra" not in b
        assert [c.pred for c in calls(b)] == ["@!%p2"]
        assert _own_registers_only(b, {"%p2"})
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


def _exit_block(b: str) -> list[str]:
    """An inline exit's lines from its record test up to its call's label."""
    lines = [ln.strip() for ln in b.splitlines()]
    start = lines.index("setp.eq.u32 %__cs_bq, %__cs_fast, 0;")
    return lines[start:next(i for i, ln in enumerate(lines) if ln.endswith("_call:"))]


def test_exits_in_divergent_code_do_nothing_inline_and_call_without_a_record():
    """An exit in phase mode needs no work (the checker's exit probe returns at once in the
    shared-memory build: phase mode keeps no count of live warps), so where the warp has a
    record an exit, reached by part of a warp (a `ret` after a thread-dependent branch, or
    `@%p2 exit`), runs no code of the checker's: no load, no activemask, no warp sync that
    the warp's other lanes would have to meet. Without a record it calls the exit probe
    with its site; lanes that skip a guarded exit skip that call too."""
    body = ("\tsetp.lt.u32 %p2, %r1, 32;\n\t@%p2 bra $L_skip;\n"
            "\tst.shared.u32 [%r2], %r3;\n\tret;\n"
            "$L_skip:\n\tsetp.eq.u32 %p3, %r1, 7;\n\t@%p3 exit;\n\tbar.sync 0;\n")
    ins = instrument(HEAD + body + "\tret;\n}\n", "k.ptx")
    assert ins.inline_barriers == 4  # three exits and the barrier
    assert "@%p2 bra $L_skip;" in ins.ptx  # (not an if-conversion: a region with an exit)
    exits = [b for b in _blocks(ins.ptx) if abi.PROBE_THREAD_EXIT in b]
    assert len(exits) == 3
    sites, guarded_exits = [], 0
    for b in exits:
        label = re.search(r"(\$__cs_bar\d+)_call:", b).group(1)
        assert _exit_block(b) == ["setp.eq.u32 %__cs_bq, %__cs_fast, 0;",
                                  f"@%__cs_bq bra {label}_call;", f"bra {label}_done;", "}"]
        (call,) = calls(b)
        sites.append(int(call.args[0]))
        guarded = "@%p3 call" in b
        assert (f"@!%p3 bra {label}_done;" in b) == guarded
        guarded_exits += guarded
    assert guarded_exits == 1
    assert sorted(sites) == sorted(s.id for s in ins.sites.sites if s.event == Event.EXIT.value)
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


def test_a_barrier_in_a_loop_checked_on_its_first_trip_skips_its_inline_probes_later():
    """In a loop checked on its first trip (instrument/first_trip.py) a barrier's inline
    arrive and wait, each with its fallback call, lie wholly inside the first-trip skips
    (a later trip neither clears a bitmap nor advances the phase: docs/model.md, *Loops
    checked on their first trip*), while the hardware barrier itself runs on every trip;
    the exit after the loop is not skipped."""
    ins = loop(WRITE + BAR + READ + BAR)
    assert len(ins.first_trip_loops) == 1 and ins.inline_barriers == 3
    ptx = ins.ptx
    pattern = (r"@!%__cs_first bra \$__cs_first(\d+);\s*\{ // consan barrier probe, inline"
               r".*?\$__cs_bar\1_call:.*?\$__cs_bar\1_done:\s*\$__cs_first\1:\s*"
               r"bar\.sync 0;\s*@!%__cs_first bra \$__cs_firstw\1;\s*"
               r"\{ // consan barrier probe, inline.*?\$__cs_bar\1w_call:.*?"
               r"\$__cs_bar\1w_done:\s*\$__cs_firstw\1:")
    found = re.findall(pattern, ptx, re.S)
    assert len(found) == 2 == ptx.count("bar.sync 0;")
    exit_at = ptx.index(f"call {abi.PROBE_THREAD_EXIT},")
    assert ptx.index("mov.pred %__cs_first, 0;") < exit_at
    assert "__cs_first" not in ptx[ptx.index("@%p1 bra $L_loop;"):]
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


@pytest.mark.parametrize("exits", [1, 2])
def test_inline_max_barriers_and_exits_in_all_are_inlined_one_more_is_not(monkeypatch, exits):
    """The limit counts a module's barriers and exits together (one each, though a barrier
    has two probes): exactly fast_path.BARRIERS_INLINE_MAX of them are written out, one more and
    every one calls its probes."""
    monkeypatch.delenv("CONSAN_INLINE_MAX", raising=False)
    guard = "\tsetp.eq.s32 %p2, %r1, 3;\n" + "\t@%p2 exit;\n" * (exits - 1)

    def module(bars: int):
        return instrument(HEAD + guard + "\tbar.sync 0;\n" * bars + "\tret;\n}\n", "k.ptx")

    at = module(fast_path.BARRIERS_INLINE_MAX - exits)
    assert at.inline_barriers == fast_path.BARRIERS_INLINE_MAX
    assert len(_blocks(at.ptx)) == 2 * (fast_path.BARRIERS_INLINE_MAX - exits) + exits
    over = module(fast_path.BARRIERS_INLINE_MAX - exits + 1)
    assert over.inline_barriers == 0 and INLINE not in over.ptx
    assert len(calls(over.ptx, abi.PROBE_BAR_STEP)) == fast_path.BARRIERS_INLINE_MAX - exits + 1
    assert len(calls(over.ptx, abi.PROBE_THREAD_EXIT)) == exits


def _after_barriers(ptx: str) -> list[tuple[str, list[str]]]:
    """Each barrier instruction of `ptx` with the calls of the consan block right after it."""
    out = []
    lines = ptx.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"\s*(@!?%\w+\s+)?(bar|barrier)\.", line):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "}")
            block = "\n".join(lines[i + 1:end + 1])
            assert lines[i + 1].strip().startswith("{ // consan site"), lines[i + 1]
            out.append((line.strip(), [c.func for c in calls(block)]))
    return out


def _with_func(entry_body: str) -> str:
    """A module of a .func running BODY, then the entry k running `entry_body`."""
    head, fn = HEAD.split(".visible .entry", 1)
    func = ".visible .func f(" + fn.split("(", 1)[1].replace(".param .u32 k_n", ".param .u32 f_n")
    return (head + func.replace("[k_n]", "[f_n]") + BODY + "\tret;\n}\n" + ".visible .entry"
            + fn + entry_body + "\tret;\n}\n")


def test_past_inline_max_each_barrier_makes_one_call_after_it_in_every_function():
    """A phase-mode module whose barriers call their probes calls one, after each barrier
    (abi.PROBE_BAR_STEP), with the barrier's guard, in an entry and in a .func alike: no
    arrive, no wait (the two forms empty different bitmaps, so a module takes one)."""
    body = "\tbar.sync 0;\n" * fast_path.BARRIERS_INLINE_MAX + "\t@%p2 bar.sync 0;\n"
    ins = instrument(_with_func(body), "k.ptx")
    assert ins.phase_mode and ins.inline_barriers == 0
    assert not calls(ins.ptx, abi.PROBE_BAR_ARRIVE) and not calls(ins.ptx, abi.PROBE_BAR_WAIT)
    bars = _after_barriers(ins.ptx)
    assert len(bars) == 2 + fast_path.BARRIERS_INLINE_MAX + 1
    assert all(made == [abi.PROBE_BAR_STEP] for _, made in bars)
    guarded = [c for c in calls(ins.ptx, abi.PROBE_BAR_STEP) if c.pred]
    assert [c.pred for c in guarded] == ["@%p2", "@%p2"]  # (the .func's and the entry's)
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"))  # (phases, device)


def test_inlined_entries_keep_arrive_and_wait_in_their_functions_and_clocks_keep_both():
    """Where an entry's barriers are written inline (arrive and wait), a .func's barriers
    call the arrive and the wait too; a vector-clock module never takes the step (its
    arrive releases the warp's clock, which after the barrier would come too late)."""
    ins = instrument(_with_func(BODY), "k.ptx")
    assert ins.inline_barriers and not calls(ins.ptx, abi.PROBE_BAR_STEP)
    assert len(calls(ins.ptx, abi.PROBE_BAR_ARRIVE)) == 2 + 2  # (the .func's, the inline's)
    many = "\tbar.sync 0;\n" * (fast_path.BARRIERS_INLINE_MAX + 1)
    vc = instrument(HEAD + "\tmbarrier.init.shared.b64 [s+512], 1;\n" + many + "\tret;\n}\n",
                    "k.ptx")
    assert not vc.phase_mode and not calls(vc.ptx, abi.PROBE_BAR_STEP)
    assert len(calls(vc.ptx, abi.PROBE_BAR_WAIT)) == fast_path.BARRIERS_INLINE_MAX + 1


@pytest.mark.parametrize("bar,guard", [
    ("bar.red.popc.u32 %r5, 0, %p1;", None),
    ("@%p2 bar.red.and.pred %p2, 0, !%p1;", f"@{REG_GUARD}"),  # (its guard is its result)
    ("barrier.sync 0;", None),
    ("@!%p2 barrier.sync.aligned 0;", "@!%p2"),
])
def test_every_cta_barrier_form_takes_the_step_past_inline_max(bar, guard):
    """bar.red and barrier.sync{.aligned} in the step form: one call after the instruction
    (its site), under the lanes that ran it: a guard that is also the result
    (`@p bar.red.and.pred p`) is read from the copy made before the barrier."""
    body = "\tsetp.ne.s32 %p1, %r1, 0;\n\tsetp.eq.s32 %p2, %r1, 3;\n" + \
        f"\t{bar}\n" * (fast_path.BARRIERS_INLINE_MAX + 1)
    ins = instrument(HEAD + body + "\tret;\n}\n", "k.ptx")
    assert ins.phase_mode and ins.inline_barriers == 0
    steps = calls(ins.ptx, abi.PROBE_BAR_STEP)
    assert len(steps) == fast_path.BARRIERS_INLINE_MAX + 1
    assert all(c.args == [str(k)] and c.pred == guard for k, c in enumerate(steps))
    assert not calls(ins.ptx, abi.PROBE_BAR_ARRIVE) and not calls(ins.ptx, abi.PROBE_BAR_WAIT)
    at = [m.start() for m in re.finditer(re.escape(bar.split(" ", 1)[-1] if bar[0] == "@"
                                                   else bar), ins.ptx)]
    assert len(at) == len(steps) and all(a < c.pos for a, c in zip(at, steps, strict=True))
    if guard == f"@{REG_GUARD}":
        assert ins.ptx.count(f"mov.pred {REG_GUARD}, %p2;") == len(steps)
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


# A module whose accesses are whole 16-byte chunks and whose only barrier is barrier 0, with
# an mbarrier (vector clocks): the build with its clocks' tables in shared memory and
# 16-byte granules gives each warp a record (abi.VF_*) with barrier 0's rows.
VC_HEAD = HEAD.replace(".align 4 .b8 s[1024]", ".align 16 .b8 s[1024]").replace(
    "\tshl.b32 %r2, %r1, 2;\n", "\tshl.b32 %r2, %r1, 4;\n")
VC_BODY = ("\tmbarrier.init.shared.b64 [s+1008], 1;\n"
           "\tst.shared.v4.u32 [%r2], {%r3, %r3, %r3, %r3};\n\tbar.sync 0;\n"
           "\tld.shared.v4.u32 {%r4, %r5, %r6, %r7}, [%r2+16];\n\tbar.sync 0;\n")
VC_INLINE = "// consan vector-clock barrier probe, inline"


def _vc_blocks(ptx: str) -> list[str]:
    return _blocks(ptx, VC_INLINE, "vbar")


def test_a_vector_clock_module_of_chunks_runs_barrier_0_inline_with_the_calls_kept():
    ins = instrument(VC_HEAD + VC_BODY + "\tret;\n}\n", "k.ptx")
    assert not ins.phase_mode and ins.whole_chunks and ins.bar0_only
    assert ins.inline_barriers == 2 and INLINE not in ins.ptx
    blocks = _vc_blocks(ins.ptx)
    arrives = [b for b in blocks if calls(b, abi.PROBE_BAR_ARRIVE)]
    waits = [b for b in blocks if not calls(b, abi.PROBE_BAR_ARRIVE)]
    assert len(arrives) == len(waits) == 2
    rec = fast_path.REG_FAST
    for b in blocks:  # no record, no rows, a warp not whole: the probe's own call
        assert f"setp.lt.u32 %__cs_yp0, {rec}, {abi.VF_TAG};" in b
        assert f"+{4 * abi.VF_BAR_ROWS}];" in b and f"+{abi.SHV_ENDING}];" in b
        assert re.search(r"vote.sync.any.pred %__cs_yp0, %__cs_yp0, %__cs_y0;\s*"
                         r"@%__cs_yp0 bra \$__cs_vbar\d+w?_call;", b)
    for b in arrives:  # the warp's live lanes checked; after the arrival, the wind-down's
        # way out is the wait probe's call (it leaves the kernel)
        assert f"+{abi.SHV_LANES}];" in b and f"+{abi.SHV_PHASE}];" in b
        assert [c.func for c in calls(b)] == [abi.PROBE_BAR_WAIT, abi.PROBE_BAR_ARRIVE]
        assert f"or.b32 %__cs_tok, %__cs_y15, {abi.TOKEN_CTA_WIDE};" in b
        assert b.index("membar.cta;") < b.index(f"[%__cs_y1+{4 * abi.VF_CLOCKS}];")
    for b in waits:  # every warp's row of the token's parity, into the warp's clock
        assert [c.func for c in calls(b)] == [abi.PROBE_BAR_WAIT]
        assert "and.b32 %__cs_y15, %__cs_tok, 1;" in b and "max.u32" in b
        assert b.index("membar.cta;") < b.index(f"+{abi.SHV_PHASE}], ")
    for vsh in (True, False):  # (the record's build; any other returns none)
        toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), vsh=vsh)


@pytest.mark.parametrize("change", ["count", "words", "guard", "inline max"])
def test_barrier_0_of_other_vector_clock_modules_calls_its_probes(change, monkeypatch):
    """A module with a barrier of a count (no rows: FLAG_BAR0_ROWS), of 4-byte writes (no
    record: another build), a predicated barrier, or CONSAN_INLINE_MAX=0."""
    body = VC_BODY
    if change == "count":
        body += "\tbar.sync 1, 64;\n"
    elif change == "words":
        body = body.replace("\tst.shared.v4.u32 [%r2], {%r3, %r3, %r3, %r3};\n",
                            "\tst.shared.u32 [%r2], %r3;\n")
    elif change == "guard":
        body = body.replace("\tbar.sync 0;\n\tld", "\t@%p2 bar.sync 0;\n\tld")
    else:
        monkeypatch.setenv("CONSAN_INLINE_MAX", "0")
    ins = instrument(VC_HEAD + body + "\tret;\n}\n", "k.ptx")
    assert not ins.phase_mode
    assert ins.inline_barriers == (1 if change == "guard" else 0)
    assert len(_vc_blocks(ins.ptx)) == (2 if change == "guard" else 0)


def test_the_wgmma_groups_of_a_vector_clock_module_of_chunks_run_inline():
    """wgmma.commit_group and wgmma.wait_group N (both .sync.aligned): lane 0 counts the
    warp's groups, or raises the warpgroup unit's column to the groups retired, where the
    warp has a record; the probe's call is kept for a warp without one. (A module that
    syncs on another barrier too: its barriers call, its groups still run inline.)"""
    body = VC_BODY + ("\tbar.sync 1, 64;\n\twgmma.fence.sync.aligned;\n"
                      "\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 1;\n")
    ins = instrument(VC_HEAD + body + "\tret;\n}\n", "k.ptx")
    assert not ins.bar0_only and ins.whole_chunks
    assert ins.inline_barriers == 2 and "vector-clock barrier probe" not in ins.ptx
    groups = ins.ptx.split("// consan vector-clock wgmma group probe, inline")[1:]
    assert len(groups) == 2
    commit, wait = (g[:g.index("_done:")] for g in groups)
    for g, op in ((commit, abi.WGMMA_COMMIT), (wait, abi.WGMMA_WAIT)):
        assert [(c.func, c.args[0]) for c in calls(g)] == [(abi.PROBE_WGMMA_GROUP, str(op))]
        assert f"setp.lt.u32 %__cs_yp0, {fast_path.REG_FAST}, {abi.VF_TAG};" in g
        assert f"+{abi.SHV_WGMMA_COMMITS}];" in g
    assert "@%__cs_yp1 add.u32 %__cs_y5, %__cs_y5, 1;" in commit
    assert "setp.gt.u32 %__cs_yp2, %__cs_y5, 1;" in wait  # (all but the newest group)
    assert f"add.u32 %__cs_y7, %__cs_y7, {abi.AGENT_WGMMA};" in wait
    at = [m.start() for m in re.finditer("wgmma group probe, inline", ins.ptx)]
    assert at[0] < ins.ptx.index("wgmma.commit_group") < at[1]  # (the wait's after it)
    assert ins.ptx.index("wgmma.wait_group.sync.aligned 1;") < at[1]
    for vsh in (True, False):
        toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), vsh=vsh)


def test_the_cp_async_groups_of_a_vector_clock_module_of_chunks_run_inline(monkeypatch):
    """cp.async.commit_group, cp.async.wait_group N and cp.async.wait_all: lane 0 ticks the
    warp's cp.async unit and keeps the group's end in the CTA's table, or raises the unit's
    column of the warp's clock to the newest group retired, where the warp has a record;
    the probe's call is kept for a warp without one. A wait keeping as many groups as the
    table holds ends for acquires nothing (the probe's rule); past the inline limit the
    groups call and the barriers stay inline."""
    body = VC_BODY + ("\tcp.async.commit_group;\n\tcp.async.wait_group 1;\n"
                      f"\tcp.async.wait_group {abi.CPASYNC_GROUP_ENDS};\n\tcp.async.wait_all;\n")
    ins = instrument(VC_HEAD + body + "\tret;\n}\n", "k.ptx")
    assert ins.whole_chunks and ins.bar0_only and ins.inline_barriers == 2 + 4
    groups = ins.ptx.split("// consan vector-clock cp.async group probe, inline")[1:]
    assert len(groups) == 4
    commit, wait, far, wait_all = (g[:g.index("_done:")] for g in groups)
    for g, op, n in ((commit, abi.ASYNC_COMMIT, 0), (wait, abi.ASYNC_WAIT, 1),
                     (far, abi.ASYNC_WAIT, abi.CPASYNC_GROUP_ENDS),
                     (wait_all, abi.ASYNC_WAIT_ALL, 0)):
        assert [(c.func, c.args[:2]) for c in calls(g)] == [(abi.PROBE_ASYNC, [str(op), str(n)])]
        assert f"setp.lt.u32 %__cs_yp0, {fast_path.REG_FAST}, {abi.VF_TAG};" in g
        assert f"+{4 * abi.VF_CTA}];" in g and f"+{4 * abi.CTA_CPASYNC_COMMITS}];" in g
    tick = f"[%__cs_y9+{abi.SHV_CPTICKS}], %__cs_y5;"
    for g in (commit, wait_all):  # the unit's clock ticks; the group's end is kept
        assert tick in g and f"+{4 * abi.CTA_CPASYNC_ENDS}], %__cs_y5;" in g
    for g in (wait, wait_all):  # the newest group retired, into the unit's column
        assert f"[%__cs_y3+{4 * abi.AGENT_CPASYNC}], %__cs_y5;" in g
    assert "setp.gt.and.u32 %__cs_yp2, %__cs_y4, 1, %__cs_yp1;" in wait
    assert "setp.gt.and.u32 %__cs_yp2, %__cs_y4, 0, %__cs_yp1;" in wait_all
    assert tick not in wait and tick not in far and f"{4 * abi.AGENT_CPASYNC}]" not in far
    at = [m.start() for m in re.finditer("cp.async group probe, inline", ins.ptx)]
    assert at[0] < ins.ptx.index("cp.async.commit_group;") < at[1]  # (the waits' after them)
    assert ins.ptx.index("cp.async.wait_group 1;") < at[1]
    for vsh in (True, False):
        toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), vsh=vsh)
    monkeypatch.setattr(fast_path, "BARRIERS_INLINE_MAX", 3)
    few = instrument(VC_HEAD + body + "\tret;\n}\n", "k.ptx")
    assert few.inline_barriers == 2 and "cp.async group probe, inline" not in few.ptx


def test_a_successful_mbarrier_parity_wait_of_a_vector_clock_module_of_chunks_runs_inline():
    """mbarrier.try_wait.parity in its spin loop: a warp whose every lane succeeded on the
    same mbarrier of this CTA finds its entry among the CTA's keys (a lane a key), resets its
    spin watch and, where the parity is the latest completed phase's, joins the phase's
    clock slot into its clock, a lane a chunk; anything else (a failure the sampling passes
    on, no record, a warp not whole, another address, no live entry, the CTA winding down)
    calls the probe. A token wait, a predicated wait and a .shared::cluster one call."""
    wait = ("\t{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [s+1008], "
            "%r3;\n @!p bra W;\n}\n")
    token = "\tmbarrier.try_wait.shared::cta.b64 %p3, [s+1008], %rd9;\n"
    guarded = "\t@%p2 mbarrier.try_wait.parity.shared::cta.b64 %p1, [s+1008], 0;\n"
    body = VC_BODY + wait + token + guarded
    head = VC_HEAD.replace("\t.reg .b32", "\t.reg .b64 %rd<10>;\n\t.reg .b32")
    ins = instrument(head + body + "\tret;\n}\n", "k.ptx")
    assert ins.whole_chunks and ins.inline_barriers == 2 + 1
    (b,) = ins.ptx.split("// consan vector-clock mbarrier wait probe, inline")[1:]
    b = b[:b.index("_done:")]
    assert [(c.func, c.args[1]) for c in calls(b)] == [(abi.PROBE_MBAR, str(abi.MB_WAIT_PARITY))]
    assert "or.pred %__cs_yp0, %__cs_yp0, !p;" in b  # (a failure calls)
    assert "shfl.sync.idx.b32" in b and f", {abi.RANK_SHIFT};" in b  # one address, this CTA's
    assert f"+{abi.SHV_MKEY}];" in b and f"+{abi.SHV_MLIVE}];" in b and f"+{abi.SHV_GEN}];" in b
    assert f"+{abi.SHV_ENDING}];" in b and f"+{4 * abi.CTA_SPIN_PHASE}], 0;" in b
    assert f"ld.acquire.cta.global.u32 %__cs_y7, [%__cs_yd1+{4 * abi.MB_PHASE}];" in b
    assert "mov.u32 %__cs_y11, %r3;" in b  # the parity operand, lane 0's for the warp
    assert "shfl.sync.idx.b32 %__cs_y13, %__cs_y11, 0, 31, -1;" in b
    assert "xor.b32 %__cs_y9, %__cs_y11, %__cs_y13;" in b
    assert b.count("max.u32") == 8 and b.index("ld.acquire") < b.index("ld.global.v4")
    # the loop still spins on the instruction; the sampled-out failures skip both
    assert ins.ptx.index("W: mbarrier.try_wait") < ins.ptx.index("mbarrier wait probe, inline")
    for vsh in (True, False):
        toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), vsh=vsh)



def test_a_wait_in_a_loop_one_lane_runs_runs_inline_in_the_copy_every_lane_runs():
    """A TMA producer's `if (lane == 0) for (...) { wait(empty[s]); ... }`: in the copy of
    the loop every lane runs (instrument/loops.py: one lane on, the others off) its
    successful wait runs inline too, the lane on's outcome, address and parity taken for
    the warp (the lanes off compute neither); the original region keeps its own."""
    one_lane = ("\tsetp.ne.s32 %p1, %r1, 0;\n\t@%p1 bra $L_end;\n\tmov.u32 %r4, 0;\n"
                "$L_top:\n\t{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, "
                "[s+1008], %r4;\n @!p bra W;\n}\n\tadd.s32 %r4, %r4, 1;\n"
                "\tsetp.lt.s32 %p2, %r4, 8;\n\t@%p2 bra $L_top;\n$L_end:\n")
    ins = instrument(VC_HEAD + VC_BODY + one_lane + "\tret;\n}\n", "k.ptx")
    assert ins.whole_chunks and ins.inline_barriers == 2 + 2
    ptx = ins.ptx
    start = ptx.index("vote.sync.ballot.b32 %__cs_n, %__cs_on, %__cs_m;")
    copy, orig = ptx[start:ptx.index("@%p1 bra $L_end;")], ptx[ptx.index("@%p1 bra $L_end;"):]
    assert "W: @%__cs_on mbarrier.try_wait" in copy
    (b,) = copy.split("// consan vector-clock mbarrier wait probe, inline")[1:]
    b = b[:b.index("_done:")]
    assert "$__cs_vbarl" in b
    wait, off = abi.MB_WAIT_PARITY, abi.MB_WAIT_PARITY | abi.PROBE_OFF
    assert [c.func for c in calls(b)] == [abi.PROBE_MBAR]
    assert f"selp.b32 %__cs_op, {wait}, {off}, %__cs_on;" in b  # (the call, as before)
    # only the lane on's failure calls; the first lane on decides address and parity
    assert "not.pred %__cs_yp1, p;\n\tand.pred %__cs_yp1, %__cs_yp1, %__cs_on;" in b
    assert "or.pred %__cs_yp0, %__cs_yp0, !p;" not in b
    assert "vote.sync.ballot.b32 %__cs_y9, %__cs_on, -1;" in b
    assert "shfl.sync.idx.b32 %__cs_y4, %__cs_y3, %__cs_y10, 31, -1;" in b
    assert "setp.ne.and.u32 %__cs_yp0, %__cs_y3, %__cs_y4, %__cs_on;" in b
    assert "shfl.sync.idx.b32 %__cs_y13, %__cs_y11, %__cs_y10, 31, -1;" in b
    assert "mov.u32 %__cs_y3, %__cs_y4;" in b  # (every lane: the lane on's address)
    assert b.count("max.u32") == 8 and b.index("ld.acquire") < b.index("ld.global.v4")
    assert "mbarrier wait probe, inline" in orig and "$__cs_vbarl" not in orig
    for vsh in (True, False):
        toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), vsh=vsh)
