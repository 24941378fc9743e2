"""mbarrier phases as the proof before launch follows them (docs/model.md, "Kernels proven
before launch", mbarriers).

The host run executes the threads in one order; the GPU may interleave warps between two
CTA barriers in any other. A phase is followed only where that order cannot matter:

- an mbarrier is initialised by one thread certain to run, and used by other warps only
  after a CTA barrier;
- within one interval (between CTA barriers) the operations on one phase either all come
  from one warp, or none of them is an `expect_tx` apart from an arrival (arrivals, with
  the bytes they expect, and copies only move the phase towards completion, so it
  completes after the last of them in any order);
- a phase completes when its pending arrivals reach zero and the copies issued on it
  deliver exactly the bytes it expects (more would complete it before all of them land);
- a wait for a parity returns only once that phase completed; the next phase must not be
  able to complete before the wait ran: in a later interval, or after an arrival that
  happens after the wait (a wait that could miss its phase is refused);
- the arrivals of a phase release what their threads did before them, and a wait that saw
  it complete acquires that (vector clocks over the threads, kept by the prover);
- a copy's bytes are visible to a warp from its wait that saw the copy's phase complete.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .proof_rules import Access, Refused

BYTES = 8  # an mbarrier object


@dataclass
class Op:
    """An operation on an mbarrier: its line, the threads running it (a mask over the
    block) and their warps, the interval and host step, and each thread's causal clock
    (what happened before it in time; a row per running thread, its own step on the
    diagonal)."""

    line: int
    threads: np.ndarray
    warps: set[int]
    interval: int
    step: int
    clock: np.ndarray


@dataclass
class _Phase:
    pending: int
    expected: int = 0  # transaction bytes expected
    issued: int = 0  # bytes of the copies issued on it
    copies: list[Access] = field(default_factory=list)
    warps: dict[int, set[int]] = field(default_factory=dict)  # interval -> warps acting
    expecting: set[int] = field(default_factory=set)  # intervals with an expect_tx
    release: np.ndarray | None = None  # the join of its arrivals' clocks
    causal: np.ndarray | None = None  # and of their causal clocks and its copies' issues
    arrived: list[tuple[np.ndarray, int, int]] = field(default_factory=list)  # (threads,
    # step, interval) of each arrival
    remote: bool = False  # another CTA of the cluster took part in it


@dataclass
class _Done:
    copies: list[Access]
    interval: int
    release: np.ndarray | None
    causal: np.ndarray | None
    arrived: list[tuple[np.ndarray, int, int]]
    remote: bool = False
    # (threads, interval, step) of each wait that saw it complete
    waits: list[tuple[np.ndarray, int, int]] = field(default_factory=list)


def after_arrivals(op: Op, arrived: list[tuple[np.ndarray, int, int]], what: str,
                   earlier: str) -> None:
    """`op` must happen after each of the `arrived` (threads, step, interval): by a CTA
    barrier between them, or by the causal clocks; else it may `what` first."""
    for threads, step, k in arrived:
        if k == op.interval and (op.clock[:, threads] < step).any():
            raise Refused(f"line {op.line}: it may {what} before the arrival of thread "
                          f"{int(np.nonzero(threads)[0][0])} completes {earlier}")


@dataclass
class MBarrier:
    """One mbarrier object: its arrival count and the phases run so far."""

    at: int  # byte offset where the proof puts it
    count: int
    warp: int  # the warp that initialised it
    interval: int
    line: int
    valid: bool = True
    done: list[_Done] = field(default_factory=list)
    cur: _Phase = field(init=False)  # the phase in progress
    early: list[tuple[np.ndarray, int, int]] = field(default_factory=list)  # before any

    def __post_init__(self) -> None:
        self.cur = _Phase(self.count)

    def use(self, line: int, warp: int, interval: int) -> None:
        if not self.valid:
            raise Refused(f"line {line}: an mbarrier used after its `mbarrier.inval` (line "
                          f"{self.line})")
        if warp != self.warp and interval == self.interval:
            raise Refused(f"line {line}: warp {warp} uses the mbarrier that warp {self.warp} "
                          f"initialises at line {self.line} with no CTA barrier between")

    def _act(self, op: Op, expect: bool) -> None:
        ph, line, interval = self.cur, op.line, op.interval
        acting = ph.warps.setdefault(interval, set())
        acting |= op.warps
        if expect:
            ph.expecting.add(interval)
        if len(acting) > 1 and interval in ph.expecting:
            raise Refused(f"line {line}: warps {sorted(acting)} act on one mbarrier phase "
                          "between the same CTA barriers, one adding expected bytes: the "
                          "phase may complete early in another order of the warps")
        if self.done:  # (an operation on a later phase must follow the previous one's
            # completion, else it may count towards it)
            self._after(op, self.done[-1], "act on the mbarrier")

    @staticmethod
    def _after(op: Op, d: _Done, what: str) -> None:
        """`op` must happen after phase `d` completed: after each of its arrivals, and where
        it had copies, after a wait that saw them land (by a barrier between, or by the
        clocks)."""
        line, interval, clock = op.line, op.interval, op.clock
        after_arrivals(op, d.arrived, what, "an earlier phase")
        if d.copies and not any(k < interval or (clock[:, t] >= step).any(axis=1).all()
                                for t, k, step in d.waits):
            raise Refused(f"line {line}: it may {what} before the copies of an earlier phase "
                          "landed (no wait that saw them is ordered before)")

    def arrive(self, op: Op, arrivals: int, tx: int, release: np.ndarray,
               causal: np.ndarray) -> None:
        """`arrivals`, after adding `tx` expected bytes in all (arrive.expect_tx), releasing
        the clock `release` (`causal`: the causal one). (The bytes are expected together
        with the arrival: the phase cannot complete before it, so they need not come from
        the phase's only warp.)"""
        self._act(op, False)
        r = self.cur.release
        self.cur.release = release.copy() if r is None else np.maximum(r, release)
        self._follow(causal)
        if arrivals > self.cur.pending:
            raise Refused(f"line {op.line}: {arrivals} arrivals on an mbarrier phase that "
                          f"expects {self.cur.pending} more")
        self.cur.arrived.append((op.threads, op.step, op.interval))
        self.cur.expected += tx
        self.cur.pending -= arrivals
        self._settle(op.line, op.interval)

    def expect(self, op: Op, tx: int) -> None:
        self._act(op, tx > 0)
        self.cur.expected += tx
        self._settle(op.line, op.interval)

    def _follow(self, causal: np.ndarray) -> None:
        c = self.cur.causal
        self.cur.causal = causal.copy() if c is None else np.maximum(c, causal)

    def copy(self, op: Op, a: Access, nbytes: int, issued: np.ndarray) -> None:
        """A copy of `nbytes` on the phase; `issued`: the causal clock its issue followed
        (what its issuers had acquired, and their last waits, whose return the issue waited
        for); the phase completes after it."""
        self._act(op, False)
        self._follow(issued)
        self.cur.issued += nbytes
        self.cur.copies.append(a)
        self._settle(op.line, op.interval)

    def _settle(self, line: int, interval: int) -> None:
        ph = self.cur
        if ph.pending or ph.issued < ph.expected:
            return
        if ph.issued > ph.expected:
            raise Refused(f"line {line}: copies deliver {ph.issued} bytes to an mbarrier "
                          f"phase that expects {ph.expected}: it may complete before they "
                          "all land")
        # (the phase completes: a wait for the one before it must have run, ordered first,
        # by a barrier or by an arrival of this phase that happens after it)
        for threads, k, step in self.done[-1].waits if self.done else self.early:
            if k == interval and (ph.causal is None or (ph.causal[threads] < step).any()):
                w = int(np.nonzero(threads)[0][0]) // 32
                raise Refused(f"line {line}: the mbarrier's next phase may complete "
                              f"before warp {w}'s wait for the previous one runs")
        self.done.append(_Done(ph.copies, interval, ph.release, ph.causal, ph.arrived,
                               ph.remote))
        self.cur = _Phase(self.count)

    def ready(self, parity: int) -> bool:
        """Whether a wait for `parity` returns now."""
        return parity % 2 != len(self.done) % 2

    def wait(self, op: Op, parity: int
             ) -> tuple[list[Access], np.ndarray | None, np.ndarray | None]:
        """A wait of `op.threads` that returns once the phase of `parity` completed: the
        copies whose bytes it makes visible, what the phase's arrivals released, and what
        happened before the phase completed. It is
        credited with the last phase of its parity the host run completed: that must be
        the one it sees on the GPU, so the phase before it must have completed before the
        wait runs (else the wait may see the one two back, of the same parity, complete)."""
        k = len(self.done)  # the phase in progress
        if not self.ready(parity):
            raise Refused(f"line {op.line}: a wait for an mbarrier phase (parity {parity}) "
                          "that nothing before it in the program completes")
        if k >= 2:
            self._after(op, self.done[-2], "wait for the mbarrier's phase")
        threads, interval, step = op.threads.copy(), op.interval, op.step
        if k == 0:  # (parity 1 before any phase completed: returns at once)
            self.early.append((threads, interval, step))
            return [], None, None
        d = self.done[-1]
        d.waits.append((threads, interval, step))
        return d.copies, d.release, d.causal

    def inval(self, line: int) -> None:
        if self.cur.expected or self.cur.issued or self.cur.pending != self.count:
            raise Refused(f"line {line}: `mbarrier.inval` of an mbarrier whose phase is "
                          "under way")
        self.valid = False
