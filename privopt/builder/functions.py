"""The table of functions: every function and objective name the spec language knows, how a user
writes it, the problem classes where it applies, and what it means.

Every name of the table is an atom (builder/atoms/, one module each, with its curvature). The
one evaluator (``evaluate.py``) and the constraint readers of each class (the transparency
report in ``build.py``, mechanisms and shaped noise in ``mechanism.py``, noise placement in
``noise.py``, obfuscation in ``obfuscation.py``) ask this table when they meet a name the
class does not read there, so every class gives the same diagnosis:

* a name the language does not know: ``unknown function 'max_confidance'`` with a did-you-mean,
  preferring the names that apply in the spec's own class (``suggest``);
* a name that exists but belongs to another class: ``ldp applies to mechanism (sanitization) and
  shaped-noise specs``, with what this class uses instead (``where_applies``, ``misplaced``).

docs/language.md's "Functions" table is checked against ``FUNCTIONS`` (tests/test_docs.py).
"""

from __future__ import annotations

from ..errors import SpecError, UnsupportedError
from ..records import Record

# the problem classes, as docs/ name them
REPORT = "transparency report"
MECHANISM = "mechanism"
SHAPED = "shaped noise"
PLACEMENT = "noise placement"
OBFUSCATION = "obfuscation"
CLASSES = (REPORT, MECHANISM, SHAPED, PLACEMENT, OBFUSCATION)

# how a message names the specs of a class, and what such a spec optimizes
CLASS_SPECS = {
    REPORT: "transparency-report specs (a design P(OUTCOME | PUBLIC..., PRIVATE...))",
    MECHANISM: "mechanism (sanitization) specs (a design P(RELEASE | ...))",
    SHAPED: "shaped-noise specs (a design P(y | x) over numeric values)",
    PLACEMENT: "noise-placement specs (continuous inputs and Gaussian noise)",
    OBFUSCATION: "rank-preserving obfuscation specs (krcc, mutual_info)",
}
CLASS_OBJECTIVE = {
    REPORT: "minimizes max_confidence(PUBLIC..., OUTCOME -> PRIVATE...) or maximizes min_uncertainty(...)",
    MECHANISM: "optimizes a utility linear in the design, e.g. minimize tv(X, Y) or minimize E[d(X, Y)], "
    "under budgets such as ldp(S -> Y) <= eps",
    SHAPED: "minimizes a convex quadratic cost, e.g. minimize sum(x, y: f * (x - y)^2), under dp(x -> y) <= (eps, delta)",
    PLACEMENT: "minimizes E[sum((O - A @ x)^2)] under dp(x -> O) <= (eps, delta)",
    OBFUSCATION: "minimizes krcc(X, Y) under mutual_info(Y; F) <= eps",
}
# the article before a class's name in a sentence ("a transparency report", "a mechanism spec")
CLASS_NOUN = {
    REPORT: "a transparency report",
    MECHANISM: "a mechanism spec",
    SHAPED: "a shaped-noise spec",
    PLACEMENT: "a noise-placement spec",
    OBFUSCATION: "a rank-preserving obfuscation spec",
}

_FINITE = (REPORT, MECHANISM, SHAPED, OBFUSCATION)  # specs over finite variables and known tables


class Function(Record):
    """One name of the language: ``signature`` as a user writes it, the ``classes`` where it
    applies, its ``use`` (objective, budget, expression, table, scalar, noise) and ``meaning``."""

    name: str
    signature: str
    classes: tuple[str, ...]
    use: str
    meaning: str


