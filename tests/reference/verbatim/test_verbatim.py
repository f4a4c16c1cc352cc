"""Files saved exactly as the upstream returns them (issue #36 §3, and §6's unrecognised files):
the folder beside this module, landed through `recon run`'s own path (`recon.pipeline.run`).
Each file's upstream source is in README.md here; the numbers below are worked out by hand."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from recon.db import connect
from recon.gate.suites import load_suites
from recon.pipeline import run

HERE = Path(__file__).parent
EP = "ep7abc"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def corpus(dest: Path, leave_out: tuple[str, ...] = ()) -> Path:
    """The corpus files (not this module, its README or caches) copied to `dest`."""
    for p in HERE.rglob("*"):
        rel = p.relative_to(HERE)
        if (p.is_file() and p.suffix != ".py" and rel.name != "README.md"
                and "__pycache__" not in rel.parts and str(rel) not in leave_out):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(p, dest / rel)
    return dest


@pytest.fixture(scope="module")
def landed(tmp_path_factory):
    root = tmp_path_factory.mktemp("verbatim")
    folder = corpus(root / "in")
    res = run(folder, root / "db.duckdb")
    con = connect(root / "db.duckdb", read_only=True)
    yield res, con, folder
    con.close()


def rel(res_file, folder: Path) -> str:
    return str(Path(res_file).relative_to(folder.resolve()))


def test_every_file_lands_where_its_shape_says(landed):
    res, con, folder = landed
    got = {rel(f.path, folder): (f.kind, f.loaded, f.quarantined, f.skipped) for f in res.files}
    assert got == {
        "k8s/nodes-raw.json": ("k8s_list", 1, 0, 0),
        "k8s/events-raw.json": ("k8s_list", 1, 0, 0),
        "k8s/pod-watch-raw.jsonl": ("jsonl", 6, 0, 0),
        "k8s/pods.yaml": ("unknown", 0, 1, 0),
        "runpod/curl/workers.json": ("runpod_workers", 1, 0, 0),
        "runpod/ep7abc/workers.json": ("runpod_workers", 1, 0, 0),
        "runpod/saved/workers-2.json": ("runpod_workers", 2, 0, 0),
        "runpod/jobs.jsonl": ("jsonl", 2, 0, 0),
        "runpod/billing-serverless.json": ("runpod_billing", 1, 0, 0),
        "runpod/v1-billing-endpoints-by-pod.json": ("runpod_v1_billing", 1, 0, 0),
        "runpod/v1-billing-pods-by-gpu.json": ("runpod_v1_billing", 1, 0, 0),
        "runpod/v1-billing-pods-by-pod.json": ("runpod_v1_billing", 1, 0, 0),
        "runpod/v1-billing-networkvolumes.json": ("runpod_v1_billing", 1, 0, 0),
        "runpod/billing-endpoints.json": ("runpod_billing", 1, 0, 0),
        "runpod/health.json": ("runpod_health", 0, 0, 1),
        "runpod/pod.json": ("runpod_inventory_item", 1, 0, 0),
        "runpod/endpoint.json": ("runpod_inventory_item", 1, 0, 0),
        "runpod/v1-pods.json": ("runpod_inventory", 1, 0, 0),
        "runpod/console-export.csv": ("unknown", 0, 1, 0),
    }
    # the billing sources are ones staging reads (raw.runpod_billing's critical in-set check)
    assert dict(con.execute("select source_file, source from raw.runpod_billing").fetchall()) == {
        str(folder.resolve() / f): s for f, s in [
            ("runpod/billing-serverless.json", "v2_serverless"),
            ("runpod/v1-billing-endpoints-by-pod.json", "v1_serverless"),
            ("runpod/v1-billing-pods-by-gpu.json", "v1_gpu_types"),
            ("runpod/v1-billing-pods-by-pod.json", "v1_pods"),
            ("runpod/v1-billing-networkvolumes.json", "v1_network_volumes"),
            ("runpod/billing-endpoints.json", "v2_endpoints")]}
    health = next(f for f in res.files if rel(f.path, folder) == "runpod/health.json")
    assert "/health" in health.skip_reason


def test_workers_saved_with_curl_are_tied_by_job_records_and_their_idle_is_counted(landed):
    """runpod/curl/workers.json names no endpoint (its folder `curl` is none either); the job
    records name worker wk1a2b3c4d's endpoint. By hand, rate 0.0002 USD/s (recon.toml):
    billed 0.037 / 0.0002 = 185 s; execution 60 + 60 = 120 s (12:00:30-12:01:30, 12:02:00-
    12:03:00); cold start from the worker's startedAt 12:00:00 to its first execution 12:00:30 =
    30 s; started 12:00:00, last request done 12:03:00 + idle timeout 5 s = 185 s, whole seconds:
    rounding 0; idle 185 - 120 - 30 - 0 = 35 s (the 30 s between the jobs and the 5 s timeout).
    Without the workers file the session would start at the first submission (12:00:10): 20 s
    cold start and 45 s idle."""
    _, con, _ = landed
    assert con.execute("select endpoint_id, tied_by from staging.stg_runpod__worker_endpoints "
                       "where worker_id = 'wk1a2b3c4d'").fetchall() == [(EP, "job records")]
    assert con.execute("select start_assumed, cold_start_ms, execution_ms, rounding_est_ms "
                       "from intermediate.int_serverless__worker_sessions").fetchall() == [
        (False, 30_000, 120_000, 0)]
    seg = {c: (s, a) for c, s, a in con.execute(
        "select category, seconds, amount from marts.billed_segments "
        "where resource_id = ? and day = '2026-06-01'", [EP]).fetchall()}
    assert {c: (float(s), round(float(a), 9)) for c, (s, a) in seg.items()} == {
        "cold_start": (30.0, 0.006), "execution": (120.0, 0.024), "idle": (35.0, 0.007)}
    assert con.execute("select serverless_idle_seconds from marts.resource_day "
                       "where resource_id = ?", [EP]).fetchall() == [(Decimal("35.000"),)]


def test_workers_are_tied_by_path_and_per_worker_billing_else_quarantined_saying_what_was_tried(
        landed):
    _, con, folder = landed
    assert con.execute("select worker_id, endpoint_id, tied_by from staging.stg_runpod__worker_endpoints "
                       "order by worker_id").fetchall() == [
        ("wk1a2b3c4d", EP, "job records"),
        ("wk2e5f6a7b", EP, "file path"),  # runpod/ep7abc/workers.json; ep7abc is a known endpoint
        ("wk3c8d9e0f", EP, "per-worker billing"),  # its v1 line grouped by podId names ep7abc
        ("wk4f1a2b3c", None, None)]
    rows = con.execute("select source_file, locator, reason from staging.quarantine").fetchall()
    assert [(rel(f, folder), loc) for f, loc, _ in rows] == [("runpod/saved/workers-2.json", "workers[1]")]
    reason = rows[0][2]
    for tried in ("job records: no job with this workerId",
                  "per-worker billing: no v1 line with this podId and an endpointId",
                  "file path: '2' is no endpoint any input names"):
        assert tried in reason, reason


def test_a_worker_quarantined_for_want_of_a_tie_is_tied_when_the_jobs_land_later(tmp_path):
    """Incremental staging: the tie (job records) lands in a later run than the workers."""
    folder = corpus(tmp_path / "in", leave_out=("runpod/jobs.jsonl",))
    db = tmp_path / "db.duckdb"
    first = run(folder, db)
    assert first.staging_quarantined_by_file.get(str(folder.resolve() / "runpod/curl/workers.json")) == 1
    shutil.copy(HERE / "runpod/jobs.jsonl", folder / "runpod/jobs.jsonl")
    second = run(folder, db)
    assert str(folder.resolve() / "runpod/curl/workers.json") not in second.staging_quarantined_by_file
    with connect(db, read_only=True) as con:
        assert con.execute("select cold_start_ms from intermediate.int_serverless__worker_sessions"
                           ).fetchall() == [(30_000,)]


def test_workers_jsonl_without_x_recon_lands_on_the_fast_path_with_no_endpoint(tmp_path):
    """A JSON Lines file of workers responses as returned (jsonl.py's DuckDB path): every item
    lands, with no endpoint; staging ties them by the path."""
    body = json.loads((HERE / "runpod/ep7abc/workers.json").read_text())
    folder = tmp_path / "in"
    (folder / EP).mkdir(parents=True)
    (folder / EP / "workers.jsonl").write_text(json.dumps(body) + "\n" + json.dumps(body) + "\n")
    shutil.copy(HERE / "runpod/endpoint.json", folder / "endpoint.json")
    res = run(folder, tmp_path / "db.duckdb")
    assert [(f.kind, f.loaded, f.quarantined) for f in res.files if f.path.endswith("jsonl")] == [
        ("jsonl", 2, 0)]
    with connect(tmp_path / "db.duckdb", read_only=True) as con:
        assert con.execute("select locator, endpoint_id from raw.runpod_inventory "
                           "where inventory_kind = 'workers' order by locator").fetchall() == [
            ("line 1 workers[0]", None), ("line 2 workers[0]", None)]
        assert con.execute("select worker_id, endpoint_id, tied_by from "
                           "staging.stg_runpod__worker_endpoints").fetchall() == [
            ("wk2e5f6a7b", EP, "file path")]


def test_typed_lists_give_their_items_the_lists_kind(landed):
    _, con, _ = landed
    rows = con.execute("select kind, uid, doc ->> '$.kind', doc ->> '$.apiVersion' from raw.k8s_objects "
                       "where event_type = 'LISTED' order by kind").fetchall()
    assert rows == [("Event", "0b9a8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d", "Event", "v1"),
                    ("Node", "6c1f5d2a-3b7e-4c1d-9a8e-1f2b3c4d5e61", "Node", "v1")]
    assert con.execute("select node_name, gpu_capacity from staging.stg_k8s__nodes").fetchall() == [
        ("gpu-node-1", 1)]


def test_a_big_typed_list_lands_the_same_through_duckdb(tmp_path, monkeypatch):
    """lists.py's path (a List of at least LIST_MIN_BYTES) gives the items the same kind,
    apiVersion and document as read_file does."""
    from recon.ingest import lists

    body = json.loads((HERE / "k8s/nodes-raw.json").read_text())
    item = body["items"][0]
    body["items"] = [{**item, "metadata": {**item["metadata"], "uid": f"uid-{i}", "name": f"n{i}"}}
                     for i in range(3)]
    body["items"][2] = {"apiVersion": "v1", **body["items"][2]}  # only one of the two: Python's
    docs = {}
    for name, min_bytes in (("python", 1 << 40), ("duckdb", 0)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "nodes.json").write_text(json.dumps(body, indent=1))
        monkeypatch.setattr(lists, "LIST_MIN_BYTES", min_bytes)
        run(folder, tmp_path / f"{name}.duckdb")
        with connect(tmp_path / f"{name}.duckdb", read_only=True) as con:
            docs[name] = con.execute("select locator, kind, uid, doc::varchar from raw.k8s_objects "
                                     "order by locator").fetchall()
    assert docs["duckdb"] == docs["python"]
    assert [(loc, kind) for loc, kind, _, _ in docs["python"]] == [
        ("items[0]", "Node"), ("items[1]", "Node"), ("items[2]", "Node")]
    assert all(json.loads(d)["apiVersion"] == "v1" for *_, d in docs["python"])


def test_a_pod_is_not_deleted_before_its_container_finished(landed):
    """The raw watch stream: `kubectl delete` at 12:30:00 sets deletionTimestamp 12:30:30 with
    grace 30; the container is killed at 12:30:30 (finishedAt); the kubelet's final delete with
    grace 0 leaves deletionTimestamp 12:30:30 - 30 + 0 = 12:30:00 on the DELETED version. Both
    read the request, 12:30:00; the pod is removed after its container stopped: the earliest
    sound reading is 12:30:30."""
    _, con, _ = landed
    assert con.execute("select task_finished_at, deleted_at, window_end_at from "
                       "intermediate.int_k8s__workloads").fetchall() == [
        (utc("2026-06-01T12:30:30Z"), utc("2026-06-01T12:30:30Z"), utc("2026-06-01T12:30:30Z"))]


def test_a_late_arrival_of_the_deleted_event_does_not_move_the_deletion(tmp_path):
    """The collector's seenAt of the DELETED event is when it read it, which a resumed watch
    or a replay makes late (13:05 here): the deletion stays the earliest sound reading."""
    lines = (HERE / "k8s/pod-watch-raw.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])
    lines[-1] = json.dumps({**last, "seenAt": "2026-06-01T13:05:00.000Z"})
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "watch.jsonl").write_text("\n".join(lines) + "\n")
    run(tmp_path / "in", tmp_path / "db.duckdb")
    with connect(tmp_path / "db.duckdb", read_only=True) as con:
        assert con.execute("select task_finished_at, deleted_at from marts.workload_lifecycle"
                           ).fetchall() == [(utc("2026-06-01T12:30:30Z"), utc("2026-06-01T12:30:30Z"))]


def test_account_level_lines_load_as_such_and_tie_out(landed):
    """v1 pod billing by GPU type and v1 network-volume billing name no resource: account-level
    lines. By hand: the RTX 4090 line of 2026-06-01, 1.056 USD for 8,640,000 ms (2.4 h at the
    4090's 0.44 USD/h), equals the day's one per-pod line (7h9k2m4n6p, 1.056 USD); the network
    volumes' 0.1644 USD (50 GB) has no per-volume line to tie to; public endpoints 3.21 USD."""
    _, con, _ = landed
    assert con.execute("select component, gpu_type, amount_usd, billed_seconds, disk_gb "
                       "from staging.stg_runpod__account_lines order by component").fetchall() == [
        ("network_volumes", None, Decimal("0.1644"), None, 50),
        ("pods", "NVIDIA GeForce RTX 4090", Decimal("1.056"), Decimal(8640), 20),
        ("public_endpoints", None, Decimal("3.21"), None, None)]
    suite = next(s for s in load_suites() if s.name == "tieout.account_lines")
    rows = con.execute(suite.query).fetchall()
    assert [(c, str(d), float(a), float(b), diff) for c, d, a, b, diff in rows] == [
        ("pods", "2026-06-01", 1.056, 1.056, 0.0)]


def test_single_objects_and_bare_arrays_of_the_inventory_load(landed):
    _, con, _ = landed
    assert con.execute("select pod_id, gpu_type, gpu_count, cost_per_hour_usd, volume_gb "
                       "from staging.stg_runpod__pods order by pod_id").fetchall() == [
        ("7h9k2m4n6p", "NVIDIA GeForce RTX 4090", 1, Decimal("0.44"), 20),
        ("xedezhzb9la3ye", "NVIDIA GeForce RTX 4090", 1, Decimal("0.69"), 20)]
    assert con.execute("select endpoint_id, idle_timeout_seconds, workers_min "
                       "from staging.stg_runpod__endpoints").fetchall() == [(EP, 5, 0)]


def test_an_unrecognised_file_names_what_would_be_accepted(landed):
    _, con, folder = landed
    reasons = {rel(f, folder): r for f, r in con.execute(
        "select source_file, reason from raw.quarantine").fetchall()}
    assert set(reasons) == {"k8s/pods.yaml", "runpod/console-export.csv"}
    assert "save it with -o json" in reasons["k8s/pods.yaml"]
    csv = reasons["runpod/console-export.csv"]
    # BilledCost is not among them: a usage-only FOCUS export (CoreWeave's) may leave it out
    assert "lacks the FOCUS column(s) ChargePeriodStart, ChargePeriodEnd, ChargeCategory (" in csv


def test_a_csv_with_some_focus_columns_names_only_those_it_lacks(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "costs.csv").write_text(
        "ChargePeriodStart,ChargePeriodEnd,ResourceId,Cost\n"
        "2026-06-01T00:00:00Z,2026-06-02T00:00:00Z,7h9k2m4n6p,1.056\n")
    res = run(tmp_path / "in", tmp_path / "db.duckdb")
    with connect(tmp_path / "db.duckdb", read_only=True) as con:
        (reason,), = con.execute("select reason from raw.quarantine").fetchall()
    assert res.quarantined == 1
    assert "lacks the FOCUS column(s) ChargeCategory (" in reason
