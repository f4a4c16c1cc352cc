"""A loopback Kubernetes API server for tests (127.0.0.1 only, ephemeral port).

Real semantics where clients depend on them, so that the official Python client and
``kubectl`` both accept it:

* objects per collection, one global, monotonically increasing resourceVersion;
* paged lists (``limit``/``continue``): every page of a list is cut from one snapshot and
  carries the same ``metadata.resourceVersion``; continue tokens expire (410 ``Expired``);
* ``watch=true`` from a ``resourceVersion`` (unset/"0": synthetic ADDED for current objects),
  ``allowWatchBookmarks``, ``timeoutSeconds``, ``sendInitialEvents``; chunked transfer, one
  JSON event per line; a bounded history window (``history_limit`` versions, like etcd
  compaction): a too-old resourceVersion gets an in-stream ``ERROR`` 410; DELETED events carry
  the deletion's resourceVersion;
* core/v1 Events are also served as events.k8s.io/v1 Events (one store, two views);
* discovery (``/api``, ``/apis``, ``/api/v1``, ``/apis/<group>/<version>``, ``/version``);
  openapi answers 404.

Faults to inject while clients are connected: :meth:`FakeKubeAPI.inject_gone` (410 mid-stream,
optionally compacting history), :meth:`drop_watches` (connection cut inside an event),
:meth:`stall_watches` (dead connection: nothing sent), :meth:`expire_next_continue` /
:meth:`expire_continue_tokens`, :meth:`fail_next` (HTTP errors), ``latency`` (slow answers),
:meth:`set_served` (API group or CRD absent: 404).

Mutations (:meth:`create`, :meth:`update`, :meth:`delete`, :meth:`pod_step`,
:meth:`emit_event`) can be made while watches are open; every version produced is recorded in
:attr:`produced` so tests can compare what a client landed with what the server produced
(``record_produced=False`` for long benchmarks: it grows by one tuple per version).

A watch wake-up costs O(new versions) whatever the history size: the history is a list
searched by resourceVersion (bisect); a watch takes at most ``WATCH_BATCH`` versions per hold
of the lock, then serialises and sends them after releasing it, in one write. Versions are
stored once, not copied (a stored object is never changed in place: every mutation makes a new
object). :meth:`FakeKubeAPI.watch_lag` lets a producer stay within its slowest watch's window.
"""

from __future__ import annotations

import base64
import copy
import json
import socket
import sys
import threading
import time
import uuid
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

WATCH_BATCH = 512  # versions taken from the history per hold of the lock


def now_rfc3339(offset_seconds: float = 0) -> str:
    t = datetime.now(UTC) + timedelta(seconds=offset_seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def status_body(code: int, reason: str, message: str) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def core_event_to_events_v1(ev: dict) -> dict:
    """The events.k8s.io/v1 view of a core/v1 Event (same object, same uid and version)."""
    source = ev.get("source") or {}
    out = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": ev["metadata"],
        "eventTime": ev.get("eventTime"),
        "reportingController": ev.get("reportingComponent") or source.get("component"),
        "reportingInstance": ev.get("reportingInstance") or source.get("host"),
        "action": ev.get("action"),
        "reason": ev.get("reason"),
        "regarding": ev.get("involvedObject"),
        "note": ev.get("message"),
        "type": ev.get("type"),
        "deprecatedSource": source or None,
        "deprecatedFirstTimestamp": ev.get("firstTimestamp"),
        "deprecatedLastTimestamp": ev.get("lastTimestamp"),
        "deprecatedCount": ev.get("count"),
    }
    return {k: v for k, v in out.items() if v is not None}


@dataclass
class ResourceDef:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    store: str
    short_names: tuple[str, ...] = ()
    builtin: bool = True  # list items omit apiVersion/kind (custom resources keep them)
    view: Callable[[dict], dict] | None = None
    served: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def render(self, obj: dict) -> dict:
        return self.view(obj) if self.view else obj


