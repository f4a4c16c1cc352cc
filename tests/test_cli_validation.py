"""`recon run` validates the warehouse; a critical failure exits 1 naming the rows.
`recon query` cannot write."""

import json

from typer.testing import CliRunner

from recon.cli import app


def test_run_fails_loudly_on_a_critical_expectation(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    # a billing envelope whose records name no resource: landed, but no model can use its money
    (d / "odd.json").write_text(json.dumps({"records": [
        {"startTime": "2026-06-01T10:00:00Z", "endTime": "2026-06-01T11:00:00Z", "totalAmount": 3.5}],
        "metadata": {}}))
    db = tmp_path / "db.duckdb"
    r = CliRunner().invoke(app, ["run", "--input", str(d), "--db", str(db)], terminal_width=200)
    assert r.exit_code == 1, r.output
    assert "CRITICAL raw.runpod_billing" in r.output and "v2_unknown" in r.output
    assert "odd.json" in r.output  # the row is named
    assert db.exists()  # the marts are still written, and marked by validation_results
    r = CliRunner().invoke(app, ["query", "--db", str(db), "--format", "csv",
                                 ("select count(*) as failed from marts.validation_results "
                                  "where not success")])
    assert r.exit_code == 0 and r.output.strip().splitlines()[-1] == "1"


def test_query_is_read_only(sim_run):
    r = CliRunner().invoke(app, ["query", "--db", str(sim_run["db"]),
                                 "create table marts.x as select 1"])
    assert r.exit_code == 2 and "read-only" in r.output.lower()
    r = CliRunner().invoke(app, ["query", "--db", str(sim_run["db"]), "--format", "json",
                                 "select count(*) as n from marts.findings"])
    assert r.exit_code == 0 and json.loads(r.output)[0]["n"] > 10


def _column(output: str, i: int) -> str:
    """Column i of a rich table's body rows, folded pieces joined."""
    return "".join(ln.split("│")[i + 1].strip() for ln in output.splitlines()
                   if ln.startswith("│"))


def test_a_narrow_table_folds_values_instead_of_cutting_them(sim_run):
    """Piped, rich draws 80 columns; until 0.10.6 a long word ended in '…' and was lost
    (`recon query` showed SAVINGS_PLAN_UNUS… for a finding code)."""
    long = "SAVINGS_PLAN_UNUSED_" + "X" * 70 + "_END"
    sql = (f"select '{long}' as code, 'plan:sp-h100-sim-with-a-long-name' as resource_id, "
           "123456.789012345678::decimal(38, 12) as amount")
    r = CliRunner().invoke(app, ["query", "--db", str(sim_run["db"]), sql], terminal_width=60)
    assert r.exit_code == 0, r.output
    assert "…" not in r.output
    assert _column(r.output, 0) == long
    assert _column(r.output, 1) == "plan:sp-h100-sim-with-a-long-name"
    assert _column(r.output, 2) == "123456.789012345678"
    # what-if's team / workload names too
    r = CliRunner().invoke(app, ["whatif", "--db", str(sim_run["db"]), "--cooldown", "60",
                                 "--idle-timeout", "1"], terminal_width=60)
    assert r.exit_code == 0, r.output
    assert "…" not in r.output


def test_report_and_export_of_a_day_without_data_warn(sim_run, tmp_path):
    """A mistyped --day wrote a $0.00 page and empty CSVs in silence until 0.10.6: they are
    still written (a scheduled export wants its file), with a warning naming the days landed."""
    db = str(sim_run["db"])
    r = CliRunner().invoke(app, ["report", "--db", db, "--day", "2026-07-01",
                                 "--out", str(tmp_path / "r.html")], terminal_width=300)
    assert r.exit_code == 0, r.output
    assert ("warning: no billed or active resource on 2026-07-01" in r.output
            and "the landed bills cover 2026-06-01..2026-06-02" in r.output)
    assert (tmp_path / "r.html").exists()
    r = CliRunner().invoke(app, ["export", "--db", db, "--day", "2026-07-01",
                                 "--out", str(tmp_path / "ex")], terminal_width=300)
    assert r.exit_code == 0 and "warning: no billed or active resource" in r.output, r.output
    assert (tmp_path / "ex" / "costs_2026-07-01.csv").read_text().count("\n") == 1  # header
    # a day with data: no warning
    r = CliRunner().invoke(app, ["report", "--db", db, "--day", "2026-06-01",
                                 "--out", str(tmp_path / "r1.html")], terminal_width=300)
    assert r.exit_code == 0 and "warning" not in r.output, r.output
