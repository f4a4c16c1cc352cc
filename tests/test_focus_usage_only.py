"""FOCUS files of GPU clouds that count usage and bill no cost, e.g. CoreWeave's FOCUS export.

What such a file looks like, from the public sources found (the search tool, December 2026):

* docs.coreweave.com/billing/focus-export-api ("Export usage with the FOCUS API", public
  preview since 2026-09-11): "usage data in ... FOCUS 1.2 format", JSON or CSV, "Usage
  quantities at hourly grain (for example, GPU-hours, GiB-hours, and IP-hours)". It does not
  include "Cost or dollar amounts. This release returns usage quantities only. Cost fields such
  as billed or effective cost are planned for a later release on the same schema", nor
  "Per-resource or per-node rows. Usage is aggregated". "The following FOCUS fields are blank in
  this release: BillingAccountName, ChargeClass, ChargeDescription, RegionName, and
  ResourceType."
* docs.coreweave.com/billing/billing-insights: GPUs and CPUs are metered in "instance-hours",
  storage in "GiB-hours", network in "address-hours".
* A public client of that API (a TypeScript module found by its docstring, "CoreWeave's FOCUS
  Billing Export API (`GET /v1/billing/focus`)"; not CoreWeave's own) reads PricingQuantity,
  PricingUnit (its tests write "Instance-Hour"), PricingCategory, ServiceCategory, ServiceName
  ("GPU Compute"), SkuId ("gd-8xh100ib-i128"), RegionId ("US-EAST-04A", the zone form CoreWeave's
  Terraform/Pulumi docs use too), RegionName, ResourceType and the custom columns x_ClusterId,
  x_ClusterName, x_ProductFamily and x_CapacityPlan; it prices the quantities itself from a
  negotiated or list rate, as this project does from the rate card.
* Lambda's and Crusoe's billing pages (docs.lambda.ai/public-cloud/billing,
  docs.crusoecloud.com/usage-billing/viewing-usage) describe instance-hour usage and CSV exports,
  no FOCUS export. Nebius is named by the FinOps Foundation as delivering FOCUS usage data for its
  AI services; no column list was found.

Not found: the exact CSV header of CoreWeave's export, whether it writes the cost columns empty or
leaves them out, and how a CKS node's spec.providerID is spelt. So the rows below follow the FOCUS
1.2 rules for what is unknown (BilledCost, EffectiveCost, ListCost and ContractedCost are
mandatory columns; a usage-only export leaves them empty, or writes 0) and the documented shape for
the rest (hourly rows, "Instance-Hours", the blank columns, the x_ columns). CoreWeave's preview
has no per-node rows: such aggregated rows (no ResourceId) are other charges, priced by their SKU
and held to no lifecycle. The per-node rows here carry a ResourceId (what the GA release, or
another GPU cloud, writes for an instance), mapped to a Kubernetes node by the last segment of its
spec.providerID (`<ProviderName>://<ProviderSpecificNodeID>`, Kubernetes NodeSpec), as the
AWS/Azure/GCP nodes of tests/test_focus_any_cloud.py are.
"""

import csv
from decimal import Decimal

from recon.db import connect
from recon.pipeline import run
from tests.test_focus_any_cloud import _cloud_node

COLS = ["BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "BillingAccountId",
        "BillingAccountName", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd",
        "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargeFrequency",
        "ChargePeriodStart", "ChargePeriodEnd", "ConsumedQuantity", "ConsumedUnit",
        "PricingCategory", "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName",
        "InvoiceIssuerName", "RegionId", "RegionName", "ResourceId", "ResourceName",
        "ResourceType", "ServiceCategory", "ServiceName", "SkuId", "x_ClusterId",
        "x_ClusterName", "x_ProductFamily", "x_CapacityPlan"]
NODE = "g-h100-1"
SKU = "gd-8xh100ib-i128"


