"""Fixtures for the Runpod connector tests: a loopback fake API, a virtual clock, a client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from connectors.runpod import RunpodClient
from tests.fakes.runpod_api import FakeRunpodAPI, VirtualClock, make_billing

API_KEY = "rpa_TESTKEY_0123456789abcdef"
T0 = datetime(2026, 6, 1, tzinfo=UTC)
DAYS = 10
T_END = datetime(2026, 6, 11, tzinfo=UTC)
# "now" for pulls: mid-afternoon of the last day, so that day's later buckets are in progress.
NOW = datetime(2026, 6, 10, 12, 30, tzinfo=UTC)


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def dataset() -> dict[str, list[dict[str, Any]]]:
    return make_billing(T0, hours=24 * DAYS)


@pytest.fixture
def fake(clock: VirtualClock, dataset: dict[str, list[dict[str, Any]]]) -> Iterator[FakeRunpodAPI]:
    with FakeRunpodAPI(API_KEY, billing=dataset, clock=clock, now=NOW) as api:
        yield api


@pytest.fixture
def make_client(fake: FakeRunpodAPI, clock: VirtualClock) -> Iterator[Callable[..., RunpodClient]]:
    clients: list[RunpodClient] = []

    def _make(api_key: str | None = API_KEY, **kw: Any) -> RunpodClient:
        opts: dict[str, Any] = {
            "base_url": fake.base_url,
            "sleep": clock.sleep,
            "monotonic": clock.monotonic,
            "trust_env": False,
            "jitter": False,
            "timeout": (2.0, 2.0),
        }
        opts.update(kw)
        client = RunpodClient(api_key, **opts)
        clients.append(client)
        return client

    yield _make
    for c in clients:
        c.close()


@pytest.fixture
def window() -> tuple[datetime, datetime]:
    """The fake's full data range: [T0, T_END)."""
    return T0, T_END


@pytest.fixture
def client(make_client: Callable[..., RunpodClient]) -> RunpodClient:
    return make_client()
