"""Loopback fake of the Runpod REST v2 API (billing + inventory), for tests.

It binds 127.0.0.1 on a free port, checks ``Authorization: Bearer <key>``, answers in the
shapes of the OpenAPI spec (``openapi-v2.json``; :func:`validate` checks a body against the
spec's schemas), sends ``RateLimit``/``RateLimit-Policy`` headers and enforces its quota, and
has injectable faults.

Usage::

    clock = VirtualClock()
    with FakeRunpodAPI("rpa_test", billing=make_billing(start, hours=48), clock=clock) as fake:
        client = RunpodClient("rpa_test", base_url=fake.base_url, sleep=clock.sleep,
                              monotonic=clock.monotonic, trust_env=False)
        fake.inject("/v2/billing/pods", Fault.http(429, retry_after="1"))
        ...
        fake.served  # every answer: path, query, status, parsed body

Faults (``inject(path, fault, times=1)``; ``path`` matches exactly, or any path if ``None``):
``Fault.http(code, retry_after=None, detail=...)`` (429/5xx/4xx problem+json),
``Fault.slow(seconds)``, ``Fault.truncated_json()`` (200 with half a body and a matching
Content-Length), ``Fault.truncated_transfer()`` (Content-Length larger than what is sent),
``Fault.disconnect()``, ``Fault.drop_field(name)``, ``Fault.drip(interval, headers=False)``
(the answer one byte every ``interval`` seconds, from its body on, or from its status line:
a per-read timeout never trips). Data-level faults are constructor options
or attributes: ``restate(...)`` (a bucket's amount changes from the Nth successful pull on),
``withhold_from`` / ``empty_last_hour`` (late data: recent buckets answer empty),
``legacy_network_volumes_only`` (only ``/v2/billing/networkvolumes`` exists),
``extra_record_fields`` (unknown fields in every billing record), ``echo_auth_in_errors``
(error details quote the Authorization header, to test redaction), ``rate_limit=(q, w)``.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

# --- the spec ----------------------------------------------------------------------------------
SPEC_ENV = "RUNPOD_OPENAPI_SPEC"
_SPEC_RELATIVE = Path("shared") / "reference" / "runpod" / "openapi-v2.json"
OPENAPI_SPEC_CANDIDATES = (
    Path(__file__).resolve().parents[2].parent / _SPEC_RELATIVE,  # <repo>/../shared/...
    Path("/work") / _SPEC_RELATIVE,
)


def find_openapi_spec() -> Path | None:
    """The Runpod v2 OpenAPI spec: $RUNPOD_OPENAPI_SPEC, else shared/ beside the repo."""
    env = os.environ.get(SPEC_ENV)
    if env:
        return Path(env) if Path(env).is_file() else None
    for cand in OPENAPI_SPEC_CANDIDATES:
        if cand.is_file():
            return cand
    return None


def load_openapi_spec() -> dict[str, Any] | None:
    path = find_openapi_spec()
    return json.loads(path.read_text()) if path else None


# --- data --------------------------------------------------------------------------------------
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)

# fake kind -> (API path, id field, amount fields)
BILLING_KINDS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "pods": ("/v2/billing/pods", "podId", ("gpuAmount", "cpuAmount", "diskAmount")),
    "serverless": (
        "/v2/billing/serverless",
        "serverlessId",
        ("gpuAmount", "cpuAmount", "diskAmount", "feeAmount"),
    ),
    "network_volumes": (
        "/v2/billing/network-volumes",
        "networkVolumeId",
        ("standardAmount", "highPerformanceAmount"),
    ),
}
ACCOUNT_PATH = "/v2/billing"
LEGACY_NV_PATH = "/v2/billing/networkvolumes"
ACCOUNT_FIELDS = (
    "podGpuAmount",
    "podCpuAmount",
    "podDiskAmount",
    "serverlessGpuAmount",
    "serverlessCpuAmount",
    "serverlessDiskAmount",
    "serverlessFeeAmount",
    "storageStandardAmount",
    "storageHighPerformanceAmount",
    "endpointAmount",
    "clusterGpuAmount",
    "clusterDiskAmount",
    "clusterNetworkingAmount",
)
_ACCOUNT_FROM = {  # account field <- (fake kind, record field)
    "podGpuAmount": ("pods", "gpuAmount"),
    "podCpuAmount": ("pods", "cpuAmount"),
    "podDiskAmount": ("pods", "diskAmount"),
    "serverlessGpuAmount": ("serverless", "gpuAmount"),
    "serverlessCpuAmount": ("serverless", "cpuAmount"),
    "serverlessDiskAmount": ("serverless", "diskAmount"),
    "serverlessFeeAmount": ("serverless", "feeAmount"),
    "storageStandardAmount": ("network_volumes", "standardAmount"),
    "storageHighPerformanceAmount": ("network_volumes", "highPerformanceAmount"),
}
_UNIQUE_COUNT = {
    "pods": "uniquePodCount",
    "serverless": "uniqueServerlessCount",
    "network_volumes": "uniqueNetworkVolumeCount",
}
_FILTER = {"pods": "podId", "serverless": "serverlessId", "network_volumes": "networkVolumeId"}


def iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> datetime:
    dt = datetime.fromisoformat(value.strip())
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def make_billing(
    start: datetime,
    hours: int,
    *,
    pods: tuple[str, ...] = ("pod_a1", "pod_b2"),
    serverless: tuple[str, ...] = ("ep_x1",),
    volumes: tuple[str, ...] = ("vol_n1",),
    seed: int = 7,
    gaps: bool = True,
) -> dict[str, list[dict[str, Any]]]:
    """Deterministic hourly billing records (amounts with 12 decimals) for ``hours`` hours from
    ``start`` (snapped down to the hour). With ``gaps`` every second pod skips some hours
    (stopped), so record counts differ per hour."""
    rng = random.Random(seed)
    t0 = start.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    data: dict[str, list[dict[str, Any]]] = {k: [] for k in BILLING_KINDS}
    ids = {"pods": pods, "serverless": serverless, "network_volumes": volumes}
    for h in range(hours):
        bs = t0 + h * HOUR
        for kind, (_, id_field, amounts) in BILLING_KINDS.items():
            for n, rid in enumerate(ids[kind]):
                if gaps and kind == "pods" and n % 2 == 1 and h % 5 in (3, 4):
                    continue
                rec: dict[str, Any] = {
                    "startTime": iso(bs),
                    "endTime": iso(bs + HOUR),
                    id_field: rid,
                }
                parts = {a: round(rng.uniform(0, 1.5), 12) for a in amounts}
                if kind == "pods":
                    parts["cpuAmount"] = 0
                rec["totalAmount"] = round(sum(parts.values()), 12)
                rec.update(parts)
                data[kind].append(rec)
    return data


def default_gpu_catalog() -> list[dict[str, Any]]:
    """`GET /v2/catalog/gpus`'s `gpus` as the spec's example gives them (openapi-v2.json,
    `listGpuTypes`, example `gpus`): the RTX 4090 at 0.44 secure, 0.31 community, 1.1
    serverless USD per GPU-hour; without `include=AVAILABILITY` the answer carries no
    `availability` or `dataCenters`."""
    return [{
        "id": "NVIDIA GeForce RTX 4090",
        "name": "RTX 4090",
        "pool": "ADA_24",
        "manufacturer": "NVIDIA",
        "memory": 24,
        "secure": True,
        "community": True,
        "price": {"secure": 0.44, "community": 0.31, "serverless": 1.1},
        "maxCount": {"secure": 8, "community": 4},
    }]


def default_inventory(now: datetime | None = None) -> dict[str, Any]:
    """Pods, serverless endpoints, workers, network volumes and the GPU catalog in the spec's
    shapes."""
    created = iso((now or datetime(2026, 6, 1, tzinfo=UTC)) - timedelta(days=3))

    def pod(pid: str, status: str, cost: float, **extra: Any) -> dict[str, Any]:
        running = status == "RUNNING"
        p: dict[str, Any] = {
            "id": pid,
            "name": f"train-{pid}",
            "image": "runpod/pytorch:1.0.2",
            "args": "",
            "disk": 50,
            "ports": ["8888/http", "22/tcp"],
            "env": {"MODEL_NAME": "llama-3"},
            "registry": None,
            "status": status,
            "actions": ["stop", "restart", "terminate"] if running else ["start", "terminate"],
            "mounts": {"persistent": {"size": 20, "path": "/workspace"}},
            "gpu": {"id": "NVIDIA GeForce RTX 4090", "count": 1},
            "cloud": "SECURE",
            "dataCenterId": "US-KS-2",
            "cudaVersion": "12.8",
            "ssh": {
                "proxy": {
                    "host": "ssh.runpod.io",
                    "port": 22,
                    "username": f"{pid}-1",
                    "command": f"ssh {pid}-1@ssh.runpod.io",
                },
                "direct": None,
            },
            "template": None,
            "cost": cost,
            "locked": False,
            "globalNetworking": {"enabled": False},
            "runtime": {"uptime": 3600, "ports": []} if running else None,
            "createdAt": created,
            "startedAt": created if running else None,
        }
        p.update(extra)
        return p

    def endpoint(eid: str) -> dict[str, Any]:
        base = f"https://api.runpod.ai/v2/{eid}"
        return {
            "id": eid,
            "name": f"infer-{eid}",
            "type": "QUEUE",
            "requestUrls": {
                "run": f"{base}/run",
                "runSync": f"{base}/runsync",
                "status": f"{base}/status/{{job_id}}",
                "stream": f"{base}/stream/{{job_id}}",
                "cancel": f"{base}/cancel/{{job_id}}",
                "retry": f"{base}/retry/{{job_id}}",
                "purgeQueue": f"{base}/purge-queue",
                "health": f"{base}/health",
            },
            "image": "runpod/worker:1",
            "args": "",
            "disk": 20,
            "ports": ["8000/http"],
            "env": {},
            "registry": None,
            "gpu": {
                "pools": ["ADA_24"],
                "count": 1,
                "allowedCudaVersions": [],
                "minCudaVersion": None,
            },
            "workers": {"min": 0, "max": 3, "idleTimeout": 5},
            "scaling": {"type": "QUEUE_DELAY", "queueDelay": 4},
            "dataCenterIds": ["US-KS-2"],
            "networkVolumes": ["vol_n1"],
            "timeout": 300000,
            "flashboot": "OFF",
            "createdAt": created,
        }

    def worker(wid: str, status: str) -> dict[str, Any]:
        return {
            "id": wid,
            "status": status,
            "isStale": False,
            "version": 4,
            "gpuCount": 1,
            "image": "runpod/worker:1",
            "uptimeSeconds": 1200,
            "gpuTypeId": "NVIDIA GeForce RTX 4090",
            "dataCenterId": "US-KS-2",
            "startedAt": created,
        }

    return {
        "pods": [
            pod("pod_a1", "RUNNING", 0.69),
            pod("pod_b2", "EXITED", 0.0),
            pod("pod_c3", "RUNNING", 0.69, cluster={"id": "cluster_1", "rank": 0}),
        ],
        "endpoints": [endpoint("ep_x1"), endpoint("ep_y2")],
        "workers": {"ep_x1": [worker("w_1", "RUNNING"), worker("w_2", "IDLE")], "ep_y2": []},
        "network_volumes": [
            {
                "id": "vol_n1",
                "name": "datasets",
                "size": 100,
                "dataCenter": "US-KS-2",
                "type": "STANDARD",
            }
        ],
        "gpus": default_gpu_catalog(),
    }


# --- faults and clock --------------------------------------------------------------------------
@dataclass(frozen=True)
class Fault:
    kind: str
    status: int = 500
    retry_after: str | None = None
    delay: float = 0.0
    field: str = ""
    detail: str = ""
    errors: tuple[str, ...] = ()

    @staticmethod
    def http(
        code: int, retry_after: str | None = None, detail: str = "", errors: tuple[str, ...] = ()
    ) -> Fault:
        """An error status with a problem+json body (and ``Retry-After`` if given)."""
        return Fault("status", status=code, retry_after=retry_after, detail=detail, errors=errors)

    @staticmethod
    def slow(seconds: float) -> Fault:
        return Fault("slow", delay=seconds)

    @staticmethod
    def truncated_json() -> Fault:
        return Fault("truncated_json")

    @staticmethod
    def truncated_transfer() -> Fault:
        return Fault("truncated_transfer")

    @staticmethod
    def disconnect() -> Fault:
        return Fault("disconnect")

    @staticmethod
    def drop_field(name: str) -> Fault:
        return Fault("drop_field", field=name)

    @staticmethod
    def drip(interval: float, headers: bool = False) -> Fault:
        return Fault("drip_headers" if headers else "drip", delay=interval)


class VirtualClock:
    """Monotonic clock advanced only by :meth:`sleep`; records every sleep."""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = start
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        with self._lock:
            return self.t

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self.t += max(0.0, seconds)


@dataclass
class Served:
    method: str
    path: str
    query: dict[str, str]
    status: int
    body: Any = None  # parsed JSON that was (meant to be) sent; None for broken answers
    fault: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _Restatement:
    kind: str
    resource_id: str
    bucket_start: datetime
    total: float
    from_pull: int


_PROBLEM_TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class _HTTPError(Exception):
    def __init__(
        self,
        status: int,
        detail: str,
        errors: list[str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status, self.detail, self.errors, self.headers = status, detail, errors, headers


# --- the fake ----------------------------------------------------------------------------------
class FakeRunpodAPI:
    def __init__(
        self,
        api_key: str,
        *,
        billing: dict[str, list[dict[str, Any]]] | None = None,
        inventory: dict[str, Any] | None = None,
        now: datetime | None = None,
        clock: VirtualClock | None = None,
        rate_limit: tuple[int, int] = (1000, 60),
        legacy_network_volumes_only: bool = False,
        extra_record_fields: dict[str, Any] | None = None,
        withhold_from: datetime | None = None,
        echo_auth_in_errors: bool = False,
    ) -> None:
        self.api_key = api_key
        self.billing = {k: list(v) for k, v in (billing or {}).items()}
        for k in BILLING_KINDS:
            self.billing.setdefault(k, [])
        self.inventory = inventory if inventory is not None else default_inventory(now)
        self.now = now or datetime(2026, 6, 3, 12, 30, tzinfo=UTC)
        self.clock = clock
        self.rate_limit = rate_limit
        self.legacy_network_volumes_only = legacy_network_volumes_only
        self.extra_record_fields = extra_record_fields or {}
        self.withhold_from = withhold_from
        self.echo_auth_in_errors = echo_auth_in_errors
        self.served: list[Served] = []
        self._faults: list[tuple[str | None, Fault, list[int]]] = []
        self._restatements: list[_Restatement] = []
        self._pull_counts: dict[tuple[str, str, str], int] = defaultdict(int)
        self._local = threading.local()
        self._rl_window_start: float | None = None
        self._rl_used = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> FakeRunpodAPI:
        fake = self

        class Handler(_Handler):
            api = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "fake not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # -- configuration ------------------------------------------------------------------------
    def inject(self, path: str | None, fault: Fault, times: int = 1) -> None:
        """Answer the next ``times`` requests to ``path`` (any path if None) with ``fault``."""
        with self._lock:
            self._faults.append((path, fault, [times]))

    def restate(
        self,
        kind: str,
        resource_id: str,
        bucket_start: datetime,
        total: float,
        *,
        from_pull: int = 2,
    ) -> None:
        """From the ``from_pull``-th successful answer (per API path) covering that bucket on,
        the bucket's amounts are scaled so that ``totalAmount == total``."""
        self._restatements.append(
            _Restatement(kind, resource_id, bucket_start.astimezone(UTC), total, from_pull)
        )

    def empty_last_hour(self) -> None:
        """Late data: the last hour holding any record answers with no records."""
        last = max(parse_time(r["startTime"]) for recs in self.billing.values() for r in recs)
        self.withhold_from = last

    def requests_to(self, path: str) -> list[Served]:
        return [s for s in self.served if s.path == path]

    def successful(self, path: str | None = None) -> list[Served]:
        return [
            s
            for s in self.served
            if s.status == 200 and s.fault is None and (path is None or s.path == path)
        ]

    # -- request handling (called from handler threads) ----------------------------------------
    @property
    def _pending(self) -> list[tuple[str, str, str]]:
        if not hasattr(self._local, "pending"):
            self._local.pending = []
        return self._local.pending

    def handle(self, path: str, query: dict[str, str]) -> tuple[dict[str, Any], list]:
        """Route a request; returns the body and the bucket keys to count if delivered."""
        self._local.pending = []
        body = self._route(path, query)
        return body, self._local.pending

    def _monotonic(self) -> float:
        return self.clock.monotonic() if self.clock else time.monotonic()

    def _take_fault(self, path: str) -> Fault | None:
        with self._lock:
            for i, (p, fault, left) in enumerate(self._faults):
                if p is None or p == path:
                    left[0] -= 1
                    if left[0] <= 0:
                        del self._faults[i]
                    return fault
        return None

    def _rate_headers(self, consume: bool) -> tuple[dict[str, str], bool]:
        """RateLimit headers after this request; second value False if over quota."""
        q, w = self.rate_limit
        now = self._monotonic()
        with self._lock:
            if self._rl_window_start is None or now >= self._rl_window_start + w:
                self._rl_window_start, self._rl_used = now, 0
            allowed = self._rl_used < q
            if allowed and consume:
                self._rl_used += 1
            remaining = max(0, q - self._rl_used)
            reset = max(1, math.ceil(self._rl_window_start + w - now))
        headers = {
            "RateLimit": f'"minute";r={remaining};t={reset}, "hour";r=2800;t=1812, '
            f'"day";r=49500;t=45012',
            "RateLimit-Policy": f'"minute";q={q};w={w}, "hour";q=3000;w=3600, '
            f'"day";q=50000;w=86400',
        }
        return headers, allowed

    def _route(self, path: str, query: dict[str, str]) -> dict[str, Any]:
        if path == ACCOUNT_PATH:
            return self._billing_account(query)
        for kind, (p, _, _) in BILLING_KINDS.items():
            if kind == "network_volumes":
                expected = LEGACY_NV_PATH if self.legacy_network_volumes_only else p
                if path == expected:
                    return self._billing(kind, path, query)
            elif path == p:
                return self._billing(kind, path, query)
        inv = self.inventory
        if path == "/v2/pods":
            include = query.get("includeClusterPods", "false").lower() == "true"
            return {"pods": [p for p in inv["pods"] if include or "cluster" not in p]}
        if path == "/v2/serverless":
            return {"endpoints": inv["endpoints"]}
        m = re.fullmatch(r"/v2/serverless/([^/]+)/workers", path)
        if m:
            ep = m.group(1)
            if ep not in {e["id"] for e in inv["endpoints"]}:
                raise _HTTPError(404, f"endpoint {ep} not found")
            workers = inv["workers"].get(ep, [])
            summary = dict.fromkeys(("running", "idle", "initializing", "throttled", "unhealthy"), 0)
            for wk in workers:
                summary[wk["status"].lower()] += 1
            summary["total"] = len(workers)
            return {"endpointVersion": 4, "summary": summary, "workers": workers}
        if path == "/v2/network-volumes":
            return {"networkVolumes": inv["network_volumes"]}
        if path == "/v2/catalog/gpus":
            return {"gpus": inv["gpus"] if "gpus" in inv else default_gpu_catalog()}
        raise _HTTPError(404, f"no route for {path}")

    def _window(self, query: dict[str, str]) -> tuple[datetime, datetime, str]:
        bucket = query.get("bucketSize", "day")
        if bucket not in ("hour", "day", "week", "month", "year"):
            raise _HTTPError(
                422,
                "Request validation failed.",
                [f"bucketSize: value {bucket!r} is not one of the allowed values"],
            )
        if bucket not in ("hour", "day"):
            raise _HTTPError(400, f"the fake supports bucketSize hour and day, not {bucket}")
        size = HOUR if bucket == "hour" else DAY
        has_range = "startTime" in query or "endTime" in query
        if "lastN" in query:
            if has_range:
                raise _HTTPError(400, "lastN is mutually exclusive with startTime/endTime")
            n = int(query["lastN"])
            end = _ceil(self.now, size)
            if end == self.now:
                end += size
            return end - n * size, end, bucket
        try:
            start = (
                parse_time(query["startTime"])
                if "startTime" in query
                else (self.now - timedelta(days=30))
            )
            end = parse_time(query["endTime"]) if "endTime" in query else self.now
        except ValueError as exc:
            raise _HTTPError(422, "Request validation failed.", [str(exc)]) from None
        start, end = _floor(start, size), _ceil(end, size)
        if end <= start:
            raise _HTTPError(400, "endTime must be after startTime")
        return start, end, bucket

    def _effective(
        self, kind: str, path: str, start: datetime, end: datetime
    ) -> list[dict[str, Any]]:
        """Hourly records of ``kind`` in [start, end) as served now (withholding, restating)."""
        out = []
        for rec in self.billing[kind]:
            bs = parse_time(rec["startTime"])
            if not (start <= bs < end):
                continue
            if self.withhold_from is not None and bs >= self.withhold_from:
                continue
            rec = dict(rec)
            id_field = BILLING_KINDS[kind][1]
            for r in self._restatements:
                if (
                    r.kind == kind
                    and r.resource_id == rec[id_field]
                    and r.bucket_start == bs
                    and self._pull_counts[(path, kind, rec[id_field] + iso(bs))] + 1 >= r.from_pull
                ):
                    factor = r.total / rec["totalAmount"] if rec["totalAmount"] else 0
                    for a in BILLING_KINDS[kind][2]:
                        rec[a] = round(rec[a] * factor, 12)
                    rec["totalAmount"] = r.total
            out.append(rec)
        return out

    def _count_pull(self, path: str, kind: str, recs: list[dict[str, Any]]) -> None:
        """Remember which buckets this answer covers; counted only if it is delivered clean."""
        id_field = BILLING_KINDS[kind][1]
        self._pending.extend((path, kind, rec[id_field] + rec["startTime"]) for rec in recs)

    def _commit_pulls(self, pending: list[tuple[str, str, str]]) -> None:
        with self._lock:
            for key in pending:
                self._pull_counts[key] += 1

    def _billing(self, kind: str, path: str, query: dict[str, str]) -> dict[str, Any]:
        start, end, bucket = self._window(query)
        _, id_field, amounts = BILLING_KINDS[kind]
        filt = query.get(id_field)
        hourly = [
            r
            for r in self._effective(kind, path, start, end)
            if filt is None or r[id_field] == filt
        ]
        self._count_pull(path, kind, hourly)
        records = _rebucket(hourly, bucket, id_field, ("totalAmount", *amounts))
        for rec in records:
            rec.update(self.extra_record_fields)
        records.sort(key=lambda r: (r["startTime"], r[id_field]))
        totals = {a: round(sum(r[a] for r in records), 12) for a in ("totalAmount", *amounts)}
        return {
            "records": records,
            "metadata": {
                "query": {
                    "startTime": iso(start),
                    "endTime": iso(end),
                    "bucketSize": bucket,
                    _FILTER[kind]: filt,
                },
                "recordCount": len(records),
                _UNIQUE_COUNT[kind]: len({r[id_field] for r in records}),
                "totals": totals,
            },
        }

    def _billing_account(self, query: dict[str, str]) -> dict[str, Any]:
        start, end, bucket = self._window(query)
        per_hour: dict[str, dict[str, Any]] = {}
        for kind in BILLING_KINDS:
            recs = self._effective(kind, ACCOUNT_PATH, start, end)
            self._count_pull(ACCOUNT_PATH, kind, recs)
            for rec in recs:
                row = per_hour.setdefault(
                    rec["startTime"],
                    {
                        "startTime": rec["startTime"],
                        "endTime": rec["endTime"],
                        "acct": "all",
                        "totalAmount": 0.0,
                        **dict.fromkeys(ACCOUNT_FIELDS, 0.0),
                    },
                )
                row["totalAmount"] += rec["totalAmount"]
                for f, (k, src) in _ACCOUNT_FROM.items():
                    if k == kind:
                        row[f] += rec[src]
        fields = ("totalAmount", *ACCOUNT_FIELDS)
        records = _rebucket(list(per_hour.values()), bucket, "acct", fields)
        for rec in records:
            del rec["acct"]
            for f in fields:
                rec[f] = round(rec[f], 12)
            rec.update(self.extra_record_fields)
        records.sort(key=lambda r: r["startTime"])
        return {
            "records": records,
            "metadata": {
                "query": {"startTime": iso(start), "endTime": iso(end), "bucketSize": bucket},
                "recordCount": len(records),
                "totals": {f: round(sum(r[f] for r in records), 12) for f in fields},
            },
        }


