-- the batch of the suite expectations/tieout.account_billing.json (its notes say what it ties out)
with lines as (
    select bucket_start, total_amount_usd from staging.stg_runpod__pod_billing
    union all select bucket_start, total_amount_usd from staging.stg_runpod__serverless_billing
    union all select bucket_start, total_amount_usd from staging.stg_runpod__network_volume_billing
    union all select bucket_start, amount_usd from staging.stg_runpod__account_lines where component = 'public_endpoints'
),
line_totals as (
    select bucket_start, sum(total_amount_usd) as lines_usd, count(*) as line_count
    from lines group by bucket_start
),
covered as (
    select min(bucket_start) as lo, max(bucket_end) as hi from staging.stg_runpod__account_billing
)
select bucket_start, a.total_amount_usd as account_usd, l.lines_usd, l.line_count,
       cast(coalesce(a.total_amount_usd, 0) - coalesce(l.lines_usd, 0) as double) as difference
from staging.stg_runpod__account_billing a
full join line_totals l using (bucket_start)
cross join covered c
where bucket_start >= c.lo and bucket_start < c.hi
