"""A savings plan in the FOCUS export: its purchase, the amortised upfront on the usage it
covered, and the unused rest, worked out by hand.

The rules come from FOCUS 1.2 (attributes/discount_handling.md and the columns it names):
* "ChargeCategory MUST be set to "Purchase" on rows that represent a purchase of a commitment
  discount", and "EffectiveCost MUST be 0 when ChargeCategory is "Purchase" and the purchase is
  intended to cover future eligible charges" (columns/effectivecost.md);
* "Purchased discounts (e.g., commitment discounts) MUST be amortized" and "The EffectiveCost
  MUST include the portion of the amortized purchase cost that applies to this row";
* "CommitmentDiscountStatus MUST be "Used" for ChargeCategory "Usage" rows that received a
  reduced price from a commitment";
* "If a commitment is not fully utilized, the provider MUST include a row that represents the
  unused portion ... with CommitmentDiscountStatus set to "Unused" and ChargeCategory set to
  "Usage"", whose "CommitmentDiscountId and ResourceId [are] set to the ID assigned to the
  commitment discount";
* ChargeFrequency "MUST NOT be "Usage-Based" when ChargeCategory is "Purchase"".
Runpod's side (docs.runpod.io/pods/pricing): "You commit to a usage term (3 months or 6 months)
by making an upfront payment. During this term, you'll be charged a considerably lower hourly
rate for your Pod." The plan's hourly rate is what the bill charges (BilledCost), the upfront
is the purchase.
"""

import csv
from datetime import date
from decimal import Decimal

from engine.build import World, t

from recon.db import connect
from recon.outputs import focus
from recon.outputs.focus_commitments import apportion, daily_shares

# 1 × L40S for 2026-06-01 → 2026-09-01 (92 days) at $0.60/GPU-hour, paid up front:
# 92 × 24 × 0.60 = $1,324.80, i.e. $14.40 a day
PLAN = ('[[savings_plans]]\nid = "sp-l40"\ngpu_type = "L40S"\ngpu_count = 1\n'
        'usd_per_gpu_hour = "0.60"\nstart = "2026-06-01"\nend = "2026-09-01"\n'
        'upfront_usd = "1324.80"\n')


