"""Triton's own ConSan tests (`python/test/gluon/test_consan.py`), ported as Gluon kernels
for triton 3.6.0, so that consan is measured against its peer on the same situations.

Each Hopper case of that file becomes one or more `PeerCase`s here: the racy twin and the
clean twin (or each value of the test's parameter). The kernels are written anew for the
Gluon API 3.6.0 has (no multicast, cluster barrier, `st.async` or two-CTA mbarriers yet:
those cases are kept in the list with `missing` saying why, and `cuda_form` naming the GPU
test that checks the same situation in CUDA). A comment `# peer:<token>`
marks the line where consan must report a racy twin's finding (the current access), so the
GPU test can expect the finding there and the CPU test can check a probe sits on it.

Where Triton's kernel reads shared memory nothing wrote (Triton's ConSan does not check
that), the port writes it first: consan reports such a read as `uninit.read`, which would
hide the race the test is about. docs/peer-consan.md lists those changes, what consan is
expected to say of each case, and what it cannot express yet.

The module imports without triton, torch or a GPU: the case list stays readable, the
kernels are placeholders, and `compile_case` / `PeerCase.run` need triton (and the GPU).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as ttgl
    from triton.experimental.gluon.language.nvidia.ampere import async_copy
    from triton.experimental.gluon.language.nvidia.hopper import (
        fence_async_shared,
        mbarrier,
        tma,
        warpgroup_mma,
        warpgroup_mma_init,
        warpgroup_mma_wait,
    )

    HAVE_GLUON = True
except ImportError:  # the case list is still readable; the kernels are placeholders

    class _Absent:
        """Stands for triton's modules where triton is not installed: every attribute and
        call gives itself back, so the kernel definitions below still execute."""

        def __getattr__(self, name: str) -> _Absent:
            return self

        def __call__(self, *args: Any, **kwargs: Any) -> _Absent:
            return self

    gluon = ttgl = async_copy = mbarrier = tma = _Absent()
    fence_async_shared = warpgroup_mma = warpgroup_mma_init = warpgroup_mma_wait = _Absent()
    HAVE_GLUON = False

HERE = Path(__file__).resolve()

# Triton's verdicts: the messages its tests assert in the driver's stderr.
CLEAN = "clean"
OUT_WRITES = "Buffer being accessed has outstanding writes"
OUT_READS = "Buffer being accessed has outstanding reads"
OUTSTANDING = "Buffer being accessed has outstanding (reads or writes)"
PENDING = "Accessing buffer with pending access. Pending access type: "
PENDING_CP = PENDING + "async_copy_global_to_shared"
PENDING_TMA_STORE = PENDING + "async_copy_shared_to_global"
PENDING_WGMMA = PENDING + "warpgroup_mma operand read"
MISSING_FENCE = "Async shared-memory access is missing fence_async_shared"
DEADLOCK = "Deadlock detected"
UNDERFLOW = "Barrier arrive underflow"
REINIT = "Barrier re-initialized without prior invalidation"
BAR_UNINIT = "Barrier used before initialization or after invalidation"

XB = ttgl.constexpr(128)  # every tile is XB x XB (XB elements for 1-D buffers), as in Triton's
TILE_BYTES = ttgl.constexpr(128 * 128 * 2)  # an fp16 tile


# --------------------------------------------------------------------------------------
# The kernels (Gluon, triton 3.6.0). One CTA of 4 warps unless a case says otherwise;
# warp-specialised kernels add their workers' warps.


@gluon.jit
def _tile(base, layout: ttgl.constexpr):
    """Pointers to the row-major XB x XB tile at `base`, in `layout`."""
    r = ttgl.arange(0, XB, ttgl.SliceLayout(1, layout))[:, None]
    c = ttgl.arange(0, XB, ttgl.SliceLayout(0, layout))[None, :]
    return base + r * XB + c


@gluon.constexpr_function
def _rows() -> Any:
    """One 128-element row per thread: 128 rows over 4 warps."""
    return ttgl.BlockedLayout([1, 128], [32, 1], [4, 1], [0, 1])


@gluon.constexpr_function
def _nvmma() -> Any:
    """The 128-byte swizzled fp16 layout TMA and wgmma use."""
    return ttgl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)


# ---- cp.async ------------------------------------------------------------------------


@gluon.jit
def cp_async_twice(src):
    """`failing_kernel` of test_cache_miss_*: one tile copied twice, no wait between."""
    rows: ttgl.constexpr = _rows()
    tile = ttgl.allocate_shared_memory(ttgl.float16, [XB, XB], _nvmma())
    ptrs = _tile(src, rows)
    async_copy.async_copy_global_to_shared(tile, ptrs)
    async_copy.commit_group()
    async_copy.async_copy_global_to_shared(tile, ptrs)  # peer:cp-twice
    async_copy.commit_group()
    async_copy.wait_group(0)


@gluon.jit
def cp_async_group_reuse(src, FAILURE: ttgl.constexpr):
    """test_async_copy: buffer 0 copied into again; the racy twin's wait retires nothing."""
    rows: ttgl.constexpr = _rows()
    bufs = ttgl.allocate_shared_memory(ttgl.float16, [2, XB, XB], _nvmma())
    ptrs = _tile(src, rows)
    async_copy.async_copy_global_to_shared(bufs.index(0), ptrs)
    async_copy.commit_group()
    async_copy.async_copy_global_to_shared(bufs.index(1), ptrs)
    async_copy.commit_group()
    async_copy.wait_group(2 if FAILURE else 1)
    async_copy.async_copy_global_to_shared(bufs.index(0), ptrs)  # peer:cp-group-reuse
    async_copy.commit_group()
    async_copy.wait_group(0)


# ---- TMA loads and stores ------------------------------------------------------------


@gluon.jit
def tma_read_before_wait(desc, out, FAILURE: ttgl.constexpr):
    """test_async_tma_kernel: the racy twin reads the tile before waiting for its load."""
    elem: ttgl.constexpr = ttgl.BlockedLayout([1, 1], [32, 1], [4, 1], [0, 1])
    smem = ttgl.allocate_shared_memory(ttgl.float16, [XB, XB], desc.layout)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, desc.block_type.nbytes)
    tma.async_copy_global_to_shared(desc, [0, 0], bar, smem)
    mbarrier.wait(bar, 0, pred=not FAILURE)
    val = smem.load(elem)  # peer:tma-read-before-wait
    mbarrier.wait(bar, 0, pred=FAILURE)
    mbarrier.invalidate(bar)
    ttgl.store(_tile(out, elem), val)


@gluon.jit
def tma_two_loads_one_barrier(a_desc, b_desc, out, FAILURE: ttgl.constexpr):
    """test_async_tma_kernel_2bufs_1bar: two loads complete one phase; reads before it."""
    elem: ttgl.constexpr = ttgl.BlockedLayout([1, 1], [32, 1], [4, 1], [0, 1])
    a = ttgl.allocate_shared_memory(ttgl.float16, [XB, XB], a_desc.layout)
    b = ttgl.allocate_shared_memory(ttgl.float16, [XB, XB], b_desc.layout)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(a_desc, [0, 0], bar, a)
    tma.async_copy_global_to_shared(b_desc, [0, 0], bar, b)
    mbarrier.wait(bar, 0, pred=not FAILURE)
    va = a.load(elem)  # peer:tma2-read-a
    vb = b.load(elem)  # peer:tma2-read-b
    mbarrier.wait(bar, 0, pred=FAILURE)
    mbarrier.invalidate(bar)
    ttgl.store(_tile(out, elem), va + vb)


@gluon.jit
def tma_expect_mismatch(desc, out, DELTA: ttgl.constexpr):
    """test_async_tma_expect_bytes_mismatch: the phase expects DELTA bytes more than come."""
    elem: ttgl.constexpr = ttgl.BlockedLayout([1, 1], [32, 1], [4, 1], [0, 1])
    smem = ttgl.allocate_shared_memory(ttgl.float16, [XB, XB], desc.layout)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, desc.block_type.nbytes + DELTA)
    tma.async_copy_global_to_shared(desc, [0, 0], bar, smem)  # peer:tma-expect-load
    mbarrier.wait(bar, 0)  # peer:tma-expect-wait
    val = smem.load(elem)
    mbarrier.invalidate(bar)
    ttgl.store(_tile(out, elem), val)


@gluon.jit
def tma_two_barriers(desc, out, FAILURE: ttgl.constexpr):
    """test_tma_interleave_kernel: two loads on two barriers; the racy twin waits for one,
    reads both, then stores buffer 0 back through TMA."""
    elem: ttgl.constexpr = ttgl.BlockedLayout([1, 1], [32, 1], [4, 1], [0, 1])
    bufs = ttgl.allocate_shared_memory(ttgl.float16, [2, XB, XB], desc.layout)
    bars = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=1)
    mbarrier.init(bars.index(1), count=1)
    mbarrier.expect(bars.index(0), desc.block_type.nbytes)
    mbarrier.expect(bars.index(1), desc.block_type.nbytes)
    tma.async_copy_global_to_shared(desc, [0, 0], bars.index(0), bufs.index(0))
    tma.async_copy_global_to_shared(desc, [0, 0], bars.index(1), bufs.index(1))
    mbarrier.wait(bars.index(0), 0)
    if not FAILURE:
        mbarrier.wait(bars.index(1), 0)
    ptrs = _tile(out, elem)
    v0 = bufs.index(0).load(elem)
    v1 = bufs.index(1).load(elem)  # peer:tma-unwaited-barrier-read
    ttgl.store(ptrs, v0 + v1)
    mbarrier.invalidate(bars.index(0))
    mbarrier.invalidate(bars.index(1))
    fence_async_shared()
    tma.async_copy_shared_to_global(desc, [0, 0], bufs.index(0))
    tma.store_wait(0)


@gluon.jit
def tma_wait_other_barrier(desc, out, FAILURE: ttgl.constexpr):
    """test_tma_wait_tracks_only_waited_barrier: waiting for load 1 says nothing of load 0."""
    elem: ttgl.constexpr = ttgl.BlockedLayout([1, 1], [32, 1], [4, 1], [0, 1])
    bufs = ttgl.allocate_shared_memory(ttgl.float16, [2, XB, XB], desc.layout)
    bars = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=1)
    mbarrier.init(bars.index(1), count=1)
    mbarrier.expect(bars.index(0), desc.block_type.nbytes)
    tma.async_copy_global_to_shared(desc, [0, 0], bars.index(0), bufs.index(0))
    mbarrier.expect(bars.index(1), desc.block_type.nbytes)
    tma.async_copy_global_to_shared(desc, [0, 0], bars.index(1), bufs.index(1))
    mbarrier.wait(bars.index(1), 0)
    if FAILURE:
        val = bufs.index(0).load(elem)  # peer:tma-wrong-barrier-read
    else:
        val = bufs.index(1).load(elem)
    ttgl.store(_tile(out, elem), val)
    if not FAILURE:
        mbarrier.wait(bars.index(0), 0)
    mbarrier.invalidate(bars.index(0))
    mbarrier.invalidate(bars.index(1))


