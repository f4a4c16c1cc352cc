"""What landing refuses of a record that parses, on every path a record can take (DuckDB's JSON
Lines path, its List path, the Python reader): a lone surrogate, a damaged first line taking the
file with it, an implausible timestamp, an oversized record. Each is quarantined alone, with
its file, position and reason; the file's other records land."""

from __future__ import annotations

import json
import re
from datetime import date

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ingest import cond
from test_ingest import pod as k8s_pod

from recon.config import Landing, load_config
from recon.db import connect
from recon.ingest import guards, jsonl, lists
from recon.ingest.land import load_folder


def pod(uid, rv, labels=None, **kw):
    p = k8s_pod(uid, rv, **kw)
    if labels:
        p["metadata"]["labels"] = labels
    return p


def job(i, **kw):
    return {"id": f"j{i}", "status": "COMPLETED", "endpointId": "ep", "workerId": "w",
            "delayTime": 10, "executionTime": 1000, "submittedAt": "2026-06-01T10:00:00Z",
            "completedAt": "2026-06-01T10:00:02Z", **kw}


def watch(uid, rv="1", **kw):
    return {"type": "ADDED", "object": pod(uid, rv, **kw)}


def lines(*docs) -> bytes:
    return b"".join((d if isinstance(d, bytes) else json.dumps(d).encode()) + b"\n" for d in docs)


def land(folder, limits=None):
    """Land `folder` in a fresh warehouse: {file name: (records_in, loaded, quarantined,
    skipped)}, {(file name, locator): reason} of raw.quarantine, the connection."""
    con = connect(None)
    load_folder(con, folder, limits=limits)
    files = {f.rsplit("/", 1)[1]: tuple(r) for f, *r in con.execute(
        "select source_file, records_in, records_loaded, records_quarantined, records_skipped "
        "from raw.files").fetchall()}
    bad = {(f.rsplit("/", 1)[1], loc): reason for f, loc, reason in con.execute(
        "select source_file, locator, reason from raw.quarantine").fetchall()}
    for name, (n_in, n_loaded, n_quar, n_skip) in files.items():
        assert n_in == n_loaded + n_quar + n_skip, name
    return files, bad, con


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    return d


@pytest.fixture
def list_path(monkeypatch):
    """Kubernetes Lists of any size take DuckDB's List path."""
    monkeypatch.setattr(lists, "LIST_MIN_BYTES", 0)


SURROGATE = b"vision\\ud83d"  # as JSON.stringify writes half an emoji


def _with(doc: dict, marker: str) -> bytes:
    """`doc` as JSON with the string `marker` replaced by a lone surrogate escape."""
    return json.dumps(doc).replace(marker, SURROGATE.decode()).encode()


