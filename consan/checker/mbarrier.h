// consan device checker: mbarriers.

// ------------------------------------------------------------- mbarriers
//
// Each mbarrier the CTA initialises gets an entry (key = smem offset + 1). An
// arrive releases the warp's clock into the slot of the current phase; the
// phase completes when the pending arrivals and the transaction bytes reach
// zero; a successful wait acquires the slot of the phase it waited for. The
// entry is updated under its own lock: mbarrier operations are rare next to
// shared-memory accesses.

// The entry of the mbarrier at `off` (j: its index), made when `create` (init). Entries
// are made in device memory, where a slot's earlier CTAs left theirs; each CTA keeps the
// keys of those it made, and their liveness, in its shared memory, where every other
// probe looks them up (device-memory words other warps keep writing miss in L1).
CS_DEV uint32_t* cs_mbar_entry(uint32_t slot, uint32_t off, bool create, uint32_t& j) {
    uint32_t words = cs_mbar_entry_words(), *table = cs_mbar_table(slot);
    uint32_t h = (off >> 3) % CS_MBARRIERS;
    // The entry's home index first, then the others in a loop kept rolled: an entry is
    // almost always at its home, and the tries after it, unrolled, put 251-1,092 cold SASS
    // instructions between the hot paths of each probe that looks an entry up. On an H200:
    // the TMA ring's mbarrier probe 528 -> 486 warp instructions a call (ncu); the
    // clustered ring 0.975 by the device's time alone (A/B); the TMA ring and the TMA +
    // wgmma GEMM moved less than their times move with what their process ran before
    // them (benchmarks/load_order.py).
    j = h;
    if (!create && *(volatile uint32_t*)&cs_mkey_sh[h] == off + 1) return table + h * words;
#pragma unroll 1
    for (uint32_t i = create ? 0u : 1u; i < CS_MBARRIERS; ++i) {
        j = (h + i) % CS_MBARRIERS;
        uint32_t* e = table + j * words;
        if (!create) {  // (an earlier CTA's entry may sit before it: no early stop)
            if (*(volatile uint32_t*)&cs_mkey_sh[j] == off + 1) return e;
            continue;
        }
        uint32_t k = cs_ld32(&e[CS_MB_KEY]);
        if (k == 0) k = cs_cas32(&e[CS_MB_KEY], 0, off + 1), k = k ? k : off + 1;
        if (k == off + 1) {
            *(volatile uint32_t*)&cs_mkey_sh[j] = off + 1;
            return e;
        }
    }
    return 0;
}
// An mbarrier without an entry in a CTA whose table ran full (an init past CS_MBARRIERS):
// it is not modelled, and its operations and the copies completing on it run as written,
// so the kernel computes what it does natively (tool.mbarrier-table-full at the init).
CS_DEV bool cs_mbar_untracked(const uint32_t* e) {
    return e == 0 && *(volatile uint32_t*)&cs_shv.mbar_full != 0;
}
CS_DEV bool cs_mbar_live(uint32_t j) { return *(volatile uint32_t*)&cs_mlive_sh[j] == cs_gen_sh; }