def default_resources() -> list[ResourceDef]:
    return [
        ResourceDef("", "v1", "pods", "Pod", True, "pods", ("po",)),
        ResourceDef("", "v1", "events", "Event", True, "events", ("ev",)),
        ResourceDef("", "v1", "nodes", "Node", False, "nodes", ("no",)),
        ResourceDef(
            "events.k8s.io",
            "v1",
            "events",
            "Event",
            True,
            "events",
            ("ev",),
            view=core_event_to_events_v1,
        ),
        ResourceDef("batch", "v1", "jobs", "Job", True, "jobs"),
        ResourceDef(
            "keda.sh",
            "v1alpha1",
            "scaledobjects",
            "ScaledObject",
            True,
            "scaledobjects",
            ("so",),
            builtin=False,
        ),
        ResourceDef(
            "keda.sh",
            "v1alpha1",
            "scaledjobs",
            "ScaledJob",
            True,
            "scaledjobs",
            ("sj",),
            builtin=False,
        ),
    ]


@dataclass
class _HistoryEntry:
    rv: int
    store: str
    type: str
    obj: dict


class _History:
    """Versions in resourceVersion order, the oldest dropped beyond a limit. A list with a
    moving head (amortised O(1) append and trim), so that a watch finds its position by bisect
    instead of scanning everything it has already seen."""

    def __init__(self) -> None:
        self._entries: list[_HistoryEntry] = []
        self._head = 0

    def __len__(self) -> int:
        return len(self._entries) - self._head

    def __iter__(self):
        return iter(self._entries[self._head :])

    def append(self, entry: _HistoryEntry) -> None:
        self._entries.append(entry)

    def popleft(self) -> _HistoryEntry:
        entry = self._entries[self._head]
        self._head += 1
        if self._head >= 4096 and self._head * 2 >= len(self._entries):
            del self._entries[: self._head]
            self._head = 0
        return entry

    def clear(self) -> None:
        self._entries.clear()
        self._head = 0

    def after(self, rv: int, limit: int) -> tuple[list[_HistoryEntry], bool]:
        """Up to ``limit`` entries with a resourceVersion > ``rv``; True if that is all."""
        start = bisect_right(self._entries, rv, lo=self._head, key=lambda e: e.rv)
        return self._entries[start : start + limit], start + limit >= len(self._entries)


@dataclass(eq=False)
class _Watch:
    store: str
    namespace: str | None
    gone: bool = False
    drop: bool = False
    pos: int = 0  # every version up to this one has been sent (or is not for this watch)


@dataclass
class _Snapshot:
    key: tuple
    rv: int
    items: list
    created: float = field(default_factory=time.monotonic)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.api._handle(self)

    def _refuse(self) -> None:
        self.server.api._send_json(
            self, 405, status_body(405, "MethodNotAllowed", "read-only fake")
        )

    do_POST = do_PUT = do_PATCH = do_DELETE = _refuse


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, api: FakeKubeAPI) -> None:
        self.api = api
        super().__init__(("127.0.0.1", 0), _Handler)

    def get_request(self):  # track sockets so stop() can cut idle keep-alive connections
        sock, addr = super().get_request()
        with self.api._lock:
            self.api._sockets.add(sock)
        return sock, addr

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], OSError):  # the client went away (timeouts, kills)
            return
        super().handle_error(request, client_address)

    def shutdown_request(self, request) -> None:
        with self.api._lock:
            self.api._sockets.discard(request)
        super().shutdown_request(request)


