"""Incremental staging: parse only the raw rows of newly landed files.

A staging model with an `incremental` setting in sql/staging/_models.toml

    incremental = { strategy = "merge", key = [<columns>], order = "<order by list>" }
    incremental = { strategy = "append" }

is a per-row transform of `raw.*` rows. The setting *is* its dedupe: the model's SELECT yields
every row, and `create_deduped` keeps one row per key, the first under the order (the rows
`qualify row_number() over (partition by <key> order by <order>) = 1` keeps, which the tests
hold it to, ranking only the rows whose key repeats); `append` keeps every row. Such a model is
kept between runs. A run that only added files parses just those files' raw rows (the model's
SQL with every `raw.<t>` read through a view of the new files' rows) and merges them: rows of
the same key, old and new, compete again under the model's own order, so the table equals a
full rebuild. `meta.staged_files` records which landed files (by sha256) the staging tables
reflect, `meta.staged_models` what each incremental model was built with: a hash of its SQL and
its `incremental` and `bounds` settings (`model_settings.build_hash`).

A full rebuild happens when the model's SQL or those settings changed, when its table is
missing, or when a file the staging tables reflect was replaced or removed (its rows may have
won a key another file also holds: only a rebuild can tell the new winner). Staging costs then
grow with the day's new files, not with history (bench/README.md, "Day 30 vs day 1"). The
indexes of history that make merges and refolds cheap are in `recon.build.indexes`.
"""

from __future__ import annotations

import logging
import re

from .indexes import Indexes, bounds_select, key_hashes
from .model_settings import bounds_of, build_hash, spec_of

RAW_REF = re.compile(r"\braw\.([a-z0-9_]+)\b")
META_DDL = [
    "create schema if not exists meta",
    "create table if not exists meta.staged_files (source_file varchar primary key, sha256 varchar)",
    "create table if not exists meta.staged_models (model varchar primary key, sql_sha256 varchar)",
    # which key-hash indexes (meta.key_hashes__<model>) are valid, and under which hash function
    "create table if not exists meta.key_indexes (model varchar primary key, hash_check ubigint)",
]
log = logging.getLogger(__name__)


def recomputed_sources(names) -> dict[str, tuple[str, ...]]:
    """{staging model: the key another model refolds it by (`strategy = "recompute"` with
    `from` it)}, among the staging models `names`."""
    out = {}
    for name in names:
        spec = spec_of(name)
        if spec is not None and spec.source:
            if out.get(spec.source, spec.key) != spec.key:
                raise RuntimeError(f"models refolding {spec.source} must share one key")
            out[spec.source] = spec.key
    return out


def create_deduped(con, table: str, sql: str) -> None:
    """`create or replace table <table>` with the model's rows, one per key of its
    `incremental = { strategy = "merge", key, order }` setting.

    The rows are written as the model makes them, and only then are keys that repeat looked
    for, in the table. A usual day's jobs have none (job ids are unique): done. Ranking inside
    the query held all 2 M job rows in memory first: the target day's jobs model
    takes 2.2 -> 1.6 s and peaks ~350 MB lower (bench/README.md). A table whose
    keys repeat is rewritten from itself with the repeats ranked (deleting them instead made
    the run's commit ~1 s slower). A model whose source repeats itself by nature drops the
    repeats before parsing (`stg_k8s__pods`: a relist lands every pod version again)."""
    con.execute(f"create or replace table {table} as\n{sql}")
    spec = spec_of(table.rpartition(".")[2])
    if spec is None or spec.order is None:
        return
    key = ", ".join(spec.key)
    repeated = (f"select hash({key}) as _recon_key_hash from {table} group by 1 "
                f"having count(*) > 1")
    n = con.execute(f"select count(*) from ({repeated})").fetchone()[0]
    if not n:
        return
    log.info("%s: %d keys repeat; rewriting it with one row per key", table, n)
    name = table.rpartition(".")[2]
    tmp = f"{table}__recon_dedupe"
    con.execute(f"""create or replace table {tmp} as
select * from {table} anti join ({repeated}) r on hash({key}) = r._recon_key_hash
union all
(select * from {table} semi join ({repeated}) r on hash({key}) = r._recon_key_hash
 qualify row_number() over (partition by {key} order by {spec.order}) = 1)""")
    con.execute(f"drop table {table}")
    con.execute(f"alter table {tmp} rename to {name}")


def next_rowid(table: str) -> str:
    """SQL: the rowid the next row appended to `table` gets, at least (appended rows are last)."""
    return f"(select coalesce(max(rowid), -1) + 1 from {table})"


