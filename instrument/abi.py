"""The one definition of the ABI between the device checker and the host.

Everything both sides must agree on lives here: violation kind codes, the
probe-argument encoding the rewriter emits, the checker state block the
runtime fills, and the violation record layout `reports/` decodes. The
checker's C header is generated from these tables (`c_header()`), so the
device code and the Python decoder cannot drift apart.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

# --------------------------------------------------------------------------
# Violation kinds (stable ids: tests, JSON and exit codes use them)


@dataclass(frozen=True)
class Kind:
    code: int
    id: str
    title: str
    is_violation: bool = True


KINDS: tuple[Kind, ...] = (
    Kind(1, "race.raw", "read-after-write race"),
    Kind(2, "race.war", "write-after-read race"),
    Kind(3, "race.waw", "write-after-write race"),
    Kind(4, "async.pending-write", "access to smem an async copy is still writing"),
    Kind(5, "async.pending-read", "write to smem an async reader may still be reading"),
    Kind(6, "proxy.missing-fence",
         "generic-proxy write consumed by the async proxy without a fence"),
    Kind(7, "uninit.read", "read of shared memory nothing has written"),
    Kind(8, "mbarrier.uninit", "mbarrier used before init or after inval"),
    Kind(9, "mbarrier.reinit", "init of a live mbarrier"),
    Kind(10, "mbarrier.underflow", "mbarrier arrival or tx-count below zero"),
    Kind(11, "mbarrier.data-access", "ordinary access to the bytes of a live mbarrier"),
    Kind(12, "deadlock", "every live warp waits on something that cannot complete"),
    Kind(13, "cluster.early-exit",
         "a CTA exits before a cluster barrier orders a peer's access to its shared memory"),
    # Tool diagnostics: reported, never counted as violations of the user's kernel.
    Kind(64, "tool.out-of-window", "shared access outside the shadowed window", False),
    Kind(65, "tool.no-slot", "no free shadow slot for a CTA", False),
    Kind(67, "tool.remote-smem", "access to another CTA's shared memory (DSMEM), not checked",
         False),
    Kind(68, "tool.tensor-map-unknown",
         "TMA tensor copy through a tensor map consan does not know: its footprint was guessed",
         False),
    Kind(69, "tool.clock-overflow",
         "a clock outgrew the 23 bits the shared-memory tables keep: later findings of this CTA "
         "may be wrong", False),
    Kind(70, "tool.remote-copy-lost",
         "a multicast copy into another CTA found that CTA's mailbox full: the bytes it "
         "writes there were not recorded", False),
    Kind(71, "tool.mbarrier-table-full",
         "an mbarrier init found none of consan's 32 entries per CTA free: that mbarrier runs "
         "unchecked, and what it orders is not ordered for consan",
         False),
)
KIND_BY_CODE = {k.code: k for k in KINDS}
KIND_BY_ID = {k.id: k for k in KINDS}
VIOLATION_KINDS = tuple(k.id for k in KINDS if k.is_violation)

# --------------------------------------------------------------------------
# Probe argument encoding.  Every access probe gets (u64 addr, u32 code,
# u32 info): code = site id, info = size | mode | space | shape.

INFO_SIZE_MASK = 0xFF  # bytes this lane touches (1..32)
INFO_MODE_SHIFT = 8  # 2 bits
MODE_READ, MODE_WRITE, MODE_ATOMIC, MODE_ASYNC_WRITE = 0, 1, 2, 3  # async: cp.async
INFO_SPACE_SHIFT = 10  # 2 bits
SPACE_SHARED, SPACE_GENERIC, SPACE_CLUSTER = 0, 1, 2
INFO_SHAPE_SHIFT = 12  # 4 bits: 0 plain, else matrix rows x count (ldmatrix/stmatrix)
SHAPE_PLAIN = 0
SHAPE_MATRIX_X1, SHAPE_MATRIX_X2, SHAPE_MATRIX_X4 = 1, 2, 4
# A store of an immediate to a constant shared address (`st.shared.b32 [smem+560], 0`):
# every run of it stores the same bytes in the same place, so a run that finds the bytes'
# last write was its own instruction changes nothing (docs/model.md, "Idempotent stores").
INFO_IDEM = 1 << 16
# Or'ed in by the lanes that call an access's probe without making the access (its guard
# off, a converted branch's lanes that skip it, the fast path's lanes that need no call):
# they pass the address of a lane that makes it, the same access by the same warp, so the
# warp calls the probe together (instrument/echo.py); a record leaves them out of its lanes.
INFO_ECHO = 1 << 17

# Barrier probe modes.
BAR_SYNC, BAR_ARRIVE, BAR_RED = 0, 1, 2
BAR_ALIGNED = 4  # or-ed into the mode: every non-exited lane of the warp executes it
BAR_RELAXED = 8  # or-ed into the mode: the arrival releases nothing (.relaxed)
BAR_COUNT_ALL = 0  # "no thread count": every non-exited warp of the CTA

NO_SITE = 0xFFFFFFFF
NO_WARP = 0xFF


def access_info(size: int, mode: int, space: int, shape: int = SHAPE_PLAIN,
                idem: bool = False) -> int:
    assert 0 < size <= INFO_SIZE_MASK
    assert not idem or mode == MODE_WRITE
    return (size | (mode << INFO_MODE_SHIFT) | (space << INFO_SPACE_SHIFT)
            | (shape << INFO_SHAPE_SHIFT) | (INFO_IDEM if idem else 0))


# Probe symbols the rewriter calls and the checker defines (extern "C").
PROBE_ACCESS = "__consan_access"
# (addr, site, info, rep): one probe for `count` accesses of the same size at addr,
# addr + stride, ... (an unrolled loop's loads through one base register); rep =
# stride << REP_STRIDE_SHIFT | count.
PROBE_ACCESS_N = "__consan_access_n"
REP_STRIDE_SHIFT = 8
REP_COUNT_MASK = 0xFF
# (addr, site, info, rep) as PROBE_ACCESS_N, for accesses of 16 bytes that are not atomic
# (ldmatrix rows, cp.async 16, v4 loads and stores): the checker's short path for them has
# an entry of its own, so other accesses pay nothing for it.
PROBE_ACCESS16 = "__consan_access16"
# (addr, site, info): a cp.async of 16 bytes, one chunk: PROBE_ACCESS16's write in a body
# of its own (the copy's common case), PROBE_ACCESS16 where it is not that.
PROBE_CP16 = "__consan_cp16"
# (addr0..addr3, site0..site3, n, info): the first n of a run of a warp's cp.async copies
# of 16 bytes in one straight-line stretch (instrument/cp_runs.py), each as PROBE_CP16
# would take it, in order, in one call before the first: a cp.async GEMM's K step copies A
# and B rows one after another (two calls a warp a K step where there were four).
PROBE_CP16_RUN = "__consan_cp16_run"
CP16_RUN_MAX = 4
# (tag, site): called before a store's access probe where the front end asks for value
# tags (Triton's replicated layouts): `tag` hashes the lane's address and stored values
# (FNV-1a over 32-bit words, VALUE_TAG_*), so that two warps' runs of the store that wrote
# the same bytes at the same addresses are no race.waw (docs/model.md).
PROBE_STORE_VALUE = "__consan_store_value"
# (addr, site, info) as PROBE_ACCESS: a plain one-granule `.shared` write whose epoch and
# site the rewritten kernel stored inline (fast_path.py), found read in this phase: the
# checker's look for other warps' reads (phase tables in shared memory only).
PROBE_WRITE_READERS = "__consan_write_readers"
# (addr, site, info) as PROBE_ACCESS: a one-granule `.shared` read whose bit, site and phase
# the rewritten kernel stored inline, and whose granule was never written or was written in
# this phase by another warp: the probe's verdict on that granule (phase tables in shared
# memory only).
PROBE_READ_JUDGE = "__consan_read_judge"
# (addr, site, info, base, fresh): a `.shared` read of several granules whose warp set its
# bits, sites and phases inline (fast_path.span_read) and found one of the granules whose
# bits were new there (bit r of `fresh`: granule base + r) never written or written in
# this phase by another warp: the probe's verdict on the lane's own fresh granules (phase
# tables in shared memory only).
PROBE_READ_SPAN_JUDGE = "__consan_read_span_judge"
VALUE_TAG_SEED = 0x811C9DC5
VALUE_TAG_PRIME = 16777619
# A warp's record of one run of a tagged store: mix(sum over its lanes of mix(tag) ^
# mix(site + VALUE_TAG_SALT)) | 1, where mix is murmur3's finaliser with these multipliers
# (the checker's __consan_store_value and the inline form, value_tags.publish, alike).
VALUE_TAG_MIX1, VALUE_TAG_MIX2, VALUE_TAG_SALT = 0x85EBCA6B, 0xC2B2AE35, 0x9E3779B9


def value_tag_mix(h: int) -> int:
    """murmur3's 32-bit finaliser (VALUE_TAG_MIX1, VALUE_TAG_MIX2)."""
    h ^= h >> 16
    h = (h * VALUE_TAG_MIX1) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * VALUE_TAG_MIX2) & 0xFFFFFFFF
    return h ^ (h >> 16)


