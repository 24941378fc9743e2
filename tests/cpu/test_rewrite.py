"""Parser round trip, the rewriter's output, and assembling instrumented modules."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from consan import toolchain
from consan.layout import Layout
from instrument import abi, converge
from instrument.ptx import PTXSyntaxError, parse
from instrument.rewrite import InstrumentError, instrument
from tests import corpus_build
from tests.probe_calls import args_of, calls, echoed_on, rejoined

TRITON = sorted((corpus_build.CORPUS_DIR / "triton").glob("*.ptx"))
HEADER = ".version 9.0\n.target sm_90a\n.address_size 64\n"


@pytest.fixture(scope="module")
def corpus():
    mods = corpus_build.corpus_ptx()
    mods += [(f"triton/{p.name}", p.read_text()) for p in TRITON]
    return mods


def test_corpus_is_large_enough(corpus):
    assert len(corpus) >= 60
    assert len(TRITON) >= 3


@pytest.fixture(scope="module")
def parsed(corpus):
    """Each corpus module parsed once, for the tests that only read the parse (the rewriter
    takes a module of its own: it changes what it is given)."""
    return [(label, text, parse(text, label)) for label, text in corpus]


def test_round_trip_is_exact(parsed):
    for label, text, mod in parsed:
        assert mod.render() == text, label


def test_parser_sees_functions(parsed):
    for label, _, mod in parsed:
        assert mod.kernels, label
        for fn in mod.functions:
            assert mod.items[fn.open_index].kind == "open"
            assert mod.items[fn.close_index].kind == "close"


# One worker for the two tests that assemble the same corpus modules (corpus_build.first_linked
# links each once per process), and first: it is CI's longest test, a tail when it came last.
@pytest.mark.xdist_group("corpus-links")
def test_every_instrumented_module_assembles(corpus):
    """Instrument each module and link it with the checker build a checked launch of 256
    threads links first (runtime.first_link), for its target (sm_80 / sm_90a)."""

    # The rewrites one after another (the rewriter holds the GIL: threads that only traded
    # it took 16.6 s for this test against 13.9 s, beside a busy core), then the links in
    # threads (nvJitLink lets go of it; kept on disk, a warm run only reads them back).
    for label, text in corpus:
        corpus_build.instrumented(label, text)
    with ThreadPoolExecutor(max_workers=4) as pool:
        linked = list(pool.map(lambda item: corpus_build.first_linked(*item), corpus))
    archs = []
    for (label, _), (ins, arch, cubin) in zip(corpus, linked, strict=True):
        assert parse(ins.ptx).render() == ins.ptx
        n, ok = rejoined(ins.ptx)  # (every probe call in a region the warp leaves whole)
        assert n == ok > 0, label
        assert cubin[:4] == b"\x7fELF", label
        archs.append(arch.sm)
    assert "sm_80" in archs and "sm_90a" in archs


SMALL = HEADER + """
.visible .entry k(
\t.param .u64 k_param_0
)
.maxntid 128, 1, 1
{
\t.reg .pred %p<3>;
\t.reg .b32 %r<9>;
\t.reg .b64 %rd<5>;
\t.shared .align 4 .b8 smem[512];
\t.loc 1 10 3
\tmov.u32 %r1, %tid.x;
$L__BB0_1:
\tsetp.lt.u32 %p1, %r1, 64;
\t.loc 1 12 5
\t@%p1 st.shared.u32 [%r2+4], %r1;
\t.loc 1 13 5
\tbar.sync 0;
\t.loc 1 14 2
\tmov.u32 %r7, 0;
\t.loc 2 7 9, function_name $L__info_string0, inlined_at 1 14 2
\tld.shared.v2.u32 {%r3, %r4}, [smem+8];
\tbar.arrive 1, 64;
\tbar.red.popc.u32 %r5, 2, 96, %p1;
\t@%p1 bra $L__BB0_1;
\tld.u32 %r6, [%rd1];
\tret;
}
\t.file 1 "/src/k.cu"
\t.file 2 "/src/helpers.cuh"
\t.section .debug_str
\t{
$L__info_string0:
.b8 95,90,54,104,101,108,112,101,114,80,105,0
\t}
"""


def test_rewrite_small_module():
    ins = instrument(SMALL, "small.ptx")
    events = [s.event for s in ins.sites.sites]
    assert events == ["access.write", "barrier.sync", "access.read", "barrier.arrive",
                      "barrier.red", "access.read", "exit"]
    w, bar, r, *_ = ins.sites.sites
    assert (w.loc.file, w.loc.line, w.loc.col) == ("/src/k.cu", 12, 5)
    assert bar.loc.line == 13
    assert (r.loc.file, r.loc.line, r.loc.function) == ("/src/helpers.cuh", 7, "helper")
    assert [(c.file, c.line) for c in r.inlined_at] == [("/src/k.cu", 14)]
    assert r.size == 8
    out = ins.ptx
    assert parse(out).render() == out
    # predicated access -> a probe every lane calls, those of the guard making the access
    # (echo.py), with the address computed from a 32-bit register
    assert "cvt.u64.u32 %__cs_a, %r2;" in out and "add.s64 %__cs_a, %__cs_a, 4;" in out
    assert "%p1" in [echoed_on(out, c) for c in calls(out, abi.PROBE_ACCESS)]
    # symbol address
    assert "mov.u64 %__cs_a, smem;" in out
    # barrier: arrive before and wait after; arrive-only has no wait
    assert [c.ret for c in calls(out, abi.PROBE_BAR_ARRIVE)] == ["%__cs_tok"] * 3
    assert out.count(f"call {abi.PROBE_BAR_WAIT}") == 2
    # the CTA claims its slot before the first instruction, not inside the loop
    begin = out.index(f"call (__cs_rb), {abi.PROBE_CTA_BEGIN};")
    assert begin < out.index("mov.u32 %r1, %tid.x;") < out.index("$L__BB0_1:")
    assert begin > out.index("smem[512];")
    assert out.index(f"call {abi.PROBE_THREAD_EXIT}") < out.rindex("ret;")
    assert ".extern .func (.param .b32 __cs_ret) __consan_bar_arrive" in out
    # bar.red with a thread count passes the count
    red = out[out.index("// consan site 4"):]
    assert args_of(red, abi.PROBE_BAR_ARRIVE)[0][:2] == ["2", "96"]


@pytest.mark.parametrize("skip, left", [("", 3), ("read", 1), ("all", 0)])
def test_the_measurement_switch_drops_access_probes_only_where_set(monkeypatch, skip, left):
    """CONSAN_MEASURE_SKIP_ACCESS (benchmarks only) leaves no probe for reads, or for every
    access; unset, every access keeps its probe."""
    monkeypatch.setenv("CONSAN_MEASURE_SKIP_ACCESS", skip)
    out = instrument(SMALL, "small.ptx").ptx
    assert len(calls(out, abi.PROBE_ACCESS)) == left
    assert out.count(f"call {abi.PROBE_BAR_WAIT}") == 2


def test_small_module_assembles_for_both_targets():
    for a in ("sm_80", "sm_90a"):
        arch = toolchain.Arch.parse(a)
        text = SMALL.replace("sm_90a", a)
        toolchain.link_with_checker(instrument(text), "small", arch)


@pytest.mark.parametrize("text,line,col,msg", [
    (HEADER + ".visible .entry k()\n{\n\tld.shared.u32 %r1, [%r2;\n\tret;\n}\n", 6, 21,
     "never closed"),
    (HEADER + ".visible .entry k()\n{\n\tret;\n", 5, 1, "never closed"),
    (HEADER + ".visible .entry k()\n{\n\tret;\n}\n}\n", 8, 1, "without a matching"),
    (HEADER + ".visible .entry k()\n{\n\tmov.u32 %r1, 1\n}\n", 6, 2, "not terminated"),
    (HEADER + "/* unterminated\n.visible .entry k()\n", 4, 1, "unterminated"),
    (HEADER + '.file 1 "k.cu\n', 4, 9, "unterminated string"),
    (HEADER + ".visible .entry k()\n{\n\t# bad\n}\n", 6, 2, "unexpected character"),
])
def test_malformed_ptx_names_line_and_column(text, line, col, msg):
    with pytest.raises(PTXSyntaxError) as e:
        parse(text, "bad.ptx")
    assert (e.value.line, e.value.col) == (line, col), str(e.value)
    assert msg in e.value.msg and str(e.value).startswith(f"bad.ptx:{line}:{col}:")


def test_undeclared_address_register_is_an_error():
    text = HEADER + ".visible .entry k()\n{\n\tst.shared.u32 [%q1], 0;\n\tret;\n}\n"
    with pytest.raises(InstrumentError, match="line 6.*%q1"):
        instrument(text)


def test_module_without_code_is_an_error():
    with pytest.raises(InstrumentError, match="no .entry"):
        instrument(HEADER + ".global .u32 g;\n")


def test_phase_mode_only_with_cta_wide_barriers():
    body = ".visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\tbar.sync 0;\n\t{bar}\n\tret;\n}\n"
    assert instrument(HEADER + body.replace("{bar}", "barrier.sync.aligned 0;")).phase_mode
    assert instrument(HEADER + body.replace("{bar}", "bar.red.popc.u32 %r1, 0, 1;")).phase_mode
    assert instrument(HEADER + body.replace("{bar}", "barrier.sync %r1;")).phase_mode
    for named in ("bar.sync 1, 64;", "bar.arrive 1, 64;", "bar.sync 0, %r2;"):
        assert not instrument(HEADER + body.replace("{bar}", named)).phase_mode, named


def test_barrier_0_rows_only_when_every_barrier_syncs_all_threads_on_barrier_0():
    body = ".visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\tbar.sync 0;\n\t{bar}\n\tret;\n}\n"
    for only in ("barrier.sync.aligned 0;", "bar.red.popc.u32 %r1, 0, 1;", "bar.sync 0;"):
        assert instrument(HEADER + body.replace("{bar}", only)).bar0_only, only
    for other in ("bar.sync 1;", "bar.sync 0, 64;", "bar.arrive 0, 64;", "barrier.sync %r1;"):
        assert not instrument(HEADER + body.replace("{bar}", other)).bar0_only, other


def test_cluster_barrier_probes_arrive_before_and_wait_after():
    body = (".visible .entry k()\n{\n\tbarrier.cluster.arrive.relaxed.aligned;\n"
            "\tbarrier.cluster.wait.aligned;\n\tbarrier.cluster.arrive;\n"
            "\tbarrier.cluster.wait.acquire;\n\tret;\n}\n")
    ins = instrument(HEADER + body)
    assert not ins.phase_mode and not ins.bar0_only and not ins.unmodeled
    assert [s.event for s in ins.sites.sites][:4] == ["barrier.cluster"] * 4
    out = ins.ptx
    ops = [int(a[0]) for a in args_of(out, abi.PROBE_CLUSTER_BAR)]
    relaxed = abi.CLUSTER_ARRIVE | abi.BAR_ALIGNED | abi.BAR_RELAXED
    assert ops[:4] == [relaxed, abi.CLUSTER_WAIT | abi.BAR_ALIGNED, abi.CLUSTER_ARRIVE,
                       abi.CLUSTER_WAIT]
    # the arrive's probe comes before it, the wait's after it
    assert out.index(f"call {abi.PROBE_CLUSTER_BAR}") < out.index("barrier.cluster.arrive.relaxed")
    wait = out.index("barrier.cluster.wait.aligned;")
    assert out.index(f"call {abi.PROBE_CLUSTER_BAR}", wait) < out.index("barrier.cluster.arrive;")
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"))


@pytest.mark.parametrize("fence", ["fence.acq_rel.cluster;", "fence.sc.gpu;", "membar.gl;"])
def test_a_cluster_fence_is_probed_after_it_only_where_a_relaxed_arrival_follows(fence):
    relaxed = (".visible .entry k()\n{\n\t" + fence + "\n\tbarrier.cluster.arrive.relaxed;\n"
               "\tbarrier.cluster.wait;\n\tret;\n}\n")
    ins = instrument(HEADER + relaxed)
    assert [s.event for s in ins.sites.sites][:3] == ["fence.cluster", "barrier.cluster",
                                                      "barrier.cluster"]
    out = ins.ptx
    ops = [int(a[0]) for a in args_of(out, abi.PROBE_CLUSTER_BAR)]
    assert ops[0] == abi.CLUSTER_FENCE
    assert out.index(fence) < out.index(f"call {abi.PROBE_CLUSTER_BAR}")
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"))
    plain = instrument(HEADER + relaxed.replace(".relaxed", ".release"))
    assert [s.event for s in plain.sites.sites][:2] == ["barrier.cluster", "barrier.cluster"]
    assert not plain.unmodeled


def test_mbarrier_operations_are_guarded_by_the_checker():
    body = (".visible .entry k()\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n"
            "\tmbarrier.init.shared.b64 [%r1], 1;\n"
            "\t@!%p1 mbarrier.arrive.shared.b64 _, [%r1];\n"
            "\tmbarrier.try_wait.parity.shared.b64 %p1, [%r1], %r2;\n\tret;\n}\n")
    out = instrument(HEADER + body).ptx
    assert "@%__cs_ok mbarrier.init.shared.b64 [%r1], 1;" in out
    assert "@%__cs_ok mbarrier.arrive.shared.b64 _, [%r1];" in out
    assert "@%p1 setp.eq.u32 %__cs_ok, 1, 0;" in out  # the original @!%p1 still holds
    wait = out.index("mbarrier.try_wait")
    assert out.index("selp.u32 %__cs_tok, 2, 0, %p1;") > wait  # probed after, with the outcome
    toolchain.link_with_checker(instrument(HEADER + body), "m", toolchain.Arch.parse("sm_90a"))


def test_inline_chain_is_followed_to_the_kernel():
    src = ("__device__ __forceinline__ void inner(float* s, int i) { s[i] = 1.0f; }\n"
           "__device__ __forceinline__ void outer(float* s, int i) { inner(s, i + 1); }\n"
           "extern \"C\" __global__ void k(float* o) { __shared__ float s[64]; "
           "outer(s, threadIdx.x); __syncthreads(); o[threadIdx.x] = s[threadIdx.x]; }\n")
    ptx = toolchain.compile_cuda(src, "k.cu", ["-arch=compute_90a", "-lineinfo"])
    (w,) = [s for s in instrument(ptx).sites.sites if s.event == "access.write"]
    assert w.loc.line == 1 and w.loc.function == "inner"
    assert [c.line for c in w.inlined_at] == [2, 3]


def test_bulk_store_probes():
    body = (".visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\t.reg .pred %p<2>;\n"
            "\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<3>;\n"
            "\tst.shared.u32 [%r1], %r2;\n"
            "\tfence.proxy.async.shared::cta; // 6.\n"
            "\tbar.sync 0;\n"
            "\t@%p1 cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1+64], %r3;\n"
            "\tcp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32  [%rd2], [%r1], 256;"
            " // 4.\n"
            "\tcp.async.bulk.commit_group;\n"
            "\tcp.async.bulk.wait_group.read 1;\n"
            "\tcp.async.bulk.wait_group 0;\n"
            "\tst.shared.u32 [%r1], %r2;\n\tret;\n}\n")
    ins = instrument(HEADER + body)
    assert not ins.unmodeled
    assert ins.async_proxy and not ins.phase_mode
    assert abi.logical_threads(async_proxy=ins.async_proxy) == abi.AGENT_WGMMA
    events = [s.event for s in ins.sites.sites]
    assert events == ["access.write", "fence.proxy_async", "barrier.sync", "async.bulk_store",
                      "async.bulk_store", "async.bulk_commit", "async.bulk_wait",
                      "async.bulk_wait", "access.write", "exit"]
    out = ins.ptx
    assert parse(out).render() == out
    site = {s.event + str(i): s.id for i, s in enumerate(ins.sites.sites)}

    def probe(i):  # the text of the probe of site i
        start = out.index(f"// consan site {i}\n")
        return out[start:out.index("}", start)]

    store = probe(site["async.bulk_store3"])
    assert f"@%p1 call {abi.PROBE_BULK_STORE}" in store
    assert "add.s64 %__cs_a, %__cs_a, 64;" in store and args_of(store)[0][1] == "%r3"
    assert args_of(probe(site["async.bulk_store4"]))[0][1] == "256"
    # the store and the commit are probed before the instruction, waits and fences after
    assert out.index(f"// consan site {site['async.bulk_store3']}\n") < out.index("@%p1 cp.async")
    assert out.index(f"// consan site {site['async.bulk_commit5']}\n") < out.index(
        "cp.async.bulk.commit_group;")
    assert out.index(f"// consan site {site['async.bulk_wait6']}\n") > out.index(
        "cp.async.bulk.wait_group.read 1;")
    assert out.index(f"// consan site {site['fence.proxy_async1']}\n") > out.index(
        "fence.proxy.async.shared::cta;")
    wait = probe(site["async.bulk_wait6"])
    assert args_of(wait)[0][:2] == [str(abi.BULK_WAIT), "1"]
    fence = probe(site["fence.proxy_async1"])
    assert args_of(fence, abi.PROBE_BULK_GROUP)[0][0] == str(abi.PROXY_FENCE)
    toolchain.link_with_checker(ins, "bulk", toolchain.Arch.parse("sm_90a"))


def test_proxy_fence_alone_keeps_phase_mode():
    body = (".visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\tst.shared.u32 [%r1], %r2;\n"
            "\tfence.proxy.async;\n\tbar.sync 0;\n\tret;\n}\n")
    ins = instrument(HEADER + body)
    assert ins.phase_mode and not ins.async_proxy
    assert abi.logical_threads(async_proxy=ins.async_proxy) == abi.AGENT_BULK
def test_wgmma_corpus_module_is_instrumented_and_assembles():
    f = next(f for f in corpus_build.corpus_files() if f.stem == "wgmma")
    ptx = corpus_build.compile_cached(f.source(), "wgmma.cu",
                                      ["-arch=compute_90a", "-std=c++17", "-lineinfo"])
    ins = instrument(parse(ptx, "wgmma.ptx"))
    assert ins.unmodeled == [] and ins.wgmma and not ins.phase_mode
    assert ins.counts["async.wgmma"] == 3 and ins.counts["async.wgmma_wait"] == 3
    assert ins.counts["async.wgmma_commit"] == 3 and ins.counts["fence.proxy_async"] == 2
    out = ins.ptx
    # no call inside a wgmma window: the descriptors are copied before each mma_async, the
    # probes called after the commit and our wait_group 0 (instrument/wgmma_window.py)
    mma = out.index("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16")
    assert "mov.b64 %__cs_wd0, %rd51;" in out[mma - 300:mma]
    commit = out.index("wgmma.commit_group.sync.aligned;", mma)
    drain = out.index("wgmma.wait_group.sync.aligned 0;", commit)
    call = out.index(f"call {abi.PROBE_WGMMA},", commit)
    assert "call" not in out[mma:commit] and drain < call
    rs = out.index("wgmma.mma_async.sync.aligned.m64n16k16")
    assert "mov.b64 %__cs_wd" in out[rs - 300:rs]
    call_rs = out.index(f"call {abi.PROBE_WGMMA},", rs)
    assert "st.param.b64 [__cs_p0], 0;" in out[call_rs - 300:call_rs]
    # the kernel's own waits and fences are probed after the instruction
    wait = out.index("wgmma.wait_group.sync.aligned 1;") if "wait_group.sync.aligned 1;" in \
        out else out.rindex("wgmma.wait_group.sync.aligned 0;")
    assert out.index(f"call {abi.PROBE_WGMMA_GROUP}", wait) - wait < 400
    toolchain.link_with_checker(ins, "wgmma.ptx", toolchain.Arch.parse("sm_90a"))
TENSOR = HEADER + """.global .align 64 .b8 gmap[128];
.visible .entry k(
\t.param .align 64 .b8 k_param_0[128]
)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<3>;
\t.shared .align 128 .b8 tile[4096];
\t.shared .align 8 .b64 bar;
\tmov.b64 %rd1, k_param_0;
\tcvta.param.u64 %rd2, %rd1;
\tmov.u32 %r1, tile;
\tmov.u32 %r2, bar;
\tmov.u32 %r3, 0;
\tsetp.eq.u32 %p1, %r3, 0;
\tmbarrier.init.shared::cta.b64 [%r2], 1;
\t@%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], \
[%rd2, {%r3, %r3}], [%r2];
\tcp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [%r1+2048], \
[gmap, {%r3, %r3}], [%r2];
\tcp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd2, {%r3, %r3}], [%r1];
\tret;
}
"""


def test_tensor_copies_pass_the_map_address_and_are_guarded():
    ins = instrument(TENSOR, "tensor.ptx")
    events = [s.event for s in ins.sites.sites]
    assert events == ["mbarrier", "async.tensor_load", "async.tensor_load",
                      "async.tensor_store", "exit"]
    assert not ins.phase_mode
    out = ins.ptx
    assert [c.ret for c in calls(out, abi.PROBE_TENSOR)] == ["%__cs_tok"] * 3
    # the map: a generic address in a register as is; a .global name through cvta
    assert "mov.b64 %__cs_c, %rd2;" in out
    assert "mov.u64 %__cs_c, gmap;\n\tcvta.global.u64 %__cs_c, %__cs_c;" in out
    # loads are skipped when the checker says their mbarrier is not live; stores are not
    assert ("@%__cs_ok cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier"
            "::complete_tx::bytes [%r1]") in out
    assert "@%__cs_ok cp.async.bulk.tensor.2d.shared::cta" in out
    assert "@%__cs_ok cp.async.bulk.tensor.2d.global" not in out
    assert "@!%p1 setp.eq.u32 %__cs_ok, 1, 0;" in out  # the load's own predicate still holds
    # the predicated load is probed by every lane, those whose predicate is false marked off
    # (so that the lanes write its box together); the unpredicated ones pass the plain word
    first = out[out.index("// consan site 1"):out.index("// consan site 2")]
    assert "@%p1 call" not in first
    load = abi.TENSOR_LOAD
    assert f"selp.b32 %__cs_op, {load}, {load | abi.PROBE_OFF}, %p1;" in first
    assert args_of(first, abi.PROBE_TENSOR)[0][4] == "%__cs_op"
    assert args_of(out[out.index("// consan site 2"):], abi.PROBE_TENSOR)[0][4] == str(load)
    store = out[out.index("// consan site 3"):]
    assert "mov.b64 %__cs_b, 0;" in store
    assert args_of(store, abi.PROBE_TENSOR)[0][4] == str(abi.TENSOR_STORE)
    # the store is a bulk store: nothing is listed as not modelled, and the module keeps
    # the columns of the bulk-store units and async-proxy views
    assert not ins.unmodeled and ins.async_proxy
    toolchain.link_with_checker(ins, "tensor", toolchain.Arch.parse("sm_90a"))


def test_a_copy_under_a_negated_predicate_marks_off_the_lanes_where_it_holds():
    ins = instrument(TENSOR.replace("\t@%p1 cp.async", "\t@!%p1 cp.async"), "tensor.ptx")
    first = ins.ptx[ins.ptx.index("// consan site 1"):ins.ptx.index("// consan site 2")]
    load = abi.TENSOR_LOAD
    assert f"selp.b32 %__cs_op, {load | abi.PROBE_OFF}, {load}, %p1;" in first
    assert "@%p1 setp.eq.u32 %__cs_ok, 1, 0;" in ins.ptx  # the copy runs where p is false


ST_ASYNC = HEADER + """.visible .entry k()
{
\t.reg .b32 %r<7>;
\t.shared .align 16 .b8 buf[64];
\t.shared .align 8 .b64 bar;
\tmov.u32 %r1, buf;
\tmov.u32 %r2, bar;
\tmov.u32 %r3, %cluster_ctarank;
\tmapa.shared::cluster.u32 %r4, %r1, %r3;
\tmapa.shared::cluster.u32 %r5, %r2, %r3;
\tmbarrier.init.shared::cta.b64 [%r2], 1;
\tmbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%r5], 4;
\tst.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%r4], %r3, [%r5];
\tmbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r5];
\tred.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%r4+4], \
%r3, [%r5];
\tret;
}
"""


def test_st_async_and_cluster_mbarriers_are_probed_guarded_and_assemble():
    ins = instrument(ST_ASYNC, "st_async.ptx")
    assert [s.event for s in ins.sites.sites] == ["mbarrier", "mbarrier", "async.bulk",
                                                  "mbarrier", "async.bulk", "exit"]
    assert not ins.unmodeled
    out = ins.ptx
    # skipped when the checker says their mbarrier is not live, like bulk copies
    assert "@%__cs_ok st.async.shared::cluster" in out
    assert "@%__cs_ok red.async.relaxed.cluster" in out
    toolchain.link_with_checker(ins, "st_async", toolchain.Arch.parse("sm_90a"))


MULTICAST = HEADER + """.visible .entry k(.param .align 64 .b8 k_param_0[128],
\t.param .u64 k_param_1)
{
\t.reg .b16 %rs<3>;
\t.reg .b32 %r<5>;
\t.reg .b64 %rd<4>;
\t.shared .align 128 .b8 tile[8192];
\t.shared .align 8 .b64 bar;
\tmov.b64 %rd1, k_param_0;
\tld.param.u64 %rd3, [k_param_1];
\tmov.u32 %r1, tile;
\tmov.u32 %r2, bar;
\tmov.u32 %r3, 0;
\tmov.u16 %rs1, 3;
\tmbarrier.init.shared::cta.b64 [%r2], 1;
\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes\
.multicast::cluster [%r1], [%rd1, {%r3, %r3}], [%r2], %rs1;
\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster \
[%r1+4096], [%rd3], 4096, [%r2], %rs1;
\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1+4096], [%rd3], \
4096, [%r2];
\tret;
}
"""


def test_multicast_copies_pass_their_mask_and_assemble():
    ins = instrument(MULTICAST, "multicast.ptx")
    assert [s.event for s in ins.sites.sites] == ["mbarrier", "async.tensor_load", "async.bulk",
                                                  "async.bulk", "exit"]
    assert not ins.unmodeled and ins.multicast
    out = ins.ptx
    tensor = out[out.index("// consan site 1"):out.index("// consan site 2")]
    # the 16-bit ctaMask widened, in the op word's high half with the multicast bit
    assert "cvt.u32.u16 %__cs_ctamask, %rs1;" in tensor
    assert f"shl.b32 %__cs_ctamask, %__cs_ctamask, {abi.MULTICAST_MASK_SHIFT};" in tensor
    assert (f"or.b32 %__cs_ctamask, %__cs_ctamask, "
            f"{abi.TENSOR_LOAD | abi.TENSOR_MULTICAST};") in tensor
    bulk = out[out.index("// consan site 2"):out.index("// consan site 3")]
    assert args_of(bulk, abi.PROBE_BULK)[0][4] == "%__cs_ctamask"
    plain = out[out.index("// consan site 3"):out.index("// consan site 4")]
    assert args_of(plain, abi.PROBE_BULK)[0][4] == "0"  # not multicast: mask 0
    assert "@%__cs_ok cp.async.bulk.tensor.2d.shared::cluster.global.tile" in out
    toolchain.link_with_checker(ins, "multicast", toolchain.Arch.parse("sm_90a"))
    # such a module keeps a mailbox for its peers' copies, in device-memory tables with
    # box summaries (a peer's copy takes their stores-only path like a local one)
    lay = Layout.for_module(ins, nwarps=4, nthreads=128, window_bytes=9216, log_capacity=64,
                            shared_mem=0)
    assert lay.flags & abi.FLAG_MULTICAST and lay.box_summary
    assert lay.mc_offset >= lay.psh_offset and \
        lay.launch_shared_mem == lay.mc_offset + abi.MAILBOX_BYTES + 16


def _branch_gone(ptx: str, label: str, skipped: bool = False) -> bool:
    """The kernel's branch to `label` was converted (converge.py); `skipped`: the region's
    probes do nothing with every lane off, so a warp whose lanes are all off jumps there
    (`@!%__cs_any`), else no branch to it is left."""
    left = re.findall(rf"(\S+) bra(?:\.uni)? {re.escape(label)};", ptx)
    return left == (["@!%__cs_any"] if skipped else [])


CONVERT = (".visible .entry k()\n{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<8>;\n"
           "\tmov.u32 %r1, %tid.x;\n\tsetp.ne.s32 %p1, %r1, 0;\n"
           "\t@%p1 bra $L__BB0_2;\n"
           "\tadd.s32 %r2, %r1, 8;\n"
           "\t@%p2 add.s32 %r2, %r2, 8;\n"
           "\t@!%p3 add.s32 %r2, %r2, 16;\n"
           "\t{BODY}\n"
           "$L__BB0_2:\n\tret;\n}\n")


def test_branch_around_an_arrive_is_converted():
    """`if (lane == 0) arrive`: every lane calls the probe, the skipped ones marked off
    (instrument/converge.py); the region's instructions run only where the branch fell
    through, their own predicates kept."""
    body = "mbarrier.arrive.shared.b64 _, [%r2];"
    out = instrument(HEADER + CONVERT.replace("{BODY}", body)).ptx
    assert _branch_gone(out, "$L__BB0_2") and "not.pred %__cs_on, %p1;" in out
    assert "@%__cs_on add.s32 %r2, %r1, 8;" in out
    assert "and.pred %__cs_oo, %p2, %__cs_on;\n\t@%__cs_oo add.s32 %r2, %r2, 8;" in out
    assert "not.pred %__cs_oo, %p3;\n\tand.pred %__cs_oo, %__cs_oo, %__cs_on;\n\t" \
           "@%__cs_oo add.s32 %r2, %r2, 16;" in out
    arrive, off = abi.MB_ARRIVE, abi.MB_ARRIVE | abi.PROBE_OFF
    assert f"selp.b32 %__cs_op, {arrive}, {off}, %__cs_on;" in out
    assert [c.pred for c in calls(out, abi.PROBE_MBAR)] == [None]  # not predicated
    assert "@!%__cs_on setp.eq.u32 %__cs_ok, 1, 0;\n\t@%__cs_ok mbarrier.arrive" in out
    toolchain.link_with_checker(instrument(HEADER + CONVERT.replace("{BODY}", body)), "k",
                                toolchain.Arch.parse("sm_90a"))
    neg = CONVERT.replace("@%p1 bra", "@!%p1 bra").replace("{BODY}", body)
    assert "mov.pred %__cs_on, %p1;" in instrument(HEADER + neg).ptx


# `if (n > 4) arrive` on a kernel parameter, `if (k > 4) arrive` on a value that some
# threads changed first (`if (t == 0) k = n + 1`): the first branch is CTA-uniform, no warp
# takes it in part, and it stays a branch; the second is not (first_trip.varying).
UNIFORM = (".visible .entry k(.param .u32 k_n)\n{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<8>;\n"
           "\t.shared .align 8 .b8 bar[8];\n\tmov.u32 %r2, bar;\n"
           "\tld.param.u32 %r3, [k_n];\n\tmov.u32 %r4, %r3;\n"
           "\tsetp.le.s32 %p1, %r3, 4;\n\t@%p1 bra $L__BB0_2;\n"
           "\tmbarrier.arrive.shared.b64 _, [%r2];\n$L__BB0_2:\n"
           "\tmov.u32 %r1, %tid.x;\n\tsetp.ne.s32 %p2, %r1, 0;\n\t@%p2 bra $L__BB0_3;\n"
           "\tadd.s32 %r4, %r3, 1;\n$L__BB0_3:\n"
           "\tsetp.le.s32 %p3, %r4, 4;\n\t@%p3 bra $L__BB0_4;\n"
           "\tmbarrier.arrive.shared.b64 _, [%r2];\n$L__BB0_4:\n\tret;\n}\n")


def test_a_branch_on_a_cta_uniform_value_is_not_converted():
    """A region a warp runs whole or not at all needs no conversion: converting the K loop's
    `if (next < KT) load` of bench_async's mma_gemm cost it 6% of its device time (H100)."""
    out = instrument(HEADER + UNIFORM).ptx
    assert "@%p1 bra $L__BB0_2;" in out and _branch_gone(out, "$L__BB0_4")
    assert f"not.pred {converge.REG_ON}, %p3;" in out
    # (the first probe's op word plain: no lane is off where the warp runs the region)
    first, second = calls(out, abi.PROBE_MBAR)
    assert first.args[1] == str(abi.MB_ARRIVE) and first.pos < out.index("$L__BB0_2:")
    assert f"selp.b32 %__cs_op, {abi.MB_ARRIVE}, {abi.MB_ARRIVE | abi.PROBE_OFF}, " \
        f"{converge.REG_ON};" in out[out.index("$L__BB0_3:"):second.pos]
    toolchain.link_with_checker(instrument(HEADER + UNIFORM), "k",
                                toolchain.Arch.parse("sm_90a"))


