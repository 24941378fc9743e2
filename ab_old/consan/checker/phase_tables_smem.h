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

CS_DEV uint32_t cs_info_mode(uint32_t info) { return (info >> CS_INFO_MODE_SHIFT) & 3u; }

#define CS_PHASE_SMEM_MULTI CS_PSH_MULTI_WARP  // writer tid: several warps' atomics

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
// Warp w's fast-path record (abi.PSH_FAST_*), after the bitmaps at a 16-byte boundary (the
// inline fast path of the rewritten kernel reads its words with one vector load:
// instrument/fast_path.py).
CS_DEV uint32_t* cs_phase_smem_fast(uint32_t w) {
    uint64_t end = (uint64_t)cs_phase_smem_readbits(S.nwarps, 0);
    return (uint32_t*)((end + 15u) & ~(uint64_t)15u) + w * (CS_PSH_FAST_BYTES / 4);
}

// Warp w's phase (CTA-wide barriers it has passed): its fast-path record's word where the
// module has records (the rewritten kernel's inline barrier waits advance it there:
// instrument/inline_barriers.py), else the CTA's array.
CS_DEV volatile uint32_t& cs_psh_phase(uint32_t w) {
#ifndef CONSAN_HOST
    if (S.flags & CS_FLAG_PSH_FAST) return *(volatile uint32_t*)&cs_phase_smem_fast(w)[CS_PSH_FAST_PHASE];
#endif
    return *(volatile uint32_t*)&cs_phase_sh[w];
}

// One record per distinct finding among the lanes that call together. Every lane calls
// cs_record, those that record nothing with kind 0: a call by the recording lane alone sat
// in a region of a callee-saved convergence barrier (B6), which this function then saved
// and cleared on entry, and its callers call it from part of a warp (the lanes that found
// something): the clear released the others (benchmarks/convergence_barriers.py --psh).
CS_NOINLINE void cs_phase_smem_note(uint32_t kind, uint32_t site, uint32_t prev_site,
                             uint32_t prev_warp, uint32_t lo, uint32_t hi) {
    uint32_t active = cs_match(cs_activemask(), site);
    cs_finding f = {kind, prev_site, prev_warp == CS_PHASE_SMEM_MULTI ? CS_NO_WARP : prev_warp};
    cs_record_t r = {};
    if (cs_merged_record(active, f, site, lo, hi, r)) r.clock = cs_psh_phase(cs_warp());
    else r.kind = 0;
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

CS_DEV uint32_t cs_phase_smem_war(uint32_t g0, uint32_t g1, uint32_t w, uint32_t phase,
                                  uint32_t& prev_site, uint32_t& prev_warp);

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
    uint32_t w = cs_warp(), phase = cs_psh_phase(w);
    uint64_t* ww = cs_phase_smem_epochs();
    uint32_t kind = 0, prev_site = CS_NO_SITE, prev_warp = CS_NO_WARP;
    if (mode == CS_MODE_READ) {
        CS_PSH_NULL_READ(return;)
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
            CS_PSH_FENCE();  // publish the reads, then look at the writes (Dekker with the writer)
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
            CS_PSH_FENCE();  // publish the reads, then look at the writes (Dekker with the writer)
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
        CS_PSH_NULL_WRITE(return;)
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
            CS_PSH_FENCE();  // publish the write, then look for readers of this phase
            if (!kind) kind = cs_phase_smem_war(g0, g1, w, phase, prev_site, prev_warp);
        }
    }
    if (kind) cs_phase_smem_note(kind, site, prev_site, prev_warp, off, off + size);
}

// A write's verdict against this phase's reads of granules [g0, g1] by other warps, the
// write's epoch already published and fenced (CS_RACE_WAR or 0).
CS_DEV uint32_t cs_phase_smem_war(uint32_t g0, uint32_t g1, uint32_t w, uint32_t phase,
                                  uint32_t& prev_site, uint32_t& prev_warp) {
    const uint32_t* rphase = cs_phase_smem_words(CS_PHASE_SMEM_RPHASE);
    for (uint32_t g = g0; g <= g1; ++g) {
        if (cs_vld32(&rphase[g]) != phase) continue;  // most writes: nobody read it
        uint32_t bit = 1u << (g & 31);
        for (uint32_t u = 0; u < S.nwarps; ++u) {
            if (u == w || !(cs_vld32(&cs_phase_smem_readbits(u, phase & 1)[g >> 5]) & bit)) continue;
            prev_site = cs_vld32(&cs_phase_smem_words(CS_PHASE_SMEM_RSITE)[g]);
            prev_warp = u;
            return CS_RACE_WAR;
        }
    }
    return 0;
}

