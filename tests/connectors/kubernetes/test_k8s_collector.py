"""The collector against a loopback API server, through the real ``kubernetes`` client:
every version the server produces lands exactly once, in the contracted format."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from connectors.kubernetes import DEFAULT_RESOURCES, ClusterConfig, collect, collect_once
from tests.connectors.kubernetes.k8s_support import (
    FAST,
    RunningCollector,
    assert_exactly_once,
    landed_matches,
    read_rows,
    wait_for,
    wait_watching,
)
from tests.fakes.k8s_api import FakeKubeAPI, make_pod, write_kubeconfig

SEEN_AT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
KINDS = {
    "pods": ("v1", "Pod"),
    "events": ("v1", "Event"),
    "events_k8s_io": ("events.k8s.io/v1", "Event"),
    "nodes": ("v1", "Node"),
    "jobs": ("batch/v1", "Job"),
    "scaledobjects": ("keda.sh/v1alpha1", "ScaledObject"),
    "scaledjobs": ("keda.sh/v1alpha1", "ScaledJob"),
}


def seed_all(fake: FakeKubeAPI, pods: int = 5) -> None:
    for i in range(pods):
        fake.create("pods", make_pod(f"p{i}", namespace=f"ns{i % 2}"))
    fake.create(
        "nodes",
        {"metadata": {"name": "gpu-node-1"}, "status": {"capacity": {"nvidia.com/gpu": "8"}}},
    )
    fake.create(
        "jobs", {"metadata": {"name": "train", "namespace": "ns0"}, "spec": {"parallelism": 1}}
    )
    fake.create(
        "scaledobjects",
        {
            "metadata": {"name": "llm", "namespace": "ns0"},
            "spec": {"scaleTargetRef": {"name": "llm"}, "cooldownPeriod": 300},
        },
    )
    fake.create("scaledjobs", {"metadata": {"name": "batch", "namespace": "ns0"}, "spec": {}})


def test_list_then_watch_lands_every_version_of_every_resource_once(fake, landing, cluster):
    seed_all(fake)
    fake.emit_event(
        fake.get("pods", "p1", "ns1"),
        "FailedScheduling",
        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
        type="Warning",
    )
    with RunningCollector(landing, [cluster], list(DEFAULT_RESOURCES)) as run:
        wait_watching(
            fake,
            {"pods": 1, "events": 2, "nodes": 1, "jobs": 1, "scaledobjects": 1, "scaledjobs": 1},
            run,
        )
        pod = fake.pod_step("p0", "scheduled", "ns0")
        fake.emit_event(
            pod,
            "Scheduled",
            "Successfully assigned ns0/p0 to gpu-node-1",
            component="default-scheduler",
        )
        fake.pod_step("p0", "running", "ns0")
        fake.emit_event(pod, "Started", "Started container main")
        for step in ("ready", "terminated", "deleting", "deleted"):
            fake.pod_step("p0", step, "ns0")
        fake.update("jobs", "train", "ns0", lambda o: o.setdefault("status", {}).update(active=1))
        fake.update("scaledobjects", "llm", "ns0", lambda o: o["spec"].update(minReplicaCount=0))
        fake.update(
            "nodes",
            "gpu-node-1",
            None,
            lambda o: o["metadata"].setdefault("labels", {}).update(a="b"),
        )
        wait_for(
            lambda: all(landed_matches(landing, fake, r) for r in DEFAULT_RESOURCES),
            what="all versions",
        )
        final_rv = fake.resource_version
        wait_for(
            lambda: (
                all(int(v) >= final_rv for v in _state(landing, "c1").values())
                and len(_state(landing, "c1")) == len(DEFAULT_RESOURCES)
            ),
            what="state caught up",
        )
    counters = run.counters

    total = 0
    for resource in DEFAULT_RESOURCES:
        rows = assert_exactly_once(landing, fake, resource)
        total += len(rows)
        api_version, kind = KINDS[resource]
        for row in rows:
            assert set(row) - {"_resource", "_path"} == {"type", "object", "cluster", "seenAt"}
            assert (row["object"]["apiVersion"], row["object"]["kind"]) == (api_version, kind)
            assert row["cluster"] == "c1"
            assert SEEN_AT.match(row["seenAt"])
            path: Path = row["_path"]
            assert path.parent.name == f"hour={row['seenAt'][:13]}"
            assert path.parent.parent.name == "cluster=c1"
            assert re.fullmatch(rf"{resource}-{os.getpid()}-\d+\.jsonl", path.name)
            assert path.read_bytes().endswith(b"\n")
    assert counters.get("written") == total
    assert counters.get("duplicates") == 0 and counters.get("relists") == 0

    # the pod's life, as watch rows in order, ending with the deletion's own version
    p0 = [r for r in read_rows(landing, "pods") if r["object"]["metadata"]["name"] == "p0"]
    assert [r["type"] for r in p0] == ["ADDED"] + ["MODIFIED"] * 5 + ["DELETED"]
    assert "deletionTimestamp" in p0[-1]["object"]["metadata"]
    assert (
        p0[-1]["object"]["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    )
    new_events = read_rows(landing, "events_k8s_io")
    assert {e["object"]["reason"] for e in new_events} == {
        "FailedScheduling",
        "Scheduled",
        "Started",
    }
    assert all(e["object"]["regarding"]["kind"] == "Pod" for e in new_events)

    lists = [q for p, q, _ in fake.requests if "watch" not in q and p.count("/") >= 3]
    watches = [q for p, q, _ in fake.requests if q.get("watch") == "true"]
    assert lists and all(q["limit"] == "2" for q in lists)
    assert any("continue" in q for q in lists), "pods list should have been paged"
    assert watches and all(
        q["allowWatchBookmarks"] == "true"
        and int(q["timeoutSeconds"]) >= 1
        and q["resourceVersion"]
        for q in watches
    )


def _state(landing: Path, cluster: str) -> dict[str, str]:
    path = landing / "k8s" / "state" / f"{cluster}.json"
    if not path.exists():
        return {}
    return {k: v["resourceVersion"] for k, v in json.loads(path.read_text())["resources"].items()}


def test_max_events_returns_after_exactly_that_many_rows(fake, landing, cluster):
    for i in range(7):
        fake.create("pods", make_pod(f"p{i}"))
    progress: list[dict] = []
    counters = collect(
        landing, [cluster], ["pods"], max_events=4, options=FAST, on_progress=progress.append
    )
    assert counters.get("written") == 4
    assert len(read_rows(landing, "pods")) == 4
    assert progress[-1]["totals"]["written"] == 4  # a final report when the run ends
    assert progress[-1]["clusters"]["c1"]["pods"]["written"] == 4


def test_several_clusters_from_kubeconfig_contexts_are_tagged(landing, tmp_path):
    with FakeKubeAPI(bookmark_interval=0.2) as east, FakeKubeAPI(bookmark_interval=0.2) as west:
        east.create("pods", make_pod("e1"))
        west.create("pods", make_pod("w1"))
        west.create("pods", make_pod("w2"))
        eks = "arn:aws:eks:eu-west-1:123:cluster/west"
        kubeconfig = write_kubeconfig(tmp_path / "kc", {"east": east.url, eks: west.url})
        clusters = ClusterConfig.from_kubeconfig(str(kubeconfig), "all")
        assert [c.name for c in clusters] == ["east", "arn_aws_eks_eu-west-1_123_cluster_west"]
        with RunningCollector(landing, clusters, ["pods"]) as run:
            wait_watching(east, {"pods": 1}, run)
            wait_watching(west, {"pods": 1}, run)
            east.pod_step("e1", "scheduled")
            west.delete("pods", "w2")
            wait_for(
                lambda: (
                    landed_matches(landing, east, "pods", "east")
                    and landed_matches(landing, west, "pods", clusters[1].name)
                ),
                what="both clusters",
            )
        assert_exactly_once(landing, east, "pods", "east")
        west_rows = assert_exactly_once(landing, west, "pods", clusters[1].name)
        assert {r["cluster"] for r in read_rows(landing, "pods", "east")} == {"east"}
        assert {r["cluster"] for r in west_rows} == {clusters[1].name}
        assert {r["object"]["metadata"]["name"] for r in west_rows} == {"w1", "w2"}
        for name in ("east", clusters[1].name):
            assert (landing / "k8s" / "state" / f"{name}.json").exists()


def test_collect_once_lands_current_objects_and_tolerates_missing_apis(fake, landing, cluster):
    seed_all(fake, pods=5)
    fake.pod_step("p0", "scheduled", "ns0")  # p0's first version is history, not current
    fake.set_served("keda.sh", False)
    fake.set_served("events.k8s.io", False)
    fake.create("events", {"metadata": {"name": "e1", "namespace": "ns0"}, "reason": "Pulled"})

    counters = collect_once(landing, [cluster], options=FAST)

    current = {
        (o["metadata"]["uid"], o["metadata"]["resourceVersion"])
        for store in ("pods", "events", "nodes", "jobs")
        for o in fake.objects[store].values()
    }
    rows = read_rows(landing)
    landed = [
        (r["object"]["metadata"]["uid"], r["object"]["metadata"]["resourceVersion"]) for r in rows
    ]
    assert sorted(landed) == sorted(current)
    assert {r["type"] for r in rows} == {"ADDED"}
    assert {r["_resource"] for r in rows} == {"pods", "events", "nodes", "jobs"}
    assert counters.get("not_served") == 3  # events.k8s.io, scaledobjects, scaledjobs
    assert not (landing / "k8s" / "state").exists()  # a running collector owns the state

    # a second pass skips versions already landed, and may record the state when asked
    again = collect_once(landing, [cluster], ["pods"], options=FAST, save_state=True)
    assert again.get("written") == 0 and again.get("duplicates") == 5
    assert _state(landing, "c1") == {"pods": str(fake.resource_version)}


def test_absent_optional_api_is_rechecked_and_collected_once_installed(fake, landing, cluster):
    fake.create("pods", make_pod("p0"))
    fake.set_served("keda.sh", False)
    with RunningCollector(landing, [cluster], ["pods", "scaledobjects"]) as run:
        wait_watching(fake, {"pods": 1}, run)
        wait_for(
            lambda: run.counters.get("not_served", resource="scaledobjects") >= 1, what="404 seen"
        )
        assert run.error is None and fake.open_watches("scaledobjects") == 0
        fake.set_served("keda.sh", True)  # the CRD gets installed
        fake.create(
            "scaledobjects", {"metadata": {"name": "llm", "namespace": "default"}, "spec": {}}
        )
        wait_for(lambda: landed_matches(landing, fake, "scaledobjects"), what="scaledobject landed")
    assert_exactly_once(landing, fake, "scaledobjects")
    assert_exactly_once(landing, fake, "pods")
