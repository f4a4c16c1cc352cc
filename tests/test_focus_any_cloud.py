"""FOCUS 1.2 files as the clouds write them: the shapes of the FinOps Foundation's public
FOCUS-Sample-Data (AWS, Azure and OCI rows) written by hand, each total worked out by hand.

What the sample files do that these rows reproduce: nulls written as the literal `NULL` (and one
`null`), charges whose period is a month or a week, units that are compound or ratio units
(FOCUS_Spec specification/attributes/unit_format.md: "-" joins base units, "/" a numerator and a
denominator), a US date, a commitment purchase and the usage it covers (BilledCost 0,
EffectiveCost > 0), a credit and a tax row.
"""

import csv
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recon.db import connect
from recon.pipeline import run

COLS = ["BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "BillingAccountId",
        "BillingAccountName", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd",
        "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargeFrequency", "ChargePeriodStart",
        "ChargePeriodEnd", "CommitmentDiscountId", "CommitmentDiscountStatus", "ConsumedQuantity",
        "ConsumedUnit", "ContractedUnitPrice", "InvoiceIssuerName", "PricingQuantity", "PricingUnit",
        "ProviderName", "PublisherName", "ResourceId", "ResourceName", "ResourceType",
        "ServiceCategory", "ServiceName", "SkuId"]
APRIL = ("2025-04-01T00:00:00Z", "2025-05-01T00:00:00Z")  # 30 days
EC2 = "arn:aws:ec2:eu-west-1:123456789012:instance/i-0abc123"


def charge(cost, start, end, *, category="Usage", service_category="Compute", service="Amazon EC2",
           unit="Hours", qty="1", resource=EC2, provider="AWS", effective=None, price="NULL",
           commitment="NULL", **extra):
    """One row as the sample writes it: every value text, every null the literal NULL."""
    r = dict.fromkeys(COLS, "NULL")
    r.update({"BilledCost": cost, "EffectiveCost": effective or cost, "ListCost": cost,
              "ContractedCost": "NULL", "BillingAccountId": "123456789012",
              "BillingAccountName": "acme", "BillingCurrency": "USD",
              "BillingPeriodStart": APRIL[0], "BillingPeriodEnd": APRIL[1],
              "ChargeCategory": category, "ChargeDescription": f"{service} {unit}",
              "ChargePeriodStart": start, "ChargePeriodEnd": end, "ConsumedQuantity": qty,
              "ConsumedUnit": unit, "PricingQuantity": qty, "PricingUnit": unit,
              "ContractedUnitPrice": price, "CommitmentDiscountId": commitment,
              "InvoiceIssuerName": provider, "ProviderName": provider, "PublisherName": provider,
              "ResourceId": resource, "ServiceCategory": service_category, "ServiceName": service,
              **extra})
    return r