// The rest of a plain one-granule `.shared` write whose epoch and site the rewritten
// kernel stored inline (instrument/fast_path.py: the granule held no epoch of this phase,
// so no race.waw), fenced, and then found read in this phase: the look for other warps'
// reads, as cs_phase_smem_access takes it.
CS_DEV void cs_phase_smem_write_readers(uint64_t addr, uint32_t site, uint32_t info) {
    const uint32_t size = info & CS_INFO_SIZE_MASK;
    uint32_t off = 0;
    cs_local((uint32_t)addr, off);  // (a granule of the window: the kernel tested it)
    const uint32_t g0 = off / CS_GRANULE_BYTES, g1 = (off + size - 1) / CS_GRANULE_BYTES;
    const uint32_t w = cs_warp(), phase = cs_psh_phase(w);
    uint32_t prev_site = CS_NO_SITE, prev_warp = CS_NO_WARP;
    const uint32_t kind = cs_phase_smem_war(g0, g1, w, phase, prev_site, prev_warp);
    if (kind) cs_phase_smem_note(kind, site, prev_site, prev_warp, off, off + size);
}

// ------------------------------------------------------------- a warp's reads together
//
// The n reads of one coalesced probe (addr + k * stride, k < n, `size` bytes each) by a
// warp whose lanes, at each k, read within 64 granules: the footprint F of rep 0 (64 bits
// from the lowest granule G0 the warp reads) repeats at G0 + k * stride. Where all n fit
// in 64 granules (a stencil's neighbours) the warp takes their union as one footprint;
// where they do not overlap (a tile's rows) it takes them rep by rep, a rep per lane: the
// lane sets the warp's bits of its rep (three bitmap words at most, a shared atomic each);
// then the warp publishes and looks at each rep's fresh granules together, a granule per
// lane. The per-rep path took five votes and three broadcasts per rep and looked at the
// lanes' own granules (a strided sgemm tile read, 16 reps of a 64-granule row, made the
// read probes 100 of the kernel's 145 ms of checking on the H100). The verdicts are the
// per-rep path's: a granule is fresh at the first rep whose footprint holds it and is
// judged there, for the lanes that read it at that rep.
#ifdef CONSAN_HOST
#define CS_PSH_RW_CHUNKS 64u  // (one lane per warp: it takes every rep)
#else
#define CS_PSH_RW_CHUNKS 2u
#endif

// Word j (0..2) of F << s.
CS_DEV uint32_t cs_psh_rw_word(uint64_t F, uint32_t s, uint32_t j) {
    uint64_t lo = F << s;
    if (j == 0) return (uint32_t)lo;
    if (j == 1) return (uint32_t)(lo >> 32);
    return s ? (uint32_t)(F >> (64u - s)) : 0u;
}

// Granule g's verdict for a read by warp w in `phase` (0: none).
CS_DEV uint32_t cs_psh_read_verdict(uint32_t g, uint32_t w, uint32_t phase, uint32_t& prev_site,
                                    uint32_t& prev_warp) {
    uint64_t e = cs_vld64(&cs_phase_smem_epochs()[g]);
    uint32_t t = (uint32_t)(e >> CS_WW_TID_SHIFT) & 0xFFu;
    if (e == 0) return CS_UNINIT_READ;
    if ((uint32_t)e != phase || t == w) return 0;
    prev_site = cs_vld32(&cs_phase_smem_words(CS_PHASE_SMEM_WSITE)[g]);
    prev_warp = t;
    return CS_RACE_RAW;
}

// The verdict on a one-granule read published inline (cs_phase_smem_write_readers' twin for
// reads: instrument/fast_path.py); the granule is one of the window (the kernel tested it).
CS_DEV void cs_phase_smem_read_judge(uint64_t addr, uint32_t site, uint32_t info) {
    const uint32_t size = info & CS_INFO_SIZE_MASK;
    uint32_t off = 0, prev_site = CS_NO_SITE, prev_warp = CS_NO_WARP;
    cs_local((uint32_t)addr, off);
    const uint32_t w = cs_warp();
    const uint32_t kind = cs_psh_read_verdict(off / CS_GRANULE_BYTES, w, cs_psh_phase(w),
                                              prev_site, prev_warp);
    if (kind) cs_phase_smem_note(kind, site, prev_site, prev_warp, off, off + size);
}

