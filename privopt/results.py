"""The result of a solve: what the solver says, what privopt checked, and the tables by label.

``termination`` says why the method stopped; ``status`` says what the returned point is. A
point is reported "optimal" only if privopt's own recomputation from the returned table (the
``verification``) passes. ``spec`` and ``versions`` say what was solved and with what: the
spec's path, title, SHA-256 and every param's value, and the versions of privopt, Python and
the numeric and solver packages.

A result renders itself through its sections (``privopt.sections``): the fields every solve
has (status, objective, method, backend, verification, timings, groups, tables) are the
result's own, and each problem class (each block, once a program holds several) adds one
section that writes its JSON keys, its text and its HTML. ``to_dict``/``write_json`` (JSON),
``print``/``text_lines`` (what ``privopt solve`` prints) and ``_repr_html_`` (a notebook's
tables) all go through them.

Everything ``to_dict`` and ``to_json`` return is strict JSON (RFC 8259): a non-finite number
(an infinite achieved budget, an undefined ratio) is written as ``null``, numpy scalars and
arrays become Python numbers and lists. docs/api.md lists the fields that can be null.
"""

from __future__ import annotations

import functools
import io
import json
import math
import os
import platform
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from ._version import __version__
from .errors import did_you_mean
from .records import Record
from .sections import GROUP_MEASURES, Section, html_table, print_released, sections_of, table_layout, text_console
from .sections import captured_lines as _captured_lines

if TYPE_CHECKING:
    import pandas as pd

# The version of the result's JSON format: ``privopt verify`` reads the formats it knows and
# refuses any other (1: the spec's text, cwd and data SHA-256, a certificate with its proof; 2: a
# composite split's point certificates as sparse vectors, and Farkas rays where a block is infeasible).
RESULT_FORMAT = 2

# Packages whose versions a result records (those installed): the numeric stack, the spec
# parser and every solver a backend can call.
VERSIONED_PACKAGES = (
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "lark",
    "highspy",
    "cvxpy",
    "clarabel",
    "scs",
    "osqp",
    "ecos",
    "pyomo",
)


class Versions(Mapping[str, str]):
    """{"privopt", "python", package: version} for privopt, the running Python and every
    installed package of ``VERSIONED_PACKAGES`` (packages that are not installed are left out),
    read when first looked at: a solve that only prints its text never does. Each version is
    the ``Version:`` line of the package's installed metadata (``installed_versions``), what
    ``importlib.metadata.version`` answers, without importing ``importlib.metadata`` and with it
    the ``email`` package (issue 23, goal 2: together longer than reading a small data file)."""

    @functools.cached_property
    def _read(self) -> dict[str, str]:
        return {"privopt": __version__, "python": platform.python_version(), **installed_versions(VERSIONED_PACKAGES)}

    def __getitem__(self, name: str) -> str:
        return self._read[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read)

    def __len__(self) -> int:
        return len(self._read)

    def __repr__(self) -> str:
        return repr(self._read)


def _normalized(name: str) -> str:
    """A distribution's name as installers write it in a metadata folder's name (PEP 503
    normalised, with ``_``): ``Foo.Bar-baz`` -> ``foo_bar_baz``."""
    return re.sub(r"[-_.]+", "_", name).lower()


def installed_versions(names: Sequence[str]) -> dict[str, str]:
    """{name: version} of the installed distributions among ``names``, found as
    ``importlib.metadata`` finds them: the first ``NAME-*.dist-info`` (or ``.egg-info``) folder
    or file along ``sys.path``, its ``Version:`` header (``METADATA``, or ``PKG-INFO``). A name
    with no such entry is not installed, and is left out."""
    wanted = {_normalized(n) for n in names}
    found: dict[str, str] = {}
    for folder in sys.path:
        try:
            entries = sorted(os.listdir(folder or "."))
        except OSError:  # a zip file on the path, or a folder that is gone
            continue
        for entry in entries:
            stem, _, kind = entry.rpartition(".")
            name = _normalized(stem.split("-", 1)[0])
            if kind not in ("dist-info", "egg-info") or name not in wanted or name in found:
                continue
            version = _version_header(os.path.join(folder or ".", entry))
            if version is not None:
                found[name] = version
    return {n: found[_normalized(n)] for n in names if _normalized(n) in found}


