// consan device checker: vector-clock mode, granule tables in shared memory.
//
// FLAG_VC_SMEM (the -DCONSAN_VSH build): layout, reader bytes and summaries, a warp's
// reads and writes, the access probe.

// ------------------------------------------------------------- granule tables in smem
//
// FLAG_VC_SMEM (docs/model.md "Granule tables in shared memory"; the device build is
// -DCONSAN_VSH): vector-clock mode with the buffer tables in the CTA's own shared memory,
// where each lane updates the entries of its own granules -- no leader, no lock -- so a
// warp's access costs each lane a few shared-memory operations. Per granule:
//   W   u32 write epoch: mbarrier:1 | atomic:1 | tid:7 | clock:23 (0: never written);
//   R   per reader index a byte: the clock of its latest read since that write, as
//       c % 255 + 1 (0: none); one row of bytes per reader.
// Per 128-byte block:
//   RS  each reader's latest read clock among the block's bytes. It bounds the bytes from
//       above, so a write whose readers RS shows ordered needs no look at them. 0: no
//       read, and the reader's bytes in the block may be stale -- a write of the whole
//       block (a copy of a box) empties only RS; the reader's next read there empties its
//       bytes first (cs_vc_smem_raise, cs_vc_smem_fresh);
//   BT  0, or WHOLE | the epoch of a copy that wrote the whole block: the block's W
//       entries are stale and this one epoch stands for them (a copy of a box stores a word
//       per block). A lane writing single granules of such a block first gives them the
//       epoch back (BT locked meanwhile; readers wait the few stores out).
// The sites of the accesses go to device memory (wsite; vrsite: the read sites per reader,
// then the sites of the whole-block copies) with plain stores: only reports read them. The
// tables start at window byte S.vsh_base (the hardware reserves the bytes below it); the
// probes work in granules relative to it.


