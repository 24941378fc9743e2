// consan device checker: granule tables in shared memory: copies and asynchronous readers.
//
// A copy engine's box written block by block; reads by bulk-store and wgmma units;
// the marks of mbarrier objects.

// with the granule each is at, and an epoch already judged clean.
struct cs_vc_smem_copy {
    cs_finding fw, fr;
    uint32_t aw, ar, ok;
};

// The epochs of one block [a, z] of a copy's write, in general: whole blocks are taken
// whole (one word) once their old epochs are judged -- one when a copy held the block, else
// 32 of them, four at a time while they equal one judged clean -- others, and blocks with
// an mbarrier in them, granule by granule.
CS_DEV void cs_vc_smem_copy_block_body(const cs_vc_smem_ctx_t& x, uint32_t b, uint32_t a, uint32_t z,
                                   uint32_t site, uint32_t by, uint32_t now, cs_vc_smem_copy& c) {
    bool whole = z - a == CS_VC_BLOCK - 1, held = false;
    while (whole && !held) {
        uint32_t bt = cs_vc_smem_bt(x, b), mbar = 0;
        if (bt) {  // held whole by a copy: one epoch to judge
            uint32_t e = bt & ~CS_BT_WHOLE;
            if (e != c.ok) {
                cs_finding y = cs_vc_smem_judge_write(x, e, cs_vc_smem_bsite(x, b), false, by);
                if (y.kind && !c.fw.kind) c.fw = y, c.aw = a;
                if (!y.kind) c.ok = e;
            }
        } else {
            for (uint32_t g = a; g <= z; g += 4) {
                cs_u4 e = cs_s_ld4(x.W + 4u * g);
                if (e.x == c.ok && e.y == c.ok && e.z == c.ok && e.w == c.ok) continue;
                uint32_t v[4] = {e.x, e.y, e.z, e.w};
                for (uint32_t i = 0; i < 4; ++i) {
                    if (v[i] == c.ok) continue;
                    mbar |= v[i] & CS_VW_MBAR;
                    cs_finding y = cs_vc_smem_judge_write(x, v[i], x.ws + g + i, false, by);
                    if (y.kind && !c.fw.kind) c.fw = y, c.aw = g + i;
                    if (!y.kind) c.ok = v[i];
                }
            }
        }
        if (mbar) break;  // an mbarrier in the block keeps its own epoch: granules below
        held = cs_s_cas(x.BT + 4u * b, bt, CS_BT_WHOLE | now) == bt;
        if (held) cs_g_st(cs_vc_smem_bsite(x, b), site);
        else if (c.fw.kind && c.aw >= a) c.fw = {0, CS_NO_SITE, CS_NO_WARP};  // judged again
    }
    if (held) return;
    cs_vc_smem_claim(x, b);
    for (uint32_t g = a; g <= z; ++g) {
        uint32_t e = cs_s_ld(x.W + 4u * g);
        if (e & CS_VW_MBAR) {  // the object stays an mbarrier
            if (!c.fw.kind) c.fw = {CS_MBARRIER_DATA_ACCESS, cs_ld32(x.ws + g), cs_vw_t(e)}, c.aw = g;
            continue;
        }
        if (e != c.ok && !whole) {
            cs_finding y = cs_vc_smem_judge_write(x, e, x.ws + g, false, by);
            if (y.kind && !c.fw.kind) c.fw = y, c.aw = g;
        }
        cs_s_st(x.W + 4u * g, now);
        cs_g_st(x.ws + g, site);
    }
}

CS_NOINLINE void cs_vc_smem_copy_block(const cs_vc_smem_ctx_t& x, uint32_t b, uint32_t a, uint32_t z,
                                   uint32_t site, uint32_t by, uint32_t now, cs_vc_smem_copy& c) {
    cs_vc_smem_copy_block_body(x, b, a, z, site, by, now, c);
}

CS_NOINLINE void cs_vc_smem_copy_readers(const cs_vc_smem_ctx_t& x, const cs_reader_clocks_t& q, uint32_t b,
                                     uint32_t a, uint32_t z, cs_vc_smem_copy& c) {
    cs_vc_smem_block_readers(x, &q, b, a, z, c.fr, c.ar);
}

