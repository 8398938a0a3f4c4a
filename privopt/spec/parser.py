"""Text -> syntax tree (``ast.SpecFile``), with Lark errors turned into ``SpecError``.

The grammar is LALR(1) and built once per process. A small post-lexer drops newlines inside
brackets, so long argument lists and domains may wrap, and folds runs of blank or comment
lines into one statement break.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from ..errors import SpecError
from . import ast
from .source import Source, Span

STATEMENT_KEYWORDS = ("spec", "var", "param", "known", "const", "design", "subject to", "minimize", "maximize")

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
    grammar = resources.files("privopt.spec").joinpath("grammar.lark").read_text()
    return Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        postlex=_NewlineFilter(),
        propagate_positions=True,
        maybe_placeholders=True,
    )


def parse(text: str, path: str | Path | None = None) -> ast.SpecFile:
    """Parse spec text into a syntax tree. Raises ``SpecError`` with a located message."""
    source = Source(text, Path(path) if path is not None else None)
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as e:
        raise _syntax_error(source, e) from None
    try:
        statements = _ToAst(source).transform(tree)
    except VisitError as e:  # lark#313: errors raised in a transformer arrive wrapped
        if isinstance(e.orig_exc, SpecError):
            raise e.orig_exc from None
        raise
    return ast.SpecFile(source=source, statements=tuple(statements))


def parse_file(path: str | Path) -> ast.SpecFile:
    """Read and parse a spec file (UTF-8). Raises ``SpecError`` for unreadable or binary files."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise SpecError(f"spec file '{p}' does not exist", hint="check the path") from None
    except IsADirectoryError:
        raise SpecError(f"'{p}' is a folder, not a spec file") from None
    except OSError as e:
        raise SpecError(f"cannot read spec file '{p}': {e.strerror}") from None
    if b"\x00" in raw:
        raise SpecError(f"'{p}' is a binary file, not a spec", hint="a spec is UTF-8 text (*.priv)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise SpecError(
            f"'{p}' is not UTF-8 text (bad byte at offset {e.start})", hint="save the spec as UTF-8"
        ) from None
    if not text.strip():
        raise SpecError(f"spec file '{p}' is empty", hint="a spec needs variables, a design and an objective")
    return parse(text, p)


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
    names = sorted({_describe_terminal(t) for t in expected})
    if len(names) > 8:
        names = names[:8] + ["..."]
    return ", ".join(names)


def _syntax_error(source: Source, e: UnexpectedInput) -> SpecError:
    if isinstance(e, UnexpectedCharacters):
        span = source.span(e.pos_in_stream)
        ch = source.text[e.pos_in_stream]
        hint = None
        if ch == "'" or ch == "\u201c" or ch == "\u201d":
            hint = 'strings use straight double quotes: "like this"'
        return SpecError(f"unexpected character {ch!r}", span, hint)
    if isinstance(e, UnexpectedEOF):
        span = source.span(max(0, len(source.text) - 1))
        return SpecError("the spec ends in the middle of a statement", span, f"expected {_expected_list(e.expected)}")
    assert isinstance(e, UnexpectedToken)
    tok: Token = e.token
    if tok.type == "$END":
        span = source.span(max(0, len(source.text.rstrip()) - 1))
        return SpecError(
            "the spec ends in the middle of a statement", span, f"expected {_expected_list(e.expected)}"
        )
    span = source.span(tok.start_pos, tok.end_pos)
    statement_start = {"VAR", "SPEC", "PARAM", "KNOWN", "CONST", "DESIGN", "SUBJECT"} & set(e.expected)
    if statement_start and tok.type == "NAME":
        close = difflib.get_close_matches(str(tok), [k.split()[0] for k in STATEMENT_KEYWORDS], n=1, cutoff=0.6)
        hint = (
            f"did you mean '{close[0]}'?"
            if close
            else "a statement starts with one of: " + ", ".join(STATEMENT_KEYWORDS)
        )
        return SpecError(f"unknown statement '{tok}'", span, hint)
    if tok.type == "_NL":
        return SpecError(
            "the line ends in the middle of a statement", span, f"expected {_expected_list(e.expected)}"
        )
    what = f"'{tok}'" if tok.type != "TABLE_BODY" else "a table"
    return SpecError(f"unexpected {what}", span, f"expected {_expected_list(e.expected)}")


# ---------------------------------------------------------------- tree -> AST


def _number(text: str) -> float:
    return float(text)


@v_args(meta=True)
class _ToAst(Transformer):
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

    # tables
    def inline_table(self, meta, items):
        counts = items[0] is not None
        body = items[1]
        return ast.InlineTable(counts, str(body), self._tok(body), self._span(meta))

    def file_table(self, meta, items):
        counts, path, column = items
        return ast.FileTable(counts is not None, str(path)[1:-1], self._tok(path), self._ident(column), self._span(meta))

    def builtin_table(self, meta, items):
        func, *args = items
        args = tuple(a for a in args if a is not None)
        return ast.BuiltinTable(self._ident(func), args, self._span(meta))

    # probabilities
    def prob(self, meta, items):
        targets = []
        given = []
        for it in items:
            if isinstance(it, ast.Target):
                targets.append(it)
            elif isinstance(it, Token):
                given.append(self._ident(it))
        return ast.Prob(tuple(targets), tuple(given), self._span(meta))

    def target(self, meta, items):
        return ast.Target(self._ident(items[0]), items[1])

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
        value = _number(str(digits))
        if sign is not None and str(sign) == "-":
            value = -value
        return ast.Number(value, self._span(meta))

    # expressions
    def number(self, meta, items):
        return ast.Number(_number(str(items[0])), self._span(meta))

    def name(self, meta, items):
        return ast.Name(str(items[0]), self._span(meta))

    def _binop(op):  # noqa: N805 - factory used in the class body
        def method(self, meta, items):
            return ast.BinOp(op, items[0], items[1], self._span(meta))

        return method

    add = _binop("+")
    sub = _binop("-")
    mul = _binop("*")
    div = _binop("/")
    pow = _binop("^")

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
