"""A scenario the batch fleet does not raise: a GPU shared by time-slicing, oversubscribed.

One Runpod pod (an L40S) is a Kubernetes node whose one GPU the NVIDIA device plugin shares
by time-slicing, 4 replicas (`sharing.timeSlicing.resources[].replicas: 4`): the node
advertises `nvidia.com/gpu: 4`, and GPU feature discovery labels it
`nvidia.com/gpu.sharing-strategy=time-slicing`, `nvidia.com/gpu.replicas=4`,
`nvidia.com/gpu.count=1` and `nvidia.com/gpu.product=NVIDIA-L40S-SHARED`. Two Jobs' pods,
`nvidia.com/gpu: 1` each, overlap on it for 3,000 s: 2 replicas held on 1 physical GPU
→ GPU_SHARED_OVERSUBSCRIBED. Each pod holds 1/4 of the GPU, so marts.allocation charges each
its time × rate ÷ 4. Opt-in (`simulate(..., gpu_sharing=True)`): the demo's fleet stays as it
is. Everything here is whole seconds; the truth is computed from the same timeline.
"""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from pathlib import Path

from .emit_runpod import add_to_account, hourly_pod_bill
from .emit_runpod import iso as _ts
from .world import HOURS_PER_MONTH, SAMPLE_DISK_RUNNING_GB_MONTH, SAMPLE_GPU_PER_HOUR, day_epoch

GPU = "NVIDIA L40S"
RATE = SAMPLE_GPU_PER_HOUR[GPU]
POD_ID = "l40sshared01"
NODE = "gpu-ts-l40s"
REPLICAS = 4
PHYSICAL = 1
DISK_GB = 60
# (pod name, namespace, team, Job)
PODS = {"a": ("embed-nightly-k4x8z", "ml-batch", "nlp", "embed-nightly"),
        "b": ("caption-eval-p2w9r", "ml-eval", "vision", "caption-eval")}




def timeline(start_day: date) -> dict:
    d0 = day_epoch(start_day)
    t = {"start": d0 + 15 * 3600 + 40}
    t["registered"] = t["start"] + 90
    t["node_ready"] = t["registered"] + 20
    t["a_scheduled"] = t["node_ready"] + 5
    t["a_ready"] = t["a_scheduled"] + 60
    t["a_finished"] = t["a_ready"] + 3600
    t["b_scheduled"] = t["a_ready"] + 600   # while a runs: 2 replicas held on 1 GPU from here
    t["b_ready"] = t["b_scheduled"] + 60
    t["b_finished"] = t["a_finished"] + 1200
    t["stop"] = t["b_finished"] + 30        # within the node's scale-down: no tail finding
    return t


