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
from tests import corpus_build
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


def together(ptx: str, c) -> list[str]:
    """A fast-path call's arguments as a lane that makes the access passes them: the calls
    are made by the test's lanes together (instrument/echo.py), the others passing the
    first such lane's address and INFO_ECHO; checks that form."""
    head = ptx.rindex("vote.sync.ballot.b32", 0, c.pos)
    block = ptx[head:c.pos]
    assert c.pred is None and c.args[0] == "%__cs_fx" and c.args[2] == "%__cs_fi", c
    addr = re.search(r"@%__cs_fon mov\.b64 %__cs_fx, (%[\w$]+);", block)
    info = re.search(r"selp\.b32 %__cs_fi, (\d+), (\d+), %__cs_fon;", block)
    assert addr and info and int(info.group(2)) == int(info.group(1)) | abi.INFO_ECHO, block
    assert ", %__cs_fon, %__cs_fm;" in block and "@%__cs_fno bra" in block
    return [addr.group(1), c.args[1], info.group(1), *c.args[3:]]


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
    # each lane's test ends where the lanes meet: past the probe (or the module's function
    # that takes its place) where none needs it, else every lane calls it
    assert re.search(r"\$__cs_slow(\d+)_join:\s*setp[^\n]*\n\s*vote\.sync\.any\.pred [^\n]*"
                     r"%__cs_fm;\s*@!%__cs_fq0 bra \$__cs_fast\1;.*call __consan_\w*,.*"
                     r"\$__cs_fast\1:", ins.ptx, re.S)
    # the record comes from the CTA's begin probe
    assert re.search(rf"call \(__cs_rb\), {abi.PROBE_CTA_BEGIN}; (\$__cs_rejoin\d+: )?"
                     r"ld\.param\.b32 %__cs_fast", ins.ptx)
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


def _update_calls(ptx: str, entry: str) -> tuple[list[str], list[str]]:
    """(the probe's arguments, the update's) of one access, as a lane making it passes them."""
    (probe,) = calls(ptx, abi.PROBE_ACCESS)
    (call,) = calls(ptx, entry)
    assert call.pos < probe.pos  # (the update's call first: its lanes' tables are set)
    return together(ptx, probe), together(ptx, call)


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
    probe, call = _update_calls(ins.ptx, entry)
    assert call == probe and probe[0] == "%__cs_a"
    assert f"st.volatile.shared.u32 [%__cs_fr{site_reg}], {probe[1]};" in ins.ptx  # its site
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
    assert len(re.findall(r"\scall __consan_inline_write4, \(", k)) == n
    # (every lane calls the function, those that skip the access with 0 in its last word)
    assert len(re.findall(r"\scall __consan_inline_read1, \(", k)) == n
    assert k.count("selp.b32 %__cs_op, 1, 0, %p2;") == n and "@%p2 call" not in k
    assert "selp.b32 %__cs_fi, 260, " in function(ins.ptx, "__consan_inline_write4")  # (size
    # 4, a write, .shared: the probe's info word)
    for name, atom, entry in (("__consan_inline_write4", "cas.b64", abi.PROBE_WRITE_READERS),
                              ("__consan_inline_read1", "or.b32", abi.PROBE_READ_JUDGE)):
        fn = function(ins.ptx, name)
        assert ins.ptx.count(f".func {name} (") == 1
        assert fn.count(f"atom.shared.{atom}") == 1 and "membar.cta;" in fn
        assert fn.count(f"call {entry},") == 1 and fn.count(f"call {abi.PROBE_ACCESS},") == 1
        assert all(together(fn, c)[:2] == ["%__cs_a", "%__cs_site"]  # the caller's
                   for c in calls(fn))
    monkeypatch.setenv("CONSAN_INLINE_MAX", "0")  # (the GPU tests' switch: functions only)
    one = rewritten("\tst.shared.u32 [%r2], %r3;\n", looped=False)
    assert len(re.findall(r"\scall __consan_inline_write4, \(", kernel(one.ptx))) == 1
    monkeypatch.delenv("CONSAN_INLINE_MAX")
    looped = rewritten(body, extra="\t.reg .b16 %rs<2>;\n")
    assert looped.fast_paths == 2 * n and fast_tests(kernel(looped.ptx)) == 2 * n
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


