-- grain: one row per account billing bucket (/v2/billing), used to tie out the per-resource lines.
with source as (
    select * from raw.runpod_billing where source = 'v2_account'
),

final as (
    select
        try_cast(doc ->> '$.startTime' as timestamptz) as bucket_start,
        try_cast(doc ->> '$.endTime' as timestamptz) as bucket_end,
        try_cast(doc ->> '$.totalAmount' as decimal(38, 12)) as total_amount_usd,
        try_cast(pulled_at as timestamptz) as pulled_at
    from source
    where try_cast(doc ->> '$.startTime' as timestamptz) is not null
    -- by the bucket's instant, not its spelling (a re-pull may write the time another way)
    qualify row_number() over (partition by bucket_start
                               order by try_cast(pulled_at as timestamptz) desc nulls last,
                                        source_file desc, record_no desc) = 1
)

select * from final
