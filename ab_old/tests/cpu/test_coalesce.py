"""Probe merging: neighbouring accesses share one probe only when no verdict can change."""

from __future__ import annotations

from instrument import abi
from instrument.rewrite import instrument
from tests.probe_calls import args_of, calls

HEAD = """.version 9.0
.target sm_90a
.address_size 64
.visible .entry k()
{
\t.reg .pred %p<3>;
\t.reg .b32 %r<20>;
\t.reg .f32 %f<20>;
"""


def sites(body: str):
    ins = instrument(HEAD + body + "\tret;\n}\n")
    return [(s.event, s.size, len(s.merged_lines)) for s in ins.sites.sites if s.event != "exit"]


def test_unrolled_reads_share_one_probe():
    body = "".join(f"\tld.shared.f32 %f{i}, [%r1+{4 * i}];\n" for i in range(4))
    assert sites(body) == [("access.read", 16, 3)]


def test_gap_makes_a_strided_probe():
    ins = instrument(HEAD + "\tld.shared.f32 %f1, [%r1];\n\tld.shared.f32 %f2, [%r1+8];\n"
                     "\tret;\n}\n")
    assert [(s.event, s.size, len(s.merged_lines)) for s in ins.sites.sites][:1] == [
        ("access.read", 4, 1)]
    rep = (8 << abi.REP_STRIDE_SHIFT) | 2
    assert [a[3] for a in args_of(ins.ptx, abi.PROBE_ACCESS_N)] == [str(rep)]


def test_an_unrolled_column_loop_is_one_strided_probe():
    """One load per row of a 256-byte row (the TMA ring's consumers): 32 loads, one probe."""
    body = "".join(f"\tld.shared.f32 %f{i % 16}, [%r1+{256 * i}];\n\tadd.f32 %f17, %f17, "
                   f"%f{i % 16};\n" for i in range(32))
    ins = instrument(HEAD + body + "\tret;\n}\n")
    reads = [s for s in ins.sites.sites if s.event == "access.read"]
    assert [(s.size, len(s.merged_lines)) for s in reads] == [(4, 31)]
    assert [a[3] for a in args_of(ins.ptx, abi.PROBE_ACCESS_N)] == [
        str((256 << abi.REP_STRIDE_SHIFT) | 32)]


def test_uneven_spacing_or_sizes_stay_apart():
    """0, 8, 20: the evenly spaced pair is one strided probe, the third its own."""
    uneven = "\tld.shared.f32 %f1, [%r1];\n\tld.shared.f32 %f2, [%r1+8];\n" \
             "\tld.shared.f32 %f3, [%r1+20];\n"
    assert sorted(sites(uneven)) == [("access.read", 4, 0), ("access.read", 4, 1)]
    ptx = instrument(HEAD + uneven + "\tret;\n}\n").ptx
    assert [a[3] for a in args_of(ptx, abi.PROBE_ACCESS_N)] == [
        str((8 << abi.REP_STRIDE_SHIFT) | 2)]
    sizes = "\tld.shared.f32 %f1, [%r1];\n\tld.shared.v2.f32 {%f2, %f3}, [%r1+16];\n"
    assert sites(sizes) == [("access.read", 4, 0), ("access.read", 8, 0)]


def test_a_strided_probe_keeps_to_one_source_line():
    body = ("\t.loc 1 10 1\n\tld.shared.f32 %f1, [%r1];\n"
            "\t.loc 1 11 1\n\tld.shared.f32 %f2, [%r1+64];\n")
    assert sites('\t.file 1 "k.cu"\n' + body) == [("access.read", 4, 0)] * 2


def test_contiguous_accesses_of_two_source_lines_keep_a_probe_each():
    """`s[i] = a;` then `s[i + 1] = b;`: one probe named the first line, so a race on the
    second line's bytes was reported at the first."""
    body = ('\t.file 1 "k.cu"\n'
            "\t.loc 1 10 1\n\tst.shared.f32 [%r1], %f1;\n\tst.shared.f32 [%r1+4], %f2;\n"
            "\t.loc 1 11 1\n\tst.shared.f32 [%r1+8], %f3;\n\tst.shared.f32 [%r1+12], %f4;\n")
    ins = instrument(HEAD + body + "\tret;\n}\n")
    writes = [s for s in ins.sites.sites if s.event == "access.write"]
    assert [(s.loc.line, s.size, len(s.merged_lines)) for s in writes] == [(10, 8, 1),
                                                                           (11, 8, 1)]


