"""Large tables are validated in DuckDB with GX on a small batch (`recon.gate.pushdown._Pushdown`).

Differential tests: the same data validated by a full read (`pushdown_min_rows=None`) and by the
pushdown (`pushdown_min_rows=0`) must give the same `marts.validation_results` rows — success,
observed value, unexpected count and the message naming the sample rows. On the clean simulated
warehouse, and on a synthetic table with the edge cases: NULL and NaN, decimals at a bound,
duplicates far apart, more unexpected rows than the sample, row conditions, every ignore_row_if,
expectations without an SQL form. (Every seeded failure of tests/test_expectations.py is compared
both ways there.)
"""

import json
import shutil

import duckdb
import pytest

from recon.gate.gx import GxSession
from recon.gate.pushdown import CHECK_BLOCK_ROWS, CHECK_BLOCKS, _Pushdown
from recon.gate.run import validate
from recon.gate.suites import SAMPLE, load_suites

TABLE_SUITES = {s.name for s in load_suites() if s.table}


def rows(report):
    return [r[1:9] for r in report.rows]  # without run_id and checked_at


def both(con, session, **kw):
    full = validate(con, "full", session=session, write=False, pushdown_min_rows=None, **kw)
    pushed = validate(con, "pushed", session=session, write=False, pushdown_min_rows=0, **kw)
    assert set(full.paths.values()) == {"full"}
    return full, pushed


@pytest.fixture(scope="module")
def gx_session():
    return GxSession()


@pytest.fixture(scope="module")
def wh(sim_run, tmp_path_factory):
    db = tmp_path_factory.mktemp("pushdown") / "recon.duckdb"
    shutil.copy(sim_run["db"], db)
    con = duckdb.connect(str(db))
    con.execute("set TimeZone = 'UTC'")
    yield con
    con.close()


def test_clean_warehouse_same_results_both_ways(wh, gx_session):
    full, pushed = both(wh, gx_session)
    assert rows(pushed) == rows(full)
    assert full.success and pushed.success
    assert pushed.paths == {s: ("pushdown" if s in TABLE_SUITES else "full") for s in full.paths}


# ---------------------------------------------------------------- a synthetic table

N = 5000
EDGE_TABLE = f"""
create table main.edge as
select i as id,
       case when i % 997 = 13 then null else 'k' || (i % 2500) end as key,        -- duplicates 2500 apart
       case when i in (4000, 4998) then 'dup' else 'u' || i end as uniq,          -- one pair, far apart
       case when i % 50 = 7 then null else ['p', 'q', 'r'][1 + i % 3] end as kind,
       case when i % 41 = 0 then 'x' when i % 3 = 0 then null else 'p' end as label,
       case when i % 400 = 11 then 'nan'::double when i % 333 = 5 then null
            else (i % 17) - 3.5 end::double as v,
       case when i % 9 = 0 then null else (i % 11) - 2 end::double as w,
       case when i = 4321 then 9999999.99999999999 when i = 4322 then 9999999.999999999
            when i = 4323 then -10000000.000000000001 when i = 4324 then -9999999.99999999999
            when i = 4325 then -1234.000000000001 else i * 0.001 end::decimal(38, 12) as amount,
       case when i % 600 = 1 then null else (i % 5) - 1 end::hugeint as gpus,
       timestamptz '2026-06-01 00:00:00+00' + to_seconds(i) as t0,
       case when i % 700 = 3 then null
            else timestamptz '2026-06-01 00:00:00+00' + to_seconds(i + (i % 13) - 1) end as t1,
       case when i % 1111 = 0 then null else '{{"i": ' || i || '}}' end::json as doc,
       case when i % 123 = 0 then 'F-bad' else 'F-' || lpad(printf('%x', i), 16, '0') end as finding_id
from range({N}) r(i)
"""

