#!/usr/bin/env python
"""Where the instrumented async kernels spend their issue slots, per checker function.

    PYTHONPATH=. python benchmarks/ncu_async.py KERNEL            # run under ncu (below)
    PYTHONPATH=. python benchmarks/ncu_async.py --triton NAME [--native]
    PYTHONPATH=. python benchmarks/ncu_async.py --summary FILE.csv [--top N]
    PYTHONPATH=. python benchmarks/ncu_async.py --lines FUNC1,FUNC2 FILE.csv
    PYTHONPATH=. python benchmarks/ncu_async.py --calls FILE.csv

The first form launches one case of bench_async.py (or, by its name, a kernel of
bench_clean.py, at --size N where given) under consan twice (profile the
second: `ncu --launch-skip 1 --launch-count 1 -k regex:NAME --section SourceCounters
--section WarpStateStats --page source --csv --print-source sass python ... > FILE.csv`).
The second runs a workload of bench_triton.py twice the same way, under consan or, with
--native, without it (its kernels keep their names). The third prints, per function of
that CSV, its share of the stall samples, the warp instructions it executed and its top
stall reasons. The fourth prints, for each function whose name holds one of the given
strings, every SASS line it ran: its stall samples, the warp instructions it executed and
its top two stall reasons (a line with more than 1.5% of the function's samples marked):
where a probe's time goes inside it, and how many times a call runs each line. The
fifth prints, per function, its calls (the runs of its first SASS line), the warp
instructions a call runs, the lines every call runs, and the share of its stall samples
spent fetching instructions (no_inst) and resolving branches: at one or two warps a
scheduler a probe's cycles are its instructions times their latency, so this is what a
probe call costs and where a cheaper one must come from.
"""

from __future__ import annotations

import argparse
import collections
import csv
import os
import sys
from collections.abc import Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def launch(name: str, size: str | None = None) -> None:
    """Two launches of a bench_async case or, by its name, a bench_clean kernel (at
    `size`, bench_clean's --size form, where given)."""
    import cupy as cp

    import consan
    from benchmarks.bench_async import CASES
    from benchmarks.bench_clean import _arch_options, _parse_size
    from benchmarks.breakdown_async import _clean_case

    _, default, build = CASES[name] if name in CASES else _clean_case(name)
    ln = build(cp, _parse_size(size) if size else default)
    p = consan.prepare(ln.source, ln.kernel, grid=ln.grid, block=ln.block,
                       shared_mem=ln.shared_mem, options=_arch_options(cp))
    for _ in range(2):
        p.launch(ln.args)
        p.report()


def launch_triton(name: str, native: bool) -> int:
    from benchmarks.bench_triton import checked_clean, workloads
    from consan import frontends, session

    case = workloads()[name]
    if native:
        case.run(7)
        case.run(7)
        return 0
    s = session.Session(session.Options(count_other_launches=False), print_findings=False)
    with frontends.sanitizing(s):
        case.run(7)
        case.run(7)
    checked, clean = checked_clean(s.report)  # (else the profile is not of consan)
    print(f"{name} under consan: {'clean' if clean else 'NOT clean'}; "
          f"{checked} launches checked; not checked: {s.report.not_checked or 'none'}")
    return 0 if clean else 1


def sass_rows(path: str) -> Iterator[tuple[str, str, int, int, str, dict[str, int]]]:
    """(function, SASS line's address, stall samples, warp instructions, SASS text, stall
    reason -> samples) for every line of an ncu source-page CSV with numbers."""
    func, header = None, None
    with open(path, newline="") as fh:
        for row in csv.reader(fh):
            if len(row) >= 2 and row[0] == "Kernel Name":
                func = row[1].split("(")[0]
            elif row and row[0] == "Address":
                header = row
            elif header and func and len(row) == len(header):
                d = dict(zip(header, row, strict=True))
                try:
                    stalls = {k[6:]: int(d[k] or 0) for k in header
                              if k.startswith("stall_") and "(Not" not in k}
                    yield (func, d["Address"], int(d["Warp Stall Sampling (All Samples)"] or 0),
                           int(d["Instructions Executed"] or 0), d.get("Source", ""), stalls)
                except ValueError:
                    continue


def _top(stalls: dict[str, int], n: int) -> list[tuple[int, str]]:
    """The n stall reasons with the most samples, (samples, reason), most first."""
    return sorted(((v, k) for k, v in stalls.items() if v), reverse=True)[:n]


