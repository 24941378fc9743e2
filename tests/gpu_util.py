"""What the GPU test modules share: the skip marker, source-line markers, the target."""

from __future__ import annotations

import re

import pytest


def gpu() -> bool:
    try:
        import consan

        return bool(consan.gpu_available())
    except Exception:  # noqa: BLE001 - no consan, no cupy, no GPU: skip
        return False


GPU = [pytest.mark.gpu, pytest.mark.skipif(not gpu(), reason="needs a CUDA GPU")]


def line_of(src: str, marker: str) -> int:
    """1-based line of the one line of `src` carrying `marker` (a whole token)."""
    hits = [i for i, s in enumerate(src.splitlines(), 1)
            if re.search(re.escape(marker) + r"(?![\w-])", s)]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def lines(site) -> set[int]:
    """A site's source line and the lines of its inline chain (call sites, outward)."""
    return {site.loc.line, *(c.line for c in site.inlined_at)} if site and site.loc else set()


def arch_option() -> str:
    import cupy as cp

    cc = cp.cuda.Device().compute_capability
    return f"-arch=sm_{cc}{'a' if cc == '90' else ''}"
