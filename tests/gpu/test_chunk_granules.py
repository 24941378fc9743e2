"""Chunk granules on a real GPU: a kernel whose every shared-memory write is whole 16-byte
chunks (cp.async 16, float4 stores; its reads float4 loads, ldmatrix rows -- a cp.async
GEMM's accesses -- or scalar loads) is checked with 16-byte granules
(abi.CHUNK_GRANULE_BYTES), its tables in shared memory and, with CONSAN_VC_SMEM=0, in
device memory. Each racy twin gives exactly its kind at its line; the clean twin is clean
and computes the native bits."""

from __future__ import annotations

import re

import numpy as np
import pytest

from instrument import abi
from tests.gpu_util import (
    arch_option,
    assert_same_outputs,
    host,
    line_of,
    lines,
    native_launch,
    poisoned,
)
from tests.probe_calls import calls

pytestmark = pytest.mark.gpu

CP16 = r"""
#define COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#define WAIT0() asm volatile("cp.async.wait_group 0;" ::: "memory")
__device__ __forceinline__ void cp16(float4* dst, const float4* src) {
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), "l"(src) : "memory");
}
"""
SRC = CP16 + r"""extern "C" __global__ void chunks(const float4* in, float4* out, unsigned* rows) {
    __shared__ __align__(16) float4 s[256];
    int t = threadIdx.x, lane = t % 32;
    if (COPIED) cp16(&s[t], in + blockIdx.x * 256 + t);  // @cp
    COMMIT();
    WAIT_HERE
    float4 v = s[(t + 32) % 256];  // @use (another warp's chunk)
    LATE_WAIT
    __syncthreads();
    s[t] = make_float4(v.y, v.z, v.w, v.x);  // @write
    SYNC_HERE
    out[blockIdx.x * 256 + t] = s[(t + 64) % 256];  // @read (another warp's chunk)
    // ldmatrix: each lane gives a row of 16 bytes, four 8x8 matrices (the warp's chunks)
    unsigned a = (unsigned)__cvta_generic_to_shared(&s[(t - lane) + lane]), r0, r1, r2, r3;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a) : "memory");  // @ldmatrix
    rows[4 * (blockIdx.x * 256 + t) + 0] = r0;
    rows[4 * (blockIdx.x * 256 + t) + 1] = r1;
    rows[4 * (blockIdx.x * 256 + t) + 2] = r2;
    rows[4 * (blockIdx.x * 256 + t) + 3] = r3;
}
"""
CLEAN = {"COPIED": "true", "WAIT_HERE": "WAIT0();\n    __syncthreads();", "LATE_WAIT": "",
         "SYNC_HERE": "__syncthreads();"}
RACY = {  # name: (the change, {kind: (marker of its line, marker of the other access)})
    "wait-too-late": ({"WAIT_HERE": "__syncthreads();", "LATE_WAIT": "WAIT0();"},
                      {"async.pending-write": ("@use", "@cp")}),
    # whichever warp comes first decides between the two (both name the same pair)
    "no-barrier": ({"SYNC_HERE": ""}, {"race.raw": ("@read", "@write"),
                                       "race.war": ("@write", "@read")}),
    "half-copied": ({"COPIED": "t < 128"}, {"uninit.read": ("@use", None)}),
}
GRID, BLOCK = (8,), (256,)


def _source(change: dict[str, str]) -> str:
    src = SRC
    for k, v in {**CLEAN, **change}.items():
        src = src.replace(k, v)
    return src


def _args():
    import cupy as cp

    x = cp.asarray(np.random.default_rng(5).random(GRID[0] * 256 * 4, dtype=np.float32))
    out = poisoned(GRID[0] * 256 * 4, cp.float32)
    rows = poisoned(GRID[0] * 256 * 4, cp.uint32)
    return (x, out, rows), [out, rows]