# `if (t == 0) <multicast copy>` as NVRTC lays it out: the body after a jump over it.
INVERTED = (".visible .entry k(.param .u64 k_p)\n{\n\t.reg .pred %p<4>;\n\t.reg .b16 %rs<2>;\n"
            "\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<4>;\n\t.shared .align 8 .b8 buf[1024];\n"
            "\tld.param.u64 %rd1, [k_p];\n\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, buf;\n"
            "\tmov.u16 %rs1, 3;\n\tsetp.eq.s32 %p1, %r1, 0;\n"
            "\t@%p1 bra $L__BB0_3;\n\tbra.uni $L__BB0_4;\n$L__BB0_3:\n"
            "\tadd.s32 %r3, %r2, 512;\n\t{BODY}\n"
            "$L__BB0_4:\n\tret;\n}\n")
MC_BULK = ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
           ".multicast::cluster [%r2], [%rd1], 512, [%r3], %rs1;")


def test_a_multicast_copy_after_a_jump_over_it_is_probed_by_every_lane():
    """`@p bra L1; bra L2; L1: <copy> L2:`: the copy's probe (which applies the peers'
    copies, checker/multicast.h) is called by the whole warp, the lanes p leaves out
    marked off in its mask word; the same layout around an mbarrier arrive stays a branch."""
    out = instrument(HEADER + INVERTED.replace("{BODY}", MC_BULK)).ptx
    assert "bra $L__BB0_3" not in out and "bra.uni $L__BB0_4" not in out
    assert "mov.pred %__cs_on, %p1;" in out and "@%__cs_on add.s32 %r3, %r2, 512;" in out
    assert f"selp.b32 %__cs_op, 0, {abi.BULK_OFF}, %__cs_on;" in out
    assert "or.b32 %__cs_ctamask, %__cs_ctamask, %__cs_op;" in out
    assert [c.pred for c in calls(out, abi.PROBE_BULK)] == [None]  # not predicated
    assert "@!%__cs_on setp.eq.u32 %__cs_ok, 1, 0;\n\t@%__cs_ok cp.async.bulk" in out
    toolchain.link_with_checker(instrument(HEADER + INVERTED.replace("{BODY}", MC_BULK)), "k",
                                toolchain.Arch.parse("sm_90a"))
    arrive = INVERTED.replace("{BODY}", "mbarrier.arrive.shared.b64 _, [%r3];")
    assert "@%p1 bra $L__BB0_3;" in instrument(HEADER + arrive).ptx


