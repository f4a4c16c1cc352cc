"""A ScaledObject-scaled inference Deployment, one activation a day, as KEDA and the HPA run it.

KEDA scales the target from zero (`KEDAScaleTargetActivated`, lastActiveTime set), moves
`status.lastActiveTime` on every poll with an active trigger, and scales to zero at the first
poll after lastActiveTime + cooldownPeriod (kedacore/keda pkg/scaling/executor/
scale_scaledobjects.go, scaleToZeroOrIdle), then records `KEDAScaleTargetDeactivated`; while it
waits the Active condition reads ScalerCooldown. Every other day the scale to zero comes 20-60
min late (an operator restart, a stuck lease). Between 1 and N the HPA scales: when demand
halves, the second replica goes after the scale-down stabilization window (300 s: the
ScaledObject sets no advanced.horizontalPodAutoscalerConfig), long before the 1 → 0. Each
replica runs on a node of its own (a Runpod pod); after a replica ends, its node stays only for
its scale-down. `keda_findings` derives SCALE_TO_ZERO_LATE from this timeline alone.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime

from .world import (
    COOLDOWN,
    NODE_SCALE_DOWN,
    POLLING,
    Ids,
    Instance,
    Job,
    Session,
    World,
)

NAMESPACE = "ml-serve"
TARGET = "llm-serve"
SO_UID = "so-llm-serve-0b7e"
STABILIZATION = 300  # Kubernetes' default scale-down stabilization window
GPU = "NVIDIA L40S"
TEAM = "search"


@dataclass
class Cycle:
    """One activation → scale to zero of the ScaledObject (epoch seconds)."""

    activated: int
    scaled_out: int  # the HPA's 1 → 2
    demand_halved: int
    scaled_in: int  # the HPA's 2 → 1, stabilization window after demand_halved
    last_active: int  # the last poll with an active trigger: status.lastActiveTime
    deactivated: int  # KEDA's 1 → 0
    nodes: tuple[str, str]  # the Runpod pods of replica 1 (until 1 → 0) and replica 2

    @property
    def due(self) -> int:
        return self.last_active + COOLDOWN


def _ts(t: int, micro: bool = False) -> str:
    f = "%Y-%m-%dT%H:%M:%S.000000Z" if micro else "%Y-%m-%dT%H:%M:%SZ"
    return datetime.fromtimestamp(t, tz=UTC).strftime(f)


def _replica(rng, ids: Ids, inst: Instance, created: int, pod_hash: str) -> Job:
    """The replica's node comes up for it (the pod waits Pending), then the pod starts."""
    start = created + rng.randint(5, 20)
    registered = start + rng.randint(50, 150)
    ready = registered + rng.randint(10, 40)
    job = Job(uid=ids.uid(), name=f"{TARGET}-{pod_hash}-{ids.short(5)}", namespace=NAMESPACE,
              team=TEAM, node=inst.node_name, gpus=1, created=created, scheduled=ready + 2,
              replica_of=TARGET)
    job.pull_start = job.scheduled + 1
    job.pull_end = job.pull_start + rng.randint(20, 90)
    job.container_starts.append(job.pull_end + 1)
    job.ready = job.pull_end + 1 + rng.randint(60, 240)
    inst.sessions.append(Session(start=start, stop=0, node_uid=ids.uid(),
                                 node_registered=registered, node_ready=ready))
    inst.jobs.append(job)
    return job


def _end(rng, inst: Instance, job: Job, removed_at: int) -> None:
    job.finished = removed_at + rng.randint(3, 25)  # the container's termination
    job.deleted = job.finished + 1
    job.exit_reason = "Completed"
    inst.sessions[-1].stop = job.finished + rng.randint(*NODE_SCALE_DOWN)
    inst.terminated = inst.sessions[-1].stop


def add_keda_fleet(world: World) -> None:
    """Append the Deployment's nodes to `world.instances` and its cycles to `world.keda_cycles`
    (a random stream of its own: the rest of the world is the same with or without it)."""
    rng = random.Random(world.seed * 7919 + 36)
    ids = Ids(rng)
    pod_hash = "7c9d" + ids.short(5)
    for d in range(world.days):
        day0 = world.window_start + d * 86400
        activated = day0 + 15 * 3600 + rng.randint(0, 1800)
        insts = []
        for _k in range(2):
            inst = Instance(pod_id=ids.short(14), role="keda_replica", node_name=None, mapping="label",
                            gpu_type=GPU, gpu_count=1, volume_gb=50, container_gb=20,
                            created=0, terminated=None)
            inst.node_name = f"gpu-serve-{ids.short(5)}"
            insts.append(inst)
        first = _replica(rng, ids, insts[0], activated + 1, pod_hash)
        scaled_out = first.ready + rng.randint(300, 900)
        second = _replica(rng, ids, insts[1], scaled_out, pod_hash)
        demand_halved = second.ready + rng.randint(1800, 3600)
        scaled_in = demand_halved + STABILIZATION + rng.randint(0, 15)  # the HPA syncs every 15 s
        last_active = scaled_in + rng.randint(900, 2400)
        deactivated = last_active + COOLDOWN + rng.randint(1, POLLING)
        if d % 2 == 1:
            deactivated += rng.randint(1200, 3600)
        _end(rng, insts[1], second, scaled_in)
        _end(rng, insts[0], first, deactivated)
        for inst in insts:
            inst.created = inst.sessions[0].start
        world.instances.extend(insts)
        world.keda_cycles.append(Cycle(activated, scaled_out, demand_halved, scaled_in, last_active,
                                       deactivated, (insts[0].pod_id, insts[1].pod_id)))


