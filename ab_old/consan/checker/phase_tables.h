// consan device checker: phase mode, tables in device memory (FLAG_PHASE_MODE).

// ------------------------------------------------------------- phase mode
//
// When the kernel synchronises only with CTA-wide barriers, two accesses by
// different warps are ordered exactly when a CTA-wide barrier lies between
// them, i.e. when their CTA phases differ. Each warp keeps a bitmap of the
// granules it read in the current phase (two bitmaps, by phase parity); a
// write epoch records the writer's phase. No vector clocks are needed.

CS_DEV uint32_t* cs_readbits(uint32_t slot, uint32_t w, uint32_t parity) {
    uint32_t words = (S.granules + 31) / 32;
    return (uint32_t*)S.readbits + (((uint64_t)slot * S.nwarps + w) * 2 + parity) * words;
}


CS_DEV void cs_phase_read(uint32_t slot, uint32_t w, uint32_t phase, uint32_t g, uint32_t site,
                          cs_finding& f) {
    uint32_t* word = cs_readbits(slot, w, phase & 1) + (g >> 5);
    uint32_t bit = 1u << (g & 31);
    if (cs_ld32(word) & bit) return;  // read already this phase: a later writer sees the bit
    cs_or32(word, bit);
    cs_st64((uint64_t*)S.rsite + cs_gidx(slot, g), ((uint64_t)phase << 32) | site);
    cs_fence();  // publish the read, then look at the write (Dekker with cs_phase_write)
    uint64_t ww = cs_ld64(cs_gent(slot, g));
    if ((ww >> CS_WW_GEN_SHIFT) != cs_gen_sh) {
        if (!f.kind) f = {CS_UNINIT_READ, CS_NO_SITE, CS_NO_WARP};
        return;
    }
    uint32_t t = (uint32_t)(ww >> CS_WW_TID_SHIFT) & 0xFFu;
    if (t != w && (uint32_t)ww == phase && !f.kind)
        f = {CS_RACE_RAW, cs_ld32((uint32_t*)S.wsite + cs_gidx(slot, g)), t};
}

CS_DEV void cs_phase_write(uint32_t slot, uint32_t w, uint32_t phase, uint32_t g, uint32_t site,
                           bool atomic, cs_finding& f) {
    uint64_t* e = cs_gent(slot, g);
    uint32_t* ws = (uint32_t*)S.wsite + cs_gidx(slot, g);
    uint64_t gen = cs_gen_sh;
    uint64_t flags = atomic ? CS_WW_FLAG_ATOMIC : 0;
    uint64_t now = (gen << CS_WW_GEN_SHIFT) | (flags << CS_WW_FLAGS_SHIFT) |
                   ((uint64_t)w << CS_WW_TID_SHIFT) | phase;
    uint64_t old = cs_ld64(e);
    if (old == now) return;  // rewritten by this warp this phase: nothing new to check
    uint32_t t = (uint32_t)(old >> CS_WW_TID_SHIFT) & 0xFFu;
    if ((old >> CS_WW_GEN_SHIFT) == gen && t == w) {
        cs_st64(e, now);
        cs_st32(ws, site);
    } else {
        old = cs_xchg64(e, now);
        uint32_t old_site = cs_xchg32(ws, site);
        t = (uint32_t)(old >> CS_WW_TID_SHIFT) & 0xFFu;
        if ((old >> CS_WW_GEN_SHIFT) != gen) {
            if (atomic && !f.kind) f = {CS_UNINIT_READ, CS_NO_SITE, CS_NO_WARP};
        } else if (t != w && (uint32_t)old == phase && !f.kind &&
                   !(atomic && ((old >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_ATOMIC))) {
            f = cs_replicated({CS_RACE_WAW, old_site, t}, site);
        }
    }
    cs_fence();
    // Granules no one read this phase (most writes) skip the look at every warp's bitmap.
    uint64_t rs = cs_ld64((uint64_t*)S.rsite + cs_gidx(slot, g));
    if ((uint32_t)(rs >> 32) != phase) return;
    uint32_t bit = 1u << (g & 31);
    for (uint32_t u = 0; u < S.nwarps; ++u) {
        if (u == w || !(cs_ld32(cs_readbits(slot, u, phase & 1) + (g >> 5)) & bit)) continue;
        if (!f.kind) f = {CS_RACE_WAR, (uint32_t)rs, u};
        break;
    }
}

// Before a warp arrives at the CTA-wide barrier that ends phase p: empty its bitmap
// for phase p+1 (it holds p-1, which no one can look at any more).
CS_DEV void cs_phase_clear_next(uint32_t slot, uint32_t w, uint32_t active, uint32_t lane) {
    uint32_t* bm = cs_readbits(slot, w, (cs_phase_sh[w] + 1) & 1);
    uint32_t words = (S.granules + 31) / 32;
    uint32_t rank = cs_popc(active & ((1u << lane) - 1u)), n = cs_popc(active);
    for (uint32_t i = rank; i < words; i += n) cs_st32(&bm[i], 0);
    cs_fence();
}
