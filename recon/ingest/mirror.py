"""A landing area in an object store as a local folder: mirror `s3://BUCKET/PREFIX` (S3 or an
S3-compatible store), `gs://BUCKET/PREFIX` (Google Cloud Storage) or `az://CONTAINER/PREFIX`
(Azure Blob Storage) into a cache folder, then land that folder with `load_folder` as any other.

Landing's rules (recognition by content, quarantine with file/line/reason, unchanged files not
read again, idempotent reruns) live in `load_folder` and hold here unchanged because the mirror
only decides which objects to download: an object whose ETag and size are those of the last
mirror (the manifest `.recon-mirror.json` in the cache folder) and whose cached copy is still
there is not downloaded again. The loader names each file by its object's URL
(`load_folder(..., source_root=url)`), so `raw.files`, `raw.quarantine` and `recon quarantine`
show `s3://BUCKET/PREFIX/k8s/...` (or the gs:// or az:// URL), never the cache path. The cache
folder of an S3 prefix is `CACHE/BUCKET/PREFIX`; of the others `CACHE/gs/BUCKET/PREFIX` and
`CACHE/az/CONTAINER/PREFIX`, which no S3 bucket's can be (a bucket name has 3 characters at
least), so a bucket of one name in two stores never shares a folder.

A cached copy's mtime is its object's LastModified plus a sub-millisecond offset taken from its
ETag: the loader skips a file by (size, mtime), and an object rewritten within the same second
with the same size (LastModified has whole seconds) must still differ, or the loader would not
read the new content. The settle time (`--settle`) reads the same mtime: an object written
less than that long ago waits for a later run.

An object gone from the store is removed from the cache (a stale `recon.toml` or bill must not
go on being read) and named in `MirrorResult.removed`; what it landed stays in the warehouse, as
for a file removed from a local landing folder.

Credentials come from the environment only, through obstore's (object_store's) standard chain
for each store: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, AWS_REGION,
AWS_ENDPOINT_URL, a web identity or the instance metadata (S3); GOOGLE_APPLICATION_CREDENTIALS,
GOOGLE_SERVICE_ACCOUNT(_KEY), GOOGLE_BEARER_TOKEN or the metadata server, GOOGLE_BASE_URL (GCS);
AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY, a SAS token, a service principal
(AZURE_CLIENT_ID / AZURE_CLIENT_SECRET / AZURE_TENANT_ID), a workload or managed identity,
AZURE_STORAGE_ENDPOINT (Azure). No message of this module carries them: errors name the bucket
(container), the prefix or object, the store's error code and HTTP status, and any credential
value found in the client's text is blanked out first (`_scrub`).
"""

from __future__ import annotations

import bisect
import json
import logging
import os
import re
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

log = logging.getLogger(__name__)

SCHEMES = ("s3://", "gs://", "az://")
MANIFEST = ".recon-mirror.json"
CACHE_DIR = "landing-cache"  # beside the warehouse, unless `recon run --cache` says otherwise
# object_store retries 5xx answers (S3's 503 SlowDown among them), dropped connections and
# timeouts of reads, with exponential backoff and jitter: 0.2 s doubling up to 20 s, at most 8
# retries within 120 s (its defaults: 0.1 s, 15 s, 10 retries, 180 s). A run that still fails
# after that is a failed run; the next run downloads only what is missing.
RETRY = {"max_retries": 8, "retry_timeout": timedelta(seconds=120),
         "backoff": {"init_backoff": timedelta(milliseconds=200),
                     "max_backoff": timedelta(seconds=20), "base": 2}}
DOWNLOADS = 8  # GETs at once: each is mostly waiting on the network
# the variables obstore reads that hold a secret (its AmazonS3Config, GCSConfig, AzureConfig)
CREDENTIAL_VARS = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
                   "AWS_ACCESS_KEY_ID",
                   "GOOGLE_BEARER_TOKEN", "GOOGLE_SERVICE_ACCOUNT_KEY",
                   "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY",
                   "AZURE_STORAGE_MASTER_KEY", "AZURE_STORAGE_CLIENT_SECRET",
                   "AZURE_CLIENT_SECRET", "AZURE_STORAGE_SAS_KEY", "AZURE_STORAGE_SAS_TOKEN",
                   "AZURE_STORAGE_TOKEN", "AZURE_ENCRYPTION_KEY", "AZURE_FABRIC_SESSION_TOKEN")
