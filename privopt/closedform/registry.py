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
"""

from __future__ import annotations

from .atr import THEOREM_1
from .obfuscation import COROLLARY_2
from .rr import RANDOMIZED_RESPONSE
from .sanitization import LEMMA_1, PROP_1, PROP_2

RECOGNIZERS = (THEOREM_1, RANDOMIZED_RESPONSE, LEMMA_1, PROP_1, PROP_2, COROLLARY_2)


def recognize(problem, method: str):
    """(recognizer, match) for the first recognizer of ``method`` that accepts ``problem``;
    (None, the first in-scope recognizer's falsy match) when none does; (None, None) when no
    recognizer of ``method`` is about this program's structure."""
    first = None
    for r in RECOGNIZERS:
        if r.method != method or not r.in_scope(problem):
            continue
        m = r.accepts(problem)
        if m:
            return r, m
        if first is None:  # a declining Match is falsy: keep the first one
            first = m
    return None, first


def by_name(name: str):
    """The recognizer called ``name`` (``KeyError`` otherwise)."""
    return {r.name: r for r in RECOGNIZERS}[name]
