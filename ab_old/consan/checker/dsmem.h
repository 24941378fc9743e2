// consan device checker: accesses to another CTA's shared memory (distributed shared memory).
//
// A warp's ld/st/atom/red on a peer CTA's bytes (.shared::cluster, or a generic address in
// the peer's window) is posted to that CTA's mailbox (multicast.h), the same way a multicast
// copy is, and the CTA that owns the bytes judges and records it when it applies its posts.
// Across CTAs only cluster barriers order accesses (docs/model.md, "Distributed shared
// memory"): a peer's write is the epoch (TID_PEER + its warp, g + 1), g the cluster barrier
// arrivals its warp had made, its site word tagged with the peer's rank; a warp of this CTA
// sees it once it has waited on g + 1 cluster barriers. A peer's access or copy sees this
// CTA's warp u's accesses up to what u released to it (cs_peer_view): at u's W-th cluster
// arrival, W the cluster barrier waits the peer's warp had made, or at u's latest release
// to peers (an arrive on a peer's mbarrier) that the peer's warp had acquired. The peer's
// own earlier accesses here are program order; an async agent's write (a copy, wgmma) is
// not judged against a peer's access.

// The clock of a peer's write epoch (abi.PEER_*): the writer's rank, the cluster barrier
// generation g that publishes it, and n, the first of its CTA's releases to its peers that
// covers it (an arrive on an mbarrier of this CTA: cs_mbar_peer_apply).
CS_DEV uint32_t cs_peer_clock(uint32_t rank, uint32_t g, uint32_t n) {
    return rank << CS_PEER_RANK_SHIFT | (g < 0xFFu ? g : 0xFFu) << CS_PEER_G_SHIFT |
           (n & CS_PEER_N_MASK);
}
CS_DEV uint32_t cs_peer_g(uint32_t c) { return (c >> CS_PEER_G_SHIFT) & 0xFFu; }
CS_DEV uint32_t cs_sat_g(uint32_t waits) { return waits < 0xFFu ? waits : 0xFFu; }

// Whether a local warp w (clock `mine`) has seen a peer's write of clock c: it has waited on
// the cluster barrier that publishes it, or acquired a release of the writer's CTA made
// after it (that CTA's column). A peer's view (w: no warp of this CTA) judges none: one peer
// CTA's writes are not judged against another's.
CS_DEV bool cs_peer_write_seen(const uint32_t* mine, uint32_t w, uint32_t c) {
    if (w >= CS_MAX_WARPS) return true;
    if (cs_sat_g(cs_ld32(&cs_cta(cs_slot_sh)[CS_CTA_CLUSTER_WAITS + w])) >= cs_peer_g(c))
        return true;
    return mine[CS_TID_REMOTE + (c >> CS_PEER_RANK_SHIFT)] >= (c & CS_PEER_N_MASK);
}

// The clock up to which warp u's accesses here were released by its W-th cluster arrival.
CS_DEV uint32_t cs_ring_clock(uint32_t slot, uint32_t u, uint32_t W) {
    if (W == 0) return 0;
    const uint32_t* cta = cs_cta(slot);
    uint32_t arrived = cs_ld32(&cta[CS_CTA_CLUSTER_ARRIVES + u]);
    // u never made its W-th arrival (it exited: everything it did is over), or made it
    // more than the ring holds ago (a post is applied before the CTA's next arrival,
    // so this does not happen)
    if (arrived < W || arrived - W >= CS_CLUSTER_RING) return 0xFFFFFFFFu;
    return cs_ld32(&cta[CS_CTA_CLUSTER_RING + u * CS_CLUSTER_RING + (W - 1) % CS_CLUSTER_RING]);
}

