"""Every request and every pull ends by its deadline, however slowly the server answers or
however long it asks to wait; the pull says what it gave up. Against the loopback fake on
127.0.0.1 through the real ``requests`` client (real time for the dripping server, the
virtual clock for server-requested waits)."""

from __future__ import annotations

import time

import pytest

from connectors.runpod import (
    RunpodConfigError,
    RunpodDeadlineError,
    RunpodRateLimitError,
    pull_billing,
)
from tests.connectors.runpod.conftest import NOW
from tests.fakes.runpod_api import Fault, landed_files

PODS = "/v2/billing/pods"
PARAMS = {"startTime": "2026-06-01T00:00:00Z", "endTime": "2026-06-02T00:00:00Z",
          "bucketSize": "hour"}


def real_time_client(make_client, **kw):
    # a read timeout far longer than the drip's interval: only the deadline can end the call
    return make_client(sleep=time.sleep, monotonic=time.monotonic, timeout=(2.0, 5.0), **kw)


@pytest.mark.parametrize("headers", [False, True], ids=["body", "status-line"])
def test_a_dripping_answer_is_cut_at_the_request_deadline(fake, make_client, headers):
    fake.inject(PODS, Fault.drip(0.05, headers=headers), times=10)
    client = real_time_client(make_client, request_deadline=1.0)
    t0 = time.monotonic()
    with pytest.raises(RunpodDeadlineError) as err:
        client.get_json(PODS, PARAMS)
    took = time.monotonic() - t0
    assert 0.9 <= took < 2.0, took
    msg = str(err.value)
    assert msg.startswith(f"GET {PODS} (no time window): cut off after 1.")
    assert "request deadline 1s" in msg and "still arriving" in msg
    assert len(fake.requests_to(PODS)) == 1  # the deadline is total: no second attempt


def test_a_pull_past_its_deadline_stops_and_names_every_call_it_gave_up(
        tmp_path, fake, make_client, window):
    fake.inject(PODS, Fault.drip(0.05), times=10)
    client = real_time_client(make_client, request_deadline=60.0, pull_deadline=1.0)
    t0 = time.monotonic()
    result = pull_billing(tmp_path, *window, client=client, now=NOW)
    assert time.monotonic() - t0 < 2.0
    # 10 days in 7-day chunks: 2 windows for each of the 4 kinds; pods come first
    assert len(result.given_up) == 8 and result.files == []
    assert "cut off after 1." in result.given_up[0]
    assert "the pull's deadline" in result.given_up[0]
    assert all("not requested, the pull's deadline (1s) had passed" in g
               for g in result.given_up[1:])
    assert "/v2/billing/network-volumes for window [2026-06-08T00:00:00Z" in result.given_up[5]
    assert len(fake.served) == 1


def test_a_request_cut_by_its_deadline_does_not_stop_the_rest_of_the_pull(
        tmp_path, fake, make_client, window, caplog):
    fake.inject(PODS, Fault.drip(0.05), times=10)
    client = real_time_client(make_client, request_deadline=0.5)
    result = pull_billing(tmp_path, *window, client=client, now=NOW)
    assert [g.split("): ")[0] + ")" for g in result.given_up] == [
        f"GET {PODS} for window [2026-06-01T00:00:00Z, 2026-06-08T00:00:00Z)",
        f"GET {PODS} for window [2026-06-08T00:00:00Z, 2026-06-11T00:00:00Z)"]
    assert sorted({f.kind for f in result.files}) == [
        "billing_account", "billing_network_volumes", "billing_serverless"]
    assert landed_files(tmp_path, "billing_pods") == []
    assert caplog.text.count("runpod pull gave up: GET /v2/billing/pods") == 2


def test_retry_after_is_honoured_only_while_the_deadline_allows(fake, make_client, clock):
    fake.inject(PODS, Fault.http(429, retry_after="100"), times=10)
    client = make_client(request_deadline=300.0)
    with pytest.raises(RunpodDeadlineError, match=r"giving up instead of waiting 100s after "
                       r"200\.0s and 3 attempt\(s\) \(request deadline 300s\); last: HTTP 429"):
        client.get_json(PODS, PARAMS)
    assert clock.sleeps == [100.0, 100.0]  # a third wait would have ended at the deadline


def test_a_retry_after_beyond_the_cap_is_not_slept(fake, make_client, clock):
    fake.inject(PODS, Fault.http(429, retry_after="900"), times=10)
    client = make_client()  # the default cap (settings.MAX_WAIT_S)
    with pytest.raises(RunpodRateLimitError, match=r"asked to wait 900s \(> max_wait 120s\)"):
        client.get_json(PODS, PARAMS)
    assert clock.sleeps == [] and len(fake.requests_to(PODS)) == 1


def test_a_long_retry_after_in_a_pull_is_given_up_within_the_pull_deadline(
        tmp_path, fake, make_client, clock, window):
    fake.inject(PODS, Fault.http(503, retry_after="90"), times=100)
    client = make_client(pull_deadline=250.0)
    start = clock.monotonic()
    result = pull_billing(tmp_path, *window, client=client, now=NOW)
    assert clock.monotonic() - start <= 250.0
    assert sum(clock.sleeps) <= 250.0 and len(result.given_up) == 2
    assert "giving up instead of waiting 90s" in result.given_up[0]
    assert len(result.files) == 6  # the other kinds' windows landed


@pytest.mark.parametrize("name", ["request_deadline", "pull_deadline"])
@pytest.mark.parametrize("value", [0, -1.0, float("nan")])
def test_a_deadline_must_be_positive(make_client, name, value):
    with pytest.raises(RunpodConfigError, match=f"{name} must be a positive number of "
                                                 f"seconds, got {value!r}"):
        make_client(**{name: value})
