"""Per-kind wording: site roles, what-happened sentences and fix sentences.

Every word a report uses about a kind lives in these tables, so refining the
advice for a kind is an edit to one row. Placeholders, filled by
`reports.describe`:

    {cur} {prev}          short source location (file:line) of the current / earlier site
    {cur_who} {prev_who}  "warp 5 (lanes 0-31)", "warps 0-3, 7", "async agent 33"
    {prev_issuer}         the warps that issued the earlier agents' work ("warp 0")
    {bytes}               merged smem byte ranges, "smem[0x100..0x180)"
    {barrier}             barrier id(s) as recorded, {mbar} the same as smem offsets
    {phase} {count}       phase / generation and pending count (or bytes) as recorded
    {operand}             at an mma_async: " (operand B (...) reads smem[...), in wgmma group 3)"

A row keyed "kind/variant" refines the kind's row for findings of that variant
(`reports.describe.variant`: "wgmma" when an mma_async is one of the sites).
"""

from __future__ import annotations

# kind -> (role of the current site, role of the earlier site or None)
ROLES: dict[str, tuple[str, str | None]] = {
    "race.raw": ("read", "earlier write"),
    "race.war": ("write", "earlier read"),
    "race.waw": ("write", "earlier write"),
    "async.pending-write": ("access", "async copy"),
    "async.pending-read": ("write", "async read"),
    "proxy.missing-fence": ("async-proxy use", "generic-proxy write"),
    "uninit.read": ("read", None),
    "mbarrier.uninit": ("mbarrier use", "inval"),
    "mbarrier.reinit": ("init", "earlier init"),
    "mbarrier.underflow": ("arrive", "earlier arrive"),
    "mbarrier.underflow/copy": ("copy", "earlier arrive"),
    "mbarrier.data-access": ("access", "mbarrier init"),
    "deadlock": ("wait", "last arrive"),
    "cluster.early-exit": ("exit", "peer's access"),
    "async.pending-read/wgmma": ("write", "wgmma (reads its operands until its group retires)"),
    "proxy.missing-fence/wgmma": ("wgmma (reads through the async proxy)",
                                  "generic-proxy write"),
}
DEFAULT_ROLES: tuple[str, str | None] = ("site", "earlier site")

