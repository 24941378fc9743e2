"""Kernels proven race-free before launch (instrument/static_proof.py): what is proven, and
that anything the proof cannot decide, or that could race, is refused (then the kernel runs
instrumented as before)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from instrument.rewrite import instrument

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "triton"
SOFTMAX = (CORPUS / "triton_softmax.ptx").read_text()


def verdict(ptx: str):
    """(kernel -> Proof) of the module, or the refusal of its only kernel."""
    from instrument.events import classify, constant_registers
    from instrument.ptx import parse
    from instrument.rewrite import _proofs, _shared_symbols
    from instrument.static_proof import prove

    mod = parse(ptx, "t.ptx")
    if not mod.functions:
        raise AssertionError("no function")
    got = _proofs(mod, _shared_symbols(mod))
    if got:
        return got
    fn = mod.functions[0]
    index = {id(it): i for i, it in enumerate(mod.items)}
    shared = _shared_symbols(mod)
    consts = constant_registers(fn.body)
    return prove(fn, mod.items[index[id(fn.header)]:fn.open_index],
                 lambda it: classify(it, shared, in_entry=True, constants=consts), shared)


def kernel(body: str, threads: str = ".reqntid 128") -> str:
    return f"""
.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 16 .b8 smem[];
.visible .entry k(.param .u64 k_out)
{threads}
{{
\t.reg .b32 %r<24>;
\t.reg .pred %p<6>;
\t.reg .b64 %rd<6>;
\tmov.u32 %r1, %tid.x;
\tmov.u32 %r2, smem;
\tshr.u32 %r3, %r1, 5;
\tand.b32 %r4, %r1, 31;
{body}
\tret;
}}
"""


def _store_at(word: str) -> str:
    """Every thread stores to the word in register `word`, reads it back after a barrier."""
    return f"""
\tshl.b32 %r12, {word}, 2;
\tadd.s32 %r13, %r2, %r12;
\tst.shared.u32 [%r13], %r1;
\tbar.sync 0;
\tld.shared.u32 %r14, [%r13];
"""


def test_triton_softmax_and_an_inductor_reduction_are_proven():
    got = verdict(SOFTMAX)["softmax_kernel"]
    assert (got.threads, got.accesses, got.barriers) == (128, 8, 5)
    assert got.sentence().startswith("proven race-free before launch (8 shared-memory "
                                     "accesses, 5 CTA barriers passed, 128 threads")
    ind = instrument((CORPUS / "inductor_softmax_layer_norm.ptx").read_text(), "i.ptx").proven
    ((name, proof),) = ind.items()
    assert name.startswith("triton_red_fused") and (proof.threads, proof.barriers) == (512, 8)


def test_the_proven_module_is_still_instrumented_for_prepare():
    ins = instrument(SOFTMAX, "s.ptx")
    assert ins.proven and ins.sites.sites and "__consan_cta_begin" in ins.ptx


def _bar_lines(ptx: str) -> list[int]:
    return [i for i, ln in enumerate(ptx.splitlines()) if ln.strip() == "bar.sync \t0;"
            or re.fullmatch(r"\s*bar\.sync\s+0;", ln)]


@pytest.mark.parametrize("which", range(5))
def test_softmax_without_any_one_of_its_barriers_is_refused(which):
    lines = SOFTMAX.splitlines()
    bars = _bar_lines(SOFTMAX)
    assert len(bars) == 5
    del lines[bars[which]]
    got = verdict("\n".join(lines))
    assert isinstance(got, str) and "two warps touch the granule" in got, got


def test_a_read_of_scratch_nothing_wrote_is_refused():
    lines = SOFTMAX.splitlines()
    first = next(i for i, ln in enumerate(lines) if "st.shared.b32" in ln)
    del lines[first]
    got = verdict("\n".join(lines))
    assert isinstance(got, str) and "before any write certain to run" in got, got


WARP_SUM = """
\tshl.b32 %r5, %r3, 2;
\tadd.s32 %r6, %r2, %r5;
\tsetp.eq.u32 %p1, %r4, 0;
\t@%p1 st.shared.u32 [%r6], %r1;
\tBARRIER
\tsetp.lt.u32 %p2, %r1, 4;
\tshl.b32 %r7, %r1, 2;
\tadd.s32 %r8, %r2, %r7;
\t@%p2 ld.shared.u32 %r9, [%r8];
"""


@pytest.mark.parametrize("barrier,proven", [
    ("bar.sync 0;", True), ("barrier.sync 0;", True), ("bar.sync 0, 128;", True),
    ("bar.sync 0, 64;", False), ("@%p1 bar.sync 0;", False), ("bar.arrive 0, 128;", False),
    ("", False),
    # barrier 1 for all 128 threads orders them through the clocks (proof_named.py); with a
    # count of 64, two generations whose warps the GPU may pick in any order; arrivals
    # that no thread waits for order nothing
    ("bar.sync 1;", True), ("bar.sync 1, 128;", True), ("barrier.sync.aligned 1, 128;", True),
    ("bar.sync 1, 64;", False), ("bar.arrive 1, 128;", False), ("@%p1 bar.sync 1, 128;", False),
    ("bar.red.popc.u32 %r20, 1, 128, %p1;", False)])
def test_only_a_barrier_every_thread_waits_at_separates(barrier, proven):
    got = verdict(kernel(WARP_SUM.replace("BARRIER", barrier)))
    assert isinstance(got, dict) == proven, got


def test_the_block_size_must_be_known_before_launch():
    body = WARP_SUM.replace("BARRIER", "bar.sync 0;")
    assert isinstance(verdict(kernel(body)), dict)
    got = verdict(kernel(body, ".maxntid 128, 1, 1"))
    assert isinstance(got, str) and "reqntid" in got
    # 96 threads: warps 0-2 write words 0-2, and thread 3 reads word 3 nobody wrote
    got = verdict(kernel(body, ".reqntid 96"))
    assert isinstance(got, str) and "may read byte 12" in got, got


@pytest.mark.parametrize("addr,proven", [
    ("xor.b32 %r10, %r1, 1;", True),  # lanes swap words within their warp
    ("and.b32 %r10, %r1, 31;", False),  # every warp writes words 0-31
    ("bfe.u32 %r10, %r1, 0, 5;", False),  # the same, by bit-field extract
    ("add.s32 %r10, %r1, 32;", True),  # distinct words, shifted
    ("rem.u32 %r10, %r1, 64;", False),  # warps 0 and 2 meet
    ("mul.lo.u32 %r11, %r3, 0; add.s32 %r10, %r11, %r1;", True),
    ("selp.b32 %r10, %r1, 0, %p3;", False),  # threads 64-127 all write word 0
    ("selp.b32 %r10, %r1, %r4, %p4;", True),  # %p4 all true: word tid
])
def test_addresses_are_evaluated_for_every_thread(addr, proven):
    body = f"""
\tsetp.lt.u32 %p3, %r1, 64;
\tsetp.lt.u32 %p4, %r1, 1024;
\t{addr}
""" + _store_at("%r10")
    got = verdict(kernel(body))
    assert isinstance(got, dict) == proven, got


def test_what_cannot_be_known_before_launch_is_refused():
    body = """
\tld.param.u64 %rd1, [k_out];
\tcvt.u32.u64 %r10, %rd1;
\tadd.s32 %r13, %r2, %r10;
\tst.shared.u32 [%r13], %r1;
"""
    got = verdict(kernel(body))
    assert isinstance(got, str) and "not known before launch" in got
    pred = """
\tld.param.u64 %rd1, [k_out];
\tsetp.eq.u64 %p1, %rd1, 0;
\tshl.b32 %r5, %r1, 2;
\tadd.s32 %r6, %r2, %r5;
\t@%p1 st.shared.u32 [%r6], %r1;
\tbar.sync 0;
\tld.shared.u32 %r9, [%r6];
"""
    got = verdict(kernel(pred))  # a store that may not run cannot make the read safe
    assert isinstance(got, str) and "before any write certain to run" in got


PARAM_LOOP = """
\tld.param.u64 %rd1, [k_out];
\tcvt.u32.u64 %r16, %rd1;
\tmov.u32 %r15, 0;
$L_loop:
\tadd.s32 %r15, %r15, 1;
\tsetp.lt.u32 %p5, %r15, %r16;
\t@%p5 bra $L_loop;
"""  # (a loop whose length is a kernel parameter)


def test_branches_whose_direction_is_unknown_only_around_code_without_shared_memory():
    loop = PARAM_LOOP
    body = WARP_SUM.replace("BARRIER", "bar.sync 0;")
    assert isinstance(verdict(kernel(loop + body)), dict)
    # a register the loop writes is unknown after it
    used = loop + body.replace("shl.b32 %r7, %r1, 2;", "shl.b32 %r7, %r15, 2;")
    assert "not known before launch" in verdict(kernel(used))
    around = """
\tld.param.u64 %rd1, [k_out];
\tsetp.eq.u64 %p5, %rd1, 0;
\t@%p5 bra $L_skip;
\tshl.b32 %r5, %r1, 2;
\tadd.s32 %r6, %r2, %r5;
\tst.shared.u32 [%r6], %r1;
$L_skip:
"""
    # a forward branch: its threads go both ways, the store only may run
    assert isinstance(verdict(kernel(around)), dict)
    read = around + "\tbar.sync 0;\n\tshl.b32 %r7, %r1, 2;\n\tadd.s32 %r8, %r2, %r7;\n" \
        "\tld.shared.u32 %r9, [%r8];\n"
    assert "before any write certain to run" in verdict(kernel(read))
    barrier = around.replace("$L_skip:", "\tbar.sync 0;\n$L_skip:")
    assert "barrier not every thread" in verdict(kernel(barrier))
    # a loop: nothing in it may touch shared memory or synchronise
    assert "under a branch" in verdict(kernel(loop.replace("add.s32", "bar.sync 0;\n\tadd.s32")))
    stored = loop.replace("add.s32", "st.shared.u32 [%r2], %r1;\n\tadd.s32")
    assert "under a branch" in verdict(kernel(stored))


def test_a_ctas_own_bytes_through_its_cluster_address_are_an_ordinary_access():
    body = """
