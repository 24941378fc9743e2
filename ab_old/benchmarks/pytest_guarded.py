"""Run pytest so that a test whose kernel never returns costs one test, not the stage.

A kernel that hangs holds the process in a CUDA call no signal reaches, so pytest's own
timeouts cannot end it. This runs pytest -v in a child process group; when no test has
finished for --hang seconds, it kills the group, records the test that was running as
HUNG, and starts pytest again without the tests already done. The summary line at the end
counts every outcome, hangs included. Each failure's report is written as it happens
(pytest_now.py), so a killed session keeps it.

    python3 benchmarks/pytest_guarded.py --hang 60 -- -m gpu tests/gpu/test_triton_peer.py
"""

from __future__ import annotations

import argparse
import os
import re
import selectors
import signal
import subprocess
import sys
import time

_RESULT = re.compile(r"^(\S+::\S+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)")
_START = re.compile(r"^(\S+::\S+) ")


def _run(cmd: list[str], hang: float, done: dict[str, str]) -> str | None:
    """One pytest run; the test that hung (then killed), or None once pytest ended."""
    env = dict(os.environ)  # (pytest_now.py, beside this file, is a plugin of the child)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.dirname(os.path.abspath(__file__)),
                                                      env.get("PYTHONPATH")]))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True, env=env)
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    buf, last = "", time.monotonic()
    while True:
        if not sel.select(timeout=1.0):
            running = _START.match(buf)  # (-v writes a test's id before it runs)
            if running and running.group(1) not in done and time.monotonic() - last > hang:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                print(f" HUNG (no result in {hang:.0f} s: killed)", flush=True)
                return running.group(1)
            continue
        chunk = os.read(p.stdout.fileno(), 65536).decode(errors="replace")
        if not chunk:
            p.wait()
            return None
        print(chunk, end="", flush=True)
        buf += chunk
        *lines, buf = buf.split("\n")
        for line in lines:
            if m := _RESULT.match(line):
                done[m.group(1)] = m.group(2)
                last = time.monotonic()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hang", type=float, default=60.0, help="seconds with no test finished")
    ap.add_argument("pytest_args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = [x for x in a.pytest_args if x != "--"]
    done: dict[str, str] = {}
    hung: list[str] = []
    while True:
        cmd = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "pytest_now",
               *args,
               *(f"--deselect={t}" for t in [*done, *hung])]
        stuck = _run(cmd, a.hang, done)
        if stuck is None or stuck in hung:  # (ended; or a test id --deselect cannot match)
            break
        hung.append(stuck)
    counts: dict[str, int] = {}
    for outcome in done.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    parts = [f"{n} {k.lower()}" for k, n in sorted(counts.items())]
    print("guarded: " + ", ".join(parts + [f"{len(hung)} hung"]) +
          ("" if not hung else " (" + ", ".join(hung) + ")"))
    return 1 if hung or counts.get("FAILED") or counts.get("ERROR") else 0


if __name__ == "__main__":
    sys.exit(main())
