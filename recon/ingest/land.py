"""Land every file of an input folder into DuckDB `raw` tables, or quarantine it with a reason.

Each input record ends in exactly one place: a raw table, `raw.quarantine` (with file, locator,
reason and the record itself), or is counted as `skipped` with a reason (watch BOOKMARKs, the
simulator's ground truth, config files). `raw.files` keeps the per-file accounting.
Reloading a file replaces its rows (idempotent); an unchanged file (same sha256) is skipped.

`load_folder` drives the readers beside it: `reader.py` (Python, every format, the reference for
routing and reasons), `jsonl.py` (big JSON Lines files through DuckDB), `lists.py` (big
Kubernetes Lists through DuckDB); `landed.py` knows a landed file again by content and place.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..build.incremental import next_rowid
from ..config import is_config_file
from ..db import begin as _begin
from .jsonl import land_jsonl, row_group_parts
from .landed import DUPLICATE, LandedFiles
from .lists import is_candidate as is_list_candidate
from .lists import land_list, prepare_list
from .raw_tables import (
    TABLES,
    TS_CHECKED,
    TS_OPTIONAL,
    arrow_bad,
    arrow_query,
    arrow_rows,
    ts_ok_sql,
)
from .reader import FileResult, read_file, sha256_of

log = logging.getLogger(__name__)

# size and mtime of each landed file, to skip unchanged files without hashing them again
# and its path relative to the landing root, to know it again in a landing folder moved elsewhere
FILE_STATS_DDL = """create table if not exists raw.file_stats (source_file varchar primary key,
    bytes bigint, mtime_ns bigint, sha256 varchar, rel_path varchar)"""
FILE_STATS_REL = "alter table raw.file_stats add column if not exists rel_path varchar"



def input_files(folder: Path) -> list[Path]:
    files = [p for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.startswith(".")]
    return [p for p in files if not is_config_file(p)]


def _stat_key(p: Path) -> tuple[int, int]:
    st = p.stat()
    return st.st_size, st.st_mtime_ns


def _prepare_ahead(p: Path, display: str, limits=None):
    """In the List thread: a big List's layout (`prepare_list`), else the Python reader's
    FileResult of the file (a big document that is no List, such as a day's serverless billing:
    58k records, ~0.3 s of Python, read while the main thread lands other files)."""
    layout = prepare_list(p)
    return layout if layout is not None else read_file(p, display, limits)


def _read_safely(con, p: Path, display: str, prepared=None, limits=None) -> FileResult:
    """Read one file; a reader that fails outright (corrupt gzip or Parquet, unreadable file)
    quarantines the file with the reason instead of stopping the batch. `prepared`: the file's
    `_prepare_ahead` started in the List thread (its exception is raised here)."""
    try:
        if prepared is not None:
            ahead = prepared.result()
            # land_list gives None for a List an item of which orjson refuses (a lone
            # surrogate): read_file then says which item, as it does for a List not prepared
            return (ahead if isinstance(ahead, FileResult)
                    else land_list(con, p, display, ahead, limits)
                    or read_file(p, display, limits))
        return (land_jsonl(con, p, display, limits) or land_list(con, p, display, None, limits)
                or read_file(p, display, limits))
    except Exception as e:  # noqa: BLE001 - every failure becomes a quarantine reason
        for t in TABLES:
            con.execute(f"delete from raw.{t} where source_file = ?", [display])
        r = FileResult(path=display)
        r.kind = "unreadable"
        r.quarantine("file", 0, f"file could not be read: {type(e).__name__}: {str(e)[:300]}", "")
        return r


def load_folder(con, folder: str | Path, progress=None, transaction: bool = True,
                settle_seconds: float = 0, limits=None,
                source_root: str | None = None, keep=None) -> list[FileResult]:
    """Land every file of `folder`; one transaction, so a killed run leaves the old state.

    With `settle_seconds`, a file modified less than that long ago is still being written (the
    collector appends to the current hour's file): it is not landed now but reported with that
    reason, and a later run lands it whole — so a file never grows after landing, which would
    make incremental staging rebuild in full.

    `limits` (recon.config.Landing, default its defaults): the largest record and the range of
    timestamps landing accepts; a record beyond them is quarantined with the reason.

    A file already landed is skipped when its size and mtime are those recorded when it was
    landed (`raw.file_stats`), else when its sha256 is unchanged; otherwise its rows are
    replaced. Big JSON Lines files land through DuckDB (`land_jsonl`), everything else through
    the Python reader (`read_file`).

    `source_root`: the name of the folder's origin (`s3://BUCKET/PREFIX/`, whose mirror the
    folder is: recon/ingest/mirror.py). Each file is then named by it and its path in the
    folder, in `raw.*` and the quarantine, instead of by its absolute local path.

    `keep(rel_path)`: whether a file (its path under the folder, `/`-separated) is this run's
    input at all; a shard's run lands only its own clusters' `cluster=` folders
    (recon/shards.py). The others are counted in the log, not landed.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"input folder {folder} does not exist")
    files = input_files(folder)
    if keep is not None:
        ours = [p for p in files if keep(p.relative_to(folder).as_posix())]
        if len(ours) < len(files):
            log.info("%d of %d files under %s are other shards' clusters: not landed",
                     len(files) - len(ours), len(files), folder)
        files = ours
    if not files:
        raise ValueError(f"input folder {folder} holds no input files")
    con.execute(FILE_STATS_DDL)
    if not con.execute("select count(*) from duckdb_columns() where schema_name = 'raw' and "
                       "table_name = 'file_stats' and column_name = 'rel_path'").fetchone()[0]:
        con.execute(FILE_STATS_REL)
    known = {r[0]: r[1:] for r in con.execute(
        "select f.source_file, f.sha256, f.kind, f.records_in, f.records_loaded, "
        "f.records_quarantined, f.records_skipped, s.bytes, s.mtime_ns, s.sha256, s.rel_path "
        "from raw.files f left join raw.file_stats s using (source_file)").fetchall()}
    ids = LandedFiles(known)
    root = folder.resolve()

    def name(p: Path) -> str:
        if source_root is None:
            return str(p.resolve())
        return source_root.rstrip("/") + "/" + p.resolve().relative_to(root).as_posix()
    results = []
    # Landed JSON compresses ~10x with zstd (repetitive keys), and forcing it skips DuckDB's
    # per-segment trial of every method: landing and the commit are ~2x faster and the file
    # smaller than with the automatic choice (bench/README.md). In its own transaction the
    # setting is restored after the commit; inside the caller's (transaction=False) it stays on
    # the connection, so that the caller's commit writes the landed rows with it too.
    compression = con.execute("select current_setting('force_compression')").fetchone()[0]
    con.execute("set force_compression = 'zstd'")
    own = _begin(con, transaction)
    ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recon-list")
    try:
        _note_first_rowids(con)
        now_ns = time.time_ns()
        # Big Kubernetes Lists (events.json: one 160 MB document) are scanned for their items
        # ahead, one at a time in a thread, while the other files land, and land last (the
        # target day's landing: bench/README.md).
        prepared = {p: ahead.submit(_prepare_ahead, p, name(p), limits)
                    for p in files if _needs_landing(p, name(p), known, settle_seconds, now_ns)
                    and is_list_candidate(p)}
        order = [p for p in files if p not in prepared] + list(prepared)
        for i, p in enumerate(order):
            display = name(p)
            size, mtime = _stat_key(p)
            old = known.get(display)
            future = _future_warning(display, mtime, settle_seconds, now_ns)
            if _settling(mtime, settle_seconds, now_ns) and _stat_changed(old, size, mtime):
                r = FileResult(path=display, unchanged=old is not None)
                r.kind = "settling"
                r.skip_reason = (f"modified {(now_ns - mtime) / 1e9:.0f} s ago (settle time "
                                 f"{settle_seconds:g} s): still being written, landed by a later run")
                if old is not None:  # what is landed of it stays as it was
                    r.kind, r.records_in, r.loaded, r.quarantined, r.skipped = old[1:6]
                log.info("%s: %s", display, r.skip_reason)
                results.append(r)
                continue
            rel = p.resolve().relative_to(root).as_posix()
            moved = None if old is not None else ids.moved(rel, size, mtime, p, sha256_of)
            if moved is not None:  # the landing folder moved: this file is landed already
                src, digest = moved
                r = FileResult(path=display, unchanged=True)
                r.kind, r.records_in, r.loaded, r.quarantined, r.skipped = known[src][1:6]
                if known[src][6:8] != (size, mtime):
                    _record_stat(con, src, size, mtime, digest, rel)
                results.append(r)
                continue
            same_stat = old is not None and old[6:9] == (size, mtime, old[0])
            # a new file is hashed while it is read (below); a known one first, to skip it
            digest = old[0] if same_stat else None if old is None else sha256_of(p)
            if old is not None and old[0] == digest and ids.still_valid(old, display):
                r = FileResult(path=display, unchanged=True)
                r.kind, r.records_in, r.loaded, r.quarantined, r.skipped = old[1:6]
                if not same_stat or old[9] != rel:
                    _record_stat(con, display, size, mtime, digest, rel)
                results.append(r)
                continue
            if old is not None:  # a changed file: its old rows go (a new file has none)
                for t in TABLES:
                    con.execute(f"delete from raw.{t} where source_file = ?", [display])
                con.execute("delete from raw.quarantine where source_file = ?", [display])
                con.execute("delete from raw.files where source_file = ?", [display])
            if digest is None and ids.may_be_a_copy(size):
                digest = sha256_of(p)
            if (original := ids.copy_of(digest, display)) is not None:
                results.append(_record_duplicate(con, display, original, digest, size, mtime,
                                                 rel, ids.records_in.get(original) or 0))
                continue
            r = _read_safely(con, p, display, prepared.pop(p, None), limits)
            digest = digest or r.sha256 or sha256_of(p)
            for t in TABLES:
                if r.rows[t]:
                    _insert_rows(con, t, arrow_rows(r, t))
            if r.bad:
                arrow_query(con, "_recon_bad", arrow_bad(r),
                            "insert into raw.quarantine by name select * from _recon_bad")
            con.execute("insert into raw.files values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [display, r.kind, digest, size, r.records_in, r.loaded,
                         r.quarantined, r.skipped, r.skip_reason])
            con.execute("insert into _recon_landed_files select txid_current(), ?", [display])
            _record_stat(con, display, size, mtime, digest, rel)
            ids.landed(display, digest, size, r.records_in)
            r.rows = {}
            if future:
                log.info("%s", future)
                r.warnings.append(future)
            results.append(r)
            if progress:
                progress(i + 1, len(files), p.name)
        if own:
            con.execute("commit")
    except BaseException:
        if own:
            con.execute("rollback")
        raise
    finally:
        ahead.shutdown(wait=True, cancel_futures=True)
        if own:
            con.execute(f"set force_compression = '{compression}'")
    rank = {name(p): i for i, p in enumerate(files)}
    results.sort(key=lambda r: rank.get(r.path, len(rank)))
    return results