DAY1 = ("2025-04-01T00:00:00Z", "2025-04-02T00:00:00Z")
ROWS = [
    # 1 h of a g5.xlarge at its contracted 1.006/h, and the next hour a savings plan covered:
    # BilledCost 0, EffectiveCost 0.70 (a commitment's usage: no rate mismatch)
    charge("1.006", "2025-04-01T10:00:00Z", "2025-04-01T11:00:00Z", price="1.006", unit="Hrs"),
    charge("0", "2025-04-01T11:00:00Z", "2025-04-01T12:00:00Z", price="1.006", unit="Hrs",
           effective="0.70", commitment="arn:aws:savingsplans::123456789012:savingsplan/sp-1",
           CommitmentDiscountStatus="Used"),
    # the savings plan's fee for the day: a Purchase on no resource, its quantity written `null`
    charge("2.00", *DAY1, category="Purchase", service="Savings Plans for AWS Compute usage",
           unit="Hours", qty="null", resource="NULL", ChargeFrequency="Recurring"),
    # a month of S3 (30.00 over April's 30 days: 1.00 a day) and of OCI block volume
    charge("30.00", *APRIL, service_category="Storage", service="Amazon S3", unit="GB-Months",
           qty="1300", resource="arn:aws:s3:::acme-models"),
    charge("0.60", *APRIL, service_category="Storage", service="Block Storage", provider="OCI",
           unit="GiB/Second-Months", qty="43200", resource="NULL"),
    # a credit and a tax on the month, on no resource (-2.61 / 30 = -0.087 a day; 3.00 / 30 = 0.10)
    charge("-2.61", *APRIL, category="Credit", unit="NULL", qty="NULL", resource="NULL"),
    charge("3.00", *APRIL, category="Tax", service_category="Other", service="Tax", unit="NULL",
           qty="NULL", resource="NULL"),
    # Compute that is not an instance's time: ratio and compound units
    charge("7.00", "2025-04-01T00:00:00Z", "2025-04-08T00:00:00Z", provider="OCI",
           service="Compute", unit="Units/Hour", qty="168", resource="ocid1.instancepool.oc1..aaa"),
    charge("0.0166667", *DAY1, service="AWS Lambda", unit="Lambda-GB-Seconds", qty="1000",
           resource="arn:aws:lambda:eu-west-1:123456789012:function:embed"),
    charge("1.92", *DAY1, provider="Microsoft", service="Container Instances", unit="vCPU-Hours",
           qty="48", resource="/subscriptions/s1/resourceGroups/rg/providers/"
                              "Microsoft.ContainerInstance/containerGroups/cg1"),
    charge("0.48", *DAY1, service="Azure Databricks", provider="Microsoft", unit="Core-Seconds",
           qty="86400", resource="/subscriptions/s1/resourceGroups/rg/providers/"
                                 "Microsoft.Databricks/workspaces/ws1"),
    charge("0.192", *DAY1, service_category="Networking", service="Elastic Load Balancing",
           unit="LCU-Hours", qty="24", resource="arn:aws:elasticloadbalancing:eu-west-1:"
                                                "123456789012:loadbalancer/app/web/50dc6c"),
    charge("0.0312", *DAY1, service_category="Databases", service="Amazon DynamoDB",
           unit="WriteCapacityUnit-Hours", qty="48", resource="arn:aws:dynamodb:eu-west-1:"
                                                           "123456789012:table/jobs"),
    # a US date: no year 4, no vanishing row; the row is quarantined with its reason
    charge("5.00", "4/1/25", "4/2/25", service_category="Storage", service="Amazon S3",
           unit="GB-Months", qty="1", resource="arn:aws:s3:::acme-logs"),
]
TOTAL = (Decimal("1.006") + 0 + Decimal("2.00") + Decimal("30.00") + Decimal("0.60")
         - Decimal("2.61") + Decimal("3.00") + Decimal("7.00") + Decimal("0.0166667")
         + Decimal("1.92") + Decimal("0.48") + Decimal("0.192") + Decimal("0.0312"))  # 43.6358667


def write(path, rows, cols=COLS):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)


def land(tmp_path, rows, validate=False):
    folder = tmp_path / "in"
    folder.mkdir()
    write(folder / "focus.csv", rows)
    res = run(folder, tmp_path / "db.duckdb", validate=validate)
    return res, connect(tmp_path / "db.duckdb", read_only=True)


def test_sample_shapes_land_with_their_totals(tmp_path):
    res, con = land(tmp_path, ROWS, validate=True)
    # the gate passes: its one failure is the warning that a row was quarantined
    failed = [(r[1], r[2]) for r in res.validation.rows if not r[4]]
    assert res.validation.success and len(failed) == 1 and failed[0][0] == "raw.quarantine", failed
    # 1, 4: the literal NULLs are nulls (no "ContractedCost is not a number: 'NULL'"); only the
    # US date is quarantined, with its reason (line 15: the header is line 1)
    assert con.execute("select locator, reason from raw.quarantine").fetchall() == [
        ("line 15", "ChargePeriodStart is not a FOCUS date/time (ISO 8601 in UTC, "
                    "YYYY-MM-DDTHH:mm:ssZ): '4/1/25'")]
    assert res.quarantined == 1
    # the warehouse holds the file's BilledCost, to the last decimal
    assert con.execute("select sum(billed_cost) from marts.focus_charges").fetchone()[0] == TOTAL
    # no resource is named "NULL"
    assert con.execute("select count(*) from marts.focus_charges where resource_id = 'NULL' "
                       "or focus_resource_id = 'NULL'").fetchone()[0] == 0
    # 2: the month-long rows are on each of April's 30 days, 1/30 each; 15 April holds
    # S3 1.00 + OCI volume 0.02 + credit -0.087 + tax 0.10 = 1.033
    days = dict(con.execute("select day::varchar, sum(billed_cost) from marts.focus_charges "
                            "group by day").fetchall())
    assert len(days) == 30 and days["2025-04-15"] == Decimal("1.033")
    # 1 April: the instance 1.006, the purchase 2.00, the Lambda, ACI, Databricks, ELB and
    # DynamoDB days, 1/7 of the OCI week (1.00) and 1/30 of the month rows (1.033)
    assert days["2025-04-01"] == (Decimal("1.006") + Decimal("2.00") + Decimal("0.0166667")
                                  + Decimal("1.92") + Decimal("0.48") + Decimal("0.192")
                                  + Decimal("0.0312") + Decimal("1.00") + Decimal("1.033"))
    assert sum(days.values()) == TOTAL
    # the run summary carries them: 15 April has no lifecycle money, only the 1.033 (shown 1.03)
    summary = {str(d["day"]): d for d in res.days}
    assert (summary["2025-04-15"]["billed"], summary["2025-04-15"]["other_charges"],
            summary["2025-04-15"]["bill_total"]) == (Decimal("0.00"), Decimal("1.03"), Decimal("1.03"))
    # each piece of a row adds up to the row: the credit's 30 pieces are -0.087 each
    assert con.execute("select count(*), sum(billed_cost), min(billed_cost), max(billed_cost) "
                       "from marts.focus_charges where charge_category = 'Credit'").fetchone() == (
        30, Decimal("-2.61"), Decimal("-0.087"), Decimal("-0.087"))
    # 5, 3: only the instance's hours take part in the lifecycle: 2 h = 7,200 billed seconds,
    # 1.006 billed (the covered hour bills 0). Units/Hour, LCU-Hours, vCPU-Hours,
    # Lambda-GB-Seconds, GiB/Second-Months, Core-Seconds and WriteCapacityUnit-Hours add none.
    assert con.execute("select resource_id, day::varchar, billed_seconds, billed_amount, "
                       "lingering_storage_seconds from marts.resource_day").fetchall() == [
        ("i-0abc123", "2025-04-01", Decimal("7200.000"), Decimal("1.006"), Decimal("0.000"))]
    assert con.execute("select count(*) from marts.focus_charges where reconciled").fetchone()[0] == 2
    # no lifecycle was landed, so the instance's 2 h are billed without activity; storage,
    # networking, credits and taxes raise nothing, and the covered hour is no rate mismatch
    assert con.execute("select distinct code, resource_id from marts.findings").fetchall() == [
        ("BILLED_WITHOUT_ACTIVITY", "i-0abc123")]


