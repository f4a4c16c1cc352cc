"""`recon run --input az://CONTAINER/PREFIX` and `gs://BUCKET/PREFIX`: the landing area read
from Azure Blob Storage and Google Cloud Storage, by the rules of an s3:// one
(tests/test_object_store.py).

Everything goes through the real client (obstore) over HTTP to a loopback server that speaks
the store's own protocol: Azurite, Microsoft's Azure Storage emulator (tests/fakes/
azure_server.py), and fake-gcs-server, which answers the XML API's LIST and GET that obstore's
GCSStore sends (tests/fakes/gcs_server.py). A proxy in front of each (tests/fakes/
fault_proxy.py) counts the requests and injects what the emulators cannot be made to answer.
Credentials come from the environment as in production: AZURE_STORAGE_ACCOUNT_NAME /
AZURE_STORAGE_ACCOUNT_KEY / AZURE_STORAGE_ENDPOINT, GOOGLE_BEARER_TOKEN / GOOGLE_BASE_URL.

The stores' behaviour cited here: Azure Storage REST API, "List Blobs" (Name, Etag,
Content-Length, Last-Modified of each blob under a prefix), "Get Blob", "Common REST API error
codes" (AuthenticationFailed 403, ServerBusy 503: "The server is currently unable to receive
requests. Please retry your request.") and "Blob Storage error codes" (ContainerNotFound 404,
BlobNotFound 404, AuthorizationPermissionMismatch 403); Cloud Storage, "HTTP status and error
codes for XML" (the `<Error><Code>` document; NoSuchBucket 404, AccessDenied 403, 429 and 503
to be retried with exponential backoff).
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recon.cli import app
from recon.ingest import mirror
from recon.pipeline import run
from recon.simulate import simulate
from tests.fakes import azure_server, gcs_server
from tests.test_object_store import query, rows

BUCKET = "recon-landing"
BROKEN = "k8s/cluster=sim-cluster/watch-pods-00.jsonl"  # its last line is no JSON (below)
MARTS = ("resource_day", "billed_segments", "allocation", "waste", "findings", "settlement")


@dataclass
class Store:
    """One store under test, as the tests use it: the fake, its scheme, what it calls its
    bucket, its secrets (planted in the environment: no message may show them), and its error
    codes for a busy server, an object gone and access denied (the module docstring's
    references)."""

    fake: object
    scheme: str
    noun: str
    secrets: tuple[str, ...]
    busy: tuple[int, str]
    gone: tuple[int, str]
    denied: tuple[int, str]
    permission: str  # what the access-denied sentence says the credentials may not do
    uploaded: bool = False  # the landing area is under landing/ (`landed`)

    def url(self, prefix: str, bucket: str = BUCKET) -> str:
        return f"{self.scheme}://{bucket}/{prefix}"


@pytest.fixture(scope="module")
def azure(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp, azure_server.fake_azure(
            mp, tmp_path_factory.mktemp("azurite"), (BUCKET,)) as fake:
        yield Store(fake, "az", "container", (azure_server.KEY,), (503, "ServerBusy"),
                    (404, "BlobNotFound"), (403, "AuthorizationPermissionMismatch"),
                    f"Storage Blob Data Reader on {BUCKET}")


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp, gcs_server.fake_gcs(
            mp, tmp_path_factory.mktemp("gcs"), (BUCKET,)) as fake:
        yield Store(fake, "gs", "bucket", (gcs_server.TOKEN,), (503, "ServiceUnavailable"),
                    (404, "NoSuchKey"), (403, "AccessDenied"),
                    f"storage.objects.list on {BUCKET}")


@pytest.fixture(scope="module", params=["az", "gs"])
def store(request):
    return request.getfixturevalue({"az": "azure", "gs": "gcs"}[request.param])


@pytest.fixture(scope="module")
def landing(tmp_path_factory):
    """A one-day, two-node simulated landing area, one line of it broken, as a local folder,
    and its marts built from that folder (what every store's run must give)."""
    root = tmp_path_factory.mktemp("landing") / "in"
    simulate(root, seed=3, days=1, nodes=2)
    with open(root / BROKEN, "a") as f:
        f.write("{not json\n")
    files = sorted(p for p in root.rglob("*") if p.is_file())
    db = tmp_path_factory.mktemp("local") / "local.duckdb"
    run(root, db)
    return root, files, db


def landed(store: Store, landing) -> tuple:
    """`landing`, its files also the objects under STORE://recon-landing/landing/ (the same
    bytes; uploaded once a store, whichever test comes first)."""
    if not store.uploaded:
        root, files, _ = landing
        _upload(store, root, files, "landing/")
        store.uploaded = True
    return landing


def _upload(store: Store, root: Path, files: list[Path], prefix: str) -> None:
    for p in files:
        store.fake.put(BUCKET, prefix + p.relative_to(root).as_posix(), p.read_bytes())


def test_input_gives_the_marts_of_the_local_folder(tmp_path, store, landing):
    root, files, local = landed(store, landing)
    url = store.url("landing")
    out = CliRunner().invoke(app, ["run", "--input", url, "--db", str(tmp_path / "w.duckdb"),
                                   "--no-validate"])
    assert out.exit_code == 0, out.output
    size = sum(p.stat().st_size for p in files)
    assert (f"{url}/: {len(files)} object(s) listed, {len(files)} downloaded "
            f"({size / 1e6:.1f} MB), 0 unchanged") in " ".join(out.output.split())
    for mart in MARTS:
        assert rows(tmp_path / "w.duckdb", mart) == rows(local, mart), mart
    assert query(tmp_path / "w.duckdb", "select sum(billed_amount) > 0 from marts.resource_day"
                 ) == [(True,)]  # the marts compared hold a bill, not two empty tables
    # files are named by their objects' URLs, never by the cache folder
    names = [r[0] for r in query(tmp_path / "w.duckdb", "select source_file from raw.files")]
    assert len(names) == len(query(local, "select source_file from raw.files"))
    assert all(n.startswith(f"{url}/") for n in names), names
    # the broken line is quarantined with its object's URL and its line number (the file's
    # line count: the line appended last)
    lines = (root / BROKEN).read_text().count("\n")
    assert query(tmp_path / "w.duckdb", "select source_file, locator from raw.quarantine") == [
        (f"{url}/{BROKEN}", f"line {lines}")]
    # the cache is beside the warehouse, under the scheme's folder (mirror.py's docstring)
    cached = tmp_path / "landing-cache" / store.scheme / BUCKET / "landing" / BROKEN
    assert cached.read_bytes() == (root / BROKEN).read_bytes()
    assert not (tmp_path / "landing-cache" / BUCKET).exists()


def test_rerun_downloads_nothing_and_a_changed_object_is_read_again(tmp_path, store, landing):
    """Unchanged: the ETag and size the listing gives equal the manifest's. Azure's List Blobs
    gives the ETag bare and Get Blob quoted (Azurite as Azure): compared as they come, every
    rerun would download everything again."""
    root, files, _ = landing
    _upload(store, root, files, "again/")
    db, url = tmp_path / "w.duckdb", store.url("again")
    first = run(url, db)
    assert first.mirror.downloaded == len(files)
    before = query(db, "select * from raw.files order by all")

    store.fake.clear()
    again = run(url, db)
    assert (again.mirror.downloaded, again.mirror.unchanged) == (0, len(files))
    assert (store.fake.count("list"), store.fake.count("get")) == (1, 0)  # no download
    assert all(f.unchanged for f in again.files)
    assert query(db, "select * from raw.files order by all") == before

    # the broken line rewritten with the same length: same size, another ETag
    old = (root / BROKEN).read_bytes()
    new = old.replace(b"{not json\n", b"{NOT JSON\n")
    assert len(new) == len(old) and new != old
    store.fake.put(BUCKET, f"again/{BROKEN}", new)
    store.fake.clear()
    changed = run(url, db)
    assert (changed.mirror.downloaded, changed.mirror.unchanged) == (1, len(files) - 1)
    assert store.fake.count("get") == 1
    assert [f.path for f in changed.files if not f.unchanged] == [f"{url}/{BROKEN}"]
    assert query(db, "select record from raw.quarantine") == [("{NOT JSON",)]

    # an object gone from the store: its cached copy goes, what it landed stays
    gone = "runpod/balance.json"
    store.fake.delete(BUCKET, f"again/{gone}")
    after = run(url, db)
    assert after.mirror.removed == [gone]
    assert not (tmp_path / "landing-cache" / store.scheme / BUCKET / "again" / gone).exists()
    assert query(db, f"select count(*) from raw.files where source_file = '{url}/{gone}'") == [
        (1,)]


def test_a_busy_store_on_the_first_list_and_get_is_retried(tmp_path, store, landing):
    _, files, _ = landed(store, landing)
    status, code = store.busy
    store.fake.clear()
    store.fake.fail("list", status, code)
    store.fake.fail("get", status, code)
    res = mirror.mirror(store.url("landing"), tmp_path)
    assert res.downloaded == len(files)
    # one refusal then the answer: LIST twice; GET once per object plus the one retried
    assert (store.fake.count("list", status), store.fake.count("list", 200)) == (1, 1)
    assert (store.fake.count("get", status), store.fake.count("get", 200)) == (1, len(files))


def test_gcs_throttling_429_is_retried(tmp_path, gcs, landing):
    """Cloud Storage answers a request rate past its limits 429 Too Many Requests, to be
    retried with exponential backoff, as a 5xx."""
    _, files, _ = landed(gcs, landing)
    gcs.fake.clear()
    gcs.fake.fail("list", 429, "SlowDown")
    res = mirror.mirror(gcs.url("landing"), tmp_path)
    assert res.downloaded == len(files)
    assert (gcs.fake.count("list", 429), gcs.fake.count("list", 200)) == (1, 1)


def test_an_object_deleted_between_the_list_and_its_get_is_gone(tmp_path, store, landing):
    _, files, _ = landed(store, landing)
    store.fake.clear()
    store.fake.fail("get", *store.gone)
    res = mirror.mirror(store.url("landing"), tmp_path)
    [(_, _, key, _)] = [r for r in store.fake.seen if r[0] == "get" and r[3] == 404]
    gone = key.removeprefix("landing/")
    assert res.removed == [gone] and res.downloaded == len(files) - 1
    assert not (res.folder / gone).exists()
    assert gone not in mirror._load_manifest(res.folder, res.url)


def test_a_store_down_past_the_retries_is_a_clear_error(tmp_path, store, landing, monkeypatch):
    landed(store, landing)
    monkeypatch.setattr(mirror, "RETRY", {"max_retries": 2, "retry_timeout": timedelta(seconds=5),
                                          "backoff": {"init_backoff": timedelta(milliseconds=10),
                                                      "max_backoff": timedelta(milliseconds=20),
                                                      "base": 2}})
    status, code = store.busy
    store.fake.clear()
    store.fake.fail("list", status, code, times=None)
    try:
        with pytest.raises(mirror.ObjectStoreError) as e:
            mirror.mirror(store.url("landing"), tmp_path)
        assert store.fake.count("list", status) == 3  # the request and its 2 retries
    finally:
        store.fake.clear()
    assert str(e.value) == (f"listing {store.url('landing')}/ failed: {code} (HTTP {status}) "
                            "after 2 retries")


def _cli_error(tmp_path, store: Store, url: str) -> str:
    out = CliRunner().invoke(app, ["run", "--input", url, "--db", str(tmp_path / "w.duckdb"),
                                   "--no-validate"])
    assert out.exit_code == 1, out.output
    text = " ".join(out.output.split())
    for secret in store.secrets:
        assert secret not in text
    return text


def test_a_missing_container_is_named(tmp_path, azure):
    """Azurite's own answer: List Blobs of a container that does not exist is 404
    ContainerNotFound."""
    azure.fake.clear()
    text = _cli_error(tmp_path, azure, "az://recon-nowhere/landing")
    assert text == ("error: listing az://recon-nowhere/landing/ failed: container "
                    "'recon-nowhere' does not exist (or is in another storage account): check "
                    "the URL, AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ENDPOINT")
    assert azure.fake.count("list", 404) == 1  # not retried


def test_a_missing_bucket_is_named(tmp_path, gcs):
    """Cloud Storage answers 404 NoSuchBucket (fake-gcs-server answers 500: injected)."""
    gcs.fake.clear()
    gcs.fake.fail("list", 404, "NoSuchBucket", "The specified bucket does not exist.")
    try:
        text = _cli_error(tmp_path, gcs, "gs://recon-nowhere/landing")
    finally:
        gcs.fake.clear()
    assert text == ("error: listing gs://recon-nowhere/landing/ failed: bucket 'recon-nowhere' "
                    "does not exist (or the credentials' project cannot see it): check the URL "
                    "and GOOGLE_BASE_URL")


def test_access_denied_names_the_bucket_without_credentials(tmp_path, store, landing):
    landed(store, landing)
    store.fake.clear()
    status, code = store.denied
    store.fake.fail("list", status, code, times=None)
    try:
        text = _cli_error(tmp_path, store, store.url("landing"))
    finally:
        store.fake.clear()
    assert text == (f"error: listing {store.url('landing')}/ failed: access denied ({code}, "
                    f"HTTP 403): the credentials in the environment may not list it "
                    f"({store.permission})")


def test_a_wrong_account_key_is_refused_by_azurite(tmp_path, azure, landing, monkeypatch):
    """A key the account does not have: Azurite refuses the Shared Key signature itself, with
    403 AuthorizationFailure (Azure answers a bad signature 403 AuthenticationFailed, the next
    test): the sentence names the container and not the key."""
    landed(azure, landing)
    azure.fake.clear()
    wrong = base64.b64encode(b"a-wrong-key-for-the-account-0123456789").decode()
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", wrong)
    text = _cli_error(tmp_path, azure, azure.url("landing"))
    assert wrong not in text
    assert text == (f"error: listing az://{BUCKET}/landing/ failed: access denied "
                    f"(AuthorizationFailure, HTTP 403): the credentials in the environment may "
                    f"not list it (Storage Blob Data Reader on {BUCKET})")
    assert azure.fake.count("list", 403) == 1


def test_refused_credentials_never_echo_the_secret(tmp_path, store, landing):
    """Azure's AuthenticationFailed answer carries an AuthenticationErrorDetail with the
    signature and the string the server signed; the planted secret in it (and in a SAS `sig=`
    of a URL) stands for any echo of what the client holds. Cloud Storage's 401 the same."""
    landed(store, landing)
    secret = store.secrets[0]
    code, status = (("AuthenticationFailed", 403) if store.scheme == "az"
                    else ("AuthenticationRequired", 401))
    store.fake.clear()
    store.fake.fail("get", status, code, times=None,
                    echo={"AuthenticationErrorDetail": f"Bearer {secret} ?sv=1&amp;sig={secret}",
                          "Key": secret})
    try:
        text = _cli_error(tmp_path, store, store.url("landing"))
    finally:
        store.fake.clear()
    check = ("AZURE_STORAGE_ACCOUNT_KEY / AZURE_STORAGE_SAS_TOKEN / AZURE_CLIENT_ID and "
             "AZURE_CLIENT_SECRET (or the managed identity)" if store.scheme == "az" else
             "GOOGLE_APPLICATION_CREDENTIALS / GOOGLE_SERVICE_ACCOUNT (or the workload "
             "identity)")
    assert text.startswith(f"error: getting {store.url('landing')}/")
    assert text.endswith(f"failed: the store refused the credentials ({code}): check {check} "
                         f"in the environment")


def test_the_emulator_switch_reaches_azurite(tmp_path, azure, monkeypatch):
    """AZURE_STORAGE_USE_EMULATOR=true (docs/reference.md): the client takes Azurite's URL from
    AZURITE_BLOB_STORAGE_URL (its default http://127.0.0.1:10000) and the account from the
    environment, over plain HTTP, with no endpoint given."""
    azure.fake.put(BUCKET, "emulator/a.json", b"{}")
    monkeypatch.delenv("AZURE_STORAGE_ENDPOINT")
    monkeypatch.setenv("AZURE_STORAGE_USE_EMULATOR", "true")
    monkeypatch.setenv("AZURITE_BLOB_STORAGE_URL", azure.fake.proxy.endpoint)
    azure.fake.clear()
    res = mirror.mirror(azure.url("emulator"), tmp_path)
    assert (res.listed, res.downloaded) == (1, 1)
    assert (res.folder / "a.json").read_bytes() == b"{}"
    assert azure.fake.count("get", 200) == 1  # through the proxy: the URL given


def test_the_client_text_is_scrubbed_of_every_credential(monkeypatch):
    """What `_scrub` blanks: each variable's value (a service account key's private key and
    its lines too), a SAS signature in a URL and an Authorization header's value whatever
    their source."""
    pem = ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw\n"
           "ggSjAgEAAoIBAQC7VJTUt9Us8cKjMzEfYyjiW\n-----END PRIVATE KEY-----\n")
    monkeypatch.setenv("GOOGLE_SERVICE_ACCOUNT_KEY",
                       '{"type": "service_account", "private_key_id": "0123456789abcdef", '
                       '"private_key": ' + repr(pem).replace("'", '"') + "}")
    monkeypatch.setenv("AZURE_CLIENT_SECRET", "planted~client~secret")
    text = mirror._scrub(
        "GET https://a.blob.core.windows.net/c?comp=list&sv=2022-11-02&sig=abc%2Bdef&se=x "
        "Authorization: Bearer eyJhbGciOi.J9.sig SharedKey acct:c2lnbmF0dXJl= "
        "key 0123456789abcdef line ggSjAgEAAoIBAQC7VJTUt9Us8cKjMzEfYyjiW planted~client~secret")
    assert text == ("GET https://a.blob.core.windows.net/c?comp=list&sv=2022-11-02&sig=***&se=x "
                    "Authorization: Bearer *** SharedKey acct:*** key *** line *** ***")


