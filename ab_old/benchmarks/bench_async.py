#!/usr/bin/env python
"""consan vs compute-sanitizer racecheck on feature-dense (async) kernels.

    PYTHONPATH=. python benchmarks/bench_async.py [--json PATH] [--no-racecheck]
        [--only K1,K2] [--size KERNEL=N ...]

(--size, as bench_clean.py's: a kernel at another grid, e.g. tma_ring_4stage=132 for one CTA
an SM of an H100, where its own size puts two.)

For each kernel, in one run: its native time and its time under consan (CUDA
events, warm-up, median, as in bench_clean.py), and the same kernel launched
by a child process natively and under `compute-sanitizer --tool racecheck`
(the child times its launches with CUDA events too, so process start-up and
the sanitizer's attach time are not counted; the wall time of both child
processes is printed beside). Every consan launch must report clean and give
the native output bit for bit: a row that fails either gets no ratio and the
script exits 1 (benchmarks/verdict.py). "+read-back" is the wall time a user
pays per checked launch: the launch, its synchronisation and the read-back of
its log, as `consan run` does after each launch. "dev" times each launch again
behind a spin kernel, so the events hold the device's time alone: the first
columns' events also hold the host's launch path wherever the GPU waited for it,
which is a third of a 14 us native kernel's events.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import session_path, verdict  # noqa: E402
from benchmarks.bench_clean import _arch_options, _time, _time_device, size_overrides  # noqa: E402
from tests import gpu_util  # noqa: E402


@dataclass
class Launch:
    source: str
    kernel: str
    grid: tuple
    block: tuple
    args: tuple
    outputs: list
    shared_mem: int = 0
    keep: tuple = ()  # arrays only a tensor map points at: they must outlive the launches


def _mma_gemm(cp, size: int) -> Launch:
    from tests.kernels import mma_gemm as g

    a, bt, c, _ = g.inputs(cp, size, size, size)
    return Launch(g.SOURCE, g.KERNEL, g.grid(size, size), g.BLOCK,
                  g.args(a, bt, c, size, size, size), [c])


RING_TILES = 16  # boxes of 32 x 64 floats each CTA streams through the TMA ring


def _tma_ring(cp, ctas: int, tiles: int = RING_TILES) -> Launch:
    import numpy as np

    import consan
    from tests.kernels import gpu_kernels as gk

    rows = ctas * tiles * gk.TMA_RING_ROWS
    x = cp.asarray(np.random.default_rng(6).integers(0, 8, (rows, gk.TMA_RING_COLS))
                   .astype(np.float32))
    m = consan.tensor_map(x, box_shape=(gk.TMA_RING_ROWS, gk.TMA_RING_COLS))
    out = cp.zeros(ctas * gk.TMA_RING_COLS, dtype=cp.float32)
    return Launch(gk.fill(gk.TMA_RING, gk.TMA_RING_CLEAN), "tma_ring", (ctas, 1, 1), (96, 1, 1),
                  (m, out, np.int32(tiles)), [out], keep=(x,))


GEMM_K = 1024


def _tma_wgmma(cp, m: int, k: int = GEMM_K) -> Launch:
    from tests.kernels import tma_wgmma_gemm as g

    a, b, d, _ = g.inputs(cp, m, k)
    return Launch(g.SOURCE, g.KERNEL, g.grid(m), g.BLOCK, g.args(a, b, d, k), [d],
                  keep=(a, b))


DSMEM_TILES = 64  # tiles of 4 KiB the producer CTA of each cluster hands to its consumer


def _dsmem_ring(cp, pairs: int, tiles: int = DSMEM_TILES) -> Launch:
    from tests.kernels import dsmem_ring as g

    x, out, _ = g.inputs(cp, pairs, tiles)
    return Launch(g.SOURCE, g.KERNEL, g.grid(pairs), g.BLOCK, g.args(x, out, tiles), [out])


# name -> (size label, default size, builder)
CASES: dict[str, tuple[str, int, Callable[[Any, int], Launch]]] = {
    "mma_gemm_cp_async": ("{0}^3 fp16->fp32, 3-stage cp.async + ldmatrix + mma.sync", 1024,
                          _mma_gemm),
    "tma_ring_4stage": (f"{{0}} CTAs x {RING_TILES} boxes of 32x64 f32, 4-stage TMA + "
                        "mbarrier producer/consumer ring", 264, _tma_ring),
    "tma_wgmma_gemm": (f"{{0}}x64x{GEMM_K} fp16->fp32, 2-stage TMA (128B swizzle) + wgmma",
                       16896, _tma_wgmma),
    "dsmem_ring_2cta": (f"{{0}} clusters of 2 CTAs x {DSMEM_TILES} tiles of 4 KiB, 4-stage "
                        "st.async + peer-mbarrier ring over distributed shared memory", 132,
                        _dsmem_ring),
}


def _sanitizer() -> str | None:
    found = shutil.which("compute-sanitizer")
    for cand in ([found] if found else []) + ["/usr/local/cuda/bin/compute-sanitizer",
                                              "/usr/local/cuda/compute-sanitizer/compute-sanitizer"]:
        if cand and os.path.exists(cand):
            return cand
    return None


def child(name: str, size: int, repeats: int) -> None:
    """Launch the kernel natively; print the median of `repeats` timed launches."""
    import cupy as cp

    case = CASES[name]
    ln = case[2](cp, size)
    kern = cp.RawKernel(ln.source, ln.kernel, options=_arch_options(cp))
    ms = _time(cp, lambda: kern(ln.grid, ln.block, ln.args, shared_mem=ln.shared_mem),
               lambda: None, 1, repeats)
    print(f"CHILD_MS {statistics.median(ms)}", flush=True)


def _child_run(cmd: list[str], timeout: float) -> tuple[float | None, float, str]:
    t0 = time.perf_counter()
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             env={**os.environ, "PYTHONPATH": ROOT})
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - t0, f"timed out after {timeout:.0f} s"
    wall = time.perf_counter() - t0
    for line in res.stdout.splitlines():
        if line.startswith("CHILD_MS "):
            return float(line.split()[1]), wall, ""
    tail = (res.stdout + res.stderr).strip().splitlines()[-3:]
    return None, wall, f"exit {res.returncode}: {' | '.join(tail)}"


def bench(name: str, size: int, args) -> dict:
    import cupy as cp

    import consan

    label, _, build = CASES[name]
    opts = _arch_options(cp)
    ln = build(cp, size)
    kern = cp.RawKernel(ln.source, ln.kernel, options=opts)
    # the bit-for-bit reference: built from the very PTX consan instruments (the timed
    # native launch below is CuPy's)
    gpu_util.native_launch(ln.source, ln.kernel, ln.grid, ln.block, ln.args,
                           shared_mem=ln.shared_mem, options=opts)
    native_out = [o.get() for o in ln.outputs]
    p = consan.prepare(ln.source, ln.kernel, grid=ln.grid, block=ln.block,
                       shared_mem=ln.shared_mem, options=opts)
    for o in ln.outputs:
        o.fill(0)
    reports = []
    native_ms = _time(cp, lambda: kern(ln.grid, ln.block, ln.args, shared_mem=ln.shared_mem),
                      lambda: None, args.warmup, args.repeats)
    for o in ln.outputs:
        o.fill(0)
    p.launch(ln.args)
    reports.append(p.report())
    same = verdict.same_bits(native_out, [o.get() for o in ln.outputs])
    walls: list[float] = []
    consan_ms = _time(cp, lambda: p.launch(ln.args), lambda: reports.append(p.report()), 1,
                      args.consan_repeats, walls)
    if not all(r.ok for r in reports):
        print(next(r for r in reports if not r.ok), file=sys.stderr)
    nat, con = statistics.median(native_ms), statistics.median(consan_ms)
    user = statistics.median(walls)
    dev_nat = statistics.median(_time_device(
        cp, lambda: kern(ln.grid, ln.block, ln.args, shared_mem=ln.shared_mem), lambda: None,
        args.repeats))
    dev_con = statistics.median(_time_device(cp, lambda: p.launch(ln.args),
                                             lambda: reports.append(p.report()),
                                             args.consan_repeats))

    def fresh(_cp):
        for o in ln.outputs:
            o.fill(0)
        return ln.args, ln.outputs
    run = session_path.time_session(cp, ln.source, ln.kernel, ln.grid, ln.block, fresh,
                                    native_out, nat, opts, ln.shared_mem, 1,
                                    args.consan_repeats)
    row = {"kernel": name, "size": label.format(size), "native_ms": nat, "consan_ms": con,
           "consan_x": con / nat, "consan_user_ms": user, "consan_user_x": user / nat,
           "dev_native_ms": dev_nat, "dev_consan_ms": dev_con, "dev_x": dev_con / dev_nat,
           "shadow_per_cta_kib": p.shadow_bytes_per_cta / 1024,
           "tables": p.layout.placement.name,
           "resident_ctas": p.nslots, **run}
    verdict.judge(row, reports, same)
    cs = _sanitizer()
    me = [sys.executable, os.path.abspath(__file__), "--child", name, "--child-size", str(size)]
    if args.no_racecheck or cs is None:
        row["racecheck"] = "not run" if args.no_racecheck else "compute-sanitizer not found"
        return row
    base_ms, base_wall, err = _child_run(me + ["--child-repeats", "3"], args.timeout)
    rc_ms, rc_wall, err2 = _child_run([cs, "--tool", "racecheck", "--print-limit", "10", *me,
                                       "--child-repeats", "3"], args.timeout)
    row.update({"child_native_ms": base_ms, "child_native_wall_s": base_wall,
                "racecheck_ms": rc_ms, "racecheck_wall_s": rc_wall})
    if base_ms and rc_ms:
        row["racecheck_x"] = rc_ms / base_ms
    else:
        row["racecheck"] = err or err2
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--only", metavar="K1,K2", help=f"subset of: {', '.join(CASES)}")
    ap.add_argument("--no-racecheck", action="store_true")
    ap.add_argument("--timeout", type=float, default=240.0, help="per racecheck child, s")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--consan-repeats", type=int, default=5)
    ap.add_argument("--size", action="append", default=[], metavar="KERNEL=N",
                    help="a kernel's size other than its own (its grid: CTAs, M, or N^3)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child-repeats", type=int, default=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        sizes = size_overrides(args.size, CASES)
    except ValueError as e:
        ap.error(str(e))
    if any(not isinstance(n, int) for n in sizes.values()):
        ap.error("--size: these kernels take one number (CTAs, M, or N of N^3)")
    if args.child:
        child(args.child, args.child_size, args.child_repeats)
        return 0

    import cupy as cp

    names = [n for n in CASES if not args.only or n in args.only.split(",")]
    rows = []
    for name in names:
        print(f"[{name}]", file=sys.stderr, flush=True)
        rows.append(bench(name, sizes.get(name, CASES[name][1]), args))
    hdr = ("kernel", "size", "native ms", "consan ms", "consan x", "+read-back ms",
           "+read-back x", "dev native ms", "dev consan ms", "dev x", "consan run ms",
           "consan run x", "racecheck ms", "racecheck x", "racecheck wall s (native wall s)")
    print(" | ".join(hdr))
    for r in rows:
        rc = (f"{r['racecheck_ms']:.3f}", f"{r['racecheck_x']:.1f}",
              f"{r['racecheck_wall_s']:.1f} ({r['child_native_wall_s']:.1f})") \
            if "racecheck_x" in r else (r.get("racecheck", "-"), "-", "-")
        print(" | ".join((r["kernel"], r["size"], f"{r['native_ms']:.3f}",
                          f"{r['consan_ms']:.3f}", verdict.cell(r, "consan_x"),
                          f"{r['consan_user_ms']:.3f}", verdict.cell(r, "consan_user_x"),
                          f"{r['dev_native_ms']:.4f}", f"{r['dev_consan_ms']:.3f}",
                          verdict.cell(r, "dev_x"),
                          f"{r['run_ms']:.3f}" if "run_ms" in r else "-",
                          session_path.cell(r), *rc)))
    good = [r for r in rows if "consan_x" in r]
    if good:
        xs = [r["consan_x"] for r in good]
        timed = [r for r in good if "racecheck_x" in r]  # (racecheck may not have run)
        faster = sum(1 for r in timed if r["racecheck_x"] > r["consan_x"])
        against = (f"consan faster than racecheck on {faster} of {len(timed)}" if timed
                   else "racecheck not timed")
        print(f"\nmedian consan slowdown {statistics.median(xs):.1f}x over the {len(good)} rows "
              f"with a ratio; {against}")
        devs = [r["dev_x"] for r in good]
        print(f"the device's time alone (each launch behind a spin kernel): median "
              f"{statistics.median(devs):.1f}x, max {max(devs):.1f}x")
    runs = [r["run_x"] for r in rows if "run_x" in r]
    if runs:
        print(f"consan run (proof or instrumented, as the CuPy hook takes each launch): median "
              f"{statistics.median(runs):.1f}x, max {max(runs):.1f}x over {len(runs)} rows")
    gpu = cp.cuda.runtime.getDeviceProperties(0)["name"]
    gpu = gpu.decode() if isinstance(gpu, bytes) else str(gpu)
    print(f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"gpu: {gpu}")
    print("command: " + " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]))
    failed = verdict.errors(rows) + session_path.errors(rows)
    for line in failed:
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "errors": failed, "gpu": gpu}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
