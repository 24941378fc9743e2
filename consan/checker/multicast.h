// consan device checker: multicast copies into the other CTAs of a cluster.

// ------------------------------------------------------------- multicast copies
//
// cp.async.bulk{.tensor} ... .multicast::cluster with ctaMask m writes the same CTA-relative
// bytes in every CTA of m and completes its bytes on each one's mbarrier at the same
// offset. The issuing CTA models its own part as an ordinary copy. For every other CTA of m
// it posts the copy (dst, bytes, mbarrier, site, its rank and warp) to that CTA's mailbox,
// in the CTA's shared memory, through distributed shared memory, before the copy is issued.
// The CTA applies its posts itself, in order, at the start of its next probe: then its
// own tables and locks see the copy like one of its own, as the copy engine of its own
// mbarrier writing at the phase the bytes complete. So a read before the wait on that
// phase is async.pending-write, bytes no copy reached are uninit.read, and bytes the phase
// never gets leave its waiters to the deadlock watch. The write is judged against the
// CTA's earlier accesses as the issuing warp had seen them (cs_peer_view, dsmem.h).

struct cs_mc_post_t { uint32_t seq, dst, bytes, mbar, site, from, rel, acq; };
struct cs_mailbox_t {
    uint32_t head, tail, lock, pad;  // head: posts claimed; tail: posts applied
    cs_mc_post_t post[CS_MAILBOX_ENTRIES];
    uint32_t view[CS_MAX_LOGICAL];  // (cs_peer_view) the clocks a post is judged with...
    uint32_t view_w, view_n, view_ok, view_pad;  // ...and the post's waits and release
};
static_assert(sizeof(cs_mc_post_t) == 4 * CS_MAILBOX_POST_WORDS, "abi.MAILBOX_POST_WORDS");
static_assert(sizeof(cs_mailbox_t) == 4 * (CS_MAILBOX_HEAD_WORDS +
                                           CS_MAILBOX_ENTRIES * CS_MAILBOX_POST_WORDS +
                                           CS_MAILBOX_VIEW_WORDS),
              "abi.MAILBOX_BYTES");

// Compiled in only for modules that reach peer CTAs (-DCONSAN_MC: builds of their own,
// toolchain.link_with_checker; the host build always): no other module's probes pay for
// the look. The vector-clock builds serve them, with the granule tables in device memory
// or, where no peer's load or store reaches them, in shared memory (runtime.py).
CS_DEV bool cs_multicast_on() {
#if (defined(CONSAN_MC) || defined(CONSAN_HOST)) && !defined(CONSAN_PSH) && \
    !defined(CONSAN_PHASE_DEV)
    return S.flags & CS_FLAG_MULTICAST;
#else
    return false;
#endif
}
CS_DEV cs_mailbox_t* cs_mailbox() { return (cs_mailbox_t*)cs_dyn_part(S.mc_offset); }

// Run by every thread of the CTA when it begins (i of n), before the cluster meets: the
// posts and the view's key cleared, the view all ones (only its warps' words change).
CS_DEV void cs_mailbox_clear(uint32_t i, uint32_t n) {
    uint32_t* m = (uint32_t*)cs_mailbox();
    const uint32_t posts = CS_MAILBOX_HEAD_WORDS + CS_MAILBOX_ENTRIES * CS_MAILBOX_POST_WORDS;
    for (uint32_t k = i; k < CS_MAILBOX_HEAD_WORDS + CS_MAILBOX_ENTRIES * CS_MAILBOX_POST_WORDS +
                             CS_MAILBOX_VIEW_WORDS; k += n)
        m[k] = k >= posts && k < posts + CS_MAX_LOGICAL ? 0xFFFFFFFFu : 0u;
}

// Every lane of the drain calls it (kind 0: records nothing; see cs_mc_drain).
CS_DEV void cs_mc_record(uint32_t kind, uint32_t site, uint32_t from, uint32_t dst,
                         uint32_t bytes, uint32_t moff, const cs_finding* f) {
    cs_record_t r = cs_blank(kind, site);
    r.offset_lo = dst;
    r.offset_hi = dst + bytes;
    r.barrier = moff;
    r.count = bytes;
    r.prev_rank = (from & 0xFFu) + 1;  // (the issuer, for a note about its copy)
    if (f) {
        r.prev_site = f->prev_site;
        r.prev_warp = f->prev_warp;
    }
    if (f && f->prev_warp != CS_NO_WARP) {  // the copy against this CTA's earlier access:
        r.warp = (from >> 8) & 0xFFu;       // the issuing warp and CTA are the current ones
        r.cur_rank = r.prev_rank;
        r.prev_rank = 0;
        r.lanes = 0;
    }
    cs_record(r);
}

