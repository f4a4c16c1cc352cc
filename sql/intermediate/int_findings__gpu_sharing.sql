-- grain: one row per GPU_SHARED_OVERSUBSCRIBED finding: a time-sliced node's resource-day on
-- which its pods held more replicas than the node has physical GPUs. Columns as
-- intermediate.int_findings__workloads (code … message, then the owner).
-- Time-slicing hands out `replicas` references to each GPU (NVIDIA k8s-device-plugin README,
-- "With CUDA Time-Slicing": "the plugin simply creates 10 references to each GPU and
-- indiscriminately hands them out"): a pod holding one sees a whole GPU while it shares it.
-- Accounting that prices each `nvidia.com/gpu` a pod holds as a whole GPU (opencost#3828 does so
-- for HAMi's fractions) charges such pods more than the node's GPUs cost once they hold more
-- replicas than there are GPUs. Money at stake, over each busy/startup segment in which the
-- replicas held R exceed the physical GPUs P: what that accounting charges the pods (amount ×
-- R ÷ P) minus what marts.allocation charges them (amount × R ÷ max(P × replicas, R)).
-- Owner: the pods' when they all agree, else none (as ACTIVITY_WITHOUT_BILLING).
with segments as (
    select * from intermediate.int_resource__instance_segments
),

workloads as (
    select * from intermediate.int_resource__workloads
),

node_gpus as (
    select * from intermediate.int_k8s__node_gpus
),

shared as (
    select w.*, n.physical_gpus, n.gpu_replicas, n.capacity_slots
    from workloads w
    join node_gpus n using (cluster, node_name)
    where n.gpu_sharing = 'time-slicing'
),

present as (
    select g.resource_id, g.day, g.seg_start, g.seg_end, g.ms, coalesce(g.amount_usd, 0) as amount_usd,
           s.cluster, s.pod_uid, s.namespace, s.pod_name, s.team, s.gpus, s.node_name,
           s.physical_gpus, s.gpu_replicas, s.capacity_slots,
           sum(s.gpus) over (partition by g.resource_id, g.seg_start) as held
    from segments g
    join shared s
      on s.resource_id = g.resource_id and g.category in ('busy', 'startup')
     and s.scheduled_at < g.seg_end and s.window_end_at > g.seg_start
),

over as (
    select * from present where held > physical_gpus
),

by_segment as (
    select resource_id, day, seg_start, any_value(seg_end) as seg_end, any_value(ms) as ms,
           any_value(held) as held,
           cast(any_value(amount_usd) * any_value(held) / any_value(physical_gpus) as decimal(38, 12))
               - cast(any_value(amount_usd) * any_value(held)
                      / greatest(any_value(capacity_slots), any_value(held)) as decimal(38, 12)) as overcharge
    from over
    group by resource_id, day, seg_start
),

by_day as (
    select resource_id, day, min(seg_start) as window_start, max(seg_end) as window_end,
           sum(ms) as ms, max(held) as peak_held, sum(overcharge) as overcharge
    from by_segment
    group by all
),

pods as (
    select o.resource_id, o.day, o.cluster, o.pod_uid,
           any_value(o.node_name) as node_name, any_value(o.physical_gpus) as physical_gpus,
           any_value(o.gpu_replicas) as gpu_replicas,
           any_value(o.namespace) as namespace, any_value(o.pod_name) as pod_name,
           any_value(o.team) as team, any_value(o.gpus) as gpus
    from over o
    group by all
),

owned as (
    select p.* exclude (team), w.owner_kind, w.owner_name, w.team
    from pods p
    left join intermediate.int_k8s__pod_owners w
      on w.cluster is not distinct from p.cluster and w.pod_uid = p.pod_uid
),

final as (
    select
        'GPU_SHARED_OVERSUBSCRIBED' as code, 'warning' as severity, d.resource_id, d.day,
        d.window_start, d.window_end, d.ms,
        d.overcharge as amount_at_stake,
        'Node ' || min(o.node_name) || ' shares ' || min(o.physical_gpus) || ' physical GPU(s) by time-slicing, '
            || min(o.gpu_replicas) || ' replicas each (nvidia.com/gpu.replicas): its pods held up to '
            || d.peak_held || ' replicas, more than its ' || min(o.physical_gpus) || ' GPU(s), for '
            || (d.ms // 1000) || ' s from ' || strftime(d.window_start, '%Y-%m-%dT%H:%M:%SZ') || ' to '
            || strftime(d.window_end, '%Y-%m-%dT%H:%M:%SZ') || ' (pods and nvidia.com/gpu requested: '
            || string_agg(o.namespace || '/' || o.pod_name || ' ' || o.gpus, ', ' order by o.namespace, o.pod_name)
            || '). Each sees a whole GPU while sharing it; accounting that charges each requested nvidia.com/gpu as'
            || ' a whole GPU charges them ' || round(d.overcharge, 2)::varchar || ' USD more than their fractions (1/'
            || min(o.gpu_replicas) || ' of a GPU per replica).' as message,
        case when count(distinct row(o.namespace, o.owner_kind, o.owner_name, o.team)) = 1 then min(o.namespace) end
            as namespace,
        case when count(distinct row(o.namespace, o.owner_kind, o.owner_name, o.team)) = 1 then min(o.owner_kind) end
            as owner_kind,
        case when count(distinct row(o.namespace, o.owner_kind, o.owner_name, o.team)) = 1 then min(o.owner_name) end
            as owner_name,
        case when count(distinct row(o.namespace, o.owner_kind, o.owner_name, o.team)) = 1 then min(o.team) end
            as team
    from by_day d
    join owned o using (resource_id, day)
    group by d.resource_id, d.day, d.window_start, d.window_end, d.ms, d.peak_held, d.overcharge
)

select * from final
