// consan device checker: the entry file.
//
// Compiled by NVRTC (-rdc) as one translation unit with the headers beside it, and
// linked by nvJitLink with the instrumented PTX, whose probes call the extern "C"
// functions below. The same source builds for the host with -DCONSAN_HOST (one lane
// per warp), so CI can drive the decision logic with event traces and no GPU.
//
// Model (docs/model.md): logical threads are the CTA's warps; each keeps a
// vector clock in the *visibility* table; a barrier generation joins the
// arrivers' clocks into a *barrier* slot and each waiter joins it back. The
// *buffer* table keeps, per 4-byte granule, the last write epoch and, per
// warp, the clock of its last read since that write.
//
// This file is the only one that chooses between the table representations a build
// has (the -DCONSAN_PSH / -DCONSAN_PHASE_DEV / -DCONSAN_VSH builds and the default one,
// the host build's launch flags); the headers hold
// one concern each, in the order they depend on one another.
//
// consan_abi.h is generated from instrument/abi.py by the build (never edited).

#include "shadow_layout.h"  // the tables and their words (no code)
#include "platform.h"
#include "cta_state.h"

// ------------------------------------------------------------- the mode

// Which shared-memory tables a build keeps (FLAG_PHASE_SMEM or FLAG_VC_SMEM): the host
// build follows the launch's flags, a device build is compiled for one kind (or none).
CS_DEV bool cs_table_mode(uint32_t flag) {
#if defined(CONSAN_HOST)
    return S.flags & flag;
#elif defined(CONSAN_PSH)
    return flag == CS_FLAG_PHASE_SMEM;
#elif defined(CONSAN_VSH)
    return flag == CS_FLAG_VC_SMEM;
#else
    return (void)flag, false;
#endif
}
CS_DEV bool cs_phase_smem_on() { return cs_table_mode(CS_FLAG_PHASE_SMEM); }
// Phase mode (the module has only CTA-wide barriers) or vector clocks: the host build
// follows the launch's flag; each device build is compiled for one of them (-DCONSAN_PSH
// and -DCONSAN_PHASE_DEV: phases; -DCONSAN_VSH and the default build: vector clocks), and
// toolchain.link_with_checker picks the build from the module.
CS_DEV bool cs_phase_mode() {
#if defined(CONSAN_HOST)
    return S.flags & CS_FLAG_PHASE_MODE;
#elif defined(CONSAN_PSH) || defined(CONSAN_PHASE_DEV)
    return true;
#else
    return false;
#endif
}
CS_DEV bool cs_vc_smem_on() { return cs_table_mode(CS_FLAG_VC_SMEM); }

#include "measure.h"
#include "tables.h"
#include "log.h"
#include "clocks.h"
#include "barriers.h"
#include "cta.h"
#include "box_summary.h"
#include "phase_tables.h"
#include "granule_tables.h"
#include "phase_tables_smem.h"
#include "granule_tables_smem.h"
#include "granule_tables_smem_copy.h"
#include "access16.h"
#include "mbarrier.h"
#include "multicast.h"
#include "dsmem.h"
#include "bulk.h"
#include "wgmma.h"
#include "tensor.h"

// ------------------------------------------------------------- probe entry points


CS_DEV void cs_access_any(uint64_t addr, uint32_t site, uint32_t info) {
    if (cs_vc_smem_on()) return cs_vc_smem_access(addr, site, info, 1u);
    if (cs_phase_smem_on()) return cs_phase_smem_access(addr, site, info);
#if !defined(CONSAN_PSH) && !defined(CONSAN_VSH)
    cs_access(addr, site, info);
#endif
}

// Granules [g0, g1] of the window last written by the instruction at `site`.
CS_DEV bool cs_written_by_site(uint32_t g0, uint32_t g1, uint32_t site) {
    if (cs_phase_smem_on()) return cs_phase_smem_written_by(g0, g1, site);
#ifndef CONSAN_PSH
    if (cs_vc_smem_on()) return cs_vc_smem_written_by(cs_slot_sh, g0, g1, site);
#endif
#if !defined(CONSAN_PSH) && !defined(CONSAN_VSH)
    return cs_written_by(cs_slot_sh, g0, g1, site);
#endif
    return false;
}

// An idempotent store (abi.INFO_IDEM: an immediate to a constant shared address) writes
// the same bytes in the same place each time it runs: a run that finds the bytes' last
// write was its own instruction changes nothing and is not checked (docs/model.md). Every
// lane has the one address, so one lane per warp runs it, under the CTA's lock: of two
// warps storing together, the second then sees the first's epoch and its site together
// (Triton's warp-specialised prologue: every warp of the default partition stores the
// partitions' state word). The warp's lanes leave together: the kernel's next
// instruction may be warp-synchronous (Triton follows the store with a named barrier and
// setmaxnreg.sync.aligned; with the other lanes returning at once, such kernels hung).
// Measured on the H100: 38 of Triton's ConSan cases ported to Gluon went from race.waw on
// that word to their own verdict, none hung; bench_clean's transpose and histogram (which
// zero shared memory with immediates) ran 6% and 8% slower.
CS_DEV void cs_idem_lead(uint64_t addr, uint32_t site, uint32_t info) {
    if (!cs_phase_smem_on() && cs_slot_sh == CS_NO_SLOT) return;
    uint32_t size = info & CS_INFO_SIZE_MASK, off = 0;
    bool here = cs_where(addr, (info >> CS_INFO_SPACE_SHIFT) & 3u, off) == CS_AT_HERE &&
                (off + size - 1) / CS_GRANULE_BYTES < S.granules;
    if (!here) return cs_access_any(addr, site, info);  // (its usual verdict)
    cs_lock(&cs_shv.idem_lock);
    if (!cs_written_by_site(off / CS_GRANULE_BYTES, (off + size - 1) / CS_GRANULE_BYTES, site))
        cs_access_any(addr, site, info);
    cs_unlock(&cs_shv.idem_lock);
}

CS_DEV void cs_idem_store(uint64_t addr, uint32_t site, uint32_t info) {
    uint32_t all = cs_activemask();
    if (cs_lane() == (uint32_t)(cs_ffs(all) - 1)) cs_idem_lead(addr, site, info);
    cs_syncwarp(all);
}

// A store's value tag (abi.PROBE_STORE_VALUE), called just before the store's access
// probe: `tag` hashes the lane's address and the values it stores. The lanes' tags summed,
// with the site, are the warp's record of this run of the store (cs_same_store), published
// before its write epochs are. Replicated layouts (Triton's) make warps store the same
// values at the same addresses; measured on the H100, such runs were reported as race.waw.
CS_DEV uint32_t cs_mix(uint32_t h) {  // (murmur3's finaliser: lanes' tags are summed)
    h ^= h >> 16; h *= CS_VALUE_TAG_MIX1; h ^= h >> 13; h *= CS_VALUE_TAG_MIX2; h ^= h >> 16;
    return h;
}

CS_REJOINED_VOID(__consan_store_value, (uint32_t tag, uint32_t site),
                 (tag, site)) {
    CS_NULL_ACCESS(return;)
    if (!cs_phase_smem_on() && cs_slot_sh == CS_NO_SLOT) return;
    uint32_t peers = cs_match(cs_activemask(), site);
    uint32_t sum = cs_mix(cs_sum(peers, cs_mix(tag)) ^ cs_mix(site + CS_VALUE_TAG_SALT));
    if (cs_lane() == (uint32_t)(cs_ffs(peers) - 1)) {
        uint32_t w = cs_warp();
        *(volatile uint32_t*)&cs_shv.store_site[w] = site;
        *(volatile uint32_t*)&cs_shv.store_tag[w] = sum | 1u;
    }
    cs_syncwarp(peers);
    cs_fence();
}

// A warp's write of another site than its record's (an untagged store, an atomic, an
// idempotent store) ends the record, before the write's epoch is published: a replica of
// the recorded store is then not forgiven against this write (docs/model.md, *Replicated
// stores*). A tagged store's record names its own site: __consan_store_value, or its
// inline form, ran just before its probe. (Modules without value tags keep no record: the
// look is one shared load.)
CS_DEV void cs_store_record_end(uint32_t site, uint32_t info) {
    uint32_t mode = cs_info_mode(info);
    if (mode != CS_MODE_WRITE && mode != CS_MODE_ATOMIC) return;
    if (!cs_phase_smem_on() && cs_slot_sh == CS_NO_SLOT) return;  // (as __consan_store_value)
    uint32_t w = cs_warp();
    volatile uint32_t* g = cs_shv.store_tag;
    if (g[w] != 0 && *(volatile uint32_t*)&cs_shv.store_site[w] != site) {
        g[w] = 0;
        cs_fence();
    }
}

