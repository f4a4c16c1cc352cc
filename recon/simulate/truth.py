"""Ground truth: what the reconciliation must find, computed from the world itself.

Deliberately a different method from the SQL: a per-second mask over every billed session,
so the two implementations check each other.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime

import numpy as np

from .emit_runpod import existence_end, instance_hours, per_gb_second
from .hpa_slow import hpa_findings
from .keda import keda_findings
from .world import (
    SAMPLE_DISK_RUNNING_GB_MONTH,
    SAMPLE_VOLUME_STOPPED_GB_MONTH,
    Instance,
    World,
)

CATS = ("unobserved", "busy", "startup", "tail", "idle_gap")


def _iso(t: int | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, tz=UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def _day(t: int) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%d")


def ground_truth(world: World, thresholds: dict) -> dict:
    rows: dict[tuple[str, str], dict] = {}
    findings: set[tuple[str, str, str]] = set()
    # the fleet's batch pods are a ScaledJob's: no cooldownPeriod, the node's scale-down only
    expected_tail = thresholds["scale_down_grace_seconds"] + thresholds["tail_tolerance_seconds"]

    def row(rid: str, kind: str, day: str) -> dict:
        key = (rid, day)
        if key not in rows:
            rows[key] = {"resource_id": rid, "resource_kind": kind, "day": day,
                         "billed_seconds": 0, "task_finished_at": None, "compute_stopped_at": None,
                         "billed_after_exit_seconds": 0 if kind == "instance" else None,
                         "lingering_storage_seconds": 0, "serverless_idle_seconds": 0,
                         "categories": {}}
        return rows[key]

    for inst in world.instances:
        gpu_jobs = [j for j in inst.jobs if j.scheduled is not None]
        for s in inst.sessions:
            n = s.stop - s.start
            cat = np.full(n, 4, dtype=np.int8)  # idle_gap
            if inst.node_name is None:
                cat[:] = 0
            else:
                in_s = [j for j in gpu_jobs if j.scheduled < s.stop and j.finished > s.start]
                last = max((j.finished for j in in_s), default=None)
                if last is not None:
                    cat[max(0, last - s.start):] = 3
                startup = np.zeros(n, dtype=bool)
                busy = np.zeros(n, dtype=bool)
                startup[: max(0, s.node_ready - s.start)] = True
                for j in in_s:
                    a, r, f = (max(0, t - s.start) for t in (j.scheduled, j.ready, j.finished))
                    startup[a:r] = True
                    busy[r:f] = True
                cat[startup] = 2
                cat[busy] = 1
                if last is not None and s.stop - last > expected_tail and inst.billed:
                    findings.add(("BILLED_AFTER_EXIT", inst.pod_id, _day(last)))
            if not inst.billed:
                continue
            t = s.start
            while t < s.stop:
                day_end = t - t % 86400 + 86400
                seg = cat[t - s.start: min(s.stop, day_end) - s.start]
                r = row(inst.pod_id, "instance", _day(t))
                r["billed_seconds"] += len(seg)
                for k, c in enumerate(CATS):
                    cnt = int((seg == k).sum())
                    if cnt:
                        r["categories"][c] = r["categories"].get(c, 0) + cnt
                r["billed_after_exit_seconds"] += int((seg == 3).sum())
                if s.stop <= day_end:
                    r["compute_stopped_at"] = max(r["compute_stopped_at"] or "", _iso(s.stop))
                t = day_end
        for j in inst.jobs:
            if j.killed_at and inst.billed:  # the startup probe killed it: budget exceeded
                findings.add(("STARTUP_BUDGET_EXCEEDED", inst.pod_id, _day(j.container_starts[0])))
            if j.scheduled is None and any(  # pending on Insufficient nvidia.com/gpu, nodes billed
                    i.billed and any(x.start < j.deleted and x.stop > j.created for x in i.sessions)
                    for i in world.instances):
                findings.add(("UNSCHEDULABLE_GPU", f"pod:{j.namespace}/{j.name}", _day(j.created)))
        for j in gpu_jobs:
            r = row(inst.pod_id, "instance", _day(j.finished))
            r["task_finished_at"] = max(r["task_finished_at"] or "", _iso(j.finished))
        # storage billed while no compute ran
        end = existence_end(inst, world)
        if inst.billed:
            for d in range((inst.created - world.window_start) // 86400, world.days):
                d0 = world.window_start + d * 86400
                d1 = d0 + 86400
                exists = max(0, min(end, d1) - max(inst.created, d0))
                comp = sum(max(0, min(s.stop, d1) - max(s.start, d0)) for s in inst.sessions)
                if exists - comp > 0:
                    r = row(inst.pod_id, "instance", _day(d0))
                    r["lingering_storage_seconds"] += exists - comp
                    r["categories"]["storage_lingering"] = exists - comp
                if comp:
                    row(inst.pod_id, "instance", _day(d0))["categories"]["storage_running"] = comp
        if inst.billed:
            _amounts(inst, world, rows)
        for (rid, day), r in list(rows.items()):
            if rid != inst.pod_id:
                continue
            if r["lingering_storage_seconds"] > thresholds["storage_lingering_age_seconds"]:
                findings.add(("STORAGE_LINGERING", rid, day))
            c = r["categories"]
            no_work = not any(j.scheduled < _e(day) and j.finished > _s(day) for j in gpu_jobs)
            if (r["billed_seconds"] > thresholds["billed_without_activity_min_seconds"]
                    and no_work and not c.get("tail")):
                findings.add(("BILLED_WITHOUT_ACTIVITY", rid, day))
            if not inst.billed and r["task_finished_at"]:
                findings.add(("ACTIVITY_WITHOUT_BILLING", rid, day))

    for ep in world.endpoints:
        per_day = defaultdict(lambda: defaultdict(int))  # ms
        for ws in ep.sessions:
            day = _day(ws.start_ms // 1000)
            cats = per_day[day]
            first = ws.exec_windows[0][0]
            cats["cold_start"] += first - ws.start_ms
            cats["execution"] += sum(b - a for a, b in ws.exec_windows)
            cats["idle"] += ws.stop_ms - ws.start_ms - (first - ws.start_ms) - sum(
                b - a for a, b in ws.exec_windows)
            cats["rounding"] += ws.billed_ms - (ws.stop_ms - ws.start_ms)
            cats["_expected_idle"] += sum(ws.exec_windows[k + 1][0] - ws.exec_windows[k][1]
                                          for k in range(len(ws.exec_windows) - 1))
            cats["_expected_idle"] += ep.idle_timeout_s * 1000
            cats["_sessions"] += 1
            cats["_last_done"] = max(cats["_last_done"], ws.exec_windows[-1][1])
        for day, cats in per_day.items():
            r = row(ep.endpoint_id, "serverless", day)
            billed = sum(v for k, v in cats.items() if not k.startswith("_"))
            r["billed_seconds"] = billed / 1000
            r["serverless_idle_seconds"] = cats["idle"] / 1000
            r["categories"] = {k: v / 1000 for k, v in cats.items() if not k.startswith("_") and v}
            r["task_finished_at"] = datetime.fromtimestamp(
                cats["_last_done"] / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            tol = thresholds["serverless_idle_tolerance_seconds"] * 1000 * cats["_sessions"]
            if cats["idle"] - cats["_expected_idle"] > tol:
                findings.add(("SERVERLESS_IDLE_EXCESS", ep.endpoint_id, day))

    for v in world.volumes:
        for d in range(world.days):
            day = _day(world.window_start + d * 86400)
            r = row(v.volume_id, "network_volume", day)
            r["billed_seconds"] = 86400
            r["lingering_storage_seconds"] = 86400
            r["categories"] = {"network_volume": 86400}
            if 86400 > thresholds["storage_lingering_age_seconds"]:
                findings.add(("STORAGE_LINGERING", v.volume_id, day))

    findings |= keda_findings(world, thresholds)
    findings |= hpa_findings(world, thresholds)
    return {
        "kind": "recon.GroundTruth",
        "seed": world.seed,
        "resource_days": sorted(rows.values(), key=lambda r: (r["resource_id"], r["day"])),
        "findings": [{"code": c, "resource_id": r, "day": d} for c, r, d in sorted(findings)],
    }


def _amounts(inst: Instance, world: World, rows: dict) -> None:
    """USD per category of each of the pod's days: compute seconds at its rate; disk by the hour,
    the running rate on volume + container disk for its compute seconds and the stopped rate on
    the volume for the rest of its existence (as emit_runpod bills it)."""
    per_s = inst.cost_per_hour / 3600
    mine = [r for (rid, _), r in rows.items() if rid == inst.pod_id]
    for r in mine:
        r["amounts"] = {c: per_s * s for c, s in r["categories"].items() if c in CATS}
    run = per_gb_second(SAMPLE_DISK_RUNNING_GB_MONTH) * (inst.volume_gb + inst.container_gb)
    stop = per_gb_second(SAMPLE_VOLUME_STOPPED_GB_MONTH) * inst.volume_gb
    for h, c, stopped, _, _ in instance_hours(inst, world):
        r = rows.get((inst.pod_id, _day(h)))
        for cat, usd in (("storage_running", run * c), ("storage_lingering", stop * stopped)):
            if r is not None and usd and cat in r["categories"]:
                r["amounts"][cat] = r["amounts"].get(cat, 0) + usd
    for r in mine:
        r["amounts"] = {c: str(v) for c, v in r["amounts"].items()}  # exact, for the JSON


def _s(day: str) -> int:
    return int(datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp())


def _e(day: str) -> int:
    return _s(day) + 86400
