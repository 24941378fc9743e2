// consan device checker: granule tables in shared memory: the 16-byte access.

// ------------------------------------------------------------- the 16-byte access
//
// A warp whose every lane accesses aligned 16-byte chunks of this CTA's window (ldmatrix
// rows, cp.async 16, v4 loads and stores: all of a cp.async + ldmatrix GEMM's accesses)
// takes a lean copy of cs_vc_smem_access's rules: the same tables, stores and findings, with
// what is rare (a claim, a first read since a copy, uneven epochs, a late reader, a
// finding) out of line. The general probe's decoding, span loops and vote were half the
// instructions of such an access, and an access is bound by its instruction count.

#define CS_A16_READER_VECS 3  // the 16-byte write's readers: up to 12 (8 warps, 4 units)

// Out of line, so the lean body keeps no registers or convergence barriers for them.
CS_NOINLINE void cs_vc_smem_access_any(uint64_t addr, uint32_t site, uint32_t info, uint32_t rep) {
    cs_vc_smem_access(addr, site, info, rep);
}
CS_NOINLINE void cs_access16_raise(uint32_t slot, uint32_t w, uint32_t b, uint32_t clk) {
    cs_vc_smem_raise(cs_vc_smem_ctx(slot, w), b, w, clk);
}
CS_NOINLINE void cs_access16_claim(uint32_t slot, uint32_t w, uint32_t b) {
    cs_vc_smem_claim(cs_vc_smem_ctx(slot, w), b);
}
CS_NOINLINE cs_finding cs_access16_look_any(uint32_t slot, uint32_t w, uint32_t g, uint32_t proxy) {
    uint32_t ok = 0xFFFFFFFFu, at;
    return cs_vc_smem_look(cs_vc_smem_ctx(slot, w), g, g + CS_CHUNK_G - 1, proxy, ok, at);
}
CS_NOINLINE cs_finding cs_access16_judge_read(uint32_t slot, uint32_t w, uint32_t e, const uint32_t* ws,
                                       uint32_t proxy) {
    return cs_vc_smem_judge_read(cs_vc_smem_ctx(slot, w), e, ws, proxy);
}
// An exchange of four epochs that were not one: granule by granule, as cs_vc_smem_write_span.
CS_NOINLINE cs_found cs_access16_write4(uint32_t slot, uint32_t w, uint32_t g, uint32_t site,
                                 uint32_t by, uint32_t now, uint32_t o0, uint32_t o1,
                                 uint32_t o2, uint32_t o3) {
    cs_vc_smem_ctx_t x = cs_vc_smem_ctx(slot, w);
    const uint32_t o[4] = {o0, o1, o2, o3};
    cs_found r = {{0, CS_NO_SITE, CS_NO_WARP}, 0};
    for (uint32_t i = 0; i < CS_CHUNK_G; ++i)
        cs_vc_smem_write_one(x, g + i, o[i], now, site, false, by, r.f, r.at);
    return r;
}
CS_NOINLINE cs_finding cs_access16_judge_write(uint32_t slot, uint32_t w, uint32_t old,
                                        const uint32_t* ws, uint32_t by) {
    return cs_vc_smem_judge_write(cs_vc_smem_ctx(slot, w), old, ws, false, by);
}
CS_NOINLINE cs_found cs_access16_late(uint32_t slot, uint32_t w, uint32_t seen, uint32_t g) {
    cs_vc_smem_ctx_t x = cs_vc_smem_ctx(slot, w);
    return cs_vc_smem_late_readers(slot, w, x.mine, x.R, x.RS, x.rsite, x.gp, x.nr, x.rss, seen, g,
                               g + CS_CHUNK_G - 1);
}
CS_NOINLINE void cs_access16_report(uint32_t m, cs_finding f, uint32_t site, uint32_t info,
                             uint32_t lo) {
    uint32_t active = cs_match(m, ((uint64_t)site << 32) | info);
    cs_record_t r;
    if (cs_merged_record(active, f, site, lo, f.kind ? lo + 16u : 0u, r)) cs_record(r);
}

// The look at an aligned 16-byte chunk at window granule q, for a read by warp x.w through
// `proxy` (cs_vc_smem_look's rules for it): its finding, or none; `ok` carries an epoch
// already judged clean. A warp's write read through the async proxy is always judged (its
// proxy fence). Uneven epochs, or a block being given back, are looked at out of line.
CS_DEV cs_finding cs_access16_look(const cs_vc_smem_ctx_t& x, uint32_t q, uint32_t proxy, uint32_t& ok) {
    const uint32_t b = q / CS_VC_BLOCK, bt = cs_s_ld(x.BT + 4u * b);
    const cs_chunk_epoch e4 = cs_chunk_epochs(x.W, q);
    if (bt == CS_BT_LOCKED || (!bt && !e4.one)) return cs_access16_look_any(x.slot, x.w, q, proxy);
    const uint32_t e = bt ? bt & ~CS_BT_WHOLE : e4.e, t = cs_vw_t(e);
    if (e == ok) return {0, CS_NO_SITE, CS_NO_WARP};
    if (e == 0 || (e & CS_VW_MBAR) || (proxy != CS_PROXY_NONE && t < CS_MAX_WARPS) ||
        (t != x.w && cs_vc_smem_mine(x.mine, t) < cs_vw_c(e))) {
        cs_finding f = cs_access16_judge_read(x.slot, x.w, e, bt ? cs_vc_smem_bsite(x, b) : x.ws + q, proxy);
        if (f.kind) return f;
    }
    ok = e;
    return {0, CS_NO_SITE, CS_NO_WARP};
}