CS_DEV void cs_lock(uint32_t* l) { while (cs_cas32(l, 0, 1) != 0) {} cs_fence_lock(); }
CS_DEV void cs_unlock(uint32_t* l) { cs_fence_lock(); cs_xchg32(l, 0); }
// An mbarrier entry's lock lives in the CTA's shared memory (only its warps take it): a
// shared-memory compare-and-swap, not a device-memory round trip, per try.
// (Acquire and release on the lock word itself, in place of a relaxed compare-and-swap or
// exchange beside fence.acq_rel.cta: the same order, one MEMBAR fewer a lock taken; on the
// H100 taking the lock cost the same, 1.4k cycles a call in the TMA ring.) A lane that
// finds it taken reads the word, a pause apart, until it is given back, instead of
// compare-and-swapping on it: on the H100 (device time alone, three rounds each) the
// clustered ring 2.757 -> 2.658 ms, the TMA ring and the TMA + wgmma GEMM unchanged.
#ifdef CONSAN_HOST
CS_DEV void cs_mbar_lock(uint32_t j) { cs_lock(&cs_mlock_sh[j]); }  // j: the entry's index
CS_DEV void cs_mbar_unlock(uint32_t j) { cs_unlock(&cs_mlock_sh[j]); }
#else
CS_DEV void cs_mbar_lock(uint32_t j) {  // j: the entry's index
    uint32_t a = (uint32_t)__cvta_generic_to_shared(&cs_mlock_sh[j]), old;
    for (;;) {
        asm volatile("atom.acquire.cta.shared::cta.cas.b32 %0, [%1], 0, 1;"
                     : "=r"(old) : "r"(a) : "memory");
        if (old == 0) return;
        do {
            cs_pause();
            asm volatile("ld.relaxed.cta.shared::cta.u32 %0, [%1];" : "=r"(old) : "r"(a) : "memory");
        } while (old != 0);
    }
}
CS_DEV void cs_mbar_unlock(uint32_t j) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(&cs_mlock_sh[j]);
    asm volatile("st.release.cta.shared::cta.u32 [%0], 0;" :: "r"(a) : "memory");
}
#endif

CS_NOINLINE void cs_mbar_record(uint32_t kind, uint32_t site, uint32_t off, const uint32_t* e) {
    cs_record_t r = cs_blank(kind, site);
    r.offset_lo = off;
    r.offset_hi = off + 8;
    r.barrier = off;
    if (e) {
        r.phase = e[CS_MB_PHASE];
        r.count = e[CS_MB_PENDING];
        r.clock = e[CS_MB_TX];
    }
    cs_record(r);
}

// Mark (or unmark) the granules of the object so ordinary accesses to it are caught: two
// of 4 bytes, or the 16-byte chunk it shares with the mbarrier at off ^ 8 where granules
// are chunks (every other access of such a module is whole chunks). An inval leaves the
// chunk marked while that one is live.
CS_DEV void cs_mbar_mark(uint32_t slot, uint32_t off, bool live) {
    if (CS_GRANULE_BYTES > 8 && !live) {
        uint32_t k;
        if (cs_mbar_entry(slot, off ^ 8u, false, k) != 0 && cs_mbar_live(k)) return;
    }
    uint32_t w = cs_warp();
    if (cs_vc_smem_on()) return cs_vc_smem_mark(slot, off, w, cs_clock_sh[w], live);
    uint64_t flags = live ? CS_WW_FLAG_MBAR : 0;
    uint64_t ww = ((uint64_t)cs_gen_sh << CS_WW_GEN_SHIFT) | (flags << CS_WW_FLAGS_SHIFT) |
                  ((uint64_t)w << CS_WW_TID_SHIFT) | cs_clock_sh[w];
    uint32_t g1 = (off + 7) / CS_GRANULE_BYTES;
    for (uint32_t g = off / CS_GRANULE_BYTES; g <= g1; ++g)
        if (g < S.granules) cs_st64(cs_gent(slot, g), ww);
    if (live && cs_box_summary_on() && g1 < S.granules)
        cs_box_summary_flag(slot, off / CS_GRANULE_BYTES, g1, CS_BS_FLAG_MBAR);
}
// The clock slot of phase ph (abi.MB_SLOTS of them, by phase).
CS_DEV uint32_t* cs_mbar_slot(uint32_t* e, uint32_t ph) {
    return e + CS_MB_VC + (ph % CS_MB_SLOTS) * S.nlogical;
}

// An entry's counters, read once under the lock in two vector loads (words 2-5), where
// each word was loaded again after every store to the entry. With the landing's column
// by a reduction (cs_mbar_copy_landed), on the H100: a TMA load's landing 1,398 -> 1,156
// cycles (the TMA ring), a peer's copy's record and landing 6,547 -> 5,180 (dsmem ring).
struct cs_mbar_words { uint32_t expected, pending, tx, phase, written; };
static_assert(CS_MB_EXPECTED == 2 && CS_MB_PENDING == 3 && CS_MB_TX == 4 && CS_MB_PHASE == 5 &&
              CS_MB_WRITTEN == 7, "abi.MB_*: the counters' two 16-byte chunks");