CS_REJOINED_VOID(__consan_access, (uint64_t addr, uint32_t site, uint32_t info),
                 (addr, site, info)) {
    CS_STAMP_SCOPE(4);
    CS_PROF(0);
    CS_NULL_ACCESS(return;)
    CS_SPIN(CONSAN_SPIN_ACCESS, true)
    const cs_echo_t echo = cs_echo_begin(info);
    cs_store_record_end(site, info);
    cs_mc_poll_access(addr, info, 1, 0);
    if (info & CS_INFO_IDEM) cs_idem_store(addr, site, info & ~CS_INFO_IDEM);
    else cs_access_any(addr, site, info);  // (the INFO_IDEM bit is read nowhere else)
    cs_echo_end(echo);
}

// The look for other warps' reads of this phase after a plain write whose epoch the
// rewritten kernel stored inline (instrument/fast_path.py); phase tables in shared memory.
CS_REJOINED_VOID(__consan_write_readers, (uint64_t addr, uint32_t site, uint32_t info),
                 (addr, site, info)) {
    CS_STAMP_SCOPE(4);
    CS_PROF(0);
    CS_NULL_ACCESS(return;)
    const cs_echo_t echo = cs_echo_begin(info);
    if (cs_phase_smem_on()) cs_phase_smem_write_readers(addr, site, info);
    cs_echo_end(echo);
}

// The verdict on a one-granule read whose bit, site and phase the rewritten kernel stored
// inline (instrument/fast_path.py) and whose granule it found never written or written in
// this phase by another warp; phase tables in shared memory.
CS_REJOINED_VOID(__consan_read_judge, (uint64_t addr, uint32_t site, uint32_t info),
                 (addr, site, info)) {
    CS_STAMP_SCOPE(4);
    CS_PROF(0);
    CS_NULL_ACCESS(return;)
    const cs_echo_t echo = cs_echo_begin(info);
    if (cs_phase_smem_on()) cs_phase_smem_read_judge(addr, site, info);
    cs_echo_end(echo);
}

// The verdict on a read of several granules that the rewritten kernel made inline
// (instrument/fast_path.py, span_read) and found racy or uninitialised in part: bit r of
// `fresh` is granule base + r, one whose bit was new; phase tables in shared memory.
CS_REJOINED_VOID(__consan_read_span_judge,
                 (uint64_t addr, uint32_t site, uint32_t info, uint32_t base, uint64_t fresh),
                 (addr, site, info, base, fresh)) {
    CS_STAMP_SCOPE(4);
    CS_PROF(0);
    CS_NULL_ACCESS(return;)
    const cs_echo_t echo = cs_echo_begin(info);
    if (cs_phase_smem_on()) cs_phase_smem_read_span_judge(addr, site, info, base, fresh);
    cs_echo_end(echo);
}

// `count` accesses of one size at addr, addr + stride, ... (coalesced by the rewriter).
CS_DEV void cs_access_n(uint64_t addr, uint32_t site, uint32_t info, uint32_t rep);
CS_REJOINED_VOID(__consan_access_n, (uint64_t addr, uint32_t site, uint32_t info, uint32_t rep),
                 (addr, site, info, rep)) {
    CS_STAMP_SCOPE(4);
    CS_PROF(0);
    CS_NULL_ACCESS(return;)
    CS_SPIN(CONSAN_SPIN_ACCESS, true)
    const cs_echo_t echo = cs_echo_begin(info);
    cs_access_n(addr, site, info, rep);
    cs_echo_end(echo);
}
CS_DEV void cs_access_n(uint64_t addr, uint32_t site, uint32_t info, uint32_t rep) {
    cs_store_record_end(site, info);
    cs_mc_poll_access(addr, info, rep & CS_REP_COUNT_MASK, rep >> CS_REP_STRIDE_SHIFT);
    if (cs_vc_smem_on()) return cs_vc_smem_access(addr, site, info, rep);
    uint32_t n = rep & CS_REP_COUNT_MASK, stride = rep >> CS_REP_STRIDE_SHIFT;
    if (cs_phase_smem_on() && cs_info_mode(info) == CS_MODE_READ &&
        cs_phase_smem_read_warp(addr, site, info, n, stride))
        return;
    for (uint32_t k = 0; k < n; ++k) {
        uint64_t a = addr + (uint64_t)k * stride;
        if (cs_phase_smem_on()) cs_phase_smem_access(a, site, info);
#if !defined(CONSAN_PSH) && !defined(CONSAN_VSH)
        else cs_access(a, site, info);
#endif
    }
}

// Accesses of 16 bytes that are not atomic (abi.access_probe), `rep` as above: the
// granule tables in shared memory take cs_vc_smem_access16 when every lane's chunks are
// aligned ones in the window, the general probe otherwise.
CS_REJOINED_VOID(__consan_access16, (uint64_t addr, uint32_t site, uint32_t info, uint32_t rep),
                 (addr, site, info, rep)) {
    if (!cs_vc_smem_on()) return __consan_access_n(addr, site, info, rep);
    CS_STAMP_SCOPE(4);  // (after the hand-off: a probe's cycles counted once)
    CS_PROF(0);
    CS_PROF_AS(by_mode, cs_info_mode(info) == CS_MODE_READ ? 43u : 44u);
    CS_NULL_ACCESS(return;)
    CS_NULL_READ16(if (cs_info_mode(info) == CS_MODE_READ) return;)
    CS_SPIN(CONSAN_SPIN_ACCESS, true)
    const cs_echo_t echo = cs_echo_begin(info);
    cs_store_record_end(site, info);
    cs_mc_poll_access(addr, info, rep & CS_REP_COUNT_MASK, rep >> CS_REP_STRIDE_SHIFT);
    if (!cs_vc_smem_access16(addr, site, info, rep)) cs_vc_smem_access_any(addr, site, info, rep);
    cs_echo_end(echo);
}

// A cp.async of 16 bytes, one chunk (abi.PROBE_CP16): where every lane of the call has an
// aligned chunk in the granule tables in shared memory, of a block no copy holds, the
// copy unit's write is cs_access16_write of that chunk, in a body of its own; anywhere else
// the whole call takes the 16-byte probe. (The 16-byte probe's decoding of any access, and
// its read path, were in the write's path: on the H100 a cp.async GEMM's write took 1,889
// cycles a call there, 1,187 here.)
CS_DEV void cs_cp16(uint64_t addr, uint32_t site, uint32_t info) {
    if (!cs_vc_smem_on()) return __consan_access16(addr, site, info, 1);
    const uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return;
    cs_mc_poll();  // (a peer's copy may hold the block: applied before the look below)
    const uint32_t w = cs_warp(), m = cs_activemask();
    const uint32_t clk = *(volatile uint32_t*)&cs_cpticks_sh[w] + 1;  // (__consan_async)
    const cs_vc_smem_layout_t& l = cs_vc_smem_layout_sh;
    uint32_t off = 0;
    const bool mine = cs_local((uint32_t)addr, off) && (off & 15u) == 0 && off >= S.vsh_base &&
                      off + 16u <= S.granules * CS_GRANULE_BYTES;
    const uint32_t g = (off - S.vsh_base) / CS_GRANULE_BYTES;
    const bool lean = mine && clk <= CS_VW_CLOCK_MASK && l.nr <= 4u * CS_A16_READER_VECS &&
                      cs_s_ld(l.BT + 4u * (g / CS_VC_BLOCK)) == 0;
    if (!cs_all(m, lean)) return __consan_access16(addr, site, info, 1);
    CS_STAMP_SCOPE(4);  // (after the hand-offs: a probe's cycles counted once)
    CS_PROF(0);
    CS_PROF_AS(by_mode, 44u);
    CS_NULL_ACCESS(return;)
    CS_SPIN(CONSAN_SPIN_ACCESS, true)
    const cs_echo_t echo = cs_echo_begin(info);
    cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
    uint32_t fk = 0;
    cs_access16_write(m, cs_vc_smem_ctx(slot, w), g, 1, 1, site, CS_AGENT_CPASYNC + w, clk, f, fk);
    if (cs_any(m, f.kind != 0)) cs_access16_report(m, f, site, info, off);
    cs_echo_end(echo);
}
CS_REJOINED_VOID(__consan_cp16, (uint64_t addr, uint32_t site, uint32_t info),
                 (addr, site, info)) {
    cs_cp16(addr, site, info);
}

