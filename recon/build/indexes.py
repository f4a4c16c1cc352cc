"""The indexes of history that incremental staging keeps in `meta`, and their bookkeeping.

Key-hash index (meta.key_hashes__<model>, a model with `strategy = "merge"`): which persisted
keys might a delta's keys meet again? Finding a delta's rival rows by joining on the key columns
reads every persisted key: the target fleet's jobs merge spent 0.6 s on it with three days of
history, growing ~0.2 s per day. meta.key_hashes__<model> holds hash(key) of every persisted row
(8 bytes, no strings); when none of the appended rows' key hashes was in it (nor twice among
them), no row shares a key and the merge is done. A hash that was there (a real rival, or a
collision) sends the merge down the exact path, which ranks the rows of those keys by the key
columns. The index may hold hashes of keys no longer present (never fewer): it only decides
when the exact path is needed.

Bounds index (meta.bounds__<model>, a model with a `bounds` setting): each key hash's least and
greatest value of the span column, so that a reader after every row of some keys reads only the
row groups of that span (`model_settings.Bounds`).

`meta.key_indexes` says which indexes are valid, under which hash function. `Indexes` is the part
of `incremental.StagingState` that checks, builds and probes them.
"""

from __future__ import annotations

from .model_settings import Bounds, Spec, bounds_of, spec_of

# DuckDB's hash() is not promised stable across versions: an index built under another one is
# rebuilt (its hashes would no longer find their keys).
HASH_CHECK = "hash('recon key index', 42::bigint, null::varchar, 1.5::double)"


def key_hashes(table: str) -> str:
    """The key-hash index of `staging.<model>`: meta.key_hashes__<model>."""
    return f"meta.key_hashes__{table.split('.')[-1]}"


def build_key_index(con, table: str, spec: Spec) -> None:
    """(Re)build meta.key_hashes__<model>: hash(key) of every row of `table`."""
    con.execute(f"create or replace table {key_hashes(table)} as "
                f"select hash({', '.join(spec.key)}) as h from {table}")
    con.execute(f"insert or replace into meta.key_indexes select ?, {HASH_CHECK}",
                [table.split(".")[-1]])


def bounds_select(b: Bounds, source: str) -> str:
    return (f"select hash({', '.join(b.key)}) as h, min({b.col}) as lo, max({b.col}) as hi "
            f"from {source} group by 1")


def build_bounds(con, table: str, b: Bounds) -> None:
    """(Re)build meta.bounds__<model> from `table`: one row per key hash."""
    name = table.split(".")[-1]
    con.execute(f"create or replace table meta.bounds__{name} as {bounds_select(b, table)}")
    con.execute(f"insert or replace into meta.key_indexes select ?, {HASH_CHECK}",
                [f"{name}#bounds"])


class Indexes:
    """Index bookkeeping of `StagingState` (`self.con`, `self.sql`: the staging models)."""

    def _check_indexes(self) -> None:
        """Forget indexes built under another hash function; an index is (re)built from its
        table the first time a run needs it (`_ensure`), so that a run that never merges (a
        first day, a full rebuild) does not pay for one."""
        con = self.con
        check = con.execute(f"select {HASH_CHECK}").fetchone()[0]
        built = dict(con.execute("select model, hash_check from meta.key_indexes").fetchall())
        self._valid = {m for m, h in built.items() if h == check}
        for model in set(built) - self._valid:
            self._forget(model)

    def _forget(self, model: str) -> None:
        name, _, kind = model.partition("#")
        self.con.execute(f"drop table if exists meta.{'bounds' if kind else 'key_hashes'}__{name}")
        self.con.execute("delete from meta.key_indexes where model = ?", [model])
        self._valid.discard(model)

    def _ensure(self, name: str, bounds: bool = False) -> None:
        """Build the model's key-hash index (`bounds`: its bounds index) from its table unless
        a valid one exists."""
        model = f"{name}#bounds" if bounds else name
        if model in self._valid:
            return
        if bounds:
            build_bounds(self.con, f"staging.{name}", bounds_of(name))
        else:
            build_key_index(self.con, f"staging.{name}", spec_of(name))
        self._valid.add(model)

    def ensure_bounds(self) -> None:
        """Every bounds index, before sql/scope/ reads them."""
        for name in self.sql:
            if bounds_of(name) is not None:
                self._ensure(name, bounds=True)

    def _span(self, model: str, key: tuple[str, ...], keys: str, alias: str,
              probed: dict | None = None) -> str:
        """A predicate on `alias` true for every row of `model` whose key is in `keys`: the
        span meta.bounds__<model> gives those keys (rows whose span column is null included),
        or `true` without bounds by that key. A model with bounds has a valid index after.
        `probed` gets the span's `lo` and `hi` (None: no row of those keys has one)."""
        bounds = bounds_of(model)
        if bounds is None:
            return "true"
        self._ensure(model, bounds=True)
        if bounds.key != key:
            return "true"
        lo, hi = self.con.execute(
            f"select min(b.lo)::varchar, max(b.hi)::varchar from meta.bounds__{model} b semi join "
            f"(select hash({', '.join(key)}) as h from {keys}) k using (h)").fetchone()
        if probed is not None:
            probed.update(lo=lo, hi=hi)
        return self._span_predicate(model, bounds.col, lo, hi, alias)

    def _span_predicate(self, model: str, column: str, lo, hi, alias: str) -> str:
        """`alias.column` within [lo, hi] (`false` when lo is None), or null."""
        col = f"{alias}.{column}"
        inside = "false" if lo is None else f"{col} between '{lo}' and '{hi}'"
        # `or … is null` keeps DuckDB from skipping row groups by the span (it reads them all):
        # left out when no row has a null there, which row-group statistics answer cheaply
        if not self.con.execute(f"select count(*) from staging.{model} "
                                f"where {column} is null").fetchone()[0]:
            return inside
        return f"({inside} or {col} is null)"
