"""mbarrier phases as the proof before launch follows them (docs/model.md, "Kernels proven
before launch", mbarriers).

The host run executes the threads in one order; the GPU may interleave warps between two
CTA barriers in any other. A phase is followed only where that order cannot matter:

- an mbarrier is initialised by one thread certain to run, and used by other warps only
  after a CTA barrier;
- within one interval (between CTA barriers) the operations on one phase either all come
  from one warp, or none of them adds expected bytes (arrivals and copies only move the
  phase towards completion, so it completes after the last of them in any order);
- a phase completes when its pending arrivals reach zero and the copies issued on it
  deliver exactly the bytes it expects (more would complete it before all of them land);
- a wait for a parity returns only once that phase completed; the next phase must not be
  able to complete before the wait ran (a wait that could miss its phase is refused);
- a copy's bytes are visible to a warp from its wait that saw the copy's phase complete.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .proof_rules import Access, Refused

BYTES = 8  # an mbarrier object


@dataclass
class _Phase:
    pending: int
    expected: int = 0  # transaction bytes expected
    issued: int = 0  # bytes of the copies issued on it
    copies: list[Access] = field(default_factory=list)
    warps: dict[int, set[int]] = field(default_factory=dict)  # interval -> warps acting
    expecting: set[int] = field(default_factory=set)  # intervals with an expect_tx


@dataclass
class _Done:
    copies: list[Access]
    interval: int
    waits: list[tuple[int, int]] = field(default_factory=list)  # (warp, interval)


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
    cur: _Phase = field(default_factory=lambda: _Phase(0))
    early: list[tuple[int, int]] = field(default_factory=list)  # waits before any phase

    def __post_init__(self) -> None:
        self.cur = _Phase(self.count)

    def use(self, line: int, warp: int, interval: int) -> None:
        if not self.valid:
            raise Refused(f"line {line}: an mbarrier used after its `mbarrier.inval` (line "
                          f"{self.line})")
        if warp != self.warp and interval == self.interval:
            raise Refused(f"line {line}: warp {warp} uses the mbarrier that warp {self.warp} "
                          f"initialises at line {self.line} with no CTA barrier between")

    def _act(self, line: int, warps: set[int], interval: int, expect: bool) -> None:
        ph = self.cur
        acting = ph.warps.setdefault(interval, set())
        acting |= warps
        if expect:
            ph.expecting.add(interval)
        if len(acting) > 1 and interval in ph.expecting:
            raise Refused(f"line {line}: warps {sorted(acting)} act on one mbarrier phase "
                          "between the same CTA barriers, one adding expected bytes: the "
                          "phase may complete early in another order of the warps")

    def arrive(self, line: int, warps: set[int], interval: int, arrivals: int,
               tx: int = 0) -> None:
        """`arrivals`, after adding `tx` expected bytes in all (arrive.expect_tx)."""
        self._act(line, warps, interval, tx > 0)
        if arrivals > self.cur.pending:
            raise Refused(f"line {line}: {arrivals} arrivals on an mbarrier phase that "
                          f"expects {self.cur.pending} more")
        self.cur.expected += tx
        self.cur.pending -= arrivals
        self._settle(line, interval)

    def expect(self, line: int, warps: set[int], interval: int, tx: int) -> None:
        self._act(line, warps, interval, tx > 0)
        self.cur.expected += tx
        self._settle(line, interval)

    def copy(self, line: int, warps: set[int], interval: int, a: Access, nbytes: int) -> None:
        self._act(line, warps, interval, False)
        self.cur.issued += nbytes
        self.cur.copies.append(a)
        self._settle(line, interval)

    def _settle(self, line: int, interval: int) -> None:
        ph = self.cur
        if ph.pending or ph.issued < ph.expected:
            return
        if ph.issued > ph.expected:
            raise Refused(f"line {line}: copies deliver {ph.issued} bytes to an mbarrier "
                          f"phase that expects {ph.expected}: it may complete before they "
                          "all land")
        # (the phase completes: a wait for the one before it must have run, ordered first)
        for w, k in self.done[-1].waits if self.done else self.early:
            if k == interval and ph.warps.get(interval, set()) - {w}:
                raise Refused(f"line {line}: the mbarrier's next phase may complete "
                              f"before warp {w}'s wait for the previous one runs")
        self.done.append(_Done(ph.copies, interval))
        self.cur = _Phase(self.count)

    def wait(self, line: int, parity: int, warp: int, interval: int) -> list[Access]:
        """A wait that returns once the phase of `parity` completed: the copies whose bytes
        it makes visible."""
        k = len(self.done)  # the phase in progress
        if parity % 2 == k % 2:
            raise Refused(f"line {line}: a wait for an mbarrier phase (parity {parity}) that "
                          "nothing before it in the program completes")
        if k == 0:  # (parity 1 before any phase completed: returns at once)
            self.early.append((warp, interval))
            return []
        self.done[-1].waits.append((warp, interval))
        return self.done[-1].copies

    def inval(self, line: int) -> None:
        if self.cur.expected or self.cur.issued or self.cur.pending != self.count:
            raise Refused(f"line {line}: `mbarrier.inval` of an mbarrier whose phase is "
                          "under way")
        self.valid = False
