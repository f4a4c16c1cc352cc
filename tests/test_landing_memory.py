"""Landing hands DuckDB no buffer that outlives its statement.

Landing runs inside its caller's one transaction and gives DuckDB its reading buffers
zero-copy (Arrow over a 64 MiB bytearray per file). A view made with `con.register` and
dropped with `unregister` stays in the catalog until the transaction ends, and with it the
Arrow table and its buffers: every landed file's buffer would be held until the commit (2.8 GB
at the end of landing 30 days at 100 nodes). These tests fail on it.
"""

from __future__ import annotations

import tracemalloc

import duckdb
import pyarrow as pa
import pytest

from recon.db import connect
from recon.ingest import jsonl
from recon.ingest.land import load_folder
from recon.ingest.raw_tables import arrow_query
from recon.simulate import simulate


def _zero_copy(buf: bytearray) -> pa.Table:
    n = len(buf) // 8
    return pa.table({"n": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(buf)])})


@pytest.mark.parametrize("how", ["arrow_query", "register"])
def test_a_statement_lets_go_of_its_arrow_table_inside_a_transaction(how):
    con = duckdb.connect()
    con.execute("create table t (n bigint)")
    con.execute("begin")
    buf = bytearray(8 * 1000)
    tbl = _zero_copy(buf)
    if how == "arrow_query":
        arrow_query(con, "_x", tbl, "insert into t select n from _x")
    else:  # what landing did: DuckDB keeps the dropped view, and the table, until the commit
        con.register("_x", tbl)
        con.execute("insert into t select n from _x")
        con.unregister("_x")
    del tbl
    if how == "arrow_query":
        buf.extend(b"\0" * 8)  # resizable: nothing exports the buffer any more
    else:
        with pytest.raises(BufferError):
            buf.extend(b"\0" * 8)
    con.execute("commit")
    buf.extend(b"\0" * 8)  # the commit drops the view
    assert con.execute("select count(*) from t").fetchall() == [(1000,)]


def test_an_insert_runs_once_however_often_its_result_is_read():
    con = duckdb.connect()
    con.execute("create table t (n bigint)")
    tbl = pa.table({"n": [1, 2, 3]})
    res = arrow_query(con, "_x", tbl, "insert into t select n from _x returning n")
    assert con.execute("select count(*) from t").fetchall() == [(3,)]  # ran, before any fetch
    assert res.fetchall() == [(1,), (2,), (3,)] == res.fetchall()
    count = arrow_query(con, "_x", tbl, "insert into t select n from _x")
    assert count.fetchall() == [(3,)] == count.fetchall()
    assert con.execute("select count(*) from t").fetchall() == [(6,)]
    sel = arrow_query(con, "_x", tbl, "select sum(n) from _x where n > 1")
    assert sel.fetchall() == [(5,)]


def test_landing_in_the_callers_transaction_holds_no_reading_buffer(tmp_path, monkeypatch):
    # every file read through a FAST_CHUNK buffer, as big files are (small ones get less)
    monkeypatch.setattr(jsonl, "_buffer_size", lambda path: jsonl.FAST_CHUNK)
    simulate(tmp_path / "in", seed=5, days=1, nodes=2, endpoints=1)
    con = connect(tmp_path / "w.duckdb")
    con.execute("begin")
    arrow_before = pa.total_allocated_bytes()
    tracemalloc.start()
    try:
        results = load_folder(con, tmp_path / "in", transaction=False)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    arrow_held = pa.total_allocated_bytes() - arrow_before
    fast = [r for r in results if r.kind == "jsonl" and r.loaded]
    assert len(fast) >= 3  # pod watch, jobs and workers files took the DuckDB path
    # each of them read through a FAST_CHUNK buffer; none is left while the transaction is open
    assert peak >= jsonl.FAST_CHUNK
    assert held < jsonl.FAST_CHUNK // 4, f"{held / 2**20:.0f} MiB still held in the transaction"
    assert arrow_held < 4 << 20, f"{arrow_held / 2**20:.1f} MiB of Arrow memory still held"
    con.execute("commit")
    n = con.execute("select sum(records_loaded) from raw.files").fetchall()[0][0]
    assert n == sum(r.loaded for r in results) > 0


