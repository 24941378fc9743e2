#!/usr/bin/env python
"""What a consan build costs once the checker is cached: parse, instrument, link.

    PYTHONPATH=. python benchmarks/bench_build.py [--top N] [--repeats R] [--json PATH]

For the N largest PTX modules of the corpus (tests/corpus: the compiled .cu variants
and Triton's PTX), each step is timed R times in this process with the checker objects
already built (their on-disk cache is warmed first), the link cache bypassed and each
link's input made distinct (a comment line), so the link is nvJitLink's real work. The
link is the one a checked launch of 256 threads a CTA asks for (runtime.first_link: the
phase-mode checker with its tables in shared memory, the vector-clock one with its
buffer tables there, or the device-memory one); a launch proven race-free before it
links nothing. Beside it, in the same loop, the module's own link as its user's build
makes it (no checker): this host's speed at the kernels themselves (the build moved by
up to 1.7x between calls of one machine). Needs no GPU. The target: a build of the
largest module in at most 0.5 s.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TARGET_S = 0.5
THREADS = 256  # (a launch's block: the phase-mode checker's register cap follows it)


def modules() -> list[tuple[str, str]]:
    from tests import corpus_build as cb

    out = [(v.label, ptx) for v, ptx in cb.corpus_modules()]
    out += [(f"triton/{p.stem}", p.read_text())
            for p in sorted((cb.CORPUS_DIR / "triton").glob("*.ptx"))]
    return out


def _distinct(ptx: str) -> str:
    """The PTX with a comment line no other link had (nvJitLink gives a repeated input's
    cubin back without assembling it)."""
    return f"{ptx}\n// bench_build {uuid.uuid4()}\n"


def time_build(label: str, ptx: str, repeats: int) -> dict:
    from consan import runtime, toolchain
    from instrument.ptx import parse
    from instrument.rewrite import instrument

    arch = toolchain.Arch.parse("sm_90a")
    # (an untimed build first: it builds any checker object the module's kind needs beyond
    # the four warmed in main, e.g. a cluster module's, 8.8 s on the H100 machine)
    ins = instrument(parse(ptx, label.replace("/", "-") + ".ptx"))
    toolchain.link_with_checker(ins, "warm.ptx", arch, **runtime.first_link(ins, THREADS))
    steps: dict[str, list[float]] = {"parse": [], "instrument": [], "link": []}
    native: list[float] = []
    for _ in range(repeats):
        # (the module as its user's own build links it, no checker, in the same loop: what
        # this host's ptxas takes for the kernels themselves)
        t0 = time.perf_counter()
        toolchain.link([(label, _distinct(ptx))], arch, toolchain.split_options(ptx))
        native.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        mod = parse(ptx, label.replace("/", "-") + ".ptx")
        t1 = time.perf_counter()
        ins = instrument(mod)
        t2 = time.perf_counter()
        # (a distinct input each time: on the H100 machine nvJitLink gave a repeated input's
        # cubin back in 0.003 s against 0.35 s for its first link of it, in one process)
        ins = dataclasses.replace(ins, ptx=_distinct(ins.ptx))
        # (the one checker build a launch links: runtime.Prepared asks for no other first)
        cubin = toolchain.link_with_checker(ins, mod.name, arch,
                                            **runtime.first_link(ins, THREADS))
        t3 = time.perf_counter()
        assert cubin[:4] == b"\x7fELF", "nvJitLink gave no cubin"
        for k, dt in zip(steps, (t1 - t0, t2 - t1, t3 - t2), strict=True):
            steps[k].append(dt)
    med = {k: statistics.median(v) for k, v in steps.items()}
    return {"module": label, "ptx_bytes": len(ptx), "checker": checker_name(ins),
            "instrumented_ptx_bytes": len(ins.ptx), "cubin_bytes": len(cubin),
            "link_s_each": steps["link"], "native_link_s": statistics.median(native),
            **{f"{k}_s": v for k, v in med.items()}, "build_s": sum(med.values())}


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU ?"


def checker_name(ins) -> str:
    from consan import runtime

    how = runtime.first_link(ins, THREADS)
    return f"psh cap {how['max_regs']}" if how.get("psh") else "vsh" if how["vsh"] else "device"


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
    from consan import runtime

    cap = runtime.psh_max_regs(THREADS)
    for psh, vsh, phase, regs in ((False, False, False, 0), (True, False, False, cap),
                                  (False, True, False, 0), (False, False, True, 0)):
        toolchain.checker_object(arch, psh=psh, vsh=vsh, cap=regs, phase=phase)  # cached
    warm = time.perf_counter() - t0
    chosen = sorted(modules(), key=lambda m: -len(m[1]))[: a.top]
    rows = [time_build(label, ptx, a.repeats) for label, ptx in chosen]
    print("module | PTX bytes | checker linked | parse s | instrument s | link s | build s | "
          "native link s | build / native link")
    for r in rows:
        print(f"{r['module']} | {r['ptx_bytes']} | {r['checker']} | {r['parse_s']:.3f} | "
              f"{r['instrument_s']:.3f}"
              f" | {r['link_s']:.3f} | {r['build_s']:.3f} | {r['native_link_s']:.3f} | "
              f"{r['build_s'] / r['native_link_s']:.1f}")
    worst = max(rows, key=lambda r: r["build_s"])
    print(f"\nmachine: {cpu_name()}, {os.cpu_count()} CPUs; Python {sys.version.split()[0]}; "
          f"nvJitLink {toolchain.nvjitlink_version()}")
    print(f"\nchecker objects built in {warm:.1f} s (once per version and arch); largest build "
          f"{worst['build_s']:.3f} s ({worst['module']}); target {TARGET_S} s: "
          f"{'met' if worst['build_s'] <= TARGET_S else 'not met'}")
    if a.json:
        Path(a.json).write_text(json.dumps({"rows": rows, "checker_build_s": warm,
                                            "cpu": cpu_name(), "cpus": os.cpu_count()},
                                           indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
