"""Proofs before launch kept on disk, beside the linked cubins (toolchain.cache_dir()).

A proof for one launch's values costs 0.1-6 s of host time (Triton's persistent matmul at
4096²: 5.8-6.4 s on a 2-core machine), and a test suite proves the same kernels with the
same values at every run. An entry is keyed by everything the proof reads: the module's
PTX, the kernel and its launch values, consan's version and the source of the `instrument`
package (a change to the rules makes every old entry unreachable). CONSAN_PROOF_CACHE=0
turns it off (the benchmarks that time a first launch do).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import instrument
from instrument.static_proof import Proof, Refusal

from . import toolchain
from .version import __version__

ProveAt = Callable[..., "Proof | str"]


def enabled() -> bool:
    return os.environ.get("CONSAN_PROOF_CACHE", "1") != "0"


@functools.cache
def rules_digest() -> str:
    """A digest of the `instrument` package's source: the proof's rules and evaluator."""
    h = hashlib.sha256()
    for path in sorted(Path(instrument.__file__).parent.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def cached(prove_at: ProveAt | None, ptx: str) -> ProveAt | None:
    """`prove_at` (instrument.rewrite's, for a module of `ptx`) through the on-disk cache."""
    if prove_at is None or not enabled():
        return prove_at
    module = hashlib.sha256("\0".join((__version__, rules_digest(), ptx)).encode()).hexdigest()

    def prove(kernel: str, block, params=None, maps=(), cluster=None, grid=None):
        launch = (kernel, tuple(block), sorted((params or {}).items()), list(maps),
                  None if cluster is None else list(cluster),
                  None if grid is None else list(grid))
        key = hashlib.sha256(json.dumps([module, launch], default=int).encode()).hexdigest()[:32]
        path = toolchain.cache_dir() / "proofs" / f"{key}.json"
        got = _load(path)
        if got is None:
            got = prove_at(kernel, block, params, maps, cluster, grid)
            toolchain.cache_write(path, _dump(got))
        return got
    return prove


def _dump(got: Proof | str) -> str:
    if isinstance(got, Proof):
        return json.dumps({"proof": dataclasses.asdict(got)})
    return json.dumps({"refusal": str(got), "unknown": bool(getattr(got, "unknown", False))})


def _load(path: Path) -> Proof | str | None:
    """The entry at `path`; None where there is none (or it cannot be read: it is made
    again)."""
    try:
        data = json.loads(path.read_text())
        if "proof" in data:
            return Proof(**data["proof"])
        out = Refusal(data["refusal"])
        out.unknown = bool(data["unknown"])
        return out
    except (OSError, ValueError, TypeError, KeyError):
        return None
