"""A seeded mutator over the PTX corpus, for fuzzing the parser and the rewriter.

Each mutant is a corpus module (tests/corpus/*.cu through corpus_build, and
tests/corpus/triton/*.ptx) with a few edits: truncations, token swaps, random operands,
random characters, dropped or duplicated lines, changed state spaces, vector widths,
numbers, predicates or opcodes, unbalanced brackets, instructions spliced in from another
module; and edits that keep the PTX valid as often as not, so that the rewriter's output
is what gets checked: branches over (or back across) code, `{ }` scopes, synchronisation
and shared-memory instructions on the function's own registers, other registers of a
class, comments and line breaks inside statements and directives. A mutant is fully
described by its `Mutant` record (module label and the edits, applied in order), so a
failure prints one line that replays it exactly.

The property (`verdict`): the rewriter either instruments the mutant -- and then, when
ptxas assembles the mutant itself, ptxas assembles the instrumented PTX too (but for a
ptxas crash of its own, see `waits_read`) -- or refuses it with a PTXSyntaxError /
InstrumentError whose one-line message names the file and a line; nothing else (a
KeyError, an IndexError, ...) may escape.

Run it longer than CI does: `python -m tests.ptx_fuzz [COUNT] [SEED]`.
"""

from __future__ import annotations

import functools
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from instrument.ptx import Item, PTXSyntaxError, parse
from instrument.rewrite import InstrumentError, instrument
from tests import corpus_build as cb

SEED = int(os.environ.get("CONSAN_FUZZ_SEED", "20250611"))
COUNT = int(os.environ.get("CONSAN_FUZZ_COUNT", "300"))
PTXAS = shutil.which("ptxas")

# Whole-module refusals: there is no line to name.
MODULE_LEVEL = ("no .entry or .func bodies", "no .target directive")


@dataclass(frozen=True)
class Edit:
    """Replace text[start:end] with `text` (offsets into the text the edit applies to)."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Mutant:
    """A corpus module and the edits made to it, in order."""

    module: str  # corpus label, e.g. "reduce_smem/compute_80/O3" or "triton/triton_add"
    kind: str  # the mutations, e.g. "operand+drop_lines"
    edits: tuple[Edit, ...]
    seed: str = ""  # how the generator made it (informative; the edits replay it)

    @property
    def file(self) -> str:
        """The file name the rewriter is given (and must name when it refuses)."""
        return self.module.replace("/", "-") + ".ptx"

    def text(self) -> str:
        out = modules()[self.module]
        for e in self.edits:
            out = out[: e.start] + e.text + out[e.end :]
        return out

    def describe(self) -> str:
        """Each edit with its line and the lines it changed, and the record that replays it."""
        out, lines = modules()[self.module], []
        for e in self.edits:
            line = out.count("\n", 0, e.start) + 1
            lo = out.rfind("\n", 0, e.start) + 1
            hi = out.find("\n", e.end)
            hi = len(out) if hi < 0 else hi
            after = out[: e.start] + e.text + out[e.end :]
            new_hi = hi + len(e.text) - (e.end - e.start)
            lines.append(f"  line {line}: {out[lo:hi]!r:.200} -> {after[lo:new_hi]!r:.200}")
            out = after
        return (f"mutant {self.seed} of {self.module} ({self.kind}):\n" + "\n".join(lines)
                + f"\n  replay: {self!r}")


# ---------------------------------------------------------------- corpus


# NVRTC writes the working directory into `.file` ("/work/main/bulk_copy.cu"): the
# directory is cut so that a mutant's offsets replay in any checkout.
_FILE_DIR_RE = re.compile(r'^(\s*\.file\s+\d+\s+")[^"\n]*/', re.M)


@functools.cache
def modules() -> dict[str, str]:
    """Every corpus module by label: the compiled .cu variants, then Triton's PTX.

    The same text in every checkout: the `.file` paths keep their file names only.
    """
    out = {v.label: _FILE_DIR_RE.sub(r"\1", ptx) for v, ptx in cb.corpus_modules()}
    for p in sorted((cb.CORPUS_DIR / "triton").glob("*.ptx")):
        out[f"triton/{p.stem}"] = p.read_text()
    return out


def target(module: str) -> str:
    """The real architecture ptxas assembles the module (and its mutants) for."""
    m = re.search(r"^\s*\.target\s+(sm_\d+a?)", modules()[module], re.M)
    return m.group(1) if m else "sm_90a"


# ---------------------------------------------------------------- mutations

# Lines the rewriter works on: its mutations are the interesting ones.
_EVENTFUL = re.compile(r"shared|\bbar|mbarrier|cp\.|wgmma|fence|\bret\b|\bexit\b|\bbra\b|"
                       r"\.loc\b|\bld\.|\bst\.|atom|\bred\.|ldmatrix|stmatrix|\.reg\b|"
                       r"\.entry|\.func|^\s*[{}]\s*$|^\s*\$?\w+:")
_SPACES = (".shared", ".shared::cta", ".shared::cluster", ".global", ".local", ".param",
           ".const", "")
_SPACE_RE = re.compile(r"\.(shared(::cta|::cluster)?|global|local|param|const)\b")
_VEC_RE = re.compile(r"\.v(2|4|8)\b")
_NUM_RE = re.compile(r"(?<![\w%$.])-?(0[xX][0-9a-fA-F]+|\d+)(?![\w.])")
_TOKEN_RE = re.compile(r"[^\s,;{}\[\]()]+")
_NUMBERS = ("0", "1", "-1", "3", "7", "16", "255", "4096", "0x7fffffff", "4294967296",
            "18446744073709551616", "0x", "1.5", "99999999999999999999999", "010", "08",
            "0b101", "16U", "-0x10")
_CHARS = (list("{}[]();,:.@!%$\"'/*+-=<>|&~#\\ \t\n") + list("abcxyz019_")
          + ["\r", "\x0b", "\x0c", "\u00e9", "\u2028", "\u00a0", "\ufeff", "//", "/*", "*/",
             "\x00", "\udcff"])  # (the last is written as the byte 0xff: not UTF-8)
_OPCODE_SWAPS = (("bar.sync", "bar.arrive"), ("bar.arrive", "bar.red.popc.u32"),
                 ("barrier.sync", "barrier.cluster.arrive"), ("ld.", "st."), ("st.", "ld."),
                 ("ld.", "ldu."), ("atom.", "red."), ("mbarrier.arrive", "mbarrier.try_wait"),
                 ("mbarrier.try_wait", "mbarrier.arrive"), ("mbarrier.init", "mbarrier.inval"),
                 ("commit_group", "wait_group"), ("wait_group", "commit_group"),
                 (".parity", ""), (".aligned", ""), (".sync", ""), ("wait_group",
                                                                    "wait_group.read"),
                 ("cp.async.ca", "cp.async.bulk"), ("ret", "exit"), ("exit", "ret"),
                 ("bra", "bra.uni"), (".tile", ".im2col"), ("2d", "3d"), ("::cta", "::cluster"),
                 ("mma_async", "fence"), ("ldmatrix", "stmatrix"), (".x4", ".x2"))


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of every line, without its newline."""
    out, pos = [], 0
    for ln in text.split("\n"):
        out.append((pos, pos + len(ln)))
        pos += len(ln) + 1
    return out


