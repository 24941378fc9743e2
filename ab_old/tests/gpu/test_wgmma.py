"""wgmma on a real GPU (sm_90a): a one-warpgroup GEMM tile and its two racy twins, and a
TMA-fed GEMM tile (tests/kernels/tma_wgmma_gemm.py) with its seed-004 twin.

D (64 x 64, f32) = A (64 x 128, f16) * B^T (B: 64 x 128, f16), two k-steps of 64
halves; each step writes the A and B tiles to shared memory with generic stores,
`fence.proxy.async`, `__syncthreads`, then four m64n64k16 wgmmas (K-major
operands, one per 16 halves of K), commit_group, wait_group 0. The operands are
laid out either without swizzle (8x8 core matrices) or with the 128-byte swizzle;
the inputs are small integers so the f32 result is exact.

- clean: no finding, and the same D as the uninstrumented kernel and numpy;
- seed 004: no `wgmma.wait_group 0` in the loop, so the next k-step's stores
  overwrite operands the wgmmas may still read -> async.pending-read at the stores;
- no `fence.proxy.async` after the generic stores -> proxy.missing-fence at the wgmma.

The clean kernels also run natively on the same inputs and must write the very same bits;
the racy twins' outputs are not compared (operands overwritten while a wgmma may read them,
or read through the wrong proxy, give timing-dependent results).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, check_against_native, line_of, lines, poisoned
from tests.kernels.tma_wgmma_gemm import WGMMA_TILE

pytestmark = pytest.mark.gpu

KT = 64  # K halves per stage (a 128-byte row per M / N row)
KSTEPS = 2
K = KT * KSTEPS
CTAS = 2  # CTA b computes rows 64b .. 64b+63 of D


SRC = WGMMA_TILE + r"""
#define SWIZZLE @SWIZZLE@
#define KT @KT@
#define KSTEPS @KSTEPS@

__device__ __forceinline__ unsigned long long smem_desc(const void* p, unsigned lbo,
                                                        unsigned sbo, unsigned long long mode) {
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    return (unsigned long long)((a & 0x3FFFF) >> 4) |
           (unsigned long long)((lbo & 0x3FFFF) >> 4) << 16 |
           (unsigned long long)((sbo & 0x3FFFF) >> 4) << 32 | mode << 62;
}

// Byte offset of element (r, k) of a 64 x KT K-major tile.
__device__ __forceinline__ int tile_off(int r, int k) {
#if SWIZZLE
    // 128-byte rows, 8-row atoms of 1024 bytes; 16-byte chunk k/8 lands at k/8 ^ r%8
    return (r / 8) * 1024 + (r % 8) * 128 + ((k / 8) ^ (r % 8)) * 16 + (k % 8) * 2;
#else
    // 8 x 8 core matrices of 128 bytes: core (r/8, k/8) at ((r/8) * KT/8 + k/8) * 128
    return ((r / 8) * (KT / 8) + k / 8) * 128 + (r % 8) * 16 + (k % 8) * 2;
#endif
}

// Descriptor of K step s (halves 16s .. 16s+15) of a tile.
__device__ __forceinline__ unsigned long long step_desc(const void* tile, int s) {
#if SWIZZLE
    return smem_desc((const char*)tile + 32 * s, 16, 1024, 1);  // LBO unused; SBO: 8 rows
#else
    return smem_desc((const char*)tile + 256 * s, 128, (KT / 8) * 128, 0);  // LBO: K, SBO: 8 rows
#endif
}

