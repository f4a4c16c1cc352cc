-- grain: one row per network volume and UTC day with a billed bucket (volume_id, day): the
-- seconds no running attached pod covered, and their money: each hour's amount × its lingering
-- share, in exact decimals. DuckDB divides decimals in double, so the share is an integer
-- division: the amount in 1e-12 USD × lingering ms × 1e6 ÷ bucket ms, rounded half-even to
-- 1e-18 USD (exact where the hour lingered whole or not at all), then summed as decimals.
with buckets as (
    select volume_id, cast(date_trunc('day', bucket_start) as date) as day, bucket_ms,
           lingering_ms, total_amount_usd,
           cast(total_amount_usd * 1000000000000 as hugeint) * 1000000 * lingering_ms as num
    from intermediate.int_storage__network_volume_buckets
    where bucket_ms > 0
),

shares as (
    select *, abs(num) // bucket_ms as q, abs(num) % bucket_ms as r
    from buckets
),

rounded as (
    select *, sign(num) * (q + case when 2 * r > bucket_ms or (2 * r = bucket_ms and q % 2 = 1)
                                    then 1 else 0 end) as units
    from shares
)

select volume_id, day,
       sum(bucket_ms) * 0.001::decimal(18, 3) as billed_seconds,
       sum(lingering_ms) * 0.001::decimal(18, 3) as lingering_seconds,
       sum(total_amount_usd) as billed_amount,
       sum(cast(units as decimal(38, 0)) * 0.000000000000000001::decimal(38, 18)) as lingering_amount
from rounded
group by volume_id, day
