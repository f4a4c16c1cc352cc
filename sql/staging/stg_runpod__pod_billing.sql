-- grain: one row per pod and billing bucket, from v2 (/v2/billing/pods) and saved v1 arrays.
-- v2 carries amounts only; v1 carries billed compute milliseconds and the disk GB billed (observed
-- spelled diskSpaceBilledGb and diskSpaceBilledGB). The latest pull of a bucket wins.
-- (its `incremental` setting, sql/staging/_models.toml, is the dedupe: the build keeps one row
-- per key, the first in that order)
with v2 as (
    select
        doc ->> '$.podId' as pod_id,
        try_cast(doc ->> '$.startTime' as timestamptz) as bucket_start,
        try_cast(doc ->> '$.endTime' as timestamptz) as bucket_end,
        coalesce(try_cast(doc ->> '$.gpuAmount' as decimal(38, 12)), 0)
            + coalesce(try_cast(doc ->> '$.cpuAmount' as decimal(38, 12)), 0) as compute_amount_usd,
        coalesce(try_cast(doc ->> '$.diskAmount' as decimal(38, 12)), 0) as disk_amount_usd,
        try_cast(doc ->> '$.totalAmount' as decimal(38, 12)) as total_amount_usd,
        cast(null as decimal(18, 3)) as compute_seconds_billed,
        cast(null as bigint) as disk_gb_billed,
        'v2' as source_format,
        try_cast(pulled_at as timestamptz) as pulled_at,
        source_file,
        record_no
    from raw.runpod_billing
    where source = 'v2_pods'
),

v1 as (
    select
        doc ->> '$.podId' as pod_id,
        try_cast(doc ->> '$.time' as timestamptz) as bucket_start,
        try_cast(doc ->> '$.time' as timestamptz)
            + case when try_cast(doc ->> '$.timeBilledMs' as bigint) > 3600000
                   then interval 1 day else interval 1 hour end as bucket_end,
        cast(null as decimal(38, 12)) as compute_amount_usd,
        cast(null as decimal(38, 12)) as disk_amount_usd,
        try_cast(doc ->> '$.amount' as decimal(38, 12)) as total_amount_usd,
        try_cast(doc ->> '$.timeBilledMs' as decimal(18, 3)) / 1000 as compute_seconds_billed,
        coalesce(try_cast(doc ->> '$.diskSpaceBilledGb' as bigint),
                 try_cast(doc ->> '$.diskSpaceBilledGB' as bigint)) as disk_gb_billed,
        'v1' as source_format,
        cast(null as timestamptz) as pulled_at,
        source_file,
        record_no
    from raw.runpod_billing
    where source = 'v1_pods'
),

final as (
    select * from (select * from v2 union all select * from v1)
    where bucket_start is not null and bucket_end > bucket_start and pod_id is not null
)

select * from final
