"""Land every file of an input folder into DuckDB `raw` tables, or quarantine it with a reason.

Each input record ends in exactly one place: a raw table, `raw.quarantine` (with file, locator,
reason and the record itself), or is counted as `skipped` with a reason (watch BOOKMARKs, the
simulator's ground truth, config files). `raw.files` keeps the per-file accounting.
Reloading a file replaces its rows (idempotent); an unchanged file (same sha256) is skipped.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pyarrow as pa

from . import focus
from .classify import (
    INVENTORY_KEYS, WATCH_TYPES, BadRecord, billing_source, check_amounts, doc_kind, require,
    text_or_none, x_recon,
)

log = logging.getLogger(__name__)

TABLES = {
    "k8s_objects": ["cluster", "event_type", "kind", "uid", "resource_version", "seen_at"],
    "runpod_billing": ["source", "pulled_at"],
    "runpod_inventory": ["inventory_kind", "endpoint_id", "pulled_at"],
    "serverless_jobs": [],
    "focus_rows": [],
    "prometheus_series": ["cluster", "query"],
}
COMMON = ["source_file", "record_no", "locator"]
AMOUNT_KEYS = ("totalAmount", "gpuAmount", "cpuAmount", "diskAmount", "feeAmount", "amount",
               "standardAmount", "highPerformanceAmount", "timeBilledMs")
CLUSTER_RE = re.compile(r"cluster=([^/\\]+)")


def _dumps(obj) -> str:
    try:
        return orjson.dumps(obj).decode()
    except TypeError:  # an integer beyond 64 bits (the json module reads those exactly)
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


@dataclass
class FileResult:
    path: str
    kind: str = "unknown"
    records_in: int = 0
    loaded: int = 0
    quarantined: int = 0
    skipped: int = 0
    skip_reason: str | None = None
    unchanged: bool = False
    sha256: str | None = None  # set by a reader that hashed the file while reading it
    rows: dict = field(default_factory=lambda: {t: [] for t in TABLES})
    bad: list = field(default_factory=list)

    def add(self, table: str, locator: str, record_no: int, doc, **cols) -> None:
        self.records_in += 1
        self.loaded += 1
        self.rows[table].append({"record_no": record_no, "locator": locator,
                                 "doc": _dumps(doc), **cols})

    def quarantine(self, locator: str, record_no: int, reason: str, record) -> None:
        self.records_in += 1
        self.quarantined += 1
        text = record if isinstance(record, str) else _dumps(record)
        self.bad.append({"record_no": record_no, "locator": locator, "reason": reason,
                         "record": text[:100_000]})
        log.warning("%s %s: %s", self.path, locator, reason)

    def skip(self, reason: str) -> None:
        self.records_in += 1
        self.skipped += 1
        self.skip_reason = reason


def _cluster_of(path: str, line_cluster) -> str:
    if isinstance(line_cluster, str) and line_cluster:
        return line_cluster
    m = CLUSTER_RE.search(path)
    return m.group(1) if m else "default"


def _k8s(res: FileResult, obj, locator: str, n: int, event_type: str, cluster: str, seen_at=None):
    if not isinstance(obj, dict):
        raise BadRecord("object is not a JSON object")
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise BadRecord("object has no metadata")
    kind = obj.get("kind")
    uid = meta.get("uid")
    if not kind or not uid:
        raise BadRecord("object lacks kind or metadata.uid")
    if not isinstance(kind, str):
        raise BadRecord(f"object kind is not a string: {str(kind)[:40]!r}")
    res.add("k8s_objects", locator, n, obj, cluster=cluster, event_type=event_type, kind=kind,
            uid=str(uid), resource_version=str(meta.get("resourceVersion") or ""),
            seen_at=seen_at if isinstance(seen_at, str) else None)


def _sub(locator: str, part: str) -> str:
    return f"{locator} {part}".strip()


def _one(res: FileResult, doc, locator: str, n: int) -> None:
    """Route one document (a JSONL line, a whole file, or one item of a list)."""
    kind = doc_kind(doc)
    if kind == "k8s_watch_event":
        t = doc.get("type")
        if t == "BOOKMARK":
            return res.skip("watch BOOKMARK (carries only a resourceVersion)")
        if t == "ERROR":
            obj = doc.get("object")
            obj = obj if isinstance(obj, dict) else {}
            raise BadRecord(f"watch ERROR event: {obj.get('code')} {obj.get('reason')}")
        if not isinstance(t, str) or t not in WATCH_TYPES:
            raise BadRecord(f"unknown watch event type {t!r}")
        _k8s(res, doc["object"], locator, n, t, _cluster_of(res.path, doc.get("cluster")),
             doc.get("seenAt"))
    elif kind == "k8s_object":
        _k8s(res, doc, locator, n, "LISTED", _cluster_of(res.path, None))
    elif kind == "k8s_list":
        for i, item in enumerate(doc["items"]):
            _guard(res, lambda it=item, i=i: _k8s(res, it, _sub(locator, f"items[{i}]"), i, "LISTED",
                                                   _cluster_of(res.path, None)),
                   _sub(locator, f"items[{i}]"), i, item)
    elif kind == "runpod_billing":
        src = billing_source(doc)
        pulled = text_or_none(x_recon(doc).get("pulledAt"))
        for i, rec in enumerate(doc["records"]):
            def one(rec=rec, i=i):
                if not isinstance(rec, dict):
                    raise BadRecord("billing record is not a JSON object")
                require(rec, "startTime", "endTime")
                check_amounts(rec, AMOUNT_KEYS)
                res.add("runpod_billing", _sub(locator, f"records[{i}]"), i, rec, source=src,
                        pulled_at=pulled)
            _guard(res, one, _sub(locator, f"records[{i}]"), i, rec)
    elif kind == "runpod_v1_billing":
        for i, rec in enumerate(doc):
            def one(rec=rec, i=i):
                require(rec, "time", "timeBilledMs")
                if not (rec.get("podId") or rec.get("endpointId")):
                    raise BadRecord("v1 billing record has neither podId nor endpointId")
                check_amounts(rec, AMOUNT_KEYS)
                res.add("runpod_billing", _sub(locator, f"[{i}]"), i, rec,
                        source="v1_pods" if rec.get("podId") else "v1_serverless", pulled_at=None)
            _guard(res, one, _sub(locator, f"[{i}]"), i, rec)
    elif kind in ("runpod_inventory", "runpod_workers"):
        xr = x_recon(doc)
        if kind == "runpod_workers":
            key, inv, ep = "workers", "workers", xr.get("endpointId")
            if not ep or not isinstance(ep, str):
                raise BadRecord("workers snapshot without x_recon.endpointId (the API response "
                                "does not name its endpoint)")
        else:
            key = next(k for k in INVENTORY_KEYS if isinstance(doc.get(k), list))
            inv, ep = INVENTORY_KEYS[key], None
        for i, item in enumerate(doc[key]):
            def one(item=item, i=i):
                if not isinstance(item, dict) or not item.get("id"):
                    raise BadRecord(f"{key}[{i}] has no id")
                res.add("runpod_inventory", _sub(locator, f"{key}[{i}]"), i, item, inventory_kind=inv,
                        endpoint_id=ep, pulled_at=text_or_none(xr.get("pulledAt")))
            _guard(res, one, _sub(locator, f"{key}[{i}]"), i, item)
    elif kind == "serverless_job":
        require(doc, "id", "endpointId", "completedAt")
        check_amounts(doc, ("delayTime", "executionTime"))
        res.add("serverless_jobs", locator, n, doc)
    elif kind == "prometheus":
        xr = doc.get("x_recon") if isinstance(doc.get("x_recon"), dict) else {}
        query = str(xr.get("query") or "")
        result = doc["data"].get("result")
        if not isinstance(result, list):
            raise BadRecord("Prometheus response without a data.result list")
        for i, series in enumerate(result):
            def one(series=series, i=i):
                if not isinstance(series, dict) or not isinstance(series.get("metric"), dict):
                    raise BadRecord(f"data.result[{i}] has no metric labels")
                if not isinstance(series.get("values", series.get("value")), list):
                    raise BadRecord(f"data.result[{i}] has no samples")
                if "values" not in series:  # an instant vector: one sample
                    series = {**series, "values": [series["value"]]}
                res.add("prometheus_series", _sub(locator, f"data.result[{i}]"), i, series,
                        cluster=_cluster_of(res.path, series["metric"].get("cluster")), query=query)
            _guard(res, one, _sub(locator, f"data.result[{i}]"), i, series)
    elif kind == "runpod_balance":
        me = doc["data"]["myself"]
        pulled = text_or_none(x_recon(doc).get("pulledAt")) or text_or_none(doc.get("observedAt"))
        if not pulled:
            raise BadRecord("balance reading without x_recon.pulledAt (when was it read?)")
        check_amounts(me, ("clientBalance", "currentSpendPerHr", "spendLimit"))
        require(me, "clientBalance", "currentSpendPerHr")
        res.add("runpod_inventory", _sub(locator, "data.myself"), n, me, inventory_kind="balance",
                endpoint_id=None, pulled_at=pulled)
    elif kind == "runpod_health":
        res.skip("serverless /health snapshot (kept for operators, not billing data)")
    elif kind == "ground_truth":
        res.skip("simulator ground truth, not an input")
    elif kind == "empty_array":
        res.skip("empty JSON array")
    else:
        raise BadRecord("not a recognised input record (expected a Kubernetes object/list/watch "
                        "event, a Runpod v1/v2 billing or inventory response, or a job record)")


def _guard(res: FileResult, fn, locator: str, n: int, record) -> None:
    try:
        fn()
    except BadRecord as e:
        res.quarantine(locator, n, str(e), record)


def _open_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


def _concatenated(text: str):
    """kubectl --watch -o json: pretty-printed JSON documents one after another."""
    dec = json.JSONDecoder()
    i, n = 0, len(text)
    k = 0
    line, counted = 1, 0  # line number of offset `counted` (counted incrementally: big files)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return
        k += 1
        line += text.count("\n", counted, i)
        counted = i
        try:
            doc, j = dec.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError) as e:
            msg = e.msg if isinstance(e, json.JSONDecodeError) else "nested too deeply"
            yield k, line, None, f"invalid JSON in document {k} (starting line {line}): {msg}"
            return
        yield k, line, doc, None
        i = j


def _jsonl_line(res: FileResult, no: int, raw: bytes, partial: bool) -> None:
    """One line of a JSON Lines file (`partial`: the file's last line, without a newline)."""
    if not raw.strip():
        return
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        why = ("truncated last line (file still being written?)" if partial
               else f"invalid JSON: {e}")
        res.quarantine(f"line {no}", no, why, raw.decode("utf-8", "replace"))
        return
    _guard(res, lambda d=doc, no=no: _one(res, d, f"line {no}", no), f"line {no}", no, doc)


def read_file(path: Path, display: str) -> FileResult:
    res = FileResult(path=display)
    data = _open_bytes(path)
    stripped = data.lstrip()
    if not stripped:
        res.kind = "empty"
        res.quarantine("file", 0, "empty file", "")
        return res
    if data[:4] == b"PAR1":
        if not focus.read_focus_parquet(res, path):
            res.quarantine("file", 0, "Parquet file without FOCUS columns (ChargePeriodStart, "
                           "BilledCost)", "")
        return res
    if stripped[:1] not in (b"{", b"[") and focus.looks_like_focus_header(
            data[:4096].decode("utf-8", "replace").splitlines()[0]):
        focus.read_focus_csv(res, data.decode("utf-8", "replace"))
        return res
    # Whole-document JSON first (a List, an envelope, a v1 array, an inventory response);
    # JSON Lines and kubectl's concatenated output fail fast at their second document.
    try:
        whole = orjson.loads(data)
    except orjson.JSONDecodeError:
        whole = None
    if whole is not None:
        res.kind = doc_kind(whole)
        loc = "line 1 " if res.kind in ("k8s_watch_event", "serverless_job") else ""
        _guard(res, lambda: _one(res, whole, loc, 1 if loc else 0), loc.strip() or "file",
               1 if loc else 0, whole)
        return res
    lines = data.split(b"\n")
    first = next((ln for ln in lines if ln.strip()), b"")
    try:
        orjson.loads(first)
        jsonl = True
    except orjson.JSONDecodeError:
        jsonl = False
    if jsonl:
        res.kind = "jsonl"
        last = len(lines)
        for no, raw in enumerate(lines, start=1):
            _jsonl_line(res, no, raw, no == last and not data.endswith(b"\n"))
        return res
    text = data.decode("utf-8", "replace")
    if stripped[:1] == b"{":
        res.kind = "concatenated_json"
        for k, line, doc, err in _concatenated(text):
            loc = f"document {k} (line {line})"
            if err:
                res.quarantine(loc, line, err, text[:2000])
                break
            _guard(res, lambda d=doc, loc=loc, line=line: _one(res, d, loc, line), loc, line,
                   doc)
        return res
    res.kind = "unknown"
    first_line = text.splitlines()[0][:200] if text else ""
    res.quarantine("file", 0, "not JSON, JSON Lines or a recognised format", first_line)
    return res


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def arrow_rows(res: FileResult, table: str) -> pa.Table:
    cols = COMMON + TABLES[table] + ["doc"]
    rows = res.rows[table]
    data = {c: [r.get(c) for r in rows] for c in cols}
    data["source_file"] = [res.path] * len(rows)
    schema = pa.schema([(c, pa.int64() if c == "record_no" else pa.string()) for c in cols])
    return pa.table(data, schema=schema)


def arrow_bad(res: FileResult) -> pa.Table:
    cols = ["source_file", "record_no", "locator", "reason", "record"]
    data = {c: [b.get(c) for b in res.bad] for c in cols}
    data["source_file"] = [res.path] * len(res.bad)
    schema = pa.schema([(c, pa.int64() if c == "record_no" else pa.string()) for c in cols])
    return pa.table(data, schema=schema)


# ------------------------------------------------------------------ fast path: JSON Lines in DuckDB
#
# A JSON Lines file whose first line is a watch event, a job record or a workers snapshot is cut
# into chunks of whole lines; each chunk goes to DuckDB zero-copy (Arrow: one row per line with
# its line number), is parsed there once (`json_extract` of a list of paths, in parallel) and the
# lines that are plainly of the file's kind and plainly valid are inserted straight into the raw
# table by one INSERT. Every other line -- invalid JSON, another kind, a missing field, a
# non-string id, a BOOKMARK, a value DuckDB's parser accepts but orjson does not (NaN, Infinity,
# trailing commas, 1e999) or reads differently (integers beyond 64 bits) -- goes through the
# Python path above, one line at a time, so it is routed, skipped or quarantined with exactly the
# same file, line and reason as before (tests/test_bench_harness.py checks both paths agree on
# mutated input). A chunk that is not valid UTF-8 goes through the Python path whole. The stored
# document is DuckDB's minified re-serialisation, as the Python path's (`json(doc)` on insert).
# Known difference: an object with duplicate keys keeps the first value here and the last one in
# orjson (RFC 8259 leaves it undefined).

FAST_CHUNK = 64 << 20  # bytes of whole lines per DuckDB batch: bounds memory on big files
FAST_MIN_BYTES = 0  # smaller files take the Python path (0: every file; tests use small ones)
_WS = r"[ \t\r\n]*"
_ODD_NUMBER = r"(?:[-+]?(?i:inf|nan)|-?[0-9.]+[eE]\+?[0-9]{3}|-?[0-9]{20})"
# what orjson rejects and DuckDB's parser accepts (trailing commas, NaN, Infinity, 1e999) or the
# two read differently (integers beyond 64 bits). Three patterns, each starting with a literal
# byte, so RE2 skips ahead with memchr: 2-4x faster than one pattern starting with [:\[,]
LENIENT_RES = (rf",{_WS}(?:[\]}}]|{_ODD_NUMBER})", rf":{_WS}{_ODD_NUMBER}",
               rf"\[{_WS}{_ODD_NUMBER}")
LENIENT_SQL = " or ".join(f"regexp_matches(line, '{r}')" for r in LENIENT_RES)


def _nonempty(x: str) -> str:  # the JSON value is a non-empty string
    return f"(starts_with({x}, '\"') and {x} <> '\"\"')"


def _str(x: str) -> str:  # the string's value, unescaped
    return f"json_extract_string({x}, '$')"


def _amount(x: str) -> str:  # check_amounts: absent, null, or a finite number below 1e12
    return f"({x} is null or {x} = 'null' or abs(try_cast({x}::varchar as double)) < 1e12)"


class _Mode:
    """SQL of one fast kind: `paths` extracted as v[1..], `fast` (a line lands here), `insert`."""

    def __init__(self, table: str, paths: list[str], fast: str, columns: str,
                 python_first: str | None = None, items: bool = False):
        self.table, self.paths, self.fast, self.columns = table, paths, fast, columns
        self.python_first = python_first  # cheap test of lines always left to Python
        self.items = items  # one row per item of v[1] (workers), not per line

    def parsed(self) -> str:
        """CTE `p` (line_no, v) of the lines DuckDB parses (materialised: v is computed once,
        not once per reference in the filter), then `f`, those of them that land here."""
        keep = "" if self.python_first is None else f" and not ({self.python_first})"
        cte = (f"with p as materialized (select line_no, try(json_extract(line, {self.paths!r})) "
               f"as v from _recon_chunk where not ({LENIENT_SQL}){keep}), ")
        if not self.items:
            return cte + f"f as (select line_no, v from p where {self.fast}) "
        # every item an object with a non-empty string id (else the line goes to Python)
        return cte + (f"q as materialized (select line_no, v, json_extract(v[1], '$[*]') as items, "
                      f"json_extract(v[1], '$[*].id') as ids from p where {self.fast}), "
                      f"f as (select line_no, v, items from q where len(items) = len(ids) and "
                      f"list_bool_and(list_transform(ids, lambda x: {_nonempty('x')}))) ")

    def insert_sql(self, display: str) -> str:
        src = f"'{_q(display)}'"
        if not self.items:
            return (f"insert into raw.{self.table} by name {self.parsed()} select {src} as "
                    f"source_file, line_no as record_no, 'line ' || line_no as locator, "
                    f"{self.columns} from f")
        return (f"insert into raw.{self.table} by name {self.parsed()} select {src} as "
                f"source_file, i - 1 as record_no, 'line ' || line_no || ' workers[' || (i - 1) "
                f"|| ']' as locator, {self.columns}, items[i] as doc "
                f"from (select *, unnest(generate_series(1, len(items))) as i from f) "
                f"returning record_no")

    def python_lines_sql(self) -> str:
        return (f"{self.parsed()} select line_no from _recon_chunk anti join f using (line_no) "
                f"order by line_no")


def _modes(cluster: str) -> dict[str, _Mode]:
    v = [f"v[{i}]" for i in range(17)]
    watch = _Mode(
        "k8s_objects",
        # 1 type, 2 object, 3 cluster, 4 seenAt, 5 kind, 6 x_recon, 7 object.kind,
        # 8 object.metadata.uid (present: metadata is an object), 9 object.metadata.resourceVersion
        ["$.type", "$.object", "$.cluster", "$.seenAt", "$.kind", "$.x_recon", "$.object.kind",
         "$.object.metadata.uid", "$.object.metadata.resourceVersion"],
        f"v is not null and {v[5]} is null and {v[6]} is null "
        f"and {v[1]} in ('\"ADDED\"', '\"MODIFIED\"', '\"DELETED\"') "
        f"and starts_with({v[2]}, '{{') and {_nonempty(v[7])} and {_nonempty(v[8])} "
        f"and ({v[9]} is null or {v[9]} = 'null' or starts_with({v[9]}, '\"'))",
        f"case when {_nonempty(v[3])} then {_str(v[3])} else '{_q(cluster)}' end as cluster, "
        f"replace({v[1]}, '\"', '') as event_type, {_str(v[7])} as kind, {_str(v[8])} as uid, "
        f"case when starts_with({v[9]}, '\"') then {_str(v[9])} else '' end as resource_version, "
        f"case when starts_with({v[4]}, '\"') then {_str(v[4])} end as seen_at, {v[2]} as doc",
        python_first="contains(line, 'BOOKMARK')")
    # the keys whose presence makes doc_kind() answer something else than a job
    not_job = ["$.kind", "$.x_recon", "$.type", "$.object", "$.items", "$.records", "$.workers",
               "$.pods", "$.endpoints", "$.networkVolumes"]
    job = _Mode(
        "serverless_jobs",
        # 1 whole doc, 2 id, 3 endpointId, 4 completedAt, 5 delayTime, 6 executionTime, 7.. absent
        ["$", "$.id", "$.endpointId", "$.completedAt", "$.delayTime", "$.executionTime",
         *not_job],
        f"v is not null and starts_with({v[1]}, '{{') and "
        + " and ".join(f"{v[i]} is null" for i in range(7, 7 + len(not_job))) + " and "
        + " and ".join(f"{v[i]} is not null and {v[i]} not in ('null', '\"\"')" for i in (2, 3, 4))
        + f" and ({v[5]} is not null or {v[6]} is not null) "
        f"and {_amount(v[5])} and {_amount(v[6])}",
        f"{v[1]} as doc")
    not_workers = ["$.kind", "$.type", "$.object", "$.items", "$.records"]
    workers = _Mode(
        "runpod_inventory",
        # 1 workers, 2 x_recon, 3 x_recon.endpoint, 4 x_recon.endpointId, 5 x_recon.pulledAt,
        # 6 workers[0] (an empty list is left to Python), 7.. absent
        ["$.workers", "$.x_recon", "$.x_recon.endpoint", "$.x_recon.endpointId",
         "$.x_recon.pulledAt", "$.workers[0]", *not_workers],
        "v is not null and "
        + " and ".join(f"{v[i]} is null" for i in range(7, 7 + len(not_workers)))
        + f" and starts_with({v[2]}, '{{') and starts_with({v[1]}, '[') and {v[6]} is not null "
        f"and {_nonempty(v[4])} "
        f"and ({v[3]} is null or not ends_with({_str(v[3])}, '/health')) "
        f"and ({v[5]} is null or {v[5]} = 'null' or starts_with({v[5]}, '\"'))",
        f"'workers' as inventory_kind, {_str(v[4])} as endpoint_id, "
        f"case when starts_with({v[5]}, '\"') then {_str(v[5])} end as pulled_at",
        items=True)
    return {"watch": watch, "job": job, "workers": workers}


FAST_KINDS = {"k8s_watch_event": "watch", "serverless_job": "job", "runpod_workers": "workers"}


def _open_stream(path: Path):
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def _fast_mode(head: bytes, more: bool) -> str | None:
    """The fast path's mode for a file starting with `head`, or None (the Python path).

    Mirrors read_file's decisions: the whole-document parse fails (a second non-blank line
    follows the first) and the first non-blank line is a JSON document of a fast kind.
    """
    i = 0
    while True:
        j = head.find(b"\n", i)
        if j < 0:
            return None  # the first line does not fit in the head: let Python decide
        if head[i:j].strip():
            break
        i = j + 1
    first = head[i:j]
    if not (head[j + 1:].strip() or more):
        return None  # a single document: read_file's whole-document path
    try:
        doc = orjson.loads(first)
    except orjson.JSONDecodeError:
        return None
    return FAST_KINDS.get(doc_kind(doc))


def _chunks(path: Path, hasher=None):
    """Yield (memoryview of whole lines, is the file's last chunk), FAST_CHUNK bytes at a time.

    One buffer is read into and reused (the view is valid until the next iteration): no fresh
    64 MiB allocation, page faults and copies per chunk. `hasher` (hashlib) gets the file's
    bytes as they are read (plain files; a gzip file is hashed by its caller)."""
    buf = bytearray(FAST_CHUNK)
    filled = 0  # bytes at the start of buf carried over from the last read (a partial line)
    with _open_stream(path) as f:
        gz = isinstance(f, gzip.GzipFile)
        while True:
            if filled == len(buf):  # one line longer than the buffer: a bigger one
                bigger = bytearray(2 * len(buf))  # (the old one may still be exported)
                bigger[:filled] = buf
                buf = bigger
            view = memoryview(buf)
            got = f.readinto(view[filled:])
            if hasher is not None and not gz and got:
                hasher.update(view[filled:filled + got])
            end = filled + got
            if not got:
                if filled:
                    yield view[:filled], True
                return
            cut = buf.rfind(b"\n", filled, end) + 1
            if cut == 0:  # no newline yet: read on
                filled = end
                continue
            yield view[:cut], False
            view.release()
            buf[:end - cut] = buf[cut:end]
            filled = end - cut


def land_jsonl(con, path: Path, display: str) -> FileResult | None:
    """Land a big JSON Lines file through DuckDB (see above); None: use read_file instead.

    Fast rows are inserted into raw.* here (inside the caller's transaction); lines left to the
    Python path end in the returned FileResult's rows/bad, like read_file's.
    """
    import numpy as np

    if path.stat().st_size < FAST_MIN_BYTES:
        return None
    with _open_stream(path) as f:
        head = f.read(1 << 20)
        mode_name = _fast_mode(head, bool(f.read(1)))
    if mode_name is None:
        return None
    mode = _modes(_cluster_of(display, None))[mode_name]
    insert = mode.insert_sql(display)
    res = FileResult(path=display, kind="jsonl")
    hasher = hashlib.sha256()
    no0 = 0  # line number of the chunk's first line, minus one
    newline = np.empty(FAST_CHUNK, dtype=bool)
    for data, final in _chunks(path, hasher):
        arr = np.frombuffer(data, dtype=np.uint8)
        if len(newline) < len(arr):
            newline = np.empty(len(arr), dtype=bool)
        nl = np.equal(arr, 10, out=newline[:len(arr)])
        ends = np.flatnonzero(nl) + 1
        trailing = len(arr) > 0 and arr[-1] != 10  # a last line without its newline
        if trailing:
            ends = np.append(ends, len(arr))
        starts = np.concatenate(([0], ends[:-1]))
        n = len(ends)
        utf8 = int(arr.max(initial=0)) < 128
        if not utf8:
            try:
                str(data, "utf-8")
                utf8 = True
            except UnicodeDecodeError:
                pass
        if utf8:
            offsets = np.concatenate(([0], ends)).astype(np.int64)
            chunk = pa.table({
                "line_no": pa.array(np.arange(no0 + 1, no0 + n + 1, dtype=np.int64)),
                "line": pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets),
                                                         pa.py_buffer(data))})
            con.register("_recon_chunk", chunk)
            try:
                if mode.items:
                    record_no = con.execute(insert).fetchnumpy()["record_no"]
                    rows, lines = len(record_no), int((record_no == 0).sum())
                else:
                    rows = lines = con.execute(insert).fetchone()[0]
                first = [] if mode.python_first is None else [r[0] for r in con.execute(
                    f"select line_no from _recon_chunk where {mode.python_first} "
                    f"order by line_no").fetchall()]
                if lines + len(first) == n:  # every other line landed: the usual case
                    py_lines = [k - no0 - 1 for k in first]
                else:
                    py_lines = [r[0] - no0 - 1 for r in con.execute(
                        mode.python_lines_sql()).fetchall()]
            finally:
                con.unregister("_recon_chunk")
                del chunk
            res.records_in += rows
            res.loaded += rows
        else:
            py_lines = range(n)
        for k in py_lines:
            raw = bytes(data[starts[k]:ends[k]])
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            _jsonl_line(res, no0 + k + 1, raw, final and k == n - 1 and trailing)
        no0 += n
        del arr, nl
    if not _is_gzip(path):
        res.sha256 = hasher.hexdigest()  # read once: landing and hashing share the pass
    return res


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _q(s: str) -> str:
    return s.replace("'", "''")


