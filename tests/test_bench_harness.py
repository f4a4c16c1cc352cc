"""The performance work must not change what lands: the DuckDB JSON Lines path (`land_jsonl`)
against the Python reader on mutated lines, and the benchmark harness's own helpers."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest

from recon.db import connect
from recon.ingest import jsonl as jsonl_mod
from recon.ingest import land as load_mod
from recon.ingest import lists as lists_mod
from recon.ingest.land import load_folder

ROOT = Path(__file__).resolve().parent.parent


def _pod(uid="u1", rv="1"):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p-{uid}", "namespace": "ml", "uid": uid, "resourceVersion": rv,
                         "creationTimestamp": "2026-06-01T10:00:00Z", "labels": {"team": "a/b"}},
            "spec": {"containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Running", "ratio": 0.25}}


def _watch(rng, i):
    return {"type": rng.choice(["ADDED", "MODIFIED", "DELETED"]), "object": _pod(f"u{i}", str(i)),
            "cluster": "c1", "seenAt": "2026-06-01T10:00:00Z"}


def _job(rng, i):
    return {"id": f"j{i}", "status": "COMPLETED", "delayTime": rng.randint(0, 9000),
            "executionTime": rng.randint(0, 90000), "workerId": "w1", "endpointId": "ep1",
            "submittedAt": "2026-06-01T10:00:00.000Z", "completedAt": "2026-06-01T10:01:00.000Z"}


def _workers(rng, i):
    return {"endpointVersion": 1, "workers": [{"id": f"w{i}-{k}", "status": "RUNNING"}
                                              for k in range(rng.randint(0, 3))],
            "x_recon": {"endpoint": "/v2/serverless/{id}/workers", "endpointId": "ep1",
                        "pulledAt": "2026-06-01T10:00:00Z"}}


ODD_VALUES = [None, "", 0, 1, -1, 2.5, 1e13, True, False, "x", "a\"b\\c", "\u00e9\u2028", [], {},
              [1, 2], {"k": "v"}, "BOOKMARK", "ERROR", "ADDED", "/v2/serverless/x/health",
              "recon.GroundTruth", "Pod", 10**20]
PATHS = {
    "watch": [("type",), ("object",), ("cluster",), ("seenAt",), ("kind",), ("x_recon",),
              ("object", "kind"), ("object", "metadata"), ("object", "metadata", "uid"),
              ("object", "metadata", "resourceVersion"), ("items",), ("id",), ("executionTime",)],
    "job": [("id",), ("endpointId",), ("completedAt",), ("delayTime",), ("executionTime",),
            ("type",), ("object",), ("kind",), ("workers",), ("records",), ("metadata",),
            ("x_recon",), ("pods",)],
    "workers": [("workers",), ("x_recon",), ("x_recon", "endpoint"), ("x_recon", "endpointId"),
                ("x_recon", "pulledAt"), ("kind",), ("type",), ("object",), ("items",),
                ("records",), ("workers", 0), ("workers", 0, "id")],
}
TEXT_MUTATIONS = [
    lambda s: s[: len(s) // 2],                        # cut
    lambda s: s.replace(",", ", ]", 1),                # broken
    lambda s: s[:-1] + ",}",                           # trailing comma (DuckDB accepts)
    lambda s: s.replace("0.25", "NaN"),                # NaN (DuckDB accepts)
    lambda s: s.replace("0.25", "Infinity"),
    lambda s: s.replace("0.25", "1e999"),
    lambda s: s.replace("0.25", "-inf"),
    lambda s: s.replace(":", " : "),                   # whitespace
    lambda s: "   ",                                   # blank
    lambda s: "",                                      # empty
    lambda s: "\ufeff" + s,                            # BOM
    lambda s: s + "\r",                                # CRLF
    lambda s: "[" * 1100 + "]" * 1100,                 # deeper than orjson's limit
    lambda s: s.replace('"c1"', '"c\\u0031"'),         # escapes
    lambda s: s.replace('"ep1"', '"\\ud800"'),         # lone surrogate
    lambda s: "[1, 2]",
    lambda s: "42",
    lambda s: '"just a string"',
]


def _mutate(rng, doc, kind):
    doc = json.loads(json.dumps(doc))
    for _ in range(rng.randint(1, 2)):
        path = rng.choice(PATHS[kind])
        cur = doc
        for k in path[:-1]:
            if (isinstance(cur, dict) and isinstance(cur.get(k), (dict, list))) or (isinstance(cur, list) and isinstance(k, int) and len(cur) > k):
                cur = cur[k]
            else:
                cur = None
                break
        if isinstance(cur, dict):
            if rng.random() < 0.25:
                cur.pop(path[-1], None)
            else:
                cur[path[-1]] = rng.choice(ODD_VALUES)
        elif isinstance(cur, list) and isinstance(path[-1], int) and cur:
            cur[0] = rng.choice(ODD_VALUES)
    return doc


def _lines(kind, seed, n=400):
    rng = random.Random(seed)
    make = {"watch": _watch, "job": _job, "workers": _workers}[kind]
    out = [json.dumps(make(rng, 0))]  # the first line decides the fast path's mode
    big = make(rng, 0)
    big["note"] = "x" * 9000  # longer than the test's chunk: the buffer grows
    out.append(json.dumps(big))
    for i in range(1, n):
        r = rng.random()
        if r < 0.45:
            out.append(json.dumps(make(rng, i), separators=(",", ":")))
        elif r < 0.75:
            out.append(json.dumps(_mutate(rng, make(rng, i), kind)))
        elif r < 0.8:
            other = rng.choice([_watch, _job, _workers])
            out.append(json.dumps(other(rng, i)))
        elif r < 0.83:
            out.append(json.dumps({"type": "BOOKMARK", "object": {"kind": "Pod",
                                                                   "metadata": {"resourceVersion": "9"}}}))
        else:
            out.append(rng.choice(TEXT_MUTATIONS)(json.dumps(make(rng, i))))
    return out


def _lists(folder, seed):
    """Kubernetes List documents: items mutated, and whole documents that are not plain Lists."""
    rng = random.Random(seed)
    items = [_pod(f"l{i}", str(i)) for i in range(60)]
    for i in range(0, 60, 3):
        items[i] = _mutate(rng, {"object": items[i]}, "watch").get("object") \
            if rng.random() < 0.5 else rng.choice(ODD_VALUES)
    lst = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
           "items": items}
    variants = {
        "list": lst,
        "list-no-apiversion": {k: v for k, v in lst.items() if k != "apiVersion"},
        "list-null-apiversion": {**lst, "apiVersion": None},
        "list-watch-keys": {**lst, "type": None, "object": None},
        "list-type-only": {**lst, "type": "ADDED"},
        "list-ground-truth": {**lst, "kind": "recon.GroundTruth"},
        "list-health": {**lst, "x_recon": {"endpoint": "/v2/serverless/x/health"}},
        "list-xrecon": {**lst, "x_recon": {"endpoint": "/api/v1/events"}},
        "list-balance": {**lst, "data": {"myself": {"clientBalance": 1}}},
        "list-items-not-list": {**lst, "items": {"a": 1}},
    }
    for name, doc in variants.items():
        (folder / f"{name}.json").write_text(json.dumps(doc, indent=1))
    text = json.dumps(lst, indent=2)
    (folder / "list-nan.json").write_text(text.replace('"resourceVersion": ""', '"x": NaN', 1))
    (folder / "list-trailing-comma.json").write_text(text.replace("\n  ]", ",\n  ]", 1))
    (folder / "list-two-docs.json").write_text(text + "\n" + text)
    (folder / "list-garbage.json").write_text(text + " x")


def _snapshot(con):
    out = {}
    for t in ("k8s_objects", "runpod_billing", "runpod_inventory", "serverless_jobs", "focus_rows"):
        cols = [r[0] for r in con.execute(
            f"select column_name from duckdb_columns() where schema_name = 'raw' "
            f"and table_name = '{t}' order by column_index").fetchall()]
        sel = ", ".join("json(doc)::varchar" if c == "doc" else c for c in cols)
        out[t] = sorted(map(repr, con.execute(f"select {sel} from raw.{t}").fetchall()))
    out["quarantine"] = sorted(map(repr, con.execute(
        "select source_file, record_no, locator, reason, record from raw.quarantine").fetchall()))
    out["files"] = sorted(map(repr, con.execute(
        "select * exclude (sha256) from raw.files").fetchall()))
    return out


def _land(folder, db, fast: bool, monkeypatch):
    with monkeypatch.context() as m:
        if not fast:
            m.setattr("recon.ingest.land.land_jsonl", lambda con, p, d, limits=None: None)
            m.setattr("recon.ingest.land.land_list", lambda con, p, d, prepared=None, limits=None: None)
        else:  # small chunks: lines and files cross chunk boundaries; every List through DuckDB
            m.setattr(jsonl_mod, "FAST_CHUNK", 4096)
            m.setattr(jsonl_mod, "MIN_BATCH_ROWS", 2)  # chunks of several Arrow batches
            m.setattr(jsonl_mod, "BUFFERS", 2)  # read ahead (the rest of the suite reads 1)
            m.setattr(jsonl_mod, "ROW_GROUP", 7)  # chunks cut after whole "row groups" of lines
            m.setattr(lists_mod, "LIST_MIN_BYTES", 0)
        con = connect(db)
        try:
            load_folder(con, folder)
            return _snapshot(con)
        finally:
            con.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fast_jsonl_landing_equals_the_python_reader(tmp_path, monkeypatch, seed):
    folder = tmp_path / "in" / "cluster=from-path"
    folder.mkdir(parents=True)
    for kind in ("watch", "job", "workers"):
        lines = _lines(kind, seed * 10 + len(kind))
        # one file ends with a newline, one is cut mid-line (a file still being written)
        (folder / f"{kind}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (folder / f"{kind}-cut.jsonl").write_text("\n".join(lines)[:-7], encoding="utf-8")
        (folder / f"{kind}-crlf.jsonl").write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    bad = (folder / "watch.jsonl").read_bytes().replace(b'"c1"', b'"c\xff1"', 3)  # not UTF-8
    (folder / "watch-latin1.jsonl").write_bytes(bad)
    late = (folder / "watch.jsonl").read_bytes()
    late = late[:len(late) // 2] + late[len(late) // 2:].replace(b'"c1"', b'"c\xff1"', 1)
    (folder / "watch-latin1-late.jsonl").write_bytes(late)
    _lists(folder, seed)
    slow = _land(tmp_path / "in", tmp_path / "slow.duckdb", False, monkeypatch)
    fast = _land(tmp_path / "in", tmp_path / "fast.duckdb", True, monkeypatch)
    assert sum(len(v) for v in slow.values()) > 1000
    for table in slow:
        assert fast[table] == slow[table], table


def test_a_file_failing_after_chunks_have_landed_is_quarantined_like_the_python_reader(
        tmp_path, monkeypatch):
    """A gzip file cut short fails after some of its chunks have landed: its rows are removed
    and the file is quarantined with the reason, as the Python reader does; the files after it
    land as usual."""
    import gzip

    folder = tmp_path / "in"
    folder.mkdir()
    rng = random.Random(9)
    text = "".join(json.dumps(_watch(rng, i)) + "\n" for i in range(3000)).encode()
    packed = gzip.compress(text, compresslevel=1)
    (folder / "a-cut.jsonl.gz").write_bytes(packed[: len(packed) * 3 // 4])
    (folder / "b.jsonl.gz").write_bytes(packed)
    (folder / "c.jsonl").write_bytes(text[:50_000] + b"{not json\n" + text[50_000:])
    slow = _land(folder, tmp_path / "slow.duckdb", False, monkeypatch)
    fast = _land(folder, tmp_path / "fast.duckdb", True, monkeypatch)
    assert fast == slow
    assert any("a-cut.jsonl.gz" in q and "could not be read" in q for q in fast["quarantine"])
    assert len(fast["k8s_objects"]) == 2 * 3000  # b and c (whose bad line is quarantined)


@pytest.mark.parametrize("buffers", [1, 2])
def test_fast_path_records_each_files_sha256_of_its_bytes(tmp_path, monkeypatch, buffers):
    """The fast path hashes each chunk in a thread while DuckDB parses it, carrying partial
    lines between chunks: the digest kept in raw.files is still that of the file's bytes, in
    order (a plain file over many chunks, with a cut last line; a gzip file: its compressed
    bytes)."""
    import gzip
    import hashlib

    folder = tmp_path / "in"
    folder.mkdir()
    rng = random.Random(11)
    text = "".join(json.dumps(_watch(rng, i)) + "\n" for i in range(2000)).encode()
    (folder / "w.jsonl").write_bytes(text[:-9])
    (folder / "g.jsonl.gz").write_bytes(gzip.compress(text, compresslevel=1))
    monkeypatch.setattr(jsonl_mod, "FAST_CHUNK", 8192)
    monkeypatch.setattr(jsonl_mod, "BUFFERS", buffers)
    con = connect(tmp_path / "db.duckdb")
    results = load_folder(con, folder)
    assert all(r.loaded > 1000 for r in results)  # both landed, most lines through DuckDB
    got = dict(con.execute("select source_file, sha256 from raw.files").fetchall())
    assert got == {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
                   for p in (folder / "w.jsonl", folder / "g.jsonl.gz")}
    con.close()


def test_fast_path_is_taken_and_unchanged_files_are_not_reread(tmp_path, monkeypatch):
    folder = tmp_path / "in"
    folder.mkdir()
    rng = random.Random(5)
    (folder / "w.jsonl").write_text("".join(json.dumps(_watch(rng, i)) + "\n" for i in range(50)))
    calls = []
    real = load_mod.land_jsonl

    def spy(con, p, d, limits=None):
        r = real(con, p, d, limits)
        calls.append(r is not None)
        return r

    monkeypatch.setattr("recon.ingest.land.land_jsonl", spy)
    con = connect(tmp_path / "db.duckdb")
    (r,) = load_folder(con, folder)
    assert calls == [True] and (r.loaded, r.records_in) == (50, 50)
    hashed = []
    monkeypatch.setattr("recon.ingest.land.sha256_of", lambda p: hashed.append(p) or "x")
    (r,) = load_folder(con, folder)
    assert r.unchanged and hashed == [] and calls == [True]  # same size and mtime: no read
    con.close()


def _harness():
    spec = importlib.util.spec_from_file_location("bench_harness", ROOT / "bench" / "harness.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_harness_splits_a_simulation_into_daily_landing_folders(tmp_path):
    from recon.simulate import simulate

    h = _harness()
    simulate(tmp_path / "sim", seed=3, days=3, nodes=4, endpoints=2)
    (tmp_path / "sim" / "expected" / "ground_truth.json").unlink()
    days = h.split_days(tmp_path / "sim", tmp_path / "daily")
    assert [d.isoformat() for d in days][:3] == ["2026-06-01", "2026-06-02", "2026-06-03"]
    # every record of the window lands once, whichever way the files are cut
    whole = connect(tmp_path / "whole.duckdb")
    daily = connect(tmp_path / "daily.duckdb")
    a = [r.records_in for r in load_folder(whole, tmp_path / "sim")]
    b = [r.records_in for r in load_folder(daily, tmp_path / "daily")]
    assert sum(a) == sum(b) > 0
    assert whole.execute("select count(*) from raw.quarantine").fetchone()[0] == 0
    assert daily.execute("select count(*) from raw.quarantine").fetchone()[0] == 0


def test_harness_cuts_every_jsonl_file_into_parts_of_whole_lines(tmp_path):
    from recon.simulate import simulate

    h = _harness()
    simulate(tmp_path / "sim", seed=3, days=1, nodes=4, endpoints=2)
    out = h.split_files(tmp_path / "sim", tmp_path / "cut", 4) / "input"
    for p in (tmp_path / "sim").rglob("*"):
        if not p.is_file():
            continue
        rel = p.relative_to(tmp_path / "sim")
        if p.suffix != ".jsonl":
            assert (out / rel).read_bytes() == p.read_bytes()
            continue
        parts = sorted((out / rel).parent.glob(f"{p.stem}-p*.jsonl"))
        lines = p.read_bytes().splitlines(keepends=True)
        assert 1 <= len(parts) <= min(4, len(lines))
        assert all(q.read_bytes().endswith(b"\n") for q in parts)  # whole lines only
        assert b"".join(q.read_bytes() for q in parts) == p.read_bytes()
        if len(lines) >= 40:
            assert len(parts) == 4
    # the cut folder lands the same records as the whole one
    a = sum(r.records_in for r in load_folder(connect(tmp_path / "a.duckdb"), tmp_path / "sim"))
    b = sum(r.records_in for r in load_folder(connect(tmp_path / "b.duckdb"), out))
    assert a == b > 0
    assert h.split_files(tmp_path / "sim", tmp_path / "cut", 4) == tmp_path / "cut"  # cached


def test_harness_child_reports_every_stage(tmp_path):
    from recon.simulate import simulate

    h = _harness()
    simulate(tmp_path / "sim", seed=3, days=1, nodes=4, endpoints=2)
    (tmp_path / "sim" / "expected" / "ground_truth.json").unlink()
    r = h.child_run({"input": str(tmp_path / "sim"), "db": str(tmp_path / "b.duckdb"),
                     "day_from": "2026-06-01", "day_to": "2026-06-01", "export_day": "2026-06-01",
                     "validation": False, "exports": False})
    for k in ("landing", "staging", "intermediate", "marts", "findings", "pipeline_run"):
        assert r["stages"][k] is not None and r["stages"][k] >= 0, k
    assert r["records"]["in"] == r["records"]["loaded"] + r["records"]["skipped"] > 0
    f = h.child_floor({"input": str(tmp_path / "sim")})
    assert f["scan"] > 0 and f["extract"] > 0
    # the issue's yardstick, the pod watch files alone: their bytes, counted and extracted
    pods = sorted((tmp_path / "sim").rglob("watch-pods*.jsonl"))
    assert pods and f["ref_gb"] == sum(p.stat().st_size for p in pods) / 1e9
    assert f["ref_count"] > 0 and f["ref_extract"] > 0


def test_host_is_compared_with_the_issues_machine_per_gb_of_pods():
    h = _harness()
    floor = {"ref_gb": 0.5, "ref_count": {"median": 0.3}, "ref_extract": {"median": 0.6}}
    got = h.host_vs_issue(floor)
    assert got["pods count s/GB (issue: 1.2)"] == pytest.approx(0.6)
    assert got["pods extract s/GB (issue: 0.8)"] == pytest.approx(1.2)
    assert got["host / issue's machine: count"] == pytest.approx(0.5)  # faster
    assert got["host / issue's machine: extract"] == pytest.approx(1.5)  # slower
    assert h.host_vs_issue({"ref_gb": 0.5, "ref_count": {"median": 0.3}}) == {}  # older result
    res = {"run": {"stages": {"staging": {"median": 2.0}}},
           "floor": {**floor, "extract": {"median": 1.0}}}
    d = h.derived(res)
    assert d["reconciliation / floor_extract"] == pytest.approx(2.0)
    assert d["host / issue's machine: extract"] == pytest.approx(1.5)


def test_harness_settles_writeback_and_warms_input_before_a_timed_run(tmp_path, monkeypatch):
    """A timed run starts with nothing left dirty (the copied warehouse written back) and its
    input read once; the child is spawned only after both (the floor's child needs neither)."""
    h = _harness()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text("{}\n")
    done = []

    class P:
        returncode, stderr = 0, ""
        stdout = 'BENCH-RESULT {"stages": {}}\n'

    monkeypatch.setattr(h.os, "sync", lambda: done.append("sync"))
    monkeypatch.setattr(h, "warm", lambda folder, only=None: done.append(("warm", folder, only)))
    monkeypatch.setattr(h.subprocess, "run", lambda *a, **k: done.append("child") or P())
    r = h.spawn({"mode": "run", "input": str(tmp_path / "in")})
    assert done == ["sync", ("warm", tmp_path / "in", None), "child"]
    assert r["process_wall"] >= 0
    done.clear()
    h.spawn({"mode": "run", "input": str(tmp_path / "in"), "warm": ["x"]})
    assert done == ["sync", ("warm", tmp_path / "in", ["x"]), "child"]
    done.clear()
    h.spawn({"mode": "floor", "input": str(tmp_path / "in")})
    assert done == ["child"]


def test_warm_reads_the_given_files_only(tmp_path, monkeypatch):
    """A run with history warms its day's new files, not the days its warehouse already holds
    (which it never reads); without a list, every file of the folder."""
    import builtins

    h = _harness()
    (tmp_path / "in" / "d1").mkdir(parents=True)
    for name in ("d1/old.jsonl", "new.jsonl", "other.json"):
        (tmp_path / "in" / name).write_text("{}\n")
    opened = []
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda p, *a, **k: opened.append(Path(p).name)
                        or real_open(p, *a, **k))
    h.warm(tmp_path / "in", [str(tmp_path / "in" / "new.jsonl")])
    assert opened == ["new.jsonl"]
    opened.clear()
    h.warm(tmp_path / "in")
    assert sorted(opened) == ["new.jsonl", "old.jsonl", "other.json"]


