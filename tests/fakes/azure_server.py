"""Azure Blob Storage on 127.0.0.1 for tests: Azurite (Microsoft's emulator, npm package
`azurite`, pinned in tests/fakes/azurite/package-lock.json and installed there by `npm ci` on
first use) behind tests/fakes/fault_proxy.py, which can answer a request with a Blob Storage
error instead of passing it on.

Usage::

    with fake_azure(mp, tmp, ("recon-landing",)) as az:  # sets AZURE_STORAGE_* for obstore
        az.put("recon-landing", "landing/k8s/a.jsonl", b"...")
        az.fail("list", 503, "ServerBusy")           # the next List Blobs answers 503, once
        az.seen                                      # every request through the proxy

Azurite serves a storage account of the test's own (AZURITE_ACCOUNTS: name and key), so the
key is a planted secret that no message may show, and a wrong key is refused by Azurite itself
(AuthenticationFailed, HTTP 403: Azure Storage's "Common REST API error codes"). URLs are
path-style, `http://127.0.0.1:PORT/ACCOUNT/CONTAINER/BLOB` (Azurite's default), the form
obstore uses for an `endpoint` override (AZURE_STORAGE_ENDPOINT).
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import hmac
import os
import shutil
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from email.utils import formatdate
from pathlib import Path

from tests.fakes.fault_proxy import BehindProxy, FaultProxy, emulator, free_port

HERE = Path(__file__).parent / "azurite"
ACCOUNT = "reconacct"
# Azure storage account keys are 64 random bytes in base64; this one spells out that it is a test's
KEY = base64.b64encode(b"PLANTED-azure-account-key-0123456789-do-not-show-in-any-message!!").decode()
VERSION = "2021-08-06"  # x-ms-version of the requests this module signs itself


def install() -> Path:
    """tests/fakes/azurite/node_modules/.bin/azurite-blob, installed by `npm ci` from the lock
    file when missing (one installer at a time: pytest-xdist's workers share the folder)."""
    binary = HERE / "node_modules" / ".bin" / "azurite-blob"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed: Azurite (tests/fakes/azurite) needs node and npm")
    with open(HERE / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            # no install scripts: Azurite needs none, and they would run code beyond the lock file
            subprocess.run([npm, "ci", "--prefix", str(HERE), "--no-audit", "--no-fund",
                            "--ignore-scripts", "--loglevel=error"], check=True,
                           stdout=subprocess.DEVNULL, timeout=600)
    return binary


@contextmanager
def azurite(workdir: Path) -> Iterator[int]:
    """An Azurite blob service on 127.0.0.1, its blobs and log in `workdir`: its port."""
    binary = install()
    port = free_port()
    env = dict(os.environ, AZURITE_ACCOUNTS=f"{ACCOUNT}:{KEY}")

    def listening() -> None:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()

    with emulator("Azurite", [str(binary), "--blobHost", "127.0.0.1", "--blobPort", str(port),
                              "--location", str(workdir), "--skipApiVersionCheck", "--loose",
                              "--disableTelemetry", "--silent"],
                  workdir / "azurite.log", listening, env=env):
        yield port


@contextmanager
def fake_azure(mp, workdir: Path, containers: tuple[str, ...] = ()) -> Iterator[FakeAzure]:
    """A FakeAzure with the environment a production run reads (pytest's MonkeyPatch `mp`):
    only the account's AZURE_STORAGE_* variables, the endpoint the proxy's."""
    for var in [v for v in os.environ if v.startswith(("AZURE_", "AZURITE_"))]:
        mp.delenv(var)
    with azurite(workdir) as port:
        fake = FakeAzure(port)
        try:
            mp.setenv("AZURE_STORAGE_ACCOUNT_NAME", ACCOUNT)
            mp.setenv("AZURE_STORAGE_ACCOUNT_KEY", KEY)
            mp.setenv("AZURE_STORAGE_ENDPOINT", fake.endpoint)
            for c in containers:
                fake.create_container(c)
            yield fake
        finally:
            fake.proxy.close()


class FakeAzure(BehindProxy):
    def __init__(self, port: int) -> None:
        self.port = port
        self.direct = f"http://127.0.0.1:{port}/{ACCOUNT}"  # Azurite itself, for setting up
        self.proxy = FaultProxy("127.0.0.1", port, account=ACCOUNT)
        self.endpoint = f"{self.proxy.endpoint}/{ACCOUNT}"  # what the code under test uses

    # ------------------------------------------------------------------ setting the scene
    def create_container(self, container: str) -> None:
        """Create Container (`PUT ?restype=container`), signed with Shared Key as Azure
        Storage's "Authorize with Shared Key" gives the string to sign: the verb, eleven empty
        standard headers (a Content-Length of 0 is empty), the x-ms-* headers in order, then
        `/ACCOUNT/PATH` and the query parameters as `name:value` lines. (Azurite's path-style
        URL holds the account twice: `/ACCOUNT/ACCOUNT/CONTAINER`.)"""
        headers = {"x-ms-date": formatdate(usegmt=True), "x-ms-version": VERSION}
        canonical = "".join(f"{k}:{v}\n" for k, v in sorted(headers.items()))
        to_sign = ("PUT\n" + "\n" * 11 + canonical
                   + f"/{ACCOUNT}/{ACCOUNT}/{container}\nrestype:container")
        sig = base64.b64encode(hmac.new(base64.b64decode(KEY), to_sign.encode(),
                                        hashlib.sha256).digest()).decode()
        # (no body: urllib would add a Content-Type, which the string to sign would then hold)
        req = urllib.request.Request(f"{self.direct}/{container}?restype=container", method="PUT",
                                     headers={**headers, "Content-Length": "0",
                                              "Authorization": f"SharedKey {ACCOUNT}:{sig}"})
        try:
            urllib.request.urlopen(req, timeout=10).close()
        except urllib.error.HTTPError as e:
            if e.code != 409:  # ContainerAlreadyExists: a module's second fixture
                raise

    def store(self, container: str):
        from obstore.store import AzureStore

        return AzureStore(container, account_name=ACCOUNT, account_key=KEY,
                          endpoint=self.direct, client_options={"allow_http": True})

    def put(self, container: str, key: str, body: bytes) -> None:
        import obstore

        obstore.put(self.store(container), key, body, use_multipart=False)

    def get(self, container: str, key: str) -> bytes:
        import obstore

        return bytes(obstore.get(self.store(container), key).bytes())

    def keys(self, container: str, prefix: str = "") -> list[str]:
        import obstore

        return sorted(m["path"] for b in obstore.list(self.store(container), prefix or None)
                      for m in b)

    def delete(self, container: str, key: str) -> None:
        import obstore

        obstore.delete(self.store(container), key)