def _version_header(path: str) -> str | None:
    """The ``Version:`` header of a metadata folder (its ``METADATA`` or ``PKG-INFO``) or file,
    None when there is none. Headers end at the first empty line."""
    files = [os.path.join(path, "METADATA"), os.path.join(path, "PKG-INFO")] if os.path.isdir(path) else [path]
    for file in files:
        try:
            with open(file, encoding="utf-8", errors="replace") as f:
                for line in f:
                    if not line.strip():
                        break
                    if line[:8].lower() == "version:":
                        return line[8:].strip()
        except OSError:
            continue
    return None


@functools.cache
def versions() -> Versions:
    """The versions a result records (``Versions``: one per process, read once)."""
    return Versions()


class Labels(Record):
    """A column of labels: row i holds ``labels[codes[i]]`` (code -1: no label). Built into a
    pandas Categorical only when a DataFrame is asked for."""

    codes: np.ndarray
    labels: tuple[str, ...]

    def categorical(self) -> pd.Categorical:
        import pandas as pd

        return pd.Categorical.from_codes(self.codes, dtype=pd.CategoricalDtype(list(self.labels)), validate=False)

    def cells(self, rows) -> np.ndarray:
        """The labels of ``rows`` (a slice or an index array) as objects; NaN for code -1."""
        return np.array([*self.labels, math.nan], dtype=object)[self.codes[rows]]


class Columns:
    """A table as named columns without pandas: numpy arrays, and ``Labels`` for label columns.
    A result keeps its QID groups and released tables so and builds a pandas DataFrame from
    them (``frame``) only when one is read: importing pandas takes longer than solving a small
    spec, and printing a result needs none (issue 23, goal 1)."""

    def __init__(self, columns: Mapping[str, np.ndarray | Labels]):
        self.columns = dict(columns)

    @classmethod
    def of(cls, frame: pd.DataFrame) -> Columns:
        """A DataFrame's columns: a categorical one as ``Labels``, any other as its array."""
        import pandas as pd

        return cls(
            {
                name: Labels(col.cat.codes.to_numpy(), tuple(map(str, col.cat.categories)))
                if isinstance(col.dtype, pd.CategoricalDtype)
                else col.to_numpy()
                for name, col in frame.items()
            }
        )

    def __len__(self) -> int:
        first = next(iter(self.columns.values()), None)
        return 0 if first is None else len(first.codes if isinstance(first, Labels) else first)

    def cells(self, name: str, rows) -> np.ndarray:
        """Column ``name`` at ``rows`` (a slice or an index array): labels as text, numbers as numpy's."""
        col = self.columns[name]
        return col.cells(rows) if isinstance(col, Labels) else col[rows]

    def frame(self) -> pd.DataFrame:
        """The pandas DataFrame: label columns as Categoricals, the rest as their arrays."""
        import pandas as pd

        if not self.columns:
            return pd.DataFrame()
        return pd.DataFrame(
            {name: col.categorical() if isinstance(col, Labels) else col for name, col in self.columns.items()}
        )

    def wide(self, keys: list[str], outcome: str) -> tuple[list[tuple], list[str], np.ndarray]:
        """``pivot_table(index=keys, columns=outcome, values="value", observed=True,
        sort=False)`` over label columns, in numpy: (each row's key labels, the outcome labels,
        the values, rows x outcomes). Each label ranks by where it first appears in its column;
        the rows come in order of their keys' ranks (the first key first), the outcomes by rank,
        and a repeated cell is the mean of its values: pandas' table for finite values (a
        released table's; a table over the full grid of its axes comes out in spec order). A
        NaN value is left out, and a row or outcome left with no value is dropped."""
        axes = [self.columns[k] for k in [*keys, outcome]]
        value = np.asarray(self.columns["value"], dtype=float)
        ranks = [_first_seen_rank(c.codes) for c in axes]
        row_id = np.ravel_multi_index(ranks[:-1], [int(r.max()) + 1 if r.size else 1 for r in ranks[:-1]])
        kept = np.flatnonzero(~np.isnan(value))
        rows, row_first, row_of = np.unique(row_id[kept], return_index=True, return_inverse=True)
        outs, out_first, out_of = np.unique(ranks[-1][kept], return_index=True, return_inverse=True)
        total = np.zeros((rows.size, outs.size))
        count = np.zeros((rows.size, outs.size))
        np.add.at(total, (row_of, out_of), value[kept])
        np.add.at(count, (row_of, out_of), 1.0)
        with np.errstate(invalid="ignore"):
            values = np.where(count > 0, total / np.where(count > 0, count, 1.0), np.nan)
        row_labels = list(zip(*[c.cells(kept[row_first]) for c in axes[:-1]])) if keys else [()] * rows.size
        return row_labels, list(axes[-1].cells(kept[out_first])), values