// An arrive of warp w on a peer's mbarrier (its leader, before the post): the next release
// number n of this CTA; keep (n, w's clock), and start a new clock, so later accesses are
// not covered. Returns n.
CS_DEV uint32_t cs_remote_release(uint32_t slot, uint32_t w) {
    uint32_t* cta = cs_cta(slot);
    uint32_t n = cs_add32(&cta[CS_CTA_REMOTE_RELEASES], 1u) + 1u;
    uint32_t k = cta[CS_CTA_REMOTE_MADE + w] + 1;
    uint32_t* e = &cta[CS_CTA_REMOTE_RING + 2 * (w * CS_REMOTE_RING + (k - 1) % CS_REMOTE_RING)];
    e[0] = n;
    e[1] = cs_clock_sh[w];
    cs_fence();
    cta[CS_CTA_REMOTE_MADE + w] = k;
    uint32_t* mine = cs_vis(slot, w);
    mine[w] += 1;
    cs_clock_sh[w] = mine[w];
    return n;
}

// The clock up to which warp u's accesses here were released by its latest release
// numbered at most n (0: none). Releases older than the ring holds are taken to cover
// what the oldest one kept does (documented in docs/model.md).
CS_DEV uint32_t cs_release_clock(uint32_t slot, uint32_t u, uint32_t n) {
    if (n == 0) return 0;
    const uint32_t* cta = cs_cta(slot);
    const uint32_t* ring = &cta[CS_CTA_REMOTE_RING + 2 * u * CS_REMOTE_RING];
    uint32_t made = cs_ld32(&cta[CS_CTA_REMOTE_MADE + u]);
    uint32_t lo = made > CS_REMOTE_RING ? made - CS_REMOTE_RING : 0u;
    for (uint32_t k = made; k > lo; --k) {
        const uint32_t* e = &ring[2 * ((k - 1) % CS_REMOTE_RING)];
        if (cs_ld32(&e[0]) <= n) return cs_ld32(&e[1]);
    }
    return lo ? cs_ld32(&ring[2 * (lo % CS_REMOTE_RING) + 1]) : 0u;
}

// What a peer's warp had seen of this CTA when it made its post: for each warp u, the clock
// up to which u's accesses were released to it -- at u's W-th cluster arrival (W: the
// cluster barrier waits it had made) or by u's latest release numbered at most n (the
// highest release of this CTA it had acquired) -- and all ones for every other logical
// thread (async agents' writes, and other peers', are not judged across CTAs). Built by the
// lanes `entry` of the draining warp together, in the mailbox (the drain holds its lock),
// and kept for the next post made with the same W and n.
CS_DEV const uint32_t* cs_peer_view(uint32_t slot, uint32_t W, uint32_t n, uint32_t entry) {
    cs_mailbox_t* m = cs_mailbox();
    uint32_t leader = cs_ffs(entry) - 1;
    volatile uint32_t* key = &m->view_w;
    if (cs_bcast(entry, key[0] == W && key[1] == n && key[2] == 1u, leader)) return m->view;
    uint32_t lanes = cs_popc(entry), me = cs_popc(entry & ((1u << cs_lane()) - 1u));
    for (uint32_t u = me; u < S.nwarps; u += lanes) {
        uint32_t a = cs_ring_clock(slot, u, W), b = cs_release_clock(slot, u, n);
        ((volatile uint32_t*)m->view)[u] = a > b ? a : b;
    }
    cs_syncwarp(entry);
    if (cs_lane() == leader) key[0] = W, key[1] = n, key[2] = 1u;
    cs_syncwarp(entry);
    return m->view;
}

// Whether the earlier write epoch ww (site word ws) happens before the access of a warp
// of CTA `rank` that had waited on W cluster barriers and saw `seen` (cs_peer_view).
CS_DEV bool cs_peer_sees(const uint32_t* seen, uint64_t ww, uint32_t ws, uint32_t rank,
                         uint32_t W) {
    uint32_t t = (uint32_t)(ww >> CS_WW_TID_SHIFT) & 0xFFu, c = (uint32_t)ww;
    if (cs_is_peer_tid(t)) return cs_site_rank(ws) == rank + 1 || cs_sat_g(W) >= cs_peer_g(c);
    if (t < CS_MAX_WARPS) return c <= seen[t];
    return true;  // an async agent's write: not judged across CTAs
}

