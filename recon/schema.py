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
            "team": "Value of the pod's team label: the first of `mapping.team_labels` it carries non-empty (default `team`)",
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
        "grain": "one row per day, team, namespace, workload, resource, category, owner and cause; "
                 "a day's amounts add up to its bill",
        "columns": {
            "day": "UTC day",
            "team": "Pod team label, or the team of the owner marts.waste gives a non-work segment (a tail's last pod, "
                    "a gap's neighbours, the pod a node was brought up for, a node's team label); `__idle__` (billed, "
                    "no owner), `__unallocated__` (billed, not observed) and the other markers documented in "
                    "sql/marts/allocation.sql",
            "namespace": "Kubernetes namespace of the workload or owner; `__node__` for a node's team label; on leftover rows the marker again",
            "workload": "Workload (naming label, else pod name without generated suffixes); on an owner's non-work rows the owner's name (a ScaledObject, ScaledJob, Deployment, Job, or node); on leftover rows the billed resource",
            "resource_id": "Billed resource the cost comes from",
            "category": "billed_segments category the cost comes from",
            "seconds": "Resource seconds attributed to the row",
            "amount": "Billed USD attributed to the row",
            "expected_amount": "Seconds × contracted rate attributed to the row (USD)",
            "owner_kind": "What owns the workload or the non-work segment (as marts.waste: `ScaledObject`, `ScaledJob`, `Deployment`, `ReplicaSet`, `Job`, `StatefulSet`, `DaemonSet`, `Node`); NULL for a bare pod, storage, serverless and leftover rows",
            "owner_name": "Name of that owner; NULL with `owner_kind`",
            "cause": "For money that was not work, marts.waste's cause (a startup segment whole as `startup`: marts.waste alone splits out `probe_restarts`); NULL for work (busy, execution, storage_running, a network volume's attached share) and for the GPUs nobody held while others worked",
        },
    },
    "focus_charges": {
        "grain": "one row per UTC day and FOCUS charge as its file names it (the day's piece of every landed FOCUS row)",
        "columns": {
            "day": "UTC day",
            "charge_period_start": "Start of the charge's piece of the day: ChargePeriodStart, or the day's start for a charge that began before it (UTC)",
            "charge_period_end": "End of that piece: ChargePeriodEnd, or the next day's start (UTC)",
            "reconciled": "True for instance compute (a Usage row of ServiceCategory `Compute` on a resource, consumed in a duration such as `Hours`): its money is also in marts.resource_day. False: another charge (storage, networking, purchases, credits, taxes, …), carried through",
            "resource_id": "The last segment of ResourceId (the key a node's spec.providerID maps to); NULL when the row names no resource",
            "provider_name": "ProviderName",
            "publisher_name": "PublisherName",
            "invoice_issuer_name": "InvoiceIssuerName",
            "invoice_id": "InvoiceId",
            "billing_account_id": "BillingAccountId",
            "billing_account_name": "BillingAccountName",
            "sub_account_id": "SubAccountId",
            "billing_currency": "BillingCurrency",
            "charge_category": "ChargeCategory (`Usage`, `Purchase`, `Tax`, `Credit`, `Adjustment`)",
            "charge_class": "ChargeClass (`Correction` or NULL)",
            "charge_description": "ChargeDescription",
            "charge_frequency": "ChargeFrequency",
            "service_category": "ServiceCategory",
            "service_subcategory": "ServiceSubcategory",
            "service_name": "ServiceName",
            "sku_id": "SkuId",
            "sku_price_id": "SkuPriceId",
            "focus_resource_id": "ResourceId as the file wrote it",
            "resource_name": "ResourceName",
            "resource_type": "ResourceType",
            "region_id": "RegionId",
            "commitment_discount_id": "CommitmentDiscountId",
            "commitment_discount_status": "CommitmentDiscountStatus (`Used`, `Unused`)",
            "pricing_unit": "PricingUnit",
            "consumed_unit": "ConsumedUnit",
            "contracted_unit_price": "ContractedUnitPrice (per PricingUnit)",
            "list_unit_price": "ListUnitPrice (per PricingUnit)",
            "pricing_quantity": "PricingQuantity of the piece (the row's, split by time)",
            "consumed_quantity": "ConsumedQuantity of the piece",
            "billed_cost": "BilledCost of the piece (USD, exact decimals: a row's pieces add up to its BilledCost)",
            "effective_cost": "EffectiveCost of the piece",
            "list_cost": "ListCost of the piece",
            "contracted_cost": "ContractedCost of the piece",
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
    "invoice_tieout": {
        "grain": "one row per invoice, cost center and service (invoice_id, cost_center, service)",
        "columns": {
            "invoice_id": "The invoice's id as the invoice file writes it",
            "cost_center": "The Runpod cost center the invoice is for",
            "service": "`pods`, `pod_storage`, `serverless`, `network_volumes`, `savings_plans`, `credits`, or `total` "
                       "(the invoice's total row, tied out only when the invoice has no line items)",
            "issuer": "Who issued the invoice (Runpod)",
            "currency": "The invoice's currency (USD: landing refuses another)",
            "period_start": "Start of the billing period (UTC, inclusive)",
            "period_end": "End of the billing period (UTC, exclusive)",
            "issued_at": "When the invoice was issued or cut (UTC); NULL when the file does not say, and then nothing is explained",
            "scope": "`account` (the account's whole bill of the service) or the resource ids the invoice's lines name, comma-separated",
            "invoice_amount": "What the invoice says for the service (USD)",
            "reconciled_amount": "The reconciled bill of the period and scope (USD): pod buckets' compute or disk (the bill's diskAmount), "
                                 "marts.resource_day's serverless or network-volume billed_amount, savings-plan upfront; 0 for credits",
            "difference": "invoice_amount − reconciled_amount (USD)",
            "late_usage_amount": "Reconciled amount of buckets first pulled after issued_at: usage that landed after the invoice's cut-off (USD)",
            "restated_after_issue_amount": "Change of buckets a pull after issued_at restated (latest − as of the issue, USD)",
            "savings_plan_amount": "Savings-plan purchases of the period inside reconciled_amount (USD)",
            "explained_amount": "−(late_usage_amount + restated_after_issue_amount): the part of the difference those explain (USD)",
            "unexplained_amount": "difference − explained_amount (USD): an INVOICE_MISMATCH beyond the tolerance",
            "explanation": "The explanations in words (buckets, times, amounts); empty when there is none",
            "tolerance": "thresholds.invoice_mismatch_tolerance_usd (USD)",
            "source_file": "Landing file of the invoice",
            "locators": "Lines (CSV) or paths (JSON) of the invoice's rows in that file",
            "status": "`tied` (difference within the tolerance), `explained` (the unexplained rest within it) or `mismatch`",
        },
    },
    "findings": {
        "grain": "one row per finding",
        "columns": {
            "finding_id": "Stable id: hash of code, resource, day and window start (same across reruns)",
            "code": "A finding code of docs/design.md (BILLED_AFTER_EXIT, STORAGE_LINGERING, SERVERLESS_IDLE_EXCESS, "
                    "SERVERLESS_ALWAYS_ON, SERVERLESS_STUCK_WORKER, BILLED_WITHOUT_ACTIVITY, ACTIVITY_WITHOUT_BILLING, BILLED_EXCEEDS_RUNTIME, RATE_MISMATCH, "
                    "DUPLICATE_BILLING, STARTUP_BUDGET_EXCEEDED, UNSCHEDULABLE_GPU, SCALE_TO_ZERO_LATE, "
                    "GPU_SHARED_OVERSUBSCRIBED, HPA_SCALE_DOWN_SLOW, SAVINGS_PLAN_UNUSED, SAVINGS_PLAN_EXPIRING, BALANCE_BELOW_ONE_HOUR, INVOICE_MISMATCH) or RATE_MISSING",
            "severity": "`info`, `warning` or `error`",
            "resource_id": "Billed resource the finding is about",
            "day": "UTC day",
            "window_start": "Start of the time window the finding covers (UTC)",
            "window_end": "End of that window (UTC, exclusive)",
            "seconds": "Seconds at issue",
            "amount_at_stake": "Money at stake (USD)",
            "message": "A sentence naming the evidence and the threshold",
            "namespace": "Kubernetes namespace of the workload the finding is about: the pod's (STARTUP_BUDGET_EXCEEDED, "
                         "UNSCHEDULABLE_GPU), the last workload before the tail (BILLED_AFTER_EXIT), the ScaledObject's "
                         "(SCALE_TO_ZERO_LATE, HPA_SCALE_DOWN_SLOW), the workloads' when they all share one owner "
                         "(ACTIVITY_WITHOUT_BILLING, GPU_SHARED_OVERSUBSCRIBED); "
                         "NULL where no workload explains the money",
            "owner_kind": "Kind of what owns that workload (intermediate.int_k8s__pod_owners): the KEDA object whose "
                          "setting scales it (`ScaledObject` or `ScaledJob`, by name) where one matches, else the "
                          "controller its pod's metadata.ownerReferences name, resolved: `Deployment` (a ReplicaSet "
                          "named `<deployment>-<pod-template-hash>`), `ReplicaSet`, `Job`, `StatefulSet` or "
                          "`DaemonSet`; `Node` for BILLED_WITHOUT_ACTIVITY on a node whose team label names a team "
                          "(NULL namespace); NULL for a bare pod, another kind of owner, or when no workload explains "
                          "the finding",
            "owner_name": "Name of that owner (in `namespace`); NULL with `owner_kind`",
            "team": "The workload's team label (`mapping.team_labels`), or the node's for BILLED_WITHOUT_ACTIVITY. NULL, "
                    "never a marker, where no workload explains the money (BILLED_WITHOUT_ACTIVITY on an unlabelled "
                    "node, BILLED_EXCEEDS_RUNTIME, DUPLICATE_BILLING, RATE_MISMATCH, "
                    "RATE_MISSING, STORAGE_LINGERING, the SERVERLESS_ codes, savings plans, the balance, invoices) or the pod "
                    "has no such label: a group by team keeps that money apart as its own NULL group",
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
    "list_cost": {
        "grain": "one row per billed Runpod resource and UTC day: its billed compute at Runpod's list prices (GET /v2/catalog/gpus), what the FOCUS export's ListCost and ListUnitPrice come from",
        "columns": {
            "resource_id": "Runpod pod id, serverless endpoint id or network volume id",
            "resource_kind": "instance, serverless or network_volume",
            "day": "UTC day",
            "price_basis": "Which list price: `secure` or `community` (the pod's `cloud`), `serverless` (the endpoint's pool), `storage` (a network volume: Runpod's storage price is its public list, so list = billed)",
            "gpu_type": "The pod's GPU type, or the endpoint's serverless pools (comma-separated); NULL when unknown",
            "gpu_count": "GPUs of the pod, or per worker of the endpoint",
            "cloud_assumed": "True when no inventory snapshot named the pod's cloud: priced as SECURE",
            "priced_seconds": "Billed compute seconds priced (a network volume: its billed bucket seconds)",
            "list_usd_per_gpu_hour": "The catalog's list price per GPU-hour, when one price covered the whole day; NULL when it changed during the day or is unknown",
            "price_pulled_at": "When the latest catalog used that day was pulled (NULL: saved without a pull time)",
            "list_amount": "List price × GPUs × billed hours, each hour at the catalog in force at its start (the latest pull at or before it, else the earliest), USD; NULL when a billed hour has no list price (GPU type, count, cloud price or billed seconds unknown)",
        },
    },
    "instance_segments": {
        "grain": "one row per elementary segment of billed instance compute (resource_id, seg_start): the timeline the report draws and the what-if prices; a resource-day's segments add up to its billed compute (the last run's window, as the intermediate tables: a windowed run replaces it whole)",
        "columns": {
            "resource_id": "Runpod pod id",
            "session_id": "Compute session the segment lies in (`<pod id>#<n>`, marts.compute_sessions)",
            "day": "UTC day",
            "seg_start": "Start of the segment (UTC)",
            "seg_end": "End of the segment (UTC, exclusive)",
            "category": "startup, busy, idle_gap, tail or unobserved (docs/design.md: billed seconds, partitioned)",
            "ms": "Billed compute milliseconds of the segment",
            "amount_usd": "The bill's compute amount allocated to the segment by milliseconds (USD)",
            "expected_usd": "Milliseconds × contracted rate (USD)",
        },
    },
    "compute_sessions": {
        "grain": "one row per compute session of an instance: a maximal run of billed compute, with its tail model where a GPU workload ended before compute stopped (tail columns NULL otherwise) (the last run's window, as the intermediate tables: a windowed run replaces it whole)",
        "columns": {
            "resource_id": "Runpod pod id",
            "session_id": "`<pod id>#<n>`: the pod's n-th session in the run's data",
            "start_at": "Start of billed compute (UTC; placed within its first bucket, see placed_by)",
            "end_at": "End of billed compute: when the provider stopped billing (UTC)",
            "placed_by": "How the partial buckets were placed in their hour: bill, inventory_start, node_registered, assumed_end_of_bucket",
            "compute_rate_per_hour": "The pod's compute rate (inventory cost, else the rate card; USD/h): the what-if's price when the tail has no billed money",
            "last_finished_at": "End of the session's last GPU workload, when it ended before compute stopped (UTC)",
            "last_pod": "namespace/pod of that last workload",
            "node_name": "Kubernetes node the last workload ran on",
            "scaler": "What ended the last workload: scaled_job, scale_to_zero, hpa_scale_in or unknown",
            "owner": "namespace/name of the ScaledJob or ScaledObject that owns the last pod (NULL if none)",
            "deactivated_at": "KEDA's scale to zero that ended the replica (scale_to_zero only, UTC)",
            "cooldown_seconds": "The owner's cooldownPeriod (else keda_cooldown_seconds)",
            "stabilization_seconds": "The owner's HPA scaleDown stabilizationWindowSeconds",
            "grace_seconds": "scale_down_grace_seconds: the node's scale-down after the last pod",
            "tolerance_seconds": "tail_tolerance_seconds",
            "allowed_seconds": "Expected tail after the last task (BILLED_AFTER_EXIT's threshold), seconds",
            "allowed_parts": "The expected tail in words: its parts and the settings they come from",
        },
    },
    "workloads": {
        "grain": "one row per GPU workload (cluster, pod_uid): a pod with a GPU or MIG limit, scheduled on a node that maps to a billed resource (the last run's window, as the intermediate tables: a windowed run replaces it whole)",
        "columns": {
            "cluster": "Cluster the pod was seen in",
            "pod_uid": "Kubernetes metadata.uid of the pod",
            "namespace": "Kubernetes namespace",
            "pod_name": "Pod name",
            "workload": "Workload (naming label, else pod name without generated suffixes)",
            "team": "Value of the pod's team label",
            "gpus": "nvidia.com/gpu limit of the pod",
            "node_name": "Node the pod was scheduled on",
            "resource_id": "Billed resource (Runpod pod id) the node maps to",
            "scheduled_at": "PodScheduled became True (UTC): the GPUs are held from here",
            "ready_at": "Ready became True (UTC): startup ends, busy begins",
            "window_end_at": "The task finished, else the pod was deleted (UTC): the GPUs are free from here",
            "mig_profiles": "MIG devices the pod limits instead of whole GPUs, `<profile>: <count>` (e.g. `mig-1g.10gb: 1`); NULL: none",
            "gpu_fraction": "Physical GPUs the pod held, what marts.allocation splits its node's money by: nvidia.com/gpu ÷ replicas on a time-sliced node (1/4 for one of 4), a MIG device's <n>g compute slices ÷ 7 on an A100 or H100 (1/7 for mig-1g.10gb), else its nvidia.com/gpu and MIG devices as whole GPUs (rounded to 6 places; shares use the exact fraction)",
        },
    },
    "pod_buckets": {
        "grain": "one row per Runpod pod billing bucket (pod_id, bucket_start): compute and storage in milliseconds and USD (the last run's window, as the intermediate tables: a windowed run replaces it whole)",
        "columns": {
            "pod_id": "Runpod pod id",
            "day": "UTC day of the bucket",
            "bucket_start": "Start of the billing bucket (UTC)",
            "bucket_end": "End of the billing bucket (UTC)",
            "bucket_ms": "Length of the bucket in milliseconds",
            "compute_ms": "Billed compute milliseconds (v1: given; v2: amount ÷ rate)",
            "compute_derived": "True when compute_ms was derived from the amount ÷ rate",
            "compute_usd": "Billed compute amount (USD)",
            "disk_usd": "Billed disk amount (USD)",
            "total_amount_usd": "Billed amount of the bucket (USD)",
            "storage_running_ms": "Disk milliseconds billed while compute ran",
            "storage_running_usd": "Disk money while compute ran (USD)",
            "storage_lingering_ms": "Disk milliseconds billed while no compute ran",
            "storage_lingering_usd": "Disk money while no compute ran (USD)",
            "storage_lingering_derived": "True when the lingering milliseconds were derived from the disk amount and rates",
        },
    },
    "serverless_worker_sessions": {
        "grain": "one row per serverless worker session (endpoint_id, worker_id): from its start to its last request done, then its idle timeout (the last run's window, as the intermediate tables: a windowed run replaces it whole)",
        "columns": {
            "endpoint_id": "Runpod serverless endpoint id",
            "worker_id": "Runpod worker id",
            "day": "UTC day the session started",
            "started_at": "The worker's startedAt, else its first job's submission (UTC)",
            "start_assumed": "True when the start is the first job's submission (no worker snapshot)",
            "first_submitted_at": "First job submitted (UTC)",
            "first_exec_at": "First job began executing (UTC)",
            "last_done_at": "Last request done (UTC)",
            "jobs": "Jobs the worker ran",
            "cold_start_ms": "From the start to the first execution, milliseconds",
            "execution_ms": "Milliseconds executing jobs",
            "between_ms": "Idle milliseconds between jobs",
            "rounding_est_ms": "Estimated round-up of the billed duration to a whole second, milliseconds",
            "idle_timeout_ms": "The endpoint's idle timeout after the last request, milliseconds",
        },
    },
    "serverless_endpoint_days": {
        "grain": "one row per serverless endpoint and UTC day: billed worker milliseconds split into cold start, execution, rounding and idle (or unobserved) (the last run's window, as the intermediate tables: a windowed run replaces it whole)",
        "columns": {
            "endpoint_id": "Runpod serverless endpoint id",
            "day": "UTC day",
            "billed_ms": "Billed worker milliseconds (amount ÷ rate)",
            "observed": "True when job or worker records exist for the day (else the day is unobserved)",
            "cold_start_ms": "Billed milliseconds of cold start",
            "execution_ms": "Billed milliseconds executing requests",
            "rounding_ms": "Billed milliseconds of the round-up to whole seconds",
            "idle_ms": "Billed milliseconds that were none of the above",
            "unobserved_ms": "Billed milliseconds of a day without observations",
            "expected_idle_ms": "Idle the settings explain: between requests + the idle timeouts, milliseconds",
            "worker_sessions": "Worker sessions of the day",
            "last_request_done_at": "Last request done that day (UTC)",
            "rate_per_second": "Configured worker rate (USD/s)",
            "worker_usd": "Billed worker amount (USD)",
            "total_usd": "Billed amount of the endpoint that day (USD)",
        },
    },
    "network_volume_lingering": {
        "grain": "one row per network volume and UTC day with a billed bucket: the seconds no running attached pod covered and their money (each hour's amount × its lingering share, exact decimals) (the last run's window, as the intermediate tables: a windowed run replaces it whole)",
        "columns": {
            "volume_id": "Runpod network volume id",
            "day": "UTC day",
            "billed_seconds": "Seconds of the day's billed buckets",
            "lingering_seconds": "Billed seconds no running attached pod covered",
            "billed_amount": "Billed amount of the day (USD)",
            "lingering_amount": "The lingering share of the billed amount (USD, 18 decimals: exact where an hour lingered whole or not at all, else rounded half-even)",
        },
    },
    "nodes": {
        "grain": "one row per Kubernetes Node object (cluster, node_uid), GPU or not, over every version landed",
        "columns": {
            "cluster": "Cluster the node was seen in",
            "node_uid": "Kubernetes metadata.uid of the Node",
            "node_name": "Node name",
            "gpu_capacity": "Largest status.capacity nvidia.com/gpu any version showed (NULL: none)",
            "created_at": "metadata.creationTimestamp (UTC): registered",
            "removed_at": "When it was deleted: its deletionTimestamp, else its creationTimestamp when a DELETED version carries none (UTC; NULL if no DELETED version)",
            "gpu_sharing": "How its GPUs are shared and counted: `time-slicing` or `mps` (nvidia.com/gpu.sharing-strategy with a whole nvidia.com/gpu.replicas), `mig-mixed` (nvidia.com/mig.strategy=mixed on an A100 or H100 with nvidia.com/gpu.count), else `none` (whole nvidia.com/gpu)",
            "physical_gpus": "Physical GPUs: capacity nvidia.com/gpu ÷ replicas when time-sliced, nvidia.com/gpu.count for MIG, else the capacity",
            "gpu_replicas": "Replicas per physical GPU (nvidia.com/gpu.replicas when time-sliced, else 1)",
            "gpu_note": "Why its sharing labels were not used and its pods count in whole GPUs (replicas missing or malformed, a MIG product without a known slice count, MIG's single strategy); NULL: none",
        },
    },
    "waste": {
        "grain": "one row per resource, UTC day, cause and owner (resource_id, day, cause, namespace, owner_kind, owner_name, team): every billed second that is not work",
        "columns": {
            "resource_id": "Runpod pod id, serverless endpoint id or network volume id",
            "resource_kind": "`instance`, `serverless` or `network_volume`",
            "day": "UTC day",
            "cause": "Why the second was billed without work: keda_cooldown, hpa_scale_down, tail_after_exit (an instance's tail, by the session's scaler), startup, probe_restarts (runs a startup probe killed), unschedulable_wait (a node brought up for a pod, Ready, the pod still Pending), idle_between_jobs, bill_without_workload, unobserved, storage_lingering, network_volume_unused, serverless_idle, serverless_cold_start, or unreconciled (the bill beyond its segments, 0 seconds; docs/design.md, Waste)",
            "namespace": "Namespace of the workload the waste belongs to (a tail: the session's last pod; startup: the pod starting, or the pod a node was brought up for; an idle gap: the workloads around it); NULL for a node's team label and when unattributed",
            "owner_kind": "What owns that workload (intermediate.int_k8s__pod_owners): the KEDA ScaledObject or ScaledJob, else the controller of its ownerReferences (`Deployment`, `ReplicaSet`, `Job`, `StatefulSet`, `DaemonSet`); `Node` where only the node's team label names an owner; NULL for a bare pod or unattributed",
            "owner_name": "Name of that owner (in `namespace`); NULL with `owner_kind`",
            "team": "Team label of that workload or node (`mapping.team_labels`; `__unallocated__` for a workload without one); `__unattributed__` when no owner explains the waste",
            "seconds": "Billed seconds of that cause and owner (an idle gap shared between owners: their shares, to the millisecond)",
            "amount": "The bill's money for those seconds (USD, exact decimals: a resource-day's waste plus its work equals resource_day.billed_amount)",
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
