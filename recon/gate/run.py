"""Data-quality gate: the Great Expectations suites of `expectations/*.json`, run on the warehouse.

Each suite file is a GX 1.x ExpectationSuite (`name`, `expectations: [{type, kwargs, meta}]`) whose
`meta` says what to validate: `table` (a DuckDB table) or `query` (SQL, a string or a list of
lines: the tie-outs), and `row_key` (the columns that name a row in failure messages). Every
expectation carries `meta.severity`: `critical` (the run is not fit to publish) or `warning`.

GX runs on pandas DataFrames read from DuckDB (`con.sql(q).df()`), never through SQLAlchemy:
GX 1.24 with duckdb-engine reports wrong failures (GX #10738, #11579). A table suite reads only the
columns its expectations, row key and row conditions name; JSON columns are cut to their first
200 characters (the suites only test their presence). Decimals arrive as float64, DATE as
datetime64. great_expectations is imported inside `GxSession` (it takes seconds), once per
`validate` call unless the caller passes a session to reuse.

Large tables (`PUSHDOWN_MIN_ROWS` rows or more) are not read whole: their row-level expectations
(not null, unique, compound unique, in set, between, pair a > b, pair in set, table row count) are
pushed down to DuckDB (`recon.validate_pushdown`): one scan counts each expectation's rows and
unexpected rows exactly, with pandas' semantics (NaN is missing, decimals compare as float64, a
NULL in a pair comparison is unexpected unless `ignore_row_if` drops it), and finds the first
`SAMPLE` unexpected rows (plus, for a duplicate, one other row with its key). GX then runs the
suite on a small batch made of those rows and `CHECK_BLOCKS` blocks of ordinary rows, in table
order, so its failure samples are the ones a full read would give; its element and unexpected
counts are replaced by the exact counts of the whole table. The unexpected rows DuckDB flags inside
that batch must be the ones GX flags, or the suite is validated again from a full read
(`ValidationReport.paths` says which way each suite went). Expectations without a translation run
on a read of their own columns.

Results go to `marts.validation_results`, one row per expectation and run, replacing the rows of the
same run_id; within a suite they are in the suite file's order.

This module holds the entry point (`validate`), the report, the GX session and the results table;
`recon.validate_suites` reads the suite files and builds the SQL of a batch, and
`recon.validate_pushdown` is the large-table path. Their names are importable from here.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import duckdb

from ..ingest.reader import TABLES
from .pushdown import CHECK_BLOCK_ROWS, CHECK_BLOCKS, _Pushdown, pushed_results
from .suites import (
    JSON_CHARS,
    SAMPLE,
    SEVERITIES,
    SUITE_DIR,
    Suite,
    _indexed,
    batch_sql,
    columns_of,
    condition_columns,
    condition_text,
    load_suites,
    raised,
    select_list,
    table_columns,
    wanted_columns,
)

__all__ = [  # the gate's names, wherever they are defined (`_Pushdown`: the tests reach it here)
    "CHECK_BLOCKS", "CHECK_BLOCK_ROWS", "JSON_CHARS", "PUSHDOWN_MIN_ROWS", "RESULTS_DDL", "SAMPLE",
    "SEVERITIES", "SUITE_DIR", "Failure", "GxSession", "Scope", "Suite", "ValidationReport", "_Pushdown",
    "batch_sql", "columns_of", "condition_columns", "condition_text", "load_suites", "select_list",
    "table_columns", "validate", "wanted_columns",
]

log = logging.getLogger(__name__)

PUSHDOWN_MIN_ROWS = 10_000  # tables this large are checked in DuckDB, GX sees a small batch
RESULTS_DDL = """create table if not exists marts.validation_results (
    run_id varchar not null, suite varchar not null, expectation varchar not null,
    "column" varchar, success boolean not null, observed_value varchar, unexpected_count bigint,
    severity varchar not null, message varchar, checked_at timestamptz not null)"""


# ---------------------------------------------------------------- report

@dataclass
class Failure:
    suite: str
    expectation: str
    column: str | None
    severity: str
    unexpected_count: int | None
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass
class ValidationReport:
    run_id: str
    suites: int = 0
    evaluated: int = 0
    passed: int = 0
    failed: int = 0
    critical_failures: list[Failure] = field(default_factory=list)
    warnings: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    paths: dict[str, str] = field(default_factory=dict)  # suite -> "full" or "pushdown"
    scoped: dict[str, str] = field(default_factory=dict)  # suite -> the predicate it ran under
    rows: list[tuple] = field(default_factory=list)  # the marts.validation_results rows, in order

    @property
    def success(self) -> bool:
        """True when every critical expectation held (warnings do not fail a run)."""
        return not self.critical_failures

    def summary(self) -> str:
        scoped = f" ({len(self.scoped)} on the run's own files or days)" if self.scoped else ""
        head = (f"validation {self.run_id}: {self.suites} suites{scoped}, {self.evaluated} "
                f"expectations, {self.passed} passed, {len(self.critical_failures)} critical and "
                f"{len(self.warnings)} warning failures ({self.seconds:.1f} s)")
        return "\n".join([head, *(f"  CRITICAL {f}" for f in self.critical_failures),
                          *(f"  warning  {f}" for f in self.warnings)])


# ---------------------------------------------------------------- scope

VALIDATED_DDL = ("create table if not exists meta.validated_files "
                 "(source_file varchar primary key, sha256 varchar)")


@dataclass(frozen=True)
class Scope:
    """What a run's validation reads of the suites that declare `meta.scope`.

    Checking every table whole made the gate grow with history: on the 500-node fleet's 30-day
    warehouse it took 15.2 s against 2.2 s on a first day, most of it the raw tables' 125 M rows
    (bench/README.md, session 13). A run checks what it changed instead:

    * `by: "file"` suites (the raw tables, the per-file tie-out): the rows of `files`, the
      landed files no validation has passed yet (`for_run`). Raw rows only change with their
      file's bytes (a file landed again with other bytes has another sha256 and is checked
      again), and every raw key holds the file, so a key cannot repeat across files.
    * `by: "day"` suites (billing buckets, the day marts, the resource-day tie-outs): the rows of
      the UTC days `days` [first, last], the days a windowed run rebuilt and publishes.

    `None` for either checks those suites whole; `validate(con, id)` without a scope checks
    everything (what a full check, or a run over all days, wants)."""
    files: tuple[str, ...] | None = None
    days: tuple[date, date] | None = None
    every_file: bool = False  # `files` are all of raw.files: the file suites read whole tables

    @classmethod
    def for_run(cls, con, day_from: date | None = None, day_to: date | None = None) -> Scope:
        """The files landed since the last validation that passed, and [day_from, day_to]
        when the run was windowed (else every day). When no validation passed yet, every file
        is new and the file suites read their tables whole (rows of no landed file included)."""
        landed = con.execute("select source_file, sha256 from raw.files order by 1").fetchall()
        done = set()
        if con.execute("select count(*) from duckdb_tables() where database_name = "
                       "current_database() and schema_name = 'meta' and "
                       "table_name = 'validated_files'").fetchone()[0]:
            done = set(con.execute("select source_file, sha256 from meta.validated_files").fetchall())
        files = tuple(f for f, h in landed if (f, h) not in done)
        days = None
        if day_from is not None or day_to is not None:
            days = (day_from or date.min, day_to or date.max)
        return cls(files=files, days=days, every_file=len(files) == len(landed))

    def predicate(self, suite: Suite) -> str | None:
        """The suite's rows in this scope, as SQL on its table or query (None: every row)."""
        if suite.scope is None:
            return None
        by, column = suite.scope
        col = '"' + column + '"'
        if by == "file" and self.files is not None and not self.every_file:
            if not self.files:
                return "false"
            return _in_files(col, self.files)
        if by == "day" and self.days is not None:
            first, last = self.days
            tests = []
            if first > date.min:
                tests.append(f"{col} >= DATE '{first.isoformat()}'")
            if last < date.max - timedelta(days=1):
                tests.append(f"{col} < DATE '{(last + timedelta(days=1)).isoformat()}'")
            return " and ".join(tests) or None
        return None