def test_a_failed_wait_calls_the_checker_only_when_sampled():
    body = ("\t{\n\t.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%r1], %r2;\n"
            "\t@!p bra W;\n\t}\n")
    ptx = instrument(HEAD + body + "\tret;\n}\n").ptx
    assert f"and.b32 %__cs_spl, %__cs_spin, {abi.MB_WAIT_SAMPLE - 1};" in ptx
    assert "setp.ne.and.u32 %__cs_skip, %__cs_spl, 1, !p;" in ptx
    skip = ptx.index("@%__cs_skip bra $__cs_spin_")
    call = calls(ptx, abi.PROBE_MBAR)[-1].pos
    assert skip < call < ptx.index("$__cs_spin_0:")
    assert "mov.u32 %__cs_spin, 0;" in ptx
    # the first failure in a row says so in its arg (abi.MB_WAIT_FIRST), after the sample
    first = ptx.index("set.eq.u32.u32 %__cs_spl, %__cs_spin, 1;")
    assert skip < first < ptx.index(f"and.b32 %__cs_spl, %__cs_spl, {abi.MB_WAIT_FIRST};") \
        < ptx.index("or.b32 %__cs_tok, %__cs_tok, %__cs_spl;") < call


def test_write_between_reads_keeps_them_apart():
    body = ("\tld.shared.f32 %f1, [%r1];\n\tst.shared.f32 [%r1+4], %f1;\n"
            "\tld.shared.f32 %f2, [%r1+4];\n")
    assert sites(body) == [("access.read", 4, 0), ("access.write", 4, 0), ("access.read", 4, 0)]


def test_label_barrier_and_redefinition_end_a_group():
    body = ("\tld.shared.f32 %f1, [%r1];\n$L1:\n\tld.shared.f32 %f2, [%r1+4];\n"
            "\tbar.sync 0;\n\tld.shared.f32 %f3, [%r1+8];\n\tadd.s32 %r1, %r1, 4;\n"
            "\tld.shared.f32 %f4, [%r1+12];\n")
    assert [s[1] for s in sites(body) if s[0] == "access.read"] == [4, 4, 4, 4]


def test_other_bases_and_predicates_do_not_merge():
    body = ("\tld.shared.f32 %f1, [%r1];\n\tld.shared.f32 %f2, [%r2+4];\n"
            "\t@%p1 ld.shared.f32 %f3, [%r1+4];\n")
    assert sites(body) == [("access.read", 4, 0)] * 3


def test_interleaved_groups_merge_separately():
    body = "".join(f"\tld.shared.f32 %f{i}, [%r1+{4 * i}];\n\tld.shared.f32 %f{i + 8}, "
                   f"[%r2+{4 * i}];\n" for i in range(4))
    assert sites(body) == [("access.read", 16, 3), ("access.read", 16, 3)]


def test_span_is_capped():
    body = "".join(f"\tld.shared.v4.f32 {{%f1, %f2, %f3, %f4}}, [%r1+{16 * i}];\n"
                   for i in range(6))
    assert sites(body) == [("access.read", 64, 3), ("access.read", 32, 1)]


HEAD64 = HEAD.replace("\t.reg .f32 %f<20>;\n", "\t.reg .f32 %f<20>;\n\t.reg .b64 %rd<20>;\n")
# NVRTC's unrolled ldmatrix loop (tests/kernels/mma_gemm.py): each matrix's address its own
# register, an add of a constant to a common 64-bit one, then cvt to 32 bits
LDMATRIX = ("\tcvt.u32.u64 %r1, %rd1;\n"
            "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r2,%r3,%r4,%r5}, [%r1];\n"
            "\tadd.s64 %rd2, %rd1, 1280;\n\tcvt.u32.u64 %r6, %rd2;\n"
            "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r7,%r8,%r9,%r10}, [%r6];\n"
            "\tadd.s64 %rd3, %rd1, 32;\n\tcvt.u32.u64 %r11, %rd3;\n"
            "{REDEFINE}"
            "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r12,%r13,%r14,%r15}, [%r11];\n"
            "\tadd.s64 %rd4, %rd1, 1312;\n\tcvt.u32.u64 %r16, %rd4;\n"
            "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r2,%r3,%r4,%r5}, [%r16];\n")


def test_addresses_offset_from_one_register_group_by_it():
    """The four matrices of a 2-D unrolled loop ([+0] [+1280] [+32] [+1312] from %rd1):
    two strided probes from %rd1, one per row of the loop, ldmatrix's shape kept."""
    ins = instrument(HEAD64 + LDMATRIX.replace("{REDEFINE}", "") + "\tret;\n}\n")
    reads = [s for s in ins.sites.sites if s.event == "access.read"]
    assert [(s.size, len(s.merged_lines)) for s in reads] == [(16, 1), (16, 1)]
    assert ins.ptx.count(f"call {abi.PROBE_ACCESS16},") == 2  # (16-byte reads: their entry)
    assert ins.ptx.count("mov.b64 %__cs_a, %rd1;") == 2  # both probes address %rd1
    assert "add.s64 %__cs_a, %__cs_a, 1280;" in ins.ptx
    assert [a[3] for a in args_of(ins.ptx, abi.PROBE_ACCESS16)] == [
        str((32 << abi.REP_STRIDE_SHIFT) | 2)] * 2


