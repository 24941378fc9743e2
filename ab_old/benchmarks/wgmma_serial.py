#!/usr/bin/env python
"""What one call to a function of another module costs a wgmma kernel: its mma_async
serialized.

    PYTHONPATH=. python3 benchmarks/wgmma_serial.py [--m 16896] [--repeats 50]

ptxas serializes every wgmma.mma_async of a function that calls a function linked from
another module ("(C7509) ... serialized due to the presence of Extern calls"): each HGMMA
waits for the one before it, where natively a K step's four are issued back to back. Every
instrumented kernel makes such calls (its probes), so this is a floor under the slowdown of
any wgmma kernel consan checks with probe calls, whatever the probes do. This times
bench_async's TMA + wgmma GEMM (tests/kernels/tma_wgmma_gemm.py) as it comes and with one
call to an empty function of another module after its K loop (executed once a thread),
both linked by the nvJitLink consan links with; both must write the same bits. Printed:
native ms, with-call ms and their ratio, by CUDA events and by the device's time alone
(each launch behind a spin kernel, bench_clean._time_device), and the SASS's HGMMA and
WARPGROUP.DEPBAR counts of each (from the cubins, where cuobjdump is found).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

EMPTY = "__consan_bench_empty"


def with_call(ptx: str) -> str:
    """The module with an extern declaration of EMPTY and a call to it before each `ret;`
    of an entry (after the kernel's loops: once a thread)."""
    head, sep, rest = ptx.partition(".address_size 64")
    assert sep, "a 64-bit PTX module"
    rest = rest.replace("\n\tret;", f"\n\tcall {EMPTY};\n\tret;")
    assert f"call {EMPTY}" in rest, "no ret; in the module"
    return f"{head}{sep}\n.extern .func {EMPTY} ();{rest}"


def empty_module(ptx: str) -> str:
    """A module of the same version and target defining EMPTY."""
    keep = [ln for ln in ptx.splitlines() if ln.startswith((".version", ".target"))]
    return "\n".join([*keep, ".address_size 64", f".visible .func {EMPTY} ()", "{", "\tret;",
                      "}", ""])


def sass_counts(cubin: bytes) -> str:
    """HGMMA and WARPGROUP.DEPBAR counts of a cubin's SASS ('-' without cuobjdump)."""
    try:
        from benchmarks.cuda_tools import cuda_tool

        tool = cuda_tool("cuobjdump", "wgmma_serial")
    except SystemExit:
        return "-"
    with tempfile.TemporaryDirectory() as d:
        p = Path(d, "m.cubin")
        p.write_bytes(cubin)
        sass = subprocess.run([tool, "-sass", str(p)], capture_output=True, text=True,
                              check=True).stdout
    return f"HGMMA {sass.count('HGMMA.')}, DEPBAR {sass.count('WARPGROUP.DEPBAR')}"


def builds(options: tuple[str, ...]) -> dict[str, bytes]:
    """The native cubin and the one with the call, both through consan's nvJitLink."""
    from consan import toolchain
    from tests import gpu_util
    from tests.kernels import tma_wgmma_gemm as g

    name, ptx, arch = gpu_util.native_ptx(g.SOURCE, options, "tma_wgmma_gemm.cu")
    return {"native": toolchain.link([(name, ptx)], arch),
            "one extern call": toolchain.link([(name, with_call(ptx)),
                                               ("empty.ptx", empty_module(ptx))], arch)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--m", type=int, default=16896, help="rows of A (bench_async's size)")
    p.add_argument("--repeats", type=int, default=50)
    a = p.parse_args(argv)

    import cupy as cp

    from benchmarks.bench_async import GEMM_K
    from benchmarks.bench_clean import _arch_options, _time, _time_device
    from tests.kernels import tma_wgmma_gemm as g

    opts = _arch_options(cp)
    rows = []
    outs = {}
    for label, cubin in builds(opts).items():
        module = cp.cuda.function.Module()
        module.load(cubin)
        fn = module.get_function(g.KERNEL)
        x, b, d, _ = g.inputs(cp, a.m, GEMM_K)
        args = g.args(x, b, d, GEMM_K)

        def launch(fn=fn, args=args):
            fn(g.grid(a.m), g.BLOCK, args)

        ev = statistics.median(_time(cp, launch, lambda: None, 3, a.repeats))
        dev = statistics.median(_time_device(cp, launch, lambda: None, a.repeats))
        outs[label] = d.get()
        rows.append((label, ev, dev, sass_counts(cubin)))
        del module
    same = all((o.view("u1") == outs["native"].view("u1")).all() for o in outs.values())
    print(f"gpu: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    print("build | events ms | x | device alone ms | x | SASS")
    for label, ev, dev, sass in rows:
        print(f"{label} | {ev:.4f} | {ev / rows[0][1]:.3f} | {dev:.4f} | {dev / rows[0][2]:.3f} "
              f"| {sass}")
    print(f"outputs bit-identical: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
