"""`recon run` validates the warehouse; a critical failure exits 1 naming the rows.
`recon query` cannot write."""

import json

from typer.testing import CliRunner

from recon.cli import app


def test_run_fails_loudly_on_a_critical_expectation(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    # a billing envelope whose records are of no v2 schema (no id, no totalAmount: a bare bucket
    # and total is /v2/billing/endpoints' shape): landed, but no model can use its money
    (d / "odd.json").write_text(json.dumps({"records": [
        {"startTime": "2026-06-01T10:00:00Z", "endTime": "2026-06-01T11:00:00Z", "usd": 3.5}],
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
    """Piped, rich draws 80 columns; a long word is folded, not cut with '…' and lost
    (`recon query` would show SAVINGS_PLAN_UNUS… for a finding code)."""
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
    """A mistyped --day must not write a $0.00 page and empty CSVs in silence: they are still
    written (a scheduled export wants its file), with a warning naming the days landed."""
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


def test_query_reads_the_warehouse_only_unless_files_are_allowed(sim_run, tmp_path):
    """Read-only is not enough: `COPY … TO` writes anywhere, read_text() reads any file and
    INSTALL fetches extensions. Locked down by default (and the SQL cannot `set` it back);
    --allow-files opens files again."""
    db = str(sim_run["db"])
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    out = tmp_path / "out.csv"

    def q(sql, *extra):
        return CliRunner().invoke(app, ["query", "--db", db, *extra, sql], terminal_width=300)

    for sql in (f"copy (select 1) to '{out}'", f"select * from read_text('{secret}')",
                f"attach '{tmp_path / 'other.duckdb'}'", "install httpfs", "load httpfs"):
        r = q(sql)
        assert r.exit_code == 2 and "hunter2" not in r.output, (sql, r.output)
        assert "disabled" in r.output and "--allow-files" in r.output, (sql, r.output)
    for sql in ("set enable_external_access = true", "set lock_configuration = false",
                "set autoinstall_known_extensions = true"):
        r = q(sql)
        assert r.exit_code == 2 and "locked" in r.output, (sql, r.output)
    assert not out.exists() and not (tmp_path / "other.duckdb").exists()
    r = q("select count(*) as n from marts.findings", "--format", "json")
    assert r.exit_code == 0 and json.loads(r.output)[0]["n"] > 10
    r = q(f"select content from read_text('{secret}')", "--allow-files", "--format", "csv")
    assert r.exit_code == 0 and "hunter2" in r.output, r.output
    r = q(f"copy (select 1 as x) to '{out}'", "--allow-files")
    assert r.exit_code == 0 and out.read_text().split() == ["x", "1"]


def test_query_writes_nested_and_odd_types_as_csv(sim_run):
    """Lists, structs, maps, intervals and blobs made polars fail (or panic) under --format
    csv: they are written as DuckDB's text of them."""
    sql = ("select [1, 2] as l, {'a': 1} as s, map([1], [2]) as m, interval 1 day as i, "
           "'x'::blob as b, union_value(k := 3) as u, 4 as \"odd\"\"name\"")
    r = CliRunner().invoke(app, ["query", "--db", str(sim_run["db"]), "--format", "csv", sql])
    assert r.exit_code == 0, r.output
    header, row = 'l,s,m,i,b,u,"odd""name"', '"[1, 2]",{\'a\': 1},{1=2},1 day,x,3,4'
    assert r.output.splitlines() == [header, row]
    r = CliRunner().invoke(app, ["query", "--db", str(sim_run["db"]), "--format", "json", sql])
    assert r.exit_code == 0 and json.loads(r.output)[0]["l"] == [1, 2], r.output
    r = CliRunner().invoke(app, ["query", "--db", str(sim_run["db"]), "--format", "xml", sql])
    assert r.exit_code == 2 and "expected table, csv or json" in r.output


def test_escape_sequences_from_data_and_file_names_are_shown_not_sent(sim_run, tmp_path):
    """A file name or a record holding ESC [ 2 J (clear the screen), an 8-bit CSI or an OSC
    reached the terminal as is from `recon run`, `recon quarantine` and `recon query`: their
    control characters are printed as escapes (\\x1b), never sent."""
    src = next((sim_run["root"] / "input" / "k8s").rglob("watch-pods-*.jsonl"))
    land = tmp_path / "in"
    land.mkdir()
    evil = land / "watch-pods-\x1b[2J\x1b]0;owned\x07.jsonl"
    lines = src.read_bytes().splitlines(True)[:3]
    evil.write_bytes(b"".join(lines) + b'{"type": "ADDED", "object": "\x1b[31m\xc2\x9b0m"}\n{\n')
    db = tmp_path / "w.duckdb"
    r = CliRunner().invoke(app, ["run", "--input", str(land), "--db", str(db), "--no-validate"],
                           terminal_width=300)
    assert r.exit_code == 0, r.output

    def clean(out: str) -> None:
        assert not any(c in out for c in "\x1b\x07\x9b"), repr(out)

    clean(r.output)
    assert "watch-pods-\\x1b[2J\\x1b]0;owned\\x07.jsonl" in r.output
    r = CliRunner().invoke(app, ["quarantine", "--db", str(db)], terminal_width=300)
    assert r.exit_code == 0 and "\\x1b" in r.output, r.output
    clean(r.output)
    r = CliRunner().invoke(app, ["query", "--db", str(db),
                                 "select source_file, record from raw.quarantine"],
                           terminal_width=300)
    assert r.exit_code == 0 and "\\x9b" in r.output, r.output
    clean(r.output)
    r = CliRunner().invoke(app, ["query", "--db", str(db), "select chr(27) || '[2J' as x"])
    assert r.exit_code == 0 and "\\x1b[2J" in r.output
    clean(r.output)


def test_a_locked_warehouse_or_a_full_disk_is_one_line_and_exit_1(sim_run, tmp_path,
                                                                 monkeypatch):
    """The warehouse held by another run, or a full disk, is one line saying what to do, and
    exit 1: not a 39-line traceback, DuckDB's FatalException or a raw OSError."""
    import errno
    import subprocess
    import sys

    import duckdb

    db = tmp_path / "held.duckdb"
    duckdb.connect(str(db)).close()
    code = (f"import duckdb, time; c = duckdb.connect({str(db)!r}); "
            "print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        for args in (["run", "--input", str(sim_run["root"] / "input"), "--db", str(db)],
                     ["query", "--db", str(db), "select 1"],
                     ["quarantine", "--db", str(db)]):
            r = CliRunner().invoke(app, args, terminal_width=300)
            assert r.exit_code == 1, (args, r.output)
            want = (f"error: {db} is in use by another process (PID {holder.pid}): wait for "
                    "it to finish (or stop it), or give another --db")
            assert r.output.strip().splitlines() == [want], r.output
    finally:
        holder.kill()
        holder.wait()
    import recon.outputs.exports
    import recon.pipeline

    for exc in (duckdb.FatalException("FATAL Error: could not write: No space left on device"),
                OSError(errno.ENOSPC, "No space left on device")):
        def full(*a, exc=exc, **k):
            raise exc
        monkeypatch.setattr(recon.pipeline, "run", full)
        r = CliRunner().invoke(app, ["run", "--input", str(sim_run["root"] / "input"),
                                     "--db", str(tmp_path / "w.duckdb")], terminal_width=300)
        assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1, r.output
        assert r.output.startswith(f"error: no space left on the disk while writing "
                                   f"{tmp_path / 'w.duckdb'}: free space there"), r.output
        monkeypatch.setattr(recon.outputs.exports, "export_day", full)
        r = CliRunner().invoke(app, ["export", "--db", str(sim_run["db"]), "--day", "2026-06-01",
                                     "--out", str(tmp_path / "ex")], terminal_width=300)
        assert r.exit_code == 1 and "no space left on the disk while writing into" in r.output
    # anything else is still a bug's traceback
    monkeypatch.setattr(recon.pipeline, "run", lambda *a, **k: 1 / 0)
    r = CliRunner().invoke(app, ["run", "--input", str(sim_run["root"] / "input"),
                                 "--db", str(tmp_path / "w.duckdb")])
    assert isinstance(r.exception, ZeroDivisionError)


def test_a_query_run_in_process_leaves_the_files_other_connections_unlocked(sim_run, tmp_path):
    """`recon query` locks its configuration; DuckDB shares one database instance among a
    process's connections to a file, so with the file opened directly the lock reached every
    other connection still open on it (the marts fixture's `set TimeZone` then failed)."""
    import shutil

    import duckdb

    db = tmp_path / "recon.duckdb"
    shutil.copy(sim_run["db"], db)
    other = duckdb.connect(str(db), read_only=True)
    try:
        r = CliRunner().invoke(app, ["query", "--db", str(db), "--format", "csv",
                                     "select count(*) as n from marts.resource_day"])
        assert r.exit_code == 0, r.output
        assert int(r.output.splitlines()[1]) > 0
        r = CliRunner().invoke(app, ["query", "--db", str(db), "--format", "csv",
                                     "select count(*) as n from recon.marts.findings"])
        assert r.exit_code == 0 and int(r.output.splitlines()[1]) > 0, r.output
        other.execute("set TimeZone = 'UTC'")  # raised "the configuration has been locked"
        assert other.execute("select current_setting('lock_configuration')").fetchone()[0] is False
    finally:
        other.close()
