"""`recon whatif` re-prices tails and idle; `recon check` verifies scheduling in four steps."""

import re
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

from engine.build import World, t
from typer.testing import CliRunner

from recon.cli import app
from recon.db import connect
from recon.outputs.check import run_checks
from recon.outputs.whatif import whatif
from recon.pipeline import run

DAY = date(2026, 6, 1)


def test_whatif_prices_a_tail_the_settings_explain_and_leaves_out_one_they_do_not(tmp_path):
    """A node billed an hour after its task did not scale down as any setting says: a shorter
    cooldown is not credited with that hour (it "saved" $3.48 of it). A node that left within
    the expected tail is re-priced: cooldown + scale-down 60 + 60 s instead of 300 + 60 s."""
    w = World(tmp_path / "late")
    w.node("n1", "pod1", t("10:00"), t("10:02"))
    w.pod("job-a", "n1", t("10:03"), t("10:05"), t("11:00"))
    w.compute("pod1", t("10:00"), t("12:00"), Decimal("3.60"))  # a one-hour tail at $0.001/s
    run(w.write(), tmp_path / "late.duckdb")
    con = connect(tmp_path / "late.duckdb", read_only=True)
    res = whatif(con, DAY, DAY, cooldown_s=60, grace_s=60)
    assert res == [] and res.not_scaled_down == 1
    r = CliRunner().invoke(app, ["whatif", "--db", str(tmp_path / "late.duckdb"), "--cooldown", "60",
                                 "--scale-down-delay", "60"], terminal_width=200)
    assert r.exit_code == 0 and "Total saved: 0.00 USD" in r.output
    assert "1 compute session(s) left out: their nodes did not scale down" in r.output
    w = World(tmp_path / "ok")
    w.node("n1", "pod1", t("10:00"), t("10:02"))
    w.pod("job-a", "n1", t("10:03"), t("10:05"), t("11:00"))
    w.compute("pod1", t("10:00"), t("11:06"), Decimal("3.60"))  # 360 s ≤ 300 + 60 + 60
    run(w.write(), tmp_path / "ok.duckdb")
    con = connect(tmp_path / "ok.duckdb", read_only=True)
    [s] = whatif(con, DAY, DAY, cooldown_s=60, grace_s=60)
    assert (s.workload, s.team, s.kind) == ("job-a", "vision", "tail (unknown)")
    assert (s.observed_seconds, s.whatif_seconds) == (360, 120)  # min(360, 300 + 60), min(360, 60 + 60)
    assert (s.baseline_usd, s.whatif_usd, s.saved_usd) == (Decimal("0.36"), Decimal("0.12"), Decimal("0.24"))
    [s] = whatif(con, DAY, DAY, cooldown_s=7200)
    assert s.saved_usd == 0  # a longer cooldown never saves what was not billed


REFERENCE = Path(__file__).parent / "reference" / "keda"


def test_whatif_a_longer_cooldown_never_saves_and_the_baseline_is_shown(tmp_path):
    """tests/reference/keda/timely: KEDA scaled rpa1llm's replica to zero on time after
    cooldownPeriod 300 s; the node left 60 s after the replica ($0.001/s). The model at today's
    settings: 300 s of cooldown while the replica lived + 60 s of node scale-down = 360 s, $0.36.
    --cooldown 600 (longer than the configured 300) costs 300 s more: −$0.30, never a saving
    (it was $0.00 saved only because the observed tail bounded it)."""
    db = tmp_path / "db.duckdb"
    run(REFERENCE / "timely", db)
    con = connect(db, read_only=True)
    [s] = whatif(con, DAY, DAY, cooldown_s=600)
    assert s.kind == "tail (scale_to_zero)"
    assert (s.observed_seconds, s.whatif_seconds) == (300 + 60, 600 + 60)
    assert s.baseline_usd == Decimal(360) / 1000 and s.whatif_usd == Decimal(660) / 1000
    assert s.saved_usd == -Decimal(300) / 1000
    [s] = whatif(con, DAY, DAY, cooldown_s=60)
    assert s.saved_usd == Decimal(300 - 60) / 1000
    [s] = whatif(con, DAY, DAY, stabilization_s=60)  # N → 1 is the HPA's: not this replica's
    assert s.saved_usd == 0
    r = CliRunner().invoke(app, ["whatif", "--db", str(db), "--cooldown", "600"], terminal_width=200)
    assert r.exit_code == 0, r.output
    assert "Baseline (today's settings): 0.36 USD; what-if: 0.66 USD" in r.output
    assert "Total saved: -0.30 USD" in r.output