EXPECTATIONS = [
    ("expect_column_values_to_not_be_null", {"column": "key"}),
    ("expect_column_values_to_not_be_null", {"column": "v"}),  # NaN is missing too
    ("expect_column_values_to_not_be_null", {"column": "doc"}),
    ("expect_column_values_to_not_be_null", {"column": "key", "row_condition": {
        "type": "comparison", "column": {"name": "kind"}, "operator": "!=", "parameter": "q"}}),
    ("expect_column_values_to_not_be_null", {"column": "label", "row_condition": {
        "type": "and", "conditions": [
            {"type": "comparison", "column": {"name": "kind"}, "operator": "==", "parameter": "p"},
            {"type": "nullity", "column": {"name": "v"}, "is_null": False}]}}),
    ("expect_column_values_to_be_unique", {"column": "uniq"}),
    ("expect_column_values_to_be_unique", {"column": "key"}),
    ("expect_compound_columns_to_be_unique", {"column_list": ["key", "kind"]}),
    ("expect_compound_columns_to_be_unique", {"column_list": ["key", "label"],
                                              "ignore_row_if": "any_value_is_missing"}),
    ("expect_compound_columns_to_be_unique", {"column_list": ["kind", "label"], "ignore_row_if": "never"}),
    ("expect_column_values_to_be_in_set", {"column": "kind", "value_set": ["p", "q"]}),
    ("expect_column_values_to_be_in_set", {"column": "gpus", "value_set": [0, 1, 2, 3]}),
    ("expect_column_values_to_be_between", {"column": "v", "min_value": -3}),
    ("expect_column_values_to_be_between", {"column": "w", "min_value": -2, "max_value": 7.5,
                                            "strict_min": True, "strict_max": True}),
    ("expect_column_values_to_be_between", {"column": "amount", "min_value": -1e7, "max_value": 1e7,
                                            "strict_min": True, "strict_max": True}),
    ("expect_column_values_to_be_between", {"column": "gpus", "min_value": 0, "row_condition": {
        "type": "comparison", "column": {"name": "label"}, "operator": "==", "parameter": "p"}}),
    ("expect_column_values_to_be_between", {"column": "id", "max_value": N}),
    ("expect_column_pair_values_a_to_be_greater_than_b", {
        "column_A": "t1", "column_B": "t0", "or_equal": True, "ignore_row_if": "either_value_is_missing"}),
    ("expect_column_pair_values_a_to_be_greater_than_b", {
        "column_A": "t1", "column_B": "t0", "or_equal": False, "ignore_row_if": "neither",
        "row_condition": {"type": "comparison", "column": {"name": "kind"}, "operator": "==", "parameter": "q"}}),
    ("expect_column_pair_values_a_to_be_greater_than_b", {"column_A": "v", "column_B": "w"}),
    ("expect_column_pair_values_a_to_be_greater_than_b", {
        "column_A": "amount", "column_B": "gpus", "ignore_row_if": "neither",
        "row_condition": {"type": "nullity", "column": {"name": "label"}, "is_null": True}}),
    ("expect_column_pair_values_to_be_in_set", {
        "column_A": "kind", "column_B": "label", "ignore_row_if": "neither",
        "value_pairs_set": [["p", "p"], ["q", "p"], ["r", "p"], ["p", None]]}),
    ("expect_column_pair_values_to_be_in_set", {
        "column_A": "label", "column_B": "kind", "value_pairs_set": [["p", "p"], ["p", "q"]]}),
    ("expect_table_row_count_to_equal", {"value": N}),
    ("expect_table_row_count_to_be_between", {"min_value": 1, "max_value": 10}),
    # no SQL form here: run on a read of their own columns, in the same suite
    ("expect_column_values_to_match_regex", {"column": "finding_id", "regex": "^F-[0-9a-f]{16}$"}),
    ("expect_column_values_to_not_be_null", {"column": "label", "mostly": 0.5}),
]


def write_suite(path, expectations, name="main.edge", row_key=("id",)):
    path.joinpath(f"{name}.json").write_text(json.dumps({
        "name": name, "meta": {"table": name, "row_key": list(row_key)},
        "expectations": [{"type": t, "kwargs": kw, "meta": {"severity": "critical"}}
                         for t, kw in expectations]}))


