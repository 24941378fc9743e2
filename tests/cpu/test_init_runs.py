"""A thread's mbarrier.init one after another: one call (abi.PROBE_MBAR_INIT_RUN) before
the first, each init with its own site, made as its own call would make it."""

from __future__ import annotations

import random

import pytest

from instrument import abi
from instrument.rewrite import instrument
from tests.probe_calls import calls

HEAD = """.version 9.0
.target sm_90a
.address_size 64
.visible .entry k()
{
\t.reg .pred %p<3>;
\t.reg .b16 %rs<4>;
\t.reg .b32 %r<60>;
\t.reg .b64 %rd<60>;
\t.shared .align 8 .b8 full[32];
\t.shared .align 8 .b8 empty[32];
\t.shared .align 8 .u64 issued;
"""
TAIL = "\tbar.sync 0;\n\tret;\n}\n"


def _ring_setup() -> str:
    """The TMA ring's set-up as NVRTC writes it (tests/kernels/gpu_kernels.py TMA_RING):
    `if (t == 0) { for (s < 4) init(&full[s], 1), init(&empty[s], 2); init(&issued, 1); }`,
    unrolled, each address computed between the inits."""
    out = ["\tmov.u32 %r1, %tid.x;\n\tsetp.ne.s32 %p1, %r1, 0;\n\t@%p1 bra $L_done;\n",
           "\tmov.u64 %rd6, full;\n\tcvt.u32.u64 %r28, %rd6;\n\tmov.u32 %r45, 1;\n",
           "\tmbarrier.init.shared.b64 [%r28], %r45;\n",
           "\tmov.u64 %rd7, empty;\n\tcvt.u32.u64 %r30, %rd7;\n\tmov.u32 %r43, 2;\n",
           "\tmbarrier.init.shared.b64 [%r30], %r43;\n"]
    for s in range(1, 4):
        out.append(f"\tadd.s64 %rd{10 + 2 * s}, %rd6, {8 * s};\n"
                   f"\tcvt.u32.u64 %r{30 + 2 * s}, %rd{10 + 2 * s};\n"
                   f"\tmbarrier.init.shared.b64 [%r{30 + 2 * s}], %r45;\n"
                   f"\tadd.s64 %rd{11 + 2 * s}, %rd7, {8 * s};\n"
                   f"\tcvt.u32.u64 %r{31 + 2 * s}, %rd{11 + 2 * s};\n"
                   f"\tmbarrier.init.shared.b64 [%r{31 + 2 * s}], %r43;\n")
    out.append("\tmov.u64 %rd20, issued;\n\tcvt.u32.u64 %r44, %rd20;\n"
               "\tmbarrier.init.shared.b64 [%r44], %r45;\n$L_done:\n")
    return "".join(out)


def _runs(ptx: str) -> list[tuple[list[str], list[str], list[str], int, str]]:
    """Each run call's (addresses, counts, sites, n, op)."""
    m = abi.MBAR_INIT_RUN_MAX
    out = []
    for c in calls(ptx, abi.PROBE_MBAR_INIT_RUN):
        n = int(c.args[3 * m])
        out.append((c.args[:n], c.args[m:m + n], c.args[2 * m:2 * m + n], n, c.args[-1]))
    return out


def test_the_rings_nine_inits_make_one_call_before_the_first_and_run_unguarded():
    ins = instrument(HEAD + _ring_setup() + TAIL)
    ptx = ins.ptx
    assert not calls(ptx, abi.PROBE_MBAR)
    ((addrs, counts, sites, n, op),) = _runs(ptx)
    inits = [s for s in ins.sites.sites if s.event == "mbarrier"]
    assert n == 9 and sorted(int(s) for s in sites) == sorted(s.id for s in inits)
    # program order: each site names its own init's line
    lines = {s.id: s.ptx_line for s in inits}
    assert [lines[int(s)] for s in sites] == sorted(lines.values())
    (call,) = calls(ptx, abi.PROBE_MBAR_INIT_RUN)
    assert call.pos < ptx.index("mbarrier.init.shared.b64 [%r28]")
    # the branch converted: the lanes that skip it pass PROBE_OFF, and the inits run on
    # the lane that takes it, as written (no verdict to wait for)
    assert op == "%__cs_op" and f"selp.b32 %__cs_op, {abi.MB_INIT}, " \
        f"{abi.MB_INIT | abi.PROBE_OFF}, %__cs_on;" in ptx
    assert ptx.count("@%__cs_on mbarrier.init.shared.b64") == 9
    assert "@%__cs_ok mbarrier.init" not in ptx
    # counts: the first as read at the call, the later ones from the arithmetic between
    assert counts[0] == "%r45" and counts[1].startswith("%__cs_z")
    block = ptx[ptx.rfind("{", 0, call.pos):call.pos]
    assert "cvt.u64.u32 %__cs_i0, %r28;" in block and "mov.u64 %__cs_z0, empty;" in block