# the secrets inside a service account key given as JSON (GOOGLE_SERVICE_ACCOUNT_KEY)
KEY_FIELDS = ("private_key", "private_key_id", "client_secret", "refresh_token")
# a credential in a request's text whatever its variable: a SAS token's signature (`sig=` in the
# URL obstore names), an Authorization header's value
CREDENTIAL_PATTERNS = (re.compile(r"(?i)([?&]sig=)[^&\s\"'<>]+"),
                       re.compile(r"(?i)(\bBearer\s+)[A-Za-z0-9._~+/=-]+"),
                       re.compile(r"(\bSharedKey(?:Lite)?\s+[^:\s]+:)[A-Za-z0-9+/=]+"))
ENDPOINT_VARS = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")
GCS_ENDPOINT_VARS = ("GOOGLE_BASE_URL",)
AZURE_ENDPOINT_VARS = ("AZURE_STORAGE_ENDPOINT", "AZURE_ENDPOINT")


@dataclass(frozen=True)
class Provider:
    """What an error sentence says of one store: its name for a bucket, the error codes that
    mean the bucket is missing, the credentials refused or the access denied (each store's
    error reference), what to check, and the permission each request needs."""

    bucket: str  # "bucket" or "container"
    missing: tuple[str, ...]
    refused: tuple[str, ...]
    denied: tuple[str, ...]
    where: str  # what to check when the bucket is missing
    credentials: str  # what to check when the credentials are refused
    permission: dict[str, str]  # doing -> the permission, "{bucket}" filled in


PROVIDERS = {
    # Amazon S3 API Reference, "Error responses"
    "s3": Provider("bucket", ("NoSuchBucket",),
                   ("InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken"),
                   ("AccessDenied",),
                   "(or is in another account or region): check the URL, AWS_REGION and "
                   "AWS_ENDPOINT_URL",
                   "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or the role)",
                   {"listing": "s3:ListBucket on {bucket}", "getting": "s3:GetObject on {bucket}",
                    "writing": "s3:PutObject on {bucket}"}),
    # Cloud Storage, "HTTP status and error codes for XML" (obstore speaks the XML API);
    # credentials it does not take are "a 401 unauthorized error" (its "XML API methods"),
    # which `_store_error` reads for every store
    "gs": Provider("bucket", ("NoSuchBucket",), ("AuthenticationRequired",), ("AccessDenied",),
                   "(or the credentials' project cannot see it): check the URL and "
                   "GOOGLE_BASE_URL",
                   "GOOGLE_APPLICATION_CREDENTIALS / GOOGLE_SERVICE_ACCOUNT (or the workload "
                   "identity)",
                   {"listing": "storage.objects.list on {bucket}",
                    "getting": "storage.objects.get on {bucket}",
                    "writing": "storage.objects.create on {bucket}"}),
    # Azure Storage, "Common REST API error codes" and "Blob Storage error codes"
    "az": Provider("container", ("ContainerNotFound",),
                   ("AuthenticationFailed", "InvalidAuthenticationInfo",
                    "NoAuthenticationInformation"),
                   ("AuthorizationFailure", "AuthorizationPermissionMismatch",
                    "AuthorizationResourceTypeMismatch", "InsufficientAccountPermissions"),
                   "(or is in another storage account): check the URL, "
                   "AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ENDPOINT",
                   "AZURE_STORAGE_ACCOUNT_KEY / AZURE_STORAGE_SAS_TOKEN / AZURE_CLIENT_ID and "
                   "AZURE_CLIENT_SECRET (or the managed identity)",
                   {"listing": "Storage Blob Data Reader on {bucket}",
                    "getting": "Storage Blob Data Reader on {bucket}",
                    "writing": "Storage Blob Data Contributor on {bucket}"}),
}


