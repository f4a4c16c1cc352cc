-- grain: one row per Kubernetes pod (cluster, pod_uid), GPU or not.
with workloads as (
    select * from intermediate.int_k8s__workloads
),

node_resources as (
    select * from intermediate.int_k8s__node_resources
),

final as (
    select
        w.cluster, w.pod_uid, w.namespace, w.pod_name, w.workload, w.node_name, r.resource_id, w.team,
        w.gpus, w.created_at, w.scheduled_at, w.started_at, w.ready_at, w.task_finished_at,
        w.deleted_at, w.restarts, w.exit_reason, w.exit_code,
        w.startup_period_seconds * w.startup_failure_threshold as startup_budget_seconds,
        w.versions_seen,
        w.lifecycle_source
    from workloads w
    left join node_resources r using (cluster, node_name)
)

select * from final order by cluster, created_at, pod_uid
