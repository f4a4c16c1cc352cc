"""The SQL of the JSON Lines fast path (`jsonl.land_jsonl`): which files take it
(`_fast_mode`), and per kind of line (`_modes`) what DuckDB extracts, which lines land straight
into the raw table and which go to the Python reader (lenient JSON, possible secrets, what
landing may refuse)."""

from __future__ import annotations

import orjson

from connectors.pod_secrets import MARKERS_TEXT

from .classify import doc_kind
from .decode import FORMAT_LINES, looks_like_jsonl
from .guards import DEFAULT as DEFAULT_LIMITS
from .guards import python_first_sql
from .raw_tables import ts_ok_sql

_WS = r"[ \t\r\n]*"
_ODD_NUMBER = r"(?:[-+]?(?i:inf|nan)|-?[0-9.]+[eE]\+?[0-9]{3}|-?[0-9]{20})"
# what orjson rejects and DuckDB's parser accepts (trailing commas, NaN, Infinity, 1e999) or the
# two read differently (integers beyond 64 bits). Three patterns, each starting with a literal
# byte, so RE2 skips ahead with memchr: 2-4x faster than one pattern starting with [:\[,]
LENIENT_RES = (rf",{_WS}(?:[\]}}]|{_ODD_NUMBER})", rf":{_WS}{_ODD_NUMBER}",
               rf"\[{_WS}{_ODD_NUMBER}")
LENIENT_SQL = " or ".join(f"regexp_matches(line, '{r}')" for r in LENIENT_RES)
# a line that may hold a secret value (a pod's env, a registry credential: pod_secrets.py) goes
# to the Python path, which stores it redacted; the others (pods without env, events, nodes,
# workers) land here unparsed by Python. DuckDB's substring tests cost ~0.7 s per 38 MB of pod
# versions here (8 markers), so they run only on a chunk whose bytes hold a marker at all
# (`marked`, on the reading buffer: memchr speed): a file without any pays nothing.
SECRETS_SQL = "(" + " or ".join(f"contains(line, '{m}')" for m in MARKERS_TEXT) + ")"


def _nonempty(x: str) -> str:  # the JSON value is a non-empty string
    return f"(starts_with({x}, '\"') and {x} <> '\"\"')"


def _str(x: str) -> str:  # the string's value, unescaped
    return f"json_extract_string({x}, '$')"


def _amount(x: str) -> str:  # check_amounts: absent, null, or a finite number below 1e12
    return f"({x} is null or {x} = 'null' or abs(try_cast({x}::varchar as double)) < 1e12)"


class _Mode:
    """SQL of one fast kind: `paths` extracted as v[1..], `fast` (a line lands here), `insert`."""

    def __init__(self, table: str, paths: list[str], fast: str, columns: str,
                 python_first: str | None = None, items: bool = False, limits=DEFAULT_LIMITS):
        self.table, self.paths, self.fast, self.columns = table, paths, fast, columns
        # lines DuckDB leaves to Python: lenient forms, and those landing may refuse (guards.py)
        self.to_python = python_first_sql(LENIENT_SQL, limits)
        self.python_first = python_first  # cheap test of lines always left to Python
        self.items = items  # one row per item of v[1] (workers), not per line

    def parsed(self) -> str:
        """CTE `p` (line_no, v) of the lines DuckDB parses (materialised: v is computed once,
        not once per reference in the filter), then `f`, those of them that land here."""
        keep = "" if self.python_first is None else f" and not ({self.python_first})"
        cte = (f"with p as materialized (select line_no, try(json_extract(line, {self.paths!r})) "
               f"as v from _recon_chunk where not {self.to_python}{keep}), ")
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