def test_whatif_stabilization_reprices_the_hpas_n_to_1(tmp_path):
    """tests/reference/keda/hpa-scale-in: rpb2llm's replica went in the HPA's 2 → 1, but its
    node billed 30 min after it (beyond the expected 120 s): left out. rpa1llm's replica went
    1 → 0 on time: --stabilization does not touch it, --cooldown does."""
    db = tmp_path / "db.duckdb"
    run(REFERENCE / "hpa-scale-in", db)
    con = connect(db, read_only=True)
    res = whatif(con, DAY, DAY, stabilization_s=60)
    assert res.not_scaled_down == 1 and [(s.resource_id, s.saved_usd) for s in res] == [("rpa1llm", 0)]


def test_whatif_stabilization_on_the_simulated_hpa_scale_ins(sim_run):
    """The simulated ScaledObjects' 2 → 1 each day (llm-serve: recon.simulate.keda, llm-warm:
    recon.simulate.hpa_slow; both the default 300 s window): a 60 s window instead takes 240 s
    off each, at the node's billed cost per second."""
    con = connect(sim_run["db"], read_only=True)
    res = [s for s in whatif(con, DAY, DAY + timedelta(days=1), stabilization_s=60)
           if s.kind == "tail (hpa_scale_in)"]
    assert sorted(s.workload for s in res) == ["llm-serve"] * 2 + ["llm-warm"] * 2
    for s in res:
        assert s.observed_seconds - s.whatif_seconds == 300 - 60
        assert s.saved_usd > 0 and s.saved_usd == s.baseline_usd - s.whatif_usd


def test_whatif_idle_timeout_on_the_simulated_endpoints(sim_run):
    con = connect(sim_run["db"], read_only=True)
    shorter = {s.workload: s.saved_usd for s in whatif(con, DAY, DAY, idle_timeout_s=2)}
    same = {s.workload: s.saved_usd for s in whatif(con, DAY, DAY, idle_timeout_s=5)}
    # the fleet's two endpoints and recon/simulate/serverless_extras.py's two, one worker session
    # each there: (5 − 2) s × $0.00031 = $0.00093
    assert len(shorter) == 4 and all(v > 0 for v in shorter.values())
    assert shorter["simactive01"] == shorter["simstuck01"] == Decimal("0.00093")
    assert all(v == 0 for v in same.values())


