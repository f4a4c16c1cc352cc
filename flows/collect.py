"""Collect: land Kubernetes objects and a Runpod inventory snapshot into the landing area.

    python flows/collect.py --landing-dir data/landing --kubeconfig ~/.kube/config --context prod
    python flows/collect.py --landing-dir data/landing --no-runpod-inventory --kubeconfig ...

`once=True` lists each resource once (a scheduled snapshot). `once=False` lists, then watches
until `run_seconds` / `max_events` (a long-running collector; for always-on collection the
collector is better run as its own process or Kubernetes Deployment, see connectors/kubernetes).
"""

from __future__ import annotations

import argparse
import os

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import wait

try:
    from flows.common import (
        COLLECT_ONCE_TIMEOUT_S,
        RUNPOD_TAG,
        TASK_TIMEOUT_MARGIN_S,
        limited,
        local_api_defaults,
        logger,
        pull_timeout_seconds,
        require_runpod_api_key,
        retry_transient,
        tags_with_limits,
    )
except ImportError:  # pragma: no cover - the project is not installed
    from common import (  # type: ignore
        COLLECT_ONCE_TIMEOUT_S,
        RUNPOD_TAG,
        TASK_TIMEOUT_MARGIN_S,
        limited,
        local_api_defaults,
        logger,
        pull_timeout_seconds,
        require_runpod_api_key,
        retry_transient,
        tags_with_limits,
    )


def _cluster_source(kubeconfig: str | None, contexts) -> str | None:
    """Why Kubernetes is collected, or None to skip it (nothing given, not in a pod)."""
    if kubeconfig or contexts:
        return "kubeconfig"
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "in-cluster service account"
    return None


@task(cache_policy=NO_CACHE)
def collect_kubernetes(landing_dir: str, kubeconfig: str | None = None,
                       contexts: list[str] | str | None = None, once: bool = True,
                       run_seconds: float | None = None, max_events: int | None = None) -> dict:
    """List (once) or list-and-watch every configured cluster into LANDING/k8s/."""
    from connectors.kubernetes import collect as k8s_collect
    from connectors.kubernetes import collect_once, default_clusters

    clusters = default_clusters(kubeconfig, contexts)
    logger().info("Kubernetes clusters: %s", ", ".join(c.name for c in clusters))
    if once:
        counters = collect_once(landing_dir, clusters)
    else:
        counters = k8s_collect(landing_dir, clusters, run_seconds=run_seconds,
                               max_events=max_events)
    snap = counters.snapshot()
    logger().info("Kubernetes: %s", snap["totals"])
    if failed := counters.failed_lists():  # a list that gave up is missing data: fail, naming it
        raise RuntimeError(f"{len(failed)} Kubernetes list(s) gave up after their retries: "
                           f"{', '.join(failed)} (the log names why); what did list was landed")
    return snap


@task(retries=3, retry_delay_seconds=[30, 120, 300], retry_jitter_factor=0.2,
      retry_condition_fn=retry_transient, tags=[RUNPOD_TAG], cache_policy=NO_CACHE,
      timeout_seconds=pull_timeout_seconds())  # the snapshot's own deadline, and a margin
def snapshot_runpod_inventory(landing_dir: str, base_url: str | None = None) -> dict:
    """Land /v2/pods, /v2/serverless (+ workers), /v2/network-volumes and /v2/catalog/gpus
    (terminated resources vanish from the inventory, and their rates with them; list prices
    change: snapshot it on a schedule)."""
    from connectors.runpod import RunpodClient, snapshot_inventory

    key = require_runpod_api_key()
    client = RunpodClient(key, base_url=base_url) if base_url else RunpodClient(key)
    try:
        res = snapshot_inventory(landing_dir, client=client)
    finally:
        client.close()
    for w in res.warnings:
        logger().warning(w)
    logger().info("Runpod inventory: %d files", len(res.files))
    if res.given_up:
        logger().warning("Runpod inventory: gave up %d call(s) at a deadline, not landed: %s",
                         len(res.given_up), "; ".join(res.given_up))
    return {"files": len(res.files), "pulled_at": res.pulled_at.isoformat(),
            "given_up": list(res.given_up)}


@flow(name="collect")
def collect(landing_dir: str = "data/landing", kubeconfig: str | None = None,
            contexts: list[str] | None = None, once: bool = True,
            runpod_inventory: bool = True, run_seconds: float | None = None,
            max_events: int | None = None) -> dict:
    """Land Kubernetes lifecycle objects and a Runpod inventory snapshot.

    Args:
        landing_dir: Landing area the daily reconciliation reads.
        kubeconfig: Path of a kubeconfig file on the worker. Kubernetes is skipped when
            neither kubeconfig nor contexts is given, unless the worker runs in a pod
            (then its service account is used).
        contexts: kubeconfig contexts to collect (default: the current context; ["all"] for
            every context).
        once: List once (True) or list then watch (False) until run_seconds/max_events.
        runpod_inventory: Snapshot the Runpod inventory (API key: Secret block
            `runpod-api-key`, else env RUNPOD_API_KEY).
        run_seconds: With once=False: stop watching after this many seconds.
        max_events: With once=False: stop after this many landed object versions.
    """
    if contexts == ["all"]:
        contexts = "all"
    futures = {}
    source = _cluster_source(kubeconfig, contexts)
    if source is None:
        logger().info("Kubernetes skipped: no kubeconfig/contexts given and not in a pod")
    else:
        # a deadline for a bounded collection: a list once, or a watch for run_seconds
        bounded = COLLECT_ONCE_TIMEOUT_S if once else (
            run_seconds + TASK_TIMEOUT_MARGIN_S if run_seconds else None)
        collector = collect_kubernetes.with_options(timeout_seconds=bounded) if bounded else (
            collect_kubernetes)
        futures["kubernetes"] = collector.submit(
            str(landing_dir), kubeconfig, contexts, once, run_seconds, max_events)
    if runpod_inventory:
        # a task carries a tag only for its limit (flows/common.py)
        snapshot = limited(snapshot_runpod_inventory, tags_with_limits())
        futures["runpod_inventory"] = snapshot.submit(str(landing_dir))
    wait(list(futures.values()))  # let both finish before either failure fails the flow
    return {name: fut.result() for name, fut in futures.items()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Land Kubernetes objects and Runpod inventory.")
    p.add_argument("--landing-dir", default="data/landing")
    p.add_argument("--kubeconfig")
    p.add_argument("--context", action="append", dest="contexts",
                   help="kubeconfig context (repeatable; 'all' for every context)")
    p.add_argument("--watch", action="store_true", help="list then watch (default: list once)")
    p.add_argument("--run-seconds", type=float)
    p.add_argument("--max-events", type=int)
    p.add_argument("--no-runpod-inventory", action="store_true")
    a = p.parse_args(argv)
    local_api_defaults()  # before the flow starts the temporary API
    collect(landing_dir=a.landing_dir, kubeconfig=a.kubeconfig, contexts=a.contexts,
            once=not a.watch, runpod_inventory=not a.no_runpod_inventory,
            run_seconds=a.run_seconds, max_events=a.max_events)


if __name__ == "__main__":
    main()