def _prepared(src: str, barriers: str = "inline", kernel: str = "chunks", grid=GRID,
              block=BLOCK, reads: int = 3, writes: int = 1):
    import consan

    p = consan.prepare(src, kernel, grid=grid, block=block, options=(arch_option(),))
    assert p.build.instrumented.chunk_granules
    assert p.layout.granule_bytes == 16
    # its float4 reads and ldmatrix are settled inline where they can (vc_reads.py), and
    # its cp.async too (vc_writes.py)
    assert p.build.instrumented.inline_chunk_reads == reads
    assert p.build.instrumented.inline_chunk_writes == writes
    # and its __syncthreads, where the barrier's rows are (inline_barriers.vc_arrive), its
    # cp.async groups (vc_async_group) and its unpredicated mbarrier parity waits
    # (vc_mbar_wait)
    syncs = src.count("__syncthreads();")
    ptx = p.build.instrumented.ptx
    groups = len(re.findall(r"^\s*cp\.async\.(?:commit_group|wait_group|wait_all)\b", ptx,
                            re.M))
    # (a loop one lane runs: its copy's wait too, `W: @%__cs_on mbarrier.try_wait...`)
    groups += len(re.findall(r"^\s*(?:\w+:\s*)?(?:@%__cs_on\s+)?mbarrier\.try_wait\.parity"
                             r"\.shared(?:::cta)?\.b64\b", ptx, re.M))
    assert p.build.instrumented.inline_barriers == (syncs + groups if barriers == "inline"
                                                    else 0)
    if p.layout.placement.value == "vc-smem":
        assert p.layout.bar0_rows
    return p


@pytest.fixture(params=["vc-smem", "device"])
def placement(request, monkeypatch):
    if request.param == "device":
        monkeypatch.setenv("CONSAN_VC_SMEM", "0")
    return request.param


@pytest.fixture(params=["inline", "calls"])
def barriers(request, monkeypatch):
    """Barrier 0 written out inline (a record with its rows: the tables in shared memory),
    and as calls (CONSAN_INLINE_MAX=0, the form of a module past its inline limit)."""
    if request.param == "calls":
        monkeypatch.setenv("CONSAN_INLINE_MAX", "0")
    return request.param


def test_clean_twin_is_clean_and_computes_the_native_bits(placement, barriers):
    src = _source({})
    args, outs = _args()
    native_launch(src, "chunks", GRID, BLOCK, args, 0, (arch_option(),))
    native = [host(o).copy() for o in outs]
    p = _prepared(src, barriers)
    assert p.layout.placement.value == placement
    args, outs = _args()
    p.launch(args)
    rep = p.report()
    assert_same_outputs(native, [host(o) for o in outs], "chunks")
    assert rep.ok and not rep.unmodeled, str(rep)


@pytest.mark.parametrize("name", list(RACY))
def test_racy_twin_gives_its_kind_at_its_line(placement, barriers, name):
    change, kinds = RACY[name]
    src = _source(change)
    p = _prepared(src, barriers)
    assert p.layout.placement.value == placement
    p.launch(_args()[0])
    rep = p.report()
    assert rep.violations and {v.kind for v in rep.violations} <= set(kinds), str(rep)
    for v in rep.violations:
        line, prev = kinds[v.kind]
        assert v.line == line_of(src, line), str(rep)
        # (the copy is issued in an inlined helper: its call line is in the inline chain)
        assert (line_of(src, prev) in lines(v.prev_site)) if prev else v.prev_site is None, \
            str(rep)


# The cp.async writes themselves as the found access: a refill over a chunk another warp
# read, and a copy over the warp's own copy still in flight.
REFILL = CP16 + r"""extern "C" __global__ void refill(const float4* in, float4* out) {
    __shared__ __align__(16) float4 s[256];
    int t = threadIdx.x;
    const float4* src = in + blockIdx.x * 256;
    cp16(&s[t], src + t);  // @first
    COMMIT();
    WAIT0();
    __syncthreads();
    float4 v = s[PEEK_AT];  // @peek (another warp's chunk)
    BEFORE_REFILL
    cp16(&s[t], src + (t + 7) % 256);  // @refill
    COMMIT();
    BEFORE_AGAIN
    cp16(&s[t], src + (t + 9) % 256);  // @again
    COMMIT();
    WAIT0();
    __syncthreads();
    float4 w = s[(t + 1) % 256];  // @final
    out[blockIdx.x * 256 + t] = make_float4(v.x + w.x, v.y + w.y, v.z + w.z, v.w + w.w);
}
"""
REFILL_CLEAN = {"BEFORE_REFILL": "__syncthreads();", "BEFORE_AGAIN": "WAIT0();",
                "PEEK_AT": "(t + 32) % 256"}