// The first n of a run of cp.async copies of 16 bytes (abi.PROBE_CP16_RUN), each as its own
// call would take it, in program order: one call for the run. Measured on the H100
// (bench_async's cp.async GEMM, device time alone, three rounds): 0.336 -> 0.331 ms with
// its K step's four calls a warp made two. Judging a run's writes together (one fence for
// the run, the copies' epochs exchanged first) was slower there: 0.339 -> 0.367 ms.
CS_REJOINED_VOID(__consan_cp16_run,
                 (uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint32_t s0, uint32_t s1,
                  uint32_t s2, uint32_t s3, uint32_t n, uint32_t info),
                 (a0, a1, a2, a3, s0, s1, s2, s3, n, info)) {
    static_assert(CS_CP16_RUN_MAX == 4, "abi.CP16_RUN_MAX: the copies of one call");
    cs_cp16(a0, s0, info);
    if (n > 1) cs_cp16(a1, s1, info);
    if (n > 2) cs_cp16(a2, s2, info);
    if (n > 3) cs_cp16(a3, s3, info);
}

CS_REJOINED_LEAVING(uint32_t, __consan_bar_arrive,
            (uint32_t b, uint32_t count, uint32_t site, uint32_t mode),
            (b, count, site, mode)) {
    CS_STAMP_SCOPE(0);
    CS_PROF(1);
    CS_STAMP(if (cs_lane() == 0 && cs_warp() < 4) cs_stamp(8 + cs_warp(), cs_stamp_clock());)
    CS_SPIN(CONSAN_SPIN_BAR, true)
    if (cs_phase_smem_on()) return cs_phase_smem_bar_arrive();
#ifndef CONSAN_PSH
    if (cs_slot_sh == CS_NO_SLOT) return 0;
    uint32_t token = cs_bar_arrive(b, count, site, mode);
    cs_leaving = cs_ending();  // (after the arrival: see cs_leave_cta)
    return token;
#endif
}

CS_REJOINED_VOID_LEAVING(__consan_bar_wait, (uint32_t gen, uint32_t b, uint32_t site),
                 (gen, b, site)) {
    CS_STAMP_SCOPE(0);
    CS_PROF(2);
    if (cs_phase_smem_on()) return cs_phase_smem_bar_wait(gen);
#ifndef CONSAN_PSH
    if (cs_slot_sh == CS_NO_SLOT) return;
    if ((cs_leaving = cs_ending())) return;
    cs_bar_wait(gen, b, site);
    CS_STAMP(if (cs_tid() == 0) cs_stamp(3, cs_stamp_clock());)
#endif
}

// After a CTA-wide barrier of a phase-mode module whose barriers are not written inline:
// the barrier's one probe in place of an arrive before it and a wait after it (the rewriter
// gives every barrier of such a module this form, or none: the two forms empty different
// bitmaps). The warp's phase advances and it empties its bitmap of the phase the barrier
// ended (docs/model.md, *Two representations*). The vector-clock builds never see it: a
// release after the barrier would come too late for the other warps' waits.
CS_REJOINED_VOID(__consan_bar_step, (uint32_t site),
                 (site)) {
    CS_STAMP_SCOPE(0);
    CS_PROF(2);
    (void)site;
    if (cs_phase_smem_on()) return cs_phase_smem_bar_step();
#ifndef CONSAN_PSH
    if (cs_slot_sh == CS_NO_SLOT || !cs_phase_mode()) return;
    uint32_t active = cs_activemask(), lane = cs_lane(), w = cs_warp();
    if (lane == (uint32_t)(cs_ffs(active) - 1)) cs_phase_sh[w] += 1;
    cs_syncwarp(active);  // (the new phase, before every lane picks the bitmap by it)
    cs_phase_clear_next(cs_slot_sh, w, active, lane);
    cs_syncwarp(active);
#endif
}

// barrier.cluster.arrive (before it) and barrier.cluster.wait (after it). Every thread of
// the cluster takes part in each generation, so within the CTA it is a barrier of every
// live warp: the CTA's cluster-barrier word (CS_CLUSTER_BARRIER) counts it, an arrival
// releases the warp's clock into the generation's slot (`.relaxed`: nothing) and the
// wait, the warp's next generation in turn, acquires the slot. Split: other work may lie
// between a warp's arrive and its wait. A fence of cluster scope (after it) keeps the
// warp's clock for its next relaxed arrival (cs_cluster_fence).
CS_REJOINED_VOID_LEAVING(__consan_cluster_bar, (uint32_t op, uint32_t site),
                 (op, site)) {
    CS_PROF(1);
#ifndef CONSAN_PSH
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT || cs_phase_smem_on()) return;
    if ((op & 3u) == CS_CLUSTER_FENCE) return cs_cluster_fence(slot, site);
    cs_mc_poll();  // (a peer's posts are applied before this CTA's next cluster arrival)
    if ((op & 3u) == CS_CLUSTER_ARRIVE) {
        if (cs_multicast_on()) {
            uint32_t active = cs_group(site, 1);
            if (cs_lane() == (uint32_t)(cs_ffs(active) - 1))
                cs_cluster_arrival(slot, cs_warp(), op & CS_BAR_RELAXED);
            cs_syncwarp(active);
        }
        cs_bar_arrive(CS_CLUSTER_BARRIER, 0, site, op & (CS_BAR_ALIGNED | CS_BAR_RELAXED));
        cs_leaving = cs_ending();
        return;
    }
    if ((cs_leaving = cs_ending())) return;
    uint32_t active = cs_group(site, 0), w = cs_warp(), gen = 0;
    uint32_t* waits = &cs_cta(slot)[CS_CTA_CLUSTER_WAITS + w];
    if (cs_lane() == (uint32_t)(cs_ffs(active) - 1)) gen = (*waits)++;
    cs_bar_wait(cs_bcast(active, gen, cs_ffs(active) - 1), CS_CLUSTER_BARRIER, site);
#else
    (void)op, (void)site;
#endif
}

CS_REJOINED_VOID(__consan_thread_exit, (uint32_t site),
                 (site)) {
    CS_PROF(3);
    if (cs_phase_smem_on()) return;  // phase mode keeps no count of live warps
#ifndef CONSAN_PSH
    CS_STAMP(cs_stamp(4, cs_stamp_clock());)
    cs_mc_poll();  // (a peer's posts are applied before the CTA ends)
    cs_thread_exit(site);
    CS_STAMP(cs_stamp(5, cs_stamp_clock(), true), cs_stamp(6, cs_stamp_global(), true);)
#endif
}

// cp.async groups: the copy unit of warp w is logical thread AGENT_CPASYNC + w. A copy
// gets the unit's clock ticks + 1; commit_group ends the open
// group at that clock (kept for the last CPASYNC_GROUP_ENDS groups) and advances it;
// wait_group n joins the clock at the end of the newest group it completes (all but the
// last n). cp.async.mbarrier.arrive advances the clock too but ends no group, so the
// group arithmetic of wait_group is not shifted by it.
CS_REJOINED_VOID(__consan_async, (uint32_t op, uint32_t n, uint32_t site),
                 (op, n, site)) {
    CS_PROF(4);
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return;
    // Lanes with PROBE_OFF skip the operation (a converted branch, instrument/converge.py):
    // the copy unit and its groups are the warp's, so with one lane on the call is that
    // lane's; with none it is no call (as __consan_bulk_group).
    const bool off = op & CS_PROBE_OFF;
    op &= ~CS_PROBE_OFF;
    if (!cs_any(cs_activemask(), !off)) return;
    uint32_t active = cs_group(((uint64_t)site << 32) | n, op);
    uint32_t w = cs_warp();
    if (cs_lane() == (uint32_t)(cs_ffs(active) - 1)) {
        uint32_t* cta = cs_cta(slot);
        uint32_t* ends = &cta[CS_CTA_CPASYNC_ENDS + w * CS_CPASYNC_GROUP_ENDS];
        uint32_t commits = cta[CS_CTA_CPASYNC_COMMITS + w];
        if (op != CS_ASYNC_WAIT) {  // commit_group; wait_all commits first
            uint32_t t = cs_cpticks_sh[w] + 1;
            *(volatile uint32_t*)&cs_cpticks_sh[w] = t;
            ends[commits % CS_CPASYNC_GROUP_ENDS] = t;
            cta[CS_CTA_CPASYNC_COMMITS + w] = ++commits;
        }
        if (op != CS_ASYNC_COMMIT) {
            uint32_t keep = op == CS_ASYNC_WAIT ? n : 0;
            uint32_t done = commits > keep ? commits - keep : 0;
            // a wait that retires a group older than those kept acquires nothing (safe side)
            if (done && keep < CS_CPASYNC_GROUP_ENDS) {
                uint32_t clk = ends[(done - 1) % CS_CPASYNC_GROUP_ENDS];
                uint32_t* mine = cs_vis(slot, w);
                if (clk > mine[CS_AGENT_CPASYNC + w]) mine[CS_AGENT_CPASYNC + w] = clk;
            }
        }
        cs_fence();
    }
    cs_syncwarp(active);
}