// The verdict on a read of several granules whose warp set its bits, sites and phases
// inline (instrument/fast_path.py, span_read) and found a granule whose bit was new there
// never written or written in this phase by another warp: bit r of `fresh` is granule
// base + r. The lane judges its own granules among those, as cs_phase_smem_access's read
// path does: its first such granule's verdict, one record per distinct finding.
CS_DEV void cs_phase_smem_read_span_judge(uint64_t addr, uint32_t site, uint32_t info,
                                          uint32_t base, uint64_t fresh) {
    const uint32_t size = info & CS_INFO_SIZE_MASK;
    uint32_t off = 0, prev_site = CS_NO_SITE, prev_warp = CS_NO_WARP, kind = 0;
    cs_local((uint32_t)addr, off);  // (granules of the window: the kernel tested them)
    const uint32_t w = cs_warp(), phase = cs_psh_phase(w);
    const uint32_t g0 = off / CS_GRANULE_BYTES, g1 = (off + size - 1) / CS_GRANULE_BYTES;
    for (uint32_t g = g0; g <= g1 && !kind; ++g) {
        const uint32_t r = g - base;
        if (r < 64u && (fresh >> r) & 1u) kind = cs_psh_read_verdict(g, w, phase, prev_site, prev_warp);
    }
    if (kind) cs_phase_smem_note(kind, site, prev_site, prev_warp, off, off + size);
}