REFILL_RACY = {  # name: (the change, kind, marker of its line, marker of the other access)
    # the refill overwrites a chunk another warp peeked at, with no barrier between; its
    # warp sleeps first, so the peek is in the tables before it (a late reader)
    "late-reader": ({"BEFORE_REFILL": "__nanosleep(200000);"}, "race.war", "@refill", "@peek"),
    # the same for half of each warp's lanes: lanes 16-31 peek at their own chunk, so only
    # lanes 0-15 of a refill meet a late reader (the judgment made for half a warp: a warp
    # split there hung Triton's matmul with its epilogue's wgmma wait removed)
    "late-reader-half-warp": ({"BEFORE_REFILL": "__nanosleep(200000);",
                               "PEEK_AT": "t % 32 < 16 ? (t + 32) % 256 : t"},
                              "race.war", "@refill", "@peek"),
    # a copy over the warp's own earlier copy that it never waited for (the old epoch)
    "own-copy-in-flight": ({"BEFORE_AGAIN": ""}, "async.pending-write", "@again", "@refill"),
}


def _refill(change: dict[str, str]):
    import cupy as cp

    import consan

    src = REFILL
    for k, v in {**REFILL_CLEAN, **change}.items():
        src = src.replace(k, v)
    p = consan.prepare(src, "refill", grid=GRID, block=BLOCK, options=(arch_option(),))
    assert p.build.instrumented.chunk_granules
    assert p.build.instrumented.inline_chunk_writes == 3  # (vc_writes.py: each copy)
    x = cp.asarray(np.random.default_rng(7).random(GRID[0] * 256 * 4, dtype=np.float32))
    out = poisoned(GRID[0] * 256 * 4, cp.float32)
    return src, p, (x, out), out


def test_refill_clean_twin_is_clean_and_computes_the_native_bits(placement):
    src, p, args, out = _refill({})
    assert p.layout.placement.value == placement
    native_launch(src, "refill", GRID, BLOCK, args, 0, (arch_option(),))
    native = host(out).copy()
    p.launch(args)
    rep = p.report()
    assert_same_outputs([native], [host(out)], "refill")
    assert rep.ok and not rep.unmodeled, str(rep)


@pytest.mark.parametrize("name", list(REFILL_RACY))
def test_a_copy_gives_its_own_finding(placement, name):
    change, kind, line, prev = REFILL_RACY[name]
    src, p, args, _ = _refill(change)
    p.launch(args)
    rep = p.report()
    assert {v.kind for v in rep.violations} == {kind}, str(rep)
    for v in rep.violations:  # (the copies are issued in an inlined helper)
        assert line_of(src, line) in lines(v.site), str(rep)
        assert line_of(src, prev) in lines(v.prev_site), str(rep)


# Two copies in a row (a cp.async GEMM's K step: A's row, then B's) make one probe call
# (abi.PROBE_CP16_RUN, instrument/cp_runs.py); a finding of the second copy names its line.
PAIR = CP16 + r"""extern "C" __global__ void pair(const float4* in, float4* out) {
    __shared__ __align__(16) float4 a[256];
    __shared__ __align__(16) float4 s[256];
    int t = threadIdx.x;
    const float4* src = in + blockIdx.x * 256;
    cp16(&s[t], src + t);  // @first
    COMMIT();
    WAIT0();
    __syncthreads();
    float4 v = s[(t + 32) % 256];  // @peek (another warp's chunk)
    BEFORE_REFILL
    cp16(&a[t], src + (t + 3) % 256);  // @a
    cp16(&s[t], src + (t + 7) % 256);  // @refill
    COMMIT();
    WAIT0();
    __syncthreads();
    float4 w = s[(t + 1) % 256], x = a[(t + 2) % 256];
    out[blockIdx.x * 256 + t] = make_float4(v.x + w.x + x.x, v.y + w.y + x.y, v.z + w.z + x.z,
                                            v.w + w.w + x.w);
}
"""


def _pair(before_refill: str):
    import cupy as cp

    import consan

    src = PAIR.replace("BEFORE_REFILL", before_refill)
    p = consan.prepare(src, "pair", grid=GRID, block=BLOCK, options=(arch_option(),))
    assert p.build.instrumented.chunk_granules
    assert [int(c.args[2 * abi.CP16_RUN_MAX]) for c in
            calls(p.build.instrumented.ptx, abi.PROBE_CP16_RUN)] == [2]
    assert p.build.instrumented.inline_chunk_writes == 2  # (the first copy, and the run)
    x = cp.asarray(np.random.default_rng(9).random(GRID[0] * 256 * 4, dtype=np.float32))
    out = poisoned(GRID[0] * 256 * 4, cp.float32)
    return src, p, (x, out), out


