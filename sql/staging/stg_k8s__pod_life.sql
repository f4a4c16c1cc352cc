-- grain: one row per pod (cluster, pod_uid): the span of its life folded over its versions, as
-- int_k8s__workloads folds it ([created, window end)), with its GPUs (and MIG devices) and its own PodScheduled
-- time; sql/scope/ reads it to decide which pods a windowed run needs. Refolded only for the
-- pods a run's new files touched.
with final as (
    select
        cluster,
        pod_uid,
        arg_max(namespace, created_at) as namespace,
        arg_max(pod_name, created_at) as pod_name,
        max(node_name) as node_name,
        max(gpus) as gpus,
        max(mig_devices) as mig_devices,
        min(created_at) as created_at,
        -- int_k8s__workloads' scheduled_at when not null (else it falls back to events and the
        -- kubelet's start)
        min(scheduled_at) as scheduled_at,
        coalesce(max(main_finished_at),
                 min(deletion_at - to_seconds(coalesce(deletion_grace_seconds, 0))),
                 '2100-01-01'::timestamptz) as window_end_at
    from staging.stg_k8s__pods
    group by all
)

select * from final
