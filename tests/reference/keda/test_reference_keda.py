"""KEDA's scale to zero, the HPA's N → 1 and a ScaledJob's nodes, from hand-made files in the
formats the API server, kubectl and Runpod emit (sources: tests/reference/keda/README.md).

Every case's bill is cut at $3.60 an hour ($0.001 a second: recon.toml), one GPU per node, so
the money at stake is the seconds times RATE / 3600.
"""

from decimal import Decimal
from pathlib import Path

import pytest

from recon.db import connect
from recon.pipeline import run

HERE = Path(__file__).parent
RATE = Decimal("3.60")
DEC = Decimal("0.000000000001")


def findings(case: str, tmp_path) -> list[tuple]:
    db = tmp_path / f"{case}.duckdb"
    res = run(HERE / case, db)
    assert res.quarantined == 0 and res.staging_quarantined == 0, res.files
    con = connect(db, read_only=True)
    try:
        return con.execute("select code, resource_id, day::varchar, seconds, amount_at_stake, message "
                           "from marts.findings order by code, resource_id").fetchall()
    finally:
        con.close()


def money(seconds: int) -> Decimal:
    return (Decimal(seconds) * RATE / 3600).quantize(DEC)


def test_scaled_to_zero_35_minutes_after_the_cooldown_ended(tmp_path):
    """lastActiveTime 10:20:00 (the watch's third version; the sixth, after a reactivation at
    12:00, says 12:00 and cannot date this scale to zero), cooldownPeriod 300 s: due 10:25:00.
    KEDAScaleTargetDeactivated at 11:00:00. The replica's end 15 s later is its termination."""
    [f] = findings("late", tmp_path)
    code, rid, day, secs, amount, msg = f
    code, rid, _, secs, amount, msg = f
    late = (11 * 3600) - (10 * 3600 + 20 * 60 + 300)
    assert late == 35 * 60
    assert (code, rid, day) == ("SCALE_TO_ZERO_LATE", "rpa1llm", "2026-06-01")
    assert secs == late and amount == money(late)
    assert "last active 2026-06-01T10:20:00Z" in msg and "= 2026-06-01T10:25:00Z" in msg
    assert "status.lastActiveTime as the collector saw it (6 versions)" in msg
    assert f"{late} s after it was due" in msg


def test_a_timely_scale_to_zero_is_no_finding(tmp_path):
    """Due 10:25:00 (10:20:00 + 300 s), deactivated 10:25:20 (within pollingInterval 30 s +
    scale_to_zero_tolerance_seconds 60 s). The replica drains for 8 min of its
    terminationGracePeriodSeconds 600: normal, neither late nor a node tail."""
    assert findings("timely", tmp_path) == []


def test_n_to_1_is_the_hpas_and_the_node_tail_after_it_is_the_node_scale_down(tmp_path):
    """2 → 1 by the HPA at 10:10 (stabilizationWindowSeconds 600 in the ScaledObject's
    advanced.horizontalPodAutoscalerConfig): replica q7m4w ends 10:10:10, its node rpb2llm bills
    until 10:40:10. cooldownPeriod is not the HPA's: the node may stay for the node scale-down
    (scale_down_grace_seconds 60 s) + tail_tolerance_seconds 60 s. The last replica's 1 → 0 was
    on time (10:30:00 + 300 s = 10:35:00, deactivated 10:35:10)."""
    [f] = findings("hpa-scale-in", tmp_path)
    code, rid, _, secs, amount, msg = f
    tail = 30 * 60
    beyond = tail - (60 + 60)
    assert (code, rid) == ("BILLED_AFTER_EXIT", "rpb2llm")
    assert secs == beyond and amount == money(beyond)
    assert f"for {tail} s after its last task (ml-serve/llm-6d8f9c7b5-q7m4w)" in msg
    assert "Expected tail at most 120 s" in msg
    assert "HPA of ScaledObject ml-serve/llm scaled the replica in (N → 1)" in msg
    assert "stabilizationWindowSeconds 600 s" in msg and "cooldownPeriod applies only to 1 → 0" in msg
    assert "scale_down_grace_seconds 60 s + tail_tolerance_seconds 60 s" in msg


def test_a_scaledjobs_node_tail_is_the_node_scale_down_not_a_cooldown(tmp_path):
    """A ScaledJob has no cooldownPeriod: its Job's pod finished 10:30:00, the node bills until
    10:45:00, and only the node scale-down (60 s) + tolerance (60 s) is expected."""
    [f] = findings("scaledjob", tmp_path)
    code, rid, _, secs, amount, msg = f
    beyond = 15 * 60 - (60 + 60)
    assert (code, rid) == ("BILLED_AFTER_EXIT", "rpc3emb")
    assert secs == beyond and amount == money(beyond)
    assert "ScaledJob ml-batch/embed: no cooldownPeriod" in msg
    assert "node scale-down (cluster autoscaler or the provider)" in msg
    assert "KEDA cooldownPeriod 300 s" not in msg


def owners(case: str, tmp_path) -> list[tuple]:
    db = tmp_path / f"{case}.duckdb"
    run(HERE / case, db)
    con = connect(db, read_only=True)
    try:
        return con.execute("select code, resource_id, namespace, owner_kind, owner_name, team "
                           "from marts.findings order by code, resource_id").fetchall()
    finally:
        con.close()


@pytest.mark.parametrize(("case", "want"), [
    # late/scaledobjects-watch.jsonl: ScaledObject ml-serve/llm targets Deployment llm, whose
    # replica llm-6d8f9c7b5-… (late/pods-watch.jsonl) carries team=search. The delay is the
    # ScaledObject's (its cooldownPeriod and pollingInterval), so the ScaledObject owns it.
    ("late", ("SCALE_TO_ZERO_LATE", "rpa1llm", "ml-serve", "ScaledObject", "llm", "search")),
    # scaledjob/scaledjobs.json: ScaledJob ml-batch/embed; its Job embed-x7k2p's pod
    # (scaledjob/pods-watch.jsonl) carries team=nlp and ended the node's last task.
    ("scaledjob", ("BILLED_AFTER_EXIT", "rpc3emb", "ml-batch", "ScaledJob", "embed", "nlp")),
    # hpa-scale-in: the tail after replica q7m4w, a replica of ScaledObject ml-serve/llm's target
    ("hpa-scale-in", ("BILLED_AFTER_EXIT", "rpb2llm", "ml-serve", "ScaledObject", "llm", "search")),
])
def test_a_finding_names_the_owner_whose_setting_caused_it(case, want, tmp_path):
    assert owners(case, tmp_path) == [want]


@pytest.mark.parametrize("case", ["late", "timely", "hpa-scale-in", "scaledjob"])
def test_every_file_of_the_corpus_cites_its_source(case):
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    for p in sorted((HERE / case).iterdir()):
        assert f"`{case}/{p.name}`" in readme, p
