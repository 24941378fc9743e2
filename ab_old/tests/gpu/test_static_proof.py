"""The proof before launch (instrument/static_proof.py) against the dynamic checker on the
GPU: Triton's softmax PTX and each of its mutants without one barrier; Triton's pipelined
matmul (cp.async, wgmma) and each of its mutants without one barrier or wait. Where the
proof holds, the instrumented kernel must report nothing; where it is refused, the checker
must find the race the missing barrier or wait opens."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tests.cpu.test_static_proof_async import MUTANTS

pytestmark = pytest.mark.gpu

SOFTMAX = (Path(__file__).resolve().parents[1] / "corpus" / "triton" /
           "triton_softmax.ptx").read_text()
BARS = [i for i, ln in enumerate(SOFTMAX.splitlines()) if re.fullmatch(r"\s*bar\.sync\s+0;", ln)]
ROWS, COLS = 64, 1000
SCRATCH = 16  # bytes of dynamic shared memory Triton launches it with (4 warps)


def _mutant(which: int | None) -> str:
    lines = SOFTMAX.splitlines()
    if which is not None:
        del lines[BARS[which]]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("which", [None, *range(len(BARS))],
                         ids=["as-compiled", *(f"no-barrier-{i}" for i in range(len(BARS)))])
def test_the_proof_holds_exactly_where_the_checker_finds_nothing(which):
    import cupy as cp

    import consan
    from instrument.rewrite import instrument

    ptx = _mutant(which)
    proven = bool(instrument(ptx, "softmax.ptx").proven)
    x = cp.asarray(np.random.default_rng(3).standard_normal((ROWS, COLS), dtype=np.float32))
    out = cp.zeros_like(x)
    # (Triton drops nothing here: x, out, the row stride, the columns, two scratch pointers;
    # its reductions take a word per warp of dynamic shared memory)
    rep = consan.check(ptx, "softmax_kernel", grid=(ROWS,), block=(128,),
                       args=(x, out, np.uint32(COLS), np.uint32(COLS), np.uint64(0),
                             np.uint64(0)), shared_mem=SCRATCH, source_name="softmax.ptx")
    kinds = sorted({v.kind for v in rep.violations})
    assert proven == (which is None)
    assert (not kinds) == proven, kinds
    if proven:
        e = np.exp(x.get() - x.get().max(axis=1, keepdims=True))
        np.testing.assert_allclose(out.get(), e / e.sum(axis=1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("key", ["reduce", "named-count"])
def test_a_cupy_kernel_proven_at_its_launch_runs_natively_and_its_racy_twin_is_caught(key):
    """CUDA C++ has no .reqntid: the proof is made for the block of the launch. The GPU
    suite's tree reduction, and its handoff through a named barrier (`bar.arrive 1, 64` /
    `bar.sync 1, 64`), run natively, proven, with the bits of their native run; their
    twins (without one barrier; with a count of 32 at the sync) are instrumented and
    reported."""
    import cupy as cp

    from consan import frontends, session
    from tests.kernels import gpu_kernels as K

    tw = K.TWIN_BY_KEY[key]
    x = cp.arange(K.IN_WORDS, dtype=cp.int32)

    def launch(src: str, name: str):
        out = cp.zeros(K.OUT_WORDS, dtype=cp.int32)
        cp.RawKernel(src, name)(tw.grid, tw.block, (x, out))
        cp.cuda.Device().synchronize()
        return out.get()

    # (CuPy keeps one module per source text: the native run gets its own, else the
    # session would find the kernel compiled before it started, and not check it)
    native = launch(tw.clean_src + "\n// native\n", tw.clean_name)
    s = session.Session(session.Options(count_other_launches=False), print_findings=False)
    with frontends.sanitizing(s):
        clean = launch(tw.clean_src, tw.clean_name)
        launch(tw.racy_src, tw.racy_name)
    rep = s.report
    stats = rep.kernels[tw.clean_name]
    assert stats.launches_checked == 1 and stats.proven.startswith("proven race-free"), stats
    assert clean.tobytes() == native.tobytes()
    racy = rep.kernels[tw.racy_name]
    assert racy.launches_checked == 1 and not racy.proven and racy.shadow_bytes > 0
    assert racy.findings and set(racy.findings) <= set(tw.kinds), racy.findings


def test_a_cupy_gemm_of_two_shared_arrays_is_proven_and_keeps_its_bits():
    """The cp.async + ldmatrix + mma.sync GEMM (tests/kernels/mma_gemm.py) keeps its two
    operand tiles in two `__shared__` arrays: proven for its launch's M, N and K, it runs
    natively under a session with the bits of its native run."""
    import cupy as cp

    from consan import frontends, session
    from tests.kernels import mma_gemm as g

    size = 256
    a, bt, _, _ = g.inputs(cp, size, size, size)
    cc = cp.cuda.Device().compute_capability
    arch_options = (f"-arch=sm_{cc}a" if cc == "90" else f"-arch=sm_{cc}",)

    def launch(src: str):
        c = cp.zeros((size, size), dtype=cp.float32)
        cp.RawKernel(src, g.KERNEL, options=tuple(arch_options))(
            g.grid(size, size), g.BLOCK, g.args(a, bt, c, size, size, size))
        cp.cuda.Device().synchronize()
        return c.get()

    native = launch(g.SOURCE + "\n// native\n")
    s = session.Session(session.Options(count_other_launches=False), print_findings=False)
    with frontends.sanitizing(s):
        checked = launch(g.SOURCE)
    stats = s.report.kernels[g.KERNEL]
    assert s.report.ok and stats.launches_checked == 1, s.report
    assert stats.proven.startswith("proven race-free"), stats
    assert checked.tobytes() == native.tobytes()


@pytest.mark.parametrize("racy", [False, True], ids=["clean", "refill-before-wgmma-wait"])
def test_a_tma_wgmma_gemm_is_proven_for_its_maps_and_its_racy_twin_is_caught(racy):
    """The TMA + wgmma GEMM (tests/kernels/tma_wgmma_gemm.py) under a session, as `consan
    run` takes it: proven for its launch's tensor maps and K, it runs natively with the
    bits of its native run; its seed-004 twin is refused, instrumented and reported."""
    import cupy as cp

    from consan import frontends, session
    from tests.kernels import tma_wgmma_gemm as g

    m, k = 2 * 64, 4 * 64
    cc = cp.cuda.Device().compute_capability
    options = (f"-arch=sm_{cc}a" if cc == "90" else f"-arch=sm_{cc}",)

    def launch(src: str):
        a, b, d, _ = g.inputs(cp, m, k)
        cp.RawKernel(src, g.KERNEL, options=options)(g.grid(m), g.BLOCK, g.args(a, b, d, k))
        cp.cuda.Device().synchronize()
        return d.get()

    src = g.source(racy)
    s = session.Session(session.Options(count_other_launches=False), print_findings=False)
    with frontends.sanitizing(s):
        checked = launch(src)
    stats = s.report.kernels[g.KERNEL]
    assert stats.launches_checked == 1, s.report
    if racy:
        assert not stats.proven, stats
        assert {f.finding.kind for f in s.report.findings} == {"async.pending-read"}, s.report
        return
    assert s.report.ok and stats.proven.startswith("proven race-free"), (s.report, stats)
    assert checked.tobytes() == launch(src + "\n// native\n").tobytes()
    np.testing.assert_array_equal(checked, g.inputs(np, m, k)[3])


MATMUL = (Path(__file__).resolve().parents[1] / "corpus" / "triton" /
          "triton_matmul_s3.ptx").read_text()
MATMUL_SIZE = 512  # M = N = K (tests/corpus/gen_triton.py: BM = BN = 128, BK = 64, 3 stages)
# (line, its replacement): the mutants of tests/cpu/test_static_proof_async.py, which the
# proof refuses, and the prologue's barrier removed, which orders no shared access
MATMUL_MUTANTS = [(166, ""), *((line, new) for line, new, _ in MUTANTS)]


@pytest.mark.parametrize("mutant", [None, *MATMUL_MUTANTS],
                         ids=["as-compiled", *(f"line-{ln}-{'gone' if not new else 'changed'}"
                                               for ln, new in MATMUL_MUTANTS)])
def test_the_matmul_proof_holds_exactly_where_the_checker_finds_nothing(mutant):
    """Triton's cp.async + wgmma matmul, proven for its launch's M, N and K: the checker
    must find nothing where the proof holds, and a race in each mutant it refuses."""
    import cupy as cp

    import consan
    from tests.cpu.test_static_proof_async import SIZES, _prove

    lines = MATMUL.splitlines()
    if mutant is not None:
        lines[mutant[0] - 1] = mutant[1]
    ptx = "\n".join(lines) + "\n"
    proven = not isinstance(_prove(ptx, SIZES), str)
    n = MATMUL_SIZE
    rng = np.random.default_rng(5)
    a = cp.asarray(rng.standard_normal((n, n)).astype(np.float16))
    b = cp.asarray(rng.standard_normal((n, n)).astype(np.float16))
    c = cp.zeros((n, n), dtype=cp.float16)
    rep = consan.check(ptx, "matmul_kernel", grid=(n // 128, n // 128), block=(256,),
                       args=(a, b, c, np.uint32(n), np.uint32(n), np.uint32(n), np.uint64(0),
                             np.uint64(0)), shared_mem=98304, source_name="matmul.ptx")
    kinds = sorted({v.kind for v in rep.violations})
    assert proven == (mutant is None or mutant[0] == 166)
    assert (not kinds) == proven, kinds
    if proven:
        want = (a.astype(cp.float32) @ b.astype(cp.float32)).astype(cp.float16)
        np.testing.assert_allclose(c.get().astype(np.float32), want.get().astype(np.float32),
                                   rtol=2e-2, atol=0.25)


@pytest.mark.parametrize("type_", ["u32", "s32", "u64", "s64"])
def test_the_evaluators_bit_field_extract_is_the_gpus(type_):
    """`bfe` as the proof evaluates it gives the GPU's bits for every (a, pos, len) it
    calls known (Triton's sm_80 matmul and attention kernels address shared memory through
    `bfe.s32`)."""
    import cupy as cp

    from instrument.ptx import parse
    from instrument.static_proof import _Prover, _Val
    from tests.cpu.test_static_proof import kernel
    from tests.gpu_util import arch_option

    bits = int(type_[1:])
    ctype = {"u32": "unsigned", "s32": "int", "u64": "unsigned long long",
             "s64": "long long"}[type_]
    reg = "r" if bits == 32 else "l"
    src = f"""