// The common case of a copy, in loops that keep few values live (no spills): whole blocks
// [b, e) that a copy held whole with the epoch `ok` take the new word (wnow) and site;
// returns the first block that needs more. Plain stores after the look, sixteen blocks at
// a time (their words' loads in flight together: one lane's dependent round trips were
// most of a copy): a lane giving a block's granules their epochs back in between (a
// warp's write racing with this copy) may leave the copy's word unseen (the window of
// cs_vc_smem_engine).
#define CS_RUN_STEP 16
CS_DEV uint32_t cs_vc_smem_diff4(cs_u4 v, uint32_t held) {  // 0: all four words are `held`
    return ((v.x ^ held) | (v.y ^ held)) | ((v.z ^ held) | (v.w ^ held));
}
CS_DEV bool cs_vc_smem_held4(cs_u4 v, uint32_t held) { return cs_vc_smem_diff4(v, held) == 0; }
CS_NOINLINE uint32_t cs_vc_smem_copy_run(cs_sp BT, uint32_t* bsite, uint32_t b, uint32_t e,
                                     uint32_t ok, uint32_t wnow, uint32_t site) {
    const uint32_t held = ok ^ CS_BT_WHOLE;  // (never matches a word of 0 or LOCKED)
    const cs_u4 now = {wnow, wnow, wnow, wnow};
    for (; b < e && (b & 3u); ++b) {  // (BT and the sites are 16-byte aligned at b % 4 == 0)
        if (cs_s_ld(BT + 4u * b) != held) return b;
        cs_s_st(BT + 4u * b, wnow);
        cs_g_st(bsite + b, site);
    }
    for (; b + CS_RUN_STEP <= e; b += CS_RUN_STEP) {
        static_assert(CS_RUN_STEP == 16, "a tree of four words' differences");
        cs_u4 v[CS_RUN_STEP / 4];
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN_STEP / 4; ++i) v[i] = cs_s_ld4(BT + 4u * (b + 4 * i));
        // (a tree, not a chain of compares: one lane's dependent instructions were the cost)
        uint32_t d = (cs_vc_smem_diff4(v[0], held) | cs_vc_smem_diff4(v[1], held)) |
                     (cs_vc_smem_diff4(v[2], held) | cs_vc_smem_diff4(v[3], held));
        if (d) break;
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN_STEP / 4; ++i) {
            cs_s_st4(BT + 4u * (b + 4 * i), now);
            cs_g_st4(bsite + b + 4 * i, site);
        }
    }
    for (; b + 4 <= e; b += 4) {
        if (!cs_vc_smem_held4(cs_s_ld4(BT + 4u * b), held)) break;
        cs_s_st4(BT + 4u * b, now);
        cs_g_st4(bsite + b, site);
    }
    for (; b < e; ++b) {
        if (cs_s_ld(BT + 4u * b) != held) break;
        cs_s_st(BT + 4u * b, wnow);
        cs_g_st(bsite + b, site);
    }
    return b;
}

// ...and their readers: whole blocks [b, e) whose summary (up to 4 readers, one load) is
// empty or ordered before the copy (clocks q0..q3) get their bytes and summary emptied;
// returns the first block that needs more. Eight summaries in flight at a time.
#define CS_CLEAR_STEP 8
CS_DEV bool cs_vc_smem_clear_ok(cs_u4 v, uint32_t q0, uint32_t q1, uint32_t q2, uint32_t q3) {
    return !(v.x > q0 || v.y > q1 || v.z > q2 || v.w > q3);
}
CS_NOINLINE uint32_t cs_vc_smem_copy_clear(cs_sp RS, uint32_t b, uint32_t e, uint32_t q0,
                                       uint32_t q1, uint32_t q2, uint32_t q3) {
    const cs_u4 zero = {0, 0, 0, 0};  // (the readers' bytes go stale: cs_vc_smem_fresh)
    for (; b + CS_CLEAR_STEP <= e; b += CS_CLEAR_STEP) {
        static_assert(CS_CLEAR_STEP == 8, "a tree of eight summaries' maxima");
        cs_u4 v[CS_CLEAR_STEP];
#pragma unroll
        for (uint32_t i = 0; i < CS_CLEAR_STEP; ++i) v[i] = cs_s_ld4(RS + 16u * (b + i));
        // each reader's latest read over the eight blocks, by a tree of maxima
        cs_u4 m[4];
#pragma unroll
        for (uint32_t i = 0; i < 4; ++i) m[i] = cs_u4_max(v[2 * i], v[2 * i + 1]);
        m[0] = cs_u4_max(cs_u4_max(m[0], m[1]), cs_u4_max(m[2], m[3]));
        if (!cs_vc_smem_clear_ok(m[0], q0, q1, q2, q3)) break;
#pragma unroll
        for (uint32_t i = 0; i < CS_CLEAR_STEP; ++i) cs_s_st4(RS + 16u * (b + i), zero);
    }
    for (; b < e; ++b) {
        cs_u4 v = cs_s_ld4(RS + 16u * b);
        if (!cs_vc_smem_clear_ok(v, q0, q1, q2, q3)) break;
        cs_s_st4(RS + 16u * b, zero);
    }
    return b;
}

