-- grain: one row per billed (or active but unbilled) resource per UTC day: the four quantities.
-- billed_after_exit_seconds is the day's `tail` (compute billed after the last task finished,
-- per session); it is NULL for serverless (a worker's stop is not observable: see idle) and volumes.
with instance_segments as (
    select * from intermediate.int_resource__instance_segments
),

compute_sessions as (
    select * from intermediate.int_resource__compute_sessions
),

pod_rates as (
    select * from intermediate.int_runpod__pod_rates
),

endpoint_days as (
    select * from intermediate.int_serverless__endpoint_days
),

network_volume_buckets as (
    select * from intermediate.int_storage__network_volume_buckets
),

bucket_states as (
    select * from intermediate.int_billing__bucket_states
),

-- read twice below, so named there directly (intermediate.int_runpod__pod_buckets and
-- intermediate.int_resource__workloads): DuckDB would materialise an import CTE read twice
instance_bill as (
    select pod_id as resource_id, cast(date_trunc('day', bucket_start) as date) as day,
           sum(compute_ms) as billed_ms, sum(total_amount_usd) as billed_amount,
           sum(storage_lingering_ms) as lingering_ms,
           -- lingering storage of an hour compute stopped or started in is derived too
           bool_or(compute_derived or storage_lingering_derived) as seconds_derived,
           -- a usage-only FOCUS line no rate prices: its amount is unknown (int_billing__instance_lines)
           bool_or(compute_ms is null and compute_usd > 0 or amount_unpriced) as rate_missing,
           bool_or(amount_priced) as amount_priced,
           max(compute_rate_per_hour) as rate_per_hour
    from intermediate.int_runpod__pod_buckets
    group by all
),

segments as (
    select resource_id, day, sum(ms) filter (where category = 'tail') as tail_ms,
           sum(expected_usd) as expected_compute
    from instance_segments
    group by all
),

disk as (
    select pod_id as resource_id, cast(date_trunc('day', bucket_start) as date) as day,
           sum(disk_usd) as disk_usd
    from intermediate.int_runpod__pod_buckets
    group by all
),

finished as (
    select resource_id, cast(date_trunc('day', window_end_at) as date) as day,
           max(window_end_at) as task_finished_at
    from intermediate.int_resource__workloads
    where window_end_at < '2100-01-01'
    group by all
),

stopped as (
    select resource_id, cast(date_trunc('day', end_at - interval 1 millisecond) as date) as day,
           max(end_at) as compute_stopped_at
    from compute_sessions
    group by all
),

active as (
    -- days each workload ran on its resource, clipped to the day (for resources without a bill)
    select w.resource_id, d.day,
           greatest(w.scheduled_at, d.day::timestamptz) as a,
           least(w.window_end_at, d.day::timestamptz + interval 1 day) as b
    from intermediate.int_resource__workloads w,
         lateral (select unnest(generate_series(cast(date_trunc('day', w.scheduled_at) as date),
                  cast(date_trunc('day', least(w.window_end_at, now()) - interval 1 millisecond) as date),
                  interval 1 day))::date as day) d
),

estimates as (
    -- work observed with no bill: lifecycle span × the pod's rate (inventory or rate card)
    select a.resource_id, a.day,
           cast(any_value(r.compute_rate_per_hour) * (epoch_ms(max(a.b)) - epoch_ms(min(a.a))) / 3600000
                as decimal(38, 12)) as estimated_usd
    from active a
    left join pod_rates r on r.pod_id = a.resource_id
    group by a.resource_id, a.day
),

instance_days as (
    select resource_id, day from instance_bill
    union select resource_id, day from finished
    union select resource_id, day from estimates
),

instance as (
    select
        d.resource_id, 'instance' as resource_kind, d.day,
        coalesce(b.billed_ms, 0) as billed_ms,
        f.task_finished_at,
        s.compute_stopped_at,
        coalesce(g.tail_ms, 0) as billed_after_exit_ms,
        coalesce(b.lingering_ms, 0) as lingering_ms,
        0 as idle_ms,
        coalesce(b.billed_amount, 0) as billed_amount,
        case when b.resource_id is null then e.estimated_usd
             else coalesce(g.expected_compute, 0) + coalesce(k.disk_usd, 0) end as expected_amount,
        coalesce(b.seconds_derived, false) as seconds_derived,
        coalesce(b.rate_missing, false) as rate_missing,
        coalesce(b.amount_priced, false) as amount_priced
    from instance_days d
    left join instance_bill b using (resource_id, day)
    left join segments g using (resource_id, day)
    left join disk k using (resource_id, day)
    left join finished f using (resource_id, day)
    left join stopped s using (resource_id, day)
    left join estimates e using (resource_id, day)
),

serverless as (
    select endpoint_id as resource_id, 'serverless' as resource_kind, day,
           coalesce(billed_ms, 0), last_request_done_at, null::timestamptz, null::bigint,
           0, idle_ms, coalesce(total_usd, 0),
           cast(rate_per_second * billed_ms / 1000 as decimal(38, 12)), true, rate_per_second is null, false
    from endpoint_days
),

network_volume as (
    select volume_id, 'network_volume', cast(date_trunc('day', bucket_start) as date) as day,
           sum(bucket_ms), null::timestamptz, null::timestamptz, null::bigint,
           sum(lingering_ms), 0, sum(total_amount_usd), sum(total_amount_usd), false, false, false
    from network_volume_buckets
    group by all
),

unioned as (
    select * from instance union all select * from serverless union all select * from network_volume
),

-- the display name the inventory gives a resource (a pod's latest, an endpoint's, a volume's):
-- FOCUS ResourceName, which "MUST NOT duplicate ResourceId" when the resource has one; NULL
-- when no snapshot names it
resource_names as (
    select pod_id as resource_id, arg_max(pod_name, snapshot_at) as resource_name
    from staging.stg_runpod__pods where nullif(pod_name, '') is not null group by pod_id
    union all
    select endpoint_id, max(endpoint_name) from staging.stg_runpod__endpoints
    where nullif(endpoint_name, '') is not null group by endpoint_id
    union all
    select volume_id, max(volume_name) from staging.stg_runpod__network_volumes
    where nullif(volume_name, '') is not null group by volume_id
),

final as (
    select
        resource_id, resource_kind, day,
        billed_ms * 0.001::decimal(18, 3) as billed_seconds,
        task_finished_at,
        compute_stopped_at,
        billed_after_exit_ms * 0.001::decimal(18, 3) as billed_after_exit_seconds,
        lingering_ms * 0.001::decimal(18, 3) as lingering_storage_seconds,
        idle_ms * 0.001::decimal(18, 3) as serverless_idle_seconds,
        cast(billed_amount as decimal(38, 12)) as billed_amount,
        cast(expected_amount as decimal(38, 12)) as expected_amount,
        seconds_derived,
        rate_missing,
        amount_priced,
        (select case when bool_or(b.state = 'restated') then 'restated'
                     when bool_or(b.state = 'provisional') then 'provisional' else 'settled' end
           from bucket_states b
          where b.resource_id = unioned.resource_id and b.day = unioned.day) as bill_state,
        (select min(n.resource_name) from resource_names n
          where n.resource_id = unioned.resource_id) as resource_name
    from unioned
)

select * from final
where day between cfg('day_from')::date and cfg('day_to')::date
order by resource_id, day
