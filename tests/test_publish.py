"""`recon publish`: the marts as Hive-partitioned Parquet, in a folder, in an S3 prefix and in
an Azure container's (Azurite on 127.0.0.1: tests/fakes/azure_server.py).

What is checked comes from the formats' own rules: DuckDB's Hive partitioning ("Hive
Partitioning" in DuckDB's docs: `read_parquet(..., hive_partitioning = true)` adds each
`key=value` folder as a column, `hive_types_autocast` reads `2026-06-01` as a DATE), the Parquet
DECIMAL and TIMESTAMP (isAdjustedToUTC) logical types DuckDB writes for DECIMAL and TIMESTAMPTZ,
and S3's PutObject (Amazon S3 API Reference: one PUT replaces the whole object; "Error
responses": SlowDown is HTTP 503, AccessDenied HTTP 403), served by moto on 127.0.0.1
(tests/fakes/s3_server.py) and reached through obstore as in production.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from recon.cli import app
from recon.schema import MARTS
from tests.fakes import azure_server
from tests.fakes.azure_server import fake_azure
from tests.fakes.s3_server import fake_s3

BUCKET = "recon-marts"
ACCESS_KEY = "AKIARECONPUBLISH0001"
SECRET_KEY = "PLANTED/publish+secret/do-not-show-9876"
DAYS = (date(2026, 6, 1), date(2026, 6, 2))  # the sim_run fixture's 2 days (tests/conftest.py)


def _publish(db: Path, out: str, *extra: str) -> str:
    res = CliRunner().invoke(app, ["publish", "--db", str(db), "--out", out, *extra])
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split())


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _warehouse(db: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(db), read_only=True)
    con.execute("set TimeZone = 'UTC'")
    return con


def _held(con) -> dict[str, list[tuple[str, str]]]:
    """The marts of recon/schema.py the warehouse holds: their columns and types, in order."""
    out: dict[str, list[tuple[str, str]]] = {}
    for t, c, ty in con.execute("select table_name, column_name, data_type from "
                                "information_schema.columns where table_schema = 'marts' "
                                "order by table_name, ordinal_position").fetchall():
        if t in MARTS:
            out.setdefault(t, []).append((c, ty))
    return out


def _assert_same_marts(db: Path, root: Path) -> None:
    """Every mart read back from `root` holds the warehouse's rows exactly, with its types."""
    con = _warehouse(db)
    try:
        held = _held(con)
        assert len(held) >= 19  # the sim warehouse's marts, every one compared below
        empty: list[str] = []
        for table, cols in held.items():
            names = ", ".join(f'"{c}"' for c, _ in cols)
            if not con.execute(f"select count(*) from marts.{table}").fetchone()[0] and any(
                    c == "day" for c, _ in cols):  # no day to partition by: no file
                assert not (root / "marts" / table).exists(), table
                empty.append(table)
                continue
            glob = (root / "marts" / table).as_posix() + "/**/*.parquet"
            back = f"read_parquet('{glob}', hive_partitioning = true)"
            types = dict(con.execute(f"select column_name, column_type from (describe "
                                     f"select * from {back})").fetchall())
            # the same columns and types: decimals stay DECIMAL(p,s), TIMESTAMPTZ stays UTC,
            # `day` comes back from the folder name as a DATE; HUGEINT, which Parquet has no
            # type for (DuckDB would write a DOUBLE), comes back as an exact DECIMAL(38,0)
            assert types == {c: "DECIMAL(38,0)" if ty == "HUGEINT" else ty
                             for c, ty in cols}, table
            want = con.execute(f"select {names} from marts.{table} order by all").fetchall()
            got = con.execute(f"select {names} from {back} order by all").fetchall()
            assert got == want, table
        # the simulated fleet has no FOCUS file and no later pull that changed a bill
        assert sorted(empty) == ["focus_charges", "restatements"]
    finally:
        con.close()