def _pick_line(rng: random.Random, text: str, pattern: re.Pattern | None = None
               ) -> tuple[int, int]:
    """A line, three times in four one the rewriter works on (or one matching `pattern`)."""
    lines = _lines(text)
    want = pattern or _EVENTFUL
    hits = [ln for ln in lines if want.search(text[ln[0]:ln[1]])]
    if hits and (pattern is not None or rng.random() < 0.75):
        return rng.choice(hits)
    return rng.choice(lines)


def _registers(text: str) -> list[str]:
    return sorted(set(re.findall(r"%[A-Za-z_]\w*", text))) or ["%r1"]


def m_truncate(rng: random.Random, text: str) -> list[Edit]:
    pos = rng.randrange(len(text))
    if rng.random() < 0.4:
        pos = _pick_line(rng, text)[1]
    return [Edit(pos, len(text), "")]


def m_swap_tokens(rng: random.Random, text: str) -> list[Edit]:
    a0, a1 = _pick_line(rng, text)
    b0, b1 = (a0, a1) if rng.random() < 0.6 else _pick_line(rng, text)
    ta = list(_TOKEN_RE.finditer(text, a0, a1))
    tb = list(_TOKEN_RE.finditer(text, b0, b1))
    if not ta or not tb:
        return []
    x, y = rng.choice(ta), rng.choice(tb)
    if x.start() == y.start():
        return []
    first, second = sorted((x, y), key=lambda m: m.start())
    if first.end() > second.start():
        return []
    # Replace the later one first so the earlier offsets still hold.
    return [Edit(second.start(), second.end(), first.group(0)),
            Edit(first.start(), first.end(), second.group(0))]


