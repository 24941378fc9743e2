"""Errors consan raises at the user: each names the input and the fix."""

from __future__ import annotations


class ConsanError(RuntimeError):
    """consan could not do what was asked (bad input, not enough memory, ...)."""


class NoGPUError(ConsanError):
    """No usable CUDA GPU: launching is impossible (instrumenting still works)."""
