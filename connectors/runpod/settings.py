"""Constants for the Runpod REST v2 connector: every URL, path and limit lives here.

Only the current REST v2 API (``https://api.runpod.io/v2/...``) is called. The retired v1 REST
API and the deprecated GraphQL API are never called by this package.
"""

from __future__ import annotations

# --- API -------------------------------------------------------------------------------------
BASE_URL = "https://api.runpod.io"
API_KEY_ENV = "RUNPOD_API_KEY"

# Billing endpoints, keyed by landing "kind".
BILLING_PODS = "/v2/billing/pods"
BILLING_SERVERLESS = "/v2/billing/serverless"
BILLING_NETWORK_VOLUMES = "/v2/billing/network-volumes"
# Older spec versions spelled it without the dash; tried once after a 404 on the new spelling.
BILLING_NETWORK_VOLUMES_LEGACY = "/v2/billing/networkvolumes"
BILLING_ACCOUNT = "/v2/billing"

BILLING_ENDPOINTS: dict[str, str] = {
    "billing_pods": BILLING_PODS,
    "billing_serverless": BILLING_SERVERLESS,
    "billing_network_volumes": BILLING_NETWORK_VOLUMES,
    "billing_account": BILLING_ACCOUNT,
}
BILLING_KINDS: tuple[str, ...] = tuple(BILLING_ENDPOINTS)

# Record fields without which a billing record cannot be reconciled: a record missing one is a
# hard error. Other fields the spec marks as required (cost components) only log a warning when
# absent; unknown extra fields are always kept (the response lands verbatim).
BILLING_REQUIRED_RECORD_FIELDS: dict[str, tuple[str, ...]] = {
    "billing_pods": ("startTime", "endTime", "podId", "totalAmount"),
    "billing_serverless": ("startTime", "endTime", "serverlessId", "totalAmount"),
    "billing_network_volumes": ("startTime", "endTime", "networkVolumeId", "totalAmount"),
    "billing_account": ("startTime", "endTime", "totalAmount"),
}
BILLING_SPEC_RECORD_FIELDS: dict[str, tuple[str, ...]] = {
    "billing_pods": ("gpuAmount", "cpuAmount", "diskAmount"),
    "billing_serverless": ("gpuAmount", "cpuAmount", "diskAmount", "feeAmount"),
    "billing_network_volumes": ("standardAmount", "highPerformanceAmount"),
    "billing_account": (
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
    ),
}
BILLING_REQUIRED_TOP_LEVEL = ("records", "metadata")
BILLING_BUCKET_SIZE = "hour"  # the finest bucket the API offers

# Inventory endpoints.
PODS = "/v2/pods"
SERVERLESS = "/v2/serverless"
SERVERLESS_WORKERS = "/v2/serverless/{id}/workers"  # templated; the id goes in x_recon.endpointId
NETWORK_VOLUMES = "/v2/network-volumes"
# Runpod's list prices (openapi-v2 `listGpuTypes`: `GpuType.price` {secure, community,
# serverless}, USD per hour for one GPU). Pulled with the inventory: prices change, and the
# reconciliation prices each hour by the latest catalog pulled at or before it.
GPU_CATALOG = "/v2/catalog/gpus"
INVENTORY_LIST_KEYS: dict[str, str] = {  # kind -> required top-level list key
    "pods": "pods",
    "serverless": "endpoints",
    "workers": "workers",
    "network_volumes": "networkVolumes",
    "gpu_catalog": "gpus",
}
# The serverless job API lives on another host (api.runpod.ai); this connector never calls it.
# Health bodies are handed in by the job submitter and landed under this endpoint label.
SERVERLESS_HEALTH = "/v2/{endpointId}/health"

# --- limits ----------------------------------------------------------------------------------
DEFAULT_CHUNK_DAYS = 7  # at most this many days per billing request (keeps responses small)
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0
MAX_RETRIES = 5  # retries after the first attempt (429, 5xx, connection errors, bad JSON)
BACKOFF_BASE_S = 1.0  # first backoff; doubles each retry ...
BACKOFF_CAP_S = 60.0  # ... up to this cap
# A server-requested wait (Retry-After, or RateLimit reset when remaining is 0) longer than this
# is not slept through: the call fails with RunpodRateLimitError instead. Retry-After is
# honoured on every attempt, so this cap times MAX_RETRIES bounds the sleeping of one request
# (900 s let one pull sleep ~5 hours); the request deadline below bounds it too.
MAX_WAIT_S = 120.0
# Total deadlines. The (connect, read) timeout above applies to each socket read, so a server
# sending a byte every few seconds never trips it; these bound the wall-clock time of one
# request (every attempt, backoff and server-requested wait included: RunpodDeadlineError) and
# of one pull (pull_billing, snapshot_inventory: the calls left when it passes are not made,
# and the pull's result names them in `given_up`). A wait that would end past a deadline is
# not started.
REQUEST_DEADLINE_S = 300.0
PULL_DEADLINE_S = 1800.0
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
ERROR_BODY_SNIPPET = 300  # characters of a non-problem error body quoted in messages

# --- landing ---------------------------------------------------------------------------------
LANDING_PREFIX = "runpod"  # <landing>/runpod/...
INVENTORY_DIR = "inventory"
ENVELOPE_KEY = "x_recon"
PULLED_DIR_FMT = "pulled={stamp}"
STAMP_FMT = "%Y%m%dT%H%M%SZ"  # pulled=<stamp> and the <start>_<end> of billing file names
MAX_STAMP_ATTEMPTS = 3  # landing-path collisions (same second) before giving up

# --- serverless job records (JSONL written by the user's job submitter) ------------------------
JOB_RECORD_KEYS = (
    "id",
    "status",
    "delayTime",
    "executionTime",
    "workerId",
    "endpointId",
    "submittedAt",
    "completedAt",
)
JOB_STATUSES = frozenset(
    {"IN_QUEUE", "IN_PROGRESS", "COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT"}
)
