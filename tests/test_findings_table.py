"""Table-driven: per finding code, a small world that raises it and a near miss that must not."""

from datetime import timedelta
from decimal import Decimal

from engine.build import World, t

RATE = Decimal("0.86")


def batch_node(w: World, *, tail_minutes: int, removed_after_minutes: int | None = None):
    """One node 10:00 → task 10:05–11:00 → compute stops after the tail."""
    w.node("n1", "pod1", t("10:00"), t("10:02"),
           removed=t("11:00") + timedelta(minutes=removed_after_minutes)
           if removed_after_minutes is not None else None)
    w.pod("job-a", "n1", t("10:03"), t("10:05"), t("11:00"))
    w.compute("pod1", t("10:00"), t("11:00") + timedelta(minutes=tail_minutes), RATE)


def codes(findings):
    return sorted({f[0] for f in findings})


def test_billed_after_exit_raised_and_not(tmp_path):
    w = World(tmp_path / "a")
    batch_node(w, tail_minutes=60)
    f = w.findings()
    assert codes(f) == ["BILLED_AFTER_EXIT"]
    _code, rid, day, secs, amount, msg = f[0]
    assert (rid, day) == ("pod1", "2026-06-01")
    assert secs == Decimal(3600 - 420)  # beyond cooldown 300 + grace 60 + tolerance 60
    assert amount == (RATE * 3180 / 3600).quantize(Decimal("0.000000000001"))
    assert "job-a" in msg and "cooldownPeriod 300 s" in msg
    # the message says the seconds the finding counts, not only the whole tail (3600 s)
    assert "for 3600 s after its last task" in msg and msg.endswith(": 3180 s billed beyond it.")
    w = World(tmp_path / "b")
    batch_node(w, tail_minutes=6)  # 360 s ≤ 420 s
    assert codes(w.findings()) == []


def test_billed_exceeds_runtime_takes_the_seconds_after_the_node_left(tmp_path):
    w = World(tmp_path / "a")
    batch_node(w, tail_minutes=120, removed_after_minutes=7)  # node gone 11:07, billing to 13:00
    f = {c: (s, a) for c, _, _, s, a, _ in w.findings()}
    assert set(f) == {"BILLED_AFTER_EXIT", "BILLED_EXCEEDS_RUNTIME"}
    assert f["BILLED_EXCEEDS_RUNTIME"][0] == Decimal(7200 - 420)
    # no second is paid twice: after-exit money stops at removal + tolerance
    total = f["BILLED_AFTER_EXIT"][1] + f["BILLED_EXCEEDS_RUNTIME"][1]
    assert total <= (RATE * (7200 - 420) / 3600) + Decimal("0.000001")
    w = World(tmp_path / "b")
    batch_node(w, tail_minutes=6, removed_after_minutes=5)
    assert codes(w.findings()) == []


def test_rate_mismatch_when_a_savings_plan_is_not_applied(tmp_path):
    plan = ('[[savings_plans]]\nid = "sp-1"\ngpu_type = "L40S"\ngpu_count = 1\n'
            'usd_per_gpu_hour = "0.60"\nstart = "2026-05-01"\nend = "2026-08-01"\nupfront_usd = "400"\n')
    w = World(tmp_path / "a")
    batch_node(w, tail_minutes=5)
    w.config.append(plan)
    f = {c: (r, s, a, m) for c, r, _, s, a, m in w.findings()}
    # the plan's GPU also stood unused 22.9 h of the day: its own finding (see below)
    assert set(f) == {"RATE_MISMATCH", "SAVINGS_PLAN_UNUSED"}
    rid, _secs, amount, msg = f["RATE_MISMATCH"]
    assert rid == "pod1" and "savings plan sp-1" in msg
    billed_s = 3600 + 300
    assert abs(amount - (RATE - Decimal("0.60")) * billed_s / 3600) < Decimal("0.000000001")
    w = World(tmp_path / "b")  # the plan applied: billed at the plan rate
    w.node("n1", "pod1", t("10:00"), t("10:02"))
    w.pod("job-a", "n1", t("10:03"), t("10:05"), t("11:00"))
    w.compute("pod1", t("10:00"), t("11:05"), Decimal("0.60"))
    w.config.append(plan)
    assert codes(w.findings()) == ["SAVINGS_PLAN_UNUSED"]


