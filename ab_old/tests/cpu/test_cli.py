"""CPU tests of `consan instrument` / `consan check`: messages in the user's terms, inputs and
options checked before any work, one line per entry when piped, and the README's synopsis.

No GPU is needed: `check` is only driven up to the point where it would need one (and a test
makes sure nothing is compiled or launched before the command line is known to be good).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from consan import cli
from instrument import lineinfo
from instrument.events import TABLE, Event, classify
from instrument.ptx import parse
from instrument.rewrite import Unmodeled, instrument
from instrument.sites import SourceLoc

ROOT = Path(__file__).resolve().parents[2]

# A kernel with line info (NVRTC's layout: `.file` after the code) whose mbarrier operations
# through generic addresses consan does not model, and a second kernel without line info.
CLUSTER_PTX = """\
.version 8.0
.target sm_90a
.address_size 64

.visible .entry _Z7clusterPf(
\t.param .u64 _Z7clusterPf_param_0
)
{
\t.reg .b32 \t%r<4>;
\t.reg .f32 \t%f<2>;
\t.reg .b64 \t%rd<3>;
\t.shared .align 4 .b8 smem[512];
\t.loc\t1 5 3
\tmov.u32 \t%r1, %tid.x;
\tshl.b32 \t%r2, %r1, 2;
\tmov.u32 \t%r3, smem;
\tadd.s32 \t%r3, %r3, %r2;
\tst.shared.u32 \t[%r3], %r1;
\t.loc\t1 6 3
\tmbarrier.arrive.b64 \t%rd1, [%rd2];
\tmbarrier.inval.b64 \t[%rd2];
\t.loc\t1 7 3
\tld.shared.f32 \t%f1, [%r3];
\tret;
}

.visible .entry other(
\t.param .u64 other_param_0
)
{
\t.reg .b64 \t%rd<3>;
\tmbarrier.arrive.b64 \t%rd1, [%rd2];
\tret;
}
\t.file\t1 "/build/dir/clus.cu"
"""
OTHER_BARRIER_LINE = 32  # the `mbarrier.arrive` of `other`, which has no line info


def main(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def write(tmp_path: Path, name: str, text: str | bytes) -> str:
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(p)


# ---------------------------------------------------------------- A: the user's lines


def test_unmodeled_names_source_line_and_kernel_not_ptx_line():
    ins = instrument(parse(CLUSTER_PTX, "clus.ptx"))
    by_kernel = {}
    for u in ins.unmodeled:
        by_kernel.setdefault(u.kernel, []).append(u)
    arrive, wait = by_kernel["_Z7clusterPf"]
    assert arrive.loc == SourceLoc("/build/dir/clus.cu", 6, 3) and arrive.entry
    assert str(arrive).startswith("/build/dir/clus.cu:6 in kernel cluster: mbarrier operation "
                                  "through a generic address: not checked yet")
    assert "line 19" not in str(arrive) and "PTX line" not in str(arrive)
    assert str(wait).endswith("[mbarrier.inval.b64 \t[%rd2];]")
    (bare,) = by_kernel["other"]
    assert bare.loc is None
    assert str(bare).startswith(f"PTX line {OTHER_BARRIER_LINE} in kernel other: ")


def test_unmodeled_of_an_inlined_helper_names_the_call_and_a_device_function():
    u = Unmodeled(12, 1, "_Z4helpv", "barrier.cluster.wait;", "why",
                  loc=SourceLoc("k.cu", 19, 5), inlined_at=(SourceLoc("k.cu", 40, 3),
                                                            SourceLoc("k.cu", 71, 3)),
                  entry=False)
    assert str(u) == "k.cu:19 (inlined at k.cu:71) in function help: why [barrier.cluster.wait;]"


UNMODELED_FORMS = [
    "ld.shared::cluster.u32 %r1, [%r2];",
    "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%r1], [%r2], 16, "
    "[%r3];",
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
    "[%r1], [%rd1], 16, [%r3], %rs1;",
    "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
    ".multicast::cluster [%r1], [%rd1, {%r2, %r3}], [%r4], %rs1;",
    "cp.async.bulk.tensor.2d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes "
    "[%r1], [%rd1, {%r2, %r3}], [%r4], {%rs1};",
    "mbarrier.arrive.b64 %rd1, [%rd2];",
    "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;",
    "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 "
    "[%r1], [%r2];",
    "wgmma.wait_group.sync.aligned;",
    "cp.async.bulk.wait_group;",
    "cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.add.u32 "
    "[%r1], [%r2], 16, [%r3];",
]


@pytest.mark.parametrize("instr", UNMODELED_FORMS)
def test_not_modelled_reasons_speak_of_the_users_code(instr, monkeypatch):
    monkeypatch.setenv("CONSAN_MULTICAST", "0")  # (multicast copies: modelled otherwise)
    mod = parse(f".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n"
                f"{{\n\t{instr}\n\tret;\n}}\n", "k.ptx")
    it = next(i for i in mod.functions[0].body if i.is_instruction)
    c = classify(it)
    assert c is not None and c.event is Event.UNMODELED and c.reason
    assert "not checked" in c.reason, c.reason
    assert not re.search(r"\bissue\b|\(not modelled\)", c.reason), c.reason


def test_table_notes_have_no_tracker_words():
    notes = [row.note for row in TABLE if row.event is Event.UNMODELED]
    assert notes and all("not checked" in n and not re.search(r"\bissue\b", n) for n in notes)


NVRTC_PTX = """\
.version 9.0
.target sm_90a
.address_size 64