\tshl.b32 %r5, %r1, 2;
\tadd.s32 %r6, %r2, %r5;
\tst.shared.u32 [%r6], %r1;
\tmapa.shared::cluster.u32 %r7, %r6, 0;
\tld.shared::cluster.u32 %r9, [%r7];
"""
    assert not isinstance(verdict(kernel(body)), str)


@pytest.mark.parametrize("op", [
    # (an atomic on another CTA's bytes; atomics on the CTA's own: test_shared_atomics_...)
    "atom.shared::cluster.add.u32 %r9, [%r6], 1;",
    # (rank 1 of a launch of one CTA: no such CTA)
    "mapa.shared::cluster.u32 %r7, %r6, 1;\n\tld.shared::cluster.u32 %r9, [%r7];",
    "cvta.shared.u64 %rd2, %rd1;\n\tld.u32 %r9, [%rd2];",
    "call.uni foo;"])
def test_other_shared_memory_operations_are_refused(op):
    body = f"""
\tshl.b32 %r5, %r1, 2;
\tadd.s32 %r6, %r2, %r5;
\tst.shared.u32 [%r6], %r1;
\t{op}
"""
    ptx = kernel(body)
    if "call" in op:
        ptx = ptx.replace(".visible .entry", ".func foo()\n{\n\tret;\n}\n.visible .entry")
    got = verdict(ptx)
    assert isinstance(got, str), got


def test_a_proven_launch_runs_natively_and_the_summary_names_the_proof(monkeypatch):
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from consan import session as consan_session
    from reports.session import SessionReport

    ins = instrument(SOFTMAX, "s.ptx")
    b = SimpleNamespace(instrumented=ins)
    assert consan_session.work_in(b) == (False, True)  # (proofs counted, not counted)

    class Fn:
        kernel = display_name = "softmax_kernel"
        module = SimpleNamespace(build=lambda roots: (b, False))

    ran = []
    events = _fake_events(monkeypatch)
    monkeypatch.setattr(consan_session, "capturing", lambda stream: False)
    s = consan_session.Session(consan_session.Options(count_other_launches=False),
                               console=Console(file=io.StringIO()))
    for _ in range(2):
        s.launch(Fn(), (4, 1, 1), (128, 1, 1), None, 0, None, False, lambda: ran.append(1))
    s.launch_native(Fn(), lambda: ran.append(2), ())
    stats = s.report.kernels["softmax_kernel"]
    assert ran == [1, 1, 2] and stats.launches_checked == 3 and not stats.shadow_bytes
    # (an event after each, looked at by the next launch, none waited for until the end;
    # one seen finished is recorded again)
    assert [e.log for e in events] == [["record", "done"] * 2 + ["record"]]
    s.stop()
    assert events[0].log[-2:] == ["record", "synchronize"] and not s.report.faults
    assert stats.proven == ins.proven["softmax_kernel"].sentence()
    buf = io.StringIO()
    s.report.render_summary(Console(file=buf, width=300, color_system=None))
    assert "softmax_kernel: proven race-free before launch (8 shared-memory" in buf.getvalue()
    again = SessionReport.from_json(s.report.to_json())
    assert again.kernels["softmax_kernel"].proven == stats.proven


# ---------------------------------------------------------------------- against the checker
def _mutants() -> dict[str, str]:
    lines = SOFTMAX.splitlines()
    out = {"softmax": SOFTMAX}
    for i, at in enumerate(_bar_lines(SOFTMAX)):
        out[f"softmax-no-barrier-{i}"] = "\n".join(lines[:at] + lines[at + 1:])
    first = next(i for i, ln in enumerate(lines) if "st.shared.b32" in ln)
    out["softmax-no-first-store"] = "\n".join(lines[:first] + lines[first + 1:])
    out["inductor"] = (CORPUS / "inductor_softmax_layer_norm.ptx").read_text()
    for i, addr in enumerate(("xor.b32 %r10, %r1, 1;", "and.b32 %r10, %r1, 31;",
                              "rem.u32 %r10, %r1, 64;", "xor.b32 %r10, %r1, 32;")):
        out[f"swap-{i}"] = kernel(f"\t{addr}\n" + _store_at("%r10") + """\tshl.b32 %r15, %r1, 2;
\tadd.s32 %r16, %r2, %r15;
\tld.shared.u32 %r17, [%r16];
""")
    return out


MUTANTS = _mutants()


def _replay(accesses, phase_mode: bool, warp_major: bool, reverse: bool) -> set[str]:
    """The host-compiled checker's kinds for the evaluated accesses, the warps of each
    interval in one of several interleavings, a bar.sync of all warps between intervals."""
    from instrument import abi
    from tests.checker_host import HostChecker

    warps = max(int(a.warp.max()) for a in accesses) + 1
    extent = max(int(a.start.max()) + a.size for a in accesses)
    ck = HostChecker(nwarps=warps, smem_bytes=-(-extent // 64) * 64, phase_mode=phase_mode)
    assert ck.begin() == 0
    order = list(range(warps))[::-1] if reverse else list(range(warps))
    last = max(a.interval for a in accesses)

    def run(site: int, a, w: int) -> None:
        for start in sorted(set(a.start[a.warp == w].tolist())):
            mode = abi.MODE_ATOMIC if a.atomic else abi.MODE_WRITE if a.write else \
                abi.MODE_READ
            ck.access(w, start, a.size, mode, site % 60)

    for k in range(last + 1):
        group = [(i, a) for i, a in enumerate(accesses) if a.interval == k]
        if warp_major:
            for w in order:
                for i, a in group:
                    run(i, a, w)
        else:
            for i, a in group:
                for w in order:
                    run(i, a, w)
        if k < last:
            ck.sync(range(warps))
    return {kind for kind, _, _ in ck.kinds()}


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_checker_agrees_with_the_proof_on_every_interleaving_tried(name):
    """Proven: the checker finds nothing however the warps interleave within the
    intervals. Refused: some interleaving gives the checker a finding (every access here
    runs in every thread its predicate names, so the refusal is about the accesses)."""
    from instrument.events import classify, constant_registers
    from instrument.ptx import parse
    from instrument.rewrite import _shared_symbols
    from instrument.static_proof import trace

    ptx = MUTANTS[name]
    mod = parse(ptx, "t.ptx")
    fn = mod.functions[0]
    index = {id(it): i for i, it in enumerate(mod.items)}
    shared, consts = _shared_symbols(mod), constant_registers(fn.body)
    accesses = trace(fn, mod.items[index[id(fn.header)]:fn.open_index],
                     lambda it: classify(it, shared, in_entry=True, constants=consts), shared)
    assert all(a.certain.all() for a in accesses)
    proven = isinstance(verdict(ptx), dict)
    assert proven == (name in ("softmax", "inductor", "swap-0", "swap-3")), verdict(ptx)
    found = set()
    for phase_mode in (True, False):
        for warp_major in (True, False):
            for reverse in (True, False):
                got = _replay(accesses, phase_mode, warp_major, reverse)
                assert not (proven and got), (phase_mode, warp_major, reverse, got)
                found |= got
    assert proven or found & {"race.raw", "race.war", "race.waw", "uninit.read"}, found


# ------------------------------------------------- what the evaluator must not get wrong
@pytest.mark.parametrize("compute", [
    # the GPU computes 0 in every thread (every warp then writes word 0): never proven
    "add.sat.s32 %r10, %r1, 2147483647;\n\tsub.s32 %r11, %r10, 2147483647;",
    "sub.s32 %r10, 0, %r1;\n\tmax.relu.s32 %r11, %r10, -1000;\n\tneg.s32 %r11, %r11;",
    "cvt.u64.u32 %rd1, %r1;\n\tshl.b64 %rd1, %rd1, 32;\n\tmov.b64 {%r11, %r10}, %rd1;",
    "mov.u32 %r11, 0;\n\t{\n\t.reg .b32 %r11;\n\tmov.u32 %r11, %r1;\n\t}",
])
def test_values_the_evaluator_cannot_follow_are_not_proven(compute):
    got = verdict(kernel(f"\t{compute}\n" + _store_at("%r11")))
    assert isinstance(got, str), got


@pytest.mark.parametrize("wide", [
    # the GPU computes tid + 1: thread 31 reads word 32, which warp 1 writes meanwhile
    "mov.u64 %rd1, 4294967296;\n\tmad.wide.u32 %rd2, %r1, 1, %rd1;\n\tshr.u64 %rd3, %rd2, 32;",
    "mov.u64 %rd1, 1;\n\tbfe.u64 %rd3, %rd1, 0, 64;",
    "mov.u64 %rd1, -9223372036854775808;\n\tbfe.u64 %rd2, %rd1, 0, 64;\n\t"
    "shr.u64 %rd3, %rd2, 63;",
])
def test_wide_arithmetic_is_exact_or_unknown(wide):
    body = f"""