def row(start, end, *, cost="", qty="1", unit="Instance-Hours", resource=NODE, sku=SKU,
        service_category="Compute", service="GPU Compute", family="GPU Compute", **extra):
    """One hourly row as a usage-only export writes it: the blank columns empty."""
    r = dict.fromkeys(COLS, "")
    r.update({"BilledCost": cost, "EffectiveCost": cost, "ListCost": cost, "ContractedCost": cost,
              "BillingAccountId": "org-acme", "BillingCurrency": "USD",
              "BillingPeriodStart": "2025-04-01T00:00:00Z",
              "BillingPeriodEnd": "2025-05-01T00:00:00Z", "ChargeCategory": "Usage",
              "ChargeFrequency": "Usage-Based", "ChargePeriodStart": start,
              "ChargePeriodEnd": end, "ConsumedQuantity": qty, "ConsumedUnit": unit,
              "PricingCategory": "Standard", "PricingQuantity": qty, "PricingUnit": unit,
              "ProviderName": "CoreWeave", "PublisherName": "CoreWeave",
              "InvoiceIssuerName": "CoreWeave", "RegionId": "US-EAST-04A",
              "ResourceId": resource, "ServiceCategory": service_category,
              "ServiceName": service, "SkuId": sku, "x_ClusterId": "c-1",
              "x_ClusterName": "train", "x_ProductFamily": family, **extra})
    return r


ROWS = [
    # the node's two hours: 10:00 with every cost column empty, 11:00 with every cost 0
    row("2025-04-02T10:00:00Z", "2025-04-02T11:00:00Z"),
    row("2025-04-02T11:00:00Z", "2025-04-02T12:00:00Z", cost="0"),
    # the cluster's storage of the hour, aggregated (no ResourceId): 2,000 GiB-Hours
    row("2025-04-02T10:00:00Z", "2025-04-02T11:00:00Z", qty="2000", unit="GiB-Hours",
        resource="", sku="dfs", service_category="Storage", service="Storage",
        family="Storage"),
    # malformed: no cost and no quantity says nothing (line 5: the header is line 1), and a
    # quantity that is no number (line 6)
    row("2025-04-02T12:00:00Z", "2025-04-02T13:00:00Z", qty=""),
    row("2025-04-02T12:00:00Z", "2025-04-02T13:00:00Z", qty="1 hr"),
]


