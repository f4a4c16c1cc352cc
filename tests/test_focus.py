"""FOCUS 1.2/1.3 cost-and-usage files reconcile GPU nodes from any cloud."""

import csv
import json
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq

from recon.db import connect
from recon.pipeline import run

COLS_12 = ["BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "BillingAccountId",
           "BillingAccountName", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd",
           "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargePeriodStart",
           "ChargePeriodEnd", "PricingQuantity", "PricingUnit", "ServiceName", "ServiceCategory",
           "ProviderName", "PublisherName", "InvoiceIssuerName", "ResourceId", "ConsumedQuantity",
           "ConsumedUnit", "ContractedUnitPrice", "CommitmentDiscountId"]
RATE = Decimal("4.10")  # a made-up hourly price for the test


def row(hour: int, minutes: int, *, category="Usage", service="Compute", cost=None, unit="Hours"):
    qty = Decimal(minutes) / 60
    c = cost if cost is not None else (RATE * qty).quantize(Decimal("0.0000001"))
    return {"BilledCost": str(c), "EffectiveCost": str(c), "ListCost": str(c), "ContractedCost": str(c),
            "BillingAccountId": "'123456789012", "BillingAccountName": "ml", "BillingCurrency": "USD",
            "BillingPeriodStart": "2026-06-01T00:00:00Z", "BillingPeriodEnd": "2026-07-01T00:00:00Z",
            "ChargeCategory": category, "ChargeClass": "", "ChargeDescription": "g5.xlarge",
            "ChargePeriodStart": f"2026-06-01T{hour:02d}:00:00Z",
            "ChargePeriodEnd": f"2026-06-01T{hour + 1:02d}:00:00Z",
            "PricingQuantity": str(qty), "PricingUnit": "Hours", "ServiceName": "Amazon EC2",
            "ServiceCategory": service, "ProviderName": "AWS", "PublisherName": "AWS",
            "InvoiceIssuerName": "AWS",
            "ResourceId": "arn:aws:ec2:us-east-1:123456789012:instance/i-0abc123",
            "ConsumedQuantity": str(qty), "ConsumedUnit": unit, "ContractedUnitPrice": str(RATE),
            "CommitmentDiscountId": ""}


def k8s(folder):
    def pod(rv, **status):
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "train", "namespace": "ml", "uid": "p1", "resourceVersion": rv,
                             "creationTimestamp": "2026-06-01T10:00:00Z"},
                "spec": {"nodeName": "ip-10-0-1-5",
                         "containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
                "status": status}
    done = {"conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-06-01T10:00:00Z"},
                           {"type": "Ready", "status": "True", "lastTransitionTime": "2026-06-01T10:10:00Z"}],
            "containerStatuses": [{"name": "w", "restartCount": 0, "state": {"terminated": {
                "reason": "Completed", "exitCode": 0, "startedAt": "2026-06-01T10:02:00Z",
                "finishedAt": "2026-06-01T11:00:00Z"}}}]}
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "ip-10-0-1-5", "uid": "n1", "resourceVersion": "5",
                         "creationTimestamp": "2026-06-01T09:58:00Z"},
            "spec": {"providerID": "aws:///us-east-1a/i-0abc123"},
            "status": {"conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": "2026-06-01T09:59:00Z"}]}}
    (folder / "k8s.jsonl").write_text("\n".join(json.dumps(x) for x in [
        {"type": "ADDED", "object": node}, {"type": "ADDED", "object": pod("1")},
        {"type": "MODIFIED", "object": pod("2", **done)}]) + "\n")


