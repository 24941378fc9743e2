"""A pipeline's mbarrier.init one after another, made in one probe call
(abi.PROBE_MBAR_INIT_RUN, instrument/init_runs.py), on a real GPU: by one thread (the
call's lanes make the inits at once, each the init of its rank) and by three threads, four
inits each (one after another). The pipeline then uses every mbarrier: an init given the
wrong count or address would show as an underflow, an uninit or a deadlock, and the clean
kernel must compute the native bits."""

from __future__ import annotations

import numpy as np
import pytest

from instrument import abi
from tests.gpu.test_mbarrier import MB
from tests.gpu_util import (
    arch_option,
    assert_same_outputs,
    host,
    line_of,
    lines,
    native_launch,
    poisoned,
)
from tests.probe_calls import calls

pytestmark = pytest.mark.gpu

STAGES = 6
ROUNDS = 24
# Warp 0 produces a 32-float tile a round into stage s and arrives on full[s]; warps 1 and
# 2 wait on full[s], read the tile and arrive on empty[s] (count 2), which the producer
# waits on before it refills the stage.
PIPE = MB + r"""
#define STAGES 6
#define ROUNDS 24
extern "C" __global__ void init_pipe(const float* in, float* out) {
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    __shared__ float buf[STAGES][32];
    int t = threadIdx.x, warp = t / 32, lane = t % 32;
    INITS
    __syncthreads();
    if (warp == 0) {
        for (int i = 0; i < ROUNDS; ++i) {
            int s = i % STAGES;
            if (i >= STAGES) mb_wait(&empty[s], ((i / STAGES) - 1) & 1);
            buf[s][lane] = in[(i * 32 + lane) % 64] + (float)i;  // @produce
            __syncwarp();
            if (lane == 0) mb_arrive(&full[s], 1);
        }
    } else {
        float acc = 0.0f;
        for (int i = 0; i < ROUNDS; ++i) {
            int s = i % STAGES;
            WAIT
            acc += buf[s][(lane + warp) % 32] * (float)warp;  // @consume
            __syncwarp();
            if (lane == 0) mb_arrive(&empty[s], 1);
        }
        out[blockIdx.x * 64 + (warp - 1) * 32 + lane] = acc;
    }
}
"""
INITS = {
    # one thread, the stage loop unrolled: a run of twelve, its branch converted
    "one thread": "if (t == 0) { for (int s = 0; s < STAGES; ++s) "
                  "mb_init(&full[s], 1), mb_init(&empty[s], 2); }",
    # three threads, each two stages' pairs: a run of four, three lanes on
    "three threads": "if (t < STAGES / 2) { mb_init(&full[2 * t], 1); "
                     "mb_init(&full[2 * t + 1], 1); mb_init(&empty[2 * t], 2); "
                     "mb_init(&empty[2 * t + 1], 2); }",
}
WAIT = "mb_wait(&full[s], (i / STAGES) & 1);"
GRID, BLOCK = (4, 1, 1), (96, 1, 1)


def _prepare(inits: str, wait: str):
    import cupy as cp

    import consan

    src = PIPE.replace("INITS", inits).replace("WAIT", wait)
    p = consan.prepare(src, "init_pipe", grid=GRID, block=BLOCK, options=(arch_option(),))
    runs = [int(c.args[3 * abi.MBAR_INIT_RUN_MAX]) for c in
            calls(p.build.instrumented.ptx, abi.PROBE_MBAR_INIT_RUN)]
    assert runs == ([2 * STAGES] if inits == INITS["one thread"] else [4]), runs
    x = cp.asarray(np.random.default_rng(5).random(64, dtype=np.float32))
    out = poisoned(GRID[0] * 64, cp.float32)
    return src, p, (x, out), out


@pytest.mark.parametrize("who", sorted(INITS))
def test_a_pipeline_set_up_by_one_run_is_clean_and_computes_the_native_bits(who):
    src, p, args, out = _prepare(INITS[who], WAIT)
    native_launch(src, "init_pipe", GRID, BLOCK, args, 0, (arch_option(),))
    native = host(out).copy()
    p.launch(args)
    rep = p.report()
    assert_same_outputs([native], [host(out)], "init_pipe")
    assert rep.ok and not rep.unmodeled, str(rep)


