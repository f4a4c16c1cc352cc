"""Build staging → intermediate → marts → checks from `sql/`, in one transaction
(`build`), a model at a time (`_build_one`)."""

from __future__ import annotations

import re
import time

import duckdb

from ..db import begin as _begin
from .incremental import StagingState, create_deduped
from .model_settings import settings_of
from .models import LAYERS, SQL_DIR, build_order


def _columns(con, schema: str, table: str) -> set[str]:
    return {r[0] for r in con.execute(
        "select column_name from information_schema.columns where table_schema = ? "
        "and table_name = ?", [schema, table]).fetchall()}



def build(con, timings: dict | None = None, model_timings: dict | None = None,
          transaction: bool = True, on_model=None) -> None:
    """Build staging → intermediate → marts → checks from sql/, in one transaction.

    Staging is incremental (`recon.build.incremental`). A windowed run (config day_from/day_to, from
    `--from/--to`) builds sql/scope/ — staging cut to what the window's days depend on — and
    the intermediate models and marts read that (temporary table `scope__<model>`) instead of
    `staging.<model>`; marts with a `day` column then replace only the window's days, and a mart
    with a `window = { key, where }` setting (sql/marts/_models.toml) replaces only the rows the
    predicate selects.
    Intermediate tables hold the last run's scope.

    `timings` gets seconds per layer; `model_timings` (optional) seconds per model, keyed
    `<layer>.<name>` (the benchmark harness reads it, e.g. `marts.findings`). `on_model(layer,
    name)` is called before each model is built (progress).
    """

    windowed = con.execute("select cfg('day_from') <> '0001-01-01' or cfg('day_to') <> '9999-12-31'"
                           ).fetchone()[0]
    order = build_order(windowed)
    scoped = {n for layer, n, _ in order if layer == "scope"}
    decided = False
    # The models' tables need no particular row order (every reader that shows rows orders
    # them). Without it, DuckDB writes a big CREATE TABLE AS from every thread as the rows come,
    # instead of leaving row groups for the commit to write on one thread: the target day's
    # commit takes ~0.65 s less (bench/README.md).
    keep_order = con.execute("select current_setting('preserve_insertion_order')").fetchone()[0]
    con.execute("set preserve_insertion_order = false")
    own = _begin(con, transaction)
    failed = False
    try:
        for layer in LAYERS:
            con.execute(f"create schema if not exists {layer}")
        # scope tables are temporary (`scope__<model>`): a `scope` schema in the file is stale
        con.execute("drop schema if exists scope cascade")
        bodies = {p: p.read_text(encoding="utf-8").strip().rstrip(";") for _, _, p in order}
        staged = StagingState(con, {n: bodies[p] for layer, n, p in order if layer == "staging"})
        last_staging = [n for layer, n, _ in order if layer == "staging"][-1]
        existing = {r[0] for r in con.execute(
            "select table_name from information_schema.tables where table_schema = 'staging'"
        ).fetchall()}
        for layer, name, path in order:
            t0 = time.perf_counter()
            if layer == "scope" and not decided:
                decided = True
                if not _history_before_window(con):
                    scoped.clear()  # all data lies in the window's reach: the scope would be a copy
                else:
                    staged.ensure_bounds()
            if layer == "scope" and not scoped:
                continue
            if on_model is not None:
                on_model(layer, name)
            body = bodies[path]
            if layer == "scope":
                body = re.sub(r"\bscope\.([a-z0-9_]+)\b", r"scope__\1", body)
            elif (windowed and layer in ("intermediate", "marts")
                  and not settings_of(layer, name).scope_before):
                body = re.sub(r"\bstaging\.([a-z0-9_]+)\b",
                              lambda m: f"scope__{m.group(1)}" if m.group(1) in scoped else m.group(0),
                              body)
            try:
                _build_one(con, staged, layer, name, body, name in existing, windowed)
            except duckdb.Error as e:
                raise RuntimeError(f"{path.relative_to(SQL_DIR.parent)}: {e}") from None
            dt = time.perf_counter() - t0
            if timings is not None:
                timings[layer] = timings.get(layer, 0.0) + dt
            if model_timings is not None:
                model_timings[f"{layer}.{name}"] = dt
            if layer == "staging" and name == last_staging:
                staged.finish()
        if own:
            con.execute("commit")
    except BaseException:
        failed = True
        if own:
            con.execute("rollback")
        raise
    finally:
        try:
            con.execute(f"set preserve_insertion_order = {'true' if keep_order else 'false'}")
        except duckdb.Error:
            # a failed model aborts the caller's transaction, and any statement then raises
            # "Current transaction is aborted": that would hide the error that names the model
            if not failed:
                raise


def _history_before_window(con) -> bool:
    """Does any staged record lie before the scope's reach (the window's first day − 1)?

    One `limit 1` probe a table: row-group statistics skip the days after it (a min() over
    every row of history took 0.4 s on a 30-day warehouse of the 500-node fleet)."""
    reach = con.execute("select (cfg('day_from')::date::timestamptz - interval 1 day)::varchar"
                        ).fetchone()[0]
    probes = " union all ".join(
        f"(select 1 from staging.{table} where {col} < '{reach}'::timestamptz limit 1)"
        for table, col in (
            ("stg_k8s__pod_life", "created_at"), ("stg_runpod__bill_lines", "bucket_start"),
            ("stg_runpod__pod_billing", "bucket_start"), ("stg_focus__charges", "charge_start"),
            ("stg_runpod__jobs", "completed_at"), ("stg_k8s__events", "first_at")))
    return con.execute(f"select count(*) > 0 from ({probes})").fetchone()[0]


def _build_one(con, staged: StagingState, layer: str, name: str, body: str, exists: bool,
               windowed: bool) -> None:
    table = f"{layer}.{name}"
    if layer == "scope":  # temporary: read by this run only, never written to the file
        kind = "view" if settings_of(layer, name).scope_view else "table"
        con.execute(f"create or replace temp {kind} scope__{name} as\n{body}")
        return
    if layer == "staging":
        mode = staged.mode(name, body, exists)
        if mode == "delta":
            staged.merge(table, body)
        elif mode == "recompute":
            staged.recompute(table, body)
        elif mode == "full":
            create_deduped(con, table, body)
            staged.built(name, body)
        return
    settings = settings_of(layer, name)
    if not (windowed and layer == "marts") or settings.last_run:
        con.execute(f"create or replace table {table} as\n{body}")
        return
    # a run for a window replaces that window's days (or, for a mart without a day, the rows
    # its `window` setting's predicate selects) and keeps the rest
    columns = [d[0] for d in con.execute(f"select * from (\n{body}\n) limit 0").description]
    window = settings.window
    if "day" in columns:
        key, where = None, "day between cfg('day_from')::date and cfg('day_to')::date"
    elif window:
        key, where = list(window.key), window.where
    else:
        raise RuntimeError(f"{table}: a mart needs a day column or a `window` setting "
                           f"in sql/marts/_models.toml")
    con.execute(f"create or replace temp table _recon_window as select * from (\n{body}\n) where {where}")
    if not _columns(con, layer, name):
        con.execute(f"create table {table} as select * from _recon_window")
    elif key is None:
        con.execute(f"delete from {table} where {where}")
        con.execute(f"insert into {table} by name select * from _recon_window")
    else:
        on = " and ".join(f"t.{k} is not distinct from n.{k}" for k in key)
        con.execute(f"delete from {table} where rowid in "
                    f"(select t.rowid from {table} t semi join _recon_window n on {on})")
        con.execute(f"insert into {table} by name select * from _recon_window")
    con.execute("drop table _recon_window")