BULK = ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%r2], [%rd1], 512, [%r3];")


@pytest.mark.parametrize("layout", ["plain", "inverted"])
def test_a_one_lane_bulk_copy_is_probed_by_every_lane(layout):
    """`if (t == 0) <bulk copy>` in either layout: the whole warp calls the copy's probe,
    the lanes left out marked off by BULK_OFF as its mask word (the probe, called by lane
    0 alone, cleared convergence barriers and left the warp split: docs/model.md)."""
    kernel = INVERTED if layout == "inverted" else INVERTED.replace(
        "\t@%p1 bra $L__BB0_3;\n\tbra.uni $L__BB0_4;\n$L__BB0_3:\n", "\t@!%p1 bra $L__BB0_4;\n")
    src = HEADER + kernel.replace("{BODY}", BULK)
    out = instrument(src).ptx
    assert _branch_gone(out, "$L__BB0_4") and "bra.uni $L__BB0_4" not in out
    assert f"selp.b32 %__cs_ctamask, 0, {abi.BULK_OFF}, %__cs_on;" in out
    (call,) = calls(out, abi.PROBE_BULK)
    assert call.pred is None and call.args[-1] == "%__cs_ctamask", call
    assert "@!%__cs_on setp.eq.u32 %__cs_ok, 1, 0;\n\t@%__cs_ok cp.async.bulk" in out
    toolchain.link_with_checker(instrument(src), "k", toolchain.Arch.parse("sm_90a"))