#ifndef CONSAN_HOST
// (called by a run of inits too, __consan_mbar_init_run: one copy of its code, not one
// inlined in each of the run's calls)
CS_ENTRY __noinline__ uint32_t __consan_mbar(uint64_t addr, uint32_t op, uint32_t arg, uint32_t site);
#endif
// Returns 1 when the operation would fault on the hardware (an mbarrier that is not
// live, an arrival below zero): the rewritten kernel then skips it, so the report is
// read back and the CUDA context stays usable.
// Lanes with CS_PROBE_OFF in `op` skip the operation (a branch or a one-lane loop the
// rewriter converted, instrument/converge.py, loops.py): they only wait here for the
// lanes that run it.
CS_REJOINED_LEAVING(uint32_t, __consan_mbar, (uint64_t addr, uint32_t op, uint32_t arg, uint32_t site),
            (addr, op, arg, site)) {
    CS_STAMP_SCOPE(2);
    bool off = op & CS_PROBE_OFF, cluster = op & CS_MB_CLUSTER;
    op &= ~(CS_PROBE_OFF | CS_MB_CLUSTER);
    bool waits = op == CS_MB_WAIT_PARITY || op == CS_MB_WAIT_TOKEN;
    CS_NULL_MBAR(if (op != CS_MB_INIT && op != CS_MB_INVAL) return 0;)
    CS_PROF(off ? 16u : waits ? ((arg & 2) ? 20u : 12u) : op == CS_MB_INIT ? 62u : 5u);
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return 0;
    // An operation on a peer's mbarrier reads nothing of this CTA's that its peers' posts
    // change (it posts to that peer and numbers this warp's release): where every lane
    // makes one, the posts are left to this CTA's next probe (the clustered ring 0.992 by
    // the device's time alone, H100). No vote in a build without the mailboxes.
    uint32_t here;
    bool peer_op = cluster && !off && !waits && !cs_local_cluster((uint32_t)addr, here);
    // A warp's first failed wait in a row acquires nothing either: it judges the barrier
    // and leaves the posts to the probes after it, its sampled failures and its success
    // (the clustered ring 1.766 -> 1.744 ms by the device's time alone, H200).
    bool first_fail = waits && !(arg & 2) && (arg & CS_MB_WAIT_FIRST);
    if (waits) arg &= ~CS_MB_WAIT_FIRST;
    if (cs_multicast_on() && !cs_all(cs_activemask(), peer_op || first_fail)) cs_mc_poll();
    uint32_t all = cs_activemask();
    uint32_t active = off ? cs_group(~0ull, ~0ull) : cs_group(((uint64_t)site << 32) | arg, addr);
    uint32_t w = cs_warp();
    uint32_t lanes = cs_popc(active);
    uint32_t leader = cs_ffs(active) - 1;
    uint32_t* init = 0;
    uint32_t j = 0;
    bool lead = cs_lane() == leader && !off;
    CS_SPIN(CONSAN_SPIN_MBAR, lead && !waits)
    CS_SPIN(CONSAN_SPIN_WAIT, lead && waits && (arg & 2))
    CS_SPIN(CONSAN_SPIN_INIT, lead && op == CS_MB_INIT)
    CS_STAMP(unsigned long long t0 = cs_stamp_clock();)
    uint32_t skip = lead ? cs_mbar_lead(addr, op, arg, site, slot, w, lanes, cluster, init, j) : 0;
    // Lanes marked off (one group) take the verdict of the first lane on: a deadlock's
    // lanes all leave (a loop every lane runs, instrument/loops.py, must not go on
    // without it). From the masks, not a ballot: a warp-synchronous instruction after the
    // leader's call hung warps the probes had split (measured on the H100: with a ballot,
    // a loop of two lanes arriving and waiting deadlocked under consan).
    uint32_t on = all & ~active;
    uint32_t first = off && on ? cs_ffs(on) - 1 : leader;
    if (op == CS_MB_INIT) {  // (lanes off help the first lane on)
        CS_PROF_AS(ps, 66);
        cs_mbar_init_slots(all, (uint32_t*)cs_bcast64(all, (uint64_t)init, (int)first), lead, j);
    }
    CS_PROF_AS(pv, op == CS_MB_INIT ? 67u : 68u);
    CS_STAMP(if (op == CS_MB_INIT && cs_tid() == 0 && cs_stamp_at(7))
                 atomicAdd(cs_stamp_at(7), cs_stamp_clock() - t0);)
    return cs_guard_verdict(all, skip, first, cs_leaving);
}