cost = st.decimals(min_value=Decimal("-50"), max_value=Decimal("500"), places=6)
period = st.tuples(st.integers(0, 29 * 24), st.integers(1, 20 * 24))  # hours from 1 April, length
kind = st.sampled_from([("Usage", "Compute", "Hours"), ("Usage", "Storage", "GB-Months"),
                        ("Usage", "Compute", "vCPU-Hours"), ("Credit", "Compute", "NULL"),
                        ("Tax", "Other", "NULL"), ("Purchase", "Compute", "Hours")])
resource = st.sampled_from([EC2, "NULL", "arn:aws:s3:::b1", "/subscriptions/s/vm/virtualMachines/v1"])


def _ts(hours):
    from datetime import UTC, datetime, timedelta
    return (datetime(2025, 4, 1, tzinfo=UTC) + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(cost, period, kind, resource), min_size=1, max_size=12))
def test_the_warehouse_holds_the_files_billed_cost(tmp_path_factory, rows):
    """For any FOCUS file: the marts hold its BilledCost exactly, and the lifecycle's share
    (marts.resource_day) plus the other charges is that total."""
    tmp = tmp_path_factory.mktemp("focus")
    written = [charge(str(c), _ts(h), _ts(min(h + n, 30 * 24)), category=cat, service_category=sc,
                      unit=u, qty="2" if u != "NULL" else "NULL", resource=r)
               for c, (h, n), (cat, sc, u), r in rows]
    _, con = land(tmp, written)
    total = sum((c for c, *_ in rows), Decimal(0))
    assert con.execute("select coalesce(sum(billed_cost), 0) from marts.focus_charges").fetchone()[0] == total
    lifecycle = con.execute("select coalesce(sum(billed_amount), 0) from marts.resource_day").fetchone()[0]
    other = con.execute("select coalesce(sum(billed_cost), 0) from marts.focus_charges "
                        "where not reconciled").fetchone()[0]
    assert lifecycle + other == total


def _marts(con) -> dict:
    tables = [r[0] for r in con.execute(
        "select table_name from information_schema.tables where table_schema = 'marts' "
        "order by 1").fetchall()]
    return {t: con.execute(f"select * from marts.{t} order by all").fetchall() for t in tables}


