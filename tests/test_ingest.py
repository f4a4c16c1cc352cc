"""Hand-written fixtures for parsing edge cases and bad input: nothing is silently dropped."""

import gzip
import json
from decimal import Decimal

import pytest

from recon.pipeline import run
from recon.warehouse import connect


def pod(uid, rv, *, node=None, conditions=(), statuses=None, created="2026-06-01T10:00:00Z",
        deletion=None, gpus="1"):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": f"p-{uid}", "namespace": "ml", "uid": uid, "resourceVersion": rv,
                      "creationTimestamp": created, "labels": {"team": "vision"}},
         "spec": {"containers": [{"name": "sidecar"},
                                 {"name": "worker", "resources": {"limits": {"nvidia.com/gpu": gpus}},
                                  "startupProbe": {"periodSeconds": 10, "failureThreshold": 6}}]},
         "status": {"conditions": list(conditions)}}
    if node:
        p["spec"]["nodeName"] = node
    if statuses:
        p["status"]["containerStatuses"] = statuses
    if deletion:
        p["metadata"]["deletionTimestamp"] = deletion
        p["metadata"]["deletionGracePeriodSeconds"] = 30
    return p


def cond(t, s, at):
    return {"type": t, "status": s, "lastTransitionTime": at}


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def lifecycle(con, uid):
    con.execute("set TimeZone='UTC'")
    cur = con.execute("select * from marts.workload_lifecycle where pod_uid = ?", [uid])
    cols = [d[0] for d in cur.description]
    row = cur.fetchone()
    return dict(zip(cols, row)) if row else None


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    return d


def test_restart_with_last_state_and_main_container_choice(folder, tmp_path):
    run_ = {"name": "worker", "restartCount": 1, "started": False,
            "state": {"running": {"startedAt": "2026-06-01T10:08:00Z"}},
            "lastState": {"terminated": {"exitCode": 137, "reason": "Error",
                                         "startedAt": "2026-06-01T10:02:00Z",
                                         "finishedAt": "2026-06-01T10:07:00Z"}}}
    side = {"name": "sidecar", "restartCount": 0, "state": {"terminated": {
        "exitCode": 0, "reason": "Completed", "startedAt": "2026-06-01T10:01:00Z",
        "finishedAt": "2026-06-01T23:00:00Z"}}}
    done = {"name": "worker", "restartCount": 1, "state": {"terminated": {
        "exitCode": 0, "reason": "Completed", "startedAt": "2026-06-01T10:08:00Z",
        "finishedAt": "2026-06-01T11:00:00Z"}}}
    sched = cond("PodScheduled", "True", "2026-06-01T10:00:05Z")
    write_jsonl(folder / "w.jsonl", [
        {"type": "ADDED", "object": pod("u1", "1")},
        {"type": "MODIFIED", "object": pod("u1", "2", node="n1", conditions=[sched],
                                          statuses=[run_, side])},
        {"type": "MODIFIED", "object": pod("u1", "3", node="n1", conditions=[
            sched, cond("Ready", "True", "2026-06-01T10:12:00Z")], statuses=[run_, side])},
        {"type": "MODIFIED", "object": pod("u1", "3", node="n1", conditions=[sched])},  # repeat rv
        {"type": "MODIFIED", "object": pod("u1", "4", node="n1", conditions=[
            sched, cond("Ready", "False", "2026-06-01T11:00:00Z")], statuses=[done, side])},
        {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "5"}}},
    ])
    res = run(folder, tmp_path / "db.duckdb")
    assert (res.records_in, res.loaded, res.skipped, res.quarantined) == (6, 5, 1, 0)
    con = connect(tmp_path / "db.duckdb", read_only=True)
    lc = lifecycle(con, "u1")
    assert lc["restarts"] == 1
    assert lc["gpus"] == 1
    assert lc["started_at"].isoformat() == "2026-06-01T10:02:00+00:00"  # first run, from lastState
    assert lc["ready_at"].isoformat() == "2026-06-01T10:12:00+00:00"
    # the worker (GPU) container's finish, not the sidecar's
    assert lc["task_finished_at"].isoformat() == "2026-06-01T11:00:00+00:00"
    assert lc["exit_reason"] == "Completed"
    assert lc["startup_budget_seconds"] == 60
    assert lc["versions_seen"] == 4  # the repeated resourceVersion is deduplicated


