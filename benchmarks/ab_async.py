#!/usr/bin/env python
"""An older commit's checker beside this tree's on bench_async's kernels, in one run.

    python benchmarks/ab_async.py prepare [REF] [--dest DIR]  # here: REF's tree into ab_old/
    PYTHONPATH=. python3 benchmarks/ab_async.py run [--only K1,K2] [--rounds N] [--json PATH]
        [--old DIR] [--new DIR]                                # trees other than the default pair
        [--alone]                                              # each kernel a process of its own

`prepare` writes REF's tree (`git archive`, default HEAD) into ab_old/ at the repository
root: untracked and not ignored, so the device tool carries it with the working tree (the
device copy's .git may name an older commit, so the archive is made here). Delete it
after the run.

`run`, on the GPU machine, times the kernels with `bench_async.py --no-racecheck` in each
tree in turn, old then new, `--rounds` times (one process per tree and round: each builds
its own checker), and prints a row per kernel: every round's consan ms old and new, the
medians and new / old; then the same for bench_async's dev columns (each launch behind a
spin kernel: the device's time alone, without the host's launch path in the events).
Speed changes are judged this way because two calls of the device tool may land on
machines, or hours, whose times differ by more than the change. A round
whose bench_async run failed (no output, or a launch not clean or not bit-exact: the
script refuses a ratio then) is an error: its output is printed and the exit status is 1.
A tree whose runs were stopped at `--timeout` in two rounds in a row (a kernel that hangs;
one stop may be a first run's checker build on a fresh machine) is not run again in the
rounds after: each would wait out the whole timeout again.

`run --alone` runs each kernel of `--only` in a process of its own (per tree and round),
where by default one process runs them all in bench_async's order: a kernel's time
depends on what its process loaded and ran before it, and which of two trees is faster
may depend on it too. On an H200 (benchmarks/load_order.py, three processes each, steady
within 1%) the TMA ring of 76a7df9 ran at 0.1278 ms alone and 0.1244 after the cp.async
GEMM, that of d7ff578 at 0.1238 alone and 0.1295 after it. A change is judged in more
than one context, then: by default and --alone, or with load_order.py.

`run --profile` then runs `breakdown_async.py --profile` (a checker build that counts each
probe kind's cycles) once in each tree and prints, per kernel and probe kind, the calls a
CTA and the cycles a call, old and new, side by side: which probe a change moved, in the
same call as the timings. A tree whose profile printed no row is an error too.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OLD = os.path.join(ROOT, "ab_old")


def prepare(ref: str, dest: str = OLD) -> str:
    """REF's tree, from this repository's git, into `dest` (replaced if there)."""
    res = subprocess.run(["git", "-C", ROOT, "archive", "--format=tar", ref],
                         capture_output=True)
    if res.returncode:
        raise SystemExit(f"ab_async: git archive {ref} failed: "
                         f"{res.stderr.decode(errors='replace').strip()}")
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    with tarfile.open(fileobj=io.BytesIO(res.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def _child(tree: str, script: str, args: list[str], timeout: float,
           extra: dict[str, str] | None = None) -> tuple[bool, str]:
    """benchmarks/`script` run in `tree` (its own package on PYTHONPATH, `extra` added to
    its environment): whether it exited 0, and its output."""
    cmd = [sys.executable, os.path.join(tree, "benchmarks", script)] + args
    env = {**os.environ, **(extra or {}), "PYTHONPATH": tree}
    try:
        res = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True,
                             timeout=timeout)
        return res.returncode == 0, res.stdout + res.stderr
    except subprocess.TimeoutExpired as e:
        return False, f"timed out after {timeout:.0f} s\n{e.stdout or ''}"


def _round(tree: str, only: str | None, timeout: float,
           extra: dict[str, str] | None = None) -> tuple[dict | None, str]:
    """One bench_async run in `tree` (with `extra` in its environment): its JSON (None if it
    failed) and its output (which starts "timed out" where the run was stopped)."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    ok, out = _child(tree, "bench_async.py",
                     ["--no-racecheck", "--json", path] + (["--only", only] if only else []),
                     timeout, extra)
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        data = None
    finally:
        os.unlink(path)
    return (data if ok and data and not data.get("errors") else None), out


