"""Source text for report context: the site table's copy first, then the file on disk.

Kernels compiled at run time often have no file on disk, so the frontends
put the source into `SiteTable.sources`; a file that exists on disk is the
fallback. Each file is read at most once per report.
"""

from __future__ import annotations

from pathlib import Path

CONTEXT_LINES = 2


class SourceLines:
    """Lines of source files by name, cached; None where the text is unavailable."""

    def __init__(self, sources: dict[str, str] | None = None) -> None:
        self._sources = sources or {}
        self._cache: dict[str, list[str] | None] = {}

    def lines(self, file: str) -> list[str] | None:
        if file not in self._cache:
            self._cache[file] = self._load(file)
        return self._cache[file]

    def _load(self, file: str) -> list[str] | None:
        text = self._sources.get(file)
        if text is None:
            try:
                path = Path(file)
                text = path.read_text(errors="replace") if path.is_file() else None
            except OSError:
                text = None
        return None if text is None else text.splitlines()

    def context(self, file: str, line: int,
                radius: int = CONTEXT_LINES) -> list[tuple[int, str]] | None:
        """(line number, text) around a 1-based line, or None if the line is not available."""
        lines = self.lines(file)
        if lines is None or not 1 <= line <= len(lines):
            return None
        lo, hi = max(1, line - radius), min(len(lines), line + radius)
        return [(n, lines[n - 1]) for n in range(lo, hi + 1)]
