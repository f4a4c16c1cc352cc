"""Serverless workers billed with no job: SERVERLESS_ALWAYS_ON and SERVERLESS_STUCK_WORKER, each
raised and missed just under its threshold, and SERVERLESS_IDLE_EXCESS leaving them their seconds.

The files in `input/` are written by hand in the shapes Runpod returns them, not by the
simulator (2026-06-01, and one worker's first hour of 2026-06-02):

* `runpod/inventory/pulled=20260601T060000Z/serverless.json`: `GET /v2/serverless` as the
  connector lands it (`x_recon` + `ListEndpointsResponse`): each `Endpoint` of
  /work/shared/reference/runpod/openapi-v2.json carries `workers {min, max, idleTimeout}`
  (EndpointWorkers: "min: Minimum number of workers", "idleTimeout: Seconds before idle workers
  scale down") and `timeout` ("Per-request execution timeout in milliseconds").
* `runpod/saved/v1-endpoints.json`: a saved v1 `GET /endpoints` array (openapi-v1.json
  `Endpoint`: `workersMin`, `idleTimeout`, `executionTimeoutMs`) with the `workersStandby: 1`
  runpod/flash#364 found deployed for `workers=(0, 1)`: "the API field behind what the console
  calls an active worker. The endpoint holds one worker warm continuously".
* `runpod/inventory/pulled=*/workers_<endpoint>.json`: `GET /v2/serverless/{id}/workers`
  (`ListEndpointWorkersResponse`: `Worker` with `status` RUNNING|IDLE|…, `startedAt` "When the
  worker last started", `uptimeSeconds`), one file per pull.
* `jobs/jobs-2026-06-01.jsonl`: the submitter's `/status` records (runpod-billing.md, "Serverless
  job records": `delayTime`, `executionTime` in milliseconds, `workerId`).
* `runpod/billing/serverless_*.json`: `GET /v2/billing/serverless?bucketSize=hour`, one pull a
  day (`ServerlessBillingRecord`, USD only; runpod-billing.md line 28: "v2 reports no seconds").
* `recon.toml`: per-second rates from Runpod's endpoint settings page (RTX 4090 PRO: active
  $0.00021/s, flex $0.00031/s; A4000 flex $0.00016/s).

Runpod's rules the numbers derive from (runpod-billing.md, "Billing rules"; docs.runpod.io
serverless/endpoints/endpoint-configurations, "Quick reference"): a worker is "billed from
worker start to full stop, rounded up to the next second; includes … idle timeout (default 5 s)";
"Active (always-on) workers bill continuously"; "Execution timeout: 600s (10 min), Max job
duration", after which "the job is marked as failed and the worker is stopped".

Thresholds are the defaults (recon/config.py): serverless_always_on_hours = 2,
serverless_stuck_worker_tolerance_seconds = 600, serverless_execution_timeout_seconds = 600,
serverless_idle_tolerance_seconds = 2.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from recon.db import connect
from recon.pipeline import run

INPUT = Path(__file__).with_name("input")
DAY = "2026-06-01"
ACTIVE, FLEX, A4000 = Decimal("0.00021"), Decimal("0.00031"), Decimal("0.00016")  # USD per worker-second


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    path = tmp_path_factory.mktemp("reference-serverless") / "recon.duckdb"
    res = run(INPUT, path, validate=True)
    assert res.quarantined == 0 and not res.staging_quarantined_by_file
    assert res.validation.success, res.validation.summary()
    c = connect(path, read_only=True)
    c.execute("set TimeZone = 'UTC'")
    yield c
    c.close()


def findings(con, endpoint: str) -> dict[str, tuple]:
    rows = con.execute(
        "select code, strftime(window_start, '%H:%M:%S'), strftime(window_end, '%H:%M:%S'), seconds, "
        "amount_at_stake, message, namespace, owner_kind, owner_name, team from marts.findings "
        "where resource_id = ? and day = ? and code like 'SERVERLESS_%'", [endpoint, DAY]).fetchall()
    assert len({r[0] for r in rows}) == len(rows), rows  # one finding per code here
    return {r[0]: r[1:] for r in rows}


def test_endpoint_settings_are_staged_from_both_api_versions(con):
    """v2 `workers.min` and `timeout` (ms); v1 `workersMin`, `workersStandby`, `executionTimeoutMs`."""
    got = {r[0]: r[1:] for r in con.execute(
        "select endpoint_id, workers_min, workers_standby, idle_timeout_seconds, execution_timeout_ms "
        "from staging.stg_runpod__endpoints").fetchall()}
    assert got["epalwayson1"] == (1, None, 5, 600_000)
    assert got["eptimeout01"] == (0, None, 5, 300_000)
    assert got["epstandby01"] == (0, 1, 60, 600_000)
    # the workers API's last word on a worker: its status and when that life started
    assert con.execute("select last_status, strftime(last_started_at, '%H:%M:%S'), "
                       "strftime(last_seen_at, '%H:%M:%S') from staging.stg_runpod__workers "
                       "where worker_id = 'wkstuck0001'").fetchone() == ("IDLE", "09:58:00", "13:00:00")


def test_always_on_raises_on_active_workers_billed_hours_without_a_job(con):
    """epalwayson1: workersMin = 1, billed 00:00-06:00 at 1 worker × 3600 s × $0.00021 = $0.756 an
    hour; its one job ran 00:10:00-00:11:00 (+ idleTimeout 5 s + tolerance 2 s: within hour 00).
    Hours 01-05 had no job queued, running or in its idle timeout: 5 ≥ 2 hours.
    Money: 5 × $0.756 = $3.78, the bill's own amounts; seconds 5 × 3600 = 18000."""
    f = findings(con, "epalwayson1")["SERVERLESS_ALWAYS_ON"]
    assert f[:4] == ("01:00:00", "06:00:00", Decimal("18000.000"), 5 * ACTIVE * 3600)
    assert f[3] == Decimal("3.78")
    for evidence in ("5 hour(s)", "UTC hours 01, 02, 03, 04, 05", "workersMin = 1",
                     "serverless_always_on_hours = 2", "$3.780000"):
        assert evidence in f[4]
    assert f[5:] == (None, None, None, None)  # an endpoint: no workload owns it


