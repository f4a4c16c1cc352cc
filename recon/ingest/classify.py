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
    with exactly these keys. It is recognised so that a run does not quarantine it as unknown."""
    return (set(doc) == {"version", "cluster", "savedAt", "resources"}
            and isinstance(doc["resources"], dict)
            and all(isinstance(v, dict) and "resourceVersion" in v for v in doc["resources"].values()))


def _v1_billing_record(x) -> bool:
    """A record of a saved v1 bill (`BillingRecords`, `NetworkVolumeBillingRecords` in
    openapi-v1.json): `timeBilledMs`, or a `time` and an `amount` (network-volume records and
    some grouped ones carry no milliseconds)."""
    return isinstance(x, dict) and ("timeBilledMs" in x or ("time" in x and "amount" in x))


def _runpod_pod(x) -> bool:
    """One pod as GET /v2/pods/{id} (openapi-v2 `Pod`) or v1 /pods[/{podId}] returns it."""
    return (isinstance(x, dict) and isinstance(x.get("id"), str)
            and any(k in x for k in ("cost", "costPerHr", "adjustedCostPerHr"))
            and any(k in x for k in ("gpu", "gpuCount", "machine", "desiredStatus")))


def _runpod_endpoint(x) -> bool:
    """One serverless endpoint as GET /v2/serverless/{id} (openapi-v2 `Endpoint`: `workers` is
    the {min, max, idleTimeout} object) or v1 /endpoints returns it (`workersMax`)."""
    return (isinstance(x, dict) and isinstance(x.get("id"), str)
            and ((isinstance(x.get("workers"), dict) and "idleTimeout" in x["workers"])
                 or "workersMax" in x or "workersMin" in x))


def _runpod_volume(x) -> bool:
    """One network volume of v1 /networkvolumes (id, name, size, dataCenterId)."""
    return (isinstance(x, dict) and isinstance(x.get("id"), str) and "size" in x
            and ("dataCenterId" in x or "dataCenter" in x))


def _gpu_catalog(doc: dict) -> bool:
    """`GET /v2/catalog/gpus` (openapi-v2 `ListGpuTypesResponse`: `{"gpus": [GpuType, ...]}`),
    by its `gpus` list of objects priced by `price`; an empty list only when the envelope names
    the endpoint. A GPU whose price is not one the spec allows is still this kind: the loader
    quarantines that GPU with its reason (`gpu_price`), not the whole catalog."""
    gpus = doc.get("gpus")
    if not isinstance(gpus, list):
        return False
    if not gpus:
        return x_recon(doc).get("endpoint") == "/v2/catalog/gpus"
    return any(isinstance(g, dict) and "price" in g for g in gpus[:50])


def gpu_price(gpu) -> None:
    """One `GpuType` of the catalog, checked as its spec types it: a string `id`, a `price`
    object whose `secure` and `community` (required) and `serverless` (absent when the GPU is
    in no serverless pool) are non-negative finite numbers of USD per GPU-hour. BadRecord says
    which and why."""
    if not isinstance(gpu, dict):
        raise BadRecord("GPU type is not a JSON object")
    if not isinstance(gpu.get("id"), str) or not gpu["id"].strip():
        raise BadRecord("GPU type has no id")
    price = gpu.get("price")
    if not isinstance(price, dict):
        raise BadRecord(f"GPU type {gpu['id']!r}: price is not an object: {str(price)[:40]!r}")
    for k in ("secure", "community", "serverless"):
        v = price.get(k)
        if v is None and k == "serverless":
            continue
        if v is None:
            raise BadRecord(f"GPU type {gpu['id']!r}: price.{k} is missing")
        if isinstance(v, bool) or type(v) not in _NUMBERS:
            raise BadRecord(f"GPU type {gpu['id']!r}: price.{k} is not a number: {str(v)[:40]!r}")
        if not math.isfinite(v) or abs(v) >= 1e12:
            raise BadRecord(f"GPU type {gpu['id']!r}: price.{k} is out of range: {v}")
        if v < 0:
            raise BadRecord(f"GPU type {gpu['id']!r}: price.{k} is negative: {v}")


# a bare JSON array of inventory objects (v1 responses are arrays), by what its items are
BARE_INVENTORY = (("pods", _runpod_pod), ("serverless", _runpod_endpoint),
                  ("network_volumes", _runpod_volume))


def bare_inventory(doc: list) -> str | None:
    """The inventory kind of a bare array whose items are all pods, endpoints or volumes."""
    for inv, test in BARE_INVENTORY:
        if all(test(x) for x in doc[:50]):
            return inv
    return None


def list_item_kind(doc: dict) -> str | None:
    """The kind of a List's items when the items do not say it: the API server omits `kind` and
    `apiVersion` on the items of a typed list (`GET /api/v1/nodes` is a `NodeList`; kubectl adds
    them when it prints). None for kubectl's untyped `List`."""
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and len(kind) > 4:
        return kind[:-4]
    return None


