"""What every column of every `marts` table means: the one place `recon schema` and the docs read.

A test builds a warehouse and checks that this dict and the real marts name the same tables and
columns, so a column added to a mart without a description (or described but gone) fails CI.
"""

from __future__ import annotations

MARTS: dict[str, dict] = {
    "workload_lifecycle": {
        "grain": "one row per Kubernetes pod (cluster, pod_uid), GPU or not",
        "columns": {
            "cluster": "Cluster the pod was seen in (line `cluster`, else a `cluster=NAME` folder, else `default`)",
            "pod_uid": "Kubernetes metadata.uid of the pod",
            "namespace": "Kubernetes namespace",
            "pod_name": "Pod name",
            "workload": "The workload it belongs to: label app.kubernetes.io/name, app or scaledjob.keda.sh/name, else the pod name without generated suffixes",
            "node_name": "Node the pod was scheduled on (NULL if never scheduled)",
            "resource_id": "Billed resource (Runpod pod id) the node maps to; NULL if the node maps to none",
            "team": "Value of the pod's team label (`mapping.team_label`, default `team`)",
            "gpus": "nvidia.com/gpu limit of the pod's containers",
            "created_at": "metadata.creationTimestamp (UTC)",
            "scheduled_at": "PodScheduled condition became True (UTC)",
            "started_at": "Main container state.running.startedAt (UTC)",
            "ready_at": "Ready condition became True, i.e. the startup probe passed (UTC)",
            "task_finished_at": "Main container state.terminated.finishedAt (UTC): the task finished",
            "deleted_at": "When the pod was deleted (DELETED event or deletionTimestamp + grace, UTC)",
            "restarts": "Container restartCount seen last",
            "exit_reason": "state.terminated.reason of the main container (Completed, OOMKilled, Error, …)",
            "exit_code": "state.terminated.exitCode of the main container",
            "startup_budget_seconds": "startupProbe periodSeconds × failureThreshold: the startup the pod was allowed",
            "versions_seen": "How many versions (watch events / list snapshots) of the pod were landed",
            "lifecycle_source": "`watch` (collector or saved watch/list files) or `prometheus` (kube-state-metrics backfill: sampled, coarser)",
        },
    },
    "resource_day": {
        "grain": "one row per billed (or active but unbilled) resource per UTC day",
        "columns": {
            "resource_id": "Runpod pod id, serverless endpoint id or network volume id",
            "resource_kind": "`instance`, `serverless` or `network_volume`",
            "day": "UTC day",
            "billed_seconds": "Compute seconds billed that day (worker seconds for serverless, volume seconds for network volumes)",
            "task_finished_at": "Last GPU workload window end on the resource that day (serverless: last request done)",
            "compute_stopped_at": "End of the last compute session that day: when the provider stopped billing compute (NULL for serverless and volumes)",
            "billed_after_exit_seconds": "The day's `tail` seconds: compute billed after the last task of each session finished (NULL for serverless and volumes)",
            "lingering_storage_seconds": "Storage seconds billed while no compute ran (pod disk, or network volume with no running attached pod)",
            "serverless_idle_seconds": "Billed worker seconds that were neither cold start nor execution nor rounding",
            "billed_amount": "What the provider billed for the resource that day (USD, compute + storage)",
            "expected_amount": "Billed seconds × contracted rate, plus storage (USD); NULL when nothing was billed",
            "seconds_derived": "True when billed seconds were derived from the amount ÷ rate (v2 bills carry USD only), "
                               "or lingering storage seconds from a disk amount and the disk rates (the hour compute stopped or started in)",
            "rate_missing": "True when a bill line's rate is unknown (see RATE_MISSING findings)",
            "bill_state": "Finality of the day's v2 bill: `settled`, `provisional` (pulled within settlement_lag_hours of the bucket's end) or `restated` (a later pull changed it); NULL for saved v1/FOCUS files and unbilled days",
        },
    },
    "billed_segments": {
        "grain": "one row per resource, UTC day and category; a resource-day's categories add up to its billed seconds",
        "columns": {
            "resource_id": "Runpod pod id, serverless endpoint id or network volume id",
            "resource_kind": "`instance`, `serverless` or `network_volume`",
            "day": "UTC day",
            "category": "instance: startup, busy, idle_gap, tail, unobserved, storage_running, storage_lingering; "
                        "serverless: cold_start, execution, idle, rounding, unobserved; network_volume: network_volume",
            "seconds": "Billed seconds in the category",
            "amount": "The bill's amount allocated to the category by seconds (USD)",
            "expected_amount": "Seconds × contracted rate (USD)",
        },
    },
    "allocation": {
        "grain": "one row per day, team, namespace, workload, resource and category; "
                 "a day's amounts add up to its bill",
        "columns": {
            "day": "UTC day",
            "team": "Pod team label, or `__idle__` (billed, no workload held it), `__unallocated__` "
                    "(billed, not observed) and the other markers documented in sql/marts/allocation.sql",
            "namespace": "Kubernetes namespace of the workload; on leftover rows the marker again",
            "workload": "Workload (naming label, else pod name without generated suffixes); on leftover rows the billed resource",
            "resource_id": "Billed resource the cost comes from",
            "category": "billed_segments category the cost comes from",
            "seconds": "Resource seconds attributed to the row",
            "amount": "Billed USD attributed to the row",
            "expected_amount": "Seconds × contracted rate attributed to the row (USD)",
        },
    },
    "settlement": {
        "grain": "one row per resource and UTC day: how final its bill is",
        "columns": {
            "resource_id": "Billed resource",
            "resource_kind": "`instance`, `serverless` or `network_volume`",
            "day": "UTC day",
            "state": "`awaiting_bill` (the day's bill has not landed: no bill line of the day pulled at or after its end + bill_arrival_minutes; every resource of the day, and the day is not published), `estimated` (the day's bill landed with no line for this resource's observed work: priced from lifecycle × rate), `provisional`, `restated` or `settled`",
            "amount": "Latest billed amount (USD); the estimate when `estimated`, or `awaiting_bill` with nothing billed yet",
            "buckets": "Bill buckets of the day with pull metadata",
            "provisional_buckets": "Buckets pulled less than settlement_lag_hours after they ended",
            "restated_buckets": "Buckets a later pull changed",
            "first_pulled_amount": "What the first pull said for the day's buckets (USD)",
            "restated_change": "Latest minus first pulled amount (USD)",
            "last_pulled_at": "When the day's bill was last pulled (UTC)",
        },
    },
    "restatements": {
        "grain": "one row per pull that changed a bill bucket",
        "columns": {
            "resource_id": "Billed resource",
            "bucket_start": "Start of the hourly bucket (UTC)",
            "day": "UTC day of the bucket",
            "previous_pulled_at": "When the earlier version was pulled",
            "pulled_at": "When the changed version was pulled",
            "previous_amount": "The bucket's amount before (USD)",
            "amount": "The bucket's amount after (USD)",
            "change": "amount − previous_amount (USD)",
            "source_file": "Landing file of the changed version",
        },
    },
    "findings": {
        "grain": "one row per finding",
        "columns": {
            "finding_id": "Stable id: hash of code, resource, day and window start (same across reruns)",
            "code": "A DESIGN §6 code (BILLED_AFTER_EXIT, STORAGE_LINGERING, SERVERLESS_IDLE_EXCESS, "
                    "BILLED_WITHOUT_ACTIVITY, ACTIVITY_WITHOUT_BILLING, BILLED_EXCEEDS_RUNTIME, RATE_MISMATCH, "
                    "DUPLICATE_BILLING, STARTUP_BUDGET_EXCEEDED, UNSCHEDULABLE_GPU, SCALE_TO_ZERO_LATE, "
                    "SAVINGS_PLAN_UNUSED, SAVINGS_PLAN_EXPIRING, BALANCE_BELOW_ONE_HOUR) or RATE_MISSING",
            "severity": "`info`, `warning` or `error`",
            "resource_id": "Billed resource the finding is about",
            "day": "UTC day",
            "window_start": "Start of the time window the finding covers (UTC)",
            "window_end": "End of that window (UTC, exclusive)",
            "seconds": "Seconds at issue",
            "amount_at_stake": "Money at stake (USD)",
            "message": "A sentence naming the evidence and the threshold",
        },
    },
    "rates": {
        "grain": "one row per billed instance and UTC day: the rates behind its seconds and amounts",
        "columns": {
            "resource_id": "Runpod pod id (or FOCUS resource)",
            "day": "UTC day",
            "sku": "GPU type (the price key)",
            "gpu_count": "GPUs of the pod",
            "charged_rate_per_hour": "Rate that turned amounts into seconds: inventory cost, else the rate card (USD/h)",
            "charged_rate_source": "inventory, rate_card_pod, rate_card_gpu, bill_contracted_unit_price or bill_amount_per_hour",
            "contracted_rate_per_hour": "Savings plan in force, else the effective rate card (USD/h): expected amounts use it",
            "savings_plan_id": "The configured plan that applies, if any",
            "learned_rate_per_hour": "The bill's own amount ÷ billed hours where the bill gives seconds (v1, FOCUS); NULL for v2 (seconds are derived)",
            "compute_seconds": "Billed compute seconds that day",
            "compute_amount": "Billed compute amount that day (USD)",
        },
    },
    "validation_results": {
        "grain": "one row per expectation checked per run (written by the validation step)",
        "columns": {
            "run_id": "The run that validated (a daily flow run id, or the CLI's run id)",
            "suite": "Great Expectations suite (a file in expectations/)",
            "expectation": "Expectation type and its arguments",
            "column": "Column checked (NULL for table-level expectations)",
            "success": "True when the expectation held",
            "observed_value": "What GX observed, as text",
            "unexpected_count": "Rows that broke it",
            "severity": "`critical` fails the run; `warning` is reported",
            "message": "Which rows failed and why, by their keys",
            "checked_at": "When the check ran (UTC)",
        },
    },
}


def describe(table: str, column: str) -> str:
    return MARTS[table]["columns"][column]


def markdown() -> str:
    """The marts' documentation as Markdown: `recon schema --markdown`, and the README's copy."""
    out = []
    for table, spec in MARTS.items():
        out.append(f"\n### `marts.{table}`\n\n{spec['grain']}.\n\n| column | meaning |\n|---|---|")
        out += [f"| `{col}` | {desc} |" for col, desc in spec["columns"].items()]
    return "\n".join(out) + "\n"
