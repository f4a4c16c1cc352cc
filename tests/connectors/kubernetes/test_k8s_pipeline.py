"""The live collector, watching a loopback API server that replays the simulated fleet, lands
data that reconciles to exactly the same marts as the simulator's own files."""

from __future__ import annotations

import json
import shutil

import duckdb
from k8s_support import RunningCollector, landed_matches, wait_for, wait_watching

from connectors.kubernetes import ClusterConfig
from recon.pipeline import run
from tests.fakes.k8s_api import FakeKubeAPI

STORES = {"Pod": "pods", "Node": "nodes", "Event": "events", "ScaledJob": "scaledjobs",
          "ScaledObject": "scaledobjects"}


def _history(k8s_dir):
    """(store, type, object) of the simulated cluster, in the order the API would emit them."""
    out = []
    for f in sorted(k8s_dir.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            row = json.loads(line)
            out.append((row["object"]["metadata"]["creationTimestamp"], int(row["object"]["metadata"]["resourceVersion"]),
                        row["type"], row["object"]))
    dec = json.JSONDecoder()
    text = (k8s_dir / "nodes-watch.json").read_text()
    i = 0
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        row, i = dec.raw_decode(text, i)
        out.append(("", int(row["object"]["metadata"]["resourceVersion"]), row["type"], row["object"]))
    for f in sorted(k8s_dir.glob("*.json")):
        if f.name == "nodes-watch.json":
            continue
        for item in json.loads(f.read_text())["items"]:
            out.append(("", 0, "ADDED", item))
    out.sort(key=lambda r: r[1])
    return [(STORES[o["kind"]], t, o) for _, _, t, o in out]


def _marts(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {m: con.execute(f"select * from marts.{m} order by all").fetchall()
                for m in ("resource_day", "billed_segments", "findings")}
    finally:
        con.close()


def test_collected_landing_reconciles_like_the_simulator(sim_run, tmp_path):
    src = sim_run["root"] / "input"
    k8s_dir = next((src / "k8s").glob("cluster=*"))
    history = _history(k8s_dir)
    landing = tmp_path / "live"
    with FakeKubeAPI(bookmark_interval=0.2) as fake:
        cluster = ClusterConfig(name="sim-cluster",
                                kubeconfig=str(fake.write_kubeconfig(tmp_path / "kc", "sim")),
                                context="sim")
        with RunningCollector(landing, [cluster], list(set(STORES.values()))) as coll:
            wait_watching(fake, dict.fromkeys(set(STORES.values()), 1), coll)
            for store, etype, obj in history:
                fake.replay(store, etype, obj)
            for store in set(STORES.values()):
                wait_for(lambda s=store: landed_matches(landing, fake, s, "sim-cluster"),
                         timeout=30, what=f"{store} landed")
    shutil.copytree(src / "runpod", landing / "runpod")
    shutil.copy(src / "recon.toml", landing / "recon.toml")
    run(landing, tmp_path / "live.duckdb")
    got, want = _marts(tmp_path / "live.duckdb"), _marts(sim_run["db"])
    assert got["resource_day"] == want["resource_day"]
    assert got["billed_segments"] == want["billed_segments"]
    assert got["findings"] == want["findings"]