// A copy engine's write of granules [g0, g1] by `by` at clk, issued by warp w (one lane):
// epochs of every block first (the runs above, anything else block by block), one fence,
// then the readers likewise. Plain stores: a warp's write racing with the copy in the same
// few cycles may go unseen by both.
CS_NOINLINE void cs_vc_smem_engine(uint32_t slot, uint32_t w, uint32_t g0, uint32_t g1,
                               uint32_t site, uint32_t by, uint32_t clk, cs_finding& f) {
    if (!cs_vc_smem_clock_fits(clk, site)) return;
    const cs_vc_smem_ctx_t x = cs_vc_smem_ctx(slot, w);
    const uint32_t now = cs_vw(by, clk, 0);
    cs_vc_smem_copy c = {{0, CS_NO_SITE, CS_NO_WARP}, {0, CS_NO_SITE, CS_NO_WARP}, 0, 0, 0xFFFFFFFFu};
    const uint32_t b0 = g0 / CS_VC_BLOCK, b1 = g1 / CS_VC_BLOCK;
    const uint32_t w0 = (g0 + CS_VC_BLOCK - 1) / CS_VC_BLOCK, w1 = (g1 + 1) / CS_VC_BLOCK;  // whole: [w0, w1)
    uint32_t* bsite = cs_vc_smem_bsite(x, 0);
    {
    CS_PROF(22);
    if (w0 < w1) {  // the word a copy left on the first whole block: judged once, up front
        uint32_t bt = cs_s_ld(x.BT + 4u * w0);
        if (bt != CS_BT_LOCKED && (bt & CS_BT_WHOLE) &&
            !cs_vc_smem_judge_write(x, bt & ~CS_BT_WHOLE, bsite + w0, false, by).kind)
            c.ok = bt & ~CS_BT_WHOLE;
    }
    for (uint32_t b = b0; b <= b1;) {
        if (b >= w0 && b < w1) {
            uint32_t e = cs_vc_smem_copy_run(x.BT, bsite, b, w1, c.ok, CS_BT_WHOLE | now, site);
            if (e > b) {
                b = e;
                continue;
            }
        }
        uint32_t a = cs_block_lo(b, g0);
        uint32_t z = cs_block_hi(b, g1);
        cs_vc_smem_copy_block(x, b, a, z, site, by, now, c);
        ++b;
    }
    }
    cs_reader_clocks_t q;
    {
    CS_PROF(23);
    cs_fence();
    q = cs_vc_smem_reader_clocks(x);
    }
    CS_PROF(24);
    for (uint32_t b = b0; b <= b1;) {
        if (b >= w0 && b < w1 && x.nr <= 4) {
            uint32_t e = cs_vc_smem_copy_clear(x.RS, b, w1, q.c[0], q.c[1], q.c[2], q.c[3]);
            if (e > b) {
                b = e;
                continue;
            }
        }
        uint32_t a = cs_block_lo(b, g0);
        uint32_t z = cs_block_hi(b, g1);
        cs_vc_smem_copy_readers(x, q, b, a, z, c);
        ++b;
    }
    uint32_t k;
    if (!f.kind) f = cs_vc_smem_first(c.fw, 0, c.aw, c.fr, 0, c.ar, k);
}

