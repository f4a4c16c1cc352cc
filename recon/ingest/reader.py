"""The Python reader: route every record of one file to a raw table, quarantine or skip.

Each input record ends in exactly one place: a raw table, `raw.quarantine` (with file, locator,
reason and the record itself), or is counted as `skipped` with a reason (watch BOOKMARKs, the
simulator's ground truth, config files). `raw.files` keeps the per-file accounting.
Reloading a file replaces its rows (idempotent); an unchanged file (same sha256) is skipped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from connectors.pod_secrets import may_hold_secrets, redact_secrets, redact_text

from . import focus, invoices
from .classify import (
    INVENTORY_KEYS,
    WATCH_TYPES,
    BadRecord,
    bare_inventory,
    billing_source,
    check_amounts,
    doc_kind,
    gpu_price,
    require,
    text_or_none,
    v1_source,
    with_list_kind,
    x_recon,
)
from .decode import (
    _concatenated,
    _lenient_loads,
    _open_bytes,
    _surrogate_error,
    _utf8_error,
    looks_like_jsonl,
)
from .explain import unrecognised_text
from .guards import DEFAULT as DEFAULT_LIMITS
from .guards import check_timestamps, printable, size_reason, surrogate_reason
from .raw_tables import (
    TABLES,
)

log = logging.getLogger(__name__)

AMOUNT_KEYS = ("totalAmount", "gpuAmount", "cpuAmount", "diskAmount", "feeAmount", "amount",
               "standardAmount", "highPerformanceAmount", "timeBilledMs")
CLUSTER_RE = re.compile(r"cluster=([^/\\]+)")


# Tables whose documents may be pod specs: their env values, registry credentials and
# last-applied manifests are replaced by fingerprints before they are stored
# (connectors/pod_secrets.py). The DuckDB paths send every record that may hold one here.
SECRET_TABLES = frozenset({"k8s_objects", "runpod_inventory"})


def _without_secrets(obj, text: str) -> str:
    """`text` (the JSON of `obj`), redacted if it may hold a secret (a cheap test first)."""
    return _dumps(redact_secrets(obj)) if may_hold_secrets(text) else text


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
    # said to whoever runs the landing (`recon run` prints them, the daily flow logs them)
    warnings: list = field(default_factory=list)
    rows: dict = field(default_factory=lambda: {t: [] for t in TABLES})
    bad: list = field(default_factory=list)
    limits: object = DEFAULT_LIMITS  # recon.config.Landing: what a record may be

    def add(self, table: str, locator: str, record_no: int, doc, **cols) -> None:
        """Land one record; BadRecord (nothing counted) when landing refuses it (guards.py)."""
        text = _dumps(doc)
        limit = self.limits.max_record_bytes
        if len(text) * 4 > limit:  # (a character is at most 4 bytes of UTF-8)
            size = len(text.encode("utf-8", "surrogatepass"))
            if size > limit:
                raise BadRecord(size_reason(size, self.limits))
        # the record's text, and its columns: some come from the envelope (x_recon's
        # pulledAt and endpointId), not from the document
        for v in (text, *cols.values()):
            if isinstance(v, str) and not v.isascii() and _has_surrogate(v):
                raise BadRecord(surrogate_reason(v))
        check_timestamps(text, doc, cols, self.limits)
        self.records_in += 1
        self.loaded += 1
        if table in SECRET_TABLES:
            text = _without_secrets(doc, text)
        self.rows[table].append({"record_no": record_no, "locator": locator, "doc": text,
                                 **cols})

    def try_add(self, table: str, locator: str, record_no: int, doc, **cols) -> None:
        """add(), or the record quarantined with the reason landing refuses it."""
        try:
            self.add(table, locator, record_no, doc, **cols)
        except BadRecord as e:
            self.quarantine(locator, record_no, str(e), doc)

    def quarantine(self, locator: str, record_no: int, reason: str, record) -> None:
        self.records_in += 1
        self.quarantined += 1
        # a quarantined record is stored and shown (`recon quarantine`): no secret in it either
        text = redact_text(record) if isinstance(record, str) else _without_secrets(
            record, _dumps(record))
        reason = printable(reason)
        self.bad.append({"record_no": record_no, "locator": locator, "reason": reason,
                         "record": printable(text[:100_000])})
        log.warning("%s %s: %s", self.path, locator, reason)

    def skip(self, reason: str) -> None:
        self.records_in += 1
        self.skipped += 1
        self.skip_reason = reason


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def folder_cluster(path: str) -> str | None:
    """The cluster a file's `cluster=<c>` folder names, if any."""
    m = CLUSTER_RE.search(path)
    return m.group(1) if m else None


