// consan device checker: vector-clock mode, granule tables in device memory.
//
// A read is published then judged against the last write; a write exchanges the epoch
// then judges the readers; a copy engine's box goes through the box summaries.

// Reader word of a granule: gen:16 | phase:16 | mask:32. `phase` is the latest
// CTA phase (count of CTA-wide barriers passed) at which a recorded read
// happened: a writer that has passed a later CTA-wide barrier is ordered
// after every recorded read without looking at them one by one.
#define CS_RM_PHASE(m) ((uint32_t)((m) >> 32) & 0xFFFFu)

CS_DEV bool cs_phase_after(uint32_t mine, uint32_t theirs) {  // 16-bit serial numbers
    uint32_t d = (mine - theirs) & 0xFFFFu;
    return d != 0 && d < 0x8000u;
}

// Publish this warp's read of granule g (the writer side looks for it after its store).
CS_DEV void cs_record_read(const cs_view& v, uint32_t g, uint32_t site) {
    uint64_t* rm = v.ent + 2 * g + 1;
    uint64_t* rs = v.mine_rs + g;
    uint64_t m = cs_ld64(rm);
    uint64_t bit = 1ull << v.w;
    uint64_t head = ((uint64_t)v.gen << CS_RM_GEN_SHIFT) | ((uint64_t)v.phase << 32);
    if ((m & ~0xFFFFFFFFull) == head && (m & bit) && (uint32_t)cs_ld64(rs) == v.clock) return;
    cs_st64(rs, ((uint64_t)site << 32) | v.clock);
    for (int tries = 0; tries < 64; ++tries) {
        // Readers of an earlier CTA phase are ordered before every warp that can write
        // now (all live warps passed a CTA-wide barrier since): start a new reader set.
        if ((m & ~0xFFFFFFFFull) == head || ((m >> CS_RM_GEN_SHIFT) == v.gen &&
                                             !cs_phase_after(v.phase, CS_RM_PHASE(m)))) {
            if (!(m & bit)) cs_or64(rm, bit);
            return;
        }
        uint64_t seen = cs_cas64(rm, m, head | bit);
        if (seen == m) return;
        m = seen;
    }
}