def _insert_rows(con, table: str, tbl) -> None:
    """Insert the Arrow rows `tbl` into raw.<table>, in `row_group_parts` (a checkpoint does not
    have to rewrite row groups to merge them), with the same `ts_ok` as the DuckDB paths."""
    opt = (TS_OPTIONAL[table], "json(doc)") if table in TS_OPTIONAL else None
    ts = (f", {ts_ok_sql(TS_CHECKED[table], 'json(doc)', opt)} as ts_ok"
          if table in TS_CHECKED else "")
    for a, b in row_group_parts(tbl.num_rows):
        arrow_query(con, "_recon_rows", tbl.slice(a, b - a),
                    f"insert into raw.{table} by name "
                    f"select * replace (json(doc) as doc){ts} from _recon_rows")


def _note_first_rowids(con) -> None:
    """Before this transaction lands anything: each raw table's next rowid, and (as files land)
    which files it landed. Rows appended later have rowids at or above it, so staging finds the
    new files' rows without looking for their first row in every row of history (0.1-0.3 s a
    table on a 30-day warehouse of the 500-node fleet). Only this transaction's own landings are
    described: `StagingState` uses it when every file it stages was landed here, and finds the
    first rowid the slow way otherwise. (Temporary tables: this connection's, rolled back with
    the transaction.)"""
    con.execute("create temp table if not exists _recon_first_rowids "
                "(txid bigint, tbl varchar, first_rowid bigint)")
    con.execute("create temp table if not exists _recon_landed_files (txid bigint, source_file varchar)")
    if con.execute("select count(*) from _recon_first_rowids where txid = txid_current()"
                   ).fetchone()[0]:
        return  # a second landing in one transaction: the first one's bounds hold for both
    con.execute("insert into _recon_first_rowids " + " union all ".join(
        f"select txid_current(), '{t}', {next_rowid(f'raw.{t}')}" for t in TABLES))