def _profile(tree: str, only: str | None, timeout: float,
             extra: dict[str, str] | None = None) -> tuple[dict, str]:
    """`breakdown_async.py --profile` in `tree`: {kernel: {probe: (calls a CTA, cycles a
    call)}} from its table rows, and its output."""
    _, out = _child(tree, "breakdown_async.py",
                    ["--profile"] + (["--only", only] if only else []), timeout, extra)
    return parse_profile(out), out


def parse_profile(out: str) -> dict[str, dict[str, tuple[float, float]]]:
    """The rows `probe | calls per CTA | kcycles per CTA | cycles per call` under each
    `[kernel]` line of a breakdown_async.py --profile output (a cluster kernel's rows add
    two columns, kcycles per CTA by cluster rank: not kept)."""
    prof: dict[str, dict[str, tuple[float, float]]] = {}
    kernel = None
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            kernel = line[1:-1]
            continue
        cells = [c.strip() for c in line.split("|")]
        if kernel is None or len(cells) not in (4, 6):
            continue
        try:
            calls, cycles = float(cells[1]), float(cells[3])
        except ValueError:
            continue  # (the header)
        prof.setdefault(kernel, {})[cells[0]] = (calls, cycles)
    return prof


def profile_table(old: dict, new: dict) -> str:
    lines = ["kernel | probe | calls per CTA old / new | cycles a call old / new | new / old"]
    for kernel in dict.fromkeys([*old, *new]):
        o, n = old.get(kernel, {}), new.get(kernel, {})
        for probe in dict.fromkeys([*o, *n]):
            (oc, ocy), (nc, ncy) = o.get(probe, (0.0, 0.0)), n.get(probe, (0.0, 0.0))
            ratio = f"{ncy / ocy:.3f}" if ocy and probe in n else "-"
            lines.append(f"{kernel} | {probe} | {oc:.1f} / {nc:.1f} | {ocy:.0f} / {ncy:.0f} | "
                         f"{ratio}")
    return "\n".join(lines)


def summarize(runs: dict[str, list[dict]], key: str = "consan_ms") -> list[dict]:
    """Rows per kernel from bench_async JSONs per tree ("old", "new"), rounds in order: the
    value `key` of each (consan_ms, by events; dev_consan_ms, the device's time alone, which
    holds no host launch path), where the rows have it."""
    rows: dict[str, dict] = {}
    for tree in ("old", "new"):
        for data in runs.get(tree, []):
            for r in data["rows"]:
                row = rows.setdefault(r["kernel"], {"kernel": r["kernel"], "old": [], "new": [],
                                                    "native_old": [], "native_new": []})
                if key in r:
                    row[tree].append(r[key])
                    row[f"native_{tree}"].append(r[key.replace("consan", "native")])
    for row in rows.values():
        if row["old"] and row["new"]:
            row["old_median"] = statistics.median(row["old"])
            row["new_median"] = statistics.median(row["new"])
            row["new_over_old"] = row["new_median"] / row["old_median"]
    return list(rows.values())


def table(rows: list[dict], what: str = "consan ms") -> str:
    lines = [f"kernel | old {what} (rounds) | new {what} (rounds) | old median | "
             "new median | new / old"]
    for r in rows:
        def ms(xs: list[float]) -> str:
            return " / ".join(f"{x:.3f}" for x in xs) or "-"
        tail = (f"{r['old_median']:.3f} | {r['new_median']:.3f} | {r['new_over_old']:.3f}"
                if "new_over_old" in r else "- | - | -")
        lines.append(f"{r['kernel']} | {ms(r['old'])} | {ms(r['new'])} | {tail}")
    return "\n".join(lines)


def _rounds_of(tree: str, only: str | None, alone: bool, timeout: float,
               extra: dict[str, str] | None) -> tuple[dict | None, str]:
    """One round in `tree`: one bench_async run, or with `alone` one run a kernel of `only`,
    their rows joined (None if any failed), and the output (of the first that failed)."""
    if not alone:
        return _round(tree, only, timeout, extra)
    rows: list[dict] = []
    gpu = "?"
    for kernel in (only or "").split(","):
        data, out = _round(tree, kernel, timeout, extra)
        if data is None:
            return None, out
        rows += data["rows"]
        gpu = data.get("gpu", gpu)
    return {"rows": rows, "errors": [], "gpu": gpu}, ""


