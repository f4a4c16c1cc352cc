"""Faults: 410 mid-stream, expired continue, dropped and dead connections, server errors,
restarts from the state file. No version may be lost or landed twice."""

from __future__ import annotations

import json
import time
import types
from dataclasses import replace

from connectors.kubernetes import ClusterConfig, collect
from connectors.kubernetes import landing as landing_mod
from tests.connectors.kubernetes.k8s_support import (
    FAST,
    DiskFullOS,
    RunningCollector,
    assert_exactly_once,
    daily_reader_keys,
    landed_matches,
    read_rows,
    wait_for,
    wait_watching,
)
from tests.fakes.k8s_api import make_pod


def _pods(fake, n):
    for i in range(n):
        fake.create("pods", make_pod(f"p{i}"))


def test_gone_mid_stream_relists_without_loss_or_duplicates(fake, landing, cluster):
    _pods(fake, 4)
    with RunningCollector(landing, [cluster], ["pods"]) as run:
        wait_watching(fake, {"pods": 1}, run)
        fake.pod_step("p0", "scheduled")
        wait_for(lambda: landed_matches(landing, fake, "pods"))
        fake.inject_gone("pods", compact=True)  # in-stream ERROR 410, history gone
        fake.pod_step("p1", "scheduled")  # during the gap: seen by the relist or the new watch
        fake.pod_step("p2", "scheduled")
        wait_for(lambda: run.counters.get("relists") >= 1, what="relist")
        wait_watching(fake, {"pods": 1}, run)
        fake.pod_step("p3", "scheduled")
        fake.delete("pods", "p0")
        wait_for(lambda: landed_matches(landing, fake, "pods"), what="all versions")
    assert_exactly_once(landing, fake, "pods")
    assert run.counters.get("relists") == 1
    assert run.counters.get("lists") == 2
    assert run.counters.get("duplicates") >= 2  # unchanged p0/p3 re-listed, not re-landed


def test_expired_continue_token_relists_from_scratch(fake, landing, cluster):
    _pods(fake, 7)  # 4 pages of 2
    fake.expire_next_continue(1)
    with RunningCollector(landing, [cluster], ["pods"]) as run:
        wait_watching(fake, {"pods": 1}, run)
        fake.pod_step("p6", "scheduled")
        wait_for(lambda: landed_matches(landing, fake, "pods"))
    assert_exactly_once(landing, fake, "pods")
    pods_lists = [q for p, q, _ in fake.requests if p == "/api/v1/pods" and "watch" not in q]
    fresh = [q for q in pods_lists if "continue" not in q]
    assert len(fresh) == 2 and len(pods_lists) == 1 + 1 + 4  # page 1, expired, full relist
    assert run.counters.get("relists") == 1
    assert run.counters.get("duplicates") == 2  # the first page, seen twice, landed once


def test_dropped_connection_reconnects_from_last_version(fake, landing, cluster):
    _pods(fake, 3)
    with RunningCollector(landing, [cluster], ["pods"]) as run:
        wait_watching(fake, {"pods": 1}, run)
        delivered = int(fake.pod_step("p0", "scheduled")["metadata"]["resourceVersion"])
        wait_for(lambda: landed_matches(landing, fake, "pods"))
        dropped_at = time.monotonic()
        fake.drop_watches("pods")  # cut inside an event line
        fake.pod_step("p1", "scheduled")
        fake.delete("pods", "p2")
        wait_for(lambda: landed_matches(landing, fake, "pods"), what="versions after the drop")
    assert_exactly_once(landing, fake, "pods")
    assert run.counters.get("reconnects") >= 1
    assert run.counters.get("relists") == 0 and run.counters.get("lists") == 1
    rewatches = [q for _, q, t in fake.requests if q.get("watch") and t > dropped_at]
    assert rewatches and all(int(q["resourceVersion"]) >= delivered for q in rewatches)


def test_dead_connection_is_cut_by_the_read_timeout(fake, landing, cluster):
    _pods(fake, 2)
    options = replace(FAST, watch_timeout_seconds=1, watch_read_margin_seconds=0.5)
    with RunningCollector(landing, [cluster], ["pods"], options) as run:
        wait_watching(fake, {"pods": 1}, run)
        fake.stall_watches("pods")  # the server sends nothing any more, not even the end
        fake.pod_step("p0", "scheduled")
        started = time.monotonic()
        wait_for(lambda: run.counters.get("reconnects") >= 1, timeout=6, what="read timeout")
        assert time.monotonic() - started < 4
        assert not landed_matches(landing, fake, "pods")
        fake.unstall()
        wait_for(lambda: landed_matches(landing, fake, "pods"), what="resumed")
    assert_exactly_once(landing, fake, "pods")
    assert run.counters.get("relists") == 0


