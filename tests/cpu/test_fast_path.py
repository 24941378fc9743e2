"""The inline test before an access probe in a loop (instrument/fast_path.py): which accesses
take it, and that the rewritten module links with the phase-mode checker. The GPU side (a
race after a loop of shared atomics or of read-modify-writes is still reported; the clean
twins compute the native bits) is the `atomics` and `rmw` twins of tests/gpu/test_races.py,
and bench_clean's histogram256 under tests/gpu/test_races.py's clean kernels."""

from __future__ import annotations

import re

import pytest

from consan import toolchain
from instrument import abi, fast_path
from instrument.rewrite import instrument
from tests.cpu.test_first_trip import HEAD, NEXT  # (the same kernel head and loop branch)
from tests.probe_calls import calls

# (a loop whose address changes every trip: never checked on its first trip only)
STEP = "\tadd.s32 %r2, %r2, 4;\n\tand.b32 %r2, %r2, 1020;\n"


def rewritten(access: str, *, looped: bool = True, extra: str = "", value_tags: bool = False):
    body = f"$L_loop:\n{access}{STEP}{NEXT}" if looped else access
    return instrument(HEAD + extra + body + "\tret;\n}\n", "k.ptx", value_tags=value_tags)


def fast_tests(ptx: str) -> int:
    return ptx.count("// consan fast path")


def kernel(ptx: str) -> str:
    """The entry's text (without the module's own functions of fast_path.function)."""
    return ptx[ptx.index(".visible .entry"):]


def function(ptx: str, name: str) -> str:
    m = re.search(rf"^\.func {name} \(.*?^}}", ptx, re.S | re.M)
    assert m, name
    return m.group(0)


@pytest.mark.parametrize("access", [
    "\tatom.shared.add.u32 %r4, [%r2], 1;\n",
    "\tld.shared.u32 %r4, [%r2];\n",
    "\tld.shared.v4.u32 {%r4, %r5, %r6, %r7}, [%r2];\n",
    "\tst.shared.u32 [%r2], %r3;\n",
    "\t@%p2 red.shared.add.u32 [%r2], 1;\n",
])
def test_an_access_in_a_loop_takes_the_inline_test(access):
    ins = rewritten(access)
    assert ins.phase_mode and ins.first_trip_loops == []
    assert ins.fast_paths == 1 and fast_tests(kernel(ins.ptx)) == 1
    # the test branches past the probe (or the module's function that takes its place),
    # or falls into it
    assert re.search(r"bra \$__cs_fast(\d+);.*\$__cs_slow\1:.*call __consan_\w*,.*"
                     r"\$__cs_fast\1:", ins.ptx, re.S)
    # the record comes from the CTA's begin probe
    assert f"call (__cs_rb), {abi.PROBE_CTA_BEGIN}; ld.param.b32 %__cs_fast" in ins.ptx
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


@pytest.mark.parametrize("case,access,kw", [
    ("outside a loop", "\tatom.shared.add.u32 %r4, [%r2], 1;\n", {"looped": False}),
    ("a generic address", "\tatom.add.u32 %r4, [%rd1], 1;\n",
     {"extra": "\t.reg .b64 %rd<2>;\n"}),
    ("vector clocks (an mbarrier in the module)", "\tatom.shared.add.u32 %r4, [%r2], 1;\n",
     {"extra": "\tmbarrier.init.shared.b64 [s+512], 1;\n"}),
])
def test_accesses_that_always_call(case, access, kw):
    assert fast_tests(rewritten(access, **kw).ptx) == 0, case


def _update_calls(ptx: str, entry: str) -> tuple[str, str, str]:
    """(the probe's call block, its site, the update's call block) of one access."""
    probe = re.search(r"\$__cs_slow\d+:\s*(\{ // consan site (\d+).*?\})", ptx, re.S)
    call = re.search(rf"(\{{ // consan site \d+[^}}]*call {entry},[^}}]*\}})", ptx)
    assert probe and call
    return probe.group(1), probe.group(2), call.group(1)


