"""Backfill pod lifecycles from kube-state-metrics in Prometheus (loopback fake of the HTTP API)."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from connectors.prometheus import pull_kube_state_metrics
from recon.pipeline import run
from recon.warehouse import connect

T0 = datetime(2026, 5, 20, 10, 0, tzinfo=timezone.utc).timestamp()
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
    calls: list = []

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
    files = pull_kube_state_metrics(landing, prom, datetime(2026, 5, 20, tzinfo=timezone.utc),
                                    datetime(2026, 5, 21, tzinfo=timezone.utc), step="60s")
    assert len(files) == 9 and all(c["step"] == ["60s"] for c in Fake.calls)
    # a node labelled with its Runpod pod and a bill for it, so the backfilled pod reconciles
    (landing / "bill.json").write_text(json.dumps({"records": [
        {"startTime": "2026-05-20T10:00:00Z", "endTime": "2026-05-20T11:00:00Z", "podId": "gpu-a",
         "totalAmount": 1.0, "gpuAmount": 1.0, "cpuAmount": 0, "diskAmount": 0},
        {"startTime": "2026-05-20T11:00:00Z", "endTime": "2026-05-20T12:00:00Z", "podId": "gpu-a",
         "totalAmount": 0.5, "gpuAmount": 0.5, "cpuAmount": 0, "diskAmount": 0}], "metadata": {}}))
    (landing / "recon.toml").write_text('[rates.pod_per_hour]\n"gpu-a" = "1.00"\n')
    run(landing, tmp_path / "db.duckdb")
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
    with pytest.raises(RuntimeError, match="kube_pod_info.*HTTP 400"):
        pull_kube_state_metrics(tmp_path, prom + "/bogus", datetime(2026, 5, 20, tzinfo=timezone.utc),
                                datetime(2026, 5, 21, tzinfo=timezone.utc))
