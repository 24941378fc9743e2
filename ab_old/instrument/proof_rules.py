"""The rules a kernel's host run must pass to be proven race-free (docs/model.md, "Kernels
proven before launch"), applied to the accesses `static_proof.py` recorded.

The CTA barriers cut the run into intervals; an access by a warp lives in one interval, an
asynchronous one (a cp.async write by the warp's copy unit, a wgmma read by its warpgroup's
unit) from its issue to the wait that retires it, across the intervals between. Two
accesses to one granule, one writing, must be ordered: by a barrier between them (one's
last interval before the other's first), or by the program order of one warp (the lanes of
a warp are one logical thread): a warp's own accesses never race, and a copy issued by a
warp is ordered with that warp's accesses before the issue and after the wait that retires
it; a wgmma, with a warp's accesses after that warp's wait retired it. The checker judges a
wgmma operand's chunks from the clocks of the warpgroup's four warps in turn, not the
issuer's alone: a store of one of them before the issue, and any copy, are ordered with a
wgmma only by a barrier.

A shared atomic (`atom`, `red`) is a write, and a read of its bytes too, except that two
atomics never conflict with each other (as in the checker).

Every byte read must have been written before by a write certain to run: in an earlier
interval, or earlier by the same thread, or by its warp while converged; a copy counts as a
write at its wait. A wgmma reads only bytes written in intervals before its issue, and a
byte whose last write was a warp's generic store needs a `fence.proxy.async` of that warp
after the store, in an interval before the issue.
"""

from __future__ import annotations

import bisect
import copy
import hashlib
import math
from dataclasses import dataclass, replace

import numpy as np

from .abi import GRANULE_BYTES as GRANULE

AGENT_WARP, AGENT_COPY, AGENT_WGMMA = 0, 1, 2
NEVER = 1 << 62  # the step of a wait that never came
_WHAT = {AGENT_WARP: "access", AGENT_COPY: "cp.async", AGENT_WGMMA: "wgmma"}


def _what(a: Access) -> str:
    return {"mbar": "bulk copy", "bulk": "bulk store"}.get(a.queue) or _WHAT[a.agent]


class Refused(Exception):
    """Why a kernel is not proven (a sentence naming its lines)."""


def deepcopy_fields(obj: object, memo: dict) -> object:
    """A deep copy of a record of numbers, strings, tuples and numeric arrays (what the
    proof's run holds a lot of), the same objects shared as `copy.deepcopy` shares them:
    copied field by field, a numeric array by `ndarray.copy`, anything else by deepcopy.
    copy.deepcopy's generic path took 0.45 of the 2.0 s Triton's causal attention proof
    spent on the 2-core CPU machine (14 runs copied at its forks)."""
    new = object.__new__(type(obj))
    memo[id(obj)] = new
    fields = {}
    for k, v in vars(obj).items():
        if v is None or isinstance(v, (bool, int, str)):
            fields[k] = v
        elif isinstance(v, np.ndarray) and v.dtype != object:
            got = memo.get(id(v))
            if got is None:
                got = memo[id(v)] = v.copy()
            fields[k] = got
        else:
            fields[k] = copy.deepcopy(v, memo)
    new.__dict__.update(fields)
    return new