def _first_seen_rank(codes: np.ndarray) -> np.ndarray:
    """Each entry's rank among the distinct values of ``codes`` by where each first appears."""
    uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    rank = np.empty(uniq.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(uniq.size)
    return rank[inverse]


class LazyTables(Mapping[str, "pd.DataFrame"]):
    """Released tables by name, each built on first access (a table of millions of cells costs
    more to label than to solve, and many callers never look): a factory gives ``Columns``
    (or a DataFrame), ``[name]`` the DataFrame, ``columns(name)`` the ``Columns``."""

    def __init__(self, factories: dict[str, Callable[[], Columns | pd.DataFrame]]):
        self._factories = dict(factories)
        self._built: dict[str, Columns | pd.DataFrame] = {}

    def _table(self, name: str) -> Columns | pd.DataFrame:
        if name not in self._built:
            self._built[name] = self._factories[name]()
        return self._built[name]

    def __getitem__(self, name: str) -> pd.DataFrame:
        table = self._table(name)
        if isinstance(table, Columns):
            table = self._built[name] = table.frame()
        return table

    def columns(self, name: str) -> Columns:
        table = self._table(name)
        return table if isinstance(table, Columns) else Columns.of(table)

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)


class FrameField:
    """A ``Result`` field holding a DataFrame, given as one or as ``Columns``; ``Columns`` are
    built into the DataFrame when the field is first read (``Result.group_columns`` reads
    them without pandas). A dataclass field whose default is this descriptor: reading it on
    the class raises AttributeError, so the field has no default."""

    def __set_name__(self, owner, name: str):
        self.name, self.slot = name, f"_{name}"

    def __get__(self, obj, owner=None):
        if obj is None:
            raise AttributeError(self.name)
        value = obj.__dict__[self.slot]
        if isinstance(value, Columns):
            value = obj.__dict__[self.slot] = value.frame()
        return value

    def __set__(self, obj, value) -> None:
        obj.__dict__[self.slot] = value


