"""PTX module parser that keeps every byte.

The module is split into items (trivia, statements, labels, braces, raw
section blocks) that partition the input text exactly, so `render()` of an
unmodified module is the input, and the rewriter only ever *inserts* text
between items. Statements know their line/column, their predicate, opcode and
top-level operands; that is all instrumentation needs. Structural errors
(unbalanced braces, unterminated statements, strings or comments) raise
`PTXSyntaxError` naming the line and column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Directives that end at the end of their line (no ';').
LINE_DIRECTIVES = frozenset(
    """.version .target .address_size .file .loc .maxnreg .maxntid .reqntid .minnctapersm
    .maxnctapersm .explicitcluster .reqnctapercluster .maxclusterrank .noreturn .pragma_line
    .blocksareclusters .abi_preserve .abi_preserve_control""".split()
)
# Line directives without operands: the rest do not end before their first operand.
BARE_DIRECTIVES = frozenset({".explicitcluster", ".noreturn", ".blocksareclusters"})
# Tokens that begin a function header (`.entry` / `.func`), possibly after linkage.
LINKAGE = frozenset({".visible", ".extern", ".weak", ".common"})


class PTXSyntaxError(ValueError):
    def __init__(self, msg: str, line: int, col: int, name: str = "<ptx>"):
        super().__init__(f"{name}:{line}:{col}: {msg}")
        self.msg, self.line, self.col, self.name = msg, line, col, name


@dataclass
class Item:
    kind: str  # trivia | stmt | label | open | close | section
    text: str
    line: int
    col: int

    # Filled for statements.
    pred: str | None = None  # "@%p1" / "@!%p1"
    opcode: str = ""  # "ld.shared.u32", ".reg", ".loc", ...
    operands: list[str] = field(default_factory=list)
    # (what the opcode says, set with it: the rewriter's passes ask each item again and
    # again, 101k times for an unrolled bitonic sort's module, where a property's call was
    # 6% of its instrument step)
    is_directive: bool = field(default=False, repr=False, compare=False)
    is_instruction: bool = field(default=False, repr=False, compare=False)
    op_parts: list[str] = field(default_factory=lambda: [""], repr=False, compare=False)

    @property
    def code(self) -> str:
        """The statement's text without its comments (a declaration's names, say)."""
        return strip_comments(self.text)

    @property
    def unpredicated(self) -> str:
        """The instruction's text without its `@p` guard."""
        if not self.pred:
            return self.text
        m = _PRED.match(self.text.lstrip())
        return self.text.lstrip()[m.end():] if m else self.text

    @property
    def label(self) -> str:
        """A label's name (for a label item)."""
        return self.text.strip().rstrip(":").strip()


@dataclass
class Function:
    name: str
    is_entry: bool
    header: Item  # the .entry/.func statement
    body: list[Item]  # items between its outer braces (exclusive)
    open_index: int  # index of the outer '{' in Module.items
    close_index: int


@dataclass
class Module:
    items: list[Item]
    name: str = "<ptx>"
    functions: list[Function] = field(default_factory=list)

    def render(self) -> str:
        return "".join(i.text for i in self.items)

    def directive(self, opcode: str) -> Item | None:
        for it in self.items:
            if it.kind == "stmt" and it.opcode == opcode:
                return it
        return None

    @property
    def version(self) -> tuple[int, int] | None:
        d = self.directive(".version")
        if d is None or not d.operands:
            return None
        major, _, minor = d.operands[0].partition(".")
        return int(major), int(minor or 0)

    @property
    def target(self) -> list[str]:
        d = self.directive(".target")
        return [t.strip() for t in d.operands] if d else []

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def kernels(self) -> list[str]:
        return [f.name for f in self.functions if f.is_entry]


