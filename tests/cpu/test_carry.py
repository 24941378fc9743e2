"""A tensor load's probe that models the mbarrier.arrive.expect_tx before it too
(abi.TENSOR_ARRIVE_TX, instrument/carry.py) decides what the two probes one after the
other decide: each trace runs both ways, with the granule tables in shared memory and in
device memory, and must give the expected records every time."""

from __future__ import annotations

import numpy as np
import pytest

from instrument import abi
from tests.checker_host import HostChecker, tma_ring

pytestmark = pytest.mark.needs_host_compiler

ALL = range(4)
MB = 512  # the mbarrier object's smem offset
BOX = 256
MAP = bytes(range(9, 137))  # 128 opaque bytes (the checker only fingerprints them)
ARRIVE, LOAD = 11, 1  # sites


def _checker(vsh: bool):
    c = HostChecker(nwarps=4, smem_bytes=1024, vsh=vsh)
    assert c.begin() == 0
    return c


def _produce(c, carried: bool, tx: int = BOX, dst: int = 0, tmap: int | None = None,
             mbar: int = MB) -> int:
    """Warp 0 announces tx bytes and loads the box at dst: the skip verdict(s)."""
    tmap = c.tensor_map(MAP, footprint=BOX) if tmap is None else tmap
    if carried:
        return c.tensor_load(0, dst, tmap, mbar, site=LOAD, expect_tx=tx, arrive_site=ARRIVE)
    skip = c.mbar(0, mbar, abi.MB_ARRIVE_EXPECT_TX, tx, site=ARRIVE)
    return skip | c.tensor_load(0, dst, tmap, mbar, site=LOAD)


def _read_box(c, warp: int, site: int, dst: int = 0) -> None:
    for o in range(dst, dst + BOX, 16):
        c.read(warp, o, 16, site=site)


def _init(c, count: int = 1) -> None:
    c.mbar(0, MB, abi.MB_INIT, count, site=10)
    c.sync(ALL)


def _each(trace, expected):
    """The trace with its flag (the arrive carried, or the two loads one call) off and on,
    in both table builds: the same records every time."""
    for vsh in (True, False):
        for flag in (False, True):
            c = _checker(vsh)
            trace(c, flag)
            assert c.kinds() == expected, (vsh, flag)


def test_read_after_the_wait_is_clean_and_before_it_is_pending():
    def trace(c, carried):
        _init(c)
        assert _produce(c, carried) == 0
        c.read(1, 0, 16, site=2)  # before the wait
        c.mbar_wait(1, MB, parity=0, site=3)
        _read_box(c, 1, 4)
    _each(trace, [("async.pending-write", 2, LOAD)])


def test_the_phase_waits_for_the_bytes_the_arrive_announced():
    """Twice the box announced: the phase completes with the second load only."""
    def trace(c, carried):
        _init(c)
        tmap = c.tensor_map(MAP, footprint=BOX)
        assert _produce(c, carried, tx=2 * BOX, tmap=tmap) == 0
        c.mbar_wait(1, MB, parity=0, site=3)  # would still spin on the device
        c.read(1, 0, 16, site=2)
        c.tensor_load(0, BOX, tmap, MB, site=5)
        c.mbar_wait(1, MB, parity=0, site=3)
        _read_box(c, 1, 4)
        _read_box(c, 1, 6, dst=BOX)
    _each(trace, [("async.pending-write", 2, LOAD)])


def test_a_refill_before_the_readers_release_is_war():
    """The ring's producer skipping the empty wait: its second load overwrites reads that
    nothing orders before it."""
    def trace(c, carried):
        _init(c)
        tmap = c.tensor_map(MAP, footprint=BOX)
        _produce(c, carried, tmap=tmap)
        c.mbar_wait(1, MB, parity=0, site=3)
        c.read(1, 64, 16, site=2)
        _produce(c, carried, tmap=tmap)
    _each(trace, [("race.war", LOAD, 2)])


def test_the_arrive_releases_the_producers_writes():
    """What warp 0 wrote before the arrive is ordered before the consumer's wait; what it
    writes after is not."""
    def trace(c, carried):
        _init(c)
        c.write(0, 768, 16, site=7)
        _produce(c, carried)
        c.write(0, 784, 16, site=8)
        c.mbar_wait(1, MB, parity=0, site=3)
        c.read(1, 768, 16, site=2)
        c.read(1, 784, 16, site=9)
    _each(trace, [("race.raw", 9, 8)])


def test_an_arrival_below_zero_is_reported_at_the_arrive_and_skips_both():
    def trace(c, carried):
        _init(c)
        c.mbar(2, MB, abi.MB_ARRIVE_EXPECT_TX, 64, site=12)  # the phase's only arrival
        assert _produce(c, carried) == 1
    _each(trace, [("mbarrier.underflow", ARRIVE, -1)])

    c = _checker(True)
    _init(c)
    c.mbar(2, MB, abi.MB_ARRIVE_EXPECT_TX, 64, site=12)
    assert _produce(c, True) == 1
    c.read(1, 0, 16, site=2)  # the copy was skipped: nothing wrote the box
    assert c.kinds()[-1] == ("uninit.read", 2, -1)


def test_an_uninitialised_mbarrier_is_reported_at_the_arrive():
    def trace(c, carried):
        assert _produce(c, carried) == 1
    expected = [("mbarrier.uninit", ARRIVE, -1)]
    for vsh in (True, False):
        c = _checker(vsh)
        trace(c, True)
        assert c.kinds() == expected
        c = _checker(vsh)  # separately: the arrive's report, then the load's
        trace(c, False)
        assert c.kinds() == expected + [("mbarrier.uninit", LOAD, -1)]


