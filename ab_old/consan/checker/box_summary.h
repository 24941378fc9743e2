// consan device checker: box summaries of the device-memory granule tables (FLAG_BOX_SUMMARY).

// ------------------------------------------------------------- box summaries
//
// FLAG_BOX_SUMMARY (modules whose copy engines write smem; docs/model.md "Box
// summaries"): per block of 2^bsum_shift granules, the latest clock of each writer
// and of each reader -- warps' reads, bulk-store and wgmma units' async reads -- with
// the reader's site. A copy over a block whose summary shows every access ordered
// before the issuing warp would find nothing in a walk: it stores its epochs and empty
// reader sets (what the walk leaves behind), so one lane pays a few vector loads and a
// store per granule, not round trips per granule.

CS_DEV uint32_t cs_nwg();
CS_DEV bool cs_box_summary_on() { return (S.flags & CS_FLAG_BOX_SUMMARY) && !cs_phase_mode(); }
CS_DEV uint32_t cs_box_summary_blocks() { return (S.granules + (1u << S.bsum_shift) - 1) >> S.bsum_shift; }
CS_DEV uint32_t* cs_box_summary(uint32_t slot, uint32_t b) {
    return (uint32_t*)S.bsum + ((uint64_t)slot * cs_box_summary_blocks() + b) * S.bsum_words;
}
CS_DEV uint32_t cs_box_summary_nreaders() { return 2 * S.nwarps + cs_nwg(); }
// Reader index r: warp r, the bulk-store unit of warp r - nwarps, the wgmma unit r - 2 nwarps.
CS_DEV uint32_t cs_box_summary_reader_tid(uint32_t r) {
    uint32_t nw = S.nwarps;
    return r < nw ? r : r < 2 * nw ? CS_AGENT_BULK + r - nw : CS_AGENT_WGMMA + r - 2 * nw;
}
CS_DEV uint32_t* cs_box_summary_rclock(uint32_t* s, uint32_t r) { return s + CS_BS_READERS + r; }
CS_DEV uint32_t* cs_box_summary_rsite(uint32_t* s, uint32_t r) {  // after the clocks: half the rest
    return s + CS_BS_READERS + (S.bsum_words - CS_BS_READERS) / 2 + r;
}

// Reads of granules [g0, g1] by reader index r at clock c (published before the reader's
// fence, like its reader-mask bit).
CS_DEV void cs_box_summary_read(uint32_t slot, uint32_t g0, uint32_t g1, uint32_t r, uint32_t c,
                         uint32_t site) {
    for (uint32_t b = g0 >> S.bsum_shift; b <= g1 >> S.bsum_shift; ++b) {
        uint32_t* s = cs_box_summary(slot, b);
        if (cs_ld32(cs_box_summary_rclock(s, r)) < c) {
            cs_max32(cs_box_summary_rclock(s, r), c);
            cs_st32(cs_box_summary_rsite(s, r), site);
        }
    }
}

// Writes of granules [g0, g1] by logical thread t at clock c (noted before the epochs).
CS_DEV void cs_box_summary_write(uint32_t slot, uint32_t g0, uint32_t g1, uint32_t t, uint32_t c) {
    uint64_t key = (1ull << 40) | ((uint64_t)t << 32);
    for (uint32_t b = g0 >> S.bsum_shift; b <= g1 >> S.bsum_shift; ++b) {
        uint32_t* s = cs_box_summary(slot, b);
        uint64_t* wr = (uint64_t*)(s + CS_BS_WRITERS);
        uint32_t i = 0;
        for (; i < CS_BSUM_WRITERS; ++i) {  // entries are claimed in order: no holes
            uint64_t e = cs_ld64(&wr[i]);
            if (e == 0 && (e = cs_cas64(&wr[i], 0, key | c)) == 0) break;
            if ((e >> 32) == (key >> 32)) {
                if ((uint32_t)e < c) cs_max64(&wr[i], key | c);
                break;
            }
        }
        if (i == CS_BSUM_WRITERS) cs_or32(&s[CS_BS_FLAGS], CS_BS_FLAG_OVERFLOW);
    }
}

CS_DEV void cs_box_summary_flag(uint32_t slot, uint32_t g0, uint32_t g1, uint32_t flag) {
    for (uint32_t b = g0 >> S.bsum_shift; b <= g1 >> S.bsum_shift; ++b)
        cs_or32(&cs_box_summary(slot, b)[CS_BS_FLAGS], flag);
}