REGISTER = re.compile(r"%[\w$.]+")  # a register name in an operand
# The special registers (%tid.x, %laneid, %clock64, ...): read-only, and declared nowhere.
SPECIAL_REGISTER = re.compile(
    r"%(?:[a-z_]+\.[xyz]|laneid|warpid|nwarpid|smid|nsmid|gridid|is_explicit_cluster|"
    r"cluster_n?ctarank|lanemask_(?:eq|le|lt|ge|gt)|clock(?:_hi|64)?|pm[0-7](?:_64)?|"
    r"envreg\d+|globaltimer(?:_lo|_hi)?|reserved_smem_offset_\w+|total_smem_size|"
    r"aggr_smem_size|dynamic_smem_size|current_graph_exec)")
# An integer constant as an address offset or immediate may write it (ptx_int reads it).
INT_LITERAL = r"(?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)U?"
_INT = re.compile(r"(-?)(?:0[xX]([0-9a-fA-F]+)|0[bB]([01]+)|0([0-7]*)|([1-9][0-9]*))U?")


def ptx_int(text: str) -> int:
    """A PTX integer constant: decimal, hexadecimal (0x), binary (0b) or octal (a leading 0),
    with an optional U; a ValueError for anything else. (Python's int(x, 0) refuses `010`,
    which PTX reads as 8, and reads `0o10`, which PTX refuses.)"""
    m = _INT.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"not a PTX integer: {text!r}")
    sign, hexa, binary, octal, dec = m.groups()
    if hexa is not None:
        v = int(hexa, 16)
    elif binary is not None:
        v = int(binary, 2)
    elif octal is not None:
        v = int(octal or "0", 8)
    else:
        v = int(dec)
    return -v if sign else v
_IDENT = re.compile(r"[A-Za-z_$%.][\w$%.]*")
_LABEL = re.compile(r"[A-Za-z_$%][\w$%.]*\s*:(?!:)")
# An instruction up to its ';' with no string, comment or nested bracket: statement_len's
# loop would end at that ';' too (it walks every character: a third of a parse).
_PLAIN = r'[^;"/(){}\[\]]'
_PLAIN_STATEMENT = re.compile(
    rf"(?:{_PLAIN}|\[{_PLAIN}*\]|\({_PLAIN}*\)|\{{{_PLAIN}*\}})*;")
_PLAIN_LINE = re.compile(r'[^;"/(){}\[\]\n]*')  # a line directive's line, likewise