CS_DEV cs_mbar_words cs_mbar_load(const uint32_t* e) {
    cs_u4 a = cs_vc_ld4(e), b = cs_vc_ld4(e + 4);
    return {a.z, a.w, b.x, b.y, b.w};
}
// Phase ph's clock slot takes a release (lock held; `written`: the entry's word as read):
// until then it holds only zeros, as the completion of the phase before it (or the init)
// left it, so the first release into it is a copy, not a join (cs_mbar_count).
CS_DEV void cs_mbar_written(uint32_t* e, uint32_t written, uint32_t ph) {
    if (written < ph + 1) e[CS_MB_WRITTEN] = ph + 1;
}

// Complete the current phase if nothing is pending (lock held; m: the entry's counters):
// open the next one with a clean clock slot. The fence: a wait reads the phase, then the
// completed phase's slot, without the lock.
CS_DEV void cs_mbar_try_complete(uint32_t* e, const cs_mbar_words& m) {
    if ((int32_t)m.pending > 0 || (int32_t)m.tx > 0) return;
    uint32_t ph = m.phase + 1;
    cs_vc_clear(cs_mbar_slot(e, ph));
    cs_fence_lock();
    *(volatile uint32_t*)&e[CS_MB_PHASE] = ph;
    e[CS_MB_PENDING] = m.expected;
    e[CS_MB_TX] = 0;
}
CS_DEV void cs_mbar_try_complete(uint32_t* e) { cs_mbar_try_complete(e, cs_mbar_load(e)); }

// A copy of `bytes` on mbarrier j (at `off`) lands in phase ph (lock held): the copy
// engine's clock (its column, ph + 1) goes into the phase's slot, and the bytes may complete
// the phase. More bytes than a phase whose arrivals are all in still expects (before the
// last arrive, complete_tx may lead expect_tx) is an mbarrier.underflow at the copy (site);
// the bytes still count (the model completes the phase with its tx-count below zero; the
// hardware does not, so the kernel's wait never succeeds: the failed-wait watch reports
// the deadlock).
// Returns whether it underflowed; `record`: record it here (a caller whose lanes must all
// make the call records it after, multicast.h).
CS_DEV bool cs_mbar_copy_landed(uint32_t* e, uint32_t j, uint32_t ph, uint32_t bytes,
                                uint32_t site, uint32_t off, bool record = true) {
    cs_mbar_words m = cs_mbar_load(e);
    bool under = m.phase == ph && m.pending == 0 && (int32_t)m.tx < (int32_t)bytes;
    if (under && record) cs_mbar_record(CS_MBARRIER_UNDERFLOW, site, off, e);
    cs_red_max(cs_mbar_slot(e, ph) + CS_AGENT_MBAR + j, ph + 1);
    cs_mbar_written(e, m.written, ph);
    m.tx -= bytes;
    e[CS_MB_TX] = m.tx;
    if (m.phase == ph) cs_mbar_try_complete(e, m);
    return under;
}

CS_DEV void cs_mbar_acquire(uint32_t slot, uint32_t w, const uint32_t* vc) {
    cs_vc_join(cs_vis(slot, w), vc);
}

