"""The data-quality gate passes a landing holding every kind of input the loader accepts.

The per-file tie-out once counted four of the six raw tables, so a FOCUS or Prometheus file
failed every gate (tests/test_focus.py, tests/connectors/prometheus/). This landing adds to a
simulated day the kinds the simulator does not write: FOCUS rows, a Prometheus response, a single Kubernetes object, a gzipped
JSON Lines file with a bad line, documents landing skips, a file that is no input at all.
"""

import gzip
import json

from test_focus import row, write_csv

from recon.db import connect
from recon.pipeline import run
from recon.simulate import simulate


def test_every_input_kind_passes_the_gate(tmp_path):
    inp = tmp_path / "in"
    simulate(inp, seed=7, days=1, nodes=2, endpoints=1)
    x = inp / "extra"
    x.mkdir()
    (x / "node.json").write_text(json.dumps({
        "apiVersion": "v1", "kind": "Node", "spec": {}, "status": {},
        "metadata": {"name": "cpu-1", "uid": "n-cpu-1", "resourceVersion": "9",
                     "creationTimestamp": "2026-06-01T01:00:00Z"}}))
    (x / "health.json").write_text(json.dumps({
        "x_recon": {"endpoint": "https://api.runpod.ai/v2/e1/health"},
        "jobs": {"completed": 1}, "workers": {"idle": 1}}))
    (x / "empty.json").write_text("[]")
    jobs = [json.dumps({"id": f"gz-{i}", "endpointId": "e-gz", "workerId": "w-gz",
                        "completedAt": f"2026-06-01T10:00:0{i}Z", "delayTime": 1000,
                        "executionTime": 2000}) for i in range(3)]
    (x / "jobs.jsonl.gz").write_bytes(gzip.compress(("\n".join([*jobs, "{not json"]) + "\n").encode()))
    (x / "README.txt").write_text("operator notes\n")
    write_csv(x / "focus.csv", [row(10, 60), row(11, 30)])
    (x / "prom.json").write_text(json.dumps({"status": "success", "data": {
        "resultType": "vector", "result": [{"metric": {"__name__": "up", "job": "ksm"},
                                            "value": [1780308000, "1"]}]}}))

    res = run(inp, tmp_path / "db.duckdb", validate=True)
    assert res.validation.success, res.validation.summary()
    # the two quarantined records are the only thing the gate mentions (a warning)
    assert {(f.suite, f.expectation) for f in res.validation.warnings} == {
        ("raw.quarantine", "expect_table_row_count_to_equal")}
    con = connect(tmp_path / "db.duckdb", read_only=True)
    try:
        files = {r[1].split("/")[-1]: (r[0], *r[2:]) for r in con.execute(
            "select kind, source_file, records_in, records_loaded, records_quarantined, "
            "records_skipped from raw.files where source_file like '%/extra/%'").fetchall()}
        kinds = {r[0] for r in con.execute("select distinct kind from raw.files").fetchall()}
    finally:
        con.close()
    assert files == {"node.json": ("k8s_object", 1, 1, 0, 0),
                     "health.json": ("runpod_health", 1, 0, 0, 1),
                     "empty.json": ("empty_array", 1, 0, 0, 1),
                     "jobs.jsonl.gz": ("jsonl", 4, 3, 1, 0),
                     "README.txt": ("unknown", 1, 0, 1, 0),
                     "focus.csv": ("focus_csv", 2, 2, 0, 0),
                     "prom.json": ("prometheus", 1, 1, 0, 0)}
    assert {"k8s_list", "runpod_billing", "runpod_inventory", "runpod_v1_billing"} <= kinds