def access_probe(info: int, rep: int | None) -> tuple[str, int | None]:
    """The probe an access with this info word calls, and the rep word it passes (None:
    a 3-argument probe)."""
    mode = (info >> INFO_MODE_SHIFT) & 3
    if info & INFO_SIZE_MASK == 16 and mode == MODE_ASYNC_WRITE and \
            (rep is None or rep & REP_COUNT_MASK == 1):
        return PROBE_CP16, None
    if info & INFO_SIZE_MASK == 16 and mode != MODE_ATOMIC:
        return PROBE_ACCESS16, 1 if rep is None else rep
    return (PROBE_ACCESS, None) if rep is None else (PROBE_ACCESS_N, rep)
PROBE_BAR_ARRIVE = "__consan_bar_arrive"
PROBE_BAR_WAIT = "__consan_bar_wait"
# (site), after a CTA-wide barrier: a phase-mode module's barrier in one call, in place of
# the arrive and the wait, where its barriers are not written inline (every barrier or none)
PROBE_BAR_STEP = "__consan_bar_step"
# Bit 31 of the token __consan_bar_arrive returns: every live warp of the CTA takes part in
# the generation (a CTA-wide barrier).
TOKEN_CTA_WIDE = 0x80000000
PROBE_CTA_BEGIN = "__consan_cta_begin"
# (op | BAR_ALIGNED | BAR_RELAXED, site): barrier.cluster.arrive (before it) / .wait (after it);
# CLUSTER_FENCE: fence.acq_rel / fence.sc of cluster scope or wider (after it)
PROBE_CLUSTER_BAR = "__consan_cluster_bar"
CLUSTER_ARRIVE, CLUSTER_WAIT, CLUSTER_FENCE = 0, 1, 2
PROBE_THREAD_EXIT = "__consan_thread_exit"
PROBE_ASYNC = "__consan_async"  # (op, n, site): cp.async group bookkeeping
ASYNC_COMMIT, ASYNC_WAIT, ASYNC_WAIT_ALL = 0, 1, 2
PROBE_MBAR = "__consan_mbar"  # (addr, op, arg, site): mbarrier operations
# (addr0..addr15, count0..count15, site0..site15, n, op): the first n of a run of
# mbarrier.init in one straight-line stretch (instrument/init_runs.py), each as PROBE_MBAR
# would take it, in order, in one call before the first; op is MB_INIT, with PROBE_OFF for
# the lanes that skip the run (a converted branch)
PROBE_MBAR_INIT_RUN = "__consan_mbar_init_run"
MBAR_INIT_RUN_MAX = 16
# (dst, bytes, mbar, site, mask): bulk copy global -> shared; mask: the ctaMask of a
# .multicast::cluster copy (0: not multicast), BULK_OFF or'ed in by the lanes that skip it
PROBE_BULK = "__consan_bulk"
MB_INIT, MB_INVAL, MB_ARRIVE, MB_ARRIVE_DROP, MB_EXPECT_TX, MB_ARRIVE_EXPECT_TX = 0, 1, 2, 3, 4, 5
MB_COMPLETE_TX, MB_WAIT_PARITY, MB_WAIT_TOKEN = 6, 7, 8
MB_CP_ARRIVE = 9  # cp.async.mbarrier.arrive(.noinc): the cp.async unit arrives (arg: 1 noinc)
# arrive_drop.expect_tx: expect_tx of arg bytes, then each thread arrives and leaves the
# count of every later phase
MB_ARRIVE_DROP_EXPECT_TX = 10
# Or'ed into the op word of an mbarrier or tensor probe by the lanes of a warp that skip the
# operation: every lane calls the probe so the warp stays together (instrument/converge.py).
PROBE_OFF = 1 << 8
# Or'ed into an mbarrier probe's op word: the address is a .shared::cluster one (a CTA's
# own, or another's of the cluster: its rank bits tell, rank 0's having none).
MB_CLUSTER = 1 << 9
# PROBE_OFF in a bulk copy's mask word (its low 16 bits: a multicast's ctaMask) and in a
# bulk store's byte count
BULK_OFF = 1 << 31
# A failed mbarrier.try_wait / test_wait calls the checker the first time and then only every
# MB_WAIT_SAMPLE-th time in a row (it acquires nothing; the checker judges the barrier's
# state and watches for a deadlock): spinning warps then leave the issue slots to the warps
# they wait for.
MB_WAIT_SAMPLE = 64
# Or'ed into a failed wait's arg (bit 0: a parity wait's parity, bit 1: it succeeded): the
# first failure in a row. Its probe judges the barrier but leaves the CTA's mailbox to the
# probes after it (a wait that failed reads nothing a peer's post changes).
MB_WAIT_FIRST = 4
PROBE_BULK_STORE = "__consan_bulk_store"  # (src, bytes, site): bulk store shared -> global
PROBE_BULK_GROUP = "__consan_bulk_group"  # (op, n, site): bulk groups, fence.proxy.async
BULK_COMMIT, BULK_WAIT, PROXY_FENCE = 0, 1, 2
# wgmma (docs/model.md, "wgmma"): an mma_async's operand reads, and its group bookkeeping.
PROBE_WGMMA = "__consan_wgmma"  # (desc_a, desc_b, info, site): operands read from smem
# (desc_a, desc_b) x 4, info, site x 4: a chain of four mma_async of one info word after one
# commit (instrument/wgmma_window.py), one call for the four
PROBE_WGMMA4 = "__consan_wgmma4"
PROBE_WGMMA_GROUP = "__consan_wgmma_group"  # (op, n, site): wgmma groups
WGMMA_COMMIT, WGMMA_WAIT = 0, 1  # (fence.proxy.async goes to PROBE_BULK_GROUP)
# The info word of an mma_async probe: N, where A comes from, major-ness, element size.
WG_INFO_N_MASK = 0x1FF  # N of .m64nNkK (8..256); M is always 64
WG_INFO_A_SMEM = 1 << 9  # A through a matrix descriptor (else from registers: not smem)
WG_INFO_TRANS_A = 1 << 10  # imm-trans-a = 1: A is M-major (else K-major)
WG_INFO_TRANS_B = 1 << 11  # imm-trans-b = 1: B is N-major (else K-major)
WG_INFO_ELOG_SHIFT = 12  # 2 bits: log2 of the bytes of an A/B element (.b1: 0)
# (smem, map, mbar, site, op, tx, asite): TMA tensor copy (tile mode)
PROBE_TENSOR = "__consan_tensor"
TENSOR_LOAD, TENSOR_STORE = 0, 1  # global -> shared on an mbarrier / shared -> global (bulk group)
# (smem, map, mbar, site, op, tx, asite, smem2, map2, site2): two tensor loads on one
# mbarrier a few register instructions apart (A and B of a GEMM's stage), one call for both
# (instrument/carry.py `pairs`); the first may carry the arrive.expect_tx before it
PROBE_TENSOR2 = "__consan_tensor2"
# Or'ed into a load's op word: it carries the mbarrier.arrive.expect_tx of tx bytes (site
# asite) made just before it on its mbarrier (instrument/carry.py).
TENSOR_ARRIVE_TX = 1 << 9
# Or'ed into a load's op word: a .multicast::cluster load, its ctaMask in bits 16-31.
TENSOR_MULTICAST = 1 << 10
MULTICAST_MASK_SHIFT = 16
# A multicast copy into another CTA of the cluster is posted to that CTA's mailbox (in its
# shared memory, reached through DSMEM), which the CTA's own probes apply (docs/model.md,
# "Multicast copies"): MAILBOX_ENTRIES posts of MAILBOX_POST_WORDS u32 words each (seq,
# dst, bytes, mbar, site, from, rel, acq), after MAILBOX_HEAD_WORDS words (head, tail,
# lock, pad); then MAILBOX_VIEW_WORDS: the clock vector a peer's access or copy is judged
# with (MAX_LOGICAL words, then its key: the waits and release it was made for, and
# whether it is valid), rebuilt by the drain under the mailbox's lock.
# 128 posts (4 KiB): a CTA applies its posts only in its probes, and one waiting in
# mbarrier.try_wait probes only every MB_WAIT_SAMPLE-th failed try, so a producer that runs
# further ahead than the mailbox holds waits on a consumer that rarely looks. Measured on
# the H100 (tests/kernels/dsmem_ring.py, 8 stages of 9 posts, 132 clusters): with 32
# posts 14.0 s and lost posts, with 128 posts 6.5 ms; at 4 stages 5.24 and 5.19 ms.
MAILBOX_ENTRIES = 128
MAILBOX_PRESERVE = 16  # registers a probe of the mailbox build preserves (toolchain.probe_preserve)
MAILBOX_POST_WORDS = 8
MAILBOX_HEAD_WORDS = 4
# The site word of a granule a peer CTA's copy wrote carries that CTA's rank + 1 here
# (sites stay below 1 << KEY_SITE_BITS); a record's prev_rank is decoded from it.
SITE_RANK_SHIFT = 28
# A post's `from` word: rank:8 | warp:8 | what:8 | arrived:1 | lanes:6. `what` is DSMEM_*
# for an access to this CTA's shared memory by the peer, POST_MBAR + an MB_* op for an
# operation on one of its mbarriers by `lanes` lanes (arg each: the post's `bytes`), 0 for
# a copy; `arrived`: the peer's warp had arrived at the cluster barrier once more than it
# had waited. `rel`: for an access, the releases the peer's CTA had made to others before
# it; for an mbarrier arrive, the number of this release (REMOTE columns, docs/model.md);
# for a copy, the cluster barrier waits of the issuing warp. `acq` (accesses and copies):
# the highest release of the receiving CTA the posting warp has acquired (its REMOTE
# column of that rank), so the receiver judges the post against its own accesses; for an
# mbarrier operation, the posting warp's cluster barrier waits (cluster.early-exit).
DSMEM_READ, DSMEM_WRITE, DSMEM_ATOMIC = 1, 2, 3
POST_MBAR = 0x10
POST_WHAT_SHIFT = 16
POST_ARRIVED = 1 << 24
POST_LANES_SHIFT = 25
# The clock of a peer's write epoch (tid TID_PEER + its warp): rank:4 | cluster barrier
# generation g:8 (saturating) | n:20, the first of its CTA's releases that covers it.
PEER_RANK_SHIFT = 28
PEER_G_SHIFT = 20
PEER_N_MASK = (1 << PEER_G_SHIFT) - 1
MBARRIERS = 32  # mbarriers tracked per CTA
RANK_SHIFT = 24  # in a cluster launch a shared address carries its CTA's rank from this bit
STATE_SYMBOL = "__consan_state"

