"""The GPU suite's native-vs-checked helpers (tests/gpu_util.py), without a GPU.

`assert_same_bits` is the judge of the rule that an instrumented kernel computes the native
bits: it must see one flipped bit, a changed NaN payload and -0.0 against 0.0. The native
build must start from the very PTX consan instruments, and the dump wrapper must save what
a program leaves behind.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests import gpu_util
from tests.gpu_util import assert_same_bits, assert_same_dumps, assert_same_outputs


def _flip(a: np.ndarray, index: int, bit: int) -> np.ndarray:
    b = a.copy()
    words = b.reshape(-1).view(f"u{b.dtype.itemsize}")
    words[index] ^= words.dtype.type(1 << bit)
    return b


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.uint8,
                                   np.int64])
def test_identical_arrays_pass(dtype):
    a = (np.arange(24).reshape(2, 3, 4) * 3 - 7).astype(dtype)
    assert_same_bits(a, a.copy(), "identical")
    nan = np.full(5, np.nan, dtype=np.float32)
    assert_same_bits(nan, nan.copy(), "the same NaN bits")


@pytest.mark.parametrize("dtype,bit", [(np.float32, 0), (np.float32, 31), (np.float64, 0),
                                       (np.float16, 9), (np.int32, 0), (np.uint8, 7)])
def test_one_flipped_bit_fails(dtype, bit):
    a = (np.arange(12).reshape(3, 4) + 1).astype(dtype)
    b = _flip(a, 5, bit)
    with pytest.raises(AssertionError) as e:
        assert_same_bits(a, b, "out")
    msg = str(e.value)
    assert "out: 1 of 12 elements differ" in msg, msg
    assert "[1, 1]" in msg, msg  # element 5 of a 3 x 4 array


def test_a_changed_nan_payload_fails():
    a = np.full(4, np.nan, dtype=np.float32)
    b = a.copy()
    b.view(np.uint32)[2] = 0x7FC0BEEF  # still a NaN, another payload
    assert np.isnan(b).all() and np.array_equal(a, b, equal_nan=True)
    with pytest.raises(AssertionError) as e:
        assert_same_bits(a, b)
    assert "1 of 4 elements differ" in str(e.value) and "7fc0beef" in str(e.value)


def test_negative_zero_against_zero_fails():
    a = np.zeros(3, dtype=np.float64)
    b = a.copy()
    b[1] = -0.0
    assert np.array_equal(a, b)  # equal as numbers, not as bits
    with pytest.raises(AssertionError) as e:
        assert_same_bits(a, b)
    assert "native 0.0" in str(e.value) and "checked -0.0" in str(e.value)


def test_the_message_counts_all_and_shows_the_first_few():
    a = np.arange(100, dtype=np.int32)
    b = a + 1
    with pytest.raises(AssertionError) as e:
        assert_same_bits(a, b, "buf", show=3)
    msg = str(e.value)
    assert "100 of 100 elements differ" in msg and "... 97 more" in msg, msg
    assert "[0] native 0 (0x00000000), checked 1 (0x00000001)" in msg, msg


def test_dtype_or_shape_mismatch_fails():
    with pytest.raises(AssertionError):
        assert_same_bits(np.zeros(4, np.float32), np.zeros(4, np.int32))
    with pytest.raises(AssertionError):
        assert_same_bits(np.zeros(4, np.float32), np.zeros((2, 2), np.float32))


def test_wide_elements_and_several_outputs():
    a = np.array([1 + 2j, 3 - 4j], dtype=np.complex128)
    assert_same_bits(a, a.copy())
    with pytest.raises(AssertionError):
        assert_same_bits(a, _flip(a.view(np.uint64), 3, 0).view(np.complex128))
    assert_same_outputs([a, np.ones(2)], [a.copy(), np.ones(2)], "launch")
    with pytest.raises(AssertionError, match="launch, output 1"):
        assert_same_outputs([a, np.ones(2)], [a.copy(), np.zeros(2)], "launch")


# ------------------------------------------------------------ the native build's PTX

CUDA = r"""
extern "C" __global__ void twice(const float* in, float* out) {
    __shared__ float s[64];
    s[threadIdx.x] = in[threadIdx.x] * SCALE;
    __syncthreads();
    out[threadIdx.x] = s[63 - threadIdx.x];
}
"""


def _ptx_consan_instruments(monkeypatch, source: str, options: tuple[str, ...]):
    """The (name, PTX) consan.build hands to the instrumenter (stopped right there)."""
    from consan import pipeline, runtime

    seen = {}

    class Stop(Exception):
        pass

    def parse(ptx: str, name: str):
        seen["ptx"], seen["name"] = ptx, name
        raise Stop

    monkeypatch.setattr(pipeline, "parse", parse)
    with pytest.raises(Stop):
        runtime.build(source, options)
    return seen["name"], seen["ptx"]


@pytest.mark.parametrize("options", [("-arch=sm_90a", "-DSCALE=2.0f"),
                                     ("-arch=sm_80", "-lineinfo", "-DSCALE=3.0f"),
                                     ("--gpu-architecture", "sm_90a", "-DSCALE=1.0f")])
def test_native_ptx_is_the_ptx_consan_instruments(monkeypatch, options):
    name, ptx = _ptx_consan_instruments(monkeypatch, CUDA, options)
    got_name, got_ptx, arch = gpu_util.native_ptx(CUDA, options)
    assert (got_name, got_ptx) == (name, ptx)
    assert ".loc" in got_ptx  # -lineinfo, as consan compiles
    # a PTX source is taken as it is, by both
    assert _ptx_consan_instruments(monkeypatch, ptx, (f"-arch={arch.sm}",))[1] == ptx
    assert gpu_util.native_ptx(ptx, (f"-arch={arch.sm}",))[1] == ptx


def test_native_cubin_assembles_without_a_gpu():
    cubin = gpu_util.native_cubin(CUDA, ("-arch=sm_90a", "-DSCALE=2.0f"))
    assert cubin[:4] == b"\x7fELF" and b"twice" in cubin
    ptx = gpu_util.native_ptx(CUDA, ("-arch=sm_90a", "-DSCALE=2.0f"))[1]
    assert gpu_util._entry(ptx, "twice") == "twice"


# ------------------------------------------------------------ programs: the dump wrapper

PROGRAM = textwrap.dedent("""
    import sys

    import numpy as np

    def compute(n):
        return np.arange(n, dtype=np.float32) * -1.0

    def main():
        got = compute(int(sys.argv[1]))
        print("sum", float(got.sum()))
        return 3

    kept = np.array([0.0, -0.0, np.nan], dtype=np.float64)
    file = np.ones(2, dtype=np.int8)  # a name np.savez keeps for itself
    label = "not an array"
    boxes = np.array([None, 1], dtype=object)  # no raw bits to compare
    if __name__ == "__main__":
        sys.exit(main())
