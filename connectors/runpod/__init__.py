"""Runpod REST v2 connector: lands billing and inventory responses for daily reconciliation.

Shaped like a dlt verified source: the public ``pull_*`` / ``snapshot_*`` / ``record_*``
functions are here, the HTTP layer is :mod:`.http_client`, constants are in :mod:`.settings`,
file writing in :mod:`.landing` and time windows in :mod:`.windows`. See README.md.

Public API::

    pull_billing(landing_dir, start, end, *, chunk_days=7, kinds=BILLING_KINDS,
                 api_key=None, client=None, now=None) -> PullResult
    snapshot_inventory(landing_dir, *, api_key=None, client=None, now=None,
                       include_workers=True) -> PullResult
    snapshot_health(landing_dir, endpoint_id, health_json, *, now=None) -> LandedFile
    record_job_status(path, endpoint_id, status_json, submitted_at, completed_at) -> dict
    trailing_days(days, now=None, *, include_current_hour=True) -> (start, end)
    split_window(start, end, max_days=7) -> [(start, end), ...]
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from . import settings
from .http_client import (
    ApiResponse,
    RunpodAPIError,
    RunpodAuthError,
    RunpodClient,
    RunpodConfigError,
    RunpodDeadlineError,
    RunpodError,
    RunpodNotFoundError,
    RunpodRateLimitError,
    RunpodResponseError,
    RunpodTransportError,
    describe_call,
    log,
)
from .landing import (
    LandedFile,
    LandingError,
    PullResult,
    billing_path,
    choose_pull_time,
    envelope,
    inventory_path,
    landing_bytes,
    safe_id,
    write_new_file,
)
from .settings import BILLING_KINDS
from .windows import (
    Now,
    parse_rfc3339,
    rfc3339,
    rfc3339_ms,
    split_window,
    stamp,
    trailing_days,
    utc,
)

__all__ = [
    "BILLING_KINDS",
    "LandedFile",
    "LandingError",
    "PullResult",
    "RunpodAPIError",
    "RunpodAuthError",
    "RunpodClient",
    "RunpodConfigError",
    "RunpodDeadlineError",
    "RunpodError",
    "RunpodNotFoundError",
    "RunpodRateLimitError",
    "RunpodResponseError",
    "RunpodTransportError",
    "pull_billing",
    "record_job_status",
    "snapshot_health",
    "snapshot_inventory",
    "split_window",
    "trailing_days",
]


# ===================================================================== billing
def pull_billing(
    landing_dir: str | os.PathLike[str],
    start: datetime,
    end: datetime,
    *,
    chunk_days: float = settings.DEFAULT_CHUNK_DAYS,
    kinds: Iterable[str] = BILLING_KINDS,
    api_key: str | None = None,
    client: RunpodClient | None = None,
    now: Now = None,
) -> PullResult:
    """Pull hourly billing for [start, end) and land one file per response.

    ``start``/``end`` are snapped outward to whole hours (naive datetimes are UTC) and split
    into requests of at most ``chunk_days`` days. ``kinds`` is any subset of
    ``billing_pods``, ``billing_serverless``, ``billing_network_volumes``, ``billing_account``.
    Records whose bucket ends after the pull time are listed (by index into ``records``) in
    ``x_recon.provisionalRecordIndexes``: they are still in progress and not final.
    A later pull of the same window lands beside the earlier one (new ``pulled=`` folder).
    The pull ends by the client's ``pull_deadline``: a request cut by a deadline, and every
    request not made when the pull's deadline had passed, is listed in ``given_up`` (and
    logged) instead of raising; what was landed stays landed.
    """
    kinds = tuple(kinds)
    unknown = [k for k in kinds if k not in settings.BILLING_ENDPOINTS]
    if unknown or not kinds:
        raise ValueError(f"unknown billing kinds {unknown}; choose from {BILLING_KINDS}")
    windows = split_window(utc(start), utc(end), chunk_days)
    own = client is None
    client = client or RunpodClient(api_key)
    try:
        pulled_at = choose_pull_time(
            now,
            client.sleep,
            lambda st: [billing_path(landing_dir, k, st, s, e) for k in kinds for s, e in windows],
        )
        pulled = rfc3339(pulled_at)
        result = PullResult(pulled_at=pulled_at)
        deadline = client.monotonic() + client.pull_deadline
        for kind in kinds:
            endpoint = settings.BILLING_ENDPOINTS[kind]
            for w_start, w_end in windows:
                params = {
                    "startTime": rfc3339(w_start),
                    "endTime": rfc3339(w_end),
                    "bucketSize": settings.BILLING_BUCKET_SIZE,
                }
                window = (params["startTime"], params["endTime"])
                try:
                    resp, endpoint = _get_billing(
                        client, endpoint, params, window, result, deadline
                    )
                except RunpodDeadlineError as exc:
                    _give_up(result, str(exc))
                    continue
                records = _check_billing(kind, resp, window)
                provisional = [
                    i for i, rec in enumerate(records) if parse_rfc3339(rec["endTime"]) > pulled_at
                ]
                meta = envelope(resp.endpoint, pulled, params, provisionalRecordIndexes=provisional)
                path = billing_path(landing_dir, kind, stamp(pulled_at), w_start, w_end)
                write_new_file(path, landing_bytes(resp.raw, resp.body, meta))
                log.info(
                    "landed %s %s: %d records (%d provisional) -> %s",
                    kind,
                    describe_call(resp.endpoint, window),
                    len(records),
                    len(provisional),
                    path,
                )
                result.files.append(
                    LandedFile(kind, resp.endpoint, path, params, len(records), len(provisional))
                )
        return result
    finally:
        if own:
            client.close()


def _get_billing(
    client: RunpodClient,
    endpoint: str,
    params: dict[str, str],
    window: tuple[str, str],
    result: PullResult,
    deadline: float,
) -> tuple[ApiResponse, str]:
    """GET a billing endpoint; on 404 for network volumes, try the older spelling once and keep
    using it for the rest of the pull. Returns the response and the endpoint to use next."""
    if client.monotonic() >= deadline:
        raise RunpodDeadlineError(
            f"{describe_call(endpoint, window)}: not requested, the pull's deadline "
            f"({client.pull_deadline:g}s) had passed"
        )
    try:
        return client.get_json(endpoint, params, window=window, deadline=deadline), endpoint
    except RunpodNotFoundError:
        if endpoint != settings.BILLING_NETWORK_VOLUMES:
            raise
    legacy = settings.BILLING_NETWORK_VOLUMES_LEGACY
    msg = (
        f"{describe_call(endpoint, window)} answered 404; retrying once with the older "
        f"spelling {legacy}"
    )
    log.warning(msg)
    result.warnings.append(msg)
    try:
        return client.get_json(legacy, params, window=window, deadline=deadline), legacy
    except RunpodNotFoundError as exc:
        raise RunpodNotFoundError(
            f"{describe_call(endpoint, window)}: 404 on both {endpoint} and {legacy}",
            endpoint=endpoint,
            window=window,
            status=404,
            title=exc.title,
            detail=exc.detail,
        ) from None


def _give_up(result: PullResult, why: str) -> None:
    log.warning("runpod pull gave up: %s", why)
    result.given_up.append(why)


def _check_billing(kind: str, resp: ApiResponse, window: tuple[str, str]) -> list[dict]:
    """Required structure of a billing response; extra fields are tolerated (landed as is)."""
    what = describe_call(resp.endpoint, window)
    body = resp.body

    def fail(problem: str) -> RunpodResponseError:
        return RunpodResponseError(
            f"{what}: {problem}", endpoint=resp.endpoint, window=window, status=resp.status
        )

    for key in settings.BILLING_REQUIRED_TOP_LEVEL:
        if key not in body:
            raise fail(f"response lacks required field {key!r} (got keys {sorted(body)})")
    # Typed as the spec types them: the loader recognises a billing file only by a `records`
    # array beside a `metadata` object, so a null `metadata` landed as a success would have
    # every record of the window quarantined later.
    records = body["records"]
    if not isinstance(records, list):
        raise fail(f"'records' is {_json_type(records)}, expected an array")
    if not isinstance(body["metadata"], dict):
        raise fail(f"'metadata' is {_json_type(body['metadata'])}, expected an object")
    required = settings.BILLING_REQUIRED_RECORD_FIELDS[kind]
    missing_spec: set[str] = set()
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise fail(f"records[{i}] is {type(rec).__name__}, expected an object")
        missing = [k for k in required if rec.get(k) is None]
        if missing:
            raise fail(f"records[{i}] lacks required field(s) {missing}")
        for k in ("startTime", "endTime"):
            try:
                parse_rfc3339(str(rec[k]))
            except ValueError:
                raise fail(f"records[{i}].{k} is not an RFC 3339 time: {rec[k]!r}") from None
        missing_spec.update(k for k in settings.BILLING_SPEC_RECORD_FIELDS[kind] if k not in rec)
    if missing_spec:
        log.warning(
            "%s: records lack spec field(s) %s; landing them as received",
            what,
            sorted(missing_spec),
        )
    return records


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for error messages (``null``, not NoneType)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


# ===================================================================== inventory
def snapshot_inventory(
    landing_dir: str | os.PathLike[str],
    *,
    api_key: str | None = None,
    client: RunpodClient | None = None,
    now: Now = None,
    include_workers: bool = True,
) -> PullResult:
    """Land ``/v2/pods`` (includeClusterPods=false), ``/v2/serverless``, each endpoint's
    ``/v2/serverless/{id}/workers``, ``/v2/network-volumes`` and ``/v2/catalog/gpus`` (the
    list prices, ``gpu_catalog.json``) under one ``pulled=`` folder.

    An endpoint deleted between the listing and its workers call (404) is skipped with a
    warning (in ``PullResult.warnings``); a call cut by a deadline, or not made because the
    pull's deadline (``client.pull_deadline``) had passed, is listed in ``given_up``; every
    other error raises.
    """
    own = client is None
    client = client or RunpodClient(api_key)
    try:
        fixed = ("pods", "serverless", "network_volumes", "gpu_catalog")
        pulled_at = choose_pull_time(
            now, client.sleep, lambda st: [inventory_path(landing_dir, k, st) for k in fixed]
        )
        pulled = rfc3339(pulled_at)
        st = stamp(pulled_at)
        result = PullResult(pulled_at=pulled_at)
        deadline = client.monotonic() + client.pull_deadline

        def land(
            kind: str, endpoint: str, params: dict[str, str], endpoint_id: str | None = None
        ) -> ApiResponse | None:
            path_for_call = endpoint.replace("{id}", endpoint_id) if endpoint_id else endpoint
            if client.monotonic() >= deadline:
                _give_up(result, f"{describe_call(path_for_call, None)}: not requested, the "
                         f"pull's deadline ({client.pull_deadline:g}s) had passed")
                return None
            try:
                resp = client.get_json(path_for_call, params, deadline=deadline)
            except RunpodDeadlineError as exc:
                _give_up(result, str(exc))
                return None
            key = settings.INVENTORY_LIST_KEYS[kind]
            items = resp.body.get(key)
            if not isinstance(items, list):
                raise RunpodResponseError(
                    f"{describe_call(path_for_call, None)}: response lacks required list "
                    f"{key!r} (got keys {sorted(resp.body)})",
                    endpoint=path_for_call,
                    status=resp.status,
                )
            meta = envelope(endpoint, pulled, params, endpoint_id)
            path = inventory_path(landing_dir, kind, st, endpoint_id)
            write_new_file(path, landing_bytes(resp.raw, resp.body, meta))
            result.files.append(
                LandedFile(kind, endpoint, path, params, len(items), endpoint_id=endpoint_id)
            )
            return resp

        land("pods", settings.PODS, {"includeClusterPods": "false"})
        serverless = land("serverless", settings.SERVERLESS, {})
        if serverless is None and include_workers:
            _give_up(result, f"{describe_call(settings.SERVERLESS_WORKERS, None)}: not "
                     "requested, the endpoints were not listed")
        elif include_workers:
            for ep in serverless.body["endpoints"]:
                ep_id = ep.get("id") if isinstance(ep, dict) else None
                if not ep_id:
                    raise RunpodResponseError(
                        f"{describe_call(settings.SERVERLESS, None)}: endpoint without 'id'",
                        endpoint=settings.SERVERLESS,
                    )
                safe_id(ep_id, "endpoint id")
                try:
                    land("workers", settings.SERVERLESS_WORKERS, {}, ep_id)
                except RunpodNotFoundError:
                    msg = f"serverless endpoint {ep_id} vanished before its workers were read"
                    log.warning(msg)
                    result.warnings.append(msg)
        land("network_volumes", settings.NETWORK_VOLUMES, {})
        land("gpu_catalog", settings.GPU_CATALOG, {})
        log.info("landed inventory snapshot %s: %d files", st, len(result.files))
        return result
    finally:
        if own:
            client.close()


# ===================================================================== serverless jobs
def snapshot_health(
    landing_dir: str | os.PathLike[str],
    endpoint_id: str,
    health_json: Mapping[str, Any] | str | bytes,
    *,
    now: Now = None,
    sleep: Callable[[float], None] = time.sleep,
) -> LandedFile:
    """Land a serverless ``/health`` body (fetched by the caller from
    ``https://api.runpod.ai/v2/{endpointId}/health``) as
    ``<landing>/runpod/inventory/pulled=<ts>/health_<endpointId>.json``."""
    safe_id(endpoint_id, "endpoint id")
    raw, body = _as_json_object(health_json, "health_json")
    pulled_at = choose_pull_time(
        now, sleep, lambda st: [inventory_path(landing_dir, "health", st, endpoint_id)]
    )
    meta = envelope(settings.SERVERLESS_HEALTH, rfc3339(pulled_at), {}, endpoint_id)
    path = inventory_path(landing_dir, "health", stamp(pulled_at), endpoint_id)
    write_new_file(path, landing_bytes(raw, body, meta))
    return LandedFile("health", settings.SERVERLESS_HEALTH, path, {}, endpoint_id=endpoint_id)


def record_job_status(
    path: str | os.PathLike[str],
    endpoint_id: str,
    status_json: Mapping[str, Any] | str | bytes,
    submitted_at: datetime | str,
    completed_at: datetime | str | None,
) -> dict[str, Any]:
    """Append one JSONL line for a serverless job to ``path`` (for the job submitter).

    ``status_json`` is the ``/status/{jobId}`` (or ``/runsync``) answer. Only
    ``id, status, delayTime, executionTime, workerId, endpointId, submittedAt, completedAt``
    are kept (never the job's input or output); ``delayTime``/``executionTime`` are integer
    milliseconds (null if absent); times are RFC 3339 UTC with milliseconds and ``Z``
    (naive datetimes are UTC). Returns the dict written.
    """
    _, status = _as_json_object(status_json, "status_json")
    job_id = status.get("id")
    if not job_id or not isinstance(job_id, str):
        raise ValueError("status_json has no job 'id'")
    if not endpoint_id or not isinstance(endpoint_id, str):
        raise ValueError("endpoint_id is required")
    line = {
        "id": job_id,
        "status": status.get("status"),
        "delayTime": _ms(status.get("delayTime"), "delayTime"),
        "executionTime": _ms(status.get("executionTime"), "executionTime"),
        "workerId": status.get("workerId"),
        "endpointId": endpoint_id,
        "submittedAt": _job_time(submitted_at),
        "completedAt": None if completed_at is None else _job_time(completed_at),
    }
    assert tuple(line) == settings.JOB_RECORD_KEYS
    if line["status"] not in settings.JOB_STATUSES:
        log.warning("job %s has unexpected status %r; recorded as is", job_id, line["status"])
    data = orjson.dumps(line) + b"\n"
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    # One write() on an O_APPEND descriptor: concurrent submitters do not interleave lines.
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return line


def _as_json_object(
    value: Mapping[str, Any] | str | bytes, what: str
) -> tuple[bytes | None, dict[str, Any]]:
    if isinstance(value, (str, bytes, bytearray)):
        raw = value.encode() if isinstance(value, str) else bytes(value)
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"{what} is not valid JSON: {exc}") from None
    else:
        raw, body = None, dict(value)
    if not isinstance(body, dict):
        raise TypeError(f"{what} must be a JSON object")
    return raw, body


def _ms(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of milliseconds, got {value!r}")
    return round(value)


def _job_time(value: datetime | str) -> str:
    if isinstance(value, str):
        value = parse_rfc3339(value)
    return rfc3339_ms(value)
