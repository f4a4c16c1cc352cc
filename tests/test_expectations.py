"""The GX suites of expectations/: a clean warehouse passes, and every expectation can fail.

One simulated warehouse (conftest's `sim_run`) is copied once; each case mutates it inside a
transaction, validates the one suite, and rolls back. One GX session serves the whole module.
"""

import shutil

import duckdb
import pytest

from recon.gate.run import validate
from recon.gate.suites import load_suites

SUITES = load_suites()  # plain JSON: collecting the cases does not import great_expectations
TABLE_SUITES = {s.name for s in SUITES if s.table}


def first(table: str, where: str = "true") -> str:
    return f"rowid = (select min(rowid) from {table} where {where})"


def null(table: str, column: str, where: str = "true") -> str:
    return f"update {table} set {column} = null where {first(table, where)}"


def dup(table: str) -> str:
    return f"insert into {table} select * from {table} where {first(table)}"


def set_(table: str, assignment: str, where: str = "true") -> str:
    return f"update {table} set {assignment} where {first(table, where)}"


NN, UNIQ, COMPOUND = ("expect_column_values_to_not_be_null", "expect_column_values_to_be_unique",
                      "expect_compound_columns_to_be_unique")
IN_SET, BETWEEN, GT = ("expect_column_values_to_be_in_set", "expect_column_values_to_be_between",
                       "expect_column_pair_values_a_to_be_greater_than_b")
REGEX = "expect_column_values_to_match_regex"
QROW_COUNT = "expect_table_row_count_to_equal()"
BILL, RD, SEG = "staging.stg_runpod__pod_billing", "marts.resource_day", "marts.billed_segments"
FND, WL = "marts.findings", "marts.workload_lifecycle"
INSTANCE, SERVERLESS, VOLUME = ("resource_kind = 'instance'", "resource_kind = 'serverless'",
                                "resource_kind = 'network_volume'")
QUARANTINE_ROW = "insert into raw.quarantine values ({}, 1, {}, {}, '{{}}')"
ALLOC, RATES, RESTATED, SETTLE = ("marts.allocation", "marts.rates", "marts.restatements",
                                  "marts.settlement")
# a restatement (the simulated fleet has none): a bucket's 1.00 USD pulled again as 1.50 USD
RESTATEMENT = {"resource_id": "'pod-1'", "bucket_start": "'2026-06-01 00:00:00+00'",
               "day": "'2026-06-01'", "previous_pulled_at": "'2026-06-01 02:00:00+00'",
               "pulled_at": "'2026-06-01 05:00:00+00'", "previous_amount": "1.0", "amount": "1.5",
               "change": "0.5", "source_file": "'bill.json'"}


INVOICE = "marts.invoice_tieout"
LIST = "marts.list_cost"
# an invoice row (the simulated fleet has none): June's pods invoiced $2.00, $3.00 reconciled,
# $1.00 of it landed after the invoice's issue
TIEOUT = {"invoice_id": "'INV-1'", "cost_center": "'research'", "service": "'pods'",
          "currency": "'USD'", "period_start": "'2026-06-01 00:00:00+00'",
          "period_end": "'2026-07-01 00:00:00+00'", "invoice_amount": "2.0",
          "reconciled_amount": "3.0", "unexplained_amount": "0", "status": "'explained'"}


def tieout(**values: str) -> str:
    """INSERT of TIEOUT with `values` (SQL literals) in place of its own."""
    row = {**TIEOUT, **values}
    return f"insert into {INVOICE} ({', '.join(row)}) values ({', '.join(row.values())})"


def restatement(**values: str) -> str:
    """INSERT of RESTATEMENT with `values` (SQL literals) in place of its own."""
    row = {**RESTATEMENT, **values}
    return f"insert into {RESTATED} ({', '.join(row)}) values ({', '.join(row.values())})"


def raw_keys(table: str) -> dict:
    return {f"{NN}(source_file)": null(table, "source_file"),
            f"{NN}(locator)": null(table, "locator"),
            f"{COMPOUND}(source_file, locator)": dup(table),
            f"{NN}(doc)": null(table, "doc")}