.extern .func __consan_probe(.param .b32 a);

.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.loc\t1 1 0
\tld.param.u64 \t%rd1, [k_param_0];
\t.loc\t1 6 5
\tadd.s32 \t%r2, %r99, 1;
\t.loc\t1 0 0
\tmov.u32 \t%r3, 0;
}

.visible .func  (.param .b32 func_retval0) _Z4helpi(
\t.param .b32 _Z4helpi_param_0
)
{
\tmov.u32 \t%r1, 0;
\t.loc\t1 12 2
\tmov.u32 \t%r1, 1;
}
\t.file\t1 "/tmp/src/k.cu"
"""


def test_a_ptx_line_maps_to_the_nearest_loc_of_its_function():
    lines = NVRTC_PTX.splitlines()
    at = lines.index("\tadd.s32 \t%r2, %r99, 1;") + 1
    p = lineinfo.place(NVRTC_PTX, at)
    assert (p.loc, p.function, p.entry) == (SourceLoc("/tmp/src/k.cu", 6, 5), "k", True)
    assert lineinfo.place(NVRTC_PTX, at + 2).loc is None  # `.loc 1 0 0`: no location
    first = lines.index("\tmov.u32 \t%r1, 0;") + 1  # before the .func's first .loc
    p = lineinfo.place(NVRTC_PTX, first)
    assert p.loc is None and p.function_text == "function help"  # not the kernel's line
    p = lineinfo.place(NVRTC_PTX, first + 2)
    assert p.loc == SourceLoc("/tmp/src/k.cu", 12, 2)
    assert lineinfo.place(NVRTC_PTX, 5).function is None  # a prototype: module scope
    assert lineinfo.describe_line(NVRTC_PTX, at) == "/tmp/src/k.cu:6 in kernel k"


def test_without_line_info_the_users_own_ptx_line_is_named():
    original = "a;\n\tadd.s32 %r2, %r99, 1;\nb;\n\tadd.s32 %r2, %r99, 1;\n"
    rewritten = ("a;\ncall probe;\n\tadd.s32 %r2, %r99, 1;\ncall probe;\nb;\ncall probe;\n"
                 "\tadd.s32 %r2, %r99, 1;\n")
    assert lineinfo.original_line(original, rewritten, 3) == 2
    assert lineinfo.original_line(original, rewritten, 7) == 4  # the second copy
    assert lineinfo.original_line(original, rewritten, 2) is None  # consan's own line
    assert lineinfo.describe_line(rewritten, 7, original, "k.ptx") == "PTX line 4 of k.ptx"


def test_ptxas_log_lines_name_the_users_file_and_leave_the_checkers_alone():
    lines = NVRTC_PTX.splitlines()
    at = lines.index("\tadd.s32 \t%r2, %r99, 1;") + 1
    log = (f"ptxas application ptx input, line {at}; error   : Unknown symbol '%r99'\n"
           "ptxas fatal   : Ptx assembly aborted due to errors\n"
           "ERROR NVJITLINK_ERROR_PTX_COMPILE: JIT the PTX (k.ptx)\n"
           "ptxas application ptx input, line 3; error   : in the checker\n"
           "ERROR NVJITLINK_ERROR_PTX_COMPILE: JIT the PTX (consan_checker.ptx)\n")
    out = lineinfo.explain_ptxas_log(log, NVRTC_PTX, skip=("consan_checker.ptx",))
    first, *_, checker, _ = out.splitlines()
    assert first == "/tmp/src/k.cu:6 in kernel k: error: Unknown symbol '%r99'"
    assert checker == "ptxas application ptx input, line 3; error   : in the checker"


def _bad_ptx(with_loc: bool) -> str:
    text = CLUSTER_PTX.replace("\tadd.s32 \t%r3, %r3, %r2;", "\tadd.s32 \t%r3, %r99, %r2;")
    return text if with_loc else "\n".join(ln for ln in text.splitlines() if ".loc" not in ln)


@pytest.mark.parametrize("with_loc", [True, False])
def test_link_error_names_the_users_line_not_the_instrumented_ptx(tmp_path, capsys, with_loc):
    bad = write(tmp_path, "bad.ptx", _bad_ptx(with_loc))
    status, _, err = main(capsys, "instrument", bad)
    assert status == 2 and "Traceback" not in err
    assert "nvJitLink could not assemble" in err and "ptx input, line" not in err
    if with_loc:
        assert "/build/dir/clus.cu:5 in kernel cluster: error: Unknown symbol '%r99'" in err
    else:
        line = _bad_ptx(False).splitlines().index("\tadd.s32 \t%r3, %r99, %r2;") + 1
        assert f"PTX line {line} of bad.ptx in kernel cluster: error:" in err


def test_instrument_lists_what_is_not_checked_in_source_terms(tmp_path, capsys):
    ptx = write(tmp_path, "clus.ptx", CLUSTER_PTX)
    status, out, _ = main(capsys, "instrument", ptx)
    assert status == 0
    assert "3 instruction(s) that touch shared memory or synchronise are not checked" in out
    assert "/build/dir/clus.cu:6 in kernel cluster: mbarrier operation" in out
    assert f"PTX line {OTHER_BARRIER_LINE} in kernel other:" in out
    assert "issue" not in out


def test_piped_output_keeps_each_entry_on_one_line(tmp_path):
    ptx = write(tmp_path, "clus.ptx", CLUSTER_PTX)
    env = {**os.environ, "COLUMNS": "40",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run([sys.executable, "-m", "consan", "instrument", ptx], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    entries = [ln for ln in r.stdout.splitlines() if "through a generic address" in ln]
    assert len(entries) == 3
    for ln in entries:
        assert re.match(r"^  (/build/dir/clus\.cu:6|PTX line \d+) in kernel \w+: mbarrier "
                        r"operation through a generic address: not checked yet.* "
                        r"\[mbarrier\.\w+\.b64 .*\]$", ln), ln
    assert "probed sites; assembled with nvJitLink for sm_90a" in r.stdout
    r = subprocess.run([sys.executable, "-m", "consan", "instrument", ptx, "--kernel",
                        "nope" * 30], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr


# ---------------------------------------------------------------- B: command-line edges


def test_kernel_accepts_the_cpp_name_and_filters_sites_and_the_not_checked_list(tmp_path,
                                                                               capsys):
    ptx = write(tmp_path, "clus.ptx", CLUSTER_PTX)
    status, out, _ = main(capsys, "instrument", ptx, "--kernel", "cluster")
    assert status == 0
    assert "3 probed sites in kernel cluster" in out
    assert "2 instruction(s)" in out and "kernel other" not in out
    status, mangled, _ = main(capsys, "instrument", ptx, "--kernel", "_Z7clusterPf")
    assert status == 0 and "3 probed sites in kernel cluster" in mangled
    status, out, _ = main(capsys, "instrument", ptx, "--kernel", "other")
    assert status == 0 and "1 probed sites in kernel other" in out and "1 instruction(s)" in out


def test_kernel_that_matches_nothing_is_a_usage_error(tmp_path, capsys):
    ptx = write(tmp_path, "clus.ptx", CLUSTER_PTX)
    status, out, err = main(capsys, "instrument", ptx, "--kernel", "scale")
    assert status == 2 and out == ""
    assert err.strip() == (f"consan: --kernel 'scale' matches no kernel in {ptx}; its kernels "
                           "are: cluster (_Z7clusterPf), other")


@pytest.mark.parametrize("where", ["missing_folder", "folder"])
def test_output_that_cannot_be_written_is_one_sentence(tmp_path, capsys, where):
    ptx = write(tmp_path, "clus.ptx", CLUSTER_PTX)
    out_path = str(tmp_path / "no" / "x.ptx") if where == "missing_folder" else str(tmp_path)
    status, _, err = main(capsys, "instrument", ptx, "-o", out_path)
    assert status == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and out_path in err
    assert ("does not exist" if where == "missing_folder" else "is a folder") in err


def test_output_is_written(tmp_path, capsys):
    ptx = write(tmp_path, "clus.ptx", CLUSTER_PTX)
    out_path = tmp_path / "x.ptx"
    status, out, _ = main(capsys, "instrument", ptx, "-o", str(out_path))
    assert status == 0 and f"written to {out_path}" in out
    assert "__consan" in out_path.read_text()


@pytest.mark.parametrize("content, words", [
    (b"", "is empty"),
    (b"  \n\t\n", "is empty"),
    (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "is a compiled binary (ELF"),
    (b"abc\x00def", "is a binary file"),
    (b"__global__ void k() { }\xff\xfe", "is not a UTF-8 text file"),
    (None, "is a folder"),
    ("missing", "no such file"),
])
@pytest.mark.parametrize("command", ["instrument", "check"])
def test_bad_input_files_are_named_with_what_is_wrong(tmp_path, capsys, monkeypatch, content,
                                                      words, command):
    monkeypatch.setattr("consan.gpu_available", _no_gpu_work)
    if content is None:
        path = tmp_path / "k.cu"
        path.mkdir()
    elif content == "missing":
        path = tmp_path / "k.cu"
    else:
        path = Path(write(tmp_path, "k.cu", content))
    extra = ["--kernel", "k"] if command == "check" else []
    status, out, err = main(capsys, command, str(path), *extra)
    assert status == 2 and out == "" and "Traceback" not in err
    assert err.startswith(f"consan: {path}") and words in err
    assert len(err.strip().splitlines()) == 1


def test_cuda_file_without_a_kernel_says_so(tmp_path, capsys):
    cu = write(tmp_path, "k.cu", "__device__ int twice(int x) { return 2 * x; }\n")
    status, _, err = main(capsys, "instrument", cu)
    assert status == 2
    assert err.startswith(f"consan: {cu} defines no kernel to instrument: NVRTC compiled it")
    assert "malformed PTX" not in err


def _no_gpu_work(*_a, **_k):
    raise AssertionError("the command line must be checked before any GPU or compile work")


@pytest.fixture
def no_work(monkeypatch):
    """Any GPU query or compilation fails the test: checks come first."""
    import consan
    from consan import runtime, toolchain

    monkeypatch.setattr(consan, "gpu_available", _no_gpu_work)
    monkeypatch.setattr(consan, "check", _no_gpu_work)
    monkeypatch.setattr(runtime, "check", _no_gpu_work)
    monkeypatch.setattr(toolchain, "compile_cuda", _no_gpu_work)


@pytest.mark.parametrize("opts, words", [
    (["--grid", "128x1"], "bad --grid '128x1': use N or X,Y,Z"),
    (["--block", "128x1"], "bad --block '128x1': use N or X,Y,Z"),
    (["--block", "16,16"], "bad --block '16,16': use N or X,Y,Z"),
    (["--block", "0"], "bad --block '0'"),
    (["--grid", "-4"], "bad --grid '-4'"),
    (["--block", "2048"], "x is 2048, CUDA allows at most 1024"),
    (["--block", "32,32,2"], "2048 threads, a block has at most 1024"),
    (["--grid", "1,70000,1"], "y is 70000, CUDA allows at most 65535"),
    (["--arg", "i32=xyz"], "bad --arg 'i32=xyz': i32 needs an integer, not 'xyz'"),
    (["--arg", "u8=300"], "bad --arg 'u8=300': 300 is out of range for u8 (0 to 255)"),
    (["--arg", "i8=-129"], "out of range for i8 (-128 to 127)"),
    (["--arg", "i32=1.5"], "i32 needs an integer"),
    (["--arg", "f32=abc"], "'abc' is not a number"),
    (["--arg", "f16=1e6"], "out of range for f16"),
    (["--arg", "f32[0]"], "a buffer needs at least 1 element"),
    (["--arg", "i32"], "a scalar needs a value"),
    (["--arg", "q7=1"], "TYPE is one of"),
    (["--shared-mem", "-5"], "bad --shared-mem -5"),
    (["--arch", "sm_xx"], "not a GPU architecture"),
    (["--json", "{tmp}/no/such/r.json"], "the folder {tmp}/no/such does not exist"),
    (["--json", "{tmp}"], "--json {tmp} is a folder"),
])
def test_check_rejects_bad_options_before_any_work(tmp_path, capsys, no_work, opts, words):
    cu = write(tmp_path, "k.cu", "extern \"C\" __global__ void k(int *p) { p[0] = 1; }\n")
    opts = [o.replace("{tmp}", str(tmp_path)) for o in opts]
    status, out, err = main(capsys, "check", cu, "--kernel", "k", *opts)
    assert status == 2 and out == "" and "Traceback" not in err
    assert words.replace("{tmp}", str(tmp_path)) in err
    assert len(err.strip().splitlines()) == 1


def test_check_accepts_good_options_then_needs_the_gpu(tmp_path, capsys, monkeypatch):
    import consan

    monkeypatch.setattr(consan, "gpu_available", lambda: False)
    cu = write(tmp_path, "k.cu", "extern \"C\" __global__ void k(int *p) { p[0] = 1; }\n")
    status, _, err = main(capsys, "check", cu, "--kernel", "k", "--grid", "4,2,1", "--block",
                          "128", "--arg", "u8[16]=255", "--arg", "i64=-0x10", "--arg",
                          "f16=1.5", "--shared-mem", "0", "--json", str(tmp_path / "r.json"))
    assert status == 2 and "needs a CUDA GPU" in err
    assert not (tmp_path / "r.json").exists()


def test_check_link_error_names_the_users_line(tmp_path, capsys, monkeypatch):
    import consan

    bad = _bad_ptx(True)
    path = write(tmp_path, "bad.ptx", bad)
    ins = instrument(parse(bad, "bad.ptx"))
    at = next(i for i, ln in enumerate(ins.ptx.splitlines(), 1) if "%r99" in ln)

    # (the real build, which needs no GPU for a given --arch, fails before the launch)
    from consan import runtime

    monkeypatch.setattr(consan, "gpu_available", lambda: True)
    monkeypatch.setattr(runtime, "_require_gpu", lambda: None)
    status, _, err = main(capsys, "check", path, "--kernel", "cluster", "--arch", "sm_90a")
    assert status == 2 and "Traceback" not in err
    assert "/build/dir/clus.cu:5 in kernel cluster: error: Unknown symbol '%r99'" in err
    assert f"line {at}" not in err


def test_check_launch_failure_is_one_sentence(tmp_path, capsys, monkeypatch):
    import consan

    class CUDADriverError(RuntimeError):
        pass

    CUDADriverError.__module__ = "cupy_backends.cuda.api.driver"

    def launch_fails(*_a, **_k):
        raise CUDADriverError("CUDA_ERROR_INVALID_VALUE: invalid argument")

    monkeypatch.setattr(consan, "gpu_available", lambda: True)
    monkeypatch.setattr(consan, "check", launch_fails)
    path = write(tmp_path, "clus.ptx", CLUSTER_PTX)
    status, _, err = main(capsys, "check", path, "--kernel", "cluster", "--block", "128")
    assert status == 2 and "Traceback" not in err
    assert err.strip() == (f"consan: the launch of cluster in {path} (grid 1, block 128, shared "
                           "memory 0) failed: CUDA_ERROR_INVALID_VALUE: invalid argument; check "
                           "that the launch shape and the --arg list suit the kernel")


def test_arg_specs_parse_without_allocating():
    import numpy as np

    assert cli.parse_dims("7", "--grid") == (7,)
    assert cli.parse_dims("4,2,1", "--grid") == (4, 2, 1)
    spec = cli.parse_arg_spec("u8=255")
    assert (spec.dtype, spec.n, spec.value) == (np.dtype(np.uint8), None, 255)
    value = spec.make()
    assert isinstance(value, np.uint8) and value == 255
    spec = cli.parse_arg_spec("f32[1024]=0.5")
    assert (spec.dtype, spec.n, spec.value) == (np.dtype(np.float32), 1024, 0.5)
    assert cli.parse_arg_spec("i32=0x10").value == 16


def _check_parser() -> argparse.ArgumentParser:
    sub = next(a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["check"]


@pytest.mark.parametrize("command", ["check", "instrument"])
def test_every_option_has_help(command):
    sub = next(a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = [a.option_strings or a.dest for a in sub.choices[command]._actions if not a.help]
    assert not missing


# ---------------------------------------------------------------- D: README


README = (ROOT / "README.md").read_text()


def test_readme_lists_every_tutorial():
    for script in sorted((ROOT / "tutorials").glob("[0-9]*.py")):
        assert re.search(rf"^\| `tutorials/{re.escape(script.name)}` \|", README, re.M), script


def test_readme_shows_the_example():
    assert "consan instrument examples/reduce_race.cu" in README
    assert "consan check examples/reduce_race.cu --kernel block_sum" in README


def test_readme_check_synopsis_matches_check_help():
    synopsis = re.search(r"^consan check FILE.*?(?=^consan instrument)", README, re.M | re.S)
    assert synopsis, "no consan check synopsis in the README"
    text = synopsis.group(0)
    for action in _check_parser()._actions:
        for opt in action.option_strings:
            if opt not in ("-h", "--help"):
                assert re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", text), opt
            if action.metavar and action.option_strings and opt.startswith("--"):
                assert f"{opt} {action.metavar}" in text, (opt, action.metavar)


def test_readme_keeps_the_fresh_machine_commands():
    assert ("python3 -m venv .venv && . .venv/bin/activate && pip install -e . && consan run "
            "tutorials/00_splitk_epilogue.py") in README
    tests = ("python3 -m venv .venv && . .venv/bin/activate && pip install -q -e '.[test]' && "
             "python -m pytest -q -n auto --dist loadgroup")
    assert tests in README
    assert tests in (Path(__file__).parents[2] / ".ci" / "run").read_text()  # (exactly it)


def test_instrument_names_the_loops_and_accesses_it_checks_with_less_work(tmp_path, capsys):
    """sgemm's K loop (checked on its first trip) and histogram's atomics (an inline test)."""
    from tests.kernels import gpu_kernels as K

    src = write(tmp_path, "k.cu", K.CLEAN["sgemm_tiled"] + K.CLEAN["histogram256"])
    status, out, _ = main(capsys, "instrument", src, "--arch", "sm_90a")
    assert status == 0
    first_line = K.CLEAN["sgemm_tiled"].splitlines().index(
        next(x for x in K.CLEAN["sgemm_tiled"].splitlines() if "As[ac][ar] =" in x)) + 1
    assert f"loop at {src}:{first_line}-" in out
    assert "checked on its first trip" in out
    assert "1 access(es) in loops skip the checker" in out
    # histogram's zeroing of its bins (sgemm's tile stores are in the loop checked once)
    assert "1 shared store(s) and 1 load(s) record themselves without a call" in out


def test_instrument_names_the_16_byte_loads_it_settles_inline(tmp_path, capsys):
    """The cp.async + ldmatrix GEMM: its ldmatrix reads (instrument/vc_reads.py) and its
    copies' calls (vc_writes.py: each a run of two copies or one)."""
    from tests.kernels import mma_gemm

    src = write(tmp_path, "k.cu", mma_gemm.SOURCE)
    status, out, _ = main(capsys, "instrument", src, "--arch", "sm_90a")
    assert status == 0
    assert "4 16-byte load(s) record and judge themselves without a call" in out
    assert "8 cp.async call(s) of 16-byte copies record and judge their copies without a " \
        "call" in " ".join(out.split())