# kind -> one sentence saying which warp did what, where.
WHAT: dict[str, str] = {
    "race.raw": "{prev_who} wrote {bytes} at {prev}; {cur_who} read it at {cur}.",
    "race.war": "{prev_who} read {bytes} at {prev}; {cur_who} overwrote it at {cur}.",
    "race.waw": "{prev_who} wrote {bytes} at {prev}; {cur_who} wrote it again at {cur}.",
    "async.pending-write": "{prev_who} issued an async copy into {bytes} at {prev}; "
                           "{cur_who} accessed those bytes at {cur} before it was known complete.",
    "async.pending-write/peer": "CTA rank {prev_rank} of the cluster issued the copy at {prev} "
                                "(a multicast), which writes {bytes} of CTA rank {rank}; "
                                "{cur_who} of CTA rank {rank} accessed those bytes at {cur} "
                                "before its own mbarrier said they had landed.",
    "race.raw/peer": "{prev_who} of CTA rank {prev_rank} wrote {bytes} of CTA rank {rank} at "
                     "{prev} (distributed shared memory); {cur_who} of CTA rank {rank} read "
                     "them at {cur}.",
    "race.war/peer": "{prev_who} of CTA rank {prev_rank} read {bytes} of CTA rank {rank} at "
                     "{prev}; {cur_who} of CTA rank {rank} overwrote them at {cur}.",
    "race.waw/peer": "{prev_who} of CTA rank {prev_rank} wrote {bytes} of CTA rank {rank} at "
                     "{prev} (distributed shared memory); {cur_who} of CTA rank {rank} wrote "
                     "them again at {cur}.",
    "race.raw/remote": "{prev_who} of CTA rank {rank} wrote {bytes} of its shared memory at "
                       "{prev}; warp {cur_warp} of CTA rank {cur_rank} read them at {cur} "
                       "through distributed shared memory.",
    "race.war/remote": "{prev_who} of CTA rank {rank} read {bytes} of its shared memory at "
                       "{prev}; warp {cur_warp} of CTA rank {cur_rank} overwrote them at {cur} "
                       "through distributed shared memory.",
    "race.waw/remote": "{prev_who} of CTA rank {rank} wrote {bytes} of its shared memory at "
                       "{prev}; warp {cur_warp} of CTA rank {cur_rank} wrote them again at {cur} "
                       "through distributed shared memory.",
    "uninit.read/remote": "Warp {cur_warp} of CTA rank {cur_rank} read {bytes} of CTA rank "
                          "{rank} at {cur} through distributed shared memory, but nothing in the "
                          "cluster wrote these bytes since launch.",
    "async.pending-read": "{prev_who} issued an async read of {bytes} at {prev}; "
                          "{cur_who} wrote those bytes at {cur} while it may still be reading.",
    "proxy.missing-fence": "{prev_who} wrote {bytes} at {prev} through the generic proxy; "
                           "{cur_who} handed them to the async proxy at {cur}.",
    "uninit.read": "{cur_who} read {bytes} at {cur}, "
                   "but nothing in the CTA wrote these bytes since launch.",
    "mbarrier.uninit/peer": "The multicast at {cur}, issued by CTA rank {prev_rank}, completes "
                            "its bytes on the mbarrier at {mbar} of CTA rank {rank}, which that "
                            "CTA had not initialised when the copy was issued.",
    "mbarrier.uninit": "{cur_who} used the mbarrier at {mbar} at {cur} "
                       "while it was not initialised.",
    "mbarrier.reinit": "{cur_who} initialised the mbarrier at {mbar} at {cur} "
                       "while it was still live (phase {phase}).",
    "mbarrier.underflow": "{cur_who} arrived on the mbarrier at {mbar} at {cur} in phase {phase}, "
                          "taking its pending count below zero (count {count}).",
    "mbarrier.underflow/copy": "The copy at {cur}, issued by {cur_who}, completed more bytes on "
                               "the mbarrier at {mbar} in phase {phase} than expect_tx had "
                               "announced for that phase.",
    "mbarrier.data-access": "{cur_who} accessed {bytes} at {cur}: "
                            "the bytes of the live mbarrier at {mbar}.",
    "cluster.early-exit": "{cur_who} of CTA rank {rank} exited at {cur}, the CTA's last, "
                          "but no cluster barrier it had waited on ordered the access of "
                          "{prev_who} of CTA rank {prev_rank} to its shared memory at {prev} "
                          "before the exit.",
    "deadlock": "{cur_who} waits at {cur} on the mbarrier at {mbar} in phase {phase} "
                "with {count} arrivals (or bytes) still missing, and no live warp can supply them.",
    "race.raw/wgmma": "{prev_who} wrote {bytes} at {prev}; the wgmma at {cur}, issued by "
                      "{cur_who}, reads them{operand} with nothing ordering the write before it.",
    "uninit.read/wgmma": "The wgmma at {cur}, issued by {cur_who}, reads {bytes}{operand}, but "
                         "nothing in the CTA wrote these bytes since launch (check the "
                         "operand's descriptor if they should hold the tile).",
    "async.pending-write/wgmma": "{prev_who} issued an async copy into {bytes} at {prev}; the "
                                "wgmma at {cur}, issued by {cur_who}, reads them{operand} "
                                "before the copy was known complete.",
    "async.pending-read/wgmma": "{prev_who} reads {bytes} as an operand of the wgmma issued at "
                                "{prev}; {cur_who} overwrote those bytes at {cur} before a "
                                "wgmma.wait_group retired that wgmma's group.",
    "proxy.missing-fence/wgmma": "{prev_who} wrote {bytes} at {prev} through the generic proxy "
                                 "and executed no fence.proxy.async after it; the wgmma at "
                                 "{cur}, issued by {cur_who}, reads them through the async "
                                 "proxy{operand}.",
}
DEFAULT_WHAT = "{cur_who} at {cur}."

