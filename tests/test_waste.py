"""marts.waste: every non-work billed second by cause and owner, worked by hand on the KEDA
reference cases (tests/reference/keda/: $3.60 an hour = $0.001 a second, one GPU per node), and
tied to the bill on the simulated fleet."""

import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from recon.pipeline import run
from tests.flows.duck import q

KEDA = Path(__file__).parent / "reference" / "keda"
UN = (None, None, None, "__unattributed__")
SQL = Path(__file__).parents[1] / "sql" / "queries" / "tieout__waste.sql"


def usd(seconds: int) -> Decimal:
    return Decimal(seconds) / 1000


def waste(case: str, tmp_path) -> list[tuple]:
    return waste_at(KEDA / case, tmp_path / f"{case}.duckdb")


def waste_at(folder: Path, db: Path) -> list[tuple]:
    run(folder, db)
    return q(db, "select resource_id, cause, namespace, owner_kind, owner_name, team, seconds, "
                 "amount from marts.waste")


def rows(rid: str, *spec) -> list[tuple]:
    return [(rid, cause, *owner, Decimal(s), usd(s)) for cause, owner, s in spec]


SEARCH = ("ml-serve", "ScaledObject", "llm", "search")
# every case: the node boots 08:58–08:59 (startup, no pod scheduled yet: unattributed), is Ready
# and idle until the pod is scheduled at 09:00:10 (70 s: a gap with no workload before it in the
# session, unattributed), and the pod starts until Ready (startup, the pod's owner)


@pytest.mark.parametrize(("case", "want"), [
    # ScaledJob ml-batch/embed's Job pod (team nlp) ready 09:01:00 after 50 s, finished 10:30:00;
    # the node bills until 10:45:00: 900 s after exit, the node's scale-down, $0.90
    ("scaledjob", rows("rpc3emb",
                       ("startup", UN, 60), ("idle_between_jobs", UN, 70),
                       ("startup", ("ml-batch", "ScaledJob", "embed", "nlp"), 50),
                       ("tail_after_exit", ("ml-batch", "ScaledJob", "embed", "nlp"), 900))),
    # replica k2x9p ready 09:02:00 (110 s starting), scaled to zero, ended 11:00:15; the node
    # bills 60 s more: KEDA's scale to zero ended it, so the tail is keda_cooldown
    ("late", rows("rpa1llm",
                  ("startup", UN, 60), ("idle_between_jobs", UN, 70),
                  ("startup", SEARCH, 110), ("keda_cooldown", SEARCH, 60))),
    # rpb2llm: replica q7m4w scaled in by the HPA (2 → 1) at 10:10:10, node bills to 10:40:10:
    # 1800 s hpa_scale_down; rpa1llm: the last replica's scale to zero, 60 s keda_cooldown
    ("hpa-scale-in", rows("rpa1llm",
                          ("startup", UN, 60), ("idle_between_jobs", UN, 70),
                          ("startup", SEARCH, 110), ("keda_cooldown", SEARCH, 60))
                     + rows("rpb2llm",
                            ("startup", UN, 60), ("idle_between_jobs", UN, 70),
                            ("startup", SEARCH, 110), ("hpa_scale_down", SEARCH, 1800))),
])
def test_waste_by_cause_and_owner_by_hand(case, want, tmp_path):
    assert sorted(waste(case, tmp_path), key=str) == sorted(want, key=str)


def test_every_resource_day_ties_exactly_and_the_unattributed_share_is_stated(marts):
    diffs = marts.execute(f"select resource_id, day, difference from ({SQL.read_text()}) "
                          "where difference is distinct from 0").fetchall()
    assert diffs == []
    # every cause's waste, owned or not, ties to billed_segments' categories exactly
    by_cat = dict(marts.execute("select category, sum(amount) from marts.billed_segments group by all").fetchall())
    by_cause = dict(marts.execute("select cause, sum(amount) from marts.waste group by all").fetchall())
    # an idle gap or unobserved compute is bill_without_workload on a resource-day no GPU
    # workload ran on, else idle_between_jobs / unobserved; the gap of a node Ready before the
    # pod it was brought up for is scheduled is unschedulable_wait
    assert (by_cause.get("idle_between_jobs", 0) + by_cause.get("unobserved", 0)
            + by_cause.get("bill_without_workload", 0) + by_cause.get("unschedulable_wait", 0)
            ) == by_cat["idle_gap"] + by_cat["unobserved"]
    idle_days = marts.execute("""
        select count(*) from marts.waste w
        where w.cause = 'bill_without_workload' and exists (
            select 1 from marts.workloads o where o.resource_id = w.resource_id
            and o.scheduled_at < w.day::timestamptz + interval 1 day
            and o.window_end_at > w.day::timestamptz)""").fetchone()[0]
    assert idle_days == 0
    assert by_cause["bill_without_workload"] > 0 and by_cause["idle_between_jobs"] > 0
    # a startup segment's seconds in runs its startup probe killed are probe_restarts
    assert by_cause["startup"] + by_cause["probe_restarts"] == by_cat["startup"]
    assert by_cause["probe_restarts"] > 0 and by_cause["unschedulable_wait"] > 0
    assert (by_cause.get("keda_cooldown", 0) + by_cause.get("hpa_scale_down", 0)
            + by_cause.get("tail_after_exit", 0)) == by_cat["tail"]
    assert by_cause["storage_lingering"] == by_cat["storage_lingering"]
    assert by_cause["serverless_idle"] == by_cat["idle"] + by_cat.get("rounding", 0)
    # unattributed money is explicit rows with no owner, and a share of the waste we can state
    total, unattributed = marts.execute(
        "select sum(amount), sum(amount) filter (where team = '__unattributed__') from marts.waste").fetchone()
    assert 0 < unattributed < total
    assert marts.execute("select count(*) from marts.waste where team = '__unattributed__' "
                         "and (namespace is not null or owner_kind is not null or owner_name is not null)"
                         ).fetchone() == (0,)
    # an owner without a namespace is a node, named by its team label
    assert marts.execute("select count(*) from marts.waste where team <> '__unattributed__' "
                         "and namespace is null and owner_kind is distinct from 'Node'").fetchone() == (0,)
    print(f"__unattributed__: {unattributed:.2f} of {total:.2f} USD of waste ({unattributed / total:.1%})")