# PTX prototypes of the probes (the rewriter declares them .extern).
PROBE_PROTOTYPES: dict[str, tuple[tuple[str, ...], str | None]] = {
    PROBE_ACCESS: ((".b64", ".b32", ".b32"), None),
    PROBE_ACCESS_N: ((".b64", ".b32", ".b32", ".b32"), None),
    PROBE_ACCESS16: ((".b64", ".b32", ".b32", ".b32"), None),
    PROBE_CP16: ((".b64", ".b32", ".b32"), None),
    PROBE_CP16_RUN: ((".b64",) * CP16_RUN_MAX + (".b32",) * (CP16_RUN_MAX + 2), None),
    PROBE_WRITE_READERS: ((".b64", ".b32", ".b32"), None),
    PROBE_READ_JUDGE: ((".b64", ".b32", ".b32"), None),
    PROBE_READ_SPAN_JUDGE: ((".b64", ".b32", ".b32", ".b32", ".b64"), None),
    PROBE_STORE_VALUE: ((".b32", ".b32"), None),
    PROBE_BAR_ARRIVE: ((".b32", ".b32", ".b32", ".b32"), ".b32"),
    PROBE_BAR_WAIT: ((".b32", ".b32", ".b32"), None),
    PROBE_BAR_STEP: ((".b32",), None),
    PROBE_CTA_BEGIN: ((), ".b32"),  # the warp's fast-path record (PSH_FAST_*, VF_*), 0: none
    PROBE_CLUSTER_BAR: ((".b32", ".b32"), None),
    PROBE_THREAD_EXIT: ((".b32",), None),
    PROBE_ASYNC: ((".b32", ".b32", ".b32"), None),
    PROBE_MBAR: ((".b64", ".b32", ".b32", ".b32"), ".b32"),  # 1: skip the faulting op
    PROBE_MBAR_INIT_RUN: ((".b64",) * MBAR_INIT_RUN_MAX + (".b32",) * (2 * MBAR_INIT_RUN_MAX + 2),
                          None),
    PROBE_BULK: ((".b64", ".b32", ".b64", ".b32", ".b32"), ".b32"),
    PROBE_BULK_STORE: ((".b64", ".b32", ".b32"), None),
    PROBE_BULK_GROUP: ((".b32", ".b32", ".b32"), None),
    PROBE_WGMMA: ((".b64", ".b64", ".b32", ".b32"), None),
    PROBE_WGMMA4: ((".b64",) * 8 + (".b32",) * 5, None),
    PROBE_WGMMA_GROUP: ((".b32", ".b32", ".b32"), None),
    PROBE_TENSOR: ((".b64", ".b64", ".b64", ".b32", ".b32", ".b32", ".b32"), ".b32"),
    PROBE_TENSOR2: ((".b64", ".b64", ".b64", ".b32", ".b32", ".b32", ".b32", ".b64", ".b64",
                     ".b32"), ".b32"),
}

# --------------------------------------------------------------------------
# Sizes of the model.

GRANULE_BYTES = 4
# A module whose every shared-memory access is whole aligned 16-byte chunks (ldmatrix rows,
# v4 accesses, cp.async 16, wgmma operands: Instrumented.chunk_granules) loses nothing when
# a granule is a chunk: its tables are a quarter (the checker build -DCONSAN_CHUNK_GRANULES).
CHUNK_GRANULE_BYTES = 16
MAX_WARPS = 32  # logical threads 0..31 are the CTA's warps
MAX_LOGICAL = 184  # warps, then the AGENT_* ranges, then the REMOTE ranks, below
MAILBOX_VIEW_WORDS = MAX_LOGICAL + 4
MAILBOX_BYTES = 4 * (MAILBOX_HEAD_WORDS + MAILBOX_ENTRIES * MAILBOX_POST_WORDS +
                     MAILBOX_VIEW_WORDS)
# In a write epoch (never a clock column): warp w of another CTA of the cluster, whose rank
# the granule's site word carries (distributed shared memory, docs/model.md).
TID_PEER = 192
AGENT_CPASYNC = 32  # 32..63: the cp.async unit of warp w
AGENT_MBAR = 64  # 64..95: the copy engine of mbarrier j
AGENT_BULK = 96  # 96..127: the bulk-store unit of warp w (its clock counts bulk groups)
AGENT_PROXY = 128  # 128..159: warp w's async-proxy view (its clock at its last fence.proxy.async)
AGENT_WGMMA = 160  # 160..167: the wgmma unit of warpgroup g (warps 4g..4g+3)
# 168..183, in modules that reach other CTAs (multicast, DSMEM, a peer's mbarrier): column r
# counts the releases of CTA rank r of the cluster a clock has acquired (a peer's arrive on
# this CTA's mbarrier; docs/model.md, "A peer's mbarrier")
TID_REMOTE = 168
REMOTE_RANKS = 16
WARPGROUPS = MAX_WARPS // 4


def logical_threads(*, async_proxy: bool = False, wgmma: bool = False,
                    multicast: bool = False) -> int:
    """Logical threads a module's clocks cover (docs/model.md): the bulk-store units and
    async-proxy views (and the async-read table) only for modules that issue bulk stores,
    the wgmma units (and the table of their reads) only for modules that issue wgmma, the
    cluster's ranks only for modules that reach other CTAs."""
    if multicast:
        return MAX_LOGICAL
    if wgmma:
        return TID_REMOTE
    return AGENT_WGMMA if async_proxy else AGENT_BULK


NAMED_BARRIERS = 16  # the hardware's bar.sync / barrier.sync ids
# The checker's barriers: the 16 named ones, then the CTA's view of the cluster barrier
# (barrier.cluster: every live warp of the CTA takes part in each generation), then one
# unused word so that what follows the words in shared memory stays 16-byte aligned.
CLUSTER_BARRIER = NAMED_BARRIERS
BARRIER_WORDS = NAMED_BARRIERS + 2
KEY_TABLE_ENTRIES = 4096  # distinct (kind, site, prev_site) findings per launch
RECORDS_PER_KEY = 64  # detailed records kept per finding; the rest are counted
SMEM_RESERVED_BYTES = 1024  # the window may start above the user's offsets on sm_80+
# The checker's own shared variables (cs_shared_t), appended to every instrumented
# launch's dynamic shared memory after the kernel's bytes (never static: a static block
# would move the kernel's dynamic shared memory). The checker asserts its struct fits.
SHV_BYTES = 1808

# --------------------------------------------------------------------------
# Struct layouts shared by C and numpy.  Fields are (name, ctype).

_NP = {"uint32_t": "<u4", "uint64_t": "<u8", "int32_t": "<i4"}

RECORD_FIELDS: tuple[tuple[str, str], ...] = (
    ("kind", "uint32_t"),
    ("site", "uint32_t"),  # site of the current access / operation
    ("prev_site", "uint32_t"),  # site of the earlier conflicting one (NO_SITE: none)
    ("warp", "uint32_t"),  # logical thread doing the current access
    ("prev_warp", "uint32_t"),  # logical thread of the earlier access (NO_WARP: none)
    ("lanes", "uint32_t"),  # lanes of the warp involved
    ("cta_x", "uint32_t"),
    ("cta_y", "uint32_t"),
    ("cta_z", "uint32_t"),
    ("cluster_rank", "uint32_t"),
    ("offset_lo", "uint32_t"),  # smem byte range [lo, hi) the lanes touched
    ("offset_hi", "uint32_t"),
    ("barrier", "uint32_t"),  # barrier id / mbarrier offset (barrier kinds)
    ("phase", "uint32_t"),  # generation / phase
    ("count", "uint32_t"),  # pending count or bytes
    ("clock", "uint32_t"),  # accessor's clock (diagnostics)
    ("prev_rank", "uint32_t"),  # 0, or 1 + the cluster rank of the CTA that issued prev_site
    ("cur_rank", "uint32_t"),  # 0, or 1 + the cluster rank of the CTA that made the current
    #                            access, when it is not this one (distributed shared memory)
)