// A post to CTA `rank`'s mailbox (`from`: this CTA's rank and warp, and abi's POST_* bits;
// `rel`: abi.MAILBOX_POST_WORDS says).
// A full mailbox is waited on (its CTA applies posts in every probe) for DEADLOCK_MS: false
// if it stayed full (the post is lost). Code without calls: one lane may run it alone.
// The operation posted (a copy into that CTA, an operation on its mbarrier) is issued
// after this returns, with no fence between: its claim, the compare-and-swap on `head`,
// has been performed in that CTA's shared memory before it returned, and every probe
// there that needs the post (any probe that saw the operation's effect) waits for a
// claimed post's words (`seq`, after the fence below). A fence.acq_rel.cluster costs about
// 670 cycles on an H100 (benchmarks/dsmem_costs.py); without the one that followed each
// post, on an H200 (A/B, three rounds): the clustered ring 1.407 -> 1.368 ms by the
// device's time alone (0.972), its st.async probe 8.5k -> 7.2k cycles.
CS_DEV bool cs_post(uint32_t rank, uint32_t dst, uint32_t bytes, uint32_t mbar, uint32_t site,
                    uint32_t from, uint32_t rel = 0, uint32_t acq = 0) {
    CS_PROF(33);
    cs_mailbox_t* m = cs_mailbox();
    uint32_t h, since = cs_now_ms();
    for (bool full = false;;) {
        h = cs_peer_ld(&m->head, rank);
        if (h - cs_peer_ld(&m->tail, rank) >= CS_MAILBOX_ENTRIES) {
            if (!full) CS_PROF_FULL();
            full = true;
            if (cs_now_ms() - since <= CS_DEADLOCK_MS) continue;
            return false;
        }
        if (cs_peer_cas(&m->head, rank, h, h + 1) == h) break;
    }
    cs_mc_post_t* p = &m->post[h % CS_MAILBOX_ENTRIES];
    cs_peer_st(&p->dst, rank, dst);
    cs_peer_st(&p->bytes, rank, bytes);
    cs_peer_st(&p->mbar, rank, mbar);
    cs_peer_st(&p->site, rank, site);
    cs_peer_st(&p->from, rank, from);
    cs_peer_st(&p->rel, rank, rel);
    cs_peer_st(&p->acq, rank, acq);
    cs_fence_cluster();
    cs_peer_st(&p->seq, rank, h + 1);
    return true;
}

// The runs of spans [lo, hi] the lanes `group` of `active` make in lane order, each span
// following the last (a warp's row of a tile: one run): emit(first, last) for each, on
// every lane (warp-uniform; the caller posts from one lane). A lane of the group starts a
// run unless its span follows that of the group's lane before it: one shuffle a lane, and
// two a run. (The clustered ring's st.async probe, ncu on an H200: a loop over the group's
// lanes, two shuffles each, was 38% of its stall samples, 32 trips a call.)
template <class F>
CS_DEV void cs_runs(uint32_t active, uint32_t group, uint32_t lo, uint32_t hi, F emit) {
    const uint32_t lane = cs_lane(), below = group & ((1u << lane) - 1u);
    const uint32_t prev = below ? 31u - (uint32_t)cs_clz(below) : lane;
    const uint32_t prev_hi = cs_bcast(active, hi, (int)prev);
    const bool start = ((group >> lane) & 1u) && (!below || lo != prev_hi + 1u);
    for (uint32_t m = cs_ballot(active, start); m; m &= m - 1) {
        const uint32_t s = cs_ffs(m) - 1, rest = m & (m - 1);
        // the run's last lane: the group's highest below the next run's first
        const uint32_t upto = rest ? group & ((1u << (cs_ffs(rest) - 1)) - 1u) : group;
        const uint32_t e = 31u - (uint32_t)cs_clz(upto);
        emit(cs_bcast(active, lo, (int)s), cs_bcast(active, hi, (int)e));
    }
}