def land(tmp_path, rows, toml=None):
    folder = tmp_path / "in"
    folder.mkdir()
    with open(folder / "coreweave_focus.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLS)
        w.writeheader()
        w.writerows(rows)
    (folder / "k8s.jsonl").write_text(
        "\n".join(_cloud_node(NODE, f"coreweave://US-EAST-04A/{NODE}", "cw")) + "\n")
    if toml:
        (folder / "recon.toml").write_text(toml)
    res = run(folder, tmp_path / "db.duckdb")
    return res, connect(tmp_path / "db.duckdb", read_only=True)


RATES = '[rates]\nsku_per_unit = {"gd-8xh100ib-i128" = 40.00, "dfs" = 0.0001}\n'


def test_usage_only_rows_land_reconcile_and_are_priced_by_the_rate_card(tmp_path):
    res, con = land(tmp_path, ROWS, RATES)
    # the row with neither a cost nor a quantity and the one whose quantity is no number are
    # quarantined, naming the file, the line and what is accepted; the other three land
    assert con.execute("select source_file like '%coreweave_focus.csv', locator, reason "
                       "from raw.quarantine order by locator").fetchall() == [
        (True, "line 5", "no BilledCost and no usage quantity: a FOCUS row needs a BilledCost, "
                         "or (a usage-only export that bills no cost) a ConsumedQuantity or "
                         "PricingQuantity"),
        (True, "line 6", "ConsumedQuantity is not a number: '1 hr'")]
    assert res.quarantined == 2
    # the file's costs stay as written: NULL for the empty row, 0 for the zero row; the rate
    # card's price is apart: 1 Instance-Hour × 40.00 = 40.00 each, 2,000 GiB-Hours × 0.0001 = 0.20
    assert con.execute(
        "select resource_id, charge_period_start::varchar, reconciled, usage_only, billed_cost, "
        "priced_cost, price_source from marts.focus_charges order by all").fetchall() == [
        ("g-h100-1", "2025-04-02 10:00:00+00", True, True, None, Decimal("40.00"), "rate_card_sku"),
        ("g-h100-1", "2025-04-02 11:00:00+00", True, True, Decimal("0"), Decimal("40.00"),
         "rate_card_sku"),
        (None, "2025-04-02 10:00:00+00", False, True, None, Decimal("0.20"), "rate_card_sku")]
    # the node's lifecycle: pod scheduled 10:00, its container finished 11:00; the file counts
    # 2 Instance-Hours = 7,200 s, 11:00-12:00 after the task = 3,600 s. The amount is the rate
    # card's 2 h × 40.00 = 80.00, marked priced (no provider billed it), no rate missing
    assert con.execute("select resource_id, billed_seconds, billed_after_exit_seconds, "
                       "billed_amount, amount_priced, rate_missing from marts.resource_day"
                       ).fetchall() == [
        (NODE, Decimal("7200.000"), Decimal("3600.000"), Decimal("80.00"), True, False)]
    # the rate behind the seconds and the amount is the card's, and nothing is learned from a
    # bill that billed nothing
    assert con.execute("select charged_rate_per_hour, charged_rate_source, contracted_rate_per_hour, "
                       "learned_rate_per_hour from marts.rates").fetchall() == [
        (Decimal("40.00"), "rate_card_sku", Decimal("40.00"), None)]
    assert con.execute("select resource_id, node_name from marts.workload_lifecycle").fetchall() == [
        (NODE, NODE)]
    # of the hour after the task, the bare pod (no ScaledObject or ScaledJob owns it) is allowed
    # keda_cooldown_seconds 300 + scale_down_grace_seconds 60 + tail_tolerance_seconds 60 = 420 s
    # (sql/intermediate/int_resource__tail_model.sql); the other 3,180 s are waste at the card's
    # rate: 3,180 × 40.00 / 3,600 = 35.333333333333. The priced amount is the contracted one, so
    # no RATE_MISMATCH, and nothing is RATE_MISSING
    assert con.execute("select code, resource_id, seconds, amount_at_stake from marts.findings"
                       ).fetchall() == [("BILLED_AFTER_EXIT", NODE, Decimal("3180.000"),
                                         Decimal("35.333333333333"))]
    # the bill's other charges hold no usage-only money: the storage was billed nothing
    assert {str(d["day"]): d["other_charges"] for d in res.days}["2025-04-02"] == Decimal("0")


def test_usage_without_a_rate_is_rate_missing_not_billed_zero(tmp_path):
    """No sku_per_unit or pod_per_hour entry matches: the seconds still reconcile, the amount is
    unknown (0, flagged rate_missing) and RATE_MISSING names the seconds, SKU and file."""
    _, con = land(tmp_path, ROWS[:2])
    assert con.execute("select billed_seconds, billed_amount, amount_priced, rate_missing "
                       "from marts.resource_day").fetchall() == [
        (Decimal("7200.000"), Decimal("0"), False, True)]
    assert con.execute("select priced_cost, price_source from marts.focus_charges").fetchall() == [
        (None, None), (None, None)]
    got = con.execute("select seconds, amount_at_stake, message from marts.findings "
                      "where code = 'RATE_MISSING'").fetchall()
    assert got == [(Decimal("7200.000"), Decimal("0"),
                    "FOCUS file coreweave_focus.csv bills no cost for 7200.000 s of usage-only "
                    "compute of resource g-h100-1 on 2025-04-02 (SKU gd-8xh100ib-i128, BilledCost "
                    "empty or 0), and the rate card has no pod_per_hour entry for g-h100-1 and no "
                    "sku_per_unit entry for its SKU: the amount is unknown, counted as $0.")]


def test_the_resources_own_rate_wins_over_its_skus(tmp_path):
    """pod_per_hour keyed by the resource id (a node's negotiated price) before the SKU's:
    2 h × 36.50 = 73.00, effective-dated like any [[rates.effective]] entry."""
    toml = RATES + ('[[rates.effective]]\nkind = "pod_per_hour"\nkey = "g-h100-1"\nusd = 36.50\n'
                    'from = 2025-04-01\n')
    _, con = land(tmp_path, ROWS[:2], toml)
    assert con.execute("select billed_amount, amount_priced from marts.resource_day").fetchall() == [
        (Decimal("73.00"), True)]
    assert con.execute("select distinct price_source from marts.focus_charges").fetchall() == [
        ("rate_card_pod",)]


def test_the_export_keeps_the_files_nulls(tmp_path):
    """The FOCUS export re-emits a usage-only row as the file wrote it (no BilledCost invented)
    and the export lands again as the same charges."""
    from recon.outputs.focus import export_month

    _, con = land(tmp_path, ROWS[:3], RATES)
    first = con.execute("select * from marts.focus_charges order by all").fetchall()
    out = tmp_path / "out"
    export_month(con, "2025-04", out)
    con.close()
    with open(out / "focus_2025-04.csv", newline="", encoding="utf-8") as f:
        exported = [r for r in csv.DictReader(f) if r["ProviderName"] == "CoreWeave"]
    assert sorted((r["ChargePeriodStart"], r["SkuId"], r["BilledCost"], r["PricingQuantity"])
                  for r in exported) == [
        ("2025-04-02T10:00:00Z", "dfs", "", "2000.000000000000"),
        ("2025-04-02T10:00:00Z", SKU, "", "1.000000000000"),
        ("2025-04-02T11:00:00Z", SKU, "0.000000000000", "1.000000000000")]
    # the costs file: the node's rows hold the rate card's 80.00 (2 h × 40.00), marked priced;
    # the storage row, billed nothing, is no other_charge row (nothing was billed for it)
    with open(out / "costs_2025-04-02.csv", newline="", encoding="utf-8") as f:
        costs = list(csv.DictReader(f))
    assert {(r["resource_id"], r["amount_priced"]) for r in costs} == {(NODE, "true")}
    assert sum(Decimal(r["billed_amount"]) for r in costs) == Decimal("80.00")
    again = tmp_path / "again"
    again.mkdir()
    (again / "focus.csv").write_bytes((out / "focus_2025-04.csv").read_bytes())
    (again / "recon.toml").write_text(RATES)
    run(again, tmp_path / "again.duckdb")
    con2 = connect(tmp_path / "again.duckdb", read_only=True)
    assert con2.execute("select * from marts.focus_charges order by all").fetchall() == first


def test_a_file_that_leaves_the_cost_columns_out_is_read_as_focus(tmp_path):
    """Should an export leave the cost columns out rather than empty (FOCUS requires them; the
    header was not found), its header still reads as FOCUS (ChargePeriodStart/End,
    ChargeCategory, PricingQuantity) and its rows as usage-only: in CSV and in Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = [c for c in COLS if c not in ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost")]
    rows = [{c: r[c] for c in cols} for r in ROWS[:2]]
    folder = tmp_path / "in"
    folder.mkdir()
    with open(folder / "a.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows[:1])
    pq.write_table(pa.Table.from_pylist(rows[1:]), folder / "b.parquet")
    res = run(folder, tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    assert res.quarantined == 0
    # 1 Instance-Hour each, no cost written: both usage-only, unpriced (no rate card)
    assert con.execute("select charge_period_start::varchar, usage_only, billed_cost, "
                       "consumed_quantity from marts.focus_charges order by 1").fetchall() == [
        ("2025-04-02 10:00:00+00", True, None, Decimal("1")),
        ("2025-04-02 11:00:00+00", True, None, Decimal("1"))]
