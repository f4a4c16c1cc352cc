"""Paging and watching with the official ``kubernetes`` client.

:class:`ListWatch` turns one collection of one cluster into an endless iterator of
:class:`Item` (an object version to land) and :class:`Checkpoint` (a resourceVersion up to
which everything has been delivered) values:

* paged list (``limit`` / ``_continue``), bodies read with ``_preload_content=False`` and
  parsed with orjson; an expired continue token (410) relists from scratch;
* watch from the list's resourceVersion with ``allow_watch_bookmarks=True`` and a
  ``timeout_seconds``; a 410 (in-stream ERROR or HTTP) relists; the stream is read line by
  line by this module rather than through ``kubernetes.watch.Watch`` (which deserialises every
  event into typed models, and with ``deserialize=False`` fails on ERROR events);
* every call carries ``_request_timeout=(connect, read)`` so a dead connection cannot hang;
* network errors reconnect with capped, jittered exponential backoff, and so does a watch the
  server ends at once with no events (as client-go's reflector does), rather than spinning.

Deduplication and landing are the consumer's job (see ``runner.py``).
"""

from __future__ import annotations

import http.client
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import urllib3
from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException

from . import settings
from .clusters import CollectorOptions

log = logging.getLogger(__name__)

# Errors after which the same request is simply retried later (with backoff).
NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    urllib3.exceptions.HTTPError,
    http.client.HTTPException,
    OSError,
    orjson.JSONDecodeError,  # a garbled body
)


class TruncatedStream(urllib3.exceptions.ProtocolError):
    """The watch stream ended inside an event, or a line grew absurdly long."""


@dataclass(frozen=True, slots=True)
class Item:
    """An object version to land. ``resource_version`` is set only for watch items: after
    the consumer has written it, everything up to that version has been delivered."""

    type: str
    obj: dict
    resource_version: str | None = None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    resource_version: str
    reason: str  # "list" | "bookmark" | "watch-end"


class Gone(Exception):
    """410: the resourceVersion or the continue token is too old; relist. Also raised for
    "Too large resource version" (504: the server is behind the saved version, e.g. after an
    etcd restore or a rebuilt cluster of the same name)."""


def _too_large(code: object, text: str | None) -> bool:
    return code == 504 and "too large resource version" in (text or "").lower()


class StreamError(Exception):
    """A non-410 ERROR event inside a watch stream."""


class ShortWatch(Exception):
    """The server ended a watch at once without sending anything (an apiserver shutting
    down, a proxy, a broken aggregated API). Like client-go's reflector ("very short watch"),
    this is an error that backs off: re-watching at once would spin."""


def loads(data: bytes) -> Any:
    return orjson.loads(data)


def retry_after(exc: ApiException) -> float:
    """Seconds from a ``Retry-After`` header (429/503 from API priority and fairness)."""
    try:
        return max(0.0, float((exc.headers or {}).get("Retry-After", 0)))
    except (TypeError, ValueError):
        return 0.0


class Backoff:
    """Capped exponential backoff with "equal jitter": delay in [d/2, d], d = min(cap, base*2^n)."""

    def __init__(self, base: float, cap: float, rng: random.Random | None = None) -> None:
        self.base, self.cap, self.attempt = base, cap, 0
        self._rng = rng or random.Random()

    def next_delay(self) -> float:
        ceiling = min(self.cap, self.base * (2 ** min(self.attempt, 62)))
        self.attempt += 1
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    def reset(self) -> None:
        self.attempt = 0


def normalize(obj: dict, spec: settings.ResourceSpec) -> dict:
    """List items come without apiVersion/kind; set them (first, as the API would)."""
    if "apiVersion" in obj and "kind" in obj:
        return obj
    return {"apiVersion": spec.api_version, "kind": spec.kind, **obj}


def iter_lines(resp: Any) -> Iterator[bytes]:
    """Complete, non-empty lines of a watch response body."""
    if getattr(resp, "chunked", False):
        chunks: Iterator[bytes] = resp.stream(amt=None, decode_content=False)
    else:
        chunks = iter(lambda: resp.read1(64 * 1024), b"")
    pending = b""
    for chunk in chunks:
        if b"\n" not in chunk:
            pending += chunk
            if len(pending) > settings.MAX_WATCH_LINE_BYTES:
                raise TruncatedStream("watch line exceeds MAX_WATCH_LINE_BYTES")
            continue
        parts = (pending + chunk).split(b"\n")
        pending = parts.pop()
        for part in parts:
            if part.strip():
                yield part
    if pending.strip():
        raise TruncatedStream("watch stream ended inside an event")