def _object(rv: int, created: int, last_active: int, active: bool, reason: str, since: int,
            name: str = TARGET, uid: str = SO_UID, cooldown: int = COOLDOWN) -> dict:
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": {"name": name, "namespace": NAMESPACE, "uid": uid,
                         "resourceVersion": str(rv), "generation": 1, "creationTimestamp": _ts(created)},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                     "pollingInterval": POLLING, "cooldownPeriod": cooldown,
                     "minReplicaCount": 0, "maxReplicaCount": 2,
                     "triggers": [{"type": "rabbitmq", "metadata": {"queueName": "serve", "value": "8"}}]},
            "status": {"scaleTargetKind": "apps/v1.Deployment", "lastActiveTime": _ts(last_active),
                       "hpaName": f"keda-hpa-{name}",
                       "conditions": [{"type": "Ready", "status": "True", "reason": "ScaledObjectReady"},
                                      {"type": "Active", "status": "True" if active else "False",
                                       "reason": reason, "lastTransitionTime": _ts(since)}]}}


def _keda_event(n: int, reason: str, t: int, note: str, name: str = TARGET, uid: str = SO_UID,
                prefix: str = "ev-keda", rv0: int = 800000) -> dict:
    # KEDA's events.k8s.io recorder, read through core/v1: eventTime, no first/lastTimestamp
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{name}.{t:x}", "namespace": NAMESPACE, "uid": f"{prefix}-{n}",
                         "resourceVersion": str(rv0 + n), "creationTimestamp": _ts(t)},
            "involvedObject": {"kind": "ScaledObject", "namespace": NAMESPACE, "name": name,
                               "uid": uid, "apiVersion": "keda.sh/v1alpha1"},
            "reason": reason, "message": note, "type": "Normal", "source": {},
            "firstTimestamp": None, "lastTimestamp": None, "eventTime": _ts(t, micro=True),
            "action": reason.replace("KEDAScaleTarget", ""), "reportingComponent": "keda-operator",
            "reportingInstance": "keda-operator-0"}


def write_keda(world: World, k8s) -> list[str]:
    """The ScaledObject's watch stream (every status change) and KEDA's and the HPA's events."""
    if not world.keda_cycles:
        return []
    lines, events, rv = [], [], 700000
    target = f"apps/v1.Deployment {NAMESPACE}/{TARGET}"
    for i, c in enumerate(world.keda_cycles):
        versions = [(c.activated, c.activated, True, "ScalerActive", c.activated)]
        t = c.activated + 600
        while t < c.last_active:  # a sample of the polls that moved lastActiveTime
            versions.append((t, t, True, "ScalerActive", c.activated))
            t += 1200
        versions.append((c.last_active, c.last_active, True, "ScalerActive", c.activated))
        cooling = c.last_active + POLLING
        versions.append((cooling, c.last_active, False, "ScalerCooldown", cooling))
        versions.append((c.deactivated, c.last_active, False, "ScalerNotActive", c.deactivated))
        for k, (_, last, active, reason, since) in enumerate(versions):
            rv += 1
            lines.append({"type": "ADDED" if i == 0 and k == 0 else "MODIFIED",
                          "object": _object(rv, world.window_start - 86400, last, active, reason,
                                            since)})
        events.append(_keda_event(3 * i, "KEDAScaleTargetActivated", c.activated,
                                  f"Scaled {target} from 0 to 1, triggered by rabbitMQScaler"))
        events.append(_keda_event(3 * i + 1, "KEDAScaleTargetDeactivated", c.deactivated,
                                  f"Deactivated {target} from 1 to 0"))
        events.append({"apiVersion": "v1", "kind": "Event",
                       "metadata": {"name": f"keda-hpa-{TARGET}.{c.scaled_in:x}", "namespace": NAMESPACE,
                                    "uid": f"ev-keda-{3 * i + 2}", "resourceVersion": str(800000 + 3 * i + 2),
                                    "creationTimestamp": _ts(c.scaled_in)},
                       "involvedObject": {"kind": "HorizontalPodAutoscaler", "namespace": NAMESPACE,
                                          "name": f"keda-hpa-{TARGET}", "apiVersion": "autoscaling/v2"},
                       "reason": "SuccessfulRescale", "message": "New size: 1; reason: All metrics below target",
                       "type": "Normal", "source": {"component": "horizontal-pod-autoscaler"},
                       "firstTimestamp": _ts(c.scaled_in), "lastTimestamp": _ts(c.scaled_in), "count": 1,
                       "eventTime": None})
    (k8s / "keda-scaledobjects-watch.jsonl").write_text(
        "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines), encoding="utf-8")
    (k8s / "keda-events.json").write_text(json.dumps(
        {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": events},
        indent=1), encoding="utf-8")
    return ["keda-scaledobjects-watch.jsonl", "keda-events.json"]


def keda_findings(world: World, thresholds: dict) -> set[tuple[str, str, str]]:
    """SCALE_TO_ZERO_LATE where KEDA scaled to zero more than one poll + the tolerance after
    lastActiveTime + cooldownPeriod; no other finding (each node leaves within its scale-down)."""
    out = set()
    for c in world.keda_cycles:
        if c.deactivated - c.due > POLLING + thresholds["scale_to_zero_tolerance_seconds"]:
            day = datetime.fromtimestamp(c.due, tz=UTC).strftime("%Y-%m-%d")
            out.add(("SCALE_TO_ZERO_LATE", c.nodes[0], day))
    return out
