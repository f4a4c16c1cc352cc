"""Window snapping/splitting and trailing windows."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.runpod import split_window, trailing_days
from connectors.runpod.windows import ceil_hour, floor_hour, snap_window

HOUR = timedelta(hours=1)


@settings(max_examples=150, deadline=None)
@given(
    start=st.datetimes(
        min_value=datetime(2025, 1, 1), max_value=datetime(2027, 1, 1), timezones=st.just(UTC)
    ),
    length=st.timedeltas(min_value=timedelta(seconds=1), max_value=timedelta(days=80)),
    max_days=st.sampled_from([0.01, 0.5, 1, 3, 7, 10.5]),
)
def test_split_covers_window_exactly_without_overlap(start, length, max_days):
    end = start + length
    pieces = split_window(start, end, max_days)
    assert pieces[0][0] == floor_hour(start)
    assert pieces[-1][1] == ceil_hour(end)
    limit = max(HOUR, timedelta(days=max_days))
    for (_, e), (s2, _) in itertools.pairwise(pieces):
        assert e == s2, "gap or overlap between consecutive pieces"
    for s, e in pieces:
        assert s < e <= s + limit
        assert s.minute == s.second == s.microsecond == 0
        assert e.minute == e.second == e.microsecond == 0
    # hour buckets: every hour of the snapped window appears in exactly one piece
    hours = sum(int((e - s) / HOUR) for s, e in pieces)
    assert hours == int((ceil_hour(end) - floor_hour(start)) / HOUR)


def test_default_split_is_seven_days():
    s = datetime(2026, 6, 1, tzinfo=UTC)
    pieces = split_window(s, s + timedelta(days=10))
    assert pieces == [(s, s + timedelta(days=7)), (s + timedelta(days=7), s + timedelta(days=10))]


def test_snap_outward_to_hours_and_naive_is_utc():
    s, e = snap_window(datetime(2026, 6, 1, 0, 30), datetime(2026, 6, 1, 10, 15))
    assert (s, e) == (datetime(2026, 6, 1, tzinfo=UTC), datetime(2026, 6, 1, 11, tzinfo=UTC))
    # an aware non-UTC input is converted first (02:30+02:00 == 00:30Z)
    s2, _ = snap_window(
        datetime(2026, 6, 1, 2, 30, tzinfo=timezone(timedelta(hours=2))),
        datetime(2026, 6, 1, 5, tzinfo=UTC),
    )
    assert s2 == datetime(2026, 6, 1, tzinfo=UTC)


def test_empty_window_rejected():
    t = datetime(2026, 6, 1, tzinfo=UTC)
    with pytest.raises(ValueError, match="empty window"):
        split_window(t, t)


def test_trailing_days_ends_at_current_hour():
    now = datetime(2026, 6, 10, 12, 34, 56, tzinfo=UTC)
    assert trailing_days(3, now) == (
        datetime(2026, 6, 7, 13, tzinfo=UTC),
        datetime(2026, 6, 10, 13, tzinfo=UTC),
    )
    assert trailing_days(3, lambda: now, include_current_hour=False) == (
        datetime(2026, 6, 7, 12, tzinfo=UTC),
        datetime(2026, 6, 10, 12, tzinfo=UTC),
    )