// What the issuing warp of a copy into CTA `rank` has seen of that CTA, for its post (`rel`
// its cluster barrier waits, `acq` that CTA's highest release it has acquired; `from` gets
// POST_ARRIVED when the warp has arrived once more than it waited): cs_peer_view.
CS_DEV uint32_t cs_seen_of(uint32_t rank, uint32_t& rel, uint32_t& from) {
    uint32_t slot = cs_slot_sh, w = cs_warp();
    const uint32_t* cta = cs_cta(slot);
    rel = cs_ld32(&cta[CS_CTA_CLUSTER_WAITS + w]);
    from = cs_ctarank() | (w << 8) |
           (cs_ld32(&cta[CS_CTA_CLUSTER_ARRIVES + w]) > rel ? CS_POST_ARRIVED : 0u);
    // (a plain load: the row is in shared memory where the granule tables are, and
    // cs_ld32 is a global-space load)
    return *(volatile uint32_t*)&cs_vis(slot, w)[CS_TID_REMOTE + (rank & (CS_REMOTE_RANKS - 1))];
}

// The issuer's post of its copy of `bytes` (0: a tensor map not known) at offset dst, on
// the mbarrier at moff, to CTA `rank`.
CS_DEV void cs_mc_post(uint32_t rank, uint32_t dst, uint32_t bytes, uint32_t moff, uint32_t site) {
    uint32_t rel, from, acq = cs_seen_of(rank, rel, from);
    if (!cs_post(rank, dst, bytes, moff, site, from, rel, acq))
        cs_mc_record(CS_TOOL_REMOTE_COPY_LOST, site, rank, dst, bytes, moff, 0);
}

// A warp's copies into peers (st.async, red.async, a bulk copy into another CTA), by every
// lane of `all` together: lane i with `mine` copies `bytes` at dst in CTA `rank`, on the
// mbarrier at moff there. One post per run of bytes that follow each other in lane order
// to the same CTA, mbarrier and site: a warp's st.async of a tile row is one post, not 32
// (the receiver applies each post alone, under its mailbox's lock). The posts are made
// before the copies issue.
CS_DEV void cs_mc_post_runs(uint32_t all, bool mine, uint32_t rank, uint32_t dst, uint32_t bytes,
                            uint32_t moff, uint32_t site) {
    uint32_t lane = cs_lane();
    bool lost = false;
    for (uint32_t todo = cs_ballot(all, mine); todo;) {
        uint32_t first = cs_ffs(todo) - 1;
        uint32_t r0 = cs_bcast(all, rank, first), m0 = cs_bcast(all, moff, first);
        uint32_t s0 = cs_bcast(all, site, first);
        uint32_t group = cs_ballot(all, mine && rank == r0 && moff == m0 && site == s0) & todo;
        uint32_t rel, from, acq = cs_seen_of(r0, rel, from);
        cs_runs(all, group, dst, dst + bytes - 1, [&](uint32_t a, uint32_t b) {
            CS_SPIN(CS_PEER_WRITE_CYCLES, lane == first);
            if (lane == first) lost |= !cs_post(r0, a, b - a + 1, m0, s0, from, rel, acq);
        });
        todo &= ~group;
    }
    if (cs_any(all, lost))  // (every lane makes the call, the first records)
        cs_mc_record(lane == cs_ffs(all) - 1 ? CS_TOOL_REMOTE_COPY_LOST : 0u, site, rank, dst,
                     bytes, moff, 0);
}

// The posts to every CTA of `mask` but this one (the issuer's own part is its own copy),
// claimed before the copy is issued (cs_post).
CS_DEV void cs_mc_post_all(uint32_t mask, uint32_t dst, uint32_t bytes, uint32_t moff,
                           uint32_t site) {
    uint32_t me = cs_ctarank();
    for (uint32_t rest = mask & ~(1u << me) & 0xFFFFu; rest; rest &= rest - 1)
        cs_mc_post((uint32_t)(cs_ffs(rest) - 1), dst, bytes, moff, site);
}

CS_DEV const uint32_t* cs_peer_view(uint32_t slot, uint32_t W, uint32_t n, uint32_t entry);  // dsmem.h

// The block span [first, last] of a copy of `bytes` at dst (a box-summary block, or 32
// granules without summaries: what one lane of cs_engine_write_share takes whole).
CS_DEV void cs_mc_blocks(uint32_t dst, uint32_t bytes, uint32_t& first, uint32_t& last) {
    uint32_t sh = cs_box_summary_on() ? S.bsum_shift : 5u;
    first = dst / CS_GRANULE_BYTES >> sh;
    last = (dst + bytes - 1) / CS_GRANULE_BYTES >> sh;
}