class _Scanner:
    def __init__(self, text: str, name: str):
        self.s, self.name, self.n = text, name, len(text)
        self.pos, self.line, self.col = 0, 1, 1
        self.items: list[Item] = []

    def err(self, msg: str, line: int | None = None, col: int | None = None):
        raise PTXSyntaxError(msg, line or self.line, col or self.col, self.name)

    def advance(self, k: int) -> str:
        chunk = self.s[self.pos : self.pos + k]
        nl = chunk.count("\n")
        if nl:
            self.line += nl
            self.col = k - chunk.rfind("\n")
        else:
            self.col += k
        self.pos += k
        return chunk

    def trivia_len(self, p: int, stop_at_newline: bool = False) -> int:
        """Length of whitespace/comments starting at p."""
        s, start = self.s, p
        while p < self.n:
            c = s[p]
            if c == "\n" and stop_at_newline:
                break
            if c in " \t\r\n\f\v":
                p += 1
            elif s.startswith("//", p):
                e = s.find("\n", p)
                p = self.n if e < 0 else e
            elif s.startswith("/*", p):
                e = s.find("*/", p + 2)
                if e < 0:
                    line, col = self._pos_of(p)
                    self.err("unterminated /* comment", line, col)
                p = e + 2
            else:
                break
        return p - start

    def _pos_of(self, p: int) -> tuple[int, int]:
        line = self.s.count("\n", 0, p) + 1
        return line, p - (self.s.rfind("\n", 0, p) + 1) + 1

    def emit(self, kind: str, length: int, **kw) -> Item:
        line, col = self.line, self.col
        it = Item(kind, self.advance(length), line, col, **kw)
        self.items.append(it)
        return it

    # A statement runs to ';' at depth 0; directive headers may end at '{'
    # or at a newline (line directives, or a function header followed by a
    # performance directive).
    def statement_len(self, p: int) -> int:
        s, start = self.s, p
        first = _IDENT.match(s, p)
        head = first.group(0) if first else ""
        line_directive = head in LINE_DIRECTIVES
        is_header = head in (".entry", ".func", ".section") or head in LINKAGE
        if not (line_directive or is_header):
            plain = _PLAIN_STATEMENT.match(s, p)
            if plain:
                return plain.end() - start
        elif line_directive:  # (`.loc 1 10 5`, a third of the lines of a -lineinfo module)
            e = _PLAIN_LINE.match(s, p).end()
            if e < self.n and s[e] == "\n" and (head in BARE_DIRECTIVES or
                                                s[p + len(head):e].strip()) and \
                    not self._continued(s[p:e].rstrip()[-1], e):
                return e - start
        depth_paren = depth_brace = depth_brack = 0
        opened: list[int] = []  # positions of unclosed ( [ {
        last = ""  # the last character that is no whitespace or comment
        # (a line directive's operand may come on a later line: `.target` / `sm_90a`)
        bare = line_directive and head not in BARE_DIRECTIVES
        while p < self.n:
            c = s[p]
            if c == '"':
                e = p + 1
                while e < self.n and s[e] != '"':
                    if s[e] == "\n":
                        break
                    e += 2 if s[e] == "\\" else 1
                if e >= self.n or s[e] != '"':
                    line, col = self._pos_of(p)
                    self.err("unterminated string", line, col)
                p, last, bare = e + 1, '"', False
                continue
            if s.startswith("//", p) or s.startswith("/*", p):
                if line_directive and s.startswith("//", p) and not bare and \
                        not self._continued(last, p):
                    return p - start
                p += self.trivia_len(p, stop_at_newline=True) or 1
                continue
            if c == "\n":
                if line_directive and not bare and not self._continued(last, p):
                    return p - start
                if is_header and depth_paren == 0 and self._header_ends_here(p):
                    return p - start
            elif c == "(":
                depth_paren += 1
                opened.append(p)
            elif c == ")":
                depth_paren -= 1
                self._close(opened, p, "(")
            elif c == "[":
                depth_brack += 1
                opened.append(p)
            elif c == "]":
                depth_brack -= 1
                self._close(opened, p, "[")
            elif c == "{":
                if is_header and depth_paren == 0:
                    return p - start  # body / section block follows
                depth_brace += 1
                opened.append(p)
            elif c == "}":
                if depth_brace == 0:
                    self._unclosed(opened)
                    line, col = self._pos_of(start)
                    self.err("statement not terminated by ';' before '}'", line, col)
                depth_brace -= 1
                self._close(opened, p, "{")
            elif c == ";" and depth_paren == depth_brace == depth_brack == 0:
                return p + 1 - start
            if not c.isspace():
                last = c
                bare = bare and p < start + len(head)
            p += 1
        if line_directive:
            return p - start
        self._unclosed(opened)
        line, col = self._pos_of(start)
        self.err("statement not terminated by ';' at end of input", line, col)
        return 0

    def _continued(self, last: str, p: int) -> bool:
        """A line directive goes on past the end of its line at `p` when a comma ends the
        line, or the next line begins with a comma, a number or a string, which no
        statement or label does (`.maxntid 256,` / `1, 1`; `.loc 1` / `10 0`): ptxas reads
        directives free-form."""
        q = p + self.trivia_len(p)
        return last == "," or (q < self.n and self.s[q] in ',"0123456789')

    def _close(self, opened: list[int], p: int, want: str) -> None:
        if not opened or self.s[opened[-1]] != want:
            line, col = self._pos_of(p)
            self.err(f"unbalanced {self.s[p]!r}", line, col)
        opened.pop()

    def _unclosed(self, opened: list[int]) -> None:
        if opened:
            line, col = self._pos_of(opened[-1])
            self.err(f"{self.s[opened[-1]]!r} is never closed", line, col)

    def _header_ends_here(self, p: int) -> bool:
        q = p + self.trivia_len(p)
        m = _IDENT.match(self.s, q)
        return bool(m and m.group(0) in LINE_DIRECTIVES) or q >= self.n

    def section_block_len(self, p: int) -> int:
        """Length of a raw `{ ... }` section body starting at '{'."""
        depth, q = 0, p
        while q < self.n:
            c = self.s[q]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return q + 1 - p
            elif c == '"':
                q = self.s.find('"', q + 1)
                if q < 0:
                    break
            q += 1
        line, col = self._pos_of(p)
        self.err("unterminated section block", line, col)
        return 0

    def run(self) -> list[Item]:
        s = self.s
        pending_section = False
        while self.pos < self.n:
            t = self.trivia_len(self.pos)
            if t:
                self.emit("trivia", t)
                continue
            c = s[self.pos]
            if c == "{":
                if pending_section:
                    self.emit("section", self.section_block_len(self.pos))
                    pending_section = False
                else:
                    self.emit("open", 1)
                continue
            if c == "}":
                self.emit("close", 1)
                continue
            m = _LABEL.match(s, self.pos)
            if m and not s.startswith(".", self.pos):
                self.emit("label", m.end() - self.pos)
                continue
            if not (c.isalnum() or c in "._@$%"):
                self.err(f"unexpected character {c!r}")
            length = self.statement_len(self.pos)
            it = self.emit("stmt", length)
            _fill_statement(it, self.name)
            pending_section = it.opcode == ".section"
        return self.items