@pytest.fixture
def edge(tmp_path):
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute(EDGE_TABLE)
    write_suite(tmp_path, EXPECTATIONS)
    yield con, tmp_path
    con.close()


def test_edge_cases_same_results_both_ways(edge, gx_session):
    con, suite_dir = edge
    full, pushed = both(con, gx_session, suite_dir=suite_dir)
    assert pushed.paths == {"main.edge": "pushdown"}
    got, want = rows(pushed), rows(full)
    assert [r[:2] for r in got] == [r[:2] for r in want]
    for g, w in zip(got, want, strict=True):
        assert g == w
    # the data does exercise the cases: most expectations fail, several beyond the sample size
    by_label = {f"{r[1]}({r[2] or ''})": r for r in got}
    assert sum(not r[3] for r in got) >= 20
    assert by_label["expect_column_values_to_be_unique(uniq)"][5] == 2
    assert "uniq=dup" in by_label["expect_column_values_to_be_unique(uniq)"][7]
    assert sum((r[5] or 0) > SAMPLE for r in got) >= 8
    assert any(r[7] and " more" in r[7] for r in got)
    amount = by_label["expect_column_values_to_be_between(amount)"]
    # |x| < 1e7 as decimals, but pandas gets 1e7 (DuckDB's double(unscaled) / 10^12, which is not
    # cast(x as double)) for 9999999.99999999999, 9999999.999999999 and -9999999.99999999999
    assert amount[5] == 4, amount


def test_pushdown_batch_is_small_and_gx_really_runs(edge, gx_session, monkeypatch):
    con, suite_dir = edge
    con.execute(f"insert into main.edge select e.* replace (id + {N} * k as id, null as key) "
                "from main.edge e, range(1, 40) t(k)")  # 200,000 rows, 80,000+ without a key
    seen = []
    real_run = GxSession.run

    def run(self, suite, df):
        seen.append((len(suite.expectations), len(df)))
        return real_run(self, suite, df)

    monkeypatch.setattr(GxSession, "run", run)
    report = validate(con, "big", session=gx_session, suite_dir=suite_dir, write=False)
    assert report.paths == {"main.edge": "pushdown"}
    n_row_checks = len(EXPECTATIONS) - 4  # two table counts, two without an SQL form
    batch = next(n for k, n in seen if k == n_row_checks)
    assert batch <= CHECK_BLOCKS * CHECK_BLOCK_ROWS + 2 * SAMPLE * n_row_checks
    nn_key = next(r for r in report.rows if r[2:4] == ("expect_column_values_to_not_be_null", "key"))
    assert nn_key[6] == con.execute("select count(*) from main.edge where key is null").fetchone()[0] > 80_000
    assert f"of {40 * N} rows fail" in nn_key[8]
    count = next(r for r in report.rows if r[2] == "expect_table_row_count_to_equal")
    assert (count[4], count[5]) == (False, str(40 * N))


def test_disagreement_falls_back_to_a_full_read(edge, gx_session, monkeypatch, caplog):
    """If the SQL translation were wrong on a row GX also sees, the suite is read whole instead."""
    con, suite_dir = edge
    write_suite(suite_dir, [("expect_column_values_to_be_between", {"column": "id", "max_value": 100})])
    real_check = _Pushdown.check

    def wrong(self, index, exp):  # a translation that misses every unexpected row
        c = real_check(self, index, exp)
        c.bad = "false"
        return c

    monkeypatch.setattr(_Pushdown, "check", wrong)
    report = validate(con, "t", session=gx_session, suite_dir=suite_dir, write=False, pushdown_min_rows=0)
    assert report.paths == {"main.edge": "full"}
    assert "disagree" in caplog.text
    assert [f.unexpected_count for f in report.critical_failures] == [N - 101]


