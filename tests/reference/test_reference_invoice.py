"""tests/reference/invoice: an invoice tied out against the bill of tests/reference/late_bill.
The invoice files are hand-written in the documented format (docs/reference.md, "Invoice
files"); the tie-out of each is worked out by hand below from the bill's pulls (see the folder's
README.md)."""

import shutil
from decimal import Decimal
from pathlib import Path

import duckdb

from recon.pipeline import run

LATE_BILL = Path(__file__).parent / "late_bill"
CASE = Path(__file__).parent / "invoice"
POD = "k3vq8m2ztr4w1a"


def _run(tmp_path: Path, *invoice_files: str, restated: bool = False) -> duckdb.DuckDBPyConnection:
    """The late_bill case, both pulls landed (and the 04:00 restating pull), with the given
    invoice files; the warehouse."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    landing = tmp_path / "landing"
    for part in ("watch", "pull-20260602T003000Z", "pull-20260602T023000Z"):
        shutil.copytree(LATE_BILL / part, landing, dirs_exist_ok=True)
    if restated:
        shutil.copytree(CASE / "restated", landing, dirs_exist_ok=True)
    (landing / "invoices").mkdir()
    for name in invoice_files:
        shutil.copy(CASE / name, landing / "invoices" / name)
    db = tmp_path / "recon.duckdb"
    run(landing, db)
    con = duckdb.connect(str(db), read_only=True)
    con.execute("set TimeZone = 'UTC'")
    return con


def _tieout(con) -> dict:
    return {r[0]: r[1:] for r in con.execute(
        "select service, invoice_amount, reconciled_amount, difference, late_usage_amount, "
        "unexplained_amount, status, explanation from marts.invoice_tieout order by service").fetchall()}


def _mismatches(con) -> list:
    return con.execute("select resource_id, day, amount_at_stake, message from marts.findings "
                       "where code = 'INVOICE_MISMATCH'").fetchall()


def test_usage_landed_after_the_invoice_was_issued_is_explained_not_flagged(tmp_path):
    con = _run(tmp_path, "late.csv")
    try:
        got = _tieout(con)
        # the invoice, issued 01:00, holds the 22:00 bucket ($2.00, pulled 00:30) but not the
        # 23:00 one ($1.00, first pulled 02:30): 2.00 − (2.00 + 1.00) = −1.00, all of it late
        inv, rec, diff, late, unexplained, status, why = got["pods"]
        assert (inv, rec, diff, late, unexplained) == (
            Decimal("2"), Decimal("3"), Decimal("-1"), Decimal("1"), Decimal("0"))
        assert status == "explained"
        assert "2026-06-02T02:30:00Z" in why and "$1.00 of usage landed after the cut-off" in why
        assert _mismatches(con) == []
    finally:
        con.close()


def test_a_bucket_restated_after_the_invoice_was_issued_is_explained(tmp_path):
    con = _run(tmp_path, "restated.csv", restated=True)
    try:
        got = _tieout(con)
        # issued 03:00: the 22:00 bucket was $2.00 then (pulls 00:30, 02:30), $2.50 at 04:00; the
        # 23:00 bucket's $1.00 was pulled at 02:30, before the issue: 3.00 − 3.50 = −0.50
        inv, rec, diff, late, unexplained, status, why = got["pods"]
        assert (inv, rec, diff, late, unexplained) == (
            Decimal("3"), Decimal("3.5"), Decimal("-0.5"), Decimal("0"), Decimal("0"))
        assert status == "explained" and "1 bucket(s) restated after the invoice was issued: $0.50" in why
        restated_amount = con.execute("select restated_after_issue_amount from "
                                      "marts.invoice_tieout").fetchone()[0]
        assert restated_amount == Decimal("0.5")
        assert _mismatches(con) == []
    finally:
        con.close()


def test_a_planted_dollar_is_an_invoice_mismatch_with_a_dollar_at_stake(tmp_path):
    con = _run(tmp_path, "planted.json")
    try:
        got = _tieout(con)
        # issued 03:00, after both pulls: nothing landed late; 4.00 − 3.00 = 1.00 unexplained
        assert got["pods"][:6] == (Decimal("4"), Decimal("3"), Decimal("1"), Decimal("0"),
                                   Decimal("1"), "mismatch")
        # the bill's diskAmount is 0.0 in both pulls: $0 invoiced against $0
        assert got["pod_storage"][5] == "tied"
        ((rid, day, at_stake, msg),) = _mismatches(con)
        assert rid == "invoice:INV-2026-06-research/research/pods"
        assert str(day) == "2026-06-30" and at_stake == Decimal("1")
        assert "says $4.00" in msg and "is $3.00" in msg and "Unexplained: $1.00" in msg
        assert "tolerance of $0.01" in msg and "invoices[0].lines[0]" in msg
    finally:
        con.close()


def test_bad_invoice_rows_are_quarantined_with_line_and_reason_the_rest_loaded(tmp_path):
    con = _run(tmp_path, "bad.csv")
    try:
        bad = dict(con.execute("select locator, reason from raw.quarantine "
                               "where source_file like '%bad.csv' order by record_no").fetchall())
        assert set(bad) == {"line 3", "line 4", "line 5", "line 6", "line 7", "line 8"}
        assert "currency 'EUR'" in bad["line 3"] and "accepted USD" in bad["line 3"]
        assert "amount is not a decimal number: '1,234.00'" in bad["line 4"]
        assert "billing_period_start" in bad["line 5"] and "2026-06-01" in bad["line 5"]
        assert "is not after billing_period_start" in bad["line 6"]
        assert "service 'gpu' is unknown" in bad["line 7"] and "pod_storage" in bad["line 7"]
        assert "missing required invoice value(s) cost_center" in bad["line 8"]
        files = con.execute("select kind, records_in, records_loaded, records_quarantined "
                            "from raw.files where source_file like '%bad.csv'").fetchall()
        assert files == [("invoice_csv", 7, 1, 6)]
        # the good row: serverless $0.00, and the case has no serverless bill
        assert _tieout(con)["serverless"][:6] == (0, 0, 0, 0, 0, "tied")
    finally:
        con.close()


def test_focus_invoice_id_is_filled_for_an_invoiced_period_and_null_before(tmp_path):
    from datetime import date

    from recon.outputs.focus import focus_rows

    con = _run(tmp_path / "invoiced", "late.csv")
    try:
        # June is invoiced (pods, the account's): the pod's compute rows of 2026-06-01 carry the
        # invoice's id (FOCUS_Spec specification/columns/invoiceid.md: "MUST NOT be null when the
        # charge is associated with an issued or provisional invoice")
        rows = [r for r in focus_rows(con, date(2026, 6, 1)) if r["ResourceId"] == POD]
        assert rows and {r["InvoiceId"] for r in rows} == {"INV-2026-06-research"}
    finally:
        con.close()
    con = _run(tmp_path / "not_invoiced")
    try:  # no invoice: the charges are not yet invoiced, and InvoiceId is null
        rows = [r for r in focus_rows(con, date(2026, 6, 1)) if r["ResourceId"] == POD]
        assert rows and {r["InvoiceId"] for r in rows} == {None}
    finally:
        con.close()


def test_a_windowed_run_ties_out_the_whole_period(tmp_path):
    from datetime import date

    con = _run(tmp_path, "planted.json")
    con.close()
    # a daily run of 2026-06-02 rebuilds only that day's intermediate models; the tie-out reads
    # the staged bill and the whole of marts.resource_day, so June's pods are still $3.00
    run(tmp_path / "landing", tmp_path / "recon.duckdb", day_from=date(2026, 6, 2),
        day_to=date(2026, 6, 2))
    con = duckdb.connect(str(tmp_path / "recon.duckdb"), read_only=True)
    try:
        assert _tieout(con)["pods"][:6] == (Decimal("4"), Decimal("3"), Decimal("1"), Decimal("0"),
                                           Decimal("1"), "mismatch")
    finally:
        con.close()


def test_the_days_report_shows_the_invoices_of_its_period(tmp_path):
    from recon.outputs.report import write_report

    con = _run(tmp_path, "planted.json")
    try:
        page = write_report(con, "2026-06-01", tmp_path / "report.html").read_text()
    finally:
        con.close()
    # the planted dollar: $4.00 invoiced, $3.00 reconciled, $1.00 unexplained
    assert '<tr data-invoice="INV-2026-06-research"><td>INV-2026-06-research</td><td>research</td>' \
           '<td>pods</td><td class="num">$4.00</td><td class="num">$3.00</td>' in page
    assert '<span data-metric="invoice-unexplained">1.00</span></td><td>mismatch</td>' in page


def test_recon_check_month_ties_the_invoices_out(tmp_path):
    from typer.testing import CliRunner

    from recon.cli import app

    con = _run(tmp_path, "planted.json")
    con.close()
    out = CliRunner().invoke(app, ["check", "--month", "2026-06", "--db",
                                   str(tmp_path / "recon.duckdb")])
    # the planted dollar fails the step; the pod storage line ($0 vs $0) is tied
    assert out.exit_code == 1, out.output
    assert ("FAIL INV-2026-06-research research pods (k3vq8m2ztr4w1a): invoiced $4.00 vs "
            "reconciled $3.00, difference $1.00, unexplained $1.00 (tolerance $0.01): mismatch"
            in out.output)
    assert "research pod_storage (k3vq8m2ztr4w1a): invoiced $0.00" in out.output
    # a month no invoice covers: nothing was tied out, and the step says so
    out = CliRunner().invoke(app, ["check", "--month", "2026-07", "--db",
                                   str(tmp_path / "recon.duckdb")])
    assert out.exit_code == 1 and "no invoice covers the month" in out.output