// A run of mbarrier.init one after another in straight-line code (abi.PROBE_MBAR_INIT_RUN,
// instrument/init_runs.py): the first n of (a, c, s), each init as PROBE_MBAR would make it,
// in program order, in one call before the first of them. An init never faults: no
// verdict. Where one lane runs them (a CTA's set-up under `if (threadIdx.x == 0)`,
// converted: the warp's other lanes marked off) and the run's mbarriers are distinct, the
// call's lanes make them in one PROBE_MBAR call, the k-th lane the k-th init, as the lanes
// of one init instruction with an address each would (their entries' looks, device-memory
// round trips, at once). Elsewhere (several lanes on, an mbarrier initialised twice in the
// run, the host build's one lane) one PROBE_MBAR call an init, as separate calls would. On
// the H200 (ab_async.py, the device's time alone, three rounds) the TMA ring's nine inits in
// one call: 0.134 -> 0.127 ms; its profile build's inits 76k -> 23k cycles a CTA.
#define CS_X16(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
#define CS_IR_A(k) uint64_t a##k,
#define CS_IR_C(k) uint32_t c##k,
#define CS_IR_S(k) uint32_t s##k,
#define CS_IR_NAME_A(k) a##k,
#define CS_IR_NAME_C(k) c##k,
#define CS_IR_NAME_S(k) s##k,
CS_REJOINED_VOID(__consan_mbar_init_run,
                 (CS_X16(CS_IR_A) CS_X16(CS_IR_C) CS_X16(CS_IR_S) uint32_t n, uint32_t op),
                 (CS_X16(CS_IR_NAME_A) CS_X16(CS_IR_NAME_C) CS_X16(CS_IR_NAME_S) n, op)) {
    static_assert(CS_MBAR_INIT_RUN_MAX == 16, "abi.MBAR_INIT_RUN_MAX: the inits of one call");
    // (lanes of another call site or loop trip may share the call: its first site and n)
    uint32_t all = cs_match(cs_activemask(), ((uint64_t)s0 << 32) | n);
    uint32_t on = cs_ballot(all, !(op & CS_PROBE_OFF));
    if (on == 0) return;  // (no lane runs the inits: their calls would change nothing)
    CS_PROF(69);
    const uint64_t A[16] = {CS_X16(CS_IR_NAME_A)};
    const uint32_t C[16] = {CS_X16(CS_IR_NAME_C)}, Si[16] = {CS_X16(CS_IR_NAME_S)};
    if (cs_popc(on) == 1 && all == ~0u && n <= 32) {
        // the k-th lane of the call takes the k-th init, as the lane on passed it
        uint32_t first = cs_ffs(on) - 1, r = cs_popc(all & ((1u << cs_lane()) - 1u));
        uint64_t a = 0;
        uint32_t c = 0, s = 0;
#pragma unroll
        for (uint32_t k = 0; k < 16; ++k) {
            if (k >= n) break;
            uint64_t ak = cs_bcast64(all, A[k], (int)first);
            uint32_t ck = cs_bcast(all, C[k], (int)first);
            if (r == k) a = ak, c = ck, s = Si[k];
        }
        // One after another where an mbarrier is twice in the run (the second init must
        // find the first's entry live), or one is live already (its mbarrier.reinit then
        // names the lane on, not the call's) or not this CTA's.
        // (the CTA's live entries' keys, lane j entry j: none at a set-up. Against the 32
        // entries looked up one after another, on the H200 (ab_async.py, the device's time
        // alone, three rounds): the TMA ring 0.132 -> 0.128 ms, the run's PTX 1,358 -> 814
        // lines.)
        static_assert(CS_MBARRIERS == 32, "abi.MBARRIERS: an entry a lane");
        uint32_t off = 0, lane = cs_lane();
        uint32_t key = cs_mbar_live(lane) ? *(volatile uint32_t*)&cs_mkey_sh[lane] : 0u;
        bool here = cs_slot_sh != CS_NO_SLOT && cs_local((uint32_t)a, off), live = false;
        for (uint32_t m = cs_ballot(all, key != 0); m != 0; m &= m - 1) {
            uint32_t k = cs_bcast(all, key, cs_ffs(m) - 1);  // (every lane, every trip)
            live = live || k == off + 1;
        }
        bool fresh = r >= n || (here && !live);
        uint32_t same = cs_match(all, r < n ? (uint64_t)off : (1ull << 63) | r);
        // One warp of the CTA at a time: its leaders each hold their entry's lock through
        // the call's warp-wide emptying of the slots, so a second warp doing the same with
        // the same mbarriers (each warp's lane 0 setting the pipeline up) could hold what
        // the first's lanes wait for, and wait for what it holds: a hang. A warp that finds
        // the token taken makes its inits one a call, one lock held at a time.
        bool apart = cs_all(all, fresh && (r >= n || cs_popc(same) == 1));
        uint32_t got = apart && cs_lane() == first ? cs_cas32(&cs_shv.init_run, 0u, 1u) == 0u : 0u;
        if (cs_bcast(all, got, (int)first)) {
            __consan_mbar(a, r < n ? CS_MB_INIT : CS_MB_INIT | CS_PROBE_OFF, c, s);
            if (cs_lane() == first) cs_xchg32(&cs_shv.init_run, 0u);
            return;
        }
    }
    for (uint32_t k = 0; k < n; ++k) __consan_mbar(A[k], op, C[k], Si[k]);
}


// cp.async.bulk global -> shared with mbarrier::complete_tx: the copy engine bound to
// mbarrier j (logical thread AGENT_MBAR + j) writes the destination; its clock is the
// phase the copy completes + 1, published in that phase's slot, so only a wait on the
// phase makes the bytes visible.
//
// .multicast::cluster (mask: its ctaMask): the issuing CTA's own part, when it is in the
// mask, is such a copy; every other CTA of the mask gets a post (multicast.h).
CS_REJOINED_LEAVING(uint32_t, __consan_bulk,
            (uint64_t dst, uint32_t bytes, uint64_t mbar, uint32_t site, uint32_t mask),
            (dst, bytes, mbar, site, mask)) {
    CS_PROF(6);
    CS_STAMP_SCOPE(5);
    CS_NULL_BULK(return 0;)
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return 0;
    // Lanes with BULK_OFF skip the copy (a converted branch, instrument/converge.py): a
    // group of their own, whose leader does nothing.
    bool off = mask & CS_BULK_OFF;
    mask &= ~CS_BULK_OFF;
    uint32_t all = cs_activemask();
    // A warp whose every lane copies into a peer (st.async) reads nothing here that a
    // peer's post changes: it posts first and applies its own posts after, so a warp's
    // copies reach the peer without waiting behind this CTA's mailbox.
    uint32_t unused;
    bool peer_only = cs_multicast_on() &&
                     cs_all(all, !off && !mask && bytes != 0 &&
                                     !cs_local_cluster((uint32_t)dst, unused) &&
                                     ((uint32_t)dst >> CS_RANK_SHIFT) == ((uint32_t)mbar >> CS_RANK_SHIFT));
    if (!peer_only) cs_mc_poll();
    uint32_t active = cs_group(((uint64_t)site << 32) | bytes, dst ^ (mbar << 32) ^ off);
    uint32_t leader = cs_ffs(active) - 1;
    uint32_t skip = 0, moff = 0, doff = 0;
    bool to_peer = false;  // (posted below, by the warp together)
    // A leader's copy into this CTA: written below by every lane of the call together
    // (cs_copy_write), not by the leader alone: its write's calls out of line clear
    // convergence barriers, which released the lanes waiting for a leader that made them
    // (a multicast under `if (t == 0)`, its other lanes marked off: docs/model.md).
    uint32_t* e = 0;
    uint32_t j = 0, ph = 0, g0 = 1, g1 = 0;
    cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
    bool landing = false;
    if (cs_lane() == leader && !off) {
        bool local = cs_local((uint32_t)mbar, moff);
        local = cs_local((uint32_t)dst, doff) && local;
        // (a .shared::cluster destination of rank 0 has no rank bits: cs_local takes it
        // for this CTA's)
        if (!mask && cs_multicast_on()) local = cs_local_cluster((uint32_t)dst, doff) && local;
        if (mask) local = (mask >> cs_ctarank()) & 1u;  // (offsets: the same in every CTA)
        e = local ? cs_mbar_entry(slot, moff, false, j) : 0;
        if (mask && cs_multicast_on()) cs_mc_post_all(mask, doff, bytes, moff, site);
        uint32_t peer = (uint32_t)dst >> CS_RANK_SHIFT;
        if (!local && !mask && cs_multicast_on() && peer == (uint32_t)mbar >> CS_RANK_SHIFT) {
            // st.async / red.async / a bulk copy into another CTA, completing on its
            // mbarrier there: that CTA applies it like a multicast copy's part (multicast.h)
            to_peer = bytes != 0;
        } else if (!local) {
            if (!mask) {  // into another CTA, in a module without the mailboxes: said
                cs_record_t r = cs_blank(CS_TOOL_REMOTE_SMEM, site);
                r.offset_lo = doff;
                r.offset_hi = doff + bytes;
                cs_record(r);
            }
        } else if (cs_mbar_untracked(e)) {
            // (its copy runs as written, not modelled)
        } else if (e == 0 || !cs_mbar_live(j)) {
            cs_mbar_record(CS_MBARRIER_UNINIT, site, moff, e);
            skip = 1;
        } else {
            cs_mbar_lock(j);
            ph = e[CS_MB_PHASE];
            cs_mbar_unlock(j);
            landing = true;
            uint32_t z = (doff + bytes - 1) / CS_GRANULE_BYTES;
            if (bytes == 0 || z >= S.granules)
                f = {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};
            else
                g0 = doff / CS_GRANULE_BYTES, g1 = z;
        }
    }
    for (uint32_t rest = cs_ballot(all, g0 <= g1); rest; rest &= rest - 1) {
        int k = cs_ffs(rest) - 1;  // (each leader's copy in turn, by all lanes)
        uint32_t a = cs_bcast(all, g0, k), z = cs_bcast(all, g1, k);
        uint32_t by = CS_AGENT_MBAR + cs_bcast(all, j, k), clk = cs_bcast(all, ph, k) + 1;
        cs_finding wf = cs_copy_write(all, slot, a, z, site, by, clk);
        if (cs_lane() == (uint32_t)k) f = wf;
    }
    if (landing) {
        if (f.kind) {
            cs_record_t r = cs_blank(f.kind, site);
            r.prev_site = f.prev_site;
            r.prev_warp = f.prev_warp;
            r.offset_lo = doff;
            r.offset_hi = doff + bytes;
            r.barrier = moff;
            r.phase = ph;
            cs_record(r);
        }
        cs_mbar_lock(j);
        cs_mbar_copy_landed(e, j, ph, bytes, site, moff);
        cs_mbar_unlock(j);
    }
    if (cs_any(all, to_peer))
        cs_mc_post_runs(all, to_peer, (uint32_t)dst >> CS_RANK_SHIFT, doff, bytes, moff, site);
    if (peer_only) cs_mc_poll();
    return cs_guard_verdict(all, skip, leader, cs_leaving);
}