def test_server_errors_back_off_and_honour_retry_after(fake, landing, cluster):
    _pods(fake, 2)
    fake.fail_next(1, 429, "/api/v1/pods", retry_after=1)
    fake.fail_next(2, 503, "/api/v1/pods")
    with RunningCollector(landing, [cluster], ["pods"]) as run:
        wait_watching(fake, {"pods": 1}, run)
        wait_for(lambda: landed_matches(landing, fake, "pods"))
    assert_exactly_once(landing, fake, "pods")
    assert run.counters.get("errors") == 3
    times = [t for p, _, t in fake.requests if p == "/api/v1/pods"][:4]  # 429, 503, 503, list
    assert times[1] - times[0] >= 0.95  # Retry-After: 1 although the backoff cap is 0.3 s
    assert times[2] - times[1] < 0.95 and times[3] - times[2] < 0.95


def test_restart_resumes_from_state_then_relists_when_too_old(fake, landing, cluster):
    _pods(fake, 3)
    with RunningCollector(landing, [cluster], ["pods"]) as run:
        wait_watching(fake, {"pods": 1}, run)
        fake.pod_step("p0", "scheduled")
        wait_for(lambda: landed_matches(landing, fake, "pods"))
    state_file = landing / "k8s" / "state" / "c1.json"
    saved = json.loads(state_file.read_text())["resources"]["pods"]["resourceVersion"]
    assert int(saved) == fake.resource_version  # stopped cleanly: state covers every row
    files_before = {p: p.read_bytes() for p in landing.rglob("*.jsonl")}

    # down: changes within the history window -> the restart watches from the saved version
    fake.pod_step("p0", "running")
    fake.pod_step("p0", "ready")
    fake.create("pods", make_pod("p9"))
    fake.delete("pods", "p2")
    mark = len(fake.requests)
    with RunningCollector(landing, [cluster], ["pods"]) as run2:
        wait_for(
            lambda: landed_matches(landing, fake, "pods") and run2.counters.get("state_saves") >= 1,
            what="resumed versions",
        )
    first = fake.requests[mark]
    assert first[0] == "/api/v1/pods" and first[1]["watch"] == "true"
    assert first[1]["resourceVersion"] == saved
    assert run2.counters.get("lists") == 0
    assert_exactly_once(landing, fake, "pods")
    for path, data in files_before.items():  # a new process never appends to old files
        assert path.read_bytes() == data

    # down again, history compacted -> 410 on resume -> relist; unchanged pods are not re-landed
    fake.pod_step("p1", "scheduled")
    fake.compact()
    with RunningCollector(landing, [cluster], ["pods"]) as run3:
        wait_for(lambda: run3.counters.get("state_saves") >= 1, what="relist complete")
    assert run3.counters.get("relists") == 1
    assert run3.counters.get("duplicates") == 2  # p0 and p9, remembered from landed files
    assert_exactly_once(landing, fake, "pods")


def test_crash_restart_skips_versions_replayed_from_an_older_state(fake, landing, cluster):
    _pods(fake, 2)
    with RunningCollector(landing, [cluster], ["pods"]) as run:
        wait_watching(fake, {"pods": 1}, run)
        list_rv = json.loads((landing / "k8s" / "state" / "c1.json").read_text())
        for step in ("scheduled", "running", "ready"):
            fake.pod_step("p0", step)
        wait_for(lambda: landed_matches(landing, fake, "pods"))
    # pretend the process died before its last state saves: the state still says "list"
    (landing / "k8s" / "state" / "c1.json").write_text(json.dumps(list_rv))
    with RunningCollector(landing, [cluster], ["pods"]) as run2:
        wait_for(lambda: run2.counters.get("duplicates") >= 3, what="replayed versions")
    assert run2.counters.get("lists") == 0 and run2.counters.get("duplicates") == 3
    assert run2.counters.get("written") == 0
    assert_exactly_once(landing, fake, "pods")
    assert len(read_rows(landing, "pods")) == 5


def test_slow_list_hits_the_read_timeout_and_is_retried(fake, landing, cluster):
    _pods(fake, 3)
    fake.latency = 1.5  # every answer takes longer than the read timeout below
    options = replace(FAST, list_read_timeout_seconds=0.4)
    with RunningCollector(landing, [cluster], ["pods"], options) as run:
        wait_for(lambda: run.counters.get("reconnects") >= 1, what="read timeout on a slow list")
        assert read_rows(landing, "pods") == []
        fake.latency = 0
        wait_for(lambda: landed_matches(landing, fake, "pods"), what="list after the slow answers")
    assert_exactly_once(landing, fake, "pods")


