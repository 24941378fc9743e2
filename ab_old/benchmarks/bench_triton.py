#!/usr/bin/env python
"""consan vs Triton's own ConSan on Triton kernels, side by side in one run.

    PYTHONPATH=. python benchmarks/bench_triton.py [--json PATH] [--only NAME,...]
                                                   [--no-triton-consan]
                                                   [--profile | --host-profile CALLS]

For each kernel of the Triton tutorial corpus (tests/kernels/triton_corpus.py), its kernels'
time at each launch (CUDA events around Triton's launcher, so the inputs a case makes are
not counted): the native time; consan's kernel time (CUDA events around the
instrumented launch) and what a user pays per launch (the launch, its synchronisation and
the read-back of the log, host wall time); Triton's ConSan kernel time
(TRITON_INSTRUMENTATION_MODE=consan, in a child process with its own cache, timed with
CUDA events the same way); and first-call times: Triton's native compile, consan's build
of the instrumented kernel (instrument + link, the checker already cached), Triton's
ConSan compile (consan's proofs made anew: CONSAN_PROOF_CACHE=0 unless set). Times are
medians over repeats after a warm-up.

The events of a kernel of a few microseconds also hold the host's launch path wherever the
GPU waits for it (Triton's launcher natively; under consan the log's reset and Triton's
launcher). So each of the three is timed a second way, the "dev" columns: with the GPU
kept busy by a sleep kernel ahead of each start event, the events time the device alone.

A consan row needs both checks to pass: its report clean and its output bitwise equal to
the native one. A row that fails either prints ERROR instead of a ratio and the exit
status is 1; both checks are in the JSON.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks.host_stages import StageTimer  # noqa: E402 (after the path)

HIDE_CYCLES = 2_000_000  # about 1.2 ms on an H100 at 1.7 GHz: longer than any launch path

Run = Callable[[], Any]  # launches a workload's kernel(s) on inputs it makes; returns outputs


def workloads() -> dict[str, Any]:
    """The Triton tutorial corpus (tests/kernels/triton_corpus.py): name -> Case."""
    from tests.kernels import triton_corpus as tc

    return {c.name: c for c in tc.CASES if c.run is not None}


class KernelTimer:
    """CUDA events around every launch of a Triton kernel (Triton's own launcher, or
    consan's instrumented launch inside it): the time of the kernels alone, not of the
    inputs a workload makes or of consan's read-back. Under consan, a launch it runs
    natively (no shared memory, or proven race-free before launch) is timed like a native one:
    events around the whole launch call, the session's own host work included. `wall`
    also keeps the host time of each whole launch call (synchronous under consan: what a
    user pays)."""

    def __init__(self, patch_consan: bool = False) -> None:
        self.events: list[tuple[Any, Any]] = []
        self.hide_host = False  # (_measure_both turns it on for its second pass)
        self.wall: list[float] = []
        self.patch_consan = patch_consan
        self.instrumented = 0  # instrumented launches so far

    def __enter__(self) -> KernelTimer:
        import torch
        from triton.compiler.compiler import CompiledKernel

        from consan import runtime

        timer, prop = self, CompiledKernel.__dict__["run"]
        self._restore = [(CompiledKernel, "run", prop)]

        def timed(fn: Callable) -> Callable:
            def call(*a: Any, **k: Any) -> Any:
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                    enable_timing=True)
                t0 = time.perf_counter()
                timer.start(e0)
                before = timer.instrumented
                got = fn(*a, **k)
                e1.record()
                timer.wall.append(time.perf_counter() - t0)
                # (under consan: this call's events unless it ran an instrumented launch, whose
                # own events are kept instead; a kernel that cannot race runs natively)
                if not timer.patch_consan or timer.instrumented == before:
                    timer.events.append((e0, e1))
                return got
            return call

        CompiledKernel.run = property(lambda self: timed(prop.fget(self)))
        if self.patch_consan:
            launch = runtime.Prepared.launch
            self._restore.append((runtime.Prepared, "launch", launch))

            def instrumented(p: Any, *a: Any, **k: Any) -> None:
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                    enable_timing=True)
                timer.start(e0)
                launch(p, *a, **k)
                e1.record()
                timer.events.append((e0, e1))
                timer.instrumented += 1
            runtime.Prepared.launch = instrumented
        return self

    def start(self, e0: Any) -> None:
        """Record the start event; with hide_host, behind a sleep kernel that keeps the GPU
        busy while the host enqueues the launch, so the events time the device alone (a
        kernel of a few microseconds is shorter than a Python launch path)."""
        if self.hide_host:
            import torch

            torch.cuda._sleep(HIDE_CYCLES)
        e0.record()

    def __exit__(self, *exc: Any) -> None:
        for owner, name, value in self._restore:
            setattr(owner, name, value)

    def take(self) -> tuple[float, float]:
        """(kernel ms, wall ms) of the launches since the last take, summed."""
        import torch

        torch.cuda.synchronize()
        ms = sum(a.elapsed_time(b) for a, b in self.events)
        wall = sum(self.wall) * 1e3
        self.events, self.wall = [], []
        return ms, wall


def _measure(run: Run, timer: KernelTimer, repeats: int) -> tuple[list[float], list[float]]:
    kernel, wall = [], []
    for _ in range(repeats):
        run()
        k, w = timer.take()
        kernel.append(k)
        wall.append(w)
    return kernel, wall


def _bytes(outputs: Any) -> list[bytes]:
    import torch

    torch.cuda.synchronize()
    outs = outputs if isinstance(outputs, list | tuple) else [outputs]
    return [t.contiguous().view(-1).view(torch.uint8).cpu().numpy().tobytes() for t in outs]


def checked_clean(report: Any) -> tuple[int, bool]:
    """(launches consan checked, whether its report is clean and every launch was checked:
    a kernel consan could not prepare runs natively, and its time is not consan's)."""
    checked = sum(k.launches_checked for k in report.kernels.values())
    return checked, report.ok and not report.not_checked and checked > 0


def _measure_both(run: Run, timer: KernelTimer, repeats: int
                  ) -> tuple[list[float], list[float], list[float]]:
    """Kernel ms and wall ms per call, then kernel ms with the host hidden (the device
    alone; each call then also waits out its sleep kernel, so no wall time)."""
    kernel, wall = _measure(run, timer, repeats)
    timer.hide_host = True
    try:
        device, _ = _measure(run, timer, repeats)
    finally:
        timer.hide_host = False
    return kernel, wall, device


def child(name: str, repeats: int) -> None:
    """Runs in a child process with TRITON_INSTRUMENTATION_MODE=consan: Triton's ConSan."""
    import torch
    import triton

    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                  device="cuda"))
    case = workloads()[name]
    with KernelTimer() as timer:
        t0 = time.perf_counter()
        case.run(1)
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        timer.take()
        case.run(1)  # warm-up
        timer.take()
        kernel, wall, device = _measure_both(lambda: case.run(1), timer, repeats)
    print(json.dumps({"first_call_s": first, "ms": statistics.median(kernel),
                      "wall_ms": statistics.median(wall),
                      "device_ms": statistics.median(device)}))


