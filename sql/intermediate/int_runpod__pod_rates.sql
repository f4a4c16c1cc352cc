-- grain: one row per Runpod pod: the compute rate used to turn v2 amounts into seconds, and
-- the disk sizes used to split storage. Per bucket, int_runpod__pod_buckets resolves the rate in
-- force at that time (effective-dated rate card, savings plans); this is the per-pod fallback. Rate: inventory cost seen while RUNNING (latest), else the
-- rate card (pod_per_hour, then gpu_per_hour × gpu count). NULL means: say which rate is missing.
-- Disk: USD per month of the pod's disk while running (volume + container disk at the running
-- rate) and while stopped (the volume alone at the stopped rate; container disk is not billed).
with instance_lines as (
    select * from intermediate.int_billing__instance_lines
),

node_resources as (
    select * from intermediate.int_k8s__node_resources
),

-- read twice below, so named there directly (staging.stg_runpod__pods and config.rates):
-- DuckDB would materialise an import CTE read twice
billed_pods as (
    select pod_id from instance_lines
    union
    select pod_id from staging.stg_runpod__pods
    union
    -- a node's pod known from the lifecycle only (its bill not landed, no inventory snapshot):
    -- the rate card still prices its work (marts.settlement, ACTIVITY_WITHOUT_BILLING)
    select resource_id from node_resources where resource_id is not null
),

snapshots as (
    select *, coalesce(snapshot_at, '1970-01-01'::timestamptz) as snapshot_key
    from staging.stg_runpod__pods
),

latest as (
    select
        pod_id,
        arg_max(cost_per_hour_usd, snapshot_key) filter (where status = 'RUNNING' and cost_per_hour_usd > 0)
            as inventory_rate,
        arg_max(gpu_type, snapshot_key) as gpu_type,
        arg_max(gpu_count, snapshot_key) as gpu_count,
        arg_max(container_disk_gb, snapshot_key) as container_disk_gb,
        arg_max(volume_gb, snapshot_key) as volume_gb,
        arg_max(network_volume_id, snapshot_key) as network_volume_id,
        min(started_at) as first_started_at
    from snapshots
    group by pod_id
),

current_cards as (
    -- without a time: the entry in force last (an open-ended one wins)
    select * from config.rates
    qualify row_number() over (partition by rate_kind, match_key
                               order by valid_to desc nulls first, valid_from desc nulls last) = 1
),

cards as (
    select
        max(usd) filter (where rate_kind = 'disk_running_per_gb_month') as disk_running_gb_month,
        max(usd) filter (where rate_kind = 'volume_stopped_per_gb_month') as volume_stopped_gb_month
    from config.rates
),

final as (
    select
        b.pod_id,
        l.gpu_type,
        l.gpu_count,
        l.container_disk_gb,
        l.volume_gb,
        l.network_volume_id,
        coalesce(l.inventory_rate, pr.usd, gr.usd * l.gpu_count) as compute_rate_per_hour,
        case when l.inventory_rate is not null then 'inventory'
             when pr.usd is not null then 'rate_card_pod'
             when gr.usd is not null then 'rate_card_gpu' end as rate_source,
        -- NULL when a size or rate is unknown: an unknown size is no 0 GB (it bought the
        -- running disk nothing and left the whole disk amount to the stopped rate)
        c.disk_running_gb_month * (l.volume_gb + l.container_disk_gb) as disk_running_per_month,
        c.volume_stopped_gb_month * l.volume_gb as disk_stopped_per_month,
        c.disk_running_gb_month as disk_running_per_gb_month,
        c.volume_stopped_gb_month as volume_stopped_per_gb_month
    from billed_pods b
    left join latest l using (pod_id)
    left join current_cards pr on pr.rate_kind = 'pod_per_hour' and pr.match_key = b.pod_id
    left join current_cards gr on gr.rate_kind = 'gpu_per_hour' and gr.match_key = l.gpu_type
    cross join cards c
)

select * from final
