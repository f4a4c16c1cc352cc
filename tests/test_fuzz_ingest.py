"""Hostile and broken input: the readers never crash, every record is accounted for (loaded,
quarantined with a reason, or skipped with a reason), nothing is silently dropped."""

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recon.db import connect
from recon.ingest.land import load_folder

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=30)
weird_numbers = st.one_of(st.integers(-10**30, 10**30), st.floats(allow_nan=True, allow_infinity=True),
                          st.text(max_size=8), st.none(), st.booleans())
timestamps = st.one_of(st.just("2026-06-01T10:00:00Z"), st.just("2026-06-01 10:00:00"),
                       st.just("2026-06-01T12:00:00+02:00"), st.just("yesterday"), st.just(""),
                       st.just("2026-13-45T99:00:00Z"), names)


@st.composite
def watch_line(draw):
    kind = draw(st.sampled_from(["Pod", "Node", "Event", "Job", None]))
    obj = {"kind": kind, "apiVersion": "v1",
           "metadata": {"name": draw(names), "uid": draw(st.one_of(names, st.none())),
                        "namespace": draw(names), "resourceVersion": draw(names),
                        "creationTimestamp": draw(timestamps),
                        "labels": {draw(names): draw(names)}},
           "spec": {"nodeName": draw(st.one_of(names, st.none())),
                    "containers": draw(st.one_of(st.just([{"name": "c", "resources": {"limits": {
                        "nvidia.com/gpu": draw(st.one_of(names, st.just("1")))}}}]), st.none(),
                        st.just("oops")))},
           "status": {"conditions": draw(st.one_of(st.none(), st.just([{"type": "Ready",
                      "status": "True", "lastTransitionTime": draw(timestamps)}])))}}
    return {"type": draw(st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR", "X"])),
            "object": draw(st.one_of(st.just(obj), st.none(), names))}


def billing_record(draw_amount, ts):
    return {"startTime": ts, "endTime": "2026-06-01T11:00:00Z", "podId": "p",
            "totalAmount": draw_amount, "gpuAmount": draw_amount}


line = st.one_of(
    watch_line().map(json.dumps),
    st.builds(lambda a, t: json.dumps({"id": "j", "endpointId": "e", "completedAt": t,
                                       "delayTime": a, "executionTime": a}, allow_nan=True),
              weird_numbers, timestamps),
    st.text(max_size=200),                                   # garbage
    watch_line().map(lambda d: json.dumps(d)[: len(json.dumps(d)) // 2]),   # truncated JSON
    st.just("\x00\x01\x02 control \x1b[31m"), st.just("[1, 2, 3]"), st.just("null"),
)


def _run(files: dict[str, bytes]):
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        d = Path(tmp)
        for name, data in files.items():
            (d / name).write_bytes(data)
        con = connect(None)
        try:
            results = load_folder(con, d)
            files_rows = con.execute("select source_file, records_in, records_loaded, "
                                     "records_quarantined, records_skipped from raw.files").fetchall()
            q = con.execute("select source_file, count(*), count(*) filter (where reason is null "
                            "or reason = '') from raw.quarantine group by all").fetchall()
            raw_n = con.execute("""select source_file, count(*) from (
                select source_file from raw.k8s_objects union all select source_file from raw.runpod_billing
                union all select source_file from raw.runpod_inventory union all
                select source_file from raw.serverless_jobs) group by all""").fetchall()
            return results, files_rows, {f: n for f, n, _ in q}, {f: bad for f, _, bad in q}, dict(raw_n)
        finally:
            con.close()


def _accounted(files_rows, quarantined, no_reason, raw_n):
    for f, n_in, n_loaded, n_quar, n_skip in files_rows:
        assert n_in == n_loaded + n_quar + n_skip, f
        assert quarantined.get(f, 0) == n_quar, f
        assert raw_n.get(f, 0) == n_loaded, f
        assert no_reason.get(f, 0) == 0, f


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(line, min_size=1, max_size=25), st.booleans())
def test_jsonl_fuzz_every_line_accounted(lines, trailing_newline):
    text = "\n".join(lines) + ("\n" if trailing_newline else "")
    _results, files_rows, quarantined, no_reason, raw_n = _run({"in.jsonl": text.encode("utf-8")})
    _accounted(files_rows, quarantined, no_reason, raw_n)
    assert files_rows, "the file itself is always accounted for"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.builds(billing_record, weird_numbers, timestamps), max_size=10))
def test_billing_envelope_fuzz(records):
    body = json.dumps({"records": records, "metadata": {}}, allow_nan=True).encode()
    _results, files_rows, quarantined, no_reason, raw_n = _run({"bill.json": body})
    _accounted(files_rows, quarantined, no_reason, raw_n)
    [(_, n_in, _n_loaded, _n_quar, _)] = files_rows
    assert n_in == len(records) or (not records and n_in <= 1)


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=2000))
def test_random_bytes_never_crash(data):
    _results, files_rows, quarantined, no_reason, raw_n = _run({"blob.bin": data})
    _accounted(files_rows, quarantined, no_reason, raw_n)


def test_huge_single_line_is_quarantined_not_fatal(tmp_path):
    big = b'{"type": "ADDED", "object": {"kind": "Pod", "metadata": {"name": "' + b"x" * (100 << 20)
    good = json.dumps({"type": "ADDED", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {
        "uid": "u1", "name": "ok", "creationTimestamp": "2026-06-01T00:00:00Z"}}}).encode()
    _results, files_rows, quarantined, no_reason, raw_n = _run({"big.jsonl": good + b"\n" + big + b"\n"})
    _accounted(files_rows, quarantined, no_reason, raw_n)
    [(_, n_in, n_loaded, n_quar, _)] = files_rows
    assert (n_in, n_loaded, n_quar) == (2, 1, 1)
