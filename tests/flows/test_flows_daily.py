"""The daily flow through a Prefect test API: marts built, artifacts equal to the marts.

Two flow runs in all (daily for DAY, then a backfill over DAY..DAY2), shared via fixtures.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest

from tests.flows.duck import q

CENT = Decimal("0.01")


def money(v) -> Decimal:
    return Decimal(v or 0).quantize(CENT)


def md_value(markdown: str, label: str) -> Decimal:
    m = re.search(rf"^\| {re.escape(label)} \| (-?[0-9]+\.[0-9]{{2}}) \|$", markdown, re.MULTILINE)
    assert m, f"no row {label!r} in the summary artifact:\n{markdown}"
    return Decimal(m.group(1))


def test_daily_flow_builds_the_days_marts(daily_run):
    assert daily_run["state"].is_completed(), daily_run["state"]
    db, day = daily_run["db"], daily_run["day"]
    for mart in ("resource_day", "billed_segments", "findings"):
        n = q(db, f"select count(*) from marts.{mart} where day = ?", [day])[0][0]
        assert n > 0, f"marts.{mart} has no row for {day}"
    # the run is scoped to the day it was given
    assert q(db, "select distinct day from marts.resource_day") == [(day,)]


def test_summary_artifact_equals_the_marts(daily_run, artifacts_of):
    db, day = daily_run["db"], daily_run["day"]
    arts = artifacts_of(daily_run["flow_run_id"])
    md = arts["recon-daily-summary"].data
    assert arts["recon-daily-summary"].type == "markdown"
    assert str(day) in md
    # independent of recon.pipeline.summarise: straight from the marts
    billed, busy, tail, lingering, sl_idle = q(db, """
        select sum(amount),
               sum(amount) filter (where category = 'busy'),
               sum(amount) filter (where category = 'tail'),
               sum(amount) filter (where category = 'storage_lingering'),
               sum(amount) filter (where category = 'idle')
        from marts.billed_segments where day = ?""", [day])[0]
    n_findings, at_stake = q(db, "select count(*), sum(amount_at_stake) from marts.findings "
                                 "where day = ?", [day])[0]
    assert md_value(md, "Billed") == money(billed) > 0
    assert md_value(md, "Busy") == money(busy)
    assert md_value(md, "Tail (billed after exit)") == money(tail)
    assert md_value(md, "Lingering storage") == money(lingering)
    assert md_value(md, "Serverless idle") == money(sl_idle)
    assert md_value(md, f"At stake ({n_findings} findings)") == money(at_stake)
    outside = q(db, "select coalesce(sum(amount_at_stake), 0) from marts.findings where day = ? "
                    "and code in ('SAVINGS_PLAN_UNUSED', 'ACTIVITY_WITHOUT_BILLING', "
                    "'BALANCE_BELOW_ONE_HOUR', 'GPU_SHARED_OVERSUBSCRIBED')", [day])[0][0]
    assert md_value(md, "of it outside the day's bill (savings-plan upfront, unbilled work, "
                        "balance shortfall, shared-GPU overcharge)") == money(outside)
    # every category has its row: the rows under Billed add up to it (each rounded to the cent)
    by_cat = dict(q(db, "select category, sum(amount) from marts.billed_segments where day = ? "
                        "group by 1", [day]))
    assert md_value(md, "Serverless execution") == money(by_cat.get("execution"))
    assert md_value(md, "Storage, compute running") == money(by_cat.get("storage_running"))
    assert md_value(md, "Serverless rounding") == money(by_cat.get("rounding"))
    # nodes waiting between jobs and compute no workload explains: a row each, holding together
    # what one merged row held
    assert "Idle gap + unobserved" not in md
    gap, unobserved = (md_value(md, "Idle: node up, no task running"),
                       md_value(md, "Unobserved: billed, no workload seen"))
    assert gap == money(by_cat.get("idle_gap")) > 0
    assert unobserved == money(by_cat.get("unobserved")) > 0
    assert abs(gap + unobserved - money(by_cat["idle_gap"] + by_cat["unobserved"])) <= CENT
    rows = ["Busy", "Serverless execution", "Startup / cold start", "Tail (billed after exit)",
            "Serverless idle", "Serverless rounding", "Idle: node up, no task running",
            "Unobserved: billed, no workload seen",
            "Storage, compute running", "Lingering storage", "Network volume"]
    assert abs(sum(md_value(md, r) for r in rows) - money(billed)) <= CENT / 2 * len(rows)
    # top findings: most money first, the first one is the day's largest
    top = md.split("## Top", 1)[1]
    amounts = [Decimal(a) for a in re.findall(r"^\| \d+ \| [A-Z_]+ \| .*? \| (-?[0-9.]+) \| ",
                                              top, re.MULTILINE)]
    assert amounts == sorted(amounts, reverse=True) and len(amounts) == min(10, n_findings)
    largest = q(db, "select max(amount_at_stake) from marts.findings where day = ?", [day])[0][0]
    assert amounts[0] == money(largest)
    # the data-quality gate ran before publishing
    assert re.search(r"^Validation `2026-06-01/[0-9a-f-]+`: (\d+) of \1 expectations held",
                     md, re.MULTILINE)
    # the flow's return value carries the same summary
    assert Decimal(daily_run["state"].result()["billed"]) == money(billed)


def test_daily_flow_writes_the_days_finance_csvs(daily_run, tmp_path):
    """The flow writes the day's costs and findings CSVs once its gate passed (as the README
    says it does): the same bytes as `recon export --day`, and the costs tie to the day's
    bill."""
    import csv

    from typer.testing import CliRunner

    from recon.cli import app

    db, day, exports = daily_run["db"], daily_run["day"], daily_run["exports"]
    names = sorted(p.name for p in exports.iterdir())
    assert names == [f"costs_{day}.csv", f"findings_{day}.csv"]
    r = CliRunner().invoke(app, ["export", "--day", str(day), "--out", str(tmp_path), "--db",
                                 str(db)])
    assert r.exit_code == 0, r.output
    for n in names:
        assert (exports / n).read_bytes() == (tmp_path / n).read_bytes(), n
    with open(exports / f"costs_{day}.csv", newline="") as f:
        total = sum(Decimal(row["billed_amount"]) for row in csv.DictReader(f))
    billed = q(db, "select sum(billed_amount) from marts.resource_day where day = ?", [day])[0][0]
    assert total == billed > 0
    with open(exports / f"findings_{day}.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == q(
            db, "select count(*) from marts.findings where day = ?", [day])[0][0]


def test_daily_flow_publishes_the_days_marts_as_parquet(daily_run):
    """With marts_dir the flow writes the day's marts as Hive-partitioned Parquet after its gate:
    what `recon publish` writes, read back equal to the warehouse's rows."""
    import duckdb

    db, day, lake = daily_run["db"], daily_run["day"], daily_run["lake"]
    part = lake / "marts" / "resource_day" / f"day={day}" / "part-0.parquet"
    assert part.is_file() and (lake / "marts" / "_manifest.json").is_file()
    want = q(db, "select resource_id, billed_seconds, billed_amount from marts.resource_day "
                 "where day = ? order by all", [day])
    got = duckdb.connect().execute(
        "select resource_id, billed_seconds, billed_amount from read_parquet(?) order by all",
        [str(part)]).fetchall()
    assert got == want and len(want) > 0