def test_lanes_marked_off_carry_nothing():
    c = _checker(True)
    _init(c)
    tmap = c.tensor_map(MAP, footprint=BOX)
    assert c.tensor_load(0, 0, tmap, MB, site=LOAD, op=abi.TENSOR_LOAD | abi.PROBE_OFF,
                         expect_tx=BOX, arrive_site=ARRIVE) == 0
    c.mbar(2, MB, abi.MB_ARRIVE, 1, site=12)  # still the phase's one arrival: no underflow
    c.mbar_wait(1, MB, parity=0, site=3)
    assert c.kinds() == []


@pytest.mark.parametrize("vsh", [True, False])
def test_random_rings_decide_and_leave_the_same_state_either_way(vsh):
    """Every record and every word of the mbarrier entries (counters and clock slots) is
    the same whether the load carries its arrive or the arrive has its own probe."""
    racy = 0
    for seed in range(60):
        runs = []
        for carried in (False, True):
            c = _checker(vsh)
            tma_ring(c, seed, carried)
            runs.append((c.findings(), c.tables["mbar"].copy()))
        assert runs[0][0] == runs[1][0], seed
        assert np.array_equal(runs[0][1], runs[1][1]), seed
        racy += bool(runs[0][0])
    assert 5 <= racy <= 55  # the traces are not all clean, nor all racy


# A stage's two boxes on one mbarrier (a GEMM's A and B): one call for both loads
# (abi.PROBE_TENSOR2, carry.pairs) against the two calls one after the other.
B2 = 5  # the second box's site


def _produce_two(c, paired: bool, tx: int = 2 * BOX, mbar: int = MB) -> int:
    tmap = c.tensor_map(MAP, footprint=BOX)
    if paired:
        return c.tensor_load_pair(0, 0, tmap, BOX, tmap, mbar, site=LOAD, site2=B2,
                                  expect_tx=tx, arrive_site=ARRIVE)
    skip = c.tensor_load(0, 0, tmap, mbar, site=LOAD, expect_tx=tx, arrive_site=ARRIVE)
    return skip | c.tensor_load(0, BOX, tmap, mbar, site=B2)


def test_a_pair_completes_the_phase_with_its_second_box():
    def trace(c, paired):
        _init(c)
        assert _produce_two(c, paired) == 0
        c.mbar_wait(1, MB, parity=0, site=3)
        _read_box(c, 1, 4)
        _read_box(c, 1, 6, dst=BOX)
    _each(trace, [])


def test_a_pair_whose_second_box_a_read_overtakes_is_pending():
    def trace(c, paired):
        _init(c)
        assert _produce_two(c, paired) == 0
        c.read(1, BOX, 16, site=2)  # before the wait: the second box's bytes
        c.mbar_wait(1, MB, parity=0, site=3)
    _each(trace, [("async.pending-write", 2, B2)])


def test_a_pair_whose_second_box_was_not_announced_lands_in_the_next_phase():
    """One box announced: the first completes the phase, the second leads the next one's
    arrive (complete_tx before expect_tx), so a read of it after the first wait is
    pending and after the second is not."""
    def trace(c, paired):
        _init(c)
        assert _produce_two(c, paired, tx=BOX) == 0
        c.mbar_wait(1, MB, parity=0, site=3)
        _read_box(c, 1, 4)
        c.read(1, BOX, 16, site=2)
        c.mbar(0, MB, abi.MB_ARRIVE_EXPECT_TX, BOX, site=7)
        c.mbar_wait(1, MB, parity=1, site=8)
        _read_box(c, 1, 6, dst=BOX)
    _each(trace, [("async.pending-write", 2, B2)])


def test_a_pair_whose_second_box_is_in_another_cta_gives_the_lock_back():
    """The first look keeps the entry's lock for the second; a second box in another CTA's
    shared memory is only noted, and the lock is still given back: the next operation on
    the mbarrier takes it, and the phase completes."""
    remote = 1 << abi.RANK_SHIFT  # (rank 1's shared::cluster address)

    def trace(c, paired):
        _init(c)
        tmap = c.tensor_map(MAP, footprint=BOX)
        if paired:
            skip = c.tensor_load_pair(0, 0, tmap, remote | BOX, tmap, MB, site=LOAD, site2=B2,
                                      expect_tx=2 * BOX, arrive_site=ARRIVE)
        else:
            skip = c.tensor_load(0, 0, tmap, MB, site=LOAD, expect_tx=2 * BOX,
                                 arrive_site=ARRIVE)
            skip |= c.tensor_load(0, remote | BOX, tmap, MB, site=B2)
        assert skip == 0
        c.mbar(0, MB, abi.MB_COMPLETE_TX, BOX, site=7)  # (takes the entry's lock)
        c.mbar_wait(1, MB, parity=0, site=3)
        _read_box(c, 1, 4)
    _each(trace, [("tool.remote-smem", B2, -1)])


def test_a_pair_on_an_mbarrier_never_initialised_skips_both_loads():
    def trace(c, paired):
        skip = _produce_two(c, paired)
        assert skip == 1
    for vsh in (True, False):
        for paired in (False, True):
            c = _checker(vsh)
            trace(c, paired)
            kinds = c.kinds()
            assert kinds and {k[0] for k in kinds} == {"mbarrier.uninit"}, (vsh, paired, kinds)