# The last three run on from launch to launch while launches stay clean (the device log is
# then not zeroed between them); a report gives this launch's differences (consan.runtime).
LOG_HEADER_FIELDS: tuple[tuple[str, str], ...] = (
    ("capacity", "uint32_t"),  # records the log can hold
    ("stored", "uint32_t"),  # records written (may exceed capacity: then dropped)
    ("occurrences", "uint32_t"),  # every violation found, stored or not
    ("dropped", "uint32_t"),  # records not stored (log full or per-finding cap)
    ("key_overflow", "uint32_t"),  # findings with no key-table entry left
    ("ctas_begun", "uint32_t"),  # CTAs that began
    ("ctas_ended", "uint32_t"),  # CTAs whose last thread exited (not counted in phase smem mode)
    ("walked", "uint32_t"),  # granules of copy-engine writes walked one by one (no summary)
)

# A finding's key in the key table: kind << KEY_KIND_SHIFT | site << KEY_SITE_BITS | prev_site,
# the site ids cut to KEY_SITE_BITS bits (the checker makes it, reports/finding.py reads it).
KEY_SITE_BITS = 28
KEY_SITE_MASK = (1 << KEY_SITE_BITS) - 1
KEY_KIND_SHIFT = 56


def finding_key(kind_code: int, site: int, prev_site: int) -> int:
    """The key-table key of a finding, as the checker makes it (NO_SITE: none)."""
    return ((kind_code << KEY_KIND_SHIFT) | ((site & KEY_SITE_MASK) << KEY_SITE_BITS)
            | (prev_site & KEY_SITE_MASK))


def finding_key_parts(key: int) -> tuple[int, int, int]:
    """(kind code, site, prev site) of a key, a cut "no site" widened back to NO_SITE."""
    def widen(i: int) -> int:
        return NO_SITE if i == KEY_SITE_MASK else i

    return (key >> KEY_KIND_SHIFT, widen((key >> KEY_SITE_BITS) & KEY_SITE_MASK),
            widen(key & KEY_SITE_MASK))


KEY_FIELDS: tuple[tuple[str, str], ...] = (
    ("key", "uint64_t"),  # finding_key() (0 = empty)
    ("count", "uint32_t"),
    ("stored", "uint32_t"),
)

# The state block: one per launch, device memory, pointed to by STATE_SYMBOL.
STATE_FIELDS: tuple[tuple[str, str], ...] = (
    ("log", "uint64_t"),  # device: log header (counters)
    ("records", "uint64_t"),  # mapped pinned host memory: survives a crash of the kernel
    ("keys", "uint64_t"),  # device: key table
    ("slot_busy", "uint64_t"),  # u32 [nslots]
    ("slot_gen", "uint64_t"),  # u32 [nslots]
    ("cta", "uint64_t"),  # u32 [nslots][CTA_WORDS]
    ("vis", "uint64_t"),  # u32 [nslots][MAX_WARPS][nlogical]  visibility (warps' vector clocks)
    ("barword", "uint64_t"),  # u64 [nslots][BARRIER_WORDS]      gen<<32 | arrived warps
    ("barvc", "uint64_t"),  # u32 [nslots][BARRIER_WORDS][2][nlogical]
    ("granule", "uint64_t"),  # u64 [nslots][granules][2]  buffer table: write epoch, readers
    ("wsite", "uint64_t"),  # u32 [nslots][granules]  site of the last write
    ("rslot", "uint64_t"),  # u64 [nslots][nwarps][granules]  site<<32 | read clock
    ("readbits", "uint64_t"),  # u32 [nslots][nwarps][2][words]  phase mode: granules read
    ("rsite", "uint64_t"),  # u64 [nslots][granules]  phase mode: phase<<32 | site of a read
    ("mbar", "uint64_t"),  # u32 [nslots][MBARRIERS][MB_WORDS]  barrier table for mbarriers
    ("aread", "uint64_t"),  # u64 [nslots][granules] then u32 [nslots][granules]: async reads
    ("wgread", "uint64_t"),  # u64 [nslots][nwg][granules], then u32 sites: wgmma operand reads
    ("bsum", "uint64_t"),  # u32 [nslots][blocks][bsum_words]: box summaries (FLAG_BOX_SUMMARY)
    # FLAG_VC_SMEM, u32 per slot: the read sites [nreaders][vsh_granules], then the site of
    # each block's whole-block copy [vsh_granules / VSH_BLOCK_GRANULES]
    ("vrsite", "uint64_t"),
    ("tmaps", "uint64_t"),  # cs_tmap_t [TMAP_ENTRIES]  tensor maps of known geometry (0: none)
    ("nslots", "uint32_t"),
    ("granules", "uint32_t"),
    ("nwarps", "uint32_t"),
    ("nthreads", "uint32_t"),
    ("nlogical", "uint32_t"),
    ("window_bytes", "uint32_t"),
    ("log_capacity", "uint32_t"),
    ("flags", "uint32_t"),  # FLAG_*
    # FLAG_PHASE_SMEM / FLAG_VC_SMEM: byte offset of the tables in dynamic smem, their size
    ("psh_offset", "uint32_t"),
    # where the checker's own shared variables start in dynamic smem (after the kernel's
    # bytes: SHV_BYTES), so the kernel's shared memory keeps its native layout
    ("shv_offset", "uint32_t"),
    ("psh_bytes", "uint32_t"),
    ("vsh_base", "uint32_t"),  # FLAG_VC_SMEM: first window byte the tables hold (a granule)
    ("vsh_readers", "uint32_t"),  # FLAG_VC_SMEM: reader indices (vsh_readers())
    ("bsum_shift", "uint32_t"),  # FLAG_BOX_SUMMARY: log2 of the granules of a summary block
    ("bsum_words", "uint32_t"),  # FLAG_BOX_SUMMARY: u32 words of one block's summary
    ("mc_offset", "uint32_t"),  # FLAG_MULTICAST: byte offset of the mailbox in dynamic smem
)

# The kernel synchronises only with CTA-wide barriers: happens-before between two
# warps is then exactly "a CTA-wide barrier lies between", and the checker keeps
# per-warp read bitmaps per CTA phase instead of vector clocks (docs/model.md).
FLAG_PHASE_MODE = 0x1
# Phase mode with every table in the CTA's own shared memory, appended to the
# launch's dynamic shared memory (no global-memory traffic on the hot path).
FLAG_PHASE_SMEM = 0x2
FLAG_WGMMA = 0x4  # the module issues wgmma.mma_async: writes look for its async reads
# The module issues copy-engine writes (bulk / tensor loads, st.async): every access also
# keeps a per-block summary, so a copy over blocks whose every access is ordered before it
# stores its epochs without walking the readers (docs/model.md, "Box summaries").
FLAG_BOX_SUMMARY = 0x8
# Vector-clock mode with the buffer tables in the CTA's own shared memory (docs/model.md,
# "Granule tables in shared memory"): a 32-bit write epoch and a clock byte per reader for
# every granule, and per 128-byte block each reader's latest read clock; the sites of the
# accesses go to device memory (wsite, vrsite). The device build is -DCONSAN_VSH.
FLAG_VC_SMEM = 0x10
FLAG_BULK_STORES = 0x20  # the module issues bulk or tensor stores (their units read smem)
FLAG_CP_ASYNC = 0x40  # the module issues cp.async (its copy units' clock columns are used)
FLAG_WARP_READS = 0x80  # the module reads shared memory through the generic proxy (ld, ldmatrix)
# FLAG_VC_SMEM, and barrier 0 is only ever a bar.sync of every thread: each warp's clock at
# its arrival goes to a row of its own (vsh_bytes), which the warps read after the barrier
FLAG_BAR0_ROWS = 0x100
# The module issues .multicast::cluster copies: every CTA keeps a mailbox for the copies
# its peers post to it, and the CTAs of a cluster meet at a cluster barrier when they begin
# (so no post reaches a mailbox before it is cleared).
FLAG_MULTICAST = 0x200
# FLAG_PHASE_SMEM, and the module's accesses in loops first test inline whether they repeat
# their warp's in this phase (instrument/fast_path.py): each warp keeps a record of what
# that test reads (PSH_FAST_*), after the bitmaps.
FLAG_PSH_FAST = 0x400
# The module issues copy-engine writes (bulk / tensor loads, st.async). With FLAG_VC_SMEM,
# every block then starts held whole by a copy of epoch 0, so that a first copy into it
# takes one word; without it, blocks start as single granules of epoch 0 (the same
# verdicts), so that a warp's first write into a block is no claim: a claim moves the
# block's epoch and site to its 32 granules, in a call out of line by the lanes whose chunk
# lies there, which the warp's other lanes ran on from (benchmarks/hang_trace.py on the
# H100; the cp.async GEMM 0.40 -> 0.36 ms without the claims).
FLAG_COPY_WRITES = 0x800

