"""A warp's cp.async copies of 16 bytes in a row: one call (abi.PROBE_CP16_RUN) before the
first, each copy with its own site, judged as its own call would judge it."""

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
\t.reg .b32 %r<20>;
\t.reg .b64 %rd<20>;
"""
CP = "\tcp.async.cg.shared.global [{a}], [%rd1], 16;\n"
COMMIT = "\tcp.async.commit_group;\n"

# A K step's copies as NVRTC writes them (tests/kernels/mma_gemm.py): A's row, then B's,
# whose address is computed between the two copies.
K_STEP = (CP.format(a="%r1") + "\t.loc 1 33 13\n\tadd.s32 %r2, %r11, %r12;\n"
          "\tshl.b32 %r3, %r2, 4;\n" + CP.format(a="%r3+16") + COMMIT)


def _ptx(body: str) -> str:
    return instrument(HEAD + body + "\tret;\n}\n").ptx


def _runs(ptx: str) -> list[tuple[list[str], list[str], int]]:
    """Each run call's (addresses, sites, n)."""
    out = []
    for c in calls(ptx, abi.PROBE_CP16_RUN):
        n = int(c.args[2 * abi.CP16_RUN_MAX])
        out.append((c.args[:n], c.args[abi.CP16_RUN_MAX:abi.CP16_RUN_MAX + n], n))
    return out


def test_a_k_steps_copies_make_one_call_before_the_first():
    ins = instrument(HEAD + K_STEP + "\tret;\n}\n")
    ptx = ins.ptx
    assert not calls(ptx, abi.PROBE_CP16)
    ((addrs, sites, n),) = _runs(ptx)
    assert n == 2 and len(set(sites)) == 2
    copies = [s for s in ins.sites.sites if s.event == "async.cp"]
    assert sorted(int(s) for s in sites) == sorted(s.id for s in copies)
    (call,) = calls(ptx, abi.PROBE_CP16_RUN)
    assert call.pos < ptx.index("cp.async.cg.shared.global [%r1]")
    assert int(call.args[-1]) == abi.access_info(16, abi.MODE_ASYNC_WRITE, abi.SPACE_SHARED)
    # B's address computed at the call from the arithmetic between the copies
    block = ptx[ptx.rfind("{", 0, call.pos):call.pos]
    assert "add.s32 %__cs_y0, %r11, %r12;" in block
    assert "shl.b32 %__cs_y1, %__cs_y0, 4;" in block
    assert "cvt.u64.u32 %__cs_c1, %__cs_y1;" in block and "add.s64 %__cs_c1, %__cs_c1, 16;" \
        in block
    assert "cvt.u64.u32 %__cs_c0, %r1;" in block


@pytest.mark.parametrize("between, merged", [
    ("", True),
    ("\tmov.u32 %r5, %r6;\n", True),
    ("$L_next:\n", False),  # a label: a loop's head may be reached from elsewhere
    (COMMIT, False),  # a commit closes the copies' group
    ("\tld.shared.u32 %r5, [%r6];\n", False),  # another access
    ("\tbar.sync 0;\n", False),
    ("\t@%p1 add.s32 %r5, %r6, 1;\n", False),  # predicated arithmetic
    ("\tst.global.u32 [%rd2], %r5;\n", False),
])
def test_what_may_lie_between_two_copies(between, merged):
    ptx = _ptx(CP.format(a="%r1") + between + CP.format(a="%r3") + COMMIT)
    assert bool(_runs(ptx)) == merged
    assert len(calls(ptx, abi.PROBE_CP16)) == (0 if merged else 2)


def test_a_run_holds_at_most_four_copies():
    ptx = _ptx("".join(CP.format(a=f"%r{i}") for i in range(1, 7)) + COMMIT)
    assert [n for _, _, n in _runs(ptx)] == [4, 2]
    ptx = _ptx("".join(CP.format(a=f"%r{i}") for i in range(1, 6)) + COMMIT)
    assert [n for _, _, n in _runs(ptx)] == [4]
    assert len(calls(ptx, abi.PROBE_CP16)) == 1


def test_predicated_and_other_copies_keep_their_own_probes():
    """A predicated copy (its lanes echo, echo.py) and a 4-byte copy are not run members;
    a copy whose address needs %clock at the call ends the run before it."""
    ptx = _ptx(CP.format(a="%r1") + "\t@%p1 cp.async.cg.shared.global [%r2], [%rd1], 16;\n"
               + CP.format(a="%r3") + COMMIT)
    assert not _runs(ptx) and len(calls(ptx, abi.PROBE_CP16)) == 3
    ptx = _ptx(CP.format(a="%r1") + "\tcp.async.ca.shared.global [%r2], [%rd1], 4;\n"
               + CP.format(a="%r3") + COMMIT)
    assert not _runs(ptx)
    ptx = _ptx(CP.format(a="%r1") + CP.format(a="%r2") + "\tmov.u32 %r3, %clock;\n"
               + CP.format(a="%r3") + COMMIT)
    assert [n for _, _, n in _runs(ptx)] == [2] and len(calls(ptx, abi.PROBE_CP16)) == 1


