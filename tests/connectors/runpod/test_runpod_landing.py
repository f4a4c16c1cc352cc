"""Landing-file primitives: verbatim splice, no overwrite, redaction of messages."""

from __future__ import annotations

import json

import pytest

from connectors.runpod import LandingError, RunpodClient, RunpodError
from connectors.runpod.landing import landing_bytes, write_new_file

META = {"endpoint": "/v2/billing/pods", "pulledAt": "2026-06-10T12:30:00Z", "params": {}}


def test_landing_keeps_the_raw_number_text():
    raw = (
        b' {"records": [{"totalAmount": 1.50, "gpuAmount": 0.1234567890123456789,'
        b' "diskAmount": 1e-3}], "metadata": {"recordCount": 1}}'
    )
    body = json.loads(raw)
    out = landing_bytes(raw, body, META)
    for literal in (b"1.50", b"0.1234567890123456789", b"1e-3"):
        assert literal in out
    doc = json.loads(out)
    assert doc.pop("x_recon") == META
    assert doc == body


def test_landing_falls_back_when_raw_does_not_match_body():
    body = {"records": [], "metadata": {"recordCount": 0}}
    out = landing_bytes(b'{"records": [1]}', body, META)  # raw and body disagree
    doc = json.loads(out)
    assert doc.pop("x_recon") == META and doc == body


def test_landing_refuses_a_body_that_already_has_the_envelope_key():
    with pytest.raises(LandingError):
        landing_bytes(None, {"x_recon": 1, "records": []}, META)


def test_write_new_file_never_replaces(tmp_path):
    target = tmp_path / "a" / "f.json"
    write_new_file(target, b"first")
    with pytest.raises(LandingError, match="not overwriting"):
        write_new_file(target, b"second")
    assert target.read_bytes() == b"first"
    assert sorted(p.name for p in target.parent.iterdir()) == ["f.json"]  # no temp left


def test_error_messages_scrub_known_keys():
    client = RunpodClient("rpa_SCRUB_ME_123456", base_url="http://127.0.0.1:9", trust_env=False)
    client.close()
    err = RunpodError("server said: bad token rpa_SCRUB_ME_123456")
    assert "rpa_SCRUB_ME_123456" not in str(err) and "***" in str(err)