# SQL: the files this transaction landed (`_note_first_rowids` makes the table)
LANDED_HERE = "select source_file from _recon_landed_files where txid = txid_current()"


def first_rowids(con) -> dict[str, int]:
    """{raw table: the first rowid this transaction landed}; {} when it landed nothing through
    `load_folder` (every row is then to be read)."""
    if not con.execute("select count(*) from duckdb_tables() where temporary and "
                       "table_name = '_recon_first_rowids'").fetchone()[0]:
        return {}
    return dict(con.execute("select tbl, first_rowid from _recon_first_rowids "
                            "where txid = txid_current()").fetchall())


def note_landed(con, files_sql: str) -> None:
    """Rows added to raw.* in this transaction outside `load_folder` (a shard's rows taken from
    the account's warehouse): their files count as landed here, so that staging finds their
    rows past the first rowids, as for files `load_folder` landed. `files_sql` selects
    `source_file`."""
    con.execute(f"insert into _recon_landed_files select txid_current(), source_file "
                f"from ({files_sql})")


def _settling(mtime: int, settle_seconds: float, now_ns: int) -> bool:
    """Modified less than `settle_seconds` ago: still being written. A modification time in
    the future (a clock set wrong, a file copied from a host ahead of this one) says nothing
    about when the file was last written: waiting for it would hold the file back until this
    clock passes it, days perhaps, so it counts as settled (and `_future_warning` says so)."""
    return bool(settle_seconds) and 0 <= now_ns - mtime < settle_seconds * 1e9