// A cluster arrival of warp w (its leader, before the arrival releases): count it and keep
// the clock its accesses so far have (a relaxed arrival releases nothing new but what
// preceded the warp's last cluster-scope fence).
CS_DEV void cs_cluster_arrival(uint32_t slot, uint32_t w, bool relaxed) {
    uint32_t* cta = cs_cta(slot);
    uint32_t k = cta[CS_CTA_CLUSTER_ARRIVES + w] + 1;
    uint32_t* ring = &cta[CS_CTA_CLUSTER_RING + w * CS_CLUSTER_RING];
    uint32_t prev = k > 1 ? ring[(k - 2) % CS_CLUSTER_RING] : 0u;
    uint32_t fenced = cta[CS_CTA_CLUSTER_FENCE + w];
    ring[(k - 1) % CS_CLUSTER_RING] = relaxed ? (fenced > prev ? fenced : prev) : cs_clock_sh[w];
    cs_fence();
    cta[CS_CTA_CLUSTER_ARRIVES + w] = k;
}

// The cluster barrier generation that releases a peer's access posted after W cluster
// barrier waits (POST_ARRIVED: and one more arrival): W + arrived + 1.
CS_DEV uint32_t cs_post_gen(const cs_mc_post_t& p, uint32_t W) {
    return W + ((p.from & CS_POST_ARRIVED) ? 1u : 0u) + 1u;
}

// A peer's access here (DSMEM, an operation on an mbarrier): this CTA must have waited on
// the generation that releases it when it exits (cs_early_exit_check). The drain's first
// lane.
CS_DEV void cs_peer_touch(uint32_t slot, uint32_t W, const cs_mc_post_t& p) {
    uint32_t* cta = cs_cta(slot);
    uint32_t g = cs_post_gen(p, W);
    if (g > cta[CS_CTA_PEER_GEN]) {
        cta[CS_CTA_PEER_GEN] = g;
        cta[CS_CTA_PEER_SITE] = p.site;
        cta[CS_CTA_PEER_FROM] = p.from & 0xFFFFu;
    }
}

// The CTA's last thread exits (its warp w had waited on that many cluster barriers): a
// peer's access here that no cluster barrier it waited on released is cluster.early-exit
// (the peer may still reach memory that is gone; docs/model.md).
CS_DEV void cs_early_exit_check(uint32_t slot, uint32_t w, uint32_t site) {
    if (!cs_multicast_on() || cs_ending()) return;
    const uint32_t* cta = cs_cta(slot);
    uint32_t g = cs_ld32(&cta[CS_CTA_PEER_GEN]), waits = cs_ld32(&cta[CS_CTA_CLUSTER_WAITS + w]);
    if (g == 0 || waits >= g) return;
    uint32_t from = cs_ld32(&cta[CS_CTA_PEER_FROM]);
    cs_record_t r = cs_blank(CS_CLUSTER_EARLY_EXIT, site);
    r.prev_site = cs_ld32(&cta[CS_CTA_PEER_SITE]);
    r.prev_warp = (from >> 8) & 0xFFu;
    r.prev_rank = (from & 0xFFu) + 1;
    r.phase = waits;
    r.count = g;
    cs_record(r);
}

CS_DEV uint64_t* cs_aread(uint32_t slot, uint32_t g);  // bulk.h
CS_DEV uint32_t* cs_arsite(uint32_t slot, uint32_t g);

