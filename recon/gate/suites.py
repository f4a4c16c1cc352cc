"""Data-quality gate, the suites: `expectations/*.json` read and checked as plain JSON (no GX
import), the SQL that reads a suite's batch from DuckDB, and GX's results put back in the suite
file's order. `recon.gate.run` explains the design.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from ..sqlfiles import query as sql_query

SUITE_DIR = Path(__file__).resolve().parent.parent.parent / "expectations"
SEVERITIES = ("critical", "warning")
SCOPES = ("file", "day")  # meta.scope.by
SAMPLE = 5            # unexpected rows named in a message
JSON_CHARS = 200      # JSON columns are read truncated to this many characters
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    table: str | None
    query: str | None
    row_key: tuple[str, ...]
    expectations: tuple[dict, ...]
    # `meta.scope`: how a run may check only its own rows, ("file" | "day", column): the rows
    # of the files it landed, or of the days it built (`recon.gate.scope.Scope`); None: always all
    scope: tuple[str, str] | None = None
    where: str | None = None  # this run's predicate on the batch's rows (None: every row)

    def label(self, exp: dict) -> str:
        return f"{exp['type']}({columns_of(exp['kwargs']) or ''})"


def columns_of(kwargs: dict) -> str | None:
    """The column(s) an expectation checks and its row condition, for `validation_results.column`.

    With the type, this identifies an expectation within its suite (checked by `load_suites`).
    """
    if kwargs.get("column"):
        cols = kwargs["column"]
    elif kwargs.get("column_A"):
        cols = f"{kwargs['column_A']}, {kwargs['column_B']}"
    elif kwargs.get("column_list"):
        cols = ", ".join(kwargs["column_list"])
    else:
        cols = None
    cond = kwargs.get("row_condition")
    if cond:
        return f"{cols or ''} where {condition_text(cond)}".strip()
    return cols


def condition_columns(cond) -> set[str]:
    """Columns named by a row condition: GX's serialized Condition (dicts) or a legacy string."""
    if isinstance(cond, str):
        return set(_IDENT.findall(cond))
    if isinstance(cond, dict):
        col = cond.get("column")
        names = {col["name"]} if isinstance(col, dict) and "name" in col else set()
        for sub in cond.get("conditions") or ():
            names |= condition_columns(sub)
        return names
    return set()


def condition_text(cond) -> str:
    """`col op 'value'`, the same for the suite's JSON and GX's parsed Condition object."""
    if hasattr(cond, "dict"):  # a GX Condition (pydantic)
        cond = cond.dict()
    if isinstance(cond, dict):
        if "conditions" in cond:
            return f" {cond.get('type', 'and')} ".join(f"({condition_text(c)})" for c in cond["conditions"])
        col = (cond.get("column") or {}).get("name")
        if cond.get("type") == "nullity":
            return f"{col} is {'null' if cond.get('is_null') else 'not null'}"
        op = cond.get("operator")
        return f"{col} {getattr(op, 'value', op)} {cond.get('parameter')!r}"
    return str(cond)


