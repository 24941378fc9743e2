"""Named barriers as the proof before launch follows them (docs/model.md, "Kernels proven
before launch", named barriers).

`bar.sync id, n` and `bar.arrive id, n` on a barrier other than 0 order only the warps
that take part: a generation of barrier `id` completes once `n` threads (whole warps) have
arrived; a `bar.sync` waits for the generation its warp arrived in and acquires what that
generation's arrivals released, a `bar.arrive` releases and goes on. The hardware counts
arrivals, not generations, so the generation the host run gives each arrival is the one
it has on the GPU only where every arrival counted in a generation happens after each
arrival of the generation before it (a CTA barrier between them, or the causal clocks):
then the earlier generation's `n` arrivals come first in any order of the warps, and it
completes at the last of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .proof_mbarrier import Op, after_arrivals
from .proof_rules import Refused

IDS = 16  # barriers 0-15 of a CTA (0 is the CTA's __syncthreads: not followed here)


@dataclass
class Generation:
    pending: int  # threads still to arrive
    release: np.ndarray | None = None  # the join of its arrivals' clocks
    causal: np.ndarray | None = None  # and of their causal clocks
    arrived: list[tuple[np.ndarray, int, int]] = field(default_factory=list)  # (threads,
    # step, interval) of each arrival


@dataclass
class NamedBarrier:
    """One barrier id of the CTA: its thread count and the generations run so far."""

    ident: int
    count: int
    line: int  # where it was first used with that count
    done: list[Generation] = field(default_factory=list)
    cur: Generation = field(init=False)

    def __post_init__(self) -> None:
        self.cur = Generation(self.count)

    def arrive(self, op: Op, count: int, release: np.ndarray, causal: np.ndarray) -> int:
        """The arrival of `op.threads` with thread count `count`, releasing `release`
        (`causal`: the causal clock); the generation it counts in."""
        if count != self.count:
            raise Refused(f"line {op.line}: barrier {self.ident} with a thread count of "
                          f"{count}, and of {self.count} at line {self.line}")
        if self.done:
            after_arrivals(op, self.done[-1].arrived, f"arrive at barrier {self.ident}",
                           "the generation before (the hardware would count it there)")
        n = int(op.threads.sum())
        g = self.cur
        if n > g.pending:  # (whole warps: only a count that is not a multiple of 32)
            raise Refused(f"line {op.line}: {n} threads arrive at barrier {self.ident}, "
                          f"whose generation expects {g.pending} more")
        g.release = release.copy() if g.release is None else np.maximum(g.release, release)
        g.causal = causal.copy() if g.causal is None else np.maximum(g.causal, causal)
        g.arrived.append((op.threads, op.step, op.interval))
        g.pending -= n
        k = len(self.done)
        if not g.pending:
            self.done.append(g)
            self.cur = Generation(self.count)
        return k