def test_always_on_near_miss_one_hour_without_a_job(con):
    """epalwaysnr1: the same, billed 00:00-02:00 only: hour 01 is 1 < 2 hours without a job: no
    SERVERLESS_ALWAYS_ON. SERVERLESS_IDLE_EXCESS holds the idle instead: 7200 s billed − 60 s
    execution = 7140 s idle; the idle timeout explains 5 s; excess 7135 s × $0.00021 = $1.49835."""
    got = findings(con, "epalwaysnr1")
    assert "SERVERLESS_ALWAYS_ON" not in got
    assert got["SERVERLESS_IDLE_EXCESS"][2:4] == (Decimal("7135.000"), 7135 * ACTIVE)


def test_idle_excess_claims_only_what_always_on_does_not_hold(con):
    """epalwayson1's day: 6 × 3600 = 21600 s billed − 60 s execution = 21540 s idle (session from
    the job's submission: no workers snapshot, so no cold start; (60 + 5) s has no round-up).
    Idle timeout explains 5 s, SERVERLESS_ALWAYS_ON holds 18000 s: excess 21540 − 5 − 18000 =
    3535 s (hour 00 after the idle timeout) × $0.00021 = $0.74235. Together the two codes hold
    21535 s, never a second twice."""
    got = findings(con, "epalwayson1")
    excess = got["SERVERLESS_IDLE_EXCESS"]
    assert excess[2:4] == (Decimal("3535.000"), Decimal("0.74235"))
    assert "SERVERLESS_ALWAYS_ON hold 18000 s" in excess[4]
    assert excess[2] + got["SERVERLESS_ALWAYS_ON"][2] == Decimal(21540 - 5)


def test_always_on_names_workers_standby_of_a_saved_v1_endpoint(con):
    """epstandby01 (runpod/flash#364's deploy: workersMin 0, workersStandby 1, idleTimeout 60) ran
    no job; billed hours 02, 03, 04 at $0.576 (3600 s × $0.00016): 3 ≥ 2 hours, $1.728."""
    f = findings(con, "epstandby01")["SERVERLESS_ALWAYS_ON"]
    assert f[:4] == ("02:00:00", "05:00:00", Decimal("10800.000"), 3 * A4000 * 3600)
    assert "workersMin = 0, workersStandby = 1: active workers bill continuously" in f[4]