def test_every_mart_round_trips_through_the_partitions(tmp_path, sim_run):
    out = tmp_path / "pub"
    text = _publish(sim_run["db"], str(out))
    _assert_same_marts(sim_run["db"], out)
    con = _warehouse(sim_run["db"])
    held = _held(con)
    by_day = sorted(t for t, cols in held.items() if any(c == "day" for c, _ in cols))
    flat = sorted(set(held) - set(by_day))
    assert "resource_day" in by_day and "workload_lifecycle" in flat and "nodes" in flat
    # one file per mart and day it holds; `day` only in the folder name, not in the file
    expected = {f"marts/{t}/part-0.parquet" for t in flat}
    for t in by_day:
        for (d,) in con.execute(f"select distinct day from marts.{t}").fetchall():
            expected.add(f"marts/{t}/day={d.isoformat()}/part-0.parquet")
    files = _files(out)
    assert set(files) == expected | {"marts/_manifest.json"}
    cols = duckdb.sql(f"select name from parquet_schema('{out}/marts/resource_day/day=2026-06-01/"
                      f"part-0.parquet')").fetchall()
    assert ("day",) not in cols and ("billed_amount",) in cols
    # zstd, as asked of COPY
    codecs = duckdb.sql(f"select distinct compression from parquet_metadata('{out}/marts/"
                        f"resource_day/day=2026-06-01/part-0.parquet')").fetchall()
    assert codecs == [("ZSTD",)]
    # the manifest: each file's rows, bytes and sha256 as written
    manifest = json.loads(files["marts/_manifest.json"])
    entries = [e for t in manifest["tables"].values() for e in t["partitions"]]
    assert {e["path"] for e in entries} == expected
    for e in entries:
        assert e["bytes"] == len(files[e["path"]])
        assert e["sha256"] == hashlib.sha256(files[e["path"]]).hexdigest()
    d1 = next(e for e in manifest["tables"]["resource_day"]["partitions"]
              if e["day"] == "2026-06-01")
    assert d1["rows"] == con.execute("select count(*) from marts.resource_day where day = "
                                     "'2026-06-01'").fetchone()[0] > 0
    # the sim run ran no gate and the flow recorded no day: no run id to name
    assert (d1["run_id"], d1["built_at"]) == (None, None)
    con.close()
    assert f"published {len(expected)} file(s) (" in text
    # the loader's progress: every tenth of more than 20
    assert f"published {len(expected) // 10}/{len(expected)} {out}/marts/" in text
    assert f"of {len(held)} mart(s), 2 day(s), to {out}" in text


def test_a_rerun_rewrites_the_same_bytes_and_touches_nothing_else(tmp_path, sim_run):
    out = tmp_path / "pub"
    _publish(sim_run["db"], str(out))
    first = _files(out)
    # another's files in the destination: beside a partition's file, in a partition folder
    # publish does not write, a table it does not know, and at the top
    foreign = {"marts/resource_day/day=2026-06-01/part-1.parquet": b"theirs 1",
               "marts/resource_day/day=2025-01-01/part-0.parquet": b"theirs 2",
               "marts/their_table/part-0.parquet": b"theirs 3",
               "README.txt": b"theirs 4"}
    for rel, data in foreign.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    _publish(sim_run["db"], str(out))
    assert _files(out) == first | foreign  # same bytes, the foreign files as they were
    assert not [p for p in out.rglob("*") if p.name.startswith(".")]  # no temporary left


def test_from_to_writes_only_those_days_and_keeps_the_manifest_of_the_others(tmp_path, sim_run):
    out = tmp_path / "pub"
    _publish(sim_run["db"], str(out), "--from", "2026-06-02", "--to", "2026-06-02")
    files = _files(out)
    days = {p.split("/")[2] for p in files if "/day=" in p}
    assert days == {"day=2026-06-02"}
    assert "marts/nodes/part-0.parquet" in files  # the day-less marts always
    _publish(sim_run["db"], str(out), "--from", "2026-06-01", "--to", "2026-06-01")
    after = _files(out)
    assert {p.split("/")[2] for p in after if "/day=" in p} == {"day=2026-06-01", "day=2026-06-02"}
    assert {p: after[p] for p in files if "/day=2026-06-02/" in p} == {
        p: b for p, b in files.items() if "/day=2026-06-02/" in p}  # not rewritten
    # both windows together are the whole publication, manifest included
    whole = tmp_path / "whole"
    _publish(sim_run["db"], str(whole))
    assert _files(out) == _files(whole)


def test_a_day_the_mart_no_longer_holds_becomes_an_empty_file(tmp_path, sim_run):
    """A day published before, and gone from a mart that keeps every day (a rebuilt warehouse):
    rewritten with no rows, so readers do not see the old rows; nothing is deleted."""
    out = tmp_path / "pub"
    _publish(sim_run["db"], str(out))
    stale = "marts/findings/day=2026-05-31/part-0.parquet"
    manifest = json.loads((out / "marts/_manifest.json").read_text())
    old = dict(manifest["tables"]["findings"]["partitions"][0], day="2026-05-31", path=stale)
    manifest["tables"]["findings"]["partitions"].insert(0, old)
    (out / "marts/_manifest.json").write_text(json.dumps(manifest))
    (out / stale).parent.mkdir()
    (out / stale).write_bytes((out / "marts/findings/day=2026-06-01/part-0.parquet").read_bytes())
    _publish(sim_run["db"], str(out))
    assert duckdb.sql(f"select count(*) from '{out / stale}'").fetchall() == [(0,)]
    _assert_same_marts(sim_run["db"], out)


