"""KEDA's scale to zero, the HPA's N → 1 (on time and slow) and a ScaledJob's nodes, from hand-made files in the
formats the API server, kubectl and Runpod emit (sources: tests/reference/keda/README.md).

Every case's bill is cut at $3.60 an hour ($0.001 a second: recon.toml), one GPU per node, so
the money at stake is the seconds times RATE / 3600.
"""

from decimal import Decimal
from pathlib import Path

import pytest

from recon.db import connect
from recon.pipeline import run
from tests.flows.duck import q

HERE = Path(__file__).parent
RATE = Decimal("3.60")
DEC = Decimal("0.000000000001")


def findings(case: str, tmp_path) -> list[tuple]:
    db = tmp_path / f"{case}.duckdb"
    res = run(HERE / case, db)
    assert res.quarantined == 0 and res.staging_quarantined == 0, res.files
    return q(db, "select code, resource_id, day::varchar, seconds, amount_at_stake, message "
                 "from marts.findings order by code, resource_id")


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


def test_the_hpa_held_two_replicas_long_after_demand_fell(tmp_path):
    """hpa-slow: KEDA's first poll with no trigger active is 10:20:30 (the Active condition's
    turn to False, ScalerCooldown; lastActiveTime 10:20:00). From then every HPA recommendation
    is its minReplicas 1 (minReplicaCount 0 → 1: kedacore/keda controllers/keda/hpa.go,
    getHPAMinReplicas), and the HPA scales in once every recommendation of the last
    stabilizationWindowSeconds is lower (kubernetes pkg/controller/podautoscaler/horizontal.go,
    stabilizeRecommendationWithBehaviors: "ScaleDownStabilized", the max of the recommendations
    newer than now − the window). The ScaledObject sets no window: 300 s (k8s.io/api
    autoscaling/v2 HPAScalingRules, "For scale down: 300"). Due 10:20:30 + 300 s +
    hpa_scale_down_tolerance_seconds 60 s = 10:26:30. The HPA's SuccessfulRescale "New size: 1;
    reason: All metrics below target" is at 10:45:00 and replica q7m4w's deletion was requested
    then (deletionTimestamp 10:45:30 − grace 30 s). cooldownPeriod 1800 s (1 → 0 only:
    kedacore/keda#6844) ends at 10:20:00 + 1800 s = 10:50:00, after it: not a cap here. The
    surplus is [10:26:30, 10:45:00) on rpb2llm, at $3.60/h, 1 GPU of 1."""
    [f] = findings("hpa-slow", tmp_path)
    code, rid, day, secs, amount, msg = f
    held = (10 * 3600 + 45 * 60) - (10 * 3600 + 20 * 60 + 30 + 300 + 60)
    assert held == 1110
    assert (code, rid, day) == ("HPA_SCALE_DOWN_SLOW", "rpb2llm", "2026-06-01")
    assert secs == held and amount == money(held) == Decimal("1.11")
    assert "stabilizationWindowSeconds 300 s + hpa_scale_down_tolerance_seconds 60 s" in msg
    assert "demand fell by 2026-06-01T10:20:30Z" in msg and "last active 2026-06-01T10:20:00Z" in msg
    assert "due to scale in by 2026-06-01T10:26:30Z" in msg
    assert 'it scaled in at 2026-06-01T10:45:00Z (SuccessfulRescale "New size: 1; reason: All metrics' in msg
    assert "kept 2 replicas of ml-serve/llm (its minReplicas 1) for 1110 s" in msg
    assert "1 surplus replica(s) on rpb2llm (llm-6d8f9c7b5-q7m4w): 1110 s billed." in msg


def test_a_scale_in_just_inside_the_window_and_tolerance_is_no_finding(tmp_path):
    """hpa-prompt: as hpa-slow, but the HPA scales in at 10:26:20 (q7m4w's deletion requested
    then, finishedAt 10:26:30), 10 s before 10:20:30 + 300 s + 60 s = 10:26:30. Its node
    leaves 50 s after the pod (within scale_down_grace_seconds 60 s + tail_tolerance_seconds
    60 s), and KEDA's 1 → 0 at 10:50:20 is within 10:20:00 + 1800 s + pollingInterval 30 s +
    60 s: nothing is late."""
    assert 10 * 3600 + 26 * 60 + 20 < 10 * 3600 + 20 * 60 + 30 + 300 + 60
    assert findings("hpa-prompt", tmp_path) == []