class ObjectStoreError(RuntimeError):
    """The store refused or failed a LIST or GET after the client's retries: the message names
    the bucket (container) and prefix (or object) and the store's error, never a credential."""


@dataclass
class MirrorResult:
    url: str  # s3://BUCKET/PREFIX (gs://, az://), normalised: the prefix ends with "/" (or is empty)
    folder: Path  # the cache folder holding the objects, landed by load_folder
    listed: int = 0
    downloaded: int = 0
    downloaded_bytes: int = 0
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)  # keys gone from the store
    refused: list[str] = field(default_factory=list)  # keys with no safe local path

    def summary(self) -> str:
        out = (f"{self.url}: {self.listed} object(s) listed, {self.downloaded} downloaded "
               f"({self.downloaded_bytes / 1e6:.1f} MB), {self.unchanged} unchanged")
        if self.removed:
            out += (f", {len(self.removed)} gone from the store and removed from the cache "
                    f"(what they landed stays): {', '.join(self.removed[:5])}"
                    + (" …" if len(self.removed) > 5 else ""))
        if self.refused:
            out += (f", {len(self.refused)} not mirrored (no local path: a key with a backslash "
                    f"or NUL, named as the mirror's manifest, or that is also a folder of other "
                    f"keys): {', '.join(self.refused[:5])}")
        return out


def is_remote(location) -> bool:
    """Is `location` a URL (`s3://`, `gs://`, `az://`, or one `parse_url` refuses: `abfs://`,
    `hdfs://`, ...) rather than a local folder? (A local folder named `gs:` would be read as
    the path `gs:/b`.)"""
    return isinstance(location, str) and re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", location) is not None


# what a URL of each scheme names, and where its credentials come from instead
NAMES = {"s3": ("s3://BUCKET/PREFIX", "a bucket",
                "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ..."),
         "gs": ("gs://BUCKET/PREFIX", "a bucket",
                "GOOGLE_APPLICATION_CREDENTIALS, GOOGLE_SERVICE_ACCOUNT, ..."),
         "az": ("az://CONTAINER/PREFIX", "a container",
                "AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY, ...")}


def parse_location(url: str) -> tuple[str, str, str]:
    """(scheme, bucket, prefix) of `s3://BUCKET/PREFIX`, `gs://BUCKET/PREFIX` or
    `az://CONTAINER/PREFIX` (the storage account comes from the environment:
    AZURE_STORAGE_ACCOUNT_NAME); the prefix is a folder: it ends with "/" unless empty, so
    `s3://b/landing` does not also take `s3://b/landing-old/`."""
    if not url.lower().startswith(SCHEMES):
        raise ValueError(f"{url.split('://')[0]}:// is not supported as input: give a local "
                         f"folder, s3://BUCKET/PREFIX (an S3-compatible store: AWS_ENDPOINT_URL), "
                         f"gs://BUCKET/PREFIX or az://CONTAINER/PREFIX")
    scheme = url[:2].lower()
    form, names, env = NAMES[scheme]
    rest = url[5:]
    bucket, _, prefix = rest.partition("/")
    if "@" in bucket or ":" in bucket or "?" in url:
        # s3://KEY:SECRET@bucket, az://c/p?sv=..&sig=..: the URL is stored and shown, so it
        # carries no credential
        raise ValueError(f"a{'n' if scheme in ('s3', 'az') else ''} {scheme}:// URL names "
                         f"{names} and a prefix only: credentials come from the environment "
                         f"({env})")
    if not bucket:
        raise ValueError(f"{url!r} names no {names.split()[1]}: give {form}")
    prefix = prefix.strip("/")
    return scheme, bucket, prefix + "/" if prefix else ""


def parse_url(url: str) -> tuple[str, str]:
    """(bucket, prefix) of a URL `parse_location` takes."""
    return parse_location(url)[1:]


