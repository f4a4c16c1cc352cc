"""Fixtures for the Kubernetes connector tests (helpers live in k8s_support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from connectors.kubernetes import ClusterConfig
from tests.fakes.k8s_api import FakeKubeAPI


@pytest.fixture
def fake() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(bookmark_interval=0.2) as api:
        yield api


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    return tmp_path / "landing"


@pytest.fixture
def cluster(fake: FakeKubeAPI, tmp_path: Path) -> ClusterConfig:
    return ClusterConfig(
        kubeconfig=str(fake.write_kubeconfig(tmp_path / "kubeconfig", "c1")), context="c1"
    )
