// consan device checker: wgmma operands.

// ------------------------------------------------------------- wgmma
//
// wgmma.mma_async reads its shared-memory operands asynchronously, through the
// async proxy, for its whole warpgroup: the wgmma unit of warpgroup u (warps
// 4u..4u+3) is logical thread AGENT_WGMMA + u. Its clock counts wgmma groups:
// an mma_async issued after warp w committed k groups reads in group k, clock
// k + 1; wgmma.wait_group n by warp w acquires the unit's clock up to w's
// commits - n (no walk over the reads: completion is lazy, as for cp.async).
// A wgmma group completes as a whole, so one unit per warpgroup is exact.
//
// Each granule keeps, per warpgroup, the clock and site of the unit's last read
// (the wgread table) and a flag in its write epoch saying such a read happened
// since that write: a write looks at the table only when the flag is set, and a
// write not ordered after the read's group is async.pending-read. The read itself
// is judged like a warp's: the last write must happen before the issuing warp
// (race.raw / async.pending-write / uninit.read), and when a warp wrote the bytes
// through the generic proxy, that warp must have executed fence.proxy.async since
// the write -- its clock at its last fence (CTA_PROXY_FENCE) reaches the write's
// clock -- else proxy.missing-fence. Reads of A from registers touch no smem.

CS_DEV bool cs_wgmma_module() { return S.flags & CS_FLAG_WGMMA; }
CS_DEV uint32_t cs_nwg() { return (S.nwarps + 3) / 4; }
CS_DEV uint64_t cs_wg_idx(uint32_t slot, uint32_t u, uint32_t g) {
    return ((uint64_t)slot * cs_nwg() + u) * S.granules + g;
}
// wgread table: u64 entries gen:16 | clock:32, then the u32 sites, [slot][warpgroup][granule].
CS_DEV uint64_t* cs_wg_rec(uint32_t slot, uint32_t u, uint32_t g) {
    return (uint64_t*)S.wgread + cs_wg_idx(slot, u, g);
}
CS_DEV uint32_t* cs_wg_site(uint32_t slot, uint32_t u, uint32_t g) {
    uint64_t* sites = (uint64_t*)S.wgread + (uint64_t)S.nslots * cs_nwg() * S.granules;
    return (uint32_t*)sites + cs_wg_idx(slot, u, g);
}

// A descriptor decoded once per probe (cs_wg_chunk's fields), for the chunks of a lane.
struct cs_wgd { uint32_t start, lbo, sbo, sw, kmajor, krows_log, base; };
CS_DEV cs_wgd cs_wg_decode(uint64_t desc, uint32_t kmajor, uint32_t elog) {
    uint32_t mode = (uint32_t)(desc >> 62) & 3u;
    return {(uint32_t)(desc & 0x3FFFu) << 4, (uint32_t)((desc >> 16) & 0x3FFFu) << 4,
            (uint32_t)((desc >> 32) & 0x3FFFu) << 4,
            mode == 1 ? 128u : mode == 2 ? 64u : mode == 3 ? 32u : 0u, kmajor, 5u - elog,
            (uint32_t)(desc >> 49) & 7u};
}
// Operand footprint (docs/model.md "wgmma operands"; instrument/wgmma_desc.py is the
// same rule): the shared address of chunk i (0 <= i < 2 * rows) of an operand of `rows`
// rows (64 for A, N for B), 32 bytes of K per row. *width is 16, or the whole aligned
// swizzle row when a non-zero base offset leaves the chunk's place in it unknown.
CS_DEV uint32_t cs_wg_addr(const cs_wgd& d, uint32_t i, uint32_t* width) {
    uint32_t a;
    if (d.kmajor) {  // row r, 16-byte K chunk c
        uint32_t r = i >> 1, c = i & 1u;
        a = d.sw ? d.start + (r & 7u) * d.sw + (r >> 3) * d.sbo + c * 16u
                 : d.start + (r & 7u) * 16u + (r >> 3) * d.sbo + c * d.lbo;
    } else {  // 16-byte MN chunk j, K row k (32 bytes of K: 32 >> elog rows)
        uint32_t j = i >> d.krows_log, k = i & ((1u << d.krows_log) - 1u);
        a = d.sw ? d.start + (j * 16u) % d.sw + (j * 16u / d.sw) * d.lbo + (k & 7u) * d.sw +
                       (k >> 3) * d.sbo
                 : d.start + j * d.sbo + (k & 7u) * 16u + (k >> 3) * d.lbo;
    }
    *width = 16u;
    if (!d.sw) return a;
    if (d.base) {
        *width = d.sw;
        return a & ~(d.sw - 1u);
    }
    return a ^ (((a >> 7) & (d.sw / 16u - 1u)) << 4);  // Swizzle<log2(sw/16), 4, 3>
}

