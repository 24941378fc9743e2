// consan device checker: phase mode, tables in shared memory (FLAG_PHASE_SMEM).

// ------------------------------------------------------------- phase mode, tables in smem
//
// Phase mode with its tables in the CTA's own shared memory (FLAG_PHASE_SMEM;
// the device build compiled with -DCONSAN_PSH has only this path). The runtime
// appends psh_bytes of dynamic shared memory at psh_offset; the CTA clears them
// when it begins, so no slot, generation tag or global-memory atomic is needed.
// Per granule: the write epoch (phase:32 | tid:8 | flags:8, 0 = never written),
// the sites of the last write and read, the latest phase anyone read it in;
// per warp and phase parity a bitmap of the granules it read (abi.psh_layout).

#define CS_PHASE_SMEM_MULTI 0xFFu  // writer tid: several warps updated the granule atomically

CS_DEV uint64_t* cs_phase_smem_epochs() { return (uint64_t*)cs_smem_tables(); }
CS_DEV uint32_t* cs_phase_smem_words(uint32_t table) {  // table k of the u32 tables after the epochs
    return (uint32_t*)(cs_smem_tables() + (uint64_t)(8u + 4u * table) * S.granules);
}
#define CS_PHASE_SMEM_WSITE 0u
#define CS_PHASE_SMEM_RSITE 1u
#define CS_PHASE_SMEM_RPHASE 2u
CS_DEV uint32_t* cs_phase_smem_readbits(uint32_t w, uint32_t parity) {
    uint32_t words = (S.granules + 31) / 32;
    return cs_phase_smem_words(3) + (w * 2 + parity) * words;
}

// One record per distinct finding among the lanes that call together.
CS_NOINLINE void cs_phase_smem_note(uint32_t kind, uint32_t site, uint32_t prev_site,
                             uint32_t prev_warp, uint32_t lo, uint32_t hi) {
    uint32_t active = cs_match(cs_activemask(), site);
    cs_finding f = {kind, prev_site, prev_warp == CS_PHASE_SMEM_MULTI ? CS_NO_WARP : prev_warp};
    cs_record_t r;
    if (!cs_merged_record(active, f, site, lo, hi, r)) return;
    r.clock = cs_phase_sh[cs_warp()];
    cs_record(r);
}

// Granules [g0, g1] last written by the instruction at `site` (idempotent stores).
CS_DEV bool cs_phase_smem_written_by(uint32_t g0, uint32_t g1, uint32_t site) {
    for (uint32_t g = g0; g <= g1; ++g)
        if (cs_vld64(&cs_phase_smem_epochs()[g]) == 0 ||
            cs_vld32(&cs_phase_smem_words(CS_PHASE_SMEM_WSITE)[g]) != site)
            return false;
    return true;
}

// The bits of a 32-bit word that the lane `lane` of `active` takes when the warp shares a
// word's bits out: those at positions congruent to its rank modulo the active lanes.
CS_DEV uint32_t cs_share_bits(uint32_t active, uint32_t lane) {
    uint32_t n = (uint32_t)cs_popc(active), r = (uint32_t)cs_popc(active & ((1u << lane) - 1u));
    if (n >= 32u) return 1u << r;
    uint32_t s = 0;
    for (uint32_t p = r; p < 32u; p += n) s |= 1u << p;
    return s;
}