// The reads of a lane's n chunks at window granules g, g + step, ...: published, one fence,
// then judged against the write epochs (cs_vc_smem_read on 16-byte spans).
CS_DEV void cs_access16_read(const cs_vc_smem_ctx_t& x, uint32_t g, uint32_t step, uint32_t n, uint32_t site,
                      cs_finding& f, uint32_t& fk) {
    const uint32_t w = x.w, clk = cs_clock_sh[w], c8 = cs_vc_smem_byte(clk);
    const uint32_t c32 = c8 * 0x01010101u;
    const cs_sp R = x.R + w * x.gp;
    uint32_t* rs = x.rsite + w * x.gp;
    for (uint32_t k = 0, q = g; k < n; ++k, q += step) {
        uint32_t b = q / CS_VC_BLOCK;
        cs_sp p = x.RS + 4u * (b * x.rss + w);
        uint32_t v = cs_s_ld(p), old = cs_chunk_bytes(R, q);
        if (v == 0 || v == CS_RS_ZEROING) {  // the block's bytes are stale: emptied first
            cs_access16_raise(x.slot, w, b, clk);
            old = cs_chunk_bytes(R, q);
            v = clk;
        }
        cs_chunk_put(R, rs, q, c8, site, old);  // (a byte already at this clock keeps its site)
        if (v < clk) cs_s_max(p, clk);
    }
    CS_READ_FENCE();  // publish the reads, then look at the writes (Dekker with the writer)
    uint32_t ok = 0xFFFFFFFFu;
    for (uint32_t k = 0, q = g; k < n && !f.kind; ++k, q += step) {
        f = cs_access16_look(x, q, CS_PROXY_NONE, ok);
        fk = k;
    }
}

// Whether reader ri's summary c of a block is later than what warp x.w has seen of it.
// Its clock is looked up only for a reader the summary names: a GEMM's block has one or
// two readers of 4-12, and looking up all twelve first took 173 instructions that every
// call ran (the SASS at 5b3ef14), of the 393 warp instructions ncu counted a call.
CS_DEV bool cs_access16_after(const cs_vc_smem_ctx_t& x, uint32_t c, uint32_t ri) {
    return c && c > cs_vc_smem_reader_clock(x, ri);
}

