"""Task logic without flow runs (`.fn`), against the loopback Runpod fake: key lookup, the
retry rule, the provider pull and inventory snapshot, day handling, markdown escaping."""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime

import pytest

KEY = "rpa_FLOWTEST_0123456789abcdef"


@pytest.fixture
def fake_runpod():
    from tests.fakes.runpod_api import FakeRunpodAPI, make_billing

    billing = make_billing(datetime(2026, 5, 30, tzinfo=UTC), hours=24 * 4)
    with FakeRunpodAPI(KEY, billing=billing, now=datetime(2026, 6, 3, 12, tzinfo=UTC)) as fake:
        yield fake


@pytest.fixture
def no_key(harness, monkeypatch):
    monkeypatch.delenv("RUNPOD_API_KEY", raising=False)


def test_pull_provider_window_lands_billing_and_never_logs_the_key(
        no_key, monkeypatch, fake_runpod, tmp_path, caplog):
    from flows.daily_reconciliation import pull_provider_window

    monkeypatch.setenv("RUNPOD_API_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    # Prefect may re-run its logging dictConfig (replacing the root handlers caplog relies on),
    # so also listen on the flows logger itself
    flows_log = logging.getLogger("flows")
    flows_log.addHandler(caplog.handler)
    monkeypatch.setattr(flows_log, "disabled", False)
    try:
        out = pull_provider_window.fn(str(tmp_path), date(2026, 5, 31), date(2026, 6, 1),
                                      base_url=fake_runpod.base_url)
    finally:
        flows_log.removeHandler(caplog.handler)
    assert out["files"] >= 3 and out["records"] > 0
    landed = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(landed) == out["files"]
    windows = {(s.query.get("startTime"), s.query.get("endTime"))
               for s in fake_runpod.served if "billing" in s.path}
    assert windows == {("2026-05-31T00:00:00Z", "2026-06-02T00:00:00Z")}
    assert "environment variable RUNPOD_API_KEY" in caplog.text
    assert KEY not in caplog.text
    assert all(KEY.encode() not in p.read_bytes() for p in landed)


def test_inventory_snapshot_and_collect_without_kubernetes(no_key, monkeypatch, fake_runpod,
                                                           tmp_path):
    from flows.collect import collect, snapshot_runpod_inventory

    monkeypatch.setenv("RUNPOD_API_KEY", KEY)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    out = snapshot_runpod_inventory.fn(str(tmp_path), base_url=fake_runpod.base_url)
    assert out["files"] >= 3
    # nothing to collect: no kubeconfig/contexts, not in a pod, inventory off
    assert collect.fn(landing_dir=str(tmp_path), runpod_inventory=False) == {}


def test_missing_key_fails_with_the_places_to_put_it(no_key, tmp_path):
    from flows.daily_reconciliation import pull_provider_window

    with pytest.raises(RuntimeError, match=r"runpod-api-key.*RUNPOD_API_KEY"):
        pull_provider_window.fn(str(tmp_path), date(2026, 6, 1), date(2026, 6, 1))


def test_secret_block_wins_over_the_environment(no_key, monkeypatch):
    from prefect.blocks.system import Secret

    from flows.common import SECRET_BLOCK, runpod_api_key

    monkeypatch.setenv("RUNPOD_API_KEY", "from-env")
    Secret(value="from-block").save(SECRET_BLOCK, overwrite=True)
    try:
        assert runpod_api_key() == ("from-block", "Secret block 'runpod-api-key'")
    finally:
        Secret.delete(SECRET_BLOCK)
    assert runpod_api_key() == ("from-env", "environment variable RUNPOD_API_KEY")


@pytest.mark.parametrize("exc, retry", [
    ("RunpodTransportError", True),
    ("RunpodRateLimitError", True),
    ("RunpodDeadlineError", False),
    ("task timeout", False),
    ("RunpodAuthError", False),
    ("RunpodResponseError", False),
    ("5xx", True),
    ("4xx", False),
    ("config", False),
])
def test_task_retries_only_transient_failures(exc, retry):
    from prefect.states import Failed

    import connectors.runpod as rp
    from flows.common import retry_transient

    if exc == "config":
        err = RuntimeError("no Runpod API key")
    elif exc == "task timeout":
        from prefect.task_engine import TaskRunTimeoutError

        err = TaskRunTimeoutError("Scope timed out after 2100 second(s).")
    elif exc == "RunpodAuthError":
        err = rp.RunpodAuthError("401", endpoint="/v2/billing/pods", status=401)
    elif exc in ("5xx", "4xx"):
        err = rp.RunpodAPIError("x", endpoint="/v2/billing/pods",
                                status=503 if exc == "5xx" else 400)
    else:
        err = getattr(rp, exc)("boom", endpoint="/v2/billing/pods")
    assert retry_transient(None, None, Failed(data=err)) is retry


def test_a_pull_cut_by_its_deadline_says_what_it_gave_up(no_key, monkeypatch, fake_runpod,
                                                        tmp_path, caplog):
    """Against the loopback fake, dripping its pods billing a byte every 50 ms: the pull ends
    by the request deadline, lands the rest and names the window it gave up in its result,
    its log and the day's summary; each Runpod task has a Prefect timeout beyond the pull's
    own deadline."""
    import time

    from connectors.runpod import settings
    from flows.collect import snapshot_runpod_inventory
    from flows.common import TASK_TIMEOUT_MARGIN_S
    from flows.daily_reconciliation import pull_provider_window, render_markdown, with_given_up
    from tests.fakes.runpod_api import Fault

    monkeypatch.setenv("RUNPOD_API_KEY", KEY)
    monkeypatch.setattr(settings, "REQUEST_DEADLINE_S", 2.0)
    fake_runpod.inject("/v2/billing/pods", Fault.drip(0.05), times=5)
    flows_log = logging.getLogger("flows")
    flows_log.addHandler(caplog.handler)
    monkeypatch.setattr(flows_log, "disabled", False)
    t0 = time.monotonic()
    try:
        out = pull_provider_window.fn(str(tmp_path), date(2026, 5, 31), date(2026, 6, 1),
                                      base_url=fake_runpod.base_url)
    finally:
        flows_log.removeHandler(caplog.handler)
    assert time.monotonic() - t0 < 2.0 + 4.0  # the cut pull, and the other three calls
    assert out["files"] == 3 and len(out["given_up"]) == 1
    assert out["given_up"][0].startswith("GET /v2/billing/pods for window [2026-05-31T00:00:00Z,"
                                         " 2026-06-02T00:00:00Z): cut off after 2.")
    assert "gave up 1 call(s) at a deadline, not landed: GET /v2/billing/pods" in caplog.text
    load = with_given_up({"files": 3, "records_in": 9, "loaded": 9, "quarantined": 0,
                          "skipped": 0, "staging_quarantined": 0}, out)
    md = render_markdown(date(2026, 6, 1), "db", None, [], load, None)
    assert "Provider pull: gave up 1 call(s) at a deadline" in md
    # (the markdown escapes its brackets: a call's text is data, never a link)
    assert "* GET /v2/billing/pods for window \\[2026-05-31T00:00:00Z" in md
    expected = settings.PULL_DEADLINE_S + TASK_TIMEOUT_MARGIN_S
    assert pull_provider_window.timeout_seconds == expected
    assert snapshot_runpod_inventory.timeout_seconds == expected


def test_days_and_defaults():
    from flows.common import days_between, parse_day

    assert days_between("2026-06-01", "2026-06-03") == [date(2026, 6, d) for d in (1, 2, 3)]
    with pytest.raises(ValueError, match="before start"):
        days_between("2026-06-02", "2026-06-01")
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        parse_day("01/06/2026")
    assert parse_day(None) == datetime.now(UTC).date().fromordinal(
        datetime.now(UTC).date().toordinal() - 1)


def test_markdown_escapes_cells():
    from decimal import Decimal

    from flows.daily_reconciliation import render_markdown

    f = {"code": "BILLED_AFTER_EXIT", "severity": "high", "resource_id": "pod|x",
         "amount_at_stake": Decimal("1.005"), "message": "a | b\nc"}
    md = render_markdown(date(2026, 6, 1), "x.duckdb", None, [f], None)
    assert "pod\\|x" in md and "a \\| b c" in md and "No billed resource" in md


def test_markdown_renders_no_markup_from_data():
    """The summary artifact renders no `<img>`/`<svg>` from pod and namespace names (escaping
    only `|` and newlines is not enough): HTML from data is shown as text, and so is a markdown
    link."""
    from decimal import Decimal

    from flows.daily_reconciliation import render_markdown

    f = {"code": "BILLED_AFTER_EXIT", "severity": "warning",
         "resource_id": "<img src=x onerror=alert(1)>",
         "amount_at_stake": Decimal("2"),
         "message": "pod ns/<svg onload=alert(1)> & [click](javascript:alert(1)) `x` a_b*c*"}
    validation = {"run_id": "r", "evaluated": 2, "passed": 1,
                  "warnings": ["<script>alert(1)</script> in pod_x"]}
    md = render_markdown(date(2026, 6, 1), "x.duckdb", None, [f], None, validation)
    for tag in ("<img", "<svg", "<script", "[click](", "`x`"):
        assert tag not in md, tag
    assert "&lt;img src=x onerror=alert(1)&gt;" in md
    assert "ns/&lt;svg onload=alert(1)&gt; &amp; \\[click\\](javascript:alert(1)) \\`x\\`" in md
    assert "a\\_b\\*c\\*" in md and "&lt;script&gt;" in md


def test_a_critical_validation_failure_fails_the_task(tmp_path, monkeypatch):
    import recon.gate.run
    from flows.daily_reconciliation import validate_marts
    from recon.gate.run import Failure, ValidationReport
    from recon.pipeline import run
    from recon.simulate import simulate

    simulate(tmp_path / "in", seed=3, days=1, nodes=1, endpoints=1)
    run(tmp_path / "in", tmp_path / "db.duckdb", day_from=date(2026, 6, 1), day_to=date(2026, 6, 1))
    bad = Failure("marts.findings", "expect_column_values_to_not_be_null", "day", "critical", 1,
                  "marts.findings.day: 1 null")
    monkeypatch.setattr(recon.gate.run, "validate",
                        lambda con, run_id, **kw: ValidationReport(run_id, critical_failures=[bad]))
    with pytest.raises(RuntimeError, match=r"(?s)validation failed, nothing published.*1 null"):
        validate_marts.fn(str(tmp_path / "db.duckdb"), date(2026, 6, 1))


def test_collect_kubernetes_lists_a_cluster_from_a_kubeconfig(tmp_path):
    from flows.collect import collect_kubernetes
    from tests.fakes.k8s_api import FakeKubeAPI, make_pod

    with FakeKubeAPI() as fake:
        fake.create("pods", make_pod("trainer-0", "ml"))
        kubeconfig = fake.write_kubeconfig(tmp_path / "kubeconfig", "c1")
        snap = collect_kubernetes.fn(str(tmp_path / "landing"), kubeconfig=str(kubeconfig),
                                     contexts=["c1"], once=True)
    assert list(snap["clusters"]) == ["c1"]
    assert snap["clusters"]["c1"]["pods"]["written"] >= 1 and any(
        "trainer-0" in p.read_text() for p in (tmp_path / "landing").rglob("*") if p.is_file())
    # a resource whose list gives up fails the task, naming it (its data is missing)
    with FakeKubeAPI() as fake:
        fake.create("pods", make_pod("trainer-1", "ml"))
        fake.fail_next(100, status=500, path_prefix="/api/v1/nodes")
        kubeconfig = fake.write_kubeconfig(tmp_path / "kubeconfig2", "c1")
        with pytest.raises(RuntimeError, match=r"1 Kubernetes list\(s\) gave up .*: c1/nodes "):
            collect_kubernetes.fn(str(tmp_path / "landing2"), kubeconfig=str(kubeconfig),
                                  contexts=["c1"], once=True)
    assert any("trainer-1" in p.read_text()
               for p in (tmp_path / "landing2").rglob("*") if p.is_file())


def test_a_rerun_skips_a_finished_pull(no_key, monkeypatch, fake_runpod, tmp_path):
    from prefect import flow

    from flows.daily_reconciliation import pull_provider_window

    monkeypatch.setenv("RUNPOD_API_KEY", KEY)

    @flow
    def twice():
        a = pull_provider_window(str(tmp_path), date(2026, 5, 31), date(2026, 6, 1),
                                 base_url=fake_runpod.base_url)
        n = len(fake_runpod.served)
        b = pull_provider_window(str(tmp_path), date(2026, 5, 31), date(2026, 6, 1),
                                 base_url=fake_runpod.base_url)
        return a, b, n, len(fake_runpod.served)

    a, b, after_first, after_second = twice()
    assert after_first > 0 and after_second == after_first  # the second call came from the cache
    assert a == b


@pytest.mark.parametrize("validation", [True, False])
def test_the_build_prefetches_gx_when_a_gate_follows(tmp_path, monkeypatch, validation):
    """reconcile_day's build starts Great Expectations' import during its commit exactly when
    its gate follows (recon.gate.gx.prefetch_gx)."""
    import recon.gate.gx
    from flows import daily_reconciliation as D
    from recon.simulate import simulate

    simulate(tmp_path / "in", seed=3, days=1, nodes=1, endpoints=1)
    prefetched = []
    monkeypatch.setattr(recon.gate.gx, "prefetch_gx", lambda: prefetched.append(True))
    monkeypatch.setattr(D, "tags_with_limits", lambda: frozenset())
    monkeypatch.setattr(D, "limited", lambda task, limits: getattr(task, "fn", task))  # no task runs
    monkeypatch.setattr(D, "validate_marts", lambda db, day, last_day: {"skipped": "test"})
    monkeypatch.setattr(D, "publish_summary", lambda db, day, load, checked: load)
    out = D.reconcile_day(date(2026, 6, 1), str(tmp_path / "in"), str(tmp_path / "db.duckdb"),
                          validation=validation)
    assert out["loaded"] > 0
    assert prefetched == ([True] if validation else [])


def test_the_daily_steps_rebuild_the_trailing_days_a_restatement_changes(monkeypatch, tmp_path):
    """The daily run pulls the trailing days again because Runpod restates recent buckets; a
    restated bucket must reach its own day's marts and CSVs, not only staging: were only `day`
    rebuilt, 2026-06-01 would keep its first bill after the restatement was pulled."""
    import csv
    import functools
    from decimal import Decimal

    import duckdb

    import flows.daily_reconciliation as dr
    from tests.fakes.runpod_api import FakeRunpodAPI, VirtualClock, make_billing

    billing = make_billing(datetime(2026, 5, 28, tzinfo=UTC), hours=24 * 8)
    bucket = datetime(2026, 6, 1, 10, tzinfo=UTC)
    pod1 = [r for r in billing["pods"] if r["podId"] == "pod_a1"]
    orig = next(r["totalAmount"] for r in pod1 if r["startTime"] == "2026-06-01T10:00:00Z")
    day1 = sum(Decimal(str(r["totalAmount"])) for r in pod1
               if r["startTime"].startswith("2026-06-01"))
    published: list[date] = []
    monkeypatch.setattr(dr, "limited", lambda task, limits: getattr(task, "fn", task))
    monkeypatch.setattr(dr, "tags_with_limits", lambda: frozenset())
    monkeypatch.setattr(dr, "publish_summary",
                        lambda db, day, load, checked: published.append(day) or {"day": day})
    monkeypatch.setenv("RUNPOD_API_KEY", KEY)
    land, db, out = tmp_path / "landing", tmp_path / "r.duckdb", tmp_path / "exports"
    with FakeRunpodAPI(KEY, billing=billing, clock=VirtualClock()) as fake:
        monkeypatch.setattr(dr, "pull_provider_window", functools.partial(
            dr.pull_provider_window.fn, base_url=fake.base_url))
        fake.restate("pods", "pod_a1", bucket, total=orig + 5.0, from_pull=2)  # the 2nd pull
        dr.reconcile_day(date(2026, 6, 1), str(land), str(db), pull_provider=True,
                         trailing_days=3, validation=False, exports_dir=str(out))
        assert published == [date(2026, 5, 30), date(2026, 5, 31), date(2026, 6, 1)]
        published.clear()
        ret = dr.reconcile_day(date(2026, 6, 2), str(land), str(db), pull_provider=True,
                               trailing_days=3, validation=False, exports_dir=str(out))
    assert published == [date(2026, 5, 31), date(2026, 6, 1), date(2026, 6, 2)]  # the day last
    assert ret == {"day": date(2026, 6, 2)}
    con = duckdb.connect(str(db), read_only=True)
    billed = con.execute("select billed_amount from marts.resource_day "
                         "where resource_id = 'pod_a1' and day = '2026-06-01'").fetchone()[0]
    con.close()
    assert billed == day1 + 5  # the restated bill, where it read day1 before
    with open(out / "costs_2026-06-01.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    pod_rows = [r for r in rows if "pod_a1" in r.values()]
    assert pod_rows and sum(Decimal(r["billed_amount"]) for r in pod_rows) == day1 + 5


def test_a_full_disk_fails_the_pull_build_and_export_with_one_sentence(no_key, monkeypatch,
                                                                      tmp_path):
    """A full disk during the pull, the build or the export failed the task with DuckDB's
    FatalException or a raw OSError: it is one sentence naming what to do, and not retried."""
    import errno

    import duckdb

    import connectors.runpod
    import recon.outputs.exports
    import recon.pipeline
    from flows.common import retry_transient
    from flows.daily_reconciliation import build_marts, export_finance, pull_provider_window

    monkeypatch.setenv("RUNPOD_API_KEY", KEY)
    db = tmp_path / "w.duckdb"
    duckdb.connect(str(db)).close()
    for exc in (OSError(errno.ENOSPC, "No space left on device"),
                duckdb.FatalException("FATAL Error: write failed: No space left on device")):
        def full(*a, exc=exc, **k):
            raise exc
        monkeypatch.setattr(connectors.runpod, "pull_billing", full)
        monkeypatch.setattr(recon.pipeline, "run", full)
        monkeypatch.setattr(recon.outputs.exports, "export_day", full)
        for call, where in (
                (lambda: pull_provider_window.fn(str(tmp_path), date(2026, 6, 1), date(2026, 6, 1),
                                                 base_url="http://127.0.0.1:9"),
                 f"landing the pull in {tmp_path}"),
                (lambda: build_marts.fn(str(tmp_path), str(db), date(2026, 6, 1)), f"writing {db}"),
                (lambda: export_finance.fn(str(db), date(2026, 6, 1), str(tmp_path / "ex")),
                 f"writing into {tmp_path / 'ex'}")):
            with pytest.raises(RuntimeError) as got:
                call()
            assert str(got.value).startswith(f"no space left on the disk while {where}: free "
                                              "space there"), got.value
            assert got.value.__cause__ is None

            class _State:
                def result(self, raise_on_failure=False):
                    return got.value
            assert retry_transient(None, None, _State()) is False
    monkeypatch.setattr(recon.pipeline, "run", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        build_marts.fn(str(tmp_path), str(db), date(2026, 6, 1))
