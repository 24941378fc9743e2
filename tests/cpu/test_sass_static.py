"""benchmarks/sass_static.py: an instrumented kernel's static SASS counts beside the same
counts of the module as it came (no GPU; ptxas and cuobjdump from CUDA or Triton's wheel)."""

from __future__ import annotations

import re

import pytest

from benchmarks import sass_static


def test_a_kernel_is_counted_instrumented_and_native(capsys):
    try:
        from benchmarks.cuda_tools import cuda_tool

        cuda_tool("ptxas", "test")
        cuda_tool("cuobjdump", "test")
    except SystemExit:
        pytest.skip("no ptxas or cuobjdump here")
    assert sass_static.main(["tests/corpus/triton/triton_softmax.ptx", "--tables", "phases",
                             "--value-tags"]) == 0
    out = capsys.readouterr().out.splitlines()
    line = next(ln for ln in out if ln.startswith("softmax_kernel: "))
    m = re.match(r"softmax_kernel: (\d+) insns, (.*); native: (\d+) insns, (.*)$", line)
    assert m, line
    ours, native = int(m.group(1)), int(m.group(3))
    assert "CALL" in m.group(2) and "CALL" not in m.group(4)
    assert 0 < native < ours
    bars = [re.search(r"\bBAR (\d+)", g).group(1) for g in (m.group(2), m.group(4))]
    assert bars[0] == bars[1]  # the kernel's own bar.sync, no more
    # the probes it calls, linked in, with their own counts
    probes = {ln.split(":")[0].split()[1]: ln for ln in out if ln.startswith("probe __consan_")}
    assert "__consan_cta_begin" in probes
    assert all(re.search(r": \d+ insns", ln) for ln in probes.values())
