"""instrument/rejoin.py: every call of a consan function sits in a region ptxas closes with
a warp reconvergence (BSSY before it, BSYNC after), so a probe that returns with its warp
split leaves the kernel's warp whole (the GPU side: tests/gpu/test_one_lane_probes.py)."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from consan import runtime, toolchain
from instrument.ptx import parse
from instrument.rejoin import rejoin
from instrument.rewrite import instrument
from tests import corpus_build
from tests.probe_calls import rejoined

HEADER = ".version 8.0\n.target sm_90a\n.address_size 64\n"
MODULE = HEADER + """
.extern .func __consan_thread_exit (.param .b32 a);
.func helper (.param .b32 x)
{
\tret;
}
.func user_only ()
{
\t{ .param .b32 p; st.param.b32 [p], 1; call helper, (p); }
\tret;
}
.visible .entry k ()
{
\t.reg .pred %p<2>;
\t{ .param .b32 p; st.param.b32 [p], 1; call helper, (p); }
\t@%p1 call __consan_thread_exit, (1);
\tcall __consan_thread_exit, (2);
\tret;
}
"""


def test_consan_calls_are_wrapped_and_the_users_own_calls_are_not():
    out = rejoin(MODULE)
    assert rejoined(out) == (2, 2)
    assert "@%__cs_rj bra $__cs_rejoin1; @%p1 call __consan_thread_exit, (1); $__cs_rejoin1:" \
        in out
    # the user's calls as they were; only the function that calls consan declares the regs
    assert out.count("call helper, (p); }") == 2 and "bra $__cs_rejoin1; call helper" not in out
    assert out.count(".reg .pred %__cs_rj;") == 1
    assert out.index(".reg .pred %__cs_rj;") > out.index(".visible .entry k")
    assert out.split(".visible .entry k")[0] == MODULE.split(".visible .entry k")[0]
    # (the prototype's `;` comes before any body: it opens none)
    assert rejoin(HEADER + ".extern .func __consan_thread_exit (.param .b32 a);\n") == \
        HEADER + ".extern .func __consan_thread_exit (.param .b32 a);\n"


@pytest.fixture(scope="module")
def modules():
    names = ("noinline_funcs.cu", "mbarrier_sm90.cu", "cp_async.cu", "racy_kernels.cu")
    mods = [(label, ptx) for label, ptx in corpus_build.corpus_ptx()
            if label.split("/")[0] + ".cu" in names and "compute_90" in label]
    mods += [(p.name, p.read_text())
             for p in sorted((corpus_build.CORPUS_DIR / "triton").glob("triton_matmul_s3.ptx"))]
    assert len(mods) >= 5
    return mods


def test_every_probe_call_of_an_instrumented_module_is_rejoined(modules):
    for label, ptx in modules:
        calls, ok = rejoined(instrument(parse(ptx, label)).ptx)
        assert calls == ok > 0, label


# After a call outside a region, the next control instruction may instead be the thread's
# EXIT (the thread-exit probe) or the warp-wide sync ptxas puts before an aligned CTA
# barrier (a barrier probe's arrive, then bar.sync): ptxas leaves out the region there. On
# the H100 the warp was whole after such a barrier in a racy kernel.
_CONTROL = re.compile(r"(@!?U?P\w+\s+)?(BRA|BSSY|BSYNC|BREAK|CALL|RET|EXIT|WARPSYNC|BAR)\b")
_THEN = ("EXIT", "WARPSYNC.ALL")


def _regions(code: list[tuple[int, str]], labels: dict[str, int]) -> list[tuple[int, int]]:
    """(BSSY, its BSYNC's label) address pairs (nvdisasm names the label)."""
    return [(a, labels[m.group(1)]) for a, t in code
            if (m := re.search(r"\bBSSY B\d+, `\((\.L_x_\d+)\)", t))]


def test_ptxas_puts_every_probe_call_of_a_kernel_in_a_convergence_region(modules):
    """In the linked SASS, each call of a consan function from a kernel (or from the module's
    own functions) lies between a BSSY and the label its BSYNC is at, or is followed by the
    thread's EXIT or a warp-wide sync ptxas counts as the reconvergence (_THEN)."""
    try:
        from benchmarks.convergence_barriers import _tool
        from benchmarks.convergence_barriers import parse as parse_sass

        tool = _tool("nvdisasm")
    except SystemExit:
        pytest.skip("no nvdisasm here")
    seen = 0
    for label, ptx in modules:
        ins = instrument(parse(ptx, label))
        arch = toolchain.Arch.parse(parse(ptx).target[0])
        cubin = toolchain.link_with_checker(ins, label, arch, **runtime.first_link(ins, 256))
        with tempfile.TemporaryDirectory() as d:
            Path(d, "m.cubin").write_bytes(cubin)
            sass = subprocess.run([tool, "-c", str(Path(d, "m.cubin"))], check=True,
                                  capture_output=True, text=True).stdout
        for name, f in parse_sass(sass).items():
            if name.startswith("__consan_") and not name.startswith("__consan_inline"):
                continue  # (the checker's own)
            regions = _regions(f.code, f.labels)
            for i, (a, t) in enumerate(f.code):
                m = re.search(r"CALL\.\S+\s+`\((\S+?)\)", t)
                if not m or not m.group(1).startswith("__consan_"):
                    continue  # (the user's own calls as they came)
                seen += 1
                nxt = next((u for _, u in f.code[i + 1:] if _CONTROL.match(u)), "EXIT")
                assert any(s < a < e for s, e in regions) or nxt.startswith(_THEN), \
                    f"{label}: {name} calls {m.group(1)} at {a:#x} outside any region"
    assert seen > 20