def test_a_one_lane_cp_async_with_its_group_is_probed_by_every_lane():
    """`if (t == 0) { cp.async; commit; wait }`: the region converts, every probe called by
    the whole warp: the copy's echoed (the lanes off pass lane 0's address and INFO_ECHO),
    the group's commit and wait with PROBE_OFF in their op word where the lane skips them
    (called by lane 0 alone, they left the warp split on the H100)."""
    body = ("cp.async.ca.shared.global [%r2], [%rd1], 16;\n\t"
            "cp.async.commit_group;\n\tcp.async.wait_group 0;")
    kernel = INVERTED.replace("\t@%p1 bra $L__BB0_3;\n\tbra.uni $L__BB0_4;\n$L__BB0_3:\n",
                              "\t@!%p1 bra $L__BB0_4;\n")
    src = HEADER + kernel.replace("{BODY}", body)
    out = instrument(src).ptx
    assert _branch_gone(out, "$L__BB0_4", skipped=True)
    assert "@%__cs_on cp.async.ca.shared.global [%r2], [%rd1], 16;" in out
    assert "@%__cs_on cp.async.commit_group;" in out
    assert "@%__cs_on cp.async.wait_group 0;" in out
    groups = calls(out, abi.PROBE_ASYNC)
    assert [c.pred for c in groups] == [None, None], groups
    assert [c.args[0] for c in groups] == ["%__cs_op"] * 2, groups
    for op in (abi.ASYNC_COMMIT, abi.ASYNC_WAIT):
        assert f"selp.b32 %__cs_op, {op}, {op | abi.PROBE_OFF}, %__cs_on;" in out
    (copy,) = [c for c in calls(out) if c.func.startswith("__consan_") and "%__cs_b" in c.args]
    assert copy.pred == "@!%__cs_eno" and copy.args[2] == "%__cs_op", copy
    assert "vote.sync.ballot.b32 %__cs_el, %__cs_on," in out
    toolchain.link_with_checker(instrument(src), "k", toolchain.Arch.parse("sm_90a"))


