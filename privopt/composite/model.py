"""A composite spec's model (Ramon & Basu Sec. 3.4; docs/blocks.md), built from its syntax tree.

A composite names whole specs as blocks (``use "FILE.priv" as NAME [with P = EXPR]``), makes
some of their privacy budgets decision variables (``choose NAME.P``; ``choose t in [lo, hi]`` for
a variable of its own), constrains them linearly (``subject to a.eps + b.eps <= eps``, sequential
composition) or by an accountant (``subject to dp(a, b) <= (eps, delta)``), may pick one block of
several (``choose one of a, b``), and optimizes an affine function of the blocks' optimal values
(``a.objective``) and its variables. Every mistake is a located ``SpecError``.

The model reads each block's syntax tree only: which params are its DP/LDP budget (those written
only in the bound of its ``dp(...)``/``ldp(...)`` statement), its objective's sense, and the
Gaussian input it perturbs. Blocks are solved later, at each point, by a loader the API passes in.
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..builder.atoms.dp import budget_terms
from ..builder.params import UseParams
from ..errors import SpecError, UsageError, did_you_mean
from ..language import ast
from ..language.parser import parse
from ..language.source import Span

# The block files being loaded, outermost first: a ``use`` of one of them is a cycle.
LOADING: contextvars.ContextVar[tuple[Path, ...]] = contextvars.ContextVar("privopt_composite_loading", default=())

MAX_BLOCK_BYTES = 16 * 2**20
DP_CALLS = ("dp", "ldp")
NOT_DP = {  # a block's privacy measure that is not a DP budget, by the call its spec constrains
    "loglift": "a log-lift budget",
    "mutual_info": "a leakage in bits",
    "leakage": "a leakage in bits",
}


@dataclass(frozen=True)
class Linear:
    """``const + sum coefs[k] * k`` over keys: chosen variables (``a.eps``, ``t``) and block
    values (``a.objective``)."""

    const: float = 0.0
    coefs: dict[str, float] = field(default_factory=dict)
    text: str | None = None  # as written (the objective's, for sweep tables and plots)

    def scaled(self, c: float) -> Linear:
        return Linear(self.const * c, {k: v * c for k, v in self.coefs.items()})

    def plus(self, other: Linear) -> Linear:
        keys = dict.fromkeys([*self.coefs, *other.coefs])
        coefs = {k: self.coefs.get(k, 0.0) + other.coefs.get(k, 0.0) for k in keys}
        return Linear(self.const + other.const, {k: v for k, v in coefs.items() if v != 0.0})

    def at(self, values: dict[str, float]) -> float:
        return self.const + math.fsum(c * values[k] for k, c in self.coefs.items())


@dataclass(frozen=True)
class Budget:
    """A block's privacy budget statement: ``dp``/``ldp``, its eps and delta (a param name or a
    number), and the params written only there (the ones ``choose`` may take)."""

    kind: str
    eps: str | float
    delta: str | float | None
    choosable: frozenset[str]
    calibration: str | None = None  # Gaussian noise: "classic" when the spec asks for it

    def classic(self, param: str) -> bool:
        """The param is the eps of a Gaussian budget under the classic calibration (Ramon & Basu
        Sec. 3.2: sigma = sqrt(2 ln(1.25 / delta)) Delta / eps), whose optimal value is exactly
        ``V(eps0) (eps0 / eps)^2``: the allowed sensitivities scale with eps, the variances with 1/eps^2."""
        return self.calibration == "classic" and param == self.eps


@dataclass
class Block:
    name: str
    file: str  # the path as written in the composite
    spec: ast.SpecFile
    sha256: str
    params: dict[str, float]  # the block's own params (as declared; constants only)
    fixed: dict[str, float]  # set by `with P = constant`
    linked: dict[str, Linear]  # set by `with P = expression of chosen variables`
    budget: Budget | None
    measure: str  # what its privacy measure is, for messages
    sense: str  # the block's own minimize / maximize
    gaussian_input: tuple | None  # (name, size, lo, hi) of the real vector a noise block perturbs


@dataclass(frozen=True)
class Var:
    key: str  # "a.eps" or "t"
    lo: float
    hi: float
    block: str | None
    param: str
    span: Span


@dataclass(frozen=True)
class Part:
    """One mechanism of a ``dp(...)`` row: a block alone (``pure``: eps-DP; ``approximate``:
    (eps, delta)-DP; ``gaussian``: one noise-placement block), or a joint Gaussian group (``joint
    gaussian``: its blocks' releases are one Gaussian mechanism); ``delta`` is its share of the
    row's delta (``shared``: its delta is a param, given an even share of what the numbers written
    in blocks leave), ``eps`` the param of its first block that holds its eps."""

    blocks: tuple[str, ...]
    mechanism: str
    delta: float
    eps: str
    shared: bool = False
    delta_param: str | None = None  # the param of its first block that holds its delta (a param)


@dataclass(frozen=True)
class Row:
    """``sum coefs[k] * k <= rhs`` over chosen variables (sequential composition). In a ``dp(...)``
    row the blocks of a joint Gaussian group share one eps (their variables are equal) and each
    has coefficient ``1 / |group|``, so the group spends its eps once."""

    coefs: dict[str, float]
    rhs: float
    span: Span
    accountant: str | None = None  # set for a dp(...) row
    delta: float = 0.0
    parts: tuple[Part, ...] = ()
    var: str | None = None  # accuracy first: the composite's chosen t that is the row's eps

    def describe(self, answers: dict) -> dict:
        """The row in the JSON's ``composition``: how its mechanisms compose, each one's eps and
        delta at the answer, and a Gaussian mechanism's Mahalanobis sensitivity as verified (its
        exact (eps, delta) curve: Balle & Wang 2018, Thm. 8). A block not chosen spends nothing.
        ``delta_split``: ``evenly`` when two or more mechanisms share the row's delta in equal parts,
        ``optimized`` when their shares were chosen with their eps (``deltasplit``: the blocks' params
        at the answer carry them)."""
        parts, moved = [], False
        for p in self.parts:
            a = answers.get(p.blocks[0])
            entry = {"blocks": list(p.blocks), "mechanism": p.mechanism, "eps": None, "delta": p.delta}
            if a is not None:
                entry["eps"] = a.params[p.eps]
                if p.shared and p.mechanism == "gaussian":  # its delta as solved (an optimized share, or the even one)
                    entry["delta"] = a.params.get(p.delta_param, p.delta)
                    moved |= entry["delta"] != p.delta
                verification = getattr(a.result, "verification", None) or {}
                if p.mechanism in ("gaussian", "joint gaussian") and "max_sensitivity" in verification:
                    entry["sensitivity"] = verification["max_sensitivity"]
            parts.append(entry)
        return {
            "row": self.span.text() if self.span is not None else None,
            "eps": self.rhs,  # with ``var``: the top of t's range (the parts give t at the answer)
            "var": self.var,
            "delta": self.delta,
            "accountant": self.accountant,
            "delta_split": ("optimized" if moved else "evenly") if sum(p.shared for p in self.parts) > 1 else None,
            "parts": parts,
        }


@dataclass(frozen=True)
class Target:
    """``coef * a.objective + const (<=|>=) 0`` rewritten as ``a.objective OP bound``."""

    block: str
    op: str
    bound: float
    span: Span


@dataclass(frozen=True)
class Joint:
    """Gaussian blocks of one input in one ``dp(...) <= (eps, delta)``: one Gaussian mechanism
    (``gaussian.py``). ``eps`` is the row's (the most the group can get: with ``var``, the top
    of its range), ``delta`` the group's share of the row's delta."""

    blocks: tuple[str, ...]
    eps: float
    delta: float
    span: Span
    var: str | None = None  # accuracy first: the composite's chosen t that is the group's eps


@dataclass
class Model:
    """The model of a composite spec (``solve.Composite`` adds solving and explaining)."""

    spec: ast.SpecFile
    title: str | None
    sha256: str
    params: dict[str, float]
    blocks: dict[str, Block]
    vars: dict[str, Var]
    rows: list[Row]
    targets: list[Target]
    choice: tuple[str, ...]
    choice_span: Span | None
    sense: str
    objective: Linear
    objective_span: Span
    load_block: Callable
    accountant: str | None = None
    joint: Joint | None = None  # the whole composite is one joint Gaussian program (gaussian.solve)
    groups: tuple[Joint, ...] = ()  # every joint Gaussian group (a term of its row's split otherwise)
    solos: tuple[Joint, ...] = ()  # lone noise blocks priced as a group of one (``noise_group``)
    allow_paths: bool = False  # as loaded (a branch of the design choice is loaded alike: ``branch``)
    kind = "composite"  # not a block kind: a program of blocks (privopt.blocks has none of this name)

    @property
    def source_name(self) -> str:
        return self.spec.source.name

    def group_of(self, block: str) -> Joint | None:
        """The joint Gaussian group the block belongs to, if any."""
        return next((g for g in self.groups if block in g.blocks), None)

    def noise_group(self, block: str) -> Joint | None:
        """The block's joint Gaussian group, or its group of one: a lone noise-placement block of a
        ``dp(...)`` row (its delta the row's share, its params numbers, the analytic calibration)
        whose term of a split is priced by the group machinery (``solve._noise_term``; docs/blocks.md,
        "A lone noise block"). A group of one is not in ``groups``: the block keeps its own route,
        accountant (``gaussian``) and text."""
        return self.group_of(block) or next((g for g in self.solos if block in g.blocks), None)

    def composition(self, answers: dict) -> list[dict]:
        """Each ``dp(...)`` row at the answer (``{block: BlockAnswer}``): which blocks composed how
        (``Row.describe``)."""
        return [r.describe(answers) for r in self.rows if r.accountant is not None]

    def provenance(self) -> dict:
        path = None if self.source_name == "<spec>" else self.source_name
        return {"path": path, "title": self.title, "sha256": self.sha256, "params": dict(self.params)}


# ---------------------------------------------------------------- building


def build(
    spec: ast.SpecFile, params: dict | None, allow_paths: bool, load_block: Callable, chosen: str | None = None
) -> Model:
    """The composite's model; ``load_block(spec, params)`` returns a solvable block (the API's loader).
    With ``chosen``, the model of one branch of its design choice (``branch``)."""
    return _Builder(spec, params or {}, allow_paths, load_block, chosen).run()


def branched(c: Model) -> bool:
    """The design choice lists a block of a joint Gaussian group: leaving it out changes the group
    (and the mechanisms of its row), so each branch is a composite of its own (``branch``)."""
    return bool(c.choice) and any(c.group_of(n) is not None for n in c.choice)


def branch(c: Model, chosen: str) -> Model:
    """The composite with ``chosen`` released and the other blocks of its ``choose one of`` left
    out, as if they were never written: no ``use`` of them, gone from every ``dp(...)`` (a joint
    Gaussian group is formed of the blocks that remain), their values 0 in the objective and in
    every target and row, and no design choice. Each branch is a composite of its own, solved
    and certified as such (``solve._branches``)."""
    return build(c.spec, c.params, c.allow_paths, c.load_block, chosen)


class _Builder:
    def __init__(
        self, spec: ast.SpecFile, overrides: dict, allow_paths: bool, load_block: Callable, chosen: str | None = None
    ):
        self.spec, self.overrides, self.allow_paths, self.load_block = spec, dict(overrides), allow_paths, load_block
        listed = [s for s in spec.statements if isinstance(s, ast.ChooseOneDecl)]
        self.chosen = chosen
        self.dropped = {b.name for s in listed for b in s.blocks} - {chosen} if chosen is not None else set()
        path = spec.source.path
        self.folder = path.parent if path is not None else Path.cwd()
        self.params: dict[str, float] = {}
        self.blocks: dict[str, Block] = {}
        self.vars: dict[str, Var] = {}
        self.rows: list[Row] = []
        self.targets: list[Target] = []
        self.choice: tuple[str, ...] = ()
        self.choice_span: Span | None = None
        self.accountants: list[str] = []
        self.groups: list[Joint] = []
        self.solos: list[Joint] = []

    def run(self) -> Model:
        """The model, with this spec's own file on the stack of files being loaded (cycles)."""
        own = self.spec.source.path
        token = LOADING.set((*LOADING.get(), own.resolve()) if own is not None else LOADING.get())
        try:
            return self._run()
        finally:
            LOADING.reset(token)

    def _run(self) -> Model:
        st = self.spec.statements
        declared = {s.name.name for s in st if isinstance(s, ast.ParamDecl)}
        unknown = [k for k in self.overrides if k not in declared]
        if unknown:
            raise UsageError(
                f"params={{{unknown[0]!r}: ...}}: no param '{unknown[0]}'{did_you_mean(unknown[0], declared)}"
            )
        objective = None
        for s in st:
            if isinstance(s, ast.ParamDecl):
                self._param(s)
            elif isinstance(s, ast.UseDecl):
                self._use(s)
            elif isinstance(s, ast.ChooseDecl):
                for item in s.items:
                    self._choose(item)
            elif isinstance(s, ast.ChooseOneDecl):
                self._choose_one(s)
            elif isinstance(s, ast.ConstraintDecl):
                self._constraint(s)
            elif isinstance(s, ast.ObjectiveDecl):
                if objective is not None:
                    raise SpecError(
                        "a composite has one objective", s.span, "combine them: minimize a.objective + b.objective"
                    )
                objective, linear = s, self._linear(s.expr)  # names declared above it, like every line
            elif not isinstance(s, ast.SpecTitle):
                raise SpecError(
                    "a composite spec holds only spec, param, use, choose, subject to and minimize/maximize lines",
                    s.span,
                    "move this statement into a block's own spec file",
                )
        if not self.blocks:
            raise SpecError(
                "a composite needs at least one block", None, 'add: use "FILE.priv" as NAME', file=self.spec.source.name
            )
        if objective is None:
            raise SpecError(
                "the composite has no objective",
                None,
                "add: minimize a.objective + b.objective",
                file=self.spec.source.name,
            )
        linear = dataclasses.replace(linear, text=objective.expr.span.text())
        self._check_groups(objective, linear)
        self._check_least_sum(objective, linear)
        titles = [s for s in st if isinstance(s, ast.SpecTitle)]
        return Model(
            spec=self.spec,
            title=titles[0].title if titles else None,
            sha256=hashlib.sha256(self.spec.source.text.encode("utf-8")).hexdigest(),
            params=self.params,
            blocks=self.blocks,
            vars=self.vars,
            rows=self.rows,
            targets=self.targets,
            choice=self.choice,
            choice_span=self.choice_span,
            sense=objective.sense,
            objective=linear,
            objective_span=objective.span,
            load_block=self.load_block,
            accountant=_strongest(self.accountants),
            joint=self._alone(linear),
            groups=tuple(self.groups),
            solos=tuple(self.solos),
            allow_paths=self.allow_paths,
        )

    # ------------------------------------------------------------ statements

    def _param(self, s: ast.ParamDecl) -> None:
        name = s.name.name
        if name in self.params:
            raise SpecError(f"param '{name}' is declared twice", s.name.span, "keep one of the two lines")
        if name in self.overrides:
            try:
                self.params[name] = float(self.overrides[name])
            except (TypeError, ValueError):
                raise UsageError(f"params={{{name!r}: {self.overrides[name]!r}}}: not a number") from None
            return
        self.params[name] = self._constant(s.expr)

    def _use(self, s: ast.UseDecl) -> None:
        name = s.name.name
        if name in self.dropped:  # another branch's block (``branch``)
            return
        if name in self.blocks or name in self.params or name in self.vars:
            raise SpecError(f"the name '{name}' is already declared", s.name.span, "give the block another name")
        text, path, raw = self._read_block(s)
        stack = LOADING.get()
        if path in stack:
            chain = " -> ".join(p.name for p in (*stack[stack.index(path) :], path))
            raise SpecError(
                f"a cycle of `use`: {chain}", s.path_span, "a block cannot use, directly or not, the spec that uses it"
            )
        block_spec = parse(text, self.folder / s.path)
        declared = {p.name.name: p for p in block_spec.statements if isinstance(p, ast.ParamDecl)}
        fixed: dict[str, float] = {}
        linked: dict[str, Linear] = {}
        for w in s.withs:
            if w.name.name not in declared:
                raise SpecError(
                    f"block '{name}' ({s.path}) has no param '{w.name.name}'{did_you_mean(w.name.name, declared)}",
                    w.name.span,
                    "with sets a param the block declares: " + (", ".join(declared) or "it declares none"),
                )
            form = self._linear(w.expr)
            if form.coefs:
                linked[w.name.name] = form
            else:
                fixed[w.name.name] = form.const
        own = {}
        for p, decl in declared.items():
            try:
                own[p] = _number_of(decl.expr)
            except ValueError:
                continue
        budget, measure = _budget(block_spec)
        objectives = [o for o in block_spec.statements if isinstance(o, ast.ObjectiveDecl)]
        block = Block(
            name=name,
            file=s.path,
            spec=block_spec,
            sha256=hashlib.sha256(raw).hexdigest(),
            params=own,
            fixed=fixed,
            linked=linked,
            budget=budget,
            measure=measure,
            sense=objectives[0].sense if objectives else "minimize",
            gaussian_input=_gaussian_input(block_spec),
        )
        for p, form in linked.items():
            if budget is None or p not in budget.choosable:
                raise SpecError(
                    f"'{p}' of block '{name}' is set by a chosen variable, but it is not only a privacy budget of the block",
                    next(w.span for w in s.withs if w.name.name == p),
                    "a chosen variable may set only a param written only in the block's dp(...)/ldp(...) bound",
                )
            if any(c < 0 for c in form.coefs.values()):
                raise SpecError(
                    f"'{p}' of block '{name}' decreases as a chosen variable grows",
                    next(w.span for w in s.withs if w.name.name == p),
                    "write it as a nonnegative multiple of the variable (the search uses that the budget grows with it)",
                )
        # the block must load on its own (its data, its params; a composite block pushes its own
        # file on LOADING): its errors show here, once
        # (an error about a value set here is located at it: ``UseParams``)
        spans = {w.name.name: w.expr.span for w in s.withs if w.name.name in fixed}
        self.load_block(block_spec, UseParams({**fixed, **{p: _probe(self.vars, f) for p, f in linked.items()}}, spans))
        self.blocks[name] = block

    def _read_block(self, s: ast.UseDecl) -> tuple[str, Path, bytes]:
        """The block file's text, real path and bytes, through the data files' guards (inside
        the spec's folder unless paths are allowed; a regular file)."""
        if not s.path.endswith(".priv"):
            raise SpecError(f"'{s.path}' is not a spec file", s.path_span, 'a block is a spec: use "FILE.priv" as NAME')
        try:
            from ..language.datafiles import DataFiles  # pandas: only a spec with `use` reads a block file

            real, fh = DataFiles(self.folder, self.allow_paths).open(s.path, s.path_span)
        except SpecError as e:
            if "does not exist" not in e.message:
                raise
            raise SpecError(f"block file '{s.path}' does not exist", s.path_span, e.hint) from None
        with fh:
            raw = fh.read(MAX_BLOCK_BYTES + 1)
        if len(raw) > MAX_BLOCK_BYTES:
            raise SpecError(f"block file '{s.path}' is larger than {MAX_BLOCK_BYTES // 2**20} MB", s.path_span)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise SpecError(f"block file '{s.path}' is not UTF-8 text", s.path_span, "save it as UTF-8") from None
        return text, real, raw

    def _choose(self, item: ast.ChooseItem) -> None:
        key = item.key
        if key in self.vars:
            raise SpecError(f"'{key}' is chosen twice", item.span, "keep one choose")
        lo = self._constant(item.lo) if item.lo is not None else 0.0
        hi = self._constant(item.hi) if item.hi is not None else math.inf
        if not (0 <= lo <= hi):
            raise SpecError(
                f"the range [{lo:g}, {hi:g}] of '{key}' is empty or negative", item.span, "write 0 <= lo <= hi"
            )
        if item.block is None:
            if key in self.params or key in self.blocks:
                raise SpecError(f"the name '{key}' is already declared", item.name.span, "choose another name")
            self.vars[key] = Var(key, lo, hi, None, key, item.span)
            return
        if item.block.name in self.dropped:
            return
        block = self._block(item.block)
        p = item.name.name
        self._choosable(block, p, item.name.span)
        if any(v.block == block.name for v in self.vars.values()):
            raise SpecError(
                f"block '{block.name}' already has a chosen param: choosing two of one block's params (its eps and "
                "its delta) is not built (each chosen param is split in one composition row, and a block's value "
                "couples two rows)",
                item.span,
                f"write dp({block.name}, ...) <= (eps, delta): it chooses each block's eps and splits delta too "
                "(optimized with eps for Gaussian blocks under the classic calibration); or set delta with "
                "`with delta = NUMBER`",
            )
        self.vars[key] = Var(key, lo, hi, block.name, p, item.span)

    def _choosable(self, block: Block, p: str, span: Span) -> None:
        if p in block.fixed or p in block.linked:
            raise SpecError(f"'{block.name}.{p}' is set by `with` in its use line", span, "either set it or choose it")
        if p not in block.params and not any(
            isinstance(s, ast.ParamDecl) and s.name.name == p for s in block.spec.statements
        ):
            raise SpecError(
                f"block '{block.name}' has no param '{p}'{did_you_mean(p, block.params)}",
                span,
                "choose a param the block declares",
            )
        if block.budget is None or p not in block.budget.choosable:
            where = (
                "its budget is " + block.measure
                if block.budget is None
                else "it is used outside the dp(...)/ldp(...) bound"
            )
            raise SpecError(
                f"'{block.name}.{p}' cannot be chosen: only a privacy budget can ({where})",
                span,
                "choose a param written only as the bound of the block's dp(...) or ldp(...) statement",
            )

    def _choose_one(self, s: ast.ChooseOneDecl) -> None:
        if self.chosen is not None:  # one branch (``branch``): no choice left
            return
        if self.choice:
            raise SpecError(
                "a composite has one design choice", s.span, "list every alternative in one `choose one of`"
            )
        names = tuple(self._block(b).name for b in s.blocks)
        if len(set(names)) != len(names):
            raise SpecError("a block is listed twice in the design choice", s.span, "list each block once")
        self.choice, self.choice_span = names, s.span

    def _constraint(self, s: ast.ConstraintDecl) -> None:
        if len(s.exprs) != 2:
            raise SpecError("a composite constraint compares two sides", s.span, "write one comparison per line")
        left, right = s.exprs
        op = s.ops[0]
        if isinstance(left, ast.Call) and left.func.name == "dp":
            self._dp(left, op, right, s.span)
            return
        if isinstance(left, ast.Call) and left.func.name in ("ldp", "log_lift", "leakage"):
            raise SpecError(
                f"blocks compose under dp(...), not {left.func.name}(...)",
                left.func.span,
                f"write dp({', '.join(a.span.text() for a in left.args)}) <= eps: the blocks' own "
                f"{left.func.name} budgets add up under sequential composition",
            )
        if op == "==":
            raise SpecError("equality constraints between blocks are not built yet", s.span, "write <= or >=")
        form = self._linear(left).plus(self._linear(right).scaled(-1.0))
        if op == ">=":
            form = form.scaled(-1.0)
        values = [k for k in form.coefs if k.endswith(".objective")]
        if values:
            if len(values) > 1 or len(form.coefs) > 1:
                raise SpecError(
                    "an accuracy target bounds one block's objective by a number",
                    s.span,
                    "write one target per line: subject to a.objective <= 0.05",
                )
            coef = form.coefs[values[0]]
            bound = -form.const / coef
            self.targets.append(Target(values[0].split(".")[0], "<=" if coef > 0 else ">=", bound, s.span))
            return
        if not form.coefs:
            if form.const > 0:
                raise SpecError("this constraint is false whatever is chosen", s.span, "check its numbers")
            return
        self.rows.append(Row(dict(form.coefs), -form.const, s.span))

    def _dp(self, call: ast.Call, op: str, bound: ast.Expr, span: Span) -> None:
        """``dp(a, b, ...) <= eps`` or ``<= (eps, delta)``: the blocks' eps become chosen
        variables under one composition row; deltas are split evenly (documented)."""
        if op != "<=" or call.arrow_args is not None or not call.args:
            raise SpecError(
                "write dp(a, b, ...) <= (eps, delta) over blocks", span, "list the blocks whose releases compose"
            )
        blocks = []
        args = [a for a in call.args if not (isinstance(a, ast.Name) and a.name in self.dropped)]
        if not args:  # every block listed is another branch's
            return
        for a in args:
            if not isinstance(a, ast.Name):
                raise SpecError("dp(...) over blocks lists block names", a.span, "write dp(a, b) <= eps")
            block = self._block(ast.Ident(a.name, a.span))
            if block in blocks:
                raise SpecError(f"block '{a.name}' is listed twice", a.span, "list each block once")
            blocks.append(block)
        for b, a in zip(blocks, args):
            if b.budget is None:
                raise SpecError(
                    f"block '{b.name}' cannot be listed in dp(...): its budget is {b.measure}, not a DP budget",
                    a.span,
                    "list only blocks with a dp(...) or ldp(...) budget; constrain the others by their own params",
                )
            if not isinstance(b.budget.eps, str):
                raise SpecError(
                    f"block '{b.name}' writes its budget as a number",
                    a.span,
                    "write it as a param (param eps = ...) so that the composite can choose it",
                )
            self._choosable(b, b.budget.eps, a.span)
        if isinstance(bound, ast.TupleExpr):
            budget_terms(bound)  # eps first: three numbers, or a pair written (delta, eps), is an error
            eps_form, delta = self._linear(bound.items[0]), self._constant(bound.items[1])
            if not 0 <= delta < 1:
                raise SpecError(
                    f"dp's delta must lie in [0, 1) (it is {delta:g})",
                    bound.items[1].span,
                    "delta is the probability that the e^eps bound fails; 1 bounds nothing",
                )
        else:
            eps_form, delta = self._linear(bound), 0.0
        units = self._units(blocks, delta, span)
        parts = self._split_delta(units, delta, span)
        var = self._budget_var(eps_form, bound)
        eps = eps_form.const if var is None else self.vars[var].hi
        coefs = {}
        for part in parts:
            for name in part.blocks:
                b = self.blocks[name]
                key = f"{b.name}.{b.budget.eps}"
                if key not in self.vars:
                    if any(v.block == b.name for v in self.vars.values()):
                        chosen = next(v.key for v in self.vars.values() if v.block == b.name)
                        raise SpecError(
                            f"block '{b.name}' already has a chosen param ('{chosen}'), and dp(...) chooses its eps: "
                            "two chosen params of one block are not built",
                            span,
                            f"drop `choose {chosen}`: dp(...) chooses {b.name}'s eps and gives it its share of delta",
                        )
                    self.vars[key] = Var(key, 0.0, math.inf, b.name, b.budget.eps, span)
                coefs[key] = 1.0 / len(part.blocks)
        for part in parts:
            if part.mechanism == "joint gaussian":
                self.groups.append(Joint(part.blocks, eps, part.delta, span, var))
            elif self._solo(part) and var is None:
                self.solos.append(Joint(part.blocks, eps, part.delta, span))
        joint_only = len(parts) == 1 and parts[0].mechanism == "joint gaussian"
        accountant = "gaussian" if joint_only else ("basic" if delta > 0 else "pure")
        self.accountants.append(accountant)
        # with a chosen t the row holds the group's eps to t's range; the group's eps is t itself
        self.rows.append(Row(coefs, eps, span, accountant, delta, parts, var))

    def _budget_var(self, form: Linear, bound: ast.Expr) -> str | None:
        """The composite's chosen variable ``t`` when the row's eps is ``t`` itself (accuracy
        first: ``dp(a, b) <= (t, delta)``, the least t meeting the targets), else None (a number)."""
        if not form.coefs:
            return None
        (key, coef), *more = form.coefs.items()
        mine = key in self.vars and self.vars[key].block is None
        if more or coef != 1.0 or form.const != 0.0 or not mine:
            raise SpecError(
                "the eps of dp(...) is a number, or a chosen variable t of the composite alone (accuracy first)",
                bound.span,
                "write dp(a, b) <= (eps, delta) with eps a number, or choose t in [lo, hi] and "
                "dp(a, b) <= (t, delta), minimize t",
            )
        if not math.isfinite(self.vars[key].hi):
            raise SpecError(f"'{key}' needs a bounded range", self.vars[key].span, f"choose {key} in [lo, hi]")
        return key

    def _units(self, blocks: list[Block], delta: float, span: Span) -> list[tuple[list[Block], str]]:
        """The mechanisms of a ``dp(...)`` row, in the order written: blocks that add Gaussian
        noise to the same input (same name, length and range) are one Gaussian mechanism, a joint
        group (``gaussian.py``); every other block is one mechanism. The cases of a group not built
        are refused where they are written."""
        by_input: dict[tuple, list[Block]] = {}
        for b in blocks:
            if b.gaussian_input is not None:
                by_input.setdefault(b.gaussian_input, []).append(b)
        units, seen = [], set()
        for b in blocks:
            group = by_input.get(b.gaussian_input, [b]) if b.gaussian_input is not None else [b]
            if b.name in seen:
                continue
            seen |= {g.name for g in group}
            if len(group) > 1:
                self._check_group(group, delta, span)
                units.append((group, "joint gaussian"))
            else:
                kind = "gaussian" if b.gaussian_input is not None else "approximate"
                units.append((group, "pure" if b.budget.delta is None else kind))
        return units

    def _solo(self, part: Part) -> bool:
        """A lone noise-placement block priced as a group of one (``Model.noise_group``): its delta
        the row's share (a param), its params numbers, not the classic calibration (whose closed
        form ``k / eps^2`` already prices it: ``solve._curve``)."""
        b = self.blocks[part.blocks[0]]
        return part.mechanism == "gaussian" and part.shared and not b.linked and b.budget.calibration != "classic"

    def _check_group(self, group: list[Block], delta: float, span: Span) -> None:
        """What a joint Gaussian group's blocks must be (located refusals, each saying what to write):
        a positive delta (no Gaussian mechanism gives delta = 0), each block's delta a param (the
        group has one delta, the row's share), params set by numbers, and no chosen param besides
        the eps that ``dp(...)`` sets."""
        b, c = group[0], group[1]
        together = (
            f"blocks '{b.name}' and '{c.name}' add Gaussian noise to the same input "
            f"'{b.gaussian_input[0]}': together they are one Gaussian mechanism"
        )
        names = {g.name for g in group}
        numbered = [g.name for g in group if not isinstance(g.budget.delta, str)]
        linked = [g.name for g in group if g.linked]
        chosen = [v.key for v in self.vars.values() if v.block in names]
        refusals = [
            (
                delta <= 0,
                "the joint Gaussian accountant needs a delta > 0: no Gaussian mechanism gives delta = 0 (its "
                "privacy loss is unbounded with some probability)",
                f"write dp({', '.join(g.name for g in group)}, ...) <= (eps, delta) with a delta > 0",
            ),
            (
                bool(numbered),
                f"block '{numbered[0] if numbered else ''}' writes its delta as a number, but the group is one "
                "mechanism with one delta, the share dp(...) gives it",
                "write the block's budget with a param (param delta = 1e-6, dp(x -> O) <= (eps, delta)); dp(...) sets it",
            ),
            (
                bool(linked),
                f"block '{linked[0] if linked else ''}' is set by chosen variables, but the group is solved as one "
                "program at fixed params",
                "set its params by numbers (`with P = NUMBER`); its eps is set by dp(...)",
            ),
            (
                bool(chosen),
                f"'{chosen[0] if chosen else ''}' is chosen, but a joint group's only chosen value is the eps dp(...) "
                "sets",
                "drop that choose line and set the param by a number (`with P = NUMBER`)",
            ),
        ]
        for refused, why, fix in refusals:
            if refused:
                raise SpecError(f"{together}; {why}", span, fix)

    def _split_delta(self, units: list[tuple[list[Block], str]], delta: float, span: Span) -> tuple[Part, ...]:
        """Basic composition of delta: numbers written in the blocks count; the mechanisms whose
        delta is a param (a joint group counts once) share the rest evenly here. A row of Gaussian
        blocks under the classic calibration has its delta split optimized with its eps when it is
        solved (``deltasplit``); every other row keeps the even split (docs/blocks.md, "The split of
        delta")."""
        written = math.fsum(b.budget.delta for bs, _ in units for b in bs if isinstance(b.budget.delta, float))
        shares = [any(isinstance(b.budget.delta, str) for b in bs) for bs, _ in units]
        if written > delta:
            raise SpecError(f"the blocks' own deltas add up to {written:g}, more than {delta:g}", span, "raise delta")
        share = (delta - written) / sum(shares) if any(shares) else 0.0
        parts = []
        for (bs, mechanism), shared in zip(units, shares):
            for b in bs:
                if isinstance(b.budget.delta, str) and b.budget.delta in b.fixed:
                    raise SpecError(
                        f"block '{b.name}' sets its delta with `with`, and dp(...) splits delta",
                        span,
                        "leave delta out of its `with`, or constrain a.eps + b.eps <= eps instead of dp(...)",
                    )
            for b in bs:
                if isinstance(b.budget.delta, str):
                    b.fixed[b.budget.delta] = share
            own = share if shared else math.fsum(b.budget.delta or 0.0 for b in bs)
            delta_param = bs[0].budget.delta if isinstance(bs[0].budget.delta, str) else None
            parts.append(Part(tuple(b.name for b in bs), mechanism, own, bs[0].budget.eps, shared, delta_param))
        return tuple(parts)

    def _check_groups(self, objective: ast.ObjectiveDecl, linear: Linear) -> None:
        """What a joint Gaussian group needs beyond its row (located refusals otherwise): positive
        weights in the minimize sense (it minimizes the blocks' expected squared errors), or,
        under accuracy first, ``minimize t`` and a target from above on every block
        (``_check_accuracy_first``); no other constraint on its blocks. Targets on its blocks
        (either side) are rows of its joint program, alone (``gaussian.with_targets``) or beside
        other blocks (``gaussian.target_term``). A design choice may list its blocks: each branch
        is then a composite of its own (``branch``)."""
        sign = 1.0 if objective.sense == "minimize" else -1.0
        for g in self.groups:
            keys = {f"{n}.{self.blocks[n].budget.eps}" for n in g.blocks}
            if g.var is not None:
                self._check_accuracy_first(g, objective, linear)
            for n in g.blocks if g.var is None else ():
                if not sign * linear.coefs.get(f"{n}.objective", 0.0) > 0:
                    raise SpecError(
                        f"block '{n}' is not weighted by a positive number in the objective: a joint Gaussian program "
                        "minimizes a positive sum of the blocks' expected squared errors",
                        objective.span,
                        f"write minimize {' + '.join(f'{b}.objective' for b in g.blocks)} (positive weights)",
                    )
            for row in self.rows:
                if row.span is not g.span and keys & set(row.coefs):
                    raise SpecError(
                        f"this row puts the eps of the joint Gaussian group {', '.join(g.blocks)} in another "
                        "constraint, but its dp(...) row sets it (the group's blocks share that one eps)",
                        row.span,
                        "drop this row and put the limit into the dp(...) row's eps, or give the blocks their own "
                        "budgets: subject to a.eps + b.eps <= eps without dp(...)",
                    )
            for t in self.targets:
                if t.block in g.blocks and g.var is not None and t.op != "<=":
                    raise SpecError(
                        f"under accuracy first, a target bounding block '{t.block}' from below does not move the "
                        f"least {g.var}: more noise on one block alone keeps the group private, so it is met by "
                        "adding noise, not by the budget",
                        t.span,
                        f"drop this target and solve for the least {g.var}; then fix {g.var} at that value and write "
                        f"subject to {t.block}.objective >= {t.bound:g} in a composite with dp(...) <= (number, delta)",
                    )

    def _check_accuracy_first(self, g: Joint, objective: ast.ObjectiveDecl, linear: Linear) -> None:
        """``dp(a, b, ...) <= (t, delta)``: the composite minimizes t and bounds every block of the
        group from above (a block without a target would take unbounded noise). The group is the
        whole composite, or one mechanism of the row beside others (``_check_least_sum``). A design
        choice that lists the group's blocks is solved branch by branch (``branch``: each branch
        certified on its own; the least wins)."""
        if objective.sense != "minimize" or linear.coefs != {g.var: 1.0}:
            raise SpecError(
                f"accuracy first over a joint Gaussian group minimizes '{g.var}' alone",
                objective.span,
                f"write minimize {g.var}; to weigh blocks' values, fix the budget and minimize a.objective + ...",
            )
        bounded = {t.block for t in self.targets if t.op == "<="}
        for n in g.blocks:
            if n not in bounded:
                raise SpecError(
                    f"block '{n}' of the joint Gaussian group has no accuracy target: the least {g.var} would give "
                    "it unbounded noise",
                    g.span,
                    f"add subject to {n}.objective <= a number",
                )

    def _check_least_sum(self, objective: ast.ObjectiveDecl, linear: Linear) -> None:
        """Accuracy first over a ``dp(...) <= (t, delta)`` row (``least``: its least t is the sum of
        its mechanisms' least eps): ``minimize t``, that row the only one; a block outside it is
        fixed (no chosen param, not set by t), so its value and targets do not depend on t."""
        rows = [r for r in self.rows if r.var is not None]
        if not rows:
            return
        key = rows[0].var
        if objective.sense != "minimize" or linear.coefs != {key: 1.0}:
            raise SpecError(
                f"accuracy first over dp(...) <= (..., {key}) minimizes '{key}' alone",
                objective.span,
                f"write minimize {key}; to weigh blocks' values, fix the budget and minimize a.objective + ...",
            )
        if len(self.rows) > 1:
            other = next(r for r in self.rows if r is not rows[0])
            raise SpecError(
                f"accuracy first over dp(...) <= (..., {key}) takes that row alone: another composition row is not built",
                other.span,
                f"list every block in the one dp(...) row whose eps is {key}, or give this row its own composite",
            )
        outside = [n for n in self.blocks if not any(k.startswith(n + ".") for k in rows[0].coefs)]
        for n in outside:  # fixed blocks beside the row: solved once, their targets independent of t
            chosen = next((v.key for v in self.vars.values() if v.block == n), None)
            if chosen is not None or self.blocks[n].linked:
                what = f"'{chosen}' is chosen" if chosen else f"its params are set by {key} through `with`"
                raise SpecError(
                    f"block '{n}' is not in the dp(...) row whose eps is {key}, and {what}: accuracy first spends "
                    f"{key} on the row's mechanisms only, and a block beside the row must be fixed",
                    rows[0].span,
                    f"list {n} in the dp(...) row (its eps is then its share of {key}), or set its params by numbers "
                    "(`with eps = NUMBER`)",
                )

    def _alone(self, linear: Linear) -> Joint | None:
        """The joint group when the whole composite is one joint Gaussian program: its row is the
        only one, its blocks are all the blocks, and the objective weighs only their values (or
        is the group's chosen eps ``t``, accuracy first); targets only on its blocks; no design
        choice (a branch of one is built without it: ``branch``)."""
        if len(self.groups) != 1 or len(self.rows) != 1 or self.choice:
            return None
        g = self.groups[0]
        keys = {f"{n}.objective" for n in g.blocks} | ({g.var} if g.var is not None else set())
        ours = all(t.block in g.blocks for t in self.targets)
        return g if set(self.blocks) == set(g.blocks) and set(linear.coefs) <= keys and ours else None

    # ------------------------------------------------------------ names and expressions

    def _block(self, ident: ast.Ident) -> Block:
        if ident.name not in self.blocks:
            raise SpecError(
                f"no block '{ident.name}' is declared above this line{did_you_mean(ident.name, self.blocks)}",
                ident.span,
                f'declare it before it is used: use "FILE.priv" as {ident.name}',
            )
        return self.blocks[ident.name]

    def _constant(self, e: ast.Expr) -> float:
        form = self._linear(e)
        if form.coefs:
            raise SpecError("this must be a number (params allowed), not a chosen value", e.span, "write a constant")
        return form.const

    def _linear(self, e: ast.Expr) -> Linear:
        """An affine expression over params (constants), chosen variables and blocks' objectives
        (``a.objective``); anything else is a located error."""
        if isinstance(e, ast.Number):
            return Linear(e.value)
        if isinstance(e, ast.Name):
            if e.name in self.params:
                return Linear(self.params[e.name])
            if e.name in self.vars:
                return Linear(0.0, {e.name: 1.0})
            if e.name in self.blocks:
                raise SpecError(
                    f"'{e.name}' is a block, not a number",
                    e.span,
                    f"write {e.name}.objective for its value, or {e.name}.eps for its budget once "
                    f"'choose {e.name}.eps' is written above",
                )
            known = [*self.params, *self.vars, *self.blocks]
            raise SpecError(
                f"'{e.name}' is not declared above this line{did_you_mean(e.name, known)}",
                e.span,
                "declare a name before using it: param NAME = ..., or choose NAME in [lo, hi]",
            )
        if isinstance(e, ast.Attr):
            if e.block.name in self.dropped:  # another branch's block counts 0 (``branch``)
                return Linear(0.0)
            block = self._block(e.block)
            attr = e.attr.name
            if attr == "objective":
                return Linear(0.0, {f"{block.name}.objective": 1.0})
            key = f"{block.name}.{attr}"
            if key in self.vars:
                return Linear(0.0, {key: 1.0})
            if attr in block.fixed:
                return Linear(block.fixed[attr])
            raise SpecError(
                f"'{key}' is neither chosen nor the block's objective",
                e.span,
                f"write {block.name}.objective, or choose {key} above this line",
            )
        if isinstance(e, ast.Neg):
            return self._linear(e.operand).scaled(-1.0)
        if isinstance(e, ast.BinOp) and e.op in "+-":
            right = self._linear(e.right)
            return self._linear(e.left).plus(right.scaled(-1.0 if e.op == "-" else 1.0))
        if isinstance(e, ast.BinOp) and e.op in "*/":
            left, right = self._linear(e.left), self._linear(e.right)
            if e.op == "*" and not left.coefs:
                return right.scaled(left.const)
            if not right.coefs and (e.op == "*" or right.const != 0):
                return left.scaled(right.const if e.op == "*" else 1.0 / right.const)
        raise SpecError(
            "a composite combines blocks' values and chosen params linearly",
            e.span,
            "write a sum of numbers times a.objective, a.eps or a chosen variable",
        )