// A lane's block of a box that starts and ends on blocks, in the case a ring's refills
// make: a copy held it whole with an epoch judged clean (most blocks share one: judged once
// a lane), taken over by one compare-and-swap. False: anything else, for the general body,
// which looks again from the start (so the tables and findings are what it leaves). On the
// H100 the general body's common path ran 80 instructions a block (ncu, the TMA ring); with
// this and the readers' short path below a box's write ran 537 -> 384 a call there.
CS_DEV bool cs_vc_smem_copy_held(const cs_vc_smem_ctx_t& x, uint32_t b, uint32_t* bsite,
                                 uint32_t site, uint32_t by, uint32_t now, cs_vc_smem_copy& c) {
    uint32_t bt = cs_s_ld(x.BT + 4u * b);
    if (bt == CS_BT_LOCKED || !(bt & CS_BT_WHOLE)) return false;
    uint32_t e = bt & ~CS_BT_WHOLE;
    if (e != c.ok) {
        if (cs_vc_smem_judge_write(x, e, bsite + b, false, by).kind) return false;
        c.ok = e;
    }
    if (cs_s_cas(x.BT + 4u * b, bt, CS_BT_WHOLE | now) != bt) return false;
    cs_g_st(bsite + b, site);
    return true;
}
// ...and its readers, where there are four at most: none, or all ordered before the copy,
// empties their summary in one store (a warp's or a bulk-store unit's bytes go stale:
// cs_vc_smem_fresh; a wgmma unit's row is emptied first and its summary says 1, bytes valid
// and no read yet), as cs_vc_smem_block_readers leaves them. False: anything else, for it.
CS_DEV bool cs_vc_smem_readers_clear4(const cs_vc_smem_ctx_t& x, const cs_reader_clocks_t& q,
                                      uint32_t b, uint32_t wg0) {
    cs_sp rs = x.RS + 16u * b;  // (rss is 4: one 16-byte summary a block)
    cs_u4 v = cs_s_ld4(rs);
    if (!(v.x | v.y | v.z | v.w)) return true;
    if (!cs_vc_smem_clear_ok(v, q.c[0], q.c[1], q.c[2], q.c[3])) return false;
    const uint32_t c[4] = {v.x, v.y, v.z, v.w};
    uint32_t now[4], rows = 0;
#pragma unroll
    for (uint32_t ri = 0; ri < 4; ++ri) {  // (reader indices from wg0 on: wgmma units)
        bool row = ri >= wg0 && c[ri] != 0;
        if (row) cs_vc_smem_empty(cs_vc_smem_row(x, b, ri));
        rows |= row ? 1u : 0u;
        now[ri] = row ? 1u : 0u;
    }
    if (rows) cs_fence_lock();  // the bytes empty before the summary says so
    cs_s_st4(rs, cs_u4{now[0], now[1], now[2], now[3]});
    return true;
}

// ...and where there are five to eight, none of them a wgmma unit's (two 16-byte
// summaries a block): the same, in two loads and two stores. (On the H100, the clustered
// ring's consumer, eight warps reading: each lane taking one block of a peer's copies, the
// readers' look read each summary word alone, 4.6k cycles a batch.)
CS_DEV bool cs_vc_smem_readers_clear8(const cs_vc_smem_ctx_t& x, const cs_reader_clocks_t& q,
                                      uint32_t b) {
    static_assert(CS_VC_SMEM_FASTR >= 8, "the eight readers' clocks in q");
    cs_sp rs = x.RS + 32u * b;  // (rss is 8)
    cs_u4 u = cs_s_ld4(rs), v = cs_s_ld4(rs + 16u);
    if (!((u.x | u.y | u.z | u.w) | (v.x | v.y | v.z | v.w))) return true;
    if (!cs_vc_smem_clear_ok(u, q.c[0], q.c[1], q.c[2], q.c[3]) ||
        !cs_vc_smem_clear_ok(v, q.c[4], q.c[5], q.c[6], q.c[7]))
        return false;
    const cs_u4 zero = {0, 0, 0, 0};  // (the readers' bytes go stale: cs_vc_smem_fresh)
    cs_s_st4(rs, zero);
    cs_s_st4(rs + 16u, zero);
    return true;
}