def test_effective_dated_rate_card(tmp_path):
    w = World(tmp_path / "a")
    batch_node(w, tail_minutes=5)
    w.inventory.clear()  # no inventory: the card turns amounts into seconds and prices them
    w.config = ['[[rates.effective]]\nkind = "pod_per_hour"\nkey = "pod1"\nusd = "0.50"\nto = "2026-06-01"\n',
                '[[rates.effective]]\nkind = "pod_per_hour"\nkey = "pod1"\nusd = "0.86"\nfrom = "2026-06-01"\n']
    w.write()
    from recon.db import connect
    from recon.pipeline import run
    run(tmp_path / "a" / "in", tmp_path / "a" / "db.duckdb")
    con = connect(tmp_path / "a" / "db.duckdb", read_only=True)
    assert con.execute("select billed_seconds from marts.resource_day").fetchall() == [(Decimal("3900.000"),)]


def test_duplicate_billing_in_one_export(tmp_path):
    w = World(tmp_path / "a")
    batch_node(w, tail_minutes=5)
    w.bill.append(dict(w.bill[0]))  # the 10:00 hour twice in the same response
    f = {c: (r, s, a) for c, r, _, s, a, _ in w.findings()}
    assert set(f) == {"DUPLICATE_BILLING"}
    assert f["DUPLICATE_BILLING"][2] == Decimal("0.86")
    w = World(tmp_path / "b")
    batch_node(w, tail_minutes=5)
    assert codes(w.findings()) == []


def test_startup_budget_exceeded(tmp_path):
    w = World(tmp_path / "a")
    w.node("n1", "pod1", t("10:00"), t("10:02"))
    w.pod("job-a", "n1", t("10:03"), t("10:10"), t("11:00"), killed=[(t("10:03:10"), t("10:04:10"))])
    w.compute("pod1", t("10:00"), t("11:05"), RATE)
    f = {c: (r, s, a, m) for c, r, _, s, a, m in w.findings()}
    assert set(f) == {"STARTUP_BUDGET_EXCEEDED"}
    assert f["STARTUP_BUDGET_EXCEEDED"][1] == Decimal("60")
    assert "failureThreshold × periodSeconds = 60 s" in f["STARTUP_BUDGET_EXCEEDED"][3]
    w = World(tmp_path / "b")  # a crash after 20 s is not the startup probe
    w.node("n1", "pod1", t("10:00"), t("10:02"))
    w.pod("job-a", "n1", t("10:03"), t("10:10"), t("11:00"), killed=[(t("10:03:10"), t("10:03:30"))])
    w.compute("pod1", t("10:00"), t("11:05"), RATE)
    assert codes(w.findings()) == []


def _failed_scheduling(name):
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"uid": f"ev-{name}", "name": f"ev-{name}", "creationTimestamp": "2026-06-01T10:20:00Z"},
            "involvedObject": {"kind": "Pod", "name": name, "namespace": "ml", "uid": f"uid-{name}"},
            "reason": "FailedScheduling", "type": "Warning",
            "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
            "firstTimestamp": None, "lastTimestamp": None, "eventTime": "2026-06-01T10:20:00.000000Z"}


def test_unschedulable_gpu(tmp_path):
    w = World(tmp_path / "a")
    batch_node(w, tail_minutes=5)
    w.pod("job-b", None, t("10:20"), None, None)
    w.events.append(_failed_scheduling("job-b"))
    w.pod("job-c", "n1", t("10:30"), t("10:31"), t("10:40"), gpus=1, gpu_request=2)
    f = {(c, r) for c, r, *_ in w.findings()}
    assert f == {("UNSCHEDULABLE_GPU", "pod:ml/job-b"), ("UNSCHEDULABLE_GPU", "pod:ml/job-c")}
    w = World(tmp_path / "b")  # pending while no GPU node was billed: nothing paid for
    w.pod("job-b", None, t("10:20"), None, None)
    w.events.append(_failed_scheduling("job-b"))
    assert codes(w.findings()) == []