\tshl.b32 %r5, %r1, 2;
\tadd.s32 %r6, %r2, %r5;
\t{wide}
\tcvt.u32.u64 %r10, %rd3;
\tadd.s32 %r11, %r1, %r10;
\tshl.b32 %r12, %r11, 2;
\tadd.s32 %r13, %r2, %r12;
\tst.shared.u32 [%r6], %r1;
\tld.shared.u32 %r14, [%r13];
"""
    got = verdict(kernel(body))
    assert isinstance(got, str), got


def test_an_offset_from_the_symbol_wraps_as_on_the_gpu():
    body = """
\tadd.s32 %r6, %r2, -4;
\tadd.s32 %r7, %r6, 4;
\tsetp.eq.u32 %p1, %r7, %r2;
\t@%p1 st.shared.u32 [%r2], %r1;
"""  # (every thread stores to word 0)
    got = verdict(kernel(body))
    assert isinstance(got, str) and "two warps touch the granule at byte 0" in got, got


def test_warps_writing_bytes_of_one_granule_are_not_proven():
    body = """
\tsetp.eq.u32 %p1, %r4, 0;
\tadd.s32 %r10, %r2, %r3;
\t@%p1 st.shared.u8 [%r10], %r1;
\tbar.sync 0;
\t@%p1 ld.shared.u8 %r14, [%r10];
"""  # (the checker keeps 4-byte granules: it reports these as racing)
    assert "two warps touch the granule" in verdict(kernel(body))


@pytest.mark.parametrize("threads,proven", [
    ("// .reqntid 32\n.maxntid 128", False), (".reqntid 0100", False), (".reqntid 0x80", True)])
def test_the_block_size_is_read_as_ptx_reads_it(threads, proven):
    body = """
\tshl.b32 %r5, %r1, 2;
\tadd.s32 %r6, %r2, %r5;
\tst.shared.u32 [%r6], %r1;
\tbar.sync 0;
\tsetp.lt.u32 %p1, %r1, 68;
\t@%p1 ld.shared.u32 %r9, [%r6+128];
"""  # (word tid + 32 for threads below 68: written only if the block has 100 threads or more)
    got = verdict(kernel(body, threads))
    assert isinstance(got, dict) == proven, got


def test_a_bra_uni_whose_lanes_part_ways_is_not_followed():
    body = """
\tsetp.ne.u32 %p1, %r4, 0;
\t@%p1 bra.uni $L_skip;
\tadd.s32 %r10, %r1, %r3;
\tshl.b32 %r11, %r10, 2;
\tadd.s32 %r12, %r2, %r11;
\tst.shared.u32 [%r12], %r1;
$L_skip:
"""
    assert "bra.uni" in verdict(kernel(body))
    assert isinstance(verdict(kernel(body.replace("bra.uni", "bra"))), dict)


def test_a_tree_reduction_is_followed_through_its_divergent_branches():
    step = """
\tsetp.lt.u32 %p1, %r1, STRIDE;
\t@!%p1 bra $L_STRIDE;
\tshl.b32 %r5, %r1, 2;
\tadd.s32 %r6, %r2, %r5;
\tld.shared.u32 %r7, [%r6];
\tld.shared.u32 %r8, [%r6+BYTES];
\tadd.s32 %r7, %r7, %r8;
\tst.shared.u32 [%r6], %r7;
$L_STRIDE:
\tBARRIER
"""
    init = "\tshl.b32 %r5, %r1, 2;\n\tadd.s32 %r6, %r2, %r5;\n\tst.shared.u32 [%r6], %r1;\n" \
           "\tbar.sync 0;\n"

    def tree(skip: int | None) -> str:
        return init + "".join(
            step.replace("STRIDE", str(s)).replace("BYTES", str(4 * s)).replace(
                "BARRIER", "" if s == skip else "bar.sync 0;") for s in (64, 32, 16, 8, 4, 2, 1))

    got = verdict(kernel(tree(None)))
    assert isinstance(got, dict) and got["k"].barriers == 8, got
    assert "two warps touch" in verdict(kernel(tree(64)))  # (stride 32 then reads warp 1's)
    assert isinstance(verdict(kernel(tree(16))), dict)  # (strides below 32: warp 0 alone)


def test_a_loop_whose_length_is_a_parameter_is_skipped_when_it_holds_no_shared_memory():
    loop = PARAM_LOOP
    body = """
\tshl.b32 %r5, %r1, 2;
\tadd.s32 %r6, %r2, %r5;
\tst.shared.u32 [%r6], %r15;
"""
    assert isinstance(verdict(kernel(loop + body)), dict)


# ------------------------------------------------------ the GPU suite's racy/clean twins
def _twin_module(src: str, name: str):
    from instrument.events import classify, constant_registers
    from instrument.ptx import parse
    from instrument.rewrite import _shared_symbols
    from tests import corpus_build

    ptx = corpus_build.compile_cached(src, f"{name}.cu", ["-arch=compute_90a", "-std=c++17",
                                                          "-lineinfo"])
    mod = parse(ptx, name)
    (fn,) = [f for f in mod.functions if f.name == name]
    index = {id(it): i for i, it in enumerate(mod.items)}
    shared, consts = _shared_symbols(mod), constant_registers(fn.body)
    return (fn, mod.items[index[id(fn.header)]:fn.open_index],
            lambda it: classify(it, shared, in_entry=True, constants=consts), shared)


def _twins():
    from tests.kernels import gpu_kernels

    return gpu_kernels.TWINS


# clean twins the proof cannot take, and why: named barriers; an address loaded from memory
NOT_PROVEN = {"rmw"}
# racy twins refused for what makes them racy on the GPU rather than for the race itself:
# the sync's thread count is not its arrive's (the hardware completes a generation of 32)
RACY_REASON = {"named-count": "barrier 1 with a thread count of 64, and of 32"}


@pytest.mark.parametrize("twin", _twins(), ids=lambda t: t.key)
def test_no_racy_twin_is_proven_and_the_checker_agrees_on_the_clean_ones(twin):
    """The GPU suite's racy kernels (CUDA C++ through NVRTC, at their launch's block):
    none is proven, and the refusal names what the checker reports; each clean twin is
    proven unless it needs what the proof does not follow."""
    from instrument.static_proof import prove, trace

    racy = prove(*_twin_module(twin.racy_src, twin.racy_name), dims=twin.block)
    assert isinstance(racy, str), racy
    if twin.key in RACY_REASON:
        assert RACY_REASON[twin.key] in racy, racy
    elif twin.key not in NOT_PROVEN and twin.kinds & {"race.raw", "race.war", "race.waw"}:
        assert "two warps touch" in racy, racy
    if twin.kinds == {"uninit.read"}:
        assert "before any write certain to run" in racy, racy
    clean = prove(*_twin_module(twin.clean_src, twin.clean_name), dims=twin.block)
    assert isinstance(clean, str) == (twin.key in NOT_PROVEN), clean
    if isinstance(clean, str):
        return
    if twin.key.startswith("named"):  # (the replay below orders warps by CTA barriers only:
        # tests/gpu/test_static_proof.py runs these through the checker)
        return
    accesses = trace(*_twin_module(twin.clean_src, twin.clean_name), dims=twin.block)
    if all(a.certain.all() for a in accesses) and host_compiler_here():
        for phase_mode in (True, False):
            for warp_major in (True, False):
                assert not _replay(accesses, phase_mode, warp_major, False)


def host_compiler_here() -> bool:
    from tests.conftest import host_compiler

    return host_compiler()


def _fake_events(monkeypatch, fault_at: int | None = None) -> list:
    """cupy.cuda.Event as the session uses it for proven launches: each keeps what was
    asked of it; from the `fault_at`-th on, looking at one raises the GPU's sticky fault."""
    import cupy

    made: list = []

    class Event:
        def __init__(self, **kw):
            self.log, self.n = [], len(made)
            made.append(self)

        def record(self, stream=None):  # (the launch's stream; None: CuPy's current one)
            self.log.append("record")

        def _look(self, what):
            self.log.append(what)
            if fault_at is not None and self.n >= fault_at:
                raise cupy.cuda.runtime.CUDARuntimeError(716)  # (cudaErrorMisalignedAddress)

        @property
        def done(self):
            self._look("done")
            return True

        def synchronize(self):
            self._look("synchronize")

    monkeypatch.setattr("cupy.cuda.Event", Event)
    return made


@pytest.mark.parametrize("launches", [1, 3])
def test_a_proven_launch_that_faults_is_told_naming_the_kernel(monkeypatch, launches):
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from consan import session as consan_session

    b = SimpleNamespace(instrumented=instrument(SOFTMAX, "s.ptx"))

    class Fn:
        kernel = display_name = "softmax_kernel"
        module = SimpleNamespace(build=lambda roots: (b, False))

    _fake_events(monkeypatch, fault_at=0)
    monkeypatch.setattr(consan_session, "capturing", lambda stream: False)
    out = io.StringIO()
    s = consan_session.Session(consan_session.Options(count_other_launches=False),
                               console=Console(file=out, width=200))
    for _ in range(launches):  # (the second launch finds the first's fault)
        s.launch(Fn(), (4, 1, 1), (128, 1, 1), None, 0, None, False, lambda: None)
    s.stop()
    (f,) = s.report.faults
    assert f["kernel"] == "softmax_kernel" and "misaligned" in f["error"].lower(), f
    assert f["launch_no"] == 1 and "found after the launch" in f["error"], f
    assert not s.report.ok and "kernel softmax_kernel" in out.getvalue()
    assert "the kernel faulted" in out.getvalue()


