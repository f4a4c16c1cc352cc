"""A run's validation checks its own files and days (`recon.gate.scope.Scope`), not all history.

One copy of the session's simulated warehouse (2 days, conftest's `sim_run`); each case breaks
rows inside a transaction and rolls back, as tests/test_expectations.py does.
"""

import shutil
from datetime import date

import duckdb
import pytest

from recon.gate.run import validate
from recon.gate.scope import Scope
from recon.gate.suites import load_suites

DAY1, DAY2 = date(2026, 6, 1), date(2026, 6, 2)
NN = "expect_column_values_to_not_be_null"


@pytest.fixture(scope="module")
def gx_session():
    from recon.gate.gx import GxSession

    return GxSession()


@pytest.fixture
def wh(sim_run, tmp_path):
    db = tmp_path / "recon.duckdb"
    shutil.copy(sim_run["db"], db)
    con = duckdb.connect(str(db))
    con.execute("set TimeZone = 'UTC'")
    yield con
    con.close()


def pod_watch_files(con) -> tuple[str, str]:
    files = [r[0] for r in con.execute("select distinct source_file from raw.k8s_objects "
                                       "where source_file like '%watch-pods-0%' order by 1").fetchall()]
    assert len(files) == 2
    return files[0], files[1]


def failed(report) -> set[tuple[str, str]]:
    return {(f.suite, f"{f.expectation}({f.column or ''})")
            for f in report.critical_failures + report.warnings}


def break_day1_and_first_file(con, first_file: str) -> None:
    con.execute("update raw.k8s_objects set uid = null where rowid = (select min(rowid) from "
                f"raw.k8s_objects where source_file = '{first_file}')")
    con.execute("update marts.resource_day set resource_id = null where rowid = (select min(rowid) "
                f"from marts.resource_day where day = DATE '{DAY1}')")


BROKEN = {("raw.k8s_objects", f"{NN}(uid)"), ("marts.resource_day", f"{NN}(resource_id)")}


@pytest.mark.parametrize("pushdown", [None, 0], ids=["read", "pushdown"])
def test_a_scope_sees_the_rows_of_its_files_and_days_only(wh, gx_session, pushdown):
    first, second = pod_watch_files(wh)
    suites = ["raw.k8s_objects", "marts.resource_day"]
    wh.execute("begin transaction")
    try:
        break_day1_and_first_file(wh, first)
        run = lambda scope: validate(wh, "t", suites=suites, session=gx_session, write=False,
                                     pushdown_min_rows=pushdown, scope=scope)
        whole = run(None)
        outside = run(Scope(files=(second,), days=(DAY2, DAY2)))
        inside = run(Scope(files=(first,), days=(DAY1, DAY1)))
        only_files = run(Scope(files=(first,)))
    finally:
        wh.execute("rollback")
    assert failed(whole) == BROKEN and whole.scoped == {}
    assert failed(outside) == set(), outside.summary()
    assert failed(inside) == BROKEN, inside.summary()
    assert set(inside.scoped) == set(suites)
    assert "watch-pods-00" in inside.scoped["raw.k8s_objects"]
    # days unset: the day suites read every day
    assert failed(only_files) == BROKEN and set(only_files.scoped) == {"raw.k8s_objects"}
    # the counts are the scope's: one file's rows, not the table's
    uid = next(r for r in inside.rows if r[1] == "raw.k8s_objects" and r[3] == "uid")
    assert uid[6] == 1


def test_every_scoped_suite_runs_on_a_clean_warehouse(wh, gx_session):
    """Every meta.scope names a column its table or query has (a wrong one fails to bind)."""
    scoped = {s.name for s in load_suites() if s.scope}
    assert {"raw.serverless_jobs", "raw.files", "marts.resource_day", "tieout.billed_seconds",
            "staging.stg_runpod__pod_billing"} <= scoped
    first, _ = pod_watch_files(wh)
    report = validate(wh, "t", session=gx_session, write=False,
                      scope=Scope(files=(first,), days=(DAY2, DAY2)))
    assert report.success and not report.warnings, report.summary()
    assert set(report.scoped) == scoped
    nothing = validate(wh, "t", session=gx_session, write=False, scope=Scope(files=()))
    assert nothing.success and {n for n, w in nothing.scoped.items() if w == "false"} == {
        s.name for s in load_suites() if s.scope and s.scope[0] == "file"}