// The walk of a peer's access over granules [g0, g1] of this CTA, by one lane (no calls).
CS_DEV cs_finding cs_dsmem_walk(uint32_t slot, const cs_mc_post_t& p, const uint32_t* seen) {
    uint32_t rank = p.from & 0xFFu, pw = (p.from >> 8) & 0xFFu;
    uint32_t what = (p.from >> CS_POST_WHAT_SHIFT) & 0xFFu, W = p.mbar;
    cs_peer_touch(slot, W, p);
    uint32_t clock = cs_peer_clock(rank, cs_post_gen(p, W), p.rel + 1u);
    bool atomic = what == CS_DSMEM_ATOMIC, read = what == CS_DSMEM_READ;
    cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
    uint32_t g0 = p.dst / CS_GRANULE_BYTES, g1 = (p.dst + p.bytes - 1) / CS_GRANULE_BYTES;
    if (p.bytes == 0 || g1 >= S.granules) return {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};
    cs_view v = cs_make_view(slot, cs_warp());
    uint32_t tagged = cs_site_tag(p.site, rank);
    // a peer's epochs and reads are not in the box summaries (its clock is not this CTA's):
    // a copy over these blocks walks them
    if (cs_box_summary_on()) cs_box_summary_flag(slot, g0, g1, CS_BS_FLAG_PEER);
    for (uint32_t g = g0; g <= g1; ++g) {
        uint64_t* e = v.ent + 2 * g;
        uint64_t ww = cs_ld64(e);
        uint32_t ws = cs_ld32(v.wsite + g), t = (uint32_t)(ww >> CS_WW_TID_SHIFT) & 0xFFu;
        uint32_t flags = (uint32_t)(ww >> CS_WW_FLAGS_SHIFT) & 0xFFu;
        bool live = (ww >> CS_WW_GEN_SHIFT) == v.gen;
        if (live && (flags & CS_WW_FLAG_MBAR)) {
            if (!f.kind) f = {CS_MBARRIER_DATA_ACCESS, ws, t};
            continue;
        }
        if (!live) {
            if ((read || atomic) && !f.kind) f = {CS_UNINIT_READ, CS_NO_SITE, CS_NO_WARP};
        } else if (!(atomic && (flags & CS_WW_FLAG_ATOMIC)) && !cs_peer_sees(seen, ww, ws, rank, W) &&
                   !f.kind) {
            f = {read ? CS_RACE_RAW : CS_RACE_WAW, ws, t};
        }
        if (read) {  // kept as the granule's async-read entry, flagged in its write epoch:
            if (live) {  // the next write judges it (cs_check_write_run)
                cs_st64(cs_aread(slot, g), ((uint64_t)v.gen << CS_AR_GEN_SHIFT) |
                                              ((uint64_t)(CS_TID_PEER + pw) << CS_AR_TID_SHIFT) |
                                              clock);
                cs_st32(cs_arsite(slot, g), tagged);
                cs_fence();
                cs_or64(e, (uint64_t)CS_WW_FLAG_PEER_READ << CS_WW_FLAGS_SHIFT);
            }
            continue;
        }
        uint64_t rm = cs_ld64(e + 1);
        if ((rm >> CS_RM_GEN_SHIFT) == v.gen) {
            for (uint64_t readers = rm & 0xFFFFFFFFull; readers; readers &= readers - 1) {
                uint32_t u = cs_ffsll(readers) - 1;
                uint64_t r = cs_ld64(v.rslots + (uint64_t)u * v.granules + g);
                if ((uint32_t)r > seen[u] && !f.kind)
                    f = {CS_RACE_WAR, (uint32_t)(r >> 32), u};
            }
        }
        uint32_t fl = CS_WW_FLAG_PEER | (atomic ? CS_WW_FLAG_ATOMIC : 0u);
        cs_st64(e, ((uint64_t)v.gen << CS_WW_GEN_SHIFT) | ((uint64_t)fl << CS_WW_FLAGS_SHIFT) |
                       ((uint64_t)(CS_TID_PEER + pw) << CS_WW_TID_SHIFT) | clock);
        cs_st64(e + 1, ((uint64_t)v.gen << CS_RM_GEN_SHIFT) | ((uint64_t)v.phase << 32));
        cs_st32(v.wsite + g, tagged);
    }
    cs_fence();
    return f;
}