@gluon.jit
def tma_one_buffer_two_barriers(desc, out, WAIT_LATEST: ttgl.constexpr):
    """test_tma_wait_does_not_publish_overwritten_row: two loads into one buffer, each on its
    own barrier; only waiting for the later one covers what a read sees."""
    elem: ttgl.constexpr = ttgl.BlockedLayout([1, 1], [32, 1], [4, 1], [0, 1])
    smem = ttgl.allocate_shared_memory(ttgl.float16, [XB, XB], desc.layout)
    bars = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=1)
    mbarrier.init(bars.index(1), count=1)
    mbarrier.expect(bars.index(0), desc.block_type.nbytes)
    tma.async_copy_global_to_shared(desc, [0, 0], bars.index(0), smem)
    mbarrier.expect(bars.index(1), desc.block_type.nbytes)
    tma.async_copy_global_to_shared(desc, [0, 0], bars.index(1), smem)  # peer:tma-second-load
    mbarrier.wait(bars.index(1 if WAIT_LATEST else 0), 0)
    val = smem.load(elem)  # peer:tma-overwritten-read
    ttgl.store(_tile(out, elem), val)
    mbarrier.wait(bars.index(0 if WAIT_LATEST else 1), 0)
    mbarrier.invalidate(bars.index(0))
    mbarrier.invalidate(bars.index(1))


@gluon.jit
def tma_store_source_reuse(desc, src, FAILURE: ttgl.constexpr):
    """test_tma_store: two TMA stores, one retired by store_wait(1); the racy twin rewrites
    the other's source too. (Triton's kernel stores buffers nothing wrote: written here.)"""
    rows: ttgl.constexpr = _rows()
    bufs = ttgl.allocate_shared_memory(ttgl.float16, [2, XB, XB], _nvmma())
    first = ttgl.load(_tile(src, rows))
    bufs.index(0).store(first)
    bufs.index(1).store(first)
    fence_async_shared()
    val = ttgl.full([XB, XB], 42, ttgl.float16, rows)
    tma.async_copy_shared_to_global(desc, [0, 0], bufs.index(0))
    tma.async_copy_shared_to_global(desc, [0, 0], bufs.index(1))
    tma.store_wait(pendings=1)
    bufs.index(0).store(val)
    if not FAILURE:
        tma.store_wait(pendings=0)
    bufs.index(1).store(val)  # peer:tma-store-source-rewrite


# ---- wgmma ---------------------------------------------------------------------------


@gluon.constexpr_function
def _wgmma_acc() -> Any:
    """The accumulator layout of Triton's wgmma tests (m64n32k16 instructions)."""
    return ttgl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                       instr_shape=[16, 32, 16])


@gluon.jit
def wgmma_operand_overwrite(a, b, FAILURE: ttgl.constexpr):
    """test_warpgroup_mma: the racy twin rewrites operand A before the wgmma is waited for.
    (Triton's kernel multiplies operands nothing wrote: written and fenced here.)"""
    rows: ttgl.constexpr = _rows()
    a_s = ttgl.allocate_shared_memory(ttgl.float16, [XB, XB], _nvmma())
    b_s = ttgl.allocate_shared_memory(ttgl.float16, [XB, XB], _nvmma())
    a_s.store(ttgl.load(_tile(a, rows)))
    b_s.store(ttgl.load(_tile(b, rows)))
    fence_async_shared()
    acc = ttgl.zeros([XB, XB], ttgl.float16, _wgmma_acc())
    acc = warpgroup_mma(a_s, b_s, acc, is_async=True)
    if FAILURE:
        a_s.store(ttgl.full([XB, XB], 42, ttgl.float16, rows))  # peer:wgmma-operand-rewrite
    warpgroup_mma_wait(num_outstanding=0, deps=[acc])
    a_s.store(ttgl.full([XB, XB], 42, ttgl.float16, rows))


@gluon.jit
def wgmma_second_group_pending(a, b, FAILURE: ttgl.constexpr):
    """test_warpgroup_mma2: two wgmmas, wait(1) retires only the first; the racy twin
    rewrites A, which the second still reads. (Operands written and fenced first.)"""
    rows: ttgl.constexpr = _rows()
    a_s = ttgl.allocate_shared_memory(ttgl.float16, [XB, XB], _nvmma())
    b_s = ttgl.allocate_shared_memory(ttgl.float16, [XB, XB], _nvmma())
    a_s.store(ttgl.load(_tile(a, rows)))
    b_s.store(ttgl.load(_tile(b, rows)))
    fence_async_shared()
    acc = ttgl.zeros([XB, XB], ttgl.float16, _wgmma_acc())
    acc = warpgroup_mma(a_s, b_s, acc, is_async=True)
    acc = warpgroup_mma(a_s, b_s, acc, is_async=True)
    warpgroup_mma_wait(num_outstanding=1, deps=[acc])
    if FAILURE:
        a_s.store(ttgl.full([XB, XB], 42, ttgl.float16, rows))  # peer:wgmma2-operand-rewrite
    warpgroup_mma_wait(num_outstanding=0, deps=[acc])
    a_s.store(ttgl.full([XB, XB], 42, ttgl.float16, rows))


