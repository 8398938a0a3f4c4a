"""Text -> syntax tree (``ast.SpecFile``), with Lark errors turned into ``SpecError``.

The grammar (``grammar.lark``) is LALR(1); its parser is Lark's stand-alone one, generated once and cached
(``lalr.py``), so a run imports no ``lark`` package. A small post-lexer drops newlines inside
brackets, so long argument lists and domains may wrap, and folds runs of blank or comment
lines into one statement break.

Nothing here recurses on the input: Lark's LALR parser is iterative, the tree is checked for
depth and turned into the syntax tree without recursion (``Transformer_NonRecursive``), and a
sum or product of any length is one level. An expression nested deeper than ``MAX_DEPTH``
levels is a located error, so the builders, which do recurse on nesting, stay far from
Python's recursion limit.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from .. import files
from ..errors import PrivoptError, SpecError
from . import ast
from .lalr import (
    Lark,
    Lark_StandAlone,
    Token,
    Transformer_NonRecursive,
    Tree,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
    v_args,
)
from .source import Source, Span

MAX_DEPTH = 100  # levels of nested expressions (docs/language.md, "Limits")
MAX_SPEC_BYTES = 256 * 1024 * 1024  # a spec file larger than this is refused before reading

STATEMENT_KEYWORDS = (
    "spec",
    "var",
    "param",
    "known",
    "const",
    "design",
    "noise",
    "let",
    "use",
    "choose",
    "subject to",
    "minimize",
    "maximize",
)

_OPEN = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}


class _NewlineFilter:
    """Post-lexer: no statement breaks inside brackets; one break for a run of them."""

    always_accept = ("_NL",)

    def process(self, stream):
        # No look-ahead here: the contextual lexer chooses terminals from the parser state,
        # so every token must reach the parser before the next one is lexed.
        depth = 0
        last_was_newline = False
        for tok in stream:
            if tok.type == "_NL":
                if depth == 0 and not last_was_newline:
                    last_was_newline = True
                    yield tok
                continue
            if tok.type in _OPEN:
                depth += 1
            elif tok.type in _OPEN.values():
                depth = max(0, depth - 1)
            last_was_newline = False
            yield tok


@lru_cache(maxsize=1)
def _lark() -> Lark:
    """The grammar's LALR(1) parser (``lalr.Lark_StandAlone``: Lark's stand-alone parser,
    generated once and cached), with the newline post-lexer."""
    return Lark_StandAlone(postlex=_NewlineFilter())


def parse(text: str, path: str | Path | None = None) -> ast.SpecFile:
    """Parse spec text into a syntax tree. Raises ``SpecError`` with a located message."""
    source = Source(text, Path(path) if path is not None else None)
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as e:
        raise _syntax_error(source, e) from None
    _check_depth(source, tree)
    try:
        statements = _ToAst(source).transform(tree)
    except VisitError as e:  # lark#313: errors raised in a transformer arrive wrapped
        if isinstance(e.orig_exc, PrivoptError):
            raise e.orig_exc from None
        raise
    return ast.SpecFile(source=source, statements=tuple(statements))


# Tree nodes that are a level of an expression; a left operand of the same kind continues a
# flat sum or product (``a + b - c``) and adds no level.
_LEVELS = frozenset("add sub mul div matmul pow neg call expect abs_bars tuple kwarg prob number name attr".split())
_CHAINS = ({"add", "sub"}, {"mul", "div", "matmul"})


def _check_depth(source: Source, tree: Tree) -> None:
    """Refuse an expression nested more than ``MAX_DEPTH`` levels, at the node that goes past
    it (iteratively: the input may be nested far deeper than Python's recursion limit)."""
    stack: list[tuple[Tree, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        for i, child in enumerate(node.children):
            if not isinstance(child, Tree):
                continue
            chain = i == 0 and any(node.data in c and child.data in c for c in _CHAINS)
            d = depth + (child.data in _LEVELS and not chain)
            if d > MAX_DEPTH:
                raise SpecError(
                    f"this expression is nested more than {MAX_DEPTH} levels deep",
                    source.span(getattr(child.meta, "start_pos", 0)),
                    "split it: give inner parts their own 'param' lines, or write a flat sum a + b + c",
                )
            stack.append((child, d))


def parse_file(path: str | Path) -> ast.SpecFile:
    """Read and parse a spec file (UTF-8). Raises ``SpecError`` for unreadable, special
    (a FIFO, a device, a folder), binary or non-UTF-8 files, naming the file."""
    p = Path(path)
    raw = _read_spec_bytes(p)
    name = str(p)
    if b"\x00" in raw:
        raise SpecError("this is a binary file, not a spec", hint="a spec is UTF-8 text (*.priv)", file=name)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise _not_utf8(p, raw, e) from None
    if not text.strip():
        raise SpecError("the spec file is empty", hint="a spec needs variables, a design and an objective", file=name)
    return parse(text, p)


def _read_spec_bytes(p: Path) -> bytes:
    """The bytes of a regular file, checked on the file actually opened (``files.open_regular``:
    a FIFO is refused at once instead of waiting for a writer, like a device or a folder)."""
    name = str(p)
    try:
        fd = files.open_regular(p)
    except FileNotFoundError:
        raise SpecError("the spec file does not exist", hint=missing_file_hint(name, p), file=name) from None
    except (IsADirectoryError, files.NotRegularFile) as e:
        if isinstance(e, IsADirectoryError) or e.kind == "a folder":
            raise SpecError(
                "this is a folder, not a spec file", hint="give the path of a .priv file", file=name
            ) from None
        raise SpecError(
            f"this is {e.kind}, not a regular file", hint="save the spec to a file and give its path", file=name
        ) from None
    except (OSError, ValueError) as e:
        raise SpecError(
            f"cannot open the spec file: {getattr(e, 'strerror', None) or e}",
            hint="give the path of a readable .priv file (a short name, no symlink loop)",
            file=name,
        ) from None
    try:
        if os.fstat(fd).st_size > MAX_SPEC_BYTES:
            raise SpecError(
                f"the spec file is larger than {MAX_SPEC_BYTES // 2**20} MB",
                hint='read large tables from data files: known P(...) = counts from "data.csv" column n',
                file=name,
            )
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(MAX_SPEC_BYTES + 1)
    except OSError as e:
        raise SpecError(f"cannot read the spec file: {e.strerror or e}", file=name) from None
    finally:
        os.close(fd)


def missing_file_hint(text: str, target: Path) -> str:
    """Where a missing file was looked for (the absolute path), and a file of the same kind in that
    folder whose name is close to it, written as the spec would write it."""
    where = f"looked for {os.path.abspath(target)}"
    try:
        with os.scandir(target.parent) as entries:
            names = [e.name for e in itertools.islice(entries, 10_000) if e.name.endswith(target.suffix)]
    except OSError:
        return where
    import difflib  # an error's hint only: not at start-up (issue 23, goal 1)

    close = difflib.get_close_matches(target.name, names, n=1, cutoff=0.8)
    return f"did you mean '{text[: len(text) - len(target.name)]}{close[0]}'? ({where})" if close else where


def _not_utf8(p: Path, raw: bytes, e: UnicodeDecodeError) -> SpecError:
    """A located error at the first byte that is not UTF-8, shown as an escape (``\\xe9``)."""
    shown = raw.decode("utf-8-sig", errors="backslashreplace")
    prefix = raw[: e.start].decode("utf-8-sig", errors="backslashreplace")
    start = len(prefix)
    byte = raw[e.start]
    source = Source(shown, p)
    return SpecError(
        f"byte 0x{byte:02x} is not UTF-8 (the file is in another encoding, perhaps Latin-1)",
        Span(source, start, start + 4),
        "save the spec as UTF-8 (e.g. iconv -f latin1 -t utf-8)",
    )


# ---------------------------------------------------------------- syntax errors


def _describe_terminal(name: str) -> str:
    friendly = {
        "NAME": "a name",
        "NUMBER": "a number",
        "INT": "an integer",
        "STRING": 'a "string"',
        "TABLE_BODY": "a table { ... }",
        "COMPARE": "a comparison (<=, >=, ==)",
        "SENSE": "minimize or maximize",
        "_NL": "end of line",
        "$END": "end of file",
        "SIGN": "a sign",
        "ARROW": "->",
    }
    if name in friendly:
        return friendly[name]
    try:
        term = _lark().get_terminal(name)
        return f"'{term.pattern.value}'"
    except KeyError:
        return name


def _expected_list(expected) -> str:
    # '.' continues a name only in a composite's block.name (docs/blocks.md): not offered
    names = sorted({_describe_terminal(t) for t in expected if t != "DOT"})
    if len(names) > 8:
        names = names[:8] + ["..."]
    return ", ".join(names)


def _syntax_error(source: Source, e: UnexpectedInput) -> SpecError:
    if isinstance(e, UnexpectedCharacters):
        span = source.span(e.pos_in_stream)
        ch = source.text[e.pos_in_stream]
        hint = _arrow_hint(source, e.pos_in_stream)
        if ch == "'" or ch == "\u201c" or ch == "\u201d":
            hint = 'strings use straight double quotes: "like this"'
        hint = hint or _comparison_hint(source, e.pos_in_stream) or _name_hint(ch)
        number = re.search(r"(\d+(?:\.\d*)?)$", source.text[: e.pos_in_stream])
        if ch == "%" and number:
            hint = (
                f"a spec writes no units or percentages: write {float(number.group(1)) / 100:g} for {number.group(1)}%"
            )
        return SpecError(f"unexpected character {ch!r}", span, hint)
    if isinstance(e, UnexpectedEOF):
        span = source.span(max(0, len(source.text) - 1))
        return SpecError("the spec ends in the middle of a statement", span, f"expected {_expected_list(e.expected)}")
    assert isinstance(e, UnexpectedToken)
    tok: Token = e.token
    if tok.type == "$END":
        span = source.span(max(0, len(source.text.rstrip()) - 1))
        return SpecError("the spec ends in the middle of a statement", span, f"expected {_expected_list(e.expected)}")
    span = source.span(tok.start_pos, tok.end_pos)
    arrow = _arrow_hint(source, tok.start_pos)
    if arrow:
        return SpecError(f"unexpected '{tok}'", span, arrow)
    if str(tok) == "{" and _never_closed(source.text, tok.end_pos):
        return SpecError("this '{' is never closed", span, "end the table with '}' on the line after its last row")
    text = source.text
    if (
        str(tok) == ","
        and text[tok.start_pos - 1 : tok.start_pos].isdigit()
        and text[tok.end_pos : tok.end_pos + 1].isdigit()
    ):
        if "COMMA" not in e.expected:
            return SpecError("unexpected ','", span, "a decimal number takes a point: 0.5, not 0,5")
    if str(tok) == "-" and "RBRACE" in e.expected:
        return SpecError(
            "unexpected '-' in a list of labels",
            span,
            'a label with a hyphen, a space or a symbol is quoted: "low-income"',
        )
    line = text[text.rfind("\n", 0, tok.start_pos) + 1 : tok.start_pos]
    if str(tok) == "or" and re.match(r"[\t ]*choose[\t ]+one[\t ]+of\b", line):
        return SpecError("unexpected 'or'", span, "list the blocks with commas: choose one of a, b")
    if str(tok) == "," and re.search(r"(<=|>=|==)[^,()]*$", line) and "COMPARE" in e.expected:
        return SpecError(
            "unexpected ','", span, "a bound of two numbers is written in parentheses: dp(...) <= (eps, delta)"
        )
    comparison = _comparison_hint(source, tok.start_pos)
    if str(tok) == "=" and comparison:
        return SpecError("unexpected '='", span, comparison)
    statement_start = {"VAR", "SPEC", "PARAM", "KNOWN", "CONST", "DESIGN", "SUBJECT"} & set(e.expected)
    if statement_start and tok.type == "NAME":
        import difflib  # an error's hint only: not at start-up (issue 23, goal 1)

        close = difflib.get_close_matches(str(tok), [k.split()[0] for k in STATEMENT_KEYWORDS], n=1, cutoff=0.6)
        hint = (
            f"did you mean '{close[0]}'?"
            if close
            else "a statement starts with one of: " + ", ".join(STATEMENT_KEYWORDS)
        )
        if re.match(r"[\t ]*=(?!=)", source.text[tok.end_pos :]):
            hint = f"a number is declared with param: param {tok} = ..."
        return SpecError(f"unknown statement '{tok}'", span, hint)
    if tok.type == "_NL":
        line = source.text[source.text.rfind("\n", 0, tok.start_pos) + 1 : tok.start_pos]
        if re.match(r"[\t ]*var[\t ]+\w+[\t ]*:[\t ]*private[\t ]+real[\t ]*\[[^\]]*\][\t ]*$", line):
            return SpecError(
                "a private real vector needs its range",
                span,
                "write real[n] in [lo, hi]: the range's width is one entry's sensitivity (Ramon & Basu Sec. 3.2)",
            )
        if re.match(r"[\t ]*choose[\t ]+one[\t ]+of\b", source.text[source.text.rfind("\n", 0, tok.start_pos) + 1 :]):
            return SpecError(
                "the line ends in the middle of a statement",
                span,
                "a design choice names two or more blocks: choose one of a, b",
            )
        return SpecError("the line ends in the middle of a statement", span, f"expected {_expected_list(e.expected)}")
    if tok.type in ("NAME", "NUMBER") and "STAR" in e.expected:
        return SpecError(
            f"unexpected '{tok}' right after a complete term",
            span,
            "join two terms with an operator ('2 * x', not '2x'); a spec writes no units",
        )
    what = f"'{tok}'" if tok.type != "TABLE_BODY" else "a table"
    return SpecError(f"unexpected {what}", span, f"expected {_expected_list(e.expected)}")


# Arrows people write for '->': '=>', '<-' (reversed), the papers' '→', '-->', a dash '—>'.
_ARROWS = re.compile(r"=>|<-+|-{2,}>|-\s+>|[\u2013\u2014\u2212]-*>|[\u2192\u27f6\u21d2\u2190\u27f5]")


def _arrow_hint(source: Source, pos: int) -> str | None:
    """A "write ->" hint when the text at ``pos`` is part of a misspelled arrow."""
    lo = max(0, pos - 4)
    for m in _ARROWS.finditer(source.text, lo, pos + 4):
        if m.start() <= pos < m.end():
            if m.group().startswith("<") or m.group() in "\u2190\u27f5":
                return f"write '->' pointing from the source to the target: 'A {m.group()} B' is written 'B -> A'"
            return f"write '->' (a hyphen and '>') instead of '{m.group()}'"
    return None


def _comparison_hint(source: Source, pos: int) -> str | None:
    """The hint for a comparison privopt does not have, at ``pos``: a strict ``<``/``>`` (a
    strict bound has no attained optimum, so bounds are ``<=``/``>=``), ``=<``/``=>``-style
    reversals, ``!=``, and ``=`` where a constraint's ``==`` was meant."""
    text = source.text
    ch, after = text[pos], text[pos + 1 : pos + 2]
    if ch in "<>":
        return f"write '{ch}=': a bound holds with equality allowed (a strict bound has no attained optimum)"
    if ch == "!":
        return "privopt has no '!=': a constraint compares with '==', '<=' or '>='"
    if ch == "=" and after in ("<", ">"):
        return f"write '{after}=' (the '=' comes second)"
    if ch == "=" and text[text.rfind("\n", 0, pos) + 1 :].lstrip().startswith("subject"):
        return "a constraint compares with '==', '<=' or '>='; a single '=' only names (param, known, let, with)"
    return None


_STATEMENT_LINE = re.compile(r"\n[\t ]*(?:" + "|".join(k.split()[0] for k in STATEMENT_KEYWORDS) + r")[\t ]+\S")


_GREEK = {"α": "alpha", "β": "beta", "δ": "delta", "ε": "eps", "η": "eta", "λ": "lam", "μ": "mu", "σ": "sigma"}


def _name_hint(ch: str) -> str | None:
    """The hint for a letter outside ASCII: names are ASCII (``eps`` for ``ε``)."""
    if not ch.isalpha() or ch.isascii():
        return None
    spelled = f" (write {_GREEK[ch.lower()]} for {ch})" if ch.lower() in _GREEK else ""
    return f'names use the letters A-Z and a-z, digits and _{spelled}; a label with other letters is quoted: "{ch}"'


def _never_closed(text: str, after: int) -> bool:
    """Whether the table ``{`` just before ``after`` is never closed: no ``}`` follows, or the
    next statement starts before the first ``}`` that does."""
    close = text.find("}", after)
    return close < 0 or _STATEMENT_LINE.search(text, after, close) is not None


# ---------------------------------------------------------------- tree -> AST


def _number(tok: Token, span: Span) -> float:
    """A NUMBER token's value; one too large for a double is a located error, not inf."""
    value = float(str(tok))
    if not math.isfinite(value):
        raise SpecError(
            f"{tok} is too large for a number (the largest is about 1.8e308)", span, "use a smaller number, or rescale"
        )
    return value


class _Cond(NamedTuple):
    """A condition of ``P(... | X)`` or ``P(... | X = 0)`` while the Prob is assembled."""

    name: ast.Ident
    label: ast.Label | None


@v_args(meta=True)
class _ToAst(Transformer_NonRecursive):
    def __init__(self, source: Source):
        super().__init__()
        self.src = source

    # helpers
    def _span(self, meta) -> Span:
        return Span(self.src, meta.start_pos, meta.end_pos)

    def _tok(self, tok: Token) -> Span:
        return Span(self.src, tok.start_pos, tok.end_pos)

    def _ident(self, tok: Token) -> ast.Ident:
        return ast.Ident(str(tok), self._tok(tok))

    def start(self, meta, items):
        return [i for i in items if i is not None]

    # statements
    def spec_stmt(self, meta, items):
        return ast.SpecTitle(str(items[0])[1:-1], self._span(meta))

    def var_stmt(self, meta, items):
        name, role, domain = items
        return ast.VarDecl(self._ident(name), self._ident(role), domain, self._span(meta))

    def domain_set(self, meta, items):
        return ast.DomainSet(tuple(items), self._span(meta))

    def domain_over(self, meta, items):
        return ast.DomainOver(self._ident(items[0]), self._span(meta))

    def domain_range(self, meta, items):
        return ast.DomainRange(items[0], items[1], self._span(meta))

    def domain_file(self, meta, items):
        path, column = items
        return ast.DomainFile(
            str(path)[1:-1], self._tok(path), self._ident(column) if column is not None else None, self._span(meta)
        )

    def domain_real(self, meta, items):
        size, lo, hi = items
        return ast.DomainReal(size, lo, hi, self._span(meta))

    def matrix_stmt(self, meta, items):
        name, (kind, tok) = items
        if kind == "inline":
            return ast.MatrixDecl(self._ident(name), str(tok), self._tok(tok), None, None, self._span(meta))
        return ast.MatrixDecl(self._ident(name), None, None, str(tok)[1:-1], self._tok(tok), self._span(meta))

    def matrix_inline(self, meta, items):
        return ("inline", items[0])

    def matrix_file(self, meta, items):
        return ("file", items[0])

    def noise_stmt(self, meta, items):
        name, dist, size, option = items
        opt = self._ident(option) if option is not None else None
        return ast.NoiseDecl(self._ident(name), self._ident(dist), size, opt, self._span(meta))

    def let_stmt(self, meta, items):
        return ast.LetDecl(self._ident(items[0]), items[1], self._span(meta))

    def param_stmt(self, meta, items):
        return ast.ParamDecl(self._ident(items[0]), items[1], self._span(meta))

    def known_stmt(self, meta, items):
        name, prob, source = items
        return ast.KnownDecl(self._ident(name) if name is not None else None, prob, source, self._span(meta))

    def const_stmt(self, meta, items):
        name, *axes, source = items
        return ast.ConstDecl(self._ident(name), tuple(self._ident(a) for a in axes), source, self._span(meta))

    def design_stmt(self, meta, items):
        return ast.DesignDecl(self._ident(items[0]), items[1], self._span(meta))

    def constraint_stmt(self, meta, items):
        exprs = tuple(items[0::2])
        ops = tuple(str(t) for t in items[1::2])
        return ast.ConstraintDecl(exprs, ops, self._span(meta))

    def objective_stmt(self, meta, items):
        return ast.ObjectiveDecl(str(items[0]), items[1], self._span(meta))

    # composite specs
    def use_stmt(self, meta, items):
        path, name, *withs = items
        withs = tuple(w for w in withs if w is not None)
        return ast.UseDecl(str(path)[1:-1], self._tok(path), self._ident(name), withs, self._span(meta))

    def with_item(self, meta, items):
        return ast.WithItem(self._ident(items[0]), items[1], self._span(meta))

    def choose_stmt(self, meta, items):
        return ast.ChooseDecl(tuple(items), self._span(meta))

    def choose_item(self, meta, items):
        first, second, lo, hi = items
        if second is None:
            return ast.ChooseItem(None, self._ident(first), lo, hi, self._span(meta))
        return ast.ChooseItem(self._ident(first), self._ident(second), lo, hi, self._span(meta))

    def choose_one(self, meta, items):
        return ast.ChooseOneDecl(tuple(self._ident(t) for t in items), self._span(meta))

    # tables
    def inline_table(self, meta, items):
        counts = items[0] is not None
        body = items[1]
        return ast.InlineTable(counts, str(body), self._tok(body), self._span(meta))

    def file_table(self, meta, items):
        counts, path, column = items
        column = self._ident(column) if column is not None else None  # None: the file holds one row per record
        return ast.FileTable(counts is not None, str(path)[1:-1], self._tok(path), column, self._span(meta))

    def builtin_table(self, meta, items):
        func, *args = items
        args = tuple(a for a in args if a is not None)
        return ast.BuiltinTable(self._ident(func), args, self._span(meta))

    # probabilities
    def prob(self, meta, items):
        targets = [it for it in items if isinstance(it, ast.Target)]
        conds = [it for it in items if isinstance(it, _Cond)]
        given = tuple(c.name for c in conds)
        labels = tuple(c.label for c in conds) if any(c.label is not None for c in conds) else ()
        return ast.Prob(tuple(targets), given, self._span(meta), labels)

    def target(self, meta, items):
        return ast.Target(self._ident(items[0]), items[1])

    def cond(self, meta, items):
        return _Cond(self._ident(items[0]), items[1])

    # labels and numbers
    def label(self, meta, items):
        (it,) = items
        if isinstance(it, ast.Number):
            return ast.Label(it.span.text().replace(" ", ""), it.value, it.span)
        text = str(it)
        if it.type == "STRING":
            text = text[1:-1]
        return ast.Label(text, None, self._tok(it))

    def signed_int(self, meta, items):
        sign, digits = items
        value = int(str(digits))
        return -value if sign is not None and str(sign) == "-" else value

    def signed_number(self, meta, items):
        sign, digits = items
        value = _number(digits, self._tok(digits))
        if sign is not None and str(sign) == "-":
            value = -value
        return ast.Number(value, self._span(meta))

    # expressions
    def number(self, meta, items):
        return ast.Number(_number(items[0], self._tok(items[0])), self._span(meta))

    def name(self, meta, items):
        return ast.Name(str(items[0]), self._span(meta))

    def attr(self, meta, items):
        return ast.Attr(self._ident(items[0]), self._ident(items[1]), self._span(meta))

    def _binop(op):  # noqa: N805 - factory used in the class body
        def method(self, meta, items):
            return ast.BinOp(op, items[0], items[1], self._span(meta))

        return method

    add = _binop("+")
    sub = _binop("-")
    mul = _binop("*")
    div = _binop("/")
    pow = _binop("^")
    matmul = _binop("@")

    def neg(self, meta, items):
        return ast.Neg(items[0], self._span(meta))

    def abs_bars(self, meta, items):
        return ast.Abs(items[0], self._span(meta))

    def tuple(self, meta, items):
        return ast.TupleExpr(tuple(items), self._span(meta))

    def arglist(self, meta, items):
        return tuple(items)

    def kwarg(self, meta, items):
        name, value, op, bound = items
        return ast.KwArg(self._ident(name), value, str(op) if op is not None else None, bound, self._span(meta))

    def expect(self, meta, items):
        func, body, given = items
        # the closing bracket is an anonymous token, which Lark's positions may leave out
        last = (given[-1] if given else body).span.end
        close = self.src.text.find("]", last)
        span = Span(self.src, func.start_pos, close + 1 if close >= 0 else meta.end_pos)
        return ast.Expect(self._ident(func), body, given, span)

    def call(self, meta, items):
        func, args, _arrow, arrow_args = items
        return ast.Call(self._ident(func), args or (), arrow_args, self._span(meta))

    def call_semi(self, meta, items):
        func, args, semi_args = items
        return ast.Call(self._ident(func), args, None, self._span(meta), semi_args)