def test_pod_deleted_before_it_ran_and_event_with_only_event_time(folder, tmp_path):
    write_jsonl(folder / "w.jsonl", [
        {"type": "ADDED", "object": pod("u2", "10")},
        {"type": "DELETED", "object": pod("u2", "11", deletion="2026-06-01T10:05:30Z")},
        {"type": "ADDED", "object": pod("u3", "12", node="n1")},
    ])
    (folder / "events.json").write_text(json.dumps({"apiVersion": "v1", "kind": "EventList", "items": [
        {"apiVersion": "v1", "kind": "Event", "metadata": {"uid": "e1", "name": "e1",
         "creationTimestamp": "2026-06-01T10:09:00Z"},
         "involvedObject": {"kind": "Pod", "uid": "u3", "name": "p-u3", "namespace": "ml"},
         "reason": "Scheduled", "firstTimestamp": None, "lastTimestamp": None,
         "eventTime": "2026-06-01T10:00:07.123456Z"},
        {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"uid": "e2", "name": "e2",
         "creationTimestamp": "2026-06-01T10:10:00Z"},
         "regarding": {"kind": "Pod", "uid": "u3", "name": "p-u3", "namespace": "ml"},
         "reason": "FailedScheduling", "note": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
         "deprecatedFirstTimestamp": None, "eventTime": None},
    ]}))
    run(folder, tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    lc = lifecycle(con, "u2")
    assert lc["node_name"] is None and lc["scheduled_at"] is None
    assert lc["deleted_at"].isoformat() == "2026-06-01T10:05:00+00:00"  # timestamp − grace
    # u3 has no PodScheduled condition: the Scheduled event's eventTime is the fallback
    assert lifecycle(con, "u3")["scheduled_at"].isoformat() == "2026-06-01T10:00:07.123456+00:00"
    ev = dict(con.execute("select reason, last_at::varchar from staging.stg_k8s__events").fetchall())
    assert ev["FailedScheduling"] == "2026-06-01 10:10:00+00"  # falls back to creationTimestamp
    assert ev["Scheduled"] == "2026-06-01 10:00:07.123456+00"


def test_v1_and_v2_billing_shapes(folder, tmp_path):
    (folder / "v1.json").write_text(json.dumps([
        {"amount": 1.64, "timeBilledMs": 3600000, "diskSpaceBilledGB": 70,
         "time": "2026-06-01 10:00:00", "podId": "podA"},
        {"amount": 0.82, "timeBilledMs": 1800000, "diskSpaceBilledGb": 70,
         "time": "2026-06-01T11:00:00Z", "podId": "podA"},
    ]))
    (folder / "v2.json").write_text(json.dumps({"records": [
        {"startTime": "2026-06-01T10:00:00Z", "endTime": "2026-06-01T11:00:00Z", "podId": "podB",
         "totalAmount": 0.86, "gpuAmount": 0.86, "cpuAmount": 0, "diskAmount": 0}],
        "metadata": {"query": {}, "recordCount": 1}}))
    (folder / "recon.toml").write_text('[rates.gpu_per_hour]\n"L40S" = "0.86"\n'
                                       '[rates.pod_per_hour]\npodA = "1.64"\n')
    (folder / "inv.json").write_text(json.dumps({"pods": [
        {"id": "podB", "status": "EXITED", "cost": 0.0, "gpu": {"id": "L40S", "count": 1}}]}))
    res = run(folder, tmp_path / "db.duckdb")
    assert res.quarantined == 0
    con = connect(tmp_path / "db.duckdb", read_only=True)
    rows = dict(con.execute("select resource_id, billed_seconds from marts.resource_day").fetchall())
    assert rows == {"podA": Decimal("5400.000"), "podB": Decimal("3600.000")}
    src = dict(con.execute("select pod_id, rate_source from intermediate.int_runpod__pod_rates").fetchall())
    assert src == {"podA": "rate_card_pod", "podB": "rate_card_gpu"}
    # v1 seconds are given, v2 seconds derived from the amount
    derived = dict(con.execute("select resource_id, seconds_derived from marts.resource_day").fetchall())
    assert derived == {"podA": False, "podB": True}


def test_missing_rate_is_a_finding_not_a_zero(folder, tmp_path):
    (folder / "v2.json").write_text(json.dumps({"records": [
        {"startTime": "2026-06-01T10:00:00Z", "endTime": "2026-06-01T11:00:00Z", "podId": "mystery",
         "totalAmount": 2.5, "gpuAmount": 2.5, "cpuAmount": 0, "diskAmount": 0}],
        "metadata": {"query": {}}}))
    run(folder, tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    f = con.execute("select code, resource_id, amount_at_stake, message from marts.findings").fetchall()
    assert [(c, r, a) for c, r, a, _ in f] == [("RATE_MISSING", "mystery", Decimal("2.5"))]
    assert "mystery" in f[0][3] and "rate card" in f[0][3]
    assert con.execute("select rate_missing from marts.resource_day").fetchall() == [(True,)]


def test_malformed_lines_are_quarantined_with_file_and_line(folder, tmp_path):
    good = {"type": "ADDED", "object": pod("u9", "1")}
    (folder / "w.jsonl").write_text(
        json.dumps(good) + "\n"
        + "{not json\n"
        + json.dumps({"type": "ADDED", "object": {"kind": "Pod", "metadata": {}}}) + "\n"
        + json.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Gone"}}) + "\n"
        + json.dumps({"type": "ADDED", "object": pod("u10", "2", created="yesterday")}) + "\n"
        + '{"type": "MODIFIED", "object": {"kind": "Pod"')  # truncated last line
    (folder / "bill.json").write_text(json.dumps({"records": [
        {"startTime": "2026-06-01T10:00:00Z", "endTime": "2026-06-01T11:00:00Z", "podId": "x",
         "totalAmount": "NaN?", "gpuAmount": 1},
        {"startTime": "2026-06-01T10:00:00Z", "podId": "x"}], "metadata": {}}))
    (folder / "notes.txt").write_text("hello\n")
    (folder / "empty.json").write_text("")
    gz = folder / "more.jsonl.gz"
    gz.write_bytes(gzip.compress((json.dumps({"type": "ADDED", "object": pod("u11", "3")}) + "\n").encode()))
    res = run(folder, tmp_path / "db.duckdb")
    assert res.records_in == res.loaded + res.quarantined + res.skipped
    con = connect(tmp_path / "db.duckdb", read_only=True)
    q = {(r[0].rsplit("/", 1)[-1], r[1]): r[2] for r in con.execute(
        "select source_file, locator, reason from raw.quarantine").fetchall()}
    assert q[("w.jsonl", "line 2")].startswith("invalid JSON")
    assert "metadata.uid" in q[("w.jsonl", "line 3")]
    assert "410" in q[("w.jsonl", "line 4")]
    assert q[("w.jsonl", "line 6")].startswith("truncated last line")
    assert "totalAmount is not a number" in q[("bill.json", "records[0]")]
    assert "endTime" in q[("bill.json", "records[1]")]
    assert q[("notes.txt", "file")].startswith("not JSON")
    assert q[("empty.json", "file")] == "empty file"
    # the bad timestamp passes landing but is caught by staging, with its reason
    sq = con.execute("select locator, reason from staging.quarantine").fetchall()
    assert sq == [("line 5", "Pod metadata.creationTimestamp is not a timestamp: yesterday")]
    pods = {r[0] for r in con.execute("select pod_uid from marts.workload_lifecycle").fetchall()}
    assert pods == {"u9", "u11"}


def test_empty_or_missing_folder_is_a_clear_error(tmp_path):
    from typer.testing import CliRunner

    from recon.cli import app

    (tmp_path / "empty").mkdir()
    r = CliRunner().invoke(app, ["run", "--input", str(tmp_path / "empty"), "--db",
                                 str(tmp_path / "x.duckdb")])
    assert r.exit_code == 2
    assert "holds no input files" in r.output
    r = CliRunner().invoke(app, ["run", "--input", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "does not exist" in r.output


def test_kubectl_concatenated_watch_output(folder, tmp_path):
    docs = [{"type": "ADDED", "object": pod("c1", "1")},
            {"type": "MODIFIED", "object": pod("c1", "2", node="n1")}]
    (folder / "watch.json").write_text("\n".join(json.dumps(d, indent=4) for d in docs) + "\n")
    res = run(folder, tmp_path / "db.duckdb")
    assert res.files[0].kind == "concatenated_json" and res.loaded == 2