def test_pair_clean_twin_is_clean_and_computes_the_native_bits(placement):
    src, p, args, out = _pair("__syncthreads();")
    native_launch(src, "pair", GRID, BLOCK, args, 0, (arch_option(),))
    native = host(out).copy()
    p.launch(args)
    rep = p.report()
    assert_same_outputs([native], [host(out)], "pair")
    assert rep.ok and not rep.unmodeled, str(rep)


def test_pairs_second_copy_gives_its_own_finding(placement):
    """The refill overwrites a chunk another warp peeked at, with no barrier between (its
    warp sleeps first, so the peek is in the tables before the run's call)."""
    src, p, args, _ = _pair("__nanosleep(200000);")
    p.launch(args)
    rep = p.report()
    assert {v.kind for v in rep.violations} == {"race.war"}, str(rep)
    for v in rep.violations:
        assert line_of(src, "@refill") in lines(v.site), str(rep)
        assert line_of(src, "@peek") in lines(v.prev_site), str(rep)


# A copy over a chunk another warp stored to: the copy's inline write finds a last write
# not ordered before its warp (vc_writes.py) and the warp's call judges it. The copy's warp
# sleeps first, so the store is in the tables before it; were the copy first, the store
# would find it in flight.
POKE = CP16 + r"""extern "C" __global__ void poke(const float4* in, float4* out) {
    __shared__ __align__(16) float4 s[256];
    int t = threadIdx.x;
    const float4* src = in + blockIdx.x * 256;
    s[(t + 32) % 256] = src[t];  // @poke (another warp's chunk)
    BEFORE_COPY
    cp16(&s[t], src + (t + 5) % 256);  // @copy
    COMMIT();
    WAIT0();
    __syncthreads();
    out[blockIdx.x * 256 + t] = s[(t + 1) % 256];
}
"""


@pytest.mark.parametrize("racy", [False, True], ids=["clean", "racy"])
def test_a_copy_over_another_warps_store(placement, racy):
    import cupy as cp

    import consan

    src = POKE.replace("BEFORE_COPY", "__nanosleep(200000);" if racy else "__syncthreads();")
    p = consan.prepare(src, "poke", grid=GRID, block=BLOCK, options=(arch_option(),))
    assert p.build.instrumented.chunk_granules
    assert p.build.instrumented.inline_chunk_writes == 1
    x = cp.asarray(np.random.default_rng(11).random(GRID[0] * 256 * 4, dtype=np.float32))
    out = poisoned(GRID[0] * 256 * 4, cp.float32)
    if not racy:
        native_launch(src, "poke", GRID, BLOCK, (x, out), 0, (arch_option(),))
        native = host(out).copy()
    p.launch((x, out))
    rep = p.report()
    if not racy:
        assert_same_outputs([native], [host(out)], "poke")
        assert rep.ok and not rep.unmodeled, str(rep)
        return
    kinds = {"race.waw": ("@copy", "@poke"), "async.pending-write": ("@poke", "@copy")}
    assert rep.violations and {v.kind for v in rep.violations} <= set(kinds), str(rep)
    for v in rep.violations:
        line, prev = kinds[v.kind]
        assert line_of(src, line) in lines(v.site), str(rep)
        assert line_of(src, prev) in lines(v.prev_site), str(rep)


# Mbarriers in a chunk module: two of them share a 16-byte chunk. Every thread stores its
# chunk, arrives on bars[0] and waits for the phase, then reads another warp's chunk; after
# bars[0] is invalidated, PEEK reads a chunk: in the racy twin the one holding both
# mbarriers, bars[1] still live (mbarrier.data-access).
MBARS = r"""
__device__ __forceinline__ unsigned sa(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
extern "C" __global__ void mbars(const float4* in, float4* out) {
    __shared__ __align__(16) float4 s[256];
    __shared__ __align__(16) unsigned long long bars[2];  // one chunk
    int t = threadIdx.x;
    if (t == 0)
        asm volatile("mbarrier.init.shared.b64 [%0], 256;\n\t"
                     "mbarrier.init.shared.b64 [%1], 256;"
                     :: "r"(sa(&bars[0])), "r"(sa(&bars[1])) : "memory");
    __syncthreads();
    s[t] = in[blockIdx.x * 256 + t];
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(sa(&bars[0])) : "memory");
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n"
                 " @!p bra W;\n}" :: "r"(sa(&bars[0])) : "memory");
    float4 v = s[(t + 32) % 256];  // another warp's chunk, after the phase
    __syncthreads();
    if (t == 0)
        asm volatile("mbarrier.inval.shared.b64 [%0];" :: "r"(sa(&bars[0])) : "memory");
    __syncthreads();
    float4 w = PEEK;  // @peek
    __syncthreads();
    if (t == 0)
        asm volatile("mbarrier.inval.shared.b64 [%0];" :: "r"(sa(&bars[1])) : "memory");
    out[blockIdx.x * 256 + t] = make_float4(v.x + w.x, v.y + w.y, v.z + w.z, v.w + w.w);
}
"""
MBARS_PEEK = {"clean": "s[(t + 64) % 256]", "racy": "*(const float4*)&bars[0]"}


