"""Recognise what a parsed JSON document is, by its content, never its file name."""

from __future__ import annotations

import math

WATCH_TYPES = {"ADDED", "MODIFIED", "DELETED"}
K8S_KINDS = {"Pod", "Event", "Node", "Job", "ScaledObject", "ScaledJob"}

BILLING_BY_ID = {
    "podId": "v2_pods",
    "serverlessId": "v2_serverless",
    "networkVolumeId": "v2_network_volumes",
    "endpointId": "v2_endpoints",
    "clusterId": "v2_clusters",
}
BILLING_BY_PATH = {
    "/v2/billing/pods": "v2_pods",
    "/v2/billing/serverless": "v2_serverless",
    "/v2/billing/network-volumes": "v2_network_volumes",
    "/v2/billing/networkvolumes": "v2_network_volumes",
    "/v2/billing": "v2_account",
    "/v2/billing/endpoints": "v2_endpoints",
    "/v2/billing/clusters": "v2_clusters",
}
INVENTORY_KEYS = {"pods": "pods", "endpoints": "serverless", "networkVolumes": "network_volumes"}


class BadRecord(ValueError):
    """A record that cannot be loaded; the message is the quarantine reason."""


def _is_collector_state(doc: dict) -> bool:
    """The Kubernetes collector's resume state (connectors/kubernetes/landing.py `State.save`),
    which it keeps inside the landing area it hands the daily run: <landing>/k8s/state/<cluster>.json
    with exactly these keys. Until 0.10.8 every run quarantined it as unrecognised."""
    return (set(doc) == {"version", "cluster", "savedAt", "resources"}
            and isinstance(doc["resources"], dict)
            and all(isinstance(v, dict) and "resourceVersion" in v for v in doc["resources"].values()))


def doc_kind(doc) -> str:
    """Kind of a whole document (a JSON file or one JSONL line)."""
    if isinstance(doc, list):
        if doc and all(isinstance(x, dict) and "timeBilledMs" in x for x in doc[:50]):
            return "runpod_v1_billing"
        if not doc:
            return "empty_array"
        return "unknown"
    if not isinstance(doc, dict):
        return "unknown"
    kind = doc.get("kind")
    if kind == "recon.GroundTruth":
        return "ground_truth"
    if _is_collector_state(doc):
        return "collector_state"
    if str(x_recon(doc).get("endpoint", "")).endswith("/health"):
        return "runpod_health"
    if isinstance((doc.get("data") or {}).get("myself") if isinstance(doc.get("data"), dict) else None,
                  dict):
        return "runpod_balance"
    if doc.get("status") == "success" and isinstance(doc.get("data"), dict) \
            and "resultType" in doc["data"]:
        return "prometheus"
    if "type" in doc and "object" in doc:
        return "k8s_watch_event"
    if isinstance(doc.get("items"), list) and "apiVersion" in doc:
        return "k8s_list"
    if isinstance(kind, str) and kind in K8S_KINDS and isinstance(doc.get("metadata"), dict):
        return "k8s_object"
    if isinstance(doc.get("records"), list) and isinstance(doc.get("metadata"), dict):
        return "runpod_billing"
    if isinstance(doc.get("workers"), list):
        return "runpod_workers"
    for key in INVENTORY_KEYS:
        if isinstance(doc.get(key), list):
            return "runpod_inventory"
    if "id" in doc and ("executionTime" in doc or "delayTime" in doc):
        return "serverless_job"
    return "unknown"


def x_recon(doc: dict) -> dict:
    """The recon envelope of a saved response; anything but an object counts as absent."""
    xr = doc.get("x_recon")
    return xr if isinstance(xr, dict) else {}


def text_or_none(v):
    """A string field (pulledAt): a non-string value counts as absent."""
    return v if isinstance(v, str) else None


def billing_source(envelope: dict) -> str:
    path = x_recon(envelope).get("endpoint")
    if isinstance(path, str) and path in BILLING_BY_PATH:
        return BILLING_BY_PATH[path]
    for rec in envelope["records"][:1]:
        if isinstance(rec, dict):
            for key, src in BILLING_BY_ID.items():
                if key in rec:
                    return src
            if "podGpuAmount" in rec:
                return "v2_account"
    return "v2_unknown"


_NUMBERS = frozenset((int, float))  # exactly: a bool is an int, and is no amount


def check_amounts(rec: dict, keys) -> None:
    """Each of `keys` absent, null, or a finite number (not a boolean) of size below 1e12."""
    for k in keys:
        v = rec.get(k)
        if v is None or (type(v) in _NUMBERS and -1e12 < v < 1e12):
            continue  # the usual case in one test (NaN fails the comparison): read_file of
            # the target day's 58k billing records 0.30 -> 0.26 s
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise BadRecord(f"{k} is not a number: {str(v)[:40]!r}")
        if isinstance(v, float) and not math.isfinite(v):
            raise BadRecord(f"{k} is not finite: {v}")
        if abs(v) >= 1e12:
            raise BadRecord(f"{k} is out of range: {v}")


def require(rec: dict, *keys: str) -> None:
    missing = [k for k in keys if rec.get(k) in (None, "")]
    if missing:
        raise BadRecord(f"missing required field(s) {', '.join(missing)}")
