#!/usr/bin/env python
"""The clustered ring's first cluster, tile by tile: when each CTA's warps enter and leave
their probes, on one time line.

    PYTHONPATH=. python benchmarks/evtrace_async.py [--tiles A:B] [--kernel dsmem_ring_2cta]

A checker built with CONSAN_EVTRACE (consan/checker/measure.h) logs the entry and the exit
of every CS_PROF scope (the probe kinds and their parts, breakdown_async.PROBES) with the
SM's clock, for the first eight warps of the grid's first two CTAs: the producer (cluster
rank 0) and the consumer (rank 1) of the first cluster. Each CTA's clock is taken from the
exit of its warp 0's begin probe, which both leave together (the cluster barrier the begin
ends with). Printed: per CTA and warp, the cycles and calls per top-level probe kind; then,
tile by tile, when the producer's last warp posted the tile (its `st.async` probes'
exits), when the consumer's warps came out of their successful wait on it, read it and
freed it (their arrive's probe), and when the producer's warps came out of their wait on
that stage's `empty` for the tile four later; with who held the consumer's mailbox
lock to apply each tile's posts. Measurements only: each event is a load and two stores to
device memory, so the times are longer than the plain build's.
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
from benchmarks.bench_clean import _arch_options  # noqa: E402
from benchmarks.breakdown_async import PROBES  # noqa: E402

N, WARPS = 8192, 8  # measure.h: CS_EV_N, CS_EV_WARPS
BEGIN, WAIT_OK, ACCESS, MBAR, BULK, DRAIN, LOCK, BAR = 13, 20, 0, 5, 6, 32, 34, 1
APPLY = (36, 37, 38)


def intervals(words) -> list[tuple[int, int, int, int]]:
    """(kind, entry, exit, depth) of a warp's scopes, from its events in order."""
    out, stack = [], []
    for v in words:
        v = int(v)
        t, leave, kind = v >> 16, (v >> 15) & 1, v & 0x7FFF
        if not leave:
            stack.append((kind, t))
            continue
        while stack and stack[-1][0] != kind:  # (a scope whose exit was not kept)
            stack.pop()
        if stack:
            k, t0 = stack.pop()
            out.append((k, t0, t, len(stack)))
    return sorted(out, key=lambda x: x[1])


