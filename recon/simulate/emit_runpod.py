"""Runpod files: v2 billing envelopes, a saved v1 billing array, inventory snapshots, job records."""

from __future__ import annotations

import json
from bisect import bisect_right
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from functools import lru_cache
from pathlib import Path

from .world import (
    HOURS_PER_MONTH,
    SAMPLE_DISK_RUNNING_GB_MONTH,
    SAMPLE_NETWORK_VOLUME_GB_MONTH,
    SAMPLE_SERVERLESS_PER_SECOND,
    SAMPLE_VOLUME_STOPPED_GB_MONTH,
    Instance,
    World,
)

Q = Decimal("0.0000000001")  # amounts carry 10 decimals


@lru_cache(maxsize=1 << 18)
def iso(t: int) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@lru_cache(maxsize=1 << 18)
def _iso_second(t: int) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.")


def iso_ms(ms: int) -> str:
    # datetime.fromtimestamp(ms / 1000) lands in second ms // 1000 (its fraction is .000-.999)
    return _iso_second(ms // 1000) + f"{ms % 1000:03d}Z"


def overlap(a: int, b: int, c: int, d: int) -> int:
    return max(0, min(b, d) - max(a, c))


def money(x: Decimal) -> float:
    return float(x.quantize(Q, rounding=ROUND_HALF_EVEN))


def hourly_pod_bill(pod_id: str, start: int, stop: int, gpu_per_hour: Decimal,
                    disk_per_second: Decimal) -> list[dict]:
    """/v2/billing/pods records of one pod billed [start, stop): one per hour it touches."""
    recs = []
    h = start - start % 3600
    while h < stop:
        c = min(stop, h + 3600) - max(start, h)
        gpu, disk = gpu_per_hour / 3600 * c, disk_per_second * c
        recs.append({"startTime": iso(h), "endTime": iso(h + 3600), "podId": pod_id,
                     "totalAmount": money(gpu + disk), "gpuAmount": money(gpu), "cpuAmount": 0.0,
                     "diskAmount": money(disk)})
        h += 3600
    return recs


POD_AMOUNTS = (("podGpuAmount", "gpuAmount"), ("podDiskAmount", "diskAmount"),
               ("totalAmount", "totalAmount"))


def add_to_account(rp: Path, records: list[dict], fields=POD_AMOUNTS) -> None:
    """Add a scenario's hourly amounts to the account's totals (billing-account.json), whose
    hours count every resource's: `fields` maps an account key to the record key added to it."""
    path = rp / "billing-account.json"
    acct = json.loads(path.read_text())
    by_start = {r["startTime"]: r for r in acct["records"]}
    for r in records:
        a = by_start.get(r["startTime"])
        if a is None:
            continue
        for k, v in fields:
            a[k] = money(Decimal(str(a.get(k, 0))) + Decimal(str(r[v])))
    path.write_text(json.dumps(acct, indent=1))


def per_gb_second(month_rate: Decimal) -> Decimal:
    return month_rate / (HOURS_PER_MONTH * 3600)


def existence_end(inst: Instance, world: World) -> int:
    return inst.terminated if inst.terminated is not None else world.window_end


def instance_hours(inst: Instance, world: World):
    """(hour_start, compute_s, stopped_s, gpu_amount, disk_amount) for every billed hour."""
    run_rate = per_gb_second(SAMPLE_DISK_RUNNING_GB_MONTH)
    stop_rate = per_gb_second(SAMPLE_VOLUME_STOPPED_GB_MONTH)
    end = existence_end(inst, world)
    h = inst.created - inst.created % 3600
    while h < end:
        c = sum(overlap(s.start, s.stop, h, h + 3600) for s in inst.sessions)
        e = overlap(inst.created, end, h, h + 3600)
        stopped = e - c
        gpu = inst.cost_per_hour / 3600 * c
        disk = (inst.volume_gb + inst.container_gb) * run_rate * c + inst.volume_gb * stop_rate * stopped
        if c or stopped:
            yield h, c, stopped, gpu, disk
        h += 3600


def _envelope(records: list[dict], endpoint: str, start: int, end: int, totals_keys, count_key,
              id_key, pulled: int | None = None) -> dict:
    totals = {k: money(sum((Decimal(str(r[k])) for r in records), Decimal(0))) for k in totals_keys}
    meta = {"query": {"startTime": iso(start), "endTime": iso(end), "bucketSize": "hour"},
            "recordCount": len(records), "totals": totals}
    if count_key:
        meta[count_key] = len({r[id_key] for r in records})
    return {"records": records, "metadata": meta,
            "x_recon": {"endpoint": endpoint, "pulledAt": iso(pulled or end + 7200),
                        "params": {"startTime": iso(start), "endTime": iso(end), "bucketSize": "hour"}}}


def _serverless_hour_ms(ep) -> dict[int, int]:
    """sum(overlap(session, hour)) in ms for every hour start (s) an endpoint's sessions touch."""
    acc: dict[int, int] = {}
    for ws in ep.sessions:
        a, b = ws.start_ms, ws.start_ms + ws.billed_ms
        h = a // 3_600_000 * 3600
        while h * 1000 < b:
            acc[h] = acc.get(h, 0) + overlap(a, b, h * 1000, (h + 3600) * 1000)
            h += 3600
    return acc


def write_runpod(world: World, out, late_day: int | None = None, late_out=None) -> list[str]:
    """The Runpod files under `out/runpod`. `late_day` (a day index): that day's bill (its pod,
    serverless, network-volume and account lines) is left out, as a late export leaves it; with
    `late_out` it is written there instead, pulled a day after the day ended, for a test to
    land when the export arrives."""
    rp = out / "runpod"
    rp.mkdir(parents=True, exist_ok=True)
    late_rp = Path(late_out) / "runpod" if late_out is not None else None
    files: list[str] = []
    w0 = world.window_start
    last = max([w0 + 86400 * world.days] + [s.stop for i in world.instances for s in i.sessions])
    n_days = (last - w0 + 86399) // 86400
    acct: dict[int, dict[str, Decimal]] = {}

    def acc(h: int, key: str, v: Decimal):
        acct.setdefault(h, {}).setdefault(key, Decimal(0))
        acct[h][key] += v

    # every instance's billed hours, computed once and cut by day (instance order kept)
    hours_by_day: dict[int, list] = {}
    for inst in world.instances:
        if not inst.billed:
            continue
        for hour in instance_hours(inst, world):
            hours_by_day.setdefault((hour[0] - w0) // 86400, []).append((inst, hour))
    # serverless: billed milliseconds per endpoint and hour, one pass over the sessions
    sls_ms = [_serverless_hour_ms(ep) for ep in world.endpoints]

    for d in range(n_days):
        d0, d1 = w0 + d * 86400, w0 + (d + 1) * 86400
        if d == late_day and late_rp is None:
            continue
        dest, pulled = (late_rp, d1 + 86400) if d == late_day else (rp, None)
        dest.mkdir(parents=True, exist_ok=True)
        pods, v1 = [], []
        for inst, (h, c, _stopped, gpu, disk) in hours_by_day.get(d, ()):
            if inst.billing_format == "v1":
                rec = {"amount": money(gpu + disk), "timeBilledMs": c * 1000,
                       "time": iso(h) if d % 2 else iso(h).replace("T", " ").rstrip("Z"),
                       "podId": inst.pod_id, "gpuTypeId": inst.gpu_type}
                rec["diskSpaceBilledGb" if d % 2 else "diskSpaceBilledGB"] = \
                    inst.volume_gb + (inst.container_gb if c else 0)
                v1.append(rec)
            else:
                pods.append({"startTime": iso(h), "endTime": iso(h + 3600), "podId": inst.pod_id,
                             "totalAmount": money(gpu + disk), "gpuAmount": money(gpu),
                             "cpuAmount": 0.0, "diskAmount": money(disk)})
            acc(h, "podGpuAmount", gpu)
            acc(h, "podDiskAmount", disk)
        if pods:
            name = f"billing-pods-{d:02d}.json"
            (dest / name).write_text(json.dumps(_envelope(
                pods, "/v2/billing/pods", d0, d1, ("totalAmount", "gpuAmount", "cpuAmount", "diskAmount"),
                "uniquePodCount", "podId", pulled), indent=1))
            files += [name] if dest is rp else []  # (the late bill is not an input of `out`)
        if v1:
            name = f"v1-billing-pods-{d:02d}.json"
            (dest / name).write_text(json.dumps(v1, indent=1))
            files += [name] if dest is rp else []  # (the late bill is not an input of `out`)

        sls = []
        for ep, ms_by_hour in zip(world.endpoints, sls_ms):
            for h in range(d0, d1, 3600):
                s = ms_by_hour.get(h, 0) // 1000
                if s:
                    amt = SAMPLE_SERVERLESS_PER_SECOND * s
                    sls.append({"startTime": iso(h), "endTime": iso(h + 3600),
                                "serverlessId": ep.endpoint_id, "totalAmount": money(amt),
                                "gpuAmount": money(amt), "cpuAmount": 0.0, "diskAmount": 0.0,
                                "feeAmount": 0.0})
                    acc(h, "serverlessGpuAmount", amt)
        if sls:
            name = f"billing-serverless-{d:02d}.json"
            (dest / name).write_text(json.dumps(_envelope(
                sls, "/v2/billing/serverless", d0, d1,
                ("totalAmount", "gpuAmount", "cpuAmount", "diskAmount", "feeAmount"),
                "uniqueServerlessCount", "serverlessId", pulled), indent=1))
            files += [name] if dest is rp else []  # (the late bill is not an input of `out`)

        nvs = []
        if d < world.days:
            for v in world.volumes:
                per_hour = v.size_gb * SAMPLE_NETWORK_VOLUME_GB_MONTH / HOURS_PER_MONTH
                for h in range(d0, d1, 3600):
                    nvs.append({"startTime": iso(h), "endTime": iso(h + 3600),
                                "networkVolumeId": v.volume_id, "totalAmount": money(per_hour),
                                "standardAmount": money(per_hour), "highPerformanceAmount": 0.0})
                    acc(h, "storageStandardAmount", per_hour)
            name = f"billing-network-volumes-{d:02d}.json"
            (dest / name).write_text(json.dumps(_envelope(
                nvs, "/v2/billing/network-volumes", d0, d1,
                ("totalAmount", "standardAmount", "highPerformanceAmount"),
                "uniqueNetworkVolumeCount", "networkVolumeId", pulled), indent=1))
            files += [name] if dest is rp else []  # (the late bill is not an input of `out`)

    recs, late_recs = [], []
    for h in sorted(acct):
        r = {"startTime": iso(h), "endTime": iso(h + 3600)}
        r.update({k: money(v) for k, v in sorted(acct[h].items())})
        r["totalAmount"] = money(sum(acct[h].values(), Decimal(0)))
        (late_recs if (h - w0) // 86400 == late_day else recs).append(r)
    (rp / "billing-account.json").write_text(json.dumps(_envelope(
        recs, "/v2/billing", w0, w0 + 86400 * n_days, ("totalAmount",), None, None), indent=1))
    files.append("billing-account.json")
    if late_rp is not None and late_day is not None:
        d0 = w0 + late_day * 86400
        (late_rp / "billing-account.json").write_text(json.dumps(_envelope(
            late_recs, "/v2/billing", d0, d0 + 86400, ("totalAmount",), None, None,
            d0 + 2 * 86400), indent=1))
    files += _inventory(world, rp)
    return files


def _inventory(world: World, rp) -> list[str]:
    files = []
    # the instances existing at each snapshot time, in world.instances order
    times = range(world.window_start + 1800, world.window_end, 3600)
    alive_at: list[list[Instance]] = [[] for _ in times]
    for inst in world.instances:
        lo = max(0, -(-(inst.created - times.start) // 3600))  # first t >= created
        hi = -(-(existence_end(inst, world) - times.start) // 3600)  # first t >= end
        for k in range(lo, min(hi, len(times))):
            alive_at[k].append(inst)
    with open(rp / "inventory-pods.jsonl", "w", encoding="utf-8") as f:
        for t, alive_insts in zip(times, alive_at):
            pods = []
            for inst in alive_insts:
                running = [s for s in inst.sessions if s.start <= t < s.stop]
                past = [s for s in inst.sessions if s.start <= t]
                pods.append({
                    "id": inst.pod_id, "name": f"{inst.role}-{inst.pod_id[:4]}",
                    "image": "runpod/k8s-node:1.31", "status": "RUNNING" if running else "EXITED",
                    "desiredStatus": "RUNNING" if running else "EXITED",
                    "gpu": {"id": inst.gpu_type, "count": inst.gpu_count},
                    "disk": inst.container_gb,
                    "mounts": {"persistent": {"size": inst.volume_gb, "path": "/workspace"}},
                    "cost": float(inst.cost_per_hour) if running else 0.0,
                    "cloud": "SECURE", "dataCenterId": "US-KS-2",
                    "createdAt": iso(inst.created),
                    "startedAt": iso(past[-1].start) if past else None,
                })
            f.write(json.dumps({"pods": pods, "x_recon": {"endpoint": "/v2/pods",
                                                          "pulledAt": iso(t)}}) + "\n")
    files.append("inventory-pods.jsonl")
    eps = [{"id": ep.endpoint_id, "name": ep.name, "type": "QUEUE",
            "gpu": {"pools": ["ADA_24"], "count": 1},
            "workers": {"min": 0, "max": 5, "idleTimeout": ep.idle_timeout_s},
            "createdAt": iso(world.window_start - 86400 * 30)} for ep in world.endpoints]
    (rp / "inventory-serverless.json").write_text(json.dumps(
        {"endpoints": eps, "x_recon": {"endpoint": "/v2/serverless",
                                        "pulledAt": iso(world.window_start + 60)}}, indent=1))
    vols = [{"id": v.volume_id, "name": "shared-datasets", "size": v.size_gb,
             "dataCenter": "US-KS-2", "type": "STANDARD"} for v in world.volumes]
    (rp / "inventory-network-volumes.json").write_text(json.dumps(
        {"networkVolumes": vols, "x_recon": {"endpoint": "/v2/network-volumes",
                                              "pulledAt": iso(world.window_start + 60)}}, indent=1))
    files += ["inventory-serverless.json", "inventory-network-volumes.json"]
    verbatim = []  # endpoints whose workers responses are saved as the API returns them
    with open(rp / "serverless-workers.jsonl", "w", encoding="utf-8") as collected, \
            open(rp / "serverless-jobs.jsonl", "w", encoding="utf-8") as jf:
        for k, ep in enumerate(world.endpoints):
            # the second endpoint's as a user saves GET /v2/serverless/{id}/workers with curl:
            # no x_recon, the endpoint only in the path (runpod/serverless/<id>/workers.jsonl);
            # staging ties its workers by the job records. One endpoint, not a share of them:
            # staging re-reads such workers' jobs every run (stg_runpod__worker_endpoints.sql)
            if k == 1 and ep.sessions:
                verbatim.append(f"serverless/{ep.endpoint_id}/workers.jsonl")
                (rp / verbatim[-1]).parent.mkdir(parents=True, exist_ok=True)
                wf = open(rp / verbatim[-1], "w", encoding="utf-8")
            else:
                wf = collected
            # alive = [s for s in ep.sessions if s.start_ms <= t < s.stop_ms], without the
            # quadratic scan: only sessions started within the longest session before t can
            # still run at t; the list keeps ep.sessions' order
            order = sorted(range(len(ep.sessions)), key=lambda i: ep.sessions[i].start_ms)
            starts = [ep.sessions[i].start_ms for i in order]
            longest = max((s.stop_ms - s.start_ms for s in ep.sessions), default=0)
            for _pos, idx in enumerate(order):
                ws = ep.sessions[idx]
                t = ws.start_ms + 1000
                lo, hi = bisect_right(starts, t - longest - 1), bisect_right(starts, t)
                alive = [ep.sessions[i] for i in sorted(order[lo:hi])
                         if ep.sessions[i].stop_ms > t]
                workers = [{"id": s.worker_id, "status": "INITIALIZING" if s is ws else "RUNNING",
                            "isStale": False, "version": 1, "gpuCount": 1,
                            "uptimeSeconds": (t - s.start_ms) // 1000, "gpuTypeId": "NVIDIA L4",
                            "dataCenterId": "US-KS-2", "startedAt": iso(s.start_ms // 1000)}
                           for s in alive]
                summ = {"running": len(alive) - 1, "idle": 0, "initializing": 1, "throttled": 0,
                        "unhealthy": 0, "total": len(alive)}
                body = {"endpointVersion": 1, "summary": summ, "workers": workers}
                if wf is collected:
                    body["x_recon"] = {"endpoint": "/v2/serverless/{id}/workers",
                                       "endpointId": ep.endpoint_id, "pulledAt": iso_ms(t)}
                wf.write(json.dumps(body) + "\n")
                for jid, sub, (a, b) in zip(ws.job_ids, ws.submitted_ms, ws.exec_windows):
                    # json.dumps of the record, written out: ids are [a-z0-9-], numbers ints
                    jf.write(f'{{"id": "{jid}", "status": "COMPLETED", "delayTime": {a - sub}, '
                             f'"executionTime": {b - a}, "workerId": "{ws.worker_id}", '
                             f'"endpointId": "{ep.endpoint_id}", "submittedAt": "{iso_ms(sub)}", '
                             f'"completedAt": "{iso_ms(b)}"}}\n')
            if wf is not collected:
                wf.close()
    files += ["serverless-workers.jsonl", "serverless-jobs.jsonl", *verbatim]
    return files