// Returns false, having done nothing, where the warp's reads do not fit (then each rep takes
// cs_phase_smem_access).
CS_DEV bool cs_phase_smem_read_warp(uint64_t addr, uint32_t site, uint32_t info, uint32_t n,
                                    uint32_t stride) {
    CS_PSH_NULL_READ(return true;)
    const uint32_t space = (info >> CS_INFO_SPACE_SHIFT) & 3u;
    const uint32_t shape = (info >> CS_INFO_SHAPE_SHIFT) & 15u;
    const uint32_t size = info & CS_INFO_SIZE_MASK;
    const uint32_t active = cs_activemask(), lane = cs_lane();
    const bool reads = !(shape && lane >= 8u * shape);  // ldmatrix: lanes giving row addresses
    if (stride % CS_GRANULE_BYTES || n == 0) return false;
    uint32_t off = 0;
    bool ok = true;
    if (reads) {
        if (space == CS_SPACE_GENERIC) {
            ok = cs_is_shared(addr);
            addr = ok ? cs_to_shared(addr) : 0u;
        }
        ok = ok && cs_local((uint32_t)addr, off);
    }
    const uint32_t sg = stride / CS_GRANULE_BYTES;
    const uint32_t g0 = off / CS_GRANULE_BYTES, g1 = (off + size - 1) / CS_GRANULE_BYTES;
    // (a lane whose address is not in this CTA's window makes G1 - G0 too large)
    const uint32_t G0 = cs_min(active, reads ? g0 : 0xFFFFFFFFu);
    const uint32_t G1 = cs_max(active, !reads ? 0u : ok ? g1 : 0xFFFFFFFFu);
    if (G1 < G0 || G1 - G0 >= 64u || (uint64_t)G1 + (uint64_t)(n - 1) * sg >= S.granules)
        return false;  // (uniform: every lane computed the same)
    const uint32_t span = G1 - G0 + 1u;
    const bool joined = (uint64_t)(n - 1) * sg + span <= 64u;  // the reps' union: one footprint
    const uint32_t nact = (uint32_t)cs_popc(active);
    const uint32_t rank = (uint32_t)cs_popc(active & ((1u << lane) - 1u));
    if (!joined && (sg < span || n > CS_PSH_RW_CHUNKS * nact)) return false;
    uint64_t m = 0;
    if (reads) m = (g1 - G0 == 63u ? ~0ull : (2ull << (g1 - G0)) - 1ull) & ~((1ull << (g0 - G0)) - 1ull);
    const uint64_t F = cs_or(active, (uint32_t)m) | ((uint64_t)cs_or(active, (uint32_t)(m >> 32)) << 32);
    // The reps the lanes take: pn of footprint PF every psg granules.
    uint64_t PF = F;
    if (joined)
        for (uint32_t k = 1; k < n; ++k) PF |= F << (k * sg);
    const uint32_t pn = joined ? 1u : n, psg = joined ? 0u : sg;
    const uint32_t w = cs_warp(), phase = cs_psh_phase(w);
    uint32_t* bm = cs_phase_smem_readbits(w, phase & 1);
    uint32_t* rsite = cs_phase_smem_words(CS_PHASE_SMEM_RSITE);
    uint32_t* rphase = cs_phase_smem_words(CS_PHASE_SMEM_RPHASE);
    // Each lane's reps: set the warp's bits, keep those that were new.
    uint32_t fresh[CS_PSH_RW_CHUNKS][3];
#pragma unroll
    for (uint32_t i = 0; i < CS_PSH_RW_CHUNKS; ++i) {
        const uint32_t r = i * nact + rank, a = G0 + r * psg;
#pragma unroll
        for (uint32_t j = 0; j < 3; ++j) {
            const uint32_t mk = r < pn ? cs_psh_rw_word(PF, a & 31u, j) : 0u;
            uint32_t* word = &bm[(a >> 5) + j];
            fresh[i][j] = mk && (cs_vld32(word) & mk) != mk ? mk & ~cs_or32(word, mk) : 0u;
        }
    }
    // Rep by rep, a granule per lane: publish the fresh granules, fence, look at their writes.
    bool odd = false;
    uint32_t any = 0;
#pragma unroll
    for (uint32_t i = 0; i < CS_PSH_RW_CHUNKS; ++i) {
        uint32_t b = cs_ballot(active, fresh[i][0] | fresh[i][1] | fresh[i][2]);
        any |= b;
        for (; b; b &= b - 1) {
            const uint32_t src = (uint32_t)(cs_ffs(b) - 1);
            const uint32_t r = i * nact + (uint32_t)cs_popc(active & ((1u << src) - 1u));
            const uint32_t base = ((G0 + r * psg) >> 5) * 32u;
            uint32_t f[3];
#pragma unroll
            for (uint32_t j = 0; j < 3; ++j) f[j] = cs_bcast(active, fresh[i][j], (int)src);
            for (uint32_t bit = rank; bit < 32u; bit += nact)
#pragma unroll
                for (uint32_t j = 0; j < 3; ++j)
                    if ((f[j] >> bit) & 1u) {
                        cs_vst32(&rphase[base + 32u * j + bit], phase);
                        cs_vst32(&rsite[base + 32u * j + bit], site);
                    }
            cs_fence();  // publish the reads, then look at the writes (Dekker with the writer)
            for (uint32_t bit = rank; bit < 32u; bit += nact)
#pragma unroll
                for (uint32_t j = 0; j < 3; ++j) {
                    uint32_t ps = 0, pw = 0;
                    odd |= ((f[j] >> bit) & 1u) &&
                           cs_psh_read_verdict(base + 32u * j + bit, w, phase, ps, pw);
                }
        }
    }
    if (!any || !cs_any(active, odd)) return true;
    // A finding: each lane judges its own fresh granules, rep by rep, for the report.
    for (uint32_t k = 0; k < n; ++k) {
        const uint32_t a0 = g0 + k * sg, a1 = g1 + k * sg;
        uint32_t fa = 0, fb = 0;  // the fresh bits of words a0 / 32 and a1 / 32
#pragma unroll
        for (uint32_t i = 0; i < CS_PSH_RW_CHUNKS; ++i) {
            const uint32_t has = cs_ballot(active, fresh[i][0] | fresh[i][1] | fresh[i][2]);
            for (uint32_t b = has; b; b &= b - 1) {
                const uint32_t src = (uint32_t)(cs_ffs(b) - 1);
                const uint32_t r = i * nact + (uint32_t)cs_popc(active & ((1u << src) - 1u));
                const uint32_t word = (G0 + r * psg) >> 5;
#pragma unroll
                for (uint32_t j = 0; j < 3; ++j) {
                    const uint32_t f = cs_bcast(active, fresh[i][j], (int)src);
                    if (word + j == a0 >> 5) fa |= f;
                    if (word + j == a1 >> 5) fb |= f;
                }
            }
        }
        uint32_t kind = 0, prev_site = CS_NO_SITE, prev_warp = CS_NO_WARP;
        for (uint32_t g = a0; reads && g <= a1 && !kind; ++g) {
            if (!((((g >> 5) == (a0 >> 5) ? fa : fb) >> (g & 31)) & 1u)) continue;
            bool earlier = false;  // in the footprint of an earlier rep: judged there
            for (uint32_t j = 0; j < k && !earlier; ++j) {
                const uint32_t r = g - G0 - j * sg;
                earlier = r < 64u && ((F >> r) & 1u);
            }
            if (!earlier) kind = cs_psh_read_verdict(g, w, phase, prev_site, prev_warp);
        }
        if (kind) {
            const uint32_t lo = off + k * stride;
            cs_phase_smem_note(kind, site, prev_site, prev_warp, lo, lo + size);
        }
    }
    return true;
}

