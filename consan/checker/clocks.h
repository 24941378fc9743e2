// consan device checker: vector clocks.
//
// The columns a clock can have non-zero, joins, the ordering rule, and the group
// counters of the asynchronous units (cp.async, bulk stores, wgmma).

CS_DEV uint32_t cs_nwg();
// The columns of a vector clock that can be non-zero in this CTA, as ranges [a, b): its
// warps, their cp.async units, the mbarriers' copy engines, then (where the module has
// them) the bulk-store units, the proxy views, the wgmma units and the cluster's ranks (an
// empty range where the module has none). Loops over them visit only these columns, not
// all nlogical (up to 184); they unroll over the ranges so the bounds stay in registers.
// The ranks' range exists only in the build for modules that reach other CTAs (every
// other build's joins keep seven ranges).
#if defined(CONSAN_MC) || defined(CONSAN_HOST)
#define CS_VC_RANGES 8
#else
#define CS_VC_RANGES 7
#endif
struct cs_cols { uint32_t a[CS_VC_RANGES], b[CS_VC_RANGES]; };

// The shortest circular run of entry indices that covers the set bits of `used` (entries
// are hashed by offset, so a CTA's few mbarriers usually take a short run, which may wrap
// past the last index): its start | length << 8. Computed again only when the mask changes.
CS_DEV uint32_t cs_mbar_arc(uint32_t used) {
    if (used == 0 || used == 0xFFFFFFFFu) return used ? 32u << 8 : 0u;
    uint32_t gap = 0, start = 0;  // the longest run of clear bits, and the set bit after it
    for (uint32_t i = 0; i < 32; ++i) {
        if (!((used >> i) & 1u)) continue;
        uint32_t r = 1;
        while (!((used >> ((i + 32 - r) % 32)) & 1u)) ++r;
        if (r - 1 > gap) gap = r - 1, start = i;
    }
    return start | (32 - gap) << 8;
}
CS_DEV uint32_t cs_mbar_arc_now(uint32_t used) {
    uint64_t c = *(volatile uint64_t*)&cs_mbar_arc_sh;
    if ((uint32_t)c == used) return (uint32_t)(c >> 32);
    uint32_t arc = cs_mbar_arc(used);
    *(volatile uint64_t*)&cs_mbar_arc_sh = (uint64_t)arc << 32 | used;
    return arc;
}

// The ranks' columns a clock can have non-zero: one per CTA of the cluster (rank r's is
// TID_REMOTE + r), not all REMOTE_RANKS. A two-CTA cluster's joins, copies and clears then
// skip three of the four 16-byte chunks the ranks took: on an H200 (A/B, three rounds) the
// clustered ring 1.372 -> 1.334 ms by the device's time alone.
CS_DEV uint32_t cs_ranks_cols() {
    uint32_t n = cs_cluster_ranks();
    return n < CS_REMOTE_RANKS ? n : CS_REMOTE_RANKS;
}

CS_DEV cs_cols cs_vc_cols(bool all) {
    uint32_t nw = S.nwarps, L = S.nlogical;
    // the copy engines of the mbarrier entries in use (an arc of the table, maybe wrapping:
    // two ranges); the other engines' columns are 0 in every clock (cleared at CTA begin
    // and at init: `all`) until their entry is made
    uint32_t arc = all ? 32u << 8 : cs_mbar_arc_now(*(volatile uint32_t*)&cs_mbar_used_sh);
    uint32_t e0 = arc & 0xFFu, e1 = e0 + (arc >> 8), e2 = e1 > 32 ? e1 - 32 : 0;
    e1 = e1 > 32 ? 32 : e1;
    // and only the agents the module has (cp.async units, bulk-store units and proxy views)
    uint32_t ncp = (S.flags & CS_FLAG_CP_ASYNC) ? nw : 0u, nbulk = (S.flags & CS_FLAG_BULK_STORES) ? nw : 0u;
    const uint32_t base[8] = {0, CS_AGENT_CPASYNC, CS_AGENT_MBAR + e0, CS_AGENT_MBAR,
                              CS_AGENT_BULK, CS_AGENT_PROXY, CS_AGENT_WGMMA, CS_TID_REMOTE};
    const uint32_t width[8] = {nw, ncp, e1 - e0, e2, nbulk, nbulk, cs_nwg(),
                               (S.flags & CS_FLAG_MULTICAST) ? cs_ranks_cols() : 0u};
    cs_cols c;
#pragma unroll
    for (uint32_t k = 0; k < CS_VC_RANGES; ++k) {
        c.a[k] = base[k] < L ? base[k] : L;
        c.b[k] = base[k] + width[k] < L ? base[k] + width[k] : L;
    }
    return c;
}