FUNCTIONS: dict[str, Function] = {
    f.name: f
    for f in (
        Function(
            "max_confidence",
            "minimize max_confidence(PUBLIC..., OUTCOME -> PRIVATE...)",
            (REPORT,),
            "objective",
            "the adversary's largest posterior confidence in a private value (Chen et al. Def. 3)",
        ),
        Function(
            "min_uncertainty",
            "maximize min_uncertainty(PUBLIC..., OUTCOME -> PRIVATE...)",
            (REPORT,),
            "objective",
            "-log of max_confidence (Chen et al. App. C)",
        ),
        Function(
            "tv",
            "tv(X, Y)",
            (MECHANISM, SHAPED),
            "expression",
            "total variation between data X and its release Y: 1 - sum_x P(X = x, Y = x) (Ding et al. App. B)",
        ),
        Function(
            "ldp",
            "ldp(S -> Y) <= eps",
            (MECHANISM, SHAPED),
            "budget",
            "local DP: P(y | s) <= e^eps P(y | s') for all s, s', y (Ding et al. eq. 1)",
        ),
        Function(
            "loglift",
            "loglift(S -> Y) <= eps",
            (MECHANISM, SHAPED),
            "budget",
            "|log P(y | s) / P(y)| <= eps for all s, y",
        ),
        Function(
            "dp",
            "dp(X -> Y[, adjacent: |x - x'| <= 1]) <= eps or <= (eps, delta)",
            (MECHANISM, SHAPED, PLACEMENT),
            "budget",
            "(eps, delta)-differential privacy of the release Y of X",
        ),
        Function(
            "krcc",
            "minimize krcc(X, Y)",
            (OBFUSCATION,),
            "objective",
            "Kendall rank distance Q(P_X, W) between data X and its release Y (Shariatnasab et al. Theorem 1)",
        ),
        Function(
            "mutual_info",
            "mutual_info(Y; F) <= eps",
            (OBFUSCATION,),
            "budget",
            "the leakage I(Y; F) in bits of the release Y about the fingerprint F",
        ),
        Function(
            "P",
            "P(T | G)",
            _FINITE,
            "expression",
            "a distribution: a known table, or one induced by the design",
        ),
        Function(
            "E",
            "E[f] or E[f | G]",
            (MECHANISM, SHAPED, PLACEMENT),
            "expression",
            "an expectation of a table of numbers under the model (noise placement: of a squared error)",
        ),
        Function(
            "sum",
            "sum(x, y: body)",
            (MECHANISM, SHAPED, PLACEMENT),
            "expression",
            "body summed over the named variables (noise placement: sum((...)^2) over a vector's entries)",
        ),
        Function("abs", "abs(e) or |e|", CLASSES, "scalar", "absolute value, elementwise"),
        Function("exp", "exp(e)", CLASSES, "scalar", "exponential, elementwise"),
        Function("log", "log(e)", CLASSES, "scalar", "natural logarithm, elementwise"),
        Function("sqrt", "sqrt(e)", CLASSES, "scalar", "square root, elementwise"),
        Function("uniform", "known P(T | G) = uniform", _FINITE, "table", "uniform over the targets in each condition"),
        Function(
            "bsc",
            "known P(Y | X) = bsc(p)",
            _FINITE,
            "table",
            "binary symmetric channel with crossover probability p",
        ),
        Function("gaussian", "noise NAME : gaussian[k]", (PLACEMENT,), "noise", "a vector of k Gaussian noise entries"),
    )
}


def applies(name: str, here: str) -> bool:
    """Whether the function ``name`` applies in a spec of class ``here``."""
    f = FUNCTIONS.get(name)
    return f is not None and here in f.classes


def _class_list(classes: tuple[str, ...]) -> str:
    """``mechanism (sanitization) and shaped-noise specs``: the classes' spec names, joined."""
    if set(classes) == set(CLASSES):
        return "every spec"
    short = {
        REPORT: "transparency-report",
        MECHANISM: "mechanism (sanitization)",
        SHAPED: "shaped-noise",
        PLACEMENT: "noise-placement",
        OBFUSCATION: "rank-preserving obfuscation",
    }
    names = [short[c] for c in CLASSES if c in classes]
    joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"{joined} specs"


def where_applies(name: str) -> str | None:
    """``ldp applies to mechanism (sanitization) and shaped-noise specs: ldp(S -> Y) <= eps``, or
    None for a name the language does not know."""
    f = FUNCTIONS.get(name)
    if f is None:
        return None
    return f"{f.name} applies to {_class_list(f.classes)}: {f.signature}"


def suggest(name: str, here: str | None = None, extra=()) -> str | None:
    """A did-you-mean over every function name (and ``extra`` names, e.g. a spec's const tables),
    preferring the names that apply in class ``here``; a close name of another class says where
    it applies. None when no name is close."""
    own = [n for n in FUNCTIONS if here is None or here in FUNCTIONS[n].classes] + [n for n in extra]
    import difflib  # an error's hint only: not at start-up (issue 23, goal 1)

    close = difflib.get_close_matches(name, own, n=1)
    if close:
        return f"did you mean '{close[0]}'?"
    close = difflib.get_close_matches(name, list(FUNCTIONS), n=1)
    if close:
        return f"did you mean '{close[0]}'? ({where_applies(close[0])})"
    return None


def misplaced(name: str, here: str, span, instead: str | None = None) -> UnsupportedError:
    """The error for a known function used in a class where it does not apply: where it applies,
    and what a spec of this class optimizes (``instead``: that advice in the spec's own words)."""
    f = FUNCTIONS[name]
    return UnsupportedError(
        f"{name} applies to {_class_list(f.classes)}, not to {CLASS_NOUN[here]}",
        span,
        instead or f"{CLASS_NOUN[here]} {CLASS_OBJECTIVE[here]}",
    )


def unknown(name: str, here: str, span, extra=(), fallback: str | None = None) -> SpecError:
    """The error for a call of ``name`` in class ``here`` that no builder reads: misplaced when the
    language knows it elsewhere, else ``unknown function`` with a did-you-mean (or ``fallback``)."""
    if name in FUNCTIONS:
        f = FUNCTIONS[name]
        if here not in f.classes:
            return misplaced(name, here, span)
        return SpecError(f"{name} is not written this way here", span, f"write {f.signature}")
    listed = ", ".join(names_for(here, ("expression", "budget", "scalar")))
    hint = suggest(name, here, extra) or fallback or f"the functions of {CLASS_NOUN[here]}'s expressions: {listed}"
    return SpecError(f"unknown function '{name}'", span, hint)


def names_for(here: str, uses=None) -> list[str]:
    """The function names that apply in class ``here`` (of the kinds ``uses``, or all), in the
    table's order."""
    return [n for n, f in FUNCTIONS.items() if here in f.classes and (uses is None or f.use in uses)]