def m_operand(rng: random.Random, text: str) -> list[Edit]:
    lo, hi = _pick_line(rng, text, re.compile(r"^\s*(@!?%\w+\s+)?[a-z][\w.:]*\s+[^;]*;"))
    line = text[lo:hi]
    m = re.match(r"(\s*(?:@!?%\w+\s+)?[a-z][\w.:]*\s+)([^;]*);", line)
    if not m:
        return []
    ops, start = [], lo + m.end(1)
    depth, cur = 0, start
    for i, ch in enumerate(m.group(2)):
        depth += (ch in "{[(") - (ch in "}])")
        if ch == "," and depth == 0:
            ops.append((cur, start + i))
            cur = start + i + 1
    ops.append((cur, start + len(m.group(2))))
    regs = _registers(text)
    r1, r2, num = rng.choice(regs), rng.choice(regs), rng.choice(_NUMBERS)
    choices = [r1, f"[{r1}]", f"[{r1}+{num}]", num, "%undeclared", f"{{{r1}, {r2}}}",
               "[]", "", "_", "[%r1+%r2]", "[sym]", "[0x100]", f"[{r1}-8]",
               "[%rd1+-4]", "[ %rd1 + 4 ]", "!%p1", "{}", "[%rd1, {%r1}]", "%rd1<3>",
               f"[{r2}+{r1}]"]
    s, e = rng.choice(ops)
    return [Edit(s, e, " " + rng.choice(choices))]


def m_bytes(rng: random.Random, text: str) -> list[Edit]:
    out = []
    for _ in range(rng.randint(1, 3)):
        lo, hi = _pick_line(rng, text)
        pos = rng.randint(lo, hi)
        junk = "".join(rng.choice(_CHARS) for _ in range(rng.randint(1, 4)))
        end = pos + (rng.randint(0, 2) if rng.random() < 0.5 else 0)
        out.append(Edit(pos, min(end, len(text)), junk))
        text = text[:pos] + junk + text[min(end, len(text)):]
    return out


def m_drop_lines(rng: random.Random, text: str) -> list[Edit]:
    lo, _ = _pick_line(rng, text)
    n = rng.randint(1, 3)
    lines = [ln for ln in _lines(text) if ln[0] >= lo][:n]
    return [Edit(lo, min(lines[-1][1] + 1, len(text)), "")]


def m_dup_lines(rng: random.Random, text: str) -> list[Edit]:
    lo, _ = _pick_line(rng, text)
    n = rng.randint(1, 3)
    lines = [ln for ln in _lines(text) if ln[0] >= lo][:n]
    chunk = text[lo:lines[-1][1]] + "\n"
    at = lo if rng.random() < 0.6 else rng.choice(_lines(text))[0]
    return [Edit(at, at, chunk)]


def m_state_space(rng: random.Random, text: str) -> list[Edit]:
    lo, hi = _pick_line(rng, text, _SPACE_RE)
    hits = list(_SPACE_RE.finditer(text, lo, hi))
    if not hits:
        return []
    m = rng.choice(hits)
    return [Edit(m.start(), m.end(), rng.choice(_SPACES))]


def m_vector(rng: random.Random, text: str) -> list[Edit]:
    if rng.random() < 0.5:
        got = _resized_vector(rng, text)
        if got:
            return got
    if rng.random() < 0.7:
        lo, hi = _pick_line(rng, text, _VEC_RE)
        hits = list(_VEC_RE.finditer(text, lo, hi))
        if hits:
            m = rng.choice(hits)
            return [Edit(m.start(), m.end(), rng.choice([".v2", ".v4", ".v8", "", ".v3"]))]
    lo, hi = _pick_line(rng, text, re.compile(r"\b(ld|st)\.shared"))
    m = re.search(r"\.shared(::cta)?", text[lo:hi])
    if not m:
        return []
    pos = lo + m.end()
    return [Edit(pos, pos, rng.choice([".v2", ".v4", ".v8"]))]


def _resized_vector(rng: random.Random, text: str) -> list[Edit]:
    """A vector access of another width, its `{...}` register list cut or grown with other
    registers of the function (valid PTX as often as not)."""
    bodies = [b for b in _functions(text)
              if any(it.is_instruction and _VEC_RE.search(it.opcode) for _, it in b)]
    if not bodies:
        return []
    body = rng.choice(bodies)
    start, it = rng.choice([(o, it) for o, it in body
                            if it.is_instruction and _VEC_RE.search(it.opcode)])
    vec, group = _VEC_RE.search(it.text), re.search(r"\{([^{}]*)\}", it.text)
    if vec is None or group is None:
        return []
    regs = [r.strip() for r in group.group(1).split(",")]
    width = rng.choice([w for w in (2, 4, 8) if w != len(regs)])
    if width < len(regs):
        new = regs[:width]
    else:
        cls = next((v for v in _declared(body).values() if regs[0] in v), [])
        spare = [r for r in cls if r not in regs]
        if len(spare) < width - len(regs):
            return []
        new = regs + rng.sample(spare, width - len(regs))
    # (the list after the opcode first, so the opcode's offsets still hold)
    return [Edit(start + group.start(1), start + group.end(1), ", ".join(new)),
            Edit(start + vec.start(), start + vec.end(), f".v{width}")]