class FakeKubeAPI:
    """``with FakeKubeAPI() as api: ... api.url ...``"""

    def __init__(
        self,
        *,
        history_limit: int = 10_000,
        bookmark_interval: float = 0.5,
        continue_ttl: float = 300.0,
        default_watch_timeout: int = 1800,
        start_rv: int = 1000,
        record_produced: bool = True,
    ) -> None:
        self.history_limit, self.bookmark_interval = history_limit, bookmark_interval
        self.record_produced = record_produced
        self.continue_ttl, self.default_watch_timeout = continue_ttl, default_watch_timeout
        self.latency = 0.0
        self.resources = default_resources()
        self.objects: dict[str, dict[tuple[str, str], dict]] = {r.store: {} for r in self.resources}
        self.produced: dict[str, list[tuple[str, str, str]]] = {s: [] for s in self.objects}
        self.requests: list[tuple[str, dict[str, str], float]] = []  # (path, query, monotonic)
        self._rv = start_rv
        self._floor = start_rv  # a watch can resume from any rv >= floor
        self._history = _History()
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._watches: set[_Watch] = set()
        self._snapshots: OrderedDict[str, _Snapshot] = OrderedDict()
        self._expire_next_continue = 0
        self._failures: list[list] = []  # [remaining, status, path_prefix, retry_after]
        self._stalled: set[str | None] = set()
        self._sockets: set[socket.socket] = set()
        self._closing = False
        self._server = _Server(self)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            args=(0.05,),
            daemon=True,
            name=f"fake-k8s-{self.port}",
        )

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            sockets = list(self._sockets)
        if self._thread.is_alive():
            self._server.shutdown()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def write_kubeconfig(
        self, path: str | Path, context: str = "fake", *, extra: dict | None = None
    ) -> Path:
        """A kubeconfig with ``context`` (plus ``extra`` = {context: url}) pointing here."""
        return write_kubeconfig(path, {context: self.url, **(extra or {})}, current=context)

    # ------------------------------------------------------------------ mutations
    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    def _record(self, store: str, etype: str, obj: dict) -> None:
        """Append to history (caller holds the lock) and wake watches. ``obj`` is stored as
        it is: no stored object is changed in place (every mutation makes a new object)."""
        self._history.append(_HistoryEntry(self._rv, store, etype, obj))
        while len(self._history) > self.history_limit:
            self._floor = self._history.popleft().rv
        if self.record_produced:
            meta = obj["metadata"]
            self.produced[store].append((etype, meta["uid"], meta["resourceVersion"]))
        self._cond.notify_all()

    def _def_for_store(self, store: str) -> ResourceDef:
        return next(r for r in self.resources if r.store == store and r.view is None)

    def create(self, store: str, obj: dict) -> dict:
        rdef = self._def_for_store(store)
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if rdef.namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        with self._cond:
            key = (meta.get("namespace", ""), meta["name"])
            if key in self.objects[store]:
                raise ValueError(f"{store} {key} already exists")
            self._rv += 1
            obj = {"apiVersion": rdef.api_version, "kind": rdef.kind, **obj}
            meta.update(
                uid=str(uuid.uuid4()),
                resourceVersion=str(self._rv),
                creationTimestamp=now_rfc3339(),
            )
            meta.setdefault("generation", 1)
            self.objects[store][key] = obj
            self._record(store, "ADDED", obj)
            return copy.deepcopy(obj)

    def get(self, store: str, name: str, namespace: str | None = "default") -> dict:
        rdef = self._def_for_store(store)
        with self._lock:
            return copy.deepcopy(self.objects[store][(namespace if rdef.namespaced else "", name)])

    def update(
        self,
        store: str,
        name: str,
        namespace: str | None = "default",
        mutate: Callable[[dict], None] | None = None,
    ) -> dict:
        rdef = self._def_for_store(store)
        key = (namespace if rdef.namespaced else "", name)
        with self._cond:
            obj = copy.deepcopy(self.objects[store][key])
            if mutate:
                mutate(obj)
            self._rv += 1
            obj["metadata"]["resourceVersion"] = str(self._rv)
            self.objects[store][key] = obj
            self._record(store, "MODIFIED", obj)
            return copy.deepcopy(obj)

    def delete(self, store: str, name: str, namespace: str | None = "default") -> dict:
        rdef = self._def_for_store(store)
        key = (namespace if rdef.namespaced else "", name)
        with self._cond:
            obj = self.objects[store].pop(key)
            self._rv += 1
            # the deletion's version, on a new object (the stored one is in the history)
            obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self._rv)}}
            self._record(store, "DELETED", obj)
            return copy.deepcopy(obj)

    def replay(self, store: str, etype: str, obj: dict, *, owned: bool = False) -> dict:
        """Apply a recorded version as it was (uid, timestamps, status kept); only the
        resourceVersion is this server's. Used to serve simulator or captured histories.
        ``owned=True``: the caller hands ``obj`` over and never touches it again (no copies;
        ``obj`` itself is returned), for producers of millions of versions."""
        rdef = self._def_for_store(store)
        if not owned:
            obj = copy.deepcopy(obj)
        meta = obj["metadata"]
        key = (meta.get("namespace", "default") if rdef.namespaced else "", meta["name"])
        with self._cond:
            self._rv += 1
            meta["resourceVersion"] = str(self._rv)
            if etype == "DELETED":
                self.objects[store].pop(key, None)
            else:
                self.objects[store][key] = obj
            self._record(store, etype, obj)
            return obj if owned else copy.deepcopy(obj)

    def watch_lag(self, store: str | None = None) -> int | None:
        """Versions produced but not yet sent by the slowest open watch (of ``store``); None
        if no such watch is open. A producer that keeps this under ``history_limit`` never
        pushes a watch out of the window (410)."""
        with self._lock:
            lags = [self._rv - w.pos for w in self._watches if store is None or w.store == store]
            return max(lags) if lags else None

    def versions(self, store: str) -> set[tuple[str, str]]:
        """Every (uid, resourceVersion) produced in ``store``."""
        with self._lock:
            return {(uid, rv) for _, uid, rv in self.produced[store]}

    # ------------------------------------------------------------------ lifecycle helpers
    def pod_step(
        self,
        name: str,
        step: str,
        namespace: str = "default",
        *,
        node: str = "gpu-node-1",
        exit_code: int = 0,
    ) -> dict:
        """Advance a pod: scheduled -> running -> ready -> terminated -> deleting -> deleted."""
        if step == "deleted":
            return self.delete("pods", name, namespace)
        ts = now_rfc3339()

        def cond(obj: dict, ctype: str, status: str, reason: str | None = None) -> None:
            conds = [c for c in obj["status"].setdefault("conditions", []) if c["type"] != ctype]
            entry = {
                "type": ctype,
                "status": status,
                "lastProbeTime": None,
                "lastTransitionTime": ts,
            }
            if reason:
                entry["reason"] = reason
            obj["status"]["conditions"] = [*conds, entry]

        def mutate(obj: dict) -> None:
            status, spec = obj.setdefault("status", {}), obj["spec"]
            containers = spec["containers"]
            if step == "scheduled":
                spec["nodeName"] = node
                cond(obj, "PodScheduled", "True")
            elif step == "running":
                status.update(phase="Running", startTime=ts, hostIP="10.0.0.10", podIP="10.1.0.5")
                cond(obj, "Initialized", "True")
                cond(obj, "PodReadyToStartContainers", "True")
                status["containerStatuses"] = [
                    {
                        "name": c["name"],
                        "image": c["image"],
                        "imageID": "",
                        "ready": False,
                        "started": False,
                        "restartCount": 0,
                        "containerID": f"containerd://{uuid.uuid4().hex}",
                        "state": {"running": {"startedAt": ts}},
                        "lastState": {},
                    }
                    for c in containers
                ]
            elif step == "ready":
                for cs in status["containerStatuses"]:
                    cs.update(ready=True, started=True)
                cond(obj, "ContainersReady", "True")
                cond(obj, "Ready", "True")
            elif step == "terminated":
                status["phase"] = "Succeeded" if exit_code == 0 else "Failed"
                for cs in status["containerStatuses"]:
                    started = cs["state"].get("running", {}).get("startedAt", ts)
                    cs.update(
                        ready=False,
                        started=False,
                        state={
                            "terminated": {
                                "exitCode": exit_code,
                                "reason": "Completed" if exit_code == 0 else "Error",
                                "startedAt": started,
                                "finishedAt": ts,
                                "containerID": cs["containerID"],
                            }
                        },
                    )
                cond(obj, "ContainersReady", "False", "PodCompleted")
                cond(obj, "Ready", "False", "PodCompleted")
            elif step == "deleting":
                obj["metadata"].update(
                    deletionTimestamp=now_rfc3339(30), deletionGracePeriodSeconds=30
                )
            else:
                raise ValueError(f"unknown pod step {step!r}")

        return self.update("pods", name, namespace, mutate)

    def emit_event(
        self,
        regarding: dict,
        reason: str,
        message: str,
        *,
        type: str = "Normal",
        component: str = "kubelet",
    ) -> dict:
        """A core/v1 Event about ``regarding`` (also visible through events.k8s.io/v1)."""
        meta = regarding["metadata"]
        ts = now_rfc3339()
        return self.create(
            "events",
            {
                "metadata": {
                    "name": f"{meta['name']}.{uuid.uuid4().hex[:16]}",
                    "namespace": meta.get("namespace", "default"),
                },
                "involvedObject": {
                    "kind": regarding.get("kind"),
                    "namespace": meta.get("namespace"),
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "apiVersion": regarding.get("apiVersion"),
                    "resourceVersion": meta["resourceVersion"],
                },
                "reason": reason,
                "message": message,
                "type": type,
                "source": {"component": component},
                "firstTimestamp": ts,
                "lastTimestamp": ts,
                "count": 1,
                "eventTime": None,
                "reportingComponent": component,
                "reportingInstance": "",
            },
        )

    # ------------------------------------------------------------------ faults
    def inject_gone(self, store: str | None = None, *, compact: bool = True) -> None:
        """Open watches (of ``store``) get an in-stream ERROR 410 and end; with ``compact``
        the history is dropped too, so resuming from any earlier version is refused."""
        with self._cond:
            if compact:
                self.compact()
            for w in self._watches:
                if store is None or w.store == store:
                    w.gone = True
            self._cond.notify_all()

    def compact(self) -> None:
        with self._cond:
            self._history.clear()
            self._floor = self._rv
            self._cond.notify_all()

    def drop_watches(self, store: str | None = None) -> None:
        """Cut open watch connections in the middle of an event line."""
        with self._cond:
            for w in self._watches:
                if store is None or w.store == store:
                    w.drop = True
            self._cond.notify_all()

    def stall_watches(self, store: str | None = None) -> None:
        """Watches (existing and new) of ``store`` send nothing until :meth:`unstall`."""
        with self._cond:
            self._stalled.add(store)

    def unstall(self) -> None:
        with self._cond:
            self._stalled.clear()
            self._cond.notify_all()

    def open_watches(self, store: str | None = None) -> int:
        with self._lock:
            return sum(1 for w in self._watches if store is None or w.store == store)

    def expire_continue_tokens(self) -> None:
        with self._lock:
            self._snapshots.clear()

    def expire_next_continue(self, count: int = 1) -> None:
        with self._lock:
            self._expire_next_continue += count

    def fail_next(
        self, count: int, status: int = 500, path_prefix: str = "", retry_after: int | None = None
    ) -> None:
        with self._lock:
            self._failures.append([count, status, path_prefix, retry_after])

    def set_served(self, group: str, served: bool, plural: str | None = None) -> None:
        """Serve or hide an API group (or one plural of it): hidden = 404 + not discovered."""
        with self._lock:
            for r in self.resources:
                if r.group == group and (plural is None or r.plural == plural):
                    r.served = served

    # ------------------------------------------------------------------ HTTP
    def _send_json(
        self, h: BaseHTTPRequestHandler, code: int, body: Any, headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)

    def _not_found(self, h: BaseHTTPRequestHandler) -> None:
        self._send_json(
            h, 404, status_body(404, "NotFound", "the server could not find the requested resource")
        )

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        url = urlsplit(h.path)
        path = url.path.rstrip("/") or "/"
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        with self._lock:
            self.requests.append((path, query, time.monotonic()))
            failure = next((f for f in self._failures if f[0] > 0 and path.startswith(f[2])), None)
            if failure:
                failure[0] -= 1
        if self.latency:
            time.sleep(self.latency)
        if failure:
            extra = {"Retry-After": str(failure[3])} if failure[3] is not None else None
            self._send_json(
                h, failure[1], status_body(failure[1], "InternalError", "injected failure"), extra
            )
            return
        if path == "/version":
            return self._send_json(
                h,
                200,
                {
                    "major": "1",
                    "minor": "32",
                    "gitVersion": "v1.32.0",
                    "gitCommit": "fake",
                    "gitTreeState": "clean",
                    "buildDate": "2026-01-01T00:00:00Z",
                    "goVersion": "go1.23",
                    "compiler": "gc",
                    "platform": "linux/amd64",
                },
            )
        if path == "/api":
            return self._send_json(
                h,
                200,
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [
                        {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.port}"}
                    ],
                },
            )
        if path == "/apis":
            return self._send_json(h, 200, self._group_list())
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return self._not_found(h)
        with self._lock:
            defs = [
                r for r in self.resources if r.group == group and r.version == version and r.served
            ]
        if not defs:
            return self._not_found(h)
        if not rest:
            return self._send_json(h, 200, self._resource_list(group, version, defs))
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        rdef = next((r for r in defs if r.plural == rest[0]), None)
        if rdef is None or len(rest) > 2 or (namespace and not rdef.namespaced):
            return self._not_found(h)
        if len(rest) == 2:
            with self._lock:
                obj = self.objects[rdef.store].get((namespace or "", rest[1]))
            if obj is None:
                return self._send_json(
                    h, 404, status_body(404, "NotFound", f'{rdef.plural} "{rest[1]}" not found')
                )
            return self._send_json(h, 200, rdef.render(copy.deepcopy(obj)))
        if query.get("watch") in ("true", "1"):
            return self._watch(h, rdef, namespace, query)
        return self._list(h, rdef, namespace, query)

    def _group_list(self) -> dict:
        groups: dict[str, list[str]] = {}
        with self._lock:
            for r in self.resources:
                if r.group and r.served and r.version not in groups.setdefault(r.group, []):
                    groups[r.group].append(r.version)
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                {
                    "name": g,
                    "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                    "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]},
                }
                for g, vs in groups.items()
                if vs
            ],
        }

    def _resource_list(self, group: str, version: str, defs: list[ResourceDef]) -> dict:
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": [
                {
                    "name": r.plural,
                    "singularName": r.kind.lower(),
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": ["get", "list", "watch"],
                    **({"shortNames": list(r.short_names)} if r.short_names else {}),
                }
                for r in defs
            ],
        }

    def _items(self, rdef: ResourceDef, namespace: str | None) -> list[dict]:
        """Current objects, rendered, sorted by key (caller holds the lock)."""
        return [
            rdef.render(copy.deepcopy(obj))
            for key, obj in sorted(self.objects[rdef.store].items())
            if namespace is None or key[0] == namespace
        ]

    def _list(
        self,
        h: BaseHTTPRequestHandler,
        rdef: ResourceDef,
        namespace: str | None,
        query: dict[str, str],
    ) -> None:
        limit = int(query.get("limit") or 0)
        token = query.get("continue")
        key = (rdef.group, rdef.plural, namespace)
        with self._lock:
            if token:
                try:
                    decoded = json.loads(base64.urlsafe_b64decode(token.encode()))
                    snap = self._snapshots.get(decoded["id"])
                except (ValueError, KeyError):
                    return self._send_json(
                        h, 400, status_body(400, "BadRequest", "invalid continue token")
                    )
                expired = (
                    snap is None
                    or snap.key != key
                    or self._expire_next_continue > 0
                    or time.monotonic() - snap.created > self.continue_ttl
                )
                if expired:
                    self._expire_next_continue = max(0, self._expire_next_continue - 1)
                    self._snapshots.pop(decoded["id"], None)
                    return self._send_json(
                        h,
                        410,
                        status_body(
                            410,
                            "Expired",
                            "The provided continue parameter is too old to display a "
                            "consistent list result. You can start a new list without the continue parameter.",
                        ),
                    )
                offset, items, rv, snap_id = decoded["offset"], snap.items, snap.rv, decoded["id"]
            else:
                offset, items, rv, snap_id = (
                    0,
                    self._items(rdef, namespace),
                    self._rv,
                    uuid.uuid4().hex,
                )
            end = offset + limit if limit else len(items)
            meta: dict[str, Any] = {"resourceVersion": str(rv)}
            if end < len(items):
                self._snapshots[snap_id] = _Snapshot(key, rv, items)
                while len(self._snapshots) > 64:
                    self._snapshots.popitem(last=False)
                meta["continue"] = base64.urlsafe_b64encode(
                    json.dumps({"id": snap_id, "offset": end}).encode()
                ).decode()
                meta["remainingItemCount"] = len(items) - end
            else:
                self._snapshots.pop(snap_id, None)
            page = items[offset:end]
        if rdef.builtin:
            page = [
                {k: v for k, v in item.items() if k not in ("apiVersion", "kind")} for item in page
            ]
        self._send_json(
            h,
            200,
            {
                "kind": f"{rdef.kind}List",
                "apiVersion": rdef.api_version,
                "metadata": meta,
                "items": page,
            },
        )

    # ------------------------------------------------------------------ watch
    def _watch(
        self,
        h: BaseHTTPRequestHandler,
        rdef: ResourceDef,
        namespace: str | None,
        query: dict[str, str],
    ) -> None:
        rv_param = query.get("resourceVersion") or ""
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        timeout = int(query.get("timeoutSeconds") or self.default_watch_timeout)
        initial_events = query.get("sendInitialEvents") == "true"
        with self._lock:
            current = self._rv
        if rv_param.isdigit() and int(rv_param) > current:  # the apiserver gives up after ~3 s
            body = status_body(
                504, "Timeout", f"Too large resource version: {rv_param}, current: {current}"
            )
            body["details"] = {
                "causes": [
                    {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
                ],
                "retryAfterSeconds": 1,
            }
            return self._send_json(h, 504, body)
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        w = _Watch(rdef.store, namespace)

        def frame(event: dict) -> bytes:
            data = json.dumps(event, separators=(",", ":")).encode() + b"\n"
            return b"%x\r\n%s\r\n" % (len(data), data)

        def send(event: dict) -> None:
            h.wfile.write(frame(event))

        def end() -> None:
            h.wfile.write(b"0\r\n\r\n")

        def bookmark(rv: int, annotations: dict | None = None) -> dict:
            meta: dict[str, Any] = {"resourceVersion": str(rv), "creationTimestamp": None}
            if annotations:
                meta["annotations"] = annotations
            return {
                "type": "BOOKMARK",
                "object": {"kind": rdef.kind, "apiVersion": rdef.api_version, "metadata": meta},
            }

        def too_old(rv: int) -> dict:
            return {
                "type": "ERROR",
                "object": status_body(
                    410, "Expired", f"too old resource version: {rv} ({self._floor})"
                ),
            }

        try:
            with self._lock:
                initial: list[dict] = []
                if rv_param in ("", "0") or initial_events:
                    initial = [{"type": "ADDED", "object": o} for o in self._items(rdef, namespace)]
                    pos = self._rv
                else:
                    pos = int(rv_param)
                    if pos < self._floor:
                        send(too_old(pos))
                        end()
                        return
                w.pos = pos
                self._watches.add(w)
            for event in initial:
                send(event)
            if initial_events and bookmarks:
                send(bookmark(pos, {"k8s.io/initial-events-end": "true"}))
            deadline = time.monotonic() + timeout
            next_bookmark = time.monotonic() + self.bookmark_interval
            scanned = pos  # versions up to here were sent or are not for this watch
            while True:
                pending: list[_HistoryEntry] = []
                with self._cond:
                    while True:
                        stalled = rdef.store in self._stalled or None in self._stalled
                        now = time.monotonic()
                        if self._closing or w.gone or w.drop or pos < self._floor:
                            break
                        if not stalled:
                            scanned = max(scanned, pos)
                            while not pending:  # skip other stores/namespaces, a batch at a time
                                chunk, done = self._history.after(scanned, WATCH_BATCH)
                                if not chunk:
                                    break
                                scanned = chunk[-1].rv
                                pending = [
                                    e
                                    for e in chunk
                                    if e.store == rdef.store
                                    and (
                                        namespace is None
                                        or e.obj["metadata"].get("namespace") == namespace
                                    )
                                ]
                                if done:
                                    break
                            if not pending:
                                w.pos = max(w.pos, scanned)
                        if pending or (
                            not stalled
                            and (now >= deadline or (bookmarks and now >= next_bookmark))
                        ):
                            break
                        wake = (
                            1.0
                            if stalled
                            else max(
                                0.0, min(deadline, next_bookmark if bookmarks else deadline) - now
                            )
                        )
                        self._cond.wait(wake)
                    # a bookmark may skip to `current` only once every version before it was seen
                    current = scanned if self._history.after(scanned, 1)[0] else self._rv
                    floor, closing = self._floor, self._closing
                if closing:
                    return
                if w.drop:
                    data = b'{"type":"MODIFIED","object":{"kind":"' + rdef.kind.encode()
                    h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    h.close_connection = True
                    h.connection.shutdown(socket.SHUT_RDWR)
                    return
                if w.gone:
                    send(
                        {
                            "type": "ERROR",
                            "object": status_body(410, "Gone", "injected: watch history compacted"),
                        }
                    )
                    end()
                    return
                if pos < floor:
                    send(too_old(pos))
                    end()
                    return
                if pending:  # stored versions are never changed in place: no copies
                    h.wfile.write(
                        b"".join(
                            frame({"type": e.type, "object": rdef.render(e.obj)}) for e in pending
                        )
                    )
                    pos = pending[-1].rv
                now = time.monotonic()
                if now >= deadline:
                    end()
                    return
                if bookmarks and now >= next_bookmark:
                    pos = max(pos, current)
                    send(bookmark(pos))
                    next_bookmark = now + self.bookmark_interval
                w.pos = max(pos, scanned)  # pending (all <= scanned) was sent
        except OSError:  # client went away
            h.close_connection = True
        finally:
            with self._lock:
                self._watches.discard(w)


def write_kubeconfig(
    path: str | Path, contexts: dict[str, str], current: str | None = None
) -> Path:
    """A kubeconfig (JSON is YAML) with one cluster/user/context per ``{context: url}``."""
    path = Path(path)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": f"{c}-cluster", "cluster": {"server": url}} for c, url in contexts.items()
        ],
        "users": [{"name": f"{c}-user", "user": {"token": "fake-token"}} for c in contexts],
        "contexts": [
            {"name": c, "context": {"cluster": f"{c}-cluster", "user": f"{c}-user"}}
            for c in contexts
        ],
        "current-context": current or next(iter(contexts)),
        "preferences": {},
    }
    path.write_text(json.dumps(config, indent=2))
    return path


def make_pod(
    name: str,
    namespace: str = "default",
    *,
    gpus: int = 1,
    image: str = "vllm/vllm:0.9",
    labels: dict | None = None,
    owner: dict | None = None,
) -> dict:
    """A Pending GPU pod as a user would create it."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": labels or {"app": "llm"},
    }
    if owner:
        meta["ownerReferences"] = [owner]
    gpu = {"nvidia.com/gpu": str(gpus)}
    return {
        "metadata": meta,
        "spec": {
            "restartPolicy": "Never",
            "schedulerName": "default-scheduler",
            "containers": [
                {
                    "name": "main",
                    "image": image,
                    "resources": {"limits": dict(gpu), "requests": dict(gpu)},
                    "startupProbe": {
                        "httpGet": {"path": "/health", "port": 8000},
                        "periodSeconds": 10,
                        "failureThreshold": 30,
                    },
                }
            ],
        },
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }
