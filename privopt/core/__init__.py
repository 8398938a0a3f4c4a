"""The one program core (issue 20): what every problem class lowers to and how it is planned.

* ``canonical``: the canonical program ``(c, Q, A, bounds, cones, integrality)`` every LP, QP,
  MILP and conic route lowers to, and its census (what ``privopt explain --json`` prints);
* ``plan``: the steps of a solve (recognizers, reductions, methods, backends) and the
  protocols a closed form (``Recognizer``) and a rewrite (``Reduction``, composed in a
  ``Chain``) implement;
* ``certificate``: the one shape in which every route records why its answer is optimal;
* ``sets``: the sets a constraint ``f(x) in S`` names (canonical: zero, nonnegative, SOC, PSD;
  privacy and table sets with their bridges to canonical ones), verified by
  ``privopt.verification``.

Nothing here imports a solver, pandas or scipy: a route imports what it needs when it runs.
"""