def test_small_tables_and_views_read_whole(edge, gx_session):
    con, suite_dir = edge
    con.execute("create view main.edge_view as select * from main.edge")
    write_suite(suite_dir, [("expect_column_values_to_not_be_null", {"column": "key"})], name="main.edge_view")
    report = validate(con, "t", session=gx_session, suite_dir=suite_dir, write=False,
                      pushdown_min_rows=N + 1)
    assert report.paths == {"main.edge": "full", "main.edge_view": "full"}
    report = validate(con, "t", session=gx_session, suite_dir=suite_dir, write=False, pushdown_min_rows=N)
    assert report.paths == {"main.edge": "pushdown", "main.edge_view": "full"}


@pytest.mark.parametrize("min_rows", [None, 0], ids=["full", "pushdown"])
def test_metric_error_is_reported_with_its_message(tmp_path, gx_session, min_rows):
    """GX keys the exception of a metric that raised by metric id, not as one ExceptionInfo.
    The gate read only the latter: a bad regex passed as an ordinary failure, "observed None of
    None rows unexpected, expected {}", with no word of the error."""
    con = duckdb.connect()
    con.execute("create table main.t as select range as id, 'F-' || range as s from range(10)")
    write_suite(tmp_path, [("expect_column_values_to_match_regex", {"column": "s", "regex": "("}),
                           ("expect_column_values_to_not_be_null", {"column": "s"})], name="main.t")
    report = validate(con, "t", session=gx_session, suite_dir=tmp_path, write=False,
                      pushdown_min_rows=min_rows)
    bad, fine = rows(report)
    assert bad[1:3] == ("expect_column_values_to_match_regex", "s")
    assert bad[3] is False and bad[7].startswith("main.t: expect_column_values_to_match_regex(s) "
                                                 "could not be evaluated: ")
    assert "None of None" not in bad[7] and bad[4].startswith("error: ")
    assert fine[3] is True
    assert [f.expectation for f in report.critical_failures] == ["expect_column_values_to_match_regex"]


@pytest.mark.filterwarnings("ignore:Series.values returning an ndarray")  # (as GxSession.run does)
@pytest.mark.parametrize("min_rows", [None, 0], ids=["full", "pushdown"])
def test_basic_first_then_summary_gives_summary_results(edge, gx_session, monkeypatch, min_rows):
    """GxSession.run runs every expectation at GX's BASIC result format, then only the failed
    ones at SUMMARY: the report must be the one SUMMARY alone gives (counts, samples, rows)."""
    con, suite_dir = edge
    calls = []
    batch_type = type(gx_session._batches.get_batch(batch_parameters={"dataframe": con.sql("select 1").df()}))
    real_validate = batch_type.validate

    def counting(batch, suite, result_format=None, **kw):
        calls.append((result_format["result_format"], len(suite.expectations)))
        return real_validate(batch, suite, result_format=result_format, **kw)

    monkeypatch.setattr(batch_type, "validate", counting)
    got = validate(con, "t", session=gx_session, suite_dir=suite_dir, write=False,
                   pushdown_min_rows=min_rows)
    basic = sum(n for f, n in calls if f == "BASIC")
    summary = sum(n for f, n in calls if f == "SUMMARY")
    assert basic == len(EXPECTATIONS) and 0 < summary < basic  # only the failed ones again

    def summary_only(self, suite, df):
        batch = self._batches.get_batch(batch_parameters={"dataframe": df})
        return real_validate(batch, self.suite(suite), result_format={
            "result_format": "SUMMARY", "partial_unexpected_count": SAMPLE,
            "unexpected_index_column_names": [c for c in suite.row_key if c in df.columns]}).results

    monkeypatch.setattr(GxSession, "run", summary_only)
    monkeypatch.setattr(batch_type, "validate", real_validate)
    want = validate(con, "t", session=gx_session, suite_dir=suite_dir, write=False,
                    pushdown_min_rows=min_rows)
    assert rows(got) == rows(want)
    assert sum(not r[3] for r in rows(got)) >= 20
