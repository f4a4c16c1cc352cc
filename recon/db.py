"""The DuckDB warehouse file: the connection (time zone, threads, memory limit, write
buffering), its schemas and the raw landing tables' DDL."""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

from .guard import busy
from .ingest.raw_tables import TABLES, TS_CHECKED

RAW_DDL = [
    "create schema if not exists raw",
    "create schema if not exists config",
    *[f"create table if not exists raw.{t} (source_file varchar, record_no bigint, locator varchar, "
      + "".join(f"{c} varchar, " for c in cols) + "doc json"
      + (", ts_ok boolean" if t in TS_CHECKED else "") + ")" for t, cols in TABLES.items()],
    # a warehouse made before ts_ok: its rows have none (NULL), and staging checks them
    *[f"alter table raw.{t} add column if not exists ts_ok boolean" for t in TS_CHECKED],
    """create table if not exists raw.quarantine (source_file varchar, record_no bigint,
        locator varchar, reason varchar, record varchar)""",
    """create table if not exists raw.files (source_file varchar primary key, kind varchar,
        sha256 varchar, bytes bigint, records_in bigint, records_loaded bigint,
        records_quarantined bigint, records_skipped bigint, skip_reason varchar)""",
]


# A daily run with history in the warehouse (the usual case) peaks at 1.83 GiB RSS with it, and
# at 2.04 GiB with 1.5GB (500 nodes, day 4 of 4); a first day peaks at 1.6 GiB either way, ~0.3 s
# slower than with 1.5GB (bench/README.md).
DEFAULT_MEMORY_LIMIT = "1.25GB"
WRITE_BUFFER_ROW_GROUPS = 1  # DuckDB's default: 5


SCHEMAS = ("raw", "config", "meta", "staging", "scope", "intermediate", "marts", "checks")


def connect(path: str | Path | None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    if path is not None and Path(path).stem.lower() in SCHEMAS:
        # DuckDB names the catalog after the file: `raw.duckdb` makes every `raw.x` ambiguous
        raise ValueError(f"{path}: a warehouse file may not be named after one of its schemas "
                         f"({', '.join(SCHEMAS)}); use e.g. recon.duckdb")
    if path is not None and not read_only:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        con = duckdb.connect(str(path) if path else ":memory:", read_only=read_only)
    except duckdb.IOException as e:
        if (locked := busy(e, path)) is not None:
            raise locked from None  # DuckDB's message and a traceback of 39 lines before
        raise
    _configure(con)
    if read_only and path is not None:
        # a shard's warehouse: readers see its own rows (recon/shards.py)
        from .shards import is_sharded, lens

        shard = is_sharded(con)
        if shard is not None:
            con.close()
            return lens(path, shard, _configure)
    if not read_only:
        # A bulk append writes each row group as it fills instead of buffering five: the
        # 500-node day peaks ~90 MB lower (1,550-1,580 against 1,640-1,680 MiB in 10 interleaved
        # pairs) and landing leaves ~0.2 s less for the commit to write on one thread (0.37-0.39
        # against 0.56-0.63 s); the whole run's time stays within the noise (bench/README.md)
        con.execute(f"set write_buffer_row_group_count = {WRITE_BUFFER_ROW_GROUPS}")
        for stmt in RAW_DDL:
            con.execute(stmt)
    return con


def begin(con, own: bool) -> bool:
    """Begin a transaction when this call owns it (`own`); else the caller's commits for us."""
    if own:
        con.execute("begin transaction")
    return own


def _configure(con) -> None:
    con.execute("set TimeZone = 'UTC'")
    con.execute("set enable_progress_bar = false")
    threads = os.environ.get("RECON_THREADS")
    if threads:
        con.execute(f"set threads = {int(threads)}")
    # DuckDB's own default is 80 % of RAM; a daily job sharing a machine gets a bound (it spills
    # to disk beyond it). RECON_MEMORY_LIMIT=8GB raises it, =0 leaves DuckDB's default.
    limit = os.environ.get("RECON_MEMORY_LIMIT", DEFAULT_MEMORY_LIMIT).strip()
    if limit and limit != "0":
        if not re.fullmatch(r"\d+(\.\d+)?\s*[KMGT]i?B", limit, re.I):
            raise ValueError(f"RECON_MEMORY_LIMIT={limit!r}: expected a size such as 1GB or 512MiB")
        con.execute(f"set memory_limit = '{limit}'")
