"""The public entry points: load a spec, solve it, explain it.

This is the top layer: it joins the language (text -> syntax tree), the builder (syntax tree ->
model) and the pipeline (model -> verified Result). ``privopt.Problem`` is the model with the
pipeline's entry points as methods; the model layer itself knows nothing of solving.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Mapping
from pathlib import Path

from . import composite, pipeline
from .builder.build import build
from .core.plan import Plan
from .errors import UsageError
from .language.ast import SpecFile
from .language.parser import parse, parse_file
from .model import problem as model
from .results import Result


class Problem(model.Problem):
    """A loaded spec: the validated model (``privopt.model.problem.Problem``) plus ``solve`` and
    ``explain`` (a frozen dataclass as its base is: ``privopt.records.Identity``)."""

    def solve(
        self,
        method: str = "auto",
        backend: str = "auto",
        time_limit: float | None = None,
        solver: str | None = None,
        workers: int | None = None,
        progress=None,
    ) -> Result:
        """Solve by ``method`` (auto | closed-form | lfp | reduced-lp | lp | qp | conic | global) on a
        ``backend`` (auto | highs | scipy | cvxpy | pyomo; auto is highs for LPs and cvxpy with
        Clarabel for QPs and conic programs; ``solver`` picks cvxpy's inner solver). ``workers``:
        processes the LFP method uses (None: the machine's cores; 1: none beyond this one);
        ``progress(done, total)``: called as the LFP's QID groups finish. The Result records
        this spec (``Result.spec``), the package versions (``Result.versions``) and what its text
        shows from the spec (``Result.facts``)."""
        return pipeline.solve(
            self,
            method=method,
            backend=backend,
            time_limit=time_limit,
            solver=solver,
            workers=workers,
            progress=progress,
        )

    def explain(self) -> pipeline.Explanation:
        """The classification (problem class, applicable methods and why, size) and, as
        ``.plan``, the plan an automatic solve runs (``core.plan.Plan``: its steps and the
        canonical program's census; ``.plan.to_dict()`` is ``privopt explain --json``)."""
        return pipeline.explain(self)

    def plan(self, method: str = "auto", backend: str = "auto", solver: str | None = None) -> Plan:
        """The plan ``solve(method, backend, solver=solver)`` runs: one recognizer, or one chain
        of reductions ending in a method and a backend, with the canonical program's census."""
        return pipeline.plan(self, method, backend, solver)


def load(
    path: str | Path, params: dict[str, str | float] | None = None, allow_paths: bool = False
) -> Problem | composite.Composite:
    """Read, parse and check a spec file (a composite spec, one with ``use`` or ``choose``
    lines, gives a ``privopt.composite.Composite``, which solves likewise). ``params`` overrides ``param`` values (as ``--set``);
    an unknown name, a value that is not a number or one outside the param's domain is a
    ``UsageError`` naming it as ``params={'delta': 1.5}``, with a did-you-mean for a name."""
    t0 = time.perf_counter()
    return _checked(parse_file(path), params, allow_paths, t0)


def loads(
    text: str, params: dict[str, str | float] | None = None, allow_paths: bool = False, path: str | Path | None = None
) -> Problem | composite.Composite:
    """Parse and check spec text; relative data paths resolve against ``path``'s folder (or the cwd)."""
    t0 = time.perf_counter()
    return _checked(parse(text, path), params, allow_paths, t0)


def _checked(spec: SpecFile, params, allow_paths: bool, t0: float) -> Problem | composite.Composite:
    """The spec's ``Problem``, carrying the SHA-256 of its text as read (UTF-8, without a
    byte-order mark: ``sha256sum FILE`` for a file without one) and the parse time; or, for a
    composite, its ``Composite``, whose blocks load through this same function."""
    if params is not None and not isinstance(params, Mapping):
        raise UsageError(
            f"params= is a dict from param names to values, like {{'delta': 0.9}}, not {type(params).__name__}"
        )
    if composite.is_composite(spec):
        return composite.build(
            spec, params, allow_paths, lambda block, values: _checked(block, values, allow_paths, time.perf_counter())
        )
    composite.refuse_attrs(spec)
    built = build(spec, params, allow_paths)
    digest = hashlib.sha256(spec.source.text.encode("utf-8")).hexdigest()
    fields = {f.name: getattr(built, f.name) for f in dataclasses.fields(built)}
    extra = {"source_sha256": digest, "source_text": spec.source.text, "parse_s": time.perf_counter() - t0}
    return Problem(**fields | extra)


def solve(
    spec: str | Path | model.Problem,
    method: str = "auto",
    backend: str = "auto",
    time_limit: float | None = None,
    solver: str | None = None,
    engine: str = "local",
    scheduler=None,
    workers: int | None = None,
    progress=None,
    **load_kw,
) -> Result | composite.CompositeResult:
    """Load (if given a path) and solve a spec; returns a ``Result``. ``load_kw`` are ``load``'s
    ``params`` and ``allow_paths``. ``engine="dask"`` solves a transparency-report spec's groups
    with Dask (``privopt.engines.dask.solve``: ``workers=N`` threads in this process, or
    ``scheduler=ADDRESS``); ``spec`` is then a path. Locally, ``workers`` are the processes the
    LFP method uses (None: the machine's cores; 1: this process) and ``progress(done, total)``
    is called as its QID groups finish (``Problem.solve``). A composite spec gives a
    ``privopt.composite.CompositeResult`` (docs/blocks.md)."""
    if engine != "local":  # privopt.engines (dask) is imported only when asked for
        from .engines import solve_with

        return solve_with(
            engine,
            spec,
            method=method,
            backend=backend,
            time_limit=time_limit,
            solver=solver,
            scheduler=scheduler,
            **({"workers": workers} if workers is not None else {}),
            **load_kw,
        )
    problem = load(spec, **load_kw) if isinstance(spec, str | Path) else spec
    if not isinstance(problem, model.Problem):  # a composite (privopt.composite.Composite) solves itself
        return problem.solve(method=method, backend=backend, time_limit=time_limit, solver=solver, workers=workers)
    return pipeline.solve(
        problem,
        method=method,
        backend=backend,
        time_limit=time_limit,
        solver=solver,
        workers=workers,
        progress=progress,
    )