def _pod(key: str, t: dict, rv: int) -> list[dict]:
    name, ns, team, job = PODS[key]
    sched, ready, fin = t[f"{key}_scheduled"], t[f"{key}_ready"], t[f"{key}_finished"]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": ns, "uid": f"pod-{name}-uid", "resourceVersion": str(rv),
                        "creationTimestamp": _ts(sched), "labels": {"job-name": job, "team": team},
                        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                                             "uid": f"job-{job}-uid", "controller": True,
                                             "blockOwnerDeletion": True}]},
           "spec": {"nodeName": NODE, "restartPolicy": "Never", "containers": [{"name": "worker", "resources": {
               "limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}}]},
           "status": {"phase": "Running", "startTime": _ts(sched), "conditions": [
               {"type": "PodScheduled", "status": "True", "lastTransitionTime": _ts(sched)},
               {"type": "Ready", "status": "True", "lastTransitionTime": _ts(ready)}],
               "containerStatuses": [{"name": "worker", "restartCount": 0, "started": True, "ready": True,
                                      "state": {"running": {"startedAt": _ts(sched + 10)}}}]}}
    done = json.loads(json.dumps(pod))
    done["metadata"]["resourceVersion"] = str(rv + 1)
    done["status"]["phase"] = "Succeeded"
    done["status"]["containerStatuses"][0].update(ready=False, started=False, state={"terminated": {
        "exitCode": 0, "reason": "Completed", "startedAt": _ts(sched + 10), "finishedAt": _ts(fin)}})
    return [{"type": "ADDED", "object": pod}, {"type": "MODIFIED", "object": done}]


def write_gpushare(out: Path, start_day: date, days: int) -> list[str]:
    t = timeline(start_day)
    k8s = out / "k8s" / "cluster=sim-cluster"
    rp = out / "runpod"
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": NODE, "uid": "node-ts-l40s-uid", "resourceVersion": "910001",
                         "creationTimestamp": _ts(t["registered"]),
                         "labels": {"runpod.io/pod-id": POD_ID,
                                    "nvidia.com/gpu.product": "NVIDIA-L40S-SHARED",
                                    "nvidia.com/gpu.count": str(PHYSICAL),
                                    "nvidia.com/gpu.replicas": str(REPLICAS),
                                    "nvidia.com/gpu.sharing-strategy": "time-slicing"}},
            "spec": {}, "status": {"capacity": {"nvidia.com/gpu": str(PHYSICAL * REPLICAS)},
                                   "conditions": [{"type": "Ready", "status": "True",
                                                   "lastTransitionTime": _ts(t["node_ready"])}]}}
    lines = [{"type": "ADDED", "object": node}, *_pod("a", t, 910010), *_pod("b", t, 910020)]
    (k8s / "gpushare-watch.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))

    disk_rate = SAMPLE_DISK_RUNNING_GB_MONTH / (HOURS_PER_MONTH * 3600) * DISK_GB
    recs = hourly_pod_bill(POD_ID, t["start"], t["stop"], RATE, disk_rate)
    pulled = _ts(day_epoch(start_day) + days * 86400 + 7200)
    (rp / "billing-pods-gpushare.json").write_text(json.dumps(
        {"records": recs, "metadata": {"query": {"bucketSize": "hour"}, "recordCount": len(recs)},
         "x_recon": {"endpoint": "/v2/billing/pods", "pulledAt": pulled}}, indent=1))
    add_to_account(rp, recs)  # the account's totals count this pod's hours too
    inv = {"pods": [{"id": POD_ID, "name": "shared-l40s", "status": "RUNNING", "cost": float(RATE),
                     "gpu": {"id": GPU, "count": PHYSICAL}, "disk": 40,
                     "mounts": {"persistent": {"size": DISK_GB - 40, "path": "/workspace"}},
                     "createdAt": _ts(t["start"]), "startedAt": _ts(t["start"])}],
           "x_recon": {"endpoint": "/v2/pods", "pulledAt": _ts(t["start"] + 600)}}
    (rp / "inventory-pods-gpushare.json").write_text(json.dumps(inv, indent=1))
    return ["gpushare-watch.jsonl", "billing-pods-gpushare.json", "inventory-pods-gpushare.json"]


def gpushare_truth(start_day: date) -> tuple[list[dict], list[tuple], dict]:
    """The resource-day row, the findings, and what the pods hold and pay (USD, exact)."""
    t = timeline(start_day)
    day = start_day.isoformat()
    cats = {"startup": (t["node_ready"] - t["start"]) + (t["a_ready"] - t["a_scheduled"]),
            "idle_gap": t["a_scheduled"] - t["node_ready"],
            "busy": t["b_finished"] - t["a_ready"],  # b starts while a is busy: busy wins
            "tail": t["stop"] - t["b_finished"]}
    billed = t["stop"] - t["start"]
    assert sum(cats.values()) == billed
    cats["storage_running"] = billed
    row = {"resource_id": POD_ID, "resource_kind": "instance", "day": day, "billed_seconds": billed,
           "task_finished_at": _ts(t["b_finished"]), "compute_stopped_at": _ts(t["stop"]),
           "billed_after_exit_seconds": cats["tail"], "lingering_storage_seconds": 0,
           "serverless_idle_seconds": 0, "categories": cats}
    per_second = RATE / 3600
    # both pods hold a replica over [b scheduled, a finished): 2 replicas > 1 physical GPU
    both = t["a_finished"] - t["b_scheduled"]
    held = 2
    whole = per_second * both * held / PHYSICAL                  # each replica priced as a GPU
    fractional = per_second * both * held / (PHYSICAL * REPLICAS)  # marts.allocation's split
    shares = {PODS[k][2]: per_second * (t[f"{k}_finished"] - t[f"{k}_scheduled"]) / (PHYSICAL * REPLICAS)
              for k in PODS}
    detail = {"resource_id": POD_ID, "day": day, "oversubscribed_seconds": both,
              "amount_at_stake": str(whole - fractional), "team_amounts": {k: str(v) for k, v in shares.items()},
              "gpu_fraction": str(Decimal(1) / REPLICAS)}
    return [row], [("GPU_SHARED_OVERSUBSCRIBED", POD_ID, day)], detail
