"""Threads that drive :class:`~.helpers.ListWatch` into the landing area.

One thread per (cluster, resource): it owns its landing writer and dedupe LRU, shares the
cluster's :class:`~.landing.StateStore`, and saves the state only after the rows that the
saved resourceVersion covers are written (and fsynced).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from kubernetes import client as k8s_client

from . import settings
from .clusters import ClusterConfig, CollectorOptions, check_unique_names
from .helpers import Backoff, Checkpoint, Item, ListWatch
from .landing import (
    Clock,
    DedupeLRU,
    LandingWriter,
    StateStore,
    seed_from_landing,
    utcnow,
    version_key,
)

log = logging.getLogger(__name__)

COUNTER_KEYS = (
    "written",  # rows landed
    "bytes",  # bytes landed
    "duplicates",  # versions skipped because already landed (same uid + resourceVersion)
    "lists",  # complete or attempted lists
    "relists",  # lists forced by a 410 (expired continue, too old resourceVersion)
    "reconnects",  # network errors (connection refused/reset, timeouts, truncated streams)
    "bookmarks",
    "errors",  # API errors other than 404/410, ERROR events, watches closed at once with
    # nothing sent, unexpected exceptions
    "not_served",  # 404 on an optional API (events.k8s.io, KEDA CRDs)
    "state_saves",
    "lists_failed",  # lists given up after their retries, or landing them failed (once mode:
    # `recon collect --once` exits 1)
)


class Counters:
    """Thread-safe progress counters per (cluster, resource); see ``COUNTER_KEYS``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[str, str], dict[str, int]] = defaultdict(
            lambda: dict.fromkeys(COUNTER_KEYS, 0)
        )

    def incr(self, cluster: str, resource: str, key: str, n: int = 1) -> None:
        with self._lock:
            self._values[(cluster, resource)][key] += n

    def get(self, key: str, cluster: str | None = None, resource: str | None = None) -> int:
        with self._lock:
            return sum(
                values[key]
                for (c, r), values in self._values.items()
                if (cluster is None or c == cluster) and (resource is None or r == resource)
            )

    def failed_lists(self) -> list[str]:
        """`cluster/resource` of every list given up after its retries, or whose rows could not
        be landed in once mode (`lists_failed`)."""
        with self._lock:
            return sorted(f"{c}/{r}" for (c, r), values in self._values.items()
                          if values["lists_failed"])

    def snapshot(self) -> dict:
        """``{"totals": {key: n}, "clusters": {cluster: {resource: {key: n}}}}``."""
        with self._lock:
            clusters: dict[str, dict[str, dict[str, int]]] = {}
            totals = dict.fromkeys(COUNTER_KEYS, 0)
            for (cluster, resource), values in sorted(self._values.items()):
                clusters.setdefault(cluster, {})[resource] = dict(values)
                for key, n in values.items():
                    totals[key] += n
            return {"totals": totals, "clusters": clusters}


class _Budget:
    """At most ``limit`` rows in total (``max_events``)."""

    def __init__(self, limit: int) -> None:
        self._left = limit
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self._left <= 0:
                return False
            self._left -= 1
            return True

    @property
    def exhausted(self) -> bool:
        with self._lock:
            return self._left <= 0