@pytest.mark.parametrize("text,sm", [("sm_90a", "sm_90a"), ("sm_100a", "sm_100a"),
                                     ("compute_120", "sm_120"), ("sm_103f", "sm_103f"),
                                     ("sm_80", "sm_80")])
def test_arch_names_of_three_digits_keep_their_major(text, sm):
    """sm_100a is 10.0 (it was read as 1.00, so `--arch sm_100a` asked NVRTC for sm_10a)."""
    from consan.toolchain import Arch

    a = Arch.parse(text)
    assert a.sm == sm and a.minor == int(sm.rstrip("af")[-1])
    assert a.major == int(sm.rstrip("af")[3:-1])


def test_an_arch_older_than_the_checker_needs_is_named(tmp_path, capsys):
    ptx = write(tmp_path, "k.ptx", ".version 7.5\n.target sm_75\n.address_size 64\n"
                ".visible .entry k()\n{\n\tret;\n}\n")
    status, _, err = main(capsys, "instrument", ptx, "--arch", "sm_75")
    assert status == 2
    assert "--arch sm_75: consan checks kernels on sm_80 (Ampere) and newer GPUs" in err
    assert "NVRTC" not in err and "consan_checker.cu" not in err


def test_an_output_that_is_the_input_is_refused_before_any_work(tmp_path, capsys):
    ptx = write(tmp_path, "k.ptx", ".version 8.0\n.target sm_90a\n.address_size 64\n"
                ".visible .entry k()\n{\n\tret;\n}\n")
    before = Path(ptx).read_text()
    status, _, err = main(capsys, "instrument", ptx, "-o", ptx)
    assert status == 2 and "is the input file: writing there would overwrite it" in err
    assert Path(ptx).read_text() == before