def export(tmp_path, plan=PLAN):
    w = World(tmp_path / "w")
    w.node("n1", "pod1", t("10:00"), t("10:02"))
    w.pod("job-a", "n1", t("10:03"), t("10:05"), t("11:00"))
    w.compute("pod1", t("10:00"), t("11:00"), Decimal("0.60"))  # one hour at the plan's rate
    w.config.append(plan)
    w.findings()
    con = connect(tmp_path / "w" / "db.duckdb", read_only=True)
    try:
        focus.export_month(con, "2026-06", tmp_path / "out")
    finally:
        con.close()
    with open(tmp_path / "out" / "focus_2026-06.csv", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_purchase_used_and_unused_rows_by_hand(tmp_path):
    rows = export(tmp_path)
    purchase = [r for r in rows if r["ChargeCategory"] == "Purchase"]
    assert len(purchase) == 1
    p = purchase[0]
    assert (p["ChargeFrequency"], p["ResourceId"], p["CommitmentDiscountId"]) == (
        "One-Time", "plan:sp-l40", "plan:sp-l40")
    assert (p["ChargePeriodStart"], p["ChargePeriodEnd"]) == ("2026-06-01T00:00:00Z",
                                                              "2026-06-02T00:00:00Z")
    assert Decimal(p["BilledCost"]) == Decimal("1324.80") and Decimal(p["EffectiveCost"]) == 0
    # the term's eligible quantity: 1 GPU × 92 days × 24 h
    assert Decimal(p["CommitmentDiscountQuantity"]) == 2208
    assert (p["CommitmentDiscountUnit"], p["CommitmentDiscountType"], p["CommitmentDiscountCategory"]) == (
        "GPU-Hours", "Savings Plan", "Usage")
    assert p["CommitmentDiscountStatus"] == ""  # a status only on Usage rows

    used = [r for r in rows if r["CommitmentDiscountStatus"] == "Used"]
    assert used and {r["ResourceId"] for r in used} == {"pod1"}
    # the world's inventory gives the pod no name: ResourceName is null, not its id again
    assert {r["ResourceName"] for r in used} == {""}
    assert {r["CommitmentDiscountId"] for r in used} == {"plan:sp-l40"}
    # the hour billed $0.60 at the plan's rate; it used 3600 of the day's 86,400 GPU-seconds,
    # so it carries 14.40 × 3600 / 86400 = $0.60 of the upfront on top
    billed = sum(Decimal(r["BilledCost"]) for r in used)
    effective = sum(Decimal(r["EffectiveCost"]) for r in used)
    assert billed == Decimal("0.60") and effective == Decimal("1.20")
    assert sum(Decimal(r["CommitmentDiscountQuantity"]) for r in used) == 1  # GPU-hours

    unused = [r for r in rows if r["CommitmentDiscountStatus"] == "Unused"]
    assert len(unused) == 1  # one day with data: 2026-06-01
    u = unused[0]
    assert (u["ChargeCategory"], u["ResourceId"], u["ChargePeriodStart"]) == (
        "Usage", "plan:sp-l40", "2026-06-01T00:00:00Z")
    # the rest of the day: 23 GPU-hours, $14.40 − $0.60 = $13.80, billed nothing
    assert Decimal(u["BilledCost"]) == 0 and Decimal(u["EffectiveCost"]) == Decimal("13.80")
    assert Decimal(u["PricingQuantity"]) == 23 == Decimal(u["CommitmentDiscountQuantity"])
    assert u["ConsumedQuantity"] == ""  # nothing was consumed
    # the day's used and unused upfront is exactly its share
    assert effective - billed + Decimal(u["EffectiveCost"]) == Decimal("14.40")
    # every other row has no commitment
    assert all(r["CommitmentDiscountId"] == "" for r in rows
               if r not in used and r not in unused and r is not p)


def test_a_plan_for_another_gpu_is_all_unused_and_bought_before_the_month(tmp_path):
    # bought in May for H100: June has no purchase row, and the pod (an L40S) is not covered
    plan = PLAN.replace('"L40S"', '"H100"').replace("2026-06-01", "2026-05-01").replace(
        "2026-09-01", "2026-08-01")
    rows = export(tmp_path, plan)
    assert not [r for r in rows if r["ChargeCategory"] == "Purchase"]
    assert not [r for r in rows if r["CommitmentDiscountStatus"] == "Used"]
    unused = [r for r in rows if r["CommitmentDiscountStatus"] == "Unused"]
    # 92 days (May 1 → Aug 1), $1,324.80: $14.40 a day, all of it unused on the day with data
    assert [(r["ChargePeriodStart"], Decimal(r["EffectiveCost"])) for r in unused] == [
        ("2026-06-01T00:00:00Z", Decimal("14.40"))]


def test_daily_shares_add_up_to_the_upfront():
    # $100 over 3 days: 33.333333333333 + 33.333333333334 + 33.333333333333, nothing lost
    s = daily_shares(Decimal("100"), date(2026, 6, 1), date(2026, 6, 4))
    assert list(s.values()) == [Decimal("33.333333333333"), Decimal("33.333333333334"),
                                Decimal("33.333333333333")]
    assert sum(s.values()) == 100
    # a 6-month plan: 183 days of $5,000.01 add up to it exactly
    s = daily_shares(Decimal("5000.01"), date(2026, 1, 1), date(2026, 7, 3))
    assert len(s) == 183 and sum(s.values()) == Decimal("5000.01")


def test_apportion_splits_exactly_by_weight():
    assert apportion(Decimal("1"), [Decimal(1)] * 3) == [
        Decimal("0.333333333333"), Decimal("0.333333333334"), Decimal("0.333333333333")]
    assert apportion(Decimal("0.60"), [Decimal(3000), Decimal(600)]) == [Decimal("0.5"), Decimal("0.1")]
    assert apportion(Decimal("5"), []) == []


def test_a_landed_commitment_row_keeps_its_commitment_columns(tmp_path):
    """An AWS Savings Plan row as AWS's FOCUS 1.2 export writes it (the commitment columns of
    FOCUS 1.2 columns/commitmentdiscount*.md) lands and is exported with every commitment column,
    its CommitmentDiscountQuantity split by time like its other quantities: the validator's
    CommitmentDiscountCategory-C-004-C ("MUST NOT be null when CommitmentDiscountId is not null")
    would fail on an export that kept the id and dropped the category."""
    from test_focus import COLS_12, k8s, row, write_csv

    folder = tmp_path / "in"
    folder.mkdir()
    k8s(folder)
    sp = "arn:aws:savingsplans::123456789012:savingsplan/sp-1"
    extra = {"CommitmentDiscountId": sp, "CommitmentDiscountStatus": "Used",
             "CommitmentDiscountCategory": "Spend", "CommitmentDiscountName": "sp-1",
             "CommitmentDiscountType": "Compute Savings Plan", "CommitmentDiscountQuantity": "4",
             "CommitmentDiscountUnit": "USD", "SkuMeter": "", "SkuPriceDetails": ""}
    r = {**row(10, 60), **extra}
    # 22:00 → 02:00 the next day: a 4-hour row, half of it on each UTC day
    r["ChargePeriodStart"], r["ChargePeriodEnd"] = "2026-06-01T22:00:00Z", "2026-06-02T02:00:00Z"
    r["ServiceCategory"] = "Storage"  # carried through, not reconciled: no lifecycle needed
    write_csv(folder / "focus.csv", [r], cols=COLS_12 + [c for c in extra if c not in COLS_12])
    from recon.pipeline import run

    run(folder, tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    try:
        rows = focus.focus_rows(con, date(2026, 6, 1))
    finally:
        con.close()
    mine = [x for x in rows if x["CommitmentDiscountId"] == sp]
    assert [(x["ChargePeriodStart"].day, x["CommitmentDiscountQuantity"]) for x in mine] == [
        (1, Decimal("2")), (2, Decimal("2"))]
    for x in mine:
        assert (x["CommitmentDiscountStatus"], x["CommitmentDiscountCategory"], x["CommitmentDiscountName"],
                x["CommitmentDiscountType"], x["CommitmentDiscountUnit"]) == (
            "Used", "Spend", "sp-1", "Compute Savings Plan", "USD")