// An address in the CTA's shared memory, and the table operations on it (LDS/STS/ATOMS,
// not the generic path).
#ifdef CONSAN_HOST
CS_DEV uint32_t* cs_sp32(cs_sp a) { return (uint32_t*)a; }
CS_DEV uint32_t cs_s_ld(cs_sp a) { return __atomic_load_n(cs_sp32(a), __ATOMIC_RELAXED); }
CS_DEV void cs_s_st(cs_sp a, uint32_t v) { __atomic_store_n(cs_sp32(a), v, __ATOMIC_RELAXED); }
CS_DEV cs_u4 cs_s_ld4(cs_sp a) { cs_al16(a); return {cs_s_ld(a), cs_s_ld(a + 4), cs_s_ld(a + 8), cs_s_ld(a + 12)}; }
CS_DEV void cs_s_st4(cs_sp a, cs_u4 v) { cs_al16(a); cs_s_st(a, v.x); cs_s_st(a + 4, v.y); cs_s_st(a + 8, v.z); cs_s_st(a + 12, v.w); }
CS_DEV uint32_t cs_s_ld8(cs_sp a) { return __atomic_load_n((uint8_t*)a, __ATOMIC_RELAXED); }
CS_DEV void cs_s_st8(cs_sp a, uint32_t v) { __atomic_store_n((uint8_t*)a, (uint8_t)v, __ATOMIC_RELAXED); }
CS_DEV uint32_t cs_s_xchg(cs_sp a, uint32_t v) { return __atomic_exchange_n(cs_sp32(a), v, __ATOMIC_RELAXED); }
CS_DEV uint32_t cs_s_cas(cs_sp a, uint32_t c, uint32_t v) { return cs_cas32(cs_sp32(a), c, v); }
CS_DEV void cs_s_max(cs_sp a, uint32_t v) { cs_max32(cs_sp32(a), v); }
CS_DEV cs_sp cs_vc_smem_base() { return (cs_sp)cs_smem_tables(); }
CS_DEV void cs_g_st(uint32_t* p, uint32_t v) { *cs_host_global(p) = v; }
CS_DEV void cs_g_st4(uint32_t* p, uint32_t v) {
    cs_al16((cs_sp)cs_host_global(p));
    p[0] = p[1] = p[2] = p[3] = v;
}
CS_DEV void cs_g_stv4(uint32_t* p, cs_u4 v) {
    cs_al16((cs_sp)cs_host_global(p));
    p[0] = v.x, p[1] = v.y, p[2] = v.z, p[3] = v.w;
}
CS_DEV cs_sp cs_sp_of(const void* p) { return (cs_sp)p; }
#else
CS_DEV uint32_t cs_s_ld(cs_sp a) {
    uint32_t v; asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory"); return v;
}
CS_DEV void cs_s_st(cs_sp a, uint32_t v) {
    asm volatile("st.volatile.shared.u32 [%0], %1;" :: "r"(a), "r"(v) : "memory");
}
CS_DEV cs_u4 cs_s_ld4(cs_sp a) {  // a 16-byte aligned
    cs_u4 v;
    asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a) : "memory");
    return v;
}
CS_DEV void cs_s_st4(cs_sp a, cs_u4 v) {  // a 16-byte aligned
    asm volatile("st.volatile.shared.v4.u32 [%0], {%1, %2, %3, %4};"
                 :: "r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
CS_DEV uint32_t cs_s_ld8(cs_sp a) {
    uint32_t v; asm volatile("ld.volatile.shared.u8 %0, [%1];" : "=r"(v) : "r"(a) : "memory"); return v;
}
CS_DEV void cs_s_st8(cs_sp a, uint32_t v) {
    asm volatile("st.volatile.shared.u8 [%0], %1;" :: "r"(a), "r"(v) : "memory");
}
CS_DEV uint32_t cs_s_xchg(cs_sp a, uint32_t v) {
    uint32_t o; asm volatile("atom.shared.exch.b32 %0, [%1], %2;" : "=r"(o) : "r"(a), "r"(v) : "memory"); return o;
}
CS_DEV uint32_t cs_s_cas(cs_sp a, uint32_t c, uint32_t v) {
    uint32_t o;
    asm volatile("atom.shared.cas.b32 %0, [%1], %2, %3;" : "=r"(o) : "r"(a), "r"(c), "r"(v) : "memory");
    return o;
}
CS_DEV void cs_s_max(cs_sp a, uint32_t v) {
    asm volatile("red.shared.max.u32 [%0], %1;" :: "r"(a), "r"(v) : "memory");
}
CS_DEV cs_sp cs_vc_smem_base() { return (cs_sp)__cvta_generic_to_shared(cs_smem_tables()); }
CS_DEV cs_sp cs_sp_of(const void* p) { return (cs_sp)__cvta_generic_to_shared(p); }  // p in shared memory
// The sites, in device memory, are read back only by this CTA's probes (relaxed CTA-scope
// loads, after the tables' fences), and seldom (for a finding): CTA-scope stores, not
// volatile (system-scope) ones, that take no line in L1, where the kernel's shared memory
// leaves little (the TMA ring's two CTAs: 28 KiB beside their 203 KiB, 54% of its global
// loads hitting there). On the H100, by the device's time alone against volatile stores:
// the TMA ring 0.975, the TMA + wgmma GEMM 0.980, the cp.async GEMM 0.990.
CS_DEV void cs_g_st(uint32_t* p, uint32_t v) {
    asm volatile("st.relaxed.cta.global.L1::no_allocate.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
CS_DEV void cs_g_st4(uint32_t* p, uint32_t v) {  // p 16-byte aligned
    asm volatile("st.relaxed.cta.global.L1::no_allocate.v4.u32 [%0], {%1, %1, %1, %1};"
                 :: "l"(p), "r"(v) : "memory");
}
CS_DEV void cs_g_stv4(uint32_t* p, cs_u4 v) {  // p 16-byte aligned
    asm volatile("st.relaxed.cta.global.L1::no_allocate.v4.u32 [%0], {%1, %2, %3, %4};"
                 :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
#endif

#define CS_VC_BLOCK CS_VSH_BLOCK_GRANULES
#define CS_VC_SMEM_FASTR 8  // readers whose clocks a probe keeps in registers
// The first and last granule of block b inside the span [g0, g1] that reaches it.
CS_DEV uint32_t cs_block_lo(uint32_t b, uint32_t g0) { return b * CS_VC_BLOCK > g0 ? b * CS_VC_BLOCK : g0; }
CS_DEV uint32_t cs_block_hi(uint32_t b, uint32_t g1) {
    return b * CS_VC_BLOCK + CS_VC_BLOCK - 1 < g1 ? b * CS_VC_BLOCK + CS_VC_BLOCK - 1 : g1;
}
CS_DEV uint32_t cs_vc_smem_reader_tid(uint32_t ri);

// What a probe needs of the tables, computed once.
// The layout (cs_vc_smem_layout_t): write epochs W [gp], reader bytes R [nr][gp], summaries RS
// [nb][rss] (rss: the readers in whole vectors of 4 words, at least one), block words BT [nb]; the
// slot's write sites ws [gp] and read sites rsite [nr][gp], then whole-block copy sites [nb].
// The layout's granules (whole blocks) and readers, from the module's state alone.
CS_DEV uint32_t cs_vc_smem_gp() {
    return (S.granules - S.vsh_base / CS_GRANULE_BYTES + CS_VC_BLOCK - 1) & ~(CS_VC_BLOCK - 1);
}
// The layout's words that no slot decides (cs_vc_smem_layout_slot writes the others): a
// CTA's begin has one thread write these while its leader claims the slot.
CS_DEV void cs_vc_smem_layout_common() {
    cs_vc_smem_layout_t& l = cs_vc_smem_layout_sh;
    l.gp = cs_vc_smem_gp();
    l.nr = S.vsh_readers;
    l.nb = l.gp / CS_VC_BLOCK;
    l.rss = l.nr <= 4 ? 4u : (l.nr + 3u) & ~3u;  // abi.vsh_bytes
    l.W = cs_vc_smem_base();
    l.R = l.W + 4u * l.gp;
    l.RS = l.R + l.nr * l.gp;
    l.BT = l.RS + 4u * l.rss * l.nb;
    // then (abi.vsh_bytes) the barriers' words, barrier 0's slots, the warps' clocks
    uint32_t after = ((uint32_t)(l.BT - l.W) + 4u * l.nb + 15u) & ~15u;  // (vector joins)
    l.barw = (uint64_t*)(cs_smem_tables() + after);
    l.bvc0 = (uint32_t*)(l.barw + CS_BARRIER_WORDS);
    l.vis = l.bvc0 + 2u * S.nlogical;
    l.rows = l.vis + S.nwarps * S.nlogical;
    l.rtid[0] = l.rtid[1] = 0;
    for (uint32_t ri = 0; ri < CS_VC_SMEM_FASTR && ri < l.nr; ++ri) {
        uint32_t b = cs_vc_smem_reader_tid(ri) << (8 * (ri % 4));
        if (ri < 4) l.rtid[0] |= b;
        else l.rtid[1] |= b;
    }
#if defined(CONSAN_CHUNK_GRANULES) && !defined(CONSAN_HOST)
    // where the rewritten kernel's inline reads of 16-byte chunks find the tables
    // (instrument/vc_reads.py; __consan_cta_begin returns the record's address)
    uint32_t* f = cs_shv.vfast;
    f[CS_VF_GRANULES] = S.granules - S.vsh_base / CS_GRANULE_BYTES;
    f[CS_VF_BASE] = S.vsh_base;
    f[CS_VF_W] = l.W, f[CS_VF_R] = l.R, f[CS_VF_RS] = l.RS, f[CS_VF_RSS4] = 4u * l.rss;
    f[CS_VF_BT] = l.BT, f[CS_VF_GP] = l.gp;
    f[CS_VF_CLOCKS] = (uint32_t)__cvta_generic_to_shared(cs_clock_sh);
    f[CS_VF_VIS] = (uint32_t)__cvta_generic_to_shared(l.vis);
    f[CS_VF_NL4] = 4u * S.nlogical;
    // ...and of the CTA-wide barriers' rows (instrument/inline_barriers.py: vc_arrive)
    f[CS_VF_BAR_ROWS] = cs_bar0_rows(0) && !cs_phase_mode() ? (uint32_t)__cvta_generic_to_shared(l.rows) : 0u;
    f[CS_VF_BAR_NW] = S.nwarps;
    f[CS_VF_SHV] = (uint32_t)__cvta_generic_to_shared(&cs_shv);
    // ...and of a warp's cp.async copies of 16 bytes (instrument/vc_writes.py): the readers
    // whose summaries a write looks at, where there are four at most
    uint32_t rt = CS_VF_NO_RTID;
    if (l.nr <= 4) {
        rt = 0;
        for (uint32_t ri = 0; ri < 4; ++ri) rt |= (ri < l.nr ? cs_vc_smem_reader_tid(ri) : 0xFFu) << (8 * ri);
    }
    f[CS_VF_RTID] = rt;
#endif
}
// The layout's words in the slot's device memory (its write and read sites), written by the
// leader once it has claimed the slot; each computed from the module's state, not from the
// words cs_vc_smem_layout_common may be writing meanwhile.
CS_DEV void cs_vc_smem_layout_slot(uint32_t slot) {
    cs_vc_smem_layout_t& l = cs_vc_smem_layout_sh;
    const uint32_t gp = cs_vc_smem_gp(), nr = S.vsh_readers, nb = gp / CS_VC_BLOCK;
    l.ws = (uint32_t*)S.wsite + (uint64_t)slot * gp;
    l.rsite = (uint32_t*)S.vrsite + (uint64_t)slot * (nr * gp + ((nb + 3) & ~3u));  // abi.vsh_site_words
#if defined(CONSAN_CHUNK_GRANULES) && !defined(CONSAN_HOST)
    uint32_t* f = cs_shv.vfast;
    f[CS_VF_RSITE] = (uint32_t)(uint64_t)l.rsite, f[CS_VF_RSITE + 1] = (uint32_t)((uint64_t)l.rsite >> 32);
    // ...and of a warp's cp.async groups (instrument/inline_barriers.py: vc_async_group)
    const uint64_t cta = (uint64_t)cs_cta(slot);
    f[CS_VF_CTA] = (uint32_t)cta, f[CS_VF_CTA + 1] = (uint32_t)(cta >> 32);
    // ...and of an mbarrier's successful wait (vc_mbar_wait: cs_mbar_entry's table)
    const uint64_t mb = (uint64_t)cs_mbar_table(slot);
    f[CS_VF_MBAR] = (uint32_t)mb, f[CS_VF_MBAR + 1] = (uint32_t)(mb >> 32);
    // ...and of a warp's cp.async copies of 16 bytes (instrument/vc_writes.py): the write sites
    f[CS_VF_WSITE] = (uint32_t)(uint64_t)l.ws, f[CS_VF_WSITE + 1] = (uint32_t)((uint64_t)l.ws >> 32);
#endif
}

// What a probe needs of the tables.
struct cs_vc_smem_ctx_t : cs_vc_smem_layout_t {
    uint32_t slot, w;
    const uint32_t* mine; // the probing warp's vector clock
};
// The probing warp's clock of logical thread t. Its row is in the CTA's shared memory
// (l.vis): a shared-space load, where a load through the generic pointer took a 64-bit
// address and about six instructions more (the SASS of sm_90a).
CS_DEV uint32_t cs_vc_smem_mine(const uint32_t* mine, uint32_t t) { return cs_s_ld(cs_sp_of(mine) + 4u * t); }
CS_DEV cs_vc_smem_ctx_t cs_vc_smem_ctx(uint32_t slot, uint32_t w) {
    cs_vc_smem_ctx_t x;
    static_cast<cs_vc_smem_layout_t&>(x) = cs_vc_smem_layout_sh;
    x.slot = slot;
    x.w = w;
    x.mine = cs_vis(slot, w);
    return x;
}
CS_DEV uint32_t* cs_vc_smem_bsite(const cs_vc_smem_ctx_t& x, uint32_t b) { return x.rsite + x.nr * x.gp + b; }

// Reader indices: warps, then the bulk-store units (modules with bulk stores), then the
// wgmma units (abi.vsh_readers).
// Each kind only where the module has it: a module with no generic smem read (TMA + wgmma
// kernels) keeps no byte for its warps.
CS_DEV uint32_t cs_vc_smem_nwr() { return (S.flags & CS_FLAG_WARP_READS) ? S.nwarps : 0u; }
CS_DEV uint32_t cs_vc_smem_nbulk() { return (S.flags & CS_FLAG_BULK_STORES) ? S.nwarps : 0u; }
CS_DEV uint32_t cs_vc_smem_reader_tid(uint32_t ri) {
    uint32_t nw = cs_vc_smem_nwr(), nb = cs_vc_smem_nbulk();
    return ri < nw ? ri : ri < nw + nb ? CS_AGENT_BULK + ri - nw : CS_AGENT_WGMMA + ri - nw - nb;
}
CS_DEV uint32_t cs_vc_smem_ri_bulk(uint32_t w) { return cs_vc_smem_nwr() + w; }
CS_DEV uint32_t cs_vc_smem_ri_wgmma(uint32_t u) { return cs_vc_smem_nwr() + cs_vc_smem_nbulk() + u; }

// The clock a reader reads with now: the newest its bytes can stand for.
CS_DEV uint32_t cs_vc_smem_reader_now(uint32_t ri) {
    uint32_t t = cs_vc_smem_reader_tid(ri);
    if (t < CS_MAX_WARPS) return *(volatile uint32_t*)&cs_clock_sh[t];
    if (t < CS_AGENT_WGMMA) return cs_commits_sh(CS_UNIT_BULK, t - CS_AGENT_BULK) + 1;
    uint32_t u = t - CS_AGENT_WGMMA, m = 0;
    for (uint32_t q = 4 * u; q < 4 * u + 4 && q < S.nwarps; ++q) {
        uint32_t c = cs_commits_sh(CS_UNIT_WGMMA, q);
        m = c > m ? c : m;
    }
    return m + 1;
}

CS_DEV uint32_t cs_vc_smem_byte(uint32_t c) { return c % 255u + 1u; }
// The clock byte b stands for: the latest c <= hi with c % 255 + 1 == b (exact while the
// read is fewer than 255 of its reader's clock ticks old).
CS_DEV uint32_t cs_vc_smem_unbyte(uint32_t b, uint32_t hi) {
    uint32_t d = (hi % 255u + 255u - (b - 1u)) % 255u;
    return hi >= d ? hi - d : 0u;
}
CS_DEV uint32_t cs_vw(uint32_t t, uint32_t clk, uint32_t flags) {
    return flags | (t << CS_VW_TID_SHIFT) | (clk & CS_VW_CLOCK_MASK);
}
CS_DEV uint32_t cs_vw_t(uint32_t e) { return (e >> CS_VW_TID_SHIFT) & 0x7Fu; }
CS_DEV uint32_t cs_vw_c(uint32_t e) { return e & CS_VW_CLOCK_MASK; }

// A clock past 23 bits cannot be kept in a write epoch: say so.
CS_DEV bool cs_vc_smem_clock_fits(uint32_t clk, uint32_t site) {
    if (clk <= CS_VW_CLOCK_MASK) return true;
    cs_record(cs_blank(CS_TOOL_CLOCK_OVERFLOW, site));
    return false;
}

// Block b's word, once no lane is giving its granules their epochs back.
CS_DEV uint32_t cs_vc_smem_bt(const cs_vc_smem_ctx_t& x, uint32_t b) {
    uint32_t bt;
    while ((bt = cs_s_ld(x.BT + 4u * b)) == CS_BT_LOCKED) {}
    return bt;
}

// Before single granules of block b are written: if a copy holds the block whole, its
// epoch and site go back to the block's granules (one lane; the others wait).
CS_DEV void cs_vc_smem_claim(const cs_vc_smem_ctx_t& x, uint32_t b) {
    cs_sp p = x.BT + 4u * b;
    for (;;) {
        uint32_t bt = cs_vc_smem_bt(x, b);
        if (bt == 0) return;
        if (cs_s_cas(p, bt, CS_BT_LOCKED) != bt) continue;
        uint32_t e = bt & ~CS_BT_WHOLE, s = cs_ld32(cs_vc_smem_bsite(x, b));
        for (uint32_t i = 0; i < CS_VC_BLOCK; i += 4) {
            cs_s_st4(x.W + 4u * (b * CS_VC_BLOCK + i), cs_u4{e, e, e, e});
            cs_g_st4(x.ws + b * CS_VC_BLOCK + i, s);
        }
        cs_fence();
        cs_s_st(p, 0);
        return;
    }
}

// Reader ri's summary word of block b, and its 32 bytes there (emptied in two stores).
CS_DEV cs_sp cs_vc_smem_rsp(const cs_vc_smem_ctx_t& x, uint32_t b, uint32_t ri) {
    return x.RS + 4u * (b * x.rss + ri);
}
CS_DEV cs_sp cs_vc_smem_row(const cs_vc_smem_ctx_t& x, uint32_t b, uint32_t ri) {
    return x.R + ri * x.gp + b * CS_VC_BLOCK;
}
CS_DEV void cs_vc_smem_empty(cs_sp r) {
    static_assert(CS_VC_BLOCK == 32, "a reader's bytes of a block: two 16-byte stores");
    cs_s_st4(r, cs_u4{0, 0, 0, 0});
    cs_s_st4(r + 16, cs_u4{0, 0, 0, 0});
}

// Before reader ri's bytes go into block b: a summary of 0 (no read since the block was
// written whole) leaves stale bytes, which the first read to raise it empties.
// A row one warp owns (its reads; its bulk-store unit's): the lane whose compare-and-swap
// raises the summary from 0 empties the bytes, as part of raising it (the warp's lanes
// reconverge before they put their bytes).
CS_DEV void cs_vc_smem_raise(const cs_vc_smem_ctx_t& x, uint32_t b, uint32_t ri, uint32_t clk) {
    // (a load first: lanes of a warp reading one block would serialize on an atomic)
    cs_sp p = cs_vc_smem_rsp(x, b, ri);
    uint32_t v = cs_s_ld(p);
    if (v == 0) v = cs_s_cas(p, 0, clk);
    if (v == 0) {
        cs_vc_smem_empty(cs_vc_smem_row(x, b, ri));
    } else if (v < clk) {
        cs_s_max(p, clk);
    }
}
// A wgmma unit's row, which four warps publish into at once: one lane at a time empties
// the bytes (ZEROING meanwhile; the others wait), then sets the summary to 1 (bytes valid,
// no read yet); one lane per summary word among the warp's lanes here (a lane spinning on
// its own warp's lane stalls the warp). cs_vc_smem_fresh returns the summary, to be raised
// after the bytes.
// A writer that finds a summary ZEROING takes it for an unordered read: it can see one only
// while a wgmma unit publishes its first read of the block since it was written whole,
// which no synchronisation orders against this write (a race: the reader sees the write
// too, after its fence).
CS_NOINLINE void cs_vc_smem_freshen(cs_sp p, cs_sp r) {
    uint32_t same = cs_match(cs_activemask(), p);
    if (cs_lane() == (uint32_t)cs_ffs(same) - 1) {
        uint32_t v = cs_s_ld(p);
        while (v == 0 || v == CS_RS_ZEROING) {
            if (v == 0 && cs_s_cas(p, 0, CS_RS_ZEROING) == 0) {
                cs_vc_smem_empty(r);
                cs_fence_lock();  // the bytes empty before the summary says so
                cs_s_st(p, 1);
                break;
            }
            v = cs_s_ld(p);
        }
    }
    cs_syncwarp(same);
    cs_fence_lock();
}
CS_DEV uint32_t cs_vc_smem_fresh(const cs_vc_smem_ctx_t& x, uint32_t b, uint32_t ri) {
    cs_sp p = cs_vc_smem_rsp(x, b, ri);
    uint32_t v = cs_s_ld(p);
    if (v != 0 && v != CS_RS_ZEROING) return v;
    cs_vc_smem_freshen(p, cs_vc_smem_row(x, b, ri));
    return 1;  // (or more: the caller raises it with a max)
}
// Raise reader ri's summary of block b to clk.
CS_DEV void cs_vc_smem_note(const cs_vc_smem_ctx_t& x, uint32_t b, uint32_t ri, uint32_t clk) {
    // (each lane: a warp-wide vote to pick one lane cost more than the few lanes of a
    // block that find the summary behind and raise it)
    cs_sp p = cs_vc_smem_rsp(x, b, ri);
    if (cs_s_ld(p) < clk) cs_s_max(p, clk);
}

// Publish reader ri's reads of granules [g0, g1] at clock clk: its bytes, its sites, the
// blocks' summaries (the caller fences, then looks at the writes: Dekker with the writer).
// A granule read again at the same clock keeps the site of the first read, as the
// device-memory tables do.
// A read's site stores (CS_READ_SITES: measure.h).
CS_DEV void cs_rsite_st(uint32_t* p, uint32_t v) { if (CS_READ_SITES) cs_g_st(p, v); }
CS_DEV void cs_rsite_st4(uint32_t* p, uint32_t v) { if (CS_READ_SITES) cs_g_st4(p, v); }
// One reader byte (R + g) and its site, or four aligned ones at once; a byte that already
// holds this clock keeps its site.
CS_DEV void cs_vc_smem_put1(cs_sp R, uint32_t* rs, uint32_t g, uint32_t c8, uint32_t site) {
    if (cs_s_ld8(R + g) == c8) return;
    cs_s_st8(R + g, c8);
    cs_rsite_st(rs + g, site);
}
// (The sites of the bytes of `old` not at this clock: rare, so out of line.)
CS_NOINLINE void cs_vc_smem_put_sites(uint32_t* rs, uint32_t g, uint32_t c8, uint32_t site,
                                  uint32_t old) {
    for (uint32_t i = 0; i < 4; ++i)
        if (((old >> (8 * i)) & 0xFFu) != c8) cs_rsite_st(rs + g + i, site);
}
CS_DEV void cs_vc_smem_put4(cs_sp R, uint32_t* rs, uint32_t g, uint32_t c8, uint32_t site,
                        uint32_t old) {  // old: the word at R + g
    uint32_t c32 = c8 * 0x01010101u;
    if (old == c32) return;
    cs_s_st(R + g, c32);
    if (old == 0) cs_rsite_st4(rs + g, site);
    else cs_vc_smem_put_sites(rs, g, c8, site, old);
}

// An aligned 16-byte chunk (ldmatrix rows, v4 accesses, cp.async 16, wgmma core-matrix
// rows) is CS_CHUNK_G granules: four of 4 bytes, or one where the module's every access
// is whole chunks (abi.CHUNK_GRANULE_BYTES: a quarter of the tables, so that a 96 KiB
// Triton matmul's fit in shared memory). The chunk's table entries, in either size:
#define CS_CHUNK_G (16u / CS_GRANULE_BYTES)
static_assert(CS_CHUNK_G == 4 || CS_CHUNK_G == 1, "a chunk is four granules or one");
// A reader's bytes of the chunk at granule g (a word, or a byte).
CS_DEV uint32_t cs_chunk_bytes(cs_sp R, uint32_t g) {
    return CS_CHUNK_G == 4 ? cs_s_ld(R + g) : cs_s_ld8(R + g);
}
// Put the reader's clock byte c8 into the chunk's bytes (`old`: cs_chunk_bytes); a byte
// already at this clock keeps its site.
CS_DEV void cs_chunk_put(cs_sp R, uint32_t* rs, uint32_t g, uint32_t c8, uint32_t site,
                         uint32_t old) {
    if (CS_CHUNK_G == 4) return cs_vc_smem_put4(R, rs, g, c8, site, old);
    if (old == c8) return;
    cs_s_st8(R + g, c8);
    cs_rsite_st(rs + g, site);
}
// Empty a reader's bytes of the chunk.
CS_DEV void cs_chunk_empty(cs_sp R, uint32_t g) {
    if (CS_CHUNK_G == 4) cs_s_st(R + g, 0);
    else cs_s_st8(R + g, 0);
}
// The chunk's sites (wsite, or a reader's) set to `site`.
CS_DEV void cs_chunk_sites(uint32_t* ws, uint32_t site) {
    if (CS_CHUNK_G == 4) cs_g_st4(ws, site);
    else cs_g_st(ws, site);
}
// The chunk's write epochs: `one` when a single epoch `e` stands for all of them.
struct cs_chunk_epoch { uint32_t e; bool one; };
CS_DEV cs_chunk_epoch cs_chunk_epochs(cs_sp W, uint32_t g) {
    if (CS_CHUNK_G == 1) return {cs_s_ld(W + 4u * g), true};
    const cs_u4 v = cs_s_ld4(W + 4u * g);
    return {v.x, v.x == v.y && v.y == v.z && v.z == v.w};
}

CS_DEV void cs_vc_smem_publish(const cs_vc_smem_ctx_t& x, uint32_t ri, uint32_t clk, uint32_t g0, uint32_t g1,
                           uint32_t site, bool unit) {  // unit: ri is a wgmma unit's row
    cs_sp R = x.R + ri * x.gp;
    uint32_t* rs = x.rsite + ri * x.gp;
    uint32_t c8 = cs_vc_smem_byte(clk);
    if ((g0 & 3u) == 0 && g1 == g0 + 3) {  // an aligned 16-byte chunk (ldmatrix, v4, wgmma)
        uint32_t b = g0 / CS_VC_BLOCK;
        cs_sp p = cs_vc_smem_rsp(x, b, ri);
        uint32_t v = cs_s_ld(p), old = cs_s_ld(R + g0);  // (both loads in flight at once)
        if (v == 0 || v == CS_RS_ZEROING) {  // stale bytes: emptied first
            if (unit) cs_vc_smem_fresh(x, b, ri);
            else cs_vc_smem_raise(x, b, ri, clk);
            old = cs_s_ld(R + g0);
            v = unit ? 1u : clk;
        }
        cs_vc_smem_put4(R, rs, g0, c8, site, old);
        if (v < clk) cs_s_max(p, clk);
        return;
    }
    for (uint32_t b = g0 / CS_VC_BLOCK; b <= g1 / CS_VC_BLOCK; ++b) {
        if (unit) cs_vc_smem_fresh(x, b, ri);
        else cs_vc_smem_raise(x, b, ri, clk);
    }
    for (uint32_t g = g0; g <= g1;) {
        if ((g & 3u) == 0 && g + 3 <= g1) {
            cs_vc_smem_put4(R, rs, g, c8, site, cs_s_ld(R + g));
            g += 4;
        } else {
            cs_vc_smem_put1(R, rs, g, c8, site);
            g += 1;
        }
    }
    for (uint32_t b = g0 / CS_VC_BLOCK; unit && b <= g1 / CS_VC_BLOCK; ++b) cs_vc_smem_note(x, b, ri, clk);
}

// Write epoch e (its site at *ws) as a reader issued by warp x.w sees it (cs_judge_read;
// 0: never written).
CS_DEV cs_finding cs_vc_smem_judge_read(const cs_vc_smem_ctx_t& x, uint32_t e, const uint32_t* ws,
                                    uint32_t proxy) {
    return cs_judge_read(e != 0, e & CS_VW_MBAR, cs_vw_t(e), cs_vw_c(e), ws, x.mine, x.w, x.slot,
                         proxy);
}

// Look at the write epochs of granules [g0, g1] for a reader (after publishing its reads):
// the first finding, and the granule it is at. `ok` carries an epoch already judged clean.
CS_DEV cs_finding cs_vc_smem_look(const cs_vc_smem_ctx_t& x, uint32_t g0, uint32_t g1, uint32_t proxy,
                              uint32_t& ok, uint32_t& at) {
    if ((g0 & 3u) == 0 && g1 == g0 + 3) {  // an aligned 16-byte chunk: one block
        // (the block's word and the four epochs loaded together: the accesses of a warp
        // wait on shared memory more than on anything else)
        uint32_t b = g0 / CS_VC_BLOCK, bt = cs_s_ld(x.BT + 4u * b);
        cs_u4 v = cs_s_ld4(x.W + 4u * g0);
        if (bt == CS_BT_LOCKED) {  // a lane is giving the block's granules their epochs
            bt = cs_vc_smem_bt(x, b);
            v = cs_s_ld4(x.W + 4u * g0);
        }
        uint32_t e = bt & ~CS_BT_WHOLE;
        const uint32_t* ws = cs_vc_smem_bsite(x, b);
        bool one = bt != 0;
        if (!bt) {  // one epoch for the four granules (one write wrote them): judged once
            one = v.x == v.y && v.y == v.z && v.z == v.w;
            e = v.x;
            ws = x.ws + g0;
        }
        if (one) {
            if (e == ok) return {0, CS_NO_SITE, CS_NO_WARP};
            cs_finding f = cs_vc_smem_judge_read(x, e, ws, proxy);
            if (f.kind) at = g0;
            else ok = e;
            return f;
        }
    }
    for (uint32_t b = g0 / CS_VC_BLOCK; b <= g1 / CS_VC_BLOCK; ++b) {
        uint32_t a = cs_block_lo(b, g0);
        uint32_t z = cs_block_hi(b, g1);
        uint32_t bt = cs_vc_smem_bt(x, b);
        if (bt) {  // a copy wrote the block whole: its epoch stands for every granule
            uint32_t e = bt & ~CS_BT_WHOLE;
            if (e == ok) continue;
            cs_finding f = cs_vc_smem_judge_read(x, e, cs_vc_smem_bsite(x, b), proxy);
            if (f.kind) {
                at = a;
                return f;
            }
            ok = e;
            continue;
        }
        for (uint32_t g = a; g <= z;) {
            if ((g & 3u) == 0 && g + 3 <= z) {
                cs_u4 e = cs_s_ld4(x.W + 4u * g);
                if (e.x == ok && e.y == ok && e.z == ok && e.w == ok) {
                    g += 4;
                    continue;
                }
            }
            uint32_t e = cs_s_ld(x.W + 4u * g);
            if (e != ok) {
                cs_finding f = cs_vc_smem_judge_read(x, e, x.ws + g, proxy);
                if (f.kind) {
                    at = g;
                    return f;
                }
                ok = e;
            }
            g += 1;
        }
    }
    return {0, CS_NO_SITE, CS_NO_WARP};
}

// Accesses of one lane: n spans of `size` bytes at off, off + stride, ... (table offsets).
struct cs_vc_smem_span { uint32_t off, size, stride, n; };
CS_DEV uint32_t cs_span_g0(const cs_vc_smem_span& s, uint32_t k) { return (s.off + k * s.stride) / CS_GRANULE_BYTES; }
CS_DEV uint32_t cs_span_g1(const cs_vc_smem_span& s, uint32_t k) {
    return (s.off + k * s.stride + s.size - 1) / CS_GRANULE_BYTES;
}

// Spans of one granule each (an unrolled loop of scalar loads: a strided probe), four at a
// time so their loads are in flight together. When every lane's k-th span lies in the
// first lane's k-th block (the warp reads along a row of blocks), the blocks' summaries
// are raised one per lane, not once per span by a warp-wide vote.
#define CS_VC_SMEM_BATCH 4
CS_DEV void cs_vc_smem_read_granules(const cs_vc_smem_ctx_t& x, const cs_vc_smem_span& s, uint32_t site,
                                 uint32_t clk, cs_finding& f, uint32_t& fk) {
    cs_sp R = x.R + x.w * x.gp;
    uint32_t* rs = x.rsite + x.w * x.gp;
    const uint32_t c8 = cs_vc_smem_byte(clk), bb = CS_GRANULE_BYTES * CS_VC_BLOCK;  // bytes per block
    uint32_t m = cs_activemask(), lead = cs_ffs(m) - 1;
    bool row = s.stride % bb == 0 && cs_all(m, cs_bcast(m, s.off / bb, (int)lead) == s.off / bb);
    uint32_t rank = cs_popc(m & ((1u << cs_lane()) - 1u)), lanes = cs_popc(m);
    // Whole rows: all 32 lanes, lane i reading its `size` bytes at off0 + i * size (a
    // coalesced read of 32 * size bytes a row), each row rg granules of one block (rg a
    // multiple of 4: whole words of reader bytes; 32 where 4-byte reads meet 4-byte
    // granules, 8 where they meet chunk granules): lane r publishes and judges rows r,
    // r + 32, ... whole, where every lane went through every row.
    uint32_t off0 = cs_bcast(m, s.off, (int)lead);
    const uint32_t rowb = 32u * s.size, rg = rowb / CS_GRANULE_BYTES, nw = rg / 4;
    bool whole = m == 0xFFFFFFFFu && rowb % (4u * CS_GRANULE_BYTES) == 0 && rowb <= bb &&
                 off0 % rowb == 0 && s.stride % rowb == 0 &&
                 cs_all(m, s.off == off0 + s.size * cs_lane());
    if (whole || row) {  // the blocks' summaries raised, one lane per row, before any byte
        for (uint32_t k = rank; k < s.n; k += lanes)
            cs_vc_smem_raise(x, ((whole ? off0 : s.off) + k * s.stride) / bb, x.w, clk);
        cs_syncwarp(m);
    }
    if (whole) {
        const uint32_t c4 = c8 * 0x01010101u;
        static_assert(CS_VC_BLOCK == 32, "a row is at most two 16-byte words of reader bytes");
        for (uint32_t k = rank; k < s.n; k += lanes) {
            uint32_t g0 = (off0 + k * s.stride) / CS_GRANULE_BYTES;
            // The row's first read at this clock (no granule read at it yet), the common
            // case: every byte and site stored, no branch per word (ring: the branches of
            // the word-by-word form were a third of the consumers' read probe).
            uint32_t row[8];
            if (nw >= 4) {
                cs_u4 v0 = cs_s_ld4(R + g0), v1 = nw == 8 ? cs_s_ld4(R + g0 + 16) : cs_u4{c4, c4, c4, c4};
                row[0] = v0.x, row[1] = v0.y, row[2] = v0.z, row[3] = v0.w;
                row[4] = v1.x, row[5] = v1.y, row[6] = v1.z, row[7] = v1.w;
            } else {
#pragma unroll
                for (uint32_t i = 0; i < 8; ++i) row[i] = i < nw ? cs_s_ld(R + g0 + 4 * i) : c4;
            }
            uint32_t seen = 0;
#pragma unroll
            for (uint32_t i = 0; i < 8; ++i) {
                uint32_t d = row[i] ^ c4;
                if (i < nw) seen |= (d - 0x01010101u) & ~d & 0x80808080u;  // a byte at this clock
            }
            if (seen == 0) {
                const cs_u4 all = {c4, c4, c4, c4};
                if (nw >= 4) cs_s_st4(R + g0, all);
                if (nw == 8) cs_s_st4(R + g0 + 16, all);
#pragma unroll
                for (uint32_t i = 0; i < 8; ++i) {
                    if (nw < 4 && i < nw) cs_s_st(R + g0 + 4 * i, c4);
                    if (i < nw) cs_rsite_st4(rs + g0 + 4 * i, site);
                }
                continue;
            }
#pragma unroll
            for (uint32_t i = 0; i < 8; ++i) {  // else word by word (four granules each)
                uint32_t g = g0 + 4 * i, d = row[i] ^ c4;
                if (i >= nw || d == 0) continue;  // read at this clock already: its site stays
                if (!((d - 0x01010101u) & ~d & 0x80808080u)) {  // no byte at this clock
                    cs_s_st(R + g, c4);
                    cs_rsite_st4(rs + g, site);
                    continue;
                }
                for (uint32_t j = 0; j < 4; ++j) {
                    if (((row[i] >> (8 * j)) & 0xFFu) == c8) continue;
                    cs_s_st8(R + g + j, c8);
                    cs_rsite_st(rs + g + j, site);
                }
            }
        }
    }
    for (uint32_t k0 = 0; k0 < s.n && !whole; k0 += CS_VC_SMEM_BATCH) {
        uint32_t g[CS_VC_SMEM_BATCH], b8[CS_VC_SMEM_BATCH];
#pragma unroll
        for (uint32_t i = 0; i < CS_VC_SMEM_BATCH; ++i) {
            g[i] = (s.off + (k0 + i < s.n ? k0 + i : k0) * s.stride) / CS_GRANULE_BYTES;
            if (!row) cs_vc_smem_raise(x, g[i] / CS_VC_BLOCK, x.w, clk);
            b8[i] = cs_s_ld8(R + g[i]);
        }
#pragma unroll
        for (uint32_t i = 0; i < CS_VC_SMEM_BATCH; ++i) {
            if (k0 + i >= s.n || b8[i] == c8) continue;
            cs_s_st8(R + g[i], c8);
            cs_rsite_st(rs + g[i], site);
        }
    }
    CS_READ_FENCE();  // publish the reads, then look at the writes (Dekker with the writer)
    uint32_t ok = 0xFFFFFFFFu;
    if (whole) {  // rows held whole by one epoch (a copy's) judged once each, by one lane
        bool held = true;
        uint32_t bad = 0xFFFFFFFFu;
        cs_finding y = {0, CS_NO_SITE, CS_NO_WARP};
        for (uint32_t k = rank; k < s.n; k += lanes) {
            uint32_t b = (off0 + k * s.stride) / bb, bt = cs_s_ld(x.BT + 4u * b);
            if (bt == 0 || bt == CS_BT_LOCKED) {  // epochs by granule, or being given them
                held = false;
                break;
            }
            uint32_t ep = bt & ~CS_BT_WHOLE;
            if (ep == ok) continue;
            y = cs_vc_smem_judge_read(x, ep, cs_vc_smem_bsite(x, b), CS_PROXY_NONE);
            if (y.kind) {
                bad = k;
                break;
            }
            ok = ep;
        }
        if (cs_all(m, held)) {  // every row before the first bad one was looked at: clean
            uint32_t first = cs_min(m, bad);
            if (first != 0xFFFFFFFFu) {
                int src = cs_ffs(cs_ballot(m, bad == first)) - 1;
                f = {cs_bcast(m, y.kind, src), cs_bcast(m, y.prev_site, src),
                     cs_bcast(m, y.prev_warp, src)};
                fk = first;
            }
            return;
        }
        ok = 0xFFFFFFFFu;
    }
    for (uint32_t k0 = 0; k0 < s.n; k0 += CS_VC_SMEM_BATCH) {
        uint32_t g[CS_VC_SMEM_BATCH], bt[CS_VC_SMEM_BATCH], e[CS_VC_SMEM_BATCH];
#pragma unroll
        for (uint32_t i = 0; i < CS_VC_SMEM_BATCH; ++i) {
            g[i] = (s.off + (k0 + i < s.n ? k0 + i : k0) * s.stride) / CS_GRANULE_BYTES;
            bt[i] = cs_s_ld(x.BT + 4u * (g[i] / CS_VC_BLOCK));
            e[i] = cs_s_ld(x.W + 4u * g[i]);
        }
#pragma unroll
        for (uint32_t i = 0; i < CS_VC_SMEM_BATCH; ++i) {
            if (k0 + i >= s.n) break;
            if (bt[i] == CS_BT_LOCKED) {  // a lane is giving the block's granules their epochs
                bt[i] = cs_vc_smem_bt(x, g[i] / CS_VC_BLOCK);
                e[i] = cs_s_ld(x.W + 4u * g[i]);
            }
            uint32_t ep = bt[i] ? bt[i] & ~CS_BT_WHOLE : e[i];
            if (ep == ok) continue;
            f = cs_vc_smem_judge_read(x, ep, bt[i] ? cs_vc_smem_bsite(x, g[i] / CS_VC_BLOCK) : x.ws + g[i],
                                  CS_PROXY_NONE);
            if (f.kind == CS_MBARRIER_DATA_ACCESS &&
                !cs_read_reaches_mbar(S.vsh_base + s.off + (k0 + i) * s.stride, s.size)) {
                f = {0, CS_NO_SITE, CS_NO_WARP};  // the data beside it (not `ok`: its own verdict)
                continue;
            }
            if (f.kind) {
                fk = k0 + i;
                return;
            }
            ok = ep;
        }
    }
}

// A warp's reads (each lane its spans): publish them all, one fence, then the writes.
// Spans of one granule each (an unrolled loop of scalar loads) take a short path.
CS_DEV void cs_vc_smem_read(const cs_vc_smem_ctx_t& x, const cs_vc_smem_span& s, uint32_t site, cs_finding& f,
                        uint32_t& fk) {
    uint32_t clk = cs_clock_sh[x.w], ok = 0xFFFFFFFFu, at;
    if (s.off % CS_GRANULE_BYTES + s.size <= CS_GRANULE_BYTES && s.stride % CS_GRANULE_BYTES == 0) {
        cs_vc_smem_read_granules(x, s, site, clk, f, fk);
        return;
    }
    for (uint32_t k = 0; k < s.n; ++k) cs_vc_smem_publish(x, x.w, clk, cs_span_g0(s, k), cs_span_g1(s, k), site, false);
    CS_READ_FENCE();
    for (uint32_t k = 0; k < s.n && !f.kind; ++k) {
        f = cs_vc_smem_look(x, cs_span_g0(s, k), cs_span_g1(s, k), CS_PROXY_NONE, ok, at);
        fk = k;
    }
}

// The clocks, in warp x.w's view, of the readers a probe keeps in registers (its own
// reads are ordered: all ones).
struct cs_reader_clocks_t { uint32_t c[CS_VC_SMEM_FASTR]; };
CS_DEV uint32_t cs_vc_smem_reader_clock(const cs_vc_smem_ctx_t& x, uint32_t ri) {
    uint32_t word = ri < 4 ? x.rtid[0] : x.rtid[1];  // (constant indices: x stays in registers)
    uint32_t t = ri < CS_VC_SMEM_FASTR ? (word >> (8 * (ri % 4))) & 0xFFu : cs_vc_smem_reader_tid(ri);
    return ri >= x.nr || t == x.w ? 0xFFFFFFFFu : cs_vc_smem_mine(x.mine, t);
}
CS_DEV cs_reader_clocks_t cs_vc_smem_reader_clocks(const cs_vc_smem_ctx_t& x) {
    cs_reader_clocks_t q;
#pragma unroll
    for (uint32_t ri = 0; ri < CS_VC_SMEM_FASTR; ++ri) q.c[ri] = cs_vc_smem_reader_clock(x, ri);
    return q;
}
// Reader ri's clock: from q where the caller has them (copies), else looked up (an access
// probe needs it only where a block's summary names the reader).
CS_DEV uint32_t cs_vc_smem_reader_clock_in(const cs_vc_smem_ctx_t& x, const cs_reader_clocks_t* q, uint32_t ri) {
    return q && ri < CS_VC_SMEM_FASTR ? q->c[ri] : cs_vc_smem_reader_clock(x, ri);
}

// The bytes of granule g, one reader at a time (in the device-memory tables' order:
// wgmma units, warps, bulk-store units): the first read not ordered before warp x.w.
// Only readers `seen` (bit ri: its summary of the block is not 0, so its bytes are not
// stale; readers past 32 by their summary).
CS_DEV void cs_vc_smem_check_readers(const cs_vc_smem_ctx_t& x, uint32_t g, uint32_t seen, cs_finding& f) {
    uint32_t nw = cs_vc_smem_nwr(), nb = cs_vc_smem_nbulk(), nwg = x.nr - nw - nb;
    for (uint32_t j = 0; j < x.nr && !f.kind; ++j) {
        uint32_t ri = j < nwg ? nw + nb + j : j - nwg;
        if (ri < 32 ? !((seen >> ri) & 1u)
                    : !cs_s_ld(cs_vc_smem_rsp(x, g / CS_VC_BLOCK, ri)))
            continue;
        uint32_t b8 = cs_s_ld8(x.R + ri * x.gp + g), t = cs_vc_smem_reader_tid(ri);
        if (!b8 || t == x.w) continue;
        uint32_t c = cs_vc_smem_unbyte(b8, cs_vc_smem_reader_now(ri));
        if (!cs_ordered(x.mine, x.w, t, c))
            f = {t < CS_MAX_WARPS ? CS_RACE_WAR : CS_ASYNC_PENDING_READ,
                 cs_ld32(x.rsite + ri * x.gp + g), t};
    }
}

// Granules [a, z]'s readers judged one by one (a summary said some read may be unordered).
// Inline: called out of line, by the lanes of a warp that had a late reader while the
// others waited at the convergence barriers B6/B7 around the call, it cleared those on
// entry (its loops use eight) and let the others go on, split from it (the SASS of sm_90a;
// such a split hung a 16-byte write's report, checker/access16.h). A caller that calls it
// out of line does so by all its lanes or none (cs_access16_late).
CS_DEV cs_found cs_vc_smem_late_readers(uint32_t slot, uint32_t w, const uint32_t* mine, cs_sp R,
                                    cs_sp RS, uint32_t* rsite, uint32_t gp, uint32_t nr,
                                    uint32_t rss, uint32_t seen, uint32_t a, uint32_t z) {
    cs_vc_smem_ctx_t x;
    x.slot = slot, x.w = w, x.mine = mine, x.R = R, x.RS = RS, x.rsite = rsite, x.gp = gp;
    x.nr = nr, x.rss = rss;
    cs_found r = {{0, CS_NO_SITE, CS_NO_WARP}, 0};
    for (uint32_t g = a; g <= z && !r.f.kind; ++g) {
        cs_vc_smem_check_readers(x, g, seen, r.f);
        r.at = g;
    }
    return r;
}

CS_DEV void cs_vc_smem_zero(cs_sp R, uint32_t a, uint32_t z) {  // bytes a..z of a reader's row
    if ((a & 3u) == 0 && z == a + 3) return cs_s_st(R + a, 0);  // an aligned 16-byte write
    for (uint32_t g = a; g <= z;) {
        if ((g & 15u) == 0 && g + 15 <= z) {
            cs_s_st4(R + g, cs_u4{0, 0, 0, 0});
            g += 16;
        } else if ((g & 3u) == 0 && g + 3 <= z) {
            cs_s_st(R + g, 0);
            g += 4;
        } else {
            cs_s_st8(R + g, 0);
            g += 1;
        }
    }
}

// An aligned 16-byte write at granule a: the bytes of readers `seen` (the first 32 reader
// indices) there are emptied, a store each (the write supersedes the reads).
CS_DEV void cs_vc_smem_empty16(const cs_vc_smem_ctx_t& x, uint32_t a, uint32_t seen) {
    if (seen & 1u) cs_chunk_empty(x.R, a);
    if (seen & 2u) cs_chunk_empty(x.R + x.gp, a);
    if (seen & 4u) cs_chunk_empty(x.R + 2 * x.gp, a);
    if (seen & 8u) cs_chunk_empty(x.R + 3 * x.gp, a);
    for (uint32_t s = seen >> 4; s; s &= s - 1) cs_chunk_empty(x.R + (3 + cs_ffs(s)) * x.gp, a);
}

// Granules [a, z] of block b were written (epochs published and fenced): judge their
// readers -- by the block's summary, or byte by byte where it says some read may be
// unordered -- then empty their bytes (the write supersedes the reads); a block written
// whole empties its summary too.
CS_DEV void cs_vc_smem_block_readers(const cs_vc_smem_ctx_t& x, const cs_reader_clocks_t* q, uint32_t b, uint32_t a,
                                 uint32_t z, cs_finding& f, uint32_t& at) {
    bool whole = z - a == CS_VC_BLOCK - 1;
    cs_sp rs = x.RS + 4u * b * x.rss;
    uint32_t seen = 0;  // readers with bytes in the block (the first 32 reader indices)
    bool late = false;
    if (x.nr <= 4) {  // the summary in one load
        cs_u4 v = cs_s_ld4(rs);
        seen = (v.x ? 1u : 0u) | (v.y ? 2u : 0u) | (v.z ? 4u : 0u) | (v.w ? 8u : 0u);
        if (!seen) return;
        late = (v.x && v.x > cs_vc_smem_reader_clock_in(x, q, 0)) || (v.y && v.y > cs_vc_smem_reader_clock_in(x, q, 1)) ||
               (v.z && v.z > cs_vc_smem_reader_clock_in(x, q, 2)) || (v.w && v.w > cs_vc_smem_reader_clock_in(x, q, 3));
    } else {
        for (uint32_t ri = 0; ri < x.nr; ++ri) {
            uint32_t c = cs_s_ld(rs + 4u * ri);
            if (!c) continue;
            seen |= ri < 32 ? 1u << ri : 0u;
            late = late || c > cs_vc_smem_reader_clock_in(x, q, ri) || ri >= 32;
        }
    }
    if (!seen && !late) return;
    if (late && !f.kind) {
        cs_found r = cs_vc_smem_late_readers(x.slot, x.w, x.mine, x.R, x.RS, x.rsite, x.gp, x.nr,
                                         x.rss, seen, a, z);
        if (r.f.kind) f = r.f, at = r.at;
    }
    if (x.nr <= 4 && a % CS_CHUNK_G == 0 && z == a + CS_CHUNK_G - 1) return cs_vc_smem_empty16(x, a, seen);
    for (uint32_t ri = 0; ri < x.nr; ++ri) {
        if (ri < 32 && !(seen & (1u << ri))) continue;
        if (!whole) {
            cs_vc_smem_zero(x.R + ri * x.gp, a, z);
        } else if (ri >= cs_vc_smem_nwr() + cs_vc_smem_nbulk()) {
            // a wgmma unit's row, which its four warps would otherwise empty at their next
            // read, one of them spinning on the other (cs_vc_smem_freshen): emptied here, and
            // the summary says so (1: bytes valid, no read yet)
            cs_vc_smem_empty(cs_vc_smem_row(x, b, ri));
            cs_fence_lock();
            cs_s_st(rs + 4u * ri, 1);
        } else {
            cs_s_st(rs + 4u * ri, 0);  // (the bytes go stale: cs_vc_smem_fresh)
        }
    }
}

CS_DEV void cs_vc_smem_readers(const cs_vc_smem_ctx_t& x, const cs_reader_clocks_t* q, uint32_t g0, uint32_t g1,
                           cs_finding& f, uint32_t& at) {
    for (uint32_t b = g0 / CS_VC_BLOCK; b <= g1 / CS_VC_BLOCK; ++b) {
        uint32_t a = cs_block_lo(b, g0);
        uint32_t z = cs_block_hi(b, g1);
        cs_vc_smem_block_readers(x, q, b, a, z, f, at);
    }
}

// Of a write's finding on an epoch (fw, at span kw, granule aw) and on a reader (fr, kr,
// ar): the one at the earlier granule, the epoch's at the same one -- the order in which
// the device-memory tables judge a write granule by granule.
CS_DEV cs_finding cs_vc_smem_first(const cs_finding& fw, uint32_t kw, uint32_t aw,
                               const cs_finding& fr, uint32_t kr, uint32_t ar, uint32_t& k) {
    bool epoch = fw.kind && (!fr.kind || kw < kr || (kw == kr && aw <= ar));
    k = epoch ? kw : kr;
    return epoch ? fw : fr;
}

// The epoch a write by `by` (warp x.w or one of its agents) replaces: a finding?
CS_DEV cs_finding cs_vc_smem_judge_write(const cs_vc_smem_ctx_t& x, uint32_t old, const uint32_t* ws,
                                     bool atomic, uint32_t by) {
    uint32_t t = cs_vw_t(old);
    if (old & CS_VW_MBAR) return {CS_MBARRIER_DATA_ACCESS, cs_ld32(ws), t};
    if (old == 0)  // an atomic reads the old value
        return {atomic ? CS_UNINIT_READ : 0u, CS_NO_SITE, CS_NO_WARP};
    if (cs_own_write(t, by) || (atomic && (old & CS_VW_ATOMIC)) ||
        cs_ordered(x.mine, x.w, t, cs_vw_c(old)))
        return {0, CS_NO_SITE, CS_NO_WARP};
    return {t >= CS_AGENT_CPASYNC ? CS_ASYNC_PENDING_WRITE : CS_RACE_WAW, cs_ld32(ws), t};
}

// Granule g's old epoch `old`, exchanged for `now` by a write: judged, and its site replaced
// (an mbarrier's epoch is put back: the object stays an mbarrier). A granule rewritten by
// `by` at the same clock keeps its site.
CS_DEV void cs_vc_smem_write_one(const cs_vc_smem_ctx_t& x, uint32_t g, uint32_t old, uint32_t now,
                             uint32_t site, bool atomic, uint32_t by, cs_finding& f,
                             uint32_t& at) {
    if ((old & ~CS_VW_ATOMIC) == (now & ~CS_VW_ATOMIC)) return;
    cs_finding y = cs_replicated(cs_vc_smem_judge_write(x, old, x.ws + g, atomic, by), site);
    if (y.kind && !f.kind) f = y, at = g;
    if (old & CS_VW_MBAR) cs_s_st(x.W + 4u * g, old);
    else cs_g_st(x.ws + g, site);
}

// One lane's write of granules [g0, g1] by `by` at clk: exchange the epochs (two unordered
// writers see each other). A granule rewritten by `by` at the same clock keeps its site.
CS_DEV void cs_vc_smem_write_span(const cs_vc_smem_ctx_t& x, uint32_t g0, uint32_t g1, uint32_t site,
                              bool atomic, uint32_t by, uint32_t clk, cs_finding& f,
                              uint32_t& at) {
    uint32_t now = cs_vw(by, clk, atomic ? CS_VW_ATOMIC : 0u);
    for (uint32_t b = g0 / CS_VC_BLOCK; b <= g1 / CS_VC_BLOCK; ++b) cs_vc_smem_claim(x, b);
    if ((g0 & 3u) == 0 && g1 == g0 + 3) {  // an aligned 16-byte chunk (cp.async 16, st.v4)
        uint32_t o[4];
        for (uint32_t i = 0; i < 4; ++i) o[i] = cs_s_xchg(x.W + 4u * (g0 + i), now);
        if (o[0] == o[1] && o[1] == o[2] && o[2] == o[3] && !(o[0] & CS_VW_MBAR)) {
            if ((o[0] & ~CS_VW_ATOMIC) == (now & ~CS_VW_ATOMIC)) return;  // the first sites stay
            cs_finding y = cs_replicated(cs_vc_smem_judge_write(x, o[0], x.ws + g0, atomic, by),
                                         site);
            if (y.kind && !f.kind) f = y, at = g0;
            cs_g_st4(x.ws + g0, site);
            return;
        }
        for (uint32_t i = 0; i < 4; ++i) cs_vc_smem_write_one(x, g0 + i, o[i], now, site, atomic, by, f, at);
        return;
    }
    for (uint32_t g = g0; g <= g1; ++g)
        cs_vc_smem_write_one(x, g, cs_s_xchg(x.W + 4u * g, now), now, site, atomic, by, f, at);
}

CS_DEV void cs_vc_smem_write(const cs_vc_smem_ctx_t& x, const cs_vc_smem_span& s, uint32_t site, bool atomic,
                         uint32_t by, uint32_t clk, cs_finding& f, uint32_t& fk) {
    if (!cs_vc_smem_clock_fits(clk, site)) return;
    cs_finding fw = {0, CS_NO_SITE, CS_NO_WARP}, fr = fw;
    uint32_t aw = 0, ar = 0, kw = 0, kr = 0;
    for (uint32_t k = 0; k < s.n; ++k) {
        bool had = fw.kind != 0;
        cs_vc_smem_write_span(x, cs_span_g0(s, k), cs_span_g1(s, k), site, atomic, by, clk, fw, aw);
        if (fw.kind && !had) kw = k;
    }
    cs_fence();  // publish the writes, then look at the readers (Dekker with the reader)
    for (uint32_t k = 0; k < s.n; ++k) {
        bool had = fr.kind != 0;
        cs_vc_smem_readers(x, nullptr, cs_span_g0(s, k), cs_span_g1(s, k), fr, ar);
        if (fr.kind && !had) kr = k;
    }
    if (!f.kind) f = cs_vc_smem_first(fw, kw, aw, fr, kr, ar, fk);
}

// What a copy's write has found so far: the first finding on an epoch and on a reader,

// Granules [g0, g1] of the window last written by the instruction at `site` (idempotent
// stores); an mbarrier object's are not.
CS_DEV bool cs_vc_smem_written_by(uint32_t slot, uint32_t g0, uint32_t g1, uint32_t site) {
    if (g0 * CS_GRANULE_BYTES < S.vsh_base) return false;
    cs_vc_smem_ctx_t x = cs_vc_smem_ctx(slot, cs_warp());
    for (uint32_t g = g0 - S.vsh_base / CS_GRANULE_BYTES, n = g + g1 - g0; g <= n; ++g) {
        // (a block a copy wrote whole: its word stands for the granules, whose own epochs
        // and sites are stale)
        if (cs_vc_smem_bt(x, g / CS_VC_BLOCK)) return false;
        uint32_t e = cs_s_ld(x.W + 4u * g);
        if (e == 0 || (e & CS_VW_MBAR) || cs_ld32(x.ws + g) != site) return false;
    }
    return true;
}

// The access probe: each lane its own granules; collectives only to name a finding.
CS_DEV void cs_vc_smem_access(uint64_t addr, uint32_t site, uint32_t info, uint32_t rep) {
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return;
    uint32_t space = (info >> CS_INFO_SPACE_SHIFT) & 3u;
    uint32_t mode = (info >> CS_INFO_MODE_SHIFT) & 3u;
    uint32_t shape = (info >> CS_INFO_SHAPE_SHIFT) & 15u;
    cs_vc_smem_span s = {0, info & CS_INFO_SIZE_MASK, rep >> CS_REP_STRIDE_SHIFT, rep & CS_REP_COUNT_MASK};
    uint32_t off = 0, at = cs_where(addr, space, off);
    bool skip = at == CS_AT_ELSEWHERE, remote = at == CS_AT_REMOTE;
    if (shape && cs_lane() >= 8u * shape) skip = true;  // ldmatrix/stmatrix: row-address lanes
    cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
    uint32_t fk = 0, end = off + (s.n - 1) * s.stride + s.size;
    if (remote && !skip) {  // another CTA's shared memory: said, not checked
        f = {CS_TOOL_REMOTE_SMEM, CS_NO_SITE, CS_NO_WARP};
        skip = true;
    } else if (!skip && (s.n == 0 || off < S.vsh_base || end > S.granules * CS_GRANULE_BYTES ||
                         end < off)) {
        f = {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};
        s.n = 1;
    } else if (!skip) {
        uint32_t w = cs_warp();
        cs_vc_smem_ctx_t x = cs_vc_smem_ctx(slot, w);
        s.off = off - S.vsh_base;
        if (mode == CS_MODE_READ) {
            cs_vc_smem_read(x, s, site, f, fk);
        } else {
            uint32_t by = w, clk = cs_clock_sh[w];
            if (mode == CS_MODE_ASYNC_WRITE) {  // the copy unit's clock (__consan_async)
                by = CS_AGENT_CPASYNC + w;
                clk = *(volatile uint32_t*)&cs_cpticks_sh[w] + 1;
            }
            cs_vc_smem_write(x, s, site, mode == CS_MODE_ATOMIC, by, clk, f, fk);
        }
    }
    uint32_t m = cs_activemask();
    if (!cs_any(m, f.kind != 0)) return;
    uint32_t active = cs_match(m, ((uint64_t)site << 32) | info);
    uint32_t lo = skip ? 0xFFFFFFFFu : off + fk * s.stride;
    cs_record_t r;
    if (cs_merged_record(active, f, site, lo, skip ? 0u : lo + s.size, r)) cs_record(r);
}