@pytest.mark.parametrize("twin", list(MBARS_PEEK))
def test_a_chunk_of_two_mbarriers_stays_theirs_while_one_is_live(placement, twin):
    import cupy as cp

    import consan

    src = MBARS.replace("PEEK", MBARS_PEEK[twin])
    p = consan.prepare(src, "mbars", grid=GRID, block=BLOCK, options=(arch_option(),))
    assert p.build.instrumented.chunk_granules and p.layout.granule_bytes == 16
    assert p.layout.placement.value == placement

    def args():
        x = cp.asarray(np.random.default_rng(11).random(GRID[0] * 256 * 4, dtype=np.float32))
        out = poisoned(GRID[0] * 256 * 4, cp.float32)
        return (x, out), out

    a, out = args()
    p.launch(a)
    rep = p.report()
    if twin == "racy":  # (its output holds mbarrier state: not compared)
        assert {v.kind for v in rep.violations} == {"mbarrier.data-access"}, str(rep)
        assert {v.line for v in rep.violations} == {line_of(src, "@peek")}, str(rep)
        return
    assert rep.ok and not rep.unmodeled, str(rep)
    checked = host(out).copy()
    a, out = args()
    native_launch(src, "mbars", GRID, BLOCK, a, 0, (arch_option(),))
    assert_same_outputs([host(out)], [checked], "mbars")


# A deadlock in a module that syncs on barrier 0 only: warp 0 waits for a phase one arrival
# short; the other warps reach the __syncthreads after it, at once (parked in the hardware
# barrier when warp 0 leaves) or once the CTA winds down (`late`: past the watch's
# DEADLOCK_MS). Either way the report is the deadlock at the wait and the kernel ends: the
# barrier's inline arrive calls its probe once the CTA winds down, its inline wait does too.
STUCK = r"""
__device__ __forceinline__ unsigned sa(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
extern "C" __global__ void stuck(const float4* in, float4* out, int late) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ __align__(16) float4 s[128];
    int t = threadIdx.x;
    if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], 2;" :: "r"(sa(&bar)) : "memory");
    __syncthreads();
    s[t] = in[t];
    if (t == 0)  // one arrival of the two the phase needs
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(sa(&bar)) : "memory");
    if (t < 32) {
        asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n"
                     " @!p bra W;\n}" :: "r"(sa(&bar)) : "memory");  // @wait
    } else if (late) {
        unsigned long long t0 = now_ns();
        while (now_ns() - t0 < LATE_NS) {}
    }
    __syncthreads();
    out[t] = s[(t + 32) % 128];
}
""".replace("LATE_NS", f"{3 * abi.DEADLOCK_MS}000000ull")


@pytest.mark.parametrize("late", [0, 1], ids=["parked", "late"])
def test_a_deadlock_before_barrier_0_is_reported_and_the_kernel_ends(barriers, late):
    import cupy as cp

    x = cp.asarray(np.random.default_rng(13).random(128 * 4, dtype=np.float32))
    out = poisoned(128 * 4, cp.float32)
    p = _prepared(STUCK, barriers, kernel="stuck", grid=(2,), block=(128,), reads=1,
                  writes=0)
    assert p.layout.placement.value == "vc-smem"
    p.launch((x, out, cp.int32(late)))
    rep = p.report()
    assert {v.kind for v in rep.violations} == {"deadlock"}, str(rep)
    assert {v.line for v in rep.violations} == {line_of(STUCK, "@wait")}, str(rep)


