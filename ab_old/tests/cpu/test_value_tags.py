"""Value tags (instrument/value_tags.py): where the rewriter asks for them, each store's
probe is preceded by a call that hashes what the lane writes, so that the checker can tell
warps storing the same bytes (Triton's replicated layouts) from a race.waw."""

from __future__ import annotations

import re

import pytest

from consan import toolchain
from instrument import abi, fast_path
from instrument.events import Event
from instrument.rewrite import instrument
from tests.probe_calls import calls

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
    # (vector clocks: the call itself is predicated)
    ptx = _tagged("\tmbarrier.init.shared.b64 [%r2], 1;\n\t@%p1 st.shared.f32 [%r1], %f1;\n")
    assert re.search(rf"@%p1 {re.escape(CALL)}", ptx)
    # (phase mode: lanes outside the predicate branch past the inline publish and the call)
    ptx = _tagged("\t@%p1 st.shared.f32 [%r1], %f1;\n")
    m = re.search(r"@!%p1 bra (\$__cs_tag\d+)_done;", ptx)
    assert m and ptx.index(m.group(0)) < ptx.index(CALL) < ptx.index(f"{m.group(1)}_done:")


def test_a_coalesced_span_hashes_every_store_it_checks():
    """Triton's 16 v4 stores of one row are one probe: its tag covers all their values."""
    body = "".join(f"\tst.shared.v4.b32 [%r1+{16 * i}], {{%r2, %r3, %r4, %r5}};\n"
                   for i in range(4))
    ptx = _tagged(body)
    assert ptx.count(CALL) == 1
    block = "\n".join(_block(ptx))
    assert block.count("xor.b32 %__cs_h, %__cs_h, %__cs_x;") == 16


def test_a_store_whose_value_is_computed_after_the_span_opened_tags_on_its_own():
    """A span's tag is computed before its first store from every member's registers: a
    later store whose value register is set between them (Triton's `cvt` between stores)
    would be hashed with its old value (two warps storing different values then passed as
    replicas), so it starts a span and a tag of its own, after that definition."""
    body = ("\tst.shared.b32 [%r1], %r10;\n\tcvt.rn.f16x2.f32 %r11, %f1, %f1;\n"
            "\tst.shared.b32 [%r1+4], %r11;\n")
    ptx = _tagged(body)
    assert ptx.count(CALL) == 2
    second = ptx.index("// consan value of site 1")
    assert ptx.index("cvt.rn.f16x2.f32 %r11") < second < ptx.index("st.shared.b32 [%r1+4]")
    # set before the span, the values share one tag; without tags the span is one probe
    before = "\tcvt.rn.f16x2.f32 %r11, %f1, %f1;\n\tst.shared.b32 [%r1], %r10;\n" \
             "\tst.shared.b32 [%r1+4], %r11;\n"
    assert _tagged(before).count(CALL) == 1
    writes = [w for w in instrument(HEAD + body + TAIL).sites.sites
              if w.event == "access.write"]
    assert len(writes) == 1 and len(writes[0].merged_lines) == 1


def _publish(ptx: str) -> str:
    start = ptx.index("// consan value tag, published inline")
    return ptx[start:ptx.index("_done:", start)]


def test_a_phase_mode_store_publishes_its_tag_inline_before_its_test():
    """Phase mode in shared memory: the warp's record of the run (abi.value_tag_mix of the
    lanes' summed mixed tags and the site's salt) is stored at the fast-path record's
    addresses by the lowest active lane, then a warp sync and a fence, all before the
    store's inline test and update; the call remains for a warp without a record."""
    ins = instrument(HEAD + "\tst.shared.f32 [%r1], %f1;\n" + TAIL, value_tags=True)
    assert ins.inline_writes == 1
    ptx = ins.ptx
    code = _publish(ptx)
    salt = abi.value_tag_mix((0 + abi.VALUE_TAG_SALT) & 0xFFFFFFFF)  # (site 0)
    order = ["setp.eq.u32 %__cs_vq, %__cs_fast, 0;", "activemask.b32 %__cs_v1;",
             "redux.sync.add.u32 %__cs_v0, %__cs_v0, %__cs_v1;",
             f"xor.b32 %__cs_v0, %__cs_v0, {salt};",
             "or.b32 %__cs_v0, %__cs_v0, 1;", "mov.u32 %__cs_v2, %lanemask_lt;",
             f"[%__cs_fast+{4 * abi.PSH_FAST_STORE_SITE}];",
             "@%__cs_vq st.volatile.shared.u32 [%__cs_v3], 0;",
             "@%__cs_vq st.volatile.shared.u32 [%__cs_v4], %__cs_v0;",
             "bar.warp.sync %__cs_v1;", "membar.cta;"]
    at = [code.index(x) for x in order]
    assert at == sorted(at)
    assert code.count(f"mul.lo.u32 %__cs_v0, %__cs_v0, {abi.VALUE_TAG_MIX1};") == 2
    # the tag's own hash comes first; the fallback call and the store's test after
    assert ptx.index("mov.b32 %__cs_x, %f1;") < ptx.index(code) < ptx.index(CALL) < \
        ptx.index("// consan fast path")
    assert abi.PSH_FAST_STORE_TAG == abi.PSH_FAST_STORE_SITE + 1  # (one v2 load)