def _from_first_row(con, suite: Suite, where: str, tail: dict[str, int | None] | None = None) -> str:
    """`where`, with a lower bound on rowid for a table scoped by file: a run's files are the
    table's last rows (appended), so every scan of the suite then skips the row groups of
    history by rowid. Exact: no row in scope lies below the first one. `tail` holds the first
    rows `_tail_bounds` found from the tables' ends by `source_file`; a table it lacks (or a
    suite scoped by another column) costs one scan."""
    if suite.table is None or suite.scope is None or suite.scope[0] != "file" or where == "false":
        return where
    if tail is not None and suite.table in tail and suite.scope[1] == "source_file":
        first = tail[suite.table]
    else:
        first = con.execute(f"select min(rowid) from {suite.table} where {where}").fetchone()[0]
    return "false" if first is None else f"rowid >= {int(first)} and {where}"


# Where a landed file's records are: its loaded records in one of these raw tables (the tables of
# recon.ingest.reader.TABLES), its quarantined ones in raw.quarantine; raw.files counts both.
LOADED_TABLES = tuple(f"raw.{t}" for t in TABLES)
QUARANTINE_TABLE = "raw.quarantine"


def _tail_bounds(con, files: tuple[str, ...], rounds: int = 6) -> dict[str, int | None]:
    """A rowid lower bound per raw table for the rows of `files`, found from the tables' ends.

    The files a gate has not checked yet were landed after every file it has (a passed gate
    remembers every landed file), so their rows are the last ones appended: a first guess of the
    region [end - k, end) with k = the rows raw.files says they have reads the day's rows, not
    `min(rowid)` over all history (0.17-0.20 s over the 500-node fleet's 62.7 M job rows).

    Exact, whatever the order of the rows: a bound is accepted only when the regions together
    hold as many rows of `files` as raw.files counts for them (loaded rows across the data
    tables, quarantined ones in raw.quarantine); until then a region that did not reach its
    table's start grows 4x. A table whose region holds none of them gets None (no rows in scope).
    If the counts never meet (rows missing or extra: the per-file tie-out, raw.files, reports
    that), the result is {} and the caller finds `min(rowid)` the old way.
    """
    if not files:
        return {}
    loaded, quarantined = con.execute(
        "select coalesce(sum(records_loaded), 0), coalesce(sum(records_quarantined), 0) "
        "from raw.files where source_file in (select unnest(?::varchar[]))", [list(files)]).fetchone()
    pred = _in_files('"source_file"', files)
    bounds: dict[str, int | None] = {}
    for tables, expected in ((LOADED_TABLES, int(loaded)), ((QUARANTINE_TABLE,), int(quarantined))):
        ends = {}
        for t in tables:
            end = con.execute(f"select max(rowid) from {t}").fetchone()[0]
            ends[t] = -1 if end is None else int(end)
        k = max(expected, 1)
        found: dict[str, tuple[int, int | None, bool]] = {}
        for _ in range(rounds):
            for t, end in ends.items():
                if t in found and found[t][2]:
                    continue  # this region already holds the whole table
                lo = max(end + 1 - k, 0)
                n, first = con.execute(f"select count(*), min(rowid) from {t} "
                                       f"where rowid >= {lo} and {pred}").fetchone()
                found[t] = (int(n), None if first is None else int(first), lo == 0)
            if sum(n for n, _, _ in found.values()) == expected:
                bounds.update({t: first for t, (_, first, _) in found.items()})
                break
            if all(whole for _, _, whole in found.values()):
                return {}
            k *= 4
        else:
            return {}
    return bounds


