"""An async unit's copies are not ordered among themselves until the issuing warp waits
for them: a cp.async over the bytes of the same warp's earlier cp.async still in flight
is `async.pending-write` (Triton's ConSan calls it "outstanding writes"). Host build of the
checker, every representation of its tables."""

from __future__ import annotations

import pytest

from tests.checker_host import HostChecker

pytestmark = pytest.mark.needs_host_compiler

FIRST, SECOND, WAIT = 1, 2, 3


@pytest.fixture(params=[True, False], ids=["smem-tables", "device-tables"])
def ck(request):
    c = HostChecker(nwarps=4, smem_bytes=1024, vsh=request.param)
    c.begin()
    return c


def _copy(ck: HostChecker, site: int) -> None:
    for off in range(0, 256, 16):  # one warp's lanes copy 256 bytes, 16 each
        ck.cp_async(0, off, 16, site=site)
    ck.commit(0)


def test_a_copy_over_the_same_warps_copy_in_flight(ck):
    _copy(ck, FIRST)
    _copy(ck, SECOND)  # the first group may still be landing
    ck.wait_all(0, site=WAIT)
    assert set(ck.kinds()) == {("async.pending-write", SECOND, FIRST)}


def test_a_copy_after_waiting_for_the_first_is_clean(ck):
    _copy(ck, FIRST)
    ck.wait_group(0, 0, site=WAIT)
    _copy(ck, SECOND)
    ck.wait_all(0, site=WAIT)
    assert ck.kinds() == []


def test_waiting_for_all_but_the_newest_group_orders_the_older_ones(ck):
    _copy(ck, FIRST)
    for off in range(512, 768, 16):  # another group, other bytes
        ck.cp_async(0, off, 16, site=7)
    ck.commit(0)
    ck.wait_group(0, 1, site=WAIT)  # the first group has landed
    _copy(ck, SECOND)
    ck.wait_all(0, site=WAIT)
    assert ck.kinds() == []
