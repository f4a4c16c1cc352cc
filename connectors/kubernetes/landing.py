"""The landing area: newline-delimited JSON files, the resume state and the dedupe LRU.

Layout (a contract with the daily loader)::

    <landing>/k8s/cluster=<name>/hour=YYYY-MM-DDTHH/<resource>-<pid>-<seq>.jsonl
    <landing>/k8s/state/<cluster>.json

One line per object version::

    {"type": "ADDED"|"MODIFIED"|"DELETED", "object": {...}, "cluster": "<name>",
     "seenAt": "2026-06-01T12:00:03.123456Z"}

Files keep their final ``.jsonl`` name while being written. Every line is written with a
single ``write(2)`` on an unbuffered ``O_APPEND`` descriptor, so a concurrent reader sees
only complete lines, except possibly one trailing partial line (which the daily reader
quarantines as a "truncated last line" until the file, complete, is landed again; the daily
flow's ``settle_seconds`` leaves files still being written for a later run). A write that
fails part-way (disk full) is cut off again before the row is retried, so a retried row never
lands glued to the fragment. A file is created with ``O_EXCL`` and never reopened, so a
restarted collector (same pid, e.g. pid 1 in a container) never appends to a file a crashed
one left behind.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import orjson

from ..pod_secrets import may_hold_secrets, redact_secrets
from . import settings

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


def cluster_dir(landing_dir: str | os.PathLike, cluster: str) -> Path:
    return Path(landing_dir) / settings.LANDING_SUBDIR / f"cluster={cluster}"


def state_path(landing_dir: str | os.PathLike, cluster: str) -> Path:
    return Path(landing_dir) / settings.LANDING_SUBDIR / settings.STATE_SUBDIR / f"{cluster}.json"


def version_key(obj: dict) -> str | None:
    """Identity of an object version: ``uid/resourceVersion`` (None if it has no version)."""
    meta = obj.get("metadata") or {}
    rv = meta.get("resourceVersion")
    if not rv:
        return None
    uid = meta.get("uid") or f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    return f"{uid}/{rv}"


class DedupeLRU:
    """Bounded least-recently-used set of version keys (memory stays flat over days)."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._keys: OrderedDict[str, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def check_and_add(self, key: str) -> bool:
        """True if ``key`` is new (and remember it); False if already seen (refreshed)."""
        if key in self._keys:
            self._keys.move_to_end(key)
            return False
        self._keys[key] = None
        if len(self._keys) > self.maxsize:
            self._keys.popitem(last=False)
        return True


class LandingWriter:
    """Append rows of one (cluster, resource) to hourly, size-capped files."""

    def __init__(
        self,
        landing_dir: str | os.PathLike,
        cluster: str,
        resource: str,
        *,
        max_file_bytes: int = settings.DEFAULT_MAX_FILE_BYTES,
        fsync: bool = True,
        clock: Clock = utcnow,
    ) -> None:
        self.base = cluster_dir(landing_dir, cluster)
        self.cluster, self.resource = cluster, resource
        self.max_file_bytes, self.fsync, self.clock = max_file_bytes, fsync, clock
        self.pid = os.getpid()
        self.path: Path | None = None
        self._fd: int | None = None
        self._hour: str | None = None
        self._size = 0
        self._seq = 0
        self._dirty = False

    def write(self, event_type: str, obj: dict) -> int:
        """Write one row; returns the number of bytes written. Env values, registry
        credentials and the last-applied manifest of a pod spec are landed as fingerprints
        (``connectors/pod_secrets.py``): they never reach the landing area."""
        now = self.clock().astimezone(UTC)
        row = {
            "type": event_type,
            "object": obj,
            "cluster": self.cluster,
            "seenAt": now.strftime(settings.SEEN_AT_FORMAT),
        }
        line = orjson.dumps(row)
        if may_hold_secrets(line):  # most objects (events, nodes) hold none: no second pass
            row["object"] = redact_secrets(obj)
            line = orjson.dumps(row)
        line += b"\n"
        hour = now.strftime(settings.HOUR_FORMAT)
        if (
            self._fd is None
            or hour != self._hour
            or (self._size > 0 and self._size + len(line) > self.max_file_bytes)
        ):
            self._open(hour)
        assert self._fd is not None
        view = memoryview(line)
        try:
            while view:  # one write(2) in practice; loop only on a short write
                view = view[os.write(self._fd, view) :]
        except BaseException:
            self._drop_partial_row()  # part of the row may be in the file (disk full mid-row)
            raise
        self._size += len(line)
        self._dirty = True
        return len(line)

    def _drop_partial_row(self) -> None:
        """Cut the file back to its last complete line after a write that failed part-way.

        The caller retries the row (the collector replays from its saved state); appended to
        the fragment it would make one garbled line that the daily reader quarantines, and
        that version would be lost. If the file cannot be cut, it is given up instead: the
        fragment stays as its trailing partial line (the reader reports a truncated last line;
        the row itself lands whole with the retry) and the next row opens a new file."""
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, self._size)
        except OSError as exc:
            log.warning("%s: cannot cut a partial row (%s); starting a new file", self.path, exc)
            fd, self._fd = self._fd, None
            try:
                if self._dirty and self.fsync:  # the next state save only syncs the new file
                    os.fsync(fd)
                self._dirty = False
            finally:
                os.close(fd)

    def _open(self, hour: str) -> None:
        self.close()
        directory = self.base / f"hour={hour}"
        directory.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        while True:
            path = directory / f"{self.resource}-{self.pid}-{self._seq}{settings.FILE_SUFFIX}"
            self._seq += 1
            try:
                self._fd = os.open(path, flags, 0o644)
                break
            except FileExistsError:
                continue
        self.path, self._hour, self._size = path, hour, 0
        log.debug("landing file %s", path)

    def sync(self) -> None:
        """Make written rows durable (before a state that covers them is saved)."""
        if self._fd is not None and self._dirty and self.fsync:
            os.fsync(self._fd)
        self._dirty = False

    def close(self) -> None:
        if self._fd is not None:
            self.sync()
            os.close(self._fd)
            self._fd = None