def m_brackets(rng: random.Random, text: str) -> list[Edit]:
    lo, hi = _pick_line(rng, text)
    seg = text[lo:hi]
    found = [lo + i for i, ch in enumerate(seg) if ch in "{}[]();"]
    if found and rng.random() < 0.5:
        p = rng.choice(found)
        return [Edit(p, p + 1, "")]
    if rng.random() < 0.3:  # a brace on a line of its own
        return [Edit(lo, lo, rng.choice("{}") + "\n")]
    p = rng.randint(lo, hi)
    return [Edit(p, p, rng.choice("{}[]();"))]


def m_number(rng: random.Random, text: str) -> list[Edit]:
    lo, hi = _pick_line(rng, text, _NUM_RE)
    hits = list(_NUM_RE.finditer(text, lo, hi))
    if not hits:
        return []
    m = rng.choice(hits)
    return [Edit(m.start(), m.end(), rng.choice(_NUMBERS))]


def m_predicate(rng: random.Random, text: str) -> list[Edit]:
    lo, hi = _pick_line(rng, text, re.compile(r"^\s*(@!?%\w+\s+)?[a-z][\w.:]*[\s;]"))
    m = re.match(r"\s*(@!?%\w+\s+)?", text[lo:hi])
    s, e = lo + m.start(1 if m.group(1) else 0), lo + m.end()
    pred = rng.choice(["", "@%p1 ", "@!%p1 ", "@%r1 ", "@%nope ", "@ ", "@!%p1@%p2 "])
    if m.group(1):
        return [Edit(s, e, pred)]
    return [Edit(e, e, pred or "@%p1 ")]


def m_opcode(rng: random.Random, text: str) -> list[Edit]:
    old, new = rng.choice(_OPCODE_SWAPS)
    lo, hi = _pick_line(rng, text, re.compile(re.escape(old)))
    i = text.find(old, lo, hi)
    if i < 0:
        return []
    return [Edit(i, i + len(old), new)]


def m_splice(rng: random.Random, text: str) -> list[Edit]:
    """An instruction from another corpus module, put into this one."""
    other = modules()[rng.choice(sorted(modules()))]
    lo, hi = _pick_line(rng, other, _EVENTFUL)
    at = _pick_line(rng, text)[0]
    return [Edit(at, at, other[lo:hi] + "\n")]


# Mutations that keep the PTX valid as often as not: the instrumented PTX must then
# assemble, so these are the ones that test the rewriter's output.


@functools.lru_cache(maxsize=32)  # (most mutations start from a corpus module)
def _functions(text: str) -> list[list[tuple[int, Item]]]:
    """Each function body's items with their offsets; none when the text does not parse."""
    try:
        mod = parse(text)
    except PTXSyntaxError:
        return []
    offsets, pos = [], 0
    for it in mod.items:
        offsets.append(pos)
        pos += len(it.text)
    return [[(offsets[i], mod.items[i]) for i in range(f.open_index + 1, f.close_index)]
            for f in mod.functions]


@functools.lru_cache(maxsize=32)
def _statements(text: str) -> list[tuple[int, Item]]:
    """The directives of the module and its functions, with their offsets."""
    try:
        items = parse(text).items
    except PTXSyntaxError:
        return []
    out, pos = [], 0
    for it in items:
        if it.is_directive:
            out.append((pos, it))
        pos += len(it.text)
    return out


_DECL = re.compile(r"\.reg\s+\.(\w+)\s+(%[A-Za-z_$]\w*?)<(\d+)>")
_CLASSES = {"pred": "p", "b16": "r16", "u16": "r16", "s16": "r16", "b32": "r32", "u32": "r32",
            "s32": "r32", "b64": "r64", "u64": "r64", "s64": "r64", "f32": "f32"}


def _declared(body: list[tuple[int, Item]]) -> dict[str, list[str]]:
    """Registers a function declares (`.reg .b32 %r<9>`), by class: p, r16, r32, r64, f32."""
    out: dict[str, list[str]] = {}
    for _, it in body:
        m = _DECL.search(it.text) if it.kind == "stmt" and it.opcode == ".reg" else None
        if m and m.group(1) in _CLASSES and int(m.group(3)) > 1:
            out.setdefault(_CLASSES[m.group(1)], []).extend(
                f"{m.group(2)}{k}" for k in range(1, min(int(m.group(3)), 64)))
    return out


def _code_span(rng: random.Random, text: str, most: int = 8
               ) -> tuple[list[tuple[int, Item]], int, int] | None:
    """A function body, and a run of its items (start and end offsets) that begins at an
    instruction, often one the rewriter probes, and holds up to `most` statements or
    labels."""
    fns = [f for f in _functions(text) if any(it.is_instruction for _, it in f)]
    if not fns:
        return None
    body = rng.choice(fns)
    code = [k for k, (_, it) in enumerate(body) if it.is_instruction]
    eventful = [k for k in code if _EVENTFUL.search(body[k][1].text)]
    first = rng.choice(eventful if eventful and rng.random() < 0.75 else code)
    n, last = rng.randint(1, most), first
    for k in range(first, len(body)):
        if body[k][1].kind in ("stmt", "label"):
            n -= 1
            last = k
            if n == 0:
                break
    end = body[last][0] + len(body[last][1].text)
    return body, body[first][0], end


