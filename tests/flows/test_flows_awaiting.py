"""A day whose provider bill has not landed (a late export) through the daily flow: held, not
published at $0; published by the first daily run after its bill lands, with the bill's money.

One simulated fleet (3 days, the second day's bill late), two daily runs through the session's
Prefect test API: DAY2 while its bill is missing, then DAY3 once it has landed. The gate is off
(Great Expectations costs ~30 s a run here; it passes on the held day: the daily flow's tests
run it).
"""

from __future__ import annotations

import json
import shutil
from datetime import date
from decimal import Decimal

import pytest

from tests.flows.duck import q

DAY, DAY2, DAY3 = date(2026, 6, 1), date(2026, 6, 2), date(2026, 6, 3)


def published(db) -> list:
    """The days recorded as published (none while no day was: no table yet)."""
    if not q(db, "select count(*) from information_schema.tables "
                 "where table_name = 'published_days'")[0][0]:
        return []
    return [r[0] for r in q(db, "select day from meta.published_days order by day")]


@pytest.fixture(scope="session")
def late_runs(harness, tmp_path_factory, artifacts_of):
    from flows.daily_reconciliation import daily_reconciliation
    from recon.simulate import simulate

    root = tmp_path_factory.mktemp("late-bill")
    landing, late, db, exports = (root / "landing", root / "late", root / "recon.duckdb",
                                  root / "exports")
    simulate(landing, seed=7, days=3, nodes=2, endpoints=1, start_day=DAY, late_bill=DAY2,
             late_out=late)
    kw = {"landing_dir": str(landing), "db": str(db), "validation": False,
          "exports_dir": str(exports), "return_state": True}
    first = daily_reconciliation(day=DAY2.isoformat(), **kw)
    before = {"published": published(db), "exports": sorted(p.name for p in exports.iterdir())
              if exports.exists() else [], "arts": artifacts_of(first.state_details.flow_run_id)}
    shutil.copytree(late, landing / "runpod-late-export")  # the export arrives
    second = daily_reconciliation(day=DAY3.isoformat(), **kw)
    return {"first": first, "second": second, "before": before, "db": db, "late": late,
            "exports": exports, "arts2": artifacts_of(second.state_details.flow_run_id)}


def test_a_day_without_its_bill_is_held_not_published(late_runs):
    first, before = late_runs["first"], late_runs["before"]
    assert first.is_completed(), first
    out = first.result()
    assert out["state"] == "awaiting_bill" and out["published"] is False and out["day"] == str(DAY2)
    assert out["billed"] == "0.00" and Decimal(out["estimated"]) > 0
    assert out["resources"] > 0
    assert before["published"] == []  # the backfill will not skip it
    assert before["exports"] == []  # no $0 finance CSV
    arts = before["arts"]
    md = arts["recon-daily-summary"].data
    assert f"Awaiting the provider's bill: {DAY2} is not published." in md
    assert "2026-06-03T01:00:00Z" in md  # the instant a pull must reach (end + 60 min)
    assert "recon-daily-findings" not in arts


def test_the_first_run_after_the_bill_lands_publishes_it_with_the_bills_money(late_runs):
    second, db, exports = late_runs["second"], late_runs["db"], late_runs["exports"]
    assert second.is_completed(), second
    assert second.result()["day"] == str(DAY3)  # the run's own day is its result, last
    assert published(db) == [DAY2, DAY3]
    assert q(db, "select count(*) from marts.settlement where state = 'awaiting_bill'"
                 )[0][0] == 0
    # the day's money is its bill's: the account-level lines of the late export (/v2/billing,
    # every resource family) add up to what the day's resources were billed
    account = json.loads((late_runs["late"] / "runpod" / "billing-account.json").read_text())
    bill = sum(Decimal(str(r["totalAmount"])) for r in account["records"])
    billed = q(db, "select sum(billed_amount) from marts.resource_day where day = ?", [DAY2])[0][0]
    assert bill > 10 and abs(billed - bill) < Decimal("0.000001") * len(account["records"])
    import csv

    with open(exports / f"costs_{DAY2}.csv", newline="") as f:
        assert sum(Decimal(r["billed_amount"]) for r in csv.DictReader(f)) == billed
    md = late_runs["arts2"]["recon-daily-summary"].data
    assert f"reconciliation, {DAY3} (UTC)" in md and "Awaiting" not in md