# kind -> exactly one sentence naming the missing synchronisation and the fix.
FIX: dict[str, str] = {
    "cluster.early-exit": "A CTA must not exit while a peer may still reach its shared "
                          "memory: a cluster.sync() (barrier.cluster.arrive.release then "
                          "barrier.cluster.wait.acquire) at the end of the kernel, in every "
                          "CTA, orders CTA rank {prev_rank}'s access at {prev} before CTA "
                          "rank {rank}'s exit at {cur}.",
    "race.raw": "No barrier orders the write at {prev} before the read at {cur}: "
                "a __syncthreads() (bar.sync) between them, reached by both warps, "
                "would order them.",
    "race.war": "No barrier orders the read at {prev} before the write at {cur}: the read must "
                "finish before the overwrite, so a barrier after the read at {prev} and before "
                "the write at {cur}, reached by both warps, would order them.",
    "race.waw": "No barrier orders the write at {prev} before the write at {cur}: "
                "a __syncthreads() (bar.sync) between them, reached by both warps, "
                "would order them (or let only one warp write these bytes).",
    "async.pending-write": "The access at {cur} does not wait for the async copy issued at "
                           "{prev}: wait for it first (cp.async.wait_group / wait_all for "
                           "cp.async, the mbarrier phase for bulk / TMA copies and st.async), "
                           "then a barrier if other warps touch these bytes.",
    "async.pending-write/peer": "CTA rank {rank} reads bytes at {cur} that the multicast at "
                                "{prev}, issued by CTA rank {prev_rank}, writes, and never "
                                "waited on its own mbarrier for the phase those bytes complete: "
                                "wait on it (mbarrier.try_wait.parity) before the access, then "
                                "a barrier if other warps touch these bytes (a cluster barrier "
                                "orders the copy's issue, not its arrival).",
    "race.raw/peer": "Nothing orders CTA rank {prev_rank}'s write at {prev} before CTA rank "
                     "{rank}'s read at {cur}: barrier.cluster.arrive.release after the write "
                     "and barrier.cluster.wait.acquire before the read (a cluster.sync() "
                     "between them in both CTAs), or an arrive of CTA rank {prev_rank} on an "
                     "mbarrier of CTA rank {rank} after the write that the reader waits on, "
                     "would order them.",
    "race.war/peer": "Nothing orders CTA rank {prev_rank}'s read at {prev} before CTA rank "
                     "{rank}'s write at {cur}: a cluster.sync() after the read and before the "
                     "write in both CTAs, or an arrive of CTA rank {prev_rank} on an mbarrier "
                     "of CTA rank {rank} after the read that the writer waits on, would order "
                     "them.",
    "race.waw/peer": "Nothing orders CTA rank {prev_rank}'s write at {prev} before CTA rank "
                     "{rank}'s write at {cur}: a cluster.sync() between them in both CTAs, or "
                     "an arrive of CTA rank {prev_rank} on an mbarrier of CTA rank {rank} "
                     "after the first write that the second writer waits on, would order them "
                     "(or let only one CTA write these bytes).",
    "race.raw/remote": "Nothing orders CTA rank {rank}'s write at {prev} before CTA rank "
                       "{cur_rank}'s read at {cur}: a cluster.sync() between them in both CTAs, "
                       "or an arrive on an mbarrier of CTA rank {cur_rank} after the write "
                       "(mbarrier.arrive.release.cluster) that CTA rank {cur_rank} waits on "
                       "before the read, would order them.",
    "race.war/remote": "Nothing orders CTA rank {rank}'s read at {prev} before CTA rank "
                       "{cur_rank}'s write at {cur}: a cluster.sync() after the read and before "
                       "the write in both CTAs, or an arrive on an mbarrier of CTA rank "
                       "{cur_rank} after the read (mbarrier.arrive.release.cluster) that CTA "
                       "rank {cur_rank} waits on before the write, would order them.",
    "race.waw/remote": "Nothing orders CTA rank {rank}'s write at {prev} before CTA rank "
                       "{cur_rank}'s write at {cur}: a cluster.sync() between them in both "
                       "CTAs, or an arrive on an mbarrier of CTA rank {cur_rank} after the "
                       "first write that CTA rank {cur_rank} waits on before the second, would "
                       "order them (or let only one CTA write these bytes).",
    "uninit.read/remote": "CTA rank {cur_rank} reads CTA rank {rank}'s bytes at {cur} before "
                          "anything wrote them: write them first, then a cluster.sync() before "
                          "the read.",
    "async.pending-read": "No wait orders the end of the async read issued at {prev} before the "
                          "write at {cur}: a cp.async.bulk.wait_group.read by {prev_issuer} after "
                          "the bulk store's cp.async.bulk.commit_group and before the write at "
                          "{cur} (then a barrier, if another warp writes) would order them "
                          "(wgmma.wait_group for wgmma operands).",
    "proxy.missing-fence": "No fence.proxy.async by the writer orders the generic-proxy write at "
                           "{prev} before the async-proxy read at {cur}: a "
                           "fence.proxy.async.shared::cta by {prev_who} after the write at "
                           "{prev} and before the barrier that hands the bytes to the issuing "
                           "warp (before {cur} itself when the writer issues it) would order "
                           "them.",
    "uninit.read": "Initialise these bytes (or guard the read) before reading them; if another "
                   "CTA or a copy is meant to fill them, its completion is not waited for.",
    "mbarrier.uninit/peer": "Initialise the mbarrier at {mbar} in every CTA of the ctaMask "
                            "before any CTA issues a copy onto it: mbarrier.init, "
                            "fence.mbarrier_init.release.cluster, then a cluster barrier "
                            "(barrier.cluster.arrive.release / wait.acquire) between the inits "
                            "and the copy at {cur}.",
    "mbarrier.uninit": "Initialise the mbarrier at {mbar} (mbarrier.init, then "
                       "fence.mbarrier_init or a barrier so every warp sees it) before the use "
                       "at {cur}, and do not use it after mbarrier.inval.",
    "mbarrier.reinit": "Invalidate the mbarrier at {mbar} (mbarrier.inval) after its last phase "
                       "completes and before the init at {cur}, or initialise it only once.",
    "mbarrier.underflow/copy": "Make the bytes expect_tx announces for phase {phase} of the "
                               "mbarrier at {mbar} match what the copies completing on it "
                               "deliver, the copy at {cur} included (its size, or its box for a "
                               "tensor copy).",
    "mbarrier.underflow": "Phase {phase} of the mbarrier at {mbar} received more arrivals or "
                          "transaction bytes than it expected: make the count given to "
                          "mbarrier.init and expect_tx match the arrivals and bytes, including "
                          "the arrive at {cur}.",
    "mbarrier.data-access": "Touch the mbarrier at {mbar} only through mbarrier.* operations "
                            "while it is live, or mbarrier.inval it before reusing its bytes "
                            "at {cur}.",
    "deadlock": "Phase {phase} of the mbarrier at {mbar}, which the wait at {cur} needs, can "
                "no longer complete: every arrival its mbarrier.init counts and every byte its "
                "expect_tx announces must come (check early exits, divergent branches, the "
                "arrival count and the bytes the copies deliver).",
    "async.pending-read/wgmma": "The write at {cur} does not wait for the wgmma issued at {prev}: "
                                "add wgmma.wait_group 0 (or wait_group N small enough to retire "
                                "that wgmma's group) after the wgmma.commit_group that follows "
                                "{prev} and before the write at {cur}, executed by the "
                                "warpgroup that issued the wgmma (then a barrier or an mbarrier "
                                "arrive/wait if another warp writes).",
    "proxy.missing-fence/wgmma": "Add fence.proxy.async.shared::cta in the threads that write at "
                                 "{prev}, after that write and before the barrier (or mbarrier "
                                 "arrive) that orders it before the wgmma at {cur}: without it "
                                 "the wgmma may read the bytes' old values.",
}
DEFAULT_FIX = "No fix is known for kind {kind}; this is a consan diagnostic."

