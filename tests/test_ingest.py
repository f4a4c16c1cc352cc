"""Hand-written fixtures for parsing edge cases and bad input: nothing is silently dropped."""

import gzip
import json
import re
from decimal import Decimal

import pytest

from recon.db import connect
from recon.pipeline import run


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
    con.close()
    # the gate publishes the day: the unconverted money is the finding's (and allocation's
    # __unallocated__), not a segment's, so the amount tie-out leaves that resource-day out
    from recon.gate.run import validate

    con = connect(tmp_path / "db.duckdb")
    report = validate(con, "t", suites=["tieout.billed_seconds"], write=False)
    assert report.success, report.summary()
    assert con.execute("select sum(amount) from marts.allocation where team = '__unallocated__'"
                       ).fetchone()[0] == Decimal("2.5")


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


def test_recon_run_names_each_file_with_everything_it_lost(folder, tmp_path):
    """`recon run` counts everything a file lost, at landing and in staging: counting only what
    landing quarantined, a file with one record quarantined at load and one in staging would
    read "1 record(s) quarantined"."""
    from typer.testing import CliRunner

    from recon.cli import app

    write_jsonl(folder / "w.jsonl", [{"type": "ADDED", "object": pod("u1", "1")},
                                     {"type": "ADDED", "object": pod("u2", "2", created="soon")}])
    (folder / "bill.json").write_text(json.dumps({"records": [
        {"startTime": "2026-06-01T10:00:00Z", "endTime": "2026-06-01T11:00:00Z", "podId": "x",
         "totalAmount": "twelve"},
        {"startTime": "2026-13-40T00:00:00Z", "endTime": "2026-06-01T11:00:00Z", "podId": "x",
         "totalAmount": 1.5},
        {"startTime": "2026-06-01T11:00:00Z", "endTime": "2026-06-01T12:00:00Z", "podId": "x",
         "totalAmount": 1.5}], "metadata": {}}))
    r = CliRunner().invoke(app, ["run", "--input", str(folder), "--db", str(tmp_path / "d.duckdb"),
                                 "--no-validate"], terminal_width=300)
    assert r.exit_code == 0, r.output
    said = {ln.split(": ", 1)[0].rsplit("/", 1)[-1]: ln.split(": ", 1)[1]
            for ln in r.output.splitlines() if "record(s) quarantined" in ln}
    assert said == {
        "bill.json": "2 record(s) quarantined (1 at load, 1 in staging; see `recon quarantine`)",
        "w.jsonl": "1 record(s) quarantined (1 in staging; see `recon quarantine`)"}


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


@pytest.mark.parametrize("args", [
    ["query", "select 1"], ["quarantine"], ["report", "--day", "2026-06-01"],
    ["check", "--day", "2026-06-01"], ["whatif", "--cooldown", "60"],
    ["export", "--day", "2026-06-01", "--out", "OUT"]])
def test_a_command_on_a_missing_warehouse_says_so(tmp_path, args):
    """Every command that reads the warehouse names the missing file and what to run, exit 2,
    no traceback (not DuckDB's IOException, for `recon quarantine`, `recon check` and `recon
    whatif` too)."""
    from typer.testing import CliRunner

    from recon.cli import app

    db = tmp_path / "nope.duckdb"
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    r = CliRunner().invoke(app, [*args, "--db", str(db)], terminal_width=200)
    assert r.exit_code == 2, r.output
    assert f"{db} does not exist; run `recon run` or `recon demo` first" in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert not db.exists()  # nothing created by a read


def test_query_shows_decimals_in_plain_digits(tmp_path):
    """`recon query`'s table prints a zero amount as 0, not 0E-12, and 3.6e-11 USD in plain
    digits, not 3.6E-11 (Python's str of a Decimal), as csv and json do."""
    from typer.testing import CliRunner

    from recon.cli import app
    from recon.db import connect

    db = tmp_path / "w.duckdb"
    connect(db).close()
    sql = ("select 0::decimal(38, 12) as zero, 0.000000000036::decimal(38, 12) as dust, "
           "-1.5::decimal(18, 3) as neg, 'x' as s, null::decimal(18, 3) as missing")
    r = CliRunner().invoke(app, ["query", sql, "--db", str(db)], terminal_width=200)
    assert r.exit_code == 0, r.output
    assert "0.000000000000" in r.output and "0.000000000036" in r.output and "-1.500" in r.output
    assert "E-" not in r.output