@dataclass
class Result:
    status: str  # optimal (verified) | infeasible; a failed solve or check raises instead
    termination: str
    objective: float | None
    beta: float | None
    method: str
    backend: str | None
    problem_class: str
    objective_kind: str
    groups: pd.DataFrame = FrameField()  # one row per QID group: public labels, objective, beta, beta_min, c_star, case
    tables: Mapping[str, pd.DataFrame]
    verification: dict[str, Any]
    timings: dict[str, float]
    stats: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    measures: dict[str, float] = field(default_factory=dict)  # mechanism problems: privacy and utility of the table
    spec: dict[str, Any] | None = None  # {"path", "title", "sha256", "params"}: what was solved (Problem.solve sets it)
    versions: Mapping[str, str] = field(default_factory=dict)  # {"privopt", "python", package: version}: Versions
    details: dict[str, Any] = field(
        default_factory=dict
    )  # the family's own section, top-level keys of the JSON (noise: "noise", "baselines")
    engine: str = "local"  # which engine ran: "local" (this process) or "dask" (privopt.engines.dask)
    certificate: dict | None = None  # why the answer is optimal: core.certificate.Certificate.to_dict()
    # what the text shows from the spec beyond these fields (sections.spec_facts: the objective as
    # written, each table's outcome axis); not part of the JSON
    facts: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def sections(self) -> tuple[Section, ...]:
        """The result's sections: its problem class's own part (``privopt.sections``), each
        rendering itself as JSON keys, text and HTML."""
        return sections_of(self)

    @property
    def title(self) -> str:
        """What was solved, for a person: the spec's title, else its path ("<spec>" for text)."""
        spec = self.spec or {}
        return spec.get("title") or spec.get("path") or "<spec>"

    @property
    def infeasible(self) -> bool:
        """True when no table satisfies the spec (``status == "infeasible"``)."""
        return self.status == "infeasible"

    @property
    def params(self) -> dict[str, float]:
        """Every param's value as solved (the spec's, after ``--set`` / ``params=``)."""
        return dict(self.spec["params"]) if self.spec else {}

    def table(self, name: str) -> pd.DataFrame:
        """A released table as a DataFrame: one column per variable (labels) and ``value``."""
        try:
            return self.tables[name]
        except KeyError:
            raise KeyError(
                f"no table '{name}'{did_you_mean(name, self.tables)}; tables: {', '.join(self.tables)}"
            ) from None

    def group_columns(self) -> Columns:
        """The QID groups as ``Columns``, read without pandas (``groups`` is their DataFrame)."""
        groups = self.__dict__["_groups"]  # as given (FrameField): Columns, or a DataFrame
        return groups if isinstance(groups, Columns) else Columns.of(groups)

    def table_columns(self, name: str) -> Columns:
        """The released table ``name`` as ``Columns``, read without pandas (``table`` is its DataFrame)."""
        tables = self.tables
        return tables.columns(name) if isinstance(tables, LazyTables) else Columns.of(tables[name])

    def group_records(self) -> list[dict[str, Any]]:
        """Per-group results as plain dicts: {key: {public var: label}, objective, beta, ...}
        (a non-finite measure is None)."""
        frame = self.groups
        if frame.empty:
            return []
        measures = [c for c in GROUP_MEASURES if c in frame.columns]
        keys = [c for c in frame.columns if c not in measures]
        key_rows = frame[keys].astype(str).to_dict(orient="records") if keys else [{}] * len(frame)
        value_rows = _finite_or_none(frame[measures]).to_dict(orient="records")
        return [{"key": k} | v for k, v in zip(key_rows, value_rows)]

    def to_dict(self, tables: bool = True, groups: bool = True) -> dict[str, Any]:
        """The result as plain, strict-JSON Python objects (for small results; ``to_json`` is
        the fast path for large ones). Non-finite numbers are None, numpy values are Python's."""
        return plain(self._fields(tables, groups))

    def _fields(self, tables: bool, groups: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            "format": RESULT_FORMAT,
            "termination": self.termination,
            "objective": self.objective,
            "objective_kind": self.objective_kind,
            "beta": self.beta,
            "method": self.method,
            "backend": self.backend,
            "problem_class": self.problem_class,
            "engine": self.engine,
            "timings": {k: round(v, 6) for k, v in self.timings.items()},
            "groups": self.group_records() if groups else None,
            "verification": self.verification,
            "certificate": self.certificate,
            "stats": self.stats,
        }
        for section in self.sections:
            out.update(section.json())
        if self.reasons:
            out["reasons"] = self.reasons
        out["spec"] = self.spec
        out["versions"] = self.versions
        if tables:
            out["tables"] = {name: self._table_records(df) for name, df in self.tables.items()}
        return out

    def print(self, console, tables: bool = True) -> None:
        """The result as ``privopt solve`` prints it, on a Rich ``console``: the title, then
        the status (alone when not optimal), each section, and (``tables``) every released
        table wide, P(outcome | the other axes), its first ``MAX_ROWS`` rows. A cluster solve's
        tables stay in its JSON and ``--out`` files."""
        from .render import markup

        console.print(f"[bold]{markup(self.title)}[/bold]")
        if self.status != "optimal":
            console.print(f"status: [red]{self.status}[/red]")
            return
        for section in self.sections:
            section.print(console)
        if tables and self.engine == "local":
            for name in self.tables:
                columns = self.table_columns(name)
                print_released(console, name, columns, *table_layout(columns, self.facts, name))

    def text_lines(self, width: int | None = None, tables: bool = True) -> list[str]:
        """``print``'s text as plain lines, laid out at ``width`` columns (None: unwrapped)."""
        console = text_console(width)
        self.print(console, tables)
        return _captured_lines(console)

    def _repr_html_(self) -> str:
        """The result as HTML (a notebook shows it): a summary table (status, objective,
        method, backend, verification), the reasons of an infeasible result, each section's
        tables, and (as ``print``) every released table wide, its first ``MAX_ROWS`` rows.
        Every user text (title, labels, names) is escaped."""
        import html

        import pandas as pd

        v = self.verification
        summary = pd.DataFrame(
            {
                "": ["status", "objective", "method", "backend", "verification"],
                "value": [
                    self.status + (" (verified)" if self.status == "optimal" else ""),
                    "-" if self.objective is None else f"{self.objective:.12g}",
                    self.method,
                    self.backend or "-",
                    v.get("optimality") or ("passed" if v.get("passed") else "not passed"),
                ],
            }
        )
        parts = [f"<h3>{html.escape(self.title)}</h3>", summary.to_html(index=False, header=False, escape=True)]
        parts += [f"<p>{html.escape(reason)}</p>" for reason in self.reasons]
        if self.status == "optimal":
            parts += [section.html() for section in self.sections]
            for name, df in (
                self.tables.items() if self.engine == "local" else ()
            ):  # as print: a cluster's stay in --out
                outcome, keys = table_layout(df, self.facts, name)
                wide = df.pivot_table(index=keys, columns=outcome, values="value", observed=True, sort=False)
                parts.append(html_table(f"{name} = P({outcome} | {', '.join(keys)})", wide, index=True))
        return '<div class="privopt-result">' + "".join(parts) + "</div>"

    @staticmethod
    def _table_records(df: pd.DataFrame) -> list[dict[str, Any]]:
        """A table's rows as dicts: labels as text, ``value`` a float (None if not finite)."""
        labels = [c for c in df.columns if c != "value"]
        return _finite_or_none(df.astype({c: str for c in labels})).to_dict(orient="records")

    def to_json(self, tables: bool = True, indent: int | None = 2) -> str:
        """The result as JSON text (``write_json`` into a string)."""
        buf = io.StringIO()
        self.write_json(buf, tables=tables, indent=indent)
        return buf.getvalue()

    def write_json(self, out: TextIO, tables: bool = True, indent: int | None = 2) -> None:
        """Write the result as JSON text to ``out``. Groups and tables go through ``str.format``
        over whole columns, ``JSON_ROWS`` rows at a time, so a result of millions of cells
        serializes at C speed without its whole text (or a string per cell of every row) in
        memory at once (so are the rows of a ``LabelRows``: ``no_records`` cells). Floats are
        written as their shortest round-trip ``repr``: exact. The rest is ``json.dumps`` at full
        precision."""
        body = plain(self._fields(tables=False, groups=False), lazy=True)
        del body["groups"]
        text, lifted = _lift(body, indent)  # body is plain(): strict already
        sep = ",\n" + " " * (indent or 0) if indent else ", "
        head, _, tail = text.rpartition("}")
        _write_lifted(out, head.rstrip(), lifted)
        out.write(sep + '"groups": ')
        _write_groups(out, self.group_columns())
        if tables:
            out.write(sep + '"tables": {')
            for k, name in enumerate(self.tables):
                out.write((", " if k else "") + f"{json.dumps(name)}: ")
                _write_frame(out, self.table_columns(name))
            out.write("}")
        out.write(("\n" if indent else "") + "}" + tail)


