"""Kubernetes files as the API server and kubectl write them."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from functools import lru_cache

import numpy as np
import orjson

from .hpa_slow import write_hpa
from .keda import write_keda
from .world import CLUSTER, COOLDOWN, POLLING, PROBE_FAILURES, PROBE_PERIOD, Instance, Job, World


@lru_cache(maxsize=1 << 18)
def ts(t: int) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@lru_cache(maxsize=1 << 18)
def micro(t: int) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def dumps_indented(obj, indent: int) -> bytes:
    """Exactly `json.dumps(obj, indent=indent)` for ASCII, float-free documents, fast.

    orjson writes the same layout with two spaces per level (separators `,` and `: `, `{}` and
    `[]` when empty); JSON strings hold no raw newline, so every line's leading spaces are pure
    indentation: rescale them (numpy, no Python loop). Falls back to json for anything else.
    """
    raw = orjson.dumps(obj, option=orjson.OPT_INDENT_2)
    if not raw.isascii() or indent not in (1, 2, 4) or _has_float(raw):
        return json.dumps(obj, indent=indent).encode()
    if indent == 2:
        return raw
    a = np.frombuffer(raw, dtype=np.uint8)
    starts = np.flatnonzero(a == 10) + 1  # every line but the first (which has no indent)
    nonspace = np.flatnonzero(a != 32)
    first = nonspace[np.searchsorted(nonspace, starts)]  # first non-space byte of each line
    lead = first - starts
    counts = np.ones(len(a), dtype=np.int64)
    if indent == 1:  # drop the first half of each line's indentation
        d = np.zeros(len(a) + 1, dtype=np.int64)
        np.add.at(d, starts, -1)
        np.add.at(d, starts + lead // 2, 1)
        counts += np.cumsum(d[:-1])
    else:  # indent 4: every indentation byte twice
        d = np.zeros(len(a) + 1, dtype=np.int64)
        np.add.at(d, starts, 1)
        np.add.at(d, first, -1)
        counts += np.cumsum(d[:-1])
    return np.repeat(a, counts).tobytes()


def _has_float(raw: bytes) -> bool:
    # a number with a fraction or exponent outside strings: json and orjson format floats
    # differently; such documents take the json path (the simulator's Kubernetes files have none)
    import re
    return re.search(rb'[:\[,]\s*-?[0-9]+[.eE]', raw) is not None


class RV:
    def __init__(self):
        self.n = 100_000

    def next(self) -> str:
        self.n += 1
        return str(self.n)


def _cond(type_: str, status: str, t: int, reason: str | None = None) -> dict:
    c = {"type": type_, "status": status, "lastProbeTime": None, "lastTransitionTime": ts(t)}
    if reason:
        c["reason"] = reason
    return c


def _pod_base(job: Job, team: str) -> dict:
    gpu = str(job.gpus)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": job.name, "namespace": job.namespace, "uid": job.uid,
            "creationTimestamp": ts(job.created), "generateName": job.name[:-5],
            "labels": ({"app": job.replica_of, "team": team, "pod-template-hash": job.name.split("-")[-2]}
                       if job.replica_of else
                       {"app": "batch-infer", "team": team, "scaledjob.keda.sh/name": "batch-infer"}),
            "ownerReferences": [{"apiVersion": "apps/v1" if job.replica_of else "batch/v1",
                                 "kind": "ReplicaSet" if job.replica_of else "Job", "name": job.name[:-6],
                                 "uid": job.uid[::-1], "controller": True}],
        },
        "spec": {
            "containers": [{
                "name": "worker", "image": "ghcr.io/example/batch-infer:1.4.2",
                "resources": {"limits": {"nvidia.com/gpu": gpu, "memory": "32Gi"},
                              "requests": {"nvidia.com/gpu": gpu, "cpu": "4", "memory": "32Gi"}},
                "startupProbe": {"httpGet": {"path": "/health", "port": 8080},
                                 "periodSeconds": PROBE_PERIOD, "failureThreshold": PROBE_FAILURES},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 10},
            }],
            "restartPolicy": "Always" if job.replica_of else "OnFailure",
            "schedulerName": "default-scheduler",
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


def pod_versions(job: Job, rv: RV, sink=None) -> list[tuple[str, dict]]:
    """Every version a watch would deliver for this pod, in order.

    `sink(kind, pod)`, if given, receives each version instead (the pod dict is reused and
    changed afterwards: serialise it right away); the returned list is then empty.
    """
    out: list[tuple[str, dict]] = []
    p = _pod_base(job, job.team)
    if sink is None:
        def sink(kind: str, obj: dict) -> None:
            out.append((kind, copy.deepcopy(obj)))

    def emit(kind: str):
        p["metadata"]["resourceVersion"] = rv.next()
        sink(kind, p)

    emit("ADDED")
    if job.scheduled is None:  # deleted while pending
        p["metadata"]["deletionTimestamp"] = ts(job.deleted)
        p["metadata"]["deletionGracePeriodSeconds"] = 0
        emit("DELETED")
        return out
    p["spec"]["nodeName"] = job.node
    p["status"]["conditions"] = [_cond("PodScheduled", "True", job.scheduled)]
    emit("MODIFIED")
    st = p["status"]
    st["startTime"] = ts(job.scheduled + 1)
    st["conditions"] = [
        _cond("PodReadyToStartContainers", "True", job.pull_start),
        _cond("Initialized", "True", job.scheduled + 1),
        _cond("Ready", "False", job.scheduled + 1, "ContainersNotReady"),
        _cond("ContainersReady", "False", job.scheduled + 1, "ContainersNotReady"),
        _cond("PodScheduled", "True", job.scheduled),
    ]
    cs = {"name": "worker", "image": "ghcr.io/example/batch-infer:1.4.2", "imageID": "",
          "containerID": "", "ready": False, "started": False, "restartCount": 0,
          "state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {}}
    st["containerStatuses"] = [cs]
    emit("MODIFIED")
    for i, start in enumerate(job.container_starts):
        cs["containerID"] = f"containerd://{job.uid.replace('-', '')}{i}"
        cs["imageID"] = "ghcr.io/example/batch-infer@sha256:" + "ab" * 32
        cs["state"] = {"running": {"startedAt": ts(start)}}
        cs["restartCount"] = i
        st["phase"] = "Running"
        emit("MODIFIED")
        if i < len(job.killed_at):
            cs["lastState"] = {"terminated": {"exitCode": 137, "reason": "Error",
                                              "startedAt": ts(start),
                                              "finishedAt": ts(job.killed_at[i]),
                                              "containerID": cs["containerID"]}}
    cs["started"] = True
    cs["ready"] = True
    st["conditions"][2] = _cond("Ready", "True", job.ready)
    st["conditions"][3] = _cond("ContainersReady", "True", job.ready)
    emit("MODIFIED")
    if job.uid[0] in "0123":  # watch streams repeat versions after reconnects
        sink("MODIFIED", p)
    cs["ready"] = False
    cs["started"] = False
    cs["state"] = {"terminated": {"exitCode": 0, "reason": job.exit_reason,
                                  "startedAt": ts(job.container_starts[-1]),
                                  "finishedAt": ts(job.finished), "containerID": cs["containerID"]}}
    st["phase"] = "Succeeded"
    st["conditions"][2] = _cond("Ready", "False", job.finished, "PodCompleted")
    st["conditions"][3] = _cond("ContainersReady", "False", job.finished, "PodCompleted")
    emit("MODIFIED")
    p["metadata"]["deletionTimestamp"] = ts(job.deleted)
    p["metadata"]["deletionGracePeriodSeconds"] = 0
    emit("DELETED")
    return out


def pod_version_lines(job: Job, rv: RV) -> list[bytes]:
    """The watch-file lines of `pod_versions(job, rv)`, serialised as each version is made (no
    deep copies). Same bytes as json.dumps({"type", "object", "cluster"}, separators=(",", ":")):
    the pod documents are ASCII and hold no floats."""
    out: list[bytes] = []
    pod_versions(job, rv, lambda kind, obj: out.append(
        orjson.dumps({"type": kind, "object": obj, "cluster": CLUSTER})))
    return out


def node_versions(inst: Instance, rv: RV) -> list[tuple[str, dict]]:
    out = []
    for s in inst.sessions:
        labels = {"kubernetes.io/hostname": inst.node_name, "nvidia.com/gpu.product":
                  inst.gpu_type.replace(" ", "-"), "node.kubernetes.io/instance-type": "runpod"}
        spec: dict = {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}
        if inst.role == "forgotten":
            labels["team"] = "search"
        if inst.mapping == "label":
            labels["runpod.io/pod-id"] = inst.pod_id
        elif inst.mapping == "provider":
            spec["providerID"] = f"runpod://{inst.pod_id}"
        node = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": inst.node_name, "uid": s.node_uid, "labels": labels,
                         "creationTimestamp": ts(s.node_registered)},
            "spec": spec,
            "status": {
                "capacity": {"nvidia.com/gpu": str(inst.gpu_count), "cpu": "16"},
                "allocatable": {"nvidia.com/gpu": str(inst.gpu_count), "cpu": "15"},
                "conditions": [_cond("Ready", "False", s.node_registered, "KubeletNotReady")],
            },
        }
        node["metadata"]["resourceVersion"] = rv.next()
        out.append(("ADDED", copy.deepcopy(node)))
        node["status"]["conditions"] = [_cond("Ready", "True", s.node_ready, "KubeletReady")]
        node["metadata"]["resourceVersion"] = rv.next()
        out.append(("MODIFIED", copy.deepcopy(node)))
        node["metadata"]["deletionTimestamp"] = ts(s.stop - 5)
        node["metadata"]["resourceVersion"] = rv.next()
        out.append(("DELETED", copy.deepcopy(node)))
    return out


def _event(rv: RV, job: Job, reason: str, t: int, message: str, component: str,
           type_: str = "Normal", scheduler_style: bool = False) -> dict:
    ev = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{job.name}.{rv.n:x}", "namespace": job.namespace,
                     "uid": f"ev-{job.uid[:8]}-{rv.next()}", "resourceVersion": str(rv.n),
                     "creationTimestamp": ts(t)},
        "involvedObject": {"kind": "Pod", "name": job.name, "namespace": job.namespace,
                           "uid": job.uid, "apiVersion": "v1"},
        "reason": reason, "message": message, "type": type_, "count": 1,
        "source": {"component": component},
        "firstTimestamp": None if scheduler_style else ts(t),
        "lastTimestamp": None if scheduler_style else ts(t),
        "eventTime": micro(t) if scheduler_style else None,
        "reportingComponent": component, "reportingInstance": "",
    }
    return ev


def events_for(job: Job, rv: RV) -> list[dict]:
    if job.scheduled is None:
        return [_event(rv, job, "FailedScheduling", job.created + 1,
                       "0/5 nodes are available: 5 Insufficient nvidia.com/gpu.",
                       "default-scheduler", "Warning", scheduler_style=True)]
    evs = [
        _event(rv, job, "Scheduled", job.scheduled,
               f"Successfully assigned {job.namespace}/{job.name} to {job.node}",
               "default-scheduler", scheduler_style=True),
        _event(rv, job, "Pulling", job.pull_start, "Pulling image", "kubelet"),
        _event(rv, job, "Pulled", job.pull_end, "Successfully pulled image", "kubelet"),
    ]
    for i, start in enumerate(job.container_starts):
        evs.append(_event(rv, job, "Started", start, "Started container worker", "kubelet"))
        if i < len(job.killed_at):
            evs.append(_event(rv, job, "Unhealthy", job.killed_at[i] - 1,
                              "Startup probe failed: HTTP probe failed with statuscode: 503",
                              "kubelet", "Warning"))
            evs.append(_event(rv, job, "Killing", job.killed_at[i],
                              "Container worker failed startup probe, will be restarted",
                              "kubelet"))
    return evs


def scaled_objects() -> dict:
    return {
        "apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
        "items": [
            {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledJob",
             "metadata": {"name": "batch-infer", "namespace": "ml-batch", "uid": "sj-batch-infer"},
             "spec": {"pollingInterval": POLLING, "maxReplicaCount": 8,
                      "successfulJobsHistoryLimit": 100,
                      "triggers": [{"type": "rabbitmq", "metadata": {"queueName": "infer"}}]}},
            {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
             "metadata": {"name": "gpu-warm-pool", "namespace": "ml-batch", "uid": "so-warm"},
             "spec": {"scaleTargetRef": {"name": "gpu-warm-pool"}, "pollingInterval": POLLING,
                      "cooldownPeriod": COOLDOWN, "minReplicaCount": 0, "maxReplicaCount": 4,
                      "triggers": [{"type": "rabbitmq", "metadata": {"queueName": "infer"}}]}},
        ],
    }


def write_k8s(world: World, out, rv: RV) -> list[str]:
    """Write the Kubernetes side; returns the file names written."""
    k8s = out / "k8s" / f"cluster={CLUSTER}"
    k8s.mkdir(parents=True, exist_ok=True)
    by_day: dict[int, list[bytes]] = {}
    events: list[dict] = []
    nodes: list[tuple[str, dict]] = []
    for inst in world.instances:
        if inst.node_name:
            nodes.extend(node_versions(inst, rv))
        for job in inst.jobs:
            d = (job.created - world.window_start) // 86400
            by_day.setdefault(d, []).extend(pod_version_lines(job, rv))
            events.extend(events_for(job, rv))
    files = []
    for d, rows in sorted(by_day.items()):
        name = f"watch-pods-{d:02d}.jsonl"
        with open(k8s / name, "wb") as f:
            f.write(b"".join(line + b"\n" for line in rows))
        files.append(name)
    # kubectl get nodes --watch --output-watch-events -o json: concatenated pretty JSON
    with open(k8s / "nodes-watch.json", "w", encoding="utf-8") as f:
        for kind, obj in nodes:
            f.write(json.dumps({"type": kind, "object": obj}, indent=4) + "\n")
    events.sort(key=lambda e: e["metadata"]["creationTimestamp"])
    with open(k8s / "events.json", "wb") as f:
        f.write(dumps_indented({"apiVersion": "v1", "kind": "List",
                                "metadata": {"resourceVersion": ""}, "items": events}, 1))
    with open(k8s / "keda.json", "w", encoding="utf-8") as f:
        json.dump(scaled_objects(), f, indent=1)
    return [*files, "nodes-watch.json", "events.json", "keda.json", *write_keda(world, k8s),
            *write_hpa(world, k8s)]