// An init's clock slots emptied (every column of all abi.MB_SLOTS of them: the slot's
// earlier CTAs left theirs) by the lanes `all` of its probe, each lane taking the 16-byte
// chunks at its rank among the lanes given the same entry (0: no init), with the entry's
// lock held by its leader, who gives it back after. One lane storing every chunk was most
// of an init's cost: about 8.4k cycles for the 168 columns of a TMA + wgmma GEMM's four
// slots (the H100, breakdown_async.py --profile), and a CTA's inits run one after another
// before its first barrier (the TMA ring makes nine).
CS_DEV void cs_mbar_empty_slots(uint32_t* e, uint32_t rank, uint32_t n) {  // (rank of n lanes)
    if (e == 0 || !CS_INIT_SLOTS) return;
    const uint32_t zero[4] = {0, 0, 0, 0};
    uint32_t* s0 = cs_mbar_slot(e, 0);  // (the slots follow one another, 16-byte aligned)
    for (uint32_t u = 4 * rank, t = CS_MB_SLOTS * S.nlogical; u < t; u += 4 * n)
        cs_vc_st4(s0 + u, zero);
}
CS_DEV void cs_mbar_init_slots(uint32_t all, uint32_t* e, bool lead, uint32_t j) {
    // (the entries one after another, each by every lane: the lanes of one call may init
    // an mbarrier each, a run of inits, abi.PROBE_MBAR_INIT_RUN)
    uint32_t rank = cs_popc(all & ((1u << cs_lane()) - 1u)), n = cs_popc(all);
    for (uint32_t todo = cs_ballot(all, e != 0); todo != 0;) {
        uint32_t* x = (uint32_t*)cs_bcast64(all, (uint64_t)e, cs_ffs(todo) - 1);
        todo &= ~cs_ballot(all, e == x);
        cs_mbar_empty_slots(x, rank, n);
    }
    cs_syncwarp(all);  // (every lane's stores before the unlock's fence)
    if (lead && e != 0) cs_mbar_unlock(j);
}

// A warp spinning on failed waits: true once `key` (the phase it waits for to complete,
// or the mbarrier that is not live) has stayed the same for DEADLOCK_MS.
CS_DEV bool cs_spin_stuck(uint32_t slot, uint32_t w, uint32_t key) {
    uint32_t* cta = cs_cta(slot);
    uint32_t now = cs_now_ms();
    if (cta[CS_CTA_SPIN_PHASE + w] != key) {
        cta[CS_CTA_SPIN_PHASE + w] = key;
        cta[CS_CTA_SPIN_SINCE + w] = now;
        return false;
    }
    return now - cta[CS_CTA_SPIN_SINCE + w] > CS_DEADLOCK_MS;
}

// The lanes `all` of a warp leave the kernel after a deadlock (found by this warp, or by
// another of its CTA: `ending`). Warps parked in the hardware at a named barrier with a
// thread count may be waiting for this one (Triton's partitions sync their four warps with
// `bar.sync 3, 128` around their mbarrier waits); with it gone they never return, and the
// kernel hangs. So the CTA winds down: `ending` is set, this warp arrives, in the model
// and in the hardware, at every counted barrier whose generation is open, and every later
// barrier or mbarrier-wait probe in the CTA leaves the same way (a warp that arrives
// while `ending` is set is either seen by the leaver's scan or sees `ending`: both
// publish, fence, then look).
CS_DEV void cs_leave_cta(uint32_t all, uint32_t site) {
    uint32_t slot = cs_slot_sh, leader = cs_ffs(all) - 1;
    if (slot != CS_NO_SLOT) {
        if (cs_lane() == leader) *(volatile uint32_t*)&cs_shv.ending = 1;
        cs_fence();
        cs_syncwarp(all);
        for (uint32_t b = 0; b < CS_NAMED_BARRIERS; ++b) {
            uint64_t seen = cs_bcast64(all, cs_bw_ld(cs_barword(slot, b)), (int)leader);
            uint32_t cw = CS_BW_COUNT(seen), n = CS_BW_ARRIVED(seen);
            if (!cw || !n || n == CS_BW_COMPLETING || n >= cw) continue;
            cs_bar_arrive(b, cw * 32, site, 0);
            cs_hw_bar_arrive(b, cw * 32);
        }
    }
    cs_thread_exit(site);
    cs_exit_thread();
}

// The wind-down by every lane of a probe's call at once, made by its entry after the body
// (CS_REJOINED_LEAVING), inside the entry's region.
CS_NOINLINE void cs_leave_out(uint32_t site) { cs_leave_cta(cs_activemask(), site); }

// True when the CTA winds down after a deadlock (cs_leave_cta): the caller's lanes leave,
// by their entry's wind-down. (A barrier probe asks after its arrival's fence.)
CS_DEV bool cs_ending() { return *(volatile uint32_t*)&cs_shv.ending != 0; }