# Tool notes: what the diagnostic means for the check, one sentence each (same placeholders).
NOTES: dict[str, str] = {
    "tool.out-of-window": "These accesses fell outside the shadowed shared-memory window and "
                          "were not checked.",
    "tool.no-slot": "A CTA found no free shadow slot and ran unchecked.",
    "tool.remote-smem": "These accesses reach another CTA's shared memory in the cluster "
                        "(distributed shared memory), which consan does not check yet.",
    "tool.tensor-map-unknown": "The tensor map of the TMA copy at {cur} is not one consan "
                               "knows, so its footprint was guessed ({bytes}: a load takes the "
                               "bytes its mbarrier phase still expects, a store is not "
                               "checked); build the map with consan.tensor_map() (or "
                               "cuTensorMapEncodeTiled under consan run), or declare it with "
                               "consan.register_tensor_map().",
    "tool.clock-overflow": "A clock of this CTA passed the 8 M ticks the shared-memory "
                           "tables keep, so the write at {cur} was not recorded and later "
                           "findings of the CTA may be wrong; run with CONSAN_VC_SMEM=0 (the "
                           "tables in device memory keep 32-bit clocks).",
    "tool.mbarrier-table-full": "The mbarrier init at {cur} found no free entry among the "
                                "32 consan keeps per CTA (one per offset an mbarrier was "
                                "initialised at, kept after mbarrier.inval), so this "
                                "mbarrier, and any other without an entry, runs unchecked: "
                                "its operations and the copies that complete on it run as "
                                "written, but what it orders is not ordered for consan: "
                                "reads of the bytes copied through it are reported as "
                                "uninit.read, and accesses it orders may be reported as "
                                "races.",
    "tool.remote-copy-lost": "The multicast at {cur} found the mailbox of CTA rank {prev_rank} "
                             "full for two seconds (that CTA ran no probe meanwhile), so the "
                             "bytes it writes there were not recorded: findings there about "
                             "them may be missing or wrong.",
}
DEFAULT_NOTE = "The device checker emitted a record this decoder does not understand."
