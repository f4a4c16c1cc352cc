"""The fake Runpod API answers in the shapes of the OpenAPI spec, and behaves like the API."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import requests

from tests.fakes.runpod_api import (
    Fault,
    find_openapi_spec,
    load_openapi_spec,
    response_schema,
    validate,
    validate_ratelimit_header,
)

pytestmark = pytest.mark.skipif(
    find_openapi_spec() is None, reason="Runpod openapi-v2.json not found (set RUNPOD_OPENAPI_SPEC)"
)


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    loaded = load_openapi_spec()
    assert loaded is not None
    return loaded


@pytest.fixture
def http(fake):
    s = requests.Session()
    s.trust_env = False
    s.headers["Authorization"] = f"Bearer {fake.api_key}"

    def get(path: str, **params: str) -> requests.Response:
        return s.get(fake.base_url + path, params=params, timeout=5)

    yield get
    s.close()


def _check(spec, template: str, resp: requests.Response) -> list[str]:
    media, schema = response_schema(spec, template, resp.status_code)
    assert resp.headers["Content-Type"] == media
    errors = validate(resp.json(), schema, spec)
    if resp.status_code != 401:  # the spec sends RateLimit on authenticated answers
        for h in ("RateLimit", "RateLimit-Policy"):
            errors += validate_ratelimit_header(resp.headers[h])
    return errors


WINDOW = {"startTime": "2026-06-01T00:00:00Z", "endTime": "2026-06-03T00:00:00Z"}


@pytest.mark.parametrize(
    ("template", "path", "params"),
    [
        ("/v2/billing", "/v2/billing", {**WINDOW, "bucketSize": "hour"}),
        ("/v2/billing", "/v2/billing", {**WINDOW, "bucketSize": "day"}),
        ("/v2/billing/pods", "/v2/billing/pods", {**WINDOW, "bucketSize": "hour"}),
        (
            "/v2/billing/pods",
            "/v2/billing/pods",
            {**WINDOW, "bucketSize": "day", "podId": "pod_a1"},
        ),
        ("/v2/billing/serverless", "/v2/billing/serverless", {**WINDOW, "bucketSize": "hour"}),
        (
            "/v2/billing/network-volumes",
            "/v2/billing/network-volumes",
            {"lastN": "5", "bucketSize": "hour"},
        ),
        ("/v2/pods", "/v2/pods", {"includeClusterPods": "true"}),
        ("/v2/serverless", "/v2/serverless", {}),
        ("/v2/serverless/{id}/workers", "/v2/serverless/ep_x1/workers", {}),
        ("/v2/serverless/{id}/workers", "/v2/serverless/ep_y2/workers", {}),
        ("/v2/network-volumes", "/v2/network-volumes", {}),
        ("/v2/catalog/gpus", "/v2/catalog/gpus", {}),
    ],
)
def test_fake_answers_match_spec_schemas(spec, http, template, path, params):
    resp = http(path, **params)
    assert resp.status_code == 200
    body = resp.json()
    assert _check(spec, template, resp) == []
    if "records" in body:
        assert body["records"], "empty answers would make the schema check vacuous"


def test_fake_errors_are_problem_json_per_spec(spec, fake, http):
    s = requests.Session()
    s.trust_env = False
    unauth = s.get(fake.base_url + "/v2/pods", timeout=5)
    s.close()
    assert unauth.status_code == 401
    assert unauth.json()["detail"] == "missing bearer token"
    assert _check(spec, "/v2/pods", unauth) == []

    fake.inject("/v2/billing/pods", Fault.http(429, retry_after="1"))
    limited = http("/v2/billing/pods", **WINDOW)
    assert limited.status_code == 429 and limited.headers["Retry-After"] == "1"
    assert _check(spec, "/v2/billing/pods", limited) == []

    bad = http("/v2/billing/pods", **WINDOW, bucketSize="fortnight")
    assert bad.status_code == 422 and bad.json()["errors"]
    assert _check(spec, "/v2/billing/pods", bad) == []

    missing = http("/v2/serverless/nope/workers")
    assert missing.status_code == 404
    assert _check(spec, "/v2/serverless/{id}/workers", missing) == []


def test_validator_catches_broken_bodies(spec, http):
    """The schema check can fail: damaged copies of a valid answer are rejected."""
    _, billing_schema = response_schema(spec, "/v2/billing/pods", 200)
    good = http("/v2/billing/pods", **WINDOW, bucketSize="hour").json()
    assert validate(good, billing_schema, spec) == []

    no_id = copy.deepcopy(good)
    del no_id["records"][0]["podId"]
    assert any("podId" in e for e in validate(no_id, billing_schema, spec))

    wrong_type = copy.deepcopy(good)
    wrong_type["records"][0]["totalAmount"] = "1.5"
    assert validate(wrong_type, billing_schema, spec)

    bad_bucket = copy.deepcopy(good)
    bad_bucket["metadata"]["query"]["bucketSize"] = "minute"
    assert validate(bad_bucket, billing_schema, spec)

    _, pods_schema = response_schema(spec, "/v2/pods", 200)
    pods = http("/v2/pods").json()
    assert validate(pods, pods_schema, spec) == []
    pods["pods"][0]["mounts"]["bogus"] = 1  # Mounts has additionalProperties: false
    assert any("bogus" in e for e in validate(pods, pods_schema, spec))

    assert validate_ratelimit_header('"minute";r=0;t=12') == []
    assert validate_ratelimit_header("minute r=0") != []


def test_fake_snaps_window_and_filters_by_bucket_and_id(http):
    body = http(
        "/v2/billing/pods",
        startTime="2026-06-01T02:30:00Z",
        endTime="2026-06-01T05:10:00Z",
        bucketSize="hour",
        podId="pod_a1",
    ).json()
    assert body["metadata"]["query"] == {
        "startTime": "2026-06-01T02:00:00Z",
        "endTime": "2026-06-01T06:00:00Z",
        "bucketSize": "hour",
        "podId": "pod_a1",
    }
    assert [r["startTime"][11:13] for r in body["records"]] == ["02", "03", "04", "05"]
    assert {r["podId"] for r in body["records"]} == {"pod_a1"}

    hourly = http(
        "/v2/billing/pods",
        startTime="2026-06-01T00:00:00Z",
        endTime="2026-06-02T00:00:00Z",
        bucketSize="hour",
        podId="pod_a1",
    ).json()
    daily = http(
        "/v2/billing/pods",
        startTime="2026-06-01T07:00:00Z",
        endTime="2026-06-01T08:00:00Z",
        podId="pod_a1",
    ).json()  # default bucket: day
    assert daily["metadata"]["query"]["startTime"] == "2026-06-01T00:00:00Z"
    assert daily["metadata"]["query"]["endTime"] == "2026-06-02T00:00:00Z"
    assert len(daily["records"]) == 1
    assert daily["records"][0]["totalAmount"] == pytest.approx(
        sum(r["totalAmount"] for r in hourly["records"])
    )


def test_fake_rejects_wrong_key(fake):
    s = requests.Session()
    s.trust_env = False
    resp = s.get(fake.base_url + "/v2/pods", headers={"Authorization": "Bearer nope"}, timeout=5)
    s.close()
    assert resp.status_code == 401
    assert resp.headers["Content-Type"] == "application/problem+json"
    assert "RateLimit" not in resp.headers
