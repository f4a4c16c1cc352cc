"""The simulator's shared-GPU scenario (recon/simulate/gpushare.py) against the marts: its truth
comes from the scenario's own timeline, not from the SQL.

One L40S node, time-sliced 4 ways (NVIDIA k8s-device-plugin README, "With CUDA Time-Slicing":
"the plugin would now advertise 80 nvidia.com/gpu resources" for 8 GPUs × 10 replicas, so
capacity 4 = 1 GPU × 4), two pods of `nvidia.com/gpu: 1` overlapping for 3,000 s.
"""

from datetime import date
from decimal import Decimal

import pytest

from recon.pipeline import run
from recon.simulate import simulate
from recon.simulate.gpushare import POD_ID, RATE, timeline
from tests.flows.duck import q

DAY = date(2026, 6, 1)
CLOSE = Decimal("0.000001")


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    base = tmp_path_factory.mktemp("gpushare")
    out = simulate(base / "in", days=1, nodes=1, endpoints=1, start_day=DAY, gpu_sharing=True)
    db = base / "recon.duckdb"
    run(base / "in", db)
    return out["truth"], db


def test_the_scenario_is_off_unless_asked(tmp_path):
    out = simulate(tmp_path / "in", days=1, nodes=1, endpoints=1, start_day=DAY)
    assert "gpu_sharing" not in out["truth"]
    assert not (tmp_path / "in" / "k8s" / "cluster=sim-cluster" / "gpushare-watch.jsonl").exists()


def test_the_oversubscribed_node_day_is_one_finding_with_the_whole_gpu_overcharge(sim):
    """b is scheduled 600 s after a is ready and a runs 3,600 s: both hold a replica for
    3,600 − 600 = 3,000 s. Whole-GPU pricing: 2 replicas × $0.86/h × 3,000 s / 3,600 = $1.4333…;
    the fractional split: 2 × 1/4 of that = $0.3583…; at stake $1.075."""
    truth, db = sim
    t = timeline(DAY)
    both = t["a_finished"] - t["b_scheduled"]
    assert both == 3000
    want = RATE * both / 3600 * 2 - RATE * both / 3600 * 2 / 4
    assert want == Decimal("1.075") == Decimal(truth["gpu_sharing"]["amount_at_stake"])
    rows = q(db, "select code, seconds, amount_at_stake, namespace, team, message from marts.findings "
                 "where resource_id = ?", [POD_ID])
    assert [r[0] for r in rows] == ["GPU_SHARED_OVERSUBSCRIBED"]
    [(code, secs, amount, ns, team, msg)] = rows
    assert secs == both and abs(amount - want) < CLOSE
    # the two pods are different teams' Jobs: no one owner
    assert (ns, team) == (None, None)
    assert "ml-batch/embed-nightly-k4x8z 1, ml-eval/caption-eval-p2w9r 1" in msg
    assert {"code": code, "resource_id": POD_ID, "day": DAY.isoformat()} in truth["findings"]


def test_each_pod_pays_a_quarter_of_the_gpu_for_its_time(sim):
    """a holds its replica [scheduled, finished) = 60 s starting + 3,600 s = 3,660 s; b from 600 s
    into a's run until 1,200 s after a finished: 3,600 − 600 + 1,200 = 4,200 s. Each pays
    $0.86/h × its seconds × 1/4, whether the segment is startup or busy, and the unheld rest of
    its own startup; the rest is idle."""
    truth, db = sim
    t = timeline(DAY)
    assert (t["a_finished"] - t["a_scheduled"], t["b_finished"] - t["b_scheduled"]) == (3660, 4200)
    got = dict(q(db, "select team, sum(amount) from marts.allocation where resource_id = ? "
                     "and category in ('busy', 'startup') and team <> '__idle__' group by team", [POD_ID]))
    want = {"nlp": RATE / 3600 * (t["a_finished"] - t["a_scheduled"]) / 4,
            "vision": RATE / 3600 * (t["b_finished"] - t["b_scheduled"]) / 4}
    assert {k: Decimal(v) for k, v in truth["gpu_sharing"]["team_amounts"].items()} == want
    # and the rest of a startup segment, which no pod held: a startup segment is the starting
    # pods' (int_resource__segment_owners, as marts.waste): a starts alone, 60 s with 3 of 4
    # replicas unheld. b starts while a works: that stretch is busy (a's work), and the replicas
    # nobody held in busy time stay __idle__
    want["nlp"] += RATE / 3600 * (t["a_ready"] - t["a_scheduled"]) * 3 / 4
    assert set(got) == set(want)
    for team, amount in want.items():
        assert abs(got[team] - amount) < CLOSE, team
    assert q(db, "select gpu_fraction from marts.workloads where resource_id = ?", [POD_ID]) == [
        (Decimal("0.25"),), (Decimal("0.25"),)]
    billed = q(db, "select sum(billed_amount) from marts.resource_day where resource_id = ?", [POD_ID])[0][0]
    total = q(db, "select sum(amount) from marts.allocation where resource_id = ?", [POD_ID])[0][0]
    assert total == billed


def test_its_resource_day_matches_the_timeline(sim):
    truth, db = sim
    [row] = [r for r in truth["resource_days"] if r["resource_id"] == POD_ID]
    got = dict(q(db, "select category, seconds from marts.billed_segments where resource_id = ? "
                     "and seconds > 0", [POD_ID]))
    assert got == {k: Decimal(v) for k, v in row["categories"].items()}


def test_recon_simulate_writes_the_scenario_when_asked(tmp_path):
    """`recon simulate --gpu-sharing` is the same switch from the command line: its folder holds
    the shared node's watch file and its ground truth the finding; without it, neither."""
    import json

    from typer.testing import CliRunner

    from recon.cli import app

    args = ["simulate", "--days", "1", "--nodes", "1", "--endpoints", "1", "--start", DAY.isoformat()]
    for flag, want in ((["--gpu-sharing"], True), ([], False)):
        out = tmp_path / ("on" if want else "off")
        r = CliRunner().invoke(app, [*args, "--out", str(out), *flag], terminal_width=200)
        assert r.exit_code == 0, r.output
        watch = out / "k8s" / "cluster=sim-cluster" / "gpushare-watch.jsonl"
        truth = json.loads((out / "expected" / "ground_truth.json").read_text())
        assert watch.exists() is want
        assert ({"code": "GPU_SHARED_OVERSUBSCRIBED", "resource_id": POD_ID, "day": DAY.isoformat()}
                in truth["findings"]) is want
