"""The silent-store test the rewriter puts before a plain st.shared (instrument/silent.py):
which stores get it, what it compares, and that every form assembles with the checker."""

from __future__ import annotations

import re

import pytest

from consan import toolchain
from instrument import abi
from instrument.rewrite import instrument

HEADER = ".version 8.0\n.target sm_90a\n.address_size 64\n"
DECLS = """
.extern .shared .align 16 .b8 smem[];
.visible .entry k(.param .u64 out)
{
\t.reg .pred %p<3>;
\t.reg .b16 %rs<6>;
\t.reg .b32 %r<12>;
\t.reg .f32 %f<4>;
\t.reg .b64 %rd<4>;
\tmov.u32 %r1, smem;
\tmov.u32 %r2, %tid.x;
\tcvt.rn.f32.u32 %f1, %r2;
\tcvt.u16.u32 %rs1, %r2;
\tsetp.lt.u32 %p1, %r2, 32;
"""


def _kernel(body: str) -> str:
    return HEADER + DECLS + body + "\n\tret;\n}\n"


def _probes(ptx: str) -> list[str]:
    """Each access probe's code up to its call, in order."""
    return [chunk.split("call __consan_access")[0] + "call"
            for chunk in ptx.split("{ // consan site")[1:] if "call __consan_access" in chunk]


def _tested(scope: str) -> bool:
    return "vote.sync.all.pred %__cs_q" in scope and "], %__cs_in;\n" in scope


def test_a_store_of_a_constant_compares_the_word_it_overwrites():
    ins = instrument(_kernel("\tst.shared.b32 [smem+560], 0;"))
    (scope,) = _probes(ins.ptx)
    assert "ld.shared.b32 %__cs_sv0, [smem+560];" in scope
    assert "setp.eq.and.b32 %__cs_q, %__cs_sv0, 0, %__cs_q;" in scope
    info = abi.access_info(4, abi.MODE_WRITE, abi.SPACE_SHARED)
    assert f"selp.b32 %__cs_in, {info | abi.INFO_SILENT}, {info}, %__cs_q;" in scope
    assert _tested(scope)


def test_a_predicated_store_loads_and_compares_under_its_predicate():
    ins = instrument(_kernel("\t@%p1 st.shared.v2.b32 [%r1+8], {%r2, 7};"))
    (scope,) = _probes(ins.ptx)
    assert "@%p1 ld.shared.v2.b32 {%__cs_sv0, %__cs_sv1}, [%r1+8];" in scope
    assert "@%p1 setp.eq.and.b32 %__cs_q, %__cs_sv1, 7, %__cs_q;" in scope


def test_a_narrow_store_compares_only_the_bytes_it_writes():
    ins = instrument(_kernel("\tst.shared.b8 [%r1], %rs1;"))
    (scope,) = _probes(ins.ptx)
    assert "ld.shared.u8 %__cs_sv0, [%r1];" in scope
    assert "and.b16 %__cs_sm, %rs1, 255;" in scope
    assert "setp.eq.and.b16 %__cs_q, %__cs_sv0, %__cs_sm, %__cs_q;" in scope


def test_a_float_store_compares_bits_not_values():
    ins = instrument(_kernel("\tst.shared.f32 [%r1], %f1;"))
    (scope,) = _probes(ins.ptx)
    assert "setp.eq.and.b32 %__cs_q, %__cs_sv0, %f1, %__cs_q;" in scope  # -0 != +0


@pytest.mark.parametrize("store", [
    "st.volatile.shared.b32 [%r1], %r2;",
    "st.release.cta.shared.b32 [%r1], %r2;",
    "st.b32 [%rd1], %r2;",  # generic: maybe not shared memory at all
    "atom.shared.add.u32 %r3, [%r1], 1;",
])
def test_qualified_generic_and_atomic_stores_keep_a_constant_info_word(store):
    ins = instrument(_kernel("\tcvt.u64.u32 %rd1, %r1;\n\t" + store))
    scopes = _probes(ins.ptx)
    assert scopes and not any(_tested(s) for s in scopes)


def test_merged_stores_are_compared_each_at_its_own_address():
    ins = instrument(_kernel("\tst.shared.b16 [%r1], %rs1;\n\tst.shared.b16 [%r1+4], %rs2;"))
    (scope,) = _probes(ins.ptx)  # one probe covers both
    assert "ld.shared.b16 %__cs_sv0, [%r1];" in scope
    assert "ld.shared.b16 %__cs_sv0, [%r1+4];" in scope
    assert "setp.eq.and.b16 %__cs_q, %__cs_sv0, %rs2, %__cs_q;" in scope


def test_merged_stores_whose_later_value_is_computed_after_the_probe_are_not_tested():
    ins = instrument(_kernel("\tst.shared.b16 [%r1], %rs1;\n\tadd.u16 %rs2, %rs1, 1;\n"
                             "\tst.shared.b16 [%r1+4], %rs2;"))
    (scope,) = _probes(ins.ptx)
    assert not _tested(scope)


def test_every_tested_form_assembles_with_the_checker():
    body = "\n\t".join([
        "st.shared.b32 [smem+560], 0;", "st.shared.b32 [smem+564], 16843009;",
        "@%p1 st.shared.v2.b32 [%r1+8], {%r2, 7};", "st.shared.b8 [%r1], %rs1;",
        "st.shared.f32 [%r1+16], %f1;", "st.shared.v4.b32 [%r1+32], {%r2, %r2, %r2, %r2};",
        "st.shared.b16 [%r1+64], %rs1;", "st.shared.b16 [%r1+68], %rs1;",
        "st.shared.b64 [%r1+128], -1;", "st.shared.f32 [%r1+136], 0f3F800000;",
        "st.shared::cta.u16 [%r1+140], 0x3C00;", "st.shared.b8 [%r1+142], -2;"])
    ins = instrument(_kernel("\t" + body))
    probes = _probes(ins.ptx)  # (neighbours share one; each store has its own load)
    assert probes and all(_tested(s) for s in probes)
    loaded = re.findall(r"ld\.shared\S* \S+(?:, \S+)*, (\[[^\]]+\]);", "".join(probes))
    assert sorted(loaded) == sorted(re.findall(r"(\[[^\]]+\]), ", body))
    cubin = toolchain.link_with_checker(ins, "silent", toolchain.Arch.parse("sm_90a"))
    assert cubin[:4] == b"\x7fELF"
