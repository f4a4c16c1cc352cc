"""Serverless scenarios the fleet's endpoints do not raise on their own, on the first day:

* `simactive01`, an endpoint with one active worker (`workers.min` = 1: "active workers bill
  continuously"): it starts at 06:00, runs one job, and bills until 18:00 with no other job
  → SERVERLESS_ALWAYS_ON for the hours no job touched (07-17), and SERVERLESS_IDLE_EXCESS for
  the rest of hour 06's idle;
* `simstuck01`, a flex endpoint (`workers.min` = 0, idleTimeout 5 s) whose worker runs its job
  at 20:00 and does not scale down: the workers API shows it up 6795 s past its last job + idle
  timeout, and it bills until 22:00 → SERVERLESS_STUCK_WORKER for the time the snapshots prove,
  SERVERLESS_IDLE_EXCESS for its last 5 minutes, which no snapshot covers.

Whole seconds everywhere; the truth (extras_truth) comes from the same timeline, by the rules of
docs/design.md: an hour is job-free when no job was queued, running or in its idle timeout (+ the
idle tolerance) in it; a stuck worker's window runs from its last job + idle timeout to when it
was last seen; the idle excess is what neither holds.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from .emit_runpod import add_to_account, iso, iso_ms, money
from .world import SAMPLE_SERVERLESS_PER_SECOND, day_epoch

ACTIVE = "simactive01"
STUCK = "simstuck01"
ENDPOINTS = (ACTIVE, STUCK)
IDLE_TIMEOUT = 5  # s, both endpoints
# the files written under runpod/ (besides the account bill, which gains these hours' amounts);
# names the fleet's globs in tests do not take for its own (serverless-workers*.jsonl, *jobs*.jsonl)
FILES = ("inventory-serverless-extras.json", "scenario-workers.jsonl", "scenario-job-records.jsonl",
         "billing-serverless-extras.json")


def timeline(start_day: date) -> dict[str, dict[str, int]]:
    """Instants in seconds: each worker's start, its one job and when its billing stops."""
    d0 = day_epoch(start_day)
    a = {"start": d0 + 6 * 3600}
    a.update(submitted=a["start"] + 10, exec_start=a["start"] + 30, done=a["start"] + 150,
             stop=d0 + 18 * 3600, seen=[a["start"] + 60, d0 + 12 * 3600])
    s = {"start": d0 + 20 * 3600}
    s.update(submitted=s["start"] + 5, exec_start=s["start"] + 40, done=s["start"] + 100,
             stop=s["start"] + 7200, seen=[s["start"] + 60, s["start"] + 3600, s["start"] + 6900])
    return {ACTIVE: a, STUCK: s}