# ------------------------------------------------------------------ fast path: big Kubernetes lists
#
# `kubectl get events -A -o json` of a busy cluster is one JSON document of 100+ MB; orjson plus a
# Python loop over its items costs ~20 us an item. DuckDB's reader parses it in a fraction of
# that. The read happens on a separate cursor (an error there -- not JSON, not UTF-8, not one
# document -- only means "use the Python reader", it cannot abort the caller's transaction), and
# only when read_file would take the whole-document path to a Kubernetes List: one document that
# orjson would accept (none of the lenient forms above), with `items` and `apiVersion`, no
# watch-event keys, no ground-truth/health/balance shape. Items that are plainly a Kubernetes
# object (a non-empty string kind and metadata.uid) land here; every other item goes through
# _k8s in Python with its index, as before.

LIST_MIN_BYTES = 4 << 20  # smaller lists: the Python reader


def land_list(con, path: Path, display: str) -> FileResult | None:
    """Land a big Kubernetes List file through DuckDB; None: use read_file instead."""
    import duckdb

    size = path.stat().st_size
    if size < LIST_MIN_BYTES or _is_gzip(path):
        return None
    data = path.read_bytes()
    if data.lstrip()[:1] != b"{" or b'"object"' in data:
        return None  # not an object, or maybe a watch event: the Python reader decides
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    digest = hashlib.sha256(data).hexdigest()
    del data
    cur = con.cursor()
    try:
        cur.execute("set TimeZone = 'UTC'")
        lenient = " or ".join(f"regexp_matches(content, '{r}')" for r in LENIENT_RES)
        if cur.execute(f"select {lenient} from read_text(?)", [str(path)]).fetchone()[0]:
            return None  # orjson would reject the document: the Python reader says why
        cur.execute(
            "create temp table _recon_list as select * from read_json(?, format='unstructured', "
            "columns={'apiVersion': 'JSON', 'items': 'JSON[]', 'kind': 'JSON', "
            "'x_recon': 'JSON', 'data': 'JSON', 'type': 'JSON'}, "
            f"maximum_object_size={size + 1024})", [str(path)])
        top = cur.execute(
            "select count(*) over (), apiVersion is not null, items is not null, "
            "coalesce(kind = '\"recon.GroundTruth\"', false), "
            "coalesce(ends_with(x_recon ->> '$.endpoint', '/health'), false), "
            "coalesce(json_type(data, '$.myself') = 'OBJECT', false), type is not null "
            "from _recon_list").fetchall()
        if len(top) != 1 or top[0] != (1, True, True, False, False, False, False):
            return None  # not exactly one List document (read_file's cases)
        cluster = _cluster_of(display, None)
        v = "json_extract(item, ['$.kind', '$.metadata.uid', '$.metadata.resourceVersion'])"
        items = cur.sql(f"""
            select i - 1 as idx, item,
                   coalesce(starts_with(item, '{{') and {_nonempty('v[1]')} and {_nonempty('v[2]')}
                            and (v[3] is null or v[3] = 'null' or starts_with(v[3], '"')),
                            false) as fast,
                   {_str('v[1]')} as kind, {_str('v[2]')} as uid,
                   case when starts_with(v[3], '"') then {_str('v[3]')} else '' end
                       as resource_version
            from (select item, i, {v} as v
                  from (select unnest(items) as item, unnest(generate_series(1, len(items))) as i
                        from _recon_list))
            order by i""").to_arrow_table()
    except duckdb.Error:
        return None
    finally:
        cur.close()
    res = FileResult(path=display, kind="k8s_list", sha256=digest)
    con.register("_recon_items", items)
    try:
        n = con.execute(
            f"insert into raw.k8s_objects by name select '{_q(display)}' as source_file, "
            f"idx as record_no, 'items[' || idx || ']' as locator, '{_q(cluster)}' as cluster, "
            "'LISTED' as event_type, kind, uid, resource_version, null as seen_at, "
            "json(item) as doc from _recon_items where fast").fetchone()[0]
        slow = con.execute("select idx, item::varchar from _recon_items where not fast order by idx"
                           ).fetchall()
    finally:
        con.unregister("_recon_items")
    res.records_in = res.loaded = n
    for i, text in slow:
        item = None if text is None else orjson.loads(text)  # a JSON null item is SQL NULL
        loc = f"items[{i}]"
        _guard(res, lambda it=item, i=i, loc=loc: _k8s(res, it, loc, i, "LISTED", cluster),
               loc, i, item)
    return res
