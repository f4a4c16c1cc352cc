"""Late and restated bills: every pull is kept; marts show provisional / settled / restated."""

import json
from decimal import Decimal

import duckdb
import pytest

from recon.db import connect
from recon.pipeline import run


def envelope(records, pulled):
    return {"records": records, "metadata": {"query": {}},
            "x_recon": {"endpoint": "/v2/billing/pods", "pulledAt": pulled}}


def rec(hour, amount, pod="p1"):
    return {"startTime": f"2026-06-01T{hour:02d}:00:00Z", "endTime": f"2026-06-01T{hour + 1:02d}:00:00Z",
            "podId": pod, "totalAmount": amount, "gpuAmount": amount, "cpuAmount": 0, "diskAmount": 0}


def test_restated_then_settled(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "recon.toml").write_text('[rates.pod_per_hour]\np1 = "1.00"\np2 = "1.00"\n')
    # first pull at 12:30 on the day: hour 12 still in progress
    (d / "pull1.json").write_text(json.dumps(envelope(
        [rec(10, 1.0), rec(11, 1.0), rec(12, 0.5)], "2026-06-01T12:30:00Z")))
    db = tmp_path / "db.duckdb"
    run(d, db)
    con = connect(db, read_only=True)
    # a pull made during the day holds the hours that had arrived: the day's bill has not landed
    assert con.execute("select state, amount from marts.settlement").fetchall() == [
        ("awaiting_bill", Decimal("2.5"))]
    con.close()
    # two days later the provider restates hour 11 and completes hour 12
    (d / "pull2.json").write_text(json.dumps(envelope(
        [rec(10, 1.0), rec(11, 0.75), rec(12, 1.0)], "2026-06-03T09:00:00Z")))
    run(d, db)  # same warehouse: the rerun picks up the new pull
    con = connect(db, read_only=True)
    assert con.execute("select state, amount, restated_change, restated_buckets "
                       "from marts.settlement").fetchall() == [
        ("restated", Decimal("2.75"), Decimal("0.25"), 2)]
    assert con.execute("select billed_seconds, bill_state from marts.resource_day").fetchall() == [
        (Decimal("9900.000"), "restated")]
    r = con.execute("select bucket_start::varchar, previous_amount, amount, change "
                    "from marts.restatements order by bucket_start").fetchall()
    assert r == [("2026-06-01 11:00:00+00", Decimal("1"), Decimal("0.75"), Decimal("-0.25")),
                 ("2026-06-01 12:00:00+00", Decimal("0.5"), Decimal("1"), Decimal("0.5"))]
    con.close()


def test_settled_and_estimated(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "recon.toml").write_text('[rates.pod_per_hour]\np1 = "1.00"\np2 = "2.00"\n')
    (d / "pull.json").write_text(json.dumps(envelope([rec(10, 1.0)], "2026-06-03T00:00:00Z")))
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "w", "namespace": "ml", "uid": "u1", "resourceVersion": "1",
                        "creationTimestamp": "2026-06-01T08:00:00Z"},
           "spec": {"nodeName": "p2", "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
           "status": {"conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-06-01T08:00:00Z"}],
                      "containerStatuses": [{"name": "c", "state": {"terminated": {
                          "startedAt": "2026-06-01T08:00:00Z", "finishedAt": "2026-06-01T09:00:00Z"}}}]}}
    (d / "pods.jsonl").write_text(json.dumps({"type": "ADDED", "object": pod}) + "\n")
    (d / "inv.json").write_text(json.dumps({"pods": [{"id": "p2", "status": "RUNNING", "cost": 2.0}],
                                            "x_recon": {"pulledAt": "2026-06-01T08:30:00Z"}}))
    run(d, tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    assert con.execute("select resource_id, state, amount from marts.settlement order by 1").fetchall() == [
        ("p1", "settled", Decimal("1")), ("p2", "estimated", Decimal("2"))]


def _pulled(path, endpoint, pulled, start, end, rec):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "x_recon": {"endpoint": endpoint, "pulledAt": pulled, "params": {}},
        "records": [{"startTime": start, "endTime": end, **rec}],
        "metadata": {"query": {}, "recordCount": 1, "totals": {}}}))


