"""benchmarks/sass_static.py: an instrumented kernel's static SASS counts beside the same
counts of the module as it came (no GPU; ptxas and cuobjdump from CUDA or Triton's wheel)."""

from __future__ import annotations

import re

import pytest

from benchmarks import sass_static

# One group: --dist loadgroup sends groups out first, so the checker build with line
# information (about 15 s on CI's machine) starts at once instead of trailing the run.
pytestmark = pytest.mark.xdist_group("sass-static")


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


def test_a_probes_instructions_are_counted_by_the_source_line_they_come_from(capsys):
    try:
        from benchmarks.cuda_tools import cuda_tool

        for tool in ("ptxas", "cuobjdump", "nvdisasm"):
            cuda_tool(tool, "test")
    except SystemExit:
        pytest.skip("no ptxas, cuobjdump or nvdisasm here")
    assert sass_static.main(["tests/corpus/triton/triton_softmax.ptx", "--tables", "phases",
                             "--value-tags", "--lines", "__consan_cta_begin"]) == 0
    out = capsys.readouterr().out.splitlines()
    size = int(re.search(r": (\d+) insns", next(
        ln for ln in out if ln.startswith("probe __consan_cta_begin:"))).group(1))
    line = next(ln for ln in out if ln.startswith("probe __consan_cta_begin by source line"))
    total = int(re.search(r"\((\d+) insns\)", line).group(1))
    assert total == size  # every instruction has a line (the same code, with line info)
    top = re.findall(r"(\w+\.(?:h|cu)):(\d+) (\d+)", line)
    assert top and all(int(n) > 0 and int(k) > 0 for _, n, k in top)


def test_source_lines_follow_the_markers():
    sass = """
	.text.f:
	//## File "/x/cta.h", line 12
	/*0000*/ MOV R1, c[0x0][0x28] ;
	/*0010*/ IADD3 R2, R1, 1, RZ ;
	//## File "/x/clocks.h", line 7
	/*0020*/ RET.REL.NODEC R20 0x0 ;
	.text.g:
	//## File "/x/cta.h", line 12
	/*0000*/ EXIT ;
"""
    assert sass_static.source_lines(sass, "f") == {("cta.h", 12): 2, ("clocks.h", 7): 1}


def test_the_cp_async_gemm_keeps_its_registers_through_the_inline_probes(capsys, tmp_path):
    """The inline read and copy (instrument/vc_reads.py, vc_writes.py) define every scratch
    register before a predicated load: a register only a predicated load defines is live
    around the kernel's loop, and the cp.async GEMM, at its register limit, kept such
    registers in local memory (76 local loads in its K loop; 0.276 -> 0.263 ms on the
    H200 without them, benchmarks/RESULTS.md). Its instrumented SASS loads nothing from
    local memory."""
    try:
        from benchmarks.cuda_tools import cuda_tool

        cuda_tool("ptxas", "test")
        cuda_tool("cuobjdump", "test")
    except SystemExit:
        pytest.skip("no ptxas or cuobjdump here")
    from tests.kernels import mma_gemm

    src = tmp_path / "mma_gemm.cu"
    src.write_text(mma_gemm.SOURCE)
    assert sass_static.main([str(src), "--tables", "shared"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines()
                if ln.startswith("mma_gemm: "))
    ours = line.split("; native:")[0]
    assert "CALL" in ours and "LDGSTS" in ours, line
    assert not re.search(r"\bLDL\b", ours), line