def _triton_consan(name: str, repeats: int, timeout: float) -> dict[str, Any]:
    env = dict(os.environ, TRITON_INSTRUMENTATION_MODE="consan",
               TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="tconsan-cache-"),
               PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    try:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name,
                            "--repeats", str(repeats)], env=env, capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    line = next((x for x in reversed(r.stdout.splitlines()) if x.startswith("{")), None)
    if r.returncode != 0 or line is None:
        tail = (r.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": f"exit {r.returncode}: {tail[:120]}"}
    return json.loads(line)


def bench(name: str, case: Any, repeats: int, tconsan: bool, timeout: float) -> dict:
    import torch

    from consan import frontends, session

    row: dict[str, Any] = {"kernel": name}
    with KernelTimer() as timer:
        t0 = time.perf_counter()
        case.run(7)  # the first call compiles (this process' Triton cache is fresh)
        torch.cuda.synchronize()
        row["triton_compile_s"] = time.perf_counter() - t0
        timer.take()
        native_out = _bytes(case.run(7))
        timer.take()
        kernel, _, device = _measure_both(lambda: case.run(7), timer, repeats)
    row["native_ms"] = statistics.median(kernel)
    row["native_device_ms"] = statistics.median(device)

    s = session.Session(session.Options(count_other_launches=False), print_findings=False)
    with frontends.sanitizing(s), KernelTimer(patch_consan=True) as timer:
        t0 = time.perf_counter()
        checked_out = _bytes(case.run(7))
        row["consan_build_s"] = time.perf_counter() - t0  # instrument + link + first launch
        timer.take()
        kernel, wall, device = _measure_both(lambda: case.run(7), timer, repeats)
    row["instrumented"] = timer.instrumented > 0  # (False: consan ran it natively)
    row["proven"] = any(k.proven for k in s.report.kernels.values())  # (a proof let it)
    row["consan_ms"] = statistics.median(kernel)
    row["consan_user_ms"] = statistics.median(wall)
    row["consan_device_ms"] = statistics.median(device)
    row["consan_checked"], row["consan_clean"] = checked_clean(s.report)
    same = [a == b for a, b in zip(native_out, checked_out, strict=True)]
    row["same_bits"] = all(same) if case.deterministic else same[0]
    row["findings"] = [f.kind for f in s.report.active_findings]
    row["not_checked"] = s.report.not_checked
    if tconsan:
        row["triton_consan"] = _triton_consan(name, repeats, timeout)
    return row


def profile(name: str, case: Any) -> None:
    """The workload's consan launches with a checker built with CONSAN_PROFILE: after a
    warm-up run and a run that finds them, their counters cleared, one more run: the
    cycles per probe kind, per CTA."""
    from benchmarks import breakdown_async as ba
    from consan import frontends, runtime, session

    ba.profile_build()
    launch, seen = runtime.Prepared.launch, {}

    def keep(p: Any, *a: Any, **k: Any) -> None:
        seen[id(p)] = p
        launch(p, *a, **k)

    s = session.Session(session.Options(count_other_launches=False), print_findings=False)
    with frontends.sanitizing(s):
        case.run(7)
        runtime.Prepared.launch = keep
        try:
            case.run(7)
            for p in seen.values():
                ba.zero_profile(p)
            case.run(7)
        finally:
            runtime.Prepared.launch = launch
    for p in seen.values():
        print(f"[{name}: {p.kernel}, grid {p.grid}]")
        ba.print_profile(p, p.grid[0] * p.grid[1] * p.grid[2], 0)
    print(f"report: {'clean' if s.report.ok else [f.kind for f in s.report.active_findings]}")


def _host_stages() -> list:
    """The stages of a checked Triton launch that host_profile times apart (indented: inside
    the one above)."""
    from consan import cupy_build, runtime, session, triton_hook
    from reports import Report

    return [("Session.launch", session.Session, "launch"),
            ("  _Kernel.build", triton_hook._Kernel, "build"),
            ("  Session._launch_proof", session.Session, "_launch_proof"),
            ("  Session._count_native", session.Session, "_count_native"),
            ("  Session._run_proven (a proven launch)", session.Session, "_run_proven"),
            ("    Session._settle", session.Session, "_settle"),
            ("    session.capturing", session, "capturing"),
            ("  Session._prepare", session.Session, "_prepare"),
            ("  Prepared.launch", runtime.Prepared, "launch"),
            ("    Prepared.launch_resets", runtime.Prepared, "launch_resets"),
            ("    Triton's launcher", triton_hook._Launcher, "__call__"),
            ("  cupy_build.user_frames (either path)", cupy_build, "user_frames"),
            ("  Prepared.report (its wait for the kernel included)", runtime.Prepared, "report"),
            ("    Report.from_log", Report, "from_log"),
            ("  Session._record", session.Session, "_record"),
            ("triton_hook.scalar_params", triton_hook, "scalar_params"),
            ("triton_hook._tensor_maps", triton_hook, "_tensor_maps")]


def host_profile(name: str, case: Any, calls: int) -> None:
    """Where the host's time per launch goes under consan (what `consan run` pays beyond the
    kernel): `calls` runs of the workload, its inputs made each time, natively and in a
    session, the wall time per call of each; then the wall time per call of a few of
    consan's stages (benchmarks/host_stages.py: no profiler's cost per Python call in them);
    then cProfile over the session's runs, the functions with the most time of their own
    and consan's with the most in all."""
    import cProfile
    import io
    import pstats

    import torch

    from consan import frontends, session

    def per_call(fn: Callable[[], Any]) -> float:
        fn()
        fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / calls * 1e3

    native = per_call(lambda: case.run(7))
    s = session.Session(session.Options(count_other_launches=False), print_findings=False)
    prof = cProfile.Profile()
    stages = StageTimer(_host_stages())
    with frontends.sanitizing(s):
        checked = per_call(lambda: case.run(7))
        with stages:
            for _ in range(calls):
                case.run(7)
            torch.cuda.synchronize()
        prof.enable()
        for _ in range(calls):
            case.run(7)
        torch.cuda.synchronize()
        prof.disable()
    print(f"[{name}] wall ms per call, inputs included ({calls} calls): native {native:.3f}, "
          f"consan {checked:.3f} (report: {'clean' if s.report.ok else 'NOT clean'})")
    print(f"[{name}] consan's host stages (timed apart, nested stages inside their callers):")
    print(stages.table(calls))
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(20)
    stats.sort_stats("cumulative").print_stats(r"consan|instrument|reports", 25)
    print(out.getvalue())


def _fmt(v: float | None, unit: str = "") -> str:
    return "-" if v is None else f"{v:.3f}{unit}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--only", metavar="NAMES", help="comma-separated workload names")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--timeout", type=float, default=300.0, help="per Triton-ConSan child (s)")
    p.add_argument("--no-triton-consan", action="store_true")
    p.add_argument("--profile", action="store_true",
                   help="cycles per probe kind instead (checker built with CONSAN_PROFILE)")
    p.add_argument("--host-profile", type=int, metavar="CALLS",
                   help="the host's time per launch instead: wall ms per call natively and "
                        "under consan, and cProfile's view of CALLS consan calls")
    p.add_argument("--child", metavar="NAME", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        child(a.child, a.repeats)
        return 0
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton-cache-"))
    # (consan build s is a first launch's: its proof made, not read back from an earlier
    # run's on-disk cache, consan/proof_cache.py)
    os.environ.setdefault("CONSAN_PROOF_CACHE", "0")
    import torch

    from consan import runtime

    work = workloads()
    names = a.only.split(",") if a.only else list(work)
    unknown = [n for n in names if n not in work]
    if unknown:
        p.error(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(work)}")
    if a.profile:
        for name in names:
            profile(name, work[name])
        return 0
    if a.host_profile:
        for name in names:
            host_profile(name, work[name], a.host_profile)
        return 0
    rows, errors = [], 0
    for name in names:
        rows.append(bench(name, work[name], a.repeats, not a.no_triton_consan, a.timeout))
    print(f"\nbench_triton  {datetime.date.today()}  {torch.cuda.get_device_name()}  "
          f"consan {runtime.__version__}")
    head = ("kernel", "native ms", "consan ms", "consan x", "+read-back ms", "tconsan ms",
            "tconsan x", "dev native ms", "dev consan ms", "dev consan x", "dev tconsan x",
            "compile s", "consan build s", "tconsan first s")
    print(" | ".join(head))
    for r in rows:
        ok = r["consan_clean"] and r["same_bits"]
        t = r.get("triton_consan") or {}
        tx = t["ms"] / r["native_ms"] if "ms" in t else None
        dtx = t["device_ms"] / r["native_device_ms"] if "device_ms" in t else None
        if ok:
            cx = f"{r['consan_ms'] / r['native_ms']:.1f}"
            dcx = f"{r['consan_device_ms'] / r['native_device_ms']:.1f}"
        else:
            errors += 1
            why = ("output differs from native" if not r["same_bits"] else
                   f"not clean: {r['findings'] or r['not_checked']}")
            cx, dcx = f"ERROR ({why})", "-"
        why = "proven race-free before launch" if r.get("proven") else "cannot race"
        name = r["kernel"] if r["instrumented"] else f"{r['kernel']} (run natively: {why})"
        print(" | ".join([name, _fmt(r["native_ms"]), _fmt(r["consan_ms"]) if ok else "-",
                          cx, _fmt(r["consan_user_ms"]) if ok else "-", _fmt(t.get("ms")),
                          f"{tx:.1f}" if tx else t.get("error", "-"),
                          _fmt(r["native_device_ms"]),
                          _fmt(r["consan_device_ms"]) if ok else "-", dcx,
                          f"{dtx:.1f}" if dtx else "-",
                          _fmt(r["triton_compile_s"]), _fmt(r["consan_build_s"]),
                          _fmt(t.get("first_call_s"))]))
    for what, mine, theirs, native in (
            ("", "consan_ms", "ms", "native_ms"),
            ("device alone: ", "consan_device_ms", "device_ms", "native_device_ms")):
        ratios = [(r[mine] / r[native], r["triton_consan"][theirs] / r[native])
                  for r in rows if r["consan_clean"] and r["same_bits"]
                  and theirs in (r.get("triton_consan") or {})]
        if ratios:
            below = sum(c < t for c, t in ratios)
            print(f"{what}consan's slowdown below Triton's ConSan's on {below} of "
                  f"{len(ratios)} kernels; median consan "
                  f"{statistics.median(c for c, _ in ratios):.1f}x, Triton's ConSan "
                  f"{statistics.median(t for _, t in ratios):.1f}x")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"date": str(datetime.date.today()), "gpu": torch.cuda.get_device_name(),
                       "rows": rows}, f, indent=2, default=str)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