@pytest.mark.parametrize("layout", ["plain", "inverted"])
def test_a_one_lane_bulk_store_with_its_group_is_probed_by_every_lane(layout):
    """`if (t == 0) { bulk store; commit; wait }`: every probe is called by the whole warp,
    the lanes left out marked off: the store's by BULK_OFF in its byte count, the group's
    commit and wait by PROBE_OFF in their op word (called under the branch's predicate, by
    lane 0 alone, they too left the warp split on the H100)."""
    body = ("cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r2], 256;\n\t"
            "cp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group.read 0;")
    kernel = INVERTED if layout == "inverted" else INVERTED.replace(
        "\t@%p1 bra $L__BB0_3;\n\tbra.uni $L__BB0_4;\n$L__BB0_3:\n", "\t@!%p1 bra $L__BB0_4;\n")
    src = HEADER + kernel.replace("{BODY}", body)
    out = instrument(src).ptx
    assert _branch_gone(out, "$L__BB0_4") and "bra.uni $L__BB0_4" not in out
    assert f"selp.b32 %__cs_op, 0, {abi.BULK_OFF}, %__cs_on;\n\tor.b32 %__cs_op, %__cs_op, 256;" \
        in out
    (store,) = calls(out, abi.PROBE_BULK_STORE)
    assert store.pred is None and store.args[1] == "%__cs_op", store
    groups = calls(out, abi.PROBE_BULK_GROUP)
    assert [c.pred for c in groups] == [None, None], groups
    assert [c.args[0] for c in groups] == ["%__cs_op"] * 2, groups
    for op in (abi.BULK_COMMIT, abi.BULK_WAIT):
        assert f"selp.b32 %__cs_op, {op}, {op | abi.PROBE_OFF}, %__cs_on;" in out
    assert "@%__cs_on cp.async.bulk.global.shared::cta.bulk_group" in out
    assert "@%__cs_on cp.async.bulk.commit_group;" in out
    assert "@%__cs_on cp.async.bulk.wait_group.read 0;" in out
    toolchain.link_with_checker(instrument(src), "k", toolchain.Arch.parse("sm_90a"))
    # a region of the group's instructions alone is converted too (in the plain layout)
    alone = src.replace("cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r2], 256;\n\t", "")
    assert ("@%__cs_on cp.async.bulk.commit_group;" in instrument(alone).ptx) == \
        (layout == "plain")


