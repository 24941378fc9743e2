"""What a whole sanitized program (or test) found: many launches, one verdict.

A program launches the same kernel thousands of times; the user wants each
bug once, with how often it fired, plus an honest account of what was *not*
checked. A checked launch that faulted makes the whole session "faulted" (not
ok), whatever was found: the program did not run to its end under the checker.
Its findings are typed (SessionFinding, over reports.facts), whether found in
this process or read back from a saved JSON file, so a JSON file read back
gives the same summary and SARIF; only the JSON and SARIF writers turn them
into dicts.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .facts import FindingFacts, SiteFacts
from .finding import Finding
from .render import fault_cause, finding_block, print_unmodeled
from .source import SourceLines

SCHEMA = "consan.session/1"
CLEAN, VIOLATIONS, FAULTED, NOT_RUN = "clean", "violations", "faulted", "not-run"


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


@dataclass
class KernelStats:
    """Per kernel: what was checked, what was found, what it cost."""

    name: str
    launches_checked: int = 0
    findings: dict[str, int] = field(default_factory=dict)  # kind -> unique findings
    occurrences: int = 0
    suppressed: int = 0
    shadow_bytes: int = 0  # the largest set of shadow tables one launch used
    notes: dict[str, int] = field(default_factory=dict)  # tool note kind -> occurrences
    unmodeled: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    proven: str = ""  # how it was proven race-free before launch, where it was (ran natively)

    def to_dict(self) -> dict[str, Any]:
        d = {"name": self.name, "launches_checked": self.launches_checked,
             "findings": dict(self.findings), "occurrences": self.occurrences,
             "suppressed": self.suppressed, "shadow_bytes": self.shadow_bytes,
             "notes": dict(self.notes), "unmodeled": list(self.unmodeled),
             "errors": list(self.errors)}
        if self.proven:  # (kernels that ran instrumented keep the schema they had)
            d["proven"] = self.proven
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> KernelStats:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass(frozen=True)
class SessionFinding:
    """One unique finding of a session: its facts (of the first launch that found it, with
    the occurrences of all), which kernel, how often, from where, and whether a
    suppression or a `consan.expect` accepted it."""

    finding: FindingFacts
    kernel: str
    kernel_mangled: str
    launches: int = 1
    first_launch: int = 1
    launch: dict[str, Any] = field(default_factory=dict)  # grid, block, shared_mem, cluster
    launched_from: dict[str, Any] | None = None  # file, line of the Python launch
    suppressed_by: str | None = None  # "FILE:LINE (rule)"
    expected: str | None = None  # the expectation, as consan.expect was given it

    @property
    def kind(self) -> str:
        return self.finding.kind

    @property
    def current(self) -> SiteFacts | None:
        return self.finding.current

    @property
    def earlier(self) -> SiteFacts | None:
        return self.finding.earlier

    @property
    def file_line(self) -> tuple[str | None, int | None]:
        """(file, line) of the current access (`<ptx>` at its PTX line without source
        info; (None, None) without a site): what a suppression or expectation names."""
        return self.current.file_line if self.current is not None else (None, None)

    @property
    def active(self) -> bool:
        """It counts against the program: neither suppressed nor expected."""
        return not self.suppressed_by and not self.expected

    def again(self, occurrences: int) -> SessionFinding:
        """The same finding, found by one more launch."""
        return replace(self, launches=self.launches + 1, finding=replace(
            self.finding, occurrences=self.finding.occurrences + occurrences))

    def to_dict(self) -> dict[str, Any]:
        d = self.finding.to_dict()
        d.update(kernel=self.kernel, kernel_mangled=self.kernel_mangled,
                 launches=self.launches, first_launch=self.first_launch, launch=self.launch,
                 launched_from=self.launched_from)
        if self.suppressed_by:
            d["suppressed_by"] = self.suppressed_by
        if self.expected:
            d["expected"] = self.expected
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SessionFinding:
        kernel = d.get("kernel") or "?"
        return cls(FindingFacts.from_dict(d), kernel=kernel,
                   kernel_mangled=d.get("kernel_mangled") or kernel,
                   launches=int(d.get("launches") or 1),
                   first_launch=int(d.get("first_launch") or 1),
                   launch=dict(d.get("launch") or {}), launched_from=d.get("launched_from"),
                   suppressed_by=d.get("suppressed_by"), expected=d.get("expected"))


class SessionReport:
    """Findings of every sanitized launch of one program or test, deduplicated."""

    def __init__(self) -> None:
        self.version = ""
        self.program: dict[str, Any] = {}  # argv, exit_status, error
        self.kernels: dict[str, KernelStats] = {}
        self.findings: list[SessionFinding] = []
        self.not_checked: list[dict[str, Any]] = []  # kernel, reason, launches
        self.skipped: dict[str, int] = {}  # option -> launches it skipped
        self.unattributed = 0  # violations counted with no kind or site known
        self.aborted = False
        self.suppressions: dict[str, Any] = {}  # file, unused rules
        self.other_launches: str | None = None  # why launches outside CuPy were not counted
        self.not_run: str | None = None  # why no kernel could be checked (no usable GPU)
        # Checked launches that faulted: kernel, kernel_mangled, error (as raised), fault (what
        # CUDA said), launch_no (of that kernel), launch (shape), launched_from, findings_before
        # (findings that launch recorded before the fault).
        self.faults: list[dict[str, Any]] = []

    # ------------------------------------------------------------ verdict
    @property
    def active_findings(self) -> list[SessionFinding]:
        """Findings that count against the program: not suppressed, not expected."""
        return [f for f in self.findings if f.active]

    @property
    def suppressed_findings(self) -> list[SessionFinding]:
        return [f for f in self.findings if f.suppressed_by]

    @property
    def faulted(self) -> bool:
        """A checked kernel faulted: the program did not run to its end under the checker."""
        return bool(self.faults)

    @property
    def verdict(self) -> str:
        """"faulted" (whatever was found), "not-run" (no kernel could be checked: no usable
        GPU), "violations" or "clean"."""
        if self.faults:
            return FAULTED
        if self.not_run:
            return NOT_RUN
        return VIOLATIONS if self.active_findings or self.unattributed else CLEAN

    @property
    def ok(self) -> bool:
        return self.verdict == CLEAN

    @property
    def launches_checked(self) -> int:
        return sum(k.launches_checked for k in self.kernels.values())

    def kernel(self, name: str) -> KernelStats:
        if name not in self.kernels:
            self.kernels[name] = KernelStats(name)
        return self.kernels[name]

    def add_not_checked(self, kernel: str, reason: str, launches: int = 1) -> None:
        for row in self.not_checked:
            if row["kernel"] == kernel and row["reason"] == reason:
                row["launches"] += launches
                return
        self.not_checked.append({"kernel": kernel, "reason": reason, "launches": launches})

    def add_fault(self, kernel: str, error: str, *, kernel_mangled: str | None = None,
                  launch_no: int = 1, launch: dict[str, Any] | None = None,
                  launched_from: dict[str, Any] | None = None,
                  findings_before: int = 0) -> dict[str, Any]:
        """Record a checked launch that faulted; the entry (plain JSON data) is returned."""
        entry = {"kernel": kernel, "kernel_mangled": kernel_mangled or kernel, "error": error,
                 "fault": fault_cause(error), "launch_no": launch_no, "launch": launch or {},
                 "launched_from": launched_from, "findings_before": findings_before}
        self.faults.append(entry)
        return entry

    # ------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "tool": "consan", "version": self.version,
            "ok": self.ok, "verdict": self.verdict, "faulted": self.faulted,
            "not_run": self.not_run,
            "summary": self.summary_line(),
            "program": dict(self.program), "aborted": self.aborted,
            "launches_checked": self.launches_checked,
            "kernels": [k.to_dict() for k in self.kernels.values()],
            "faults": self.faults,
            "findings": [f.to_dict() for f in self.findings],
            "unattributed": self.unattributed,
            "not_checked": self.not_checked, "skipped": dict(self.skipped),
            "other_launches": self.other_launches,
            "suppressions": dict(self.suppressions),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SessionReport:
        if d.get("schema") != SCHEMA:
            raise ValueError(f"not a consan session report (schema {d.get('schema')!r}, "
                             f"expected {SCHEMA!r})")
        rep = cls()
        rep.version = d.get("version", "")
        rep.program = dict(d.get("program") or {})
        rep.aborted = bool(d.get("aborted"))
        rep.kernels = {k["name"]: KernelStats.from_dict(k) for k in d.get("kernels", [])}
        rep.findings = [SessionFinding.from_dict(f) for f in d.get("findings", [])]
        rep.faults = list(d.get("faults", []))
        rep.unattributed = int(d.get("unattributed", 0))
        rep.not_checked = list(d.get("not_checked", []))
        rep.skipped = dict(d.get("skipped", {}))
        rep.other_launches = d.get("other_launches")
        rep.not_run = d.get("not_run")
        rep.suppressions = dict(d.get("suppressions", {}))
        return rep

    @classmethod
    def from_json(cls, text: str) -> SessionReport:
        return cls.from_dict(json.loads(text))

    # ------------------------------------------------------------ text
    def summary_line(self) -> str:
        n_k = len([k for k in self.kernels.values() if k.launches_checked])
        checked = (f"{self.launches_checked} launch{'' if self.launches_checked == 1 else 'es'}"
                   f" of {n_k} kernel{'' if n_k == 1 else 's'} checked")
        active = self.active_findings
        if not active and not self.unattributed:
            verdict = "no findings"
        elif not active:
            verdict = (f"{self.unattributed} violation occurrence(s) counted whose kind and site "
                       "are unknown (their records were not stored)")
        else:
            kinds = Counter(f.kind for f in active)
            verdict = (f"{len(active)} finding{'' if len(active) == 1 else 's'} ("
                       + ", ".join(f"{n} {k}" for k, n in kinds.items()) + ")")
        extra = []
        if self.suppressed_findings:
            extra.append(f"{len(self.suppressed_findings)} suppressed")
        unchecked = sum(r["launches"] for r in self.not_checked)
        if unchecked:
            extra.append(f"{unchecked} launch{'' if unchecked == 1 else 'es'} not checked")
        tail = f" ({'; '.join(extra)})" if extra else ""
        faults = "".join(f"{fault_sentence(f)}; " for f in self.faults)
        if self.not_run and not faults:
            verdict = f"nothing checked ({self.not_run})"
        return f"consan: {faults}{verdict}; {checked}{tail}"

    def render_summary(self, console: Console) -> None:
        """The end-of-run summary: per kernel, what was not checked, and the verdict."""
        if self.kernels:
            table = Table(title="consan summary", title_justify="left", show_edge=False,
                          pad_edge=False)
            table.add_column("kernel", overflow="fold")
            table.add_column("launches checked", justify="right")
            table.add_column("findings")
            table.add_column("shadow memory", justify="right")
            for k in sorted(self.kernels.values(), key=lambda k: k.name):
                found = ", ".join(f"{n} {kind}" for kind, n in sorted(k.findings.items()))
                if any(f["kernel"] == k.name for f in self.faults):
                    found = "faulted" + (", " if found else "") + found
                if k.suppressed:
                    found += (", " if found else "") + f"{k.suppressed} suppressed"
                table.add_row(k.name, str(k.launches_checked), found or "-",
                              human_bytes(k.shadow_bytes) if k.shadow_bytes else "-")
            console.print(table)
        for k in self.kernels.values():
            if k.proven:
                console.print(Text(f"{k.name}: {k.proven}", style="dim"))
            if k.unmodeled:
                console.print(Text(f"{k.name}: {len(k.unmodeled)} instruction(s) that touch "
                                   "shared memory or synchronise were not checked:",
                                   style="yellow"))
                print_unmodeled(console, k.unmodeled)
            for kind, n in k.notes.items():
                console.print(Text(f"{k.name}: tool note {kind} ({n} occurrence(s))",
                                   style="yellow"))
            told = {f["error"] for f in self.faults if f["kernel"] == k.name}
            for err in k.errors:
                if err not in told:
                    console.print(Text(f"{k.name}: a launch failed: {err}", style="bold red"))
        for f in self.faults:
            console.print(Text(fault_sentence(f, where=True), style="bold red"), soft_wrap=True)
        if self.not_checked:
            total = sum(r["launches"] for r in self.not_checked)
            console.print(Text(f"not checked: {total} launch{'' if total == 1 else 'es'} of "
                               f"{len({r['kernel'] for r in self.not_checked})} kernel(s)",
                               style="bold yellow"))
            for r in sorted(self.not_checked, key=lambda r: (-r["launches"], r["kernel"])):
                line = Text("  ")
                line.append(r["kernel"], style="yellow")
                line.append(f"  {r['launches']} launch{'' if r['launches'] == 1 else 'es'}: "
                            f"{r['reason']}")
                console.print(line)
        if self.other_launches:
            console.print(Text(f"launches outside CuPy's compiler (cuBLAS, CUB, cuFFT, ...) "
                               f"were not counted: {self.other_launches}", style="yellow"))
        for option, n in self.skipped.items():
            if n:
                console.print(Text(f"{n} launch{'' if n == 1 else 'es'} skipped by {option}",
                                   style="dim"))
        if self.suppressed_findings:
            console.print(Text(f"{len(self.suppressed_findings)} finding(s) suppressed by "
                               f"{self.suppressions.get('file', 'the suppressions file')}",
                               style="dim"))
        for rule in self.suppressions.get("unused", []):
            console.print(Text(f"unused suppression {rule}", style="dim"))
        if self.aborted:
            console.print(Text("consan stopped the program at the first launch with a "
                               "finding (--on-violation=abort)", style="bold red"))
        console.print(Text(self.summary_line(), style="bold green" if self.ok else "bold red"))

    def render_findings(self, console: Console) -> None:
        """Every active finding as a short plain block (used when no live report was kept)."""
        for f in self.active_findings:
            console.print(Text(f"{f.kind}  {f.finding.title}  in {f.kernel} at "
                               f"{f.current.where if f.current else 'unknown site'}",
                               style="bold red"))
            console.print(Text(f"  {f.finding.what}"))
            console.print(Text(f"  fix: {f.finding.fix}", style="green"))


def fault_sentence(fault: dict[str, Any], where: bool = False) -> str:
    """`kernel K faulted: <what CUDA said>`; with `where`, which launch and from where."""
    text = f"kernel {fault.get('kernel')} faulted"
    if where:
        text += f" on launch #{fault.get('launch_no', 1)}"
        shape = launch_text(fault.get("launch"))
        text += f" ({shape})" if shape else ""
        src = fault.get("launched_from") or {}
        if src.get("file"):
            text += f", launched from {src['file']}:{src.get('line')}"
    return f"{text}: {fault.get('fault') or fault_cause(str(fault.get('error', '')))}"


def launch_text(launch: dict[str, Any] | None) -> str:
    if not launch:
        return ""
    def dims(v: Any) -> str:
        return "(" + ",".join(str(x) for x in v) + ")" if isinstance(v, (list, tuple)) else str(v)
    parts = [f"{k}={dims(launch[k])}" for k in ("grid", "block", "cluster")
             if launch.get(k) is not None]
    if launch.get("shared_mem"):
        parts.append(f"shared_mem={launch['shared_mem']}")
    return ", ".join(parts)


def finding_header(kernel: str, launch: dict[str, Any] | None, launch_no: int,
                   launched_from: dict[str, Any] | None) -> Text:
    """One line that says which launch of which kernel, from where, the blocks below are about."""
    text = Text()
    text.append("consan: ", style="bold")
    text.append(f"kernel {kernel}", style="bold")
    shape = launch_text(launch)
    text.append(f", launch #{launch_no}" + (f" ({shape})" if shape else ""))
    if launched_from and launched_from.get("file"):
        text.append(f", launched from {launched_from['file']}:{launched_from.get('line')}")
    return text


def render_live_findings(console: Console, findings: list[Finding], sources: dict[str, str],
                         ptx_name: str, header: Text) -> None:
    """New findings of one launch, with source context, as the terminal report shows them."""
    src = SourceLines(sources)
    console.print(header)
    for f in findings:
        for part in finding_block(f, src, ptx_name):
            console.print(part)
        console.print()


def render_live_fault(console: Console, findings: list[Finding], recorded: int,
                      sources: dict[str, str], ptx_name: str, header: Text, fault: str) -> None:
    """A checked launch that faulted, as soon as it did: the fault first, then what the
    checker recorded before it (`findings` in full, of `recorded` in all), then what the
    fault means for the rest of the program."""
    src = SourceLines(sources)
    console.print(header)
    console.print(Text(f"  the kernel faulted: {fault}", style="bold red"), soft_wrap=True)
    if findings:
        console.print(Text("  recorded before the fault (consan's log is in host memory and "
                           "survives it):", style="red"), soft_wrap=True)
        console.print()
        for f in findings:
            for part in finding_block(f, src, ptx_name):
                console.print(part)
            console.print()
    if recorded > len(findings):
        more = recorded - len(findings)
        console.print(Text(f"  {'' if findings else 'before the fault '}consan recorded "
                           f"{more} {'more ' if findings else ''}finding(s) not shown here "
                           "(reported for earlier launches, or past --print-limit): see the "
                           "summary", style="red"), soft_wrap=True)
    elif not findings:
        console.print(Text("  consan recorded no violation in this launch before the fault",
                           style="red"), soft_wrap=True)
    console.print(Text("  after a fault the CUDA context of the process is unusable: the "
                       "program's next CUDA call fails with the same error", style="dim"),
                  soft_wrap=True)
