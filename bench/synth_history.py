"""Give a built warehouse a longer history without landing it: copies of its days, earlier.

A 30-day history of the 500-node fleet is 52 GB of input (7 GB for the 4 days this machine
simulates in ~1 h). What a daily run pays for history is scanning and joining the persisted
tables (staging, the marts' other days, raw's bookkeeping columns), so this copies what a warehouse
holds K times, each copy moved `--shift-days` × k days back, with every id that keys a pod, an
event, a job or a worker suffixed `~k` (no copy meets another's keys); raw rows keep their
bookkeeping columns and get an empty document (a daily run never parses old raw rows: it reads
their `source_file` and `rowid`). The copies are appended after the real rows, so the tables are
ordered as a warehouse that had landed them day by day would be, roughly: by day, in row groups.
Indexes the product keeps in `meta.` (key hashes, bounds) are rebuilt after, when the measured
tree has them. Used for the "day 30 at 500 nodes" figures in bench/README.md:

    uv run python bench/synth_history.py WAREHOUSE --copies 9 --shift-days 3
"""

from __future__ import annotations

import argparse
import sys
import time

import duckdb

# table: the columns that identify its entities (suffixed `~k` in copy k)
IDS = {
    "staging.stg_runpod__jobs": ["job_id", "worker_id"],
    "staging.stg_runpod__worker_snapshots": ["worker_id"],
    "staging.stg_runpod__workers": ["worker_id"],
    "staging.stg_k8s__pods": ["pod_uid", "pod_name"],
    "staging.stg_k8s__pod_life": ["pod_uid", "pod_name"],
    "staging.stg_k8s__events": ["event_uid", "object_uid", "object_name"],
    "staging.stg_runpod__serverless_billing": [],
    "staging.stg_runpod__bill_lines": [],
    "staging.quarantine_casts": [],
    "raw.serverless_jobs": ["source_file"],
    "raw.runpod_inventory": ["source_file"],
    "raw.k8s_objects": ["source_file", "uid"],
    "raw.runpod_billing": ["source_file"],
    "marts.workload_lifecycle": ["pod_uid", "pod_name"],
}


def columns(con, table: str) -> list[tuple[str, str]]:
    schema, name = table.split(".")
    return con.execute("select column_name, data_type from information_schema.columns where "
                       "table_schema = ? and table_name = ? order by ordinal_position",
                       [schema, name]).fetchall()


def copy_sql(con, table: str, ids: list[str], k: int, days: int) -> str:
    out = []
    for col, typ in columns(con, table):
        q = f'"{col}"'
        if col in ids:
            out.append(f"{q} || '~{k}' as {q}")
        elif table.startswith("raw.") and col == "doc":
            out.append(f"'{{}}'::json as {q}")
        elif typ.startswith("TIMESTAMP"):
            out.append(f"{q} - interval {k * days} day as {q}")
        elif typ == "DATE":
            out.append(f"{q} - {k * days} as {q}")
        else:
            out.append(q)
    return f"insert into {table} select {', '.join(out)} from {table}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("warehouse")
    ap.add_argument("--copies", type=int, default=9)
    ap.add_argument("--shift-days", type=int, default=3)
    a = ap.parse_args(argv)
    con = duckdb.connect(a.warehouse)
    con.execute("set preserve_insertion_order = false")
    tables = list(IDS)
    tables += [f"marts.{t}" for (t,) in con.execute(
        "select table_name from information_schema.columns where table_schema = 'marts' "
        "and column_name = 'day'").fetchall() if f"marts.{t}" not in IDS]
    for table in tables:
        t0 = time.perf_counter()
        n0 = con.execute(f"select count(*) from {table}").fetchone()[0]
        # every copy from the original rows (`where false` on the copies: they carry `~k`)
        con.execute(f"create or replace temp table _orig as select * from {table}")
        for k in range(1, a.copies + 1):
            con.execute(copy_sql(con, table, IDS.get(table, []), k, a.shift_days)
                        .replace(f"from {table}", "from _orig"))
        con.execute("drop table _orig")
        n = con.execute(f"select count(*) from {table}").fetchone()[0]
        print(f"{table}: {n0:,} -> {n:,} rows ({time.perf_counter() - t0:.1f} s)", flush=True)
    try:  # the measured tree's meta indexes, rebuilt over the copies (as a daily run has them)
        from recon.build.indexes import build_bounds, build_key_index
        from recon.build.model_settings import bounds_of, spec_of
        from recon.build.models import SQL_DIR

        con.execute("delete from meta.key_indexes")
        for p in sorted((SQL_DIR / "staging").glob("*.sql")):
            spec, bounds = spec_of(p.stem), bounds_of(p.stem)
            if spec is not None and spec.order is not None:
                build_key_index(con, f"staging.{p.stem}", spec)
            if bounds is not None:
                build_bounds(con, f"staging.{p.stem}", bounds)
        print("meta indexes rebuilt", file=sys.stderr)
    except (ImportError, duckdb.CatalogException) as e:
        print(f"no meta indexes in this tree ({type(e).__name__})", file=sys.stderr)
    con.execute("checkpoint")
    con.close()


if __name__ == "__main__":
    main()