// A peer's access, applied by the lanes `entry` of this warp (their first walks; every
// lane makes the record call: multicast.h's cs_mc_drain says why).
CS_DEV void cs_dsmem_apply(uint32_t slot, const cs_mc_post_t& p, uint32_t entry) {
    uint32_t leader = cs_ffs(entry) - 1;
    const uint32_t* seen = cs_peer_view(slot, p.mbar, p.acq, entry);
    cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
    if (cs_lane() == leader) f = cs_dsmem_walk(slot, p, seen);
    if (!cs_any(entry, f.kind != 0)) return;  // (a record is built only for a finding)
    cs_record_t r = cs_blank(f.kind, p.site);
    r.warp = (p.from >> 8) & 0xFFu;
    r.cur_rank = (p.from & 0xFFu) + 1;
    r.lanes = 0;  // (the peer's lanes are not posted)
    r.prev_site = f.prev_site;
    r.prev_warp = f.prev_warp;
    r.offset_lo = p.dst;
    r.offset_hi = p.dst + p.bytes;
    cs_record(r);
}

// A warp's accesses to peer CTAs' shared memory (`mine`: this lane's is one; a32 its
// .shared::cluster address, off its offset in the peer's window), by the lanes `active`
// together: for each peer, one post per run of granules its lanes make in lane order (a
// warp's row of a tile: one post). A post that found a mailbox full is said
// (tool.remote-copy-lost).
CS_DEV void cs_dsmem_post(uint32_t active, bool mine, uint32_t a32, uint32_t off, uint32_t size,
                          uint32_t site, uint32_t mode) {
    uint32_t slot = cs_slot_sh, w = cs_warp(), lane = cs_lane();
    const uint32_t* cta = cs_cta(slot);
    uint32_t W = cs_ld32(&cta[CS_CTA_CLUSTER_WAITS + w]);
    uint32_t arrived = cs_ld32(&cta[CS_CTA_CLUSTER_ARRIVES + w]) > W ? CS_POST_ARRIVED : 0u;
    uint32_t what = mode == CS_MODE_READ ? CS_DSMEM_READ
                    : mode == CS_MODE_ATOMIC ? CS_DSMEM_ATOMIC : CS_DSMEM_WRITE;
    uint32_t from = cs_ctarank() | (w << 8) | (what << CS_POST_WHAT_SHIFT) | arrived;
    uint32_t rel = cs_ld32(&cta[CS_CTA_REMOTE_RELEASES]);
    uint32_t rank = a32 >> CS_RANK_SHIFT;
    uint32_t g0 = off / CS_GRANULE_BYTES, g1 = (off + size - 1) / CS_GRANULE_BYTES;
    bool lost = false;
    uint32_t todo = cs_ballot(active, mine);
    while (todo) {
        uint32_t first = cs_ffs(todo) - 1;
        uint32_t r0 = cs_bcast(active, rank, first);
        uint32_t group = cs_ballot(active, mine && rank == r0) & todo;
        uint32_t acq = *(volatile uint32_t*)&cs_vis(slot, w)[CS_TID_REMOTE + (r0 & (CS_REMOTE_RANKS - 1))];
        // runs of granules the group's lanes make in lane order: one post each
        cs_runs(active, group, g0, g1, [&](uint32_t a, uint32_t b) {
            if (lane == first)
                lost |= !cs_post(r0, a * CS_GRANULE_BYTES, (b - a + 1) * CS_GRANULE_BYTES, W,
                                 site, from, rel, acq);
        });
        todo &= ~group;
    }
    cs_fence_cluster();
    if (!cs_any(active, lost)) return;  // (a record is built only for a lost post)
    cs_record_t r = cs_blank(lost ? CS_TOOL_REMOTE_COPY_LOST : 0u, site);
    r.prev_rank = rank + 1;
    r.offset_lo = off;
    r.offset_hi = off + size;
    cs_record(r);
}

