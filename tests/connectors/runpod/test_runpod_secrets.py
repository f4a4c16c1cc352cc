"""The API key: taken from the parameter or RUNPOD_API_KEY, and never leaked."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from connectors.runpod import (
    RunpodAPIError,
    RunpodAuthError,
    RunpodClient,
    RunpodConfigError,
    pull_billing,
    snapshot_inventory,
)
from tests.fakes.runpod_api import FakeRunpodAPI, Fault

PLANTED = "rpa_PLANTED_9f8e7d6c5b4a3210ZZ"
NOW = datetime(2026, 6, 10, 12, 30, tzinfo=UTC)


def test_api_key_never_appears_in_logs_errors_or_files(
    tmp_path, clock, dataset, make_client, window, caplog, capsys
):
    caplog.set_level(logging.DEBUG)  # every logger, urllib3 included
    texts: list[str] = []
    with FakeRunpodAPI(
        PLANTED, billing=dataset, clock=clock, now=NOW, echo_auth_in_errors=True
    ) as fake:
        client = make_client(api_key=PLANTED, base_url=fake.base_url, max_retries=2)
        texts += [repr(client), repr(client.session.headers), repr(client._auth), str(client._auth)]
        # errors whose server-side detail quotes the Authorization header, then success
        fake.inject("/v2/billing/pods", Fault.http(500))
        fake.inject("/v2/billing/serverless", Fault.http(429, retry_after="0"))
        pull_billing(tmp_path, *window, client=client, now=NOW)
        snapshot_inventory(tmp_path, client=client, now=NOW)
        # an error that is raised to the caller
        fake.inject("/v2/pods", Fault.http(503), times=5)
        with pytest.raises(RunpodAPIError) as err:
            snapshot_inventory(tmp_path / "other", client=client, now=NOW)
        texts += [str(err.value), repr(err.value), str(err.value.detail), str(err.value.args)]
        # the server really did echo the key, so redaction had something to remove
        echoed = [
            s.body["detail"] for s in fake.served if s.status >= 400 and isinstance(s.body, dict)
        ]
        assert echoed and all(PLANTED in d for d in echoed)

    # a 401 whose detail echoes the (wrong) key presented
    with FakeRunpodAPI("the-right-key", clock=clock, echo_auth_in_errors=True) as fake2:
        bad = make_client(api_key=PLANTED, base_url=fake2.base_url)
        with pytest.raises(RunpodAuthError) as err2:
            snapshot_inventory(tmp_path / "bad", client=bad, now=NOW)
        assert PLANTED in fake2.served[0].body["detail"]
    texts += [str(err2.value), repr(err2.value), str(err2.value.detail)]
    assert "HTTP 401" in str(err2.value) and "GET /v2/pods" in str(err2.value)

    captured = capsys.readouterr()
    texts += [caplog.text, captured.out, captured.err]
    texts += [r.getMessage() for r in caplog.records]
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) >= 13
    assert caplog.records, "nothing was logged: the log check would be vacuous"
    assert "***" in caplog.text  # the echoed key was logged in redacted form
    for text in texts:
        assert PLANTED not in text
    for path in files:
        assert PLANTED.encode() not in path.read_bytes(), path
        assert PLANTED not in str(path)


def test_api_key_defaults_to_env(monkeypatch, fake, clock):
    monkeypatch.setenv("RUNPOD_API_KEY", fake.api_key)
    client = RunpodClient(base_url=fake.base_url, sleep=clock.sleep, trust_env=False)
    try:
        assert client.get_json("/v2/network-volumes").status == 200
    finally:
        client.close()


def test_explicit_key_wins_over_env(monkeypatch, fake, clock):
    monkeypatch.setenv("RUNPOD_API_KEY", "stale-env-key")
    client = RunpodClient(fake.api_key, base_url=fake.base_url, sleep=clock.sleep, trust_env=False)
    try:
        assert client.get_json("/v2/network-volumes").status == 200
    finally:
        client.close()


def test_missing_key_is_a_config_error(monkeypatch):
    monkeypatch.delenv("RUNPOD_API_KEY", raising=False)
    with pytest.raises(RunpodConfigError, match="RUNPOD_API_KEY"):
        RunpodClient()
    with pytest.raises(RunpodConfigError):
        RunpodClient("   ")
