"""Scaling out on one machine (docs/scaling-out.md): one collector per cluster, each writing its
own `k8s/cluster=<name>/hour=.../` prefix of one landing tree (the "bucket"), provider files
beside them, and the daily run reading the whole partitioned tree.

Two loopback API servers (tests/fakes/k8s_api.py) replay two simulated clusters (different
seeds, so disjoint Runpod pods, nodes and pod uids). Each cluster has its own collector instance
(its own ClusterConfig, threads, state file and clock), as in production. The day boundary is
real: phase 1 replays every object version that happened on day 1 and the daily run reconciles
day 1; phase 2 restarts the collectors (they resume their watches from the saved state),
replays day 2, adds day 2's provider files and reconciles day 2 on the same warehouse.

Checked: the marts of the whole tree hold both clusters' pods under the right cluster; they
equal the union of running each cluster's partition on its own (per-cluster totals add up);
adding the new day re-lands no old file and leaves day 1's mart rows as they were; day 2 equals
a fresh run over the whole tree; DuckDB reads the landed partitions by glob with hive
partitioning. Only 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import pytest

from connectors.kubernetes import ClusterConfig, CollectorOptions, Counters
from connectors.kubernetes.runner import run as run_collector
from recon.pipeline import run
from recon.simulate import simulate
from recon.simulate.fleet import ACCOUNT_FILES, merged_config
from tests.fakes.k8s_api import FakeKubeAPI

DAY1, DAY2 = date(2026, 6, 1), date(2026, 6, 2)
MIDNIGHT = "2026-06-02T00:00:00"  # day 2 starts; timestamps compare as strings (same format)
# world per cluster: (cluster name, seed); both Runpod accounts are separate (see _provider_files)
CLUSTERS = {"gpu-eu": 7, "gpu-us": 8}
STORES = {"Pod": "pods", "Node": "nodes", "Event": "events", "ScaledJob": "scaledjobs",
          "ScaledObject": "scaledobjects"}
RESOURCES = ["pods", "events", "nodes", "scaledjobs", "scaledobjects"]
# the simulator's fixed warm-pool scenario (one Runpod pod id, one balance): keep it in one
# cluster only, so the two clusters share no billed resource
EXTRAS = ACCOUNT_FILES
MARTS = ("workload_lifecycle", "resource_day", "billed_segments", "findings", "allocation",
         "settlement", "rates")
DAY_MARTS = MARTS[1:]  # one row per day; workload_lifecycle is one row per pod, rebuilt each run
GONE_DAY1 = f"deleted_at < TIMESTAMPTZ '{MIDNIGHT}Z'"  # pods gone before day 2
FAST = CollectorOptions(page_size=50, watch_timeout_seconds=3, watch_read_margin_seconds=1.0,
                        connect_timeout_seconds=2.0, list_read_timeout_seconds=2.0,
                        backoff_base_seconds=0.05, backoff_cap_seconds=0.3,
                        state_interval_seconds=0.05, absent_recheck_seconds=0.5,
                        progress_interval_seconds=0.2)
TS = re.compile(r'"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)')


# ----------------------------------------------------------------------------- simulated worlds

def _event_time(obj: dict) -> str:
    """When a version happened: the latest timestamp it carries ("" for timeless objects such
    as KEDA specs, which exist from the start)."""
    return max(TS.findall(json.dumps(obj)), default="")


def _history(k8s_dir: Path) -> list[tuple[str, str, str, dict]]:
    """(event time, store, type, object) of every version in a simulated cluster folder, in the
    order they happened (the simulator's resourceVersion breaks ties)."""
    rows = []
    for f in sorted(k8s_dir.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            rows.append((r["type"], r["object"]))
    text, i, dec = (k8s_dir / "nodes-watch.json").read_text(), 0, json.JSONDecoder()
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        r, i = dec.raw_decode(text, i)
        rows.append((r["type"], r["object"]))
    for f in sorted(k8s_dir.glob("*.json")):
        if f.name != "nodes-watch.json":
            rows += [("ADDED", item) for item in json.loads(f.read_text())["items"]]
    out = [(_event_time(o), int(o["metadata"].get("resourceVersion") or 0), STORES[o["kind"]], t, o)
           for t, o in rows]
    out.sort(key=lambda r: r[:2])
    return [(when, store, t, o) for when, _, store, t, o in out]


def _merged_config(worlds: dict[str, Path]) -> str:
    """One recon.toml for both worlds (recon.simulate.fleet.merged_config)."""
    return merged_config([(w / "recon.toml").read_text() for w in worlds.values()])


@pytest.fixture(scope="module")
def worlds(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("worlds")
    out = {}
    for i, (name, seed) in enumerate(CLUSTERS.items()):
        out[name] = root / name
        simulate(out[name], seed=seed, days=2, nodes=2, endpoints=1)
        if i:  # the fixed warm-pool scenario stays in the first cluster only
            for p in list(out[name].rglob("*")):
                if p.name in EXTRAS:
                    p.unlink()
    return out


def _provider_files(world: Path, day_index: int) -> list[Path]:
    """The world's Runpod files a pull of that day would have brought: its per-day bills, and on
    day 1 the snapshots and job records."""
    files = sorted((world / "runpod").iterdir())
    dated = [p for p in files if re.search(r"-\d\d\.json$", p.name)]
    if day_index == 0:
        return [p for p in files if p not in dated] + [p for p in dated if p.name.endswith("-00.json")]
    return [p for p in dated if p.name.endswith(f"-{day_index:02d}.json")]


# ----------------------------------------------------------------------------- collectors

class Collector:
    """One cluster's collector (`connectors.kubernetes` runner) in a thread, with a fixed
    clock: every file it writes lands in that clock's `hour=` partition."""

    def __init__(self, landing: Path, cluster: ClusterConfig, now: datetime):
        self.stop_event, self.error = threading.Event(), None
        self.thread = threading.Thread(target=self._run, args=(landing, cluster, now), daemon=True)

    def _run(self, landing, cluster, now):
        try:
            run_collector(landing, [cluster], RESOURCES, stop_event=self.stop_event,
                          max_events=None, run_seconds=None, options=FAST, counters=Counters(),
                          on_progress=None, once=False, save_state=True, clock=lambda: now)
        except BaseException as e:  # noqa: BLE001 - surfaced by stop()
            self.error = e

    def stop(self):
        self.stop_event.set()
        self.thread.join(timeout=15)
        assert not self.thread.is_alive(), "collector did not stop"
        if self.error:
            raise self.error


def _wait(pred, what: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _landed(landing: Path, cluster: str) -> dict[str, set[tuple[str, str]]]:
    """(uid, resourceVersion) landed per store, complete lines only."""
    out: dict[str, set] = {s: set() for s in RESOURCES}
    for p in (landing / "k8s").glob(f"cluster={cluster}/hour=*/*.jsonl"):
        store = p.name.rsplit("-", 2)[0]
        for line in p.read_bytes().split(b"\n")[:-1]:
            m = json.loads(line)["object"]["metadata"]
            out[store].add((m["uid"], m["resourceVersion"]))
    return out


def _collect_phase(local: dict[str, Path], fakes: dict, kubeconfigs: dict, versions: dict,
                   now: datetime) -> None:
    """Start one collector per cluster (each on its own landing disk, as a Deployment per
    cluster has its own volume), replay `versions` into each cluster's API server, wait until
    every version produced is landed, stop the collectors."""
    collectors = {c: Collector(local[c], ClusterConfig(name=c, kubeconfig=str(kubeconfigs[c]),
                                                       context=c), now) for c in fakes}
    for col in collectors.values():
        col.thread.start()
    try:
        for c, fake in fakes.items():
            _wait(lambda f=fake, col=collectors[c]: col.error is not None or all(
                f.open_watches(s) >= 1 for s in RESOURCES), f"{c} watching")
        for c, fake in fakes.items():
            for _, store, etype, obj in versions[c]:
                fake.replay(store, etype, obj)
        for c, fake in fakes.items():
            _wait(lambda f=fake, c=c: all(_landed(local[c], c)[s] == f.versions(s)
                                          for s in RESOURCES), f"{c}: every produced version landed")
    finally:
        for col in collectors.values():
            col.stop()


def _sync(local: Path, cluster: str, bucket: Path) -> None:
    """`aws s3 sync LOCAL/k8s/cluster=C s3://BUCKET/k8s/cluster=C` on a folder: the collector's
    own prefix only (its k8s/state/ bookkeeping stays on its disk), size and mtime kept."""
    shutil.copytree(local / "k8s" / f"cluster={cluster}", bucket / "k8s" / f"cluster={cluster}",
                    dirs_exist_ok=True, copy_function=shutil.copy2)


# ----------------------------------------------------------------------------- marts

def _marts(db: Path, where: str = "true", marts=MARTS) -> dict[str, Counter]:
    """Every row of the marts (a multiset: rows hold NULLs, which do not sort in Python), to
    the last digit (allocation's shares are decimals, its sums order-free)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {m: Counter(tuple(r) for r in con.execute(f"select * from marts.{m} where {where}").fetchall())
                for m in marts}
    finally:
        con.close()


def _copy_partition(landing: Path, cluster: str, dest: Path) -> Path:
    """What one cluster's own pipeline would read: its `cluster=` prefix and its provider files."""
    shutil.copytree(landing / "k8s" / f"cluster={cluster}", dest / "k8s" / f"cluster={cluster}")
    shutil.copytree(landing / "runpod" / f"account={cluster}", dest / "runpod" / f"account={cluster}")
    shutil.copy(landing / "recon.toml", dest / "recon.toml")
    return dest


def _account_wide(row: tuple, mart: str) -> bool:
    """Savings-plan findings are about the account's commitments, not a cluster: each cluster's
    own run raises them for itself (SAVINGS_PLAN_EXPIRING twice, SAVINGS_PLAN_UNUSED where the
    other cluster used the plan)."""
    return mart == "findings" and any(isinstance(v, str) and v.startswith("plan:") for v in row)


def _cluster_rows(counters: list[dict[str, Counter]], mart: str, keep=lambda r, m: True) -> Counter:
    out: Counter = Counter()
    for c in counters:
        out.update({r: n for r, n in c[mart].items() if not _account_wide(r, mart) and keep(r, mart)})
    return out


# ----------------------------------------------------------------------------- the scenario

@pytest.fixture(scope="module")
def scaled(worlds, tmp_path_factory) -> dict:
    """Two clusters, two days, collected, synced and reconciled as in production (see the module
    docstring); returns what the tests below check."""
    tmp = tmp_path_factory.mktemp("scaled")
    bucket = tmp / "bucket"
    bucket.mkdir()
    (bucket / "recon.toml").write_text(_merged_config(worlds))
    local = {c: tmp / f"collector-{c}" for c in CLUSTERS}
    history = {c: _history(next((w / "k8s").glob("cluster=*"))) for c, w in worlds.items()}
    assert all(h[-1][0] >= MIDNIGHT > h[0][0] for h in history.values()), "both days replayed"
    out: dict = {"bucket": bucket, "db": tmp / "warehouse.duckdb"}

    def provider_pull(day_index: int, pulled: str) -> None:
        for c, w in worlds.items():
            dest = bucket / "runpod" / f"account={c}" / f"pulled={pulled}"
            dest.mkdir(parents=True)
            for p in _provider_files(w, day_index):
                shutil.copy2(p, dest / p.name)

    with FakeKubeAPI(bookmark_interval=0.2) as eu, FakeKubeAPI(bookmark_interval=0.2) as us:
        fakes = {"gpu-eu": eu, "gpu-us": us}
        kubeconfigs = {c: f.write_kubeconfig(tmp / f"kubeconfig-{c}", c) for c, f in fakes.items()}

        # ---- day 1: collect what happened on day 1, sync, pull the provider, reconcile day 1
        _collect_phase(local, fakes, kubeconfigs,
                       {c: [v for v in h if v[0] < MIDNIGHT] for c, h in history.items()},
                       datetime(2026, 6, 1, 23, 30, tzinfo=UTC))
        for c in CLUSTERS:
            _sync(local[c], c, bucket)
        provider_pull(0, "2026-06-02")
        out["first"] = run(bucket, out["db"], day_from=DAY1, day_to=DAY1)
        out["day1_before"] = _marts(out["db"], marts=DAY_MARTS)
        out["gone_day1"] = _marts(out["db"], GONE_DAY1, ("workload_lifecycle",))

        # ---- day 2: collectors restart (resume their watches from their saved state) and write
        # the new day's partition; sync again; the next provider pull; reconcile day 2
        _collect_phase(local, fakes, kubeconfigs,
                       {c: [v for v in h if v[0] >= MIDNIGHT] for c, h in history.items()},
                       datetime(2026, 6, 2, 23, 30, tzinfo=UTC))
        out["produced"] = {c: {uid for uid, _ in f.versions("pods")} for c, f in fakes.items()}
        out["pod_lists"] = {c: [q for q in f.requests if q[0].endswith("/pods")
                                and str(q[1].get("watch", "")).lower() not in ("true", "1")]
                            for c, f in fakes.items()}
    for c in CLUSTERS:
        _sync(local[c], c, bucket)
    provider_pull(1, "2026-06-03")
    out["second"] = run(bucket, out["db"], day_from=DAY2, day_to=DAY2)
    out["after"] = _marts(out["db"])
    out["third"] = run(bucket, out["db"], day_from=DAY2, day_to=DAY2)
    out["after_rerun"] = _marts(out["db"])

    # the whole tree from scratch, and each cluster's partition on its own
    out["whole_db"] = tmp / "whole.duckdb"
    run(bucket, out["whole_db"])
    out["alone_db"] = {}
    for c in CLUSTERS:
        out["alone_db"][c] = tmp / f"only-{c}.duckdb"
        run(_copy_partition(bucket, c, tmp / f"only-{c}"), out["alone_db"][c])
    return out


# ----------------------------------------------------------------------------- the tests

def test_one_collector_per_cluster_writes_its_own_prefix(scaled):
    bucket = scaled["bucket"]
    parts = sorted(str(p.relative_to(bucket)) for p in bucket.glob("k8s/*/*"))
    assert parts == [f"k8s/cluster={c}/hour={h}" for c in sorted(CLUSTERS)
                     for h in ("2026-06-01T23", "2026-06-02T23")]
    for c in CLUSTERS:  # day 2's collector resumed its watch from its state: listed once, ever
        assert len(scaled["pod_lists"][c]) == 1, scaled["pod_lists"][c]
        rows = [json.loads(line) for p in bucket.glob(f"k8s/cluster={c}/hour=*/*.jsonl")
                for line in p.read_bytes().splitlines()]
        assert rows and {r["cluster"] for r in rows} == {c}


def test_a_new_day_lands_only_new_files_and_keeps_old_days(scaled):
    first, second, third = scaled["first"], scaled["second"], scaled["third"]
    assert first.quarantined == 0 and first.staging_quarantined == 0
    assert second.quarantined == 0 and second.staging_quarantined == 0
    # old files are not landed again; only the new day's files are
    assert {r.path for r in second.files if r.unchanged} == {r.path for r in first.files}
    new = [r.path for r in second.files if not r.unchanged]
    assert new and all("hour=2026-06-02T23" in p or "pulled=2026-06-03" in p for p in new)
    # day 1's rows are exactly what the day-1 run wrote
    before = scaled["day1_before"]
    assert all(before[m] for m in ("resource_day", "billed_segments", "allocation", "findings"))
    now = _marts(scaled["db"], f"day = DATE '{DAY1}'", DAY_MARTS)
    for m in DAY_MARTS:
        assert now[m] == before[m], m
    # so are the pods that were gone before midnight; the others have grown their day 2
    gone = scaled["gone_day1"]["workload_lifecycle"]
    assert gone and _marts(scaled["db"], GONE_DAY1, ("workload_lifecycle",))["workload_lifecycle"] == gone
    assert sum(scaled["after"]["workload_lifecycle"].values()) > sum(gone.values())
    # rerunning the same day lands nothing and changes nothing
    assert all(r.unchanged for r in third.files)
    for m in MARTS:
        assert scaled["after_rerun"][m] == scaled["after"][m], m
    # day 2 is what a fresh run over the whole tree finds
    whole2 = _marts(scaled["whole_db"], f"day = DATE '{DAY2}'", DAY_MARTS)
    assert whole2 == _marts(scaled["db"], f"day = DATE '{DAY2}'", DAY_MARTS)
    assert _marts(scaled["whole_db"])["workload_lifecycle"] == scaled["after"]["workload_lifecycle"]


def test_a_windowed_run_keeps_other_days_settlement(scaled):
    assert scaled["after_rerun"]["settlement"] == scaled["after"]["settlement"]
    now = _marts(scaled["db"], f"day = DATE '{DAY1}'", ("settlement",))
    assert now["settlement"] == scaled["day1_before"]["settlement"]
    assert sum(now["settlement"].values()) > 0


def test_unschedulable_gpu_counts_own_cluster(scaled):
    whole = _marts(scaled["whole_db"], "code = 'UNSCHEDULABLE_GPU'", ("findings",))
    alone = [_marts(scaled["alone_db"][c], "code = 'UNSCHEDULABLE_GPU'", ("findings",))
             for c in CLUSTERS]
    assert sum(whole["findings"].values()) > 0
    assert _cluster_rows(alone, "findings") == _cluster_rows([whole], "findings")


def test_the_whole_tree_is_the_union_of_its_clusters(scaled):
    whole_db, alone = scaled["whole_db"], scaled["alone_db"]
    # both clusters' pods, each under its own cluster (replay keeps the simulator's uids)
    pods = {c: set(_column(whole_db, "select pod_uid from marts.workload_lifecycle "
                                     f"where cluster = '{c}'")) for c in CLUSTERS}
    for c in CLUSTERS:
        assert pods[c] and pods[c] == scaled["produced"][c]
        assert set(_column(alone[c], "select distinct cluster from marts.workload_lifecycle")) == {c}
    assert not pods["gpu-eu"] & pods["gpu-us"]
    assert set(_column(whole_db, "select distinct cluster from marts.workload_lifecycle")) == \
        set(CLUSTERS)
    # every mart of the whole tree = the rows of each cluster's own run, put together
    whole = _marts(whole_db)
    alone_marts = [_marts(alone[c]) for c in CLUSTERS]
    for m in MARTS:
        assert _cluster_rows(alone_marts, m) == _cluster_rows([whole], m), m
    # so per-cluster totals add up to the whole, day by day
    totals = "select day, sum(billed_amount) from marts.resource_day group by day"
    per_cluster = [dict(_rows(alone[c], totals)) for c in CLUSTERS]
    assert all(set(t) == {DAY1, DAY2} and all(v > 0 for v in t.values()) for t in per_cluster)
    assert dict(_rows(whole_db, totals)) == {d: sum(t[d] for t in per_cluster)
                                             for d in (DAY1, DAY2)}


def test_duckdb_reads_the_partitions_by_glob(scaled):
    """Hive partitioning turns the `cluster=`/`hour=` folders into columns (exploration;
    `recon run` itself walks the folder and reads `cluster=` from the path)."""
    bucket = scaled["bucket"]
    with duckdb.connect() as con:  # not the module's default connection other tests share
        got = con.sql(
            f"select cluster, hour, count(*) from read_json('{bucket}/k8s/*/*/*.jsonl', "
            "format = 'newline_delimited', hive_partitioning = true, hive_types_autocast = false, "
            "columns = {type: 'VARCHAR'}) group by all order by all").fetchall()
    want = sorted((c, h, sum(len(p.read_bytes().splitlines())
                             for p in bucket.glob(f"k8s/cluster={c}/hour={h}/*.jsonl")))
                  for c in CLUSTERS for h in ("2026-06-01T23", "2026-06-02T23"))
    assert got == want and all(n > 0 for *_, n in got)


def _rows(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _column(db: Path, sql: str) -> list:
    return [r[0] for r in _rows(db, sql)]
