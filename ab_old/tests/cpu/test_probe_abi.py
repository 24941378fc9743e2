"""A module's probe declarations under a calling convention of its own (.abi_preserve)."""

from __future__ import annotations

import pytest

from consan import toolchain
from instrument import abi, probe_abi
from instrument.ptx import parse
from instrument.rewrite import instrument

KERNEL = r"""
extern "C" __global__ void k(float* o) {
    __shared__ float s[64];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    o[threadIdx.x] = s[63 - threadIdx.x];
}
"""


@pytest.fixture(scope="module")
def instrumented() -> str:
    return instrument(parse(toolchain.compile_cuda(KERNEL, "k.cu", ["-arch=compute_90a"]),
                            "k.ptx")).ptx


def test_every_probe_declaration_takes_the_directive_and_nothing_else_changes(instrumented):
    out = probe_abi.declare(instrumented, 16)
    before = [ln for ln in instrumented.splitlines() if ln.startswith(".extern .func")]
    after = [ln for ln in out.splitlines() if ln.startswith(".extern .func")]
    assert len(after) == len(before) == len(abi.PROBE_PROTOTYPES)
    assert after == [ln[:-1] + " .abi_preserve 16;" for ln in before]
    rest = [ln for ln in out.splitlines() if not ln.startswith(".extern .func")]
    assert rest == [ln for ln in instrumented.splitlines() if not ln.startswith(".extern .func")]


@pytest.mark.parametrize("version,want", [("8.0", "9.0"), ("8.7", "9.0"), ("9.0", "9.0"),
                                          ("9.1", "9.1")])
def test_an_older_ptx_version_is_raised_to_the_first_that_has_the_directive(instrumented,
                                                                            version, want):
    ptx = instrumented.replace(".version 9.0", f".version {version}", 1)
    assert f".version {version}\n" in ptx
    assert f".version {want}\n" in probe_abi.declare(ptx, 16)


def test_a_declaration_that_is_no_probe_is_left_alone(instrumented):
    other = ".extern .func (.param .b32 r) vprintf (.param .b64 f, .param .b64 a);"
    out = probe_abi.declare(instrumented.replace("// consan probes", other + "\n// consan probes"),
                            16)
    assert other in out


def test_a_module_without_probes_is_refused():
    with pytest.raises(ValueError, match="no consan probe declaration"):
        probe_abi.declare(".version 8.7\n.target sm_90a\n.address_size 64\n", 16)
