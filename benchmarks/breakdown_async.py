#!/usr/bin/env python
"""Where consan's time goes on the kernels of bench_async.py and bench_clean.py.

    PYTHONPATH=. python benchmarks/breakdown_async.py [--only K1,K2] [--repeats N]

Each configuration builds the checker with parts of it switched off
(CONSAN_CHECKER_DEFINES, for measurement only: the model is wrong in those builds) and
times the same consan launch in its own process (CUDA events, median). "resets only"
times what a launch does besides the kernel (zeroing the log and the slot table).
--profile instead prints, per probe kind, the cycles it took per CTA (CONSAN_PROFILE).
--spin N instead makes every call of one probe kind N cycles longer at a time
(CONSAN_SPIN_<KIND>: the model is unchanged) and times each kernel by the device's time
alone: the time it adds, in calls of N cycles, is how many calls of that kind lie on the
kernel's critical path (a CTA's longest chain of probes), where the profile says how
many each warp makes.
The bench_clean kernels (phase mode) take the phase-mode configurations (--clean: those
kernels, at their bench_clean sizes unless --size is given).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks.bench_async import CASES  # noqa: E402
from benchmarks.bench_clean import _arch_options, _time  # noqa: E402

CONFIGS = {
    "full": "",
    "no copy-engine writes": "CONSAN_NULL_ENGINE_WRITE",
    "no box stores": "CONSAN_NULL_BOX_STORES",
    "no box stores or rechecks": "CONSAN_NULL_BOX_STORES CONSAN_NULL_BOX_RECHECK",
    "no access probes": "CONSAN_NULL_ACCESS",
    "neither": "CONSAN_NULL_ENGINE_WRITE CONSAN_NULL_ACCESS",
    # the floor: every access, mbarrier (but init and inval), tensor, wgmma and bulk copy
    # probe (st.async's included: nothing is posted to a peer) returns at once, so what is
    # left is the calls themselves (and the registers saved around them), the CTA and
    # cluster barriers' probes, a CTA's begin and end, and the cp.async groups.
    # (The mbarrier probes alone switched off would leave waits acquiring nothing, and the
    # false findings' records would be timed.)
    "no async probes": "CONSAN_NULL_MBAR CONSAN_NULL_TENSOR CONSAN_NULL_ACCESS CONSAN_NULL_WGMMA "
                       "CONSAN_NULL_BULK",
    # with the access probes off, one async probe kind off more: which of them the
    # kernel's critical path runs through, and what each could save at most
    "no access or tensor probes": "CONSAN_NULL_ACCESS CONSAN_NULL_TENSOR",
    "no access or mbarrier probes": "CONSAN_NULL_ACCESS CONSAN_NULL_MBAR",
    "no access or wgmma probes": "CONSAN_NULL_ACCESS CONSAN_NULL_WGMMA",
    # the bound of a copy's box kept as one record (no walk of its granules) read by warps
    # and wgmma units through that record (no probe body): what is left is the mbarrier
    # probes, a tensor load's look (its entry, map, carried arrive and landing) and the calls
    "no copy-engine writes nor access or wgmma probes":
        "CONSAN_NULL_ENGINE_WRITE CONSAN_NULL_ACCESS CONSAN_NULL_WGMMA",
    # the reads of warps and wgmma units in the shared-memory tables without their sites'
    # stores (device memory), without the fence between publishing and looking, or both:
    # what a read's site kept elsewhere, or a read judged without that fence, could save
    # an mbarrier init's clock slots not emptied: what that costs a CTA whose inits run
    # before its first barrier
    "no init slots": "CONSAN_NULL_INIT_SLOTS",
    # an arrive's clock release into its phase's slot, and a box write's readers' pass
    # (their summaries), each left out: what the part costs the kernel's path in the build
    # that runs (the profile build's scopes inflate a part)
    "no arrive releases": "CONSAN_NULL_ARRIVE_RELEASE",
    "no copy readers": "CONSAN_NULL_COPY_READERS",
    "no read sites": "CONSAN_NULL_READ_SITES",
    "no read fences": "CONSAN_NULL_READ_FENCE",
    "no read sites nor fences": "CONSAN_NULL_READ_SITES CONSAN_NULL_READ_FENCE",
    # the 16-byte access probe's reads (ldmatrix, v4 loads) return at once: what an inline
    # read path that never called could save at most
    "no 16-byte reads": "CONSAN_NULL_READ16",
    # no probe at all for reads (for every access): the bound of an inline path that never
    # calls, the calls' cost included (REWRITE_ENV)
    "no read calls": "",
    "no access calls": "",
    # a peer's copies written by their issuing warp instead of their owner (an estimate:
    # the owner lands them only, the issuer spends N cycles a post; measure.h)
    "peer copies by their issuer (0 cycles)": "CONSAN_PEER_BY_ISSUER=0",
    "peer copies by their issuer (2000 cycles)": "CONSAN_PEER_BY_ISSUER=2000",
    "peer copies by their issuer (4000 cycles)": "CONSAN_PEER_BY_ISSUER=4000",
    "peer copies by their issuer (8000 cycles)": "CONSAN_PEER_BY_ISSUER=8000",
}
REWRITE_ENV = {"no read calls": {"CONSAN_MEASURE_SKIP_ACCESS": "read"},
               "no access calls": {"CONSAN_MEASURE_SKIP_ACCESS": "all"}}
# configurations a kernel is not run in, and why (said in the table)
NOT_FOR: dict[str, dict[str, str]] = {}
PHASE_CONFIGS = {  # (phase mode, tables in shared memory: measure.h)
    "full": "",
    "no access probes": "CONSAN_NULL_ACCESS",
    "no reads": "CONSAN_PSH_NULL_READ",
    "no fences in the access probe": "CONSAN_PSH_NO_FENCE",
    "no read calls": "",  # (REWRITE_ENV)
    "no access calls": "",
}


def _clean_case(name: str):
    """A bench_clean kernel as a bench_async case: (label, default size, build)."""
    from benchmarks import bench_clean
    from benchmarks.bench_async import Launch

    def build(cp, size) -> Launch:
        s = bench_clean.K.clean_setup(name, size, cp, seed=1234)
        args, outputs = s.make_args(cp)
        return Launch(s.source, s.name, s.grid, s.block, args, outputs, s.shared_mem)

    return (name, bench_clean.FULL_SIZES[name], build)


def cases(clean: bool) -> dict:
    if clean:
        from benchmarks.bench_clean import ORDER
        return {n: _clean_case(n) for n in ORDER}
    return CASES


PROBES = ("access", "bar_arrive", "bar_wait", "thread_exit", "async", "mbar", "bulk",
          "bulk_store", "bulk_group", "wgmma", "wgmma_group", "tensor", "mbar failed wait",
          "cta_begin", "(access: slow path)", "(access: slow path, tables)",
          "mbar (lanes marked off)",
          "(tensor: map lookup)", "(tensor: the copy's write)", "(mbar: taking the lock)",
          "mbar successful wait", "(mbar: under the lock)", "(copy, one lane: epochs)",
          "(copy, one lane: fence, readers' clocks)", "(copy, one lane: readers)",
          "(tensor: the look, its bytes and phase)", "(tensor: after the copy's write)",
          "(tensor: the verdict)", "(tensor look: the mbarrier's entry)",
          "(tensor look: taking the lock)", "(tensor look: the carried arrive)",
          "(tensor look: the bytes landing, the unlock)", "(mailbox: a drain)",
          "(mailbox: a post, waiting for room included)", "(drain: taking the lock)",
          "(drain: waiting for a post's last word)", "(drain: a peer's mbarrier operation)",
          "(drain: a peer's DSMEM access)", "(drain: a peer's copy)",
          "(peer's copy: the issuer's view)", "(peer's copy: the copy's write)",
          "(peer's copy: its record, its bytes landing)",
          "(unused: a drain acquires a post, no fence)",
          "(access16: reads)", "(access16: writes)", "wgmma chain (a K step's rows)",
          "(read: publish)", "(read: box summary)", "(read: fence)", "(read: judge)",
          "(box write: summary look)", "(box write: stores)", "(box write: fence, recheck)",
          "(box write: clocks)", "(copy, lanes: epochs)", "(copy, lanes: fence, readers' clocks)",
          "(copy, lanes: readers)", "(peer's copies: each one's finding)",
          "(wgmma chain: sites)", "(wgmma chain: bytes)", "(wgmma chain: fence)",
          "(wgmma chain: look)", "mbar init", "(init: the entry's look)",
          "(mbar, not init: the entry's look)", "(init: under the lock)",
          "(init: the slots emptied)", "(init: the verdict)", "(mbar, not init: the verdict)",
          "mbar init run")
PROF_WORDS = 512  # measure.h's CS_PROF_WORDS: even cluster ranks, then odd ranks; the last
# word: posts that found a mailbox full


def apply_abi(pairs: str | None) -> None:
    """NAME=INT,... set on instrument.abi before anything is built (measurements only:
    e.g. MB_WAIT_SAMPLE=1, MAILBOX_ENTRIES=256); the checker's cache key covers the header."""
    from instrument import abi

    items = [item.split("=") for item in (pairs or "").split(",") if item]
    for name, value in items:
        setattr(abi, name, int(value))
    if items:  # (what depends on them)
        abi.MAILBOX_BYTES = 4 * (abi.MAILBOX_HEAD_WORDS + abi.MAILBOX_ENTRIES *
                                 abi.MAILBOX_POST_WORDS + abi.MAILBOX_VIEW_WORDS)


