"""Serverless job records (JSONL) and /health snapshots."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from connectors.runpod import LandingError, record_job_status, snapshot_health
from tests.fakes.runpod_api import read_landed, strip_envelope

KEYS = [
    "id",
    "status",
    "delayTime",
    "executionTime",
    "workerId",
    "endpointId",
    "submittedAt",
    "completedAt",
]


def test_job_records_append_one_line_with_only_the_documented_keys(tmp_path):
    path = tmp_path / "jobs" / "ep_x1.jsonl"
    status = {
        "id": "job-1",
        "status": "COMPLETED",
        "delayTime": 1532.0,
        "executionTime": 20417,
        "workerId": "w_1",
        "output": {"image": "secret-prompt-result"},
        "input": {"prompt": "private"},
        "retries": 0,
    }
    record_job_status(
        path,
        "ep_x1",
        status,
        datetime(2026, 6, 1, 12, 0, 0, 123456, tzinfo=UTC),
        datetime(2026, 6, 1, 14, 0, 22, tzinfo=timezone(timedelta(hours=2))),
    )
    record_job_status(
        path,
        "ep_x1",
        '{"id": "job-2", "status": "FAILED", "delayTime": 10}',
        datetime(2026, 6, 1, 12, 5),
        None,
    )  # naive = UTC; no workerId

    lines = path.read_text().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(x) for x in lines)
    assert list(first) == KEYS and list(second) == KEYS
    assert first == {
        "id": "job-1",
        "status": "COMPLETED",
        "delayTime": 1532,
        "executionTime": 20417,
        "workerId": "w_1",
        "endpointId": "ep_x1",
        "submittedAt": "2026-06-01T12:00:00.123Z",
        "completedAt": "2026-06-01T12:00:22.000Z",
    }
    assert isinstance(first["delayTime"], int)
    assert second == {
        "id": "job-2",
        "status": "FAILED",
        "delayTime": 10,
        "executionTime": None,
        "workerId": None,
        "endpointId": "ep_x1",
        "submittedAt": "2026-06-01T12:05:00.000Z",
        "completedAt": None,
    }
    assert "secret-prompt-result" not in path.read_text()


def test_job_record_rejects_status_without_id(tmp_path):
    with pytest.raises(ValueError, match="id"):
        record_job_status(
            tmp_path / "j.jsonl",
            "ep",
            {"status": "COMPLETED"},
            datetime(2026, 6, 1, tzinfo=UTC),
            None,
        )
    assert not (tmp_path / "j.jsonl").exists()


def test_health_snapshot_lands_verbatim_and_never_overwrites(tmp_path):
    body = (
        '{"jobs": {"completed": 12, "failed": 1, "inProgress": 0, "inQueue": 2},'
        ' "workers": {"idle": 1, "running": 1}}'
    )
    now = datetime(2026, 6, 10, 12, 0, 1, tzinfo=UTC)
    landed = snapshot_health(tmp_path, "ep_x1", body, now=now)
    assert landed.path == (
        tmp_path / "runpod" / "inventory" / "pulled=20260610T120001Z" / "health_ep_x1.json"
    )
    doc = read_landed(landed.path)
    assert strip_envelope(doc) == json.loads(body)
    assert doc["x_recon"] == {
        "endpoint": "/v2/{endpointId}/health",
        "pulledAt": "2026-06-10T12:00:01Z",
        "params": {},
        "endpointId": "ep_x1",
    }
    sleeps: list[float] = []
    with pytest.raises(LandingError):
        snapshot_health(tmp_path, "ep_x1", {"jobs": {}}, now=now, sleep=sleeps.append)
    assert sleeps == [1.0, 1.0]
    assert strip_envelope(read_landed(landed.path)) == json.loads(body)
    # another endpoint in the same second lands beside it
    other = snapshot_health(tmp_path, "ep_y2", {"jobs": {}}, now=now)
    assert other.path.parent == landed.path.parent


def test_unsafe_endpoint_id_is_refused(tmp_path):
    with pytest.raises(LandingError):
        snapshot_health(tmp_path, "../escape", {"jobs": {}})
    assert not any(tmp_path.rglob("*.json"))