class StagingState(Indexes):
    """What the staging tables reflect, and which files a run added since. Its indexes of
    history (meta.key_hashes__<model>, meta.bounds__<model>) are kept by `Indexes`."""

    def __init__(self, con, models: dict[str, str] | None = None):
        """`models`: {staging model: its SQL} (which of them another model refolds; their
        key-hash and bounds indexes are checked here)."""
        models = models or {}
        self.sql = models
        self.con = con
        for stmt in META_DDL:
            con.execute(stmt)
        self.landed = dict(con.execute("select source_file, sha256 from raw.files").fetchall())
        staged = dict(con.execute("select source_file, sha256 from meta.staged_files").fetchall())
        self.models = dict(con.execute("select model, sql_sha256 from meta.staged_models").fetchall())
        self.stale = sorted(f for f, h in staged.items() if self.landed.get(f) != h)
        self.new = sorted(f for f in self.landed if f not in staged)
        self._views: set[str] = set()
        self.ran: dict[str, str] = {}
        # models that another one refolds (`strategy = "recompute"`, `from = "<model>"`)
        self.recomputed_from = recomputed_sources(models)
        self._check_indexes()
        self._first_rowids = self._landed_here() or {}

    def _landed_here(self) -> dict[str, int] | None:
        """{raw table: its next rowid before this transaction landed} when this transaction
        landed exactly the new files (`recon.ingest.land._note_first_rowids`), else None."""
        con = self.con
        if con.execute("select count(*) from duckdb_tables() where temporary and table_name in "
                       "('_recon_landed_files', '_recon_first_rowids')").fetchone()[0] < 2:
            return None  # (a failed query would abort the caller's transaction)
        landed = {r[0] for r in con.execute("select source_file from _recon_landed_files "
                                            "where txid = txid_current()").fetchall()}
        firsts = dict(con.execute("select tbl, first_rowid from _recon_first_rowids "
                                  "where txid = txid_current()").fetchall())
        # the rows at or past those rowids are this transaction's landings: with exactly the
        # new files landed (a file landed again with other bytes makes the run a full rebuild
        # anyway), they are the new files' rows, and the delta views need no list of files
        if not firsts or landed != set(self.new):
            return None
        return firsts

    def mode(self, name: str, sql: str, exists: bool) -> str:
        """`full`, `delta` (merge the new files' rows), `recompute` (refold the keys another
        model's delta touched) or `keep` (nothing new)."""
        spec = spec_of(name)
        if spec is None or not exists or self.stale or self.models.get(name) != build_hash(name, sql):
            mode = "full"
        elif spec.source is not None:
            mode = {"delta": "recompute", "keep": "keep"}.get(self.ran.get(spec.source), "full")
        else:
            mode = "delta" if self.new else "keep"
        self.ran[name] = mode
        return mode

    def delta_sql(self, sql: str) -> str:
        """The model's SQL reading only the rows of the newly landed files."""
        def view(m: re.Match) -> str:
            table = m.group(1)
            name = f"_recon_delta_{table}"
            if name not in self._views:
                files = ", ".join("'" + f.replace("'", "''") + "'" for f in self.new)
                # New files' rows were appended last: a rowid bound lets the scan skip the row
                # groups of history (an IN list alone is checked after reading every doc).
                first = self._first_rowids.get(table)
                # rows past this transaction's mark are the new files' alone (_landed_here): no
                # IN list (a mark join over every new row: 0.2-0.3 s a run at 500 nodes)
                exact = first is not None
                if first is None:
                    first = self.con.execute(f"select min(rowid) from raw.{table} "
                                             f"where source_file in ({files})").fetchone()[0]
                where = "false" if first is None else f"rowid >= {int(first)}"
                if not exact:
                    where += f" and source_file in ({files})"
                self.con.execute(f"create or replace temp view {name} as select * from raw.{table} "
                                 f"where {where}")
                self._views.add(name)
            return name
        return RAW_REF.sub(view, sql)

    def merge(self, table: str, sql: str) -> None:
        """Merge the delta of `sql` into `table` (e.g. `staging.stg_k8s__pods`).

        The delta's rows are appended to the table as the model makes them, then read back by
        rowid (the appended rows are the table's last). A key that is also in the table, or
        twice among them, is settled by deleting every row of it but the first in the model's
        order. Making the delta a temporary table first, then copying it, wrote the day's 2 M
        jobs twice (bench/README.md). Keys with rivals are found by the key-hash index
        (`recon.build.indexes`), not by joining on the key columns."""
        con = self.con
        name = table.split(".")[-1]
        spec = spec_of(name)
        bounds = bounds_of(name)
        # indexes first: one (re)built from the table after the append would hold the new keys
        if bounds is not None:
            self._ensure(name, bounds=True)
        if spec.key is not None:
            self._ensure(name)
        first = con.execute(f"select {next_rowid(table)}").fetchone()[0]
        con.execute(f"insert into {table} by name\n{self.delta_sql(sql)}")
        new = f"(select * from {table} where rowid >= {int(first)})"
        try:
            if bounds is not None:  # rows a rival replaces keep their span: it only widens
                con.execute(f"insert into meta.bounds__{name} {bounds_select(bounds, new)}")
            if name in self.recomputed_from:  # the keys another model refolds, in its terms
                con.execute(f"create or replace temp table _recon_keys_{name} as "
                            f"select distinct {', '.join(self.recomputed_from[name])} from {new}")
            if spec.key is None:
                return
            key = ", ".join(spec.key)
            index = key_hashes(table)
            con.execute(f"create or replace temp table _recon_delta_hashes as "
                        f"select hash({key}) as h, count(*) > 1 as twice from {new} group by 1")
            # one pass over the index (the history-sized side probes, the day's hashes are the
            # built side): an anti join of the day's hashes with the index built a hash table of
            # the index, 0.9 s at 60 M jobs (bench/README.md)
            con.execute(f"create or replace temp table _recon_in_index as select i.h from "
                        f"{index} i semi join _recon_delta_hashes using (h)")
            # keys with rivals: twice among the new rows, or in the index (usual for pods that
            # run across midnight; jobs ids are new each day: none)
            con.execute("create or replace temp table _recon_rivals as select h from "
                        "_recon_delta_hashes where twice union select h from _recon_in_index")
            con.execute(f"insert into {index} select h from _recon_delta_hashes "
                        f"anti join _recon_in_index using (h)")
            if not con.execute("select count(*) from _recon_rivals").fetchone()[0]:
                return
            # every row of those keys (a hash that only collides leaves one row: kept), ranked
            con.execute(f"delete from {table} where rowid in (select rowid from (select rowid, "
                        f"row_number() over (partition by {key} order by {spec.order}) as rank "
                        f"from {table} where hash({key}) in (select h from _recon_rivals)) "
                        f"where rank > 1)")
        finally:
            for t in ("_recon_rivals", "_recon_in_index", "_recon_delta_hashes"):
                con.execute(f"drop table if exists {t}")

    def recompute(self, table: str, sql: str) -> None:
        """Refold the rows of `table` whose key the source model's delta touched.

        Where the source and the table keep bounds by the same key (`bounds`), only the
        row groups of the span those keys' rows lie in are read: the 500-node fleet's workers
        were refolded by reading every snapshot and every worker of history (2.0 s on a 30-day
        warehouse, bench/README.md)."""
        name = table.split(".")[-1]
        spec = spec_of(name)
        keys = f"_recon_keys_{spec.source}"
        on = lambda a, b: " and ".join(f"{a}.{k} is not distinct from {b}.{k}" for k in spec.key)
        probed: dict = {}
        src_span = self._span(spec.source, spec.key, keys, "s", probed)
        body = re.sub(rf"\bstaging\.{spec.source}\b",
                      f"(select s.* from staging.{spec.source} s semi join {keys} k on {on('s', 'k')}"
                      f" where {src_span})", sql)
        con = self.con
        bounds = bounds_of(name)
        src_bounds = bounds_of(spec.source)
        if (bounds is not None and bounds.within is not None and src_bounds is not None
                and bounds.within == src_bounds.col and "lo" in probed):
            # the rows to replace lie within the source's span for these keys (`within`); the
            # table's own bounds are kept for its readers (sql/scope/)
            self._ensure(name, bounds=True)
            span = self._span_predicate(name, bounds.col, probed["lo"], probed["hi"], "t")
        else:
            span = self._span(name, spec.key, keys, "t")
        con.execute(f"delete from {table} where rowid in (select t.rowid from {table} t "
                    f"semi join {keys} k on {on('t', 'k')} where {span})")
        if bounds is None:
            con.execute(f"insert into {table} by name\n{body}")
            return
        con.execute(f"create or replace temp table _recon_refold as\n{body}")
        con.execute(f"insert into {table} by name select * from _recon_refold")
        con.execute(f"insert into meta.bounds__{name} {bounds_select(bounds, '_recon_refold')}")
        con.execute("drop table _recon_refold")

    def built(self, name: str, sql: str) -> None:
        """The model was rebuilt in full: its indexes describe the old table."""
        spec = spec_of(name)
        for model in (name, f"{name}#bounds"):
            self._forget(model)
        if spec is not None:
            self.con.execute("insert or replace into meta.staged_models values (?, ?)",
                             [name, build_hash(name, sql)])

    def finish(self) -> None:
        """The staging tables now reflect every landed file."""
        con = self.con
        con.execute("delete from meta.staged_files")
        con.execute("insert into meta.staged_files select source_file, sha256 from raw.files")
        for v in self._views:
            con.execute(f"drop view if exists {v}")