@pytest.mark.parametrize("body", [
    "st.shared.u32 [s], 1;\n\tmbarrier.arrive.shared.b64 _, [%r2];",  # an idempotent store
    "bar.warp.sync -1;\n\tmbarrier.arrive.shared.b64 _, [%r2];",  # lanes together
    "@%p2 mbarrier.arrive.shared.b64 _, [%r2];",  # a predicated probe
    "mbarrier.try_wait.parity.shared.b64 %p2, [%r2], 0;",  # a wait
    "mov.u32 %r3, 1;",  # no probe: nothing to keep together
])
def test_branches_the_conversion_would_change_are_kept(body):
    src = HEADER + CONVERT.replace("{BODY}", body)
    if "[s]" in body:
        src = src.replace("\t.reg .b32 %r<8>;\n",
                          "\t.reg .b32 %r<8>;\n\t.shared .align 4 .b8 s[64];\n")
    out = instrument(src).ptx
    assert "@%p1 bra $L__BB0_2;" in out
    assert "pred %__cs_on, %p1" not in out and "selp.b32 %__cs_op" not in out


CARRY = HEADER + """.visible .entry k(
\t.param .align 64 .b8 k_param_0[128]
)
{
\t.reg .pred %p<3>;
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<4>;
\t.shared .align 128 .b8 tile[8192];
\t.shared .align 8 .b64 bar[2];
\tmov.b64 %rd1, k_param_0;
\tcvta.param.u64 %rd2, %rd1;
\tmov.u32 %r2, bar;
\tmov.u32 %r3, 0;
\tsetp.eq.u32 %p1, %r3, 0;
\tmbarrier.init.shared::cta.b64 [%r2], 1;
\tmov.u32 %r4, 4096;
\t{ARRIVE}
\t{BETWEEN}
\t{LOAD}
\tret;
}
"""
ARRIVE = "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], %r4;"
LOAD = ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
        "[%r1], [%rd2, {%r3, %r3}], [%r2];")
BETWEEN = "mov.u32 %r1, tile;\n\tadd.s32 %r5, %r3, 32;"


def _carry(arrive: str = ARRIVE, between: str = BETWEEN, load: str = LOAD):
    return instrument(CARRY.replace("{ARRIVE}", arrive).replace("{BETWEEN}", between)
                      .replace("{LOAD}", load), "carry.ptx")


def test_a_tensor_load_carries_the_arrive_expect_tx_before_it():
    """One probe models both (instrument/carry.py): the arrive keeps its site, moves to just
    after the probe, and runs, like the load, only where the checker says it may."""
    ins = _carry()
    out = ins.ptx
    events = [s.event for s in ins.sites.sites]
    assert events == ["mbarrier", "mbarrier", "async.tensor_load", "exit"]
    assert len(calls(out, abi.PROBE_MBAR)) == 1  # the init only
    load = out.index("// consan site 2")
    assert args_of(out[load:], abi.PROBE_TENSOR)[0][4:] == [
        str(abi.TENSOR_LOAD | abi.TENSOR_ARRIVE_TX), "%r4", "1"]
    assert out.index("add.s32 %r5, %r3, 32;") < load  # the arithmetic stays where it was
    assert "setp.eq.u32 %__cs_ok, %__cs_tok, 0;\n\t@%__cs_ok mbarrier.arrive.expect_tx" \
           ".shared::cta.b64 _, [%r2], %r4;\n\t@%__cs_ok cp.async.bulk.tensor" in out
    assert out.count("mbarrier.arrive.expect_tx") == 1
    toolchain.link_with_checker(ins, "carry", toolchain.Arch.parse("sm_90a"))


def test_a_load_alone_passes_no_arrive():
    out = _carry(arrive="mov.u32 %r6, 1;").ptx
    load = out.index("// consan site 1")
    assert args_of(out[load:], abi.PROBE_TENSOR)[0][4:] == [str(abi.TENSOR_LOAD), "0",
                                                             str(abi.NO_SITE)]


@pytest.mark.parametrize("arrive,between", [
    (ARRIVE, BETWEEN + "\n\tmov.u32 %r4, 64;"),  # its byte count changes in between
    (ARRIVE, BETWEEN + "\n\tadd.s32 %r2, %r2, 8;"),  # its mbarrier address changes
    (ARRIVE, BETWEEN + "\n$L__BB0_1:"),  # a label: another path may reach the load
    (ARRIVE, BETWEEN + "\n\tld.shared.u32 %r6, [%r2+16];"),  # memory in between
    (ARRIVE, BETWEEN + "\n\tbar.warp.sync -1;"),  # lanes in between
    (ARRIVE.replace("[%r2]", "[%r2+8]"), BETWEEN),  # another mbarrier
    ("@%p1 " + ARRIVE, BETWEEN),  # under a predicate the load does not have
    ("mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r2], %r4;",
     BETWEEN + "\n\tmov.b64 %rd1, %rd3;"),  # its state read in between
    ("mbarrier.expect_tx.shared::cta.b64 [%r2], %r4;", BETWEEN),  # no arrival
])
def test_an_arrive_the_move_could_change_keeps_its_own_probe(arrive, between):
    out = _carry(arrive=arrive, between=between).ptx
    assert len(calls(out, abi.PROBE_MBAR)) == 2
    assert args_of(out, abi.PROBE_TENSOR)[0][5] == "0"


LOAD2 = ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
         "[%r6], [%rd2, {%r3, %r5}], [%r2];")
BETWEEN2 = "mov.u32 %r6, tile;\n\tadd.s32 %r6, %r6, 4096;"


def test_two_loads_on_one_mbarrier_are_one_probe():
    """A stage's two boxes (carry.pairs): one PROBE_TENSOR2 before both, the first load
    (and the arrive it carries) moved down past the arithmetic to just after it, each
    site kept, every instruction run only where the checker says it may."""
    ins = _carry(load=LOAD + "\n\t" + BETWEEN2 + "\n\t" + LOAD2)
    out = ins.ptx
    events = [s.event for s in ins.sites.sites]
    assert events == ["mbarrier", "mbarrier", "async.tensor_load", "async.tensor_load", "exit"]
    assert calls(out, abi.PROBE_TENSOR) == [] and len(calls(out, abi.PROBE_TENSOR2)) == 1
    assert args_of(out, abi.PROBE_TENSOR2)[0][3:] == [
        "2", str(abi.TENSOR_LOAD | abi.TENSOR_ARRIVE_TX), "%r4", "1", "%__cs_d", "%__cs_e", "3"]
    probe = out.index("// consan sites 2, 3")
    assert out.index("add.s32 %r6, %r6, 4096;") < probe  # the second box's address first
    assert ("setp.eq.u32 %__cs_ok, %__cs_tok, 0;\n\t@%__cs_ok mbarrier.arrive.expect_tx"
            ".shared::cta.b64 _, [%r2], %r4;\n\t@%__cs_ok " + LOAD + "\n\t@%__cs_ok "
            + LOAD2) in out
    assert out.count("cp.async.bulk.tensor") == 2
    toolchain.link_with_checker(ins, "pair", toolchain.Arch.parse("sm_90a"))


