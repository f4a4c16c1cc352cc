"""The collector lands pod specs with their env values as fingerprints, names kept (the
loopback API server through the real ``kubernetes`` client, list and watch)."""

from __future__ import annotations

import json

from connectors.kubernetes import collect_once
from connectors.pod_secrets import fingerprint
from tests.connectors.kubernetes.k8s_support import (
    FAST,
    RunningCollector,
    read_rows,
    wait_for,
    wait_watching,
)
from tests.fakes.k8s_api import make_pod

HF_TOKEN = "hf_PLANTEDtokenQx7Vb93kLmN2pRsT"
JUPYTER = "jupyter-PLANTED-pw-4417"


def secret_pod(name: str) -> dict:
    pod = make_pod(name, namespace="ml")
    spec = pod.setdefault("spec", {})
    spec.setdefault("containers", [{"name": "worker"}])
    spec["containers"][0]["env"] = [
        {"name": "HF_TOKEN", "value": HF_TOKEN},
        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}}]
    spec["initContainers"] = [{"name": "init", "env": [{"name": "JUPYTER_PASSWORD",
                                                        "value": JUPYTER}]}]
    return pod


def _landed_text(landing) -> str:
    return "".join(p.read_text() for p in sorted(landing.rglob("*.jsonl")))


def test_listed_pods_land_without_their_env_values(fake, landing, cluster):
    fake.create("pods", secret_pod("p1"))
    collect_once(landing, [cluster], ["pods"], options=FAST)
    text = _landed_text(landing)
    assert text and HF_TOKEN not in text and JUPYTER not in text
    (row,) = read_rows(landing, "pods")
    spec = row["object"]["spec"]
    assert spec["containers"][0]["env"] == [
        {"name": "HF_TOKEN", "value": fingerprint(HF_TOKEN)},
        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}}]
    assert spec["initContainers"][0]["env"] == [{"name": "JUPYTER_PASSWORD",
                                                 "value": fingerprint(JUPYTER)}]


def test_watched_versions_land_without_their_env_values(fake, landing, cluster):
    with RunningCollector(landing, [cluster], ["pods"]) as running:
        wait_watching(fake, {"pods": 1}, running)
        fake.create("pods", secret_pod("p2"))
        wait_for(lambda: any(r["object"]["metadata"]["name"] == "p2"
                             for r in read_rows(landing, "pods")), what="p2 landed")
    text = _landed_text(landing)
    assert "HF_TOKEN" in text and HF_TOKEN not in text and JUPYTER not in text
    rows = [json.loads(line) for line in text.splitlines()]
    assert [r["type"] for r in rows] == ["ADDED"]  # from the watch (the list was empty)
    assert rows[0]["object"]["spec"]["containers"][0]["env"][0]["value"] == fingerprint(HF_TOKEN)
