"""CPU tests of `consan run`: argument parsing, running a program in-process, exit codes.

No GPU is needed: programs that launch nothing run unchanged under consan, and a
program that needs the GPU where there is none makes consan exit 2 with a clear
message. Findings are injected into the active session where a test needs them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from consan import cli
from consan.run import Program, RunUsageError, parse, split_argv

ROOT = Path(__file__).resolve().parents[2]


def script(tmp_path: Path, body: str, name: str = "prog.py") -> str:
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return str(p)


def run(*argv: str) -> int:
    return cli.main(["run", *argv])


INJECT = """
from consan import session
from reports.session import SessionFinding
s = session.current_session()
s.report.kernel("k").launches_checked += 1
s.report.findings.append(SessionFinding.from_dict({"kind": "race.raw",
    "title": "read-after-write race", "kernel": "k", "occurrences": 2, "launches": 1,
    "what": "w", "fix": "f",
    "sites": {"current": {"file": "k.cu", "line": 3, "col": 1, "where": "k.cu:3:1"},
              "earlier": None}}))
"""


# ---------------------------------------------------------------- parsing


@pytest.mark.parametrize("argv, opts, program", [
    (["s.py", "-x", "--json", "f"], [], Program("s.py", None, ["-x", "--json", "f"])),
    (["--json", "o.json", "--quiet", "s.py", "a"], ["--json", "o.json", "--quiet"],
     Program("s.py", None, ["a"])),
    (["-m", "pkg.mod", "--quiet"], [], Program(None, "pkg.mod", ["--quiet"])),
    (["--print-limit", "3", "-mpkg", "x"], ["--print-limit", "3"], Program(None, "pkg", ["x"])),
    (["--", "-odd.py", "y"], [], Program("-odd.py", None, ["y"])),
    (["--launch-count=2", "s.py"], ["--launch-count=2"], Program("s.py", None, [])),
])
def test_split_argv_gives_the_program_everything_after_its_name(argv, opts, program):
    assert split_argv(argv) == (opts, program)


@pytest.mark.parametrize("argv, words", [
    ([], "no program given"),
    (["--json"], "--json needs a value"),
    (["-m"], "-m needs a module name"),
    (["--"], "no program given after --"),
])
def test_split_argv_errors(argv, words):
    with pytest.raises(RunUsageError, match=words):
        split_argv(argv)


def test_parse_options(tmp_path):
    s = script(tmp_path, "pass\n")
    a, prog = parse(["--kernel-name", "^gemm", "--kernel-name-exclude", "slow",
                     "--launch-skip", "2", "--launch-count", "5", "--print-limit", "0",
                     "--on-violation", "abort", "--json", "r.json", "--sarif", "r.sarif",
                     "--suppressions", "s.txt", "--quiet", s, "arg"])
    assert (a.kernel_name, a.kernel_name_exclude, a.launch_skip, a.launch_count) == \
        ("^gemm", "slow", 2, 5)
    assert (a.print_limit, a.on_violation, a.json, a.sarif, a.suppressions, a.quiet) == \
        (0, "abort", "r.json", "r.sarif", "s.txt", True)
    assert prog == Program(s, None, ["arg"])
    a, _ = parse([s])
    assert (a.launch_skip, a.launch_count, a.print_limit, a.on_violation) == \
        (0, None, 100, "continue")


@pytest.mark.parametrize("opts, words", [
    (["--kernel-name", "("], "not a valid regular expression"),
    (["--launch-count", "-1"], "bad options"),
    (["--on-violation", "explode"], "bad options"),
    (["--bogus"], "bad options"),
])
def test_parse_errors(tmp_path, opts, words, capsys):
    s = script(tmp_path, "pass\n")
    with pytest.raises(RunUsageError, match=words):
        parse([*opts, s])


# ---------------------------------------------------------------- running and exit codes


def test_clean_program_runs_unchanged(tmp_path, capsys, clean_hook):
    import cupy.cuda.compiler as compiler

    original = compiler._compile_module_with_cache
    s = script(tmp_path, """
        import sys
        print("args", sys.argv[1:], __name__, sys.path[0] == __import__("os").path.dirname(
            __file__))
    """)
    argv_before = sys.argv[:]
    assert run(s, "a", "--b") == 0
    out, err = capsys.readouterr()
    assert out == "args ['a', '--b'] __main__ True\n"
    assert "consan: no findings" in err
    assert compiler._compile_module_with_cache is original  # the hook is gone again
    assert sys.argv == argv_before


@pytest.mark.parametrize("body, status", [
    ("import sys; sys.exit(3)", 3),
    ("import sys; sys.exit(0)", 0),
    ("import sys; sys.exit(None)", 0),
    ("raise SystemExit('bye')", 1),
    ("raise ValueError('boom')", 1),
])
def test_program_status_passes_through_when_clean(tmp_path, capsys, body, status):
    assert run(script(tmp_path, body + "\n")) == status
    err = capsys.readouterr().err
    if "ValueError" in body:
        assert "ValueError: boom" in err and "runpy" not in err and "consan/run.py" not in err
    if "bye" in body:
        assert "bye" in err


def test_findings_exit_1_even_if_the_program_fails(tmp_path, capsys):
    assert run(script(tmp_path, INJECT)) == 1
    assert "consan: 1 finding (1 race.raw)" in capsys.readouterr().err
    assert run(script(tmp_path, INJECT + "import sys; sys.exit(3)\n")) == 1


def test_module_mode(tmp_path, monkeypatch, capsys):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "tool.py").write_text("import sys\nprint('tool', sys.argv[1:], __name__)\n"
                                 "sys.exit(4)\n")
    monkeypatch.chdir(tmp_path)
    assert run("-m", "mypkg.tool", "x", "--quiet") == 4
    assert capsys.readouterr().out == "tool ['x', '--quiet'] __main__\n"


def test_json_sarif_and_quiet(tmp_path, capsys):
    j, sf = tmp_path / "r.json", tmp_path / "r.sarif"
    s = script(tmp_path, INJECT)
    assert run("--quiet", "--json", str(j), "--sarif", str(sf), s, "-v") == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["consan: 1 finding (1 race.raw); 1 launch of 1 kernel "
                                        "checked"]
    rep = json.loads(j.read_text())
    assert rep["program"]["argv"] == [s, "-v"] and rep["program"]["exit_status"] == 0
    assert rep["findings"][0]["kind"] == "race.raw" and rep["ok"] is False
    sarif = json.loads(sf.read_text())
    assert sarif["version"] == "2.1.0"
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["race.raw"]


def test_usage_errors_exit_2(tmp_path, capsys):
    s = script(tmp_path, "print('never')\n")
    assert run() == 2
    assert run(str(tmp_path / "missing.py")) == 2
    assert run("--kernel-name", "(", s) == 2
    bad = tmp_path / "supp.txt"
    bad.write_text("race.nope k.cu\n")
    assert run("--suppressions", str(bad), s) == 2
    assert run("--json", str(tmp_path / "no" / "such" / "dir.json"), s) == 2
    captured = capsys.readouterr()
    assert "never" not in captured.out  # nothing ran: every usage error is found first
    assert "missing.py: no such file" in captured.err
    assert "supp.txt:1" in captured.err
    assert f"--json {tmp_path / 'no' / 'such' / 'dir.json'}: the folder" in captured.err


@pytest.mark.parametrize("option, target, words", [
    ("--json", "no/such/r.json", "the folder {tmp}/no/such does not exist"),
    ("--sarif", "no/r.sarif", "the folder {tmp}/no does not exist"),
    ("--json", "", "--json {tmp}/ is a folder"),
    ("--sarif", "", "is a folder: give a file name"),
    # a folder that exists but takes no new file, whoever runs (root included)
    ("--json", "/proc/r.json", "--json /proc/r.json: the folder /proc is not writable"),
])
def test_unwritable_reports_are_found_before_the_program_runs(tmp_path, capsys, option, target,
                                                              words):
    s = script(tmp_path, "print('ran')\n")
    path = target if target.startswith("/") else f"{tmp_path}/{target}"
    assert run(option, path, s) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert err.startswith("consan run: ") and words.replace("{tmp}", str(tmp_path)) in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("module, words", [
    ("missing_module", "no module named 'missing_module' in the current folder or on sys.path"),
    ("mypkg.nope", "no module named 'mypkg.nope' in package mypkg"),
    ("mypkg.tool.x", "mypkg.tool is a module, not a package"),
    ("mypkg", "mypkg is a package without a __main__ module"),
    ("1bad", "not a module name"),
])
def test_missing_module_is_a_usage_error(tmp_path, monkeypatch, capsys, module, words):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise SystemExit('the package must not be imported')\n")
    (pkg / "tool.py").write_text("print('tool ran')\n")
    monkeypatch.chdir(tmp_path)
    assert run("-m", module) == 2
    out, err = capsys.readouterr()
    assert out == "" and "no findings" not in err and "Traceback" not in err
    assert err.startswith(f"consan run: -m {module}: {words}")
    assert len(err.strip().splitlines()) == 1


def test_folder_as_program_is_a_usage_error(tmp_path, capsys):
    assert run(str(tmp_path)) == 2
    assert f"{tmp_path} is a folder" in capsys.readouterr().err


def test_help_exits_0(capsys):
    assert run("-h") == 0
    assert "--on-violation" in capsys.readouterr().out


@pytest.mark.no_gpu
def test_program_needing_a_gpu_exits_2_with_a_clear_message(tmp_path, capsys):
    s = script(tmp_path, """
        print("before the GPU")
        import cupy
        k = cupy.RawKernel('extern "C" __global__ void f(int *p) { p[0] = 1; }', 'f')
        x = cupy.zeros(1, dtype=cupy.int32)
        k((1,), (1,), (x,))
        print("never")
    """)
    assert run(s) == 2
    out, err = capsys.readouterr()
    assert out == "before the GPU\n"
    assert "the program needs a CUDA GPU and none is usable here" in err
    assert "(at " in err and "prog.py:5)" in err  # cupy.zeros is the first GPU call
    assert "Traceback" not in err


def test_console_entry_point_in_a_subprocess(tmp_path):
    s = script(tmp_path, "import sys\nprint('hi', sys.argv[1:])\nsys.exit(5)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                      os.environ.get(
                                                                          "PYTHONPATH")]))}
    native = subprocess.run([sys.executable, s, "a"], capture_output=True, text=True)
    r = subprocess.run([sys.executable, "-m", "consan", "run", s, "a"], capture_output=True,
                       text=True, env=env)
    assert (r.returncode, r.stdout) == (native.returncode, native.stdout) == (5, "hi ['a']\n")
    assert "consan: no findings" in r.stderr


UNMODELED = ("/src/k.cu:6 (inlined at /src/k.cu:40) in kernel k: cluster barrier "
             "(barrier.cluster.arrive/wait): not checked yet; accesses ordered only by it may be "
             "reported [barrier.cluster.arrive.release.aligned;]")


def test_summary_lists_what_was_not_checked_one_line_each_when_piped(tmp_path):
    s = script(tmp_path, INJECT + f"""
