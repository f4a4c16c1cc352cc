"""Data-quality gate: the Great Expectations suites of `expectations/*.json`, run on the warehouse.

Each suite file is a GX 1.x ExpectationSuite (`name`, `expectations: [{type, kwargs, meta}]`) whose
`meta` says what to validate: `table` (a DuckDB table), `query_file` (a SELECT of sql/queries/:
the tie-outs) or `query` (SQL text), and `row_key` (the columns that name a row in failure messages). Every
expectation carries `meta.severity`: `critical` (the run is not fit to publish) or `warning`.

GX runs on pandas DataFrames read from DuckDB (`con.sql(q).df()`), never through SQLAlchemy:
GX 1.24 with duckdb-engine reports wrong failures (GX #10738, #11579). A table suite reads only the
columns its expectations, row key and row conditions name; JSON columns are cut to their first
200 characters (the suites only test their presence). Decimals arrive as float64, DATE as
datetime64. great_expectations is imported inside `GxSession` (it takes seconds), once per
`validate` call unless the caller passes a session to reuse.

Large tables (`PUSHDOWN_MIN_ROWS` rows or more) are not read whole: their row-level expectations
(not null, unique, compound unique, in set, between, pair a > b, pair in set, table row count) are
pushed down to DuckDB (`recon.gate.pushdown`): one scan counts each expectation's rows and
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

This module holds the entry point (`validate`), the report and the results table. Beside it:
`suites` reads the suite files and builds the SQL of a batch, `scope` says which rows a run
checks, `gx` runs Great Expectations and describes its results, `pushdown` is the large-table
path and `checks` its translations of expectations into SQL.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from .gx import GxSession, describe
from .pushdown import pushed_results
from .scope import Scope, from_first_row, note_validated, tail_bounds
from .suites import Suite, batch_sql, columns_of, indexed, load_suites

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
                             "(recon.db.connect sets UTC)")
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
                    tail = tail_bounds(con, scope.files)
                except duckdb.Error:
                    tail = {}  # (an old warehouse without some raw table: one scan per suite)
            try:
                where = from_first_row(con, suite, where, tail)
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
            ok, observed, n_bad, msg = describe(suite, cfg, res)
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
    return indexed(suite, session.run(suite, con.sql(batch_sql(con, suite)).df())), "full"


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
        note_validated(con, passed)
        if own:
            con.execute("commit")
    except BaseException:
        if own:
            con.execute("rollback")
        raise
