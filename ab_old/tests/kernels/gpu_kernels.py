"""CUDA sources for consan's GPU tests and benchmarks.

Two families:

* **Twins** (`TWINS`): a racy kernel and a clean kernel generated from one
  template, so they differ only by the missing synchronisation (or, for the
  uninitialised read, the missing initialisation) and share line numbers. The
  lines the checker must name carry trailing markers such as `// @raw-read`;
  tests find them with `line_of(source, marker)`.

* **Clean kernels** (`CLEAN`): ordinary race-free kernels (block reduction,
  padded-tile transpose, 1-D stencil, smem-tiled SGEMM, shared-atomics
  histogram) whose outputs are compared between a native launch and a launch
  under consan. `clean_setup()` builds inputs, launch geometry and a NumPy
  reference for any size; the tests and `benchmarks/bench_clean.py` share it.

Why the racy twins contain `consan_test_delay()`: consan checks ordering, not
timing, but *which* kind a missing barrier produces depends on which access
reaches the checker first. A write then an unordered read is `race.raw`; the
same pair the other way round is a clean read followed by `race.war` (or an
`uninit.read` when nothing was written yet). The delay (a spin on `%clock64`,
no memory access, no synchronisation, invisible to the model) makes the
real-time order the same on every run, so each racy twin reports exactly one
kind. The clean twins have the same delays; they are harmless there. The only
other waits anyone does are at barriers that the delayed warp reaches after
its delay, and only in the named-barrier clean twin (about one delay unit).

Everything here is plain Python (no CuPy import at module level) so that it
imports on machines without a GPU. All kernels are `extern "C"`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

# --------------------------------------------------------------------------
# Helpers shared by the racy/clean twins.

PRELUDE = r"""// consan GPU test kernel
#ifndef CONSAN_TEST_DELAY
#define CONSAN_TEST_DELAY (1 << 20)  /* SM cycles per delay unit, ~0.5 ms on an H100 */
#endif
// Spin for about units * CONSAN_TEST_DELAY SM cycles. Not a synchronisation:
// no memory access, no barrier; it only fixes the real-time order of the
// racing accesses so that the checker sees them in the same order every run.
__device__ __forceinline__ void consan_test_delay(int units) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(start) :: "memory");
    do {
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(now) :: "memory");
    } while (now - start < (unsigned long long)units * CONSAN_TEST_DELAY);
}
// Compiler-only fence (emits nothing): keeps a shared load the compiler could
// otherwise forward from a preceding store by the same thread.
#define COMPILER_BARRIER() asm volatile("" ::: "memory")
"""

NO_BARRIER = "/* no barrier here: this is the bug */"


def _render(template: str, **subs: str) -> str:
    src = template
    for key, value in subs.items():
        src = src.replace("$" + key, value)
    if "$" in src:
        raise ValueError(f"unfilled placeholder in template: {src[src.index('$'):][:40]!r}")
    return PRELUDE + src


# (a) RAW: warp 0 writes, warp 1 reads the same words with no barrier between.
# Nothing reads before the write (no WAR), each word is written once (no WAW),
# and the delay puts the read after the write (no uninit.read).
_RAW = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int s[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (warp == 0) {
        s[lane] = in[lane] * 2 + 1;  // @raw-write
    }
    $SYNC
    if (warp == 1) {
        consan_test_delay(1);
        out[lane] = s[lane];  // @raw-read
    }
}
"""

# (b) WAR: the words are written and published by a barrier, warp 0 reads
# them, then warp 1 overwrites them with no barrier after warp 0's read.
# Warp 1's read-back reads its own write (program order: no race).
_WAR = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int s[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (warp == 0) s[lane] = in[lane];  // @war-init
    __syncthreads();
    if (warp == 0) out[lane] = s[lane];  // @war-read
    $SYNC
    if (warp == 1) {
        consan_test_delay(1);
        s[lane] = in[32 + lane];  // @war-write
        COMPILER_BARRIER();
        out[32 + lane] = s[lane];  // @war-own-read
    }
}
"""

# (c) WAW: warp 0 and then warp 1 write the same words, no barrier between and
# no read by another warp anywhere (warp 1 reads back only its own write).
_WAW = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int s[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (warp == 0) {
        s[lane] = in[lane];  // @waw-first
    }
    $SYNC
    if (warp == 1) {
        consan_test_delay(1);
        s[lane] = in[32 + lane];  // @waw-second
        COMPILER_BARRIER();
        out[lane] = s[lane];  // @waw-own-read
    }
}
"""

# (d) Uninitialised read: warp 0 writes s[0..31]; s[32..63] are written only
# in the clean twin. After the barrier warp 1 reads s[32..63].
_UNINIT = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int s[64];
    const int t = threadIdx.x, warp = t >> 5;
    if (warp == 0) s[t] = in[t];  // @uninit-init
    $INIT
    __syncthreads();
    out[t] = s[t];  // @uninit-read
}
"""

# (e) Named-barrier producer/consumer on barrier 1 with 64 threads.
# Producer (warp 0): write, wait two delay units, bar.arrive 1, 64.
# Consumer (warp 1): wait one delay unit, bar.sync 1, COUNT, read.
#  - clean: COUNT = 64: the consumer waits (about one unit) for the arrive.
#  - racy "missing": neither arrive nor sync: read unordered after the write.
#  - racy "count": COUNT = 32. The consumer's bar.sync completes barrier 1 on
#    its own warp's 32 threads (at t = 1 unit), so it does not wait for the
#    producer. The producer's arrive comes later (t = 2 units) and opens a
#    fresh generation of barrier 1 that never completes; bar.arrive does not
#    wait, so nothing hangs: both warps exit. The two counts never meet in one
#    generation of the barrier.
_NAMED = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int s[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (warp == 0) {
        s[lane] = in[lane] + 7;  // @nb-write
        consan_test_delay(2);
        $ARRIVE
    } else if (warp == 1) {
        consan_test_delay(1);
        $SYNC
        out[lane] = s[lane];  // @nb-read
    }
}
"""