def doc_kind(doc) -> str:
    """Kind of a whole document (a JSON file or one JSONL line)."""
    if isinstance(doc, list):
        if not doc:
            return "empty_array"
        if all(_v1_billing_record(x) for x in doc[:50]):
            return "runpod_v1_billing"
        if bare_inventory(doc):
            return "runpod_inventory"
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
    if isinstance(doc.get("jobs"), dict) and isinstance(doc.get("workers"), dict):
        return "runpod_health"  # GET https://api.runpod.ai/v2/{endpointId}/health, as returned
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
    if _runpod_pod(doc) or _runpod_endpoint(doc):  # before the lists: an Endpoint names its
        return "runpod_inventory_item"  # networkVolumes, a list of objects
    if _gpu_catalog(doc):
        return "runpod_gpu_catalog"
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
            if "totalAmount" in rec and "startTime" in rec:
                # /v2/billing/endpoints (public endpoints, openapi-v2 `EndpointBillingRecord`):
                # a bucket and its total, no id; every other v2 billing record names its id
                # (`podId`, `serverlessId`, `networkVolumeId`, `clusterId`) or is the account's
                return "v2_endpoints"
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


def with_list_kind(doc: dict):
    """A function giving a List's item with the `kind` and `apiVersion` the List's own kind
    implies where the item lacks them (the API server's typed lists: `NodeList` of items
    without either), as kubectl would print it; other items unchanged."""
    kind, version = list_item_kind(doc), doc.get("apiVersion")

    def typed(item):
        if kind is None or not isinstance(item, dict) or item.get("kind"):
            return item
        return {"apiVersion": item.get("apiVersion") or version, "kind": kind, **item}
    return typed


def v1_source(rec: dict) -> str:
    """The source of a v1 billing record, by the group it names (openapi-v1 `BillingRecords`:
    `podId`, `endpointId` or `gpuTypeId`, "if grouping by" it; `NetworkVolumeBillingRecords`
    name none). A worker's line of /billing/endpoints grouped by podId names both its pod id
    and its endpoint: serverless. Lines by GPU type (runpodctl's default grouping for pods)
    and network-volume lines are the account's, per bucket (sql/staging/stg_runpod__account_lines.sql)."""
    if rec.get("endpointId"):
        return "v1_serverless"
    if rec.get("podId"):
        return "v1_pods"
    if rec.get("gpuTypeId"):
        return "v1_gpu_types"
    if "timeBilledMs" not in rec and any(k in rec for k in V1_VOLUME_KEYS):
        return "v1_network_volumes"
    raise BadRecord("v1 billing record names no podId, endpointId or gpuTypeId, and is no "
                    "network-volume record (diskSpaceBilledGb without timeBilledMs)")


V1_VOLUME_KEYS = ("diskSpaceBilledGb", "diskSpaceBilledGB", "highPerformanceStorageAmount",
                  "highPerformanceStorageDiskSpaceBilledGb")