@gluon.jit
def wgmma_tma_ring(a_desc, b_desc, NUM_BUF: ttgl.constexpr):
    """test_multibuffered_wgmma_loop: a TMA -> wgmma ring that keeps one wgmma in flight.
    With 2 buffers the refill lands in the buffer the in-flight wgmma reads; 3 are enough."""
    acc = warpgroup_mma_init(ttgl.zeros([XB, XB], ttgl.float32, _wgmma_acc()))
    a_s = ttgl.allocate_shared_memory(ttgl.float16, [NUM_BUF, XB, XB], a_desc.layout)
    b_s = ttgl.allocate_shared_memory(ttgl.float16, [NUM_BUF, XB, XB], b_desc.layout)
    a_ready = ttgl.allocate_shared_memory(ttgl.int64, [NUM_BUF, 1], mbarrier.MBarrierLayout())
    b_ready = ttgl.allocate_shared_memory(ttgl.int64, [NUM_BUF, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(NUM_BUF):
        mbarrier.init(a_ready.index(i), count=1)
        mbarrier.init(b_ready.index(i), count=1)
    mbarrier.expect(a_ready.index(0), a_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(a_desc, [0, 0], a_ready.index(0), a_s.index(0))
    mbarrier.expect(b_ready.index(0), b_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(b_desc, [0, 0], b_ready.index(0), b_s.index(0))
    fill = 1
    use = 0
    phase = 0
    for i in range(10):
        if i < 9:
            bar_a = a_ready.index(fill)
            dst_a = a_s.index(fill)
            mbarrier.expect(bar_a, a_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(a_desc, [0, 0], bar_a, dst_a)  # peer:ring-refill-a
            bar_b = b_ready.index(fill)
            dst_b = b_s.index(fill)
            mbarrier.expect(bar_b, b_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(b_desc, [0, 0], bar_b, dst_b)  # peer:ring-refill-b
            fill = (fill + 1) % NUM_BUF
        mbarrier.wait(a_ready.index(use), phase)
        mbarrier.wait(b_ready.index(use), phase)
        acc = warpgroup_mma(a_s.index(use), b_s.index(use), acc, is_async=True)
        warpgroup_mma_wait(num_outstanding=1, deps=[acc])
        use = (use + 1) % NUM_BUF
        if use == 0:
            phase = phase ^ 1
    warpgroup_mma_wait(num_outstanding=0, deps=[acc])
    for i in ttgl.static_range(NUM_BUF):
        mbarrier.invalidate(a_ready.index(i))
        mbarrier.invalidate(b_ready.index(i))


# ---- warp specialisation: generic loads and stores ordered by mbarriers ---------------
# Partitions of 4 warps each unless said; the default partition runs on warps 0-3. Where
# Triton's partitions read a buffer before anything wrote it, the kernel writes it before
# warp_specialize (whose entry is a barrier of every warp, so that write is ordered).


@gluon.constexpr_function
def _vec() -> Any:
    """One element per thread of a 4-warp partition."""
    return ttgl.BlockedLayout([1], [32], [4], [0])


@gluon.constexpr_function
def _flat() -> Any:
    """An unswizzled 1-D buffer."""
    return ttgl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])


@gluon.jit
def _ramp(layout: ttgl.constexpr):
    return ttgl.arange(0, XB, layout).to(ttgl.float16)


@gluon.jit
def swl_reader(smem, bars, FAILURE: ttgl.constexpr):
    mbarrier.wait(bars.index(0), phase=0, pred=not FAILURE)
    val = smem.index(0).load(_vec())  # peer:ws-swl-read
    smem.index(1).store(val)
    mbarrier.arrive(bars.index(1))


@gluon.jit
def swl_writer(smem, bars, FAILURE: ttgl.constexpr):
    smem.index(0).store(_ramp(_vec()))  # peer:ws-swl-write
    mbarrier.arrive(bars.index(0))


@gluon.jit
def ws_store_wait_load(out, FAILURE: ttgl.constexpr):
    """test_ws_store_wait_load: a worker writes, the default partition reads after (the racy
    twin: without) waiting for the worker's arrive."""
    smem = ttgl.allocate_shared_memory(ttgl.float16, [2, XB], _flat())
    smem.index(0).store(ttgl.full([XB], 1.0, ttgl.float16, _vec()))
    bars = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(2):
        mbarrier.init(bars.index(i), count=1)
    ttgl.warp_specialize([
        (swl_reader, (smem, bars, FAILURE)),
        (swl_writer, (smem, bars, FAILURE)),
    ], [4], [32])
    mbarrier.wait(bars.index(1), phase=0)
    ttgl.store(out + ttgl.arange(0, XB, _vec()), smem.index(0).load(_vec()))


@gluon.jit
def fence_producer(smem, bar, WHERE: ttgl.constexpr):
    rows: ttgl.constexpr = _rows()
    smem.store(ttgl.full([XB, XB], 42.0, ttgl.float16, rows))
    if WHERE == "producer":
        fence_async_shared()
    mbarrier.arrive(bar)
    if WHERE == "producer_after_arrive":
        fence_async_shared()


@gluon.jit
def fence_consumer(desc, smem, bar, WHERE: ttgl.constexpr):
    mbarrier.wait(bar, phase=0)
    if WHERE == "consumer":
        fence_async_shared()
    tma.async_copy_shared_to_global(desc, [0, 0], smem)  # peer:ws-fence-tma-store
    tma.store_wait(0)


@gluon.jit
def ws_fence_placement(desc, WHERE: ttgl.constexpr):
    """test_fence_async_shared_across_warp_specialize: one partition writes a tile, another
    TMA-stores it after an mbarrier; WHERE says who runs fence_async_shared, and when."""
    smem = ttgl.allocate_shared_memory(ttgl.float16, [XB, XB], _nvmma())
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    ttgl.warp_specialize([
        (fence_producer, (smem, bar, WHERE)),
        (fence_consumer, (desc, smem, bar, WHERE)),
    ], [4], [32])


@gluon.jit
def lws_writer(smem, bars, FAILURE: ttgl.constexpr):
    mbarrier.wait(bars.index(0), phase=0, pred=not FAILURE)
    smem.index(0).store(_ramp(_vec()))  # peer:ws-lws-write
    mbarrier.arrive(bars.index(1))


@gluon.jit
def lws_reader(smem, bars, FAILURE: ttgl.constexpr):
    val = smem.index(0).load(_vec())  # peer:ws-lws-read
    mbarrier.arrive(bars.index(0))
    smem.index(1).store(val)


@gluon.jit
def ws_load_wait_store(out, FAILURE: ttgl.constexpr):
    """test_ws_load_wait_store: a worker reads, the default partition overwrites after (the
    racy twin: without) waiting for the worker's arrive."""
    smem = ttgl.allocate_shared_memory(ttgl.float16, [2, XB], _flat())
    smem.index(0).store(ttgl.full([XB], 1.0, ttgl.float16, _vec()))
    bars = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(2):
        mbarrier.init(bars.index(i), count=1)
    ttgl.warp_specialize([
        (lws_writer, (smem, bars, FAILURE)),
        (lws_reader, (smem, bars, FAILURE)),
    ], [4], [32])
    mbarrier.wait(bars.index(1), phase=0)
    ttgl.store(out + ttgl.arange(0, XB, _vec()), smem.index(0).load(_vec()))


@gluon.jit
def tl2_reader0(smem, bars, MISSING: ttgl.constexpr):
    val = smem.index(0).load(_vec())  # peer:ws2b-read-0
    mbarrier.arrive(bars.index(0))
    smem.index(1).store(val)


@gluon.jit
def tl2_reader1(smem, bars, MISSING: ttgl.constexpr):
    val = smem.index(0).load(_vec())  # peer:ws2b-read-1
    mbarrier.arrive(bars.index(1))
    smem.index(2).store(val)


@gluon.jit
def tl2_writer(smem, bars, MISSING: ttgl.constexpr):
    if MISSING != "1":
        mbarrier.wait(bars.index(0), phase=0)
    if MISSING != "2":
        mbarrier.wait(bars.index(1), phase=0)
    smem.index(0).store(_ramp(_vec()))  # peer:ws2b-write
    mbarrier.arrive(bars.index(2))


@gluon.jit
def ws_two_loads_two_bars(out, MISSING: ttgl.constexpr):
    """test_ws_two_loads_two_bars: two readers, each releasing its own barrier; the writer
    must wait for both (MISSING names the barrier it skips)."""
    smem = ttgl.allocate_shared_memory(ttgl.float16, [3, XB], _flat())
    smem.index(0).store(ttgl.full([XB], 1.0, ttgl.float16, _vec()))
    bars = ttgl.allocate_shared_memory(ttgl.int64, [3, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(3):
        mbarrier.init(bars.index(i), count=1)
    ttgl.warp_specialize([
        (tl2_reader0, (smem, bars, MISSING)),
        (tl2_reader1, (smem, bars, MISSING)),
        (tl2_writer, (smem, bars, MISSING)),
    ], [4, 4], [32, 32])
    mbarrier.wait(bars.index(2), phase=0)
    ttgl.store(out + ttgl.arange(0, XB, _vec()), smem.index(0).load(_vec()))


@gluon.jit
def tl1_reader0(smem, bars, FAILURE: ttgl.constexpr):
    val = smem.index(0).load(_vec())  # peer:ws1b-read-0
    mbarrier.arrive(bars.index(0))
    smem.index(1).store(val)


@gluon.jit
def tl1_reader1(smem, bars, FAILURE: ttgl.constexpr):
    val = smem.index(0).load(_vec())  # peer:ws1b-read-1
    mbarrier.arrive(bars.index(0))
    smem.index(2).store(val)


@gluon.jit
def tl1_writer(smem, bars, FAILURE: ttgl.constexpr):
    mbarrier.wait(bars.index(0), phase=0, pred=not FAILURE)
    smem.index(0).store(_ramp(_vec()))  # peer:ws1b-write
    mbarrier.arrive(bars.index(1))


@gluon.jit
def ws_two_loads_one_bar(out, FAILURE: ttgl.constexpr):
    """test_ws_two_loads_one_bar: two readers arrive on one barrier of count 2; the writer
    waits for it (the racy twin does not)."""
    smem = ttgl.allocate_shared_memory(ttgl.float16, [3, XB], _flat())
    smem.index(0).store(ttgl.full([XB], 1.0, ttgl.float16, _vec()))
    bars = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=2)
    mbarrier.init(bars.index(1), count=1)
    ttgl.warp_specialize([
        (tl1_reader0, (smem, bars, FAILURE)),
        (tl1_reader1, (smem, bars, FAILURE)),
        (tl1_writer, (smem, bars, FAILURE)),
    ], [4, 4], [32, 32])
    mbarrier.wait(bars.index(1), phase=0)
    ttgl.store(out + ttgl.arange(0, XB, _vec()), smem.index(0).load(_vec()))


@gluon.jit
def loop_reader0(smem, bars, MISSING: ttgl.constexpr):
    acc = ttgl.zeros([XB], ttgl.float16, _vec())
    phase = 0
    for _ in range(10):
        if MISSING != "2":
            mbarrier.wait(bars.index(2), phase=phase)  # peer:wsloop-wait-2
        phase = phase ^ 1
        val = smem.index(0).load(_vec())  # peer:wsloop-read-0
        mbarrier.arrive(bars.index(0))
        acc = acc + val
    smem.index(1).store(acc)


@gluon.jit
def loop_reader1(smem, bars, MISSING: ttgl.constexpr):
    acc = ttgl.zeros([XB], ttgl.float16, _vec())
    phase = 0
    for _ in range(10):
        if MISSING != "3":
            mbarrier.wait(bars.index(3), phase=phase)  # peer:wsloop-wait-3
        phase = phase ^ 1
        val = smem.index(0).load(_vec())  # peer:wsloop-read-1
        mbarrier.arrive(bars.index(1))
        acc = acc + val
    smem.index(2).store(acc)


@gluon.jit
def loop_writer(smem, bars, MISSING: ttgl.constexpr):
    phase = 0
    for _ in range(10):
        if MISSING != "0":
            mbarrier.wait(bars.index(0), phase=phase)  # peer:wsloop-wait-0
        if MISSING != "1":
            mbarrier.wait(bars.index(1), phase=phase)  # peer:wsloop-wait-1
        phase = phase ^ 1
        smem.index(0).store(_ramp(_vec()))  # peer:wsloop-write
        mbarrier.arrive(bars.index(2))
        mbarrier.arrive(bars.index(3))


@gluon.jit
def ws_two_loads_two_bars_loop(MISSING: ttgl.constexpr):
    """test_ws_two_loads_two_bars_loop: ten rounds of two readers and a writer of one buffer;
    MISSING names the one wait left out (0/1: the writer's, 2/3: a reader's)."""
    smem = ttgl.allocate_shared_memory(ttgl.float16, [3, XB], _flat())
    smem.index(0).store(ttgl.full([XB], 1.0, ttgl.float16, _vec()))
    bars = ttgl.allocate_shared_memory(ttgl.int64, [4, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(4):
        mbarrier.init(bars.index(i), count=1)
    mbarrier.arrive(bars.index(2))
    mbarrier.arrive(bars.index(3))
    ttgl.warp_specialize([
        (loop_reader0, (smem, bars, MISSING)),
        (loop_reader1, (smem, bars, MISSING)),
        (loop_writer, (smem, bars, MISSING)),
    ], [4, 4], [32, 32])


@gluon.jit
def order_writer(smem, bars, FAILURE: ttgl.constexpr):
    phase = 0
    for _ in range(10):
        mbarrier.wait(bars.index(2), phase=phase)
        phase = phase ^ 1
        smem.index(0).store(_ramp(_vec()))
        mbarrier.arrive(bars.index(0))
        smem.index(1).store(_ramp(_vec()))  # peer:wsord-write-1
        mbarrier.arrive(bars.index(1))


@gluon.jit
def order_reader(smem, bars, FAILURE: ttgl.constexpr):
    acc = ttgl.zeros([XB], ttgl.float16, _vec())
    phase = 0
    for _ in range(10):
        mbarrier.wait(bars.index(0), phase=phase)
        val = smem.index(1 if FAILURE else 0).load(_vec())  # peer:wsord-read
        mbarrier.wait(bars.index(1), phase=phase)
        phase = phase ^ 1
        mbarrier.arrive(bars.index(2))
        acc = acc + val
    smem.index(2).store(acc)


@gluon.jit
def ws_load_ordering(FAILURE: ttgl.constexpr):
    """test_ws_load_ordering: buffer 1 is released by the second barrier; the racy twin
    reads it after waiting for the first only."""
    smem = ttgl.allocate_shared_memory(ttgl.float16, [3, XB], _flat())
    smem.index(0).store(ttgl.full([XB], 1.0, ttgl.float16, _vec()))
    smem.index(1).store(ttgl.full([XB], 1.0, ttgl.float16, _vec()))
    bars = ttgl.allocate_shared_memory(ttgl.int64, [3, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(3):
        mbarrier.init(bars.index(i), count=1)
    mbarrier.arrive(bars.index(2))
    ttgl.warp_specialize([
        (order_writer, (smem, bars, FAILURE)),
        (order_reader, (smem, bars, FAILURE)),
    ], [4], [32])


@gluon.jit
def pc_producer0(smem, bars, MISSING: ttgl.constexpr):
    phase = 0
    for _ in range(10):
        mbarrier.wait(bars.index(2), phase=phase)  # peer:ws22-wait-p0
        phase = phase ^ 1
        smem.index(0).store(_ramp(_vec()))  # peer:ws22-write-0
        mbarrier.arrive(bars.index(0))


@gluon.jit
def pc_producer1(smem, bars, MISSING: ttgl.constexpr):
    phase = 0
    for _ in range(10):
        mbarrier.wait(bars.index(3), phase=phase)  # peer:ws22-wait-p1
        phase = phase ^ 1
        smem.index(1).store(_ramp(_vec()))  # peer:ws22-write-1
        mbarrier.arrive(bars.index(0))


@gluon.jit
def pc_consumer0(smem, bars, MISSING: ttgl.constexpr):
    acc = ttgl.zeros([XB], ttgl.float16, _vec())
    phase = 0
    for _ in range(10):
        if MISSING != "T2":
            mbarrier.wait(bars.index(0), phase=phase)  # peer:ws22-wait-c0
        phase = phase ^ 1
        val = smem.index(0).load(_vec())  # peer:ws22-read-0
        mbarrier.arrive(bars.index(2))
        mbarrier.arrive(bars.index(3))
        acc = acc + val
    smem.index(2).store(acc)


@gluon.jit
def pc_consumer1(smem, bars, MISSING: ttgl.constexpr):
    acc = ttgl.zeros([XB], ttgl.float16, _vec())
    phase = 0
    for _ in range(10):
        if MISSING != "T3":
            mbarrier.wait(bars.index(0), phase=phase)  # peer:ws22-wait-c1
        phase = phase ^ 1
        val = smem.index(1).load(_vec())  # peer:ws22-read-1
        mbarrier.arrive(bars.index(2))
        mbarrier.arrive(bars.index(3))
        acc = acc + val
    smem.index(3).store(acc)


@gluon.jit
def ws_two_producers_two_consumers(MISSING: ttgl.constexpr):
    """test_ws_two_producers_two_consumers: every barrier counts two arrivals; a consumer
    named by MISSING reads without waiting for the producers."""
    smem = ttgl.allocate_shared_memory(ttgl.float16, [4, XB], _flat())
    smem.index(0).store(ttgl.full([XB], 1.0, ttgl.float16, _vec()))
    smem.index(1).store(ttgl.full([XB], 1.0, ttgl.float16, _vec()))
    bars = ttgl.allocate_shared_memory(ttgl.int64, [4, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(4):
        mbarrier.init(bars.index(i), count=2)
    mbarrier.arrive(bars.index(2), count=2)
    mbarrier.arrive(bars.index(3), count=2)
    ttgl.warp_specialize([
        (pc_producer0, (smem, bars, MISSING)),
        (pc_producer1, (smem, bars, MISSING)),
        (pc_consumer0, (smem, bars, MISSING)),
        (pc_consumer1, (smem, bars, MISSING)),
    ], [4, 4, 4], [32, 32, 32])


@gluon.jit
def dw_reader4(smem, bars, MISSING: ttgl.constexpr):
    val = smem.index(0).load(_vec())  # peer:wsdw-read-0
    mbarrier.arrive(bars.index(0))
    smem.index(1).store(val)


@gluon.jit
def dw_reader2(smem, bars, MISSING: ttgl.constexpr):
    two: ttgl.constexpr = ttgl.BlockedLayout([1], [32], [2], [0])
    val = smem.index(0).load(two)  # peer:wsdw-read-1
    mbarrier.arrive(bars.index(1))
    smem.index(2).store(val)


@gluon.jit
def dw_writer8(smem, bars, MISSING: ttgl.constexpr):
    eight: ttgl.constexpr = ttgl.BlockedLayout([1], [32], [8], [0])
    if MISSING != "1":
        mbarrier.wait(bars.index(0), phase=0)
    if MISSING != "2":
        mbarrier.wait(bars.index(1), phase=0)
    smem.index(0).store(_ramp(eight))  # peer:wsdw-write
    mbarrier.arrive(bars.index(2))


@gluon.jit
def ws_different_warp_counts(out, MISSING: ttgl.constexpr):
    """test_ws_different_warp_sizes: readers of 4 and 2 warps, a writer of 8 (14 warps)."""
    smem = ttgl.allocate_shared_memory(ttgl.float16, [3, XB], _flat())
    smem.index(0).store(ttgl.full([XB], 1.0, ttgl.float16, _vec()))
    bars = ttgl.allocate_shared_memory(ttgl.int64, [3, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(3):
        mbarrier.init(bars.index(i), count=1)
    ttgl.warp_specialize([
        (dw_reader4, (smem, bars, MISSING)),
        (dw_reader2, (smem, bars, MISSING)),
        (dw_writer8, (smem, bars, MISSING)),
    ], [2, 8], [32, 32])
    mbarrier.wait(bars.index(2), phase=0)
    ttgl.store(out + ttgl.arange(0, XB, _vec()), smem.index(0).load(_vec()))


# ---- warp specialisation: cp.async and wgmma across partitions ------------------------


@gluon.jit
def cp_ping_pong(src, smem, FAILURE: ttgl.constexpr, BASE: ttgl.constexpr):
    whole: ttgl.constexpr = ttgl.BlockedLayout([XB], [32], [4], [0])
    offs = ttgl.arange(0, XB, whole)
    acc = ttgl.zeros([XB], ttgl.float16, whole)
    async_copy.async_copy_global_to_shared(smem.index(BASE), src + offs)  # peer:wscp-prime
    async_copy.commit_group()
    for i in range(1, 10):
        if i < 9:
            dst = smem.index(BASE + i % 2)
            async_copy.async_copy_global_to_shared(dst, src + offs)  # peer:wscp-copy
            async_copy.commit_group()
            async_copy.wait_group(1)
        else:
            async_copy.wait_group(0)
        # the racy twin's worker (BASE 2) reads the default partition's buffers 0/1
        mine = 0 if (FAILURE and BASE == 2) else BASE
        acc = acc + smem.index(mine + (i - 1) % 2).load(whole)  # peer:wscp-read
    smem.index(BASE).store(acc)  # peer:wscp-final


@gluon.jit
def ws_async_copy_commits(src, FAILURE: ttgl.constexpr):
    """test_ws_async_copy_commits: two partitions each pipeline cp.async through their own
    two buffers; the racy twin's worker reads the other partition's."""
    smem = ttgl.allocate_shared_memory(ttgl.float16, [4, XB], _flat())
    for i in ttgl.static_range(4):
        smem.index(i).store(ttgl.full([XB], 1.0, ttgl.float16, _vec()))
    ttgl.warp_specialize([
        (cp_ping_pong, (src, smem, FAILURE, 0)),
        (cp_ping_pong, (src, smem, FAILURE, 2)),
    ], [4], [32])


@gluon.jit
def cpv_copier(src, smem, bar, FAILURE: ttgl.constexpr):
    whole: ttgl.constexpr = ttgl.BlockedLayout([XB], [32], [4], [0])
    offs = ttgl.arange(0, XB, whole)
    async_copy.async_copy_global_to_shared(smem.index(0), src + offs)
    async_copy.commit_group()
    async_copy.async_copy_global_to_shared(smem.index(1), src + offs)
    async_copy.commit_group()
    async_copy.wait_group(1)
    mbarrier.arrive(bar)


@gluon.jit
def cpv_reader(src, smem, bar, FAILURE: ttgl.constexpr):
    whole: ttgl.constexpr = ttgl.BlockedLayout([XB], [32], [4], [0])
    mbarrier.wait(bar, phase=0)
    val = smem.index(1 if FAILURE else 0).load(whole)  # peer:wscpv-read
    smem.index(0).store(val)


@gluon.jit
def ws_async_copy_wait_visibility(src, FAILURE: ttgl.constexpr):
    """test_ws_async_copy_wait_visibility: wait_group(1) then an arrive publish the first
    copy only; the racy twin's reader reads the second."""
    smem = ttgl.allocate_shared_memory(ttgl.float16, [2, XB], _flat())
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    ttgl.warp_specialize([
        (cpv_copier, (src, smem, bar, FAILURE)),
        (cpv_reader, (src, smem, bar, FAILURE)),
    ], [4], [32])


@gluon.jit
def wgv_mma(a_s, b_s, bar, FAILURE: ttgl.constexpr):
    acc = ttgl.zeros([XB, XB], ttgl.float16, _wgmma_acc())
    acc = warpgroup_mma(a_s.index(0), b_s.index(0), acc, is_async=True)
    acc = warpgroup_mma(a_s.index(1), b_s.index(1), acc, is_async=True)
    warpgroup_mma_wait(num_outstanding=1, deps=[acc])
    mbarrier.arrive(bar)


@gluon.jit
def wgv_writer(a_s, b_s, bar, FAILURE: ttgl.constexpr):
    mbarrier.wait(bar, phase=0)
    val = ttgl.full([XB, XB], 42, ttgl.float16, _rows())
    a_s.index(1 if FAILURE else 0).store(val)  # peer:wswg-write


@gluon.jit
def ws_wgmma_wait_visibility(a, b, FAILURE: ttgl.constexpr):
    """test_ws_wgmma_wait_visibility: wgmma wait(1) then an arrive retire the first wgmma
    only; the racy twin's worker rewrites the second one's A. (Operands written and fenced
    before warp_specialize: Triton's kernel multiplies unwritten ones.)"""
    rows: ttgl.constexpr = _rows()
    a_s = ttgl.allocate_shared_memory(ttgl.float16, [2, XB, XB], _nvmma())
    b_s = ttgl.allocate_shared_memory(ttgl.float16, [2, XB, XB], _nvmma())
    for i in ttgl.static_range(2):
        a_s.index(i).store(ttgl.load(_tile(a, rows)))
        b_s.index(i).store(ttgl.load(_tile(b, rows)))
    fence_async_shared()
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    ttgl.warp_specialize([
        (wgv_mma, (a_s, b_s, bar, FAILURE)),
        (wgv_writer, (a_s, b_s, bar, FAILURE)),
    ], [4], [32])


# ---- deadlocks and mbarrier misuse ---------------------------------------------------


@gluon.jit
def dl2_wait0(bars):
    mbarrier.wait(bars.index(0), phase=0)  # peer:dl2-wait-0


@gluon.jit
def dl2_wait1(bars):
    mbarrier.wait(bars.index(1), phase=0)  # peer:dl2-wait-1


@gluon.jit
def deadlock_two_partitions():
    """test_deadlock_two_partitions: each partition waits on a barrier nobody arrives on."""
    bars = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=1)
    mbarrier.init(bars.index(1), count=1)
    ttgl.warp_specialize([
        (dl2_wait0, (bars,)),
        (dl2_wait1, (bars,)),
    ], [4], [32])


@gluon.jit
def dl_nothing(bar):
    pass


@gluon.jit
def dl_wait_forever(bar):
    mbarrier.wait(bar, phase=0)  # peer:dl-wait-forever


@gluon.jit
def deadlock_one_warp_workers():
    """test_deadlock_with_padded_warp_specialize_partition: three 1-warp workers wait for
    ever while the default partition does nothing."""
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    ttgl.warp_specialize([
        (dl_nothing, (bar,)),
        (dl_wait_forever, (bar,)),
        (dl_wait_forever, (bar,)),
        (dl_wait_forever, (bar,)),
    ], [1, 1, 1], [32, 32, 32])


@gluon.jit
def dlret_wait(bars):
    mbarrier.wait(bars.index(0), phase=0)  # peer:dlret-wait


@gluon.jit
def dlret_arrive_other(bars):
    mbarrier.arrive(bars.index(1))


@gluon.jit
def deadlock_after_return():
    """test_deadlock_after_other_partition_returns[single-cta-barrier]: the only arriving
    partition arrives on the other barrier and returns."""
    bars = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=1)
    mbarrier.init(bars.index(1), count=1)
    ttgl.warp_specialize([
        (dl_nothing, (bars,)),
        (dlret_wait, (bars,)),
        (dlret_arrive_other, (bars,)),
    ], [4, 4], [32, 32])


@gluon.jit
def deadlock_overarrival():
    """test_deadlock_overarrival: two arrivals complete phases 0 and 1; waiting for parity 0
    then waits for phase 2."""
    bars = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=1)
    mbarrier.init(bars.index(1), count=1)
    mbarrier.arrive(bars.index(0))
    mbarrier.arrive(bars.index(0))
    mbarrier.wait(bars.index(0), phase=0)  # peer:dl-over-wait


@gluon.jit
def under_a(bars):
    mbarrier.arrive(bars.index(1))
    mbarrier.wait(bars.index(0), phase=0)  # peer:dl-under-wait-0


@gluon.jit
def under_b(bars):
    mbarrier.arrive(bars.index(0))
    mbarrier.wait(bars.index(1), phase=0)  # peer:dl-under-wait-1


@gluon.jit
def deadlock_underarrival():
    """test_deadlock_underarrival: barriers of count 2 that get one arrival each."""
    bars = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=2)
    mbarrier.init(bars.index(1), count=2)
    ttgl.warp_specialize([
        (under_a, (bars,)),
        (under_b, (bars,)),
    ], [4], [32])


@gluon.jit
def phases_wait0_arrive(bars):
    mbarrier.wait(bars.index(0), phase=0)
    mbarrier.arrive(bars.index(0))


@gluon.jit
def phases_wait1(bars):
    mbarrier.wait(bars.index(0), phase=1)


@gluon.jit
def different_phases():
    """test_deadlock_different_phases (clean): one partition completes the phase the other
    waits for."""
    bars = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=1)
    mbarrier.arrive(bars.index(0))
    ttgl.warp_specialize([
        (phases_wait0_arrive, (bars,)),
        (phases_wait1, (bars,)),
    ], [4], [32])


@gluon.jit
def tma_signal_0(desc, smem, bars):
    mbarrier.expect(bars.index(0), desc.block_type.nbytes)
    tma.async_copy_global_to_shared(desc, [0, 0], bars.index(0), smem.index(0))
    mbarrier.wait(bars.index(0), phase=0)


@gluon.jit
def tma_signal_1(desc, smem, bars):
    mbarrier.expect(bars.index(1), desc.block_type.nbytes)
    tma.async_copy_global_to_shared(desc, [0, 0], bars.index(1), smem.index(1))
    mbarrier.wait(bars.index(1), phase=0)


@gluon.jit
def tma_completes_waits(desc):
    """test_deadlock_exempt_when_tma_signals (clean): each partition waits for its own TMA
    load, which no warp arrives for."""
    smem = ttgl.allocate_shared_memory(ttgl.float16, [2, XB, XB], _nvmma())
    bars = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=1)
    mbarrier.init(bars.index(1), count=1)
    ttgl.warp_specialize([
        (tma_signal_0, (desc, smem, bars)),
        (tma_signal_1, (desc, smem, bars)),
    ], [4], [32])


@gluon.jit
def uf_arrive_twice(bars):
    mbarrier.arrive(bars.index(1), count=2)  # peer:mb-underflow-arrive
    mbarrier.wait(bars.index(0), phase=0)  # peer:mb-underflow-wait-0


@gluon.jit
def uf_wait(bars):
    mbarrier.wait(bars.index(1), phase=0)  # peer:mb-underflow-wait-1


@gluon.jit
def barrier_underflow():
    """test_barrier_underflow: an arrive of count 2 on a barrier expecting one."""
    bars = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=1)
    mbarrier.init(bars.index(1), count=1)
    ttgl.warp_specialize([
        (uf_arrive_twice, (bars,)),
        (uf_wait, (bars,)),
    ], [4], [32])


@gluon.jit
def barrier_reinit(WITH_INVALIDATE: ttgl.constexpr):
    """test_barrier_reinit_requires_invalidate."""
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    if WITH_INVALIDATE:
        mbarrier.invalidate(bar)
    mbarrier.init(bar, count=1)  # peer:mb-reinit
    mbarrier.invalidate(bar)


@gluon.jit
def barrier_not_live(USE: ttgl.constexpr, INIT_THEN_INVALIDATE: ttgl.constexpr):
    """test_barrier_use_without_init / test_barrier_use_after_invalidate: one use of an
    mbarrier that is not live."""
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1], mbarrier.MBarrierLayout())
    if INIT_THEN_INVALIDATE:
        mbarrier.init(bar, count=1)
        mbarrier.invalidate(bar)
    if USE == "wait":
        mbarrier.wait(bar, phase=0)  # peer:mb-dead-wait
    elif USE == "arrive":
        mbarrier.arrive(bar)  # peer:mb-dead-arrive
    elif USE == "invalidate":
        mbarrier.invalidate(bar)  # peer:mb-dead-invalidate
    else:
        mbarrier.expect(bar, TILE_BYTES)  # peer:mb-dead-expect


# ---- aliasing views of one allocation ------------------------------------------------


@gluon.jit
def alias_writer(view, bars, OVERLAP: ttgl.constexpr):
    """Writes `view`: the whole [XB, 2 XB] buffer when OVERLAP, else its left half."""
    cols: ttgl.constexpr = 2 * XB if OVERLAP else XB
    layout: ttgl.constexpr = ttgl.BlockedLayout([1, cols], [32, 1], [4, 1], [0, 1])
    view.store(ttgl.full([XB, cols], 42.0, ttgl.float16, layout))  # peer:alias-write
    mbarrier.arrive(bars.index(0))


@gluon.jit
def alias_reader(view, sink, bars, MISSING_BAR: ttgl.constexpr):
    if not MISSING_BAR:
        mbarrier.wait(bars.index(0), phase=0)
    val = view.load(_rows())  # peer:alias-read
    sink.store(val)


@gluon.jit
def aliasing_generic_write(MISSING_BAR: ttgl.constexpr, OVERLAP: ttgl.constexpr):
    """test_aliasing_shared_visibility_outstanding_write: one partition writes a view of a
    buffer, another reads its right half, with or without the barrier between. (The buffer
    is written whole first: Triton's reader reads bytes the non-overlapping writer never
    writes.)"""
    flat2: ttgl.constexpr = ttgl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0, 1])
    wide: ttgl.constexpr = ttgl.BlockedLayout([1, 2 * XB], [32, 1], [4, 1], [0, 1])
    smem = ttgl.allocate_shared_memory(ttgl.float16, [XB, 2 * XB], flat2)
    smem.store(ttgl.full([XB, 2 * XB], 1.0, ttgl.float16, wide))
    sink = ttgl.allocate_shared_memory(ttgl.float16, [XB, XB], flat2)
    bars = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=1)
    left = smem if OVERLAP else smem.slice(0, XB, dim=1)
    right = smem.slice(XB, XB, dim=1)
    ttgl.warp_specialize([
        (alias_writer, (left, bars, OVERLAP)),
        (alias_reader, (right, sink, bars, MISSING_BAR)),
    ], [4], [32])


@gluon.jit
def tmaov_writer(whole, right, desc, bars):
    wide: ttgl.constexpr = ttgl.BlockedLayout([1, 2 * XB], [32, 1], [4, 1], [0, 1])
    whole.store(ttgl.full([XB, 2 * XB], 42.0, ttgl.float16, wide))
    mbarrier.expect(bars.index(0), desc.block_type.nbytes)
    tma.async_copy_global_to_shared(desc, [0, 0], bars.index(0), right)


@gluon.jit
def tmaov_reader(right, sink, bars):
    mbarrier.wait(bars.index(0), phase=0)
    sink.store(right.load(_rows()))


@gluon.jit
def aliasing_tma_overwrite(desc):
    """test_aliasing_tma_overwrite_clears_stale_write_visibility (clean): a generic write of
    the whole buffer, then a TMA load into its right half that the reader waits for."""
    smem = ttgl.allocate_shared_memory(ttgl.float16, [XB, 2 * XB], _nvmma())
    right = smem.slice(XB, XB, dim=1)
    sink = ttgl.allocate_shared_memory(ttgl.float16, [XB, XB], _nvmma())
    bars = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=1)
    ttgl.warp_specialize([
        (tmaov_writer, (smem, right, desc, bars)),
        (tmaov_reader, (right, sink, bars)),
    ], [4], [32])