class ListWatch:
    """List then watch one collection, forever (``run``) or list once (``list_once``)."""

    def __init__(
        self,
        api_client: k8s_client.ApiClient,
        spec: settings.ResourceSpec,
        options: CollectorOptions,
        stop: threading.Event,
        *,
        resource_version: str | None = None,
        stat: Callable[[str], None] = lambda key: None,
        label: str = "",
        rng: random.Random | None = None,
    ) -> None:
        self.spec, self.options, self.stop = spec, options, stop
        self.resource_version = resource_version  # None = list first
        self._stat, self._label = stat, label or spec.name
        self._rng = rng or random.Random()
        self._backoff = Backoff(
            options.backoff_base_seconds, options.backoff_cap_seconds, self._rng
        )
        self._api = getattr(k8s_client, spec.api_class)(api_client)
        self._method = getattr(self._api, spec.method)
        self._resp: Any = None

    # ------------------------------------------------------------------ calls
    def _call(self, read_timeout: float, **kwargs: Any) -> Any:
        """One request; 410 (and 504 "too large resource version") become :class:`Gone`."""
        try:
            resp = self._method(
                *self.spec.call_args,
                _preload_content=False,
                _request_timeout=(self.options.connect_timeout_seconds, read_timeout),
                **kwargs,
            )
        except ApiException as exc:
            if exc.status == 410 or _too_large(exc.status, exc.body):
                raise Gone(f"{exc.status} {exc.reason}") from exc
            raise
        self._resp = resp
        return resp

    def abort(self) -> None:
        """Unblock a read in progress (called from another thread on shutdown)."""
        resp = self._resp
        if resp is not None:
            try:
                resp.shutdown()
            except (ValueError, RuntimeError, OSError) as exc:  # already released or closed
                log.debug("%s: abort: %s", self._label, exc)

    def _release(self, resp: Any, reusable: bool = False) -> None:
        """Return a fully read connection to the pool; close anything else first (a
        half-read connection must never be reused)."""
        self._resp = None
        if not reusable:
            resp.close()
        resp.release_conn()

    def _get_page(self, token: str | None) -> dict:
        kwargs: dict[str, Any] = {"limit": self.options.page_size}
        if token:
            kwargs["_continue"] = token
        resp = self._call(self.options.list_read_timeout_seconds, **kwargs)
        read = False
        try:
            data = resp.data
            read = True
        finally:
            self._release(resp, reusable=read)
        return loads(data)

    # ------------------------------------------------------------------ list
    def _list(self) -> Iterator[Item | Checkpoint]:
        """One consistent paged list; items are yielded page by page (flat memory)."""
        self._stat("lists")
        token: str | None = None
        list_rv: str | None = None
        pages = 0
        while True:
            try:
                body = self._get_page(token)
            except Gone:
                if token:
                    log.info("%s: continue token expired after %d pages", self._label, pages)
                raise
            pages += 1
            meta = body.get("metadata") or {}
            list_rv = list_rv or meta.get("resourceVersion")
            for obj in body.get("items") or ():
                yield Item("ADDED", normalize(obj, self.spec))
            token = meta.get("continue") or None
            if not token:
                break
            if self.stop.is_set():
                return
        if not list_rv:
            raise ValueError(f"{self._label}: list response without metadata.resourceVersion")
        self.resource_version = list_rv
        log.debug("%s: listed %d pages at resourceVersion %s", self._label, pages, list_rv)
        yield Checkpoint(list_rv, "list")

    # ------------------------------------------------------------------ watch
    def _watch(self) -> Iterator[Item | Checkpoint]:
        base = self.options.watch_timeout_seconds
        timeout = max(1, round(base * self._rng.uniform(0.9, 1.1)))
        started, received = time.monotonic(), 0
        resp = self._call(
            timeout + self.options.watch_read_margin_seconds,
            watch=True,
            resource_version=self.resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout,
        )
        try:
            for line in iter_lines(resp):
                received += 1
                event = loads(line)
                etype = event.get("type")
                obj = event.get("object") or {}
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                if etype in settings.ROW_TYPES:
                    yield Item(etype, normalize(obj, self.spec), rv)
                    self._backoff.reset()
                    if rv:
                        self.resource_version = rv
                elif etype == "BOOKMARK":
                    self._stat("bookmarks")
                    if rv:
                        self.resource_version = rv
                        yield Checkpoint(rv, "bookmark")
                elif etype == "ERROR":
                    if obj.get("code") == 410 or _too_large(obj.get("code"), obj.get("message")):
                        raise Gone(obj.get("message") or obj.get("reason") or "410")
                    raise StreamError(
                        f"{obj.get('code')} {obj.get('reason')}: {obj.get('message')}"
                    )
                else:
                    log.warning("%s: ignoring watch event of type %r", self._label, etype)
                if self.stop.is_set():
                    return
        finally:
            self._release(resp)
        lasted = time.monotonic() - started
        # at most half the timeout, so that a watch ended by its own (tiny) timeoutSeconds is
        # never "short"; a watch cut by abort() on shutdown is not either
        short = min(settings.SHORT_WATCH_SECONDS, timeout / 2)
        if not received and lasted < short and not self.stop.is_set():
            raise ShortWatch(f"watch ended after {lasted:.3f}s with no events")
        self._backoff.reset()  # server ended the watch normally (timeoutSeconds)
        yield Checkpoint(self.resource_version, "watch-end")

    # ------------------------------------------------------------------ drivers
    def _pause(self, reason: str, exc: BaseException | None = None, minimum: float = 0.0) -> None:
        delay = max(self._backoff.next_delay(), min(minimum, settings.MAX_RETRY_AFTER_SECONDS))
        log.warning("%s: %s (%s); retrying in %.2fs", self._label, reason, exc, delay)
        self.stop.wait(delay)

    def run(self) -> Iterator[Item | Checkpoint]:
        """List (unless resuming from a resourceVersion), then watch, until ``stop`` is set."""
        consecutive_gone = 0
        while not self.stop.is_set():
            try:
                if self.resource_version is None:
                    yield from self._list()
                    if self.stop.is_set():
                        return
                yield from self._watch()
                consecutive_gone = 0
            except Gone as exc:
                self._stat("relists")
                self.resource_version = None
                consecutive_gone += 1
                log.info("%s: 410 (%s); relisting", self._label, exc)
                if consecutive_gone > 1:
                    self._pause("repeated 410", exc)
            except ApiException as exc:
                if exc.status == 404 and self.spec.optional:
                    self._stat("not_served")
                    log.info(
                        "%s: not served by this cluster (404); checking again in %.0fs",
                        self._label,
                        self.options.absent_recheck_seconds,
                    )
                    self.stop.wait(self.options.absent_recheck_seconds)
                else:
                    self._stat("errors")
                    self._pause(f"API error {exc.status} {exc.reason}", None, retry_after(exc))
            except StreamError as exc:
                self._stat("errors")
                self._pause("error event in watch stream", exc)
            except ShortWatch as exc:
                self._stat("errors")
                self._pause("server closed the watch at once", exc)
            except NETWORK_ERRORS as exc:
                if self.stop.is_set():
                    return
                self._stat("reconnects")
                self._pause("connection problem", exc)

    def list_once(self, max_attempts: int = 5) -> Iterator[Item | Checkpoint]:
        """One complete list (retrying expired continues and transient errors)."""
        last = "410 Gone on every attempt"  # what the final error names (retries log a WARNING)
        for attempt in range(1, max_attempts + 1):
            if self.stop.is_set():
                return
            try:
                yield from self._list()
                return
            except Gone:
                self._stat("relists")
            except ApiException as exc:
                if exc.status == 404 and self.spec.optional:
                    self._stat("not_served")
                    log.info("%s: not served by this cluster (404); skipped", self._label)
                    return
                self._stat("errors")
                last = f"API error {exc.status} {exc.reason}"
                self._pause(f"{last} (attempt {attempt})", None, retry_after(exc))
            except NETWORK_ERRORS as exc:
                self._stat("reconnects")
                last = f"connection problem: {type(exc).__name__}: {exc}"
                self._pause(f"connection problem (attempt {attempt})", exc)
        self._stat("errors")
        self._stat("lists_failed")
        log.error("%s: list failed %d times (last: %s); giving up", self._label, max_attempts,
                  last)


__all__ = [
    "NETWORK_ERRORS",
    "Backoff",
    "Checkpoint",
    "Gone",
    "Item",
    "ListWatch",
    "ShortWatch",
    "TruncatedStream",
]
