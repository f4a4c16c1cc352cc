"""End to end: the demo, reruns, determinism."""

import hashlib
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from recon.cli import app
from recon.pipeline import run
from recon.simulate import simulate

MARTS = ("workload_lifecycle", "resource_day", "billed_segments", "findings")


def snapshot(db: Path) -> dict:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {m: con.execute(f"select * from marts.{m} order by all").fetchall() for m in MARTS}
    finally:
        con.close()


def digest(folder: Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes(tmp_path):
    simulate(tmp_path / "a", seed=3, days=1, nodes=4)
    simulate(tmp_path / "b", seed=3, days=1, nodes=4)
    simulate(tmp_path / "c", seed=4, days=1, nodes=4)
    assert digest(tmp_path / "a") == digest(tmp_path / "b")
    assert digest(tmp_path / "a") != digest(tmp_path / "c")


def test_rerun_and_repeated_versions_give_identical_marts(sim_run, tmp_path):
    src = sim_run["root"] / "input"
    first = snapshot(sim_run["db"])
    db = tmp_path / "again.duckdb"
    run(src, db)
    run(src, db)  # same folder twice into the same warehouse
    assert snapshot(db) == first
    con = duckdb.connect(str(db), read_only=True)
    n_raw = con.execute("select count(*) from raw.k8s_objects").fetchone()[0]
    con.close()
    # a collector that reconnected wrote every pod version a second time, in a new file (in
    # another order: a byte-identical copy is not landed at all, see test_incremental)
    copy = tmp_path / "dup"
    import shutil
    shutil.copytree(src, copy)
    for f in (copy / "k8s").rglob("watch-pods-*.jsonl"):
        lines = f.read_bytes().splitlines(keepends=True)
        (f.parent / ("again-" + f.name)).write_bytes(b"".join(reversed(lines)))
    db2 = tmp_path / "dup.duckdb"
    run(copy, db2)
    assert snapshot(db2) == first
    con = duckdb.connect(str(db2), read_only=True)
    assert con.execute("select count(*) from raw.k8s_objects").fetchone()[0] > n_raw
    con.close()


def test_day_window_limits_the_marts(sim_run, tmp_path):
    db = tmp_path / "one.duckdb"
    from datetime import date
    run(sim_run["root"] / "input", db, day_from=date(2026, 6, 2), day_to=date(2026, 6, 2))
    full = snapshot(sim_run["db"])
    one = snapshot(db)
    assert {r[2] for r in one["resource_day"]} == {date(2026, 6, 2)}
    assert one["resource_day"] == [r for r in full["resource_day"] if r[2] == date(2026, 6, 2)]


def test_demo_summary_matches_ground_truth(tmp_path):
    db = tmp_path / "demo.duckdb"
    r = CliRunner().invoke(app, ["demo", "--db", str(db), "--days", "2", "--nodes", "4"],
                           terminal_width=200)
    assert r.exit_code == 0, r.output
    simulate(tmp_path / "truth", seed=7, days=2, nodes=4)
    import json
    truth = json.loads((tmp_path / "truth" / "expected" / "ground_truth.json").read_text())
    tails = Counter()
    for row in truth["resource_days"]:
        tails[row["day"]] += row["categories"].get("tail", 0)
    findings = Counter(f["day"] for f in truth["findings"])
    lines = {ln.split("│")[1].strip(): [c.strip() for c in ln.split("│")[2:-1]]
             for ln in r.output.splitlines() if ln.startswith("│")}
    for i, day in enumerate(sorted(findings)):
        tail_s = re.search(r"\(([\d,.]+) s\)", lines["tail after last task"][i]).group(1)
        assert Decimal(tail_s.replace(",", "")) == tails[day]
        assert int(lines["findings"][i]) == findings[day]
    # money at stake outside the bill: the savings plan's upfront share on the days it covered
    # nothing (ground truth) and unbilled activity; never more than the total at stake
    con = duckdb.connect(str(db), read_only=True)
    outside = dict(con.execute(
        "select day::varchar, sum(amount_at_stake) from marts.findings where code in "
        "('SAVINGS_PLAN_UNUSED', 'ACTIVITY_WITHOUT_BILLING', 'BALANCE_BELOW_ONE_HOUR', "
        "'GPU_SHARED_OVERSUBSCRIBED') "
        "group by all").fetchall())
    con.close()
    unused_days = {f["day"] for f in truth["findings"] if f["code"] == "SAVINGS_PLAN_UNUSED"}
    assert unused_days and unused_days <= set(outside)
    for i, day in enumerate(sorted(findings)):
        shown = Decimal(lines["of it outside the bill"][i])
        assert shown == Decimal(outside.get(day, 0)).quantize(Decimal("0.01"))
        assert shown <= Decimal(lines["money at stake"][i])
    assert db.exists() and "recon query" in r.output


def test_the_summary_query_sums_each_metric_over_its_categories():
    """sql/queries/pipeline__summary.sql spells out SUMMARY_METRICS: one amount and one seconds
    column per metric, over exactly its categories, and OUTSIDE_BILL_CODES for the money at
    stake outside the bill."""
    from recon.pipeline import OUTSIDE_BILL_CODES, SUMMARY_METRICS, _summary_sql

    sql = " ".join(_summary_sql().split())

    def quoted(values):
        return ", ".join(f"'{v}'" for v in values)

    for name, cats in SUMMARY_METRICS.items():
        if cats is None:
            assert f"coalesce(sum(amount), 0) as {name}," in sql
            assert ("coalesce(sum(seconds) filter (where category not in ('storage_running', "
                    f"'storage_lingering', 'network_volume')), 0) as {name}_seconds,") in sql
            continue
        cond = f"filter (where category in ({quoted(cats)})), 0)"
        assert f"coalesce(sum(amount) {cond} as {name}," in sql, name
        assert f"coalesce(sum(seconds) {cond} as {name}_seconds" in sql, name
    assert f"filter (where code in ({quoted(OUTSIDE_BILL_CODES)})) as at_stake_outside_bill" in sql
    columns = re.findall(r"\) as ([a-z_]+)", sql.split("from segments")[0])
    assert columns == [c for m in SUMMARY_METRICS for c in (m, f"{m}_seconds")]


def test_the_summary_rows_add_up_to_the_bill(sim_run):
    """Every category of marts.billed_segments has exactly one summary row, so the rows under
    `billed` add up to it: exactly before rounding, within half a cent a row after. Serverless
    execution, storage while compute ran and rounding have rows too (without them 0.87 USD of
    the demo's first day would be in no row)."""
    from recon.pipeline import SUMMARY_METRICS, _summary_sql, summarise

    parts = {m: cats for m, cats in SUMMARY_METRICS.items() if cats is not None}
    owners = Counter(c for cats in parts.values() for c in cats)
    assert all(n == 1 for n in owners.values()), owners  # no category counted twice
    con = duckdb.connect(str(sim_run["db"]), read_only=True)
    try:
        categories = {r[0] for r in con.execute(
            "select distinct category from marts.billed_segments").fetchall()}
        assert {"busy", "execution", "storage_running", "idle", "network_volume"} <= categories
        assert categories <= set(owners), categories - set(owners)
        cur = con.execute(_summary_sql())
        cols = [d[0] for d in cur.description]
        exact = [dict(zip(cols, r)) for r in cur.fetchall()]
        rounded = summarise(con)
    finally:
        con.close()
    assert len(exact) == len(rounded) == 2
    assert set(cols) >= {c for m in SUMMARY_METRICS for c in (m, f"{m}_seconds")}
    assert "idle_unobserved" not in cols
    for day, shown in zip(exact, rounded):
        assert day["billed"] > 0
        assert sum(day[m] for m in parts) == day["billed"]  # Decimal: every digit
        assert abs(sum(shown[m] for m in parts) - shown["billed"]) <= Decimal("0.005") * len(parts)


def test_a_run_reports_its_stages_and_recon_run_shows_them(sim_run, tmp_path, monkeypatch):
    """Landing reports each file; after it, a run of 25 s spends 11 s building and 4 s
    validating, which must not pass in silence. The stages come through `on_stage`, in order,
    and `recon run` prints them once the run has taken STAGE_AFTER_SECONDS."""
    import recon.cli.run

    seen = []
    run(sim_run["root"] / "input", tmp_path / "s.duckdb", validate=True, on_stage=seen.append)
    assert seen == ["building staging", "building intermediate", "building marts",
                    "writing the warehouse", "validating"]
    monkeypatch.setattr(recon.cli.run, "STAGE_AFTER_SECONDS", 0.0)
    r = CliRunner().invoke(app, ["run", "--input", str(sim_run["root"] / "input"), "--db",
                                 str(tmp_path / "c.duckdb"), "--no-validate"], terminal_width=200)
    assert r.exit_code == 0, r.output
    shown = re.findall(r"^(building \w+|writing the warehouse) … \(\d+ s so far\)$", r.output,
                       re.MULTILINE)
    assert shown == seen[:-1]  # no gate: no "validating"
    monkeypatch.setattr(recon.cli.run, "STAGE_AFTER_SECONDS", 3600.0)
    r = CliRunner().invoke(app, ["run", "--input", str(sim_run["root"] / "input"), "--db",
                                 str(tmp_path / "d.duckdb"), "--no-validate"], terminal_width=200)
    assert r.exit_code == 0 and "so far)" not in r.output  # a short run stays quiet


def test_a_window_run_replaces_its_days_and_keeps_the_others(sim_run, tmp_path):
    from datetime import date
    db = tmp_path / "w.duckdb"
    src = sim_run["root"] / "input"
    run(src, db, day_from=date(2026, 6, 1), day_to=date(2026, 6, 1))
    run(src, db, day_from=date(2026, 6, 2), day_to=date(2026, 6, 2))
    run(src, db, day_from=date(2026, 6, 2), day_to=date(2026, 6, 2))  # rerun of the same window
    full = snapshot(sim_run["db"])
    both = snapshot(db)
    for m in ("resource_day", "billed_segments", "findings"):
        assert both[m] == full[m], m


def test_memory_limit_defaults_to_a_bound_and_is_configurable(monkeypatch):
    from recon.db import connect

    setting = lambda: connect(None).execute("select current_setting('memory_limit')").fetchone()[0]
    monkeypatch.delenv("RECON_MEMORY_LIMIT", raising=False)
    assert setting() == "1.1 GiB"  # 1.25GB
    monkeypatch.setenv("RECON_MEMORY_LIMIT", "2GB")
    assert setting() == "1.8 GiB"
    monkeypatch.setenv("RECON_MEMORY_LIMIT", "2GB; drop table x")
    with pytest.raises(ValueError, match="RECON_MEMORY_LIMIT"):
        setting()


def test_a_warehouse_named_after_a_schema_is_refused_clearly(tmp_path):
    from recon.db import connect

    with pytest.raises(ValueError, match="named after one of its schemas"):
        connect(tmp_path / "raw.duckdb")
    connect(tmp_path / "rawdata.duckdb").close()


def test_a_window_outside_the_data_is_said_not_summarised_as_empty(sim_run, tmp_path):
    """`recon run --from/--to` on days the input does not cover names the empty days and the
    days the landed bills cover, not only an empty summary table."""
    from datetime import date

    res = run(sim_run["root"] / "input", tmp_path / "w.duckdb", day_from=date(2026, 3, 11),
              day_to=date(2026, 3, 12))
    assert res.days == [] and res.empty_days == [date(2026, 3, 11), date(2026, 3, 12)]
    assert res.billed_span == (date(2026, 6, 1), date(2026, 6, 2))
    # a window on the data: nothing to say
    ok = run(sim_run["root"] / "input", tmp_path / "w2.duckdb", day_from=date(2026, 6, 2),
             day_to=date(2026, 6, 2))
    assert ok.empty_days == [] and ok.billed_span is None and ok.days
    # one day of the window on the data, one off it
    part = run(sim_run["root"] / "input", tmp_path / "w3.duckdb", day_from=date(2026, 6, 2),
               day_to=date(2026, 6, 3))
    assert part.empty_days == [date(2026, 6, 3)] and [d["day"] for d in part.days] == [date(2026, 6, 2)]

    r = CliRunner().invoke(app, ["run", "--input", str(sim_run["root"] / "input"), "--db",
                                 str(tmp_path / "cli.duckdb"), "--from", "2026-03-12", "--to",
                                 "2026-03-12", "--no-validate"])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())  # rich wraps long lines
    assert "no day with a billed or active resource" in out
    assert ("no billed or active resource on 2026-03-12 (the landed bills cover "
            "2026-06-01..2026-06-02)") in out
    assert "billed" not in out.split("no day with")[0]  # no empty table before it


def test_the_summary_writes_seconds_as_the_report_does():
    """The run summary writes 688.5 s as the report and `recon check` do, not 688.500 s."""
    from recon.outputs.report import seconds_text
    from recon.outputs.summary import seconds_text as _secs

    for v, want in ((Decimal("688.500"), "688.5"), (Decimal("86400.000"), "86,400"),
                    (Decimal("1341.495"), "1,341.495"), (Decimal("0"), "0"), (12, "12")):
        assert _secs(v) == seconds_text(v) == want


def test_a_failed_model_inside_the_callers_transaction_is_named_not_masked():
    """build(transaction=False) runs inside its caller's transaction (recon run's landing and
    build commit together): a model that fails aborts it, and restoring a setting afterwards
    raised "Current transaction is aborted", which hid the error naming the model."""
    import pytest

    from recon.build.run import build
    from recon.build.settings import write_config
    from recon.config import Config
    from recon.db import connect

    con = connect(None)
    write_config(con, Config(), None, None)
    con.execute("begin")
    con.execute("drop table raw.k8s_objects")
    with pytest.raises(RuntimeError, match=r"sql/staging/\w+\.sql: Catalog Error: .*k8s_objects"):
        build(con, transaction=False)
    con.close()