def test_outside_loops_only_inline_updates_take_the_test():
    """An 8-byte read where no span read can be made (before sm_80): no test out of loops."""
    old = HEAD.replace(".target sm_90a", ".target sm_75")
    ins = instrument(old + "\tld.shared.v2.u32 {%r4, %r5}, [%r2];\n\tret;\n}\n", "k.ptx")
    assert fast_tests(ins.ptx) == 0 and ins.inline_reads == 0
    assert "atom.shared" not in ins.ptx and len(calls(ins.ptx, abi.PROBE_ACCESS)) == 1


def test_wider_reads_take_the_span_read():
    """A read of several granules, in a loop or not: the warp's lanes together
    (fast_path.span_read), the span's judge called only where a look fails, the probe
    where the lanes' reads do not fit; linked with the phase-mode checker."""
    for looped in (True, False):
        ins = rewritten("\tld.shared.v2.u32 {%r4, %r5}, [%r2];\n", looped=looped)
        k = kernel(ins.ptx)
        assert ins.inline_reads == 1 and ins.fast_paths == int(looped)
        assert k.count("// consan fast path: a span read") == 1
        assert "redux.sync.min.u32" in k and k.count("atom.shared.or.b32") == 3  # (a word each)
        (judge,) = calls(k, abi.PROBE_READ_SPAN_JUDGE)
        (probe,) = calls(k, abi.PROBE_ACCESS)
        assert together(k, judge)[1:3] == together(k, probe)[1:3] == [probe.args[1], "8"]
        toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


def test_wider_reads_before_sm_80_take_the_test_without_the_update():
    """No redux.sync before sm_80: a read of several granules in a loop takes the test of
    one bitmap word, and calls its probe where it fails."""
    old = HEAD.replace(".target sm_90a", ".target sm_75")
    assert old != HEAD
    ins = instrument(old + f"$L_loop:\n\tld.shared.v2.u32 {{%r4, %r5}}, [%r2];\n{STEP}{NEXT}"
                     "\tret;\n}\n", "k.ptx")
    assert fast_tests(ins.ptx) == 1 == ins.fast_paths and ins.inline_reads == 0
    assert "atom.shared.or" not in ins.ptx and "redux.sync" not in ins.ptx


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
    """bench_clean's stencil (its tile and halo writes; its seven neighbours, merged into one
    28-byte read, a span read) and transpose (its tile's rows written, its columns read)
    as NVRTC compiles them."""
    from tests.kernels import gpu_kernels as K

    for name, writes, reads, spans in (("stencil_1d", 3, 0, 1), ("transpose_tiled", 4, 4, 0)):
        ptx = corpus_build.compile_cached(K.CLEAN[name], f"{name}.cu",
                                          ["-arch=compute_90", "-lineinfo"])
        ins = instrument(ptx, f"{name}.ptx")
        assert ins.ptx.count(f"call {abi.PROBE_WRITE_READERS},") == writes == ins.inline_writes
        assert ins.ptx.count(f"call {abi.PROBE_READ_JUDGE},") == reads
        assert ins.ptx.count(f"call {abi.PROBE_READ_SPAN_JUDGE},") == spans
        assert ins.inline_reads == reads + spans


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
            ptx = corpus_build.compile_cached(src, f"{name}.cu",
                                              ["-arch=compute_90", "-lineinfo"])
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
        assert len(re.findall(r"\scall __consan_inline_write4, \(", k)) == n
        assert k.index("published inline") < k.index("call __consan_inline_write4")
    else:
        assert k.index("published inline") < k.index("// consan fast path")
        assert k.count(f"call {abi.PROBE_WRITE_READERS},") == 1
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


@pytest.mark.parametrize("access", ["\tatom.shared.add.u32 %r4, [%r2], 1;\n",
                                    "\t@%p2 red.shared.add.u32 [%r2], 1;\n"])
