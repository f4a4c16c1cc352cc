-- grain: one row per serverless endpoint and billing bucket (/v2/billing/serverless); latest pull wins.
-- (a bucket is its parsed start: two spellings of one instant are one bucket)
with source as (
    select * from raw.runpod_billing where source = 'v2_serverless'
),

final as (
    select
        doc ->> '$.serverlessId' as endpoint_id,
        try_cast(doc ->> '$.startTime' as timestamptz) as bucket_start,
        try_cast(doc ->> '$.endTime' as timestamptz) as bucket_end,
        coalesce(try_cast(doc ->> '$.gpuAmount' as decimal(38, 12)), 0)
            + coalesce(try_cast(doc ->> '$.cpuAmount' as decimal(38, 12)), 0) as worker_amount_usd,
        coalesce(try_cast(doc ->> '$.diskAmount' as decimal(38, 12)), 0) as disk_amount_usd,
        coalesce(try_cast(doc ->> '$.feeAmount' as decimal(38, 12)), 0) as fee_amount_usd,
        try_cast(doc ->> '$.totalAmount' as decimal(38, 12)) as total_amount_usd,
        try_cast(pulled_at as timestamptz) as pulled_at,
        source_file,
        record_no
    from source
    where try_cast(doc ->> '$.startTime' as timestamptz) is not null
)

select * from final
