"""Helpers for the Kubernetes connector tests: a background collector, waiting, and readers of
the landing area (which ignore a trailing partial line, like the daily reader)."""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

from connectors.kubernetes import ClusterConfig, CollectorOptions, Counters, collect
from tests.fakes.k8s_api import FakeKubeAPI

# landing resource name -> store of the fake that produces its versions
STORE = {
    "pods": "pods",
    "events": "events",
    "events_k8s_io": "events",
    "nodes": "nodes",
    "jobs": "jobs",
    "scaledobjects": "scaledobjects",
    "scaledjobs": "scaledjobs",
}

FAST = CollectorOptions(
    page_size=2,
    watch_timeout_seconds=3,
    watch_read_margin_seconds=1.0,
    connect_timeout_seconds=2.0,
    list_read_timeout_seconds=2.0,
    backoff_base_seconds=0.05,
    backoff_cap_seconds=0.3,
    state_interval_seconds=0.05,
    absent_recheck_seconds=0.5,
    progress_interval_seconds=0.2,
)


class DiskFullOS:
    """Stands in for ``os`` in ``connectors.kubernetes.landing``: once ``armed``, the disk fills
    up inside the next row, as write(2) does it: a short write of half the row, then ENOSPC
    for the rest; space is back right after. ``truncate_fails`` makes cutting the fragment
    off fail too."""

    def __init__(self, truncate_fails: bool = False) -> None:
        self.armed, self.truncate_fails, self._full = False, truncate_fails, False

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        if self._full:
            self._full = False
            raise OSError(errno.ENOSPC, "No space left on device")
        if not self.armed:
            return os.write(fd, data)
        self.armed, self._full = False, True
        return os.write(fd, bytes(data[: len(data) // 2]))

    def ftruncate(self, fd: int, size: int) -> None:
        if self.truncate_fails:
            raise OSError(errno.EIO, "Input/output error")
        os.ftruncate(fd, size)


def daily_reader_keys(landing: Path) -> tuple[set[tuple[str, str]], list[str]]:
    """(uid, resourceVersion) of the rows the daily reader loads from the landing area, and
    the reasons of the lines it quarantines."""
    from recon.ingest.reader import read_file

    found, bad = set(), []
    for path in sorted((landing / "k8s").rglob("*.jsonl")):
        result = read_file(path, str(path))
        found |= {(r["uid"], r["resource_version"]) for r in result.rows["k8s_objects"]}
        bad += [b["reason"] for b in result.bad]
    return found, bad


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def read_rows(landing: Path, resource: str | None = None, cluster: str | None = None) -> list[dict]:
    """Rows of the landing area, each with ``_resource``/``_path`` added (complete lines only)."""
    rows = []
    pattern = f"cluster={cluster or '*'}/hour=*/*.jsonl"
    for path in sorted((landing / "k8s").glob(pattern)):
        name = path.name.rsplit("-", 2)[0]
        if resource is not None and name != resource:
            continue
        data = path.read_bytes()
        for line in data.split(b"\n")[:-1]:  # the part after the last newline is partial
            row = json.loads(line)
            row["_resource"], row["_path"] = name, path
            rows.append(row)
    return rows


def keys(rows: list[dict]) -> list[tuple[str, str]]:
    return [
        (r["object"]["metadata"]["uid"], r["object"]["metadata"]["resourceVersion"]) for r in rows
    ]


def assert_exactly_once(
    landing: Path, fake: FakeKubeAPI, resource: str, cluster: str | None = None
) -> list[dict]:
    rows = read_rows(landing, resource, cluster)
    got = keys(rows)
    assert len(got) == len(set(got)), f"{resource}: duplicated versions {len(got) - len(set(got))}"
    assert set(got) == fake.versions(STORE[resource]), f"{resource}: landed != produced"
    return rows


def landed_matches(
    landing: Path, fake: FakeKubeAPI, resource: str, cluster: str | None = None
) -> bool:
    return set(keys(read_rows(landing, resource, cluster))) == fake.versions(STORE[resource])


class RunningCollector:
    """``collect(...)`` in a background thread; ``stop()`` returns its Counters."""

    def __init__(
        self,
        landing: Path,
        clusters: list[ClusterConfig],
        resources: list[str],
        options: CollectorOptions = FAST,
        **kwargs: Any,
    ) -> None:
        self.stop_event = threading.Event()
        self.counters = Counters()
        self.error: BaseException | None = None
        self._args = (landing, clusters, resources)
        self._kwargs = dict(
            kwargs, options=options, counters=self.counters, stop_event=self.stop_event
        )
        self.thread = threading.Thread(target=self._run, daemon=True, name="test-collector")

    def _run(self) -> None:
        try:
            collect(*self._args, **self._kwargs)
        except BaseException as exc:  # noqa: BLE001 - surfaced by stop()
            self.error = exc

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> Counters:
        self.stop_event.set()
        self.thread.join(timeout=15)
        assert not self.thread.is_alive(), "collector did not stop"
        if self.error:
            raise self.error
        return self.counters


def wait_watching(
    fake: FakeKubeAPI, stores: dict[str, int], collector: RunningCollector | None = None
) -> None:
    """Wait until ``stores`` ({store: n}) each have n open watches (the collector is synced)."""

    def ready() -> bool:
        if collector is not None and collector.error:
            raise collector.error
        return all(fake.open_watches(s) >= n for s, n in stores.items())

    wait_for(ready, what=f"watches on {stores}")
