"""The deployment documented in the connector's README grants what the collector needs."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from connectors.kubernetes import RESOURCES

README = Path(__file__).parents[3] / "connectors" / "kubernetes" / "README.md"


def manifests() -> list[dict]:
    blocks = re.findall(r"```yaml\n(.*?)```", README.read_text(), re.DOTALL)
    return [doc for block in blocks for doc in yaml.safe_load_all(block) if doc]


def test_cluster_role_is_read_only_and_covers_every_resource():
    [role] = [m for m in manifests() if m["kind"] == "ClusterRole"]
    granted = {
        (group, resource)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        if set(rule["verbs"]) == {"get", "list", "watch"}
    }
    assert {(spec.group, spec.plural) for spec in RESOURCES.values()} == granted
    assert all(set(rule["verbs"]) == {"get", "list", "watch"} for rule in role["rules"])


def test_deployment_runs_one_collector_with_the_service_account():
    docs = {m["kind"]: m for m in manifests()}
    deployment = docs["Deployment"]
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    assert spec["replicas"] == 1 and spec["strategy"]["type"] == "Recreate"
    assert pod["serviceAccountName"] == docs["ServiceAccount"]["metadata"]["name"]
    [container] = pod["containers"]
    assert container["command"] == ["recon", "collect", "--landing", "/data/landing"]
    assert container["volumeMounts"][0]["mountPath"] == "/data"
    binding = docs["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == docs["ClusterRole"]["metadata"]["name"]
    assert binding["subjects"][0]["name"] == docs["ServiceAccount"]["metadata"]["name"]