def test_ptx_consan_already_instrumented_is_named_as_such(tmp_path, capsys):
    src = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n"
    done = write(tmp_path, "k.ptx", instrument(src, "k.ptx").ptx)
    status, _, err = main(capsys, "instrument", done)
    assert status == 2 and "already instrumented by consan" in err and "give the original" in err
    assert "Duplicate definition" not in err


@pytest.mark.parametrize("text,missing", [
    (".version 8.0\n.visible .entry k()\n{\n\tret;\n}\n", "no .target directive"),
    ("hello\n", "no .version or .target directive")])
def test_a_ptx_file_that_is_not_ptx_says_what_is_missing(tmp_path, capsys, text, missing):
    """Named .ptx, it is not compiled as CUDA C++ (pages of NVRTC errors about `mov`)."""
    status, _, err = main(capsys, "instrument", write(tmp_path, "k.ptx", text))
    assert status == 2 and f"k.ptx is named as PTX but has {missing}" in err
    assert "NVRTC" not in err and "error:" not in err


FUNCS_PTX = """.version 8.0
.target sm_90a
.address_size 64
.extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);
.shared .align 4 .b8 buf[256];
.func helper_a(.param .b32 x)
{
\t.reg .b32 %r<3>;
\tld.param.b32 %r1, [x];
\tst.shared.u32 [buf], %r1;
\tret;
}
.func helper_b(.param .b32 x)
{
\t.reg .b32 %r<3>;
\tld.param.b32 %r1, [x];
\tst.shared.u32 [buf+4], %r1;
\tst.shared.u32 [buf+64], %r1;
\tret;
}
.visible .entry ka()
{
\t.param .b32 p;
\tst.param.b32 [p], 1;
\tcall helper_a, (p);
\tret;
}
.visible .entry kb()
{
\t.param .b32 p;
\tst.param.b32 [p], 2;
\tcall.uni helper_b, (p);
\tret;
}
"""


