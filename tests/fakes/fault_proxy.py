"""A loopback HTTP proxy in front of an object-store emulator (Azurite, fake-gcs-server) that
forwards every request unchanged and can answer one with the store's error instead: what the
emulators cannot be made to do (a 503 on the first LIST, an AccessDenied), as
tests/fakes/s3_server.py does in front of moto.

Usage::

    proxy = FaultProxy("127.0.0.1", upstream_port, account="devstoreaccount1")
    proxy.fail("list", 503, "ServerBusy")       # the next LIST answers 503 ServerBusy, once
    proxy.fail("get", 403, "AccessDenied", times=None)  # every GET, until `proxy.clear()`
    proxy.seen                                  # every request: (op, bucket, key, status)

Requests are told apart as the clients send them: the bucket (container) is the first part of
the path after the account (Azurite's path-style URLs: `/ACCOUNT/CONTAINER/BLOB`); a GET of the
bucket itself with `list-type` (GCS's XML API, which obstore speaks: ListObjectsV2's form) or
`comp=list` (Azure's List Blobs) is a LIST, a GET of a key a GET, a PUT of a key a PUT.

The error document is the store's XML form: `<Error><Code>..</Code><Message>..</Message>`
(Azure Storage's "Status and error codes" and Cloud Storage's "HTTP status and error codes for
XML" both answer that shape). `echo` adds elements to it, as a store that repeats part of the
request would.
"""

from __future__ import annotations

import http.client
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
       "proxy-connection", "content-length", "host"}


@dataclass
class _Fault:
    op: str  # "list", "get", "put", "any"
    status: int
    code: str
    message: str
    times: int | None  # None: until cleared
    echo: dict[str, str]


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int, account: str = "") -> None:
        self.upstream = (upstream_host, upstream_port)
        self.account = account
        self.seen: list[tuple[str, str, str, int]] = []
        self._faults: list[_Fault] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the client expects of a store

            def log_message(self, *args) -> None:  # the test's output, not the proxy's
                pass

            def _any(self) -> None:
                proxy._handle(self)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = do_PATCH = _any

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._thread.join(5)
        self._server.server_close()

    # ------------------------------------------------------------------ faults
    def fail(self, op: str, status: int, code: str, message: str = "", times: int | None = 1,
             echo: dict[str, str] | None = None) -> None:
        with self._lock:
            self._faults.append(_Fault(op, status, code, message or code, times, echo or {}))

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()
            self.seen.clear()

    def count(self, op: str, status: int | None = None) -> int:
        with self._lock:
            return sum(1 for s in self.seen if s[0] == op and (status is None or s[3] == status))

    def _take(self, op: str) -> _Fault | None:
        with self._lock:
            for f in self._faults:
                if f.op in (op, "any") and f.times != 0:
                    if f.times is not None:
                        f.times -= 1
                    return f
        return None

    def _classify(self, method: str, target: str) -> tuple[str, str, str]:
        url = urlsplit(target)
        path = unquote(url.path).lstrip("/")
        if self.account and path.startswith(self.account):
            path = path[len(self.account):].lstrip("/")
        bucket, _, key = path.partition("/")
        query = parse_qs(url.query)
        if method == "GET" and not key and ("list-type" in query or query.get("comp") == ["list"]):
            return "list", bucket, key
        return method.lower(), bucket, key  # "get" or "put" of a key; any other as its verb

    # ------------------------------------------------------------------ forwarding
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        op, bucket, key = self._classify(h.command, h.path)
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        fault = self._take(op)
        if fault is not None:
            extra = "".join(f"<{k}>{v}</{k}>" for k, v in fault.echo.items())
            doc = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{fault.code}</Code>'
                   f"<Message>{fault.message}</Message>{extra}</Error>").encode()
            with self._lock:
                self.seen.append((op, bucket, key, fault.status))
            h.send_response(fault.status, fault.code)
            h.send_header("Content-Type", "application/xml")
            h.send_header("Content-Length", str(len(doc)))
            h.end_headers()
            if h.command != "HEAD":
                h.wfile.write(doc)
            return
        conn = http.client.HTTPConnection(*self.upstream, timeout=30)
        try:
            headers = {k: v for k, v in h.headers.items() if k.lower() not in HOP}
            headers["Host"] = f"{self.upstream[0]}:{self.upstream[1]}"
            if body or h.command in ("PUT", "POST"):
                headers["Content-Length"] = str(len(body))
            conn.request(h.command, h.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            with self._lock:
                self.seen.append((op, bucket, key, resp.status))
            h.send_response(resp.status, resp.reason)
            for k, v in resp.getheaders():
                if k.lower() not in HOP:
                    h.send_header(k, v)
            if h.command == "HEAD":
                h.send_header("Content-Length", resp.getheader("Content-Length") or "0")
            else:
                h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            if h.command != "HEAD":
                h.wfile.write(data)
        finally:
            conn.close()


def free_port() -> int:
    """A port free on 127.0.0.1 for an emulator to listen on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def emulator(name: str, cmd: list[str], log_path: Path, ready: Callable[[], object],
             env: dict | None = None, within: float = 30) -> Iterator[subprocess.Popen]:
    """An emulator's process, its output in `log_path`, yielded once `ready()` stops raising
    OSError (a connection refused: not listening yet), stopped after."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + within
        while True:
            try:
                ready()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{name} did not start: "
                                       + log_path.read_text()[-2000:]) from None
                time.sleep(0.1)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class BehindProxy:
    """An emulator's fake with `self.proxy` (a FaultProxy) in front: what the proxy saw, and
    the faults it is to answer with, asked of the fake."""

    proxy: FaultProxy

    @property
    def seen(self) -> list[tuple[str, str, str, int]]:
        return self.proxy.seen

    def fail(self, *args, **kwargs) -> None:
        self.proxy.fail(*args, **kwargs)

    def clear(self) -> None:
        self.proxy.clear()

    def count(self, op: str, status: int | None = None) -> int:
        return self.proxy.count(op, status)
