"""The backfill flow: batches of days built and gated together, and a rerun that resumes at the
first day not published (a day whose gate failed has marts rows but was never published).

The gate is replaced by a stand-in that records the scope it was asked to check and passes or
fails as the test says: Great Expectations costs ~10 s a run, and what is tested here is the
flow's decisions around the gate (the real gate runs in the daily flow's tests).
"""

from __future__ import annotations

from datetime import date, timedelta
from types import SimpleNamespace

import pytest

from tests.flows.duck import q

DAY = date(2026, 6, 1)
DAY2 = date(2026, 6, 2)
MARTS = ("resource_day", "billed_segments", "findings")


@pytest.fixture
def gate(monkeypatch):
    """Stand-in for recon.gate.run.validate: `gate.fail` holds the days whose gate fails;
    `gate.scopes` the (first, last) day of every gate run."""
    import recon.gate.run
    from recon.gate.run import Failure, ValidationReport

    Gate = SimpleNamespace(fail=set(), scopes=[])

    def validate(con, run_id, *, scope=None, **kw):
        first, last = scope.days
        Gate.scopes.append((first, last))
        days = {first + timedelta(days=i) for i in range((last - first).days + 1)}
        if days & Gate.fail:
            bad = Failure("marts.resource_day", "expect_column_values_to_not_be_null", "day",
                          "critical", 1, "marts.resource_day.day: 1 null (test)")
            return ValidationReport(run_id, evaluated=1, critical_failures=[bad])
        return ValidationReport(run_id, evaluated=1, passed=1)

    monkeypatch.setattr(recon.gate.run, "validate", validate)
    return Gate


def artifacts(flow_run_id, key="recon-daily-summary") -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        ArtifactFilterKey,
    )

    with get_client(sync_client=True) as client:
        return client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]),
            key=ArtifactFilterKey(any_=[key])))


def published(db) -> list:
    return q(db, "select day, validation_run is not null from meta.published_days order by day")


def test_a_rerun_builds_the_day_whose_gate_failed(harness, landing, tmp_path, gate):
    from flows.backfill import backfill

    db = tmp_path / "recon.duckdb"
    gate.fail = {DAY2}
    state = backfill(start=str(DAY), end=str(DAY2), landing_dir=str(landing), db=str(db),
                     batch_days=1, return_state=True)
    assert state.is_failed(), state
    assert gate.scopes == [(DAY, DAY), (DAY2, DAY2)]
    # DAY2 was built (its build commits before the gate) but not published
    assert q(db, "select count(*) from marts.resource_day where day = ?", [DAY2])[0][0] > 0
    assert published(db) == [(DAY, True)]

    gate.fail, gate.scopes = set(), []
    state = backfill(start=str(DAY), end=str(DAY2), landing_dir=str(landing), db=str(db),
                     batch_days=1, return_state=True)
    assert state.is_completed(), state
    assert state.result() == {"built": [str(DAY2)], "skipped": [str(DAY)],
                              "batches": [[str(DAY2), str(DAY2)]], "awaiting": []}
    assert gate.scopes == [(DAY2, DAY2)]
    assert published(db) == [(DAY, True), (DAY2, True)]


def test_a_batch_is_one_build_and_one_gate_with_a_summary_per_day(harness, landing, tmp_path,
                                                                    gate):
    from flows.backfill import backfill
    from recon.pipeline import run

    db = tmp_path / "recon.duckdb"
    state = backfill(start=str(DAY), end=str(DAY2), landing_dir=str(landing), db=str(db),
                     return_state=True)
    assert state.is_completed(), state
    assert state.result()["batches"] == [[str(DAY), str(DAY2)]]
    assert gate.scopes == [(DAY, DAY2)]
    assert published(db) == [(DAY, True), (DAY2, True)]
    arts = artifacts(state.state_details.flow_run_id)
    assert len(arts) == 2
    for day in (DAY, DAY2):
        md = next(a.data for a in arts if f"reconciliation, {day} (UTC)" in a.data)
        assert f"the build of {DAY}..{DAY2}, this day's batch" in md
        assert f"Validation `{DAY}..{DAY2}/" in md

    # the batch's marts are those of one full build over every day
    full = tmp_path / "full.duckdb"
    run(landing, full)
    for mart in MARTS:
        sql = f"select * from marts.{mart} where day between ? and ? order by all"
        assert q(db, sql, [DAY, DAY2]) == q(full, sql, [DAY, DAY2]), mart