@pytest.mark.parametrize("looped", [False, True])
@pytest.mark.parametrize("access,count,atom,entry,site_reg", [
    # a write: where the granule holds no epoch of this phase, the epoch (a compare-and-swap)
    # and site are stored inline; only a read of this phase calls the look for readers
    ("st.shared.u32 [%r2], %r3", "inline_writes", "cas.b64", abi.PROBE_WRITE_READERS, 8),
    # a read: the warp's bit (a shared atomic), its site and phase are stored inline; only a
    # granule never written or written by another warp in this phase calls the verdict
    ("ld.shared.u32 %r4, [%r2]", "inline_reads", "or.b32", abi.PROBE_READ_JUDGE, 6),
    ("@%p2 ld.shared.u8 %rs1, [%r2+3]", "inline_reads", "or.b32", abi.PROBE_READ_JUDGE, 6),
])
def test_an_update_is_written_out_where_the_test_fails(looped, access, count, atom, entry,
                                                       site_reg):
    """The update's call to the checker passes the probe's own site and info."""
    ins = rewritten(f"\t{access};\n", looped=looped, extra="\t.reg .b16 %rs<2>;\n")
    assert fast_tests(ins.ptx) == 1 == getattr(ins, count) and ins.fast_paths == looped
    assert ins.ptx.count(f"atom.shared.{atom}") == 1 and "membar.cta;" in ins.ptx
    probe, site, call = _update_calls(ins.ptx, entry)
    assert call == probe.replace(f"call {abi.PROBE_ACCESS},", f"call {entry},")
    assert f"st.volatile.shared.u32 [%__cs_fr{site_reg}], {site};" in ins.ptx  # its site
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


def test_a_module_with_many_updates_calls_one_function_per_kind(monkeypatch):
    """Past fast_path.INLINE_MAX accesses with an update, each calls the module's function
    for its kind and size in place of its probe, with the probe's site and info (and its
    guard); an access in a loop keeps its inline test in front of that call."""
    n = fast_path.INLINE_MAX // 2 + 1
    body = "".join(f"\tst.shared.u32 [%r2+{4 * k}], %r3;\n"
                   f"\t@%p2 ld.shared.u8 %rs1, [%r2+{4 * k + 1}];\n" for k in range(n))
    ins = rewritten(body, looped=False, extra="\t.reg .b16 %rs<2>;\n")
    assert ins.inline_writes == n == ins.inline_reads and ins.fast_paths == 0
    k = kernel(ins.ptx)
    assert f"call {abi.PROBE_ACCESS}," not in k and fast_tests(k) == 0
    assert k.count("\tcall __consan_inline_write4, (") == n
    assert k.count("\t@%p2 call __consan_inline_read1, (") == n
    assert "mov.u32 %__cs_info, 260;" in function(ins.ptx, "__consan_inline_write4")  # (size
    # 4, a write, .shared: the probe's info word)
    for name, atom, entry in (("__consan_inline_write4", "cas.b64", abi.PROBE_WRITE_READERS),
                              ("__consan_inline_read1", "or.b32", abi.PROBE_READ_JUDGE)):
        fn = function(ins.ptx, name)
        assert ins.ptx.count(f".func {name} (") == 1
        assert fn.count(f"atom.shared.{atom}") == 1 and "membar.cta;" in fn
        assert fn.count(f"call {entry},") == 1 and fn.count(f"call {abi.PROBE_ACCESS},") == 1
        assert "%__cs_site;" in fn  # the site the caller passed
    monkeypatch.setenv("CONSAN_INLINE_MAX", "0")  # (the GPU tests' switch: functions only)
    one = rewritten("\tst.shared.u32 [%r2], %r3;\n", looped=False)
    assert kernel(one.ptx).count("\tcall __consan_inline_write4, (") == 1
    monkeypatch.delenv("CONSAN_INLINE_MAX")
    looped = rewritten(body, extra="\t.reg .b16 %rs<2>;\n")
    assert looped.fast_paths == 2 * n and fast_tests(kernel(looped.ptx)) == 2 * n
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


@pytest.mark.parametrize("case,access,kw", [
    ("an 8-byte read", "\tld.shared.v2.u32 {%r4, %r5}, [%r2];\n", {}),
])
def test_outside_loops_only_inline_updates_take_the_test(case, access, kw):
    ins = rewritten(access, looped=False, **kw)
    assert fast_tests(ins.ptx) == 0 and "atom.shared" not in ins.ptx, case


