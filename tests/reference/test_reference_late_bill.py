"""tests/reference/late_bill: a day is not reconciled before its bill has landed. The files are
hand-made in the upstream formats (see the folder's README.md for each one's source); the
expected states and money are worked out by hand below."""

import shutil
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb

from recon.pipeline import run
from recon.published import AWAITING, BILLED, day_states

CASE = Path(__file__).parent / "late_bill"
DAY = date(2026, 6, 1)
POD = "k3vq8m2ztr4w1a"


def _land(landing: Path, part: str) -> dict:
    """Copy one part of the case into the landing area, run, and read the day back."""
    shutil.copytree(CASE / part, landing, dirs_exist_ok=True)
    db = landing.parent / "recon.duckdb"
    run(landing, db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        con.execute("set TimeZone = 'UTC'")
        state, amount = con.execute("select state, amount from marts.settlement "
                                    "where resource_id = ? and day = ?", [POD, DAY]).fetchone()
        billed, seconds = con.execute("select billed_amount, billed_seconds from "
                                      "marts.resource_day where resource_id = ? and day = ?",
                                      [POD, DAY]).fetchone()
        codes = {c for (c,) in con.execute("select code from marts.findings where day = ?",
                                           [DAY]).fetchall()}
        return {"state": state, "amount": amount, "billed": billed, "seconds": seconds,
                "codes": codes, "day": day_states(con, [DAY])[DAY]}
    finally:
        con.close()


def test_the_day_awaits_its_bill_until_a_pull_after_its_end_holds_it(tmp_path):
    landing = tmp_path / "landing"
    # the pod's lifecycle, no bill: 22:00-23:30 at $2.00/h = $3.00 priced from the lifecycle
    got = _land(landing, "watch")
    assert (got["state"], got["day"]) == ("awaiting_bill", AWAITING)
    assert got["amount"] == Decimal("3.00") and got["billed"] == 0
    assert "ACTIVITY_WITHOUT_BILLING" not in got["codes"]  # the bill is late, not missing a line

    # pulled at 00:30: the 22:00 bucket only ($2.00), the 23:00 one may still be on its way
    got = _land(landing, "pull-20260602T003000Z")
    assert (got["state"], got["day"]) == ("awaiting_bill", AWAITING)
    assert got["amount"] == got["billed"] == Decimal("2.00")
    assert "ACTIVITY_WITHOUT_BILLING" not in got["codes"]

    # pulled at 02:30, after 00:00 + 60 min: $2.00 + $1.00; 1.00 / 2.00 × 3600 = 1800 s
    got = _land(landing, "pull-20260602T023000Z")
    assert (got["state"], got["day"]) == ("provisional", BILLED)
    assert got["amount"] == got["billed"] == Decimal("3.00")
    assert got["seconds"] == Decimal("5400")
    assert "ACTIVITY_WITHOUT_BILLING" not in got["codes"]
