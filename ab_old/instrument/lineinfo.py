"""PTX lines back to the user's source, for messages about PTX the user never sees.

ptxas and nvJitLink name lines of the PTX they were given (the instrumented
PTX, which nobody reads), and an instruction consan does not model sits at a
line of NVRTC's output. Both become `file:line` through the `.loc` line info
that `-lineinfo` puts in the PTX; only PTX without it falls back to a PTX line,
and then to a line of the PTX the user gave, not of consan's rewrite of it.
Pure text work: no parser state, so a module ptxas rejected can still be read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .rewrite import demangle
from .sites import SourceLoc

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"', re.M)
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)(?:\s+(\d+))?")
_FUNC = re.compile(r"^\s*(?:\.(?:visible|extern|weak|common)\s+)*\.(entry|func)\b\s*"
                   r"(?:\([^)]*\)\s*)?([\w$.]+)")
# "ptxas application ptx input, line 96; error   : Unknown symbol '%r99'"
_PTXAS_LINE = re.compile(r"^(?P<lead>ptxas[^,\n]*?ptx input), line (?P<line>\d+);\s*(?P<rest>.*)$")
# nvJitLink's last word on a module: "ERROR NVJITLINK_ERROR_PTX_COMPILE: JIT the PTX (k.ptx)"
_JIT_MODULE = re.compile(r"JIT the PTX \((?P<name>[^)]*)\)")


@dataclass(frozen=True)
class PTXPlace:
    """Where a PTX line is, in the user's terms."""

    loc: SourceLoc | None  # the source line of the nearest preceding `.loc`, if any
    function: str | None  # the mangled name of the .entry / .func around the line
    entry: bool  # the function is a kernel (.entry), not a device function (.func)

    @property
    def function_text(self) -> str:
        """`kernel NAME` / `function NAME`, demangled, or "" outside any function."""
        if self.function is None:
            return ""
        return f"{'kernel' if self.entry else 'function'} {demangle(self.function)}"


def files(ptx: str) -> dict[int, str]:
    """The `.file` table: number -> path (NVRTC writes it after the code)."""
    return {int(m.group(1)): m.group(2) for m in _FILE.finditer(ptx)}


def place(ptx: str, line: int, file_table: Mapping[int, str] | None = None) -> PTXPlace:
    """The function around 1-based `line` of `ptx` and the source line of the nearest `.loc`
    before it in that function (None when there is none, or it says line 0: no location)."""
    lines = ptx.splitlines()
    table = files(ptx) if file_table is None else file_table
    loc: SourceLoc | None = None
    seen_loc = False
    for i in range(min(line, len(lines)) - 1, -1, -1):
        text = lines[i]
        if not seen_loc:
            m = _LOC.match(text)
            if m:
                seen_loc = True
                fno, ln = int(m.group(1)), int(m.group(2))
                if ln:
                    loc = SourceLoc(table.get(fno, f"file{fno}"), ln, int(m.group(3) or 0))
                continue
        f = _FUNC.match(text)
        if f and ";" in text:
            break  # a prototype: the line is at module scope
        if f:
            return PTXPlace(loc, f.group(2), f.group(1) == "entry")
    return PTXPlace(None, None, False)  # module scope: a .loc there belongs to nothing


def original_line(original: str, rewritten: str, line: int) -> int | None:
    """The line of `original` that line `line` of `rewritten` came from, when the rewrite kept
    it (consan only inserts text, so the k-th copy of a line maps to the k-th copy there)."""
    new = rewritten.splitlines()
    if not 1 <= line <= len(new):
        return None
    target = new[line - 1].strip()
    if not target:
        return None
    k = sum(1 for text in new[:line - 1] if text.strip() == target)
    for i, text in enumerate(original.splitlines(), start=1):
        if text.strip() == target:
            if k == 0:
                return i
            k -= 1
    return None


def describe_line(ptx: str, line: int, original: str | None = None,
                  ptx_name: str = "the PTX") -> str:
    """`file:line in kernel NAME` for a line of `ptx`; without line info, the PTX line (of
    `original`, the PTX the user gave, when `ptx` is consan's rewrite of it)."""
    where = place(ptx, line)
    if where.loc is not None:
        text = f"{where.loc.file}:{where.loc.line}"
    else:
        orig = original_line(original, ptx, line) if original is not None else line
        text = (f"PTX line {orig} of {ptx_name}" if orig is not None
                else f"line {line} of the PTX consan generated from {ptx_name}")
    return text + (f" in {where.function_text}" if where.function else "")


def explain_ptxas_log(log: str, ptx: str, original: str | None = None,
                      ptx_name: str = "the PTX", skip: tuple[str, ...] = ()) -> str:
    """A ptxas / nvJitLink log with each `ptx input, line N;` turned into the user's
    `file:line in kernel NAME:`. Lines about the modules named in `skip` (consan's own
    checker) are left as they are; nvJitLink names each module after its errors."""
    out_lines = log.splitlines()
    owner: list[str | None] = [None] * len(out_lines)
    current: str | None = None
    for i in range(len(out_lines) - 1, -1, -1):  # a module's name follows its errors
        m = _JIT_MODULE.search(out_lines[i])
        if m:
            current = m.group("name")
        owner[i] = current
    for i, text in enumerate(out_lines):
        m = _PTXAS_LINE.match(text.strip())
        if m is None or (owner[i] is not None and owner[i] in skip):
            continue
        where = describe_line(ptx, int(m.group("line")), original, ptx_name)
        rest = re.sub(r"^(error|warning|fatal)\s+:", r"\1:", m.group("rest"))
        out_lines[i] = f"{where}: {rest}"
    return "\n".join(out_lines)


__all__ = ["PTXPlace", "place", "files", "original_line", "describe_line",
           "explain_ptxas_log"]
