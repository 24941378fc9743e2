"""benchmarks/wgmma_serial.py: one call to another module's function serializes a wgmma
kernel's mma_async (no GPU: the builds and their SASS)."""

from __future__ import annotations

import re

import pytest

from benchmarks import wgmma_serial


def test_the_call_goes_before_each_return_and_its_function_is_another_modules():
    ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n"
    got = wgmma_serial.with_call(ptx)
    assert f".extern .func {wgmma_serial.EMPTY} ();" in got
    assert got.index(f"call {wgmma_serial.EMPTY};") < got.index("\tret;")
    empty = wgmma_serial.empty_module(ptx)
    assert empty.startswith(".version 8.0\n.target sm_90a\n.address_size 64")
    assert f".visible .func {wgmma_serial.EMPTY} ()" in empty


def test_one_extern_call_serializes_the_gemms_mma_async():
    """Natively a K step's four HGMMA share one WARPGROUP.DEPBAR; with the call, each has
    its own."""
    try:
        from benchmarks.cuda_tools import cuda_tool

        cuda_tool("cuobjdump", "test")
    except SystemExit:
        pytest.skip("no cuobjdump here")
    counts = {k: wgmma_serial.sass_counts(v)
              for k, v in wgmma_serial.builds(("-arch=sm_90a",)).items()}
    (hn, dn), (hc, dc) = (tuple(int(x) for x in re.findall(r"\d+", counts[k]))
                          for k in ("native", "one extern call"))
    assert hn == hc > 0
    assert dn < hn and dc == hc, counts
