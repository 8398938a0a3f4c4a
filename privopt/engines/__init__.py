"""Engines: where a solve runs. ``local`` is this process (``privopt.pipeline``); ``dask``
(``privopt.engines.dask``) solves a transparency-report spec's groups on a Dask cluster.
An engine's module is imported only when it is asked for, so ``import privopt`` never imports
dask."""

from __future__ import annotations

from ..errors import UsageError, did_you_mean

ENGINES = ("local", "dask")


def solve_with(engine: str, spec, **kw):
    """Solve ``spec`` (a path) on ``engine`` (not ``local``: that is ``pipeline.solve``)."""
    if engine == "dask":
        from .dask import solve

        return solve(spec, **kw)
    raise UsageError(f"unknown engine '{engine}'{did_you_mean(engine, ENGINES)}; choose one of: {', '.join(ENGINES)}")
