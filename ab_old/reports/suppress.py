"""Suppressions: accepted findings, named by kind and source location.

A known, accepted race must not fail every CI run, and must not be hidden
either: a suppressed finding is still counted in the summary, JSON and SARIF.
The file is small and line-based so that it reads well in code review:

    # KIND        LOCATION               [kernel=GLOB] [earlier=LOCATION]
    race.war      src/reduce.cu:42
    uninit.read   *.py:120-130           kernel=block_sum
    race.*        kernels/legacy_*.cu

KIND is a kind id or a glob over kind ids. LOCATION is FILE[:LINE[-LINE]]
with `*`/`?` globs; a FILE without `/` matches the file's base name, one with
`/` matches the whole path or any trailing part of it. `*` alone matches any
location. The optional `earlier=` matches the earlier conflicting site.
Pure Python: works on a session's findings (reports.session.SessionFinding).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from instrument import abi

if TYPE_CHECKING:
    from .session import SessionFinding

_LOC = re.compile(r"^(?P<file>.*?)(?::(?P<lo>\d+)(?:-(?P<hi>\d+))?)?$")


class SuppressionError(ValueError):
    """The suppressions file is malformed; the message names the file and line."""


@dataclass(frozen=True)
class Location:
    """A FILE[:LINE[-LINE]] pattern."""

    file: str
    lines: tuple[int, int] | None = None

    def __str__(self) -> str:
        if self.lines is None:
            return self.file
        lo, hi = self.lines
        return f"{self.file}:{lo}" + (f"-{hi}" if hi != lo else "")

    def matches(self, file: str | None, line: int | None) -> bool:
        if self.file != "*" and not _file_matches(self.file, file):
            return False
        if self.lines is None:
            return True
        return line is not None and self.lines[0] <= line <= self.lines[1]


def parse_location(text: str) -> Location:
    """`file.cu:42`, `*.py:10-20`, `src/k.cu`, `*`; raises ValueError on a bad one."""
    text = text.strip()
    m = _LOC.match(text)
    head, colon, tail = text.rpartition(":")
    bad_lines = colon and len(head) > 1 and not re.fullmatch(r"\d+(?:-\d+)?", tail)
    if not text or not m or not m.group("file") or bad_lines:
        raise ValueError(f"bad location {text!r}: use FILE[:LINE[-LINE]] (globs allowed)")
    if m.group("lo") is None:
        return Location(m.group("file"))
    lo = int(m.group("lo"))
    hi = int(m.group("hi")) if m.group("hi") else lo
    if hi < lo:
        raise ValueError(f"bad location {text!r}: line range {lo}-{hi} is empty")
    return Location(m.group("file"), (lo, hi))


def _file_matches(pattern: str, file: str | None) -> bool:
    if not file:
        return False
    path = file.replace("\\", "/")
    pattern = pattern.replace("\\", "/")
    if "/" not in pattern:
        return fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)
    return fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, "*/" + pattern)


@dataclass
class Rule:
    kind: str
    where: Location
    kernel: str | None = None
    earlier: Location | None = None
    origin: str = ""  # FILE:LINE of the rule, for messages
    used: int = 0

    def __str__(self) -> str:
        extra = (f" kernel={self.kernel}" if self.kernel else "") + \
                (f" earlier={self.earlier}" if self.earlier else "")
        return f"{self.kind} {self.where}{extra}"

    def matches(self, finding: SessionFinding) -> bool:
        if not fnmatch.fnmatchcase(finding.kind, self.kind):
            return False
        if not self.where.matches(*finding.file_line):
            return False
        if self.earlier is not None and (
                finding.earlier is None or not self.earlier.matches(*finding.earlier.file_line)):
            return False
        if self.kernel is not None:
            names = [n for n in (finding.kernel, finding.kernel_mangled) if n]
            if not any(fnmatch.fnmatchcase(n, self.kernel) for n in names):
                return False
        return True


@dataclass
class Suppressions:
    rules: list[Rule] = field(default_factory=list)
    source: str = ""

    def match(self, finding: SessionFinding) -> Rule | None:
        """The first rule that accepts this finding (its use is counted), or None."""
        for rule in self.rules:
            if rule.matches(finding):
                rule.used += 1
                return rule
        return None

    def unused(self) -> list[Rule]:
        return [r for r in self.rules if not r.used]


def parse(text: str, source: str = "<suppressions>") -> Suppressions:
    """Parse a suppressions file; errors name `source:line` and what is wrong."""
    known = {k.id for k in abi.KINDS}
    rules = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{source}:{n}"
        parts = line.split()
        if len(parts) < 2:
            raise SuppressionError(f"{where}: expected KIND LOCATION [kernel=GLOB] "
                                   f"[earlier=LOCATION], got {raw.strip()!r}")
        kind = parts[0]
        if not any(fnmatch.fnmatchcase(k, kind) for k in known):
            raise SuppressionError(f"{where}: {kind!r} matches no finding kind; kinds are: "
                                   + ", ".join(sorted(known)))
        try:
            loc = parse_location(parts[1])
            kernel = earlier = None
            for opt in parts[2:]:
                key, eq, val = opt.partition("=")
                if not eq or not val or key not in ("kernel", "earlier"):
                    raise ValueError(f"unknown option {opt!r} (use kernel=GLOB or "
                                     "earlier=LOCATION)")
                if key == "kernel":
                    kernel = val
                else:
                    earlier = parse_location(val)
        except ValueError as exc:
            raise SuppressionError(f"{where}: {exc}") from None
        rules.append(Rule(kind, loc, kernel, earlier, origin=where))
    return Suppressions(rules, source)


def load(path: str | Path) -> Suppressions:
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except OSError as exc:
        raise SuppressionError(f"cannot read suppressions file {path}: {exc.strerror or exc}") \
            from None
    except UnicodeDecodeError as exc:
        raise SuppressionError(f"suppressions file {path} is not UTF-8 text (byte "
                               f"{exc.start}); write it as UTF-8") from None
    return parse(text, str(path))