// The leader's verdict on a guarded operation, for every lane: 0 run it, 1 skip it
// (it would fault), 2 deadlock -- `leaving` is set, and the warp's lanes leave the kernel
// at their entry's end (CS_REJOINED_LEAVING).
// `all`: every lane in the probe (each asks its own group's leader). One mask for all
// lanes: a warp-synchronous instruction run at once with different masks (a mask per
// group) splits the warp, and nothing joins it again.
CS_DEV uint32_t cs_guard_verdict(uint32_t all, uint32_t skip, uint32_t leader, bool& leaving) {
    cs_syncwarp(all);
    skip = cs_bcast(all, skip, leader);
    leaving = skip == 2;
    return skip;
}

// What an mbarrier operation does: arrives (arrive{_drop}{.expect_tx}), lowers the count
// of every later phase (arrive_drop), declares transaction bytes (arg: expect_tx), and for
// arrivals whose arg is the bytes, counts one arrival per thread.
CS_DEV bool cs_mb_arrives(uint32_t op) {
    return op == CS_MB_ARRIVE || op == CS_MB_ARRIVE_DROP || op == CS_MB_ARRIVE_EXPECT_TX ||
           op == CS_MB_ARRIVE_DROP_EXPECT_TX;
}
CS_DEV bool cs_mb_drops(uint32_t op) {
    return op == CS_MB_ARRIVE_DROP || op == CS_MB_ARRIVE_DROP_EXPECT_TX;
}
CS_DEV bool cs_mb_arrive_tx(uint32_t op) {
    return op == CS_MB_ARRIVE_EXPECT_TX || op == CS_MB_ARRIVE_DROP_EXPECT_TX;
}
CS_DEV bool cs_mb_expects(uint32_t op) { return op == CS_MB_EXPECT_TX || cs_mb_arrive_tx(op); }

// Arrivals and transaction bytes (lock held): arrive{_drop}{.expect_tx}, expect_tx and
// complete_tx by `lanes` lanes of warp w (arg each). An arrive releases the warp's clock
// into the open phase's slot. Returns 1 for a count that would go below zero (recorded).
CS_DEV uint32_t cs_mbar_count(uint32_t* e, uint32_t op, uint32_t arg, uint32_t lanes,
                              uint32_t site, uint32_t off, uint32_t w, uint32_t* mine) {
    uint32_t n = arg * lanes;  // every thread's arrive / tx counts
    cs_mbar_words m = cs_mbar_load(e);
    // (before the phase's last arrival complete_tx may lead expect_tx: the tx-count goes
    // below zero, as it may on the hardware; as for a copy's bytes, cs_mbar_copy_landed)
    bool tx_under = op == CS_MB_COMPLETE_TX && m.pending == 0 && (int32_t)m.tx < (int32_t)n;
    if (tx_under) cs_mbar_record(CS_MBARRIER_UNDERFLOW, site, off, e);
    uint32_t dtx = cs_mb_expects(op) ? n : op == CS_MB_COMPLETE_TX ? 0u - n : 0u;
    if (dtx) e[CS_MB_TX] = m.tx += dtx;
    bool arrives = cs_mb_arrives(op);
    uint32_t count = cs_mb_arrive_tx(op) ? lanes : n;
    // The first release into the open phase's slot stores the warp's clock over the zeros
    // there: no load of the slot (two round trips to device memory that the TMA ring's
    // carried arrive waited for, 19% of its tensor probe's stall samples, ncu on the H100).
    if (arrives && CS_ARRIVE_RELEASE && m.written == m.phase + 1)
        cs_vc_join(cs_mbar_slot(e, m.phase), mine);
    else if (arrives && CS_ARRIVE_RELEASE) cs_vc_copy(cs_mbar_slot(e, m.phase), mine);
    if (arrives) cs_mbar_written(e, m.written, m.phase);
    bool under = arrives && (int32_t)m.pending < (int32_t)count;
    if (under) cs_mbar_record(CS_MBARRIER_UNDERFLOW, site, off, e);
    if (arrives) {
        e[CS_MB_LASTPH + w] = m.phase;
        m.pending = (under ? count : m.pending) - count;
        e[CS_MB_PENDING] = m.pending;
        if (cs_mb_drops(op)) e[CS_MB_EXPECTED] = m.expected -= count;
        mine[w] += 1;  // accesses after the release are not covered by it
        cs_clock_sh[w] = mine[w];
    }
    cs_mbar_try_complete(e, m);
    return tx_under || under ? 1u : 0u;
}

