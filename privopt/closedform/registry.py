"""Every closed form privopt knows, as recognizers (``core.plan.Recognizer``), in the order they
are tried: the first that accepts a problem answers it.

* ``theorem-1``: Chen et al. Theorem 1 (binary transparency reports);
* ``lemma-1``, ``prop-1``: Ding et al. Lemma 1 (eq. 7) and Prop. 1 (eq. 11), method "closed-form";
* ``prop-2``: Ding et al. Prop. 2 (eq. 12), method "reduced-lp" (a transport LP remains);
* ``randomized-response``: Kairouz, Oh & Viswanath, k-ary randomized response (tv under a
  uniform prior and one pure budget; closedform/rr.py);
* ``corollary-2``: Shariatnasab et al. Corollary 2 (rank-preserving obfuscation).

A recognizer is "in scope" for a program whose structure its theorem is about (``in_scope``:
the objective's atom or curvature and what the decision variables are, never the problem's
kind); ``recognize`` reports the reason of the first one in scope, which is what ``privopt
explain`` says when a method does not apply.

The registry names each recognizer by where it lives (``"module:attr"``) with the objective's
words it can be about (its atom or curvature, ``Entry.about``), and imports a recognizer the
first time a problem with those words is asked about: a solve of a transparency report never
imports the obfuscation or sanitization theorems (issue 23, goal 1). The order and the
recognizers are the same as if every one were imported (``RECOGNIZERS`` imports them all).
"""

from __future__ import annotations

import importlib

from ..records import Record


class Entry(Record):
    """A registered recognizer: its ``name`` and ``method``, ``where`` it is defined
    (``"module:attr"``), and the objective's words it can be about: its atom (``atoms``) or its
    curvature (``curvatures``; None: any), read without importing it. A recognizer's own
    ``in_scope`` decides within those."""

    name: str
    method: str
    where: str
    atoms: frozenset[str] | None = None
    curvatures: frozenset[str] | None = None

    def about(self, problem) -> bool:
        """Whether the objective has the words this recognizer can be about (the recognizer
        itself is not imported)."""
        obj = problem.objective
        return (self.atoms is None or getattr(obj, "atom", None) in self.atoms) and (
            self.curvatures is None or getattr(obj, "curvature", None) in self.curvatures
        )

    def load(self):
        """The recognizer object (its module imported on first use)."""
        module, attr = self.where.split(":")
        return getattr(importlib.import_module(module), attr)


_LINEAR = frozenset({"affine", "convex"})  # Ding et al.'s LPs and QPs over a design table

ENTRIES = (
    Entry("theorem-1", "closed-form", "privopt.closedform.atr:THEOREM_1", curvatures=frozenset({"ratio"})),
    Entry("randomized-response", "closed-form", "privopt.closedform.rr:RANDOMIZED_RESPONSE", atoms=frozenset({"tv"})),
    Entry("lemma-1", "closed-form", "privopt.closedform.sanitization:LEMMA_1", curvatures=_LINEAR),
    Entry("prop-1", "closed-form", "privopt.closedform.sanitization:PROP_1", curvatures=_LINEAR),
    Entry("prop-2", "reduced-lp", "privopt.closedform.sanitization:PROP_2", curvatures=_LINEAR),
    Entry("corollary-2", "closed-form", "privopt.closedform.obfuscation:COROLLARY_2", atoms=frozenset({"krcc"})),
)


def __getattr__(name: str):
    """``RECOGNIZERS``: every recognizer object, in the order they are tried (all imported)."""
    if name == "RECOGNIZERS":
        return tuple(e.load() for e in ENTRIES)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def recognize(problem, method: str):
    """(recognizer, match) for the first recognizer of ``method`` that accepts ``problem``;
    (None, the first in-scope recognizer's falsy match) when none does; (None, None) when no
    recognizer of ``method`` is about this program's structure."""
    first = None
    for e in ENTRIES:
        if e.method != method or not e.about(problem):
            continue
        r = e.load()
        if not r.in_scope(problem):
            continue
        m = r.accepts(problem)
        if m:
            return r, m
        if first is None:  # a declining Match is falsy: keep the first one
            first = m
    return None, first


def by_name(name: str):
    """The recognizer called ``name`` (``KeyError`` otherwise)."""
    return {e.name: e for e in ENTRIES}[name].load()