// Lane i of a whole warp reads post t + i of the mailbox (head h) into `mine`: whether it
// is there and ready (the first lanes of a run the warp may apply as one). False on
// every lane where the warp is not whole, or fewer than two posts wait.
CS_DEV bool cs_mc_load_next(cs_mailbox_t* m, uint32_t t, uint32_t h, uint32_t entry,
                            cs_mc_post_t& mine) {
    uint32_t i = cs_lane(), cnt = h - t < 32u ? h - t : 32u;
    if (entry != 0xFFFFFFFFu || cnt < 2) return false;
    const volatile cs_mc_post_t* vq = &m->post[(t + i) % CS_MAILBOX_ENTRIES];
    // (the post's words after its last: an acquire)
    bool ok = i < cnt && cs_ld_acq_cluster((const uint32_t*)&vq->seq) == t + i + 1;
    if (ok) mine = {vq->seq, vq->dst, vq->bytes, vq->mbar, vq->site, vq->from, vq->rel, vq->acq};
    return ok;
}

// The length of the run of lanes from lane 0 with `ok` set.
CS_DEV uint32_t cs_leading(uint32_t entry, bool ok) {
    uint32_t run = ~cs_ballot(entry, ok);
    return run ? cs_ffs(run) - 1 : 32u;
}

// How many posts from the tail t (p: post t; head h) the warp applies as one
// (cs_mc_load_next): those that follow t while they are ready, peers' copies with post
// t's mbarrier, site, issuing CTA and view (its waits and release), a known size inside
// the window, and no block shared with an earlier one (a tile's rows, one copy per warp
// of the issuing CTA). Then the warp writes all their blocks at once, a block per lane,
// where one at a time they kept the lanes of a 512-byte row mostly idle.
CS_DEV uint32_t cs_mc_batch(cs_mailbox_t* m, uint32_t t, uint32_t h, const cs_mc_post_t& p,
                            uint32_t entry, cs_mc_post_t& mine) {
    if (p.bytes == 0) return 1u;
    bool ok = cs_mc_load_next(m, t, h, entry, mine);
    if (!cs_any(entry, ok)) return 1u;
    ok = ok && ((mine.from >> CS_POST_WHAT_SHIFT) & 0xFFu) == 0 && mine.mbar == p.mbar &&
         mine.site == p.site && (mine.from & 0xFFu) == (p.from & 0xFFu) && mine.rel == p.rel &&
         mine.acq == p.acq && mine.bytes != 0 && mine.dst + mine.bytes > mine.dst &&
         (mine.dst + mine.bytes - 1) / CS_GRANULE_BYTES < S.granules;
    uint32_t b0 = 1, b1 = 0, i = cs_lane(), cnt = h - t < 32u ? h - t : 32u;
    if (ok) cs_mc_blocks(mine.dst, mine.bytes, b0, b1);
    for (uint32_t j = 0; j < cnt; ++j) {  // (warp-uniform)
        uint32_t c0 = cs_bcast(entry, b0, j), c1 = cs_bcast(entry, b1, j);
        if (j < i && b0 <= c1 && c0 <= b1) ok = false;
    }
    return cs_leading(entry, ok);
}

