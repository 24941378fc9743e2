"""Fuzzing the parser and the rewriter over the PTX corpus (tests/ptx_fuzz.py), on the CPU.

Every mutant is either instrumented -- and then, when ptxas assembles the mutant, ptxas
assembles the instrumented PTX too -- or refused with a PTXSyntaxError / InstrumentError
whose one-line message names the file and a line; nothing else escapes. A failure prints
the seed, the edits (with the lines they changed) and a `Mutant(...)` record that replays
it. The regression tests below replay the mutants that found each bug.
"""

from __future__ import annotations

import pytest

from instrument.ptx import PTXSyntaxError, parse, ptx_int
from tests import ptx_fuzz as fz
from tests.ptx_fuzz import Edit, Mutant

# One worker for the whole file, first: fz.mutants() is made once per process (5-8 s on CI's
# machine), and its 70 s of ptxas start early instead of trailing the run.
pytestmark = [pytest.mark.skipif(fz.PTXAS is None, reason="ptxas is not on PATH"),
              pytest.mark.xdist_group("fuzz")]


def _holds(m: Mutant, line: str) -> None:
    """`m` changed the line it did when it was found (the corpus is the same), and the
    property holds for it now."""
    assert line in m.text(), f"the corpus changed under {m!r}: {line!r} is not in the mutant"
    why = fz.ptxas_cannot_read(m.text())
    if why:  # (the property would hold only because ptxas refuses the input)
        pytest.skip(why)
    problem = fz.verdict(m)
    assert problem is None, problem


CHUNKS = 6  # test items the mutants are split over (each runs two ptxas at a time)
# `python -m consan instrument` runs on the first mutant of each of these kinds (~0.3 s a
# process): refusals by the parser and the rewriter, and instrumented PTX.
CLI_KINDS = ("bytes", "brackets", "truncate", "operand", "insert", "branch", "trivia")


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_fuzz_every_mutant_is_instrumented_or_refused_naming_its_line(chunk):
    """Seeded (CONSAN_FUZZ_SEED, CONSAN_FUZZ_COUNT change the run); a failure prints the
    seed, the mutation and the record that replays it."""
    ms = fz.mutants()[chunk::CHUNKS]
    bad = fz.run(ms)
    assert not bad, (f"{len(bad)} of {len(ms)} mutants (seed {fz.SEED}, chunk {chunk}) break "
                     "the property:\n\n" + "\n\n".join(bad[:8]))


def test_the_mutants_are_deterministic_and_spread_over_the_corpus():
    ms = fz.mutants()
    assert ms[:25] == fz.mutants(fz.SEED, 25)
    if fz.COUNT >= len(fz.modules()):
        assert {m.module for m in ms} == set(fz.modules())
    assert len({m.kind.split("+")[0] for m in ms}) >= len(fz.MUTATIONS) - 1


def test_the_cli_exits_0_or_2_without_a_traceback(tmp_path):
    ms = fz.mutants()
    sample = [next(m for m in ms if k in m.kind.split("+")) for k in CLI_KINDS
              if any(k in m.kind.split("+") for m in ms)]
    with fz.ThreadPoolExecutor(max_workers=2) as pool:
        bad = [v for v in pool.map(lambda m: fz.cli_verdict(m, tmp_path), sample) if v]
    assert not bad, "\n\n".join(bad)


# ---------------------------------------------------------------- regressions


def test_a_statement_without_an_opcode_names_the_file():
    """`@%p,='é bra ...`: the predicate ends at the comma; the refusal named `<ptx>`, not
    the file."""
    m = Mutant(module="warp_shuffle/compute_80/O3", kind="bytes",
               edits=(Edit(start=941, end=942, text=",='é"),), seed="1:686")
    _holds(m, "@%p,='é bra")
    with pytest.raises(PTXSyntaxError, match=r"warp_shuffle-compute_80-O3\.ptx:39:2: "
                       "statement without an opcode"):
        fz.instrument(m.text(), m.file)


