#!/usr/bin/env python
"""What a consan build costs once the checker is cached: parse, instrument, link.

    PYTHONPATH=. python benchmarks/bench_build.py [--top N] [--repeats R] [--json PATH]

For the N largest PTX modules of the corpus (tests/corpus: the compiled .cu variants
and Triton's PTX), each step is timed R times in this process with the checker object
already built (its on-disk cache is warmed first) and the link cache off (a fresh
CONSAN_CACHE per run), so the link is nvJitLink's real work. Needs no GPU. The target:
a build of the largest module in at most 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TARGET_S = 0.5


def modules() -> list[tuple[str, str]]:
    from tests import corpus_build as cb

    out = [(v.label, ptx) for v, ptx in cb.corpus_modules()]
    out += [(f"triton/{p.stem}", p.read_text())
            for p in sorted((cb.CORPUS_DIR / "triton").glob("*.ptx"))]
    return out


def time_build(label: str, ptx: str, repeats: int) -> dict:
    from consan import toolchain
    from instrument.ptx import parse
    from instrument.rewrite import instrument

    arch = toolchain.Arch.parse("sm_90a")
    steps: dict[str, list[float]] = {"parse": [], "instrument": [], "link": []}
    for _ in range(repeats):
        t0 = time.perf_counter()
        mod = parse(ptx, label.replace("/", "-") + ".ptx")
        t1 = time.perf_counter()
        ins = instrument(mod)
        t2 = time.perf_counter()
        toolchain.link_with_checker(ins, mod.name, arch)
        t3 = time.perf_counter()
        for k, dt in zip(steps, (t1 - t0, t2 - t1, t3 - t2), strict=True):
            steps[k].append(dt)
    med = {k: statistics.median(v) for k, v in steps.items()}
    return {"module": label, "ptx_bytes": len(ptx), **{f"{k}_s": v for k, v in med.items()},
            "build_s": sum(med.values())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=3,
                    help="how many of the largest modules (by PTX bytes; 200: all of them)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", metavar="PATH")
    a = ap.parse_args(argv)
    os.environ["CONSAN_CACHE"] = tempfile.mkdtemp(prefix="consan-bench-build-")

    from consan import toolchain

    arch = toolchain.Arch.parse("sm_90a")
    t0 = time.perf_counter()
    for psh, vsh, phase in ((False, False, False), (True, False, False), (False, True, False),
                            (False, False, True)):
        toolchain.checker_object(arch, psh=psh, vsh=vsh, phase=phase)  # built once, cached
    warm = time.perf_counter() - t0
    chosen = sorted(modules(), key=lambda m: -len(m[1]))[: a.top]
    rows = [time_build(label, ptx, a.repeats) for label, ptx in chosen]
    print("module | PTX bytes | parse s | instrument s | link s | build s")
    for r in rows:
        print(f"{r['module']} | {r['ptx_bytes']} | {r['parse_s']:.3f} | {r['instrument_s']:.3f}"
              f" | {r['link_s']:.3f} | {r['build_s']:.3f}")
    worst = max(rows, key=lambda r: r["build_s"])
    print(f"\nchecker objects built in {warm:.1f} s (once per version and arch); largest build "
          f"{worst['build_s']:.3f} s ({worst['module']}); target {TARGET_S} s: "
          f"{'met' if worst['build_s'] <= TARGET_S else 'not met'}")
    if a.json:
        Path(a.json).write_text(json.dumps({"rows": rows, "checker_build_s": warm}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