// The same write by the lanes `lanes` of warp w together (every one calls it, with the
// same arguments): lane r of n takes blocks b0 + r, b0 + r + n, ... -- its epochs, a
// fence, then their readers -- with no call out of line on the way (a call from a branch
// would release the lanes waiting for it: instrument/converge.py). The finding at the
// lowest granule is every lane's (`own`: each lane's first in its own blocks, `at` all
// ones where it has none). `seen`, where given, is the clock the write is judged with in
// place of warp w's (a peer's copy: w is then CS_MAX_WARPS, multicast.h).
CS_NOINLINE cs_found cs_vc_smem_engine_lanes(uint32_t slot, uint32_t w, uint32_t g0, uint32_t g1,
                                         uint32_t site, uint32_t by, uint32_t clk,
                                         uint32_t lanes, const uint32_t* seen, bool own) {
    cs_found out = {{0, CS_NO_SITE, CS_NO_WARP}, 0};
    CS_NULL_ENGINE_WRITE(return out;)
    if (!cs_vc_smem_clock_fits(clk, site)) return out;
    cs_vc_smem_ctx_t x = cs_vc_smem_ctx(slot, w);
    if (seen) x.mine = seen;
    const uint32_t now = cs_vw(by, clk, 0);
    const uint32_t r = cs_popc(lanes & ((1u << cs_lane()) - 1u)), n = cs_popc(lanes);
    cs_vc_smem_copy c = {{0, CS_NO_SITE, CS_NO_WARP}, {0, CS_NO_SITE, CS_NO_WARP}, 0, 0, 0xFFFFFFFFu};
    const uint32_t b0 = g0 / CS_VC_BLOCK, b1 = g1 / CS_VC_BLOCK;
    const bool whole = g0 % CS_VC_BLOCK == 0 && (g1 + 1) % CS_VC_BLOCK == 0;
    uint32_t* bsite = cs_vc_smem_bsite(x, 0);
    {
    CS_PROF(54);
    for (uint32_t b = b0 + r; b <= b1; b += n) {
        if (whole && cs_vc_smem_copy_held(x, b, bsite, site, by, now, c)) continue;
        uint32_t a = cs_block_lo(b, g0);
        uint32_t z = cs_block_hi(b, g1);
        cs_vc_smem_copy_block_body(x, b, a, z, site, by, now, c);
    }
    }
    cs_reader_clocks_t q;
    {
    CS_PROF(55);
    cs_fence();  // (each lane looks at the readers of its own blocks)
    q = cs_vc_smem_reader_clocks(x);
    }
    const bool clear4 = whole && x.nr <= 4;
    const uint32_t wg0 = cs_vc_smem_nwr() + cs_vc_smem_nbulk();
    const bool clear8 = whole && x.nr > 4 && x.nr <= 8 && wg0 >= x.nr;
    {
    CS_PROF(56);
    for (uint32_t b = b0 + r; CS_COPY_READERS && b <= b1; b += n) {
        if (clear4 && cs_vc_smem_readers_clear4(x, q, b, wg0)) continue;
        if (clear8 && cs_vc_smem_readers_clear8(x, q, b)) continue;
        uint32_t a = cs_block_lo(b, g0);
        uint32_t z = cs_block_hi(b, g1);
        cs_vc_smem_block_readers(x, &q, b, a, z, c.fr, c.ar);
    }
    }
    bool epoch = c.fw.kind && (!c.fr.kind || c.aw <= c.ar);  // (as cs_vc_smem_first)
    cs_finding f = epoch ? c.fw : c.fr;
    uint32_t at = f.kind ? (epoch ? c.aw : c.ar) : 0xFFFFFFFFu;
    if (own) return {f, at};
    uint32_t low = cs_min(lanes, at);
    if (low == 0xFFFFFFFFu) return out;
    int src = cs_ffs(cs_ballot(lanes, at == low)) - 1;
    out.f = {cs_bcast(lanes, f.kind, src), cs_bcast(lanes, f.prev_site, src),
             cs_bcast(lanes, f.prev_warp, src)};
    out.at = low;
    return out;
}