def _floor(dt: datetime, size: timedelta) -> datetime:
    dt = dt.astimezone(UTC)
    if size == DAY:
        return dt.replace(hour=0, minute=0, second=0, microsecond=0)
    return dt.replace(minute=0, second=0, microsecond=0)


def _ceil(dt: datetime, size: timedelta) -> datetime:
    f = _floor(dt, size)
    return f if f == dt.astimezone(UTC) else f + size


def _rebucket(
    hourly: list[dict[str, Any]], bucket: str, id_field: str, amount_fields: tuple[str, ...]
) -> list[dict[str, Any]]:
    if bucket == "hour":
        return [dict(r) for r in hourly]
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in hourly:
        day = _floor(parse_time(r["startTime"]), DAY)
        key = (iso(day), r[id_field])
        row = out.setdefault(
            key,
            {
                "startTime": iso(day),
                "endTime": iso(day + DAY),
                id_field: r[id_field],
                **dict.fromkeys(amount_fields, 0.0),
            },
        )
        for a in amount_fields:
            row[a] += r[a]
    for row in out.values():
        for a in amount_fields:
            row[a] = round(row[a], 12)
    return list(out.values())


class _Handler(BaseHTTPRequestHandler):
    api: FakeRunpodAPI
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms stalls

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self._problem(405, "The requested method is not allowed for this path.", {}, None)
        self.close_connection = True

    do_PUT = do_PATCH = do_DELETE = do_POST

    def do_GET(self) -> None:
        api = self.api
        parts = urlsplit(self.path)
        path, query = parts.path, dict(parse_qsl(parts.query, keep_blank_values=True))
        entry = Served("GET", path, query, 0)
        with api._lock:
            api.served.append(entry)
        auth = self.headers.get("Authorization")
        if auth != f"Bearer {api.api_key}":
            detail = "missing bearer token" if not auth else "invalid api key"
            if api.echo_auth_in_errors and auth:
                detail += f" (got Authorization: {auth})"
            self._problem(401, detail, {}, entry)
            return
        fault = api._take_fault(path)
        entry.fault = fault.kind if fault else None
        rl_headers, allowed = api._rate_headers(consume=True)
        if not allowed:
            m = re.search(r'"minute";r=\d+;t=(\d+)', rl_headers["RateLimit"])
            headers = {**rl_headers, "Retry-After": m.group(1) if m else "1"}
            entry.fault = "rate_limited"
            self._problem(429, "rate limit exceeded for the minute window", headers, entry)
            return
        if fault and fault.kind == "status":
            headers = dict(rl_headers)
            if fault.retry_after is not None:
                headers["Retry-After"] = fault.retry_after
            detail = fault.detail or _PROBLEM_TITLES.get(fault.status, "error").lower()
            if api.echo_auth_in_errors:
                detail += f" (request carried {auth})"
            self._problem(fault.status, detail, headers, entry, list(fault.errors) or None)
            return
        if fault and fault.kind == "disconnect":
            entry.status = -1
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault and fault.kind == "slow":
            api._stop.wait(fault.delay)
        try:
            body, pending = api.handle(path, query)
        except _HTTPError as exc:
            self._problem(
                exc.status, exc.detail, {**rl_headers, **(exc.headers or {})}, entry, exc.errors
            )
            return
        if fault and fault.kind == "drop_field":
            body.pop(fault.field, None)
        raw = json.dumps(body).encode()
        entry.status, entry.body = 200, body
        if fault and fault.kind in ("drip", "drip_headers"):
            entry.body = None
            self._drip(200, raw, rl_headers, fault)
            return
        if fault and fault.kind in ("truncated_json", "truncated_transfer", "slow"):
            entry.body = None  # the client never gets (or never reads) this body
        if fault and fault.kind == "truncated_json":
            raw = raw[: max(1, len(raw) // 2)]
        if fault and fault.kind == "truncated_transfer":
            self._send(
                entry,
                200,
                raw[: len(raw) // 2],
                "application/json",
                rl_headers,
                declared_length=len(raw),
            )
            self.close_connection = True
            return
        if fault is None:
            api._commit_pulls(pending)
        self._send(entry, 200, raw, "application/json", rl_headers)

    def _drip(self, status: int, raw: bytes, headers: dict[str, str], fault: Fault) -> None:
        """Send the answer a byte at a time, ``fault.delay`` seconds apart, until it is sent,
        the client goes away or the fake stops."""
        head = (f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\n"
                + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                + f"Content-Length: {len(raw)}\r\n\r\n").encode()
        self.close_connection = True
        try:
            if fault.kind == "drip":
                self.wfile.write(head)
                self.wfile.flush()
                data = raw
            else:
                data = head + raw
            for i in range(len(data)):
                if self.api._stop.wait(fault.delay):
                    return
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            return

    def _problem(
        self,
        status: int,
        detail: str,
        headers: dict[str, str],
        entry: Served | None,
        errors: list[str] | None = None,
    ) -> None:
        body: dict[str, Any] = {
            "title": _PROBLEM_TITLES.get(status, "Error"),
            "status": status,
            "detail": detail,
        }
        if errors:
            body["errors"] = errors
        if entry is not None:
            entry.status, entry.body = status, body
        self._send(entry, status, json.dumps(body).encode(), "application/problem+json", headers)

    def _send(
        self,
        entry: Served | None,
        status: int,
        raw: bytes,
        ctype: str,
        headers: dict[str, str],
        declared_length: int | None = None,
    ) -> None:
        entry_headers = {"Content-Type": ctype, **headers}
        if entry is not None:
            entry.headers = entry_headers
        try:
            self.send_response(status)
            for k, v in entry_headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(declared_length or len(raw)))
            self.end_headers()
            self.wfile.write(raw)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True


# --- a small OpenAPI schema validator (jsonschema is not a dependency) -------------------------
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def _resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        node: Any = spec
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def validate(
    instance: Any, schema: dict[str, Any], spec: dict[str, Any], at: str = "$"
) -> list[str]:
    """Errors of ``instance`` against an OpenAPI 3.1 schema: $ref, allOf/anyOf/oneOf, type
    (incl. lists and null), enum, const, required, properties, additionalProperties, items,
    min/maxItems, minimum/maximum, minLength, pattern and ``format: date-time``."""
    s = _resolve(spec, schema)
    errs: list[str] = []
    for sub in s.get("allOf", []):
        errs += validate(instance, sub, spec, at)
    if "anyOf" in s and not any(not validate(instance, sub, spec, at) for sub in s["anyOf"]):
        errs.append(f"{at}: matches none of anyOf")
    if "oneOf" in s:
        n = sum(1 for sub in s["oneOf"] if not validate(instance, sub, spec, at))
        if n != 1:
            errs.append(f"{at}: matches {n} of oneOf (need exactly 1)")
    if "type" in s:
        types = s["type"] if isinstance(s["type"], list) else [s["type"]]
        if not any(_TYPES[t](instance) for t in types):
            return [*errs, f"{at}: {type(instance).__name__} is not {types}"]
    if "enum" in s and instance not in s["enum"]:
        errs.append(f"{at}: {instance!r} not in {s['enum']}")
    if "const" in s and instance != s["const"]:
        errs.append(f"{at}: {instance!r} != {s['const']!r}")
    if isinstance(instance, dict):
        for req in s.get("required", []):
            if req not in instance:
                errs.append(f"{at}: missing required {req!r}")
        props = s.get("properties", {})
        for key, value in instance.items():
            if key in props:
                errs += validate(value, props[key], spec, f"{at}.{key}")
            elif s.get("additionalProperties") is False:
                errs.append(f"{at}: additional property {key!r} not allowed")
            elif isinstance(s.get("additionalProperties"), dict):
                errs += validate(value, s["additionalProperties"], spec, f"{at}.{key}")
    if isinstance(instance, list):
        if "items" in s:
            for i, item in enumerate(instance):
                errs += validate(item, s["items"], spec, f"{at}[{i}]")
        if len(instance) < s.get("minItems", 0):
            errs.append(f"{at}: fewer than {s['minItems']} items")
        if "maxItems" in s and len(instance) > s["maxItems"]:
            errs.append(f"{at}: more than {s['maxItems']} items")
    if _TYPES["number"](instance):
        if "minimum" in s and instance < s["minimum"]:
            errs.append(f"{at}: {instance} < minimum {s['minimum']}")
        if "maximum" in s and instance > s["maximum"]:
            errs.append(f"{at}: {instance} > maximum {s['maximum']}")
    if isinstance(instance, str):
        if len(instance) < s.get("minLength", 0):
            errs.append(f"{at}: shorter than {s['minLength']}")
        if "pattern" in s and not re.search(s["pattern"], instance):
            errs.append(f"{at}: {instance!r} does not match {s['pattern']}")
        if s.get("format") == "date-time" and not _RFC3339.match(instance):
            errs.append(f"{at}: {instance!r} is not an RFC 3339 date-time")
    return errs


def response_schema(spec: dict[str, Any], path: str, status: int) -> tuple[str, dict[str, Any]]:
    """(media type, schema) the spec declares for GET ``path`` answering ``status``."""
    responses = spec["paths"][path]["get"]["responses"]
    resp = _resolve(spec, responses.get(str(status)) or responses["default"])
    media, content = next(iter(resp["content"].items()))
    return media, content["schema"]


_SF_MEMBER = re.compile(r'^"[a-z]+"(;[a-z]+=\d+)+$')


def validate_ratelimit_header(value: str) -> list[str]:
    """RateLimit / RateLimit-Policy: a structured-field list of ``"window";k=v;k=v`` members."""
    return [
        f"bad member {m.strip()!r}" for m in value.split(",") if not _SF_MEMBER.match(m.strip())
    ]


# --- helpers for tests reading landed files ------------------------------------------------------
def read_landed(path: Path) -> dict[str, Any]:
    return json.loads(path.read_bytes())


def strip_envelope(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "x_recon"}


def landed_files(landing: Path, kind: str) -> list[Path]:
    """Landed files of a billing kind (or ``inventory``), all pulls, sorted by path."""
    return sorted((landing / "runpod" / kind).glob("pulled=*/*.json"))


def canonical(records: list[dict[str, Any]]) -> list[str]:
    """Sorted canonical JSON per record, for multiset comparisons."""
    return sorted(json.dumps(r, sort_keys=True) for r in records)