def _modes(cluster: str, secrets: bool = True, limits=DEFAULT_LIMITS) -> dict[str, _Mode]:
    """The fast kinds' SQL; `secrets`: lines that may hold a secret go to Python (SECRETS_SQL)."""
    v = [f"v[{i}]" for i in range(19)]
    marked = SECRETS_SQL if secrets else "false"
    watch = _Mode(
        "k8s_objects",
        # 1 type, 2 object, 3 cluster, 4 seenAt, 5 kind, 6 x_recon, 7 object.kind,
        # 8 object.metadata.uid (present: metadata is an object), 9 object.metadata.resourceVersion,
        # 10 object.metadata.creationTimestamp (ts_ok)
        ["$.type", "$.object", "$.cluster", "$.seenAt", "$.kind", "$.x_recon", "$.object.kind",
         "$.object.metadata.uid", "$.object.metadata.resourceVersion",
         "$.object.metadata.creationTimestamp"],
        f"v is not null and {v[5]} is null and {v[6]} is null "
        f"and {v[1]} in ('\"ADDED\"', '\"MODIFIED\"', '\"DELETED\"') "
        f"and starts_with({v[2]}, '{{') and {_nonempty(v[7])} and {_nonempty(v[8])} "
        f"and ({v[9]} is null or {v[9]} = 'null' or starts_with({v[9]}, '\"'))",
        f"case when {_nonempty(v[3])} then {_str(v[3])} else '{_q(cluster)}' end as cluster, "
        f"replace({v[1]}, '\"', '') as event_type, {_str(v[7])} as kind, {_str(v[8])} as uid, "
        f"case when starts_with({v[9]}, '\"') then {_str(v[9])} else '' end as resource_version, "
        f"case when starts_with({v[4]}, '\"') then {_str(v[4])} end as seen_at, {v[2]} as doc, "
        f"{ts_ok_sql('$', v[10])} as ts_ok",
        python_first=f"contains(line, 'BOOKMARK') or {marked}", limits=limits)
    # the keys whose presence makes doc_kind() answer something else than a job
    not_job = ["$.kind", "$.x_recon", "$.type", "$.object", "$.items", "$.records", "$.workers",
               "$.pods", "$.endpoints", "$.networkVolumes", "$.gpus"]
    job = _Mode(
        "serverless_jobs",
        # 1 whole doc, 2 id, 3 endpointId, 4 completedAt, 5 delayTime, 6 executionTime,
        # 7..17 absent, 18 submittedAt (ts_ok)
        ["$", "$.id", "$.endpointId", "$.completedAt", "$.delayTime", "$.executionTime",
         *not_job, "$.submittedAt"],
        f"v is not null and starts_with({v[1]}, '{{') and "
        + " and ".join(f"{v[i]} is null" for i in range(7, 7 + len(not_job))) + " and "
        + " and ".join(f"{v[i]} is not null and {v[i]} not in ('null', '\"\"')" for i in (2, 3, 4))
        + f" and ({v[5]} is not null or {v[6]} is not null) "
        f"and {_amount(v[5])} and {_amount(v[6])}",
        f"{v[1]} as doc, {ts_ok_sql('$', v[4], ('$', v[7 + len(not_job)]))} as ts_ok",
        limits=limits)
    not_workers = ["$.kind", "$.type", "$.object", "$.items", "$.records"]
    workers = _Mode(
        "runpod_inventory",
        # 1 workers, 2 x_recon, 3 x_recon.endpoint, 4 x_recon.endpointId, 5 x_recon.pulledAt,
        # 6 workers[0] (an empty list is left to Python), 7.. absent. Without x_recon (the
        # response as the API returns it) or its endpointId, the workers land with no endpoint,
        # as in read_file: staging ties them to one (stg_runpod__worker_endpoints.sql)
        ["$.workers", "$.x_recon", "$.x_recon.endpoint", "$.x_recon.endpointId",
         "$.x_recon.pulledAt", "$.workers[0]", *not_workers],
        "v is not null and "
        + " and ".join(f"{v[i]} is null" for i in range(7, 7 + len(not_workers)))
        + f" and ({v[2]} is null or starts_with({v[2]}, '{{')) and starts_with({v[1]}, '[') "
        f"and {v[6]} is not null "
        f"and ({v[3]} is null or not ends_with({_str(v[3])}, '/health')) "
        f"and ({v[5]} is null or {v[5]} = 'null' or starts_with({v[5]}, '\"'))",
        f"'workers' as inventory_kind, case when {_nonempty(v[4])} then {_str(v[4])} end "
        f"as endpoint_id, "
        f"case when starts_with({v[5]}, '\"') then {_str(v[5])} end as pulled_at",
        python_first=marked if secrets else None, items=True, limits=limits)
    return {"watch": watch, "job": job, "workers": workers}


FAST_KINDS = {"k8s_watch_event": "watch", "serverless_job": "job", "runpod_workers": "workers"}


def _fast_mode(head: bytes, more: bool) -> str | None:
    """The fast path's mode for a file starting with `head`, or None (the Python path).

    Mirrors read_file's decisions: the whole-document parse fails (a second non-blank line
    follows the first), the file is JSON Lines (`decode.looks_like_jsonl`: its first line
    parses, or two of its first lines are whole objects) and its first line that parses is a
    JSON document of a fast kind. A line before it that does not parse goes to the Python
    reader like any other, which quarantines it with its line number.
    """
    if head.startswith(b"\xef\xbb\xbf"):
        return None  # a byte order mark: read_file strips it
    lines, i = [], 0
    while len(lines) < FORMAT_LINES:
        j = head.find(b"\n", i)
        if j < 0:
            if not lines:
                return None  # the first line does not fit in the head: let Python decide
            break
        if head[i:j].strip():
            lines.append(head[i:j])
        i = j + 1
    if not lines or not (head[i:].strip() or more or len(lines) > 1):
        return None  # a single document: read_file's whole-document path
    if not looks_like_jsonl(lines):
        return None
    for line in lines:
        try:
            doc = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        return FAST_KINDS.get(doc_kind(doc))
    return None


def _q(s: str) -> str:
    return s.replace("'", "''")
