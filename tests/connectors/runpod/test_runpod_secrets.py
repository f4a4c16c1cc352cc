"""The API key: taken from the parameter or RUNPOD_API_KEY, and never leaked."""

from __future__ import annotations

import logging
import traceback
from datetime import UTC, datetime

import pytest

from connectors.runpod import (
    RunpodAPIError,
    RunpodAuthError,
    RunpodClient,
    RunpodConfigError,
    RunpodTransportError,
    pull_billing,
    snapshot_inventory,
)
from connectors.runpod import settings as rp_settings
from tests.fakes import runpod_api
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


def _key_fragments_in(text: str, key: str, n: int = 12) -> list[str]:
    """Every ``n``-character piece of ``key`` that occurs in ``text`` (a partial leak)."""
    return [key[i : i + n] for i in range(len(key) - n + 1) if key[i : i + n] in text]


@pytest.mark.parametrize("past_cut", [1, 4, 20])
def test_key_straddling_the_error_snippet_cut_is_not_leaked(
    tmp_path, clock, dataset, make_client, window, caplog, monkeypatch, past_cut
):
    """A non-JSON error page is quoted only up to ERROR_BODY_SNIPPET characters; a key that
    the cut splits must still be redacted (the body is redacted before it is cut)."""
    key = "rpa_SNIPPETCUT_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

    def html_gateway_page(handler, status, detail, headers, entry, errors=None):
        # A proxy in front of the API: an HTML page dumping the request headers, padded so
        # that the snippet cut falls `past_cut` characters before the end of the key.
        head = f"<html><body><h1>{status} Bad Gateway</h1><pre>"
        line = f"request headers: Authorization: {handler.headers.get('Authorization')}"
        pad = rp_settings.ERROR_BODY_SNIPPET + past_cut - len(head) - len(line)
        body = (head + "x" * pad + line + "</pre></body></html>").encode()
        entry.status, entry.body = status, None
        handler._send(entry, status, body, "text/html", headers)

    monkeypatch.setattr(runpod_api._Handler, "_problem", html_gateway_page)
    caplog.set_level(logging.DEBUG)
    with FakeRunpodAPI(key, billing=dataset, clock=clock, now=NOW) as fake:
        client = make_client(api_key=key, base_url=fake.base_url, max_retries=1)
        fake.inject("/v2/billing/pods", Fault.http(502), times=2)
        with pytest.raises(RunpodAPIError) as err:
            pull_billing(tmp_path, *window, client=client, now=NOW, kinds=["billing_pods"])
        assert [s.status for s in fake.served] == [502, 502]  # first try and one retry
    text = "".join(traceback.format_exception(err.value))
    assert "HTTP 502" in str(err.value) and "request headers: Authorization: Bearer ***" in text
    retry_logs = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert retry_logs and all("Bearer ***" in m for m in retry_logs)
    for t in (text, str(err.value.detail), caplog.text, *retry_logs):
        assert key not in t
        assert _key_fragments_in(t, key) == []


BAD_KEY = "rpa_BADPASTE_0123456789\nabcdefXYZ"


@pytest.mark.parametrize(
    "bad, position, what",
    [
        (BAD_KEY, 24, "a line break"),
        ("rpa_CRLF_0123456789\r\nabcdefXYZ", 20, "a line break"),
        ("rpa_SPACE_0123456789 abcdefXYZ", 21, "whitespace"),
        ("rpa_NUL_0123456789\x00abcdefXYZ", 19, "a control character"),
        ("rpa_ZWSP_0123456789\u200babcdefXYZ", 20, "a non-ASCII character"),
    ],
)
def test_key_that_is_not_a_header_value_is_refused_without_echoing_it(
    fake, make_client, caplog, bad, position, what
):
    """A badly pasted key (line break inside) made http.client raise an unwrapped
    ``ValueError: Invalid header value b'Bearer <key>'``; it is refused at construction with a
    message that says what is wrong and where, and never quotes the key."""
    caplog.set_level(logging.DEBUG)
    with pytest.raises(RunpodConfigError) as err:
        client = make_client(api_key=bad)  # the loopback fake, even if this regresses
        client.get_json("/v2/pods")
    msg = str(err.value)
    assert f"contains {what}" in msg and f"at position {position} of {len(bad)}" in msg
    assert "from api_key" in msg
    text = "".join(traceback.format_exception(err.value)) + caplog.text
    for part in bad.split():
        assert part not in text and _key_fragments_in(text, part, n=8) == []
    assert fake.served == []


def test_key_from_env_that_is_not_a_header_value_names_the_variable(fake, make_client, monkeypatch):
    monkeypatch.setenv("RUNPOD_API_KEY", BAD_KEY)
    with pytest.raises(RunpodConfigError, match=r"from RUNPOD_API_KEY: contains a line break") as e:
        make_client(api_key=None).get_json("/v2/pods")
    assert "rpa_BADPASTE" not in str(e.value) and "abcdefXYZ" not in str(e.value)
    assert fake.served == []


@pytest.mark.parametrize("key", ["rpa_UNCHAINED_0123456789", "rpa_BACK\\SLASH_0123456789"])
def test_unexpected_http_stack_error_is_wrapped_redacted_and_unchained(fake, make_client, key):
    """Any other exception from the session (here http.client's real "Invalid header value
    b'Bearer ...'", as if a bad value got past the constructor) becomes a RunpodTransportError
    whose text is redacted (also the repr spelling of a key with a backslash) and that chains
    nothing that still holds the original message."""
    client = make_client(api_key=key)
    client._auth._key = key + "\r\nX-Injected: 1"  # not a valid header value
    with pytest.raises(RunpodTransportError) as err:
        client.get_json("/v2/pods")
    exc = err.value
    assert "GET /v2/pods" in str(exc) and "ValueError" in str(exc) and "***" in str(exc)
    assert exc.__cause__ is None and exc.__context__ is None
    text = "".join(traceback.format_exception(exc))
    assert "UNCHAINED" not in text and "SLASH" not in text
    assert client.calls == 1 and fake.served == []  # not retried, nothing reached the server