def test_a_refused_address_names_the_file_on_one_line():
    """A `;` dropped after `[%r9]`: the statement runs on to the next line's `;`. The
    refusal said `line 101:2` without the file, and quoted the statement over two lines."""
    m = Mutant(module="mbarrier_sm80/compute_80/lineinfo", kind="drop_lines+splice+brackets",
               edits=(Edit(start=4878, end=4935, text=""),
                      Edit(start=4803, end=4803, text="\t.reg .b32 temp_param_reg;\n"),
                      Edit(start=2682, end=2683, text="")), seed="1:229")
    _holds(m, "mbarrier.arrive.shared.b64 %rd6, [%r9]\n")
    with pytest.raises(fz.InstrumentError) as e:
        fz.instrument(m.text(), m.file)
    assert str(e.value).startswith("mbarrier_sm80-compute_80-lineinfo.ptx: line 101:2: ")
    assert "\n" not in str(e.value)


def test_an_undeclared_register_names_the_file():
    m = Mutant(module="fences_volatile/compute_80/lineinfo", kind="operand",
               edits=(Edit(start=5546, end=5575, text=" %undeclared"),), seed="1:1304")
    _holds(m, "mov.u64 \t%rd16, %undeclared;")
    with pytest.raises(fz.InstrumentError, match=r"^fences_volatile-compute_80-lineinfo\.ptx: "
                       r"line \d+:\d+: register %undeclared in `.*` is not declared$"):
        fz.instrument(m.text(), m.file)


def test_a_loc_in_hexadecimal_is_read_as_ptxas_reads_it():
    """`.loc 1 12 0x7fffffff`: ptxas takes it; int() raised a ValueError."""
    m = Mutant(module="fences_volatile/compute_80/lineinfo", kind="number",
               edits=(Edit(start=2310, end=2311, text="0x7fffffff"),), seed="1:724")
    _holds(m, ".loc\t1 12 0x7fffffff")
    assert fz.assembles(m.text(), "sm_80")[0]  # so the instrumented PTX must assemble too


def test_a_loc_that_is_not_a_number_is_refused_naming_its_line():
    """`.loc 1 .b64 5` (tokens swapped): a ValueError escaped from int()."""
    m = Mutant(module="cluster/compute_90a/lineinfo",
               kind="state_space+swap_tokens+drop_lines",
               edits=(Edit(start=5133, end=5149, text=".const"),
                      Edit(start=6731, end=6733, text=".b64"),
                      Edit(start=6536, end=6540, text="69"), Edit(start=2512, end=2580, text="")),
               seed="1:916")
    _holds(m, ".loc\t1 .b64 5")
    with pytest.raises(fz.InstrumentError, match=r"^cluster-compute_90a-lineinfo\.ptx: line "
                       r"268:2: '\.b64' is not a number in `\.loc 1 \.b64 5`$"):
        fz.instrument(m.text(), m.file)


@pytest.mark.parametrize("text,value", [("0", 0), ("010", 8), ("0x1F", 31), ("0b101", 5),
                                        ("16U", 16), ("-0x10", -16)])
def test_ptx_int_reads_ptx_integers(text, value):
    assert ptx_int(text) == value


@pytest.mark.parametrize("text", ["08", "0x", "1.5", "0o10", "", "1_0"])
def test_ptx_int_refuses_what_is_not_one(text):
    with pytest.raises(ValueError):
        ptx_int(text)


def test_a_16_bit_address_register_is_widened():
    """`ld.shared.u8 %rd1, [%rs16]`: ptxas takes a 16-bit register as an address; the probe
    moved it into a 64-bit one with `mov.b64`, which ptxas refuses."""
    m = Mutant(module="templates/compute_80/O3", kind="swap_tokens",
               edits=(Edit(start=13861, end=13865, text="%rs16"),
                      Edit(start=13853, end=13858, text="%rd1")), seed="1:872")
    _holds(m, "ld.shared.u8 \t%rd1, [%rs16];")
    assert fz.assembles(m.text(), "sm_80")[0]  # so the instrumented PTX must assemble too
    assert "cvt.u64.u16 %__cs_a, %rs16;" in fz.instrument(m.text(), m.file).ptx