# (suite, label) -> SQL that breaks exactly that expectation (a list, or (sql, also_failing))
CASES = {
    "raw.k8s_objects": {
        **raw_keys("raw.k8s_objects"),
        f"{NN}(cluster)": null("raw.k8s_objects", "cluster"),
        f"{NN}(uid)": null("raw.k8s_objects", "uid"),
        f"{NN}(kind)": null("raw.k8s_objects", "kind"),
        f"{IN_SET}(kind)": set_("raw.k8s_objects", "kind = 'Secret'"),
        f"{IN_SET}(event_type)": set_("raw.k8s_objects", "event_type = 'BOOKMARK'"),
    },
    "raw.runpod_billing": {
        **raw_keys("raw.runpod_billing"),
        f"{NN}(source)": null("raw.runpod_billing", "source"),
        f"{IN_SET}(source)": set_("raw.runpod_billing", "source = 'v2_unknown'"),
    },
    "raw.runpod_inventory": {
        **raw_keys("raw.runpod_inventory"),
        f"{IN_SET}(inventory_kind)": set_("raw.runpod_inventory", "inventory_kind = 'clusters'"),
    },
    "raw.serverless_jobs": raw_keys("raw.serverless_jobs"),
    "raw.quarantine": {  # any quarantined row also raises the row-count warning
        f"{NN}(source_file)": (QUARANTINE_ROW.format("null", "'line 1'", "'bad'"), {QROW_COUNT}),
        f"{NN}(locator)": (QUARANTINE_ROW.format("'f.json'", "null", "'bad'"), {QROW_COUNT}),
        f"{NN}(reason)": (QUARANTINE_ROW.format("'f.json'", "'line 1'", "null"), {QROW_COUNT}),
        QROW_COUNT: QUARANTINE_ROW.format("'f.json'", "'line 1'", "'bad'"),
    },
    "raw.files": {
        f"{NN}(source_file)": ["create or replace table raw.files as select * from raw.files",
                               "insert into raw.files values (null, 'jsonl', repeat('0', 64), 1, 0, 0, 0, 0, null)"],
        f"{UNIQ}(source_file)": ["create or replace table raw.files as select * from raw.files",
                                 dup("raw.files")],
        f"{NN}(kind)": null("raw.files", "kind"),
        f"{REGEX}(sha256)": set_("raw.files", "sha256 = 'not-a-digest'"),
        f"{BETWEEN}(records_skipped)": set_(
            "raw.files", "records_in = records_in - records_skipped - 1, records_skipped = -1"),
        f"{BETWEEN}(accounting_difference)": set_("raw.files", "records_in = records_in + 1"),
        f"{BETWEEN}(loaded_difference)": f"delete from raw.k8s_objects where {first('raw.k8s_objects')}",
        f"{BETWEEN}(quarantined_difference)":
            "insert into raw.quarantine select source_file, 9, 'line 9', 'bad', '{}' from raw.files limit 1",
    },
    BILL: {
        f"{NN}(pod_id)": null(BILL, "pod_id"),
        f"{COMPOUND}(pod_id, bucket_start)": dup(BILL),
        f"{GT}(bucket_end, bucket_start)": set_(BILL, "bucket_end = bucket_start"),
        f"{IN_SET}(source_format)": set_(BILL, "source_format = 'v3'"),
        f"{NN}(total_amount_usd)": null(BILL, "total_amount_usd"),
        f"{BETWEEN}(total_amount_usd)": set_(BILL, "total_amount_usd = 10000000"),
        f"{BETWEEN}(compute_amount_usd)": set_(BILL, "compute_amount_usd = -10000000"),
        f"{BETWEEN}(disk_amount_usd)": set_(BILL, "disk_amount_usd = 20000000"),
        f"{BETWEEN}(compute_seconds_billed)": set_(BILL, "compute_seconds_billed = 86401"),
    },
    "staging.stg_runpod__serverless_billing": {
        f"{NN}(endpoint_id)": null("staging.stg_runpod__serverless_billing", "endpoint_id"),
        f"{COMPOUND}(endpoint_id, bucket_start)": dup("staging.stg_runpod__serverless_billing"),
        f"{GT}(bucket_end, bucket_start)": null("staging.stg_runpod__serverless_billing", "bucket_end"),
        f"{BETWEEN}(total_amount_usd)": set_("staging.stg_runpod__serverless_billing",
                                             "total_amount_usd = -10000000"),
        f"{BETWEEN}(worker_amount_usd)": set_("staging.stg_runpod__serverless_billing",
                                              "worker_amount_usd = 10000000"),
    },
    "staging.stg_runpod__network_volume_billing": {
        f"{NN}(volume_id)": null("staging.stg_runpod__network_volume_billing", "volume_id"),
        f"{COMPOUND}(volume_id, bucket_start)": dup("staging.stg_runpod__network_volume_billing"),
        f"{GT}(bucket_end, bucket_start)": set_("staging.stg_runpod__network_volume_billing",
                                                "bucket_end = bucket_start - interval 1 hour"),
        f"{BETWEEN}(total_amount_usd)": set_("staging.stg_runpod__network_volume_billing",
                                             "total_amount_usd = 1e8"),
    },
    "staging.stg_runpod__account_billing": {
        f"{UNIQ}(bucket_start)": dup("staging.stg_runpod__account_billing"),
        f"{GT}(bucket_end, bucket_start)": set_("staging.stg_runpod__account_billing",
                                                "bucket_end = bucket_start"),
        f"{NN}(total_amount_usd)": null("staging.stg_runpod__account_billing", "total_amount_usd"),
        f"{BETWEEN}(total_amount_usd)": set_("staging.stg_runpod__account_billing",
                                             "total_amount_usd = 10000000"),
    },
    RD: {
        f"{NN}(resource_id)": null(RD, "resource_id"),
        f"{NN}(day)": null(RD, "day"),
        f"{COMPOUND}(resource_id, day)": dup(RD),
        f"{IN_SET}(resource_kind)": set_(RD, "resource_kind = 'gpu'", INSTANCE),
        f"{NN}(billed_seconds)": null(RD, "billed_seconds"),
        f"{BETWEEN}(billed_seconds)": set_(RD, "billed_seconds = -1, serverless_idle_seconds = null",
                                           VOLUME),
        f"{BETWEEN}(billed_seconds where resource_kind != 'serverless')":
            set_(RD, "billed_seconds = 86401", INSTANCE),
        f"{BETWEEN}(billed_after_exit_seconds)": set_(RD, "billed_after_exit_seconds = -1", INSTANCE),
        f"{BETWEEN}(lingering_storage_seconds)": set_(RD, "lingering_storage_seconds = -1"),
        f"{BETWEEN}(serverless_idle_seconds)": set_(RD, "serverless_idle_seconds = -1", SERVERLESS),
        f"{GT}(billed_seconds, billed_after_exit_seconds)": set_(
            RD, "billed_after_exit_seconds = billed_seconds + 1", INSTANCE),
        f"{GT}(billed_seconds, serverless_idle_seconds)": set_(
            RD, "serverless_idle_seconds = billed_seconds + 1", SERVERLESS),
        f"{NN}(billed_amount)": null(RD, "billed_amount"),
        f"{BETWEEN}(billed_amount)": set_(RD, "billed_amount = 10000000"),
        f"{BETWEEN}(expected_amount)": set_(RD, "expected_amount = -10000000"),
        f"{NN}(rate_missing)": null(RD, "rate_missing"),
    },
    SEG: {
        f"{NN}(resource_id)": null(SEG, "resource_id"),
        f"{NN}(day)": null(SEG, "day"),
        f"{COMPOUND}(resource_id, day, category)": dup(SEG),
        "expect_column_pair_values_to_be_in_set(resource_kind, category)":
            set_(SEG, "category = 'cold_start'", INSTANCE),
        f"{NN}(seconds)": null(SEG, "seconds"),
        f"{BETWEEN}(seconds)": set_(SEG, "seconds = -1"),
        f"{NN}(amount)": null(SEG, "amount"),
        f"{BETWEEN}(amount)": set_(SEG, "amount = 10000000"),
        f"{BETWEEN}(expected_amount)": set_(SEG, "expected_amount = -20000000"),
    },
    FND: {
        f"{NN}(finding_id)": null(FND, "finding_id"),
        f"{UNIQ}(finding_id)": set_(FND, "finding_id = (select max(finding_id) from marts.findings)",
                                        "finding_id < (select max(finding_id) from marts.findings)"),
        f"{REGEX}(finding_id)": set_(FND, "finding_id = 'finding-1'"),
        f"{IN_SET}(code)": set_(FND, "code = 'BILLED_TOO_MUCH'"),
        f"{NN}(code)": null(FND, "code"),
        f"{IN_SET}(severity)": set_(FND, "severity = 'critical'"),
        f"{NN}(severity)": null(FND, "severity"),
        f"{NN}(resource_id)": null(FND, "resource_id"),
        f"{NN}(day)": null(FND, "day"),
        f"{GT}(window_end, window_start)": set_(FND, "window_end = window_start"),
        f"{BETWEEN}(seconds)": set_(FND, "seconds = -1"),
        f"{BETWEEN}(amount_at_stake)": set_(FND, "amount_at_stake = 10000000"),
        f"{NN}(message)": null(FND, "message"),
        f"{IN_SET}(owner_kind)": set_(FND, "owner_kind = 'Pod'", "owner_kind is not null"),
        f"{NN}(owner_name where owner_kind is not null)": null(FND, "owner_name", "owner_kind is not null"),
        f"{NN}(namespace where (owner_kind is not null) and (owner_kind != 'Node'))": null(
            FND, "namespace", "owner_kind is not null and owner_kind <> 'Node'"),
    },
    WL: {
        f"{NN}(cluster)": null(WL, "cluster"),
        f"{NN}(pod_uid)": null(WL, "pod_uid"),
        f"{COMPOUND}(cluster, pod_uid)": dup(WL),
        f"{NN}(pod_name)": null(WL, "pod_name"),
        f"{NN}(created_at)": null(WL, "created_at"),
        f"{GT}(scheduled_at, created_at)": set_(
            WL, "created_at = scheduled_at + interval 1 second",
            "scheduled_at is not null and coalesce(deleted_at > scheduled_at + interval 1 second, true)"),
        f"{GT}(started_at, scheduled_at)": set_(WL, "scheduled_at = started_at + interval 1 second",
                                                "started_at is not null and scheduled_at is not null"),
        f"{GT}(task_finished_at, started_at)": set_(
            WL, "task_finished_at = started_at - interval 1 second",
            "task_finished_at is not null and started_at is not null"),
        f"{GT}(ready_at, started_at)": set_(WL, "ready_at = started_at - interval 1 second",
                                            "ready_at is not null and started_at is not null"),
        f"{GT}(deleted_at, created_at)": set_(
            WL, "deleted_at = created_at - interval 1 second, task_finished_at = null",
            "deleted_at is not null"),
        f"{GT}(deleted_at, task_finished_at)": set_(
            WL, "deleted_at = task_finished_at - interval 1 second",
            "deleted_at is not null and task_finished_at is not null"),
        f"{BETWEEN}(gpus)": set_(WL, "gpus = -1"),
        f"{BETWEEN}(restarts)": set_(WL, "restarts = -1"),
        f"{BETWEEN}(startup_budget_seconds)": set_(WL, "startup_budget_seconds = -1"),
    },
    ALLOC: {
        f"{NN}(day)": null(ALLOC, "day"),
        f"{NN}(team)": null(ALLOC, "team"),
        f"{NN}(namespace)": null(ALLOC, "namespace"),
        f"{NN}(workload)": null(ALLOC, "workload"),
        f"{NN}(resource_id)": null(ALLOC, "resource_id"),
        f"{COMPOUND}(day, team, namespace, workload, resource_id, category, owner_kind, owner_name, cause)":
            dup(ALLOC),
        f"{NN}(category)": null(ALLOC, "category"),
        f"{IN_SET}(category)": set_(ALLOC, "category = 'gpu'"),
        f"{IN_SET}(cause)": set_(ALLOC, "cause = 'lunch_break'", "cause is not null"),
        f"{NN}(amount)": null(ALLOC, "amount"),
        f"{BETWEEN}(seconds)": set_(ALLOC, "seconds = -1"),
    },
    RATES: {
        f"{NN}(resource_id)": null(RATES, "resource_id"),
        f"{NN}(day)": null(RATES, "day"),
        f"{COMPOUND}(resource_id, day)": dup(RATES),
        f"{NN}(compute_amount)": null(RATES, "compute_amount"),
        f"{NN}(compute_seconds)": null(RATES, "compute_seconds"),
        f"{BETWEEN}(compute_seconds)": set_(RATES, "compute_seconds = -1"),
        f"{BETWEEN}(charged_rate_per_hour)": set_(RATES, "charged_rate_per_hour = 0"),
        f"{BETWEEN}(contracted_rate_per_hour)": set_(RATES, "contracted_rate_per_hour = -1"),
        f"{IN_SET}(charged_rate_source)": set_(RATES, "charged_rate_source = 'guess'"),
        f"{BETWEEN}(gpu_count)": set_(RATES, "gpu_count = -1"),
    },
    LIST: {
        f"{NN}(resource_id)": null(LIST, "resource_id"),
        f"{NN}(day)": null(LIST, "day"),
        f"{COMPOUND}(resource_id, day)": dup(LIST),
        f"{BETWEEN}(list_amount)": set_(LIST, "list_amount = -0.01"),
        f"{IN_SET}(price_basis)": set_(LIST, "price_basis = 'spot'"),
    },
    INVOICE: {
        f"{NN}(invoice_id)": tieout(invoice_id="null"),
        f"{NN}(cost_center)": tieout(cost_center="null"),
        f"{IN_SET}(service)": tieout(service="'gpu'"),
        f"{COMPOUND}(invoice_id, cost_center, service)": [tieout(), tieout()],
        f"{GT}(period_end, period_start)": tieout(period_end="'2026-06-01 00:00:00+00'"),
        f"{NN}(invoice_amount)": tieout(invoice_amount="null"),
        f"{NN}(reconciled_amount)": tieout(reconciled_amount="null"),
        f"{NN}(unexplained_amount)": tieout(unexplained_amount="null"),
        f"{IN_SET}(currency)": tieout(currency="'EUR'"),
        f"{IN_SET}(status)": tieout(status="'unknown'"),
    },
    RESTATED: {
        f"{NN}(resource_id)": restatement(resource_id="null"),
        f"{NN}(bucket_start)": restatement(bucket_start="null"),
        f"{NN}(pulled_at)": (restatement(pulled_at="null"),
                             {f"{GT}(pulled_at, previous_pulled_at)"}),  # a missing value fails it
        f"{COMPOUND}(resource_id, bucket_start, pulled_at)": [restatement(), restatement()],
        f"{NN}(day)": restatement(day="null"),
        f"{NN}(amount)": restatement(amount="null"),
        f"{NN}(previous_amount)": restatement(previous_amount="null"),
        f"{GT}(pulled_at, previous_pulled_at)": restatement(previous_pulled_at="'2026-06-01 05:00:00+00'"),
        f"{NN}(source_file)": restatement(source_file="null"),
    },
    SETTLE: {
        f"{NN}(resource_id)": null(SETTLE, "resource_id"),
        f"{NN}(day)": null(SETTLE, "day"),
        f"{COMPOUND}(resource_id, day)": dup(SETTLE),
        f"{NN}(state)": null(SETTLE, "state"),
        f"{IN_SET}(state)": set_(SETTLE, "state = 'paid'"),
        f"{IN_SET}(resource_kind)": set_(SETTLE, "resource_kind = 'gpu'"),
        f"{NN}(amount)": null(SETTLE, "amount"),
        f"{BETWEEN}(buckets)": set_(SETTLE, "buckets = -1, provisional_buckets = -1, restated_buckets = -1"),
        f"{GT}(buckets, provisional_buckets)": set_(SETTLE, "provisional_buckets = buckets + 1"),
        f"{GT}(buckets, restated_buckets)": set_(SETTLE, "restated_buckets = buckets + 1"),
    },
    # the marts the outputs read (the last run's window of the models under them)
    "marts.instance_segments": {
        f"{NN}(resource_id)": null("marts.instance_segments", "resource_id"),
        f"{NN}(seg_start)": null("marts.instance_segments", "seg_start"),
        f"{COMPOUND}(resource_id, seg_start)": dup("marts.instance_segments"),
        f"{NN}(day)": null("marts.instance_segments", "day"),
        f"{IN_SET}(category)": set_("marts.instance_segments", "category = 'cold_start'"),
        f"{GT}(seg_end, seg_start)": set_("marts.instance_segments", "seg_end = seg_start"),
        f"{BETWEEN}(ms)": set_("marts.instance_segments", "ms = -1"),
        f"{NN}(amount_usd)": null("marts.instance_segments", "amount_usd"),
    },
    "marts.compute_sessions": {
        f"{NN}(session_id)": null("marts.compute_sessions", "session_id"),
        f"{UNIQ}(session_id)": dup("marts.compute_sessions"),
        f"{NN}(resource_id)": null("marts.compute_sessions", "resource_id"),
        f"{GT}(end_at, start_at)": set_("marts.compute_sessions", "start_at = end_at",
                                        "last_finished_at is null"),
        f"{IN_SET}(scaler)": set_("marts.compute_sessions", "scaler = 'cron'", "scaler is not null"),
        f"{BETWEEN}(allowed_seconds)": set_("marts.compute_sessions", "allowed_seconds = -1",
                                            "allowed_seconds is not null"),
        f"{GT}(end_at, last_finished_at)": set_("marts.compute_sessions",
                                                "last_finished_at = end_at + interval 1 second",
                                                "last_finished_at is not null"),
    },
    "marts.workloads": {
        f"{NN}(cluster)": null("marts.workloads", "cluster"),
        f"{NN}(pod_uid)": null("marts.workloads", "pod_uid"),
        f"{COMPOUND}(cluster, pod_uid)": dup("marts.workloads"),
        f"{NN}(resource_id)": null("marts.workloads", "resource_id"),
        f"{BETWEEN}(gpus)": set_("marts.workloads", "gpus = 0"),
        f"{GT}(window_end_at, scheduled_at)": set_("marts.workloads", "window_end_at = scheduled_at"),
    },
    "marts.pod_buckets": {
        f"{NN}(pod_id)": null("marts.pod_buckets", "pod_id"),
        f"{NN}(bucket_start)": null("marts.pod_buckets", "bucket_start"),
        f"{COMPOUND}(pod_id, bucket_start)": dup("marts.pod_buckets"),
        f"{GT}(bucket_end, bucket_start)": set_("marts.pod_buckets", "bucket_end = bucket_start"),
        f"{BETWEEN}(compute_ms)": set_("marts.pod_buckets", "compute_ms = -1"),
        f"{BETWEEN}(storage_running_ms)": set_("marts.pod_buckets", "storage_running_ms = -1"),
        f"{BETWEEN}(storage_lingering_ms)": set_("marts.pod_buckets", "storage_lingering_ms = -1"),
        f"{NN}(total_amount_usd)": null("marts.pod_buckets", "total_amount_usd"),
    },
    "marts.serverless_worker_sessions": {
        f"{NN}(endpoint_id)": null("marts.serverless_worker_sessions", "endpoint_id"),
        f"{NN}(worker_id)": null("marts.serverless_worker_sessions", "worker_id"),
        f"{COMPOUND}(endpoint_id, worker_id)": dup("marts.serverless_worker_sessions"),
        f"{NN}(day)": null("marts.serverless_worker_sessions", "day"),
        f"{BETWEEN}(idle_timeout_ms)": set_("marts.serverless_worker_sessions", "idle_timeout_ms = -1"),
        f"{BETWEEN}(jobs)": set_("marts.serverless_worker_sessions", "jobs = -1"),
        f"{GT}(last_done_at, started_at)": set_("marts.serverless_worker_sessions",
                                                "last_done_at = started_at - interval 1 second"),
    },
    "marts.serverless_endpoint_days": {
        f"{NN}(endpoint_id)": null("marts.serverless_endpoint_days", "endpoint_id"),
        f"{NN}(day)": null("marts.serverless_endpoint_days", "day"),
        f"{COMPOUND}(endpoint_id, day)": dup("marts.serverless_endpoint_days"),
        f"{BETWEEN}(billed_ms)": set_("marts.serverless_endpoint_days", "billed_ms = -1"),
        f"{BETWEEN}(cold_start_ms)": set_("marts.serverless_endpoint_days", "cold_start_ms = -1"),
        f"{BETWEEN}(execution_ms)": set_("marts.serverless_endpoint_days", "execution_ms = -1"),
        f"{BETWEEN}(idle_ms)": set_("marts.serverless_endpoint_days", "idle_ms = -1"),
        f"{BETWEEN}(unobserved_ms)": set_("marts.serverless_endpoint_days", "unobserved_ms = -1"),
    },
    "marts.network_volume_lingering": {
        f"{NN}(volume_id)": null("marts.network_volume_lingering", "volume_id"),
        f"{NN}(day)": null("marts.network_volume_lingering", "day"),
        f"{COMPOUND}(volume_id, day)": dup("marts.network_volume_lingering"),
        f"{BETWEEN}(lingering_seconds)": set_("marts.network_volume_lingering", "lingering_seconds = -1"),
        f"{GT}(billed_seconds, lingering_seconds)": set_("marts.network_volume_lingering",
                                                         "lingering_seconds = billed_seconds + 1"),
        f"{NN}(billed_amount)": null("marts.network_volume_lingering", "billed_amount"),
        f"{NN}(lingering_amount)": null("marts.network_volume_lingering", "lingering_amount"),
    },
    "marts.nodes": {
        f"{NN}(cluster)": null("marts.nodes", "cluster"),
        f"{NN}(node_uid)": null("marts.nodes", "node_uid"),
        f"{COMPOUND}(cluster, node_uid)": dup("marts.nodes"),
        f"{NN}(created_at)": null("marts.nodes", "created_at"),
        f"{BETWEEN}(gpu_capacity)": set_("marts.nodes", "gpu_capacity = -1"),
        f"{GT}(removed_at, created_at)": set_("marts.nodes", "removed_at = created_at - interval 1 second"),
    },
    "marts.waste": {
        f"{NN}(resource_id)": null("marts.waste", "resource_id"),
        f"{NN}(day)": null("marts.waste", "day"),
        f"{NN}(team)": null("marts.waste", "team"),
        f"{NN}(amount)": null("marts.waste", "amount"),
        f"{IN_SET}(resource_kind)": set_("marts.waste", "resource_kind = 'cluster'"),
        f"{IN_SET}(cause)": set_("marts.waste", "cause = 'busy'"),
        f"{BETWEEN}(seconds)": set_("marts.waste", "seconds = -1"),
    },
    "tieout.waste": {  # waste money a cent off the bill
        f"{BETWEEN}(difference)": set_("marts.waste", "amount = amount + 0.01"),
    },
    "tieout.billed_seconds": {
        f"{BETWEEN}(difference)": set_(SEG, "seconds = seconds + 1", "category = 'busy'"),
        f"{BETWEEN}(amount_difference)": set_(RD, "billed_amount = billed_amount + 0.01"),
    },
    "tieout.account_billing": {
        f"{BETWEEN}(difference)": set_("staging.stg_runpod__network_volume_billing",
                                       "total_amount_usd = total_amount_usd + 0.01"),
    },
    "tieout.account_lines": {  # a GPU-type line of a day with pod lines, 1 USD off them
        f"{BETWEEN}(difference)": (
            "insert into staging.stg_runpod__account_lines (source, component, gpu_type, "
            "bucket_start, amount_usd) select 'v1_gpu_types', 'pods', 'NVIDIA L4', "
            "min(bucket_start), sum(total_amount_usd) filter (where cast(bucket_start as date) "
            "= (select min(cast(bucket_start as date)) from " + BILL + ")) + 1 from " + BILL),
    },
}
CASE_IDS = [(s, label) for s, cases in CASES.items() for label in cases]