@pytest.mark.parametrize("args", [
    ["quarantine"], ["report", "--day", "2026-06-01"], ["check", "--day", "2026-06-01"],
    ["whatif", "--cooldown", "60"], ["export", "--day", "2026-06-01", "--out", "OUT"]])
def test_a_command_on_a_warehouse_never_built_says_so(tmp_path, args):
    """A warehouse file no run has built (an interrupted first run leaves one) is named with
    what to run, not DuckDB's catalog error as a traceback."""
    from typer.testing import CliRunner

    from recon.cli import app
    from recon.db import connect

    db = tmp_path / "empty.duckdb"
    connect(db).close()
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    r = CliRunner().invoke(app, [*args, "--db", str(db)], terminal_width=200)
    assert r.exit_code == 2, r.output
    assert f"{db} holds no reconciliation yet; run `recon run` first" in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)


@pytest.mark.parametrize("args, says", [
    (["run", "--input", "IN", "--from", "2026-06-05", "--to", "2026-06-01"],
     "--from 2026-06-05 is after --to 2026-06-01"),
    (["run", "--input", "IN", "--from", "2026-6-1"], "--from must be a UTC day YYYY-MM-DD"),
    (["check", "--day", "2026/06/01"], "--day must be a UTC day YYYY-MM-DD, got '2026/06/01'"),
    (["whatif", "--cooldown", "60", "--to", "June"], "--to must be a UTC day YYYY-MM-DD"),
    (["whatif", "--cooldown", "-5"], "greater than or equal to 0"),
    (["simulate", "--out", "OUT", "--start", "tomorrow"], "--start must be a UTC day")])
def test_a_bad_day_or_setting_is_a_clear_error(tmp_path, args, says):
    """A reversed window, `recon check --day 2026/06/01` and a negative cooldown for `recon
    whatif` are each exit 2 with the option named, and nothing is written: not a run reporting
    'no day with a billed or active resource', a traceback, or a negative cooldown priced."""
    from typer.testing import CliRunner

    from recon.cli import app
    from recon.db import connect

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "x.json").write_text("{}")
    db = tmp_path / "w.duckdb"
    if args[0] in ("check", "whatif"):
        connect(db).close()
    args = [str(tmp_path / "in") if a == "IN" else str(tmp_path / "out") if a == "OUT" else a
            for a in args]
    r = CliRunner().invoke(app, [*args, *([] if args[0] == "simulate" else ["--db", str(db)])],
                           terminal_width=200)
    assert r.exit_code == 2, r.output
    assert says in r.output, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    if args[0] == "run":
        assert not db.exists()  # refused before landing anything
    assert not (tmp_path / "out").exists()


def test_the_library_refuses_a_reversed_window(tmp_path):
    from datetime import date

    from recon.pipeline import run

    with pytest.raises(ValueError, match="ends before it starts"):
        run(tmp_path, tmp_path / "w.duckdb", day_from=date(2026, 6, 5), day_to=date(2026, 6, 1))
    assert not (tmp_path / "w.duckdb").exists()


def test_kubectl_concatenated_watch_output(folder, tmp_path):
    docs = [{"type": "ADDED", "object": pod("c1", "1")},
            {"type": "MODIFIED", "object": pod("c1", "2", node="n1")}]
    (folder / "watch.json").write_text("\n".join(json.dumps(d, indent=4) for d in docs) + "\n")
    res = run(folder, tmp_path / "db.duckdb")
    assert res.files[0].kind == "concatenated_json" and res.loaded == 2


