"""Scenarios for the codes the batch fleet does not raise on its own, on one extra instance.

A warm-pool Deployment pod on an H100 node (Runpod pod) on the first day:
* KEDA scales its ScaledObject to zero 30 min after lastActiveTime + cooldownPeriod (KEDA
  deactivates only once that has passed: the event itself is late) → SCALE_TO_ZERO_LATE;
* the replica ends 20 s after (its termination), the node leaves the cluster 5 min later and
  the Runpod pod bills 30 min more
  → BILLED_AFTER_EXIT (until the node left) and BILLED_EXCEEDS_RUNTIME (after);
* a savings plan for H100 is configured but the pod is billed at the on-demand rate
  → RATE_MISMATCH; the plan expires 10 days after the window starts → SAVINGS_PLAN_EXPIRING
  every day; its GPU stands unused all of the other days and most of the first
  → SAVINGS_PLAN_UNUSED;
* its first billed hour appears twice in the export → DUPLICATE_BILLING;
* a balance reading below one hour of spend → BALANCE_BELOW_ONE_HOUR.
Everything here is whole seconds; the truth is computed from the same timeline.
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

from .emit_runpod import add_to_account, hourly_pod_bill
from .emit_runpod import iso as _ts
from .world import COOLDOWN, HOURS_PER_MONTH, SAMPLE_DISK_RUNNING_GB_MONTH, day_epoch

GPU = "NVIDIA H100 80GB HBM3"
ON_DEMAND = Decimal("2.99")
PLAN_RATE = Decimal("2.39")
POD_ID = "h100warmpool01"
NODE = "gpu-warm-h100"




def plan_config(start_day: date) -> str:
    end = start_day + timedelta(days=10)
    begin = end - timedelta(days=91)
    return ("\n[[savings_plans]]\n"
            f'id = "sp-h100-sim"\ngpu_type = "{GPU}"\ngpu_count = 1\n'
            f'usd_per_gpu_hour = "{PLAN_RATE}"\nstart = "{begin}"\nend = "{end}"\n'
            'upfront_usd = "5220"\n')


def timeline(start_day: date) -> dict:
    d0 = day_epoch(start_day)
    t = {"start": d0 + 13 * 3600 + 17}
    t["registered"] = t["start"] + 95
    t["node_ready"] = t["registered"] + 20
    t["scheduled"] = t["node_ready"] + 3
    t["ready"] = t["scheduled"] + 240
    t["last_active"] = t["ready"] + 2400
    t["deactivated"] = t["last_active"] + COOLDOWN + 1800
    t["finished"] = t["deactivated"] + 20
    t["removed"] = t["finished"] + 300
    t["stop"] = t["removed"] + 1800
    return t


def write_extras(out: Path, start_day: date, days: int) -> list[str]:
    t = timeline(start_day)
    k8s = out / "k8s" / "cluster=sim-cluster"
    rp = out / "runpod"
    pod_name = "gpu-warm-pool-6f9c8d7b5-q2x7k"
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": NODE, "uid": "node-h100-uid", "creationTimestamp": _ts(t["registered"]),
                         "labels": {"runpod.io/pod-id": POD_ID}},
            "spec": {}, "status": {"capacity": {"nvidia.com/gpu": "1"}}}
    lines = []
    for etype, rv, status, at in (("ADDED", 900001, "False", t["registered"]),
                                  ("MODIFIED", 900002, "True", t["node_ready"])):
        n = json.loads(json.dumps(node))
        n["metadata"]["resourceVersion"] = str(rv)
        n["status"]["conditions"] = [{"type": "Ready", "status": status,
                                      "lastTransitionTime": _ts(at)}]
        lines.append({"type": etype, "object": n})
    gone = json.loads(json.dumps(lines[-1]["object"]))
    gone["metadata"].update(resourceVersion="900009", deletionTimestamp=_ts(t["removed"]))
    lines.append({"type": "DELETED", "object": gone})
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": pod_name, "namespace": "ml-serve", "uid": "pod-warm-h100-uid",
                        "creationTimestamp": _ts(t["scheduled"]),
                        "labels": {"app": "gpu-warm-pool", "team": "search",
                                   "pod-template-hash": "6f9c8d7b5"},
                        # as the ReplicaSet controller writes it: a Deployment's replica is owned
                        # by the ReplicaSet `<deployment>-<pod-template-hash>`
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                             "name": "gpu-warm-pool-6f9c8d7b5", "uid": "rs-warm-h100-uid",
                                             "controller": True, "blockOwnerDeletion": True}]},
           "spec": {"nodeName": NODE, "containers": [{"name": "server", "resources": {
               "limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}},
               "startupProbe": {"periodSeconds": 10, "failureThreshold": 60}}]},
           "status": {"conditions": [
               {"type": "PodScheduled", "status": "True", "lastTransitionTime": _ts(t["scheduled"])},
               {"type": "Ready", "status": "True", "lastTransitionTime": _ts(t["ready"])}],
               "containerStatuses": [{"name": "server", "restartCount": 0, "started": True,
                                      "state": {"running": {"startedAt": _ts(t["scheduled"] + 30)}}}]}}
    pod["metadata"]["resourceVersion"] = "900003"
    lines.append({"type": "ADDED", "object": json.loads(json.dumps(pod))})
    pod["status"]["containerStatuses"][0]["state"] = {"terminated": {
        "exitCode": 0, "reason": "Completed", "startedAt": _ts(t["scheduled"] + 30),
        "finishedAt": _ts(t["finished"])}}
    pod["metadata"]["resourceVersion"] = "900004"
    lines.append({"type": "MODIFIED", "object": pod})
    (k8s / "warm-pool-watch.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    deact = {"apiVersion": "v1", "kind": "Event",
             "metadata": {"name": "gpu-warm-pool.deact", "namespace": "ml-serve", "uid": "ev-warm-deact",
                          "creationTimestamp": _ts(t["deactivated"])},
             "involvedObject": {"kind": "ScaledObject", "name": "gpu-warm-pool", "namespace": "ml-serve",
                                "uid": "so-warm-h100"},
             "reason": "KEDAScaleTargetDeactivated", "type": "Normal", "message": "Deactivated",
             "firstTimestamp": None, "lastTimestamp": None,
             "eventTime": _ts(t["deactivated"]).replace("Z", ".000000Z")}
    so = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
          "metadata": {"name": "gpu-warm-pool", "namespace": "ml-serve", "uid": "so-warm-h100"},
          "spec": {"scaleTargetRef": {"name": "gpu-warm-pool"}, "cooldownPeriod": COOLDOWN,
                   "pollingInterval": 30, "minReplicaCount": 0},
          "status": {"lastActiveTime": _ts(t["last_active"])}}
    (k8s / "warm-pool-objects.json").write_text(json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": [so, deact]}, indent=1))

    # the bill: on-demand rate although the plan should apply; the first hour twice
    run_rate = SAMPLE_DISK_RUNNING_GB_MONTH / (HOURS_PER_MONTH * 3600) * 60  # 60 GB of disk
    recs = hourly_pod_bill(POD_ID, t["start"], t["stop"], ON_DEMAND, run_rate)
    recs.insert(1, dict(recs[0]))
    pulled = _ts(day_epoch(start_day) + days * 86400 + 7200)
    (rp / "billing-pods-warm-pool.json").write_text(json.dumps(
        {"records": recs, "metadata": {"query": {"bucketSize": "hour"}, "recordCount": len(recs)},
         "x_recon": {"endpoint": "/v2/billing/pods", "pulledAt": pulled}}, indent=1))
    add_to_account(rp, recs[1:])  # the provider's account total counts the duplicated hour once
    inv = {"pods": [{"id": POD_ID, "name": "warm-pool-h100", "status": "RUNNING",
                     "cost": float(ON_DEMAND), "gpu": {"id": GPU, "count": 1}, "disk": 40,
                     "mounts": {"persistent": {"size": 20, "path": "/workspace"}},
                     "createdAt": _ts(t["start"]), "startedAt": _ts(t["start"])}],
           "x_recon": {"endpoint": "/v2/pods", "pulledAt": _ts(t["start"] + 600)}}
    (rp / "inventory-pods-warm-pool.json").write_text(json.dumps(inv, indent=1))
    balance = {"data": {"myself": {"clientBalance": 2.15, "currentSpendPerHr": 4.87,
                                   "spendLimit": 500}},
               "x_recon": {"endpoint": "graphql myself", "pulledAt": _ts(t["start"] + 1800)}}
    (rp / "balance.json").write_text(json.dumps(balance, indent=1))
    return ["warm-pool-watch.jsonl", "warm-pool-objects.json", "billing-pods-warm-pool.json",
            "inventory-pods-warm-pool.json", "balance.json"]


def extras_truth(start_day: date, days: int, thresholds: dict) -> tuple[list[dict], list[tuple]]:
    """Resource-day rows and findings of the extra scenarios."""
    t = timeline(start_day)
    day = start_day.isoformat()
    grace = thresholds["scale_down_grace_seconds"] + thresholds["tail_tolerance_seconds"]
    cats = {"startup": (t["node_ready"] - t["start"]) + (t["ready"] - t["scheduled"]),
            "idle_gap": t["scheduled"] - t["node_ready"],
            "busy": t["finished"] - t["ready"],
            "tail": t["stop"] - t["finished"]}
    billed = t["stop"] - t["start"]
    cats["storage_running"] = billed
    row = {"resource_id": POD_ID, "resource_kind": "instance", "day": day, "billed_seconds": billed,
           "task_finished_at": _ts(t["finished"]), "compute_stopped_at": _ts(t["stop"]),
           "billed_after_exit_seconds": cats["tail"], "lingering_storage_seconds": 0,
           "serverless_idle_seconds": 0, "categories": cats}
    assert t["stop"] - t["finished"] > grace  # a replica scaled to zero: the node's scale-down only
    findings = [("SCALE_TO_ZERO_LATE", POD_ID, day), ("BILLED_AFTER_EXIT", POD_ID, day),
                ("BILLED_EXCEEDS_RUNTIME", POD_ID, day), ("RATE_MISMATCH", POD_ID, day),
                ("DUPLICATE_BILLING", POD_ID, day), ("BALANCE_BELOW_ONE_HOUR", "account", day)]
    for d in range(min(days, 10)):  # the plan ends 10 days after the window starts
        dd = (start_day + timedelta(days=d)).isoformat()
        findings.append(("SAVINGS_PLAN_EXPIRING", "plan:sp-h100-sim", dd))
        # the plan's one GPU stood unused all day but for the pod's billed seconds on day 0
        if d > 0 or 86400 - billed > thresholds["savings_plan_unused_tolerance_seconds"]:
            findings.append(("SAVINGS_PLAN_UNUSED", "plan:sp-h100-sim", dd))
    return [row], findings
