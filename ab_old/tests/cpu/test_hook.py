"""CPU tests of the CuPy front end (cupy_hook.py) and the session (session.py):
install/uninstall, the compile wrapper, the instrumented rebuild of a CuPy compile (NVRTC +
nvJitLink need no GPU), and the session's bookkeeping (dedup across launches, suppressions,
expectations, abort, print limit, JSON)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from rich.console import Console

from consan import cupti, cupy_build, cupy_hook, frontends, toolchain
from consan import session as consan_session
from instrument.sites import SourceLoc
from reports import suppress
from reports.session import SessionReport
from tests.cpu.test_reports import LAUNCH, header, make_sites, rec, records

cupy = pytest.importorskip("cupy")

THIS = str(Path(__file__).resolve())

# The kernels below are compiled from these strings; the tests check that reports name the
# lines of *this file*, where the strings are written.
SMEM_SRC = r"""
extern "C" __global__ void smem_shift(const int *in, int *out) {
    __shared__ int buf[128];
    int t = threadIdx.x;
    buf[t] = in[t];                       // @store
    __syncthreads();
    out[t] = buf[(t + 1) % 128];          // @load
}
"""
PLAIN_SRC = r"""
__constant__ int table[4];
__device__ unsigned counter;
extern "C" __global__ void plain_copy(const int *in, int *out) {
    int t = threadIdx.x;
    out[t] = in[t] * table[t % 4];
    atomicAdd(&counter, 1u);
}
"""
CLUSTER_SRC = r"""
extern "C" __global__ void cluster_step(int *out) {
    __shared__ int buf[64];
    buf[threadIdx.x] = threadIdx.x;
    unsigned long long st;  // an mbarrier through a generic address: not checked
    asm volatile("mbarrier.arrive.b64 %0, [%1];" : "=l"(st) : "l"(&buf[0]) : "memory");  // @arrive
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    out[threadIdx.x] = buf[63 - threadIdx.x];
}
"""
TEMPLATE_SRC = r"""
template <typename T>
__global__ void tmpl_shift(const T *in, T *out) {
    __shared__ T buf[64];
    buf[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = buf[63 - threadIdx.x];
}
"""


def line_in_this_file(marker: str) -> int:
    lines = Path(THIS).read_text().splitlines()
    hits = [i for i, t in enumerate(lines, 1)
            if t.rstrip().endswith(marker) and "line_in_this_file" not in t]
    assert len(hits) == 1, hits
    return hits[0]



# ---------------------------------------------------------------- install / uninstall


def test_install_and_uninstall_restore_cupy_exactly(clean_hook):
    import cupy._core.raw as raw
    import cupy.cuda.compiler as compiler
    from cuda.bindings import driver

    before = (compiler._compile_module_with_cache, raw._get_raw_module, driver.cuLaunchKernelEx)
    frontends.install()
    frontends.install()  # idempotent
    assert frontends.installed()
    assert compiler._compile_module_with_cache is cupy_hook._compile_wrapper
    assert raw._get_raw_module is cupy_hook._raw_module_wrapper
    assert driver.cuLaunchKernelEx is cupy_hook._launch_ex_wrapper
    frontends.uninstall()
    assert not frontends.installed()
    after = (compiler._compile_module_with_cache, raw._get_raw_module, driver.cuLaunchKernelEx)
    assert all(a is b for a, b in zip(before, after, strict=True))


def test_sanitizing_restores_the_previous_session(clean_hook):
    outer = consan_session.Session(print_findings=False)
    inner = consan_session.Session(print_findings=False)
    assert consan_session.current_session() is None
    with frontends.sanitizing(outer):
        with frontends.sanitizing(inner):
            assert consan_session.current_session() is inner
        assert consan_session.current_session() is outer
    assert consan_session.current_session() is None


def _with_fake_compiler(result):
    """Run the compile wrapper against a stand-in for CuPy's compiler (no GPU needed)."""
    frontends.install()
    owner, attr, original = cupy_hook._originals["compile"]
    calls = []

    def fake(source, options=(), **kw):
        calls.append((source, options, kw))
        return result() if callable(result) else result

    cupy_hook._originals["compile"] = (owner, attr, fake)
    return calls, lambda: cupy_hook._originals.__setitem__("compile", (owner, attr, original))


def test_compile_wrapper_returns_a_consan_module_with_the_compile_spec(clean_hook):
    from cupy.cuda.function import Module

    def native():
        m = Module()
        m._set_mapping({"tmpl_shift<int>": "_Z10tmpl_shiftIiEvPKT_PS0_"})
        return m

    calls, restore = _with_fake_compiler(native)
    try:
        mod = cupy_hook._compile_wrapper(TEMPLATE_SRC, ("-std=c++17",), arch="90",
                                    name_expressions=("tmpl_shift<int>",), backend="nvrtc")
        assert isinstance(mod, Module) and isinstance(mod, cupy_hook.ConsanModule)
        assert calls[0][0] == TEMPLATE_SRC and calls[0][2]["name_expressions"]
        assert mod._spec.options == ("-std=c++17",) and mod._spec.arch == "90"
        assert mod._spec.name_expressions == ("tmpl_shift<int>",)
        assert THIS in mod._spec.candidates  # this test called the compiler
        assert mod.mapping == {"tmpl_shift<int>": "_Z10tmpl_shiftIiEvPKT_PS0_"}
        assert mod.display_name("_Z10tmpl_shiftIiEvPKT_PS0_") == "tmpl_shift<int>"
        assert mod._reason is None and mod.ptr == 0
        for kw, words in (({"backend": "nvcc"}, "nvcc backend"), ({"jitify": True}, "jitify")):
            assert words in cupy_hook._compile_wrapper(PLAIN_SRC, (), **kw)._reason
        assert "-rdc" in cupy_hook._compile_wrapper(PLAIN_SRC, ("-rdc=true",))._reason
    finally:
        restore()


def test_compile_wrapper_passes_lto_ir_through(clean_hook):
    _, restore = _with_fake_compiler(b"LTO-IR")
    try:
        assert cupy_hook._compile_wrapper(PLAIN_SRC, (), to_ltoir=True) == b"LTO-IR"
    finally:
        restore()


# ---------------------------------------------------------------- the instrumented rebuild


def test_rebuild_names_the_python_lines_of_the_kernel_source(fresh_cache):
    spec = cupy_build.CompileSpec(source=SMEM_SRC, options=("--std=c++17",), arch="90",
                                  candidates=(THIS,))
    b, names = cupy_build.build(spec)
    assert b.arch.sm == "sm_90a" and names == []
    lines = {s.loc.line for s in b.instrumented.sites.sites
             if s.loc is not None and s.event.startswith("access")}
    files = {s.loc.file for s in b.instrumented.sites.sites if s.loc is not None}
    assert files == {THIS}
    assert {line_in_this_file("// @store"), line_in_this_file("// @load")} <= lines
    assert THIS in b.instrumented.sites.sources
    assert list((fresh_cache / "ptx").glob("*.ptx")), "the PTX is cached on disk"
    again, _ = cupy_build.build(spec)  # from the caches
    assert again.cubin == b.cubin


def test_rebuild_names_the_python_line_of_an_unchecked_instruction(fresh_cache):
    b, _ = cupy_build.build(cupy_build.CompileSpec(source=CLUSTER_SRC, arch="90",
                                                   candidates=(THIS,)))
    arrive = next(u for u in b.instrumented.unmodeled if "mbarrier" in u.text)
    assert (arrive.loc.file, arrive.loc.line) == (THIS, line_in_this_file("// @arrive"))
    assert str(arrive).startswith(f"{THIS}:{arrive.loc.line} in kernel cluster_step: "
                                  "mbarrier operation through a generic address")


def test_rebuild_instantiates_name_expressions_and_finds_globals(fresh_cache):
    b, _ = cupy_build.build(cupy_build.CompileSpec(
        source=TEMPLATE_SRC, options=("--std=c++17",), arch="90",
        name_expressions=("tmpl_shift<int>", "tmpl_shift<float>")))
    assert set(b.instrumented.kernels) == {"_Z10tmpl_shiftIiEvPKT_PS0_",
                                           "_Z10tmpl_shiftIfEvPKT_PS0_"}
    # Not found in any candidate file (built from a template): a readable stand-in name.
    assert any(f.startswith("<CuPy source of tmpl_shift") for f in b.instrumented.sites.sources)
    plain, names = cupy_build.build(cupy_build.CompileSpec(source=PLAIN_SRC, arch="90"))
    assert set(names) == {"table", "counter"}


def test_module_without_shared_memory_work_runs_natively(fresh_cache):
    from cupy.cuda.function import Module

    cls, _ = cupy_hook._classes()
    smem = cls(Module(), cupy_build.CompileSpec(source=SMEM_SRC, arch="90"), None)
    plain = cls(Module(), cupy_build.CompileSpec(source=PLAIN_SRC, arch="90"), None)
    assert smem.build(())[1] is True
    assert plain.build(())[1] is False
    broken = cls(Module(), cupy_build.CompileSpec(source="this is not CUDA;", arch="90"), None)
    with pytest.raises(consan_session.NotCheckable, match="could not instrument"):
        broken.build(())
    with pytest.raises(consan_session.NotCheckable, match="could not instrument"):
        broken.build(())  # the reason is kept


def test_the_cupy_launcher_runs_the_instrumented_function_with_the_kernels_arguments():
    from types import SimpleNamespace

    calls = []
    p = SimpleNamespace(grid=(2, 1, 1), block=(64, 1, 1), launch_shared_mem=4096,
                        function=lambda *a, **k: calls.append((a, k)))
    launcher = cupy_hook._Launcher(SimpleNamespace(global_names=[]), [1, 2])
    assert launcher.args == (1, 2)  # where the launch's tensor maps are looked for
    launcher(p)
    assert calls == [(((2, 1, 1), (64, 1, 1), (1, 2)), {"shared_mem": 4096})]


def test_find_source_exact_and_escaped():
    hit = cupy_build.find_source(SMEM_SRC, (THIS,))
    assert hit is not None and hit[0] == THIS
    assert hit[1] + 5 == line_in_this_file("// @store")  # source line 5 is that line
    # textwrap.dedent(...) of an indented string: the lines match once stripped.
    dedented = "int a = 1;\nint b = 2;\nint c = a + b;\nreturn c;\n"
    text = 'def f():\n    SRC = textwrap.dedent("""\n        int a = 1;\n        int b = 2;\n' \
           '        int c = a + b;\n        return c;\n    """)\n'
    f = Path(THIS).with_name("_find_source_probe.txt")
    try:
        f.write_text(text)
        assert cupy_build.find_source(dedented, (str(f),)) == (str(f), 2, 8)
        assert cupy_build.find_source("short", (str(f),)) is None
    finally:
        f.unlink()


def test_ptx_globals_parsing():
    ptx = """
.extern .global .align 4 .u32 elsewhere;
.visible .global .align 4 .u32 counter;
.const .align 4 .b8 table[16] = {1, 0, 0, 0};
.global .align 1 .b8 $str[6] = {104, 101, 108, 108, 111, 0};
.visible .global .align 8 .u64 __consan_state[8];
"""
    assert cupy_build.ptx_globals(ptx) == ["counter", "table"]


def test_split_arch_and_target():
    rest, arch = toolchain.split_arch(("-I/x", "-arch=sm_80", "-DX"))
    assert rest == ["-I/x", "-DX"] and arch.sm == "sm_80"
    rest, arch = toolchain.split_arch(("--gpu-architecture", "compute_90a"))
    assert rest == [] and arch.sm == "sm_90a"
    assert cupy_build.target_arch(cupy_build.CompileSpec(arch="90")).sm == "sm_90a"


def test_cupti_names_are_readable():
    assert cupti.pretty("_ZN3cub6detail12ReduceKernelIfEEvPT_") == "cub::detail::ReduceKernel<...>"
    assert cupti.pretty("_Z3fooPi") == "foo"
    assert cupti.pretty("volta_sgemm_128x64_nn") == "volta_sgemm_128x64_nn"


# ---------------------------------------------------------------- session bookkeeping


class FakeFunction:
    def __init__(self, name="k"):
        self.kernel = name
        self.display_name = name


class FakePrepared:
    grid, block, shared_mem, shadow_bytes = (4, 1, 1), (256, 1, 1), 0, 123456


def race_report(occurrences=2):
    from reports import Report

    recs = records(rec("race.raw", 1, 0, warp=2, prev_warp=1, lo=0x100, hi=0x140),
                   rec("race.raw", 1, 0, warp=3, prev_warp=1, lo=0x140, hi=0x180))
    return Report.from_log(header(stored=2, occurrences=occurrences), recs, None,
                           make_sites(), "k", LAUNCH)


def clean_report():
    from reports import Report

    return Report.from_log(header(stored=0), records(), None, make_sites(), "k", LAUNCH)


def session(**opts) -> tuple[consan_session.Session, io.StringIO]:
    buf = io.StringIO()
    console = Console(file=buf, width=100, color_system=None, force_terminal=False)
    return consan_session.Session(consan_session.Options(**opts), console=console), buf


def test_findings_are_deduplicated_across_launches_and_printed_once():
    s, out = session()
    where = {"file": "prog.py", "line": 12}
    s._record(FakeFunction(), FakePrepared(), race_report(), where, None)
    s._record(FakeFunction(), FakePrepared(), race_report(), where, None)
    s._record(FakeFunction(), FakePrepared(), clean_report(), where, None)
    rep = s.report
    assert len(rep.findings) == 1 and not rep.ok
    f = rep.findings[0]
    assert f.launches == 2 and f.finding.occurrences == 4 and f.kernel == "k"
    assert f.launched_from == where and f.launch["grid"] == [4, 1, 1]
    k = rep.kernels["k"]
    assert k.launches_checked == 3 and k.findings == {"race.raw": 1}
    assert k.shadow_bytes == 123456
    text = out.getvalue()
    assert text.count("read-after-write race") == 1
    assert "consan: kernel k, launch #1 (grid=(4,1,1), block=(256,1,1)), launched from " \
           "prog.py:12" in text
    assert "k.cu:5:15" in text and s.kept_text and "k.cu:5:15" in s.kept_text[0]


def test_suppressed_findings_are_counted_not_failed():
    s, out = session(suppressions=suppress.parse("race.raw k.cu:5\nuninit.read *", "acc.txt"))
    s._record(FakeFunction(), FakePrepared(), race_report(), None, None)
    s.stop()
    rep = s.report
    assert rep.ok and len(rep.suppressed_findings) == 1
    assert rep.findings[0].suppressed_by.startswith("acc.txt:1")
    assert rep.kernels["k"].suppressed == 1 and out.getvalue() == ""
    assert rep.suppressions == {"file": "acc.txt", "unused": ["acc.txt:2: uninit.read *"]}
    assert "1 suppressed" in rep.summary_line()


def test_expected_findings_do_not_fail_and_count_hits():
    s, _ = session()
    exp = consan_session.Expectation("race.*", suppress.parse_location("k.cu:5"))
    miss = consan_session.Expectation("race.war")
    s.expectations += [miss, exp]
    s._record(FakeFunction(), FakePrepared(), race_report(), None, None)
    assert s.report.ok and exp.hits == 1 and miss.hits == 0
    assert s.report.findings[0].expected == "'race.*', where='k.cu:5'"


def test_a_finding_again_is_judged_by_the_block_it_is_found_in():
    """The same race: expected in a block, then found outside any block, counts against
    the program (it was merged into the expected entry and passed unseen); expected in two
    blocks, each sees it; found first outside, then in a block, the block sees it."""
    s, _ = session()
    with s.expecting(consan_session.Expectation.of("race.raw")):
        s._record(FakeFunction(), FakePrepared(), race_report(), None, None)
    assert s.report.ok
    s._record(FakeFunction(), FakePrepared(), race_report(), None, None)
    assert not s.report.ok and len(s.report.active_findings) == 1
    assert [f.expected is not None for f in s.report.findings] == [True, False]
    for _ in range(2):  # (each block asserts its own hit at its end)
        with s.expecting(consan_session.Expectation.of("race.raw")) as exp:
            s._record(FakeFunction(), FakePrepared(), race_report(), None, None)
        assert exp.hits == 1
    assert len(s.report.findings) == 2 and s.report.findings[0].launches == 3


def test_abort_raises_at_the_first_finding():
    s, _ = session(on_violation="abort")
    s._record(FakeFunction(), FakePrepared(), clean_report(), None, None)
    with pytest.raises(consan_session.ConsanAbort):
        s._record(FakeFunction(), FakePrepared(), race_report(), None, None)
    assert s.report.aborted


def test_print_limit_and_quiet():
    s, out = session(print_limit=0)
    s._record(FakeFunction(), FakePrepared(), race_report(), None, None)
    assert out.getvalue() == "" and not s.report.ok


def test_unattributed_violations_fail_the_session():
    s, _ = session()
    from reports import Report

    rep = Report.from_log(header(stored=0, occurrences=5), records(), None, make_sites(), "k",
                          LAUNCH)
    s._record(FakeFunction(), FakePrepared(), rep, None, None)
    assert not s.report.ok and s.report.unattributed == 5


def test_kernel_selection_options():
    s, _ = session(kernel_name="^blk", kernel_name_exclude="_slow$", launch_skip=1,
                   launch_count=2)
    assert s._selected(FakeFunction("other")) == "--kernel-name"
    assert s._selected(FakeFunction("blk_slow")) == "--kernel-name-exclude"
    assert s._selected(FakeFunction("blk")) == "--launch-skip"
    assert s._selected(FakeFunction("blk")) is None
    s._checked = 2
    assert s._selected(FakeFunction("blk")) == "--launch-count"


def test_session_report_json_round_trip():
    s, _ = session(suppressions=suppress.parse("race.war *", "acc.txt"))
    s._record(FakeFunction(), FakePrepared(), race_report(), {"file": "p.py", "line": 3}, None)
    s.report.add_not_checked("volta_sgemm", "precompiled", 3)
    s.report.add_not_checked("volta_sgemm", "precompiled", 2)
    s.report.skipped["--kernel-name"] = 4
    s.report.program = {"argv": ["p.py", "-x"], "cwd": "/work", "exit_status": 0}
    s.stop()
    text = s.report.to_json()
    back = SessionReport.from_json(text)
    assert back.to_json() == text
    assert back.summary_line() == s.report.summary_line()
    assert back.not_checked == [{"kernel": "volta_sgemm", "reason": "precompiled",
                                 "launches": 5}]
    d = json.loads(text)
    assert d["ok"] is False and d["findings"][0]["kind"] == "race.raw"
    with pytest.raises(ValueError, match="not a consan session report"):
        SessionReport.from_dict({"tool": "consan"})


GOLDEN = Path(__file__).resolve().parents[1] / "data"


def two_findings_one_suppressed() -> SessionReport:
    """Two launches of one kernel with a race.raw and a race.waw (suppressed), fixed paths."""
    from reports import Report

    recs = records(rec("race.raw", 1, 0, warp=2, prev_warp=1, lo=0x100, hi=0x140),
                   rec("race.waw", 3, 0, warp=5, prev_warp=4, lo=0x40, hi=0x48, cta=(1, 0, 0)))
    s, _ = session(suppressions=suppress.parse("race.waw k.cu:7\nuninit.read *", "acc.txt"))
    s.report.version = "0.0-test"
    where = {"file": "/proj/prog.py", "line": 12}
    for occurrences in (3, 5):
        rep = Report.from_log(header(stored=2, occurrences=occurrences), recs, None,
                              make_sites(), "k", LAUNCH)
        s._record(FakeFunction(), FakePrepared(), rep, where, None)
    s.report.add_not_checked("volta_sgemm", "precompiled", 2)
    s.report.program = {"argv": ["prog.py"], "cwd": "/proj", "exit_status": 0}
    s.stop()
    return s.report


def test_session_json_and_sarif_of_two_findings_one_suppressed_are_pinned():
    from reports.sarif import to_sarif_json

    rep = two_findings_one_suppressed()
    assert rep.to_json() == (GOLDEN / "session_two_findings.json").read_text()
    assert to_sarif_json(rep) == (GOLDEN / "session_two_findings.sarif").read_text()
    assert SessionReport.from_json(rep.to_json()).to_json() == rep.to_json()


def test_summary_lists_kernels_unchecked_and_verdict():
    s, _ = session()
    s._record(FakeFunction(), FakePrepared(), race_report(), None, None)
    s.report.add_not_checked("volta_sgemm", consan_session.NOT_INTERCEPTED)
    s.report.other_launches = None
    buf = io.StringIO()
    s.report.render_summary(Console(file=buf, width=200, color_system=None))
    text = buf.getvalue()
    assert "launches checked" in text and "1 race.raw" in text and "120.6 KiB" in text
    assert "volta_sgemm" in text and "not checked: 1 launch of 1 kernel(s)" in text
    assert "consan: 1 finding (1 race.raw); 1 launch of 1 kernel checked (1 launch not " \
           "checked)" in text


def test_each_kernel_lists_only_its_own_unchecked_instructions_with_source_lines():
    from instrument.rewrite import Unmodeled

    def unmodeled(kernel: str, line: int) -> Unmodeled:
        return Unmodeled(200 + line, 1, kernel, "barrier.cluster.wait.acquire.aligned;",
                         "cluster barrier (barrier.cluster.arrive/wait): not checked yet",
                         loc=SourceLoc("k.cu", line, 3))

    s, _ = session()
    rep = clean_report()
    rep.unmodeled = [unmodeled("k", 6), unmodeled("other", 9), unmodeled("k", 6)]
    s._record(FakeFunction(), FakePrepared(), rep, None, None)
    assert s.report.kernels["k"].unmodeled == [
        "k.cu:6 in kernel k: cluster barrier (barrier.cluster.arrive/wait): not checked yet "
        "[barrier.cluster.wait.acquire.aligned;]"]
    buf = io.StringIO()
    s.report.render_summary(Console(file=buf, width=40, color_system=None))
    lines = buf.getvalue().splitlines()
    assert "  " + s.report.kernels["k"].unmodeled[0] in lines  # one line, however narrow
    assert not any("other" in ln for ln in lines)


def test_importing_consan_does_not_import_cupy():
    import subprocess

    code = "import consan, consan.frontends, consan.run, consan.pytest_plugin, sys; " \
           "print('cupy' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[2])
    assert r.stdout.strip() == "False", r.stderr


def test_expect_on_its_own_judges_its_whole_block_and_takes_its_hooks_away(monkeypatch):
    """Outside any session, consan.expect sanitizes the block itself: a finding it did not
    expect fails the block (it was kept in a report nobody read), and the front ends it
    installed are gone afterwards (they stayed, and later code ran instrumented)."""
    import consan
    from consan import runtime
    from reports import Report

    monkeypatch.setattr(runtime, "gpu_available", lambda: True)
    frontends.uninstall()
    war = Report.from_log(header(stored=1, occurrences=1),
                          records(rec("race.war", 1, 0, warp=2, prev_warp=1, lo=0x100,
                                      hi=0x140)), None, make_sites(), "k", LAUNCH)
    with pytest.raises(AssertionError, match="also had what it did not expect"):
        with consan.expect("race.raw"):
            s = consan_session.current_session()
            s._record(FakeFunction("racy"), FakePrepared(), race_report(), None, None)
            s._record(FakeFunction("other"), FakePrepared(), war, None, None)
    assert not frontends.installed() and consan_session.current_session() is None
    with consan.expect("race.raw"):  # only what it expects: passes
        consan_session.current_session()._record(FakeFunction("racy"), FakePrepared(),
                                                 race_report(), None, None)
    assert not frontends.installed()


def test_a_raw_stream_handle_is_asked_whether_it_is_capturing(monkeypatch):
    """Triton launches on PyTorch's stream, a raw handle: it was CuPy's current stream that
    was asked, so a launch being captured into a graph went ahead instrumented."""
    import cupy

    capturing = {0xBEEF: 1}
    monkeypatch.setattr(cupy.cuda.runtime, "streamIsCapturing",
                        lambda ptr: capturing.get(ptr, 0))
    monkeypatch.setattr(cupy.cuda, "get_current_stream",
                        lambda: type("S", (), {"is_capturing": lambda self: False})())
    assert consan_session.capturing(consan_session.ExStream(0xBEEF))
    assert not consan_session.capturing(consan_session.ExStream(0x1))


def test_each_device_gets_its_own_prepared_launch(monkeypatch):
    """A Triton build is keyed by its PTX and serves every GPU; the module and tables a
    Prepared loads are the current device's: a launch on device 1 reused device 0's."""
    from consan import runtime

    dev = [0]
    monkeypatch.setattr(runtime, "current_device", lambda: dev[0])
    monkeypatch.setattr(runtime, "Prepared",
                        lambda b, k, g, bl, sm: type("P", (), {"device": dev[0]})())
    s, _ = session()
    build = object()
    got = []
    for d in (0, 1, 0):
        dev[0] = d
        got.append(s._prepare(FakeFunction(), build, (4, 1, 1), (128, 1, 1), 0))
    assert [p.device for p in got] == [0, 1, 0] and got[0] is got[2] and got[0] is not got[1]