def test_an_address_register_redefined_between_copies_is_read_as_each_copy_reads_it():
    """%r1 is A's address, then B's after an add: the call passes %r1 for A and the add's
    result, computed into its own register, for B."""
    ptx = _ptx(CP.format(a="%r1") + "\tadd.s32 %r1, %r1, 4096;\n" + CP.format(a="%r1") + COMMIT)
    ((addrs, _, n),) = _runs(ptx)
    (call,) = calls(ptx, abi.PROBE_CP16_RUN)
    block = ptx[ptx.rfind("{", 0, call.pos):call.pos]
    assert "add.s32 %__cs_y0, %r1, 4096;" in block
    assert "cvt.u64.u32 %__cs_c0, %r1;" in block and "cvt.u64.u32 %__cs_c1, %__cs_y0;" in block


# ---------------------------------------------------------------- the checker's side

WINDOW = 1024
NWARPS = 4


def _checker(vsh: bool):
    from tests.checker_host import HostChecker

    c = HostChecker(nwarps=NWARPS, smem_bytes=WINDOW, vsh=vsh, async_proxy=False,
                    box_summary=False, granule_bytes=abi.CHUNK_GRANULE_BYTES)
    assert c.begin() == 0
    return c


def _trace(seed: int):
    """A cp.async GEMM's steps in any order: runs of one to four copies by a warp, reads and
    writes of chunks, commits, waits and barriers."""
    rng = random.Random(seed)
    ops = []
    for i in range(60):
        w, r = rng.randrange(NWARPS), rng.random()
        if r < 0.4:
            ops.append(("copies", w, [rng.randrange(0, 24) * 16 for _ in range(rng.randint(1, 4))],
                        i))
        elif r < 0.6:
            ops.append(("read", w, rng.randrange(0, 24) * 16, i))
        elif r < 0.68:
            ops.append(("write", w, rng.randrange(0, 24) * 16, i))
        elif r < 0.8:
            ops.append(("commit", w, i))
        elif r < 0.9:
            ops.append(("wait_all", w, i))
        else:
            ops.append(("sync",))
    return ops


def _run(c, ops, together: bool) -> None:
    info = abi.access_info(16, abi.MODE_ASYNC_WRITE, abi.SPACE_SHARED)
    for op in ops:
        if op[0] == "sync":
            c.sync(range(NWARPS))
        elif op[0] in ("commit", "wait_all"):
            getattr(c, op[0])(op[1], site=op[2])
        elif op[0] in ("read", "write"):
            getattr(c, op[0])(op[1], op[2], 16, site=op[3])
        elif together:
            w, offs, s = op[1], op[2], 100 + 4 * op[3]
            pad = abi.CP16_RUN_MAX - len(offs)
            c._as(w)
            c._probe(abi.PROBE_CP16_RUN)(*offs, *[0] * pad,
                                         *range(s, s + len(offs)), *[0] * pad, len(offs), info)
        else:
            for k, off in enumerate(op[2]):
                c.cp_async(op[1], off, 16, site=100 + 4 * op[3] + k)


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("vsh", [True, False], ids=["smem", "device"])
def test_a_run_call_finds_what_its_copies_calls_find(seed, vsh):
    from tests.checker_host import findings_both_ways

    one, run = findings_both_ways(lambda: _checker(vsh), _run, _trace(seed))
    assert run == one


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("vsh", [True, False], ids=["smem", "device"])
def test_a_runs_later_copy_names_its_own_site(vsh):
    """Warp 1 reads chunk 0x40 unordered; warp 0's run copies 0x00 then 0x40: the finding
    (race.war) names the second copy's site, not the first's."""
    c = _checker(vsh)
    c.read(1, 0x40, 16, site=7)
    info = abi.access_info(16, abi.MODE_ASYNC_WRITE, abi.SPACE_SHARED)
    c._as(0)
    c._probe(abi.PROBE_CP16_RUN)(0x00, 0x40, 0, 0, 20, 21, 0, 0, 2, info)
    assert [f[:3] for f in c.findings()] == [("uninit.read", 7, abi.NO_SITE),
                                             ("race.war", 21, 7)]
