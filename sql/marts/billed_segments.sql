-- grain: one row per (resource_id, day, category). The compute categories of an instance-day add up
-- exactly to its billed compute seconds; serverless categories to its billed worker seconds
-- (docs/design.md). amount is the bill's own amount allocated by seconds; expected_amount uses the rate.
with instance_segments as (
    select * from intermediate.int_resource__instance_segments
),

pod_buckets as (
    select * from intermediate.int_runpod__pod_buckets
),

endpoint_days as (
    select * from intermediate.int_serverless__endpoint_days
),

network_volume_buckets as (
    select * from intermediate.int_storage__network_volume_buckets
),

instance as (
    select resource_id, 'instance' as resource_kind, day, category,
           sum(ms) as ms, sum(amount_usd) as amount, sum(expected_usd) as expected_amount
    from instance_segments
    group by all
),

storage_days as (
    select pod_id as resource_id, cast(date_trunc('day', bucket_start) as date) as day,
           sum(storage_running_ms) as running_ms, sum(storage_lingering_ms) as lingering_ms,
           sum(storage_running_usd) as running_usd, sum(storage_lingering_usd) as lingering_usd
    from pod_buckets
    where disk_usd <> 0
    group by all
),

storage_both as (
    select resource_id, 'instance' as resource_kind, day,
           unnest(['storage_running', 'storage_lingering']) as category,
           unnest([running_ms, lingering_ms]) as ms,
           unnest([running_usd, lingering_usd]) as amount,
           unnest([running_usd, lingering_usd]) as expected_amount
    from storage_days
),

storage as (  -- a category with neither seconds nor money has no row
    select * from storage_both where ms <> 0 or amount <> 0
),

serverless_long as (
    select endpoint_id as resource_id, 'serverless' as resource_kind, day,
           unnest(['cold_start', 'execution', 'idle', 'rounding', 'unobserved']) as category,
           unnest([cold_start_ms, execution_ms, idle_ms, rounding_ms, unobserved_ms]) as ms,
           worker_usd, billed_ms, rate_per_second
    from endpoint_days
    where billed_ms > 0
),

serverless_cut as (
    select resource_id, resource_kind, day, category, ms, worker_usd,
           cast(worker_usd * ms / billed_ms as decimal(38, 12)) as amount,
           cast(rate_per_second * ms / 1000 as decimal(38, 12)) as expected_amount
    from serverless_long
),

-- an endpoint-day's categories add up to its worker_usd exactly: the cuts' loss (< 1e-9 USD)
-- goes to its largest category
serverless as (
    select resource_id, resource_kind, day, category, ms,
           amount + case
               when row_number() over (partition by resource_id, day order by amount desc, category) = 1
                and abs(worker_usd - sum(amount) over (partition by resource_id, day)) <= 0.000001
               then worker_usd - sum(amount) over (partition by resource_id, day) else 0 end as amount,
           expected_amount
    from serverless_cut
),

network_volume as (
    select volume_id as resource_id, 'network_volume' as resource_kind,
           cast(date_trunc('day', bucket_start) as date) as day, 'network_volume' as category,
           sum(bucket_ms) as ms, sum(total_amount_usd) as amount, sum(total_amount_usd) as expected_amount
    from network_volume_buckets
    group by all
),

unioned as (
    select * from instance
    union all select * from storage
    union all select * from serverless
    union all select * from network_volume
),

final as (
    select resource_id, resource_kind, day, category,
           ms * 0.001::decimal(18, 3) as seconds,
           amount,
           expected_amount
    from unioned
    where ms > 0 or amount <> 0
)

select * from final where day between cfg('day_from')::date and cfg('day_to')::date
order by resource_id, day, category
