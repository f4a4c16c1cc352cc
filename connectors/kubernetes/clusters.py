"""Cluster connection settings (kubeconfig contexts or in-cluster) and collector options."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from . import settings

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def safe_cluster_name(name: str) -> str:
    """A cluster name usable as a path segment (``cluster=<name>``) and as the row tag.

    Context names such as ``arn:aws:eks:eu-west-1:123:cluster/gpu`` become
    ``arn_aws_eks_eu-west-1_123_cluster_gpu``. The same value is written in rows and paths so
    that a hive-partitioned read sees one consistent ``cluster`` column.
    """
    cleaned = _SAFE_NAME.sub("_", name).strip("._")
    if not cleaned:
        raise ValueError(f"cluster name {name!r} has no usable characters")
    return cleaned


@dataclass(frozen=True)
class ClusterConfig:
    """How to reach one cluster.

    * kubeconfig: ``ClusterConfig(kubeconfig="~/.kube/config", context="prod")``; ``name``
      defaults to the context (or the kubeconfig's current context).
    * in-cluster: ``ClusterConfig(name="prod", in_cluster=True)`` (service account token,
      refreshed by the client as it rotates).
    """

    name: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    in_cluster: bool = False

    def __post_init__(self) -> None:
        name = self.name
        if name is None:
            if self.in_cluster:
                name = os.environ.get(
                    settings.IN_CLUSTER_NAME_ENV, settings.DEFAULT_IN_CLUSTER_NAME
                )
            elif self.context:
                name = self.context
            else:
                _, current = k8s_config.list_kube_config_contexts(self._kubeconfig_path())
                name = current["name"]
        object.__setattr__(self, "name", safe_cluster_name(name))

    def _kubeconfig_path(self) -> str | None:
        return os.path.expanduser(self.kubeconfig) if self.kubeconfig else None

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: str | None = None, contexts: Sequence[str] | str | None = None
    ) -> list[ClusterConfig]:
        """One ClusterConfig per context: ``contexts=None`` = the current context,
        ``"all"`` = every context of the file, or an explicit list of context names."""
        path = os.path.expanduser(kubeconfig) if kubeconfig else None
        available, current = k8s_config.list_kube_config_contexts(path)
        if contexts is None:
            names = [current["name"]]
        elif contexts == "all":
            names = [c["name"] for c in available]
        else:
            names = [contexts] if isinstance(contexts, str) else list(contexts)
            known = [c["name"] for c in available]
            missing = [n for n in names if n not in known]
            if missing:
                raise ValueError(f"contexts not in kubeconfig: {missing} (it has {known})")
        return [cls(kubeconfig=kubeconfig, context=n) for n in names]

    @classmethod
    def in_cluster_config(cls, name: str | None = None) -> ClusterConfig:
        return cls(name=name, in_cluster=True)

    def configuration(self) -> k8s_client.Configuration:
        """A fresh client Configuration. urllib3 retries are switched off: the collector
        owns retries (backoff, relist) so a read timeout is seen once, not silently retried."""
        cfg = k8s_client.Configuration()
        if self.in_cluster:
            k8s_config.load_incluster_config(client_configuration=cfg)
        else:
            k8s_config.load_kube_config(
                config_file=self._kubeconfig_path(),
                context=self.context,
                client_configuration=cfg,
                persist_config=False,
            )
        cfg.retries = False
        return cfg

    def api_client(
        self, configuration: k8s_client.Configuration | None = None
    ) -> k8s_client.ApiClient:
        return k8s_client.ApiClient(configuration or self.configuration())


def check_unique_names(clusters: Sequence[ClusterConfig]) -> None:
    """Two clusters of one name would share a state file and a ``cluster=`` partition (and
    their rows could not be told apart): contexts that differ only in characters the path-safe
    name replaces (``a:b``, ``a/b``) must be renamed or collected into separate landing areas."""
    seen: dict[str, ClusterConfig] = {}
    for cluster in clusters:
        assert cluster.name is not None  # set by __post_init__
        first = seen.setdefault(cluster.name, cluster)
        if first is not cluster:
            a, b = _origin(first), _origin(cluster)
            clash = f"{a} is given twice" if a == b else f"{a} and {b} both become"
            raise ValueError(f"cluster names must be unique: {clash} cluster {cluster.name!r}")


def _origin(cluster: ClusterConfig) -> str:
    if cluster.in_cluster:
        return "the in-cluster service account"
    return f"context {cluster.context!r}" if cluster.context else f"cluster {cluster.name!r}"


@dataclass(frozen=True)
class CollectorOptions:
    """Tunables of a collector run (defaults from :mod:`.settings`)."""

    page_size: int = settings.DEFAULT_PAGE_SIZE
    watch_timeout_seconds: int = settings.DEFAULT_WATCH_TIMEOUT_SECONDS
    watch_read_margin_seconds: float = settings.DEFAULT_WATCH_READ_MARGIN_SECONDS
    connect_timeout_seconds: float = settings.DEFAULT_CONNECT_TIMEOUT_SECONDS
    list_read_timeout_seconds: float = settings.DEFAULT_LIST_READ_TIMEOUT_SECONDS
    max_file_bytes: int = settings.DEFAULT_MAX_FILE_BYTES
    dedupe_size: int = settings.DEFAULT_DEDUPE_SIZE
    backoff_base_seconds: float = settings.DEFAULT_BACKOFF_BASE_SECONDS
    backoff_cap_seconds: float = settings.DEFAULT_BACKOFF_CAP_SECONDS
    state_interval_seconds: float = settings.DEFAULT_STATE_INTERVAL_SECONDS
    absent_recheck_seconds: float = settings.DEFAULT_ABSENT_RECHECK_SECONDS
    progress_interval_seconds: float = settings.DEFAULT_PROGRESS_INTERVAL_SECONDS
    fsync: bool = True  # fsync a landing file before the state that covers it is saved
    seed_bytes: int = settings.DEFAULT_SEED_BYTES  # 0 = do not seed dedupe from earlier files

    def __post_init__(self) -> None:
        if self.page_size < 1 or self.watch_timeout_seconds < 1:
            raise ValueError("page_size and watch_timeout_seconds must be >= 1")
        if self.dedupe_size < 1 or self.max_file_bytes < 1:
            raise ValueError("dedupe_size and max_file_bytes must be >= 1")
