"""The result of a solve: what the solver says, what privopt checked, and the tables by label.

``termination`` says why the method stopped; ``status`` says what the returned point is. A
point is reported "optimal" only if privopt's own recomputation from the returned table (the
``verification``) passes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd


GROUP_MEASURES = ("objective", "beta", "beta_min", "c_star", "case")  # the rest of a group row is its key


class LazyTables(Mapping[str, pd.DataFrame]):
    """Released tables by name, each built into a DataFrame on first access (a table of
    millions of cells costs more to label than to solve, and many callers never look)."""

    def __init__(self, factories: dict[str, Callable[[], pd.DataFrame]]):
        self._factories = dict(factories)
        self._built: dict[str, pd.DataFrame] = {}

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in self._built:
            self._built[name] = self._factories[name]()
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)


@dataclass
class Result:
    status: str  # optimal | infeasible | error
    termination: str
    objective: float | None
    beta: float | None
    method: str
    backend: str | None
    problem_class: str
    objective_kind: str
    groups: pd.DataFrame  # one row per QID group: public labels, objective, beta, beta_min, c_star, case
    tables: Mapping[str, pd.DataFrame]
    verification: dict[str, Any]
    timings: dict[str, float]
    stats: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    measures: dict[str, float] = field(default_factory=dict)  # mechanism problems: privacy and utility of the table

    @property
    def infeasible(self) -> bool:
        """True when no table satisfies the spec (``status == "infeasible"``)."""
        return self.status == "infeasible"

    @classmethod
    def of_infeasible(cls, method, backend, analysis, objective_kind, timings, reasons) -> Result:
        """No table satisfies the spec: status "infeasible", with one sentence per cause."""
        return cls(
            status="infeasible", termination="infeasible", objective=None, beta=None, method=method,
            backend=backend, problem_class=analysis.problem_class, objective_kind=objective_kind,
            groups=pd.DataFrame(), tables={}, verification={"passed": False}, timings=timings,
            reasons=list(reasons),
        )

    def table(self, name: str) -> pd.DataFrame:
        """A released table as a DataFrame: one column per variable (labels) and ``value``."""
        try:
            return self.tables[name]
        except KeyError:
            raise KeyError(f"no table '{name}'; tables: {', '.join(self.tables)}") from None

    def group_records(self) -> list[dict[str, Any]]:
        """Per-group results as plain dicts: {key: {public var: label}, objective, beta, ...}."""
        frame = self.groups
        if frame.empty:
            return []
        measures = [c for c in GROUP_MEASURES if c in frame.columns]
        keys = [c for c in frame.columns if c not in measures]
        key_rows = frame[keys].astype(str).to_dict(orient="records") if keys else [{}] * len(frame)
        value_rows = frame[measures].to_dict(orient="records")
        out = []
        for k, v in zip(key_rows, value_rows):
            row = {"key": k}
            for name, x in v.items():
                row[name] = x if name == "case" else _num(x)
            out.append(row)
        return out

    def to_dict(self, tables: bool = True, groups: bool = True) -> dict[str, Any]:
        """Plain Python objects (for small results; ``to_json`` is the fast path for large ones)."""
        out: dict[str, Any] = {
            "status": self.status,
            "termination": self.termination,
            "objective": _num(self.objective),
            "objective_kind": self.objective_kind,
            "beta": _num(self.beta),
            "method": self.method,
            "backend": self.backend,
            "problem_class": self.problem_class,
            "timings": {k: round(v, 6) for k, v in self.timings.items()},
            "groups": self.group_records() if groups else None,
            "verification": self.verification,
            "stats": self.stats,
        }
        if self.measures:
            out["measures"] = {k: _num(v) for k, v in self.measures.items()}
        if self.reasons:
            out["reasons"] = self.reasons
        if tables:
            out["tables"] = {
                name: [{k: (str(v) if k != "value" else float(v)) for k, v in row.items()} for row in df.to_dict(orient="records")]
                for name, df in self.tables.items()
            }
        return out

    def to_json(self, tables: bool = True, indent: int | None = 2) -> str:
        """The result as JSON text. Groups and tables go through pandas' C writer (15
        significant digits), so a result of millions of cells serializes at C speed; the rest
        is ``json.dumps``. ``--out`` writes the tables as CSV with full precision."""
        body = self.to_dict(tables=False, groups=False)
        del body["groups"]
        text = json.dumps(body, indent=indent, default=_json_default, allow_nan=False)
        parts = [f'"groups": {_groups_json(self.groups)}']
        if tables:
            parts.append(
                '"tables": {'
                + ", ".join(f"{json.dumps(name)}: {_frame_json(df)}" for name, df in self.tables.items())
                + "}"
            )
        sep = ",\n" + " " * (indent or 0) if indent else ", "
        head, _, tail = text.rpartition("}")
        return head.rstrip() + sep + sep.join(parts) + ("\n" if indent else "") + "}" + tail


def _frame_json(df: pd.DataFrame) -> str:
    return df.to_json(orient="records", double_precision=15)


def _groups_json(frame: pd.DataFrame) -> str:
    """[{"key": {var: label, ...}, "objective": ..., ...}] without a Python loop per group."""
    if frame.empty:
        return "[]"
    measures = [c for c in GROUP_MEASURES if c in frame.columns]
    keys = [c for c in frame.columns if c not in measures]
    flat = frame[measures].to_json(orient="records", lines=True, double_precision=15).splitlines()
    key = pd.Series(["{"] * len(frame), dtype=object)
    for i, col in enumerate(keys):
        labels = frame[col].astype("category")
        escaped = np.array([json.dumps(str(c)) for c in labels.cat.categories], dtype=object)
        key = key + (("," if i else "") + json.dumps(col) + ":") + escaped[labels.cat.codes.to_numpy()]
    records = '{"key": ' + key + "}, " + pd.Series(flat, dtype=object).str.slice(1)
    return "[" + ", ".join(records.tolist()) + "]"


def _num(x):
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return _num(o)
    if isinstance(o, np.bool_):
        return bool(o)
    raise TypeError(f"not JSON serializable: {type(o).__name__}")