def test_check_names_what_fails_and_passes_a_clean_day(sim_run, tmp_path):
    con = connect(sim_run["db"], read_only=True)
    steps = run_checks(con, DAY)
    assert [s.passed for s in steps] == [False, False, False, False]
    assert any("Insufficient nvidia.com/gpu" in line for line in steps[0].lines)
    assert any("BILLED_AFTER_EXIT" in line for line in steps[2].lines)
    assert any("SCALE_TO_ZERO_LATE" in line for line in steps[2].lines)
    assert any("RATE_MISMATCH" in line for line in steps[3].lines)  # the H100 plan not applied
    # the per-kind lines: seconds as a reader takes them, the last stop in UTC ISO
    kinds = [line for line in steps[3].lines if not line.startswith("FAIL")]
    assert kinds and not any(re.search(r"\d\.\d*0 s\b", line) for line in kinds), kinds
    assert re.search(r"last compute stop \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", kinds[0]), kinds[0]
    w = World(tmp_path / "clean")
    w.node("n1", "pod1", t("10:00"), t("10:02"))
    w.pod("job-a", "n1", t("10:03"), t("10:05"), t("11:00"))
    w.compute("pod1", t("10:00"), t("11:00") + timedelta(minutes=6), Decimal("0.86"))
    run(w.write(), tmp_path / "clean.duckdb")
    con = connect(tmp_path / "clean.duckdb", read_only=True)
    assert [s.passed for s in run_checks(con, DAY)] == [True, True, True, True]
    r = CliRunner().invoke(app, ["check", "--day", "2026-06-01", "--db", str(tmp_path / "clean.duckdb")])
    assert r.exit_code == 0 and r.output.count("PASS") == 4
    # the same work with no bill line: the day's bill has not landed, and step 4 says so (it
    # must not pass with its own line reading "billed $0.00 vs formula $0.86")
    w = World(tmp_path / "unbilled")
    w.node("n1", "pod1", t("10:00"), t("10:02"))
    w.pod("job-a", "n1", t("10:03"), t("10:05"), t("11:00"))
    w.inventory.append((t("10:01"), [{"id": "pod1", "status": "RUNNING", "cost": 0.86,
                                      "gpu": {"id": "L40S", "count": 1}}]))
    run(w.write(), tmp_path / "unbilled.duckdb")
    con = connect(tmp_path / "unbilled.duckdb", read_only=True)
    steps = run_checks(con, DAY)
    assert [s.passed for s in steps] == [True, True, True, False]
    assert any(line.startswith("FAIL AWAITING_BILL: the day's provider bill has not landed (1 ")
               for line in steps[3].lines), steps[3].lines
    gap = [re.search(r"billed \$0\.00 vs formula \$(\d+\.\d\d) \(\$(\d+\.\d\d) under the "
                     r"formula\)", line) for line in steps[3].lines if line.startswith("instance")]
    assert gap and gap[0] and gap[0][1] == gap[0][2] and Decimal(gap[0][1]) > 0, steps[3].lines
    # the day's bill landed with a line for another pod only: pod1's work is unbilled
    w.node("n2", "pod2", t("10:00"), t("10:02"))
    w.pod("job-b", "n2", t("10:03"), t("10:05"), t("11:00"))
    w.compute("pod2", t("10:00"), t("11:00") + timedelta(minutes=6), Decimal("0.86"))
    run(w.write(), tmp_path / "partly.duckdb")
    con = connect(tmp_path / "partly.duckdb", read_only=True)
    steps = run_checks(con, DAY)
    assert steps[3].passed is False
    assert any(line.startswith("FAIL ACTIVITY_WITHOUT_BILLING pod1") for line in steps[3].lines)
    assert not any("AWAITING_BILL" in line for line in steps[3].lines)


def test_check_counts_the_gpu_nodes_up_on_the_day(tmp_path):
    """Step 1 counts the GPU nodes up during the day and the most GPUs up at once, not every
    node registered before the day's end, gone or not."""
    w = World(tmp_path)
    w.node("gone", "pod0", t("01:00"), t("01:02"), removed=t("05:00"), gpus=4)  # day 1 only
    w.node("n1", "pod1", t("10:00", 1), t("10:02", 1), removed=t("12:00", 1), gpus=2)
    w.node("n2", "pod2", t("11:00", 1), t("11:02", 1), gpus=1)  # overlaps n1 11:00-12:00
    w.node("n3", "pod3", t("13:00", 1), t("13:02", 1), removed=t("14:00", 1), gpus=2)
    w.node("later", "pod4", t("09:00", 2), t("09:02", 2), gpus=8)  # the day after
    for pid, a, b in (("pod0", t("01:00"), t("05:00")), ("pod1", t("10:00", 1), t("12:00", 1)),
                      ("pod2", t("11:00", 1), t("23:00", 1)),
                      ("pod3", t("13:00", 1), t("14:00", 1)),
                      ("pod4", t("09:00", 2), t("10:00", 2))):
        w.compute(pid, a, b, Decimal("0.86"))
    run(w.write(), tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    lines = {d: run_checks(con, d)[0].lines[0] for d in (DAY, DAY + timedelta(days=1))}
    assert lines[DAY] == ("1 GPU node(s) up during the day, 4 nvidia.com/gpu between them, "
                          "at most 4 at once")
    assert lines[DAY + timedelta(days=1)] == (
        "3 GPU node(s) up during the day, 5 nvidia.com/gpu between them, at most 3 at once")
    # a day with nothing billed or active: an error, not four passes
    r = CliRunner().invoke(app, ["check", "--day", "2026-07-01", "--db", str(tmp_path / "db.duckdb")])
    assert r.exit_code == 2 and "no billed or active resource on 2026-07-01" in r.output
    assert "PASS" not in r.output
