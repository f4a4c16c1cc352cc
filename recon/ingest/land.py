"""The DuckDB warehouse: raw landing tables, config tables, and the SQL models in `sql/`.

Each file `sql/<layer>/<name>.sql` holds one SELECT and builds the table `<schema>.<name>`
(layer staging → schema staging, intermediate → intermediate, marts → marts, checks → checks).
A staging model with an `-- incremental: key (…) order (…)` header yields every row; the build
keeps one per key, the first in its order: the same rule for full builds
(`recon.incremental.create_deduped`) and merges (`StagingState.merge`).
"""

from __future__ import annotations

import logging
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from datetime import date
from pathlib import Path

import duckdb

from .config import Config, is_config_file
from .guard import busy
from .incremental import StagingState, create_deduped, next_rowid
from .ingest.load import (
    TABLES,
    TS_CHECKED,
    TS_OPTIONAL,
    FileResult,
    arrow_bad,
    arrow_query,
    arrow_rows,
    is_list_candidate,
    land_jsonl,
    land_list,
    prepare_list,
    read_file,
    row_group_parts,
    sha256_of,
    ts_ok_sql,
)
from .landed import DUPLICATE, LandedFiles

log = logging.getLogger(__name__)
SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
LAYERS = ("staging", "scope", "intermediate", "marts", "checks")

RAW_DDL = [
    "create schema if not exists raw",
    "create schema if not exists config",
    *[f"create table if not exists raw.{t} (source_file varchar, record_no bigint, locator varchar, "
      + "".join(f"{c} varchar, " for c in cols) + "doc json"
      + (", ts_ok boolean" if t in TS_CHECKED else "") + ")" for t, cols in TABLES.items()],
    # a warehouse made before ts_ok: its rows have none (NULL), and staging checks them
    *[f"alter table raw.{t} add column if not exists ts_ok boolean" for t in TS_CHECKED],
    """create table if not exists raw.quarantine (source_file varchar, record_no bigint,
        locator varchar, reason varchar, record varchar)""",
    """create table if not exists raw.files (source_file varchar primary key, kind varchar,
        sha256 varchar, bytes bigint, records_in bigint, records_loaded bigint,
        records_quarantined bigint, records_skipped bigint, skip_reason varchar)""",
]


# A daily run with history in the warehouse (the usual case) peaks at 1.83 GiB RSS with it, and
# at 2.04 GiB with 1.5GB (500 nodes, day 4 of 4); a first day peaks at 1.6 GiB either way, ~0.3 s
# slower than with 1.5GB (bench/README.md, session 4).
DEFAULT_MEMORY_LIMIT = "1.25GB"
WRITE_BUFFER_ROW_GROUPS = 1  # DuckDB's default: 5

# size and mtime of each landed file, to skip unchanged files without hashing them again
# and its path relative to the landing root, to know it again in a landing folder moved elsewhere
FILE_STATS_DDL = """create table if not exists raw.file_stats (source_file varchar primary key,
    bytes bigint, mtime_ns bigint, sha256 varchar, rel_path varchar)"""
FILE_STATS_REL = "alter table raw.file_stats add column if not exists rel_path varchar"


SCHEMAS = ("raw", "config", "meta", "staging", "scope", "intermediate", "marts", "checks")


