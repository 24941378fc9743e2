"""A warp is whole after a probe that one of its lanes called, as it is natively.

`if (t == 0) <op>`, then every lane writes how many lanes run with it (`__activemask()`):
natively 32 in every warp, the warp together again after the branch. A probe function
(each keeps convergence barriers) called by lane 0 alone released the lanes waiting for it
at the branch's end, and the warp then ran split until the kernel ended (docs/model.md,
*Probes called from a branch*): lane 0 wrote 1 and the others 31, where natively they
wrote 32 (measured on the H100 for every case here, before any was mended). Each operation
here is one a kernel makes from one lane: a shared store or atomic, a cp.async, a bulk
copy and a bulk store. The output must be the native bits. A bulk copy's and a bulk store's
probes are called by every lane of the warp, the others marked off (instrument/converge.py);
so are a cp.async group's commit and wait; a shared store's, an atomic's and a cp.async's
probes too, the others echoing lane 0's access (instrument/echo.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import arch_option, check_against_native, need_sm90, poisoned

pytestmark = pytest.mark.gpu

BLOCKS = 2  # (CTAs of 64 threads: two warps each)


def _input(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random(64, dtype=np.float32)


def _checked(src: str, kernel: str, seed: int, out_len: int = BLOCKS * 64):
    """`kernel(in, out)` natively and under consan, BLOCKS CTAs of 64 threads, `in` the 64
    floats of `_input(seed)` and `out` poisoned: (report, out as NumPy, bit for bit the
    native one's, and `in`)."""
    import cupy as cp

    def make_args():
        out = poisoned(out_len, cp.float32)
        return (cp.asarray(_input(seed)), out), [out]

    rep, (out,) = check_against_native(src, kernel, make_args, grid=(BLOCKS,), block=(64,),
                                       options=(arch_option(),))
    return rep, out, _input(seed)

# The kernels' shared-address helper (their sources start with it).
SA = r"""
__device__ __forceinline__ unsigned sa(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
"""

KERNEL = SA + r"""extern "C" __global__ void one_lane(const float* in, float* out) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ __align__(128) float s[64];
    int t = threadIdx.x;
    INIT
    if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(sa(&bar)) : "memory");
    __syncthreads();
    if (t == 0) {
        OP
    }
    float lanes = (float)__popc(__activemask());
    AFTER
    __syncthreads();
    out[blockIdx.x * 64 + t] = s[t] + lanes;
}
"""

WAIT = ('asm volatile("{\\n .reg .pred p;\\n W: mbarrier.try_wait.parity.shared::cta.b64 p, '
        '[%0], 0;\\n @!p bra W;\\n}" :: "r"(sa(&bar)) : "memory");')

ZERO = "s[t] = 0.0f;"
# (each thread's generic writes reach the async proxy through its own fence)
ZERO_FENCED = 'ZERO asm volatile("fence.proxy.async.shared::cta;" ::: "memory");'.replace(
    "ZERO", ZERO)

# case: (what s[] starts as, lane 0's operation, what every lane does after it, its sm)
CASES = {
    "store": (ZERO, "s[0] = in[0];", "", 80),
    "atomic": (ZERO, "atomicAdd(&s[1], in[1]);", "", 80),
    "cp-async": (ZERO, 'asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" '
                 ':: "r"(sa(s)), "l"(in) : "memory");\n'
                 '        asm volatile("cp.async.wait_all;" ::: "memory");', "", 80),
    "bulk-copy": ("", 'asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 256;" '
                  ':: "r"(sa(&bar)) : "memory");\n'
                  '        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::'
                  'complete_tx::bytes [%0], [%1], 256, [%2];" :: "r"(sa(s)), "l"(in), '
                  '"r"(sa(&bar)) : "memory");', WAIT, 90),
    "bulk-store": (ZERO_FENCED, 'asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], '
                   '[%1], 256;" :: "l"(out + 64 * gridDim.x + 64 * blockIdx.x), "r"(sa(s)) '
                   ': "memory");\n'
                   '        asm volatile("cp.async.bulk.commit_group;" ::: "memory");\n'
                   '        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");',
                   "", 90),
}


# (Before their probes were called by every lane, on the H100 each case left warp 0 split,
# lane 0 reading 1 and the others 31; the cp.async's until its group's wait had a lanes-off
# form, so that its region converts.)
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_warp_is_whole_after_a_probe_lane_0_called(case):
    init, op, after, sm = CASES[case]
    if sm >= 90:
        need_sm90("bulk copies")
    src = KERNEL.replace("INIT", init).replace("OP", op).replace("AFTER", after)
    # (out's second half: the bulk store's)
    rep, out, _ = _checked(src, "one_lane", 5, out_len=2 * BLOCKS * 64)
    assert rep.ok, str(rep)
    # natively too: 32 lanes in every warp after the branch
    want = np.tile(_smem_after(case), BLOCKS) + np.float32(32.0)
    np.testing.assert_array_equal(out[:BLOCKS * 64], want)


def _smem_after(case: str) -> np.ndarray:
    """What s[] holds at the end (before the lane count is added)."""
    x = _input(5)
    s = np.zeros(64, dtype=np.float32)
    if case == "store":
        s[0] = x[0]
    elif case == "atomic":
        s[1] = x[1]
    elif case == "cp-async":
        s[:4] = x[:4]
    elif case == "bulk-copy":
        s[:] = x
    return s


# The phase-mode fast path (instrument/fast_path.py) tests an access inline and calls its
# probe only from the lanes whose test failed: in a loop's second trip, half of each warp
# repeats what it did in the first (its test passes) and the other half does something new
# (its test fails, and those lanes alone call the probe). After the loop, every lane
# writes how many lanes run with it: natively 32.
FAST = r"""
extern "C" __global__ void fast_split(const float* in, float* out) {
    __shared__ float s[128];
    int t = threadIdx.x;
    s[t] = 0.0f;
    s[t + 64] = 0.0f;
    __syncthreads();
    #pragma unroll 1
    for (int i = 0; i < 2; ++i) {
        int j = (i == 1 && (t & 31) >= 16) ? t + 64 : t;
        BODY
    }
    float lanes = (float)__popc(__activemask());
    __syncthreads();
    out[blockIdx.x * 64 + t] = s[t] + s[t + 64] + lanes;
}
"""

FAST_CASES = {
    # a granule's atomic repeated (the test passes) or new (it fails: the probe is called)
    "atomic": "atomicAdd(&s[j], in[t]);",
    # a write of a granule the warp read in this phase (its readers are looked for)
    "write after read": "float v = s[j]; s[j] = v + in[t];",
}


@pytest.mark.parametrize("case", sorted(FAST_CASES))
def test_the_warp_is_whole_after_the_fast_path_called_for_part_of_it(case):
    rep, out, x = _checked(FAST.replace("BODY", FAST_CASES[case]), "fast_split", 7)
    assert rep.ok, str(rep)
    lane = np.arange(64) & 31
    s = np.where(lane < 16, x + x, x)  # s[t]: once, or twice where the lane repeats
    want = np.tile(s + np.where(lane >= 16, x, 0) + np.float32(32.0), BLOCKS)
    np.testing.assert_array_equal(out, want.astype(np.float32))


# `@p st.shared` / `@p red.shared` with p true in lane 0 alone (as Triton writes a warp's
# partial result), no branch: its probe is called by every lane, the others echoing
# (instrument/echo.py). The store takes the phase-mode inline update, the atomic its probe.
GUARDED = SA + r"""extern "C" __global__ void guarded(const float* in, float* out) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = 0.0f;
    __syncthreads();
    asm volatile("{ .reg .pred p; setp.eq.u32 p, %0, 0; @p OP [%1], %2; }"
                 :: "r"(t & 31), "r"(sa(&s[t >> 5])), "f"(in[t]) : "memory");
    float lanes = (float)__popc(__activemask());
    __syncthreads();
    out[blockIdx.x * 64 + t] = s[t] + lanes;
}
"""


@pytest.mark.parametrize("op", ["st.shared.f32", "red.shared.add.f32"])
def test_the_warp_is_whole_after_a_guarded_access_of_lane_0(op):
    rep, out, x = _checked(GUARDED.replace("OP", op), "guarded", 9)
    assert rep.ok, str(rep)
    s = np.zeros(64, dtype=np.float32)
    s[0], s[1] = x[0], x[32]  # (each warp's lane 0: s[warp] = in[t])
    np.testing.assert_array_equal(out, np.tile(s + np.float32(32.0), BLOCKS))


# A probe that finds a race in part of its warp: warp 1's lanes 0-15 write s[0..15] in the
# phase in which warp 0 writes s[0..31] (s[16..31] a second time, its own), so whichever
# comes second finds race.waw in lanes 0-15 only (each lane its own granule; the echoing
# lanes' copy of lane 0's write finds the granule already the warp's). The probe came back
# with its warp split (lane 0, which recorded the finding, apart from the others: on the
# H100 in phase and vector-clock mode, tables in shared or device memory alike) until each
# probe's body sat in a region ptxas closes with a reconvergence before its return
# (checker CS_REJOINED, instrument/rejoin.py).
# After the writes, every lane writes how many lanes run with it: natively 32. MODE: an
# mbarrier makes the module one of vector-clock mode.
RACE_PART = r"""
extern "C" __global__ void race_part(const float* in, float* out) {
    __shared__ float s[64];
    __shared__ __align__(8) unsigned long long bar;
    int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    s[t] = in[t];
    MODE
    __syncthreads();
    if (warp == 0 && lane >= 16) s[lane] = in[t] + 2.0f;
    if (warp == 1 && lane < 16) s[lane] = in[t] + 1.0f;  // @part-write-1
    if (warp == 0) s[lane] = in[t] + 3.0f;  // @part-write-0
    float lanes = (float)__popc(__activemask());
    __syncthreads();
    out[blockIdx.x * 64 + t] = (t >= 16 ? s[t] : 0.0f) + lanes;
}
"""
VC_MODE = ('if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: '
           '"r"((unsigned)__cvta_generic_to_shared(&bar)) : "memory");')


@pytest.mark.parametrize("mode", ["phases", "vector clocks"])
def test_the_warp_is_whole_after_a_probe_found_a_race_in_part_of_it(mode):
    from consan import toolchain
    from instrument.rewrite import instrument
    from tests.gpu_util import line_of

    src = RACE_PART.replace("MODE", VC_MODE if mode == "vector clocks" else "")
    ptx = toolchain.compile_cuda(src, "race_part.cu", ["-arch=compute_80"])
    assert instrument(ptx).phase_mode == (mode == "phases")
    rep, out, x = _checked(src, "race_part", 11)
    pair = {line_of(src, "@part-write-1"), line_of(src, "@part-write-0")}
    assert rep.violations and all(
        v.kind == "race.waw" and {v.line, v.prev_line} == pair for v in rep.violations), str(rep)
    t = np.arange(64)
    s = np.where(t < 32, x + np.float32(3.0), x)  # (s[0..15] racy: not written out)
    want = np.where(t >= 16, s, np.float32(0.0)) + np.float32(32.0)
    np.testing.assert_array_equal(out, np.tile(want.astype(np.float32), BLOCKS))


# The same in vector-clock mode (an mbarrier makes the module async): half of each warp
# reads a 16-byte chunk whose four granules two warps wrote (uneven epochs: the look out
# of line, cs_access16_look_any, a callee that clears convergence barriers B6 and B7:
# benchmarks/convergence_barriers.py --calls), the other half a chunk one lane wrote
# whole (its look inline). Clean; every lane then writes how many lanes run with it.
LOOK_PART = SA + r"""extern "C" __global__ void look_part(const float* in, float* out) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ __align__(16) float s[320];
    int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(sa(&bar)) : "memory");
    s[2 * lane + warp] = in[t];
    reinterpret_cast<float4*>(s + 64)[t] = make_float4(in[t], 1.0f, 2.0f, 3.0f);
    __syncthreads();
    float4 v = reinterpret_cast<const float4*>(s)[lane < 16 ? lane : lane + 16 * warp];
    float lanes = (float)__popc(__activemask());
    out[blockIdx.x * 64 + t] = v.x + v.y + v.z + v.w + lanes;
}
"""


def test_the_warp_is_whole_after_a_16_byte_read_looked_at_out_of_line_in_part_of_it():
    rep, out, x = _checked(LOOK_PART, "look_part", 13)
    assert rep.ok and not rep.violations, str(rep)
    s = np.zeros(320, dtype=np.float32)
    t = np.arange(64)
    s[2 * (t & 31) + (t >> 5)] = x
    s[64:].reshape(64, 4)[:] = np.stack([x, np.ones(64), 2 * np.ones(64), 3 * np.ones(64)],
                                        axis=1).astype(np.float32)
    lane, warp = t & 31, t >> 5
    chunk = np.where(lane < 16, lane, lane + 16 * warp)
    v = s.reshape(80, 4)[chunk]
    want = ((v[:, 0] + v[:, 1]) + v[:, 2]) + v[:, 3] + np.float32(32.0)
    np.testing.assert_array_equal(out, np.tile(want.astype(np.float32), BLOCKS))