// The writes of a lane's n chunks by `by` at clk (cs_vc_smem_write on 16-byte spans, readers
// in at most 4 * CS_A16_READER_VECS rows: a block's summaries in that many vector loads): the
// epochs exchanged, one fence, then the readers. (Measured on the H100: with four rows at
// most, a Triton matmul's cp.async writes with 10 readers -- 8 warps, 2 wgmma units -- took
// the general probe, 5.5k cycles a call.) `lanes`: the lanes making the call together (n is
// theirs alike). The late readers' judgment, out of line, is made by all of them or none:
// its callee clears the convergence barriers B6/B7 the call lies inside, so called by the
// lanes with a late reader alone it released the others, and the warp ran split into the
// report's votes (on the H100, Triton's matmul without its epilogue's wgmma wait hung with
// half of each warp in the report, half past the probe; docs/model.md).
CS_DEV void cs_access16_write(uint32_t lanes, const cs_vc_smem_ctx_t& x, uint32_t g, uint32_t step, uint32_t n,
                       uint32_t site, uint32_t by, uint32_t clk, cs_finding& f, uint32_t& fk) {
    const uint32_t w = x.w, now = cs_vw(by, clk, 0u);
    cs_finding fw = {0, CS_NO_SITE, CS_NO_WARP}, fr = fw;
    uint32_t aw = 0, ar = 0, kw = 0, kr = 0;
    for (uint32_t k = 0, q = g; k < n; ++k, q += step) {
        uint32_t b = q / CS_VC_BLOCK;
        if (cs_s_ld(x.BT + 4u * b)) cs_access16_claim(x.slot, w, b);  // a copy held the block whole
        cs_sp a = x.W + 4u * q;
        uint32_t o0 = cs_s_xchg(a, now), o1 = o0, o2 = o0, o3 = o0;
        if (CS_CHUNK_G == 4) o1 = cs_s_xchg(a + 4, now), o2 = cs_s_xchg(a + 8, now), o3 = cs_s_xchg(a + 12, now);
        if (o0 == o1 && o1 == o2 && o2 == o3 && !(o0 & CS_VW_MBAR)) {
            if ((o0 & ~CS_VW_ATOMIC) == now) continue;  // rewritten at the same clock: sites stay
            uint32_t t = cs_vw_t(o0);
            if (o0 != 0 && !cs_own_write(t, by) && !cs_ordered(x.mine, w, t, cs_vw_c(o0)) &&
                !fw.kind) {
                fw = cs_replicated(cs_access16_judge_write(x.slot, w, o0, x.ws + q, by), site);
                if (fw.kind) aw = q, kw = k;
            }
            cs_chunk_sites(x.ws + q, site);
            continue;
        }
        cs_found r = cs_access16_write4(x.slot, w, q, site, by, now, o0, o1, o2, o3);
        if (r.f.kind && !fw.kind) fw = r.f, aw = r.at, kw = k;
    }
    cs_fence();  // publish the writes, then look at the readers (Dekker with the reader)
    const uint32_t nv = x.rss / 4;
    for (uint32_t k = 0, q = g; k < n; ++k, q += step) {
        const cs_sp rs = x.RS + 4u * (q / CS_VC_BLOCK) * x.rss;
        uint32_t seen = 0;
        bool late = false;
#pragma unroll
        for (uint32_t i = 0; i < CS_A16_READER_VECS; ++i) {
            if (i >= nv) break;
            cs_u4 v = cs_s_ld4(rs + 16u * i);
            seen |= ((v.x ? 1u : 0u) | (v.y ? 2u : 0u) | (v.z ? 4u : 0u) | (v.w ? 8u : 0u)) << (4 * i);
            late |= cs_access16_after(x, v.x, 4 * i) | cs_access16_after(x, v.y, 4 * i + 1) |
                    cs_access16_after(x, v.z, 4 * i + 2) | cs_access16_after(x, v.w, 4 * i + 3);
        }
        const bool judge = late && !fr.kind;
        if (cs_any(lanes, judge)) {  // (a lane with nothing to judge passes no reader)
            cs_found r = cs_access16_late(x.slot, w, judge ? seen : 0u, q);
            if (judge && r.f.kind) fr = r.f, ar = r.at, kr = k;
        }
        if (seen) cs_vc_smem_empty16(x, q, seen);
    }
    f = cs_vc_smem_first(fw, kw, aw, fr, kr, ar, fk);
}

// True when the warp's access was the 16-byte kind and is done.
CS_DEV bool cs_vc_smem_access16(uint64_t addr, uint32_t site, uint32_t info, uint32_t rep) {
    const uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return true;
    const uint32_t space = (info >> CS_INFO_SPACE_SHIFT) & 3u;
    const uint32_t mode = (info >> CS_INFO_MODE_SHIFT) & 3u;
    const uint32_t shape = (info >> CS_INFO_SHAPE_SHIFT) & 15u;
    const uint32_t n = rep & CS_REP_COUNT_MASK, stride = rep >> CS_REP_STRIDE_SHIFT;
    const uint32_t w = cs_warp(), m = cs_activemask();
    bool idle = shape && cs_lane() >= 8u * shape;  // ldmatrix/stmatrix: row-address lanes
    uint32_t a = (uint32_t)addr, off = 0, by = w, clk = 0;
    if (space == CS_SPACE_GENERIC) {
        if (!cs_is_shared(addr)) idle = true;
        else a = cs_to_shared(addr);
    }
    if (mode == CS_MODE_ASYNC_WRITE) {  // the copy unit's clock (__consan_async)
        by = CS_AGENT_CPASYNC + w;
        clk = *(volatile uint32_t*)&cs_cpticks_sh[w] + 1;
    } else if (mode == CS_MODE_WRITE) {
        clk = cs_clock_sh[w];
    }
    uint32_t end = (a & 0xFFFFFFu) + (n - 1) * stride + 16u;
    bool mine = cs_local(a, off) && ((off | stride) & 15u) == 0 && n != 0 &&
                off >= S.vsh_base && end <= S.granules * CS_GRANULE_BYTES && end > off;
    bool fits = (info & CS_INFO_SIZE_MASK) == 16u && mode != CS_MODE_ATOMIC &&
                clk <= CS_VW_CLOCK_MASK &&
                (mode == CS_MODE_READ || cs_vc_smem_layout_sh.nr <= 4u * CS_A16_READER_VECS);
    if (!cs_all(m, fits && (idle || mine))) return false;
    cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
    uint32_t fk = 0;
    const uint32_t busy = mode == CS_MODE_READ ? 0u : cs_ballot(m, !idle);  // (the write's lanes)
    if (!idle) {
        const cs_vc_smem_ctx_t x = cs_vc_smem_ctx(slot, w);
        uint32_t g = (off - S.vsh_base) / CS_GRANULE_BYTES, step = stride / CS_GRANULE_BYTES;
        if (mode == CS_MODE_READ) cs_access16_read(x, g, step, n, site, f, fk);
        else cs_access16_write(busy, x, g, step, n, site, by, clk, f, fk);
    }
    if (cs_any(m, f.kind != 0)) cs_access16_report(m, f, site, info, off + fk * stride);
    return true;
}