def test_harness_copies_the_history_state_and_leaves_the_page_cache_alone(tmp_path, monkeypatch):
    """Each run's warehouse is a byte copy of the state, written back before the run; no page
    of the state is dropped from the page cache (on this VM, memory set free is slower to take
    again than cache to reclaim: the drop slowed the runs with history alone)."""
    import os

    h = _harness()
    src, dst = tmp_path / "state.duckdb", tmp_path / "dn-0.duckdb"
    src.write_bytes(os.urandom(1 << 16))
    calls = []
    monkeypatch.setattr(h.os, "sync", lambda: calls.append("sync"))
    monkeypatch.setattr(h.os, "posix_fadvise", lambda *a: calls.append("fadvise"))
    h.copy_state(src, dst)
    assert dst.read_bytes() == src.read_bytes()
    assert calls == ["sync"]


def test_staging_reads_each_field_like_the_arrow_operators(tmp_path):
    """Staging parses each document once (json_transform to a struct); on odd documents the
    fields must still be what `doc ->> '$.path'` (the per-field form it replaced) returns."""
    from recon.build.run import build
    from recon.build.settings import write_config
    from recon.config import load_config

    rng = random.Random(11)
    con = connect(tmp_path / "s.duckdb")
    pods, jobs = [], []
    for i in range(400):
        p = _pod(f"p{i % 150}", rng.choice(["", str(i), "x"]))
        m = p["metadata"]
        for key, holder in (("namespace", m), ("name", m), ("creationTimestamp", m),
                            ("deletionTimestamp", m), ("deletionGracePeriodSeconds", m),
                            ("labels", m), ("nodeName", p["spec"]), ("phase", p["status"])):
            if rng.random() < 0.3:
                holder[key] = rng.choice([*ODD_VALUES, "2026-06-01T11:00:00Z", "30"])
        if rng.random() < 0.1:
            p["metadata"] = rng.choice(ODD_VALUES)
        pods.append(("f", i, "l", "c", "ADDED", "Pod", f"p{i % 150}",
                     m.get("resourceVersion", "") if isinstance(m, dict) else "", None,
                     json.dumps(p)))
        j = _job(rng, i)
        for key in ("id", "endpointId", "delayTime", "executionTime", "completedAt", "workerId"):
            if rng.random() < 0.2:
                j[key] = rng.choice([*ODD_VALUES, "2026-06-01T10:01:00Z", "12"])
        jobs.append(("f", i, "l", json.dumps(j)))
    con.executemany("insert into raw.k8s_objects (source_file, record_no, locator, cluster, "
                    "event_type, kind, uid, resource_version, seen_at, doc) "
                    "values (?, ?, ?, ?, ?, ?, ?, ?, ?, json(?))",
                    pods)
    con.executemany("insert into raw.serverless_jobs (source_file, record_no, locator, doc) "
                    "values (?, ?, ?, json(?))", jobs)
    write_config(con, load_config(None), None, None)
    build(con)
    bad = con.execute("""
        select count(*) from staging.stg_k8s__pods s join raw.k8s_objects r using (source_file, record_no)
        where s.namespace is distinct from r.doc ->> '$.metadata.namespace'
           or s.pod_name is distinct from r.doc ->> '$.metadata.name'
           or s.node_name is distinct from r.doc ->> '$.spec.nodeName'
           or s.phase is distinct from r.doc ->> '$.status.phase'
           or s.created_at is distinct from try_cast(r.doc ->> '$.metadata.creationTimestamp' as timestamptz)
           or s.deletion_grace_seconds is distinct from
              try_cast(r.doc ->> '$.metadata.deletionGracePeriodSeconds' as bigint)
           -- labels: null and no labels both stage as NULL (every reader does ->> on them)
           or s.labels::varchar is distinct from nullif((r.doc -> '$.metadata.labels')::varchar, 'null')
           """).fetchone()[0]
    assert bad == 0
    kept = con.execute("select count(*) from raw.k8s_objects where try_cast(doc ->> "
                       "'$.metadata.creationTimestamp' as timestamptz) is not null").fetchone()[0]
    assert 0 < con.execute("select count(*) from staging.stg_k8s__pods").fetchone()[0] <= kept
    bad = con.execute("""
        with once as (select * from raw.serverless_jobs qualify count(*) over (
                          partition by doc ->> '$.id', doc ->> '$.endpointId') = 1)
        select count(*) from staging.stg_runpod__jobs s join once r
          on s.job_id = r.doc ->> '$.id' and s.endpoint_id = r.doc ->> '$.endpointId'
        where s.delay_ms is distinct from try_cast(r.doc ->> '$.delayTime' as bigint)
           or s.worker_id is distinct from r.doc ->> '$.workerId'
           or s.completed_at is distinct from try_cast(r.doc ->> '$.completedAt' as timestamptz)""").fetchone()[0]
    assert bad == 0
    con.close()