// (rows: the operand's, for the host build's callers)
CS_DEV uint32_t cs_wg_chunk(uint64_t desc, uint32_t rows, uint32_t kmajor, uint32_t elog,
                            uint32_t i, uint32_t* width) {
    (void)rows;
    return cs_wg_addr(cs_wg_decode(desc, kmajor, elog), i, width);
}

// What a wgmma probe's look found: the finding, the chunk's bytes and its operand (1: B).
struct cs_wgf { cs_finding f; uint32_t lo, hi, operand; };

// The unit's reads of a lane's chunks first, first + step, ... of the warpgroup's list (A's
// chunks, then B's), in general: any chunk width (a base offset), cs_vc_smem_publish and
// cs_vc_smem_look on each.
CS_NOINLINE cs_wgf cs_wg_reads_any(uint32_t slot, uint32_t w, uint64_t da, uint64_t db,
                                   uint32_t info, uint32_t site, uint32_t clk, uint32_t first,
                                   uint32_t step) {
    const uint32_t n = info & CS_WG_INFO_N_MASK, elog = (info >> CS_WG_INFO_ELOG_SHIFT) & 3u;
    const uint32_t na = (info & CS_WG_INFO_A_SMEM) ? 2u * 64u : 0u, total = na + 2u * n;
    cs_wgf r = {{0, CS_NO_SITE, CS_NO_WARP}, 0xFFFFFFFFu, 0, 0};
    const cs_vc_smem_ctx_t x = cs_vc_smem_ctx(slot, w);
    const cs_wgd dA = cs_wg_decode(da, !(info & CS_WG_INFO_TRANS_A), elog);
    const cs_wgd dB = cs_wg_decode(db, !(info & CS_WG_INFO_TRANS_B), elog);
    const uint32_t base = S.vsh_base / CS_GRANULE_BYTES, ri = cs_vc_smem_ri_wgmma(w >> 2);
    for (uint32_t i = first; i < total; i += step) {
        uint32_t width, a = i >= na ? cs_wg_addr(dB, i - na, &width) : cs_wg_addr(dA, i, &width);
        uint32_t g0 = a / CS_GRANULE_BYTES, g1 = (a + width - 1) / CS_GRANULE_BYTES;
        if (g0 >= base && g1 < S.granules)  // (out of the window: said in the look)
            cs_vc_smem_publish(x, ri, clk, g0 - base, g1 - base, site, true);
    }
    CS_READ_FENCE();  // publish the reads, then look at the writes (Dekker)
    uint32_t ok = 0xFFFFFFFFu, at;
    for (uint32_t i = first; i < total; i += step) {
        uint32_t width, a = i >= na ? cs_wg_addr(dB, i - na, &width) : cs_wg_addr(dA, i, &width);
        uint32_t g0 = a / CS_GRANULE_BYTES, g1 = (a + width - 1) / CS_GRANULE_BYTES;
        r.f = g0 < base || g1 >= S.granules
                  ? cs_finding{CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP}
                  : cs_vc_smem_look(x, g0 - base, g1 - base, CS_PROXY_WGMMA, ok, at);
        if (r.f.kind) {
            r.lo = a, r.hi = a + width, r.operand = i >= na;
            break;
        }
    }
    return r;
}