def test_a_passed_gate_remembers_its_files_and_a_changed_file_is_checked_again(wh, gx_session):
    landed = {r[0] for r in wh.execute("select source_file from raw.files").fetchall()}
    scope = Scope.for_run(wh, DAY2, DAY2)
    assert scope.every_file and set(scope.files) == landed and scope.days == (DAY2, DAY2)
    # a gate of some suites only checked the files with those: nothing is remembered
    assert validate(wh, "r0", suites=["marts.findings"], session=gx_session, scope=scope).success
    assert Scope.for_run(wh).files == scope.files
    # no validation passed yet: the file suites read their tables whole
    assert scope.predicate(next(s for s in load_suites() if s.name == "raw.k8s_objects")) is None
    assert validate(wh, "r1", session=gx_session, scope=scope).success
    assert wh.execute("select count(*) from meta.validated_files v join raw.files f "
                      "using (source_file) where v.sha256 = f.sha256").fetchone()[0] == len(landed)
    again = Scope.for_run(wh)
    assert again.files == () and not again.every_file and again.days is None

    # a file landed again with other bytes is checked again; a failed gate does not forget it
    first, _ = pod_watch_files(wh)
    wh.execute(f"update raw.files set sha256 = 'new' where source_file = '{first}'")
    changed = Scope.for_run(wh, DAY1, DAY1)
    assert changed.files == (first,)
    wh.execute("update raw.k8s_objects set uid = null where rowid = (select min(rowid) from "
               f"raw.k8s_objects where source_file = '{first}')")
    bad = validate(wh, "r2", session=gx_session, scope=changed)
    assert ("raw.k8s_objects", f"{NN}(uid)") in failed(bad) and not bad.success
    assert Scope.for_run(wh).files == (first,)
    wh.execute("update raw.k8s_objects set uid = 'fixed' where uid is null")
    assert validate(wh, "r3", session=gx_session, scope=Scope.for_run(wh, DAY1, DAY1)).success
    assert Scope.for_run(wh).files == ()


def test_a_bad_scope_is_refused(tmp_path):
    suite = ('{"name": "marts.x", "meta": {"table": "marts.findings", "scope": %s}, "expectations": '
             '[{"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "code"}, '
             '"meta": {"severity": "critical"}}]}')
    for bad in ('{"by": "week", "column": "day"}', '{"by": "day"}', '{"by": "day", "column": "d; drop"}'):
        (tmp_path / "marts.x.json").write_text(suite % bad)
        with pytest.raises(ValueError, match=r"marts\.x\.json: meta\.scope"):
            load_suites(tmp_path)
    (tmp_path / "marts.x.json").write_text(suite % '{"by": "day", "column": "day"}')
    assert load_suites(tmp_path)[0].scope == ("day", "day")


def test_the_day_predicate_is_half_open_in_utc(wh):
    s = next(x for x in load_suites() if x.name == "staging.stg_runpod__pod_billing")
    where = Scope(days=(DAY2, DAY2)).predicate(s)
    n = wh.execute(f"select count(*), min(bucket_start), max(bucket_start) "
                   f"from staging.stg_runpod__pod_billing where {where}").fetchone()
    want = wh.execute("select count(*) from staging.stg_runpod__pod_billing "
                      "where bucket_start >= '2026-06-02 00:00:00+00' "
                      "and bucket_start < '2026-06-03 00:00:00+00'").fetchone()[0]
    assert n[0] == want > 0
    assert str(n[1].date()) == "2026-06-02" and str(n[2].date()) == "2026-06-02"


