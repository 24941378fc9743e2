"""An access probe called by every lane that reaches it, those that skip the access echoing.

A probe called by part of a warp leaves the warp split for the rest of the kernel
(docs/model.md, *Probes called from a branch*): `@p st.shared` with `p` true in one lane,
an access in a converted `if (lane == 0)` region (converge.py), the lanes whose inline
test failed in the phase-mode fast path (fast_path.py). So such a call is made by every
lane of the group that reaches it: the lanes that do not make the access pass the address
of the lowest lane that does and abi.INFO_ECHO in the info word, the same access by the
same warp, which changes no verdict (a record leaves them out of its lanes); where no lane
makes it, none calls. Costs a ballot and two shuffles where a call is made.
"""

from __future__ import annotations

from . import abi


def code(on: str, mask: str, addr: str, out: str, info: int | str, info_out: str,
         none: str, lo: str, hi: str) -> list[str]:
    """PTX for a call made by the lanes in `mask` together: `out` (b64) their address
    (`addr`) where the predicate `on` holds, else the lowest such lane's; `info_out` (b32)
    `info` where `on` holds, else `info` | INFO_ECHO; the predicate `none` where no lane
    of `mask` has `on` (then the call is skipped). `lo`, `hi`, b32 scratch; `on` a plain
    predicate register (not negated)."""
    echo = [f"selp.b32 {info_out}, {info}, {info | abi.INFO_ECHO}, {on};"] \
        if isinstance(info, int) else [f"or.b32 {lo}, {info}, {abi.INFO_ECHO};",
                                       f"selp.b32 {info_out}, {info}, {lo}, {on};"]
    return [f"vote.sync.ballot.b32 {lo}, {on}, {mask};",
            f"setp.eq.u32 {none}, {lo}, 0;",
            f"brev.b32 {lo}, {lo};",
            f"bfind.shiftamt.u32 {lo}, {lo};",  # (the lowest lane that makes it)
            f"mov.b64 {{{hi}, {info_out}}}, {addr};",
            f"shfl.sync.idx.b32 {hi}, {hi}, {lo}, 31, {mask};",
            f"shfl.sync.idx.b32 {info_out}, {info_out}, {lo}, 31, {mask};",
            f"mov.b64 {out}, {{{hi}, {info_out}}};",
            f"@{on} mov.b64 {out}, {addr};",
            *echo]