def test_proven_launches_in_flight_are_bounded(monkeypatch):
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from consan import session as consan_session

    b = SimpleNamespace(instrumented=instrument(SOFTMAX, "s.ptx"))

    class Fn:
        kernel = display_name = "softmax_kernel"
        module = SimpleNamespace(build=lambda roots: (b, False))

    class Running:  # (never seen finished by a look that does not wait)
        def __init__(self, **kw):
            self.waited = False
            made.append(self)

        def record(self, stream=None):
            pass

        done = False

        def synchronize(self):
            self.waited = True

    made: list = []
    monkeypatch.setattr("cupy.cuda.Event", Running)
    monkeypatch.setattr(consan_session, "capturing", lambda stream: False)
    s = consan_session.Session(consan_session.Options(count_other_launches=False),
                               console=Console(file=io.StringIO()))
    n = consan_session.MAX_IN_FLIGHT + 1
    for _ in range(n):
        s.launch(Fn(), (4, 1, 1), (128, 1, 1), None, 0, None, False, lambda: None)
    # (the one past the bound waits for the oldest until half the bound is left)
    left = consan_session.MAX_IN_FLIGHT // 2
    assert [e.waited for e in made] == [True] * (n - left) + [False] * left
    assert len(s._in_flight) == left


# ------------------------------------------- a second review's cases: each was proven
RETURN_IN_REGION = """
\tmov.u32 %r10, 1;
\tsetp.lt.u32 %p2, %r1, 64;
\t@%p2 ld.param.u32 %r10, [k_out];
\tsetp.eq.u32 %p1, %r10, 0;
\t@%p1 bra $L_skip;
\t@!%p2 ret;
$L_skip:
\tbar.sync 0;
\tshl.b32 %r5, %r1, 2;
\tadd.s32 %r6, %r2, %r5;
\tst.shared.u32 [%r6], %r1;
\tbar.sync 0;
\txor.b32 %r7, %r1, 64;
\tshl.b32 %r8, %r7, 2;
\tadd.s32 %r9, %r2, %r8;
\tld.shared.u32 %r11, [%r9];
"""  # (threads 64-127 return: the barriers follow an exit, warps 0-1 read unwritten words)

KNOWN_LANES_PART = """
\tmov.u32 %r10, 0;
\tsetp.ge.u32 %p2, %r1, 32;
\t@%p2 ld.param.u32 %r10, [k_out];
\tadd.s32 %r11, %r10, %r4;
\tsetp.eq.u32 %p1, %r11, 0;
\tsetp.eq.u32 %p3, %r1, 1;
\tsetp.eq.u32 %p4, %r1, 0;
\t@%p1 bra $L_t;
\t@%p3 ld.shared.u32 %r12, [smem];
\tbra.uni $L_end;
$L_t:
\t@%p4 st.shared.u32 [smem], %r1;
$L_end:
"""  # (warp 0's lanes part ways where other warps' direction is unknown: lane 1 may read
# word 0 before lane 0 writes it)

LANES_LEAVE_A_LOOP_APART = """
\tmov.u32 %r10, 0;
\tsetp.ge.u32 %p2, %r1, 32;
\t@%p2 ld.param.u32 %r10, [k_out];
\tsetp.eq.u32 %p3, %r1, 1;
\tsetp.eq.u32 %p4, %r1, 0;
\tmov.u32 %r15, 0;
\tselp.u32 %r16, 3, 2, %p4;
\tadd.s32 %r16, %r16, %r10;
$L_loop:
\tadd.s32 %r15, %r15, 1;
\tsetp.lt.u32 %p1, %r15, %r16;
\t@%p1 bra $L_loop;
\t@%p4 st.shared.u32 [smem], %r1;
\t@%p3 ld.shared.u32 %r12, [smem];
"""  # (lane 0 of warp 0 loops once more than lane 1: lane 1 may read first)


@pytest.mark.parametrize("body", [RETURN_IN_REGION, KNOWN_LANES_PART, LANES_LEAVE_A_LOOP_APART],
                         ids=["return-in-region", "known-lanes-part", "loop-trips-differ"])
def test_threads_that_return_or_part_ways_in_unknown_code_are_not_lost(body):
    got = verdict(kernel(body))
    assert isinstance(got, str), got
    known = body.replace("\t@%p2 ld.param.u32 %r10, [k_out];\n", "")
    assert known != body
    assert isinstance(verdict(kernel(known)), str)  # (every predicate known: refused too)


def test_a_barrier_count_must_be_a_multiple_of_32():
    body = WARP_SUM.replace("BARRIER", "bar.sync 0, 48;")
    assert "not a barrier every thread" in verdict(kernel(body, ".reqntid 48"))
    assert isinstance(verdict(kernel(WARP_SUM.replace("BARRIER", "bar.sync 0;"),
                                     ".reqntid 48")), str)  # (thread 3 reads word 3: unwritten)


def test_the_coverage_script_counts_the_proven_kernels(monkeypatch, capsys):
    from benchmarks import proof_coverage

    monkeypatch.setattr(proof_coverage, "triton_rows", lambda cache: [])
    assert proof_coverage.main([]) == 0
    out = capsys.readouterr().out
    assert "twin racy: 0 of 24 proven" in out and "twin clean: 23 of 24 proven" in out
    assert "bench_clean | block_reduce_sum | 256x1x1 | proven |" in out
    assert "bench_clean | sgemm_tiled | 256x1x1 | proven for its launch" in out


def test_a_cluster_launch_of_a_proven_kernel_is_checked_instrumented(monkeypatch):
    """A proof is made for one CTA; in a cluster launch the shared symbol's address carries
    the CTA's rank, past what its descriptor offsets assume: such a launch is prepared
    instrumented, not run on the proof."""
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from consan import session as consan_session

    b = SimpleNamespace(instrumented=instrument(SOFTMAX, "s.ptx"))

    class Fn:
        kernel = display_name = "softmax_kernel"
        module = SimpleNamespace(build=lambda roots: (b, False))

    prepared, ran = [], []
    monkeypatch.setattr(consan_session, "capturing", lambda stream: False)
    s = consan_session.Session(consan_session.Options(count_other_launches=False),
                               console=Console(file=io.StringIO()))

    def prepare(*a):
        prepared.append(a)
        raise consan_session.NotCheckable("prepared instrumented")

    monkeypatch.setattr(s, "_prepare", prepare)
    s.launch(Fn(), (4, 1, 1), (128, 1, 1), None, 0, None, False, lambda: ran.append(1),
             extra_launch={"cluster": [2, 1, 1]})
    assert prepared and ran == [1]
    stats = s.report.kernels.get("softmax_kernel")
    assert stats is None or not stats.proven
    assert [r["reason"] for r in s.report.not_checked] == ["prepared instrumented"]


# A spin loop the whole CTA runs together (Triton's layer-norm backward takes its lock so):
# thread 0 stores a flag from a global atomic, a barrier, every thread loads it and loops
# again while it is set; how many trips is not known before launch.
SPIN = """
\tld.param.u64 %rd1, [k_out];
\tsetp.eq.u32 %p1, %r1, 0;
\tsetp.eq.u32 %p3, %r3, 0;
\tmov.u32 %r9, 0;
$L_top:
\tTOP
\t@%p1 atom.global.add.u32 %r5, [%rd1], 1;
\t@%p1 st.shared.u32 [%r2], %r5;
\tbar.sync 0;
\tLOAD
\tsetp.ne.u32 %p2, %r6, 0;
\t@%p2 bra $L_top;
"""
SPIN_LOAD = "ld.shared.u32 %r6, [%r2];"


def _spin(top: str = "bar.sync 0;", load: str = SPIN_LOAD) -> str:
    return SPIN.replace("TOP", top).replace("LOAD", load)


def test_a_loop_every_thread_runs_on_one_loaded_flag_is_followed_for_any_trip_count():
    got = verdict(kernel(_spin()))
    assert isinstance(got, dict) and got["k"].barriers == 2, got  # (the one-trip run's)
    # without the barrier at its top, thread 0's next store meets the other warps' loads
    # of this trip: only the runs of more than one trip hold that pair
    assert "two warps touch the granule at byte 0" in verdict(kernel(_spin(top="")))
    # what follows the loop is judged after any trip count: here a store the last trip's
    # loads meet
    after = _spin() + "\t@%p1 st.shared.u32 [%r2], %r1;\n"
    assert "two warps touch the granule at byte 0" in verdict(kernel(after))
    assert isinstance(verdict(kernel(after.replace("\t@%p1 st", "\tbar.sync 0;\n\t@%p1 st"))),
                      dict)


@pytest.mark.parametrize("load, why", [
    # each thread its own word: the threads may leave the loop at different trips
    ("shl.b32 %r7, %r1, 2;\n\tadd.s32 %r8, %r2, %r7;\n\tld.shared.u32 %r6, [%r8];",
     "under a branch whose direction is not known"),
    # loaded by warp 0 alone: the others' %r6 is another value
    ("@%p3 ld.shared.u32 %r6, [%r2];", "under a branch whose direction is not known"),
    # a global load: another CTA may store between two threads' loads
    ("ld.global.u32 %r6, [%rd1];", "under a branch whose direction is not known"),
    # a register the trips step: the second trip would not repeat the first
    (SPIN_LOAD + "\n\tadd.s32 %r9, %r9, 4;", "second trip leaves other values"),
    # an asynchronous copy: its groups are counted across trips
    (SPIN_LOAD + "\n\tcp.async.ca.shared.global [%r2+64], [%rd1], 4;",
     "in a loop whose trip count is not known"),
])
def test_a_loop_of_unknown_trip_count_is_followed_only_on_one_uniform_condition(load, why):
    assert why in verdict(kernel(_spin(load=load)))