class _Worker:
    def __init__(
        self,
        *,
        cluster: str,
        configuration: k8s_client.Configuration,
        spec: settings.ResourceSpec,
        landing_dir: str | os.PathLike,
        options: CollectorOptions,
        state: StateStore,
        counters: Counters,
        stop: threading.Event,
        budget: _Budget | None,
        once: bool,
        save_state: bool,
        clock: Clock,
    ) -> None:
        self.cluster, self.spec, self.options = cluster, spec, options
        self.configuration, self.state, self.counters = configuration, state, counters
        self.stop, self.budget, self.once, self.save_state = stop, budget, once, save_state
        self.landing_dir = landing_dir
        self.lru = DedupeLRU(options.dedupe_size)
        self.writer = LandingWriter(
            landing_dir,
            cluster,
            spec.name,
            max_file_bytes=options.max_file_bytes,
            fsync=options.fsync,
            clock=clock,
        )
        self._listwatch: ListWatch | None = None
        self._saved_rv: str | None = None  # what the state file holds for this resource
        self.thread = threading.Thread(
            target=self._main, name=f"k8s-{cluster}-{spec.name}", daemon=True
        )

    def stat(self, key: str, n: int = 1) -> None:
        self.counters.incr(self.cluster, self.spec.name, key, n)

    def abort(self) -> None:
        listwatch = self._listwatch
        if listwatch is not None:
            listwatch.abort()

    def _main(self) -> None:
        label = f"{self.cluster}/{self.spec.name}"
        backoff = Backoff(self.options.backoff_base_seconds, self.options.backoff_cap_seconds)
        try:
            try:
                seeded = seed_from_landing(
                    self.lru,
                    self.landing_dir,
                    self.cluster,
                    self.spec.name,
                    self.options.seed_bytes,
                )
                log.debug("%s: seeded dedupe with %d landed versions", label, seeded)
            except OSError:
                log.exception("%s: reading earlier landing files failed; not seeded", label)
            while not self.stop.is_set():
                try:
                    self._run(label)
                    return
                except Exception:
                    self.stat("errors")
                    if self.once:
                        # no retry in once mode: the list is incomplete (e.g. the disk filled up
                        # while landing it), so it must fail the run like a list that gave up
                        self.stat("lists_failed")
                        log.exception("%s: list failed; giving up", label)
                        return
                    log.exception("%s: collector loop failed", label)
                    self.stop.wait(backoff.next_delay())
        finally:
            try:
                self.writer.close()
            except OSError:
                log.exception("%s: closing landing file failed", label)

    def _run(self, label: str) -> None:
        api_client = k8s_client.ApiClient(self.configuration)
        self._saved_rv = self.state.get(self.spec.name)
        start_rv = None if self.once else self._saved_rv
        if start_rv:
            log.info("%s: resuming watch from saved resourceVersion %s", label, start_rv)
        listwatch = ListWatch(
            api_client,
            self.spec,
            self.options,
            self.stop,
            resource_version=start_rv,
            stat=self.stat,
            label=label,
        )
        self._listwatch = listwatch
        events = listwatch.list_once() if self.once else listwatch.run()
        pending: str | None = None
        last_save = time.monotonic()
        try:
            for event in events:
                if isinstance(event, Checkpoint):
                    pending = None
                    self._save(event.resource_version)
                    last_save = time.monotonic()
                    continue
                if not self._land(event):
                    return  # max_events reached
                if event.resource_version:
                    pending = event.resource_version
                    if time.monotonic() - last_save >= self.options.state_interval_seconds:
                        self._save(pending)
                        pending, last_save = None, time.monotonic()
        finally:
            events.close()
            if pending:
                self._save(pending)
            self._listwatch = None
            api_client.close()

    def _land(self, item: Item) -> bool:
        key = version_key(item.obj)
        if key is not None and key in self.lru:
            self.lru.check_and_add(key)  # refresh
            self.stat("duplicates")
            return True
        if self.budget is not None and not self.budget.take():
            return False
        self.stat("bytes", self.writer.write(item.type, item.obj))
        self.stat("written")
        if key is not None:
            self.lru.check_and_add(key)
        return True

    def _save(self, resource_version: str | None) -> None:
        self.writer.sync()
        # a watch that ends with nothing new (a quiet cluster, a server closing watches at
        # once) would otherwise rewrite and fsync the same state on every re-watch
        if self.save_state and resource_version and resource_version != self._saved_rv:
            self.state.save(self.spec.name, resource_version)
            self._saved_rv = resource_version
            self.stat("state_saves")


def run(
    landing_dir: str | os.PathLike,
    clusters: Sequence[ClusterConfig],
    resources: Sequence[str],
    *,
    stop_event: threading.Event | None,
    max_events: int | None,
    run_seconds: float | None,
    options: CollectorOptions,
    counters: Counters,
    on_progress: Callable[[dict], None] | None,
    once: bool,
    save_state: bool,
    clock: Clock = utcnow,
    configurations: Mapping[str, k8s_client.Configuration] | None = None,
) -> Counters:
    unknown = [r for r in resources if r not in settings.RESOURCES]
    if unknown:
        raise ValueError(f"unknown resources {unknown}; known: {list(settings.RESOURCES)}")
    if not clusters:
        raise ValueError("no cluster given")
    check_unique_names(clusters)
    given = configurations or {}
    # fail fast on a bad config; loaded once (a CLI passes what it already loaded to report a
    # broken kubeconfig cleanly: loading again would run exec plugins / token refreshes twice)
    configurations = {
        c.name: given[c.name] if c.name in given else c.configuration() for c in clusters
    }
    stop = threading.Event()
    external = stop_event or threading.Event()
    budget = _Budget(max_events) if max_events is not None else None
    workers = []
    for cluster in clusters:
        state = StateStore(landing_dir, cluster.name, clock=clock)
        for name in dict.fromkeys(resources):
            workers.append(
                _Worker(
                    cluster=cluster.name,
                    configuration=configurations[cluster.name],
                    spec=settings.RESOURCES[name],
                    landing_dir=landing_dir,
                    options=options,
                    state=state,
                    counters=counters,
                    stop=stop,
                    budget=budget,
                    once=once,
                    save_state=save_state,
                    clock=clock,
                )
            )
    log.info(
        "kubernetes collector: %d clusters x %d resources -> %s (%s)",
        len(clusters),
        len(set(resources)),
        landing_dir,
        "once" if once else "watch",
    )
    for worker in workers:
        worker.thread.start()
    started = time.monotonic()
    next_progress = started + options.progress_interval_seconds
    try:
        while not external.is_set():
            now = time.monotonic()
            if budget is not None and budget.exhausted:
                log.info("kubernetes collector: max_events=%s reached", max_events)
                break
            if run_seconds is not None and now - started >= run_seconds:
                break
            if not any(w.thread.is_alive() for w in workers):
                break
            if on_progress is not None and now >= next_progress:
                on_progress(counters.snapshot())
                next_progress = now + options.progress_interval_seconds
            external.wait(0.1)
    finally:
        stop.set()
        for worker in workers:
            worker.abort()
        for worker in workers:
            worker.thread.join(timeout=options.list_read_timeout_seconds + 5)
            if worker.thread.is_alive():
                log.warning("kubernetes collector: thread %s did not stop", worker.thread.name)
        if on_progress is not None:
            on_progress(counters.snapshot())
        log.info("kubernetes collector stopped: %s", counters.snapshot()["totals"])
    return counters