// The write of peers' copies (cs_mc_apply) where the granule tables are in shared memory,
// by every lane of `entry` (cs_vc_smem_engine_lanes), judged with `seen`, what the issuer
// had seen of this CTA. Each lane gets the finding cs_mc_apply records for its copy (lane
// q of n: copy q's first, lanes from n on none; n = 1: p's, of `bytes`, on every lane).
// A batch of at most 32 blocks in all (a tile's rows, one copy per warp of the issuing CTA,
// in the order the warps posted them) is written in one pass, a block per lane, each lane
// alone (its blocks are no other lane's), and each copy's first finding is the lowest of
// its blocks' lanes; any other is written copy by copy, every lane taking blocks of each.
// (On the H100 the clustered ring's batch of eight 512-byte rows took 32k cycles copy by
// copy, each pass keeping 4 of 32 lanes busy.)
CS_DEV cs_finding cs_mc_write_smem(uint32_t slot, const cs_mc_post_t& p, const cs_mc_post_t& mine,
                                   uint32_t n, uint32_t bytes, const uint32_t* seen,
                                   uint32_t tagged, uint32_t by, uint32_t clk, uint32_t entry) {
    const uint32_t base = S.vsh_base / CS_GRANULE_BYTES, lane = cs_lane();
    const cs_finding none = {0, CS_NO_SITE, CS_NO_WARP};
    cs_finding f = none;
    // lane q < n holds copy q (cs_mc_batch): its granules [a, z] and blocks, and where its
    // blocks start in the batch's list of them
    bool in = lane < n && n > 1;
    uint32_t a = mine.dst / CS_GRANULE_BYTES, z = (mine.dst + mine.bytes - 1) / CS_GRANULE_BYTES;
    bool inside = !in || a >= base;
    a = in && inside ? a - base : 0, z = in && inside ? z - base : 0;
    uint32_t blocks = in ? z / CS_VC_BLOCK - a / CS_VC_BLOCK + 1 : 0, start = 0;
    for (uint32_t q = 0; q < n && n > 1; ++q) {  // (warp-uniform)
        uint32_t bq = cs_bcast(entry, blocks, q);
        if (q < lane) start += bq;
    }
    uint32_t total = cs_bcast(entry, start + blocks, n - 1);
    if (n > 1 && cs_all(entry, inside) && total <= 32u) {
        uint32_t mq = 0;  // this lane's copy: the last whose blocks start at or before it
        for (uint32_t q = 1; q < n; ++q)
            if (lane >= cs_bcast(entry, start, q)) mq = q;
        uint32_t qa = cs_bcast(entry, a, mq), qz = cs_bcast(entry, z, mq);
        uint32_t qs = cs_bcast(entry, start, mq), b = qa / CS_VC_BLOCK + (lane - qs);
        bool mine_block = lane < total;
        uint32_t g0 = mine_block ? cs_block_lo(b, qa) : CS_VC_BLOCK, g1 = mine_block ? cs_block_hi(b, qz) : 0;
        cs_found r = cs_vc_smem_engine_lanes(slot, CS_MAX_WARPS, g0, g1, tagged, by, clk,
                                             1u << lane, seen, true);
        CS_PROF(57);
        if (!cs_any(entry, mine_block && r.at != 0xFFFFFFFFu)) return f;  // (clean: the most)
        for (uint32_t q = 0; q < n; ++q) {  // (warp-uniform)
            uint32_t at = mine_block && mq == q ? r.at : 0xFFFFFFFFu, low = cs_min(entry, at);
            if (low == 0xFFFFFFFFu) continue;
            int src = cs_ffs(cs_ballot(entry, at == low)) - 1;
            cs_finding y = {cs_bcast(entry, r.f.kind, src), cs_bcast(entry, r.f.prev_site, src),
                            cs_bcast(entry, r.f.prev_warp, src)};
            if (lane == q) f = y;
        }
        return f;
    }
    for (uint32_t q = 0; q < n; ++q) {  // (warp-uniform)
        uint32_t d = n == 1 ? p.dst : cs_bcast(entry, mine.dst, q);
        uint32_t k = n == 1 ? bytes : cs_bcast(entry, mine.bytes, q);
        uint32_t g0 = d / CS_GRANULE_BYTES, g1 = (d + k - 1) / CS_GRANULE_BYTES;
        cs_finding y = {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};  // (the bytes the
        if (g0 >= base)  // hardware reserves below the kernel's)
            y = cs_vc_smem_engine_lanes(slot, CS_MAX_WARPS, g0 - base, g1 - base, tagged, by, clk,
                                        entry, seen, false).f;
        if (n == 1 || lane == q) f = y;
    }
    return f;
}