def test_with_value_tags_an_untagged_write_calls_its_probe(access):
    """With value tags, a warp's write that has no tag (an atomic) calls its probe, in a loop
    or not: the probe ends the warp's record of its last tagged store (docs/model.md,
    *Replicated stores*), which neither the inline test nor the inline update would. A
    tagged store beside it keeps its inline test."""
    ins = rewritten(access + "\tst.shared.u32 [%r2+64], %r3;\n", value_tags=True)
    k = kernel(ins.ptx)
    assert ins.fast_paths == 1 and fast_tests(k) == 1  # the tagged store's
    assert k.count("// consan value tag, published inline") == 1
    assert f"call {abi.PROBE_ACCESS}, (" in k  # the atomic's own probe, always called
    plain = rewritten(access)  # (without value tags the atomic takes the test too)
    assert plain.fast_paths == 1


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
    join = re.search(r"\$__cs_slow\d+_join", block).group(0)
    leave = block.index(f"{'@!%p2' if guard == '@%p2' else '@%p2'} bra {join};")
    assert block.index("mov.b32 %__cs_fk, 0;") < leave < first_load
    # where such a lane goes, it needs no call: it calls the probe with the others, its
    # address echoing one that makes the access (never its own)
    probe = [c for c in calls(k) if c.func in (abi.PROBE_ACCESS, abi.PROBE_ACCESS16)
             or c.func.startswith("__consan_inline_")]
    assert probe and all(c.pred is None for c in probe)
    for c in probe:
        if c.func.startswith("__consan_inline_"):  # (its last word: 0 where it skips)
            assert c.args[3] in ("%__cs_fi", "%__cs_op")
        else:
            assert together(k, c)[0] == "%__cs_a"
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


@pytest.mark.parametrize("store,n,probe", [
    ("st.shared.v2.u32 [%r2], {%r3, %r3}", 2, abi.PROBE_ACCESS),
    ("st.shared.u64 [%r2], %rd1", 2, abi.PROBE_ACCESS),
    ("st.shared.v4.u32 [%r2], {%r3, %r3, %r3, %r3}", 4, abi.PROBE_ACCESS16),
    ("st.shared.v2.u64 [%r2], {%rd1, %rd1}", 4, abi.PROBE_ACCESS16),
])
def test_a_store_of_8_or_16_bytes_in_a_loop_takes_the_inline_test(store, n, probe):
    """In a loop an 8- or 16-byte store first tests inline whether it repeats its warp's
    write in this phase: it skips its probe only where every one of its two or four
    granules' epochs (read with 16-byte loads) is this phase's plain one of this warp
    (docs/model.md, *Phase mode in shared memory*); one granule that is not and the probe
    (or the update) must run. The one-granule form's `first == last` test is not made."""
    ins = rewritten(f"\t{store};\n", extra="\t.reg .b64 %rd<2>;\n")
    assert ins.first_trip_loops == [] and ins.fast_paths == 1 == ins.inline_writes
    k = kernel(ins.ptx)
    assert fast_tests(k) == 1
    test = k[k.index("// consan fast path"):]
    m = re.search(r"@%__cs_fq0 bra \$__cs_slow(\d+)_join;", test)
    assert m
    checks = test[:m.start()]
    assert checks.count("ld.volatile.shared.v4.u32 {%__cs_fw") == n // 2
    assert "setp.eq.u32 %__cs_fq0, %__cs_fw0, %__cs_fr0;" in checks  # (phase, warp)
    for i in range(n):
        if i:
            assert f"setp.eq.and.u32 %__cs_fq0, %__cs_fw{2 * i}, %__cs_fr0, %__cs_fq0;" in checks
        assert f"setp.eq.and.u32 %__cs_fq0, %__cs_fw{2 * i + 1}, %__cs_fr1, %__cs_fq0;" in checks
    assert "setp.eq.and.u32 %__cs_fq0, %__cs_fr4, %__cs_fr5" not in checks
    assert f"add.u32 %__cs_fr5, %__cs_fr4, {4 * n - 1};" in checks  # (its last granule)
    # where the lanes meet: the look for readers, the probe, then the store
    fast = f"$__cs_fast{m.group(1)}"
    slow = k[k.index(f"$__cs_slow{m.group(1)}_join:"):k.index(f"{fast}:")]
    assert [c.func for c in calls(slow)] == [abi.PROBE_WRITE_READERS, probe]
    assert k[k.index(f"{fast}:"):].split("\n")[1].strip() == f"{store};"
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


