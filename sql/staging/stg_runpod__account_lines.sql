-- grain: one row per account-level billing line: a bill line that names no pod, endpoint or
-- volume, only a group of the account's spend in a bucket. Three kinds, as saved:
--   v1 pod billing grouped by GPU type (runpodctl's default grouping: openapi-v1 /billing/pods,
--     `grouping` default `gpuTypeId`): component `pods`, with its billed milliseconds;
--   v1 network-volume billing (openapi-v1 /billing/networkvolumes `NetworkVolumeBillingRecords`:
--     no volume id, no timeBilledMs; `amount` is the group's charge, the high-performance part
--     kept beside it): component `network_volumes`;
--   v2 public-endpoint billing (/v2/billing/endpoints, `EndpointBillingRecord`: a bucket and its
--     total; public endpoints, not serverless): component `public_endpoints`.
-- They tie out against the per-resource lines of their component (tieout.account_lines) and the
-- account total (tieout.account_billing); no resource's day holds their money. The latest pull
-- of a line wins (v1 files carry no pull time: the last file by name).
with source as (
    select * from raw.runpod_billing
    where source in ('v1_gpu_types', 'v1_network_volumes', 'v2_endpoints')
),

typed as (
    select
        source,
        case source when 'v1_gpu_types' then 'pods' when 'v1_network_volumes' then 'network_volumes'
             else 'public_endpoints' end as component,
        doc ->> '$.gpuTypeId' as gpu_type,
        try_cast(coalesce(doc ->> '$.startTime', doc ->> '$.time') as timestamptz) as bucket_start,
        try_cast(doc ->> '$.endTime' as timestamptz) as bucket_end,
        try_cast(coalesce(doc ->> '$.totalAmount', doc ->> '$.amount') as decimal(38, 12)) as amount_usd,
        try_cast(doc ->> '$.highPerformanceStorageAmount' as decimal(38, 12)) as high_performance_usd,
        try_cast(doc ->> '$.timeBilledMs' as decimal(18, 3)) / 1000 as billed_seconds,
        try_cast(coalesce(doc ->> '$.diskSpaceBilledGb', doc ->> '$.diskSpaceBilledGB') as bigint)
            as disk_gb,
        try_cast(pulled_at as timestamptz) as pulled_at,
        source_file,
        record_no
    from source
),

final as (
    select * from typed
    -- the rest are in staging.quarantine_casts (a time that is no timestamp)
    where bucket_start is not null and bucket_start <> '-infinity'::timestamptz
    qualify row_number() over (partition by source, gpu_type, bucket_start
                               order by pulled_at desc nulls last, source_file desc,
                                        record_no desc) = 1
)

select * from final