def test_a_uniform_loop_entered_twice_is_not_followed():
    outer = f"""
\tmov.u32 %r10, 0;
$L_outer:
{_spin()}
\tadd.s32 %r10, %r10, 1;
\tsetp.lt.u32 %p4, %r10, 2;
\t@%p4 bra $L_outer;
"""
    assert "entered more than once" in verdict(kernel(outer))



def test_an_address_plus_an_index_times_a_stride_in_one_mad_is_followed():
    # (Triton's layer-norm backward: mad.lo.s32 %r214, %r2, 12, %r31 with %r31 an address)
    body = "\tmad.lo.s32 %r13, %r1, 4, %r2;\n\tst.shared.u32 [%r13], %r1;\n\tbar.sync 0;\n" \
        "\tld.shared.u32 %r14, [%r13];\n"
    assert isinstance(verdict(kernel(body)), dict)
    # the same with a stride that makes two threads' words meet
    assert "two warps touch" in verdict(kernel(body.replace(", 4, %r2", ", 0, %r2")))


TWO_ARRAYS = """
.version 8.0
.target sm_90a
.address_size 64
.shared .align 4 .b8 a[260];
.shared .align 16 .u32 b[2][32];
.visible .entry k(.param .u64 k_out)
.reqntid 64
{
\t.reg .b32 %r<24>;
\tmov.u32 %r1, %tid.x;
\tshl.b32 %r5, %r1, 2;
\tmov.u32 %r2, a;
\tadd.s32 %r6, %r2, %r5;
\tmov.u32 %r3, b;
\tadd.s32 %r7, %r3, %r5;
\tst.shared.u32 [%r6], %r1;
\tst.shared.u32 [%r7], %r1;
\tbar.sync 0;
\tld.shared.u32 %r8, [%r6+OFF_A];
\tld.shared.u32 %r9, [%r7+OFF_B];
\tret;
}
"""


@pytest.mark.parametrize("off_a, off_b, why", [
    (0, 0, None),
    (4, 0, None),  # (thread 63 reads a[256..259]: inside `a`, but never written)
    (0, 4, "past the end of `b`"),
    (256, 0, "past the end of `a`"),
])
def test_accesses_through_several_variables_stay_inside_each(off_a, off_b, why):
    got = verdict(TWO_ARRAYS.replace("OFF_A", str(off_a)).replace("OFF_B", str(off_b)))
    if why is None:
        assert isinstance(got, dict) if off_a == 0 else "byte 256 of `a`" in got, got
    else:
        assert why in got, got


def test_a_variable_of_no_declared_size_beside_another_is_not_followed():
    ptx = TWO_ARRAYS.replace(".shared .align 4 .b8 a[260];", ".extern .shared .align 4 .b8 a[];")
    assert "no declared size" in verdict(ptx.replace("OFF_A", "0").replace("OFF_B", "0"))


# Triton's layouts give several warps a copy of one reduced row, and each stores it: the
# same bytes at the same addresses (docs/model.md, "Replicated stores"). Here every warp
# loads the 32 words warp 0 wrote, converts them, and stores them to one place.
REPLICAS = """
\tshl.b32 %r5, %r4, 2;
\tadd.s32 %r6, %r2, %r5;
\tsetp.eq.u32 %p1, %r3, 0;
\t@%p1 st.shared.u32 [%r6], %r1;
\tbar.sync 0;
\tld.shared.u32 %r7, [%r6];
\tVALUE
\tbar.sync 0;
\tshl.b32 %r9, %r4, 1;
\tadd.s32 %r10, %r2, %r9;
\tst.shared.u16 [%r10+256], %r8;
\tbar.sync 0;
\tld.shared.u16 %r11, [%r10+256];
"""


@pytest.mark.parametrize("value, proven", [
    ("cvt.u16.u32 %r8, %r7;", True),  # (the same word in every warp's lane)
    ("add.u32 %r8, %r7, %r3;", False),  # (each warp its own value)
    ("ld.param.u64 %rd1, [k_out];\n\tld.global.u32 %r8, [%rd1];", False),  # (not known equal)
])
def test_warps_storing_the_same_bytes_to_the_same_place_are_replicas(value, proven):
    got = verdict(kernel(REPLICAS.replace("VALUE", value)))
    assert isinstance(got, dict) == proven, got
    if not proven:
        assert "two warps touch the granule at byte 256" in got


def test_a_replica_store_still_meets_another_warps_read():
    body = REPLICAS.replace("VALUE", "cvt.u16.u32 %r8, %r7;").replace(
        "\tbar.sync 0;\n\tld.shared.u16 %r11", "\tld.shared.u16 %r11")
    assert "two warps touch the granule at byte 256" in verdict(kernel(body))


@pytest.mark.parametrize("body", [
    # warps 1 and 3 store 1 << 63, warps 0 and 2 store 0: values compared in all 64 bits
    "cvt.u64.u32 %rd2, %r3;\n\tshl.b64 %rd3, %rd2, 63;\n\tst.shared.u64 [smem], %rd3;",
    # the same through a keyed value
    "ld.shared.u32 %r7, [smem+64];\n\tcvt.u64.u32 %rd2, %r7;\n\tcvt.u64.u32 %rd4, %r3;\n"
    "\tshl.b64 %rd4, %rd4, 63;\n\txor.b64 %rd3, %rd2, %rd4;\n\tst.shared.u64 [smem], %rd3;",
    # every warp's lanes store 0 and 1 to one word: which lands differs from warp to warp
    "and.b32 %r5, %r1, 1;\n\tst.shared.u32 [smem], %r5;",
])
def test_stores_that_differ_are_no_replicas(body):
    pre = "\tst.shared.u32 [smem+64], %r2;\n\tbar.sync 0;\n"  # (a word every warp loads)
    got = verdict(kernel(pre + f"\t{body}\n\tbar.sync 0;\n\tld.shared.u32 %r9, [smem];\n"))
    assert "two warps touch the granule at byte 0" in got, got


# a loop of a known trip count, TRIPS, around BODY; each thread's own word in %r18
LONG_LOOP = """
\tmov.u32 %r15, 0;
\tshl.b32 %r17, %r1, 2;
\tadd.s32 %r18, %r2, %r17;
\tsetp.eq.u32 %p1, %r1, 0;
$L_loop:
BODY
\tadd.s32 %r15, %r15, 1;
\tsetp.lt.u32 %p5, %r15, TRIPS;
\t@%p5 bra $L_loop;
"""
# each trip stores to one of two rows of words, by the counter's low bit
STEPPED_STORE = """\tand.b32 %r16, %r15, 1;
\tshl.b32 %r16, %r16, 9;
\tadd.s32 %r19, %r18, %r16;
\tst.shared.u32 [%r19], %r1;"""


@pytest.mark.parametrize("body, after, proven", [
    # its own word each trip, a barrier, a read of a neighbour's word, a barrier
    ("\tst.shared.u32 [%r18], %r15;\n\tbar.sync 0;\n\txor.b32 %r20, %r17, 4;\n"
     "\tadd.s32 %r21, %r2, %r20;\n\tld.shared.u32 %r6, [%r21];\n\tbar.sync 0;", "", True),
    # the same, and after the loop a read at the counter's last value: the counter is
    # unknown after the widened trips, so every trip is run again, and it is proven
    ("\tst.shared.u32 [%r18], %r15;\n\tbar.sync 0;", "\tshl.b32 %r20, %r15, 2;\n"
     "\tand.b32 %r20, %r20, 4;\n\tadd.s32 %r21, %r18, %r20;\n\tld.shared.u32 %r6, "
     "[%r21];", "small"),
    # thread 0 stores the word every thread reads after the barrier, with no barrier
    # before its next store: the trips meet
    ("\t@%p1 st.shared.u32 [%r2], %r15;\n\tbar.sync 0;\n\tld.shared.u32 %r6, [%r2];",
     "", False),
    # every thread stores one word on trip 50 only
    ("\tsetp.eq.u32 %p4, %r15, 50;\n\t@%p4 st.shared.u32 [%r2], %r1;\n\tbar.sync 0;",
     "", False),
    # the counter steps a store's address: the widened trip cannot follow it
    (STEPPED_STORE + "\n\tbar.sync 0;", "", "small"),
], ids=["repeats", "counter-after", "trips-meet", "late-trip", "stepped-address"])
def test_a_long_loop_of_known_trip_count_is_followed_as_a_uniform_one(monkeypatch, body,
                                                                       after, proven):
    """Past WIDEN_AT trips the registers a loop steps become unknown and its trips are
    followed as a uniform loop's (one or three of them): a K loop of thousands of trips
    costs a few on the host. Where that refuses, every trip is run, as before."""
    from instrument import static_proof

    monkeypatch.setattr(static_proof, "MAX_STEPS", 400)
    long = kernel(LONG_LOOP.replace("BODY", body).replace("TRIPS", "100000") + after)
    short = kernel(LONG_LOOP.replace("BODY", body).replace("TRIPS", "60") + after)
    if proven is True:
        assert isinstance(verdict(long), dict)
    elif proven == "small":  # (proven only where every trip fits the host's bound)
        assert "more than 400 instructions" in verdict(long)
        monkeypatch.setattr(static_proof, "MAX_STEPS", 20_000)
        assert isinstance(verdict(short), dict), verdict(short)
    else:
        assert isinstance(verdict(long), str)
        monkeypatch.setattr(static_proof, "MAX_STEPS", 20_000)
        assert "two warps touch the granule at byte 0" in verdict(short)


