"""One LP solve of a lowered mechanism, and a diagnosis when the program is infeasible."""

from __future__ import annotations

from ..backends.base import Backend, LPSolution
from ..compile.mechanism import MechanismLP
from ..errors import InfeasibleError, SolverError

LP_TOL = 1e-9


def solve_lp(mlp: MechanismLP, backend: Backend, time_limit: float | None = None) -> LPSolution:
    """Solve ``mlp`` on ``backend``. Raises ``InfeasibleError`` naming the blocking constraint
    families, or ``SolverError`` for any status other than optimal."""
    sol = backend.unsupported(mlp.lp) or backend.solve(mlp.lp, time_limit=time_limit, tol=LP_TOL)
    if sol.ok:
        return sol
    if sol.status == "infeasible":
        raise InfeasibleError("no table satisfies the constraints", diagnose(mlp, backend, time_limit))
    raise SolverError(
        f"{sol.solver}: the {'QP' if mlp.lp.is_qp else 'LP'} ended with termination '{sol.termination}', status '{sol.status}'"
        + (f" ({sol.message})" if sol.message else "")
        + "; no optimum is reported"
    )


def diagnose(mlp: MechanismLP, backend: Backend, time_limit: float | None = None) -> list[str]:
    """Which constraint families block feasibility. A family that is infeasible together with
    the design's own rows alone is named first; otherwise each family whose removal restores
    feasibility. Each test is one LP without an objective."""

    def feasible(families) -> bool | None:
        sol = backend.solve(mlp.restricted(families), time_limit=time_limit, tol=LP_TOL)
        return True if sol.ok else (False if sol.status == "infeasible" else None)

    fams = range(1, len(mlp.families))
    design = mlp.families[0]
    alone = [k for k in fams if feasible([0, k]) is False]
    if alone:
        return [f"{mlp.families[k]} cannot hold for any table with {design.split(': ', 1)[-1]}" for k in alone]
    blocking = [k for k in fams if feasible([j for j in range(len(mlp.families)) if j != k]) is True]
    if blocking:
        names = "; ".join(mlp.families[k] for k in blocking)
        return [f"the constraints cannot hold together; dropping any one of these makes them feasible: {names}"]
    return ["the constraints cannot hold together (no single constraint is to blame; several conflict)"]