// The leader's part of an mbarrier probe, written flat: sibling branches and a switch
// instead of nested else-ifs, and no call out of line (cs_vc_clear is inline), which took
// the probe from ten convergence barriers to eight and 6.7-7.2k cycles to 5.1-6.1k (ring).
// (Eight is still two more than a callee may use without saving, which releases lanes
// waiting for the probe: instrument/converge.py has every lane call it instead.)
#define CS_MB_DEAD 0xFFu  // (a switch label: an mbarrier invalidated since the look)
CS_NOINLINE bool cs_mbar_peer_post(uint32_t a, uint32_t off, uint32_t op, uint32_t arg,
                                   uint32_t lanes, uint32_t site, uint32_t w);  // dsmem.h
// An init leaves its entry locked, in `init` (its index in j), for the probe's lanes to
// empty its clock slots (cs_mbar_init_slots), then its leader unlocks it.
CS_DEV uint32_t cs_mbar_lead(uint64_t addr, uint32_t op, uint32_t arg, uint32_t site,
                             uint32_t slot, uint32_t w, uint32_t lanes, bool cluster,
                             uint32_t*& init, uint32_t& j) {
    bool waits = op == CS_MB_WAIT_PARITY || op == CS_MB_WAIT_TOKEN;
    bool failed_wait = waits && !(arg & 2);
    uint32_t off, skip = 0;
    j = 0;
    // a .shared::cluster address: maybe another CTA's (rank 0's has no rank bits)
    bool local = cluster ? cs_local_cluster((uint32_t)addr, off) : cs_local((uint32_t)addr, off);
    uint32_t* e;
    {
        CS_PROF_AS(pe, op == CS_MB_INIT ? 63u : 64u);
        e = local ? cs_mbar_entry(slot, off, op == CS_MB_INIT, j) : 0;
    }
    if (local && e == 0 && op == CS_MB_INIT) {  // no entry left: it runs, unmodelled
        if (cs_xchg32(&cs_shv.mbar_full, 1u) == 0) cs_mbar_record(CS_TOOL_MBARRIER_TABLE_FULL, site, off, 0);
        return 0;
    }
    if (local && cs_mbar_untracked(e)) return waits && cs_ending() ? 2u : 0u;
    bool dead = local && (e == 0 || (op != CS_MB_INIT && !cs_mbar_live(j)));
    // another CTA's mbarrier: its arrivals and bytes go to that CTA (dsmem.h); in a module
    // built without the mailboxes, said and not modelled
    if (!local && !(cs_multicast_on() && cs_mbar_peer_post((uint32_t)addr, off, op, arg, lanes,
                                                           site, w)))
        cs_mbar_record(CS_TOOL_REMOTE_SMEM, site, off, 0);
    if (dead) {  // not live: a wait on it may spin for ever in the hardware
        cs_mbar_record(CS_MBARRIER_UNINIT, site, off, e);
        skip = 1;
    }
    // A warp spinning on failed waits: after DEADLOCK_MS with the phase (or the dead
    // mbarrier) unchanged, nothing will complete it -- report, and let the warp leave so
    // the kernel ends instead of hanging. No lock: the phase is only looked at, and
    // spinning warps must not hold up the arrivals they wait for.
    if (waits && cs_ending()) return 2;  // another warp's deadlock: the CTA winds down
    if (local && failed_wait &&
        cs_spin_stuck(slot, w, dead ? 0x80000000u | off : cs_ld32(&e[CS_MB_PHASE]) + 1)) {
        cs_mbar_record(CS_DEADLOCK, site, off, dead ? 0 : e);
        skip = 2;
    }
    if (!local || dead || failed_wait) return skip;
    if (waits) {
        // Succeeded: acquire the phase waited for, if its releases are still held (the
        // latest completed phase); a stale parity acquires nothing. No lock: the phase,
        // then its slot, which is written again only abi.MB_SLOTS - 1 completions later
        // (cs_mbar_try_complete fences the slot's joins before the phase).
        cs_cta(slot)[CS_CTA_SPIN_PHASE + w] = 0;
        uint32_t done = cs_ld32_acq(&e[CS_MB_PHASE]);  // phases completed so far (its CTA's writes)
        // (a token wait's: its own warp's last arrive phase; a parity wait needs none. With
        // the acquire load, a successful wait 3.6k -> 3.4k cycles on the H100.)
        uint32_t last = op == CS_MB_WAIT_PARITY ? 0u : e[CS_MB_LASTPH + w];
        uint32_t want = op == CS_MB_WAIT_PARITY ? (arg & 1) : (last & 1);
        bool ok = (arg & 2) && done > 0 && ((done - 1) & 1) == want &&
                  (op == CS_MB_WAIT_PARITY || last == done - 1);
        if (ok) cs_mbar_acquire(slot, w, cs_mbar_slot(e, done - 1));
        return skip;
    }
    {
        CS_PROF(19);
        cs_mbar_lock(j);
    }
    CS_PROF(21);
    bool live = cs_mbar_live(j);  // live in this CTA's generation
    uint32_t* mine = cs_vis(slot, w);
    switch (live || op == CS_MB_INIT ? op : CS_MB_DEAD) {
    case CS_MB_INIT: {
        CS_PROF_AS(pi, 65);
        if (live) cs_mbar_record(CS_MBARRIER_REINIT, site, off, e);
        cs_or32(&cs_mbar_used_sh, 1u << j);  // (its engine's column)
        cs_vc_chunks_add_engine(j);
        e[CS_MB_LIVE] = cs_gen_sh;
        *(volatile uint32_t*)&cs_mlive_sh[j] = cs_gen_sh;
        e[CS_MB_EXPECTED] = e[CS_MB_PENDING] = arg;
        e[CS_MB_TX] = 0;
        e[CS_MB_PHASE] = 0;
        e[CS_MB_WRITTEN] = 0;  // (every slot is emptied below)
        cs_mbar_mark(slot, off, true);
        init = e;  // (its slots are emptied, and the lock given back, by the probe's lanes)
        return skip;
    }
    case CS_MB_DEAD:  // invalidated since the look above
        cs_mbar_record(CS_MBARRIER_UNINIT, site, off, e);
        skip = 1;
        break;
    case CS_MB_INVAL:
        e[CS_MB_LIVE] = 0;
        *(volatile uint32_t*)&cs_mlive_sh[j] = 0;
        cs_mbar_mark(slot, off, false);
        break;
    case CS_MB_CP_ARRIVE: {
        // The cp.async unit of warp w arrives once the warp's copies so far have landed:
        // its clock up to the open group is released into this phase, and the open group
        // is closed so later copies are not covered. .noinc (arg 1): each thread's arrival
        // counts; without it the count is raised first (net 0).
        uint32_t* cur = cs_mbar_slot(e, e[CS_MB_PHASE]);  // the open phase's slot
        uint32_t clk = cs_cpticks_sh[w] + 1;
        if (cur[CS_AGENT_CPASYNC + w] < clk) cur[CS_AGENT_CPASYNC + w] = clk;
        cs_mbar_written(e, e[CS_MB_WRITTEN], e[CS_MB_PHASE]);
        *(volatile uint32_t*)&cs_cpticks_sh[w] = clk;
        uint32_t count = arg * lanes;
        bool under = (int32_t)e[CS_MB_PENDING] < (int32_t)count;
        if (under) cs_mbar_record(CS_MBARRIER_UNDERFLOW, site, off, e);
        skip = under ? 1u : skip;
        e[CS_MB_PENDING] = (under ? count : e[CS_MB_PENDING]) - count;
        cs_mbar_try_complete(e);
        break;
    }
    default:
        skip = cs_mbar_count(e, op, arg, lanes, site, off, w, mine);
        break;
    }
    cs_mbar_unlock(j);
    return skip;
}
