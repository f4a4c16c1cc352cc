-- the batch of the suite expectations/tieout.account_lines.json (its notes say what it ties out)
with acct as (
    select component, cast(bucket_start as date) as day, sum(amount_usd) as account_usd
    from staging.stg_runpod__account_lines where component in ('pods', 'network_volumes')
    group by all
),
lines as (
    select 'pods' as component, cast(bucket_start as date) as day, sum(total_amount_usd) as lines_usd
    from staging.stg_runpod__pod_billing group by all
    union all
    select 'network_volumes', cast(bucket_start as date), sum(total_amount_usd)
    from staging.stg_runpod__network_volume_billing group by all
),
span as (
    select component, greatest(a.lo, l.lo) as lo, least(a.hi, l.hi) as hi
    from (select component, min(day) as lo, max(day) as hi from acct group by all) a
    join (select component, min(day) as lo, max(day) as hi from lines group by all) l using (component)
)
select component, day, a.account_usd, l.lines_usd,
       cast(coalesce(a.account_usd, 0) - coalesce(l.lines_usd, 0) as double) as difference
from acct a
full join lines l using (component, day)
join span s using (component)
where day between s.lo and s.hi