def test_an_octal_address_offset_is_read_as_ptxas_reads_it():
    """`[%rd21+010]` is byte 8 to ptxas; int(x, 0) raised a ValueError (coalesce.py)."""
    m = Mutant(module="conv2d_smem/compute_80/O3", kind="number",
               edits=(Edit(start=2566, end=2567, text="010"),), seed="2:1615")
    _holds(m, "ld.shared.f32 \t%f13, [%rd21+010];")
    assert fz.assembles(m.text(), "sm_80")[0]  # so the instrumented PTX must assemble too


PTX_ONE_LOAD = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
{
.reg .b32 %r<3>;
.reg .b64 %rd<3>;
.shared .align 4 .b8 sm[64];
mov.u64 %rd1, sm;
ld.shared.u32 %r1, [%rd1+OFFSET];
ret;
}
"""


@pytest.mark.parametrize("offset,value", [("010", 8), ("0b101", 5), ("16U", 16), ("-0x8", -8)])
def test_address_offsets_in_every_ptx_notation(offset, value):
    text = PTX_ONE_LOAD.replace("OFFSET", offset)
    assert fz.assembles(text, "sm_90a")[0]
    ins = fz.instrument(text, "one_load.ptx")
    assert f"add.s64 %__cs_a, %__cs_a, {value};" in ins.ptx
    assert fz.assembles(ins.ptx, "sm_90a")[0]


def test_an_offset_that_is_no_ptx_number_is_refused():
    with pytest.raises(fz.InstrumentError, match=r"^one_load\.ptx: line 10:1: cannot parse "
                       r"address operand \[%rd1\+08\]"):
        fz.instrument(PTX_ONE_LOAD.replace("OFFSET", "08"), "one_load.ptx")



def test_maxnreg_is_read_as_ptxas_reads_it():
    """`.maxnreg 0b101`: ptxas takes it (and raises it to its lower bound); int() raised a
    ValueError."""
    m = Mutant(module="setmaxnreg/compute_90a/O3", kind="number+insert",
               edits=(Edit(start=10974, end=10977, text="0b101"),
                      Edit(start=4724, end=4724, text="bar.sync 0;\n\t")), seed="stack1:89")
    _holds(m, ".maxnreg 0b101")
    assert fz.instrument(m.text(), m.file).max_regs == 5


def test_maxnreg_that_is_not_a_number_is_refused_naming_its_line():
    text = PTX_ONE_LOAD.replace("k()\n", "k()\n.maxnreg abc\n").replace("OFFSET", "4")
    with pytest.raises(fz.InstrumentError, match=r"^one_load\.ptx: line 5:1: 'abc' is not a "
                       r"number in `\.maxnreg abc`$"):
        fz.instrument(text, "one_load.ptx")


def test_a_cp_async_of_a_size_ptx_does_not_have_is_not_modelled():
    """`cp.async.ca.shared.global [%r1], [%rd1], 99999999999999999999999;`: the probe's info
    word has 8 bits for the size; an AssertionError escaped from abi.access_info."""
    m = Mutant(module="cp_async/compute_80/O3", kind="insert+insert+number+trivia+trivia+number",
               edits=(Edit(start=6030, end=6030,
                           text="mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r16], %r9;\n\t"),
                      Edit(start=7653, end=7653, text="@%p1 wgmma.commit_group.sync.aligned;\n\t"),
                      Edit(start=12952, end=12954, text="16U"),
                      Edit(start=2003, end=2003, text="/* c */"),
                      Edit(start=12905, end=12905, text="\n/* { ; */\n"),
                      Edit(start=1695, end=1696, text="99999999999999999999999")),
               seed="stack1:1032")
    _holds(m, "[%rd1], 99999999999999999999999;")
    ins = fz.instrument(m.text(), m.file)
    assert any("cp.async of 99999999999999999999999 bytes" in u.reason for u in ins.unmodeled)


def test_a_comment_inside_a_statement_is_no_part_of_its_operands():
    """`bar.arrive /* { ; */ %r8, %r9;`: the `{` in the comment kept the comma from splitting
    the operands, and the probe passed `/* { ; */ %r8, %r9` as the barrier."""
    m = Mutant(module="named_barriers/compute_90a/lineinfo", kind="trivia",
               edits=(Edit(start=10842, end=10842, text="\n/* { ; */\n"),), seed="7:363")
    _holds(m, "bar.arrive \n/* { ; */\n%r8, %r9;")
    assert fz.assembles(m.text(), "sm_90a")[0]  # so the instrumented PTX must assemble too
    it = next(it for it in parse(m.text()).items if "/* { ; */" in it.text)
    assert (it.opcode, it.operands) == ("bar.arrive", ["%r8", "%r9"])


def test_a_ptxas_crash_of_its_own_is_told_apart():
    """ptxas 13.0 crashes on an sm_80 mbarrier.test_wait whose state comes from a kernel
    parameter once its result is read (the probe reads it); the mutant with the result
    read natively crashes it too, so the crash is not the rewriter's."""
    m = Mutant(module="ldmatrix_mma/compute_80/O3", kind="insert",
               edits=(Edit(start=3700, end=3700,
                           text="mbarrier.test_wait.shared.b64 %p5, [%rd8], %rd1;\n\t"),),
               seed="11:2977")
    _holds(m, "mbarrier.test_wait.shared.b64 %p5, [%rd8], %rd1;\n\tst.shared.u16")
    assert fz.assembles(m.text(), "sm_80")[0]
    if not fz.assembles(fz.waits_read(m.text()), "sm_80")[1].startswith("ptxas crashed"):
        pytest.skip("this ptxas reads such a wait's result without crashing")
    assert fz.assembles(fz.instrument(m.text(), m.file).ptx, "sm_80")[1].startswith(
        "ptxas crashed")