def test_a_gap_between_two_owners_is_shared_by_their_gpu_seconds(tmp_path):
    """The ScaledJob case with one more pod on node gpu-c before the Job's: tools/probe-…
    (team vision, no KEDA owner; its ownerReferences name the Job probe-q1w2e) scheduled 08:59:00, Ready 08:59:10, finished 08:59:40. The
    30 s gap to the Job's pod (scheduled 09:00:10) lies between two owners: vision held the GPU
    40 s that day, ScaledJob embed 5390 s (09:00:10–10:30:00), so vision gets 30 × 40 / 5430 s
    (220 ms, the cut's lost millisecond to the larger share) and $0.03 × 40 / 5430."""
    case = tmp_path / "two-owners"
    shutil.copytree(KEDA / "scaledjob", case)
    watch = case / "pods-watch.jsonl"
    lines = watch.read_text(encoding="utf-8").splitlines()
    moved = {"09:00:10": "08:59:00", "09:00:20": "08:59:05", "09:01:00": "08:59:10", "10:30:00": "08:59:40"}
    probe = []
    for line in lines:
        for a, b in moved.items():
            line = line.replace(f"2026-06-01T{a}Z", f"2026-06-01T{b}Z")
        line = (line.replace("embed-x7k2p", "probe-q1w2e").replace('"ml-batch"', '"tools"')
                .replace('"team":"nlp"', '"team":"vision"').replace('"scaledjob.keda.sh/name":"embed",', "")
                .replace('"resourceVersion":"300', '"resourceVersion":"200'))
        probe.append(line)
    watch.write_text("\n".join(probe + lines) + "\n", encoding="utf-8")
    vision = ("tools", "Job", "probe-q1w2e", "vision")
    nlp = ("ml-batch", "ScaledJob", "embed", "nlp")
    want = [("rpc3emb", "startup", *UN, Decimal("60.000"), usd(60)),
            ("rpc3emb", "startup", *vision, Decimal("10.000"), usd(10)),
            ("rpc3emb", "idle_between_jobs", *vision, Decimal("0.220"), Decimal("0.000220994475")),
            ("rpc3emb", "idle_between_jobs", *nlp, Decimal("29.780"), Decimal("0.029779005525")),
            ("rpc3emb", "startup", *nlp, Decimal("50.000"), usd(50)),
            ("rpc3emb", "tail_after_exit", *nlp, Decimal("900.000"), usd(900))]
    got = waste_at(case, tmp_path / "two.duckdb")
    assert sorted(got, key=str) == sorted(want, key=str)


def test_recon_waste_sums_the_mart_by_each_dimension(sim_run):
    """`recon waste --by X` gives every row of marts.waste once: its total is the mart's, for
    each dimension, and the unattributed money is a row of its own."""
    import re
    from decimal import Decimal

    import duckdb
    from typer.testing import CliRunner

    from recon.cli import app

    con = duckdb.connect(str(sim_run["db"]), read_only=True)
    try:
        total, unattributed = con.execute(
            "select sum(amount), sum(amount) filter (where team = '__unattributed__') "
            "from marts.waste").fetchone()
    finally:
        con.close()
    for by in ("team", "namespace", "owner", "cause"):
        r = CliRunner().invoke(app, ["waste", "--db", str(sim_run["db"]), "--by", by],
                               terminal_width=200)
        assert r.exit_code == 0, r.output
        shown = Decimal(re.search(r"Total waste: ([\d,.]+) USD", r.output).group(1).replace(",", ""))
        assert shown == total.quantize(Decimal("0.01")), (by, shown, total)
    r = CliRunner().invoke(app, ["waste", "--db", str(sim_run["db"]), "--by", "team"],
                           terminal_width=200)
    row = next(line for line in r.output.splitlines() if "__unattributed__" in line)
    assert f"{unattributed:,.2f}" in row
    r = CliRunner().invoke(app, ["waste", "--db", str(sim_run["db"]), "--by", "pod"])
    assert r.exit_code == 2 and "expected team, namespace, owner, cause" in r.output