@pytest.fixture(scope="module")
def gx_session():
    from recon.gate.gx import GxSession

    return GxSession()


@pytest.fixture(scope="module")
def wh(sim_run, tmp_path_factory):
    """A private read-write copy of the session's simulated warehouse."""
    db = tmp_path_factory.mktemp("gx") / "recon.duckdb"
    shutil.copy(sim_run["db"], db)
    con = duckdb.connect(str(db))
    con.execute("set TimeZone = 'UTC'")
    yield con
    con.close()


def labels(failures) -> set[str]:
    return {f"{f.expectation}({f.column or ''})" for f in failures}


def test_every_expectation_has_a_failing_case():
    defined = {(s.name, s.label(e)) for s in SUITES for e in s.expectations}
    assert defined == set(CASE_IDS)


def test_clean_warehouse_passes_and_results_land(wh, gx_session):
    report = validate(wh, "run-clean", session=gx_session)
    assert report.success, report.summary()
    assert not report.warnings, report.summary()
    total = sum(len(s.expectations) for s in SUITES)
    assert (report.suites, report.evaluated, report.passed) == (len(SUITES), total, total)
    rows = wh.execute("""select count(*), count(*) filter (where success), count(distinct suite),
                                count(*) filter (where severity = 'critical'), min(checked_at) is not null
                         from marts.validation_results where run_id = 'run-clean'""").fetchall()[0]
    assert rows == (total, total, len(SUITES),
                    sum(e["meta"]["severity"] == "critical" for s in SUITES for e in s.expectations),
                    True)
    # a rerun of the same run_id replaces its rows
    validate(wh, "run-clean", suites=["tieout.billed_seconds"], session=gx_session)
    assert wh.execute("select count(*) from marts.validation_results "
                      "where run_id = 'run-clean'").fetchall() == [(2,)]