def m_branch(rng: random.Random, text: str) -> list[Edit]:
    """A predicated branch over a run of code (converge.py and loops.py rewrite those), or
    back to its start (a loop)."""
    got = _code_span(rng, text, most=rng.choice((3, 8, 20)))
    if got is None:
        return []
    body, start, end = got
    preds = _declared(body).get("p")
    if not preds:
        return []
    label = f"$L__fz{rng.randrange(10**6)}"
    pred = rng.choice(("@", "@!")) + rng.choice(preds[:3])
    bra = rng.choice(("bra", "bra", "bra.uni")) if rng.random() < 0.9 else "bra"
    if rng.random() < 0.8:  # forward, over the run
        return [Edit(end, end, f"\n{label}:"), Edit(start, start, f"{pred} {bra} {label};\n\t")]
    return [Edit(end, end, f"\n\t{pred} bra {label};"), Edit(start, start, f"{label}:\n\t")]


def m_scope(rng: random.Random, text: str) -> list[Edit]:
    """A `{ }` scope around a run of code."""
    got = _code_span(rng, text)
    if got is None:
        return []
    _, start, end = got
    return [Edit(end, end, "\n\t}"), Edit(start, start, "{\n\t")]


_TEMPLATES = (
    "bar.sync 0;", "bar.sync 1, 64;", "bar.arrive 1, 64;", "barrier.sync.aligned 0;",
    "barrier.sync 2;", "bar.red.popc.u32 {r32}, 0, {p};", "bar.red.and.pred {p}, 3, 64, !{p};",
    "membar.cta;", "fence.proxy.async.shared::cta;", "fence.acq_rel.cta;",
    "fence.proxy.async;", "cp.async.commit_group;", "cp.async.wait_all;",
    "cp.async.wait_group 1;", "cp.async.bulk.commit_group;", "cp.async.bulk.wait_group.read 0;",
    "cp.async.bulk.wait_group 1;", "ret;", "exit;", "@{p} ret;", "@!{p} exit;",
    "st.shared.u32 [{r64}], {r32};", "st.shared.u32 [{r32}+4], {r32};",
    "ld.shared.v2.u32 {{{r32}, {r32b}}}, [{r64}+8];", "ld.shared.u32 {r32}, [{r64}+-4];",
    "atom.shared.add.u32 {r32}, [{r64}], 1;", "red.shared.add.u32 [{r64}], {r32};",
    "atom.shared.cas.b32 {r32}, [{r32b}], {r32}, {r32b};", "ld.volatile.shared.u32 {r32}, [{r32}];",
    "st.shared.u8 [{r64}], {r16};", "ld.shared.u16 {r16}, [{r64}+2];", "ld.u32 {r32}, [{r64}];",
    "st.u64 [{r64}+8], {r64b};", "@{p} ld.shared.u32 {r32}, [{r64}];",
    "@!{p} st.shared.v4.u32 [{r64}], {{{r32}, {r32}, {r32b}, {r32b}}};",
    "mbarrier.init.shared.b64 [{r64}], 1;", "mbarrier.init.shared::cta.b64 [{r32}], {r32b};",
    "mbarrier.arrive.shared.b64 {r64b}, [{r64}];", "mbarrier.arrive.expect_tx.shared::cta.b64 "
    "_, [{r32}], 64;", "mbarrier.try_wait.parity.shared::cta.b64 {p}, [{r32}], {r32b};",
    "mbarrier.test_wait.shared.b64 {p}, [{r64}], {r64b};", "mbarrier.inval.shared.b64 [{r64}];",
    "mbarrier.arrive_drop.shared.b64 _, [{r64}];", "cp.async.mbarrier.arrive.shared.b64 [{r64}];",
    "cp.async.ca.shared.global [{r64}], [{r64b}], 4;",
    "cp.async.cg.shared.global [{r32}], [{r64b}], 16, {r32b};",
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{r32}], [{r64}], 64, "
    "[{r32b}];", "cp.async.bulk.global.shared::cta.bulk_group [{r64}], [{r32}], 128;",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{r32}], "
    "[{r64}, {{{r32b}, {r32b}}}], [{r32}];",
    "cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [{r64}, {{{r32}}}], [{r32b}];",
    "wgmma.fence.sync.aligned;", "wgmma.commit_group.sync.aligned;",
    "wgmma.wait_group.sync.aligned 0;", "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {{{r32}}}, "
    "[{r64}];", "stmatrix.sync.aligned.m8n8.x2.shared.b16 [{r32}], {{{r32b}, {r32}}};",
    "isspacep.shared {p}, {r64};", "cvta.to.shared.u64 {r64}, {r64b};",
    "barrier.cluster.arrive.release;", "st.shared::cluster.u32 [{r32}], {r32b};",
    "bar.warp.sync -1;", "add.s64 {r64}, {r64b}, 16;", "cvt.u32.u64 {r32}, {r64};",
    "mov.u32 {r32}, {r32b};", "setp.ne.s32 {p}, {r32}, 0;",
)


