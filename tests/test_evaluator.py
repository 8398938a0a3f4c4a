"""The one evaluator (issue 20, item 1): one variable registry, one arithmetic, one atom per name.

* every function of builder/functions.py's table (and ``@``, ``|.|``) has an atom with a
  curvature and, where it applies, a sign;
* the same expression gives bit-identical tables in every problem class where it is legal
  (numbers and params everywhere; a known table divided by a param, squared, raised to a power
  in every finite class; the design scaled and divided in every class with decision columns);
* the same mistake gives the same message in every class;
* the builders allocate decision columns through the registry and reach into no private of
  the ``Builder``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from privopt.builder import functions
from privopt.builder.atoms import ATOMS, CURVATURES, SIGNS
from privopt.builder.build import Builder, ParamContext, ReportContext
from privopt.builder.evaluate import Evaluator
from privopt.builder.mechanism import MechanismBuilder
from privopt.builder.noise import NoiseBuilder
from privopt.errors import SpecError
from privopt.language.parser import parse
from privopt.model.registry import Registry

BUILDER = Path(__file__).resolve().parent.parent / "privopt" / "builder"

# one table of numbers, a known table in each finite class: 0.3 / 0.7 and 0.1 / 0.7 are cells
# where a true division and a product with the reciprocal differ in the last bit
CELLS = "{ a: 0.1, b: 0.3, c: 0.6 }"

REPORT = f"""
var g : private {{a, b, c}}
var d : outcome {{no, yes}}
known P(g) = {CELLS}
known R = P(d = yes | g) = {{ a: 0.2, b: 0.5, c: 0.9 }}
design Dt = P(d | g)
param c = 0.7
param k = 0.25
subject to |Dt - R| <= 0.5
minimize max_confidence(d -> g)
"""

MECHANISM = f"""
var g : data {{a, b, c}}
var Y : release over g
known P(g) = {CELLS}
design M = P(Y | g)
param c = 0.7
param k = 0.25
minimize tv(g, Y)
"""

NOISE = """
const A = matrix {
    1  1  0
    0  1  1
}
var x : private real[3] in [0, 1]
noise eta : gaussian[3]
param c = 0.7
param k = 0.25
let O = A @ (x + eta)
subject to dp(x -> O) <= (1.0, 1e-5)
minimize E[sum((O - A @ x)^2)]
"""


def expr(text: str):
    """The syntax tree of one expression."""
    return parse(f"param t = {text}\n").statements[0].expr


def report() -> ReportContext:
    b = Builder(parse(REPORT))
    b.build()
    return ReportContext(b)


def mechanism() -> MechanismBuilder:
    b = Builder(parse(MECHANISM))
    b.build()
    return MechanismBuilder(b)


def noise() -> NoiseBuilder:
    nb = NoiseBuilder(Builder(parse(NOISE)))
    nb.build(None)
    return nb


def params() -> ParamContext:
    b = Builder(parse("param c = 0.7\nparam k = 0.25\n"))
    b.read_params([s for s in b.spec.statements])
    return ParamContext(b)


def value(ctx, text: str):
    return Evaluator(ctx).value(expr(text))


# ---------------------------------------------------------------------- atoms


def test_every_function_has_an_atom_with_a_curvature():
    """classify may read an atom's curvature: every name of the table has one."""
    missing = [name for name in functions.FUNCTIONS if name not in ATOMS]
    assert not missing, f"functions without an atom: {missing}"
    for name, atom in ATOMS.items():
        assert atom.name == name
        assert atom.curvature in CURVATURES, (name, atom.curvature)
        assert atom.sign in SIGNS, (name, atom.sign)
    assert ATOMS["@"].curvature == "affine" and ATOMS["abs"].curvature == "convex"
    assert ATOMS["mutual_info"].curvature == "convex" and ATOMS["krcc"].curvature == "nonconvex"


def test_one_module_per_atom():
    modules = {p.stem for p in (BUILDER / "atoms").glob("*.py")} - {"__init__", "base"}
    owners = {type(a).__module__.rsplit(".", 1)[-1] for a in ATOMS.values()}
    assert owners == modules
    assert len(owners) == len(ATOMS)


# ---------------------------------------------------------------------- the same bits in every class


NUMBERS = [
    "(c / k) ^ 0.5 + exp(c) / 3",
    "-c * k - 1 / c",
    "(1 - c) ^ 2",
    "c ^ k / (k - c)",
    "sqrt(c) * log(k) + |k - c|",
]


@pytest.mark.parametrize("text", NUMBERS)
def test_numbers_have_the_same_bits_in_every_class(text):
    got = [value(ctx, text) for ctx in (params(), report(), mechanism(), noise())]
    for v in got:
        assert v.axes == () and v.is_const
    assert len({v.b.tobytes() for v in got}) == 1, [float(v.b[0]) for v in got]


