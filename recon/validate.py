"""Data-quality gate: the Great Expectations suites of `expectations/*.json`, run on the warehouse.

Each suite file is a GX 1.x ExpectationSuite (`name`, `expectations: [{type, kwargs, meta}]`) whose
`meta` says what to validate: `table` (a DuckDB table) or `query` (SQL, a string or a list of
lines: the tie-outs), and `row_key` (the columns that name a row in failure messages). Every
expectation carries `meta.severity`: `critical` (the run is not fit to publish) or `warning`.

GX runs on pandas DataFrames read from DuckDB (`con.sql(q).df()`), never through SQLAlchemy:
GX 1.24 with duckdb-engine reports wrong failures (GX #10738, #11579). A table suite reads only the
columns its expectations, row key and row conditions name; JSON columns are cut to their first
200 characters (the suites only test their presence). Decimals arrive as float64, DATE as
datetime64. great_expectations is imported inside `GxSession` (it takes seconds), once per
`validate` call unless the caller passes a session to reuse.

Large tables (`PUSHDOWN_MIN_ROWS` rows or more) are not read whole: their row-level expectations
(not null, unique, compound unique, in set, between, pair a > b, pair in set, table row count) are
pushed down to DuckDB (`_Pushdown`): one scan counts each expectation's rows and unexpected rows
exactly, with pandas' semantics (NaN is missing, decimals compare as float64, a NULL in a pair
comparison is unexpected unless `ignore_row_if` drops it), and finds the first `SAMPLE` unexpected
rows (plus, for a duplicate, one other row with its key). GX then runs the suite on a small batch
made of those rows and `CHECK_BLOCKS` blocks of ordinary rows, in table order, so its failure
samples are the ones a full read would give; its element and unexpected counts are replaced by the
exact counts of the whole table. The unexpected rows DuckDB flags inside that batch must be the ones
GX flags, or the suite is validated again from a full read (`ValidationReport.paths` says which way
each suite went). Expectations without a translation run on a read of their own columns.

Results go to `marts.validation_results`, one row per expectation and run, replacing the rows of the
same run_id; within a suite they are in the suite file's order.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
import warnings
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb

log = logging.getLogger(__name__)

SUITE_DIR = Path(__file__).resolve().parent.parent / "expectations"
SEVERITIES = ("critical", "warning")
SAMPLE = 5            # unexpected rows named in a message
JSON_CHARS = 200      # JSON columns are read truncated to this many characters
PUSHDOWN_MIN_ROWS = 10_000  # tables this large are checked in DuckDB, GX sees a small batch
CHECK_BLOCKS, CHECK_BLOCK_ROWS = 8, 64  # ordinary rows beside the unexpected ones in that batch
RESULTS_DDL = """create table if not exists marts.validation_results (
    run_id varchar not null, suite varchar not null, expectation varchar not null,
    "column" varchar, success boolean not null, observed_value varchar, unexpected_count bigint,
    severity varchar not null, message varchar, checked_at timestamptz not null)"""
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# ---------------------------------------------------------------- suites (plain JSON, no GX)

@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    table: str | None
    query: str | None
    row_key: tuple[str, ...]
    expectations: tuple[dict, ...]

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
        if isinstance(query, list):
            query = "\n".join(query)
        if bool(query) == bool(meta.get("table")):
            raise ValueError(f"{where}: meta needs exactly one of 'table' or 'query'")
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
        out.append(Suite(name=name, path=path, table=meta.get("table"), query=query,
                         row_key=tuple(meta.get("row_key") or ()), expectations=tuple(exps)))
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
    return [f'left(cast({_q(c)} as varchar), {JSON_CHARS}) as {_q(c)}' if t == "JSON" else _q(c)
            for c, t in cols if c in wanted]


def batch_sql(con, suite: Suite) -> str:
    """The SELECT whose result is the suite's batch."""
    if suite.query:
        return suite.query
    select = select_list(table_columns(con, suite.table), wanted_columns(suite))
    return f"select {', '.join(select) or '1 as _row'} from {suite.table}"


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# ---------------------------------------------------------------- pushdown (large tables)

