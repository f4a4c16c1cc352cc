"""Incremental staging: a run that adds files parses only those, and equals a full rebuild."""

import importlib.util
import os
import re
import shutil
from pathlib import Path

import pytest

from recon.build.indexes import HASH_CHECK
from recon.build.model_settings import Spec, bounds_of, spec_of
from recon.build.models import SQL_DIR, sql_models
from recon.db import connect
from recon.pipeline import run

ROOT = Path(__file__).resolve().parent.parent


def _harness():
    spec = importlib.util.spec_from_file_location("bench_harness", ROOT / "bench" / "harness.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _add_day(daily: Path, day, land: Path) -> None:
    src = daily / f"day-{day.isoformat()}"
    for p in src.rglob("*"):
        if p.is_file():
            q = land / p.relative_to(daily)
            q.parent.mkdir(parents=True, exist_ok=True)
            os.link(p, q)


@pytest.fixture(scope="module")
def daily(tmp_path_factory):
    from recon.simulate import simulate

    root = tmp_path_factory.mktemp("incr")
    simulate(root / "sim", seed=5, days=3, nodes=4, endpoints=2)
    (root / "sim" / "expected" / "ground_truth.json").unlink()
    days = _harness().split_days(root / "sim", root / "daily")
    return root, days


def staging_tables() -> list[str]:
    return [n for layer, n, _ in sql_models() if layer == "staging"]


def assert_same_tables(con, a: str, b: str, tables) -> None:
    for t in tables:
        only_a = con.execute(f"select count(*) from (from {a}.{t} except all from {b}.{t})").fetchone()[0]
        only_b = con.execute(f"select count(*) from (from {b}.{t} except all from {a}.{t})").fetchone()[0]
        n = con.execute(f"select count(*) from {a}.{t}").fetchone()[0]
        assert (only_a, only_b) == (0, 0), f"{t}: {only_a} rows only in {a}, {only_b} only in {b} (of {n})"


def full_copy(con, schema: str, tables) -> None:
    """Every staging model rebuilt from all raw rows into `schema`, as a full run would."""
    con.execute(f"create schema if not exists {schema}")
    for t in tables:
        body = (SQL_DIR / "staging" / f"{t}.sql").read_text().strip().rstrip(";")
        spec = spec_of(t)
        if spec is not None and spec.order is not None:  # every row ranked, plainly
            body = (f"select * from ({body}) qualify row_number() over "
                    f"(partition by {', '.join(spec.key)} order by {spec.order}) = 1")
        con.execute(f"create or replace table {schema}.{t} as {body}")


def test_the_big_staging_models_are_incremental():
    names = {n for layer, n, p in sql_models() if layer == "staging" and spec_of(n)}
    assert {"stg_k8s__pods", "stg_k8s__events", "stg_runpod__jobs", "quarantine_casts"} <= names


def test_daily_runs_parse_only_new_files_and_equal_a_full_rebuild(daily, tmp_path, monkeypatch):
    root, days = daily
    land = tmp_path / "land"
    land.mkdir()
    shutil.copy(root / "daily" / "recon.toml", land / "recon.toml")
    db = tmp_path / "w.duckdb"
    merged = []
    import recon.build.incremental as inc

    real_merge = inc.StagingState.merge
    monkeypatch.setattr(inc.StagingState, "merge",
                        lambda self, table, sql: merged.append((table, tuple(self.new)))
                        or real_merge(self, table, sql))
    spans, probes = [], []
    real_pred = inc.StagingState._span_predicate
    monkeypatch.setattr(inc.StagingState, "_span_predicate", lambda self, model, *a: spans.append(
        (model, real_pred(self, model, *a))) or spans[-1][1])
    real_span = inc.StagingState._span
    monkeypatch.setattr(inc.StagingState, "_span", lambda self, model, *a: probes.append(model)
                        or real_span(self, model, *a))
    for d in days[:3]:
        _add_day(root / "daily", d, land)
        run(land, db, day_from=d, day_to=d)
    # refolds read the span their keys' rows lie in: stg_k8s__pod_life the pods' versions
    # (meta.bounds__stg_k8s__pods), stg_runpod__workers the snapshots; no row has a null
    # span column here, so no `or … is null` keeps DuckDB from skipping row groups
    # (stg_k8s__pod_life keeps no bounds: its own rows are read whole, `true`)
    by_model = {}
    for model, pred in spans:
        by_model.setdefault(model, []).append(pred)
    assert "stg_k8s__pod_life" in probes and set(by_model) == {
        "stg_k8s__pods", "stg_runpod__worker_snapshots", "stg_runpod__workers"}
    # the workers' own rows are found within the snapshots' span already probed (`within
    # (pulled_at)`): no probe of meta.bounds__stg_runpod__workers
    assert "stg_runpod__worker_snapshots" in probes and "stg_runpod__workers" not in probes
    assert any(" between " in p for p in by_model["stg_runpod__workers"])
    # (`false`: none of the keys has rows there yet, as the fixture's workers are new each day)
    for model, preds in by_model.items():
        assert all(p == "false" or (" between " in p and "is null" not in p) for p in preds), \
            (model, preds)
    assert any(" between " in p for p in by_model["stg_k8s__pods"])
    assert any(" between " in p for p in by_model["stg_runpod__worker_snapshots"])
    # runs 2 and 3 merged only their day's new files into the incremental models
    assert merged, "no incremental merge happened"
    for table, new in merged:
        assert new and all(days[0].isoformat() not in f for f in new), (table, new)
    con = connect(db)
    full_copy(con, "full_staging", staging_tables())
    assert_same_tables(con, "staging", "full_staging", staging_tables())
    assert con.execute("select count(*) from staging.stg_k8s__pods").fetchone()[0] > 0
    con.close()


def test_a_replaced_file_rebuilds_staging_in_full(daily, tmp_path):
    root, _days = daily
    land = tmp_path / "land"
    shutil.copytree(root / "daily", land)
    db = tmp_path / "w.duckdb"
    run(land, db)
    # a job record file is replaced: its old rows may have won keys other files hold too
    jobs = sorted(land.rglob("*jobs*.jsonl"))
    assert jobs
    victim = jobs[0]
    lines = victim.read_bytes().splitlines(keepends=True)
    victim.write_bytes(b"".join(lines[: len(lines) // 2]))
    run(land, db)
    con = connect(db)
    full_copy(con, "full_staging", staging_tables())
    assert_same_tables(con, "staging", "full_staging", staging_tables())
    con.close()


def test_a_changed_model_is_rebuilt(daily, tmp_path, monkeypatch):
    root, _days = daily
    land = tmp_path / "land"
    shutil.copytree(root / "daily", land)
    db = tmp_path / "w.duckdb"
    run(land, db)
    con = connect(db)
    con.execute("update meta.staged_models set sql_sha256 = 'old' where model = 'stg_runpod__jobs'")
    con.execute("delete from staging.stg_runpod__jobs where job_id in "
                "(select job_id from staging.stg_runpod__jobs limit 3)")
    before = con.execute("select count(*) from staging.stg_runpod__jobs").fetchone()[0]
    con.close()
    run(land, db)  # no new file, but the model's SQL differs from what built the table
    con = connect(db)
    after = con.execute("select count(*) from staging.stg_runpod__jobs").fetchone()[0]
    assert after == before + 3
    con.close()


def test_a_warehouse_staged_before_the_owner_columns_gets_them_filled(daily, tmp_path):
    """stg_k8s__pods gained owner_kind and owner_name (metadata.ownerReferences). A warehouse whose
    table was built by the SQL before (no such columns, its hash in meta.staged_models) is
    rebuilt in full on its next run, new day or not: every version gets them, as a full run."""
    land, db = tmp_path / "land", tmp_path / "w.duckdb"
    root, days = _daily_runs(daily, land, db, 2)
    con = connect(db)
    n = con.execute("select count(*) from staging.stg_k8s__pods").fetchone()[0]
    con.execute("alter table staging.stg_k8s__pods drop column owner_kind")
    con.execute("alter table staging.stg_k8s__pods drop column owner_name")
    con.execute("update meta.staged_models set sql_sha256 = 'the SQL before' where model = 'stg_k8s__pods'")
    con.close()
    _add_day(root / "daily", days[2], land)
    run(land, db, day_from=days[2], day_to=days[2])
    con = connect(db)
    try:
        full_copy(con, "full_staging", staging_tables())
        assert_same_tables(con, "staging", "full_staging", staging_tables())
        # the simulator's pods are all a ReplicaSet's or a Job's, old days' versions too
        total, filled, kinds = con.execute(
            "select count(*), count(owner_kind), list(distinct owner_kind order by owner_kind) "
            "from staging.stg_k8s__pods").fetchone()
        assert total > n and filled == total and kinds == ["Job", "ReplicaSet"]
        # ... the first day's versions among them (staged before, not merged again by the delta)
        old, old_filled = con.execute("select count(*), count(owner_name) from staging.stg_k8s__pods "
                                      "where source_file like ?", [f"%{days[0].isoformat()}%"]).fetchone()
        assert old > 0 and old_filled == old
    finally:
        con.close()


def test_a_changed_setting_rebuilds_the_model(daily, tmp_path, monkeypatch):
    """meta.staged_models keys a kept table on its SQL and its settings in
    sql/staging/_models.toml: another dedupe order keeps other rows, so it rebuilds the table
    as a change of the SQL does (a grain edit does not)."""
    import dataclasses

    from recon.build import model_settings

    root, _days = daily
    land = tmp_path / "land"
    shutil.copytree(root / "daily", land)
    db = tmp_path / "w.duckdb"
    run(land, db)
    con = connect(db)
    con.execute("delete from staging.stg_runpod__jobs where job_id in "
                "(select job_id from staging.stg_runpod__jobs limit 3)")
    before = con.execute("select count(*) from staging.stg_runpod__jobs").fetchone()[0]
    con.close()
    real = model_settings.settings_of

    def patched(layer, name, **change):
        s = real(layer, name)
        return dataclasses.replace(s, **change) if name == "stg_runpod__jobs" else s

    counts = []
    for change in ({}, {"grain": "one row per job, said otherwise"},
                   {"incremental": Spec(("endpoint_id", "job_id"), "source_file, record_no")}):
        monkeypatch.setattr(model_settings, "settings_of",
                            lambda layer, name, change=change: patched(layer, name, **change))
        run(land, db)  # no new file
        con = connect(db)
        counts.append(con.execute("select count(*) from staging.stg_runpod__jobs").fetchone()[0])
        con.close()
    assert counts == [before, before, before + 3]


def _daily_runs(daily, land: Path, db: Path, n: int):
    """A landing folder with the daily fixture's first `n` days, each run as a daily run."""
    root, days = daily
    land.mkdir()
    shutil.copy(root / "daily" / "recon.toml", land / "recon.toml")
    for d in days[:n]:
        _add_day(root / "daily", d, land)
        run(land, db, day_from=d, day_to=d)
    return root, days


def _replay_run(daily, tmp_path, before_last=None):
    """Two daily runs, then a third whose new files repeat pod versions, jobs and billing
    buckets of the first two days; `before_last(con)` may tamper with the warehouse first.
    Returns (warehouse, number of changed jobs)."""
    import orjson

    land, db = tmp_path / "land", tmp_path / "w.duckdb"
    root, days = _daily_runs(daily, land, db, 2)
    pods = min(land.rglob("watch-pods*.jsonl"))
    k8s = pods.parent
    # sorts before the original: its copies of pod versions win in stg_k8s__pods
    (k8s / "0-replay-pods.jsonl").write_bytes(b"".join(pods.read_bytes().splitlines(True)[::3]))
    jobs = min(land.rglob("*jobs*.jsonl"))
    changed = []
    for line in jobs.read_bytes().splitlines()[::4]:
        doc = orjson.loads(line)
        doc["executionTime"] = 1234
        changed.append(orjson.dumps(doc))
    (jobs.parent / "zz-replay-jobs.jsonl").write_bytes(b"\n".join(changed) + b"\n")
    # jobs no earlier day had, each twice among the new files (in two files, and twice in the
    # later one): the merge settles keys repeated inside its own delta too
    fresh = [orjson.loads(line) for line in jobs.read_bytes().splitlines()[1:6]]
    for name, times in (("zz-twice-a.jsonl", (111,)), ("zz-twice-b.jsonl", (222, 333))):
        (jobs.parent / name).write_bytes(b"".join(
            orjson.dumps({**doc, "id": f"twice-{i}", "executionTime": t}) + b"\n"
            for t in times for i, doc in enumerate(fresh)))
    bills = min(land.rglob("billing-pods*.json"))
    shutil.copy(bills, bills.parent / "zz-replay-billing-pods.json")
    # workers of day 1 seen again on day 3 (one of them started earlier than day 1 said), and
    # once by a snapshot that does not say when it was pulled: their refold must read their
    # day-1 snapshots and replace their day-1 rows, whatever the bounds say
    workers = min(land.rglob("serverless-workers*.jsonl"))  # the connector's, with x_recon
    late = []
    for i, line in enumerate(workers.read_bytes().splitlines()[:2]):
        doc = orjson.loads(line)
        for w in doc["workers"]:
            w["startedAt"] = "2026-05-31T23:00:00Z"
        if i == 0:
            doc["x_recon"]["pulledAt"] = days[2].isoformat() + "T12:00:00.000Z"
        else:
            del doc["x_recon"]["pulledAt"]
        late.append(orjson.dumps(doc))
    # a new worker seen only by a snapshot without pulledAt (its last_seen_at is null: no span
    # covers it), with a job in the window: its session still starts at its startedAt
    doc = orjson.loads(workers.read_bytes().splitlines()[0])
    del doc["x_recon"]["pulledAt"]
    doc["workers"] = [{**doc["workers"][0], "id": "nopull-w", "uptimeSeconds": None,
                       "startedAt": days[2].isoformat() + "T01:00:00Z"}]
    late.append(orjson.dumps(doc))
    (workers.parent / "zz-replay-workers.jsonl").write_bytes(b"\n".join(late) + b"\n")
    job = {**orjson.loads(jobs.read_bytes().splitlines()[0]), "id": "nopull-job",
           "workerId": "nopull-w", "endpointId": doc["x_recon"]["endpointId"],
           "submittedAt": days[2].isoformat() + "T01:30:00.000Z",
           "completedAt": days[2].isoformat() + "T02:00:00.000Z"}
    (jobs.parent / "zz-nopull-jobs.jsonl").write_bytes(orjson.dumps(job) + b"\n")
    _add_day(root / "daily", days[2], land)
    if before_last is not None:
        con = connect(db)
        before_last(con)
        con.close()
    run(land, db, day_from=days[2], day_to=days[2])
    return db, len(changed)


def _assert_replay_merged(db, changed: int) -> None:
    con = connect(db)
    full_copy(con, "full_staging", staging_tables())
    assert_same_tables(con, "staging", "full_staging", staging_tables())
    won = con.execute("select count(*) from staging.stg_k8s__pods where source_file like '%0-replay-pods%'"
                      ).fetchone()[0]
    assert won > 0
    assert con.execute("select count(*) from staging.stg_runpod__jobs where execution_ms = 1234"
                       ).fetchone()[0] == changed
    # the later file's later record of each (source_file desc, record_no desc)
    assert con.execute("select count(*), count(distinct job_id), min(execution_ms), "
                       "max(execution_ms) from staging.stg_runpod__jobs where job_id like 'twice-%'"
                       ).fetchone() == (5, 5, 333, 333)
    assert con.execute("select count(*), count(distinct (endpoint_id, worker_id)) from "
                       "staging.stg_runpod__workers where started_at = '2026-05-31T23:00:00Z'"
                       ).fetchone() in ((1, 1), (2, 2))
    # the window's sessions take a worker's startedAt even when no snapshot said when it was
    # pulled (sql/scope/stg_runpod__workers.sql reads those rows apart from its span)
    assert con.execute("select start_assumed, make_timestamp(start_ms * 1000)::varchar from "
                       "intermediate.int_serverless__worker_sessions where worker_id = 'nopull-w'"
                       ).fetchall() == [(False, "2026-06-03 01:00:00")]
    # each key-hash index holds the hash of every key its table holds (indexes are built when a
    # run first needs them: the merged models' are there)
    valid = {r[0] for r in con.execute("select model from meta.key_indexes").fetchall()}
    assert {"stg_runpod__jobs", "stg_k8s__pods", "stg_runpod__jobs#bounds", "stg_k8s__pods#bounds",
            "stg_runpod__workers#bounds", "stg_runpod__worker_snapshots#bounds"} <= valid
    for t in staging_tables():
        spec = spec_of(t)
        if spec is None or spec.order is None or t not in valid:
            continue
        missing = con.execute(f"select count(*) from staging.{t} where hash({', '.join(spec.key)}) "
                              f"not in (select h from meta.key_hashes__{t})").fetchone()[0]
        assert missing == 0, t
        # ... once: a merge adds only the hashes that were not there (the replay meets old keys)
        dup = con.execute(f"select count(*) - count(distinct h) from meta.key_hashes__{t}"
                          ).fetchone()[0]
        assert dup == 0, t
    # each bounds index spans every row of its keys (sql/scope/ reads only that span)
    for t in staging_tables():
        b = bounds_of(t)
        if b is None or f"{t}#bounds" not in valid:
            continue
        outside = con.execute(f"""select count(*) from staging.{t} s
            where s.{b.col} is not null and not exists (
            select 1 from meta.bounds__{t} b where b.h = hash({', '.join(f's.{k}' for k in b.key)})
            and s.{b.col} between b.lo and b.hi)""").fetchone()[0]
        assert outside == 0, t
    con.close()


def test_records_repeated_in_a_later_file_compete_like_a_full_rebuild(daily, tmp_path):
    """The same pod version, job or billing bucket landed again in a new file: the winner is
    the model's own order (first file for pods, last for jobs and bills), as in a full run."""
    _assert_replay_merged(*_replay_run(daily, tmp_path))


def test_a_key_index_built_under_another_hash_is_rebuilt(daily, tmp_path):
    """The merge trusts meta.key_hashes__<model> to say no persisted row shares a new key, and
    the scope trusts meta.bounds__<model> to say when a worker's jobs completed. Indexes left by
    another DuckDB (whose hash() may differ: here emptied) must be rebuilt, or the repeated jobs
    and pod versions would be appended next to their rivals and old jobs left out."""
    def stale(con):
        assert con.execute("select count(*) from meta.key_indexes").fetchone()[0] >= 5
        for (model,) in con.execute("select model from meta.key_indexes").fetchall():
            name, _, bounds = model.partition("#")
            con.execute(f"delete from meta.{'bounds' if bounds else 'key_hashes'}__{name}")
        con.execute("update meta.key_indexes set hash_check = 0")

    _assert_replay_merged(*_replay_run(daily, tmp_path, stale))


def test_the_delta_reads_no_raw_table_directly(tmp_path):
    """Every `raw.<table>` of an incremental model is read through the new files' view."""
    from recon.build.incremental import StagingState

    con = connect(tmp_path / "d.duckdb")
    state = StagingState(con)
    state.new = ["/x/new-file.jsonl"]
    for layer, name, path in sql_models():
        body = path.read_text()
        if layer == "staging" and spec_of(name) and spec_of(name).source is None:
            delta = state.delta_sql(body)
            assert not re.search(r"\braw\.", delta), name
            assert "_recon_delta_" in delta, name
            con.execute(f"select * from ({delta}) limit 0")  # binds
    con.close()


MARTS = ["resource_day", "billed_segments", "allocation", "waste", "findings", "rates", "settlement",
         "restatements", "workload_lifecycle"]


def _marts_equal(a: Path, b: Path) -> None:
    import duckdb

    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute(f"attach '{a}' as a (read_only)")
    con.execute(f"attach '{b}' as b (read_only)")
    for t in MARTS:
        cols = [r[0] for r in con.execute(
            f"select column_name from information_schema.columns where table_catalog = 'a' "
            f"and table_schema = 'marts' and table_name = '{t}' order by ordinal_position").fetchall()]
        sel = ", ".join(cols)  # every digit: allocation's shares are decimals, its sums order-free
        n = con.execute(f"select count(*) from a.marts.{t}").fetchone()[0]
        only_a = con.execute(f"select count(*) from (select {sel} from a.marts.{t} "
                             f"except all select {sel} from b.marts.{t})").fetchone()[0]
        only_b = con.execute(f"select count(*) from (select {sel} from b.marts.{t} "
                             f"except all select {sel} from a.marts.{t})").fetchone()[0]
        assert (only_a, only_b) == (0, 0), f"marts.{t}: {only_a} rows only in {a.name}, {only_b} only in {b.name} (of {n})"
    con.close()


def test_windowed_daily_runs_equal_one_full_run(daily, tmp_path):
    """Day-by-day runs (each reading only its scope) build the same marts as one full run."""
    root, _ = daily
    full = tmp_path / "full.duckdb"
    run(root / "sim", full)
    import duckdb

    con = duckdb.connect(str(full), read_only=True)
    days = [r[0] for r in con.execute("select distinct day from marts.resource_day order by 1").fetchall()]
    con.close()
    assert len(days) >= 3
    win = tmp_path / "win.duckdb"
    for d in days:
        run(root / "sim", win, day_from=d, day_to=d)
    _marts_equal(full, win)
    con = duckdb.connect(str(win), read_only=True)
    # the scope really is smaller than history: the last run's intermediate holds fewer pods
    scoped = con.execute("select count(*) from intermediate.int_k8s__workloads").fetchone()[0]
    allp = con.execute("select count(distinct pod_uid) from staging.stg_k8s__pods").fetchone()[0]
    con.close()
    assert 0 < scoped < allp


def test_a_window_rerun_on_a_full_warehouse_changes_nothing(daily, tmp_path):
    root, _ = daily
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    run(root / "sim", a)
    shutil.copy(a, b)
    from datetime import date

    run(root / "sim", b, day_from=date(2026, 6, 2), day_to=date(2026, 6, 2))
    _marts_equal(a, b)


def test_a_window_rerun_keeps_a_worker_whose_first_job_ends_after_it(daily, tmp_path):
    """A serverless worker no snapshot saw (no startedAt) whose one job was submitted late on
    day 3 and completed after midnight: its session starts on day 3, at the submission
    (int_serverless__worker_sessions), although it completed nothing that day. A run of day 3
    (the job landed with it) must still read it (scope.window_workers), or day 3's serverless split
    loses its cold start, execution and rounding."""
    from datetime import date

    import duckdb
    import orjson

    root, _ = daily
    sim = tmp_path / "sim"
    shutil.copytree(root / "sim", sim)
    jobs = min(sim.rglob("*jobs*.jsonl"))
    doc = orjson.loads(jobs.read_bytes().splitlines()[0])
    job = {**doc, "id": "midnight-job", "workerId": "midnight-w", "delayTime": 1000,
           "executionTime": 600000, "submittedAt": "2026-06-03T23:50:00.000Z",
           "completedAt": "2026-06-04T00:10:00.000Z"}
    (jobs.parent / "zz-midnight-jobs.jsonl").write_bytes(orjson.dumps(job) + b"\n")
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    run(sim, a)
    con = duckdb.connect(str(a), read_only=True)
    assert con.execute("select day::varchar, start_assumed from "
                       "intermediate.int_serverless__worker_sessions where worker_id = 'midnight-w'"
                       ).fetchall() == [("2026-06-03", True)]
    con.close()
    shutil.copy(a, b)
    run(sim, b, day_from=date(2026, 6, 3), day_to=date(2026, 6, 3))
    con = duckdb.connect(str(b), read_only=True)
    assert con.execute("select count(*) from intermediate.int_serverless__worker_sessions "
                       "where worker_id = 'midnight-w'").fetchone()[0] == 1
    con.close()
    _marts_equal(a, b)


def _busy_second_node(w) -> None:
    """A second node (n2, Runpod pod pod2) with a task every day of four, billed throughout:
    each day has its own activity, so that a window run of day 4 has history before it."""
    from decimal import Decimal

    from tests.engine.build import t

    w.node("n2", "pod2", t("00:00"), t("00:01"))
    for day in range(4):
        w.pod(f"j2-{day}", "n2", t("01:00", day), t("01:05", day), t("02:00", day))
    w.compute("pod2", t("00:00"), t("12:00", day=3), Decimal("0.86"))


def _full_and_day4_runs(w, tmp_path):
    """Add `_busy_second_node`, write the world, and run it whole and as a day-4 window:
    the two warehouses' paths (full, win)."""
    from datetime import date

    _busy_second_node(w)
    d = w.write()
    full, win = tmp_path / "full.duckdb", tmp_path / "win.duckdb"
    run(d, full)
    run(d, win, day_from=date(2026, 6, 4), day_to=date(2026, 6, 4))
    return full, win


def test_a_session_older_than_the_window_keeps_its_history(tmp_path):
    """A node that finished its last task on day 1 and stays billed to day 4: day 4's seconds
    are `tail` (after the last task), which a window run only knows by reading the session
    from its start (scope.resource_bounds), not just the window's padding."""
    from decimal import Decimal

    import duckdb

    from tests.engine.build import World, t

    w = World(tmp_path / "w")
    w.node("n1", "pod1", t("09:50"), t("09:58"))
    w.pod("job-1", "n1", t("10:00"), t("10:05"), t("11:00"))
    w.compute("pod1", t("09:50"), t("12:00", day=3), Decimal("0.86"))
    full, win = _full_and_day4_runs(w, tmp_path)
    con = duckdb.connect(str(win), read_only=True)
    cats = dict(con.execute("select category, sum(seconds) from marts.billed_segments "
                            "where resource_id = 'pod1' and day = '2026-06-04' group by all").fetchall())
    con.close()
    assert set(cats) == {"tail"} and cats["tail"] == 12 * 3600
    con = duckdb.connect()
    con.execute(f"attach '{full}' as a (read_only)")
    con.execute(f"attach '{win}' as b (read_only)")
    for t_ in MARTS:
        q = f"from {{}}.marts.{t_}" + (" where day = '2026-06-04'" if t_ != "workload_lifecycle" else "")
        if t_ != "workload_lifecycle":  # a first window run holds only the window's pods
            assert con.execute(f"select count(*) from ({q.format('a')} except all {q.format('b')})").fetchone()[0] == 0, t_
        assert con.execute(f"select count(*) from ({q.format('b')} except all {q.format('a')})").fetchone()[0] == 0, t_
    con.close()


def test_a_window_reads_the_last_workload_of_an_island_not_its_history(tmp_path):
    """An instance billed without a break from day 1 to day 4, with tasks on days 1-3: day 4 is
    tail after the last task. Before the window, the day-4 run needs only the workloads that
    ended last (scope.stg_k8s__pods): an instance up for weeks would otherwise make every daily
    run read weeks of its pods. The last one is a workload of int_resource__workloads: a GPU
    pod without its own PodScheduled time counts when a Scheduled event gives it one (kept,
    though it ends after the last pod with one), a pod without GPUs never does."""
    from decimal import Decimal

    import duckdb

    from tests.engine.build import World, iso, t

    w = World(tmp_path / "w")
    w.node("n1", "pod1", t("09:50"), t("09:58"))
    for day in range(3):
        w.pod(f"job-{day}", "n1", t("10:00", day), t("10:05", day), t("11:00", day))
    w.pod("late", "n1", t("12:00", 2), t("12:05", 2), t("13:00", 2))
    for ev in w.watch:  # `late` has no PodScheduled condition: only its Scheduled event
        if ev["object"]["metadata"]["name"] == "late":
            conds = ev["object"]["status"]["conditions"]
            conds[:] = [c for c in conds if c["type"] != "PodScheduled"]
    w.events.append({"apiVersion": "v1", "kind": "Event",
                     "metadata": {"uid": "ev-late", "name": "ev-late",
                                  "creationTimestamp": iso(t("12:00", 2))},
                     "involvedObject": {"kind": "Pod", "name": "late", "namespace": "ml",
                                        "uid": "uid-late"},
                     "reason": "Scheduled", "type": "Normal", "message": "assigned ml/late to n1",
                     "firstTimestamp": iso(t("12:00", 2)), "lastTimestamp": iso(t("12:00", 2))})
    w.pod("sidecar", "n1", t("13:00", 2), t("13:01", 2), t("14:00", 2), gpus=0)
    w.compute("pod1", t("09:50"), t("12:00", day=3), Decimal("0.86"))
    full, win = _full_and_day4_runs(w, tmp_path)
    got = {}
    for name, db in (("full", full), ("win", win)):
        con = duckdb.connect(str(db), read_only=True)
        got[name] = (
            con.execute("select last_finished_at, workloads > 0 from "
                        "intermediate.int_resource__session_context where resource_id = 'pod1'"
                        ).fetchall(),
            con.execute("select category, sum(seconds) from marts.billed_segments where "
                        "resource_id = 'pod1' and day = '2026-06-04' group by all").fetchall(),
            {r[0] for r in con.execute("select pod_name from intermediate.int_k8s__workloads "
                                       "where node_name = 'n1'").fetchall()})
        con.close()
    assert got["full"][0] == [(t("13:00", 2), True)]  # the event made `late` the last workload
    assert got["win"][0] == got["full"][0]
    assert got["win"][1] == got["full"][1] == [("tail", 12 * 3600)]
    assert got["full"][2] == {"job-0", "job-1", "job-2", "late", "sidecar"}
    # before the window: the last pod with its own PodScheduled time, and what ends after it
    assert got["win"][2] == {"job-2", "late"}


def test_reports_refuse_days_a_window_run_did_not_build(daily, tmp_path):
    """After a window run the intermediate tables hold its scope only: a report, export or
    what-if for another day says so instead of showing partial numbers."""
    from datetime import date

    from recon.outputs.exports import network_volume_lingering
    from recon.outputs.report import report_data
    from recon.outputs.whatif import whatif

    root, _ = daily
    db = tmp_path / "w.duckdb"
    run(root / "sim", db, day_from=date(2026, 6, 2), day_to=date(2026, 6, 2))
    con = connect(db, read_only=True)
    assert report_data(con, date(2026, 6, 2))["billed"] > 0
    for call in (lambda: report_data(con, date(2026, 6, 1)),
                 lambda: network_volume_lingering(con, date(2026, 6, 1), date(2026, 6, 2)),
                 lambda: whatif(con, date(2026, 6, 3), date(2026, 6, 3), cooldown_s=60)):
        with pytest.raises(ValueError, match=r"--from 2026-06-0\d --to 2026-06-0\d"):
            call()
    con.close()


def test_a_window_over_all_the_data_skips_the_scope(daily, tmp_path, monkeypatch):
    """The first day of a warehouse: nothing lies before the window, so the scope would copy
    staging; the run reads staging directly (and builds the same marts)."""
    from datetime import date

    import recon.build.run as wh

    built = []
    real = wh._build_one
    monkeypatch.setattr(wh, "_build_one", lambda con, st, layer, name, *a: built.append(layer)
                        or real(con, st, layer, name, *a))
    root, days = daily
    d1 = tmp_path / "d1"
    d1.mkdir()
    shutil.copy(root / "daily" / "recon.toml", d1 / "recon.toml")
    _add_day(root / "daily", days[0], d1)
    run(d1, tmp_path / "a.duckdb", day_from=days[0], day_to=days[0])
    assert "scope" not in built and "marts" in built
    built.clear()
    run(root / "sim", tmp_path / "b.duckdb", day_from=date(2026, 6, 3), day_to=date(2026, 6, 3))
    assert "scope" in built


def test_dedupe_keeps_what_ranking_every_row_keeps(tmp_path):
    """Staging ranks only rows whose key hash repeats; the rows kept must be those a plain
    `qualify row_number()` over every row keeps, null keys and 3-fold repeats included."""
    import json
    import random

    from recon.build.run import build
    from recon.build.settings import write_config
    from recon.config import load_config

    rng = random.Random(3)
    con = connect(tmp_path / "d.duckdb")
    pods, jobs, events = [], [], []
    seen = {}
    for i in range(3000):
        uid, rv = f"u{rng.randrange(400)}", str(rng.randrange(3))
        cluster = rng.choice(["a", "b", None])
        doc = {"kind": "Pod", "metadata": {"uid": uid, "resourceVersion": rv, "name": f"p{i}",
                                           "namespace": "ml",
                                           "creationTimestamp": "2026-06-01T10:00:00Z"},
               "spec": {"nodeName": f"n{i}"}, "status": {}}
        if rng.random() < 0.1:  # not staged (quarantined): a later row of its key may win
            doc["metadata"]["creationTimestamp"] = "not a time"
        if (uid, rv) in seen and rng.random() < 0.5:  # the same version landed again, as it was
            doc = seen[(uid, rv)]
        seen[(uid, rv)] = doc
        pods.append((f"f{rng.randrange(5)}", i, "l", cluster, "ADDED", "Pod", uid, rv, None,
                     json.dumps(doc)))
        ev = {"kind": "Event", "metadata": {"uid": f"e{rng.randrange(300)}",
                                            "resourceVersion": str(rng.randrange(4))},
              "reason": f"r{i}", "lastTimestamp": "2026-06-01T10:00:00Z"}
        events.append((f"f{rng.randrange(5)}", i, "l", cluster, "ADDED", "Event",
                       ev["metadata"]["uid"], ev["metadata"]["resourceVersion"], None, json.dumps(ev)))
        job = {"id": rng.choice([f"j{rng.randrange(500)}", None]),
               "endpointId": rng.choice(["ep1", "ep2", None]), "workerId": f"w{i}",
               "completedAt": "2026-06-01T10:01:00Z", "executionTime": i}
        jobs.append((f"f{rng.randrange(5)}", i, "l", json.dumps(job)))
    con.executemany("insert into raw.k8s_objects (source_file, record_no, locator, cluster, "
                    "event_type, kind, uid, resource_version, seen_at, doc) "
                    "values (?, ?, ?, ?, ?, ?, ?, ?, ?, json(?))",
                    pods + events)
    con.executemany("insert into raw.serverless_jobs (source_file, record_no, locator, doc) "
                    "values (?, ?, ?, json(?))", jobs)
    write_config(con, load_config(None), None, None)
    build(con)
    reference = {
        "stg_k8s__pods": ("cluster, pod_uid, resource_version", "source_file, record_no"),
        "stg_runpod__jobs": ("endpoint_id, job_id", "source_file desc, record_no desc"),
        "stg_k8s__events": ("cluster, event_uid",
                            "try_cast(resource_version as hugeint) desc nulls last, source_file desc, record_no desc"),
    }
    for model, (key, order) in reference.items():
        body = (SQL_DIR / "staging" / f"{model}.sql").read_text()
        # every row the model yields (its `incremental` setting is the dedupe), ranked plainly
        ranked = f"""select source_file, record_no from (
            {body.strip().rstrip(';')}
            ) qualify row_number() over (partition by {key} order by {order}) = 1"""
        if model == "stg_k8s__pods":  # it drops repeated documents itself: rank raw rows here
            ranked = """select source_file, record_no from raw.k8s_objects
                where kind = 'Pod'
                  and try_cast(doc ->> '$.metadata.creationTimestamp' as timestamptz) is not null
                qualify row_number() over (
                    partition by cluster, uid, coalesce(nullif(resource_version, ''), md5(doc::varchar))
                    order by source_file, record_no) = 1"""
        kept = f"select source_file, record_no from staging.{model}"
        assert con.execute(f"select count(*) from ({ranked})").fetchone()[0] > 100
        for a, b in ((ranked, kept), (kept, ranked)):
            assert con.execute(f"select count(*) from ({a} except all {b})").fetchone()[0] == 0, model
    n = con.execute("select count(*) from staging.stg_runpod__jobs where job_id is null").fetchone()[0]
    assert 0 < n <= 3  # null ids: one per endpoint (incl. null), as partition by groups nulls
    con.close()


def test_a_file_still_being_written_waits_for_a_later_run(daily, tmp_path):
    """With a settle time, a file modified moments ago (the collector's current hour) is not
    landed but reported; once it is left alone it lands whole, as a new file, so staging stays
    incremental (no file ever grows after landing)."""
    import time as _time

    root, days = daily
    land = tmp_path / "land"
    land.mkdir()
    shutil.copy(root / "daily" / "recon.toml", land / "recon.toml")
    for d in days[:2]:
        _add_day(root / "daily", d, land)
    old = _time.time() - 3600
    for p in land.rglob("*"):
        if p.is_file():
            os.utime(p, (old, old))
    fresh = land / "k8s" / "cluster=sim-cluster" / "hour-now.jsonl"
    pods = max(land.rglob("watch-pods*.jsonl")).read_bytes().splitlines(True)
    fresh.parent.mkdir(parents=True, exist_ok=True)
    fresh.write_bytes(b"".join(pods[:5]).replace(b'"uid":"', b'"uid":"late-'))
    db = tmp_path / "w.duckdb"
    res = run(land, db, day_from=days[1], day_to=days[1], settle_seconds=600)
    waiting = [r for r in res.files if r.path == str(fresh.resolve())]
    assert len(waiting) == 1 and "still being written" in waiting[0].skip_reason
    con = connect(db)
    assert con.execute("select count(*) from raw.files where source_file = ?",
                       [str(fresh.resolve())]).fetchone()[0] == 0
    con.close()
    os.utime(fresh, (old, old))
    res = run(land, db, day_from=days[1], day_to=days[1], settle_seconds=600)
    landed = [r for r in res.files if r.path == str(fresh.resolve())]
    assert landed[0].loaded == 5 and not landed[0].skip_reason
    con = connect(db)
    assert con.execute("select count(*) from meta.staged_files").fetchone()[0] == \
        con.execute("select count(*) from raw.files").fetchone()[0]
    assert con.execute("select count(*) from staging.stg_k8s__pods where pod_uid like 'late-%'"
                       ).fetchone()[0] == 5
    con.close()


def test_a_task_after_the_window_in_the_same_session_is_read(tmp_path):
    """A node billed from day 1 to day 6 with tasks on day 1 and day 6: day 3 is an idle gap
    between tasks, not a tail — which a window run for day 3 can only tell by reading the
    island to its end (a backfill has the later days already)."""
    from datetime import date
    from decimal import Decimal

    import duckdb

    from tests.engine.build import World, t

    w = World(tmp_path / "w")
    w.node("n1", "pod1", t("09:50"), t("09:58"))
    w.pod("job-1", "n1", t("10:00"), t("10:05"), t("11:00"))
    w.pod("job-2", "n1", t("10:00", day=5), t("10:05", day=5), t("11:00", day=5))
    w.compute("pod1", t("09:50"), t("12:00", day=5), Decimal("0.86"))
    d = w.write()
    full, win = tmp_path / "full.duckdb", tmp_path / "win.duckdb"
    run(d, full)
    run(d, win, day_from=date(2026, 6, 3), day_to=date(2026, 6, 3))
    q = ("select category, sum(seconds) from marts.billed_segments where resource_id = 'pod1' "
         "and day = '2026-06-03' group by all order by 1")
    got = {}
    for name, db in (("full", full), ("win", win)):
        con = duckdb.connect(str(db), read_only=True)
        got[name] = con.execute(q).fetchall()
        con.close()
    assert got["full"] == [("idle_gap", 86400)]
    assert got["win"] == got["full"]


@pytest.mark.parametrize("seed,days,nodes,scale", [(11, 6, 8, 2.0), (21, 4, 10, 1.0)])
def test_day_by_day_equals_one_run_on_other_fleets(tmp_path, seed, days, nodes, scale):
    """The scope has no time padding: what crosses a day's edges is widened by entity. More
    fleets than the module's one (bench: also the 30-day 100-node simulation, every day)."""
    import duckdb

    from recon.simulate import simulate

    simulate(tmp_path / "sim", seed=seed, days=days, nodes=nodes, endpoints=2, scale=scale)
    (tmp_path / "sim" / "expected" / "ground_truth.json").unlink()
    run(tmp_path / "sim", tmp_path / "full.duckdb")
    con = duckdb.connect(str(tmp_path / "full.duckdb"), read_only=True)
    ds = [r[0] for r in con.execute("select distinct day from marts.resource_day order by 1").fetchall()]
    con.close()
    assert len(ds) >= days
    for d in ds:
        run(tmp_path / "sim", tmp_path / "win.duckdb", day_from=d, day_to=d)
    _marts_equal(tmp_path / "full.duckdb", tmp_path / "win.duckdb")


def test_synthetic_history_keeps_keys_apart_and_the_day_it_precedes(daily, tmp_path):
    """bench/synth_history.py (the day-30 figures at 500 nodes): its copies multiply history
    without sharing a key with the real rows, leave the meta indexes valid, and a day run on top
    of them builds that day's marts as it would without them."""
    import duckdb

    spec = importlib.util.spec_from_file_location("synth", ROOT / "bench" / "synth_history.py")
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    root, days = daily
    dbs = {}
    for name, copies in (("plain", 0), ("synth", 2)):
        land = tmp_path / name
        land.mkdir()
        shutil.copy(root / "daily" / "recon.toml", land / "recon.toml")
        db = tmp_path / f"{name}.duckdb"
        for d in days[:2]:
            _add_day(root / "daily", d, land)
            run(land, db, day_from=d, day_to=d)
        if copies:
            con = duckdb.connect(str(db))
            before = {t: con.execute(f"select count(*) from staging.{t}").fetchone()[0]
                      for t in ("stg_runpod__jobs", "stg_k8s__pods", "stg_runpod__workers")}
            con.close()
            synth.main([str(db), "--copies", str(copies), "--shift-days", "2"])
            con = connect(db)
            for t, n in before.items():
                assert n > 0
                assert con.execute(f"select count(*) from staging.{t}").fetchone()[0] == 3 * n, t
            assert con.execute("select count(*) - count(distinct (endpoint_id, job_id)) "
                               "from staging.stg_runpod__jobs").fetchone()[0] == 0
            # every keyed model's index and every bounds index rebuilt under this hash()
            check = con.execute(f"select {HASH_CHECK}").fetchone()[0]
            assert con.execute("select count(*) from meta.key_indexes where hash_check = ?",
                               [check]).fetchone()[0] >= 10
            con.close()
        _add_day(root / "daily", days[2], land)
        run(land, db, day_from=days[2], day_to=days[2])
        dbs[name] = db
    import duckdb as _d

    con = _d.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute(f"attach '{dbs['plain']}' as a (read_only)")
    con.execute(f"attach '{dbs['synth']}' as b (read_only)")
    for t in ("resource_day", "billed_segments", "findings", "settlement"):
        q = f"from {{}}.marts.{t} where day = '{days[2].isoformat()}'"
        for x, y in (("a", "b"), ("b", "a")):
            assert con.execute(f"select count(*) from ({q.format(x)} except all {q.format(y)})"
                               ).fetchone()[0] == 0, t
        assert con.execute(f"select count(*) from ({q.format('a')})").fetchone()[0] > 0, t
    con.close()


def test_new_rows_are_found_by_this_runs_rowids_or_the_slow_way(daily, tmp_path, monkeypatch):
    """Staging finds the new files' raw rows from the rowids noted before this transaction
    landed them; files landed by an earlier transaction (here: a load without a build) are found
    by looking for their first row. Either way staging equals a full rebuild."""
    from recon.build.incremental import StagingState
    from recon.ingest.land import load_folder

    seen, views = [], []
    real = StagingState._landed_here
    monkeypatch.setattr(StagingState, "_landed_here",
                        lambda self: seen.append(real(self)) or seen[-1])
    real_finish = StagingState.finish

    def finish(self):  # the delta views' SQL, before finish drops them
        views.append([r[0].lower() for r in self.con.execute(
            "select sql from duckdb_views() where view_name like '\\_recon\\_delta\\_%' escape '\\'"
        ).fetchall()])
        real_finish(self)

    monkeypatch.setattr(StagingState, "finish", finish)
    land, db = tmp_path / "land", tmp_path / "w.duckdb"
    root, days = _daily_runs(daily, land, db, 2)
    assert seen[0] is not None and seen[1] is not None  # landed and staged in one transaction
    assert set(seen[1]) >= {"k8s_objects", "serverless_jobs", "runpod_inventory"}
    # every row past this transaction's rowids is a new file's: no list of files to check
    assert views[1] and all("rowid >=" in v and "source_file in" not in v for v in views[1])
    _add_day(root / "daily", days[2], land)
    con = connect(db)
    load_folder(con, land)  # its own transaction: landed, not staged
    con.close()
    run(land, db, day_from=days[2], day_to=days[2])
    assert seen[2] is None
    assert views[2] and all("source_file in" in v for v in views[2])
    con = connect(db)
    assert con.execute("select count(*) from meta.staged_files").fetchone()[0] == \
        con.execute("select count(*) from raw.files").fetchone()[0]
    full_copy(con, "full_staging", staging_tables())
    assert_same_tables(con, "staging", "full_staging", staging_tables())
    con.close()


def test_scope_views_give_every_version_of_the_pods_they_keep(daily, tmp_path, monkeypatch):
    """scope.stg_k8s__pods is a view (`-- scope: view`: its readers evaluate it instead of a copy
    being written) that reads only the pod versions created at or after the earliest creation
    among the pods it keeps (zone maps skip older row groups): that cut must leave out none of
    their versions. scope.stg_runpod__jobs is a view too; scope.stg_k8s__events, read twice,
    stays a copy."""
    import recon.build.run as wh

    seen = {}
    real = wh._build_one

    def spy(con, st, layer, name, body, *a):
        real(con, st, layer, name, body, *a)
        if layer == "scope" and name == "stg_k8s__pods":
            cut = "where p.created_at >= s.lo"
            assert cut in body
            seen["view"] = con.execute("select count(*), count(distinct pod_uid) "
                                       "from scope__stg_k8s__pods").fetchone()
            seen["uncut"] = con.execute(f"select count(*), count(distinct pod_uid) "
                                        f"from ({body.replace(cut, '')})").fetchone()
            seen["all"] = con.execute("select count(*) from staging.stg_k8s__pods").fetchone()[0]
            seen["older"] = con.execute(
                "select count(*) from staging.stg_k8s__pods p, (select min(created_at) m from "
                "scope__stg_k8s__pods) s where p.created_at < s.m").fetchone()[0]
        if layer == "scope" and name == "stg_k8s__events":
            cut = "e.last_at >= r.lo and "
            assert cut in body
            seen["events"] = con.execute("select count(*) from scope__stg_k8s__events").fetchone()[0]
            seen["events_uncut"] = con.execute(
                f"select count(*) from ({body.replace(cut, '')})").fetchone()[0]
            # events about the kept pods that the reach leaves to the row-group statistics
            seen["events_older"] = con.execute(
                "select count(*) from staging.stg_k8s__events e, (select min(created_at) - "
                "interval 1 day m from scope__stg_k8s__pods) s where e.last_at < s.m").fetchone()[0]
        if layer == "marts" and "kinds" not in seen:  # every scope model is built
            seen["kinds"] = dict(con.execute(
                "select table_name, table_type from information_schema.tables "
                "where table_name like 'scope\\_\\_%' escape '\\'").fetchall())

    monkeypatch.setattr(wh, "_build_one", spy)
    root, _ = daily
    from datetime import date

    run(root / "sim", tmp_path / "w.duckdb", day_from=date(2026, 6, 3), day_to=date(2026, 6, 3))
    assert seen["view"] == seen["uncut"] and seen["view"][0] > 0
    assert seen["view"][0] < seen["all"] and seen["older"] > 0  # the cut has rows to skip
    # the events' reach (no event about a pod is older than the pod, less a day) leaves out no
    # event the uncut copy keeps, and has older events to skip
    assert seen["events"] == seen["events_uncut"] > 0 and seen["events_older"] > 0
    kinds = seen["kinds"]
    assert kinds["scope__stg_k8s__pods"] == kinds["scope__stg_runpod__jobs"] == "VIEW"
    assert kinds["scope__stg_k8s__events"] == "LOCAL TEMPORARY"


def test_the_window_keeps_an_event_that_carries_a_last_time_only(daily, tmp_path, monkeypatch):
    """An event with a lastTimestamp and no first time (no firstTimestamp, eventTime or
    creationTimestamp) stages with first_at null; a windowed run's scope keeps it when its last
    time is in the window (its first time counted as its last: a null first_at would make both
    of sql/scope/stg_k8s__events.sql's tests null, and the event would be in neither branch)."""
    import json as _json
    from datetime import date

    import recon.build.run as wh

    root, _ = daily
    sim = tmp_path / "sim"
    shutil.copytree(root / "sim", sim)
    events = min(sim.rglob("events.json"))
    item = {"apiVersion": "v1", "kind": "Event",
            "metadata": {"uid": "last-only-event", "name": "x.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "x", "namespace": "default", "uid": "x-uid"},
            "reason": "Pulled", "message": "pulled", "type": "Normal",
            "lastTimestamp": "2026-06-03T12:00:00Z"}
    (events.parent / "zz-last-only-events.json").write_text(_json.dumps(
        {"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": [item]}))
    seen = {}
    real = wh._build_one

    def spy(con, st, layer, name, body, *a):
        real(con, st, layer, name, body, *a)
        if layer == "scope" and name == "stg_k8s__events":
            seen["staged"] = con.execute("select first_at, last_at::varchar from "
                                         "staging.stg_k8s__events where event_uid = "
                                         "'last-only-event'").fetchall()
            seen["scoped"] = con.execute("select count(*) from scope__stg_k8s__events "
                                         "where event_uid = 'last-only-event'").fetchone()[0]

    monkeypatch.setattr(wh, "_build_one", spy)
    run(sim, tmp_path / "w.duckdb", day_from=date(2026, 6, 3), day_to=date(2026, 6, 3))
    assert seen["staged"] == [(None, "2026-06-03 12:00:00+00")]
    assert seen["scoped"] == 1


def test_a_file_modified_in_the_future_is_landed_with_a_warning(sim_run, tmp_path):
    """A future mtime (a clock set wrong) said "modified -172800 s ago" and held the file back
    for two days with a settle time: it is taken as settled, and the run says which file and
    how far ahead its clock was."""
    import time as _time

    from recon.ingest.land import load_folder

    land = tmp_path / "land"
    land.mkdir()
    bill = land / "billing-account.json"
    shutil.copy(sim_run["root"] / "input" / "runpod" / "billing-account.json", bill)
    ahead = _time.time() + 2 * 86400
    os.utime(bill, (ahead, ahead))
    con = connect(None)
    [r] = load_folder(con, land, settle_seconds=600)
    assert r.kind != "settling" and r.loaded > 0 and not r.skip_reason
    [w] = r.warnings
    assert str(bill.resolve()) in w and "in the future" in w
    assert 172790 <= float(re.search(r"modified (\d+) s in the future", w).group(1)) <= 172800
    assert con.execute("select records_loaded from raw.files").fetchone()[0] == r.loaded
    # a file modified a moment ago still waits
    now = _time.time()
    os.utime(bill, (now, now))
    [r] = load_folder(connect(None), land, settle_seconds=600)
    assert r.kind == "settling" and not r.warnings


def test_a_copied_file_lands_once_and_a_moved_folder_is_not_landed_again(sim_run, tmp_path):
    """A byte-identical copy of a billing file made every finding of its bucket twice (the
    findings' uniqueness check failed: nothing published), and a landing folder moved elsewhere
    landed every file again under its new absolute path. Files are known by content and by
    their path under the landing root."""
    import duckdb

    land = tmp_path / "a" / "land"
    shutil.copytree(sim_run["root"] / "input", land)
    (land / "expected" / "ground_truth.json").unlink()
    bill = next((land / "runpod").glob("billing-pods-0*.json"))
    copy = bill.with_name("zz-" + bill.name)
    shutil.copy(bill, copy)  # a new mtime: known by its sha256
    db = tmp_path / "w.duckdb"
    res = run(land, db, validate=True)
    assert res.validation.success, res.validation.summary()
    [dup] = [r for r in res.files if r.kind == "duplicate"]
    assert dup.path == str(copy.resolve()) and dup.loaded == 0 and dup.skipped == dup.records_in > 0
    assert str(bill.resolve()) in dup.skip_reason and "byte-identical copy" in dup.skip_reason

    def state():
        con = duckdb.connect(str(db), read_only=True)
        try:
            return {"files": con.execute("select count(*) from raw.files").fetchone()[0],
                    "billing": con.execute("select count(*) from raw.runpod_billing").fetchone()[0],
                    "findings": con.execute("select finding_id, amount_at_stake from "
                                            "marts.findings order by all").fetchall()}
        finally:
            con.close()

    first = state()
    want = duckdb.connect(str(sim_run["db"]), read_only=True)
    assert first["findings"] == want.execute("select finding_id, amount_at_stake from "
                                             "marts.findings order by all").fetchall()
    assert first["billing"] == want.execute("select count(*) from raw.runpod_billing").fetchone()[0]
    want.close()
    assert len({f for f, _ in first["findings"]}) == len(first["findings"])
    # the landing folder moved (mtimes kept), then copied without them: nothing lands again
    moved = tmp_path / "b" / "land"
    moved.parent.mkdir()
    land.rename(moved)
    res = run(moved, db)
    assert all(r.unchanged for r in res.files), [r.path for r in res.files if not r.unchanged]
    assert state() == first
    again = tmp_path / "c" / "land"
    shutil.copytree(moved, again, copy_function=shutil.copyfile)
    shutil.rmtree(moved)
    res = run(again, db)
    assert all(r.unchanged for r in res.files) and state() == first
    assert res.records_in == sum(r.loaded + r.quarantined + r.skipped for r in res.files)