def connect(path: str | Path | None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    if path is not None and Path(path).stem.lower() in SCHEMAS:
        # DuckDB names the catalog after the file: `raw.duckdb` makes every `raw.x` ambiguous
        raise ValueError(f"{path}: a warehouse file may not be named after one of its schemas "
                         f"({', '.join(SCHEMAS)}); use e.g. recon.duckdb")
    if path is not None and not read_only:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        con = duckdb.connect(str(path) if path else ":memory:", read_only=read_only)
    except duckdb.IOException as e:
        if (locked := busy(e, path)) is not None:
            raise locked from None  # DuckDB's message and a traceback of 39 lines before
        raise
    con.execute("set TimeZone = 'UTC'")
    con.execute("set enable_progress_bar = false")
    threads = os.environ.get("RECON_THREADS")
    if threads:
        con.execute(f"set threads = {int(threads)}")
    # DuckDB's own default is 80 % of RAM; a daily job sharing a machine gets a bound (it spills
    # to disk beyond it). RECON_MEMORY_LIMIT=8GB raises it, =0 leaves DuckDB's default.
    limit = os.environ.get("RECON_MEMORY_LIMIT", DEFAULT_MEMORY_LIMIT).strip()
    if limit and limit != "0":
        if not re.fullmatch(r"\d+(\.\d+)?\s*[KMGT]i?B", limit, re.I):
            raise ValueError(f"RECON_MEMORY_LIMIT={limit!r}: expected a size such as 1GB or 512MiB")
        con.execute(f"set memory_limit = '{limit}'")
    if not read_only:
        # A bulk append writes each row group as it fills instead of buffering five: the
        # 500-node day peaks ~90 MB lower (1,550-1,580 against 1,640-1,680 MiB in 10 interleaved
        # pairs) and landing leaves ~0.2 s less for the commit to write on one thread (0.37-0.39
        # against 0.56-0.63 s); the whole run's time moved within the noise (bench/README.md,
        # session 12)
        con.execute(f"set write_buffer_row_group_count = {WRITE_BUFFER_ROW_GROUPS}")
        for stmt in RAW_DDL:
            con.execute(stmt)
    return con


def input_files(folder: Path) -> list[Path]:
    files = [p for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.startswith(".")]
    return [p for p in files if not is_config_file(p)]


def _stat_key(p: Path) -> tuple[int, int]:
    st = p.stat()
    return st.st_size, st.st_mtime_ns


def _begin(con, own: bool) -> bool:
    """Begin a transaction when this call owns it (`own`); else the caller's commits for us."""
    if own:
        con.execute("begin transaction")
    return own


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
                settle_seconds: float = 0, limits=None) -> list[FileResult]:
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
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"input folder {folder} does not exist")
    files = input_files(folder)
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
        # target day's landing: bench/README.md, sessions 4 and 9).
        prepared = {p: ahead.submit(_prepare_ahead, p, str(p.resolve()), limits)
                    for p in files if _needs_landing(p, known, settle_seconds, now_ns)
                    and is_list_candidate(p)}
        order = [p for p in files if p not in prepared] + list(prepared)
        for i, p in enumerate(order):
            display = str(p.resolve())
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
            if old is not None and old[0] == digest and ids.still_valid(old):
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
    rank = {str(p.resolve()): i for i, p in enumerate(files)}
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


def _needs_landing(p: Path, known: dict, settle_seconds: float, now_ns: int) -> bool:
    """Is `p` new or changed by size/mtime, and settled? (load_folder decides for sure.)"""
    size, mtime = _stat_key(p)
    return (not _settling(mtime, settle_seconds, now_ns)
            and _stat_changed(known.get(str(p.resolve())), size, mtime))


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