@pytest.mark.parametrize("racy", [False, True], ids=["clean", "no-barrier-after-reads"])
def test_bench_cleans_sgemm_at_4096_cubed_is_proven_for_its_launch(monkeypatch, racy):
    """Its K loop runs 256 trips: every one run on the host was past MAX_STEPS. Without the
    barrier after a trip's reads, the next trip's tile stores meet them."""
    from instrument import static_proof
    from instrument.static_proof import Proof, prove
    from tests.kernels import gpu_kernels as K

    monkeypatch.setattr(static_proof, "MAX_STEPS", 4000)  # (a widened run: ~3,300)
    src = K.SGEMM_SRC
    if racy:
        head, sep, tail = src.rpartition("__syncthreads();")
        src = head + tail
    params = {3: (4096, 32), 4: (4096, 32), 5: (4096, 32)}
    got = prove(*_twin_module(src, "sgemm_tiled"), dims=(256, 1, 1), params=params)
    if racy:
        assert "two warps touch the granule" in got, got
    else:
        assert isinstance(got, Proof) and got.params == 3, got


def _grid_kernel(expr: str, cmp: str, bound: str) -> str:
    """Every thread of the CTA stores to one word unless `setp.{cmp} %p1, <expr>, bound`:
    a proof holds only where the launch's grid decides the comparison true in every CTA.
    `expr` computes %r6 (32 bits) or %rd3 (64) from %r5 = %ctaid.x."""
    return f"""
.version 8.0
.target sm_90a
.address_size 64
.shared .align 4 .b8 smem[64];
.visible .entry k(.param .u32 k_n)
.reqntid 64
{{
\t.reg .b32 %r<12>;
\t.reg .b16 %rs<2>;
\t.reg .pred %p<4>;
\t.reg .b64 %rd<6>;
\tmov.u32 %r1, %tid.x;
\tmov.u32 %r5, %ctaid.x;
\tld.param.u32 %r2, [k_n];
{expr}
\tsetp.{cmp} %p1, {bound};
\t@%p1 bra $L_skip;
\tst.shared.u32 [smem], %r1;
$L_skip:
\tbar.sync 0;
\tret;
}}
"""


def _grid_verdict(ptx: str, grid: int, n: int = 0):
    from instrument.events import classify, constant_registers
    from instrument.ptx import parse
    from instrument.rewrite import _shared_symbols
    from instrument.static_proof import prove

    mod = parse(ptx, "t.ptx")
    fn = mod.functions[0]
    index = {id(it): i for i, it in enumerate(mod.items)}
    shared, consts = _shared_symbols(mod), constant_registers(fn.body)
    return prove(fn, mod.items[index[id(fn.header)]:fn.open_index],
                 lambda it: classify(it, shared, in_entry=True, constants=consts), shared,
                 params={0: (n, 32)}, grid=(grid, 1, 1))


def test_a_bounds_check_on_ctaid_is_decided_by_the_launchs_grid():
    """`if (blockIdx.x * 64 + threadIdx.x < n)`: known true in every CTA of a grid of
    n / 64 CTAs, so the store it skips is never run; a grid of one CTA more runs it."""
    from instrument.static_proof import Proof

    ptx = _grid_kernel("\tmad.lo.s32 %r6, %r5, 64, %r1;", "lt.s32", "%r6, %r2")
    got = _grid_verdict(ptx, 16, n=1024)
    assert isinstance(got, Proof) and got.grid and "the launch's grid" in got.sentence()
    assert "two warps touch" in _grid_verdict(ptx, 17, n=1024)
    # without the grid nothing is known of %ctaid: the store may run
    from instrument.static_proof import prove  # noqa: F401 - (the same call, no grid)
    assert "two warps touch" in verdict(ptx)


def test_a_loop_the_threads_pass_unfollowed_leaves_no_bounds():
    """A loop of unknown length that touches no shared memory is passed, and what it writes
    is unknown after it, bounds too: here %r5 = %ctaid.x + 100 n, n loaded from memory, so
    the store every thread makes once %r5 >= 200 races (a review found the first trip's
    bounds [100, 199] kept, and the proof made)."""
    body = """
\tmov.u32 %r5, %ctaid.x;
\tld.param.u64 %rd1, [k_out];
\tld.global.u32 %r6, [%rd1];
\tmov.u32 %r7, 0;
$L_u:
\tadd.s32 %r5, %r5, 100;
\tadd.s32 %r7, %r7, 1;
\tsetp.lt.u32 %p2, %r7, %r6;
\t@%p2 bra $L_u;
\tsetp.lt.u32 %p3, %r5, 200;
\t@!%p3 st.shared.u32 [smem], %r1;
\tbar.sync 0;
"""
    from instrument.events import classify, constant_registers
    from instrument.ptx import parse
    from instrument.rewrite import _shared_symbols
    from instrument.static_proof import prove

    mod = parse(kernel(body), "t.ptx")
    fn = mod.functions[0]
    index = {id(it): i for i, it in enumerate(mod.items)}
    shared, consts = _shared_symbols(mod), constant_registers(fn.body)
    got = prove(fn, mod.items[index[id(fn.header)]:fn.open_index],
                lambda it: classify(it, shared, in_entry=True, constants=consts), shared,
                grid=(100, 1, 1))
    assert "two warps touch the granule at byte 0" in got, got


def test_a_store_no_thread_makes_is_no_access():
    """A guard no thread passes leaves an access of no threads: nothing to judge (it made
    the rules fail on an empty table)."""
    assert isinstance(verdict(kernel("\tsetp.gt.u32 %p1, %r1, 4096;\n"
                                     "\t@%p1 st.shared.u32 [smem], %r1;")), dict)


@pytest.mark.parametrize("amount", ["65539", "%r9"])
@pytest.mark.parametrize("op", ["shl.b16", "shr.u16"])
def test_a_shift_amount_is_a_u32_whatever_the_shifts_type(op, amount):
    """`shl.b16 d, a, 65539` shifts by 65539, past the 16 bits: 0, not a shift by 3 (the
    evaluator masked an immediate amount to the operation's type, and the grid's bounds
    read a register's as 16 bits: a review)."""
    body = ("\tmov.u32 %r9, 65539;\n\tcvt.u16.u32 %rs1, %r5;\n\tadd.u16 %rs1, %rs1, 1;\n"
            f"\t{op} %rs1, %rs1, {amount};\n\tcvt.u32.u16 %r6, %rs1;")
    assert "two warps touch" in _grid_verdict(_grid_kernel(body, "ge.u32", "%r6, 1"), 16)
    known = body.replace("cvt.u16.u32 %rs1, %r5", "mov.u16 %rs1, 1")
    assert "two warps touch" in _grid_verdict(_grid_kernel(known, "ge.u32", "%r6, 1"), 16)


_OPS = [("add.s32", lambda x, c: x + c), ("sub.s32", lambda x, c: x - c),
        ("mul.lo.u32", lambda x, c: x * c), ("shl.b32", lambda x, c: x << c),
        ("shr.u32", lambda x, c: x >> c), ("and.b32", lambda x, c: x & c),
        ("rem.u32", lambda x, c: x % c), ("div.u32", lambda x, c: x // c),
        ("min.u32", min), ("max.u32", max), ("xor.b32", lambda x, c: x ^ c),
        ("shr.s32", lambda x, c: x >> c), ("cvt16", lambda x, c: x & 0xFFFF)]


def _chain_value(chain, consts, x: int) -> int:
    """PTX's 32-bit result of the operations of `chain` on x."""
    m32 = (1 << 32) - 1
    for (op, f), c in zip(chain, consts, strict=True):
        x = f(x if not op.endswith("s32") else (x ^ (1 << 31)) - (1 << 31), c) & m32
        if op == "shl.b32" and c >= 32 or op.startswith("shr") and c >= 32:
            x = 0 if not (op == "shr.s32" and x >> 31) else m32
    return x


def _holds(cmp: str, v: int, b: int) -> bool:
    s = (lambda z: z - (1 << 32) if z >> 31 else z) if cmp.endswith("s32") else int
    a, b = s(v), s(b)
    return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "ne": a != b,
            "eq": a == b}[cmp[:2]]


def test_the_grids_bounds_never_decide_a_comparison_some_cta_breaks():
    """Random chains of integer operations on %ctaid.x and a comparison: wherever the
    proof holds, the comparison is true in every CTA of the grid (PTX's 32-bit wrapping
    arithmetic, worked here in Python). Some must hold, or the test tests nothing."""
    import random

    from instrument.static_proof import Proof

    rng = random.Random(7)
    m32 = (1 << 32) - 1
    held = 0
    for _ in range(400):
        grid = rng.choice([1, 2, 5, 64, 1000, 1 << 20])
        chain = [rng.choice(_OPS) for _ in range(rng.randint(1, 3))]
        consts = [rng.choice([0, 1, 3, 7, 31, 64, 255, 1 << 20, (1 << 31) - 1, m32])
                  for _ in chain]
        body, src = [], "%r5"
        for i, ((op, _), c) in enumerate(zip(chain, consts, strict=True)):
            if op.startswith(("rem", "div")) and c == 0:
                c = consts[i] = 3
            if op.startswith(("shl", "shr")):
                c = consts[i] = c % 40
            if op == "cvt16":  # (through a 16-bit register and back)
                body.append(f"\tcvt.u16.u32 %rs1, {src};\n\tcvt.u32.u16 %r{7 + i}, %rs1;")
            else:
                body.append(f"\t{op} %r{7 + i}, {src}, {c};")
            src = f"%r{7 + i}"
        body.append(f"\tmov.u32 %r6, {src};")
        cmp = rng.choice(["lt.u32", "le.u32", "gt.u32", "ge.s32", "lt.s32", "ne.u32",
                          "eq.u32"])

        # (near a value some CTA computes, half the time: the bounds' edges)
        bound = rng.choice([0, 1, 64, 1000, 1 << 20, 1 << 30, m32]) if rng.random() < 0.5 \
            else (_chain_value(chain, consts, rng.choice([0, grid - 1, rng.randrange(grid)])) +
                  rng.choice([-1, 0, 1])) & m32
        other = None
        if rng.random() < 0.25:  # (against another value of %ctaid: %ctaid + c2)
            other = rng.choice([0, 1, 5, 1000])
            body.append(f"\tadd.u32 %r11, %r5, {other};")
        ptx = _grid_kernel("\n".join(body), cmp, f"%r6, {bound}" if other is None else
                           "%r6, %r11")
        got = _grid_verdict(ptx, grid)
        if isinstance(got, Proof):
            held += 1
            probe = set(range(min(grid, 4096))) | set(range(max(grid - 4096, 0), grid)) | \
                {rng.randrange(grid) for _ in range(256)}
            bad = [c for c in sorted(probe) if not _holds(
                cmp, _chain_value(chain, consts, c), bound if other is None else
                (c + other) & m32)]
            assert not bad, (body, cmp, bound, grid, bad[:3])
    assert held >= 20, held