def load_suites(suite_dir: str | Path | None = None, names=None) -> list[Suite]:
    """Read and check every `*.json` suite of `suite_dir` (or only those named in `names`)."""
    suite_dir = Path(suite_dir) if suite_dir else SUITE_DIR
    out = []
    for path in sorted(suite_dir.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        name, meta = doc.get("name"), doc.get("meta") or {}
        where = f"{path.name}"
        if name != path.stem:
            raise ValueError(f"{where}: suite name {name!r} must equal the file name {path.stem!r}")
        if names is not None and name not in names:
            continue
        query = meta.get("query")
        if bool(query) + bool(meta.get("query_file")) + bool(meta.get("table")) != 1:
            raise ValueError(f"{where}: meta needs exactly one of 'table', 'query_file' or 'query'")
        if meta.get("query_file"):  # a file of sql/queries/, named with its .sql
            file = meta["query_file"]
            if not file.endswith(".sql") or "/" in file:
                raise ValueError(f"{where}: meta.query_file names a file of sql/queries/, "
                                 f"such as tieout__billed_seconds.sql; is {file!r}")
            query = sql_query(file.removesuffix(".sql"))
        exps = doc.get("expectations") or []
        seen = set()
        for i, e in enumerate(exps):
            sev = (e.get("meta") or {}).get("severity")
            if sev not in SEVERITIES:
                raise ValueError(f"{where}: expectations[{i}] ({e.get('type')}) needs meta.severity "
                                 f"in {SEVERITIES}, has {sev!r}")
            key = (e["type"], columns_of(e.get("kwargs") or {}))
            if key in seen:
                raise ValueError(f"{where}: two {e['type']} on {key[1]}: results are keyed by "
                                 "(suite, expectation, column), merge them or add a row_condition")
            seen.add(key)
        scope = meta.get("scope")
        if scope is not None:
            if (not isinstance(scope, dict) or set(scope) != {"by", "column"}
                    or scope["by"] not in SCOPES or not isinstance(scope["column"], str)
                    or not _IDENT.fullmatch(scope["column"])):
                raise ValueError(f"{where}: meta.scope must be {{\"by\": one of {SCOPES}, "
                                 f"\"column\": a column name}}, is {scope!r}")
            scope = (scope["by"], scope["column"])
        out.append(Suite(name=name, path=path, table=meta.get("table"), query=query,
                         row_key=tuple(meta.get("row_key") or ()), expectations=tuple(exps),
                         scope=scope))
    if names is not None:
        missing = set(names) - {s.name for s in out}
        if missing:
            raise ValueError(f"no suite named {sorted(missing)} in {suite_dir}")
    return out


def table_columns(con, table: str) -> list[tuple[str, str]]:
    """(name, DuckDB type) of a table's or view's columns; raises if there is none."""
    schema, _, name = table.rpartition(".")
    cols = con.execute("select column_name, data_type from information_schema.columns "
                       "where table_schema = ? and table_name = ? order by ordinal_position",
                       [schema or "main", name]).fetchall()
    if not cols:
        raise duckdb.CatalogException(f"table {table} does not exist")
    return cols


def wanted_columns(suite: Suite) -> set[str]:
    """The columns a table suite reads: its row key and what its expectations name."""
    wanted = set(suite.row_key)
    for e in suite.expectations:
        kw = e.get("kwargs") or {}
        wanted.update(c for k in ("column", "column_A", "column_B") if (c := kw.get(k)))
        wanted.update(kw.get("column_list") or ())
        wanted.update(condition_columns(kw.get("row_condition")))
    return wanted


def select_list(cols: list[tuple[str, str]], wanted: set[str]) -> list[str]:
    return [f'left(cast({quoted(c)} as varchar), {JSON_CHARS}) as {quoted(c)}' if t == "JSON" else quoted(c)
            for c, t in cols if c in wanted]


def batch_sql(con, suite: Suite) -> str:
    """The SELECT whose result is the suite's batch."""
    if suite.query:
        return suite.query if suite.where is None else (
            f"select * from (\n{suite.query}\n) where {suite.where}")
    select = select_list(table_columns(con, suite.table), wanted_columns(suite))
    where = "" if suite.where is None else f" where {suite.where}"
    return f"select {', '.join(select) or '1 as _row'} from {suite.table}{where}"


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def indexed(suite: Suite, results) -> list[tuple[int, object]]:
    """GX results with the index of their expectation in the suite file (GX reorders them)."""
    where = {(e["type"], columns_of(e.get("kwargs") or {})): i for i, e in enumerate(suite.expectations)}
    return [(where.get((r.expectation_config.type, columns_of(r.expectation_config.kwargs)),
                       len(where) + n), r) for n, r in enumerate(results)]


def raised(res) -> dict | None:
    """The exception a GX result carries ({exception_message, exception_traceback}), else None.

    GX gives one `ExceptionInfo` when the expectation itself raised, but `{metric id:
    ExceptionInfo}` when a metric it needs raised (a bad regex, a column of the wrong type):
    that form has no `raised_exception` key, so reading it as the first form would take the
    error for an ordinary failure ("observed None of None rows unexpected").
    """
    exc = res.exception_info or {}
    if "raised_exception" in exc:
        return dict(exc) if exc.get("raised_exception") else None
    inner = [v for v in exc.values() if isinstance(v, dict) and v.get("raised_exception", True)]
    return dict(inner[0]) if inner else None