NOT_NULL, IN_SET, BETWEEN = ("expect_column_values_to_not_be_null", "expect_column_values_to_be_in_set",
                             "expect_column_values_to_be_between")
UNIQUE, COMPOUND_UNIQUE = "expect_column_values_to_be_unique", "expect_compound_columns_to_be_unique"
PAIR_GT, PAIR_IN_SET = ("expect_column_pair_values_a_to_be_greater_than_b",
                        "expect_column_pair_values_to_be_in_set")
ROW_COUNT_EQUAL, ROW_COUNT_BETWEEN = "expect_table_row_count_to_equal", "expect_table_row_count_to_be_between"
_PUSHED_KWARGS = {  # the kwargs each translated type may carry; anything else runs the ordinary way
    NOT_NULL: {"column", "row_condition"},
    IN_SET: {"column", "value_set", "row_condition"},
    BETWEEN: {"column", "min_value", "max_value", "strict_min", "strict_max", "row_condition"},
    UNIQUE: {"column", "row_condition"},
    COMPOUND_UNIQUE: {"column_list", "ignore_row_if", "row_condition"},
    PAIR_GT: {"column_A", "column_B", "or_equal", "ignore_row_if", "row_condition"},
    PAIR_IN_SET: {"column_A", "column_B", "value_pairs_set", "ignore_row_if"},
    ROW_COUNT_EQUAL: {"value"},
    ROW_COUNT_BETWEEN: {"min_value", "max_value"},
}
_INTEGERS = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}
_AS_FLOAT64 = {"HUGEINT", "UHUGEINT"}  # and DECIMAL(p, s): pandas gets float64
_TIMES = {"DATE", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE"}
_RESULT_SHARES = ("unexpected_percent", "missing_count", "missing_percent", "unexpected_percent_total",
                  "unexpected_percent_nonmissing", "partial_unexpected_counts")


class _Untranslatable(Exception):
    """This expectation has no exact SQL form here: it runs on a read of its columns."""


@dataclass
class _Check:
    """One expectation in SQL: the rows GX counts (`domain`) and which of them it finds unexpected.

    kind `row`: `bad` is a per-row predicate; `unique`: rows of the domain not `ignore`d whose
    `keys` repeat; `table`: the table's row count.
    """
    index: int
    kind: str
    domain: str = "true"
    bad: str = "false"
    fast_count: str | None = None
    keys: tuple[str, ...] = ()
    ignore: str = "false"
    element_count: int = 0
    unexpected_count: int = 0
    sample: tuple[int, ...] = ()
    repeated: list[int] = field(default_factory=list)  # `unique`: key hashes seen more than once

    @property
    def live(self) -> str:
        """`unique`: the rows whose keys are compared."""
        return f"(({self.domain}) and not ({self.ignore}))"

    @property
    def repeats(self) -> str:
        """`unique`: the row's key hash is one of `repeated` (the query's parameter). Rows sharing
        a key share its hash, so only these rows can be duplicates: the exact (and costlier)
        grouping by the key values runs on them alone."""
        return f"hash({', '.join(self.keys)}) in (select unnest(?::ubigint[]))"

    @property
    def flagged(self) -> str:
        """SQL: is the row unexpected, within the rows it is evaluated on (a batch or the table)."""
        if self.kind == "row":
            return f"(({self.domain}) and ({self.bad}))"
        return (f"case when {self.live} then count(*) over (partition by {self.live}, {', '.join(self.keys)}) > 1 "
                "else false end")


class _Pushdown:
    """Translate a table suite's expectations to SQL on that table, with pandas' semantics."""

    def __init__(self, table: str, cols: list[tuple[str, str]]):
        self.table, self.types = table, dict(cols)

    # -- values as pandas holds them
    def _col(self, name) -> str:
        if not isinstance(name, str) or name not in self.types:
            raise _Untranslatable(f"column {name!r}")
        return name

    def family(self, name: str) -> str:
        t = self.types[self._col(name)]
        if t in _INTEGERS or t in _AS_FLOAT64 or t == "DOUBLE" or t.startswith("DECIMAL"):
            return "num"  # FLOAT (float32 in pandas, compared in float32) is left out on purpose
        return {"VARCHAR": "str", "JSON": "json", "BOOLEAN": "bool"}.get(t, "time" if t in _TIMES else "other")

    def value(self, name: str) -> str:
        """The column as the pandas batch holds it: decimals as float64, NaN as missing, JSON cut."""
        t, c = self.types[self._col(name)], _q(name)
        if t.startswith("DECIMAL"):
            # DuckDB hands pandas double(unscaled integer) / 10^scale, which is not always
            # cast(x as double) (that rounds once, correctly): 9999999.999999999 becomes 1e7
            m = re.fullmatch(r"DECIMAL\(\d+,\s*(\d+)\)", t)
            if not m or int(m.group(1)) > 18:  # the fraction times 10^scale would not fit
                raise _Untranslatable(f"{t} column {name}")
            p = 10 ** int(m.group(1))
            return (f"(cast(cast(trunc({c}) as hugeint) * {p}::hugeint + cast(({c} - trunc({c})) * {p}::hugeint "
                    f"as hugeint) as double) / {float(p)!r})")
        if t in _AS_FLOAT64:
            return f"cast({c} as double)"
        if t == "DOUBLE":
            return f"(case when isnan({c}) then null else {c} end)"
        if t == "JSON":
            return f"left(cast({c} as varchar), {JSON_CHARS})"
        return c

    def missing(self, name: str) -> str:
        t, c = self.types[self._col(name)], _q(name)
        return f"({c} is null or isnan({c}))" if t == "DOUBLE" else f"({c} is null)"

    @staticmethod
    def literal(v, family: str) -> str:
        if family == "str" and isinstance(v, str):
            return "'" + v.replace("'", "''") + "'"
        if family == "num" and isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2 ** 53:
            return str(v)
        if family == "num" and isinstance(v, float) and math.isfinite(v):
            return f"{v!r}::double"
        raise _Untranslatable(f"value {v!r} for a {family} column")

    def condition(self, cond) -> str:
        """A serialized GX row condition as pandas' `DataFrame.query` evaluates it."""
        if cond is None:
            return "true"
        if not isinstance(cond, dict):
            raise _Untranslatable("a string row_condition")
        kind = cond.get("type")
        if kind in ("and", "or") and cond.get("conditions"):
            return "(" + f" {kind} ".join(self.condition(c) for c in cond["conditions"]) + ")"
        col = (cond.get("column") or {}).get("name")
        if kind == "nullity":
            return self.missing(col) if cond.get("is_null") else f"(not {self.missing(col)})"
        if kind == "comparison" and cond.get("operator") in ("==", "!="):
            fam = self.family(col)
            lit = self.literal(cond.get("parameter"), fam if fam in ("str", "num") else "-")
            if cond["operator"] == "==":  # NaN == x is False, NaN != x is True
                return f"coalesce({self.value(col)} = {lit}, false)"
            return f"coalesce({self.value(col)} <> {lit}, true)"
        raise _Untranslatable(f"row_condition {condition_text(cond)}")

    # -- expectations
    def check(self, index: int, exp: dict) -> _Check:
        kind, kw = exp["type"], dict(exp.get("kwargs") or {})
        if kind not in _PUSHED_KWARGS or set(kw) - _PUSHED_KWARGS[kind]:
            raise _Untranslatable(kind)
        if kind in (ROW_COUNT_EQUAL, ROW_COUNT_BETWEEN):
            return _Check(index, "table")
        domain = self.condition(kw.get("row_condition"))
        if kind == NOT_NULL:
            col = self._col(kw.get("column"))
            fast = (f"count(*) - count({_q(col)})"
                    if domain == "true" and self.types[col] != "DOUBLE" else None)
            return _Check(index, "row", domain, self.missing(col), fast)
        if kind == IN_SET:
            col, values = kw.get("column"), kw.get("value_set")
            fam = self.family(col)
            if not isinstance(values, list) or fam not in ("str", "num"):
                raise _Untranslatable(f"{kind} on a {fam} column")
            inside = (f"coalesce({self.value(col)} in ({', '.join(self.literal(v, fam) for v in values)}), false)"
                      if values else "false")
            return _Check(index, "row", domain, f"(not {self.missing(col)} and not {inside})")
        if kind == BETWEEN:
            col, lo, hi = kw.get("column"), kw.get("min_value"), kw.get("max_value")
            if self.family(col) != "num" or (lo is None and hi is None) or (
                    lo is not None and hi is not None and not lo <= hi):
                raise _Untranslatable(kind)
            v, tests = self.value(col), []
            if lo is not None:
                tests.append(f"{v} {'>' if kw.get('strict_min') else '>='} {self.literal(lo, 'num')}")
            if hi is not None:
                tests.append(f"{v} {'<' if kw.get('strict_max') else '<='} {self.literal(hi, 'num')}")
            return _Check(index, "row", domain, f"(not {self.missing(col)} and not ({' and '.join(tests)}))")
        if kind in (UNIQUE, COMPOUND_UNIQUE):
            cols = [kw.get("column")] if kind == UNIQUE else kw.get("column_list")
            if not isinstance(cols, list) or not cols or any(
                    self.family(c) not in ("str", "num", "time", "json", "bool") for c in cols):
                raise _Untranslatable(kind)
            how = "unique" if kind == UNIQUE else kw.get("ignore_row_if", "all_values_are_missing")
            ignore = {"unique": self.missing(cols[0]),
                      "all_values_are_missing": " and ".join(self.missing(c) for c in cols),
                      "any_value_is_missing": " or ".join(self.missing(c) for c in cols),
                      "never": "false"}.get(how)
            if ignore is None:
                raise _Untranslatable(f"ignore_row_if {how!r}")
            return _Check(index, "unique", domain, keys=tuple(self.value(c) for c in cols), ignore=ignore)
        # the column pairs
        a, b = kw.get("column_A"), kw.get("column_B")
        how = kw.get("ignore_row_if", "both_values_are_missing")
        ignore = {"both_values_are_missing": f"({self.missing(a)} and {self.missing(b)})",
                  "either_value_is_missing": f"({self.missing(a)} or {self.missing(b)})",
                  "neither": "false"}.get(how)
        if ignore is None:
            raise _Untranslatable(f"ignore_row_if {how!r}")
        if kind == PAIR_GT:
            fa, fb = self.family(a), self.family(b)
            if not (fa == fb == "num" or (fa == fb == "time" and self.types[a] == self.types[b])):
                raise _Untranslatable(f"{kind} on {self.types[a]}, {self.types[b]}")
            op = ">=" if kw.get("or_equal") else ">"
            holds = f"coalesce({self.value(a)} {op} {self.value(b)}, false)"  # NULL/NaN/NaT: False
        else:
            pairs = kw.get("value_pairs_set")
            if (self.family(a), self.family(b)) != ("str", "str") or not isinstance(pairs, list) or any(
                    not isinstance(p, (list, tuple)) or len(p) != 2 for p in pairs):
                raise _Untranslatable(kind)

            def same(col, v):
                return f"{_q(col)} is null" if v is None else f"{_q(col)} is not distinct from {self.literal(v, 'str')}"
            holds = "(" + (" or ".join(f"({same(a, x)} and {same(b, y)})" for x, y in pairs) or "false") + ")"
        return _Check(index, "row", domain, f"(not {ignore} and not {holds})")

    # -- the scans
    def count(self, con, checks: list[_Check]) -> tuple[int, int, int]:
        """Fill each check's exact element and unexpected counts; (rows, min rowid, max rowid)."""
        t, counted = self.table, [c for c in checks if c.kind != "table"]
        sel = ["count(*)", "min(rowid)", "max(rowid)"]
        for c in counted:
            sel.append(f"count(*) filter (where {c.domain})")
            if c.kind == "row":
                sel.append(c.fast_count or f"count(*) filter (where {c.flagged})")
        got = list(con.execute(f"select {', '.join(sel)} from {t}").fetchall()[0])
        n, lo, hi = got[:3]
        del got[:3]
        for c in checks:
            if c.kind == "table":
                c.element_count = n
                continue
            c.element_count = got.pop(0)
            if c.kind == "row":
                c.unexpected_count = got.pop(0)
                continue
            # duplicates: rows sharing a key share its hash, so no repeated hash = no duplicate
            # (cheap: a hash table of 64-bit integers); else count exactly among those rows
            c.repeated = [h for (h,) in con.execute(
                f"select hash({', '.join(c.keys)}) as h from {t} where {c.live} "
                "group by h having count(*) > 1").fetchall()]
            if c.repeated:
                c.unexpected_count = con.execute(
                    f"select coalesce(sum(n), 0) from (select count(*) as n from {t} where {c.live} "
                    f"and {c.repeats} group by {', '.join(c.keys)} having count(*) > 1)",
                    [c.repeated]).fetchall()[0][0]
        return n, lo, hi

    def find(self, con, checks: list[_Check]) -> None:
        """The first `SAMPLE` unexpected rows (rowids) of each failing check; a duplicate's first
        other row with the same key comes along, so the batch still holds the duplicate."""
        t, rows = self.table, [c for c in checks if c.kind == "row" and c.unexpected_count]
        if rows:
            got = con.execute("select " + ", ".join(f"min(rowid, {SAMPLE}) filter (where {c.flagged})"
                                                    for c in rows) + f" from {t}").fetchall()[0]
            for c, ids in zip(rows, got, strict=True):
                c.sample = tuple(ids or ())
        for c in checks:
            if c.kind != "unique" or not c.unexpected_count:
                continue
            keys = ", ".join(f"{k} as k{i}" for i, k in enumerate(c.keys))
            same = " and ".join(f"x.k{i} is not distinct from y.k{i}" for i in range(len(c.keys)))
            c.sample = tuple(r for (r,) in con.execute(f"""
                with live as (select rowid as r, {keys} from {t} where {c.live} and {c.repeats}),
                dup as (select * exclude (n) from (select {', '.join(f'k{i}' for i in range(len(c.keys)))},
                        count(*) as n from live group by all) where n > 1),
                member as (select x.* from live x semi join dup y on {same}),
                first as (select * from member order by r limit {SAMPLE})
                select r from first
                union select (select min(x.r) from member x where {same} and x.r <> y.r) from first y
                order by 1""", [c.repeated]).fetchall())

    def batch(self, con, checks: list[_Check], wanted: set[str], lo: int, hi: int):
        """The unexpected rows found plus `CHECK_BLOCKS` blocks of rows, in table order, as the
        suite's batch; and, per check, whether SQL flags each of its rows."""
        ranges = []
        if hi is not None:
            step = max((hi - lo + 1) // CHECK_BLOCKS, 1)
            ranges = [(s, s + CHECK_BLOCK_ROWS - 1) for s in range(lo, hi + 1, step)][:CHECK_BLOCKS]
        ranges += [(r, r) for c in checks for r in c.sample]
        merged: list[list[int]] = []
        for a, b in sorted(ranges):
            if merged and a <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        cols = list(self.types.items())
        flags = [f"{c.flagged} as __flag{c.index}" for c in checks if c.kind != "table"]
        parts = " union all ".join(f"select rowid as __row, * from {self.table} where rowid between {a} and {b}"
                                   for a, b in merged) or f"select rowid as __row, * from {self.table} limit 0"
        frame = con.sql(f"with batch as ({parts}) select {', '.join(select_list(cols, wanted) + flags)} "
                        "from batch order by __row").df()
        flag_cols = [c for c in frame.columns if c.startswith("__flag")]
        return frame.drop(columns=flag_cols), frame[flag_cols]


# ---------------------------------------------------------------- report

@dataclass
class Failure:
    suite: str
    expectation: str
    column: str | None
    severity: str
    unexpected_count: int | None
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass
class ValidationReport:
    run_id: str
    suites: int = 0
    evaluated: int = 0
    passed: int = 0
    failed: int = 0
    critical_failures: list[Failure] = field(default_factory=list)
    warnings: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    paths: dict[str, str] = field(default_factory=dict)  # suite -> "full" or "pushdown"
    rows: list[tuple] = field(default_factory=list)  # the marts.validation_results rows, in order

    @property
    def success(self) -> bool:
        """True when every critical expectation held (warnings do not fail a run)."""
        return not self.critical_failures

    def summary(self) -> str:
        head = (f"validation {self.run_id}: {self.suites} suites, {self.evaluated} expectations, "
                f"{self.passed} passed, {len(self.critical_failures)} critical and "
                f"{len(self.warnings)} warning failures ({self.seconds:.1f} s)")
        return "\n".join([head, *(f"  CRITICAL {f}" for f in self.critical_failures),
                          *(f"  warning  {f}" for f in self.warnings)])


# ---------------------------------------------------------------- GX

class GxSession:
    """One ephemeral GX context with a pandas data source; reusable across `validate` calls."""

    def __init__(self) -> None:
        t0 = time.perf_counter()
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig
        from great_expectations.expectations.expectation_configuration import (
            ExpectationConfiguration,
        )

        self._gx, self._config = gx, ExpectationConfiguration
        self.context = gx.get_context(mode="ephemeral")
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        source = self.context.data_sources.add_pandas("recon")
        self._batches = source.add_dataframe_asset("batch").add_batch_definition_whole_dataframe("all")
        self._suites: dict[tuple[str, str], object] = {}
        self.startup_seconds = time.perf_counter() - t0

    def suite(self, suite: Suite):
        """The GX ExpectationSuite of `suite`; a bad expectation raises (GX would only log it)."""
        key = (suite.name, json.dumps(suite.expectations, sort_keys=True))
        if key not in self._suites:
            exps = []
            for e in suite.expectations:
                try:
                    exps.append(self._config(type=e["type"], kwargs=e.get("kwargs") or {},
                                             meta=e.get("meta"),
                                             severity=e["meta"]["severity"]).to_domain_obj())
                except Exception as err:  # GX raises several unrelated types here
                    raise ValueError(f"{suite.path.name}: {suite.label(e)}: {err}") from err
            self._suites[key] = self._gx.ExpectationSuite(name=suite.name, expectations=exps)
        return self._suites[key]

    def run(self, suite: Suite, df):
        result_format = {"result_format": "SUMMARY", "partial_unexpected_count": SAMPLE,
                         "unexpected_index_column_names": [c for c in suite.row_key if c in df.columns]}
        batch = self._batches.get_batch(batch_parameters={"dataframe": df})
        with warnings.catch_warnings():
            # GX compares tz-aware columns through Series.values (UTC, correct); pandas 3.1 warns
            warnings.filterwarnings("ignore", message="Series.values returning an ndarray that drops")
            return batch.validate(self.suite(suite), result_format=result_format).results


def _fmt(v) -> str:
    """A value as it reads in a message: NULL, 2026-06-01, 2026-06-01T07:06:01Z, 86401, 0.5."""
    import pandas as pd  # already loaded: the batches are pandas

    if v is None:
        return "NULL"
    try:
        if pd.isna(v):  # NaN, NaT, pd.NA
            return "NULL"
    except (TypeError, ValueError):  # containers
        pass
    if isinstance(v, datetime):  # includes pandas Timestamp
        if v.tzinfo is None and (v.hour, v.minute, v.second, v.microsecond) == (0, 0, 0, 0):
            return v.date().isoformat()  # a DATE column read by pandas
        return v.isoformat().replace("+00:00", "Z")
    if isinstance(v, date):
        return v.isoformat()
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # numpy scalar
        try:
            return _fmt(v.item())
        except (ValueError, AttributeError):
            return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    if isinstance(v, tuple):
        return "(" + ", ".join(_fmt(x) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}={_fmt(x)}" for k, x in v.items()) + "}"
    return str(v)


def _describe(suite: Suite, cfg, res) -> tuple[bool, str, int | None, str]:
    """(success, observed_value, unexpected_count, message) of one GX expectation result."""
    r = res.result or {}
    kw = cfg.kwargs
    what = f"{suite.name}: {cfg.type}({columns_of(kw) or ''})"
    exc = res.exception_info or {}
    if exc.get("raised_exception"):
        msg = exc.get("exception_message") or "raised an exception"
        return False, f"error: {msg}"[:500], None, f"{what} could not be evaluated: {msg}"
    n_bad, n = r.get("unexpected_count"), r.get("element_count")
    if "observed_value" in r:
        observed = _fmt(r["observed_value"])
    else:
        sample = ", ".join(_fmt(x) for x in (r.get("partial_unexpected_list") or [])[:SAMPLE])
        observed = f"{n_bad} of {n} rows unexpected" + (f": {sample}" if sample else "")
    if res.success:
        return True, observed, n_bad, ""
    rows = r.get("partial_unexpected_index_list") or []
    if rows:
        key = [c for c in suite.row_key if c in rows[0]]
        named = "; ".join(
            ", ".join(f"{c}={_fmt(row.get(c))}" for c in key)
            + (" (" + ", ".join(f"{c}={_fmt(v)}" for c, v in row.items() if c not in key) + ")"
               if any(c not in key for c in row) else "")
            for row in rows[:SAMPLE])
        more = f" and {n_bad - len(rows[:SAMPLE])} more" if n_bad and n_bad > SAMPLE else ""
        msg = f"{what}: {n_bad} of {n} rows fail: {named}{more}"
    elif n_bad:
        msg = f"{what}: {n_bad} of {n} rows fail: {observed}"
    else:
        bounds = {k: kw[k] for k in ("value", "min_value", "max_value", "value_set") if k in kw}
        msg = f"{what}: observed {observed}, expected {_fmt(bounds)}"
    return False, observed, n_bad, msg


# ---------------------------------------------------------------- entry point

def validate(con, run_id: str, *, suites=None, suite_dir: str | Path | None = None,
             session: GxSession | None = None, write: bool = True,
             pushdown_min_rows: int | None = PUSHDOWN_MIN_ROWS) -> ValidationReport:
    """Validate the warehouse behind `con` against the suites; write `marts.validation_results`.

    `suites` limits the run to those suite names; `session` reuses a GX context (tests);
    `write=False` only returns the report (for read-only connections). Table suites of at least
    `pushdown_min_rows` rows are checked in DuckDB with GX on a small batch (None: never).
    """
    t0 = time.perf_counter()
    specs = load_suites(suite_dir, suites)
    con.complete()  # DuckDB 2.0 refuses other work while a caller's result is left unfetched
    session = session or GxSession()
    report = ValidationReport(run_id=run_id, suites=len(specs))
    checked_at = datetime.now(UTC)
    rows = report.rows

    def record(suite, expectation, column, severity, ok, observed, n_bad, message):
        rows.append((run_id, suite.name, expectation, column, ok, observed, n_bad, severity,
                     message or None, checked_at))
        report.evaluated += 1
        if ok:
            report.passed += 1
            return
        report.failed += 1
        f = Failure(suite.name, expectation, column, severity, n_bad, message)
        (report.critical_failures if severity == "critical" else report.warnings).append(f)

    for suite in specs:
        try:
            results, report.paths[suite.name] = _suite_results(con, session, suite, pushdown_min_rows)
        except duckdb.Error as err:
            record(suite, "batch_query", None, "critical", False, None, None,
                   f"{suite.name}: its batch could not be read, no expectation ran: {err}")
            continue
        for _, res in sorted(results, key=lambda ir: ir[0]):
            cfg = res.expectation_config
            ok, observed, n_bad, msg = _describe(suite, cfg, res)
            record(suite, cfg.type, columns_of(cfg.kwargs), (cfg.meta or {}).get("severity", "critical"),
                   ok, observed, n_bad, msg)

    if write:
        _write(con, run_id, rows)
    report.seconds = time.perf_counter() - t0
    log.info(report.summary())
    return report


def _indexed(suite: Suite, results) -> list[tuple[int, object]]:
    """GX results with the index of their expectation in the suite file (GX reorders them)."""
    where = {(e["type"], columns_of(e.get("kwargs") or {})): i for i, e in enumerate(suite.expectations)}
    return [(where.get((r.expectation_config.type, columns_of(r.expectation_config.kwargs)),
                       len(where) + n), r) for n, r in enumerate(results)]


def _suite_results(con, session: GxSession, suite: Suite, min_rows: int | None):
    """([(expectation index, GX result)], "pushdown" | "full") of one suite."""
    if suite.table and min_rows is not None:
        pushed = _pushed_results(con, session, suite, min_rows)
        if pushed is not None:
            return pushed, "pushdown"
    return _indexed(suite, session.run(suite, con.sql(batch_sql(con, suite)).df())), "full"


def _pushed_results(con, session: GxSession, suite: Suite, min_rows: int):
    """The suite checked in DuckDB with GX on a small batch; None if the table does not qualify
    (small, a view, missing) or SQL and GX disagree on that batch (then the full read decides)."""
    schema, _, name = suite.table.rpartition(".")
    found = con.execute("select estimated_size from duckdb_tables() where database_name = current_database() "
                        "and schema_name = ? and table_name = ?", [schema or "main", name]).fetchall()
    if not found:
        return None
    cols = table_columns(con, suite.table)
    if {c.lower() for c, _ in cols} & {"rowid", "__row"} or any(c.startswith("__flag") for c, _ in cols):
        return None
    # (no transaction of its own: a failed BEGIN inside the caller's transaction aborts that one)
    if con.execute(f"select count(*) from {suite.table}").fetchall()[0][0] < min_rows:
        return None
    try:
        return _pushdown(con, session, suite, cols)
    except duckdb.Error as err:  # a translation DuckDB refuses: the ordinary read still answers
        log.warning("%s: checking in DuckDB failed (%s); reading the table instead", suite.name, err)
        return None


def _pushdown(con, session: GxSession, suite: Suite, cols):
    import pandas as pd

    push = _Pushdown(suite.table, cols)
    checks, rest = [], []
    for i, e in enumerate(suite.expectations):
        try:
            checks.append(push.check(i, e))
        except _Untranslatable:
            rest.append(i)
    n, lo, hi = push.count(con, checks)
    push.find(con, checks)
    results = []
    row_checks = [c for c in checks if c.kind != "table"]
    if row_checks:
        batch, flags = push.batch(con, row_checks, wanted_columns(suite), lo, hi)
        sub = replace(suite, expectations=tuple(suite.expectations[c.index] for c in row_checks))
        got = dict(_indexed(suite, session.run(sub, batch)))
        for c in row_checks:
            res = got.get(c.index)
            r = res.result if res is not None else None
            in_batch = int(flags[f"__flag{c.index}"].sum())
            if (r is None or (res.exception_info or {}).get("raised_exception")
                    or r.get("unexpected_count") != in_batch or res.success != (c.unexpected_count == 0)):
                log.warning("%s: %s: GX and DuckDB disagree on a batch of %d rows (%s vs %d unexpected); "
                            "reading the table instead", suite.name, suite.label(suite.expectations[c.index]),
                            len(batch), (r or {}).get("unexpected_count"), in_batch)
                return None
            r["element_count"], r["unexpected_count"] = c.element_count, c.unexpected_count
            for k in _RESULT_SHARES:  # shares of the batch, not of the table
                r.pop(k, None)
            results.append((c.index, res))
    table_checks = [c for c in checks if c.kind == "table"]
    if table_checks:  # GX counts the rows of a frame of the table's length and no columns
        sub = replace(suite, expectations=tuple(suite.expectations[c.index] for c in table_checks))
        results += _indexed(suite, session.run(sub, pd.DataFrame(index=pd.RangeIndex(n))))
    if rest:
        sub = replace(suite, expectations=tuple(suite.expectations[i] for i in rest))
        results += _indexed(suite, session.run(sub, con.sql(batch_sql(con, sub)).df()))
    return results


def _write(con, run_id: str, rows: list[tuple]) -> None:
    """Replace the run's rows in one transaction (or inside the caller's, if one is open)."""
    try:
        con.execute("begin transaction")
        own = True
    except duckdb.TransactionException:
        own = False
    try:
        con.execute("create schema if not exists marts")
        con.execute(RESULTS_DDL)
        con.execute("delete from marts.validation_results where run_id = ?", [run_id])
        if rows:
            con.executemany("insert into marts.validation_results values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            rows)
        if own:
            con.execute("commit")
    except BaseException:
        if own:
            con.execute("rollback")
        raise
