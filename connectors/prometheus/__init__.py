"""Backfill from Prometheus (kube-state-metrics) for days before the collector ran.

`pull_kube_state_metrics` asks Prometheus' HTTP API (`/api/v1/query_range`) for the pod
lifecycle series kube-state-metrics exports and lands every response verbatim, with an
`x_recon` block naming the query, under `<landing>/prometheus/pulled=<ts>/`. The daily loader
turns them into pod lifecycles marked `lifecycle_source = 'prometheus'`: sampled at `step`, so
coarser than a watch (a pod shorter than one step can be missed; times are whatever the
metric's value says, to the second).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import requests

log = logging.getLogger(__name__)

METRICS = (
    "kube_pod_info",                      # namespace, pod, uid, node
    "kube_pod_created",
    "kube_pod_status_scheduled_time",
    "kube_pod_start_time",
    "kube_pod_status_ready_time",
    "kube_pod_completion_time",
    "kube_pod_container_status_last_terminated_timestamp",
    'kube_pod_container_resource_limits{resource="nvidia_com_gpu"}',
    "kube_pod_labels",
)
TIMEOUT = (5, 60)


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pull_kube_state_metrics(landing_dir: str | Path, base_url: str, start: datetime, end: datetime,
                            step: str = "60s", *, session: requests.Session | None = None,
                            headers: dict | None = None, metrics=METRICS) -> list[Path]:
    """Query each metric over [start, end) and land the responses; returns the files written."""
    s = session or requests.Session()
    pulled = datetime.now(UTC)
    folder = Path(landing_dir) / "prometheus" / f"pulled={pulled.strftime('%Y%m%dT%H%M%SZ')}"
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i, q in enumerate(metrics):
        params = {"query": q, "start": _iso(start), "end": _iso(end), "step": step}
        try:
            r = s.get(base_url.rstrip("/") + "/api/v1/query_range", params=params,
                      headers=headers or {}, timeout=TIMEOUT)
        except requests.RequestException as e:
            raise RuntimeError(f"Prometheus query_range {q!r} [{params['start']}, "
                               f"{params['end']}): {type(e).__name__}") from None
        if r.status_code != 200:
            raise RuntimeError(f"Prometheus query_range {q!r}: HTTP {r.status_code}: "
                               f"{r.text[:200]}")
        body = r.json()
        if body.get("status") != "success":
            raise RuntimeError(f"Prometheus query_range {q!r}: {body.get('errorType')}: "
                               f"{body.get('error')}")
        body["x_recon"] = {"endpoint": "/api/v1/query_range", "query": q, "params": params,
                           "pulledAt": _iso(pulled)}
        target = folder / f"ksm_{i:02d}.json"
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(body, f)
        os.replace(tmp, target)
        out.append(target)
        log.info("landed %s: %d series", q, len(body.get("data", {}).get("result", [])))
    return out
