"""`recon collect --once` through the CLI against the loopback API server."""

from __future__ import annotations

from k8s_support import read_rows
from typer.testing import CliRunner

from recon.cli import app


def test_collect_once_cli(fake, tmp_path):
    fake.create("pods", {"metadata": {"name": "a", "namespace": "ml"}, "spec": {}, "status": {}})
    fake.create("nodes", {"metadata": {"name": "n1"}, "spec": {}, "status": {}})
    kc = fake.write_kubeconfig(tmp_path / "kc", "dev")
    landing = tmp_path / "landing"
    r = CliRunner().invoke(app, ["collect", "--landing", str(landing), "--kubeconfig", str(kc),
                                 "--context", "dev", "--once"])
    assert r.exit_code == 0, r.output
    pods = read_rows(landing, "pods", "dev")
    assert [p["object"]["metadata"]["name"] for p in pods] == ["a"]
    assert pods[0]["cluster"] == "dev" and pods[0]["type"] == "ADDED"
    assert [n["object"]["metadata"]["name"] for n in read_rows(landing, "nodes", "dev")] == ["n1"]