@pytest.mark.parametrize(
    "report_text, mechanism_text",
    [
        ("P(g) / c", "P(g) / c"),
        ("(P(g) - k) ^ 2", "(P(g) - k) ^ 2"),
        ("P(g) ^ c / (c + k)", "P(g) ^ c / (c + k)"),
        ("exp(P(g)) * c - P(g) / 0.7", "exp(P(g)) * c - P(g) / 0.7"),
    ],
)
def test_a_known_table_has_the_same_bits_in_every_finite_class(report_text, mechanism_text):
    a, b = value(report(), report_text), value(mechanism(), mechanism_text)
    assert a.axes == ("g",) and b.axes == ("g",)
    assert a.b.tobytes() == b.b.tobytes()


def test_division_is_a_true_division():
    """``a / c`` divides every cell (never ``a * (1 / c)``): 0.1 / 0.7 and 0.3 / 0.7 differ."""
    cells = np.array([0.1, 0.3, 0.6])
    assert not np.array_equal(cells / 0.7, cells * (1 / 0.7))  # the case the rule is about
    for ctx in (report(), mechanism()):
        assert np.array_equal(value(ctx, "P(g) / c").b, cells / 0.7)


def test_the_design_divided_by_a_param_has_the_same_coefficients_in_every_class():
    """``Dt / c`` (report), ``M / c`` (mechanism) and ``x / c`` (noise placement): every
    coefficient of a decision column is 1 / c, the same bits."""
    got = [value(report(), "Dt / c"), value(mechanism(), "M / c"), value(noise(), "x / c")]
    for v in got:
        assert not v.is_const
        assert np.array_equal(np.unique(v.matrix().data), [1 / 0.7])


def test_a_power_keeps_a_scalar_unexpanded():
    """A power is taken on its operands as laid out: a table to a scalar power gives the bits
    of numpy's power with a 0-d exponent, in every class."""
    cells = np.array([0.1, 0.3, 0.6])
    want = np.power(cells, np.asarray(0.7))
    for ctx in (report(), mechanism()):
        assert value(ctx, "P(g) ^ c").b.tobytes() == want.tobytes()


# ---------------------------------------------------------------------- one message per mistake


@pytest.mark.parametrize(
    "texts, message",
    [
        (("Dt * Dt", "M * M"), "a product of two design terms is not linear, and not convex in general"),
        (("Dt ^ 2", "M ^ 2"), "a power of the design is not linear"),
        (("1 / Dt", "1 / M"), "dividing by the design is not linear"),
        (("exp(Dt)", "exp(M)"), "exp of the design is not linear"),
        (("c / (P(g) - P(g))", "c / (P(g) - P(g))"), "division by zero (a divisor cell is 0)"),
    ],
)
def test_the_same_mistake_has_the_same_message_in_every_finite_class(texts, message):
    for ctx, text in zip((report(), mechanism()), texts):
        with pytest.raises(SpecError) as err:
            value(ctx, text)
        assert err.value.message == message


@pytest.mark.parametrize("ctx", [params, report, mechanism, noise], ids=["param", "report", "mechanism", "noise"])
def test_division_by_zero_is_located_at_the_divisor_in_every_class(ctx):
    with pytest.raises(SpecError) as err:
        value(ctx(), "k / (c - c)")
    assert err.value.message == "division by zero"
    assert err.value.span.text() == "c - c"
    assert err.value.hint == "divide by a number that is not 0, or multiply the other side instead"


# ---------------------------------------------------------------------- the registry


def test_registry_blocks_are_consecutive_columns():
    r = Registry()
    t = r.add("M", "table", (2, 3), ("S", "Y"))
    v = r.add("x", "vector", (4,), ("#",))
    s = r.add("eta", "covariance", (2,), ("#",))
    assert (t.offset, t.size, v.offset, v.size, s.offset, s.stop) == (0, 6, 6, 4, 10, 12)
    assert r.n == 12 and "x" in r and r["x"] is v
    x = r.variable("x")
    assert x.n == 12 and x.axes == ("#",)
    assert np.array_equal(r.coefficients(x, "x"), np.eye(4))
    assert not r.coefficients(x, "M").any()
    with pytest.raises(ValueError):
        r.add("x", "vector", (1,))
    with pytest.raises(ValueError):
        r.add("w", "matrix", (1,))


def test_the_builders_allocate_through_the_registry():
    """Every class's decision columns are the registry's blocks."""
    assert [(b.name, b.kind, b.size) for b in report().b.registry.blocks.values()] == [("Dt", "table", 6)]
    assert [(b.name, b.kind, b.size) for b in mechanism().b.registry.blocks.values()] == [("M", "table", 9)]
    assert [(b.name, b.kind, b.size) for b in noise().b.registry.blocks.values()] == [
        ("x", "vector", 3),
        ("eta", "variance", 3),
    ]
    for path in BUILDER.glob("*.py"):
        text = path.read_text()
        assert "LinTable.variable(" not in text, f"{path.name} allocates columns outside the registry"


def test_no_sub_builder_reaches_into_builder_privates():
    for name in ("mechanism.py", "noise.py", "obfuscation.py", "params.py", "quadratic.py"):
        text = (BUILDER / name).read_text()
        assert not re.findall(r"\bb\._[a-z]", text), name
