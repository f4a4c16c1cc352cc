"""The raw landing tables (`TABLES`: each one's columns beside the document; `ts_ok`, the
timestamp check staging relies on), and the Python reader's rows handed to DuckDB as Arrow."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from .reader import FileResult

TABLES = {
    "k8s_objects": ["cluster", "event_type", "kind", "uid", "resource_version", "seen_at"],
    "runpod_billing": ["source", "pulled_at"],
    "runpod_inventory": ["inventory_kind", "endpoint_id", "pulled_at"],
    "serverless_jobs": [],
    "focus_rows": [],
    "invoice_lines": [],
    "prometheus_series": ["cluster", "query"],
}
COMMON = ["source_file", "record_no", "locator"]
# `ts_ok`: the timestamp staging requires of a record casts to TIMESTAMPTZ (a Pod's
# metadata.creationTimestamp; a job's completedAt), as sql/staging/quarantine.sql casts it.
# Landing has the value at hand (the DuckDB paths extract it with the fields they check; the
# Python path's rows get it on insert), so that staging's quarantine re-parses only the rows
# where it is not true instead of every pod version and job (0.4 s and 0.3 s on the 500-node
# day, bench/README.md). NULL: a row landed before the column existed.
# A job's submittedAt is optional (the /status record has none; submitters add it), but when it
# is there it must be a timestamp too: a malformed one would otherwise load as NULL, silently,
# and the worker's session start at its first job's execution instead (TS_OPTIONAL).
TS_CHECKED = {"k8s_objects": "$.metadata.creationTimestamp", "serverless_jobs": "$.completedAt"}
TS_OPTIONAL = {"serverless_jobs": "$.submittedAt"}


def ts_ok_sql(path: str, doc: str, optional: tuple[str, str] | None = None) -> str:
    """SQL of `ts_ok` for the JSON `doc` (quarantine.sql's own cast of the same value); the
    DuckDB paths pass an extracted value as `doc` and `$` as `path`. `optional`: (path, doc) of
    a timestamp that may be absent or null but otherwise has to cast too."""
    ok = f"try_cast({doc} ->> '{path}' as timestamptz) is not null"
    if optional:
        o = f"{optional[1]} ->> '{optional[0]}'"
        ok += f" and ({o} is null or try_cast({o} as timestamptz) is not null)"
    return f"({ok})"


def _strings(values: list) -> pa.Array:
    """A string array from Python str/None, built from buffers: pa.array() imports pandas
    (0.2 s) to check for pandas objects. A str that is not valid UTF-8 (a lone surrogate)
    raises UnicodeEncodeError, as pa.array does."""
    import numpy as np

    data = [b"" if v is None else v.encode("utf-8") for v in values]
    offsets = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in data], out=offsets[1:])
    valid = None
    if any(v is None for v in values):
        valid = pa.py_buffer(np.packbits(np.array([v is not None for v in values]),
                                         bitorder="little"))
    return pa.LargeStringArray.from_buffers(len(data), pa.py_buffer(offsets),
                                            pa.py_buffer(b"".join(data)), valid)


def _int64s(values: list) -> pa.Array:
    import numpy as np

    return pa.Array.from_buffers(pa.int64(), len(values),
                                 [None, pa.py_buffer(np.array(values, dtype=np.int64))])


def _table(data: dict) -> pa.Table:
    return pa.Table.from_arrays(
        [_int64s(v) if c == "record_no" else _strings(v) for c, v in data.items()],
        names=list(data))


def arrow_rows(res: FileResult, table: str) -> pa.Table:
    cols = COMMON + TABLES[table] + ["doc"]
    rows = res.rows[table]
    data = {c: [r.get(c) for r in rows] for c in cols}
    data["source_file"] = [res.path] * len(rows)
    return _table(data)


def arrow_bad(res: FileResult) -> pa.Table:
    cols = ["source_file", "record_no", "locator", "reason", "record"]
    data = {c: [b.get(c) for b in res.bad] for c in cols}
    data["source_file"] = [res.path] * len(res.bad)
    return _table(data)


def arrow_query(con, name: str, table: pa.Table, sql: str):
    """Run `sql`, in which `name` is the Arrow `table`; returns DuckDB's relation of the result
    (an INSERT runs here; fetch a SELECT's rows from it).

    Not `con.register`: a view registered and dropped inside a transaction stays in the
    catalog until the transaction ends, and with it the Arrow table and every buffer it
    points to. Landing runs in its caller's one transaction and hands DuckDB its reading
    buffers zero-copy, so each landed file's 64 MiB buffer and line offsets were held until
    the commit: +80 MB per 21 MB pod watch file, 2.8 GB at the end of landing 30 days at 100
    nodes (bench/README.md). A relation's query binds the table for the statement
    alone (tests/test_landing_memory.py)."""
    return con.from_arrow(table).query(name, sql)