// What is rare in cs_wg_reads16, its call out of line (cs_vc_smem_freshen, which keeps no
// callee-saved convergence barrier) made from the probe: as a function of its own around
// that call it kept B6, and cleared it on entry, inside the B6 region of the probe's lanes
// that did not call it (benchmarks/convergence_barriers.py --calls; docs/model.md).
CS_DEV void cs_wgmma16_fresh(uint32_t slot, uint32_t w, uint32_t b, uint32_t ri) {
    cs_vc_smem_fresh(cs_vc_smem_ctx(slot, w), b, ri);
}

// The common form: no base offset in either descriptor, so every chunk is an aligned
// 16-byte one (CS_CHUNK_G granules: a word or a byte of the unit's bytes). cs_vc_smem_publish and
// cs_vc_smem_look's rules for such a chunk, in a lean body (the general form ran ~630
// instructions a probe, and the wgmma probes were 30% of a TMA + wgmma GEMM's time).
// K128: both operands K-major with the 128-byte swizzle (what TMA writes for a K step of
// 64 halves), the address in a few instructions.
// Row r of a K-major operand with the 128-byte swizzle: its first byte (before the swizzle).
CS_DEV uint32_t cs_wg_row128(const cs_wgd& d, uint32_t r) {
    return d.start + ((r & 7u) << 7) + (r >> 3) * d.sbo;
}
template <bool K128>
CS_DEV uint32_t cs_wg_addr16(const cs_wgd& d, uint32_t i) {
    if (K128) {
        uint32_t a = cs_wg_row128(d, i >> 1) + ((i & 1u) << 4);
        return a ^ (((a >> 7) & 7u) << 4);  // Swizzle<3, 4, 3>
    }
    uint32_t width;
    return cs_wg_addr(d, i, &width);
}
template <bool K128>
CS_DEV void cs_wg_reads16(uint32_t slot, uint32_t w, const cs_wgd& dA, const cs_wgd& dB,
                          uint32_t na, uint32_t total, uint32_t site, uint32_t clk,
                          uint32_t first, uint32_t step, cs_wgf& r) {
    const cs_vc_smem_ctx_t x = cs_vc_smem_ctx(slot, w);
    const uint32_t base = S.vsh_base / CS_GRANULE_BYTES, gend = S.granules;
    const uint32_t ri = cs_vc_smem_ri_wgmma(w >> 2);
    const cs_sp R = x.R + ri * x.gp;
    uint32_t* rs = x.rsite + ri * x.gp;
    const uint32_t c8 = cs_vc_smem_byte(clk);
    for (uint32_t i = first; i < total; i += step) {
        uint32_t a = i >= na ? cs_wg_addr16<K128>(dB, i - na) : cs_wg_addr16<K128>(dA, i);
        uint32_t g = a / CS_GRANULE_BYTES;
        if (g < base || g + CS_CHUNK_G - 1 >= gend) continue;  // (said in the look)
        g -= base;
        uint32_t b = g / CS_VC_BLOCK;
        cs_sp p = x.RS + 4u * (b * x.rss + ri);
        uint32_t v = cs_s_ld(p), old = cs_chunk_bytes(R, g);
        if (v == 0 || v == CS_RS_ZEROING) {  // the block's bytes are stale: emptied first
            cs_wgmma16_fresh(slot, w, b, ri);
            old = cs_chunk_bytes(R, g);
            v = 1;
        }
        cs_chunk_put(R, rs, g, c8, site, old);  // (a byte already at this clock keeps its site)
        if (v < clk) cs_s_max(p, clk);
    }
    CS_READ_FENCE();  // publish the reads, then look at the writes (Dekker)
    uint32_t ok = 0xFFFFFFFFu;
    r = {{0, CS_NO_SITE, CS_NO_WARP}, 0xFFFFFFFFu, 0, 0};
    for (uint32_t i = first; i < total && !r.f.kind; i += step) {
        uint32_t a = i >= na ? cs_wg_addr16<K128>(dB, i - na) : cs_wg_addr16<K128>(dA, i);
        uint32_t g = a / CS_GRANULE_BYTES;
        r.lo = a, r.hi = a + 16u, r.operand = i >= na;
        r.f = g < base || g + CS_CHUNK_G - 1 >= gend ? cs_finding{CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP}
                                        : cs_access16_look(x, g - base, CS_PROXY_WGMMA, ok);
    }
}