def m_insert(rng: random.Random, text: str) -> list[Edit]:
    """A synchronisation or shared-memory instruction, on the function's own registers."""
    got = _code_span(rng, text, most=1)
    if got is None:
        return []
    body, start, _ = got
    regs = _declared(body)
    fields = {"p": "p", "r16": "r16", "r32": "r32", "r32b": "r32", "r64": "r64", "r64b": "r64"}
    line = rng.choice(_TEMPLATES)
    values: dict[str, str] = {}
    for name, cls in fields.items():
        if "{" + name + "}" in line:
            # (a second register differs from the first: `[%rd1], %rd1` tends to meet the
            # ptxas crash of waits_read)
            pick = [r for r in regs.get(cls, [])[:16] if r not in values.values()]
            if not pick:
                return []
            values[name] = rng.choice(pick)
    line = line.format(**values)
    if rng.random() < 0.7:
        return [Edit(start, start, line + "\n\t")]
    return [Edit(start, start, "@" + rng.choice(regs.get("p", ["%p1"])[:3]) + " " + line + "\n\t")]


def m_register(rng: random.Random, text: str) -> list[Edit]:
    """A register operand replaced by another of its class that the function declares."""
    got = _code_span(rng, text, most=1)
    if got is None:
        return []
    body, start, _ = got
    it = next(it for o, it in body if o == start)
    regs = _declared(body)
    hits = [m for m in re.finditer(r"%[A-Za-z_]+\d+", it.text)]
    rng.shuffle(hits)
    for m in hits:
        cls = next((k for k, v in regs.items() if m.group(0) in v), None)
        if cls:
            new = rng.choice(regs[cls][:24])
            return [Edit(start + m.start(), start + m.end(), new)]
    return []


def m_trivia(rng: random.Random, text: str) -> list[Edit]:
    """Comments and line breaks where PTX allows them: inside a statement, after it, or
    CRLF line ends throughout."""
    if rng.random() < 0.05:
        return [Edit(0, len(text), text.replace("\n", "\r\n"))]
    if rng.random() < 0.4:  # a directive's (.reg, .shared, .entry, .loc, ...)
        stmts = _statements(text)
        if not stmts:
            return []
        start, it = rng.choice(stmts)
        end = start + len(it.text)
    else:
        got = _code_span(rng, text, most=1)
        if got is None:
            return []
        _, start, end = got
    seg = text[start:end]
    gaps = [start + m.end() for m in re.finditer(r"[,\s]", seg)] or [start]
    at = rng.choice(gaps)
    junk = rng.choice(("/* c */", "/**/", "\n\t\t", " // }\n\t", "\n/* { ; */\n", "\t"))
    if junk.startswith(" //") and at != gaps[-1]:
        junk = "/*//*/"
    return [Edit(at, at, junk)]


MUTATIONS: dict[str, Callable[[random.Random, str], list[Edit]]] = {
    "truncate": m_truncate, "swap_tokens": m_swap_tokens, "operand": m_operand,
    "bytes": m_bytes, "drop_lines": m_drop_lines, "dup_lines": m_dup_lines,
    "state_space": m_state_space, "vector": m_vector, "brackets": m_brackets,
    "number": m_number, "predicate": m_predicate, "opcode": m_opcode, "splice": m_splice,
    "branch": m_branch, "scope": m_scope, "insert": m_insert, "register": m_register,
    "trivia": m_trivia,
}
# How often each is picked: the ones that keep the PTX valid test the rewriter's output.
WEIGHTS = {"truncate": 0, "branch": 4, "scope": 2, "insert": 6, "register": 3, "trivia": 2}


def mutant(seed: int, i: int) -> Mutant:
    """The i-th mutant of the run seeded `seed`: modules round-robin (in a seeded order),
    one mutation, sometimes two or three (a truncation only ever last)."""
    labels = sorted(modules())
    random.Random(seed).shuffle(labels)
    rng = random.Random(f"{seed}:{i}")
    module = labels[i % len(labels)]
    text = modules()[module]
    kinds, edits = [], []
    n = 1 if rng.random() < 0.7 else rng.randint(2, 3)
    names = list(MUTATIONS)
    weights = [WEIGHTS.get(k, 1) for k in names]
    for j in range(n):
        kind = "truncate" if j == n - 1 and rng.random() < 0.06 else \
            rng.choices(names, weights)[0]
        for _ in range(5):  # a mutation may find nothing to change: try again
            got = MUTATIONS[kind](rng, text)
            if got:
                break
        for e in got:
            text = text[: e.start] + e.text + text[e.end :]
        kinds.append(kind)
        edits += got
    return Mutant(module, "+".join(kinds), tuple(edits), f"{seed}:{i}")