def _in_files(column: str, files: tuple[str, ...]) -> str:
    """`column in ('a', 'b', …)`: a literal list, which DuckDB pushes into the scan as a filter."""
    return f"{column} in ({', '.join(_literal(f) for f in files)})"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _note_validated(con, files: tuple[str, ...]) -> None:
    """Remember that these files' rows passed (by their sha256 now): later runs skip them."""
    if not files:
        return
    con.execute("create schema if not exists meta")
    con.execute(VALIDATED_DDL)
    con.execute("insert or replace into meta.validated_files select source_file, sha256 "
                "from raw.files where source_file in (select unnest(?::varchar[]))", [list(files)])


# ---------------------------------------------------------------- GX

_PREFETCH: list[threading.Thread] = []


def prefetch_gx() -> None:
    """Start importing great_expectations on a thread, once per process, for a gate to come.

    Call it where the next seconds leave a core idle: `recon.pipeline.run` calls it just
    before its commit, which DuckDB runs on one core with the GIL released. The import (2-2.5 s
    of one core) then overlaps the commit and the run's summary instead of following them.
    Earlier, beside landing or the intermediate models, it slowed those by more than it hid
    (bench/README, sessions 18 and 19). `GxSession` imports great_expectations as usual: if
    this thread is still at it, Python's import lock makes that wait for the same import.
    """
    if _PREFETCH or "great_expectations" in sys.modules:
        return

    def load() -> None:
        try:
            import great_expectations  # noqa: F401
        except Exception as err:  # noqa: BLE001 - GxSession's own import will raise it again
            log.debug("prefetching great_expectations failed: %s", err)

    thread = threading.Thread(target=load, name="recon-gx-prefetch", daemon=True)
    _PREFETCH.append(thread)
    thread.start()