def test_findings_table_artifact_has_every_finding(daily_run, artifacts_of):
    db, day = daily_run["db"], daily_run["day"]
    art = artifacts_of(daily_run["flow_run_id"])["recon-daily-findings"]
    assert art.type == "table"
    rows = json.loads(art.data)
    ids = q(db, "select finding_id from marts.findings where day = ?", [day])
    assert len(rows) == len(ids)
    assert {r["finding_id"] for r in rows} == {i[0] for i in ids}
    assert {r["day"] for r in rows} == {str(day)}
    # amounts and seconds in plain digits, as the marts hold them (str() of a Decimal gave 0E-12)
    want = dict(q(db, "select finding_id, amount_at_stake from marts.findings where day = ?", [day]))
    assert all(Decimal(r["amount_at_stake"]) == want[r["finding_id"]] for r in rows)
    assert not any("E" in r["amount_at_stake"] or "E" in r["seconds"] for r in rows), rows
    from flows.daily_reconciliation import _cell
    assert [_cell(Decimal(v)) for v in ("0E-12", "3.6E-11")] == ["0.000000000000", "0.000000000036"]


@pytest.fixture(scope="session")
def backfill_run(daily_run):
    """Backfill DAY..DAY2 on the daily run's warehouse: DAY is already there."""
    from flows.backfill import backfill

    exports = daily_run["db"].parent / "exports-backfill"
    state = backfill(start=str(daily_run["day"]), end=str(daily_run["day2"]),
                     landing_dir=str(daily_run["landing"]), db=str(daily_run["db"]),
                     validation=False, exports_dir=str(exports),
                     return_state=True)  # the gate costs ~10 s (GX)
    return {**daily_run, "state": state, "flow_run_id": state.state_details.flow_run_id,
            "exports": exports}


def test_backfill_skips_built_days_and_builds_the_rest(backfill_run, artifacts_of):
    run = backfill_run
    assert run["state"].is_completed(), run["state"]
    # DAY was published by the daily flow (its gate passed): skipped; DAY2 one batch of one day
    assert run["state"].result() == {"built": [str(run["day2"])], "skipped": [str(run["day"])],
                                     "batches": [[str(run["day2"])] * 2], "awaiting": []}
    assert q(run["db"], "select count(*) from marts.resource_day where day = ?",
             [run["day2"]])[0][0] > 0
    md = artifacts_of(run["flow_run_id"])["recon-daily-summary"].data
    assert str(run["day2"]) in md
    # the finance CSVs of the day it built, none of the day it skipped
    assert sorted(p.name for p in run["exports"].iterdir()) == [
        f"costs_{run['day2']}.csv", f"findings_{run['day2']}.csv"]


def test_backfill_keeps_the_days_built_before(backfill_run):
    days = q(backfill_run["db"], "select distinct day from marts.resource_day order by day")
    assert days == [(backfill_run["day"],), (backfill_run["day2"],)]