def run(only: str | None, rounds: int, timeout: float, json_path: str | None,
        old: str = OLD, new: str = ROOT, profile: bool = False,
        envs: dict[str, dict[str, str]] | None = None, alone: bool = False) -> int:
    old, new = os.path.abspath(old), os.path.abspath(new)  # (each child runs in its tree)
    if not os.path.isfile(os.path.join(old, "benchmarks", "bench_async.py")):
        print(f"ab_async: no older tree at {old}: run `python benchmarks/ab_async.py prepare "
              "REF` first (on the machine whose git has REF)", file=sys.stderr)
        return 2
    if alone and not only:
        print("ab_async: --alone needs --only K1,K2 (the kernels, each run by itself)",
              file=sys.stderr)
        return 2
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    failed = 0
    stops: dict[str, int] = {"old": 0, "new": 0}  # a tree's runs stopped in a row
    for k in range(rounds):
        for tree, path in (("old", old), ("new", new)):
            if stops[tree] >= 2:  # (a kernel that hung hangs again: each round would wait
                # out the whole timeout, device time a session cannot spare)
                failed += 1
                print(f"ERROR: round {k + 1}, {tree} tree: not run, its runs timed out in "
                      "two rounds in a row", flush=True)
                continue
            data, out = _rounds_of(path, only, alone, timeout, (envs or {}).get(tree))
            stops[tree] = stops[tree] + 1 if out.startswith("timed out") else 0
            if data is None:
                failed += 1
                print(f"ERROR: round {k + 1}, {tree} tree: bench_async gave no ratio it "
                      f"stands behind; its output:\n{out}", flush=True)
                continue
            runs[tree].append(data)
            print(f"round {k + 1} {tree}: " + ", ".join(
                f"{r['kernel']} {r['consan_ms']:.3f}" for r in data["rows"]), flush=True)
    rows = summarize(runs)
    dev = [r for r in summarize(runs, "dev_consan_ms") if r["old"] or r["new"]]
    gpu = next((d.get("gpu") for d in runs["new"] + runs["old"]), "?")
    print(f"gpu: {gpu}")
    print(table(rows))
    if dev:  # (bench_async's dev columns: each launch behind a spin kernel)
        print(table(dev, "dev consan ms"))
    profiles: dict[str, dict] = {}
    if profile:
        for tree, path in (("old", old), ("new", new)):
            prof, out = _profile(path, only, timeout, (envs or {}).get(tree))
            if not prof:
                failed += 1
                print(f"ERROR: {tree} tree: breakdown_async.py --profile printed no probe row; "
                      f"its output:\n{out}", flush=True)
            profiles[tree] = prof
        print(profile_table(profiles["old"], profiles["new"]))
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"rows": rows, "dev_rows": dev, "rounds": rounds, "gpu": gpu,
                       "errors": failed, "profiles": profiles}, f, indent=1)
    return 1 if failed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="REF's tree into ab_old/ (here, where git has REF)")
    p.add_argument("ref", nargs="?", default="HEAD")
    p.add_argument("--dest", default=OLD, help="where the tree goes (default: ab_old/)")
    r = sub.add_parser("run", help="old and new trees alternating (on the GPU machine)")
    r.add_argument("--only", metavar="K1,K2", help="bench_async's kernels (default: all)")
    r.add_argument("--rounds", type=int, default=2)
    r.add_argument("--timeout", type=float, default=150.0,
                   help="per bench_async run, s (a tree's first run also builds its "
                        "checker: on a fresh H200 machine a 50 s limit stopped both trees' "
                        "first runs)")
    r.add_argument("--json", metavar="PATH")
    r.add_argument("--profile", action="store_true",
                   help="then each tree's breakdown_async.py --profile, side by side")
    r.add_argument("--alone", action="store_true",
                   help="each kernel of --only in a process of its own")
    r.add_argument("--old", default=OLD, help="the older tree (default: ab_old/)")
    r.add_argument("--new", default=ROOT, help="the newer tree (default: this one)")
    for side in ("old", "new"):
        r.add_argument(f"--env-{side}", action="append", default=[], metavar="NAME=VALUE",
                       help=f"an environment variable for the {side} tree's runs alone (a "
                            "configuration of one tree beside another: --old . --new .)")
    args = ap.parse_args(argv)
    if args.cmd == "prepare":
        print(prepare(args.ref, args.dest))
        return 0
    envs = {side: dict(kv.split("=", 1) for kv in getattr(args, f"env_{side}"))
            for side in ("old", "new")}
    return run(args.only, args.rounds, args.timeout, args.json, old=args.old, new=args.new,
               profile=args.profile, envs=envs, alone=args.alone)


if __name__ == "__main__":
    sys.exit(main())