@gluon.jit
def commit_copier(src, view, bars, MISSING_WAIT: ttgl.constexpr, OVERLAP: ttgl.constexpr):
    cols: ttgl.constexpr = 2 * XB if OVERLAP else XB
    layout: ttgl.constexpr = ttgl.BlockedLayout([1, cols], [32, 1], [4, 1], [0, 1])
    r = ttgl.arange(0, XB, ttgl.SliceLayout(1, layout))[:, None]
    c = ttgl.arange(0, cols, ttgl.SliceLayout(0, layout))[None, :]
    async_copy.async_copy_global_to_shared(view, src + r * (2 * XB) + c)
    async_copy.commit_group()
    if not MISSING_WAIT:
        async_copy.wait_group(0)
    mbarrier.arrive(bars.index(0))


@gluon.jit
def commit_writer(view, bars):
    layout: ttgl.constexpr = ttgl.BlockedLayout([1, XB], [32, 1], [4, 1], [0, 1])
    mbarrier.wait(bars.index(0), phase=0)
    view.store(ttgl.zeros([XB, XB], ttgl.float32, layout))  # peer:alias-cp-overwrite


@gluon.jit
def aliasing_commit_tracking(src, MISSING_WAIT: ttgl.constexpr, OVERLAP: ttgl.constexpr):
    """test_aliasing_commit_tracking: cp.async into a view of an fp32 [XB, 2 XB] buffer, an
    arrive (after wait_group(0), or not), then a store into its right half."""
    flat2: ttgl.constexpr = ttgl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0, 1])
    smem = ttgl.allocate_shared_memory(ttgl.float32, [XB, 2 * XB], flat2)
    bars = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=1)
    left = smem if OVERLAP else smem.slice(0, XB, dim=1)
    right = smem.slice(XB, XB, dim=1)
    ttgl.warp_specialize([
        (commit_copier, (src, left, bars, MISSING_WAIT, OVERLAP)),
        (commit_writer, (right, bars)),
    ], [4], [32])