@functools.cache
def mutants(seed: int = SEED, count: int = COUNT) -> tuple[Mutant, ...]:
    return tuple(mutant(seed, i) for i in range(count))


# ---------------------------------------------------------------- the property


_VERSION = re.compile(r"^\s*\.version\s+(\d+\.\d+)", re.M)


@functools.cache
def _reads_version(version: str) -> str | None:
    """None where the ptxas on PATH reads PTX ISA `version`, else its complaint."""
    ok, log = assembles(f".version {version}\n.target sm_80\n.address_size 64\n", "sm_80")
    said = re.search(r"fatal\s*:\s*(.+)", log)
    return None if ok else said.group(1).strip() if said else "it refused an empty module"


def ptxas_cannot_read(ptx: str) -> str | None:
    """Why the ptxas on PATH cannot judge `ptx` (its PTX ISA is newer than that ptxas reads:
    the corpus comes from the NVRTC installed, Triton bundles an older ptxas), else None."""
    m = _VERSION.search(ptx)
    why = _reads_version(m.group(1)) if PTXAS and m else None
    return None if why is None else f"{PTXAS} does not read PTX .version {m.group(1)}: {why}"


class _NotKept(Exception):
    """A ptxas run whose answer is not kept on disk (a timeout, a crash): its message."""


class _NotAnswered(Exception):
    """ptxas's answer, asked for from disk alone (`assembles(kept_only=True)`), is not
    there."""


def assembles(ptx: str, arch: str, kept_only: bool = False) -> tuple[bool, str]:
    """(ptxas assembles `ptx` for `arch`, its log). The answer is kept on disk, keyed by the
    ptxas binary, `arch` and every byte of `ptx` (corpus_build.kept): the seeded run gives
    ptxas the same texts each time (the mutants, and their instrumented PTX while the
    rewriter makes the same), 400-odd runs, 40-50 s of CI's CPU time. A timeout or a crash
    is asked again each time. `kept_only`: the answer kept on disk, else _NotAnswered
    (ptxas is not run)."""
    if PTXAS is None:
        if kept_only:
            raise _NotAnswered
        return _assembles(ptx, arch)

    def run() -> str:
        ok, log = _assembles(ptx, arch, kept=True)
        return ("ok\n" if ok else "no\n") + log

    parts = (cb.tool_identity(PTXAS), arch, ptx)
    if kept_only:
        got = cb.kept_answer("ptxas", parts)
        if got is None:
            raise _NotAnswered
    else:
        try:
            got = cb.kept("ptxas", parts, run)
        except _NotKept as e:
            return False, str(e)
    ok, _, log = got.partition("\n")
    return ok == "ok", log


def _assembles(ptx: str, arch: str, kept: bool = False) -> tuple[bool, str]:
    """(ptxas assembles `ptx` for `arch`, its log), from ptxas now; `kept`: a timeout or a
    crash raises _NotKept instead."""
    with tempfile.TemporaryDirectory(prefix="consan-fuzz-") as d:
        src = Path(d) / "m.ptx"
        src.write_text(ptx, encoding="utf-8", errors="surrogateescape")
        try:
            r = subprocess.run([PTXAS or "ptxas", f"-arch={arch}", "-c", str(src), "-o",
                                str(Path(d) / "m.o")], capture_output=True, text=True,
                               timeout=60, errors="replace")
        except subprocess.TimeoutExpired:
            if kept:
                raise _NotKept("ptxas timed out") from None
            return False, "ptxas timed out"
    if r.returncode < 0:
        why = f"ptxas crashed (signal {-r.returncode})\n{r.stderr}{r.stdout}"
        if kept:
            raise _NotKept(why)
        return False, why
    return r.returncode == 0, r.stderr + r.stdout


def waits_read(ptx: str) -> str:
    """`ptx` with the result of every mbarrier test_wait / try_wait read right after it
    (`@p trap;`), as the probe after the wait reads it.

    ptxas 13.0 crashes (SIGSEGV) on an sm_80 `mbarrier.test_wait` whose state operand comes
    from a kernel parameter once anything reads its result; a mutant that never reads it
    assembles and its instrumented PTX does not. When this text crashes ptxas too, the
    crash is ptxas's own, not the rewriter's."""
    mod = parse(ptx)
    out = []
    for it in mod.items:
        out.append(it.text)
        if it.is_instruction and it.opcode.startswith(("mbarrier.test_wait",
                                                       "mbarrier.try_wait")) and it.operands:
            out.append(f"\n\t@{it.operands[0]} trap;")
    return "".join(out)