# (f) Tree reduction over 256 threads with a barrier after every step; the
# racy twin skips the one after the stride-64 step. The stride-32 step then
# has warp 0 read s[32..63] while warp 1 may still be writing them (warp 1's
# stride-64 result). Steps with stride <= 32 stay inside warp 0 (one logical
# thread in the model). Read and write of the race are on the same line.
_REDUCE = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int s[256];
    const int t = threadIdx.x;
    s[t] = in[blockIdx.x * 256 + t];  // @red-init
    __syncthreads();
    for (int stride = 128; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];  // @red-step
        $SYNC
    }
    if (t == 0) out[blockIdx.x] = s[0];  // @red-out
}
"""

# (g) 64 KiB of dynamic shared memory (more than the 48 KiB default): every
# thread fills its words top-down, so warp 0 writes the top 128 bytes first;
# warp 1 then reads them (byte offsets 65408..65535) without a barrier.
DYN_WORDS = 16384
DYN_SMEM_BYTES = DYN_WORDS * 4
_DYN = r"""
#define DYN_WORDS 16384
extern "C" __global__ void $NAME(const int* in, int* out) {
    extern __shared__ int dyn[];  // launched with DYN_WORDS * 4 = 64 KiB
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    for (int i = DYN_WORDS - 1 - t; i >= 0; i -= blockDim.x) dyn[i] = in[i] ^ 0x5a5a;  // @dyn-write
    $SYNC
    if (warp == 1) {
        consan_test_delay(1);
        out[lane] = dyn[DYN_WORDS - 32 + lane];  // @dyn-read
    }
}
"""

SYNCTHREADS = "__syncthreads();"


@dataclass(frozen=True)
class Twin:
    """A racy kernel, its clean twin, and what the racy one must report.

    The racy kernel must report exactly the kinds in `kinds` (all of them at
    line `line`, earlier access at `prev`), by warp `warp` against `prev_warp`.
    With `either_order`, the race is a genuine timing race between two warps:
    the kinds are a non-empty subset of `kinds`, and for `race.war` the roles
    of the two warps are swapped (line and prev are the same line there).
    Every twin takes (const int* in, int* out); `in` needs `IN_WORDS` ints and
    `out` `OUT_WORDS` ints.
    """

    key: str
    racy_name: str
    racy_src: str
    clean_name: str
    clean_src: str
    kinds: frozenset[str]
    line: str
    prev: str | None
    warp: int
    prev_warp: int | None
    block: tuple[int, int, int]
    grid: tuple[int, int, int] = (1, 1, 1)
    shared_mem: int = 0
    either_order: bool = False
    notes: str = field(default="", compare=False)


IN_WORDS = DYN_WORDS
OUT_WORDS = 1024


# (g) Reads through one base register in phase mode: warp 0 fills a tile, warp 1 reads it
# back through an unrolled loop: 16 rows of 64 ints read as int4, which the rewriter checks
# with one coalesced probe (reps that do not overlap, as an sgemm tile), and seven
# neighbours of an int, which it merges into one 28-byte read (as a stencil).
_ROWS = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ __align__(16) int s[16][64];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (warp == 0) {
#pragma unroll
        for (int k = 0; k < 16; ++k) {
            s[k][lane] = in[lane] + k; s[k][lane + 32] = in[lane + 32] - k;  // @rows-write
        }
    }
    $SYNC
    if (warp == 1) {
        consan_test_delay(1);
        int acc = 0;
#pragma unroll
        for (int k = 0; k < 16; ++k) {
            const int4 v = *reinterpret_cast<const int4*>(&s[k][(lane % 16) * 4]);  // @rows-read
            acc += v.x * (k + 1) + v.y - v.z + (v.w ^ k);
        }
        out[lane] = acc;
    }
}
"""

_HALO = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int s[64];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (warp == 0) {
        s[lane] = in[lane] * 3; s[lane + 32] = in[lane + 32] * 5;  // @halo-write
    }
    $SYNC
    if (warp == 1) {
        consan_test_delay(1);
        int acc = 0;
#pragma unroll
        for (int d = 0; d < 7; ++d) acc += s[lane + 16 + d] * (d + 1);  // @halo-read
        out[lane] = acc;
    }
}
"""


# (i) Loops whose trips touch the same shared bytes (addresses fixed before the loop): in
# phase mode consan checks such a loop's accesses on its first trip only
# (instrument/first_trip.py). `trips`: the missing barrier is inside the trip, so the first
# trip races already (warp 1, delayed before the loop, reads what warp 0 wrote). `trip-tail`:
# the missing barrier is the trip's last, so a trip's write races with the trip before it
# (warp 0's next write against warp 1's read, delayed inside the trip): that loop is checked
# on every trip.
_TRIPS = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int s[64];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    if (warp == 1) consan_test_delay(1);
    int acc = 0;
#pragma unroll 1
    for (int k = 0; k < 8; ++k) {
        s[t] = in[t] * (k + 1);  // @trips-write
        $SYNC
        acc += s[lane];  // @trips-read
        __syncthreads();
    }
    out[t] = acc;
}
"""

_TRIP_TAIL = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int s[64];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    int acc = 0;
#pragma unroll 1
    for (int k = 0; k < 8; ++k) {
        s[t] = in[t] + k;  // @tail-write
        __syncthreads();
        if (warp == 1) consan_test_delay(1);
        acc += s[lane];  // @tail-read
        $SYNC
    }
    out[t] = acc;
}
"""


# (j) Accesses in a loop that repeat their warp's in the phase take an inline test instead
# of the probe call (instrument/fast_path.py). `atomics`: warp 0's shared atomics on eight
# bins, 64 trips (a histogram's), then warp 1 reads the bins; `rmw`: each thread adds into
# its own word 32 times (read and write), then warp 1 reads warp 0's words. The address is
# recomputed every trip (from `in`, whose words are below 2^30: the same word each trip),
# so neither loop is checked on its first trip only. (A warp's rewrites of its own granule
# in a phase keep the phase's first write as the epoch: `rmw` names the init line.)
_ATOMICS = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int bins[8];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    if (t < 8) bins[t] = 0;
    __syncthreads();
    if (warp == 0) {
#pragma unroll 1
        for (int i = 0; i < 64; ++i) atomicAdd(&bins[(lane + i) & 7], in[i & 31]);  // @atomics-add
    }
    $SYNC
    if (warp == 1) {
        consan_test_delay(1);
        out[lane] = bins[lane & 7];  // @atomics-read
    }
}
"""

