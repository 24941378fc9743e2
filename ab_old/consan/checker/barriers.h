// consan device checker: named barriers (bar.sync, bar.arrive, barrier.sync).
//
// A generation joins its arrivers' clocks into a slot; each waiter joins it back.


// ------------------------------------------------------------- barriers

// Word of a named barrier: gen:32 | count_warps:16 (0 = all) | arrived:16.
#define CS_BW_ARRIVED(w) ((uint32_t)((w) & 0xFFFFu))
#define CS_BW_COUNT(w) ((uint32_t)(((w) >> 16) & 0xFFFFu))
#define CS_BW_GEN(w) ((uint32_t)((w) >> 32))
#define CS_BW_COMPLETING 0xFFFFu

// Close generation `gen` of barrier b (caller won the right to): clear the
// clock slot the next generation will use, then open it.
CS_DEV void cs_bar_complete(uint32_t slot, uint32_t b, uint32_t gen) {
    uint32_t* next = cs_barvc(slot, b, (gen + 1) & 1);
    cs_cols c = cs_vc_cols(false);
#pragma unroll
    for (uint32_t k = 0; k < CS_VC_RANGES; ++k)
        for (uint32_t u = c.a[k]; u < c.b[k]; ++u) cs_bvc_st(&next[u], 0);
    cs_fence();
    cs_bw_st(cs_barword(slot, b), (uint64_t)(gen + 1) << 32);
    cs_fence();
}

// Whether word `seen` shows a generation that `expected` arrivals close, not closing yet.
CS_DEV bool cs_bar_complete_now(uint64_t seen, uint32_t expected) {
    uint32_t arrived = CS_BW_ARRIVED(seen);
    return arrived != 0 && arrived != CS_BW_COMPLETING && arrived >= expected;
}

// Try to close the current generation if `expected` warps have arrived.
CS_DEV void cs_bar_try_complete(uint32_t slot, uint32_t b, uint64_t seen, uint32_t expected) {
    if (!cs_bar_complete_now(seen, expected)) return;
    uint64_t claim = (seen & ~0xFFFFull) | CS_BW_COMPLETING;
    if (cs_cas64(cs_barword(slot, b), seen, claim) == seen)
        cs_bar_complete(slot, b, CS_BW_GEN(seen));
}

// Barrier 0 with FLAG_BAR0_ROWS (the module syncs every thread on it, and on nothing
// else): no count to keep, no slot to join into and clear -- each warp copies its clock
// to its row of the generation's parity; after the barrier each reads every row. The
// generation is the warp's count of CTA-wide barriers passed (every warp passes each).
// A row is written again two generations later, after every warp has read it (it passed
// the barrier in between); a warp that has exited leaves an older clock, which adds
// nothing.
CS_DEV bool cs_bar0_rows(uint32_t b) { return (S.flags & CS_FLAG_BAR0_ROWS) && b == 0; }
// A named barrier's id (the hardware takes it mod 16), or the cluster barrier's word.
CS_DEV uint32_t cs_bar_index(uint32_t b) { return b == CS_CLUSTER_BARRIER ? b : b & 15u; }
CS_DEV uint32_t* cs_bar0_row(uint32_t gen, uint32_t w) {
    return cs_vc_smem_layout_sh.rows + ((gen & 1u) * S.nwarps + w) * S.nlogical;
}
CS_DEV uint32_t cs_bar0_arrive(uint32_t active, uint32_t w, uint32_t lane, uint32_t leader) {
    uint32_t gen = *(volatile uint32_t*)&cs_phase_sh[w];
    uint32_t* mine = cs_vis(cs_slot_sh, w);
    uint32_t* row = cs_bar0_row(gen, w);
    uint32_t rank = cs_popc(active & ((1u << lane) - 1u)), n = cs_popc(active);
    cs_cols c = cs_vc_cols(false);
    for (uint32_t r = rank, t = cs_cols_count(c); r < t; r += n) {
        uint32_t u = cs_cols_at(c, r);
        row[u] = mine[u];
    }
    cs_fence();
    cs_syncwarp(active);
    if (lane == leader) {
        mine[w] = mine[w] + 1;  // accesses after the release are not covered by it
        cs_clock_sh[w] = mine[w];
    }
    cs_syncwarp(active);
    return gen | CS_TOKEN_CTA_WIDE;
}
CS_DEV void cs_bar0_wait(uint32_t gen, uint32_t active, uint32_t w, uint32_t lane) {
    uint32_t* mine = cs_vis(cs_slot_sh, w);
    const uint32_t* rows = cs_bar0_row(gen, 0);
    const uint32_t nw = S.nwarps, L = S.nlogical;
    uint32_t rank = cs_popc(active & ((1u << lane) - 1u)), n = cs_popc(active);
    cs_cols c = cs_vc_cols(false);
    for (uint32_t r = rank, t = cs_cols_count(c); r < t; r += n) {
        uint32_t u = cs_cols_at(c, r), v = 0;
#pragma unroll 4
        for (uint32_t q = 0; q < nw; ++q) {  // (four rows' loads in flight)
            uint32_t x = rows[q * L + u];
            v = x > v ? x : v;
        }
        if (v > mine[u] && u != w) mine[u] = v;
    }
    cs_fence();
    if (lane == (uint32_t)(cs_ffs(active) - 1)) cs_phase_sh[w] += 1;
    cs_syncwarp(active);
}