def test_the_tolerance_is_the_configured_one(tmp_path):
    """hpa-prompt with [thresholds] hpa_scale_down_tolerance_seconds = 0: due 10:20:30 + 300 s =
    10:25:30, and q7m4w's deletion was requested at 10:26:20: 50 s held beyond it."""
    import shutil

    case = tmp_path / "in"
    shutil.copytree(HERE / "hpa-prompt", case)
    with open(case / "recon.toml", "a", encoding="utf-8") as f:
        f.write("\n[thresholds]\nhpa_scale_down_tolerance_seconds = 0\n")
    db = tmp_path / "w.duckdb"
    run(case, db)
    [(code, rid, secs, amount, msg)] = q(db, "select code, resource_id, seconds, amount_at_stake, message "
                                             "from marts.findings")
    held = (10 * 3600 + 26 * 60 + 20) - (10 * 3600 + 20 * 60 + 30 + 300)
    assert (code, rid, secs, amount) == ("HPA_SCALE_DOWN_SLOW", "rpb2llm", held, money(held))
    assert "hpa_scale_down_tolerance_seconds 0 s" in msg and "it scaled in at 2026-06-01T10:26:20Z" in msg


def test_a_surplus_replica_whose_end_is_not_seen_is_held_until_its_nodes_bill_ends(tmp_path):
    """hpa-slow without q7m4w's last three watch lines (deletion requested, terminated, DELETED):
    its end is unknown. It is held no later than its node's compute: rpb2llm bills until 10:46:00
    (billing-pods.json: 2.76 at $3.60/h in the 10:00 hour = 2760 s), before KEDA's own deadline
    (lastActiveTime 10:20:00 + cooldownPeriod 1800 s = 10:50:00). So q7m4w (10:46:00) is still
    the replica held shorter than k2x9p (deletion requested 10:50:21), and the surplus:
    [10:26:30, 10:46:00)."""
    import shutil

    case = tmp_path / "in"
    shutil.copytree(HERE / "hpa-slow", case)
    lines = (case / "pods-watch.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    assert all("q7m4w" in line for line in lines[9:]) and len(lines) == 12
    (case / "pods-watch.jsonl").write_text("".join(lines[:9]), encoding="utf-8")
    db = tmp_path / "w.duckdb"
    run(case, db)
    [(rid, secs, amount, msg)] = q(db, "select resource_id, seconds, amount_at_stake, message "
                                       "from marts.findings where code = 'HPA_SCALE_DOWN_SLOW'")
    billed = (10 * 3600 + 46 * 60) - (10 * 3600 + 26 * 60 + 30)
    assert (rid, secs, amount) == ("rpb2llm", billed, money(billed))
    assert f"for {billed} s beyond" in msg and f"(llm-6d8f9c7b5-q7m4w): {billed} s billed." in msg


def owners(case: str, tmp_path) -> list[tuple]:
    db = tmp_path / f"{case}.duckdb"
    run(HERE / case, db)
    return q(db, "select code, resource_id, namespace, owner_kind, owner_name, team "
                 "from marts.findings order by code, resource_id")


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
    # hpa-slow: the ScaledObject whose HPA held replica q7m4w (team=search) past its window
    ("hpa-slow", ("HPA_SCALE_DOWN_SLOW", "rpb2llm", "ml-serve", "ScaledObject", "llm", "search")),
])
def test_a_finding_names_the_owner_whose_setting_caused_it(case, want, tmp_path):
    assert owners(case, tmp_path) == [want]


@pytest.mark.parametrize("case", ["late", "timely", "hpa-scale-in", "hpa-slow", "hpa-prompt", "scaledjob"])
def test_every_file_of_the_corpus_cites_its_source(case):
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    for p in sorted((HERE / case).iterdir()):
        assert f"`{case}/{p.name}`" in readme, p


