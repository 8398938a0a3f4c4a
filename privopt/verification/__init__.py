"""Verification (issue 20, item 5): one verifier per set and per objective atom, and a
program's verification as a fold over its constraints, then its objective, then its
certificate. Everything is recomputed from the returned point (a table, noise variances, a
channel) and the problem's data alone, with the tolerances privopt verifies at.

* ``tolerances``: every tolerance, with why (``blocks.common`` re-exports them);
* ``checks``: ``Check`` (name, passed, margin, detail), ``Verdict`` and ``fold``;
* ``sets``: one verifier per set of ``privopt.core.sets``;
* ``atoms``: one verifier per objective atom (max confidence, tv, distortion, linear and
  quadratic objectives, the trace loss, KRCC's Q);
* ``certificate``: a certificate's numbers re-checked (weak duality, Lemma 5's floor);
* ``problems``: the fold for each problem class's point (``verify_transparency``,
  ``verify_mechanism``, ``verify_noise``, ``verify_channel``).

No solver is imported here, at module level or in a function (``privopt verify RESULT.json``
runs it where no solver is installed): a certificate that needs a solve is produced by its
route and only re-checked here.
"""