JSON_ROWS = 1 << 16  # rows rendered to text at a time by write_json
LONG_LIST = 256  # write_json writes a list of more objects than this on one line (json's C encoder)


def _dumps(body: dict, indent: int | None) -> str:
    """``json.dumps(body, indent=indent)``, except that a list of more than ``LONG_LIST``
    objects (the ``no_records`` cells of a record-level table, one per combination without
    records: 700,000 at 2 million records over 2 million combinations) is written on one line,
    as the groups are, by json's C encoder (the indenting encoder is pure Python, about 25 us
    an object), and a ``LabelRows`` a chunk of rows at a time. The same JSON value."""
    buf = io.StringIO()
    _write_lifted(buf, *_lift(body, indent))
    return buf.getvalue()


def _lift(body: dict, indent: int | None) -> tuple[str, list]:
    """``json.dumps(body, indent=indent)`` with a placeholder string in place of each long list
    of objects and each ``LabelRows`` (a short one, with an indent, as its list of dicts: laid
    out as before), and what each placeholder stands for (``_write_lifted``)."""
    import secrets

    nonce, lifted = secrets.token_hex(8), []

    def hold(x) -> str:
        lifted.append(x)
        return f"privopt-{nonce}-{len(lifted) - 1}"

    def lift(x):
        if isinstance(x, LabelRows):
            return hold(x) if len(x) > LONG_LIST or not indent else x.tolist()
        if isinstance(x, dict):
            return {k: lift(v) for k, v in x.items()}
        if indent and isinstance(x, list) and len(x) > LONG_LIST and isinstance(x[0], dict):
            return hold(json.dumps(x, allow_nan=False))
        return [lift(v) for v in x] if isinstance(x, list) else x

    text = json.dumps(lift(body), indent=indent, allow_nan=False)
    return text, [(f'"privopt-{nonce}-{k}"', x) for k, x in enumerate(lifted)]