// The 16-byte chunks of a clock that hold a column in use, bit q for columns 4q..4q+3 (at
// most 184 columns: 46 chunks): the ranges of cs_vc_cols with no entry in use when the CTA
// begins, then each entry's engine column or-ed in when the entry is made (the mask only
// grows, as the entries in use do). Joins and clears walk its bits instead of computing
// the ranges and picking each chunk out of them (on the H100: the TMA ring's tensor probe
// 18.9k -> 15.4k cycles a call, its successful waits 4.4k -> 3.7k; the ring 0.263 / 0.270
// -> 0.242 / 0.245 ms).
CS_DEV uint64_t cs_cols_chunk_mask(const cs_cols& c) {
    uint64_t m = 0;
#pragma unroll
    for (uint32_t k = 0; k < CS_VC_RANGES; ++k) {
        if (c.b[k] <= c.a[k]) continue;
        uint32_t q0 = c.a[k] / 4, n = (c.b[k] + 3) / 4 - q0;
        m |= (n >= 64 ? ~0ull : (1ull << n) - 1) << q0;
    }
    return m;
}
CS_DEV uint64_t cs_vc_chunks() { return *(volatile uint64_t*)&cs_shv.vc_chunks; }
CS_DEV void cs_vc_chunks_begin() { cs_shv.vc_chunks = cs_cols_chunk_mask(cs_vc_cols(false)); }
CS_DEV void cs_vc_chunks_add_engine(uint32_t j) {
    if (CS_AGENT_MBAR + j < S.nlogical) cs_or64(&cs_shv.vc_chunks, 1ull << ((CS_AGENT_MBAR + j) / 4));
}

// The columns of c as one dense run: the r-th of cs_cols_count(c) is cs_cols_at(c, r).
// A loop that spreads a clock over a warp's lanes then takes one trip for up to 32
// columns, where a loop per range ran its set-up and its dependent loads once per range
// (the CTA barrier's wait: 438 warp instructions a call in the TMA reduction kernel of
// the Triton corpus, ncu on the H100).
CS_DEV uint32_t cs_cols_count(const cs_cols& c) {
    uint32_t t = 0;
#pragma unroll
    for (uint32_t k = 0; k < CS_VC_RANGES; ++k) t += c.b[k] - c.a[k];
    return t;
}
CS_DEV uint32_t cs_cols_at(const cs_cols& c, uint32_t r) {
    uint32_t u = 0;
#pragma unroll
    for (uint32_t k = 0; k < CS_VC_RANGES; ++k) {  // (selects: no branch per range)
        uint32_t w = c.b[k] - c.a[k];
        bool in = r < w;
        u = in ? c.a[k] + r : u;
        r = in ? 0xFFFFFFFFu : r - w;  // (found: never below a later width)
    }
    return u;
}

// A write epoch's tid TID_PEER + w: warp w of another CTA of the cluster, its clock that
// CTA's cluster barrier generation (dsmem.h). Never a clock column.
CS_DEV bool cs_is_peer_tid(uint32_t t) { return t - CS_TID_PEER < CS_MAX_WARPS; }
CS_DEV bool cs_peer_write_seen(const uint32_t* mine, uint32_t w, uint32_t clock);  // dsmem.h

CS_DEV bool cs_ordered(const uint32_t* mine, uint32_t w, uint32_t t, uint32_t clock) {
#if (defined(CONSAN_MC) || defined(CONSAN_HOST)) && !defined(CONSAN_PSH) && !defined(CONSAN_VSH)
    if (cs_is_peer_tid(t)) return cs_peer_write_seen(mine, w, clock);
#endif
    return t == w || mine[t] >= clock;
}
// The kind of an unordered earlier write by t: a warp's, here or in a peer CTA (race.*),
// or an async agent's (async.pending-write).
CS_DEV bool cs_async_agent(uint32_t t) { return t >= CS_AGENT_CPASYNC && !cs_is_peer_tid(t); }
// A write over writer `by`'s own earlier write needs no judgment, but for a warp's
// cp.async unit: its copies are not ordered among themselves until the issuing warp waits
// for them, so a cp.async over the bytes of an earlier cp.async of the same warp still in
// flight is judged like any other write (async.pending-write). (A copy engine's box over
// its own earlier box is not judged: its boxes complete in phase order on one mbarrier.)
CS_DEV bool cs_own_write(uint32_t t, uint32_t by) {
    return t == by && (by < CS_AGENT_CPASYNC || by >= CS_AGENT_CPASYNC + CS_MAX_WARPS);
}