def profile(name: str, size=None, clean: bool = False) -> None:
    """One launch of a checker built with CONSAN_PROFILE: cycles per probe kind."""
    import cupy as cp

    import consan

    _, default, build = cases(clean)[name]
    ln = build(cp, size or default)
    p = consan.prepare(ln.source, ln.kernel, grid=ln.grid, block=ln.block,
                       shared_mem=ln.shared_mem, options=_arch_options(cp))
    rep = profiled_launch(p, ln.args, ln.grid[0] * ln.grid[1] * ln.grid[2])
    print(f"report: {rep.summary}")


def profiled_launch(p, args: tuple, ctas: int):
    """A warm-up launch of `p` (built with CONSAN_PROFILE), then one with the counters
    cleared, whose counters are printed per CTA of `ctas`; returns that launch's report."""
    p.launch(args)
    p.report()
    zero_profile(p)
    p.launch(args)
    rep = p.report()
    print_profile(p, ctas, rep.header.get("walked", 0))
    return rep


def profile_build() -> None:
    """Checkers built from here on count cycles per probe kind (CONSAN_PROFILE)."""
    os.environ["CONSAN_CHECKER_DEFINES"] = " ".join(
        ["CONSAN_PROFILE", *os.environ.get("CONSAN_CHECKER_DEFINES", "").split()])


