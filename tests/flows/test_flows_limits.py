"""A task carries a concurrency tag only when that tag's limit exists (flows/common.py): Prefect
asks its API for a slot of every tag a task run carries, and on a SQLite-backed server that
write costs ~1.7 s whenever it meets the server's own writes (bench/README.md)."""

from __future__ import annotations

from contextlib import contextmanager

from tests.flows.conftest import DAY


def _task_run_tags(flow_run_id) -> dict[str, set[str]]:
    """{task name: tags} of a flow run's task runs (as the API recorded them)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(
            id=FlowRunFilterId(any_=[flow_run_id])))
    return {r.name.rsplit("-", 1)[0]: set(r.tags) for r in runs}


@contextmanager
def _limit(tag: str, slots: int = 1):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        client.create_concurrency_limit(tag=tag, concurrency_limit=slots)
    try:
        yield
    finally:
        with get_client(sync_client=True) as client:
            client.delete_concurrency_limit_by_tag(tag)


def test_limited_drops_only_limit_tags_without_a_limit_and_leaves_the_task_as_it_was():
    from prefect import task

    from flows.common import RUNPOD_TAG, WAREHOUSE_TAG, limited

    @task(tags=[WAREHOUSE_TAG, RUNPOD_TAG, "team-x"])
    def t():
        return 1

    assert limited(t, frozenset()).tags == {"team-x"}  # a tag that is not a limit tag stays
    assert limited(t, frozenset({WAREHOUSE_TAG})).tags == {WAREHOUSE_TAG, "team-x"}
    assert limited(t, frozenset({WAREHOUSE_TAG, RUNPOD_TAG})) is t  # nothing to drop: the task
    assert t.tags == {WAREHOUSE_TAG, RUNPOD_TAG, "team-x"}  # the task itself keeps its tags


def test_tags_with_limits_reads_the_limits_that_exist(harness):
    from flows.common import RUNPOD_TAG, WAREHOUSE_TAG, tags_with_limits

    assert tags_with_limits() == frozenset()
    with _limit(WAREHOUSE_TAG):
        assert tags_with_limits() == {WAREHOUSE_TAG}
        with _limit(RUNPOD_TAG, 2):
            assert tags_with_limits() == {WAREHOUSE_TAG, RUNPOD_TAG}
    assert tags_with_limits() == frozenset()


def test_tags_with_limits_keeps_every_tag_when_the_api_cannot_tell():
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.common import LIMIT_TAGS, tags_with_limits

    # nothing listens on port 9 of the loopback: the read fails, no limit may be skipped
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        assert tags_with_limits() == frozenset(LIMIT_TAGS)


def test_the_daily_flow_tags_its_warehouse_tasks_only_under_a_limit(daily_run, landing, tmp_path):
    from flows.common import WAREHOUSE_TAG
    from flows.daily_reconciliation import daily_reconciliation

    # the session's daily run: no limit exists, so no task run carries the tag
    tags = _task_run_tags(daily_run["flow_run_id"])
    assert {"build_marts", "validate_marts", "publish_summary"} <= set(tags)
    assert not any(WAREHOUSE_TAG in t for t in tags.values())
    # with the limit (one slot), the build and the gate take it in turn and the run completes
    with _limit(WAREHOUSE_TAG):
        state = daily_reconciliation(day=DAY.isoformat(), landing_dir=str(landing),
                                     db=str(tmp_path / "recon.duckdb"), return_state=True)
    assert state.is_completed()
    tags = _task_run_tags(state.state_details.flow_run_id)
    assert WAREHOUSE_TAG in tags["build_marts"] and WAREHOUSE_TAG in tags["validate_marts"]
    assert WAREHOUSE_TAG not in tags["publish_summary"]


def test_local_api_defaults_only_where_the_user_set_nothing(monkeypatch):
    """Run from the command line without a server, a flow starts Prefect's temporary API: its
    telemetry off (it logged an ERROR on every machine without internet) and a longer start
    allowed; a user's own value, or a real server (PREFECT_API_URL), is left alone."""
    import os

    from flows.common import LOCAL_API_DEFAULTS, local_api_defaults

    for k in LOCAL_API_DEFAULTS:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:4200/api")
    assert local_api_defaults() == {} and not any(k in os.environ for k in LOCAL_API_DEFAULTS)
    monkeypatch.delenv("PREFECT_API_URL")
    monkeypatch.setenv("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "30")
    assert local_api_defaults() == {"PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    assert os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    assert os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] == "30"
