"""A planted API key never reaches logs, the warehouse, exports or the report."""

from __future__ import annotations

import json
import logging
import shutil
from datetime import UTC, datetime

from connectors.runpod import RunpodClient, pull_billing, snapshot_inventory
from recon.db import connect
from recon.outputs import focus, report
from recon.pipeline import run
from tests.fakes.runpod_api import FakeRunpodAPI, VirtualClock

KEY = "rpa_PLANTED_SECRET_7f3c9e1d2b"


def test_planted_key_is_nowhere(sim_run, tmp_path, caplog, monkeypatch):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("RUNPOD_API_KEY", KEY)
    src = sim_run["root"] / "input"
    billing = {"pods": [], "serverless": [], "network_volumes": [], "account": []}
    for f in (src / "runpod").glob("billing-pods-*.json"):
        billing["pods"] += json.loads(f.read_text())["records"]
    live = tmp_path / "live"
    shutil.copytree(src, live, ignore=shutil.ignore_patterns("billing-*.json"))
    clock = VirtualClock()
    now = datetime(2026, 6, 4, tzinfo=UTC)
    with FakeRunpodAPI(KEY, billing=billing, clock=clock, now=now, echo_auth_in_errors=True) as api:
        client = RunpodClient(base_url=api.base_url, sleep=clock.sleep, monotonic=clock.monotonic)
        pull_billing(live / "landing", datetime(2026, 6, 1, tzinfo=UTC),
                     datetime(2026, 6, 3, tzinfo=UTC), client=client, now=now)
        snapshot_inventory(live / "landing", client=client, now=now)
    db = tmp_path / "recon.duckdb"
    run(live, db)
    con = connect(db, read_only=True)
    out = tmp_path / "exports"
    focus.export_month(con, "2026-06", out)
    report.write_report(con, "2026-06-01", out / "report.html")
    con.close()
    planted = KEY.encode()
    checked = 0
    for p in tmp_path.rglob("*"):
        if p.is_file():
            assert planted not in p.read_bytes(), p
            checked += 1
    assert checked > 20
    assert KEY not in caplog.text