@pytest.mark.parametrize("between, merged", [
    ("", True),
    ("\tmov.u32 %r5, %r6;\n", True),
    ("$L_next:\n", False),
    ("\tld.shared.u32 %r5, [%r6];\n", False),
    ("\tmbarrier.arrive.shared.b64 %rd5, [%r2];\n", False),
    ("\tbar.sync 0;\n", False),
    ("\t@%p1 add.s32 %r5, %r6, 1;\n", False),
    ("\tst.global.u32 [%rd2], %r5;\n", False),
])
def test_what_may_lie_between_two_inits(between, merged):
    ptx = instrument(HEAD + "\tmbarrier.init.shared.b64 [%r1], 1;\n" + between +
                     "\tmbarrier.init.shared::cta.b64 [%r2], %r3;\n"
                     "\tmbarrier.init.shared.b64 [%r4], 1;\n" + TAIL).ptx
    assert [r[3] for r in _runs(ptx)] == ([3] if merged else [])
    # (unmerged: the first init alone, the other two a run below init_runs.MIN)
    assert len(calls(ptx, abi.PROBE_MBAR)) == (0 if merged else 3) + between.count("mbarrier")


def test_two_inits_keep_a_call_each():
    """A run below init_runs.MIN (the TMA + wgmma GEMM's two stages) costs what it saves."""
    ptx = instrument(HEAD + "\tmbarrier.init.shared.b64 [%r1], 1;\n"
                     "\tmbarrier.init.shared.b64 [%r2], 1;\n" + TAIL).ptx
    assert not _runs(ptx) and len(calls(ptx, abi.PROBE_MBAR)) == 2


def test_a_run_holds_at_most_sixteen_inits_and_others_keep_their_own_probes():
    body = "".join(f"\tmbarrier.init.shared.b64 [%r{i}], 1;\n" for i in range(1, 21))
    ptx = instrument(HEAD + body + TAIL).ptx
    assert [r[3] for r in _runs(ptx)] == [16, 4]
    # predicated, of a 16-bit count register, and of a peer's (.shared::cluster): alone
    for init in ("\t@%p1 mbarrier.init.shared.b64 [%r2], 1;\n",
                 "\tmbarrier.init.shared.b64 [%r2], %rs1;\n",
                 "\tmbarrier.init.shared::cluster.b64 [%r2], 1;\n"):
        ptx = instrument(HEAD + "\tmbarrier.init.shared.b64 [%r1], 1;\n" + init +
                         "\tmbarrier.init.shared.b64 [%r3], 1;\n" + TAIL).ptx
        assert not _runs(ptx) and len(calls(ptx, abi.PROBE_MBAR)) == 3, init


def test_an_address_computed_from_the_init_before_it_is_computed_at_the_call():
    """`init [%r1]; add %r2, %r1, 8; init [%r2]; add %r3, %r2, 8; init [%r3]` (32-bit shared
    addresses stepped by the compiler): an init reads its address register, it writes none,
    so the later addresses come from the arithmetic between."""
    body = "\tmbarrier.init.shared.b64 [%r1], 1;\n"
    for k in (2, 3):
        body += f"\tadd.s32 %r{k}, %r{k - 1}, 8;\n\tmbarrier.init.shared.b64 [%r{k}], 1;\n"
    ptx = instrument(HEAD + body + TAIL).ptx
    ((addrs, _, _, n, _),) = _runs(ptx)
    (call,) = calls(ptx, abi.PROBE_MBAR_INIT_RUN)
    block = ptx[ptx.rfind("{", 0, call.pos):call.pos]
    assert n == 3 and "add.s32 %__cs_z0, %r1, 8;" in block and \
        "add.s32 %__cs_z1, %__cs_z0, 8;" in block