// Peers' copies, posts t .. t + n - 1 (cs_mc_batch; p: post t; n = 1: p alone), applied by
// this CTA: their bytes land in the phase their mbarrier is in, written by the mbarrier's
// copy engine at that phase + 1. The write's site word carries the issuer's rank
// (abi.SITE_RANK_SHIFT). Every lane of `entry` runs it; their first (holding the mailbox's
// lock) does the bookkeeping, the others call what it calls with nothing to do (see
// cs_mc_drain). Several copies land at once only where one by one none but the last could
// complete the phase (an arrival still pending, or the bytes still expected cover them
// all); otherwise post t alone. Returns how many it applied.
CS_DEV uint32_t cs_mc_apply(uint32_t slot, const cs_mc_post_t& p, const cs_mc_post_t& mine,
                            uint32_t n, uint32_t entry) {
    uint32_t leader = cs_ffs(entry) - 1, rank = p.from & 0xFFu, j = 0, lane = cs_lane();
    bool lead = lane == leader;
    const uint32_t* seen = 0;
    if (!CS_PEER_BY_ISSUER) {
        CS_PROF(39);
        seen = cs_peer_view(slot, p.rel, p.acq, entry);
    }
    uint32_t* e = cs_mbar_entry(slot, p.mbar, false, j);
    bool live = e != 0 && cs_mbar_live(j);
    uint32_t all = n > 1 ? cs_sum(entry, lane < n ? mine.bytes : 0u) : p.bytes;
    uint32_t ph = 0, bytes = p.bytes;
    if (live && lead) {
        cs_mbar_lock(j);
        ph = e[CS_MB_PHASE];
        if (bytes == 0) bytes = (int32_t)e[CS_MB_TX] > 0 ? e[CS_MB_TX] : 0;  // (a map not known)
        if (e[CS_MB_PENDING] == 0 && (int32_t)e[CS_MB_TX] < (int32_t)all) n = 1;
        cs_mbar_unlock(j);
    }
    ph = cs_bcast(entry, ph, leader);
    bytes = cs_bcast(entry, bytes, leader);
    n = live ? cs_bcast(entry, n, leader) : 1u;
    if (n == 1) all = bytes;
    uint32_t g0 = p.dst / CS_GRANULE_BYTES, g1 = (p.dst + bytes - 1) / CS_GRANULE_BYTES;
    cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
    uint32_t tagged = cs_site_tag(p.site, rank);
    if (!live) {
        if (!cs_mbar_untracked(e)) f = {CS_MBARRIER_UNINIT, CS_NO_SITE, CS_NO_WARP};
    } else if (bytes == 0 || p.dst + bytes < p.dst || g1 >= S.granules) {
        f = {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};
    } else if (CS_PEER_BY_ISSUER) {  // (measurements only: measure.h)
    } else if (cs_vc_smem_on()) {
        CS_PROF(40);
        f = cs_mc_write_smem(slot, p, mine, n, bytes, seen, tagged, CS_AGENT_MBAR + j, ph + 1,
                             entry);
    } else {
        cs_view v = cs_make_view(slot, cs_warp());
        v.mine = seen;
        v.w = CS_MAX_WARPS;  // (no warp of this CTA: none of them is in program order with it)
        CS_PROF(40);
        if (n == 1) {
            cs_engine_write_split(entry, v, g0, g1, tagged, CS_AGENT_MBAR + j, ph + 1, f);
        } else {  // lane k takes a share of copy k % n
            uint32_t q = lane % n, d = cs_bcast(entry, mine.dst, q), b = cs_bcast(entry, mine.bytes, q);
            cs_engine_write_share(v, d / CS_GRANULE_BYTES, (d + b - 1) / CS_GRANULE_BYTES, lane / n,
                                  (32u - q + n - 1) / n, tagged, CS_AGENT_MBAR + j, ph + 1, f);
        }
    }
    CS_PROF(41);
    if (n == 1) {
        if (cs_any(entry, lead && f.kind != 0))  // (the call's record built only for a finding)
            cs_mc_record(lead ? f.kind : 0u, p.site, p.from, p.dst, bytes, p.mbar, &f);
    } else {  // each copy's first finding, as it alone records it (warp-uniform)
        uint32_t q = lane % n;
        for (uint32_t found = cs_ballot(entry, f.kind != 0); found;) {
            uint32_t src = cs_ffs(found) - 1, qs = src % n;
            cs_finding g = {cs_bcast(entry, f.kind, src), cs_bcast(entry, f.prev_site, src),
                            cs_bcast(entry, f.prev_warp, src)};
            uint32_t from = cs_bcast(entry, mine.from, qs), d = cs_bcast(entry, mine.dst, qs);
            uint32_t b = cs_bcast(entry, mine.bytes, qs);
            cs_mc_record(lead ? g.kind : 0u, p.site, from, d, b, p.mbar, &g);
            found &= ~cs_ballot(entry, q == qs);
        }
    }
    bool under = false;
    if (live && lead) {
        cs_mbar_lock(j);
        under = cs_mbar_copy_landed(e, j, ph, all, p.site, p.mbar, false);
        cs_mbar_unlock(j);
    }
    if (live && cs_any(entry, lead && under))
        cs_mbar_record(lead ? CS_MBARRIER_UNDERFLOW : 0u, p.site, p.mbar, e);
    return n;
}

CS_DEV void cs_dsmem_apply(uint32_t slot, const cs_mc_post_t& p, uint32_t entry);  // dsmem.h
CS_DEV uint32_t cs_mbar_peer_batch(cs_mailbox_t* m, uint32_t t, uint32_t h, const cs_mc_post_t& p,
                                   uint32_t entry, cs_mc_post_t& mine);  // dsmem.h