def test_saved_version_ahead_of_the_server_relists(fake, landing, cluster):
    """A state file from before an etcd restore / a rebuilt cluster of the same name."""
    _pods(fake, 2)
    state = landing / "k8s" / "state" / "c1.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"resources": {"pods": {"resourceVersion": "999999"}}}))
    with RunningCollector(landing, [cluster], ["pods"]) as run:
        wait_for(lambda: run.counters.get("state_saves") >= 1, what="relist")
    assert run.counters.get("relists") == 1 and run.counters.get("errors") == 0
    assert_exactly_once(landing, fake, "pods")
    assert json.loads(state.read_text())["resources"]["pods"]["resourceVersion"] == str(
        fake.resource_version
    )


def test_disk_full_inside_a_row_loses_no_version(fake, landing, cluster, monkeypatch):
    """The replayed row is not appended to the fragment of the failed write: the daily reader
    would quarantine the glued line while the state moved past it (a version lost)."""
    _pods(fake, 1)
    disk = DiskFullOS()
    monkeypatch.setattr(landing_mod, "os", disk)
    with RunningCollector(landing, [cluster], ["pods"]) as run:
        wait_watching(fake, {"pods": 1}, run)
        wait_for(lambda: landed_matches(landing, fake, "pods"))
        disk.armed = True
        fake.pod_step("p0", "scheduled")  # the disk fills up inside this row
        fake.pod_step("p0", "running")
        wait_for(lambda: run.counters.get("errors") >= 1, what="the failed write")
        wait_for(lambda: daily_reader_keys(landing)[0] == fake.versions("pods"),
                 what="the replayed versions, readable")
        wait_for(lambda: int(landing_mod.StateStore(landing, "c1").get("pods") or 0)
                 == fake.resource_version, what="state saved past the failure")
    assert daily_reader_keys(landing) == (fake.versions("pods"), [])
    assert_exactly_once(landing, fake, "pods")


def _close_watches_at_once(fake):
    """Every watch: 200, chunked, no event, a clean end (an apiserver shutting down, a proxy)."""

    def watch(self, h, rdef, namespace, query):
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        h.wfile.write(b"0\r\n\r\n")

    fake._watch = types.MethodType(watch, fake)


def test_watches_closed_at_once_back_off(fake, tmp_path):
    """A watch that closes at once is not reopened at once (that would be hundreds of times a
    second, saving the state file each time): like client-go, the collector backs off a watch
    that lasted < 1 s with no events."""
    _pods(fake, 1)
    _close_watches_at_once(fake)
    cluster = ClusterConfig(kubeconfig=str(fake.write_kubeconfig(tmp_path / "kc", "c1")),
                            context="c1")
    options = replace(FAST, backoff_base_seconds=0.2, backoff_cap_seconds=1.0)
    started = time.monotonic()
    counters = collect(tmp_path / "landing", [cluster], ["pods"], run_seconds=2.0,
                       options=options)
    assert time.monotonic() - started < 5
    watches = [q for _, q, _ in fake.requests if q.get("watch") == "true"]
    assert 2 <= len(watches) <= 8, f"{len(watches)} watches in 2 s"  # pauses 0.1-0.2, 0.2-0.4..
    assert counters.get("errors") >= len(watches) - 1  # the last one may be cut by the stop
    assert counters.get("state_saves") == 1  # the list's; an empty watch changes nothing
    assert counters.get("written") == 1


def test_quiet_watches_do_not_rewrite_the_state(fake, landing, cluster):
    """Bookmarks and watch ends that carry no new resourceVersion do not save (and fsync) the
    same state again."""
    _pods(fake, 1)
    options = replace(FAST, watch_timeout_seconds=1, watch_read_margin_seconds=0.5)
    with RunningCollector(landing, [cluster], ["pods"], options) as run:
        wait_watching(fake, {"pods": 1}, run)
        wait_for(lambda: run.counters.get("bookmarks") >= 3
                 and sum(1 for _, q, _ in fake.requests if q.get("watch")) >= 2,
                 what="bookmarks and a renewed watch")
        assert run.counters.get("state_saves") == 1  # the list's
        fake.pod_step("p0", "scheduled")
        wait_for(lambda: run.counters.get("state_saves") == 2, what="the new version saved")
    assert run.counters.get("errors") == 0
    assert_exactly_once(landing, fake, "pods")
