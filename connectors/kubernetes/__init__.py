"""Kubernetes live side: watch pods, events, nodes, jobs and KEDA objects into a landing area.

Events expire after an hour and scaled-down pods vanish, so a collector lists and then
watches continuously and appends every object version it sees to newline-delimited JSON
files that a daily run reads. See ``README.md`` in this directory for the landing format and
for running the collector in or outside a cluster.

Public API (shaped like a dlt verified source: entry points here, list/watch code in
``helpers.py``, constants in ``settings.py``)::

    collect(landing_dir, clusters, resources=DEFAULT_RESOURCES, stop_event=None,
            max_events=None, *, run_seconds=None, options=None, counters=None,
            on_progress=None, configurations=None) -> Counters
    collect_once(landing_dir, clusters, resources=DEFAULT_RESOURCES, *, options=None,
                 counters=None, save_state=False, configurations=None) -> Counters
    ClusterConfig(name=None, kubeconfig=None, context=None, in_cluster=False)
    ClusterConfig.from_kubeconfig(kubeconfig=None, contexts=None | "all" | [names])
    ClusterConfig.in_cluster_config(name=None)
    default_clusters(kubeconfig=None, contexts=None) -> list[ClusterConfig]
    check_unique_names(clusters)   # ValueError if two clusters clean to one name
    CollectorOptions(...)   # tunables, defaults in settings.py
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence

from kubernetes import client as k8s_client

from .clusters import ClusterConfig, CollectorOptions, check_unique_names, safe_cluster_name
from .runner import COUNTER_KEYS, Counters, run
from .settings import DEFAULT_RESOURCES, RESOURCES


def collect(
    landing_dir: str | os.PathLike,
    clusters: Sequence[ClusterConfig],
    resources: Sequence[str] = DEFAULT_RESOURCES,
    stop_event: threading.Event | None = None,
    max_events: int | None = None,
    *,
    run_seconds: float | None = None,
    options: CollectorOptions | None = None,
    counters: Counters | None = None,
    on_progress: Callable[[dict], None] | None = None,
    configurations: Mapping[str, k8s_client.Configuration] | None = None,
) -> Counters:
    """List, then watch every resource of every cluster, landing each object version once.

    Runs until ``stop_event`` is set, ``max_events`` rows have been written (in total), or
    ``run_seconds`` have passed; then stops the watches, saves the state and returns the
    counters. Blocking: run it in the main thread of ``recon collect`` (set ``stop_event`` from
    a SIGTERM handler) or in a Prefect task. ``on_progress`` receives
    ``Counters.snapshot()`` every ``options.progress_interval_seconds`` and once at the end.
    On restart it resumes each watch from ``<landing>/k8s/state/<cluster>.json`` (relisting
    if that resourceVersion is too old). Optional APIs (events.k8s.io, KEDA CRDs) answering
    404 are re-probed every ``options.absent_recheck_seconds``. ``configurations`` (by
    cluster name, from ``ClusterConfig.configuration()``) are used instead of loading them
    again, so a caller that loaded them to report a broken kubeconfig does not load twice.
    """
    return run(
        landing_dir,
        list(clusters),
        list(resources),
        stop_event=stop_event,
        max_events=max_events,
        run_seconds=run_seconds,
        options=options or CollectorOptions(),
        counters=counters or Counters(),
        on_progress=on_progress,
        once=False,
        save_state=True,
        configurations=configurations,
    )


def collect_once(
    landing_dir: str | os.PathLike,
    clusters: Sequence[ClusterConfig],
    resources: Sequence[str] = DEFAULT_RESOURCES,
    *,
    options: CollectorOptions | None = None,
    counters: Counters | None = None,
    save_state: bool = False,
    configurations: Mapping[str, k8s_client.Configuration] | None = None,
) -> Counters:
    """List every resource of every cluster once and land the items as ``ADDED`` rows.

    Useful for objects that linger (finished Jobs and their pods) or to backfill before a
    collector starts. Versions already landed by a recent run (found in the tails of the
    newest landing files) are skipped. By default the watch state is not touched (a running
    collector owns it); ``save_state=True`` records each list's resourceVersion so that a
    collector started afterwards watches from there. ``configurations``: as for
    :func:`collect`. A list that gives up, or whose rows cannot be landed (disk full), is
    named by ``Counters.failed_lists()``.
    """
    return run(
        landing_dir,
        list(clusters),
        list(resources),
        stop_event=None,
        max_events=None,
        run_seconds=None,
        options=options or CollectorOptions(),
        counters=counters or Counters(),
        on_progress=None,
        once=True,
        save_state=save_state,
        configurations=configurations,
    )


def default_clusters(
    kubeconfig: str | None = None, contexts: Sequence[str] | str | None = None
) -> list[ClusterConfig]:
    """Clusters for a CLI without flags: in a pod (``KUBERNETES_SERVICE_HOST`` set, no
    kubeconfig given) the in-cluster service account, else the kubeconfig's contexts
    (``contexts=None``: current context; ``"all"``; or a list of names)."""
    if kubeconfig is None and contexts is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        return [ClusterConfig.in_cluster_config()]
    return ClusterConfig.from_kubeconfig(kubeconfig, contexts)


__all__ = [
    "COUNTER_KEYS",
    "DEFAULT_RESOURCES",
    "RESOURCES",
    "ClusterConfig",
    "CollectorOptions",
    "Counters",
    "check_unique_names",
    "collect",
    "collect_once",
    "default_clusters",
    "safe_cluster_name",
]