// ------------------------------------------------------------- a peer's mbarrier
//
// mbarrier.arrive{.expect_tx}, expect_tx and complete_tx on another CTA's mbarrier (its
// .shared::cluster address): posted to that CTA, which counts them on its own entry when it
// applies its posts, before the hardware sees the operation (the post is made first). An
// arrive is a release of this CTA to its peers, numbered (CTA_REMOTE_RELEASES): the owner
// puts the number in the phase's slot, column TID_REMOTE + this rank, so a warp that waits
// on the phase has seen this CTA's writes into the owner's shared memory made before it
// (each carries the number of the first release that covers it: cs_peer_clock). False for
// an operation it does not model. Out of line: the mbarrier probe's leader calls it alone.
CS_NOINLINE bool cs_mbar_peer_post(uint32_t a, uint32_t off, uint32_t op, uint32_t arg,
                                   uint32_t lanes, uint32_t site, uint32_t w) {
    bool arrives = cs_mb_arrives(op);
    if (!arrives && op != CS_MB_EXPECT_TX && op != CS_MB_COMPLETE_TX) return false;
    uint32_t rel = arrives ? cs_remote_release(cs_slot_sh, w) : 0u;
    const uint32_t* cta = cs_cta(cs_slot_sh);
    uint32_t W = cs_ld32(&cta[CS_CTA_CLUSTER_WAITS + w]);  // (the post's last word)
    uint32_t from = cs_ctarank() | (w << 8) | ((CS_POST_MBAR + op) << CS_POST_WHAT_SHIFT) |
                    (lanes << CS_POST_LANES_SHIFT) |
                    (cs_ld32(&cta[CS_CTA_CLUSTER_ARRIVES + w]) > W ? CS_POST_ARRIVED : 0u);
    if (!cs_post(a >> CS_RANK_SHIFT, off, arg, 0, site, from, rel, W))
        cs_mbar_record(CS_TOOL_REMOTE_COPY_LOST, site, off, 0);
    return true;  // (no fence before the operation: cs_post says why)
}

// How many posts from the tail t (p: post t, a peer's operation on this CTA's mbarrier;
// head h) the warp counts as one (cs_mc_load_next): plain arrivals of the same CTA on the
// same mbarrier (the peer's warps, each freeing its part of a stage).
CS_DEV uint32_t cs_mbar_peer_batch(cs_mailbox_t* m, uint32_t t, uint32_t h, const cs_mc_post_t& p,
                                   uint32_t entry, cs_mc_post_t& mine) {
    const uint32_t arrive = CS_POST_MBAR + CS_MB_ARRIVE;
    if (((p.from >> CS_POST_WHAT_SHIFT) & 0xFFu) != arrive) return 1u;
    bool ok = cs_mc_load_next(m, t, h, entry, mine);
    if (!cs_any(entry, ok)) return 1u;
    ok = ok && ((mine.from >> CS_POST_WHAT_SHIFT) & 0xFFu) == arrive && mine.dst == p.dst &&
         (mine.from & 0xFFu) == (p.from & 0xFFu);
    return cs_leading(entry, ok);
}

