"""Big Kubernetes List documents landed through DuckDB (`land_list`), a chunk of items at a time."""

from __future__ import annotations

from pathlib import Path

import orjson

from . import jsonl
from .classify import doc_kind, list_item_kind, with_list_kind
from .guards import DEFAULT as DEFAULT_LIMITS
from .guards import python_first_sql
from .jsonl import _is_gzip, marked_bytes, row_group_parts
from .jsonl_sql import LENIENT_SQL, SECRETS_SQL, _fast_mode, _nonempty, _q, _str
from .list_scan import ListLayout, scan_list
from .raw_tables import arrow_query, ts_ok_sql
from .reader import FileResult, _cluster_of, _guard, _k8s

# ------------------------------------------------------------------ fast path: big Kubernetes lists
#
# `kubectl get events -A -o json` of a busy cluster is one JSON document of 100+ MB; orjson plus a
# Python loop over its items costs ~20 us an item, and reading it whole costs several times its
# size in memory (the first version of this path: ~8x, a 641 MB List peaked at 5.4 GB). Instead:
#
# 1. `prepare_list` (in a thread, while other files land) scans the file once, in chunks, for
#    its structure (list_scan.py): where each item of the top-level `items` array starts and
#    ends, the document without its items (the "skeleton"), the sha256. It goes on only when
#    read_file would take the whole-document path to a Kubernetes List: the skeleton parses
#    (orjson: it rejects the lenient forms below, and reads a value there only to route the
#    file) and doc_kind calls it a List.
# 2. `land_list` re-reads the items a chunk at a time (FAST_CHUNK bytes; the file is in the page
#    cache) and hands each chunk to DuckDB zero-copy, one row per item, as the JSON Lines path
#    does with lines: the separators between items are blanked, so each item's text runs to
#    the next one's start. Items that are plainly a Kubernetes object (a non-empty string kind
#    and metadata.uid) and plainly valid (DuckDB parses them, no lenient form) land in one
#    INSERT; every other item goes to _k8s in Python with its index, as before.
# 3. An item orjson rejects makes the whole document one that read_file does not read as a
#    List: what this file landed is deleted and read_file decides (a rare case: a broken file).
#
# Memory is the reading chunk, DuckDB's work on it, and 16 bytes an item for the offsets.

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


def land_list(con, path: Path, display: str, prepared=None, limits=None) -> FileResult | None:
    """Land a big Kubernetes List file through DuckDB; None: use read_file instead.

    `prepared`: the ListLayout of `prepare_list(path)` made earlier (in a thread, while other
    files landed); without it the file is prepared now.
    """
    layout = prepared if prepared is not None else prepare_list(path)
    if layout is None:
        return None
    return _insert(con, path, display, layout, limits or DEFAULT_LIMITS)


def prepare_list(path: Path) -> ListLayout | None:
    """Scan a big Kubernetes List for its items (no DuckDB: it may run in another thread while
    the caller's connection lands other files). None: not a List this path takes."""
    if path.stat().st_size < LIST_MIN_BYTES or _is_gzip(path):
        return None
    layout = scan_list(path, chunk_bytes=jsonl.FAST_CHUNK)
    if layout is None:
        return None  # not plainly one object with an items array: the Python reader decides
    try:
        top = orjson.loads(layout.skeleton)
    except orjson.JSONDecodeError:
        return None  # orjson would reject the document: the Python reader says why
    return layout if doc_kind(top) == "k8s_list" else None  # else read_file's other cases