// ------------------------------------------------------------- a K step's four wgmmas
//
// A chain of four mma_async of one info word after one commit (instrument/wgmma_window.py),
// both operands K-major with the 128-byte swizzle and no base offset, descriptor k starting
// 32k bytes after descriptor 0 (a 128-byte-aligned tile): the K step of 64 halves CUTLASS,
// Triton and hand-written Hopper GEMMs issue. Wgmma k reads logical chunks 2k and 2k + 1 of
// every 128-byte row of both tiles, so the four read each row whole. A lane's unit of work
// is then half a row -- its even or its odd logical chunks, the chunks that warp's lanes take
// in each of the four calls (chunk i of a call is the warp i mod 4's, i = 2 row + half) --
// published (the block's summary raised once, the four chunks' bytes at the group's clock,
// each chunk's site that of the wgmma that reads it, stored a row at a time), one fence,
// then looked at (once where a copy holds the block whole). Each chunk is judged from the
// clock of the warp that judged it in the four calls, and a warp with any finding makes the
// four calls (which publish the same bytes again, judge its chunks and record as before): so
// a chain reports what its four calls report. A chain of another shape, or tables in device
// memory, makes them from the start. Measured on the H100 (TMA + wgmma GEMM): the wgmma probes were 32% of the kernel
// (0.395 -> 0.266 ms without them, breakdown_async.py); a chain call takes 7.3k cycles
// against 4 x 2.5k for the four calls, the kernel 0.376 -> 0.357 ms (ab_async.py, 3 rounds).

// Descriptors d0..d3 of the shape above: d0 decoded into t (false: another shape).
CS_DEV bool cs_wg_tile_of(uint64_t d0, uint64_t d1, uint64_t d2, uint64_t d3, cs_wgd& t) {
    const uint64_t same = ~(uint64_t)0x3FFFu;  // every field but the start address
    t = cs_wg_decode(d0, 1, 1);
    if (t.sw != 128u || t.base != 0 || t.start % 128u != 0 || (d0 & 0x3FFFu) + 6u > 0x3FFFu)
        return false;
    if ((d1 & same) != (d0 & same) || (d2 & same) != (d0 & same) || (d3 & same) != (d0 & same))
        return false;
    return d1 == d0 + 2u && d2 == d0 + 4u && d3 == d0 + 6u;  // (start: 16-byte units)
}

// The window granule of row r's first byte; *sw: its 128-byte swizzle (physical chunk p of
// the row holds logical chunk p ^ *sw).
CS_DEV uint32_t cs_wg_row(const cs_wgd& t, uint32_t r, uint32_t base, uint32_t* sw) {
    uint32_t a = cs_wg_row128(t, r);
    *sw = (a >> 7) & 7u;
    return a / CS_GRANULE_BYTES - base;
}