def test_a_lone_surrogate_quarantines_its_record_alone_on_every_path(folder, list_path):
    good_pair = json.dumps(watch("pair", labels={"team": "x"})).replace('"x"', '"\\ud83d\\ude00"')
    (folder / "watch.jsonl").write_bytes(lines(  # DuckDB's JSON Lines path
        watch("w1"), _with(watch("w2", labels={"team": "MARK"}), "MARK"),
        good_pair.encode(), watch("w3")))
    (folder / "jobs.jsonl").write_bytes(lines(job(1), _with(job(2, status="MARK"), "MARK"),
                                              job(3)))
    (folder / "inventory.jsonl").write_bytes(lines(  # JSON Lines the Python reader takes
        {"pods": [{"id": "p1", "name": "a"}]}, _with({"pods": [{"id": "p2", "name": "MARK"}]},
                                                     "MARK")))
    items = [pod("l1", "1"), pod("l2", "1", labels={"team": "MARK"}), pod("l3", "1")]
    list_doc = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}
    (folder / "list.json").write_bytes(_with(list_doc, "MARK"))  # DuckDB's List path
    (folder / "small.json").write_bytes(_with(  # a whole document read in Python
        {"records": [{"podId": "p", "startTime": "2026-06-01T10:00:00Z",
                      "endTime": "2026-06-01T11:00:00Z", "totalAmount": 1, "note": n}
                     for n in ("a", "MARK\\ude00", "c")], "metadata": {}}, "MARK\\\\ude00"))
    # kubectl --watch -o json, pretty-printed documents one after another; a key holds it
    (folder / "kubectl.json").write_bytes(b"\n".join(
        json.dumps(d, indent=2).encode() for d in (
            watch("k1"), {"type": "ADDED", "object": {**pod("k2", "1"), "MARK": 1}},
            watch("k3"))).replace(b"MARK", SURROGATE))
    files, bad, con = land(folder)
    doc2 = json.dumps(watch("k1"), indent=2).count("\n") + 2  # where kubectl's second starts
    assert files["watch.jsonl"] == (4, 3, 1, 0)
    assert files["jobs.jsonl"] == (3, 2, 1, 0)
    assert files["inventory.jsonl"] == (2, 1, 1, 0)
    assert files["list.json"] == (3, 2, 1, 0)
    assert files["small.json"] == (3, 2, 1, 0)
    assert files["kubectl.json"] == (3, 2, 1, 0)
    where = {("watch.jsonl", "line 2"), ("jobs.jsonl", "line 2"), ("inventory.jsonl", "line 2"),
             ("list.json", "items[1]"), ("small.json", "records[1]"),
             ("kubectl.json", f"document 2 (line {doc2})")}
    assert set(bad) == where, bad
    for key in where:
        assert "lone UTF-16 surrogate" in bad[key] and "\\ud83d" in bad[key], (key, bad[key])
    # the record is kept as written, with its escape
    assert con.execute("select count(*) from raw.quarantine where record like '%\\ud83d%'"
                       ).fetchone()[0] == len(where)
    # a whole pair is a character, and lands
    assert con.execute("select doc ->> '$.metadata.labels.team' from raw.k8s_objects "
                       "where uid = 'pair'").fetchone()[0] == "\U0001f600"


@pytest.mark.parametrize("path", ["duckdb", "python"])
@pytest.mark.parametrize("damage", [b"{", b'{"type": "ADDED", "object": {"kind": "Po', b"]"])
def test_a_damaged_first_line_is_quarantined_alone(folder, monkeypatch, path, damage):
    if path == "python":
        monkeypatch.setattr(jsonl, "FAST_MIN_BYTES", 1 << 40)
    (folder / "watch.jsonl").write_bytes(lines(damage, *[watch(f"w{i}", str(i))
                                                         for i in range(5)]))
    (folder / "jobs.jsonl").write_bytes(lines(damage[:1], *[job(i) for i in range(4)]))
    files, bad, _ = land(folder)
    assert files["watch.jsonl"] == (6, 5, 1, 0)
    assert files["jobs.jsonl"] == (5, 4, 1, 0)
    assert set(bad) == {("watch.jsonl", "line 1"), ("jobs.jsonl", "line 1")}
    assert all(r.startswith("invalid JSON") for r in bad.values()), bad


