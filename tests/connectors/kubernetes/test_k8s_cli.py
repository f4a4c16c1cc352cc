"""`recon collect --once` through the CLI against the loopback API server."""

from __future__ import annotations

import base64
import errno
import json

import pytest
from k8s_support import read_rows
from typer.testing import CliRunner

from connectors.kubernetes import landing as landing_mod
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


def test_collect_once_fails_when_a_list_gives_up_and_says_why(fake, tmp_path, caplog):
    """`recon collect --once` exits non-zero when lists give up (nothing landed for them), and
    its final error says why: the retries log only at WARNING."""
    fake.create("pods", {"metadata": {"name": "a", "namespace": "ml"}, "spec": {}, "status": {}})
    fake.create("nodes", {"metadata": {"name": "n1"}, "spec": {}, "status": {}})
    kc = fake.write_kubeconfig(tmp_path / "kc", "dev")
    args = ["collect", "--kubeconfig", str(kc), "--context", "dev", "--once"]
    # one transient 500: retried, everything lands, exit 0 (an error that passed is no failure)
    fake.fail_next(1, status=500, path_prefix="/api/v1/nodes")
    r = CliRunner().invoke(app, [*args, "--landing", str(tmp_path / "l1")])
    assert r.exit_code == 0, r.output
    assert [n["object"]["metadata"]["name"] for n in read_rows(tmp_path / "l1", "nodes", "dev")] \
        == ["n1"]
    # nodes answer 500 every time: the list gives up, the run exits 1, what did list landed
    fake.fail_next(100, status=500, path_prefix="/api/v1/nodes")
    r = CliRunner().invoke(app, [*args, "--landing", str(tmp_path / "l2")])
    assert r.exit_code == 1, r.output
    assert "1 list(s) failed: dev/nodes" in r.output
    assert any("dev/nodes: list failed 5 times (last: API error 500" in m
               for m in caplog.messages), caplog.messages
    assert [p["object"]["metadata"]["name"] for p in read_rows(tmp_path / "l2", "pods", "dev")] \
        == ["a"]


def test_collect_with_a_broken_kubeconfig_is_a_clear_error(tmp_path):
    kc = tmp_path / "kc.yaml"
    kc.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    for path in (kc, tmp_path / "missing.yaml"):
        r = CliRunner().invoke(app, ["collect", "--landing", str(tmp_path / "l"), "--kubeconfig",
                                     str(path), "--once"], terminal_width=300)
        assert r.exit_code == 2, r.output
        assert f"error: {path}: Invalid kube-config file" in r.output
        assert "Traceback" not in r.output
    # not YAML, with a token on the broken line: the position is named, never the line
    kc.write_text("apiVersion: v1\nkind: Config\nusers:\n- name: u\n"
                  "  user: {token: planted-secret-token: bad}\n")
    r = CliRunner().invoke(app, ["collect", "--landing", str(tmp_path / "l"), "--kubeconfig",
                                 str(kc), "--once"], terminal_width=300)
    assert r.exit_code == 2, r.output
    assert f'error: {kc}: while parsing a flow mapping in "{kc}", line 5' in r.output
    assert "planted-secret-token" not in r.output and "Traceback" not in r.output


def test_collect_once_fails_when_rows_cannot_be_landed(fake, tmp_path, monkeypatch):
    """A worker's exception in once mode (disk full, read-only volume) fails `recon collect
    --once` (and the flow's task): counted only in `errors`, they would pass with pods half
    landed."""
    for i in range(6):
        fake.create("pods", {"metadata": {"name": f"p{i}", "namespace": "ml"}, "spec": {}})
    fake.create("nodes", {"metadata": {"name": "n1"}, "spec": {}, "status": {}})
    real = landing_mod.LandingWriter.write

    def write(self, event_type, obj):
        if self.resource == "pods" and obj["metadata"]["name"] >= "p3":  # the volume is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, event_type, obj)

    monkeypatch.setattr(landing_mod.LandingWriter, "write", write)
    kc = fake.write_kubeconfig(tmp_path / "kc", "dev")
    landing = tmp_path / "landing"
    r = CliRunner().invoke(app, ["collect", "--landing", str(landing), "--kubeconfig", str(kc),
                                 "--context", "dev", "--once"])
    assert r.exit_code == 1, r.output
    assert "1 list(s) failed: dev/pods" in r.output
    assert [p["object"]["metadata"]["name"] for p in read_rows(landing, "pods")] == \
        ["p0", "p1", "p2"]
    assert [n["object"]["metadata"]["name"] for n in read_rows(landing, "nodes")] == ["n1"]


SECRET = "planted-secret-token-9f8e7d"
KEY_DATA = base64.b64encode(f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n".encode()).decode()


def _kubeconfig(**change) -> str:
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
           "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
           "users": [{"name": "u", "user": {"token": SECRET}}],
           "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}
    return json.dumps({**cfg, **change})


@pytest.mark.parametrize("text,extra,message", [
    (_kubeconfig(), ["--context", "nosuch"],
     ": contexts not in kubeconfig: ['nosuch'] (it has ['c'])"),
    (_kubeconfig(users=[{"name": "u", "user": {"client-certificate-data": KEY_DATA[:-3],
                                               "client-key-data": KEY_DATA[:-3]}}]), [],
     ", context 'c': certificate or key data is not valid base64 ("),
    (f"{SECRET}\n", [], ": not a kubeconfig, or an entry of the wrong type"),
    (f"- token: {SECRET}\n", [], ": not a kubeconfig, or an entry of the wrong type"),
    (_kubeconfig(contexts=[{"name": "c", "context": SECRET}]), [],
     ": not a kubeconfig, or an entry of the wrong type"),
    (_kubeconfig(contexts=[{"name": n, "context": {"cluster": "k", "user": "u"}}
                           for n in ("gpu:eu", "gpu/eu")], **{"current-context": "gpu:eu"}),
     ["--context", "all"],
     (": cluster names must be unique: context 'gpu:eu' and context 'gpu/eu' both become "
      "cluster 'gpu_eu'")),
], ids=["unknown-context", "bad-base64-key", "not-a-mapping", "a-list", "context-not-a-mapping",
        "two-contexts-one-name"])
def test_common_kubeconfig_mistakes_are_a_clear_error(tmp_path, text, extra, message):
    """These are a clear error, not a traceback (exit 1): the configurations are loaded before
    the collector starts, where their ValueError/TypeError is caught."""
    kc = tmp_path / "kc"
    kc.write_text(text)
    r = CliRunner().invoke(app, ["collect", "--landing", str(tmp_path / "l"), "--kubeconfig",
                                 str(kc), "--once", *extra], terminal_width=300)
    output = " ".join(r.output.split())  # rich may wrap a long message
    assert r.exit_code == 2, (r.output, r.exception)
    assert f"error: {kc}{message}" in output
    assert SECRET not in output and KEY_DATA[:20] not in output and "Traceback" not in output
    assert not (tmp_path / "l").exists()