@pytest.mark.parametrize("between", [
    BETWEEN2 + "\n\tadd.s32 %r3, %r3, 1;",  # the first load's coordinate changes
    BETWEEN2 + "\n\tmov.u32 %r4, 64;",  # the carried arrive's byte count changes
    BETWEEN2 + "\n$L__BB0_1:",  # a label: another path may reach the second load
    BETWEEN2 + "\n\tld.shared.u32 %r7, [%r2+16];",  # memory in between
])
def test_loads_the_move_could_change_keep_their_own_probes(between):
    out = _carry(load=LOAD + "\n\t" + between + "\n\t" + LOAD2).ptx
    assert calls(out, abi.PROBE_TENSOR2) == [] and len(calls(out, abi.PROBE_TENSOR)) == 2


def test_loads_on_two_mbarriers_keep_their_own_probes():
    out = _carry(load=LOAD + "\n\t" + BETWEEN2 + "\n\t" + LOAD2.replace("[%r2]", "[%r2+8]")).ptx
    assert calls(out, abi.PROBE_TENSOR2) == [] and len(calls(out, abi.PROBE_TENSOR)) == 2


LOOP = (".visible .entry k()\n{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<8>;\n"
        "\tmov.u32 %r1, %tid.x;\n\tsetp.ne.s32 %p1, %r1, 0;\n"
        "\t@%p1 bra $L__BB0_3;\n"
        "\tmov.u32 %r4, 0;\n"
        "$L__BB0_2:\n"
        "\t{BODY}\n"
        "\tadd.s32 %r4, %r4, 1;\n"
        "\tsetp.lt.s32 %p2, %r4, 8;\n"
        "\t@%p2 bra $L__BB0_2;\n"
        "{TAIL}"
        "$L__BB0_3:\n\tret;\n}\n")
WAIT = ("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%r2], %r4;\n"
        " @!p bra W;\n}")


def test_a_loop_one_lane_runs_gets_a_copy_every_lane_runs():
    """`if (lane == 0) for (...) { wait; arrive }` (instrument/loops.py): a copy that
    every lane runs when exactly one lane is on, with each branch decided by that lane's
    vote, every instruction under %on and every probe called by all lanes; the original
    region runs otherwise."""
    body = WAIT + "\n\tmbarrier.arrive.shared.b64 _, [%r2];"
    ins = instrument(HEADER + LOOP.replace("{BODY}", body).replace("{TAIL}", ""), "loop.ptx")
    out = ins.ptx
    entry = ("not.pred %__cs_on, %p1;\n\tactivemask.b32 %__cs_m;\n\t"
             "vote.sync.ballot.b32 %__cs_n, %__cs_on, %__cs_m;\n\tpopc.b32 %__cs_n, %__cs_n;\n"
             "\tsetp.ne.u32 %__cs_v, %__cs_n, 1;\n\t@%__cs_v bra $__cs_loop")
    assert entry in out
    copy = out[out.index(entry):out.index("@%p1 bra $L__BB0_3;")]
    assert "$L__BB0_2__cs" in copy and "\n$L__BB0_2:" not in copy
    assert "and.pred %__cs_v, %p2, %__cs_on;\n\tvote.sync.any.pred %__cs_v, %__cs_v, " \
           "%__cs_m;\n\t@%__cs_v bra $L__BB0_2__cs" in copy
    assert "not.pred %__cs_v, p;\n\tand.pred %__cs_v, %__cs_v, %__cs_on;" in copy
    assert "@%__cs_on add.s32 %r4, %r4, 1;" in copy
    assert "W: @%__cs_on mbarrier.try_wait" in copy  # the wait runs on the lane only...
    wait, off = abi.MB_WAIT_PARITY, abi.MB_WAIT_PARITY | abi.PROBE_OFF
    assert f"selp.b32 %__cs_op, {wait}, {off}, %__cs_on;" in copy  # ...its probe on all
    assert "vote.sync.any.pred %__cs_skip, %__cs_skip, %__cs_m;" in copy
    assert f"selp.b32 %__cs_op, {abi.MB_ARRIVE}, {abi.MB_ARRIVE | abi.PROBE_OFF}" in copy
    assert copy.rstrip().endswith(":")  # the original's label
    # the original region is still there, probed as before
    orig = out[out.index("@%p1 bra $L__BB0_3;"):]
    assert "\n$L__BB0_2:" in orig and "@%p2 bra $L__BB0_2;" in orig
    assert len(calls(orig, abi.PROBE_MBAR)) == 2
    toolchain.link_with_checker(ins, "loop", toolchain.Arch.parse("sm_90a"))


def test_a_loop_ending_in_a_jump_over_other_code_is_copied_up_to_the_jump():
    """The one lane's region may end with `bra L` over code other lanes run (another
    warp's role): the copy stops there."""
    tail = "\tbra.uni $L__BB0_3;\n$L__BB0_9:\n\tmov.u32 %r5, 1;\n"
    out = instrument(HEADER + LOOP.replace("{BODY}", "mbarrier.arrive.shared.b64 _, [%r2];")
                     .replace("{TAIL}", tail)).ptx
    copy = out[out.index("activemask.b32 %__cs_m;"):out.index("@%p1 bra $L__BB0_3;")]
    assert "bra $L__BB0_3;" in copy and "mov.u32 %r5, 1;" not in copy


@pytest.mark.parametrize("body,tail", [
    ("st.shared.u32 [%r2], 1;", ""),  # an access probe (it takes no lanes marked off)
    ("bar.warp.sync -1;\n\tmbarrier.arrive.shared.b64 _, [%r2];", ""),  # lanes together
    ("@%p3 mbarrier.arrive.shared.b64 _, [%r2];", ""),  # a predicated probe
    ("mbarrier.arrive.shared.b64 _, [%r2];\n\t@%p3 bra $L__BB0_0;", ""),  # out of it
    ("mbarrier.arrive.shared.b64 _, [%r2];\n\tcall f;", ""),  # a call
    ("mov.u32 %r5, 1;", ""),  # no probe
    (".reg .b32 %q<2>;\n\tmbarrier.arrive.shared.b64 _, [%r2];", ""),  # a declaration
])
def test_loops_the_copy_would_change_are_kept(body, tail):
    src = LOOP.replace("{BODY}", body).replace("{TAIL}", tail)
    src = src.replace("\tsetp.ne.s32 %p1", "$L__BB0_0:\n\tsetp.ne.s32 %p1")
    if "call f" in body:
        src = ".func f()\n{\n\tret;\n}\n" + src
    out = instrument(HEADER + src).ptx
    assert "activemask.b32 %__cs_m" not in out and "@%p1 bra $L__BB0_3;" in out


def test_a_branch_into_the_loop_from_outside_keeps_it():
    src = LOOP.replace("{BODY}", "mbarrier.arrive.shared.b64 _, [%r2];").replace("{TAIL}", "")
    src = src.replace("\tmov.u32 %r1, %tid.x;\n", "\tmov.u32 %r1, %tid.x;\n"
                      "\tsetp.eq.s32 %p3, %r1, 5;\n\t@%p3 bra $L__BB0_2;\n")
    out = instrument(HEADER + src).ptx
    assert "activemask.b32 %__cs_m" not in out