_RMW = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int s[64];
    volatile int* vs = s;
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    vs[t] = t;  // @rmw-init
#pragma unroll 1
    for (int k = 0; k < 32; ++k) vs[t + 64 * (in[k] >> 30)] += in[k];  // @rmw-acc
    $SYNC
    if (warp == 1) {
        consan_test_delay(1);
        out[lane] = vs[lane];  // @rmw-read
    }
}
"""


def _pair(template: str, base: str, racy: dict[str, str], clean: dict[str, str]):
    return (f"{base}_racy", _render(template, NAME=f"{base}_racy", **racy),
            f"{base}_clean", _render(template, NAME=f"{base}_clean", **clean))


def _twin(key, template, base, racy, clean, **kw) -> Twin:
    rn, rs, cn, cs = _pair(template, base, racy, clean)
    return Twin(key=key, racy_name=rn, racy_src=rs, clean_name=cn, clean_src=cs, **kw)


_ARRIVE_64 = 'asm volatile("bar.arrive 1, 64;" ::: "memory");'
_SYNC_64 = 'asm volatile("bar.sync 1, 64;" ::: "memory");'
_SYNC_32 = 'asm volatile("bar.sync 1, 32;" ::: "memory");  /* BUG: count 32 */'

TWINS: tuple[Twin, ...] = (
    _twin("raw", _RAW, "raw", {"SYNC": NO_BARRIER}, {"SYNC": SYNCTHREADS},
          kinds=frozenset({"race.raw"}), line="@raw-read", prev="@raw-write",
          warp=1, prev_warp=0, block=(64, 1, 1)),
    _twin("war", _WAR, "war", {"SYNC": NO_BARRIER}, {"SYNC": SYNCTHREADS},
          kinds=frozenset({"race.war"}), line="@war-write", prev="@war-read",
          warp=1, prev_warp=0, block=(64, 1, 1)),
    _twin("waw", _WAW, "waw", {"SYNC": NO_BARRIER}, {"SYNC": SYNCTHREADS},
          kinds=frozenset({"race.waw"}), line="@waw-second", prev="@waw-first",
          warp=1, prev_warp=0, block=(64, 1, 1)),
    _twin("uninit", _UNINIT, "uninit",
          {"INIT": "/* BUG: s[32..63] never written */"},
          {"INIT": "if (warp == 1) s[t] = in[t];"},
          kinds=frozenset({"uninit.read"}), line="@uninit-read", prev=None,
          warp=1, prev_warp=None, block=(64, 1, 1)),
)

# The two named-barrier bugs share one clean kernel.
_nb_clean_src = _render(_NAMED, NAME="named_bar_clean", ARRIVE=_ARRIVE_64, SYNC=_SYNC_64)
TWINS += (
    Twin(key="named-missing",
         racy_name="named_bar_missing",
         racy_src=_render(_NAMED, NAME="named_bar_missing",
                          ARRIVE="/* BUG: no bar.arrive */", SYNC="/* BUG: no bar.sync */"),
         clean_name="named_bar_clean", clean_src=_nb_clean_src,
         kinds=frozenset({"race.raw"}), line="@nb-read", prev="@nb-write",
         warp=1, prev_warp=0, block=(64, 1, 1)),
    Twin(key="named-count",
         racy_name="named_bar_count",
         racy_src=_render(_NAMED, NAME="named_bar_count", ARRIVE=_ARRIVE_64, SYNC=_SYNC_32),
         clean_name="named_bar_clean", clean_src=_nb_clean_src,
         kinds=frozenset({"race.raw"}), line="@nb-read", prev="@nb-write",
         warp=1, prev_warp=0, block=(64, 1, 1),
         notes="the producer's bar.arrive 1, 64 is left pending at exit"),
    _twin("reduce", _REDUCE, "reduce",
          {"SYNC": "if (stride != 64) __syncthreads();  /* BUG: none after stride 64 */"},
          {"SYNC": SYNCTHREADS},
          kinds=frozenset({"race.raw", "race.war"}), line="@red-step", prev="@red-step",
          warp=0, prev_warp=1, block=(256, 1, 1), grid=(2, 1, 1), either_order=True,
          notes="raw (warp 0 read after warp 1 write) or war (the other order)"),
    _twin("dyn64k", _DYN, "dyn64k", {"SYNC": NO_BARRIER}, {"SYNC": SYNCTHREADS},
          kinds=frozenset({"race.raw"}), line="@dyn-read", prev="@dyn-write",
          warp=1, prev_warp=0, block=(256, 1, 1), shared_mem=DYN_SMEM_BYTES),
    _twin("rows", _ROWS, "rows", {"SYNC": NO_BARRIER}, {"SYNC": SYNCTHREADS},
          kinds=frozenset({"race.raw"}), line="@rows-read", prev="@rows-write",
          warp=1, prev_warp=0, block=(64, 1, 1)),
    _twin("halo", _HALO, "halo", {"SYNC": NO_BARRIER}, {"SYNC": SYNCTHREADS},
          kinds=frozenset({"race.raw"}), line="@halo-read", prev="@halo-write",
          warp=1, prev_warp=0, block=(64, 1, 1)),
)


def _loop_twin(key: str, template: str, base: str, line: str, prev: str, **kw) -> Twin:
    """A loop twin (i, j above): the racy one lacks a __syncthreads(), and warp 1's read
    after warp 0's write is race.raw."""
    return _twin(key, template, base, {"SYNC": NO_BARRIER}, {"SYNC": SYNCTHREADS},
                 kinds=frozenset({"race.raw"}), line=line, prev=prev, warp=1, prev_warp=0,
                 block=(64, 1, 1), **kw)