def test_import_export_import_gives_the_same_marts(tmp_path):
    """The export keeps each landed row's source (provider, account, service, SKU, resource id,
    units, quantities, costs), one row per charge and day, so landing it again rebuilds every
    mart row for row."""
    from recon.outputs.focus import export_month

    _, con = land(tmp_path, ROWS)
    first = _marts(con)
    out = tmp_path / "out"
    export_month(con, "2025-04", out)
    con.close()
    with open(out / "focus_2025-04.csv", newline="", encoding="utf-8") as f:
        exported = list(csv.DictReader(f))
    # 2 instance hours + 30 days of S3, the OCI volume, the credit and the tax + 7 OCI days +
    # the purchase, Lambda, ACI, Databricks, ELB and DynamoDB of 1 April = 2 + 120 + 7 + 6
    assert len(exported) == 135
    ec2 = [r for r in exported if r["ResourceId"] == EC2]
    assert {(r["ProviderName"], r["ServiceName"], r["BillingAccountId"], r["x_ResourceKind"],
             r["x_BilledSeconds"]) for r in ec2} == {
        ("AWS", "Amazon EC2", "123456789012", "instance", "7200.000")}
    assert {r["ProviderName"] for r in exported} == {"AWS", "OCI", "Microsoft"}
    assert sum(Decimal(r["BilledCost"]) for r in exported) == TOTAL
    again = tmp_path / "again"
    again.mkdir()
    (again / "focus.csv").write_bytes((out / "focus_2025-04.csv").read_bytes())
    run(again, tmp_path / "again.duckdb")
    con2 = connect(tmp_path / "again.duckdb", read_only=True)
    second = _marts(con2)
    assert first.keys() == second.keys()
    for table in first:
        assert first[table] == second[table], table
    costs, cents, rows = {}, {}, {}
    for day in ("2025-04-01", "2025-04-15"):
        with open(out / f"costs_{day}.csv", newline="", encoding="utf-8") as f:
            rows[day] = list(csv.DictReader(f))
        costs[day] = sum(Decimal(r["billed_amount"]) for r in rows[day])
        cents[day] = sum(Decimal(r["billed_amount_cents"]) for r in rows[day])
    # the cent rows add up to the day's bill rounded to cents (largest remainder), and the
    # carried-through charges name their resource and currency
    assert cents == {"2025-04-01": Decimal("7.68"), "2025-04-15": Decimal("1.03")}
    assert all(r["currency"] == "USD" for r in rows["2025-04-01"])
    # the costs file holds the day's whole bill: 15 April is the month rows' 1.033
    assert costs["2025-04-15"] == Decimal("1.033")
    # 1 April: 1.006 + 2.00 + 0.0166667 + 1.92 + 0.48 + 0.192 + 0.0312 + 1.00 + 1.033
    assert costs["2025-04-01"] == Decimal("7.6788667")


def _cloud_node(name, provider_id, uid):
    """A GPU node and one pod on it, as the API server writes them: node Ready at 09:59, the
    pod scheduled 10:00, Ready 10:10, its container finished 11:00 (Completed)."""
    import json

    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"train-{uid}", "namespace": "ml", "uid": f"p-{uid}",
                        "resourceVersion": "2", "creationTimestamp": "2025-04-02T10:00:00Z"},
           "spec": {"nodeName": name,
                    "containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
           "status": {"conditions": [
               {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2025-04-02T10:00:00Z"},
               {"type": "Ready", "status": "True", "lastTransitionTime": "2025-04-02T10:10:00Z"}],
               "containerStatuses": [{"name": "w", "restartCount": 0, "state": {"terminated": {
                   "reason": "Completed", "exitCode": 0, "startedAt": "2025-04-02T10:02:00Z",
                   "finishedAt": "2025-04-02T11:00:00Z"}}}]}}
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"n-{uid}", "resourceVersion": "5",
                         "creationTimestamp": "2025-04-02T09:58:00Z"},
            "spec": {"providerID": provider_id},
            "status": {"conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": "2025-04-02T09:59:00Z"}]}}
    return [json.dumps({"type": "ADDED", "object": node}), json.dumps({"type": "ADDED", "object": pod})]