// The issuing warp's clock of each reader index (all ones for its own reads: program
// order, and for units the module's clocks do not cover: they never read), taken once
// per copy. Up to CS_BOX_SUMMARY_FASTR readers in registers.
#define CS_BOX_SUMMARY_FASTR 24
struct cs_box_summary_clocks {
    uint32_t c[CS_BOX_SUMMARY_FASTR];
    uint32_t n;
};
CS_DEV void cs_box_summary_clocks_init(const cs_view& v, cs_box_summary_clocks& q) {
    q.n = cs_box_summary_nreaders();
#pragma unroll
    for (uint32_t r = 0; r < CS_BOX_SUMMARY_FASTR; ++r) {
        uint32_t t = cs_box_summary_reader_tid(r);
        q.c[r] = r < q.n && t != v.w && t < S.nlogical ? v.mine[t] : 0xFFFFFFFFu;
    }
}

// One block's summary as a copy looks at it: loaded in a few vector loads, judged after.
struct cs_box_summary_block {
    cs_u4 rc[CS_BOX_SUMMARY_FASTR / 4], h, w01, w23;
};
CS_DEV void cs_box_summary_load(uint32_t* s, const cs_box_summary_clocks& q, bool writers, cs_box_summary_block& x) {
#pragma unroll
    for (uint32_t k = 0; k < CS_BOX_SUMMARY_FASTR / 4; ++k)
        x.rc[k] = 4 * k < q.n && q.n <= CS_BOX_SUMMARY_FASTR ? cs_ld128(cs_box_summary_rclock(s, 4 * k))
                                                      : cs_u4{0, 0, 0, 0};
    if (writers) {
        x.h = cs_ld128(s);
        x.w01 = cs_ld128(s + CS_BS_WRITERS);
        x.w23 = cs_ld128(s + CS_BS_WRITERS + 4);
    }
}

// Is every read summary s saw ordered before a copy issued by warp v.w?
CS_DEV bool cs_box_summary_readers_ordered(const cs_view& v, uint32_t* s, const cs_box_summary_clocks& q,
                                    const cs_box_summary_block& x) {
    bool clear = true;
    if (q.n > CS_BOX_SUMMARY_FASTR) {  // many warps: one reader at a time
        for (uint32_t r = 0; r < q.n; ++r) {
            uint32_t t = cs_box_summary_reader_tid(r), c = cs_ld32(cs_box_summary_rclock(s, r));
            if (c && !cs_ordered(v.mine, v.w, t, c)) clear = false;
        }
        return clear;
    }
#pragma unroll
    for (uint32_t k = 0; k < CS_BOX_SUMMARY_FASTR / 4; ++k)
        clear = clear && x.rc[k].x <= q.c[4 * k] && x.rc[k].y <= q.c[4 * k + 1] &&
                x.rc[k].z <= q.c[4 * k + 2] && x.rc[k].w <= q.c[4 * k + 3];
    return clear;
}

// ...and every write, but those of `by` itself, with no flag set? by_i, by_c: the writer
// entry of `by` (CS_BSUM_WRITERS: none) and its clock.
CS_DEV bool cs_box_summary_writers_ordered(const cs_view& v, uint32_t by, const cs_box_summary_block& x,
                                    uint32_t& by_i, uint32_t& by_c) {
    uint64_t wr[CS_BSUM_WRITERS] = {((uint64_t)x.w01.y << 32) | x.w01.x,
                                    ((uint64_t)x.w01.w << 32) | x.w01.z,
                                    ((uint64_t)x.w23.y << 32) | x.w23.x,
                                    ((uint64_t)x.w23.w << 32) | x.w23.z};
    bool clear = x.h.x == 0;
    by_i = CS_BSUM_WRITERS;
    by_c = 0;
#pragma unroll
    for (uint32_t i = 0; i < CS_BSUM_WRITERS; ++i) {
        uint32_t t = (uint32_t)(wr[i] >> 32) & 0xFFu;
        if (wr[i] && t == by) by_i = i, by_c = (uint32_t)wr[i];
        else if (wr[i] && !cs_ordered(v.mine, v.w, t, (uint32_t)wr[i])) clear = false;
    }
    return clear;
}

// After the stores: the first reader of summary s not ordered before the copy.
CS_DEV cs_finding cs_box_summary_late_reader(const cs_view& v, uint32_t* s) {
    for (uint32_t r = 0; r < cs_box_summary_nreaders(); ++r) {
        uint32_t t = cs_box_summary_reader_tid(r), c = cs_ld32(cs_box_summary_rclock(s, r));
        if (c && !cs_ordered(v.mine, v.w, t, c))
            return {t < CS_MAX_WARPS ? CS_RACE_WAR : CS_ASYNC_PENDING_READ,
                    cs_ld32(cs_box_summary_rsite(s, r)), t};
    }
    return {0, CS_NO_SITE, CS_NO_WARP};
}