def write_serverless_extras(out: Path, start_day: date) -> list[str]:
    t = timeline(start_day)
    rp = out / "runpod"
    eps = [{"id": ep, "name": ep, "type": "QUEUE", "gpu": {"pools": ["ADA_24"], "count": 1},
            "workers": {"min": 1 if ep == ACTIVE else 0, "max": 3, "idleTimeout": IDLE_TIMEOUT},
            "timeout": 600000, "createdAt": iso(day_epoch(start_day) - 86400 * 30)}
           for ep in ENDPOINTS]
    (rp / "inventory-serverless-extras.json").write_text(json.dumps(
        {"endpoints": eps, "x_recon": {"endpoint": "/v2/serverless",
                                        "pulledAt": iso(day_epoch(start_day) + 60)}}, indent=1))
    with open(rp / "scenario-workers.jsonl", "w", encoding="utf-8") as wf, \
            open(rp / "scenario-job-records.jsonl", "w", encoding="utf-8") as jf:
        for ep, x in t.items():
            wid = f"wk-{ep}"
            for at in x["seen"]:
                busy = x["exec_start"] <= at < x["done"]
                worker = {"id": wid, "status": "RUNNING" if busy else "IDLE", "isStale": False,
                          "version": 1, "gpuCount": 1, "uptimeSeconds": at - x["start"],
                          "gpuTypeId": "NVIDIA L4", "dataCenterId": "US-KS-2",
                          "startedAt": iso(x["start"])}
                wf.write(json.dumps({
                    "endpointVersion": 1, "workers": [worker],
                    "summary": {"running": int(busy), "idle": int(not busy), "initializing": 0,
                                "throttled": 0, "unhealthy": 0, "total": 1},
                    "x_recon": {"endpoint": "/v2/serverless/{id}/workers", "endpointId": ep,
                                "pulledAt": iso(at)}}) + "\n")
            jf.write(json.dumps({
                "id": f"job-{ep}-1", "status": "COMPLETED",
                "delayTime": (x["exec_start"] - x["submitted"]) * 1000,
                "executionTime": (x["done"] - x["exec_start"]) * 1000, "workerId": wid,
                "endpointId": ep, "submittedAt": iso_ms(x["submitted"] * 1000),
                "completedAt": iso_ms(x["done"] * 1000)}) + "\n")
    # the bill: each worker from its start to its stop, by the hour (whole hours here)
    recs = []
    for ep, x in t.items():
        for h in range(x["start"] - x["start"] % 3600, x["stop"], 3600):
            amt = SAMPLE_SERVERLESS_PER_SECOND * (min(x["stop"], h + 3600) - max(x["start"], h))
            recs.append({"startTime": iso(h), "endTime": iso(h + 3600), "serverlessId": ep,
                         "totalAmount": money(amt), "gpuAmount": money(amt), "cpuAmount": 0.0,
                         "diskAmount": 0.0, "feeAmount": 0.0})
    d0 = day_epoch(start_day)
    (rp / "billing-serverless-extras.json").write_text(json.dumps(
        {"records": recs, "metadata": {"query": {"bucketSize": "hour"}, "recordCount": len(recs)},
         "x_recon": {"endpoint": "/v2/billing/serverless", "pulledAt": iso(d0 + 86400 + 7200),
                     "params": {"startTime": iso(d0), "endTime": iso(d0 + 86400),
                                "bucketSize": "hour"}}}, indent=1))
    # the account's hours count the endpoints' worker amounts too
    add_to_account(rp, recs, (("serverlessGpuAmount", "gpuAmount"), ("totalAmount", "gpuAmount")))
    return list(FILES)


def extras_truth(start_day: date, thresholds: dict) -> tuple[list[dict], list[tuple]]:
    """Resource-day rows and findings of these endpoints, from timeline()."""
    t = timeline(start_day)
    day = start_day.isoformat()
    rows, found = [], []
    for ep, x in t.items():
        billed = x["stop"] - x["start"]
        cold, execution = x["exec_start"] - x["start"], x["done"] - x["exec_start"]
        idle = billed - cold - execution  # (x["done"] + 5 s − start) is whole seconds: no round-up
        rows.append({"resource_id": ep, "resource_kind": "serverless", "day": day,
                     "billed_seconds": billed, "task_finished_at": iso(x["done"]),
                     "compute_stopped_at": None, "billed_after_exit_seconds": None,
                     "lingering_storage_seconds": 0, "serverless_idle_seconds": idle,
                     "categories": {"cold_start": cold, "execution": execution, "idle": idle}})
        held = 0
        allowed = x["done"] + IDLE_TIMEOUT
        stuck = (ep != ACTIVE and max(x["seen"]) - allowed
                 > thresholds["serverless_stuck_worker_tolerance_seconds"])
        if stuck:
            found.append(("SERVERLESS_STUCK_WORKER", ep, day))
            held += max(x["seen"]) - allowed
        # hours billed with no job queued, running or in its idle timeout (+ tolerance), and no
        # stuck window over them
        busy_to = allowed + thresholds["serverless_idle_tolerance_seconds"]
        free = [h for h in range(x["start"] - x["start"] % 3600, x["stop"], 3600)
                if not (x["submitted"] < h + 3600 and busy_to > h)
                and not (stuck and allowed < h + 3600 and max(x["seen"]) > h)]
        if len(free) >= thresholds["serverless_always_on_hours"]:
            found.append(("SERVERLESS_ALWAYS_ON", ep, day))
            held += sum(min(x["stop"], h + 3600) - max(x["start"], h) for h in free)
        excess = idle - IDLE_TIMEOUT - held
        if excess > thresholds["serverless_idle_tolerance_seconds"]:
            found.append(("SERVERLESS_IDLE_EXCESS", ep, day))
    return rows, found
