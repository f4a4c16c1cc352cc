"""The one HTTP layer of the Runpod connector: a ``requests.Session`` wrapper.

* every call carries a (connect, read) timeout and never follows redirects, and a total
  deadline (``request_deadline``, or the caller's earlier one: a pull's) over all its attempts
  and waits, enforced however slowly the server sends (:mod:`.deadline`);
* 429, 5xx, connection errors, timeouts, broken transfers and invalid JSON in a 2xx are retried
  with capped exponential backoff; ``Retry-After`` (seconds or HTTP date) is honoured exactly
  up to ``max_wait``, and never past the deadline;
* ``RateLimit`` / ``RateLimit-Policy`` headers are tracked: when a window's remaining count is
  0 the next call first waits for that window's reset;
* ``application/problem+json`` errors become exceptions whose message names the endpoint, the
  time window and the problem's title/status/detail/errors;
* the API key is sent only in the ``Authorization`` header by an auth object whose repr is
  redacted, and is scrubbed from every exception message and log record of this package; a
  key that is not a valid header value (e.g. an embedded line break) is refused up front, and
  unexpected errors of the HTTP stack are re-raised redacted and unchained, since their
  messages may quote the header.
"""

from __future__ import annotations

import email.utils
import logging
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

import orjson
import requests

from . import settings
from .deadline import DeadlineAdapter, attempt_deadline

log = logging.getLogger("connectors.runpod")

REDACTED = "***"
_SECRETS: set[str] = set()


def redact(text: str) -> str:
    """Replace every API key this process has been given with ``***``."""
    for secret in _SECRETS:
        if secret and secret in text:
            text = text.replace(secret, REDACTED)
    return text


def _remember_secret(key: str) -> None:
    """Register ``key`` for :func:`redact`, with the spellings ``repr()`` gives it: exception
    messages of the HTTP stack quote header values as ``b'Bearer ...'``, where a backslash or
    quote in the key would be escaped and the plain spelling would no longer match."""
    _SECRETS.update({key, repr(key)[1:-1], repr(key.encode())[2:-1]})


def _key_problem(key: str) -> str | None:
    """Why ``key`` cannot be sent as a header value, or None if it can.

    A key is visible ASCII (``!`` to ``~``). Anything else (typically a line break from a badly
    pasted Secret block) would make http.client raise ``Invalid header value b'Bearer <key>'``,
    quoting the key. The answer names the position and kind of the character, never the key.
    """
    for i, ch in enumerate(key, start=1):
        if "!" <= ch <= "~":
            continue
        if ch in "\r\n":
            what = "a line break"
        elif ch.isspace():
            what = "whitespace"
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            what = "a control character"
        else:
            what = "a non-ASCII character"
        return (
            f"contains {what} (U+{ord(ch):04X}) at position {i} of {len(key)}; an API key is"
            " visible ASCII only (was the secret pasted with a line break?)"
        )
    return None