REMOTE_MB = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
{
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<4>;
\t.shared .align 8 .b64 bar;
\tmov.u32 %r1, bar;
\tmov.u32 %r2, %cluster_ctarank;
\txor.b32 %r3, %r2, 1;
\tmapa.shared::cluster.u32 %r4, %r1, %r3;
\tadd.s32 %r5, %r4, 0;
\tmbarrier.init.shared::cta.b64 [%r1], 1;
\tmbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r5];
\tmbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r1];
\tfence.acq_rel.cluster;
\tfence.acq_rel.gpu;
\tret;
}
"""


def test_an_mbarrier_addressed_through_mapa_is_modelled():
    """Both arrives are probed with the .shared::cluster bit in their op word (the checker
    tells a peer's mbarrier from the CTA's own by the address's rank bits, and posts a peer's
    to that CTA: checker/dsmem.h); the module gets the mailboxes. With no relaxed cluster
    arrival in the module, its cluster- and gpu-scope fences order nothing the model needs:
    not probed."""
    ins = instrument(REMOTE_MB, "remote.ptx")
    assert [s.event for s in ins.sites.sites] == ["mbarrier", "mbarrier", "mbarrier", "exit"]
    assert ins.unmodeled == []
    assert ins.multicast
    ops = [a[1] for a in args_of(ins.ptx, abi.PROBE_MBAR)]
    assert ops == [str(abi.MB_INIT), *[str(abi.MB_ARRIVE | abi.MB_CLUSTER)] * 2]
    toolchain.link_with_checker(ins, "remote", toolchain.Arch.parse("sm_90a"))


def test_an_mbarrier_addressed_through_mapa_is_listed_with_the_multicast_model_off(monkeypatch):
    from instrument.rewrite import REMOTE_MBARRIER

    monkeypatch.setenv("CONSAN_MULTICAST", "0")
    ins = instrument(REMOTE_MB, "remote.ptx")
    listed = [(u.text, u.reason) for u in ins.unmodeled]
    assert [t for t, _ in listed] == [
        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r5];"]
    assert listed[0][1] == REMOTE_MBARRIER


def test_each_inlined_copy_names_its_own_call_chain():
    """h() (which calls g()) inlined twice: each store's chain names its own call of h. A
    call site's chain was kept from its first `.loc`, so the second copy's store was said
    to come from the first call too (line 5, not 7)."""
    src = ("__device__ __forceinline__ void g(float* s, int i, float v) { s[i] = v; }\n"
           "__device__ __forceinline__ void h(float* s, int i, float v) { g(s, i, v); }\n"
           'extern "C" __global__ void k(float* out) {\n'
           "  __shared__ float s[256];\n"
           "  h(s, threadIdx.x, 1.0f);\n"
           "  __syncthreads();\n"
           "  h(s, (threadIdx.x + 32) % 256, 2.0f);\n"
           "  __syncthreads();\n"
           "  out[threadIdx.x] = s[threadIdx.x];\n"
           "}\n")
    ptx = toolchain.compile_cuda(src, "inl.cu", ["-arch=compute_90", "-lineinfo"])
    ins = instrument(parse(ptx, "inl.ptx"))
    stores = [s for s in ins.sites.sites if s.event == "access.write"]
    assert [[(c.line) for c in s.inlined_at] for s in stores] == [[2, 5], [2, 7]]


@pytest.mark.parametrize("guard,pred", [("@ %p1", "@%p1"), ("@ !%p1", "@!%p1"),
                                        ("@! %p1", "@!%p1"), ("@!%p1", "@!%p1")])
def test_a_guard_written_with_spaces_is_a_guard(guard, pred):
    """ptxas takes `@ %p`, `@ !%p` and `@! %p`: such a store was read as an instruction
    named `@`, neither probed nor listed as not checked."""
    ptx = (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n"
           "\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n\t.shared .align 4 .b8 s[64];\n"
           f"\tmov.u32 %r1, s;\n\t{guard} st.shared.u32 [%r1], %r2;\n\tret;\n}}\n")
    (st,) = [it for it in parse(ptx, "k.ptx").items if it.is_instruction
             and it.opcode.startswith("st.")]
    assert st.pred == pred and st.unpredicated == "st.shared.u32 [%r1], %r2;"
    ins = instrument(ptx, "k.ptx")
    assert ins.counts["access.write"] == 1 and ins.unmodeled == []
    # (its probe is called by every lane that reaches it, the lanes of the guard making the
    # access: instrument/echo.py; here by the phase-mode fast path's lanes together, the
    # guard folded into their test)
    (probe,) = [c for c in calls(ins.ptx) if c.func == abi.PROBE_ACCESS]
    assert probe.pred is None and probe.args[0] == "%__cs_fx"
    leave = "@!%p1 bra $__cs_slow" if pred == "@%p1" else "@%p1 bra $__cs_slow"
    assert leave in ins.ptx  # (its lanes that skip the access: no call of their own)


@pytest.mark.parametrize("directives, cap", [
    # what ptxas gave a kernel that wants every register (nvJitLink -verbose, sm_90)
    (".reqntid 512", 128),  # Inductor's kernels
    (".maxntid 257", 168),
    (".maxntid 416", 128),
    (".maxntid 128, 3, 1", 168),
    (".maxntid 640", 96),
    (".maxntid 96\n.minnctapersm 3", 168),
    (".maxntid 160\n.minnctapersm 5", 72),
    (".maxntid 512\n.minnctapersm 8", 128),  # (8 CTAs cannot fit: ptxas ignores it)
    (".maxntid 256 .minnctapersm 2", 128),  # (one line)
    (".maxnreg 96\n.reqntid 256", 96),
    (".maxntid 32", None),  # (255 or more: no cap)
    (".reqntid 256", None),
])
def test_launch_bounds_cap_the_probes_registers(directives, cap):
    """A kernel's launch bounds limit its registers, and the probes it calls must fit them:
    the checker is assembled under the tightest cap they imply."""
    ptx = HEADER + f".visible .entry k()\n{directives}\n{{\n\tret;\n}}\n"
    assert instrument(ptx, "k.ptx").max_regs == cap


def test_launch_bounds_on_the_entry_line_cap_it_too():
    ptx = HEADER + ".visible .entry k() .reqntid 512\n{\n\tret;\n}\n"
    assert instrument(ptx, "k.ptx").max_regs == 128


@pytest.mark.parametrize("access,kind", [("st.shared.u32 [%r2], %r1;", "access.write"),
                                         ("atom.shared.add.u32 %r3, [%r2], 1;", "access.atomic"),
                                         ("ld.shared.u32 %r3, [%r2];", "access.read")])
@pytest.mark.parametrize("tagged", [False, True])
def test_a_branch_around_an_access_is_converted_and_its_probe_echoes(access, kind, tagged):
    """`if (lane == 0) s[0] = x;`: every lane calls the access's probe, those the branch
    skipped passing the first running lane's address and INFO_ECHO (instrument/echo.py:
    lane 0's call alone split the warp on the H100). Not where stores pass value tags (a
    lane's tag is its own store's): there the branch is kept."""
    mbar = "\tmbarrier.init.shared.b64 [%r2], 1;\n"  # (vector clocks: no phase-mode fast path)
    src = HEADER + CONVERT.replace("\t@%p1 bra", mbar + "\t@%p1 bra").replace("{BODY}", access)
    ins = instrument(src, value_tags=tagged)
    out = ins.ptx
    assert ins.counts[kind] == 1
    if tagged:
        assert "@%p1 bra $L__BB0_2;" in out
        return
    assert _branch_gone(out, "$L__BB0_2", skipped=True) and "not.pred %__cs_on, %p1;" in out
    assert f"@%__cs_on {access}" in out
    (probe,) = [c for c in calls(out) if c.func == abi.PROBE_ACCESS]
    assert echoed_on(out, probe) == "%__cs_on" and probe.args[0] == "%__cs_b"
    info = int(re.search(r"selp\.b32 %__cs_op, (\d+), (\d+), %__cs_on;", out).group(1))
    assert f"selp.b32 %__cs_op, {info}, {info | abi.INFO_ECHO}, %__cs_on;" in out
    assert "@%__cs_on mov.b64 %__cs_b, %__cs_a;" in out
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"), vsh=True)
