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


def _list_folder(tmp_path):
    import json

    folder = tmp_path / "in" / "cluster=c1"
    folder.mkdir(parents=True)
    items = [{"kind": "Event", "metadata": {"uid": f"e{i}", "resourceVersion": str(i)},
              "reason": "Scheduled"} for i in range(50)]
    # sorted first: the List is parsed ahead and lands last, the results keep the file order
    (folder / "a-events.json").write_text(json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": items}, indent=1))
    watch = [{"type": "ADDED", "object": {"kind": "Pod", "metadata": {
        "uid": f"p{i}", "resourceVersion": str(i), "creationTimestamp": "2026-11-01T00:00:00Z"}}}
        for i in range(20)]
    (folder / "b-watch.jsonl").write_text("\n".join(map(json.dumps, watch)) + "\n")
    return folder


def test_big_lists_are_parsed_ahead_in_a_thread_and_results_keep_file_order(
        tmp_path, monkeypatch):
    import threading

    from recon import db
    from recon.ingest import land, lists

    _list_folder(tmp_path)
    monkeypatch.setattr(lists, "LIST_MIN_BYTES", 0)
    threads = []
    real = land.prepare_list

    def spy(path):
        threads.append((path.name, threading.current_thread().name))
        return real(path)

    monkeypatch.setattr(land, "prepare_list", spy)
    con = db.connect(tmp_path / "w.duckdb")
    results = land.load_folder(con, tmp_path / "in")
    assert threads and threads[0][0] == "a-events.json"
    assert all(t.startswith("recon-list") for _, t in threads), threads
    assert [r.path.rsplit("/", 1)[1] for r in results] == ["a-events.json", "b-watch.jsonl"]
    assert [(r.kind, r.loaded) for r in results] == [("k8s_list", 50), ("jsonl", 20)]
    assert con.execute("select count(*), count(distinct uid) from raw.k8s_objects "
                       "where event_type = 'LISTED'").fetchone() == (50, 50)


def test_a_big_document_that_is_no_list_is_read_by_the_python_reader_in_the_list_thread(
        tmp_path, monkeypatch):
    """A List candidate that prepare_list turns down (a day's serverless billing: one document
    of records) is read by read_file in the List thread, while the main thread lands the other
    files: the same rows, quarantine and accounting as read_file on the main thread."""
    import json
    import threading

    from recon import db
    from recon.ingest import land, lists

    folder = _list_folder(tmp_path)
    records = [{"endpointId": "ep1", "startTime": f"2026-11-01T{h:02d}:00:00Z",
                "endTime": f"2026-11-01T{h:02d}:59:59Z", "amount": h / 4} for h in range(24)]
    records[5]["amount"] = True  # quarantined, with its reason
    (folder / "c-billing.json").write_text(json.dumps(
        {"records": records, "metadata": {}, "x_recon": {"endpoint": "/billing/endpoints"}}))
    monkeypatch.setattr(lists, "LIST_MIN_BYTES", 0)
    threads = []
    real = land.read_file

    def spy(path, display, limits=None):
        threads.append((path.name, threading.current_thread().name))
        return real(path, display, limits)

    monkeypatch.setattr(land, "read_file", spy)

    def landed(con):
        return (con.execute("select locator, doc from raw.runpod_billing order by record_no"
                            ).fetchall(),
                con.execute("select locator, reason from raw.quarantine").fetchall(),
                con.execute("select kind, records_in, records_loaded, records_quarantined "
                            "from raw.files where source_file like '%c-billing.json'").fetchall())

    con = db.connect(tmp_path / "w.duckdb")
    results = land.load_folder(con, tmp_path / "in")
    assert [r.path.rsplit("/", 1)[1] for r in results] == [
        "a-events.json", "b-watch.jsonl", "c-billing.json"]
    assert [n for n, t in threads if t.startswith("recon-list")] == ["c-billing.json"]
    ahead = landed(con)
    assert len(ahead[0]) == 23 and ahead[1] == [("records[5]", "amount is not a number: 'True'")]
    assert ahead[2] == [("runpod_billing", 24, 23, 1)]
    con.close()
    monkeypatch.setattr(land, "is_list_candidate", lambda p: False)  # no List thread
    threads.clear()
    con = db.connect(tmp_path / "main.duckdb")
    land.load_folder(con, tmp_path / "in")
    assert ("c-billing.json", threading.current_thread().name) in threads
    assert landed(con) == ahead
    con.close()


def test_a_list_whose_ahead_parse_fails_is_quarantined_and_the_rest_lands(tmp_path, monkeypatch):
    from recon import db
    from recon.ingest import land, lists

    _list_folder(tmp_path)
    monkeypatch.setattr(lists, "LIST_MIN_BYTES", 0)

    def broken(path):
        raise OSError(f"{path.name}: disk went away")

    monkeypatch.setattr(land, "prepare_list", broken)
    con = db.connect(tmp_path / "w.duckdb")
    results = {r.path.rsplit("/", 1)[1]: r for r in land.load_folder(con, tmp_path / "in")}
    assert results["a-events.json"].kind == "unreadable"
    assert results["b-watch.jsonl"].loaded == 20
    reason = con.execute("select reason from raw.quarantine where source_file like '%a-events.json'"
                         ).fetchone()[0]
    assert "OSError" in reason and "disk went away" in reason
    assert con.execute("select count(*) from raw.k8s_objects where event_type = 'LISTED'"
                       ).fetchone()[0] == 0


@pytest.mark.parametrize("before", [True, False])
def test_build_writes_without_insertion_order_and_restores_the_setting(tmp_path, monkeypatch,
                                                                       before):
    from recon import db
    from recon.build import run as runner
    from recon.build import settings
    from recon.config import load_config
    from recon.ingest import land

    _list_folder(tmp_path)
    con = db.connect(tmp_path / "w.duckdb")
    land.load_folder(con, tmp_path / "in")
    settings.write_config(con, load_config(None), None, None)
    con.execute(f"set preserve_insertion_order = {before}")
    seen = []
    real = runner._build_one

    def spy(con, *a, **k):
        seen.append(con.execute("select current_setting('preserve_insertion_order')").fetchone()[0])
        return real(con, *a, **k)

    monkeypatch.setattr(runner, "_build_one", spy)
    runner.build(con)
    assert seen and not any(seen)
    assert con.execute("select current_setting('preserve_insertion_order')").fetchone()[0] is before
    assert con.execute("select count(*) from staging.stg_k8s__pods").fetchone()[0] == 20


def test_a_warehouse_connection_writes_each_row_group_of_a_bulk_append_as_it_fills(tmp_path):
    """connect() sets DuckDB to flush a bulk append's row groups one at a time (its default
    buffers five for the commit to write on one thread: ~90 MB more peak on the 500-node day);
    a read-only connection, which appends nothing, opens as before."""
    from recon import db

    con = db.connect(tmp_path / "w.duckdb")
    assert con.execute("select current_setting('write_buffer_row_group_count')").fetchone()[0] \
        == db.WRITE_BUFFER_ROW_GROUPS == 1
    con.close()
    ro = db.connect(tmp_path / "w.duckdb", read_only=True)
    assert ro.execute("select count(*) from raw.files").fetchone()[0] == 0
    ro.close()