// A chain's read of one chunk: its reader bytes at the group's clock (cs_chunk_put without
// the site: cs_wg_row_sites stores a row's at once).
CS_DEV void cs_wg_put_byte(cs_sp R, uint32_t g, uint32_t c8, uint32_t old) {
    const uint32_t c = CS_CHUNK_G == 4 ? c8 * 0x01010101u : c8;
    if (old == c) return;
    if (CS_CHUNK_G == 4) cs_s_st(R + g, c);
    else cs_s_st8(R + g, c);
}
// The read sites of a row whose first site word is `at` (physical chunk p holds logical
// chunk p ^ sw, which wgmma (p ^ sw) / 2 of the chain reads): the row's words in 16-byte
// stores, two where chunks are granules. Four scattered 4-byte stores a half-row, a lane
// each, were 14% of the TMA + wgmma GEMM on an H200 (0.245 -> 0.210 ms by events without
// any read site, breakdown_async.py "no read sites").
CS_DEV void cs_wg_row_sites(uint32_t* at, uint32_t sw, const uint32_t* sites) {
    const uint32_t s0 = sites[0], s1 = sites[1], s2 = sites[2], s3 = sites[3];
    uint32_t v[8];
#pragma unroll
    for (uint32_t p = 0; p < 8; ++p) {
        uint32_t k = (p ^ sw) >> 1;
        v[p] = k == 0 ? s0 : k == 1 ? s1 : k == 2 ? s2 : s3;
    }
    if (CS_CHUNK_G == 1) {
        cs_g_stv4(at, cs_u4{v[0], v[1], v[2], v[3]});
        cs_g_stv4(at + 4, cs_u4{v[4], v[5], v[6], v[7]});
        return;
    }
#pragma unroll
    for (uint32_t p = 0; p < 8; ++p) cs_g_st4(at + 4u * p, v[p]);
}

// Half-rows first, first + step, ... (i = 2 row + half; A's na rows, then B's, `total`
// half-rows in all): published, one fence, looked at. True where this lane found something.
// `covers`: the tiles are whole blocks of the tables, so the chain puts every byte of the
// unit's row in each block it reads: a block whose summary is 0 (its bytes stale since a
// copy wrote it) is raised without emptying its bytes first (the chain's puts replace
// them all). Emptying them took one lane at a time while the others waited: on an H200
// the chain's bytes were 2,198 of its 5,265 cycles (profile build), and without the
// emptying the TMA + wgmma GEMM ran 0.198 -> 0.193 ms alone (ab_async.py, three rounds).
CS_DEV bool cs_wg_rows(uint32_t slot, uint32_t w, const cs_wgd& ta, const cs_wgd& tb,
                       uint32_t na, uint32_t total, const uint32_t* sites, uint32_t clk,
                       uint32_t first, uint32_t step, bool covers) {
    const cs_vc_smem_ctx_t x = cs_vc_smem_ctx(slot, w);
    const uint32_t base = S.vsh_base / CS_GRANULE_BYTES;
    const uint32_t ri = cs_vc_smem_ri_wgmma(w >> 2);
    const cs_sp R = x.R + ri * x.gp;
    uint32_t* rs = x.rsite + ri * x.gp;
    const uint32_t c8 = cs_vc_smem_byte(clk);
    // The sites first, a row a lane (rows first, first + step, ...), then the bytes by
    // half-rows: each chunk's site is its wgmma's, the chain's latest read of the group.
    {
    CS_PROF(58);
    for (uint32_t r = first; CS_READ_SITES && r < total / 2; r += step) {
        uint32_t sw, q = r < na ? cs_wg_row(ta, r, base, &sw) : cs_wg_row(tb, r - na, base, &sw);
        cs_wg_row_sites(rs + q, sw, sites);
    }
    }
    {
    CS_PROF(59);
    for (uint32_t i = first; i < total; i += step) {
        uint32_t r = i >> 1, h = i & 1u, sw;
        uint32_t q = r < na ? cs_wg_row(ta, r, base, &sw) : cs_wg_row(tb, r - na, base, &sw);
        uint32_t b = q / CS_VC_BLOCK;
        cs_sp p = x.RS + 4u * (b * x.rss + ri);
        uint32_t v = cs_s_ld(p), old[4];
        if (v == CS_RS_ZEROING || (v == 0 && !covers)) {  // stale bytes: emptied first
            cs_wgmma16_fresh(slot, w, b, ri);
            v = 1;
        }
#pragma unroll
        for (uint32_t k = 0; k < 4; ++k)
            old[k] = cs_chunk_bytes(R, q + ((2u * k + h) ^ sw) * CS_CHUNK_G);
#pragma unroll
        for (uint32_t k = 0; k < 4; ++k)  // wgmma k's chunk of this half-row
            cs_wg_put_byte(R, q + ((2u * k + h) ^ sw) * CS_CHUNK_G, c8, old[k]);
        if (v < clk) cs_s_max(p, clk);
    }
    }
    {
    CS_PROF(60);
    CS_READ_FENCE();  // publish the reads, then look at the writes (Dekker)
    }
    CS_PROF(61);
    uint32_t ok = 0xFFFFFFFFu;
    for (uint32_t i = first; i < total; i += step) {
        uint32_t r = i >> 1, h = i & 1u, sw;
        uint32_t q = r < na ? cs_wg_row(ta, r, base, &sw) : cs_wg_row(tb, r - na, base, &sw);
        uint32_t bt = cs_s_ld(x.BT + 4u * (q / CS_VC_BLOCK));
        uint32_t n = (bt & CS_BT_WHOLE) && bt != CS_BT_LOCKED ? 1u : 4u;  // (whole: one epoch)
        for (uint32_t k = 0; k < n; ++k)
            if (cs_access16_look(x, q + ((2u * k + h) ^ sw) * CS_CHUNK_G, CS_PROXY_WGMMA, ok).kind)
                return true;
    }
    return false;
}