extern "C" __global__ void bfe(const {ctype}* a, const unsigned* pos, const unsigned* len,
                               {ctype}* out) {{
    unsigned i = threadIdx.x;
    {ctype} d;
    asm("bfe.{type_} %0, %1, %2, %3;" : "={reg}"(d) : "{reg}"(a[i]), "r"(pos[i]), "r"(len[i]));
    out[i] = d;
}}"""
    rng = np.random.default_rng(11)
    a = rng.integers(0, 1 << 63, 1024, dtype=np.uint64) & np.uint64((1 << bits) - 1)
    pos = rng.integers(0, bits + 4, 1024).astype(np.uint32)
    ln = rng.integers(0, bits + 4, 1024).astype(np.uint32)
    dt = np.uint32 if bits == 32 else np.uint64
    out = cp.zeros(1024, dtype=dt)
    cp.RawKernel(src, "bfe", options=(arch_option(),))(
        (1,), (1024,), (cp.asarray(a.astype(dt)), cp.asarray(pos), cp.asarray(ln), out))
    gpu = out.get().astype(np.uint64)

    p = _Prover(parse(kernel(""), "t.ptx").functions[0], (1024, 1, 1), lambda it: None, set())
    r = "%rd" if bits == 64 else "%r"
    for name, v in ((f"{r}1", a), (f"{r}2", pos.astype(np.uint64)),
                    (f"{r}3", ln.astype(np.uint64))):
        p.regs[name] = _Val(None, v, np.ones(1024, dtype=bool))
    got = p._evaluate(["bfe", type_], [f"{r}4", f"{r}1", f"{r}2", f"{r}3"], [f"{r}4"])[f"{r}4"]
    assert got.known.sum() > 600
    np.testing.assert_array_equal(got.a[got.known], gpu[got.known])


PERSISTENT_SRC = r"""
extern "C" __global__ void persistent_shift(const int* x, int* out, int tiles) {
    // each CTA takes tiles blockIdx.x, blockIdx.x + gridDim.x, ...: a tile is copied into
    // shared memory by cp.async, and each thread writes out its neighbour's word
    __shared__ int s[256];
    unsigned at = (unsigned)__cvta_generic_to_shared(&s[threadIdx.x]);
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int* src = x + tile * 256 + threadIdx.x;
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(at), "l"(src));
        asm volatile("cp.async.wait_all;" ::: "memory");
        __syncthreads();
        int v = s[(threadIdx.x + 1) % 256];
        out[tile * 256 + threadIdx.x] = v;
        __syncthreads();  // @next-tile
    }
}
"""


@pytest.mark.parametrize("racy", [False, True], ids=["clean", "no-barrier-before-next-tile"])
def test_a_persistent_cupy_kernel_is_proven_for_its_grid_each_way_a_cta_can_go(racy):
    """A persistent kernel whose tile loop holds a cp.async: its trip count is each CTA's
    own (12 tiles over 8 CTAs: one or two), so each way is followed on its own at launch.
    Without the barrier before the next tile, a CTA's second copy overwrites a word its
    neighbour thread may still be reading: the launch whose CTAs run two tiles is refused,
    runs instrumented and is reported; one whose CTAs run one tile each is proven. Proven
    launches run natively with the bits of their native run."""
    import cupy as cp

    from consan import frontends, session
    from tests.gpu_util import arch_option

    src = PERSISTENT_SRC.replace("__syncthreads();  // @next-tile", "") if racy else \
        PERSISTENT_SRC
    tiles = 12
    x = cp.arange(tiles * 256, dtype=cp.int32)

    def launch(text: str, grid: int):
        out = cp.zeros(tiles * 256, dtype=cp.int32)
        cp.RawKernel(text, "persistent_shift", options=(arch_option(),))(
            (grid,), (256,), (x, out, np.int32(tiles)))
        cp.cuda.Device().synchronize()
        return out.get()

    want = np.roll(np.arange(tiles * 256).reshape(tiles, 256), -1, axis=1).ravel()
    for grid, proven in ((8, not racy), (tiles, True)):
        native = launch(src + f"\n// native {grid}\n", grid)
        s = session.Session(session.Options(count_other_launches=False), print_findings=False)
        with frontends.sanitizing(s):
            got = launch(src + f"\n// {grid}\n", grid)
        stats = s.report.kernels["persistent_shift"]
        assert stats.launches_checked == 1
        assert bool(stats.proven) == proven, (grid, stats.proven)
        if proven:
            assert stats.proven.startswith("proven race-free") and not stats.findings
            assert got.tobytes() == native.tobytes()
            np.testing.assert_array_equal(got, want)
        else:
            assert "race.war" in stats.findings, stats.findings


@pytest.mark.parametrize("proofs", [True, False], ids=["proven", "instrumented"])
def test_a_named_barrier_ring_runs_with_its_native_bits_and_its_mutant_is_caught(
        proofs, monkeypatch):
    """The producer-consumer ring over named barriers (tests/kernels/named_ring.py): proven
    at launch for its tile count, it runs natively; with CONSAN_PROOF=0 it runs instrumented
    and the checker finds nothing; either way with the bits of its native run. The mutant
    whose consumers free a stage before reading it is refused, runs instrumented and is
    reported (the producers' refill races with the reads)."""
    import cupy as cp

    from tests.kernels import named_ring as R

    monkeypatch.setenv("CONSAN_PROOF", "1" if proofs else "0")
    ctas, tiles = 16, 24
    host = np.random.default_rng(5).integers(-1000, 1000, ctas * tiles * R.TILE,
                                             dtype=np.int32)
    x = cp.asarray(host)

    def launch(text: str):
        out = cp.zeros(ctas * 64, dtype=cp.int32)
        cp.RawKernel(text, R.KERNEL)((ctas,), R.BLOCK, (x, out, np.int32(tiles)))
        cp.cuda.Device().synchronize()
        return out.get()

    tag = f"\n// {proofs}\n"
    native = launch(R.source() + "\n// native" + tag)
    np.testing.assert_array_equal(native, R.reference(host, tiles, ctas))
    _clean_and_racy_in_sessions(launch, R.KERNEL, native, R.source() + tag,
                                R.source("early_free") + tag, {"race.war", "race.raw"}, proofs)


def test_bench_cleans_histogram_is_proven_and_its_racy_twin_is_caught():
    """The grid-stride histogram (`atomicAdd(&bins[data[i]], 1u)` into shared bins, its
    addresses known only within the bins' bounds, its trip count each thread's own): proven
    at its launch, it runs natively with the bits of its native run and the histogram of
    its input; without the barrier between zeroing the bins and counting into them it is
    refused, runs instrumented and is reported."""
    import cupy as cp

    from tests.kernels import gpu_kernels as K

    setup = K.clean_setup("histogram256", 1 << 22, cp, seed=7)
    racy_src = setup.source.replace("    bins[t] = 0u;\n    __syncthreads();\n",
                                    "    bins[t] = 0u;\n")
    assert racy_src != setup.source

    def launch(src: str):
        args, outputs = setup.make_args(cp)
        cp.RawKernel(src, setup.name)(setup.grid, setup.block, args)
        cp.cuda.Device().synchronize()
        return outputs[0].get()

    native = launch(setup.source + "\n// native\n")
    np.testing.assert_array_equal(native, setup.reference()[0])
    _clean_and_racy_in_sessions(launch, setup.name, native, setup.source, racy_src,
                                {"race.raw", "race.waw", "race.war", "uninit.read"})


def test_a_cluster_kernel_with_cta_barriers_is_proven_and_its_racy_twin_is_caught():
    """tests/gpu/test_cluster.py's kernel (clusters of 2; each CTA's warp 0 writes, warp 1
    reads after the CTA's `__syncthreads()`): proven at launch, each CTA's barrier its own,
    it runs natively with the bits of its native run; without the barrier it is refused,
    runs instrumented and is reported."""
    import cupy as cp

    from tests.gpu.test_cluster import CLUSTER
    from tests.gpu_util import arch_option, need_sm90

    need_sm90()
    x = cp.asarray(np.random.default_rng(5).random(256, dtype=np.float32))

    def launch(src: str):
        out = cp.zeros(128, dtype=cp.float32)
        cp.RawKernel(src, "in_cluster", options=(arch_option(),))((4,), (64,), (x, out))
        cp.cuda.Device().synchronize()
        return out.get()

    clean = CLUSTER.replace("SYNC", "__syncthreads();")
    native = launch(clean + "\n// native\n")
    np.testing.assert_array_equal(native.reshape(4, 32), x.get().reshape(4, 64)[:, :32])
    _clean_and_racy_in_sessions(launch, "in_cluster", native, clean + "\n// session\n",
                                CLUSTER.replace("SYNC", "") + "\n// session\n", {"race.raw"})


@pytest.mark.parametrize("tensor", [False, True], ids=["bulk", "tensor"])
def test_a_multicast_cluster_kernel_is_proven_and_its_racy_twin_is_caught(tensor):
    """tests/gpu/test_multicast.py's kernel in clusters of 4: each rank multicasts its
    slice (a bulk copy, or a TMA box) into every CTA, each CTA waits on its own mbarrier.
    Proven at launch (for its tensor map's box), it runs natively with the bits of its
    native run; its twin that reads before its own wait is refused, runs instrumented and
    reports `async.pending-write`."""
    import cupy as cp

    from tests.gpu.test_multicast import CLUSTERS, N, _inputs, _src
    from tests.gpu_util import arch_option, need_sm90

    need_sm90("multicast copies")
    cluster = 4
    x, tmap = _inputs(cluster)

    def launch(src: str):
        out = cp.zeros(CLUSTERS * cluster * N, dtype=cp.float32)
        cp.RawKernel(src, "multicast", options=(arch_option(),))(
            (CLUSTERS * cluster,), (N,), (x, tmap, out))
        cp.cuda.Device().synchronize()
        return out.get()

    clean = _src(cluster, tensor=tensor)
    native = launch(clean + "\n// native\n")
    np.testing.assert_array_equal(native, np.repeat(x.get(), cluster, axis=0).reshape(-1))
    _clean_and_racy_in_sessions(
        launch, "multicast", native, clean + "\n// session\n",
        _src(cluster, tensor=tensor, early_read=True) + "\n// session\n",
        {"async.pending-write"})


def _clean_and_racy_in_sessions(launch, kernel: str, native: np.ndarray, clean: str,
                                racy: str, found: set[str], proven: bool = True) -> None:
    """`clean` and `racy` launched each under a session of its own: the clean one proven
    (where `proven`: else instrumented), with no finding and the bits of `native`; the
    racy one instrumented and reported, every finding one of `found`."""
    from consan import frontends, session

    for src, is_clean in ((clean, True), (racy, False)):
        s = session.Session(session.Options(count_other_launches=False), print_findings=False)
        with frontends.sanitizing(s):
            got = launch(src)
        stats = s.report.kernels[kernel]
        assert stats.launches_checked == 1, stats
        assert bool(stats.proven) == (is_clean and proven), stats.proven
        if is_clean:
            assert not stats.findings and got.tobytes() == native.tobytes(), stats.findings
        else:
            assert stats.findings and set(stats.findings) <= found, stats.findings