def test_a_root_redefined_between_keeps_the_accesses_apart():
    """%rd1 changes before the third access: the registers computed from the old value
    no longer name offsets of the new one."""
    body = LDMATRIX.replace("{REDEFINE}", "\tmov.u64 %rd1, %rd9;\n")
    ins = instrument(HEAD64 + body + "\tret;\n}\n")
    reps = [a[3] for a in args_of(ins.ptx, abi.PROBE_ACCESS16)]
    assert len(reps) == 3 and reps.count("1") == 2  # the first two in one, the others alone


def test_accesses_of_other_shapes_stay_apart():
    body = ("\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r2,%r3,%r4,%r5}, [%r1];\n"
            "\tldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r7,%r8}, [%r1+64];\n"
            "\tld.shared.f32 %f1, [%r1+128];\n")
    ins = instrument(HEAD + body + "\tret;\n}\n")
    assert ins.ptx.count(f"call {abi.PROBE_ACCESS16},") == 2  # the two ldmatrix
    assert ins.ptx.count(f"call {abi.PROBE_ACCESS},") == 1


def test_sixteen_byte_accesses_call_their_own_entry():
    """ldmatrix rows, cp.async 16 and v4 accesses (and runs merged to 16 bytes) call
    abi.PROBE_ACCESS16 with a rep word; atomics and other sizes keep the general probes."""
    r16 = abi.access_info(16, abi.MODE_READ, abi.SPACE_SHARED)
    assert abi.access_probe(r16, None) == (abi.PROBE_ACCESS16, 1)
    assert abi.access_probe(r16, 0x5002) == (abi.PROBE_ACCESS16, 0x5002)
    atomic16 = abi.access_info(16, abi.MODE_ATOMIC, abi.SPACE_SHARED)
    assert abi.access_probe(atomic16, None) == (abi.PROBE_ACCESS, None)
    w8 = abi.access_info(8, abi.MODE_WRITE, abi.SPACE_SHARED)
    assert abi.access_probe(w8, 0x5002) == (abi.PROBE_ACCESS_N, 0x5002)
    ins = instrument(HEAD + "\tld.shared.v4.f32 {%f1,%f2,%f3,%f4}, [%r1];\n\tret;\n}\n")
    assert [a[3] for a in args_of(ins.ptx, abi.PROBE_ACCESS16)] == ["1"]


def test_a_16_byte_cp_async_of_one_chunk_calls_the_copy_entry():
    """abi.PROBE_CP16 (the copy unit's write of one chunk, in a body of its own): a cp.async
    of 16 bytes; a run of them merged into one probe keeps PROBE_ACCESS16 and its rep."""
    cp16 = abi.access_info(16, abi.MODE_ASYNC_WRITE, abi.SPACE_SHARED)
    assert abi.access_probe(cp16, None) == (abi.PROBE_CP16, None)
    assert abi.access_probe(cp16, 0x1001) == (abi.PROBE_CP16, None)
    assert abi.access_probe(cp16, 0x1002) == (abi.PROBE_ACCESS16, 0x1002)
    ins = instrument(HEAD64 + "\tcp.async.cg.shared.global [%r1], [%rd1], 16;\n"
                     "\tcp.async.commit_group;\n\tret;\n}\n")
    (call,) = args_of(ins.ptx, abi.PROBE_CP16)
    assert len(call) == 3 and int(call[2]) == cp16
    assert not args_of(ins.ptx, abi.PROBE_ACCESS16)


