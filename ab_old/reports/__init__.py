"""Violation records + site table -> findings a kernel author can act on in one read.

Pure Python (numpy, rich): imports only the ABI and site-table definitions
from `instrument/`, never the runtime, so reports can be built and tested
without a GPU.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Imported on first use: rendering an instruction list (`consan instrument`) needs no numpy.
_WHERE = {"Finding": ".finding", "group": ".finding", "Report": ".report",
          "Violation": ".violation", "decode_records": ".violation"}

__all__ = ["Finding", "Report", "Violation", "decode_records", "group"]


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'reports' has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from .finding import Finding, group
    from .report import Report
    from .violation import Violation, decode_records