def test_an_azure_input_without_an_account_says_which_variable(tmp_path, monkeypatch):
    """The account is not in an az:// URL: without AZURE_STORAGE_ACCOUNT_NAME the client
    refuses to build a store ("Account must be specified"), before any request."""
    for var in [v for v in os.environ if v.startswith("AZURE_")]:
        monkeypatch.delenv(var)
    with pytest.raises(mirror.ObjectStoreError) as e:
        mirror.mirror("az://recon-landing/landing", tmp_path)
    assert str(e.value) == ("listing az://recon-landing/landing/ failed: no storage account: set "
                            "AZURE_STORAGE_ACCOUNT_NAME in the environment (an az:// URL names "
                            "a container, not its account)")


@pytest.mark.parametrize("url, said", [
    ("az://c/p?sv=2022-11-02&sig=abc", "an az:// URL names a container and a prefix only: "
     "credentials come from the environment (AZURE_STORAGE_ACCOUNT_NAME, "
     "AZURE_STORAGE_ACCOUNT_KEY, ...)"),
    ("gs://user:token@b/p", "a gs:// URL names a bucket and a prefix only: credentials come "
     "from the environment (GOOGLE_APPLICATION_CREDENTIALS, GOOGLE_SERVICE_ACCOUNT, ...)"),
    ("abfss://fs@acct.dfs.core.windows.net/p", "abfss:// is not supported as input: give a "
     "local folder, s3://BUCKET/PREFIX (an S3-compatible store: AWS_ENDPOINT_URL), "
     "gs://BUCKET/PREFIX or az://CONTAINER/PREFIX"),
    ("az:///landing", "'az:///landing' names no container: give az://CONTAINER/PREFIX"),
])
def test_a_url_with_credentials_or_without_a_container_is_refused_before_any_request(
        tmp_path, url, said):
    out = CliRunner().invoke(app, ["run", "--input", url, "--db", str(tmp_path / "w.duckdb")])
    assert out.exit_code == 2
    assert " ".join(out.output.split()) == f"error: {said}"
    assert not (tmp_path / "w.duckdb").exists()
