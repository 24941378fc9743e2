// consan device checker: the CTA's checker state in its shared memory.
//
// Kept in the kernel's dynamic window after the kernel's own bytes (a static variable
// in the host build): the slot, generation, per-warp clocks and counters, mbarrier keys.

// Where the granule tables in shared memory (FLAG_VC_SMEM) are: set when the CTA begins.
struct cs_vc_smem_layout_t {
    cs_sp W, R, RS, BT;
    uint32_t gp, nr, nb, rss;
    uint32_t *ws, *rsite;
    uint32_t* vis;  // the warps' vector clocks [nwarps][nlogical] (generic address)
    uint64_t* barw;  // the barriers' words [BARRIER_WORDS]
    uint32_t* bvc0;  // barrier 0's two clock slots [2][nlogical]
    uint32_t rtid[2];  // the logical thread of readers 0..7, a byte each
    uint32_t* rows;  // FLAG_BAR0_ROWS: each warp's clock at its arrivals [2][nwarps][nlogical]
};
#define CS_TMAP_CACHE 4
// The CTA's checker state in its shared memory (a static in the host build).
struct CS_ALIGN16 cs_shared_t {
    uint32_t slot, gen, mbar_used;  // mbar_used: bit j, mbarrier entry j is in use
    uint32_t idem_lock;  // held while a warp runs an idempotent store (idem.h)
    uint32_t ending;  // a warp left after a deadlock: the CTA winds down (cs_leave_cta)
    uint32_t mbar_full;  // an init found every mbarrier entry in use (cs_mbar_untracked)
    uint64_t mbar_arc;  // the entries' columns to visit, for the mask they were made from
    uint64_t vc_chunks;  // bit q: a clock's columns 4q..4q+3 hold one in use (cs_vc_chunks)
    uint32_t clock[CS_MAX_WARPS];  // each warp's own clock: VC_w[w], kept in smem
    uint32_t cpticks[CS_MAX_WARPS];  // each warp's cp.async unit's clock - 1: commit_group and
                                     // cp.async.mbarrier.arrive advance it (every cp.async
                                     // probe reads it: shared memory, not the CTA table)
    uint32_t commits[2][CS_MAX_WARPS];  // each warp's bulk (CS_UNIT_BULK) and wgmma
                                        // (CS_UNIT_WGMMA) groups committed
    uint32_t lanes[CS_MAX_WARPS];  // each warp's live lanes (every barrier probe reads them)
    uint32_t live_warps;           // warps with a live lane
    uint32_t phase[CS_MAX_WARPS];  // CTA-wide barriers each warp has passed
    uint32_t mlock[CS_MBARRIERS];  // the lock of each mbarrier entry
    uint32_t mkey[CS_MBARRIERS];   // the key of each entry this CTA made (0: none)
    uint32_t mlive[CS_MBARRIERS];  // the entry's liveness (the generation while live)
    uint32_t store_site[CS_MAX_WARPS];  // each warp's last store with a value tag: its site
    uint32_t store_tag[CS_MAX_WARPS];   // ...and the tag of what its lanes stored (0: none)
    uint32_t echo[CS_MAX_WARPS];  // the lanes of the warp's access probe that echo (cs_echo)
    uint64_t tmap_at[CS_TMAP_CACHE];  // kernel-parameter maps looked up, with their bytes
                                      // (cs_tmap_word; 0: free)
    uint32_t tmap_claimed;            // ...entries taken
    uint32_t init_run;  // a warp makes a run of inits by its lanes at once (__consan_mbar_init_run)
    cs_vc_smem_layout_t vlay;
    CS_ALIGN16 uint32_t vfast[CS_VF_WORDS];  // the inline read's record (abi.VF_*)
};
#define cs_vc_smem_layout_sh (cs_shv.vlay)
#define cs_mlock_sh (cs_shv.mlock)
#define cs_mkey_sh (cs_shv.mkey)
#define cs_mlive_sh (cs_shv.mlive)
#define cs_slot_sh (cs_shv.slot)
#define cs_mbar_used_sh (cs_shv.mbar_used)
#define cs_mbar_arc_sh (cs_shv.mbar_arc)
#define cs_gen_sh (cs_shv.gen)
#define cs_clock_sh (cs_shv.clock)
#define cs_cpticks_sh (cs_shv.cpticks)
#define CS_UNIT_BULK 0u
#define CS_UNIT_WGMMA 1u
// Groups warp w's bulk-store (CS_UNIT_BULK) or wgmma (CS_UNIT_WGMMA) unit has committed.
#define cs_commits_sh(k, w) (*(volatile uint32_t*)&cs_shv.commits[k][w])
#define cs_lanes_sh (cs_shv.lanes)
#define cs_livew_sh (cs_shv.live_warps)
#define cs_phase_sh (cs_shv.phase)
#ifdef CONSAN_HOST
static cs_shared_t cs_shv;
// The words the rewritten kernel's inline barriers read (instrument/inline_barriers.py), at
// the offsets abi.SHV_* gives: asserted here, in the host build every CPU test compiles
// (NVRTC has no offsetof; the words before `vlay` lie alike in both builds).
static_assert(offsetof(cs_shared_t, ending) == CS_SHV_ENDING &&
              offsetof(cs_shared_t, vc_chunks) == CS_SHV_CHUNKS &&
              offsetof(cs_shared_t, lanes) == CS_SHV_LANES &&
              offsetof(cs_shared_t, phase) == CS_SHV_PHASE &&
              offsetof(cs_shared_t, commits) + 4 * CS_MAX_WARPS * CS_UNIT_WGMMA ==
                  CS_SHV_WGMMA_COMMITS &&
              offsetof(cs_shared_t, cpticks) == CS_SHV_CPTICKS &&
              offsetof(cs_shared_t, gen) == CS_SHV_GEN && offsetof(cs_shared_t, mkey) == CS_SHV_MKEY &&
              offsetof(cs_shared_t, mlive) == CS_SHV_MLIVE, "abi.SHV_*: cs_shared_t's offsets");
