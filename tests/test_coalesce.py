"""Probe merging: neighbouring accesses share one probe only when no verdict can change."""

from __future__ import annotations

from instrument.rewrite import instrument

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


def test_gap_makes_two_probes():
    assert sites("\tld.shared.f32 %f1, [%r1];\n\tld.shared.f32 %f2, [%r1+8];\n") == [
        ("access.read", 4, 0), ("access.read", 4, 0)]


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