CS_DEV uint32_t cs_mbar_peer_apply(uint32_t slot, const cs_mc_post_t& p, const cs_mc_post_t& mine,
                                   uint32_t n, uint32_t entry);  // dsmem.h

// Apply the posts claimed so far, in order (a post claimed but still being written is
// waited for), by the lanes `entry` of this warp together, their first holding the
// mailbox's lock; or, while another warp holds it, wait until that warp has applied the
// posts claimed before this call. Warp-uniform on purpose: every call out of line (cs_engine_write,
// cs_record) is made by every lane, and the first lane alone runs only code without calls.
// A callee that uses the callee-saved convergence barriers clears them on entry; called by
// one lane while the others wait for it, that releases them, and the warp runs split
// from there on. Measured on the H100: with the drain called by one lane (or by each lane
// for itself, in turn, under the lock), warps split in the mbarrier probe, and the kernel
// hung in its closing barrier.cluster, one part of a warp waiting for the other.
CS_NOINLINE void cs_mc_drain(uint32_t slot, uint32_t entry) {
    CS_PROF(32);
    CS_STAMP_PART(8);
    cs_mailbox_t* m = cs_mailbox();
    uint32_t leader = cs_ffs(entry) - 1;
    bool lead = cs_lane() == leader, holder = false;
    // This probe needs the posts claimed before it applied. While another warp holds the
    // lock and applies them, wait for the tail to pass them rather than queue for the lock
    // (spinning compare-and-swaps slowed the holder down).
    uint32_t h0 = cs_bcast(entry, *(volatile uint32_t*)&m->head, leader);
    if (lead) {
        CS_PROF(34);
        CS_STAMP_PART(9);
        volatile cs_mailbox_t* vm = m;
        while ((int32_t)(vm->tail - h0) < 0) {
            if (vm->lock == 0 && cs_cas32(&m->lock, 0, 1) == 0) {
                holder = true;
                break;
            }
        }
        cs_fence_lock();
    }
    if (!cs_bcast(entry, holder, leader)) return;
    // The holder applies the posts claimed up to now (a batch may take later ones with
    // them), not those that keep coming while it applies: its own probe waits meanwhile,
    // and the next probe of any warp applies them.
    const uint32_t end = cs_bcast(entry, *(volatile uint32_t*)&m->head, leader);
    for (;;) {
        uint32_t t = cs_bcast(entry, *(volatile uint32_t*)&m->tail, leader);
        if ((int32_t)(end - t) <= 0) break;
        cs_mc_post_t* q = &m->post[t % CS_MAILBOX_ENTRIES];
        uint32_t since = cs_now_ms();
        bool ready = false;
        {
            CS_PROF(35);
            // (the post's words after its last: each lane's own acquire, not a fence)
            for (;;) {
                ready = cs_all(entry, cs_ld_acq_cluster(&q->seq) == t + 1);
                if (ready || cs_bcast(entry, cs_now_ms() - since > CS_DEADLOCK_MS, leader)) break;
            }
        }
        if (!ready) break;
        const volatile cs_mc_post_t* vq = q;
        cs_mc_post_t p = {vq->seq, vq->dst, vq->bytes, vq->mbar, vq->site, vq->from, vq->rel, vq->acq};
        uint32_t what = (p.from >> CS_POST_WHAT_SHIFT) & 0xFFu, n = 1;
        {
            CS_PROF(what >= CS_POST_MBAR ? 36u : what ? 37u : 38u);
            CS_STAMP_PART(10);
            cs_mc_post_t mine = p;
            uint32_t h = cs_bcast(entry, *(volatile uint32_t*)&m->head, leader);
            if (what >= CS_POST_MBAR)
                n = cs_mbar_peer_apply(slot, p, mine, cs_mbar_peer_batch(m, t, h, p, entry, mine),
                                       entry);
            else if (what)
                cs_dsmem_apply(slot, p, entry);
            else
                n = cs_mc_apply(slot, p, mine, cs_mc_batch(m, t, h, p, entry, mine), entry);
        }
        cs_fence_cluster();
        if (lead) *(volatile uint32_t*)&m->tail = t + n;
    }
    if (lead) cs_unlock(&m->lock);
}

// At the start of a probe that may look at bytes or an mbarrier a peer's copy reaches:
// the posts that came meanwhile are applied first, by the lanes that entered together
// (cs_mc_drain says why all of them).
CS_DEV void cs_mc_poll() {
    if (!cs_multicast_on()) return;
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return;
    uint32_t entry = cs_activemask();
    cs_mailbox_t* m = cs_mailbox();
    bool pending = *(volatile uint32_t*)&m->head != *(volatile uint32_t*)&m->tail;
    if (cs_any(entry, pending)) cs_mc_drain(slot, entry);
}

