"""A module with an mbarrier operation the checker does not model (rewrite._loose_mbarriers):
its other mbarrier operations and copies run as they are, never skipped on the checker's
word. The checker answers "would fault" for an arrive on an mbarrier it never saw
initialised; with the init through a generic address (not modelled), that skipped the
kernel's real arrive and its try_wait never completed: a clean kernel hung."""

from __future__ import annotations

import pytest

from consan import toolchain
from instrument import abi
from instrument.rewrite import REG_OK, instrument

HEAD = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
{
\t.reg .pred %p<3>;
\t.reg .b32 %r<9>;
\t.reg .b64 %rd<5>;
\t.shared .align 8 .b64 bar;
\t.shared .align 128 .b8 buf[1024];
\tmov.u32 %r1, %tid.x;
\tsetp.eq.u32 %p1, %r1, 0;
\tmov.u32 %r2, bar;
"""
GENERIC_INIT = ("\tmov.u64 %rd1, bar;\n\tcvta.shared.u64 %rd2, %rd1;\n"
                "\tmbarrier.init.b64 [%rd2], 1;\n")
SHARED_INIT = "\t@%p1 mbarrier.init.shared::cta.b64 [%r2], 1;\n"
OPS = ("\t@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r2], 1024;\n"
       "\tmov.u32 %r3, buf;\n\tmov.u64 %rd4, 0;\n"
       "\t@%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r3], [%rd4],"
       " 1024, [%r2];\n")


def _out(init: str):
    ins = instrument(HEAD + init + OPS + "\tret;\n}\n", "k.ptx")
    return ins, ins.ptx[ins.ptx.index(".visible .entry"):]


def test_an_unmodelled_init_leaves_every_mbarrier_operation_and_copy_to_run():
    ins, k = _out(GENERIC_INIT)
    assert any("mbarrier.init.b64" in u.text for u in ins.unmodeled)  # (still listed)
    for op in ("mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r2], 1024;",
               "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r3]"):
        line = next(ln.strip() for ln in k.splitlines() if op in ln)
        assert line.startswith("@%p1 ") and REG_OK not in line, line  # its own guard only
    assert "__consan_mbar" in k and "__consan_bulk" in k  # (still probed: the model sees them)
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"))


def test_a_module_whose_mbarriers_are_all_modelled_keeps_the_checkers_guard():
    _, k = _out(SHARED_INIT)
    lines = [ln.strip() for ln in k.splitlines() if "mbarrier.arrive.expect_tx" in ln
             and not ln.strip().startswith("//")]
    assert lines and all(ln.startswith(f"@{REG_OK} ") for ln in lines)


@pytest.mark.needs_host_compiler
def test_an_init_past_the_checkers_mbarrier_table_still_runs():
    """A CTA with 33 mbarriers: the 33rd init is legal CUDA. Its probe answered 1 (skip) for
    want of a table entry, so the kernel's waits on it never completed. Past the table an
    mbarrier runs unmodelled: every operation on it and every copy completing on it runs,
    and one tool note says so."""
    from tests.checker_host import HostChecker

    c = HostChecker(nwarps=4, smem_bytes=8192)
    assert c.begin() == 0
    n = abi.MBARRIERS + 2
    verdicts = [c.mbar(0, 8 * k, abi.MB_INIT, 1, site=1) for k in range(n)]
    assert verdicts == [0] * n
    last = 8 * (n - 1)
    assert c.mbar(0, last, abi.MB_ARRIVE_EXPECT_TX, 64, site=2) == 0
    assert c.bulk_load(0, 4096, 64, last, site=3) == 0
    assert c.mbar_wait(1, last, parity=0, site=4) == 0
    assert c.mbar(0, last, abi.MB_INVAL, 0, site=5) == 0
    assert c.kinds() == [("tool.mbarrier-table-full", 1, -1)]
    # a CTA whose table has room still reports an mbarrier nobody initialised
    d = HostChecker(nwarps=4, smem_bytes=8192)
    assert d.begin() == 0
    assert d.mbar(0, 64, abi.MB_ARRIVE, 1, site=6) == 1
    assert [k for k, _, _ in d.kinds()] == ["mbarrier.uninit"]
