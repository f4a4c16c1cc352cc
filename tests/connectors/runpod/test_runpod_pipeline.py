"""The live Runpod client, pulling simulator bills from the loopback fake, feeds the same marts."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime

import duckdb

from connectors.runpod import RunpodClient, pull_billing
from recon.pipeline import run
from tests.fakes.runpod_api import FakeRunpodAPI, VirtualClock

KEY = "rpa_PIPELINE_TEST_KEY_42"
KINDS = {"billing-pods": "pods", "billing-serverless": "serverless",
         "billing-network-volumes": "network_volumes", "billing-account": "account"}


def _marts(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        # bill_state depends on when each bill was pulled, which differs here by design
        return {m: con.execute(f"select * exclude ({x}) from marts.{m} order by all").fetchall()
                for m, x in (("resource_day", "bill_state"), ("billed_segments", "expected_amount"),
                             ("findings", "message"))}
    finally:
        con.close()


def test_pulled_bills_reconcile_like_the_saved_files(sim_run, tmp_path):
    src = sim_run["root"] / "input"
    billing: dict[str, list] = {k: [] for k in KINDS.values()}
    for f in (src / "runpod").glob("billing-*.json"):
        kind = next(v for k, v in KINDS.items() if f.name.startswith(k))
        billing[kind] += json.loads(f.read_text())["records"]
    billing["account"] = []  # the fake derives the account total from the per-resource lines

    # everything except the saved v2 billing files: those come from the API instead
    live = tmp_path / "live"
    shutil.copytree(src, live, ignore=shutil.ignore_patterns("billing-*.json"))
    clock = VirtualClock()
    now = datetime(2026, 6, 4, 0, 30, tzinfo=UTC)
    with FakeRunpodAPI(KEY, billing=billing, clock=clock, now=now) as api:
        client = RunpodClient(KEY, base_url=api.base_url, sleep=clock.sleep,
                              monotonic=clock.monotonic, jitter=False)
        res = pull_billing(live / "landing", datetime(2026, 6, 1, tzinfo=UTC),
                           datetime(2026, 6, 3, tzinfo=UTC), client=client, now=now, chunk_days=1)
    assert res.files
    run(live, tmp_path / "live.duckdb")
    got, want = _marts(tmp_path / "live.duckdb"), _marts(sim_run["db"])
    assert got["resource_day"] == want["resource_day"]
    assert got["billed_segments"] == want["billed_segments"]
    assert got["findings"] == want["findings"]
    for p in (live / "landing").rglob("*"):
        if p.is_file():
            assert KEY not in p.read_text()