extern "C" __global__ void __launch_bounds__(128) wgmma_gemm(const unsigned short* A,
                                                             const unsigned short* B, float* D) {
    __shared__ __align__(1024) unsigned short As[64 * KT];
    __shared__ __align__(1024) unsigned short Bs[64 * KT];
    int t = threadIdx.x;
    const unsigned short* Ab = A + blockIdx.x * 64 * (KT * KSTEPS);
    float d[32];
    for (int i = 0; i < 32; ++i) d[i] = 0.0f;
    for (int ks = 0; ks < KSTEPS; ++ks) {
        for (int e = t; e < 64 * KT; e += 128) {
            int r = e / KT, k = e % KT, g = r * (KT * KSTEPS) + ks * KT + k;
            *(unsigned short*)((char*)As + tile_off(r, k)) = Ab[g];  // @storeA
            *(unsigned short*)((char*)Bs + tile_off(r, k)) = B[g];  // @storeB
        }
        @FENCE@
        __syncthreads();
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int s = 0; s < KT / 16; ++s)
            mma_m64n64k16(d, step_desc(As, s), step_desc(Bs, s), ks > 0 || s > 0);  // @mma-call
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        @WAIT@
        __syncthreads();
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");  // @final-wait
    store_d(D, d, blockIdx.x * 64);
}
"""

FENCE = 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // @fence'
WAIT = 'asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");  // @wait'
LAYOUTS = [False, True]
LAYOUT_IDS = ["no-swizzle", "swizzle-128B"]


def source(swizzle: bool, fence: bool = True, wait: bool = True) -> str:
    """The kernel; the racy twins leave out the proxy fence or the in-loop wait."""
    return (SRC.replace("@SWIZZLE@", "1" if swizzle else "0").replace("@KT@", str(KT))
            .replace("@KSTEPS@", str(KSTEPS))
            .replace("@FENCE@", FENCE if fence else "// (no proxy fence)")
            .replace("@WAIT@", WAIT if wait else "// (no wait_group 0: seed 004)"))


def inputs():
    rng = np.random.default_rng(4)
    a = rng.integers(-2, 3, size=(CTAS * 64, K)).astype(np.float16)
    b = rng.integers(-2, 3, size=(64, K)).astype(np.float16)
    return a, b


def _args():
    import cupy as cp

    a, b = inputs()
    d = poisoned((CTAS * 64, 64), cp.float32)
    return (cp.asarray(a), cp.asarray(b), d), [d]


def _run(src: str, clean: bool):
    """(report, D under consan). A clean kernel also runs natively and must write the same
    bits; a racy one's output is timing-dependent, so it is not compared."""
    if clean:
        rep, (d,) = check_against_native(src, "wgmma_gemm", _args, grid=(CTAS,), block=(128,),
                                         options=(arch_option(),))
        return rep, d
    import consan

    args, (d,) = _args()
    rep = consan.check(src, "wgmma_gemm", grid=(CTAS,), block=(128,), args=args,
                       options=(arch_option(),))
    return rep, d.get()


@pytest.fixture(autouse=True)
def _hopper():
    import cupy as cp

    if cp.cuda.Device().compute_capability != "90":
        pytest.skip("wgmma needs an sm_90 GPU")


@pytest.mark.parametrize("swizzle", LAYOUTS, ids=LAYOUT_IDS)
def test_clean_wgmma_gemm_is_clean_and_exact(swizzle):
    src = source(swizzle)
    rep, got = _run(src, clean=True)  # the native bits
    assert rep.ok, str(rep)
    assert not rep.unmodeled, rep.unmodeled
    a, b = inputs()
    np.testing.assert_array_equal(got, a.astype(np.float32) @ b.astype(np.float32).T)


def check_pending_read(rep, src: str) -> None:
    """Seed 004: the refill stores are async.pending-read against the wgmma (shared with the
    CPU replay in tests/cpu/test_wgmma_kernels.py)."""
    assert {v.kind for v in rep.violations} == {"async.pending-read"}, str(rep)
    assert {v.line for v in rep.violations} == {line_of(src, "@storeA"),
                                               line_of(src, "@storeB")}, str(rep)
    for v in rep.violations:
        assert line_of(src, "@mma") in lines(v.prev_site), str(rep)
        assert line_of(src, "@mma-call") in lines(v.prev_site), str(rep)
    text = " ".join(str(rep).split())  # the report with its line wrapping undone
    assert "add wgmma.wait_group 0" in text and "wgmma unit of warpgroup 0 (warps 0-3)" in text


def check_missing_fence(rep, src: str) -> None:
    """No fence.proxy.async: proxy.missing-fence at the wgmma against the stores."""
    assert {v.kind for v in rep.violations} == {"proxy.missing-fence"}, str(rep)
    for v in rep.violations:
        assert line_of(src, "@mma") in lines(v.site), str(rep)
        assert line_of(src, "@mma-call") in lines(v.site), str(rep)
        assert v.prev_line in {line_of(src, "@storeA"), line_of(src, "@storeB")}, str(rep)
    text = " ".join(str(rep).split())
    assert "Add fence.proxy.async.shared::cta in the threads that write at" in text
    assert "operand A (64x16 .f16, K-major;" in text or "operand B (16x64 .f16, K-major;" in text