@pytest.mark.parametrize("kind, endpoint, rec, table", [
    ("billing_network_volumes", "/v2/billing/network-volumes",
     {"networkVolumeId": "vol_1", "totalAmount": 1.5, "standardAmount": 1.5,
      "highPerformanceAmount": 0}, "staging.stg_runpod__network_volume_billing"),
    ("billing", "/v2/billing", {"totalAmount": 1.5}, "staging.stg_runpod__account_billing"),
    ("billing_pods", "/v2/billing/pods",
     {"podId": "pod_1", "totalAmount": 1.5, "gpuAmount": 1.5, "cpuAmount": 0, "diskAmount": 0},
     "staging.stg_runpod__pod_billing"),
])
def test_a_repull_that_spells_the_bucket_otherwise_is_the_same_bucket(tmp_path, kind, endpoint,
                                                                      rec, table):
    """RFC 3339 allows `…T00:00:00Z` and `…T00:00:00.000Z` for one instant. The network-volume
    and account lines are deduplicated on the instant, not the text: on the text a re-pull
    spelling it otherwise would keep both, and the volume would be billed $3.00 for one $1.50
    hour."""
    land = tmp_path / "landing" / "runpod" / kind
    _pulled(land / "pulled=20260602T000000Z" / "a.json", endpoint, "2026-06-02T00:00:00Z",
            "2026-06-01T00:00:00Z", "2026-06-01T01:00:00Z", rec)
    _pulled(land / "pulled=20260603T000000Z" / "b.json", endpoint, "2026-06-03T00:00:00Z",
            "2026-06-01T00:00:00.000Z", "2026-06-01T01:00:00.000Z", {**rec, "totalAmount": 1.25})
    run(tmp_path / "landing", tmp_path / "r.duckdb")
    con = duckdb.connect(str(tmp_path / "r.duckdb"), read_only=True)
    rows = con.execute(f"select total_amount_usd from {table}").fetchall()
    assert rows == [(Decimal("1.25"),)]  # one bucket, the later pull's amount


def _marts_digest(db) -> dict:
    """Every mart's rows, in order, as a digest (file names left out: they are the test's
    variable)."""
    import hashlib

    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        for (t,) in con.execute("select table_name from duckdb_tables() where schema_name = "
                                "'marts' and table_name <> 'validation_results' order by 1"
                                ).fetchall():
            cols = [c for (c,) in con.execute(
                "select column_name from duckdb_columns() where schema_name = 'marts' and "
                "table_name = ? and column_name <> 'source_file' order by column_index",
                [t]).fetchall()]
            rows = con.execute(f"select {', '.join(cols)} from marts.{t} order by all").fetchall()
            out[t] = hashlib.sha256(repr(rows).encode()).hexdigest()
        return out
    finally:
        con.close()


def test_versions_with_one_pull_time_give_the_same_marts_every_run(tmp_path):
    """Several lines of one bucket with the same pulledAt (here: two files of one pull whose
    endTimes differ) are not ordered by whichever the sort meets first: bill_state,
    first_pulled_amount and the restated change would move between runs of the same bills.
    Fresh warehouses, the files
    under other names (so landed in another order): the marts are the same."""
    def rec_end(hour, amount, end):
        return {**rec(hour, amount), "endTime": end}

    bills = {
        "first": envelope([rec(10, 1.0), rec_end(10, 1.2, "2026-06-01T10:59:59Z"), rec(11, 1.0),
                           rec(12, 0.5)], "2026-06-01T12:30:00Z"),
        "again-x": envelope([rec(11, 1.0), rec(12, 1.0)], "2026-06-01T13:30:00Z"),
        "again-y": envelope([rec(11, 0.9), rec_end(12, 0.8, "2026-06-01T12:59:59Z")],
                            "2026-06-01T13:30:00Z"),
    }
    digests = []
    for i, names in enumerate([("a", "b", "c")] * 5):
        d = tmp_path / f"in{i}"
        d.mkdir()
        (d / "recon.toml").write_text('[rates.pod_per_hour]\np1 = "1.00"\n')
        for name, bill in zip(names, bills.values()):
            (d / f"{name}.json").write_text(json.dumps(bill))
        run(d, tmp_path / f"w{i}.duckdb")
        digests.append(_marts_digest(tmp_path / f"w{i}.duckdb"))
    assert {"settlement", "resource_day", "restatements"} <= set(digests[0])
    for i, got in enumerate(digests[1:], 1):
        assert got == digests[0], (i, {t for t in got if got[t] != digests[0][t]})
    con = duckdb.connect(str(tmp_path / "w0.duckdb"), read_only=True)
    # one version per pull time: the largest amount of it, the largest end
    assert con.execute("select pulls, first_amount, latest_amount, state from "
                       "intermediate.int_billing__bucket_states where bucket_start = "
                       "'2026-06-01T12:00:00Z'").fetchone() == (2, Decimal("0.5"),
                                                                 Decimal("1"), "restated")
    con.close()


@pytest.mark.parametrize("pulled, state", [
    ("2026-06-02T00:59:59Z", "awaiting_bill"),  # the last hour may not have arrived yet
    ("2026-06-02T01:00:00Z", "provisional"),  # day end + bill_arrival_minutes (60)
    (None, "settled"),  # a response saved without a pull time: the bill as it was saved
])
def test_a_day_is_billed_once_a_pull_after_its_end_and_the_arrival_lag_holds_it(
        tmp_path, pulled, state):
    d = tmp_path / "in"
    d.mkdir()
    (d / "recon.toml").write_text('[rates.pod_per_hour]\np1 = "1.00"\n')
    doc = envelope([rec(10, 1.0)], pulled)
    if pulled is None:
        del doc["x_recon"]
    (d / "pull.json").write_text(json.dumps(doc))
    run(d, tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    assert con.execute("select state, amount from marts.settlement").fetchall() == [
        (state, Decimal("1"))]