class GxSession:
    """One ephemeral GX context with a pandas data source; reusable across `validate` calls."""

    def __init__(self) -> None:
        t0 = time.perf_counter()
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig
        from great_expectations.expectations.expectation_configuration import (
            ExpectationConfiguration,
        )

        self._gx, self._config = gx, ExpectationConfiguration
        # GX announces its ephemeral docs folder at INFO on every context: not the user's news
        for name in ("great_expectations", "great_expectations.data_context.types.base"):
            logging.getLogger(name).setLevel(logging.WARNING)
        self.context = gx.get_context(mode="ephemeral")
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        source = self.context.data_sources.add_pandas("recon")
        self._batches = source.add_dataframe_asset("batch").add_batch_definition_whole_dataframe("all")
        self._suites: dict[tuple[str, str], object] = {}
        self.startup_seconds = time.perf_counter() - t0

    def suite(self, suite: Suite):
        """The GX ExpectationSuite of `suite`; a bad expectation raises (GX would only log it)."""
        key = (suite.name, json.dumps(suite.expectations, sort_keys=True))
        if key not in self._suites:
            exps = []
            for e in suite.expectations:
                try:
                    exps.append(self._config(type=e["type"], kwargs=e.get("kwargs") or {},
                                             meta=e.get("meta"),
                                             severity=e["meta"]["severity"]).to_domain_obj())
                except Exception as err:  # GX raises several unrelated types here
                    raise ValueError(f"{suite.path.name}: {suite.label(e)}: {err}") from err
            self._suites[key] = self._gx.ExpectationSuite(name=suite.name, expectations=exps)
        return self._suites[key]

    def run(self, suite: Suite, df):
        """GX's results of `suite` on `df`.

        Every expectation runs at GX's BASIC result format first (counts and a sample of the
        unexpected values); only those that fail run again at SUMMARY, whose index list names
        the failing rows by `row_key`. A day that passes (the usual one) skips SUMMARY's
        extra metrics: about a quarter less of the gate's time (bench/README, session 19).
        """
        batch = self._batches.get_batch(batch_parameters={"dataframe": df})
        with warnings.catch_warnings():
            # GX compares tz-aware columns through Series.values (UTC, correct); pandas 3.1 warns
            warnings.filterwarnings("ignore", message="Series.values returning an ndarray that drops")
            results = _indexed(suite, batch.validate(self.suite(suite), result_format={
                "result_format": "BASIC", "partial_unexpected_count": SAMPLE}).results)
            failed = [i for i, r in results
                      if i < len(suite.expectations) and not r.success and not raised(r)]
            if not failed:
                return [r for _, r in results]
            sub = replace(suite, expectations=tuple(suite.expectations[i] for i in failed))
            again = dict(_indexed(suite, batch.validate(self.suite(sub), result_format={
                "result_format": "SUMMARY", "partial_unexpected_count": SAMPLE,
                "unexpected_index_column_names": [c for c in suite.row_key if c in df.columns]}).results))
        return [again.get(i, r) for i, r in results]