def test_landing_records_the_timestamp_verdict_staging_would_reach_on_every_path(
        folder, tmp_path, monkeypatch):
    """raw.*.ts_ok (a Pod's creationTimestamp, a job's completedAt cast to TIMESTAMPTZ) is what
    staging's quarantine would conclude, whichever reader landed the row; the quarantine parses
    only the rows where it is not true, and still finds every bad one when it is NULL (rows
    landed before the column existed)."""
    from recon.db import RAW_DDL
    from recon.ingest import lists
    from recon.pipeline import build

    monkeypatch.setattr(lists, "LIST_MIN_BYTES", 0)  # the List below takes the DuckDB path
    odd = ["yesterday", 1780000000, None, {"at": "2026-06-01T10:00:00Z"}, "2026-06-01 10:00:00",
           "2026-06-01T10:00:00.123456789+05:30", "2026-02-30T00:00:00Z"]
    write_jsonl(folder / "watch.jsonl",  # DuckDB's JSON Lines path ...
                [{"type": "ADDED", "object": pod(f"w{i}", "1", created=c)} for i, c in enumerate(odd)]
                # ... and a line it leaves to the Python reader (the word BOOKMARK anywhere)
                + [{"type": "ADDED", "object": {**pod("wn", "1", created="later"),
                                                "x": "BOOKMARK"}}])
    (folder / "list.json").write_text(json.dumps(  # the DuckDB List path
        {"kind": "PodList", "apiVersion": "v1", "metadata": {},
         "items": [pod(f"l{i}", "1", created=c) for i, c in enumerate(odd)]}))
    job = {"id": "j", "status": "COMPLETED", "endpointId": "ep", "workerId": "w",
           "executionTime": 1000, "submittedAt": "2026-06-01T10:00:00Z"}
    write_jsonl(folder / "jobs.jsonl", [{**job, "id": f"j{i}", "completedAt": c}
                                        for i, c in enumerate(odd) if c is not None])
    (folder / "one-job.json").write_text(json.dumps(  # a single document: the Python reader
        {**job, "id": "jp", "completedAt": "soon"}))
    res = run(folder, tmp_path / "db.duckdb")
    assert res.records_in == res.loaded + res.quarantined + res.skipped
    con = connect(tmp_path / "db.duckdb")
    verdicts = {}
    for table, path in (("k8s_objects", "$.metadata.creationTimestamp"),
                        ("serverless_jobs", "$.completedAt")):
        rows = con.execute(f"select source_file, locator, ts_ok, try_cast(doc ->> '{path}' "
                           f"as timestamptz) is not null from raw.{table}").fetchall()
        assert rows and all(r[2] is not None and r[2] == r[3] for r in rows), rows
        verdicts[table] = {(f.rsplit("/", 1)[1], loc): ok for f, loc, ok, _ in rows}
    assert verdicts["k8s_objects"][("watch.jsonl", "line 8")] is False  # the Python path's
    # (a one-document file's record is "line 1", without a trailing blank)
    assert verdicts["serverless_jobs"][("one-job.json", "line 1")] is False
    bad = {(f, loc) for t in verdicts.values() for (f, loc), ok in t.items() if not ok}
    assert len(bad) >= 12 and any(ok for t in verdicts.values() for ok in t.values())

    def quarantined():
        return {(f.rsplit("/", 1)[1], loc): reason for f, loc, reason in con.execute(
            "select source_file, locator, reason from staging.quarantine").fetchall()}

    landed = quarantined()
    assert set(landed) == bad
    assert landed[("watch.jsonl", "line 1")] == "Pod metadata.creationTimestamp is not a timestamp: yesterday"
    assert landed[("one-job.json", "line 1")] == "job completedAt is not a timestamp: soon"
    # a warehouse landed before ts_ok: the column comes back NULL, and a rebuild still finds them
    for table in ("k8s_objects", "serverless_jobs"):
        con.execute(f"alter table raw.{table} drop column ts_ok")
    for stmt in RAW_DDL:
        con.execute(stmt)
    assert con.execute("select count(*) from raw.serverless_jobs where ts_ok is not null"
                       ).fetchone()[0] == 0
    con.execute("delete from meta.staged_models")  # every model rebuilt in full
    build(con)
    assert quarantined() == landed