def test_wider_reads_in_loops_take_the_test_without_the_update():
    ins = rewritten("\tld.shared.v2.u32 {%r4, %r5}, [%r2];\n")
    assert fast_tests(ins.ptx) == 1 == ins.fast_paths and ins.inline_reads == 0
    assert "atom.shared.or" not in ins.ptx


def test_every_build_links_the_begin_probe_that_returns_the_record():
    """The phase build in device memory and the vector-clock builds return 0 (no record)."""
    ins = rewritten("\tatom.shared.add.u32 %r4, [%r2], 1;\n")
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"))
    vc = rewritten("\tatom.shared.add.u32 %r4, [%r2], 1;\n",
                   extra="\tmbarrier.init.shared.b64 [s+512], 1;\n")
    toolchain.link_with_checker(vc, "k", toolchain.Arch.parse("sm_90a"), vsh=True)


def test_the_record_follows_the_bitmaps_on_a_16_byte_boundary():
    for granules, nwarps in [(262, 8), (1, 1), (2048, 32), (33, 3)]:
        bitmaps = 20 * granules + 8 * nwarps * abi.bitmap_words(granules)
        start = (bitmaps + 15) // 16 * 16
        assert abi.psh_bytes(granules, nwarps, fast=True) >= start + abi.PSH_FAST_BYTES * nwarps
        assert abi.psh_bytes(granules, nwarps) == (bitmaps + 15) // 16 * 16


def test_the_bench_kernels_take_the_inline_updates():
    """bench_clean's stencil (its tile and halo writes; its read is a coalesced probe) and
    transpose (its tile's rows written, its columns read) as NVRTC compiles them."""
    from tests.kernels import gpu_kernels as K

    for name, writes, reads in (("stencil_1d", 3, 0), ("transpose_tiled", 4, 4)):
        ptx = toolchain.compile_cuda(K.CLEAN[name], f"{name}.cu", ["-arch=compute_90", "-lineinfo"])
        ins = instrument(ptx, f"{name}.ptx")
        assert ins.ptx.count(f"call {abi.PROBE_WRITE_READERS},") == writes == ins.inline_writes
        assert ins.ptx.count(f"call {abi.PROBE_READ_JUDGE},") == reads == ins.inline_reads


def test_a_module_whose_only_inline_code_is_updates_keeps_the_record():
    """Without the record (FLAG_PSH_FAST) every inline test fails and each access calls."""
    from consan.layout import Layout, Placement

    for access in ("\tst.shared.u32 [%r2], %r3;\n", "\tld.shared.u32 %r4, [%r2];\n"):
        ins = rewritten(access, looped=False)
        assert ins.fast_paths == 0 and ins.inline_tests
        lay = Layout.for_module(ins, nwarps=8, nthreads=256, window_bytes=1024,
                                log_capacity=64, placement=Placement.PHASE_SMEM)
        assert lay.psh_fast and lay.flags & abi.FLAG_PSH_FAST


def test_the_gpu_twins_take_the_inline_test():
    """The `atomics` and `rmw` twins of tests/kernels/gpu_kernels.py as NVRTC compiles them:
    their loops' accesses take the test (and are not checked on the first trip only)."""
    from tests.kernels import gpu_kernels as K

    for key in ("atomics", "rmw"):
        twin = K.TWIN_BY_KEY[key]
        for name, src in ((twin.racy_name, twin.racy_src), (twin.clean_name, twin.clean_src)):
            ptx = toolchain.compile_cuda(src, f"{name}.cu", ["-arch=compute_90", "-lineinfo"])
            ins = instrument(ptx, f"{name}.ptx")
            assert ins.first_trip_loops == [] and fast_tests(ins.ptx) >= 1, name


