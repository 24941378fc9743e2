// consan device checker: TMA tensor copies.

// ------------------------------------------------------------- TMA tensor copies
//
// cp.async.bulk.tensor, tile mode. The instruction names a 128-byte tensor map the
// checker cannot decode; the runtime's table (S.tmaps) lists the maps whose geometry it
// knows, by a fingerprint of their 128 bytes, with the bytes one copy moves (its box,
// contiguous in shared memory: swizzling permutes bytes inside it). A load is then a
// bulk copy of that many bytes: a write by the copy engine of its mbarrier, visible to a
// wait on the phase it completes. A store is a bulk store of its box (its source is read
// until cp.async.bulk.wait_group.read retires its group). A map not in the table is a
// tool.tensor-map-unknown note, and a load's footprint is guessed (docs/model.md).

// A map lives in global, constant or kernel-parameter memory; the generic address the
// instruction names is read unless it is 0 (a name the rewriter could not convert) or
// points into shared or local memory. (The copy itself reads the same address.)
CS_DEV bool cs_tmap_readable(uint64_t a) {
#ifdef CONSAN_HOST
    return a != 0;
#else
    uint32_t other;
    asm volatile("{\n\t.reg .pred s, l;\n\t"
                 "isspacep.shared s, %1;\n\tisspacep.local l, %1;\n\t"
                 "or.pred s, s, l;\n\tselp.u32 %0, 1, 0, s;\n\t}"
                 : "=r"(other) : "l"(a));
    return a != 0 && other == 0;
#endif
}

CS_DEV uint64_t cs_tmap_fingerprint(const uint64_t* m) {  // = abi.tensor_map_fingerprint
    uint64_t h = CS_TMAP_FP_SEED;
    for (uint32_t i = 0; i < 16; ++i) {
        h ^= m[i];
        h *= CS_TMAP_FP_MUL;
        h ^= h >> 29;
    }
    return h ? h : 1;
}

// A map in kernel-parameter space (a __grid_constant__ argument) cannot change while the
// CTA runs: its bytes, once looked up, are kept (each entry written once: bytes, then the
// address).
CS_DEV bool cs_tmap_param(uint64_t a) {
#ifdef CONSAN_HOST
    return (void)a, false;
#else
    uint32_t p;
    asm volatile("{\n\t.reg .pred q;\n\tisspacep.param q, %1;\n\tselp.u32 %0, 1, 0, q;\n\t}"
                 : "=r"(p) : "l"(a));
    return p != 0;
#endif
}