// The chain's half-rows, where it has the shape above and its tiles lie in the window: true
// when done (no lane of the call found anything).
CS_DEV bool cs_wg_chain_rows(uint64_t a0, uint64_t b0, uint64_t a1, uint64_t b1, uint64_t a2,
                             uint64_t b2, uint64_t a3, uint64_t b3, uint32_t info,
                             const uint32_t* sites) {
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT || !cs_vc_smem_on()) return false;
    if (info & (CS_WG_INFO_TRANS_A | CS_WG_INFO_TRANS_B)) return false;  // K-major both
    const bool asmem = info & CS_WG_INFO_A_SMEM;
    cs_wgd ta = {}, tb;
    if ((asmem && !cs_wg_tile_of(a0, a1, a2, a3, ta)) || !cs_wg_tile_of(b0, b1, b2, b3, tb))
        return false;
    const uint32_t n = info & CS_WG_INFO_N_MASK, na = asmem ? 64u : 0u;
    // in the window: each tile's last 8-row group ends 1024 bytes after its start
    const uint32_t lo = S.vsh_base, hi = S.granules * CS_GRANULE_BYTES;
    if ((n & 7u) || n == 0 || tb.start < lo || tb.start + (n / 8u - 1u) * tb.sbo + 1024u > hi ||
        (asmem && (ta.start < lo || ta.start + 7u * ta.sbo + 1024u > hi)))
        return false;
    cs_mc_poll();
    uint32_t active = cs_group(((uint64_t)sites[0] << 32) | info, a0), w = cs_warp();
    uint32_t rank = cs_popc(active & ((1u << cs_lane()) - 1u)), lanes = cs_popc(active);
    uint32_t clk = cs_commits_sh(CS_UNIT_WGMMA, w) + 1;
    // whole blocks: rows back to back (an 8-row group 1024 bytes), a block's first granule
    // at the tile's start and its last at the tile's end
    const uint32_t gbase = S.vsh_base / CS_GRANULE_BYTES, grow = 128u / CS_GRANULE_BYTES;
    const bool covers =
        tb.sbo == 1024u && (tb.start / CS_GRANULE_BYTES - gbase) % CS_VC_BLOCK == 0 &&
        (n * grow) % CS_VC_BLOCK == 0 &&
        (!asmem || (ta.sbo == 1024u && (ta.start / CS_GRANULE_BYTES - gbase) % CS_VC_BLOCK == 0 &&
                    (na * grow) % CS_VC_BLOCK == 0));
    bool found = cs_wg_rows(slot, w, ta, tb, na, 2u * (na + n), sites, clk,
                            (w & 3u) + 4u * rank, 4u * lanes, covers);
    return !cs_any(active, found);
}
