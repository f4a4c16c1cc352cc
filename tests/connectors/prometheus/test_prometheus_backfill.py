"""Backfill pod lifecycles from kube-state-metrics in Prometheus (loopback fake of the HTTP API)."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import parse_qs, urlparse

import pytest

from connectors.prometheus import pull_kube_state_metrics
from recon.db import connect
from recon.pipeline import run

T0 = datetime(2026, 5, 20, 10, 0, tzinfo=UTC).timestamp()
POD = {"namespace": "ml", "pod": "train-abcde", "uid": "u-prom-1", "node": "gpu-a"}
SERIES = {  # metric -> (extra labels, value)
    "kube_pod_info": ({"node": "gpu-a"}, 1),
    "kube_pod_created": ({}, T0),
    "kube_pod_status_scheduled_time": ({}, T0 + 5),
    "kube_pod_start_time": ({}, T0 + 6),
    "kube_pod_status_ready_time": ({}, T0 + 300),
    "kube_pod_completion_time": ({}, T0 + 3600),
    "kube_pod_container_resource_limits": ({"resource": "nvidia_com_gpu", "container": "w"}, 2),
    "kube_pod_labels": ({"label_team": "vision"}, 1),
}


class Fake(BaseHTTPRequestHandler):
    calls: ClassVar[list] = []

    def log_message(self, *a):
        pass

    def do_GET(self):
        u = urlparse(self.path)
        q = parse_qs(u.query)
        Fake.calls.append(q)
        if u.path != "/api/v1/query_range" or "query" not in q:
            self.send_response(400)
            self.end_headers()
            self.wfile.write(b'{"status":"error","errorType":"bad_data","error":"missing query"}')
            return
        name = q["query"][0].split("{")[0]
        result = []
        if name in SERIES:
            labels, value = SERIES[name]
            metric = {"__name__": name, "namespace": POD["namespace"], "pod": POD["pod"],
                      "uid": POD["uid"], **labels}
            result.append({"metric": metric, "values": [[T0 + 60 * i, str(value)] for i in range(3)]})
        body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())


@pytest.fixture
def prom():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_backfilled_pod_is_a_coarser_lifecycle_and_reconciles(prom, tmp_path):
    landing = tmp_path / "landing"
    files = pull_kube_state_metrics(landing, prom, datetime(2026, 5, 20, tzinfo=UTC),
                                    datetime(2026, 5, 21, tzinfo=UTC), step="60s")
    assert len(files) == 9 and all(c["step"] == ["60s"] for c in Fake.calls)
    # a node labelled with its Runpod pod and a bill for it, so the backfilled pod reconciles
    (landing / "bill.json").write_text(json.dumps({"records": [
        {"startTime": "2026-05-20T10:00:00Z", "endTime": "2026-05-20T11:00:00Z", "podId": "gpu-a",
         "totalAmount": 1.0, "gpuAmount": 1.0, "cpuAmount": 0, "diskAmount": 0},
        {"startTime": "2026-05-20T11:00:00Z", "endTime": "2026-05-20T12:00:00Z", "podId": "gpu-a",
         "totalAmount": 0.5, "gpuAmount": 0.5, "cpuAmount": 0, "diskAmount": 0}], "metadata": {}}))
    (landing / "recon.toml").write_text('[rates.pod_per_hour]\n"gpu-a" = "1.00"\n')
    res = run(landing, tmp_path / "db.duckdb", validate=True)
    # the gate passes a Prometheus landing (its tie-out once missed raw.prometheus_series)
    assert res.validation.success, res.validation.summary()
    con = connect(tmp_path / "db.duckdb", read_only=True)
    lc = con.execute("select pod_uid, node_name, gpus, team, lifecycle_source, "
                     "scheduled_at::varchar, ready_at::varchar, task_finished_at::varchar "
                     "from marts.workload_lifecycle").fetchall()
    assert lc == [("u-prom-1", "gpu-a", 2, "vision", "prometheus", "2026-05-20 10:00:05+00",
                   "2026-05-20 10:05:00+00", "2026-05-20 11:00:00+00")]
    seg = dict(con.execute("select category, seconds from marts.billed_segments "
                           "where category in ('busy', 'tail')").fetchall())
    assert seg == {"busy": Decimal("3300.000"), "tail": Decimal("1800.000")}


def test_prometheus_error_is_named(prom, tmp_path):
    with pytest.raises(RuntimeError, match=r"kube_pod_info.*HTTP 400"):
        pull_kube_state_metrics(tmp_path, prom + "/bogus", datetime(2026, 5, 20, tzinfo=UTC),
                                datetime(2026, 5, 21, tzinfo=UTC))


def test_a_watched_pod_is_never_backfilled_even_outside_a_windows_scope(prom, tmp_path):
    """The same pod in kube-state-metrics and in the watch: the watch wins, also in a windowed
    run whose scope no longer holds that pod's versions (a late day of the same node)."""
    from datetime import date, timedelta

    from tests.engine.build import World

    w = World(tmp_path / "w")
    t0 = datetime(2026, 5, 20, 10, 0, tzinfo=UTC)
    w.node("gpu-a", "gpu-a", t0 - timedelta(minutes=5), t0 - timedelta(minutes=2))
    w.pod("train-abcde", "gpu-a", t0, t0 + timedelta(minutes=5), t0 + timedelta(hours=1))
    w.compute("gpu-a", t0 - timedelta(minutes=5), t0 + timedelta(hours=1, minutes=30), Decimal("1"))
    late = t0 + timedelta(days=3)
    w.pod("later-job", "gpu-a", late, late + timedelta(minutes=5), late + timedelta(hours=1))
    w.compute("gpu-a", late - timedelta(minutes=5), late + timedelta(hours=1), Decimal("1"))
    landing = w.write()
    pull_kube_state_metrics(landing, prom, datetime(2026, 5, 20, tzinfo=UTC),
                            datetime(2026, 5, 21, tzinfo=UTC), step="60s")
    db = tmp_path / "db.duckdb"
    run(landing, db, day_from=date(2026, 5, 23), day_to=date(2026, 5, 23))
    con = connect(db, read_only=True)
    sources = con.execute("select lifecycle_source, count(*) from intermediate.int_k8s__workloads "
                          "where pod_name = 'train-abcde' group by all").fetchall()
    assert sources == [], sources  # not in the window's scope, and not backfilled either
    assert con.execute("select count(*) from marts.workload_lifecycle where pod_name = 'later-job'"
                       ).fetchone()[0] == 1
    con.close()


