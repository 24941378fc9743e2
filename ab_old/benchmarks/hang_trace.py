"""Where each warp of a hung kernel is: the multicast test kernel, or a bench_async case,
under consan, with the checker's trace points (checker/measure.h, CONSAN_TRACE_ADDR)
written to mapped host memory that this process reads while the kernel hangs.

    python3 benchmarks/hang_trace.py 8 bulk plain [--probes] [--hang 30]
    python3 benchmarks/hang_trace.py --bench mma_gemm_cp_async [--size 256] [--launches 3]
    python3 benchmarks/hang_trace.py --matmul 500      # Triton's matmul without its line 500

Prints, per CTA and warp, the last point each lane passed and its word (e.g. a probe's
lane mask) as point/word x lanes. This found the split warp behind the multicast hang of
checker/multicast.h (cs_mc_drain), and the split warp of a 16-byte write's late readers
(checker/access16.h, `--matmul 500` with CS_TRACE points in the probe). A kernel that ends
is reported with its findings.
"""

from __future__ import annotations

import argparse
import ctypes
import math
import os
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cluster", type=int, choices=(2, 4, 8), nargs="?", default=2)
    ap.add_argument("copy", choices=("bulk", "tensor"), nargs="?", default="bulk")
    ap.add_argument("variant", choices=("plain", "early"), nargs="?", default="plain")
    ap.add_argument("--bench", metavar="CASE", help="a bench_async case instead")
    ap.add_argument("--matmul", metavar="LINE", type=int,
                    help="Triton's matmul of tests/gpu/test_static_proof.py with LINE removed "
                         "(0: as compiled) instead")
    ap.add_argument("--size", type=int, help="the case's size (default: its own)")
    ap.add_argument("--launches", type=int, default=1, help="launches before it counts as done")
    ap.add_argument("--probes", action="store_true", help="trace every probe's entry and exit")
    ap.add_argument("--hang", type=float, default=30.0, help="seconds before it counts as hung")
    a = ap.parse_args()

    import cupy as cp

    if a.matmul is not None:
        from tests.gpu.test_static_proof import MATMUL, MATMUL_SIZE

        lines = MATMUL.splitlines()
        if a.matmul:
            lines[a.matmul - 1] = ""
        mm_ptx, n = "\n".join(lines) + "\n", MATMUL_SIZE
        grid, nthreads = (n // 128) ** 2, 256
    elif a.bench:
        from benchmarks.bench_async import CASES
        from benchmarks.bench_clean import _arch_options

        ln = CASES[a.bench][2](cp, a.size or CASES[a.bench][1])
        grid, nthreads = math.prod(ln.grid), math.prod(ln.block)
    else:
        from tests.gpu.test_multicast import CLUSTERS, N, _inputs, _src
        from tests.gpu_util import arch_option

        src = _src(a.cluster, tensor=a.copy == "tensor", early_read=a.variant == "early")
        grid, nthreads = CLUSTERS * a.cluster, N
    ptr = cp.cuda.runtime.hostAlloc(8 * grid * nthreads, 2)  # cudaHostAllocMapped
    words = np.ctypeslib.as_array((ctypes.c_uint32 * (2 * grid * nthreads)).from_address(ptr))
    words[:] = 0
    # (unified addressing: the host address is the device address)
    os.environ["CONSAN_CHECKER_DEFINES"] = f"CONSAN_TRACE_ADDR={ptr:#x}ull" + (
        " CONSAN_TRACE_PROBES" if a.probes else "")
    import consan

    done: dict[str, object] = {}
    if a.matmul is not None:
        rng = np.random.default_rng(5)
        mm = [cp.asarray(rng.standard_normal((n, n)).astype(np.float16)) for _ in range(2)]
        mm.append(cp.zeros((n, n), dtype=cp.float16))

        def launch() -> None:
            done["report"] = consan.check(
                mm_ptx, "matmul_kernel", grid=(n // 128, n // 128), block=(256,),
                args=(*mm, np.uint32(n), np.uint32(n), np.uint32(n), np.uint64(0),
                      np.uint64(0)), shared_mem=98304, source_name="matmul.ptx")
    elif a.bench:
        p = consan.prepare(ln.source, ln.kernel, grid=ln.grid, block=ln.block,
                           shared_mem=ln.shared_mem, options=_arch_options(cp))

        def launch() -> None:
            for i in range(a.launches):
                words[:] = 0
                p.launch(ln.args)
                done["report"] = f"launch {i}: {p.report()}"
                print(done["report"], flush=True)
    else:
        x, tmap = _inputs(a.cluster)
        out = cp.zeros(grid * N, dtype=cp.float32)

        def launch() -> None:
            done["report"] = consan.check(src, "multicast", grid=(grid,), block=(N,),
                                          args=(x, tmap, out), options=(arch_option(),))

    t0 = time.time()
    th = threading.Thread(target=launch, daemon=True)
    th.start()
    th.join(a.hang)
    hung = th.is_alive()
    print(f"HUNG after {time.time() - t0:.1f} s" if hung else str(done.get("report")))
    snap = words.copy()
    shape = (grid, nthreads // 32, 32)
    points, aux = snap[0::2].reshape(shape), snap[1::2].reshape(shape)
    rows: dict[str, list[int]] = {}  # a CTA's warps' points -> the CTAs that show them
    for b in range(grid):
        row = []
        for w in range(nthreads // 32):
            keys = list(zip(points[b, w].tolist(), aux[b, w].tolist(), strict=True))
            row.append(f"w{w}:" + ",".join(f"{p:#x}/{v:#x}x{keys.count((p, v))}"
                                           for p, v in sorted(set(keys))))
        rows.setdefault(" | ".join(row), []).append(b)
    for row, ctas in sorted(rows.items(), key=lambda kv: len(kv[1])):
        print(f"{len(ctas)} CTAs (first {ctas[:6]}): {row}")
    sys.stdout.flush()
    os._exit(3 if hung else 0)  # (a hung kernel: leave without waiting for it)


if __name__ == "__main__":
    raise SystemExit(main())