@pytest.mark.parametrize("swizzle", LAYOUTS, ids=LAYOUT_IDS)
def test_refill_before_wait_group_is_a_pending_read(swizzle):
    src = source(swizzle, wait=False)
    rep, _ = _run(src, clean=False)
    check_pending_read(rep, src)


@pytest.mark.parametrize("swizzle", LAYOUTS, ids=LAYOUT_IDS)
def test_no_proxy_fence_is_a_missing_fence_at_the_wgmma(swizzle):
    src = source(swizzle, fence=False)
    rep, _ = _run(src, clean=False)
    check_missing_fence(rep, src)


# ------------------------------------------------ TMA + wgmma (tests/kernels/tma_wgmma_gemm.py)

TMA_M, TMA_K = 2 * 64, 4 * 64  # two CTAs, four K steps: each stage is refilled once


def _tma_gemm(racy: bool):
    """(source, report, D under consan, reference). The clean kernel also runs natively and
    must write the same bits; the racy one's output is not compared (timing-dependent)."""
    import cupy as cp

    from tests.kernels import tma_wgmma_gemm as g

    src = g.source(racy)

    def make_args():
        a, b, d, _ = g.inputs(cp, TMA_M, TMA_K)  # (D NaN-filled)
        return g.args(a, b, d, TMA_K), [d], (a, b)  # (a, b: the maps hold no reference)

    want = g.inputs(np, TMA_M, TMA_K)[3]
    if not racy:
        rep, (d,) = check_against_native(src, g.KERNEL, make_args, grid=g.grid(TMA_M),
                                         block=g.BLOCK, options=(arch_option(),))
        return src, rep, d, want
    import consan

    args, (d,), _ab = make_args()
    rep = consan.check(src, g.KERNEL, grid=g.grid(TMA_M), block=g.BLOCK, args=args,
                       options=(arch_option(),))
    return src, rep, d.get(), want


# The buffer tables in shared memory (default) or in device memory (CONSAN_VC_SMEM=0).
TABLES = ("shared", "device")


@pytest.fixture(params=["inline", "calls"])
def groups(request, monkeypatch):
    """The wgmma groups and barrier 0 written out inline (a 16-byte granule module: with the
    tables in shared memory its warps have the record they need; instrument/
    inline_barriers.py), and as calls (CONSAN_INLINE_MAX=0)."""
    if request.param == "calls":
        monkeypatch.setenv("CONSAN_INLINE_MAX", "0")
    return request.param


@pytest.mark.parametrize("tables", TABLES)
def test_tma_wgmma_gemm_is_clean_and_exact(tables, groups, monkeypatch):
    monkeypatch.setenv("CONSAN_VC_SMEM", "1" if tables == "shared" else "0")
    _, rep, got, want = _tma_gemm(racy=False)  # the native bits
    assert rep.ok and not rep.notes and not rep.unmodeled, str(rep)
    assert rep.launch["tables"] == tables
    assert rep.header["walked"] == 0  # device tables: every wgmma read retired by summary
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("tables", TABLES)
def test_tma_refill_before_wgmma_wait_is_a_pending_read(tables, groups, monkeypatch):
    monkeypatch.setenv("CONSAN_VC_SMEM", "1" if tables == "shared" else "0")
    src, rep, _, _ = _tma_gemm(racy=True)
    assert {v.kind for v in rep.violations} == {"async.pending-read"}, str(rep)
    assert rep.launch["tables"] == tables
    if tables == "device":
        assert rep.header["walked"] > 0  # the early refill's blocks, walked to name the reads
    # the copy's line; NVRTC merges the refill with the prologue's issue, so the inline
    # chain may name either call
    assert all(line_of(src, "@tma") in lines(v.site) for v in rep.violations), str(rep)
    assert all(line_of(src, "@mma") in lines(v.prev_site) for v in rep.violations), str(rep)
