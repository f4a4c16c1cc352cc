"""A simulated fleet whose second day's bill lands late (`simulate(late_bill=...)`): the day is
`awaiting_bill` while the export is missing, and once it lands the marts are the ground truth's,
exactly as if it had never been late."""

import json
import shutil
from datetime import date

import duckdb

from recon.pipeline import run
from recon.simulate import simulate

DAY1, LATE = date(2026, 6, 1), date(2026, 6, 2)


def test_a_late_bill_holds_its_day_then_reconciles_to_the_ground_truth(tmp_path):
    inp, late, db = tmp_path / "in", tmp_path / "late", tmp_path / "r.duckdb"
    simulate(inp, seed=7, days=2, nodes=4, endpoints=2, late_bill=LATE, late_out=late)
    truth = json.loads((inp / "expected" / "ground_truth.json").read_text())
    assert truth["awaiting_bill_days"] == [str(LATE)]
    late_days = {r["resource_id"] for r in truth["resource_days"] if r["day"] == str(LATE)}
    assert len(late_days) > 5

    run(inp, db)
    con = duckdb.connect(str(db), read_only=True)
    states = dict(con.execute("select day, list(distinct state) from marts.settlement "
                              "group by day").fetchall())
    assert states[LATE] == ["awaiting_bill"]  # every resource of the day, not some
    assert "awaiting_bill" not in states[DAY1]
    assert con.execute("select count(*) from marts.resource_day where day = ? and "
                       "billed_amount <> 0", [LATE]).fetchone()[0] == 0  # no line of the day
    # the missing export is not the provider failing to bill each pod that worked
    assert con.execute("select count(*) from marts.findings where day = ? and code = "
                       "'ACTIVITY_WITHOUT_BILLING'", [LATE]).fetchone()[0] == 0
    con.close()

    shutil.copytree(late, inp / "arrived")  # the export lands; the same warehouse runs again
    run(inp, db)
    con = duckdb.connect(str(db), read_only=True)
    con.execute("set TimeZone = 'UTC'")
    assert con.execute("select count(*) from marts.settlement where state = 'awaiting_bill'"
                       ).fetchone()[0] == 0
    got = {(r, str(d)): s for r, d, s in con.execute(
        "select resource_id, day, billed_seconds from marts.resource_day").fetchall()}
    want = {(r["resource_id"], r["day"]): r["billed_seconds"] for r in truth["resource_days"]}
    assert set(got) == set(want)
    assert all(got[k] == (None if v is None else type(got[k])(str(v))) for k, v in want.items())
    findings = sorted((c, r, str(d)) for c, r, d in con.execute(
        "select code, resource_id, day from marts.findings").fetchall())
    assert findings == sorted((f["code"], f["resource_id"], f["day"]) for f in truth["findings"])
    con.close()