class _RedactFilter(logging.Filter):
    """Scrubs known API keys from records logged through the connector's logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _SECRETS:
            try:
                message = record.getMessage()
            except (TypeError, ValueError):  # malformed record: leave it to logging
                return True
            clean = redact(message)
            if clean != message or record.args:
                record.msg, record.args = clean, None
        return True


log.addFilter(_RedactFilter())


# --- exceptions ------------------------------------------------------------------------------
class RunpodError(Exception):
    """Base class; ``str()`` never contains the API key."""

    def __init__(
        self,
        message: str,
        *,
        endpoint: str | None = None,
        window: tuple[str, str] | None = None,
        status: int | None = None,
        title: str | None = None,
        detail: str | None = None,
        errors: list[str] | None = None,
    ) -> None:
        super().__init__(redact(message))
        self.endpoint = endpoint
        self.window = window
        self.status = status
        self.title = title
        self.detail = detail
        self.errors = errors or []


class RunpodConfigError(RunpodError):
    """Missing or unusable configuration (e.g. no API key)."""


class RunpodAPIError(RunpodError):
    """The API answered with an error status (after retries, for retryable statuses)."""


class RunpodAuthError(RunpodAPIError):
    """401/403: the key is missing, invalid, or lacks access."""


class RunpodNotFoundError(RunpodAPIError):
    """404 on the requested path."""


class RunpodRateLimitError(RunpodAPIError):
    """Rate limited for longer than the configured maximum wait, or 429 after all retries."""


class RunpodTransportError(RunpodError):
    """Connection errors or timeouts persisted through all retries, or an unexpected error of
    the HTTP stack (not retried)."""


class RunpodDeadlineError(RunpodTransportError):
    """The request's (or the pull's) total deadline passed, or a wait the server asked for
    would end past it. ``what`` names the call."""


class RunpodResponseError(RunpodError):
    """A 2xx whose body is unusable: invalid JSON after retries, or a missing required field."""


def describe_call(endpoint: str, window: tuple[str, str] | None) -> str:
    """``GET /v2/billing/pods for window [a, b)``: used in every error message."""
    if window:
        return f"GET {endpoint} for window [{window[0]}, {window[1]})"
    return f"GET {endpoint} (no time window)"


# --- rate-limit headers ----------------------------------------------------------------------
def parse_ratelimit_header(value: str | None) -> dict[str, dict[str, int]]:
    """Parse ``"minute";r=0;t=12, "hour";r=2800;t=1812`` (IETF draft structured-field list;
    also ``"minute";q=60;w=60`` for RateLimit-Policy) into ``{"minute": {"r": 0, "t": 12}}``.
    The older ``limit=60, remaining=0, reset=12`` form is mapped to window ``default``.
    Unparseable members are ignored."""
    out: dict[str, dict[str, int]] = {}
    if not value:
        return out
    legacy: dict[str, int] = {}
    for member in value.split(","):
        parts = [p.strip() for p in member.strip().split(";") if p.strip()]
        if not parts:
            continue
        if "=" in parts[0] and not parts[0].startswith('"'):
            k, _, v = parts[0].partition("=")
            try:
                legacy[k.strip().lower()] = int(float(v.strip().strip('"')))
            except ValueError:
                pass
            continue
        name = parts[0].strip('"')
        params: dict[str, int] = {}
        for p in parts[1:]:
            k, _, v = p.partition("=")
            try:
                params[k.strip()] = int(float(v.strip().strip('"')))
            except ValueError:
                continue
        out[name] = params
    if legacy:
        mapped = {"r": legacy.get("remaining"), "t": legacy.get("reset"), "q": legacy.get("limit")}
        out["default"] = {k: v for k, v in mapped.items() if v is not None}
    return out


def parse_retry_after(
    value: str | None, *, wall_now: Callable[[], float] = time.time
) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date)."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - wall_now())


@dataclass
class RateLimitState:
    """Last seen ``RateLimit``/``RateLimit-Policy`` values and when the next call may go."""

    limits: dict[str, dict[str, int]] = field(default_factory=dict)
    policy: dict[str, dict[str, int]] = field(default_factory=dict)
    blocked_until: float | None = None  # on the client's monotonic clock
    blocking_window: str | None = None


# --- auth ------------------------------------------------------------------------------------
class _BearerAuth(requests.auth.AuthBase):
    """Adds ``Authorization: Bearer <key>``; the key never shows in repr/str."""

    __slots__ = ("_key",)

    def __init__(self, key: str) -> None:
        self._key = key

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers["Authorization"] = f"Bearer {self._key}"
        return r

    def __repr__(self) -> str:
        return f"<BearerAuth {REDACTED}>"

    __str__ = __repr__


@dataclass(frozen=True)
class ApiResponse:
    endpoint: str  # the API path called (no host, no query)
    params: dict[str, str]
    status: int
    body: dict[str, Any]
    raw: bytes  # body bytes exactly as received
    attempts: int


# --- the client ------------------------------------------------------------------------------
class RunpodClient:
    """Runpod REST v2 client.

    ``api_key`` defaults to the ``RUNPOD_API_KEY`` environment variable. ``sleep`` and
    ``monotonic`` are injectable so tests can measure waits without waiting.
    ``request_deadline`` bounds one ``get_json`` call, every attempt and wait included;
    ``pull_deadline`` one pull of :mod:`connectors.runpod` (defaults: ``settings``).
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str = settings.BASE_URL,
        timeout: float | tuple[float, float] = (
            settings.CONNECT_TIMEOUT_S,
            settings.READ_TIMEOUT_S,
        ),
        max_retries: int = settings.MAX_RETRIES,
        backoff_base: float = settings.BACKOFF_BASE_S,
        backoff_cap: float = settings.BACKOFF_CAP_S,
        max_wait: float = settings.MAX_WAIT_S,
        request_deadline: float | None = None,
        pull_deadline: float | None = None,
        jitter: bool = True,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        session: requests.Session | None = None,
        trust_env: bool = True,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get(settings.API_KEY_ENV)
        if key is None or not key.strip():
            raise RunpodConfigError(
                f"no Runpod API key: pass api_key=... or set {settings.API_KEY_ENV}"
            )
        key = key.strip()
        # Remembered even if rejected below: the bad key may still show up in someone's text.
        _remember_secret(key)
        problem = _key_problem(key)
        if problem is not None:
            source = "api_key" if api_key is not None else settings.API_KEY_ENV
            raise RunpodConfigError(f"unusable Runpod API key from {source}: {problem}")
        if not base_url.startswith(("https://", "http://")):
            raise RunpodConfigError(f"base_url must be http(s): {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._auth = _BearerAuth(key)
        self.timeout = timeout
        self.max_retries = max(0, int(max_retries))
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_wait = max_wait
        # None: the settings' values when the client is made (so a deployment may set them)
        if request_deadline is None:
            request_deadline = settings.REQUEST_DEADLINE_S
        if pull_deadline is None:
            pull_deadline = settings.PULL_DEADLINE_S
        for name, value in (("request_deadline", request_deadline),
                            ("pull_deadline", pull_deadline)):
            if not value > 0:
                raise RunpodConfigError(f"{name} must be a positive number of seconds, got "
                                        f"{value!r}")
        self.request_deadline = float(request_deadline)
        self.pull_deadline = float(pull_deadline)  # read by the pull functions
        self.jitter = jitter
        self.sleep = sleep
        self.monotonic = monotonic
        self.rate_limit = RateLimitState()
        self.calls = 0  # HTTP requests sent (including retries)
        self._owns_session = session is None
        self.session = session or requests.Session()
        self.session.trust_env = trust_env
        adapter = DeadlineAdapter(max_retries=0)  # retries are ours, not urllib3's
        self.session.mount("https://", adapter)
        self.session.mount("http://", adapter)
        self.session.headers.update(
            {
                "Accept": "application/json, application/problem+json",
                "User-Agent": "gpu-recon-runpod-connector/0.1",
            }
        )

    def __repr__(self) -> str:
        return f"RunpodClient(base_url={self.base_url!r}, api_key={REDACTED!r})"

    def close(self) -> None:
        if self._owns_session:
            self.session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public ---------------------------------------------------------------------------------
    def get_json(
        self,
        endpoint: str,
        params: Mapping[str, str] | None = None,
        *,
        window: tuple[str, str] | None = None,
        deadline: float | None = None,
    ) -> ApiResponse:
        """GET ``endpoint`` (a ``/v2/...`` path) and return its JSON object body.

        ``window`` (start, end strings) is only used to make error messages name the window.
        ``deadline`` (on this client's ``monotonic`` clock; a pull's) ends the call earlier
        than ``request_deadline`` would: RunpodDeadlineError.
        """
        if not endpoint.startswith("/v2/"):
            raise RunpodConfigError(f"refusing non-v2 path {endpoint!r}")
        params = dict(params or {})
        what = describe_call(endpoint, window)
        url = self.base_url + endpoint
        last_failure = "no attempt made"
        last_kind: type[RunpodError] = RunpodTransportError
        last_status: int | None = None
        last_problem: dict[str, Any] = {}
        attempts = 0
        started = self.monotonic()
        own_limit = started + self.request_deadline
        limit = own_limit if deadline is None else min(own_limit, deadline)

        def too_late(doing: str) -> RunpodDeadlineError:
            whose = (f"request deadline {self.request_deadline:g}s" if limit == own_limit
                     else "the pull's deadline")
            return RunpodDeadlineError(
                f"{what}: {doing} after {self.monotonic() - started:.1f}s and {attempts} "
                f"attempt(s) ({whose}); last: {last_failure}",
                endpoint=endpoint, window=window, status=last_status,
            )

        for attempt in range(self.max_retries + 1):
            self._wait_for_rate_limit(what, limit, too_late)
            left = limit - self.monotonic()
            if left <= 0:
                raise too_late("deadline passed")
            attempts += 1
            self.calls += 1
            log.debug("runpod request: GET %s params=%s (attempt %d)", endpoint, params, attempts)
            delay: float | None = None
            unexpected: str | None = None
            guard = None
            answered = False
            try:
                with attempt_deadline(left) as guard:
                    resp = self.session.get(
                        url,
                        params=params,
                        auth=self._auth,
                        timeout=self._timeout_within(left),
                        allow_redirects=False,
                    )
                    content = resp.content
                    answered = True
            except (
                requests.ConnectionError,
                requests.Timeout,
                requests.exceptions.ChunkedEncodingError,
                requests.exceptions.ContentDecodingError,
            ) as exc:
                last_failure = f"{type(exc).__name__}: {redact(str(exc))[:200]}"
                last_kind, last_status, last_problem = RunpodTransportError, None, {}
            except Exception as exc:  # noqa: BLE001 - anything else from requests/urllib3
                # Not transient, so not retried. Such messages may quote the request (e.g.
                # http.client's "Invalid header value b'Bearer <key>'"): only the redacted
                # text is kept, and the exception is raised outside this block so the
                # original is neither chained nor kept as __context__.
                unexpected = f"{type(exc).__name__}: {redact(str(exc))[:200]}"
            if guard is not None and guard.fired:
                # the timer cut the connection: whatever arrived (or failed) is not the answer
                last_failure = "the answer was still arriving when the deadline passed"
                raise too_late("cut off")
            if answered:
                self._note_rate_limit(resp.headers)
                status = resp.status_code
                if 200 <= status < 300:
                    try:
                        body = orjson.loads(content)
                    except orjson.JSONDecodeError as exc:
                        last_failure = (
                            f"invalid JSON in HTTP {status} body ({len(content)} bytes): {exc}"
                        )
                        last_kind, last_status, last_problem = RunpodResponseError, status, {}
                    else:
                        if not isinstance(body, dict):
                            raise RunpodResponseError(
                                f"{what}: expected a JSON object, got {type(body).__name__}",
                                endpoint=endpoint,
                                window=window,
                                status=status,
                            )
                        return ApiResponse(endpoint, params, status, body, content, attempts)
                else:
                    problem = _problem_details(resp, content)
                    last_status, last_problem = status, problem
                    last_failure = _format_problem(status, problem)
                    if status not in settings.RETRY_STATUSES:
                        raise _error_class(status)(
                            f"{what}: {last_failure}",
                            endpoint=endpoint,
                            window=window,
                            status=status,
                            title=problem.get("title"),
                            detail=problem.get("detail"),
                            errors=problem.get("errors"),
                        )
                    last_kind = RunpodRateLimitError if status == 429 else RunpodAPIError
                    delay = parse_retry_after(resp.headers.get("Retry-After"))
            if unexpected is not None:
                raise RunpodTransportError(
                    f"{what}: unexpected error from the HTTP layer: {unexpected}",
                    endpoint=endpoint,
                    window=window,
                ) from None
            if attempt == self.max_retries:
                break
            if delay is None:
                delay = self._backoff(attempt)
            if delay > self.max_wait:
                raise RunpodRateLimitError(
                    f"{what}: server asked to wait {delay:.0f}s (> max_wait {self.max_wait:.0f}s)"
                    f" after {last_failure}",
                    endpoint=endpoint,
                    window=window,
                    status=last_status,
                    title=last_problem.get("title"),
                    detail=last_problem.get("detail"),
                    errors=last_problem.get("errors"),
                )
            if self.monotonic() + delay >= limit:
                raise too_late(f"giving up instead of waiting {delay:.0f}s")
            log.warning(
                "runpod %s: %s; retry %d/%d in %.2fs",
                what,
                last_failure,
                attempt + 1,
                self.max_retries,
                delay,
            )
            self.sleep(delay)
        raise last_kind(
            f"{what}: giving up after {attempts} attempt(s): {last_failure}",
            endpoint=endpoint,
            window=window,
            status=last_status,
            title=last_problem.get("title"),
            detail=last_problem.get("detail"),
            errors=last_problem.get("errors"),
        )

    # -- internals ------------------------------------------------------------------------------
    def _backoff(self, attempt: int) -> float:
        delay = min(self.backoff_cap, self.backoff_base * (2**attempt))
        if self.jitter:
            delay *= 0.5 + random.random() / 2
        return delay

    def _note_rate_limit(self, headers: Mapping[str, str]) -> None:
        state = self.rate_limit
        limits = parse_ratelimit_header(headers.get("RateLimit"))
        policy = parse_ratelimit_header(headers.get("RateLimit-Policy"))
        if policy:
            state.policy = policy
        state.limits = limits
        waits: list[tuple[float, str]] = []
        for name, vals in limits.items():
            if vals.get("r", 1) <= 0:
                reset = vals.get("t")
                if reset is None:
                    reset = state.policy.get(name, {}).get("w")
                if reset is not None:
                    waits.append((float(reset), name))
        if waits:
            wait, name = max(waits)
            state.blocked_until = self.monotonic() + wait
            state.blocking_window = name
        else:
            state.blocked_until = None
            state.blocking_window = None

    def _timeout_within(self, left: float) -> float | tuple[float, float]:
        """The (connect, read) timeout, none longer than the ``left`` seconds of the deadline."""
        if isinstance(self.timeout, tuple):
            return tuple(min(t, left) for t in self.timeout)  # type: ignore[return-value]
        return min(self.timeout, left)

    def _wait_for_rate_limit(
        self,
        what: str,
        limit: float = float("inf"),
        too_late: Callable[[str], RunpodError] | None = None,
    ) -> None:
        state = self.rate_limit
        if state.blocked_until is None:
            return
        remaining = state.blocked_until - self.monotonic()
        if remaining > 0:
            if remaining > self.max_wait:
                raise RunpodRateLimitError(
                    f"{what}: RateLimit window {state.blocking_window!r} exhausted; reset in "
                    f"{remaining:.0f}s (> max_wait {self.max_wait:.0f}s)"
                )
            if too_late is not None and self.monotonic() + remaining >= limit:
                raise too_late(f"RateLimit window {state.blocking_window!r} resets in "
                               f"{remaining:.0f}s, past the deadline")
            log.info(
                "runpod rate limit: window %r exhausted, waiting %.2fs before %s",
                state.blocking_window,
                remaining,
                what,
            )
            self.sleep(remaining)
        state.blocked_until = None
        state.blocking_window = None


def _error_class(status: int) -> type[RunpodAPIError]:
    if status in (401, 403):
        return RunpodAuthError
    if status == 404:
        return RunpodNotFoundError
    if status == 429:
        return RunpodRateLimitError
    return RunpodAPIError


def _problem_details(resp: requests.Response, content: bytes) -> dict[str, Any]:
    """title/status/detail/errors from an application/problem+json body, else a text snippet."""
    parsed: Any = None
    if content:
        try:
            parsed = orjson.loads(content)
        except orjson.JSONDecodeError:
            parsed = None
    if isinstance(parsed, dict) and ("title" in parsed or "detail" in parsed):
        errors = parsed.get("errors")
        if errors is not None and not isinstance(errors, list):
            errors = [errors]
        return {
            "title": redact(str(parsed.get("title") or resp.reason or "")),
            "status": parsed.get("status"),
            "detail": redact(str(parsed.get("detail") or "")),
            "errors": [redact(str(e)) for e in errors] if errors else [],
            "problem": "problem+json" in resp.headers.get("Content-Type", ""),
        }
    # Redact the whole body before cutting it: a key straddling the cut would otherwise not
    # be recognised and all but its last characters would be quoted.
    text = redact(content.decode("utf-8", "replace"))
    snippet = text.strip()[: settings.ERROR_BODY_SNIPPET].strip()
    return {
        "title": redact(resp.reason or ""),
        "status": resp.status_code,
        "detail": snippet,
        "errors": [],
        "problem": False,
    }


def _format_problem(status: int, problem: Mapping[str, Any]) -> str:
    text = f"HTTP {status}"
    if problem.get("title"):
        text += f" {problem['title']}"
    if problem.get("detail"):
        text += f": {problem['detail']}"
    if problem.get("errors"):
        text += f" (errors: {'; '.join(problem['errors'])})"
    return text