CS_DEV void cs_phase_smem_access(uint64_t addr, uint32_t site, uint32_t info) {
    uint32_t space = (info >> CS_INFO_SPACE_SHIFT) & 3u;
    uint32_t mode = (info >> CS_INFO_MODE_SHIFT) & 3u;
    uint32_t shape = (info >> CS_INFO_SHAPE_SHIFT) & 15u;
    uint32_t size = info & CS_INFO_SIZE_MASK;
    if (space == CS_SPACE_GENERIC) {
        if (!cs_is_shared(addr)) return;
        addr = cs_to_shared(addr);
    }
    if (shape && cs_lane() >= 8u * shape) return;  // ldmatrix/stmatrix: lanes giving row addresses
    uint32_t off;
    if (!cs_local((uint32_t)addr, off)) {
        cs_phase_smem_note(CS_TOOL_REMOTE_SMEM, site, CS_NO_SITE, CS_NO_WARP, 0xFFFFFFFFu, 0u);
        return;
    }
    uint32_t g0 = off / CS_GRANULE_BYTES, g1 = (off + size - 1) / CS_GRANULE_BYTES;
    if (g1 >= S.granules) {
        cs_phase_smem_note(CS_TOOL_OUT_OF_WINDOW, site, CS_NO_SITE, CS_NO_WARP, off, off + size);
        return;
    }
    uint32_t w = cs_warp(), phase = cs_phase_sh[w];
    uint64_t* ww = cs_phase_smem_epochs();
    uint32_t kind = 0, prev_site = CS_NO_SITE, prev_warp = CS_NO_WARP;
    if (mode == CS_MODE_READ) {
        // Set this warp's bits; only granules it had not read this phase need a look.
        uint32_t* bm = cs_phase_smem_readbits(w, phase & 1);
        uint32_t* rsite = cs_phase_smem_words(CS_PHASE_SMEM_RSITE);
        uint32_t* rphase = cs_phase_smem_words(CS_PHASE_SMEM_RPHASE);
        // When the warp's reads fall in at most three bitmap words (tiles, broadcasts,
        // stencils), the lanes combine their bits: one shared atomic per word instead
        // of up to 32 serialised ones, and the granules the warp reads first this phase
        // are shared out among its lanes (bit p of a word to the lane of rank p mod n),
        // which publish them and look at their writes once each: a stencil's lanes read
        // seven granules each, 38 for the warp. Only where one of them was written this
        // phase by another warp or never does each lane look at its own granules again,
        // for the report (cs_phase_smem_note: one record per distinct finding of the
        // lanes). Scattered reads (columns) set and look at their own bits.
        uint32_t active = cs_activemask(), lane = cs_lane();
        uint32_t fresh[3] = {0, 0, 0}, mine[3] = {0, 0, 0}, k0 = g0 >> 5, k1 = g1 >> 5;
        uint32_t any = 0, anyf = 0;
        uint32_t kmin = cs_min(active, k0), kmax = cs_max(active, k1);
        bool together = CS_LANE_BITS_TOGETHER(kmax - kmin <= 2);
        uint32_t first = together ? kmin : k0, last = together ? kmax : k1;
        uint32_t share = together ? cs_share_bits(active, lane) : 0xFFFFFFFFu;
        // (word j of the loops is k = first + j, j < 3: unrolled, the arrays stay in registers)
#pragma unroll
        for (uint32_t j = 0; j < 3; ++j) {
            uint32_t k = first + j;
            if (k > last) break;
            uint32_t m = 0;
            if (k >= k0 && k <= k1) {
                uint32_t lo = k == k0 ? (g0 & 31) : 0, hi = k == k1 ? (g1 & 31) : 31;
                m = (hi == 31 ? 0xFFFFFFFFu : ((1u << (hi + 1)) - 1)) & ~((1u << lo) - 1);
            }
            uint32_t all = together ? cs_or(active, m) : m, f = 0;
            uint32_t leader = together ? (uint32_t)(cs_ffs(active) - 1) : lane;
            if (all && lane == leader && (cs_vld32(&bm[k]) & all) != all)
                f = all & ~cs_or32(&bm[k], all);
            if (together) f = cs_bcast(active, f, (int)leader);
            anyf |= f;  // (the same in every lane when together)
            fresh[j] = f & m;
            any |= f & m;
            uint32_t own = f & share;  // (together: the warp's; else f is the lane's own)
            mine[j] = own;
            for (uint32_t b = own; b; b &= b - 1) {
                uint32_t g = k * 32 + (uint32_t)(cs_ffs(b) - 1);
                cs_vst32(&rphase[g], phase);
                cs_vst32(&rsite[g], site);
            }
        }
        if (together) {
            if (!anyf) return;
            cs_fence();  // publish the reads, then look at the writes (Dekker with the writer)
            bool odd = false;
#pragma unroll
            for (uint32_t j = 0; j < 3; ++j) {
                for (uint32_t b = mine[j]; b && !odd; b &= b - 1) {
                    uint64_t e = cs_vld64(&ww[(first + j) * 32 + (uint32_t)(cs_ffs(b) - 1)]);
                    uint32_t t = (uint32_t)(e >> CS_WW_TID_SHIFT) & 0xFFu;
                    odd = e == 0 || ((uint32_t)e == phase && t != w);
                }
            }
            if (!cs_any(active, odd) || !any) return;
        } else {
            if (!any) return;
            cs_fence();  // publish the reads, then look at the writes (Dekker with the writer)
        }
#pragma unroll
        for (uint32_t j = 0; j < 3; ++j) {
            for (uint32_t b = kind ? 0u : fresh[j]; b; b &= b - 1) {
                uint32_t g = (first + j) * 32 + (uint32_t)(cs_ffs(b) - 1);
                uint64_t e = cs_vld64(&ww[g]);
                uint32_t t = (uint32_t)(e >> CS_WW_TID_SHIFT) & 0xFFu;
                if (e == 0) {
                    kind = CS_UNINIT_READ;
                } else if ((uint32_t)e == phase && t != w) {
                    kind = CS_RACE_RAW;
                    prev_site = cs_vld32(&cs_phase_smem_words(CS_PHASE_SMEM_WSITE)[g]);
                    prev_warp = t;
                }
                if (kind) break;
            }
        }
    } else {
        uint64_t atom = mode == CS_MODE_ATOMIC ? (uint64_t)CS_WW_FLAG_ATOMIC << CS_WW_FLAGS_SHIFT : 0;
        uint64_t now = phase | ((uint64_t)w << CS_WW_TID_SHIFT) | atom;
        uint64_t multi = phase | ((uint64_t)CS_PHASE_SMEM_MULTI << CS_WW_TID_SHIFT) | atom;
        uint32_t* wsite = cs_phase_smem_words(CS_PHASE_SMEM_WSITE);
        bool stored = false;
        for (uint32_t g = g0; g <= g1; ++g) {
            uint64_t e = cs_vld64(&ww[g]);
            // Rewritten by this warp, or updated atomically by several, this phase:
            // whoever reads or writes it next this phase sees this epoch.
            if (e == now || (atom && e == multi)) continue;
            bool other_atomic = atom && (uint32_t)e == phase && (e & atom);
            uint64_t old = cs_xchg64(&ww[g], other_atomic ? multi : now);
            uint32_t old_site = cs_xchg32(&wsite[g], site);
            stored = true;
            uint32_t t = (uint32_t)(old >> CS_WW_TID_SHIFT) & 0xFFu;
            if (kind) continue;
            if (old == 0) {
                if (atom) kind = CS_UNINIT_READ;  // an atomic reads the granule
            } else if ((uint32_t)old == phase && t != w && !(atom && (old & atom)) &&
                       !cs_same_store(site, t)) {  // (cs_replicated)
                kind = CS_RACE_WAW;
                prev_site = old_site;
                prev_warp = t;
            }
        }
        if (stored) {
            cs_fence();  // publish the write, then look for readers of this phase
            const uint32_t* rphase = cs_phase_smem_words(CS_PHASE_SMEM_RPHASE);
            for (uint32_t g = g0; g <= g1 && !kind; ++g) {
                if (cs_vld32(&rphase[g]) != phase) continue;  // most writes: nobody read it
                uint32_t bit = 1u << (g & 31);
                for (uint32_t u = 0; u < S.nwarps; ++u) {
                    if (u == w || !(cs_vld32(&cs_phase_smem_readbits(u, phase & 1)[g >> 5]) & bit)) continue;
                    kind = CS_RACE_WAR;
                    prev_site = cs_vld32(&cs_phase_smem_words(CS_PHASE_SMEM_RSITE)[g]);
                    prev_warp = u;
                    break;
                }
            }
        }
    }
    if (kind) cs_phase_smem_note(kind, site, prev_site, prev_warp, off, off + size);
}

