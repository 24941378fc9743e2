"""The GPU wgmma kernels (tests/gpu/test_wgmma.py) compile, instrument and assemble for
sm_90a without a GPU, and the instrumented modules model every wgmma instruction."""

from __future__ import annotations

import pytest

from consan import runtime, toolchain
from instrument import abi
from instrument.wgmma_desc import Descriptor, MmaShape
from tests.gpu.test_wgmma import (
    KSTEPS,
    KT,
    LAYOUT_IDS,
    LAYOUTS,
    check_missing_fence,
    check_pending_read,
    source,
)
from tests.gpu_util import line_of, lines

VARIANTS = [(sw, fence, wait) for sw in LAYOUTS for fence, wait in
            ((True, True), (True, False), (False, True))]


@pytest.mark.parametrize("variant", VARIANTS,
                         ids=[f"{LAYOUT_IDS[LAYOUTS.index(sw)]}-fence{int(f)}-wait{int(w)}"
                              for sw, f, w in VARIANTS])
def test_gpu_wgmma_kernel_builds_for_sm90a(variant, fresh_cache):
    sw, fence, wait = variant
    b = runtime.build(source(sw, fence, wait), ("-arch=sm_90a",), source_name="wgmma_gemm.cu")
    assert b.cubin[:4] == b"\x7fELF" and b.arch == toolchain.Arch.parse("sm_90a")
    ins = b.instrumented
    assert ins.unmodeled == [] and ins.wgmma and not ins.phase_mode
    assert ins.counts["async.wgmma"] == 4  # the K loop of four m64n64k16 is unrolled
    assert ins.counts["async.wgmma_wait"] == 1 + wait
    assert ins.counts["fence.proxy_async"] == int(fence)
    # the sites the GPU tests name by their markers
    src = source(sw, fence, wait)
    mma = [s for s in ins.sites.sites if s.event == "async.wgmma"]
    assert all(s.loc is not None and s.loc.file == "wgmma_gemm.cu" for s in mma)
    assert all(line_of(src, "@mma") in lines(s) and line_of(src, "@mma-call") in lines(s)
               for s in mma)
    stores = {s.loc.line for s in ins.sites.sites if s.event == "access.write"}
    assert stores == {line_of(src, "@storeA"), line_of(src, "@storeB")}


# The GPU kernel's events replayed on the host build of the checker, with the site table of
# the instrumented kernel: the GPU tests' own checks (verdicts, lines, report sentences) hold
# for what the model says of this kernel, whatever the interleaving of its warps.

AS, BS = 0x400, 0x2400  # 1024-byte aligned tiles of 8 KiB (the real ones are wherever ptxas
#   puts them: any 1024-byte aligned addresses give the same verdicts)


def _tile_off(sw: bool, r: int, k: int) -> int:
    if sw:
        return (r // 8) * 1024 + (r % 8) * 128 + ((k // 8) ^ (r % 8)) * 16 + (k % 8) * 2
    return ((r // 8) * (KT // 8) + k // 8) * 128 + (r % 8) * 16 + (k % 8) * 2


def _step_desc(sw: bool, tile: int, s: int) -> int:
    if sw:
        return Descriptor(tile + 32 * s, 16, 1024, 0, 1).encode()
    return Descriptor(tile + 256 * s, 128, (KT // 8) * 128, 0, 0).encode()


def _replay(sw: bool, fence: bool, wait: bool):
    """The kernel's events for one CTA, in one interleaving; returns (report, source)."""
    from tests.checker_host import HostChecker

    src = source(sw, fence, wait)
    sites = runtime.build(src, ("-arch=sm_90a",), source_name="wgmma_gemm.cu").instrumented.sites
    store_a = next(s.id for s in sites.sites if s.loc and s.loc.line == line_of(src, "@storeA"))
    store_b = next(s.id for s in sites.sites if s.loc and s.loc.line == line_of(src, "@storeB"))
    mma = [s.id for s in sites.sites if s.event == "async.wgmma"]
    ck = HostChecker(nwarps=4, smem_bytes=AS + 2 * 8192, wgmma=True, capacity=4096)
    ck.begin()
    info = MmaShape(64, 64, 16, "f16", "f16", True).info
    warps = range(4)
    for _ks in range(KSTEPS):
        for e in range(64 * KT):
            r, k, warp = e // KT, e % KT, (e % 128) // 32
            ck.access(warp, AS + _tile_off(sw, r, k), 2, abi.MODE_WRITE, store_a)
            ck.access(warp, BS + _tile_off(sw, r, k), 2, abi.MODE_WRITE, store_b)
        if fence:
            for w in warps:
                ck.proxy_fence(w)
        ck.sync(warps)
        for s in range(KT // 16):
            ck.wgmma(0, _step_desc(sw, AS, s), _step_desc(sw, BS, s), info, site=mma[s])
        ck.wgmma_commit(0)
        if wait:
            ck.wgmma_wait(0, 0)
        ck.sync(warps)
    ck.wgmma_wait(0, 0)
    return ck.report(sites), src


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("sw", LAYOUTS, ids=LAYOUT_IDS)
def test_replayed_clean_kernel_is_clean(sw, fresh_cache):
    rep, _ = _replay(sw, True, True)
    assert rep.ok, str(rep)


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("sw", LAYOUTS, ids=LAYOUT_IDS)
def test_replayed_refill_before_wait_group(sw, fresh_cache):
    check_pending_read(*_replay(sw, True, False))


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("sw", LAYOUTS, ids=LAYOUT_IDS)
def test_replayed_missing_fence(sw, fresh_cache):
    check_missing_fence(*_replay(sw, False, True))