def test_a_team_label_list_reads_kube_state_metrics_sanitised_label_names(prom, tmp_path, monkeypatch):
    """kube-state-metrics writes a pod label as `label_<name>` with every character a Prometheus
    label name may not hold replaced by `_` (app.kubernetes.io/part-of →
    label_app_kubernetes_io_part_of); with no `team` label the second configured one names it."""
    monkeypatch.setitem(SERIES, "kube_pod_labels", ({"label_app_kubernetes_io_part_of": "nlp"}, 1))
    landing = tmp_path / "landing"
    pull_kube_state_metrics(landing, prom, datetime(2026, 5, 20, tzinfo=UTC),
                            datetime(2026, 5, 21, tzinfo=UTC), step="60s")
    (landing / "recon.toml").write_text(
        '[mapping]\nteam_labels = ["team", "app.kubernetes.io/part-of"]\n')
    run(landing, tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    assert con.execute("select team from marts.workload_lifecycle").fetchall() == [("nlp",)]
    con.close()
    # the single default label does not read it
    (landing / "recon.toml").unlink()
    run(landing, tmp_path / "db2.duckdb")
    con = connect(tmp_path / "db2.duckdb", read_only=True)
    assert con.execute("select team from marts.workload_lifecycle").fetchall() == [(None,)]
    con.close()