#else
#define cs_shv (*(cs_shared_t*)cs_dyn_at(__consan_state.shv_offset))
static_assert(sizeof(cs_shared_t) <= CS_SHV_BYTES, "abi.SHV_BYTES is too small");
#endif

#define CS_NO_SLOT 0xFFFFFFFFu

CS_DEV uint64_t cs_bcast64(uint32_t m, uint64_t v, int lane) {
    return ((uint64_t)cs_bcast(m, (uint32_t)(v >> 32), lane) << 32) | cs_bcast(m, (uint32_t)v, lane);
}

// Replicated stores (docs/model.md): a write-after-write between runs of one store
// instruction (`site`) by this warp and warp t is no race when both warps' runs stored the
// same bytes at the same addresses, which their value tags (__consan_store_value) say.
CS_DEV bool cs_same_store(uint32_t site, uint32_t t) {
    uint32_t w = cs_warp();
    if (t >= CS_MAX_WARPS || t == w) return false;
    cs_fence();  // (t's tag was published before its write epoch, which this warp has seen)
    const volatile uint32_t* s = cs_shv.store_site;
    const volatile uint32_t* g = cs_shv.store_tag;
    uint32_t mine = g[w];
    return mine != 0 && s[w] == site && s[t] == site && g[t] == mine;
}

CS_DEV void cs_clear_store_tags(uint32_t i, uint32_t n) {  // by threads i of n (and echoes)
    for (uint32_t w = i; w < CS_MAX_WARPS; w += n) cs_shv.store_tag[w] = cs_shv.echo[w] = 0;
}

// Lanes that reach an access they do not make (instrument/echo.py) call its probe with the
// address of a lane that makes it and CS_INFO_ECHO: the same access by the same warp, which
// changes no verdict, made so that the warp calls the probe together (a call by part of it
// split it). A record leaves them out of its lanes (cs_blank, cs_merged_record) while the
// probe runs. Returns them and the lanes that called, with the bit taken off `info`.
struct cs_echo_t { uint32_t lanes, active; };
CS_DEV cs_echo_t cs_echo_begin(uint32_t& info) {
    const uint32_t active = cs_activemask();
    const uint32_t e = cs_ballot(active, (info & CS_INFO_ECHO) != 0);
    info &= ~CS_INFO_ECHO;
    if (e) cs_shv.echo[cs_warp()] = e;  // (every lane stores the same word)
    return {e, active};
}
CS_DEV uint32_t cs_echo_lanes() { return cs_shv.echo[cs_warp()]; }
// The lanes that called the probe wait for each other before they leave it. A probe's
// lanes part where some of them record a finding; a warp that came back split made its
// next inline test's activemask, votes and calls in parts, and reached `bar.sync` split.
// Measured on the H100: the unrolled bitonic sort without its stride-32 barrier (its
// compare-and-swap a converted run of accesses, instrument/fast_path.py) never ended;
// with this end it reported its 1,862 findings. (After the record, too: cs_blank reads
// the echo word this end clears.)
CS_DEV void cs_echo_end(const cs_echo_t& e) {
    cs_syncwarp(e.active);
    if (e.lanes) cs_shv.echo[cs_warp()] = 0;
}
