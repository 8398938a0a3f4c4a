"""``privopt verify RESULT.json``: a result re-checked later, elsewhere, with no solver (issue 22).

A result written by ``solve --json`` or ``solve --out`` records what a re-check needs (format
``results.RESULT_FORMAT``): the spec's path, SHA-256 and text, the folder it was solved in,
each data file's SHA-256, every param's value, the released tables or variances exactly (the
shortest round-trip ``repr`` of each float) and the certificate of its route
(``core.certificate``). From these alone:

* ``source``: the result read (an unknown format or an unreadable file: exit 2);
  the spec found (``--spec``, else the recorded path from the recorded folder, then from the
  result's folder, else the recorded text), its SHA-256 and each data file's compared with the
  recorded ones (a difference: exit 2, naming the file); the problem rebuilt by the language
  and the builder at the recorded params (neither imports a solver);
* ``points``: the released point read back into the block kind's form (a design vector, a
  (G, m, A) transparency table with its beta per group, noise (co)variances, a 2 x 2 channel);
* ``proofs``: the certificate re-proven (LP/QP row multipliers: ``methods.lp.lagrangian_bound``
  recomputed, exactly in rationals up to ``EXACT_MAX_CELLS``; a conic dual point: its
  ``ConicProgram.dual_bound``; a theorem: its conditions re-checked and its answer recomputed;
  the global method: re-run, it is numpy only; LFP brackets: their upper ends against the
  recomputed confidences, their lower ends re-derived from the closed-form bound or their Farkas
  rays; Prop. 2: its transport LP's potentials);
* ``check``: the fold, every constraint, budget and the objective by the same verifiers a solve
  runs (``verification.problems`` via the block kinds' ``verify``), then the certificate, into a
  ``Report`` (exit 0: every check holds; 1: one fails, named, with its margin).

A composite's result (``composite``) is re-checked block by block (each block's own result as
above), then its composition, objective, design choice and the split's lower bound.

Nothing here imports a solver package (tests/test_verify_nosolver.py runs it where none can be
imported).
"""

from __future__ import annotations

from .check import Report
from .composite import verify

__all__ = ["Report", "verify"]
