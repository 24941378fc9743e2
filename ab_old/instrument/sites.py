"""The one definition of the site table.

A site is one probed instruction. Records from the device name sites by id;
the table turns an id into the PTX line and text and, when the PTX carried
`.loc` information, the user's source file/line/column and the chain of
inlined calls that led there.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class SourceLoc:
    file: str
    line: int
    col: int
    function: str | None = None  # the inlined function this location is in, if known

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" + (f":{self.col}" if self.col else "")


@dataclass(frozen=True)
class Site:
    id: int
    kernel: str  # the .entry (or .func) the instruction is in
    event: str  # model event (instrument.events.Event value)
    ptx_line: int  # 1-based line in the input PTX
    ptx_text: str  # the instruction as written
    size: int = 0  # bytes per lane for accesses
    loc: SourceLoc | None = None  # innermost source location
    inlined_at: tuple[SourceLoc, ...] = ()  # outward chain of call sites
    merged_lines: tuple[int, ...] = ()  # PTX lines of later accesses this probe also checks

    def where(self) -> str:
        if self.loc is not None:
            return str(self.loc)
        return f"<ptx>:{self.ptx_line}"


@dataclass
class SiteTable:
    sites: list[Site] = field(default_factory=list)
    ptx_name: str = "<ptx>"
    sources: dict[str, str] = field(default_factory=dict)  # file name -> text, when known

    def add(self, **kw) -> Site:
        site = Site(id=len(self.sites), **kw)
        self.sites.append(site)
        return site

    def __getitem__(self, i: int) -> Site:
        return self.sites[i]

    def get(self, i: int) -> Site | None:
        return self.sites[i] if 0 <= i < len(self.sites) else None

    def __len__(self) -> int:
        return len(self.sites)

    def to_json(self) -> str:
        return json.dumps(
            {"ptx_name": self.ptx_name, "sources": self.sources,
             "sites": [asdict(s) for s in self.sites]}
        )

    @classmethod
    def from_json(cls, text: str) -> SiteTable:
        d = json.loads(text)
        sites = []
        for s in d["sites"]:
            loc = SourceLoc(**s["loc"]) if s.get("loc") else None
            chain = tuple(SourceLoc(**c) for c in s.get("inlined_at", ()))
            sites.append(Site(**{**s, "loc": loc, "inlined_at": chain,
                                  "merged_lines": tuple(s.get("merged_lines", ()))}))
        return cls(sites=sites, ptx_name=d.get("ptx_name", "<ptx>"), sources=d.get("sources", {}))
