-- grain: one row per network volume and billing bucket (/v2/billing/network-volumes); latest pull wins.
with source as (
    select * from raw.runpod_billing where source = 'v2_network_volumes'
),

final as (
    select
        doc ->> '$.networkVolumeId' as volume_id,
        try_cast(doc ->> '$.startTime' as timestamptz) as bucket_start,
        try_cast(doc ->> '$.endTime' as timestamptz) as bucket_end,
        try_cast(doc ->> '$.totalAmount' as decimal(38, 12)) as total_amount_usd,
        try_cast(pulled_at as timestamptz) as pulled_at,
        source_file,
        record_no
    from source
    where try_cast(doc ->> '$.startTime' as timestamptz) is not null
    -- by the bucket's instant, not its spelling: a re-pull may write ...T00:00:00.000Z where the
    -- first wrote ...T00:00:00Z (keeping both would bill the bucket twice)
    qualify row_number() over (partition by doc ->> '$.networkVolumeId', bucket_start
                               order by try_cast(pulled_at as timestamptz) desc nulls last,
                                        source_file desc, record_no desc) = 1
)

select * from final