# Per-slot CTA words (u32): live threads, then per-warp counters.
CTA_LIVE_THREADS = 0
# (live warps, each warp's live lanes and its cp.async unit's clock, read by every
#  barrier or cp.async probe, are kept in the CTA's shared memory)
CTA_CPASYNC_COMMITS = 8  # per warp: cp.async groups committed
CTA_SPIN_PHASE = CTA_CPASYNC_COMMITS + MAX_WARPS  # per warp: mbarrier phase + 1 it spins on
CTA_SPIN_SINCE = CTA_SPIN_PHASE + MAX_WARPS  # per warp: when that spin began (ms)
# (each warp's bulk and wgmma groups committed, read by every bulk-store and wgmma probe,
#  are kept in the CTA's shared memory too)
CTA_PROXY_FENCE = CTA_SPIN_SINCE + MAX_WARPS  # per warp: its clock at its last
#   fence.proxy.async (its generic writes up to that clock reach the async proxy)
CPASYNC_GROUP_ENDS = 8  # per warp: the clock of each of the last 8 committed groups
CTA_CPASYNC_ENDS = CTA_PROXY_FENCE + MAX_WARPS  # [warp][group % CPASYNC_GROUP_ENDS]
CTA_CLUSTER_WAITS = CTA_CPASYNC_ENDS + MAX_WARPS * CPASYNC_GROUP_ENDS  # per warp:
#   barrier.cluster.wait executed (the generation of its next one)
CTA_CLUSTER_ARRIVES = CTA_CLUSTER_WAITS + MAX_WARPS  # per warp: barrier.cluster.arrive executed
CLUSTER_RING = 4  # per warp: its clock at each of its last 4 cluster arrivals
CTA_CLUSTER_RING = CTA_CLUSTER_ARRIVES + MAX_WARPS  # [warp][(arrival - 1) % CLUSTER_RING]:
#   the clock up to which its accesses were released (a relaxed arrival releases nothing:
#   the previous one's clock), so a peer's access is judged against this CTA's accesses
# the releases this CTA has made to its peers (arrives on their mbarriers), numbered from 1
CTA_REMOTE_RELEASES = CTA_CLUSTER_RING + MAX_WARPS * CLUSTER_RING
CTA_REMOTE_MADE = CTA_REMOTE_RELEASES + 4  # per warp: its releases to peers so far
REMOTE_RING = 8  # per warp: (release number, its clock then) of its last 8 releases
CTA_REMOTE_RING = CTA_REMOTE_MADE + MAX_WARPS  # [warp][(made - 1) % REMOTE_RING][2]
# the latest cluster barrier generation a peer's access here (DSMEM, an mbarrier operation)
# needs this CTA to wait on before it exits, and that access's site and from word (rank,
# warp): cluster.early-exit
CTA_PEER_GEN = CTA_REMOTE_RING + MAX_WARPS * REMOTE_RING * 2
CTA_PEER_SITE = CTA_PEER_GEN + 1
CTA_PEER_FROM = CTA_PEER_GEN + 2
# per warp: its clock at its last fence.acq_rel / fence.sc of cluster scope or wider (0: none): a
# later relaxed cluster arrival releases its accesses up to it
CTA_CLUSTER_FENCE = CTA_PEER_GEN + 4
CTA_WORDS = CTA_CLUSTER_FENCE + MAX_WARPS
DEADLOCK_MS = 2000  # a wait that sees no progress for this long is a deadlock

# Buffer-table entry of a granule: two u64, loaded together.
# word 0, write epoch: gen:16 | flags:8 | tid:8 | clock:32
# word 1, readers:     gen:16 | mask:32 (one bit per warp that read since that write)
WW_GEN_SHIFT = 48
WW_FLAGS_SHIFT = 40
WW_TID_SHIFT = 32
WW_FLAG_ATOMIC = 0x1
WW_FLAG_MBAR = 0x2  # the granule holds a live mbarrier object
WW_FLAG_WGREAD = 0x4  # a wgmma unit read the granule since this write (see the wgread table)
WW_FLAG_PEER = 0x8  # the write came from a peer CTA (tid TID_PEER + its warp, clock: its
#                     cluster barrier generation; the site word carries its rank)
WW_FLAG_PEER_READ = 0x10  # a peer CTA read the granule since this write (its read is the
#   granule's async-read entry: judged by the next write, like a bulk store's read)
RM_GEN_SHIFT = 48
# Async-read entry of a granule (bulk stores): gen:16 | tid:8 | clock:32, the bulk-store unit
# and the group it reads in; its site is in the u32 array after the entries.
AR_GEN_SHIFT = 48
AR_TID_SHIFT = 32
# wgmma read entry of a granule, per warpgroup: gen:16 | clock:32 (the group + 1 it reads in);
# its site is in the u32 array after the entries.
WG_GEN_SHIFT = 48


# Box summary of a block of 2**shift granules (u32 words, 16-byte aligned so a copy loads
# it in a few vector loads): flags, 3 pad; BSUM_WRITERS u64 writer entries (valid:1 |
# tid:8 at bit 32, clock:32: the latest clock of each writer); then per reader index r
# (warp w: w; bulk unit of w: nwarps + w; wgmma unit u: 2 * nwarps + u) the clock of its
# latest read, padded to 4 words; then, as many, the site of that read.
BS_FLAGS = 0
BS_WRITERS = 4
BSUM_WRITERS = 4
BS_READERS = BS_WRITERS + 2 * BSUM_WRITERS
BS_FLAG_OVERFLOW = 0x1  # more writers than entries
BS_FLAG_MBAR = 0x2  # the block holds (or held) an mbarrier object
BS_FLAG_PEER = 0x4  # a peer CTA wrote in the block (its epochs are not in the summary)
BSUM_MIN_SHIFT = 5  # 32 granules: 128 bytes, the alignment of a TMA box


def bsum_readers(nwarps: int) -> int:
    return 2 * nwarps + warpgroups(nwarps)


def bsum_reader_words(nwarps: int) -> int:
    """Words of the reader clocks (and of the sites after them): a multiple of 4."""
    return (bsum_readers(nwarps) + 3) // 4 * 4


def bsum_words(nwarps: int) -> int:
    return BS_READERS + 2 * bsum_reader_words(nwarps)


def bsum_shift(nwarps: int) -> int:
    """Smallest block (from 128 bytes) whose summary is at most twice its own bytes."""
    shift = BSUM_MIN_SHIFT
    while 4 * bsum_words(nwarps) > 2 * (GRANULE_BYTES << shift):
        shift += 1
    return shift


def set_box_summary(state, nwarps: int) -> None:
    """Turn box summaries on in a state block (its table must be allocated)."""
    state["flags"] |= FLAG_BOX_SUMMARY
    state["bsum_shift"], state["bsum_words"] = bsum_shift(nwarps), bsum_words(nwarps)


def bsum_blocks(granules: int, nwarps: int) -> int:
    shift = bsum_shift(nwarps)
    return (granules + (1 << shift) - 1) >> shift


def bitmap_words(granules: int) -> int:
    return (granules + 31) // 32


# Phase mode in shared memory: after the bitmaps, a record per warp (PSH_FAST_BYTES,
# u32 words at these indices) that the rewriter's inline fast path reads
# (instrument/fast_path.py): the granules in the window and the shared address of the
# write epochs (which the kernel loads into registers once), the warp's phase (a copy the
# checker keeps) and index, the shared addresses of its read bitmaps of even and odd
# phases, and those of its words of the last value-tagged store's site and tag (which the
# kernel publishes inline: value_tags.publish).
PSH_FAST_BYTES = 32
PSH_FAST_GRANULES, PSH_FAST_EPOCHS, PSH_FAST_PHASE, PSH_FAST_WARP = 0, 1, 2, 3
PSH_FAST_BITS_EVEN, PSH_FAST_BITS_ODD = 4, 5
PSH_FAST_STORE_SITE, PSH_FAST_STORE_TAG = 6, 7
# The writer of a phase-mode write epoch (WW_TID_SHIFT) after several warps' atomics on it.
PSH_MULTI_WARP = 0xFF


def psh_bytes(granules: int, nwarps: int, fast: bool = False) -> int:
    """Shared-memory tables of phase mode (FLAG_PHASE_SMEM), per CTA.

    Per granule: write epoch (u64), write site, read site, latest read phase
    (u32 each); per warp and phase parity: a bitmap of the granules it read;
    with `fast` (FLAG_PSH_FAST), per warp its fast-path record (PSH_FAST_BYTES), at a
    16-byte boundary.
    """
    total = 20 * granules + 4 * 2 * nwarps * bitmap_words(granules)
    if fast:
        total = (total + 15) // 16 * 16 + PSH_FAST_BYTES * nwarps
    return (total + 15) // 16 * 16


# Write epoch of a granule in the shared-memory tables (FLAG_VC_SMEM), u32:
# mbarrier:1 | atomic:1 | tid:7 | clock:23 (0: never written in this CTA).
VW_MBAR = 1 << 31
VW_ATOMIC = 1 << 30
VW_TID_SHIFT = 23
VW_CLOCK_MASK = (1 << 23) - 1
VSH_BLOCK_GRANULES = 32  # a read-summary block: 128 bytes
RS_ZEROING = 0xFFFFFFFF  # a reader's block summary while its bytes are being emptied
# A block's word BT: 0, or BT_WHOLE | the epoch of a copy that wrote the whole block (the
# mbarrier bit of an epoch: a copy's never has it); BT_LOCKED while a lane gives the block's
# granules their epochs back (the atomic bit set: never a copy's epoch).
BT_WHOLE = 1 << 31
BT_LOCKED = 0xFFFFFFFF

