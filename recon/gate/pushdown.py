"""Data-quality gate, large tables: a table suite's row-level expectations checked in DuckDB.

`pushed_results` is the pushdown path of `recon.gate.run.validate`, for tables of at least
`PUSHDOWN_MIN_ROWS` rows. `_Pushdown` translates each expectation (not null, unique, compound
unique, in set, between, pair a > b, pair in set, table row count) to a `_Check` in SQL, with
pandas' semantics (the translations are in `recon.gate.checks`). One scan counts each check's
rows and unexpected rows exactly (`count`; a uniqueness check then groups only the rows whose key
hash repeats), and the first `SAMPLE` unexpected rows are found, plus, for a duplicate, one other
row with its key (`find`). GX then runs the suite on a batch of those rows and `CHECK_BLOCKS`
blocks of `CHECK_BLOCK_ROWS` ordinary rows, in table order (`batch`), and its element and
unexpected counts are replaced by the exact ones; the row counts run in GX on a frame of the
table's length. If GX and DuckDB disagree on the unexpected rows of that batch, or DuckDB refuses
a translation, `pushed_results` returns None and the suite is read whole. Expectations without a
translation run on a read of their own columns.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

import duckdb

from .checks import _Check, _Translator, _Untranslatable
from .suites import (
    SAMPLE,
    Suite,
    batch_sql,
    indexed,
    raised,
    select_list,
    table_columns,
    wanted_columns,
)

if TYPE_CHECKING:
    from .gx import GxSession

log = logging.getLogger(__name__)

CHECK_BLOCKS, CHECK_BLOCK_ROWS = 8, 64  # ordinary rows beside the unexpected ones in that batch
_RESULT_SHARES = ("unexpected_percent", "missing_count", "missing_percent", "unexpected_percent_total",
                  "unexpected_percent_nonmissing", "partial_unexpected_counts")


class _Pushdown(_Translator):
    """A table suite checked in DuckDB: its expectations translated (`_Translator`), then each
    check's rows counted, its unexpected rows found, and the batch GX runs on is read."""

    def __init__(self, table: str, cols: list[tuple[str, str]], where: str | None = None):
        self.table, self.types = table, dict(cols)
        self.scope = where  # the run's rows of the table (Suite.where); None: every row

    def rows(self, *conds: str) -> str:
        """`<table> [where …]`: the table's rows in scope that meet every condition."""
        conds = tuple(c for c in (self.scope, *conds) if c)
        return self.table + (" where " + " and ".join(f"({c})" for c in conds) if conds else "")

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