def _insert(con, path: Path, display: str, layout: ListLayout, limits) -> FileResult | None:
    cluster = _cluster_of(display, None)
    res = FileResult(path=display, kind="k8s_list", sha256=layout.sha256, limits=limits)
    top = orjson.loads(layout.skeleton)
    typed = with_list_kind(top)
    # A typed List's items lack kind and apiVersion (`GET /api/v1/nodes`: a NodeList): such an
    # item lands here with the two the List implies put first, as read_file's with_list_kind
    # does (an item with only one of them goes to Python, which keeps the one it has)
    item_kind, version = list_item_kind(top), top.get("apiVersion")
    typed_list = item_kind is not None and isinstance(version, str)
    v = ("try(json_extract(line, ['$', '$.kind', '$.metadata.uid', '$.metadata.resourceVersion', "
         "'$.metadata.creationTimestamp'" + (", '$.apiVersion'" if typed_list else "") + "]))")
    if typed_list:
        head = _q(orjson.dumps({"apiVersion": version, "kind": item_kind}).decode()[:-1] + ",")
        has_kind = f"({_nonempty('v[2]')} or (v[2] is null and v[6] is null))"
        kind = f"coalesce({_str('v[2]')}, '{_q(item_kind)}')"
        doc = f"case when v[2] is null then '{head}' || substr(v[1], 2) else v[1] end"
    else:
        has_kind, kind, doc = _nonempty("v[2]"), _str("v[2]"), "v[1]"
    # items that may hold a secret go to Python (_k8s stores them redacted), tested only in a
    # chunk whose bytes hold a marker at all (jsonl.SECRETS_SQL): [without, with] the test
    inserts, rests = [], []
    for secrets in ("false", SECRETS_SQL):
        parsed = (f"with p as materialized (select line_no, {v} as v from _recon_chunk "
                  f"where not {python_first_sql(LENIENT_SQL, limits)} and not {secrets}), "
                  "f as (select line_no, v from p where v is not null and starts_with(v[1], '{') "
                  f"and {has_kind} and {_nonempty('v[3]')} "
                  "and (v[4] is null or v[4] = 'null' or starts_with(v[4], '\"'))) ")
        inserts.append(f"insert into raw.k8s_objects by name {parsed}"
                       f"select '{_q(display)}' as source_file, line_no as record_no, "
                       f"'items[' || line_no || ']' as locator, '{_q(cluster)}' as cluster, "
                       f"'LISTED' as event_type, {kind} as kind, {_str('v[3]')} as uid, "
                       f"case when starts_with(v[4], '\"') then {_str('v[4]')} else '' end "
                       f"as resource_version, null as seen_at, {doc} as doc, "
                       f"{ts_ok_sql('$', 'v[5]')} as ts_ok from f")
        rests.append(f"{parsed}select line_no, line from _recon_chunk anti join f "
                     f"using (line_no) order by line_no")
    n = 0
    with jsonl.small_write_buffer(con), open(path, "rb") as f:
        for table, marked in _item_chunks(f, layout.items):
            insert, rest = inserts[marked], rests[marked]
            slow = []
            # in row_group_parts: the rest beyond whole row groups first, appended to the
            # table's last, partly filled row group (the files landed before), then whole row
            # groups' worth in one INSERT (tests/test_row_groups.py)
            for a, b in row_group_parts(table.num_rows):
                part = table.slice(a, b - a)
                landed = arrow_query(con, "_recon_chunk", part, insert).fetchall()[0][0]
                if landed != part.num_rows:
                    slow += arrow_query(con, "_recon_chunk", part, rest).fetchall()
                n += landed
            for i, text in slow:  # (an item's text runs to the next one: trailing blanks)
                loc = f"items[{i}]"
                try:
                    item = orjson.loads(text)
                except orjson.JSONDecodeError:
                    # orjson rejects the document: read_file says what it is
                    con.execute("delete from raw.k8s_objects where source_file = ?", [display])
                    return None
                _guard(res, lambda it=item, i=i, loc=loc: _k8s(res, typed(it), loc, i, "LISTED",
                                                               cluster), loc, i, item)
    res.records_in += n
    res.loaded += n
    return res


def _item_chunks(f, items):
    """Yield, for chunks of the List's items of at most FAST_CHUNK bytes (at least one item),
    an Arrow table `line_no, line` of their texts, line_no = the item's index, and 1 if the
    chunk's bytes hold a marker of a possible secret (else 0). The strings are views of one
    reading buffer, valid until the next chunk."""
    import numpy as np

    starts, ends = items[:, 0], items[:, 1]
    buf = bytearray()
    a = 0
    while a < len(items):
        b = max(a + 1, int(np.searchsorted(ends, starts[a] + jsonl.FAST_CHUNK, side="right")))
        base, size = int(starts[a]), int(ends[b - 1] - starts[a])
        if len(buf) < size:
            buf = bytearray(max(size, jsonl.FAST_CHUNK))
        view = memoryview(buf)[:size]
        f.seek(base)
        if f.readinto(view) != size:
            raise OSError(f"{f.name}: file changed while it was landed (short read)")
        arr = np.frombuffer(view, dtype=np.uint8)
        s, e = starts[a:b] - base, ends[a:b] - base
        # blank what lies between items (whitespace and one comma): item k's text then runs to
        # item k+1's start, trailing whitespace only, and the items are contiguous for Arrow
        gaps = s[1:] - e[:-1]
        if len(gaps) and gaps.sum():
            at = np.repeat(e[:-1] - np.cumsum(gaps) + gaps, gaps) + np.arange(int(gaps.sum()))
            arr[at] = 32
        yield (jsonl.lines_table(view, np.append(s, size), np.arange(a, b, dtype=np.int64),
                                 split=True), int(marked_bytes(buf, size)))
        a = b
