#!/usr/bin/env python
"""A CTA's timeline under consan: its begin, its prologue, its body and its exit.

    PYTHONPATH=. python benchmarks/timeline_async.py [--only K,...] [--defines "D ..."]
        [--by-rank N] [--size KERNEL=N ...]

A checker built with CONSAN_STAMPS (consan/checker/measure.h) keeps clock stamps a CTA
(its begin probe, thread 0's first CTA-barrier wait, each warp's first arrival there, its
first and last thread exits), lane 0's cycles in each probe kind for warps 0 and 1, and
thread 0's in the parts of a tensor load, of the mailbox drain and of the begin probe;
each bench_async case is launched at its benchmark size, timed, and launched once
stamped; the medians over CTAs are printed (`--by-rank N`: each cluster rank apart;
`--size`, as bench_async.py's: a kernel at another grid, e.g. dsmem_ring_2cta=66 for one
CTA an SM). `--defines` adds measurement switches (CONSAN_NULL_*: breakdown_async.py's
configurations). Measurements only: the stamps are a CTA's own words, unlike
CONSAN_PROFILE's counters that every CTA adds to, so the timing moves less (the TMA ring
0.233-0.254 ms stamped against 0.211-0.223 ms; the script prints the stamped build's ms
beside). The barrier stamps are made by the barrier probes: where a kernel's barriers run
inline (the GEMMs of 16-byte chunks: instrument/inline_barriers.py) there are none, and the
table goes from the begin probe to the first thread exit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks.bench_async import CASES  # noqa: E402
from benchmarks.bench_clean import _arch_options, _time, _time_device, size_overrides  # noqa: E402

WORDS = 48
PARTS = ("tensor: the look", "tensor: the box's write", "tensor: the verdict",
         "look: the lock", "look: the arrive it carries", "look: the landing and unlock",
         "look: entry and map look-up", "tensor: poll, groups, ballot",
         "a peer's posts applied (the drain)", "drain: waiting for the lock or the tail",
         "drain: applying posts", "begin: the leader's claim and resets",
         "begin: thread 0's share of the clears", "begin: thread 0 at the barrier after them",
         "leader: claiming a slot", "leader: the slot's generation")
KINDS = ("CTA barriers", "tensor copies", "mbarriers", "wgmma", "shared accesses",
         "bulk copies")
STAMP_CTAS = 4096  # measure.h: CS_STAMP_CTAS


def timeline(name: str, by_rank: int = 1, size: int | None = None) -> None:
    import cupy as cp
    import numpy as np

    import consan

    _, own, build = CASES[name]
    size = own if size is None else size
    ln = build(cp, size)
    p = consan.prepare(ln.source, ln.kernel, grid=ln.grid, block=ln.block,
                       shared_mem=ln.shared_mem, options=_arch_options(cp))
    ms = statistics.median(_time(cp, lambda: p.launch(ln.args), lambda: p.report(), 2, 5))
    native = cp.RawKernel(ln.source, ln.kernel, options=_arch_options(cp))
    dev_ms = statistics.median(_time_device(cp, lambda: p.launch(ln.args), p.report, 5))
    nat_ms = statistics.median(_time(cp, lambda: native(ln.grid, ln.block, ln.args,
                                                        shared_mem=ln.shared_mem),
                                     lambda: None, 2, 5))
    nat_dev = statistics.median(_time_device(
        cp, lambda: native(ln.grid, ln.block, ln.args, shared_mem=ln.shared_mem), lambda: None, 5))
    at = p.module.get_global_var("cs_stamps")
    cp.cuda.runtime.memset(at, 0, STAMP_CTAS * WORDS * 8)
    p.launch(ln.args)
    rep = p.report()
    st = np.zeros(STAMP_CTAS * WORDS, dtype=np.uint64)
    cp.cuda.runtime.memcpy(st.ctypes.data, at, st.nbytes, cp.cuda.runtime.memcpyDeviceToHost)
    ctas = int(np.prod(ln.grid))
    s = st.reshape(STAMP_CTAS, WORDS)[:ctas].astype(np.int64)
    ok = s[:, 1] > 0
    s = s[ok]

    total_cyc = s[:, 5] - s[:, 1]
    total_ns = s[:, 6] - s[:, 0]
    ghz = float(np.median(total_cyc / np.maximum(total_ns, 1)))
    t0, t1 = s[:, 0].min(), s[:, 6].max()
    print(f"\n{name}: {ctas} CTAs ({int(ok.sum())} stamped), stamped launch "
          f"{'clean' if rep.ok else 'NOT CLEAN'}; consan ms (this build) {ms:.3f}, the device's "
          f"alone {dev_ms:.3f}; native {nat_ms:.4f}, the device's alone {nat_dev:.4f}; "
          f"{ghz:.2f} cycles a ns")
    print(f"first begin to last exit {(t1 - t0) / 1e3:.1f} us; CTA begins spread over "
          f"{(s[:, 0].max() - t0) / 1e3:.1f} us, ends over {(t1 - s[:, 6].min()) / 1e3:.1f} us")
    groups = [("every CTA", s)] if by_rank < 2 else [
        (f"cluster rank {r}", s[np.flatnonzero(ok) % by_rank == r]) for r in range(by_rank)]
    for label, g in groups:
        if len(groups) > 1:
            print(f"\n{label} ({len(g)} CTAs):")
        _tables(g, ghz)


def _tables(s, ghz: float) -> None:
    """The timeline's tables for the CTAs of `s` (their stamps, a row each)."""
    def med(a) -> str:
        return f"{statistics.median(a.tolist()) / 1e3:.1f}k / {a.max() / 1e3:.1f}k"

    total_cyc = s[:, 5] - s[:, 1]
    print("| part (cycles, median / max over CTAs) | cycles | us at the median |")
    print("|---|---|---|")
    parts = [("begin probe", s[:, 2] - s[:, 1])]
    if (s[:, 3] > 0).all():
        parts += [("begin -> thread 0 past its first CTA barrier", s[:, 3] - s[:, 2]),
                  ("of it: thread 0's mbarrier inits", s[:, 7]),
                  *((f"begin -> warp {w} arrives at its first CTA barrier", s[:, 8 + w] - s[:, 2])
                    for w in range(4) if (s[:, 8 + w] > 0).all()),
                  ("that barrier -> the first thread exit", s[:, 4] - s[:, 3])]
    else:
        parts += [("begin -> the first thread exit", s[:, 4] - s[:, 2])]
    parts += [("first -> last thread exit", s[:, 5] - s[:, 4]), ("the CTA", total_cyc)]
    for label, a in parts:
        print(f"| {label} | {med(a)} | {statistics.median(a.tolist()) / ghz / 1e3:.1f} |")
    print("| lane 0's probes (median over CTAs) | warp 0: kcycles | calls | warp 1: kcycles | "
          "calls |")
    print("|---|---|---|---|---|")
    for k, label in enumerate(KINDS):
        cells = []
        for base in (12, 22):
            cyc = statistics.median(s[:, base + k].tolist()) / 1e3
            calls = statistics.median(s[:, base + 6 + k].tolist()) if k < 4 else None
            cells += [f"{cyc:.1f}", "-" if calls is None else f"{calls:.0f}"]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print("| thread 0's parts | kcycles (median over CTAs) |")
    print("|---|---|")
    for k, label in enumerate(PARTS):
        print(f"| {label} | {statistics.median(s[:, 32 + k].tolist()) / 1e3:.1f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="tma_ring_4stage,tma_wgmma_gemm,mma_gemm_cp_async,"
                                      "dsmem_ring_2cta")
    ap.add_argument("--defines", default="")
    ap.add_argument("--by-rank", type=int, default=1, metavar="N",
                    help="tables for each cluster rank apart (CTAs by linear index mod N)")
    ap.add_argument("--size", action="append", default=[], metavar="KERNEL=N",
                    help="a kernel's size other than its own (its grid: CTAs, M, or N^3)")
    args = ap.parse_args(argv)
    try:
        sizes = size_overrides(args.size, CASES)
    except ValueError as e:
        ap.error(str(e))
    os.environ["CONSAN_CHECKER_DEFINES"] = " ".join(["CONSAN_STAMPS", *args.defines.split()])
    for name in args.only.split(","):
        timeline(name, args.by_rank, sizes.get(name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
