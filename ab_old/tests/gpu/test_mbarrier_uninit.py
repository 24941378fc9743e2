# ruff: noqa: E501  (the CUDA source keeps each operation, and its marker, on one line)
"""Every mbarrier operation on a barrier that is not live is `mbarrier.uninit` (GPU).

Three states before the operation: never initialised, zero-filled by an ordinary store
(the word reads as a barrier in phase 0, so a poll may even succeed), and invalidated
after an init. The barrier is then initialised and used properly, so the kernel ends
normally; consan must report exactly one finding, at the operation's line (NVRTC
gives an inline-asm statement the line it ends on: the markers are there), and skip
operations that would fault.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu_util import line_of

pytestmark = pytest.mark.gpu

SOURCE = r"""
extern "C" __global__ void poke(int* out, const int* in, int op, int state) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ __align__(16) int buf[32];
    unsigned a = (unsigned)__cvta_generic_to_shared(&bar);
    unsigned b = (unsigned)__cvta_generic_to_shared(buf);
    unsigned ok = 0;
    if (threadIdx.x == 0) {
        if (state == 1) bar = 0ull;  // zero-filled by an ordinary store, never initialised
        if (state == 2) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(a));
            asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(a));
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long tok = 0;
        switch (op) {
        case 0: asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];"
                             : "=l"(tok) : "r"(a)); break;  // @arrive
        case 1: asm volatile("mbarrier.arrive_drop.shared::cta.b64 %0, [%1];"
                             : "=l"(tok) : "r"(a)); break;  // @drop
        case 2: asm volatile("mbarrier.expect_tx.shared::cta.b64 [%0], 16;"
                             :: "r"(a)); break;  // @expect
        case 3: asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], 16;"
                             : "=l"(tok) : "r"(a)); break;  // @arrive-tx
        case 4: asm volatile("mbarrier.complete_tx.shared::cta.b64 [%0], 16;"
                             :: "r"(a)); break;  // @complete
        case 5: asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], 0;"
                             " selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(a)); break;  // @test-parity
        case 6: asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 1;"
                             " selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(a)); break;  // @try-parity
        case 7: asm volatile("{ .reg .pred p; mbarrier.test_wait.shared::cta.b64 p, [%1], %2;"
                             " selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(a), "l"(tok)); break;  // @test-token
        case 8: asm volatile("{ .reg .pred p; mbarrier.try_wait.shared::cta.b64 p, [%1], %2;"
                             " selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(a), "l"(tok)); break;  // @try-token
        case 9: asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(a)); break;  // @inval
        case 10: asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];"
                              :: "r"(a)); break;  // @cp-arrive
        case 11: asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                              " [%0], [%1], 16, [%2];" :: "r"(b), "l"(in), "r"(a) : "memory");  // @bulk
                 break;
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {  // now the barrier is used as it should be
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(a));
        asm volatile("{ .reg .b64 t; mbarrier.arrive.shared::cta.b64 t, [%0]; }" :: "r"(a));
        asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;"
                     " @!p bra W; }" :: "r"(a));
        asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(a));
        out[0] = 1 + (int)ok * 0;
    }
}
"""

OPS = ["arrive", "drop", "expect", "arrive-tx", "complete", "test-parity", "try-parity",
       "test-token", "try-token", "inval", "cp-arrive", "bulk"]
STATES = ["never", "zeroed", "invalidated"]


@pytest.fixture(scope="module")
def prepared():
    import consan
    from tests.gpu_util import arch_option

    return consan.prepare(SOURCE, "poke", grid=(1, 1, 1), block=(64, 1, 1),
                          options=(arch_option(),), source_name="poke.cu")


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("op", OPS)
def test_an_operation_on_a_barrier_that_is_not_live(prepared, op, state):
    import cupy as cp

    out = cp.zeros(1, dtype=cp.int32)
    src = cp.arange(16, dtype=cp.int32)
    prepared.launch((out, src, np.int32(OPS.index(op)), np.int32(STATES.index(state))))
    rep = prepared.report()
    assert rep.error is None, rep.error
    assert int(out.get()[0]) == 1  # the kernel went on and ended normally
    got = sorted({(v.kind, v.line) for v in rep.violations})
    assert got == [("mbarrier.uninit", line_of(SOURCE, "@" + op))], str(rep)


def test_the_proper_use_alone_is_clean(prepared):
    import cupy as cp

    out = cp.zeros(1, dtype=cp.int32)
    prepared.launch((out, cp.arange(16, dtype=cp.int32), np.int32(99), np.int32(0)))
    rep = prepared.report()
    assert rep.ok and rep.error is None, str(rep)
    assert int(out.get()[0]) == 1
