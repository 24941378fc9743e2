#!/usr/bin/env python
"""bench_async's clustered ring at other depths: time and resident CTAs, consan and native.

    PYTHONPATH=. python benchmarks/depth_dsmem.py [--stages 2,4,6,8] [--tables shared,device]
        [--pairs N] [--json PATH]

tests/kernels/dsmem_ring.py's ring with 4 KiB stages, `--pairs` clusters of two CTAs (132:
bench_async's) and 64 tiles each, at each depth of `--stages`. A row: the shared memory
one instrumented CTA asks for (the kernel's own and the checker's tables and words), the
CTAs of the launch resident at once under consan (`Prepared.nslots`) against the grid,
and the device's time alone (each launch behind a spin kernel, medians of 5), native and
consan. Every consan launch must report clean and write the native bits, else the row gets
no ratio and the script exits 1 (benchmarks/verdict.py). `--tables`: each depth with its
granule tables where consan puts them (shared: its own choice, shared memory where they
fit; from six stages with chunk granules, the row's granule bytes), and in device memory
(device: CONSAN_VC_SMEM=0, where this module takes chunk granules too). Why: the ring's
tables in shared memory grow with its stages (4-byte granules, about 14 bytes of table a
granule), and a depth whose CTA no longer fits twice in an SM ran its grid in two waves
where natively it runs in one (on an H200: 1.426 ms at 4 stages, 2.709 at 6;
benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import verdict  # noqa: E402
from benchmarks.bench_clean import _arch_options, _time_device  # noqa: E402

TILES = 64  # bench_async.DSMEM_TILES


def stages_list(text: str) -> list[int]:
    """`--stages`' depths: positive integers, comma-separated."""
    try:
        out = [int(s) for s in text.split(",")]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(
            f"--stages takes depths like 2,4,6 (positive integers), not {text!r}")
    return out


def tables_list(text: str) -> list[str]:
    """`--tables`' placements: shared, device, or both, comma-separated."""
    out = text.split(",")
    if not out or any(t not in ("shared", "device") for t in out):
        raise argparse.ArgumentTypeError(
            f"--tables takes shared, device or shared,device, not {text!r}")
    return out


def row(cp, stages: int, pairs: int, tables: str = "shared", tiles: int = TILES) -> dict:
    """One depth's row (see the module's docstring); `tables` "device": the launch prepared
    with CONSAN_VC_SMEM=0."""
    import consan
    from tests.kernels import dsmem_ring as g

    src, opts = g.source(stages), _arch_options(cp)
    x, out, _ = g.inputs(cp, pairs, tiles)
    args = g.args(x, out, tiles)
    native = cp.RawKernel(src, g.KERNEL, options=opts)
    native(g.grid(pairs), g.BLOCK, args)
    want = [out.get()]
    dev_nat = statistics.median(_time_device(
        cp, lambda: native(g.grid(pairs), g.BLOCK, args), lambda: None, 5))
    with mock.patch.dict(os.environ, {"CONSAN_VC_SMEM": "0" if tables == "device" else "1"}):
        p = consan.prepare(src, g.KERNEL, grid=g.grid(pairs), block=g.BLOCK, options=opts)
    out.fill(0)
    p.launch(args)
    reports = [p.report()]
    same = verdict.same_bits(want, [out.get()])
    dev_con = statistics.median(_time_device(cp, lambda: p.launch(args),
                                             lambda: reports.append(p.report()), 5))
    smem = p.static_smem + p.launch_shared_mem
    r = {"kernel": f"dsmem_ring, {stages} stages, {tables} tables", "stages": stages,
         "ctas": 2 * pairs,
         "resident_ctas": p.nslots, "smem_per_cta_kib": smem / 1024,
         "tables": p.layout.placement.name, "granule_bytes": p.layout.granule_bytes,
         "dev_native_ms": dev_nat, "dev_consan_ms": dev_con,
         "dev_x": dev_con / dev_nat}
    verdict.judge(r, reports, same)
    return r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stages", type=stages_list, default=[2, 4, 6, 8],
                    help="the ring's depths (default 2,4,6,8)")
    ap.add_argument("--tables", type=tables_list, default=["shared", "device"],
                    help="where the granule tables go: shared (consan's choice), device, "
                         "or both (default)")
    ap.add_argument("--pairs", type=int, default=132, help="clusters of two CTAs (default 132)")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    import cupy as cp

    rows = []
    print("stages | consan smem a CTA KiB | tables | granule bytes | resident CTAs / grid | "
          "dev native ms | dev consan ms | dev x")
    for s, t in itertools.product(args.stages, args.tables):
        r = row(cp, s, args.pairs, t)
        rows.append(r)
        print(f"{s} | {r['smem_per_cta_kib']:.1f} | {r['tables']} | {r['granule_bytes']} | "
              f"{r['resident_ctas']} / "
              f"{r['ctas']} | {r['dev_native_ms']:.4f} | {r['dev_consan_ms']:.3f} | "
              f"{verdict.cell(r, 'dev_x')}", flush=True)
    if args.json:
        name = cp.cuda.runtime.getDeviceProperties(0)["name"]
        with open(args.json, "w") as f:
            json.dump({"gpu": name.decode() if isinstance(name, bytes) else name,
                       "rows": rows}, f, indent=1)
    failed = verdict.errors(rows)
    for line in failed:
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