def test_cloud_gpu_nodes_map_to_their_focus_resource_ids(tmp_path):
    """A Kubernetes node's spec.providerID (aws:///<zone>/<instance-id>,
    azure:///subscriptions/…/virtualMachines/<name>, gce://<project>/<zone>/<name>) maps to the
    FOCUS ResourceId of its VM by the id's last segment, as a Runpod pod id does; an Azure name
    in either case (Azure names are case-insensitive). Each node is billed 10:00-12:00 in two
    hourly rows; its task finished at 11:00, so each has 3,600 s billed after exit."""
    folder = tmp_path / "in"
    folder.mkdir()
    clouds = [
        ("ip-10-0-1-5", "aws:///eu-west-1a/i-0abc123", EC2, "AWS"),
        ("gpu-vm-1", "azure:///subscriptions/s1/resourceGroups/RG/providers/Microsoft.Compute/"
                     "virtualMachines/GPU-VM-1",
         "/subscriptions/s1/resourcegroups/rg/providers/microsoft.compute/virtualmachines/gpu-vm-1",
         "Microsoft"),
        ("gpu-node-1", "gce://acme-ml/us-central1-a/gpu-node-1",
         "//compute.googleapis.com/projects/acme-ml/zones/us-central1-a/instances/gpu-node-1",
         "Google Cloud"),
    ]
    lines, rows = [], []
    for i, (name, pid, rid, provider) in enumerate(clouds):
        lines += _cloud_node(name, pid, str(i))
        rows += [charge("2.50", f"2025-04-02T{h}:00:00Z", f"2025-04-02T{h + 1}:00:00Z",
                        price="2.50", resource=rid, provider=provider) for h in (10, 11)]
    (folder / "k8s.jsonl").write_text("\n".join(lines) + "\n")
    write(folder / "focus.csv", rows)
    run(folder, tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    assert con.execute("select resource_id, node_name from marts.workload_lifecycle "
                       "order by 1").fetchall() == [
        ("gpu-node-1", "gpu-node-1"), ("gpu-vm-1", "gpu-vm-1"), ("i-0abc123", "ip-10-0-1-5")]
    # 2 h billed each = 7,200 s at 2.50/h = 5.00; 11:00-12:00 after the task: 3,600 s
    assert con.execute("select resource_id, billed_seconds, billed_after_exit_seconds, billed_amount "
                       "from marts.resource_day order by 1").fetchall() == [
        (r, Decimal("7200.000"), Decimal("3600.000"), Decimal("5.00"))
        for r in ("gpu-node-1", "gpu-vm-1", "i-0abc123")]
    assert con.execute("select resource_id, code from marts.findings order by 1").fetchall() == [
        ("gpu-node-1", "BILLED_AFTER_EXIT"), ("gpu-vm-1", "BILLED_AFTER_EXIT"),
        ("i-0abc123", "BILLED_AFTER_EXIT")]


def test_configured_sku_patterns_reconcile_gpu_instances_of_other_services(tmp_path):
    """SageMaker bills its GPU instances under ServiceCategory "AI and Machine Learning": other
    charges by default, instance compute once mapping.focus_compute_sku_patterns names them."""
    rows = [charge("1.515", "2025-04-01T10:00:00Z", "2025-04-01T11:00:00Z",
                   service_category="AI and Machine Learning", service="Amazon SageMaker",
                   unit="Hrs", price="1.515", SkuId="ml.g5.xlarge-Training",
                   resource="arn:aws:sagemaker:eu-west-1:123456789012:training-job/tune-1")]
    _, con = land(tmp_path, rows)
    assert con.execute("select count(*) from marts.resource_day").fetchone()[0] == 0
    con.close()
    folder = tmp_path / "cfg"
    folder.mkdir()
    write(folder / "focus.csv", rows)
    (folder / "recon.toml").write_text('[mapping]\nfocus_compute_sku_patterns = ["^ml\\\\.g5\\\\."]\n')
    run(folder, tmp_path / "cfg.duckdb")
    con = connect(tmp_path / "cfg.duckdb", read_only=True)
    assert con.execute("select resource_id, billed_seconds, billed_amount from marts.resource_day"
                       ).fetchall() == [("tune-1", Decimal("3600.000"), Decimal("1.515"))]


def test_compute_without_a_consumed_quantity_is_timed_by_its_pricing_quantity(tmp_path):
    """ConsumedQuantity and ConsumedUnit are conditional FOCUS columns: a compute row without
    them (both NULL) is timed by PricingQuantity in PricingUnit: 1.5 Hours = 5,400 s."""
    r = charge("3.00", "2025-04-01T10:00:00Z", "2025-04-01T12:00:00Z", price="2.00", qty="1.5")
    r["ConsumedQuantity"] = r["ConsumedUnit"] = "NULL"
    _, con = land(tmp_path, [r])
    assert con.execute("select resource_id, billed_seconds, billed_amount from marts.resource_day"
                       ).fetchall() == [("i-0abc123", Decimal("5400.000"), Decimal("3.00"))]


def test_a_pattern_that_is_no_regular_expression_is_a_config_problem(tmp_path):
    import pytest

    from recon.config import load_config

    cfg = tmp_path / "recon.toml"
    cfg.write_text('[mapping]\nfocus_compute_sku_patterns = ["ml\\\\.g5(", "^p4d"]\n')
    with pytest.raises(ValueError, match=r"focus_compute_sku_patterns: 'ml.+g5\(' is not a "
                                         r"regular expression \(.*missing \)") as e:
        load_config(cfg)
    assert "^p4d" not in str(e.value)  # the valid one is no problem