def write_csv(path, rows, cols=COLS_12):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def test_focus_csv_gpu_node_reconciles(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    k8s(folder)
    # node up 10:00 → 13:30: compute billed 3.5 h; task finished 11:00 → 2.5 h tail
    rows = [row(10, 60), row(11, 60), row(12, 60), row(13, 30),
            row(10, 60, service="Storage", cost=Decimal("0.01"), unit="GB-Hours"),
            row(0, 60, category="Purchase", cost=Decimal("100"))]
    rows[-1]["ResourceId"] = ""
    bad = row(14, 10)
    bad["BilledCost"] = "twelve"
    write_csv(folder / "focus.csv", [*rows, bad])
    res = run(folder, tmp_path / "db.duckdb")
    assert res.quarantined == 1
    con = connect(tmp_path / "db.duckdb", read_only=True)
    assert con.execute("select locator, reason from raw.quarantine").fetchall() == [
        ("line 8", "BilledCost is not a number: 'twelve'")]
    d = con.execute("""select resource_id, billed_seconds, billed_after_exit_seconds, billed_amount,
                              compute_stopped_at::varchar from marts.resource_day""").fetchall()
    # the instance's compute only: its GB-Hours of storage are another charge (below)
    assert d == [("i-0abc123", Decimal("12600.000"), Decimal("9000.000"),
                  (RATE * Decimal("3.5")).quantize(Decimal("0.000000000001")),
                  "2026-06-01 13:30:00+00")]
    other = con.execute("select service_category, charge_category, resource_id, billed_cost "
                        "from marts.focus_charges where not reconciled order by all").fetchall()
    assert other == [("Compute", "Purchase", None, Decimal("100")),
                     ("Storage", "Usage", "i-0abc123", Decimal("0.01"))]
    seg = dict(con.execute("select category, seconds from marts.billed_segments "
                           "where resource_id = 'i-0abc123'").fetchall())
    assert seg["busy"] == Decimal("3000.000") and seg["startup"] == Decimal("600.000")
    assert seg["tail"] == Decimal("9000.000")
    found = con.execute("select code, message from marts.findings").fetchall()
    assert [c for c, _ in found] == ["BILLED_AFTER_EXIT"]
    # an EC2 instance from a FOCUS file is named as one, not as a Runpod pod
    assert found[0][1].startswith("Instance i-0abc123 (node ip-10-0-1-5) kept billing compute")


def test_focus_parquet_and_13_columns(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    k8s(folder)
    rows = [row(10, 60), row(11, 20)]
    for r in rows:  # FOCUS 1.3 adds columns; they ride along
        r["ServiceProviderName"] = "AWS"
        r["HostProviderName"] = "AWS"
    pq.write_table(pa.Table.from_pylist(rows), folder / "focus.parquet")
    res = run(folder, tmp_path / "db.duckdb")
    assert res.files[-1].kind == "focus_parquet" or any(f.kind == "focus_parquet" for f in res.files)
    con = connect(tmp_path / "db.duckdb", read_only=True)
    assert con.execute("select billed_seconds from marts.resource_day").fetchall() == [
        (Decimal("4800.000"),)]
    assert con.execute("select count(*) from raw.focus_rows where doc ->> '$.HostProviderName' = 'AWS'"
                       ).fetchone()[0] == 2


def test_learned_rate_from_the_bill_and_rate_mismatch(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    k8s(folder)
    rows = [row(10, 60, cost=Decimal("4.50")), row(11, 30, cost=Decimal("2.25"))]  # 4.50/h billed
    write_csv(folder / "focus.csv", rows)  # while ContractedUnitPrice says 4.10/h
    run(folder, tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    r = con.execute("select sku, charged_rate_source, contracted_rate_per_hour, learned_rate_per_hour, "
                    "compute_seconds from marts.rates").fetchone()
    assert r == (None, "bill_contracted_unit_price", Decimal("4.1"), Decimal("4.5"), Decimal("5400"))
    f = con.execute("select code, amount_at_stake from marts.findings where code = 'RATE_MISMATCH'"
                    ).fetchall()
    assert f == [("RATE_MISMATCH", Decimal("0.6"))]  # 1.5 h × (4.50 − 4.10)


def test_the_gate_passes_a_landing_with_a_focus_file(tmp_path):
    """raw.files' tie-out counts the rows of every raw table: it once left raw.focus_rows out,
    so a FOCUS file's loaded rows looked missing and the daily gate failed on every run."""
    folder = tmp_path / "in"
    folder.mkdir()
    k8s(folder)
    write_csv(folder / "focus.csv", [row(10, 60), row(11, 60)])
    res = run(folder, tmp_path / "db.duckdb", validate=True)
    assert res.validation.success, res.validation.summary()
    tie = [r for r in res.validation.rows if r[1] == "raw.files" and r[3] == "loaded_difference"]
    assert tie and all(r[4] for r in tie)


def test_an_hour_split_between_a_savings_plan_and_on_demand_counts_once(tmp_path):
    """AWS splits one instance-hour into rows when a Savings Plan covers part of it (the covered
    part, then the on-demand rest, same SKU): the rows' seconds add up to the hour (36 + 24 min)."""
    folder = tmp_path / "in"
    folder.mkdir()
    k8s(folder)
    covered, rest = row(10, 36), row(10, 24)
    for r in (covered, rest):
        r["SkuId"] = "JRTCKXETXF"
    covered["BilledCost"] = "0"  # paid by the plan's commitment
    write_csv(folder / "focus.csv", [covered, rest], cols=[*COLS_12, "SkuId"])
    run(folder, tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    try:
        assert con.execute("select billed_seconds from marts.resource_day").fetchall() == [
            (Decimal("3600.000"),)]
    finally:
        con.close()