TWINS += (
    _loop_twin("trips", _TRIPS, "trips", "@trips-read", "@trips-write"),
    _loop_twin("trip-tail", _TRIP_TAIL, "trip_tail", "@tail-read", "@tail-write",
               notes="warp 0's write of the next trip, then warp 1's read of this one"),
    _loop_twin("atomics", _ATOMICS, "atomics", "@atomics-read", "@atomics-add"),
    _loop_twin("rmw", _RMW, "rmw", "@rmw-read", "@rmw-init"),
)
# (k) Stores of several granules, or of less than one, take the inline update too
# (instrument/fast_path.py): `waw16` / `war16` are (c) / (b) with 16-byte stores (four
# granules a lane, st.shared.v4), `waw2` is (c) with 2-byte stores (two lanes a granule).
_WAW16 = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int4 s[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (warp == 0) {
        s[lane] = make_int4(in[lane], lane, 2, 3);  // @waw16-first
    }
    $SYNC
    if (warp == 1) {
        consan_test_delay(1);
        s[lane] = make_int4(in[32 + lane], lane, 5, 6);  // @waw16-second
        COMPILER_BARRIER();
        out[lane] = s[lane].x + s[lane].w;  // @waw16-own-read
    }
}
"""

_WAR16 = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int4 s[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (warp == 0) s[lane] = make_int4(in[lane], lane, 2, 3);  // @war16-init
    __syncthreads();
    if (warp == 0) {
        const int4 v = s[lane];  // @war16-read
        out[lane] = v.x + v.y + v.z + v.w;
    }
    $SYNC
    if (warp == 1) {
        consan_test_delay(1);
        s[lane] = make_int4(in[32 + lane], lane, 5, 6);  // @war16-write
        COMPILER_BARRIER();
        out[32 + lane] = s[lane].x;  // @war16-own-read
    }
}
"""

_WAW2 = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ short s[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (warp == 0) {
        s[lane] = (short)in[lane];  // @waw2-first
    }
    $SYNC
    if (warp == 1) {
        consan_test_delay(1);
        s[lane] = (short)in[32 + lane];  // @waw2-second
        COMPILER_BARRIER();
        out[lane] = s[lane];  // @waw2-own-read
    }
}
"""

TWINS += tuple(
    _twin(key, template, key, {"SYNC": NO_BARRIER}, {"SYNC": SYNCTHREADS},
          kinds=frozenset({kind}), line=line, prev=prev, warp=1, prev_warp=0,
          block=(64, 1, 1))
    for key, template, kind, line, prev in (
        ("waw16", _WAW16, "race.waw", "@waw16-second", "@waw16-first"),
        ("war16", _WAR16, "race.war", "@war16-write", "@war16-read"),
        ("waw2", _WAW2, "race.waw", "@waw2-second", "@waw2-first")))
# (l) A spin loop the whole CTA runs together, as Triton's layer-norm backward takes its
# lock: thread 0 writes a flag from a global atomic, a barrier, every thread reads it and
# loops again while it is set (three trips, `out[1023]` counting them from 0). Without the
# barrier at the loop's top, thread 0's write of the next trip is unordered with warp 1's
# read of this one: race.war (thread 0 is delayed, so warp 1 reads first).
_SPIN = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int s[65];
    const int t = threadIdx.x;
    int again;
    if (t == 0) out[1023] = 0;
    do {
        $SYNC
        if (t == 0) {
            consan_test_delay(1);
            s[64] = atomicAdd(&out[1023], 1) < 2;  // @spin-write
        }
        __syncthreads();
        again = s[64];  // @spin-read
    } while (again);
    s[t] = in[t] * 3;
    __syncthreads();
    out[t] = s[63 - t];
}
"""

TWINS += (
    _twin("spin", _SPIN, "spin", {"SYNC": NO_BARRIER}, {"SYNC": SYNCTHREADS},
          kinds=frozenset({"race.war"}), line="@spin-write", prev="@spin-read", warp=0,
          prev_warp=1, block=(64, 1, 1)),
)
# (m) Accesses one after another, as unrolled code has them, whose probes one call makes
# (instrument/fast_path.py's runs, in a module with many accesses): warp 0 writes four words
# a lane; warp 1 writes three and reads them back with one of warp 0's words among them.
# The race is the third read of warp 1's run with the third write of warp 0's.
_RUN = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int s[224];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (warp == 0) {
        const int v = in[lane];
        s[lane] = v;
        s[32 + lane] = v + 1;
        s[64 + lane] = v + 2;  // @run-write
        s[96 + lane] = v + 3;
    }
    $SYNC
    if (warp == 1) {
        consan_test_delay(1);
        const int v = in[32 + lane];
        s[128 + lane] = v;
        s[160 + lane] = v + 1;
        s[192 + lane] = v + 2;
        COMPILER_BARRIER();
        const int a = s[128 + lane];
        const int b = s[160 + lane];
        const int c = s[64 + lane];  // @run-read
        const int d = s[192 + lane];
        out[lane] = a + 2 * b + 3 * c + 4 * d;
    }
}
"""

# (n) (b) in a CTA of 32 warps whose last warp is the reader and warp 0 the writer: a
# write's look at the other warps' reads of its phase (instrument/fast_path.py, inline)
# must reach the last warp.
def _war_last() -> str:
    edits = (("warp = threadIdx.x >> 5;",
              "warp = threadIdx.x >> 5, last = (blockDim.x >> 5) - 1;"),
             ("if (warp == 0) out[lane] = s[lane];  // @war-read",
              "if (warp == last) out[lane] = s[lane];  // @war-read"),
             ("    if (warp == 1) {\n        consan_test_delay(1);",
              "    if (warp == 0) {\n        consan_test_delay(1);"))
    src = _WAR
    for old, new in edits:
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    return src


TWINS += (
    _twin("war-last", _war_last(), "war_last", {"SYNC": NO_BARRIER}, {"SYNC": SYNCTHREADS},
          kinds=frozenset({"race.war"}), line="@war-write", prev="@war-read", warp=0,
          prev_warp=31, block=(1024, 1, 1)),
    _twin("run", _RUN, "run", {"SYNC": NO_BARRIER}, {"SYNC": SYNCTHREADS},
          kinds=frozenset({"race.raw"}), line="@run-read", prev="@run-write", warp=1,
          prev_warp=0, block=(64, 1, 1)),
)
# (p) A sort's compare-and-swap step, as NVRTC lays out an unrolled bitonic sort's: two
# reads, then `if (ka > kb)` over the swap of keys and values, which the rewriter leaves a
# branch and probes before it, with the reads and the barrier's step, in one call
# (instrument/runs.py). Every pair swaps (the keys are descending). Warp 0 then reads,
# with no barrier between in the racy twins, what warp 1 swapped: `swap` an even key (its
# address computed before the branch), `vswap` an odd value (its address computed inside
# the branch, so recomputed at the call); and what it swapped itself.
_SWAP = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int sk[128];
    __shared__ int sv[128];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    sk[t] = -in[t];
    sk[64 + t] = -in[64 + t];
    sv[t] = t;
    sv[64 + t] = 64 + t;
    __syncthreads();
    const int pos = 2 * t;
    const int ka = sk[pos], kb = sk[pos + 1];
    if (ka > kb) {
        sk[pos] = kb;  // @swap-write
        sk[pos + 1] = ka;
        const int va = sv[pos];
        sv[pos] = sv[pos + 1];
        sv[pos + 1] = va;  // @vswap-write
    }
    $SYNC
    if (warp == 0) {
        consan_test_delay(1);
        READS
    }
}
"""
_SWAP_KEYS = ("out[lane] = sk[64 + 2 * lane];  // @swap-read\n"
              "        out[32 + lane] = sv[2 * lane];  // (warp 0's own swaps)")
