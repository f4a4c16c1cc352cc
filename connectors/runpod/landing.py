"""Landing files: verbatim response body + one ``x_recon`` envelope key, written atomically,
never overwriting an earlier pull.

Layout (contract with the daily loader)::

    <landing>/runpod/<kind>/pulled=<YYYYmmddTHHMMSSZ>/<kind>_<start>_<end>.json      (billing)
    <landing>/runpod/inventory/pulled=<YYYYmmddTHHMMSSZ>/<kind>[_<endpointId>].json  (inventory)
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ..pod_secrets import may_hold_secrets, redact_secrets
from . import settings
from .http_client import RunpodError, log
from .windows import Now, resolve_now, stamp

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class LandingError(RunpodError):
    """A landing file could not be written (e.g. it already exists: files are never replaced)."""


@dataclass(frozen=True)
class LandedFile:
    kind: str
    endpoint: str
    path: Path
    params: dict[str, str]
    record_count: int = 0
    provisional_count: int = 0
    endpoint_id: str | None = None


@dataclass
class PullResult:
    """What one pull landed. ``given_up``: the calls it did not complete because a deadline
    passed (the request's or the pull's), each naming the call and why; their files are not
    landed, so a later pull fetches them (the trailing days are pulled again each day)."""

    pulled_at: datetime
    files: list[LandedFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    given_up: list[str] = field(default_factory=list)

    def by_kind(self, kind: str) -> list[LandedFile]:
        return [f for f in self.files if f.kind == kind]


def safe_id(value: str, what: str = "id") -> str:
    """Resource ids go into file names: refuse anything that is not a plain token."""
    if not isinstance(value, str) or not _ID_RE.match(value) or ".." in value:
        raise LandingError(f"unsafe {what} for a file name: {value!r}")
    return value


def runpod_root(landing_dir: str | os.PathLike[str]) -> Path:
    return Path(landing_dir) / settings.LANDING_PREFIX


def billing_path(
    landing_dir: str | os.PathLike[str], kind: str, pulled: str, start: datetime, end: datetime
) -> Path:
    return (
        runpod_root(landing_dir)
        / kind
        / settings.PULLED_DIR_FMT.format(stamp=pulled)
        / f"{kind}_{stamp(start)}_{stamp(end)}.json"
    )


def inventory_path(
    landing_dir: str | os.PathLike[str], kind: str, pulled: str, endpoint_id: str | None = None
) -> Path:
    name = kind if endpoint_id is None else f"{kind}_{safe_id(endpoint_id, 'endpoint id')}"
    return (
        runpod_root(landing_dir)
        / settings.INVENTORY_DIR
        / settings.PULLED_DIR_FMT.format(stamp=pulled)
        / f"{name}.json"
    )


def envelope(
    endpoint: str,
    pulled_at: str,
    params: dict[str, Any],
    endpoint_id: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    env: dict[str, Any] = {"endpoint": endpoint, "pulledAt": pulled_at, "params": dict(params)}
    if endpoint_id is not None:
        env["endpointId"] = endpoint_id
    env.update(extra)
    return env


def landing_bytes(raw: bytes | None, body: dict[str, Any], meta: dict[str, Any]) -> bytes:
    """The response body with ``x_recon`` added as first key.

    When the raw bytes are available they are kept byte for byte (numbers keep every digit the
    API sent); the result is re-parsed and checked before use, else it is re-serialised.
    A body with secret values (pods', endpoints' and templates' env, registry credentials) is
    re-serialised with fingerprints in their place (``connectors/pod_secrets.py``): the raw
    bytes of such a body are never landed.
    """
    if settings.ENVELOPE_KEY in body:
        raise LandingError(
            f"response already carries a top-level {settings.ENVELOPE_KEY!r} key;"
            " refusing to overwrite it"
        )
    if raw is None or may_hold_secrets(raw):  # (billing bodies hold none: no walk)
        clean = redact_secrets(body)
        if clean is not body:
            body, raw = clean, None
    head = orjson.dumps(meta)
    if raw is not None and body:
        text = raw.lstrip()
        if text.startswith(b"\xef\xbb\xbf"):
            text = text[3:].lstrip()
        if text.startswith(b"{"):
            out = b'{"' + settings.ENVELOPE_KEY.encode() + b'":' + head + b"," + text[1:]
            try:
                check = orjson.loads(out)
            except orjson.JSONDecodeError:
                check = None
            if isinstance(check, dict):
                got_meta = check.pop(settings.ENVELOPE_KEY, None)
                if got_meta == orjson.loads(head) and check == body:
                    return out
    return orjson.dumps({settings.ENVELOPE_KEY: meta, **body})


def write_new_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp file in the same folder, fsync, link/rename).
    Raises LandingError if ``path`` already exists: a landed file is never replaced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp_path: str | None = tmp
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)  # atomic and fails if the target exists
        except FileExistsError:
            raise LandingError(f"landing file already exists, not overwriting: {path}") from None
        except OSError:  # filesystem without hard links: check, then rename
            if path.exists():
                raise LandingError(
                    f"landing file already exists, not overwriting: {path}"
                ) from None
            os.rename(tmp, path)
            tmp_path = None
    finally:
        if tmp_path is not None:
            try:
                os.unlink(tmp_path)
            except FileNotFoundError:
                pass
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def choose_pull_time(
    now: Now, sleep: Callable[[float], None], targets: Callable[[str], Iterable[Path]]
) -> datetime:
    """Pick the pull timestamp (whole seconds, UTC) such that none of ``targets(stamp)`` exists
    yet: a re-pull within the same second waits for the next second instead of colliding."""
    for attempt in range(settings.MAX_STAMP_ATTEMPTS):
        t = resolve_now(now).replace(microsecond=0)
        taken = [p for p in targets(stamp(t)) if p.exists()]
        if not taken:
            return t
        log.info("landing path %s already exists; waiting for the next second", taken[0])
        if attempt + 1 < settings.MAX_STAMP_ATTEMPTS:
            sleep(1.0)
    raise LandingError(
        f"landing files for pull time {stamp(t)} already exist (e.g. {taken[0]}); "
        "refusing to overwrite an earlier pull"
    )
