"""A pod's env values (required by /v2/pods) and registry credentials never reach the landing
files or the warehouse; their names do. Checked by reading the landed files and by querying
the tables `recon run` builds from them (the DuckDB file is compressed: grepping it for a
planted value would prove nothing)."""

from __future__ import annotations

import json

from connectors.pod_secrets import fingerprint
from connectors.runpod import snapshot_inventory
from recon.db import connect
from recon.pipeline import run
from tests.connectors.runpod.conftest import API_KEY, NOW
from tests.fakes.runpod_api import FakeRunpodAPI, default_inventory, landed_files

HF_TOKEN = "hf_PLANTEDtokenQx7Vb93kLmN2pRsT"
JUPYTER = "jupyter-PLANTED-pw-4417"
REGISTRY = "dXNlcjpQTEFOVEVELXJlZ2lzdHJ5"


def planted_inventory() -> dict:
    inv = default_inventory(NOW)
    inv["pods"][0]["env"] = {"HF_TOKEN": HF_TOKEN, "MODEL_NAME": "llama-3"}
    inv["pods"][1]["env"] = {"JUPYTER_PASSWORD": JUPYTER}
    inv["pods"][1]["containerRegistryAuth"] = REGISTRY
    inv["pods"][1]["template"] = {"id": "tpl_1", "env": {"JUPYTER_PASSWORD": JUPYTER}}
    inv["endpoints"][0]["env"] = {"HF_TOKEN": HF_TOKEN}
    return inv


def test_inventory_lands_env_names_with_fingerprints_not_values(tmp_path, clock, make_client):
    with FakeRunpodAPI(API_KEY, inventory=planted_inventory(), clock=clock, now=NOW) as api:
        client = make_client(base_url=api.base_url)
        snapshot_inventory(tmp_path / "landing", client=client, now=NOW)
        served = json.dumps([s.body for s in api.served])
    assert HF_TOKEN in served and JUPYTER in served  # the API did send them
    files = landed_files(tmp_path / "landing", "inventory")
    text = "".join(p.read_text() for p in files)
    for secret in (HF_TOKEN, JUPYTER, REGISTRY):
        assert secret not in text
    pods = {p["id"]: p for p in json.loads(
        next(p for p in files if p.name == "pods.json").read_text())["pods"]}
    assert pods["pod_a1"]["env"] == {"HF_TOKEN": fingerprint(HF_TOKEN),
                                     "MODEL_NAME": fingerprint("llama-3")}
    assert pods["pod_b2"]["containerRegistryAuth"] == fingerprint(REGISTRY)
    assert pods["pod_b2"]["template"]["env"] == {"JUPYTER_PASSWORD": fingerprint(JUPYTER)}
    assert pods["pod_b2"]["cost"] == 0.0 and pods["pod_a1"]["cost"] == 0.69  # the rest as sent

    # what `recon run` makes of the landing area: no table holds them either
    db = tmp_path / "recon.duckdb"
    run(tmp_path / "landing", db)
    con = connect(db, read_only=True)
    try:
        rows = con.execute("select doc ->> '$.id', doc ->> '$.env.HF_TOKEN', "
                           "doc ->> '$.env.JUPYTER_PASSWORD' from raw.runpod_inventory "
                           "where inventory_kind = 'pods' order by 1").fetchall()
        assert rows == [("pod_a1", fingerprint(HF_TOKEN), None),
                        ("pod_b2", None, fingerprint(JUPYTER))]
        for schema, table, column in con.execute(
                "select table_schema, table_name, column_name from information_schema.columns "
                "where table_schema in ('raw', 'staging', 'marts') "
                "and data_type in ('VARCHAR', 'JSON')").fetchall():
            for secret in (HF_TOKEN, JUPYTER, REGISTRY):
                assert con.execute(f'select count(*) from "{schema}"."{table}" where '
                                   f'contains("{column}"::varchar, ?)', [secret]
                                   ).fetchone()[0] == 0, (schema, table, column)
    finally:
        con.close()