def test_the_pipeline_and_the_daily_flow_validate_their_scope(sim_run, tmp_path):
    """`recon run --validate` remembers what passed: a rerun with nothing new checks no raw rows."""
    from recon.pipeline import run

    db = tmp_path / "w.duckdb"
    first = run(sim_run["root"] / "input", db, validate=True, day_from=DAY2, day_to=DAY2)
    assert first.validation.success, first.validation.summary()
    assert "marts.resource_day" in first.validation.scoped  # the window's day
    assert "raw.k8s_objects" not in first.validation.scoped  # first gate: every file, whole
    again = run(sim_run["root"] / "input", db, validate=True, day_from=DAY2, day_to=DAY2)
    assert again.validation.success
    assert again.validation.scoped["raw.k8s_objects"] == "false"
    assert "2026-06-02" in again.validation.scoped["marts.resource_day"]


def test_a_day_scope_refuses_a_connection_outside_utc(wh, gx_session):
    """Day bounds meet TIMESTAMPTZ columns in the session's zone: elsewhere than UTC a day
    would start at another hour, so the gate refuses rather than check the wrong rows."""
    wh.execute("set TimeZone = 'Asia/Tokyo'")
    with pytest.raises(ValueError, match="UTC, this one is in Asia/Tokyo"):
        validate(wh, "t", session=gx_session, write=False, scope=Scope(days=(DAY2, DAY2)))
    # files alone need no zone
    assert validate(wh, "t", suites=["raw.k8s_objects"], session=gx_session, write=False,
                    scope=Scope(files=())).success


def _first_rows(con, files) -> dict:
    """min(rowid) of `files`' rows in each raw table, by a scan of the whole table."""
    from recon.gate.scope import LOADED_TABLES, QUARANTINE_TABLE

    pred = "source_file in (select unnest(?::varchar[]))"
    return {t: con.execute(f"select min(rowid) from {t} where {pred}", [list(files)]).fetchone()[0]
            for t in (*LOADED_TABLES, QUARANTINE_TABLE)}


def test_tail_bounds_are_the_first_rows_of_the_files_wherever_they_lie(wh):
    """The gate bounds a file-scoped table by the first row of its files, found from the
    table's end (`_tail_bounds`): the same rows as `min(rowid)` over the whole table, for the
    last files landed, for files in the middle (the region grows) and for several at once."""
    from recon.gate.scope import tail_bounds as _tail_bounds

    order = [r[0] for r in wh.execute(
        "select source_file from (select source_file, max(rowid) as r from raw.k8s_objects "
        "group by all) order by r").fetchall()]
    pods = pod_watch_files(wh)
    assert len(order) >= 2
    for files in [(order[-1],), (order[0],), pods, (order[0], pods[1]), tuple(
            r[0] for r in wh.execute("select source_file from raw.files").fetchall())]:
        got = _tail_bounds(wh, files)
        assert got == _first_rows(wh, files), files
        assert any(v is not None for v in got.values())


def test_tail_bounds_give_up_when_raw_files_disagrees_with_the_rows(wh, gx_session):
    """A bound is only taken when the regions hold every row raw.files counts for the files; a
    row missing from a raw table (the per-file tie-out's failure) leaves the old scan, and the
    region cannot stop short of a row in scope."""
    from recon.gate.scope import tail_bounds as _tail_bounds

    first, second = pod_watch_files(wh)
    wh.execute("begin transaction")
    try:
        wh.execute("delete from raw.k8s_objects where rowid = (select max(rowid) from "
                   f"raw.k8s_objects where source_file = '{second}')")
        assert _tail_bounds(wh, (second,)) == {}
        # too few rounds to reach an early file: no bound rather than a wrong one
        assert _tail_bounds(wh, (first,), rounds=1) in ({}, _first_rows(wh, (first,)))
        # the gate still checks every row of the file and reports the tie-out
        wh.execute("update raw.k8s_objects set uid = null where rowid = (select min(rowid) from "
                   f"raw.k8s_objects where source_file = '{second}')")
        report = validate(wh, "t", suites=["raw.k8s_objects", "raw.files"], session=gx_session,
                          write=False, scope=Scope(files=(second,)))
    finally:
        wh.execute("rollback")
    assert {("raw.k8s_objects", f"{NN}(uid)"),
            ("raw.files", "expect_column_values_to_be_between(loaded_difference)")} <= failed(report)