@pytest.mark.parametrize("who", sorted(INITS))
def test_a_consumer_that_skips_one_stages_wait_races_on_that_stage(who):
    src, p, args, _ = _prepare(INITS[who], "if (s != 2) " + WAIT)
    p.launch(args)
    rep = p.report()
    assert {v.kind for v in rep.violations} == {"race.raw"}, str(rep)
    assert {v.line for v in rep.violations} == {line_of(src, "@consume")}, str(rep)
    assert {v.prev_line for v in rep.violations} == {line_of(src, "@produce")}, str(rep)


def test_a_run_that_initialises_a_live_mbarrier_again_names_that_init():
    """Thread 0's run: full[0..5], then full[0] again (the pipeline's fault): one
    mbarrier.reinit, at the second init of full[0]."""
    inits = ("if (t == 0) { for (int s = 0; s < STAGES; ++s) mb_init(&full[s], 1);\n"
             "    mb_init(&full[0], 1);  // @again\n"
             "    for (int s = 0; s < STAGES; ++s) mb_init(&empty[s], 2); }")
    import consan

    src = PIPE.replace("INITS", inits).replace("WAIT", WAIT)
    p = consan.prepare(src, "init_pipe", grid=GRID, block=BLOCK, options=(arch_option(),))
    assert [int(c.args[3 * abi.MBAR_INIT_RUN_MAX]) for c in
            calls(p.build.instrumented.ptx, abi.PROBE_MBAR_INIT_RUN)] == [2 * STAGES + 1]
    import cupy as cp

    x = cp.asarray(np.random.default_rng(5).random(64, dtype=np.float32))
    p.launch((x, poisoned(GRID[0] * 64, cp.float32)))
    rep = p.report()
    assert {v.kind for v in rep.violations} == {"mbarrier.reinit"}, str(rep)
    # (the init sits in an inlined helper: its call line is in the inline chain; the first
    # init of full[0] is the loop's, a line before)
    assert all(line_of(src, "@again") in lines(v.site) for v in rep.violations), str(rep)


def _launch_report(src: str):
    import cupy as cp

    import consan

    p = consan.prepare(src, "init_pipe", grid=GRID, block=BLOCK, options=(arch_option(),))
    x = cp.asarray(np.random.default_rng(5).random(64, dtype=np.float32))
    p.launch((x, poisoned(GRID[0] * 64, cp.float32)))
    return p.report()


def test_a_run_over_live_mbarriers_names_the_thread_that_made_it():
    """Thread 0 sets the pipeline up twice (a persistent kernel's set-up run again without
    mbarrier.inval): each init of the second run is a mbarrier.reinit of thread 0, lane 0,
    not of the lanes the checker gave the inits to."""
    one = "for (int s = 0; s < STAGES; ++s) mb_init(&full[s], 1), mb_init(&empty[s], 2);"
    inits = f"if (t == 0) {{ {one} }}\n    __syncthreads();\n    if (t == 0) {{ {one} }}  // @again"
    src = PIPE.replace("INITS", inits).replace("WAIT", WAIT)
    rep = _launch_report(src)
    assert {v.kind for v in rep.violations} == {"mbarrier.reinit"}, str(rep)
    assert all(line_of(src, "@again") in lines(v.site) for v in rep.violations), str(rep)
    assert {v.lanes for v in rep.violations} == {1}, str(rep)


def test_warps_initialising_the_same_mbarriers_each_get_a_reinit_not_a_hang():
    """Every warp's lane 0 sets the pipeline up (`lane == 0` where `t == 0` was meant):
    three runs of the same twelve inits at once. Were two warps to make theirs by their
    lanes together, each lane holding its mbarrier's lock while waiting for the others,
    each warp could hold what the other's lanes wait for: the checker lets one warp at a
    time do so. The second init of each mbarrier is a mbarrier.reinit, and the kernel
    ends."""
    inits = ("if (lane == 0) { for (int s = 0; s < STAGES; ++s) "
             "mb_init(&full[s], 1), mb_init(&empty[s], 2); }")
    rep = _launch_report(PIPE.replace("INITS", inits).replace("WAIT", WAIT))
    assert {v.kind for v in rep.violations} == {"mbarrier.reinit"}, str(rep)
    assert rep.error is None, str(rep)
