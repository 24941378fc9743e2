#!/usr/bin/env python
"""Static SASS counts of an instrumented module, no GPU needed: what the probes cost in
the kernel's own code (calls, spills around them, barriers) before any of their bodies run.

    PYTHONPATH=. python benchmarks/sass_static.py tests/corpus/triton/triton_matmul_s3.ptx \
        [--tables shared|device|phases] [--arch sm_90a] [--value-tags]

The module (PTX, or CUDA C++ compiled with NVRTC) is instrumented, linked with the checker
as a launch would link it, and disassembled with `cuobjdump` (benchmarks/cuda_tools.py
finds it; Triton's wheel bundles one). Printed: per kernel, its SASS instruction count and
its calls, local stores and loads (spills), memory barriers and CTA barriers, beside the
same counts of the module as it came (ptxas for the same target); then the same
for each loop (a backward branch), innermost first; then the same counts for each probe
entry linked in (`probe __consan_...`); with `--lines PROBE`, that probe's instructions by
the checker source line they come from (nvdisasm over a -lineinfo build: where a probe's
size is, e.g. `cs_mbar_entry`'s 32 tries unrolled into 260-1,100 instructions of each
probe that looks an entry up); then each loop of the instrumented PTX with the probe calls
it makes.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

KEYS = ("CALL", "STL", "LDL", "MEMBAR", "BAR", "WARPSYNC", "HGMMA", "LDGSTS")
_INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")


def opcode(text: str) -> str:
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0].split(".")[0]


def functions(sass: str) -> dict[str, list[tuple[int, str]]]:
    """Function name -> its instructions (address, text)."""
    out: dict[str, list[tuple[int, str]]] = {}
    for part in re.split(r"\n\s*Function : ", sass)[1:]:
        name = part.split("\n", 1)[0].strip()
        out[name] = [(int(m.group(1), 16), m.group(2)) for m in _INSN.finditer(part)]
    return out


def counts(insns: list[tuple[int, str]]) -> str:
    c = collections.Counter(opcode(t) for _, t in insns)
    return f"{len(insns)} insns, " + ", ".join(f"{k} {c[k]}" for k in KEYS if c[k])


def loops(insns: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """(start, end) address ranges of predicated backward branches (a loop's test; the
    unpredicated ones jump back from a divergence fallback), innermost (shortest) first;
    spin loops of a few instructions left out."""
    spans = []
    for a, t in insns:
        m = re.match(r"@!?P\w+\s+BRA\s+(?:\w+,\s*)?0x([0-9a-f]+)", t)
        if m and int(m.group(1), 16) < a:
            spans.append((int(m.group(1), 16), a))
    spans = [(lo, hi) for lo, hi in set(spans)
             if sum(1 for x, _ in insns if lo <= x <= hi) >= 16]
    return sorted(spans, key=lambda s: s[1] - s[0])


def ptx_loops(ptx: str) -> list[tuple[str, collections.Counter]]:
    """The probe calls in each loop of the instrumented PTX (a label and a later branch back
    to it), innermost (shortest) first."""
    lines = ptx.splitlines()
    at = {m.group(1): i for i, ln in enumerate(lines)
          if (m := re.match(r"\s*(\$?[\w$]+):", ln))}
    spans = set()
    for i, ln in enumerate(lines):
        m = re.search(r"\bbra(?:\.uni)?\s+(\$?[\w$]+)\s*;", ln)
        if m and m.group(1) in at and at[m.group(1)] < i:
            spans.add((at[m.group(1)], i))
    out = []
    for lo, hi in sorted(spans, key=lambda s: s[1] - s[0]):
        calls = collections.Counter(
            m.group(1) for ln in lines[lo:hi + 1]
            if (m := re.search(r"\bcall(?:\.uni)?\s*(?:\([^)]*\),\s*)?(__consan_\w+)", ln)))
        out.append((lines[lo].strip().split(":")[0], calls))
    return out


_LINE = re.compile(r'//## File "([^"]+)", line (\d+)')


def source_lines(sass: str, func: str) -> collections.Counter:
    """(checker file, line) -> the SASS instructions of `func` that came from it, in nvdisasm
    `-g` output of a -lineinfo build (a line's instructions follow its marker)."""
    out: collections.Counter = collections.Counter()
    inside, at = False, ("?", 0)
    for ln in sass.splitlines():
        m = re.match(r"\s*\.text\.(\S+):", ln)
        if m:
            inside = m.group(1) == func
            continue
        m = _LINE.search(ln)
        if m:
            at = (Path(m.group(1)).name, int(m.group(2)))
        elif inside and _INSN.search(ln):
            out[at] += 1
    return out


def checker_lines(arch, defines: tuple[str, ...], cap: int, func: str) -> collections.Counter:
    """`source_lines` of a checker function in a -lineinfo build of the checker with
    `defines` under the register cap `cap` (the variant a module links), kept in consan's
    checker cache beside the others: the flag is one of its options, so in its key (an
    uncached build took 12-15 s of the CPU suite's time on CI's machine)."""
    from benchmarks.cuda_tools import cuda_tool
    from consan import toolchain

    cubin = toolchain._checker_build(arch, (*defines, "-lineinfo"), cap, "cubin")
    assert isinstance(cubin, bytes)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d, "c.cubin")
        path.write_bytes(cubin)
        sass = subprocess.run([cuda_tool("nvdisasm", "sass_static"), "-g", "-c", str(path)],
                              capture_output=True, text=True, check=True).stdout
    return source_lines(sass, func)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("module", help="a .ptx or .cu file")
    p.add_argument("--tables", choices=("shared", "device", "phases"), default="shared",
                   help="the checker build to link: vector clocks with the tables in shared "
                        "memory (the default where they fit), in device memory, or phase mode "
                        "in shared memory")
    p.add_argument("--arch", default="sm_90a")
    p.add_argument("--value-tags", action="store_true",
                   help="instrument as the Triton front end does (stores pass value tags)")
    p.add_argument("--all", action="store_true",
                   help="the same counts for every function linked in, the checker's own "
                        "out-of-line functions too")
    p.add_argument("--lines", metavar="PROBE",
                   help="also a probe's instructions by the checker source line they come "
                        "from (a -lineinfo build of the checker the module links; nvdisasm)")
    a = p.parse_args(argv)

    from benchmarks.cuda_tools import cuda_tool
    from consan import toolchain
    from instrument.ptx import parse
    from instrument.rewrite import instrument

    arch = toolchain.Arch.parse(a.arch)
    src = Path(a.module).read_text()
    if a.module.endswith(".cu"):
        from tests import corpus_build

        src = corpus_build.compile_cached(src, Path(a.module).name,
                                          [f"-arch=compute_{a.arch[3:]}", "-std=c++17",
                                           "-lineinfo"])
    ins = instrument(parse(src, Path(a.module).name), value_tags=a.value_tags)
    vsh, psh = a.tables == "shared", a.tables == "phases"
    cubin = toolchain.link_with_checker(ins, "module.ptx", arch, vsh=vsh, psh=psh)
    tool = cuda_tool("cuobjdump", "sass_static")
    with tempfile.TemporaryDirectory() as d:
        out, native_ptx, native_cubin = Path(d, "i.cubin"), Path(d, "n.ptx"), Path(d, "n.cubin")
        out.write_bytes(cubin)
        sass = subprocess.run([tool, "-sass", str(out)], capture_output=True, text=True,
                              check=True).stdout
        # the module as it came, assembled by ptxas for the same target: the kernel's own size
        native_ptx.write_text(src)
        subprocess.run([cuda_tool("ptxas", "sass_static"), f"-arch={a.arch}", "-o",
                        str(native_cubin), str(native_ptx)], check=True)
        native = functions(subprocess.run([tool, "-sass", str(native_cubin)],
                                          capture_output=True, text=True, check=True).stdout)
    for name, insns in functions(sass).items():
        if name not in ins.kernels:
            continue
        print(f"{name}: {counts(insns)}; native: {counts(native.get(name, []))}")
        for lo, hi in loops(insns):
            body = [(x, t) for x, t in insns if lo <= x <= hi]
            print(f"  SASS loop 0x{lo:x}-0x{hi:x}: {counts(body)}")
    # the probes the kernels call, as linked: a probe's size and its local-memory traffic
    # around the calls it makes are what its callers fetch and wait for (on the H100 a probe
    # grown from 1,504 to 2,472 instructions, 17 to 76 local stores, ran each of its parts
    # 13-23% slower: benchmarks/RESULTS.md, d000355's section)
    for name, insns in sorted(functions(sass).items()):
        if name.startswith("__consan_"):
            print(f"probe {name}: {counts(insns)}")
        elif a.all and not name.startswith("$") and name != "":
            print(f"function {name}: {counts(insns)}")
    if a.lines:  # (the variant link_with_checker picks for the module)
        defines = (*toolchain._variant_defines(psh, vsh, *toolchain.checker_variant(ins, psh, vsh)),
                   *toolchain.checker_defines())
        lines = checker_lines(arch, defines, ins.max_regs or 0, a.lines)
        print(f"probe {a.lines} by source line ({sum(lines.values())} insns): " + ", ".join(
            f"{f}:{n} {k}" for (f, n), k in lines.most_common(20)))
    for label, calls in ptx_loops(ins.ptx):
        if not calls:
            continue  # (our own loops: an inline barrier's clearing)
        print(f"PTX loop {label}: {sum(calls.values())} probe calls "
              f"({', '.join(f'{k} {v}' for k, v in calls.most_common())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