# `@p`, `@!p`, and the spaced forms ptxas takes too (`@ %p`, `@ !%p`, `@! %p`), kept as
# `@p` / `@!p`
_PRED = re.compile(r"@\s*(!?)\s*([%\w$.]+)\s*")
_COMMENT_OR_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/', re.S)


def strip_comments(text: str) -> str:
    """`text` with each comment replaced by a space (strings kept as they are): a comment
    inside a statement is no part of its operands."""
    return _COMMENT_OR_STRING.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else " ", text)


def _fill_statement(it: Item, name: str = "<ptx>") -> None:
    text = strip_comments(it.text).rstrip(";").strip()
    m = _PRED.match(text)
    if m:
        it.pred = f"@{m.group(1)}{m.group(2)}"
        text = text[m.end() :]
    head = re.match(r"[^\s({\[,]+", text)
    if head is None:
        raise PTXSyntaxError("statement without an opcode", it.line, it.col, name)
    op = head.group(0)
    rest = text[head.end() :]
    # Linkage/attribute words before .entry/.func/.global belong to the opcode.
    while op in LINKAGE:
        nxt = re.match(r"\s*([^\s({\[,]+)", rest)
        if not nxt:
            break
        op = nxt.group(1)
        rest = rest[nxt.end() :]
    it.opcode = op
    it.op_parts = op.split(".")  # e.g. ['ld', 'shared', 'v4', 'f32']
    it.is_directive = op.startswith(".")
    it.is_instruction = not it.is_directive
    it.operands = split_operands(rest)


_SPLIT_AT = re.compile(r"[,{}\[\]()]")


def split_operands(text: str) -> list[str]:
    """Split at top-level commas, keeping `{..}`, `[..]` and `(..)` together."""
    out, depth, start = [], 0, 0
    for m in _SPLIT_AT.finditer(text):  # (only these characters matter: no loop over all)
        ch = m.group()
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        elif depth == 0:
            out.append(text[start:m.start()].strip())
            start = m.end()
    last = text[start:].strip()
    if last or out:
        out.append(last)
    return out