def test_scale_to_zero_late(tmp_path):
    """KEDA scales to zero once status.lastActiveTime + cooldownPeriod has passed, then records
    KEDAScaleTargetDeactivated: the delay is counted from last active + cooldown, not from the
    event (the replica's end after the event is its termination, not lateness)."""
    deact = {"apiVersion": "v1", "kind": "Event",
             "metadata": {"uid": "ev-d", "name": "ev-d", "creationTimestamp": "2026-06-01T10:30:00Z"},
             "involvedObject": {"kind": "ScaledObject", "name": "infer", "namespace": "ml", "uid": "so-1"},
             "reason": "KEDAScaleTargetDeactivated", "type": "Normal",
             "firstTimestamp": None, "lastTimestamp": None, "eventTime": "2026-06-01T10:30:00.000000Z"}
    for last_active, expected in (("10:05", ["SCALE_TO_ZERO_LATE"]), ("10:25", [])):
        so = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
              "metadata": {"name": "infer", "namespace": "ml", "uid": "so-1"},
              "spec": {"scaleTargetRef": {"name": "infer"}, "cooldownPeriod": 300},
              "status": {"lastActiveTime": f"2026-06-01T{last_active}:00Z"}}
        w = World(tmp_path / last_active.replace(":", ""))
        w.node("n1", "pod1", t("10:00"), t("10:02"))
        w.pod("infer-7d9c-x1", "n1", t("10:03"), t("10:05"), t("10:30:20"))
        w.compute("pod1", t("10:00"), t("10:31:20"), RATE)
        w.k8s_objects.append(so)
        w.events.append(deact)
        f = w.findings()
        assert codes(f) == expected
        if expected:
            late = 30 * 60 - (5 + 5) * 60  # 10:30 − (10:05 + 300 s)
            assert f[0][3] == Decimal(late)
            assert f[0][4] == (RATE * late / 3600).quantize(Decimal("0.000000000001"))
            assert "cooldownPeriod 300 s" in f[0][5] and "final status.lastActiveTime" in f[0][5]


def test_savings_plans_unused_and_expiring(tmp_path):
    w = World(tmp_path / "a")
    batch_node(w, tail_minutes=5)
    w.config.append('[[savings_plans]]\nid = "sp-h100"\ngpu_type = "H100"\ngpu_count = 1\n'
                    'usd_per_gpu_hour = "2.00"\nstart = "2026-03-10"\nend = "2026-06-10"\n'
                    'upfront_usd = "920"\n')
    f = {c: (r, a, m) for c, r, _, _, a, m in w.findings()}
    assert set(f) == {"SAVINGS_PLAN_UNUSED", "SAVINGS_PLAN_EXPIRING"}
    assert f["SAVINGS_PLAN_UNUSED"][1] == Decimal("10")  # 920 over 92 days
    assert "covered no running pod on 2026-06-01" in f["SAVINGS_PLAN_UNUSED"][2]
    assert "expires on 2026-06-10" in f["SAVINGS_PLAN_EXPIRING"][2]
    # a plan for the GPU that ran 10:00 → 11:05 (3,900 s): the other 82,500 s of its GPU were
    # paid up front and bought nothing, 10 × 82,500 / 86,400 = $9.548611111111 of the day's $10
    plan = ('[[savings_plans]]\nid = "sp-l40"\ngpu_type = "L40S"\ngpu_count = 1\n'
            'usd_per_gpu_hour = "0.60"\nstart = "2026-05-01"\nend = "2026-08-01"\n'
            'upfront_usd = "920"\n')
    w = World(tmp_path / "b")
    w.node("n1", "pod1", t("10:00"), t("10:02"))
    w.pod("job-a", "n1", t("10:03"), t("10:05"), t("11:00"))
    w.compute("pod1", t("10:00"), t("11:05"), Decimal("0.60"))
    w.config.append(plan)
    f = w.findings()
    assert [(c, s, a) for c, _, _, s, a, _ in f] == [
        ("SAVINGS_PLAN_UNUSED", Decimal(82500), Decimal("9.548611111111"))]
    assert "covered running pods for 1.08 of its 24 GPU-hours on 2026-06-01: 22.92 GPU-hours, $9.55" in f[0][5]
    # near miss: the pod ran 00:00 → 23:30, 1,800 s unused ≤ the tolerance of 3,600 s
    w = World(tmp_path / "c")
    w.node("n1", "pod1", t("00:00"), t("00:02"))
    w.pod("job-a", "n1", t("00:03"), t("00:05"), t("23:25"))
    w.compute("pod1", t("00:00"), t("23:30"), Decimal("0.60"))
    w.config.append(plan)
    assert codes(w.findings()) == []


def test_balance_below_one_hour(tmp_path):
    import json
    for balance, expected in (("3.50", ["BALANCE_BELOW_ONE_HOUR"]), ("50", [])):
        w = World(tmp_path / balance)
        batch_node(w, tail_minutes=5)
        w.extra_files["balance.json"] = json.dumps({
            "data": {"myself": {"clientBalance": float(balance), "currentSpendPerHr": 4.25,
                                "spendLimit": 100}},
            "x_recon": {"endpoint": "graphql myself", "pulledAt": "2026-06-01T12:00:00Z"}})
        f = w.findings()
        assert codes(f) == expected
        if expected:
            assert f[0][4] == Decimal("0.75")

