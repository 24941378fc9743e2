"""instrument/rejoin.py and the checker's CS_REJOINED: every consan function a kernel calls
gives its warp back whole, by a region ptxas closes with a warp reconvergence (BSSY at its
start, BSYNC before its return; the GPU side: tests/gpu/test_one_lane_probes.py)."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from consan import toolchain
from instrument.rejoin import rejoin
from tests import corpus_build
from tests.probe_calls import rejoined

HEADER = ".version 8.0\n.target sm_90a\n.address_size 64\n"
MODULE = HEADER + """
.extern .func (.param .b32 r) __consan_cta_begin ();
.extern .func __consan_thread_exit (.param .b32 a);
.func helper (.param .b32 x)
{
\tret;
}
.func __consan_inline_read4 (.param .b32 x)
{
\t.reg .pred %p;
\t{ .reg .b32 %q; ld.param.b32 %q, [x]; setp.ne.u32 %p, %q, 0; }
\t@%p bra $done;
\tcall __consan_thread_exit, (1);
$done:
\tret;
}
// a comment between functions
.visible .entry k ()
{
\t.reg .pred %p<2>;
\t{ .param .b32 r; call (r), __consan_cta_begin; }
\t{ .param .b32 p; st.param.b32 [p], 1; call helper, (p); }
\t@%p1 call __consan_thread_exit, (1);
\t{ .param .b32 p; st.param.b32 [p], 1; call __consan_inline_read4, (p); }
\tret;
}
"""


def test_module_functions_and_the_begin_call_are_wrapped_and_the_rest_is_not():
    out = rejoin(MODULE)
    assert rejoined(out) == (2, 2)
    test = "mov.u32 %__cs_rv, %lanemask_eq; setp.eq.u32 %__cs_rj, %__cs_rv, 0; @%__cs_rj bra"
    # the module's consan function: from its first statement to its `ret`
    inline = out[out.index(".func __consan_inline_read4"):out.index(".visible .entry k")]
    assert inline.count(test) == 1 and re.search(r"\$done:\s*\$__cs_rejoin\d+:\s*ret;", inline)
    assert inline.index(test) < inline.index("ld.param.b32 %q")
    # the begin call in a region of its own; the checker's entries and the user's calls as
    # they were (the entries rejoin their lanes themselves)
    kernel = out[out.index(".visible .entry k"):]
    assert re.search(rf"{re.escape(test)} (\$__cs_rejoin\d+); call \(r\), __consan_cta_begin; \1:",
                     kernel)
    assert kernel.count(test) == 1 and "\t@%p1 call __consan_thread_exit, (1);" in kernel
    assert "\tcall helper" not in out.replace("{ .param .b32 p; st.param.b32 [p], 1; call helper",
                                               "")
    # only the functions that use them declare the registers
    assert out.count(".reg .pred %__cs_rj;") == 2
    assert out.split(".func helper")[0] == MODULE.split(".func helper")[0]
    assert out[out.index(".func helper"):out.index(".func __consan_inline_read4")] == \
        MODULE[MODULE.index(".func helper"):MODULE.index(".func __consan_inline_read4")]
    # (the prototype's `;` comes before any body: it opens none)
    assert rejoin(HEADER + ".extern .func __consan_thread_exit (.param .b32 a);\n") == \
        HEADER + ".extern .func __consan_thread_exit (.param .b32 a);\n"


@pytest.mark.parametrize("end", ["\tret;\n\texit;\n", "\t@%p ret;\n", "\tret.uni;\n"])
def test_a_module_function_that_does_not_end_in_its_ret_is_refused(end):
    bad = HEADER + ".func __consan_inline_x ()\n{\n\t.reg .pred %p;\n" + end + "}\n"
    with pytest.raises(AssertionError, match="__consan_inline_x"):
        rejoin(bad)


@pytest.fixture(scope="module")
def modules():
    names = ("noinline_funcs.cu", "mbarrier_sm90.cu", "cp_async.cu", "racy_kernels.cu",
             "bitonic_sort.cu")
    mods = [(label, ptx) for label, ptx in corpus_build.corpus_ptx()
            if label.split("/")[0] + ".cu" in names and "compute_90" in label]
    mods += [(f"triton/{p.name}", p.read_text())  # (test_rewrite.py's label: one link)
             for p in sorted((corpus_build.CORPUS_DIR / "triton").glob("triton_matmul_s3.ptx"))]
    assert len(mods) >= 5
    return mods


@pytest.mark.xdist_group("corpus-links")  # (test_rewrite.py's rewrites: one a module)
def test_every_probe_call_of_an_instrumented_module_is_rejoined(modules):
    for label, ptx in modules:
        calls, ok = rejoined(corpus_build.instrumented(label, ptx)[0].ptx)
        assert calls == ok > 0, label


# After a call outside a region, the next control instruction may instead be the thread's
# EXIT or the warp-wide sync ptxas puts before an aligned CTA barrier: ptxas leaves out the
# region there. On the H100 the warp was whole after such a barrier in a racy kernel.
_CONTROL = re.compile(r"(@!?U?P\w+\s+)?(BRA|BSSY|BSYNC|BREAK|CALL|RET|EXIT|WARPSYNC|BAR)\b")
_THEN = ("EXIT", "WARPSYNC.ALL")


def _regions(code: list[tuple[int, str]], labels: dict[str, int]) -> list[tuple[int, int]]:
    """(BSSY, its BSYNC's label) address pairs (nvdisasm names the label)."""
    return [(a, labels[m.group(1)]) for a, t in code
            if (m := re.search(r"\bBSSY B\d+, `\((\.L_x_\d+)\)", t))]


def _rejoins(f) -> bool:
    """The function's body is one convergence region: its first control instruction is a
    BSSY, the one before the region's label is its BSYNC, and from that label on the way to
    the return takes no conditional branch, makes no call and opens no region."""
    first = next((t for _, t in f.code if _CONTROL.match(t)), "")
    m = re.fullmatch(r"BSSY (B\d+), `\((\.L_x_\d+)\)", first)
    if not m:
        return False
    at = {a: i for i, (a, _) in enumerate(f.code)}
    i = at[f.labels[m.group(2)]]
    if f.code[i - 1][1] != f"BSYNC {m.group(1)}":
        return False
    seen = set()
    while i < len(f.code) and i not in seen:
        seen.add(i)
        t = f.code[i][1]
        if t.startswith("RET"):
            return True
        if re.match(r"@!?U?P\w+\s+(BRA|CALL|RET|EXIT)|(CALL|BSSY|BREAK|EXIT)\b", t):
            return False
        jump = re.fullmatch(r"BRA `\((\.L_x_\d+)\)", t)
        i = at[f.labels[jump.group(1)]] if jump else i + 1
    return False


def _sass(tool: str, cubin: bytes) -> str:
    """nvdisasm's listing of `cubin`, kept on disk by the cubin's bytes (corpus_build.kept):
    the linked modules come out the same while the rewriter and the checker do, and
    nvdisasm took about 1.3 s for each (18 s of CI's CPU time for the 18 here)."""

    def run() -> str:
        with tempfile.TemporaryDirectory() as d:
            Path(d, "m.cubin").write_bytes(cubin)
            return subprocess.run([tool, "-c", str(Path(d, "m.cubin"))], check=True,
                                  capture_output=True, text=True).stdout

    return corpus_build.kept("nvdisasm", (corpus_build.tool_identity(tool), "-c", cubin), run)


@pytest.mark.xdist_group("corpus-links")  # (test_rewrite.py's: the same links, on one worker)
def test_ptxas_gives_back_the_warp_whole_from_every_probe_call_of_a_kernel(modules):
    """In the linked SASS, each call of a consan function from a kernel (or from the module's
    own functions) lies between a BSSY and the label its BSYNC is at, or is followed by the
    thread's EXIT or a warp-wide sync ptxas counts as the reconvergence (_THEN), or calls a
    function whose body is one region closed before its return (_rejoins)."""
    try:
        from benchmarks.convergence_barriers import _tool
        from benchmarks.convergence_barriers import parse as parse_sass

        tool = _tool("nvdisasm")
    except SystemExit:
        pytest.skip("no nvdisasm here")
    seen = set()
    for label, ptx in modules:
        _, _, cubin = corpus_build.first_linked(label, ptx)
        funcs = parse_sass(_sass(tool, cubin))
        for name, f in funcs.items():
            if name.startswith("__consan_") and not name.startswith("__consan_inline"):
                continue  # (the checker's own)
            regions = _regions(f.code, f.labels)
            for i, (a, t) in enumerate(f.code):
                m = re.search(r"CALL\.\S+\s+`\((\S+?)\)", t)
                if not m or not m.group(1).startswith("__consan_"):
                    continue  # (the user's own calls as they came)
                callee = m.group(1)
                seen.add(callee)
                nxt = next((u for _, u in f.code[i + 1:] if _CONTROL.match(u)), "EXIT")
                assert any(s < a < e for s, e in regions) or nxt.startswith(_THEN) or \
                    _rejoins(funcs[callee]), \
                    f"{label}: {name} calls {callee} at {a:#x}, which may return its warp split"
    # the kernels' probes of shared accesses, barriers, cp.async, mbarriers and the module's
    # own functions among them
    assert {"__consan_access", "__consan_bar_arrive", "__consan_bar_wait", "__consan_async",
            "__consan_mbar"} <= seen and any(c.startswith("__consan_inline") for c in seen)


# The entries that call out of line from their own region: the deadlock's wind-down
# (CS_REJOINED_LEAVING), and a wgmma chain's probe, which calls the wgmma probe where the
# chain's rows do not do. With the wind-down's call after the region instead, ptxas closed
# __consan_bulk's region before it, with the call and a conditional branch on the way to
# the return.
_CALLING_ENTRIES = ("__consan_mbar", "__consan_tensor", "__consan_tensor2", "__consan_bulk",
                    "__consan_bar_arrive", "__consan_bar_wait", "__consan_cluster_bar",
                    "__consan_wgmma4")


@pytest.mark.parametrize("build", [dict(vsh=True), dict(vsh=True, chunk=True), dict(),
                                   dict(mc=True)], ids=["vsh", "vsh-chunk", "device", "mc"])
def test_an_entry_that_calls_out_of_line_is_one_region_before_its_return(build):
    try:
        from benchmarks.convergence_barriers import _tool
        from benchmarks.convergence_barriers import parse as parse_sass

        tool = _tool("nvdisasm")
    except SystemExit:
        pytest.skip("no nvdisasm here")
    obj = toolchain.checker_object(toolchain.Arch(9, 0, "a"), **build)
    funcs = parse_sass(_sass(tool, obj))
    assert set(_CALLING_ENTRIES) <= set(funcs)
    assert [n for n in _CALLING_ENTRIES if not _rejoins(funcs[n])] == []