def normalised(url: str) -> str:
    """`url` as messages and the warehouse show it: lower-case scheme, prefix ending in "/"."""
    scheme, bucket, prefix = parse_location(url)
    return f"{scheme}://{bucket}/{prefix}"


def cache_folder(url: str, cache_root: str | Path) -> Path:
    scheme, bucket, prefix = parse_location(url)
    root = Path(cache_root) if scheme == "s3" else Path(cache_root) / scheme
    return root / bucket / prefix


def default_cache_root(db) -> Path:
    """`landing-cache` beside the warehouse (`data/` for an in-memory one)."""
    if db is None or str(db) == ":memory:":
        return Path("data") / CACHE_DIR
    return Path(db).parent / CACHE_DIR


def _secrets() -> list[str]:
    """The credential values of the environment, longest first (one may hold another)."""
    values = []
    for var in CREDENTIAL_VARS:
        value = os.environ.get(var)
        if not value:
            continue
        values.append(value)
        if var == "GOOGLE_SERVICE_ACCOUNT_KEY":
            try:
                key = json.loads(value)
            except ValueError:
                key = None
            if isinstance(key, dict):
                values += [str(key[f]) for f in KEY_FIELDS if key.get(f)]
                # a PEM key's lines, each of which a message could hold on its own
                values += [ln for ln in str(key.get("private_key", "")).splitlines()
                           if len(ln) >= 16 and not ln.startswith("-----")]
    return sorted({v for v in values if len(v) >= 4}, key=len, reverse=True)


def _scrub(text: str) -> str:
    """`text` without any credential value of the environment (the client's messages hold the
    request's URL and the server's answer; a server could echo what it was sent), and without a
    SAS signature or an Authorization header's value whatever their source."""
    for value in _secrets():
        text = text.replace(value, "***")
    for pattern in CREDENTIAL_PATTERNS:
        text = pattern.sub(r"\1***", text)
    return text


def _endpoint(variables=ENDPOINT_VARS) -> str | None:
    return next((os.environ[v] for v in variables if os.environ.get(v)), None)


def _http(variables) -> dict:
    """obstore's client options: an `http://` endpoint (MinIO, an emulator, a store inside the
    network) is allowed as given; any other is HTTPS only."""
    return {"allow_http": True} if (_endpoint(variables) or "").lower().startswith("http://") else {}


def open_store(bucket: str, prefix: str, scheme: str = "s3"):
    """An obstore store on `bucket`/`prefix` (S3Store, GCSStore or AzureStore by `scheme`),
    configured by the environment."""
    from obstore.store import AzureStore, GCSStore, S3Store

    prefix = prefix or None
    if scheme == "gs":
        return GCSStore(bucket, prefix=prefix, client_options=_http(GCS_ENDPOINT_VARS),
                        retry_config=RETRY)
    if scheme == "az":
        # (AZURE_STORAGE_USE_EMULATOR: the client allows Azurite's http:// URL by itself)
        return AzureStore(bucket, prefix=prefix, client_options=_http(AZURE_ENDPOINT_VARS),
                          retry_config=RETRY)
    return S3Store(bucket, prefix=prefix, client_options=_http(ENDPOINT_VARS),
                   retry_config=RETRY)


# what a request was doing, as the sentence says it
VERBS = {"listing": "list", "getting": "get", "writing": "put"}