def trace(name: str, tiles: tuple[int, int], by: str | None = None) -> None:
    import cupy as cp
    import numpy as np

    import consan

    _, size, build = CASES[name]
    ln = build(cp, size)
    p = consan.prepare(ln.source, ln.kernel, grid=ln.grid, block=ln.block,
                       shared_mem=ln.shared_mem, options=_arch_options(cp))
    p.launch(ln.args)
    p.report()
    ev, evn = p.module.get_global_var("cs_ev"), p.module.get_global_var("cs_evn")
    cp.cuda.runtime.memset(evn, 0, 2 * WARPS * 4)
    p.launch(ln.args)
    rep = p.report()
    words = np.zeros(2 * WARPS * N, dtype=np.uint64)
    counts = np.zeros(2 * WARPS, dtype=np.uint32)
    cp.cuda.runtime.memcpy(words.ctypes.data, ev, words.nbytes, cp.cuda.runtime.memcpyDeviceToHost)
    cp.cuda.runtime.memcpy(counts.ctypes.data, evn, counts.nbytes,
                           cp.cuda.runtime.memcpyDeviceToHost)
    words = words.reshape(2, WARPS, N)
    counts = counts.reshape(2, WARPS)
    print(f"{name}: launch {'clean' if rep.ok else 'NOT CLEAN'}; events kept per warp: "
          f"{counts.tolist()}")
    iv = {}
    for c in range(2):
        for w in range(WARPS):
            iv[c, w] = intervals(words[c, w, :counts[c, w]])
    for c in range(2):  # each CTA's clock from its warp 0's begin exit
        t0 = next(e for k, _, e, d in iv[c, 0] if k == BEGIN and d == 0)
        for w in range(WARPS):
            iv[c, w] = [(k, a - t0, b - t0, d) for k, a, b, d in iv[c, w]]

    if by:
        by_steps(iv, min(WARPS, ln.block[0] * ln.block[1] * ln.block[2] // 32), by, tiles)
        return
    print("\n| CTA | warp | top-level probe kind | calls | kcycles | cycles a call |")
    print("|---|---|---|---|---|---|")
    for c in range(2):
        for w in (0, 1, WARPS - 1):
            sums: dict[int, list[int]] = {}
            for k, a, b, d in iv[c, w]:
                if d == 0:
                    sums.setdefault(k, []).append(b - a)
            for k, xs in sorted(sums.items(), key=lambda kv: -sum(kv[1])):
                print(f"| {'producer' if c == 0 else 'consumer'} | {w} | {PROBES[k]} | "
                      f"{len(xs)} | {sum(xs) / 1e3:.1f} | {statistics.median(xs):.0f} |")

    def top(c: int, w: int, kind: int) -> list[tuple[int, int]]:
        """The warp's top-level calls of `kind` after its first cluster barrier (its
        arrive and wait: the mbarrier inits come before them)."""
        bars = [b for k, _, b, d in iv[c, w] if k == BAR and d == 0]
        start = bars[1] if len(bars) > 1 else 0
        return [(a, b) for k, a, b, d in iv[c, w] if k == kind and d == 0 and a > start]

    posted = [top(0, w, BULK) for w in range(WARPS)]      # the producer's st.async, a tile each
    armed = top(0, 0, MBAR)                                # thread 0's arming, a tile each
    freed_p = [top(0, w, WAIT_OK) for w in range(WARPS)]   # its waits on empty (tiles 4 on)
    waited = [top(1, w, WAIT_OK) for w in range(WARPS)]    # the consumer's waits on full
    read = [top(1, w, ACCESS) for w in range(WARPS)]
    freed = [top(1, w, MBAR) for w in range(WARPS)]        # its arrives on the producer's empty
    holds = []  # (warp, lock taken, drain's end, applies' cycles) of the consumer's drains
    for w in range(WARPS):
        ivs = iv[1, w]
        for k, a, b, _d in ivs:
            if k != DRAIN:
                continue
            inner = [(k2, a2, b2) for k2, a2, b2, _ in ivs if a <= a2 and b2 <= b]
            applied = sum(b2 - a2 for k2, a2, b2 in inner if k2 in APPLY)
            if applied:
                lock = max((b2 for k2, _, b2 in inner if k2 == LOCK), default=a)
                holds.append((w, lock, b, applied))
    holds.sort(key=lambda h: h[1])

    def at(lists, i, how=max):
        """The latest (`how`) exit of the warps' i-th calls in `lists`."""
        xs = [ls[i][1] for ls in lists if i < len(ls)]
        return how(xs) if xs else None

    print("\nkcycles from the begin; P = producer, C = consumer; 'C lock' = the consumer's "
          "drains that applied posts, entered (warp: lock taken -> end, applies' kcycles)")
    print("| tile | P armed | P posted (last warp) | C waits out (first / last) | C reads done "
          "| C freed (last arrive) | P empty waits out (tile + 4: first / last) | C lock |")
    print("|---|---|---|---|---|---|---|---|")
    lo, hi = tiles
    rows = []
    for i in range(lo, hi):
        row = [at([armed], i), at(posted, i),
               at(waited, i, how=min), at(waited, i), at(read, i), at(freed, i),
               at(freed_p, i, how=min), at(freed_p, i)]
        rows.append(row)
        hs = [h for h in holds if row[1] is not None and row[1] - 5000 <= h[1] <= (row[3] or 0)]
        cells = ["-" if x is None else f"{x / 1e3:.1f}" for x in row]
        print(f"| {i} | {cells[0]} | {cells[1]} | {cells[2]} / {cells[3]} | {cells[4]} | "
              f"{cells[5]} | {cells[6]} / {cells[7]} | "
              + ", ".join(f"w{w}: {a / 1e3:.1f}->{b / 1e3:.1f} ({ap / 1e3:.1f})"
                          for w, a, b, ap in hs) + " |")
    steps = [("P armed -> P posted", 0, 1), ("P posted -> C first wait out", 1, 2),
             ("C first -> last wait out", 2, 3), ("C last wait out -> reads done", 3, 4),
             ("C reads done -> C freed", 4, 5)]
    print("\n| step (medians over the tiles shown) | kcycles |")
    print("|---|---|")
    for label, a, b in steps:
        xs = [r[b] - r[a] for r in rows if r[a] is not None and r[b] is not None]
        if xs:
            print(f"| {label} | {statistics.median(xs) / 1e3:.1f} |")
    xs = [r[6] - r[5] for r in rows if r[5] is not None and r[6] is not None]
    if xs:
        print(f"| C freed (tile t) -> P first empty wait out (tile t + 4) | "
              f"{statistics.median(xs) / 1e3:.1f} |")
    xs = [rows[j + 4][0] - rows[j][7] for j in range(len(rows) - 4)
          if rows[j + 4][0] is not None and rows[j][7] is not None]
    if xs:
        print("| P last empty wait out -> P armed (tile t + 4) | "
              f"{statistics.median(xs) / 1e3:.1f} |")
    xs = [rows[j + 1][3] - rows[j][3] for j in range(len(rows) - 1)
          if rows[j][3] is not None and rows[j + 1][3] is not None]
    if xs:
        print(f"| a tile (C last wait out to the next) | {statistics.median(xs) / 1e3:.1f} |")


def by_steps(iv: dict, warps: int, by: str, rows: tuple[int, int]) -> None:
    """CTA 0's warps step by step: a step opens with each warp's i-th top-level call of
    kind `by`; printed, each warp's top-level calls of that step (kind, entry -> exit,
    kcycles from the begin), so where a warp waits shows as the gaps between them."""
    k_by = PROBES.index(by)
    lo, hi = rows
    starts = {w: [a for k, a, _, d in iv[0, w] if k == k_by and d == 0] for w in range(warps)}
    print(f"\nCTA 0, step by step (a step opens with each warp's call of '{by}'); kcycles "
          "from the begin")
    for i in range(lo, hi):
        for w in range(warps):
            st = starts[w]
            if i >= len(st):
                continue
            end = st[i + 1] if i + 1 < len(st) else float("inf")
            calls = [(k, a, b) for k, a, b, d in iv[0, w] if d == 0 and st[i] <= a < end]
            cells = ", ".join(f"{PROBES[k]} {a / 1e3:.1f}->{b / 1e3:.1f}" for k, a, b in calls)
            print(f"step {i} warp {w}: {cells}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="dsmem_ring_2cta")
    ap.add_argument("--tiles", default="16:32", help="the tiles to show, A:B")
    ap.add_argument("--steps", metavar="KIND",
                    help="instead: CTA 0's warps step by step, a step opening with each "
                         "warp's call of this probe kind (e.g. 'wgmma chain (a K step's "
                         "rows)' for the TMA + wgmma GEMM); --tiles gives the steps")
    args = ap.parse_args(argv)
    os.environ["CONSAN_CHECKER_DEFINES"] = " ".join(
        ["CONSAN_EVTRACE", *os.environ.get("CONSAN_CHECKER_DEFINES", "").split()])
    a, b = (int(x) for x in args.tiles.split(":"))
    trace(args.kernel, (a, b), args.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
