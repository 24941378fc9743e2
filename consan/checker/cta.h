// consan device checker: a CTA's beginning and end.
//
// Claiming a slot, starting a generation, clearing the tables; a thread's exit.

// ------------------------------------------------------------- CTA life

CS_DEV bool cs_vc_smem_on();
CS_DEV void cs_vc_smem_layout_common();
CS_DEV void cs_vc_smem_layout_slot(uint32_t slot);

CS_DEV uint32_t cs_claim_slot() {
    uint32_t n = S.nslots;
    uint32_t start = cs_cta_linear() % n;
    uint32_t* busy = (uint32_t*)S.slot_busy;
    for (uint32_t pass = 0; pass < 1000000u; ++pass) {
        for (uint32_t i = 0; i < n; ++i) {
            uint32_t s = (start + i) % n;
            if (cs_gcas32(&busy[s], 0, 1) == 0) return s;
        }
    }
    return CS_NO_SLOT;
}

// The CTA's words in shared memory that no slot decides, by threads i of n: its small
// tables reset, the layout of its granule tables (thread 0). A warp other than the leader's
// writes them while the leader claims a slot (cs_begin_leader), where the leader wrote them
// after its claim, one after another. Measured on an H200 (A/B, three rounds, the device's
// time alone): the TMA ring 0.135 -> 0.131 ms, its begin probe 17.7k -> 13.2k cycles; the
// other bench_async rows within 0.6%.
CS_DEV void cs_begin_resets(uint32_t i, uint32_t n) {
    if (i == 0) {
        if (cs_vc_smem_on()) cs_vc_smem_layout_common();
        cs_mbar_used_sh = 0;
        cs_mbar_arc_sh = 0;
        cs_vc_chunks_begin();
        cs_shv.idem_lock = 0;
        cs_shv.ending = 0;
        cs_shv.mbar_full = 0;
        cs_shv.tmap_claimed = 0;
        cs_shv.init_run = 0;
    }
    cs_clear_store_tags(i, n);
    for (uint32_t j = i; j < CS_MBARRIERS; j += n) cs_mlock_sh[j] = cs_mkey_sh[j] = cs_mlive_sh[j] = 0;
    for (uint32_t k = i; k < CS_TMAP_CACHE; k += n) cs_shv.tmap_at[k] = 0;
}

// Run by one thread: claim a slot, start a new generation, write the slot's words (with
// `resets`: those of cs_begin_resets too).
CS_DEV void cs_begin_leader(uint32_t nthreads, bool resets = true) {
    uint32_t slot;
    {
        CS_STAMP_PART(14);
        slot = cs_claim_slot();
    }
    cs_gadd32(&((cs_log_header_t*)S.log)->ctas_begun, 1);
    if (slot == CS_NO_SLOT) {
        cs_record(cs_blank(CS_TOOL_NO_SLOT, CS_NO_SITE));
        cs_slot_sh = CS_NO_SLOT;
        return;
    }
    // The previous owner may have run on another SM: go through L2, not this SM's L1.
    uint32_t gen;
    {
        CS_STAMP_PART(15);
        gen = (cs_gadd32(&((uint32_t*)S.slot_gen)[slot], 1u) + 1u) & 0xFFFFu;
        if (gen == 0) gen = (cs_gadd32(&((uint32_t*)S.slot_gen)[slot], 1u) + 1u) & 0xFFFFu;
    }
    uint32_t* cta = cs_cta(slot);
    uint32_t nw = (nthreads + 31) / 32;
    cs_livew_sh = nw;
#ifdef CONSAN_HOST
    cta[CS_CTA_LIVE_THREADS] = nw;  // the host drives one lane per warp
#else
    cta[CS_CTA_LIVE_THREADS] = nthreads;
#endif
    if (resets) cs_begin_resets(0, 1);
    if (cs_vc_smem_on()) cs_vc_smem_layout_slot(slot);  // (its barrier words are cleared with the tables)
    else for (uint32_t b = 0; b < CS_BARRIER_WORDS; ++b) *cs_barword(slot, b) = 0;
    cs_slot_sh = slot;
    cs_gen_sh = gen;
}