def _pod_line(name: str, namespace: str, labels: dict, owner: dict | None) -> str:
    """One watch line as the API server writes it: requests 1 GPU, limits 2 (an extended resource
    must have request = limit), so marts.findings holds an UNSCHEDULABLE_GPU finding about it."""
    import json

    meta = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "4000001",
            "creationTimestamp": "2026-06-01T09:30:00Z", "labels": labels}
    if owner is not None:
        meta["generateName"] = owner["name"] + "-"
        meta["ownerReferences"] = [{**owner, "uid": f"uid-{owner['name']}", "controller": True,
                                    "blockOwnerDeletion": True}]
    pod = {"kind": "Pod", "apiVersion": "v1", "metadata": meta,
           "spec": {"containers": [{"name": "main", "image": "vllm/vllm-openai:v0.6.3", "resources": {
               "limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "1"}}}],
                    "restartPolicy": "Always", "schedulerName": "default-scheduler"},
           "status": {"phase": "Pending", "qosClass": "Burstable"}}
    return json.dumps({"type": "ADDED", "object": pod}, separators=(",", ":")) + "\n"


def test_a_pods_owner_references_name_its_workload_where_no_keda_object_owns_it(tmp_path):
    """metadata.ownerReferences resolved (intermediate.int_k8s__pod_owners): a Deployment's
    replica is owned by the ReplicaSet `<deployment>-<pod-template-hash>` → Deployment; a Job's
    pod by the Job (a CronJob-like name stays Job: no CronJob is landed); a StatefulSet's pod by
    it; a bare pod by none. In ml-serve, ScaledObject llm (hpa-scale-in/scaledobjects.json)
    still owns the replicas of its target, though their ownerReferences name the ReplicaSet."""
    import shutil

    case = tmp_path / "in"
    shutil.copytree(HERE / "hpa-scale-in", case)
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "llm-6d8f9c7b5"}
    job = "nightly-eval-29145600"
    (case / "owners-pods-watch.jsonl").write_text("".join((
        _pod_line("llm-6d8f9c7b5-w8zq4", "research",
                  {"app": "llm", "pod-template-hash": "6d8f9c7b5", "team": "nlp"}, rs),
        _pod_line(f"{job}-h5t2m", "research",
                  {"batch.kubernetes.io/controller-uid": f"uid-{job}", "batch.kubernetes.io/job-name": job,
                   "controller-uid": f"uid-{job}", "job-name": job, "team": "nlp"},
                  {"apiVersion": "batch/v1", "kind": "Job", "name": job}),
        _pod_line("trainer-0", "research",
                  {"app": "trainer", "apps.kubernetes.io/pod-index": "0",
                   "controller-revision-hash": "trainer-7b9c6d5f4",
                   "statefulset.kubernetes.io/pod-name": "trainer-0", "team": "nlp"},
                  {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "trainer"}),
        _pod_line("scratch", "research", {"team": "nlp"}, None),
    )))
    db = tmp_path / "w.duckdb"
    res = run(case, db)
    assert res.quarantined == 0 and res.staging_quarantined == 0, res.files
    con = connect(db, read_only=True)
    try:
        staged = con.execute("select distinct pod_name, owner_kind, owner_name from staging.stg_k8s__pods "
                             "where namespace = 'research' order by all").fetchall()
        owned = con.execute("select namespace, pod_name, owner_kind, owner_name from "
                            "intermediate.int_k8s__pod_owners order by all").fetchall()
        found = con.execute("select resource_id, namespace, owner_kind, owner_name, team from marts.findings "
                            "where code = 'UNSCHEDULABLE_GPU' order by all").fetchall()
    finally:
        con.close()
    assert staged == [("llm-6d8f9c7b5-w8zq4", "ReplicaSet", "llm-6d8f9c7b5"), (f"{job}-h5t2m", "Job", job),
                      ("scratch", None, None), ("trainer-0", "StatefulSet", "trainer")]
    assert owned == [
        ("ml-serve", "llm-6d8f9c7b5-k2x9p", "ScaledObject", "llm"),
        ("ml-serve", "llm-6d8f9c7b5-q7m4w", "ScaledObject", "llm"),
        ("research", "llm-6d8f9c7b5-w8zq4", "Deployment", "llm"),
        ("research", f"{job}-h5t2m", "Job", job),
        ("research", "scratch", None, None),
        ("research", "trainer-0", "StatefulSet", "trainer"),
    ]
    assert found == [
        ("pod:research/llm-6d8f9c7b5-w8zq4", "research", "Deployment", "llm", "nlp"),
        (f"pod:research/{job}-h5t2m", "research", "Job", job, "nlp"),
        ("pod:research/scratch", "research", None, None, "nlp"),
        ("pod:research/trainer-0", "research", "StatefulSet", "trainer", "nlp"),
    ]