def _future_warning(display: str, mtime: int, settle_seconds: float, now_ns: int) -> str | None:
    """With a settle time, what to say of a file modified in the future (None: it is not)."""
    if not settle_seconds or mtime <= now_ns:
        return None
    ahead = (mtime - now_ns) / 1e9
    return (f"{display}: modified {ahead:.0f} s in the future (this host's clock or the "
            f"writer's is wrong); taken as settled and landed without waiting "
            f"{settle_seconds:g} s")


def _stat_changed(old, size: int, mtime: int) -> bool:
    """New, or its size/mtime differ from those recorded when it was landed."""
    return old is None or old[6:8] != (size, mtime)


def _needs_landing(p: Path, display: str, known: dict, settle_seconds: float,
                   now_ns: int) -> bool:
    """Is `p` new or changed by size/mtime, and settled? (load_folder decides for sure.)"""
    size, mtime = _stat_key(p)
    return (not _settling(mtime, settle_seconds, now_ns)
            and _stat_changed(known.get(display), size, mtime))


def _record_stat(con, display: str, size: int, mtime: int, digest: str, rel: str) -> None:
    con.execute("delete from raw.file_stats where source_file = ?", [display])
    con.execute("insert into raw.file_stats values (?, ?, ?, ?, ?)",
                [display, size, mtime, digest, rel])


def _record_duplicate(con, display: str, original: str, digest: str, size: int, mtime: int,
                      rel: str, records: int) -> FileResult:
    """A byte-identical copy of `original`: recorded, its records counted as skipped, none
    loaded (they are landed once, as the original's)."""
    r = FileResult(path=display, kind=DUPLICATE, records_in=records, skipped=records,
                   skip_reason=f"a byte-identical copy of {original}: its records are landed "
                               "once, from that file")
    con.execute("insert into raw.files values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [display, r.kind, digest, size, records, 0, 0, records, r.skip_reason])
    con.execute("insert into _recon_landed_files select txid_current(), ?", [display])
    _record_stat(con, display, size, mtime, digest, rel)
    log.info("%s: %s", display, r.skip_reason)
    return r
