"""Violation records + site table -> findings a kernel author can act on in one read.

Pure Python (numpy, rich): imports only the ABI and site-table definitions
from `instrument/`, never the runtime, so reports can be built and tested
without a GPU.
"""

from .finding import Finding, group
from .report import Report
from .violation import Violation, decode_records

__all__ = ["Finding", "Report", "Violation", "decode_records", "group"]