CS_REJOINED_VOID(__consan_bulk_store, (uint64_t src, uint32_t bytes, uint32_t site),
                 (src, bytes, site)) {
    CS_PROF(7);
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT || !cs_async_proxy()) return;
    cs_mc_poll();
    // Lanes with BULK_OFF in the byte count skip the store (a converted branch,
    // instrument/converge.py): they help the others' stores.
    bool off = bytes & CS_BULK_OFF;
    bytes &= ~CS_BULK_OFF;
    uint32_t active = cs_group(site, 0);
    uint32_t leader = cs_ffs(active) - 1, w = cs_warp();
    uint32_t stores = cs_ballot(active, !off), n = cs_popc(stores);
    for (uint32_t i = 0; i < n; ++i) {  // every lane's store, in lane order, by the lanes
        uint32_t l = cs_nth_set(stores, i);
        uint32_t a = cs_bcast(active, (uint32_t)src, (int)l);
        uint32_t b = cs_bcast(active, bytes, (int)l);
        uint32_t off;
        cs_local(a, off);  // .shared::cta: always this CTA
        cs_bulk_store_one(active, leader, slot, w, l, off, b, site);
    }
}

// cp.async.bulk.commit_group closes warp w's open bulk group; cp.async.bulk.wait_group{.read}
// n retires the reads of all but the newest n; fence.proxy.async (see above).
CS_REJOINED_VOID(__consan_bulk_group, (uint32_t op, uint32_t n, uint32_t site),
                 (op, n, site)) {
    CS_PROF(8);
    uint32_t slot = cs_slot_sh;
    bool bulk = cs_async_proxy(), wg = cs_wgmma_module() && !cs_phase_mode();
    if (slot == CS_NO_SLOT || !(bulk || wg)) return;
    // Lanes with PROBE_OFF skip the operation (a converted branch, instrument/converge.py):
    // the warp's groups and fence are the warp's, so with one lane on the call is that
    // lane's; with none it is no call.
    bool off = op & CS_PROBE_OFF;
    op &= ~CS_PROBE_OFF;
    if (!cs_any(cs_activemask(), !off)) return;
    if (op != CS_PROXY_FENCE)
        return cs_unit_groups(CS_UNIT_BULK, CS_AGENT_BULK + cs_warp(),
                              op == CS_BULK_COMMIT, op == CS_BULK_WAIT, n, site);
    // One fence serves bulk stores (the P_w column) and wgmma operands (proxy_fence word).
    uint32_t active = cs_group(site, 0);
    uint32_t w = cs_warp();
    if (cs_lane() == (uint32_t)(cs_ffs(active) - 1)) {
        uint32_t* mine = cs_vis(slot, w);
        if (bulk) mine[CS_AGENT_PROXY + w] = mine[w];
        if (wg) cs_st32(&cs_cta(slot)[CS_CTA_PROXY_FENCE + w], mine[w]);
        mine[w] += 1;
        cs_clock_sh[w] = mine[w];
        cs_fence();
    }
    cs_syncwarp(active);
}

// wgmma.mma_async (before it issues): the unit of the warpgroup reads A (if through a
// descriptor) and B in the issuing warp's open group. The four warps of the warpgroup
// share the work: warp w takes chunks w % 4, w % 4 + 4, ... spread over its lanes.
// A record at an mma_async names the operand (barrier: 0 A, 1 B), the group (phase) and
// the operand's descriptor (count: bits 0-31, clock: bits 32-63).
CS_REJOINED_VOID(__consan_wgmma, (uint64_t da, uint64_t db, uint32_t info, uint32_t site),
                 (da, db, info, site)) {
    CS_STAMP_SCOPE(3);
    CS_PROF(9);
    CS_NULL_WGMMA(return;)
    CS_SPIN(CONSAN_SPIN_WGMMA, true)
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return;
    cs_mc_poll();
    uint32_t active = cs_group(((uint64_t)site << 32) | info, da), lane = cs_lane(), w = cs_warp();
    uint32_t rank = cs_popc(active & ((1u << lane) - 1u)), lanes = cs_popc(active);
    uint32_t u = w >> 2;
    uint32_t clk = cs_commits_sh(CS_UNIT_WGMMA, w) + 1;
    uint32_t n = info & CS_WG_INFO_N_MASK, elog = (info >> CS_WG_INFO_ELOG_SHIFT) & 3u;
    uint32_t na = (info & CS_WG_INFO_A_SMEM) ? 2u * 64u : 0u, total = na + 2u * n;
    cs_finding f = {0, CS_NO_SITE, CS_NO_WARP};
    uint32_t lo = 0xFFFFFFFFu, hi = 0, operand = 0;
    uint64_t desc = 0;
    const uint32_t first = (w & 3u) + 4u * rank, step = 4u * lanes;
    if (cs_vc_smem_on()) {  // granule tables in shared memory: publish every chunk, one fence, look
        const cs_wgd dA = cs_wg_decode(da, !(info & CS_WG_INFO_TRANS_A), elog);
        const cs_wgd dB = cs_wg_decode(db, !(info & CS_WG_INFO_TRANS_B), elog);
        cs_wgf r;
        if ((na && dA.sw && dA.base) || (dB.sw && dB.base))  // chunks of whole swizzle rows
            r = cs_wg_reads_any(slot, w, da, db, info, site, clk, first, step);
        else if ((!na || (dA.kmajor && dA.sw == 128u)) && dB.kmajor && dB.sw == 128u)
            cs_wg_reads16<true>(slot, w, dA, dB, na, total, site, clk, first, step, r);
        else
            cs_wg_reads16<false>(slot, w, dA, dB, na, total, site, clk, first, step, r);
        f = r.f, lo = r.lo, hi = r.hi, operand = r.operand;
        desc = operand ? db : da;
    }
    cs_view v = cs_make_view(slot, w);
    uint64_t head = ((uint64_t)v.gen << CS_WG_GEN_SHIFT) | clk;
    auto chunk = [&](uint32_t i, uint32_t& width) {  // chunk i's address (A's, then B's)
        return i >= na ? cs_wg_chunk(db, n, !(info & CS_WG_INFO_TRANS_B), elog, i - na, &width)
                       : cs_wg_chunk(da, 64, !(info & CS_WG_INFO_TRANS_A), elog, i, &width);
    };
    // Device-memory tables: publish the reads of every chunk of the lane, one fence, then
    // look at the writes (Dekker with cs_check_write_run), the flags of four granules in
    // flight together. (Measured on the H100: with a fence and four atomics in turn per
    // chunk, a 2048-cube Triton matmul's wgmma probes took 28.8k cycles a call.)
    for (uint32_t i = first; !cs_vc_smem_on() && i < total; i += step) {
        uint32_t width, a = chunk(i, width);
        uint32_t g0 = a / CS_GRANULE_BYTES, g1 = (a + width - 1) / CS_GRANULE_BYTES;
        if (g1 >= v.granules) continue;  // (said below)
        for (uint32_t g = g0; g <= g1; ++g) {
            cs_st64(cs_wg_rec(slot, u, g), head);
            cs_st32(cs_wg_site(slot, u, g), site);
        }
        if (cs_box_summary_on()) cs_box_summary_read(slot, g0, g1, 2 * S.nwarps + u, clk, site);
    }
    if (!cs_vc_smem_on()) cs_fence();
    for (uint32_t i = first; !cs_vc_smem_on() && i < total; i += step) {
        bool isb = i >= na;
        uint32_t width, a = chunk(i, width);
        uint32_t g0 = a / CS_GRANULE_BYTES, g1 = (a + width - 1) / CS_GRANULE_BYTES;
        bool had = f.kind != 0;
        if (g1 >= v.granules) {
            if (!f.kind) f = {CS_TOOL_OUT_OF_WINDOW, CS_NO_SITE, CS_NO_WARP};
        } else {
            for (uint32_t base = g0; base <= g1; base += 4) {
                uint64_t ww[4];
#pragma unroll
                for (uint32_t k = 0; k < 4; ++k)
                    if (base + k <= g1)
                        ww[k] = cs_or64(v.ent + 2 * (base + k), (uint64_t)CS_WW_FLAG_WGREAD << CS_WW_FLAGS_SHIFT);
#pragma unroll
                for (uint32_t k = 0; k < 4; ++k)
                    if (base + k <= g1 && !f.kind)
                        f = cs_judge_read_epoch(v, slot, base + k, ww[k], CS_PROXY_WGMMA);
            }
        }
        if (f.kind && !had) {
            lo = a;
            hi = a + width;
            operand = isb;
            desc = isb ? db : da;
        }
    }
    if (!cs_any(active, f.kind != 0)) return;
    cs_record_t r;
    if (cs_merged_record(active, f, site, lo, hi, r)) {
        r.barrier = operand;
        r.phase = clk - 1;
        r.count = (uint32_t)desc;
        r.clock = (uint32_t)(desc >> 32);
        cs_record(r);
    }
}