// The lanes `active` of warp w empty its read bitmap of `parity` (word rank, rank + n, ...),
// fence and sync.
CS_DEV void cs_phase_smem_clear_bits(uint32_t active, uint32_t w, uint32_t parity) {
    uint32_t* bm = cs_phase_smem_readbits(w, parity & 1);
    uint32_t words = (S.granules + 31) / 32;
    uint32_t rank = cs_popc(active & ((1u << cs_lane()) - 1u)), n = cs_popc(active);
    for (uint32_t i = rank; i < words; i += n) cs_vst32(&bm[i], 0);
    cs_fence();
    cs_syncwarp(active);
}

// Before the CTA-wide barrier that ends phase p: empty this warp's bitmap for
// p+1 (it holds p-1, which no one can look at any more).
CS_DEV uint32_t cs_phase_smem_bar_arrive() {
    uint32_t active = cs_activemask(), w = cs_warp();
    cs_phase_smem_clear_bits(active, w, cs_psh_phase(w) + 1);
    return CS_TOKEN_CTA_WIDE;
}

// After a CTA-wide barrier, in one probe (the module's barriers all take __consan_bar_step):
// the warp's phase advances, then it empties its bitmap of the phase after the new one (the
// phase the barrier just ended: nobody looks at it any more, since every warp is past the
// barrier and a warp makes no access between the barrier and this probe). The next
// barrier's bar.sync publishes the stores before any warp reads them in that phase.
CS_DEV void cs_phase_smem_bar_step() {
    uint32_t active = cs_activemask(), w = cs_warp();
    uint32_t phase = cs_psh_phase(w) + 1;
    cs_syncwarp(active);  // (every lane has read the phase before the leader moves it)
    if (cs_lane() == (uint32_t)(cs_ffs(active) - 1)) cs_psh_phase(w) = phase;
    cs_phase_smem_clear_bits(active, w, phase + 1);
}

CS_DEV void cs_phase_smem_bar_wait(uint32_t gen) {
    uint32_t active = cs_activemask(), w = cs_warp();
    if ((gen & CS_TOKEN_CTA_WIDE) && cs_lane() == (uint32_t)(cs_ffs(active) - 1)) {
        cs_psh_phase(w) = cs_psh_phase(w) + 1;
    }
    cs_syncwarp(active);
}

#ifndef CONSAN_HOST
// After the CTA's tables are clear: the warp's fast-path record, its shared address (0
// where the module makes no inline test: FLAG_PSH_FAST).
CS_DEV uint32_t cs_phase_smem_fast_init() {
    if (!(S.flags & CS_FLAG_PSH_FAST)) return 0u;
    uint32_t w = cs_warp(), active = cs_activemask();
    uint32_t* f = cs_phase_smem_fast(w);
    if (cs_lane() == (uint32_t)(cs_ffs(active) - 1)) {
        f[CS_PSH_FAST_GRANULES] = S.granules;
        f[CS_PSH_FAST_EPOCHS] = cs_to_shared((uint64_t)cs_phase_smem_epochs());
        f[CS_PSH_FAST_PHASE] = cs_phase_sh[w];
        f[CS_PSH_FAST_WARP] = w;
        f[CS_PSH_FAST_BITS_EVEN] = cs_to_shared((uint64_t)cs_phase_smem_readbits(w, 0));
        f[CS_PSH_FAST_BITS_ODD] = cs_to_shared((uint64_t)cs_phase_smem_readbits(w, 1));
        f[CS_PSH_FAST_STORE_SITE] = cs_to_shared((uint64_t)&cs_shv.store_site[w]);
        f[CS_PSH_FAST_STORE_TAG] = cs_to_shared((uint64_t)&cs_shv.store_tag[w]);
    }
    cs_syncwarp(active);
    return cs_to_shared((uint64_t)f);
}
#endif

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