@pytest.mark.parametrize(("suite", "label"), CASE_IDS, ids=[f"{s}:{lbl}" for s, lbl in CASE_IDS])
def test_each_expectation_can_fail(wh, gx_session, suite, label):
    """Read whole, the seeded row fails exactly that expectation; checked in DuckDB (what large
    tables get, `pushdown_min_rows`), the results are the same rows, messages included."""
    case = CASES[suite][label]
    sql, also = case if isinstance(case, tuple) else (case, set())
    wh.execute("begin transaction")
    try:
        for stmt in [sql] if isinstance(sql, str) else sql:
            wh.execute(stmt)
        report = validate(wh, "t", suites=[suite], session=gx_session, write=False, pushdown_min_rows=None)
        pushed = validate(wh, "t", suites=[suite], session=gx_session, write=False, pushdown_min_rows=0)
    finally:
        wh.execute("rollback")
    assert pushed.paths == {suite: "pushdown" if suite in TABLE_SUITES else "full"}
    assert [r[1:9] for r in pushed.rows] == [r[1:9] for r in report.rows]  # all but checked_at
    failed = report.critical_failures + report.warnings
    assert labels(failed) == {label} | also, report.summary()
    hit = next(f for f in failed if labels([f]) == {label})
    row_key = next(s.row_key for s in SUITES if s.name == suite)
    if hit.unexpected_count:  # a row-level failure names the rows by their key
        assert f"{row_key[0]}=" in hit.message, hit.message


