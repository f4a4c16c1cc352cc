"""Secret values in pod specs a user saved themselves never reach the warehouse.

Each landing path is exercised (DuckDB's JSON Lines path, DuckDB's List path, the Python
reader, the quarantine) and checked by querying the tables: the DuckDB file is compressed, so
grepping its bytes for a planted value proves nothing.
"""

from __future__ import annotations

import json

import pytest

from connectors.pod_secrets import fingerprint, redact_secrets
from recon.db import connect
from recon.ingest.land import load_folder
from recon.pipeline import run

HF_TOKEN = "hf_PLANTEDtokenQx7Vb93kLmN2pRsT"
JUPYTER = "jupyter-PLANTED-pw-4417"
REGISTRY = "dXNlcjpQTEFOVEVELXJlZ2lzdHJ5"  # base64 user:password of a registry login
PLANTED = (HF_TOKEN, JUPYTER, REGISTRY, "PLANTED")


def k8s_pod(uid: str, rv: str = "1") -> dict:
    manifest = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [
        {"name": "worker", "env": [{"name": "HF_TOKEN", "value": HF_TOKEN}]}]}}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"p-{uid}", "namespace": "ml", "uid": uid, "resourceVersion": rv,
                     "creationTimestamp": "2026-06-01T10:00:00Z",
                     "labels": {"team": "vision", "env": "prod"},
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration":
                                     json.dumps(manifest)}},
        "spec": {
            "containers": [{"name": "worker", "image": "ghcr.io/x/w:1",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}},
                            "env": [{"name": "HF_TOKEN", "value": HF_TOKEN},
                                    {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {
                                        "name": "db-creds", "key": "password"}}}]}],
            "initContainers": [{"name": "init", "env": [{"name": "JUPYTER_PASSWORD",
                                                          "value": JUPYTER}]}],
            "ephemeralContainers": [{"name": "debug", "env": [{"name": "TOKEN",
                                                               "value": HF_TOKEN}]}],
        },
        "status": {"phase": "Running"},
    }


def runpod_pod(pid: str) -> dict:
    return {"id": pid, "name": f"train-{pid}", "image": "runpod/pytorch:2", "cost": 0.69,
            "status": "RUNNING", "env": {"HF_TOKEN": HF_TOKEN, "JUPYTER_PASSWORD": JUPYTER},
            "registry": "reg_abc", "containerRegistryAuth": REGISTRY,
            "template": {"id": "tpl_1", "env": {"JUPYTER_PASSWORD": JUPYTER}}}


def test_redaction_keeps_names_and_references_and_shows_a_change_of_value():
    pod = k8s_pod("u1")
    out = redact_secrets(pod)
    assert pod["spec"]["containers"][0]["env"][0]["value"] == HF_TOKEN  # input untouched
    text = json.dumps(out)
    assert not any(s in text for s in PLANTED), text
    env = out["spec"]["containers"][0]["env"]
    assert env[0] == {"name": "HF_TOKEN", "value": fingerprint(HF_TOKEN)}
    assert env[1] == pod["spec"]["containers"][0]["env"][1]  # valueFrom: a reference, kept
    assert out["spec"]["initContainers"][0]["env"][0]["name"] == "JUPYTER_PASSWORD"
    assert out["metadata"]["labels"] == {"team": "vision", "env": "prod"}  # a label is no env
    applied = json.loads(out["metadata"]["annotations"][
        "kubectl.kubernetes.io/last-applied-configuration"])
    assert applied["spec"]["containers"][0]["env"][0]["value"] == fingerprint(HF_TOKEN)
    assert fingerprint(HF_TOKEN).startswith("sha256:") and len(fingerprint(HF_TOKEN)) == 23
    assert fingerprint(HF_TOKEN) != fingerprint(HF_TOKEN + "x")  # a changed token shows
    assert redact_secrets(out) == out  # landing a redacted record again changes nothing
    rp = redact_secrets(runpod_pod("p1"))
    assert rp["env"] == {"HF_TOKEN": fingerprint(HF_TOKEN),
                         "JUPYTER_PASSWORD": fingerprint(JUPYTER)}
    assert rp["registry"] == "reg_abc" and rp["containerRegistryAuth"] == fingerprint(REGISTRY)
    assert rp["template"]["env"]["JUPYTER_PASSWORD"] == fingerprint(JUPYTER)
    plain = {"kind": "Node", "metadata": {"uid": "n"}}
    assert redact_secrets(plain) is plain


