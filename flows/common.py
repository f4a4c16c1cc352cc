"""What the flows share: tags, the Runpod API key lookup, the retry rule, day parsing.

Flows only wire library steps together; anything that computes lives in `recon/`
or `connectors/`.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta

# Task tags. Prefect's tag-based concurrency limits apply to every task run carrying the tag:
#   prefect concurrency-limit create runpod-api 2        # at most 2 provider calls at once
#   prefect concurrency-limit create recon-warehouse 1   # one DuckDB writer at a time (optional)
RUNPOD_TAG = "runpod-api"
WAREHOUSE_TAG = "recon-warehouse"

# The tags above exist for their limits. Prefect asks its API for a slot of every tag a task
# run carries, whether a limit exists or not, and that request writes: on a server backed by
# SQLite (the temporary server, `prefect server start` by default) it often meets the server's
# own event writes, fails with `database is locked` (503) and is retried ~1.7 s later. The
# daily flow on the 500-node day loses ~2 s to it (bench/README.md, levers tried). So a flow run
# reads which limits exist, once, and its tasks carry only the tags that have one.
LIMIT_TAGS = (RUNPOD_TAG, WAREHOUSE_TAG)

SECRET_BLOCK = "runpod-api-key"
API_KEY_ENV = "RUNPOD_API_KEY"  # the connector's own default (connectors.runpod.settings)

_fallback_log = logging.getLogger("flows")

# Prefect's timeout on a task that talks to a provider: the connector's own deadline for the
# pull (connectors/runpod/settings.py PULL_DEADLINE_S) plus this margin for the client, the
# landing writes and the logging around it. The connector's deadline is what ends a slow pull
# (and says what it gave up); Prefect's is the backstop, and it can interrupt only a task run
# in the flow's own thread (a task `.submit()`ted runs in a worker thread: its timeout takes
# effect when the blocking call returns).
TASK_TIMEOUT_MARGIN_S = 300.0
# `collect --once` lists every resource of every cluster (each list bounded by its read
# timeouts and retries, connectors/kubernetes): past this the task is failed.
COLLECT_ONCE_TIMEOUT_S = 3600.0


def pull_timeout_seconds() -> float:
    from connectors.runpod import settings

    return settings.PULL_DEADLINE_S + TASK_TIMEOUT_MARGIN_S


def logger():
    """The Prefect run logger inside a flow/task run, a plain logger otherwise (`.fn()` tests)."""
    from prefect import get_run_logger
    from prefect.exceptions import MissingContextError

    try:
        return get_run_logger()
    except MissingContextError:
        return _fallback_log


def tags_with_limits(tags=LIMIT_TAGS) -> frozenset[str]:
    """Those of `tags` that have a concurrency limit on the Prefect API (v2 `tag:<tag>` limits
    and the older tag limits alike: `prefect concurrency-limit create TAG N` makes either).
    Reads only. If the API cannot tell, every tag is kept: a limit is never skipped."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    found = set()
    try:
        with get_client(sync_client=True) as client:
            for tag in tags:
                try:
                    client.read_concurrency_limit_by_tag(tag)
                    found.add(tag)
                except ObjectNotFound:
                    pass
    except Exception as err:  # noqa: BLE001 - any failure: keep the tags, as before
        _fallback_log.debug("concurrency limits not read (%s): every tag kept", type(err).__name__)
        return frozenset(tags)
    return frozenset(found)


def limited(task, with_limits: frozenset[str]):
    """`task` without those of LIMIT_TAGS that have no limit (`tags_with_limits`); its other
    tags stay. The task itself is unchanged: this is a copy (`Task.with_options`)."""
    keep = {t for t in task.tags if t in with_limits or t not in LIMIT_TAGS}
    return task if keep == set(task.tags) else task.with_options(tags=keep)


LOCAL_API_DEFAULTS = {
    # the temporary API's telemetry service logs an ERROR each time it cannot reach Prefect's
    # servers (any machine without internet): not the user's news, and not ours to send
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # it starts in 6-15 s on a 2-core machine, past Prefect's default 20 s when that is busy
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
}


def local_api_defaults() -> dict[str, str]:
    """For a flow run from the command line without PREFECT_API_URL, which starts Prefect's
    temporary local API: the settings of LOCAL_API_DEFAULTS the environment does not set
    already. Returns what it set. With PREFECT_API_URL (a real server) it changes nothing."""
    if os.environ.get("PREFECT_API_URL"):
        return {}
    set_now = {k: v for k, v in LOCAL_API_DEFAULTS.items() if k not in os.environ}
    os.environ.update(set_now)
    return set_now


