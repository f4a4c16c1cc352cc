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
                                 "select count(*) as failed from marts.validation_results "
                                 "where not success"])
    assert r.exit_code == 0 and r.output.strip().splitlines()[-1] == "1"


def test_query_is_read_only(sim_run):
    r = CliRunner().invoke(app, ["query", "--db", str(sim_run["db"]),
                                 "create table marts.x as select 1"])
    assert r.exit_code == 2 and "read-only" in r.output.lower()
    r = CliRunner().invoke(app, ["query", "--db", str(sim_run["db"]), "--format", "json",
                                 "select count(*) as n from marts.findings"])
    assert r.exit_code == 0 and json.loads(r.output)[0]["n"] > 10