# every thread zeroes its word, a barrier, ATOMICS on word tid % 8 (%r15), WHERE (a barrier
# or none), and every thread reads word tid % 8
_ATOMIC_BODY = """
\tshl.b32 %r12, %r1, 2;
\tadd.s32 %r13, %r2, %r12;
\tst.shared.u32 [%r13], 0;
\tbar.sync 0;
\tand.b32 %r14, %r1, 7;
\tshl.b32 %r14, %r14, 2;
\tadd.s32 %r15, %r2, %r14;
ATOMICS
WHERE
\tld.shared.u32 %r16, [%r15];
"""


@pytest.mark.parametrize("atomics, where, why", [
    # every warp adds into eight words, a barrier, every thread reads one
    ("\tatom.shared.add.u32 %r17, [%r15], 1;", "\tbar.sync 0;", None),
    ("\tred.shared.add.u32 [%r15], %r1;", "\tbar.sync 0;", None),
    ("\tatom.shared::cta.relaxed.cta.max.u32 %r17, [%r15], %r1;", "\tbar.sync 0;", None),
    # no barrier: a read meets another warp's atomic (the checker's race.raw)
    ("\tatom.shared.add.u32 %r17, [%r15], 1;", "", "two warps touch the granule"),
    # an atomic and a plain store of another warp
    ("\tatom.shared.add.u32 %r17, [%r15], 1;\n\tsetp.eq.u32 %p4, %r3, 1;\n"
     "\t@%p4 st.shared.u32 [%r15], 0;", "\tbar.sync 0;", "two warps touch the granule"),
    # an atomic on bytes nothing wrote (it reads them: the checker's uninit.read)
    ("\tatom.shared.add.u32 %r17, [%r15+512], 1;", "\tbar.sync 0;",
     "before any write certain to run"),
    # its result is a value loaded from memory: no address
    ("\tatom.shared.add.u32 %r17, [%r15], 4;\n\tand.b32 %r17, %r17, 4;\n"
     "\tadd.s32 %r18, %r2, %r17;\n\tld.shared.u32 %r19, [%r18];", "\tbar.sync 0;",
     "not known before launch"),
    # another CTA's bytes
    ("\tatom.shared::cluster.add.u32 %r17, [%r15], 1;", "\tbar.sync 0;",
     "not a plain load or store"),
    # an acquire (the checker models its order in part)
    ("\tatom.acquire.cta.shared.add.u32 %r17, [%r15], 1;", "\tbar.sync 0;",
     "not a plain load or store"),
], ids=["atom-add", "red-add", "atom-relaxed-max", "no-barrier", "beside-a-store",
        "unwritten", "result-as-address", "cluster", "acquire"])
def test_shared_atomics_never_conflict_with_each_other_only(atomics, where, why):
    """Atomics are writes that read their bytes, except that two never conflict (the
    checker's rule): warps' atomics on one word between the same barriers are proven, any
    other access of another warp there is not. Every interleaving the checker is given of
    a proven one finds nothing, and some of a refused one a finding."""
    from instrument.events import classify, constant_registers
    from instrument.ptx import parse
    from instrument.rewrite import _shared_symbols
    from instrument.static_proof import trace

    ptx = kernel(_ATOMIC_BODY.replace("ATOMICS", atomics).replace("WHERE", where),
                 ".reqntid 64")
    got = verdict(ptx)
    if why is None:
        assert isinstance(got, dict), got
    else:
        assert why in got, got
    if why is None or why.startswith("two warps"):
        mod = parse(ptx, "t.ptx")
        fn = mod.functions[0]
        index = {id(it): i for i, it in enumerate(mod.items)}
        shared, consts = _shared_symbols(mod), constant_registers(fn.body)
        accesses = trace(fn, mod.items[index[id(fn.header)]:fn.open_index],
                         lambda it: classify(it, shared, in_entry=True, constants=consts),
                         shared)
        if not host_compiler_here():
            return
        found = set()
        for phase_mode in (True, False):
            for warp_major in (True, False):
                for reverse in (True, False):
                    found |= _replay(accesses, phase_mode, warp_major, reverse)
        assert bool(found) == (why is not None), found


def test_a_proof_that_would_run_too_long_on_the_host_is_refused(monkeypatch):
    from instrument import static_proof

    monkeypatch.setattr(static_proof, "MAX_STEPS", 300)  # (20,000 steps take seconds)

    # (a loop of a known trip count whose store's address its counter steps: every trip
    # is run)
    loop = LONG_LOOP.replace("BODY", STEPPED_STORE)
    trips = static_proof.MAX_STEPS // 7
    assert not isinstance(verdict(kernel(loop.replace("TRIPS", str(trips - 10)))), str)
    got = verdict(kernel(loop.replace("TRIPS", str(trips + 10))))
    assert f"more than {static_proof.MAX_STEPS} instructions" in got


def _bfe_reference(a: int, pos: int, ln: int, bits: int, signed: bool) -> int:
    """PTX ISA's bfe, bit by bit: d[i] = a[pos + i] for i < len and pos + i <= msb, else
    the sign bit a[min(pos + len - 1, msb)] (0 when unsigned or len is 0)."""
    msb = bits - 1
    sbit = 0 if not signed or ln == 0 else (a >> min(pos + ln - 1, msb)) & 1
    return sum(((a >> (pos + i)) & 1 if i < ln and pos + i <= msb else sbit) << i
               for i in range(bits))


@pytest.mark.parametrize("type_", ["u32", "s32", "u64", "s64"])
def test_bit_field_extract_is_evaluated_as_the_isa_defines_it(type_):
    """Triton's sm_80 matmul and attention kernels build their shared addresses with
    `bfe.s32`: every (a, pos, len) the evaluator calls known must give the ISA's bits."""
    import numpy as np

    from instrument.ptx import parse
    from instrument.static_proof import _Prover, _Val

    bits, signed = int(type_[1:]), type_[0] == "s"
    mod = parse(kernel(""), "t.ptx")
    p = _Prover(mod.functions[0], (1024, 1, 1), lambda it: None, set())
    rng = np.random.default_rng(7)
    a = rng.integers(0, 1 << 63, 1024, dtype=np.uint64) & np.uint64((1 << bits) - 1)
    pos = rng.integers(0, bits + 4, 1024).astype(np.uint64)
    ln = rng.integers(0, bits + 4, 1024).astype(np.uint64)
    r = "%rd" if bits == 64 else "%r"
    for name, v in ((f"{r}1", a), (f"{r}2", pos), (f"{r}3", ln)):
        p.regs[name] = _Val(None, v, np.ones(1024, dtype=bool))
    got = p._evaluate(["bfe", type_], [f"{r}4", f"{r}1", f"{r}2", f"{r}3"], [f"{r}4"])
    out = got[f"{r}4"]
    assert out.known.sum() > 600  # (unknown only where pos or len is past the word)
    for i in np.nonzero(out.known)[0].tolist():
        want = _bfe_reference(int(a[i]), int(pos[i]), int(ln[i]), bits, signed)
        assert int(out.a[i]) == want, (type_, int(a[i]), int(pos[i]), int(ln[i]))


def test_a_launch_values_are_asked_only_where_the_proof_needs_them():
    """The front ends give a launch's integer arguments and tensor-map sizes as a function:
    the session calls it only where the proof for the block alone was refused for a value
    not known before launch, proves once per set of values, and keeps to its bound."""
    from types import SimpleNamespace

    from consan import session as consan_session
    from instrument.static_proof import Proof, Refusal

    held = Proof("k", 128, accesses=1, barriers=1)
    unknown = Refusal("a loop over a parameter not known before launch")
    unknown.unknown = True
    asked, proved = [], []

    def prove_at(kernel, block, scalars=None, maps=(), cluster=None, grid=None):
        proved.append(scalars)
        return unknown if scalars is None or scalars[2][0] > 64 else held

    s = consan_session.Session(consan_session.Options(count_other_launches=False),
                               print_findings=False)
    fn = SimpleNamespace(kernel="k")
    b = SimpleNamespace(instrumented=SimpleNamespace(prove_at=prove_at))

    def values(k):
        return lambda: asked.append(k) or ({2: (k, 32)}, ())

    assert s._launch_proof(fn, b, (128, 1, 1), values(8)) is held
    assert s._launch_proof(fn, b, (128, 1, 1), values(8)) is held  # (kept for those values)
    assert s._launch_proof(fn, b, (128, 1, 1), values(100)) is None
    assert asked == [8, 8, 100] and proved == [None, {2: (8, 32)}, {2: (100, 32)}]
    for k in range(200, 200 + consan_session.PROOFS_PER_KERNEL):
        s._launch_proof(fn, b, (128, 1, 1), values(k))
    assert len(proved) == 1 + consan_session.PROOFS_PER_KERNEL  # (the bound: no more tries)

    always = SimpleNamespace(instrumented=SimpleNamespace(
        prove_at=lambda *a, **k: held))
    asked.clear()
    assert s._launch_proof(fn, always, (128, 1, 1), values(8)) is held and asked == []

    # a proof for a launch's grid: made once per grid, the grid given as three numbers
    grids = []

    def by_grid(kernel, block, scalars=None, maps=(), cluster=None, grid=None):
        grids.append(grid)
        return unknown if grid is None or grid[0] > 64 else held
    g = SimpleNamespace(instrumented=SimpleNamespace(prove_at=by_grid))
    assert s._launch_proof(fn, g, (128, 1, 1), None, None, (8,)) is held
    assert s._launch_proof(fn, g, (128, 1, 1), None, None, (8, 1, 1)) is held
    assert s._launch_proof(fn, g, (128, 1, 1), None, None, (100, 1, 1)) is None
    assert grids == [None, (8, 1, 1), (100, 1, 1)]