def test_a_failed_batch_publishes_none_of_its_days(harness, landing, tmp_path, gate):
    from flows.backfill import backfill

    db = tmp_path / "recon.duckdb"
    gate.fail = {DAY2}
    state = backfill(start=str(DAY), end=str(DAY2), landing_dir=str(landing), db=str(db),
                     return_state=True)
    assert state.is_failed(), state
    assert q(db, "select count(distinct day) from marts.resource_day")[0][0] == 2
    assert q(db, "select count(*) from information_schema.tables "
                 "where table_name = 'published_days'")[0][0] == 0

    gate.fail = set()
    state = backfill(start=str(DAY), end=str(DAY2), landing_dir=str(landing), db=str(db),
                     return_state=True)
    assert state.result()["built"] == [str(DAY), str(DAY2)]


def test_a_day_published_without_the_gate_is_gated_when_asked(harness, landing, tmp_path, gate):
    from flows.backfill import backfill

    db = tmp_path / "recon.duckdb"
    state = backfill(start=str(DAY), end=str(DAY), landing_dir=str(landing), db=str(db),
                     validation=False, return_state=True)
    assert state.is_completed() and gate.scopes == []
    assert published(db) == [(DAY, False)]
    again = backfill(start=str(DAY), end=str(DAY), landing_dir=str(landing), db=str(db),
                     validation=False)
    assert again["skipped"] == [str(DAY)] and gate.scopes == []
    gated = backfill(start=str(DAY), end=str(DAY), landing_dir=str(landing), db=str(db))
    assert gated["built"] == [str(DAY)] and gate.scopes == [(DAY, DAY)]
    assert published(db) == [(DAY, True)]


def test_a_day_awaiting_its_bill_is_built_not_published_until_its_bill_lands(
        harness, tmp_path, gate):
    """Until its bill lands the day is built and held: published at $0 before, it passed the
    gate and every later backfill skipped it as already published."""
    import shutil

    from flows.backfill import backfill
    from recon.simulate import simulate

    landing, late, db = tmp_path / "landing", tmp_path / "late", tmp_path / "recon.duckdb"
    simulate(landing, seed=7, days=2, nodes=2, endpoints=1, start_day=DAY, late_bill=DAY2,
             late_out=late)
    run = lambda: backfill(start=str(DAY), end=str(DAY2), landing_dir=str(landing),
                           db=str(db), exports_dir=str(tmp_path / "exports"))
    assert run() == {"built": [str(DAY)], "skipped": [], "batches": [[str(DAY), str(DAY2)]],
                     "awaiting": [str(DAY2)]}
    assert published(db) == [(DAY, True)]
    assert sorted(p.name for p in (tmp_path / "exports").iterdir()) == [
        f"costs_{DAY}.csv", f"findings_{DAY}.csv"]
    assert run()["awaiting"] == [str(DAY2)]  # a rerun before the bill: held again
    shutil.copytree(late, landing / "late-export")
    assert run() == {"built": [str(DAY2)], "skipped": [str(DAY)],
                     "batches": [[str(DAY2), str(DAY2)]], "awaiting": []}
    assert published(db) == [(DAY, True), (DAY2, True)]
    assert q(db, "select sum(billed_amount) from marts.resource_day where day = ?",
             [DAY2])[0][0] > 10


def test_a_day_with_neither_lifecycle_data_nor_a_bill_fails_the_backfill(harness, landing,
                                                                         tmp_path, gate):
    from flows.backfill import backfill

    db, far = tmp_path / "recon.duckdb", DAY + timedelta(days=30)
    state = backfill(start=str(DAY), end=str(DAY), landing_dir=str(landing), db=str(db),
                     return_state=True)
    assert state.is_completed()
    state = backfill(start=str(far), end=str(far), landing_dir=str(landing), db=str(db),
                     return_state=True)
    assert state.is_failed(), state
    with pytest.raises(RuntimeError, match=f"no lifecycle data and no bill on {far}"):
        state.result()
    assert published(db) == [(DAY, True)]


def test_batches_are_runs_of_consecutive_days():
    from recon.published import batches

    d = [DAY + timedelta(days=i) for i in range(10)]
    assert batches([d[0], d[1], d[2], d[4], d[5], d[9]], 2) == [
        [d[0], d[1]], [d[2]], [d[4], d[5]], [d[9]]]
    assert batches(d, 7) == [d[:7], d[7:]]
    assert batches([], 3) == []
    with pytest.raises(ValueError, match="at least one day"):
        batches(d, 0)