def test_idempotent_stores_keep_their_mark_when_each_merged_store_is_one():
    """A store of an immediate to a constant address is probed with INFO_IDEM, and so is a
    span merged from such stores only (Triton's state word: a v2.b32 and a b32 of
    immediates); a span with any other store, or of 16 bytes, is an ordinary write
    (docs/model.md)."""
    head = HEAD.replace(".visible", ".shared .align 16 .b8 smem[64];\n.visible")

    def info(size: int, idem: bool) -> str:
        return str(abi.access_info(size, abi.MODE_WRITE, abi.SPACE_SHARED, idem=idem))

    def infos(ptx: str) -> list[str]:  # the info word of each access probe
        return [c.args[2] for c in calls(ptx) if c.func.startswith("__consan_access")]

    alone = instrument(head + "\tst.shared.b32 [smem+8], 0;\n\tret;\n}\n")
    assert info(4, True) in infos(alone.ptx)
    state_word = instrument(head + "\tst.shared.v2.b32 [smem+16], {0, 16843009};\n"
                            "\tst.shared.b32 [smem+24], 33686018;\n\tret;\n}\n")
    assert info(12, True) in infos(state_word.ptx)
    mixed = instrument(head + "\tst.shared.b32 [smem+8], 0;\n"
                       "\tst.shared.b32 [smem+12], %r1;\n\tret;\n}\n")
    assert info(8, False) in infos(mixed.ptx) and info(8, True) not in infos(mixed.ptx)
    wide = instrument(head + "\tst.shared.v2.b32 [smem+16], {0, 1};\n"
                      "\tst.shared.v2.b32 [smem+24], {2, 3};\n\tret;\n}\n")
    assert info(16, False) in infos(wide.ptx)


def _cp(i: int, off: int) -> str:
    return f"\tcp.async.cg.shared.global [%r1+{off}], [%rd{i}], 16;\n"


CP_HEAD = HEAD.replace("\t.reg .f32 %f<20>;\n", "\t.reg .f32 %f<20>;\n\t.reg .b64 %rd<9>;\n")


def cp_sites(body: str):
    ins = instrument(CP_HEAD + body + "\tret;\n}\n")
    return ins, [(s.event, s.size, len(s.merged_lines)) for s in ins.sites.sites
                 if s.event == "async.cp"]


def test_a_commit_groups_strided_copies_share_one_probe():
    """Triton's tile loads: four cp.async of 16 bytes, 4096 apart, then the commit."""
    ins, cps = cp_sites("".join(_cp(i, 4096 * i) for i in range(4))
                        + "\tcp.async.commit_group;\n")
    assert cps == [("async.cp", 16, 3)]
    assert [a[3] for a in args_of(ins.ptx, abi.PROBE_ACCESS16)] == [
        str((4096 << abi.REP_STRIDE_SHIFT) | 4)]


def test_a_commit_or_a_read_between_copies_keeps_them_apart():
    """The commit starts a new group (another clock); a read may touch the copy's bytes."""
    for between in ("\tcp.async.commit_group;\n", "\tld.shared.f32 %f1, [%r1+4096];\n"):
        _, cps = cp_sites(_cp(0, 0) + between + _cp(1, 4096) + "\tcp.async.commit_group;\n")
        assert cps == [("async.cp", 16, 0)] * 2, between


def test_copies_and_stores_do_not_merge_with_each_other():
    ins, cps = cp_sites(_cp(0, 0) + "\tst.shared.v4.f32 [%r1+16], {%f1, %f2, %f3, %f4};\n"
                        + _cp(1, 32) + "\tcp.async.commit_group;\n")
    assert cps == [("async.cp", 16, 0)] * 2
    assert [s.event for s in ins.sites.sites].count("access.write") == 1


def test_no_root_carries_past_a_label():
    """A label may be a loop's head (reached again after the body redefined the root) or a
    join (reached by a path that skipped the offset's definition): there an access is
    probed at its own address register, not at root + offset. (In a loop whose body moved
    %r2 after the read, the read's probe checked the new %r2 + 4 from the second trip on.)"""
    loop = ("\tadd.u32 %r10, %r2, 4;\n$L_loop:\n\tld.shared.u32 %r4, [%r10];\n\tbar.sync 0;\n"
            "\tadd.u32 %r2, %r2, 128;\n\tst.shared.u32 [%r2], %r3;\n"
            "\tsetp.lt.u32 %p1, %r2, 4096;\n\t@%p1 bra $L_loop;\n")
    join = ("\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $L_join;\n\tadd.u32 %r10, %r2, 4;\n"
            "$L_join:\n\tld.shared.u32 %r4, [%r10];\n")
    for body in (loop, join):
        ptx = instrument(HEAD + body + "\tret;\n}\n").ptx
        read = ptx.index("ld.shared.u32 %r4, [%r10];")
        probes = [c for c in calls(ptx[:read]) if c.func.startswith("__consan_") and c.args
                  and c.args[0] in ("%__cs_a", "%__cs_fx")]  # (fx: made together, echo.py)
        block = ptx[ptx.rindex("// consan", 0, probes[-1].pos):probes[-1].pos]
        assert "cvt.u64.u32 %__cs_a, %r10;" in block and "%r2" not in block
    # within one straight-line stretch the root still groups them
    straight = ("\tadd.u32 %r10, %r2, 4;\n\tld.shared.u32 %r4, [%r2];\n"
                "\tld.shared.u32 %r5, [%r10];\n")
    assert sites(straight) == [("access.read", 8, 1)]