def _land(folder, db):
    con = connect(db)
    try:
        load_folder(con, folder)
        out = {t: con.execute(f"select source_file, record_no, locator, doc::varchar from "
                              f"raw.{t} order by all").fetchall()
               for t in ("k8s_objects", "serverless_jobs", "runpod_inventory")}
        out["quarantine"] = con.execute("select * from raw.quarantine "
                                        "order by all").fetchall()
        out["files"] = con.execute("select source_file, kind, sha256, records_in, records_loaded, "
                                   "records_quarantined, records_skipped from raw.files "
                                   "order by all").fetchall()
        return out
    finally:
        con.close()


def test_a_small_file_is_read_through_a_buffer_of_its_size(tmp_path):
    simulate(tmp_path / "in", seed=5, days=1, nodes=2, endpoints=1)
    watch = next((tmp_path / "in").rglob("watch-pods-*.jsonl"))
    size = watch.stat().st_size
    assert jsonl._buffer_size(watch) == size + 1 < jsonl.FAST_CHUNK
    tracemalloc.start()
    try:
        chunks = [(c.n, bytes(c.data)) for c in jsonl._chunks(watch)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert b"".join(d for _, d in chunks) == watch.read_bytes()
    assert peak < 8 * size + (1 << 20) < jsonl.FAST_CHUNK  # no 64 MiB buffer for 130 KB


def test_a_buffer_smaller_than_the_lines_still_lands_every_line(tmp_path, monkeypatch):
    """What a file that grew after its size was taken goes through: the buffer fills before
    the file ends, is read on and grown. The rows are those of a landing with whole buffers."""
    simulate(tmp_path / "in", seed=5, days=1, nodes=2, endpoints=1)
    whole = _land(tmp_path / "in", tmp_path / "a.duckdb")
    monkeypatch.setattr(jsonl, "_buffer_size", lambda path: 64)  # shorter than any line
    small = _land(tmp_path / "in", tmp_path / "b.duckdb")
    assert small == whole
    assert len(whole["k8s_objects"]) > 100 and len(whole["serverless_jobs"]) > 20


def test_a_gzip_file_that_inflates_past_its_buffer_lands_every_line(tmp_path):
    import gzip

    simulate(tmp_path / "sim", seed=5, days=1, nodes=2, endpoints=1)
    jobs = next((tmp_path / "sim").rglob("serverless-jobs.jsonl")).read_bytes()
    text = jobs * 300  # repeats deflate far more than 16x: the buffer is smaller than the data
    for name, data in (("plain", text), ("gz", gzip.compress(text))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "serverless-jobs.jsonl").write_bytes(data)
    gz = tmp_path / "gz" / "serverless-jobs.jsonl"
    assert jsonl._buffer_size(gz) == jsonl.GZIP_MIN_BUFFER < len(text)
    plain, packed = _land(tmp_path / "plain", tmp_path / "a.duckdb"), _land(
        tmp_path / "gz", tmp_path / "b.duckdb")
    rows = [r[1:] for r in plain["serverless_jobs"]]
    assert rows == [r[1:] for r in packed["serverless_jobs"]]
    assert len(rows) == jobs.count(b"\n") * 300
    assert [(f[1], *f[3:]) for f in plain["files"]] == [(f[1], *f[3:]) for f in packed["files"]]
    import hashlib  # a gzip file's sha256 is of its own bytes, as landed

    assert packed["files"][0][2] == hashlib.sha256(gz.read_bytes()).hexdigest()


def test_a_chunk_under_two_row_groups_of_lines_goes_to_duckdb_as_several_batches():
    """DuckDB parses one Arrow batch on one thread per row group's worth of rows: a chunk of
    fewer lines goes as several zero-copy batches (both cores), a chunk of two whole row groups
    (a 64 MiB chunk of jobs) as one."""
    import numpy as np

    from recon.ingest.jsonl import ROW_GROUP, lines_table

    def table(n):
        data = b"{}\n" * n
        offsets = np.arange(0, 3 * n + 1, 3, dtype=np.int64)
        return lines_table(data, offsets, np.arange(1, n + 1, dtype=np.int64))

    small = table(84_000)  # a collector's hourly file of jobs
    assert small.num_rows == 84_000 and len(small.to_batches()) > 1
    assert small.column("line_no").to_pylist()[-1] == 84_000
    assert small.column("line")[0].as_py() == "{}\n"
    assert len(table(2 * ROW_GROUP).to_batches()) == 1