@dataclass
class Access:
    """One shared-memory instruction as the threads that may run it ran it (a row per
    thread; for a wgmma, a row per 16-byte chunk of its operands, all of its warpgroup)."""

    interval: int  # how many CTA barriers precede it
    thread: np.ndarray  # the threads that may run it
    warp: np.ndarray  # their warps
    start: np.ndarray  # their first bytes
    size: int
    write: bool
    certain: np.ndarray  # of those threads, the ones certain to run it
    converged: np.ndarray  # of those threads, the ones whose warp runs it converged
    line: int
    seq: int = 0  # the host step that ran it (program order within a warp)
    agent: int = AGENT_WARP
    until: np.ndarray | None = None  # async: the interval of the wait that retires each row
    until_seq: np.ndarray | None = None  # and that wait's step (NEVER: not retired)
    group: np.ndarray | None = None  # async: the commit group of each row
    idem: bool = False  # a store the checker skips where its own instruction wrote last
    rep: np.ndarray | None = None  # a store: its warp's replica tag per row (-1: none)
    queue: str = ""  # async: what retires it ("cp", "bulk", "wgmma"; "mbar": waits)
    # a copy completing on an mbarrier: warp -> the step of its wait that saw the phase,
    # where the whole warp waited (its own view of the bytes: rule 2); and per thread of
    # the block, the step of its wait (NEVER: none)
    seen: dict[int, int] | None = None
    seen_by: np.ndarray | None = None
    cid: np.ndarray | None = None  # each row's thread's clock (happens-before) at the access
    elected: bool = False  # run under an `elect.sync` predicate (by whichever lane the GPU elects)
    atomic: bool = False  # a shared atomic: a write that reads its bytes first

    __deepcopy__ = deepcopy_fields

    def end(self) -> tuple[np.ndarray, np.ndarray]:
        """(last interval, last step) of each row."""
        if self.until is None:
            n = len(self.thread)
            return np.full(n, self.interval), np.full(n, self.seq, dtype=np.int64)
        return self.until, self.until_seq  # type: ignore[return-value]


# rows (an access's threads times the granules it may touch) the rules judge at most: the
# largest proven kernel of the tests, Triton's matmul at K = 8,192, judged 1,327,104 (2.3 s
# of host time in all on the 2-core machine); a grid-stride histogram's atomics followed
# trip by trip for 2,048 trips, each over its 1 KiB of bins, would be 134 million
MAX_ROWS = 2_500_000
TOO_MANY = "rows of accesses to judge on the host"