def test_a_special_register_is_no_root_of_an_address():
    """`mov.u32 %r1, %tid.x; ld.volatile.shared.u32 %r1, [%r1];` is valid PTX; coalesce.py
    followed %r1 back to %tid.x and the probe's address code refused it as undeclared."""
    m = Mutant(module="bulk_store/compute_90a/lineinfo", kind="insert",
               edits=(Edit(start=6559, end=6559, text="ld.volatile.shared.u32 %r1, [%r1];\n\t"),),
               seed="12:1284")
    _holds(m, "mov.u32 \t%r1, %tid.x;")
    assert fz.assembles(m.text(), "sm_90a")[0]
    assert "cvt.u64.u32 %__cs_a, %r1;" in fz.instrument(m.text(), m.file).ptx


def test_a_debug_string_byte_past_255_is_no_string():
    """`.b8 18446744073709551616,90,...` in .debug_str: ptxas takes it; bytes() raised a
    ValueError reading the inlined functions' names."""
    m = Mutant(module="bulk_copy/compute_90a/lineinfo", kind="number+insert",
               edits=(Edit(start=12255, end=12257, text="18446744073709551616"),
                      Edit(start=5467, end=5467,
                           text="atom.shared.cas.b32 %r14, [%r12], %r14, %r12;\n\t")),
               seed="st41:1452")
    _holds(m, ".b8 18446744073709551616,90,49")
    assert fz.assembles(m.text(), "sm_90a")[0]  # so the instrumented PTX must assemble too


def test_a_line_directive_goes_on_after_a_comma():
    """`.maxntid 256,` and `1, 1` on the next line: ptxas reads one directive; the parser
    ended it at the newline and refused `1, 1` as a statement without its `;`."""
    m = Mutant(module="gemm_tiled/compute_90a/lineinfo", kind="register+trivia+insert",
               edits=(Edit(start=2287, end=2291, text="%f23"),
                      Edit(start=5420, end=5420, text="\n\t\t")), seed="31:1088")
    _holds(m, ".maxntid 256, \n\t\t1, 1")
    assert fz.assembles(m.text(), "sm_90a")[0]  # so the instrumented PTX must assemble too
    ptx = PTX_ONE_LOAD.replace("OFFSET", "4").replace("k()\n", "k()\n.maxntid 64\n , 1, 1\n")
    it = next(it for it in parse(ptx).items if it.opcode == ".maxntid")
    assert it.operands == ["64", "1", "1"]