def _fmt(v) -> str:
    """A value as it reads in a message: NULL, 2026-06-01, 2026-06-01T07:06:01Z, 86401, 0.5."""
    import pandas as pd  # already loaded: the batches are pandas

    if v is None:
        return "NULL"
    try:
        if pd.isna(v):  # NaN, NaT, pd.NA
            return "NULL"
    except (TypeError, ValueError):  # containers
        pass
    if isinstance(v, datetime):  # includes pandas Timestamp
        if v.tzinfo is None and (v.hour, v.minute, v.second, v.microsecond) == (0, 0, 0, 0):
            return v.date().isoformat()  # a DATE column read by pandas
        return v.isoformat().replace("+00:00", "Z")
    if isinstance(v, date):
        return v.isoformat()
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # numpy scalar
        try:
            return _fmt(v.item())
        except (ValueError, AttributeError):
            return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    if isinstance(v, tuple):
        return "(" + ", ".join(_fmt(x) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}={_fmt(x)}" for k, x in v.items()) + "}"
    return str(v)


def _describe(suite: Suite, cfg, res) -> tuple[bool, str, int | None, str]:
    """(success, observed_value, unexpected_count, message) of one GX expectation result."""
    r = res.result or {}
    kw = cfg.kwargs
    what = f"{suite.name}: {cfg.type}({columns_of(kw) or ''})"
    exc = raised(res)
    if exc:
        msg = exc.get("exception_message") or "raised an exception"
        return False, f"error: {msg}"[:500], None, f"{what} could not be evaluated: {msg}"
    n_bad, n = r.get("unexpected_count"), r.get("element_count")
    if "observed_value" in r:
        observed = _fmt(r["observed_value"])
    else:
        sample = ", ".join(_fmt(x) for x in (r.get("partial_unexpected_list") or [])[:SAMPLE])
        observed = f"{n_bad} of {n} rows unexpected" + (f": {sample}" if sample else "")
    if res.success:
        return True, observed, n_bad, ""
    rows = r.get("partial_unexpected_index_list") or []
    if rows:
        key = [c for c in suite.row_key if c in rows[0]]
        named = "; ".join(
            ", ".join(f"{c}={_fmt(row.get(c))}" for c in key)
            + (" (" + ", ".join(f"{c}={_fmt(v)}" for c, v in row.items() if c not in key) + ")"
               if any(c not in key for c in row) else "")
            for row in rows[:SAMPLE])
        more = f" and {n_bad - len(rows[:SAMPLE])} more" if n_bad and n_bad > SAMPLE else ""
        msg = f"{what}: {n_bad} of {n} rows fail: {named}{more}"
    elif n_bad:
        msg = f"{what}: {n_bad} of {n} rows fail: {observed}"
    else:
        bounds = {k: kw[k] for k in ("value", "min_value", "max_value", "value_set") if k in kw}
        msg = f"{what}: observed {observed}, expected {_fmt(bounds)}"
    return False, observed, n_bad, msg


# ---------------------------------------------------------------- entry point

