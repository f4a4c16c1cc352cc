"""Time helpers: UTC normalisation, RFC 3339 formatting, hourly snapping, window splitting."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from . import settings

HOUR = timedelta(hours=1)

Now = datetime | Callable[[], datetime] | None


def utc(dt: datetime) -> datetime:
    """Aware UTC datetime; a naive datetime is taken to be UTC already."""
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def resolve_now(now: Now = None) -> datetime:
    """``now`` may be a fixed datetime, a zero-argument callable, or None (the system clock)."""
    if now is None:
        value = datetime.now(UTC)
    elif callable(now):
        value = now()
    else:
        value = now
    return utc(value)


def rfc3339(dt: datetime) -> str:
    """``2026-06-01T00:00:00Z`` (whole seconds, UTC, ``Z``)."""
    return utc(dt).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_ms(dt: datetime) -> str:
    """``2026-06-01T00:00:00.123Z`` (milliseconds, UTC, ``Z``)."""
    d = utc(dt)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"


def parse_rfc3339(value: str) -> datetime:
    """Parse an RFC 3339 timestamp (``Z`` or offset); a zone-less value is taken as UTC."""
    text = value.strip()
    if " " in text and "T" not in text:
        text = text.replace(" ", "T", 1)
    return utc(datetime.fromisoformat(text))


def stamp(dt: datetime) -> str:
    """Compact form for paths: ``20260601T000000Z``."""
    return utc(dt).strftime(settings.STAMP_FMT)


def floor_hour(dt: datetime) -> datetime:
    return utc(dt).replace(minute=0, second=0, microsecond=0)


def ceil_hour(dt: datetime) -> datetime:
    d = utc(dt)
    f = floor_hour(d)
    return f if f == d else f + HOUR


def snap_window(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    """Snap [start, end) outward to whole hours, as the API does for ``bucketSize=hour``."""
    s, e = floor_hour(start), ceil_hour(end)
    if e <= s:
        raise ValueError(f"empty window: start {rfc3339(start)} is not before end {rfc3339(end)}")
    return s, e


def split_window(
    start: datetime, end: datetime, max_days: float = settings.DEFAULT_CHUNK_DAYS
) -> list[tuple[datetime, datetime]]:
    """Split [start, end) (snapped to hours) into consecutive hour-aligned windows of at most
    ``max_days`` days each (at least one hour). The pieces cover [start, end) exactly, in
    order, without overlap."""
    if max_days <= 0:
        raise ValueError("max_days must be positive")
    s, e = snap_window(start, end)
    step = max(HOUR, timedelta(days=max_days))
    step = timedelta(hours=int(step / HOUR))  # whole hours, so every piece stays hour-aligned
    out: list[tuple[datetime, datetime]] = []
    cur = s
    while cur < e:
        nxt = min(cur + step, e)
        out.append((cur, nxt))
        cur = nxt
    return out


def trailing_days(
    days: float, now: Now = None, *, include_current_hour: bool = True
) -> tuple[datetime, datetime]:
    """The window of the last ``days`` days ending at the current hour.

    With ``include_current_hour`` (default) the window ends at the end of the hour in
    progress, so the in-progress bucket is pulled (and marked provisional in the landing
    envelope); otherwise it ends at the start of the current hour.
    """
    if days <= 0:
        raise ValueError("days must be positive")
    end = floor_hour(resolve_now(now))
    if include_current_hour:
        end += HOUR
    return end - timedelta(days=days), end
