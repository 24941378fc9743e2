"""Value tags (instrument/value_tags.py): where the rewriter asks for them, each store's
probe is preceded by a call that hashes what the lane writes, so that the checker can tell
warps storing the same bytes (Triton's replicated layouts) from a race.waw."""

from __future__ import annotations

import re

import pytest

from instrument import abi
from instrument.rewrite import instrument

HEAD = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
{
\t.reg .pred %p<3>;
\t.reg .b16 %rs<8>;
\t.reg .b32 %r<20>;
\t.reg .f32 %f<8>;
\t.reg .b64 %rd<8>;
"""
TAIL = "\tret;\n}\n"
CALL = f"call {abi.PROBE_STORE_VALUE},"


def _tagged(body: str, tags: bool = True) -> str:
    return instrument(HEAD + body + TAIL, value_tags=tags).ptx


def _block(ptx: str) -> list[str]:
    """The lines of the (first) value-tag call's block."""
    start = ptx.index("// consan value of site")
    return ptx[start:ptx.index(CALL, start)].splitlines()


def test_stores_pass_a_tag_before_their_access_probe():
    ptx = _tagged("\tst.shared.f32 [%r1], %f1;\n")
    assert ptx.count(CALL) == 1
    assert ptx.index(CALL) < ptx.index(f"call {abi.PROBE_ACCESS},")
    assert "\tmov.b32 %__cs_x, %f1;" in _block(ptx)


def test_without_the_option_nothing_changes():
    body = "\tst.shared.f32 [%r1], %f1;\n"
    assert _tagged(body, tags=False) == instrument(HEAD + body + TAIL).ptx
    assert CALL not in _tagged(body, tags=False)


@pytest.mark.parametrize("body", [
    "\tld.shared.f32 %f1, [%r1];\n",  # a load
    "\tatom.shared.add.u32 %r2, [%r1], 1;\n",  # an atomic: atomics never race each other
    "\tst.shared.b32 [k_smem+8], 0;\n",  # an idempotent store has its own rule
])
def test_only_plain_stores_carry_a_tag(body):
    head = HEAD.replace(".visible", ".shared .align 4 .b8 k_smem[64];\n.visible")
    assert CALL not in instrument(head + body + TAIL, value_tags=True).ptx


def test_the_tag_hashes_the_address_and_each_stored_word_in_order():
    block = _block(_tagged("\tst.shared.v2.b32 [%r1], {5, %r2};\n"))
    mixes = [ln.strip() for ln in block if ln.strip().startswith("xor.b32 %__cs_h")]
    assert mixes == [f"xor.b32 %__cs_h, %__cs_h, {abi.VALUE_TAG_SEED};",
                     "xor.b32 %__cs_h, %__cs_h, 5;", "xor.b32 %__cs_h, %__cs_h, %__cs_x;"]
    assert any("cvt.u32.u64 %__cs_h, %__cs_a;" in ln for ln in block)


def test_narrow_values_keep_only_the_stored_bytes():
    """A byte stored from a 16-bit register hashes that byte alone: warps whose registers
    differ above it store the same bytes."""
    block = "\n".join(_block(_tagged("\tst.shared.u8 [%r1], %rs1;\n")))
    assert "mov.b32 %__cs_x, {%rs1, %rs1};" in block
    assert "and.b32 %__cs_x, %__cs_x, 255;" in block
    neg = "\n".join(_block(_tagged("\tst.shared.b16 [%r1], -1;\n")))
    assert "xor.b32 %__cs_h, %__cs_h, 65535;" in neg


def test_64_bit_values_hash_both_words():
    block = "\n".join(_block(_tagged("\tst.shared.b64 [%r1], %rd1;\n")))
    assert block.count("xor.b32 %__cs_h, %__cs_h, %__cs_x;") == 2
    assert "shr.b64 %__cs_y, %__cs_y, 32;" in block


def test_a_predicated_store_tags_under_its_predicate():
    ptx = _tagged("\t@%p1 st.shared.f32 [%r1], %f1;\n")
    assert re.search(rf"@%p1 {re.escape(CALL)}", ptx)


def test_a_coalesced_span_hashes_every_store_it_checks():
    """Triton's 16 v4 stores of one row are one probe: its tag covers all their values."""
    body = "".join(f"\tst.shared.v4.b32 [%r1+{16 * i}], {{%r2, %r3, %r4, %r5}};\n"
                   for i in range(4))
    ptx = _tagged(body)
    assert ptx.count(CALL) == 1
    block = "\n".join(_block(ptx))
    assert block.count("xor.b32 %__cs_h, %__cs_h, %__cs_x;") == 16