def test_the_key_changes_the_fingerprint(monkeypatch):
    default = fingerprint(JUPYTER)
    monkeypatch.setenv("RECON_SECRET_HASH_KEY", "site-key")
    assert fingerprint(JUPYTER) != default


def _write(folder, big_list: bool):
    folder.mkdir(parents=True, exist_ok=True)
    # a watch file (DuckDB's JSON Lines path; the line with a secret goes to Python)
    (folder / "watch.jsonl").write_text("".join(
        json.dumps({"type": t, "object": k8s_pod("w1", rv)}) + "\n"
        for t, rv in (("ADDED", "1"), ("MODIFIED", "2"))))
    items = [k8s_pod(f"l{i}") for i in range(3)]
    (folder / ("big-list.json" if big_list else "list.json")).write_text(json.dumps(
        {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}))
    (folder / "pods.json").write_text(json.dumps(  # a Runpod inventory (the Python reader)
        {"x_recon": {"endpoint": "/v2/pods", "pulledAt": "2026-06-01T10:00:00Z"},
         "pods": [runpod_pod("p1"), runpod_pod("p2")]}))
    (folder / "inventory.jsonl").write_text(json.dumps(
        {"x_recon": {"endpoint": "/v2/pods", "pulledAt": "2026-06-01T11:00:00Z"},
         "pods": [runpod_pod("p3")]}) + "\n")
    bad = k8s_pod("q1")
    del bad["metadata"]["uid"]  # quarantined: no uid
    (folder / "bad.jsonl").write_text(
        json.dumps({"type": "ADDED", "object": bad}) + "\n"
        + json.dumps({"type": "ADDED", "object": k8s_pod("q2")})[:-40] + "\n")  # broken JSON
    (folder / "workers.jsonl").write_text(json.dumps(  # DuckDB's workers path
        {"x_recon": {"endpoint": "/v2/serverless/{id}/workers", "endpointId": "ep1",
                     "pulledAt": "2026-06-01T10:00:00Z"},
         "workers": [{"id": "w1", "status": "RUNNING", "env": {"HF_TOKEN": HF_TOKEN}}]}) + "\n")


def _leaks(con) -> list:
    """(table, column) of every stored text that holds a planted value."""
    found = []
    for schema, table, column in con.execute(
            "select table_schema, table_name, column_name from information_schema.columns "
            "where table_schema in ('raw', 'staging', 'marts', 'meta') and "
            "data_type in ('VARCHAR', 'JSON')").fetchall():
        for s in PLANTED:
            n = con.execute(f'select count(*) from "{schema}"."{table}" where '
                            f'contains("{column}"::varchar, ?)', [s]).fetchone()[0]
            if n:
                found.append((f"{schema}.{table}", column, s, n))
    return found


