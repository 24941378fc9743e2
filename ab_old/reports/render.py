"""The human report: findings with source context, sentences and a summary, via rich.

Everything is built from rich `Text` objects (never markup strings), so source
text such as `smem[tid]` is printed as written. Colour is decided by the
console: `Report.__str__` renders to a plain one.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.text import Text

from instrument.sites import Site

from . import describe
from .finding import Finding
from .source import SourceLines

if TYPE_CHECKING:
    from .report import Report

_PY_ERROR_CLASS = re.compile(r"^\w+Error:\s*(?=cuda|CUDA_ERROR)")


def fault_cause(error: str) -> str:
    """What CUDA said of a fault, without the Python exception class CuPy wraps it in
    (`cudaErrorMisalignedAddress: misaligned address`)."""
    return _PY_ERROR_CLASS.sub("", error.strip(), count=1)


INDENT = 2
CODE_INDENT = 4
TAB = 4


def _para(text: Text, indent: int = INDENT) -> Padding:
    """A wrapped paragraph whose continuation lines keep the indent."""
    return Padding(text, (0, 0, 0, indent), expand=False)


def _line(*parts: tuple[str, str] | str) -> Text:
    """One unwrapped line; long source lines are cut with an ellipsis instead of wrapping."""
    text = Text.assemble(*parts)
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text


def _source_lines(site: Site, src: SourceLines) -> list[Text] | None:
    loc = site.loc
    ctx = src.context(loc.file, loc.line) if loc is not None else None
    if loc is None or ctx is None:
        return None
    width = len(str(ctx[-1][0]))
    out = []
    for n, raw in ctx:
        code = raw.expandtabs(TAB)
        if n == loc.line:
            out.append(_line(("  > ", "bold red"), (f"{n:>{width}} | ", "dim"),
                             (code, "bold yellow")))
            if 0 < loc.col <= len(raw) + 1:
                caret = len(raw[: loc.col - 1].expandtabs(TAB))
                out.append(_line(" " * CODE_INDENT, (f"{'':>{width}} | ", "dim"),
                                 (" " * caret + "^", "bold red")))
        else:
            out.append(_line(" " * CODE_INDENT, (f"{n:>{width}} | ", "dim"), (code, "dim")))
    return out


def _ptx_line(site: Site, ptx_name: str, marked: bool) -> Text:
    lead = ("  > ", "bold red") if marked else " " * CODE_INDENT
    style = "bold yellow" if marked else "dim"
    return _line(lead, (f"{ptx_name}:{site.ptx_line} | ", "dim"), (site.ptx_text.strip(), style))


def site_block(role: str, site: Site | None, src: SourceLines, ptx_name: str,
               same_as: Site | None = None, other_warp: bool = False) -> list[RenderableType]:
    """Role, location, source context (or the PTX instruction) and the inline chain of a site.
    `other_warp`: the two accesses are known to be different warps' (a cp.async unit's copy
    over its own warp's earlier copy is the same instruction, by the same warp)."""
    head = Text(" " * INDENT)
    head.append(role, style="bold cyan")
    head.append("  ")
    if site is None:
        head.append("unknown site", style="bold")
        return [head]
    if same_as is not None and same_as.id == site.id:
        by = ", by another warp" if other_warp else ""
        head.append(f"the same instruction ({site.where()}){by}", style="bold")
        return [head]
    head.append(site.where() if site.loc is not None else f"{ptx_name}:{site.ptx_line}",
                style="bold")
    if site.loc is not None and site.loc.function:
        head.append(f" in {site.loc.function}")
    out: list[RenderableType] = [head]
    code = _source_lines(site, src)
    if code is None:
        if site.loc is not None:
            out.append(Text(f"{' ' * CODE_INDENT}(source of {site.loc.file} not available; "
                            "PTX instruction:)", style="dim"))
        out.append(_ptx_line(site, ptx_name, marked=True))
    else:
        out.extend(code)
        out.append(_ptx_line(site, ptx_name, marked=False))
    for loc in site.inlined_at:
        fn = f" (in {loc.function})" if loc.function else ""
        out.append(Text(f"{' ' * CODE_INDENT}inlined from {loc.file}:{loc.line}{fn}", style="dim"))
    return out


