"""deploy/prefect-kubernetes.yaml: the scaled-out deployments (docs/scaling-out.md) name flows
that exist, with parameters those flows take, on a Kubernetes work pool with an image."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "deploy" / "prefect-kubernetes.yaml"


def deployments() -> dict[str, dict]:
    return {d["name"]: d for d in yaml.safe_load(SPEC.read_text())["deployments"]}


def test_collect_daily_and_backfill_are_deployed():
    assert {"daily-reconciliation", "collect"} <= set(deployments())


@pytest.mark.parametrize("name", sorted(deployments()))
def test_entrypoint_is_a_flow_taking_these_parameters(name):
    from prefect import Flow

    d = deployments()[name]
    path, func = d["entrypoint"].split(":")
    assert (REPO / path).is_file(), path
    fl = getattr(importlib.import_module(path.removesuffix(".py").replace("/", ".")), func)
    assert isinstance(fl, Flow)
    params = inspect.signature(fl.fn).parameters
    assert set(d.get("parameters") or {}) <= set(params)
    missing = [p for p in params if p not in d["description"]]
    assert not missing, f"{name}: description does not document {missing}"


@pytest.mark.parametrize("name", sorted(deployments()))
def test_runs_on_a_kubernetes_pool_with_image_namespace_and_resources(name):
    pool = deployments()[name]["work_pool"]
    assert pool["name"] == "recon-kubernetes"
    jv = pool["job_variables"]
    assert jv["image"] and jv["namespace"] and jv["service_account_name"]
    assert {"cpu_request", "memory_request", "memory_limit"} <= set(jv)
    assert not any("KEY" in k.upper() or "TOKEN" in k.upper() for k in jv.get("env", {}))
    # the pool this file expects is created as a Kubernetes pool (the header says how)
    assert "--type kubernetes" in SPEC.read_text()


def test_same_flows_and_schedule_as_the_process_deployments():
    local = {d["name"]: d for d in yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]}
    for name, d in deployments().items():
        assert d["entrypoint"] == local[name]["entrypoint"]
    assert deployments()["daily-reconciliation"]["schedules"] == \
        local["daily-reconciliation"]["schedules"]
    assert deployments()["daily-reconciliation"]["concurrency_limit"] == 1
