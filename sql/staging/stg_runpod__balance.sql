-- grain: one row per saved balance reading (GraphQL `myself { clientBalance currentSpendPerHr }`,
-- the only GraphQL data worth keeping while it lives).
with source as (
    select * from raw.runpod_inventory where inventory_kind = 'balance'
),

final as (
    select
        try_cast(pulled_at as timestamptz) as observed_at,
        try_cast(doc ->> '$.clientBalance' as decimal(38, 12)) as balance,
        try_cast(doc ->> '$.currentSpendPerHr' as decimal(38, 12)) as spend_per_hour,
        try_cast(doc ->> '$.spendLimit' as decimal(38, 12)) as spend_limit
    from source
    where try_cast(pulled_at as timestamptz) is not null
)

select * from final