// A peer's operation on this CTA's mbarrier, applied by the lanes `entry` of this warp (their
// first counts it; every lane makes the record call: multicast.h's cs_mc_drain says why);
// or n > 1 plain arrivals (cs_mbar_peer_batch; lane i holds post t + i in `mine`) counted
// together where one by one none but the last could complete the phase. Returns how many
// posts it applied.
CS_DEV uint32_t cs_mbar_peer_apply(uint32_t slot, const cs_mc_post_t& p, const cs_mc_post_t& mine,
                                   uint32_t n, uint32_t entry) {
    uint32_t op = ((p.from >> CS_POST_WHAT_SHIFT) & 0xFFu) - CS_POST_MBAR;
    uint32_t lanes = (p.from >> CS_POST_LANES_SHIFT) & 0x3Fu, rank = p.from & 0xFFu, j = 0;
    uint32_t kind = 0, ph = 0, pending = 0, tx = 0, lane = cs_lane();
    uint32_t all = 0, rel = p.rel;
    cs_mc_post_t touch = p;  // (the post whose generation the batch's touches leave)
    if (n > 1) {
        bool in = lane < n;
        all = cs_sum(entry, in ? mine.bytes * ((mine.from >> CS_POST_LANES_SHIFT) & 0x3Fu) : 0u);
        rel = cs_max(entry, in ? mine.rel : 0u);
        uint32_t g = in ? cs_post_gen(mine, mine.acq) : 0u, top = cs_max(entry, g);
        uint32_t src = cs_ffs(cs_ballot(entry, in && g == top)) - 1;
        touch.acq = cs_bcast(entry, mine.acq, src);
        touch.from = cs_bcast(entry, mine.from, src);
        touch.site = cs_bcast(entry, mine.site, src);
    }
    if (lane == cs_ffs(entry) - 1) {
        uint32_t* e = cs_mbar_entry(slot, p.dst, false, j);
        if (e == 0 || !cs_mbar_live(j)) {
            n = 1;
            cs_peer_touch(slot, p.acq, p);
            kind = cs_mbar_untracked(e) ? 0u : CS_MBARRIER_UNINIT;
        } else {
            cs_mbar_lock(j);
            if (n > 1 && (int32_t)e[CS_MB_PENDING] < (int32_t)all) n = 1;
            cs_peer_touch(slot, n > 1 ? touch.acq : p.acq, n > 1 ? touch : p);
            uint32_t k = p.bytes * lanes;  // (every thread's arrive / tx counts)
            bool arrives = op != CS_MB_EXPECT_TX && op != CS_MB_COMPLETE_TX;
            uint32_t count = n > 1 ? all : cs_mb_arrive_tx(op) ? lanes : k;
            if (n == 1) rel = p.rel;
            if (cs_mb_expects(op)) e[CS_MB_TX] += k;
            ph = e[CS_MB_PHASE], pending = e[CS_MB_PENDING], tx = e[CS_MB_TX];
            if (op == CS_MB_COMPLETE_TX) {
                if (pending == 0 && (int32_t)tx < (int32_t)k) kind = CS_MBARRIER_UNDERFLOW;
                e[CS_MB_TX] -= k;
            }
            if (arrives) {
                uint32_t* col = cs_mbar_slot(e, ph) + CS_TID_REMOTE + (rank & (CS_REMOTE_RANKS - 1));
                if (*col < rel) *col = rel;
                cs_mbar_written(e, e[CS_MB_WRITTEN], ph);
                if ((int32_t)pending < (int32_t)count) kind = CS_MBARRIER_UNDERFLOW;
                e[CS_MB_PENDING] = (kind ? count : pending) - count;
                if (cs_mb_drops(op)) e[CS_MB_EXPECTED] -= count;
            }
            cs_mbar_try_complete(e);
            cs_mbar_unlock(j);
        }
    }
    n = cs_bcast(entry, n, cs_ffs(entry) - 1);
    if (!cs_any(entry, kind != 0)) return n;  // (a record is built only for a finding)
    cs_record_t r = cs_blank(kind, p.site);
    r.warp = (p.from >> 8) & 0xFFu;
    r.cur_rank = rank + 1;
    r.lanes = 0;  // (the peer's lanes are not posted)
    r.offset_lo = r.barrier = p.dst;
    r.offset_hi = p.dst + 8;
    r.phase = ph, r.count = pending, r.clock = tx;
    cs_record(r);
    return n;
}