def test_a_broken_document_of_kubectls_output_is_quarantined_alone(folder):
    docs = [json.dumps(watch(f"k{i}", str(i)), indent=2) for i in range(4)]
    docs[1] = docs[1][:len(docs[1]) // 2]  # cut short: the next document follows
    (folder / "kubectl.json").write_text("\n".join(docs) + "\n")
    files, bad, _ = land(folder)
    assert files["kubectl.json"] == (4, 3, 1, 0)
    [(key, reason)] = bad.items()
    first = docs[0].count("\n") + 2
    assert key == ("kubectl.json", f"document 2 (line {first})")
    assert f"invalid JSON in document 2 (lines {first}-" in reason and "read on at line" in reason


BAD_TIMES = ["0001-01-01T00:00:00Z", "-2026-06-01T00:00:00Z", "9999-12-31T23:59:59Z",
             "1999-12-31T23:59:59Z", "2100-01-01T00:00:00Z", "infinity", "0044-03-15 (BC)",
             "294247-01-01", " 0001-1-1 00:00:00", "2026-06-01 (BC)", "\t-Infinity", "EPOCH"]


@pytest.mark.parametrize("when", BAD_TIMES)
def test_an_implausible_timestamp_is_quarantined_with_its_field_and_the_range(
        folder, list_path, when):
    sched = [cond("PodScheduled", "True", when)]
    (folder / "watch.jsonl").write_bytes(lines(watch("w1"), watch("w2", conditions=sched),
                                               {**watch("w3"), "seenAt": when}, watch("w4")))
    (folder / "jobs.jsonl").write_bytes(lines(job(1), job(2, completedAt=when), job(3)))
    (folder / "list.json").write_text(json.dumps(
        {"kind": "PodList", "apiVersion": "v1", "metadata": {},
         "items": [pod("l1", "1"), pod("l2", "1", created=when)]}))
    (folder / "bill.json").write_text(json.dumps(
        {"records": [{"podId": "p", "startTime": s, "endTime": "2026-06-01T11:00:00Z",
                      "totalAmount": 1} for s in ("2026-06-01T10:00:00Z", when)],
         "metadata": {}}))
    files, bad, con = land(folder)
    assert files["watch.jsonl"] == (4, 2, 2, 0)
    assert files["jobs.jsonl"] == (3, 2, 1, 0)
    assert files["list.json"] == (2, 1, 1, 0)
    assert files["bill.json"] == (2, 1, 1, 0)
    rng = "is outside the accepted range 2000-01-01 .. 2100-01-01"
    want = {("watch.jsonl", "line 2"): "status.conditions[0].lastTransitionTime",
            ("watch.jsonl", "line 3"): "seen_at", ("jobs.jsonl", "line 2"): "completedAt",
            ("list.json", "items[1]"): "metadata.creationTimestamp",
            ("bill.json", "records[1]"): "startTime"}
    assert set(bad) == set(want)
    for key, field in want.items():
        assert bad[key].startswith(f"timestamp {field} = {when!r} {rng}"), bad[key]
    assert con.execute("select count(*) from raw.k8s_objects").fetchone()[0] == 3


def test_the_range_is_configured_and_its_bounds_are_dates(folder, tmp_path):
    (folder / "jobs.jsonl").write_bytes(lines(*[job(i, completedAt=c) for i, c in enumerate(
        ["2026-05-31T23:59:59Z", "2026-06-01T00:00:00Z", "2026-06-30T23:59:59.999Z",
         "2026-07-01T00:00:00Z", "2026-6-15 10:00:00"])]))
    cfg = tmp_path / "recon.toml"
    cfg.write_text("[landing]\ntimestamps_from = 2026-06-01\ntimestamps_before = 2026-07-01\n")
    files, bad, _ = land(folder, load_config(cfg).landing)
    assert files["jobs.jsonl"] == (5, 3, 2, 0)
    assert set(bad) == {("jobs.jsonl", "line 1"), ("jobs.jsonl", "line 4")}
    assert "2026-06-01 .. 2026-07-01" in bad[("jobs.jsonl", "line 1")]
    # the defaults accept every one of them
    files, bad, _ = land(folder)
    assert files["jobs.jsonl"] == (5, 5, 0, 0) and not bad


def test_a_bad_landing_section_is_named(tmp_path):
    p = tmp_path / "recon.toml"
    p.write_text("[landing]\ntimestamps_from = 2100-01-01\nmax_record_bytes = 10\n"
                 "max_record_size = 1\n")
    with pytest.raises(ValueError) as e:
        load_config(p)
    said = str(e.value)
    assert "[landing] max_record_bytes: should be greater than or equal to 1024 (got 10)" in said
    assert "[landing] max_record_size: unknown key, did you mean max_record_bytes?" in said
    p.write_text("[landing]\ntimestamps_from = 2100-01-01\n")
    with pytest.raises(ValueError, match=r"timestamps_from \(2100-01-01\) must come before "
                                         r"timestamps_before \(2100-01-01\)"):
        load_config(p)


years = st.integers(-300_000, 300_000)


@settings(max_examples=400, deadline=None)
@given(years, st.integers(1, 12), st.integers(1, 28), st.sampled_from(["T10:00:00Z", "", " 1:2"]),
       st.dates(date(1, 1, 2), date(9999, 1, 1)), st.integers(1, 200_000))
def test_the_sql_that_sends_lines_to_python_finds_every_implausible_timestamp(
        year, month, day, rest, lo, span):
    """The DuckDB paths leave a line to the Python reader when guards.suspect_re matches it
    (RE2 in DuckDB, re in Python): it must match every line the exact check refuses."""
    hi = date.fromordinal(min(date.max.toordinal(), lo.toordinal() + span))
    limits = Landing(timestamps_from=lo, timestamps_before=hi)
    value = f"{'-' if year < 0 else ''}{abs(year):04d}-{month:02d}-{day:02d}{rest}"
    line = json.dumps({"completedAt": value})
    refused = guards._out_of_range(value, limits)
    assert refused == (not (lo <= date(year, month, day) < hi) if 0 < year < 10_000 else True)
    if refused:
        assert re.search(guards.suspect_re(limits), line), (value, lo, hi)
        # a connection of its own: the module's default one, left with an unfinished result,
        # fails the next test that reads through it
        with duckdb.connect() as con:
            assert con.execute(f"select {guards.python_first_sql('false', limits)} "
                               "from (select ? as line)", [line]).fetchone()[0], (value, lo, hi)


@pytest.mark.parametrize("path", ["duckdb", "python"])
def test_an_oversized_record_is_quarantined_with_its_size_and_position(
        folder, tmp_path, list_path, monkeypatch, path):
    if path == "python":
        monkeypatch.setattr(jsonl, "FAST_MIN_BYTES", 1 << 40)
        monkeypatch.setattr(lists, "LIST_MIN_BYTES", 1 << 40)
    big = "x" * 5000
    (folder / "watch.jsonl").write_bytes(lines(watch("w1"), watch("w2", labels={"pad": big}),
                                               watch("w3")))
    (folder / "jobs.jsonl").write_bytes(lines(job(1, note=big), job(2)))
    (folder / "list.json").write_text(json.dumps(
        {"kind": "PodList", "apiVersion": "v1", "metadata": {},
         "items": [pod("l1", "1"), pod("l2", "1", labels={"pad": big})]}))
    (folder / "bill.json").write_text(json.dumps(
        {"records": [{"podId": "p", "startTime": "2026-06-01T10:00:00Z", "note": n,
                      "endTime": "2026-06-01T11:00:00Z", "totalAmount": 1} for n in ("", big)],
         "metadata": {}}))
    files, bad, _ = land(folder, Landing(max_record_bytes=4096))
    assert files["watch.jsonl"] == (3, 2, 1, 0)
    assert files["jobs.jsonl"] == (2, 1, 1, 0)
    assert files["list.json"] == (2, 1, 1, 0)
    assert files["bill.json"] == (2, 1, 1, 0)
    assert set(bad) == {("watch.jsonl", "line 2"), ("jobs.jsonl", "line 1"),
                        ("list.json", "items[1]"), ("bill.json", "records[1]")}
    for reason in bad.values():
        assert re.fullmatch(r"record of [0-9,]+ bytes exceeds the limit of 4,096 bytes "
                            r"\(recon.toml \[landing\] max_record_bytes\)", reason), reason
    n = int(bad[("jobs.jsonl", "line 1")].split()[2].replace(",", ""))
    assert n == len(lines(job(1, note=big))) - 1  # the line's bytes, without its newline


def test_the_default_limit_stops_a_record_far_below_what_ends_a_run(folder):
    """A record of ~48 MB made the run's memory limit run out in int_k8s__workloads; the
    default limit quarantines one of 9 MiB before anything reads it."""
    pad = "x" * (9 << 20)
    (folder / "watch.jsonl").write_bytes(lines(watch("w1"), watch("w2", labels={"pad": pad})))
    files, bad, _ = land(folder)
    assert files["watch.jsonl"] == (2, 1, 1, 0)
    assert "exceeds the limit of 8,388,608 bytes" in bad[("watch.jsonl", "line 2")]