class StateStore:
    """resourceVersions per resource of one cluster, saved atomically (temp + rename)."""

    def __init__(self, landing_dir: str | os.PathLike, cluster: str, clock: Clock = utcnow) -> None:
        self.path = state_path(landing_dir, cluster)
        self.cluster, self.clock = cluster, clock
        self._lock = threading.Lock()
        self._versions: dict[str, dict] = {}
        self.load()

    def load(self) -> dict[str, str]:
        try:
            data = orjson.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, orjson.JSONDecodeError) as exc:
            log.warning("ignoring unreadable state file %s: %s", self.path, exc)
            return {}
        resources = data.get("resources") or {}
        with self._lock:
            self._versions = {
                name: entry for name, entry in resources.items() if entry.get("resourceVersion")
            }
        return self.versions()

    def versions(self) -> dict[str, str]:
        with self._lock:
            return {name: entry["resourceVersion"] for name, entry in self._versions.items()}

    def get(self, resource: str) -> str | None:
        with self._lock:
            entry = self._versions.get(resource)
            return entry["resourceVersion"] if entry else None

    def save(self, resource: str, resource_version: str) -> None:
        now = self.clock().astimezone(UTC).strftime(settings.SEEN_AT_FORMAT)
        with self._lock:
            self._versions[resource] = {"resourceVersion": resource_version, "savedAt": now}
            payload = orjson.dumps(
                {
                    "version": settings.STATE_FORMAT_VERSION,
                    "cluster": self.cluster,
                    "savedAt": now,
                    "resources": self._versions,
                },
                option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS,
            )
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(
                f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
            )
            with open(tmp, "wb") as fh:
                fh.write(payload)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
            try:
                dir_fd = os.open(self.path.parent, os.O_RDONLY)
            except OSError:
                return
            try:
                os.fsync(dir_fd)
            except OSError:
                pass
            finally:
                os.close(dir_fd)


def seed_from_landing(
    lru: DedupeLRU, landing_dir: str | os.PathLike, cluster: str, resource: str, budget_bytes: int
) -> int:
    """Remember versions already landed by an earlier process (the tails of the newest files
    of the last two hours), so a restart that replays a watch or relists writes no duplicate
    of what it wrote just before. Best effort: the daily loader still dedupes."""
    if budget_bytes <= 0:
        return 0
    base = cluster_dir(landing_dir, cluster)
    hours = sorted(p for p in base.glob("hour=*") if p.is_dir())[-2:]
    files: list[Path] = []
    for hour in hours:
        files.extend(
            sorted(
                hour.glob(f"{resource}-*{settings.FILE_SUFFIX}"), key=lambda p: p.stat().st_mtime
            )
        )
    chosen: list[tuple[Path, int]] = []
    remaining = budget_bytes
    for path in reversed(files):  # newest first, until the budget is used
        if remaining <= 0:
            break
        size = path.stat().st_size
        start = max(0, size - remaining)
        chosen.append((path, start))
        remaining -= size - start
    seeded = 0
    for path, start in reversed(chosen):  # oldest first: newest end up most recent
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read()
        lines = data.split(b"\n")
        lines.pop()  # "" after the last newline, or a trailing partial line
        if start > 0 and lines:
            lines.pop(0)  # the first line may be cut
        for line in lines:
            try:
                key = version_key(orjson.loads(line).get("object") or {})
            except (orjson.JSONDecodeError, AttributeError):
                continue
            if key:
                lru.check_and_add(key)
                seeded += 1
    return seeded