def test_a_foreign_manifest_is_not_overwritten(tmp_path, sim_run):
    out = tmp_path / "pub"
    (out / "marts").mkdir(parents=True)
    (out / "marts/_manifest.json").write_text('{"theirs": true}')
    res = CliRunner().invoke(app, ["publish", "--db", str(sim_run["db"]), "--out", str(out)])
    assert res.exit_code == 2
    assert "is not a manifest of recon publish: not overwritten" in " ".join(res.output.split())
    assert (out / "marts/_manifest.json").read_text() == '{"theirs": true}'


@pytest.fixture
def s3(monkeypatch):
    with fake_s3(monkeypatch, ACCESS_KEY, SECRET_KEY, (BUCKET,)) as fake:
        yield fake


def test_s3_gets_the_same_files_and_a_503_on_the_first_put_is_retried(tmp_path, sim_run, s3):
    local = tmp_path / "local"
    _publish(sim_run["db"], str(local))
    s3.fail("put", 503, "SlowDown")
    _publish(sim_run["db"], f"s3://{BUCKET}/analytics/gpu")
    puts = [r for r in s3.seen if r[0] == "put" and r[2]]  # not the bucket's creation
    assert puts[0][3] == 503 and puts[1][2] == puts[0][2]  # the same object again
    assert len([r for r in puts if r[3] == 200]) == len(_files(local))  # one PUT a file
    # read back by listing and downloading, then read as the folder was
    client = s3.client()
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET)["Contents"]]
    down = tmp_path / "down"
    for key in keys:
        assert key.startswith("analytics/gpu/marts/")
        dest = down / key.removeprefix("analytics/gpu/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(client.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    assert _files(down) == _files(local)  # byte for byte, manifest included
    _assert_same_marts(sim_run["db"], down)


def test_s3_access_denied_names_bucket_and_prefix_without_the_secret(tmp_path, sim_run, s3):
    s3.fail("put", 403, "AccessDenied", times=None)
    res = CliRunner().invoke(app, ["publish", "--db", str(sim_run["db"]), "--out",
                                   f"s3://{BUCKET}/analytics"])
    assert res.exit_code == 1
    text = " ".join(res.output.split())
    assert SECRET_KEY not in text and ACCESS_KEY not in text
    # the first file written is the first mart of recon/schema.py, which has no day column
    assert text == (f"error: writing s3://{BUCKET}/analytics/marts/workload_lifecycle/"
                    f"part-0.parquet failed: access denied (AccessDenied, HTTP 403): the "
                    f"credentials in the environment may not put it (s3:PutObject on {BUCKET})")


@pytest.fixture(scope="module")
def azure(tmp_path_factory):
    """Azurite behind the fault proxy (tests/fakes/azure_server.py), AZURE_STORAGE_* set."""
    with pytest.MonkeyPatch.context() as mp, fake_azure(
            mp, tmp_path_factory.mktemp("azurite"), (BUCKET,)) as fake:
        yield fake


def test_azure_gets_the_same_files_and_a_503_on_the_first_put_is_retried(tmp_path, sim_run,
                                                                         azure):
    """Put Blob replaces the whole blob (Azure Storage REST API, "Put Blob"); ServerBusy is
    HTTP 503 ("Common REST API error codes"), retried by the client."""
    local = tmp_path / "local"
    _publish(sim_run["db"], str(local))
    azure.clear()
    azure.fail("put", 503, "ServerBusy")
    said = _publish(sim_run["db"], f"az://{BUCKET}/analytics/gpu")
    assert f"to az://{BUCKET}/analytics/gpu/; manifest az://{BUCKET}/analytics/gpu/marts/" in said
    puts = [r for r in azure.seen if r[0] == "put"]
    assert puts[0][3] == 503 and puts[1][2] == puts[0][2]  # the same blob again
    assert len([r for r in puts if r[3] == 201]) == len(_files(local))  # one Put Blob a file
    # read back by listing and downloading, then read as the folder was
    down = tmp_path / "down"
    keys = azure.keys(BUCKET, "analytics/gpu")
    for key in keys:
        assert key.startswith("analytics/gpu/marts/")
        dest = down / key.removeprefix("analytics/gpu/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(azure.get(BUCKET, key))
    assert _files(down) == _files(local)  # byte for byte, manifest included
    _assert_same_marts(sim_run["db"], down)


def test_azure_access_denied_names_the_container_without_the_key(tmp_path, sim_run, azure):
    azure.clear()
    azure.fail("put", 403, "AuthorizationPermissionMismatch", times=None)
    try:
        res = CliRunner().invoke(app, ["publish", "--db", str(sim_run["db"]), "--out",
                                       f"az://{BUCKET}/denied"])
    finally:
        azure.clear()
    assert res.exit_code == 1
    text = " ".join(res.output.split())
    assert azure_server.KEY not in text
    assert text == (f"error: writing az://{BUCKET}/denied/marts/workload_lifecycle/"
                    f"part-0.parquet failed: access denied (AuthorizationPermissionMismatch, "
                    f"HTTP 403): the credentials in the environment may not put it (Storage "
                    f"Blob Data Contributor on {BUCKET})")


def test_a_daily_runs_publish_keeps_the_earlier_days_of_the_last_run_marts(tmp_path):
    """After a windowed run (`recon run --from D --to D`, the daily flow's), the marts marked
    `window = "last_run"` in sql/marts/_models.toml hold the window and only the part of
    earlier days that the window's sessions reach into: publishing them must leave the earlier
    days' files whole, and write the window's days."""
    from recon.pipeline import run
    from recon.simulate import simulate

    third = date(2026, 6, 3)
    simulate(tmp_path / "in", seed=5, days=3, nodes=2, endpoints=1)
    db, out = tmp_path / "w.duckdb", tmp_path / "pub"
    run(tmp_path / "in", db)
    _publish(db, str(out))
    first = _files(out)
    run(tmp_path / "in", db, None, third, third)
    con = _warehouse(db)
    assert con.execute("select cfg('day_from')::date, cfg('day_to')::date").fetchall() == [
        (third, third)]
    held = con.execute("select count(*) from marts.instance_segments where day = ?",
                       [DAYS[0]]).fetchone()[0]
    con.close()
    seg1 = "marts/instance_segments/day=2026-06-01/part-0.parquet"
    published = duckdb.sql(f"select count(*) from '{out / seg1}'").fetchall()[0][0]
    assert 0 < held < published  # a part of day 1: publishing it would cut the file short
    _publish(db, str(out))
    after = _files(out)
    earlier = [p for p in first if "/day=2026-06-01/" in p or "/day=2026-06-02/" in p]
    assert seg1 in earlier
    assert {p: after[p] for p in earlier} == {p: first[p] for p in earlier}  # left whole
    assert set(after) == set(first)
    manifest = json.loads(after["marts/_manifest.json"])
    assert [e["day"] for e in manifest["tables"]["instance_segments"]["partitions"]] == [
        "2026-06-01", "2026-06-02", "2026-06-03"]


def test_another_scheme_or_credentials_in_the_url_are_refused(tmp_path, sim_run):
    for url, said in (("hdfs://b/p", "hdfs:// is not supported as a destination: give a local "
                                     "folder, s3://BUCKET/PREFIX (an S3-compatible store: "
                                     "AWS_ENDPOINT_URL) or az://CONTAINER/PREFIX"),
                      # no write to GCS is tested: tests/fakes/gcs_server.py says why
                      ("gs://b/p", "gs:// is not supported as a destination (it is as an "
                                   "input): give a local folder, s3://BUCKET/PREFIX (an "
                                   "S3-compatible store: AWS_ENDPOINT_URL) or "
                                   "az://CONTAINER/PREFIX"),
                      (f"s3://{ACCESS_KEY}:{SECRET_KEY}@b/p", "credentials come from the "
                                                              "environment")):
        res = CliRunner().invoke(app, ["publish", "--db", str(sim_run["db"]), "--out", url])
        assert res.exit_code == 2
        assert said in " ".join(res.output.split()) and SECRET_KEY not in res.output


def test_the_manifest_names_the_gates_last_run(tmp_path, sim_run):
    """A warehouse the gate checked (marts.validation_results): the manifest carries its last
    run's id and time for days the daily flow did not publish (a query on that table once
    failed on DuckDB's `at` keyword, which only a gated warehouse reached)."""
    import shutil

    from recon.gate.run import RESULTS_DDL

    db = tmp_path / "gated.duckdb"
    shutil.copy(sim_run["db"], db)
    con = duckdb.connect(str(db))
    con.execute(RESULTS_DDL)
    con.execute("insert into marts.validation_results values "
                "('run-a', 's', 'e', null, true, null, 0, 'critical', null, '2026-06-03 01:00:00+00'), "
                "('run-b', 's', 'e', null, true, null, 0, 'critical', null, '2026-06-03 02:00:00+00')")
    con.close()
    out = tmp_path / "pub"
    _publish(db, str(out))
    manifest = json.loads((out / "marts/_manifest.json").read_text())
    runs = {p.get("run_id") for t in manifest["tables"].values() for p in t["partitions"]}
    assert runs == {"run-b"}