# The inline read of 16-byte chunks (instrument/vc_reads.py), in the build with the vector
# clocks' tables in shared memory and 16-byte granules: __consan_cta_begin returns VF_TAG |
# warp << VF_WARP_SHIFT | the shared address of the CTA's record of where the tables are
# (u32 words VF_*; VF_RSITE: a u64, the read sites' table in device memory), 0 in any other
# build or without a slot.
VF_TAG = 1 << 31
VF_WARP_SHIFT = 24
(VF_GRANULES, VF_BASE, VF_W, VF_R, VF_RS, VF_RSS4, VF_BT, VF_GP, VF_CLOCKS, VF_VIS,
 VF_NL4) = range(11)
VF_RSITE = 12
# ...and for a CTA-wide barrier's probes inline (instrument/inline_barriers.py, modules that
# sync only on barrier 0: FLAG_BAR0_ROWS): the rows' shared address (0: no rows, call the
# probes), the CTA's warps, and the shared address of the checker's shared variables
# (cs_shared_t), whose words SHV_* the inline code reads.
VF_BAR_ROWS = 11
VF_BAR_NW = 14
VF_SHV = 15
# ...and for a warp's cp.async groups inline (inline_barriers.vc_async_group): a u64, the
# CTA's table in device memory (its CTA_CPASYNC_* words)
VF_CTA = 16
# ...and for an mbarrier's successful wait inline (inline_barriers.vc_mbar_wait): a u64, the
# CTA's mbarrier entries in device memory (an entry's bytes: 4 * MB_VC + MB_SLOTS * VF_NL4)
VF_MBAR = 18
# ...and for a warp's cp.async copies of 16 bytes inline (instrument/vc_writes.py): a u64,
# the CTA's write sites in device memory, and the tids of reader indices 0-3, a byte each
# (0xFF: no such reader; the whole word VF_NO_RTID where the CTA has more than four readers)
VF_WSITE = 20
VF_RTID = 22
VF_NO_RTID = 0xFFFFFFFF
VF_WORDS = 24
# Byte offsets in cs_shared_t (the checker asserts them): the CTA's wind-down flag, the
# chunks of a clock in use (u64), each warp's live lanes and CTA-wide barriers passed, and
# its wgmma groups committed (inline_barriers.vc_wgmma_group).
SHV_ENDING = 16
SHV_CHUNKS = 32
SHV_LANES = 552
SHV_PHASE = 684
SHV_WGMMA_COMMITS = 424  # each warp's wgmma groups committed (cs_commits_sh(CS_UNIT_WGMMA, w))
SHV_CPTICKS = 168  # each warp's cp.async unit's clock - 1 (inline_barriers.vc_async_group)
SHV_GEN = 4  # the CTA's generation (inline_barriers.vc_mbar_wait: an entry live in it)
SHV_MKEY = 940  # each mbarrier entry's key (its shared offset + 1; 0: none)
SHV_MLIVE = 1068  # each entry's liveness (the generation while live)


def vsh_readers(nwarps: int, warp_reads: bool, bulk_stores: bool, wgmma: bool) -> int:
    """Reader indices of FLAG_VC_SMEM: (modules that read shared memory through the generic
    proxy) the warps, then (modules with bulk stores) their bulk-store units, then (modules
    with wgmma) the warpgroups' wgmma units."""
    return ((nwarps if warp_reads else 0) + (nwarps if bulk_stores else 0)
            + (warpgroups(nwarps) if wgmma else 0))