// Bytes one copy through the map at (generic) address `map` moves; 0: a map not known.
// A kernel-parameter map this CTA looked up already is in its cache (the common case: a
// few loads); anything else is looked up out of line. A cache entry is one 64-bit word,
// the map's 64-byte unit above its bytes (cs_tmap_word), written once: a load sees all of
// it or none, so no fence orders an entry's bytes before its address.
#define CS_TMAP_BYTES_BITS 20u
#define CS_TMAP_BYTES_MASK ((1ull << CS_TMAP_BYTES_BITS) - 1u)
CS_DEV bool cs_tmap_cacheable(uint64_t map, uint32_t bytes) {
    return (map & 63u) == 0 && (map >> (70u - CS_TMAP_BYTES_BITS)) == 0 &&
           bytes <= CS_TMAP_BYTES_MASK;
}
CS_DEV uint64_t cs_tmap_word(uint64_t map, uint32_t bytes) {
    return ((map >> 6) << CS_TMAP_BYTES_BITS) | bytes;
}
// (Measured on the H100, the TMA + wgmma GEMM against the cache with its bytes and address
// in two words and fence.acq_rel.cta between them: its loads' look-ups 41.5k -> 27.7k
// cycles a CTA, the device's time 0.297 -> 0.284 ms; the TMA ring 0.177 -> 0.174 ms.)
CS_DEV void cs_tmap_keep(uint64_t map, uint32_t bytes) {  // (a map in the table)
    if (!cs_tmap_cacheable(map, bytes)) return;
    uint32_t i = cs_add32(&cs_shv.tmap_claimed, 1);
    if (i < CS_TMAP_CACHE) *(volatile uint64_t*)&cs_shv.tmap_at[i] = cs_tmap_word(map, bytes);
}
CS_NOINLINE uint32_t cs_tmap_lookup(uint64_t map);
CS_DEV uint32_t cs_tmap_bytes(uint64_t map) {
    if (map && cs_tmap_cacheable(map, 0)) {
        const uint64_t key = cs_tmap_word(map, 0);
        for (uint32_t i = 0; i < CS_TMAP_CACHE; ++i) {
            uint64_t v = *(volatile uint64_t*)&cs_shv.tmap_at[i];
            if (v != 0 && (v & ~CS_TMAP_BYTES_MASK) == key)
                return (uint32_t)(v & CS_TMAP_BYTES_MASK);
        }
    }
    return cs_tmap_lookup(map);
}
CS_NOINLINE uint32_t cs_tmap_lookup(uint64_t map) {
    const cs_tmap_t* t = (const cs_tmap_t*)S.tmaps;
    if (t == 0 || (map & 63u) != 0 || !cs_tmap_readable(map)) return 0;
    bool param = cs_tmap_param(map);
    uint64_t fp = cs_tmap_fingerprint((const uint64_t*)map);
    uint32_t bytes = 0;
    for (uint32_t i = 0; i < CS_TMAP_ENTRIES && t[i].fingerprint; ++i)
        if (t[i].fingerprint == fp) {
            bytes = t[i].bytes;
            break;
        }
    if (param && bytes) cs_tmap_keep(map, bytes);
    return bytes;
}

// (Arguments by value: a reference kept the probe's copy state in local memory, stored and
// loaded again on every call.)
CS_NOINLINE void cs_tensor_record(uint32_t kind, uint32_t site, cs_finding f, uint32_t lo,
                             uint32_t hi, uint32_t moff, uint32_t ph, uint32_t bytes) {
    cs_record_t r = cs_blank(kind, site);
    r.prev_site = f.prev_site;
    r.prev_warp = f.prev_warp;
    r.offset_lo = lo;
    r.offset_hi = hi;
    r.barrier = moff;
    r.phase = ph;
    r.count = bytes;
    cs_record(r);
}