SEVERITY = {(s.name, s.label(e)): e["meta"]["severity"] for s in SUITES for e in s.expectations}
MART_CRITICAL = [(s, label) for s, label in CASE_IDS
                 if s in (ALLOC, RATES, RESTATED, SETTLE) and SEVERITY[s, label] == "critical"]


@pytest.mark.parametrize(("suite", "label"), MART_CRITICAL, ids=[f"{s}:{lbl}" for s, lbl in MART_CRITICAL])
def test_a_broken_mart_fails_the_gate(wh, gx_session, suite, label):
    """A duplicate key, a missing key or amount, an unknown settlement state in a copy of the
    warehouse fails the whole gate (every suite run, as a run runs them), not only a warning."""
    case = CASES[suite][label]
    sql = case[0] if isinstance(case, tuple) else case
    wh.execute("begin transaction")
    try:
        for stmt in [sql] if isinstance(sql, str) else sql:
            wh.execute(stmt)
        report = validate(wh, "t", session=gx_session, write=False)
    finally:
        wh.execute("rollback")
    assert not report.success
    assert {(f.suite, *labels([f])) for f in report.critical_failures} == {(suite, label)}


def test_bad_suite_and_missing_table_are_reported(wh, gx_session, tmp_path):
    (tmp_path / "marts.nothing.json").write_text(
        '{"name": "marts.nothing", "meta": {"table": "marts.nothing"}, "expectations": '
        '[{"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "x"}, '
        '"meta": {"severity": "critical"}}]}')
    report = validate(wh, "t", suite_dir=tmp_path, session=gx_session, write=False)
    assert not report.success
    assert [(f.suite, f.expectation) for f in report.critical_failures] == [("marts.nothing", "batch_query")]
    (tmp_path / "marts.nothing.json").write_text(
        '{"name": "marts.nothing", "meta": {"table": "marts.findings"}, "expectations": '
        '[{"type": "expect_column_values_to_be_nul", "kwargs": {"column": "code"}, '
        '"meta": {"severity": "critical"}}]}')
    with pytest.raises(ValueError, match="expect_column_values_to_be_nul"):
        validate(wh, "t", suite_dir=tmp_path, session=gx_session, write=False)


def test_the_per_file_tie_out_counts_every_raw_table():
    """Each landed record is in one raw table; the tie-out must count them all (it once left
    out raw.focus_rows and raw.prometheus_series: a FOCUS file failed every gate)."""
    from recon.ingest.raw_tables import TABLES

    query = next(s for s in load_suites() if s.name == "raw.files").query
    assert TABLES and {t for t in TABLES if f"from raw.{t}" not in query} == set()