def write_config(con, cfg: Config, day_from: date | None, day_to: date | None) -> None:
    con.execute("create or replace table config.settings (name varchar primary key, value varchar)")
    settings = {**asdict(cfg.thresholds), **asdict(cfg.mapping),
                "day_from": day_from.isoformat() if day_from else "0001-01-01",
                "day_to": day_to.isoformat() if day_to else "9999-12-31"}
    con.executemany("insert into config.settings values (?, ?)",
                    [(k, str(v)) for k, v in settings.items()])
    con.execute("""create or replace table config.rates (rate_kind varchar, match_key varchar,
                   usd decimal(38, 12), valid_from date, valid_to date)""")
    r = cfg.rates
    rows = [("gpu_per_hour", k, v) for k, v in r.gpu_per_hour.items()]
    rows += [("pod_per_hour", k, v) for k, v in r.pod_per_hour.items()]
    rows += [("serverless_per_second", k, v) for k, v in r.serverless_per_second.items()]
    for name in ("disk_running_per_gb_month", "volume_stopped_per_gb_month",
                 "network_volume_per_gb_month"):
        if getattr(r, name) is not None:
            rows.append((name, "*", getattr(r, name)))
    rows = [(*r, None, None) for r in rows]
    rows += [(e.rate_kind, e.match_key, e.usd, e.valid_from, e.valid_to) for e in cfg.rate_card]
    if rows:
        # five lists unnested in one statement: executemany took 1 s for 2,500 serverless rates
        # (and pyarrow's import alone 0.2 s on runs that land nothing through it)
        cols = list(zip(*rows))
        text = lambda xs: [None if v is None else str(v) for v in xs]
        con.execute("insert into config.rates select unnest($1), unnest($2), "
                    "unnest($3)::decimal(38, 12), unnest($4)::date, unnest($5)::date",
                    [list(cols[0]), list(cols[1]), text(cols[2]), text(cols[3]), text(cols[4])])
    con.execute("""create or replace table config.savings_plans (plan_id varchar, gpu_type varchar,
                   gpu_count bigint, usd_per_gpu_hour decimal(38, 12), start_day date, end_day date,
                   upfront_usd decimal(38, 12))""")
    if cfg.savings_plans:
        con.executemany("insert into config.savings_plans values (?, ?, ?, ?, ?, ?, ?)",
                        [(sp.plan_id, sp.gpu_type, sp.gpu_count, sp.usd_per_gpu_hour, sp.start,
                          sp.end, sp.upfront_usd) for sp in cfg.savings_plans])
    con.execute("""create or replace macro cfg(n) as
                   (select value from config.settings where name = n)""")
    con.execute("""create or replace macro cfg_int(n) as
                   (select value::bigint from config.settings where name = n)""")
    # seconds in a finding's message: 86400.000 -> 86400, 688.580 -> 688.58
    con.execute(r"""create or replace macro secs_text(x) as
                   regexp_replace(regexp_replace(x::varchar, '(\.[0-9]*[1-9])0+$', '\1'),
                                  '\.0+$', '')""")


def sql_models() -> list[tuple[str, str, Path]]:
    """Every model, layer by layer; inside a layer, a model comes after those it reads."""
    out = []
    for layer in LAYERS:
        models = {p.stem: p for p in sorted((SQL_DIR / layer).glob("*.sql"))}
        # references in code, not in comments (a comment may name the model its rows go to)
        code = {n: re.sub(r"--[^\n]*", "", p.read_text()) for n, p in models.items()}
        deps = {n: {m for m in models if m != n and re.search(rf"\b{layer}\.{m}\b", code[n])}
                for n in models}
        done: list[str] = []
        while len(done) < len(models):
            ready = [n for n in models if n not in done and deps[n] <= set(done)]
            if not ready:
                raise RuntimeError(f"sql/{layer}: circular references among {sorted(set(models) - set(done))}")
            done.extend(ready)
        out.extend((layer, n, models[n]) for n in done)
    return out


def _columns(con, schema: str, table: str) -> set[str]:
    return {r[0] for r in con.execute(
        "select column_name from information_schema.columns where table_schema = ? "
        "and table_name = ?", [schema, table]).fetchall()}


WINDOW = re.compile(r"^-- window: key \((?P<key>[^)]*)\) where (?P<where>.*)$", re.M)
SCOPE_BEFORE = re.compile(r"^-- scope: before\b", re.M)
# a scope model that its readers read as a view (evaluated by each) instead of a copy
SCOPE_VIEW = re.compile(r"^-- scope: view\b", re.MULTILINE)


def build_order(windowed: bool) -> list[tuple[str, str, Path]]:
    """The models a run builds, in order. A windowed run builds sql/scope/ after staging (and
    after the intermediate models marked `-- scope: before`, which the scope reads); a full run
    skips sql/scope/."""
    models = sql_models()
    if not windowed:
        return [m for m in models if m[0] != "scope"]
    before = [m for m in models if m[0] == "intermediate" and SCOPE_BEFORE.search(m[2].read_text())]
    rest = [m for m in models if m[0] not in ("staging", "scope") and m not in before]
    return ([m for m in models if m[0] == "staging"] + before
            + [m for m in models if m[0] == "scope"] + rest)


