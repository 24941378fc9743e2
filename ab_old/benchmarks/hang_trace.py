"""Where each warp of a hung kernel is: the multicast test kernel under consan, with the
checker's trace points (checker/measure.h, CONSAN_TRACE_ADDR) written to mapped host
memory that this process reads while the kernel hangs.

    python3 benchmarks/hang_trace.py 8 bulk plain [--probes] [--hang 30]

Prints, per CTA and warp, the last point each lane passed and its word (e.g. a probe's
lane mask) as point/word x lanes. This found the split warp behind the multicast hang of
checker/multicast.h (cs_mc_drain). A kernel that ends is reported with its findings.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cluster", type=int, choices=(2, 4, 8))
    ap.add_argument("copy", choices=("bulk", "tensor"))
    ap.add_argument("variant", choices=("plain", "early"))
    ap.add_argument("--probes", action="store_true", help="trace every probe's entry and exit")
    ap.add_argument("--hang", type=float, default=30.0, help="seconds before it counts as hung")
    a = ap.parse_args()

    import cupy as cp

    from tests.gpu.test_multicast import CLUSTERS, N, _inputs, _src
    from tests.gpu_util import arch_option

    src = _src(a.cluster, tensor=a.copy == "tensor", early_read=a.variant == "early")
    grid = CLUSTERS * a.cluster
    ptr = cp.cuda.runtime.hostAlloc(8 * grid * N, 2)  # cudaHostAllocMapped
    words = np.ctypeslib.as_array((ctypes.c_uint32 * (2 * grid * N)).from_address(ptr))
    words[:] = 0
    # (unified addressing: the host address is the device address)
    os.environ["CONSAN_CHECKER_DEFINES"] = f"CONSAN_TRACE_ADDR={ptr:#x}ull" + (
        " CONSAN_TRACE_PROBES" if a.probes else "")
    import consan

    x, tmap = _inputs(a.cluster)
    out = cp.zeros(grid * N, dtype=cp.float32)
    done: dict[str, object] = {}

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
    points, aux = snap[0::2].reshape(grid, N // 32, 32), snap[1::2].reshape(grid, N // 32, 32)
    for b in range(grid):
        row = []
        for w in range(N // 32):
            keys = list(zip(points[b, w].tolist(), aux[b, w].tolist(), strict=True))
            row.append(f"w{w}:" + ",".join(f"{p:#x}/{v:#x}x{keys.count((p, v))}"
                                           for p, v in sorted(set(keys))))
        print(f"cta {b}: " + " | ".join(row))
    sys.stdout.flush()
    os._exit(3 if hung else 0)  # (a hung kernel: leave without waiting for it)


if __name__ == "__main__":
    raise SystemExit(main())