// One tensor load, in two steps: the leader's look at the mbarrier and the map, which
// counts the copy's bytes and phase (and the arrive it carries), then the copy's write
// (by every lane of the call where the tables are in shared memory).
struct cs_tload {
    uint32_t skip;  // 1: the copy would fault
    bool write;  // the copy's write to model (span bytes at off)
    uint32_t off, span, moff, j, ph, bytes;
    cs_finding f;  // a tool note on the copy (out of the window)
};
// A copy through a map not known: the bytes the phase still expects, else up to the end of
// the window; never past a live mbarrier (said in a record).
CS_NOINLINE uint32_t cs_tensor_guess_span(uint32_t slot, uint32_t off, uint32_t bytes,
                                          uint32_t moff, uint32_t ph, uint32_t site) {
    uint32_t end = S.granules * CS_GRANULE_BYTES;
    uint32_t span = bytes ? bytes : (off < end ? end - off : 0);
    if (off >= end) span = 0;
    else if (span > end - off) span = end - off;
    uint32_t g1 = span ? (off + span - 1) / CS_GRANULE_BYTES : 0;
    for (uint32_t g = off / CS_GRANULE_BYTES; span && g <= g1; ++g) {
        uint64_t ww = cs_vc_smem_on() ? 0 : cs_ld64(cs_gent(slot, g));
        if (cs_vc_smem_on() ? cs_vc_smem_is_mbar(slot, g) : (ww >> CS_WW_GEN_SHIFT) == cs_gen_sh &&
                                              ((ww >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_MBAR)) {
            span = g * CS_GRANULE_BYTES > off ? g * CS_GRANULE_BYTES - off : 0;
            break;
        }
    }
    cs_finding none = {0, CS_NO_SITE, CS_NO_WARP};
    cs_tensor_record(CS_TOOL_TENSOR_MAP_UNKNOWN, site, none, off, off + span, moff, ph, span);
    return span;
}

// `arrive`: the mbarrier.arrive.expect_tx of `tx` bytes (site asite) the rewriter carries
// on this copy (instrument/carry.py) is modelled first, as its own probe would have.
// `mask`: a multicast load's ctaMask (0: none); this CTA's part is its copy when the mask
// holds it (its peers' parts are posted to them: multicast.h).
// `held`: where `keep` and the copy lands, the entry's lock is kept and `held` set to the
// entry's index + 1, for the second load of a pair on the same mbarrier; that look is given
// it (a lane's held lock), neither looks the entry up nor takes the lock, gives it back and
// sets `held` to 0.
CS_DEV cs_tload cs_tensor_load_begin(uint32_t slot, uint64_t dst, uint64_t map, uint64_t mbar,
                                     uint32_t site, bool arrive, uint32_t tx_arg, uint32_t asite,
                                     uint32_t mask, bool keep, uint32_t& held) {
    cs_finding none = {0, CS_NO_SITE, CS_NO_WARP};
    cs_tload t = {0, false, 0, 0, 0, 0, 0, 0, none};
    bool mlocal = cs_local((uint32_t)mbar, t.moff);
    bool dlocal = cs_local((uint32_t)dst, t.off);
    if (mask) dlocal = (mask >> cs_ctarank()) & 1u;  // (offsets: the same in every CTA)
    else if (!dlocal)  // another CTA's smem (and mbarrier): not checked
        cs_tensor_record(CS_TOOL_REMOTE_SMEM, site, none, t.off, t.off, t.moff, 0, 0);
    if (arrive && !mlocal)
        cs_mbar_record(CS_TOOL_REMOTE_SMEM, asite, t.moff, 0);
    if (!dlocal && !(arrive && mlocal)) {
        if (held) cs_mbar_unlock(held - 1), held = 0;
        return t;
    }
    uint32_t* e;
    CS_STAMP_PART_AS(look_up, 6);
    const bool locked = held != 0;
    if (locked) {  // (live, and tracked: the first look found it so, and kept the lock)
        t.j = held - 1;
        e = cs_mbar_entry_at(slot, t.j);
    } else {
        {
            CS_PROF(28);
            e = cs_mbar_entry(slot, t.moff, false, t.j);
        }
        if (cs_mbar_untracked(e)) return t;  // (the copy runs; its write is not modelled)
        if (e == 0 || !cs_mbar_live(t.j)) {
            cs_mbar_record(CS_MBARRIER_UNINIT, arrive && mlocal ? asite : site, t.moff, e);
            t.skip = 1;
            return t;
        }
    }
    uint32_t end = S.granules * CS_GRANULE_BYTES, off = t.off;
    {
        CS_PROF(17);
        t.bytes = cs_tmap_bytes(map);  // transaction bytes the copy completes
    }
    bool guessed = t.bytes == 0;
    // One lock for the arrive it carries and for the copy's bytes and phase, before the
    // box is written: the copy instruction runs after this probe, so no wait completes on
    // its bytes before the box has its epochs (the phase may complete here, in the model).
    CS_STAMP(look_up.~cs_stamp_part(); look_up.k = -1;)
    if (!locked) {
        CS_PROF(29);
        CS_STAMP_PART(3);
        cs_mbar_lock(t.j);
    }
    if (arrive) {  // (an arrival below zero would fault: the copy is skipped with it)
        CS_PROF(30);
        CS_STAMP_PART(4);
        uint32_t w = cs_warp();
        bool live = cs_mbar_live(t.j);  // (not invalidated since the look)
        if (!live) cs_mbar_record(CS_MBARRIER_UNINIT, asite, t.moff, e);
        t.skip = live ? cs_mbar_count(e, CS_MB_ARRIVE_EXPECT_TX, tx_arg, 1, asite, t.moff, w,
                                      cs_vis(slot, w))
                      : 1u;
        if (t.skip || !dlocal) {
            cs_mbar_unlock(t.j);
            return t;
        }
    }
    t.ph = e[CS_MB_PHASE];
    int32_t tx = (int32_t)e[CS_MB_TX];
    // Unknown map: the bytes the phase still expects (exact when one copy fills the phase).
    if (guessed) t.bytes = tx > 0 ? (uint32_t)tx : 0;
    {
        CS_PROF(31);
        CS_STAMP_PART(5);
        cs_mbar_copy_landed(e, t.j, t.ph, t.bytes, site, t.moff);
        if (keep) held = t.j + 1;
        else cs_mbar_unlock(t.j), held = 0;
    }
    t.span = guessed ? cs_tensor_guess_span(slot, t.off, t.bytes, t.moff, t.ph, site)
                     : t.bytes;  // bytes it writes
    if (!guessed && (off >= end || t.bytes > end - off))
        t.f = {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};
    else
        t.write = t.span != 0;
    return t;
}

// The copy engine of mbarrier j writes granules [g0, g1] at clock clk: every lane of
// `lanes` calls this, and they write it together. No lane of several calls out of line
// alone: a call from part of a warp splits it (docs/model.md, *Probes called from a
// branch*). Returns its finding (none: kind 0), the same in every lane.
CS_DEV cs_finding cs_copy_write(uint32_t lanes, uint32_t slot, uint32_t g0, uint32_t g1,
                                uint32_t site, uint32_t by, uint32_t clk) {
    CS_PROF(18);
    uint32_t base = S.vsh_base / CS_GRANULE_BYTES;
    cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
    if (cs_vc_smem_on() && g0 < base)  // (cs_engine_write's verdict there)
        return {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};
    if (cs_vc_smem_on() && cs_popc(lanes) > 1)
        return cs_vc_smem_engine_lanes(slot, cs_warp(), g0 - base, g1 - base, site, by, clk,
                                       lanes, nullptr, false).f;
    cs_view v = cs_make_view(slot, cs_warp());
    if (!cs_vc_smem_on()) cs_engine_write_split(lanes, v, g0, g1, site, by, clk, f);
    else cs_engine_write(v, g0, g1, site, by, clk, f);  // (`lanes`: one lane)
    return f;
}

// One tensor store by lane `lane`, run by the lanes `lanes` together, `lead` among them: a
// bulk store of the map's box, so its source is read asynchronously until the warp's bulk
// group is retired by cp.async.bulk.wait_group.read, and generic writes reach it only
// through a proxy fence (cs_bulk_store_one). An unknown map is not checked: guessing the
// source would invent reads.
CS_NOINLINE void cs_tensor_store(uint32_t lanes, uint32_t lead, uint32_t slot, uint64_t src,
                                 uint64_t map, uint32_t lane, uint32_t site) {
    cs_finding none = {0, CS_NO_SITE, CS_NO_WARP};
    uint32_t off;
    cs_local((uint32_t)src, off);  // .shared::cta: this CTA
    uint32_t bytes = cs_bcast(lanes, cs_lane() == lead ? cs_tmap_bytes(map) : 0u, lead);
    if (bytes == 0) {
        if (cs_lane() == lead)
            cs_tensor_record(CS_TOOL_TENSOR_MAP_UNKNOWN, site, none, off, off, 0, 0, 0);
        return;
    }
    if (cs_async_proxy()) cs_bulk_store_one(lanes, lead, slot, cs_warp(), lane, off, bytes, site);
}