def runpod_api_key() -> tuple[str | None, str]:
    """The Runpod API key and where it came from (never the key in any message).

    First the Prefect Secret block `runpod-api-key`, then the environment variable
    RUNPOD_API_KEY. Returns (None, reason) when neither is set.
    """
    from prefect.blocks.system import Secret

    try:
        value = Secret.load(SECRET_BLOCK).get()
    except ValueError:  # no block document of that name
        value = None
    if isinstance(value, str) and value.strip():
        return value.strip(), f"Secret block '{SECRET_BLOCK}'"
    env = os.environ.get(API_KEY_ENV, "").strip()
    if env:
        return env, f"environment variable {API_KEY_ENV}"
    return None, (f"no Runpod API key: create the Prefect Secret block '{SECRET_BLOCK}' "
                  f"(prefect block create secret) or set {API_KEY_ENV}")


def require_runpod_api_key() -> str:
    key, source = runpod_api_key()
    if key is None:
        raise RuntimeError(source)
    logger().info("Runpod API key from %s", source)
    return key


def retry_transient(task, task_run, state) -> bool:
    """Task-level retry only for failures a later attempt can fix.

    The Runpod client already retries each request (429 with Retry-After, 5xx, resets) within
    its own budget; a task retry covers an outage longer than that budget. A missing or
    rejected key, a malformed response or a landing-file conflict fails at once, and so does a
    task that ran into its deadline (the client's RunpodDeadlineError or Prefect's task
    timeout): retried, it would hold up the runs queued behind it for as long again.
    """
    from prefect.exceptions import MissingResult
    from prefect.task_engine import TaskRunTimeoutError

    try:
        exc = state.result(raise_on_failure=False)
    except MissingResult:  # the failure itself was not kept: retry as usual
        return True
    if not isinstance(exc, BaseException):
        return True
    if isinstance(exc, TaskRunTimeoutError):  # the task used its whole time: once is enough
        return False
    try:
        from connectors.runpod import (
            RunpodAPIError,
            RunpodDeadlineError,
            RunpodRateLimitError,
            RunpodTransportError,
        )
    except ImportError:
        return not isinstance(exc, (RuntimeError, ValueError, TypeError))
    if isinstance(exc, RunpodDeadlineError):  # the deadline was the budget: not spent again
        return False
    if isinstance(exc, (RunpodTransportError, RunpodRateLimitError)):
        return True
    if isinstance(exc, RunpodAPIError):
        return (getattr(exc, "status", None) or 0) >= 500
    return isinstance(exc, (OSError, TimeoutError)) and not isinstance(exc, FileExistsError)


def utc_now() -> datetime:
    return datetime.now(UTC)


def default_day() -> date:
    """The UTC day before the run's scheduled start (a late or caught-up scheduled run still
    reconciles the day it was scheduled for); for an ad-hoc run, yesterday UTC."""
    from prefect.runtime import flow_run

    start = flow_run.scheduled_start_time  # outside a run: now
    start = start.astimezone(UTC) if start is not None else utc_now()
    return start.date() - timedelta(days=1)


def parse_day(day: str | date | None) -> date:
    if day is None or day == "":
        return default_day()
    if isinstance(day, datetime):
        return day.astimezone(UTC).date() if day.tzinfo else day.date()
    if isinstance(day, date):
        return day
    try:
        return date.fromisoformat(str(day).strip())
    except ValueError:
        raise ValueError(f"day must be YYYY-MM-DD (UTC), got {day!r}") from None


def days_between(start: str | date, end: str | date) -> list[date]:
    """Every UTC day from start to end, both included."""
    a, b = parse_day(start), parse_day(end)
    if b < a:
        raise ValueError(f"end {b} is before start {a}")
    return [a + timedelta(days=i) for i in range((b - a).days + 1)]


@contextmanager
def disk_full_is_a_sentence(doing: str):
    """A full disk inside the block fails the task with one sentence saying what to do
    (`recon.guard.disk_full`), not DuckDB's FatalException or a raw OSError; a RuntimeError,
    so that `retry_transient` does not sleep on it. Anything else goes on as it was."""
    from recon.guard import disk_full

    try:
        yield
    except Exception as e:
        if (msg := disk_full(e, doing)) is None:
            raise
        raise RuntimeError(msg) from None