def test_a_job_whose_submitted_at_is_there_but_no_timestamp_is_quarantined_on_every_path(
        folder, tmp_path):
    """submittedAt is optional (the /status record has none), but a malformed one must not load
    as NULL without a word: the worker's session would then start at its first job's execution
    instead of its submission, cold start lost from the bill's explanation. A present value that
    is no timestamp quarantines the job, named, whichever reader landed it and in a warehouse
    landed before the check (ts_ok NULL)."""
    from recon.db import RAW_DDL
    from recon.pipeline import build

    job = {"status": "COMPLETED", "endpointId": "ep", "workerId": "w", "executionTime": 1000,
           "completedAt": "2026-06-01T10:05:00Z"}
    subs = {"ok": "2026-06-01T10:00:00Z", "null": None, "bad": "yesterday", "num": 1780000000,
            "obj": {"at": "2026-06-01T10:00:00Z"}}
    write_jsonl(folder / "jobs.jsonl",  # DuckDB's JSON Lines path
                [{**job, "id": k, "submittedAt": v} for k, v in subs.items()]
                + [{**job, "id": "absent"}])
    (folder / "one-job.json").write_text(json.dumps(  # a single document: the Python reader
        {**job, "id": "py-bad", "submittedAt": "soon"}))
    res = run(folder, tmp_path / "db.duckdb")
    assert res.records_in == res.loaded + res.quarantined + res.skipped == 7
    con = connect(tmp_path / "db.duckdb")

    def outcome():
        staged = {r[0] for r in con.execute("select job_id from staging.stg_runpod__jobs").fetchall()}
        held = {json.loads(rec)["id"]: reason for rec, reason in con.execute(
            "select record, reason from staging.quarantine").fetchall()}
        return staged, held

    staged, held = outcome()
    assert staged == {"ok", "null", "absent"}
    assert held == {"bad": "job submittedAt is not a timestamp: yesterday",
                    "num": "job submittedAt is not a timestamp: 1780000000",
                    "obj": 'job submittedAt is not a timestamp: {"at":"2026-06-01T10:00:00Z"}',
                    "py-bad": "job submittedAt is not a timestamp: soon"}
    # landing's verdict (ts_ok) agrees with the quarantine's on every row
    assert dict(con.execute("select doc ->> '$.id', ts_ok from raw.serverless_jobs").fetchall()) \
        == {k: k in staged for k in [*subs, "absent", "py-bad"]}
    # a warehouse landed before ts_ok: NULL everywhere, the rebuild reaches the same verdicts
    con.execute("alter table raw.serverless_jobs drop column ts_ok")
    for stmt in RAW_DDL:
        con.execute(stmt)
    con.execute("delete from meta.staged_models")
    build(con)
    assert outcome() == (staged, held)


@pytest.mark.parametrize("value, reason", [
    (True, "is not a number: 'True'"), ("12", "is not a number: '12'"), ([1], "is not a number"),
    (float("nan"), "is not finite: nan"), (float("-inf"), "is not finite: -inf"),
    (1e12, "is out of range: 1000000000000.0"), (-10**12, "is out of range"),
    (10**30, "is out of range")])
def test_an_amount_that_is_no_finite_number_below_1e12_is_named_with_its_value(value, reason):
    """check_amounts' quick test of the usual case (an int or float, compared in range) leaves
    every odd value to the full checks: a bool is an int to Python and still no amount."""
    from recon.ingest.classify import BadRecord, check_amounts

    with pytest.raises(BadRecord, match=f"^gpuAmount {re.escape(reason)}"):
        check_amounts({"totalAmount": 1.5, "gpuAmount": value}, ("totalAmount", "gpuAmount"))
    for fine in (None, 0, -3, 999_999_999_999.9, -(10**12 - 1), 2.5e-300):
        check_amounts({"gpuAmount": fine}, ("totalAmount", "gpuAmount"))  # raises nothing


def test_a_byte_order_mark_is_ignored_and_bytes_that_are_not_utf8_are_named(folder, tmp_path):
    """A file starting with a UTF-8 BOM (Windows tools write one) is read, not "not JSON, JSON
    Lines or a recognised format", and a JSON Lines file whose first line has a Latin-1 byte is
    named, not read as concatenated documents with that byte replaced by U+FFFD (a job id
    altered in silence)."""
    job = {"id": "j1", "delayTime": 1, "executionTime": 2, "endpointId": "e",
           "completedAt": "2026-06-01T10:00:00Z"}
    line = lambda **kw: json.dumps({**job, **kw}).encode() + b"\n"
    (folder / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + line(id="b1") + line(id="b2"))
    (folder / "bom-list.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": [pod("u1", "1")]}).encode())
    latin = line(id="x").replace(b'"x"', '"j\xe9"'.encode("latin-1"))
    (folder / "first.jsonl").write_bytes(latin + line(id="f2"))  # the Python reader
    (folder / "later.jsonl").write_bytes(line(id="l1") + latin + line(id="l3"))  # fast path
    (folder / "docs.json").write_bytes(b'{"kind": "Pod",\n "x": "\xe9"}\n{"kind": "Pod"}\n')
    res = run(folder, tmp_path / "db.duckdb")
    assert res.records_in == res.loaded + res.quarantined + res.skipped
    con = connect(tmp_path / "db.duckdb", read_only=True)
    q = {(r[0].rsplit("/", 1)[-1], r[1]): r[2] for r in con.execute(
        "select source_file, locator, reason from raw.quarantine").fetchall()}
    assert q == {
        ("first.jsonl", "line 1"): "not valid UTF-8: byte 0xe9 at column 10",
        ("later.jsonl", "line 2"): "not valid UTF-8: byte 0xe9 at column 10",
        ("docs.json", "line 2"): "not valid UTF-8: byte 0xe9 on line 2; the file's documents "
                                 "were not read"}
    jobs = {r[0] for r in con.execute(
        "select json_extract_string(doc, '$.id') from raw.serverless_jobs").fetchall()}
    assert jobs == {"b1", "b2", "f2", "l1", "l3"}  # nothing with a replacement character
    assert con.execute("select count(*) from raw.k8s_objects where uid = 'u1'").fetchone()[0] == 1


