"""pull_billing against the loopback fake: landing contract, retries, rate limits, faults."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from connectors.runpod import (
    BILLING_KINDS,
    LandingError,
    RunpodAPIError,
    RunpodNotFoundError,
    RunpodRateLimitError,
    RunpodResponseError,
    pull_billing,
)
from connectors.runpod import settings as rp_settings
from tests.fakes.runpod_api import (
    BILLING_KINDS as FAKE_KINDS,
)
from tests.fakes.runpod_api import (
    FakeRunpodAPI,
    Fault,
    canonical,
    landed_files,
    read_landed,
    strip_envelope,
)

NOW = datetime(2026, 6, 10, 12, 30, tzinfo=UTC)
W1 = ("2026-06-01T00:00:00Z", "2026-06-08T00:00:00Z")
W2 = ("2026-06-08T00:00:00Z", "2026-06-11T00:00:00Z")
KIND_TO_FAKE = {
    "billing_pods": "pods",
    "billing_serverless": "serverless",
    "billing_network_volumes": "network_volumes",
}
LAYOUT = re.compile(
    r"runpod/(billing_[a-z_]+)/pulled=(\d{8}T\d{6}Z)/"
    r"(billing_[a-z_]+)_(\d{8}T\d{6}Z)_(\d{8}T\d{6}Z)\.json$"
)


def _in_window(records, start, end):
    return [r for r in records if start <= r["startTime"] < end]


def _served_for(fake: FakeRunpodAPI, endpoint: str, params: dict) -> list:
    return [s for s in fake.successful(endpoint) if s.query == params]


def _landed_records(paths: list[Path]) -> list[dict]:
    return [rec for p in paths for rec in read_landed(p)["records"]]


# --------------------------------------------------------------------------- landing contract
def test_pull_lands_every_response_verbatim_per_contract(tmp_path, fake, client, dataset, window):
    result = pull_billing(tmp_path, *window, client=client, now=NOW)

    assert len(result.files) == 8  # 4 kinds x 2 windows (7 days + 3 days)
    for kind in BILLING_KINDS:
        files = landed_files(tmp_path, kind)
        assert len(files) == 2
        for path, (ws, we) in zip(files, (W1, W2), strict=True):
            m = LAYOUT.search(path.as_posix())
            assert m, path
            assert m.group(1) == m.group(3) == kind
            assert m.group(2) == "20260610T123000Z"
            assert (m.group(4), m.group(5)) == (
                ws.replace("-", "").replace(":", ""),
                we.replace("-", "").replace(":", ""),
            )
            doc = read_landed(path)
            env = doc["x_recon"]
            params = {"startTime": ws, "endTime": we, "bucketSize": "hour"}
            assert env["endpoint"] == rp_settings.BILLING_ENDPOINTS[kind]
            assert env["pulledAt"] == "2026-06-10T12:30:00Z"
            assert env["params"] == params
            assert "endpointId" not in env
            served = _served_for(fake, env["endpoint"], params)
            assert len(served) == 1
            # the file is the served body, every key and value, plus x_recon only
            assert strip_envelope(doc) == served[0].body
            assert set(doc) == {"records", "metadata", "x_recon"}
    # the union of landed records is the fake's data, nothing lost, nothing duplicated
    for kind, fkind in KIND_TO_FAKE.items():
        landed = _landed_records(landed_files(tmp_path, kind))
        assert canonical(landed) == canonical(dataset[fkind])
        id_field = FAKE_KINDS[fkind][1]
        spec_fields = {"startTime", "endTime", id_field, "totalAmount", *FAKE_KINDS[fkind][2]}
        assert all(set(r) == spec_fields for r in landed)
    account = _landed_records(landed_files(tmp_path, "billing_account"))
    assert len(account) == 24 * 10 and len({r["startTime"] for r in account}) == 240


def test_landed_bytes_keep_the_raw_body(tmp_path, fake, client, window):
    """Numbers are kept as the API wrote them (the body is spliced, not re-serialised)."""
    pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_pods"])
    path = landed_files(tmp_path, "billing_pods")[0]
    raw = path.read_bytes()
    assert raw.startswith(b'{"x_recon":')
    amount = read_landed(path)["records"][0]["gpuAmount"]
    assert repr(amount).encode() in raw


def test_in_progress_buckets_are_marked_provisional(tmp_path, fake, client, window):
    pull_billing(
        tmp_path, *window, client=client, now=NOW, kinds=["billing_pods", "billing_account"]
    )
    for kind in ("billing_pods", "billing_account"):
        first, last = (read_landed(p) for p in landed_files(tmp_path, kind))
        assert first["x_recon"]["provisionalRecordIndexes"] == []
        marked = set(last["x_recon"]["provisionalRecordIndexes"])
        expect = {i for i, r in enumerate(last["records"]) if r["endTime"] > "2026-06-10T12:30:00Z"}
        assert marked == expect
        # the bucket 12:00-13:00 is in progress at 12:30; 11:00-12:00 is final
        starts = {last["records"][i]["startTime"] for i in marked}
        assert "2026-06-10T12:00:00Z" in starts and "2026-06-10T11:00:00Z" not in starts
        assert min(starts) == "2026-06-10T12:00:00Z"


# --------------------------------------------------------------------------- retries
def test_retries_lose_and_duplicate_nothing(tmp_path, fake, make_client, clock, dataset, window):
    client = make_client(timeout=(2.0, 0.5))
    fake.inject("/v2/billing/pods", Fault.http(429, retry_after="1"))
    fake.inject("/v2/billing/pods", Fault.truncated_transfer())
    fake.inject("/v2/billing/serverless", Fault.http(500))
    fake.inject("/v2/billing/serverless", Fault.disconnect())
    fake.inject("/v2/billing/network-volumes", Fault.http(503, retry_after="0"))
    fake.inject("/v2/billing/network-volumes", Fault.slow(1.2))
    fake.inject("/v2/billing", Fault.truncated_json())
    fake.inject("/v2/billing", Fault.http(502))

    result = pull_billing(tmp_path, *window, client=client, now=NOW)

    assert len(result.files) == 8
    assert client.calls == 8 + 8  # every fault cost exactly one extra request
    assert 1.0 in clock.sleeps and 0.0 in clock.sleeps
    for kind, fkind in KIND_TO_FAKE.items():
        files = landed_files(tmp_path, kind)
        assert len(files) == 2  # one file per window, no leftovers from failed attempts
        assert canonical(_landed_records(files)) == canonical(dataset[fkind])
    # per pull: the landed records are exactly those of the successful answers
    for kind in BILLING_KINDS:
        ep = rp_settings.BILLING_ENDPOINTS[kind]
        served = [rec for s in fake.successful(ep) for rec in s.body["records"]]
        assert canonical(_landed_records(landed_files(tmp_path, kind))) == canonical(served)
    assert not list(tmp_path.rglob("*.tmp"))


def test_retry_after_is_honoured_exactly(tmp_path, fake, make_client, clock, window):
    client = make_client(jitter=True)  # jitter applies to backoff, never to Retry-After
    fake.inject("/v2/billing/pods", Fault.http(429, retry_after="7"))
    fake.inject("/v2/billing/pods", Fault.http(503, retry_after="3"))
    pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_pods"])
    assert clock.sleeps == [7.0, 3.0]


def test_backoff_is_exponential_and_capped(tmp_path, fake, make_client, clock, window):
    client = make_client(backoff_base=1.0, backoff_cap=3.0, max_retries=5)
    fake.inject("/v2/billing/pods", Fault.http(500), times=4)
    pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_pods"])
    assert clock.sleeps == [1.0, 2.0, 3.0, 3.0]


def test_too_long_retry_after_fails_instead_of_sleeping(tmp_path, fake, make_client, clock, window):
    client = make_client(max_wait=60)
    fake.inject("/v2/billing/pods", Fault.http(429, retry_after="3600"))
    with pytest.raises(RunpodRateLimitError, match=r"wait 3600s") as err:
        pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_pods"])
    assert "/v2/billing/pods" in str(err.value) and W1[0] in str(err.value)
    assert clock.sleeps == []


def test_gives_up_with_clear_error_after_max_retries(tmp_path, fake, make_client, window):
    client = make_client(max_retries=2)
    fake.inject("/v2/billing/pods", Fault.http(500, detail="database on fire"), times=10)
    with pytest.raises(RunpodAPIError) as err:
        pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_pods"])
    msg = str(err.value)
    assert "GET /v2/billing/pods" in msg and f"[{W1[0]}, {W1[1]})" in msg
    assert "HTTP 500" in msg and "database on fire" in msg and "3 attempt(s)" in msg
    assert err.value.status == 500
    assert len(fake.requests_to("/v2/billing/pods")) == 3
    assert landed_files(tmp_path, "billing_pods") == []


def test_invalid_json_is_retried_then_a_clear_error(tmp_path, fake, make_client, window):
    client = make_client(max_retries=1)
    fake.inject("/v2/billing/serverless", Fault.truncated_json(), times=5)
    with pytest.raises(RunpodResponseError) as err:
        pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_serverless"])
    msg = str(err.value)
    assert "invalid JSON" in msg and "/v2/billing/serverless" in msg and W1[0] in msg
    assert len(fake.requests_to("/v2/billing/serverless")) == 2
    assert landed_files(tmp_path, "billing_serverless") == []


def test_problem_json_error_names_endpoint_window_and_problem(tmp_path, fake, client, window):
    fake.inject(
        "/v2/billing/serverless",
        Fault.http(
            422,
            detail="Request validation failed.",
            errors=("startTime: must be before endTime", "$: additional properties 'x'"),
        ),
    )
    with pytest.raises(RunpodAPIError) as err:
        pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_serverless"])
    msg = str(err.value)
    for part in (
        "GET /v2/billing/serverless",
        f"[{W1[0]}, {W1[1]})",
        "HTTP 422",
        "Unprocessable Entity",
        "Request validation failed.",
        "startTime: must be before endTime",
        "additional properties 'x'",
    ):
        assert part in msg
    assert err.value.status == 422 and err.value.window == W1
    assert len(err.value.errors) == 2
    assert len(fake.requests_to("/v2/billing/serverless")) == 1  # 4xx is not retried


# --------------------------------------------------------------------------- rate limits
def test_ratelimit_remaining_zero_waits_for_reset(tmp_path, clock, dataset, make_client, window):
    with FakeRunpodAPI("k-rl", billing=dataset, clock=clock, now=NOW, rate_limit=(3, 60)) as fake:
        client = make_client(api_key="k-rl", base_url=fake.base_url)
        start = window[0]
        pull_billing(tmp_path, start, start + timedelta(days=2), client=client, now=NOW)
        assert [s.status for s in fake.served] == [200, 200, 200, 200]  # never a 429
        assert clock.sleeps == [60.0]  # waited for the minute window to reset
        assert client.rate_limit.policy["minute"] == {"q": 3, "w": 60}


def test_fake_enforces_its_quota_when_headers_are_ignored(clock, dataset, make_client):
    """Guard for the test above: a client that does not wait really gets a 429."""
    with FakeRunpodAPI("k-rl", billing=dataset, clock=clock, now=NOW, rate_limit=(1, 60)) as fake:
        client = make_client(api_key="k-rl", base_url=fake.base_url, max_retries=0)
        client.get_json("/v2/network-volumes")
        client.rate_limit.blocked_until = None  # pretend the header was not read
        with pytest.raises(RunpodRateLimitError, match="HTTP 429"):
            client.get_json("/v2/network-volumes")


def test_ratelimit_reset_beyond_max_wait_fails(tmp_path, clock, dataset, make_client, window):
    with FakeRunpodAPI("k-rl", billing=dataset, clock=clock, now=NOW, rate_limit=(1, 3600)) as fake:
        client = make_client(api_key="k-rl", base_url=fake.base_url, max_wait=900)
        with pytest.raises(RunpodRateLimitError, match=r"window 'minute' exhausted") as err:
            pull_billing(tmp_path, *window, client=client, now=NOW)
        assert "/v2/billing/pods" in str(err.value) and W2[0] in str(err.value)
        assert len(fake.served) == 1


# --------------------------------------------------------------------------- re-pulls
def test_restated_bucket_lands_as_a_new_version(tmp_path, fake, client, dataset, window):
    bucket = datetime(2026, 6, 2, 5, tzinfo=UTC)
    fake.restate("pods", "pod_a1", bucket, 99.5, from_pull=2)

    first = pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_pods"])
    p1 = first.files[0].path
    bytes_before = p1.read_bytes()
    second = pull_billing(
        tmp_path, *window, client=client, now=NOW + timedelta(hours=1), kinds=["billing_pods"]
    )
    p2 = second.files[0].path

    assert p1 != p2 and p1.name == p2.name  # same window, new pulled= folder
    assert p1.parent.name == "pulled=20260610T123000Z"
    assert p2.parent.name == "pulled=20260610T133000Z"
    assert p1.read_bytes() == bytes_before  # the earlier version is untouched

    def amount(path):
        recs = read_landed(path)["records"]
        return [
            r["totalAmount"]
            for r in recs
            if r["podId"] == "pod_a1" and r["startTime"] == "2026-06-02T05:00:00Z"
        ]

    original = [
        r["totalAmount"]
        for r in dataset["pods"]
        if r["podId"] == "pod_a1" and r["startTime"] == "2026-06-02T05:00:00Z"
    ]
    assert amount(p1) == original and amount(p2) == [99.5]
    # per pull, the landed records equal what the fake served in that pull
    for result in (first, second):
        stamp = result.files[0].path.parent.name
        landed = [r for f in result.files for r in read_landed(f.path)["records"]]
        assert all(f.path.parent.name == stamp for f in result.files)
        assert len(landed) == len(dataset["pods"])
    assert len(landed_files(tmp_path, "billing_pods")) == 4


def test_same_second_repull_never_overwrites(tmp_path, fake, client, clock, window):
    pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_account"])
    before = {p: p.read_bytes() for p in landed_files(tmp_path, "billing_account")}

    # a frozen clock can never reach a new second: refuse rather than overwrite
    with pytest.raises(LandingError, match="refusing to overwrite"):
        pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_account"])
    assert {p: p.read_bytes() for p in landed_files(tmp_path, "billing_account")} == before

    # a moving clock: the re-pull waits for the next second and lands beside
    def moving_now():
        return NOW + timedelta(seconds=clock.monotonic() - 1000.0)

    clock.t = 1000.0
    again = pull_billing(
        tmp_path, *window, client=client, now=moving_now, kinds=["billing_account"]
    )
    assert again.files[0].path.parent.name == "pulled=20260610T123001Z"
    assert len(landed_files(tmp_path, "billing_account")) == 4
    assert {p: p.read_bytes() for p in before} == before


def test_late_last_hour_is_empty_then_filled_by_a_repull(tmp_path, fake, client, dataset, window):
    fake.empty_last_hour()
    last_hour = "2026-06-10T23:00:00Z"
    first = pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_pods"])
    got = [r for f in first.files for r in read_landed(f.path)["records"]]
    assert last_hour not in {r["startTime"] for r in got}
    assert canonical(got) == canonical([r for r in dataset["pods"] if r["startTime"] != last_hour])

    fake.withhold_from = None  # the late data arrives
    second = pull_billing(
        tmp_path, *window, client=client, now=NOW + timedelta(days=1), kinds=["billing_pods"]
    )
    got2 = [r for f in second.files for r in read_landed(f.path)["records"]]
    assert canonical(got2) == canonical(dataset["pods"])
    assert all(
        read_landed(f.path)["x_recon"]["provisionalRecordIndexes"] == [] for f in second.files
    )


# --------------------------------------------------------------------------- API drift
def test_renamed_network_volumes_path_falls_back_once(
    tmp_path, clock, dataset, make_client, window, caplog
):
    with FakeRunpodAPI(
        "k-old", billing=dataset, clock=clock, now=NOW, legacy_network_volumes_only=True
    ) as fake:
        client = make_client(api_key="k-old", base_url=fake.base_url)
        with caplog.at_level(logging.WARNING, logger="connectors.runpod"):
            result = pull_billing(
                tmp_path, *window, client=client, now=NOW, kinds=["billing_network_volumes"]
            )
        assert len(fake.requests_to("/v2/billing/network-volumes")) == 1  # tried once
        assert len(fake.requests_to("/v2/billing/networkvolumes")) == 2  # both windows
    files = landed_files(tmp_path, "billing_network_volumes")
    assert len(files) == 2
    assert {read_landed(p)["x_recon"]["endpoint"] for p in files} == {"/v2/billing/networkvolumes"}
    assert canonical(_landed_records(files)) == canonical(dataset["network_volumes"])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        "/v2/billing/network-volumes" in w and "/v2/billing/networkvolumes" in w for w in warnings
    )
    assert result.warnings


def test_network_volumes_404_on_both_spellings_is_clear(tmp_path, fake, client, window):
    fake.inject("/v2/billing/network-volumes", Fault.http(404))
    with pytest.raises(RunpodNotFoundError) as err:
        pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_network_volumes"])
    msg = str(err.value)
    assert "/v2/billing/network-volumes" in msg and "/v2/billing/networkvolumes" in msg
    assert W1[0] in msg


def test_other_404_is_not_redirected_to_legacy(tmp_path, fake, client, window):
    fake.inject("/v2/billing/pods", Fault.http(404))
    with pytest.raises(RunpodNotFoundError):
        pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_pods"])
    assert fake.requests_to("/v2/billing/networkvolumes") == []


def test_unknown_record_fields_are_kept(tmp_path, clock, dataset, make_client, window):
    extra = {"gpuSeconds": 3600, "breakdown": {"spot": 0.12}}
    with FakeRunpodAPI(
        "k-x", billing=dataset, clock=clock, now=NOW, extra_record_fields=extra
    ) as fake:
        client = make_client(api_key="k-x", base_url=fake.base_url)
        pull_billing(tmp_path, *window, client=client, now=NOW)
    for kind in BILLING_KINDS:
        recs = _landed_records(landed_files(tmp_path, kind))
        assert recs and all(
            r["gpuSeconds"] == 3600 and r["breakdown"] == {"spot": 0.12} for r in recs
        )


@pytest.mark.parametrize("missing", ["records", "metadata"])
def test_missing_required_field_is_a_clear_error(tmp_path, fake, client, window, missing):
    fake.inject("/v2/billing/pods", Fault.drop_field(missing))
    with pytest.raises(RunpodResponseError) as err:
        pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_pods"])
    msg = str(err.value)
    assert f"required field {missing!r}" in msg
    assert "GET /v2/billing/pods" in msg and f"[{W1[0]}, {W1[1]})" in msg
    assert landed_files(tmp_path, "billing_pods") == []


class _RetypingFake(FakeRunpodAPI):
    """The fake, but every billing answer has top-level fields replaced (e.g. a null)."""

    def __init__(self, *args, replace: dict, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.replace = replace

    def handle(self, path, query):
        body, pending = super().handle(path, query)
        if path.startswith("/v2/billing"):
            body.update(self.replace)
        return body, pending


@pytest.mark.parametrize(
    "field, value, problem",
    [
        ("metadata", None, "'metadata' is null, expected an object"),
        ("metadata", [], "'metadata' is an array, expected an object"),
        ("metadata", "n/a", "'metadata' is a string, expected an object"),
        ("records", None, "'records' is null, expected an array"),
        ("records", {"0": {}}, "'records' is an object, expected an array"),
    ],
)
def test_wrongly_typed_required_field_is_a_clear_error(
    tmp_path, clock, dataset, make_client, window, field, value, problem
):
    """Present is not enough: the loader takes a billing file only with a `records` array and
    a `metadata` object (the spec's types), so e.g. a null `metadata` landed as a good pull
    would have every record of the window quarantined later."""
    with _RetypingFake(
        "k-typed", billing=dataset, clock=clock, now=NOW, replace={field: value}
    ) as fake:
        client = make_client(api_key="k-typed", base_url=fake.base_url)
        with pytest.raises(RunpodResponseError) as err:
            pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_pods"])
        assert len(fake.served) == 1  # a well-formed 2xx: refused, not retried
    msg = str(err.value)
    assert problem in msg
    assert "GET /v2/billing/pods" in msg and f"[{W1[0]}, {W1[1]})" in msg
    assert err.value.endpoint == "/v2/billing/pods" and err.value.status == 200
    assert landed_files(tmp_path, "billing_pods") == []


def test_only_v2_paths_on_the_api_host_are_called(tmp_path, fake, client, window):
    from connectors.runpod import RunpodConfigError, snapshot_inventory

    pull_billing(tmp_path, *window, client=client, now=NOW)
    snapshot_inventory(tmp_path, client=client, now=NOW)
    assert fake.served and all(s.path.startswith("/v2/") for s in fake.served)
    assert not any("graphql" in s.path or s.path.startswith("/v1") for s in fake.served)
    assert rp_settings.BASE_URL == "https://api.runpod.io"
    with pytest.raises(RunpodConfigError):
        client.get_json("/v1/pods")
    with pytest.raises(RunpodConfigError):
        client.get_json("/graphql")