@pytest.mark.parametrize("many", [False, True])
def test_a_store_with_a_value_tag_takes_the_update_after_publishing_its_tag(many):
    """Triton's stores pass a value tag: the tag is published first (value_tags.publish),
    then the store's test and update as any plain write's; with more than INLINE_MAX such
    stores, the module's function takes the probe's place after each publish."""
    n = fast_path.INLINE_MAX + 1 if many else 1
    body = "\tst.shared.u32 [%r2], %r3;\n\tadd.s32 %r2, %r2, 4;\n" * n  # (not one span)
    ins = rewritten(body, looped=False, value_tags=True)
    assert ins.inline_writes == n
    k = kernel(ins.ptx)
    assert k.count("// consan value tag, published inline") == n
    if many:
        assert k.count("\tcall __consan_inline_write4, (") == n
        assert k.index("published inline") < k.index("call __consan_inline_write4")
    else:
        assert k.index("published inline") < k.index("// consan fast path")
        assert k.count(f"call {abi.PROBE_WRITE_READERS},") == 1
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


@pytest.mark.parametrize("store,n", [("st.shared.u16 [%r2+2], %rs1", 1),
                                     ("st.shared.v2.u32 [%r2], {%r3, %r3}", 2),
                                     ("st.shared.v4.u32 [%r2], {%r3, %r3, %r3, %r3}", 4),
                                     ("st.shared.v2.u64 [%r2], {%rd1, %rd1}", 4)])
def test_a_store_of_several_granules_or_less_than_one_takes_the_update(store, n):
    """A 2-byte store writes its granule (as the probe takes it); one of 8 or 16 bytes, its
    two or four granules: each epoch swapped (a compare-and-swap, the probe's verdict where
    one fails) and its site stored, one fence, each granule's read phase looked at; the
    checker's look for readers takes the probe's address, site and info (a 16-byte store's
    own probe is PROBE_ACCESS16, with a count)."""
    extra = "\t.reg .b16 %rs<2>;\n\t.reg .b64 %rd<2>;\n"
    ins = rewritten(f"\t{store};\n", looped=False, extra=extra)
    assert ins.inline_writes == 1 and fast_tests(ins.ptx) == 1
    k = kernel(ins.ptx)
    assert k.count("atom.shared.cas.b64") == n and k.count("membar.cta;") == 1
    assert len(re.findall(r"st\.volatile\.shared\.u32 \[%__cs_fr8(\+\d+)?\], 0;", k)) == n
    if n > 1:  # (the epochs in 16-byte loads)
        assert k.count("ld.volatile.shared.v4.u32 {%__cs_fw") == n // 2
    (look,) = calls(k, abi.PROBE_WRITE_READERS)  # (the probe's address, site and info)
    (probe,) = [c for c in calls(k) if c.func in (abi.PROBE_ACCESS, abi.PROBE_ACCESS16)]
    assert look.args == probe.args[:3] and look.args[1] == "0"
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


@pytest.mark.parametrize("guard", ["@%p2", "@!%p2"])
@pytest.mark.parametrize("store", ["st.shared.v2.u32 [%r2], {%r3, %r3}",
                                   "st.shared.v4.u32 [%r2], {%r3, %r3, %r3, %r3}",
                                   "st.shared.u32 [%r2], %r3",
                                   "ld.shared.u32 %r4, [%r2]"])
@pytest.mark.parametrize("looped", [False, True])
def test_lanes_that_skip_a_guarded_access_leave_before_the_test_loads(guard, store, looped):
    """A lane whose guard is off never makes the access, so its address may be anything (a
    v2 store's lane holding an address 4 mod 8): it leaves for the probe's own guarded call
    before the test loads the record or the epochs at that address, as it skips the probe.
    (The guard once came after the loads: such a lane's 16-byte epoch load was misaligned.)"""
    ins = rewritten(f"\t{guard} {store};\n", looped=looped)
    k = kernel(ins.ptx)
    block = k[k.index("// consan fast path"):]
    block = block[:block.index("\n}")]
    first_load = re.search(r"\bld\.(volatile\.)?shared", block).start()
    if guard == "@%p2":
        fold = block.index("and.pred %__cs_fq0, %__cs_fq0, %p2;")
    else:
        fold = block.index("and.pred %__cs_fq0, %__cs_fq0, %__cs_fq1;")
        assert block.index("not.pred %__cs_fq1, %p2;") < fold
    leave = block.index("@!%__cs_fq0 bra")
    assert fold < leave < first_load
    # where such a lane goes, the probe is called under the access's own guard
    probe = [c for c in calls(k) if c.func in (abi.PROBE_ACCESS, abi.PROBE_ACCESS16)]
    assert probe and all(c.pred == guard for c in probe)
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)
