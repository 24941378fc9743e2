"""The pytest plugin on a real GPU, driven through `pytester` on a small test file.

A racy test fails with the rendered report (fixture and marker), a clean one
passes, `expect` passes on a kept race (inside the fixture and on its own) and
fails when the race is gone.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.gpu

DEMO = r'''
import cupy as cp
import pytest

import consan as consan_api

TEMPLATE = r"""
extern "C" __global__ void NAME(const int *in, int *out) {
    __shared__ int buf[256];
    int t = threadIdx.x;
    buf[t] = in[t];
    long long start = clock64();
    while (clock64() - start < (1 << 20)) { }
    SYNC
    out[t] = buf[(t + 32) % 256];   // the read
}
"""
RACY = TEMPLATE.replace("NAME", "racy_shift").replace("SYNC", "")
CLEAN = TEMPLATE.replace("NAME", "clean_shift").replace("SYNC", "__syncthreads();")


def launch(src, name):
    x = cp.arange(256, dtype=cp.int32)
    out = cp.zeros(256, dtype=cp.int32)
    cp.RawKernel(src, name)((1,), (256,), (x, out))
    cp.cuda.Device().synchronize()
    return out


def test_racy_fixture(consan):
    launch(RACY, "racy_shift")


NATIVE = {}


def test_a_native_run_first():  # no consan here: CuPy's own build runs the kernel
    NATIVE["clean"] = launch(CLEAN, "clean_shift").get()


def test_clean_fixture(consan):
    out = launch(CLEAN, "clean_shift").get()
    assert consan.report.launches_checked >= 1
    assert out.tobytes() == NATIVE["clean"].tobytes()  # the very bits of the native run
    assert list(out[:4]) == [32, 33, 34, 35]


@pytest.mark.consan
def test_racy_marker():
    launch(RACY, "racy_shift")


def test_expect_kept_race(consan):
    with consan.expect("race.raw"):
        launch(RACY, "racy_shift")


def test_expect_on_its_own():
    with consan_api.expect("race.*"):
        launch(RACY, "racy_shift")


def test_expect_race_gone(consan):
    with consan.expect("race.raw"):
        launch(CLEAN, "clean_shift")
'''


def test_plugin_fails_racy_tests_with_the_report(pytester):
    pytester.makepyfile(test_consan_demo=DEMO)
    result = pytester.runpytest("-p", "consan.pytest_plugin", "-p", "no:cacheprovider", "-rf")
    result.assert_outcomes(passed=4, failed=3)
    out = result.stdout.str()
    for name in ("test_racy_fixture", "test_racy_marker", "test_expect_race_gone"):
        assert f"FAILED test_consan_demo.py::{name}" in out, out
    for name in ("test_a_native_run_first", "test_clean_fixture", "test_expect_kept_race",
                 "test_expect_on_its_own"):
        assert f"FAILED test_consan_demo.py::{name}" not in out, out
    # The failure message is the rendered report: kind, the racing source line, the fix.
    result.stdout.fnmatch_lines(["*consan found 1 finding(s)*", "*race.raw*", "*fix:*"])
    assert "out[t] = buf[(t + 32) % 256];   // the read" in out
    assert "consan.expect('race.raw'): no such finding" in out
