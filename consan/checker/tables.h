// consan device checker: where the shadow tables live.
//
// Device memory (one slot per resident CTA) or, for the granule tables in shared memory,
// the CTA's dynamic window; shadow_layout.h says what each holds.

// ------------------------------------------------------------- table access

// Visibility: only warps acquire, so only warps have a vector clock (agents have none).
// With the granule tables in shared memory the CTA's clocks are there too (after them):
// every probe reads its warp's clock, and joins walk them column by column.
CS_DEV bool cs_vc_smem_on();
CS_DEV uint32_t* cs_vis(uint32_t slot, uint32_t t) {
    if (cs_vc_smem_on()) return cs_vc_smem_layout_sh.vis + t * S.nlogical;
    return (uint32_t*)S.vis + ((uint64_t)slot * CS_MAX_WARPS + t) * S.nlogical;
}
CS_DEV uint32_t* cs_cta(uint32_t slot) { return (uint32_t*)S.cta + (uint64_t)slot * CS_CTA_WORDS; }
// (With the granule tables in shared memory, the barriers' words and barrier 0's clock
// slots are there too: __syncthreads is the barrier most kernels run most.)
CS_DEV uint64_t* cs_barword(uint32_t slot, uint32_t b) {
    if (cs_vc_smem_on()) return cs_vc_smem_layout_sh.barw + b;
    return (uint64_t*)S.barword + (uint64_t)slot * CS_BARRIER_WORDS + b;
}
CS_DEV uint32_t* cs_barvc(uint32_t slot, uint32_t b, uint32_t parity) {
    if (cs_vc_smem_on() && b == 0) return cs_vc_smem_layout_sh.bvc0 + parity * S.nlogical;
    return (uint32_t*)S.barvc + (((uint64_t)slot * CS_BARRIER_WORDS + b) * 2 + parity) * S.nlogical;
}
// Loads and stores of barrier words and slots, which may be in shared memory.
CS_DEV uint64_t cs_bw_ld(uint64_t* p) { return cs_vc_smem_on() ? *(volatile uint64_t*)p : cs_ld64(p); }
CS_DEV void cs_bw_st(uint64_t* p, uint64_t v) {
    if (cs_vc_smem_on()) *(volatile uint64_t*)p = v;
    else cs_st64(p, v);
}
CS_DEV uint32_t cs_bvc_ld(const uint32_t* p) {
    return cs_vc_smem_on() ? *(const volatile uint32_t*)p : cs_ld32(p);
}
CS_DEV void cs_bvc_st(uint32_t* p, uint32_t v) {
    if (cs_vc_smem_on()) *(volatile uint32_t*)p = v;
    else cs_st32(p, v);
}
// Slot `slot`'s mbarrier entries (mbarrier.h's cs_mbar_entry), of cs_mbar_entry_words() words each.
CS_DEV uint32_t cs_mbar_entry_words() { return CS_MB_VC + CS_MB_SLOTS * S.nlogical; }
CS_DEV uint32_t* cs_mbar_table(uint32_t slot) {
    return (uint32_t*)S.mbar + (uint64_t)slot * CS_MBARRIERS * cs_mbar_entry_words();
}
CS_DEV uint32_t* cs_mbar_entry_at(uint32_t slot, uint32_t j) {
    return cs_mbar_table(slot) + j * cs_mbar_entry_words();
}
CS_DEV uint64_t cs_gidx(uint32_t slot, uint32_t g) { return (uint64_t)slot * S.granules + g; }
// Buffer-table entry: [0] write epoch, [1] reader mask (loaded together on the fast path).
CS_DEV uint64_t* cs_gent(uint32_t slot, uint32_t g) { return (uint64_t*)S.granule + 2 * cs_gidx(slot, g); }
CS_DEV uint64_t* cs_rslot(uint32_t slot, uint32_t w, uint32_t g) {
    return (uint64_t*)S.rslot + ((uint64_t)slot * S.nwarps + w) * S.granules + g;
}

#ifdef CONSAN_HOST
static uint8_t* cs_dyn_host;
#define CS_DYN cs_dyn_host
#else
#define CS_DYN cs_dyn
#endif
CS_DEV uint32_t cs_vld32(const uint32_t* p) { return *(const volatile uint32_t*)p; }
CS_DEV uint64_t cs_vld64(const uint64_t* p) { return *(const volatile uint64_t*)p; }
CS_DEV void cs_vst32(uint32_t* p, uint32_t v) { *(volatile uint32_t*)p = v; }

// `offset` bytes into the checker's part of the dynamic window (cs_dyn_at).
CS_DEV uint8_t* cs_dyn_part(uint32_t offset) {
#ifdef CONSAN_HOST
    uint32_t a = (uint32_t)(uint64_t)CS_DYN;
    return CS_DYN + ((0u - a) & 15u) + offset;
#else
    return cs_dyn_at(offset);
#endif
}
// The tables start psh_offset bytes into the dynamic window, after the kernel's own
// bytes and the checker's shared variables.
CS_DEV uint8_t* cs_smem_tables() { return cs_dyn_part(S.psh_offset); }

// What one warp's probe needs of its CTA's tables, with the pointer arithmetic done once.
struct cs_view {
    uint64_t* ent;        // buffer-table entries of the slot: [g][2]
    uint64_t* rslots;     // read slots of the slot: [warp][g]
    uint64_t* mine_rs;    // this warp's read slots: [g]
    uint32_t* wsite;      // [g]
    const uint32_t* mine; // this warp's vector clock
    uint32_t granules, gen, w, clock, phase;
};

CS_DEV cs_view cs_make_view(uint32_t slot, uint32_t w) {
    cs_view v;
    uint64_t base = (uint64_t)slot * S.granules;
    v.granules = S.granules;
    v.ent = (uint64_t*)S.granule + 2 * base;
    v.rslots = (uint64_t*)S.rslot + base * S.nwarps;
    v.mine_rs = v.rslots + (uint64_t)w * v.granules;
    v.wsite = (uint32_t*)S.wsite + base;
    v.mine = cs_vis(slot, w);
    v.gen = cs_gen_sh;
    v.w = w;
    v.clock = cs_clock_sh[w];
    v.phase = cs_phase_sh[w];
    return v;
}

CS_DEV uint32_t* cs_readbits(uint32_t slot, uint32_t w, uint32_t parity);
CS_DEV bool cs_phase_mode();
CS_DEV void cs_phase_clear_next(uint32_t slot, uint32_t w, uint32_t active, uint32_t lane);
CS_DEV bool cs_box_summary_on();
CS_DEV uint32_t cs_box_summary_blocks();
CS_DEV uint32_t* cs_box_summary(uint32_t slot, uint32_t b);
CS_DEV uint8_t* cs_smem_tables();
