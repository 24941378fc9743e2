"""Bulk stores without a GPU: the GPU test's kernels compile for sm_90a with NVRTC, every
bulk-store instruction is modelled, the sites name the marked lines, and the instrumented
modules assemble with the checker (nvJitLink). Also: the forms the cuda::ptx and
cuda::device::experimental wrappers emit are classified, not listed as unmodelled.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from consan import runtime, toolchain
from instrument.ptx import parse
from instrument.rewrite import instrument
from tests.gpu_util import line_of
from tests.kernels import bulk_store_kernels as K

SM90A = toolchain.Arch.parse("sm_90a")


@pytest.mark.parametrize("racy", [True, False], ids=["racy", "clean"])
@pytest.mark.parametrize("name", sorted(K.CASES))
def test_kernels_instrument_and_assemble(name, racy, fresh_cache):
    src = K.variant(name, racy)
    b = runtime.build(src, ("-arch=sm_90a",), source_name="bulk_store.cu")
    ins = b.instrumented
    assert b.cubin[:4] == b"\x7fELF"
    assert not ins.unmodeled, ins.unmodeled
    assert ins.async_proxy and not ins.phase_mode
    events = Counter(s.event for s in ins.sites.sites)
    assert events["async.bulk_store"] >= 1 and events["async.bulk_commit"] >= 1
    assert events["async.bulk_wait"] >= 1
    lines = {ev: {s.loc.line for s in ins.sites.sites if s.event == ev and s.loc}
             for ev in events}
    assert lines["async.bulk_store"] == {line_of(src, "@store")}
    writes = lines["access.write"]
    if name.startswith("missing-fence"):
        assert writes == {line_of(src, "@write")}
        assert ("fence.proxy_async" in events) == (not racy)
    else:
        assert writes == {line_of(src, "@fill")}
        assert events["fence.proxy_async"] >= 1
        # the clean twin adds wait_group.read (per tile, unrolled) to the final wait_group 0
        waits = [s for s in ins.sites.sites if s.event == "async.bulk_wait"]
        assert any("wait_group.read" in s.ptx_text for s in waits) == (not racy)


CCCL = Path("/usr/local/cuda/include/cccl")

WRAPPERS = r"""
#include <cuda/ptx>
#include <cuda/barrier>
namespace ptx = cuda::ptx;
namespace cde = cuda::device::experimental;
extern "C" __global__ void wrappers(float* out, float* acc) {
    __shared__ __align__(128) float buf[256];
    buf[threadIdx.x] = (float)threadIdx.x;
    ptx::fence_proxy_async(ptx::space_shared);
    ptx::fence_proxy_async();
    ptx::fence_proxy_async(ptx::space_cluster);
    ptx::fence_proxy_async(ptx::space_global);
    cde::fence_proxy_async_shared_cta();
    __syncthreads();
    if (threadIdx.x == 0) {
        ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, out, buf, 1024);
        cde::cp_async_bulk_shared_to_global(out + 256, buf, 1024);
        ptx::cp_reduce_async_bulk(ptx::space_global, ptx::space_shared, ptx::op_add, acc, buf,
                                  1024);
        ptx::cp_async_bulk_commit_group();
        cde::cp_async_bulk_commit_group();
        ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>());
        ptx::cp_async_bulk_wait_group(ptx::n32_t<0>());
        cde::cp_async_bulk_wait_group_read<0>();
    }
    __syncthreads();
    buf[threadIdx.x] = 0.0f;
}
"""


@pytest.mark.skipif(not (CCCL / "cuda" / "ptx").exists(), reason="needs the CUDA toolkit's CCCL")
def test_wrapper_forms_are_modelled():
    ptx = toolchain.compile_cuda(WRAPPERS, "wrappers.cu", [
        "-arch=compute_90a", "-std=c++17", f"-I{CCCL}", f"-I{CCCL.parent}"])
    ins = instrument(parse(ptx, "wrappers.ptx"))
    assert not ins.unmodeled, ins.unmodeled
    c = ins.counts
    assert c["async.bulk_store"] == 3 and c["async.bulk_commit"] == 2
    assert c["async.bulk_wait"] == 3
    assert c["fence.proxy_async"] == 4 and c["fence"] == 1  # fence.proxy.async.global
    toolchain.link_with_checker(ins, "wrappers", SM90A)


def test_corpus_bulk_store_forms_are_modelled():
    from tests import corpus_build as cb

    f = next(f for f in cb.corpus_files() if f.path.name == "bulk_store.cu")
    ptx = cb.compile_cached(f.source(), f.path.name, ["-arch=compute_90a", "-std=c++17"])
    ins = instrument(parse(ptx, "bulk_store.ptx"))
    assert not ins.unmodeled, ins.unmodeled
    c = ins.counts
    assert c["async.bulk_store"] >= 6 and c["async.bulk_wait"] >= 3
    assert c["fence.proxy_async"] >= 4 and c["fence"] >= 2  # .global and the acquire form
    assert ins.async_proxy and not ins.phase_mode