def test_the_mix_is_murmur3s_finaliser():
    """abi.value_tag_mix, which the inline publish applies, is the checker's cs_mix (the
    checker takes the same constants from the ABI header)."""
    assert abi.value_tag_mix(0) == 0
    assert abi.value_tag_mix(1) == 0x514E28B7  # (murmur3 fmix32(1))
    h = abi.c_header()
    assert f"#define CS_VALUE_TAG_MIX1 {abi.VALUE_TAG_MIX1}u" in h
    assert f"#define CS_VALUE_TAG_SALT {abi.VALUE_TAG_SALT}u" in h


def _tag_site(ptx: str) -> int:
    return int(re.search(r"// consan value of site (\d+)", ptx).group(1))


def test_a_store_guarded_by_a_negated_predicate_publishes_only_where_it_stores():
    """`@!%p2 st`: the lanes with %p2 set make no store, so they branch past the inline
    publish and its fallback call (the record's store_site/store_tag words are not theirs
    to write, and redux.sync sums only the storing lanes' tags); the others publish and
    then take the store's test, whose guard is %p2's negation."""
    ins = instrument(HEAD + "\t@!%p2 st.shared.f32 [%r1], %f1;\n" + TAIL, value_tags=True)
    assert ins.inline_writes == 1
    ptx = ins.ptx
    code = _publish(ptx)
    m = re.search(r"@%p2 bra (\$__cs_tag\d+)_done;", code)
    assert m and "@!%p2 bra" not in code
    assert code.index(m.group(0)) < code.index("setp.eq.u32 %__cs_vq, %__cs_fast, 0;") < \
        code.index("redux.sync")
    assert ptx.index(code) < ptx.index(CALL) < ptx.index(f"{m.group(1)}_done:") < \
        ptx.index("// consan fast path")
    test = ptx[ptx.index("// consan fast path"):]
    assert re.search(r"@%p2 bra \$__cs_slow\d+_join;", test)  # (no store: no call of its own)


@pytest.mark.parametrize("store,words,n", [
    ("st.shared.v2.u32 [%r1], {%r2, %r3}", ["%r2", "%r3"], 2),
    ("st.shared.v4.f32 [%r1], {%f1, %f2, %f3, %f4}", ["%f1", "%f2", "%f3", "%f4"], 4),
])
def test_a_tagged_store_of_several_granules_publishes_then_takes_its_update(store, words, n):
    """An 8- or 16-byte store's tag hashes its address and each word in order; in phase
    mode the tag is published inline first, then the store's test and update over its two
    or four granules (a compare-and-swap each), then its probe: the write is judged
    against records that already hold this run's tag (docs/model.md, *Replicated
    stores*)."""
    ins = instrument(HEAD + f"\t{store};\n" + TAIL, value_tags=True)
    assert ins.inline_writes == 1
    ptx = ins.ptx
    hashed = [ptx.index(f"mov.b32 %__cs_x, {w};") for w in words]
    assert hashed == sorted(hashed)
    published = ptx.index("// consan value tag, published inline")
    test = ptx.index("// consan fast path")
    assert hashed[-1] < published < test
    assert ptx[test:].count("atom.shared.cas.b64") == n
    site = _tag_site(ptx)
    # (the probe made by the test's lanes together: echo.py)
    probe = f"call {abi.PROBE_ACCESS if n == 2 else abi.PROBE_ACCESS16}, (%__cs_fx, {site},"
    assert test < ptx.index(probe)
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


@pytest.mark.parametrize("many", [False, True])
def test_without_a_record_a_tagged_store_still_calls_the_store_value_probe(many):
    """Where the begin probe returned no record (0: the other builds, or phase tables in
    device memory) the inline publish branches to its `_call` label, where the store-value
    probe is called with the lane's tag and the store's site, exactly as without the
    inline code; with a record the publish branches past that call. So is it at each store
    where the module's function takes the probes' place (more than INLINE_MAX stores)."""
    n = fast_path.INLINE_MAX + 1 if many else 1
    body = "\tst.shared.f32 [%r1], %f1;\n\tadd.s32 %r1, %r1, 4;\n" * n
    ins = instrument(HEAD + body + TAIL, value_tags=True)
    ptx = ins.ptx
    assert ptx.count("// consan value tag, published inline") == n
    sites = []
    for m in re.finditer(r"// consan value tag, published inline", ptx):
        code = ptx[m.start():]
        label = re.search(r"(\$__cs_tag\d+)_call;", code).group(1)
        code = code[:code.index(f"{label}_done:") + len(label) + 6]
        assert re.search(rf"setp\.eq\.u32 %__cs_vq, %__cs_fast, 0;\s*"
                         rf"@%__cs_vq bra {re.escape(label)}_call;", code)
        inline, fallback = code.split(f"{label}_call:")
        assert re.search(rf"membar\.cta;\s*bra {re.escape(label)}_done;\s*\}}\s*$", inline)
        (call,) = calls(fallback)
        assert call.func == abi.PROBE_STORE_VALUE and call.pred is None
        assert call.args[0] == "%__cs_h"
        sites.append(int(call.args[1]))
        assert fallback.rstrip().endswith(f"}}\n\t{label}_done:")
        # the store's own probe (or the function in its place) follows with the same site
        after = ptx[m.start() + len(code):]
        nxt = next(c for c in calls(after) if c.func != abi.PROBE_WRITE_READERS)
        assert nxt.args[1] == str(sites[-1])
    assert sites == [s.id for s in ins.sites.sites if s.event == Event.WRITE.value]
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)