// The poll of a probe of shared-memory reads (this lane: n reads of `info`'s size, `stride`
// bytes apart, from addr): the posts pending are applied first only where one of them may
// write bytes in the span of the warp's reads here -- a copy, or a peer's write or atomic,
// over those bytes or over bytes not known (a post being written is waited for). A
// read is judged from its bytes' words, which no other post changes, and from its warp's
// clocks, which only the warp's own waits, barriers and releases move, whose probes apply
// every post claimed before them; the others are applied, in order, by the CTA's next probe
// that polls. A read of another CTA's bytes polls as before. Measured on an H200 (the
// clustered ring, whose consumers read a stage the posts of later stages do not reach, by
// A/B, three rounds): 1.730 -> 1.450 ms, the device's time alone; reads that never applied
// a post (a measurement build, not a model) 1.766 -> 1.427 ms by events.
CS_DEV void cs_mc_poll_read(uint64_t addr, uint32_t info, uint32_t n, uint32_t stride) {
    if (!cs_multicast_on()) return;
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return;
    uint32_t entry = cs_activemask(), leader = cs_ffs(entry) - 1;
    cs_mailbox_t* m = cs_mailbox();
    uint32_t t = cs_bcast(entry, *(volatile uint32_t*)&m->tail, leader);
    uint32_t h = cs_bcast(entry, *(volatile uint32_t*)&m->head, leader);
    if (h == t) return;
    uint32_t off = 0, at = cs_where(addr, (info >> CS_INFO_SPACE_SHIFT) & 3u, off);
    if (cs_any(entry, at == CS_AT_REMOTE)) return cs_mc_drain(slot, entry);
    uint64_t lo = off, hi = (uint64_t)off + (uint64_t)(n ? n - 1 : 0) * stride +
                            (info & CS_INFO_SIZE_MASK);
    if (at == CS_AT_ELSEWHERE) lo = hi = 0;
    uint32_t lo32 = lo < hi ? (uint32_t)lo : 0xFFFFFFFFu;
    uint32_t hi32 = lo < hi ? (hi > 0xFFFFFFFFull ? 0xFFFFFFFFu : (uint32_t)hi) : 0u;
    uint32_t LO = cs_min(entry, lo32), HI = cs_max(entry, hi32);
    if (LO >= HI) return;  // (no lane reads shared memory)
    // the pending posts, a lane each, as many rounds as they need
    const uint32_t r = cs_popc(entry & ((1u << cs_lane()) - 1u)), lanes = cs_popc(entry);
    const uint32_t pend = h - t;
    bool may = false, drain = false;
    for (uint32_t b = 0; b < pend && !drain; b += lanes) {
        if (b + r < pend) {
            const uint32_t k = t + b + r, want = k + 1;
            const cs_mc_post_t* q = &m->post[k % CS_MAILBOX_ENTRIES];
            // A post claimed and still being written (a few remote stores and a cluster
            // fence at its issuer) is waited for here, not by the drain behind the mailbox's
            // lock; a slot that holds a later post, or stays unwritten for DEADLOCK_MS, drains.
            uint32_t since = cs_now_ms(), seq;
            while ((seq = cs_ld_acq_cluster(&q->seq)) != want) {
                if ((int32_t)(seq - want) > 0 || cs_now_ms() - since > CS_DEADLOCK_MS) {
                    may = true;
                    break;
                }
            }
            if (!may) {
                const volatile cs_mc_post_t* vq = q;
                uint32_t what = (vq->from >> CS_POST_WHAT_SHIFT) & 0xFFu, dst = vq->dst;
                uint32_t bytes = vq->bytes;
                may = what < CS_POST_MBAR && what != CS_DSMEM_READ &&
                      (bytes == 0 || (dst < HI && (uint64_t)dst + bytes > LO));
            }
        }
        drain = cs_any(entry, may);
    }
    if (drain) cs_mc_drain(slot, entry);
}

// An access probe's poll: a read's by cs_mc_poll_read, any other access's by cs_mc_poll.
CS_DEV void cs_mc_poll_access(uint64_t addr, uint32_t info, uint32_t n, uint32_t stride) {
    if (cs_info_mode(info) == CS_MODE_READ) cs_mc_poll_read(addr, info, n, stride);
    else cs_mc_poll();
}
