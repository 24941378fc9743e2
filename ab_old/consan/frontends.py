"""Every front end at once: the CuPy and Triton interceptions, over one active session.

`consan run`, the pytest plugin and `consan.expect` sanitize whatever the program
launches, through either front end; each front end hands its launches to the
active session (session.py) and stays inert without one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from . import cupy_hook, session, triton_hook


def install() -> None:
    """Put every front end in place (idempotent). Needs CuPy importable, not a GPU;
    Triton is patched when the program imports it."""
    cupy_hook.install()
    triton_hook.install()


def uninstall() -> None:
    """Restore CuPy and Triton exactly as they were; no session stays active."""
    cupy_hook.uninstall()
    triton_hook.uninstall()
    session.deactivate()


def installed() -> bool:
    return cupy_hook.installed()


@contextlib.contextmanager
def sanitizing(s: session.Session) -> Iterator[session.Session]:
    """Install the front ends if needed and make `s` the active session for the block."""
    install()
    with session.active(s):
        yield s