# Reads of part of a chunk (scalar loads) in a module whose writes are whole chunks: each
# warp sums eight 128-byte rows, 512 bytes apart, of the copies (a coalesced run of 4-byte
# loads, judged a row at a time), a word that shares its chunk with an mbarrier, and rows
# of 8-byte and of 2-byte loads.
WORDS = CP16 + r"""extern "C" __global__ void words(const float4* in, float* out) {
    __shared__ __align__(16) float4 s[256];
    __shared__ __align__(16) struct { unsigned long long bar; float beside[2]; } m;
    int t = threadIdx.x, lane = t % 32, warp = t / 32;
    if (t == 0) *(float4*)&m = make_float4(1.f, 2.f, 3.f, 4.f);  // @fill (before the init)
    cp16(&s[t], in + blockIdx.x * 256 + t);  // @cp
    COMMIT();
    WAIT0();
    SYNC_COPIES
    const float* f = (const float*)s;
    const int base = ((warp + 1) % 4) * 32;
    float acc = 0.f;
#pragma unroll
    for (int r = 0; r < 8; ++r) acc += f[base + r * 128 + lane];  // @rows
    if (t == 0) {
        unsigned b = (unsigned)__cvta_generic_to_shared(&m.bar);
        asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(b) : "memory");  // @init
    }
    __syncthreads();
    acc += m.beside[lane & 1];  // @beside
    // rows of 8-byte and of 2-byte loads (16 and 4 granules a row), after the barrier
    const float2* f2 = (const float2*)s;
    const unsigned short* h = (const unsigned short*)s;
    const int base2 = ((warp + 3) % 2) * 32, base16 = ((warp + 2) % 8) * 32;
#pragma unroll
    for (int r = 0; r < 8; ++r) {
        float2 v = f2[base2 + r * 64 + lane];  // @pairs
        acc += v.x - v.y + (float)h[base16 + r * 256 + lane];  // @halves
    }
    MBAR_READ
    out[blockIdx.x * 256 + t] = acc;
}
"""
WORDS_CLEAN = {"SYNC_COPIES": "__syncthreads();", "MBAR_READ": ""}
WORDS_RACY = {  # name: (the change, {kind: (marker of its line, marker of the other access)})
    # the rows are other warps' copies, read with no barrier after those warps' waits (a
    # copy whose probe has not run yet leaves its chunk unwritten: whichever comes first)
    "no-barrier-after-the-copies": ({"SYNC_COPIES": ""},
                                    {"async.pending-write": ("@rows", "@cp"),
                                     "uninit.read": ("@rows", None)}),
    # a load of the mbarrier's own 8 bytes
    "a-load-of-the-mbarrier": ({"MBAR_READ": "acc += (float)(*(volatile unsigned long long*)"
                                             "&m.bar & 1u);  // @bar"},
                               {"mbarrier.data-access": ("@bar", None)}),
}


def _words(change: dict[str, str]):
    import cupy as cp

    src = WORDS
    for k, v in {**WORDS_CLEAN, **change}.items():
        src = src.replace(k, v)
    x = cp.asarray(np.random.default_rng(9).random(GRID[0] * 256 * 4, dtype=np.float32))
    return src, (x, poisoned(GRID[0] * 256, cp.float32))


def _words_prepared(src: str):
    import consan

    p = consan.prepare(src, "words", grid=GRID, block=BLOCK, options=(arch_option(),))
    ins = p.build.instrumented
    assert ins.chunk_granules and p.layout.granule_bytes == 16
    assert ins.warp_reads
    return p


def test_words_clean_twin_is_clean_and_computes_the_native_bits(placement):
    src, args = _words({})
    native_launch(src, "words", GRID, BLOCK, args, 0, (arch_option(),))
    native = host(args[1]).copy()
    p = _words_prepared(src)
    assert p.layout.placement.value == placement
    src, args = _words({})
    p.launch(args)
    rep = p.report()
    assert_same_outputs([native], [host(args[1])], "words")
    assert rep.ok and not rep.unmodeled, str(rep)


@pytest.mark.parametrize("name", list(WORDS_RACY))
def test_words_racy_twin_gives_its_kind_at_its_line(placement, name):
    change, kinds = WORDS_RACY[name]
    src, args = _words(change)
    p = _words_prepared(src)
    p.launch(args)
    rep = p.report()
    assert rep.violations and {v.kind for v in rep.violations} <= set(kinds), str(rep)
    for v in rep.violations:
        at, prev = kinds[v.kind]
        assert v.line == line_of(src, at), str(rep)
        if prev:
            assert line_of(src, prev) in lines(v.prev_site), str(rep)