// An async reader's (bulk-store unit) reads of granules [g0, g1] at clk for warp w:
// published, fenced, judged like a warp's read plus the proxy rule, by the lanes `lanes`
// together (every one calls this with the same arguments), a block each in turn. `lead`
// puts the findings into `sink` (distinct ones, with their byte ranges) in granule order,
// as one lane walking them would have. (On the H100, one lane walking a TMA store's 16 KiB
// box was nearly all of a Triton TMA add-into kernel's time: ~500k cycles a store.)
CS_DEV void cs_vc_smem_async_read(uint32_t lanes, uint32_t lead, uint32_t slot, uint32_t w,
                                  uint32_t ri, uint32_t clk, uint32_t g0, uint32_t g1,
                                  uint32_t site, uint32_t proxy, cs_sink& sink) {
    cs_vc_smem_ctx_t x = cs_vc_smem_ctx(slot, w);
    const uint32_t r = cs_popc(lanes & ((1u << cs_lane()) - 1u)), n = cs_popc(lanes);
    const uint32_t b0 = g0 / CS_VC_BLOCK, b1 = g1 / CS_VC_BLOCK;
    for (uint32_t b = b0 + r; b <= b1; b += n) {  // (a block's summary: one lane's)
        uint32_t a = cs_block_lo(b, g0);
        uint32_t z = cs_block_hi(b, g1);
        cs_vc_smem_publish(x, ri, clk, a, z, site, false);  // (a bulk-store unit: one warp's)
    }
    cs_fence();  // (each lane looks at the writes of the blocks it published)
    uint32_t ok = 0xFFFFFFFFu;
    const uint32_t base = S.vsh_base;
    for (uint32_t k = b0; k <= b1; k += n) {  // (warp-uniform: a block per lane a round)
        uint32_t b = k + r, a = cs_block_lo(b, g0);
        uint32_t z = cs_block_hi(b, g1);
        uint32_t at = a;
        cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
        if (b <= b1) f = cs_vc_smem_look(x, a, z, proxy, ok, at);
        // the lowest lane with a finding gives it, then looks on past it in its block
        for (uint32_t has = cs_ballot(lanes, f.kind != 0); has; has = cs_ballot(lanes, f.kind != 0)) {
            int src = cs_ffs(has) - 1;
            cs_finding y = {cs_bcast(lanes, f.kind, src), cs_bcast(lanes, f.prev_site, src),
                            cs_bcast(lanes, f.prev_warp, src)};
            uint32_t ya = cs_bcast(lanes, at, src);
            if (cs_lane() == lead)
                cs_sink_add(sink, y, base + ya * CS_GRANULE_BYTES, base + (ya + 1) * CS_GRANULE_BYTES);
            if (cs_lane() == (uint32_t)src) {
                f = {0, CS_NO_SITE, CS_NO_WARP};
                if (at < z) {
                    at = at + 1;
                    f = cs_vc_smem_look(x, at, z, proxy, ok, at);
                }
            }
        }
    }
}

// mbarrier init / inval (off: a window offset): the object's granules carry (or lose) the
// mark ordinary accesses are caught by.
CS_DEV void cs_vc_smem_mark(uint32_t slot, uint32_t off, uint32_t w, uint32_t clk, bool live) {
    if (off < S.vsh_base) return;
    cs_vc_smem_ctx_t x = cs_vc_smem_ctx(slot, w);
    off -= S.vsh_base;
    for (uint32_t g = off / CS_GRANULE_BYTES; g <= (off + 7) / CS_GRANULE_BYTES && g < x.gp; ++g) {
        cs_vc_smem_claim(x, g / CS_VC_BLOCK);
        cs_s_st(x.W + 4u * g, cs_vw(w, clk, live ? CS_VW_MBAR : 0u));
    }
}
CS_DEV bool cs_vc_smem_is_mbar(uint32_t slot, uint32_t g) {  // g: a window granule
    cs_vc_smem_ctx_t x = cs_vc_smem_ctx(slot, cs_warp());
    uint32_t b = S.vsh_base / CS_GRANULE_BYTES;
    if (g < b || g - b >= x.gp || cs_vc_smem_bt(x, (g - b) / CS_VC_BLOCK)) return false;
    return cs_s_ld(x.W + 4u * (g - b)) & CS_VW_MBAR;
}