// Whose read it is: the reader's proxy, and where the writer's last fence.proxy.async is.
#define CS_PROXY_NONE 0u   // a warp's read through the generic proxy
#define CS_PROXY_BULK 1u   // a bulk-store unit's read: the writer's fence column
#define CS_PROXY_WGMMA 2u  // a wgmma unit's read: the writer's fence word

// A read judged against the last write of its granule, in every table representation
// (each decodes its own epoch): `written` (since the CTA began), a live mbarrier's mark,
// the writer t and its clock c. The read is issued by warp w (clock `mine`), through
// `proxy`; `slot` only for CS_PROXY_WGMMA. uninit.read, mbarrier.data-access, then
// race.raw (async.pending-write for an async agent's write) when the write does not
// happen before the reader, then proxy.missing-fence when an async-proxy reader sees a
// warp's generic write its writer did not fence since. The write's site (*ws) is loaded
// only for a finding.
CS_DEV cs_finding cs_judge_read(bool written, bool mbar, uint32_t t, uint32_t c,
                                const uint32_t* ws, const uint32_t* mine, uint32_t w,
                                uint32_t slot, uint32_t proxy) {
    if (!written) return {CS_UNINIT_READ, CS_NO_SITE, CS_NO_WARP};
    if (mbar) return {CS_MBARRIER_DATA_ACCESS, cs_ld32(ws), t};
    if (!cs_ordered(mine, w, t, c))
        return {cs_async_agent(t) ? CS_ASYNC_PENDING_WRITE : CS_RACE_RAW, cs_ld32(ws), t};
    if (proxy != CS_PROXY_NONE && t < CS_MAX_WARPS) {
        uint32_t fenced = proxy == CS_PROXY_BULK ? mine[CS_AGENT_PROXY + t]
                                                 : cs_ld32(&cs_cta(slot)[CS_CTA_PROXY_FENCE + t]);
        if (fenced < c) return {CS_PROXY_MISSING_FENCE, cs_ld32(ws), t};
    }
    return {0, CS_NO_SITE, CS_NO_WARP};
}

CS_DEV cs_u4 cs_u4_max(cs_u4 a, cs_u4 b) {
    return {a.x > b.x ? a.x : b.x, a.y > b.y ? a.y : b.y, a.z > b.z ? a.z : b.z,
            a.w > b.w ? a.w : b.w};
}

// dst[u] = max(dst[u], src[u]) over those columns. (Plain loads: the caller holds the lock
// every writer of dst holds, or dst is its own warp's clock.) d and s are 16-byte aligned:
// clock slots and warps' clocks are (abi.vsh_bytes aligns them in shared memory too).
CS_DEV cs_u4 cs_vc_ld4(const uint32_t* p) {
#ifdef CONSAN_HOST
    cs_al16((cs_sp)p);
    return {p[0], p[1], p[2], p[3]};
#else
    uint4 v = *(const uint4*)p;
    return {v.x, v.y, v.z, v.w};
#endif
}
CS_DEV void cs_vc_st4(uint32_t* p, const uint32_t* v) {
#ifdef CONSAN_HOST
    cs_al16((cs_sp)p);
    p[0] = v[0], p[1] = v[1], p[2] = v[2], p[3] = v[3];
#else
    *(uint4*)p = make_uint4(v[0], v[1], v[2], v[3]);
#endif
}
// Empty a clock slot's columns in use, in whole 16-byte chunks (an init empties every
// column: cs_mbar_init_slots). Inline: a call from the mbarrier probe's branches would cost
// it a convergence barrier kept across the call.
// (The chunk masks are walked as two 32-bit words: a 64-bit find-first-set and clear ran
// about twelve instructions a chunk, 72 a TMA load's probe in the TMA ring, ncu on the H100.)
CS_DEV void cs_vc_clear(uint32_t* dst) {
    const uint32_t zero[4] = {0, 0, 0, 0};
    const uint64_t m = cs_vc_chunks();
#pragma unroll
    for (uint32_t h = 0; h < 2; ++h)
        for (uint32_t k = (uint32_t)(m >> (32 * h)); k; k &= k - 1)
            cs_vc_st4(dst + 4 * (32 * h + cs_ffs(k) - 1), zero);
}

