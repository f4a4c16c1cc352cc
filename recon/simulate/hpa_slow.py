"""A second ScaledObject whose HPA scales in late: HPA_SCALE_DOWN_SLOW, and its near miss.

`llm-warm` keeps one replica warm for 30 min after its last request (cooldownPeriod 1800 s,
1 → 0 only) and sets no advanced.horizontalPodAutoscalerConfig: the HPA's scale-down
stabilization window is 300 s. One activation a day: KEDA scales it from zero, the HPA adds a
second replica, and the trigger goes quiet. KEDA's first poll without an active trigger turns
the Active condition False (ScalerCooldown), one pollingInterval after the last active poll:
from then every HPA recommendation is its minReplicas 1, and the HPA should scale 2 → 1 one
window later (kubernetes pkg/controller/podautoscaler/horizontal.go,
stabilizeRecommendationWithBehaviors). On the first day it does so 10-20 min late (the HPA
could not read the metric); on the others within its next syncs. KEDA scales the last replica
to zero on time, lastActiveTime + cooldownPeriod. Each replica has a node of its own.
`hpa_findings` derives HPA_SCALE_DOWN_SLOW from this timeline alone.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime

from .keda import GPU, NAMESPACE, STABILIZATION, _end, _keda_event, _object, _replica, _ts
from .world import POLLING, Ids, Instance, World

NAME = "llm-warm"
SO_UID = "so-llm-warm-5d21"
WARM_COOLDOWN = 1800  # the ScaledObject's cooldownPeriod: a replica kept warm for 30 min


@dataclass
class HpaCycle:
    """One activation → scale to zero of llm-warm (epoch seconds)."""

    activated: int
    scaled_out: int  # the HPA's 1 → 2
    last_active: int  # the last poll with an active trigger: status.lastActiveTime
    fell: int  # KEDA's first poll without one: the Active condition turns False
    scaled_in: int  # the HPA's 2 → 1
    surplus_end: int  # the second replica's end (its container's termination)
    deactivated: int  # KEDA's 1 → 0
    nodes: tuple[str, str]  # the Runpod pods of replica 1 (until 1 → 0) and replica 2


def add_hpa_fleet(world: World) -> None:
    """Append llm-warm's nodes to `world.instances` and its cycles to `world.hpa_cycles` (a
    random stream of its own: the rest of the world is the same with or without it)."""
    rng = random.Random(world.seed * 7919 + 57)
    ids = Ids(rng)
    pod_hash = "5f8b" + ids.short(5)
    for d in range(world.days):
        day0 = world.window_start + d * 86400
        activated = day0 + 10 * 3600 + rng.randint(0, 1800)
        insts = []
        for _k in range(2):
            inst = Instance(pod_id=ids.short(14), role="keda_replica", node_name=f"gpu-warm-{ids.short(5)}",
                            mapping="label", gpu_type=GPU, gpu_count=1, volume_gb=50, container_gb=20,
                            created=0, terminated=None)
            insts.append(inst)
        first = _replica(rng, ids, insts[0], activated + 1, pod_hash)
        first.name = first.name.replace("llm-serve-", f"{NAME}-", 1)
        first.replica_of = NAME
        scaled_out = first.ready + rng.randint(300, 900)
        second = _replica(rng, ids, insts[1], scaled_out, pod_hash)
        second.name = second.name.replace("llm-serve-", f"{NAME}-", 1)
        second.replica_of = NAME
        last_active = second.ready + rng.randint(1800, 3600)
        fell = last_active + POLLING
        if d == 0:  # the slow day: 10-20 min after the window, before KEDA's own deadline
            scaled_in = fell + STABILIZATION + rng.randint(600, 1200)
        else:  # within the HPA's next sync (every 15 s)
            scaled_in = fell + STABILIZATION + rng.randint(0, 15)
        deactivated = last_active + WARM_COOLDOWN + rng.randint(1, POLLING)
        _end(rng, insts[1], second, scaled_in)
        _end(rng, insts[0], first, deactivated)
        for inst in insts:
            inst.created = inst.sessions[0].start
        world.instances.extend(insts)
        world.hpa_cycles.append(HpaCycle(activated, scaled_out, last_active, fell, scaled_in, second.finished,
                                         deactivated, (insts[0].pod_id, insts[1].pod_id)))


def _hpa_event(n: int, t: int, message: str) -> dict:
    # the HPA controller's core/v1 recorder: first/lastTimestamp and count, no eventTime
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"keda-hpa-{NAME}.{t:x}", "namespace": NAMESPACE, "uid": f"ev-warm-hpa-{n}",
                         "resourceVersion": str(860000 + n), "creationTimestamp": _ts(t)},
            "involvedObject": {"kind": "HorizontalPodAutoscaler", "namespace": NAMESPACE,
                               "name": f"keda-hpa-{NAME}", "apiVersion": "autoscaling/v2"},
            "reason": "SuccessfulRescale", "message": message, "type": "Normal",
            "source": {"component": "horizontal-pod-autoscaler"},
            "firstTimestamp": _ts(t), "lastTimestamp": _ts(t), "count": 1, "eventTime": None}


def write_hpa(world: World, k8s) -> list[str]:
    """llm-warm's watch stream (every status change) and KEDA's and the HPA's events."""
    if not world.hpa_cycles:
        return []
    lines, events, rv = [], [], 750000
    target = f"apps/v1.Deployment {NAMESPACE}/{NAME}"
    metric = ("external metric s0-rabbitmq-serve(&LabelSelector{MatchLabels:map[string]string{"
              f"scaledobject.keda.sh/name: {NAME},}},MatchExpressions:[]LabelSelectorRequirement{{}},}})")
    for i, c in enumerate(world.hpa_cycles):
        versions = [(c.activated, True, "ScalerActive", c.activated)]
        t = c.activated + 600
        while t < c.last_active:  # a sample of the polls that moved lastActiveTime
            versions.append((t, True, "ScalerActive", c.activated))
            t += 1200
        versions.append((c.last_active, True, "ScalerActive", c.activated))
        versions.append((c.last_active, False, "ScalerCooldown", c.fell))
        versions.append((c.last_active, False, "ScalerNotActive", c.deactivated))
        for k, (last, active, reason, since) in enumerate(versions):
            rv += 1
            lines.append({"type": "ADDED" if i == 0 and k == 0 else "MODIFIED",
                          "object": _object(rv, world.window_start - 86400, last, active, reason, since,
                                            name=NAME, uid=SO_UID, cooldown=WARM_COOLDOWN)})
        kw = {"name": NAME, "uid": SO_UID, "prefix": "ev-warm", "rv0": 850000}
        events.append(_keda_event(2 * i, "KEDAScaleTargetActivated", c.activated,
                                  f"Scaled {target} from 0 to 1, triggered by rabbitMQScaler", **kw))
        events.append(_keda_event(2 * i + 1, "KEDAScaleTargetDeactivated", c.deactivated,
                                  f"Deactivated {target} from 1 to 0", **kw))
        events.append(_hpa_event(2 * i, c.scaled_out, f"New size: 2; reason: {metric} above target"))
        events.append(_hpa_event(2 * i + 1, c.scaled_in, "New size: 1; reason: All metrics below target"))
    (k8s / "keda-warm-scaledobjects-watch.jsonl").write_text(
        "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines), encoding="utf-8")
    (k8s / "keda-warm-events.json").write_text(json.dumps(
        {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": events},
        indent=1), encoding="utf-8")
    return ["keda-warm-scaledobjects-watch.jsonl", "keda-warm-events.json"]


def surplus_seconds(c: HpaCycle, thresholds: dict) -> int:
    """The second replica's seconds beyond fell + window + tolerance, until it ended, at most
    until KEDA's own deadline for the 1 → 0 (lastActiveTime + cooldownPeriod)."""
    due = c.fell + STABILIZATION + thresholds["hpa_scale_down_tolerance_seconds"]
    return max(0, min(c.surplus_end, c.last_active + WARM_COOLDOWN) - due)


def hpa_findings(world: World, thresholds: dict) -> set[tuple[str, str, str]]:
    """HPA_SCALE_DOWN_SLOW on the second replica's node where it outlived the HPA's deadline."""
    out = set()
    for c in world.hpa_cycles:
        if surplus_seconds(c, thresholds) > 0:
            due = c.fell + STABILIZATION + thresholds["hpa_scale_down_tolerance_seconds"]
            out.add(("HPA_SCALE_DOWN_SLOW", c.nodes[1], datetime.fromtimestamp(due, tz=UTC).strftime("%Y-%m-%d")))
    return out
