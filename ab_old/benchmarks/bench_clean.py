#!/usr/bin/env python
"""Native vs consan-instrumented run time of five clean kernels on the GPU.

    PYTHONPATH=. python benchmarks/bench_clean.py [--quick] [--json PATH]

Kernels (sources in tests/kernels/gpu_kernels.py): block reduction, padded-tile
transpose, 1-D stencil with halo, smem-tiled SGEMM (64x64 tile, 4x4 per
thread), 256-bin histogram with shared atomics. Default sizes keep an H100
busy for about a millisecond or more natively; --quick uses small ones.

Timing: CUDA events around each launch on the current stream, warm-up
launches first, median of the repeats. Native: cupy.RawKernel. Instrumented:
consan.prepare(...).launch(args); the report is read back after each timed
launch, outside the timed window; a second column ("+read-back") is the wall
time a user pays per checked launch: the launch, its synchronisation and the
read-back of its log (what `consan run` does after each launch). Before timing,
one native launch (built from the very PTX consan instruments) and one
instrumented launch on fresh outputs are compared bit for bit, and every
instrumented launch must report clean: a row that fails either gets no ratio
and the script exits 1 (benchmarks/verdict.py). "consan run" is the same kernel
launched through a consan session, as `consan run` takes it: proven before launch and run
natively where the proof holds, else instrumented and read back after each launch
(benchmarks/session_path.py), with the same two checks.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import importlib.util
import json
import pathlib
import shlex
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run from source: PYTHONPATH=. is then optional


from benchmarks import session_path, verdict  # noqa: E402
from tests import gpu_util  # noqa: E402


def _load_kernels():
    path = ROOT / "tests" / "kernels" / "gpu_kernels.py"
    spec = importlib.util.spec_from_file_location("consan_bench_gpu_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


K = _load_kernels()

ORDER = ("block_reduce_sum", "transpose_tiled", "stencil_1d", "sgemm_tiled", "histogram256")
FULL_SIZES = {
    "block_reduce_sum": 1 << 30,  # 4 GiB of floats
    "transpose_tiled": (20480, 20480),  # 1.6 GiB in, 1.6 GiB out
    "stencil_1d": 1 << 29,  # 2 GiB in, 2 GiB out
    "sgemm_tiled": (4096, 4096, 4096),
    "histogram256": 1 << 30,  # 1 GiB of bytes
}
QUICK_SIZES = {
    "block_reduce_sum": 1 << 22,
    "transpose_tiled": (2048, 2048),
    "stencil_1d": 1 << 22,
    "sgemm_tiled": (512, 512, 512),
    "histogram256": 1 << 22,
}
SLOW_CONSAN_S = 5.0  # a first instrumented launch slower than this gets a single timed repeat


def _parse_size(text: str):
    parts = [int(p) for p in text.replace("x", ",").split(",") if p]
    return parts[0] if len(parts) == 1 else tuple(parts)


def size_overrides(items: list[str], known) -> dict:
    """`--size KERNEL=N[,N..]` items (this script's and bench_async.py's): each named
    kernel's size. ValueError names an item whose kernel is not in `known` or whose size
    is not whole numbers."""
    out = {}
    for item in items:
        key, _, val = item.partition("=")
        try:
            size = _parse_size(val)
        except ValueError:
            size = None
        if key not in known or not size:
            raise ValueError(f"--size {item!r}: give KERNEL=N[,N..] with a kernel of "
                             f"{', '.join(known)}")
        out[key] = size
    return out


def _arch_options(cp) -> tuple[str, ...]:
    cc = cp.cuda.Device().compute_capability
    return (f"-arch=sm_{cc}a" if cc == "90" else f"-arch=sm_{cc}",)


def _time(cp, launch, after, warmup: int, repeats: int, walls: list[float] | None = None,
          ahead=None) -> list[float]:
    """Milliseconds of `launch()` between CUDA events; `after()` runs untimed after each.
    `walls`, when given, gets each repeat's wall milliseconds from the launch to the end
    of `after()` (the read-back of a checked launch's log). `ahead()`, when given, is
    enqueued before each start event (a spin kernel: `_time_device`)."""
    start, end = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(warmup):
        launch()
        cp.cuda.get_current_stream().synchronize()
        after()
    times = []
    for _ in range(repeats):
        if ahead is not None:
            ahead()
        t0 = time.perf_counter()
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
        after()
        if walls is not None:
            walls.append((time.perf_counter() - t0) * 1e3)
    return times


SPIN = r"""extern "C" __global__ void consan_bench_spin(long long n) {
    for (long long t0 = clock64(); clock64() - t0 < n;) {}
}"""
SPIN_CYCLES = 2_000_000  # about 1 ms on an H100: longer than any host launch path


def _time_device(cp, launch, after, repeats: int) -> list[float]:
    """`_time` with each start event behind a spin kernel, which keeps the GPU busy while
    the host enqueues the launch: the events hold the device's time alone (around a 10 us
    kernel, the events of `_time` also hold the host's launch path, which the GPU waits
    for)."""
    import numpy as np

    spin = cp.RawKernel(SPIN, "consan_bench_spin")
    return _time(cp, launch, after, 0, repeats,
                 ahead=lambda: spin((1,), (1,), (np.int64(SPIN_CYCLES),)))


def bench_one(name, size, cp, consan, opts, args):
    setup = K.clean_setup(name, size, cp, seed=1234)
    print(f"[{name}] {setup.size_label}: grid {setup.grid} block {setup.block}",
          file=sys.stderr, flush=True)
    kern = cp.RawKernel(setup.source, setup.name, options=opts)

    # Verification launches on fresh outputs.
    # (the bit-for-bit reference is built from the very PTX consan instruments, so the two
    # differ only by the probes and the checker; the timed native launch is CuPy's)
    nat_args, nat_outs = setup.make_args(cp)
    gpu_util.native_launch(setup.source, setup.name, setup.grid, setup.block, nat_args,
                           shared_mem=setup.shared_mem, options=opts)
    native_out = [o.get() for o in nat_outs]

    t0 = time.perf_counter()
    p = consan.prepare(setup.source, setup.name, grid=setup.grid, block=setup.block,
                       shared_mem=setup.shared_mem, options=opts)
    t_prepare = time.perf_counter() - t0
    con_args, con_outs = setup.make_args(cp)
    t0 = time.perf_counter()
    p.launch(con_args)
    cp.cuda.get_current_stream().synchronize()
    t_first = time.perf_counter() - t0
    reports = [p.report()]
    same = verdict.same_bits(native_out, [c.get() for c in con_outs])

    # Timing.
    native_ms = _time(cp, lambda: kern(setup.grid, setup.block, nat_args,
                                       shared_mem=setup.shared_mem),
                      lambda: None, args.warmup, args.repeats)
    c_warm, c_rep = args.consan_warmup, args.consan_repeats
    if t_first > SLOW_CONSAN_S:
        c_warm, c_rep = 0, 1
    walls: list[float] = []
    consan_ms = _time(cp, lambda: p.launch(con_args), lambda: reports.append(p.report()),
                      c_warm, c_rep, walls)
    bad = [r for r in reports if not r.ok]
    if bad:
        print(bad[0], file=sys.stderr)
    run = session_path.time_session(
        cp, setup.source, setup.name, setup.grid, setup.block, setup.make_args, native_out,
        statistics.median(native_ms), opts, setup.shared_mem, c_warm, c_rep)

    nat, con = statistics.median(native_ms), statistics.median(consan_ms)
    row = {
        "kernel": name,
        "size": setup.size_label,
        "grid": list(setup.grid),
        "block": list(setup.block),
        "native_ms": nat,
        "consan_ms": con,
        "consan_user_ms": statistics.median(walls),
        "slowdown": con / nat if nat > 0 else float("inf"),
        "consan_user_x": statistics.median(walls) / nat if nat > 0 else float("inf"),
        "shadow_per_cta_kib": p.shadow_bytes_per_cta / 1024,
        "shadow_total_mib": p.shadow_bytes / 2**20,
        "native_ms_all": native_ms,
        "consan_ms_all": consan_ms,
        "prepare_s": t_prepare,
        "first_consan_launch_s": t_first,
        **run,
    }
    verdict.judge(row, reports, same)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds in all)")
    ap.add_argument("--json", metavar="PATH", help="write the results as JSON")
    ap.add_argument("--only", metavar="K1,K2", help=f"subset of: {', '.join(ORDER)}")
    ap.add_argument("--size", action="append", default=[], metavar="KERNEL=N[,N..]",
                    help="override a size, e.g. sgemm_tiled=4096,4096,4096")
    ap.add_argument("--warmup", type=int, default=3, help="native warm-up launches")
    ap.add_argument("--repeats", type=int, default=20, help="native timed launches")
    ap.add_argument("--consan-warmup", type=int, default=1)
    ap.add_argument("--consan-repeats", type=int, default=5)
    args = ap.parse_args(argv)

    import cupy as cp

    import consan

    sizes = dict(QUICK_SIZES if args.quick else FULL_SIZES)
    try:
        sizes.update(size_overrides(args.size, sizes))
    except ValueError as e:
        ap.error(str(e))
    names = [n for n in ORDER if not args.only or n in args.only.split(",")]
    opts = _arch_options(cp)
    gpu = cp.cuda.runtime.getDeviceProperties(0)["name"]
    gpu = gpu.decode() if isinstance(gpu, bytes) else str(gpu)
    command = " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])
    date = datetime.datetime.now().astimezone().isoformat(timespec="seconds")

    rows = []
    for name in names:
        rows.append(bench_one(name, sizes[name], cp, consan, opts, args))
        gc.collect()  # drop this kernel's arrays and shadow tables before the next one
        cp.get_default_memory_pool().free_all_blocks()

    head = ("kernel", "size", "native ms", "consan ms", "slowdown x", "+read-back ms",
            "+read-back x", "consan run ms", "consan run x", "shadow/CTA KiB",
            "total shadow MiB")
    table = [(r["kernel"], r["size"], f"{r['native_ms']:.3f}", f"{r['consan_ms']:.3f}",
              verdict.cell(r, "slowdown"), f"{r['consan_user_ms']:.3f}",
              verdict.cell(r, "consan_user_x"),
              f"{r['run_ms']:.3f}" if "run_ms" in r else "-", session_path.cell(r),
              f"{r['shadow_per_cta_kib']:.1f}", f"{r['shadow_total_mib']:.1f}") for r in rows]
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(head)]
    print(" | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    print("-+-".join("-" * w for w in widths))
    for t in table:
        print(" | ".join(c.ljust(w) for c, w in zip(t, widths, strict=True)))
    good = [r for r in rows if "slowdown" in r]
    slow = [r["slowdown"] for r in good]
    worst = max(good, key=lambda r: r["slowdown"]) if good else None
    summary = {}
    if good:
        summary = {"median_slowdown": statistics.median(slow), "max_slowdown": max(slow),
                   "max_slowdown_kernel": worst["kernel"]}
        print(f"\nmedian slowdown {summary['median_slowdown']:.1f}x, max slowdown "
              f"{summary['max_slowdown']:.1f}x ({worst['kernel']})")
    runs = [r["run_x"] for r in rows if "run_x" in r]
    if runs:
        summary["median_run_x"] = statistics.median(runs)
        summary["max_run_x"] = max(runs)
        print(f"consan run (proof or instrumented, as the CuPy hook takes each launch): "
              f"median {summary['median_run_x']:.1f}x, max {summary['max_run_x']:.1f}x")
    print(f"date: {date}\ngpu: {gpu}\ncommand: {command}")
    failed = verdict.errors(rows) + session_path.errors(rows)
    for line in failed:
        print(line)

    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"date": date, "gpu": gpu, "command": command, "options": list(opts),
                       "quick": args.quick, "rows": rows, **summary, "errors": failed},
                      fh, indent=2)
        print(f"wrote {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