@pytest.mark.parametrize("buffers", [1, 2])
def test_the_chunk_reader_thread_stops_with_its_consumer_and_reports_errors(tmp_path, monkeypatch,
                                                                            buffers):
    """_chunks reads in a thread (ahead, with two buffers): a consumer that stops early (an
    error while landing) ends the thread and the hashing one, and a read error in the thread
    reaches the consumer."""
    import gzip
    import hashlib
    import threading

    monkeypatch.setattr(jsonl_mod, "FAST_CHUNK", 4096)
    monkeypatch.setattr(jsonl_mod, "BUFFERS", buffers)
    text = "".join(json.dumps({"n": i, "pad": "x" * 50}) + "\n" for i in range(2000)).encode()
    (tmp_path / "a.jsonl").write_bytes(text)
    gen = jsonl_mod._chunks(tmp_path / "a.jsonl", hashlib.sha256())
    first = next(gen)
    assert first.n > 0 and bytes(first.data).count(b"\n") == first.n
    assert any(t.name.startswith("recon-read") for t in threading.enumerate())
    gen.close()
    assert not any(t.name.startswith(("recon-read", "recon-hash"))
                   for t in threading.enumerate())
    # every line once, in order, across chunks; the hash thread got them all, in order
    hasher = hashlib.sha256()
    got = b"".join(bytes(c.data) for c in jsonl_mod._chunks(tmp_path / "a.jsonl", hasher))
    assert got == text and hasher.hexdigest() == hashlib.sha256(text).hexdigest()
    # a chunk of at least ROW_GROUP lines is cut after a whole number of row groups of lines
    # (4096-byte chunks hold ~50 of these lines); the rest starts the next chunk
    monkeypatch.setattr(jsonl_mod, "ROW_GROUP", 16)
    chunks = [(c.n, c.final, bytes(c.data)) for c in jsonl_mod._chunks(tmp_path / "a.jsonl")]
    assert b"".join(c[2] for c in chunks) == text
    assert all(n % 16 == 0 for n, final, _ in chunks if not final) and len(chunks) > 10
    packed = gzip.compress(text)
    (tmp_path / "cut.jsonl.gz").write_bytes(packed[: len(packed) // 2])
    with pytest.raises(EOFError):
        for _ in jsonl_mod._chunks(tmp_path / "cut.jsonl.gz"):
            pass
    assert not any(t.name.startswith("recon-read") for t in threading.enumerate())


def test_line_ends_are_found_across_scan_blocks(monkeypatch):
    """_line_ends scans a chunk a block at a time: newlines on either side of a block's edge,
    at its first and last byte, and none at all, give the offsets a whole scan gives."""
    monkeypatch.setattr(jsonl_mod, "_SCAN_BLOCK", 7)
    rng = random.Random(3)
    for _ in range(300):
        data = bytes(rng.choice(b"ab\n") for _ in range(rng.randrange(0, 60)))
        assert jsonl_mod._line_ends(data).tolist() == [
            i + 1 for i, c in enumerate(data) if c == 10]
    assert jsonl_mod._line_ends(b"\n" * 14).tolist() == list(range(1, 15))