def _store_error(e: Exception, doing: str, url: str) -> ObjectStoreError:
    """One sentence for a failed LIST, GET or PUT (`recon publish`): what was asked, the store's
    error code and status (from the client's text), what to check. The client's text itself is
    not repeated (it holds request URLs and signatures); only its first line, scrubbed, when
    nothing is known."""
    text = _scrub(str(e))
    code = m.group(1) if (m := re.search(r"<Code>([A-Za-z]+)</Code>", text)) else None
    status = m.group(1) if (m := re.search(r"status code: (\d{3})", text)) else None
    retries = m.group(1) if (m := re.search(r"retries: (\d+)", text)) else None
    scheme, bucket, _ = parse_location(url)
    p = PROVIDERS[scheme]
    name = type(e).__name__
    if code in p.missing or (name == "FileNotFoundError" and doing == "listing"):
        why = f"{p.bucket} {bucket!r} does not exist {p.where}"
    elif code in p.refused or status == "401" or name == "UnauthenticatedError":
        why = (f"the store refused the credentials ({code or 'unauthenticated'}): check "
               f"{p.credentials} in the environment")
    elif code in p.denied or status == "403" or name in ("PermissionDeniedError",
                                                         "PermissionError"):
        permission = p.permission.get(doing, p.permission["getting"]).format(bucket=bucket)
        why = (f"access denied ({code or 'AccessDenied'}, HTTP {status or 403}): the "
               f"credentials in the environment may not {VERBS.get(doing, 'get')} it "
               f"({permission})")
    elif scheme == "az" and "Account must be specified" in text:  # the client's, before any request
        why = ("no storage account: set AZURE_STORAGE_ACCOUNT_NAME in the environment (an az:// "
               "URL names a container, not its account)")
    elif name == "InvalidPathError":
        key = m.group(1) if (m := re.search(r'Path "([^"]*)"', text)) else "a key"
        why = (f"the object store client cannot list the prefix: {key!r} has a '.', '..' or empty "
               f"part (such as a//b), which it refuses as a path; rename that object, or give "
               f"a prefix without it")
    elif code or status:
        why = f"{code or 'error'} (HTTP {status or '?'})" + (
            f" after {retries} retries" if retries else "")
    else:
        why = f"{name}: {text.splitlines()[0][:300] if text else ''}"
    return ObjectStoreError(f"{doing} {url} failed: {why}")


def _etag(meta: dict) -> str | None:
    """The ETag without its quotes: a listing may give it bare where the GET's header quotes
    it (an HTTP entity tag); Azure's List Blobs and Get Blob do, and so does fake-gcs-server's
    XML listing, while S3 quotes both."""
    tag = meta.get("e_tag")
    return tag.strip('"') if isinstance(tag, str) else tag


def _mtime_ns(meta: dict) -> int:
    """LastModified in ns, plus < 1 ms from the ETag (module docstring)."""
    seconds = int(meta["last_modified"].timestamp() * 1e6) * 1000
    return seconds + zlib.crc32(str(_etag(meta) or "").encode()) % 1_000_000


def _safe_rel(key: str) -> str | None:
    """The key as a relative path inside the cache folder, or None: a key with an empty, "." or
    ".." part (S3 allows them) must not write outside the folder or onto another key's file,
    and a backslash or NUL is no part of a POSIX name. (obstore already refuses to list a
    prefix holding the first kind: `_store_error` says which key.)"""
    parts = key.split("/")
    if any(p in ("", ".", "..") for p in parts) or "\\" in key or "\0" in key:
        return None
    return "/".join(parts)


def _load_manifest(folder: Path, url: str) -> dict[str, dict]:
    try:
        data = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return data.get("objects", {}) if data.get("url") == url else {}


def _save_manifest(folder: Path, url: str, objects: dict[str, dict]) -> None:
    tmp = folder / (MANIFEST + ".part")
    tmp.write_text(json.dumps({"url": url, "objects": objects}, sort_keys=True, indent=0))
    os.replace(tmp, folder / MANIFEST)


class _Remote(Exception):
    """What the client raised during a GET (`gone`: the key was not found), told apart from a
    local failure (a full disk) that is raised as it is."""

    def __init__(self, error: Exception):
        super().__init__(error)
        self.error = error
        self.gone = isinstance(error, FileNotFoundError)  # obstore's NotFound


