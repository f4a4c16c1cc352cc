"""An S3-compatible server on 127.0.0.1 for tests: moto's server (its real S3 API: buckets,
ListObjectsV2, GetObject, ETags, NoSuchBucket) on a free port, behind a WSGI layer that can
answer a request with an S3 error instead of passing it on.

Usage::

    with fake_s3(monkeypatch, "AKIA...", "secret", ("recon-landing",)) as s3:  # sets AWS_*
        # (or FakeS3() alone, the environment set by the caller)
        s3.put("recon-landing", "landing/k8s/a.jsonl", b"...")
        s3.fail("list", 503, "SlowDown")    # the next LIST answers 503 SlowDown, once
        s3.fail("get", 403, "AccessDenied", times=None)  # every GET, until `s3.clear()`
        s3.seen                             # every request: (op, bucket, key, status)

Errors are S3's REST error document (Amazon S3 API Reference, "Error responses": an XML
`<Error>` with `<Code>`, `<Message>`, `<RequestId>`; SlowDown is HTTP 503, AccessDenied and
SignatureDoesNotMatch HTTP 403). `fail(..., echo=...)` adds an element to the document, as S3's
SignatureDoesNotMatch answer carries `<AWSAccessKeyId>`: a test can check that what the server
said does not reach a message unfiltered.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import make_server

MESSAGES = {"SlowDown": "Please reduce your request rate.", "AccessDenied": "Access Denied",
            "SignatureDoesNotMatch": "The request signature we calculated does not match the "
                                     "signature you provided. Check your key and signing method.",
            "InternalError": "We encountered an internal error. Please try again."}


@dataclass
class _Fault:
    op: str  # "list" (ListObjectsV2), "get" (GetObject), "any"
    status: int
    code: str
    times: int | None  # None: until cleared
    bucket: str | None
    echo: dict[str, str]


@contextmanager
def fake_s3(mp, access_key: str, secret_key: str, buckets: tuple[str, ...] = ()
            ) -> Iterator[FakeS3]:
    """A FakeS3 with the environment a production run reads (pytest's MonkeyPatch `mp`): only
    these AWS_* variables (no profile, no other endpoint, no instance-metadata lookups), the
    endpoint this server's."""
    for var in [v for v in os.environ if v.startswith("AWS_")]:
        mp.delenv(var)
    mp.setenv("AWS_ACCESS_KEY_ID", access_key)
    mp.setenv("AWS_SECRET_ACCESS_KEY", secret_key)
    mp.setenv("AWS_REGION", "us-east-1")
    mp.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with FakeS3() as fake:
        mp.setenv("AWS_ENDPOINT_URL", fake.endpoint)
        for b in buckets:
            fake.create_bucket(b)
        yield fake


class _QuietHandler(MotoRequestHandler):
    """Without an access log: werkzeug logs each request at INFO through the root logger, and
    with pytest's logging plugin off that is the CLI's own stderr handler, so a test reading a
    command's error would read the fake's access lines too."""

    def log_request(self, *args, **kwargs) -> None:
        pass


class FakeS3:
    def __init__(self) -> None:
        self._faults: list[_Fault] = []
        self._lock = threading.Lock()
        self.seen: list[tuple[str, str, str, int]] = []
        self._app = DomainDispatcherApplication(create_backend_app)
        self._server = make_server("127.0.0.1", 0, self._wsgi, threaded=True,
                                   request_handler=_QuietHandler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeS3:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._thread.join(5)
        self._server.server_close()

    # ------------------------------------------------------------------ setting the scene
    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1")

    def create_bucket(self, bucket: str) -> None:
        self.client().create_bucket(Bucket=bucket)

    def put(self, bucket: str, key: str, body: bytes) -> None:
        self.client().put_object(Bucket=bucket, Key=key, Body=body)

    def delete(self, bucket: str, key: str) -> None:
        self.client().delete_object(Bucket=bucket, Key=key)

    def fail(self, op: str, status: int, code: str, times: int | None = 1,
             bucket: str | None = None, echo: dict[str, str] | None = None) -> None:
        with self._lock:
            self._faults.append(_Fault(op, status, code, times, bucket, echo or {}))

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()
            self.seen.clear()

    def count(self, op: str, status: int | None = None) -> int:
        return sum(1 for s in self.seen if s[0] == op and (status is None or s[3] == status))

    # ------------------------------------------------------------------ the server
    def _wsgi(self, environ, start_response):
        path = unquote(environ.get("PATH_INFO", ""))
        bucket, _, key = path.lstrip("/").partition("/")
        query = parse_qs(environ.get("QUERY_STRING", ""))
        method = environ["REQUEST_METHOD"]
        op = ("list" if method == "GET" and not key and "list-type" in query
              else "get" if method == "GET" and key else method.lower())
        fault = self._take(op, bucket)
        if fault is None:
            status = []

            def recording(st, headers, exc_info=None):
                status.append(int(st.split()[0]))
                return start_response(st, headers, exc_info)

            body = self._app(environ, recording)
            self.seen.append((op, bucket, key, status[0] if status else 0))
            return body
        extra = "".join(f"<{k}>{v}</{k}>" for k, v in fault.echo.items())
        doc = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{fault.code}</Code>'
               f"<Message>{MESSAGES.get(fault.code, fault.code)}</Message>{extra}"
               f"<RequestId>4442587FB7D0A2F9</RequestId></Error>").encode()
        self.seen.append((op, bucket, key, fault.status))
        start_response(f"{fault.status} {fault.code}", [("Content-Type", "application/xml"),
                                                        ("Content-Length", str(len(doc)))])
        return [doc]

    def _take(self, op: str, bucket: str) -> _Fault | None:
        with self._lock:
            for f in self._faults:
                if f.op in (op, "any") and f.bucket in (None, bucket) and f.times != 0:
                    if f.times is not None:
                        f.times -= 1
                    return f
        return None