def test_stuck_worker_raises_when_a_worker_does_not_scale_down(con):
    """epstuck0001 (workersMin 0, idleTimeout 5): worker wkstuck0001 started 09:58:00, its only
    job ran 09:59:00-10:00:00, so it should have stopped by 10:00:05; the workers API still
    showed it (IDLE, same startedAt) at 13:00:00. 13:00:00 − 10:00:05 = 10795 s > 600 s.
    Money: 10795 × $0.00031 = $3.34645."""
    got = findings(con, "epstuck0001")
    f = got["SERVERLESS_STUCK_WORKER"]
    assert f[:4] == ("10:00:05", "13:00:00", Decimal("10795.000"), 10795 * FLEX)
    assert f[3] == Decimal("3.34645")
    for evidence in ("wkstuck0001", "still up at 2026-06-01T13:00:00Z", "status IDLE",
                     "last job finished at 2026-06-01T10:00:00Z", "idleTimeout 5 s",
                     "scaled down by 2026-06-01T10:00:05Z", "tolerance_seconds = 600 s"):
        assert evidence in f[4]
    # hours 11 and 12 were billed with no job (2 ≥ 2 hours), but the stuck worker holds them;
    # and the day's idle, 10920 − 120 = 10800 s, is 5 s of idle timeout + the 10795 s held
    assert set(got) == {"SERVERLESS_STUCK_WORKER"}


def test_stuck_worker_near_miss_just_under_the_tolerance(con):
    """epstucknr01: the same worker last seen at 10:10:04: 10:10:04 − 10:00:05 = 599 s ≤ 600 s:
    no SERVERLESS_STUCK_WORKER. Its bill (09: 120 s, 10: 604 s) leaves 604 s idle, 5 s explained:
    SERVERLESS_IDLE_EXCESS holds the 599 s × $0.00031 = $0.18569."""
    got = findings(con, "epstucknr01")
    assert set(got) == {"SERVERLESS_IDLE_EXCESS"}
    assert got["SERVERLESS_IDLE_EXCESS"][2:4] == (Decimal("599.000"), 599 * FLEX)


def test_stuck_worker_raises_on_a_job_past_the_execution_timeout(con):
    """eptimeout01 (`timeout` 300000 ms = 300 s): job-tmo-1 executed 3900000 ms, 12:00:00-13:05:00.
    3900 − 300 = 3600 s > 600 s past the timeout, from 12:05:00. Money: 3600 × $0.00031 = $1.116.
    Execution seconds, not idle: no SERVERLESS_IDLE_EXCESS (3905 s billed − 3900 s = 5 s idle)."""
    got = findings(con, "eptimeout01")
    assert set(got) == {"SERVERLESS_STUCK_WORKER"}
    f = got["SERVERLESS_STUCK_WORKER"]
    assert f[:4] == ("12:05:00", "13:05:00", Decimal("3600.000"), Decimal("1.116"))
    for evidence in ("job-tmo-1", "executed for 3900 s", "execution timeout is 300 s (the endpoint's)"):
        assert evidence in f[4]


def test_execution_timeout_near_miss_under_runpod_default(con):
    """eptimeoutnr has no inventory snapshot: Runpod's default execution timeout, 600 s, applies.
    job-tnr-1 executed 1199 s: 1199 − 600 = 599 s ≤ 600 s: no finding (5 s idle, explained)."""
    assert findings(con, "eptimeoutnr") == {}


def test_a_stuck_worker_over_midnight_is_a_finding_each_day(con):
    """epovernight: the job ran 22:59:00-23:00:00 on 06-01; the workers API showed the worker
    (same startedAt 22:58:00) at 01:00:00 on 06-02. Its window [23:00:05, 01:00:00) is cut at
    midnight: 3595 s × $0.00031 = $1.11445 on 06-01, 3600 s × $0.00031 = $1.116 on 06-02. The
    06-02 hour 00 is billed with no job, but the stuck worker holds it: no SERVERLESS_ALWAYS_ON."""
    rows = con.execute(
        "select day::varchar, code, strftime(window_start, '%m-%d %H:%M:%S'), "
        "strftime(window_end, '%m-%d %H:%M:%S'), seconds, amount_at_stake from marts.findings "
        "where resource_id = 'epovernight' order by day, code").fetchall()
    assert rows == [
        ("2026-06-01", "SERVERLESS_STUCK_WORKER", "06-01 23:00:05", "06-02 00:00:00",
         Decimal("3595.000"), 3595 * FLEX),
        ("2026-06-02", "SERVERLESS_STUCK_WORKER", "06-02 00:00:00", "06-02 01:00:00",
         Decimal("3600.000"), 3600 * FLEX),
    ]
