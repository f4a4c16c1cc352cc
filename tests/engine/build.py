"""A tiny world builder for table-driven finding tests: a few nodes, pods and bill lines."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from recon.db import connect
from recon.pipeline import run

D0 = datetime(2026, 6, 1, tzinfo=UTC)


def t(hhmm: str, day: int = 0) -> datetime:
    h, m = hhmm.split(":")[:2]
    s = hhmm.split(":")[2] if hhmm.count(":") == 2 else "0"
    return D0 + timedelta(days=day, hours=int(h), minutes=int(m), seconds=int(s))


def iso(x: datetime) -> str:
    return x.strftime("%Y-%m-%dT%H:%M:%SZ")


class World:
    def __init__(self, root: Path):
        self.root = root
        self.watch: list[dict] = []
        self.events: list[dict] = []
        self.k8s_objects: list[dict] = []
        self.bill: list[dict] = []
        self.raw_bill_files: list[dict] = []
        self.inventory: list[tuple[datetime, list[dict]]] = []
        self.config = ['[rates.gpu_per_hour]\n"L40S" = "0.86"\n']
        self.extra_files: dict[str, str] = {}
        self.rv = 1000

    def _rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def node(self, name: str, pod_id: str, up: datetime, ready: datetime,
             removed: datetime | None = None, gpus: int = 1):
        base = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "uid": f"node-{name}-{iso(up)}",
                             "creationTimestamp": iso(up), "labels": {"runpod.io/pod-id": pod_id}},
                "spec": {}, "status": {"capacity": {"nvidia.com/gpu": str(gpus)}}}
        for etype, cond in (("ADDED", ("False", up)), ("MODIFIED", ("True", ready))):
            o = json.loads(json.dumps(base))
            o["metadata"]["resourceVersion"] = self._rv()
            o["status"]["conditions"] = [{"type": "Ready", "status": cond[0],
                                          "lastTransitionTime": iso(cond[1])}]
            self.watch.append({"type": etype, "object": o})
        if removed:
            o = json.loads(json.dumps(self.watch[-1]["object"]))
            o["metadata"]["resourceVersion"] = self._rv()
            o["metadata"]["deletionTimestamp"] = iso(removed)
            self.watch.append({"type": "DELETED", "object": o})

    def pod(self, name: str, node: str | None, scheduled: datetime, ready: datetime | None,
            finished: datetime | None, gpus: int = 1, namespace: str = "ml", team: str = "vision",
            killed: list[tuple[datetime, datetime]] = (), probe=(10, 6), gpu_request=None):
        res = {"limits": {"nvidia.com/gpu": str(gpus)}}
        if gpu_request is not None:
            res["requests"] = {"nvidia.com/gpu": str(gpu_request)}
        p = {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                          "creationTimestamp": iso(scheduled), "labels": {"team": team}},
             "spec": {"containers": [{"name": "main", "resources": res,
                                      "startupProbe": {"periodSeconds": probe[0],
                                                       "failureThreshold": probe[1]}}]},
             "status": {"conditions": []}}
        if node:
            p["spec"]["nodeName"] = node
            p["status"]["conditions"].append({"type": "PodScheduled", "status": "True",
                                              "lastTransitionTime": iso(scheduled)})
        st = {"name": "main", "restartCount": len(killed), "state": {}}
        if killed:
            st["lastState"] = {"terminated": {"exitCode": 137, "reason": "Error",
                                              "startedAt": iso(killed[-1][0]),
                                              "finishedAt": iso(killed[-1][1])}}
        if ready:
            p["status"]["conditions"].append({"type": "Ready", "status": "True",
                                              "lastTransitionTime": iso(ready)})
        p["status"]["containerStatuses"] = [st]
        p["metadata"]["resourceVersion"] = self._rv()
        self.watch.append({"type": "ADDED", "object": json.loads(json.dumps(p))})
        if finished:
            st["state"] = {"terminated": {"exitCode": 0, "reason": "Completed",
                                          "startedAt": iso(scheduled), "finishedAt": iso(finished)}}
            p["metadata"]["resourceVersion"] = self._rv()
            self.watch.append({"type": "MODIFIED", "object": json.loads(json.dumps(p))})

    def compute(self, pod_id: str, start: datetime, stop: datetime, usd_per_hour: Decimal,
                gpu_type="L40S", gpu_count=1, inventory_cost: Decimal | None = None):
        """Bill compute [start, stop) by hour at usd_per_hour; inventory shows inventory_cost."""
        h = start.replace(minute=0, second=0)
        while h < stop:
            s = (min(stop, h + timedelta(hours=1)) - max(start, h)).total_seconds()
            if s > 0:
                amt = (usd_per_hour * Decimal(int(s)) / 3600).quantize(Decimal("0.0000000001"))
                self.bill.append({"startTime": iso(h), "endTime": iso(h + timedelta(hours=1)),
                                  "podId": pod_id, "totalAmount": float(amt),
                                  "gpuAmount": float(amt), "cpuAmount": 0, "diskAmount": 0})
            h += timedelta(hours=1)
        self.inventory.append((start + timedelta(minutes=1), [
            {"id": pod_id, "status": "RUNNING", "cost": float(inventory_cost or usd_per_hour),
             "gpu": {"id": gpu_type, "count": gpu_count}}]))

    def write(self) -> Path:
        d = self.root / "in"
        d.mkdir(parents=True, exist_ok=True)
        (d / "watch.jsonl").write_text("".join(json.dumps(r) + "\n" for r in self.watch))
        if self.events or self.k8s_objects:
            (d / "objects.json").write_text(json.dumps(
                {"apiVersion": "v1", "kind": "List", "items": self.events + self.k8s_objects}))
        if self.bill:
            (d / "bill.json").write_text(json.dumps({"records": self.bill, "metadata": {"query": {}}}))
        for i, f in enumerate(self.raw_bill_files):
            (d / f"bill-extra-{i}.json").write_text(json.dumps(f))
        with open(d / "inventory.jsonl", "w") as f:
            for at, pods in self.inventory:
                f.write(json.dumps({"pods": pods, "x_recon": {"endpoint": "/v2/pods",
                                                              "pulledAt": iso(at)}}) + "\n")
        for name, text in self.extra_files.items():
            (d / name).write_text(text)
        (d / "recon.toml").write_text("\n".join(self.config))
        return d

    def findings(self) -> list[tuple]:
        d = self.write()
        db = self.root / "db.duckdb"
        run(d, db)
        con = connect(db, read_only=True)
        try:
            return con.execute("select code, resource_id, day::varchar, seconds, amount_at_stake, "
                               "message from marts.findings order by code, resource_id, day").fetchall()
        finally:
            con.close()
