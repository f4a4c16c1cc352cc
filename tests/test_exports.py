"""Finance exports: totals tie to the bill exactly, CSV rules, atomic writes, path safety, FOCUS."""

import csv
import io
import json
import re
import shutil
from datetime import date
from decimal import Decimal

import duckdb
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from recon.cli import app
from recon.outputs import exports, focus

DAYS = ("2026-06-01", "2026-06-02")
MONEY_RE = re.compile(r"-?\d+\.\d{12}")
SECONDS_RE = re.compile(r"-?\d+\.\d{3}")
TS_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")


def read_csv(path):
    text = path.read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text))), text


@pytest.fixture(scope="module")
def month_export(sim_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("exports")
    con = duckdb.connect(str(sim_run["db"]), read_only=True)
    con.execute("set TimeZone = 'UTC'")
    paths = focus.export_month(con, "2026-06", out)
    yield {"out": out, "paths": paths, "con": con}
    con.close()


def billed(con, day):
    return con.execute("select sum(billed_amount) from marts.resource_day where day = ?",
                       [date.fromisoformat(day)]).fetchone()[0]


def test_month_export_writes_the_expected_files(month_export):
    names = sorted(p.name for p in month_export["out"].iterdir())
    assert names == ["costs_2026-06-01.csv", "costs_2026-06-02.csv", "findings_2026-06-01.csv",
                     "findings_2026-06-02.csv", "focus_2026-06.csv", "focus_2026-06.parquet"]


@pytest.mark.parametrize("day", DAYS)
def test_costs_total_ties_to_resource_day_exactly(month_export, day):
    rows, _ = read_csv(month_export["out"] / f"costs_{day}.csv")
    total = sum(Decimal(r["billed_amount"]) for r in rows)
    want = billed(month_export["con"], day)
    assert total.quantize(Decimal("0.01")) == want.quantize(Decimal("0.01"))
    assert total == want  # all 12 decimals, not just the cents
    assert {r["day"] for r in rows} == {day}


def test_costs_rows_follow_the_allocation_rules(month_export):
    con = month_export["con"]
    rows, text = read_csv(month_export["out"] / "costs_2026-06-01.csv")
    assert text.splitlines()[0] == ",".join(exports.COSTS_COLUMNS)
    keys = [(r["day"], r["team"], r["namespace"], r["workload"], r["category"], r["cause"],
             r["resource_id"]) for r in rows]
    assert keys == sorted(keys) and len(keys) == len(set(keys))
    # a cause names money that was not work: none on busy rows, one on every tail row
    assert all(r["cause"] == "" for r in rows if r["category"] == "busy")
    assert all(r["cause"] in ("keda_cooldown", "hpa_scale_down", "tail_after_exit")
               for r in rows if r["category"] == "tail")
    for r in rows:
        assert MONEY_RE.fullmatch(r["billed_amount"]) and SECONDS_RE.fullmatch(r["seconds"])
        if r["team"] in (exports.IDLE, exports.UNALLOCATED):
            assert r["namespace"] == r["team"]
        if r["category"] in ("idle", "storage_lingering"):
            assert r["team"] == exports.IDLE
        if r["category"] in ("unobserved", "execution", "cold_start", "rounding"):
            assert r["team"] == exports.UNALLOCATED
    # 68r9sn4i2h14we has 2 GPUs: while one 1-GPU pod works, the other GPU's half is __idle__
    assert ("__idle__", "68r9sn4i2h14we", "busy") in {(r["team"], r["workload"], r["category"])
                                                      for r in rows}
    teams = {(r["team"], r["namespace"], r["workload"]) for r in rows if not r["team"].startswith("__")}
    forgotten = con.execute("select owner_name from marts.waste where owner_kind = 'Node'").fetchall()
    assert len(set(forgotten)) == 1  # the node its pool labels team=search (simulate.world)
    assert teams == {("nlp", "ml-batch", "batch-infer"), ("search", "ml-batch", "batch-infer"),
                     ("vision", "ml-batch", "batch-infer"), ("search", "ml-serve", "gpu-warm-pool"),
                     ("search", "ml-serve", "llm-serve"),  # the ScaledObject's replicas (simulate.keda)
                     ("search", "ml-serve", "llm-warm"),  # and llm-warm's (simulate.hpa_slow)
                     ("search", "__node__", forgotten[0][0])}
    # every category's money in the file equals the mart's (within the marts' own 1e-9 rounding)
    by_cat = {}
    for r in rows:
        by_cat[r["category"]] = by_cat.get(r["category"], Decimal(0)) + Decimal(r["billed_amount"])
    mart = dict(con.execute("select category, sum(amount) from marts.billed_segments "
                            "where day = date '2026-06-01' group by all").fetchall())
    assert set(by_cat) == set(mart)
    for cat, amount in mart.items():
        assert abs(by_cat[cat] - amount) < Decimal("1e-9"), cat
    # busy seconds of the day all go to workloads; tail seconds to the teams marts.waste gives
    # them (a tail's owner is the session's last pod), none left __idle__ in the simulated day
    busy = sum(Decimal(r["seconds"]) for r in rows if r["category"] == "busy")
    tails: dict[str, Decimal] = {}
    for r in rows:
        if r["category"] == "tail":
            tails[r["team"]] = tails.get(r["team"], Decimal(0)) + Decimal(r["seconds"])
    mbusy = con.execute("select sum(seconds) from marts.billed_segments "
                        "where day = date '2026-06-01' and category = 'busy'").fetchone()[0]
    waste_tails = dict(con.execute(
        "select team, sum(seconds) from marts.waste where day = date '2026-06-01' and cause in "
        "('keda_cooldown', 'hpa_scale_down', 'tail_after_exit') group by all").fetchall())
    assert abs(busy - mbusy) <= Decimal("0.01")
    assert exports.IDLE not in tails and set(tails) == set(waste_tails)
    assert all(abs(tails[t] - waste_tails[t]) <= Decimal("0.01") for t in tails)


def rebuild_allocation(con):
    """Rebuild marts.allocation after a test changed the intermediate tables it reads."""
    from recon.build.models import SQL_DIR

    con.execute("create or replace table marts.allocation as "
                + (SQL_DIR / "marts" / "allocation.sql").read_text())


def test_overlapping_pods_split_by_gpu_share_of_the_node(sim_run, tmp_path):
    db = tmp_path / "copy.duckdb"
    shutil.copy(sim_run["db"], db)
    con = duckdb.connect(str(db))
    con.execute("set TimeZone = 'UTC'")
    # two 1-GPU pods start together on 68r9sn4i2h14we; give one of them 3 GPUs
    uid = con.execute("select pod_uid from intermediate.int_resource__workloads where resource_id = "
                      "'68r9sn4i2h14we' order by scheduled_at, ready_at desc limit 1").fetchone()[0]
    con.execute("update intermediate.int_resource__workloads set gpus = 3, gpu_slots = 3, team = 'big' "
                "where pod_uid = ?", [uid])
    rebuild_allocation(con)
    shares = exports.allocate(con, date(2026, 6, 1), date(2026, 6, 1))
    want = Decimal(0)
    for s_start, s_end, amount in con.execute(
            "select seg_start, seg_end, amount_usd from intermediate.int_resource__instance_segments "
            "where resource_id = '68r9sn4i2h14we' and day = date '2026-06-01' "
            "and category in ('busy', 'startup')").fetchall():
        pods = con.execute("select pod_uid, gpus from intermediate.int_resource__workloads "
                           "where resource_id = '68r9sn4i2h14we' and scheduled_at < ? "
                           "and window_end_at > ?", [s_end, s_start]).fetchall()
        total = max(sum(g for _, g in pods), 2)  # the node has 2 GPUs
        want += sum((amount * g / total for u, g in pods if u == uid), Decimal(0))
    big = [s for s in shares if s.team == "big" and s.category in ("busy", "startup")]
    got = sum((s.amount for s in big), Decimal(0))
    assert want > 0 and abs(got - want) < Decimal("1e-9")
    assert {s.resource_id for s in big} == {"68r9sn4i2h14we"}
    assert sum((s.amount for s in shares), Decimal(0)) == billed(con, "2026-06-01")
    con.close()


def test_workload_name_uses_labels_then_strips_generated_suffixes(tmp_path):
    import json

    from recon.db import connect
    from recon.pipeline import run

    pods = [("batch-infer-29p0t-xd7tz", {"app": "batch-infer"}, "batch-infer"),
            ("x-abcde", {"app.kubernetes.io/name": "llm", "app": "y"}, "llm"),
            ("trainer-7d9f8b6c5d-x2b4q", {}, "trainer"),
            ("nightly-28934560-k7x2p", {}, "nightly"),
            ("solo", {}, "solo")]
    d = tmp_path / "in"
    d.mkdir()
    with open(d / "pods.jsonl", "w") as f:
        for i, (name, labels, _) in enumerate(pods):
            f.write(json.dumps({"type": "ADDED", "object": {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "ml", "uid": f"u{i}", "labels": labels,
                             "resourceVersion": str(i), "creationTimestamp": "2026-06-01T00:00:00Z"},
                "spec": {}, "status": {}}}) + "\n")
    run(d, tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    got = dict(con.execute("select pod_name, workload from marts.workload_lifecycle").fetchall())
    assert got == {name: want for name, _, want in pods}


@pytest.mark.parametrize("day", DAYS)
def test_findings_csv_is_the_mart(month_export, day):
    con = month_export["con"]
    rows, text = read_csv(month_export["out"] / f"findings_{day}.csv")
    assert text.splitlines()[0] == ",".join(exports.FINDINGS_COLUMNS)
    assert exports.FINDINGS_COLUMNS[-4:] == ("namespace", "owner_kind", "owner_name", "team")
    mart = con.execute("select finding_id, amount_at_stake, window_start, namespace, owner_kind, owner_name, "
                       "team from marts.findings where day = ? order by amount_at_stake desc, finding_id",
                       [date.fromisoformat(day)]).fetchall()
    assert [(r["finding_id"], Decimal(r["amount_at_stake"])) for r in rows] == [m[:2] for m in mart]
    # the owner columns come last, an empty cell where the mart has NULL
    assert [tuple(r[c] for c in ("namespace", "owner_kind", "owner_name", "team")) for r in rows] == \
        [tuple("" if v is None else v for v in m[3:]) for m in mart]
    for r, m in zip(rows, mart):
        assert TS_RE.fullmatch(r["window_start"])
        assert r["window_start"] == m[2].strftime("%Y-%m-%dT%H:%M:%S.") + \
            f"{m[2].microsecond // 1000:03d}Z"
    for line in text.splitlines()[1:]:
        assert line.startswith('"F-')  # text cells quoted


def test_focus_has_mandatory_columns_and_ties_to_the_bill(month_export):
    con = month_export["con"]
    rows, text = read_csv(month_export["out"] / "focus_2026-06.csv")
    header = text.splitlines()[0].split(",")
    assert header == list(focus.FOCUS_COLUMNS)
    assert set(focus.FOCUS_MANDATORY) <= set(header)
    assert all(c in focus.FOCUS_MANDATORY or c.startswith("x_") or c in (
        "ChargeFrequency", "ConsumedQuantity", "ConsumedUnit", "ServiceSubcategory", "InvoiceId",
        "ResourceId", "ResourceName", "ResourceType", "Tags",
        # FOCUS columns only a landed FOCUS row fills (its SKU, account, commitment, prices;
        # Runpod's rows fill ListUnitPrice where the catalog prices their compute)
        "SkuId", "SkuPriceId", "SubAccountId", "RegionId", "CommitmentDiscountId",
        "CommitmentDiscountStatus", "ContractedUnitPrice", "ListUnitPrice",
        # a savings plan's commitment columns (focus_commitments.py); SKU meter and price details
        "CommitmentDiscountCategory", "CommitmentDiscountName", "CommitmentDiscountType",
        "CommitmentDiscountQuantity", "CommitmentDiscountUnit", "SkuMeter", "SkuPriceDetails")
        for c in header)
    for r in rows:
        assert (r["ProviderName"], r["PublisherName"], r["InvoiceIssuerName"]) == ("Runpod",) * 3
        assert (r["BillingCurrency"], r["ChargeCategory"]) == ("USD", "Usage")
        assert r["ChargeClass"] == "" and r["InvoiceId"] == ""
        assert r["BillingPeriodStart"] == "2026-06-01T00:00:00Z"
        assert r["BillingPeriodEnd"] == "2026-07-01T00:00:00Z"
        assert r["ServiceCategory"] in ("Compute", "Storage")
        assert MONEY_RE.fullmatch(r["BilledCost"]) and MONEY_RE.fullmatch(r["ContractedCost"])
    # ResourceName is the inventory's display name, never a copy of ResourceId (FOCUS 1.2
    # columns/resourcename.md: it "MUST NOT duplicate ResourceId")
    assert [r for r in rows if r["ResourceName"] == r["ResourceId"]] == []
    assert {r["ResourceName"] for r in rows if r["x_ResourceKind"] == "network_volume"} == {"shared-datasets"}
    # ids are quoted strings in the raw text
    for line in text.splitlines()[1:]:
        assert line.startswith('"runpod","Runpod account","USD",')
    # one row per resource × day × category × team × owner × cause
    keys = [(r["ResourceId"], r["ChargePeriodStart"], r["x_Category"], r["Tags"], r["x_Namespace"],
             r["x_Workload"], r["x_OwnerKind"], r["x_OwnerName"], r["x_WasteCause"]) for r in rows]
    assert len(keys) == len(set(keys))
    # the team is a FOCUS tag, a JSON object; the money of each (team, cause) is marts.waste's
    tagged = [r for r in rows if r["Tags"]]
    assert tagged and all(set(json.loads(r["Tags"])) == {"team"} for r in tagged)
    assert {json.loads(r["Tags"])["team"] for r in tagged} == {"nlp", "search", "vision"}
    by_team_cause: dict[tuple, Decimal] = {}
    for r in rows:
        if r["x_WasteCause"] in ("keda_cooldown", "hpa_scale_down", "tail_after_exit", "idle_between_jobs",
                                 "unschedulable_wait"):
            team = json.loads(r["Tags"])["team"] if r["Tags"] else "__unattributed__"
            k = (team, r["x_WasteCause"])
            by_team_cause[k] = by_team_cause.get(k, Decimal(0)) + Decimal(r["BilledCost"])
    # (causes of one category each: a tail's, an idle gap's)
    waste = {(t, c): a for t, c, a in con.execute(
        "select team, cause, sum(amount) from marts.waste where cause in ('keda_cooldown', "
        "'hpa_scale_down', 'tail_after_exit', 'idle_between_jobs', 'unschedulable_wait') "
        "group by all").fetchall()}
    assert set(by_team_cause) == set(waste)
    assert all(abs(by_team_cause[k] - waste[k]) < Decimal("1e-9") for k in by_team_cause)
    for day in DAYS:
        got = sum(Decimal(r["BilledCost"]) for r in rows if r["ChargePeriodStart"].startswith(day))
        assert got == billed(con, day)
    # the x_ seconds columns add up to the resource_day quantities
    want = con.execute("select sum(billed_after_exit_seconds), sum(lingering_storage_seconds), "
                       "sum(serverless_idle_seconds) from marts.resource_day").fetchone()
    got = tuple(sum(Decimal(r[c]) for r in rows if r[c]) for c in (
        "x_BilledAfterExitSeconds", "x_LingeringStorageSeconds", "x_ServerlessIdleSeconds"))
    assert got == want


def test_focus_list_cost_comes_from_the_sample_catalog(month_export):
    """The demo's catalog (recon/simulate/list_prices.py) lists every GPU above the sample
    contract, so its GPU compute shows ListCost > ContractedCost; FOCUS 1.2 (columns/
    listunitprice.md): ListCost = ListUnitPrice × PricingQuantity, exactly, in the file's text."""
    rows, _ = read_csv(month_export["out"] / "focus_2026-06.csv")
    priced = [r for r in rows if r["ListUnitPrice"]]
    assert priced and {r["ServiceCategory"] for r in priced} == {"Compute"}
    for r in priced:
        unit, qty, cost = (Decimal(r[c]) for c in ("ListUnitPrice", "PricingQuantity", "ListCost"))
        assert cost == unit * qty and cost >= 0 and MONEY_RE.fullmatch(r["ListCost"])
    list_total = sum(Decimal(r["ListCost"]) for r in priced)
    contracted = sum(Decimal(r["ContractedCost"]) for r in priced)
    assert list_total > contracted
    # the 2-GPU RTX 4090 pod of the demo: list 0.79/GPU-h × 2 = 1.58/h = 0.000438888…/s
    assert {r["ListUnitPrice"] for r in priced if r["ResourceId"] == "nq5qsug7mq72dj"} == {
        "0.000438889000"}
    # storage has no GPU list price: its list is what was contracted, with no unit price
    for r in rows:
        if r["ServiceCategory"] == "Storage":
            assert r["ListCost"] == r["ContractedCost"] and r["ListUnitPrice"] == ""


def test_focus_parquet_matches_csv(month_export):
    rows, _ = read_csv(month_export["out"] / "focus_2026-06.csv")
    t = pq.read_table(month_export["out"] / "focus_2026-06.parquet")
    assert t.column_names == list(focus.FOCUS_COLUMNS)
    assert t.num_rows == len(rows)
    assert str(t.schema.field("BilledCost").type) == "decimal128(38, 12)"
    assert sum(t.column("BilledCost").to_pylist()) == sum(Decimal(r["BilledCost"]) for r in rows)
    assert t.column("InvoiceId").null_count == t.num_rows


def test_formula_cells_are_neutralised_but_negative_numbers_are_not():
    spec = (("name", "str"), ("amount", "money"), ("seconds", "seconds"))
    rows = [("=SUM(A1:A9)", Decimal("-1.5"), Decimal(-2)), ("+1", Decimal(0), Decimal("0.0004")),
            ("-cmd", Decimal("-0"), None), ("@x", Decimal("1e-13"), Decimal(1)),
            ("\tx", Decimal(1), Decimal(1)), ("\rx", Decimal(1), Decimal(1)),
            ('a "quoted", b', Decimal(1), Decimal(1)), ("", None, None)]
    lines = exports.csv_bytes(spec, rows).decode("utf-8").split("\n")
    assert lines[0] == "name,amount,seconds"
    assert lines[1] == "\"'=SUM(A1:A9)\",-1.500000000000,-2.000"
    assert lines[2] == "\"'+1\",0.000000000000,0.000"
    assert lines[3] == "\"'-cmd\",0.000000000000,"
    assert lines[4] == "\"'@x\",0.000000000000,1.000"
    assert lines[5] == "\"'\tx\",1.000000000000,1.000"
    assert lines[6] == "\"'\rx\",1.000000000000,1.000"
    assert lines[7] == '"a ""quoted"", b",1.000000000000,1.000'
    assert lines[8] == '"",,'
    with pytest.raises(TypeError):
        exports.csv_bytes(spec, [("x", 1.5, None)])


def test_formula_in_a_team_label_is_neutralised_end_to_end(sim_run, tmp_path):
    db = tmp_path / "copy.duckdb"
    shutil.copy(sim_run["db"], db)
    con = duckdb.connect(str(db))
    con.execute("set TimeZone = 'UTC'")
    con.execute("""update intermediate.int_resource__workloads set team = '=HYPERLINK("http://x")'
                   where team = 'nlp'""")
    rebuild_allocation(con)
    exports.export_day(con, "2026-06-01", tmp_path / "out")
    text = (tmp_path / "out" / "costs_2026-06-01.csv").read_text()
    assert '"\'=HYPERLINK(""http://x"")","ml-batch","batch-infer","busy"' in text
    assert ',"=' not in text
    con.close()


def test_atomic_write_leaves_no_temp_file_and_keeps_the_old_file_on_failure(month_export, tmp_path):
    assert not [p for p in month_export["out"].iterdir() if p.name.startswith(".")]
    target = tmp_path / "costs_2026-06-01.csv"
    target.write_text("old")

    def boom(f):
        f.write(b"half a file")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        exports.atomic_write(target, boom)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["costs_2026-06-01.csv"]


@pytest.mark.parametrize("bad", ["../2026-06-01", "2026-06-01/../../x", "2026-6-1", "/etc/passwd",
                                 "2026-06-01\x00", " 2026-06-01", "2026-13-01"])
def test_bad_day_is_refused_before_any_file_is_written(month_export, tmp_path, bad):
    with pytest.raises(ValueError):
        exports.export_day(month_export["con"], bad, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_paths_never_escape_the_out_folder(tmp_path):
    for bad in ("../x.csv", "/etc/passwd", "a/b.csv", ".hidden", "..", "x\x00.csv"):
        with pytest.raises(ValueError):
            exports.safe_target(tmp_path, bad)
    with pytest.raises(ValueError):
        exports.parse_month("2026-06/../../etc")
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "costs_2026-06-01.csv").symlink_to(outside / "stolen.csv")
    with pytest.raises(ValueError):
        exports.safe_target(tmp_path / "out", "costs_2026-06-01.csv")
    assert exports.safe_target(tmp_path, "focus_2026-06.csv") == (tmp_path / "focus_2026-06.csv").resolve()


def test_cli_export_day_and_refusals(sim_run, tmp_path):
    runner = CliRunner()
    r = runner.invoke(app, ["export", "--day", "2026-06-02", "--db", str(sim_run["db"]),
                            "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["costs_2026-06-02.csv",
                                                          "findings_2026-06-02.csv"]
    r = runner.invoke(app, ["export", "--day", "../../x", "--db", str(sim_run["db"]),
                            "--out", str(tmp_path)])
    assert r.exit_code == 2
    r = runner.invoke(app, ["export", "--db", str(sim_run["db"]), "--out", str(tmp_path)])
    assert r.exit_code == 2


# ---------------------------------------------------------------- costs file: cents, resource, currency,
# cost center, compute vs storage seconds

@pytest.mark.parametrize("day", DAYS)
def test_costs_cent_rows_sum_exactly_to_the_days_bill_in_cents(month_export, day):
    rows, _ = read_csv(month_export["out"] / f"costs_{day}.csv")
    want = billed(month_export["con"], day)
    cents = [Decimal(r["billed_amount_cents"]) for r in rows]
    assert all(re.fullmatch(r"-?\d+\.\d{2}", r["billed_amount_cents"]) for r in rows)
    assert sum(cents) == want.quantize(Decimal("0.01"))
    # each row's cents are its exact amount floored or raised by one cent, never further
    for r, c in zip(rows, cents, strict=True):
        exact = Decimal(r["billed_amount"])
        assert exact - Decimal("0.01") < c < exact + Decimal("0.01"), r
    # the exact column still ties to all 12 decimals
    assert sum(Decimal(r["billed_amount"]) for r in rows) == want
    # naive per-row rounding misses on this fleet, which is why the cents column exists
    naive = sum(Decimal(r["billed_amount"]).quantize(Decimal("0.01")) for r in rows)
    assert len(rows) > 20 and naive != want.quantize(Decimal("0.01"))


def test_largest_remainder_fixes_what_naive_rounding_misses_by_hand():
    D = Decimal
    # $1.00 billed for one resource-day split three ways (a third each, the cut's loss on the
    # largest row, as marts.allocation ties it): naive rounding gives 0.33 × 3 = 0.99, a cent
    # short. Floors 0.33 × 3 = 0.99; one cent missing goes to the largest remainder, the first
    # row's 0.003333333334.
    thirds = [D("0.333333333334"), D("0.333333333333"), D("0.333333333333")]
    assert sum(thirds) == D("1.000000000000")
    assert sum(a.quantize(D("0.01")) for a in thirds) == D("0.99")
    assert exports.largest_remainder_cents(thirds) == [D("0.34"), D("0.33"), D("0.33")]
    # six rows of 0.165 (total 0.990): half-even rounds each to 0.16, 0.96 in all, three cents
    # short. Floors 0.16 × 6 = 0.96; three cents go to the three largest remainders, all 0.005,
    # so to the first three rows (ties go to the earlier row).
    six = [D("0.165")] * 6
    assert sum(a.quantize(D("0.01")) for a in six) == D("0.96")
    assert exports.largest_remainder_cents(six) == [D("0.17")] * 3 + [D("0.16")] * 3
    # a credit: -0.004 floors to -0.01 (remainder 0.006), 0.006 to 0.00 (remainder 0.006),
    # 1.007 to 1.00 (remainder 0.007); total 1.009 → 1.01, floors 0.99: two cents, to the
    # 1.007 and then the earlier of the two 0.006 remainders, -0.004 → 0.00
    got = exports.largest_remainder_cents([D("-0.004"), D("0.006"), D("1.007")])
    assert got == [D("0.00"), D("0.00"), D("1.01")] and sum(got) == D("1.01")
    assert exports.largest_remainder_cents([]) == []
    # through the file: each currency's cent rows add up to that currency's total, and the
    # CSV writes them with 2 decimals next to the exact 12
    spec = exports.COSTS_SPEC
    blank = dict.fromkeys(exports.COSTS_COLUMNS)
    rows = [{**blank, "day": date(2026, 6, 1), "team": "t", "billed_amount": a, "currency": cur}
            for a, cur in [(D("0.165"), "USD"), (D("0.165"), "EUR"), (D("0.165"), "USD"),
                           (D("0.165"), "EUR"), (D("0.165"), "USD")]]
    exports.with_cents(rows)
    # USD 0.495 → 0.50 (half-even of 0.495 is 0.50: 0.49|5 rounds to the even 0.50): floors
    # 0.48, two cents to the first two USD rows; EUR 0.330 → 0.33: floors 0.32, one cent
    assert [(r["currency"], r["billed_amount_cents"]) for r in rows] == [
        ("USD", D("0.17")), ("EUR", D("0.17")), ("USD", D("0.17")), ("EUR", D("0.16")),
        ("USD", D("0.16"))]
    line = exports.csv_bytes(spec, rows).decode().splitlines()[1]
    assert line.startswith('2026-06-01,"t",,,,,0.165000000000,') and line.endswith(',0.17,')


def test_costs_carry_resource_currency_and_cost_center(sim_run, tmp_path):
    # the first nine columns keep their places, so a reader by position keeps working
    assert exports.COSTS_COLUMNS[:9] == ("day", "team", "namespace", "workload", "category",
                                         "seconds", "billed_amount", "expected_amount", "cause")
    assert exports.COSTS_COLUMNS[9:] == ("resource_id", "currency", "cost_center", "compute_seconds",
                                         "storage_seconds", "billed_amount_cents",
                                         "amount_priced")
    db = tmp_path / "copy.duckdb"
    shutil.copy(sim_run["db"], db)
    con = duckdb.connect(str(db))
    con.execute("set TimeZone = 'UTC'")
    # what `[mapping] cost_centers = {nlp = "CC-4100", search = "=CC"}` writes at build
    # (recon.build.settings); vision has none
    con.execute("update config.settings set value = ? where name = 'cost_centers'",
                ['{"nlp": "CC-4100", "search": "=CC"}'])
    exports.export_day(con, "2026-06-01", tmp_path / "out")
    rows, text = read_csv(tmp_path / "out" / "costs_2026-06-01.csv")
    # Runpod's credits are dollars ("Select a dollar amount for credits to add",
    # docs.runpod.io/accounts-billing/billing): the simulated bill is USD
    assert {r["currency"] for r in rows} == {"USD"}
    centers = {(r["team"], r["cost_center"]) for r in rows}
    assert ("nlp", "CC-4100") in centers and ("search", "'=CC") in centers  # neutralised
    assert ("vision", "") in centers and ("__idle__", "") in centers
    assert {c for t, c in centers if t == "nlp"} == {"CC-4100"}
    assert ',"=' not in text
    # every row names its billed resource, and a resource's rows add up to its resource_day bill
    assert all(r["resource_id"] for r in rows)
    by_res: dict[str, Decimal] = {}
    for r in rows:
        by_res[r["resource_id"]] = by_res.get(r["resource_id"], Decimal(0)) + Decimal(r["billed_amount"])
    mart = dict(con.execute("select resource_id, sum(billed_amount) from marts.resource_day "
                            "where day = date '2026-06-01' group by all").fetchall())
    assert by_res == {k: v for k, v in mart.items() if v != 0 or k in by_res}
    # the FOCUS export carries the same cost center as x_CostCenter, by the row's team tag
    frows = focus.focus_rows(con, date(2026, 6, 1))
    got = {(json.loads(r["Tags"])["team"] if r["Tags"] else None, r["x_CostCenter"]) for r in frows}
    assert ("nlp", "CC-4100") in got and ("search", "=CC") in got and ("vision", None) in got
    assert {c for t, c in got if t is None} == {None}
    # a warehouse built without the setting maps nothing: empty cells, not an error
    con.execute("delete from config.settings where name = 'cost_centers'")
    assert exports.cost_centers(con) == {}
    con.close()


@pytest.mark.parametrize("day", DAYS)
def test_costs_compute_and_storage_seconds_match_billed_segments(month_export, day):
    con = month_export["con"]
    rows, _ = read_csv(month_export["out"] / f"costs_{day}.csv")
    compute = sum(Decimal(r["compute_seconds"]) for r in rows)
    storage = sum(Decimal(r["storage_seconds"]) for r in rows)
    want_compute, want_storage = con.execute(
        "select sum(seconds) filter (where category not in ('storage_running', 'storage_lingering', "
        "'network_volume')), sum(seconds) filter (where category in ('storage_running', "
        "'storage_lingering', 'network_volume')) from marts.billed_segments where day = ?",
        [date.fromisoformat(day)]).fetchone()
    # "All compute and storage charges are billed per second" (docs.runpod.io/accounts-billing/
    # billing): both kinds have seconds, and the simulated fleet bills both
    assert want_storage > 0 and want_compute > 0
    # the allocation cuts seconds in pieces kept to the millisecond: within 0.01 s a day
    assert abs(compute - want_compute) <= Decimal("0.01")
    assert abs(storage - want_storage) <= Decimal("0.01")
    for r in rows:  # each row's seconds are one kind or the other, and `seconds` keeps its meaning
        split = (Decimal(r["compute_seconds"]), Decimal(r["storage_seconds"]))
        assert sum(split) == Decimal(r["seconds"])
        assert split[0] == 0 or split[1] == 0
        if r["category"] in ("storage_running", "storage_lingering", "network_volume"):
            assert split[0] == 0
