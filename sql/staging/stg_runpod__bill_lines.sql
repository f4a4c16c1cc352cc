-- grain: one row per landed Runpod pod/serverless/network-volume billing record (every pull of
-- every bucket, duplicates included): what settlement, restatements and duplicate-billing
-- checks need, typed once so that those models do not parse the bill's JSON again every run.
with final as (
    select
        source,
        case source when 'v2_pods' then 'instance' when 'v1_pods' then 'instance'
             when 'v2_serverless' then 'serverless' else 'network_volume' end as resource_kind,
        coalesce(doc ->> '$.podId', doc ->> '$.serverlessId', doc ->> '$.networkVolumeId') as resource_id,
        -- v2 names (startTime, totalAmount) and v1 names (time, amount) kept apart: the models
        -- that read this choose, as they did reading the JSON
        try_cast(doc ->> '$.startTime' as timestamptz) as start_time,
        try_cast(doc ->> '$.time' as timestamptz) as v1_time,
        try_cast(coalesce(doc ->> '$.startTime', doc ->> '$.time') as timestamptz) as bucket_start,
        try_cast(doc ->> '$.endTime' as timestamptz) as bucket_end,
        try_cast(doc ->> '$.totalAmount' as decimal(38, 12)) as total_amount,
        try_cast(coalesce(doc ->> '$.totalAmount', doc ->> '$.amount') as decimal(38, 12)) as amount,
        try_cast(pulled_at as timestamptz) as pulled_at,
        pulled_at is not null as has_pull_time,
        source_file,
        record_no,
        locator
    from raw.runpod_billing
    where source in ('v2_pods', 'v1_pods', 'v2_serverless', 'v2_network_volumes')
)

select * from final