def test_the_collectors_resume_state_in_the_landing_area_is_skipped_not_quarantined(folder):
    """The collector keeps <landing>/k8s/state/<cluster>.json beside what it lands, and the
    daily run loads that landing area whole: quarantined as 'not a recognised input record',
    the state file would put a warning in every daily log."""
    from connectors.kubernetes.landing import StateStore
    from recon.ingest.land import load_folder

    state = StateStore(folder, "c1")
    state.save("pods", "1001")
    state.save("events", "1002")
    write_jsonl(folder / "k8s" / "watch.jsonl",
                [{"type": "ADDED", "object": pod("u1", "1001"), "cluster": "c1"}])
    # a document of those keys but not the collector's shape is still refused
    (folder / "other.json").write_text(json.dumps(
        {"version": 1, "cluster": "c1", "savedAt": "x", "resources": {"pods": "1001"}}))
    con = connect(folder.parent / "w.duckdb")
    res = {r.path.rsplit("/in/", 1)[1]: r for r in load_folder(con, folder)}
    st = res["k8s/state/c1.json"]
    assert (st.records_in, st.loaded, st.quarantined, st.skipped) == (1, 0, 0, 1)
    assert st.skip_reason == "the Kubernetes collector's resume state, not billing data"
    assert res["k8s/watch.jsonl"].loaded == 1
    assert res["other.json"].quarantined == 1 and "not a recognised" in res["other.json"].bad[0]["reason"]


@pytest.mark.parametrize(("gpu", "reason"), [
    # openapi-v2 `GpuType`: `id` a string; `price` an object whose `secure` and `community`
    # are required numbers and `serverless` is "Absent when the GPU is not in a serverless pool"
    ({"price": {"secure": 1, "community": 1}}, "GPU type has no id"),
    ({"id": "G", "price": 0.44}, "GPU type 'G': price is not an object: '0.44'"),
    ({"id": "G", "price": {"community": 0.31}}, "GPU type 'G': price.secure is missing"),
    ({"id": "G", "price": {"secure": True, "community": 0.31}},
     "GPU type 'G': price.secure is not a number: 'True'"),
    ({"id": "G", "price": {"secure": 0.44, "community": 0.31, "serverless": -1.1}},
     "GPU type 'G': price.serverless is negative: -1.1"),
    ({"id": "G", "price": {"secure": 0.44, "community": float("inf")}},
     "GPU type 'G': price.community is out of range: inf"),
])
def test_a_gpu_price_the_spec_does_not_allow_says_why(gpu, reason):
    from recon.ingest.classify import BadRecord, gpu_price

    with pytest.raises(BadRecord) as e:
        gpu_price(gpu)
    assert str(e.value) == reason


def test_a_gpu_without_a_serverless_price_is_a_good_one():
    from recon.ingest.classify import doc_kind, gpu_price

    # the H100's of a pod-only catalog: `pool` null, no `price.serverless`
    gpu = {"id": "NVIDIA H100 PCIe", "pool": None, "price": {"secure": 2.49, "community": 1.99}}
    assert gpu_price(gpu) is None
    assert doc_kind({"gpus": [gpu]}) == "runpod_gpu_catalog"
    # a job record that happens to carry a `gpus` list is no job: the JSON Lines fast path
    # (recon/ingest/jsonl_sql.py `not_job`) must agree with doc_kind
    assert doc_kind({"id": "j", "executionTime": 5, "gpus": [gpu]}) == "runpod_gpu_catalog"
