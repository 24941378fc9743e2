"""The shadow layout of one launch: which tables it keeps where, their sizes, and the
checker's state block (`cs_state_t`, read from `__consan_state`).

The runtime (CuPy buffers, device pointers) and the host build of the checker in the tests
(numpy buffers) both take every size, offset, flag and count from a `Layout`, so the two
cannot fill the state block differently. It needs no GPU and no CuPy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from instrument import abi

if TYPE_CHECKING:
    from instrument.rewrite import Instrumented


class Placement(Enum):
    """Where a launch keeps the tables its probes touch."""

    DEVICE = "device"  # device memory, one slot per resident CTA
    PHASE_SMEM = "phase-smem"  # phase mode, every table in the CTA's shared memory
    VC_SMEM = "vc-smem"  # vector clocks, the buffer tables in shared memory (sites in device)


def window_bytes(static_smem: int, shared_mem: int) -> int:
    """The shared-memory window a launch shadows: static and dynamic bytes, and the bytes
    the hardware may reserve below them."""
    return static_smem + shared_mem + abi.SMEM_RESERVED_BYTES


@dataclass(frozen=True)
class Layout:
    """A launch's shape, its module's facts and the table placement; everything else the
    state block holds is derived from these."""

    nwarps: int
    nthreads: int
    window_bytes: int
    log_capacity: int
    nslots: int = 1
    # the module's facts (instrument.rewrite.Instrumented)
    phase_mode: bool = False
    wgmma: bool = False
    async_proxy: bool = False
    cp_async: bool = False
    warp_reads: bool = False
    copy_engine: bool = False  # copy engines write smem: box summaries (device tables), or
    # every block starting held whole (the tables in shared memory): abi.FLAG_COPY_WRITES
    placement: Placement = Placement.DEVICE
    bar0_rows: bool = False  # Placement.VC_SMEM: barrier 0's rows (FLAG_BAR0_ROWS)
    window_base: int = 0  # lowest smem address the kernel's data gets (VC_SMEM skips below)
    shared_mem: int = 0  # the user's dynamic shared memory: the checker's bytes follow it
    multicast: bool = False  # multicast copies: a mailbox per CTA (FLAG_MULTICAST)
    fast_paths: bool = False  # inline tests before access probes (FLAG_PSH_FAST, PHASE_SMEM)
    # abi.GRANULE_BYTES, or abi.CHUNK_GRANULE_BYTES for a module of whole 16-byte chunks
    granule_bytes: int = abi.GRANULE_BYTES

    def __post_init__(self) -> None:
        assert self.placement is not Placement.PHASE_SMEM or self.phase_mode, "phase mode only"
        assert not self.bar0_rows or self.placement is Placement.VC_SMEM, "bar0 rows are VC_SMEM's"
        assert not (self.multicast and self.placement is Placement.PHASE_SMEM), "multicast: clocks"
        assert self.granule_bytes == abi.GRANULE_BYTES or not self.phase_mode, "chunks: clocks"

    @classmethod
    def for_module(cls, ins: Instrumented, **shape) -> Layout:
        return cls(phase_mode=ins.phase_mode, wgmma=ins.wgmma, async_proxy=ins.async_proxy,
                   cp_async=ins.cp_async, warp_reads=ins.warp_reads,
                   copy_engine=ins.copy_engine, multicast=ins.multicast,
                   fast_paths=ins.inline_tests,
                   granule_bytes=abi.CHUNK_GRANULE_BYTES if ins.chunk_granules
                   else abi.GRANULE_BYTES, **shape)

    # ------------------------------------------------------------ state-block scalars
    @property
    def granules(self) -> int:
        return -(-self.window_bytes // self.granule_bytes)

    @property
    def nlogical(self) -> int:
        return abi.logical_threads(async_proxy=self.async_proxy, wgmma=self.wgmma,
                                   multicast=self.multicast)

    @property
    def vsh_readers(self) -> int:
        if self.placement is not Placement.VC_SMEM:
            return 0
        return abi.vsh_readers(self.nwarps, self.warp_reads, self.async_proxy, self.wgmma)

    @property
    def vsh_base(self) -> int:
        if self.placement is not Placement.VC_SMEM:
            return 0
        return self.window_base // self.granule_bytes * self.granule_bytes

    @property
    def psh_fast(self) -> bool:
        """Each warp keeps a fast-path record in the phase tables (FLAG_PSH_FAST)."""
        return self.fast_paths and self.placement is Placement.PHASE_SMEM

    @property
    def psh_bytes(self) -> int:
        """Shared memory of the tables a CTA keeps there (either kind), 0 for DEVICE."""
        if self.placement is Placement.PHASE_SMEM:
            return abi.psh_bytes(self.granules, self.nwarps, self.psh_fast)
        if self.placement is Placement.VC_SMEM:
            return abi.vsh_bytes(self.granules, self.vsh_readers, self.nwarps, self.nlogical,
                                 self.vsh_base, bar0_rows=self.bar0_rows,
                                 granule_bytes=self.granule_bytes)
        return 0

    @property
    def shv_offset(self) -> int:
        """Where the checker's own shared variables start in dynamic shared memory: after
        the user's bytes, so that the user's shared memory keeps its native layout."""
        return (self.shared_mem + 15) // 16 * 16

    @property
    def psh_offset(self) -> int:
        """Where the shared-memory tables start in dynamic shared memory."""
        return self.shv_offset + abi.SHV_BYTES

    @property
    def box_summary(self) -> bool:
        return self.table_bytes()["bsum"] > 0

    @property
    def bsum_shift(self) -> int:
        return abi.bsum_shift(self.nwarps) if self.box_summary else 0

    @property
    def bsum_words(self) -> int:
        return abi.bsum_words(self.nwarps) if self.box_summary else 0

    @property
    def flags(self) -> int:
        on = {abi.FLAG_PHASE_MODE: self.phase_mode, abi.FLAG_WGMMA: self.wgmma,
              abi.FLAG_BOX_SUMMARY: self.box_summary,
              abi.FLAG_PHASE_SMEM: self.placement is Placement.PHASE_SMEM,
              abi.FLAG_VC_SMEM: self.placement is Placement.VC_SMEM,
              abi.FLAG_BAR0_ROWS: self.bar0_rows, abi.FLAG_BULK_STORES: self.async_proxy,
              abi.FLAG_CP_ASYNC: self.cp_async, abi.FLAG_WARP_READS: self.warp_reads,
              abi.FLAG_MULTICAST: self.multicast, abi.FLAG_PSH_FAST: self.psh_fast,
              abi.FLAG_COPY_WRITES: self.copy_engine}
        return sum(flag for flag, yes in on.items() if yes)

    # ------------------------------------------------------------ memory
    def table_bytes(self) -> dict[str, int]:
        """Bytes of each table a STATE_FIELDS pointer names (the log, records, keys and
        tensor maps aside): 0 where this layout does not use it."""
        vc = self.placement is Placement.VC_SMEM
        sizes = abi.table_bytes(self.nslots, self.granules, self.nwarps, self.nlogical,
                                self.phase_mode, self.copy_engine,
                                self.vsh_readers if vc else None, self.vsh_base,
                                self.granule_bytes)
        if self.placement is Placement.PHASE_SMEM:  # every table the probes touch is in smem
            return dict.fromkeys(sizes, 0)
        return sizes

    @property
    def mc_offset(self) -> int:
        """Where the mailbox of multicast copies starts in dynamic shared memory (0: none)."""
        return (self.psh_offset + self.psh_bytes + 15) // 16 * 16 if self.multicast else 0

    @cached_property
    def launch_shared_mem(self) -> int:
        """Dynamic shared memory of the instrumented launch: the user's, then ours (16
        more: the checker aligns its block itself, docs/model.md). Kept: every launch
        reads it, and it walks the tables' sizes (about 4 us of each launch call on the
        H100 machine's host, which the GPU waits for before a small kernel)."""
        if self.multicast:
            return self.mc_offset + abi.MAILBOX_BYTES + 16
        return self.psh_offset + self.psh_bytes + 16

    @cached_property
    def shadow_bytes(self) -> int:
        """Shadow-table bytes of the launch, in device and in shared memory (kept: every
        report names it)."""
        return sum(self.table_bytes().values()) + self.psh_bytes * self.nslots

    # ------------------------------------------------------------ the state block
    def state(self, pointers: Mapping[str, int]) -> np.ndarray:
        """The state block (one element of abi.state_dtype()): `pointers` gives the address
        of every pointer field, the layout every other field."""
        st = np.zeros(1, dtype=abi.state_dtype())
        for name, ctype in abi.STATE_FIELDS:
            st[name] = pointers[name] if ctype == "uint64_t" else getattr(self, name)
        return st