_SWAP_VALUES = ("out[lane] = sv[64 + 2 * lane + 1];  // @vswap-read\n"
                "        out[32 + lane] = sk[2 * lane];  // (warp 0's own swaps)")
TWINS += (
    _twin("swap", _SWAP.replace("READS", _SWAP_KEYS), "swap", {"SYNC": NO_BARRIER},
          {"SYNC": SYNCTHREADS}, kinds=frozenset({"race.raw"}), line="@swap-read",
          prev="@swap-write", warp=0, prev_warp=1, block=(64, 1, 1)),
    _twin("vswap", _SWAP.replace("READS", _SWAP_VALUES), "vswap", {"SYNC": NO_BARRIER},
          {"SYNC": SYNCTHREADS}, kinds=frozenset({"race.raw"}), line="@vswap-read",
          prev="@vswap-write", warp=0, prev_warp=1, block=(64, 1, 1)),
)
# (q) Reads of several granules made by the warp's lanes together (instrument/fast_path.py,
# span_read: seven neighbours merged into one 28-byte read, as a stencil's). `holes`: four
# lanes of warp 0 read seven ints each, 8 apart, so the warp's reads leave a granule out
# between each lane's; warp 1 then writes, with no barrier between, an int one of them read
# (race.war) or, in the clean twin, one none read (a granule of a hole: no race).
# `span-uninit`: warp 1's reads reach ints no thread wrote.
_HOLES = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int s[64];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    s[t] = in[t] * 3;
    __syncthreads();
    if (warp == 0 && lane % 8 == 0) {
        int acc = 0;
#pragma unroll
        for (int d = 0; d < 7; ++d) acc += s[lane + 16 + d] * (d + 1);  // @holes-read
        out[lane / 8] = acc;
    }
    if (warp == 1) {
        consan_test_delay(1);
        if (lane == 0) s[$IDX] = -1;  // @holes-write
    }
}
"""
_SPAN_UNINIT = r"""
extern "C" __global__ void $NAME(const int* in, int* out) {
    __shared__ int s[72];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    s[t] = in[t];
    $INIT
    __syncthreads();
    if (warp == 1) {
        int acc = 0;
#pragma unroll
        for (int d = 0; d < 7; ++d) acc += s[lane + 32 + d] * (d + 1);  // @spanu-read
        out[lane] = acc;
    }
}
"""
TWINS += (
    _twin("holes", _HOLES, "holes", {"IDX": "24"}, {"IDX": "23"},
          kinds=frozenset({"race.war"}), line="@holes-write", prev="@holes-read", warp=1,
          prev_warp=0, block=(64, 1, 1)),
    _twin("span-uninit", _SPAN_UNINIT, "span_uninit",
          {"INIT": "/* BUG: s[64..71] never written */"},
          {"INIT": "if (t < 8) s[64 + t] = in[64 + t];"},
          kinds=frozenset({"uninit.read"}), line="@spanu-read", prev=None, warp=1,
          prev_warp=None, block=(64, 1, 1)),
)
TWIN_BY_KEY = {t.key: t for t in TWINS}


def line_of(src: str, marker: str) -> int:
    """1-based line of the one line of `src` that carries `marker` as a whole token."""
    pat = re.compile(re.escape(marker) + r"(?![\w-])")
    hits = [i for i, text in enumerate(src.splitlines(), 1) if pat.search(text)]
    if len(hits) != 1:
        raise ValueError(f"marker {marker!r} found on lines {hits}, expected exactly one")
    return hits[0]


# --------------------------------------------------------------------------
# Clean kernels.

BLOCK_REDUCE_SRC = r"""
// Per-block partial sums: grid-stride accumulation, then a shared-memory tree
// with a barrier after every step. blockDim.x must be 256.
extern "C" __global__ void block_reduce_sum(const float* x, float* partial, long long n) {
    __shared__ float s[256];
    const int t = threadIdx.x;
    float acc = 0.0f;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + t; i < n; i += step) acc += x[i];
    s[t] = acc;
    __syncthreads();
    for (int stride = 128; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = s[0];
}
"""

TRANSPOSE_SRC = r"""
// out (width x height) = transpose of in (height x width), row-major, through
// a 32 x 33 padded tile. Block (32, 8); grid (ceil(width/32), ceil(height/32)).
#define TILE 32
#define ROWS 8
extern "C" __global__ void transpose_tiled(const float* in, float* out, int width, int height) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;  // input column
    int y = blockIdx.y * TILE + threadIdx.y;  // input row
    for (int j = 0; j < TILE; j += ROWS)
        if (x < width && y + j < height)
            tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;  // output column = input row
    y = blockIdx.x * TILE + threadIdx.y;  // output row = input column
    for (int j = 0; j < TILE; j += ROWS)
        if (x < height && y + j < width)
            out[(size_t)(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
"""

STENCIL_RADIUS = 3
STENCIL_SRC = r"""
// out[i] = sum_{k=-R..R} w_k * in[i+k], w_k = 1 / (1 + |k|), zero outside
// [0, n). One block computes 256 outputs from a tile with an R-word halo on
// each side. blockDim.x must be 256; grid = ceil(n / 256).
#define RADIUS 3
#define BS 256
extern "C" __global__ void stencil_1d(const float* in, float* out, long long n) {
    __shared__ float tile[BS + 2 * RADIUS];
    const int t = threadIdx.x;
    const long long g = (long long)blockIdx.x * BS + t;
    tile[t + RADIUS] = (g < n) ? in[g] : 0.0f;
    if (t < RADIUS) {
        const long long left = g - RADIUS, right = g + BS;
        tile[t] = (left >= 0 && left < n) ? in[left] : 0.0f;
        tile[t + BS + RADIUS] = (right < n) ? in[right] : 0.0f;
    }
    __syncthreads();
    if (g < n) {
        float acc = 0.0f;
#pragma unroll
        for (int k = -RADIUS; k <= RADIUS; ++k)
            acc += (1.0f / (float)(1 + (k < 0 ? -k : k))) * tile[t + RADIUS + k];
        out[g] = acc;
    }
}
"""

SGEMM_SRC = r"""
// C (M x N) = A (M x K) * B (K x N), row-major floats. 64 x 64 output tile
// per block of 256 threads, each thread a 4 x 4 micro-tile; K in steps of 16.
// M and N must be multiples of 64, K a multiple of 16.
// Grid (N / 64, M / 64), block 256.
#define BM 64
#define BN 64
#define BK 16
extern "C" __global__ void sgemm_tiled(const float* A, const float* B, float* C,
                                       int M, int N, int K) {
    __shared__ float As[BK][BM];  // A tile, stored transposed: As[k][m]
    __shared__ float Bs[BK][BN];
    const int t = threadIdx.x;
    const int tx = t % 16, ty = t / 16;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int idx = t + i * 256;
            const int ar = idx / BK, ac = idx % BK;  // A tile: BM x BK
            As[ac][ar] = A[(size_t)(row0 + ar) * K + k0 + ac];
            const int br = idx / BN, bc = idx % BN;  // B tile: BK x BN
            Bs[br][bc] = B[(size_t)(k0 + br) * N + col0 + bc];
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = As[kk][ty * 4 + i];
#pragma unroll
            for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx * 4 + j];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
            C[(size_t)(row0 + ty * 4 + i) * N + col0 + tx * 4 + j] = acc[i][j];
}
"""

HISTOGRAM_SRC = r"""
// 256-bin histogram of bytes: per-block bins in shared memory, zeroed and
// published by a barrier, filled with shared atomics, then added to the
// global histogram. blockDim.x must be 256. hist must be zeroed beforehand.
extern "C" __global__ void histogram256(const unsigned char* data, unsigned int* hist,
                                        long long n) {
    __shared__ unsigned int bins[256];
    const int t = threadIdx.x;
    bins[t] = 0u;
    __syncthreads();
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + t; i < n; i += step)
        atomicAdd(&bins[data[i]], 1u);
    __syncthreads();
    atomicAdd(&hist[t], bins[t]);
}
"""

CLEAN: dict[str, str] = {
    "block_reduce_sum": BLOCK_REDUCE_SRC,
    "transpose_tiled": TRANSPOSE_SRC,
    "stencil_1d": STENCIL_SRC,
    "sgemm_tiled": SGEMM_SRC,
    "histogram256": HISTOGRAM_SRC,
}

MAX_GRID_STRIDE_BLOCKS = 2048  # grid of the grid-stride kernels (~2 waves of 8 CTAs/SM on an H100)


@dataclass
class Setup:
    """One launch of a clean kernel: geometry, inputs and how to check outputs.

    `make_args(xp)` returns (args, outputs) with freshly allocated outputs
    (and the shared inputs), ready for `kernel(grid, block, args)` or
    `consan.check(..., args=args)`. `reference()` (host inputs only) returns
    the expected outputs as NumPy arrays. `exact` says whether outputs must
    be bit-equal between runs (integers, pure data movement).
    """

    name: str
    source: str
    size_label: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    inputs: dict
    make_args: Callable
    reference: Callable
    exact: bool
    shared_mem: int = 0


def _uniform(xp, rs, n):
    if xp.__name__ == "numpy":
        return rs.uniform(-1.0, 1.0, n).astype(xp.float32)
    return rs.uniform(-1.0, 1.0, n, dtype=xp.float32)


def _label_n(n: int) -> str:
    return f"n=2^{n.bit_length() - 1}" if n > 0 and (n & (n - 1)) == 0 else f"n={n}"


def _nan(xp, shape):
    return xp.full(shape, xp.nan, dtype=xp.float32)


def clean_setup(name: str, size, xp, seed: int = 1234) -> Setup:
    """Inputs (random, not zeros) and geometry for clean kernel `name`.

    size: n for block_reduce_sum, stencil_1d, histogram256; (height, width)
    for transpose_tiled; (M, N, K) for sgemm_tiled. Inputs live in `xp`
    (numpy or cupy); `reference()` needs them as NumPy arrays.
    """
    rs = xp.random.RandomState(seed)
    src = CLEAN[name]

    def host(a):
        return a if isinstance(a, np.ndarray) else a.get()

    if name == "block_reduce_sum":
        n = int(size)
        grid = min(MAX_GRID_STRIDE_BLOCKS, math.ceil(n / 256))
        x = _uniform(xp, rs, n)

        def make_args(dev):
            partial = _nan(dev, grid)
            return (dev.asarray(x), partial, np.int64(n)), [partial]

        def reference():
            hx = host(x).astype(np.float64)
            blk = (np.arange(n) % (grid * 256)) // 256
            return [np.bincount(blk, weights=hx, minlength=grid)]

        return Setup(name, src, _label_n(n),
                     (grid, 1, 1), (256, 1, 1), {"x": x}, make_args, reference, exact=False)

    if name == "transpose_tiled":
        height, width = (int(v) for v in size)
        a = _uniform(xp, rs, height * width).reshape(height, width)
        grid = (math.ceil(width / 32), math.ceil(height / 32), 1)

        def make_args(dev):
            out = _nan(dev, (width, height))
            return (dev.asarray(a), out, np.int32(width), np.int32(height)), [out]

        def reference():
            return [np.ascontiguousarray(host(a).T)]

        return Setup(name, src, f"{height}x{width}", grid, (32, 8, 1), {"a": a},
                     make_args, reference, exact=True)

    if name == "stencil_1d":
        n = int(size)
        x = _uniform(xp, rs, n)
        grid = (math.ceil(n / 256), 1, 1)

        def make_args(dev):
            out = _nan(dev, n)
            return (dev.asarray(x), out, np.int64(n)), [out]

        def reference():
            r = STENCIL_RADIUS
            padded = np.pad(host(x).astype(np.float64), r)
            ref = np.zeros(n, dtype=np.float64)
            for k in range(-r, r + 1):
                ref += (1.0 / (1 + abs(k))) * padded[r + k:r + k + n]
            return [ref]

        return Setup(name, src, _label_n(n),
                     grid, (256, 1, 1), {"x": x}, make_args, reference, exact=False)

    if name == "sgemm_tiled":
        m, n, k = (int(v) for v in size)
        if m % 64 or n % 64 or k % 16:
            raise ValueError("sgemm_tiled needs M, N multiples of 64 and K a multiple of 16")
        a = _uniform(xp, rs, m * k).reshape(m, k)
        b = _uniform(xp, rs, k * n).reshape(k, n)

        def make_args(dev):
            c = _nan(dev, (m, n))
            return (dev.asarray(a), dev.asarray(b), c, np.int32(m), np.int32(n),
                    np.int32(k)), [c]

        def reference():
            return [host(a).astype(np.float64) @ host(b).astype(np.float64)]

        return Setup(name, src, f"{m}x{n}x{k}", (n // 64, m // 64, 1), (256, 1, 1),
                     {"a": a, "b": b}, make_args, reference, exact=False)

    if name == "histogram256":
        n = int(size)
        data = rs.randint(0, 256, size=n, dtype=np.uint8)
        grid = min(MAX_GRID_STRIDE_BLOCKS, math.ceil(n / 256))

        def make_args(dev):
            hist = dev.zeros(256, dtype=dev.uint32)
            return (dev.asarray(data), hist, np.int64(n)), [hist]

        def reference():
            return [np.bincount(host(data), minlength=256).astype(np.uint32)]

        return Setup(name, src, _label_n(n),
                     (grid, 1, 1), (256, 1, 1), {"data": data}, make_args, reference,
                     exact=True)

    raise KeyError(name)


# Sizes: small ones for the tests (odd shapes exercise the bounds checks).
TEST_SIZES = {
    "block_reduce_sum": 1 << 18,
    "transpose_tiled": (200, 300),
    "stencil_1d": 100_003,
    "sgemm_tiled": (128, 192, 80),
    "histogram256": 1 << 18,
}


# --------------------------------------------------------------------------
# TMA tensor copies (sm_90): kernels taking a 2-D tensor map (`consan.tensor_map`,
# float32, box TMA_BOX_ROWS x TMA_BOX_COLS) as a `__grid_constant__` 128-byte struct.
# Each template is filled by `fill(template, subs)`: the racy and clean kernels differ
# by one substitution on one line, so they share line numbers.

TMA_PRELUDE = r"""// consan TMA test kernel
struct __align__(64) TensorMap128 { unsigned long long opaque[16]; };
__device__ __forceinline__ unsigned sa(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mb_init(unsigned long long* b, unsigned n) {
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(sa(b)), "r"(n) : "memory");
}
__device__ __forceinline__ void mb_arrive(unsigned long long* b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(sa(b)) : "memory");
}
__device__ __forceinline__ void mb_wait(unsigned long long* b, unsigned parity) {
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 " @!p bra W;\n}" :: "r"(sa(b)), "r"(parity) : "memory");
}
// Expect `bytes` on b, then load the box at column x, row y of the map into dst.
__device__ __forceinline__ void tma_load_2d(void* dst, const TensorMap128* map, int x, int y,
                                            unsigned long long* b, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :: "r"(sa(b)), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile"
                 ".mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(sa(dst)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(x),
                    "r"(y), "r"(sa(b)) : "memory");
}
__device__ __forceinline__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}
"""

# One 32 x 32 tile per CTA, loaded by thread 0; warps 1.. write 2 * tile to `out`
# (row-major, `width` columns). Racy: they read the tile without waiting on the
# mbarrier (they start late, so the copy was issued first): async.pending-write.
TMA_TILE_ROWS = TMA_TILE_COLS = 32
TMA_TILE = TMA_PRELUDE + r"""
#define TR 32
#define TC 32
extern "C" __global__ void tma_tile(const __grid_constant__ TensorMap128 map, float* out,
                                    int width) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ __align__(128) float tile[TR * TC];
    int t = threadIdx.x;
    int x0 = blockIdx.x * TC, y0 = blockIdx.y * TR;
    if (t == 0) mb_init(&bar, 1);
    __syncthreads();
    if (t == 0) tma_load_2d(tile, &map, x0, y0, &bar, TR * TC * 4);  // @tma
    if (t >= 32) {
        spin(2000000);
        WAIT_HERE
        for (int i = t - 32; i < TR * TC; i += blockDim.x - 32)
            out[(y0 + i / TC) * width + x0 + i % TC] = 2.0f * tile[i];  // @use
    }
    if (t == 0) mb_wait(&bar, 0);
}
"""
TMA_TILE_CLEAN = {"WAIT_HERE": "mb_wait(&bar, 0);"}
TMA_TILE_RACY = {"WAIT_HERE": ""}

# A TMA tensor store epilogue: the CTA writes 3 * its 32 x 32 tile of `in` to shared
# memory, thread 0 stores the tile through the map (over `out`), then reuses the buffer.
# Clean: fence.proxy.async after the writes, and cp.async.bulk.wait_group.read 0 before
# the reuse. Racy twins: no fence (proxy.missing-fence at the store), or the reuse before
# the wait (async.pending-read at the reuse).
TMA_STORE = TMA_PRELUDE + r"""
#define TR 32
#define TC 32
extern "C" __global__ void tma_store(const __grid_constant__ TensorMap128 map, const float* in,
                                     int width) {
    __shared__ __align__(128) float tile[TR * TC];
    int t = threadIdx.x;
    int x0 = blockIdx.x * TC, y0 = blockIdx.y * TR;
    for (int i = t; i < TR * TC; i += blockDim.x)
        tile[i] = 3.0f * in[(y0 + i / TC) * width + x0 + i % TC];  // @fill
    FENCE
    __syncthreads();
    if (t == 0) {
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"
                     " [%0, {%1, %2}], [%3];"
                     :: "l"(reinterpret_cast<unsigned long long>(&map)), "r"(x0), "r"(y0),
                        "r"(sa(tile)) : "memory");  // @store
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        WAIT_EARLY
        tile[0] = -1.0f;  // @reuse
        WAIT_LATE
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
"""
_READ_WAIT = 'asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");'
TMA_STORE_CLEAN = {"FENCE": 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");',
                   "WAIT_EARLY": _READ_WAIT, "WAIT_LATE": ""}
# case -> (substitutions over the clean ones, kind, site marker, earlier-site marker)
TMA_STORE_RACY = {
    "no-proxy-fence": ({"FENCE": ""}, "proxy.missing-fence", "@store", "@fill"),
    "reuse-before-wait-read": ({"WAIT_EARLY": "", "WAIT_LATE": _READ_WAIT},
                               "async.pending-read", "@reuse", "@store"),
}

# A warp-specialised pipeline: warp 0 (one lane) streams `ntiles` boxes of
# TMA_RING_ROWS x 64 floats (rows blockIdx.x * ntiles * TMA_RING_ROWS on) through a
# ring of TMA_STAGES slots; `full[s]` completes with the copy, `empty[s]` with one
# arrival from each of the two consumer warps, which sum each column of every box:
# out[blockIdx.x * 64 + c] = sum of column c of the CTA's rows. Launch: 96 threads.
TMA_STAGES = 4
TMA_RING_ROWS = 32
TMA_RING_COLS = 64
TMA_RING = TMA_PRELUDE + r"""
#define STAGES 4
#define ROWS 32
#define COLS 64
#define BOX_BYTES (ROWS * COLS * 4)
extern "C" __global__ void tma_ring(const __grid_constant__ TensorMap128 map, float* out,
                                    int ntiles) {
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES], issued;
    __shared__ __align__(128) float buf[STAGES][ROWS * COLS];
    int t = threadIdx.x, warp = t / 32, lane = t % 32;
    if (t == 0) {
        for (int s = 0; s < STAGES; ++s) mb_init(&full[s], 1), mb_init(&empty[s], 2);
        mb_init(&issued, 1);
    }
    __syncthreads();
    int row0 = blockIdx.x * ntiles * ROWS;
    if (warp == 0) {
        if (lane == 0) {
            for (int i = 0; i < ntiles; ++i) {
                int s = i % STAGES;
                unsigned ph = (i / STAGES) & 1;
                if (i >= STAGES) {
                    PRODUCER_WAIT
                }
                tma_load_2d(buf[s], &map, 0, row0 + i * ROWS, &full[s], BOX_BYTES);  // @produce
            }
            PRODUCER_ISSUED
            // the last copies must land before the CTA exits
            for (int i = ntiles > STAGES ? ntiles - STAGES : 0; i < ntiles; ++i)
                mb_wait(&full[i % STAGES], (i / STAGES) & 1);
        }
    } else {
        CONSUMER_DELAY
        int c = t - 32;
        float acc = 0.0f;
        for (int i = 0; i < ntiles; ++i) {
            int s = i % STAGES;
            unsigned ph = (i / STAGES) & 1;
            WAIT_BEFORE
            for (int r = 0; r < ROWS; ++r) acc += buf[s][r * COLS + c];  // @consume
            WAIT_AFTER
            __syncwarp();
            if (lane == 0) mb_arrive(&empty[s]);
        }
        out[blockIdx.x * COLS + c] = acc;
    }
}
"""
TMA_RING_CLEAN = {"PRODUCER_WAIT": "mb_wait(&empty[s], ph ^ 1);", "PRODUCER_ISSUED": "",
                  "CONSUMER_DELAY": "", "WAIT_BEFORE": "mb_wait(&full[s], ph);",
                  "WAIT_AFTER": ""}
# case -> (substitutions over the clean ones, ntiles, kind, site marker, earlier-site marker)
TMA_RING_RACY = {
    # the producer refills a slot without waiting for its release; it runs late, so the
    # consumers' reads of the slot come first and the copy is the unordered write
    "producer-skips-empty-wait": ({"PRODUCER_WAIT": "spin(2000000);"}, 12, "race.war",
                                  "@produce", "@consume"),
    # the consumers read a slot before waiting for its copy; they start once every copy
    # is issued (the `issued` mbarrier orders the producer's issue, not the copies' writes)
    "consumer-reads-before-full-wait": ({"PRODUCER_ISSUED": "mb_arrive(&issued);",
                                         "CONSUMER_DELAY": "mb_wait(&issued, 0);",
                                         "WAIT_BEFORE": "", "WAIT_AFTER": "mb_wait(&full[s], ph);"},
                                        4, "async.pending-write", "@consume", "@produce"),
}


def fill(template: str, subs: dict[str, str]) -> str:
    for k, v in subs.items():
        template = template.replace(k, v)
    return template


def tma_ring_reference(x: np.ndarray, ctas: int, ntiles: int) -> np.ndarray:
    """What tma_ring computes from the (ctas * ntiles * TMA_RING_ROWS, 64) matrix x."""
    return x.reshape(ctas, ntiles * TMA_RING_ROWS, TMA_RING_COLS).sum(axis=1).reshape(-1)
