"""CPU tests of the pytest plugin: registration, options, and what happens without a GPU."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

DEMO = """
import pytest
import consan as consan_api

def test_fixture(consan):
    raise AssertionError("must be skipped before it runs")

@pytest.mark.consan
def test_marker():
    raise AssertionError("must be skipped before it runs")

def test_plain():
    assert True

def test_expect_without_gpu():
    with pytest.raises(consan_api.NoGPUError, match="needs a CUDA GPU"):
        with consan_api.expect("race.raw"):
            pass

def test_expect_rejects_unknown_kinds():
    with pytest.raises(ValueError, match="matches no finding kind"):
        with consan_api.expect("race.rwa"):
            pass
"""


def test_marker_and_options_are_registered(pytester):
    result = pytester.runpytest("-p", "consan.pytest_plugin", "--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.consan: sanitize every kernel*"])
    result = pytester.runpytest("-p", "consan.pytest_plugin", "--help")
    result.stdout.fnmatch_lines(["*--consan *sanitize every kernel*",
                                 "*--consan-suppressions=FILE*"])


@pytest.mark.no_gpu
def test_fixture_and_marker_skip_without_gpu(pytester):
    pytester.makepyfile(test_demo=DEMO)
    result = pytester.runpytest("-p", "consan.pytest_plugin", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, skipped=2)
    result.stdout.fnmatch_lines(["*consan needs a CUDA GPU to sanitize kernels, and none is "
                                 "usable here*"])


NOTHING_CHECKED = ("consan: checked nothing: no CUDA GPU is usable here, so the tests ran "
                   "without the sanitizer*")


@pytest.mark.no_gpu
def test_session_option_without_gpu_runs_cpu_tests_unchecked(pytester):
    pytester.makepyfile(test_demo="""
        import numpy as np

        def test_a():
            assert np.arange(4).sum() == 6

        def test_b():
            assert "cpu" == "cpu"

        def test_fails():
            assert 1 == 2
    """)
    result = pytester.runpytest("-p", "consan.pytest_plugin", "--consan", "-p",
                                "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)  # run, not skipped: and a real failure fails
    result.stdout.fnmatch_lines([NOTHING_CHECKED])
    assert result.stdout.str().count("consan: checked nothing") == 1
    result = pytester.runpytest("-p", "consan.pytest_plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    assert "consan: checked nothing" not in result.stdout.str()


@pytest.mark.no_gpu
def test_session_option_without_gpu_still_skips_tests_that_ask_for_consan(pytester):
    pytester.makepyfile(test_demo=DEMO)
    result = pytester.runpytest("-p", "consan.pytest_plugin", "--consan", "-rs", "-p",
                                "no:cacheprovider")
    result.assert_outcomes(passed=3, skipped=2)
    result.stdout.fnmatch_lines([NOTHING_CHECKED, "*consan needs a CUDA GPU to sanitize "
                                 "kernels, and none is usable here*"])


@pytest.mark.no_gpu
def test_session_option_without_gpu_leaves_cupy_alone(pytester):
    pytester.makepyfile(test_demo="""
        def test_untouched():
            import cupy.cuda.compiler as c
            assert c._compile_module_with_cache.__module__ == "cupy.cuda.compiler"
    """)
    result = pytester.runpytest("-p", "consan.pytest_plugin", "--consan", "-p",
                                "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_bad_suppressions_file_is_a_usage_error(pytester):
    bad = pytester.path / "supp.txt"
    bad.write_text("race.nope k.cu\n")
    pytester.makepyfile(test_demo="def test_a():\n    pass\n")
    result = pytester.runpytest("-p", "consan.pytest_plugin", "--consan-suppressions",
                                str(bad))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*supp.txt:1*matches no finding kind*"])


def test_plugin_leaves_cupy_alone_when_not_asked(pytester):
    pytester.makepyfile(test_demo="""
        def test_untouched():
            import cupy.cuda.compiler as c
            assert c._compile_module_with_cache.__module__ == "cupy.cuda.compiler"
    """)
    result = pytester.runpytest("-p", "consan.pytest_plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
