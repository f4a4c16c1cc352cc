"""Data-quality gate, large tables: a table suite's row-level expectations checked in DuckDB.

`pushed_results` is the pushdown path of `recon.gate.run.validate`, for tables of at least
`PUSHDOWN_MIN_ROWS` rows. `_Pushdown` translates each expectation (not null, unique, compound
unique, in set, between, pair a > b, pair in set, table row count) to a `_Check` in SQL, with
pandas' semantics (NaN is missing, decimals compare as float64, a NULL in a pair comparison is
unexpected unless `ignore_row_if` drops it). One scan counts each check's rows and unexpected rows
exactly (`count`; a uniqueness check then groups only the rows whose key hash repeats), and the
first `SAMPLE` unexpected rows are found, plus, for a duplicate, one other row with its key
(`find`). GX then runs the suite on a batch of those rows and `CHECK_BLOCKS` blocks of
`CHECK_BLOCK_ROWS` ordinary rows, in table order (`batch`), and its element and unexpected counts
are replaced by the exact ones; the row counts run in GX on a frame of the table's length. If GX
and DuckDB disagree on the unexpected rows of that batch, or DuckDB refuses a translation,
`pushed_results` returns None and the suite is read whole. Expectations without a translation run
on a read of their own columns.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import duckdb

from .suites import (
    JSON_CHARS,
    SAMPLE,
    Suite,
    batch_sql,
    condition_text,
    indexed,
    quoted,
    raised,
    select_list,
    table_columns,
    wanted_columns,
)

if TYPE_CHECKING:
    from .gx import GxSession

log = logging.getLogger(__name__)

CHECK_BLOCKS, CHECK_BLOCK_ROWS = 8, 64  # ordinary rows beside the unexpected ones in that batch
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

    def __init__(self, table: str, cols: list[tuple[str, str]], where: str | None = None):
        self.table, self.types = table, dict(cols)
        self.scope = where  # the run's rows of the table (Suite.where); None: every row

    def rows(self, *conds: str) -> str:
        """`<table> [where …]`: the table's rows in scope that meet every condition."""
        conds = tuple(c for c in (self.scope, *conds) if c)
        return self.table + (" where " + " and ".join(f"({c})" for c in conds) if conds else "")

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
        t, c = self.types[self._col(name)], quoted(name)
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
        t, c = self.types[self._col(name)], quoted(name)
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
            fast = (f"count(*) - count({quoted(col)})"
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
                return f"{quoted(col)} is null" if v is None else f"{quoted(col)} is not distinct from {self.literal(v, 'str')}"
            holds = "(" + (" or ".join(f"({same(a, x)} and {same(b, y)})" for x, y in pairs) or "false") + ")"
        return _Check(index, "row", domain, f"(not {ignore} and not {holds})")

    # -- the scans
    def count(self, con, checks: list[_Check]) -> tuple[int, int, int]:
        """Fill each check's exact element and unexpected counts; (rows, min rowid, max rowid)."""
        counted = [c for c in checks if c.kind != "table"]
        sel = ["count(*)", "min(rowid)", "max(rowid)"]
        for c in counted:
            sel.append(f"count(*) filter (where {c.domain})")
            if c.kind == "row":
                sel.append(c.fast_count or f"count(*) filter (where {c.flagged})")
        got = list(con.execute(f"select {', '.join(sel)} from {self.rows()}").fetchall()[0])
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
                f"select hash({', '.join(c.keys)}) as h from {self.rows(c.live)} "
                "group by h having count(*) > 1").fetchall()]
            if c.repeated:
                c.unexpected_count = con.execute(
                    f"select coalesce(sum(n), 0) from (select count(*) as n from "
                    f"{self.rows(c.live, c.repeats)} group by {', '.join(c.keys)} having count(*) > 1)",
                    [c.repeated]).fetchall()[0][0]
        return n, lo, hi

    def find(self, con, checks: list[_Check]) -> None:
        """The first `SAMPLE` unexpected rows (rowids) of each failing check; a duplicate's first
        other row with the same key comes along, so the batch still holds the duplicate."""
        rows = [c for c in checks if c.kind == "row" and c.unexpected_count]
        if rows:
            got = con.execute("select " + ", ".join(f"min(rowid, {SAMPLE}) filter (where {c.flagged})"
                                                    for c in rows) + f" from {self.rows()}").fetchall()[0]
            for c, ids in zip(rows, got, strict=True):
                c.sample = tuple(ids or ())
        for c in checks:
            if c.kind != "unique" or not c.unexpected_count:
                continue
            keys = ", ".join(f"{k} as k{i}" for i, k in enumerate(c.keys))
            same = " and ".join(f"x.k{i} is not distinct from y.k{i}" for i in range(len(c.keys)))
            c.sample = tuple(r for (r,) in con.execute(f"""
                with live as (select rowid as r, {keys} from {self.rows(c.live, c.repeats)}),
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
        parts = " union all ".join(f"select rowid as __row, * from {self.rows(f'rowid between {a} and {b}')}"
                                   for a, b in merged) or f"select rowid as __row, * from {self.table} limit 0"
        frame = con.sql(f"with batch as ({parts}) select {', '.join(select_list(cols, wanted) + flags)} "
                        "from batch order by __row").df()
        flag_cols = [c for c in frame.columns if c.startswith("__flag")]
        return frame.drop(columns=flag_cols), frame[flag_cols]


def pushed_results(con, session: GxSession, suite: Suite, min_rows: int):
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
    if con.execute(f"select count(*) from {_Pushdown(suite.table, cols, suite.where).rows()}"
                   ).fetchall()[0][0] < min_rows:
        return None
    try:
        return _pushdown(con, session, suite, cols)
    except duckdb.Error as err:  # a translation DuckDB refuses: the ordinary read still answers
        log.warning("%s: checking in DuckDB failed (%s); reading the table instead", suite.name, err)
        return None


def _pushdown(con, session: GxSession, suite: Suite, cols):
    import pandas as pd

    push = _Pushdown(suite.table, cols, suite.where)
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
        got = dict(indexed(suite, session.run(sub, batch)))
        for c in row_checks:
            res = got.get(c.index)
            r = res.result if res is not None else None
            in_batch = int(flags[f"__flag{c.index}"].sum())
            if (r is None or raised(res)
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
        results += indexed(suite, session.run(sub, pd.DataFrame(index=pd.RangeIndex(n))))
    if rest:
        sub = replace(suite, expectations=tuple(suite.expectations[i] for i in rest))
        results += indexed(suite, session.run(sub, con.sql(batch_sql(con, sub)).df()))
    return results