// Before the CTA-wide barrier that ends phase p: empty this warp's bitmap for
// p+1 (it holds p-1, which no one can look at any more).
CS_DEV uint32_t cs_phase_smem_bar_arrive() {
    uint32_t active = cs_activemask();
    uint32_t lane = cs_lane(), w = cs_warp();
    uint32_t* bm = cs_phase_smem_readbits(w, (cs_phase_sh[w] + 1) & 1);
    uint32_t words = (S.granules + 31) / 32;
    uint32_t rank = cs_popc(active & ((1u << lane) - 1u)), n = cs_popc(active);
    for (uint32_t i = rank; i < words; i += n) cs_vst32(&bm[i], 0);
    cs_fence();
    cs_syncwarp(active);
    return CS_TOKEN_CTA_WIDE;
}

CS_DEV void cs_phase_smem_bar_wait(uint32_t gen) {
    uint32_t active = cs_activemask();
    if ((gen & CS_TOKEN_CTA_WIDE) && cs_lane() == (uint32_t)(cs_ffs(active) - 1))
        cs_phase_sh[cs_warp()] += 1;
    cs_syncwarp(active);
}

// Run by every thread (i of n) when the CTA begins.
CS_DEV void cs_phase_smem_begin(uint32_t i, uint32_t n) {
    if (i == 0) {
        cs_gadd32(&((cs_log_header_t*)S.log)->ctas_begun, 1);
        cs_slot_sh = 0;
        cs_shv.idem_lock = 0;
    }
    for (uint32_t w = i; w < CS_MAX_WARPS; w += n) cs_phase_sh[w] = 1;
    cs_clear_store_tags(i, n);
    cs_fill_words((uint32_t*)cs_smem_tables(), 0, S.psh_bytes / 4, 0u, i, n);
}
