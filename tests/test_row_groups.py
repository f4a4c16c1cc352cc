"""Landing leaves DuckDB row groups full, so the commit's checkpoint has none to merge.

An INSERT of more rows than a row group (122,880) writes whole row groups and leaves its last
one partly filled; the next INSERT starts a new one. The checkpoint at the commit then merges
partly filled row groups by rewriting them (vacuum): 0.8 s of recompressing job documents on
the 500-node target day unless landing cuts its chunks after whole row groups of lines
(bench/README.md). These tests turn the vacuum off before the commit
(`max_vacuum_tasks = 0`) and count the row groups landing left: as many as the rows need.
They land on two DuckDB threads, as on the target machine (on one, an INSERT of more rows
than a row group appends to the table's last row group, and the List test would pass without
the fix).
"""

from __future__ import annotations

import json
import math

import recon.ingest.jsonl as jsonl_mod
from recon.db import connect
from recon.ingest.land import load_folder

RG = jsonl_mod.ROW_GROUP


def _row_groups(con, table: str) -> list[int]:
    return [r[1] for r in con.execute(
        f"select row_group_id, sum(count) from pragma_storage_info('{table}') "
        "where column_id = 0 and segment_type <> 'VALIDITY' group by 1 order by 1").fetchall()]


def _land_without_vacuum(folder, db, monkeypatch):
    monkeypatch.setenv("RECON_THREADS", "2")
    con = connect(db)
    con.execute("begin transaction")
    load_folder(con, folder, transaction=False)
    con.execute("set max_vacuum_tasks = 0")  # what landing left, not what a checkpoint merged
    con.execute("commit")
    con.execute("checkpoint")
    return con


def test_jsonl_chunks_of_more_lines_than_a_row_group_land_as_whole_row_groups(tmp_path,
                                                                           monkeypatch):
    # 16 MiB chunks of ~110-byte job lines: ~150k lines, more than a row group, in each chunk
    monkeypatch.setattr(jsonl_mod, "FAST_CHUNK", 16 << 20)
    n = int(3.6 * RG)
    line = ('{"id": "j%07d", "status": "COMPLETED", "executionTime": 5, "endpointId": "ep1", '
            '"completedAt": "2026-06-01T10:01:00.000Z"}\n')
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "jobs.jsonl").write_text("".join(line % i for i in range(n)))
    con = _land_without_vacuum(tmp_path / "in", tmp_path / "w.duckdb", monkeypatch)
    groups = _row_groups(con, "raw.serverless_jobs")
    assert sum(groups) == n
    assert len(groups) == math.ceil(n / RG), groups  # not 5 (a partial one after each chunk)
    assert all(g == RG for g in groups[:-1]), groups
    # every line landed once, numbered as in the file, across the cut chunks
    assert con.execute("select count(distinct record_no), min(record_no), max(record_no), "
                       "count(*) filter (where doc ->> '$.id' <> printf('j%07d', record_no - 1)) "
                       "from raw.serverless_jobs").fetchone() == (n, 1, n, 0)
    con.close()


def test_a_big_list_fills_the_row_group_the_files_before_it_left(tmp_path, monkeypatch):
    """A Kubernetes List of more items than a row group lands after the watch files (Lists are
    parsed ahead and land last): its whole row groups' worth of items in one INSERT, the rest in
    another that fills the watch files' last, partly filled row group."""
    folder = tmp_path / "in" / "cluster=c1"
    folder.mkdir(parents=True)
    watch = 1000
    (folder / "watch.jsonl").write_text("".join(json.dumps(
        {"type": "ADDED", "object": {"kind": "Pod", "metadata": {
            "uid": f"p{i}", "resourceVersion": str(i), "creationTimestamp": "2026-06-01T00:00:00Z"
        }}}) + "\n" for i in range(watch)))
    items = RG + 5000
    (folder / "events.json").write_text(json.dumps({
        "apiVersion": "v1", "kind": "EventList", "metadata": {"resourceVersion": "9"},
        "items": [{"kind": "Event", "metadata": {"uid": f"e{i}", "resourceVersion": str(i)},
                   "reason": "Started"} for i in range(items)]}))
    con = _land_without_vacuum(tmp_path / "in", tmp_path / "w.duckdb", monkeypatch)
    groups = _row_groups(con, "raw.k8s_objects")
    assert sum(groups) == watch + items
    assert len(groups) == 2, groups  # not 3: the watch files' 1,000 rows not left alone
    assert con.execute("select count(*) filter (where event_type = 'LISTED'), count(distinct uid) "
                       "from raw.k8s_objects").fetchone() == (items, watch + items)
    con.close()