def finding_block(f: Finding, src: SourceLines, ptx_name: str) -> list[RenderableType]:
    """Everything the report says about one finding."""
    head = Text()
    head.append(f.kind, style="bold red")
    head.append(f"  {f.title}", style="bold")
    head.append(f"  ({describe.occurrence_text(f)})", style="dim")
    cur_role, prev_role = describe.roles(f.kind, describe.variant(f))
    out: list[RenderableType] = [head]
    out += site_block(cur_role, f.site, src, ptx_name)
    if f.prev_site is not None:
        out += site_block(prev_role or "earlier site", f.prev_site, src, ptx_name,
                          same_as=f.site, other_warp=bool(f.warps and f.prev_warps and
                                                          not f.warps & f.prev_warps))
    out.append(_para(Text(describe.what_happened(f))))
    fix = Text()
    fix.append("fix: ", style="bold green")
    fix.append(describe.fix(f), style="green")
    out.append(_para(fix))
    out.extend(_para(Text(line, style="dim")) for line in _extent_lines(f))
    return out


def _extent_lines(f: Finding) -> list[str]:
    lines = []
    if f.ctas:
        cta = "CTA " if len(f.ctas) == 1 else "CTAs "
        ranks = {r.cluster_rank for r in f.records}
        rank = f"; cluster ranks {describe.compact_ints(ranks)}" if ranks - {0} else ""
        lines.append(cta + describe.cta_text(f.ctas) + rank)
    if f.not_stored and f.records:
        n = len(f.records)
        lines.append(f"{f.not_stored} of {f.occurrences} occurrences not stored; the details "
                     f"above come from the {n} stored record{'' if n == 1 else 's'}.")
    return lines


def note_block(f: Finding) -> Text:
    """A tool note in one dim paragraph: it says what was not checked, not what is wrong."""
    text = Text(style="dim")
    text.append(f.kind, style="bold")
    text.append(f"  {f.title}  ({describe.occurrence_text(f)}) at {describe.where(f.site)}: ")
    text.append(describe.fix(f))
    return text


MAX_UNMODELED_SHOWN = 10


def unmodeled_lines(items: list) -> list[str]:
    """One line per distinct not-checked instruction (`file:line in kernel K: what [PTX]`);
    the same instruction inlined at several places is one line with its count."""
    counts: dict[str, int] = {}
    for u in items:
        counts[str(u)] = counts.get(str(u), 0) + 1
    return [text + (f" ({n} instructions)" if n > 1 else "") for text, n in counts.items()]


def print_unmodeled(console: Console, items: list, limit: int | None = MAX_UNMODELED_SHOWN
                    ) -> None:
    """The indented entries of a not-checked list, at most `limit` of them and a count. Each
    entry is one line whatever the console's width (a terminal folds it, a pipe keeps it)."""
    lines = unmodeled_lines(items)
    shown = lines if limit is None else lines[:limit]
    for text in shown:
        console.print(Text("  " + text, style="yellow"), soft_wrap=True)
    if len(shown) < len(lines):
        console.print(Text(f"  ... and {len(lines) - len(shown)} more", style="yellow"))


def _launch_text(launch: dict | None) -> str:
    if not launch:
        return ""
    def dims(v) -> str:
        return "(" + ",".join(str(x) for x in v) + ")" if isinstance(v, (tuple, list)) else str(v)
    parts = [f"{k}={dims(launch[k])}" for k in ("grid", "block") if launch.get(k) is not None]
    if launch.get("shared_mem"):
        parts.append(f"shared_mem={launch['shared_mem']}")
    return f" ({', '.join(parts)})" if parts else ""