def _write_lifted(out: TextIO, text: str, lifted: list) -> None:
    """``text`` with each placeholder replaced: by its JSON text, or a ``LabelRows``'s rows
    written a chunk at a time (``_write_frame`` of its ``columns``: the text of json.dumps of
    its dicts)."""
    for mark, x in lifted:
        before, found, text = text.partition(mark)
        out.write(before)
        if found:
            _write_frame(out, x.columns()) if isinstance(x, LabelRows) else out.write(x)
    out.write(text)


class LabelRows(Sequence):
    """Rows of labels, ``{name: label, ...}`` each, kept as one small integer code per name and
    row and each name's labels (the ``no_records`` cells of a table read from records: 700,000
    combinations at 2 million records took 183 MB as dicts, 6 MB as codes). It equals the list of
    its rows; ``plain`` turns it into that list, ``write_json`` writes it a chunk of rows at a
    time, never as dicts."""

    __hash__ = None

    def __init__(self, names: tuple[str, ...], labels: tuple[tuple[str, ...], ...], codes: np.ndarray):
        self.names, self.labels = tuple(names), tuple(tuple(lab) for lab in labels)
        top = max((len(lab) for lab in self.labels), default=1)
        self.codes = np.asarray(codes).astype(np.min_scalar_type(top), copy=False).reshape(-1, len(self.names))

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return LabelRows(self.names, self.labels, self.codes[i]).tolist()
        return {n: lab[c] for n, lab, c in zip(self.names, self.labels, self.codes[i])}

    def __iter__(self) -> Iterator[dict[str, str]]:
        return iter(self.tolist())

    def __eq__(self, other) -> bool:
        if isinstance(other, LabelRows):
            return self.tolist() == other.tolist()
        return self.tolist() == list(other) if isinstance(other, Sequence) and not isinstance(other, str) else False

    def __repr__(self) -> str:
        return f"LabelRows({len(self)} rows of {', '.join(self.names)})"

    def tolist(self) -> list[dict[str, str]]:
        """The rows as dicts, the labels looked up a column at a time."""
        columns = [np.array(lab, dtype=object)[self.codes[:, k]] for k, lab in enumerate(self.labels)]
        return [dict(zip(self.names, row)) for row in zip(*columns)]

    def columns(self) -> Columns:
        """One ``Labels`` column per name (its codes and labels, no string per row, no pandas)."""
        return Columns({n: Labels(self.codes[:, k], lab) for k, (n, lab) in enumerate(zip(self.names, self.labels))})


def json_values(column: pd.Series | np.ndarray | Labels) -> np.ndarray:
    """Each entry of ``column`` as JSON text, exactly: a float as its shortest round-trip
    ``repr`` (so a probability of 1e-10 keeps every digit; pandas' writer keeps 15 decimal
    places), a non-finite float as ``null``, an integer or bool as itself, and anything else
    (labels) as a JSON string, escaped once per distinct label (``Labels``: its labels, no
    pandas; a column of other objects goes through pandas' ``factorize``)."""
    if isinstance(column, Labels):
        return np.array([json.dumps(u) for u in column.labels] + ["null"], dtype=object)[column.codes]
    v = column if isinstance(column, np.ndarray) else column.to_numpy()
    if v.dtype.kind == "f":
        text = np.array(list(map(float.__repr__, v.astype(float).tolist())), dtype=object)
        text[~np.isfinite(v)] = "null"
        return text
    if v.dtype.kind in "iu":
        return np.array(list(map(int.__repr__, v.tolist())), dtype=object)
    if v.dtype.kind == "b":
        return np.where(v, "true", "false").astype(object)
    import pandas as pd

    if isinstance(column.dtype, pd.CategoricalDtype):
        codes, uniques = column.cat.codes.to_numpy(), column.cat.categories
    else:
        codes, uniques = pd.factorize(column, use_na_sentinel=False)
    escaped = np.array([json.dumps(str(u)) for u in uniques] + ["null"], dtype=object)
    return escaped[codes]  # code -1 (a missing label) picks the trailing "null"