// dst = max(dst, src) by one lane, in whole 16-byte chunks: a column outside the ranges
// is 0 in every clock, so its maximum is 0 again, and no clock holds a warp's own column
// ahead of the warp's own clock -- four maxima and a store where one grew, no check per
// column. Two chunks a trip, their four loads ahead of any store.
CS_DEV void cs_vc_join_chunk(uint32_t* d, cs_u4 x, cs_u4 y) {  // d holds y: store max(x, y)
    if ((x.x > y.x) | (x.y > y.y) | (x.z > y.z) | (x.w > y.w)) {
        cs_u4 m = cs_u4_max(x, y);
        const uint32_t v[4] = {m.x, m.y, m.z, m.w};
        cs_vc_st4(d, v);
    }
}
CS_DEV void cs_vc_join(uint32_t* __restrict__ dst, const uint32_t* __restrict__ src) {
    const uint64_t m = cs_vc_chunks();
#pragma unroll
    for (uint32_t h = 0; h < 2; ++h) {
        for (uint32_t k = (uint32_t)(m >> (32 * h)); k;) {
            uint32_t u0 = 4 * (32 * h + cs_ffs(k) - 1);
            k &= k - 1;
            uint32_t u1 = k ? 4 * (32 * h + cs_ffs(k) - 1) : u0;
            k &= k - 1;  // (0 stays 0)
            cs_u4 x0 = cs_vc_ld4(src + u0), y0 = cs_vc_ld4(dst + u0);
            cs_u4 x1 = cs_vc_ld4(src + u1), y1 = cs_vc_ld4(dst + u1);
            cs_vc_join_chunk(dst + u0, x0, y0);
            cs_vc_join_chunk(dst + u1, x1, y1);  // (u1 = u0: the same maximum again)
        }
    }
}

// dst = src over the chunks in use, where dst holds only zeros (a slot no release reached
// since it was emptied): the join's result without loading dst.
CS_DEV void cs_vc_copy(uint32_t* __restrict__ dst, const uint32_t* __restrict__ src) {
    const uint64_t m = cs_vc_chunks();
#pragma unroll
    for (uint32_t h = 0; h < 2; ++h) {
        for (uint32_t k = (uint32_t)(m >> (32 * h)); k; k &= k - 1) {
            uint32_t u = 4 * (32 * h + cs_ffs(k) - 1);
            cs_u4 x = cs_vc_ld4(src + u);
            const uint32_t v[4] = {x.x, x.y, x.z, x.w};
            cs_vc_st4(dst + u, v);
        }
    }
}

// *p = max(*p, v) without a load on the caller's path (a clock column the caller's lock
// guards; the lock's release orders it before whatever the next holder does). Where the
// line is read again soon it costs that reader an L1 miss: an arrive's whole clock join
// made of these slowed the TMA ring's waits 3,342 -> 3,732 cycles on the H100.
CS_DEV void cs_red_max(uint32_t* p, uint32_t v) {
#ifdef CONSAN_HOST
    if (*p < v) *p = v;
#else
    asm volatile("red.relaxed.cta.global.max.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
#endif
}


// Group bookkeeping of a warp's bulk-store or wgmma unit (`counter`: CS_UNIT_*), by the
// leader lane: `commit` closes the open group (cs_commits_sh counts them); `wait` retires
// all but the newest n, joining the unit's clock (column `unit`) up to them. The unit's
// clock counts groups, so a wait never walks shadow memory.
CS_DEV void cs_unit_groups(uint32_t counter, uint32_t unit, bool commit, bool wait, uint32_t n,
                           uint32_t site) {
    uint32_t slot = cs_slot_sh;
    uint32_t active = cs_group(((uint64_t)site << 32) | n, (uint64_t)commit << 1 | wait);
    uint32_t w = cs_warp();
    if (cs_lane() == (uint32_t)(cs_ffs(active) - 1)) {
        if (commit) cs_commits_sh(counter, w) += 1;
        if (wait) {
            uint32_t c = cs_commits_sh(counter, w), done = c > n ? c - n : 0;
            uint32_t* mine = cs_vis(slot, w);
            if (done > mine[unit]) mine[unit] = done;
        }
        cs_fence();
    }
    cs_syncwarp(active);
}