// Words [a, b) of p set to v by threads i of n: 16-byte stores between the aligned ends
// (a CTA's start clears its tables in shared memory: every thread of it waits for this).
CS_DEV void cs_fill_words(uint32_t* p, uint32_t a, uint32_t b, uint32_t v, uint32_t i,
                          uint32_t n) {
#ifdef CONSAN_HOST
    for (uint32_t k = a + i; k < b; k += n) p[k] = v;
#else
    uint32_t a4 = a + ((0u - (uint32_t)((unsigned long long)(p + a) >> 2)) & 3u);
    a4 = a4 < b ? a4 : b;
    uint32_t b4 = a4 + ((b - a4) & ~3u);
    for (uint32_t k = a + i; k < a4; k += n) p[k] = v;
    for (uint32_t k = b4 + i; k < b; k += n) p[k] = v;
    uint4* q = (uint4*)(p + a4);
    const uint4 vv = make_uint4(v, v, v, v);
    for (uint32_t k = i; k < (b4 - a4) / 4; k += n) q[k] = vv;
#endif
}

// Run by every thread (i = thread index, n = threads of the block, nthreads of them live:
// the host drives one lane per warp): the CTA's per-warp words, clocks, barrier slots,
// bitmaps.
CS_DEV void cs_begin_clear(uint32_t slot, uint32_t i, uint32_t n, uint32_t nthreads) {
    uint32_t L = S.nlogical;
    uint32_t* cta = cs_cta(slot);
    if (i == 0) cta[CS_CTA_REMOTE_RELEASES] = cta[CS_CTA_PEER_GEN] = 0;
    for (uint32_t w = i; w < CS_MAX_WARPS; w += n) {
        cta[CS_CTA_CPASYNC_COMMITS + w] = 0;
        cs_cpticks_sh[w] = 0;
        cta[CS_CTA_SPIN_PHASE + w] = 0;
        cs_commits_sh(CS_UNIT_BULK, w) = 0;
        cs_commits_sh(CS_UNIT_WGMMA, w) = 0;
        cta[CS_CTA_PROXY_FENCE + w] = 0;
        cta[CS_CTA_CLUSTER_FENCE + w] = 0;
        cta[CS_CTA_CLUSTER_WAITS + w] = 0;
        cta[CS_CTA_CLUSTER_ARRIVES + w] = 0;
        for (uint32_t k = 0; k < CS_CLUSTER_RING; ++k) cta[CS_CTA_CLUSTER_RING + w * CS_CLUSTER_RING + k] = 0;
        cta[CS_CTA_REMOTE_MADE + w] = 0;
#ifdef CONSAN_HOST
        cs_lanes_sh[w] = w < (nthreads + 31) / 32 ? 1u : 0u;
#else
        uint32_t lanes = nthreads > w * 32 ? nthreads - w * 32 : 0;
        cs_lanes_sh[w] = lanes >= 32 ? 0xFFFFFFFFu : (1u << lanes) - 1u;
#endif
        cs_clock_sh[w] = 1, cs_phase_sh[w] = 1;
    }
    if (!cs_vc_smem_on()) {
        uint32_t* vis = cs_vis(slot, 0);
        for (uint32_t k = i; k < CS_MAX_WARPS * L; k += n) vis[k] = (k / L == k % L) ? 1u : 0u;
    }
    // The barriers' clock slots: only the columns a clock can ever have (no join reads
    // another), a column per thread and a slot per thread that shares it (clearing all
    // nlogical columns was 45 stores a thread of a 128-thread CTA, half its begin).
    uint32_t* bvc = (uint32_t*)S.barvc + (uint64_t)slot * CS_BARRIER_WORDS * 2 * L;
    cs_cols c = cs_vc_cols(true);
    uint32_t t = cs_cols_count(c), share = t && n >= t ? n / t : 1u;  // threads a column
    for (uint32_t k = i; k < share * t; k += n)  // (fewer threads than columns: several each)
        for (uint32_t s = k / t, u = cs_cols_at(c, k % t); s < CS_BARRIER_WORDS * 2; s += share)
            bvc[s * L + u] = 0;
    if (cs_vc_smem_on()) {  // the CTA's own shared memory: cleared, no generation tags
        // In a module with copy-engine writes every block starts held whole with the epoch
        // 0 (never written): the first copy into a block then takes one word, not a look at
        // 32 epochs (cs_vc_smem_copy_run). Elsewhere its granules start with the epoch 0
        // themselves (abi.FLAG_COPY_WRITES). The warps' clocks start with each warp's own
        // column at 1.
        uint32_t* p = (uint32_t*)cs_smem_tables();
        uint32_t bt0 = (uint32_t)(cs_vc_smem_layout_sh.BT - cs_vc_smem_layout_sh.W) / 4, bt1 = bt0 + cs_vc_smem_layout_sh.nb;
        uint32_t v0 = (uint32_t)(cs_vc_smem_layout_sh.vis - p), v1 = v0 + S.nwarps * L;
        cs_fill_words(p, 0, bt0, 0u, i, n);
        cs_fill_words(p, bt0, bt1, (S.flags & CS_FLAG_COPY_WRITES) ? CS_BT_WHOLE : 0u, i, n);
        cs_fill_words(p, bt1, v0, 0u, i, n);
        for (uint32_t k = v0 + i; k < v1; k += n) p[k] = (k - v0) % (L + 1) == 0 ? 1u : 0u;
        cs_fill_words(p, v1, S.psh_bytes / 4, 0u, i, n);
    }
    if (cs_box_summary_on()) {
        uint32_t* bs = cs_box_summary(slot, 0);
        for (uint32_t k = i; k < cs_box_summary_blocks() * S.bsum_words; k += n) bs[k] = 0;
    }
    if (cs_phase_mode()) {
        uint32_t* bm = cs_readbits(slot, 0, 0);
        uint32_t words = 2 * S.nwarps * ((S.granules + 31) / 32);
        for (uint32_t k = i; k < words; k += n) bm[k] = 0;
    }
}

