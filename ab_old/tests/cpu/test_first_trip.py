"""Loops checked on their first trip only (instrument/first_trip.py): which loops qualify,
and what the rewritten PTX does with them. The GPU side (a race on the first trip is
reported, a clean loop computes the native bits) is the `trips` and `trip-tail` twins of
tests/gpu/test_races.py."""

from __future__ import annotations

import re

import pytest

from consan import toolchain
from instrument import abi
from instrument.rewrite import instrument
from tests.kernels import gpu_kernels as K
from tests.probe_calls import calls

HEAD = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u32 k_n)
{
\t.reg .pred %p<4>;
\t.reg .b32 %r<20>;
\t.shared .align 4 .b8 s[1024];
\tld.param.u32 %r9, [k_n];
\tmov.u32 %r1, %tid.x;
\tshl.b32 %r2, %r1, 2;
\tmov.u32 %r3, 0;
"""
TAIL = "\tret;\n}\n"

WRITE = "\tst.shared.u32 [%r2], %r3;\n"
READ = "\tld.shared.u32 %r4, [%r2+4];\n"
BAR = "\tbar.sync 0;\n"
NEXT = "\tadd.s32 %r3, %r3, 1;\n\tsetp.lt.s32 %p1, %r3, %r9;\n\t@%p1 bra $L_loop;\n"


def loop(body: str, before: str = "", after: str = "", value_tags: bool = False):
    ptx = HEAD + before + "$L_loop:\n" + body + NEXT + after + TAIL
    return instrument(ptx, "k.ptx", value_tags=value_tags)


def test_a_tile_loop_probes_its_accesses_and_barriers_on_the_first_trip_only():
    ins = loop(WRITE + BAR + READ + BAR)
    assert len(ins.first_trip_loops) == 1
    ptx = ins.ptx
    # the flag: on where the loop is entered, off before the branch back
    assert re.search(r"mov\.pred %__cs_first, 1;\s*\$L_loop:", ptx)
    assert re.search(r"mov\.pred %__cs_first, 0;\s*@%p1 bra \$L_loop;", ptx)
    # each access probe, and each barrier's arrive and wait probes (inline, with their calls
    # where the warp has no record: inline_barriers.py), are skipped without it
    skips = re.findall(r"@!%__cs_first bra (\$__cs_first\w+);\s*\{ // consan "
                       r"(barrier probe, inline|site \d+\n[^}]*?call (?:\([^)]*\), )?\w+,)", ptx)
    assert sorted(p.split("\n")[0] for _, p in skips) == sorted(
        ["site 0", "site 2"] + ["barrier probe, inline"] * 4)
    for skip, _ in skips:  # (the probe's call, if any, lies before its skip label)
        block = ptx[ptx.index(f"bra {skip};"):ptx.index(f"{skip}:")]
        assert block.count("call ") == 1
    assert len(calls(ptx, abi.PROBE_BAR_ARRIVE)) == 2
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), psh=True)


def test_a_loop_without_barrier_needs_no_uniform_trip_count():
    """All its trips share one barrier interval with the first: trip counts may differ."""
    tid_bound = NEXT.replace("%r9", "%r1")
    ptx = HEAD + "$L_loop:\n" + WRITE + READ + tid_bound + TAIL
    assert len(instrument(ptx, "k.ptx").first_trip_loops) == 1
    with_barrier = HEAD + "$L_loop:\n" + WRITE + BAR + READ + BAR + tid_bound + TAIL
    assert instrument(with_barrier, "k.ptx").first_trip_loops == []


@pytest.mark.parametrize("case,body,before", [
    ("address written in the loop", WRITE + BAR + "\tadd.s32 %r2, %r2, 4;\n" + READ + BAR, ""),
    ("guard computed in the loop",
     "\tsetp.eq.s32 %p2, %r3, 3;\n\t@%p2 st.shared.u32 [%r2], %r3;\n" + BAR, ""),
    ("access after the last barrier", BAR + WRITE + BAR + READ, ""),
    ("predicated barrier", WRITE + "\t@%p3 bar.sync 0;\n" + READ + BAR,
     "\tsetp.eq.s32 %p3, %r9, 1;\n"),
    ("if around a shared store",
     "\tsetp.eq.s32 %p2, %r1, 3;\n\t@%p2 bra $L_skip;\n" + WRITE + "$L_skip:\n" + BAR, ""),
    ("a thread-dependent jump over the loop", WRITE + BAR,
     "\tsetp.lt.u32 %p2, %r1, 32;\n\t@%p2 bra $L_after;\n"),
    ("loop label reached by another branch", WRITE + BAR,
     "\tsetp.eq.s32 %p2, %r9, 0;\n\t@%p2 bra $L_loop;\n"),
    ("an mbarrier in the module (vector clocks)", WRITE + BAR,
     "\tmbarrier.init.shared.b64 [s+512], 1;\n"),
    # the trip count differs by thread through code only some threads run, or through a
    # device function's result: the warps pass the loop's barrier a different number of
    # times, and a later trip's accesses share a barrier interval with code after the loop
    ("a trip count one thread-dependent if changes", WRITE + BAR,
     "\tsetp.lt.u32 %p2, %r1, 32;\n\t@%p2 bra $L_join;\n\tsub.s32 %r9, %r9, 1;\n$L_join:\n"),
    ("a trip count a thread-dependent loop counts", WRITE + BAR,
     "\tmov.u32 %r6, 0;\n$L_d:\n\tadd.s32 %r9, %r9, 1;\n\tadd.s32 %r6, %r6, 1;\n"
     "\tsetp.lt.u32 %p2, %r6, %r1;\n\t@%p2 bra $L_d;\n"),
    ("a trip count a device function returns", WRITE + BAR,
     "\t{\n\t.param .b32 retval0;\n\tcall.uni (retval0), trips, ();\n"
     "\tld.param.b32 %r9, [retval0];\n\t}\n"),
])
def test_loops_that_are_checked_on_every_trip(case, body, before):
    after = "$L_after:\n\tadd.s32 %r3, %r3, 1;\n" if "L_after" in before else ""
    if "trips" in before:  # (the device function, declared before the kernel)
        func = (".func (.param .b32 out) trips()\n{\n\t.reg .b32 %t<2>;\n"
                "\tmov.u32 %t1, %tid.x;\n\tst.param.b32 [out], %t1;\n\tret;\n}\n")
        head = HEAD.replace(".visible .entry", func + ".visible .entry")
        ptx = head + before + "$L_loop:\n" + body + NEXT + after + TAIL
        assert instrument(ptx, "k.ptx").first_trip_loops == [], case
        return
    assert loop(body, before, after).first_trip_loops == [], case


def test_a_device_functions_ret_is_not_an_exit():
    """In a .func, `ret` goes back to the caller, which may pass more barriers: a
    thread-dependent branch to it leaves the loop's barrier counts unequal (only a
    kernel's `ret` or an `exit` leaves for good)."""
    trips = NEXT.replace("%r9", "4")  # (a constant trip count)
    body = ("\tsetp.lt.u32 %p2, %r1, 32;\n\t@%p2 bra $L_ret;\n$L_loop:\n" + WRITE + BAR + trips
            + "$L_ret:\n\tret;\n}\n")
    func = HEAD.replace(".visible .entry k(.param .u32 k_n)", ".func f(.param .u32 k_n)")
    assert instrument(func + body, "k.ptx").first_trip_loops == []
    assert len(instrument(HEAD + body, "k.ptx").first_trip_loops) == 1  # (a kernel's ret)


@pytest.mark.parametrize("case,body,before", [
    ("if around a global load", "\tsetp.ge.s32 %p2, %r1, %r9;\n\t@%p2 bra $L_skip;\n"
     "\tld.global.u32 %r5, [%rd1];\n$L_skip:\n" + WRITE + BAR + READ + BAR, ""),
    ("a uniform jump over the loop", WRITE + BAR,
     "\tsetp.lt.u32 %p2, %r9, 32;\n\t@%p2 bra $L_after;\n"),
    ("an early exit", WRITE + BAR,
     "\tsetp.lt.u32 %p2, %r1, 32;\n\t@%p2 bra $L_exit;\n"),
    ("a thread-dependent if before the loop", WRITE + BAR,
     "\tsetp.lt.u32 %p2, %r1, 32;\n\t@%p2 bra $L_join;\n\tadd.s32 %r5, %r5, 1;\n$L_join:\n"),
])
def test_loops_that_are_checked_on_their_first_trip(case, body, before):
    after = "$L_after:\n\tadd.s32 %r3, %r3, 1;\n" if "L_after" in before else \
        "$L_exit:\n" if "L_exit" in before else ""  # (then the kernel's ret)
    ptx = HEAD.replace(".reg .b32 %r<20>;", ".reg .b32 %r<20>;\n\t.reg .b64 %rd<4>;") + \
        before + "$L_loop:\n" + body + NEXT + after + TAIL
    assert len(instrument(ptx, "k.ptx").first_trip_loops) == 1, case


def test_value_tagged_stores_keep_every_trip_checked():
    """Replicated stores are judged by the values they write, which change each trip."""
    assert loop(WRITE + BAR + READ + BAR, value_tags=True).first_trip_loops == []
    assert len(loop(BAR + READ + BAR, value_tags=True).first_trip_loops) == 1


def _cuda_loops(src: str, name: str) -> list:
    ptx = toolchain.compile_cuda(src, f"{name}.cu", ["-arch=compute_90", "-lineinfo"])
    return instrument(ptx, f"{name}.ptx").first_trip_loops


def test_the_kernels_that_take_the_first_trip_path():
    """The GPU twins and sgemm_tiled as NVRTC compiles them: the `trips` twins and sgemm's K
    loop qualify; `trip-tail`'s racy loop (an access after its last barrier) and its clean
    twin (a delay loop inside) do not."""
    trips, tail = K.TWIN_BY_KEY["trips"], K.TWIN_BY_KEY["trip-tail"]
    assert len(_cuda_loops(trips.racy_src, trips.racy_name)) == 1
    assert len(_cuda_loops(trips.clean_src, trips.clean_name)) == 1
    assert _cuda_loops(tail.racy_src, tail.racy_name) == []
    assert len(_cuda_loops(K.CLEAN["sgemm_tiled"], "sgemm_tiled")) == 1