def validate(con, run_id: str, *, suites=None, suite_dir: str | Path | None = None,
             session: GxSession | None = None, write: bool = True,
             pushdown_min_rows: int | None = PUSHDOWN_MIN_ROWS,
             scope: Scope | None = None) -> ValidationReport:
    """Validate the warehouse behind `con` against the suites; write `marts.validation_results`.

    `suites` limits the run to those suite names; `session` reuses a GX context (tests);
    `write=False` only returns the report (for read-only connections). Table suites of at least
    `pushdown_min_rows` rows are checked in DuckDB with GX on a small batch (None: never).
    `scope` (`Scope.for_run`): the suites with a `meta.scope` check only the run's files or
    days; with `write`, the scope's files are then remembered as validated if every suite ran
    (no `suites`, no `suite_dir`) and no critical expectation failed (so a failed gate checks
    them again next time).
    """
    t0 = time.perf_counter()
    specs = load_suites(suite_dir, suites)
    con.complete()  # DuckDB 2.0 refuses other work while a caller's result is left unfetched
    if scope is not None and scope.days is not None:
        # a day's bounds compare with TIMESTAMPTZ columns in the session's time zone
        tz = con.execute("select current_setting('TimeZone')").fetchone()[0]
        if tz not in ("UTC", "Etc/UTC", "GMT", "Etc/GMT"):
            raise ValueError(f"a scope by day needs a connection in UTC, this one is in {tz} "
                             "(recon.warehouse.connect sets UTC)")
    session = session or GxSession()
    report = ValidationReport(run_id=run_id, suites=len(specs))
    checked_at = datetime.now(UTC)
    rows = report.rows

    def record(suite, expectation, column, severity, ok, observed, n_bad, message):
        rows.append((run_id, suite.name, expectation, column, ok, observed, n_bad, severity,
                     message or None, checked_at))
        report.evaluated += 1
        if ok:
            report.passed += 1
            return
        report.failed += 1
        f = Failure(suite.name, expectation, column, severity, n_bad, message)
        (report.critical_failures if severity == "critical" else report.warnings).append(f)

    tail = None
    for suite in specs:
        where = None if scope is None else scope.predicate(suite)
        if where is not None:
            report.scoped[suite.name] = where if len(where) < 200 else where[:197] + "..."
            if tail is None and suite.table is not None and suite.scope[0] == "file":
                try:
                    tail = _tail_bounds(con, scope.files)
                except duckdb.Error:
                    tail = {}  # (an old warehouse without some raw table: one scan per suite)
            try:
                where = _from_first_row(con, suite, where, tail)
            except duckdb.Error:
                pass  # (a missing table is the suite's own failure, reported below)
            suite = replace(suite, where=where)
        try:
            results, report.paths[suite.name] = _suite_results(con, session, suite, pushdown_min_rows)
        except duckdb.Error as err:
            record(suite, "batch_query", None, "critical", False, None, None,
                   f"{suite.name}: its batch could not be read, no expectation ran: {err}")
            continue
        for _, res in sorted(results, key=lambda ir: ir[0]):
            cfg = res.expectation_config
            ok, observed, n_bad, msg = _describe(suite, cfg, res)
            record(suite, cfg.type, columns_of(cfg.kwargs), (cfg.meta or {}).get("severity", "critical"),
                   ok, observed, n_bad, msg)

    if write:
        # files pass when every suite checked them and none failed critically
        every_suite = suites is None and suite_dir is None
        passed = (scope.files if scope is not None and scope.files and report.success
                  and every_suite else ())
        _write(con, run_id, rows, passed)
    report.seconds = time.perf_counter() - t0
    log.info(report.summary())
    return report


def _suite_results(con, session: GxSession, suite: Suite, min_rows: int | None):
    """([(expectation index, GX result)], "pushdown" | "full") of one suite."""
    if suite.table and min_rows is not None:
        pushed = pushed_results(con, session, suite, min_rows)
        if pushed is not None:
            return pushed, "pushdown"
    return _indexed(suite, session.run(suite, con.sql(batch_sql(con, suite)).df())), "full"


def _write(con, run_id: str, rows: list[tuple], passed: tuple[str, ...] = ()) -> None:
    """Replace the run's rows in one transaction (or inside the caller's, if one is open), and
    note the files whose rows `passed`."""
    try:
        con.execute("begin transaction")
        own = True
    except duckdb.TransactionException:
        own = False
    try:
        con.execute("create schema if not exists marts")
        con.execute(RESULTS_DDL)
        con.execute("delete from marts.validation_results where run_id = ?", [run_id])
        if rows:
            con.executemany("insert into marts.validation_results values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            rows)
        _note_validated(con, passed)
        if own:
            con.execute("commit")
    except BaseException:
        if own:
            con.execute("rollback")
        raise