def json_template(columns) -> str:
    """``"col": {}, ...`` for ``str.format``, with the column names escaped once."""
    return ", ".join(json.dumps(str(c)).replace("{", "{{").replace("}", "}}") + ": {}" for c in columns)


def _rows(column: pd.Series | np.ndarray | Labels, start: int, stop: int):
    """Rows ``start:stop`` of a column (a Series, an array or ``Labels``)."""
    if isinstance(column, Labels):
        return Labels(column.codes[start:stop], column.labels)
    return column[start:stop] if isinstance(column, np.ndarray) else column.iloc[start:stop]


def write_rows(out: TextIO, fmt, columns: list) -> None:
    """``[row, row, ...]``: each row ``fmt`` over the columns' JSON values (``json_values``), a
    chunk of ``JSON_ROWS`` rows at a time."""
    out.write("[")
    n = len(columns[0].codes if isinstance(columns[0], Labels) else columns[0]) if columns else 0
    for start in range(0, n, JSON_ROWS):
        chunk = [json_values(_rows(c, start, start + JSON_ROWS)) for c in columns]
        out.write((", " if start else "") + ", ".join(map(fmt, *chunk)))
    out.write("]")


def _write_frame(out: TextIO, table: Columns | pd.DataFrame) -> None:
    """The rows of a table (``Columns``, or a DataFrame) as a JSON list of objects (no Python
    code runs per row)."""
    cols = table.columns if isinstance(table, Columns) else {c: table[c] for c in table.columns}
    fmt = ("{{" + json_template(cols) + "}}").format
    write_rows(out, fmt, list(cols.values()))


def _write_groups(out: TextIO, groups: Columns) -> None:
    """[{"key": {var: label, ...}, "objective": ..., ...}] without a Python loop per group:
    each column's JSON text made whole (``json_values``), no pandas."""
    if not groups.columns or len(groups) == 0:
        out.write("[]")
        return
    measures = [c for c in GROUP_MEASURES if c in groups.columns]
    keys = [c for c in groups.columns if c not in measures]
    fmt = (
        '{{"key": {{' + json_template(keys) + "}}" + (", " + json_template(measures) if measures else "") + "}}"
    ).format
    write_rows(out, fmt, [groups.columns[c] for c in keys + measures])


def _finite_or_none(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every numeric column as Python objects, non-finite entries None
    (vectorized per column; other columns unchanged)."""
    import pandas as pd

    out = frame.copy()
    for col in frame.columns:
        values = frame[col]
        if pd.api.types.is_float_dtype(values.dtype):
            out[col] = values.astype(object).where(np.isfinite(values.to_numpy()), None)
        elif pd.api.types.is_integer_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype):
            out[col] = values.astype(object)
    return out


def plain(x: Any, lazy: bool = False) -> Any:
    """``x`` as strict-JSON Python values, recursively: mappings become dicts with text keys,
    sequences, sets, numpy arrays and pandas Series lists (float arrays converted in C, not
    per element), numpy scalars Python numbers, non-finite floats None; anything else (a path,
    an enum) its ``str``. A ``LabelRows`` becomes its list of dicts, or (``lazy``) stays as it
    is, for ``write_json`` to write."""
    if x is None or isinstance(x, (str, bool)):
        return x
    if isinstance(x, LabelRows):
        return x if lazy else x.tolist()
    if isinstance(x, Mapping):
        return {str(k): plain(v, lazy) for k, v in x.items()}
    pd = sys.modules.get("pandas")  # a Series exists only once pandas is imported
    if pd is not None and isinstance(x, (pd.Series, pd.Index)):
        x = x.to_numpy()
    if isinstance(x, np.ndarray):
        if x.dtype.kind == "f":
            cells = x.astype(object)
            cells[~np.isfinite(x)] = None
            return cells.tolist()
        return plain(x.tolist()) if x.dtype.kind in "OUSMm" else x.tolist()
    if isinstance(x, (list, tuple, set, frozenset)):
        return [plain(v, lazy) for v in x]
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return _num(x)
    return str(x)


def _num(x):
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None
