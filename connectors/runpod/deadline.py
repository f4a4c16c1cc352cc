"""A wall-clock limit on one HTTP attempt, however slowly the server sends.

``requests`` applies its read timeout to each socket read: a server that sends a byte every
few seconds (headers or body) keeps a call alive for ever. :class:`DeadlineAdapter` records,
per thread, the connection each request goes out on; :func:`attempt_deadline` arms a timer
that shuts that connection's socket down when the attempt's time is up, which ends the read
blocked in another frame at once (it sees the end of the stream, or an error). The caller
then checks :attr:`Guard.fired` and reports a deadline, not whatever the cut connection
looked like.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

_local = threading.local()


class Guard:
    """The connections of one attempt and whether its deadline has passed."""

    def __init__(self) -> None:
        self.fired = False
        self._lock = threading.Lock()
        self._conns: list[HTTPConnection] = []

    def track(self, conn: HTTPConnection) -> None:
        with self._lock:
            if self.fired:  # the time ran out while connecting: do not start reading
                raise TimeoutError("the attempt's deadline passed before the request was sent")
            self._conns.append(conn)

    def fire(self) -> None:
        with self._lock:
            self.fired = True
            conns = list(self._conns)
        for conn in conns:
            sock = getattr(conn, "sock", None)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:  # already closed
                    pass


class _Tracked:
    def request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        guard = getattr(_local, "guard", None)
        if guard is not None:
            guard.track(self)  # type: ignore[arg-type]
        return super().request(*args, **kwargs)  # type: ignore[misc]


class _HTTPConnection(_Tracked, HTTPConnection):
    pass


class _HTTPSConnection(_Tracked, HTTPSConnection):
    pass


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


_POOLS = {"http": _HTTPPool, "https": _HTTPSPool}


class DeadlineAdapter(HTTPAdapter):
    """An HTTPAdapter whose connections (direct or through a proxy) :func:`attempt_deadline`
    can cut."""

    def init_poolmanager(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOLS)

    def proxy_manager_for(self, proxy, **kwargs):  # type: ignore[no-untyped-def]
        manager = super().proxy_manager_for(proxy, **kwargs)
        manager.pool_classes_by_scheme = dict(_POOLS)
        return manager


@contextmanager
def attempt_deadline(seconds: float) -> Iterator[Guard]:
    """Cut the connection of the request(s) made in this block after ``seconds``."""
    guard = Guard()
    timer = threading.Timer(max(0.0, seconds), guard.fire)
    timer.daemon = True
    previous = getattr(_local, "guard", None)
    _local.guard = guard
    timer.start()
    try:
        yield guard
    finally:
        timer.cancel()
        _local.guard = previous