# --------------------------------------------------------------------------------------
# Launch arguments: how each is typed for Triton's compiler and made on the GPU.


@dataclass(frozen=True)
class Arg:
    """One launch argument: a torch tensor (`block` None) or a Gluon TMA tensor descriptor
    over one (`block` its box), filled with fresh random values."""

    name: str
    dtype: str = "fp16"  # Triton's name: fp16, fp32
    shape: tuple[int, ...] = (128, 128)
    block: tuple[int, ...] | None = None

    def signature(self) -> str:
        """The type Triton's compiler takes for it (a descriptor names its shared layout)."""
        if self.block is None:
            return "*" + self.dtype
        return f"tensordesc<{self.dtype}[{', '.join(map(str, self.block))}],{_desc_layout()!r}>"

    def make(self, g: Any) -> Any:
        """GPU only: the launch argument, with random contents (never zeros) drawn from `g`,
        so that a case run twice (natively, then checked) gets the same inputs."""
        import torch

        dtype = getattr(torch, {"fp16": "float16", "fp32": "float32"}[self.dtype])
        t = torch.randn(self.shape, device="cuda", dtype=dtype, generator=g)
        if self.block is None:
            return t
        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

        return TensorDescriptor.from_tensor(t, list(self.block), _desc_layout())


def _desc_layout() -> Any:
    """The shared layout of every descriptor here: fp16, 128-byte swizzle (TMA and wgmma)."""
    return ttgl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)


def _tile_desc(name: str) -> Arg:
    return Arg(name, "fp16", (128, 128), (128, 128))


# --------------------------------------------------------------------------------------
# The cases.


Finding = tuple[str, str]  # (consan kind, marker)