def zero_profile(p) -> None:
    """Clear the profile counters of a Prepared launch built with CONSAN_PROFILE."""
    import cupy as cp

    cp.cuda.runtime.memset(p.module.get_global_var("cs_prof"), 0, PROF_WORDS * 8)
    cp.cuda.runtime.memset(p.module.get_global_var("cs_prof_part"), 0, PROF_WORDS // 4 * 8)


def print_profile(p, ctas: int, walked: int) -> None:
    """The counters of a Prepared launch built with CONSAN_PROFILE, per CTA of `ctas`."""
    import cupy as cp
    import numpy as np

    prof = np.zeros(PROF_WORDS, dtype=np.uint64)
    cp.cuda.runtime.memcpy(prof.ctypes.data, p.module.get_global_var("cs_prof"),
                           PROF_WORDS * 8, cp.cuda.runtime.memcpyDeviceToHost)
    print(f"granules walked by copies: {walked} (the rest: stores only)")
    half = PROF_WORDS // 2
    odd = prof[half:2 * half - 1].any()
    print("probe | calls per CTA | kcycles per CTA | cycles per call" +
          (" | even ranks: kcycles per CTA | odd ranks: kcycles per CTA" if odd else ""))
    for k, label in enumerate(PROBES):
        ev, od = prof[2 * k:2 * k + 2], prof[half + 2 * k:half + 2 * k + 2]
        cyc, calls = int(ev[0] + od[0]), int(ev[1] + od[1])
        if calls:  # (odd: the CTAs split evenly between even and odd ranks)
            split = f" | {2 * int(ev[0]) / ctas / 1e3:.1f} | {2 * int(od[0]) / ctas / 1e3:.1f}"
            print(f"{label} | {calls / ctas:.1f} | {cyc / ctas / 1e3:.1f} | {cyc / calls:.0f}" +
                  (split if odd else ""))
    print(f"posts that found a mailbox full, per CTA: {int(prof[PROF_WORDS - 1]) / ctas:.1f}")
    part = np.zeros(PROF_WORDS // 4, dtype=np.uint64)
    cp.cuda.runtime.memcpy(part.ctypes.data, p.module.get_global_var("cs_prof_part"),
                           part.nbytes, cp.cuda.runtime.memcpyDeviceToHost)
    # (a probe's own scopes in brackets are run by the lanes its work needs: part of a
    # warp there is its design; a probe called by part of a warp is the kernel's branch
    # or a warp split: docs/model.md, *Probes called from a branch*)
    print("calls by part of a warp, per CTA: " + (", ".join(
        f"{PROBES[k]} {int(n) / ctas:.1f}" for k, n in enumerate(part[:len(PROBES)]) if n)
        or "none"))


def child(name: str, repeats: int, size=None, clean: bool = False) -> None:
    import cupy as cp

    import consan

    _, default, build = cases(clean)[name]
    ln = build(cp, size or default)
    p = consan.prepare(ln.source, ln.kernel, grid=ln.grid, block=ln.block,
                       shared_mem=ln.shared_mem, options=_arch_options(cp))
    ms = _time(cp, lambda: p.launch(ln.args), lambda: p.report(sync=False), 2, repeats)
    resets = _time(cp, lambda: p.launch_resets(ln.args), lambda: p.report(sync=False), 2,
                   repeats)
    native = cp.RawKernel(ln.source, ln.kernel, options=_arch_options(cp))
    nat = _time(cp, lambda: native(ln.grid, ln.block, ln.args, shared_mem=ln.shared_mem),
                lambda: None, 3, 20)
    print(f"CHILD {statistics.median(ms)} {statistics.median(resets)} {statistics.median(nat)}",
          flush=True)


# --spin: the probe kinds, and the define that lengthens each (consan/checker/measure.h)
SPIN_KINDS = {"tensor load's look": "TENSOR", "wgmma": "WGMMA",
              "mbarrier op (not a wait)": "MBAR", "mbarrier init": "INIT",
              "successful wait": "WAIT",
              "shared access": "ACCESS", "CTA barrier arrival": "BAR"}


def spin_child(names: list[str]) -> None:
    """Each kernel's consan launch by the device's time alone, and whether it stayed clean."""
    import cupy as cp

    import consan
    from benchmarks.bench_clean import _time_device

    for name in names:
        _, size, build = cases(False)[name]
        ln = build(cp, size)
        p = consan.prepare(ln.source, ln.kernel, grid=ln.grid, block=ln.block,
                           shared_mem=ln.shared_mem, options=_arch_options(cp))
        p.launch(ln.args)
        found = len(p.report().violations)
        ms = statistics.median(_time_device(cp, lambda p=p, a=ln.args: p.launch(a), p.report, 7))
        print(f"SPIN {name} {ms} {found}", flush=True)


def _spin_child_run(names: list[str], defines: str) -> str:
    """A --spin child's output: every kernel of `names` in a checker built with `defines`."""
    env = {**os.environ, "PYTHONPATH": ROOT, "CONSAN_CHECKER_DEFINES": defines}
    res = subprocess.run([sys.executable, os.path.abspath(__file__), "--spin-child",
                          ",".join(names)], capture_output=True, text=True, env=env, timeout=300)
    return res.stdout + res.stderr


def _clock_khz() -> int:
    import cupy as cp

    return cp.cuda.runtime.getDeviceProperties(0)["clockRate"]


def spin(names: list[str], cycles: int, kinds: list[str] | None = None,
         run_child=_spin_child_run, khz: int | None = None, rank: int | None = None) -> int:
    """The --spin table: one child (one checker build) per configuration, every kernel in it
    (`kinds`: only those of SPIN_KINDS' defines, e.g. ACCESS,BAR; `rank`: only the CTAs of
    that cluster rank spin). Non-zero if a child gave no time for every kernel, or a kernel
    had findings (the spins change no model)."""
    khz = khz or _clock_khz()
    print(f"kernel | probe lengthened by {cycles} cycles | dev consan ms | added us | "
          f"calls on the critical path (at {khz / 1e6:.2f} GHz)")
    base: dict[str, float] = {}
    failed = 0
    todo = {k: v for k, v in SPIN_KINDS.items() if not kinds or v in kinds}
    for label, kind in {"none (full)": "", **todo}.items():
        only = f" CONSAN_SPIN_RANK={rank}" if rank is not None else ""
        out = run_child(names, f"CONSAN_SPIN_{kind}={cycles}{only}" if kind else "")
        rows = [x.split()[1:] for x in out.splitlines() if x.startswith("SPIN ")]
        if len(rows) != len(names):
            failed += 1
            tail = out.strip().splitlines()[-2:]
            print(f"- | {label} | failed: {' | '.join(tail)}", flush=True)
            continue
        for name, ms, found in rows:
            t = float(ms)
            if int(found):
                failed += 1
                print(f"{name} | {label} | {t:.4f} | ERROR: {found} findings on a clean "
                      "kernel", flush=True)
                continue
            if not kind:
                base[name] = t
                print(f"{name} | {label} | {t:.4f} | - | -", flush=True)
                continue
            add = (t - base[name]) * 1e3 if name in base else float("nan")
            print(f"{name} | {label} | {t:.4f} | {add:.1f} | "
                  f"{add * khz / 1e3 / cycles:.1f}", flush=True)
    return 1 if failed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", metavar="K1,K2")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--configs", metavar="C1,C2",
                    help=f"subset of: {', '.join(CONFIGS)} (--clean: {', '.join(PHASE_CONFIGS)})")
    ap.add_argument("--profile", action="store_true",
                    help="cycles per probe kind instead (checker built with CONSAN_PROFILE)")
    ap.add_argument("--size", help="the case's size (default: its own), e.g. 1024 or 512,512,512")
    ap.add_argument("--clean", action="store_true",
                    help="bench_clean's kernels, with the phase-mode configurations")
    ap.add_argument("--abi", metavar="NAME=INT,...",
                    help="override instrument.abi constants (measurement only)")
    ap.add_argument("--spin", type=int, metavar="N",
                    help="each probe kind N cycles longer in turn: its calls on the critical "
                         "path (device time alone)")
    ap.add_argument("--kinds", metavar="K1,K2",
                    help=f"--spin: only these kinds ({', '.join(SPIN_KINDS.values())})")
    ap.add_argument("--rank", type=int, metavar="R",
                    help="--spin: only the CTAs of this cluster rank spin")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--spin-child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    apply_abi(args.abi)
    from benchmarks.bench_clean import _parse_size

    size = _parse_size(args.size) if args.size else None
    table = cases(args.clean)
    names = [n for n in table if not args.only or n in args.only.split(",")]
    if args.spin_child:
        spin_child(args.spin_child.split(","))
        return 0
    if args.spin:
        return spin(names, args.spin, args.kinds.split(",") if args.kinds else None,
                    rank=args.rank)
    if args.profile:
        profile_build()
        for name in names:
            print(f"[{name}]", flush=True)
            profile(name, size, args.clean)
        return 0
    if args.child:
        child(args.child, args.repeats, size, args.clean)
        return 0
    print("kernel | configuration | consan ms | x native | resets only ms")
    for name in names:
        for label, defines in (PHASE_CONFIGS if args.clean else CONFIGS).items():
            if args.configs and label not in args.configs.split(","):
                continue
            why = NOT_FOR.get(label, {}).get(name)
            if why:
                print(f"{name} | {label} | not run: {why}", flush=True)
                continue
            env = {**os.environ, "PYTHONPATH": ROOT, "CONSAN_CHECKER_DEFINES": defines,
                   **REWRITE_ENV.get(label, {})}
            extra = (["--size", args.size] if args.size else []) + \
                (["--abi", args.abi] if args.abi else []) + (["--clean"] if args.clean else [])
            try:
                res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name,
                                      "--repeats", str(args.repeats), *extra],
                                     capture_output=True, text=True, env=env, timeout=120)
            except subprocess.TimeoutExpired:
                print(f"{name} | {label} | timed out after 120 s", flush=True)
                continue
            line = next((x for x in res.stdout.splitlines() if x.startswith("CHILD ")), None)
            if line is None:
                tail = (res.stdout + res.stderr).strip().splitlines()[-2:]
                print(f"{name} | {label} | failed: {' | '.join(tail)}", flush=True)
                continue
            ms, resets, nat = map(float, line.split()[1:])
            print(f"{name} | {label} | {ms:.3f} | {ms / nat:.1f} | {resets:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
