// consan device checker: findings and the violation log.
//
// A probe's finding (kind, earlier site, earlier warp); the lanes' findings merged into
// records; records written to the log the host reads back, even after a crash.

// ------------------------------------------------------------- violation log

// A granule's site word written from another CTA of the cluster carries that CTA's rank + 1
// in its high bits (abi.SITE_RANK_SHIFT; a rank too large for them leaves it untagged).
CS_DEV uint32_t cs_site_tag(uint32_t site, uint32_t rank) {
    return rank + 1 < (1u << (32 - CS_SITE_RANK_SHIFT)) ? site | ((rank + 1) << CS_SITE_RANK_SHIFT)
                                                         : site;
}
CS_DEV uint32_t cs_site_rank(uint32_t word) { return word >> CS_SITE_RANK_SHIFT; }  // 0: this CTA

// Kind 0 records nothing: lanes that must all make the call pass it (multicast.h).
CS_NOINLINE void cs_record(const cs_record_t& given) {
    if (given.kind == 0) return;
    // An earlier site from a granule a peer CTA's copy wrote carries that CTA's rank + 1
    // in its high bits (multicast.h): the record keeps them apart.
    cs_record_t r = given;
    if (r.prev_site != CS_NO_SITE && cs_site_rank(r.prev_site) != 0) {
        r.prev_rank = cs_site_rank(r.prev_site);
        r.prev_site &= (1u << CS_SITE_RANK_SHIFT) - 1u;
    }
    // ...and its writer, warp w of that CTA, is tid TID_PEER + w (dsmem.h)
    if (r.prev_warp - CS_TID_PEER < CS_MAX_WARPS) r.prev_warp -= CS_TID_PEER;
    cs_log_header_t* h = (cs_log_header_t*)S.log;
    cs_key_t* keys = (cs_key_t*)S.keys;
    cs_gadd32(&h->occurrences, 1);
    uint64_t key = ((uint64_t)r.kind << CS_KEY_KIND_SHIFT) |
                   ((uint64_t)(r.site & CS_KEY_SITE_MASK) << CS_KEY_SITE_BITS) |
                   (uint64_t)(r.prev_site & CS_KEY_SITE_MASK);
    uint32_t hsh = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) % CS_KEY_TABLE_ENTRIES;
    cs_key_t* k = 0;
    for (uint32_t i = 0; i < 64; ++i) {
        cs_key_t* e = &keys[(hsh + i) % CS_KEY_TABLE_ENTRIES];
        uint64_t cur = cs_gld64(&e->key);
        if (cur == 0) cur = cs_gcas64(&e->key, 0, key);
        if (cur == 0 || cur == key) { k = e; break; }
    }
    if (k == 0) {
        cs_gadd32(&h->key_overflow, 1);
    } else if (cs_gadd32(&k->count, 1) >= CS_RECORDS_PER_KEY) {
        cs_gadd32(&h->dropped, 1);
        return;
    }
    uint32_t idx = cs_gadd32(&h->stored, 1);
    if (idx >= S.log_capacity) {
        cs_gadd32(&h->dropped, 1);
        return;
    }
    if (k) cs_gadd32(&k->stored, 1);
    // Fields first, kind last: a record is valid once its kind is non-zero,
    // so a log read after a crash never shows a half-written record.
    cs_record_t* out = (cs_record_t*)S.records + idx;
    cs_record_t tmp = r;
    uint32_t kind = tmp.kind;
    tmp.kind = 0;
    const uint32_t* src = (const uint32_t*)&tmp;
    uint32_t* dst = (uint32_t*)out;
    for (uint32_t i = 1; i < sizeof(cs_record_t) / 4; ++i) cs_sst32(dst + i, src[i]);
    cs_fence_sys();
    cs_sst32(dst, kind);
    cs_fence_sys();
}

CS_DEV cs_record_t cs_blank(uint32_t kind, uint32_t site) {
    cs_record_t r = {};
    r.kind = kind;
    r.site = site;
    r.prev_site = CS_NO_SITE;
    r.warp = cs_warp();
    r.prev_warp = CS_NO_WARP;
    r.lanes = cs_activemask() & ~cs_echo_lanes();
    uint32_t c[3];
    cs_cta_id(c);
    r.cta_x = c[0]; r.cta_y = c[1]; r.cta_z = c[2];
    r.cluster_rank = cs_ctarank();
    return r;
}

struct cs_finding { uint32_t kind, prev_site, prev_warp; };

// No race.waw where this warp's run of the store `site` wrote what another warp's run of it
// wrote (cs_same_store: replicated stores, docs/model.md). The earlier write's site is not
// compared: a granule's epoch and site are two words, and a writer between the two leaves
// the older site there (seen on the H100: the replicas of a Triton store reported with
// the site of the write before them).
CS_DEV cs_finding cs_replicated(const cs_finding& y, uint32_t site) {
    if (y.kind == CS_RACE_WAW && cs_same_store(site, y.prev_warp))
        return {0, CS_NO_SITE, CS_NO_WARP};
    return y;
}

// One record per distinct finding among the lanes of `active` (every one of them calls
// this): lanes that agree merge their byte ranges [lo, hi). True in the lane that records,
// with `r` filled but for the fields its event adds; the caller then calls cs_record.
CS_DEV bool cs_merged_record(uint32_t active, const cs_finding& f, uint32_t site, uint32_t lo,
                             uint32_t hi, cs_record_t& r) {
    uint64_t key = ((uint64_t)f.kind << 48) | ((uint64_t)f.prev_warp << 32) | f.prev_site;
    uint32_t same = cs_match(active, key);
    lo = cs_min(same, lo);
    hi = cs_max(same, hi);
    if (!f.kind || cs_lane() != (uint32_t)(cs_ffs(same) - 1)) return false;
    r = cs_blank(f.kind, site);
    r.prev_site = f.prev_site;
    r.prev_warp = f.prev_warp;
    r.lanes = same & ~cs_echo_lanes();
    r.offset_lo = lo;
    r.offset_hi = hi;
    r.clock = cs_clock_sh[cs_warp()];
    return true;
}

struct cs_found { cs_finding f; uint32_t at; };

#define CS_SINK 16  // distinct (kind, earlier site, earlier warp) kept per operation
struct cs_sink {
    cs_finding f[CS_SINK];
    uint32_t lo[CS_SINK], hi[CS_SINK], n;
};
CS_DEV void cs_sink_add(cs_sink& s, const cs_finding& f, uint32_t lo, uint32_t hi) {
    uint32_t i = 0;
    while (i < s.n && !(s.f[i].kind == f.kind && s.f[i].prev_site == f.prev_site &&
                        s.f[i].prev_warp == f.prev_warp)) ++i;
    if (i == s.n) {
        if (s.n == CS_SINK) return;  // the first ones already tell the story
        s.f[s.n++] = f;
        s.lo[i] = lo;
    }
    s.hi[i] = hi;
}