@pytest.mark.parametrize("fast", [True, False], ids=["duckdb-paths", "python-reader"])
def test_no_planted_secret_in_any_table_whichever_path_landed_it(tmp_path, monkeypatch, fast):
    from recon.ingest import lists

    if fast:
        monkeypatch.setattr(lists, "LIST_MIN_BYTES", 0)  # the List through DuckDB too
    else:
        monkeypatch.setattr("recon.ingest.land.land_jsonl", lambda con, p, d, limits=None: None)
        monkeypatch.setattr("recon.ingest.land.land_list", lambda con, p, d, prepared=None, limits=None: None)
    folder = tmp_path / "in" / "cluster=c1"
    _write(folder, big_list=fast)
    res = run(tmp_path / "in", tmp_path / "db.duckdb", validate=False)
    assert res.records_in == res.loaded + res.quarantined + res.skipped
    con = connect(tmp_path / "db.duckdb", read_only=True)
    try:
        assert _leaks(con) == []
        # what is kept: every landed pod, its names and references, and fingerprints
        assert con.execute("select count(*) from raw.k8s_objects where kind = 'Pod'"
                           ).fetchone()[0] == 5
        env = con.execute("select doc -> '$.spec.containers[0].env' from raw.k8s_objects "
                          "where uid = 'w1' order by resource_version").fetchall()
        assert [json.loads(e[0]) for e in env] == [[
            {"name": "HF_TOKEN", "value": fingerprint(HF_TOKEN)},
            {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db-creds",
                                                                   "key": "password"}}}]] * 2
        rp = con.execute("select doc ->> '$.env.JUPYTER_PASSWORD' from raw.runpod_inventory "
                         "where inventory_kind = 'pods'").fetchall()
        assert rp == [(fingerprint(JUPYTER),)] * 3
        assert con.execute("select count(*) from staging.stg_k8s__pods").fetchone()[0] >= 4
        bad = con.execute("select locator, reason, record from raw.quarantine "
                          "where source_file like '%bad.jsonl' order by record_no").fetchall()
        assert [b[0] for b in bad] == ["line 1", "line 2"]
        assert "HF_TOKEN" in bad[0][2] and fingerprint(HF_TOKEN) in bad[0][2]
        assert "the rest may hold secret values" in bad[1][2]
    finally:
        con.close()


def test_fast_paths_store_what_the_python_reader_stores(tmp_path, monkeypatch):
    from recon.ingest import lists

    docs = {}
    for fast in (True, False):
        with monkeypatch.context() as m:
            if fast:
                m.setattr(lists, "LIST_MIN_BYTES", 0)
            else:
                m.setattr("recon.ingest.land.land_jsonl", lambda con, p, d, limits=None: None)
                m.setattr("recon.ingest.land.land_list", lambda con, p, d, prepared=None, limits=None: None)
            root = tmp_path / str(fast)
            _write(root / "in" / "cluster=c1", big_list=True)
            con = connect(root / "db.duckdb")
            try:
                load_folder(con, root / "in")
                docs[fast] = con.execute(
                    "select regexp_replace(source_file, '.*/', ''), locator, json(doc)::varchar "
                    "from raw.k8s_objects union all select regexp_replace(source_file, '.*/', "
                    "''), locator, json(doc)::varchar from raw.runpod_inventory order by all"
                ).fetchall()
            finally:
                con.close()
    assert docs[True] == docs[False] and len(docs[True]) == 9  # 2 + 3 + 3 pods, a worker
    assert not any(s in doc for _, _, doc in docs[True] for s in PLANTED)


def test_a_secret_in_a_later_chunk_is_found_by_the_chunk_pre_check(tmp_path, monkeypatch):
    """The DuckDB paths test lines for secrets only in chunks whose bytes hold a marker: small
    chunks, plain pods first and the pod with env last, in a watch file and a List."""
    from recon.ingest import jsonl, lists

    monkeypatch.setattr(jsonl, "FAST_CHUNK", 4096)
    monkeypatch.setattr(lists, "LIST_MIN_BYTES", 0)
    folder = tmp_path / "in" / "cluster=c1"
    folder.mkdir(parents=True)
    plain = []
    for i in range(40):
        p = k8s_pod(f"plain{i}")
        for key in ("containers", "initContainers", "ephemeralContainers"):
            for c in p["spec"][key]:
                c.pop("env")
        del p["metadata"]["annotations"]
        plain.append(p)
    (folder / "watch.jsonl").write_text("".join(
        json.dumps({"type": "ADDED", "object": o}) + "\n" for o in [*plain, k8s_pod("last")]))
    (folder / "list.json").write_text(json.dumps(
        {"apiVersion": "v1", "kind": "List", "metadata": {},
         "items": [*plain[:20], k8s_pod("last-item")]}))
    con = connect(tmp_path / "db.duckdb")
    try:
        load_folder(con, tmp_path / "in")
        assert con.execute("select count(*) from raw.k8s_objects").fetchone()[0] == 62
        assert _leaks(con) == []
        assert con.execute("select count(*) from raw.k8s_objects where "
                           "contains(doc, ?)", [fingerprint(HF_TOKEN)]).fetchone()[0] == 2
    finally:
        con.close()
