"""Landing lowers DuckDB's write buffer for its inserts and leaves the connection as it was."""

from __future__ import annotations

import duckdb
import pytest

from recon.ingest import jsonl


def _setting(con):
    return con.execute("select current_setting('write_buffer_row_group_memory_limit')"
                       ).fetchall()[0][0]


@pytest.mark.parametrize("memory_limit,user_value", [
    (None, None), ("1GB", None), ("200MB", None), (None, "700MB"), (None, "16MB")])
def test_small_write_buffer_lowers_and_restores(memory_limit, user_value):
    con = duckdb.connect()
    if memory_limit:
        con.execute(f"set memory_limit = '{memory_limit}'")
    if user_value:
        con.execute(f"set write_buffer_row_group_memory_limit = '{user_value}'")
    before = _setting(con)
    con.execute("begin")
    with jsonl.small_write_buffer(con):
        inside = _setting(con)
    con.execute("commit")
    assert _setting(con) == before
    num, unit = inside.split()
    size = float(num) * jsonl._UNITS[unit.lower()]
    before_size = float(before.split()[0]) * jsonl._UNITS[before.split()[1].lower()]
    assert size <= min(jsonl.WRITE_BUFFER, before_size) * 1.01


def test_small_write_buffer_restores_after_an_error():
    con = duckdb.connect()
    before = _setting(con)
    with pytest.raises(RuntimeError), jsonl.small_write_buffer(con):
        raise RuntimeError("boom")
    assert _setting(con) == before