@dataclass(frozen=True)
class PeerCase:
    """One Triton ConSan test case (one parameter value), as consan should judge it.

    `kind`/`marker` is the finding consan must give for it (the current access's line);
    `alt` the same race seen from the other side or another equally valid finding, which
    one appears depending on which warps get there first: at least one of `(kind, marker)`
    and `alt` must be reported. `extra` lists further findings consan gives where Triton's
    ConSan (which stops at the first) says nothing; nothing outside those three may be
    reported. `kind` None: consan must report nothing. `gap`: consan's model cannot give the
    verdict `kind` names yet (why); `missing`: the case cannot be written with the installed
    Gluon (why; `run` and `compile_case` raise).
    """

    name: str
    triton_test: str
    failure: bool
    triton_verdict: str
    kind: str | None
    marker: str | None
    run: Callable[[], Any]
    num_ctas: int = 1
    capability: int = 90
    kernel: Any = None
    args: tuple[Arg, ...] = ()
    constexprs: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    exercises: str = ""
    alt: tuple[Finding, ...] = ()
    extra: tuple[Finding, ...] = ()
    note: str = ""
    gap: str = ""
    missing: str = ""
    cuda_form: str = ""  # a case 3.6.0 cannot build: the GPU test of the same situation

    @property
    def signature(self) -> dict[str, str]:
        """Triton's compile signature, in the kernel's parameter order: the arguments' types
        and the constexprs."""
        types = {**{a.name: a.signature() for a in self.args},
                 **{k: "constexpr" for k in self.constexprs}}
        return {name: types[name] for name in self.kernel.arg_names}

    @property
    def attrs(self) -> dict[tuple[int, ...], list[list[Any]]]:
        """What Triton's JIT would specialise: every pointer (a fresh torch tensor) is
        16-byte aligned. (cp.async needs it to copy more than one element at a time.)"""
        pointers = {a.name for a in self.args if a.block is None}
        return {(i,): [["tt.divisibility", 16]] for i, name in enumerate(self.kernel.arg_names)
                if name in pointers}

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Every (kind, marker) consan may report for this case."""
        first = ((self.kind, self.marker),) if self.kind and self.marker else ()
        return first + self.alt + self.extra


@dataclass(frozen=True)
class _Launch:
    """A case's `run`: inputs drawn from one seed (the same ones on every run, so the clean
    twin's native and checked bits can be compared), one launch through the normal Gluon JIT
    path."""

    kernel: Any
    args: tuple[Arg, ...]
    constexprs: Mapping[str, Any]
    options: Mapping[str, Any]
    missing: str = ""

    def __call__(self) -> tuple[Any, ...]:
        if self.missing:
            raise NotImplementedError(self.missing)
        import torch

        g = torch.Generator(device="cuda").manual_seed(0)
        made = [a.make(g) for a in self.args]
        self.kernel[(1,)](*made, **self.constexprs, **self.options)
        return tuple(getattr(m, "base", m) for m in made)


def _case(name: str, test: str, failure: bool, verdict: str, kind: str | None,
          marker: str | None, kernel: Any, args: tuple[Arg, ...] = (),
          constexprs: Mapping[str, Any] | None = None, *, warps: int = 4, exercises: str,
          **more: Any) -> PeerCase:
    constexprs = dict(constexprs or {})
    options = {"num_warps": warps, "num_ctas": more.get("num_ctas", 1)}
    run = _Launch(kernel, args, constexprs, options, more.get("missing", ""))
    return PeerCase(name, test, failure, verdict, kind, marker, run, kernel=kernel, args=args,
                    constexprs=constexprs, options=options, exercises=exercises, **more)


def _twins(base: str, test: str, kernel: Any, args: tuple[Arg, ...], verdict: str, kind: str,
           marker: str, *, exercises: str, param: str = "FAILURE", **racy: Any) -> list[PeerCase]:
    """The racy twin (param True) and the clean one (param False) of a FAILURE-style test."""
    return [
        _case(f"{base}[failure]", test, True, verdict, kind, marker, kernel, args, {param: True},
              exercises=exercises, **racy),
        _case(f"{base}[clean]", test, False, CLEAN, None, None, kernel, args, {param: False},
              exercises=exercises),
    ]


SRC = Arg("src", "fp16", (128, 128))
OUT = Arg("out", "fp16", (128, 128))
VEC_OUT = Arg("out", "fp16", (128,))
VEC_SRC = Arg("src", "fp16", (128,))
A = Arg("a", "fp16", (128, 128))
B = Arg("b", "fp16", (128, 128))
DESC = _tile_desc("desc")

NO_MULTICAST = ("triton 3.6.0's Gluon has no multicast TMA load (tma.async_copy_global_to_shared "
                "has no multicast argument) and no cluster barrier")
UNORDERED = ("which side reports depends on which partition gets there first: the read of a "
             "write it is not ordered after (race.raw), or the write over a read it is not "
             "ordered after (race.war)")


def _ws_missing_wait(base: str, test: str, kernel: Any, args: tuple[Arg, ...], param: str,
                     value: str, kind: str, marker: str, alt: tuple[Finding, ...], *,
                     exercises: str, verdict: str = OUTSTANDING, note: str = UNORDERED
                     ) -> PeerCase:
    """A racy value of a MISSING_BAR-style parameter of a warp-specialised test."""
    return _case(f"{base}[{param.lower()}={value}]", test, True, verdict, kind, marker, kernel,
                 args, {param: value}, exercises=exercises, alt=alt, note=note)


def _build() -> list[PeerCase]:
    cases: list[PeerCase] = []
    add = cases.extend

    # cp.async
    add([_case("cp_async_twice[failure]", "test_cache_miss_knob", True,
               "device-side assert (the test asserts only that the launch fails)",
               "async.pending-write", "peer:cp-twice", cp_async_twice, (SRC,),
               exercises="cp.async over a tile whose previous cp.async was not waited for")])
    add(_twins("cp_async_group_reuse", "test_async_copy", cp_async_group_reuse, (SRC,),
               PENDING_CP, "async.pending-write", "peer:cp-group-reuse",
               exercises="cp.async into a buffer whose earlier group wait_group(2) did not "
                         "retire (clean: wait_group(1))"))

    # TMA
    add(_twins("tma_read_before_wait", "test_async_tma_kernel", tma_read_before_wait,
               (DESC, OUT), OUT_WRITES, "async.pending-write", "peer:tma-read-before-wait",
               exercises="generic read of a TMA-loaded tile before the mbarrier wait"))
    add(_twins("tma_two_loads_one_barrier", "test_async_tma_kernel_2bufs_1bar",
               tma_two_loads_one_barrier, (_tile_desc("a_desc"), _tile_desc("b_desc"), OUT),
               OUT_WRITES, "async.pending-write", "peer:tma2-read-a",
               exercises="two TMA loads completing one phase (expect of both), read before "
                         "the wait",
               extra=(("async.pending-write", "peer:tma2-read-b"),)))
    add([_case("tma_expect_mismatch[under]", "test_async_tma_expect_bytes_mismatch", True,
               DEADLOCK, "mbarrier.underflow", "peer:tma-expect-load", tma_expect_mismatch,
               (DESC, OUT), {"DELTA": -16},
               exercises="expect_tx 16 bytes short of what the TMA load completes",
               extra=(("deadlock", "peer:tma-expect-wait"),),
               note="consan: the load completes more bytes than the phase expects "
                    "(mbarrier.underflow, at the load); its bytes still count, so the "
                    "phase never completes and the wait deadlocks; Triton's ConSan reports "
                    "only the deadlock. Needs the map's box known (a guessed footprint "
                    "takes what the phase expects)"),
         _case("tma_expect_mismatch[over]", "test_async_tma_expect_bytes_mismatch", True,
               DEADLOCK, "deadlock", "peer:tma-expect-wait", tma_expect_mismatch, (DESC, OUT),
               {"DELTA": 16},
               exercises="expect_tx 16 bytes more than the TMA load completes: the phase "
                         "never completes")])
    add(_twins("tma_two_barriers", "test_tma_interleave_kernel", tma_two_barriers, (DESC, OUT),
               OUT_WRITES, "async.pending-write", "peer:tma-unwaited-barrier-read",
               exercises="two TMA loads on two mbarriers, one waited for, both read; then a "
                         "TMA store of the waited buffer"))
    add(_twins("tma_wait_other_barrier", "test_tma_wait_tracks_only_waited_barrier",
               tma_wait_other_barrier, (DESC, OUT), OUT_WRITES, "async.pending-write",
               "peer:tma-wrong-barrier-read",
               exercises="a wait on load 1's mbarrier does not cover load 0's buffer"))
    add([_case("tma_one_buffer_two_barriers[wait_latest=False]",
               "test_tma_wait_does_not_publish_overwritten_row", True, OUT_WRITES,
               "async.pending-write", "peer:tma-overwritten-read", tma_one_buffer_two_barriers,
               (DESC, OUT), {"WAIT_LATEST": False},
               exercises="two TMA loads into one buffer on two mbarriers; the read waits for "
                         "the first only",
               extra=(("async.pending-write", "peer:tma-second-load"),),
               note="consan also reports the second load itself: it writes bytes the first "
                    "load may still be writing (two copies in flight into one buffer)"),
         _case("tma_one_buffer_two_barriers[wait_latest=True]",
               "test_tma_wait_does_not_publish_overwritten_row", False, CLEAN,
               "async.pending-write", "peer:tma-second-load", tma_one_buffer_two_barriers,
               (DESC, OUT), {"WAIT_LATEST": True},
               exercises="two TMA loads into one buffer on two mbarriers; the read waits for "
                         "the second",
               note="verdicts differ: consan reports the second load writing bytes the first, "
                    "not yet waited for, may still be writing (which copy lands last decides "
                    "the bytes); Triton's ConSan accepts it because the read waits for the "
                    "later load")])
    add(_twins("tma_store_source_reuse", "test_tma_store", tma_store_source_reuse,
               (DESC, SRC), PENDING_TMA_STORE, "async.pending-read",
               "peer:tma-store-source-rewrite",
               exercises="rewriting a TMA store's source before store_wait retires it",
               note="Triton's kernel TMA-stores buffers nothing wrote (consan: uninit.read at "
                    "the stores); the port writes and fences them first"))

    # wgmma
    add(_twins("wgmma_operand_overwrite", "test_warpgroup_mma", wgmma_operand_overwrite, (A, B),
               PENDING_WGMMA, "async.pending-read", "peer:wgmma-operand-rewrite",
               exercises="rewriting a wgmma operand before warpgroup_mma_wait",
               note="Triton's kernel multiplies operands nothing wrote (consan: uninit.read at "
                    "the wgmma); the port writes and fences them first"))
    add(_twins("wgmma_second_group_pending", "test_warpgroup_mma2", wgmma_second_group_pending,
               (A, B), PENDING_WGMMA, "async.pending-read", "peer:wgmma2-operand-rewrite",
               exercises="wait(1) after two wgmmas leaves the second reading A",
               note="operands written and fenced first, as for test_warpgroup_mma"))
    ring_args = (_tile_desc("a_desc"), _tile_desc("b_desc"))
    add([_case("wgmma_tma_ring[failure]", "test_multibuffered_wgmma_loop", True, PENDING_WGMMA,
               "async.pending-read", "peer:ring-refill-a", wgmma_tma_ring, ring_args,
               {"NUM_BUF": 2},
               exercises="TMA refill of the stage the in-flight wgmma still reads (2 stages, "
                         "one wgmma outstanding)",
               extra=(("async.pending-read", "peer:ring-refill-b"),)),
         _case("wgmma_tma_ring[clean]", "test_multibuffered_wgmma_loop", False, CLEAN, None,
               None, wgmma_tma_ring, ring_args, {"NUM_BUF": 3},
               exercises="the same ring with 3 stages")])

    # warp specialisation
    add(_twins("ws_store_wait_load", "test_ws_store_wait_load", ws_store_wait_load, (VEC_OUT,),
               OUTSTANDING, "race.raw", "peer:ws-swl-read",
               exercises="mbarrier hand-off from a writing worker to the reading default "
                         "partition",
               alt=(("race.war", "peer:ws-swl-write"),), note=UNORDERED))
    for where, racy in (("none", True), ("producer_after_arrive", True), ("producer", False),
                        ("consumer", False)):
        reported = where != "producer"  # consan also wants the consumer's fence elsewhere
        cases.append(_case(
            f"ws_fence_placement[{where}]", "test_fence_async_shared_across_warp_specialize",
            racy, MISSING_FENCE if racy else CLEAN,
            "proxy.missing-fence" if reported else None,
            "peer:ws-fence-tma-store" if reported else None,
            ws_fence_placement, (Arg("desc", "fp16", (128, 128), (128, 128)),),
            {"WHERE": where},
            exercises="generic writes by one partition, TMA store by another after an "
                      f"mbarrier; fence_async_shared: {where}",
            note=("verdicts differ: consan requires the fence of the warps that wrote, before "
                  "their release (the PTX ISA gives no rule carrying a proxy fence across a "
                  "barrier); Triton's ConSan accepts the issuer's fence after the wait")
            if where == "consumer" else ""))
    add(_twins("ws_load_wait_store", "test_ws_load_wait_store", ws_load_wait_store, (VEC_OUT,),
               OUTSTANDING, "race.war", "peer:ws-lws-write",
               exercises="mbarrier hand-off from a reading worker to the overwriting default "
                         "partition",
               alt=(("race.raw", "peer:ws-lws-read"),), note=UNORDERED))
    cases.append(_case("ws_two_loads_two_bars[missing=none]", "test_ws_two_loads_two_bars",
                       False, CLEAN, None, None, ws_two_loads_two_bars, (VEC_OUT,),
                       {"MISSING": "none"},
                       exercises="two readers each release a barrier; the writer waits for "
                                 "both"))
    for miss, reader in (("1", "peer:ws2b-read-0"), ("2", "peer:ws2b-read-1")):
        cases.append(_ws_missing_wait(
            "ws_two_loads_two_bars", "test_ws_two_loads_two_bars", ws_two_loads_two_bars,
            (VEC_OUT,), "MISSING", miss, "race.war", "peer:ws2b-write",
            (("race.raw", reader),),
            exercises=f"the writer skips barrier {int(miss) - 1} (reader {int(miss) - 1})"))
    add(_twins("ws_two_loads_one_bar", "test_ws_two_loads_one_bar", ws_two_loads_one_bar,
               (VEC_OUT,), OUTSTANDING, "race.war", "peer:ws1b-write",
               exercises="two readers arrive on one barrier of count 2; the writer skips it",
               alt=(("race.raw", "peer:ws1b-read-0"), ("race.raw", "peer:ws1b-read-1")),
               note=UNORDERED))
    cases.append(_case("ws_two_loads_two_bars_loop[missing=none]",
                       "test_ws_two_loads_two_bars_loop", False, CLEAN, None, None,
                       ws_two_loads_two_bars_loop, (), {"MISSING": "none"},
                       exercises="ten rounds of two readers and a writer, four barriers"))
    waits = tuple(("deadlock", f"peer:wsloop-wait-{i}") for i in range(4))
    for miss, (kind, marker), other in (
            ("0", ("race.war", "peer:wsloop-write"), ("race.raw", "peer:wsloop-read-0")),
            ("1", ("race.war", "peer:wsloop-write"), ("race.raw", "peer:wsloop-read-1")),
            ("2", ("race.raw", "peer:wsloop-read-0"), ("race.war", "peer:wsloop-write")),
            ("3", ("race.raw", "peer:wsloop-read-1"), ("race.war", "peer:wsloop-write"))):
        late = miss in ("2", "3")
        cases.append(_ws_missing_wait(
            "ws_two_loads_two_bars_loop", "test_ws_two_loads_two_bars_loop",
            ws_two_loads_two_bars_loop, (), "MISSING", miss, kind, marker,
            (other, *(w for w in waits if late and w[1] != f"peer:wsloop-wait-{miss}")),
            exercises=f"barrier {miss}'s wait left out ("
                      + ("a reader reads without waiting for the writer)" if late else
                         "the writer waits for one reader only)"),
            verdict=OUTSTANDING + (" or " + DEADLOCK if late else ""),
            note=UNORDERED + (". A reader that runs ahead also skips phases of the barrier "
                              "the writer waits on by parity: the waits may then deadlock"
                              if late else "")))
    add(_twins("ws_load_ordering", "test_ws_load_ordering", ws_load_ordering, (),
               OUTSTANDING, "race.raw", "peer:wsord-read",
               exercises="buffer 1 is published by the second barrier; read after the first",
               alt=(("race.war", "peer:wsord-write-1"),), note=UNORDERED))
    cases.append(_case("ws_two_producers_two_consumers[missing=none]",
                       "test_ws_two_producers_two_consumers", False, CLEAN, None, None,
                       ws_two_producers_two_consumers, (), {"MISSING": "none"},
                       exercises="two producers and two consumers on barriers of count 2"))
    for miss, read, write, other, read2, write2 in (
            ("T2", "peer:ws22-read-0", "peer:ws22-write-0", "peer:ws22-wait-c1",
             "peer:ws22-read-1", "peer:ws22-write-1"),
            ("T3", "peer:ws22-read-1", "peer:ws22-write-1", "peer:ws22-wait-c0",
             "peer:ws22-read-0", "peer:ws22-write-0")):
        stuck = tuple(("deadlock", m) for m in ("peer:ws22-wait-p0", "peer:ws22-wait-p1", other))
        cases.append(_ws_missing_wait(
            "ws_two_producers_two_consumers", "test_ws_two_producers_two_consumers",
            ws_two_producers_two_consumers, (), "MISSING", miss, "race.raw", read,
            (("race.war", write), ("race.raw", read2), ("race.war", write2), *stuck),
            exercises=f"consumer {miss} reads without waiting",
            note=UNORDERED + ". The consumer that does not wait also arrives ahead on both "
                 "free barriers (each counts two arrivals), so both producers may overwrite "
                 "their buffer while the other consumer still reads it (races on buffer 1 "
                 "too), and a producer waiting by parity then misses phases and the kernel "
                 "hangs (seen natively on the H100), so waits may deadlock; Triton's ConSan "
                 "stops at the first race"))
    cases.append(_case("ws_different_warp_counts[missing=none]", "test_ws_different_warp_sizes",
                       False, CLEAN, None, None, ws_different_warp_counts, (VEC_OUT,),
                       {"MISSING": "none"},
                       exercises="partitions of 4, 2 and 8 warps (14 warps)"))
    for miss, reader in (("1", "peer:wsdw-read-0"), ("2", "peer:wsdw-read-1")):
        cases.append(_ws_missing_wait(
            "ws_different_warp_counts", "test_ws_different_warp_sizes",
            ws_different_warp_counts, (VEC_OUT,), "MISSING", miss, "race.war", "peer:wsdw-write",
            (("race.raw", reader),),
            exercises=f"the 8-warp writer skips the barrier of reader {int(miss) - 1}"))
    add(_twins("ws_async_copy_commits", "test_ws_async_copy_commits", ws_async_copy_commits,
               (VEC_SRC,), f"{OUT_WRITES} / {OUT_READS} / {PENDING_CP}",
               "async.pending-write", "peer:wscp-read",
               exercises="per-partition cp.async pipelines; the racy worker reads the other "
                         "partition's buffers",
               alt=(("race.raw", "peer:wscp-read"), ("race.war", "peer:wscp-copy"),
                    ("race.war", "peer:wscp-prime"), ("race.war", "peer:wscp-final")),
               note="the read finds the other partition's copy in flight "
                    "(async.pending-write), or its store, or comes first and that partition's "
                    "next copy or store finds it (race.war)"))
    add(_twins("ws_async_copy_wait_visibility", "test_ws_async_copy_wait_visibility",
               ws_async_copy_wait_visibility, (VEC_SRC,), f"{OUT_WRITES} / {PENDING_CP}",
               "async.pending-write", "peer:wscpv-read",
               exercises="wait_group(1) + arrive publish only the first cp.async group"))
    add(_twins("ws_wgmma_wait_visibility", "test_ws_wgmma_wait_visibility",
               ws_wgmma_wait_visibility, (A, B), PENDING_WGMMA, "async.pending-read",
               "peer:wswg-write",
               exercises="wgmma wait(1) + arrive retire only the first wgmma",
               note="operands written and fenced first (Triton's kernel multiplies unwritten "
                    "ones)"))

    # deadlocks and mbarrier misuse
    cases.append(_case("deadlock_two_partitions", "test_deadlock_two_partitions", True,
                       DEADLOCK, "deadlock", "peer:dl2-wait-0", deadlock_two_partitions,
                       exercises="two partitions wait on barriers no one arrives on",
                       alt=(("deadlock", "peer:dl2-wait-1"),)))
    cases.append(_case("deadlock_one_warp_workers",
                       "test_deadlock_with_padded_warp_specialize_partition", True, DEADLOCK,
                       "deadlock", "peer:dl-wait-forever", deadlock_one_warp_workers,
                       exercises="three 1-warp workers wait for ever; the default partition "
                                 "has returned"))
    cases.append(_case("deadlock_after_return[single-cta-barrier]",
                       "test_deadlock_after_other_partition_returns", True, DEADLOCK,
                       "deadlock", "peer:dlret-wait", deadlock_after_return,
                       exercises="the only arriving partition arrives elsewhere and returns"))
    cases.append(_case("deadlock_overarrival", "test_deadlock_overarrival", True, DEADLOCK,
                       "deadlock", "peer:dl-over-wait", deadlock_overarrival,
                       exercises="two arrivals on a count-1 barrier, then a wait on parity 0"))
    cases.append(_case("deadlock_underarrival", "test_deadlock_underarrival", True, DEADLOCK,
                       "deadlock", "peer:dl-under-wait-0", deadlock_underarrival,
                       exercises="count-2 barriers that get one arrival each",
                       alt=(("deadlock", "peer:dl-under-wait-1"),)))
    cases.append(_case("different_phases", "test_deadlock_different_phases", False, CLEAN,
                       None, None, different_phases,
                       exercises="a wait on phase 1 completed by another partition"))
    cases.append(_case("tma_completes_waits", "test_deadlock_exempt_when_tma_signals", False,
                       CLEAN, None, None, tma_completes_waits, (DESC,),
                       exercises="waits completed by TMA transactions only, no arrivals by "
                                 "warps"))
    cases.append(_case("barrier_underflow", "test_barrier_underflow", True, UNDERFLOW,
                       "mbarrier.underflow", "peer:mb-underflow-arrive", barrier_underflow,
                       exercises="arrive(count=2) on a barrier expecting one arrival",
                       extra=(("deadlock", "peer:mb-underflow-wait-0"),
                              ("deadlock", "peer:mb-underflow-wait-1")),
                       note="consan skips the arrival it reports, then both partitions' waits "
                            "deadlock (bar 0 gets no arrival in Triton's kernel either)"))
    add([_case("barrier_reinit[without_invalidate]", "test_barrier_reinit_requires_invalidate",
               True, REINIT, "mbarrier.reinit", "peer:mb-reinit", barrier_reinit, (),
               {"WITH_INVALIDATE": False}, exercises="init of a live mbarrier"),
         _case("barrier_reinit[with_invalidate]", "test_barrier_reinit_requires_invalidate",
               False, CLEAN, None, None, barrier_reinit, (), {"WITH_INVALIDATE": True},
               exercises="init, invalidate, init again")])
    for use in ("wait", "arrive", "invalidate", "expect"):
        extra = (("deadlock", "peer:mb-dead-wait"),) if use == "wait" else ()
        cases.append(_case(
            f"barrier_use_without_init[{use}]", "test_barrier_use_without_init", True,
            BAR_UNINIT, "mbarrier.uninit", f"peer:mb-dead-{use}", barrier_not_live, (),
            {"USE": use, "INIT_THEN_INVALIDATE": False}, exercises=f"{use} before init",
            extra=extra, note="a wait on a dead mbarrier may then spin: deadlock" if extra
            else ""))
    for use in ("wait", "arrive", "expect"):
        extra = (("deadlock", "peer:mb-dead-wait"),) if use == "wait" else ()
        cases.append(_case(
            f"barrier_use_after_invalidate[{use}]", "test_barrier_use_after_invalidate", True,
            BAR_UNINIT, "mbarrier.uninit", f"peer:mb-dead-{use}", barrier_not_live, (),
            {"USE": use, "INIT_THEN_INVALIDATE": True}, exercises=f"{use} after invalidate",
            extra=extra, note="a wait on a dead mbarrier may then spin: deadlock" if extra
            else ""))

    # aliasing views
    for missing_bar in (True, False):
        for overlap in (True, False):
            racy = missing_bar and overlap
            cases.append(_case(
                f"aliasing_generic_write[missing_bar={missing_bar},overlap={overlap}]",
                "test_aliasing_shared_visibility_outstanding_write", racy,
                OUTSTANDING if racy else CLEAN, "race.raw" if racy else None,
                "peer:alias-read" if racy else None, aliasing_generic_write, (),
                {"MISSING_BAR": missing_bar, "OVERLAP": overlap},
                exercises="writer and reader of overlapping (or disjoint) views of one "
                          "buffer, with or without the barrier",
                alt=(("race.war", "peer:alias-write"),) if racy else (),
                note=UNORDERED if racy else "the port writes the whole buffer first (Triton's "
                "reader reads bytes its non-overlapping writer never writes)"))
    cases.append(_case("aliasing_tma_overwrite",
                       "test_aliasing_tma_overwrite_clears_stale_write_visibility", False,
                       CLEAN, None, None, aliasing_tma_overwrite, (DESC,),
                       exercises="a TMA load over part of a generically written buffer; the "
                                 "reader waits for the load"))
    for missing_wait in (True, False):
        for overlap in (True, False):
            racy = missing_wait and overlap
            cases.append(_case(
                f"aliasing_commit_tracking[missing_wait={missing_wait},overlap={overlap}]",
                "test_aliasing_commit_tracking", racy, PENDING_CP if racy else CLEAN,
                "async.pending-write" if racy else None,
                "peer:alias-cp-overwrite" if racy else None, aliasing_commit_tracking,
                (Arg("src", "fp32", (128, 256)),),
                {"MISSING_WAIT": missing_wait, "OVERLAP": overlap},
                exercises="cp.async into a view, arrive without wait_group, store into an "
                          "overlapping (or disjoint) view"))

    # cluster cases: Triton runs them with 2 or 4 CTAs; 3.6.0's Gluon cannot write them.
    # Each names the GPU test that checks the same situation in CUDA, with consan's kind.
    st, mc, ds = ("tests/gpu/test_st_async.py::", "tests/gpu/test_multicast.py::",
                  "tests/gpu/test_dsmem.py::")
    for name, test, racy, verdict, kind, n, what, form in (
        ("async_shared_store_expect_bytes[match]", "test_async_shared_store_expect_bytes",
         False, CLEAN, None, 2, "st.async into each CTA's own buffer, expect of its bytes",
         st + "test_st_async_read_after_the_wait_is_clean_and_arrives"),
        ("async_shared_store_expect_bytes[mismatch]", "test_async_shared_store_expect_bytes",
         True, DEADLOCK, "deadlock", 2, "expect 4 bytes more than st.async completes",
         st + "test_st_async_expecting_4_bytes_more_is_a_deadlock_at_the_wait"),
        ("async_tma_multicast[failure]", "test_async_tma_multicast_kernel", True, OUT_WRITES,
         "async.pending-write", 2, "read of a multicast TMA load before the wait",
         mc + "test_read_before_the_own_wait_is_pending_write_naming_the_issuer"),
        ("async_tma_multicast[clean]", "test_async_tma_multicast_kernel", False, CLEAN, None,
         2, "multicast TMA load, waited for", mc + "test_clean_multicast_is_clean_and_bit_exact"),
        ("async_tma_multicast_reuse", "test_async_tma_multicast_kernel_reuse", False, CLEAN,
         None, 2, "a multicast load reused after cluster barriers",
         mc + "test_multicast_reused_after_a_cluster_barrier_is_clean_and_bit_exact"),
        ("async_tma_multicast_local_store_race",
         "test_async_tma_multicast_kernel_local_store_race", True, OUT_WRITES,
         "async.pending-write", 2, "local store into a buffer a multicast load is writing",
         mc + "test_a_store_into_a_buffer_a_multicast_is_writing_is_pending_write"),
        ("cluster_barrier_does_not_publish_later_read",
         "test_cluster_barrier_does_not_publish_later_read", True, OUT_READS, "race.war", 4,
         "a read after a cluster barrier, overwritten by a peer CTA's multicast load",
         mc + "test_a_read_after_the_barrier_overwritten_by_the_next_multicast_is_war"),
        ("local_gather_cross_cta[gather-missing-barrier]",
         "test_local_gather_scatter_cross_cta_visibility", True, OUT_READS, "race.war", 2,
         "DSMEM gather from the peer CTA, then a store with only a relaxed cluster barrier",
         ds + "test_overwrite_before_the_barrier_that_releases_the_peers_load_is_war"),
        ("local_gather_cross_cta[gather-synchronized]",
         "test_local_gather_scatter_cross_cta_visibility", False, CLEAN, None, 2,
         "DSMEM gather between cluster barriers",
         ds + "test_overwrite_after_the_barrier_that_releases_the_peers_load_is_clean"),
        ("local_scatter_cross_cta[scatter-synchronized]",
         "test_local_gather_scatter_cross_cta_visibility", False, CLEAN, None, 2,
         "DSMEM scatter between cluster barriers",
         ds + "test_clean_exchange_is_clean_and_bit_exact"),
        ("deadlock_after_return[two-cta-barrier]",
         "test_deadlock_after_other_partition_returns", True, DEADLOCK, "deadlock", 2,
         "the same deadlock on a two-CTA mbarrier",
         "tests/gpu/test_peer_mbarrier.py::test_one_arrival_short_is_a_deadlock_and_the_kernel_ends"),
    ):
        api = {"test_async_shared_store_expect_bytes": "triton 3.6.0's Gluon has no st.async "
               "(hopper.async_store)",
               "test_local_gather_scatter_cross_cta_visibility": "triton 3.6.0's Gluon has no "
               "shared-memory gather/scatter and no cluster barrier",
               "test_deadlock_after_other_partition_returns": "triton 3.6.0's Gluon has no "
               "two-CTA mbarrier allocation"}.get(test, NO_MULTICAST)
        cases.append(_case(name, test, racy, verdict, kind, None, None, exercises=what,
                           num_ctas=n, missing=api, cuda_form=form))
    return cases


PEER_CASES: list[PeerCase] = _build()

# The rest of test_consan.py: tests of Triton's harness (the same kernel as
# cp_async_twice), and tests that need a Blackwell GPU (sm_100: tcgen05 MMA, tensor
# memory, cluster launch control), which consan does not target.
HARNESS_ONLY: dict[str, str] = {
    "test_cache_miss_env": "cp_async_twice[failure], enabled through the environment",
    "test_consan_uses_profile_scratch": "cp_async_twice's kernel; checks where Triton's "
                                        "ConSan keeps its state (profile scratch)",
}
BLACKWELL_ONLY: dict[str, str] = {
    "test_consan_initializes_allocations_with_nan": "NaN-filled shared and tensor memory: "
    "Triton's way to expose reads of unwritten memory, which consan reports as uninit.read",
    "test_collapsed_wait_does_not_publish_peer_cta": "tcgen05 MMA on two CTAs",
    "test_clc_result_visibility": "cluster launch control (clc.try_cancel)",
    "test_clc_double_try_cancel_result_overwrite": "cluster launch control",
    "test_clc_result_reuse_after_cluster_barrier": "cluster launch control",
    "test_tcgen5_mma": "tcgen05 MMA and tensor memory",
    "test_tcgen5_copy": "tcgen05.cp into tensor memory",
    "test_tcgen5_mma_multibar": "tcgen05 MMA completing several mbarriers",
    "test_multibuffered_loop": "TMA -> tcgen05 MMA ring",
    "test_tma_tcgen05_mma_multicast_loop": "multicast TMA -> two-CTA tcgen05 MMA",
    "test_tma_tcgen05_mma_missing_multicast": "two-CTA tcgen05 MMA without multicast",
    "test_tcgen5_commit_multicast_barrier_count": "tcgen05.commit multicast arrival count",
    "test_aliasing_tensor_visibility_outstanding_read": "aliasing views of tensor memory",
    "test_mma_read_async_copy_write": "cp.async over a tcgen05 MMA operand",
    "test_mma_read_local_alloc_write": "local_alloc over a tcgen05 MMA operand",
}


@functools.cache
def _source_lines() -> tuple[str, ...]:
    return tuple(HERE.read_text().splitlines())


def marker_line(marker: str) -> int:
    """1-based line of this file carrying `marker` (a whole token)."""
    pat = re.compile(r"#.*" + re.escape(marker) + r"(?![\w-])")
    hits = [i for i, s in enumerate(_source_lines(), 1) if pat.search(s)]
    if len(hits) != 1:
        raise LookupError(f"{marker}: on lines {hits}, expected one")
    return hits[0]


def compile_case(case: PeerCase) -> Any:
    """Triton's compile of `case` for GPUTarget("cuda", capability, 32), without a GPU: the
    CompiledKernel (its PTX at `.asm["ptx"]`)."""
    if case.missing:
        raise NotImplementedError(case.missing)
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    src = GluonASTSource(fn=case.kernel, signature=case.signature,
                         constexprs=dict(case.constexprs), attrs=case.attrs)
    return triton.compile(src, target=GPUTarget("cuda", case.capability, 32),
                          options=dict(case.options))