_LINE_NO = re.compile(r":\d+(:\d+)?:|\bline \d+")


def verdict(m: Mutant) -> str | None:
    """None if the property holds for `m`, else what went wrong (with the replay)."""
    done, ptx = _rewrite(m)
    return done if ptx is None else _judge(m, ptx)


def _rewrite(m: Mutant) -> tuple[str | None, str | None]:
    """The rewriter's part of `verdict`: (its verdict, None) where the rewriter refuses the
    mutant or crashes on it, else (None, the instrumented PTX) for `_judge`."""
    text = m.text()
    try:
        ins = instrument(text, m.file)
    except (PTXSyntaxError, InstrumentError) as e:
        msg = str(e)
        problems = []
        if m.file not in msg:
            problems.append("does not name the file")
        if not _LINE_NO.search(msg) and not any(s in msg for s in MODULE_LEVEL):
            problems.append("names no line")
        if "\n" in msg.strip():
            problems.append("is more than one line")
        if problems:
            return (f"{m.describe()}\n  refusal {', '.join(problems)}: {type(e).__name__}: "
                    f"{msg}"), None
        return None, None
    except Exception:  # noqa: BLE001 - any other exception is the bug being looked for
        return f"{m.describe()}\n  crashed:\n{traceback.format_exc()}", None
    return None, ins.ptx


def _judge(m: Mutant, ins_ptx: str, kept_only: bool = False) -> str | None:
    """ptxas's part of `verdict`, on the mutant's instrumented PTX `ins_ptx`; `kept_only`:
    from the answers kept on disk alone (_NotAnswered where one is not there)."""
    text = m.text()
    arch = target(m.module)
    # The instrumented PTX first: where ptxas takes it the property holds whatever ptxas
    # makes of the input, so the input is assembled only where it does not. Of the seeded
    # run's 264 instrumented mutants, 151 assemble (10.8 s of ptxas on their inputs not
    # run) and 113 do not (3.4 s more of ptxas on their instrumented forms).
    ok, log = assembles(ins_ptx, arch, kept_only)
    if ok:
        return None
    if not assembles(text, arch, kept_only)[0]:
        return None  # the input is not valid PTX: its instrumented PTX need not be either
    if log.startswith("ptxas crashed") and \
            assembles(waits_read(text), arch, kept_only)[1].startswith("ptxas crashed"):
        return None  # ptxas's own crash (see waits_read)
    return f"{m.describe()}\n  ptxas accepts the input but not the instrumented PTX:\n{log}"


def run(ms: Sequence[Mutant], workers: int = 2) -> list[str]:
    """The failures among `ms`, in order. The rewriter holds the GIL: the mutants are
    rewritten one after another here, and judged at once where ptxas's answers are kept on
    disk; those ptxas has to answer now are judged in `workers` threads (ptxas runs in
    parallel). Threads that only traded the GIL took 18 s for what one thread does in 10
    (the seeded run, its answers kept, beside a busy core)."""
    got: list[str | None] = [None] * len(ms)
    later = []
    for i, m in enumerate(ms):
        done, ptx = _rewrite(m)
        if ptx is None:
            got[i] = done
            continue
        try:
            got[i] = _judge(m, ptx, kept_only=True)
        except _NotAnswered:
            later.append((i, m, ptx))
    if later:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for (i, _, _), v in zip(later, pool.map(lambda a: _judge(a[1], a[2]), later),
                                    strict=True):
                got[i] = v
    return [v for v in got if v is not None]


def cli_verdict(m: Mutant, tmp: Path) -> str | None:
    """`python -m consan instrument` on the mutant exits 0 or 2 without a traceback."""
    path = tmp / m.file
    path.write_text(m.text(), encoding="utf-8", errors="surrogateescape")
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(repo)}
    r = subprocess.run([sys.executable, "-m", "consan", "instrument", "--arch",
                        target(m.module), str(path)], capture_output=True, text=True,
                       errors="replace", cwd=repo, env=env, timeout=120)
    if r.returncode in (0, 2) and "Traceback" not in r.stderr:
        return None
    return f"{m.describe()}\n  consan instrument exited {r.returncode}:\n{r.stderr[-3000:]}"


if __name__ == "__main__":  # pragma: no cover - a longer run by hand
    count = int(sys.argv[1]) if len(sys.argv) > 1 else COUNT
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else SEED
    print(f"fuzzing {count} mutants, seed {seed}")
    bad = run(mutants(seed, count))
    for b in bad:
        print(b, end="\n\n")
    print(f"{len(bad)} failure(s) of {count}")
    sys.exit(1 if bad else 0)