#ifdef CONSAN_HOST
static uint32_t cs_host_rows_done;  // chains done by their rows (the host tests' witness)
CS_ENTRY uint32_t cs_host_wgmma_rows_done() { return cs_host_rows_done; }
#endif
// A chain of four wgmma.mma_async closed by one commit (instrument/wgmma_window.py: the
// chain's probes, called after the commit): its rows where it is a K step of 128-byte rows
// (wgmma.h, cs_wg_chain_rows); otherwise, or where a lane found something, the four calls.
CS_REJOINED_VOID(__consan_wgmma4,
                 (uint64_t a0, uint64_t b0, uint64_t a1, uint64_t b1, uint64_t a2, uint64_t b2,
                  uint64_t a3, uint64_t b3, uint32_t info, uint32_t s0, uint32_t s1, uint32_t s2,
                  uint32_t s3),
                 (a0, b0, a1, b1, a2, b2, a3, b3, info, s0, s1, s2, s3)) {
    CS_NULL_WGMMA(return;)
    const uint32_t sites[4] = {s0, s1, s2, s3};
    {
        CS_PROF(45);
        CS_STAMP_SCOPE(3);  // (the four calls below count themselves)
        if (cs_wg_chain_rows(a0, b0, a1, b1, a2, b2, a3, b3, info, sites)) {
            CS_SPIN(CONSAN_SPIN_WGMMA, true)  // (one call: its four wgmmas)
#ifdef CONSAN_HOST
            ++cs_host_rows_done;
#endif
            return;
        }
    }
    __consan_wgmma(a0, b0, info, s0);
    __consan_wgmma(a1, b1, info, s1);
    __consan_wgmma(a2, b2, info, s2);
    __consan_wgmma(a3, b3, info, s3);
}

// wgmma.commit_group (before it), wgmma.wait_group n (after it), and fence.proxy.async
// (after it): warp w's clock up to the fence covers its generic writes for the async
// proxy; w's clock moves on, so later writes are not covered. (Phase mode has no async
// proxy readers: the fence is nothing there.)
CS_REJOINED_VOID(__consan_wgmma_group, (uint32_t op, uint32_t n, uint32_t site),
                 (op, n, site)) {
    CS_PROF(10);
    if (cs_slot_sh == CS_NO_SLOT) return;
    // the unit belongs to the warpgroup: a wait by any of its warps covers all its reads
    cs_unit_groups(CS_UNIT_WGMMA, CS_AGENT_WGMMA + (cs_warp() >> 2),
                   op == CS_WGMMA_COMMIT, op == CS_WGMMA_WAIT, n, site);
}

#ifdef CONSAN_HOST
// The tensor-map cache (host tests): emptied, map `at` kept with `bytes`, `map` looked up
// (0: not in the cache; the host's table of maps is empty).
CS_ENTRY uint32_t cs_host_tmap_cached(uint64_t at, uint32_t bytes, uint64_t map) {
    for (uint32_t i = 0; i < CS_TMAP_CACHE; ++i) cs_shv.tmap_at[i] = 0;
    cs_shv.tmap_claimed = 0;
    cs_tmap_keep(at, bytes);
    auto table = S.tmaps;  // (none: a map not kept is not read)
    S.tmaps = 0;
    uint32_t r = cs_tmap_bytes(map);
    S.tmaps = table;
    return r;
}
CS_ENTRY uint32_t cs_host_wg_chunk(uint64_t desc, uint32_t rows, uint32_t kmajor, uint32_t elog,
                                   uint32_t i, uint32_t* width) {
    return cs_wg_chunk(desc, rows, kmajor, elog, i, width);
}
#endif
// Every active lane issues its own copy: the leader (the lowest of them) models them in
// lane order. The lanes of the call marked CS_PROBE_OFF (instrument/converge.py) issue
// none but help write the boxes. A load on an mbarrier that is not live is skipped (1),
// as for bulk copies. With CS_TENSOR_ARRIVE_TX, each issuing lane's load carries the
// mbarrier.arrive.expect_tx of `tx` bytes (site asite) its PTX made just before it, on the
// same mbarrier (instrument/carry.py): one probe for both; 1 skips both.
// The copies of one call: with `pair` (__consan_tensor2), each issuing lane's two loads on
// one mbarrier, the first (which may carry the arrive) then the second; 1 skips both.
CS_DEV uint32_t cs_tensor_calls(bool& cs_leaving, uint64_t smem, uint64_t map, uint64_t mbar,
                                uint32_t site, uint32_t op, uint32_t tx, uint32_t asite,
                                uint64_t smem2, uint64_t map2, uint32_t site2, bool pair) {
    CS_PROF(11);
    CS_STAMP_SCOPE(1);
    CS_NULL_TENSOR(return 0;)
    uint32_t slot = cs_slot_sh;
    if (slot == CS_NO_SLOT) return 0;
    CS_STAMP_PART_AS(start, 7);
    cs_mc_poll();
    uint32_t all = cs_activemask();
    uint32_t active = cs_group(site, 0);  // this call's lanes, those marked off too
    uint32_t issuers = cs_ballot(active, !(op & CS_PROBE_OFF));
    if (!issuers) return 0;
    bool arrive = op & CS_TENSOR_ARRIVE_TX;
    uint32_t mask = op & CS_TENSOR_MULTICAST ? op >> CS_MULTICAST_MASK_SHIFT : 0u;
    op &= ((1u << CS_MULTICAST_MASK_SHIFT) - 1u) &
          ~(CS_PROBE_OFF | CS_TENSOR_ARRIVE_TX | CS_TENSOR_MULTICAST);
    uint32_t leader = cs_ffs(issuers) - 1, skip = 0;
    bool lead = cs_lane() == leader;
    for (uint32_t rest = issuers; rest; rest &= rest - 1) {
        int k = cs_ffs(rest) - 1;
        // A pair's second look lands its bytes under the hold of the entry's lock its first
        // look kept, across the first box's write (no other lock is taken there): one
        // look-up and one lock a pair (on an H200, the TMA + wgmma GEMM 0.192 -> 0.189 ms by
        // the device's time alone). Where the first look took the second's landing too,
        // before either box, its results held across the first box's write spilled
        // (__consan_tensor2 16 -> 85 local stores, 1,560 -> 2,496 SASS instructions) and the
        // GEMM was 1.098 times slower; the two boxes written in one pass after both looks
        // spilled too (72 local stores) and gained 1% on the GEMM, and the second landing
        // made before either box (its phase and bytes kept across the first box's write:
        // 34 local stores) was 1.021 times slower.
        uint32_t held = 0;
        for (uint32_t q = 0; q <= (uint32_t)pair; ++q) {
            // A load's operands are the leader's alone: where it issued the load itself
            // (the first load, and the whole call where one lane issues), its own, with no
            // shuffles (five, with their convergence checks; with the chunk masks walked
            // as 32-bit words, clocks.h, a TMA load's probe 865 -> 757 warp instructions
            // in the TMA ring, ncu on the H100).
            uint64_t d = q ? smem2 : smem, m = q ? map2 : map, b = mbar;
            uint32_t ntx = tx, mk = mask, s = q ? site2 : site;
            bool carried = arrive && q == 0;
            if (op != CS_TENSOR_LOAD || (uint32_t)k != leader) {
                d = cs_bcast64(active, d, k), m = cs_bcast64(active, m, k);
                b = cs_bcast64(active, mbar, k);
                if (op != CS_TENSOR_LOAD) {
                    cs_tensor_store(active, leader, slot, d, m, (uint32_t)k, site);
                    continue;
                }
                ntx = cs_bcast(active, tx, k), mk = cs_bcast(active, mask, k);
            }
            cs_tload t = {};
            CS_STAMP(start.~cs_stamp_part(); start.k = -1;)
            if (lead) {
                CS_PROF(25);
                CS_STAMP_PART(0);
                CS_SPIN(CONSAN_SPIN_TENSOR, true)
                t = cs_tensor_load_begin(slot, d, m, b, s, carried, ntx, asite, mk,
                                         pair && q == 0 && !mk, held);
                if (mk && !t.skip && cs_multicast_on()) {  // (a skipped load writes nowhere)
                    uint32_t low = (1u << CS_RANK_SHIFT) - 1u;
                    cs_mc_post_all(mk, (uint32_t)d & low, cs_tmap_bytes(m), (uint32_t)b & low,
                                   s);
                }
            }
            // The call's lanes meet again after the leader's look, before the shuffles of
            // what it found: without it each shuffle took its divergent path, once for the
            // leader and once for the others (a TMA load's probe in the TMA ring 757 -> 722
            // warp instructions, ncu on the H100).
            cs_syncwarp(active);
            uint32_t span = cs_bcast(active, t.write ? t.span : 0u, leader);
            if (span) {
                uint32_t off = cs_bcast(active, t.off, leader);
                uint32_t g0 = off / CS_GRANULE_BYTES, g1 = (off + span - 1) / CS_GRANULE_BYTES;
                uint32_t agent = CS_AGENT_MBAR + cs_bcast(active, t.j, leader);
                uint32_t clk = cs_bcast(active, t.ph, leader) + 1;
                CS_STAMP_PART(1);
                cs_finding wf = cs_copy_write(active, slot, g0, g1, s, agent, clk);
                if (!t.f.kind) t.f = wf;
            }
            if (lead) {
                CS_PROF(26);
                skip |= t.skip;
                if (t.f.kind)
                    cs_tensor_record(t.f.kind, s, t.f, t.off, t.off + t.span, t.moff, t.ph,
                                     t.bytes);
            }
            // (the pair's second load is skipped with its first: not modelled either)
            if (pair && cs_bcast(active, t.skip, leader)) break;
        }
    }
    {
        CS_PROF(27);
        CS_STAMP_PART(2);
        skip = cs_guard_verdict(all, skip, leader, cs_leaving);
    }
    return skip;
}
CS_REJOINED_LEAVING(uint32_t, __consan_tensor,
            (uint64_t smem, uint64_t map, uint64_t mbar, uint32_t site, uint32_t op, uint32_t tx,
             uint32_t asite),
            (smem, map, mbar, site, op, tx, asite)) {
    return cs_tensor_calls(cs_leaving, smem, map, mbar, site, op, tx, asite, 0, 0, 0, false);
}
// Two loads on one mbarrier in one call (abi.PROBE_TENSOR2, instrument/carry.py `pairs`).
CS_REJOINED_LEAVING(uint32_t, __consan_tensor2,
            (uint64_t smem, uint64_t map, uint64_t mbar, uint32_t site, uint32_t op, uint32_t tx,
             uint32_t asite, uint64_t smem2, uint64_t map2, uint32_t site2),
            (smem, map, mbar, site, op, tx, asite, smem2, map2, site2)) {
    return cs_tensor_calls(cs_leaving, smem, map, mbar, site, op, tx, asite, smem2, map2, site2,
                           true);
}