def vsh_granules(granules: int, base: int = SMEM_RESERVED_BYTES,
                 granule_bytes: int = GRANULE_BYTES) -> int:
    """Granules the FLAG_VC_SMEM tables hold: the window above the `base` bytes the
    hardware reserves (no user access lands there), in whole read-summary blocks."""
    g = granules - base // granule_bytes
    return -(-g // VSH_BLOCK_GRANULES) * VSH_BLOCK_GRANULES


def vsh_bytes(granules: int, nreaders: int, nwarps: int, nlogical: int,
              base: int = SMEM_RESERVED_BYTES, bar0_rows: bool = False,
              granule_bytes: int = GRANULE_BYTES) -> int:
    """Shared memory of the FLAG_VC_SMEM tables of one CTA: per granule its write epoch
    (u32) and a clock byte per reader; per 128-byte block each reader's latest read clock
    and the word of a copy that wrote the block whole (u32 each); then, 16-byte aligned,
    the named barriers' words (u64), barrier 0's two clock slots and the vector clocks of
    the CTA's warps (u32 [2][nlogical] and [nwarps][nlogical]); with `bar0_rows`
    (FLAG_BAR0_ROWS) the warps' clocks at their last two arrivals at barrier 0 (u32
    [2][nwarps][nlogical])."""
    gp = vsh_granules(granules, base, granule_bytes)
    rss = max(4, -(-nreaders // 4) * 4)  # the readers in whole vector loads, one at least
    tables = 4 * gp + nreaders * gp + 4 * (rss + 1) * (gp // VSH_BLOCK_GRANULES)
    rows = 2 * nwarps if bar0_rows else 0
    return -(-tables // 16) * 16 + 8 * BARRIER_WORDS + 4 * (2 + nwarps + rows) * nlogical


def vsh_site_words(gp: int, nreaders: int) -> int:
    """u32 words of one slot's FLAG_VC_SMEM sites (vrsite): the read sites of each reader,
    then one per block, padded to 16 bytes (the checker stores four sites at once)."""
    return nreaders * gp + -(-(gp // VSH_BLOCK_GRANULES) // 4) * 4


def table_bytes(nslots: int, granules: int, nwarps: int, nlogical: int = MAX_LOGICAL,
                phase_mode: bool = False, box_summary: bool = False,
                vsh_readers: int | None = None,
                vsh_base: int = SMEM_RESERVED_BYTES,
                granule_bytes: int = GRANULE_BYTES) -> dict[str, int]:
    """Bytes of each shadow table (STATE_FIELDS pointers) for a launch shape; with
    `vsh_readers` (its reader indices, 0 or more), of a FLAG_VC_SMEM launch."""
    n, G, L = nslots, granules, nlogical
    if vsh_readers is not None:  # FLAG_VC_SMEM: the buffer tables are in smem, their sites here
        gp = vsh_granules(G, vsh_base, granule_bytes)
        return {"slot_busy": 4 * n, "slot_gen": 4 * n, "cta": 4 * CTA_WORDS * n,
                "vis": 0, "barword": 8 * BARRIER_WORDS * n,
                "barvc": 4 * BARRIER_WORDS * 2 * L * n, "granule": 0, "wsite": 4 * gp * n,
                "rslot": 0, "readbits": 0, "rsite": 0,
                "mbar": 4 * MBARRIERS * mb_words(L) * n, "aread": 0, "wgread": 0, "bsum": 0,
                "vrsite": 4 * vsh_site_words(gp, vsh_readers) * n}
    return {
        "slot_busy": 4 * n, "slot_gen": 4 * n, "cta": 4 * CTA_WORDS * n,
        "vis": 4 * MAX_WARPS * L * n, "barword": 8 * BARRIER_WORDS * n,
        "barvc": 4 * BARRIER_WORDS * 2 * L * n,
        "granule": 16 * G * n, "wsite": 4 * G * n,
        "rslot": 0 if phase_mode else 8 * G * nwarps * n,
        "readbits": 4 * nwarps * 2 * bitmap_words(G) * n if phase_mode else 0,
        "rsite": 8 * G * n if phase_mode else 0,
        "mbar": 0 if phase_mode else 4 * MBARRIERS * mb_words(L) * n,
        "aread": 12 * G * n if L > AGENT_BULK else 0,
        "wgread": 12 * G * warpgroups(nwarps) * n if L > AGENT_WGMMA else 0,
        "bsum": 4 * bsum_blocks(G, nwarps) * bsum_words(nwarps) * n
        if box_summary and not phase_mode else 0,
        "vrsite": 0,
    }


def warpgroups(nwarps: int) -> int:
    return (nwarps + 3) // 4


# An mbarrier entry (u32 words): key (offset+1), live, expected, pending, tx, phase,
# lock, written (the highest phase + 1 whose clock slot took a release since the init: a
# slot of a later phase is still empty), then per warp the phase of its last arrive, then
# MB_SLOTS clock slots (phase mod MB_SLOTS: a completed phase's slot is written again only
# MB_SLOTS - 1 completions later, so a wait reads it without the lock).
MB_KEY, MB_LIVE, MB_EXPECTED, MB_PENDING, MB_TX, MB_PHASE, MB_LOCK, MB_WRITTEN = range(8)
MB_LASTPH = 8
MB_VC = MB_LASTPH + MAX_WARPS
MB_SLOTS = 4


def mb_words(nlogical: int = MAX_LOGICAL) -> int:
    return MB_VC + MB_SLOTS * nlogical


# --------------------------------------------------------------------------
# TMA tensor maps.  The 128-byte CUtensorMap is opaque to the device checker, so the
# runtime hands it a table of the maps whose geometry it knows (built with
# consan.tensor_map, or seen going through cuTensorMapEncodeTiled): per map, a
# fingerprint of its 128 bytes and the bytes one copy writes into (or reads from)
# shared memory. The checker reads the map the instruction names, fingerprints it the
# same way and looks it up; a miss is a `tool.tensor-map-unknown` note.

TMAP_ENTRIES = 64  # maps one launch can know
TMAP_BYTES = 128
TMAP_FP_SEED = 0xCBF29CE484222325
TMAP_FP_MUL = 0x9E3779B97F4A7C15
TMAP_FIELDS: tuple[tuple[str, str], ...] = (
    ("fingerprint", "uint64_t"),  # tensor_map_fingerprint(map bytes); 0 = empty entry
    ("bytes", "uint32_t"),  # shared-memory footprint of one copy (= its transaction bytes)
    ("flags", "uint32_t"),  # reserved
)

_M64 = (1 << 64) - 1


def tensor_map_fingerprint(data: bytes) -> int:
    """64-bit fingerprint of a tensor map's 128 bytes (the checker computes the same)."""
    assert len(data) == TMAP_BYTES, len(data)
    h = TMAP_FP_SEED
    for i in range(0, TMAP_BYTES, 8):
        h ^= int.from_bytes(data[i:i + 8], "little")
        h = (h * TMAP_FP_MUL) & _M64
        h ^= h >> 29
    return h or 1


@functools.cache
def _dtype(fields):
    """(Kept: every read-back decodes its header with one; cProfile on the H100 machine's
    host put the two built per read-back at 7 us.)"""
    import numpy as np

    return np.dtype([(n, _NP[t]) for n, t in fields])


def record_dtype():
    return _dtype(RECORD_FIELDS)


def log_header_dtype():
    return _dtype(LOG_HEADER_FIELDS)


def key_dtype():
    return _dtype(KEY_FIELDS)


def state_dtype():
    return _dtype(STATE_FIELDS)


def tmap_dtype():
    return _dtype(TMAP_FIELDS)


def _c_struct(name: str, fields) -> str:
    body = "\n".join(f"    {t} {n};" for n, t in fields)
    return f"typedef struct {{\n{body}\n}} {name};\n"


def c_header() -> str:
    """The checker's view of this module, as C (included before checker.cu)."""
    lines = ["// Generated from instrument/abi.py -- do not edit.", "#pragma once"]
    for k in KINDS:
        cname = "CS_" + k.id.upper().replace(".", "_").replace("-", "_")
        lines.append(f"#define {cname} {k.code}u")
    consts = {
        "CS_INFO_SIZE_MASK": INFO_SIZE_MASK,
        "CS_INFO_IDEM": INFO_IDEM, "CS_INFO_ECHO": INFO_ECHO,
        "CS_INFO_MODE_SHIFT": INFO_MODE_SHIFT,
        "CS_MODE_READ": MODE_READ,
        "CS_MODE_WRITE": MODE_WRITE,
        "CS_MODE_ATOMIC": MODE_ATOMIC,
        "CS_MODE_ASYNC_WRITE": MODE_ASYNC_WRITE,
        "CS_ASYNC_COMMIT": ASYNC_COMMIT,
        "CS_ASYNC_WAIT": ASYNC_WAIT,
        "CS_ASYNC_WAIT_ALL": ASYNC_WAIT_ALL,
        "CS_AGENT_CPASYNC": AGENT_CPASYNC,
        "CS_AGENT_MBAR": AGENT_MBAR,
        "CS_AGENT_BULK": AGENT_BULK,
        "CS_AGENT_PROXY": AGENT_PROXY,
        "CS_BULK_COMMIT": BULK_COMMIT,
        "CS_BULK_WAIT": BULK_WAIT,
        "CS_PROXY_FENCE": PROXY_FENCE,
        "CS_AR_GEN_SHIFT": AR_GEN_SHIFT,
        "CS_AR_TID_SHIFT": AR_TID_SHIFT,
        "CS_CTA_CPASYNC_COMMITS": CTA_CPASYNC_COMMITS,
        "CS_CTA_CPASYNC_ENDS": CTA_CPASYNC_ENDS,
        "CS_CPASYNC_GROUP_ENDS": CPASYNC_GROUP_ENDS,
        "CS_CTA_SPIN_PHASE": CTA_SPIN_PHASE,
        "CS_CTA_SPIN_SINCE": CTA_SPIN_SINCE,
        "CS_DEADLOCK_MS": DEADLOCK_MS,
        "CS_INFO_SPACE_SHIFT": INFO_SPACE_SHIFT,
        "CS_SPACE_SHARED": SPACE_SHARED,
        "CS_SPACE_GENERIC": SPACE_GENERIC,
        "CS_SPACE_CLUSTER": SPACE_CLUSTER,
        "CS_INFO_SHAPE_SHIFT": INFO_SHAPE_SHIFT,
        "CS_BAR_SYNC": BAR_SYNC,
        "CS_BAR_ARRIVE": BAR_ARRIVE,
        "CS_BAR_RED": BAR_RED,
        "CS_BAR_ALIGNED": BAR_ALIGNED,
        "CS_BAR_COUNT_ALL": BAR_COUNT_ALL,
        "CS_NO_SITE": NO_SITE,
        "CS_NO_WARP": NO_WARP,
        "CS_MAX_WARPS": MAX_WARPS,
        "CS_MAX_LOGICAL": MAX_LOGICAL,
        "CS_NAMED_BARRIERS": NAMED_BARRIERS,
        "CS_CLUSTER_BARRIER": CLUSTER_BARRIER,
        "CS_BARRIER_WORDS": BARRIER_WORDS,
        "CS_BAR_RELAXED": BAR_RELAXED,
        "CS_CLUSTER_ARRIVE": CLUSTER_ARRIVE,
        "CS_CLUSTER_WAIT": CLUSTER_WAIT, "CS_CLUSTER_FENCE": CLUSTER_FENCE,
        "CS_CTA_CLUSTER_FENCE": CTA_CLUSTER_FENCE,
        "CS_CTA_CLUSTER_WAITS": CTA_CLUSTER_WAITS,
        "CS_CTA_CLUSTER_ARRIVES": CTA_CLUSTER_ARRIVES, "CS_CTA_CLUSTER_RING": CTA_CLUSTER_RING,
        "CS_CLUSTER_RING": CLUSTER_RING, "CS_TID_PEER": TID_PEER, "CS_MB_CLUSTER": MB_CLUSTER,
        "CS_TID_REMOTE": TID_REMOTE, "CS_REMOTE_RANKS": REMOTE_RANKS,
        "CS_CTA_REMOTE_RELEASES": CTA_REMOTE_RELEASES, "CS_CTA_REMOTE_MADE": CTA_REMOTE_MADE,
        "CS_REMOTE_RING": REMOTE_RING, "CS_CTA_REMOTE_RING": CTA_REMOTE_RING,
        "CS_CTA_PEER_GEN": CTA_PEER_GEN, "CS_CTA_PEER_SITE": CTA_PEER_SITE,
        "CS_CTA_PEER_FROM": CTA_PEER_FROM,
        "CS_MAILBOX_VIEW_WORDS": MAILBOX_VIEW_WORDS, "CS_POST_MBAR": POST_MBAR,
        "CS_POST_LANES_SHIFT": POST_LANES_SHIFT, "CS_PEER_RANK_SHIFT": PEER_RANK_SHIFT,
        "CS_PEER_G_SHIFT": PEER_G_SHIFT, "CS_PEER_N_MASK": PEER_N_MASK,
        "CS_WW_FLAG_PEER": WW_FLAG_PEER,
        "CS_DSMEM_READ": DSMEM_READ, "CS_DSMEM_WRITE": DSMEM_WRITE,
        "CS_DSMEM_ATOMIC": DSMEM_ATOMIC, "CS_POST_WHAT_SHIFT": POST_WHAT_SHIFT,
        "CS_POST_ARRIVED": POST_ARRIVED,
        "CS_KEY_TABLE_ENTRIES": KEY_TABLE_ENTRIES,
        "CS_RECORDS_PER_KEY": RECORDS_PER_KEY,
        "CS_CTA_LIVE_THREADS": CTA_LIVE_THREADS,
        "CS_CTA_WORDS": CTA_WORDS,
        "CS_WW_GEN_SHIFT": WW_GEN_SHIFT,
        "CS_WW_FLAGS_SHIFT": WW_FLAGS_SHIFT,
        "CS_WW_TID_SHIFT": WW_TID_SHIFT,
        "CS_WW_FLAG_ATOMIC": WW_FLAG_ATOMIC,
        "CS_PSH_FAST_BYTES": PSH_FAST_BYTES, "CS_PSH_FAST_PHASE": PSH_FAST_PHASE,
        "CS_PSH_FAST_GRANULES": PSH_FAST_GRANULES, "CS_PSH_FAST_EPOCHS": PSH_FAST_EPOCHS,
        "CS_PSH_FAST_WARP": PSH_FAST_WARP, "CS_PSH_FAST_BITS_EVEN": PSH_FAST_BITS_EVEN,
        "CS_PSH_FAST_BITS_ODD": PSH_FAST_BITS_ODD,
        "CS_PSH_FAST_STORE_SITE": PSH_FAST_STORE_SITE, "CS_PSH_FAST_STORE_TAG": PSH_FAST_STORE_TAG,
        "CS_PSH_MULTI_WARP": PSH_MULTI_WARP,
        "CS_TOKEN_CTA_WIDE": TOKEN_CTA_WIDE,
        "CS_VALUE_TAG_MIX1": VALUE_TAG_MIX1, "CS_VALUE_TAG_MIX2": VALUE_TAG_MIX2,
        "CS_VALUE_TAG_SALT": VALUE_TAG_SALT,
        "CS_RM_GEN_SHIFT": RM_GEN_SHIFT,
        "CS_FLAG_PHASE_MODE": FLAG_PHASE_MODE,
        "CS_FLAG_PHASE_SMEM": FLAG_PHASE_SMEM, "CS_FLAG_PSH_FAST": FLAG_PSH_FAST,
        "CS_FLAG_COPY_WRITES": FLAG_COPY_WRITES,
        "CS_WW_FLAG_MBAR": WW_FLAG_MBAR,
        "CS_MB_INIT": MB_INIT, "CS_MB_INVAL": MB_INVAL, "CS_MB_ARRIVE": MB_ARRIVE,
        "CS_MB_ARRIVE_DROP": MB_ARRIVE_DROP, "CS_MB_EXPECT_TX": MB_EXPECT_TX,
        "CS_MB_ARRIVE_EXPECT_TX": MB_ARRIVE_EXPECT_TX, "CS_MB_COMPLETE_TX": MB_COMPLETE_TX,
        "CS_MB_ARRIVE_DROP_EXPECT_TX": MB_ARRIVE_DROP_EXPECT_TX,
        "CS_MB_WAIT_PARITY": MB_WAIT_PARITY, "CS_MB_WAIT_TOKEN": MB_WAIT_TOKEN,
        "CS_MB_WAIT_FIRST": MB_WAIT_FIRST,
        "CS_MB_CP_ARRIVE": MB_CP_ARRIVE, "CS_PROBE_OFF": PROBE_OFF, "CS_BULK_OFF": BULK_OFF,
        "CS_MBARRIERS": MBARRIERS, "CS_MB_KEY": MB_KEY, "CS_MB_LIVE": MB_LIVE,
        "CS_MB_EXPECTED": MB_EXPECTED, "CS_MB_PENDING": MB_PENDING, "CS_MB_TX": MB_TX,
        "CS_MB_PHASE": MB_PHASE, "CS_MB_LOCK": MB_LOCK, "CS_MB_WRITTEN": MB_WRITTEN,
        "CS_MB_LASTPH": MB_LASTPH,
        "CS_MB_VC": MB_VC, "CS_MB_SLOTS": MB_SLOTS,
        "CS_WGMMA_COMMIT": WGMMA_COMMIT, "CS_WGMMA_WAIT": WGMMA_WAIT,
        "CS_WG_INFO_N_MASK": WG_INFO_N_MASK,
        "CS_WG_INFO_A_SMEM": WG_INFO_A_SMEM, "CS_WG_INFO_TRANS_A": WG_INFO_TRANS_A,
        "CS_WG_INFO_TRANS_B": WG_INFO_TRANS_B, "CS_WG_INFO_ELOG_SHIFT": WG_INFO_ELOG_SHIFT,
        "CS_AGENT_WGMMA": AGENT_WGMMA, "CS_WARPGROUPS": WARPGROUPS,
        "CS_CTA_PROXY_FENCE": CTA_PROXY_FENCE,
        "CS_FLAG_WGMMA": FLAG_WGMMA, "CS_FLAG_BOX_SUMMARY": FLAG_BOX_SUMMARY,
        "CS_FLAG_VC_SMEM": FLAG_VC_SMEM, "CS_FLAG_BULK_STORES": FLAG_BULK_STORES,
        "CS_FLAG_CP_ASYNC": FLAG_CP_ASYNC, "CS_FLAG_WARP_READS": FLAG_WARP_READS,
        "CS_FLAG_BAR0_ROWS": FLAG_BAR0_ROWS,
        "CS_VW_MBAR": VW_MBAR, "CS_VW_ATOMIC": VW_ATOMIC,
        "CS_VW_TID_SHIFT": VW_TID_SHIFT, "CS_VW_CLOCK_MASK": VW_CLOCK_MASK,
        "CS_VSH_BLOCK_GRANULES": VSH_BLOCK_GRANULES, "CS_REP_STRIDE_SHIFT": REP_STRIDE_SHIFT,
        "CS_RS_ZEROING": RS_ZEROING, "CS_BT_WHOLE": BT_WHOLE, "CS_BT_LOCKED": BT_LOCKED,
        "CS_VF_TAG": VF_TAG, "CS_VF_WARP_SHIFT": VF_WARP_SHIFT,
        "CS_VF_GRANULES": VF_GRANULES, "CS_VF_BASE": VF_BASE, "CS_VF_W": VF_W, "CS_VF_R": VF_R,
        "CS_VF_RS": VF_RS, "CS_VF_RSS4": VF_RSS4, "CS_VF_BT": VF_BT, "CS_VF_GP": VF_GP,
        "CS_VF_CLOCKS": VF_CLOCKS, "CS_VF_VIS": VF_VIS, "CS_VF_NL4": VF_NL4,
        "CS_VF_RSITE": VF_RSITE, "CS_VF_WORDS": VF_WORDS, "CS_VF_BAR_ROWS": VF_BAR_ROWS,
        "CS_VF_BAR_NW": VF_BAR_NW, "CS_VF_SHV": VF_SHV, "CS_SHV_ENDING": SHV_ENDING,
        "CS_SHV_CHUNKS": SHV_CHUNKS, "CS_SHV_LANES": SHV_LANES, "CS_SHV_PHASE": SHV_PHASE,
        "CS_SHV_WGMMA_COMMITS": SHV_WGMMA_COMMITS, "CS_SHV_CPTICKS": SHV_CPTICKS,
        "CS_VF_CTA": VF_CTA, "CS_RANK_SHIFT": RANK_SHIFT, "CS_VF_MBAR": VF_MBAR,
        "CS_VF_WSITE": VF_WSITE, "CS_VF_RTID": VF_RTID, "CS_VF_NO_RTID": VF_NO_RTID,
        "CS_SHV_GEN": SHV_GEN, "CS_SHV_MKEY": SHV_MKEY, "CS_SHV_MLIVE": SHV_MLIVE,
        "CS_REP_COUNT_MASK": REP_COUNT_MASK,
        "CS_BS_FLAGS": BS_FLAGS, "CS_BS_WRITERS": BS_WRITERS, "CS_BSUM_WRITERS": BSUM_WRITERS,
        "CS_BS_READERS": BS_READERS, "CS_BS_FLAG_OVERFLOW": BS_FLAG_OVERFLOW,
        "CS_BS_FLAG_MBAR": BS_FLAG_MBAR, "CS_BS_FLAG_PEER": BS_FLAG_PEER,
        "CS_WW_FLAG_WGREAD": WW_FLAG_WGREAD, "CS_WW_FLAG_PEER_READ": WW_FLAG_PEER_READ,
        "CS_WG_GEN_SHIFT": WG_GEN_SHIFT,
        "CS_TENSOR_LOAD": TENSOR_LOAD, "CS_TENSOR_STORE": TENSOR_STORE,
        "CS_TENSOR_ARRIVE_TX": TENSOR_ARRIVE_TX, "CS_TENSOR_MULTICAST": TENSOR_MULTICAST,
        "CS_MULTICAST_MASK_SHIFT": MULTICAST_MASK_SHIFT, "CS_FLAG_MULTICAST": FLAG_MULTICAST,
        "CS_MAILBOX_ENTRIES": MAILBOX_ENTRIES, "CS_MAILBOX_POST_WORDS": MAILBOX_POST_WORDS,
        "CS_MAILBOX_HEAD_WORDS": MAILBOX_HEAD_WORDS, "CS_SITE_RANK_SHIFT": SITE_RANK_SHIFT,
        "CS_TMAP_ENTRIES": TMAP_ENTRIES, "CS_TMAP_FP_SEED": TMAP_FP_SEED,
        "CS_TMAP_FP_MUL": TMAP_FP_MUL, "CS_SHV_BYTES": SHV_BYTES,
        "CS_KEY_SITE_BITS": KEY_SITE_BITS, "CS_KEY_SITE_MASK": KEY_SITE_MASK,
        "CS_KEY_KIND_SHIFT": KEY_KIND_SHIFT, "CS_CP16_RUN_MAX": CP16_RUN_MAX,
        "CS_MBAR_INIT_RUN_MAX": MBAR_INIT_RUN_MAX,
    }
    lines += [f"#define {k} {v}{'ull' if v > 0xFFFFFFFF else 'u'}" for k, v in consts.items()]
    lines += ["#ifdef CONSAN_CHUNK_GRANULES", f"#define CS_GRANULE_BYTES {CHUNK_GRANULE_BYTES}u",
              "#else", f"#define CS_GRANULE_BYTES {GRANULE_BYTES}u", "#endif"]
    lines.append("")
    lines.append(_c_struct("cs_record_t", RECORD_FIELDS))
    lines.append(_c_struct("cs_log_header_t", LOG_HEADER_FIELDS))
    lines.append(_c_struct("cs_key_t", KEY_FIELDS))
    lines.append(_c_struct("cs_state_t", STATE_FIELDS))
    lines.append(_c_struct("cs_tmap_t", TMAP_FIELDS))
    return "\n".join(lines)
