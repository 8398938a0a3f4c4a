"""The Dask engine: a transparency-report spec solved group-block by group-block on a cluster.

Design (Chen et al. Lemma 3: the problem separates by quasi-identifier group):

1. **Driver** (this process) parses the spec and checks every data path exactly as the local
   engine does (``DataFiles``: inside the spec's folder, every part's SHA-256 recorded). It does
   not build the model. Every ``var ... from FILE column C`` domain is computed once over the
   whole data (a distributed ``unique`` for Parquet) and written into the syntax tree as an
   explicit label set, so every worker sees the global domains.
2. **Blocks.** The groups are the cells of the product of the public variables' domains (in the
   objective's order), as in ``lower/atr.py``. The leading ``k`` public variables, enough of them
   for about 4 blocks per worker, split that product into *blocks*: a block fixes their labels
   and keeps the full domains of the rest, so a block is itself a product, i.e. the same spec
   with those variables' domains narrowed to one label, and the blocks in C order are the groups
   in the local engine's order.
3. **Routing.** Parquet data holding the group key is read with ``dask.dataframe.read_parquet``
   (only the columns the spec names), each row gets its block id from its labels, and the rows
   are shuffled on it, so every group's rows (possibly from several parts) land in one
   partition. Other files (small CSVs: a census prior) are read by each worker, filtered to the
   block. The graph runs on the cluster given (``scheduler``); without one, on dask's threaded
   scheduler in this process (``_Runner``: no cluster to start, no rows sent between
   processes, the shuffle in memory), which keeps the engine within a small factor of the
   local one on one machine (docs/performance.md, "The Dask engine").
4. **Per block on the workers** the narrowed spec goes through the local engine unchanged:
   ``builder.build.Builder`` with a ``DataFiles`` that serves the block's rows, then
   ``pipeline.solve`` (lower_atr -> closed form ``solve_binary`` or ``solve_lfp`` -> ``verify``).
   No math is re-implemented: each block is verified by the same code as a local solve.
5. **Combine.** Group frames are concatenated in block order, verification and stats merged
   (passed = every block passed; errors and gaps are the largest), the released table is
   concatenated and put in the design's order on first access. ``Result.engine`` is "dask".

Equal to the local engine: a block's prior is normalized within the block (``counts``), which
changes no conditional prior but may change the last bit, so closed-form results agree to
~1e-15, and the LFP, a certified method, within its certified gap. A joint probability read
from a routed dataset (no ``counts``) is normalized per block and its global sum checked here.

Options are checked on the driver before dask is imported (method, backend, solver, workers;
a scheduler address must be ``[SCHEME://]HOST:PORT`` and reachable within
``SCHEDULER_TIMEOUT_S``): a bad one is a ``UsageError``, never a worker's traceback. A table
written in the spec (inline, or ``bsc``) lists every label of its variables, so the blocks
split only on the public variables before the first one such a table names (none: one block).

Limits: the workers must see the data paths (a shared file system); the paths are checked and
digested by the driver, and the workers re-open them by their real path. Data errors found on a
worker count rows within its partition. A block whose groups have no row at all is refused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from .. import pipeline, solverlog
from ..blocks.common import label_column
from ..builder.build import MEASURES, PROB_TOL, Builder
from ..classify import ATR_METHODS
from ..errors import SpecError, UsageError
from ..language import ast
from ..language.datafiles import DataFiles, _codes, distinct_labels, from_pandas, labels_of
from ..language.parser import parse_file
from ..pipeline.driver import result
from ..render import visible
from ..results import LazyTables, Result, versions

BLOCK = "__privopt_block"


@dataclasses.dataclass(frozen=True)
class _Var:  # what language.tables.Domain needs
    name: str
    labels: tuple[str, ...]
    values: np.ndarray | None

    @property
    def size(self) -> int:
        return len(self.labels)


def solve(
    spec: str | Path,
    method: str = "auto",
    backend: str = "auto",
    time_limit: float | None = None,
    solver: str | None = None,
    params: dict | None = None,
    allow_paths: bool = False,
    workers: int | None = None,
    scheduler=None,
    processes: bool = False,
    blocks_per_worker: int = 4,
) -> Result:
    """Solve the transparency-report spec at ``spec`` with Dask: ``scheduler`` is a cluster's
    address (``tcp://host:8786``) or a ``distributed.Client``; without it dask's own scheduler
    runs the blocks in this process, in ``workers`` threads (default: the machine's cores;
    ``processes=True``: a pool of that many processes, each block's rows and result pickled
    to and from it). Returns the local engine's Result (``engine == "dask"``)."""
    if not isinstance(spec, (str, Path)):
        raise UsageError("the dask engine reads the data itself: pass the spec's path, not a loaded Problem")
    t_start = time.perf_counter()
    pipeline.check_options(method, backend, solver, workers)  # on the driver, not as a worker's traceback
    if method not in ("auto", *ATR_METHODS):
        raise UsageError(
            f"method '{method}' does not apply: the dask engine solves transparency reports; "
            f"methods that apply to them: {', '.join(ATR_METHODS)}"
        )
    if isinstance(scheduler, str):
        if workers is not None:
            raise UsageError(
                "workers set the size of a local cluster (threads in this process); with a scheduler address the "
                "cluster's own workers solve (leave workers out, or the scheduler to solve in this process)"
            )
        reachable(scheduler)
    try:
        import dask.dataframe as dd
    except ImportError:
        raise UsageError("the dask engine needs dask: pip install 'privopt[dask]'") from None
    parsed = parse_file(spec)
    files = DataFiles(parsed.source.folder, allow_paths)
    decls = {s.name.name: s for s in parsed.statements if isinstance(s, ast.VarDecl)}
    public = _group_key(parsed, decls)

    # data paths: Parquet holding the group key is routed; the rest is read by each worker
    paths: dict[str, ast.Span] = {}
    for s in parsed.statements:
        if isinstance(s, ast.KnownDecl | ast.ConstDecl) and isinstance(s.source, ast.FileTable):
            if s.source.column is None:  # records counted per block would fill empty rates per block
                raise UsageError(
                    f"line {s.span.line}: the dask engine reads tables with a value column ('from FILE column C'); "
                    "a file of records is read by the local engine (leave out --engine dask)"
                )
            paths.setdefault(s.source.path, s.source.path_span)
        if isinstance(s, ast.VarDecl) and isinstance(s.domain, ast.DomainFile):
            paths.setdefault(s.domain.path, s.domain.path_span)
    routed: dict[str, list[str]] = {}
    for text, span in paths.items():
        parts = files.parts(text, span)
        if parts is not None and all(v in files.columns_of(text, span) for v in public):
            routed[text] = [str(p) for p in parts]
        else:
            files.frame(text, span)  # checked and digested here; the workers read it again
    if not routed:
        raise UsageError(
            "the dask engine reads Parquet data holding the public variables: no data path of this spec does"
        )

    with _Runner.start(scheduler, workers, processes) as runner:
        frames = {
            text: dd.read_parquet(p, columns=_needed(parsed, text, files, paths[text])) for text, p in routed.items()
        }
        tree, domains = _global_domains(parsed, files, frames, runner)
        key_vars = [_var(v, domains[v]) for v in public]
        sizes = [v.size for v in key_vars]
        k, n_blocks = 0, 1
        inline = _inline_variables(tree)  # a block narrows its prefix variables: none an inline table lists
        while k < len(sizes) and n_blocks < blocks_per_worker * runner.workers and key_vars[k].name not in inline:
            n_blocks *= sizes[k]
            k += 1
        prefix = key_vars[:k]
        parse_s = time.perf_counter() - t_start

        t0 = time.perf_counter()
        nparts = max(1, min(n_blocks, blocks_per_worker * runner.workers))
        shuffled = {}
        for text, frame in frames.items():
            frame = frame.map_partitions(_with_block, prefix, meta={**frame._meta.dtypes.to_dict(), BLOCK: np.int64})
            shuffled[text] = frame.shuffle(on=BLOCK, npartitions=nparts).to_delayed()
        job = {
            "tree": tree,
            "params": params,
            "allow_paths": allow_paths,
            "prefix": prefix,
            "method": method,
            "backend": backend,
            "time_limit": time_limit,
            "solver": solver,
        }
        from dask import delayed

        job = delayed(job, traverse=False)  # one task holding the syntax tree, not a walk through every node of it
        tasks = [delayed(_solve_partition)({t: shuffled[t][i] for t in shuffled}, job) for i in range(nparts)]
        pieces = [p for chunk in runner.compute(tasks) for p in chunk]
        solve_s = time.perf_counter() - t0
    got = {p["block"] for p in pieces}
    if len(got) < n_blocks:
        missing = next(b for b in range(n_blocks) if b not in got)
        idx = np.unravel_index(missing, [v.size for v in prefix])
        where = ", ".join(f"{v.name}={v.labels[i]}" for v, i in zip(prefix, idx))
        raise UsageError(
            f"the data have no row for any group with {where} ({n_blocks - len(got)} block(s) like it): "
            "the dask engine needs rows in every block; use the local engine"
        )
    pieces.sort(key=lambda p: p["block"])
    return _combine(
        pieces, parsed, files, key_vars, domains, runner.workers, nparts, n_blocks, k, parse_s, solve_s, t_start
    )


# ------------------------------------------------------------------ driver helpers

SCHEDULER_TIMEOUT_S = 5.0  # to reach a scheduler, then to connect to it: past that, exit 2 naming it
SCHEMES = ("tcp", "tls", "ws", "wss")


def scheduler_address(address: str) -> tuple[str, int]:
    """``[SCHEME://]HOST:PORT`` (SCHEME one of tcp, tls, ws, wss; tcp when left out) as (host,
    port), or ``UsageError`` naming the address and the form it should have."""
    shown = visible(address)
    form = "write it SCHEME://HOST:PORT, e.g. tcp://10.0.0.5:8786 (SCHEME tcp, tls, ws or wss)"
    scheme, sep, rest = address.strip().partition("://")
    if not sep:
        scheme, rest = "tcp", address.strip()
    if scheme not in SCHEMES:
        raise UsageError(f"scheduler address '{shown}': unknown scheme '{visible(scheme)}'; {form}")
    host, colon, port = rest.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host  # [IPv6]
    if (
        not colon
        or not host
        or any(c.isspace() or c in "/@?#" for c in host)
        or not port.isdigit()
        or not 1 <= int(port) <= 65535
    ):
        raise UsageError(f"scheduler address '{shown}' is malformed; {form}")
    return host, int(port)


def reachable(address: str, timeout: float = SCHEDULER_TIMEOUT_S) -> None:
    """A TCP connection to the scheduler's port opens within ``timeout`` seconds, or
    ``UsageError`` naming the address (a refused port fails at once, not after distributed's
    30 s of retries)."""
    import socket

    host, port = scheduler_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as e:
        why = "no answer" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        raise UsageError(
            f"cannot reach the Dask scheduler at {visible(address)} within {timeout:g} s ({why}); "
            "start it (dask scheduler) or check the address"
        ) from None


@dataclasses.dataclass
class _Runner:
    """Where the task graph runs. With a cluster (a ``distributed.Client``, or one connected to
    from a scheduler's address) its workers run it and the shuffle is distributed's (P2P).
    Without one, dask's own scheduler runs it in this process: ``workers`` threads (processes
    with ``processes=True``), with the in-memory task shuffle; no cluster is started (a
    ``LocalCluster`` took seconds to start its worker processes, and its shuffle moved every row
    between them), so on one machine the engine costs little more than the local one."""

    scheduler: object  # for dask.compute: a Client, or the get function of dask's threaded or multiprocessing scheduler
    workers: int
    options: dict  # dask.compute's keyword arguments
    config: dict  # dask's configuration while the graph is built and run
    owned: object = None  # a Client this solve connected, closed at the end
    _configured: object = None

    @classmethod
    def start(cls, scheduler, workers: int | None, processes: bool) -> _Runner:
        if (
            scheduler is None
        ):  # the scheduler's get function itself: naming it would import distributed to look for a client
            from dask import multiprocessing, threaded

            n = workers or os.cpu_count() or 1
            # the in-memory task shuffle, also where a distributed client exists in this process (P2P needs its workers)
            tasks = {"dataframe.shuffle.method": "tasks"}
            return cls(multiprocessing.get if processes else threaded.get, n, {"num_workers": n}, tasks)
        try:
            from distributed import Client
        except ImportError:
            raise UsageError("a Dask cluster needs distributed: pip install 'privopt[dask]'") from None
        if not solverlog.verbose():  # the shuffle's WARNING lines are distributed's chatter, not ours
            logging.getLogger("distributed").setLevel(logging.ERROR)
        if not isinstance(scheduler, str):
            return cls(scheduler, max(1, len(scheduler.nthreads())), {}, {})
        try:
            client = Client(scheduler, timeout=f"{SCHEDULER_TIMEOUT_S}s")
        except Exception as e:  # noqa: BLE001 - whatever answered there is not a scheduler we can use
            what = "no answer" if isinstance(e, (OSError, TimeoutError)) else "it answered, but not as a Dask scheduler"
            raise UsageError(
                f"cannot connect to the Dask scheduler at {visible(scheduler)} within "
                f"{SCHEDULER_TIMEOUT_S:g} s ({what}: {' '.join(str(e).split())[:200] or type(e).__name__})"
            ) from None
        return cls(client, max(1, len(client.nthreads())), {}, {}, owned=client)

    def compute(self, collections: list) -> list:
        """Every collection's value, from one run of their joint graph (shared inputs read once)."""
        import dask

        return list(dask.compute(*collections, scheduler=self.scheduler, **self.options))

    def __enter__(self) -> _Runner:
        import dask

        self._configured = dask.config.set(self.config)  # a shuffle's method is chosen as its graph is built
        self._configured.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._configured.__exit__(*exc)
        if self.owned is not None:
            self.owned.close()


def _global_domains(parsed: ast.SpecFile, files: DataFiles, frames: dict, runner: _Runner):
    """The tree with every ``var ... from FILE column C`` domain written as its label set (the
    distinct labels over the whole data, every part), and each joint table read from routed
    data marked ``counts`` once its global sum is checked to be 1 (a block normalizes its own
    rows). The uniques and sums of the routed data are computed in one graph: the Parquet
    parts are read once. Returns (tree, domains by variable)."""
    lazy = {}
    for i, s in enumerate(parsed.statements):
        if isinstance(s, ast.VarDecl) and isinstance(s.domain, ast.DomainFile) and s.domain.path in frames:
            col = s.domain.column.name if s.domain.column is not None else s.name.name
            if col not in frames[s.domain.path].columns:
                files.columns(s.domain.path, s.domain.path_span, [col])  # the located error
            lazy[i] = frames[s.domain.path][col].dropna().unique()
        if _routed_joint(s, frames):
            lazy[i] = frames[s.source.path][s.source.column.name].sum()
    value = dict(zip(lazy, runner.compute(list(lazy.values()))))
    domains, statements = {}, []
    for i, s in enumerate(parsed.statements):
        if isinstance(s, ast.VarDecl) and isinstance(s.domain, ast.DomainFile):
            col = s.domain.column.name if s.domain.column is not None else s.name.name
            labels = (
                labels_of(pd.Series(value[i]))
                if i in value
                else distinct_labels(files, s.domain.path, s.domain.path_span, col)
            )
            if not labels:
                raise SpecError(f"{s.name.name} has an empty domain", s.domain.span)
            s = dataclasses.replace(s, domain=_label_set(labels, s.domain.span))
        if isinstance(s, ast.VarDecl):
            domains[s.name.name] = s.domain
        if _routed_joint(s, frames):  # a joint: normalized per block, sum checked here
            total = float(value[i])
            if not abs(total - 1.0) <= PROB_TOL:
                name = s.name.name if s.name else "the table"
                raise SpecError(
                    f"the probabilities of {name} sum to {total:.12g}, not 1",
                    s.source.path_span,
                    "fix the values, or write 'counts' to have them normalized",
                )
            s = dataclasses.replace(s, source=dataclasses.replace(s.source, counts=True))
        statements.append(s)
    return dataclasses.replace(parsed, statements=tuple(statements)), domains


def _routed_joint(s, frames: dict) -> bool:
    """A joint probability table (no ``counts``) read from routed data."""
    return (
        isinstance(s, ast.KnownDecl)
        and isinstance(s.source, ast.FileTable)
        and s.source.path in frames
        and not s.source.counts
        and not s.prob.given
    )


def _inline_variables(tree: ast.SpecFile) -> set[str]:
    """The variables of tables written in the spec (inline, or ``bsc``): they list every label,
    so a block may not narrow them (the blocks split only on the public variables before them)."""
    out: set[str] = set()
    for s in tree.statements:
        if isinstance(s, ast.KnownDecl) and isinstance(s.source, ast.InlineTable | ast.BuiltinTable):
            if isinstance(s.source, ast.InlineTable) or s.source.func.name != "uniform":
                out.update([t.var.name for t in s.prob.targets] + [g.name for g in s.prob.given])
        if isinstance(s, ast.ConstDecl) and isinstance(s.source, ast.InlineTable):
            out.update(a.name for a in s.axes)
    return out


def _group_key(parsed: ast.SpecFile, decls: dict[str, ast.VarDecl]) -> list[str]:
    """The public variables of the objective's measure, in its order (the group key)."""
    objectives = [s for s in parsed.statements if isinstance(s, ast.ObjectiveDecl)]
    call = objectives[0].expr if len(objectives) == 1 else None
    if not (isinstance(call, ast.Call) and call.func.name in MEASURES):
        raise UsageError("the dask engine solves transparency-report specs (max_confidence or min_uncertainty)")
    names = [a.name for a in call.args if isinstance(a, ast.Name)]
    public = [n for n in names if n in decls and decls[n].role.name == "public"]
    if not public:
        raise UsageError("the dask engine splits the data by the public variables: this objective names none")
    return public


def _needed(parsed: ast.SpecFile, text: str, files: DataFiles, span) -> list[str]:
    cols: dict[str, None] = {}
    for s in parsed.statements:
        if isinstance(s, ast.KnownDecl) and isinstance(s.source, ast.FileTable) and s.source.path == text:
            cols.update(
                dict.fromkeys(
                    [t.var.name for t in s.prob.targets] + [g.name for g in s.prob.given] + [s.source.column.name]
                )
            )
        if isinstance(s, ast.ConstDecl) and isinstance(s.source, ast.FileTable) and s.source.path == text:
            cols.update(dict.fromkeys([a.name for a in s.axes] + [s.source.column.name]))
        if isinstance(s, ast.VarDecl) and isinstance(s.domain, ast.DomainFile) and s.domain.path == text:
            cols[s.domain.column.name if s.domain.column is not None else s.name.name] = None
    have = files.columns_of(text, span)
    return [c for c in cols if c in have]


def _label_set(labels: tuple[str, ...], span) -> ast.DomainSet:
    try:
        values = [float(x) for x in labels]
    except ValueError:
        values = [None] * len(labels)
    return ast.DomainSet(tuple(ast.Label(t, v, span) for t, v in zip(labels, values)), span)


def _var(name: str, dom) -> _Var:
    if isinstance(dom, ast.DomainSet):
        labels = tuple(lab.text for lab in dom.labels)
        values = (
            np.array([lab.value for lab in dom.labels], dtype=float)
            if all(lab.value is not None for lab in dom.labels)
            else None
        )
    elif isinstance(dom, ast.DomainRange):
        labels = tuple(str(v) for v in range(dom.lo, dom.hi + 1))
        values = np.arange(dom.lo, dom.hi + 1, dtype=float)
    else:
        raise UsageError(f"the dask engine needs the labels of {name} (a set, a range or a data column)")
    return _Var(name, labels, values)


def _with_block(df: pd.DataFrame, prefix: list[_Var]) -> pd.DataFrame:
    """Each row's block: the C-order index of its prefix labels (an unknown label goes to
    block 0, whose build then reports it)."""
    df = df.copy()
    if not prefix:
        df[BLOCK] = np.zeros(len(df), dtype=np.int64)
        return df
    codes = []
    for v in prefix:
        try:
            c = _codes(df[v.name], v, "", None)
        except SpecError:
            c = pd.Index(v.labels).get_indexer(df[v.name].astype(str).str.strip())
        codes.append(np.where(c < 0, 0, c))
    df[BLOCK] = np.ravel_multi_index(codes, [v.size for v in prefix]).astype(np.int64)
    return df


# ------------------------------------------------------------------ on the workers


class _BlockFiles(DataFiles):
    """DataFiles serving one block: routed paths from the block's rows, other files read
    whole and filtered to the block's labels of the prefix variables."""

    def __init__(self, folder, allow_paths, rows: dict[str, pd.DataFrame], fixed: dict[str, tuple[_Var, int]]):
        super().__init__(folder, allow_paths)
        self.rows, self.fixed = rows, fixed

    def columns(self, text, span, names, labels=()):
        if text in self.rows:
            df = self.rows[text]
            for n in names:
                if n not in df.columns:
                    super().columns(text, span, [n])  # the located error
            return df[list(dict.fromkeys(names))]
        df = super().columns(text, span, names, labels)
        keep = np.ones(len(df), dtype=bool)
        for name, (var, i) in self.fixed.items():
            if name in df.columns:
                keep &= _codes_loose(df[name], var) == i
        return df[keep].reset_index(drop=True)

    def frame(self, text, span, labels=()):
        return self.rows[text] if text in self.rows else super().frame(text, span, labels)

    def arrays(self, text, span, names, labels=()):
        return {n: from_pandas(c) for n, c in self.columns(text, span, names, labels).items()}

    def row_text(self, text, span, row):
        return (
            f"row {row + 1} of the rows of '{text}' for this block"
            if text in self.rows
            else super().row_text(text, span, row)
        )


def _codes_loose(col: pd.Series, var: _Var) -> np.ndarray:
    try:
        return _codes(col, var, "", None)
    except SpecError:
        return pd.Index(var.labels).get_indexer(col.astype(str).str.strip())


def _solve_partition(parts: dict[str, pd.DataFrame], job: dict) -> list[dict]:
    """Solve every block with rows in this partition through the local pipeline."""
    tree, prefix = job["tree"], job["prefix"]
    blocks = sorted(set().union(*(set(np.unique(df[BLOCK])) for df in parts.values())))
    out = []
    for b in blocks:
        idx = np.unravel_index(int(b), [v.size for v in prefix]) if prefix else ()
        fixed = {v.name: (v, int(i)) for v, i in zip(prefix, idx)}
        statements = tuple(
            dataclasses.replace(
                s, domain=_label_set((fixed[s.name.name][0].labels[fixed[s.name.name][1]],), s.domain.span)
            )
            if isinstance(s, ast.VarDecl) and s.name.name in fixed
            else s
            for s in tree.statements
        )
        rows = {t: df[df[BLOCK] == b].drop(columns=BLOCK).reset_index(drop=True) for t, df in parts.items()}
        builder = Builder(dataclasses.replace(tree, statements=statements), job["params"], job["allow_paths"])
        builder.files = _BlockFiles(tree.source.folder, job["allow_paths"], rows, fixed)
        problem = builder.build()
        # workers=1: the cluster already runs one block per worker; no process pool inside it
        res = pipeline.solve(
            problem,
            method=job["method"],
            backend=job["backend"],
            time_limit=job["time_limit"],
            solver=job["solver"],
            workers=1,
        )
        tables = {}
        if res.status == "optimal":
            tables = {name: res.tables[name] for name in res.tables}
        out.append(
            {
                "block": int(b),
                "status": res.status,
                "method": res.method,
                "backend": res.backend,
                "problem_class": res.problem_class,
                "objective_kind": res.objective_kind,
                "objective": res.objective,
                "beta": res.beta,
                "groups": res.groups,
                "tables": tables,
                "verification": res.verification,
                "stats": res.stats,
                "reasons": res.reasons,
                "spec": res.spec,
                "design": problem.design.axes,
                "certificate": res.certificate,
            }
        )
    return out


# ------------------------------------------------------------------ combining


def _combine(
    pieces, parsed, files, key_vars, domains, n_workers, nparts, n_blocks, k, parse_s, solve_s, t_start
) -> Result:
    first = pieces[0]
    methods = {p["method"] for p in pieces}
    if len(methods) > 1:
        raise UsageError(f"the blocks chose different methods ({', '.join(sorted(methods))}): pass method= explicitly")
    spec = dict(first["spec"])
    spec["sha256"] = hashlib.sha256(parsed.source.text.encode("utf-8")).hexdigest()
    spec["data"] = dict(files.digests)
    timings = {"parse_s": parse_s, "solve_s": solve_s, "total_s": time.perf_counter() - t_start}
    stats = _merge_stats([p["stats"] for p in pieces])
    stats["dask"] = {
        "workers": n_workers,
        "partitions": nparts,
        "blocks": n_blocks,
        "block_variables": [v.name for v in key_vars[:k]],
    }
    infeasible = [p for p in pieces if p["status"] != "optimal"]
    if infeasible:
        return result(
            status="infeasible",
            method=first["method"],
            backend=first["backend"],
            problem_class=first["problem_class"],
            objective_kind=first["objective_kind"],
            timings=timings,
            reasons=[r for p in infeasible for r in p["reasons"]],
            stats=stats,
            spec=spec,
            versions=versions(),
            engine="dask",
        )
    groups = pd.concat([p["groups"] for p in pieces], ignore_index=True)
    for v in key_vars:  # a block's key columns hold its narrowed labels: back to the global ones
        groups[v.name] = pd.Categorical(groups[v.name].astype(str), categories=list(v.labels))
    if "case" in groups.columns:
        groups["case"] = pd.Categorical(
            groups["case"].astype(str), categories=list(first["groups"]["case"].cat.categories)
        )
    beta = float(groups["beta"].max())
    objective = float(groups["objective"].min()) if first["objective_kind"] == "min_uncertainty" else beta
    names = list(first["tables"])
    all_labels = {n: _var(n, d).labels for n, d in domains.items() if isinstance(d, ast.DomainSet | ast.DomainRange)}

    def table(name):
        return lambda: _ordered_table([p["tables"][name] for p in pieces], first["design"], all_labels)

    return result(
        status="optimal",
        objective=objective,
        beta=beta,
        method=first["method"],
        backend=first["backend"],
        problem_class=first["problem_class"],
        objective_kind=first["objective_kind"],
        groups=groups,
        tables=LazyTables({n: table(n) for n in names}),
        verification=_merge_verification([p["verification"] for p in pieces], stats, first["method"]),
        certificate=_merge_certificates([p["certificate"] for p in pieces]),
        timings=timings,
        stats=stats,
        spec=spec,
        versions=versions(),
        engine="dask",
    )


def _merge_certificates(certs: list[dict]) -> dict:
    """The blocks' certificates as one: groups are independent (Lemma 3), so the bound on the
    largest confidence is the blocks' largest, the gap their largest; a theorem's cases add up
    and the LFP's per-group brackets (and their rays) are joined in block order."""
    out = dict(certs[0], data=dict(certs[0]["data"]))
    if out["bound"] is not None:
        out["bound"] = max(c["bound"] for c in certs)
    if out["gap"] is not None:
        out["gap"] = max(c["gap"] for c in certs)
    data = out["data"]
    if "binding_case_groups" in data:
        data["binding_case_groups"] = {
            k: sum(c["data"]["binding_case_groups"][k] for c in certs) for k in data["binding_case_groups"]
        }
    for key in ("lower", "upper", "level", "ray"):
        if key in data:
            data[key] = np.concatenate([np.asarray(c["data"][key], dtype=float) for c in certs])
    if "groups" in data:
        data["groups"] = sum(c["data"]["groups"] for c in certs)
        data["max_relative_gap"] = out["gap"]
    return out


def _ordered_table(
    frames: list[pd.DataFrame], axes: tuple[str, ...], labels: dict[str, tuple[str, ...]]
) -> pd.DataFrame:
    """The released table of every block, in the design's C order over the global labels."""
    df = pd.concat(frames, ignore_index=True)
    codes = []
    for a in axes:
        cat = pd.Categorical(df[a].astype(str), categories=list(labels[a]))
        df[a] = cat
        codes.append(cat.codes.astype(np.int64))
    order = np.argsort(np.ravel_multi_index(codes, [len(labels[a]) for a in axes]), kind="stable")
    out = df.iloc[order].reset_index(drop=True)
    shape = tuple(len(labels[a]) for a in axes)
    if len(out) == int(np.prod(shape)):  # the usual case: the local engine's compact label columns
        for i, a in enumerate(axes):
            out[a] = label_column(labels[a], shape, i).categorical()
    return out


def _merge_stats(stats: list[dict]) -> dict:
    out: dict = {}
    for s in stats:
        for key, v in s.items():
            if key not in out:
                out[key] = dict(v) if isinstance(v, dict) else v
            elif isinstance(v, dict):
                out[key] = _merge_stats([out[key], v])
            elif isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            elif key.startswith("max_") or key in ("steps", "lp_rows", "lp_cols"):
                out[key] = max(out[key], v)
            else:
                out[key] = out[key] + v
    return out


def _merge_verification(vs: list[dict], stats: dict, method: str) -> dict:
    out = dict(vs[0])
    for key in out:
        nums = [v.get(key) for v in vs]
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in nums) and (key.startswith("max_")):
            out[key] = max(nums)
    out["passed"] = all(v["passed"] for v in vs)
    out["failures"] = [f for v in vs for f in v["failures"]]
    if method != "closed-form" and "max_relative_gap" in stats:
        out["optimality"] = f"certified: proven lower bound within {stats['max_relative_gap']:.1e} (relative)"
        out["evidence"] = dict(out.get("evidence", {}), source=out["optimality"])
    return out
