"""Incremental staging: a run that adds files parses only those, and equals a full rebuild."""

import importlib.util
import os
import re
import shutil
from pathlib import Path

import pytest

from recon.incremental import spec_of
from recon.pipeline import run
from recon.warehouse import SQL_DIR, connect, sql_models

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
        con.execute(f"create or replace table {schema}.{t} as {body}")


def test_the_big_staging_models_are_incremental():
    names = {n for layer, n, p in sql_models() if layer == "staging" and spec_of(p.read_text())}
    assert {"stg_k8s__pods", "stg_k8s__events", "stg_runpod__jobs", "quarantine"} <= names


def test_daily_runs_parse_only_new_files_and_equal_a_full_rebuild(daily, tmp_path, monkeypatch):
    root, days = daily
    land = tmp_path / "land"
    land.mkdir()
    shutil.copy(root / "daily" / "recon.toml", land / "recon.toml")
    db = tmp_path / "w.duckdb"
    merged = []
    import recon.incremental as inc

    real_merge = inc.StagingState.merge
    monkeypatch.setattr(inc.StagingState, "merge",
                        lambda self, table, sql: merged.append((table, tuple(self.new)))
                        or real_merge(self, table, sql))
    for d in days[:3]:
        _add_day(root / "daily", d, land)
        run(land, db, day_from=d, day_to=d)
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
    root, days = daily
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
    root, days = daily
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


def test_records_repeated_in_a_later_file_compete_like_a_full_rebuild(daily, tmp_path):
    """The same pod version, job or billing bucket landed again in a new file: the winner is
    the model's own order (first file for pods, last for jobs and bills), as in a full run."""
    import orjson

    root, days = daily
    land = tmp_path / "land"
    land.mkdir()
    shutil.copy(root / "daily" / "recon.toml", land / "recon.toml")
    db = tmp_path / "w.duckdb"
    for d in days[:2]:
        _add_day(root / "daily", d, land)
        run(land, db, day_from=d, day_to=d)
    pods = sorted(land.rglob("watch-pods*.jsonl"))[0]
    k8s = pods.parent
    # sorts before the original: its copies of pod versions win in stg_k8s__pods
    (k8s / "0-replay-pods.jsonl").write_bytes(b"".join(pods.read_bytes().splitlines(True)[::3]))
    jobs = sorted(land.rglob("*jobs*.jsonl"))[0]
    changed = []
    for line in jobs.read_bytes().splitlines()[::4]:
        doc = orjson.loads(line)
        doc["executionTime"] = 1234
        changed.append(orjson.dumps(doc))
    (jobs.parent / "zz-replay-jobs.jsonl").write_bytes(b"\n".join(changed) + b"\n")
    bills = sorted(land.rglob("billing-pods*.json"))[0]
    shutil.copy(bills, bills.parent / "zz-replay-billing-pods.json")
    _add_day(root / "daily", days[2], land)
    run(land, db, day_from=days[2], day_to=days[2])
    con = connect(db)
    full_copy(con, "full_staging", staging_tables())
    assert_same_tables(con, "staging", "full_staging", staging_tables())
    won = con.execute("select count(*) from staging.stg_k8s__pods where source_file like '%0-replay-pods%'"
                      ).fetchone()[0]
    assert won > 0
    assert con.execute("select count(*) from staging.stg_runpod__jobs where execution_ms = 1234"
                       ).fetchone()[0] == len(changed)
    con.close()


def test_the_delta_reads_no_raw_table_directly(tmp_path):
    """Every `raw.<table>` of an incremental model is read through the new files' view."""
    from recon.incremental import StagingState

    con = connect(tmp_path / "d.duckdb")
    state = StagingState(con)
    state.new = ["/x/new-file.jsonl"]
    for layer, name, path in sql_models():
        body = path.read_text()
        if layer == "staging" and spec_of(body):
            delta = state.delta_sql(body)
            assert not re.search(r"\braw\.", delta), name
            assert "_recon_delta_" in delta, name
            con.execute(f"select * from ({delta}) limit 0")  # binds
    con.close()
