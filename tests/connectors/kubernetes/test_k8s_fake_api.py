"""The loopback API server itself: its semantics, checked with raw HTTP and with ``kubectl``
(an independent client), so the fake cannot drift from what real clients accept."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time

import pytest
import requests

from tests.fakes.k8s_api import make_pod

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")


def kubectl(fake, tmp_path, *args: str) -> list[str]:
    return [
        KUBECTL or "kubectl",
        "--server",
        fake.url,
        "--cache-dir",
        str(tmp_path / "kcache"),
        "--request-timeout",
        "10s",
        *args,
    ]


def kubectl_env(tmp_path) -> dict[str, str]:
    return dict(os.environ, KUBECONFIG=str(tmp_path / "no-kubeconfig"), HOME=str(tmp_path))


def concatenated_json(text: str) -> list[dict]:
    """kubectl prints watch events as concatenated JSON documents."""
    decoder, out, pos = json.JSONDecoder(), [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return out
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return out  # a document still being written
        out.append(obj)


@needs_kubectl
def test_kubectl_lists_pods_events_and_keda_objects(fake, tmp_path):
    for i in range(3):
        fake.create("pods", make_pod(f"p{i}", namespace=f"ns{i % 2}"))
    fake.emit_event(
        fake.get("pods", "p0", "ns0"), "Scheduled", "assigned", component="default-scheduler"
    )
    fake.create("scaledobjects", {"metadata": {"name": "llm", "namespace": "ns0"}, "spec": {}})
    env = kubectl_env(tmp_path)

    def get(*args: str) -> dict:
        out = subprocess.run(
            kubectl(fake, tmp_path, "get", *args, "-o", "json"),
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
            check=False,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    pods = get("pods", "-A")["items"]
    expected = {
        (
            o["metadata"]["namespace"],
            o["metadata"]["name"],
            o["metadata"]["uid"],
            o["metadata"]["resourceVersion"],
        )
        for o in fake.objects["pods"].values()
    }
    assert {
        (
            p["metadata"]["namespace"],
            p["metadata"]["name"],
            p["metadata"]["uid"],
            p["metadata"]["resourceVersion"],
        )
        for p in pods
    } == expected
    assert {p["kind"] for p in pods} == {"Pod"}
    assert [p["metadata"]["name"] for p in get("pods", "-n", "ns1")["items"]] == ["p1"]
    [event] = get("events.events.k8s.io", "-A")["items"]
    assert (event["apiVersion"], event["reason"], event["regarding"]["name"]) == (
        "events.k8s.io/v1",
        "Scheduled",
        "p0",
    )
    [so] = get("scaledobjects.keda.sh", "-A")["items"]
    assert (so["apiVersion"], so["kind"], so["metadata"]["name"]) == (
        "keda.sh/v1alpha1",
        "ScaledObject",
        "llm",
    )


@needs_kubectl
def test_kubectl_watch_streams_events(fake, tmp_path):
    fake.create("pods", make_pod("p0"))
    fake.create("pods", make_pod("p1"))
    proc = subprocess.Popen(
        kubectl(
            fake, tmp_path, "get", "pods", "-A", "--watch", "--output-watch-events", "-o", "json"
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kubectl_env(tmp_path),
    )
    chunks: list[str] = []
    reader = threading.Thread(
        target=lambda: chunks.extend(iter(lambda: proc.stdout.read(1), "")), daemon=True
    )
    reader.start()

    def seen() -> list[tuple[str, str, str]]:
        return [
            (e["type"], e["object"]["metadata"]["name"], e["object"]["metadata"]["resourceVersion"])
            for e in concatenated_json("".join(chunks))
        ]

    try:
        deadline = time.monotonic() + 15
        while len(seen()) < 2 or fake.open_watches("pods") < 1:
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
            time.sleep(0.05)
        modified = fake.pod_step("p0", "scheduled")["metadata"]["resourceVersion"]
        deleted = fake.delete("pods", "p1")["metadata"]["resourceVersion"]
        while len(seen()) < 4:
            assert time.monotonic() < deadline, seen()
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert sorted(seen()[:2]) == [("ADDED", "p0", "1001"), ("ADDED", "p1", "1002")]
    assert seen()[2:] == [("MODIFIED", "p0", modified), ("DELETED", "p1", deleted)]


def test_paged_list_is_one_consistent_snapshot(fake):
    for i in range(5):
        fake.create("pods", make_pod(f"p{i}"))
    first = requests.get(f"{fake.url}/api/v1/pods", params={"limit": 2}, timeout=5).json()
    list_rv = first["metadata"]["resourceVersion"]
    fake.pod_step("p3", "scheduled")  # after the first page: not part of this list
    fake.create("pods", make_pod("p9"))
    pages, token = [first], first["metadata"]["continue"]
    while token:
        page = requests.get(
            f"{fake.url}/api/v1/pods", params={"limit": 2, "continue": token}, timeout=5
        ).json()
        pages.append(page)
        token = page["metadata"].get("continue")
    assert [p["metadata"]["resourceVersion"] for p in pages] == [list_rv] * 3
    assert [p["metadata"].get("remainingItemCount") for p in pages] == [3, 1, None]
    items = [i for p in pages for i in p["items"]]
    assert [i["metadata"]["name"] for i in items] == ["p0", "p1", "p2", "p3", "p4"]
    assert all(int(i["metadata"]["resourceVersion"]) <= int(list_rv) for i in items)
    assert all("kind" not in i for i in items)  # built-in list items carry no kind/apiVersion
    assert first["kind"] == "PodList" and first["apiVersion"] == "v1"


def test_expired_continue_token_is_410_expired(fake):
    for i in range(3):
        fake.create("pods", make_pod(f"p{i}"))
    token = requests.get(f"{fake.url}/api/v1/pods?limit=1", timeout=5).json()["metadata"][
        "continue"
    ]
    fake.expire_continue_tokens()
    resp = requests.get(
        f"{fake.url}/api/v1/pods", params={"limit": 1, "continue": token}, timeout=5
    )
    assert resp.status_code == 410
    body = resp.json()
    assert {k: body[k] for k in ("kind", "apiVersion", "status", "reason", "code")} == {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "reason": "Expired",
        "code": 410,
    }


def _watch(fake, **params) -> requests.Response:
    params = {"watch": "true", **params}
    return requests.get(f"{fake.url}/api/v1/pods", params=params, stream=True, timeout=5)


def test_watch_delivers_changes_bookmarks_and_ends_at_timeout(fake):
    fake.create("pods", make_pod("p0"))
    start_rv = fake.resource_version
    started = time.monotonic()
    resp = _watch(
        fake, resourceVersion=str(start_rv), allowWatchBookmarks="true", timeoutSeconds="1"
    )
    assert resp.headers["Transfer-Encoding"] == "chunked"
    fake.pod_step("p0", "scheduled")
    fake.delete("pods", "p0")
    events = [json.loads(line) for line in resp.iter_lines() if line]  # returns at timeoutSeconds
    assert 0.9 <= time.monotonic() - started < 3
    changes = [
        (e["type"], int(e["object"]["metadata"]["resourceVersion"]))
        for e in events
        if e["type"] != "BOOKMARK"
    ]
    assert changes == [("MODIFIED", start_rv + 1), ("DELETED", start_rv + 2)]
    bookmarks = [e["object"] for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks and int(bookmarks[-1]["metadata"]["resourceVersion"]) == start_rv + 2
    assert bookmarks[-1]["kind"] == "Pod" and set(bookmarks[-1]["metadata"]) <= {
        "resourceVersion",
        "creationTimestamp",
    }


def test_watch_from_a_compacted_version_gets_in_stream_410(fake):
    fake.create("pods", make_pod("p0"))
    old = fake.resource_version
    fake.pod_step("p0", "scheduled")
    fake.compact()
    resp = _watch(fake, resourceVersion=str(old), timeoutSeconds="5")
    assert resp.status_code == 200
    [event] = [json.loads(line) for line in resp.iter_lines() if line]
    assert event["type"] == "ERROR" and event["object"]["code"] == 410


def test_absent_group_is_not_discovered_and_answers_404(fake):
    groups = {g["name"] for g in requests.get(f"{fake.url}/apis", timeout=5).json()["groups"]}
    assert groups == {"events.k8s.io", "batch", "keda.sh"}
    fake.set_served("keda.sh", False)
    groups = {g["name"] for g in requests.get(f"{fake.url}/apis", timeout=5).json()["groups"]}
    assert "keda.sh" not in groups
    resp = requests.get(f"{fake.url}/apis/keda.sh/v1alpha1/scaledobjects", timeout=5)
    assert resp.status_code == 404 and resp.json()["reason"] == "NotFound"
    core = requests.get(f"{fake.url}/api/v1", timeout=5).json()
    assert {r["name"] for r in core["resources"]} == {"pods", "events", "nodes"}
