"""Big Kubernetes List documents landed through DuckDB (`land_list`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson

from .jsonl import (
    LENIENT_RES,
    _fast_mode,
    _is_gzip,
    _nonempty,
    _q,
    _str,
    row_group_parts,
    small_write_buffer,
)
from .reader import FileResult, _cluster_of, _guard, _k8s

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


def is_candidate(path: Path) -> bool:
    """Might land_list take this file? Cheap: its size, no gzip magic, a leading `{`, and not
    JSON Lines that land_jsonl takes. A load prepares candidates ahead, in a thread
    (`prepare_list`), while other files land."""
    if path.stat().st_size < LIST_MIN_BYTES:
        return False
    with open(path, "rb") as f:
        head = f.read(1 << 20)
        more = bool(f.read(1))
    return (head[:2] != b"\x1f\x8b" and head.lstrip()[:1] == b"{"
            and _fast_mode(head, more) is None)


def land_list(con, path: Path, display: str, prepared=None) -> FileResult | None:
    """Land a big Kubernetes List file through DuckDB; None: use read_file instead.

    `prepared`: a concurrent.futures.Future of `prepare_list(cursor, path, display)` started
    earlier (its result, or its exception, is taken here); without it the file is prepared now.
    """
    got = prepared.result() if prepared is not None else prepare_list(con.cursor(), path, display)
    if got is None:
        return None
    digest, items = got
    return _insert(con, display, digest, items)


def prepare_list(cur, path: Path, display: str):
    """Parse a big Kubernetes List on `cur` (a cursor of its own: it may run in another thread
    while the caller's connection lands other files, and an error here cannot abort the
    caller's transaction). Returns (sha256, Arrow table of its items) or None: not a List this
    path takes. Closes `cur`."""
    import duckdb

    try:
        return _prepare(cur, path, display)
    except duckdb.Error:
        return None
    finally:
        cur.close()


def _prepare(cur, path: Path, display: str):
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
        order by i""").to_arrow_table().combine_chunks()  # see _insert
    cur.execute("drop table _recon_list")
    return digest, items


def _insert(con, display: str, digest: str, items) -> FileResult:
    cluster = _cluster_of(display, None)
    res = FileResult(path=display, kind="k8s_list", sha256=digest)
    n = 0
    # in row_group_parts, from one contiguous Arrow chunk (combined in _prepare, off the main
    # thread): DuckDB returns the items in batches of 122,880, and a part starting inside one
    # was scanned as two batches that a two-thread INSERT wrote as two row groups, one short
    # (2 runs in 10 of tests/test_row_groups.py)
    with small_write_buffer(con):
        for a, b in row_group_parts(items.num_rows):
            con.register("_recon_items", items.slice(a, b - a))
            try:
                n += con.execute(
                    f"insert into raw.k8s_objects by name select '{_q(display)}' as source_file, "
                    f"idx as record_no, 'items[' || idx || ']' as locator, '{_q(cluster)}' as "
                    "cluster, 'LISTED' as event_type, kind, uid, resource_version, null as "
                    "seen_at, json(item) as doc from _recon_items where fast").fetchone()[0]
            finally:
                con.unregister("_recon_items")
    con.register("_recon_items", items)
    try:
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