def _cta_kernel(param: str, body: str) -> str:
    """A module of one kernel `k(param)` of 64 threads, its 256 bytes of shared memory
    `smem`, registers %r, %p and %rd declared: `body`, then a return."""
    return f"""
.version 8.0
.target sm_90a
.address_size 64
.shared .align 4 .b8 smem[256];
.visible .entry k(.param {param})
.reqntid 64
{{
\t.reg .b32 %r<12>;
\t.reg .pred %p<4>;
\t.reg .b64 %rd<4>;
{body}
\tret;
}}
"""


def _fork_kernel(second: str, branches: int = 1, skip: bool = False, on: str = "%r5") -> str:
    """Every thread writes its word and, after a barrier, reads its neighbour's; then, where
    `%ctaid.x < n` (the same in all of a CTA's threads, not known before launch), `second`
    runs: a persistent kernel's next tile (`skip`: a branch past it where `%ctaid.x >= n`).
    `branches` such conditions in a row (on `%ctaid.x < n + i`) multiply the ways. `on`: the
    register compared in place of `%ctaid.x`."""
    tests = "".join(f"""
\tadd.u32 %r9, %r2, {i};
\tsetp.lt.u32 %p2, %r5, %r9;
\t@%p2 bra $L_t{i};
$L_t{i}:""" for i in range(1, branches))
    jump = f"\tsetp.ge.u32 %p1, {on}, %r2;\n\t@%p1 bra $L_end;" if skip else \
        f"\tsetp.lt.u32 %p1, {on}, %r2;\n\t@%p1 bra $L_next;\n\tbra.uni $L_end;\n$L_next:"
    return _cta_kernel(".u32 k_n", f"""\tmov.u32 %r1, %tid.x;
\tmov.u32 %r5, %ctaid.x;
\tld.param.u32 %r2, [k_n];
\tshl.b32 %r3, %r1, 2;
\tmov.u32 %r4, smem;
\tadd.u32 %r6, %r4, %r3;
\tadd.u32 %r7, %r1, 1;
\tand.b32 %r7, %r7, 63;
\tshl.b32 %r7, %r7, 2;
\tadd.u32 %r7, %r4, %r7;
\tst.shared.u32 [%r6], %r1;
\tbar.sync 0;
\tld.shared.u32 %r8, [%r7];{tests}
{jump}
{second}
$L_end:""")


def test_a_branch_every_thread_of_a_cta_takes_alike_is_followed_each_way_for_a_launch():
    """A persistent kernel's `if (tile < n)` around its next tile is the same in all of a
    CTA's threads but not known before launch: in a proof for one launch's grid each way is
    run on its own, certainly, so a barrier or a second use of a buffer inside it is
    followed; a race on one way alone is found there."""
    from instrument.static_proof import Proof

    tile, bad = "\tbar.sync 0;\n\tst.shared.u32 [%r6], %r8;", "\tst.shared.u32 [%r6], %r8;"
    clean, racy = _fork_kernel(tile), _fork_kernel(bad)
    got = _grid_verdict(clean, 8, n=4)  # (CTAs 0-3 run the second tile, 4-7 do not)
    assert isinstance(got, Proof), got
    # without the grid the proof is made for no launch, and nothing is forked
    assert "a barrier not every thread of the CTA is certain to reach" in verdict(clean)
    why = _grid_verdict(racy, 8, n=4)
    assert not isinstance(why, Proof) and "two warps touch" in why, why
    # (the way a run takes first is the branch taken: here the race is on the other way)
    assert isinstance(_grid_verdict(_fork_kernel(tile, skip=True), 8, n=4), Proof)
    assert "two warps touch" in _grid_verdict(_fork_kernel(bad, skip=True), 8, n=4)
    # a condition that may differ between a CTA's threads (a word each read) is not forked
    assert "not every thread of the CTA is certain to reach" in _grid_verdict(
        _fork_kernel(tile, on="%r8"), 8, n=4)
    # where the grid's bounds decide it, one way alone is run: none of the CTAs runs the
    # second tile (n = 0), or all of them do (4 CTAs, n = 4)
    assert isinstance(_grid_verdict(racy, 4, n=0), Proof)
    assert "two warps touch" in _grid_verdict(racy, 4, n=4)


def test_the_ways_through_unknown_branches_are_bounded():
    """Each branch forked at doubles the runs: past static_proof.MAX_PATHS ways the kernel
    is refused (and instrumented), as a proof taking too long on the host would be."""
    from instrument.static_proof import MAX_PATHS, Proof

    clean = "\tbar.sync 0;\n\tst.shared.u32 [%r6], %r8;"
    assert isinstance(_grid_verdict(_fork_kernel(clean, branches=4), 64, n=4), Proof)
    assert 2 ** 5 > MAX_PATHS
    why = _grid_verdict(_fork_kernel(clean, branches=5), 64, n=4)
    assert f"more than {MAX_PATHS} ways" in why, why


def _per_cta_loop_kernel(read: bool = False) -> str:
    """CTA c copies a word per thread into shared memory c + 1 times (cp.async, waited for,
    a barrier): a loop with an async copy in it, whose trip count is `%ctaid.x`'s; `read`:
    each thread then reads its neighbour's word, with no barrier before the next copy."""
    neighbour = ("\tadd.u32 %r9, %r1, 1;\n\tand.b32 %r9, %r9, 63;\n\tshl.b32 %r9, %r9, 2;\n"
                 "\tadd.u32 %r9, %r4, %r9;\n\tld.shared.u32 %r8, [%r9];\n") if read else ""
    return _cta_kernel(".u64 k_src", """\tmov.u32 %r1, %tid.x;
\tmov.u32 %r5, %ctaid.x;
\tld.param.u64 %rd1, [k_src];
\tmov.u32 %r4, smem;
\tshl.b32 %r3, %r1, 2;
\tadd.u32 %r6, %r4, %r3;
\tmov.u32 %r7, 0;
$L_top:
\tcp.async.ca.shared.global [%r6], [%rd1], 4;
\tcp.async.wait_all;
\tbar.sync 0;
NEIGHBOUR\tadd.u32 %r7, %r7, 1;
\tsetp.le.u32 %p1, %r7, %r5;
\t@%p1 bra $L_top;""".replace("NEIGHBOUR", neighbour))


def test_a_loop_with_an_async_copy_whose_trips_depend_on_the_cta_is_forked_per_trip():
    """A loop whose body the uniform-loop rule cannot take (an async copy) and whose trip
    count is the CTA's: each closing branch is forked, each way a trip count the grid
    allows; a grid whose CTAs need more than static_proof.MAX_PATHS ways is refused at the
    fork that passes the bound, not after running them."""
    from instrument.static_proof import MAX_PATHS, Proof

    ptx = _per_cta_loop_kernel()
    got = _grid_verdict(ptx, MAX_PATHS - 1)  # (CTAs of 1 to 15 trips: 15 ways)
    assert isinstance(got, Proof), got
    why = _grid_verdict(ptx, 64)
    assert f"line 25: more than {MAX_PATHS} ways" in why, why
    # a CTA of one trip cannot race; of two, its second copy races with the first reads
    racy = _per_cta_loop_kernel(read=True)
    assert isinstance(_grid_verdict(racy, 1), Proof)
    why = _grid_verdict(racy, 2)
    assert "lines 27, 20: the access at line 27 and the cp.async at line 20" in why, why


def test_a_proof_of_several_ways_counts_what_every_way_does():
    """`if (blockIdx.x >= n) return;` around all of a kernel's work: the first way a run
    takes (the branch, taken) does nothing, the other all of it; the proof says what both
    do (a launch proven to touch no shared memory would not be worth running natively)."""
    from instrument.static_proof import Proof

    ptx = _grid_kernel("\tmov.u32 %r6, %r5;", "ge.u32", "%r6, %r2").replace(
        "\tst.shared.u32 [smem], %r1;\n$L_skip:\n\tbar.sync 0;",
        "\tbar.sync 0;\n\tsetp.eq.u32 %p2, %r1, 0;\n\t@%p2 st.shared.u32 [smem+4], %r1;\n"
        "\tbar.sync 0;\n\tld.shared.u32 %r7, [smem+4];\n$L_skip:")
    got = _grid_verdict(ptx, 8, n=4)
    assert isinstance(got, Proof) and got.accesses == 2 and got.barriers == 2, got
    assert got.grid and "the launch's grid" in got.sentence()