def _strongest(accountants: list[str]) -> str | None:
    if not accountants:
        return None
    for name in ("gaussian", "basic"):
        if name in accountants:
            return name
    return "pure"


def _probe(vars: dict[str, Var], form: Linear) -> float:
    """A point to test-load a block at: each variable at its upper bound (or lower bound + 1)."""
    return form.at({k: (v.hi if math.isfinite(v.hi) else v.lo + 1.0) for k, v in vars.items()})


def _number_of(e: ast.Expr) -> float:
    if isinstance(e, ast.Number):
        return e.value
    if isinstance(e, ast.Neg) and isinstance(e.operand, ast.Number):
        return -e.operand.value
    raise ValueError("not a number")


def _budget(spec: ast.SpecFile) -> tuple[Budget | None, str]:
    """The block's DP/LDP budget statement (read from its syntax tree) and, when it has none,
    what its privacy measure is. A param is choosable when it appears in the bound of the
    budget and nowhere else (other statements, other params' definitions)."""
    budgets = []
    measure = "a transparency report's confidence bound"
    for s in spec.statements:
        if not isinstance(s, ast.ConstraintDecl):
            continue
        head = s.exprs[0]
        if isinstance(head, ast.Call) and head.func.name in DP_CALLS and len(s.exprs) == 2 and s.ops[0] == "<=":
            budgets.append((s, head.func.name, s.exprs[1]))
        for call in ast.nodes_in(*s.exprs, kind=ast.Call):
            if call.func.name in NOT_DP:
                measure = NOT_DP[call.func.name]
    if len(budgets) != 1:
        return None, (measure if not budgets else "two DP budget statements (only one can be composed)")
    stmt, kind, bound = budgets[0]
    items = bound.items if isinstance(bound, ast.TupleExpr) else (bound,)

    def term(e):
        if isinstance(e, ast.Name):
            return e.name
        return _number_of(e)

    try:
        eps = term(items[0])
        delta = term(items[1]) if len(items) > 1 else None
    except ValueError:
        return None, "a budget written as an expression (write it as a param)"
    in_bound = ast.names_in(bound)
    elsewhere = set()
    for s in spec.statements:
        if s is stmt:
            elsewhere |= ast.names_in(stmt.exprs[0])
        elif isinstance(s, ast.ParamDecl):
            elsewhere |= ast.names_in(s.expr)
        elif not isinstance(s, ast.SpecTitle):
            elsewhere |= ast.names_in(s)
    calibration = next(
        (
            k.value.name
            for k in ast.nodes_in(stmt.exprs[0], kind=ast.KwArg)
            if k.name.name == "calibration" and isinstance(k.value, ast.Name)
        ),
        None,
    )
    return Budget(kind, eps, delta, frozenset(in_bound - elsewhere), calibration), measure


def _gaussian_input(spec: ast.SpecFile) -> tuple | None:
    """``(name, size, lo, hi)`` of the real vector a noise-placement block perturbs (as written)."""
    if not any(isinstance(s, ast.NoiseDecl) for s in spec.statements):
        return None
    for s in spec.statements:
        if isinstance(s, ast.VarDecl) and isinstance(s.domain, ast.DomainReal):
            d = s.domain
            return (s.name.name, d.size.span.text(), d.lo.span.text(), d.hi.span.text())
    return None