def test_an_address_that_needs_clock_at_the_call_ends_the_run_before_it():
    ptx = instrument(HEAD + "".join(f"\tmbarrier.init.shared.b64 [%r{i}], 1;\n"
                                    for i in (1, 2, 4)) + "\tmov.u32 %r3, %clock;\n"
                     "\tmbarrier.init.shared.b64 [%r3], 1;\n" + TAIL).ptx
    assert [r[3] for r in _runs(ptx)] == [3] and len(calls(ptx, abi.PROBE_MBAR)) == 1


# ---------------------------------------------------------------- the checker's side

WINDOW = 1024
NWARPS = 4
MB0 = 512  # the first mbarrier's offset; the trace's are MB0 + 8 k


def _checker(vsh: bool):
    from tests.checker_host import HostChecker

    c = HostChecker(nwarps=NWARPS, smem_bytes=WINDOW, vsh=vsh)
    assert c.begin() == 0
    return c


def _init_run(c, warp: int, inits: list[tuple[int, int, int]], op: int = abi.MB_INIT) -> None:
    """One PROBE_MBAR_INIT_RUN call by `warp`: inits (offset, count, site), in order."""
    pad = [0] * (abi.MBAR_INIT_RUN_MAX - len(inits))
    c._as(warp)
    c._probe(abi.PROBE_MBAR_INIT_RUN)(*(o for o, _, _ in inits), *pad,
                                      *(n for _, n, _ in inits), *pad,
                                      *(s for _, _, s in inits), *pad, len(inits), op)


def _trace(seed: int):
    """A pipeline's life in any order: runs of one to nine inits (an mbarrier twice in one
    sometimes), arrives, waits, writes and reads of the buffers, barriers."""
    rng = random.Random(seed)
    ops = []
    for i in range(50):
        w, r = rng.randrange(NWARPS), rng.random()
        if r < 0.25:
            ops.append(("inits", w, [(MB0 + 8 * rng.randrange(6), rng.randint(1, 2),
                                      100 + 10 * i + k) for k in range(rng.randint(1, 9))]))
        elif r < 0.45:
            ops.append(("arrive", w, MB0 + 8 * rng.randrange(6), i))
        elif r < 0.6:
            ops.append(("wait", w, MB0 + 8 * rng.randrange(6), rng.randrange(2), i))
        elif r < 0.75:
            ops.append(("write", w, rng.randrange(0, 24) * 16, i))
        elif r < 0.9:
            ops.append(("read", w, rng.randrange(0, 24) * 16, i))
        else:
            ops.append(("sync",))
    return ops


def _play(c, ops, together: bool) -> None:
    for op in ops:
        if op[0] == "sync":
            c.sync(range(NWARPS))
        elif op[0] == "inits" and together:
            _init_run(c, op[1], op[2])
        elif op[0] == "inits":
            for off, n, site in op[2]:
                c.mbar(op[1], off, abi.MB_INIT, n, site=site)
        elif op[0] == "arrive":
            c.mbar(op[1], op[2], abi.MB_ARRIVE, 1, site=op[3])
        elif op[0] == "wait":
            c.mbar_wait(op[1], op[2], parity=op[3], site=op[4])
        else:
            getattr(c, op[0])(op[1], op[2], 16, site=op[3])


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("vsh", [True, False], ids=["smem", "device"])
def test_a_run_call_finds_what_its_inits_calls_find(seed, vsh):
    from tests.checker_host import findings_both_ways

    one, run = findings_both_ways(lambda: _checker(vsh), _play, _trace(seed))
    assert run == one


@pytest.mark.needs_host_compiler
def test_an_mbarrier_initialised_twice_in_a_run_is_a_reinit_at_the_second():
    c = _checker(False)
    _init_run(c, 0, [(MB0, 1, 10), (MB0 + 8, 1, 11), (MB0, 1, 12)])
    assert [f[:2] for f in c.findings()] == [("mbarrier.reinit", 12)]


@pytest.mark.needs_host_compiler
def test_a_run_every_lane_skips_makes_no_init():
    c = _checker(False)
    _init_run(c, 0, [(MB0, 1, 10), (MB0 + 8, 1, 11)], op=abi.MB_INIT | abi.PROBE_OFF)
    c.sync(range(NWARPS))
    c.mbar(1, MB0, abi.MB_ARRIVE, 1, site=20)
    assert [f[:2] for f in c.findings()] == [("mbarrier.uninit", 20)]