def test_a_comment_inside_a_declaration_is_no_part_of_its_names():
    """`.reg .b64 /* { ; */ %rd<41>;`: the comment became part of the register's name, and
    every access through %rd was refused as undeclared."""
    m = Mutant(module="cp_async/compute_90a/O3", kind="trivia",
               edits=(Edit(start=852, end=852, text="\n/* { ; */\n"),), seed="31:491")
    _holds(m, ".reg .b64 \t\n/* { ; */\n%rd<41>;")
    assert fz.assembles(m.text(), "sm_90a")[0]
    fz.instrument(m.text(), m.file)  # not refused


def test_a_shared_variable_declared_with_a_comment_is_shared():
    """`.shared .b8 sm[64] /* x */;`: a generic load of `[sm+4]` is a shared-memory read."""
    ptx = PTX_ONE_LOAD.replace("sm[64];", "sm[64] /* x */;").replace(
        "ld.shared.u32 %r1, [%rd1+OFFSET];", "ld.u32 %r1, [sm+4];")
    assert fz.assembles(ptx, "sm_90a")[0]
    assert fz.instrument(ptx, "one_load.ptx").counts["access.read"] == 1


def test_a_line_directive_goes_on_at_a_number_on_the_next_line():
    """`.loc 1` and `10 0` on the next line: ptxas reads one `.loc`; the parser took `10 0`
    and the instruction after it for one statement, and the probes went in between."""
    m = Mutant(module="printf_kernel/compute_90a/G", kind="trivia",
               edits=(Edit(start=3810, end=3810, text="\n\t\t"),), seed="51:2520")
    _holds(m, ".loc\t1 \n\t\t10 0")
    assert fz.assembles(m.text(), "sm_90a")[0]  # so the instrumented PTX must assemble too
    it = next(it for it in parse(m.text()).items if it.text.startswith(".loc\t1 \n"))
    assert it.operands == ["1 \n\t\t10 0"]


def test_a_line_directive_goes_on_to_its_first_operand():
    """`.target` and `sm_80` on the next line: ptxas reads one `.target`; the parser took
    `sm_80` and the next directive for a statement, and the probes' declarations went in
    between."""
    m = Mutant(module="fences_volatile/compute_80/O3", kind="trivia",
               edits=(Edit(start=175, end=175, text="\n\t\t"),), seed="61:1402")
    _holds(m, ".target \n\t\tsm_80")
    assert fz.assembles(m.text(), "sm_80")[0]  # so the instrumented PTX must assemble too
    assert parse(m.text()).target == ["sm_80"]
    bare = parse(".version 8.0\n.target sm_90a\n.entry k()\n.explicitcluster\n.noreturn\n"
                 "{\nret;\n}\n")
    assert [it.opcode for it in bare.items if it.kind == "stmt"] == [
        ".version", ".target", ".entry", ".explicitcluster", ".noreturn", "ret"]


def test_a_bar_red_without_its_operands_is_refused_naming_its_line():
    """`bar.red.popc.u32 0;` (bar.sync's opcode changed): an IndexError escaped."""
    m = Mutant(module="fences_volatile/compute_90a/O3", kind="register+opcode+opcode",
               edits=(Edit(start=8827, end=8831, text="%r10"),
                      Edit(start=1746, end=1754, text="bar.arrive"),
                      Edit(start=1746, end=1756, text="bar.red.popc.u32")), seed="81:240")
    _holds(m, "bar.red.popc.u32 \t0;")
    with pytest.raises(fz.InstrumentError, match=r"^fences_volatile-compute_90a-O3\.ptx: line "
                       r"63:2: `bar\.red\.popc\.u32 0;` has 1 operands"):
        fz.instrument(m.text(), m.file)


def test_a_cp_async_mbarrier_arrive_without_its_address_is_not_modelled():
    """`cp.async.mbarrier.arrive.noinc.shared.b64 ;` (found by sweeping every corpus opcode
    over operand lists of every shape, then replayed on the corpus): an IndexError
    escaped."""
    m = Mutant(module="cp_async/compute_80/O3", kind="operand",
               edits=(Edit(start=11273, end=11278, text=""),), seed="sweep")
    _holds(m, "cp.async.mbarrier.arrive.noinc.shared.b64 ;")
    ins = fz.instrument(m.text(), m.file)
    assert any("without an address operand" in u.reason for u in ins.unmodeled)