def build(con, timings: dict | None = None, model_timings: dict | None = None,
          transaction: bool = True, on_model=None) -> None:
    """Build staging → intermediate → marts → checks from sql/, in one transaction.

    Staging is incremental (`recon.incremental`). A windowed run (config day_from/day_to, from
    `--from/--to`) builds sql/scope/ — staging cut to what the window's days depend on — and
    the intermediate models and marts read that (temporary table `scope__<model>`) instead of
    `staging.<model>`; marts with a `day` column then replace only the window's days, and a mart
    with a `-- window: key (…) where …` header replaces only the rows the predicate selects.
    Intermediate tables hold the last run's scope.

    `timings` gets seconds per layer; `model_timings` (optional) seconds per model, keyed
    `<layer>.<name>` (the benchmark harness reads it, e.g. `marts.findings`). `on_model(layer,
    name)` is called before each model is built (progress).
    """

    windowed = con.execute("select cfg('day_from') <> '0001-01-01' or cfg('day_to') <> '9999-12-31'"
                           ).fetchone()[0]
    order = build_order(windowed)
    scoped = {n for layer, n, _ in order if layer == "scope"}
    decided = False
    # The models' tables need no particular row order (every reader that shows rows orders
    # them). Without it, DuckDB writes a big CREATE TABLE AS from every thread as the rows come,
    # instead of leaving row groups for the commit to write on one thread: the target day's
    # commit takes ~0.65 s less (bench/README.md, session 4).
    keep_order = con.execute("select current_setting('preserve_insertion_order')").fetchone()[0]
    con.execute("set preserve_insertion_order = false")
    own = _begin(con, transaction)
    failed = False
    try:
        for layer in LAYERS:
            con.execute(f"create schema if not exists {layer}")
        con.execute("drop schema if exists scope cascade")  # (scope tables are temporary now)
        bodies = {p: p.read_text(encoding="utf-8").strip().rstrip(";") for _, _, p in order}
        staged = StagingState(con, {n: bodies[p] for layer, n, p in order if layer == "staging"})
        last_staging = [n for layer, n, _ in order if layer == "staging"][-1]
        existing = {r[0] for r in con.execute(
            "select table_name from information_schema.tables where table_schema = 'staging'"
        ).fetchall()}
        for layer, name, path in order:
            t0 = time.perf_counter()
            if layer == "scope" and not decided:
                decided = True
                if not _history_before_window(con):
                    scoped.clear()  # all data lies in the window's reach: the scope would be a copy
                else:
                    staged.ensure_bounds()
            if layer == "scope" and not scoped:
                continue
            if on_model is not None:
                on_model(layer, name)
            body = bodies[path]
            if layer == "scope":
                body = re.sub(r"\bscope\.([a-z0-9_]+)\b", r"scope__\1", body)
            elif windowed and layer in ("intermediate", "marts") and not SCOPE_BEFORE.search(body):
                body = re.sub(r"\bstaging\.([a-z0-9_]+)\b",
                              lambda m: f"scope__{m.group(1)}" if m.group(1) in scoped else m.group(0),
                              body)
            try:
                _build_one(con, staged, layer, name, body, name in existing, windowed)
            except duckdb.Error as e:
                raise RuntimeError(f"{path.relative_to(SQL_DIR.parent)}: {e}") from None
            dt = time.perf_counter() - t0
            if timings is not None:
                timings[layer] = timings.get(layer, 0.0) + dt
            if model_timings is not None:
                model_timings[f"{layer}.{name}"] = dt
            if layer == "staging" and name == last_staging:
                staged.finish()
        if own:
            con.execute("commit")
    except BaseException:
        failed = True
        if own:
            con.execute("rollback")
        raise
    finally:
        try:
            con.execute(f"set preserve_insertion_order = {'true' if keep_order else 'false'}")
        except duckdb.Error:
            # a failed model aborts the caller's transaction, and any statement then raises
            # "Current transaction is aborted": that would hide the error that names the model
            if not failed:
                raise