def test_kernel_counts_only_the_device_functions_it_calls(tmp_path, capsys):
    """--kernel ka: helper_b, which only kb calls, was counted in ka's sites too."""
    ptx = write(tmp_path, "funcs.ptx", FUNCS_PTX)
    status, out, _ = main(capsys, "instrument", ptx, "--kernel", "ka")
    assert status == 0
    assert "helper_a" in out and "helper_b" not in out, out
    status, out, _ = main(capsys, "instrument", ptx, "--kernel", "kb")
    assert status == 0
    assert "helper_b" in out and "helper_a" not in out, out
    status, out, _ = main(capsys, "instrument", ptx)
    assert "helper_a" in out and "helper_b" in out, out


def test_reachable_follows_direct_calls_and_gives_up_on_indirect_ones():
    from instrument.ptx import parse, reachable

    mod = parse(FUNCS_PTX, "funcs.ptx")
    assert reachable(mod, "ka") == {"ka", "helper_a"}
    assert reachable(mod, "kb") == {"kb", "helper_b"}
    indirect = FUNCS_PTX.replace("\tcall helper_a, (p);",
                                 "\t.reg .b64 %rd<2>;\n\tmov.u64 %rd1, helper_a;\n"
                                 "proto: .callprototype _ (.param .b32 _);\n"
                                 "\tcall %rd1, (p), proto;")
    assert reachable(parse(indirect, "f.ptx"), "ka") is None