// Release: count this warp's arrival and join its clock into the generation's slot.
CS_DEV uint32_t cs_bar_arrive(uint32_t b, uint32_t count, uint32_t site, uint32_t mode) {
    uint32_t slot = cs_slot_sh;
    uint32_t active = cs_group(((uint64_t)site << 32) | count, b);
    if (mode & CS_BAR_ALIGNED) {
        // An aligned barrier is one arrival of the whole warp: lanes still finishing a
        // divergent branch must reach it before the warp's clock is published.
        active = *(volatile uint32_t*)&cs_lanes_sh[cs_warp()];
        cs_syncwarp(active);
    }
    uint32_t lane = cs_lane();
    uint32_t leader = cs_ffs(active) - 1;
    uint32_t w = cs_warp();
    b = cs_bar_index(b);
    if (cs_bar0_rows(b) && !cs_phase_mode()) return cs_bar0_arrive(active, w, lane, leader);
    uint32_t cw = count / 32;  // thread count -> warps (0 = every live warp)
    uint64_t old = 0;
    if (lane == leader) {
        old = cs_add64(cs_barword(slot, b), 1ull);
        if (CS_BW_ARRIVED(old) == 0 && cw) cs_or64(cs_barword(slot, b), (uint64_t)cw << 16);
    }
    uint32_t gen = cs_bcast(active, CS_BW_GEN(old), leader);
    uint32_t* vc = cs_barvc(slot, b, gen & 1);
    uint32_t* mine = cs_vis(slot, w);
    uint32_t rank = cs_popc(active & ((1u << lane) - 1u));
    uint32_t n = cs_popc(active);
    // A relaxed arrival releases nothing, unless the warp made a cluster-scope fence
    // before it: then what the warp did up to that fence (and what it had acquired).
    uint32_t fenced = (mode & CS_BAR_RELAXED) ? cs_cta(slot)[CS_CTA_CLUSTER_FENCE + w] : 0u;
    if (cs_phase_mode()) {
        cs_phase_clear_next(slot, w, active, lane);
    } else if (!(mode & CS_BAR_RELAXED) || fenced) {
        cs_cols c = cs_vc_cols(false);
        for (uint32_t r = rank, t = cs_cols_count(c); r < t; r += n) {
            uint32_t u = cs_cols_at(c, r);
            uint32_t v = (fenced && u == w) ? fenced : mine[u];
            if (v) cs_max32(&vc[u], v);
        }
    }
    cs_fence();
    cs_syncwarp(active);
    if (lane == leader) {
        mine[w] = mine[w] + 1;  // accesses after the release are not covered by it
        cs_clock_sh[w] = mine[w];
        uint32_t arrived = CS_BW_ARRIVED(old) + 1;
        uint32_t expected = cw ? cw : *(volatile uint32_t*)&cs_livew_sh;
        if (arrived >= expected)
            cs_bar_try_complete(slot, b, cs_bw_ld(cs_barword(slot, b)), expected);
    }
    cs_syncwarp(active);
    (void)site;
    return gen | (cw == 0 ? CS_TOKEN_CTA_WIDE : 0u);  // bit 31: every live warp takes part
}

// fence.acq_rel / fence.sc of cluster scope or wider, membar.gl/.sys (after it), in
// modules with a relaxed cluster arrival: keep the warp's clock, which its
// accesses so far carry, for its next relaxed cluster arrival to release, and start a new
// one so that later accesses are not covered.
CS_DEV void cs_cluster_fence(uint32_t slot, uint32_t site) {
    if (cs_phase_mode()) return;
    uint32_t active = cs_group(site, 2);
    uint32_t w = cs_warp();
    if (cs_lane() == (uint32_t)(cs_ffs(active) - 1)) {
        uint32_t* mine = cs_vis(slot, w);
        cs_st32(&cs_cta(slot)[CS_CTA_CLUSTER_FENCE + w], mine[w]);
        mine[w] += 1;
        cs_clock_sh[w] = mine[w];
        cs_fence();
    }
    cs_syncwarp(active);
}

// Acquire: join the generation's slot into this warp's clock.
CS_DEV void cs_bar_wait(uint32_t gen, uint32_t b, uint32_t site) {
    uint32_t slot = cs_slot_sh;
    uint32_t active = cs_group(((uint64_t)site << 32) | gen, b);
    uint32_t lane = cs_lane();
    uint32_t w = cs_warp();
    b = cs_bar_index(b);
    if (cs_bar0_rows(b) && !cs_phase_mode()) return cs_bar0_wait(gen, active, w, lane);
    const uint32_t* vc = cs_barvc(slot, b, gen & 1);
    uint32_t* mine = cs_vis(slot, w);
    uint32_t rank = cs_popc(active & ((1u << lane) - 1u));
    uint32_t n = cs_popc(active);
    cs_cols c = cs_vc_cols(false);
    for (uint32_t r = rank, t = cs_phase_mode() ? 0u : cs_cols_count(c); r < t; r += n) {
        uint32_t u = cs_cols_at(c, r);
        uint32_t v = cs_bvc_ld(&vc[u]);
        if (v > mine[u] && u != w) mine[u] = v;
    }
    cs_fence();
    if ((gen & CS_TOKEN_CTA_WIDE) && lane == (uint32_t)(cs_ffs(active) - 1)) cs_phase_sh[w] += 1;
    cs_syncwarp(active);
    (void)site;
}
