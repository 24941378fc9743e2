// consan device checker: bulk stores and proxy fences.

// ------------------------------------------------------------- bulk stores and proxy fences
//
// cp{.reduce}.async.bulk.global.shared::cta.bulk_group: the bulk-store unit of warp w
// (logical thread AGENT_BULK + w) reads the source some time before the bulk group the store
// belongs to is retired. Its clock counts bulk groups: a store issued while w has committed
// k groups reads with clock k + 1, and cp.async.bulk.wait_group{.read} n raises
// VC_w[AGENT_BULK + w] to k' - n (k' = the groups committed by then). The read is kept in
// the granule's async-read entry (the latest one) and judged when the granule is next
// written (cs_check_async_read), so a wait never walks shadow memory.
//
// fence.proxy.async by warp x: VC_x[AGENT_PROXY + x] = VC_x[x] -- every generic write x
// made so far may be read by the async proxy -- then VC_x[x] += 1, so later writes are not
// covered. Releases carry that column like any other: a bulk store by w may read the
// generic write (x, c) when VC_w[x] >= c (ordered) and VC_w[AGENT_PROXY + x] >= c (x fenced
// it before a release that reaches w). Only modules that issue bulk stores have these
// columns and the async-read table (FLAG_BULK_STORES); they never run
// in phase mode.

CS_DEV bool cs_async_proxy() { return (S.flags & CS_FLAG_BULK_STORES) && !cs_phase_mode(); }

// Async-read table: u64 entries gen:16 | tid:8 | clock:32 for every slot, then u32 sites.
CS_DEV uint64_t* cs_aread(uint32_t slot, uint32_t g) { return (uint64_t*)S.aread + cs_gidx(slot, g); }
CS_DEV uint32_t* cs_arsite(uint32_t slot, uint32_t g) {
    return (uint32_t*)((uint64_t*)S.aread + (uint64_t)S.nslots * S.granules) + cs_gidx(slot, g);
}

// A write of granule g (its epoch published and fenced): a bulk store whose group the
// writer has not seen retired may still be reading the old bytes; a peer CTA's read
// (dsmem.h: tid TID_PEER + its warp, a peer clock) not released to the writer is race.war.
CS_DEV void cs_check_async_read(const cs_view& v, uint32_t g, cs_finding& f) {
    if (f.kind) return;
    uint32_t slot = cs_slot_sh;
    uint64_t a = cs_ld64(cs_aread(slot, g));
    if ((uint32_t)(a >> CS_AR_GEN_SHIFT) != v.gen) return;
    uint32_t t = (uint32_t)(a >> CS_AR_TID_SHIFT) & 0xFFu;
    if (!cs_ordered(v.mine, v.w, t, (uint32_t)a))
        f = {cs_is_peer_tid(t) ? CS_RACE_WAR : CS_ASYNC_PENDING_READ,
             cs_ld32(cs_arsite(slot, g)), t};
}

// One bulk store of [off, off + bytes) issued by lane `lane` of warp w, run by the lanes
// `lanes` together (every one calls this with the same arguments), `lead` among them: they
// publish and judge its granules a lane each in turn (a block each with the tables in
// shared memory: cs_vc_smem_async_read), and `lead` takes their findings in granule order,
// as one lane walking them would have. (On the H100, with one lane walking: Triton's
// persistent matmul's 32 KiB epilogue store, device tables, its tensor probe 43.6k -> 10.7k
// cycles a call; a 16 KiB TMA store with shared-memory tables ~500k cycles, a Triton TMA
// add-into kernel 0.178 -> 0.057 ms.)
CS_DEV void cs_bulk_store_one(uint32_t lanes, uint32_t lead, uint32_t slot, uint32_t w,
                              uint32_t lane, uint32_t off, uint32_t bytes, uint32_t site) {
    bool me = cs_lane() == lead;
    uint32_t agent = CS_AGENT_BULK + w;
    uint32_t clk = cs_commits_sh(CS_UNIT_BULK, w) + 1;
    cs_record_t r = cs_blank(CS_TOOL_OUT_OF_WINDOW, site);
    r.lanes = 1u << lane;
    r.count = bytes;
    r.clock = clk;
    uint32_t below = cs_vc_smem_on() ? S.vsh_base : 0u;
    if (bytes == 0 || off + bytes < off || off < below ||
        (off + bytes - 1) / CS_GRANULE_BYTES >= S.granules) {
        r.offset_lo = off;
        r.offset_hi = off + bytes;
        if (me) cs_record(r);
        return;
    }
    cs_view v = cs_make_view(slot, w);
    uint32_t g0 = off / CS_GRANULE_BYTES, g1 = (off + bytes - 1) / CS_GRANULE_BYTES;
    cs_sink sink;
    sink.n = 0;
    if (cs_vc_smem_on()) {
        uint32_t b = below / CS_GRANULE_BYTES;
        cs_vc_smem_async_read(lanes, lead, slot, w, cs_vc_smem_ri_bulk(w), clk, g0 - b, g1 - b,
                              site, CS_PROXY_BULK, sink);
    } else {
        // Publish the read, then look at the writes (Dekker with cs_check_write_run): each
        // lane looks at the granules it published; the summary's fence reaches them all.
        uint32_t rank = cs_popc(lanes & ((1u << cs_lane()) - 1u)), n = cs_popc(lanes);
        uint64_t mark = ((uint64_t)v.gen << CS_AR_GEN_SHIFT) | ((uint64_t)agent << CS_AR_TID_SHIFT) | clk;
        for (uint32_t g = g0 + rank; g <= g1; g += n) {
            cs_st64(cs_aread(slot, g), mark);
            cs_st32(cs_arsite(slot, g), site);
        }
        if (me && cs_box_summary_on()) cs_box_summary_read(slot, g0, g1, S.nwarps + w, clk, site);
        cs_fence();
        cs_syncwarp(lanes);
        for (uint32_t base = g0; base <= g1; base += n) {
            uint32_t g = base + rank;
            cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
            if (g <= g1) f = cs_judge_read_epoch(v, slot, g, cs_ld64(v.ent + 2 * g), CS_PROXY_BULK);
            for (uint32_t found = cs_ballot(lanes, f.kind != 0); found; found &= found - 1) {
                int src = cs_ffs(found) - 1;
                cs_finding x = {cs_bcast(lanes, f.kind, src), cs_bcast(lanes, f.prev_site, src),
                                cs_bcast(lanes, f.prev_warp, src)};
                uint32_t at = base + (uint32_t)cs_popc(lanes & ((1u << src) - 1u));
                if (me) cs_sink_add(sink, x, at * CS_GRANULE_BYTES, (at + 1) * CS_GRANULE_BYTES);
            }
        }
    }
    if (me) {
        for (uint32_t i = 0; i < sink.n; ++i) {
            r.kind = sink.f[i].kind;
            r.prev_site = sink.f[i].prev_site;
            r.prev_warp = sink.f[i].prev_warp;
            r.offset_lo = sink.lo[i];
            r.offset_hi = sink.hi[i];
            cs_record(r);
        }
        // The issuing warp's later writes must not take the fast path past the async-read
        // entries (it would if it rewrote a granule it wrote at this clock): a new clock.
        uint32_t* mine = cs_vis(slot, w);
        mine[w] += 1;
        cs_clock_sh[w] = mine[w];
    }
    cs_fence();
    cs_syncwarp(lanes);  // (the new clock, before any lane's next store is judged)
}