def summary(path: str, top: int = 0) -> None:
    stalls_of = collections.defaultdict(collections.Counter)  # function -> reason -> samples
    totals = collections.defaultdict(lambda: [0, 0])  # function -> [samples, instructions]
    lines = []  # (stall samples, warp instructions, function, SASS)
    for func, _, smp, ins, src, stalls in sass_rows(path):
        totals[func][0] += smp
        totals[func][1] += ins
        stalls_of[func].update(stalls)
        lines.append((smp, ins, func, src))
    total = sum(t[0] for t in totals.values()) or 1
    print("function | stall samples % | warp instructions | top stalls")
    for func, (smp, ins) in sorted(totals.items(), key=lambda x: -x[1][0]):
        if smp * 200 < total:
            continue
        worst = ", ".join(f"{k} {100 * v / max(smp, 1):.0f}%"
                          for v, k in _top(stalls_of[func], 3))
        print(f"{func} | {100 * smp / total:.1f} | {ins} | {worst}")
    if top:
        print(f"\nthe {top} SASS instructions with the most stall samples:")
        print("stall samples % | warp instructions | function | SASS")
        for smp, ins, fn, src in sorted(lines, reverse=True)[:top]:
            print(f"{100 * smp / total:.1f} | {ins} | {fn[-40:]} | {src.strip()[:70]}")


def sass_lines(path: str, names: list[str]) -> None:
    """Every SASS line run by the functions whose names hold one of `names`."""
    rows = collections.defaultdict(list)
    for func, addr, smp, ins, src, stalls in sass_rows(path):
        if any(n in func for n in names):
            rows[func].append((addr, smp, ins, src, stalls))
    for func, rs in rows.items():
        total = sum(r[1] for r in rs) or 1
        print(f"#### {func}: {total} stall samples, {sum(r[2] for r in rs)} warp instructions")
        for addr, smp, ins, src, stalls in rs:
            if not (smp or ins):
                continue
            top = _top(stalls, 2)
            mark = " <==" if smp * 200 > total * 3 else ""
            print(f"{addr} {smp:6d} {ins:9d} {src.strip()[:70]:70s} "
                  f"{' '.join(f'{k}:{v}' for v, k in top)}{mark}")


def per_call(path: str) -> list[tuple[str, int, float, int, float, float]]:
    """(function, calls, warp instructions a call, lines run on every call, % of its stall
    samples in no_inst, % in branch_resolving) for each function that ran, most
    instructions first. A function's first line in the CSV is its entry."""
    first, total, every, smp, fetch, branch = {}, {}, {}, {}, {}, {}
    lines = list(sass_rows(path))
    for func, _, s, ins, _, stalls in lines:
        if func not in first:
            first[func] = ins
            total[func] = every[func] = smp[func] = fetch[func] = branch[func] = 0
        total[func] += ins
        smp[func] += s
        fetch[func] += stalls.get("no_inst", 0)
        branch[func] += stalls.get("branch_resolving", 0)
    for func, _, _, ins, _, _ in lines:
        if first[func] and ins == first[func]:
            every[func] += 1
    rows = [(f, first[f], total[f] / first[f], every[f], 100 * fetch[f] / max(smp[f], 1),
             100 * branch[f] / max(smp[f], 1)) for f in first if first[f]]
    return sorted(rows, key=lambda r: -r[1] * r[2])


def calls_table(path: str) -> None:
    print("function | calls | warp instructions a call | lines every call runs | "
          "no_inst % | branch_resolving %")
    for f, n, per, every, fetch, branch in per_call(path):
        print(f"{f} | {n} | {per:.0f} | {every} | {fetch:.0f} | {branch:.0f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernel", nargs="?")
    ap.add_argument("--summary", metavar="CSV")
    ap.add_argument("--triton", metavar="NAME", help="a workload of bench_triton.py")
    ap.add_argument("--native", action="store_true", help="with --triton: without consan")
    ap.add_argument("--top", type=int, default=0, help="also the N SASS lines stalled most")
    ap.add_argument("--lines", metavar="F1,F2", help="with a CSV: every SASS line these "
                    "functions ran")
    ap.add_argument("--calls", action="store_true", help="with a CSV: calls and warp "
                    "instructions a call of each function")
    ap.add_argument("--size", help="with a kernel: its size (N or N,N,..)")
    args = ap.parse_args(argv)
    if args.calls:
        if not args.kernel:
            ap.error("--calls needs the CSV")
        calls_table(args.kernel)
    elif args.lines:
        if not args.kernel:
            ap.error("--lines needs the CSV")
        sass_lines(args.kernel, args.lines.split(","))
    elif args.summary:
        summary(args.summary, args.top)
    elif args.triton:
        return launch_triton(args.triton, args.native)
    elif args.kernel:
        launch(args.kernel, args.size)
    else:
        ap.error("a kernel of bench_async.py, --triton NAME, or --summary CSV")
    return 0


if __name__ == "__main__":
    sys.exit(main())