#ifdef CONSAN_HOST
// Host driver: set which CTA/warp the next probe runs as; begin a CTA.
CS_ENTRY void cs_host_set(uint32_t cx, uint32_t cy, uint32_t cz, uint32_t warp, uint32_t nthreads) {
    cs_host_ctx.cta[0] = cx; cs_host_ctx.cta[1] = cy; cs_host_ctx.cta[2] = cz;
    cs_host_ctx.warp = warp;
    cs_host_ctx.nthreads_block = nthreads;
}
CS_ENTRY void cs_host_set_state(const cs_state_t* s) { __consan_state = *s; }
// The launch's dynamic shared memory, `bytes` of it at p (0 bytes: none).
CS_ENTRY void cs_host_set_dyn(uint8_t* p, uint32_t bytes) {
    cs_dyn_host = p;
    cs_host_smem_lo = p;
    cs_host_smem_hi = p + bytes;
}
CS_REJOINED(uint32_t, __consan_cta_begin, (),
            ()) {  // (no fast path in the host build: 0)
    if (cs_phase_smem_on()) return cs_phase_smem_begin(0, 1), 0u;
    if (cs_multicast_on()) cs_mailbox_clear(0, 1);
    cs_begin_leader(cs_block_threads());
    if (cs_slot_sh != CS_NO_SLOT) cs_begin_clear(cs_slot_sh, 0, 1, cs_block_threads());
    return 0u;
}
CS_ENTRY uint32_t cs_host_slot() { return cs_slot_sh; }
// A peer CTA (rank `from`) posts its multicast copy to this CTA (multicast.h).
CS_ENTRY void cs_host_mc_post(uint32_t dst, uint32_t bytes, uint32_t mbar, uint32_t site,
                              uint32_t from, uint32_t rel, uint32_t acq) {
    cs_mailbox_t* m = cs_mailbox();
    uint32_t h = m->head++;
    cs_mc_post_t& p = m->post[h % CS_MAILBOX_ENTRIES];
    p = {h + 1, dst, bytes, mbar, site, from, rel, acq};
}
// Warp `warp` of this CTA arrives on a peer's mbarrier (the release this CTA keeps, dsmem.h;
// the post to the peer is left out): the release's number.
CS_ENTRY uint32_t cs_host_remote_release(uint32_t warp) {
    cs_host_ctx.warp = warp;
    return cs_remote_release(cs_slot_sh, warp);
}
CS_ENTRY uint32_t cs_host_hw_arrivals_at(uint32_t b) { return cs_host_hw_arrivals[b & 15u]; }
#else
// Returns the warp's fast-path record in the phase tables in shared memory (the inline
// fast path of the rewritten kernel reads it: instrument/fast_path.py), or the tag, the
// warp and the record of the vector clocks' tables in shared memory with 16-byte granules
// (instrument/vc_reads.py), 0 in other builds.
CS_REJOINED(uint32_t, __consan_cta_begin, (),
            ()) {
    CS_PROF(13);
    uint32_t tid = cs_tid();
    CS_STAMP(if (tid == 0) cs_stamp(0, cs_stamp_global()), cs_stamp(1, cs_stamp_clock());)
    uint32_t n = cs_block_threads();
#ifdef CONSAN_PSH
    cs_phase_smem_begin(tid, n);
    __syncthreads();
    return cs_phase_smem_fast_init();
#endif
    // (warp 1 resets what no slot decides: in another warp it runs beside the leader's
    // claim, where lanes of the leader's own warp would wait for it)
    if (n > 32 && tid >= 32 && tid < 64) cs_begin_resets(tid - 32, n < 64 ? n - 32 : 32u);
    if (tid == 0) {
        CS_STAMP_PART(11);
        cs_begin_leader(n, n <= 32);
    }
    if (cs_multicast_on()) cs_mailbox_clear(tid, n);
    __syncthreads();
    uint32_t slot = cs_slot_sh;
    {
        CS_STAMP_PART(12);
        if (slot != CS_NO_SLOT) cs_begin_clear(slot, tid, n, n);
    }
    {
        CS_STAMP_PART(13);
        __syncthreads();
    }
    // Multicast copies: the cluster's CTAs meet once their mailboxes are clear, so no post
    // reaches one before (its own code orders nothing by this: it runs before any of it).
    if (cs_multicast_on()) cs_cluster_sync();
    CS_STAMP(if (tid == 0) cs_stamp(2, cs_stamp_clock());)
#if defined(CONSAN_VSH) && defined(CONSAN_CHUNK_GRANULES)
    // the record of the inline reads (instrument/vc_reads.py), filled with the layout
    if (slot != CS_NO_SLOT && cs_vc_smem_on())
        return CS_VF_TAG | cs_warp() << CS_VF_WARP_SHIFT |
               (uint32_t)__cvta_generic_to_shared(cs_shv.vfast);
#endif
    return 0u;
}
#endif