def rows_of(a: Access) -> int:
    """An access's rows, as MAX_ROWS counts them."""
    return len(a.thread) * (a.size // GRANULE + 1)


def judge(accesses: list[Access], nwarps: int, fences: list[tuple[int, int, int]],
          bar_steps: list[int] | tuple[int, ...] = (), vcs: np.ndarray | None = None,
          clean: set[bytes] | None = None) -> None:
    """Raise Refused unless the accesses pass both rules; `fences`: the (warp, interval,
    step) of every `fence.proxy.async` a warp was certain to run; `bar_steps`: the step of
    each CTA barrier; `vcs`: the clocks of the accesses' `cid`s (happens-before through
    mbarriers; docs/model.md, "mbarriers and bulk copies"); `clean`: the digests of the
    intervals rule 1 passed in the proof's other runs (_conflicts), added to."""
    accesses = [a for a in accesses if len(a.thread)]  # (a guard no thread passes: none)
    if not accesses:
        return
    unit = _unit(accesses)
    _conflicts(accesses, max(unit, GRANULE), vcs, clean)
    _written_first(accesses, nwarps, fences, unit, list(bar_steps), vcs)


def _unit(accesses: list[Access]) -> int:
    """The widest unit every access starts and ends on (at most 16 bytes): judging in it
    is judging byte by byte, with fewer rows."""
    g = 16
    for a in accesses:
        g = math.gcd(g, a.size, int(np.gcd.reduce(a.start.astype(np.int64), initial=0)))
    return max(g, 1)


def _thread_rows(accesses: list[Access], unit: int) -> dict[str, np.ndarray]:
    """One row per access and thread: the columns the rules compare, and the first unit and
    how many units it touches."""
    parts: dict[str, list[np.ndarray]] = {k: [] for k in (
        "acc", "first", "span", "warp", "k1", "s1", "conv", "rep", "thr", "cid")}
    for i, a in enumerate(accesses):
        n = len(a.thread)
        first = a.start // unit
        k1, s1 = a.end()
        parts["acc"].append(np.full(n, i))
        parts["first"].append(first)
        parts["span"].append((a.start + a.size - 1) // unit - first + 1)
        parts["warp"].append(a.warp)
        parts["k1"].append(k1)
        parts["s1"].append(s1.astype(np.int64))
        parts["conv"].append(a.converged)
        parts["rep"].append(a.rep if a.rep is not None else np.full(n, -1))
        parts["thr"].append(a.thread)
        parts["cid"].append(a.cid if a.cid is not None else np.zeros(n, np.int64))
    t = {k: np.concatenate(v) for k, v in parts.items()}
    for k, f, dt in (("write", lambda a: a.write, bool), ("agent", lambda a: a.agent, None),
                     ("k0", lambda a: a.interval, None), ("s0", lambda a: a.seq, np.int64),
                     ("mbar", lambda a: a.seen_by is not None, bool),
                     ("atom", lambda a: a.atomic, bool)):
        t[k] = np.array([f(a) for a in accesses], dtype=dt)[t["acc"]]
    return t


def _ranges(counts: np.ndarray) -> np.ndarray:
    """0..c-1 for each count c, concatenated."""
    total = int(counts.sum())
    ends = np.cumsum(counts)
    return np.arange(total) - np.repeat(ends - counts, counts)


def _rank(cols: list[np.ndarray]) -> np.ndarray:
    """Each row's dense rank among the distinct tuples of `cols` (the last column the most
    significant, as np.lexsort orders them)."""
    order = np.lexsort(cols)
    new = np.ones(len(order), dtype=bool)
    new[1:] = np.logical_or.reduce([s[1:] != s[:-1] for s in (c[order] for c in cols)])
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.cumsum(new) - 1
    return rank


def _conflicts(accesses: list[Access], unit: int, vcs: np.ndarray | None = None,
               clean: set[bytes] | None = None) -> None:
    """Rule 1: no two unordered accesses to one granule, one of them writing.

    A row per (access, thread, interval it lives in, unit), sorted by interval and unit, the
    rows alike in everything judged kept once (the lanes of a warp reading one unit at one
    step are one row); then each pair of rows of one interval and unit is looked at. What a
    row shares with its thread's other rows is ranked once per thread row, and the rank and
    the row's steps packed in one integer (two sort columns in place of ten).

    The rule looks at each interval alone, so an interval whose rows are those of one
    another run of the proof judged (`clean`: digests of such intervals, which this call
    adds to) is not judged again: a fork's twin shares its run's intervals up to the
    fork. Unless the mbarriers' clocks take part (they differ between runs)."""
    clocked = vcs is not None and len(vcs) > 1  # (lanes of a warp may differ: kept apart)
    t = _thread_rows(accesses, unit)
    sid = _rank([t["conv"], t["write"], t["warp"], t["agent"], t["rep"], t["atom"],
                 *((t["thr"], t["cid"]) if clocked else ())])
    lives = t["k1"] - t["k0"] + 1
    tk = np.repeat(np.arange(len(sid)), lives)  # a row per interval it lives in: its thread row
    k = t["k0"][tk] + _ranges(lives)
    lo = np.where(k == t["k0"][tk], t["s0"][tk], -1)
    hi = np.where(k == t["k1"][tk], t["s1"][tk], NEVER)
    digests: list[bytes] = []
    if clean is not None and not clocked:
        tk, k, lo, hi, digests = _unjudged(t, unit, tk, k, lo, hi, clean)
    span = t["span"][tk]
    row = np.repeat(np.arange(len(tk)), span)  # a row per unit: its interval row
    tr = tk[row]
    units = t["first"][tr] + _ranges(span)
    key = k[row] * (int(units.max(initial=0)) + 1) + units
    lo, hi = lo[row], hi[row]
    steps = np.concatenate([t["s0"], t["s1"][t["s1"] != NEVER]])
    top = int(steps.max(initial=0)) + 2  # (lo + 1 and hi in 0..top-1, NEVER as top - 1)
    if int(sid.max(initial=0)) < (1 << 62) // (top * top) and int(steps.min(initial=0)) >= 0:
        cols = [(sid[tr] * top + lo + 1) * top + np.where(hi == NEVER, top - 1, hi), key]
    else:
        cols = [hi, lo, sid[tr], key]
    order = np.lexsort(cols)
    cols = [c[order] for c in cols]
    keep = np.ones(len(order), dtype=bool)
    keep[1:] = np.logical_or.reduce([c[1:] != c[:-1] for c in cols])
    order, key = order[keep], cols[-1][keep]
    lo, hi = lo[order], hi[order]
    agent, warp, write, conv, rep, acc, thr, cid, mbar, atom = (
        t[c][tr[order]] for c in ("agent", "warp", "write", "conv", "rep", "acc", "thr",
                                  "cid", "mbar", "atom"))
    seen = _seen_by(accesses, vcs) if clocked else None
    n = len(key)
    d = 1
    while d < n:
        i = np.nonzero(key[:-d] == key[d:])[0]
        if not len(i):
            break
        j = i + d
        bad = (write[i] | write[j]) & _unordered(agent[i], agent[j], warp[i], warp[j],
                                                  conv[i] & conv[j], lo[i], hi[i], lo[j],
                                                  hi[j], mbar[i], mbar[j])
        # (replicas: two warps' runs of one store, the same bytes at the same addresses)
        bad &= ~(write[i] & write[j] & (rep[i] >= 0) & (rep[i] == rep[j]))
        bad &= ~(atom[i] & atom[j])  # (two atomics never conflict)
        if bad.any() and seen is not None:  # (ordered through mbarriers)
            assert vcs is not None
            for x, y in ((i, j), (j, i)):
                b = np.nonzero(bad)[0]
                bad[b] &= ~_happens_before(x[b], y[b], acc, thr, cid, lo, hi, seen, vcs)
        if bad.any():
            x, y = i[bad][0], j[bad][0]
            raise _race(accesses, int(acc[x]), int(acc[y]), int(units[order[x]]) * unit, unit)
        d += 1
    if clean is not None:
        clean.update(digests)


# what an interval's digest is made of: each row's columns that rule 1 looks at
_DIGESTED = ("conv", "write", "warp", "agent", "rep", "atom", "mbar", "first", "span")


def _unjudged(t: dict[str, np.ndarray], unit: int, tk: np.ndarray, k: np.ndarray,
              lo: np.ndarray, hi: np.ndarray, clean: set[bytes]) -> tuple:
    """The interval rows (thread row `tk`, interval `k`, steps `lo`, `hi`) of the intervals
    whose digest is not in `clean`, and those digests. The rows of an interval are digested
    in the order the run made them: the same rows in another order are judged again."""
    order = np.argsort(k, kind="stable")
    cols = np.stack([*(t[c][tk[order]].astype(np.int64) for c in _DIGESTED),
                     lo[order], hi[order]], axis=1)
    ks, starts = np.unique(k[order], return_index=True)
    bounds = [*starts.tolist(), len(order)]
    fresh = np.zeros(int(k.max(initial=-1)) + 1, dtype=bool)
    digests = []
    for i, kk in enumerate(ks.tolist()):
        h = hashlib.blake2b(cols[bounds[i]:bounds[i + 1]].tobytes(), digest_size=16,
                            person=unit.to_bytes(8, "little")).digest()
        if h not in clean:
            fresh[kk] = True
            digests.append(h)
    keep = fresh[k]
    return tk[keep], k[keep], lo[keep], hi[keep], digests


def _seen_by(accesses: list[Access], vcs: np.ndarray) -> np.ndarray:
    """Per access and thread, the step of the thread's wait that saw it complete (a copy on
    an mbarrier; NEVER elsewhere)."""
    out = np.full((len(accesses), vcs.shape[1]), NEVER, dtype=np.int64)
    for i, a in enumerate(accesses):
        if a.seen_by is not None:
            out[i] = a.seen_by
    return out


def _happens_before(x, y, acc, thr, cid, lo, hi, seen, vcs) -> np.ndarray:
    """Whether row x ends before row y starts by the mbarriers' clocks: y's thread's clock
    at y holds x's thread at x's end, or, x a copy on an mbarrier, a thread whose wait saw
    x complete at or before a step that clock holds (its own, at y's start)."""
    # (y's clock is its thread's vector with its own entry raised to y's step: a thread's
    # vector never holds itself past its current step. The part of `via` that does not
    # look at y's own entry depends only on (x's access, y's clock): made once per pair)
    own = thr[x] == thr[y]
    mine = hi[x] < np.where(own, lo[y], vcs[cid[y], thr[x]])
    pairs, inverse = np.unique(np.stack([acc[x], cid[y]]), axis=1, return_inverse=True)
    inverse = inverse.ravel()
    waited = (seen[pairs[0]] < NEVER).any(axis=1)
    via = (seen[pairs[0]] <= vcs[pairs[1]]).any(axis=1)[inverse] | \
        (seen[acc[x], thr[y]] <= lo[y])
    return np.where(waited[inverse], via, mine)


def _unordered(ai, aj, wi, wj, conv, loi, hii, loj, hij, mbi=False, mbj=False) -> np.ndarray:
    """Whether two accesses living in one interval are unordered (see the module's text)."""
    warps = (ai == AGENT_WARP) & (aj == AGENT_WARP)
    wg_i, wg_j = ai == AGENT_WGMMA, aj == AGENT_WGMMA
    # a copy and a warp's access (or another copy) of one warp: by its program order (a
    # copy on an mbarrier ends at a wait of any thread: ordered after it only by the
    # clocks, as the issuer may never wait)
    same = (wi == wj) & conv & ~wg_i & ~wg_j
    ordered = same & (((hii < loj) & ~mbi) | ((hij < loi) & ~mbj))
    # a wgmma and a warp of its warpgroup (a wgmma row's warp is its warpgroup's first):
    # only after the warp's wait retired it; a store before the issue is judged by the
    # warpgroup's other warps too, which have not seen it
    member = (wg_i ^ wg_j) & np.where(wg_i, aj == AGENT_WARP, ai == AGENT_WARP) & \
        (wi // 4 == wj // 4) & conv
    ordered |= member & np.where(wg_i, hii < loj, hij < loi)
    return np.where(warps, wi != wj, ~ordered)


def _race(accesses: list[Access], x: int, y: int, byte: int, unit: int) -> Refused:
    """The refusal naming accesses x and y, both touching `byte`."""
    ax, ay = accesses[x], accesses[y]
    if ax.agent == ay.agent == AGENT_WARP:
        k = ax.interval
        lines = sorted({a.line for a in accesses if a.agent == AGENT_WARP and a.interval == k
                        and ((a.start < byte + unit) & (byte < a.start + a.size)).any()})
        return Refused(f"lines {', '.join(map(str, lines))}: two warps touch the granule at "
                       f"byte {byte} between the same barriers, one of them writing")
    first, second = sorted((ax, ay), key=lambda a: (a.interval, a.seq))
    return Refused(f"lines {first.line}, {second.line}: the {_what(first)} at line "
                   f"{first.line} and the {_what(second)} at line {second.line} both "
                   f"touch byte {byte}, one writing, with no wait and barrier between them")


class _Generic:
    """Per unit, the stores a wgmma may find as its last write, each needing its warp's
    proxy fence: the last certain write when it is a warp's store (warp, step), and an
    uncertain or idempotent store after it (one warp's; two warps' make the unit
    ambiguous)."""

    def __init__(self, units: int) -> None:
        self.warp = np.full(units, -1, dtype=np.int64)
        self.seq = np.zeros(units, dtype=np.int64)
        self.maybe_warp = np.full(units, -1, dtype=np.int64)
        self.maybe_seq = np.zeros(units, dtype=np.int64)
        self.ambiguous = np.zeros(units, dtype=bool)

    def write(self, a: Access, rows: np.ndarray, span: np.ndarray, seq: np.ndarray) -> None:
        """The rows of a write, in the order they ran (`seq`: each row's step, for a split
        warp's store the end of its interval: a fence of its warp is after it only then)."""
        n = span.shape[1]
        u = span.ravel()
        sure, w, seq = (np.repeat(x, n) for x in (a.certain[rows], a.warp[rows], seq))
        if a.idem:  # (the checker skips it where its own instruction wrote last, granule by
            # granule: the write before it stays a candidate, as if it might not run)
            sure = np.zeros_like(sure)
        if a.agent != AGENT_WARP:  # (a copy certain to run is the last write: no fence)
            self.warp[u[sure]] = -1
            self.maybe_warp[u[sure]] = -1
            self.ambiguous[u[sure]] = False
            return
        self.warp[u[sure]], self.seq[u[sure]] = w[sure], seq[sure]
        self.maybe_warp[u[sure]] = -1
        self.ambiguous[u[sure]] = False
        mu, mw, ms = u[~sure], w[~sure], seq[~sure]
        cur = self.maybe_warp[mu]
        self.ambiguous[mu] |= (cur >= 0) & (cur != mw)
        self.maybe_warp[mu] = np.where(cur < 0, mw, cur)
        self.maybe_seq[mu] = np.maximum(self.maybe_seq[mu], ms)


def _written_first(accesses: list[Access], nwarps: int, fences: list[tuple[int, int, int]],
                   unit: int, bar_steps: list[int], vcs: np.ndarray | None = None) -> None:
    """Rule 2: every byte read was certainly written before the read could see it (in an
    earlier interval, by its own thread or converged warp, or, through the clocks `vcs`,
    by a store of another thread that happens before the read)."""
    extent = max(int(a.start.max(initial=0)) + a.size for a in accesses)
    units = -(-extent // unit)
    written = np.zeros(units, dtype=bool)  # certainly written in earlier intervals
    generic = _Generic(units)
    steps: dict[int, list[tuple[int, int, Access, np.ndarray]]] = {}  # interval -> events
    for a in accesses:
        if a.agent == AGENT_COPY and a.seen is not None:  # (it lands for each warp at the
            # wait that saw its phase complete)
            n = len(a.thread)
            for w, s in a.seen.items():
                view = replace(a, thread=np.full(n, 32 * w), warp=np.full(n, w),
                               converged=np.ones(n, dtype=bool))
                k = bisect.bisect_left(bar_steps, s)
                steps.setdefault(k, []).append((s, 0, view, np.ones(n, dtype=bool)))
        elif a.agent == AGENT_COPY and a.write:  # (its write lands at its wait)
            k1, s1 = a.end()
            for k, s in set(zip(k1.tolist(), s1.tolist(), strict=True)):
                if s != NEVER:
                    steps.setdefault(k, []).append((s, 0, a, (k1 == k) & (s1 == s)))
        else:
            steps.setdefault(a.interval, []).append((a.seq, 1, a, np.ones(len(a.thread), bool)))
    fence = sorted(fences, key=lambda f: f[1])
    for k in sorted(steps):
        fenced = np.full(nwarps, -1, dtype=np.int64)  # each warp's last fence before k
        for w, fk, s in fence:
            if fk < k:
                fenced[w] = max(fenced[w], s)
        own = np.zeros((nwarps, units), dtype=bool)  # by the converged warp, in this interval
        own_gen = np.full((nwarps, units), -1, dtype=np.int64)  # its last generic store there
        mine: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]  # thread * units + unit
        done: list[tuple[int, Access, np.ndarray]] = []
        for seq, _, a, rows in sorted(steps[k], key=lambda e: (e[0], e[1])):
            span = a.start[rows][:, None] // unit + np.arange(-(-a.size // unit))
            if a.agent == AGENT_WGMMA:
                # (bytes copies on an mbarrier wrote, which all four warps of the
                # warpgroup waited for in this interval, with no store of theirs since)
                wg = np.arange(int(a.warp[0]), min(int(a.warp[0]) + 4, nwarps))
                u = span.ravel()
                landed = own[wg][:, u].all(axis=0) & (own_gen[wg][:, u] < 0).all(axis=0)
                _stored_here(a, u, done, unit, "the wgmma")
                _wgmma_reads(a, u[~landed], written, generic, fenced, unit)
                continue
            if a.atomic:  # (it reads the bytes it writes: they must be written first)
                _read_written(a, rows, span, units, written, own, mine, done, unit, vcs)
            if a.write:
                sure = a.certain[rows]
                conv = a.converged[rows]
                own[a.warp[rows][sure & conv][:, None], span[sure & conv]] = True
                own_gen[a.warp[rows][sure & conv][:, None], span[sure & conv]] = \
                    seq if a.agent == AGENT_WARP else -1
                mine.append((a.thread[rows][sure][:, None] * units + span[sure]).ravel())
                done.append((seq, a, rows))
                continue
            if a.agent == AGENT_COPY:  # (a copy engine's read: the async proxy)
                _stored_here(a, span.ravel(), done, unit, "the copy",
                             int(a.warp[rows][0]))
                _async_reads(a, rows, span, k, unit, written, own_gen, generic, fence)
            _read_written(a, rows, span, units, written, own, mine, done, unit, vcs)
        end = bar_steps[k] if k < len(bar_steps) else NEVER  # (the barrier closing k)
        for seq, a, rows in done:  # (in the order they ran: the last write is the last one)
            span = a.start[rows][:, None] // unit + np.arange(-(-a.size // unit))
            written[span[a.certain[rows]].ravel()] = True
            generic.write(a, rows, span, np.where(a.converged[rows], seq, end))


def _read_written(a: Access, rows: np.ndarray, span: np.ndarray, units: int,
                  written: np.ndarray, own: np.ndarray, mine: list[np.ndarray],
                  done: list[tuple[int, Access, np.ndarray]], unit: int,
                  vcs: np.ndarray | None) -> None:
    """Rule 2 for one read: its bytes written in an earlier interval, by its converged
    warp or its own thread earlier in this one, or by a store that happens before it."""
    have = written[span] | own[a.warp[rows][:, None], span]
    if have.all():
        return
    keys = (a.thread[rows][:, None] * units + span)[~have]
    miss = ~np.isin(keys, np.concatenate(mine))
    if miss.any() and vcs is not None and len(vcs) > 1 and a.cid is not None \
            and a.agent == AGENT_WARP:
        # (a store of another thread this interval that happens before the read; a copy
        # engine's read, of the async proxy, needs the bytes' fence: only bytes of earlier
        # intervals, _async_reads)
        who = np.broadcast_to(np.arange(len(span))[:, None], span.shape)[~have]
        cids = a.cid[rows][who[miss]]
        miss[np.nonzero(miss)[0][_stored_before(span[~have][miss], cids, done, unit,
                                                vcs)]] = False
    if miss.any():
        byte = int(span[~have][miss][0]) * unit
        raise Refused(f"line {a.line}: it may read byte {byte} before any write certain to "
                      "run has written it")


def _stored_before(units: np.ndarray, cids: np.ndarray,
                   done: list[tuple[int, Access, np.ndarray]], unit: int,
                   vcs: np.ndarray) -> np.ndarray:
    """Per (unit, reader's clock id): whether a certain store of a warp run so far in this
    interval (`done`) wrote the unit at a step that clock holds its thread past."""
    out = np.zeros(len(units), dtype=bool)
    for _, w, rows in done:
        if w.agent != AGENT_WARP or w.elected:  # (the lane the host elects need not be the
            continue  # GPU's: its clock says nothing of the lane that stored)
        sure = rows & w.certain
        if not sure.any():
            continue
        first = w.start[sure] // unit
        last = (w.start[sure] + w.size - 1) // unit
        thr = w.thread[sure]
        for i in np.nonzero(~out)[0].tolist():
            hit = (first <= units[i]) & (units[i] <= last)
            out[i] = bool((w.seq < vcs[cids[i], thr[hit]]).any())
    return out


def _stored_here(a: Access, units: np.ndarray, done: list[tuple[int, Access, np.ndarray]],
                 unit: int, what: str, issuer: int = -1) -> None:
    """An async-proxy read (a bulk or tensor store's source, a wgmma's operands) of bytes a
    warp's store wrote in this interval before it: refused, but for a copy's issuing warp's
    own stores (whose fence _async_reads looks for). The fence rule follows the last writer
    of each byte across intervals only; a store between the same barriers, ordered before
    the read by the clocks alone (an mbarrier, a named barrier, a cluster CTA's barrier),
    would leave the bytes of an earlier, fenced write as the ones the rule judged."""
    for _, w, rows in done:
        if w.agent != AGENT_WARP:
            continue
        others = rows & (w.warp != issuer)
        if not others.any():
            continue
        first = w.start[others] // unit
        last = (w.start[others] + w.size - 1) // unit
        hit = [u for u in np.unique(units).tolist() if ((first <= u) & (u <= last)).any()]
        if hit:
            raise Refused(f"line {a.line}: {what} reads byte {hit[0] * unit}, which a warp's "
                          f"store at line {w.line} wrote between the same barriers (its "
                          "fence.proxy.async is looked for across barriers only)")


def _async_reads(a: Access, rows: np.ndarray, span: np.ndarray, k: int, unit: int,
                 written: np.ndarray, own_gen: np.ndarray, generic: _Generic,
                 fences: list[tuple[int, int, int]]) -> None:
    """A copy engine's read (a bulk or tensor store) of bytes a warp's generic store wrote
    last: that warp's `fence.proxy.async` after the store and before the issue (by the
    issuing warp itself, or ahead of a barrier before it)."""
    issuer = int(a.warp[rows][0])

    def fenced(w: int, after: int) -> bool:
        return any(fw == w and after < fs < a.seq and (fk < k or w == issuer)
                   for fw, fk, fs in fences)
    for u in np.unique(span).tolist():
        if own_gen[issuer, u] >= 0:
            if not fenced(issuer, int(own_gen[issuer, u])):
                raise Refused(f"line {a.line}: the copy reads byte {u * unit}, "
                              "written by its warp's store with no fence.proxy.async between")
            continue
        if not written[u]:
            continue  # (the rule below refuses a read of bytes no one wrote)
        if generic.ambiguous[u]:
            raise Refused(f"line {a.line}: the copy reads bytes which stores of two warps may "
                          "have written last")
        for w, s in ((generic.warp[u], generic.seq[u]),
                     (generic.maybe_warp[u], generic.maybe_seq[u])):
            if w >= 0 and not fenced(int(w), int(s)):
                raise Refused(f"line {a.line}: the copy reads bytes last written by warp {w} "
                              "with no fence.proxy.async of that warp after the store and "
                              "before the copy")


def _wgmma_reads(a: Access, span: np.ndarray, written: np.ndarray, generic: _Generic,
                 fenced: np.ndarray, unit: int) -> None:
    if not written[span].all():
        byte = int(span[~written[span]][0]) * unit
        raise Refused(f"line {a.line}: the wgmma may read byte {byte} before a write certain "
                      "to run has written it, in an interval before its issue")
    if generic.ambiguous[span].any():
        byte = int(span[generic.ambiguous[span]][0]) * unit
        raise Refused(f"line {a.line}: the wgmma reads byte {byte}, which stores of two warps "
                      "may have written last")
    stale = np.zeros(len(span), dtype=bool)
    g = np.full(len(span), -1, dtype=np.int64)
    for warp, seq in ((generic.warp, generic.seq), (generic.maybe_warp, generic.maybe_seq)):
        w = warp[span]
        bad = (w >= 0) & (fenced[np.maximum(w, 0)] <= seq[span])
        g = np.where(bad & ~stale, w, g)
        stale |= bad
    if stale.any():
        byte, w = int(span[stale][0]) * unit, int(g[stale][0])
        raise Refused(f"line {a.line}: the wgmma reads byte {byte}, last written by warp {w} "
                      "with no fence.proxy.async of that warp after the store and before a "
                      "barrier ahead of the wgmma")
