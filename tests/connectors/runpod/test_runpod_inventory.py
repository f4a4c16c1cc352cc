"""snapshot_inventory against the fake."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from connectors.pod_secrets import redact_secrets
from connectors.runpod import RunpodResponseError, snapshot_inventory
from tests.fakes.runpod_api import Fault, landed_files, read_landed, strip_envelope

NOW = datetime(2026, 6, 10, 12, 30, 5, tzinfo=UTC)


def test_inventory_snapshot_lands_every_kind_verbatim(tmp_path, fake, client):
    result = snapshot_inventory(tmp_path, client=client, now=NOW)

    files = landed_files(tmp_path, "inventory")
    folder = tmp_path / "runpod" / "inventory" / "pulled=20260610T123005Z"
    assert [p.relative_to(folder).as_posix() for p in files] == sorted(
        [
            "pods.json",
            "serverless.json",
            "workers_ep_x1.json",
            "workers_ep_y2.json",
            "network_volumes.json",
            "gpu_catalog.json",
        ]
    )
    assert len(result.files) == 6

    expected = {
        "pods.json": ("/v2/pods", "/v2/pods", {"includeClusterPods": "false"}, None),
        "serverless.json": ("/v2/serverless", "/v2/serverless", {}, None),
        "workers_ep_x1.json": (
            "/v2/serverless/{id}/workers",
            "/v2/serverless/ep_x1/workers",
            {},
            "ep_x1",
        ),
        "workers_ep_y2.json": (
            "/v2/serverless/{id}/workers",
            "/v2/serverless/ep_y2/workers",
            {},
            "ep_y2",
        ),
        "network_volumes.json": ("/v2/network-volumes", "/v2/network-volumes", {}, None),
        "gpu_catalog.json": ("/v2/catalog/gpus", "/v2/catalog/gpus", {}, None),
    }
    for name, (endpoint, called, params, ep_id) in expected.items():
        doc = read_landed(folder / name)
        env = doc["x_recon"]
        assert env["endpoint"] == endpoint
        assert env["pulledAt"] == "2026-06-10T12:30:05Z"
        assert env["params"] == params
        assert env.get("endpointId") == ep_id
        served = fake.successful(called)
        assert len(served) == 1 and served[0].query == params
        # verbatim but for env values, landed as fingerprints (test_runpod_pod_secrets.py)
        assert strip_envelope(doc) == redact_secrets(served[0].body)

    pods = read_landed(folder / "pods.json")["pods"]
    assert {p["id"] for p in pods} == {"pod_a1", "pod_b2"}  # the cluster pod is excluded
    workers = read_landed(folder / "workers_ep_x1.json")
    assert [w["id"] for w in workers["workers"]] == ["w_1", "w_2"]
    assert "endpointId" not in strip_envelope(workers)  # the API body does not carry it


def test_endpoint_vanishing_before_workers_is_skipped_with_warning(tmp_path, fake, client):
    fake.inject("/v2/serverless/ep_y2/workers", Fault.http(404))
    result = snapshot_inventory(tmp_path, client=client, now=NOW)
    names = sorted(p.name for p in landed_files(tmp_path, "inventory"))
    assert names == ["gpu_catalog.json", "network_volumes.json", "pods.json", "serverless.json",
                     "workers_ep_x1.json"]
    assert any("ep_y2" in w for w in result.warnings)


def test_inventory_retries_transient_errors(tmp_path, fake, client, clock):
    fake.inject("/v2/serverless", Fault.http(503, retry_after="2"))
    fake.inject("/v2/network-volumes", Fault.truncated_json())
    snapshot_inventory(tmp_path, client=client, now=NOW)
    assert len(landed_files(tmp_path, "inventory")) == 6
    assert clock.sleeps[0] == 2.0 and len(clock.sleeps) == 2


def test_inventory_missing_list_is_a_clear_error(tmp_path, fake, client):
    fake.inject("/v2/pods", Fault.drop_field("pods"))
    with pytest.raises(RunpodResponseError, match=r"GET /v2/pods .*'pods'"):
        snapshot_inventory(tmp_path, client=client, now=NOW)
    assert landed_files(tmp_path, "inventory") == []


def test_gpu_catalog_is_pulled_with_the_inventory_and_lands_as_served(tmp_path, fake, client,
                                                                     clock):
    """The list prices ride the inventory pull: same client (auth header, retries), same
    `pulled=` folder, the body landed as the API sent it (openapi-v2 `listGpuTypes` example:
    RTX 4090 at 0.44 secure / 0.31 community / 1.1 serverless USD per GPU-hour)."""
    fake.inject("/v2/catalog/gpus", Fault.http(503, retry_after="1"))
    result = snapshot_inventory(tmp_path, client=client, now=NOW)
    [landed] = result.by_kind("gpu_catalog")
    assert landed.endpoint == "/v2/catalog/gpus" and landed.record_count == 1
    doc = read_landed(landed.path)
    assert doc["x_recon"]["pulledAt"] == "2026-06-10T12:30:05Z"
    assert doc["gpus"][0]["price"] == {"secure": 0.44, "community": 0.31, "serverless": 1.1}
    served = fake.requests_to("/v2/catalog/gpus")
    # retried after the 503's Retry-After; the fake answers 401 to a request without the key
    assert [s.status for s in served] == [503, 200] and clock.sleeps == [1.0]
    assert strip_envelope(doc) == served[-1].body


def test_gpu_catalog_without_its_list_is_a_clear_error(tmp_path, fake, client):
    fake.inject("/v2/catalog/gpus", Fault.drop_field("gpus"))
    with pytest.raises(RunpodResponseError, match=r"GET /v2/catalog/gpus .*'gpus'"):
        snapshot_inventory(tmp_path, client=client, now=NOW)