def _function_name(header: Item) -> tuple[str, bool] | None:
    if header.opcode not in (".entry", ".func"):
        return None
    text = header.text
    i = text.find(header.opcode) + len(header.opcode)
    rest = text[i:].strip()
    if rest.startswith("("):  # .func (.param .b32 ret) name (...)
        depth = 0
        for j, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                rest = rest[j + 1 :].strip()
                break
    m = re.match(r"[A-Za-z_$%][\w$%.]*", rest)
    return (m.group(0), header.opcode == ".entry") if m else None


def parse(text: str, name: str = "<ptx>") -> Module:
    items = _Scanner(text, name).run()
    mod = Module(items=items, name=name)
    # Match braces; find function bodies.
    stack: list[int] = []
    last_header: tuple[Item, str, bool] | None = None
    header_waiting = False
    for idx, it in enumerate(items):
        if it.kind == "stmt":
            fn = _function_name(it) if not stack else None
            if fn is not None and not it.text.rstrip().endswith(";"):
                last_header = (it, *fn)
                header_waiting = True
            elif it.opcode not in LINE_DIRECTIVES:
                header_waiting = False if not stack else header_waiting
        elif it.kind == "open":
            stack.append(idx)
        elif it.kind == "close":
            if not stack:
                raise PTXSyntaxError("'}' without a matching '{'", it.line, it.col, name)
            open_idx = stack.pop()
            if not stack and header_waiting and last_header is not None:
                header, fname, is_entry = last_header
                mod.functions.append(
                    Function(fname, is_entry, header, items[open_idx + 1 : idx], open_idx, idx)
                )
                header_waiting = False
    if stack:
        it = items[stack[-1]]
        raise PTXSyntaxError("'{' is never closed", it.line, it.col, name)
    return mod


def branch_refs(items) -> dict[str, int]:
    """How often each name is a branch's target (`bra`, `brx` operands, `.branchtargets`
    lists) among `items`: a label with more than one is reached more than one way."""
    refs: dict[str, int] = {}
    for it in items:
        if it.is_instruction and it.op_parts[0] in ("bra", "brx") and it.operands:
            names = [it.operands[0]] if it.op_parts[0] == "bra" else it.operands
        elif it.kind == "stmt" and it.opcode == ".branchtargets":
            names = it.operands
        else:
            continue
        for name in names:
            refs[name.strip()] = refs.get(name.strip(), 0) + 1
    return refs


def reachable(mod: Module, entry: str) -> set[str] | None:
    """The functions `entry` may run: itself and, through direct calls, every `.func` they
    call; None when one of them calls through a register (any `.func` may run)."""
    names = {fn.name for fn in mod.functions}
    body = {fn.name: fn.body for fn in mod.functions}
    seen, todo = {entry}, [entry]
    while todo:
        for it in body.get(todo.pop(), ()):
            if not (it.is_instruction and it.op_parts[0] == "call"):
                continue
            target = next((o.strip() for o in it.operands if not o.strip().startswith("(")),
                          None)
            if target is None or target.startswith("%"):
                return None  # (an indirect call: `call (r), %rd1, (a), proto;`)
            if target in names and target not in seen:  # (else external: vprintf)
                seen.add(target)
                todo.append(target)
    return seen


_REG_DECL = re.compile(r"\.reg\s+\.(\w+)\s+(.*)")


def register_widths(fn: Function) -> dict[str, int]:
    """Each register (or `%r<N>` family's prefix) the function declares -> its bits."""
    widths: dict[str, int] = {}
    for it in [fn.header, *fn.body]:
        if it.kind != "stmt" or it.opcode != ".reg":
            continue
        m = _REG_DECL.match(it.code.strip().rstrip(";"))
        if not m:
            continue
        ty = m.group(1)
        bits = int(re.sub(r"\D", "", ty) or 32) if ty != "pred" else 1
        for name in m.group(2).split(","):
            widths[name.strip().split("<")[0]] = bits
    # .param registers in the header are not addressable registers; ignore.
    return widths


def register_width(reg: str, widths: dict[str, int]) -> int | None:
    if reg in widths:
        return widths[reg]
    return widths.get(re.sub(r"\d+$", "", reg))