def _cluster_of(path: str, line_cluster) -> str:
    if isinstance(line_cluster, str) and line_cluster:
        return line_cluster
    return folder_cluster(path) or "default"


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
        typed = with_list_kind(doc)
        for i, item in enumerate(doc["items"]):
            _guard(res, lambda it=item, i=i: _k8s(res, typed(it), _sub(locator, f"items[{i}]"), i,
                                                   "LISTED", _cluster_of(res.path, None)),
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
                if not isinstance(rec, dict):
                    raise BadRecord("billing record is not a JSON object")
                require(rec, "time")
                check_amounts(rec, AMOUNT_KEYS)
                res.add("runpod_billing", _sub(locator, f"[{i}]"), i, rec, source=v1_source(rec),
                        pulled_at=None)
            _guard(res, one, _sub(locator, f"[{i}]"), i, rec)
    elif kind in ("runpod_inventory", "runpod_workers"):
        xr = x_recon(doc) if isinstance(doc, dict) else {}
        if kind == "runpod_workers":
            # GET /v2/serverless/{id}/workers does not name its endpoint: x_recon.endpointId
            # (the connector's) lands with the workers; without it they land with none, and
            # staging ties them to one by the other inputs (sql/staging/stg_runpod__worker_endpoints.sql)
            key, inv, ep = "workers", "workers", xr.get("endpointId")
            ep = ep if isinstance(ep, str) and ep else None
            items = doc[key]
        elif isinstance(doc, list):  # a v1 response: the bare array
            key, inv, ep, items = "", bare_inventory(doc), None, doc
        else:
            key = next(k for k in INVENTORY_KEYS if isinstance(doc.get(k), list))
            inv, ep, items = INVENTORY_KEYS[key], None, doc[key]
        for i, item in enumerate(items):
            def one(item=item, i=i):
                if not isinstance(item, dict) or not item.get("id"):
                    raise BadRecord(f"{key}[{i}] has no id")
                res.add("runpod_inventory", _sub(locator, f"{key}[{i}]"), i, item, inventory_kind=inv,
                        endpoint_id=ep, pulled_at=text_or_none(xr.get("pulledAt")))
            _guard(res, one, _sub(locator, f"{key}[{i}]"), i, item)
    elif kind == "runpod_gpu_catalog":  # GET /v2/catalog/gpus: Runpod's list prices
        pulled = text_or_none(x_recon(doc).get("pulledAt"))
        for i, gpu in enumerate(doc["gpus"]):
            def one(gpu=gpu, i=i):
                gpu_price(gpu)
                res.add("runpod_inventory", _sub(locator, f"gpus[{i}]"), i, gpu,
                        inventory_kind="gpu_catalog", endpoint_id=None, pulled_at=pulled)
            _guard(res, one, _sub(locator, f"gpus[{i}]"), i, gpu)
    elif kind == "runpod_inventory_item":  # GET /v2/pods/{id}, /v2/serverless/{id}: one object
        inv = bare_inventory([doc])
        res.add("runpod_inventory", locator, n, doc, inventory_kind=inv, endpoint_id=None,
                pulled_at=text_or_none(x_recon(doc).get("pulledAt")))
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
    elif kind == "collector_state":
        res.skip("the Kubernetes collector's resume state, not billing data")
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


def _jsonl_line(res: FileResult, no: int, raw: bytes, partial: bool) -> None:
    """One line of a JSON Lines file (`partial`: the file's last line, without a newline)."""
    if not raw.strip():
        return
    if len(raw) > res.limits.max_record_bytes:  # not parsed: what it holds is not stored
        res.quarantine(f"line {no}", no, size_reason(len(raw), res.limits),
                       raw[:100_000].decode("utf-8", "replace"))
        return
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        why = ("truncated last line (file still being written?)" if partial
               else _utf8_error(raw) or _surrogate_error(raw, e) or f"invalid JSON: {e}")
        res.quarantine(f"line {no}", no, why, raw.decode("utf-8", "replace"))
        return
    _guard(res, lambda d=doc, no=no: _one(res, d, f"line {no}", no), f"line {no}", no, doc)


def read_file(path: Path, display: str, limits=None) -> FileResult:
    res = FileResult(path=display, limits=limits or DEFAULT_LIMITS)
    data = _open_bytes(path)
    if data.startswith(b"\xef\xbb\xbf"):
        # a UTF-8 byte order mark (Windows tools write one; RFC 8259 lets a parser ignore it):
        # stripped, so that such a file is read as what it is, not "not JSON, JSON Lines or a
        # recognised format"
        data = data[3:]
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
    if stripped[:1] not in (b"{", b"[") and invoices.looks_like_invoice_header(
            data[:4096].decode("utf-8", "replace").splitlines()[0]):
        invoices.read_invoice_csv(res, data.decode("utf-8", "replace"))
        return res
    if stripped[:1] not in (b"{", b"[") and focus.looks_like_focus_header(
            data[:4096].decode("utf-8", "replace").splitlines()[0]):
        focus.read_focus_csv(res, data.decode("utf-8", "replace"))
        return res
    # Whole-document JSON first (a List, an envelope, a v1 array, an inventory response);
    # JSON Lines and kubectl's concatenated output fail fast at their second document.
    try:
        whole = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        # orjson refuses a lone surrogate escape; Python's json reads it (into a str that
        # cannot be stored), so that the one record holding it is quarantined (FileResult.add)
        # and the document's others land
        whole = _lenient_loads(data) if "surrogate" in str(e) else None
    if invoices.is_invoice_document(whole):
        invoices.read_invoice_json(res, whole)
        return res
    if whole is not None:
        res.kind = doc_kind(whole)
        loc = "line 1" if res.kind in ("k8s_watch_event", "serverless_job") else ""
        _guard(res, lambda: _one(res, whole, loc, 1 if loc else 0), loc or "file",
               1 if loc else 0, whole)
        return res
    lines = data.split(b"\n")
    if looks_like_jsonl(lines):
        res.kind = "jsonl"
        last = len(lines)
        for no, raw in enumerate(lines, start=1):
            _jsonl_line(res, no, raw, no == last and not data.endswith(b"\n"))
        return res
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        if stripped[:1] == b"{":  # documents, not lines: none of them is read
            res.kind = "concatenated_json"
            line = data.count(b"\n", 0, e.start) + 1
            res.quarantine(f"line {line}", line, f"not valid UTF-8: byte 0x{data[e.start]:02x} "
                           f"on line {line}; the file's documents were not read",
                           data[max(0, e.start - 200):e.start + 200].decode("utf-8", "replace"))
            return res
        text = data.decode("utf-8", "replace")
    if stripped[:1] == b"{":
        res.kind = "concatenated_json"
        for k, line, doc, err, broken in _concatenated(text):
            loc = f"document {k} (line {line})"
            if err:
                res.quarantine(loc, line, err, broken[:2000])
                continue
            _guard(res, lambda d=doc, loc=loc, line=line: _one(res, d, loc, line), loc, line,
                   doc)
        return res
    res.kind = "unknown"
    first_line = text.splitlines()[0][:200] if text else ""
    res.quarantine("file", 0, unrecognised_text(text), first_line)
    return res


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