// ------------------------------------------------------------- exits

CS_DEV void cs_early_exit_check(uint32_t slot, uint32_t w, uint32_t site);  // dsmem.h

CS_DEV void cs_thread_exit(uint32_t site) {
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return;
    uint32_t active = cs_group(site, 0);
    uint32_t lane = cs_lane();
    if (lane != (uint32_t)(cs_ffs(active) - 1)) return;
    uint32_t n = cs_popc(active);
    uint32_t* cta = cs_cta(slot);
    uint32_t w = cs_warp();
    if ((cs_and32(&cs_lanes_sh[w], ~active) & ~active) == 0) {
        // The whole warp is gone: barriers waiting for "every live warp" may now be complete.
        uint32_t live = cs_add32(&cs_livew_sh, (uint32_t)-1) - 1;
        cs_fence();
        // (every word loaded and tested first, into a mask of those this exit may complete:
        // one after another behind each test, the loads were most of an exit; kept in an
        // array, they went to local memory)
        uint32_t todo = 0;
#pragma unroll
        for (uint32_t b = 0; b < CS_BARRIER_WORDS; ++b) {  // (the cluster barrier's too)
            uint64_t seen = cs_bw_ld(cs_barword(slot, b));
            if (CS_BW_COUNT(seen) == 0 && cs_bar_complete_now(seen, live)) todo |= 1u << b;
        }
        for (; todo; todo &= todo - 1) {
            uint32_t b = cs_ffs(todo) - 1;
            cs_bar_try_complete(slot, b, cs_bw_ld(cs_barword(slot, b)), live);
        }
    }
    if (cs_add32(&cta[CS_CTA_LIVE_THREADS], 0u - n) == n) {
        cs_early_exit_check(slot, w, site);
        cs_gadd32(&((cs_log_header_t*)S.log)->ctas_ended, 1);
        cs_fence_sys();
        cs_gxchg32(&((uint32_t*)S.slot_busy)[slot], 0);
    }
}