@pytest.mark.parametrize("size,store,regs", [
    (1, "st.shared.u8 [%r2+{off}], %rs1", "\t.reg .b16 %rs<2>;\n\tcvt.u16.u32 %rs1, %r1;\n"),
    (2, "st.shared.u16 [%r2+{off}], %rs1", "\t.reg .b16 %rs<2>;\n\tcvt.u16.u32 %rs1, %r1;\n"),
    (8, "st.shared.v2.u32 [%r2+{off}], {{%r1, %r3}}", ""),
    (16, "st.shared.v4.u32 [%r2+{off}], {{%r1, %r1, %r3, %r3}}", ""),
])
def test_many_stores_of_each_size_call_the_function_of_their_size(size, store, regs):
    """Past fast_path.INLINE_MAX updates every store calls the module's function of its
    size in place of its probe (`__consan_inline_write<size>`, defined once, whose info
    word is the probe's: size, a write, .shared) with the probe's own address and site
    and the warp's record; the function tests and updates as many granules as the store
    covers (1, 1, 2, 4) and calls the checker's look for readers or the plain probe with
    that address, site and info."""
    n = fast_path.INLINE_MAX + 1
    stores = [store.format(off=16 * (j + 1)) for j in range(n)]
    body = "".join(f"\t{s};\n\tadd.s32 %r2, %r2, 16;\n" for s in stores)  # (not one span)
    ins = rewritten(body, looped=False, extra=regs)
    assert ins.inline_writes == n and ins.fast_paths == 0
    name = f"__consan_inline_write{size}"
    k = kernel(ins.ptx)
    assert not [c for c in calls(k) if c.func in (abi.PROBE_ACCESS, abi.PROBE_ACCESS16)]
    made = [c for c in calls(k) if c.func.startswith("__consan_inline_")]
    assert [c.func for c in made] == [name] * n
    for j, c in enumerate(made):
        site = ins.sites[int(c.args[1])]
        assert c.args[0] == "%__cs_a" and c.args[2:] == [fast_path.REG_FAST, "1"]
        assert site.ptx_text == f"{stores[j]};" and site.size == size
        block = k[k.rindex("{", 0, c.pos):c.pos]  # (the probe's address, in its register)
        assert "cvt.u64.u32 %__cs_a, %r2;" in block
        assert f"add.s64 %__cs_a, %__cs_a, {16 * (j + 1)};" in block
    fn = function(ins.ptx, name)
    assert ins.ptx.count(f".func {name} (") == 1
    info = abi.access_info(size, abi.MODE_WRITE, abi.SPACE_SHARED)
    assert f"selp.b32 %__cs_fi, {info}, {info | abi.INFO_ECHO}, %__cs_fon;" in fn
    assert fn.count("atom.shared.cas.b64") == max(1, size // 4)
    assert f"add.u32 %__cs_fr5, %__cs_fr4, {size - 1};" in fn
    checker = calls(fn)  # (the look for readers, then the probe: the caller's address and
    # site, the function's info)
    assert [c.func for c in checker][0] == abi.PROBE_WRITE_READERS and len(checker) == 2
    assert checker[1].func in (abi.PROBE_ACCESS, abi.PROBE_ACCESS16)
    assert all(together(fn, c) == ["%__cs_a", "%__cs_site", str(info)] for c in checker)
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


@pytest.mark.parametrize("looped", [False, True])
def test_a_store_to_a_symbol_address_takes_the_test_at_that_address(looped):
    """`st.shared.v2.u32 [s+16], ...`: the address the test, the update and the probe take
    is the symbol's shared address plus the offset (`mov.u64 %__cs_a, s` then the add),
    not a register's. (Its values are not immediates the function sets once: such a store
    is idempotent and has a rule of its own. In a loop, one reached by another branch,
    so not checked on its first trip only.)"""
    store = "st.shared.v2.u32 [s+16], {%r1, %r3}"
    extra = "\tsetp.eq.s32 %p2, %r9, 0;\n\t@%p2 bra $L_loop;\n" if looped else ""
    ins = rewritten(f"\t{store};\n", looped=looped, extra=extra)
    assert ins.first_trip_loops == [] and ins.inline_writes == 1
    assert ins.fast_paths == looped and fast_tests(ins.ptx) == 1
    k = kernel(ins.ptx)
    test = k[k.index("// consan fast path"):]
    assert re.search(r"mov\.u64 %__cs_a, s;\s*add\.s64 %__cs_a, %__cs_a, 16;\s*"
                     r"cvt\.u32\.u64 %__cs_fr4, %__cs_a;", test)
    assert "add.u32 %__cs_fr5, %__cs_fr4, 7;" in test and test.count("atom.shared.cas.b64") == 2
    made = [c for c in calls(k) if c.func in (abi.PROBE_ACCESS, abi.PROBE_WRITE_READERS)]
    assert sorted(c.func for c in made) == sorted([abi.PROBE_ACCESS, abi.PROBE_WRITE_READERS])
    for c in made:
        assert together(k, c) == ["%__cs_a", "0", str(abi.access_info(8, abi.MODE_WRITE,
                                                                       abi.SPACE_SHARED))]
        block = k[k.rindex("// consan fast path", 0, c.pos):c.pos]
        assert "mov.u64 %__cs_a, s;" in block and "add.s64 %__cs_a, %__cs_a, 16;" in block
    assert ins.sites[0].ptx_text == f"{store};"
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


# A run: accesses one after another, with only register arithmetic between them that leaves
# their addresses alone (an unrolled loop's body), whose probes one call makes.
# (bases apart from %r2, which the probes of a warp's stores at fixed distances would share)
ADDRESSES = "".join(f"\tmul.lo.s32 %r{6 + i}, %r9, {i + 3};\n" for i in range(3))
RUN = ("\tst.shared.u32 [%r2], %r3;\n\tadd.s32 %r4, %r3, 1;\n"
       "\tst.shared.u32 [%r6], %r4;\n\tld.shared.u32 %r5, [%r7];\n"
       "\tld.shared.u8 %rs1, [%r8+1];\n\tst.shared.u32 [s+512], %r5;\n")


def _functions_only(monkeypatch):
    monkeypatch.setenv("CONSAN_INLINE_MAX", "0")  # (the form of a module with many updates)


def test_a_run_of_accesses_calls_one_function_with_each_address(monkeypatch):
    """The run's call comes before its first access, with each access's address (a 32-bit
    window offset) and the first access's site; the function makes each access's test and
    update in program order, with its own info word and the sites one after another, and
    the module links with the phase-mode checker."""
    _functions_only(monkeypatch)
    ins = rewritten(RUN, looped=False, extra="\t.reg .b16 %rs<2>;\n" + ADDRESSES)
    k = kernel(ins.ptx)
    made = [c for c in calls(k) if c.func.startswith("__consan_")]
    name = "__consan_inline_run_w4_w4_r4_r1_w4"
    assert [c.func for c in made] == [abi.PROBE_CTA_BEGIN, name, abi.PROBE_THREAD_EXIT]
    (run,) = [c for c in made if c.func == name]
    assert run.args == [f"%__cs_g{i}" for i in range(5)] + [run.args[5], fast_path.REG_FAST,
                                                            "1"]  # (every lane makes them)
    first = int(run.args[5])
    assert run.pos < k.index("st.shared.u32 [%r2], %r3;")  # (before the run's first access)
    texts = [ln.strip() for ln in RUN.splitlines() if "shared" in ln]
    assert [ins.sites[first + i].ptx_text for i in range(5)] == texts
    block = k[k.rindex("{", 0, run.pos):run.pos]
    for i, (reg, off) in enumerate((("%r2", 0), ("%r6", 0), ("%r7", 0), ("%r8", 1))):
        add = f"\n\tadd.s64 %__cs_a, %__cs_a, {off};" if off else ""
        assert f"cvt.u64.u32 %__cs_a, {reg};{add}\n\tcvt.u32.u64 %__cs_g{i}, %__cs_a;" in block
    assert "mov.u64 %__cs_a, s;\n\tadd.s64 %__cs_a, %__cs_a, 512;\n\tcvt.u32.u64 %__cs_g4" \
        in block
    fn = function(ins.ptx, name)
    infos = [int(x) for x in re.findall(r"selp\.b32 %__cs_fi, (\d+), \d+, %__cs_fon;", fn)]
    infos = infos[::2]  # (each access's two calls: the update's, the probe)
    assert infos == [abi.access_info(4, abi.MODE_WRITE, abi.SPACE_SHARED)] * 2 + [
        abi.access_info(4, abi.MODE_READ, abi.SPACE_SHARED),
        abi.access_info(1, abi.MODE_READ, abi.SPACE_SHARED),
        abi.access_info(4, abi.MODE_WRITE, abi.SPACE_SHARED)]
    assert [int(x) for x in re.findall(r"add\.u32 %__cs_site, %__cs_s0, (\d+);", fn)] == \
        list(range(5))
    assert [c.func for c in calls(fn)] == [
        abi.PROBE_WRITE_READERS, abi.PROBE_ACCESS] * 2 + [abi.PROBE_READ_JUDGE,
                                                          abi.PROBE_ACCESS] * 2 + [
        abi.PROBE_WRITE_READERS, abi.PROBE_ACCESS]
    assert fn.count("atom.shared.cas.b64") == 3 and fn.count("atom.shared.or.b32") == 2
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


@pytest.mark.parametrize("case,body", [
    ("an address loaded by the run", "\tld.shared.u32 %r5, [%r2];\n\tst.shared.u32 [%r5], %r3;\n"),
    ("an address register written between", "\tst.shared.u32 [%r2], %r3;\n"
     "\tadd.s32 %r10, %r10, 4;\n\tst.shared.u32 [%r10], %r3;\n"),
    ("a barrier between", "\tst.shared.u32 [%r2], %r3;\n\tbar.sync 0;\n"
     "\tst.shared.u32 [%r10], %r3;\n"),
    ("a global load between", "\tst.shared.u32 [%r2], %r3;\n\tld.global.u32 %r6, [%rd1];\n"
     "\tst.shared.u32 [%r10], %r3;\n"),
    ("a guarded access between", "\tst.shared.u32 [%r2], %r3;\n"
     "\t@%p2 st.shared.u32 [%r11], %r3;\n\tst.shared.u32 [%r10], %r3;\n"),
    ("a label between", "\tst.shared.u32 [%r2], %r3;\n$L_x:\n\tst.shared.u32 [%r10], %r3;\n"),
])
def test_a_run_ends_where_a_later_address_or_the_order_could_change(monkeypatch, case, body):
    """Each access calls its own function where moving its probe before the earlier access
    could give it another address or cross what orders it."""
    _functions_only(monkeypatch)
    extra = "\t.reg .b64 %rd<2>;\n\tmul.lo.s32 %r10, %r9, 3;\n\tmul.lo.s32 %r11, %r9, 5;\n"
    ins = rewritten(body, looped=False, extra=extra)
    k = kernel(ins.ptx)
    assert "__consan_inline_run_" not in ins.ptx, case
    assert len([c for c in calls(k) if c.func.startswith("__consan_inline_")]) == \
        body.count(".shared"), case
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


def test_a_long_run_is_cut_at_run_max(monkeypatch):
    _functions_only(monkeypatch)
    n = fast_path.RUN_MAX + 3
    regs = "".join(f"\tmul.lo.s32 %r{4 + j}, %r9, {j + 3};\n" for j in range(n))
    ins = rewritten("".join(f"\tst.shared.u32 [%r{4 + j}], %r3;\n" for j in range(n)),
                    looped=False, extra=regs)
    k = kernel(ins.ptx)
    made = [c.func for c in calls(k) if c.func.startswith("__consan_inline_")]
    assert made == ["__consan_inline_run_" + "_".join(["w4"] * fast_path.RUN_MAX),
                    "__consan_inline_run_w4_w4_w4"]
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


def test_the_gpu_run_twin_makes_runs_on_both_sides(monkeypatch):
    """tests/gpu/test_races.py's `run` twin, as NVRTC compiles it: the racy read and its
    write are each inside a run (the case a run's site numbering must get right)."""
    from consan import toolchain as tc
    from tests.kernels import gpu_kernels as K

    twin = K.TWIN_BY_KEY["run"]
    try:
        ptx = tc.compile_cuda(twin.racy_src, twin.racy_name, ("-arch=sm_90a", "-lineinfo"))
    except Exception as e:  # noqa: BLE001 - no NVRTC here
        pytest.skip(f"NVRTC: {e}")
    _functions_only(monkeypatch)
    ins = instrument(ptx, "run.ptx")
    lines = {K.line_of(twin.racy_src, m) for m in ("@run-read", "@run-write")}
    runs = [c for c in calls(kernel(ins.ptx)) if c.func.startswith("__consan_inline_run_")]
    covered = set()
    for c in runs:
        first, n = int(c.args[-3]), len(c.args) - 3  # (site, record, on)
        covered |= {ins.sites[first + i].loc.line for i in range(n) if ins.sites[first + i].loc}
    assert lines <= covered, (lines, covered)


@pytest.mark.parametrize("inline", [True, False])
def test_a_write_read_in_its_phase_looks_at_other_warps_bits_before_calling(monkeypatch, inline):
    """A one-granule write whose granule was read in this phase walks the other warps'
    bitmap words of the phase's parity inline (four warps a trip, stepping a warp's two
    bitmaps at a time, skipping its own, each load guarded by the first record's address)
    and calls the checker's look for readers only from there; writes of several granules
    call it as before."""
    if not inline:
        _functions_only(monkeypatch)
    ins = rewritten("\tst.shared.u32 [%r2], %r3;\n\tst.shared.v2.u32 [%r10], {%r3, %r3};\n",
                    looped=False, extra="\tmul.lo.s32 %r10, %r9, 8;\n")
    text = ins.ptx
    assert text.count("_war:") == 1
    loop = text[text.index("_war:"):]
    loop = loop[:loop.index("_war;") + 5]  # (to the branch back)
    assert loop.count("ld.volatile.shared.u32") == 4 == loop.count("setp.ne.and.u32")
    assert re.search(r"bra \$__cs_\w+_call;", loop)
    head = text[:text.index("_war:")]
    assert f"[{fast_path.REG_FAST}+{abi.PSH_FAST_BITS_EVEN * 4}]" in head[-1500:]
    assert "shl.b32 %__cs_fr6, %__cs_fr6, 3;" in head[-1500:]  # (two parities a warp)
    assert f"mul.lo.u32 %__cs_fr8, %__cs_fr1, {abi.PSH_FAST_BYTES};" in head[-1500:]
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


def test_a_run_in_a_converted_branch_is_called_by_every_lane(monkeypatch):
    """`if (warp == 0) { p = s[a]; s[p] = x; s[b] = y; }`: a store's address is loaded in the
    branch, so its probe cannot be made before the branch (instrument/runs.py): the branch
    is converted (converge.py) and its accesses still make one run, whose function every
    lane calls with REG_ON's lanes making the accesses (echo.py): a call by part of a warp
    split it."""
    _functions_only(monkeypatch)
    body = ("\tshr.u32 %r10, %r1, 5;\n\tsetp.ne.s32 %p2, %r10, 0;\n\t@%p2 bra $L_skip;\n"
            "\tld.shared.u32 %r11, [%r8];\n"
            "\tst.shared.u32 [%r11], %r3;\n\tst.shared.u32 [%r7], %r3;\n$L_skip:\n")
    ins = rewritten(body, looped=False, extra=ADDRESSES)
    k = kernel(ins.ptx)
    assert re.findall(r"(\S+) bra \$L_skip;", k) == ["@!%__cs_any"]  # (no lane on: skipped)
    assert "@%__cs_on st.shared.u32 [%r11], %r3;" in k
    (run,) = [c for c in calls(k) if c.func.startswith("__consan_inline_run_")]
    assert run.func == "__consan_inline_run_w4_w4"
    assert run.pred is None and run.args[-1] == "%__cs_op"
    assert run.pos > k.index("@%__cs_on ld.shared.u32 %r11, [%r8];")
    assert "selp.b32 %__cs_op, 1, 0, %__cs_on;" in k[k.rindex("// consan sites", 0, run.pos):]
    fn = function(ins.ptx, run.func)
    assert "setp.ne.u32 %__cs_onp, %__cs_u, 0;" in fn and fn.count("@!%__cs_onp bra") == 2
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)
