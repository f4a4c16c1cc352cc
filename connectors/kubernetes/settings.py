"""Constants of the Kubernetes connector: the watched resources and every default.

Everything tunable lives here (as in a dlt verified source's ``settings.py``); the
collector reads these values through :class:`connectors.kubernetes.clusters.CollectorOptions`.
"""

from __future__ import annotations

from dataclasses import dataclass

# --------------------------------------------------------------------------- landing layout
LANDING_SUBDIR = (
    "k8s"  # <landing>/k8s/cluster=<name>/hour=YYYY-MM-DDTHH/<resource>-<pid>-<seq>.jsonl
)
STATE_SUBDIR = "state"  # <landing>/k8s/state/<cluster>.json
FILE_SUFFIX = ".jsonl"
HOUR_FORMAT = "%Y-%m-%dT%H"
SEEN_AT_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
ROW_TYPES = ("ADDED", "MODIFIED", "DELETED")
STATE_FORMAT_VERSION = 1

# --------------------------------------------------------------------------- defaults
DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024  # rotate a landing file beyond this size
DEFAULT_PAGE_SIZE = 500  # list ?limit=
DEFAULT_WATCH_TIMEOUT_SECONDS = 300  # watch ?timeoutSeconds= (jittered by +-10 %)
DEFAULT_WATCH_READ_MARGIN_SECONDS = 30.0  # socket read timeout = watch timeout + margin
DEFAULT_CONNECT_TIMEOUT_SECONDS = 10.0
DEFAULT_LIST_READ_TIMEOUT_SECONDS = 60.0  # per socket read while receiving a list page
DEFAULT_DEDUPE_SIZE = 65_536  # (uid, resourceVersion) keys kept per cluster x resource
DEFAULT_BACKOFF_BASE_SECONDS = 0.5
DEFAULT_BACKOFF_CAP_SECONDS = 60.0
MAX_RETRY_AFTER_SECONDS = 120.0  # a server's Retry-After is honoured up to this
DEFAULT_STATE_INTERVAL_SECONDS = 5.0  # save state at most this often while events flow
DEFAULT_ABSENT_RECHECK_SECONDS = 600.0  # re-probe an API that answered 404 (CRD not installed)
DEFAULT_PROGRESS_INTERVAL_SECONDS = 30.0
DEFAULT_SEED_BYTES = 8 * 1024 * 1024  # tail of earlier landing files read to seed the dedupe LRU
MAX_WATCH_LINE_BYTES = 256 * 1024 * 1024  # a watch line longer than this is a broken stream
SHORT_WATCH_SECONDS = 1.0  # a watch ended sooner with no events backs off (client-go's rule)
IN_CLUSTER_NAME_ENV = "RECON_CLUSTER_NAME"  # cluster name when running in-cluster
DEFAULT_IN_CLUSTER_NAME = "in-cluster"


# --------------------------------------------------------------------------- resources
@dataclass(frozen=True)
class ResourceSpec:
    """One watched collection and how the official client lists/watches it."""

    name: str  # used in file names and state keys ([a-z0-9_]+)
    api_version: str  # set on list items (the API omits it there)
    kind: str
    plural: str
    api_class: str  # class name in kubernetes.client
    method: str  # list method of that class (cluster-wide / all namespaces)
    optional: bool = False  # tolerate 404 (API group or CRD not served)

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def call_args(self) -> tuple[str, ...]:
        """Positional arguments of the list method (group, version, plural for custom objects)."""
        if self.api_class != "CustomObjectsApi":
            return ()
        return (self.group, self.api_version.rpartition("/")[2], self.plural)


_CORE, _EVENTS, _BATCH, _CUSTOM = "CoreV1Api", "EventsV1Api", "BatchV1Api", "CustomObjectsApi"
_ALL_NS_EVENTS = "list_event_for_all_namespaces"
_KEDA = "keda.sh/v1alpha1"

RESOURCES: dict[str, ResourceSpec] = {
    spec.name: spec
    for spec in (
        ResourceSpec("pods", "v1", "Pod", "pods", _CORE, "list_pod_for_all_namespaces"),
        ResourceSpec("events", "v1", "Event", "events", _CORE, _ALL_NS_EVENTS),
        ResourceSpec(
            "events_k8s_io",
            "events.k8s.io/v1",
            "Event",
            "events",
            _EVENTS,
            _ALL_NS_EVENTS,
            optional=True,
        ),
        ResourceSpec("nodes", "v1", "Node", "nodes", _CORE, "list_node"),
        ResourceSpec("jobs", "batch/v1", "Job", "jobs", _BATCH, "list_job_for_all_namespaces"),
        ResourceSpec(
            "scaledobjects",
            _KEDA,
            "ScaledObject",
            "scaledobjects",
            _CUSTOM,
            "list_cluster_custom_object",
            optional=True,
        ),
        ResourceSpec(
            "scaledjobs",
            _KEDA,
            "ScaledJob",
            "scaledjobs",
            _CUSTOM,
            "list_cluster_custom_object",
            optional=True,
        ),
    )
}

DEFAULT_RESOURCES: tuple[str, ...] = tuple(RESOURCES)