def _download(store, key: str, dest: Path) -> dict:
    """GET `key` into `dest` (through a hidden part file: a killed run leaves no half object
    that the loader would read); the object's metadata as the GET returned it."""
    import obstore

    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(f".{dest.name}.part")
    try:
        res = obstore.get(store, key)
        meta = dict(res.meta)
        chunks = iter(res)
    except Exception as e:  # noqa: BLE001 - the client's: told apart from local ones
        raise _Remote(e) from None
    with open(part, "wb") as f:
        while True:
            try:
                chunk = next(chunks, None)
            except Exception as e:  # noqa: BLE001 - the body's read failed, after retries
                raise _Remote(e) from None
            if chunk is None:
                break
            f.write(chunk)
    mtime = _mtime_ns(meta)
    os.utime(part, ns=(mtime, mtime))
    os.replace(part, dest)
    return meta


def mirror(url: str, cache_root: str | Path,
           progress: Callable[[int, int, str], None] | None = None, store=None) -> MirrorResult:
    """Bring the cache folder of `url` up to date with the store; `progress(i, n, key)` as each
    download ends. `store`: an obstore store to use instead of one from the environment."""
    import obstore

    scheme, bucket, prefix = parse_location(url)
    url = normalised(url)
    folder = cache_folder(url, cache_root)
    folder.mkdir(parents=True, exist_ok=True)
    res = MirrorResult(url=url, folder=folder)
    try:
        store = store if store is not None else open_store(bucket, prefix, scheme)
        listed = [m for batch in obstore.list(store) for m in batch]
    except Exception as e:  # noqa: BLE001 - the client's errors (configuration, HTTP): one
        raise _store_error(e, "listing", url) from None  # sentence, no traceback of theirs
    objects = {m["path"]: m for m in listed if not m["path"].endswith("/")}  # no folder markers
    if not objects:
        raise ObjectStoreError(f"{url} holds no objects: check the prefix")
    res.listed = len(objects)
    had = _load_manifest(folder, url)
    kept: dict[str, dict] = {}
    todo: list[str] = []
    keys = sorted(objects)
    for key in keys:
        meta = objects[key]
        rel = _safe_rel(key)
        # S3 may hold both `a` and `a/b`: a file and a folder of one name, which no local
        # folder can (the first key at or after "a/" in order starts with it)
        at = bisect.bisect_left(keys, key + "/")
        if (rel is None or rel == MANIFEST
                or (at < len(keys) and keys[at].startswith(key + "/"))):
            res.refused.append(key)
            continue
        old = had.get(key)
        local = folder / rel
        if (old is not None and _etag(old) == _etag(meta) and old["size"] == meta["size"]
                and local.is_file() and local.stat().st_size == meta["size"]):
            kept[key] = old
            res.unchanged += 1
        else:
            todo.append(key)
    for key in sorted(set(had) - set(objects)):
        rel = _safe_rel(key)
        if rel is not None:
            (folder / rel).unlink(missing_ok=True)
        res.removed.append(key)
    if res.refused:
        log.warning("%s", _scrub(res.summary()))
    failed: Exception | None = None
    try:
        with ThreadPoolExecutor(max_workers=DOWNLOADS, thread_name_prefix="recon-get") as pool:
            futures = {pool.submit(_download, store, k, folder / k): k for k in todo}
            for i, fut in enumerate(as_completed(futures)):
                key = futures[fut]
                try:
                    meta = fut.result()
                except _Remote as e:
                    if e.gone:  # deleted since the listing: gone, as if not listed
                        (folder / key).unlink(missing_ok=True)
                        res.removed.append(key)
                    else:  # the first failure is the run's error; a local one (a full
                        # disk) is raised as it is, once the manifest is saved
                        failed = failed or _store_error(e.error, "getting", url + key)
                    continue
                kept[key] = {"e_tag": _etag(meta), "size": meta["size"],
                             "last_modified": meta["last_modified"].isoformat()}
                res.downloaded += 1
                res.downloaded_bytes += meta["size"]
                if progress:
                    progress(i + 1, len(todo), key)
    finally:  # what was downloaded is not downloaded again, even by a run that failed here
        _save_manifest(folder, url, kept)
    if failed is not None:
        raise failed
    log.info("%s", res.summary())
    return res