s.report.kernel("k").unmodeled.extend([{UNMODELED!r}, {UNMODELED.replace(':6', ':7')!r}])
""")
    env = {**os.environ, "COLUMNS": "40",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run([sys.executable, "-m", "consan", "run", s], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.splitlines()
    assert ("k: 2 instruction(s) that touch shared memory or synchronise were not checked:"
            in lines)
    assert "  " + UNMODELED in lines
    assert "  " + UNMODELED.replace(":6", ":7") in lines


def test_a_writable_report_path_is_left_as_it_was(tmp_path):
    """The check opens the file to know: a file it created for that is removed again, and
    an existing one keeps its bytes."""
    from consan.cli import output_problem

    new, old = tmp_path / "new.json", tmp_path / "old.json"
    old.write_text("kept")
    assert output_problem(str(new), "--json") is None and not new.exists()
    assert output_problem(str(old), "--json") is None and old.read_text() == "kept"


@pytest.mark.parametrize("opts", [("--json", "{prog}"), ("--sarif", "{prog}"),
                                  ("--json", "{tmp}/r.json", "--sarif", "{tmp}/r.json")])
def test_a_report_path_that_is_the_program_or_the_other_report_is_refused(tmp_path, capsys,
                                                                          opts):
    s = script(tmp_path, "print('ran')\n")
    argv = [o.replace("{prog}", s).replace("{tmp}", str(tmp_path)) for o in opts]
    assert run(*argv, s) == 2
    out, err = capsys.readouterr()
    assert "ran" not in out and "writing there would overwrite it" in err
    assert Path(s).read_text() == "print('ran')\n"


@pytest.mark.no_gpu
def test_a_program_stopped_for_want_of_a_gpu_is_not_run_in_the_json(tmp_path, capsys):
    s = script(tmp_path, "import cupy\ncupy.zeros(1)\n")
    assert run("--json", str(tmp_path / "r.json"), s) == 2
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["ok"] is False and d["verdict"] == "not-run" and d["not_run"]
    assert "nothing checked" in d["summary"]


def test_a_program_that_is_not_python_is_a_usage_error(tmp_path, capsys):
    """A .cu file or an executable given to `consan run` is named, before anything runs
    (it was Python's SyntaxError, then "no findings" and exit 1)."""
    cu = tmp_path / "k.cu"
    cu.write_text('extern "C" __global__ void k() {}\n')
    assert run(str(cu)) == 2
    assert f"consan check {cu} --kernel NAME" in capsys.readouterr().err
    exe = tmp_path / "a.out"
    exe.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(64))
    assert run(str(exe)) == 2
    err = capsys.readouterr().err
    assert "is a compiled executable" in err and "SyntaxError" not in err


def test_a_program_that_ends_with_os_exit_still_gets_its_report(tmp_path):
    """os._exit skips atexit and every finally: the report (summary, --json) was lost and
    the process exited 0 whatever was found. A forked child's os._exit is its own."""
    s = script(tmp_path, INJECT + """
import os, sys
pid = os.fork()
if pid == 0:
    os._exit(7)
print("child", os.waitpid(pid, 0)[1] >> 8)
sys.stdout.flush()
os._exit(0)
""")
    j = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                      os.environ.get(
                                                                          "PYTHONPATH")]))}
    r = subprocess.run([sys.executable, "-m", "consan", "run", "--json", str(j), s],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1, r.stderr
    assert r.stdout == "child 7\n"
    assert "consan: 1 finding (1 race.raw)" in r.stderr
    d = json.loads(j.read_text())
    assert d["findings"][0]["kind"] == "race.raw" and d["program"]["exit_status"] == 0