def _history_before_window(con) -> bool:
    """Does any staged record lie before the scope's reach (the window's first day − 1)?

    One `limit 1` probe a table: row-group statistics skip the days after it (a min() over
    every row of history took 0.4 s on a 30-day warehouse of the 500-node fleet)."""
    reach = con.execute("select (cfg('day_from')::date::timestamptz - interval 1 day)::varchar"
                        ).fetchone()[0]
    probes = " union all ".join(
        f"(select 1 from staging.{table} where {col} < '{reach}'::timestamptz limit 1)"
        for table, col in (
            ("stg_k8s__pod_life", "created_at"), ("stg_runpod__bill_lines", "bucket_start"),
            ("stg_runpod__pod_billing", "bucket_start"), ("stg_focus__charges", "charge_start"),
            ("stg_runpod__jobs", "completed_at"), ("stg_k8s__events", "first_at")))
    return con.execute(f"select count(*) > 0 from ({probes})").fetchone()[0]


def _build_one(con, staged: StagingState, layer: str, name: str, body: str, exists: bool,
               windowed: bool) -> None:
    table = f"{layer}.{name}"
    if layer == "scope":  # temporary: read by this run only, never written to the file
        kind = "view" if SCOPE_VIEW.search(body) else "table"
        con.execute(f"create or replace temp {kind} scope__{name} as\n{body}")
        return
    if layer == "staging":
        mode = staged.mode(name, body, exists)
        if mode == "delta":
            staged.merge(table, body)
        elif mode == "recompute":
            staged.recompute(table, body)
        elif mode == "full":
            create_deduped(con, table, body)
            staged.built(name, body)
        return
    if not (windowed and layer == "marts"):
        con.execute(f"create or replace table {table} as\n{body}")
        return
    # a run for a window replaces that window's days (or, for a mart without a day, the rows
    # its `-- window:` predicate selects) and keeps the rest
    columns = [d[0] for d in con.execute(f"select * from (\n{body}\n) limit 0").description]
    window = WINDOW.search(body)
    if "day" in columns:
        key, where = None, "day between cfg('day_from')::date and cfg('day_to')::date"
    elif window:
        key, where = [k.strip() for k in window.group("key").split(",")], window.group("where")
    else:
        raise RuntimeError(f"{table}: a mart needs a day column or a `-- window:` header")
    con.execute(f"create or replace temp table _recon_window as select * from (\n{body}\n) where {where}")
    if not _columns(con, layer, name):
        con.execute(f"create table {table} as select * from _recon_window")
    elif key is None:
        con.execute(f"delete from {table} where {where}")
        con.execute(f"insert into {table} by name select * from _recon_window")
    else:
        on = " and ".join(f"t.{k} is not distinct from n.{k}" for k in key)
        con.execute(f"delete from {table} where rowid in "
                    f"(select t.rowid from {table} t semi join _recon_window n on {on})")
        con.execute(f"insert into {table} by name select * from _recon_window")
    con.execute("drop table _recon_window")


def require_built(con, day_from: date, day_to: date, what: str) -> None:
    """Fail clearly when the intermediate tables do not hold [day_from, day_to].

    A windowed run (`--from/--to`) leaves the intermediate tables holding its own scope; the
    marts keep every day. Reports, exports and what-if read intermediate tables too."""
    try:
        lo, hi = con.execute("select cfg('day_from'), cfg('day_to')").fetchone()
    except duckdb.Error:
        return  # no run yet: the caller finds empty marts
    if lo is None or (lo == "0001-01-01" and hi == "9999-12-31"):
        return
    if day_from < date.fromisoformat(lo) or day_to > date.fromisoformat(hi):
        raise ValueError(
            f"{what} for {day_from}..{day_to} reads intermediate tables, which hold the last run's "
            f"window {lo}..{hi} only. Run `recon run --input <folder> --from {day_from} "
            f"--to {day_to}` first (landed files are not read again), or a run without a window.")