def _findings_text(report: Report, kernel: str = "") -> str:
    """The violations of a report in a few words: how many, of which kinds, how often;
    `kernel` (" in kernel K") placed where the sentence wants it."""
    stored = "all records stored" if not report.dropped else f"{report.dropped} records not stored"
    occ = f"{report.occurrences} occurrence" + ("" if report.occurrences == 1 else "s")
    if not report.findings:
        return (f"{occ} of violations{kernel}, but their records were not stored ({stored}): "
                "kinds and sites unknown")
    counts = Counter(f.kind for f in report.findings)
    by_kind = ", ".join(f"{n} {kind}" for kind, n in counts.items())
    n = len(report.findings)
    return f"{n} finding{'' if n == 1 else 's'} ({by_kind}){kernel}; {occ}; {stored}"


def summary(report: Report) -> str:
    """The one-line verdict that ends every report: a fault first, then the findings."""
    kernel = report.kernel
    if report.faulted:
        before = (f"recorded before the fault: {_findings_text(report)}" if report.violated
                  else "no violation was recorded before the fault")
        return (f"consan: the kernel {kernel}{_launch_text(report.launch)} faulted: "
                f"{report.fault}; {before}")
    if report.ok:
        return f"consan: no violations in kernel {kernel}{_launch_text(report.launch)}"
    return f"consan: {_findings_text(report, f' in kernel {kernel}')}"


def fault_lines(report: Report) -> list[Text]:
    """What the report says first of a faulted launch: the fault, then what follows it."""
    head = Text()
    head.append(f"consan: the kernel {report.kernel} faulted: ", style="bold red")
    head.append(report.fault or "", style="bold red")
    if report.violated:
        what = ("The findings below were recorded before the fault (consan's log is in host "
                "memory and survives it); occurrence counts may be incomplete.")
    else:
        what = ("consan recorded no violation before the fault (consan's log is in host memory "
                "and survives it).")
    tail = ("The kernel did not run to its end, so the report is not clean whatever was found; "
            "after a fault the CUDA context of the process is unusable, and later CUDA calls "
            "fail with the same error.")
    return [head, Text(f"{what} {tail}", style="red")]


def render_report(report: Report, console: Console) -> None:
    src = SourceLines(report.sites.sources if report.sites is not None else None)
    ptx_name = report.sites.ptx_name if report.sites is not None else "<ptx>"
    if report.faulted:
        for line in fault_lines(report):
            console.print(line)
        console.print()
    for f in report.findings:
        for part in finding_block(f, src, ptx_name):
            console.print(part)
        console.print()
    if report.unattributed and report.findings:
        console.print(Text(f"{report.unattributed} more occurrences were counted without a "
                           "key-table entry or stored record: their kinds and sites are unknown.",
                           style="yellow"))
    if report.unmodeled:
        console.print(Text(f"consan did not check {len(report.unmodeled)} instruction(s) that "
                           "touch shared memory or synchronise:", style="yellow"))
        print_unmodeled(console, report.unmodeled)
    if report.notes:
        console.print(Text("consan notes", style="dim bold"))
        for note in report.notes:
            console.print(_para(note_block(note)))
        console.print()
    style = "bold green" if report.ok else "bold red"
    console.print(Text(summary(report), style=style))


WIDE = 10_000  # columns of a console that is not a terminal: no entry is ever wrapped


def stream_console(stderr: bool = False) -> Console:
    """A console on stdout or stderr. On a terminal it has the terminal's width; piped or
    redirected it is wide, so each entry stays on one line for grep and CI logs."""
    console = Console(stderr=stderr, highlight=False)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, highlight=False, width=WIDE)


def plain_console(file) -> Console:
    """A console that writes plain text, 100 columns, whatever the environment says."""
    return Console(file=file, width=100, color_system=None, force_terminal=False,
                   force_jupyter=False, no_color=True, highlight=False, markup=False,
                   emoji=False, soft_wrap=False, legacy_windows=False)