// The write epoch ww of granule g as a read by warp v.w through `proxy` sees it
// (cs_judge_read; slot: for CS_PROXY_WGMMA).
CS_DEV cs_finding cs_judge_read_epoch(const cs_view& v, uint32_t slot, uint32_t g, uint64_t ww,
                                      uint32_t proxy) {
    return cs_judge_read((ww >> CS_WW_GEN_SHIFT) == v.gen,
                         (ww >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_MBAR,
                         (uint32_t)(ww >> CS_WW_TID_SHIFT) & 0xFFu, (uint32_t)ww, v.wsite + g,
                         v.mine, v.w, slot, proxy);
}

CS_DEV void cs_check_prev_write(uint64_t old, uint32_t old_site, uint32_t gen, uint32_t w,
                                bool atomic, const uint32_t* mine, cs_finding& f,
                                uint32_t site) {
    if ((old >> CS_WW_GEN_SHIFT) != gen) {
        if (atomic && !f.kind) f = {CS_UNINIT_READ, CS_NO_SITE, CS_NO_WARP};
        return;
    }
    uint32_t t = (uint32_t)(old >> CS_WW_TID_SHIFT) & 0xFFu;
    bool both_atomic = atomic && ((old >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_ATOMIC);
    if (!both_atomic && !cs_ordered(mine, w, t, (uint32_t)old) && !f.kind)
        f = cs_replicated({cs_async_agent(t) ? CS_ASYNC_PENDING_WRITE : CS_RACE_WAW,
                           old_site, t}, site);
}

// Readers this writer must check one by one: those recorded in its own CTA phase.
CS_DEV uint64_t cs_same_phase_readers(uint64_t m, uint32_t gen, uint32_t phase) {
    if ((m >> CS_RM_GEN_SHIFT) != gen || cs_phase_after(phase, CS_RM_PHASE(m))) return 0;
    return m & 0xFFFFFFFFull;
}

CS_DEV bool cs_async_proxy();  // bulk stores and proxy fences: their section, below
CS_DEV void cs_check_async_read(const cs_view& v, uint32_t g, cs_finding& f);
CS_DEV bool cs_wgmma_module();  // wgmma section below
CS_DEV uint64_t* cs_wg_rec(uint32_t slot, uint32_t u, uint32_t g);
CS_DEV uint32_t* cs_wg_site(uint32_t slot, uint32_t u, uint32_t g);
CS_DEV uint32_t cs_nwg();

// Writes of granules base + i (the bits i of `wgread`, each replacing an epoch flagged as
// read by a wgmma unit): is every such read's group retired for the writer? The writes
// supersede the reads. The loads of the N granules are in flight together, unit by unit.
template <uint32_t N>
CS_DEV void cs_wg_check_reads_run(const cs_view& v, uint32_t base, uint32_t wgread, cs_finding* fi) {
    uint32_t slot = cs_slot_sh;
    uint64_t x[N];
    for (uint32_t u = 0; wgread && u < cs_nwg(); ++u) {
#pragma unroll
        for (uint32_t i = 0; i < N; ++i)
            if (wgread & (1u << i)) x[i] = cs_ld64(cs_wg_rec(slot, u, base + i));
#pragma unroll
        for (uint32_t i = 0; i < N; ++i) {
            if (!(wgread & (1u << i)) || (x[i] >> CS_WG_GEN_SHIFT) != v.gen) continue;
            if (!cs_ordered(v.mine, v.w, CS_AGENT_WGMMA + u, (uint32_t)x[i]) && !fi[i].kind)
                fi[i] = {CS_ASYNC_PENDING_READ, cs_ld32(cs_wg_site(slot, u, base + i)),
                         CS_AGENT_WGMMA + u};
            cs_st64(cs_wg_rec(slot, u, base + i), 0);
        }
    }
}

// A write of granules [g0, g1] by this warp -- or, for cp.async, by its copy unit `by` at
// the unit's clock `clk` (the group it belongs to); ordering is judged from the warp's
// clock. When this warp (or its unit at this clock) wrote last, or atomics follow atomics,
// no write-write conflict is possible and a plain store does (a simultaneous writer from
// another warp takes the exchange and sees this epoch); with wgmma a compare-and-swap, so
// that a wgmma read flagging the epoch meanwhile is not lost. Each granule's epoch is
// stored before its readers are looked at (Dekker with the reads). The loads and
// exchanges of up to four granules (a lane's 16 bytes) are in flight together, with one
// fence; the first finding is the first granule's. (Measured on the H100: a Triton
// matmul's cp.async writes, 16 bytes a lane, took 16.6k cycles a warp in the
// device-memory tables with the granules one after the other.)
#define CS_WRITE_RUN 4
CS_DEV void cs_check_write_run(const cs_view& v, uint32_t g0, uint32_t g1, uint32_t site,
                               bool atomic, cs_finding& f, uint32_t by, uint32_t clk) {
    bool wg = cs_wgmma_module(), ap = cs_async_proxy();
    uint64_t flags = atomic ? CS_WW_FLAG_ATOMIC : 0;
    uint64_t now = ((uint64_t)v.gen << CS_WW_GEN_SHIFT) | (flags << CS_WW_FLAGS_SHIFT) |
                   ((uint64_t)by << CS_WW_TID_SHIFT) | clk;
    for (uint32_t base = g0; base <= g1; base += CS_WRITE_RUN) {
        uint32_t n = g1 - base + 1 < CS_WRITE_RUN ? g1 - base + 1 : CS_WRITE_RUN;
        uint64_t old[CS_WRITE_RUN], rm[CS_WRITE_RUN];
        uint32_t osite[CS_WRITE_RUN], mbar = 0, swapped = 0, wgread = 0;
        cs_finding fi[CS_WRITE_RUN];
#pragma unroll
        for (uint32_t i = 0; i < CS_WRITE_RUN; ++i) {
            fi[i] = {0, CS_NO_SITE, CS_NO_WARP};
            if (i < n) old[i] = cs_ld64(v.ent + 2 * (base + i));
        }
#pragma unroll
        for (uint32_t i = 0; i < CS_WRITE_RUN; ++i) {
            if (i >= n) break;
            uint64_t o = old[i], *e = v.ent + 2 * (base + i);
            uint32_t t = (uint32_t)(o >> CS_WW_TID_SHIFT) & 0xFFu;
            bool live = (o >> CS_WW_GEN_SHIFT) == v.gen;
            if (live && ((o >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_MBAR)) {
                mbar |= 1u << i;  // the object stays an mbarrier: keep its mark
                continue;
            }
            bool same = live && (cs_own_write(t, by) || (t == by && (uint32_t)o == clk) ||
                                 (atomic && ((o >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_ATOMIC)));
            if (same && (!wg || cs_cas64(e, o, now) == o)) {
                if (!wg) cs_st64(e, now);
                if (t != by || (uint32_t)o != clk) cs_st32(v.wsite + base + i, site);
            } else {
                swapped |= 1u << i;
            }
        }
#pragma unroll
        for (uint32_t i = 0; i < CS_WRITE_RUN; ++i)
            if (swapped & (1u << i)) old[i] = cs_xchg64(v.ent + 2 * (base + i), now);
#pragma unroll
        for (uint32_t i = 0; i < CS_WRITE_RUN; ++i)
            if (swapped & (1u << i)) osite[i] = cs_xchg32(v.wsite + base + i, site);
#pragma unroll
        for (uint32_t i = 0; i < CS_WRITE_RUN; ++i) {
            if (i >= n) break;
            uint32_t g = base + i;
            if (mbar & (1u << i)) {
                fi[i] = {CS_MBARRIER_DATA_ACCESS, cs_ld32(v.wsite + g),
                         (uint32_t)(old[i] >> CS_WW_TID_SHIFT) & 0xFFu};
                continue;
            }
            if (swapped & (1u << i))
                cs_check_prev_write(old[i], osite[i], v.gen, v.w, atomic, v.mine, fi[i], site);
            if (wg && ((old[i] >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_WGREAD)) wgread |= 1u << i;
        }
        cs_wg_check_reads_run<CS_WRITE_RUN>(v, base, wgread, fi);
        cs_fence();
#pragma unroll
        for (uint32_t i = 0; i < CS_WRITE_RUN; ++i)
            if (i < n && !(mbar & (1u << i))) rm[i] = cs_ld64(v.ent + 2 * (base + i) + 1);
#pragma unroll
        for (uint32_t i = 0; i < CS_WRITE_RUN; ++i) {
            if (i >= n) break;
            uint32_t g = base + i;
            if (!(mbar & (1u << i))) {
                uint64_t readers = cs_same_phase_readers(rm[i], v.gen, v.phase);
                if (readers) cs_and64(v.ent + 2 * g + 1, ~readers);
                readers &= ~(1ull << v.w);
                while (readers) {
                    uint32_t u = cs_ffsll(readers) - 1;
                    readers &= readers - 1;
                    uint64_t r = cs_ld64(v.rslots + (uint64_t)u * v.granules + g);
                    if (!cs_ordered(v.mine, v.w, u, (uint32_t)r) && !fi[i].kind)
                        fi[i] = {CS_RACE_WAR, (uint32_t)(r >> 32), u};
                }
                if (ap || ((old[i] >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_PEER_READ))
                    cs_check_async_read(v, g, fi[i]);
            }
            if (!f.kind && fi[i].kind) f = fi[i];
        }
    }
}

// Granules [g0, g1] written by the async agent `by` at clock `clk`, issued by warp v.w: a
// bulk or tensor copy's box, which one lane models. The rules of cs_check_write_run for such a
// write, with the atomics of CS_RUN granules in flight together and one fence per run:
// one lane walking an 8 KiB box pays for latency, not work.
#define CS_RUN 8
CS_NOINLINE void cs_engine_walk(const cs_view& vr, uint32_t g0, uint32_t g1, uint32_t site,
                           uint32_t by, uint32_t clk, cs_finding& f) {
    // (a copy of the caller's view: in registers, where the referenced one was loaded from
    // the stack again after every store of the walk, 216 local loads in its SASS)
    const cs_view v = vr;
    cs_gadd32(&((cs_log_header_t*)S.log)->walked, g1 - g0 + 1);
    uint64_t now = ((uint64_t)v.gen << CS_WW_GEN_SHIFT) | ((uint64_t)by << CS_WW_TID_SHIFT) | clk;
    bool wg = cs_wgmma_module(), ap = cs_async_proxy();
    uint32_t slot = cs_slot_sh;
    for (uint32_t base = g0; base <= g1; base += CS_RUN) {
        uint32_t n = g1 - base + 1 < CS_RUN ? g1 - base + 1 : CS_RUN;
        uint64_t old[CS_RUN], x[CS_RUN];
        uint32_t osite[CS_RUN], mbar = 0, wgread = 0;
        // each granule's first finding; the copy's is that of the first granule with one
        cs_finding fi[CS_RUN];
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN; ++i) fi[i] = {0, CS_NO_SITE, CS_NO_WARP};
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN; ++i)
            if (i < n) old[i] = cs_xchg64(v.ent + 2 * (base + i), now);
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN; ++i)
            if (i < n) osite[i] = cs_xchg32(v.wsite + base + i, site);
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN; ++i) {
            if (i >= n) break;
            uint64_t o = old[i];
            bool live = (o >> CS_WW_GEN_SHIFT) == v.gen;
            uint32_t t = (uint32_t)(o >> CS_WW_TID_SHIFT) & 0xFFu;
            if (live && ((o >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_MBAR)) {
                // the object stays an mbarrier: put its mark back
                cs_st64(v.ent + 2 * (base + i), o);
                cs_st32(v.wsite + base + i, osite[i]);
                fi[i] = {CS_MBARRIER_DATA_ACCESS, osite[i], t};
                mbar |= 1u << i;
                continue;
            }
            if (!(live && cs_own_write(t, by)))
                cs_check_prev_write(o, osite[i], v.gen, v.w, false, v.mine, fi[i], site);
            if (wg && ((o >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_WGREAD)) wgread |= 1u << i;
        }
        cs_wg_check_reads_run<CS_RUN>(v, base, wgread, fi);  // (wgmma reads of these granules)
        cs_fence();
        // readers recorded in this CTA phase (the first of each granule loaded together)
        uint64_t rd[CS_RUN];
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN; ++i)
            if (i < n) x[i] = cs_ld64(v.ent + 2 * (base + i) + 1);
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN; ++i) {
            rd[i] = 0;
            if (i >= n || (mbar & (1u << i))) continue;
            uint64_t readers = cs_same_phase_readers(x[i], v.gen, v.phase);
            if (readers) cs_and64(v.ent + 2 * (base + i) + 1, ~readers);
            rd[i] = readers & ~(1ull << v.w);
            if (rd[i]) x[i] = cs_ld64(v.rslots + (uint64_t)(cs_ffsll(rd[i]) - 1) * v.granules + base + i);
        }
#pragma unroll
        for (uint32_t i = 0; i < CS_RUN; ++i) {
            if (i >= n) break;
            uint32_t g = base + i;
            for (uint64_t readers = rd[i]; readers; readers &= readers - 1) {
                uint32_t u = cs_ffsll(readers) - 1;
                uint64_t r = readers == rd[i] ? x[i] : cs_ld64(v.rslots + (uint64_t)u * v.granules + g);
                if (!cs_ordered(v.mine, v.w, u, (uint32_t)r) && !fi[i].kind)
                    fi[i] = {CS_RACE_WAR, (uint32_t)(r >> 32), u};
            }
            bool peer_read = (old[i] >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_PEER_READ;
            if ((ap || peer_read) && !(mbar & (1u << i))) cs_check_async_read(v, g, fi[i]);
            if (!f.kind && fi[i].kind) f = fi[i];
        }
    }
}

// A copy engine's write of granules [g0, g1] (see cs_engine_walk). Blocks whose summary
// says every earlier access is ordered before the issuing warp take stores only: the
// epoch, an empty reader set, the site. Then one fence, and a second look at their
// readers: one that came meanwhile raced with this copy (in a whole block it is reported
// from the summary -- its reader bit may be gone; in part of one, the part is walked).
#define CS_BOX_SUMMARY_BATCH 32
CS_DEV bool cs_vc_smem_on();
CS_NOINLINE void cs_vc_smem_engine(uint32_t slot, uint32_t w, uint32_t g0, uint32_t g1,
                               uint32_t site, uint32_t by, uint32_t clk, cs_finding& f);
CS_NOINLINE void cs_engine_write(const cs_view& vr, uint32_t g0, uint32_t g1, uint32_t site,
                                 uint32_t by, uint32_t clk, cs_finding& f) {
    CS_NULL_ENGINE_WRITE(return;)
    if (g0 > g1) return;  // (lanes that make the call with their leader: multicast.h)
    const cs_view v = vr;  // (in registers: as cs_engine_walk's)
    if (cs_vc_smem_on()) {
        uint32_t b = S.vsh_base / CS_GRANULE_BYTES;
        if (g0 < b) f = {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};
        else cs_vc_smem_engine(cs_slot_sh, v.w, g0 - b, g1 - b, site, by, clk, f);
        return;
    }
    if (!cs_box_summary_on()) return cs_engine_walk(vr, g0, g1, site, by, clk, f);
    uint32_t slot = cs_slot_sh, sh = S.bsum_shift;
    uint64_t now = ((uint64_t)v.gen << CS_WW_GEN_SHIFT) | ((uint64_t)by << CS_WW_TID_SHIFT) | clk;
    uint64_t head = ((uint64_t)v.gen << CS_RM_GEN_SHIFT) | ((uint64_t)v.phase << 32);
    uint64_t mine_entry = (1ull << 40) | ((uint64_t)by << 32) | clk;
    cs_box_summary_clocks q;
    {
        CS_PROF(53);
        cs_box_summary_clocks_init(v, q);
    }
    for (uint32_t b0 = g0 >> sh; b0 <= g1 >> sh; b0 += CS_BOX_SUMMARY_BATCH) {
        uint32_t fast = 0, nb = (g1 >> sh) - b0 + 1;
        nb = nb < CS_BOX_SUMMARY_BATCH ? nb : CS_BOX_SUMMARY_BATCH;
        for (uint32_t i = 0; i < nb; ++i) {
            uint32_t b = b0 + i, a = b << sh, z = ((b + 1) << sh) - 1;
            a = a < g0 ? g0 : a;
            z = z > g1 ? g1 : z;
            uint32_t* s = cs_box_summary(slot, b);
            cs_box_summary_block x;
            bool clear;
            {
                CS_PROF(50);
                cs_box_summary_load(s, q, true, x);
                uint32_t by_i, by_c;
                clear = cs_box_summary_writers_ordered(v, by, x, by_i, by_c);
                clear = cs_box_summary_readers_ordered(v, s, q, x) && clear;
                if (by_i == CS_BSUM_WRITERS) cs_box_summary_write(slot, a, z, by, clk);  // its first copy here
                else if (by_c < clk) cs_max64((uint64_t*)(s + CS_BS_WRITERS) + by_i, mine_entry);
            }
            if (!clear) {
                cs_engine_walk(vr, a, z, site, by, clk, f);
                continue;
            }
            fast |= 1u << i;
            CS_NULL_BOX_STORES(continue;)
            CS_PROF(51);
            for (uint32_t g = a; g <= z; ++g) {
                cs_st128(v.ent + 2 * g, now, head);
                cs_st32(v.wsite + g, site);
            }
        }
        if (!fast) continue;
        CS_PROF(52);
        cs_fence();
        CS_NULL_BOX_RECHECK(fast = 0;)
        for (; fast; fast &= fast - 1) {
            uint32_t b = b0 + cs_ffs(fast) - 1, a = b << sh, z = ((b + 1) << sh) - 1;
            uint32_t* s = cs_box_summary(slot, b);
            cs_box_summary_block x;
            cs_box_summary_load(s, q, false, x);
            if (cs_box_summary_readers_ordered(v, s, q, x)) continue;
            if (!(a >= g0 && z <= g1))
                cs_engine_walk(vr, a < g0 ? g0 : a, z > g1 ? g1 : z, site, by, clk, f);
            else if (!f.kind)
                f = cs_box_summary_late_reader(v, s);
        }
    }
}


// A copy engine's write of granules [g0, g1] by the lanes `lanes` together (every one of
// them calls this with the same arguments): they split the copy's blocks, a contiguous run
// of whole blocks each (a block's summary is kept by one lane; lanes left without one walk
// nothing: first 1, last 0). The copy's finding, in every lane, is that of the first lane
// that has one, as one lane walking them in order would have found. (Measured on the H100,
// by one lane: a peer's 512 bytes took 20.5k cycles, most of it the four blocks' summaries
// in turn; a 16 KiB tensor box of 4-byte granules, device-memory tables, 302k cycles.)
// The part of a copy's write over granules [g0, g1] that lane k of nl takes (one
// contiguous run of whole blocks); every lane makes the call, with nothing to do or not.
CS_DEV void cs_engine_write_share(const cs_view& v, uint32_t g0, uint32_t g1, uint32_t k,
                                  uint32_t nl, uint32_t site, uint32_t by, uint32_t clk,
                                  cs_finding& f) {
    uint32_t sh = cs_box_summary_on() ? S.bsum_shift : 5u;
    uint32_t b0 = g0 >> sh, nb = (g1 >> sh) - b0 + 1, per = (nb + nl - 1) / nl;
    uint32_t lo = 1u, hi = 0u;
    if (k * per < nb) {
        lo = (b0 + k * per) << sh, hi = ((b0 + (k + 1) * per) << sh) - 1u;
        lo = lo < g0 ? g0 : lo;
        hi = hi > g1 ? g1 : hi;
    }
    cs_engine_write(v, lo, hi, site, by, clk, f);
}

CS_DEV void cs_engine_write_split(uint32_t lanes, const cs_view& v, uint32_t g0, uint32_t g1,
                                  uint32_t site, uint32_t by, uint32_t clk, cs_finding& f) {
    uint32_t nl = cs_popc(lanes), k = cs_popc(lanes & ((1u << cs_lane()) - 1u));
    cs_engine_write_share(v, g0, g1, k, nl, site, by, clk, f);
    uint32_t found = cs_ballot(lanes, f.kind != 0);
    if (found) {
        int src = cs_ffs(found) - 1;
        f = {cs_bcast(lanes, f.kind, src), cs_bcast(lanes, f.prev_site, src),
             cs_bcast(lanes, f.prev_warp, src)};
    }
}


CS_DEV bool cs_multicast_on();  // multicast.h
CS_DEV void cs_dsmem_post(uint32_t active, bool mine, uint32_t a32, uint32_t off, uint32_t size,
                          uint32_t site, uint32_t mode);  // dsmem.h

CS_DEV uint32_t* cs_mbar_entry(uint32_t slot, uint32_t off, bool create, uint32_t& j);  // mbarrier.h
CS_DEV bool cs_mbar_live(uint32_t j);  // mbarrier.h
// A read of `size` bytes at window offset `off` whose chunk granule is marked as holding an
// mbarrier (chunk granules): whether its bytes reach a live one. A module of chunk granules
// writes only whole chunks but may read less (docs/model.md, *Chunk granules*), so the 8
// bytes beside an mbarrier may be the kernel's data, read by a smaller load.
CS_DEV bool cs_read_reaches_mbar(uint32_t off, uint32_t size) {
    if (CS_GRANULE_BYTES < 16 || size >= 16) return true;
    uint32_t j;
    for (uint32_t a = off & ~7u; a < off + size; a += 8)
        if (cs_mbar_entry(cs_slot_sh, a, false, j) != 0 && cs_mbar_live(j)) return true;
    return false;
}

// Everything the fast path does not settle: recording reads, writes, findings.
CS_NOINLINE void cs_access_slow(uint64_t addr, uint32_t site, uint32_t info) {
    CS_PROF(14);
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return;
    uint32_t active = cs_group(((uint64_t)site << 32) | info, 0);
    uint32_t lane = cs_lane();
    uint32_t space = (info >> CS_INFO_SPACE_SHIFT) & 3u;
    uint32_t mode = (info >> CS_INFO_MODE_SHIFT) & 3u;
    uint32_t shape = (info >> CS_INFO_SHAPE_SHIFT) & 15u;
    uint32_t size = info & CS_INFO_SIZE_MASK;
    uint32_t off = 0, at = cs_where(addr, space, off);
    bool skip = at == CS_AT_ELSEWHERE, remote = at == CS_AT_REMOTE;
    if (shape && lane >= 8u * shape) skip = true;  // ldmatrix/stmatrix: lanes giving row addresses
    cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
    if (cs_multicast_on() && cs_any(active, remote && !skip)) {
        // another CTA's shared memory: posted to it, which judges it (dsmem.h)
        cs_dsmem_post(active, remote && !skip, cs_cluster_addr(addr, space), off, size, site,
                      mode);
        if (remote) skip = true;
    } else if (remote && !skip) {  // (modules that reach no peer on purpose): said
        f = {CS_TOOL_REMOTE_SMEM, CS_NO_SITE, CS_NO_WARP};
        skip = true;
    }
    uint32_t g0 = off / CS_GRANULE_BYTES, g1 = (off + size - 1) / CS_GRANULE_BYTES;
    bool inside = !skip && g1 < S.granules;
    uint32_t mn = cs_min(active, inside ? g0 : 0xFFFFFFFFu);
    uint32_t mx = cs_max(active, inside ? g1 : 0u);
    if (cs_phase_mode() && mode == CS_MODE_READ && cs_all(active, inside || skip) &&
        mn <= mx && mx - mn < 64) {
        // The warp's reads cover at most 64 neighbouring granules (tiles, stencils,
        // broadcasts): take their union and spread it a granule per lane, so granules
        // read by several lanes are recorded once.
        uint64_t own = 0;
        if (inside) own = ((g1 - g0 == 63) ? ~0ull : ((1ull << (g1 - g0 + 1)) - 1)) << (g0 - mn);
        uint32_t lo = cs_or(active, (uint32_t)own), hi = cs_or(active, (uint32_t)(own >> 32));
        uint32_t total = cs_popc(lo) + cs_popc(hi), nlo = cs_popc(lo);
        uint32_t lanes = cs_popc(active), rank = cs_popc(active & ((1u << lane) - 1u));
        uint32_t w = cs_warp(), phase = cs_phase_sh[w];
        for (uint32_t item = rank; item < total; item += lanes) {
            uint32_t bit = item < nlo ? cs_nth_set(lo, item) : 32 + cs_nth_set(hi, item - nlo);
            uint32_t g = mn + bit;
            cs_finding before = f;
            cs_phase_read(slot, w, phase, g, site, f);
            if (f.kind && !before.kind) off = g * CS_GRANULE_BYTES, size = CS_GRANULE_BYTES;
        }
        skip = skip || !f.kind;
    } else if (!skip) {
        if (g1 >= S.granules) {
            f = {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};
        } else {
            CS_PROF(15);
            uint32_t w = cs_warp();
            cs_view v = cs_make_view(slot, w);
            if (cs_phase_mode()) {
                for (uint32_t g = g0; g <= g1; ++g) {
                    if (mode == CS_MODE_READ) cs_phase_read(slot, w, v.phase, g, site, f);
                    else cs_phase_write(slot, w, v.phase, g, site, mode == CS_MODE_ATOMIC, f);
                }
            } else if (mode == CS_MODE_READ) {
                // Publish every read, one fence, then look at the writes (Dekker with
                // cs_check_write_run, which stores its epoch, fences, then looks for readers).
                {
                    CS_PROF(46);
                    for (uint32_t g = g0; g <= g1; ++g) cs_record_read(v, g, site);
                }
                {
                    CS_PROF(47);
                    if (cs_box_summary_on()) cs_box_summary_read(slot, g0, g1, w, v.clock, site);
                }
                {
                    CS_PROF(48);
                    cs_fence();
                }
                // (every epoch loaded; the first finding kept)
                CS_PROF(49);
                for (uint32_t g = g0; g <= g1; ++g) {
                    uint64_t ww = cs_ld64(v.ent + 2 * g);
                    if (!f.kind) f = cs_judge_read_epoch(v, slot, g, ww, CS_PROXY_NONE);
                }
                if (f.kind == CS_MBARRIER_DATA_ACCESS && !cs_read_reaches_mbar(off, size))
                    f = {0, CS_NO_SITE, CS_NO_WARP};
            } else {
                uint32_t by = w, clk = v.clock;
                if (mode == CS_MODE_ASYNC_WRITE) {  // the copy unit's clock (__consan_async)
                    by = CS_AGENT_CPASYNC + w;
                    clk = *(volatile uint32_t*)&cs_cpticks_sh[w] + 1;
                }
                if (cs_box_summary_on()) cs_box_summary_write(slot, g0, g1, by, clk);
                cs_check_write_run(v, g0, g1, site, mode == CS_MODE_ATOMIC, f, by, clk);
            }
        }
    }
    if (!cs_any(active, f.kind != 0)) return;
    cs_record_t r;
    if (cs_merged_record(active, f, site, skip ? 0xFFFFFFFFu : off, skip ? 0u : off + size, r))
        cs_record(r);
}


// Granules [g0, g1] last written in this CTA by the instruction at `site` (idempotent
// stores), in the device-memory tables of either mode; an mbarrier object's are not.
CS_DEV bool cs_written_by(uint32_t slot, uint32_t g0, uint32_t g1, uint32_t site) {
    for (uint32_t g = g0; g <= g1; ++g) {
        uint64_t e = cs_ld64(cs_gent(slot, g));
        if ((e >> CS_WW_GEN_SHIFT) != cs_gen_sh || ((e >> CS_WW_FLAGS_SHIFT) & CS_WW_FLAG_MBAR) ||
            cs_ld32((uint32_t*)S.wsite + cs_gidx(slot, g)) != site)
            return false;
    }
    return true;
}

// The common case, in few registers: a plain access (at most 16 granules) whose
// every granule needs no update -- a read already recorded at this clock of a
// write that happens before it, or a rewrite by the same warp at the same
// clock with no other reader. Nothing is stored; anything else goes slow.
CS_DEV bool cs_access_fast(uint64_t addr, uint32_t info) {
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return true;
    uint32_t space = (info >> CS_INFO_SPACE_SHIFT) & 3u;
    uint32_t mode = (info >> CS_INFO_MODE_SHIFT) & 3u;
    if (space != CS_SPACE_SHARED || mode >= CS_MODE_ATOMIC || ((info >> CS_INFO_SHAPE_SHIFT) & 15u))
        return false;
    uint32_t off;
    if (!cs_local((uint32_t)addr, off)) return false;
    uint32_t size = info & CS_INFO_SIZE_MASK;
    uint32_t g0 = off / CS_GRANULE_BYTES, g1 = (off + size - 1) / CS_GRANULE_BYTES;
    if (g1 - g0 > 15 || g1 >= S.granules) return false;
    uint32_t w = cs_warp();
    uint64_t gen = cs_gen_sh;
    if (cs_phase_mode()) {
        uint32_t phase = cs_phase_sh[w];
        const uint32_t* bm = cs_readbits(slot, w, phase & 1);
        uint64_t mine_now = (gen << CS_WW_GEN_SHIFT) | ((uint64_t)w << CS_WW_TID_SHIFT) | phase;
        for (uint32_t g = g0; g <= g1; ++g) {
            if (mode == CS_MODE_READ) {
                if (!(cs_ld32(bm + (g >> 5)) & (1u << (g & 31)))) return false;
            } else if (cs_ld64(cs_gent(slot, g)) != mine_now) {
                return false;
            }
        }
        return true;
    }
    uint32_t clock = cs_clock_sh[w];
    uint64_t bit = 1ull << w;
    const uint32_t* mine = cs_vis(slot, w);
    for (uint32_t g = g0; g <= g1; ++g) {
        const uint64_t* e = cs_gent(slot, g);
        uint64_t ww = cs_ld64(e), rm = cs_ld64(e + 1);
        if ((ww >> CS_WW_GEN_SHIFT) != gen) return false;
        uint32_t t = (uint32_t)(ww >> CS_WW_TID_SHIFT) & 0xFFu;
        if (mode == CS_MODE_READ) {
            if ((rm >> CS_RM_GEN_SHIFT) != gen || !(rm & bit) || CS_RM_PHASE(rm) != cs_phase_sh[w])
                return false;
            if ((uint32_t)cs_ld64(cs_rslot(slot, w, g)) != clock) return false;
            if ((ww >> CS_WW_FLAGS_SHIFT) & 0xFFu) return false;
            if (t != w && mine[t] < (uint32_t)ww) return false;
        } else {
            if (t != w || (uint32_t)ww != clock || ((ww >> CS_WW_FLAGS_SHIFT) & 0xFFu)) return false;
            if (cs_same_phase_readers(rm, (uint32_t)gen, cs_phase_sh[w]) & ~bit) return false;
        }
    }
    return true;
}

CS_DEV void cs_access(uint64_t addr, uint32_t site, uint32_t info) {
    if (!cs_access_fast(addr, info)) cs_access_slow(addr, site, info);
}
