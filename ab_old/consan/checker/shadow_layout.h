// consan device checker: the shadow layout, in one place (no code).
//
// The rules are in docs/model.md; the sizes and field offsets are defined once, in
// instrument/abi.py (generated into consan_abi.h), and never repeated here. What follows
// is a map: which table holds what, and the bits of each word.
//
// Logical threads (columns of a vector clock): warps 0..31, then AGENT_CPASYNC + w (warp
// w's cp.async unit), AGENT_MBAR + j (mbarrier entry j's copy engine), AGENT_BULK + w (w's
// bulk-store unit), AGENT_PROXY + w (w's clock at its last fence.proxy.async),
// AGENT_WGMMA + u (warpgroup u's wgmma unit). A granule is GRANULE_BYTES (4) of the window.
//
// Bit fields are listed from the high bits down.
//
// Per CTA, wherever the tables live (cta_state.h): the slot, its generation, each warp's
// clock, cp.async ticks, bulk/wgmma group counts, live lanes, CTA phase, mbarrier keys.
//
// Vector-clock mode, granule tables in device memory (granule_tables.h), per slot:
//   visibility   u32 [MAX_WARPS][nlogical]    each warp's vector clock
//   barword      u64 [BARRIER_WORDS]          gen:32 | count_warps:16 (0: all) | arrived:16
//   barvc        u32 [BARRIER_WORDS][2][L]    a generation's clock slot, by parity
//   granule      u64 [granules][2]            write epoch  gen:16 | flags:8 | tid:8 | clock:32
//                                             readers      gen:16 | phase:16 | mask:32
//                (flags: WW_FLAG_ATOMIC, WW_FLAG_MBAR a live mbarrier, WW_FLAG_WGREAD)
//   wsite        u32 [granules]               site of the last write
//   rslot        u64 [nwarps][granules]       site:32 | clock:32 of each warp's last read
//   aread        u64 [granules], u32 sites    bulk-store reads  gen:16 | tid:8 | clock:32
//   wgread       u64 [nwg][granules], sites   wgmma reads       gen:16 | clock:32
//   box summary  u32 [blocks][bsum_words]     per 2^bsum_shift granules: flags, writers
//                (u64 valid:1 | tid:8 | clock:32), each reader's latest clock and site
//                (box_summary.h, FLAG_BOX_SUMMARY)
//   mbar         u32 [MBARRIERS][MB_WORDS]    key, live, counts, tx, phase, lock, each
//                warp's last arrive phase, MB_SLOTS clock slots by phase (mbarrier.h)
//
// Phase mode, device memory (phase_tables.h, FLAG_PHASE_MODE): the granule words above
// with clock = the writer's CTA phase; readbits u32 [nwarps][2][granules/32] (a bitmap
// per warp and phase parity); rsite u64 [granules] = phase:32 | site of a read.
//
// Phase mode, shared memory (phase_tables_smem.h, FLAG_PHASE_SMEM), at psh_offset of the
// dynamic window: epoch u64 [granules] = flags:8 | tid:8 (0xFF: several atomics) |
// phase:32 (0: never written); u32 [granules] write site, read site, latest read phase;
// the read bitmaps u32 [nwarps][2][granules/32].
//
// Vector-clock mode, granule tables in shared memory (granule_tables_smem.h,
// FLAG_VC_SMEM), granules counted from vsh_base, gp of them (whole 32-granule blocks):
//   W   u32 [gp]       write epoch  mbarrier:1 | atomic:1 | tid:7 | clock:23 (0: none)
//   R   u8 [nr][gp]    per reader index, its read clock c as c % 255 + 1 (0: none)
//   RS  u32 [nb][rss]  per 128-byte block and reader: its latest read clock (0: bytes stale)
//   BT  u32 [nb]       0, or WHOLE | the epoch of a copy that wrote the whole block
//   then the named barriers' words, barrier 0's clock slots and the warps' clocks
//   (FLAG_BAR0_ROWS: each warp's clock at its last two arrivals at barrier 0); the sites
//   stay in device memory (wsite, vrsite).
