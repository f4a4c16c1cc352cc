-- grain: one row per billed Runpod resource and UTC day: what its billed compute costs at
-- Runpod's list prices (staging.stg_runpod__gpu_prices, GET /v2/catalog/gpus), beside what the
-- contract (rate card, savings plan) charged. Read by the FOCUS export for ListCost.
--
-- Each billing bucket is priced at the catalog price in force at its start (the latest pull at or
-- before it, else the earliest pull), per GPU-hour:
--   pod        price.secure or price.community, by the pod's `cloud` (openapi-v2 `Pod.cloud`,
--              SECURE | COMMUNITY; a pod no snapshot names a cloud for is taken as SECURE,
--              `cloud_assumed`) × gpu.count × the bucket's billed compute ms ÷ 3,600,000
--   serverless price.serverless of the endpoint's pool (`Endpoint.gpu.pools`; every GPU type of
--              a pool carries the pool's price) × gpu.count × the bucket's billed worker ms
--              ÷ 3,600,000, its ms derived as int_serverless__endpoint_days derives them
--              (worker amount ÷ the configured per-second rate); an endpoint over pools of more
--              than one price, or over none the catalog prices, has no list amount
--   network volume  no GPU list price: Runpod's storage price is its public list, so the list
--              amount is the billed amount
-- list_amount is NULL when a bucket of the day has no price (GPU type, count, cloud price or
-- billed ms unknown). The day's sum of USD/h × ms is exact; its ÷ 3,600,000 is rounded half up
-- to 12 decimals once, in integers (a DECIMAL ÷ in DuckDB is a DOUBLE).
with pod_buckets as (
    select pod_id, bucket_start, compute_ms from intermediate.int_runpod__pod_buckets
),

pod_rates as (
    select pod_id, gpu_type, gpu_count from intermediate.int_runpod__pod_rates
),

pod_clouds as (
    select pod_id,
           arg_max(cloud, coalesce(snapshot_at, '1970-01-01'::timestamptz))
               filter (where cloud is not null) as cloud
    from staging.stg_runpod__pods
    group by pod_id
),

endpoints as (
    select endpoint_id, gpu_pools, gpu_count from staging.stg_runpod__endpoints
),

serverless_billing as (
    select endpoint_id, bucket_start, worker_amount_usd from staging.stg_runpod__serverless_billing
),

rates as (
    select * from config.rates
),

network_volume_buckets as (
    select * from intermediate.int_storage__network_volume_buckets
),

-- read by both pods and serverless below, so named there directly
-- (staging.stg_runpod__gpu_prices): DuckDB would materialise an import CTE read twice
pod_priced as (
    select
        b.pod_id as resource_id, cast(date_trunc('day', b.bucket_start) as date) as day,
        r.gpu_type, r.gpu_count,
        coalesce(c.cloud, 'SECURE') as cloud, c.cloud is null as cloud_assumed,
        b.compute_ms,
        case coalesce(c.cloud, 'SECURE') when 'SECURE' then p.secure_usd_per_gpu_hour
                                         when 'COMMUNITY' then p.community_usd_per_gpu_hour end
            as usd_per_gpu_hour,
        p.pulled_at
    from pod_buckets b
    left join pod_rates r using (pod_id)
    left join pod_clouds c using (pod_id)
    left join staging.stg_runpod__gpu_prices p
      on p.gpu_type_id = r.gpu_type and b.bucket_start >= p.valid_from and b.bucket_start < p.valid_to
),

pool_prices as (
    -- an endpoint's price per bucket: its pools' serverless prices then in force
    select s.endpoint_id, s.bucket_start,
           count(distinct p.serverless_usd_per_gpu_hour) as prices,
           max(p.serverless_usd_per_gpu_hour) as usd_per_gpu_hour,
           max(p.pulled_at) as pulled_at
    from serverless_billing s
    join endpoints e using (endpoint_id)
    join staging.stg_runpod__gpu_prices p
      on list_contains(e.gpu_pools, p.pool) and p.serverless_usd_per_gpu_hour is not null
     and s.bucket_start >= p.valid_from and s.bucket_start < p.valid_to
    group by all
),

serverless_priced as (
    select
        s.endpoint_id as resource_id, cast(date_trunc('day', s.bucket_start) as date) as day,
        array_to_string(e.gpu_pools, ',') as gpu_type, e.gpu_count,
        'SERVERLESS' as cloud, false as cloud_assumed,
        case when r.usd > 0 then cast(round(s.worker_amount_usd * 1000 / r.usd) as bigint) end
            as compute_ms,
        case when pp.prices = 1 then pp.usd_per_gpu_hour end as usd_per_gpu_hour,
        pp.pulled_at
    from serverless_billing s
    left join endpoints e using (endpoint_id)
    left join rates r on r.rate_kind = 'serverless_per_second' and r.match_key = s.endpoint_id
    left join pool_prices pp using (endpoint_id, bucket_start)
),

gpu_days as (
    select
        resource_id, resource_kind, day, any_value(gpu_type) as gpu_type, any_value(gpu_count) as gpu_count,
        any_value(cloud) as cloud, bool_or(cloud_assumed) as cloud_assumed,
        sum(compute_ms) as compute_ms,
        -- USD/h × GPUs × ms, exact; NULL when a bucket has no price
        case when count(*) = count(usd_per_gpu_hour * gpu_count * compute_ms)
             then sum(usd_per_gpu_hour * gpu_count * compute_ms) end as usd_hour_ms,
        case when count(distinct usd_per_gpu_hour) = 1 and count(*) = count(usd_per_gpu_hour)
             then any_value(usd_per_gpu_hour) end as list_usd_per_gpu_hour,
        max(pulled_at) as price_pulled_at
    from (select *, 'instance' as resource_kind from pod_priced
          union all by name
          select *, 'serverless' as resource_kind from serverless_priced)
    group by resource_id, day, resource_kind
),

gpu as (
    select
        * exclude (usd_hour_ms),
        ((cast(usd_hour_ms * 1000000000000 as hugeint) * 2 + 3600000) // 7200000)::decimal(38, 0)
            * 0.000000000001::decimal(13, 12) as list_amount
    from gpu_days
),

network_volume as (
    select volume_id as resource_id, 'network_volume' as resource_kind,
           cast(date_trunc('day', bucket_start) as date) as day,
           null::varchar as gpu_type, null::bigint as gpu_count, null::varchar as cloud,
           false as cloud_assumed, sum(bucket_ms) as compute_ms,
           null::decimal(38, 12) as list_usd_per_gpu_hour, null::timestamptz as price_pulled_at,
           sum(total_amount_usd) as list_amount
    from network_volume_buckets
    group by all
),

final as (
    select
        resource_id, resource_kind, day,
        case when resource_kind = 'network_volume' then 'storage'
             else lower(cloud) end as price_basis,
        gpu_type, gpu_count, cloud_assumed,
        compute_ms * 0.001::decimal(18, 3) as priced_seconds,
        cast(list_usd_per_gpu_hour as decimal(38, 12)) as list_usd_per_gpu_hour,
        price_pulled_at,
        cast(list_amount as decimal(38, 12)) as list_amount
    from (select * from gpu union all by name select * from network_volume)
)

select * from final