""")


def _dump(monkeypatch, tmp_path, name: str, *argv: str, program: str = PROGRAM) -> int:
    script = tmp_path / "program.py"
    script.write_text(program)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        return gpu_util.dump_main(["dump", str(tmp_path / name), *argv[:-1], str(script),
                                   argv[-1]])
    finally:
        sys.modules.pop("consan_dumped_program", None)


def test_dump_keeps_a_programs_global_arrays(monkeypatch, tmp_path, capsys):
    program = PROGRAM.replace("sys.exit(main())", "main()")
    assert _dump(monkeypatch, tmp_path, "g.npz", "4", program=program) == 0
    assert capsys.readouterr().out == "sum -6.0\n"
    with np.load(tmp_path / "g.npz") as d:
        assert sorted(d.files) == ["file", "kept"]  # the globals that are arrays of bits
        assert_same_bits(d["kept"], np.array([0.0, -0.0, np.nan]))
        assert_same_bits(d["file"], np.ones(2, dtype=np.int8))
        with pytest.raises(AssertionError):
            assert_same_bits(d["kept"], np.array([0.0, 0.0, np.nan]))


def test_dump_keeps_what_a_function_returned(monkeypatch, tmp_path, capsys):
    assert _dump(monkeypatch, tmp_path, "a.npz", "--call", "compute", "4") == 3
    assert _dump(monkeypatch, tmp_path, "b.npz", "--call", "compute", "4") == 3
    assert capsys.readouterr().out == "sum -6.0\nsum -6.0\n"
    with np.load(tmp_path / "a.npz") as d:
        assert d.files == ["compute_0"]
        assert_same_bits(d["compute_0"], np.arange(4, dtype=np.float32) * -1.0)
    assert_same_dumps(tmp_path / "a.npz", tmp_path / "b.npz", "program")
    _dump(monkeypatch, tmp_path, "c.npz", "--call", "compute", "5")
    with pytest.raises(AssertionError):
        assert_same_dumps(tmp_path / "a.npz", tmp_path / "c.npz", "program")


def test_dump_runs_as_a_script_with_the_programs_exit_status(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    out = tmp_path / "d.npz"
    r = subprocess.run([sys.executable, *gpu_util.dump_command(out, str(script), "3",
                                                               call="compute")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stderr
    assert r.stdout == "sum -3.0\n"
    with np.load(out) as d:
        assert_same_bits(d["compute_0"], np.arange(3, dtype=np.float32) * -1.0)


def test_every_module_the_gpu_suite_imports_first_exists():
    """conftest.gpu() imports these where a GPU is present, so a broken one fails the GPU
    suite instead of skipping it: the list must name real modules."""
    import importlib

    from tests import conftest

    for name in conftest.CONSAN_MODULES:
        importlib.import_module(name)
    assert "consan.runtime" in conftest.CONSAN_MODULES
